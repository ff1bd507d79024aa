/* scaler/sched/mig.c — MIG slices of a pool's GPUs; see mig.h. */
#include "scaler/sched/mig.h"

#include <stdlib.h>
#include <string.h>

#include "api/wellknown.h"

/* One MIG-capable GPU model: its profiles and how many of each fit a GPU alone (the
 * all-<profile> layout), and the all-balanced layout. NVIDIA's MIG user guide, "Supported
 * MIG Profiles" (A100 40GB and 80GB, H100 80GB, H200 141GB) and mig-parted's default
 * configuration (all-balanced). */
typedef struct {
    const char *name;  /* instance-gpu-name */
    long long mib_min; /* instance-gpu-memory range that is this model */
    long long mib_max;
    struct {
        const char *profile;
        int alone;    /* per GPU, the GPU cut into this profile only */
        int balanced; /* per GPU in all-balanced */
    } p[8];
} mig_gpu_t;

static const mig_gpu_t gpus[] = {
    {"a100",
     30000,
     50000,
     {{"1g.5gb", 7, 2},
      {"1g.10gb", 4, 0},
      {"2g.10gb", 3, 1},
      {"3g.20gb", 2, 1},
      {"4g.20gb", 1, 0},
      {"7g.40gb", 1, 0}}},
    {"a100",
     70000,
     90000,
     {{"1g.10gb", 7, 2},
      {"1g.20gb", 4, 0},
      {"2g.20gb", 3, 1},
      {"3g.40gb", 2, 1},
      {"4g.40gb", 1, 0},
      {"7g.80gb", 1, 0}}},
    {"h100",
     70000,
     90000,
     {{"1g.10gb", 7, 2},
      {"1g.20gb", 4, 0},
      {"2g.20gb", 3, 1},
      {"3g.40gb", 2, 1},
      {"4g.40gb", 1, 0},
      {"7g.80gb", 1, 0}}},
    {"h200",
     130000,
     150000,
     {{"1g.18gb", 7, 2},
      {"1g.35gb", 4, 0},
      {"2g.35gb", 3, 1},
      {"3g.71gb", 2, 1},
      {"4g.71gb", 1, 0},
      {"7g.141gb", 1, 0}}},
};

bool nw_mig_is_resource(const char *res)
{
    return res && strncmp(res, NW_MIG_RESOURCE_PREFIX, strlen(NW_MIG_RESOURCE_PREFIX)) == 0 &&
           res[strlen(NW_MIG_RESOURCE_PREFIX)] != '\0';
}

int nw_mig_slices(const char *gpu_name, long long gpu_mib, const char *layout, const char *profile)
{
    if (!gpu_name || !layout || !profile)
        return -1;
    const mig_gpu_t *g = NULL;
    for (size_t i = 0; i < sizeof gpus / sizeof gpus[0] && !g; i++)
        if (strcmp(gpus[i].name, gpu_name) == 0 && gpu_mib >= gpus[i].mib_min &&
            gpu_mib <= gpus[i].mib_max)
            g = &gpus[i];
    if (!g)
        return -1;
    bool balanced = strcmp(layout, "all-balanced") == 0;
    const char *only = strncmp(layout, "all-", 4) == 0 ? layout + 4 : NULL;
    bool known = balanced;
    int n = 0;
    for (size_t i = 0; i < sizeof g->p / sizeof g->p[0] && g->p[i].profile; i++) {
        known |= only && strcmp(only, g->p[i].profile) == 0;
        if (strcmp(g->p[i].profile, profile) == 0)
            n = balanced ? g->p[i].balanced
                         : (only && strcmp(only, profile) == 0 ? g->p[i].alone : 0);
    }
    return known ? n : -1;
}

void nw_mig_adjust(const nw_labels_t *pool_labels, const nw_labels_t *type_labels,
                   char *const *names, int nres, nw_sched_res_t *res)
{
    const char *layout = nw_labels_get(pool_labels, NW_MIG_CONFIG_LABEL);
    if (!layout || res->v[NW_SR_NVIDIA_GPU] <= 0)
        return;
    const char *name = nw_labels_get(type_labels, "karpenter.k8s.aws/instance-gpu-name");
    const char *mem = nw_labels_get(type_labels, "karpenter.k8s.aws/instance-gpu-memory");
    long long mib = mem ? strtoll(mem, NULL, 10) : 0;
    /* a GPU that cannot run the layout (no MIG, or a layout mig-parted does not know for
     * it) stays whole: the MIG manager leaves it as it is */
    if (nw_mig_slices(name, mib, layout, "") < 0)
        return;
    int64_t gpus_milli = res->v[NW_SR_NVIDIA_GPU];
    res->v[NW_SR_NVIDIA_GPU] = 0; /* partitioned, no whole GPU is advertised */
    for (int k = NW_SR_FIXED; k < nres && k < NW_SCHED_NRES; k++) {
        if (!nw_mig_is_resource(names[k]))
            continue;
        int n = nw_mig_slices(name, mib, layout, names[k] + strlen(NW_MIG_RESOURCE_PREFIX));
        res->v[k] = n > 0 ? gpus_milli * n : 0;
    }
}
