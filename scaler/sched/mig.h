/*
 * scaler/sched/mig.h — the capacity of shared NVIDIA GPUs on the new nodes of a NodePool
 * that declares how its GPUs are shared (api/gpushare.h: the GPU operator's and GPU feature
 * discovery's labels on its template): MIG slices (nvidia.com/mig-<profile>, or more
 * nvidia.com/gpu under the single strategy) and time-slicing replicas.
 *
 * A MIG slice or a time-sliced replica exists only once the node's GPU operator has done
 * its work, so nothing in an instance type says how many a new node will have (Karpenter's
 * AWS provider gives them no capacity; upstream points at NodeOverlay). nodewarden takes
 * them from the pool's template labels:
 *   - nvidia.com/mig.config (all-<profile>, all-balanced): a type with MIG-capable GPUs (by
 *     its instance-gpu-name and instance-gpu-memory labels) has, per GPU, the slices the
 *     layout gives; under the mixed strategy (the default) as nvidia.com/mig-<profile> and
 *     no whole GPU, under nvidia.com/mig.strategy single as that many nvidia.com/gpu. A
 *     type whose GPUs cannot run the layout keeps its whole GPUs.
 *   - nvidia.com/gpu.replicas N: every advertised NVIDIA device (a whole GPU, a slice) is N.
 * Other pools: nothing changes. A declaration that does not parse (the webhook refuses
 * it) changes nothing. Existing nodes offer what their allocatable says.
 *
 * Pure; thread: any.
 */
#ifndef NW_SCALER_SCHED_MIG_H
#define NW_SCALER_SCHED_MIG_H

#include <stdbool.h>

#include "api/gpushare.h"
#include "api/labels.h"
#include "scaler/sched/raw.h"

/* the GPU operator's node label naming the MIG layout */
#define NW_MIG_CONFIG_LABEL NW_GPUSHARE_MIG_CONFIG_LABEL
#define NW_MIG_RESOURCE_PREFIX "nvidia.com/mig-"

/** Is res a MIG slice resource name (nvidia.com/mig-<profile>). */
bool nw_mig_is_resource(const char *res);

/** Adjust res (a type's allocatable or capacity, in slot units) for a pool labelled as
 * above (pool_labels) and a type of type_labels: each slot whose name (names[k], nres
 * slots) is a MIG resource gets GPUs x slices (x replicas), nvidia.com/gpu gets 0 (mixed),
 * GPUs x slices (x replicas) (single) or GPUs x replicas (no MIG). Types without NVIDIA
 * GPUs are left alone. */
void nw_mig_adjust(const nw_labels_t *pool_labels, const nw_labels_t *type_labels,
                   char *const *names, int nres, nw_sched_res_t *res);

#endif
