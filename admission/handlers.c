/* admission/handlers.c — the handler table and what the handlers share. */
#include "admission/handlers.h"

#include <string.h>

#include "admission/gpu.h"
#include "api/jsonpatch.h"

/* Handlers register here, one line each (group, kind, mutate, validate). */
const nw_admit_handler_t nw_admit_handlers[] = {
    {"", "Pod", nw_gpu_pod_mutate, nw_gpu_pod_validate},
    {"karpenter.sh", "NodePool", nw_nodepool_admit_mutate, nw_nodepool_admit_validate},
    {"karpenter.k8s.aws", "EC2NodeClass", nw_ec2nodeclass_admit_mutate, nw_ec2nodeclass_admit_validate},
    {NULL, NULL, NULL, NULL},
};

const nw_admit_handler_t *nw_admit_find(const char *group, const char *kind)
{
    if (!group || !kind)
        return NULL;
    for (const nw_admit_handler_t *h = nw_admit_handlers; h->kind; h++)
        if (strcmp(h->group, group) == 0 && strcmp(h->kind, kind) == 0)
            return h;
    return NULL;
}

cJSON *nw_admit_apply_patch_copy(const cJSON *obj, const char *patch, nw_err_t *err)
{
    cJSON *copy = obj ? cJSON_Duplicate(obj, 1) : cJSON_CreateNull();
    if (!copy) {
        nw_err_set(err, NW_ENOMEM, "", "out of memory");
        return NULL;
    }
    if (patch && nw_jsonpatch_apply_text(&copy, patch, err) != NW_OK) {
        cJSON_Delete(copy);
        return NULL;
    }
    return copy;
}

const char *nw_admit_object_name(const nw_admit_req_t *req)
{
    if (req->name && *req->name)
        return req->name;
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(req->object, "metadata"), "name");
    return cJSON_IsString(n) ? n->valuestring : "";
}
