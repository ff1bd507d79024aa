/*
 * server/metrics.h — the webhook's counters and latency histogram, exposed in
 * the Prometheus text format (version 0.0.4) on GET /metrics.
 *
 * Label sets are fixed (no unbounded cardinality): routes are the server's
 * routes, kinds are NodePool, EC2NodeClass, NodeClaim, Pod and "other",
 * verdicts are those of admission/review.h.
 *
 * Ownership: caller storage (nw_server_metrics_init); no heap inside. The latency histograms are
 * common/prom.h's nw_hist_t, the one histogram of the tree.
 * Thread: any (relaxed C11 atomics; a scrape is not a consistent snapshot).
 */
#ifndef NW_SERVER_METRICS_H
#define NW_SERVER_METRICS_H

#include <stdatomic.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/prom.h"
#include "admission/review.h"

typedef enum {
    NW_ROUTE_VALIDATE = 0,
    NW_ROUTE_MUTATE,
    NW_ROUTE_HEALTHZ,
    NW_ROUTE_READYZ,
    NW_ROUTE_METRICS,
    NW_ROUTE_OTHER, /* unknown paths (404) */
    NW_ROUTE_COUNT
} nw_route_t;

#define NW_METRICS_KINDS 5  /* NodePool, EC2NodeClass, NodeClaim, Pod, other */
#define NW_METRICS_CODES 12 /* HTTP status codes tracked (200, 400, 404, ...) + other */

/* Why a certificate pair was refused (label reason of nodewarden_cert_reload_errors_total). */
typedef enum {
    NW_CERT_ERR_UNREADABLE = 0, /* missing, unreadable, empty, too large */
    NW_CERT_ERR_NOT_REGULAR,    /* a FIFO, device, directory ... */
    NW_CERT_ERR_PARSE,          /* not PEM */
    NW_CERT_ERR_KEY_MISMATCH,
    NW_CERT_ERR_EXPIRED,
    NW_CERT_ERR_NOT_YET_VALID,
    NW_CERT_ERR_DNS_NAME, /* a name of webhook.certDNSNames is not in the SANs */
    NW_CERT_ERR_COUNT
} nw_cert_err_t;

/* Why the server closed a connection (label reason of
 * nodewarden_webhook_connections_closed_total). */
typedef enum {
    NW_CONN_CLOSE_HEADER_TIMEOUT = 0,  /* no request headers within webhook.headerTimeout */
    NW_CONN_CLOSE_BUSY_HEADER_TIMEOUT, /* within webhook.busyHeaderTimeout, past half full */
    NW_CONN_CLOSE_EVICTED,             /* at the cap, the oldest without a request, for a new one */
    NW_CONN_CLOSE_REFUSED, /* at the cap with every other one in a request: the new one */
    NW_CONN_CLOSE_COUNT
} nw_conn_close_t;

typedef struct {
    /* admission requests: [route validate|mutate][kind][verdict] */
    _Atomic uint64_t admission[2][NW_METRICS_KINDS][NW_SRV_VERDICT_COUNT];
    nw_hist_t latency[2]; /* admission latency per route (common/prom.h; bounds in metrics.c) */
    _Atomic uint64_t http[NW_ROUTE_COUNT][NW_METRICS_CODES]; /* responses by route and code */
    _Atomic uint64_t cert_reloads;
    _Atomic uint64_t cert_reload_failures;
    _Atomic uint64_t cert_reload_errors[NW_CERT_ERR_COUNT]; /* the same, by reason */
    _Atomic int64_t cert_not_after; /* epoch seconds of the served leaf, 0 = none */
    _Atomic int64_t inflight;
    _Atomic uint64_t aborted;   /* requests dropped: deadline, body over the hard limit */
    _Atomic int64_t conns_open; /* webhook connections open, not counting those being closed */
    _Atomic int64_t conns_max;  /* the connection cap in force (webhook.maxConnections) */
    _Atomic uint64_t conns_closed[NW_CONN_CLOSE_COUNT]; /* closed by the server, by reason */
    /* the scaler: 0 not enabled, 1 running, -1 enabled but it could not start (the webhook
     * serves on; scaler_error says why, in /readyz too). Set before serving. */
    int scaler;
    char scaler_error[512];
    /* more series appended by the renderer (the scaler's); set before serving, or NULL */
    nw_rc_t (*extra)(void *ud, nw_buf_t *out);
    void *extra_ud;
} nw_metrics_t;

/** Zero all counters and set the histograms' bounds. */
void nw_server_metrics_init(nw_metrics_t *m);

/** Name of a route ("validate", "mutate", "healthz", ...). */
const char *nw_server_metrics_route_str(nw_route_t r);

/** Count one admission request on route (NW_ROUTE_VALIDATE or _MUTATE). */
void nw_server_metrics_admission(nw_metrics_t *m, nw_route_t route, const char *kind,
                                 nw_review_verdict_t verdict, int64_t latency_ns);

/** Count one HTTP response. */
void nw_server_metrics_http(nw_metrics_t *m, nw_route_t route, int code);

/** Name of a refusal reason ("expired", ...). */
const char *nw_server_metrics_cert_err_str(nw_cert_err_t e);

/** Name of a close reason ("header_timeout", ...). */
const char *nw_server_metrics_close_str(nw_conn_close_t r);

/** Append the Prometheus text exposition to out. */
NW_MUST_USE nw_rc_t nw_server_metrics_render(const nw_metrics_t *m, nw_buf_t *out);

#endif
