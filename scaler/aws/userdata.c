/*
 * scaler/aws/userdata.c — the bootstrap userData (scaler/aws/userdata.h): nw_userdata_render
 * picks the family's renderer (Custom and Windows: the user's userData as it is,
 * aws/karpenter-provider-aws pkg/providers/amifamily/bootstrap/custom.go), and the labels a
 * kubelet may set (bootstrap.go nodeLabelArg, Karpenter's RejectForbiddenLabels). The
 * renderers: userdata_al2.c, userdata_al2023.c, userdata_bottlerocket.c, userdata_kubeadm.c;
 * what they use: userdata_common.c (output buffer, kubelet settings), userdata_mime.c (the
 * user's MIME parts); all of it declared in userdata_int.h.
 */
#include "scaler/aws/userdata.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "scaler/aws/userdata_int.h"

/* ---- labels ---- */

bool nw_userdata_label_restricted(const char *key)
{
    const char *slash = strchr(key, '/');
    if (!slash)
        return false;
    size_t n = (size_t)(slash - key);
    static const char *const dom[] = {"node-restriction.kubernetes.io", "kubernetes.io", "k8s.io"};
    for (size_t i = 0; i < 3; i++) {
        size_t d = strlen(dom[i]);
        if (n == d && strncmp(key, dom[i], d) == 0)
            return true;
        if (n > d && key[n - d - 1] == '.' && strncmp(key + n - d, dom[i], d) == 0)
            return true;
    }
    return false;
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
    nw_rc_t rc = o->kubeadm_token             ? nw_userdata_kubeadm_render(o, l, nl, &w, err)
                 : o->family == NW_AMI_AL2    ? nw_userdata_al2_render(o, l, nl, &w, err)
                 : o->family == NW_AMI_AL2023 ? nw_userdata_al2023_render(o, l, nl, &w, err)
                                              : nw_userdata_bottlerocket_render(o, l, nl, &w, err);
    free(l);
    if (rc == NW_OK && w.rc != NW_OK)
        rc = nw_err_set(err, w.rc, "spec.userData", "userData larger than %d bytes", UD_MAX);
    if (rc == NW_OK && !(*out = nw_buf_take(&w.b)))
        rc = nw_err_set(err, NW_ENOMEM, "spec.userData", "out of memory");
    nw_buf_cleanup(&w.b);
    return rc;
}
