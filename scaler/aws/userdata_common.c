/*
 * scaler/aws/userdata_common.c — what every family's renderer uses: the output buffer that
 * remembers its first failure, Go's %q quoting, the --node-labels flag, Go's duration text,
 * and the kubelet settings read from spec.kubelet: integers, the cluster DNS (and with it the
 * node's IP family), the KubeletConfiguration fields
 * (aws/karpenter-provider-aws pkg/providers/amifamily/bootstrap/bootstrap.go Options and
 * nodeLabelArg, eksbootstrap.go isIPv6, nodeadm.go's kubelet config). See userdata.h.
 */
#include "scaler/aws/userdata.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "api/duration.h"
#include "common/buf.h"
#include "common/json.h"
#include "scaler/aws/userdata_int.h"

/* ---- output buffer that remembers its first failure ---- */

void nw_userdata_common_put(out_t *o, const char *fmt, ...)
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
void nw_userdata_common_put_quoted(out_t *o, const char *s)
{
    nw_userdata_common_put(o, "\"");
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            nw_userdata_common_put(o, "\\%c", *s);
        else if ((unsigned char)*s < 0x20 || (unsigned char)*s == 0x7f)
            nw_userdata_common_put(o, "\\x%02x", (unsigned char)*s);
        else
            putn(o, s, 1);
    }
    nw_userdata_common_put(o, "\"");
}

/* --node-labels="k=v,..." ("" when there are none) */
void nw_userdata_common_node_label_arg(out_t *w, const nw_ud_label_t *l, int n)
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
    nw_userdata_common_put(w, "--node-labels=");
    nw_userdata_common_put_quoted(w, nw_buf_str(&b));
    nw_buf_cleanup(&b);
}

/* ---- kubelet settings ---- */

/* Go's Duration.String of a duration text ("1m" -> "1m0s"); the text when it does not parse */
void nw_userdata_common_go_duration(const char *s, char *out, size_t n)
{
    int64_t ns;
    nw_err_t e = {0};
    if (nw_duration_parse(s, &ns, &e) == NW_OK)
        nw_duration_format(ns, out, n);
    else
        snprintf(out, n, "%s", s);
}

int64_t nw_userdata_common_kubelet_int(const cJSON *kub, const char *k, int *has)
{
    const cJSON *v = nw_json_get(kub, k);
    *has = cJSON_IsNumber(v);
    return *has ? (int64_t)v->valuedouble : 0;
}

/* spec.kubelet.clusterDNS[0], else the kube-dns Service's address (defaultClusterDNS) */
const char *nw_userdata_common_cluster_dns(const nw_ud_opts_t *o)
{
    const char *d =
        cJSON_GetStringValue(cJSON_GetArrayItem(nw_json_get(o->kubelet, "clusterDNS"), 0));
    return d ? d : o->kube_dns && *o->kube_dns ? o->kube_dns : NULL;
}

/* eksbootstrap.go isIPv6: the clusterDNS is not an IPv4 address */
bool nw_userdata_common_ipv6_node(const nw_ud_opts_t *o)
{
    const char *d = nw_userdata_common_cluster_dns(o);
    return d && strchr(d, ':') != NULL;
}

/* spec.kubelet as KubeletConfiguration fields: durations as Go's Duration.String
 * (metav1.Duration), maxPods always (the launch's types' value without kubelet.maxPods) */
cJSON *nw_userdata_common_kubelet_config(const nw_ud_opts_t *o)
{
    cJSON *cfg = cJSON_IsObject(o->kubelet) ? nw_json_dup(o->kubelet) : nw_json_new_object();
    cJSON *g = cJSON_GetObjectItemCaseSensitive(cfg, "evictionSoftGracePeriod"), *e;
    cJSON_ArrayForEach(e, g)
    {
        if (cJSON_IsString(e)) {
            char d[64];
            nw_userdata_common_go_duration(e->valuestring, d, sizeof d);
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
