/* admission/ec2nodeclass.c — EC2NodeClass admission handlers (mutate = metadataOptions
 * defaults as a JSON patch; validate = default a copy, then the CRD rules of
 * api/ec2nodeclass.c). */
#include "admission/handlers.h"

#include <stdlib.h>

#include "api/ec2nodeclass.h"

nw_rc_t nw_ec2nodeclass_admit_mutate(const nw_admit_ctx_t *ctx, const nw_admit_req_t *req,
                                     nw_admit_result_t *res)
{
    (void)ctx;
    if ((req->op != NW_OP_CREATE && req->op != NW_OP_UPDATE) || !req->object)
        return NW_OK;
    nw_jsonpatch_t p;
    nw_jsonpatch_init(&p);
    nw_rc_t rc = nw_ec2nodeclass_default(req->object, &p);
    if (rc == NW_OK) {
        free(res->patch);
        res->patch = nw_jsonpatch_take_text(&p);
        rc = p.rc;
    }
    nw_jsonpatch_cleanup(&p);
    return rc;
}

nw_rc_t nw_ec2nodeclass_admit_validate(const nw_admit_ctx_t *ctx, const nw_admit_req_t *req,
                                       nw_admit_result_t *res)
{
    (void)ctx;
    if ((req->op != NW_OP_CREATE && req->op != NW_OP_UPDATE) || !req->object)
        return NW_OK;
    nw_jsonpatch_t p;
    nw_jsonpatch_init(&p);
    nw_rc_t rc = nw_ec2nodeclass_default(req->object, &p);
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
    rc = nw_ec2nodeclass_validate(obj, req->op == NW_OP_UPDATE ? req->old_object : NULL, &kv, res);
    if (rc == NW_OK)
        rc = nw_kv_finish(&kv, "EC2NodeClass", "karpenter.k8s.aws", nw_admit_object_name(req), res);
    nw_kv_cleanup(&kv);
    cJSON_Delete(obj);
    return rc;
}
