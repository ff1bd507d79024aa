/*
 * scaler/controllers/accelaudit.h — the accelerator isolation audit: the admission
 * webhook keeps pods off accelerator nodes at creation (admission/gpu.h), but a pod can
 * still get there (the pod webhooks fail open, a label opt-out, a node labelled or
 * tainted after its pods were bound, a pod bound directly by nodeName). Each tick this
 * controller looks at every running pod bound to an accelerator node and reports the
 * ones that do not request that node's class's resources:
 *
 *   - the node's class: its node.accelerator label value, else the exact taint of a
 *     class, else its instance labels (nw_gpu_type_class: the family, or the class's
 *     instance requirement label such as instance-gpu-manufacturer);
 *   - left alone, as at admission: DaemonSet pods, mirror (static) pods, pods in the
 *     exempt namespaces, pods that have finished or are being deleted;
 *   - a violation is logged and recorded as a Warning Event "AcceleratorIsolation" on the
 *     pod (once per pod), counted in nodewarden_accelerator_isolation_violations_total
 *     {class}, and the pods violating it now are the gauge
 *     nodewarden_accelerator_isolation_violations{class};
 *   - with scaler.acceleratorAudit.evict: true (off by default) the pod is evicted
 *     through the Eviction API (policy/v1), so PodDisruptionBudgets are respected: a 429
 *     is retried after the server's Retry-After (at least 10 s); pods annotated
 *     nodewarden.io/gpu-policy: skip are reported but never evicted. Evictions are
 *     counted in nodewarden_accelerator_isolation_evictions_total{class}.
 *
 * Ownership: nw_accelaudit_new borrows deps and the policy (they outlive it) and owns its
 * counters; nw_accelaudit_free frees it. Thread: the reconcile thread; nw_accelaudit_metrics from
 * any thread (the gauge is atomic, the counters have their mutex).
 */
#ifndef NW_SCALER_CONTROLLERS_ACCELAUDIT_H
#define NW_SCALER_CONTROLLERS_ACCELAUDIT_H

#include <stdbool.h>

#include "admission/gpu.h"
#include "common/buf.h"
#include "common/prom.h"
#include "scaler/ctl/ctl.h"

typedef struct nw_accelaudit nw_accelaudit_t;

typedef struct {
    const nw_gpu_policy_t *policy; /* borrowed; NULL or disabled: the audit does nothing */
    bool evict;                    /* scaler.acceleratorAudit.evict */
} nw_accelaudit_opts_t;

/** New audit (NULL on OOM). */
nw_accelaudit_t *nw_accelaudit_new(nw_ctl_deps_t *deps, const nw_accelaudit_opts_t *o);

/** Free. NULL-safe. */
void nw_accelaudit_free(nw_accelaudit_t *a);

/** A new leadership term: forget which pods were reported. */
void nw_accelaudit_reset(nw_accelaudit_t *a);

/** One pass over the snapshot (events and evictions only while leading). */
void nw_accelaudit_tick(nw_accelaudit_t *a, const nw_kube_snap_t *s);

/** The class index of a Node (its record: its labels and taints) under policy p, or -1 (not
 * an accelerator node). */
int nw_accelaudit_node_class(const nw_gpu_policy_t *p, const nw_node_t *node);

/** Pods violating isolation at the last tick, for class index cls. */
unsigned nw_accelaudit_current(const nw_accelaudit_t *a, size_t cls);

/** Append the gauge and the two counter families (Prometheus text). */
NW_MUST_USE nw_rc_t nw_accelaudit_metrics(nw_accelaudit_t *a, nw_buf_t *out);

#endif
