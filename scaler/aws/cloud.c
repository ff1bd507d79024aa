/* scaler/aws/cloud.c — the neutral cloud (scaler/cloud/cloud.h) on EC2; see cloud.h. */
#include "scaler/aws/cloud.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/json.h"
#include "common/log.h"
#include "scaler/aws/catalog_refresh.h"
#include "scaler/aws/iam.h"
#include "scaler/aws/instancestatus.h"

/* one periodic refresh: instance types and offerings, on-demand prices, spot prices */
enum { R_TYPES, R_OD, R_SPOT, NREFRESH };
static const char *const refresh_kind[NREFRESH] = {"instance-types", "on-demand-pricing",
                                                   "spot-pricing"};
/* a failed refresh is tried again after this (or its period, when shorter) */
#define RETRY_NS (60 * NW_NS_PER_SEC)

typedef struct {
    int64_t period_ns; /* 0: never (not asked for, or settings.isolatedVPC) */
    int64_t next_ns;   /* monotonic; the refresher thread's */
    /* under rmu: a fetched result waiting for the catalog's thread ... */
    int ready;
    nw_rc_t rc;
    nw_err_t err;
    nw_itype_t *types; /* instance-types */
    nw_price_t *prices;
    size_t n;
    /* ... and the outcomes (metrics read them from another thread) */
    long ok, failed;
    int64_t last_ok_s; /* epoch seconds, 0 = never */
    int failing;       /* the last attempt failed */
    char error[512];   /* ... with this */
} refresh_t;

typedef struct {
    nw_cloud_t base;
    nw_creds_t *creds;
    nw_ec2_t *ec2;
    nw_ec2_t *iam; /* instance profiles for spec.role (scaler/aws/iam.h) */
    char region[64], cluster[128];
    nw_pricing_t *pricing;
    nw_ssm_t *ssm;
    const nw_clock_t *clock;
    refresh_t r[NREFRESH];
    /* guards r[] and the figures below (the refresher thread, metrics); never held with
     * mu, never across an API call */
    pthread_mutex_t rmu;
    pthread_cond_t rcv; /* wakes the refresher (stop) */
    pthread_t refresher;
    int refresher_started, stopping;      /* stopping under rmu */
    int launching;                        /* launches between plan and settle (under mu) */
    size_t ntypes, nunpriced, nod, nspot; /* the catalog's figures after the last refresh */
    nw_catalog_t *cat;
    nw_ice_t *ice;
    nw_nodeclass_cache_t *nc;
    nw_launch_t *launcher;
    /* guards the node-class cache, the launcher's template cache and the catalog's
     * offerings against the launch workers (cloud.h: launch runs on them); never held
     * across CreateFleet */
    pthread_mutex_t mu;
    /* the last resolved class in neutral terms (borrowed by the caller until the next
     * resolve) and its arrays */
    nw_cloud_class_t view;
    nw_cloud_subnet_t *subnets;
    char (*sgs)[64];
    nw_cloud_image_t *images;
    size_t cap_subnets, cap_sgs, cap_images;
} aws_cloud_t;

static aws_cloud_t *me(nw_cloud_t *c)
{
    return (aws_cloud_t *)c;
}

static NW_MUST_USE nw_rc_t op_offer_zones(nw_cloud_t *c, const nw_catalog_zone_t *z, int nz,
                                          nw_err_t *err)
{
    aws_cloud_t *a = me(c);
    pthread_mutex_lock(&a->mu);
    nw_rc_t rc = NW_OK;
    if (nz > 0 && nw_catalog_offline(a->cat))
        rc = nw_catalog_set_zones(a->cat, z, nz, err);
    pthread_mutex_unlock(&a->mu);
    return rc;
}

/* ---- EC2 -> neutral ---- */

nw_cloud_err_kind_t nw_aws_cloud_err_kind(nw_ec2_class_t cls)
{
    switch (cls) {
    case NW_EC2_OK:
    case NW_EC2_DRYRUN_OK:
        return NW_CLOUD_ERR_NONE;
    case NW_EC2_CAPACITY:
        return NW_CLOUD_ERR_CAPACITY;
    case NW_EC2_AUTH:
        return NW_CLOUD_ERR_UNAUTHORIZED;
    case NW_EC2_NOTFOUND:
    case NW_EC2_INVALID:
        return NW_CLOUD_ERR_INVALID;
    case NW_EC2_THROTTLE:
        return NW_CLOUD_ERR_THROTTLED;
    case NW_EC2_SERVER:
    case NW_EC2_TRANSPORT:
    case NW_EC2_OTHER:
        break;
    }
    return NW_CLOUD_ERR_OTHER;
}

void nw_aws_cloud_instance(const nw_ec2_instance_t *in, nw_cloud_instance_t *o)
{
    memset(o, 0, sizeof *o);
    snprintf(o->id, sizeof o->id, "%s", in->id);
    snprintf(o->provider_id, sizeof o->provider_id, "aws:///%s/%s", in->zone, in->id);
    snprintf(o->type, sizeof o->type, "%s", in->type);
    snprintf(o->zone, sizeof o->zone, "%s", in->zone);
    snprintf(o->capacity_type, sizeof o->capacity_type, "%s",
             strcmp(in->lifecycle, "spot") == 0 ? "spot" : "on-demand");
    snprintf(o->state, sizeof o->state, "%s", in->state);
    o->launch_ns = in->launch_ns;
    snprintf(o->image_id, sizeof o->image_id, "%s", in->image_id);
    snprintf(o->subnet_id, sizeof o->subnet_id, "%s", in->subnet_id);
    for (int i = 0; i < in->nsg && o->nsg < NW_CLOUD_MAX_SGS; i++)
        snprintf(o->sg_ids[o->nsg++], sizeof o->sg_ids[0], "%s", in->sg_ids[i]);
    /* the tags nodewarden reads first, then the others while they fit */
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < in->tags.n; i++)
            if (nw_cloud_tag_kept(in->tags.v[i].key) == (pass == 0))
                (void)nw_cloud_instance_tag_add(o, in->tags.v[i].key, in->tags.v[i].value);
}

static int grow(void **p, size_t *cap, size_t n, size_t size)
{
    if (n <= *cap)
        return 0;
    void *q = realloc(*p, n * size);
    if (!q)
        return -1;
    *p = q;
    *cap = n;
    return 0;
}

static NW_MUST_USE nw_rc_t class_view(aws_cloud_t *a, const nw_nodeclass_resolved_t *r,
                                      const nw_cloud_class_t **out, nw_err_t *err)
{
    if (grow((void **)&a->subnets, &a->cap_subnets, r->nsubnets, sizeof *a->subnets) ||
        grow((void **)&a->sgs, &a->cap_sgs, r->nsgs, sizeof *a->sgs) ||
        grow((void **)&a->images, &a->cap_images, r->namis, sizeof *a->images))
        return nw_err_set(err, NW_ENOMEM, "cloud", "out of memory");
    nw_cloud_class_t *v = &a->view;
    memset(v, 0, sizeof *v);
    snprintf(v->name, sizeof v->name, "%s", r->name);
    v->ready = r->ready;
    snprintf(v->reason, sizeof v->reason, "%s", r->reason);
    snprintf(v->message, sizeof v->message, "%s", r->message);
    for (size_t i = 0; i < r->nsubnets; i++) {
        snprintf(a->subnets[i].id, sizeof a->subnets[i].id, "%s", r->subnets[i].id);
        snprintf(a->subnets[i].zone, sizeof a->subnets[i].zone, "%s", r->subnets[i].zone);
        snprintf(a->subnets[i].zone_id, sizeof a->subnets[i].zone_id, "%s", r->subnets[i].zone_id);
    }
    for (size_t i = 0; i < r->nsgs; i++)
        snprintf(a->sgs[i], sizeof a->sgs[i], "%s", r->sgs[i].id);
    for (size_t i = 0; i < r->namis; i++) {
        snprintf(a->images[i].id, sizeof a->images[i].id, "%s", r->amis[i].id);
        snprintf(a->images[i].arch, sizeof a->images[i].arch, "%s", r->amis[i].arch);
    }
    v->subnets = a->subnets;
    v->nsubnets = r->nsubnets;
    v->sg_ids = (const char(*)[64])a->sgs;
    v->nsgs = r->nsgs;
    v->images = a->images;
    v->nimages = r->namis;
    snprintf(v->placement_group, sizeof v->placement_group, "%s", r->pg_id);
    *out = v;
    return NW_OK;
}

/* The node-class cache's validation (nodeclass.h nw_nc_validate_fn): the bootstrap a launch
 * of the class would render, rendered now for a NodeClaim without labels or taints (the
 * cache's callers hold mu). A class whose launches would all fail on it (no service CIDR for
 * AL2023, a spec.userData that cannot be merged) is not ready, so no NodeClaim is made for
 * it (scaler/state/simsnap.c) and none of its NodeClaims is launched. */
static bool validate_class(void *ud, const cJSON *nc, const nw_nodeclass_resolved_t *r,
                           char *reason, size_t rlen, char *msg, size_t mlen)
{
    aws_cloud_t *a = ud;
    nw_launch_req_t req = {.nodepool = "", .nodeclaim = "", .nodeclass = nc, .resolved = r};
    char *userdata = NULL;
    nw_err_t e = {0};
    nw_rc_t rc = nw_launchtemplate_userdata(a->launcher, &req, "on-demand", 110, &userdata, &e);
    free(userdata);
    if (rc == NW_OK || rc == NW_ENOMEM)
        return true;
    bool cidr = strcmp(e.path, "settings.clusterCIDR") == 0;
    snprintf(reason, rlen, "%s", cidr ? "ClusterCIDRNotFound" : "BootstrapInvalid");
    if (cidr || !e.path[0])
        snprintf(msg, mlen, "%s", e.msg);
    else
        snprintf(msg, mlen, "%s: %s", e.path, e.msg);
    return false;
}

/* ---- the operations ---- */

nw_rc_t nw_aws_cloud_launch(nw_cloud_t *c, const nw_launch_req_t *req, nw_launch_result_t *out,
                            nw_ec2_error_t *ae, nw_err_t *err)
{
    /* offline catalog: offer the zones of the class's subnets */
    if (req->resolved) {
        nw_catalog_zone_t z[16];
        int nz = 0;
        for (size_t i = 0; i < req->resolved->nsubnets; i++)
            nz = nw_catalog_zone_add(z, nz, 16, req->resolved->subnets[i].zone,
                                     req->resolved->subnets[i].zone_id);
        nw_rc_t rc = op_offer_zones(c, z, nz, err);
        if (rc != NW_OK)
            return rc;
    }
    return nw_launch(me(c)->launcher, req, out, ae, err);
}

/* The neutral error of a failed launch. */
static void launch_error(nw_rc_t rc, const nw_ec2_error_t *ae, const nw_launch_result_t *res,
                         nw_cloud_error_t *ce)
{
    ce->kind = nw_aws_cloud_err_kind(ae->cls);
    if (ce->kind == NW_CLOUD_ERR_NONE)
        ce->kind = rc == NW_EINVAL ? NW_CLOUD_ERR_INVALID : NW_CLOUD_ERR_OTHER;
    snprintf(ce->type, sizeof ce->type, "%s", res->failed_type);
    snprintf(ce->zone, sizeof ce->zone, "%s", res->failed_zone);
    snprintf(ce->capacity_type, sizeof ce->capacity_type, "%s", res->failed_capacity_type);
    snprintf(ce->code, sizeof ce->code, "%s", ae->code);
    snprintf(ce->message, sizeof ce->message, "%s", ae->message);
    ce->token_spent = res->token_spent;
    ce->token_conflict = res->token_conflict;
}

/* Any thread (cloud.h). The class is resolved and the request planned under the lock, the
 * CreateFleet runs without it, and its outcome is settled under it again. The zones of an
 * offline catalog are offered by the caller first (ops->offer_zones, the reconcile
 * thread's), never here: the reconcile thread reads the catalog without the lock. */
static NW_MUST_USE nw_rc_t launch(nw_cloud_t *c, const nw_cloud_launch_req_t *cr,
                                  nw_cloud_launch_t *out, nw_cloud_error_t *ce, nw_err_t *err)
{
    aws_cloud_t *a = me(c);
    memset(out, 0, sizeof *out);
    nw_cloud_error_t local_ce;
    if (!ce)
        ce = &local_ce;
    memset(ce, 0, sizeof *ce);
    nw_launch_req_t req = {
        .nodepool = cr->nodepool,
        .nodeclaim = cr->nodeclaim,
        .nodeclass = cr->nodeclass,
        .types = cr->types,
        .ntypes = cr->ntypes,
        .zones = cr->zones,
        .nzones = cr->nzones,
        .capacity_types = cr->capacity_types,
        .ncapacity_types = cr->ncapacity_types,
        .min_values = cr->min_values,
        .client_token = cr->client_token,
        .cr_ids = cr->cr_ids,
        .ncr_ids = cr->ncr_ids,
        .claim = cr->claim,
        .bootstrap_token = cr->bootstrap_token,
    };
    nw_launch_result_t res;
    nw_ec2_error_t ae;
    memset(&res, 0, sizeof res);
    memset(&ae, 0, sizeof ae);
    nw_rc_t rc = NW_OK;
    for (int attempt = 0; attempt < 2; attempt++) {
        nw_launch_plan_t *pl = NULL;
        pthread_mutex_lock(&a->mu);
        const nw_nodeclass_resolved_t *resolved = NULL;
        rc = nw_nodeclass_cache_get(a->nc, cr->nodeclass, &resolved, err);
        if (rc == NW_OK) {
            req.resolved = resolved;
            rc = nw_fleet_plan(a->launcher, &req, attempt, &pl, &ae, err);
            req.resolved = NULL; /* may be replaced once the lock is released */
        } else
            ae.cls = rc == NW_EINVAL ? NW_EC2_INVALID : NW_EC2_OTHER;
        pthread_mutex_unlock(&a->mu);
        if (rc != NW_OK)
            break;
        /* the outcome is in pl and ae: nw_fleet_settle reads it */
        (void)nw_fleet(a->launcher, pl, &ae);
        int again = 0;
        pthread_mutex_lock(&a->mu);
        rc = nw_fleet_settle(a->launcher, pl, &res, &again, &ae, err);
        pthread_mutex_unlock(&a->mu);
        nw_fleet_plan_free(pl);
        if (!again)
            break;
        memset(&ae, 0, sizeof ae);
    }
    if (rc != NW_OK) {
        launch_error(rc, &ae, &res, ce);
        return rc;
    }
    nw_instance_find_partition(a->launcher, &res); /* without the lock: one DescribeInstances */
    snprintf(out->placement_group, sizeof out->placement_group, "%s", res.pg_id);
    snprintf(out->partition, sizeof out->partition, "%s", res.pg_partition);
    out->partitioned = res.pg_partitioned;
    snprintf(out->instance_id, sizeof out->instance_id, "%s", res.instance_id);
    snprintf(out->provider_id, sizeof out->provider_id, "%s", res.provider_id);
    snprintf(out->type, sizeof out->type, "%s", res.type);
    snprintf(out->zone, sizeof out->zone, "%s", res.zone);
    snprintf(out->zone_id, sizeof out->zone_id, "%s", res.zone_id);
    snprintf(out->capacity_type, sizeof out->capacity_type, "%s", res.capacity_type);
    snprintf(out->image_id, sizeof out->image_id, "%s", res.image_id);
    snprintf(out->cr_id, sizeof out->cr_id, "%s", res.cr_id);
    snprintf(out->cr_type, sizeof out->cr_type, "%s", res.cr_type);
    out->cr_interruptible = res.cr_interruptible;
    out->price = res.price;
    return NW_OK;
}

/* launch, counted: the catalog's types are not replaced while one runs (op_refresh) */
static NW_MUST_USE nw_rc_t op_launch(nw_cloud_t *c, const nw_cloud_launch_req_t *cr,
                                     nw_cloud_launch_t *out, nw_cloud_error_t *ce, nw_err_t *err)
{
    aws_cloud_t *a = me(c);
    pthread_mutex_lock(&a->mu);
    a->launching++;
    pthread_mutex_unlock(&a->mu);
    nw_rc_t rc = launch(c, cr, out, ce, err);
    pthread_mutex_lock(&a->mu);
    a->launching--;
    pthread_mutex_unlock(&a->mu);
    return rc;
}

static NW_MUST_USE nw_rc_t op_terminate(nw_cloud_t *c, const char *pid, nw_err_t *err)
{
    return nw_instance_terminate(me(c)->launcher, pid, err);
}

static NW_MUST_USE nw_rc_t op_list(nw_cloud_t *c, nw_cloud_instances_t *out, nw_err_t *err)
{
    memset(out, 0, sizeof *out);
    nw_ec2_instances_t l = {0};
    nw_rc_t rc = nw_instance_list(me(c)->launcher, &l, err);
    if (rc == NW_OK && l.n) {
        out->v = calloc(l.n, sizeof *out->v);
        if (!out->v)
            rc = nw_err_set(err, NW_ENOMEM, "cloud", "out of memory");
        for (size_t i = 0; out->v && i < l.n; i++)
            nw_aws_cloud_instance(&l.v[i], &out->v[out->n++]);
        out->cap = out->n;
    }
    nw_ec2xml_instances_free(&l);
    return rc;
}

static NW_MUST_USE nw_rc_t op_resolve(nw_cloud_t *c, const cJSON *nc, const nw_cloud_class_t **out,
                                      nw_err_t *err)
{
    const nw_nodeclass_resolved_t *r = NULL;
    *out = NULL;
    pthread_mutex_lock(&me(c)->mu);
    nw_rc_t rc = nw_nodeclass_cache_get(me(c)->nc, nc, &r, err);
    if (rc == NW_OK && r)
        rc = class_view(me(c), r, out, err);
    pthread_mutex_unlock(&me(c)->mu);
    return rc;
}

static NW_MUST_USE nw_rc_t op_class_status(nw_cloud_t *c, const cJSON *nc, int64_t now_ns,
                                           cJSON **out, nw_err_t *err)
{
    const nw_nodeclass_resolved_t *r = NULL;
    *out = NULL;
    pthread_mutex_lock(&me(c)->mu);
    nw_rc_t rc = nw_nodeclass_cache_get(me(c)->nc, nc, &r, err);
    if (rc == NW_OK && (!r || !(*out = nw_nodeclass_status_json(r, nc, now_ns))))
        rc = nw_err_set(err, NW_ENOMEM, "cloud", "out of memory");
    pthread_mutex_unlock(&me(c)->mu);
    return rc;
}

static NW_MUST_USE nw_rc_t op_finalize_class(nw_cloud_t *c, const cJSON *nc, nw_err_t *err)
{
    aws_cloud_t *a = me(c);
    const char *name = nw_json_str(nw_json_get(nc, "metadata"), "name");
    if (!name)
        return nw_err_set(err, NW_EINVAL, "metadata.name", "required");
    int nlt = 0, nprof = 0;
    pthread_mutex_lock(&a->mu);
    nw_rc_t rc = nw_launchtemplate_delete_class(a->launcher, name, &nlt, err);
    const char *role = nw_json_str(nw_json_get(nc, "spec"), "role");
    if (rc == NW_OK && role && *role)
        rc = nw_iam_delete_profiles(a->iam, a->region, a->cluster, nc, &nprof, err);
    if (rc == NW_OK)
        nw_nodeclass_cache_invalidate(a->nc);
    pthread_mutex_unlock(&a->mu);
    if (rc == NW_OK)
        nw_log_info("aws.cloud", "node class cleaned up", NW_LS("ec2nodeclass", name),
                    NW_LI("launch_templates", nlt), NW_LI("instance_profiles", nprof));
    return rc;
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
    aws_cloud_t *a = me(c);
    if (!a)
        return;
    if (a->refresher_started) {
        pthread_mutex_lock(&a->rmu);
        a->stopping = 1;
        pthread_cond_broadcast(&a->rcv);
        pthread_mutex_unlock(&a->rmu);
        pthread_join(a->refresher, NULL);
    }
    for (int k = 0; k < NREFRESH; k++) {
        free(a->r[k].types);
        free(a->r[k].prices);
    }
    nw_launch_free(a->launcher);
    nw_nodeclass_cache_free(a->nc);
    nw_ice_free(a->ice);
    nw_catalog_free(a->cat);
    nw_pricing_free(a->pricing);
    nw_ssm_free(a->ssm);
    nw_ec2_free(a->ec2);
    nw_ec2_free(a->iam);
    nw_creds_free(a->creds);
    free(a->subnets);
    free(a->sgs);
    free(a->images);
    pthread_mutex_destroy(&a->mu);
    pthread_mutex_destroy(&a->rmu);
    pthread_cond_destroy(&a->rcv);
    free(a);
}

static NW_MUST_USE nw_rc_t op_instance_state(nw_cloud_t *c, const char *pid, char *state,
                                             size_t len, nw_err_t *err)
{
    const char *id = nw_cloud_instance_id(pid);
    if (strncmp(id, "i-", 2) != 0)
        return nw_err_set(err, NW_EINVAL, "providerID", "not an instance id: %s", pid);
    nw_ec2_instances_t l = {0};
    nw_ec2_error_t ae;
    memset(&ae, 0, sizeof ae);
    const char *ids[] = {id};
    nw_err_t e = {0};
    nw_rc_t rc = nw_ec2_describe_instances(me(c)->ec2, ids, 1, NULL, 0, &l, &ae, &e);
    if (rc == NW_EAWS && ae.cls == NW_EC2_NOTFOUND)
        rc = NW_ENOTFOUND;
    else if (rc != NW_OK)
        nw_err_set(err, e.rc, e.path, "%s", e.msg);
    else if (l.n == 0 || strcmp(l.v[0].state, "terminated") == 0)
        rc = NW_ENOTFOUND;
    else if (state && len)
        snprintf(state, len, "%s", l.v[0].state);
    nw_ec2xml_instances_free(&l);
    return rc;
}

/* ---- periodic refreshes ---- */

/* The API calls of one refresh (no catalog: the refresher thread runs them). */
static NW_MUST_USE nw_rc_t fetch(aws_cloud_t *a, int kind, nw_itype_t **types, nw_price_t **prices,
                                 size_t *n, nw_err_t *err)
{
    *types = NULL;
    *prices = NULL;
    *n = 0;
    switch (kind) {
    case R_TYPES:
        return nw_catalog_refresh_fetch_types(a->ec2, types, n, err);
    case R_OD:
        if (!a->pricing)
            return nw_err_set(err, NW_EINVAL, "settings.isolatedVPC",
                              "the Pricing API is not asked in an isolated VPC");
        return nw_pricing_on_demand(a->pricing, prices, n, NULL, err);
    default:
        return nw_catalog_refresh_fetch_spot(a->ec2, prices, n, err);
    }
}

static int64_t retry_ns(const refresh_t *r)
{
    return r->period_ns > 0 && r->period_ns < RETRY_NS ? r->period_ns : RETRY_NS;
}

/* On the catalog's thread: apply a fetched result (taking types/prices) and record the
 * outcome; a failure changes nothing in the catalog. The catalog changes under mu, as the
 * launch workers read its offerings under it (op_launch). */
static NW_MUST_USE nw_rc_t apply(aws_cloud_t *a, int kind, nw_rc_t rc, const nw_err_t *fe,
                                 nw_itype_t *types, nw_price_t *prices, size_t n, nw_err_t *err)
{
    nw_err_t e = {0};
    pthread_mutex_lock(&a->mu);
    /* a launch between its plan and its settle holds pointers to the catalog's types: new
     * types wait until none does (the caller offers them again a second later) */
    if (rc == NW_OK && kind == R_TYPES && a->launching > 0) {
        pthread_mutex_unlock(&a->mu);
        return NW_ECONFLICT;
    }
    if (rc != NW_OK)
        nw_err_set(&e, rc, fe->path, "%s", fe->msg);
    else if (kind == R_TYPES)
        nw_catalog_refresh_apply_types(a->cat, types, n), types = NULL;
    else
        rc = nw_catalog_refresh_apply_prices(a->cat, kind == R_SPOT, prices, n, &e);
    size_t ntypes = nw_catalog_len(a->cat), nunpriced = nw_catalog_unpriced(a->cat, NULL, 0),
           nod = nw_catalog_price_count(a->cat, 0), nspot = nw_catalog_price_count(a->cat, 1);
    pthread_mutex_unlock(&a->mu);
    free(types);
    free(prices);
    refresh_t *r = &a->r[kind];
    pthread_mutex_lock(&a->rmu);
    if (rc == NW_OK) {
        r->ok++;
        r->failing = 0;
        r->error[0] = 0;
        r->last_ok_s = nw_clock_now(a->clock) / NW_NS_PER_SEC;
    } else {
        r->failed++;
        r->failing = 1;
        snprintf(r->error, sizeof r->error, "%s", e.msg);
    }
    a->ntypes = ntypes;
    a->nunpriced = nunpriced;
    a->nod = nod;
    a->nspot = nspot;
    pthread_mutex_unlock(&a->rmu);
    if (rc != NW_OK) {
        nw_log_warn("aws.cloud", "refresh failed; keeping the last good data",
                    NW_LS("refresh", refresh_kind[kind]), NW_LS("error", e.msg),
                    NW_LI("retryInSeconds", retry_ns(r) / NW_NS_PER_SEC));
        if (err)
            nw_err_set(err, rc, e.path, "%s", e.msg);
    }
    return rc;
}

/* Fetch and apply on the calling thread (the start, doctor). */
static NW_MUST_USE nw_rc_t refresh_one(aws_cloud_t *a, int kind, int64_t now, nw_err_t *err)
{
    nw_itype_t *types;
    nw_price_t *prices;
    size_t n;
    nw_err_t e = {0};
    nw_rc_t rc = fetch(a, kind, &types, &prices, &n, &e);
    pthread_mutex_lock(&a->rmu);
    a->r[kind].next_ns = now + (rc == NW_OK ? a->r[kind].period_ns : retry_ns(&a->r[kind]));
    pthread_mutex_unlock(&a->rmu);
    rc = apply(a, kind, rc, &e, types, prices, n, err);
    if (rc == NW_ECONFLICT) { /* a launch in flight: this refresh is skipped */
        free(types);
        rc = NW_OK;
    }
    return rc;
}

/* The refresher thread: each refresh when due, its result left for op_refresh (the
 * catalog's thread applies it), so that slow or hanging API calls never hold up the
 * reconcile loop. */
static void *refresher_main(void *arg)
{
    aws_cloud_t *a = arg;
    pthread_mutex_lock(&a->rmu);
    while (!a->stopping) {
        int64_t now = nw_clock_mono(a->clock);
        for (int k = 0; k < NREFRESH && !a->stopping; k++) {
            refresh_t *r = &a->r[k];
            if (r->period_ns <= 0 || r->ready || now < r->next_ns)
                continue;
            pthread_mutex_unlock(&a->rmu);
            nw_itype_t *types;
            nw_price_t *prices;
            size_t n;
            nw_err_t e = {0};
            nw_rc_t rc = fetch(a, k, &types, &prices, &n, &e);
            now = nw_clock_mono(a->clock);
            pthread_mutex_lock(&a->rmu);
            r->next_ns = now + (rc == NW_OK ? r->period_ns : retry_ns(r));
            r->ready = 1;
            r->rc = rc;
            r->err = e;
            r->types = types;
            r->prices = prices;
            r->n = n;
        }
        if (a->stopping)
            break;
        /* wake at least every second: the next due time, or a stop */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;
        pthread_cond_timedwait(&a->rcv, &a->rmu, &ts);
    }
    pthread_mutex_unlock(&a->rmu);
    return NULL;
}

static void op_refresh(nw_cloud_t *c, int64_t now)
{
    (void)now;
    aws_cloud_t *a = me(c);
    for (int k = 0; k < NREFRESH; k++) {
        refresh_t *r = &a->r[k];
        pthread_mutex_lock(&a->rmu);
        int ready = r->ready;
        nw_rc_t rc = r->rc;
        nw_err_t e = r->err;
        nw_itype_t *types = r->types;
        nw_price_t *prices = r->prices;
        size_t n = r->n;
        r->ready = 0;
        r->types = NULL;
        r->prices = NULL;
        pthread_mutex_unlock(&a->rmu);
        if (ready && apply(a, k, rc, &e, types, prices, n, NULL) == NW_ECONFLICT) {
            /* a launch is in flight: the same result again at the next call */
            pthread_mutex_lock(&a->rmu);
            if (!r->ready) {
                r->ready = 1;
                r->types = types;
                types = NULL;
            }
            pthread_mutex_unlock(&a->rmu);
            free(types);
        }
    }
}

static int64_t op_reservation_available(nw_cloud_t *c, const char *id)
{
    aws_cloud_t *a = me(c);
    pthread_mutex_lock(&a->mu);
    int64_t synced = 0;
    int64_t v = nw_nodeclass_cache_cr_available(a->nc, id, &synced);
    if (v >= 0)
        v = nw_capreservation_available(a->launcher, id, v, synced);
    pthread_mutex_unlock(&a->mu);
    return v;
}

static NW_MUST_USE nw_rc_t op_metrics(nw_cloud_t *c, nw_buf_t *out)
{
    aws_cloud_t *a = me(c);
    pthread_mutex_lock(&a->rmu);
    nw_rc_t rc = nw_buf_adds(out, "# HELP nodewarden_aws_refresh_total Refreshes of the catalog "
                                  "and prices from the AWS APIs, by outcome.\n"
                                  "# TYPE nodewarden_aws_refresh_total counter\n");
    for (int k = 0; k < NREFRESH && rc == NW_OK; k++)
        rc = nw_buf_addf(out,
                         "nodewarden_aws_refresh_total{kind=\"%s\",result=\"ok\"} %ld\n"
                         "nodewarden_aws_refresh_total{kind=\"%s\",result=\"error\"} %ld\n",
                         refresh_kind[k], a->r[k].ok, refresh_kind[k], a->r[k].failed);
    if (rc == NW_OK)
        rc = nw_buf_adds(out, "# HELP nodewarden_aws_refresh_failing 1 while the last refresh "
                              "failed (the last good data serves).\n"
                              "# TYPE nodewarden_aws_refresh_failing gauge\n");
    for (int k = 0; k < NREFRESH && rc == NW_OK; k++)
        rc = nw_buf_addf(out, "nodewarden_aws_refresh_failing{kind=\"%s\"} %d\n", refresh_kind[k],
                         a->r[k].failing);
    if (rc == NW_OK)
        rc = nw_buf_adds(out, "# HELP nodewarden_aws_refresh_last_success_timestamp_seconds When "
                              "the refresh last succeeded (0: never).\n"
                              "# TYPE nodewarden_aws_refresh_last_success_timestamp_seconds "
                              "gauge\n");
    for (int k = 0; k < NREFRESH && rc == NW_OK; k++)
        rc = nw_buf_addf(
            out, "nodewarden_aws_refresh_last_success_timestamp_seconds{kind=\"%s\"} %lld\n",
            refresh_kind[k], (long long)a->r[k].last_ok_s);
    if (rc == NW_OK)
        rc = nw_buf_addf(out,
                         "# HELP nodewarden_aws_catalog_instance_types Instance types in the "
                         "catalog.\n# TYPE nodewarden_aws_catalog_instance_types gauge\n"
                         "nodewarden_aws_catalog_instance_types %zu\n"
                         "# HELP nodewarden_aws_catalog_unpriced_instance_types Instance types "
                         "without an on-demand price (never offered).\n"
                         "# TYPE nodewarden_aws_catalog_unpriced_instance_types gauge\n"
                         "nodewarden_aws_catalog_unpriced_instance_types %zu\n"
                         "# HELP nodewarden_aws_prices Known prices by capacity type.\n"
                         "# TYPE nodewarden_aws_prices gauge\n"
                         "nodewarden_aws_prices{capacity_type=\"on-demand\"} %zu\n"
                         "nodewarden_aws_prices{capacity_type=\"spot\"} %zu\n",
                         a->ntypes, a->nunpriced, a->nod, a->nspot);
    pthread_mutex_unlock(&a->rmu);
    return rc;
}

void nw_aws_cloud_refresh_status(nw_cloud_t *c, nw_aws_refresh_status_t *out)
{
    aws_cloud_t *a = me(c);
    pthread_mutex_lock(&a->rmu);
    for (int k = 0; k < NREFRESH; k++) {
        nw_aws_refresh_status_t *o = &out[k];
        memset(o, 0, sizeof *o);
        o->kind = refresh_kind[k];
        o->period_ns = a->r[k].period_ns;
        o->ok = a->r[k].ok;
        o->failed = a->r[k].failed;
        o->failing = a->r[k].failing;
        o->last_ok_s = a->r[k].last_ok_s;
        snprintf(o->error, sizeof o->error, "%s", a->r[k].error);
    }
    out[R_TYPES].count = a->ntypes;
    out[R_OD].count = a->nod;
    out[R_SPOT].count = a->nspot;
    out[R_TYPES].unpriced = a->nunpriced;
    pthread_mutex_unlock(&a->rmu);
}

static NW_MUST_USE nw_rc_t op_instance_health(nw_cloud_t *c, nw_cloud_healths_t *out,
                                              nw_cloud_error_t *ce, nw_err_t *err)
{
    nw_ec2_error_t ae;
    memset(&ae, 0, sizeof ae);
    nw_rc_t rc = nw_instancestatus_health(me(c)->ec2, out, &ae, err);
    if (rc != NW_OK && ce) {
        ce->kind = nw_aws_cloud_err_kind(ae.cls);
        snprintf(ce->code, sizeof ce->code, "%s", ae.code);
        snprintf(ce->message, sizeof ce->message, "%s", ae.message);
    }
    return rc;
}

static const nw_cloud_ops_t aws_ops = {
    .launch = op_launch,
    .terminate = op_terminate,
    .list = op_list,
    .finalize_class = op_finalize_class,
    .resolve = op_resolve,
    .class_status = op_class_status,
    .catalog = op_catalog,
    .ice = op_ice,
    .free = op_free,
    .instance_state = op_instance_state,
    .offer_zones = op_offer_zones,
    .refresh = op_refresh,
    .metrics = op_metrics,
    .instance_health = op_instance_health,
    .reservation_available = op_reservation_available,
};

nw_rc_t nw_aws_cloud_new(const nw_aws_cloud_opts_t *o, nw_cloud_t **out, nw_err_t *err)
{
    nw_rc_t rc;
    *out = NULL;
    if (!o->cluster_name || !*o->cluster_name)
        return nw_err_set(err, NW_EINVAL, "settings.clusterName", "required for the scaler");
    aws_cloud_t *a = calloc(1, sizeof *a);
    if (!a)
        return nw_err_set(err, NW_ENOMEM, "cloud", "out of memory");
    a->base.ops = &aws_ops;
    pthread_mutex_init(&a->mu, NULL);
    pthread_mutex_init(&a->rmu, NULL);
    pthread_cond_init(&a->rcv, NULL);
    a->clock = o->clock ? o->clock : nw_clock_system();
    if ((rc = nw_creds_new(&o->aws, o->clock, &a->creds, err)) != NW_OK ||
        (rc = nw_ec2_new(&o->aws, a->creds, o->clock, &a->ec2, err)) != NW_OK ||
        (rc = nw_catalog_new_embedded(o->aws.region, &a->cat, err)) != NW_OK)
        goto fail;
    a->ice = nw_ice_new(o->ice_ttl_ns);
    a->nc = nw_nodeclass_cache_new(a->ec2, o->clock, o->nodeclass_ttl_ns);
    if ((rc = nw_iam_new(&o->aws, a->creds, o->clock, &a->iam, err)) != NW_OK)
        goto fail;
    snprintf(a->region, sizeof a->region, "%s", o->aws.region);
    snprintf(a->cluster, sizeof a->cluster, "%s", o->cluster_name);
    if (a->nc)
        nw_nodeclass_cache_set_reserved_capacity(a->nc, !o->no_reserved_capacity);
    if (a->nc)
        nw_nodeclass_cache_set_iam(a->nc, a->iam, o->aws.region, o->cluster_name);
    a->launcher = a->ice ? nw_launch_new(a->ec2, a->cat, a->ice, o->clock, o->cluster_name) : NULL;
    nw_launch_bootstrap_t boot = o->bootstrap;
    boot.k8s_version = o->k8s_version;
    boot.k8s_version_ud = o->k8s_version_ud;
    boot.kube_dns = o->kube_dns;
    boot.kube_dns_ud = o->kube_dns_ud;
    boot.service_cidr = o->service_cidr;
    boot.service_cidr_ud = o->service_cidr_ud;
    if (!a->ice || !a->nc || !a->launcher || nw_launch_set_bootstrap(a->launcher, &boot)) {
        rc = nw_err_set(err, NW_ENOMEM, "cloud", "out of memory");
        goto fail;
    }
    nw_nodeclass_cache_set_validate(a->nc, validate_class, a);
    if (!o->isolated_vpc &&
        (rc = nw_pricing_new(&o->aws, a->creds, o->clock, &a->pricing, err)) != NW_OK)
        goto fail;
    if (o->aws.ssm[0]) { /* the alias and ssmParameter terms */
        if ((rc = nw_ssm_new(&o->aws, a->creds, o->clock, &a->ssm, err)) != NW_OK)
            goto fail;
        nw_nc_ssm_t s = {a->ssm, o->k8s_version, o->k8s_version_ud};
        nw_nodeclass_cache_set_ssm(a->nc, &s);
    }
    if (o->refresh_catalog) {
        /* the first refresh of each now (a failure: the embedded data serves), then one
         * every period (op_refresh) */
        const int64_t def = INT64_C(12) * 3600 * NW_NS_PER_SEC;
        a->r[R_TYPES].period_ns = o->types_period_ns > 0 ? o->types_period_ns : def;
        a->r[R_SPOT].period_ns = o->spot_period_ns > 0 ? o->spot_period_ns : def;
        a->r[R_OD].period_ns = o->isolated_vpc ? 0 : o->od_period_ns > 0 ? o->od_period_ns : def;
        if (o->isolated_vpc)
            nw_log_info("aws.cloud", "settings.isolatedVPC: on-demand prices are not refreshed "
                                     "from the Pricing API; the embedded table serves");
        int64_t now = nw_clock_mono(a->clock);
        for (int k = 0; k < NREFRESH; k++)
            if (a->r[k].period_ns > 0)
                /* a failed first refresh is logged; the compiled-in catalog serves until the
                 * refresher succeeds */
                (void)refresh_one(a, k, now, NULL);
        if (pthread_create(&a->refresher, NULL, refresher_main, a) != 0) {
            rc = nw_err_set(err, NW_ENOMEM, "cloud", "cannot start the refresh thread");
            goto fail;
        }
        pthread_setname_np(a->refresher, "nw-catalog");
        a->refresher_started = 1;
    }
    *out = &a->base;
    return NW_OK;
fail:
    op_free(&a->base);
    return rc;
}

void nw_aws_cloud_set_abort(nw_cloud_t *c, const atomic_int *abort)
{
    nw_ec2_set_abort(me(c)->ec2, abort);
    nw_ec2_set_abort(me(c)->iam, abort);
}

nw_ec2_t *nw_aws_cloud_ec2(nw_cloud_t *c)
{
    return me(c)->ec2;
}

nw_creds_t *nw_aws_cloud_creds(nw_cloud_t *c)
{
    return me(c)->creds;
}

nw_rc_t nw_aws_cloud_refresh_catalog(nw_cloud_t *c, nw_err_t *err)
{
    return nw_catalog_refresh(me(c)->cat, me(c)->ec2, err);
}

nw_rc_t nw_aws_cloud_refresh_now(nw_cloud_t *c, const char *kind, nw_err_t *err)
{
    for (int k = 0; k < NREFRESH; k++)
        if (strcmp(kind, refresh_kind[k]) == 0)
            return refresh_one(me(c), k, nw_clock_mono(me(c)->clock), err);
    return nw_err_set(err, NW_EINVAL, "kind", "unknown refresh %s", kind);
}

nw_launch_t *nw_aws_cloud_launcher(nw_cloud_t *c)
{
    return me(c)->launcher;
}

nw_nodeclass_cache_t *nw_aws_cloud_nodeclasses(nw_cloud_t *c)
{
    return me(c)->nc;
}
