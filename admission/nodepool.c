/* admission/nodepool.c — NodePool admission handlers (mutate = schema defaults as a JSON
 * patch; validate = default a copy, then CRD validation), plus the GPU pool policy. */
#include "admission/handlers.h"

#include "admission/gpu.h"
#include "api/nodepool.h"

#include <stdlib.h>
#include <string.h>

nw_rc_t nw_nodepool_admit_mutate(const nw_admit_ctx_t *ctx, const nw_admit_req_t *req,
                                 nw_admit_result_t *res)
{
    if ((req->op != NW_OP_CREATE && req->op != NW_OP_UPDATE) || !req->object)
        return NW_OK;
    nw_jsonpatch_t p;
    nw_jsonpatch_init(&p);
    nw_rc_t rc = nw_nodepool_default(req->object, &p);
    /* GPU isolation (admission/gpu.h): taint + label for GPU pools, no GPU types for others.
     * Its operations touch other paths than the schema defaults, so both apply. */
    if (rc == NW_OK && ctx && ctx->gpu)
        rc = nw_gpu_pool_patch((const nw_gpu_policy_t *)ctx->gpu, req->object, &p, res);
    if (rc == NW_OK) {
        free(res->patch);
        res->patch = nw_jsonpatch_take_text(&p);
        rc = p.rc;
    }
    nw_jsonpatch_cleanup(&p);
    return rc;
}

nw_rc_t nw_nodepool_admit_validate(const nw_admit_ctx_t *ctx, const nw_admit_req_t *req,
                                   nw_admit_result_t *res)
{
    if ((req->op != NW_OP_CREATE && req->op != NW_OP_UPDATE) || !req->object)
        return NW_OK;
    /* kube-apiserver validates the defaulted object */
    nw_jsonpatch_t p;
    nw_jsonpatch_init(&p);
    nw_rc_t rc = nw_nodepool_default(req->object, &p);
    char *patch = rc == NW_OK ? nw_jsonpatch_take_text(&p) : NULL;
    if (rc == NW_OK)
        rc = p.rc;
    nw_jsonpatch_cleanup(&p);
    if (rc != NW_OK) {
        free(patch);
        return rc;
    }
    cJSON *obj = nw_admit_apply_patch_copy(req->object, patch, NULL);
    free(patch);
    if (!obj)
        return NW_ENOMEM;
    nw_kv_t kv;
    nw_kv_init(&kv);
    rc = nw_nodepool_validate(obj, req->op == NW_OP_UPDATE ? req->old_object : NULL, &kv, res);
    if (rc == NW_OK)
        rc = nw_kv_finish(&kv, "NodePool", "karpenter.sh", nw_admit_object_name(req), res);
    nw_kv_cleanup(&kv);
    /* GPU isolation policy, on an object that passed Karpenter's own rules */
    if (rc == NW_OK && res->allowed && ctx && ctx->gpu) {
        const nw_gpu_policy_t *gp = (const nw_gpu_policy_t *)ctx->gpu;
        char msgs[4][512];
        size_t n = nw_gpu_pool_problems(gp, obj, true, msgs, 4);
        rc = nw_gpu_deny_or_warn(gp, "NodePool", nw_admit_object_name(req), msgs, n, res);
        /* cross-object: does the EC2NodeClass register the kubelet with the GPU taint? */
        const cJSON *ref = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "spec"),
                                                 "template"),
                "spec"),
            "nodeClassRef");
        const cJSON *ncname = cJSON_GetObjectItemCaseSensitive(ref, "name");
        if (rc == NW_OK && res->allowed && ctx->lookup && cJSON_IsString(ncname)) {
            cJSON *nc = ctx->lookup(ctx->lookup_arg, "karpenter.k8s.aws", "EC2NodeClass",
                                    ncname->valuestring);
            rc = nw_gpu_pool_crosscheck(gp, obj, nc, res);
            cJSON_Delete(nc);
        }
    }
    cJSON_Delete(obj);
    return rc;
}
