/* admission/nodepool.c — NodePool admission handlers (mutate = schema defaults as a JSON
 * patch; validate = default a copy, then CRD validation; admission/crd.h), plus the GPU pool
 * policy. */
#include "admission/handlers.h"

#include "admission/crd.h"
#include "admission/gpu.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/gpushare.h"
#include "api/nodepool.h"
#include "common/json.h"

static const nw_crd_t nodepool = {"NodePool", "karpenter.sh", nw_nodepool_defaults_apply,
                                  nw_nodepool_validate};

/* GPU isolation (admission/gpu.h): taint + label for GPU pools, no GPU types for others.
 * Its operations touch other paths than the schema defaults, so both apply. */
static NW_MUST_USE nw_rc_t gpu_patch(const void *ud, const cJSON *obj, nw_jsonpatch_t *p,
                                     nw_admit_result_t *res)
{
    return nw_gpu_pool_patch((const nw_gpu_policy_t *)ud, obj, p, res);
}

nw_rc_t nw_nodepool_admit_mutate(const nw_admit_ctx_t *ctx, const nw_admit_req_t *req,
                                 nw_admit_result_t *res)
{
    const void *gpu = ctx ? ctx->gpu : NULL;
    return nw_crd_mutate(&nodepool, req, res, gpu ? gpu_patch : NULL, gpu);
}

/* Shared NVIDIA GPUs declared on the template labels (api/gpushare.h): a value the scheduler
 * cannot read is refused, naming the label (422, as the API server's field errors). */
static nw_rc_t gpushare_check(const nw_admit_req_t *req, const cJSON *obj, nw_admit_result_t *res)
{
    const cJSON *l = nw_json_get(
        nw_json_get(nw_json_get(nw_json_get(obj, "spec"), "template"), "metadata"), "labels");
    const char *keys[] = {NW_GPUSHARE_REPLICAS_LABEL, NW_GPUSHARE_MIG_CONFIG_LABEL,
                          NW_GPUSHARE_MIG_STRATEGY_LABEL};
    const char *v[3];
    for (int i = 0; i < 3; i++)
        v[i] = nw_json_str(l, keys[i]);
    nw_gpushare_t sh;
    nw_err_t e = {0};
    if (nw_gpushare_parse(v[0], v[1], v[2], &sh, &e) == NW_OK)
        return NW_OK;
    const char *bad = "";
    for (int i = 0; i < 3; i++)
        if (strcmp(e.path, keys[i]) == 0 && v[i])
            bad = v[i];
    const char *name = nw_admit_object_name(req);
    char *m = malloc(1024);
    if (!m)
        return NW_ENOMEM;
    snprintf(m, 1024,
             "NodePool.karpenter.sh \"%s\" is invalid: spec.template.metadata.labels[%s]: "
             "Invalid value: \"%.60s\": %s",
             name && *name ? name : "(generated)", e.path, bad, e.msg);
    free(res->message);
    free(res->reason);
    res->message = m;
    res->reason = strdup("Invalid");
    res->allowed = 0;
    res->code = 422;
    /* the API server's details, from which kubectl prints the field */
    char field[160], cause[512];
    snprintf(field, sizeof field, "spec.template.metadata.labels[%s]", e.path);
    snprintf(cause, sizeof cause, "Invalid value: \"%.60s\": %.400s", bad, e.msg);
    cJSON *d = cJSON_CreateObject(), *c = cJSON_CreateObject();
    cJSON *causes = d ? cJSON_AddArrayToObject(d, "causes") : NULL;
    if (!d || !c || !causes || !cJSON_AddStringToObject(d, "name", name ? name : "") ||
        !cJSON_AddStringToObject(d, "group", "karpenter.sh") ||
        !cJSON_AddStringToObject(d, "kind", "NodePool") ||
        !cJSON_AddStringToObject(c, "reason", "FieldValueInvalid") ||
        !cJSON_AddStringToObject(c, "message", cause) ||
        !cJSON_AddStringToObject(c, "field", field)) {
        cJSON_Delete(d);
        cJSON_Delete(c);
        return NW_ENOMEM;
    }
    cJSON_AddItemToArray(causes, c);
    cJSON_Delete(res->details);
    res->details = d;
    return res->reason ? NW_OK : NW_ENOMEM;
}

nw_rc_t nw_nodepool_admit_validate(const nw_admit_ctx_t *ctx, const nw_admit_req_t *req,
                                   nw_admit_result_t *res)
{
    nw_crd_obj_t d;
    nw_rc_t rc = nw_crd_validate(&nodepool, req, res, &d);
    const cJSON *obj = d.view;
    /* shared GPUs (time-slicing replicas, MIG layouts) the scheduler plans with */
    if (rc == NW_OK && obj && res->allowed)
        rc = gpushare_check(req, obj, res);
    /* GPU isolation policy, on an object that passed Karpenter's own rules */
    if (rc == NW_OK && obj && res->allowed && ctx && ctx->gpu) {
        const nw_gpu_policy_t *gp = (const nw_gpu_policy_t *)ctx->gpu;
        char msgs[4][512];
        size_t n = nw_gpu_pool_problems(gp, obj, true, msgs, 4);
        rc = nw_gpu_deny_or_warn(gp, "NodePool", nw_admit_object_name(req), msgs, n, res);
        /* cross-object: does the EC2NodeClass register the kubelet with the GPU taint? */
        const char *ncname = nw_json_str_at(obj, "spec.template.spec.nodeClassRef.name");
        if (rc == NW_OK && res->allowed && ctx->lookup && ncname) {
            cJSON *nc = ctx->lookup(ctx->lookup_arg, "karpenter.k8s.aws", "EC2NodeClass", ncname);
            rc = nw_gpu_userdata_pool_crosscheck(gp, obj, nc, res);
            cJSON_Delete(nc);
        }
    }
    cJSON_Delete(d.owned);
    return rc;
}
