/* scaler/controllers/kmetrics.c — Karpenter's metric families (see kmetrics.h). */
#include "scaler/controllers/kmetrics.h"

const nw_series_desc_t NW_KM_NODECLAIMS_DISRUPTED = {
    .name = "karpenter_nodeclaims_disrupted_total",
    .help =
        "Number of nodeclaims disrupted in total by Karpenter. Labeled by reason the nodeclaim was "
        "disrupted and the owning nodepool.",
    .kind = NW_SERIES_COUNTER,
    .labels = {"reason", "nodepool", "capacity_type"}};

const nw_series_desc_t NW_KM_NODECLAIMS_UNHEALTHY_DISRUPTED = {
    .name = "karpenter_nodeclaims_unhealthy_disrupted_total",
    .help = "Number of unhealthy nodeclaims disrupted in total by Karpenter. Labeled by condition "
            "on the "
            "node was disrupted, the owning nodepool, and the image ID.",
    .kind = NW_SERIES_COUNTER,
    .labels = {"condition", "nodepool", "capacity_type", "image_id"}};

const nw_series_desc_t NW_KM_INSTANCE_STATUS_UNHEALTHY = {
    .name = "karpenter_interruption_instance_status_unhealthy_total",
    .help = "Count of unique unhealthy instance statuses detected from EC2 DescribeInstanceStatus. "
            "Broken down by status check category.",
    .kind = NW_SERIES_COUNTER,
    .labels = {"category"}};

const nw_series_desc_t *const nw_km_all[] = {
    &NW_KM_NODECLAIMS_DISRUPTED,
    &NW_KM_NODECLAIMS_UNHEALTHY_DISRUPTED,
    &NW_KM_INSTANCE_STATUS_UNHEALTHY,
};
const size_t nw_km_count = sizeof nw_km_all / sizeof nw_km_all[0];
