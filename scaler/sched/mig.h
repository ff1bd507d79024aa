/*
 * scaler/sched/mig.h — the capacity of NVIDIA MIG slices (nvidia.com/mig-<profile>) on the
 * nodes of a NodePool that says how its GPUs are partitioned.
 *
 * A MIG slice exists only once a node's GPUs are partitioned, so nothing in an instance
 * type says how many a new node will have (Karpenter's AWS provider gives MIG no capacity;
 * upstream points at NodeOverlay for it). nodewarden takes the partitioning from the pool:
 * a NodePool whose template labels carry the NVIDIA GPU operator's `nvidia.com/mig.config`
 * label, which the operator's MIG manager applies to the node, with one of the mig-parted
 * layouts `all-<profile>` (every GPU cut into that profile) or `all-balanced`. For such a
 * pool, a type with MIG-capable GPUs (by its instance-gpu-name and instance-gpu-memory
 * labels) has, per GPU, the slices the layout gives (NVIDIA's MIG user guide, "Supported MIG
 * Profiles"), and no whole GPU (nvidia.com/gpu 0: the device plugin's mixed strategy
 * advertises slices instead); a type whose GPUs cannot run the layout keeps its whole GPUs
 * and has no slices. Other pools: nothing changes, and a MIG pod fits only a node that
 * reports slices (its allocatable).
 *
 * Pure; thread: any.
 */
#ifndef NW_SCALER_SCHED_MIG_H
#define NW_SCALER_SCHED_MIG_H

#include <stdbool.h>

#include "api/labels.h"
#include "scaler/sched/raw.h"

/* the GPU operator's node label naming the MIG layout */
#define NW_MIG_CONFIG_LABEL "nvidia.com/mig.config"
#define NW_MIG_RESOURCE_PREFIX "nvidia.com/mig-"

/** Is res a MIG slice resource name (nvidia.com/mig-<profile>). */
bool nw_mig_is_resource(const char *res);

/** Slices of profile ("1g.5gb") per GPU that layout ("all-1g.5gb", "all-balanced") cuts a
 * GPU named gpu_name ("a100", as the instance-gpu-name label) with gpu_mib MiB of memory
 * into; 0 when the GPU does not support the layout or the profile is not in it; -1 when
 * the GPU model cannot run the layout at all (not MIG-capable, unknown layout). */
int nw_mig_slices(const char *gpu_name, long long gpu_mib, const char *layout, const char *profile);

/** Adjust res (a type's allocatable or capacity, in slot units) for a pool labelled with
 * layout (pool_labels' nvidia.com/mig.config; nothing when absent) and a type of type_labels:
 * each slot whose name (names[k], nres slots) is a MIG resource gets GPUs x slices,
 * nvidia.com/gpu gets 0. Types without NVIDIA GPUs, or whose GPUs cannot run the layout, are
 * left alone. */
void nw_mig_adjust(const nw_labels_t *pool_labels, const nw_labels_t *type_labels,
                   char *const *names, int nres, nw_sched_res_t *res);

#endif
