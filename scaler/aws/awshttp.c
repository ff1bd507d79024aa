/* scaler/aws/awshttp.c — HTTP to AWS endpoints with libcurl; see awshttp.h. */
#include "scaler/aws/awshttp.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "scaler/aws/sigv4.h"

/* The network settings every call reads (copied under the lock: they are set once at
 * start, but a test may set them again between calls). */
static pthread_mutex_t net_mu = PTHREAD_MUTEX_INITIALIZER;
static nw_awshttp_net_t net;

void nw_awshttp_set_net(const nw_awshttp_net_t *n)
{
    pthread_mutex_lock(&net_mu);
    if (n)
        net = *n;
    else
        memset(&net, 0, sizeof net);
    pthread_mutex_unlock(&net_mu);
}

void nw_awshttp_get_net(nw_awshttp_net_t *out)
{
    pthread_mutex_lock(&net_mu);
    *out = net;
    pthread_mutex_unlock(&net_mu);
}

void nw_awshttp_resp_init(nw_awshttp_resp_t *r)
{
    memset(r, 0, sizeof *r);
    nw_buf_init(&r->body, NW_AWSHTTP_MAX_BODY);
}

void nw_awshttp_resp_cleanup(nw_awshttp_resp_t *r)
{
    if (r)
        nw_buf_cleanup(&r->body);
}

nw_rc_t nw_awshttp_form_escape(nw_buf_t *b, const char *s)
{
    return nw_sigv4_uri_encode(b, s, strlen(s), 0);
}

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
    nw_buf_t *b = ud;
    return nw_buf_add(b, p, sz * n) == NW_OK ? sz * n : 0;
}

static int on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    const atomic_int *abort_flag = ud;
    return atomic_load(abort_flag) ? 1 : 0;
}

/* host[:port] and path?query of url via curl's URL parser. */
static NW_MUST_USE nw_rc_t split_url(const char *url, char *host, size_t hl, char *path, size_t pl,
                                     char *query, size_t ql, nw_err_t *err)
{
    CURLU *u = curl_url();
    char *h = NULL, *p = NULL, *q = NULL, *port = NULL;
    nw_rc_t rc = NW_OK;
    if (!u)
        return NW_ENOMEM;
    if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &h, 0) != CURLUE_OK) {
        rc = nw_err_set(err, NW_EINVAL, "endpoint", "not a valid URL: %s", url);
        goto out;
    }
    curl_url_get(u, CURLUPART_PORT, &port, 0); /* only when explicit */
    curl_url_get(u, CURLUPART_PATH, &p, 0);
    if (curl_url_get(u, CURLUPART_QUERY, &q, 0) != CURLUE_OK)
        q = NULL;
    snprintf(host, hl, "%s%s%s", h, port ? ":" : "", port ? port : "");
    snprintf(path, pl, "%s", p && *p ? p : "/");
    snprintf(query, ql, "%s", q ? q : "");
out:
    curl_free(h);
    curl_free(p);
    curl_free(q);
    curl_free(port);
    curl_url_cleanup(u);
    return rc;
}

/* A request as nw_awshttp_do was given it, with its URL split. */
typedef struct {
    const char *method, *url, *content_type, *body;
    size_t body_len;
    long timeout_ms;
    char host[512], path[2048], query[4096];
} http_req_t;

/* Sign r with SigV4 and append the Host, X-Amz-Date, X-Amz-Security-Token and
 * Authorization headers to *hl. */
static NW_MUST_USE nw_rc_t add_sigv4_headers(struct curl_slist **hl, const http_req_t *r,
                                             const nw_awshttp_sign_t *sign, nw_err_t *err)
{
    char line[2048];
    nw_sigv4_header_t sh[3];
    size_t n = 0;
    sh[n++] = (nw_sigv4_header_t){"Host", r->host};
    if (r->content_type)
        sh[n++] = (nw_sigv4_header_t){"Content-Type", r->content_type};
    nw_sigv4_req_t req = {.method = r->method,
                          .path = r->path,
                          .query = r->query,
                          .headers = sh,
                          .nheaders = n,
                          .payload = r->body,
                          .payload_len = r->body_len,
                          .region = sign->region,
                          .service = sign->service,
                          .time_s = sign->time_s,
                          .normalize_path = 1};
    nw_sigv4_creds_t cr = {sign->access_key_id, sign->secret_access_key, sign->session_token};
    nw_sigv4_result_t sr;
    nw_rc_t rc = nw_sigv4_sign(&req, &cr, &sr, err);
    if (rc != NW_OK)
        return rc;
    snprintf(line, sizeof line, "Host: %s", r->host);
    *hl = curl_slist_append(*hl, line);
    snprintf(line, sizeof line, "X-Amz-Date: %s", sr.amz_date);
    *hl = curl_slist_append(*hl, line);
    if (sr.session_token) {
        nw_buf_t tb;
        nw_buf_init(&tb, 16384);
        if (nw_buf_addf(&tb, "X-Amz-Security-Token: %s", sr.session_token) == NW_OK)
            *hl = curl_slist_append(*hl, nw_buf_str(&tb));
        nw_buf_cleanup(&tb);
    }
    snprintf(line, sizeof line, "Authorization: %s", sr.authorization);
    *hl = curl_slist_append(*hl, line);
    return NW_OK;
}

/* The CA bundle and the proxy for r (n: the settings in effect). libcurl reads the
 * proxy variables itself when CURLOPT_PROXY is unset; it is always set here, "" for
 * none, so only the rules of awshttp.h apply. */
static void setup_net(CURL *c, const http_req_t *r, const nw_awshttp_net_t *n, int direct)
{
    if (n->ca_bundle[0]) {
        curl_easy_setopt(c, CURLOPT_CAINFO, n->ca_bundle);
        curl_easy_setopt(c, CURLOPT_CAPATH, NULL); /* the bundle replaces the system's */
    }
    const char *proxy = strncasecmp(r->url, "https://", 8) == 0 ? n->https_proxy : n->http_proxy;
    curl_easy_setopt(c, CURLOPT_PROXY, direct ? "" : proxy);
    curl_easy_setopt(c, CURLOPT_NOPROXY, n->no_proxy[0] ? n->no_proxy : "");
}

/* Set the handle up for r: URL, timeouts, headers hl, the body into resp (and resp's
 * abort flag checked while it runs), method and payload. */
static void setup_handle(CURL *c, const http_req_t *r, struct curl_slist *hl,
                         nw_awshttp_resp_t *resp, const nw_awshttp_net_t *n)
{
    curl_easy_setopt(c, CURLOPT_URL, r->url);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, r->timeout_ms > 0 ? r->timeout_ms : 10000L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                     r->timeout_ms > 0 && r->timeout_ms < 5000 ? r->timeout_ms : 5000L);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &resp->body);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    setup_net(c, r, n, resp->direct);
    if (resp->abort) {
        curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
        curl_easy_setopt(c, CURLOPT_XFERINFODATA, (void *)resp->abort);
        curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    }
    if (strcmp(r->method, "GET") == 0) {
        curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    } else {
        if (strcmp(r->method, "POST") != 0)
            curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, r->method);
        curl_easy_setopt(c, CURLOPT_POST, 1L);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, r->body ? r->body : "");
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
    }
}

nw_rc_t nw_awshttp_do(const char *method, const char *url, const char *const *headers,
                      const char *content_type, const char *body, size_t body_len,
                      const nw_awshttp_sign_t *sign, long timeout_ms, nw_awshttp_resp_t *resp,
                      nw_err_t *err)
{
    http_req_t r = {.method = method,
                    .url = url,
                    .content_type = content_type,
                    .body = body,
                    .body_len = body_len,
                    .timeout_ms = timeout_ms};
    char line[2048];
    struct curl_slist *hl = NULL;
    nw_rc_t rc = NW_OK;
    CURL *c = NULL;

    nw_buf_reset(&resp->body);
    resp->status = 0;
    resp->timed_out = 0;
    if ((rc = split_url(url, r.host, sizeof r.host, r.path, sizeof r.path, r.query, sizeof r.query,
                        err)) != NW_OK)
        return rc;
    c = curl_easy_init();
    if (!c)
        return nw_err_set(err, NW_ENOMEM, "http", "curl_easy_init failed");

    for (const char *const *h = headers; h && *h; h++)
        hl = curl_slist_append(hl, *h);
    if (content_type) {
        snprintf(line, sizeof line, "Content-Type: %s", content_type);
        hl = curl_slist_append(hl, line);
    }
    if (sign && sign->access_key_id && *sign->access_key_id &&
        (rc = add_sigv4_headers(&hl, &r, sign, err)) != NW_OK)
        goto out;
    hl = curl_slist_append(hl, "Expect:");

    nw_awshttp_net_t n;
    nw_awshttp_get_net(&n);
    setup_handle(c, &r, hl, resp, &n);
    char ebuf[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, ebuf);
    CURLcode cc = curl_easy_perform(c);
    if (cc == CURLE_OPERATION_TIMEDOUT) {
        resp->timed_out = 1;
        rc = nw_err_set(err, NW_ETIMEOUT, "http", "%s %s%s: timed out after %ld ms", method, r.host,
                        r.path, timeout_ms);
        goto out;
    }
    if (cc == CURLE_ABORTED_BY_CALLBACK) {
        rc = nw_err_set(err, NW_EIO, "http", "%s %s%s: aborted", method, r.host, r.path);
        goto out;
    }
    if (cc != CURLE_OK) {
        rc = nw_err_set(err, NW_EIO, "http", "%s %s%s: %s", method, r.host, r.path,
                        ebuf[0] ? ebuf : curl_easy_strerror(cc));
        goto out;
    }
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &resp->status);
out:
    curl_slist_free_all(hl);
    curl_easy_cleanup(c);
    return rc;
}
