/* scaler/kube/watch.c — watch-stream parser and the list/watch engine (one curl_multi). */
#include "scaler/kube/watch.h"

#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/json.h"
#include "common/jsonarena.h"
#include "common/log.h"
#include "common/oom.h"
#include "scaler/kube/retry.h"

#define COMP "kube.watch"
#define MAX_EVENT_BYTES ((size_t)16 << 20)

/* ---- parser ----------------------------------------------------------------------- */

void nw_kube_watch_wparse_init(nw_kube_wparse_t *p, size_t max_event, nw_kube_event_fn fn, void *ud)
{
    nw_buf_init(&p->line, max_event);
    p->fn = fn;
    p->ud = ud;
    p->stopped = 0;
    p->events = 0;
    p->err[0] = '\0';
}

void nw_kube_watch_wparse_cleanup(nw_kube_wparse_t *p)
{
    nw_buf_cleanup(&p->line);
}

static bool blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n')
            return false;
    return true;
}

static NW_MUST_USE nw_rc_t deliver(nw_kube_wparse_t *p, const char *s, size_t n)
{
    if (blank(s, n))
        return NW_OK;
    /* the event's tree is parsed into the thread's arena (a pod is hundreds of values, a
     * malloc and a free each) and dropped whole after the callback; the callback runs
     * paused, so what it keeps (a decoded record, a frozen copy) comes from malloc */
    nw_jsonarena_begin();
    nw_rc_t rc = NW_OK;
    cJSON *ev = nw_kube_client_json_parse(s, n);
    nw_jsonarena_pause();
    cJSON *type = cJSON_GetObjectItemCaseSensitive(ev, "type");
    if (!ev || !cJSON_IsObject(ev)) {
        snprintf(p->err, sizeof p->err, "watch event is not a JSON object (%zu bytes)", n);
        rc = NW_EPARSE;
    } else if (!cJSON_IsString(type)) {
        snprintf(p->err, sizeof p->err, "watch event has no string field \"type\"");
        rc = NW_EPARSE;
    } else {
        cJSON *obj = cJSON_DetachItemFromObjectCaseSensitive(ev, "object");
        p->events++;
        if (p->fn(p->ud, type->valuestring, obj))
            p->stopped = 1;
    }
    cJSON_Delete(ev);
    nw_jsonarena_resume();
    nw_jsonarena_end();
    return rc;
}

nw_rc_t nw_kube_watch_wparse_feed(nw_kube_wparse_t *p, const char *data, size_t n)
{
    while (n > 0 && !p->stopped) {
        const char *nl = memchr(data, '\n', n);
        if (!nl) {
            if (nw_buf_add(&p->line, data, n) != NW_OK) {
                snprintf(p->err, sizeof p->err, "watch event larger than %zu bytes", p->line.max);
                nw_buf_reset(&p->line);
                return NW_ERANGE;
            }
            return NW_OK;
        }
        size_t seg = (size_t)(nl - data);
        nw_rc_t rc;
        if (p->line.len == 0) {
            if (seg > p->line.max) {
                snprintf(p->err, sizeof p->err, "watch event larger than %zu bytes", p->line.max);
                return NW_ERANGE;
            }
            rc = deliver(p, data, seg); /* the common case: no copy */
        } else {
            if (nw_buf_add(&p->line, data, seg) != NW_OK) {
                snprintf(p->err, sizeof p->err, "watch event larger than %zu bytes", p->line.max);
                nw_buf_reset(&p->line);
                return NW_ERANGE;
            }
            rc = deliver(p, p->line.data, p->line.len);
            nw_buf_reset(&p->line);
        }
        if (rc)
            return rc;
        data = nl + 1;
        n -= seg + 1;
    }
    return NW_OK;
}

nw_rc_t nw_kube_watch_wparse_finish(nw_kube_wparse_t *p)
{
    nw_rc_t rc = NW_OK;
    if (p->line.len && !p->stopped && !blank(p->line.data, p->line.len)) {
        rc = deliver(p, p->line.data, p->line.len);
        if (rc)
            snprintf(p->err, sizeof p->err, "watch stream ended inside an event");
    }
    nw_buf_reset(&p->line);
    return rc;
}

/* ---- engine --------------------------------------------------------------------------- */

typedef enum { W_IDLE, W_LIST, W_WATCH } wstate_t;

typedef struct {
    struct nw_kube_watch *w;
    nw_kube_kind_t kind;
    const nw_kube_res_t *res;
    wstate_t st;
    bool need_list;               /* next start is a LIST (else a WATCH from rv) */
    int64_t start_at;             /* monotonic ns; when IDLE */
    bool rl_held;                 /* IDLE: the rate limiter's token for the next start is
                                     reserved, due at start_at */
    char *rv;                     /* last seen resourceVersion */
    char *cont;                   /* continue token of the list in progress */
    nw_kube_cache_stage_t *stage; /* the pages decoded so far */
    CURL *h;
    struct curl_slist *hd;
    nw_kube_resp_t resp; /* list body, or the body of a failed watch */
    nw_kube_wparse_t parser;
    long code;
    bool relist;     /* an ERROR 410 / parse failure asked for a relist */
    int gone_reason; /* 504 ResourceVersionTooLarge seen */
    int64_t began;   /* monotonic ns the current request started */
    size_t events;   /* events in the current watch */
    nw_kube_backoff_t bo;
    int synced_once;
} watcher_t;

struct nw_kube_watch {
    nw_kube_client_t *client;
    nw_kube_cache_t *cache;
    nw_kube_metrics_t *metrics;
    nw_kube_watch_opts_t opts;
    CURLM *multi;
    pthread_t thread;
    int running;
    atomic_int stop;
    watcher_t wt[NW_KUBE_KINDS];
    pthread_mutex_t err_mu;
    char last_err[512];
    uint64_t delivered; /* watch events handed to the cache (the watch thread's) */
};

static void set_last_err(nw_kube_watch_t *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void set_last_err(nw_kube_watch_t *w, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&w->err_mu);
    vsnprintf(w->last_err, sizeof w->last_err, fmt, ap);
    pthread_mutex_unlock(&w->err_mu);
    va_end(ap);
}

void nw_kube_watch_last_error(nw_kube_watch_t *w, char *buf, size_t len)
{
    pthread_mutex_lock(&w->err_mu);
    snprintf(buf, len, "%s", w->last_err);
    pthread_mutex_unlock(&w->err_mu);
}

static int64_t now_ns(const nw_kube_watch_t *w)
{
    return nw_clock_mono(nw_kube_client_clock(w->client));
}

static void set_str(char **dst, const char *s)
{
    char *n = s ? strdup(s) : NULL;
    free(*dst);
    *dst = n;
}

/* An event arrived on a watch stream. */
static int on_event(void *ud, const char *type, cJSON *obj)
{
    watcher_t *x = ud;
    nw_kube_watch_t *w = x->w;
    x->events++;
    w->delivered++;
    nw_kube_metrics_add(w->metrics, NW_KM_WATCH_EVENTS, NULL, x->res->plural, -1, 1);
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    const char *rv =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "resourceVersion"));
    if (!strcmp(type, "ERROR")) {
        const cJSON *code = cJSON_GetObjectItemCaseSensitive(obj, "code");
        const char *reason = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(obj, "reason"));
        const char *msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(obj, "message"));
        int c = cJSON_IsNumber(code) ? code->valueint : 0;
        if (c == 410 || (reason && (!strcmp(reason, "Expired") || !strcmp(reason, "Gone")))) {
            x->relist = true;
            nw_log_info(COMP, "watch expired; relisting", NW_LS("resource", x->res->plural),
                        NW_LS("message", msg ? msg : ""));
        } else {
            x->relist = true;
            nw_log_warn(COMP, "watch error event; relisting", NW_LS("resource", x->res->plural),
                        NW_LI("code", c), NW_LS("reason", reason ? reason : ""),
                        NW_LS("message", msg ? msg : ""));
        }
        cJSON_Delete(obj);
        return 1; /* the stream ends after an ERROR */
    }
    if (rv && rv[0])
        set_str(&x->rv, rv);
    if (!strcmp(type, "ADDED") || !strcmp(type, "MODIFIED")) {
        if (nw_kube_cache_upsert(w->cache, x->kind, obj) != NW_OK)
            nw_log_every(10, NW_LOG_WARN, COMP,
                         "watch object not applied (no name, or refused by the cache)",
                         NW_LS("resource", x->res->plural));
        return 0;
    }
    if (!strcmp(type, "DELETED")) {
        if (nw_kube_cache_remove(w->cache, x->kind, obj) != NW_OK)
            nw_log_every(10, NW_LOG_WARN, COMP, "watch DELETED event not applied",
                         NW_LS("resource", x->res->plural));
    } else if (strcmp(type, "BOOKMARK") != 0) {
        nw_log_every(10, NW_LOG_WARN, COMP, "unknown watch event type ignored",
                     NW_LS("resource", x->res->plural), NW_LS("type", type));
    }
    cJSON_Delete(obj);
    return 0;
}

static size_t on_data(char *p, size_t sz, size_t n, void *ud)
{
    watcher_t *x = ud;
    size_t len = sz * n;
    if (x->code == 0)
        curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &x->code);
    if (x->st == W_WATCH && x->code == 200) {
        nw_rc_t rc = nw_kube_watch_wparse_feed(&x->parser, p, len);
        if (rc) {
            nw_log_warn(COMP, "bad watch stream; relisting", NW_LS("resource", x->res->plural),
                        NW_LS("error", x->parser.err));
            x->relist = true;
            return 0;
        }
        return x->parser.stopped ? 0 : len;
    }
    /* list body, or the error body of a watch */
    if (nw_buf_add(&x->resp.body, p, len) != NW_OK)
        return 0;
    return len;
}

static void end_transfer(watcher_t *x)
{
    if (x->h) {
        curl_multi_remove_handle(x->w->multi, x->h);
        curl_easy_cleanup(x->h);
        x->h = NULL;
    }
    curl_slist_free_all(x->hd);
    x->hd = NULL;
}

static void reset_list(watcher_t *x)
{
    nw_kube_cache_stage_free(x->stage);
    x->stage = NULL;
    free(x->cont);
    x->cont = NULL;
}

static void schedule(watcher_t *x, int64_t delay_ns, bool list)
{
    x->st = W_IDLE;
    x->need_list = list;
    x->start_at = now_ns(x->w) + (delay_ns > 0 ? delay_ns : 0);
}

static void schedule_backoff(watcher_t *x, bool list)
{
    int64_t d = nw_kube_retry_backoff_next(&x->bo, now_ns(x->w));
    schedule(x, d, list);
}

static int start(watcher_t *x)
{
    nw_kube_watch_t *w = x->w;
    nw_buf_t path;
    nw_buf_init(&path, 16384);
    nw_rc_t rc = nw_kube_client_path(&path, x->res, NULL, NULL, NULL);
    const char *ls = w->opts.label_selector[x->kind], *fs = w->opts.field_selector[x->kind];
    bool watch = !x->need_list;
    int timeout_s = 0;
    if (watch) {
        int span = w->opts.timeout_max_s - w->opts.timeout_min_s;
        timeout_s = w->opts.timeout_min_s +
                    (span > 0 ? (int)(nw_kube_retry_backoff_rand(&x->bo) * (span + 1)) : 0);
        char ts[16];
        snprintf(ts, sizeof ts, "%d", timeout_s);
        if (!rc)
            rc = nw_kube_client_query(&path, "watch", "1");
        if (!rc)
            rc = nw_kube_client_query(&path, "resourceVersion", x->rv ? x->rv : "");
        if (!rc)
            rc = nw_kube_client_query(&path, "allowWatchBookmarks", "true");
        if (!rc)
            rc = nw_kube_client_query(&path, "timeoutSeconds", ts);
    } else {
        char lim[16];
        snprintf(lim, sizeof lim, "%d", w->opts.page_limit);
        if (!rc)
            rc = nw_kube_client_query(&path, "limit", lim);
        if (!rc && x->cont)
            rc = nw_kube_client_query(&path, "continue", x->cont);
    }
    if (!rc && ls && ls[0])
        rc = nw_kube_client_query(&path, "labelSelector", ls);
    if (!rc && fs && fs[0])
        rc = nw_kube_client_query(&path, "fieldSelector", fs);
    if (rc) {
        nw_buf_cleanup(&path);
        return -1;
    }
    x->h = curl_easy_init();
    x->hd = x->h ? nw_kube_client__easy_setup(w->client, x->h, nw_buf_str(&path)) : NULL;
    nw_buf_cleanup(&path);
    if (!x->h || !x->hd) {
        end_transfer(x);
        return -1;
    }
    nw_buf_reset(&x->resp.body);
    x->resp.code = 0;
    x->resp.retry_after_s = -1;
    x->code = 0;
    x->relist = false;
    x->events = 0;
    x->began = now_ns(w);
    curl_easy_setopt(x->h, CURLOPT_HTTPHEADER, x->hd);
    curl_easy_setopt(x->h, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(x->h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(x->h, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(x->h, CURLOPT_PRIVATE, x);
    if (watch) {
        /* one connection per stream: a stalled stream cannot block another */
        curl_easy_setopt(x->h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
        curl_easy_setopt(x->h, CURLOPT_TIMEOUT_MS, (long)(timeout_s + 30) * 1000L);
        nw_kube_watch_wparse_cleanup(&x->parser);
        nw_kube_watch_wparse_init(&x->parser, MAX_EVENT_BYTES, on_event, x);
        x->st = W_WATCH;
    } else {
        const nw_kube_client_opts_t *co = nw_kube_client_opts(w->client);
        curl_easy_setopt(x->h, CURLOPT_HTTP_VERSION,
                         co->http1_only ? (long)CURL_HTTP_VERSION_1_1
                                        : (long)CURL_HTTP_VERSION_2TLS);
        curl_easy_setopt(x->h, CURLOPT_TIMEOUT_MS, (long)co->timeout_ms);
        x->st = W_LIST;
    }
    if (curl_multi_add_handle(w->multi, x->h) != CURLM_OK) {
        end_transfer(x);
        return -1;
    }
    return 0;
}

/* A list whose pages needed a buffer this large returns its memory when it commits. */
#define TRIM_AFTER_LIST_BYTES ((size_t)1 << 20)

/* A long list's pages, parsed and freed, left the heap holding their peak (tens of MB at
 * 100,000 pods) and the page buffer its largest page: give both back, or the process
 * keeps them for its whole life. */
static void release_list_memory(watcher_t *x)
{
    if (x->resp.body.cap < TRIM_AFTER_LIST_BYTES)
        return;
    size_t max = x->resp.body.max;
    nw_buf_cleanup(&x->resp.body);
    nw_buf_init(&x->resp.body, max);
    malloc_trim(0);
}

/* A list page answered 200: stage its items; after the last page, commit the relist and
 * start the watch. doc: the page (its tree may be the arena's; nothing of it is kept). */
static void list_page(watcher_t *x, cJSON *doc)
{
    nw_kube_watch_t *w = x->w;
    const char *plural = x->res->plural;
    cJSON *items = cJSON_DetachItemFromObjectCaseSensitive(doc, "items");
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(doc, "metadata");
    const char *cont = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "continue"));
    const char *rv =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "resourceVersion"));
    if (!doc || (items && !cJSON_IsArray(items) && !cJSON_IsNull(items))) {
        cJSON_Delete(items);
        cJSON_Delete(doc);
        set_last_err(w, "list %s: response is not a list", plural);
        nw_log_warn(COMP, "list response is not a list", NW_LS("resource", plural));
        reset_list(x);
        schedule_backoff(x, true);
        return;
    }
    if (!x->stage) {
        if (!(x->stage = nw_kube_cache_stage_new(w->cache, x->kind)))
            nw_oom("a relist");
        /* all pages share the first page's resourceVersion */
        set_str(&x->rv, rv);
    }
    /* decoded now: a long list holds one page as JSON, never all of them */
    (void)nw_kube_cache_stage_add(x->stage, cJSON_IsArray(items) ? items : NULL);
    if (!cJSON_IsArray(items))
        cJSON_Delete(items);
    if (cont && cont[0]) {
        set_str(&x->cont, cont);
        cJSON_Delete(doc);
        schedule(x, 0, true);
        return;
    }
    cJSON_Delete(doc);
    free(x->cont);
    x->cont = NULL;
    size_t n = nw_kube_cache_stage_count(x->stage);
    if (nw_kube_cache_stage_commit(x->stage) != NW_OK)
        nw_log_warn(COMP, "relist not applied: out of memory; the next relist retries",
                    NW_LS("resource", plural));
    x->stage = NULL;
    release_list_memory(x);
    nw_kube_metrics_add(w->metrics, NW_KM_RELISTS, NULL, plural, -1, 1);
    nw_log_debug(COMP, "listed", NW_LS("resource", plural), NW_LI("items", n),
                 NW_LS("resourceVersion", x->rv ? x->rv : ""));
    x->synced_once = 1;
    if (!x->rv || !x->rv[0]) {
        /* cannot watch without a resourceVersion: poll by relisting */
        schedule_backoff(x, true);
        return;
    }
    /* the API server answers: a watch that fails at once after this list waits one
     * back-off step, not the steps that failures before the list had grown to (a
     * restarting API server's 403s and refused connections) */
    nw_kube_retry_backoff_reset(&x->bo);
    schedule(x, 0, false);
    return;
}

static void list_done(watcher_t *x, CURLcode cc)
{
    nw_kube_watch_t *w = x->w;
    const char *plural = x->res->plural;
    nw_kube_metrics_add(w->metrics, NW_KM_REQUESTS, "list", plural,
                        cc == CURLE_OK ? (int)x->code : 0, 1);
    if (cc != CURLE_OK) {
        set_last_err(w, "list %s: %s", plural, curl_easy_strerror(cc));
        nw_log_every(10, NW_LOG_WARN, COMP, "list failed", NW_LS("resource", plural),
                     NW_LS("error", curl_easy_strerror(cc)));
        reset_list(x);
        schedule_backoff(x, true);
        return;
    }
    x->resp.code = x->code;
    if (x->code == 200) {
        /* the page's tree in the arena (hundreds of thousands of values at 100,000 pods),
         * the records decoded from it with malloc (as deliver does) */
        nw_jsonarena_begin();
        cJSON *doc = nw_kube_client_json_parse(x->resp.body.data, x->resp.body.len);
        nw_jsonarena_pause();
        list_page(x, doc);
        nw_jsonarena_resume();
        nw_jsonarena_end();
        return;
    }
    nw_kube_client__resp_parse_status(&x->resp);
    reset_list(x);
    if (x->code == 410) { /* continue token expired: start over */
        nw_log_info(COMP, "list continue token expired; restarting the list",
                    NW_LS("resource", plural));
        schedule(x, 0, true);
        return;
    }
    if (x->code == 404) { /* not served (CRD missing): empty and synced, retry slowly */
        nw_log_every(60, NW_LOG_WARN, COMP,
                     "resource not served by the API server; treating as empty",
                     NW_LS("resource", plural), NW_LS("message", x->resp.message));
        if (nw_kube_cache_replace(w->cache, x->kind, NULL) != NW_OK)
            nw_log_warn(COMP, "cannot empty the kind", NW_LS("resource", plural));
        x->synced_once = 1;
        schedule(x, w->opts.backoff_max_ms * NW_NS_PER_MS, true);
        return;
    }
    if (x->code == 401)
        nw_kube_client__token_invalidate(w->client);
    set_last_err(w, "list %s: HTTP %ld %s: %s", plural, x->code, x->resp.reason, x->resp.message);
    nw_log_every(10, NW_LOG_WARN, COMP, "list failed", NW_LS("resource", plural),
                 NW_LI("code", x->code), NW_LS("reason", x->resp.reason),
                 NW_LS("message", x->resp.message));
    if (x->resp.retry_after_s > 0)
        schedule(x, (int64_t)x->resp.retry_after_s * NW_NS_PER_SEC, true);
    else
        schedule_backoff(x, true);
}

/* The watch cannot resume from its resourceVersion (410 Gone, an ERROR event, a broken
 * stream): events were lost, so the kind is not synced until the relist commits and the
 * scaler pauses its writes meanwhile (scaler/loop.c). A watch that merely dropped resumes
 * from its resourceVersion and loses nothing: it stays synced. */
static void lost_events(watcher_t *x)
{
    if (x->synced_once)
        nw_kube_cache_mark_unsynced(x->w->cache, x->kind);
}

/* The relist after lost events: at once, unless the watch failed as soon as it began
 * (under a second, nothing in it but the error: the watch window is still gone, as it is
 * while an API server catches up after a restart); then after the back-off (800 ms
 * doubling to 30 s), as client-go's reflector waits between failed list-and-watch rounds,
 * not a relist storm against an API server that is already struggling. */
static void relist_after_loss(watcher_t *x)
{
    lost_events(x);
    if (x->events <= 1 && now_ns(x->w) - x->began < NW_NS_PER_SEC)
        schedule_backoff(x, true);
    else
        schedule(x, 0, true);
}

static void watch_done(watcher_t *x, CURLcode cc)
{
    nw_kube_watch_t *w = x->w;
    const char *plural = x->res->plural;
    nw_kube_metrics_add(w->metrics, NW_KM_REQUESTS, "watch", plural, x->code ? (int)x->code : 0, 1);
    nw_kube_metrics_add(w->metrics, NW_KM_WATCH_RESTARTS, NULL, plural, -1, 1);
    if (x->code == 200 && !x->relist) {
        if (nw_kube_watch_wparse_finish(&x->parser) != NW_OK)
            nw_log_info(COMP, "watch stream ended inside an event", NW_LS("resource", plural));
    }
    if (x->relist) {
        relist_after_loss(x);
        return;
    }
    if (x->code == 200) {
        /* clean end or a drop: resume from the last RV; back off if it died at once */
        if (x->events == 0 && now_ns(w) - x->began < NW_NS_PER_SEC && cc != CURLE_OK)
            schedule_backoff(x, false);
        else {
            nw_kube_retry_backoff_reset(&x->bo);
            schedule(x, 0, false);
        }
        nw_log_debug(COMP, "watch ended; resuming", NW_LS("resource", plural),
                     NW_LS("curl", curl_easy_strerror(cc)), NW_LI("events", x->events));
        return;
    }
    if (x->code == 0) {
        set_last_err(w, "watch %s: %s", plural, curl_easy_strerror(cc));
        nw_log_every(10, NW_LOG_WARN, COMP, "watch connection failed", NW_LS("resource", plural),
                     NW_LS("error", curl_easy_strerror(cc)));
        schedule_backoff(x, false);
        return;
    }
    x->resp.code = x->code;
    nw_kube_client__resp_parse_status(&x->resp);
    if (x->code == 410) {
        nw_log_info(COMP, "watch resourceVersion too old; relisting", NW_LS("resource", plural));
        relist_after_loss(x);
        return;
    }
    if (x->code == 401)
        nw_kube_client__token_invalidate(w->client);
    set_last_err(w, "watch %s: HTTP %ld %s: %s", plural, x->code, x->resp.reason, x->resp.message);
    nw_log_every(10, NW_LOG_WARN, COMP, "watch failed", NW_LS("resource", plural),
                 NW_LI("code", x->code), NW_LS("reason", x->resp.reason),
                 NW_LS("message", x->resp.message));
    /* 504 ResourceVersionTooLarge and anything unexpected: back off, then relist */
    bool relist = !(x->code == 429 || x->code == 401 || x->code == 500 || x->code == 503);
    if (relist)
        lost_events(x);
    if (x->resp.retry_after_s > 0)
        schedule(x, (int64_t)x->resp.retry_after_s * NW_NS_PER_SEC, relist);
    else
        schedule_backoff(x, relist);
}

/* How long the thread lets a stream's events gather after a wake-up that found some while
 * the streams are busy, before it reads them: kube-apiserver flushes a watch's events as
 * they come, so under a stream of pod events each wake-up read one or two events, a poll
 * and a few reads (system calls in a TLS record each) per event; about a third of the
 * watch thread's time in a 5,000-pod scale-out (30,000 events). An event is late by at
 * most this much. */
#define COALESCE_NS (2 * NW_NS_PER_MS)

static void *run(void *arg)
{
    nw_kube_watch_t *w = arg;
    bool busy = false; /* the last pass read events */
    while (!atomic_load(&w->stop)) {
        int64_t now = now_ns(w);
        int64_t next = now + 1000 * NW_NS_PER_MS;
        for (int k = 0; k < NW_KUBE_KINDS; k++) {
            watcher_t *x = &w->wt[k];
            if (!(w->opts.kinds & (1u << k)) || x->st != W_IDLE)
                continue;
            if (x->start_at <= now) {
                /* one token per request: a start that waited for its token uses it */
                int64_t rl = x->rl_held ? 0 : nw_kube_client__rl_reserve(w->client);
                x->rl_held = rl > 0;
                if (rl > 0) {
                    x->start_at = now + rl;
                } else if (start(x) != 0) {
                    nw_log_error(COMP, "cannot start request (out of memory?)",
                                 NW_LS("resource", x->res->plural));
                    schedule_backoff(x, x->need_list);
                }
            }
            if (x->st == W_IDLE && x->start_at < next)
                next = x->start_at;
        }
        int still;
        uint64_t before = w->delivered;
        curl_multi_perform(w->multi, &still);
        busy = w->delivered != before;
        CURLMsg *m;
        int left;
        while ((m = curl_multi_info_read(w->multi, &left))) {
            if (m->msg != CURLMSG_DONE)
                continue;
            watcher_t *x = NULL;
            curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&x);
            CURLcode cc = m->data.result;
            if (!x)
                continue;
            if (x->code == 0)
                curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &x->code);
            wstate_t st = x->st;
            end_transfer(x);
            if (st == W_LIST)
                list_done(x, cc);
            else
                watch_done(x, cc);
            next = now; /* re-run the scheduling pass at once */
        }
        int64_t wait_ms = (next - now_ns(w)) / NW_NS_PER_MS;
        if (wait_ms < 0)
            wait_ms = 0;
        if (wait_ms > 1000)
            wait_ms = 1000;
        int woke = 0;
        curl_multi_poll(w->multi, NULL, 0, (int)wait_ms, &woke);
        if (woke > 0 && busy && !atomic_load(&w->stop)) {
            struct timespec ts = {0, COALESCE_NS};
            nanosleep(&ts, NULL);
        }
    }
    return NULL;
}

nw_rc_t nw_kube_watch_new(nw_kube_client_t *c, nw_kube_cache_t *cache,
                          const nw_kube_watch_opts_t *opts, nw_kube_watch_t **out, nw_err_t *err)
{
    *out = NULL;
    nw_kube_watch_t *w = calloc(1, sizeof *w);
    if (!w)
        return nw_err_set(err, NW_ENOMEM, "", "out of memory");
    w->client = c;
    w->cache = cache;
    w->metrics = nw_kube_client_metrics(c);
    if (opts)
        w->opts = *opts;
    nw_kube_watch_opts_t *o = &w->opts;
    if (o->timeout_min_s <= 0)
        o->timeout_min_s = 300;
    if (o->timeout_max_s < o->timeout_min_s)
        o->timeout_max_s = o->timeout_min_s == 300 ? 600 : o->timeout_min_s;
    if (o->page_limit <= 0)
        o->page_limit = 500;
    if (o->backoff_base_ms <= 0)
        o->backoff_base_ms = 800;
    if (o->backoff_max_ms <= 0)
        o->backoff_max_ms = 30000;
    if (!o->kinds)
        o->kinds = (1u << NW_KUBE_KINDS) - 1;
    pthread_mutex_init(&w->err_mu, NULL);
    w->multi = curl_multi_init();
    if (!w->multi) {
        nw_kube_watch_free(w);
        return nw_err_set(err, NW_ENOMEM, "", "curl_multi_init failed");
    }
    /* No multiplexing: each transfer gets a connection of its own, an idle one or a new
     * one. The watches hold HTTP/1.1 connections for minutes; the LISTs speak HTTP/2 where
     * the server offers it. Once a connection to the host has negotiated HTTP/2, libcurl
     * 7.88 (Debian 12's; upstream fixed it in 8.5.0) takes a connection that is in use for
     * one it may multiplex on whatever its protocol, so it sent the next LIST page down an
     * HTTP/1.1 connection busy with another kind's watch: the request waited behind that
     * stream until it timed out, again on every retry, and a relist after 410 Gone never
     * completed. It happened whenever a relist opened a new HTTP/2 connection (kube-apiserver
     * closes one idle for 90 s) and needed a second page. */
    curl_multi_setopt(w->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_NOTHING);
    for (int k = 0; k < NW_KUBE_KINDS; k++) {
        watcher_t *x = &w->wt[k];
        x->w = w;
        x->kind = (nw_kube_kind_t)k;
        x->res = nw_kube_cache_kind_res((nw_kube_kind_t)k);
        x->st = W_IDLE;
        x->need_list = true;
        nw_kube_client_resp_init(&x->resp);
        nw_kube_watch_wparse_init(&x->parser, MAX_EVENT_BYTES, on_event, x);
        nw_kube_retry_backoff_init(&x->bo, o->backoff_base_ms * NW_NS_PER_MS,
                                   o->backoff_max_ms * NW_NS_PER_MS, 120 * NW_NS_PER_SEC, 0);
        if (!(o->kinds & (1u << k)))
            nw_kube_cache_mark_synced(cache, (nw_kube_kind_t)k);
    }
    *out = w;
    return NW_OK;
}

nw_rc_t nw_kube_watch_start(nw_kube_watch_t *w, nw_err_t *err)
{
    if (w->running)
        return NW_OK;
    atomic_store(&w->stop, 0);
    for (int k = 0; k < NW_KUBE_KINDS; k++)
        w->wt[k].start_at = now_ns(w);
    if (pthread_create(&w->thread, NULL, run, w) != 0)
        return nw_err_set(err, NW_EIO, "", "cannot start the watch thread");
    pthread_setname_np(w->thread, "nw-watch");
    w->running = 1;
    return NW_OK;
}

void nw_kube_watch_stop(nw_kube_watch_t *w)
{
    if (!w || !w->running)
        return;
    atomic_store(&w->stop, 1);
    curl_multi_wakeup(w->multi);
    pthread_join(w->thread, NULL);
    w->running = 0;
    for (int k = 0; k < NW_KUBE_KINDS; k++) {
        end_transfer(&w->wt[k]);
        w->wt[k].st = W_IDLE;
        w->wt[k].need_list = true;
        reset_list(&w->wt[k]);
    }
}

void nw_kube_watch_free(nw_kube_watch_t *w)
{
    if (!w)
        return;
    nw_kube_watch_stop(w);
    for (int k = 0; k < NW_KUBE_KINDS; k++) {
        watcher_t *x = &w->wt[k];
        end_transfer(x);
        reset_list(x);
        free(x->rv);
        nw_kube_client_resp_cleanup(&x->resp);
        nw_kube_watch_wparse_cleanup(&x->parser);
    }
    if (w->multi)
        curl_multi_cleanup(w->multi);
    pthread_mutex_destroy(&w->err_mu);
    free(w);
}
