/*
 * scaler/controllers/repair.h — node repair and instance health: unhealthy nodes are
 * replaced by deleting their NodeClaim with forceful termination, as Karpenter does.
 *
 * Node repair (kubernetes-sigs/karpenter pkg/controllers/node/health/controller.go, the
 * policies of aws/karpenter-provider-aws pkg/cloudprovider/cloudprovider.go
 * RepairPolicies), only with the feature gate NodeRepair (settings.featureGates): a Node
 * of a NodeClaim is unhealthy when one of its conditions has a policy's status, and is
 * repaired once it has been so for the policy's toleration (from the condition's
 * lastTransitionTime; with several, the one due first decides):
 *
 *   Ready                     False or Unknown   30m   (the kubelet's own condition)
 *   AcceleratedHardwareReady  False              10m   (the node monitoring agent's)
 *   StorageReady, NetworkingReady, KernelReady, ContainerRuntimeReady  False  30m
 *
 * A repair is refused while more than 20% (rounded up: one of three nodes may be) of the
 * Nodes of the NodeClaim's NodePool (Nodes labelled karpenter.sh/nodepool) are unhealthy
 * in that sense (any policy's status, tolerated or not), or of all Nodes when the
 * NodeClaim has no NodePool label: a Warning Event NodeRepairBlocked on the Node, and the
 * node is looked at again after 5 minutes. NodePool disruption budgets do not apply (nor
 * do they upstream: the node is already broken). A repair: the NodeClaim is annotated
 * karpenter.sh/nodeclaim-termination-timestamp = now (so the drain deletes pods without
 * waiting for PodDisruptionBudgets; kept when it is already in the past), then deleted;
 * counted in karpenter_nodeclaims_disrupted_total{reason="unhealthy"} and
 * karpenter_nodeclaims_unhealthy_disrupted_total{condition} (the condition in snake
 * case: ready, accelerated_hardware_ready, ...).
 *
 * Instance health (aws/karpenter-provider-aws
 * pkg/controllers/interruption/instancestatus_controller.go; not behind the gate, as
 * upstream): a thread of its own asks the cloud's instance health
 * (cloud->ops->instance_health: on AWS DescribeInstanceStatus, scaler/aws/instancestatus.h)
 * every scaler.testing.instanceStatusInterval (Karpenter's fixed 1m) while this replica
 * leads; the reconcile thread then acts on the latest answer. A failed status check counts
 * once it has been failing for 2 minutes (from impairedSince), a scheduled event at once.
 * For each instance and kind with a NodeClaim (matched by the instance id of its
 * providerID): Warning Events InstanceUnhealthy on the NodeClaim and Node; instance or
 * system check → forceful termination (the annotation above, then delete), scheduled
 * event → delete (graceful drain); Warning Events TerminatingOnInterruption; counted in
 * karpenter_nodeclaims_disrupted_total{reason="instance_status"|"system_status"|
 * "event_status"} and, the first time an instance is seen with a kind,
 * karpenter_interruption_instance_status_unhealthy_total{category="InstanceStatus"|
 * "SystemStatus"|"EventStatus"}. ec2:DescribeInstanceStatus refused: logged (every 5
 * minutes), nothing else.
 *
 * Ownership: nw_repair_new / nw_repair_free (loop.c). Thread: the reconcile thread
 * (tick, reset), the poll thread inside; nw_repair_start from the controlling thread.
 */
#ifndef NW_SCALER_CONTROLLERS_REPAIR_H
#define NW_SCALER_CONTROLLERS_REPAIR_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "scaler/ctl/ctl.h"

typedef struct {
    const char *type;   /* the Node condition type */
    const char *status; /* the status that is unhealthy */
    int64_t toleration_ns;
} nw_repair_policy_t;

/* Karpenter's AWS RepairPolicies, in its order. */
extern const nw_repair_policy_t nw_repair_policies[];
extern const int nw_repair_npolicies;

/** The policy a Node is unhealthy under that is due first, with *due_ns (epoch ns) the
 * time it is due (lastTransitionTime + toleration; a missing or unparseable
 * lastTransitionTime counts as the epoch, as Go's zero time does upstream); NULL when no
 * condition of the Node has a policy's status. */
const nw_repair_policy_t *nw_repair_unhealthy(const cJSON *node, int64_t *due_ns);

/** The same from a Node's record (what the controller reads: scaler/kube/cache.h). */
const nw_repair_policy_t *nw_repair_unhealthy_of(const nw_node_t *node, int64_t *due_ns);

/** How many unhealthy Nodes a group of total Nodes may have and still be repaired: 20% of
 * total, rounded up. */
int nw_repair_allowed_unhealthy(int total);

/** Is the NodePool (its Nodes; nodepool NULL: every Node) at most allowed-unhealthy? */
bool nw_repair_group_healthy(const nw_kube_snap_t *s, const char *nodepool);

/** Karpenter's snake case of a condition type ("AcceleratedHardwareReady" ->
 * "accelerated_hardware_ready"). */
void nw_repair_snake(const char *in, char *out, size_t len);

typedef struct {
    int node_repair;             /* the NodeRepair feature gate */
    int64_t instance_status_ns;  /* poll period (<= 0: 1m) */
    int64_t status_threshold_ns; /* a failed check counts after (<= 0: 2m) */
} nw_repair_opts_t;

typedef struct nw_repair nw_repair_t;

/** New state (NULL on OOM); deps borrowed. */
nw_repair_t *nw_repair_new(nw_ctl_deps_t *deps, const nw_repair_opts_t *o);
/** Start the instance health thread (nothing when the cloud has no instance health). */
NW_MUST_USE nw_rc_t nw_repair_start(nw_repair_t *r, nw_err_t *err);
/** Stop the thread and free. NULL-safe. */
void nw_repair_free(nw_repair_t *r);
/** A new leadership term: forget per-node memory. */
void nw_repair_reset(nw_repair_t *r);
/** One pass: node repair (with the gate), then the latest instance health answer. */
void nw_repair_tick(nw_repair_t *r, const nw_kube_snap_t *s);

#endif
