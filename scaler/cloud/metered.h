/*
 * scaler/cloud/metered.h — a cloud that times the calls of another and counts their errors,
 * as Karpenter's decorator does (kubernetes-sigs/karpenter
 * pkg/cloudprovider/metrics/cloudprovider.go): karpenter_cloudprovider_duration_seconds
 * {controller,method,provider} (client_golang's default buckets) and
 * karpenter_cloudprovider_errors_total{controller,method,provider,error} for the methods of
 * Karpenter's CloudProvider interface: launch = Create, terminate = Delete,
 * instance_state = Get, list = List. error is InsufficientCapacityError,
 * NodeClaimNotFoundError or "". controller is the name the calling thread set last with
 * nw_metered_controller (Karpenter takes it from the context); provider is "aws".
 * Every other operation is passed through.
 *
 * Ownership: nw_metered_new wraps inner (owned: ops->free frees both); the registry
 * and clock are borrowed. Thread: as the inner cloud.
 */
#ifndef NW_SCALER_CLOUD_METERED_H
#define NW_SCALER_CLOUD_METERED_H

#include "common/clock.h"
#include "common/series.h"
#include "scaler/cloud/cloud.h"

extern const nw_series_desc_t NW_METERED_CLOUDPROVIDER_DURATION, NW_METERED_CLOUDPROVIDER_ERRORS;

/** inner, timed (NULL on OOM: inner is then freed too). */
nw_cloud_t *nw_metered_new(nw_cloud_t *inner, const char *provider, nw_series_t *series,
                           const nw_clock_t *clock);

/** The controller label of this thread's later calls (a static string). */
void nw_metered_controller(const char *name);

#endif
