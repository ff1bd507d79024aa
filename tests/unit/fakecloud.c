/* tests/unit/fakecloud.c — see fakecloud.h. */
#include "tests/unit/fakecloud.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static fake_cloud_t *me(nw_cloud_t *c)
{
    return (fake_cloud_t *)c;
}

nw_cloud_instance_t *fake_cloud_find(fake_cloud_t *f, const char *id)
{
    const char *bare = nw_cloud_instance_id(id);
    for (int i = 0; i < f->ninst; i++)
        if (strcmp(f->inst[i].id, bare) == 0)
            return &f->inst[i];
    return NULL;
}

nw_cloud_instance_t *fake_cloud_add(fake_cloud_t *f, const char *id, const char *claim,
                                    int64_t age_ns)
{
    ck_assert_int_lt(f->ninst, FAKE_CLOUD_MAX);
    nw_cloud_instance_t *i = &f->inst[f->ninst++];
    memset(i, 0, sizeof *i);
    snprintf(i->id, sizeof i->id, "%s", id);
    snprintf(i->type, sizeof i->type, "m5.large");
    snprintf(i->zone, sizeof i->zone, "us-west-2a");
    char pid[sizeof i->provider_id];
    snprintf(pid, sizeof pid, "aws:///us-west-2a/%s", id);
    memcpy(i->provider_id, pid, sizeof pid);
    snprintf(i->capacity_type, sizeof i->capacity_type, "on-demand");
    snprintf(i->state, sizeof i->state, "running");
    snprintf(i->image_id, sizeof i->image_id, "ami-0fake");
    snprintf(i->subnet_id, sizeof i->subnet_id, "subnet-a");
    snprintf(i->sg_ids[0], sizeof i->sg_ids[0], "sg-1");
    i->nsg = 1;
    i->launch_ns = nw_clock_now(f->clock) - age_ns;
    ck_assert(nw_cloud_instance_tag_add(i, "karpenter.sh/managed-by", "test-cluster"));
    ck_assert(nw_cloud_instance_tag_add(i, "kubernetes.io/cluster/test-cluster", "owned"));
    if (claim)
        ck_assert(nw_cloud_instance_tag_add(i, "karpenter.sh/nodeclaim", claim));
    return i;
}

void fake_cloud_hold(fake_cloud_t *f, int on)
{
    pthread_mutex_lock(&f->mu);
    f->hold = on;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

int fake_cloud_wait_held(fake_cloud_t *f, int n, int timeout_ms)
{
    struct timespec dl;
    nw_clock_deadline_after(&dl, CLOCK_REALTIME, timeout_ms);
    pthread_mutex_lock(&f->mu);
    while (f->held < n && pthread_cond_timedwait(&f->cv, &f->mu, &dl) == 0) {
    }
    int ok = f->held >= n;
    pthread_mutex_unlock(&f->mu);
    return ok;
}

int fake_cloud_launches(fake_cloud_t *f)
{
    pthread_mutex_lock(&f->mu);
    int n = f->launches;
    pthread_mutex_unlock(&f->mu);
    return n;
}

static nw_rc_t launch_locked(fake_cloud_t *f, const nw_cloud_launch_req_t *req,
                             nw_cloud_launch_t *out, nw_cloud_error_t *ce, nw_err_t *err);

static nw_rc_t op_launch(nw_cloud_t *c, const nw_cloud_launch_req_t *req, nw_cloud_launch_t *out,
                         nw_cloud_error_t *ce, nw_err_t *err)
{
    fake_cloud_t *f = me(c);
    pthread_mutex_lock(&f->mu);
    f->launches++;
    snprintf(f->last_launch_claim, sizeof f->last_launch_claim, "%s",
             req->nodeclaim ? req->nodeclaim : "");
    snprintf(f->last_launch_token, sizeof f->last_launch_token, "%s",
             req->client_token ? req->client_token : "");
    if (++f->in_launch > f->max_in_launch)
        f->max_in_launch = f->in_launch;
    while (f->hold) {
        f->held++;
        pthread_cond_broadcast(&f->cv);
        pthread_cond_wait(&f->cv, &f->mu);
        f->held--;
    }
    nw_rc_t rc = launch_locked(f, req, out, ce, err);
    f->in_launch--;
    pthread_mutex_unlock(&f->mu);
    return rc;
}

static nw_rc_t launch_locked(fake_cloud_t *f, const nw_cloud_launch_req_t *req,
                             nw_cloud_launch_t *out, nw_cloud_error_t *ce, nw_err_t *err)
{
    f->last_launch_ntypes = req->ntypes;
    if (f->ice_next > 0) {
        f->ice_next--;
        if (ce) {
            memset(ce, 0, sizeof *ce);
            ce->kind = NW_CLOUD_ERR_CAPACITY;
            snprintf(ce->type, sizeof ce->type, "%s", req->ntypes > 0 ? req->types[0] : "");
            snprintf(ce->zone, sizeof ce->zone, "us-west-2a");
            snprintf(ce->capacity_type, sizeof ce->capacity_type, "on-demand");
            snprintf(ce->code, sizeof ce->code, "InsufficientInstanceCapacity");
        }
        return nw_err_set(err, NW_EAWS, "", "InsufficientInstanceCapacity: no capacity (fake)");
    }
    if (f->spend_next > 0) {
        f->spend_next--;
        if (ce) {
            memset(ce, 0, sizeof *ce);
            ce->kind = NW_CLOUD_ERR_OTHER;
            ce->token_spent = 1;
        }
        return nw_err_set(err, NW_EAWS, "", "CreateFleet launched nothing (fake)");
    }
    if (req->ntypes < 1)
        return nw_err_set(err, NW_EINVAL, "types", "nothing to launch");
    char id[32];
    snprintf(id, sizeof id, "i-%017d", f->ninst + 1);
    nw_cloud_instance_t *i = fake_cloud_add(f, id, req->nodeclaim, 0);
    snprintf(i->type, sizeof i->type, "%s", req->types[0]);
    memset(out, 0, sizeof *out);
    snprintf(out->instance_id, sizeof out->instance_id, "%s", id);
    snprintf(out->type, sizeof out->type, "%s", req->types[0]);
    snprintf(out->zone, sizeof out->zone, "%s", i->zone);
    snprintf(out->zone_id, sizeof out->zone_id, "usw2-az1");
    snprintf(out->image_id, sizeof out->image_id, "%s", i->image_id);
    snprintf(out->capacity_type, sizeof out->capacity_type, "on-demand");
    snprintf(out->provider_id, sizeof out->provider_id, "%s", i->provider_id);
    out->price = 0.1;
    return NW_OK;
}

static nw_rc_t op_terminate(nw_cloud_t *c, const char *pid, nw_err_t *err)
{
    (void)err;
    fake_cloud_t *f = me(c);
    pthread_mutex_lock(&f->mu);
    f->terminates++;
    nw_cloud_instance_t *i = fake_cloud_find(f, pid);
    if (i)
        snprintf(i->state, sizeof i->state, "shutting-down");
    pthread_mutex_unlock(&f->mu);
    return NW_OK;
}

static nw_rc_t op_list(nw_cloud_t *c, nw_cloud_instances_t *out, nw_err_t *err)
{
    fake_cloud_t *f = me(c);
    pthread_mutex_lock(&f->mu);
    f->lists++;
    memset(out, 0, sizeof *out);
    if (f->fail_list) {
        pthread_mutex_unlock(&f->mu);
        return nw_err_set(err, NW_EAWS, "", "DescribeInstances failed (fake)");
    }
    out->v = calloc((size_t)f->ninst + 1, sizeof *out->v);
    ck_assert_ptr_nonnull(out->v);
    for (int i = 0; i < f->ninst; i++)
        if (strcmp(f->inst[i].state, "terminated") != 0)
            out->v[out->n++] = f->inst[i];
    out->cap = (size_t)f->ninst + 1;
    pthread_mutex_unlock(&f->mu);
    return NW_OK;
}

static nw_rc_t op_resolve(nw_cloud_t *c, const cJSON *nc, const nw_cloud_class_t **out,
                          nw_err_t *err)
{
    (void)nc, (void)err;
    me(c)->resolves++;
    *out = &me(c)->resolved;
    return NW_OK;
}

/* The status of a class that resolved: its subnets, security groups, images, Ready. */
static nw_rc_t op_class_status(nw_cloud_t *c, const cJSON *nc, int64_t now_ns, cJSON **out,
                               nw_err_t *err)
{
    (void)nc, (void)now_ns, (void)err;
    fake_cloud_t *f = me(c);
    f->statuses++;
    const nw_cloud_class_t *r = &f->resolved;
    cJSON *st = cJSON_CreateObject();
    ck_assert_ptr_nonnull(st);
    cJSON *a = cJSON_AddArrayToObject(st, "subnets");
    for (size_t i = 0; i < r->nsubnets; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "id", r->subnets[i].id);
        cJSON_AddStringToObject(o, "zone", r->subnets[i].zone);
        cJSON_AddStringToObject(o, "zoneID", r->subnets[i].zone_id);
        cJSON_AddItemToArray(a, o);
    }
    a = cJSON_AddArrayToObject(st, "securityGroups");
    for (size_t i = 0; i < r->nsgs; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "id", r->sg_ids[i]);
        cJSON_AddItemToArray(a, o);
    }
    a = cJSON_AddArrayToObject(st, "amis");
    for (size_t i = 0; i < r->nimages; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "id", r->images[i].id);
        cJSON_AddItemToArray(a, o);
    }
    cJSON *cond = cJSON_CreateObject();
    cJSON_AddStringToObject(cond, "type", "Ready");
    cJSON_AddStringToObject(cond, "status", r->ready ? "True" : "False");
    cJSON_AddStringToObject(cond, "reason", r->ready ? "Ready" : r->reason);
    cJSON_AddItemToArray(cJSON_AddArrayToObject(st, "conditions"), cond);
    *out = st;
    return NW_OK;
}

static const nw_catalog_t *op_catalog(nw_cloud_t *c)
{
    return me(c)->cat;
}

static nw_ice_t *op_ice(nw_cloud_t *c)
{
    return me(c)->ice;
}

static void op_free(nw_cloud_t *c)
{
    (void)c; /* the test owns the fake: fake_cloud_free */
}

static nw_rc_t op_state(nw_cloud_t *c, const char *pid, char *state, size_t len, nw_err_t *err)
{
    (void)err;
    fake_cloud_t *f = me(c);
    nw_rc_t rc = NW_OK;
    pthread_mutex_lock(&f->mu);
    f->state_checks++;
    nw_cloud_instance_t *i = fake_cloud_find(f, pid);
    if (i && strcmp(i->state, "shutting-down") == 0 && f->gone_after-- <= 0)
        snprintf(i->state, sizeof i->state, "terminated");
    if (!i || strcmp(i->state, "terminated") == 0)
        rc = NW_ENOTFOUND;
    else
        snprintf(state, len, "%s", i->state);
    pthread_mutex_unlock(&f->mu);
    return rc;
}

static nw_rc_t op_offer_zones(nw_cloud_t *c, const nw_catalog_zone_t *z, int n, nw_err_t *err)
{
    fake_cloud_t *f = me(c);
    if (n <= 0 || !nw_catalog_offline(f->cat))
        return NW_OK;
    return nw_catalog_set_zones(f->cat, z, n, err);
}

static nw_rc_t op_instance_health(nw_cloud_t *c, nw_cloud_healths_t *out, nw_cloud_error_t *ce,
                                  nw_err_t *err)
{
    fake_cloud_t *f = me(c);
    nw_rc_t rc = NW_OK;
    pthread_mutex_lock(&f->mu);
    f->health_calls++;
    if (f->health_fail != NW_CLOUD_ERR_NONE) {
        ce->kind = f->health_fail;
        rc = nw_err_set(err, NW_EAWS, "DescribeInstanceStatus", "scripted failure");
    } else if (f->nhealth) {
        out->v = calloc((size_t)f->nhealth, sizeof *out->v);
        ck_assert_ptr_nonnull(out->v);
        memcpy(out->v, f->health, (size_t)f->nhealth * sizeof *out->v);
        out->n = out->cap = (size_t)f->nhealth;
    }
    pthread_mutex_unlock(&f->mu);
    return rc;
}

static const nw_cloud_ops_t fake_ops = {
    .launch = op_launch,
    .terminate = op_terminate,
    .list = op_list,
    .resolve = op_resolve,
    .class_status = op_class_status,
    .catalog = op_catalog,
    .ice = op_ice,
    .free = op_free,
    .instance_state = op_state,
    .offer_zones = op_offer_zones,
    .instance_health = op_instance_health,
};

fake_cloud_t *fake_cloud_new(const nw_clock_t *clock)
{
    fake_cloud_t *f = calloc(1, sizeof *f);
    ck_assert_ptr_nonnull(f);
    f->base.ops = &fake_ops;
    f->clock = clock;
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cv, NULL);
    nw_err_t err = {0};
    ck_assert_int_eq(nw_catalog_new_embedded("us-west-2", &f->cat, &err), NW_OK);
    nw_catalog_zone_t z[3] = {
        {"us-west-2a", "usw2-az1"}, {"us-west-2b", "usw2-az2"}, {"us-west-2c", "usw2-az3"}};
    ck_assert_int_eq(nw_catalog_set_zones(f->cat, z, 3, &err), NW_OK);
    f->ice = nw_ice_new(0);
    ck_assert_ptr_nonnull(f->ice);
    for (int i = 0; i < 3; i++) {
        snprintf(f->subnets[i].id, sizeof f->subnets[i].id, "subnet-%c", 'a' + i);
        snprintf(f->subnets[i].zone, sizeof f->subnets[i].zone, "%.60s", z[i].name);
        snprintf(f->subnets[i].zone_id, sizeof f->subnets[i].zone_id, "%.60s", z[i].id);
    }
    snprintf(f->sgs[0], sizeof f->sgs[0], "sg-1");
    snprintf(f->images[0].id, sizeof f->images[0].id, "ami-0fake");
    snprintf(f->images[0].arch, sizeof f->images[0].arch, "amd64");
    nw_cloud_class_t *r = &f->resolved;
    snprintf(r->name, sizeof r->name, "default");
    r->subnets = f->subnets;
    r->nsubnets = 3;
    r->sg_ids = (const char(*)[64])f->sgs;
    r->nsgs = 1;
    r->images = f->images;
    r->nimages = 1;
    r->ready = 1;
    return f;
}

void fake_cloud_free(fake_cloud_t *f)
{
    if (!f)
        return;
    nw_ice_free(f->ice);
    nw_catalog_free(f->cat);
    pthread_cond_destroy(&f->cv);
    pthread_mutex_destroy(&f->mu);
    free(f);
}

/* ---- the fake interruption source ---- */

static fake_intr_t *qme(nw_interrupt_source_t *s)
{
    return (fake_intr_t *)s;
}

static nw_rc_t intr_receive(nw_interrupt_source_t *s, nw_interrupt_batch_t *out,
                            nw_cloud_error_t *ce, nw_err_t *err)
{
    fake_intr_t *q = qme(s);
    memset(out, 0, sizeof *out);
    for (int i = 0; i < 5 && !(q->abort && atomic_load(q->abort)); i++) {
        struct timespec ts = {0, 1000000L};
        nanosleep(&ts, NULL);
    }
    pthread_mutex_lock(&q->mu);
    int r = ++q->receives;
    if (q->fail_receives > 0) {
        q->fail_receives--;
        pthread_mutex_unlock(&q->mu);
        if (ce) {
            memset(ce, 0, sizeof *ce);
            ce->kind = NW_CLOUD_ERR_THROTTLED;
            snprintf(ce->code, sizeof ce->code, "ThrottlingException");
        }
        return nw_err_set(err, NW_EAWS, "", "ReceiveMessage throttled (fake)");
    }
    out->v = calloc(FAKE_INTR_MAX, sizeof *out->v);
    ck_assert_ptr_nonnull(out->v);
    for (int i = 0; i < q->n; i++) {
        fake_intr_msg_t *m = &q->msgs[i];
        if (m->acked || m->next_receive > r)
            continue;
        m->deliveries++;
        m->next_receive = r + FAKE_INTR_REDELIVER;
        nw_interrupt_msg_t *o = &out->v[out->n++];
        snprintf(o->id, sizeof o->id, "%s", m->id);
        o->handle = strdup(m->id);
        ck_assert_ptr_nonnull(o->handle);
        o->parsed = m->parsed;
        o->ev = m->ev;
        if (!m->parsed)
            nw_err_set(&o->perr, NW_EPARSE, "detail-type", "not an event (fake)");
    }
    pthread_mutex_unlock(&q->mu);
    return NW_OK;
}

static nw_rc_t intr_ack(nw_interrupt_source_t *s, const nw_interrupt_msg_t *m, nw_cloud_error_t *ce,
                        nw_err_t *err)
{
    (void)ce, (void)err;
    fake_intr_t *q = qme(s);
    pthread_mutex_lock(&q->mu);
    for (int i = 0; i < q->n; i++)
        if (strcmp(q->msgs[i].id, m->handle) == 0)
            q->msgs[i].acked = 1;
    pthread_mutex_unlock(&q->mu);
    return NW_OK;
}

static void intr_set_abort(nw_interrupt_source_t *s, const atomic_int *flag)
{
    qme(s)->abort = flag;
}

static void intr_free(nw_interrupt_source_t *s)
{
    (void)s; /* the test owns it: fake_intr_destroy */
}

static const nw_interrupt_source_ops_t fake_intr_ops = {
    .receive = intr_receive,
    .ack = intr_ack,
    .set_abort = intr_set_abort,
    .free = intr_free,
};

void fake_intr_init(fake_intr_t *q)
{
    memset(q, 0, sizeof *q);
    q->base.ops = &fake_intr_ops;
    q->base.name = "fake-queue";
    pthread_mutex_init(&q->mu, NULL);
}

void fake_intr_destroy(fake_intr_t *q)
{
    pthread_mutex_destroy(&q->mu);
}

void fake_intr_push(fake_intr_t *q, const char *id, const nw_interrupt_event_t *ev)
{
    pthread_mutex_lock(&q->mu);
    ck_assert_int_lt(q->n, FAKE_INTR_MAX);
    fake_intr_msg_t *m = &q->msgs[q->n++];
    memset(m, 0, sizeof *m);
    snprintf(m->id, sizeof m->id, "%s", id);
    m->parsed = ev != NULL;
    if (ev)
        m->ev = *ev;
    pthread_mutex_unlock(&q->mu);
}

static fake_intr_msg_t *intr_find(fake_intr_t *q, const char *id)
{
    for (int i = 0; i < q->n; i++)
        if (strcmp(q->msgs[i].id, id) == 0)
            return &q->msgs[i];
    return NULL;
}

int fake_intr_deliveries(fake_intr_t *q, const char *id)
{
    pthread_mutex_lock(&q->mu);
    fake_intr_msg_t *m = intr_find(q, id);
    int n = m ? m->deliveries : -1;
    pthread_mutex_unlock(&q->mu);
    return n;
}

int fake_intr_acked(fake_intr_t *q, const char *id)
{
    pthread_mutex_lock(&q->mu);
    fake_intr_msg_t *m = intr_find(q, id);
    int n = m ? m->acked : 0;
    pthread_mutex_unlock(&q->mu);
    return n;
}
