/*
 * cli/plan.h — the manifest side of `nodewarden plan` (cli/cmd_plan.c), reusable
 * by tests: collect Kubernetes objects from parsed documents (workloads expanded to
 * pods), apply the GPU isolation policy as the webhook would, and build a scheduling
 * snapshot with the instance catalog.
 *
 * Ownership: a nw_plan_t owns what it collected and the snapshot it builds.
 * Messages go to stderr. Thread: one.
 */
#ifndef NW_CLI_PLAN_H
#define NW_CLI_PLAN_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "scaler/sched/schedule.h"

typedef struct nw_plan nw_plan_t;

nw_plan_t *nw_plan_new(bool gpu_policy);
void nw_plan_free(nw_plan_t *p);

/** Take the GPU isolation policy from the gpu: block of configuration file path
 * (config/config.h; admission/gpu_policy.h) instead of the defaults. 0 ok, -1 error
 * (message naming the key printed). */
int nw_plan_set_gpu_config(nw_plan_t *p, const char *path);

/** Collect one document (a NodePool, EC2NodeClass, Pod, Deployment, ReplicaSet,
 * StatefulSet, Job, DaemonSet, Node, NodeClaim or a List of them; other kinds are
 * ignored with a note). where names the document in messages ("<file>: document N (line
 * L)"; ", items[i]" is added for a List's items). An object of a collected kind given
 * twice (same kind, namespace — "default" when absent — and name) is an error naming both
 * places. 0 ok, -1 error. */
int nw_plan_collect(nw_plan_t *p, const cJSON *doc, const char *where);

/** The pods per node assumed where an EC2NodeClass sets no kubelet.maxPods
 * (settings.podDensity, config/config.h nw_config_pod_density): 0 = ENI-limited. */
void nw_plan_set_pod_density(nw_plan_t *p, int64_t default_max_pods);
/** settings.minValuesPolicy: BestEffort relaxes minValues a new NodeClaim cannot meet. */
void nw_plan_set_min_values_best_effort(nw_plan_t *p, bool best_effort);
/** scaler.repack: true (the default of nw_plan_new) re-packs the new NodeClaims onto the
 * types that cost least; false keeps Karpenter's greedy packing. */
void nw_plan_set_packing(nw_plan_t *p, bool cheapest);

/** Build the snapshot: catalog (text NULL = embedded) for region in zones (NULL/0:
 * the region's zones the manifests name, plus <region>a,b,c), ICE entries
 * "TYPE:ZONE:CAPACITY_TYPE", then the objects. NULL on error (message printed).
 * The snapshot is owned by p. */
nw_sched_snap_t *nw_plan_snapshot(nw_plan_t *p, const char *catalog, size_t catalog_len,
                                  const char *region, const char *const *zones, int nzones,
                                  const char *const *ice, int nice);

/** The collected objects of one kind ("NodePool", "Pod", "Node", "NodeClaim",
 * "DaemonSet", "PodDisruptionBudget"; workloads appear as their Pods), in file order,
 * as given (no GPU policy). Borrowed, valid while p lives. Returns how many there are
 * (at most max are stored in out). */
size_t nw_plan_objects(const nw_plan_t *p, const char *kind, const cJSON **out, size_t max);

/** The GPU isolation policy plan applies (borrowed, valid while p lives), NULL when it
 * is off. */
const struct nw_gpu_policy *nw_plan_gpu(const nw_plan_t *p);

/** `plan --disruption` (cli/cmd_plan_disrupt.c): one disruption pass over the
 * collected objects at `now` with the instance types of snap (from nw_plan_snapshot),
 * GPU-aware for the policy's classes (nw_plan_gpu); prints text or JSON
 * (nw_decide_report_json). Returns the exit code. */
int nw_cmd_plan_disrupt(const nw_plan_t *p, const nw_sched_snap_t *snap, int64_t now, bool json,
                        bool spot_to_spot);

/** The results as the JSON `nodewarden plan --output json` prints (caller owns it). */
cJSON *nw_plan_results_json(const nw_sched_snap_t *s, const nw_sched_results_t *r);

#endif
