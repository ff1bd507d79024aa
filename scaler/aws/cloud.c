/* scaler/aws/cloud.c — nw_cloud_ops_t for AWS; see cloud.h. */
#include "scaler/aws/cloud.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "scaler/aws/catalog_refresh.h"

typedef struct {
    nw_cloud_t base;
    nw_creds_t *creds;
    nw_ec2_t *ec2;
    nw_catalog_t *cat;
    nw_ice_t *ice;
    nw_nodeclass_cache_t *nc;
    nw_launcher_t *launcher;
} aws_cloud_t;

static aws_cloud_t *me(nw_cloud_t *c)
{
    return (aws_cloud_t *)c;
}

static nw_rc_t op_offer_zones(nw_cloud_t *c, const nw_catalog_zone_t *z, int nz, nw_err_t *err)
{
    aws_cloud_t *a = me(c);
    if (nz <= 0 || nw_catalog_len(a->cat) == 0 || nw_catalog_at(a->cat, 0)->noffer > 0)
        return NW_OK;
    return nw_catalog_set_zones(a->cat, z, nz, err);
}

static nw_rc_t op_launch(nw_cloud_t *c, const nw_launch_req_t *req, nw_launch_result_t *out,
                         nw_ec2_error_t *ae, nw_err_t *err)
{
    /* offline catalog: offer the zones of the class's subnets */
    if (req->resolved) {
        nw_catalog_zone_t z[16];
        int nz = 0;
        for (size_t i = 0; i < req->resolved->nsubnets && nz < 16; i++) {
            int seen = 0;
            for (int k = 0; k < nz; k++)
                seen |= strcmp(z[k].name, req->resolved->subnets[i].zone) == 0;
            if (seen)
                continue;
            // cppcheck-suppress legacyUninitvar ; z[nz] is being written; sizeof reads nothing
            snprintf(z[nz].name, sizeof z[nz].name, "%s", req->resolved->subnets[i].zone);
            snprintf(z[nz].id, sizeof z[nz].id, "%s", req->resolved->subnets[i].zone_id);
            nz++;
        }
        nw_rc_t rc = op_offer_zones(c, z, nz, err);
        if (rc != NW_OK)
            return rc;
    }
    return nw_launcher_launch(me(c)->launcher, req, out, ae, err);
}

static nw_rc_t op_terminate(nw_cloud_t *c, const char *pid, nw_err_t *err)
{
    return nw_launcher_terminate(me(c)->launcher, pid, err);
}

static nw_rc_t op_list(nw_cloud_t *c, nw_ec2_instances_t *out, nw_err_t *err)
{
    return nw_launcher_list(me(c)->launcher, out, err);
}

static nw_rc_t op_resolve(nw_cloud_t *c, const cJSON *nc, const nw_nodeclass_resolved_t **out,
                          nw_err_t *err)
{
    return nw_nodeclass_cache_get(me(c)->nc, nc, out, err);
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
    nw_launcher_free(a->launcher);
    nw_nodeclass_cache_free(a->nc);
    nw_ice_free(a->ice);
    nw_catalog_free(a->cat);
    nw_ec2_free(a->ec2);
    nw_creds_free(a->creds);
    free(a);
}

static nw_rc_t op_instance_state(nw_cloud_t *c, const char *pid, char *state, size_t len,
                                 nw_err_t *err)
{
    const char *id = nw_provider_id_instance(pid);
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
    nw_ec2_instances_free(&l);
    return rc;
}

static const nw_cloud_ops_t aws_ops = {
    .launch = op_launch,
    .terminate = op_terminate,
    .list = op_list,
    .resolve = op_resolve,
    .catalog = op_catalog,
    .ice = op_ice,
    .free = op_free,
    .instance_state = op_instance_state,
    .offer_zones = op_offer_zones,
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
    if ((rc = nw_creds_new(&o->aws, o->clock, &a->creds, err)) != NW_OK ||
        (rc = nw_ec2_new(&o->aws, a->creds, o->clock, &a->ec2, err)) != NW_OK ||
        (rc = nw_catalog_new_embedded(o->aws.region, &a->cat, err)) != NW_OK)
        goto fail;
    a->ice = nw_ice_new(o->ice_ttl_ns);
    a->nc = nw_nodeclass_cache_new(a->ec2, o->clock, 0);
    a->launcher =
        a->ice ? nw_launcher_new(a->ec2, a->cat, a->ice, o->clock, o->cluster_name) : NULL;
    if (!a->ice || !a->nc || !a->launcher) {
        rc = nw_err_set(err, NW_ENOMEM, "cloud", "out of memory");
        goto fail;
    }
    if (o->refresh_catalog) {
        nw_err_t e = {0};
        if (nw_catalog_refresh(a->cat, a->ec2, &e) != NW_OK)
            nw_log_warn("aws.cloud", "catalog refresh failed; using the embedded catalog",
                        NW_LS("error", e.msg));
    }
    *out = &a->base;
    return NW_OK;
fail:
    op_free(&a->base);
    return rc;
}

nw_ec2_t *nw_aws_cloud_ec2(nw_cloud_t *c)
{
    return me(c)->ec2;
}

nw_creds_t *nw_aws_cloud_creds(nw_cloud_t *c)
{
    return me(c)->creds;
}
