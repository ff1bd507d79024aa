/* admission/crd.c — see crd.h. */
#include "admission/crd.h"

#include <stdbool.h>
#include <stdlib.h>

static bool applies(const nw_admit_req_t *req)
{
    return (req->op == NW_OP_CREATE || req->op == NW_OP_UPDATE) && req->object;
}

nw_rc_t nw_crd_mutate(const nw_crd_t *crd, const nw_admit_req_t *req, nw_admit_result_t *res,
                      nw_crd_extra_fn extra, const void *ud)
{
    if (!applies(req))
        return NW_OK;
    nw_jsonpatch_t p;
    nw_jsonpatch_init(&p);
    nw_rc_t rc = crd->defaults(req->object, &p);
    if (rc == NW_OK && extra)
        rc = extra(ud, req->object, &p, res);
    if (rc == NW_OK) {
        free(res->patch);
        res->patch = nw_jsonpatch_take_text(&p);
        rc = p.rc;
    }
    nw_jsonpatch_cleanup(&p);
    return rc;
}

nw_rc_t nw_crd_validate(const nw_crd_t *crd, const nw_admit_req_t *req, nw_admit_result_t *res,
                        nw_crd_obj_t *defaulted)
{
    nw_crd_obj_t obj = {0};
    if (defaulted)
        *defaulted = obj;
    if (!applies(req))
        return NW_OK;
    nw_jsonpatch_t p;
    nw_jsonpatch_init(&p);
    nw_rc_t rc = crd->defaults(req->object, &p);
    if (rc == NW_OK)
        rc = p.rc;
    if (rc == NW_OK && nw_jsonpatch_len(&p) == 0) {
        obj.view = req->object; /* nothing to default: validate the request's own tree */
    } else if (rc == NW_OK) {
        obj.owned = cJSON_Duplicate(req->object, 1);
        rc = obj.owned ? nw_jsonpatch_apply(&obj.owned, p.ops, NULL) : NW_ENOMEM;
        obj.view = obj.owned;
    }
    nw_jsonpatch_cleanup(&p);
    if (rc == NW_OK) {
        nw_kv_t kv;
        nw_kval_init(&kv);
        rc = crd->validate(obj.view, req->op == NW_OP_UPDATE ? req->old_object : NULL, &kv, res);
        if (rc == NW_OK)
            rc = nw_kval_finish(&kv, crd->kind, crd->group, nw_admit_object_name(req), res);
        nw_kval_cleanup(&kv);
    }
    if (defaulted && rc == NW_OK)
        *defaulted = obj;
    else
        cJSON_Delete(obj.owned);
    return rc;
}
