/*
 * scaler/aws/userdata_al2.c — the AL2 bootstrap: the user's parts, then /etc/eks/bootstrap.sh
 * with the API server, the CA, the cluster DNS and --kubelet-extra-args (labels, taints, max
 * pods, reserved resources, eviction thresholds, ...)
 * (aws/karpenter-provider-aws pkg/providers/amifamily/bootstrap/eksbootstrap.go, and
 * bootstrap.go kubeletExtraArgs, joinParameterArgs). See userdata.h.
 */
#include "scaler/aws/userdata.h"

#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/json.h"
#include "scaler/aws/userdata_int.h"

/* ---- --kubelet-extra-args: bootstrap.go kubeletExtraArgs ---- */

typedef struct {
    const char *key;
    const cJSON *v;
} kv_t;

static int cmp_kv(const void *a, const void *b)
{
    return strcmp(((const kv_t *)a)->key, ((const kv_t *)b)->key);
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
            nw_userdata_common_go_duration(kv[i].v->valuestring, d, sizeof d);
        rc = nw_buf_addf(&b, "%s%s%s%s", i ? "," : "", kv[i].key, sep,
                         durations ? d : kv[i].v->valuestring);
    }
    if (rc != NW_OK && w->rc == NW_OK)
        w->rc = rc;
    nw_userdata_common_put(w, "%s%s=", *first ? "" : " ", name);
    nw_userdata_common_put_quoted(w, nw_buf_str(&b));
    *first = 0;
    nw_buf_cleanup(&b);
}

/* taint.ToString(): key=value:effect, key:effect */
static void taint_str(out_t *w, const nw_ud_taint_t *t)
{
    if (t->value && *t->value)
        nw_userdata_common_put(w, "%s=%s:%s", t->key, t->value, t->effect);
    else
        nw_userdata_common_put(w, "%s:%s", t->key, t->effect);
}

/* Options.kubeletExtraArgs, space-separated */
static void kubelet_extra_args(out_t *w, const nw_ud_opts_t *o, const nw_ud_label_t *l, int nl)
{
    int first = 1;
    if (nl) {
        nw_userdata_common_node_label_arg(w, l, nl);
        first = 0;
    }
    out_t t = {{0}, NW_OK};
    nw_buf_init(&t.b, UD_MAX);
    for (int i = 0; i < o->ntaints; i++) {
        if (i)
            nw_userdata_common_put(&t, ",");
        taint_str(&t, &o->taints[i]);
    }
    nw_userdata_common_put(w, "%s--register-with-taints=", first ? "" : " ");
    nw_userdata_common_put_quoted(w, nw_buf_str(&t.b));
    if (t.rc != NW_OK && w->rc == NW_OK)
        w->rc = t.rc;
    nw_buf_cleanup(&t.b);
    first = 0;
    const cJSON *k = o->kubelet;
    int has;
    int64_t mp = nw_userdata_common_kubelet_int(k, "maxPods", &has);
    nw_userdata_common_put(w, " --max-pods=%lld", (long long)(has ? mp : o->max_pods));
    int64_t ppc = nw_userdata_common_kubelet_int(k, "podsPerCore", &has);
    if (has)
        nw_userdata_common_put(w, " --pods-per-core=%lld", (long long)ppc);
    join_args(w, "--system-reserved", nw_json_get(k, "systemReserved"), "=", 0, &first);
    join_args(w, "--kube-reserved", nw_json_get(k, "kubeReserved"), "=", 0, &first);
    join_args(w, "--eviction-hard", nw_json_get(k, "evictionHard"), "<", 0, &first);
    join_args(w, "--eviction-soft", nw_json_get(k, "evictionSoft"), "<", 0, &first);
    join_args(w, "--eviction-soft-grace-period", nw_json_get(k, "evictionSoftGracePeriod"), "=", 1,
              &first);
    int64_t v = nw_userdata_common_kubelet_int(k, "evictionMaxPodGracePeriod", &has);
    if (has)
        nw_userdata_common_put(w, " --eviction-max-pod-grace-period=%lld", (long long)v);
    v = nw_userdata_common_kubelet_int(k, "imageGCHighThresholdPercent", &has);
    if (has)
        nw_userdata_common_put(w, " --image-gc-high-threshold=%lld", (long long)v);
    v = nw_userdata_common_kubelet_int(k, "imageGCLowThresholdPercent", &has);
    if (has)
        nw_userdata_common_put(w, " --image-gc-low-threshold=%lld", (long long)v);
    const cJSON *q = nw_json_get(k, "cpuCFSQuota");
    if (cJSON_IsBool(q))
        nw_userdata_common_put(w, " --cpu-cfs-quota=%s", cJSON_IsTrue(q) ? "true" : "false");
}

/* ---- AL2: eksbootstrap.go ---- */

nw_rc_t nw_userdata_al2_render(const nw_ud_opts_t *o, const nw_ud_label_t *l, int nl, out_t *w,
                               nw_err_t *err)
{
    parts_t parts = {0};
    nw_rc_t rc = nw_userdata_mime_custom_parts(o->custom, 0, &parts, err);
    if (rc != NW_OK) {
        nw_userdata_mime_parts_free(&parts);
        return rc;
    }
    out_t s = {{0}, NW_OK};
    nw_buf_init(&s.b, UD_MAX);
    nw_userdata_common_put(&s, "#!/bin/bash -xe\n");
    nw_userdata_common_put(
        &s, "exec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1\n");
    nw_userdata_common_put(&s, "/etc/eks/bootstrap.sh '%s' --apiserver-endpoint '%s' ",
                           o->cluster_name, o->endpoint);
    if (o->ca_bundle && *o->ca_bundle)
        nw_userdata_common_put(&s, "--b64-cluster-ca '%s'", o->ca_bundle);
    const char *dns = nw_userdata_common_cluster_dns(o);
    if (nw_userdata_common_ipv6_node(o))
        nw_userdata_common_put(&s, " \\\n--ip-family ipv6");
    if (dns)
        nw_userdata_common_put(&s, " \\\n--dns-cluster-ip '%s'", dns);
    nw_userdata_common_put(&s, " \\\n--use-max-pods false"); /* maxPods is always given */
    nw_userdata_common_put(&s, " \\\n--kubelet-extra-args '");
    kubelet_extra_args(&s, o, l, nl);
    nw_userdata_common_put(&s, "'");
    if (o->raid0)
        nw_userdata_common_put(&s, " \\\n--local-disks raid0");
    return nw_userdata_mime_finish_shell(w, &parts, &s, err);
}
