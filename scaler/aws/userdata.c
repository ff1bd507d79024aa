/* scaler/aws/userdata.c — the bootstrap userData per AMI family; see userdata.h. */
#include "scaler/aws/userdata.h"

#include <ctype.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/sha.h>
#include <openssl/x509.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/duration.h"
#include "common/buf.h"
#include "common/json.h"
#include "common/yaml.h"
#include "scaler/aws/userdata_int.h"

#define BOUNDARY "//"

/* ---- output buffer that remembers its first failure ---- */

void nw_userdata_put(out_t *o, const char *fmt, ...)
{
    if (o->rc != NW_OK)
        return;
    va_list ap;
    va_start(ap, fmt);
    o->rc = nw_buf_vaddf(&o->b, fmt, ap);
    va_end(ap);
}

static void putn(out_t *o, const char *s, size_t n)
{
    if (o->rc == NW_OK)
        o->rc = nw_buf_add(&o->b, s, n);
}

/* Go's %q for the printable ASCII Kubernetes labels and taints use */
void nw_userdata_put_quoted(out_t *o, const char *s)
{
    nw_userdata_put(o, "\"");
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            nw_userdata_put(o, "\\%c", *s);
        else if ((unsigned char)*s < 0x20 || (unsigned char)*s == 0x7f)
            nw_userdata_put(o, "\\x%02x", (unsigned char)*s);
        else
            putn(o, s, 1);
    }
    nw_userdata_put(o, "\"");
}

/* ---- labels ---- */

int nw_userdata_label_restricted(const char *key)
{
    const char *slash = strchr(key, '/');
    if (!slash)
        return 0;
    size_t n = (size_t)(slash - key);
    static const char *const dom[] = {"node-restriction.kubernetes.io", "kubernetes.io", "k8s.io"};
    for (size_t i = 0; i < 3; i++) {
        size_t d = strlen(dom[i]);
        if (n == d && strncmp(key, dom[i], d) == 0)
            return 1;
        if (n > d && key[n - d - 1] == '.' && strncmp(key + n - d, dom[i], d) == 0)
            return 1;
    }
    return 0;
}

static int cmp_label(const void *a, const void *b)
{
    return strcmp(((const nw_ud_label_t *)a)->key, ((const nw_ud_label_t *)b)->key);
}

/* the labels a kubelet may set, sorted by key (nodeLabelArg sorts them); caller frees */
static nw_ud_label_t *kubelet_labels(const nw_ud_opts_t *o, int *n)
{
    nw_ud_label_t *v = calloc((size_t)o->nlabels + 1, sizeof *v);
    *n = 0;
    if (!v)
        return NULL;
    for (int i = 0; i < o->nlabels; i++)
        if (!nw_userdata_label_restricted(o->labels[i].key))
            v[(*n)++] = o->labels[i];
    qsort(v, (size_t)*n, sizeof *v, cmp_label);
    return v;
}

/* --node-labels="k=v,..." ("" when there are none) */
void nw_userdata_node_label_arg(out_t *w, const nw_ud_label_t *l, int n)
{
    if (n == 0)
        return;
    nw_buf_t b;
    nw_buf_init(&b, UD_MAX);
    nw_rc_t rc = NW_OK;
    for (int i = 0; i < n && rc == NW_OK; i++)
        rc = nw_buf_addf(&b, "%s%s=%s", i ? "," : "", l[i].key, l[i].value);
    if (rc != NW_OK && w->rc == NW_OK)
        w->rc = rc;
    nw_userdata_put(w, "--node-labels=");
    nw_userdata_put_quoted(w, nw_buf_str(&b));
    nw_buf_cleanup(&b);
}

/* ---- the user's MIME parts ---- */

void nw_userdata_parts_free(parts_t *p)
{
    for (int i = 0; i < p->n; i++) {
        free(p->v[i].headers);
        free(p->v[i].content);
    }
    free(p->v);
    memset(p, 0, sizeof *p);
}

static nw_rc_t parts_add(parts_t *p, const char *headers, size_t hl, const char *content, size_t cl)
{
    part_t *v = realloc(p->v, (size_t)(p->n + 1) * sizeof *v);
    if (!v)
        return NW_ENOMEM;
    p->v = v;
    v[p->n].headers = strndup(headers, hl);
    v[p->n].content = strndup(content, cl);
    if (!v[p->n].headers || !v[p->n].content) {
        free(v[p->n].headers);
        free(v[p->n].content);
        return NW_ENOMEM;
    }
    p->n++;
    return NW_OK;
}

nw_rc_t nw_userdata_parts_add_typed(parts_t *p, const char *ctype, const char *content)
{
    char h[128];
    int n = snprintf(h, sizeof h, "Content-Type: %s\n", ctype);
    return parts_add(p, h, (size_t)n, content, strlen(content));
}

static int is_mime(const char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    return strncmp(s, "MIME-Version:", 13) == 0 || strncmp(s, "Content-Type:", 13) == 0;
}

/* canonical MIME header key (textproto.CanonicalMIMEHeaderKey): Content-Type */
static void canon_key(char *k)
{
    int up = 1;
    for (; *k; k++) {
        *k = up ? (char)toupper((unsigned char)*k) : (char)tolower((unsigned char)*k);
        up = *k == '-';
    }
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* a header block (lines up to a blank line) into canonical, sorted "Key: value\n" text;
 * *ctype gets the Content-Type value (malloc'd, NULL if none). Returns the text or NULL. */
static char *headers_norm(const char *h, size_t len, char **ctype)
{
    char *copy = strndup(h, len), *save = NULL;
    char *lines[64];
    int n = 0;
    *ctype = NULL;
    if (!copy)
        return NULL;
    for (char *l = strtok_r(copy, "\n", &save); l && n < 64; l = strtok_r(NULL, "\n", &save)) {
        char *colon = strchr(l, ':');
        if (!colon)
            continue;
        *colon = 0;
        canon_key(l);
        char *v = colon + 1;
        while (*v == ' ' || *v == '\t')
            v++;
        size_t vl = strlen(v);
        while (vl && isspace((unsigned char)v[vl - 1]))
            v[--vl] = 0;
        if (strcmp(l, "Content-Type") == 0 && !*ctype)
            *ctype = strdup(v);
        size_t need = strlen(l) + vl + 4;
        if (!(lines[n] = malloc(need)))
            break;
        snprintf(lines[n++], need, "%s: %s\n", l, v);
    }
    free(copy);
    qsort(lines, (size_t)n, sizeof *lines, cmp_str);
    nw_buf_t b;
    nw_buf_init(&b, UD_MAX);
    nw_rc_t rc = NW_OK;
    for (int i = 0; i < n; i++) {
        if (rc == NW_OK)
            rc = nw_buf_adds(&b, lines[i]);
        free(lines[i]);
    }
    if (rc != NW_OK) {
        nw_buf_cleanup(&b);
        return NULL;
    }
    return nw_buf_take(&b);
}

/* the boundary parameter of a multipart Content-Type, into out; 0 if none */
static int boundary_of(const char *ctype, char *out, size_t n)
{
    if (!ctype || strncasecmp(ctype, "multipart/", 10) != 0)
        return 0;
    const char *p = strcasestr(ctype, "boundary=");
    if (!p)
        return 0;
    p += 9;
    size_t k = 0;
    if (*p == '"') {
        for (p++; *p && *p != '"' && k + 1 < n; p++)
            out[k++] = *p;
    } else {
        for (; *p && *p != ';' && !isspace((unsigned char)*p) && k + 1 < n; p++)
            out[k++] = *p;
    }
    out[k] = 0;
    return k > 0;
}

/* mail.ReadMessage + multipart.Reader over text (no CR): every part's headers and body */
static nw_rc_t mime_parse(const char *text, parts_t *out, nw_err_t *err)
{
    while (isspace((unsigned char)*text))
        text++;
    const char *body = strstr(text, "\n\n");
    if (!body)
        return nw_err_set(err, NW_EINVAL, "spec.userData",
                          "MIME userData has no blank line after its headers");
    char *ctype = NULL;
    char *h = headers_norm(text, (size_t)(body - text), &ctype);
    free(h);
    char bnd[256];
    int ok = boundary_of(ctype, bnd, sizeof bnd);
    free(ctype);
    if (!ok)
        return nw_err_set(err, NW_EINVAL, "spec.userData",
                          "MIME userData is not multipart or has no boundary");
    char delim[272];
    snprintf(delim, sizeof delim, "--%s", bnd);
    size_t dl = strlen(delim);
    /* the first delimiter line */
    const char *p = body + 1;
    for (;;) {
        if (strncmp(p, delim, dl) == 0 && (p[dl] == '\n' || p[dl] == 0 || p[dl] == '-'))
            break;
        const char *nl = strchr(p, '\n');
        if (!nl)
            return nw_err_set(err, NW_EINVAL, "spec.userData",
                              "MIME userData has no part (no line %s)", delim);
        p = nl + 1;
    }
    while (strncmp(p + dl, "--", 2) != 0) {
        const char *ph = strchr(p, '\n');
        if (!ph)
            break;
        ph++;
        const char *blank = strstr(ph, "\n\n");
        const char *hend, *content;
        if (*ph == '\n') { /* no headers */
            hend = ph;
            content = ph + 1;
        } else if (blank) {
            hend = blank + 1;
            content = blank + 2;
        } else
            return nw_err_set(err, NW_EINVAL, "spec.userData", "MIME part without a body");
        /* the body ends at "\n--boundary" */
        const char *end = content;
        for (;;) {
            const char *q = strstr(end, delim);
            if (!q)
                return nw_err_set(err, NW_EINVAL, "spec.userData",
                                  "MIME userData does not end with %s--", delim);
            if ((q == content || q[-1] == '\n') &&
                (q[dl] == '\n' || q[dl] == 0 || strncmp(q + dl, "--", 2) == 0)) {
                end = q;
                break;
            }
            end = q + dl;
        }
        size_t cl = (size_t)(end - content);
        if (cl && content[cl - 1] == '\n')
            cl--;
        char *ct = NULL;
        char *hn = headers_norm(ph, (size_t)(hend - ph), &ct);
        free(ct);
        if (!hn)
            return nw_err_set(err, NW_ENOMEM, "spec.userData", "out of memory");
        nw_rc_t rc = parts_add(out, hn, strlen(hn), cl ? content : "", cl);
        free(hn);
        if (rc != NW_OK)
            return nw_err_set(err, rc, "spec.userData", "out of memory");
        p = end;
        if (strncmp(p + dl, "--", 2) == 0)
            break;
    }
    return NW_OK;
}

/* mime.Archive.Serialize / multipart.Writer with boundary "//", CRs removed */
void nw_userdata_mime_write(out_t *w, const parts_t *p)
{
    nw_userdata_put(w, "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"" BOUNDARY
                       "\"\n\n");
    for (int i = 0; i < p->n; i++) {
        nw_userdata_put(w, "%s--" BOUNDARY "\n%s\n", i ? "\n" : "", p->v[i].headers);
        nw_userdata_put(w, "%s", p->v[i].content);
    }
    nw_userdata_put(w, "\n--" BOUNDARY "--\n");
}

/* the user's userData as parts: MIME as it is; else one part of type plain_type, or for
 * AL2023 a NodeConfig part when it reads as a YAML mapping */
nw_rc_t nw_userdata_custom_parts(const char *ud, int al2023, parts_t *out, nw_err_t *err)
{
    if (!ud || !*ud)
        return NW_OK;
    char *text = strdup(ud);
    if (!text)
        return nw_err_set(err, NW_ENOMEM, "spec.userData", "out of memory");
    size_t j = 0; /* the multipart writer's CRs are removed: do it to the input too */
    for (size_t i = 0; text[i]; i++)
        if (text[i] != '\r')
            text[j++] = text[i];
    text[j] = 0;
    nw_rc_t rc;
    if (is_mime(text)) {
        rc = mime_parse(text, out, err);
    } else {
        const char *ct = CT_SHELL;
        if (al2023) {
            cJSON **docs = NULL;
            size_t nd = 0;
            nw_err_t e = {0};
            if (nw_yaml_load_docs(text, strlen(text), &docs, &nd, &e) == NW_OK && nd == 1 &&
                cJSON_IsObject(docs[0]))
                ct = CT_NODECONFIG;
            nw_yaml_docs_free(docs, nd);
        }
        rc = nw_userdata_parts_add_typed(out, ct, text);
        if (rc != NW_OK)
            nw_err_set(err, rc, "spec.userData", "out of memory");
    }
    free(text);
    return rc;
}

/* ---- kubelet settings ---- */

typedef struct {
    const char *key;
    const cJSON *v;
} kv_t;

static int cmp_kv(const void *a, const void *b)
{
    return strcmp(((const kv_t *)a)->key, ((const kv_t *)b)->key);
}

/* Go's Duration.String of a duration text ("1m" -> "1m0s"); the text when it does not parse */
void nw_userdata_go_duration(const char *s, char *out, size_t n)
{
    int64_t ns;
    nw_err_t e = {0};
    if (nw_duration_parse(s, &ns, &e) == NW_OK)
        nw_duration_format(ns, out, n);
    else
        snprintf(out, n, "%s", s);
}

/* --name="k<sep>v,..." over a string map, in key order ("" for an empty map) */
static void join_args(out_t *w, const char *name, const cJSON *m, const char *sep, int durations,
                      int *first)
{
    kv_t kv[32];
    int n = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, m)
    {
        if (cJSON_IsString(e) && n < 32)
            kv[n++] = (kv_t){e->string, e};
    }
    if (n == 0)
        return;
    qsort(kv, (size_t)n, sizeof *kv, cmp_kv);
    nw_buf_t b;
    nw_buf_init(&b, UD_MAX);
    nw_rc_t rc = NW_OK;
    for (int i = 0; i < n && rc == NW_OK; i++) {
        char d[64];
        if (durations)
            nw_userdata_go_duration(kv[i].v->valuestring, d, sizeof d);
        rc = nw_buf_addf(&b, "%s%s%s%s", i ? "," : "", kv[i].key, sep,
                         durations ? d : kv[i].v->valuestring);
    }
    if (rc != NW_OK && w->rc == NW_OK)
        w->rc = rc;
    nw_userdata_put(w, "%s%s=", *first ? "" : " ", name);
    nw_userdata_put_quoted(w, nw_buf_str(&b));
    *first = 0;
    nw_buf_cleanup(&b);
}

int64_t nw_userdata_kubelet_int(const cJSON *kub, const char *k, int *has)
{
    const cJSON *v = nw_json_get(kub, k);
    *has = cJSON_IsNumber(v);
    return *has ? (int64_t)v->valuedouble : 0;
}

/* taint.ToString(): key=value:effect, key:effect */
static void taint_str(out_t *w, const nw_ud_taint_t *t)
{
    if (t->value && *t->value)
        nw_userdata_put(w, "%s=%s:%s", t->key, t->value, t->effect);
    else
        nw_userdata_put(w, "%s:%s", t->key, t->effect);
}

/* Options.kubeletExtraArgs, space-separated */
static void kubelet_extra_args(out_t *w, const nw_ud_opts_t *o, const nw_ud_label_t *l, int nl)
{
    int first = 1;
    if (nl) {
        nw_userdata_node_label_arg(w, l, nl);
        first = 0;
    }
    out_t t = {{0}, NW_OK};
    nw_buf_init(&t.b, UD_MAX);
    for (int i = 0; i < o->ntaints; i++) {
        if (i)
            nw_userdata_put(&t, ",");
        taint_str(&t, &o->taints[i]);
    }
    nw_userdata_put(w, "%s--register-with-taints=", first ? "" : " ");
    nw_userdata_put_quoted(w, nw_buf_str(&t.b));
    if (t.rc != NW_OK && w->rc == NW_OK)
        w->rc = t.rc;
    nw_buf_cleanup(&t.b);
    first = 0;
    const cJSON *k = o->kubelet;
    int has;
    int64_t mp = nw_userdata_kubelet_int(k, "maxPods", &has);
    nw_userdata_put(w, " --max-pods=%lld", (long long)(has ? mp : o->max_pods));
    int64_t ppc = nw_userdata_kubelet_int(k, "podsPerCore", &has);
    if (has)
        nw_userdata_put(w, " --pods-per-core=%lld", (long long)ppc);
    join_args(w, "--system-reserved", nw_json_get(k, "systemReserved"), "=", 0, &first);
    join_args(w, "--kube-reserved", nw_json_get(k, "kubeReserved"), "=", 0, &first);
    join_args(w, "--eviction-hard", nw_json_get(k, "evictionHard"), "<", 0, &first);
    join_args(w, "--eviction-soft", nw_json_get(k, "evictionSoft"), "<", 0, &first);
    join_args(w, "--eviction-soft-grace-period", nw_json_get(k, "evictionSoftGracePeriod"), "=", 1,
              &first);
    int64_t v = nw_userdata_kubelet_int(k, "evictionMaxPodGracePeriod", &has);
    if (has)
        nw_userdata_put(w, " --eviction-max-pod-grace-period=%lld", (long long)v);
    v = nw_userdata_kubelet_int(k, "imageGCHighThresholdPercent", &has);
    if (has)
        nw_userdata_put(w, " --image-gc-high-threshold=%lld", (long long)v);
    v = nw_userdata_kubelet_int(k, "imageGCLowThresholdPercent", &has);
    if (has)
        nw_userdata_put(w, " --image-gc-low-threshold=%lld", (long long)v);
    const cJSON *q = nw_json_get(k, "cpuCFSQuota");
    if (cJSON_IsBool(q))
        nw_userdata_put(w, " --cpu-cfs-quota=%s", cJSON_IsTrue(q) ? "true" : "false");
}

/* spec.kubelet.clusterDNS[0], else the kube-dns Service's address (defaultClusterDNS) */
const char *nw_userdata_cluster_dns(const nw_ud_opts_t *o)
{
    const char *d =
        cJSON_GetStringValue(cJSON_GetArrayItem(nw_json_get(o->kubelet, "clusterDNS"), 0));
    return d ? d : o->kube_dns && *o->kube_dns ? o->kube_dns : NULL;
}

/* eksbootstrap.go isIPv6: the clusterDNS is not an IPv4 address */
int nw_userdata_ipv6_node(const nw_ud_opts_t *o)
{
    const char *d = nw_userdata_cluster_dns(o);
    return d && strchr(d, ':') != NULL;
}

/* ---- AL2: eksbootstrap.go ---- */

nw_rc_t nw_userdata_render_al2(const nw_ud_opts_t *o, const nw_ud_label_t *l, int nl, out_t *w,
                               nw_err_t *err)
{
    parts_t parts = {0};
    nw_rc_t rc = nw_userdata_custom_parts(o->custom, 0, &parts, err);
    if (rc != NW_OK) {
        nw_userdata_parts_free(&parts);
        return rc;
    }
    out_t s = {{0}, NW_OK};
    nw_buf_init(&s.b, UD_MAX);
    nw_userdata_put(&s, "#!/bin/bash -xe\n");
    nw_userdata_put(
        &s, "exec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1\n");
    nw_userdata_put(&s, "/etc/eks/bootstrap.sh '%s' --apiserver-endpoint '%s' ", o->cluster_name,
                    o->endpoint);
    if (o->ca_bundle && *o->ca_bundle)
        nw_userdata_put(&s, "--b64-cluster-ca '%s'", o->ca_bundle);
    const char *dns = nw_userdata_cluster_dns(o);
    if (nw_userdata_ipv6_node(o))
        nw_userdata_put(&s, " \\\n--ip-family ipv6");
    if (dns)
        nw_userdata_put(&s, " \\\n--dns-cluster-ip '%s'", dns);
    nw_userdata_put(&s, " \\\n--use-max-pods false"); /* maxPods is always given */
    nw_userdata_put(&s, " \\\n--kubelet-extra-args '");
    kubelet_extra_args(&s, o, l, nl);
    nw_userdata_put(&s, "'");
    if (o->raid0)
        nw_userdata_put(&s, " \\\n--local-disks raid0");
    if (s.rc == NW_OK)
        s.rc = nw_userdata_parts_add_typed(&parts, CT_SHELL, nw_buf_str(&s.b));
    rc = s.rc;
    nw_buf_cleanup(&s.b);
    if (rc == NW_OK)
        nw_userdata_mime_write(w, &parts);
    nw_userdata_parts_free(&parts);
    return rc == NW_OK ? NW_OK : nw_err_set(err, rc, "spec.userData", "userData too large");
}

/* ---- AL2023: nodeadm.go ---- */

static cJSON *taints_json(const nw_ud_opts_t *o)
{
    cJSON *a = nw_json_new_array();
    for (int i = 0; i < o->ntaints; i++) {
        cJSON *t = nw_json_new_object();
        nw_json_add_string(t, "key", o->taints[i].key);
        if (o->taints[i].value && *o->taints[i].value)
            nw_json_add_string(t, "value", o->taints[i].value);
        nw_json_add_string(t, "effect", o->taints[i].effect);
        nw_json_push(a, t);
    }
    return a;
}

/* spec.kubelet as KubeletConfiguration fields: durations as Go's Duration.String
 * (metav1.Duration), maxPods always (the launch's types' value without kubelet.maxPods) */
cJSON *nw_userdata_kubelet_config(const nw_ud_opts_t *o)
{
    cJSON *cfg = cJSON_IsObject(o->kubelet) ? nw_json_dup(o->kubelet) : nw_json_new_object();
    cJSON *g = cJSON_GetObjectItemCaseSensitive(cfg, "evictionSoftGracePeriod"), *e;
    cJSON_ArrayForEach(e, g)
    {
        if (cJSON_IsString(e)) {
            char d[64];
            nw_userdata_go_duration(e->valuestring, d, sizeof d);
            cJSON_SetValuestring(e, d);
        }
    }
    if (!cJSON_IsNumber(nw_json_get(cfg, "maxPods")))
        nw_json_add_number(cfg, "maxPods", (double)o->max_pods);
    if (!cJSON_GetArrayItem(nw_json_get(cfg, "clusterDNS"), 0) && o->kube_dns && *o->kube_dns) {
        cJSON_DeleteItemFromObjectCaseSensitive(cfg, "clusterDNS");
        nw_json_push(nw_json_add_array(cfg, "clusterDNS"), nw_json_new_string(o->kube_dns));
    }
    cJSON_DeleteItemFromObjectCaseSensitive(cfg, "registerWithTaints");
    return cfg;
}

nw_rc_t nw_userdata_render_al2023(const nw_ud_opts_t *o, const nw_ud_label_t *l, int nl, out_t *w,
                                  nw_err_t *err)
{
    if (!o->cluster_cidr || !*o->cluster_cidr)
        return nw_err_set(err, NW_EINVAL, "settings.clusterCIDR",
                          "settings.clusterCIDR is empty: AL2023's NodeConfig needs the "
                          "cluster's service CIDR");
    parts_t parts = {0};
    nw_rc_t rc = nw_userdata_custom_parts(o->custom, 1, &parts, err);
    if (rc != NW_OK) {
        nw_userdata_parts_free(&parts);
        return rc;
    }
    cJSON *nc = nw_json_new_object();
    nw_json_add_string(nc, "apiVersion", "node.eks.aws/v1alpha1");
    nw_json_add_string(nc, "kind", "NodeConfig");
    cJSON *spec = nw_json_add_object(nc, "spec");
    cJSON *cl = nw_json_add_object(spec, "cluster");
    nw_json_add_string(cl, "apiServerEndpoint", o->endpoint);
    if (o->ca_bundle && *o->ca_bundle)
        nw_json_add_string(cl, "certificateAuthority", o->ca_bundle);
    nw_json_add_string(cl, "cidr", o->cluster_cidr);
    nw_json_add_string(cl, "name", o->cluster_name);
    if (o->raid0)
        nw_json_add_string(nw_json_add_object(nw_json_add_object(spec, "instance"), "localStorage"),
                           "strategy", "RAID0");
    cJSON *kub = nw_json_add_object(spec, "kubelet");
    cJSON *cfg = nw_userdata_kubelet_config(o);
    nw_json_add_item(cfg, "registerWithTaints", taints_json(o));
    nw_json_add_item(kub, "config", cfg);
    if (nl) {
        out_t f = {{0}, NW_OK};
        nw_buf_init(&f.b, UD_MAX);
        nw_userdata_node_label_arg(&f, l, nl);
        if (f.rc == NW_OK)
            nw_json_push(nw_json_add_array(kub, "flags"), nw_json_new_string(nw_buf_str(&f.b)));
        rc = f.rc;
        nw_buf_cleanup(&f.b);
    }
    char *yaml = NULL;
    size_t yl = 0;
    if (rc == NW_OK)
        rc = nw_yaml_emit(nc, &yaml, &yl, err);
    cJSON_Delete(nc);
    if (rc == NW_OK) {
        size_t n = yl + 64;
        char *content = malloc(n);
        if (!content)
            rc = NW_ENOMEM;
        else {
            snprintf(content, n, "# Karpenter Generated NodeConfig\n%s", yaml);
            rc = nw_userdata_parts_add_typed(&parts, CT_NODECONFIG, content);
            free(content);
        }
    }
    free(yaml);
    if (rc == NW_OK)
        nw_userdata_mime_write(w, &parts);
    nw_userdata_parts_free(&parts);
    return rc == NW_OK ? NW_OK : nw_err_set(err, rc, "spec.userData", "cannot render NodeConfig");
}

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

static nw_rc_t toml_set(toml_t *t, const char *table, const char *key, const char *value)
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
static nw_rc_t toml_read(const char *ud, toml_t *t, nw_err_t *err)
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
        if (!eq) {
            rc = nw_err_set(err, NW_EINVAL, "spec.userData",
                            "Bottlerocket TOML line %d: expected key = value", lineno);
            break;
        }
        *eq = 0;
        char *key = trim(s), *val = trim(eq + 1);
        char *end = value_end(val);
        if (!end || !*val) {
            rc = nw_err_set(err, NW_EINVAL, "spec.userData",
                            "Bottlerocket TOML line %d: nodewarden merges one-line values only",
                            lineno);
            break;
        }
        *end = 0;
        val = trim(val);
        if (*val == '{') {
            rc = nw_err_set(err, NW_EINVAL, "spec.userData",
                            "Bottlerocket TOML line %d: inline tables are not merged by "
                            "nodewarden; write a [table]",
                            lineno);
            break;
        }
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
        rc = toml_set(t, norm, ck, val);
        if (rc != NW_OK)
            nw_err_set(err, rc, "spec.userData", "out of memory");
    }
    free(text);
    return rc;
}

/* a TOML basic string */
static void toml_str(out_t *w, const char *s)
{
    nw_userdata_put_quoted(w, s);
}

static nw_rc_t toml_set_str(toml_t *t, const char *table, const char *key, const char *value)
{
    out_t w = {{0}, NW_OK};
    nw_buf_init(&w.b, UD_MAX);
    toml_str(&w, value);
    nw_rc_t rc = w.rc == NW_OK ? toml_set(t, table, key, nw_buf_str(&w.b)) : w.rc;
    nw_buf_cleanup(&w.b);
    return rc;
}

/* a string map of spec.kubelet into [settings.kubernetes.<table>] (replacing it) */
static nw_rc_t toml_map(toml_t *t, const char *table, const cJSON *m, int durations)
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
            nw_userdata_go_duration(e->valuestring, d, sizeof d);
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

nw_rc_t nw_userdata_render_bottlerocket(const nw_ud_opts_t *o, const nw_ud_label_t *l, int nl,
                                        out_t *w, nw_err_t *err)
{
    toml_t t = {0};
    nw_rc_t rc = toml_read(o->custom, &t, err);
    if (rc != NW_OK) {
        toml_free(&t);
        return rc;
    }
    const char *K = "settings.kubernetes";
    char num[32];
    const cJSON *kub = o->kubelet;
    if (rc == NW_OK)
        rc = toml_set_str(&t, K, "cluster-name", o->cluster_name);
    if (rc == NW_OK)
        rc = toml_set_str(&t, K, "api-server", o->endpoint);
    if (rc == NW_OK && o->ca_bundle && *o->ca_bundle)
        rc = toml_set_str(&t, K, "cluster-certificate", o->ca_bundle);
    else if (rc == NW_OK)
        toml_unset(&t, K, "cluster-certificate");
    /* node-labels: merged, ours win */
    for (int i = 0; i < nl && rc == NW_OK; i++) {
        char k[300];
        toml_key(k, sizeof k, l[i].key);
        rc = toml_set_str(&t, "settings.kubernetes.node-labels", k, l[i].value);
    }
    int has;
    int64_t mp = nw_userdata_kubelet_int(kub, "maxPods", &has);
    snprintf(num, sizeof num, "%lld", (long long)(has ? mp : o->max_pods));
    if (rc == NW_OK)
        rc = toml_set(&t, K, "max-pods", num);
    const char *dns = nw_userdata_cluster_dns(o);
    if (rc == NW_OK && dns)
        rc = toml_set_str(&t, K, "cluster-dns-ip", dns);
    if (rc == NW_OK)
        rc = toml_map(&t, "settings.kubernetes.system-reserved", nw_json_get(kub, "systemReserved"),
                      0);
    if (rc == NW_OK)
        rc = toml_map(&t, "settings.kubernetes.kube-reserved", nw_json_get(kub, "kubeReserved"), 0);
    if (rc == NW_OK)
        rc = toml_map(&t, "settings.kubernetes.eviction-hard", nw_json_get(kub, "evictionHard"), 0);
    if (rc == NW_OK)
        rc = toml_map(&t, "settings.kubernetes.eviction-soft", nw_json_get(kub, "evictionSoft"), 0);
    if (rc == NW_OK)
        rc = toml_map(&t, "settings.kubernetes.eviction-soft-grace-period",
                      nw_json_get(kub, "evictionSoftGracePeriod"), 1);
    int64_t v = nw_userdata_kubelet_int(kub, "evictionMaxPodGracePeriod", &has);
    snprintf(num, sizeof num, "%lld", (long long)v);
    if (rc == NW_OK && has)
        rc = toml_set(&t, K, "eviction-max-pod-grace-period", num);
    v = nw_userdata_kubelet_int(kub, "imageGCHighThresholdPercent", &has);
    snprintf(num, sizeof num, "%lld", (long long)v);
    if (rc == NW_OK && has)
        rc = toml_set_str(&t, K, "image-gc-high-threshold-percent", num);
    v = nw_userdata_kubelet_int(kub, "imageGCLowThresholdPercent", &has);
    snprintf(num, sizeof num, "%lld", (long long)v);
    if (rc == NW_OK && has)
        rc = toml_set_str(&t, K, "image-gc-low-threshold-percent", num);
    const cJSON *q = nw_json_get(kub, "cpuCFSQuota");
    if (rc == NW_OK && cJSON_IsBool(q))
        rc = toml_set(&t, K, "cpu-cfs-quota-enforced", cJSON_IsTrue(q) ? "true" : "false");
    /* node-taints: replaced by the NodeClaim's, key = ["value:Effect", ...] */
    toml_drop(&t, "settings.kubernetes.node-taints", 0);
    for (int i = 0; i < o->ntaints && rc == NW_OK; i++) {
        char k[300];
        toml_key(k, sizeof k, o->taints[i].key);
        out_t a = {{0}, NW_OK};
        nw_buf_init(&a.b, UD_MAX);
        int first = 1;
        nw_userdata_put(&a, "[");
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
            nw_userdata_put(&a, "%s", first ? "" : ", ");
            toml_str(&a, tv);
            first = 0;
        }
        nw_userdata_put(&a, "]");
        if (first != -1 && a.rc == NW_OK)
            rc = toml_set(&t, "settings.kubernetes.node-taints", k, nw_buf_str(&a.b));
        else if (a.rc != NW_OK)
            rc = a.rc;
        nw_buf_cleanup(&a.b);
    }
    if (o->raid0 && rc == NW_OK) {
        const char *bc = "settings.bootstrap-commands.000-mount-instance-storage";
        toml_drop(&t, bc, 0);
        rc = toml_set(&t, bc, "commands",
                      "[[\"apiclient\", \"ephemeral-storage\", \"init\"], [\"apiclient\", "
                      "\"ephemeral-storage\", \"bind\", \"--dirs\", \"/var/lib/containerd\", "
                      "\"/var/lib/kubelet\", \"/var/log/pods\"]]");
        if (rc == NW_OK)
            rc = toml_set(&t, bc, "mode", "\"always\"");
        if (rc == NW_OK)
            rc = toml_set(&t, bc, "essential", "true");
    }
    if (rc == NW_OK) {
        qsort(t.v, (size_t)t.n, sizeof *t.v, cmp_tline);
        const char *cur = NULL;
        for (int i = 0; i < t.n; i++) {
            if (!cur || strcmp(cur, t.v[i].table) != 0) {
                cur = t.v[i].table;
                if (*cur)
                    nw_userdata_put(w, "%s[%s]\n", i ? "\n" : "", cur);
            }
            nw_userdata_put(w, "%s = %s\n", t.v[i].key, t.v[i].value);
        }
    } else
        nw_err_set(err, rc, "spec.userData", "out of memory");
    toml_free(&t);
    return rc;
}

/* ---- kubeadm: nodewarden's own bootstrap ---- */

nw_rc_t nw_userdata_ca_pin(const char *ca, char *out, size_t len, nw_err_t *err)
{
    if (len)
        *out = 0;
    if (!ca || !*ca)
        return nw_err_set(err, NW_EINVAL, "settings.clusterCABundle",
                          "settings.clusterCABundle is empty: kubeadm join pins the cluster CA "
                          "by its public key's hash");
    /* base64 of PEM (Karpenter's form), or the PEM itself */
    unsigned char *pem = NULL;
    int pl = 0;
    if (strstr(ca, "-----BEGIN")) {
        pem = (unsigned char *)strdup(ca);
        pl = pem ? (int)strlen(ca) : 0;
    } else {
        char *clean = malloc(strlen(ca) + 1);
        size_t n = 0;
        for (const char *p = ca; clean && *p; p++)
            if (!isspace((unsigned char)*p))
                clean[n++] = *p;
        if (clean && n % 4 == 0 && n > 0) {
            pem = malloc(n / 4 * 3 + 1);
            pl = pem ? EVP_DecodeBlock(pem, (unsigned char *)clean, (int)n) : -1;
            if (pl < 0) {
                free(pem);
                pem = NULL;
            }
        }
        free(clean);
    }
    X509 *x = NULL;
    if (pem && pl > 0) {
        BIO *b = BIO_new_mem_buf(pem, pl);
        x = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
        BIO_free(b);
    }
    free(pem);
    ERR_clear_error();
    if (!x)
        return nw_err_set(err, NW_EINVAL, "settings.clusterCABundle",
                          "settings.clusterCABundle holds no PEM certificate (base64 of the "
                          "cluster CA's ca.crt)");
    unsigned char *der = NULL;
    int dl = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(x), &der);
    X509_free(x);
    if (dl <= 0)
        return nw_err_set(err, NW_EINVAL, "settings.clusterCABundle",
                          "cannot encode the CA certificate's public key");
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256(der, (size_t)dl, md);
    OPENSSL_free(der);
    if (len < 7 + 2 * SHA256_DIGEST_LENGTH + 1)
        return nw_err_set(err, NW_EINVAL, "settings.clusterCABundle", "pin buffer too small");
    memcpy(out, "sha256:", 7);
    for (int i = 0; i < SHA256_DIGEST_LENGTH; i++)
        snprintf(out + 7 + 2 * i, 3, "%02x", md[i]);
    return NW_OK;
}

/* host:port of an endpoint URL ("https://10.0.0.10:6443/" -> "10.0.0.10:6443"; no port:
 * the scheme's) */
static void endpoint_hostport(const char *url, char *out, size_t n)
{
    const char *p = strstr(url, "://");
    int http = strncmp(url, "http://", 7) == 0;
    p = p ? p + 3 : url;
    size_t l = strcspn(p, "/?#");
    const char *close = memchr(p, ']', l);
    const char *colon = NULL;
    for (const char *q = close ? close : p; q < p + l; q++)
        if (*q == ':')
            colon = q;
    if (colon)
        snprintf(out, n, "%.*s", (int)l, p);
    else
        snprintf(out, n, "%.*s:%s", (int)l, p, http ? "80" : "443");
}

#define KUBEADM_DIR "/etc/kubernetes/nodewarden"

nw_rc_t nw_userdata_render_kubeadm(const nw_ud_opts_t *o, const nw_ud_label_t *l, int nl, out_t *w,
                                   nw_err_t *err)
{
    char pin[80];
    nw_rc_t rc = nw_userdata_ca_pin(o->ca_bundle, pin, sizeof pin, err);
    if (rc != NW_OK)
        return rc;
    for (const char *p = o->kubeadm_token; *p; p++)
        if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '.'))
            return nw_err_set(err, NW_EINVAL, "bootstrap token", "not a kubeadm token");
    parts_t parts = {0};
    rc = nw_userdata_custom_parts(o->custom, 0, &parts, err);
    if (rc != NW_OK) {
        nw_userdata_parts_free(&parts);
        return rc;
    }
    cJSON *cfg = nw_userdata_kubelet_config(o);
    cJSON_DeleteItemFromObjectCaseSensitive(cfg, "providerID");
    char *patch = NULL;
    size_t pl = 0;
    rc = nw_yaml_emit(cfg, &patch, &pl, err);
    cJSON_Delete(cfg);
    if (rc != NW_OK) {
        nw_userdata_parts_free(&parts);
        return rc;
    }
    char ep[512];
    endpoint_hostport(o->endpoint, ep, sizeof ep);
    out_t s = {{0}, NW_OK};
    nw_buf_init(&s.b, UD_MAX);
    nw_userdata_put(
        &s, "#!/bin/bash\n"
            "# nodewarden's kubeadm bootstrap (EC2NodeClass annotation nodewarden.io/bootstrap: "
            "kubeadm).\n"
            "# The token was minted for this node alone: it expires with the registration "
            "timeout and\n"
            "# nodewarden deletes it once the node has registered.\n"
            "set -euo pipefail\n"
            "trap 'rm -f " KUBEADM_DIR "/join.yaml' EXIT\n"
            "IMDS=http://169.254.169.254/latest\n"
            "T=$(curl -sSf -X PUT \"$IMDS/api/token\" -H "
            "'X-aws-ec2-metadata-token-ttl-seconds: 300')\n"
            "ZONE=$(curl -sSf -H \"X-aws-ec2-metadata-token: $T\" "
            "\"$IMDS/meta-data/placement/availability-zone\")\n"
            "INSTANCE_ID=$(curl -sSf -H \"X-aws-ec2-metadata-token: $T\" "
            "\"$IMDS/meta-data/instance-id\")\n"
            "install -d -m 0700 " KUBEADM_DIR "/patches\n"
            "umask 077\n"
            "cat > " KUBEADM_DIR "/patches/kubeletconfiguration+merge.yaml <<'NWEOF'\n");
    nw_userdata_put(&s, "%s%sNWEOF\n", patch, pl && patch[pl - 1] == '\n' ? "" : "\n");
    nw_userdata_put(&s,
                    "cat > " KUBEADM_DIR "/join.yaml <<NWEOF\n"
                    "apiVersion: kubeadm.k8s.io/%s\n"
                    "kind: JoinConfiguration\n"
                    "discovery:\n"
                    "  bootstrapToken:\n"
                    "    apiServerEndpoint: \"%s\"\n"
                    "    token: \"%s\"\n"
                    "    caCertHashes:\n"
                    "      - \"%s\"\n"
                    "nodeRegistration:\n"
                    "  kubeletExtraArgs:\n",
                    o->kubeadm_v1beta4 ? "v1beta4" : "v1beta3", ep, o->kubeadm_token, pin);
    /* v1beta3: a map of flag to value; v1beta4: a list of {name, value} */
    const char *ind = o->kubeadm_v1beta4 ? "    - name: " : "    ";
    const char *sep = o->kubeadm_v1beta4 ? "\n      value: \"" : ": \"";
    nw_userdata_put(&s, "%sprovider-id%saws:///${ZONE}/${INSTANCE_ID}\"\n", ind, sep);
    if (nw_userdata_ipv6_node(
            o)) /* the kubelet's node address: its IPv6 one (the default is IPv4) */
        nw_userdata_put(&s, "%snode-ip%s::\"\n", ind, sep);
    if (nl) {
        nw_userdata_put(&s, "%snode-labels%s", ind, sep);
        for (int i = 0; i < nl; i++)
            nw_userdata_put(&s, "%s%s=%s", i ? "," : "", l[i].key, l[i].value);
        nw_userdata_put(&s, "\"\n");
    }
    nw_userdata_put(&s, "  taints:%s\n", o->ntaints ? "" : " []");
    for (int i = 0; i < o->ntaints; i++) {
        nw_userdata_put(&s, "    - key: \"%s\"\n", o->taints[i].key);
        if (o->taints[i].value && *o->taints[i].value)
            nw_userdata_put(&s, "      value: \"%s\"\n", o->taints[i].value);
        nw_userdata_put(&s, "      effect: \"%s\"\n", o->taints[i].effect);
    }
    nw_userdata_put(&s, "patches:\n"
                        "  directory: " KUBEADM_DIR "/patches\n"
                        "NWEOF\n"
                        "kubeadm join --config " KUBEADM_DIR "/join.yaml\n");
    free(patch);
    if (s.rc == NW_OK)
        s.rc = nw_userdata_parts_add_typed(&parts, CT_SHELL, nw_buf_str(&s.b));
    rc = s.rc;
    nw_buf_cleanup(&s.b);
    if (rc == NW_OK)
        nw_userdata_mime_write(w, &parts);
    nw_userdata_parts_free(&parts);
    return rc == NW_OK ? NW_OK : nw_err_set(err, rc, "spec.userData", "userData too large");
}

/* ---- entry ---- */

nw_rc_t nw_userdata_render(const nw_ud_opts_t *o, char **out, nw_err_t *err)
{
    *out = NULL;
    if (!o->kubeadm_token && (o->family == NW_AMI_CUSTOM || o->family == NW_AMI_WINDOWS)) {
        if (o->custom && *o->custom && !(*out = strdup(o->custom)))
            return nw_err_set(err, NW_ENOMEM, "spec.userData", "out of memory");
        return NW_OK;
    }
    if (!o->endpoint || !*o->endpoint)
        return nw_err_set(err, NW_EINVAL, "settings.clusterEndpoint",
                          "settings.clusterEndpoint is empty: the %s bootstrap needs the API "
                          "server's URL",
                          o->kubeadm_token                   ? "kubeadm"
                          : o->family == NW_AMI_BOTTLEROCKET ? "Bottlerocket"
                          : o->family == NW_AMI_AL2          ? "AL2"
                                                             : "AL2023");
    int nl = 0;
    nw_ud_label_t *l = kubelet_labels(o, &nl);
    if (!l)
        return nw_err_set(err, NW_ENOMEM, "spec.userData", "out of memory");
    out_t w = {{0}, NW_OK};
    nw_buf_init(&w.b, UD_MAX);
    nw_rc_t rc = o->kubeadm_token             ? nw_userdata_render_kubeadm(o, l, nl, &w, err)
                 : o->family == NW_AMI_AL2    ? nw_userdata_render_al2(o, l, nl, &w, err)
                 : o->family == NW_AMI_AL2023 ? nw_userdata_render_al2023(o, l, nl, &w, err)
                                              : nw_userdata_render_bottlerocket(o, l, nl, &w, err);
    free(l);
    if (rc == NW_OK && w.rc != NW_OK)
        rc = nw_err_set(err, w.rc, "spec.userData", "userData larger than %d bytes", UD_MAX);
    if (rc == NW_OK && !(*out = nw_buf_take(&w.b)))
        rc = nw_err_set(err, NW_ENOMEM, "spec.userData", "out of memory");
    nw_buf_cleanup(&w.b);
    return rc;
}
