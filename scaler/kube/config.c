/* scaler/kube/config.c — kubeconfig (libyaml) and in-cluster configuration. */
#include "common/json.h"
#include "scaler/kube/config.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/file.h"
#include "common/yaml.h"

#define KCFG_MAX_BYTES (4u << 20)
#define PEM_MAX_BYTES (1u << 20)

/* ---- small helpers ------------------------------------------------------------ */

static int b64val(int c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

char *nw_kube_config_b64_decode(const char *s, size_t *len)
{
    size_t sl = strlen(s);
    char *out = malloc(sl / 4 * 3 + 4);
    if (!out)
        return NULL;
    size_t n = 0;
    unsigned acc = 0;
    int bits = 0, pad = 0, quads = 0;
    for (const char *p = s; *p; p++) {
        int c = (unsigned char)*p;
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
            continue;
        if (c == '=') {
            pad++;
            quads++;
            continue;
        }
        int v = b64val(c);
        if (v < 0 || pad) {
            free(out);
            return NULL;
        }
        quads++;
        acc = (acc << 6) | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[n++] = (char)((acc >> bits) & 0xff);
        }
    }
    if (pad > 2 || quads % 4 != 0) {
        free(out);
        return NULL;
    }
    out[n] = '\0';
    if (len)
        *len = n;
    return out;
}

/* ---- YAML (common/yaml: libyaml -> cJSON, typed like kubectl) ---------------------- */

static cJSON *yaml_to_json(const char *buf, size_t len, const char *file, nw_err_t *err)
{
    cJSON **docs = NULL;
    size_t n = 0;
    nw_err_t e = {0};
    if (nw_yaml_load_docs(buf, len, &docs, &n, &e) != NW_OK) {
        nw_err_set(err, NW_EPARSE, e.path, "%s: %s", file, e.msg);
        return NULL;
    }
    cJSON *root = NULL;
    if (n > 0) {
        root = docs[0];
        docs[0] = NULL;
    }
    nw_yaml_docs_free(docs, n);
    if (!root || cJSON_IsNull(root)) {
        cJSON_Delete(root);
        nw_err_set(err, NW_EPARSE, "", "%s: empty kubeconfig", file);
        return NULL;
    }
    return root;
}

/* ---- kubeconfig --------------------------------------------------------------- */

typedef struct {
    cJSON *doc;
    char *path;
    char *dir; /* directory of path, for relative file references */
} kfile_t;

static bool jbool(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (cJSON_IsTrue(v))
        return true;
    if (cJSON_IsString(v) && !strcmp(v->valuestring, "true"))
        return true;
    return false;
}

/* Find the first entry named `name` in list `list` (clusters/users/contexts) across files. */
static const cJSON *find_named(kfile_t *files, int n, const char *list, const char *name,
                               const char *member, const kfile_t **where)
{
    for (int i = 0; i < n; i++) {
        const cJSON *arr = cJSON_GetObjectItemCaseSensitive(files[i].doc, list);
        const cJSON *e;
        cJSON_ArrayForEach(e, arr)
        {
            const char *nm = nw_json_str(e, "name");
            if (nm && !strcmp(nm, name)) {
                *where = &files[i];
                const cJSON *m = cJSON_GetObjectItemCaseSensitive(e, member);
                return cJSON_IsObject(m) ? m : e; /* an entry without the member */
            }
        }
    }
    return NULL;
}

static void list_names(kfile_t *files, int n, const char *list, char *out, size_t outlen)
{
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        const cJSON *e;
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(files[i].doc, list))
        {
            const char *nm = nw_json_str(e, "name");
            if (!nm)
                continue;
            int w = snprintf(out + used, outlen - used, "%s%s", used ? ", " : "", nm);
            if (w < 0 || (size_t)w >= outlen - used)
                return;
            used += (size_t)w;
        }
    }
    if (!used)
        snprintf(out, outlen, "none");
}

static char *resolve_path(const kfile_t *f, const char *p)
{
    if (p[0] == '/' || !f->dir[0])
        return strdup(p);
    size_t n = strlen(f->dir) + strlen(p) + 2;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s/%s", f->dir, p);
    return s;
}

/* Load PEM from field `data_key` (base64) or `file_key` (path). Missing both: OK, NULL. */
static NW_MUST_USE nw_rc_t load_pem(const kfile_t *f, const cJSON *obj, const char *data_key,
                                    const char *file_key, const char *path_prefix, char **out,
                                    size_t *len, nw_err_t *err)
{
    const char *d = nw_json_str(obj, data_key);
    const char *p = nw_json_str(obj, file_key);
    *out = NULL;
    *len = 0;
    if (d && d[0]) {
        *out = nw_kube_config_b64_decode(d, len);
        if (!*out)
            return nw_err_set(err, NW_EPARSE, "", "%s: %s.%s is not valid base64", f->path,
                              path_prefix, data_key);
        if (!strstr(*out, "-----BEGIN ")) {
            free(*out);
            *out = NULL;
            return nw_err_set(err, NW_EPARSE, "", "%s: %s.%s does not decode to PEM", f->path,
                              path_prefix, data_key);
        }
        return NW_OK;
    }
    if (p && p[0]) {
        char *full = resolve_path(f, p);
        if (!full)
            return nw_err_set(err, NW_ENOMEM, "", "out of memory");
        *out = nw_file_read(full, PEM_MAX_BYTES, len);
        if (!*out) {
            nw_err_set(err, NW_EIO, "", "%s: %s.%s: cannot read %s: %s", f->path, path_prefix,
                       file_key, full, strerror(errno));
            free(full);
            return NW_EIO;
        }
        free(full);
        if (!strstr(*out, "-----BEGIN ")) {
            free(*out);
            *out = NULL;
            return nw_err_set(err, NW_EPARSE, "", "%s: %s.%s: file %s is not PEM", f->path,
                              path_prefix, file_key, p);
        }
    }
    return NW_OK;
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* The context, cluster and user a kubeconfig names, and the files they came from. */
typedef struct {
    const char *ctxname, *clname, *uname;
    const cJSON *ctx, *cl, *user; /* user NULL: the context names none */
    const kfile_t *cf, *uf, *kf;  /* the files holding the context, user and cluster */
} kresolved_t;

/* Find the context (--context, else the first current-context), its cluster and its
 * user across the files. */
static NW_MUST_USE nw_rc_t resolve_context(kfile_t *files, int nf, const char *context,
                                           kresolved_t *r, nw_err_t *err)
{
    char names[512];
    *r = (kresolved_t){0};
    r->ctxname = context && context[0] ? context : NULL;
    if (!r->ctxname) {
        for (int i = 0; i < nf && !r->ctxname; i++) {
            const char *cc = nw_json_str(files[i].doc, "current-context");
            if (cc && cc[0])
                r->ctxname = cc;
        }
        if (!r->ctxname) {
            list_names(files, nf, "contexts", names, sizeof names);
            return nw_err_set(err, NW_EINVAL, "current-context",
                              "%s: no current-context set and no --context given (contexts: %s)",
                              files[0].path, names);
        }
    }
    r->ctx = find_named(files, nf, "contexts", r->ctxname, "context", &r->cf);
    if (!r->ctx) {
        list_names(files, nf, "contexts", names, sizeof names);
        return nw_err_set(err, NW_ENOTFOUND, "contexts",
                          "%s: context \"%s\" not found (contexts: %s); pass --context with one "
                          "of them or fix current-context",
                          files[0].path, r->ctxname, names);
    }
    r->clname = nw_json_str(r->ctx, "cluster");
    r->uname = nw_json_str(r->ctx, "user");
    if (!r->clname || !r->clname[0])
        return nw_err_set(err, NW_EINVAL, "contexts[].context.cluster",
                          "%s: context \"%s\" names no cluster", r->cf->path, r->ctxname);
    r->cl = find_named(files, nf, "clusters", r->clname, "cluster", &r->kf);
    if (!r->cl) {
        list_names(files, nf, "clusters", names, sizeof names);
        return nw_err_set(err, NW_ENOTFOUND, "clusters",
                          "%s: cluster \"%s\" (from context \"%s\") not found (clusters: %s)",
                          r->cf->path, r->clname, r->ctxname, names);
    }
    if (r->uname && r->uname[0]) {
        r->user = find_named(files, nf, "users", r->uname, "user", &r->uf);
        if (!r->user) {
            list_names(files, nf, "users", names, sizeof names);
            return nw_err_set(err, NW_ENOTFOUND, "users",
                              "%s: user \"%s\" (from context \"%s\") not found (users: %s)",
                              r->cf->path, r->uname, r->ctxname, names);
        }
    }
    return NW_OK;
}

/* The cluster's server, TLS settings, proxy and CA into cfg (kf: the file naming it). */
static NW_MUST_USE nw_rc_t apply_cluster(const kfile_t *kf, const cJSON *cl, const char *clname,
                                         nw_kube_config_t *cfg, nw_err_t *err)
{
    const char *server = nw_json_str(cl, "server");
    if (!server || !server[0])
        return nw_err_set(err, NW_EINVAL, "clusters[].cluster.server",
                          "%s: cluster \"%s\" has no server", kf->path, clname);
    if (strncmp(server, "https://", 8) != 0 && strncmp(server, "http://", 7) != 0)
        return nw_err_set(err, NW_EINVAL, "clusters[].cluster.server",
                          "%s: cluster \"%s\": server \"%s\" must start with https:// or http://",
                          kf->path, clname, server);
    cfg->server = strdup(server);
    if (cfg->server) {
        size_t sl = strlen(cfg->server);
        while (sl > 0 && cfg->server[sl - 1] == '/')
            cfg->server[--sl] = '\0';
    }
    cfg->insecure = jbool(cl, "insecure-skip-tls-verify");
    cfg->tls_server_name = dup_or_null(nw_json_str(cl, "tls-server-name"));
    cfg->proxy = dup_or_null(nw_json_str(cl, "proxy-url"));
    return load_pem(kf, cl, "certificate-authority-data", "certificate-authority",
                    "clusters[].cluster", &cfg->ca_pem, &cfg->ca_len, err);
}

/* ---- exec credential plugins --------------------------------------------------------- */

#define EXEC_V1 "client.authentication.k8s.io/v1"
#define EXEC_V1BETA1 "client.authentication.k8s.io/v1beta1"

static void strv_free(char **v)
{
    for (char **p = v; p && *p; p++)
        free(*p);
    free(v);
}

static void exec_free(nw_kube_exec_t *x)
{
    if (!x)
        return;
    free(x->command);
    strv_free(x->args);
    strv_free(x->env);
    free(x->api_version);
    free(x->install_hint);
    free(x->cluster_config);
    free(x->user);
    free(x->file);
    free(x);
}

/* exec.args: absent, null, or a list of strings, into a NULL-terminated vector. */
static NW_MUST_USE nw_rc_t exec_args(const kfile_t *uf, const char *uname, const cJSON *a,
                                     char ***out, nw_err_t *err)
{
    int n = cJSON_IsArray(a) ? cJSON_GetArraySize(a) : 0;
    if (a && !cJSON_IsNull(a) && !cJSON_IsArray(a))
        return nw_err_set(err, NW_EINVAL, "users[].user.exec.args",
                          "%s: user \"%s\": users[].user.exec.args must be a list of strings",
                          uf->path, uname);
    if (!(*out = calloc((size_t)n + 1, sizeof **out)))
        return nw_err_set(err, NW_ENOMEM, "", "out of memory");
    for (int i = 0; i < n; i++) {
        const cJSON *v = cJSON_GetArrayItem(a, i);
        if (!cJSON_IsString(v))
            return nw_err_set(err, NW_EINVAL, "users[].user.exec.args",
                              "%s: user \"%s\": users[].user.exec.args[%d] must be a string",
                              uf->path, uname, i);
        if (!((*out)[i] = strdup(v->valuestring)))
            return nw_err_set(err, NW_ENOMEM, "", "out of memory");
    }
    return NW_OK;
}

/* exec.env: absent, null, or a list of {name, value}, into "NAME=value" strings. */
static NW_MUST_USE nw_rc_t exec_env(const kfile_t *uf, const char *uname, const cJSON *e,
                                    char ***out, nw_err_t *err)
{
    int n = cJSON_IsArray(e) ? cJSON_GetArraySize(e) : 0;
    if (e && !cJSON_IsNull(e) && !cJSON_IsArray(e))
        return nw_err_set(err, NW_EINVAL, "users[].user.exec.env",
                          "%s: user \"%s\": users[].user.exec.env must be a list of {name, value}",
                          uf->path, uname);
    if (!(*out = calloc((size_t)n + 1, sizeof **out)))
        return nw_err_set(err, NW_ENOMEM, "", "out of memory");
    for (int i = 0; i < n; i++) {
        const cJSON *it = cJSON_GetArrayItem(e, i);
        const char *name = nw_json_str(it, "name"), *value = nw_json_str(it, "value");
        if (!name || !name[0] || strchr(name, '=') || !value)
            return nw_err_set(err, NW_EINVAL, "users[].user.exec.env",
                              "%s: user \"%s\": users[].user.exec.env[%d] needs a name (without "
                              "'=') and a value, both strings",
                              uf->path, uname, i);
        size_t l = strlen(name) + strlen(value) + 2;
        if (!((*out)[i] = malloc(l)))
            return nw_err_set(err, NW_ENOMEM, "", "out of memory");
        snprintf((*out)[i], l, "%s=%s", name, value);
    }
    return NW_OK;
}

/* apiVersion and interactiveMode (required with v1, IfAvailable with v1beta1). */
static NW_MUST_USE nw_rc_t exec_version_mode(const kfile_t *uf, const char *uname, const cJSON *ex,
                                             nw_kube_exec_t *x, nw_err_t *err)
{
    const char *av = nw_json_str(ex, "apiVersion"), *mode = nw_json_str(ex, "interactiveMode");
    if (!av || (strcmp(av, EXEC_V1) != 0 && strcmp(av, EXEC_V1BETA1) != 0))
        return nw_err_set(err, NW_EINVAL, "users[].user.exec.apiVersion",
                          "%s: user \"%s\": users[].user.exec.apiVersion must be %s or %s, not "
                          "\"%s\"",
                          uf->path, uname, EXEC_V1, EXEC_V1BETA1, av ? av : "");
    if (!(x->api_version = strdup(av)))
        return nw_err_set(err, NW_ENOMEM, "", "out of memory");
    if (!mode || !mode[0]) {
        if (strcmp(av, EXEC_V1) == 0)
            return nw_err_set(err, NW_EINVAL, "users[].user.exec.interactiveMode",
                              "%s: user \"%s\": users[].user.exec.interactiveMode is required "
                              "with %s (Never, IfAvailable or Always)",
                              uf->path, uname, EXEC_V1);
        x->interactive = NW_KUBE_EXEC_IF_AVAILABLE;
    } else if (strcmp(mode, "Never") == 0) {
        x->interactive = NW_KUBE_EXEC_NEVER;
    } else if (strcmp(mode, "IfAvailable") == 0) {
        x->interactive = NW_KUBE_EXEC_IF_AVAILABLE;
    } else if (strcmp(mode, "Always") == 0) {
        x->interactive = NW_KUBE_EXEC_ALWAYS;
    } else {
        return nw_err_set(err, NW_EINVAL, "users[].user.exec.interactiveMode",
                          "%s: user \"%s\": users[].user.exec.interactiveMode must be Never, "
                          "IfAvailable or Always, not \"%s\"",
                          uf->path, uname, mode);
    }
    return NW_OK;
}

/* The plugin's per-cluster config: the cluster's client.authentication.k8s.io/exec
 * extension, as JSON. */
static char *exec_cluster_config(const cJSON *cl)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(cl, "extensions"))
    {
        const char *nm = nw_json_str(e, "name");
        const cJSON *ext = cJSON_GetObjectItemCaseSensitive(e, "extension");
        if (nm && strcmp(nm, "client.authentication.k8s.io/exec") == 0 && ext)
            return nw_json_print(ext); /* freed with free(): not in a review's arena */
    }
    return NULL;
}

/* users[].user.exec into cfg->exec. */
static NW_MUST_USE nw_rc_t apply_exec(const kfile_t *uf, const cJSON *ex, const char *uname,
                                      const cJSON *cl, nw_kube_config_t *cfg, nw_err_t *err)
{
    if (!cJSON_IsObject(ex))
        return nw_err_set(err, NW_EINVAL, "users[].user.exec",
                          "%s: user \"%s\": users[].user.exec must be a mapping", uf->path, uname);
    const char *cmd = nw_json_str(ex, "command");
    if (!cmd || !cmd[0])
        return nw_err_set(err, NW_EINVAL, "users[].user.exec.command",
                          "%s: user \"%s\": users[].user.exec.command is required", uf->path,
                          uname);
    nw_kube_exec_t *x = calloc(1, sizeof *x);
    if (!x)
        return nw_err_set(err, NW_ENOMEM, "", "out of memory");
    cfg->exec = x;
    x->command = strchr(cmd, '/') ? resolve_path(uf, cmd) : strdup(cmd);
    x->user = strdup(uname);
    x->file = strdup(uf->path);
    const char *hint = nw_json_str(ex, "installHint");
    if (hint && hint[0])
        x->install_hint = strdup(hint);
    x->provide_cluster_info = jbool(ex, "provideClusterInfo");
    if (x->provide_cluster_info)
        x->cluster_config = exec_cluster_config(cl);
    if (!x->command || !x->user || !x->file || (hint && hint[0] && !x->install_hint))
        return nw_err_set(err, NW_ENOMEM, "", "out of memory");
    nw_rc_t rc = exec_version_mode(uf, uname, ex, x, err);
    if (rc == NW_OK)
        rc = exec_args(uf, uname, cJSON_GetObjectItemCaseSensitive(ex, "args"), &x->args, err);
    if (rc == NW_OK)
        rc = exec_env(uf, uname, cJSON_GetObjectItemCaseSensitive(ex, "env"), &x->env, err);
    return rc;
}

/* The user's credentials into cfg (uf: the file naming it; cl: the context's cluster); an
 * error for the ways of authenticating nodewarden does not support. */
static NW_MUST_USE nw_rc_t apply_user(const kfile_t *uf, const cJSON *user, const char *uname,
                                      const cJSON *cl, nw_kube_config_t *cfg, nw_err_t *err)
{
    nw_rc_t rc;
    static const struct {
        const char *key, *why;
    } unsupported[] = {
        {"auth-provider", "auth-provider plugins (gcp, oidc, azure) are not supported; use a "
                          "token, tokenFile or client certificate"},
        {"username", "basic authentication (username/password) is not supported; use a "
                     "token, tokenFile or client certificate"},
        {"password", "basic authentication (username/password) is not supported; use a "
                     "token, tokenFile or client certificate"},
        {"as", "impersonation (as) is not supported; use the target identity's credentials"},
        {"as-groups", "impersonation (as-groups) is not supported"},
        {"as-uid", "impersonation (as-uid) is not supported"},
    };
    for (size_t i = 0; i < sizeof unsupported / sizeof unsupported[0]; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(user, unsupported[i].key);
        if (v && !cJSON_IsNull(v))
            return nw_err_set(err, NW_EINVAL, "users[].user",
                              "%s: user \"%s\": users[].user.%s: %s", uf->path, uname,
                              unsupported[i].key, unsupported[i].why);
    }
    const char *tok = nw_json_str(user, "token");
    const char *tf = nw_json_str(user, "tokenFile");
    if (tok && tok[0]) {
        cfg->token = strdup(tok);
    } else if (tf && tf[0]) {
        cfg->token_file = resolve_path(uf, tf);
        size_t tl;
        char *t = cfg->token_file ? nw_file_read(cfg->token_file, 65536, &tl) : NULL;
        if (!t)
            return nw_err_set(err, NW_EIO, "users[].user.tokenFile",
                              "%s: user \"%s\": cannot read tokenFile %s: %s", uf->path, uname, tf,
                              strerror(errno));
        free(t);
    }
    rc = load_pem(uf, user, "client-certificate-data", "client-certificate", "users[].user",
                  &cfg->cert_pem, &cfg->cert_len, err);
    if (rc)
        return rc;
    rc = load_pem(uf, user, "client-key-data", "client-key", "users[].user", &cfg->key_pem,
                  &cfg->key_len, err);
    if (rc)
        return rc;
    if (!!cfg->cert_pem != !!cfg->key_pem)
        return nw_err_set(err, NW_EINVAL, "users[].user",
                          "%s: user \"%s\": client-certificate and client-key must be given "
                          "together",
                          uf->path, uname);
    /* as client-go: a token or certificate of the user wins over a plugin */
    const cJSON *ex = cJSON_GetObjectItemCaseSensitive(user, "exec");
    if (ex && !cJSON_IsNull(ex) && !cfg->token && !cfg->token_file && !cfg->cert_pem)
        return apply_exec(uf, ex, uname, cl, cfg, err);
    return NW_OK;
}

static NW_MUST_USE nw_rc_t build_from_files(kfile_t *files, int nf, const char *context,
                                            nw_kube_config_t *cfg, nw_err_t *err)
{
    kresolved_t r;
    nw_rc_t rc = resolve_context(files, nf, context, &r, err);
    if (rc)
        return rc;

    cfg->context = strdup(r.ctxname);
    cfg->source = strdup(r.cf->path);
    const char *ns = nw_json_str(r.ctx, "namespace");
    cfg->namespace = strdup(ns && ns[0] ? ns : "default");

    rc = apply_cluster(r.kf, r.cl, r.clname, cfg, err);
    if (rc)
        return rc;
    if (r.user) {
        rc = apply_user(r.uf, r.user, r.uname, r.cl, cfg, err);
        if (rc)
            return rc;
    }
    if (!cfg->context || !cfg->source || !cfg->namespace || !cfg->server)
        return nw_err_set(err, NW_ENOMEM, "", "out of memory");
    return NW_OK;
}

nw_rc_t nw_kube_config_load_kubeconfig(const char *paths, const char *context,
                                       nw_kube_config_t **out, nw_err_t *err)
{
    *out = NULL;
    if (!paths || !paths[0])
        return nw_err_set(err, NW_EINVAL, "", "no kubeconfig path given");
    kfile_t files[16];
    int nf = 0;
    nw_rc_t rc = NW_OK;
    char *list = strdup(paths);
    if (!list)
        return nw_err_set(err, NW_ENOMEM, "", "out of memory");
    char *save = NULL;
    for (char *p = strtok_r(list, ":", &save); p && nf < 16; p = strtok_r(NULL, ":", &save)) {
        if (!p[0])
            continue;
        size_t len;
        char *text = nw_file_read(p, KCFG_MAX_BYTES, &len);
        if (!text) {
            /* like kubectl: missing files in a KUBECONFIG list are skipped, except a single one */
            if (strchr(paths, ':') && errno == ENOENT)
                continue;
            rc = nw_err_set(err, NW_EIO, "", "cannot read kubeconfig %s: %s", p, strerror(errno));
            goto out;
        }
        cJSON *doc = yaml_to_json(text, len, p, err);
        free(text);
        if (!doc) {
            rc = NW_EPARSE;
            goto out;
        }
        if (!cJSON_IsObject(doc)) {
            cJSON_Delete(doc);
            rc = nw_err_set(err, NW_EPARSE, "", "%s: a kubeconfig must be a YAML mapping", p);
            goto out;
        }
        files[nf].doc = doc;
        files[nf].path = strdup(p);
        const char *slash = strrchr(p, '/');
        files[nf].dir = slash ? strndup(p, (size_t)(slash - p)) : strdup("");
        if (slash && slash == p) {
            free(files[nf].dir);
            files[nf].dir = strdup("/");
        }
        nf++;
        if (!files[nf - 1].path || !files[nf - 1].dir) {
            rc = nw_err_set(err, NW_ENOMEM, "", "out of memory");
            goto out;
        }
    }
    if (nf == 0) {
        rc = nw_err_set(err, NW_EIO, "", "no readable kubeconfig in %s", paths);
        goto out;
    }
    nw_kube_config_t *cfg = calloc(1, sizeof *cfg);
    if (!cfg) {
        rc = nw_err_set(err, NW_ENOMEM, "", "out of memory");
        goto out;
    }
    rc = build_from_files(files, nf, context, cfg, err);
    if (rc)
        nw_kube_config_free(cfg);
    else
        *out = cfg;
out:
    for (int i = 0; i < nf; i++) {
        cJSON_Delete(files[i].doc);
        free(files[i].path);
        free(files[i].dir);
    }
    free(list);
    return rc;
}

nw_rc_t nw_kube_config_load_incluster(const char *sa_dir, nw_kube_config_t **out, nw_err_t *err)
{
    *out = NULL;
    const char *dir = sa_dir ? sa_dir : NW_KUBE_SA_DIR;
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    const char *port = getenv("KUBERNETES_SERVICE_PORT");
    if (!host || !host[0] || !port || !port[0])
        return nw_err_set(err, NW_EINVAL, "",
                          "in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must "
                          "both be set (not running in a pod? pass --kubeconfig)");
    nw_kube_config_t *cfg = calloc(1, sizeof *cfg);
    if (!cfg)
        return nw_err_set(err, NW_ENOMEM, "", "out of memory");
    char path[1024];
    nw_rc_t rc = NW_OK;
    size_t n = strlen(host) + strlen(port) + 16;
    cfg->server = malloc(n);
    if (cfg->server)
        snprintf(cfg->server, n, strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host,
                 port);
    snprintf(path, sizeof path, "%s/token", dir);
    cfg->token_file = strdup(path);
    size_t tl;
    char *tok = nw_file_read(path, 65536, &tl);
    if (!tok) {
        rc = nw_err_set(err, NW_EIO, "", "in-cluster: cannot read service-account token %s: %s",
                        path, strerror(errno));
        goto out;
    }
    free(tok);
    snprintf(path, sizeof path, "%s/ca.crt", dir);
    cfg->ca_pem = nw_file_read(path, PEM_MAX_BYTES, &cfg->ca_len);
    if (!cfg->ca_pem) {
        rc = nw_err_set(err, NW_EIO, "", "in-cluster: cannot read %s: %s", path, strerror(errno));
        goto out;
    }
    snprintf(path, sizeof path, "%s/namespace", dir);
    size_t nl;
    char *ns = nw_file_read(path, 256, &nl);
    if (ns) {
        while (nl > 0 && (ns[nl - 1] == '\n' || ns[nl - 1] == ' ' || ns[nl - 1] == '\r'))
            ns[--nl] = '\0';
    }
    cfg->namespace = ns && ns[0] ? ns : strdup("default");
    if (ns && !ns[0])
        free(ns);
    cfg->context = strdup("in-cluster");
    cfg->source = strdup("in-cluster service account");
    if (!cfg->server || !cfg->token_file || !cfg->namespace || !cfg->context || !cfg->source)
        rc = nw_err_set(err, NW_ENOMEM, "", "out of memory");
out:
    if (rc)
        nw_kube_config_free(cfg);
    else
        *out = cfg;
    return rc;
}

nw_rc_t nw_kube_config_load(const char *kubeconfig, const char *context, nw_kube_config_t **out,
                            nw_err_t *err)
{
    if (kubeconfig && kubeconfig[0])
        return nw_kube_config_load_kubeconfig(kubeconfig, context, out, err);
    const char *env = getenv("KUBECONFIG");
    if (env && env[0])
        return nw_kube_config_load_kubeconfig(env, context, out, err);
    const char *h = getenv("KUBERNETES_SERVICE_HOST");
    if (h && h[0] && !(context && context[0]))
        return nw_kube_config_load_incluster(NULL, out, err);
    const char *home = getenv("HOME");
    if (!home || !home[0]) {
        *out = NULL;
        return nw_err_set(err, NW_EINVAL, "",
                          "no kubeconfig: pass --kubeconfig, set KUBECONFIG, or run in a pod");
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/.kube/config", home);
    return nw_kube_config_load_kubeconfig(path, context, out, err);
}

void nw_kube_config_free(nw_kube_config_t *cfg)
{
    if (!cfg)
        return;
    free(cfg->server);
    free(cfg->ca_pem);
    free(cfg->cert_pem);
    free(cfg->key_pem);
    free(cfg->token);
    free(cfg->token_file);
    free(cfg->tls_server_name);
    free(cfg->proxy);
    free(cfg->namespace);
    free(cfg->context);
    free(cfg->source);
    exec_free(cfg->exec);
    free(cfg);
}
