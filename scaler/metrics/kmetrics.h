/*
 * scaler/metrics/kmetrics.h — Karpenter's metric families: names, types, labels and
 * buckets of its reference/metrics page and of the upstream sources cited at each.
 * Counters and histograms are counted by the controllers into the registry every
 * controller shares (nw_ctl_deps_t.series, common/series.h); the gauges of nodes, pods,
 * NodePools and offerings are rebuilt from the cluster state by
 * scaler/controllers/statemetrics.h. loop.c writes them on /metrics (nw_kmetrics_counted, then
 * the state gauges).
 *
 * Thread: the descriptions are constants; the registries have their own mutexes.
 */
#ifndef NW_SCALER_METRICS_KMETRICS_H
#define NW_SCALER_METRICS_KMETRICS_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "api/node.h"
#include "common/series.h"
#include "scaler/cloud/interrupt.h"
#include "scaler/cloud/metered.h"

/* kubernetes-sigs/karpenter pkg/metrics/metrics.go */
extern const nw_series_desc_t NW_KMETRICS_NODECLAIMS_CREATED, NW_KMETRICS_NODECLAIMS_TERMINATED,
    NW_KMETRICS_NODECLAIMS_DISRUPTED, NW_KMETRICS_NODES_CREATED, NW_KMETRICS_NODES_TERMINATED;
/* pkg/controllers/node/termination/metrics.go */
extern const nw_series_desc_t NW_KMETRICS_NODES_DRAINED, NW_KMETRICS_NODES_TERMINATION_DURATION,
    NW_KMETRICS_NODES_LIFETIME_DURATION;
/* pkg/controllers/nodeclaim/lifecycle/metrics.go */
extern const nw_series_desc_t NW_KMETRICS_NODECLAIMS_TERMINATION_DURATION,
    NW_KMETRICS_NODECLAIMS_INSTANCE_TERMINATION_DURATION;
/* pkg/controllers/provisioning/scheduling/metrics.go */
extern const nw_series_desc_t NW_KMETRICS_SCHEDULER_DURATION;
/* pkg/controllers/node/health/metrics.go */
extern const nw_series_desc_t NW_KMETRICS_NODECLAIMS_UNHEALTHY_DISRUPTED;
/* pkg/controllers/metrics/node/controller.go (gauges; the well-known label set) */
extern const nw_series_desc_t NW_KMETRICS_NODES_ALLOCATABLE, NW_KMETRICS_NODES_POD_REQUESTS,
    NW_KMETRICS_NODES_POD_LIMITS, NW_KMETRICS_NODES_DAEMON_REQUESTS,
    NW_KMETRICS_NODES_DAEMON_LIMITS, NW_KMETRICS_NODES_SYSTEM_OVERHEAD, NW_KMETRICS_NODES_LIFETIME,
    NW_KMETRICS_CLUSTER_UTILIZATION;
/* pkg/controllers/state/metrics.go (gauges) */
extern const nw_series_desc_t NW_KMETRICS_CLUSTER_STATE_NODE_COUNT,
    NW_KMETRICS_CLUSTER_STATE_SYNCED, NW_KMETRICS_CLUSTER_STATE_UNSYNCED_TIME;
/* pkg/controllers/metrics/nodepool/controller.go */
extern const nw_series_desc_t NW_KMETRICS_NODEPOOLS_LIMIT, NW_KMETRICS_NODEPOOLS_USAGE;
/* pkg/controllers/metrics/pod/controller.go */
extern const nw_series_desc_t NW_KMETRICS_PODS_STATE, NW_KMETRICS_PODS_STARTUP_DURATION;
/* pkg/controllers/disruption/metrics.go */
extern const nw_series_desc_t NW_KMETRICS_DISRUPTION_DECISIONS, NW_KMETRICS_DISRUPTION_ELIGIBLE,
    NW_KMETRICS_DISRUPTION_TIMEOUTS, NW_KMETRICS_NODEPOOLS_ALLOWED_DISRUPTIONS,
    NW_KMETRICS_DISRUPTION_DECISIONS_BY_NODEPOOL, NW_KMETRICS_DISRUPTION_EVAL_DURATION,
    NW_KMETRICS_DISRUPTION_FAILED_VALIDATIONS, NW_KMETRICS_NODEPOOLS_NODES_CONSUMING_BUDGETS;
/* aws/karpenter-provider-aws pkg/controllers/interruption/metrics.go */
extern const nw_series_desc_t NW_KMETRICS_INTERRUPTION_RECEIVED, NW_KMETRICS_INTERRUPTION_DELETED,
    NW_KMETRICS_INTERRUPTION_QUEUE_DURATION, NW_KMETRICS_INSTANCE_STATUS_UNHEALTHY;
/* the AWS provider's pkg/controllers/metrics/metrics.go (the cloud provider's call
 * metrics are scaler/cloud/metered.h's) */
extern const nw_series_desc_t NW_KMETRICS_OFFERING_PRICE, NW_KMETRICS_OFFERING_AVAILABLE;

/* The families the controllers count (deps->series), and those statemetrics rebuilds,
 * in the order /metrics writes them. */
extern const nw_series_desc_t *const nw_kmetrics_counted[];
extern const size_t nw_kmetrics_ncounted;
extern const nw_series_desc_t *const nw_kmetrics_state[];
extern const size_t nw_kmetrics_nstate;

/* The node label names of the node gauges before node_name, phase, managed (and
 * resource_type): Karpenter's well-known labels (core and AWS), each the part after the
 * last "/", lower case, "-" as "_"; nw_kmetrics_node_label_keys[i] is the Node label it reads. */
extern const char *const nw_kmetrics_node_label_keys[];
extern const int nw_kmetrics_nnode_labels;

/** Add 1 to the counter d whose labels are these label values of obj (a NodeClaim or Node;
 * "" when absent), keys[i] for the i-th label. r NULL: nothing. */
void nw_kmetrics_count_labels(nw_series_t *r, const nw_series_desc_t *d, const cJSON *obj,
                              const char *const *keys);

/** Observe, in the histogram or summary d with the single label nodepool (obj's
 * karpenter.sh/nodepool label), the seconds from obj's RFC 3339 timestamp at path
 * (e.g. "metadata.deletionTimestamp") to now (epoch ns). Nothing when it is absent or
 * does not parse. r NULL: nothing. */
void nw_kmetrics_observe_since(nw_series_t *r, const nw_series_desc_t *d, const cJSON *obj,
                               const char *path, int64_t now);
/** The same from a time given in epoch ns. */
void nw_kmetrics_observe_from(nw_series_t *r, const nw_series_desc_t *d, const cJSON *obj,
                              int64_t from, int64_t now);

/** karpenter_nodeclaims_disrupted_total{reason, nodepool, capacity_type} += 1, the labels
 * from obj's (a NodeClaim or Node) karpenter.sh labels. r NULL: nothing. */
void nw_kmetrics_disrupted(nw_series_t *r, const char *reason, const cJSON *obj);

/* The same three from the record of a cached Node or NodeClaim (api/node.h: what both keep),
 * for the controllers that read records. */
void nw_kmetrics_count_labels_of(nw_series_t *r, const nw_series_desc_t *d, const nw_node_meta_t *m,
                                 const char *const *keys);
void nw_kmetrics_observe_from_of(nw_series_t *r, const nw_series_desc_t *d, const nw_node_meta_t *m,
                                 int64_t from, int64_t now);
void nw_kmetrics_disrupted_of(nw_series_t *r, const char *reason, const nw_node_meta_t *m);

/** Karpenter's message kind of an interruption kind (aws/karpenter-provider-aws
 * pkg/controllers/interruption/messages/types.go): "spot_interrupted",
 * "rebalance_recommendation", "scheduled_change", "instance_stopped",
 * "instance_terminated", "capacity_reservation_interrupted", "no_op". */
const char *nw_kmetrics_message_kind(nw_interrupt_kind_t k);

/* Karpenter's resource_type: the resource name in lower case, "-" as "_". */
void nw_kmetrics_resource_type(const char *name, char *out, size_t len);

#endif
