/*
 * scaler/kube/client.h — the Kubernetes REST client (libcurl + cJSON).
 *
 * One nw_kube_client_t per process holds the configuration, one shared
 * connection pool (a CURLSH sharing connections, DNS and TLS sessions; HTTP/2
 * where the server offers it via ALPN), the bearer token (re-read from its file
 * at most every 60 s and at once after a 401, then the request is retried once)
 * or the kubeconfig's exec plugin (scaler/kube/execcred.h: its token and client
 * certificate, run again before they expire and after a 401),
 * a token-bucket rate limiter (QPS/burst) and the metrics registry.
 *
 * nw_kube_client_do() is the one synchronous request path: rate limit, timeout,
 * retries with jittered exponential back-off for 429/5xx/network errors
 * (Retry-After honoured, capped), metrics by verb/resource/code. A POST (a new
 * object each time) is repeated only after a 429, a 503 or a connection never made:
 * never after a 500/504 or a lost answer, which may have created the object. Watches use
 * the same configuration through nw_kube_client__easy_setup (see watch.h).
 *
 * Ownership: nw_kube_client_new takes the config; free with nw_kube_client_free
 * after every user (watch, leader, writers) has stopped.
 * Thread: any — every function here may be called from several threads at once.
 */
#ifndef NW_SCALER_KUBE_CLIENT_H
#define NW_SCALER_KUBE_CLIENT_H

#include <stdatomic.h>
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/err.h"
#include "scaler/kube/config.h"
#include "scaler/kube/metrics.h"
#include "scaler/kube/retry.h"

/* ---- resources ------------------------------------------------------------------ */

typedef struct {
    const char *prefix;      /* "/api/v1", "/apis/karpenter.sh/v1" */
    const char *plural;      /* "pods" */
    const char *kind;        /* "Pod" */
    const char *api_version; /* "v1", "karpenter.sh/v1" */
    int namespaced;
} nw_kube_res_t;

extern const nw_kube_res_t nw_kube_client_res_pods, nw_kube_client_res_nodes,
    nw_kube_client_res_nodepools, nw_kube_client_res_ec2nodeclasses, nw_kube_client_res_nodeclaims,
    nw_kube_client_res_pdbs, nw_kube_client_res_daemonsets, nw_kube_client_res_leases,
    nw_kube_client_res_events, nw_kube_client_res_namespaces, nw_kube_client_res_pvs,
    nw_kube_client_res_pvcs, nw_kube_client_res_storageclasses, nw_kube_client_res_csinodes,
    nw_kube_client_res_resourceclaims, nw_kube_client_res_resourceclaimtemplates,
    nw_kube_client_res_deviceclasses,
    nw_kube_client_res_secrets; /* secrets: the kubeadm bootstrap tokens only */

/**
 * Append the path of a collection or object: prefix[/namespaces/<ns>]/plural[/name[/sub]].
 * ns is ignored for cluster-scoped resources; NULL/"" ns on a namespaced resource
 * means "all namespaces" (collections only). name and sub may be NULL.
 */
NW_MUST_USE nw_rc_t nw_kube_client_path(nw_buf_t *out, const nw_kube_res_t *r, const char *ns,
                                        const char *name, const char *sub);

/** Append "?k=v" or "&k=v" (v URL-encoded) depending on whether out has a '?'. */
NW_MUST_USE nw_rc_t nw_kube_client_query(nw_buf_t *out, const char *k, const char *v);

/* ---- client --------------------------------------------------------------------- */

typedef struct {
    double qps;                /* requests per second; default 200 (Karpenter's); < 0 unlimited */
    int burst;                 /* default 300 */
    int timeout_ms;            /* per attempt; default 30000 */
    int connect_timeout_ms;    /* default 10000 */
    int max_retries;           /* default 5; -1 for none */
    int64_t backoff_base_ms;   /* default 800 */
    int64_t backoff_max_ms;    /* default 30000 */
    int64_t retry_after_max_s; /* cap on a server's Retry-After; default 60 */
    int64_t token_reload_ms;   /* re-read the token file at most this often; default 60000 */
    int http1_only;            /* disable HTTP/2 (default: HTTP/2 over TLS when offered) */
    const nw_clock_t *clock;   /* default nw_clock_system() */
    long exec_timeout_ms;      /* an exec plugin's deadline; default NW_EXECCRED_TIMEOUT_MS */
} nw_kube_client_opts_t;

typedef struct nw_kube_client nw_kube_client_t;

/**
 * Create a client. Takes ownership of cfg whatever it returns: on failure cfg is
 * already freed, so the caller must neither use nor free it after the call (set your
 * pointer to NULL right after it). opts may be NULL. Does no network I/O.
 * @return NW_OK and *out, owned, free with nw_kube_client_free.
 */
NW_MUST_USE nw_rc_t nw_kube_client_new(nw_kube_config_t *cfg, const nw_kube_client_opts_t *opts,
                                       nw_kube_client_t **out, nw_err_t *err);

/** Free the client. NULL-safe. Nothing may use it any more. */
void nw_kube_client_free(nw_kube_client_t *c);

/**
 * While *flag reads non-zero (the scaler stopping), requests skip the client's rate
 * limit (a wait under way ends within 50 ms) and are not retried, so a thread with a
 * queue of writes reaches its stop check at once instead of after qps-paced minutes.
 * Borrowed; NULL clears it; call before sharing c.
 */
void nw_kube_client_set_abort(nw_kube_client_t *c, const atomic_int *flag);

/** The configuration (borrowed, valid while c lives). */
const nw_kube_config_t *nw_kube_client_config(const nw_kube_client_t *c);

/** The metrics registry (borrowed, valid while c lives). */
nw_kube_metrics_t *nw_kube_client_metrics(nw_kube_client_t *c);

/** The clock the client uses (borrowed). */
const nw_clock_t *nw_kube_client_clock(const nw_kube_client_t *c);

/** The options in effect (defaults filled in; borrowed). */
const nw_kube_client_opts_t *nw_kube_client_opts(const nw_kube_client_t *c);

/** Make sure the client has credentials: runs the kubeconfig's exec plugin when it has
 * none yet (NW_OK at once without a plugin). Its error names the kubeconfig, the user
 * entry and what the plugin did; the CLI calls it first to fail with that message. */
NW_MUST_USE nw_rc_t nw_kube_client_credentials(nw_kube_client_t *c, nw_err_t *err);

/** How many times the exec plugin ran (0 without one). */
long nw_kube_client_plugin_runs(const nw_kube_client_t *c);

/** Initialise rl (release with nw_kube_retry_rl_cleanup) as a limiter of the client's rate,
 * burst and clock, full. */
void nw_kube_client_limiter_init(const nw_kube_client_t *c, nw_kube_rl_t *rl);

/** Make the calling thread's requests, on any client, wait on rl instead of the client's own
 * limiter (NULL: the client's again). For writers with a budget of their own, as another
 * component's client would have: the nomination writers (scaler/controllers/nominate.c),
 * whose writes kube-scheduler makes from its own client, so that a burst of nominations
 * does not hold back the registrations behind them. rl (scaler/kube/retry.h) must outlive
 * the thread's requests. */
void nw_kube_client_thread_limiter(nw_kube_rl_t *rl);

/* ---- requests ------------------------------------------------------------------- */

typedef struct {
    const char *method; /* "GET", "POST", "PUT", "PATCH", "DELETE" */
    const char *path;   /* path and query, e.g. "/api/v1/pods?limit=500" */
    const char *body;   /* NULL for none */
    size_t body_len;
    const char *content_type; /* default "application/json" when body is set */
    const char *verb;         /* metrics label: get, list, create, update, patch, delete, ... */
    const char *resource;     /* metrics label: plural resource */
    int timeout_ms;           /* 0: client default */
    int no_retry;             /* 1: one attempt (401 is still retried once after a reload) */
} nw_kube_req_t;

typedef struct {
    long code;         /* HTTP status; 0 if no answer */
    nw_buf_t body;     /* response body (capped at 64 MiB) */
    int retry_after_s; /* Retry-After header, -1 if absent */
    char reason[64];   /* Status.reason when the body is a Status */
    char message[512]; /* Status.message, or the start of a non-JSON body */
} nw_kube_resp_t;

/** Initialise a response (caller storage). */
void nw_kube_client_resp_init(nw_kube_resp_t *r);

/** Free a response's body. */
void nw_kube_client_resp_cleanup(nw_kube_resp_t *r);

/**
 * Perform a request with rate limiting, timeout and retries.
 * @return NW_OK when an HTTP answer arrived (any code: check resp->code);
 *         NW_EHTTP / NW_ETIMEOUT when none did after the retries (err has curl's reason).
 */
NW_MUST_USE nw_rc_t nw_kube_client_do(nw_kube_client_t *c, const nw_kube_req_t *req,
                                      nw_kube_resp_t *resp, nw_err_t *err);

/**
 * Turn a non-2xx response into an error: 404 → NW_ENOTFOUND, 409 → NW_ECONFLICT,
 * 401 → NW_EKUBE with a hint, 403 → NW_EFORBIDDEN with a hint, others NW_EKUBE; message "<what>:
 * <code> <reason>: <message>". Returns NW_OK for 2xx.
 */
NW_MUST_USE nw_rc_t nw_kube_client_resp_error(const nw_kube_resp_t *resp, const char *what,
                                              nw_err_t *err);

/**
 * GET path and parse the JSON body. @return NW_OK and *out (owned, cJSON_Delete), or an
 * error from nw_kube_client_resp_error / nw_kube_client_do / NW_EPARSE.
 */
NW_MUST_USE nw_rc_t nw_kube_client_get_json(nw_kube_client_t *c, const char *path, const char *verb,
                                            const char *resource, cJSON **out, nw_err_t *err);

/** The API server's Kubernetes version as "<major>.<minor>" (GET /version; a minor such as
 * "31+" is read as 31) into out. NW_EPARSE when the answer has no major/minor. */
NW_MUST_USE nw_rc_t nw_kube_client_server_version(nw_kube_client_t *c, char *out, size_t len,
                                                  nw_err_t *err);

/** The cluster's DNS Service address: spec.clusterIP of kube-system/kube-dns (Karpenter's
 * operator KubeDNSIP) into out. NW_EPARSE when it has none (headless, or not an address). */
NW_MUST_USE nw_rc_t nw_kube_client_dns_ip(nw_kube_client_t *c, char *out, size_t len,
                                          nw_err_t *err);

/** Parse a JSON text of known length (bounded; never uses cJSON_GetErrorPtr). NULL on error. */
cJSON *nw_kube_client_json_parse(const char *s, size_t len);

/* ---- internal, for watch.c ------------------------------------------------------ */

/**
 * Configure an easy handle with the server's TLS settings, proxy and timeouts,
 * and return the request headers (Accept, User-Agent, Authorization) to set with
 * CURLOPT_HTTPHEADER; the caller frees the list with curl_slist_free_all after
 * the transfer. url_path is appended to the server URL. NULL on OOM.
 */
struct curl_slist *nw_kube_client__easy_setup(nw_kube_client_t *c, CURL *h, const char *url_path);

/** Drop the cached token so the next request re-reads it (after a 401). */
void nw_kube_client__token_invalidate(nw_kube_client_t *c);

/** Take a rate-limiter token; returns the nanoseconds to wait before using it. */
int64_t nw_kube_client__rl_reserve(nw_kube_client_t *c);

/** Fill reason/message from a Status body (or the raw text). */
void nw_kube_client__resp_parse_status(nw_kube_resp_t *r);

#endif
