/* server/https.c — libmicrohttpd HTTPS server for the webhook (see https.h). */
#include "server/https.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/log.h"
#include "server/certs.h"
#include "server/conns.h"
#include "server/sizing.h"
#include "config/config.h"

struct nw_https {
    nw_https_opts_t o;
    struct MHD_Daemon *d;
    int listen_fd;
    unsigned port;
    struct MHD_Daemon *md; /* plain HTTP GET /metrics (metrics.listen); NULL: none */
    unsigned metrics_port;
    unsigned threads;
    unsigned idle_secs;
    _Atomic int draining;
    _Atomic int64_t inflight;
    _Atomic int64_t body_bytes; /* reserved by requests in flight (max_inflight_body) */
    nw_conns_t *conns;          /* every open connection: states, cap, header deadlines */
    unsigned cap;               /* connections held at once (server/sizing.h) */
    unsigned mhd_limit;         /* libmicrohttpd's own cap: above ours, so it keeps accepting */
};

/* Body size from which a request's end returns free heap memory to the system. */
#define TRIM_AFTER_BYTES ((size_t)1 << 20)

/* Each connection's buffer for the request line, headers and body chunks, and the
 * response headers. libmicrohttpd zeroes it after every request, so its default
 * (32 KiB) costs a 32 KiB memset per review. A kube-apiserver's headers take well
 * under 1 KiB and bodies are copied out chunk by chunk; with 16 KiB a header block
 * of 12 KiB is still answered, one of 20 KiB gets 431. */
#define CONN_MEMORY_BYTES ((size_t)16 << 10)

/* Per-request state, created on the first callback, freed in on_completed. */
typedef struct {
    nw_route_t route;
    int64_t start_ns;
    int64_t deadline_ns;
    nw_buf_t body;
    size_t seen; /* body bytes received (kept or not) */
    int too_large;
    int done;        /* a response has been queued */
    int over_budget; /* the global body budget ran out while receiving */
    size_t reserved; /* bytes of s->body_bytes held by this request */
    int timeout_set; /* per-connection timeout changed for this request */
} req_t;

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * NW_NS_PER_SEC + ts.tv_nsec;
}

static nw_route_t route_of(const char *url, int metrics_here)
{
    static const struct {
        const char *p;
        nw_route_t r;
        int prefix; /* also "/p/..." */
    } t[] = {{"/validate", NW_ROUTE_VALIDATE, 1},
             {"/mutate", NW_ROUTE_MUTATE, 1},
             {"/healthz", NW_ROUTE_HEALTHZ, 0},
             {"/readyz", NW_ROUTE_READYZ, 0},
             {"/metrics", NW_ROUTE_METRICS, 0}};
    /* /metrics is on its own port (metrics.listen) unless that is off */
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        size_t n = strlen(t[i].p);
        if (t[i].r == NW_ROUTE_METRICS && !metrics_here)
            continue;
        if (strncmp(url, t[i].p, n) == 0 &&
            (url[n] == '\0' || (t[i].prefix && url[n] == '/' && url[n + 1] != '\0')))
            return t[i].r;
    }
    return NW_ROUTE_OTHER;
}

static bool is_admission(nw_route_t r)
{
    return r == NW_ROUTE_VALIDATE || r == NW_ROUTE_MUTATE;
}

/* Queue a response; body is malloc'd and handed over (may be NULL for empty). */
/* The metrics page as a malloc'd body (*len its length), or NULL when it cannot be
 * rendered. Both ports serve it. */
static char *render_metrics(nw_https_t *s, size_t *len)
{
    /* Karpenter's per-pod and per-node gauges make the page grow with the cluster: about
     * 300 bytes a pod (karpenter_pods_state) and 2 KiB a node, so 40 MiB at 100,000 pods.
     * The cap only guards against a runaway; a page is rendered per scrape and freed. */
    nw_buf_t b;
    nw_buf_init(&b, 256u << 20);
    *len = 0;
    char *body = NULL;
    if (nw_server_metrics_render(s->o.metrics, &b) == NW_OK) {
        *len = b.len;
        body = nw_buf_take(&b);
    }
    nw_buf_cleanup(&b);
    return body;
}

static enum MHD_Result respond(nw_https_t *s, struct MHD_Connection *c, req_t *r, int code,
                               const char *ctype, char *body, size_t len, const char *allow)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(
        len, body ? body : (char *)"", body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!resp) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    if (allow)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, allow);
    if (atomic_load_explicit(&s->draining, memory_order_relaxed))
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)code, resp);
    MHD_destroy_response(resp);
    if (ok == MHD_YES) {
        r->done = 1;
        nw_server_metrics_http(s->o.metrics, r->route, code);
    }
    return ok;
}

/* A JSON metav1 Status error; logged with the reason. */
static enum MHD_Result respond_status(nw_https_t *s, struct MHD_Connection *c, req_t *r, int code,
                                      const char *reason, const char *msg, const char *allow,
                                      const char *method, const char *url)
{
    nw_buf_t b;
    nw_buf_init(&b, 64 * 1024);
    if (nw_review_status_json(&b, code, reason, msg) != NW_OK) {
        nw_buf_cleanup(&b);
        return MHD_NO;
    }
    size_t len = b.len;
    char *body = nw_buf_take(&b);
    nw_buf_cleanup(&b);
    if (!body)
        return MHD_NO;
    nw_log_every(1, NW_LOG_INFO, "webhook", "request rejected",
                 NW_LS("route", nw_server_metrics_route_str(r->route)),
                 NW_LS("method", method ? method : ""), NW_LS("path", url ? url : ""),
                 NW_LI("status", code), NW_LS("reason", msg));
    return respond(s, c, r, code, "application/json", body, len, allow);
}

static bool content_type_json(struct MHD_Connection *c)
{
    const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    if (!ct)
        return false;
    while (*ct == ' ' || *ct == '\t')
        ct++;
    static const char want[] = "application/json";
    if (strncasecmp(ct, want, sizeof want - 1) != 0)
        return false;
    char n = ct[sizeof want - 1];
    return n == '\0' || n == ';' || n == ' ' || n == '\t';
}

/* ?timeout= as the apiserver sends it ("10s"), leniently: any Go duration, or
 * a bare number of seconds. Returns 0 if absent or unusable. */
static int64_t query_timeout_ns(struct MHD_Connection *c)
{
    const char *t = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "timeout");
    if (!t || !*t)
        return 0;
    int64_t ns = 0;
    if (nw_config_parse_duration(t, &ns) != NW_OK) {
        char *end = NULL;
        double secs = strtod(t, &end);
        if (end == t || *end || !(secs > 0) || secs > 86400)
            return 0;
        ns = (int64_t)(secs * 1e9);
    }
    return ns > 0 ? ns : 0;
}

static void set_conn_timeout(struct MHD_Connection *c, int64_t ns)
{
    unsigned secs = (unsigned)((ns + NW_NS_PER_SEC - 1) / NW_NS_PER_SEC);
    MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, secs ? secs : 1u);
}

/* Reserve n more body bytes from the global budget; 0 if it would be exceeded. */
static bool budget_take(nw_https_t *s, req_t *r, size_t n)
{
    if (!s->o.max_inflight_body)
        return true;
    int64_t was = atomic_fetch_add(&s->body_bytes, (int64_t)n);
    if (was + (int64_t)n > (int64_t)s->o.max_inflight_body) {
        atomic_fetch_sub(&s->body_bytes, (int64_t)n);
        return false;
    }
    r->reserved += n;
    return true;
}

static enum MHD_Result respond_busy(nw_https_t *s, struct MHD_Connection *c, req_t *r,
                                    const char *method, const char *url)
{
    char msg[200];
    snprintf(msg, sizeof msg,
             "the webhook holds its budget of %zu request body bytes already "
             "(webhook.maxInflightBodyBytes); retry",
             s->o.max_inflight_body);
    return respond_status(s, c, r, 503, "ServiceUnavailable", msg, NULL, method, url);
}

/* Move the connection c's entry in the table to state st. */
static void conn_state(nw_https_t *s, struct MHD_Connection *c, nw_conn_state_t st)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    nw_conns_set(s->conns, ci ? ci->socket_context : NULL, st, mono_ns());
}

/* libmicrohttpd accepted a connection (enter it in the table, which may shut down an
 * older one at the cap) or is about to close one (before it closes the socket). */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    nw_https_t *s = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        *socket_context = ci ? nw_conns_open(s->conns, ci->connect_fd, mono_ns()) : NULL;
        return;
    }
    nw_conns_closed(s->conns, *socket_context);
    *socket_context = NULL;
}

/* First callback: headers are in. Route, method, content type, size, deadline. */
static enum MHD_Result begin(nw_https_t *s, struct MHD_Connection *c, req_t *r, const char *url,
                             const char *method)
{
    char msg[256];
    if (r->route == NW_ROUTE_OTHER) {
        snprintf(msg, sizeof msg,
                 "no such path %.100s; the webhook serves POST /validate, POST /mutate, "
                 "GET /healthz, GET /readyz%s",
                 url,
                 s->md ? " (GET /metrics on the metrics port, metrics.listen)" : ", GET /metrics");
        return respond_status(s, c, r, 404, "NotFound", msg, NULL, method, url);
    }
    if (is_admission(r->route)) {
        if (strcmp(method, "POST") != 0) {
            snprintf(msg, sizeof msg, "method %.20s not allowed on %.100s; use POST", method, url);
            return respond_status(s, c, r, 405, "MethodNotAllowed", msg, "POST", method, url);
        }
        if (!content_type_json(c)) {
            const char *ct =
                MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
            snprintf(msg, sizeof msg,
                     "Content-Type %s%.80s%s is not supported; send application/json",
                     ct ? "\"" : "", ct ? ct : "(none)", ct ? "\"" : "");
            return respond_status(s, c, r, 415, "UnsupportedMediaType", msg, NULL, method, url);
        }
        const char *cl =
            MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl) {
            char *end = NULL;
            errno = 0;
            unsigned long long n = strtoull(cl, &end, 10);
            if (end != cl && (errno == ERANGE || n > s->o.max_body)) {
                snprintf(msg, sizeof msg,
                         "request body of %.30s bytes exceeds the limit of %zu bytes "
                         "(webhook.maxBodyBytes)",
                         cl, s->o.max_body);
                return respond_status(s, c, r, 413, "RequestEntityTooLarge", msg, NULL, method,
                                      url);
            }
            if (end != cl && n && !budget_take(s, r, (size_t)n))
                return respond_busy(s, c, r, method, url);
        }
        int64_t budget = s->o.request_timeout_ns;
        int64_t qt = query_timeout_ns(c);
        if (qt > 0 && qt < budget)
            budget = qt;
        r->deadline_ns = r->start_ns + budget;
        set_conn_timeout(c, budget);
        r->timeout_set = 1;
        return MHD_YES;
    }
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        snprintf(msg, sizeof msg, "method %.20s not allowed on %.100s; use GET", method, url);
        return respond_status(s, c, r, 405, "MethodNotAllowed", msg, "GET, HEAD", method, url);
    }
    if (r->route == NW_ROUTE_HEALTHZ) {
        char *b = strdup("{\"status\":\"ok\"}");
        return respond(s, c, r, 200, "application/json", b, b ? strlen(b) : 0, NULL);
    }
    if (r->route == NW_ROUTE_READYZ) {
        /* ready = the webhook can answer; a scaler that could not start does not make the
         * webhook unready (its endpoints would go, and with them every admission), it is
         * said in "scaler" */
        int ready = nw_certs_ready() && !atomic_load(&s->draining);
        nw_buf_t b;
        nw_buf_init(&b, 4096);
        nw_rc_t rc =
            nw_buf_adds(&b, ready                       ? "{\"status\":\"ok\""
                            : atomic_load(&s->draining) ? "{\"status\":\"shutting down\""
                                                        : "{\"status\":\"no certificate loaded\"");
        const nw_metrics_t *m = s->o.metrics;
        if (rc == NW_OK && m->scaler > 0)
            rc = nw_buf_adds(&b, ",\"scaler\":\"running\"");
        else if (rc == NW_OK && m->scaler < 0 &&
                 (rc = nw_buf_adds(&b, ",\"scaler\":\"not running: ")) == NW_OK &&
                 (rc = nw_buf_add_json_escaped(&b, m->scaler_error)) == NW_OK)
            rc = nw_buf_adds(&b, "\"");
        if (rc == NW_OK)
            rc = nw_buf_adds(&b, "}");
        size_t len = b.len;
        char *body = rc == NW_OK ? nw_buf_take(&b) : NULL;
        nw_buf_cleanup(&b);
        return respond(s, c, r, ready ? 200 : 503, "application/json", body, body ? len : 0, NULL);
    }
    /* metrics */
    size_t len = 0;
    char *body = render_metrics(s, &len);
    if (!body)
        return MHD_NO;
    return respond(s, c, r, 200, "text/plain; version=0.0.4; charset=utf-8", body, len, NULL);
}

/* Body complete: run the admission path. */
static enum MHD_Result admit(nw_https_t *s, struct MHD_Connection *c, req_t *r, const char *url,
                             const char *method)
{
    char msg[160];
    if (r->over_budget)
        return respond_busy(s, c, r, method, url);
    if (r->too_large) {
        snprintf(msg, sizeof msg,
                 "request body exceeds the limit of %zu bytes (webhook.maxBodyBytes)",
                 s->o.max_body);
        return respond_status(s, c, r, 413, "RequestEntityTooLarge", msg, NULL, method, url);
    }
    int64_t now = mono_ns();
    if (now > r->deadline_ns) {
        atomic_fetch_add(&s->o.metrics->aborted, 1);
        return respond_status(s, c, r, 504, "Timeout",
                              "the request's time budget (?timeout= or webhook.requestTimeout) "
                              "ran out before its body arrived",
                              NULL, method, url);
    }
    bool mutate = r->route == NW_ROUTE_MUTATE;
    nw_review_out_t out;
    nw_admit_deadline_set(r->deadline_ns); /* the rules stop early once it has passed */
    nw_rc_t rc = nw_review_handle(s->o.admit_ctx, s->o.lookup, mutate, nw_buf_str(&r->body),
                                  r->body.len, &out);
    nw_admit_deadline_set(0);
    if (rc == NW_OK && out.status == 504)
        atomic_fetch_add(&s->o.metrics->aborted, 1);
    if (rc != NW_OK) {
        nw_review_out_cleanup(&out);
        return respond_status(s, c, r, 500, "InternalError", "out of memory", NULL, method, url);
    }
    int64_t lat = mono_ns() - r->start_ns;
    nw_server_metrics_admission(s->o.metrics, r->route, out.kind, out.verdict, lat);
    /* A review that changed nothing is routine (the pod webhook sees every pod):
     * debug. One that patched or denied an object, or failed, is worth a line. */
    nw_log_level_t lvl = out.status != 200                       ? NW_LOG_WARN
                         : out.verdict == NW_SRV_VERDICT_ALLOWED ? NW_LOG_DEBUG
                                                                 : NW_LOG_INFO;
    nw_log(lvl, "webhook", "admission", NW_LS("route", nw_server_metrics_route_str(r->route)),
           NW_LS("uid", out.uid), NW_LS("kind", out.kind), NW_LS("name", out.name),
           NW_LS("operation", out.op), NW_LS("verdict", nw_review_verdict_str(out.verdict)),
           NW_LI("status", out.status), NW_LF("latency_ms", (double)lat / 1e6),
           NW_LS("reason", out.why));
    char *body = out.body;
    size_t len = out.body_len;
    out.body = NULL;
    return respond(s, c, r, out.status, "application/json", body, len, NULL);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    (void)version;
    nw_https_t *s = cls;
    req_t *r = *con_cls;
    if (!r) {
        r = calloc(1, sizeof *r);
        if (!r)
            return MHD_NO;
        *con_cls = r;
        r->start_ns = mono_ns();
        r->route = route_of(url, !s->md);
        nw_buf_init(&r->body, s->o.max_body);
        atomic_fetch_add(&s->inflight, 1);
        atomic_fetch_add_explicit(&s->o.metrics->inflight, 1, memory_order_relaxed);
        enum MHD_Result ret = begin(s, c, r, url, method);
        /* headers are in: a body may follow (admission), or the answer is queued */
        conn_state(s, c, is_admission(r->route) ? NW_CONN_BODY : NW_CONN_BUSY);
        return ret;
    }
    if (r->done) { /* answered early; ignore any body */
        if (!*upload_data_size)
            conn_state(s, c, NW_CONN_BUSY);
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (mono_ns() > r->deadline_ns) {
            atomic_fetch_add(&s->o.metrics->aborted, 1);
            nw_log_every(1, NW_LOG_WARN, "webhook", "request deadline passed while receiving body",
                         NW_LS("route", nw_server_metrics_route_str(r->route)),
                         NW_LI("received", r->seen));
            return MHD_NO; /* the caller stopped waiting; drop the connection */
        }
        r->seen += n;
        if (!r->too_large && !r->over_budget && r->seen > r->reserved &&
            !budget_take(s, r, r->seen - r->reserved)) {
            r->over_budget = 1; /* more than Content-Length said, or chunked */
            nw_buf_cleanup(&r->body);
            if (respond_busy(s, c, r, method, url) == MHD_YES)
                return MHD_YES;
        }
        if (r->over_budget) {
            if (r->seen > 2 * s->o.max_body) {
                atomic_fetch_add(&s->o.metrics->aborted, 1);
                return MHD_NO;
            }
            return MHD_YES;
        }
        if (!r->too_large && nw_buf_add(&r->body, upload_data, n) != NW_OK) {
            r->too_large = 1;
            nw_buf_cleanup(&r->body);
            /* answer now if this libmicrohttpd allows it mid-body */
            char msg[160];
            snprintf(msg, sizeof msg,
                     "request body exceeds the limit of %zu bytes (webhook.maxBodyBytes)",
                     s->o.max_body);
            if (respond_status(s, c, r, 413, "RequestEntityTooLarge", msg, NULL, method, url) ==
                MHD_YES)
                return MHD_YES;
        }
        if (r->too_large && r->seen > 2 * s->o.max_body) {
            atomic_fetch_add(&s->o.metrics->aborted, 1);
            return MHD_NO; /* far over the limit: stop reading, close */
        }
        return MHD_YES;
    }
    if (is_admission(r->route)) {
        conn_state(s, c, NW_CONN_BUSY); /* the whole request is in */
        return admit(s, c, r, url, method);
    }
    return MHD_YES; /* GET routes answered in begin() */
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    nw_https_t *s = cls;
    req_t *r = *con_cls;
    if (!r)
        return;
    *con_cls = NULL;
    if (r->timeout_set && toe == MHD_REQUEST_TERMINATED_COMPLETED_OK && !atomic_load(&s->draining))
        MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, s->idle_secs);
    /* keep-alive: the next request's headers must come within idle + header timeout */
    conn_state(s, c, NW_CONN_IDLE);
    if (r->reserved)
        atomic_fetch_sub(&s->body_bytes, (int64_t)r->reserved);
    bool big = r->seen >= TRIM_AFTER_BYTES;
    nw_buf_cleanup(&r->body);
    free(r);
    /* A big review leaves the heap of this thread (and the arena chunks freed with it)
     * grown by many times its size; hand the free pages back at once, or the resident
     * set stays at its peak for good. Only after big bodies: a trim walks every heap. */
    if (big)
        malloc_trim(0);
    atomic_fetch_sub_explicit(&s->o.metrics->inflight, 1, memory_order_relaxed);
    atomic_fetch_sub(&s->inflight, 1);
}

__attribute__((format(printf, 2, 0))) static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    size_t n = strlen(line);
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        line[--n] = '\0';
    nw_log_every(5, NW_LOG_WARN, "mhd", "libmicrohttpd", NW_LS("detail", line));
}

static NW_MUST_USE nw_rc_t open_listener(const char *key, const char *listen_addr, int *fd_out,
                                         unsigned *port_out, nw_err_t *err)
{
    char host[256];
    const char *colon = strrchr(listen_addr, ':');
    if (!colon || (size_t)(colon - listen_addr) >= sizeof host)
        return nw_err_set(err, NW_EINVAL, key, "%s: bad address \"%s\"", key, listen_addr);
    memcpy(host, listen_addr, (size_t)(colon - listen_addr));
    host[colon - listen_addr] = '\0';
    char *h = host;
    size_t hl = strlen(h);
    if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
        h[hl - 1] = '\0';
        h++;
    }
    struct addrinfo hints = {0}, *ai = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    int g = getaddrinfo(*h ? h : NULL, colon + 1, &hints, &ai);
    if (g != 0)
        return nw_err_set(err, NW_EINVAL, key, "%s: %s: %s", key, listen_addr, gai_strerror(g));
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, SOMAXCONN) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        freeaddrinfo(ai);
        return nw_err_set(err, NW_EIO, key, "%s: listen on %s: %s", key, listen_addr, strerror(e));
    }
    freeaddrinfo(ai);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    unsigned port = 0;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
        port = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                                        : ntohs(((struct sockaddr_in *)&ss)->sin_port);
    *fd_out = fd;
    *port_out = port;
    return NW_OK;
}

static NW_MUST_USE nw_rc_t metrics_start(nw_https_t *s, const char *addr, nw_err_t *err);

/* The connection cap (server/sizing.h), the table that keeps it and its sweeper. Our
 * cap is the table's: libmicrohttpd's is set above it (it would otherwise stop
 * accepting at the cap, and a new client would wait in the listen queue until some
 * connection timed out), and the table shuts down a connection for each one past
 * ours. libmicrohttpd splits its cap among its threads; the margin keeps at least one
 * thread accepting while shut-down connections are still being closed. */
static NW_MUST_USE nw_rc_t conns_start(nw_https_t *s)
{
    const nw_https_opts_t *o = &s->o;
    const char *memsrc = "";
    uint64_t mem = nw_sizing_memory_limit("", 0, &memsrc);
    uint64_t fds = nw_sizing_nofile();
    unsigned pct = o->conn_memory_percent ? o->conn_memory_percent : 25;
    nw_sizing_bound_t bound;
    s->cap = nw_sizing_cap(o->max_conns, mem, pct, fds, &bound);
    unsigned margin = s->cap / 8;
    margin = margin < 16 ? 16 : margin > 192 ? 192 : margin;
    s->mhd_limit = s->cap + margin;
    nw_conns_opts_t co = {.cap = s->cap,
                          .header_timeout_ns = o->header_timeout_ns,
                          .busy_header_timeout_ns = o->busy_header_timeout_ns,
                          .idle_timeout_ns = (int64_t)s->idle_secs * NW_NS_PER_SEC,
                          .metrics = o->metrics};
    if (!(s->conns = nw_conns_new(&co)))
        return NW_ENOMEM;
    if ((o->header_timeout_ns || o->busy_header_timeout_ns) &&
        nw_conns_sweeper_start(s->conns) != NW_OK)
        nw_log_warn("webhook", "cannot start the header-deadline sweeper; relying on "
                               "webhook.idleTimeout");
    nw_log_info("webhook", "connection cap", NW_LI("maxConnections", s->cap),
                NW_LS("decidedBy", nw_sizing_bound_str(bound)), NW_LI("memoryLimit", mem),
                NW_LS("memoryLimitFrom", memsrc), NW_LI("connectionMemoryPercent", pct),
                NW_LI("bytesPerConnection", NW_SIZING_CONN_BYTES),
                NW_LI("descriptorLimit", fds > (uint64_t)INT64_MAX ? -1 : (long long)fds));
    return NW_OK;
}

nw_rc_t nw_https_start(const nw_https_opts_t *opts, nw_https_t **out, nw_err_t *err)
{
    *out = NULL;
    if (!nw_certs_ready())
        return nw_err_set(err, NW_EINVAL, "", "no certificate loaded");
    /* glibc raises its mmap threshold to the size of each big block freed (up to 32 MiB),
     * and its trim threshold to twice that: after one 7 MiB review every later big
     * block came from the heap, whose top was then never given back (RSS stayed at the
     * peak). Fixed thresholds (glibc's defaults) keep big blocks in mmap, returned on
     * free, and heaps trimmed above 128 KiB of free top. */
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
    mallopt(M_TRIM_THRESHOLD, 128 * 1024);
    nw_https_t *s = calloc(1, sizeof *s);
    if (!s)
        return NW_ENOMEM;
    s->o = *opts;
    s->threads = opts->threads;
    if (!s->threads) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        s->threads = n > 0 ? (unsigned)n : 1;
    }
    int64_t idle = opts->idle_timeout_ns > 0 ? opts->idle_timeout_ns : 120 * NW_NS_PER_SEC;
    s->idle_secs = (unsigned)((idle + NW_NS_PER_SEC - 1) / NW_NS_PER_SEC);
    nw_rc_t rc = open_listener("webhook.listen", opts->listen, &s->listen_fd, &s->port, err);
    if (rc != NW_OK) {
        free(s);
        return rc;
    }
    if ((rc = conns_start(s)) != NW_OK) {
        close(s->listen_fd);
        free(s);
        return nw_err_set(err, rc, "", "cannot set up the connection table: %s", nw_err_rc_str(rc));
    }
    unsigned flags = MHD_USE_TLS | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ITC |
                     MHD_USE_ERROR_LOG;
    s->d = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, s,
        MHD_OPTION_LISTEN_SOCKET, s->listen_fd, MHD_OPTION_HTTPS_CERT_CALLBACK, nw_certs_retrieve,
        MHD_OPTION_HTTPS_PRIORITIES, NW_HTTPS_PRIORITIES, MHD_OPTION_THREAD_POOL_SIZE, s->threads,
        MHD_OPTION_CONNECTION_TIMEOUT, s->idle_secs, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, s, MHD_OPTION_CONNECTION_LIMIT, s->mhd_limit,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, opts->max_conns_per_ip,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, CONN_MEMORY_BYTES, MHD_OPTION_END);
    if (!s->d) {
        close(s->listen_fd);
        nw_conns_free(s->conns);
        free(s);
        return nw_err_set(err, NW_EIO, "", "libmicrohttpd failed to start on %s (see log)",
                          opts->listen);
    }
    if (opts->metrics_listen && *opts->metrics_listen &&
        (rc = metrics_start(s, opts->metrics_listen, err)) != NW_OK) {
        s->o.shutdown_grace_ns = 1;
        nw_https_stop(s);
        return rc;
    }
    nw_log_info("webhook", "listening", NW_LS("addr", opts->listen), NW_LI("port", s->port),
                NW_LI("threads", s->threads), NW_LI("maxBodyBytes", opts->max_body),
                NW_LI("idleTimeoutSec", s->idle_secs), NW_LI("maxConnections", s->cap),
                NW_LI("maxConnectionsPerClient", opts->max_conns_per_ip),
                NW_LF("headerTimeoutSec", (double)opts->header_timeout_ns / 1e9),
                NW_LF("busyHeaderTimeoutSec", (double)opts->busy_header_timeout_ns / 1e9),
                NW_LI("maxInflightBodyBytes", opts->max_inflight_body),
                NW_LF("requestTimeoutSec", (double)opts->request_timeout_ns / 1e9));
    *out = s;
    return NW_OK;
}

/* ---- the metrics port: plain HTTP, GET /metrics only ---------------------------- */

static enum MHD_Result metrics_reply(struct MHD_Connection *c, int code, const char *ctype,
                                     char *body, size_t len)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)code, resp);
    MHD_destroy_response(resp);
    return ret;
}

static enum MHD_Result on_metrics(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    (void)version;
    (void)upload_data;
    nw_https_t *s = cls;
    if (!*con_cls) { /* first call: headers only; answer once any body has been read */
        *con_cls = s;
        return MHD_YES;
    }
    if (*upload_data_size) {
        *upload_data_size = 0; /* no body is wanted; drop it */
        return MHD_YES;
    }
    bool get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    if (strcmp(url, "/metrics") != 0 || !get) {
        nw_server_metrics_http(s->o.metrics, NW_ROUTE_OTHER, get ? 404 : 405);
        char *b = strdup(get ? "not found: this port serves GET /metrics only\n"
                             : "method not allowed: this port serves GET /metrics only\n");
        return b ? metrics_reply(c, get ? 404 : 405, "text/plain; charset=utf-8", b, strlen(b))
                 : MHD_NO;
    }
    size_t len = 0;
    char *body = render_metrics(s, &len);
    if (!body)
        return MHD_NO;
    nw_server_metrics_http(s->o.metrics, NW_ROUTE_METRICS, 200);
    return metrics_reply(c, 200, "text/plain; version=0.0.4; charset=utf-8", body, len);
}

static NW_MUST_USE nw_rc_t metrics_start(nw_https_t *s, const char *addr, nw_err_t *err)
{
    int fd;
    nw_rc_t rc = open_listener("metrics.listen", addr, &fd, &s->metrics_port, err);
    if (rc != NW_OK)
        return rc;
    /* one thread, few connections (scrapers), a short idle timeout */
    s->md = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG, 0,
                             NULL, NULL, on_metrics, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, s,
                             MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_LIMIT, 64,
                             MHD_OPTION_PER_IP_CONNECTION_LIMIT, 16, MHD_OPTION_CONNECTION_TIMEOUT,
                             30, MHD_OPTION_END);
    if (!s->md) {
        close(fd);
        return nw_err_set(err, NW_EIO, "metrics.listen",
                          "metrics.listen: libmicrohttpd failed to start on %s (see log)", addr);
    }
    nw_log_info("metrics", "metrics listening", NW_LS("addr", addr),
                NW_LI("port", s->metrics_port));
    return NW_OK;
}

unsigned nw_https_metrics_port(const nw_https_t *s)
{
    return s->metrics_port;
}

unsigned nw_https_port(const nw_https_t *s)
{
    return s->port;
}

unsigned nw_https_threads(const nw_https_t *s)
{
    return s->threads;
}

void nw_https_stop(nw_https_t *s)
{
    if (!s)
        return;
    atomic_store(&s->draining, 1);
    /* The listening socket is ours once quiesced, but libmicrohttpd's threads may still use
     * it until MHD_stop_daemon returns (its manual says so), so it is closed only then: a
     * descriptor closed earlier could be reused under them. shutdown() ends the listening
     * now (Linux resets new and queued connections), so clients are refused at once and
     * go to another replica while the requests in flight finish. */
    MHD_socket fd = MHD_quiesce_daemon(s->d);
    if (fd != MHD_INVALID_SOCKET)
        (void)shutdown(fd, SHUT_RDWR);
    int64_t grace = s->o.shutdown_grace_ns > 0 ? s->o.shutdown_grace_ns : 15 * NW_NS_PER_SEC;
    int64_t until = mono_ns() + grace;
    int64_t left = atomic_load(&s->inflight);
    nw_log_info("webhook", "draining", NW_LI("inflight", left));
    while ((left = atomic_load(&s->inflight)) > 0 && mono_ns() < until) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (left > 0)
        nw_log_warn("webhook", "shutdown grace expired with requests in flight",
                    NW_LI("inflight", left));
    nw_conns_sweeper_stop(s->conns);
    MHD_stop_daemon(s->d); /* closes every connection: on_connection frees each entry */
    if (fd != MHD_INVALID_SOCKET)
        close(fd);
    if (s->md)
        MHD_stop_daemon(s->md);
    nw_conns_free(s->conns);
    nw_log_info("webhook", "stopped");
    free(s);
}
