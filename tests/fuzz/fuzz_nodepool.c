/* Fuzz target: arbitrary JSON objects through the NodePool and EC2NodeClass
 * admission handlers (mutate, apply the patch, mutate again, validate), as CREATE and
 * as UPDATE against themselves. Invariants: handlers succeed, the patch applies,
 * defaulting is idempotent, and validating the raw and the defaulted object agree. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "admission/handlers.h"
#include "api/admit.h"
#include "api/jsonpatch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void one(const nw_admit_handler_t *h, const cJSON *obj, int update)
{
    nw_admit_ctx_t ctx = {.gpu = NULL, .self_namespace = ""};
    nw_admit_req_t req = {0};
    req.op = update ? NW_OP_UPDATE : NW_OP_CREATE;
    req.uid = "f";
    req.group = h->group;
    req.version = "v1";
    req.kind = h->kind;
    req.name = "";
    req.namespace_ = "";
    req.subresource = "";
    req.object = obj;
    req.old_object = update ? obj : NULL;
    nw_admit_result_t res, again, v1, v2;
    nw_admit_result_init(&res);
    if (h->mutate(&ctx, &req, &res) != NW_OK)
        abort();
    cJSON *d = cJSON_Duplicate(obj, 1);
    if (!d)
        abort();
    if (res.patch && nw_jsonpatch_apply_text(&d, res.patch, NULL) != NW_OK)
        abort(); /* our own patch must apply */
    req.object = d;
    nw_admit_result_init(&again);
    if (h->mutate(&ctx, &req, &again) != NW_OK || again.patch)
        abort(); /* idempotent */
    nw_admit_result_init(&v1);
    nw_admit_result_init(&v2);
    if (h->validate(&ctx, &req, &v1) != NW_OK)
        abort();
    req.object = obj;
    if (h->validate(&ctx, &req, &v2) != NW_OK)
        abort();
    if (v1.allowed != v2.allowed || (!v1.allowed && strcmp(v1.message, v2.message) != 0))
        abort(); /* validation defaults first, so both agree */
    nw_admit_result_cleanup(&res);
    nw_admit_result_cleanup(&again);
    nw_admit_result_cleanup(&v1);
    nw_admit_result_cleanup(&v2);
    cJSON_Delete(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *end = NULL;
    cJSON *obj = cJSON_ParseWithLengthOpts((const char *)data, size, &end, 0);
    if (!obj)
        return 0;
    for (const nw_admit_handler_t *h = nw_handlers; h->kind; h++) {
        if (strcmp(h->kind, "NodePool") != 0 && strcmp(h->kind, "EC2NodeClass") != 0)
            continue;
        one(h, obj, 0);
        one(h, obj, 1);
    }
    cJSON_Delete(obj);
    return 0;
}
