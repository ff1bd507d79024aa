/*
 * scaler/aws/userdata_al2023.c — the AL2023 bootstrap: the user's parts, then a NodeConfig
 * (node.eks.aws/v1alpha1) with the cluster, the kubelet's configuration (spec.kubelet, max
 * pods, registerWithTaints) and --node-labels
 * (aws/karpenter-provider-aws pkg/providers/amifamily/bootstrap/nodeadm.go). See userdata.h.
 */
#include "scaler/aws/userdata.h"

#include <stdio.h>
#include <stdlib.h>

#include "common/buf.h"
#include "common/json.h"
#include "common/yaml.h"
#include "scaler/aws/userdata_int.h"

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

nw_rc_t nw_userdata_al2023_render(const nw_ud_opts_t *o, const nw_ud_label_t *l, int nl, out_t *w,
                                  nw_err_t *err)
{
    if (!o->cluster_cidr || !*o->cluster_cidr)
        return nw_err_set(err, NW_EINVAL, "settings.clusterCIDR",
                          "settings.clusterCIDR is empty: AL2023's NodeConfig needs the "
                          "cluster's service CIDR");
    parts_t parts = {0};
    nw_rc_t rc = nw_userdata_mime_custom_parts(o->custom, 1, &parts, err);
    if (rc != NW_OK) {
        nw_userdata_mime_parts_free(&parts);
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
    cJSON *cfg = nw_userdata_common_kubelet_config(o);
    nw_json_add_item(cfg, "registerWithTaints", taints_json(o));
    nw_json_add_item(kub, "config", cfg);
    if (nl) {
        out_t f = {{0}, NW_OK};
        nw_buf_init(&f.b, UD_MAX);
        nw_userdata_common_node_label_arg(&f, l, nl);
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
            rc = nw_userdata_mime_parts_add_typed(&parts, CT_NODECONFIG, content);
            free(content);
        }
    }
    free(yaml);
    if (rc == NW_OK)
        nw_userdata_mime_write(w, &parts);
    nw_userdata_mime_parts_free(&parts);
    return rc == NW_OK ? NW_OK : nw_err_set(err, rc, "spec.userData", "cannot render NodeConfig");
}
