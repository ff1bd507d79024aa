/* tests/unit/test_userdata.c — the generated bootstrap userData (scaler/aws/userdata.h):
 * AL2's MIME with bootstrap.sh, AL2023's NodeConfig, Bottlerocket's TOML merge, the user's
 * part first, labels the kubelet may not set dropped, and the errors naming a field; the
 * kubeadm join of nodewarden's own bootstrap and its CA pin. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "common/yaml.h"
#include "scaler/aws/userdata.h"

Suite *nw_userdata_suite(void);

static const nw_ud_label_t LABELS[] = {{"karpenter.sh/nodepool", "gpu"},
                                       {"node.kubernetes.io/instance-type", "g6.xlarge"},
                                       {"team", "ml"},
                                       {"karpenter.sh/capacity-type", "spot"}};
static const nw_ud_taint_t TAINTS[] = {{"gpu", "true", "NoSchedule"},
                                       {"karpenter.sh/unregistered", "", "NoExecute"}};

static const char *KUBELET =
    "{\"maxPods\":20,\"clusterDNS\":[\"10.96.0.10\"],\"systemReserved\":{\"memory\":\"100Mi\","
    "\"cpu\":\"100m\"},\"evictionHard\":{\"memory.available\":\"5%\"},\"evictionSoftGracePeriod\":"
    "{\"memory.available\":\"1m\"},\"evictionSoft\":{\"memory.available\":\"10%\"}}";

static char *render(nw_ami_family_t f, const char *kubelet, const char *custom, const char *cidr,
                    nw_rc_t want, const char *want_path)
{
    cJSON *k = kubelet ? cJSON_Parse(kubelet) : NULL;
    nw_ud_opts_t o = {f,      "demo", "https://10.0.0.10:6443",
                      "Q0E=", cidr,   k,
                      58,     LABELS, 4,
                      TAINTS, 2,      custom,
                      0,      NULL,   0,
                      NULL};
    char *out = NULL;
    nw_err_t err = {0};
    nw_rc_t rc = nw_userdata_render(&o, &out, &err);
    ck_assert_msg(rc == want, "rc %d (%s: %s), want %d", rc, err.path, err.msg, want);
    if (want_path)
        ck_assert_str_eq(err.path, want_path);
    cJSON_Delete(k);
    return out;
}

START_TEST(al2_mime_and_bootstrap)
{
    char *ud = render(NW_AMI_AL2, KUBELET, "#!/bin/bash\necho hello\n", "", NW_OK, NULL);
    static const char *want =
        "MIME-Version: 1.0\n"
        "Content-Type: multipart/mixed; boundary=\"//\"\n"
        "\n"
        "--//\n"
        "Content-Type: text/x-shellscript; charset=\"us-ascii\"\n"
        "\n"
        "#!/bin/bash\n"
        "echo hello\n"
        "\n"
        "--//\n"
        "Content-Type: text/x-shellscript; charset=\"us-ascii\"\n"
        "\n"
        "#!/bin/bash -xe\n"
        "exec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1\n"
        "/etc/eks/bootstrap.sh 'demo' --apiserver-endpoint 'https://10.0.0.10:6443' "
        "--b64-cluster-ca 'Q0E=' \\\n"
        "--dns-cluster-ip '10.96.0.10' \\\n"
        "--use-max-pods false \\\n"
        "--kubelet-extra-args '--node-labels=\"karpenter.sh/capacity-type=spot,"
        "karpenter.sh/nodepool=gpu,team=ml\" --register-with-taints=\"gpu=true:NoSchedule,"
        "karpenter.sh/unregistered:NoExecute\" --max-pods=20 --system-reserved=\"cpu=100m,"
        "memory=100Mi\" --eviction-hard=\"memory.available<5%\" --eviction-soft=\""
        "memory.available<10%\" --eviction-soft-grace-period=\"memory.available=1m0s\"'\n"
        "--//--\n";
    ck_assert_str_eq(ud, want);
    free(ud);
    /* without kubelet.maxPods the type's pods; no user part: the bootstrap alone */
    ud = render(NW_AMI_AL2, NULL, NULL, "", NW_OK, NULL);
    ck_assert_ptr_nonnull(strstr(ud, "--max-pods=58"));
    ck_assert_ptr_null(strstr(ud, "echo hello"));
    ck_assert_int_eq((int)(strstr(ud, "--//--") - ud) > 0, 1);
    free(ud);
}
END_TEST

START_TEST(al2_keeps_user_mime_parts)
{
    const char *mime = "MIME-Version: 1.0\r\n"
                       "Content-Type: multipart/mixed; boundary=\"BOUNDARY\"\r\n"
                       "\r\n"
                       "--BOUNDARY\r\n"
                       "content-type: text/cloud-config\r\n"
                       "\r\n"
                       "#cloud-config\r\nruncmd: [x]\r\n"
                       "--BOUNDARY\r\n"
                       "Content-Type: text/x-shellscript\r\n"
                       "\r\n"
                       "#!/bin/sh\r\necho two\r\n"
                       "--BOUNDARY--\r\n";
    char *ud = render(NW_AMI_AL2, NULL, mime, "", NW_OK, NULL);
    const char *a = strstr(ud, "Content-Type: text/cloud-config\n\n#cloud-config\nruncmd: [x]\n");
    const char *b = strstr(ud, "Content-Type: text/x-shellscript\n\n#!/bin/sh\necho two\n");
    const char *c = strstr(ud, "/etc/eks/bootstrap.sh");
    ck_assert_msg(a && b && c && a < b && b < c, "%s", ud);
    ck_assert_ptr_null(strchr(ud, '\r'));
    free(ud);
    /* a MIME header without a multipart body is refused, naming the field */
    ud = render(NW_AMI_AL2, NULL, "Content-Type: text/plain\n\nhello\n", "", NW_EINVAL,
                "spec.userData");
    ck_assert_ptr_null(ud);
    ud = render(NW_AMI_AL2, NULL,
                "MIME-Version: 1.0\nContent-Type: multipart/mixed; "
                "boundary=X\n\n--X\nContent-Type: a/b\n\nunterminated\n",
                "", NW_EINVAL, "spec.userData");
    ck_assert_ptr_null(ud);
}
END_TEST

START_TEST(al2023_nodeconfig)
{
    const char *custom = "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\n"
                         "spec: {kubelet: {config: {shutdownGracePeriod: 30s}}}\n";
    char *ud = render(NW_AMI_AL2023, KUBELET, custom, "10.96.0.0/12", NW_OK, NULL);
    /* the user's YAML is a NodeConfig part, before nodewarden's */
    const char *u = strstr(ud, "Content-Type: application/node.eks.aws\n\napiVersion");
    const char *g = strstr(ud, "Content-Type: application/node.eks.aws\n\n# Karpenter Generated "
                               "NodeConfig\n");
    ck_assert_msg(u && g && u < g, "%s", ud);
    /* the generated part reads back as YAML with the kubelet settings */
    const char *body = strstr(g, "# Karpenter");
    const char *end = strstr(body, "\n--//--");
    ck_assert_ptr_nonnull(end);
    cJSON **docs = NULL;
    size_t nd = 0;
    nw_err_t err = {0};
    ck_assert_int_eq(nw_yaml_load_docs(body, (size_t)(end - body), &docs, &nd, &err), NW_OK);
    ck_assert_uint_eq(nd, 1);
    const cJSON *spec = cJSON_GetObjectItem(docs[0], "spec");
    const cJSON *cl = cJSON_GetObjectItem(spec, "cluster");
    ck_assert_str_eq(cJSON_GetObjectItem(cl, "cidr")->valuestring, "10.96.0.0/12");
    ck_assert_str_eq(cJSON_GetObjectItem(cl, "apiServerEndpoint")->valuestring,
                     "https://10.0.0.10:6443");
    ck_assert_str_eq(cJSON_GetObjectItem(cl, "certificateAuthority")->valuestring, "Q0E=");
    const cJSON *kub = cJSON_GetObjectItem(spec, "kubelet");
    const cJSON *cfg = cJSON_GetObjectItem(kub, "config");
    ck_assert_int_eq(cJSON_GetObjectItem(cfg, "maxPods")->valueint, 20);
    ck_assert_str_eq(
        cJSON_GetObjectItem(cJSON_GetObjectItem(cfg, "evictionSoftGracePeriod"), "memory.available")
            ->valuestring,
        "1m0s");
    const cJSON *rt = cJSON_GetObjectItem(cfg, "registerWithTaints");
    ck_assert_int_eq(cJSON_GetArraySize(rt), 2);
    ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(rt, 0), "key")->valuestring, "gpu");
    ck_assert_ptr_null(cJSON_GetObjectItem(cJSON_GetArrayItem(rt, 1), "value"));
    ck_assert_str_eq(cJSON_GetArrayItem(cJSON_GetObjectItem(kub, "flags"), 0)->valuestring,
                     "--node-labels=\"karpenter.sh/capacity-type=spot,karpenter.sh/nodepool=gpu,"
                     "team=ml\"");
    nw_yaml_docs_free(docs, nd);
    free(ud);
    /* a shell script stays a shell script part; maxPods from the type */
    ud = render(NW_AMI_AL2023, NULL, "#!/bin/bash\necho hi\n", "10.96.0.0/12", NW_OK, NULL);
    ck_assert_ptr_nonnull(strstr(ud, "text/x-shellscript; charset=\"us-ascii\"\n\n#!/bin/bash"));
    ck_assert_ptr_nonnull(strstr(ud, "maxPods: 58"));
    free(ud);
    /* the NodeConfig needs the service CIDR */
    ck_assert_ptr_null(render(NW_AMI_AL2023, NULL, NULL, "", NW_EINVAL, "settings.clusterCIDR"));
}
END_TEST

START_TEST(bottlerocket_toml)
{
    const char *custom = "[settings.kubernetes]\n"
                         "max-pods = 5 # theirs\n"
                         "\"cluster-name\" = \"old\"\n"
                         "[settings.kubernetes.node-labels]\n"
                         "team = \"web\"\n"
                         "extra = \"x\"\n"
                         "[settings.kubernetes.node-taints]\n"
                         "dedicated = [\"a:NoSchedule\"]\n"
                         "[settings.host-containers.admin]\n"
                         "enabled = true\n";
    char *ud = render(NW_AMI_BOTTLEROCKET, KUBELET, custom, "", NW_OK, NULL);
    /* settings.kubernetes overwritten, labels merged (ours win), taints replaced, the
     * user's other settings kept */
    const char *must[] = {"[settings.host-containers.admin]\nenabled = true\n",
                          "cluster-name = \"demo\"\n",
                          "api-server = \"https://10.0.0.10:6443\"\n",
                          "cluster-certificate = \"Q0E=\"\n",
                          "cluster-dns-ip = \"10.96.0.10\"\n",
                          "max-pods = 20\n",
                          "[settings.kubernetes.node-labels]\n\"karpenter.sh/capacity-type\" = "
                          "\"spot\"\n\"karpenter.sh/nodepool\" = \"gpu\"\nextra = \"x\"\nteam = "
                          "\"ml\"\n",
                          "[settings.kubernetes.node-taints]\n\"karpenter.sh/unregistered\" = "
                          "[\":NoExecute\"]\ngpu = [\"true:NoSchedule\"]\n",
                          "[settings.kubernetes.system-reserved]\ncpu = \"100m\"\nmemory = "
                          "\"100Mi\"\n",
                          "[settings.kubernetes.eviction-soft-grace-period]\n\"memory.available\" "
                          "= \"1m0s\"\n"};
    for (size_t i = 0; i < sizeof must / sizeof *must; i++)
        ck_assert_msg(strstr(ud, must[i]), "missing %s in\n%s", must[i], ud);
    ck_assert_ptr_null(strstr(ud, "old"));
    ck_assert_ptr_null(strstr(ud, "dedicated"));
    ck_assert_ptr_null(strstr(ud, "max-pods = 5"));
    free(ud);
    /* what the line reader does not merge is refused with the line */
    ck_assert_ptr_null(render(NW_AMI_BOTTLEROCKET, NULL, "[settings]\nmotd = \"\"\"\nhi\n\"\"\"\n",
                              "", NW_EINVAL, "spec.userData"));
    ck_assert_ptr_null(render(NW_AMI_BOTTLEROCKET, NULL,
                              "[settings.kubernetes]\nnode-labels = { a = \"b\" }\n", "", NW_EINVAL,
                              "spec.userData"));
    ck_assert_ptr_null(render(NW_AMI_BOTTLEROCKET, NULL, "[[settings.x]]\na = 1\n", "", NW_EINVAL,
                              "spec.userData"));
}
END_TEST

START_TEST(custom_and_errors)
{
    char *ud = render(NW_AMI_CUSTOM, KUBELET, "#!/bin/bash\nkubeadm join\n", "", NW_OK, NULL);
    ck_assert_str_eq(ud, "#!/bin/bash\nkubeadm join\n");
    free(ud);
    ck_assert_ptr_null(render(NW_AMI_CUSTOM, NULL, NULL, "", NW_OK, NULL));
    ud = render(NW_AMI_WINDOWS, NULL, "<powershell></powershell>", "", NW_OK, NULL);
    ck_assert_str_eq(ud, "<powershell></powershell>");
    free(ud);
    /* a generated bootstrap needs the endpoint */
    nw_ud_opts_t o = {NW_AMI_AL2, "demo", "", "",   "", NULL, 10, NULL,
                      0,          NULL,   0,  NULL, 0,  NULL, 0,  NULL};
    char *out = NULL;
    nw_err_t err = {0};
    ck_assert_int_eq(nw_userdata_render(&o, &out, &err), NW_EINVAL);
    ck_assert_str_eq(err.path, "settings.clusterEndpoint");
    ck_assert_ptr_null(out);
    /* Karpenter's RejectForbiddenLabels */
    ck_assert(nw_userdata_label_restricted("kubernetes.io/arch"));
    ck_assert(nw_userdata_label_restricted("node.kubernetes.io/instance-type"));
    ck_assert(nw_userdata_label_restricted("example.k8s.io/x"));
    ck_assert(nw_userdata_label_restricted("node-restriction.kubernetes.io/x"));
    ck_assert(!nw_userdata_label_restricted("karpenter.sh/nodepool"));
    ck_assert(!nw_userdata_label_restricted("notkubernetes.io/x"));
    ck_assert(!nw_userdata_label_restricted("team"));
}
END_TEST

/* a P-256 CA (openssl req -x509, CN unit-ca); its pin from
 * openssl x509 -pubkey | openssl pkey -pubin -outform DER | sha256sum */
static const char *UNIT_CA =
    "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJlekNDQVNHZ0F3SUJBZ0lVTGFicGplbm1lV1ZBWmVNWURu"
    "OXZsUHo5N2VVd0NnWUlLb1pJemowRUF3SXcKRWpFUU1BNEdBMVVFQXd3SGRXNXBkQzFqWVRBZ0Z3MHlOakV5TURJ"
    "d05UUXlNVGRhR0E4eU1USTJNVEV3T0RBMQpOREl4TjFvd0VqRVFNQTRHQTFVRUF3d0hkVzVwZEMxallUQlpNQk1H"
    "QnlxR1NNNDlBZ0VHQ0NxR1NNNDlBd0VICkEwSUFCSHArTGo3MnRpaTZweTNGWSsxTzNVN1I2MG90MTlBMzJicVRJ"
    "Z0hQTFpDNDhRdG1DMjNsRFd3aVR1aTkKbk05V1B3NlM3elpHMDNwSmwwVDJyTno0QW5LalV6QlJNQjBHQTFVZERn"
    "UVdCQlNWQmFKaThpZUkrV1RNcnBBSApvYU5QaHZ4Nk1UQWZCZ05WSFNNRUdEQVdnQlNWQmFKaThpZUkrV1RNcnBB"
    "SG9hTlBodng2TVRBUEJnTlZIUk1CCkFmOEVCVEFEQVFIL01Bb0dDQ3FHU000OUJBTUNBMGdBTUVVQ0lRQzBXNUVo"
    "MGw0NFdKakwvMG1wZFlWb1VEeUgKWFViZjFrdE0vSU11UUlYVjhBSWdZS0ZSb2RaSkNZMm9vQ0h1dVBVMTNqTURP"
    "OU1JSkZ6a2tSaEZzMlJEb0tNPQotLS0tLUVORCBDRVJUSUZJQ0FURS0tLS0tCg==";
static const char *UNIT_CA_PIN =
    "sha256:129195d9091b3bdca120b9a67ab263fed5f753e9a72ad8ce3614cce5c99f8434";

/* an IPv6 cluster: the kube-dns ClusterIP is the clusterDNS spec.kubelet does not set
 * (defaultClusterDNS) and makes AL2 --ip-family ipv6, the NodeConfig's and the kubeadm
 * patch's clusterDNS, Bottlerocket's cluster-dns-ip and kubeadm's node-ip "::" (v1beta3
 * map and v1beta4 list); spec.kubelet.clusterDNS wins over it */
START_TEST(ipv6_cluster)
{
    cJSON *k = cJSON_Parse("{\"maxPods\":20}");
    nw_ud_opts_t o = {.family = NW_AMI_AL2,
                      .cluster_name = "demo",
                      .endpoint = "https://[fd00::1]:6443",
                      .ca_bundle = UNIT_CA,
                      .cluster_cidr = "fd00:10:96::/112",
                      .kubelet = k,
                      .max_pods = 58,
                      .labels = LABELS,
                      .nlabels = 4,
                      .taints = TAINTS,
                      .ntaints = 2,
                      .kube_dns = "fd00:10:96::a"};
    char *out = NULL;
    nw_err_t err = {0};
    ck_assert_int_eq(nw_userdata_render(&o, &out, &err), NW_OK);
    ck_assert_ptr_nonnull(
        strstr(out, " \\\n--ip-family ipv6 \\\n--dns-cluster-ip 'fd00:10:96::a'"));
    free(out);
    o.family = NW_AMI_AL2023;
    ck_assert_int_eq(nw_userdata_render(&o, &out, &err), NW_OK);
    ck_assert_ptr_nonnull(strstr(out, "clusterDNS:\n"));
    ck_assert_ptr_nonnull(strstr(out, "fd00:10:96::a"));
    free(out);
    o.family = NW_AMI_BOTTLEROCKET;
    ck_assert_int_eq(nw_userdata_render(&o, &out, &err), NW_OK);
    ck_assert_ptr_nonnull(strstr(out, "cluster-dns-ip = \"fd00:10:96::a\"\n"));
    free(out);
    o.family = NW_AMI_CUSTOM;
    o.kubeadm_token = "abcdef.0123456789abcdef";
    ck_assert_int_eq(nw_userdata_render(&o, &out, &err), NW_OK);
    ck_assert_ptr_nonnull(strstr(out, "    node-ip: \"::\"\n"));
    ck_assert_ptr_nonnull(strstr(out, "fd00:10:96::a"));
    ck_assert_ptr_nonnull(strstr(out, "apiServerEndpoint: \"[fd00::1]:6443\""));
    free(out);
    o.kubeadm_v1beta4 = 1;
    ck_assert_int_eq(nw_userdata_render(&o, &out, &err), NW_OK);
    ck_assert_ptr_nonnull(strstr(out, "    - name: node-ip\n      value: \"::\"\n"));
    free(out);
    /* an IPv4 kube-dns: the default clusterDNS, no IPv6 */
    o.kube_dns = "10.96.0.10";
    ck_assert_int_eq(nw_userdata_render(&o, &out, &err), NW_OK);
    ck_assert_ptr_null(strstr(out, "node-ip"));
    ck_assert_ptr_nonnull(strstr(out, "10.96.0.10"));
    free(out);
    o.kubeadm_token = NULL;
    o.family = NW_AMI_AL2;
    ck_assert_int_eq(nw_userdata_render(&o, &out, &err), NW_OK);
    ck_assert_ptr_null(strstr(out, "--ip-family"));
    ck_assert_ptr_nonnull(strstr(out, "--dns-cluster-ip '10.96.0.10'"));
    free(out);
    /* spec.kubelet.clusterDNS wins */
    cJSON_Delete(k);
    k = cJSON_Parse("{\"clusterDNS\":[\"fd00::53\"]}");
    o.kubelet = k;
    ck_assert_int_eq(nw_userdata_render(&o, &out, &err), NW_OK);
    ck_assert_ptr_nonnull(strstr(out, "--ip-family ipv6 \\\n--dns-cluster-ip 'fd00::53'"));
    free(out);
    /* unknown kube-dns and no clusterDNS: neither */
    o.kube_dns = NULL;
    o.kubelet = NULL;
    ck_assert_int_eq(nw_userdata_render(&o, &out, &err), NW_OK);
    ck_assert_ptr_null(strstr(out, "--dns-cluster-ip"));
    free(out);
    cJSON_Delete(k);
}
END_TEST

START_TEST(kubeadm_join)
{
    char pin[80];
    nw_err_t err = {0};
    ck_assert_int_eq(nw_userdata_kubeadm_ca_pin(UNIT_CA, pin, sizeof pin, &err), NW_OK);
    ck_assert_str_eq(pin, UNIT_CA_PIN);
    ck_assert_int_eq(nw_userdata_kubeadm_ca_pin("", pin, sizeof pin, &err), NW_EINVAL);
    ck_assert_str_eq(err.path, "settings.clusterCABundle");
    nw_err_clear(&err);
    ck_assert_int_eq(nw_userdata_kubeadm_ca_pin("Q0E=", pin, sizeof pin, &err), NW_EINVAL);
    ck_assert_str_eq(err.path, "settings.clusterCABundle");

    cJSON *k = cJSON_Parse(KUBELET);
    nw_ud_opts_t o = {NW_AMI_CUSTOM,
                      "demo",
                      "https://10.0.0.10:6443/",
                      UNIT_CA,
                      "",
                      k,
                      58,
                      LABELS,
                      4,
                      TAINTS,
                      2,
                      "#!/bin/bash\necho mine\n",
                      0,
                      "abcdef.0123456789abcdef",
                      0,
                      NULL};
    char *out = NULL;
    nw_err_clear(&err);
    ck_assert_int_eq(nw_userdata_render(&o, &out, &err), NW_OK);
    /* MIME: the user's part, then the join */
    ck_assert_ptr_nonnull(strstr(out, "boundary=\"//\""));
    const char *mine = strstr(out, "echo mine"), *join = strstr(out, "kubeadm join --config");
    ck_assert(mine && join && mine < join);
    ck_assert_ptr_nonnull(strstr(out, "    apiServerEndpoint: \"10.0.0.10:6443\"\n"
                                      "    token: \"abcdef.0123456789abcdef\"\n"
                                      "    caCertHashes:\n"
                                      "      - \"sha256:129195d9"));
    ck_assert_ptr_nonnull(strstr(out, "provider-id: \"aws:///${ZONE}/${INSTANCE_ID}\"\n"));
    /* labels the kubelet may set, sorted; the restricted instance-type label dropped */
    ck_assert_ptr_nonnull(strstr(
        out,
        "node-labels: \"karpenter.sh/capacity-type=spot,karpenter.sh/nodepool=gpu,team=ml\"\n"));
    ck_assert_ptr_nonnull(strstr(out, "  taints:\n    - key: \"gpu\"\n      value: \"true\"\n"
                                      "      effect: \"NoSchedule\"\n"
                                      "    - key: \"karpenter.sh/unregistered\"\n"
                                      "      effect: \"NoExecute\"\n"));
    /* the kubelet settings as a KubeletConfiguration patch */
    ck_assert_ptr_nonnull(strstr(out, "kubeletconfiguration+merge.yaml <<'NWEOF'\n"));
    ck_assert_ptr_nonnull(strstr(out, "maxPods: 20\n"));
    ck_assert_ptr_nonnull(strstr(out, "1m0s"));
    ck_assert_ptr_nonnull(strstr(out, "apiVersion: kubeadm.k8s.io/v1beta3\n"));
    free(out);
    /* kubeadm 1.31+: v1beta4, kubeletExtraArgs as a list of {name, value} */
    o.kubeadm_v1beta4 = 1;
    ck_assert_int_eq(nw_userdata_render(&o, &out, &err), NW_OK);
    ck_assert_ptr_nonnull(strstr(out, "apiVersion: kubeadm.k8s.io/v1beta4\n"));
    ck_assert_ptr_nonnull(strstr(out, "  kubeletExtraArgs:\n"
                                      "    - name: provider-id\n"
                                      "      value: \"aws:///${ZONE}/${INSTANCE_ID}\"\n"
                                      "    - name: node-labels\n"
                                      "      value: \"karpenter.sh/capacity-type=spot,"
                                      "karpenter.sh/nodepool=gpu,team=ml\"\n"
                                      "  taints:\n"));
    ck_assert_ptr_null(strstr(out, "v1beta3"));
    free(out);
    o.kubeadm_v1beta4 = 0;
    /* no port: the scheme's; no CA: an error naming the setting */
    o.endpoint = "https://api.example.com";
    o.kubelet = NULL;
    ck_assert_int_eq(nw_userdata_render(&o, &out, &err), NW_OK);
    ck_assert_ptr_nonnull(strstr(out, "apiServerEndpoint: \"api.example.com:443\""));
    ck_assert_ptr_nonnull(strstr(out, "maxPods: 58\n"));
    free(out);
    out = NULL;
    o.ca_bundle = "";
    ck_assert_int_eq(nw_userdata_render(&o, &out, &err), NW_EINVAL);
    ck_assert_str_eq(err.path, "settings.clusterCABundle");
    ck_assert_ptr_null(out);
    cJSON_Delete(k);
}
END_TEST

Suite *nw_userdata_suite(void)
{
    Suite *s = suite_create("userdata");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, al2_mime_and_bootstrap);
    tcase_add_test(tc, al2_keeps_user_mime_parts);
    tcase_add_test(tc, al2023_nodeconfig);
    tcase_add_test(tc, bottlerocket_toml);
    tcase_add_test(tc, custom_and_errors);
    tcase_add_test(tc, kubeadm_join);
    tcase_add_test(tc, ipv6_cluster);
    suite_add_tcase(s, tc);
    return s;
}
