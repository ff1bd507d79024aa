#include "api/admit.h"

#include "api/ec2nodeclass.h"
#include "admission/gpu.h"
#include "api/nodepool.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

void nw_admit_result_init(nw_admit_result_t *res)
{
    memset(res, 0, sizeof *res);
    res->allowed = 1;
}

void nw_admit_result_cleanup(nw_admit_result_t *res)
{
    free(res->reason);
    free(res->message);
    cJSON_Delete(res->details);
    free(res->patch);
    for (size_t i = 0; i < res->nwarnings; i++)
        free(res->warnings[i]);
    nw_admit_result_init(res);
}

nw_rc_t nw_admit_warn(nw_admit_result_t *res, const char *fmt, ...)
{
    if (res->nwarnings >= NW_ADMIT_MAX_WARNINGS)
        return NW_OK;
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NW_ENOMEM;
    res->warnings[res->nwarnings++] = s;
    return NW_OK;
}
