/* scaler/metrics/kmetrics.c — Karpenter's metric families (see kmetrics.h). */
#include "scaler/metrics/kmetrics.h"

#include <ctype.h>
#include <stdio.h>

#include "api/wellknown.h"
#include "common/clock.h"
#include "common/json.h"

/* the node labels of the node and pod metrics: the well-known labels (api/wellknown.h), in
 * that table's order; their metric names are NW_WELLKNOWN_METRIC_NAMES, in the same order */
#define NODE_LABEL_KEY_(key, metric) key,
const char *const nw_kmetrics_node_label_keys[] = {NW_WELLKNOWN_LABELS(NODE_LABEL_KEY_)};
const int nw_kmetrics_nnode_labels =
    sizeof nw_kmetrics_node_label_keys / sizeof nw_kmetrics_node_label_keys[0];

/* pkg/metrics/constants.go DurationBuckets */
static const double duration_buckets[] = {
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7,
    0.8,   0.9,  1.0,   1.25, 1.5, 1.75, 2.0, 2.5,  3.0, 3.5,  4.0, 4.5,  5,   6,   7,
    8,     9,    10,    15,   20,  25,   30,  40,   50,  60,   120, 150,  300, 450, 600};

const nw_series_desc_t NW_KMETRICS_NODECLAIMS_CREATED = {
    .name = "karpenter_nodeclaims_created_total",
    .help = "Number of nodeclaims created in total by Karpenter. Labeled by reason the nodeclaim "
            "was created, the owning nodepool, and if min values was relaxed for this nodeclaim.",
    .kind = NW_SERIES_COUNTER,
    .labels = {"reason", "nodepool", "min_values_relaxed"}};

const nw_series_desc_t NW_KMETRICS_NODECLAIMS_TERMINATED = {
    .name = "karpenter_nodeclaims_terminated_total",
    .help = "Number of nodeclaims terminated in total by Karpenter. Labeled by the owning "
            "nodepool, capacity type, and zone.",
    .kind = NW_SERIES_COUNTER,
    .labels = {"nodepool", "capacity_type", "zone"}};

const nw_series_desc_t NW_KMETRICS_NODECLAIMS_DISRUPTED = {
    .name = "karpenter_nodeclaims_disrupted_total",
    .help = "Number of nodeclaims disrupted in total by Karpenter. Labeled by reason the nodeclaim "
            "was disrupted and the owning nodepool.",
    .kind = NW_SERIES_COUNTER,
    .labels = {"reason", "nodepool", "capacity_type"}};

const nw_series_desc_t NW_KMETRICS_NODECLAIMS_UNHEALTHY_DISRUPTED = {
    .name = "karpenter_nodeclaims_unhealthy_disrupted_total",
    .help = "Number of unhealthy nodeclaims disrupted in total by Karpenter. Labeled by condition "
            "on the node was disrupted, the owning nodepool, and the image ID.",
    .kind = NW_SERIES_COUNTER,
    .labels = {"condition", "nodepool", "capacity_type", "image_id"}};

const nw_series_desc_t NW_KMETRICS_NODES_CREATED = {
    .name = "karpenter_nodes_created_total",
    .help = "Number of nodes created in total by Karpenter. Labeled by owning nodepool and zone.",
    .kind = NW_SERIES_COUNTER,
    .labels = {"nodepool", "zone"}};

const nw_series_desc_t NW_KMETRICS_NODES_TERMINATED = {
    .name = "karpenter_nodes_terminated_total",
    .help =
        "Number of nodes terminated in total by Karpenter. Labeled by owning nodepool and zone.",
    .kind = NW_SERIES_COUNTER,
    .labels = {"nodepool", "zone"}};

/* pkg/controllers/node/termination/metrics.go */
static const double node_lifetime_buckets[] = {
    900,   1800,  2700,   3600,   7200,   14400,  21600,   28800,   36000,   43200,  57600,
    72000, 86400, 172800, 259200, 432000, 864000, 1296000, 1728000, 2160000, 2592000};

const nw_series_desc_t NW_KMETRICS_NODES_DRAINED = {
    .name = "karpenter_nodes_drained_total",
    .help = "The total number of nodes drained by Karpenter",
    .kind = NW_SERIES_COUNTER,
    .labels = {"nodepool"}};

const nw_series_desc_t NW_KMETRICS_NODES_TERMINATION_DURATION = {
    .name = "karpenter_nodes_termination_duration_seconds",
    .help = "The time taken between a node's deletion request and the removal of its finalizer",
    .kind = NW_SERIES_SUMMARY,
    .labels = {"nodepool"}};

const nw_series_desc_t NW_KMETRICS_NODES_LIFETIME_DURATION = {
    .name = "karpenter_nodes_lifetime_duration_seconds",
    .help = "The lifetime duration of the nodes since creation.",
    .kind = NW_SERIES_HISTOGRAM,
    .labels = {"nodepool"},
    .buckets = node_lifetime_buckets,
    .nbuckets = sizeof node_lifetime_buckets / sizeof node_lifetime_buckets[0]};

/* pkg/controllers/nodeclaim/lifecycle/metrics.go: prometheus.ExponentialBuckets(1, 2, 12)
 * and (1, 2, 11) */
static const double exp2_buckets[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048};

const nw_series_desc_t NW_KMETRICS_NODECLAIMS_TERMINATION_DURATION = {
    .name = "karpenter_nodeclaims_termination_duration_seconds",
    .help = "Duration of NodeClaim termination in seconds.",
    .kind = NW_SERIES_HISTOGRAM,
    .labels = {"nodepool"},
    .buckets = exp2_buckets,
    .nbuckets = 12};

const nw_series_desc_t NW_KMETRICS_NODECLAIMS_INSTANCE_TERMINATION_DURATION = {
    .name = "karpenter_nodeclaims_instance_termination_duration_seconds",
    .help = "Duration of CloudProvider Instance termination in seconds.",
    .kind = NW_SERIES_HISTOGRAM,
    .labels = {"nodepool"},
    .buckets = exp2_buckets,
    .nbuckets = 11};

/* pkg/controllers/provisioning/scheduling/metrics.go */
const nw_series_desc_t NW_KMETRICS_SCHEDULER_DURATION = {
    .name = "karpenter_scheduler_scheduling_duration_seconds",
    .help = "Duration of scheduling simulations used for deprovisioning and provisioning in "
            "seconds.",
    .kind = NW_SERIES_HISTOGRAM,
    .labels = {"controller"},
    .buckets = duration_buckets,
    .nbuckets = sizeof duration_buckets / sizeof duration_buckets[0]};

const nw_series_desc_t NW_KMETRICS_DISRUPTION_EVAL_DURATION = {
    .name = "karpenter_voluntary_disruption_decision_evaluation_duration_seconds",
    .help = "Duration of the disruption decision evaluation process in seconds. Labeled by method "
            "and consolidation type.",
    .kind = NW_SERIES_HISTOGRAM,
    .labels = {"reason", "consolidation_type"},
    .buckets = duration_buckets,
    .nbuckets = sizeof duration_buckets / sizeof duration_buckets[0]};

const nw_series_desc_t NW_KMETRICS_DISRUPTION_DECISIONS_BY_NODEPOOL = {
    .name = "karpenter_voluntary_disruption_decisions_by_nodepool_total",
    .help = "Number of disruption decisions performed by nodepool. Labeled by nodepool name, "
            "disruption decision, reason, and consolidation type.",
    .kind = NW_SERIES_COUNTER,
    .labels = {"nodepool", "decision", "reason", "consolidation_type"}};

const nw_series_desc_t NW_KMETRICS_DISRUPTION_FAILED_VALIDATIONS = {
    .name = "karpenter_voluntary_disruption_failed_validations_total",
    .help = "Number of candidates that were selected for disruption but failed validation. "
            "Labeled by consolidation type.",
    .kind = NW_SERIES_COUNTER,
    .labels = {"consolidation_type"}};

const nw_series_desc_t NW_KMETRICS_NODEPOOLS_NODES_CONSUMING_BUDGETS = {
    .name = "karpenter_nodepools_nodes_consuming_budgets",
    .help = "The number of nodes consuming the budget of a nodepool at a point in time. Labeled "
            "by NodePool.",
    .kind = NW_SERIES_GAUGE,
    .labels = {"nodepool", "reason"}};

/* pkg/controllers/state/metrics.go */
const nw_series_desc_t NW_KMETRICS_CLUSTER_STATE_NODE_COUNT = {
    .name = "karpenter_cluster_state_node_count",
    .help = "Current count of nodes in cluster state",
    .kind = NW_SERIES_GAUGE,
    .labels = {}};

const nw_series_desc_t NW_KMETRICS_CLUSTER_STATE_SYNCED = {
    .name = "karpenter_cluster_state_synced",
    .help = "Returns 1 if cluster state is synced and 0 otherwise. Synced checks that nodeclaims "
            "and nodes that are stored in the APIServer have the same representation as "
            "Karpenter's cluster state",
    .kind = NW_SERIES_GAUGE,
    .labels = {}};

const nw_series_desc_t NW_KMETRICS_CLUSTER_STATE_UNSYNCED_TIME = {
    .name = "karpenter_cluster_state_unsynced_time_seconds",
    .help = "The time for which cluster state is not synced",
    .kind = NW_SERIES_GAUGE,
    .labels = {}};

const nw_series_desc_t NW_KMETRICS_DISRUPTION_DECISIONS = {
    .name = "karpenter_voluntary_disruption_decisions_total",
    .help = "Number of disruption decisions performed. Labeled by disruption decision, reason, and "
            "consolidation type.",
    .kind = NW_SERIES_COUNTER,
    .labels = {"decision", "reason", "consolidation_type"}};

const nw_series_desc_t NW_KMETRICS_DISRUPTION_ELIGIBLE = {
    .name = "karpenter_voluntary_disruption_eligible_nodes",
    .help = "Number of nodes eligible for disruption by Karpenter. Labeled by disruption reason.",
    .kind = NW_SERIES_GAUGE,
    .labels = {"reason"}};

const nw_series_desc_t NW_KMETRICS_DISRUPTION_TIMEOUTS = {
    .name = "karpenter_voluntary_disruption_consolidation_timeouts_total",
    .help = "Number of times the Consolidation algorithm has reached a timeout. Labeled by "
            "consolidation type.",
    .kind = NW_SERIES_COUNTER,
    .labels = {"consolidation_type"}};

const nw_series_desc_t NW_KMETRICS_NODEPOOLS_ALLOWED_DISRUPTIONS = {
    .name = "karpenter_nodepools_allowed_disruptions",
    .help = "The number of nodes for a given NodePool that can be concurrently disrupting at a "
            "point in time. Labeled by NodePool. Note that allowed disruptions can change very "
            "rapidly, as new nodes may be created and others may be deleted at any point.",
    .kind = NW_SERIES_GAUGE,
    .labels = {"nodepool", "reason"}};

const nw_series_desc_t NW_KMETRICS_INTERRUPTION_RECEIVED = {
    .name = "karpenter_interruption_received_messages_total",
    .help = "Count of messages received from the SQS queue. Broken down by message type and "
            "whether the message was actionable.",
    .kind = NW_SERIES_COUNTER,
    .labels = {"message_type"}};

const nw_series_desc_t NW_KMETRICS_INTERRUPTION_DELETED = {
    .name = "karpenter_interruption_deleted_messages_total",
    .help = "Count of messages deleted from the SQS queue.",
    .kind = NW_SERIES_COUNTER,
    .labels = {}};

const nw_series_desc_t NW_KMETRICS_INTERRUPTION_QUEUE_DURATION = {
    .name = "karpenter_interruption_message_queue_duration_seconds",
    .help = "Amount of time an interruption message is on the queue before it is processed by "
            "karpenter.",
    .kind = NW_SERIES_HISTOGRAM,
    .labels = {},
    .buckets = duration_buckets,
    .nbuckets = sizeof duration_buckets / sizeof duration_buckets[0]};

const nw_series_desc_t NW_KMETRICS_INSTANCE_STATUS_UNHEALTHY = {
    .name = "karpenter_interruption_instance_status_unhealthy_total",
    .help = "Count of unique unhealthy instance statuses detected from EC2 DescribeInstanceStatus. "
            "Broken down by status check category.",
    .kind = NW_SERIES_COUNTER,
    .labels = {"category"}};

const nw_series_desc_t NW_KMETRICS_PODS_STARTUP_DURATION = {
    .name = "karpenter_pods_startup_duration_seconds",
    .help = "The time from pod creation until the pod is running.",
    .kind = NW_SERIES_SUMMARY,
    .labels = {}};

const nw_series_desc_t NW_KMETRICS_NODES_ALLOCATABLE = {
    .name = "karpenter_nodes_allocatable",
    .help = "Node allocatable are the resources allocatable by nodes.",
    .kind = NW_SERIES_GAUGE,
    .labels = {NW_WELLKNOWN_METRIC_NAMES "node_name", "phase", "managed", "resource_type"}};

const nw_series_desc_t NW_KMETRICS_NODES_POD_REQUESTS = {
    .name = "karpenter_nodes_total_pod_requests",
    .help = "Node total pod requests are the resources requested by pods bound to nodes, including "
            "the DaemonSet pods.",
    .kind = NW_SERIES_GAUGE,
    .labels = {NW_WELLKNOWN_METRIC_NAMES "node_name", "phase", "managed", "resource_type"}};

const nw_series_desc_t NW_KMETRICS_NODES_POD_LIMITS = {
    .name = "karpenter_nodes_total_pod_limits",
    .help = "Node total pod limits are the resources specified by pod limits, including the "
            "DaemonSet pods.",
    .kind = NW_SERIES_GAUGE,
    .labels = {NW_WELLKNOWN_METRIC_NAMES "node_name", "phase", "managed", "resource_type"}};

const nw_series_desc_t NW_KMETRICS_NODES_DAEMON_REQUESTS = {
    .name = "karpenter_nodes_total_daemon_requests",
    .help =
        "Node total daemon requests are the resource requested by DaemonSet pods bound to nodes.",
    .kind = NW_SERIES_GAUGE,
    .labels = {NW_WELLKNOWN_METRIC_NAMES "node_name", "phase", "managed", "resource_type"}};

const nw_series_desc_t NW_KMETRICS_NODES_DAEMON_LIMITS = {
    .name = "karpenter_nodes_total_daemon_limits",
    .help = "Node total daemon limits are the resources specified by DaemonSet pod limits.",
    .kind = NW_SERIES_GAUGE,
    .labels = {NW_WELLKNOWN_METRIC_NAMES "node_name", "phase", "managed", "resource_type"}};

const nw_series_desc_t NW_KMETRICS_NODES_SYSTEM_OVERHEAD = {
    .name = "karpenter_nodes_system_overhead",
    .help =
        "Node system daemon overhead are the resources reserved for system overhead, the "
        "difference between the node's capacity and allocatable values are reported by the status.",
    .kind = NW_SERIES_GAUGE,
    .labels = {NW_WELLKNOWN_METRIC_NAMES "node_name", "phase", "managed", "resource_type"}};

const nw_series_desc_t NW_KMETRICS_NODES_LIFETIME = {
    .name = "karpenter_nodes_current_lifetime_seconds",
    .help = "Node age in seconds",
    .kind = NW_SERIES_GAUGE,
    .labels = {NW_WELLKNOWN_METRIC_NAMES "node_name", "phase", "managed"}};

const nw_series_desc_t NW_KMETRICS_CLUSTER_UTILIZATION = {
    .name = "karpenter_cluster_utilization_percent",
    .help = "Utilization of allocatable resources by pod requests",
    .kind = NW_SERIES_GAUGE,
    .labels = {"resource_type"}};

const nw_series_desc_t NW_KMETRICS_NODEPOOLS_LIMIT = {
    .name = "karpenter_nodepools_limit",
    .help = "Limits specified on the nodepool that restrict the quantity of resources provisioned. "
            "Labeled by nodepool name and resource type.",
    .kind = NW_SERIES_GAUGE,
    .labels = {"resource_type", "nodepool"}};

const nw_series_desc_t NW_KMETRICS_NODEPOOLS_USAGE = {
    .name = "karpenter_nodepools_usage",
    .help = "The amount of resources that have been provisioned for a nodepool. Labeled by "
            "nodepool name and resource type.",
    .kind = NW_SERIES_GAUGE,
    .labels = {"resource_type", "nodepool"}};

const nw_series_desc_t NW_KMETRICS_PODS_STATE = {
    .name = "karpenter_pods_state",
    .help = "Pod state is the current state of pods. This metric can be used several ways as it is "
            "labeled by the pod name, namespace, owner, node, nodepool name, zone, architecture, "
            "capacity type, instance type, pod phase, and pod readiness.",
    .kind = NW_SERIES_GAUGE,
    .labels = {"name", "namespace", "owner", "node", "scheduled", "nodepool", "zone", "arch",
               "capacity_type", "instance_type", "phase", "ready", "managed"}};

const nw_series_desc_t NW_KMETRICS_OFFERING_AVAILABLE = {
    .name = "karpenter_cloudprovider_instance_type_offering_available",
    .help = "Instance type offering availability, based on instance type, capacity type, and zone",
    .kind = NW_SERIES_GAUGE,
    .labels = {"instance_type", "capacity_type", "zone"}};

const nw_series_desc_t NW_KMETRICS_OFFERING_PRICE = {
    .name = "karpenter_cloudprovider_instance_type_offering_price_estimate",
    .help = "Instance type offering estimated hourly price used when making informed decisions on "
            "node cost calculation, based on instance type, capacity type, and zone.",
    .kind = NW_SERIES_GAUGE,
    .labels = {"instance_type", "capacity_type", "zone"}};

const nw_series_desc_t *const nw_kmetrics_counted[] = {
    &NW_KMETRICS_NODECLAIMS_CREATED,
    &NW_KMETRICS_NODECLAIMS_TERMINATED,
    &NW_KMETRICS_NODECLAIMS_DISRUPTED,
    &NW_KMETRICS_NODECLAIMS_UNHEALTHY_DISRUPTED,
    &NW_KMETRICS_NODES_CREATED,
    &NW_KMETRICS_NODES_TERMINATED,
    &NW_KMETRICS_NODES_DRAINED,
    &NW_KMETRICS_NODES_TERMINATION_DURATION,
    &NW_KMETRICS_NODES_LIFETIME_DURATION,
    &NW_KMETRICS_NODECLAIMS_TERMINATION_DURATION,
    &NW_KMETRICS_NODECLAIMS_INSTANCE_TERMINATION_DURATION,
    &NW_KMETRICS_SCHEDULER_DURATION,
    &NW_KMETRICS_DISRUPTION_DECISIONS,
    &NW_KMETRICS_DISRUPTION_DECISIONS_BY_NODEPOOL,
    &NW_KMETRICS_DISRUPTION_EVAL_DURATION,
    &NW_KMETRICS_DISRUPTION_ELIGIBLE,
    &NW_KMETRICS_DISRUPTION_TIMEOUTS,
    &NW_KMETRICS_DISRUPTION_FAILED_VALIDATIONS,
    &NW_KMETRICS_NODEPOOLS_ALLOWED_DISRUPTIONS,
    &NW_KMETRICS_NODEPOOLS_NODES_CONSUMING_BUDGETS,
    &NW_KMETRICS_INTERRUPTION_RECEIVED,
    &NW_KMETRICS_INTERRUPTION_DELETED,
    &NW_KMETRICS_INTERRUPTION_QUEUE_DURATION,
    &NW_KMETRICS_INSTANCE_STATUS_UNHEALTHY,
    &NW_METERED_CLOUDPROVIDER_DURATION,
    &NW_METERED_CLOUDPROVIDER_ERRORS,
    &NW_KMETRICS_PODS_STARTUP_DURATION,
};
const size_t nw_kmetrics_ncounted = sizeof nw_kmetrics_counted / sizeof nw_kmetrics_counted[0];

const nw_series_desc_t *const nw_kmetrics_state[] = {
    &NW_KMETRICS_NODES_ALLOCATABLE,    &NW_KMETRICS_NODES_POD_REQUESTS,
    &NW_KMETRICS_NODES_POD_LIMITS,     &NW_KMETRICS_NODES_DAEMON_REQUESTS,
    &NW_KMETRICS_NODES_DAEMON_LIMITS,  &NW_KMETRICS_NODES_SYSTEM_OVERHEAD,
    &NW_KMETRICS_NODES_LIFETIME,       &NW_KMETRICS_CLUSTER_UTILIZATION,
    &NW_KMETRICS_NODEPOOLS_LIMIT,      &NW_KMETRICS_NODEPOOLS_USAGE,
    &NW_KMETRICS_PODS_STATE,           &NW_KMETRICS_OFFERING_AVAILABLE,
    &NW_KMETRICS_OFFERING_PRICE,       &NW_KMETRICS_CLUSTER_STATE_NODE_COUNT,
    &NW_KMETRICS_CLUSTER_STATE_SYNCED, &NW_KMETRICS_CLUSTER_STATE_UNSYNCED_TIME,
};
const size_t nw_kmetrics_nstate = sizeof nw_kmetrics_state / sizeof nw_kmetrics_state[0];

void nw_kmetrics_resource_type(const char *name, char *out, size_t len)
{
    size_t o = 0;
    for (; *name && o + 1 < len; name++)
        out[o++] = *name == '-' ? '_' : (char)tolower((unsigned char)*name);
    if (len)
        out[o] = '\0';
}

static const char *label(const cJSON *o, const char *k)
{
    return nw_json_str(nw_json_get(nw_json_get(o, "metadata"), "labels"), k);
}

void nw_kmetrics_count_labels(nw_series_t *r, const nw_series_desc_t *d, const cJSON *obj,
                              const char *const *keys)
{
    const char *v[NW_SERIES_MAX_LABELS] = {0};
    for (int i = 0; i < NW_SERIES_MAX_LABELS && d->labels[i]; i++)
        v[i] = label(obj, keys[i]);
    nw_series_add(r, d, v, 1);
}

void nw_kmetrics_observe_since(nw_series_t *r, const nw_series_desc_t *d, const cJSON *obj,
                               const char *path, int64_t now)
{
    const char *ts = nw_json_str_at(obj, path);
    int64_t t = 0;
    if (ts && nw_clock_time_parse(ts, &t) == NW_OK)
        nw_kmetrics_observe_from(r, d, obj, t, now);
}

void nw_kmetrics_observe_from(nw_series_t *r, const nw_series_desc_t *d, const cJSON *obj,
                              int64_t from, int64_t now)
{
    const char *v[] = {label(obj, NW_LABEL_NODEPOOL)};
    nw_series_observe(r, d, v, (double)(now - from) / 1e9);
}

void nw_kmetrics_disrupted(nw_series_t *r, const char *reason, const cJSON *obj)
{
    const char *v[] = {reason, label(obj, NW_LABEL_NODEPOOL), label(obj, NW_LABEL_CAPACITY_TYPE)};
    nw_series_add(r, &NW_KMETRICS_NODECLAIMS_DISRUPTED, v, 1);
}

void nw_kmetrics_count_labels_of(nw_series_t *r, const nw_series_desc_t *d, const nw_node_meta_t *m,
                                 const char *const *keys)
{
    const char *v[NW_SERIES_MAX_LABELS] = {0};
    for (int i = 0; i < NW_SERIES_MAX_LABELS && d->labels[i]; i++)
        v[i] = nw_node_meta_label(m, keys[i]);
    nw_series_add(r, d, v, 1);
}

void nw_kmetrics_observe_from_of(nw_series_t *r, const nw_series_desc_t *d, const nw_node_meta_t *m,
                                 int64_t from, int64_t now)
{
    const char *v[] = {nw_node_meta_label(m, NW_LABEL_NODEPOOL)};
    nw_series_observe(r, d, v, (double)(now - from) / 1e9);
}

void nw_kmetrics_disrupted_of(nw_series_t *r, const char *reason, const nw_node_meta_t *m)
{
    const char *v[] = {reason, nw_node_meta_label(m, NW_LABEL_NODEPOOL),
                       nw_node_meta_label(m, NW_LABEL_CAPACITY_TYPE)};
    nw_series_add(r, &NW_KMETRICS_NODECLAIMS_DISRUPTED, v, 1);
}

const char *nw_kmetrics_message_kind(nw_interrupt_kind_t k)
{
    switch (k) {
    case NW_INTR_SPOT_INTERRUPTION:
        return "spot_interrupted";
    case NW_INTR_REBALANCE:
        return "rebalance_recommendation";
    case NW_INTR_SCHEDULED_CHANGE:
        return "scheduled_change";
    case NW_INTR_STOPPED:
        return "instance_stopped";
    case NW_INTR_TERMINATED:
        return "instance_terminated";
    case NW_INTR_CAPACITY_RESERVATION:
        return "capacity_reservation_interrupted";
    default:
        return "no_op";
    }
}
