/* scaler/kube/svccidr.c — the cluster's service CIDR from the API server; see svccidr.h. */
#include "scaler/kube/svccidr.h"

#include <arpa/inet.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/yaml.h"

#define SVCCIDR_PATH "/apis/networking.k8s.io/v1/servicecidrs"
#define KUBEADM_PATH "/api/v1/namespaces/kube-system/configmaps/kubeadm-config"

bool nw_svccidr_valid(const char *s)
{
    if (!s)
        return false;
    const char *slash = strchr(s, '/');
    if (!slash || slash == s || (size_t)(slash - s) >= 64)
        return false;
    char addr[64];
    memcpy(addr, s, (size_t)(slash - s));
    addr[slash - s] = 0;
    unsigned char buf[16];
    int v6 = strchr(addr, ':') != NULL;
    if (inet_pton(v6 ? AF_INET6 : AF_INET, addr, buf) != 1)
        return false;
    char *end = NULL;
    const char *p = slash + 1;
    if (*p < '0' || *p > '9')
        return false;
    long bits = strtol(p, &end, 10);
    return end && *end == 0 && bits >= 0 && bits <= (v6 ? 128 : 32);
}

/* the first entry of a comma-separated list, trimmed, when it is a CIDR */
static bool first_cidr(const char *list, char *out, size_t len)
{
    while (*list == ' ')
        list++;
    size_t n = strcspn(list, ", \n");
    if (n == 0 || n >= len)
        return false;
    memcpy(out, list, n);
    out[n] = 0;
    if (nw_svccidr_valid(out))
        return true;
    out[0] = 0;
    return false;
}

static bool item_cidr(const cJSON *it, char *out, size_t len)
{
    const cJSON *c = nw_json_get(nw_json_get(it, "spec"), "cidrs");
    const cJSON *first = cJSON_IsArray(c) ? cJSON_GetArrayItem(c, 0) : NULL;
    return cJSON_IsString(first) && first_cidr(first->valuestring, out, len);
}

bool nw_svccidr_from_list(const cJSON *list, char *out, size_t len, char *src, size_t srclen)
{
    if (len)
        out[0] = 0;
    const cJSON *it, *best = NULL;
    const char *best_name = NULL;
    char tmp[64];
    cJSON_ArrayForEach(it, nw_json_get(list, "items"))
    {
        const char *name = nw_json_str(nw_json_get(it, "metadata"), "name");
        if (!name || !item_cidr(it, tmp, sizeof tmp))
            continue;
        if (strcmp(name, "kubernetes") == 0) {
            best = it, best_name = name;
            break;
        }
        if (!best || strcmp(name, best_name) < 0)
            best = it, best_name = name;
    }
    if (!best || !item_cidr(best, out, len))
        return false;
    snprintf(src, srclen, "ServiceCIDR %s", best_name);
    return true;
}

bool nw_svccidr_from_kubeadm(const cJSON *cm, char *out, size_t len, char *why, size_t whylen)
{
    if (len)
        out[0] = 0;
    const char *cc = nw_json_str(nw_json_get(cm, "data"), "ClusterConfiguration");
    if (!cc) {
        snprintf(why, whylen, "no data.ClusterConfiguration");
        return false;
    }
    cJSON **docs = NULL;
    size_t nd = 0;
    nw_err_t e = {0};
    if (nw_yaml_load_docs(cc, strlen(cc), &docs, &nd, &e) != NW_OK || nd == 0) {
        snprintf(why, whylen, "data.ClusterConfiguration is not YAML: %s", e.msg);
        nw_yaml_docs_free(docs, nd);
        return false;
    }
    const char *sub = nw_json_str(nw_json_get(docs[0], "networking"), "serviceSubnet");
    bool ok = sub && first_cidr(sub, out, len);
    if (!ok && sub)
        snprintf(why, whylen, "networking.serviceSubnet %.64s is not a CIDR", sub);
    else if (!ok)
        snprintf(why, whylen, "no networking.serviceSubnet in data.ClusterConfiguration");
    nw_yaml_docs_free(docs, nd);
    return ok;
}

/* "not served (404)", "forbidden (403)" or the error's message, for the summary */
static void answer(nw_rc_t rc, const nw_err_t *e, char *out, size_t len)
{
    if (rc == NW_ENOTFOUND)
        snprintf(out, len, "not found (404)");
    else if (rc == NW_EFORBIDDEN)
        snprintf(out, len, "forbidden (403): nodewarden may not read it (docs/rbac.md)");
    else
        snprintf(out, len, "%.300s", e->msg);
}

nw_rc_t nw_svccidr_discover(nw_kube_client_t *kube, char *out, size_t len, char *src, size_t srclen,
                            nw_err_t *err)
{
    if (len)
        out[0] = 0;
    if (srclen)
        src[0] = 0;
    char a1[400] = "", a2[400] = "";
    cJSON *v = NULL;
    nw_err_t e = {0};
    nw_rc_t rc = nw_kube_client_get_json(kube, SVCCIDR_PATH, "list", "servicecidrs", &v, &e);
    if (rc == NW_OK && nw_svccidr_from_list(v, out, len, src, srclen)) {
        cJSON_Delete(v);
        return NW_OK;
    }
    if (rc == NW_OK)
        snprintf(a1, sizeof a1, "none with a CIDR");
    else
        answer(rc, &e, a1, sizeof a1);
    cJSON_Delete(v);
    v = NULL;
    nw_err_clear(&e);
    rc = nw_kube_client_get_json(kube, KUBEADM_PATH, "get", "configmaps", &v, &e);
    if (rc == NW_OK && nw_svccidr_from_kubeadm(v, out, len, a2, sizeof a2)) {
        cJSON_Delete(v);
        snprintf(src, srclen, "kube-system/kubeadm-config");
        return NW_OK;
    }
    if (rc != NW_OK)
        answer(rc, &e, a2, sizeof a2);
    cJSON_Delete(v);
    return nw_err_set(err, NW_ENOTFOUND, "service CIDR",
                      "no service CIDR in the cluster: ServiceCIDR objects (networking.k8s.io/v1): "
                      "%s; ConfigMap kube-system/kubeadm-config: %s",
                      a1, a2);
}
