/* scaler/kube/execcred.c — kubeconfig exec credential plugins; see execcred.h. */
#include "scaler/kube/execcred.h"

#include <cjson/cJSON.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/json.h"
#include "common/log.h"
#include "common/oom.h"
#include "common/subproc.h"

#define COMP "kube.exec"
#define OUT_MAX (1u << 20)

extern char **environ;

struct nw_execcred {
    const nw_kube_config_t *cfg;
    const nw_kube_exec_t *ex;
    const nw_clock_t *clock;
    long timeout_ms;
    pthread_mutex_t mu;
    nw_execcred_cred_t cur;
    int have;
    int64_t got_ns;   /* when cur was obtained (wall clock) */
    int64_t retry_ns; /* a run failed while cur was still valid: not again before this */
    long runs;
};

/* "kubeconfig F: user "U": exec plugin C" into out, the start of every message. */
static const char *who(const nw_execcred_t *x, char *out, size_t len)
{
    snprintf(out, len, "kubeconfig %s: user \"%s\": exec plugin %s", x->ex->file, x->ex->user,
             x->ex->command);
    return out;
}

static void wipe_str(char *s)
{
    if (s) {
        explicit_bzero(s, strlen(s));
        free(s);
    }
}

void nw_execcred_cred_cleanup(nw_execcred_cred_t *c)
{
    if (!c)
        return;
    wipe_str(c->token);
    wipe_str(c->cert_pem);
    wipe_str(c->key_pem);
    memset(c, 0, sizeof *c);
}

static NW_MUST_USE nw_rc_t cred_copy(nw_execcred_cred_t *dst, const nw_execcred_cred_t *src)
{
    memset(dst, 0, sizeof *dst);
    dst->expires_ns = src->expires_ns;
    dst->cert_len = src->cert_len;
    dst->key_len = src->key_len;
    if ((src->token && !(dst->token = strdup(src->token))) ||
        (src->cert_pem && !(dst->cert_pem = strdup(src->cert_pem))) ||
        (src->key_pem && !(dst->key_pem = strdup(src->key_pem)))) {
        nw_execcred_cred_cleanup(dst);
        return NW_ENOMEM;
    }
    return NW_OK;
}

nw_rc_t nw_execcred_new(const nw_kube_config_t *cfg, const nw_clock_t *clock, long timeout_ms,
                        nw_execcred_t **out, nw_err_t *err)
{
    *out = NULL;
    if (!cfg->exec)
        return nw_err_set(err, NW_EINVAL, "users[].user.exec", "the kubeconfig has no exec plugin");
    nw_execcred_t *x = calloc(1, sizeof *x);
    if (!x)
        return nw_err_set(err, NW_ENOMEM, "", "out of memory");
    x->cfg = cfg;
    x->ex = cfg->exec;
    x->clock = clock ? clock : nw_clock_system();
    x->timeout_ms = timeout_ms > 0 ? timeout_ms : NW_EXECCRED_TIMEOUT_MS;
    pthread_mutex_init(&x->mu, NULL);
    *out = x;
    return NW_OK;
}

void nw_execcred_free(nw_execcred_t *x)
{
    if (!x)
        return;
    nw_execcred_cred_cleanup(&x->cur);
    pthread_mutex_destroy(&x->mu);
    free(x);
}

void nw_execcred_invalidate(nw_execcred_t *x)
{
    pthread_mutex_lock(&x->mu);
    x->have = 0;
    nw_execcred_cred_cleanup(&x->cur);
    pthread_mutex_unlock(&x->mu);
}

long nw_execcred_runs(const nw_execcred_t *x)
{
    return __atomic_load_n(&x->runs, __ATOMIC_RELAXED);
}

/* ---- the run ------------------------------------------------------------------------- */

/* KUBERNETES_EXEC_INFO: the ExecCredential the plugin is given (spec only). */
static char *exec_info(const nw_execcred_t *x, bool interactive)
{
    const nw_kube_config_t *cfg = x->cfg;
    cJSON *o = nw_json_new_object();
    nw_json_add_string(o, "apiVersion", x->ex->api_version);
    nw_json_add_string(o, "kind", "ExecCredential");
    cJSON *spec = nw_json_add_object(o, "spec");
    nw_json_add_bool(spec, "interactive", interactive);
    if (x->ex->provide_cluster_info) {
        cJSON *cl = nw_json_add_object(spec, "cluster");
        nw_json_add_string(cl, "server", cfg->server);
        if (cfg->tls_server_name)
            nw_json_add_string(cl, "tls-server-name", cfg->tls_server_name);
        if (cfg->insecure)
            nw_json_add_bool(cl, "insecure-skip-tls-verify", 1);
        if (cfg->ca_pem) {
            size_t n = 4 * ((cfg->ca_len + 2) / 3) + 1;
            unsigned char *b64 = nw_oom_check(malloc(n), "exec info");
            EVP_EncodeBlock(b64, (const unsigned char *)cfg->ca_pem, (int)cfg->ca_len);
            nw_json_add_string(cl, "certificate-authority-data", (const char *)b64);
            free(b64);
        }
        if (cfg->proxy)
            nw_json_add_string(cl, "proxy-url", cfg->proxy);
        cJSON *conf = x->ex->cluster_config ? cJSON_Parse(x->ex->cluster_config) : NULL;
        if (conf)
            nw_json_add_item(cl, "config", conf);
    }
    char *s = nw_json_print(o);
    cJSON_Delete(o);
    return s;
}

/* Our environment without the names the plugin's env sets, then those, then info. The
 * strings are borrowed except *own (the KUBERNETES_EXEC_INFO entry, to free). */
static const char **plugin_env(const nw_execcred_t *x, const char *info, char **own)
{
    size_t n = 0, k = 0, extra = 0;
    for (char **e = environ; e && *e; e++)
        n++;
    for (char **e = x->ex->env; e && *e; e++)
        extra++;
    const char **v = nw_oom_check(calloc(n + extra + 2, sizeof *v), "exec env");
    for (char **e = environ; e && *e; e++) {
        size_t nl = strcspn(*e, "=");
        bool shadowed = nl == 20 && strncmp(*e, "KUBERNETES_EXEC_INFO", 20) == 0;
        for (char **o = x->ex->env; o && *o && !shadowed; o++)
            shadowed = strncmp(*o, *e, nl) == 0 && (*o)[nl] == '=';
        if (!shadowed)
            v[k++] = *e;
    }
    for (char **o = x->ex->env; o && *o; o++)
        v[k++] = *o;
    size_t il = strlen(info) + 32;
    *own = nw_oom_check(malloc(il), "exec env");
    snprintf(*own, il, "KUBERNETES_EXEC_INFO=%s", info);
    v[k++] = *own;
    v[k] = NULL;
    return v;
}

/* PEM that OpenSSL reads as a certificate (is_key 0) or a private key. */
static bool pem_ok(const char *pem, bool is_key)
{
    BIO *b = BIO_new_mem_buf(pem, -1);
    bool ok = false;
    if (b && is_key) {
        EVP_PKEY *k = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
        ok = k != NULL;
        EVP_PKEY_free(k);
    } else if (b) {
        X509 *c = PEM_read_bio_X509(b, NULL, NULL, NULL);
        ok = c != NULL;
        X509_free(c);
    }
    BIO_free(b);
    ERR_clear_error();
    return ok;
}

/* The status of the plugin's ExecCredential into c. */
static NW_MUST_USE nw_rc_t parse_status(const nw_execcred_t *x, const cJSON *st,
                                        nw_execcred_cred_t *c, const char *w, nw_err_t *err)
{
    const char *tok = nw_json_str(st, "token"), *crt = nw_json_str(st, "clientCertificateData");
    const char *key = nw_json_str(st, "clientKeyData"),
               *exp = nw_json_str(st, "expirationTimestamp");
    if (tok && !tok[0])
        tok = NULL;
    if (crt && !crt[0])
        crt = NULL;
    if (key && !key[0])
        key = NULL;
    if (!tok && !crt && !key)
        return nw_err_set(err, NW_EPARSE, "status",
                          "%s returned neither status.token nor "
                          "status.clientCertificateData and clientKeyData",
                          w);
    if (!crt != !key)
        return nw_err_set(err, NW_EPARSE, "status", "%s returned status.%s without status.%s", w,
                          crt ? "clientCertificateData" : "clientKeyData",
                          crt ? "clientKeyData" : "clientCertificateData");
    if (crt && (!pem_ok(crt, false) || !pem_ok(key, true)))
        return nw_err_set(err, NW_EPARSE, "status",
                          "%s returned a client certificate or key that is not PEM", w);
    if (tok && strpbrk(tok, "\r\n"))
        return nw_err_set(err, NW_EPARSE, "status.token", "%s returned a token with a line break",
                          w);
    if (exp && nw_clock_time_parse(exp, &c->expires_ns) != NW_OK)
        return nw_err_set(err, NW_EPARSE, "status.expirationTimestamp",
                          "%s returned status.expirationTimestamp \"%s\", not an RFC 3339 time", w,
                          exp);
    (void)x;
    c->token = tok ? strdup(tok) : NULL;
    c->cert_pem = crt ? strdup(crt) : NULL;
    c->key_pem = key ? strdup(key) : NULL;
    c->cert_len = crt ? strlen(crt) : 0;
    c->key_len = key ? strlen(key) : 0;
    if ((tok && !c->token) || (crt && (!c->cert_pem || !c->key_pem)))
        return nw_err_set(err, NW_ENOMEM, "", "out of memory");
    return NW_OK;
}

/* The plugin's stdout: an ExecCredential of our apiVersion. */
static NW_MUST_USE nw_rc_t parse_output(const nw_execcred_t *x, const nw_buf_t *out,
                                        nw_execcred_cred_t *c, const char *w, nw_err_t *err)
{
    const char *end = NULL;
    cJSON *j = out->len ? cJSON_ParseWithLengthOpts(out->data, out->len, &end, 0) : NULL;
    nw_rc_t rc = NW_OK;
    const char *av = nw_json_str(j, "apiVersion"), *kind = nw_json_str(j, "kind");
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(j, "status");
    if (!cJSON_IsObject(j))
        rc = nw_err_set(err, NW_EPARSE, "", "%s printed %s, not an ExecCredential (JSON)", w,
                        out->len ? "something" : "nothing");
    else if (!av || strcmp(av, x->ex->api_version) != 0)
        rc = nw_err_set(err, NW_EPARSE, "apiVersion",
                        "%s is configured for %s but returned apiVersion \"%s\"", w,
                        x->ex->api_version, av ? av : "");
    else if (!kind || strcmp(kind, "ExecCredential") != 0)
        rc = nw_err_set(err, NW_EPARSE, "kind", "%s returned kind \"%s\", not ExecCredential", w,
                        kind ? kind : "");
    else if (!cJSON_IsObject(st))
        rc = nw_err_set(err, NW_EPARSE, "status", "%s returned no status", w);
    else
        rc = parse_status(x, st, c, w, err);
    if (j) {
        for (cJSON *it = st ? st->child : NULL; it; it = it->next)
            if (cJSON_IsString(it))
                explicit_bzero(it->valuestring, strlen(it->valuestring));
        cJSON_Delete(j);
    }
    return rc;
}

/* Why the run failed, from how it ended. */
static nw_rc_t run_error(const nw_execcred_t *x, const nw_subproc_result_t *r, long timeout_ms,
                         const char *w, nw_err_t *err)
{
    char line[300];
    nw_subproc_last_line(r, line, sizeof line);
    if (r->timed_out)
        return nw_err_set(err, NW_ETIMEOUT, "users[].user.exec",
                          "%s gave no answer within %.1f s and was stopped", w,
                          (double)timeout_ms / 1000.0);
    if (r->signal)
        return nw_err_set(err, NW_EIO, "users[].user.exec", "%s was killed by signal %d%s%s", w,
                          r->signal, line[0] ? ": " : "", line);
    if (r->exit_code != 0)
        return nw_err_set(err, NW_EIO, "users[].user.exec", "%s failed with exit status %d%s%s", w,
                          r->exit_code, line[0] ? ": " : "", line);
    (void)x;
    return nw_err_set(err, NW_ERANGE, "users[].user.exec", "%s printed more than %u bytes", w,
                      OUT_MAX);
}

/* Run the plugin once: a fresh credential into c. */
static NW_MUST_USE nw_rc_t run_plugin(nw_execcred_t *x, nw_execcred_cred_t *c, nw_err_t *err)
{
    char w[1400];
    who(x, w, sizeof w);
    bool tty = isatty(STDIN_FILENO) == 1;
    if (x->ex->interactive == NW_KUBE_EXEC_ALWAYS && !tty)
        return nw_err_set(err, NW_EINVAL, "users[].user.exec.interactiveMode",
                          "%s: interactiveMode Always needs a terminal on standard input, and "
                          "there is none (use IfAvailable or Never, or run it from a terminal)",
                          w);
    bool interactive = tty && x->ex->interactive != NW_KUBE_EXEC_NEVER;
    long timeout = interactive && x->timeout_ms < NW_EXECCRED_INTERACTIVE_TIMEOUT_MS
                       ? NW_EXECCRED_INTERACTIVE_TIMEOUT_MS
                       : x->timeout_ms;
    size_t nargs = 0;
    for (char **a = x->ex->args; a && *a; a++)
        nargs++;
    const char **argv = nw_oom_check(calloc(nargs + 2, sizeof *argv), "exec argv");
    argv[0] = x->ex->command;
    for (size_t i = 0; i < nargs; i++)
        argv[i + 1] = x->ex->args[i];
    char *info = exec_info(x, interactive), *own = NULL;
    const char **envp = plugin_env(x, info, &own);
    nw_subproc_opts_t o = {.argv = argv,
                           .envp = envp,
                           .pass_stdin = interactive,
                           .pass_stderr = interactive,
                           .timeout_ms = timeout,
                           .max_out = OUT_MAX};
    nw_subproc_result_t r;
    nw_err_t e = {0};
    nw_rc_t rc = nw_subproc_run(&o, &r, &e);
    __atomic_fetch_add(&x->runs, 1, __ATOMIC_RELAXED);
    if (rc == NW_ENOTFOUND)
        rc = nw_err_set(err, rc, "users[].user.exec.command",
                        "%s: %s (it looks like a client-go credential plugin that is not "
                        "installed%s)%s%s",
                        w, e.msg, strchr(x->ex->command, '/') ? "" : " or not on PATH",
                        x->ex->install_hint ? ": " : "",
                        x->ex->install_hint ? x->ex->install_hint : "");
    else if (rc != NW_OK)
        rc = nw_err_set(err, rc, "users[].user.exec", "%s: %s", w, e.msg);
    else if (r.timed_out || r.signal || r.exit_code != 0 || r.out_overflow)
        rc = run_error(x, &r, timeout, w, err);
    else
        rc = parse_output(x, &r.out, c, w, err);
    nw_subproc_result_cleanup(&r);
    free(argv);
    free(envp);
    free(own);
    free(info);
    return rc;
}

/* Whether the kept credential must be replaced now. */
static bool stale(const nw_execcred_t *x, int64_t now)
{
    if (!x->have)
        return true;
    if (!x->cur.expires_ns)
        return false;
    if (now >= x->cur.expires_ns)
        return true;
    if (now < x->retry_ns)
        return false;
    int64_t early = (x->cur.expires_ns - x->got_ns) / 2;
    if (early > NW_EXECCRED_EARLY_NS)
        early = NW_EXECCRED_EARLY_NS;
    return now >= x->cur.expires_ns - early;
}

nw_rc_t nw_execcred_get(nw_execcred_t *x, nw_execcred_cred_t *out, nw_err_t *err)
{
    nw_rc_t rc = NW_OK;
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&x->mu);
    int64_t now = nw_clock_now(x->clock);
    if (stale(x, now)) {
        nw_execcred_cred_t fresh = {0};
        nw_err_t e = {0};
        rc = run_plugin(x, &fresh, &e);
        if (rc == NW_OK) {
            nw_execcred_cred_cleanup(&x->cur);
            x->cur = fresh;
            x->have = 1;
            x->got_ns = now;
            x->retry_ns = 0;
            char exp[32] = "never";
            if (fresh.expires_ns)
                nw_clock_time_format(fresh.expires_ns, exp, sizeof exp);
            nw_log_debug(COMP, "credential plugin ran", NW_LS("user", x->ex->user),
                         NW_LS("expires", exp));
        } else if (x->have && (!x->cur.expires_ns || now < x->cur.expires_ns)) {
            /* try again in a while, not on every request (half the time left, at most 5 s) */
            int64_t wait = (x->cur.expires_ns - now) / 2;
            x->retry_ns = now + (wait < 5 * NW_NS_PER_SEC ? wait : 5 * NW_NS_PER_SEC);
            nw_execcred_cred_cleanup(&fresh);
            nw_log_warn(COMP, "credential plugin failed; using the credential it gave before",
                        NW_LS("error", e.msg));
            rc = NW_OK;
        } else {
            nw_execcred_cred_cleanup(&fresh);
            if (err && !err->rc)
                *err = e;
        }
    }
    if (rc == NW_OK && cred_copy(out, &x->cur) != NW_OK)
        rc = nw_err_set(err, NW_ENOMEM, "", "out of memory");
    pthread_mutex_unlock(&x->mu);
    return rc;
}
