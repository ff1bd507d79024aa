/*
 * scaler/kube/metrics.h — counters and gauges of the Kubernetes client, written
 * in the Prometheus text format by nw_kube_metrics_write (for the server's
 * /metrics; the server only needs this header and the pointer the client gives).
 *
 * Series:
 *   nodewarden_kube_requests_total{verb,resource,code}   code "0" = no HTTP answer
 *   nodewarden_kube_retries_total{verb,resource}
 *   nodewarden_kube_watch_events_total{resource}
 *   nodewarden_kube_watch_restarts_total{resource}
 *   nodewarden_kube_relists_total{resource}
 *   nodewarden_kube_cache_objects{resource}                (gauge)
 *
 * Ownership: nw_kube_metrics_new / nw_kube_metrics_free. Thread: any (a mutex).
 */
#ifndef NW_SCALER_KUBE_METRICS_H
#define NW_SCALER_KUBE_METRICS_H

#include <stdint.h>

#include "common/buf.h"

typedef struct nw_kube_metrics nw_kube_metrics_t;

typedef enum {
    NW_KM_REQUESTS = 0,
    NW_KM_RETRIES,
    NW_KM_WATCH_EVENTS,
    NW_KM_WATCH_RESTARTS,
    NW_KM_RELISTS,
    NW_KM_CACHE_OBJECTS,
    NW_KM_FAMILIES
} nw_kube_metric_t;

/** New empty registry (NULL on OOM). */
nw_kube_metrics_t *nw_kube_metrics_new(void);

/** Free. NULL-safe. */
void nw_kube_metrics_free(nw_kube_metrics_t *m);

/** Add delta to a counter (or set a gauge when family is NW_KM_CACHE_OBJECTS).
 * verb may be NULL for families without it; code < 0 means "no code label". NULL m is a no-op. */
void nw_kube_metrics_add(nw_kube_metrics_t *m, nw_kube_metric_t family, const char *verb,
                         const char *resource, int code, int64_t delta);

/** Read one series (0 when absent); for tests and kube-dump. */
int64_t nw_kube_metrics_get(nw_kube_metrics_t *m, nw_kube_metric_t family, const char *verb,
                            const char *resource, int code);

/** Append every series in the Prometheus text format. */
NW_MUST_USE nw_rc_t nw_kube_metrics_write(nw_kube_metrics_t *m, nw_buf_t *out);

#endif
