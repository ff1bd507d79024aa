/*
 * scaler/sched/schedule.h — the provisioning simulation (kubernetes-sigs/karpenter
 * pkg/controllers/provisioning/scheduling/scheduler.go):
 * a snapshot of pods, nodes, in-flight NodeClaims, NodePools, DaemonSets and instance
 * types in; new NodeClaims, placements on existing capacity and per-pool reasons for
 * pods that cannot be placed out.
 *
 * Pure: no I/O and no clock reads. `now` (nanoseconds) is accepted for the time-based
 * rules the live scaler will add (nomination windows); today the decisions depend only
 * on the snapshot (pods of equal size are ordered by creationTimestamp, then uid).
 *
 * Use:
 *   nw_sched_snap_t *s = nw_snapshot_new();
 *   nw_snap_node_add_itype(s, &it) ...       (or nw_from_catalog_add,
 * scaler/sched/from_catalog.h) nw_snap_node_add_pool_json(s, nodepool, &err);
 * nw_snap_pod_add(s, record, &err) (or nw_snap_pod_add_json) / add_node_json /
 * add_nodeclaim_json / add_daemonset_json ... nw_sched_results_t r; nw_solve(s, now, &r,
 * &err); ... nw_solve_results_free(&r); nw_snapshot_free(s); Objects may be added in any
 * order (storage before the pods that use it); nw_solve binds pods to their nodes by name. A
 * snapshot can be solved more than once (each solve works on its own state).
 *
 * Resources are held as int64 milli-units (a Kubernetes quantity's MilliValue: cpu
 * 1500m = 1500, memory 1Gi = 1073741824000, pods 1 = 1000) in a fixed vector whose
 * slots are named by the snapshot (cpu, memory, pods, ephemeral-storage, then the
 * accelerator resources, then any other name seen, up to NW_SCHED_NRES).
 *
 * Ownership: the snapshot owns everything added to it (JSON is copied out, never kept;
 * pods given as JSON are kept as their decoded records). Pod records are borrowed
 * (nw_snap_pod_add says for how long).
 * Results own their strings; pod/pool/itype indexes in results refer to the snapshot.
 * Thread: a snapshot belongs to one thread; solving does not modify it.
 */
#ifndef NW_SCALER_SCHED_H
#define NW_SCALER_SCHED_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/labels.h"
#include "api/node.h"
#include "api/pod.h"
#include "api/requirements.h"
#include "api/taints.h"
#include "common/err.h"
#include "scaler/sched/raw.h"

/* One instance type as the simulation sees it. */
typedef struct {
    char name[64];
    nw_labels_t labels; /* well-known labels of the type (not zone/capacity-type) */
    nw_sched_res_t capacity;
    nw_sched_res_t allocatable; /* capacity minus kube/system reserved and eviction */
    bool metal;
    nw_sched_offering_t offerings[NW_SCHED_MAX_OFFERINGS];
    int noffer;
} nw_sched_itype_t;

typedef struct {
    bool require_unschedulable;  /* only pods with PodScheduled=False/Unschedulable count
                                    (the live scaler); false for `plan` */
    bool ignore_preferences;     /* PREFERENCE_POLICY=Ignore */
    bool repack;                 /* after Karpenter's greedy packing, re-pack groups of
                                    interchangeable new claims onto the type that costs
                                    least for them when that saves >= 1 % (solve.c) */
    bool min_values_best_effort; /* settings.minValuesPolicy=BestEffort (Karpenter's
                                    --min-values-policy): a new claim whose types cannot
                                    meet a minValues lowers it to what they give */
} nw_sched_opts_t;

nw_sched_snap_t *nw_snapshot_new(void);
void nw_snapshot_free(nw_sched_snap_t *s);
void nw_snapshot_set_opts(nw_sched_snap_t *s, const nw_sched_opts_t *o);

/** Index of a resource name's slot, allocating one for a new name; -1 when full. */
int nw_snapshot_res_slot(nw_sched_snap_t *s, const char *name);
/** The name of slot i (NULL if unused). */
const char *nw_snapshot_res_name(const nw_sched_snap_t *s, int i);

/** Add an instance type (copied; labels deep-copied). NW_EINVAL on a duplicate name. */
NW_MUST_USE nw_rc_t nw_snap_node_add_itype(nw_sched_snap_t *s, const nw_sched_itype_t *t,
                                           nw_err_t *err);
/** A capacity reservation of node class `nodeclass` (an EC2NodeClass's
 * status.capacityReservations entry): a `reserved` offering of itype in zone, priced `price`
 * (Karpenter: the on-demand price / 10,000,000), that only pools of that class see, holding
 * `count` nodes (< 0: no limit; 0: unavailable). The solve gives a new claim the reserved
 * offering first while its reservation has room (capacity-type reserved and
 * karpenter.k8s.aws/capacity-reservation-id In [id] on the claim), then falls back to the
 * pool's other capacity types. NW_ENOTFOUND when itype is not in the snapshot, NW_EINVAL
 * when it has no room for another offering. */
NW_MUST_USE nw_rc_t nw_snap_node_add_reservation(nw_sched_snap_t *s, const char *nodeclass,
                                                 const char *id, const char *reservation_type,
                                                 const char *itype, const char *zone,
                                                 const char *zone_id, double price, int64_t count,
                                                 nw_err_t *err);
/** Add the reservations of an EC2NodeClass object's status.capacityReservations (state
 * active), priced at the type's on-demand price given by od_price (NULL: its on-demand
 * offering's in the snapshot) / 10,000,000;
 * their counts from available(id) (NULL, or < 0: an entry's availableInstanceCount, else
 * no limit). Types not in the snapshot are skipped. */
NW_MUST_USE nw_rc_t nw_snap_node_add_class_reservations(
    nw_sched_snap_t *s, const cJSON *nodeclass, double (*od_price)(void *ud, const char *type),
    int64_t (*available)(void *ud, const char *id), void *ud, nw_err_t *err);
/** Mark one offering unavailable (ICE cache). Unknown names are ignored. */
void nw_snap_node_ice(nw_sched_snap_t *s, const char *itype, const char *zone,
                      const char *capacity_type);

/** Add objects from their Kubernetes JSON. Errors name the field
 * (e.g. "spec.containers[0].resources.requests[cpu]"); the object is then not added. */
NW_MUST_USE nw_rc_t nw_snap_node_add_pool_json(nw_sched_snap_t *s, const cJSON *nodepool,
                                               nw_err_t *err);
/** A pod from its JSON: decoded into a record (api/pod.h, kept by the snapshot) and added
 * as nw_snap_pod_add does, with the same errors as the JSON always gave (the field named;
 * host ports and pod-level requests are read from the JSON as given). */
NW_MUST_USE nw_rc_t nw_snap_pod_add_json(nw_sched_snap_t *s, const cJSON *pod, nw_err_t *err);
/** A pod from its record (api/pod.h; borrowed for the call, nothing of it is kept). What
 * its shared scheduling spec gives (requests, class, host ports, topology constraints) is
 * derived once per snapshot and taken by every later pod holding the same spec, found by
 * the spec's address: so the records added to one snapshot must stay alive (not freed,
 * their memory not reused) until the last pod is added, as a held kube snapshot keeps
 * them. Errors name the field, as nw_snap_pod_add_json's. */
NW_MUST_USE nw_rc_t nw_snap_pod_add(nw_sched_snap_t *s, const nw_pod_t *pod, nw_err_t *err);
/* Where nw_snap_pod_add_as puts a pod instead of where its record says (the live snapshot,
 * scaler/state/simsnap.c). */
typedef struct {
    const char *node;   /* non-NULL: bound to this node or in-flight NodeClaim (a pod an
                           earlier batch nominated to it) */
    bool pending;       /* unbound and to be placed again, as an unschedulable pending pod
                           (phase Pending, PodScheduled=False/Unschedulable, not nominated): a
                           pod of a node that is left out or being deleted */
    const char *prefer; /* non-NULL (with node NULL): the existing node an earlier batch
                           planned this unbound pod on; the simulation places it there
                           before any other pod is placed while the node still has room
                           for it (every constraint checked), else as any other pod */
} nw_sched_pod_as_t;
/** nw_snap_pod_add with the pod moved as `as` says (NULL: as nw_snap_pod_add). */
NW_MUST_USE nw_rc_t nw_snap_pod_add_as(nw_sched_snap_t *s, const nw_pod_t *pod,
                                       const nw_sched_pod_as_t *as, nw_err_t *err);
/** nw_snap_pod_add_json with the pod moved as `as` says (NULL: where its JSON says): a pod
 * the live snapshot gives another view of (a pod whose DRA claims ask for accelerator
 * devices, scaler/state/simsnap.c). */
NW_MUST_USE nw_rc_t nw_snap_pod_add_json_as(nw_sched_snap_t *s, const cJSON *pod,
                                            const nw_sched_pod_as_t *as, nw_err_t *err);
NW_MUST_USE nw_rc_t nw_snap_node_add_json(nw_sched_snap_t *s, const cJSON *node, nw_err_t *err);
/** The same from a Node's record (api/node.h: what the watch cache decoded once), without
 * parsing its JSON. */
NW_MUST_USE nw_rc_t nw_snap_node_add_node(nw_sched_snap_t *s, const nw_node_t *node, nw_err_t *err);
/** An in-flight NodeClaim (launched or not, not registered): its requirements/labels,
 * taints, status.capacity/allocatable (or spec.resources.requests as the floor). */
NW_MUST_USE nw_rc_t nw_snap_node_add_nodeclaim_json(nw_sched_snap_t *s, const cJSON *nc,
                                                    nw_err_t *err);
/** The same from a NodeClaim's record (api/node.h). */
NW_MUST_USE nw_rc_t nw_snap_node_add_claim(nw_sched_snap_t *s, const nw_node_claim_t *nc,
                                           nw_err_t *err);
/** An in-flight NodeClaim's capacity as the live snapshot sees it (scaler/state/simsnap.c):
 * its record's requirements and taints, under another name, with these labels and
 * resources, and no provider ID or node name (it pairs with no Node, and is not deleting).
 * Everything borrowed. */
typedef struct {
    const char *name;
    const nw_labels_t *labels;
    const nw_resources_t *allocatable, *capacity;
} nw_snap_claim_as_t;
NW_MUST_USE nw_rc_t nw_snap_node_add_claim_as(nw_sched_snap_t *s, const nw_node_claim_t *nc,
                                              const nw_snap_claim_as_t *as, nw_err_t *err);
NW_MUST_USE nw_rc_t nw_snap_node_add_daemonset_json(nw_sched_snap_t *s, const cJSON *ds,
                                                    nw_err_t *err);
/** Storage, for volume topology (a pod's PersistentVolumeClaims: the bound volume's node
 * affinity, or the StorageClass's allowedTopologies). Add them before the pods that use
 * them. */
NW_MUST_USE nw_rc_t nw_snap_volume_add_pv_json(nw_sched_snap_t *s, const cJSON *pv, nw_err_t *err);
NW_MUST_USE nw_rc_t nw_snap_volume_add_pvc_json(nw_sched_snap_t *s, const cJSON *pvc,
                                                nw_err_t *err);
NW_MUST_USE nw_rc_t nw_snap_volume_add_storageclass_json(nw_sched_snap_t *s, const cJSON *sc,
                                                         nw_err_t *err);
/** A CSINode: the volume attach limits of the Node of the same name (Karpenter counts them on
 * existing nodes only). Errors name the field (spec.drivers[i].allocatable.count). */
NW_MUST_USE nw_rc_t nw_snap_volume_add_csinode_json(nw_sched_snap_t *s, const cJSON *csinode,
                                                    nw_err_t *err);
/** A Namespace (its labels: pod affinity namespaceSelector). */
NW_MUST_USE nw_rc_t nw_snap_pod_add_namespace_json(nw_sched_snap_t *s, const cJSON *ns,
                                                   nw_err_t *err);
/** A static NodePool (spec.replicas): how many NodeClaims to add to it (the caller counted
 * its NodeClaims, deleting ones included, and limits.nodes). Without a call: replicas
 * minus its nodes and NodeClaims in the snapshot. NW_ENOTFOUND for an unknown pool. */
NW_MUST_USE nw_rc_t nw_snapshot_static_want(nw_sched_snap_t *s, const char *pool, int64_t n);
/** A pod whose uid is listed here is not provisioned again (nominated to in-flight
 * capacity by an earlier batch). */
NW_MUST_USE nw_rc_t nw_snap_pod_nominated(nw_sched_snap_t *s, const char *pod_uid);

/** Remember what the snapshot holds now, so that nw_snap_mark_rewind can take it back to
 * this point after more was added (the provisioner keeps the part of its snapshot built
 * from the cluster's Nodes and bound pods between batches, and adds each batch's pending
 * pods and in-flight NodeClaims after the mark). A second mark replaces the first. */
NW_MUST_USE nw_rc_t nw_snap_mark_set(nw_sched_snap_t *s);
/** Take the snapshot back to its mark: the pods, pod classes, topology groups, nodes, shared
 * specs (and the namespaces' constraints they remembered), label sets and resource names
 * added since are dropped, and the snapshot is as it was at the mark, so the same additions
 * after it build the same snapshot as a fresh build would. false (the snapshot is then
 * only fit for nw_snapshot_free) when there is no mark, when something the rewind does not
 * take back was added (NodePools, DaemonSets, instance types, capacity reservations,
 * namespaces, storage, CSINodes, node classes, pods given as JSON) or out of memory. */
bool nw_snap_mark_rewind(nw_sched_snap_t *s);
/** How many capacity reservations the snapshot's node classes hold. */
size_t nw_snapshot_nreservations(const nw_sched_snap_t *s);

size_t nw_snapshot_npods(const nw_sched_snap_t *s);
size_t nw_snapshot_npools(const nw_sched_snap_t *s);
size_t nw_snapshot_nitypes(const nw_sched_snap_t *s);
const nw_sched_itype_t *nw_snapshot_itype(const nw_sched_snap_t *s, size_t i);
/** "namespace/name" of pod i (borrowed). */
const char *nw_snapshot_pod_key(const nw_sched_snap_t *s, size_t i);
const char *nw_snapshot_pool_name(const nw_sched_snap_t *s, size_t i);
const char *nw_snapshot_pool_nodeclass(const nw_sched_snap_t *s, size_t i);
/** Allocatable of instance type itype on a node of pool `pool` into *out (its node class's
 * kubelet settings applied, nw_snap_node_set_class_res, and the pool's shared GPUs,
 * scaler/sched/mig.h: what the solver packs against); false for bad indexes. */
bool nw_snap_node_pool_type_allocatable(const nw_sched_snap_t *s, size_t pool, size_t itype,
                                        nw_sched_res_t *out);

/* ---- results ---- */

typedef struct {
    int pool;    /* snapshot pool index */
    int *itypes; /* snapshot itype indexes, cheapest first (<= 600) */
    int nitypes;
    int itype; /* chosen: itypes[0] */
    char zone[64];
    char capacity_type[16];
    double price;
    nw_reqs_t reqs;          /* narrowed requirements incl. instance-type In [...] */
    nw_sched_res_t requests; /* pods + the smallest DaemonSet overhead */
    int *pods;               /* snapshot pod indexes */
    int npods;
    bool min_values_relaxed; /* a minValues in reqs was lowered (BestEffort) */
    bool is_static;          /* a static NodePool's replica (no pods) */
} nw_sched_claim_t;

typedef struct {
    int pod;
    char node[256]; /* existing Node or in-flight NodeClaim name */
} nw_sched_placed_t;

typedef struct {
    int pod;
    char **reasons; /* one per snapshot pool (index = pool), owned */
    int nreasons;
    char *reason; /* when there is no pool at all or the pod is invalid, else NULL */
} nw_sched_unsched_t;

typedef struct {
    nw_sched_claim_t *claims;
    int nclaims;
    nw_sched_placed_t *placed;
    int nplaced;
    nw_sched_unsched_t *unsched;
    int nunsched;
    int considered; /* pods that counted (pending, provisionable) */
    double total_price;
} nw_sched_results_t;

/** Run the simulation. r is initialised by the call (free with nw_solve_results_free
 * even on error). NW_ENOMEM is the only failure. */
NW_MUST_USE nw_rc_t nw_solve(const nw_sched_snap_t *s, int64_t now, nw_sched_results_t *r,
                             nw_err_t *err);
void nw_solve_results_free(nw_sched_results_t *r);

/** Resource vector as JSON {name: quantity}, zero slots omitted. Caller owns it. */
cJSON *nw_snapshot_res_to_json(const nw_sched_snap_t *s, const nw_sched_res_t *r);

#endif
