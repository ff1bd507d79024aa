/* server/metrics.c — atomics-based counters, Prometheus text exposition. */
#include "server/metrics.h"

#include <stdio.h>
#include <string.h>

static const char *const route_names[NW_ROUTE_COUNT] = {"validate", "mutate",  "healthz",
                                                        "readyz",   "metrics", "other"};
static const char *const kind_names[NW_METRICS_KINDS] = {"NodePool", "EC2NodeClass", "NodeClaim",
                                                         "Pod", "other"};
/* latency upper bounds in seconds (100 us to 5 s); +Inf follows */
static const double bounds_s[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                  0.025,  0.05,    0.1,    0.25,  1,      5};
#define NBOUNDS ((int)(sizeof bounds_s / sizeof bounds_s[0]))
static const int codes[NW_METRICS_CODES - 1] = {200, 400, 404, 405, 413, 415,
                                                500, 503, 504, 408, 403};

void nw_server_metrics_init(nw_metrics_t *m)
{
    memset(m, 0, sizeof *m);
    for (int r = 0; r < 2; r++)
        nw_prom_hist_init(&m->latency[r], bounds_s, NBOUNDS);
}

const char *nw_server_metrics_route_str(nw_route_t r)
{
    return (unsigned)r < NW_ROUTE_COUNT ? route_names[r] : "other";
}

const char *nw_server_metrics_cert_err_str(nw_cert_err_t e)
{
    static const char *const names[NW_CERT_ERR_COUNT] = {
        "unreadable", "not_regular_file", "not_pem",         "key_mismatch",
        "expired",    "not_yet_valid",    "dns_name_missing"};
    return (unsigned)e < NW_CERT_ERR_COUNT ? names[e] : "other";
}

const char *nw_server_metrics_close_str(nw_conn_close_t r)
{
    static const char *const names[NW_CONN_CLOSE_COUNT] = {"header_timeout", "busy_header_timeout",
                                                           "evicted", "refused"};
    return (unsigned)r < NW_CONN_CLOSE_COUNT ? names[r] : "other";
}

static int kind_index(const char *kind)
{
    for (int i = 0; i < NW_METRICS_KINDS - 1; i++)
        if (kind && strcmp(kind, kind_names[i]) == 0)
            return i;
    return NW_METRICS_KINDS - 1;
}

void nw_server_metrics_admission(nw_metrics_t *m, nw_route_t route, const char *kind,
                                 nw_review_verdict_t verdict, int64_t latency_ns)
{
    if (route != NW_ROUTE_VALIDATE && route != NW_ROUTE_MUTATE)
        return;
    if ((unsigned)verdict >= NW_SRV_VERDICT_COUNT)
        verdict = NW_SRV_VERDICT_ERROR;
    atomic_fetch_add_explicit(&m->admission[route][kind_index(kind)][verdict], 1,
                              memory_order_relaxed);
    nw_prom_hist_observe(&m->latency[route], latency_ns);
}

void nw_server_metrics_http(nw_metrics_t *m, nw_route_t route, int code)
{
    if ((unsigned)route >= NW_ROUTE_COUNT)
        route = NW_ROUTE_OTHER;
    int i = 0;
    while (i < NW_METRICS_CODES - 1 && codes[i] != code)
        i++;
    atomic_fetch_add_explicit(&m->http[route][i], 1, memory_order_relaxed);
}

#define LOAD(x) atomic_load_explicit(&(x), memory_order_relaxed)

nw_rc_t nw_server_metrics_render(const nw_metrics_t *mc, nw_buf_t *out)
{
    nw_metrics_t *m = (nw_metrics_t *)mc; /* atomic loads need a non-const pointer */
    nw_rc_t rc;
#define F(...)                                                                                     \
    do {                                                                                           \
        if ((rc = nw_buf_addf(out, __VA_ARGS__)) != NW_OK)                                         \
            return rc;                                                                             \
    } while (0)
    F("# HELP nodewarden_admission_requests_total AdmissionReview requests by route, kind and "
      "verdict.\n# TYPE nodewarden_admission_requests_total counter\n");
    for (int r = 0; r < 2; r++)
        for (int k = 0; k < NW_METRICS_KINDS; k++)
            for (int v = 0; v < NW_SRV_VERDICT_COUNT; v++) {
                uint64_t n = LOAD(m->admission[r][k][v]);
                if (n || k < 2)
                    F("nodewarden_admission_requests_total{route=\"%s\",kind=\"%s\",verdict=\"%s\"}"
                      " %llu\n",
                      route_names[r], kind_names[k], nw_review_verdict_str((nw_review_verdict_t)v),
                      (unsigned long long)n);
            }
    for (int r = 0; r < 2; r++) {
        char label[32];
        snprintf(label, sizeof label, "route=\"%s\"", route_names[r]);
        if ((rc = nw_prom_hist_write(
                 &m->latency[r], out, "nodewarden_admission_duration_seconds",
                 r == 0 ? "Time from request headers to response, per route." : NULL, label)) !=
            NW_OK)
            return rc;
    }
    F("# HELP nodewarden_http_responses_total HTTP responses by route and status code.\n"
      "# TYPE nodewarden_http_responses_total counter\n");
    for (int r = 0; r < NW_ROUTE_COUNT; r++)
        for (int c = 0; c < NW_METRICS_CODES; c++) {
            uint64_t n = LOAD(m->http[r][c]);
            if (!n)
                continue;
            if (c < NW_METRICS_CODES - 1)
                F("nodewarden_http_responses_total{route=\"%s\",code=\"%d\"} %llu\n",
                  route_names[r], codes[c], (unsigned long long)n);
            else
                F("nodewarden_http_responses_total{route=\"%s\",code=\"other\"} %llu\n",
                  route_names[r], (unsigned long long)n);
        }
    F("# HELP nodewarden_cert_reloads_total Serving certificate (re)loads that succeeded.\n"
      "# TYPE nodewarden_cert_reloads_total counter\nnodewarden_cert_reloads_total %llu\n",
      (unsigned long long)LOAD(m->cert_reloads));
    F("# HELP nodewarden_cert_reload_failures_total Certificate/key changes that could not be "
      "loaded (the previous pair stays in use).\n"
      "# TYPE nodewarden_cert_reload_failures_total counter\n"
      "nodewarden_cert_reload_failures_total %llu\n",
      (unsigned long long)LOAD(m->cert_reload_failures));
    F("# HELP nodewarden_cert_reload_errors_total Certificate pairs refused, by reason.\n"
      "# TYPE nodewarden_cert_reload_errors_total counter\n");
    for (int e = 0; e < NW_CERT_ERR_COUNT; e++)
        F("nodewarden_cert_reload_errors_total{reason=\"%s\"} %llu\n",
          nw_server_metrics_cert_err_str((nw_cert_err_t)e),
          (unsigned long long)LOAD(m->cert_reload_errors[e]));
    F("# HELP nodewarden_cert_not_after_seconds Expiry of the served certificate (Unix time).\n"
      "# TYPE nodewarden_cert_not_after_seconds gauge\nnodewarden_cert_not_after_seconds %lld\n",
      (long long)LOAD(m->cert_not_after));
    F("# HELP nodewarden_inflight_requests Requests being received or processed.\n"
      "# TYPE nodewarden_inflight_requests gauge\nnodewarden_inflight_requests %lld\n",
      (long long)LOAD(m->inflight));
    F("# HELP nodewarden_aborted_requests_total Requests dropped without an answer (deadline "
      "passed, body far over the limit).\n# TYPE nodewarden_aborted_requests_total counter\n"
      "nodewarden_aborted_requests_total %llu\n",
      (unsigned long long)LOAD(m->aborted));
    F("# HELP nodewarden_webhook_connections Connections to the webhook's port open now (those "
      "being closed not counted).\n# TYPE nodewarden_webhook_connections gauge\n"
      "nodewarden_webhook_connections %lld\n# HELP nodewarden_webhook_max_connections The "
      "connection cap in force (webhook.maxConnections, or sized from memory when 0).\n"
      "# TYPE nodewarden_webhook_max_connections gauge\nnodewarden_webhook_max_connections "
      "%lld\n",
      (long long)LOAD(m->conns_open), (long long)LOAD(m->conns_max));
    F("# HELP nodewarden_webhook_connections_closed_total Connections the server closed, by "
      "reason.\n# TYPE nodewarden_webhook_connections_closed_total counter\n");
    for (int r = 0; r < NW_CONN_CLOSE_COUNT; r++)
        F("nodewarden_webhook_connections_closed_total{reason=\"%s\"} %llu\n",
          nw_server_metrics_close_str((nw_conn_close_t)r),
          (unsigned long long)LOAD(m->conns_closed[r]));
    if (m->scaler)
        F("# HELP nodewarden_scaler_running 1 while the scaler runs, 0 when it could not start "
          "(the webhook serves on; /readyz says why).\n# TYPE nodewarden_scaler_running gauge\n"
          "nodewarden_scaler_running %d\n",
          m->scaler > 0);
#undef F
    if (m->extra)
        return m->extra(m->extra_ud, out);
    return NW_OK;
}
