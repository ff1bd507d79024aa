/* scaler/kube/client.c — connection pool, auth, request path with retries. */
#include "common/file.h"
#include "scaler/kube/client.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "common/log.h"
#include "scaler/kube/execcred.h"
#include "scaler/kube/retry.h"

#define RESP_MAX_BYTES ((size_t)64 << 20)

const nw_kube_res_t nw_kube_client_res_pods = {"/api/v1", "pods", "Pod", "v1", 1};
const nw_kube_res_t nw_kube_client_res_nodes = {"/api/v1", "nodes", "Node", "v1", 0};
const nw_kube_res_t nw_kube_client_res_namespaces = {"/api/v1", "namespaces", "Namespace", "v1", 0};
const nw_kube_res_t nw_kube_client_res_secrets = {"/api/v1", "secrets", "Secret", "v1", 1};
const nw_kube_res_t nw_kube_client_res_pvs = {"/api/v1", "persistentvolumes", "PersistentVolume",
                                              "v1", 0};
const nw_kube_res_t nw_kube_client_res_pvcs = {"/api/v1", "persistentvolumeclaims",
                                               "PersistentVolumeClaim", "v1", 1};
const nw_kube_res_t nw_kube_client_res_storageclasses = {
    "/apis/storage.k8s.io/v1", "storageclasses", "StorageClass", "storage.k8s.io/v1", 0};
const nw_kube_res_t nw_kube_client_res_csinodes = {"/apis/storage.k8s.io/v1", "csinodes", "CSINode",
                                                   "storage.k8s.io/v1", 0};
const nw_kube_res_t nw_kube_client_res_resourceclaims = {
    "/apis/resource.k8s.io/v1", "resourceclaims", "ResourceClaim", "resource.k8s.io/v1", 1};
const nw_kube_res_t nw_kube_client_res_resourceclaimtemplates = {
    "/apis/resource.k8s.io/v1", "resourceclaimtemplates", "ResourceClaimTemplate",
    "resource.k8s.io/v1", 1};
const nw_kube_res_t nw_kube_client_res_deviceclasses = {"/apis/resource.k8s.io/v1", "deviceclasses",
                                                        "DeviceClass", "resource.k8s.io/v1", 0};
const nw_kube_res_t nw_kube_client_res_events = {"/api/v1", "events", "Event", "v1", 1};
const nw_kube_res_t nw_kube_client_res_nodepools = {"/apis/karpenter.sh/v1", "nodepools",
                                                    "NodePool", "karpenter.sh/v1", 0};
const nw_kube_res_t nw_kube_client_res_nodeclaims = {"/apis/karpenter.sh/v1", "nodeclaims",
                                                     "NodeClaim", "karpenter.sh/v1", 0};
const nw_kube_res_t nw_kube_client_res_ec2nodeclasses = {
    "/apis/karpenter.k8s.aws/v1", "ec2nodeclasses", "EC2NodeClass", "karpenter.k8s.aws/v1", 0};
const nw_kube_res_t nw_kube_client_res_pdbs = {"/apis/policy/v1", "poddisruptionbudgets",
                                               "PodDisruptionBudget", "policy/v1", 1};
const nw_kube_res_t nw_kube_client_res_daemonsets = {"/apis/apps/v1", "daemonsets", "DaemonSet",
                                                     "apps/v1", 1};
const nw_kube_res_t nw_kube_client_res_leases = {"/apis/coordination.k8s.io/v1", "leases", "Lease",
                                                 "coordination.k8s.io/v1", 1};

struct nw_kube_client {
    nw_kube_config_t *cfg;
    nw_kube_client_opts_t opts;
    CURLSH *share; /* DNS cache and TLS sessions only: libcurl does not support sharing
                      the connection cache between threads (KNOWN_BUGS "Connection
                      pool sharing"), so connections live in pooled easy handles */
    pthread_mutex_t share_mu[CURL_LOCK_DATA_LAST];
    /* idle easy handles: each keeps its own connection cache, used by one request at
     * a time; curl_easy_reset between uses keeps the live connection */
    pthread_mutex_t pool_mu;
    CURL *pool[8];
    int npool;
    nw_kube_rl_t rl;
    const atomic_int *abort; /* nullable: no rate limit, no retries while non-zero */
    nw_kube_metrics_t *metrics;
    char *base_url;                /* server URL, host replaced by tls-server-name if set */
    struct curl_slist *connect_to; /* tls-server-name: connect to the real host */
    char user_agent[96];
    nw_execcred_t *exec; /* the kubeconfig's credential plugin, or NULL */
    /* token */
    pthread_mutex_t tok_mu;
    char *token;
    int64_t token_read_ns; /* monotonic time of the last read; 0 = never */
};

/* An idle easy handle from the pool, or a new one. */
static CURL *handle_take(nw_kube_client_t *c)
{
    CURL *h = NULL;
    pthread_mutex_lock(&c->pool_mu);
    if (c->npool > 0)
        h = c->pool[--c->npool];
    pthread_mutex_unlock(&c->pool_mu);
    return h ? h : curl_easy_init();
}

/* Back to the pool (reset: options and buffers cleared, the connection kept). */
static void handle_give(nw_kube_client_t *c, CURL *h)
{
    curl_easy_reset(h);
    pthread_mutex_lock(&c->pool_mu);
    if (c->npool < (int)(sizeof c->pool / sizeof c->pool[0])) {
        c->pool[c->npool++] = h;
        h = NULL;
    }
    pthread_mutex_unlock(&c->pool_mu);
    if (h)
        curl_easy_cleanup(h);
}

/* ---- paths ---------------------------------------------------------------------- */

static NW_MUST_USE nw_rc_t add_escaped(nw_buf_t *out, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        nw_rc_t rc;
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            *p == '-' || *p == '.' || *p == '_' || *p == '~') {
            char ch = (char)*p;
            rc = nw_buf_add(out, &ch, 1);
        } else {
            char e[3] = {'%', hex[*p >> 4], hex[*p & 15]};
            rc = nw_buf_add(out, e, 3);
        }
        if (rc)
            return rc;
    }
    return NW_OK;
}

nw_rc_t nw_kube_client_path(nw_buf_t *out, const nw_kube_res_t *r, const char *ns, const char *name,
                            const char *sub)
{
    nw_rc_t rc = nw_buf_adds(out, r->prefix);
    if (!rc && r->namespaced && ns && ns[0]) {
        rc = nw_buf_adds(out, "/namespaces/");
        if (!rc)
            rc = add_escaped(out, ns);
    }
    if (!rc)
        rc = nw_buf_addf(out, "/%s", r->plural);
    if (!rc && name && name[0]) {
        rc = nw_buf_adds(out, "/");
        if (!rc)
            rc = add_escaped(out, name);
        if (!rc && sub && sub[0])
            rc = nw_buf_addf(out, "/%s", sub);
    }
    return rc;
}

nw_rc_t nw_kube_client_query(nw_buf_t *out, const char *k, const char *v)
{
    nw_rc_t rc = nw_buf_adds(out, strchr(nw_buf_str(out), '?') ? "&" : "?");
    if (!rc)
        rc = add_escaped(out, k);
    if (!rc)
        rc = nw_buf_adds(out, "=");
    if (!rc)
        rc = add_escaped(out, v);
    return rc;
}

cJSON *nw_kube_client_json_parse(const char *s, size_t len)
{
    const char *end = NULL;
    if (!s || !len)
        return NULL;
    return cJSON_ParseWithLengthOpts(s, len, &end, 0);
}

/* ---- client lifecycle ----------------------------------------------------------- */

static void share_lock(CURL *h, curl_lock_data data, curl_lock_access access, void *userp)
{
    (void)h;
    (void)access;
    nw_kube_client_t *c = userp;
    pthread_mutex_lock(&c->share_mu[data]);
}

static void share_unlock(CURL *h, curl_lock_data data, void *userp)
{
    (void)h;
    nw_kube_client_t *c = userp;
    pthread_mutex_unlock(&c->share_mu[data]);
}

static NW_MUST_USE nw_rc_t setup_server_name(nw_kube_client_t *c, nw_err_t *err)
{
    const char *sni = c->cfg->tls_server_name;
    if (!sni || !sni[0]) {
        c->base_url = strdup(c->cfg->server);
        return c->base_url ? NW_OK : nw_err_set(err, NW_ENOMEM, "", "out of memory");
    }
    CURLU *u = curl_url();
    char *host = NULL, *port = NULL, *url = NULL;
    nw_rc_t rc = NW_OK;
    if (!u || curl_url_set(u, CURLUPART_URL, c->cfg->server, 0) ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) ||
        curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT)) {
        rc = nw_err_set(err, NW_EINVAL, "clusters[].cluster.server",
                        "cannot parse clusters[].cluster.server %s (tls-server-name needs a URL)",
                        c->cfg->server);
        goto out;
    }
    char ct[512];
    snprintf(ct, sizeof ct, "%s:%s:%s:%s", sni, port, host, port);
    c->connect_to = curl_slist_append(NULL, ct);
    if (curl_url_set(u, CURLUPART_HOST, sni, 0) || curl_url_get(u, CURLUPART_URL, &url, 0) ||
        !c->connect_to) {
        rc = nw_err_set(err, NW_EINVAL, "clusters[].cluster.tls-server-name",
                        "invalid clusters[].cluster.tls-server-name %s", sni);
        goto out;
    }
    c->base_url = strdup(url);
    size_t l = c->base_url ? strlen(c->base_url) : 0;
    while (l > 0 && c->base_url[l - 1] == '/')
        c->base_url[--l] = '\0';
out:
    curl_free(host);
    curl_free(port);
    curl_free(url);
    curl_url_cleanup(u);
    return rc;
}

nw_rc_t nw_kube_client_new(nw_kube_config_t *cfg, const nw_kube_client_opts_t *opts,
                           nw_kube_client_t **out, nw_err_t *err)
{
    *out = NULL;
    nw_kube_client_t *c = calloc(1, sizeof *c);
    if (!c) {
        nw_kube_config_free(cfg);
        return nw_err_set(err, NW_ENOMEM, "", "out of memory");
    }
    c->cfg = cfg;
    if (opts)
        c->opts = *opts;
    nw_kube_client_opts_t *o = &c->opts;
    if (o->qps == 0)
        o->qps = 200;
    if (o->burst <= 0)
        o->burst = 300;
    if (o->timeout_ms <= 0)
        o->timeout_ms = 30000;
    if (o->connect_timeout_ms <= 0)
        o->connect_timeout_ms = 10000;
    if (o->max_retries == 0)
        o->max_retries = 5;
    if (o->max_retries < 0)
        o->max_retries = 0;
    if (o->backoff_base_ms <= 0)
        o->backoff_base_ms = 800;
    if (o->backoff_max_ms <= 0)
        o->backoff_max_ms = 30000;
    if (o->retry_after_max_s <= 0)
        o->retry_after_max_s = 60;
    if (o->token_reload_ms <= 0)
        o->token_reload_ms = 60000;
    if (!o->clock)
        o->clock = nw_clock_system();
    pthread_mutex_init(&c->tok_mu, NULL);
    pthread_mutex_init(&c->pool_mu, NULL);
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_init(&c->share_mu[i], NULL);
    nw_kube_retry_rl_init(&c->rl, o->clock, o->qps, o->burst);
    snprintf(c->user_agent, sizeof c->user_agent, "nodewarden/%s", NW_VERSION);
    c->metrics = nw_kube_metrics_new();
    c->share = curl_share_init();
    nw_rc_t rc = NW_OK;
    if (!c->metrics || !c->share) {
        rc = nw_err_set(err, NW_ENOMEM, "", "out of memory");
        goto fail;
    }
    curl_share_setopt(c->share, CURLSHOPT_LOCKFUNC, share_lock);
    curl_share_setopt(c->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
    curl_share_setopt(c->share, CURLSHOPT_USERDATA, c);
    curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
    rc = setup_server_name(c, err);
    if (rc == NW_OK && cfg->exec)
        rc = nw_execcred_new(cfg, o->clock, o->exec_timeout_ms, &c->exec, err);
    if (rc)
        goto fail;
    *out = c;
    return NW_OK;
fail:
    nw_kube_client_free(c);
    return rc;
}

void nw_kube_client_free(nw_kube_client_t *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->npool; i++)
        curl_easy_cleanup(c->pool[i]);
    pthread_mutex_destroy(&c->pool_mu);
    if (c->share)
        curl_share_cleanup(c->share);
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_destroy(&c->share_mu[i]);
    pthread_mutex_destroy(&c->tok_mu);
    nw_kube_retry_rl_cleanup(&c->rl);
    nw_kube_metrics_free(c->metrics);
    curl_slist_free_all(c->connect_to);
    nw_execcred_free(c->exec);
    free(c->base_url);
    if (c->token) {
        memset(c->token, 0, strlen(c->token));
        free(c->token);
    }
    nw_kube_config_free(c->cfg);
    free(c);
}

const nw_kube_config_t *nw_kube_client_config(const nw_kube_client_t *c)
{
    return c->cfg;
}

nw_kube_metrics_t *nw_kube_client_metrics(nw_kube_client_t *c)
{
    return c->metrics;
}

const nw_clock_t *nw_kube_client_clock(const nw_kube_client_t *c)
{
    return c->opts.clock;
}

const nw_kube_client_opts_t *nw_kube_client_opts(const nw_kube_client_t *c)
{
    return &c->opts;
}

/* ---- token ---------------------------------------------------------------------- */

int64_t nw_kube_client__rl_reserve(nw_kube_client_t *c)
{
    return nw_kube_retry_rl_reserve(&c->rl);
}

void nw_kube_client__token_invalidate(nw_kube_client_t *c)
{
    pthread_mutex_lock(&c->tok_mu);
    c->token_read_ns = 0;
    pthread_mutex_unlock(&c->tok_mu);
    if (c->exec)
        nw_execcred_invalidate(c->exec);
}

nw_rc_t nw_kube_client_credentials(nw_kube_client_t *c, nw_err_t *err)
{
    if (!c->exec)
        return NW_OK;
    nw_execcred_cred_t ec;
    nw_rc_t rc = nw_execcred_get(c->exec, &ec, err);
    nw_execcred_cred_cleanup(&ec);
    return rc;
}

long nw_kube_client_plugin_runs(const nw_kube_client_t *c)
{
    return c->exec ? nw_execcred_runs(c->exec) : 0;
}

/* "Authorization: Bearer <tok>" (caller frees), NULL when out of memory. */
static char *bearer(const char *tok)
{
    size_t n = strlen(tok) + 32;
    char *h = malloc(n);
    if (h)
        snprintf(h, n, "Authorization: Bearer %s", tok);
    return h;
}

/* Build the Authorization header (or NULL if there is no token). Caller frees. ec: the
 * plugin's credential, when there is a plugin. */
static char *auth_header(nw_kube_client_t *c, const nw_execcred_cred_t *ec)
{
    if (c->exec)
        return ec->token ? bearer(ec->token) : NULL;
    if (c->cfg->token) {
        size_t n = strlen(c->cfg->token) + 32;
        char *h = malloc(n);
        if (h)
            snprintf(h, n, "Authorization: Bearer %s", c->cfg->token);
        return h;
    }
    if (!c->cfg->token_file)
        return NULL;
    pthread_mutex_lock(&c->tok_mu);
    int64_t now = nw_clock_mono(c->opts.clock);
    if (!c->token || !c->token_read_ns ||
        now - c->token_read_ns >= c->opts.token_reload_ms * NW_NS_PER_MS) {
        size_t len;
        char *t = nw_file_read(c->cfg->token_file, 65536, &len);
        if (t) {
            while (len > 0 && (t[len - 1] == '\n' || t[len - 1] == '\r' || t[len - 1] == ' '))
                t[--len] = '\0';
            if (c->token) {
                memset(c->token, 0, strlen(c->token));
                free(c->token);
            }
            c->token = t;
            c->token_read_ns = now;
        } else {
            nw_log_every(30, NW_LOG_WARN, "kube.client",
                         "token file unreadable; keeping the old token",
                         NW_LS("file", c->cfg->token_file));
        }
    }
    char *h = NULL;
    if (c->token) {
        size_t n = strlen(c->token) + 32;
        h = malloc(n);
        if (h)
            snprintf(h, n, "Authorization: Bearer %s", c->token);
    }
    pthread_mutex_unlock(&c->tok_mu);
    return h;
}

/* ---- easy handle setup ------------------------------------------------------------ */

/* The plugin's client certificate on h (copied: ec is freed after the setup). */
static void plugin_cert(CURL *h, const nw_execcred_cred_t *ec)
{
    if (!ec->cert_pem || !ec->key_pem)
        return;
    struct curl_blob cb = {ec->cert_pem, ec->cert_len, CURL_BLOB_COPY};
    struct curl_blob kb = {ec->key_pem, ec->key_len, CURL_BLOB_COPY};
    curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &cb);
    curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
    curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &kb);
    curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
}

struct curl_slist *nw_kube_client__easy_setup(nw_kube_client_t *c, CURL *h, const char *url_path)
{
    const nw_kube_config_t *cfg = c->cfg;
    size_t ul = strlen(c->base_url) + strlen(url_path) + 1;
    char *url = malloc(ul);
    if (!url)
        return NULL;
    snprintf(url, ul, "%s%s", c->base_url, url_path);
    curl_easy_setopt(h, CURLOPT_URL, url); /* libcurl copies the string */
    free(url);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)c->opts.connect_timeout_ms);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
    if (cfg->insecure) {
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    } else {
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
    }
    if (cfg->ca_pem) {
        struct curl_blob b = {cfg->ca_pem, cfg->ca_len, CURL_BLOB_NOCOPY};
        curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &b);
    }
    if (cfg->cert_pem && cfg->key_pem) {
        struct curl_blob cb = {cfg->cert_pem, cfg->cert_len, CURL_BLOB_NOCOPY};
        struct curl_blob kb = {cfg->key_pem, cfg->key_len, CURL_BLOB_NOCOPY};
        curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &cb);
        curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
        curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &kb);
        curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
    }
    if (c->connect_to)
        curl_easy_setopt(h, CURLOPT_CONNECT_TO, c->connect_to);
    if (cfg->proxy)
        curl_easy_setopt(h, CURLOPT_PROXY, cfg->proxy);
    else
        curl_easy_setopt(h, CURLOPT_PROXY, ""); /* ignore http_proxy unless configured */
    curl_easy_setopt(h, CURLOPT_USERAGENT, c->user_agent);

    nw_execcred_cred_t ec = {0};
    nw_err_t e = {0};
    if (c->exec && nw_execcred_get(c->exec, &ec, &e) != NW_OK) /* perform() reports it */
        nw_log_every(30, NW_LOG_WARN, "kube.client", "no credential from the exec plugin",
                     NW_LS("error", e.msg));
    plugin_cert(h, &ec);
    struct curl_slist *hd = curl_slist_append(NULL, "Accept: application/json");
    char *auth = hd ? auth_header(c, &ec) : NULL;
    nw_execcred_cred_cleanup(&ec);
    if (!hd)
        return NULL;
    if (auth) {
        struct curl_slist *n = curl_slist_append(hd, auth);
        memset(auth, 0, strlen(auth));
        free(auth);
        if (!n) {
            curl_slist_free_all(hd);
            return NULL;
        }
        hd = n;
    }
    return hd;
}

/* ---- responses -------------------------------------------------------------------- */

void nw_kube_client_resp_init(nw_kube_resp_t *r)
{
    r->code = 0;
    nw_buf_init(&r->body, RESP_MAX_BYTES);
    r->retry_after_s = -1;
    r->reason[0] = r->message[0] = '\0';
}

void nw_kube_client_resp_cleanup(nw_kube_resp_t *r)
{
    nw_buf_cleanup(&r->body);
}

void nw_kube_client__resp_parse_status(nw_kube_resp_t *r)
{
    r->reason[0] = r->message[0] = '\0';
    cJSON *st = nw_kube_client_json_parse(r->body.data, r->body.len);
    const char *kind =
        st ? cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(st, "kind")) : NULL;
    if (kind && !strcmp(kind, "Status")) {
        const char *reason = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(st, "reason"));
        const char *msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(st, "message"));
        snprintf(r->reason, sizeof r->reason, "%s", reason ? reason : "");
        snprintf(r->message, sizeof r->message, "%s", msg ? msg : "");
        if (r->retry_after_s < 0) {
            const cJSON *d = cJSON_GetObjectItemCaseSensitive(st, "details");
            const cJSON *ra = cJSON_GetObjectItemCaseSensitive(d, "retryAfterSeconds");
            if (cJSON_IsNumber(ra) && ra->valuedouble > 0)
                r->retry_after_s = (int)ra->valuedouble;
        }
    } else if (!st && r->body.len) {
        /* not JSON (a proxy or load balancer): keep the start of the text */
        size_t n = r->body.len < sizeof r->message - 1 ? r->body.len : sizeof r->message - 1;
        memcpy(r->message, r->body.data, n);
        r->message[n] = '\0';
        for (char *p = r->message; *p; p++)
            if (*p == '\n' || *p == '\r')
                *p = ' ';
    }
    cJSON_Delete(st);
}

nw_rc_t nw_kube_client_resp_error(const nw_kube_resp_t *r, const char *what, nw_err_t *err)
{
    if (r->code >= 200 && r->code < 300)
        return NW_OK;
    nw_rc_t rc = NW_EKUBE;
    const char *hint = "";
    if (r->code == 404)
        rc = NW_ENOTFOUND;
    else if (r->code == 409)
        rc = NW_ECONFLICT;
    else if (r->code == 401)
        hint = " (credentials rejected: check the token or client certificate, or whether it "
               "expired)";
    else if (r->code == 403) {
        rc = NW_EFORBIDDEN;
        hint = " (RBAC: grant this verb on this resource to nodewarden's identity)";
    }
    return nw_err_set(err, rc, "", "%s: HTTP %ld%s%s%s%s%s", what, r->code, r->reason[0] ? " " : "",
                      r->reason, r->message[0] ? ": " : "", r->message, hint);
}

/* ---- the request path --------------------------------------------------------------- */

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
    nw_kube_resp_t *r = ud;
    if (nw_buf_add(&r->body, p, sz * n) != NW_OK)
        return 0;
    return sz * n;
}

static size_t on_header(char *p, size_t sz, size_t n, void *ud)
{
    nw_kube_resp_t *r = ud;
    size_t len = sz * n;
    static const char k[] = "retry-after:";
    if (len > sizeof k - 1 && !strncasecmp(p, k, sizeof k - 1)) {
        long v = 0;
        bool digits = false;
        for (size_t i = sizeof k - 1; i < len; i++) {
            if (p[i] >= '0' && p[i] <= '9') {
                if (v < 100000)
                    v = v * 10 + (p[i] - '0');
                digits = true;
            } else if (digits) {
                break;
            }
        }
        if (digits)
            r->retry_after_s = (int)v;
    }
    return len;
}

static bool retryable_curl(CURLcode cc)
{
    switch (cc) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_SSL_CONNECT_ERROR:
        return true;
    default:
        return false;
    }
}

/* A POST makes a new object each time (a NodeClaim's generateName, an Event, an
 * eviction): it is repeated only when the API server cannot have acted on it - a 429
 * (max-in-flight, priority and fairness: refused before it ran), a 503 (not ready,
 * shutting down), no connection made. A 500 or 504 ("the request may have completed",
 * an etcd timeout) or an answer lost on the way is the caller's to reconcile from its
 * view, not the client's to send again: a second POST would make a second NodeClaim. */
static bool post_retryable_code(long code)
{
    return code == 429 || code == 503;
}

static bool post_retryable_curl(CURLcode cc)
{
    return cc == CURLE_COULDNT_RESOLVE_HOST || cc == CURLE_COULDNT_CONNECT ||
           cc == CURLE_SSL_CONNECT_ERROR;
}

void nw_kube_client_set_abort(nw_kube_client_t *c, const atomic_int *flag)
{
    if (c)
        c->abort = flag;
}

static bool aborting(const nw_kube_client_t *c)
{
    return c->abort && atomic_load(c->abort);
}

/* The limiter the calling thread's requests wait on instead of the client's (NULL: the
 * client's; nw_kube_client_thread_limiter). */
static _Thread_local nw_kube_rl_t *thread_rl;

void nw_kube_client_thread_limiter(nw_kube_rl_t *rl)
{
    thread_rl = rl;
}

void nw_kube_client_limiter_init(const nw_kube_client_t *c, nw_kube_rl_t *rl)
{
    nw_kube_retry_rl_init(rl, c->opts.clock, c->opts.qps, c->opts.burst);
}

/* The rate limit's wait, in 50 ms steps that end when the client is aborted. */
static void rl_wait(nw_kube_client_t *c)
{
    if (aborting(c))
        return;
    int64_t ns = nw_kube_retry_rl_reserve(thread_rl ? thread_rl : &c->rl);
    while (ns > 0 && !aborting(c)) {
        int64_t step = ns < 50 * NW_NS_PER_MS ? ns : 50 * NW_NS_PER_MS;
        nw_kube_retry_sleep_ns(step);
        ns -= step;
    }
}

/* One request: resp reset, the rate limiter waited for, a handle set up for req and
 * performed; *cc says how it went (errbuf, CURL_ERROR_SIZE bytes: curl's words). An
 * error only when no request could be made. */
static NW_MUST_USE nw_rc_t perform(nw_kube_client_t *c, const nw_kube_req_t *req,
                                   nw_kube_resp_t *resp, char *errbuf, CURLcode *cc, nw_err_t *err)
{
    nw_buf_reset(&resp->body);
    resp->code = 0;
    resp->retry_after_s = -1;
    resp->reason[0] = resp->message[0] = '\0';
    rl_wait(c);

    nw_rc_t crc = nw_kube_client_credentials(c, err); /* a plugin that fails says why */
    if (crc != NW_OK)
        return crc;
    CURL *h = handle_take(c);
    if (!h)
        return nw_err_set(err, NW_ENOMEM, "", "curl_easy_init failed");
    struct curl_slist *hd = nw_kube_client__easy_setup(c, h, req->path);
    if (!hd) {
        handle_give(c, h);
        return nw_err_set(err, NW_ENOMEM, "", "out of memory");
    }
    if (req->body) {
        char ct[128];
        snprintf(ct, sizeof ct, "Content-Type: %s",
                 req->content_type ? req->content_type : "application/json");
        struct curl_slist *n = curl_slist_append(hd, ct);
        if (n)
            hd = n;
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, req->body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
    }
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, req->method);
    if (!strcmp(req->method, "GET"))
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
    curl_easy_setopt(h, CURLOPT_SHARE, c->share);
    curl_easy_setopt(h, CURLOPT_HTTP_VERSION,
                     c->opts.http1_only ? (long)CURL_HTTP_VERSION_1_1
                                        : (long)CURL_HTTP_VERSION_2TLS);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS,
                     (long)(req->timeout_ms > 0 ? req->timeout_ms : c->opts.timeout_ms));
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, resp);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, resp);
    errbuf[0] = '\0';
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    *cc = curl_easy_perform(h);
    if (*cc == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &resp->code);
    handle_give(c, h);
    curl_slist_free_all(hd);
    return NW_OK;
}

nw_rc_t nw_kube_client_do(nw_kube_client_t *c, const nw_kube_req_t *req, nw_kube_resp_t *resp,
                          nw_err_t *err)
{
    nw_kube_backoff_t bo;
    nw_kube_retry_backoff_init(&bo, c->opts.backoff_base_ms * NW_NS_PER_MS,
                               c->opts.backoff_max_ms * NW_NS_PER_MS, 0, 0);
    bool reauthed = false;
    int max_attempts = req->no_retry || aborting(c) ? 1 : c->opts.max_retries + 1;
    bool post = !strcmp(req->method, "POST");
    const char *verb = req->verb ? req->verb : req->method;
    const char *res = req->resource ? req->resource : "";
    char errbuf[CURL_ERROR_SIZE];
    nw_rc_t rc = NW_OK;

    for (int attempt = 0;; attempt++) {
        CURLcode cc = CURLE_OK;
        nw_rc_t prc = perform(c, req, resp, errbuf, &cc, err);
        if (prc != NW_OK)
            return prc;

        nw_kube_metrics_add(c->metrics, NW_KM_REQUESTS, verb, res,
                            cc == CURLE_OK ? (int)resp->code : 0, 1);
        int64_t wait_ns = -1;
        if (cc == CURLE_OK) {
            if (resp->code >= 300)
                nw_kube_client__resp_parse_status(resp);
            if (resp->code == 401 && !reauthed &&
                (c->cfg->token_file || c->cfg->token || c->exec)) {
                reauthed = true;
                nw_kube_client__token_invalidate(c);
                nw_log_warn("kube.client", "401 Unauthorized; re-reading credentials and retrying",
                            NW_LS("verb", verb), NW_LS("resource", res));
                attempt--; /* does not count as a retry */
                continue;
            }
            if ((resp->code == 429 || resp->code >= 500) && attempt + 1 < max_attempts &&
                (!post || post_retryable_code(resp->code))) {
                if (resp->retry_after_s > 0)
                    wait_ns = (int64_t)(resp->retry_after_s < c->opts.retry_after_max_s
                                            ? resp->retry_after_s
                                            : c->opts.retry_after_max_s) *
                              NW_NS_PER_SEC;
                else
                    wait_ns = nw_kube_retry_backoff_next(&bo, nw_clock_mono(c->opts.clock));
            }
            if (wait_ns < 0) {
                rc = NW_OK;
                break;
            }
            nw_log_debug("kube.client", "retrying", NW_LS("verb", verb), NW_LS("resource", res),
                         NW_LI("code", resp->code), NW_LI("wait_ms", wait_ns / NW_NS_PER_MS));
        } else {
            if (!retryable_curl(cc) || (post && !post_retryable_curl(cc)) ||
                attempt + 1 >= max_attempts) {
                rc = nw_err_set(err, cc == CURLE_OPERATION_TIMEDOUT ? NW_ETIMEOUT : NW_EHTTP, "",
                                "%s %s%s: %s", req->method, c->cfg->server, req->path,
                                errbuf[0] ? errbuf : curl_easy_strerror(cc));
                break;
            }
            wait_ns = nw_kube_retry_backoff_next(&bo, nw_clock_mono(c->opts.clock));
            nw_log_debug("kube.client", "retrying after a network error", NW_LS("verb", verb),
                         NW_LS("resource", res),
                         NW_LS("error", errbuf[0] ? errbuf : curl_easy_strerror(cc)),
                         NW_LI("wait_ms", wait_ns / NW_NS_PER_MS));
        }
        nw_kube_metrics_add(c->metrics, NW_KM_RETRIES, verb, res, -1, 1);
        nw_kube_retry_sleep_ns(wait_ns);
    }
    return rc;
}

nw_rc_t nw_kube_client_get_json(nw_kube_client_t *c, const char *path, const char *verb,
                                const char *resource, cJSON **out, nw_err_t *err)
{
    *out = NULL;
    nw_kube_resp_t resp;
    nw_kube_client_resp_init(&resp);
    nw_kube_req_t req = {.method = "GET", .path = path, .verb = verb, .resource = resource};
    nw_rc_t rc = nw_kube_client_do(c, &req, &resp, err);
    if (!rc) {
        char what[256];
        snprintf(what, sizeof what, "GET %s", path);
        rc = nw_kube_client_resp_error(&resp, what, err);
    }
    if (!rc) {
        *out = nw_kube_client_json_parse(resp.body.data, resp.body.len);
        if (!*out)
            rc = nw_err_set(err, NW_EPARSE, "", "GET %s: response is not JSON", path);
    }
    nw_kube_client_resp_cleanup(&resp);
    return rc;
}

nw_rc_t nw_kube_client_dns_ip(nw_kube_client_t *c, char *out, size_t len, nw_err_t *err)
{
    if (len)
        out[0] = 0;
    cJSON *v = NULL;
    nw_rc_t rc = nw_kube_client_get_json(c, "/api/v1/namespaces/kube-system/services/kube-dns",
                                         "get", "services", &v, err);
    if (rc != NW_OK)
        return rc;
    const char *ip = cJSON_GetStringValue(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(v, "spec"), "clusterIP"));
    if (!ip || !*ip || strcmp(ip, "None") == 0 || strlen(ip) >= len ||
        strspn(ip, "0123456789abcdefABCDEF.:") != strlen(ip))
        rc = nw_err_set(err, NW_EPARSE, "kube-system/kube-dns",
                        "the kube-dns Service has no cluster IP");
    else
        snprintf(out, len, "%s", ip);
    cJSON_Delete(v);
    return rc;
}

nw_rc_t nw_kube_client_server_version(nw_kube_client_t *c, char *out, size_t len, nw_err_t *err)
{
    if (len)
        out[0] = 0;
    cJSON *v = NULL;
    nw_rc_t rc = nw_kube_client_get_json(c, "/version", "get", "version", &v, err);
    if (rc != NW_OK)
        return rc;
    const char *maj = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "major"));
    const char *min = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "minor"));
    char *e1 = NULL, *e2 = NULL;
    long a = maj ? strtol(maj, &e1, 10) : -1, b = min ? strtol(min, &e2, 10) : -1;
    if (a < 0 || b < 0 || e1 == maj || e2 == min)
        rc = nw_err_set(err, NW_EPARSE, "/version", "the API server's /version has no major/minor");
    else
        snprintf(out, len, "%ld.%ld", a, b);
    cJSON_Delete(v);
    return rc;
}
