/* api/gpushare.c — shared NVIDIA GPUs declared on a NodePool; see gpushare.h. */
#include "api/gpushare.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
#define NGPUS (sizeof gpus / sizeof gpus[0])
#define NPROF (sizeof gpus[0].p / sizeof gpus[0].p[0])

int nw_gpushare_slices(const char *gpu_name, long long gpu_mib, const char *layout,
                       const char *profile)
{
    if (!gpu_name || !layout || !profile)
        return -1;
    const mig_gpu_t *g = NULL;
    for (size_t i = 0; i < NGPUS && !g; i++)
        if (strcmp(gpus[i].name, gpu_name) == 0 && gpu_mib >= gpus[i].mib_min &&
            gpu_mib <= gpus[i].mib_max)
            g = &gpus[i];
    if (!g)
        return -1;
    bool balanced = strcmp(layout, "all-balanced") == 0;
    const char *only = strncmp(layout, "all-", 4) == 0 ? layout + 4 : NULL;
    bool known = balanced;
    int n = 0;
    for (size_t i = 0; i < NPROF && g->p[i].profile; i++) {
        known |= only && strcmp(only, g->p[i].profile) == 0;
        if (strcmp(g->p[i].profile, profile) == 0)
            n = balanced ? g->p[i].balanced
                         : (only && strcmp(only, profile) == 0 ? g->p[i].alone : 0);
    }
    return known ? n : -1;
}

/* some MIG-capable GPU has this profile */
static bool profile_known(const char *profile)
{
    for (size_t i = 0; i < NGPUS; i++)
        for (size_t k = 0; k < NPROF && gpus[i].p[k].profile; k++)
            if (strcmp(gpus[i].p[k].profile, profile) == 0)
                return true;
    return false;
}

nw_rc_t nw_gpushare_parse(const char *replicas, const char *layout, const char *strategy,
                          nw_gpushare_t *out, nw_err_t *err)
{
    memset(out, 0, sizeof *out);
    out->replicas = 1;
    if (replicas) {
        char *end = NULL;
        long v = *replicas >= '0' && *replicas <= '9' ? strtol(replicas, &end, 10) : 0;
        if (!end || *end || v < 1 || v > NW_GPUSHARE_MAX_REPLICAS)
            return nw_err_set(err, NW_EINVAL, NW_GPUSHARE_REPLICAS_LABEL,
                              "time-slicing replicas per GPU must be an integer from 1 to %d, "
                              "got \"%.40s\"",
                              NW_GPUSHARE_MAX_REPLICAS, replicas);
        out->replicas = (int)v;
    }
    bool sliced = false;
    if (layout) {
        bool ok = strcmp(layout, "all-disabled") == 0 || strcmp(layout, "all-balanced") == 0 ||
                  (strncmp(layout, "all-", 4) == 0 && profile_known(layout + 4));
        if (!ok)
            return nw_err_set(err, NW_EINVAL, NW_GPUSHARE_MIG_CONFIG_LABEL,
                              "unknown MIG layout \"%.60s\": expected all-disabled, all-balanced "
                              "or all-<profile> with a MIG profile of A100, H100 or H200 GPUs "
                              "(such as all-1g.10gb)",
                              layout);
        sliced = strcmp(layout, "all-disabled") != 0;
        out->layout = sliced ? layout : NULL;
    }
    if (strategy) {
        if (strcmp(strategy, "single") == 0)
            out->single = true;
        else if (strcmp(strategy, "none") == 0 && sliced)
            return nw_err_set(err, NW_EINVAL, NW_GPUSHARE_MIG_STRATEGY_LABEL,
                              "MIG strategy none exposes no MIG device, but the MIG layout "
                              "\"%.60s\" partitions the GPUs: use mixed or single",
                              layout);
        else if (strcmp(strategy, "mixed") != 0 && strcmp(strategy, "none") != 0)
            return nw_err_set(err, NW_EINVAL, NW_GPUSHARE_MIG_STRATEGY_LABEL,
                              "unknown MIG strategy \"%.40s\": expected mixed, single or none",
                              strategy);
    }
    if (out->single && out->layout && strcmp(out->layout, "all-balanced") == 0)
        return nw_err_set(err, NW_EINVAL, NW_GPUSHARE_MIG_STRATEGY_LABEL,
                          "MIG strategy single needs every GPU cut into one profile "
                          "(all-<profile>), not all-balanced: use mixed");
    return NW_OK;
}
