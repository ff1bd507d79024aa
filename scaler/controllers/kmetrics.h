/*
 * scaler/controllers/kmetrics.h — Karpenter's metric families (names, types, labels and
 * buckets of its reference/metrics page and of the upstream sources cited at each), which
 * the controllers count into the registry every controller shares (nw_ctl_deps_t.series,
 * common/series.h), and the list of them loop.c writes on /metrics.
 *
 * Thread: the descriptions are constants; the registry has its own mutex.
 */
#ifndef NW_SCALER_CONTROLLERS_KMETRICS_H
#define NW_SCALER_CONTROLLERS_KMETRICS_H

#include <stddef.h>

#include "common/series.h"

/* kubernetes-sigs/karpenter pkg/metrics/metrics.go NodeClaimsDisruptedTotal */
extern const nw_series_desc_t NW_KM_NODECLAIMS_DISRUPTED;
/* pkg/controllers/node/health/metrics.go NodeClaimsUnhealthyDisruptedTotal */
extern const nw_series_desc_t NW_KM_NODECLAIMS_UNHEALTHY_DISRUPTED;
/* aws/karpenter-provider-aws pkg/controllers/interruption/metrics.go InstanceStatusUnhealthy */
extern const nw_series_desc_t NW_KM_INSTANCE_STATUS_UNHEALTHY;

/* Every family, in the order /metrics writes them. */
extern const nw_series_desc_t *const nw_km_all[];
extern const size_t nw_km_count;

#endif
