/*
 * scaler/aws/userdata_bottlerocket.c — the Bottlerocket bootstrap: the user's TOML (tables and
 * one-line `key = value` pairs) with settings.kubernetes overwritten: cluster, API server, CA,
 * node labels merged, node taints replaced, max pods, cluster DNS, reserved resources and
 * eviction maps, ...
 * (aws/karpenter-provider-aws pkg/providers/amifamily/bootstrap/bottlerocket.go,
 * bottlerocketsettings.go). See userdata.h.
 */
#include "scaler/aws/userdata.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/json.h"
#include "scaler/aws/userdata_int.h"

/* ---- Bottlerocket: bottlerocket.go over a line-oriented TOML ---- */

typedef struct {
    char *table; /* "settings.kubernetes" ("" for the root) */
    char *key;   /* dotted keys joined, as written (bare or quoted) */
    char *value; /* the raw one-line TOML value */
} tline_t;

typedef struct {
    tline_t *v;
    int n;
} toml_t;

static void toml_free(toml_t *t)
{
    for (int i = 0; i < t->n; i++) {
        free(t->v[i].table);
        free(t->v[i].key);
        free(t->v[i].value);
    }
    free(t->v);
    memset(t, 0, sizeof *t);
}

static NW_MUST_USE nw_rc_t toml_set(toml_t *t, const char *table, const char *key,
                                    const char *value)
{
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->v[i].table, table) == 0 && strcmp(t->v[i].key, key) == 0) {
            char *v = strdup(value);
            if (!v)
                return NW_ENOMEM;
            free(t->v[i].value);
            t->v[i].value = v;
            return NW_OK;
        }
    tline_t *v = realloc(t->v, (size_t)(t->n + 1) * sizeof *v);
    if (!v)
        return NW_ENOMEM;
    t->v = v;
    v[t->n] = (tline_t){strdup(table), strdup(key), strdup(value)};
    if (!v[t->n].table || !v[t->n].key || !v[t->n].value) {
        free(v[t->n].table);
        free(v[t->n].key);
        free(v[t->n].value);
        return NW_ENOMEM;
    }
    t->n++;
    return NW_OK;
}

/* drop every entry of table (and, with sub, of its sub-tables) */
static void toml_drop(toml_t *t, const char *table, int sub)
{
    size_t tl = strlen(table);
    int j = 0;
    for (int i = 0; i < t->n; i++) {
        const char *x = t->v[i].table;
        int hit = strcmp(x, table) == 0 || (sub && strncmp(x, table, tl) == 0 && x[tl] == '.');
        if (hit) {
            free(t->v[i].table);
            free(t->v[i].key);
            free(t->v[i].value);
        } else
            t->v[j++] = t->v[i];
    }
    t->n = j;
}

/* drop key of table */
static void toml_unset(toml_t *t, const char *table, const char *key)
{
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->v[i].table, table) == 0 && strcmp(t->v[i].key, key) == 0) {
            free(t->v[i].table);
            free(t->v[i].key);
            free(t->v[i].value);
            t->v[i] = t->v[--t->n];
            return;
        }
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = 0;
    return s;
}

/* the end of a one-line TOML value starting at v (a comment after it is dropped); NULL
 * when it continues on the next line */
static char *value_end(char *v)
{
    char q = 0;
    int depth = 0;
    char *p = v;
    if (strncmp(v, "\"\"\"", 3) == 0 || strncmp(v, "'''", 3) == 0)
        return NULL;
    for (; *p; p++) {
        if (q) {
            if (q == '"' && *p == '\\' && p[1])
                p++;
            else if (*p == q)
                q = 0;
            continue;
        }
        if (*p == '"' || *p == '\'')
            q = *p;
        else if (*p == '[' || *p == '{')
            depth++;
        else if (*p == ']' || *p == '}')
            depth--;
        else if (*p == '#' && depth == 0)
            break;
    }
    if (q || depth > 0)
        return NULL;
    return p;
}

/* a quoted TOML key when it is not bare */
static void toml_key(char *out, size_t n, const char *k)
{
    int bare = *k != 0;
    for (const char *p = k; *p; p++)
        bare &= isalnum((unsigned char)*p) || *p == '-' || *p == '_';
    if (bare)
        snprintf(out, n, "%s", k);
    else
        snprintf(out, n, "\"%s\"", k);
}

/* a key as toml_key writes it: "cluster-name" and 'cluster-name' are cluster-name */
static void canon_toml_key(char *out, size_t n, const char *k)
{
    size_t l = strlen(k);
    if (l >= 2 && (k[0] == '"' || k[0] == '\'') && k[l - 1] == k[0] && !strchr(k + 1, '\\')) {
        char inner[512];
        snprintf(inner, sizeof inner, "%.*s", (int)(l - 2), k + 1);
        if (!strchr(inner, '"')) {
            toml_key(out, n, inner);
            return;
        }
    }
    snprintf(out, n, "%s", k);
}

/* split "a.b" = v: the key's dots outside quotes move into the table path */
/* One `key = value` line s (line lineno, under [table]) into t: a dotted key's path
 * joins the table; one-line values only. */
static NW_MUST_USE nw_rc_t toml_pair(char *s, int lineno, const char *table, toml_t *t,
                                     nw_err_t *err)
{
    char *eq = NULL, q = 0;
    for (char *p = s; *p; p++) {
        if (q) {
            if (*p == q)
                q = 0;
        } else if (*p == '"' || *p == '\'')
            q = *p;
        else if (*p == '=') {
            eq = p;
            break;
        }
    }
    if (!eq)
        return nw_err_set(err, NW_EINVAL, "spec.userData",
                          "Bottlerocket TOML line %d: expected key = value", lineno);
    *eq = 0;
    char *key = trim(s), *val = trim(eq + 1);
    char *end = value_end(val);
    if (!end || !*val)
        return nw_err_set(err, NW_EINVAL, "spec.userData",
                          "Bottlerocket TOML line %d: nodewarden merges one-line values only",
                          lineno);
    *end = 0;
    val = trim(val);
    if (*val == '{')
        return nw_err_set(err, NW_EINVAL, "spec.userData",
                          "Bottlerocket TOML line %d: inline tables are not merged by "
                          "nodewarden; write a [table]",
                          lineno);
    /* dotted key: everything before the last unquoted dot joins the table */
    char *last = NULL;
    q = 0;
    for (char *p = key; *p; p++) {
        if (q) {
            if (*p == q)
                q = 0;
        } else if (*p == '"' || *p == '\'')
            q = *p;
        else if (*p == '.')
            last = p;
    }
    char full[1024];
    if (last) {
        *last = 0;
        snprintf(full, sizeof full, "%s%s%s", table, *table ? "." : "", trim(key));
        key = trim(last + 1);
    } else
        snprintf(full, sizeof full, "%s", table);
    /* "a . b" spacing inside the table path is normalised away */
    char norm[1024];
    size_t k = 0;
    for (const char *p = full; *p && k + 1 < sizeof norm; p++)
        if (*p != ' ' && *p != '\t')
            norm[k++] = *p;
    norm[k] = 0;
    char ck[512];
    canon_toml_key(ck, sizeof ck, key);
    nw_rc_t rc = toml_set(t, norm, ck, val);
    if (rc != NW_OK)
        nw_err_set(err, rc, "spec.userData", "out of memory");
    return rc;
}

static NW_MUST_USE nw_rc_t toml_read(const char *ud, toml_t *t, nw_err_t *err)
{
    char *text = strdup(ud ? ud : ""), *save = NULL;
    if (!text)
        return nw_err_set(err, NW_ENOMEM, "spec.userData", "out of memory");
    char table[512] = "";
    int lineno = 0;
    nw_rc_t rc = NW_OK;
    for (char *line = strtok_r(text, "\n", &save); line && rc == NW_OK;
         line = strtok_r(NULL, "\n", &save)) {
        lineno++;
        char *s = trim(line);
        if (!*s || *s == '#')
            continue;
        if (strncmp(s, "[[", 2) == 0) {
            rc = nw_err_set(err, NW_EINVAL, "spec.userData",
                            "Bottlerocket TOML line %d: arrays of tables are not merged by "
                            "nodewarden; use one-line values",
                            lineno);
            break;
        }
        if (*s == '[') {
            char *e = strchr(s, ']');
            if (!e) {
                rc = nw_err_set(err, NW_EINVAL, "spec.userData",
                                "Bottlerocket TOML line %d: unterminated table header", lineno);
                break;
            }
            *e = 0;
            char *name = trim(s + 1);
            snprintf(table, sizeof table, "%s", name);
            continue;
        }
        rc = toml_pair(s, lineno, table, t, err);
    }
    free(text);
    return rc;
}

/* a TOML basic string */
static void toml_str(out_t *w, const char *s)
{
    nw_userdata_common_put_quoted(w, s);
}

static NW_MUST_USE nw_rc_t toml_set_str(toml_t *t, const char *table, const char *key,
                                        const char *value)
{
    out_t w = {{0}, NW_OK};
    nw_buf_init(&w.b, UD_MAX);
    toml_str(&w, value);
    nw_rc_t rc = w.rc == NW_OK ? toml_set(t, table, key, nw_buf_str(&w.b)) : w.rc;
    nw_buf_cleanup(&w.b);
    return rc;
}

/* a string map of spec.kubelet into [settings.kubernetes.<table>] (replacing it) */
static NW_MUST_USE nw_rc_t toml_map(toml_t *t, const char *table, const cJSON *m, int durations)
{
    if (!cJSON_IsObject(m))
        return NW_OK;
    toml_drop(t, table, 0);
    const cJSON *e;
    nw_rc_t rc = NW_OK;
    cJSON_ArrayForEach(e, m)
    {
        if (!cJSON_IsString(e) || rc != NW_OK)
            continue;
        char k[300], d[64];
        toml_key(k, sizeof k, e->string);
        if (durations)
            nw_userdata_common_go_duration(e->valuestring, d, sizeof d);
        rc = toml_set_str(t, table, k, durations ? d : e->valuestring);
    }
    return rc;
}

static int cmp_tline(const void *a, const void *b)
{
    const tline_t *x = a, *y = b;
    int c = strcmp(x->table, y->table);
    return c ? c : strcmp(x->key, y->key);
}

/* settings.kubernetes from the claim and the class: cluster, node labels (merged, ours
 * win), max pods, cluster DNS and the kubelet settings of spec.kubelet. */
static NW_MUST_USE nw_rc_t set_kubernetes(toml_t *t, const nw_ud_opts_t *o, const nw_ud_label_t *l,
                                          int nl)
{
    nw_rc_t rc = NW_OK;
    const char *K = "settings.kubernetes";
    char num[32];
    const cJSON *kub = o->kubelet;
    if (rc == NW_OK)
        rc = toml_set_str(t, K, "cluster-name", o->cluster_name);
    if (rc == NW_OK)
        rc = toml_set_str(t, K, "api-server", o->endpoint);
    if (rc == NW_OK && o->ca_bundle && *o->ca_bundle)
        rc = toml_set_str(t, K, "cluster-certificate", o->ca_bundle);
    else if (rc == NW_OK)
        toml_unset(t, K, "cluster-certificate");
    /* node-labels: merged, ours win */
    for (int i = 0; i < nl && rc == NW_OK; i++) {
        char k[300];
        toml_key(k, sizeof k, l[i].key);
        rc = toml_set_str(t, "settings.kubernetes.node-labels", k, l[i].value);
    }
    int has;
    int64_t mp = nw_userdata_common_kubelet_int(kub, "maxPods", &has);
    snprintf(num, sizeof num, "%lld", (long long)(has ? mp : o->max_pods));
    if (rc == NW_OK)
        rc = toml_set(t, K, "max-pods", num);
    const char *dns = nw_userdata_common_cluster_dns(o);
    if (rc == NW_OK && dns)
        rc = toml_set_str(t, K, "cluster-dns-ip", dns);
    if (rc == NW_OK)
        rc = toml_map(t, "settings.kubernetes.system-reserved", nw_json_get(kub, "systemReserved"),
                      0);
    if (rc == NW_OK)
        rc = toml_map(t, "settings.kubernetes.kube-reserved", nw_json_get(kub, "kubeReserved"), 0);
    if (rc == NW_OK)
        rc = toml_map(t, "settings.kubernetes.eviction-hard", nw_json_get(kub, "evictionHard"), 0);
    if (rc == NW_OK)
        rc = toml_map(t, "settings.kubernetes.eviction-soft", nw_json_get(kub, "evictionSoft"), 0);
    if (rc == NW_OK)
        rc = toml_map(t, "settings.kubernetes.eviction-soft-grace-period",
                      nw_json_get(kub, "evictionSoftGracePeriod"), 1);
    int64_t v = nw_userdata_common_kubelet_int(kub, "evictionMaxPodGracePeriod", &has);
    snprintf(num, sizeof num, "%lld", (long long)v);
    if (rc == NW_OK && has)
        rc = toml_set(t, K, "eviction-max-pod-grace-period", num);
    v = nw_userdata_common_kubelet_int(kub, "imageGCHighThresholdPercent", &has);
    snprintf(num, sizeof num, "%lld", (long long)v);
    if (rc == NW_OK && has)
        rc = toml_set_str(t, K, "image-gc-high-threshold-percent", num);
    v = nw_userdata_common_kubelet_int(kub, "imageGCLowThresholdPercent", &has);
    snprintf(num, sizeof num, "%lld", (long long)v);
    if (rc == NW_OK && has)
        rc = toml_set_str(t, K, "image-gc-low-threshold-percent", num);
    const cJSON *q = nw_json_get(kub, "cpuCFSQuota");
    if (rc == NW_OK && cJSON_IsBool(q))
        rc = toml_set(t, K, "cpu-cfs-quota-enforced", cJSON_IsTrue(q) ? "true" : "false");
    return rc;
}

/* settings.kubernetes.node-taints from the NodeClaim's taints: key = ["value:Effect", ...]
 * (the user's were dropped). */
static NW_MUST_USE nw_rc_t set_taints(toml_t *t, const nw_ud_opts_t *o)
{
    nw_rc_t rc = NW_OK;
    for (int i = 0; i < o->ntaints && rc == NW_OK; i++) {
        char k[300];
        toml_key(k, sizeof k, o->taints[i].key);
        out_t a = {{0}, NW_OK};
        nw_buf_init(&a.b, UD_MAX);
        int first = 1;
        nw_userdata_common_put(&a, "[");
        for (int j = 0; j < o->ntaints; j++) {
            if (strcmp(o->taints[j].key, o->taints[i].key) != 0)
                continue;
            if (j < i) { /* written with the first taint of this key */
                first = -1;
                break;
            }
            char tv[600];
            snprintf(tv, sizeof tv, "%s:%s", o->taints[j].value ? o->taints[j].value : "",
                     o->taints[j].effect);
            nw_userdata_common_put(&a, "%s", first ? "" : ", ");
            toml_str(&a, tv);
            first = 0;
        }
        nw_userdata_common_put(&a, "]");
        if (first != -1 && a.rc == NW_OK)
            rc = toml_set(t, "settings.kubernetes.node-taints", k, nw_buf_str(&a.b));
        else if (a.rc != NW_OK)
            rc = a.rc;
        nw_buf_cleanup(&a.b);
    }
    return rc;
}

/* instanceStorePolicy RAID0: the bootstrap command that mounts the instance storage. */
static NW_MUST_USE nw_rc_t set_raid0(toml_t *t)
{
    const char *bc = "settings.bootstrap-commands.000-mount-instance-storage";
    toml_drop(t, bc, 0);
    nw_rc_t rc = toml_set(t, bc, "commands",
                          "[[\"apiclient\", \"ephemeral-storage\", \"init\"], [\"apiclient\", "
                          "\"ephemeral-storage\", \"bind\", \"--dirs\", \"/var/lib/containerd\", "
                          "\"/var/lib/kubelet\", \"/var/log/pods\"]]");
    if (rc == NW_OK)
        rc = toml_set(t, bc, "mode", "\"always\"");
    if (rc == NW_OK)
        rc = toml_set(t, bc, "essential", "true");
    return rc;
}

/* The merged settings as TOML, a table header before each table's keys. */
static void write_toml(out_t *w, toml_t *t)
{
    qsort(t->v, (size_t)t->n, sizeof *t->v, cmp_tline);
    const char *cur = NULL;
    for (int i = 0; i < t->n; i++) {
        if (!cur || strcmp(cur, t->v[i].table) != 0) {
            cur = t->v[i].table;
            if (*cur)
                nw_userdata_common_put(w, "%s[%s]\n", i ? "\n" : "", cur);
        }
        nw_userdata_common_put(w, "%s = %s\n", t->v[i].key, t->v[i].value);
    }
}

nw_rc_t nw_userdata_bottlerocket_render(const nw_ud_opts_t *o, const nw_ud_label_t *l, int nl,
                                        out_t *w, nw_err_t *err)
{
    toml_t t = {0};
    nw_rc_t rc = toml_read(o->custom, &t, err);
    if (rc != NW_OK) {
        toml_free(&t);
        return rc;
    }
    rc = set_kubernetes(&t, o, l, nl);
    /* node-taints: replaced by the NodeClaim's, key = ["value:Effect", ...] */
    toml_drop(&t, "settings.kubernetes.node-taints", 0);
    if (rc == NW_OK)
        rc = set_taints(&t, o);
    if (o->raid0 && rc == NW_OK)
        rc = set_raid0(&t);
    if (rc == NW_OK)
        write_toml(w, &t);
    else
        nw_err_set(err, rc, "spec.userData", "out of memory");
    toml_free(&t);
    return rc;
}
