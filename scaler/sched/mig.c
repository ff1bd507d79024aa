/* scaler/sched/mig.c — shared NVIDIA GPUs (MIG slices, time-slicing) of a pool; see mig.h. */
#include "scaler/sched/mig.h"

#include <stdlib.h>
#include <string.h>

#include "api/wellknown.h"

bool nw_mig_is_resource(const char *res)
{
    return res && strncmp(res, NW_MIG_RESOURCE_PREFIX, strlen(NW_MIG_RESOURCE_PREFIX)) == 0 &&
           res[strlen(NW_MIG_RESOURCE_PREFIX)] != '\0';
}

void nw_mig_adjust(const nw_labels_t *pool_labels, const nw_labels_t *type_labels,
                   char *const *names, int nres, nw_sched_res_t *res)
{
    if (res->v[NW_SR_NVIDIA_GPU] <= 0)
        return;
    nw_gpushare_t sh;
    nw_err_t e = {0};
    if (nw_gpushare_parse(nw_labels_get(pool_labels, NW_GPUSHARE_REPLICAS_LABEL),
                          nw_labels_get(pool_labels, NW_GPUSHARE_MIG_CONFIG_LABEL),
                          nw_labels_get(pool_labels, NW_GPUSHARE_MIG_STRATEGY_LABEL), &sh,
                          &e) != NW_OK)
        return; /* refused by the webhook; nothing declared */
    int64_t gpus_milli = res->v[NW_SR_NVIDIA_GPU];
    const char *name = nw_labels_get(type_labels, "karpenter.k8s.aws/instance-gpu-name");
    const char *mem = nw_labels_get(type_labels, "karpenter.k8s.aws/instance-gpu-memory");
    long long mib = mem ? strtoll(mem, NULL, 10) : 0;
    /* a GPU that cannot run the layout (no MIG, or a layout mig-parted does not know for
     * it) stays whole: the MIG manager leaves it as it is */
    if (!sh.layout || nw_gpushare_slices(name, mib, sh.layout, "") < 0) {
        res->v[NW_SR_NVIDIA_GPU] = gpus_milli * sh.replicas;
        return;
    }
    if (sh.single) { /* every slice is an nvidia.com/gpu */
        int n = nw_gpushare_slices(name, mib, sh.layout, sh.layout + 4);
        res->v[NW_SR_NVIDIA_GPU] = gpus_milli * (n > 0 ? n : 0) * sh.replicas;
        return;
    }
    res->v[NW_SR_NVIDIA_GPU] = 0; /* mixed: partitioned, no whole GPU is advertised */
    for (int k = NW_SR_FIXED; k < nres && k < NW_SCHED_NRES; k++) {
        if (!nw_mig_is_resource(names[k]))
            continue;
        int n = nw_gpushare_slices(name, mib, sh.layout, names[k] + strlen(NW_MIG_RESOURCE_PREFIX));
        res->v[k] = n > 0 ? gpus_milli * n * sh.replicas : 0;
    }
}
