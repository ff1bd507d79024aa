/*
 * server/https.h — the webhook's HTTPS server (libmicrohttpd + GnuTLS).
 *
 * Routes: POST /validate[/...] and POST /mutate[/...] (AdmissionReview v1,
 * Content-Type application/json), GET /healthz, GET /readyz; GET /metrics on a
 * port of its own in plain HTTP (metrics_listen, as Karpenter serves its metrics on
 * :8080), or on this one when metrics_listen is empty.
 * TLS 1.2/1.3 with ECDHE and AEAD ciphers (AES-GCM, ChaCha20-Poly1305) only; the certificate comes
 * from server/certs.h (swappable at runtime). A pool of internal polling threads (epoll), so a
 * stalled client occupies a socket, never a thread. Body cap (413), per-request
 * deadline (min of webhook.requestTimeout and the apiserver's ?timeout=),
 * keep-alive idle timeout. Against hostile clients: a cap per client address
 * (libmicrohttpd closes the excess at accept); a cap in total, sized from the
 * memory and descriptor limits (server/sizing.h), at which each new connection
 * pushes out the oldest one that has no request in progress (server/conns.h); an
 * absolute deadline from accept to the end of the request headers (TLS handshake
 * included; bytes dripped slowly do not extend it), shortened while more than half
 * the cap is open; and a budget of body bytes across all requests (503 once it is
 * used up). Every error is a JSON metav1 Status body.
 *
 * Ownership: nw_https_start returns an owned server; nw_https_stop drains and
 * frees it. opts and everything it points to are borrowed and must outlive it.
 * Thread: start/stop main; handlers run on MHD's threads.
 */
#ifndef NW_SERVER_HTTPS_H
#define NW_SERVER_HTTPS_H

#include <stddef.h>
#include <stdint.h>

#include "api/admit.h"
#include "common/err.h"
#include "admission/review.h"
#include "server/metrics.h"

typedef struct nw_https nw_https_t;

typedef struct {
    const char *listen;             /* "ADDR:PORT", "[v6]:PORT"; port 0 = pick a free port */
    size_t max_body;                /* bytes; larger bodies get 413 */
    int64_t request_timeout_ns;     /* per-request deadline */
    int64_t idle_timeout_ns;        /* keep-alive idle timeout (>90 s for kube-apiserver) */
    int64_t shutdown_grace_ns;      /* how long nw_https_stop waits for requests in flight */
    unsigned threads;               /* 0 = one per online CPU */
    unsigned max_conns;             /* all clients together; 0 = sized from memory (sizing.h) */
    unsigned conn_memory_percent;   /* of the memory limit, when max_conns is 0; 0 = 25 */
    unsigned max_conns_per_ip;      /* per client address; 0 = no limit */
    int64_t header_timeout_ns;      /* TLS handshake + request headers, from accept; 0 = none */
    int64_t busy_header_timeout_ns; /* the same while over half the cap is open; 0 = off */
    size_t max_inflight_body;       /* body bytes held by all requests together; 0 = no limit */
    const nw_admit_ctx_t *admit_ctx;
    nw_srv_lookup_fn lookup;    /* NULL = nw_handlers_find */
    nw_metrics_t *metrics;      /* required */
    const char *metrics_listen; /* "ADDR:PORT" (port 0: pick one) for plain HTTP GET /metrics;
                                   NULL or "": /metrics on the webhook's port instead */
} nw_https_opts_t;

/** TLS priority string given to GnuTLS. */
#define NW_HTTPS_PRIORITIES                                                                        \
    "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA:-CIPHER-ALL:"      \
    "+AES-256-GCM:+AES-128-GCM:+CHACHA20-POLY1305:-MAC-ALL:+AEAD"

/** Bind, listen and start serving. A certificate must already be loaded
 * (nw_certs_load_initial). */
NW_MUST_USE nw_rc_t nw_https_start(const nw_https_opts_t *opts, nw_https_t **out, nw_err_t *err);

/** The port actually bound (useful with port 0). */
unsigned nw_https_port(const nw_https_t *s);

/** The metrics port bound (0 when /metrics is on the webhook's port). */
unsigned nw_https_metrics_port(const nw_https_t *s);

/** Number of threads in the pool. */
unsigned nw_https_threads(const nw_https_t *s);

/**
 * Graceful stop: stop accepting (close the listener), let requests in flight
 * finish (up to shutdown_grace), answer further requests on open keep-alive
 * connections with Connection: close, then stop the daemon and free s.
 */
void nw_https_stop(nw_https_t *s);

#endif
