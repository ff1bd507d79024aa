/* tests/unit/fakecloud.c — see fakecloud.h. */
#include "tests/unit/fakecloud.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static fake_cloud_t *me(nw_cloud_t *c)
{
    return (fake_cloud_t *)c;
}

nw_ec2_instance_t *fake_cloud_find(fake_cloud_t *f, const char *id)
{
    const char *bare = nw_provider_id_instance(id);
    for (int i = 0; i < f->ninst; i++)
        if (strcmp(f->inst[i].id, bare) == 0)
            return &f->inst[i];
    return NULL;
}

nw_ec2_instance_t *fake_cloud_add(fake_cloud_t *f, const char *id, const char *claim,
                                  int64_t age_ns)
{
    ck_assert_int_lt(f->ninst, FAKE_CLOUD_MAX);
    nw_ec2_instance_t *i = &f->inst[f->ninst++];
    memset(i, 0, sizeof *i);
    snprintf(i->id, sizeof i->id, "%s", id);
    snprintf(i->type, sizeof i->type, "m5.large");
    snprintf(i->zone, sizeof i->zone, "us-west-2a");
    snprintf(i->zone_id, sizeof i->zone_id, "usw2-az1");
    snprintf(i->state, sizeof i->state, "running");
    snprintf(i->image_id, sizeof i->image_id, "ami-0fake");
    snprintf(i->subnet_id, sizeof i->subnet_id, "subnet-a");
    snprintf(i->sg_ids[0], sizeof i->sg_ids[0], "sg-1");
    i->nsg = 1;
    i->launch_ns = nw_clock_now(f->clock) - age_ns;
    int n = 0;
    snprintf(i->tags.v[n].key, sizeof i->tags.v[n].key, "karpenter.sh/managed-by");
    snprintf(i->tags.v[n++].value, sizeof i->tags.v[0].value, "test-cluster");
    snprintf(i->tags.v[n].key, sizeof i->tags.v[n].key, "kubernetes.io/cluster/test-cluster");
    snprintf(i->tags.v[n++].value, sizeof i->tags.v[0].value, "owned");
    if (claim) {
        snprintf(i->tags.v[n].key, sizeof i->tags.v[n].key, "karpenter.sh/nodeclaim");
        snprintf(i->tags.v[n++].value, sizeof i->tags.v[0].value, "%s", claim);
    }
    i->tags.n = n;
    return i;
}

static nw_rc_t op_launch(nw_cloud_t *c, const nw_launch_req_t *req, nw_launch_result_t *out,
                         nw_ec2_error_t *ae, nw_err_t *err)
{
    fake_cloud_t *f = me(c);
    f->launches++;
    snprintf(f->last_launch_claim, sizeof f->last_launch_claim, "%s",
             req->nodeclaim ? req->nodeclaim : "");
    f->last_launch_ntypes = req->ntypes;
    if (f->ice_next > 0) {
        f->ice_next--;
        if (ae) {
            memset(ae, 0, sizeof *ae);
            ae->cls = NW_EC2_CAPACITY;
            snprintf(ae->code, sizeof ae->code, "InsufficientInstanceCapacity");
        }
        return nw_err_set(err, NW_EAWS, "", "InsufficientInstanceCapacity: no capacity (fake)");
    }
    if (req->ntypes < 1)
        return nw_err_set(err, NW_EINVAL, "types", "nothing to launch");
    char id[32];
    snprintf(id, sizeof id, "i-%017d", f->ninst + 1);
    nw_ec2_instance_t *i = fake_cloud_add(f, id, req->nodeclaim, 0);
    snprintf(i->type, sizeof i->type, "%s", req->types[0]);
    memset(out, 0, sizeof *out);
    snprintf(out->instance_id, sizeof out->instance_id, "%s", id);
    snprintf(out->type, sizeof out->type, "%s", req->types[0]);
    snprintf(out->zone, sizeof out->zone, "%s", i->zone);
    snprintf(out->zone_id, sizeof out->zone_id, "%s", i->zone_id);
    snprintf(out->image_id, sizeof out->image_id, "%s", i->image_id);
    snprintf(out->capacity_type, sizeof out->capacity_type, "on-demand");
    snprintf(out->provider_id, sizeof out->provider_id, "aws:///%s/%s", i->zone, id);
    out->price = 0.1;
    return NW_OK;
}

static nw_rc_t op_terminate(nw_cloud_t *c, const char *pid, nw_err_t *err)
{
    (void)err;
    fake_cloud_t *f = me(c);
    f->terminates++;
    nw_ec2_instance_t *i = fake_cloud_find(f, pid);
    if (i)
        snprintf(i->state, sizeof i->state, "shutting-down");
    return NW_OK;
}

static nw_rc_t op_list(nw_cloud_t *c, nw_ec2_instances_t *out, nw_err_t *err)
{
    fake_cloud_t *f = me(c);
    f->lists++;
    memset(out, 0, sizeof *out);
    if (f->fail_list)
        return nw_err_set(err, NW_EAWS, "", "DescribeInstances failed (fake)");
    out->v = calloc((size_t)f->ninst + 1, sizeof *out->v);
    ck_assert_ptr_nonnull(out->v);
    for (int i = 0; i < f->ninst; i++)
        if (strcmp(f->inst[i].state, "terminated") != 0)
            out->v[out->n++] = f->inst[i];
    out->cap = (size_t)f->ninst + 1;
    return NW_OK;
}

static nw_rc_t op_resolve(nw_cloud_t *c, const cJSON *nc, const nw_nodeclass_resolved_t **out,
                          nw_err_t *err)
{
    (void)nc, (void)err;
    me(c)->resolves++;
    *out = &me(c)->resolved;
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
    f->state_checks++;
    nw_ec2_instance_t *i = fake_cloud_find(f, pid);
    if (!i)
        return NW_ENOTFOUND;
    if (strcmp(i->state, "shutting-down") == 0 && f->gone_after-- <= 0)
        snprintf(i->state, sizeof i->state, "terminated");
    if (strcmp(i->state, "terminated") == 0)
        return NW_ENOTFOUND;
    snprintf(state, len, "%s", i->state);
    return NW_OK;
}

static nw_rc_t op_offer_zones(nw_cloud_t *c, const nw_catalog_zone_t *z, int n, nw_err_t *err)
{
    fake_cloud_t *f = me(c);
    if (n <= 0 || nw_catalog_len(f->cat) == 0 || nw_catalog_at(f->cat, 0)->noffer > 0)
        return NW_OK;
    return nw_catalog_set_zones(f->cat, z, n, err);
}

static const nw_cloud_ops_t fake_ops = {
    .launch = op_launch,
    .terminate = op_terminate,
    .list = op_list,
    .resolve = op_resolve,
    .catalog = op_catalog,
    .ice = op_ice,
    .free = op_free,
    .instance_state = op_state,
    .offer_zones = op_offer_zones,
};

static nw_nc_subnet_t SUBNETS[3];
static nw_nc_sg_t SGS[1];
static nw_nc_ami_t AMIS[1];

fake_cloud_t *fake_cloud_new(const nw_clock_t *clock)
{
    fake_cloud_t *f = calloc(1, sizeof *f);
    ck_assert_ptr_nonnull(f);
    f->base.ops = &fake_ops;
    f->clock = clock;
    nw_err_t err = {0};
    ck_assert_int_eq(nw_catalog_new_embedded("us-west-2", &f->cat, &err), NW_OK);
    nw_catalog_zone_t z[3] = {
        {"us-west-2a", "usw2-az1"}, {"us-west-2b", "usw2-az2"}, {"us-west-2c", "usw2-az3"}};
    ck_assert_int_eq(nw_catalog_set_zones(f->cat, z, 3, &err), NW_OK);
    f->ice = nw_ice_new(0);
    ck_assert_ptr_nonnull(f->ice);
    for (int i = 0; i < 3; i++) {
        snprintf(SUBNETS[i].id, sizeof SUBNETS[i].id, "subnet-%c", 'a' + i);
        snprintf(SUBNETS[i].zone, sizeof SUBNETS[i].zone, "%.60s", z[i].name);
        snprintf(SUBNETS[i].zone_id, sizeof SUBNETS[i].zone_id, "%.60s", z[i].id);
    }
    snprintf(SGS[0].id, sizeof SGS[0].id, "sg-1");
    snprintf(AMIS[0].id, sizeof AMIS[0].id, "ami-0fake");
    snprintf(AMIS[0].arch, sizeof AMIS[0].arch, "amd64");
    nw_nodeclass_resolved_t *r = &f->resolved;
    snprintf(r->name, sizeof r->name, "default");
    r->subnets = SUBNETS;
    r->nsubnets = 3;
    r->sgs = SGS;
    r->nsgs = 1;
    r->amis = AMIS;
    r->namis = 1;
    r->subnets_ready = r->sgs_ready = r->amis_ready = r->ready = 1;
    return f;
}

void fake_cloud_free(fake_cloud_t *f)
{
    if (!f)
        return;
    nw_ice_free(f->ice);
    nw_catalog_free(f->cat);
    free(f);
}
