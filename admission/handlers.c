/* admission/handlers.c — the handler table and what the handlers share. */
#include "admission/handlers.h"

#include <string.h>

#include "admission/gpu.h"

/* Handlers register here, one line each (group, kind, mutate, validate). */
const nw_admit_handler_t nw_handlers[] = {
    {"", "Pod", nw_gpu_pod_mutate, nw_gpu_pod_validate},
    {"karpenter.sh", "NodePool", nw_nodepool_admit_mutate, nw_nodepool_admit_validate},
    {"karpenter.k8s.aws", "EC2NodeClass", nw_admission_ec2nodeclass_mutate,
     nw_admission_ec2nodeclass_validate},
    {NULL, NULL, NULL, NULL},
};

const nw_admit_handler_t *nw_handlers_find(const char *group, const char *kind)
{
    if (!group || !kind)
        return NULL;
    for (const nw_admit_handler_t *h = nw_handlers; h->kind; h++)
        if (strcmp(h->group, group) == 0 && strcmp(h->kind, kind) == 0)
            return h;
    return NULL;
}
