/*
 * api/gpushare.h — shared NVIDIA GPUs as a NodePool declares them on its template labels,
 * with the labels the NVIDIA GPU operator and GPU feature discovery put on a node:
 *
 *   nvidia.com/gpu.replicas  "N": the device plugin's time-slicing, each GPU advertised as N
 *                            nvidia.com/gpu (or N of each MIG device), an integer 1..256
 *   nvidia.com/mig.config    the MIG manager's layout (mig-parted's default names):
 *                            all-disabled (whole GPUs), all-<profile> (every GPU cut into
 *                            that profile: all-1g.10gb), all-balanced
 *   nvidia.com/mig.strategy  the device plugin's MIG strategy: mixed (the default: slices
 *                            advertised as nvidia.com/mig-<profile>), single (as
 *                            nvidia.com/gpu, one per slice; needs an all-<profile> layout),
 *                            none (MIG not exposed: only with all-disabled or no layout)
 *
 * The MIG profiles are NVIDIA's MIG user guide's ("Supported MIG Profiles") for the
 * MIG-capable GPUs EC2 offers (A100 40 and 80 GB, H100 80 GB, H200 141 GB), and
 * all-balanced is mig-parted's default configuration.
 *
 * Pure; no allocation. Thread: any.
 */
#ifndef NW_API_GPUSHARE_H
#define NW_API_GPUSHARE_H

#include <stdbool.h>

#include "common/err.h"

#define NW_GPUSHARE_REPLICAS_LABEL "nvidia.com/gpu.replicas"
#define NW_GPUSHARE_MIG_CONFIG_LABEL "nvidia.com/mig.config"
#define NW_GPUSHARE_MIG_STRATEGY_LABEL "nvidia.com/mig.strategy"
#define NW_GPUSHARE_MAX_REPLICAS 256

/* What a pool declares; replicas 1 and layout NULL: nothing is shared. */
typedef struct {
    int replicas;       /* time-slicing replicas per device, >= 1 */
    const char *layout; /* the MIG layout (borrowed), NULL: none or all-disabled */
    bool single;        /* MIG strategy single (slices as nvidia.com/gpu) */
} nw_gpushare_t;

/**
 * Read a declaration from the three label values (each NULL when the label is absent).
 * Errors (NW_EINVAL) set err->path to the label key and say what is accepted: replicas not
 * an integer in 1..256, a layout that is not all-disabled, all-balanced or all-<a profile
 * some MIG-capable GPU has>, a strategy other than mixed, single or none, single with
 * all-balanced, none with a MIG layout.
 */
NW_MUST_USE nw_rc_t nw_gpushare_parse(const char *replicas, const char *layout,
                                      const char *strategy, nw_gpushare_t *out, nw_err_t *err);

/** Slices of profile ("1g.5gb") per GPU that layout ("all-1g.5gb", "all-balanced") cuts a
 * GPU named gpu_name ("a100", as the instance-gpu-name label) with gpu_mib MiB of memory
 * into; 0 when the GPU runs the layout but the profile is not in it; -1 when the GPU model
 * cannot run the layout at all (not MIG-capable, a layout it has no profile for). */
int nw_gpushare_slices(const char *gpu_name, long long gpu_mib, const char *layout,
                       const char *profile);

#endif
