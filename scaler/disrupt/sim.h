/*
 * scaler/disrupt/sim.h — the disruption core's simulation (nw_dis_sim_fn) over
 * scaler/sched: "if these NodeClaims' nodes were gone, where would their pods go?"
 * (kubernetes-sigs/karpenter pkg/controllers/disruption/helpers.go SimulateScheduling),
 * and the NodeClaim body of a replacement.
 *
 * The cluster comes in as lists (borrowed): NodePools and DaemonSets as Kubernetes JSON,
 * Nodes, NodeClaims and pods as their records (api/node.h, api/pod.h), so the live
 * controller (from its cache snapshot) and `nodewarden plan --disruption` (from files,
 * decoded) share it.
 * Instance types come through a callback (the catalog lives behind scaler/aws).
 *
 * Pure: no I/O and no clock reads. Ownership: a simulation result's handle owns its
 * scheduling snapshot and results (freed by nw_decide_sim_cleanup). Thread: the caller's.
 */
#ifndef NW_SCALER_DISRUPT_SIM_H
#define NW_SCALER_DISRUPT_SIM_H

#include <cjson/cJSON.h>

#include "scaler/disrupt/disrupt.h"
#include "scaler/sched/raw.h"

typedef struct {
    const cJSON *const *nodepools;
    size_t nnodepools;
    const nw_node_t *const *nodes; /* records (api/node.h) */
    size_t nnodes;
    const nw_node_claim_t *const *nodeclaims;
    size_t nnodeclaims;
    const nw_pod_t *const *pods; /* records (api/pod.h) */
    size_t npods;
    const cJSON *const *daemonsets;
    size_t ndaemonsets;
    int64_t now;
    /* add the instance types with their offerings (prices, availability) */
    nw_rc_t (*add_types)(void *ud, nw_sched_snap_t *s, nw_err_t *err);
    void *types_ud;
} nw_disrupt_simctx_t;

/** nw_dis_sim_fn over scaler/sched; ud is a nw_disrupt_simctx_t. Pods of the excluded
 * NodeClaims' nodes (and of deleting nodes) that are reschedulable are added back as
 * pending; ok is false when one of the excluded nodes' pods cannot be placed or when any
 * pod would land on a node that is not initialized. */
NW_MUST_USE nw_rc_t nw_disrupt_sim_schedule(void *ud, const nw_disrupt_state_t *st,
                                            const char *const *nodeclaims, size_t n,
                                            nw_disrupt_sim_t *out, nw_err_t *err);

/** The NodeClaim to create for replacement k of a simulation made by nw_disrupt_sim_schedule
 * (its instance types and capacity types as narrowed in sim->repl[k]), from the NodePool
 * (borrowed). Owned by the caller; NULL on a bad index. */
cJSON *nw_disrupt_sim_replacement_json(const nw_disrupt_sim_t *sim, int k, const cJSON *nodepool);

#endif
