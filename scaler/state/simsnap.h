/*
 * scaler/state/simsnap.h — the live cluster as a scheduling simulation input
 * (scaler/sched/schedule.h), and NodeClaims created from the simulation's answer.
 * Used by the provisioner (scaler/controllers/provisioning.c) and by any controller that needs to
 * ask "where would these pods go" (consolidation: leave some nodes out and re-add
 * their pods) or to create replacement capacity.
 *
 * What nw_simsnap_build puts into the snapshot (as kubernetes-sigs/karpenter
 * pkg/controllers/provisioning/provisioner.go Schedule gathers it):
 *   - NodePools that are not being deleted and whose EC2NodeClass is ready (its status
 *     condition Ready is True; no condition yet, Unknown or False: left out, as Karpenter's
 *     provisioner leaves out a NodePool that is not ready, and its readiness follows the
 *     class's); a pool whose class does not exist is kept (its launch names the missing
 *     class); the ones left out for their class are named in `notready`; DaemonSets (their
 *     overhead);
 *   - instance types from the cloud's catalog (refreshed from EC2 when it could be),
 *     with the ICE cache applied at the current monotonic time and the configured
 *     VM memory overhead / reserved ENIs;
 *   - Nodes that are schedulable (not cordoned, not being deleted, not carrying
 *     karpenter.sh/disrupted:NoSchedule, not excluded) with the pods bound to them;
 *   - in-flight NodeClaims (not being deleted, not excluded, whose node has not
 *     initialized): as capacity with their own labels, requirements, taints and
 *     allocatable (status, else the launched type's, else the cheapest type they
 *     may become). A NodeClaim whose Node registered but did not initialize appears
 *     under the Node's name (pods bound to the node count on it);
 *     NodeClaims created by this process that the cache does not show yet count too;
 *   - pending pods (opts.include_pending): the provisionable ones
 *     (PodScheduled=False/Unschedulable, no nodeName, not nominated by the
 *     kube-scheduler, not DaemonSet/mirror, not terminating or finished). A pending
 *     pod that an earlier batch nominated to an in-flight NodeClaim (until its node
 *     initializes) is added as bound to it, so the capacity it will use is not
 *     offered twice and no second instance is launched for it; so are the pods
 *     whose status.nominatedNodeName the provisioner wrote (opts.own_nominated);
 *   - the reschedulable pods (not DaemonSet-owned, not mirror, not finished, not
 *     terminating, no karpenter.sh/do-not-disrupt=true) of excluded nodes
 *     (opts.reschedule_excluded) and of nodes being deleted or disrupted
 *     (opts.reschedule_deleting), re-added as pending pods.
 * Pools' limits are counted by the simulation over the snapshot's nodes and
 * in-flight NodeClaims (existing + in-flight capacity). Pods are added from their records
 * (obj->pod, api/pod.h), never from their JSON; the kube snapshot keeps the records alive
 * while the simulation's snapshot is built, as nw_snap_pod_add requires.
 *
 * Ownership: nw_simsnap_t owns `sched` and its arrays; `pods[i]` are borrowed from
 * the kube snapshot passed to nw_simsnap_build, which must outlive the nw_simsnap_t.
 * Thread: the reconcile thread only (the controllers, the cloud and the provisioner memory
 * that holds nominations are not shared).
 */
#ifndef NW_SCALER_STATE_SIMSNAP_H
#define NW_SCALER_STATE_SIMSNAP_H

#include <stdbool.h>
#include <stddef.h>

#include "scaler/cloud/catalog.h"

struct nw_gpu_dra_src; /* admission/gpu.h: where a pod's DRA claims are read */
#include "scaler/kube/cache.h"
#include "scaler/state/inflight.h"
#include "scaler/state/nominations.h"
#include "scaler/sched/schedule.h"

typedef struct {
    /* Node or NodeClaim names left out as capacity; a Node's NodeClaim goes with it
     * and a NodeClaim's Node with it. Borrowed. */
    const char *const *exclude;
    size_t nexclude;
    bool reschedule_excluded; /* re-add the excluded nodes' reschedulable pods as pending */
    bool reschedule_deleting; /* same for nodes being deleted / disrupted (the provisioner) */
    bool include_pending;     /* add the cluster's pending (provisionable) pods */
    bool ignore_preferences;  /* PREFERENCE_POLICY=Ignore */
    bool repack;              /* nw_sched_opts_t.repack (scaler.repack) */
    /* with include_pending: pending pods whose status.nominatedNodeName the provisioner
     * wrote itself (nw_nominations_wrote), so the cache does not count them pending; added
     * as the pending pods are (bound to their in-flight NodeClaim, else to be placed
     * afresh, their nomination ignored). Borrowed. */
    const nw_kube_obj_t *const *own_nominated;
    size_t nown_nominated;
} nw_simsnap_opts_t;

typedef struct {
    nw_sched_snap_t *sched;     /* owned */
    const nw_kube_obj_t **pods; /* [npods]: the Pod behind each snapshot pod index */
    unsigned char *rescheduled; /* [npods]: 1 = re-added from an excluded/deleting node */
    /* [npods]: the devices its DRA view added to its requests (nw_simsnap_dra_view) as
     * this resource (the policy's string; NULL: none); a NodeClaim's requests leave them
     * out, so that a node whose DRA driver publishes the devices but no device plugin
     * advertises the resource still counts as initialized */
    const char **dra_res;
    int *dra_count;
    size_t npods;
    /* in-flight entries: the snapshot name (a NodeClaim name, or the Node name of a
     * registered but not initialized claim) and the NodeClaim behind it (owned) */
    char **entry_names, **entry_claims;
    size_t nentries;
    /* uids of the pods whose nomination the build looked up (borrowed from the kube
     * snapshot): the provisioner keeps those nominations (nw_nominations_prune) */
    const char **looked_up;
    size_t nlooked_up, clooked_up;
    /* the NodePools left out because their EC2NodeClass is not ready, and why, as one text
     * ("nodepool \"a\": EC2NodeClass \"b\" is not ready: <reason>: <message>; ..."),
     * owned; NULL when none */
    char *notready;
    size_t nnotready;
} nw_simsnap_t;

/* What the builder needs besides the kube snapshot: the catalog with its zones already
 * resolved (nw_ctl_prepare_catalog in scaler/ctl/ctl.h does that before a
 * build), the ICE cache and the monotonic time it is read at, the overhead settings, and
 * the provisioner's memory (read only). Everything is borrowed. */
typedef struct {
    const nw_catalog_t *catalog;
    const nw_ice_t *ice;           /* NULL: no ICE'd offerings */
    int64_t now_mono;              /* ICE entries are judged at this time */
    double vm_overhead;            /* settings.vmMemoryOverheadPercent (<= 0: the default) */
    int reserved_enis;             /* settings.reservedENIs */
    int64_t default_max_pods;      /* settings.podDensity: 0 = ENI-limited, else pods per node */
    const nw_inflight_t *inflight; /* NodeClaims created but not cached yet; NULL: none */
    nw_nominations_t *noms;        /* nominations; NULL: none */
    bool min_values_best_effort;   /* settings.minValuesPolicy=BestEffort (nw_sched_opts_t) */
    bool ignore_preferences;       /* settings.preferencePolicy=Ignore (as opts' below) */
    /* instances a capacity reservation still holds (-1: unknown, no limit); NULL: unknown */
    int64_t (*reservation_available)(void *ud, const char *id);
    void *reservation_ud;
    /* the accelerator isolation policy (admission/gpu.h; NULL or disabled: pools as
     * stored): each NodePool enters the simulation as the policy's pool rules make it, so
     * a generic pool never plans an accelerator type (one of a class's uncounted families
     * included) even when the webhook did not mutate the stored pool; and a pod whose DRA
     * ResourceClaims ask for a class's devices enters it as a pod of the class (its node
     * selector, its devices as the class's device resource: nw_simsnap_dra_view) */
    const struct nw_gpu_policy *gpu;
} nw_simsnap_env_t;

/** The scheduling view of a pod whose DRA ResourceClaims (read from ks) request devices of
 * an accelerator class under gpu: a copy of its JSON (nw_pod_to_json) with the class's node
 * label required (nodeSelector <label key>: <the class's value>, so no generic pool and no
 * other class's pool can take it) and the devices added to its first container's requests
 * as the class's first device resource (nvidia.com/gpu, aws.amazon.com/neuron, ...), so it
 * is packed by the instance types' device counts. No toleration is added: a pod that does
 * not tolerate the class's taint (the webhook did not see it) cannot run on the class's
 * nodes, so none is planned for it. NULL when the pod has no such claim (or gpu is off).
 * The caller frees it. *res and *count (may be NULL) receive the resource and the devices
 * added (NULL and 0 when none). */
cJSON *nw_simsnap_dra_view(const struct nw_gpu_policy *gpu, const nw_kube_snap_t *ks,
                           const nw_kube_obj_t *pod, const char **res, int *count);

/** The same view made in place on a Pod object j (its claims read through src): true when
 * j's claims ask for a class's devices and j was changed. `nodewarden plan` uses it on the
 * pods of its input. */
bool nw_simsnap_dra_apply(const struct nw_gpu_policy *gpu, cJSON *j,
                          const struct nw_gpu_dra_src *src, const char **res, int *count);

/** What nw_simsnap_dra_classes reads: the policy and the kube snapshot (borrowed). */
typedef struct {
    const struct nw_gpu_policy *gpu;
    const nw_kube_snap_t *ks;
} nw_simsnap_dra_ctx_t;

/** The classes (bit i: the policy's class i) whose devices a pod's DRA ResourceClaims ask
 * for, read from ud's kube snapshot (ud: a nw_simsnap_dra_ctx_t); 0 for none. The shape of
 * nw_disrupt_accel_t's dra_classes. */
unsigned nw_simsnap_dra_classes(const nw_pod_t *pod, void *ud);

/** Build the snapshot: a pure function of env, ks and o (no I/O, no clock, no change to
 * the memory it reads). out is initialised by the call (free it with nw_simsnap_free
 * even on error). Objects the simulation rejects (a pod with a malformed quantity...)
 * are logged and left out; only NW_ENOMEM fails. */
NW_MUST_USE nw_rc_t nw_simsnap_build(const nw_simsnap_env_t *env, const nw_kube_snap_t *ks,
                                     const nw_simsnap_opts_t *o, nw_simsnap_t *out, nw_err_t *err);
void nw_simsnap_free(nw_simsnap_t *s);

/* The Nodes' part of the snapshot kept between builds. At 5,000 Nodes and 100,000 bound pods
 * the first part of a build (the catalog, node classes, NodePools, DaemonSets, storage,
 * namespaces, then every schedulable Node with its bound pods) is most of its cost, and
 * during a burst of pending pods none of it changes. A cache keeps that part (marked,
 * nw_snap_mark_set) with the key of what it read: every cached kind's generation but the
 * pods', the bound pods' generation (nw_kube_cache_snap_bound_pods_generation), the
 * catalog's version, the ICE cache's marks and entries in force, the env's settings and the
 * options that shape it. A build whose key matches takes the kept part and adds the rest
 * (in-flight NodeClaims, the pods of deleting Nodes, the pending pods) in the same order a
 * fresh build does, so the snapshot is the same; nw_simsnap_release rewinds it to the mark
 * (nw_snap_mark_rewind). Not kept (built whole each time): builds with exclusions (the
 * disruption simulations), and a Nodes' part holding an in-flight entry (a registered Node
 * whose NodeClaim has not initialized: it reads the provisioner's in-flight memory) or a
 * capacity reservation (its count is the cloud's).
 * Ownership: the cache owns the kept part; a build from it lends it to the caller until
 * nw_simsnap_release (one build at a time; a second build while one is lent is built
 * whole). Thread: one thread (the reconcile thread). */
typedef struct nw_simsnap_cache nw_simsnap_cache_t;

nw_simsnap_cache_t *nw_simsnap_cache_new(void);
void nw_simsnap_cache_free(nw_simsnap_cache_t *c);
/** Forget the kept part (its memory; the next build makes it again). Not while lent. */
void nw_simsnap_cache_drop(nw_simsnap_cache_t *c);
/** Make the kept part current for (env, ks, o) now, so that a build soon after only adds
 * the rest: the provisioner calls it while its batch window is open. */
NW_MUST_USE nw_rc_t nw_simsnap_cache_prepare(nw_simsnap_cache_t *c, const nw_simsnap_env_t *env,
                                             const nw_kube_snap_t *ks, const nw_simsnap_opts_t *o,
                                             nw_err_t *err);
/** nw_simsnap_build through the cache (c NULL: nw_simsnap_build). Release out with
 * nw_simsnap_release (also on error). */
NW_MUST_USE nw_rc_t nw_simsnap_build_cached(nw_simsnap_cache_t *c, const nw_simsnap_env_t *env,
                                            const nw_kube_snap_t *ks, const nw_simsnap_opts_t *o,
                                            nw_simsnap_t *out, nw_err_t *err);
/** Done with a build: one lent by c goes back to it (rewound), any other is freed. */
void nw_simsnap_release(nw_simsnap_cache_t *c, nw_simsnap_t *s);
/** How many times c built its Nodes' part, and how many builds took it as kept. */
void nw_simsnap_cache_counts(const nw_simsnap_cache_t *c, uint64_t *builds, uint64_t *reuses);

/** The NodeClaim behind a placement target (nw_sched_placed_t.node) when it is
 * in-flight capacity; NULL for an initialized Node. Borrowed from s. */
const char *nw_simsnap_claim_of(const nw_simsnap_t *s, const char *target);

typedef struct {
    const char *capacity_type; /* non-NULL: pin the NodeClaim to this capacity type */
    const char *const *itypes; /* non-NULL: keep only these of the claim's types */
    size_t nitypes;
    bool no_nominate;   /* do not nominate the claim's pods to it */
    bool no_events;     /* no Nominated event on the pods */
    const char *reason; /* for the log line ("provisioning", "consolidation"...) */
    /* non-NULL: one more annotation on the NodeClaim (a staged rollout's replacement) */
    const char *annotation_key, *annotation_value;
} nw_simsnap_claim_opts_t;

/** The NodeClaim object for a simulated claim (kubernetes-sigs/karpenter
 * pkg/controllers/provisioning/scheduling/nodeclaimtemplate.go ToNodeClaim: the pool's
 * template labels/annotations/taints/startupTaints/nodeClassRef/expireAfter,
 * requirements narrowed to the kept types (cheapest first, <= 600) and capacity
 * type, spec.resources.requests). Pure. Owned result; NULL with err set when no
 * instance type is left after the o->itypes filter. ntypes / first_type: how many
 * types and the first (borrowed from s). */
cJSON *nw_simsnap_claim_body(const nw_simsnap_t *s, const nw_sched_claim_t *cl,
                             const nw_kube_obj_t *pool, const nw_simsnap_claim_opts_t *o,
                             int *ntypes, const char **first_type, nw_err_t *err);

/** Is this Node or NodeClaim the target of a live nomination (in flight, or nominated
 * within the last 20 s)? Disruption leaves such nodes alone (kubernetes-sigs/karpenter
 * pkg/controllers/state/cluster.go IsNodeNominated). */
bool nw_simsnap_is_nominated(nw_nominations_t *noms, const nw_kube_snap_t *ks,
                             const char *node_or_claim, int64_t now_mono, int64_t window_ns);

/** "reschedulable" (kubernetes-sigs/karpenter pkg/utils/pod/scheduling.go IsReschedulable):
 * not finished, not terminating, not DaemonSet-owned, not a mirror pod, no
 * karpenter.sh/do-not-disrupt=true annotation. */
bool nw_simsnap_pod_reschedulable(const nw_kube_obj_t *p);

/** Capacity (allocatable 0) or allocatable (1) of a catalog type as a Kubernetes
 * resource list, with the configured overhead and the kubelet settings of nodeclass (the
 * EC2NodeClass object; NULL: none); NULL when the type is unknown. Owned. */
cJSON *nw_simsnap_type_resources(const nw_simsnap_env_t *env, const cJSON *nodeclass,
                                 const char *type, int allocatable);

#endif
