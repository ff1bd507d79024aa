/* Unit tests for the Kubernetes client against a scripted local HTTP server
 * (tests/unit/fakeapi.c): retries, token reload, list paging, watch resume and
 * relist, 10,000 watch events, writes, eviction, events, leader election. */
#include <check.h>
#include <curl/curl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scaler/kube/cache.h"
#include "scaler/kube/client.h"
#include "scaler/kube/leader.h"
#include "scaler/kube/watch.h"
#include "scaler/kube/write.h"
#include "tests/unit/fakeapi.h"

Suite *nw_kube_client_suite(void);

static nw_kube_client_t *mk_client(int port, const char *token, const nw_clock_t *clk)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    char *kc = fake_kubeconfig(port, token);
    nw_kube_config_t *cfg = NULL;
    nw_err_t err = {0};
    ck_assert_int_eq(nw_kube_config_load_kubeconfig(kc, NULL, &cfg, &err), NW_OK);
    unlink(kc);
    free(kc);
    nw_kube_client_opts_t o = {.qps = -1,
                               .backoff_base_ms = 10,
                               .backoff_max_ms = 40,
                               .max_retries = 3,
                               .timeout_ms = 5000,
                               .clock = clk};
    nw_kube_client_t *c = NULL;
    ck_assert_int_eq(nw_kube_client_new(cfg, &o, &c, &err), NW_OK);
    return c;
}

/* A client of the fake server's kubeconfig with a rate limit: qps requests a second, a
 * bucket of burst. */
static nw_kube_client_t *mk_client_rate(int port, double qps, int burst)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    char *kc = fake_kubeconfig(port, "t");
    nw_kube_config_t *cfg = NULL;
    nw_err_t err = {0};
    ck_assert_int_eq(nw_kube_config_load_kubeconfig(kc, NULL, &cfg, &err), NW_OK);
    unlink(kc);
    free(kc);
    nw_kube_client_opts_t o = {.qps = qps, .burst = burst, .timeout_ms = 5000};
    nw_kube_client_t *c = NULL;
    ck_assert_int_eq(nw_kube_client_new(cfg, &o, &c, &err), NW_OK);
    return c;
}

static void sleep_ms(int ms)
{
    usleep((useconds_t)ms * 1000);
}

/* Hold a watch open until the server stops. */
static void hold_stream(fake_conn_t *c, fake_srv_t **srvp)
{
    fake_stream_begin(c, 200);
    while (!fake_srv_stopping(*srvp))
        sleep_ms(10);
    fake_close(c);
}

static void empty_list(fake_conn_t *c, const char *rv)
{
    char body[256];
    snprintf(body, sizeof body,
             "{\"kind\":\"List\",\"metadata\":{\"resourceVersion\":\"%s\"},\"items\":[]}", rv);
    fake_reply(c, 200, "", body);
}

/* ---- retries and auth ---------------------------------------------------------------- */

typedef struct {
    fake_srv_t *srv;
    _Atomic int calls;
    int fail_first; /* answer 503 this many times */
    char token_ok[64];
} retry_state_t;

static void retry_handler(void *ud, const fake_req_t *r, fake_conn_t *c)
{
    retry_state_t *st = ud;
    int n = atomic_fetch_add(&st->calls, 1);
    if (st->token_ok[0]) {
        char want[96];
        snprintf(want, sizeof want, "Bearer %s", st->token_ok);
        if (strcmp(r->auth, want) != 0) {
            fake_reply(c, 401, "",
                       "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":\"Unauthorized\","
                       "\"message\":\"Unauthorized\",\"code\":401}");
            return;
        }
    }
    if (n < st->fail_first) {
        fake_reply(c, n == 0 ? 429 : 503, n == 0 ? "Retry-After: 1\r\n" : "",
                   "{\"kind\":\"Status\",\"reason\":\"ServiceUnavailable\",\"code\":503}");
        return;
    }
    fake_reply(c, 200, "", "{\"kind\":\"Namespace\",\"metadata\":{\"name\":\"default\"}}");
}

START_TEST(retry_5xx_then_ok)
{
    retry_state_t st = {.fail_first = 3};
    st.srv = fake_srv_start(retry_handler, &st);
    nw_kube_client_t *c = mk_client(fake_srv_port(st.srv), "t", NULL);
    cJSON *out = NULL;
    nw_err_t err = {0};
    ck_assert_int_eq(
        nw_kube_client_get_json(c, "/api/v1/namespaces/default", "get", "namespaces", &out, &err),
        NW_OK);
    ck_assert_int_eq(atomic_load(&st.calls), 4);
    cJSON_Delete(out);
    nw_kube_metrics_t *m = nw_kube_client_metrics(c);
    ck_assert_int_eq(nw_kube_metrics_get(m, NW_KM_REQUESTS, "get", "namespaces", 429), 1);
    ck_assert_int_eq(nw_kube_metrics_get(m, NW_KM_REQUESTS, "get", "namespaces", 503), 2);
    ck_assert_int_eq(nw_kube_metrics_get(m, NW_KM_REQUESTS, "get", "namespaces", 200), 1);
    ck_assert_int_eq(nw_kube_metrics_get(m, NW_KM_RETRIES, "get", "namespaces", -1), 3);
    nw_buf_t b;
    nw_buf_init(&b, 1 << 20);
    ck_assert_int_eq(nw_kube_metrics_write(m, &b), NW_OK);
    ck_assert_ptr_nonnull(strstr(
        nw_buf_str(&b),
        "nodewarden_kube_requests_total{verb=\"get\",resource=\"namespaces\",code=\"503\"} 2\n"));
    nw_buf_cleanup(&b);
    /* too many failures: the last answer is returned, not retried forever */
    atomic_store(&st.calls, 0);
    st.fail_first = 100;
    ck_assert_int_eq(
        nw_kube_client_get_json(c, "/api/v1/namespaces/default", "get", "namespaces", &out, &err),
        NW_EKUBE);
    ck_assert_int_eq(atomic_load(&st.calls), 4); /* 1 + max_retries */
    ck_assert_ptr_nonnull(strstr(err.msg, "503"));
    nw_kube_client_free(c);
    fake_srv_stop(st.srv);
}
END_TEST

/* A POST makes a new object each time: a 500 or 504 may have created it, so the client
 * does not send it again (a second NodeClaim); a 429 or a 503 was refused before it
 * ran, and is retried. */
typedef struct {
    _Atomic int calls;
    int first_code; /* the first answer's code, then 201 */
} post_state_t;

static void post_handler(void *ud, const fake_req_t *r, fake_conn_t *c)
{
    post_state_t *st = ud;
    ck_assert_str_eq(r->method, "POST");
    int n = atomic_fetch_add(&st->calls, 1);
    if (n == 0) {
        char body[160];
        snprintf(body, sizeof body, "{\"kind\":\"Status\",\"status\":\"Failure\",\"code\":%d}",
                 st->first_code);
        fake_reply(c, st->first_code, "", body);
        return;
    }
    fake_reply(c, 201, "", "{\"kind\":\"NodeClaim\",\"metadata\":{\"name\":\"default-abcde\"}}");
}

/* A thread given a limiter of its own (the nomination writers) draws its requests from it,
 * not from the client's bucket, which stays for everyone else's. */
START_TEST(thread_limiter_is_its_own_budget)
{
    retry_state_t st = {0};
    st.srv = fake_srv_start(retry_handler, &st);
    nw_err_t err = {0};
    /* a bucket of one token that refills once in 1,000 s */
    nw_kube_client_t *c = mk_client_rate(fake_srv_port(st.srv), 0.001, 1);
    nw_kube_rl_t own;
    nw_kube_client_limiter_init(c, &own); /* the client's rate and burst: one token */
    nw_kube_client_thread_limiter(&own);
    cJSON *out = NULL;
    ck_assert_int_eq(
        nw_kube_client_get_json(c, "/api/v1/namespaces/default", "get", "namespaces", &out, &err),
        NW_OK);
    cJSON_Delete(out);
    nw_kube_client_thread_limiter(NULL);
    ck_assert_int_gt(nw_kube_retry_rl_reserve(&own), 0); /* its token was spent */
    /* the client's token is still there: this request goes out at once */
    ck_assert_int_eq(
        nw_kube_client_get_json(c, "/api/v1/namespaces/default", "get", "namespaces", &out, &err),
        NW_OK);
    cJSON_Delete(out);
    ck_assert_int_eq(atomic_load(&st.calls), 2);
    ck_assert_int_gt(nw_kube_client__rl_reserve(c), 0); /* and now it is spent */
    nw_kube_retry_rl_cleanup(&own);
    nw_kube_client_free(c);
    fake_srv_stop(st.srv);
}
END_TEST

START_TEST(post_not_repeated_after_maybe_done)
{
    static const struct {
        int code, calls;
        nw_rc_t rc;
    } cases[] = {{500, 1, NW_EKUBE}, {504, 1, NW_EKUBE}, {429, 2, NW_OK}, {503, 2, NW_OK}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        post_state_t st = {.first_code = cases[i].code};
        fake_srv_t *srv = fake_srv_start(post_handler, &st);
        nw_kube_client_t *c = mk_client(fake_srv_port(srv), "t", NULL);
        cJSON *obj = cJSON_Parse("{\"metadata\":{\"generateName\":\"default-\"}}");
        cJSON *out = NULL;
        nw_err_t err = {0};
        ck_assert_int_eq(
            nw_kube_write_create(c, &nw_kube_client_res_nodeclaims, NULL, obj, &out, &err),
            cases[i].rc);
        ck_assert_int_eq(atomic_load(&st.calls), cases[i].calls);
        if (cases[i].rc == NW_OK)
            ck_assert_str_eq(cJSON_GetStringValue(
                                 cJSON_GetObjectItem(cJSON_GetObjectItem(out, "metadata"), "name")),
                             "default-abcde");
        else
            ck_assert_ptr_nonnull(strstr(err.msg, cases[i].code == 500 ? "500" : "504"));
        cJSON_Delete(out);
        cJSON_Delete(obj);
        nw_kube_client_free(c);
        fake_srv_stop(srv);
    }
}
END_TEST

START_TEST(no_server)
{
    /* bind and close a port so nothing listens there */
    retry_state_t st = {0};
    fake_srv_t *s = fake_srv_start(retry_handler, &st);
    int port = fake_srv_port(s);
    fake_srv_stop(s);
    nw_kube_client_t *c = mk_client(port, "t", NULL);
    cJSON *out = NULL;
    nw_err_t err = {0};
    nw_rc_t rc = nw_kube_client_get_json(c, "/api/v1/nodes", "list", "nodes", &out, &err);
    ck_assert(rc == NW_EHTTP || rc == NW_ETIMEOUT);
    ck_assert_ptr_null(out);
    ck_assert_ptr_nonnull(strstr(err.msg, "127.0.0.1"));
    ck_assert_int_eq(
        nw_kube_metrics_get(nw_kube_client_metrics(c), NW_KM_REQUESTS, "list", "nodes", 0), 4);
    nw_kube_client_free(c);
}
END_TEST

START_TEST(bad_token_clear_error)
{
    retry_state_t st = {0};
    snprintf(st.token_ok, sizeof st.token_ok, "good");
    st.srv = fake_srv_start(retry_handler, &st);
    nw_kube_client_t *c = mk_client(fake_srv_port(st.srv), "expired", NULL);
    cJSON *out = NULL;
    nw_err_t err = {0};
    ck_assert_int_eq(
        nw_kube_client_get_json(c, "/api/v1/namespaces", "list", "namespaces", &out, &err),
        NW_EKUBE);
    ck_assert_ptr_nonnull(strstr(err.msg, "401"));
    ck_assert_ptr_nonnull(strstr(err.msg, "credentials"));
    /* one retry after "reloading" the (static) token, no more */
    ck_assert_int_eq(atomic_load(&st.calls), 2);
    nw_kube_client_free(c);
    fake_srv_stop(st.srv);
}
END_TEST

START_TEST(token_file_reloaded_on_401)
{
    retry_state_t st = {0};
    snprintf(st.token_ok, sizeof st.token_ok, "new");
    st.srv = fake_srv_start(retry_handler, &st);
    char tf[] = "/tmp/nwtokXXXXXX";
    int fd = mkstemp(tf);
    ck_assert_int_eq(write(fd, "old\n", 4), 4);
    close(fd);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    nw_kube_config_t *cfg = calloc(1, sizeof *cfg);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", fake_srv_port(st.srv));
    cfg->server = strdup(url);
    cfg->token_file = strdup(tf);
    cfg->namespace = strdup("default");
    cfg->context = strdup("t");
    cfg->source = strdup("test");
    nw_clock_fake_t fc;
    nw_clock_fake_init(&fc, 0);
    nw_kube_client_opts_t o = {.qps = -1, .backoff_base_ms = 10, .clock = &fc.base};
    nw_kube_client_t *c = NULL;
    nw_err_t err = {0};
    ck_assert_int_eq(nw_kube_client_new(cfg, &o, &c, &err), NW_OK);
    cJSON *out = NULL;
    ck_assert_int_eq(
        nw_kube_client_get_json(c, "/api/v1/namespaces", "list", "namespaces", &out, &err),
        NW_EKUBE);
    ck_assert_int_eq(atomic_load(&st.calls), 2);
    /* the kubelet rotates the token: the next 401 makes the client re-read it at once */
    FILE *f = fopen(tf, "w");
    fputs("new\n", f);
    fclose(f);
    atomic_store(&st.calls, 0);
    nw_err_clear(&err);
    ck_assert_int_eq(
        nw_kube_client_get_json(c, "/api/v1/namespaces", "list", "namespaces", &out, &err), NW_OK);
    ck_assert_int_eq(atomic_load(&st.calls), 2);
    cJSON_Delete(out);
    /* and periodically: rotate again, advance 61 s; no 401 needed */
    snprintf(st.token_ok, sizeof st.token_ok, "newer");
    f = fopen(tf, "w");
    fputs("newer", f);
    fclose(f);
    nw_clock_fake_advance(&fc, 61 * NW_NS_PER_SEC);
    atomic_store(&st.calls, 0);
    ck_assert_int_eq(
        nw_kube_client_get_json(c, "/api/v1/namespaces", "list", "namespaces", &out, &err), NW_OK);
    ck_assert_int_eq(atomic_load(&st.calls), 1);
    cJSON_Delete(out);
    nw_kube_client_free(c);
    unlink(tf);
    fake_srv_stop(st.srv);
}
END_TEST

/* ---- list paging ---------------------------------------------------------------------- */

typedef struct {
    fake_srv_t *srv;
    _Atomic int cont_calls;
    _Atomic int lists;
} page_state_t;

static void page_handler(void *ud, const fake_req_t *r, fake_conn_t *c)
{
    page_state_t *st = ud;
    char v[256];
    if (fake_query(r->path, "watch", v, sizeof v)) {
        hold_stream(c, &st->srv);
        return;
    }
    if (strncmp(r->path, "/api/v1/pods?", 13) != 0) {
        empty_list(c, "1");
        return;
    }
    ck_assert(fake_query(r->path, "limit", v, sizeof v));
    ck_assert_str_eq(v, "2");
    ck_assert(fake_query(r->path, "labelSelector", v, sizeof v));
    ck_assert_str_eq(v, "app in (a,b)");
    if (!fake_query(r->path, "continue", v, sizeof v)) {
        int n = atomic_fetch_add(&st->lists, 1);
        char body[512];
        snprintf(
            body, sizeof body,
            "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"100\",\"continue\":\"c1\"},"
            "\"items\":[{\"metadata\":{\"name\":\"p0\",\"namespace\":\"a\",\"resourceVersion\":\"%"
            "d\"}},"
            "{\"metadata\":{\"name\":\"p1\",\"namespace\":\"a\"}}]}",
            n);
        fake_reply(c, 200, "", body);
        return;
    }
    ck_assert_str_eq(v, "c1");
    if (atomic_fetch_add(&st->cont_calls, 1) == 0) {
        fake_reply(
            c, 410, "",
            "{\"kind\":\"Status\",\"reason\":\"Expired\",\"message\":\"The provided continue "
            "parameter is too old\",\"code\":410}");
        return;
    }
    fake_reply(c, 200, "",
               "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"100\"},\"items\":["
               "{\"metadata\":{\"name\":\"p2\",\"namespace\":\"b\"}},"
               "{\"metadata\":{\"name\":\"p3\",\"namespace\":\"b\"}}]}");
}

START_TEST(list_paging_and_expired_continue)
{
    page_state_t st = {0};
    st.srv = fake_srv_start(page_handler, &st);
    nw_kube_client_t *c = mk_client(fake_srv_port(st.srv), "t", NULL);
    nw_kube_cache_t *cache = nw_kube_cache_new(nw_kube_client_metrics(c));
    nw_kube_watch_opts_t wo = {.page_limit = 2, .backoff_base_ms = 10, .backoff_max_ms = 50};
    wo.label_selector[NW_KUBE_PODS] = "app in (a,b)";
    nw_kube_watch_t *w = NULL;
    nw_err_t err = {0};
    ck_assert_int_eq(nw_kube_watch_new(c, cache, &wo, &w, &err), NW_OK);
    ck_assert_int_eq(nw_kube_watch_start(w, &err), NW_OK);
    ck_assert_int_eq(nw_kube_cache_wait_synced(cache, 10000), 1);
    nw_kube_snap_t *s = nw_kube_cache_snapshot(cache);
    ck_assert_uint_eq(nw_kube_cache_snap_count(s, NW_KUBE_PODS), 4);
    ck_assert_str_eq(nw_kube_cache_snap_at(s, NW_KUBE_PODS, 3)->key, "b/p3");
    /* the list restarted from page one after the 410 */
    ck_assert_int_eq(atomic_load(&st.lists), 2);
    ck_assert_str_eq(nw_kube_cache_snap_get(s, NW_KUBE_PODS, "a", "p0")->rv, "1");
    nw_kube_cache_snap_release(s);
    nw_kube_watch_free(w);
    fake_srv_stop(st.srv);
    nw_kube_cache_free(cache);
    nw_kube_client_free(c);
}
END_TEST

/* ---- watch: resume, drop, 410 relist ---------------------------------------------------- */

typedef struct {
    fake_srv_t *srv;
    pthread_mutex_t mu;
    char watch_rvs[256]; /* resourceVersion of each pods watch, ';'-separated */
    int lists, watches;
} wstate_t;

static void watch_handler(void *ud, const fake_req_t *r, fake_conn_t *c)
{
    wstate_t *st = ud;
    char v[256];
    int is_watch = fake_query(r->path, "watch", v, sizeof v);
    if (strncmp(r->path, "/api/v1/pods?", 13) != 0) {
        if (is_watch)
            hold_stream(c, &st->srv);
        else
            empty_list(c, "1");
        return;
    }
    pthread_mutex_lock(&st->mu);
    int n;
    if (!is_watch) {
        n = st->lists++;
        pthread_mutex_unlock(&st->mu);
        if (n == 0)
            fake_reply(
                c, 200, "",
                "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"10\"},\"items\":["
                "{\"metadata\":{\"name\":\"p1\",\"namespace\":\"a\",\"resourceVersion\":\"5\"}}]}");
        else
            fake_reply(
                c, 200, "",
                "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"20\"},\"items\":["
                "{\"metadata\":{\"name\":\"p2\",\"namespace\":\"a\",\"resourceVersion\":\"11\"}},"
                "{\"metadata\":{\"name\":\"p3\",\"namespace\":\"a\",\"resourceVersion\":\"19\"}}]"
                "}");
        return;
    }
    n = st->watches++;
    fake_query(r->path, "resourceVersion", v, sizeof v);
    size_t l = strlen(st->watch_rvs);
    snprintf(st->watch_rvs + l, sizeof st->watch_rvs - l, "%s;", v);
    pthread_mutex_unlock(&st->mu);
    char tv[32];
    ck_assert(fake_query(r->path, "allowWatchBookmarks", tv, sizeof tv));
    ck_assert_str_eq(tv, "true");
    ck_assert(fake_query(r->path, "timeoutSeconds", tv, sizeof tv));
    ck_assert_int_ge(atoi(tv), 300);
    ck_assert_int_le(atoi(tv), 600);
    if (n == 0) {
        /* an event split across chunks, a bookmark, then the connection dies mid-event */
        const char *ev =
            "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"p2\",\"namespace\":\"a\","
            "\"resourceVersion\":\"11\"}}}\n{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":"
            "{\"resourceVersion\":\"15\"}}}\n{\"type\":\"ADDED\",\"object\":{\"meta";
        fake_stream_begin(c, 200);
        fake_stream_chunk(c, ev, 30);
        sleep_ms(20);
        fake_stream_chunk(c, ev + 30, strlen(ev) - 30);
        sleep_ms(50);
        fake_close(c); /* no terminating chunk: a drop */
        return;
    }
    if (n == 1) {
        const char *ev =
            "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"status\":\"Failure\","
            "\"reason\":\"Expired\",\"message\":\"too old resource version: 15 (18)\","
            "\"code\":410}}\n";
        fake_stream_begin(c, 200);
        fake_stream_chunk(c, ev, strlen(ev));
        fake_stream_end(c);
        return;
    }
    hold_stream(c, &st->srv);
}

START_TEST(watch_resume_drop_and_relist)
{
    wstate_t st = {0};
    pthread_mutex_init(&st.mu, NULL);
    st.srv = fake_srv_start(watch_handler, &st);
    nw_kube_client_t *c = mk_client(fake_srv_port(st.srv), "t", NULL);
    nw_kube_cache_t *cache = nw_kube_cache_new(nw_kube_client_metrics(c));
    nw_kube_watch_opts_t wo = {.backoff_base_ms = 10, .backoff_max_ms = 50};
    nw_kube_watch_t *w = NULL;
    nw_err_t err = {0};
    ck_assert_int_eq(nw_kube_watch_new(c, cache, &wo, &w, &err), NW_OK);
    ck_assert_int_eq(nw_kube_watch_start(w, &err), NW_OK);
    ck_assert_int_eq(nw_kube_cache_wait_synced(cache, 10000), 1);
    /* wait for the third pods watch (after the relist) */
    for (int i = 0; i < 1000; i++) {
        pthread_mutex_lock(&st.mu);
        int n = st.watches;
        pthread_mutex_unlock(&st.mu);
        if (n >= 3)
            break;
        sleep_ms(10);
    }
    sleep_ms(50);
    pthread_mutex_lock(&st.mu);
    ck_assert_str_eq(st.watch_rvs, "10;15;20;"); /* resumed from the bookmark, relisted on 410 */
    ck_assert_int_eq(st.lists, 2);
    pthread_mutex_unlock(&st.mu);
    nw_kube_snap_t *s = nw_kube_cache_snapshot(cache);
    ck_assert_uint_eq(nw_kube_cache_snap_count(s, NW_KUBE_PODS), 2); /* p1 gone after the relist */
    ck_assert_str_eq(nw_kube_cache_snap_at(s, NW_KUBE_PODS, 0)->name, "p2");
    ck_assert_str_eq(nw_kube_cache_snap_at(s, NW_KUBE_PODS, 1)->name, "p3");
    nw_kube_cache_snap_release(s);
    nw_kube_metrics_t *m = nw_kube_client_metrics(c);
    ck_assert_int_eq(nw_kube_metrics_get(m, NW_KM_RELISTS, NULL, "pods", -1), 2);
    ck_assert_int_ge(nw_kube_metrics_get(m, NW_KM_WATCH_RESTARTS, NULL, "pods", -1), 2);
    nw_kube_watch_free(w);
    fake_srv_stop(st.srv);
    nw_kube_cache_free(cache);
    nw_kube_client_free(c);
    pthread_mutex_destroy(&st.mu);
}
END_TEST

/* A watch that lost events (410 Gone) leaves its kind unsynced until the relist has
 * committed: the scaler must not decide from a view it knows is stale. */
typedef struct {
    fake_srv_t *srv;
    _Atomic int lists, watches, expire, release;
} unsync_state_t;

static void unsync_handler(void *ud, const fake_req_t *r, fake_conn_t *c)
{
    unsync_state_t *st = ud;
    char v[64];
    int is_watch = fake_query(r->path, "watch", v, sizeof v);
    if (strncmp(r->path, "/api/v1/pods?", 13) != 0) {
        if (is_watch)
            hold_stream(c, &st->srv);
        else
            empty_list(c, "1");
        return;
    }
    if (!is_watch) {
        if (atomic_fetch_add(&st->lists, 1) > 0) /* the relist waits for the test */
            while (!atomic_load(&st->release) && !fake_srv_stopping(st->srv))
                sleep_ms(10);
        empty_list(c, "30");
        return;
    }
    if (atomic_fetch_add(&st->watches, 1) == 0) {
        while (!atomic_load(&st->expire) && !fake_srv_stopping(st->srv))
            sleep_ms(10);
        const char *ev =
            "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"status\":\"Failure\","
            "\"reason\":\"Expired\",\"message\":\"too old resource version\",\"code\":410}}\n";
        fake_stream_begin(c, 200);
        fake_stream_chunk(c, ev, strlen(ev));
        fake_stream_end(c);
        return;
    }
    hold_stream(c, &st->srv);
}

START_TEST(watch_expiry_unsynced_until_relist)
{
    unsync_state_t st = {0};
    st.srv = fake_srv_start(unsync_handler, &st);
    nw_kube_client_t *c = mk_client(fake_srv_port(st.srv), "t", NULL);
    nw_kube_cache_t *cache = nw_kube_cache_new(nw_kube_client_metrics(c));
    nw_kube_watch_opts_t wo = {.backoff_base_ms = 10, .backoff_max_ms = 50};
    nw_kube_watch_t *w = NULL;
    nw_err_t err = {0};
    ck_assert_int_eq(nw_kube_watch_new(c, cache, &wo, &w, &err), NW_OK);
    ck_assert_int_eq(nw_kube_watch_start(w, &err), NW_OK);
    /* synced after the first lists; then the watch expires and the relist is held */
    ck_assert_int_eq(nw_kube_cache_wait_synced(cache, 10000), 1);
    atomic_store(&st.expire, 1);
    for (int i = 0; i < 1000 && atomic_load(&st.lists) < 2; i++)
        sleep_ms(10);
    ck_assert_int_eq(atomic_load(&st.lists), 2);
    ck_assert(!nw_kube_cache_has_synced(cache));
    nw_kube_snap_t *s = nw_kube_cache_snapshot(cache);
    ck_assert(!nw_kube_cache_snap_synced(s));
    nw_kube_cache_snap_release(s);
    atomic_store(&st.release, 1);
    ck_assert_int_eq(nw_kube_cache_wait_synced(cache, 10000), 1);
    s = nw_kube_cache_snapshot(cache);
    ck_assert(nw_kube_cache_snap_synced(s));
    nw_kube_cache_snap_release(s);
    nw_kube_watch_free(w);
    fake_srv_stop(st.srv);
    nw_kube_cache_free(cache);
    nw_kube_client_free(c);
}
END_TEST

/* A watch window that stays gone: every pods watch ends at once with 410. The relist
 * after such a watch waits for the back-off (the client's clock, frozen here, must move
 * past it) instead of relisting again at once, round after round. */
typedef struct {
    fake_srv_t *srv;
    _Atomic int lists, watches;
} storm_state_t;

static void storm_handler(void *ud, const fake_req_t *r, fake_conn_t *c)
{
    storm_state_t *st = ud;
    char v[64];
    int is_watch = fake_query(r->path, "watch", v, sizeof v);
    if (strncmp(r->path, "/api/v1/pods?", 13) != 0) {
        if (is_watch)
            hold_stream(c, &st->srv);
        else
            empty_list(c, "1");
        return;
    }
    if (!is_watch) {
        atomic_fetch_add(&st->lists, 1);
        empty_list(c, "30");
        return;
    }
    atomic_fetch_add(&st->watches, 1);
    const char *ev = "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"status\":\"Failure\","
                     "\"reason\":\"Expired\",\"message\":\"too old resource version\","
                     "\"code\":410}}\n";
    fake_stream_begin(c, 200);
    fake_stream_chunk(c, ev, strlen(ev));
    fake_stream_end(c);
}

START_TEST(watch_expiry_storm_backs_off)
{
    storm_state_t st = {0};
    st.srv = fake_srv_start(storm_handler, &st);
    nw_clock_fake_t fc;
    nw_clock_fake_init(&fc, 0);
    nw_kube_client_t *c = mk_client(fake_srv_port(st.srv), "t", &fc.base);
    nw_kube_cache_t *cache = nw_kube_cache_new(nw_kube_client_metrics(c));
    nw_kube_watch_opts_t wo = {.backoff_base_ms = 800, .backoff_max_ms = 30000};
    nw_kube_watch_t *w = NULL;
    nw_err_t err = {0};
    ck_assert_int_eq(nw_kube_watch_new(c, cache, &wo, &w, &err), NW_OK);
    ck_assert_int_eq(nw_kube_watch_start(w, &err), NW_OK);
    for (int i = 0; i < 1000 && atomic_load(&st.watches) < 1; i++)
        sleep_ms(10);
    ck_assert_int_eq(atomic_load(&st.watches), 1);
    sleep_ms(300); /* the clock stands still: a relist at once would have come by now */
    ck_assert_int_eq(atomic_load(&st.lists), 1);
    ck_assert(!nw_kube_cache_has_synced(cache));   /* events lost: unsynced meanwhile */
    nw_clock_fake_advance(&fc, 2 * NW_NS_PER_SEC); /* past the first back-off step */
    for (int i = 0; i < 1000 && atomic_load(&st.lists) < 2; i++)
        sleep_ms(10);
    ck_assert_int_ge(atomic_load(&st.lists), 2);
    nw_kube_watch_free(w);
    fake_srv_stop(st.srv);
    nw_kube_cache_free(cache);
    nw_kube_client_free(c);
}
END_TEST

/* ---- the watch thread and the client's rate limit --------------------------------------- */

typedef struct {
    fake_srv_t *srv;
    _Atomic int lists, watches;
} rl_state_t;

static void rl_handler(void *ud, const fake_req_t *r, fake_conn_t *c)
{
    rl_state_t *st = ud;
    char v[64];
    if (fake_query(r->path, "watch", v, sizeof v)) {
        atomic_fetch_add(&st->watches, 1);
        hold_stream(c, &st->srv);
        return;
    }
    atomic_fetch_add(&st->lists, 1);
    empty_list(c, "1");
}

/* Every kind's LIST and WATCH take a token of the client's bucket. A watcher that had to
 * wait for its token starts when it is due, on that token: it used to reserve another one
 * then, and another at that one's time, so with the bucket empty it never started (each
 * reservation landed just as the bucket had refilled to zero) and the cache never synced. */
START_TEST(watch_waits_once_for_its_token)
{
    rl_state_t st = {0};
    st.srv = fake_srv_start(rl_handler, &st);
    nw_err_t err = {0};
    /* 40 requests/s, a bucket of one: the 12 LISTs and 12 WATCHes need about 0.6 s */
    nw_kube_client_t *c = mk_client_rate(fake_srv_port(st.srv), 40, 1);
    nw_kube_cache_t *cache = nw_kube_cache_new(nw_kube_client_metrics(c));
    nw_kube_watch_t *w = NULL;
    ck_assert_int_eq(nw_kube_watch_new(c, cache, NULL, &w, &err), NW_OK);
    ck_assert_int_eq(nw_kube_watch_start(w, &err), NW_OK);
    ck_assert_msg(nw_kube_cache_wait_synced(cache, 8000) == 1,
                  "not synced after 8 s: %d of %d LISTs answered", atomic_load(&st.lists),
                  NW_KUBE_KINDS);
    for (int i = 0; i < 400 && atomic_load(&st.watches) < NW_KUBE_KINDS; i++)
        sleep_ms(10);
    ck_assert_int_eq(atomic_load(&st.watches), NW_KUBE_KINDS);
    ck_assert_int_eq(atomic_load(&st.lists), NW_KUBE_KINDS);
    nw_kube_watch_free(w);
    fake_srv_stop(st.srv);
    nw_kube_cache_free(cache);
    nw_kube_client_free(c);
}
END_TEST

/* ---- 10,000 watch events: memory stays flat ---------------------------------------------- */

typedef struct {
    fake_srv_t *srv;
    _Atomic int go;
} flood_state_t;

static void flood_handler(void *ud, const fake_req_t *r, fake_conn_t *c)
{
    flood_state_t *st = ud;
    char v[64];
    int is_watch = fake_query(r->path, "watch", v, sizeof v);
    if (!is_watch) {
        empty_list(c, "1");
        return;
    }
    if (strncmp(r->path, "/api/v1/pods?", 13) != 0) {
        hold_stream(c, &st->srv);
        return;
    }
    fake_stream_begin(c, 200);
    char *chunk = malloc(1 << 16);
    size_t used = 0;
    unsigned seed = 7;
    for (int i = 1; i <= 10000; i++) {
        if (i == 1001) { /* pause until the test has measured */
            if (used)
                fake_stream_chunk(c, chunk, used);
            used = 0;
            while (!atomic_load(&st->go) && !fake_srv_stopping(st->srv))
                sleep_ms(5);
        }
        char ev[512];
        int n = snprintf(
            ev, sizeof ev,
            "{\"type\":\"%s\",\"object\":{\"metadata\":{\"name\":\"p%d\",\"namespace\":\"ns\","
            "\"resourceVersion\":\"%d\",\"labels\":{\"i\":\"%d\"}},\"spec\":{\"nodeName\":\"n%d\"},"
            "\"status\":{\"phase\":\"Running\"}}}\n",
            i <= 10 ? "ADDED" : "MODIFIED", i % 10, i, i, i % 3);
        memcpy(chunk + used, ev, (size_t)n);
        used += (size_t)n;
        seed = seed * 1103515245u + 12345u;
        size_t cut = 100 + (seed >> 16) % 4000; /* flush at random sizes: splits events */
        if (used >= cut) {
            if (fake_stream_chunk(c, chunk, cut) != 0)
                break;
            memmove(chunk, chunk + cut, used - cut);
            used -= cut;
        }
    }
    if (used)
        fake_stream_chunk(c, chunk, used);
    free(chunk);
    while (!fake_srv_stopping(st->srv))
        sleep_ms(10);
    fake_close(c);
}

static int wait_rv(nw_kube_cache_t *cache, const char *ns, const char *name, const char *rv)
{
    for (int i = 0; i < 3000; i++) {
        nw_kube_snap_t *s = nw_kube_cache_snapshot(cache);
        const nw_kube_obj_t *o = nw_kube_cache_snap_get(s, NW_KUBE_PODS, ns, name);
        int ok = o && !strcmp(o->rv, rv);
        nw_kube_cache_snap_release(s);
        if (ok)
            return 1;
        sleep_ms(10);
    }
    return 0;
}

START_TEST(watch_10000_events_memory_flat)
{
    flood_state_t st = {0};
    st.srv = fake_srv_start(flood_handler, &st);
    nw_kube_client_t *c = mk_client(fake_srv_port(st.srv), "t", NULL);
    nw_kube_cache_t *cache = nw_kube_cache_new(nw_kube_client_metrics(c));
    nw_kube_watch_t *w = NULL;
    nw_err_t err = {0};
    ck_assert_int_eq(nw_kube_watch_new(c, cache, NULL, &w, &err), NW_OK);
    ck_assert_int_eq(nw_kube_watch_start(w, &err), NW_OK);
    ck_assert(wait_rv(cache, "ns", "p0", "1000"));
    struct mallinfo2 before = mallinfo2();
    atomic_store(&st.go, 1);
    ck_assert(wait_rv(cache, "ns", "p0", "10000"));
    struct mallinfo2 after = mallinfo2();
    /* in-use heap after 9,000 more events is within 1 MiB of before (0 under ASan) */
    ck_assert_msg(after.uordblks < before.uordblks + (1u << 20), "heap grew from %zu to %zu",
                  before.uordblks, after.uordblks);
    ck_assert_uint_eq(nw_kube_cache_count(cache, NW_KUBE_PODS), 10);
    ck_assert_int_eq(
        nw_kube_metrics_get(nw_kube_client_metrics(c), NW_KM_WATCH_EVENTS, NULL, "pods", -1),
        10000);
    nw_kube_snap_t *s = nw_kube_cache_snapshot(cache);
    const nw_kube_obj_t *const *v;
    ck_assert_uint_eq(nw_kube_cache_snap_pods_on_node(s, "n1", &v),
                      4); /* p1 p4 p7 p0: i=9991,9994,9997,10000 */
    nw_kube_cache_snap_release(s);
    nw_kube_watch_free(w);
    fake_srv_stop(st.srv);
    nw_kube_cache_free(cache);
    nw_kube_client_free(c);
}
END_TEST

/* ---- writes ------------------------------------------------------------------------------ */

typedef struct {
    fake_srv_t *srv;
    pthread_mutex_t mu;
    int puts, conflicts_left;
    char last_body[4096];
    char last_ctype[128];
    char last_method[16];
    char log[4096];
} wr_state_t;

static void record(wr_state_t *st, const fake_req_t *r)
{
    pthread_mutex_lock(&st->mu);
    snprintf(st->last_body, sizeof st->last_body, "%s", r->body);
    snprintf(st->last_ctype, sizeof st->last_ctype, "%s", r->ctype);
    snprintf(st->last_method, sizeof st->last_method, "%s", r->method);
    size_t l = strlen(st->log);
    snprintf(st->log + l, sizeof st->log - l, "%s %s;", r->method, r->path);
    pthread_mutex_unlock(&st->mu);
}

static void write_handler(void *ud, const fake_req_t *r, fake_conn_t *c)
{
    wr_state_t *st = ud;
    record(st, r);
    const char *p = r->path;
    if (!strcmp(r->method, "GET") && strstr(p, "/nodeclaims/nc1")) {
        char body[256];
        pthread_mutex_lock(&st->mu);
        snprintf(
            body, sizeof body,
            "{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodeClaim\",\"metadata\":{\"name\":"
            "\"nc1\",\"resourceVersion\":\"%d\",\"finalizers\":[\"a\"]}}",
            10 + st->puts);
        pthread_mutex_unlock(&st->mu);
        fake_reply(c, 200, "", body);
        return;
    }
    if (!strcmp(r->method, "PUT") && strstr(p, "/nodeclaims/nc1")) {
        pthread_mutex_lock(&st->mu);
        st->puts++;
        int conflict = st->conflicts_left-- > 0;
        pthread_mutex_unlock(&st->mu);
        if (conflict)
            fake_reply(
                c, 409, "",
                "{\"kind\":\"Status\",\"reason\":\"Conflict\",\"message\":\"the object has been "
                "modified; please apply your changes to the latest version and try "
                "again\",\"code\":409}");
        else
            fake_reply(c, 200, "", r->body);
        return;
    }
    if (!strcmp(r->method, "GET") && strstr(p, "/nodeclaims/dying")) {
        fake_reply(
            c, 200, "",
            "{\"metadata\":{\"name\":\"dying\",\"resourceVersion\":\"3\",\"deletionTimestamp\":"
            "\"2026-01-01T00:00:00Z\",\"finalizers\":[\"karpenter.sh/termination\"]}}");
        return;
    }
    if (!strcmp(r->method, "PATCH")) {
        fake_reply(c, 200, "", "{\"metadata\":{\"name\":\"x\"}}");
        return;
    }
    if (!strcmp(r->method, "DELETE")) {
        if (strstr(p, "/gone"))
            fake_reply(c, 404, "", "{\"kind\":\"Status\",\"reason\":\"NotFound\",\"code\":404}");
        else
            fake_reply(c, 200, "", "{\"kind\":\"Status\",\"status\":\"Success\"}");
        return;
    }
    if (!strcmp(r->method, "POST") && strstr(p, "/eviction")) {
        if (strstr(p, "/pods/ok/"))
            fake_reply(c, 201, "", "{\"kind\":\"Status\",\"status\":\"Success\",\"code\":201}");
        else if (strstr(p, "/pods/gone/"))
            fake_reply(c, 404, "", "{\"kind\":\"Status\",\"reason\":\"NotFound\",\"code\":404}");
        else if (strstr(p, "/pods/pdb/"))
            fake_reply(
                c, 429, "",
                "{\"kind\":\"Status\",\"reason\":\"TooManyRequests\",\"message\":\"Cannot evict "
                "pod as it would violate the pod's disruption budget.\",\"code\":429}");
        else if (strstr(p, "/pods/later/"))
            fake_reply(c, 429, "Retry-After: 7\r\n",
                       "{\"kind\":\"Status\",\"reason\":\"TooManyRequests\",\"code\":429}");
        else
            fake_reply(
                c, 500, "",
                "{\"kind\":\"Status\",\"reason\":\"InternalError\",\"message\":\"This pod has "
                "more than one PodDisruptionBudget, which the eviction subresource does not "
                "support.\",\"code\":500}");
        return;
    }
    if (!strcmp(r->method, "POST")) {
        fake_reply(c, 201, "", r->body);
        return;
    }
    fake_reply(c, 404, "", "{\"kind\":\"Status\",\"code\":404}");
}

static int mutate_label(cJSON *obj, void *ud)
{
    int *calls = ud;
    (*calls)++;
    cJSON *m = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    cJSON *l = cJSON_AddObjectToObject(m, "labels");
    cJSON_AddStringToObject(l, "nodewarden.io/touched", "yes");
    return 0;
}

START_TEST(update_retries_on_conflict)
{
    wr_state_t st = {.conflicts_left = 2};
    pthread_mutex_init(&st.mu, NULL);
    st.srv = fake_srv_start(write_handler, &st);
    nw_kube_client_t *c = mk_client(fake_srv_port(st.srv), "t", NULL);
    int calls = 0;
    nw_err_t err = {0};
    cJSON *out = NULL;
    ck_assert_int_eq(nw_kube_write_update_retry(c, &nw_kube_client_res_nodeclaims, NULL, "nc1", 0,
                                                mutate_label, &calls, 5, &out, &err),
                     NW_OK);
    ck_assert_int_eq(calls, 3);
    ck_assert_int_eq(st.puts, 3);
    /* the successful PUT carried the freshest resourceVersion and the change */
    ck_assert_ptr_nonnull(strstr(st.last_body, "\"resourceVersion\":\"12\""));
    ck_assert_ptr_nonnull(strstr(st.last_body, "nodewarden.io/touched"));
    ck_assert_ptr_nonnull(out);
    cJSON_Delete(out);
    /* bounded: always conflicting → NW_ECONFLICT after max attempts */
    st.conflicts_left = 100;
    st.puts = 0;
    calls = 0;
    ck_assert_int_eq(nw_kube_write_update_retry(c, &nw_kube_client_res_nodeclaims, NULL, "nc1", 1,
                                                mutate_label, &calls, 3, NULL, &err),
                     NW_ECONFLICT);
    ck_assert_int_eq(calls, 3);
    ck_assert_ptr_nonnull(strstr(st.log, "PUT /apis/karpenter.sh/v1/nodeclaims/nc1/status;"));
    nw_kube_client_free(c);
    fake_srv_stop(st.srv);
}
END_TEST

START_TEST(finalizers_patch_delete)
{
    wr_state_t st = {0};
    pthread_mutex_init(&st.mu, NULL);
    st.srv = fake_srv_start(write_handler, &st);
    nw_kube_client_t *c = mk_client(fake_srv_port(st.srv), "t", NULL);
    nw_err_t err = {0};
    ck_assert_int_eq(nw_kube_write_finalizer_add(c, &nw_kube_client_res_nodeclaims, NULL, "nc1",
                                                 "nodewarden.io/termination", &err),
                     NW_OK);
    ck_assert_str_eq(st.last_method, "PATCH");
    ck_assert_str_eq(st.last_ctype, "application/json-patch+json");
    ck_assert_str_eq(st.last_body,
                     "[{\"op\":\"test\",\"path\":\"/metadata/resourceVersion\",\"value\":\"10\"},"
                     "{\"op\":\"add\",\"path\":\"/metadata/finalizers/"
                     "-\",\"value\":\"nodewarden.io/termination\"}]");
    /* already present: no write */
    st.last_method[0] = '\0';
    ck_assert_int_eq(
        nw_kube_write_finalizer_add(c, &nw_kube_client_res_nodeclaims, NULL, "nc1", "a", &err),
        NW_OK);
    ck_assert_str_eq(st.last_method, "GET");
    ck_assert_int_eq(
        nw_kube_write_finalizer_remove(c, &nw_kube_client_res_nodeclaims, NULL, "nc1", "a", &err),
        NW_OK);
    ck_assert_str_eq(st.last_body,
                     "[{\"op\":\"test\",\"path\":\"/metadata/finalizers/0\",\"value\":\"a\"},"
                     "{\"op\":\"remove\",\"path\":\"/metadata/finalizers/0\"}]");
    /* being deleted: no new finalizer */
    ck_assert_int_eq(
        nw_kube_write_finalizer_add(c, &nw_kube_client_res_nodeclaims, NULL, "dying", "b", &err),
        NW_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "no new finalizers"));
    /* merge patch to the status subresource */
    ck_assert_int_eq(
        nw_kube_write_patch(c, &nw_kube_client_res_nodeclaims, NULL, "nc1", NW_KUBE_PATCH_MERGE,
                            "{\"status\":{\"providerID\":\"aws:///a/i-1\"}}", 1, NULL, &err),
        NW_OK);
    ck_assert_str_eq(st.last_ctype, "application/merge-patch+json");
    ck_assert_ptr_nonnull(strstr(st.log, "PATCH /apis/karpenter.sh/v1/nodeclaims/nc1/status;"));
    /* delete with options; 404 is success */
    nw_kube_delete_opts_t dopt = {.propagation = "Foreground", .grace_seconds = 0, .uid = "u1"};
    int gone = -1;
    ck_assert_int_eq(
        nw_kube_write_delete(c, &nw_kube_client_res_pods, "ns", "web", &dopt, &gone, &err), NW_OK);
    ck_assert_int_eq(gone, 0);
    ck_assert_ptr_nonnull(strstr(st.last_body, "\"propagationPolicy\":\"Foreground\""));
    ck_assert_ptr_nonnull(strstr(st.last_body, "\"gracePeriodSeconds\":0"));
    ck_assert_ptr_nonnull(strstr(st.last_body, "\"preconditions\":{\"uid\":\"u1\"}"));
    ck_assert_ptr_nonnull(strstr(st.log, "DELETE /api/v1/namespaces/ns/pods/web;"));
    ck_assert_int_eq(
        nw_kube_write_delete(c, &nw_kube_client_res_nodes, NULL, "gone", NULL, &gone, &err), NW_OK);
    ck_assert_int_eq(gone, 1);
    /* create puts namespaced objects in their namespace */
    cJSON *o = cJSON_Parse("{\"metadata\":{\"name\":\"x\",\"namespace\":\"team\"}}");
    ck_assert_int_eq(nw_kube_write_create(c, &nw_kube_client_res_pdbs, NULL, o, NULL, &err), NW_OK);
    cJSON_Delete(o);
    ck_assert_ptr_nonnull(
        strstr(st.log, "POST /apis/policy/v1/namespaces/team/poddisruptionbudgets;"));
    nw_kube_client_free(c);
    fake_srv_stop(st.srv);
}
END_TEST

START_TEST(eviction_answers)
{
    wr_state_t st = {0};
    pthread_mutex_init(&st.mu, NULL);
    st.srv = fake_srv_start(write_handler, &st);
    nw_kube_client_t *c = mk_client(fake_srv_port(st.srv), "t", NULL);
    nw_kube_evict_t res;
    int ra;
    nw_err_t err = {0};
    ck_assert_int_eq(nw_kube_write_evict(c, "ns", "ok", 30, &res, &ra, &err), NW_OK);
    ck_assert_int_eq(res, NW_KUBE_EVICT_STARTED);
    ck_assert_str_eq(
        st.last_body,
        "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":{\"name\":\"ok\","
        "\"namespace\":\"ns\"},\"deleteOptions\":{\"gracePeriodSeconds\":30}}");
    ck_assert_int_eq(nw_kube_write_evict(c, "ns", "gone", -1, &res, &ra, &err), NW_OK);
    ck_assert_int_eq(res, NW_KUBE_EVICT_GONE);
    nw_err_clear(&err);
    ck_assert_int_eq(nw_kube_write_evict(c, "ns", "pdb", -1, &res, &ra, &err), NW_OK);
    ck_assert_int_eq(res, NW_KUBE_EVICT_NOT_NOW);
    ck_assert_int_eq(ra, 5);
    ck_assert_ptr_nonnull(strstr(err.msg, "disruption budget"));
    ck_assert_int_eq(nw_kube_write_evict(c, "ns", "later", -1, &res, &ra, &err), NW_OK);
    ck_assert_int_eq(res, NW_KUBE_EVICT_NOT_NOW);
    ck_assert_int_eq(ra, 7);
    nw_err_clear(&err);
    ck_assert_int_eq(nw_kube_write_evict(c, "ns", "multi", -1, &res, &ra, &err), NW_OK);
    ck_assert_int_eq(res, NW_KUBE_EVICT_BLOCKED);
    ck_assert_ptr_nonnull(strstr(err.msg, "more than one PodDisruptionBudget"));
    /* evictions are never retried by the client: the caller decides */
    ck_assert_int_eq(nw_kube_metrics_get(nw_kube_client_metrics(c), NW_KM_RETRIES, "create",
                                         "pods/eviction", -1),
                     0);
    nw_kube_client_free(c);
    fake_srv_stop(st.srv);
}
END_TEST

/* ---- events ---------------------------------------------------------------------------------- */

typedef struct {
    fake_srv_t *srv;
    pthread_mutex_t mu;
    int posts, patches;
    char last_patch[512];
    char last_post[4096];
    char post_path[4096];
} ev_state_t;

static void event_handler(void *ud, const fake_req_t *r, fake_conn_t *c)
{
    ev_state_t *st = ud;
    pthread_mutex_lock(&st->mu);
    if (!strcmp(r->method, "POST")) {
        st->posts++;
        snprintf(st->last_post, sizeof st->last_post, "%s", r->body);
        snprintf(st->post_path, sizeof st->post_path, "%s", r->path);
    } else if (!strcmp(r->method, "PATCH")) {
        st->patches++;
        snprintf(st->last_patch, sizeof st->last_patch, "%s", r->body);
    }
    pthread_mutex_unlock(&st->mu);
    fake_reply(c, !strcmp(r->method, "POST") ? 201 : 200, "", "{}");
}

START_TEST(events_aggregate)
{
    ev_state_t st = {0};
    pthread_mutex_init(&st.mu, NULL);
    st.srv = fake_srv_start(event_handler, &st);
    nw_clock_fake_t fc;
    nw_clock_fake_init(&fc, INT64_C(1780000000) * NW_NS_PER_SEC);
    nw_kube_client_t *c = mk_client(fake_srv_port(st.srv), "t", &fc.base);
    nw_kube_recorder_t *r = nw_kube_write_recorder_new(c, "nodewarden", "nodewarden-0");
    cJSON *nc =
        cJSON_Parse("{\"metadata\":{\"name\":\"nc1\",\"uid\":\"u1\",\"resourceVersion\":\"4\"}}");
    nw_err_t err = {0};
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(nw_kube_write_event(r, &nw_kube_client_res_nodeclaims, nc, "Normal",
                                             "Launched", "launched m6i.large in us-west-2a", &err),
                         NW_OK);
        nw_clock_fake_advance(&fc, 2 * NW_NS_PER_SEC);
    }
    ck_assert_int_eq(st.posts, 1);
    ck_assert_int_eq(st.patches, 2);
    ck_assert_ptr_nonnull(strstr(st.last_patch, "\"count\":3"));
    ck_assert_ptr_nonnull(strstr(st.last_patch, "\"lastTimestamp\":\"2026-05-28T20:26:44Z\""));
    /* cluster-scoped objects: events in "default" */
    ck_assert_str_eq(st.post_path, "/api/v1/namespaces/default/events");
    cJSON *ev = cJSON_Parse(st.last_post);
    ck_assert_ptr_nonnull(ev);
    const cJSON *io = cJSON_GetObjectItemCaseSensitive(ev, "involvedObject");
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(io, "kind")),
                     "NodeClaim");
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(io, "apiVersion")),
                     "karpenter.sh/v1");
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(io, "uid")), "u1");
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "reason")),
                     "Launched");
    ck_assert_str_eq(
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "reportingComponent")),
        "nodewarden");
    cJSON_Delete(ev);
    /* another message is another event */
    ck_assert_int_eq(nw_kube_write_event(r, &nw_kube_client_res_nodeclaims, nc, "Warning",
                                         "LaunchFailed", "ICE", &err),
                     NW_OK);
    ck_assert_int_eq(st.posts, 2);
    /* a flood is limited: the burst passes, the rest is counted and carried */
    for (int i = 0; i < 200; i++)
        nw_kube_write_event(r, &nw_kube_client_res_nodeclaims, nc, "Warning", "LaunchFailed", "ICE",
                            &err);
    uint64_t created, patched, suppressed;
    nw_kube_write_recorder_stats(r, &created, &patched, &suppressed);
    ck_assert_uint_eq(created, 2);
    ck_assert_uint_lt(patched, 30);
    ck_assert_uint_gt(suppressed, 150);
    cJSON_Delete(nc);
    nw_kube_write_recorder_free(r);
    nw_kube_client_free(c);
    fake_srv_stop(st.srv);
}
END_TEST

/* ---- leader election ----------------------------------------------------------------------- */

typedef struct {
    fake_srv_t *srv;
    pthread_mutex_t mu;
    char *lease; /* JSON or NULL */
    int rv;
} lease_state_t;

static void lease_handler(void *ud, const fake_req_t *r, fake_conn_t *c)
{
    lease_state_t *st = ud;
    pthread_mutex_lock(&st->mu);
    if (!strcmp(r->method, "GET")) {
        if (st->lease)
            fake_reply(c, 200, "", st->lease);
        else
            fake_reply(c, 404, "", "{\"kind\":\"Status\",\"reason\":\"NotFound\",\"code\":404}");
    } else if (!strcmp(r->method, "POST") || !strcmp(r->method, "PUT")) {
        cJSON *o = cJSON_Parse(r->body);
        cJSON *m = cJSON_GetObjectItemCaseSensitive(o, "metadata");
        const char *rv =
            cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "resourceVersion"));
        char cur[16];
        snprintf(cur, sizeof cur, "%d", st->rv);
        if ((!strcmp(r->method, "POST") && st->lease) ||
            (!strcmp(r->method, "PUT") && (!rv || strcmp(rv, cur) != 0))) {
            fake_reply(c, 409, "", "{\"kind\":\"Status\",\"reason\":\"Conflict\",\"code\":409}");
        } else {
            st->rv++;
            snprintf(cur, sizeof cur, "%d", st->rv);
            cJSON_DeleteItemFromObjectCaseSensitive(m, "resourceVersion");
            cJSON_AddStringToObject(m, "resourceVersion", cur);
            free(st->lease);
            st->lease = cJSON_PrintUnformatted(o);
            fake_reply(c, !strcmp(r->method, "POST") ? 201 : 200, "", st->lease);
        }
        cJSON_Delete(o);
    } else {
        fake_reply(c, 405, "", "{}");
    }
    pthread_mutex_unlock(&st->mu);
}

static const char *holder(lease_state_t *st, char *buf, size_t len)
{
    pthread_mutex_lock(&st->mu);
    cJSON *o = cJSON_Parse(st->lease);
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(o, "spec");
    snprintf(buf, len, "%s",
             cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(spec, "holderIdentity")));
    cJSON_Delete(o);
    pthread_mutex_unlock(&st->mu);
    return buf;
}

START_TEST(leader_lease_algorithm)
{
    static lease_state_t st; /* static: see leader_thread_release */
    memset(&st, 0, sizeof st);
    pthread_mutex_init(&st.mu, NULL);
    st.srv = fake_srv_start(lease_handler, &st);
    nw_clock_fake_t fc;
    nw_clock_fake_init(&fc, INT64_C(1780000000) * NW_NS_PER_SEC);
    nw_kube_client_t *c = mk_client(fake_srv_port(st.srv), "t", &fc.base);
    nw_kube_leader_opts_t o = {
        .namespace = "nodewarden", .name = "nodewarden-leader", .identity = "a"};
    nw_kube_leader_t *a = NULL, *b = NULL;
    nw_err_t err = {0};
    ck_assert_int_eq(nw_kube_leader_new(c, &o, &a, &err), NW_OK);
    o.identity = "b";
    ck_assert_int_eq(nw_kube_leader_new(c, &o, &b, &err), NW_OK);
    int la = 0, lb = 0;
    char h[64];
    ck_assert_int_eq(nw_kube_leader_try(a, &la, &err), NW_OK); /* creates the Lease */
    ck_assert_int_eq(la, 1);
    ck_assert_int_eq(nw_kube_leader_try(b, &lb, &err), NW_OK);
    ck_assert_int_eq(lb, 0);
    ck_assert_str_eq(holder(&st, h, sizeof h), "a");
    ck_assert_ptr_nonnull(strstr(st.lease, "\"leaseDurationSeconds\":15"));
    ck_assert_ptr_nonnull(strstr(st.lease, "\"renewTime\":\"2026-05-28T20:26:40.000000Z\""));
    /* a renews every 2 s: b never sees it expire */
    for (int i = 0; i < 20; i++) {
        nw_clock_fake_advance(&fc, 2 * NW_NS_PER_SEC);
        ck_assert_int_eq(nw_kube_leader_try(a, &la, &err), NW_OK);
        ck_assert_int_eq(la, 1);
        ck_assert_int_eq(nw_kube_leader_try(b, &lb, &err), NW_OK);
        ck_assert_int_eq(lb, 0);
    }
    /* a stops renewing: b waits a full lease duration from the last change it saw */
    nw_clock_fake_advance(&fc, 14 * NW_NS_PER_SEC);
    ck_assert_int_eq(nw_kube_leader_try(b, &lb, &err), NW_OK);
    ck_assert_int_eq(lb, 0);
    nw_clock_fake_advance(&fc, 2 * NW_NS_PER_SEC);
    ck_assert_int_eq(nw_kube_leader_try(b, &lb, &err), NW_OK);
    ck_assert_int_eq(lb, 1);
    ck_assert_str_eq(holder(&st, h, sizeof h), "b");
    ck_assert_ptr_nonnull(strstr(st.lease, "\"leaseTransitions\":1"));
    /* a comes back: not leader any more */
    ck_assert_int_eq(nw_kube_leader_try(a, &la, &err), NW_OK);
    ck_assert_int_eq(la, 0);
    /* bad timings are rejected */
    nw_kube_leader_opts_t bad = {
        .namespace = "n", .name = "l", .lease_ms = 5000, .renew_deadline_ms = 10000};
    nw_kube_leader_t *x = NULL;
    ck_assert_int_eq(nw_kube_leader_new(c, &bad, &x, &err), NW_EINVAL);
    nw_kube_leader_free(a);
    nw_kube_leader_free(b);
    nw_kube_client_free(c);
    fake_srv_stop(st.srv);
    free(st.lease);
}
END_TEST

typedef struct {
    _Atomic int started, stopped;
} cb_state_t;

static void on_start(void *ud)
{
    /* a slow callback: is_leader() must not turn 1 before it has returned */
    sleep_ms(50);
    atomic_fetch_add(&((cb_state_t *)ud)->started, 1);
}

static void on_stop(void *ud)
{
    atomic_fetch_add(&((cb_state_t *)ud)->stopped, 1);
}

/* The threaded elector: acquires, then releases on stop so a standby takes over at once.
 * is_leader() turns 1 only once on_started has returned (the callback is slow on purpose).
 * The state the server and elector threads point at is static, not on this frame: under
 * CK_FORK=no a failed assertion longjmps out of the test while those threads keep
 * running, and a dangling stack pointer would turn the failure into a SEGV later. */
START_TEST(leader_thread_release)
{
    static lease_state_t st;
    static cb_state_t ca, cb;
    memset(&st, 0, sizeof st);
    atomic_store(&ca.started, 0);
    atomic_store(&ca.stopped, 0);
    atomic_store(&cb.started, 0);
    atomic_store(&cb.stopped, 0);
    pthread_mutex_init(&st.mu, NULL);
    st.srv = fake_srv_start(lease_handler, &st);
    nw_kube_client_t *c = mk_client(fake_srv_port(st.srv), "t", NULL);
    nw_kube_leader_opts_t o = {.namespace = "nodewarden",
                               .name = "l",
                               .identity = "a",
                               .lease_ms = 1500,
                               .renew_deadline_ms = 1000,
                               .retry_ms = 200,
                               .on_started = on_start,
                               .on_stopped = on_stop,
                               .ud = &ca};
    nw_kube_leader_t *a = NULL, *b = NULL;
    nw_err_t err = {0};
    ck_assert_int_eq(nw_kube_leader_new(c, &o, &a, &err), NW_OK);
    o.identity = "b";
    o.ud = &cb;
    ck_assert_int_eq(nw_kube_leader_new(c, &o, &b, &err), NW_OK);
    ck_assert_int_eq(nw_kube_leader_start(a, &err), NW_OK);
    for (int i = 0; i < 500 && !nw_kube_leader_is_leader(a); i++)
        sleep_ms(10);
    ck_assert_int_eq(nw_kube_leader_is_leader(a), 1);
    ck_assert_int_eq(nw_kube_leader_start(b, &err), NW_OK);
    sleep_ms(600);
    ck_assert_int_eq(nw_kube_leader_is_leader(b), 0);
    ck_assert_int_eq(atomic_load(&ca.started), 1);
    nw_kube_leader_stop(a); /* releases */
    ck_assert_int_eq(atomic_load(&ca.stopped), 1);
    for (int i = 0; i < 500 && !nw_kube_leader_is_leader(b); i++)
        sleep_ms(10);
    ck_assert_int_eq(nw_kube_leader_is_leader(b), 1);
    /* on_started runs on b's thread just after it became leader: wait for it */
    for (int i = 0; i < 500 && atomic_load(&cb.started) == 0; i++)
        sleep_ms(10);
    ck_assert_int_eq(atomic_load(&cb.started), 1);
    nw_kube_leader_free(b);
    ck_assert_int_eq(atomic_load(&cb.stopped), 1);
    nw_kube_leader_free(a);
    nw_kube_client_free(c);
    fake_srv_stop(st.srv);
    free(st.lease);
}
END_TEST

Suite *nw_kube_client_suite(void)
{
    Suite *s = suite_create("kube_client");
    TCase *tc = tcase_create("client");
    tcase_add_test(tc, retry_5xx_then_ok);
    tcase_add_test(tc, thread_limiter_is_its_own_budget);
    tcase_add_test(tc, post_not_repeated_after_maybe_done);
    tcase_add_test(tc, watch_expiry_unsynced_until_relist);
    tcase_add_test(tc, watch_expiry_storm_backs_off);
    tcase_add_test(tc, no_server);
    tcase_add_test(tc, bad_token_clear_error);
    tcase_add_test(tc, token_file_reloaded_on_401);
    tcase_add_test(tc, list_paging_and_expired_continue);
    tcase_add_test(tc, watch_resume_drop_and_relist);
    tcase_add_test(tc, watch_10000_events_memory_flat);
    tcase_add_test(tc, watch_waits_once_for_its_token);
    tcase_add_test(tc, update_retries_on_conflict);
    tcase_add_test(tc, finalizers_patch_delete);
    tcase_add_test(tc, eviction_answers);
    tcase_add_test(tc, events_aggregate);
    tcase_add_test(tc, leader_lease_algorithm);
    tcase_add_test(tc, leader_thread_release);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return s;
}
