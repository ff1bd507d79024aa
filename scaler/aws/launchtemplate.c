/*
 * scaler/aws/launchtemplate.c — the launch templates of a launch
 * (aws/karpenter-provider-aws pkg/providers/launchtemplate/launchtemplate.go): the tags
 * (utils.MergeTags, the cluster's tags winning), a template's name (a hash of what goes into
 * it), the userData it carries (the bootstrap scaler/aws/userdata.h renders, with what the
 * launcher learns from the cluster: the kube-dns address, the Kubernetes version), the
 * CreateLaunchTemplate request (block devices, network interfaces, metadata options,
 * placement, the reservation), and ensuring (found by name, else created), caching and
 * deleting templates. See launch.h.
 */
#include "scaler/aws/launch.h"

#include <math.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/quantity.h"
#include "common/json.h"
#include "common/log.h"
#include "common/strs.h"
#include "scaler/aws/launch_int.h"
#include "scaler/aws/sigv4.h"
#include "scaler/aws/userdata.h"
#include "scaler/cloud/kubelet.h"

/* ---- tags ----------------------------------------------------------------------------- */

static int add_tag(nw_ec2_tag_t *t, int n, const char *k, const char *v)
{
    for (int i = 0; i < n; i++)
        if (strcmp(t[i].key, k) == 0) {
            snprintf(t[i].value, sizeof t[i].value, "%s", v);
            return n;
        }
    if (n >= MAX_TAGS)
        return n;
    snprintf(t[n].key, sizeof t[n].key, "%s", k);
    snprintf(t[n].value, sizeof t[n].value, "%s", v);
    return n + 1;
}

/* spec.tags then the cluster tags (which win); with_claim adds nodeclaim + Name. */
int nw_launchtemplate_tags_build(const nw_launch_t *l, const nw_launch_req_t *r, int with_claim,
                                 nw_ec2_tag_t *t)
{
    int n = 0;
    const cJSON *it, *tags = nw_json_get(nw_json_get(r->nodeclass, "spec"), "tags");
    cJSON_ArrayForEach(it, tags)
    {
        if (cJSON_IsString(it))
            n = add_tag(t, n, it->string, it->valuestring);
    }
    char k[192];
    snprintf(k, sizeof k, "kubernetes.io/cluster/%s", l->cluster);
    n = add_tag(t, n, k, "owned");
    n = add_tag(t, n, "karpenter.sh/nodepool", r->nodepool);
    n = add_tag(t, n, "karpenter.k8s.aws/ec2nodeclass", r->resolved->name);
    n = add_tag(t, n, "eks:eks-cluster-name", l->cluster);
    if (with_claim) {
        n = add_tag(t, n, "karpenter.sh/nodeclaim", r->nodeclaim);
        n = add_tag(t, n, "Name", r->nodeclaim);
    }
    return n;
}

nw_rc_t nw_launchtemplate_tags_spec(nw_ec2_params_t *p, const char *prefix, int idx,
                                    const char *rtype, const nw_ec2_tag_t *t, int n)
{
    nw_rc_t rc = nw_ec2_paramf(p, rtype, "%sTagSpecification.%d.ResourceType", prefix, idx);
    for (int i = 0; rc == NW_OK && i < n; i++) {
        rc = nw_ec2_paramf(p, t[i].key, "%sTagSpecification.%d.Tag.%d.Key", prefix, idx, i + 1);
        if (rc == NW_OK)
            rc = nw_ec2_paramf(p, t[i].value, "%sTagSpecification.%d.Tag.%d.Value", prefix, idx,
                               i + 1);
    }
    return rc;
}

/* ---- launch template -------------------------------------------------------------------- */

/* a volume size in GiB, rounded up (launchtemplate.go volumeSize); -1 when not a quantity */
static long volume_gib(const char *q)
{
    nw_quantity_t v;
    nw_err_t e = {0};
    if (nw_quantity_parse(q, &v, &e) != NW_OK || v.milli <= 0)
        return -1;
    return (long)ceil((double)nw_quantity_value(v) / 1073741824.0);
}

static void template_name(nw_launch_t *l, const nw_launch_req_t *r, const char *ami_id,
                          const char *ct, const char *userdata, int efa, char *out, size_t len);

#define LABEL_PG_PARTITION "karpenter.k8s.aws/placement-group-partition"

/* The partition a launch into the class's partition placement group asks for: the lowest
 * (as strings, like Karpenter's sort.Strings) of the values the NodeClaim's requirement on
 * karpenter.k8s.aws/placement-group-partition allows; 0 = none asked, EC2 chooses
 * (launchtemplate.go EnsureAll, the instance's Placement.PartitionNumber). */
int nw_launchtemplate_claim_partition(const nw_launch_req_t *r)
{
    if (!r->resolved || strcmp(r->resolved->pg_strategy, "partition") != 0)
        return 0;
    const cJSON *q;
    cJSON_ArrayForEach(q, nw_json_get(nw_json_get(r->claim, "spec"), "requirements"))
    {
        const char *key = nw_json_str(q, "key"), *op = nw_json_str(q, "operator");
        if (!key || !op || strcmp(key, LABEL_PG_PARTITION) != 0 || strcmp(op, "In") != 0)
            continue;
        const char *v[64];
        int n = 0;
        const cJSON *it;
        cJSON_ArrayForEach(it, nw_json_get(q, "values"))
        {
            if (cJSON_IsString(it) && n < 64)
                v[n++] = it->valuestring;
        }
        if (n == 0)
            return 0;
        qsort(v, (size_t)n, sizeof v[0], nw_strs_cmp);
        char *end = NULL;
        long p = strtol(v[0], &end, 10);
        return end && *end == 0 && p > 0 && p < 1000000 ? (int)p : 0;
    }
    return 0;
}

/* ---- the generated bootstrap ---------------------------------------------------------- */

/* the kube-dns Service's ClusterIP (Karpenter's operator reads it once at start; here at
 * the first launch that needs it, retried once a minute while the lookup fails); NULL
 * while unknown */
static const char *kube_dns_ip(nw_launch_t *l)
{
    if (l->dns_ip[0] || !l->kube_dns)
        return l->dns_ip[0] ? l->dns_ip : NULL;
    int64_t now = nw_clock_mono(l->clock);
    if (l->dns_retry_ns && now < l->dns_retry_ns)
        return NULL;
    char ip[64] = "";
    nw_err_t e = {0};
    if (l->kube_dns(l->kube_dns_ud, ip, sizeof ip, &e) == NW_OK && ip[0]) {
        snprintf(l->dns_ip, sizeof l->dns_ip, "%s", ip);
        nw_log_info(COMP, "cluster DNS discovered (kube-system/kube-dns)", NW_LS("ip", ip),
                    NW_LS("family", strchr(ip, ':') ? "ipv6" : "ipv4"));
        return l->dns_ip;
    }
    l->dns_retry_ns = now + 60LL * 1000000000LL;
    nw_log_warn(COMP, "kube-system/kube-dns unknown: clusterDNS stays the kubelet's, IPv4 assumed",
                NW_LS("error", e.msg[0] ? e.msg : "no cluster IP"));
    return NULL;
}

#define SVC_RETRY_NS (10 * NW_NS_PER_SEC)    /* while the cluster publishes none */
#define SVC_REFRESH_NS (600 * NW_NS_PER_SEC) /* once it has: a changed range is followed */

void nw_launchtemplate_cluster_cidr(nw_launch_t *l, char *out, size_t len, char *src, size_t srclen)
{
    if (l->cidr && *l->cidr) { /* set: it wins, nothing is asked */
        snprintf(out, len, "%s", l->cidr);
        snprintf(src, srclen, "settings.clusterCIDR");
        return;
    }
    int64_t now = nw_clock_mono(l->clock);
    if (l->service_cidr && (!l->svc_next_ns || now >= l->svc_next_ns)) {
        char c[64] = "", from[128] = "";
        nw_err_t e = {0};
        if (l->service_cidr(l->service_cidr_ud, c, sizeof c, from, sizeof from, &e) == NW_OK &&
            c[0]) {
            if (strcmp(c, l->svc_cidr) != 0)
                nw_log_info(COMP, "service CIDR discovered", NW_LS("cidr", c),
                            NW_LS("source", from));
            snprintf(l->svc_cidr, sizeof l->svc_cidr, "%s", c);
            snprintf(l->svc_src, sizeof l->svc_src, "%s", from);
            l->svc_why[0] = 0;
            l->svc_next_ns = now + SVC_REFRESH_NS;
        } else {
            /* a lookup that fails keeps a CIDR found before (the API server may be away) */
            if (strcmp(l->svc_why, e.msg) != 0 && !l->svc_cidr[0])
                nw_log_warn(COMP, "the cluster publishes no service CIDR", NW_LS("error", e.msg));
            snprintf(l->svc_why, sizeof l->svc_why, "%s", e.msg);
            l->svc_next_ns = now + SVC_RETRY_NS;
        }
    }
    if (l->svc_cidr[0]) {
        snprintf(out, len, "%s", l->svc_cidr);
        snprintf(src, srclen, "%s", l->svc_src);
        return;
    }
    if (len)
        out[0] = 0;
    snprintf(src, srclen, "%s",
             l->svc_why[0] ? l->svc_why : "the cluster's service CIDR is not looked up");
}

/* launchtemplate.go ClusterIPFamily: IPv6 when the kube-dns address is not IPv4 */
static bool cluster_ipv6(nw_launch_t *l)
{
    const char *ip = kube_dns_ip(l);
    return ip && strchr(ip, ':') != NULL;
}

/* kubeadm 1.31 and later read (and prefer) v1beta4: the cluster's version decides */
static bool kubeadm_v1beta4(const nw_launch_t *l)
{
    char v[32] = "";
    nw_err_t e = {0};
    if (!l->k8s_version || l->k8s_version(l->k8s_version_ud, v, sizeof v, &e) != NW_OK)
        return false;
    int major = 0, minor = 0;
    if (sscanf(v, "%d.%d", &major, &minor) != 2)
        return false;
    return major > 1 || (major == 1 && minor >= 31);
}

static bool generated(nw_ami_family_t f)
{
    return f == NW_AMI_AL2 || f == NW_AMI_AL2023 || f == NW_AMI_BOTTLEROCKET;
}

/* nodewarden's kubeadm bootstrap: a token, and a family nodewarden does not generate for */
bool nw_launchtemplate_kubeadm(const nw_launch_req_t *r)
{
    return r->bootstrap_token && *r->bootstrap_token &&
           !generated(nw_kubelet_ami_family(r->nodeclass));
}

/* nodewarden writes the kubelet's settings (max pods) into the userData */
bool nw_launchtemplate_renders_kubelet(const nw_launch_req_t *r)
{
    return generated(nw_kubelet_ami_family(r->nodeclass)) || nw_launchtemplate_kubeadm(r);
}

static bool taint_listed(const nw_ud_taint_t *t, int n, const char *key, const char *value,
                         const char *effect)
{
    for (int i = 0; i < n; i++)
        if (strcmp(t[i].key, key) == 0 && strcmp(t[i].value, value) == 0 &&
            strcmp(t[i].effect, effect) == 0)
            return true;
    return false;
}

#define UD_MAX_LABELS 128
#define UD_MAX_TAINTS 64

nw_rc_t nw_launchtemplate_userdata(nw_launch_t *l, const nw_launch_req_t *r, const char *ct,
                                   int64_t pods, char **out, nw_err_t *err)
{
    const cJSON *spec = nw_json_get(r->nodeclass, "spec");
    nw_ud_opts_t o;
    memset(&o, 0, sizeof o);
    o.family = nw_kubelet_ami_family(r->nodeclass);
    o.custom = nw_json_str(spec, "userData");
    if (nw_launchtemplate_kubeadm(r)) {
        o.kubeadm_token = r->bootstrap_token;
        o.kubeadm_v1beta4 = kubeadm_v1beta4(l);
    } else if (!generated(o.family)) {
        *out = NULL;
        if (o.custom && *o.custom && !(*out = strdup(o.custom)))
            return nw_err_set(err, NW_ENOMEM, "userData", "out of memory");
        return NW_OK;
    }
    o.cluster_name = l->cluster;
    o.endpoint = l->endpoint ? l->endpoint : "";
    o.ca_bundle = l->ca_bundle ? l->ca_bundle : "";
    char cidr[64] = "", cidr_src[400] = "";
    if (o.family == NW_AMI_AL2023) /* the only bootstrap that names it */
        nw_launchtemplate_cluster_cidr(l, cidr, sizeof cidr, cidr_src, sizeof cidr_src);
    o.cluster_cidr = cidr;
    o.kubelet = nw_json_get(spec, "kubelet");
    o.kube_dns = kube_dns_ip(l);
    o.max_pods = pods;
    const char *isp = nw_json_str(spec, "instanceStorePolicy");
    o.raid0 = isp && strcmp(isp, "RAID0") == 0;
    /* labels: the NodeClaim's, the capacity type, do-not-sync-taints (CreateAMIOptions,
     * InjectDoNotSyncTaintsLabel) */
    nw_ud_label_t lab[UD_MAX_LABELS] = {{0}};
    int nl = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, nw_json_get(nw_json_get(r->claim, "metadata"), "labels"))
    {
        if (cJSON_IsString(it) && nl < UD_MAX_LABELS - 2 &&
            strcmp(it->string, "karpenter.sh/capacity-type") != 0 &&
            strcmp(it->string, "karpenter.sh/do-not-sync-taints") != 0)
            lab[nl++] = (nw_ud_label_t){it->string, it->valuestring};
    }
    lab[nl++] = (nw_ud_label_t){"karpenter.sh/capacity-type", ct};
    lab[nl++] = (nw_ud_label_t){"karpenter.sh/do-not-sync-taints", "true"};
    o.labels = lab;
    o.nlabels = nl;
    /* taints: taints, startupTaints, then karpenter.sh/unregistered:NoExecute */
    nw_ud_taint_t tn[UD_MAX_TAINTS] = {{0}};
    int nt = 0;
    const char *lists[] = {"taints", "startupTaints"};
    for (int k = 0; k < 2; k++)
        cJSON_ArrayForEach(it, nw_json_get(nw_json_get(r->claim, "spec"), lists[k]))
        {
            const char *key = nw_json_str(it, "key"), *eff = nw_json_str(it, "effect");
            const char *val = nw_json_str(it, "value");
            if (key && eff && nt < UD_MAX_TAINTS - 1 &&
                !taint_listed(tn, nt, key, val ? val : "", eff))
                tn[nt++] = (nw_ud_taint_t){key, val ? val : "", eff};
        }
    int unreg = 0;
    for (int i = 0; i < nt; i++)
        unreg |= strcmp(tn[i].key, "karpenter.sh/unregistered") == 0 &&
                 strcmp(tn[i].effect, "NoExecute") == 0;
    if (!unreg)
        tn[nt++] = (nw_ud_taint_t){"karpenter.sh/unregistered", "", "NoExecute"};
    o.taints = tn;
    o.ntaints = nt;
    nw_rc_t rc = nw_userdata_render(&o, out, err);
    if (rc == NW_EINVAL && !cidr[0] && err && strcmp(err->path, "settings.clusterCIDR") == 0) {
        nw_err_clear(err);
        rc = nw_err_set(err, NW_EINVAL, "settings.clusterCIDR",
                        "no service CIDR for AL2023's NodeConfig: %.300s; and "
                        "settings.clusterCIDR is empty",
                        cidr_src);
    }
    return rc;
}

/* ---- template name and parameters ----------------------------------------------------- */

void nw_launchtemplate_name(nw_launch_t *l, const nw_launch_req_t *r, const char *ami_id,
                            const char *ct, const char *userdata, char *out, size_t len)
{
    template_name(l, r, ami_id, ct, userdata, 0, out, len);
}

static void template_name(nw_launch_t *l, const nw_launch_req_t *r, const char *ami_id,
                          const char *ct, const char *userdata, int efa, char *out, size_t len)
{
    /* everything that goes into the template data, hashed */
    const cJSON *spec = nw_json_get(r->nodeclass, "spec");
    cJSON *k = nw_json_new_array();
    nw_json_push(k, nw_json_new_string(l->cluster));
    nw_json_push(k, nw_json_new_string(r->resolved->name));
    nw_json_push(k, nw_json_new_string(ami_id));
    nw_json_push(k, nw_json_new_string(ct));
    const char *keys[] = {
        "userData",          "instanceProfile",          "role",          "blockDeviceMappings",
        "metadataOptions",   "detailedMonitoring",       "tags",          "amiFamily",
        "networkInterfaces", "associatePublicIPAddress", "ipPrefixCount", "connectionTracking",
        "cpuOptions"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const cJSON *v = nw_json_get(spec, keys[i]);
        nw_json_push(k, v ? nw_json_dup(v) : nw_json_new_null());
    }
    for (size_t i = 0; i < r->resolved->nsgs; i++)
        nw_json_push(k, nw_json_new_string(r->resolved->sgs[i].id));
    if (efa > 0)
        nw_json_push(k, nw_json_new_number(efa));
    if (cluster_ipv6(l)) /* the interfaces' IPv6 fields */
        nw_json_push(k, nw_json_new_string("ipv6"));
    if (r->resolved->pg_id[0])
        nw_json_push(k, nw_json_new_string(r->resolved->pg_id));
    if (nw_launchtemplate_claim_partition(r) > 0)
        nw_json_push(k, nw_json_new_number(nw_launchtemplate_claim_partition(r)));
    if (l->lt_cr[0]) {
        nw_json_push(k, nw_json_new_string(l->lt_cr));
        nw_json_push(k, nw_json_new_bool(l->lt_cr_block));
    }
    /* a generated bootstrap: its text (labels, taints, max pods, cluster; kubeadm: token) */
    if (nw_launchtemplate_renders_kubelet(r))
        nw_json_push(k, nw_json_new_string(userdata ? userdata : ""));
    char *s = nw_json_print(k);
    cJSON_Delete(k);
    char hex[65];
    nw_sigv4_sha256_hex(s ? s : "", s ? strlen(s) : 0, hex);
    free(s);
    snprintf(out, len, "karpenter.k8s.aws/%.20s", hex);
}

/* BlockDeviceMapping.N: spec.blockDeviceMappings, else the AMI family's defaults
 * (amifamily DefaultBlockDeviceMappings: gp3, encrypted; Custom: none, the AMI's) */
static NW_MUST_USE nw_rc_t lt_bdms(const nw_launch_req_t *r, nw_ec2_params_t *p, nw_err_t *err)
{
    const cJSON *bdms = nw_json_get(nw_json_get(r->nodeclass, "spec"), "blockDeviceMappings"), *b;
    nw_rc_t rc = NW_OK;
    int nb = 0;
    cJSON_ArrayForEach(b, bdms)
    {
        nb++;
        const char *dev = nw_json_str(b, "deviceName");
        const cJSON *ebs = nw_json_get(b, "ebs");
        if (dev && rc == NW_OK)
            rc = nw_ec2_paramf(p, dev, "LaunchTemplateData.BlockDeviceMapping.%d.DeviceName", nb);
        const char *vs = nw_json_str(ebs, "volumeSize");
        if (vs && rc == NW_OK) {
            long gib = volume_gib(vs);
            if (gib <= 0)
                return nw_err_set(err, NW_EINVAL, "spec.blockDeviceMappings.ebs.volumeSize",
                                  "cannot convert %s to GiB", vs);
            char v[32];
            snprintf(v, sizeof v, "%ld", gib);
            rc = nw_ec2_paramf(p, v, "LaunchTemplateData.BlockDeviceMapping.%d.Ebs.VolumeSize", nb);
        }
        static const struct {
            const char *json, *ec2;
        } str[] = {
            {"volumeType", "VolumeType"}, {"kmsKeyID", "KmsKeyId"}, {"snapshotID", "SnapshotId"}};
        for (size_t i = 0; i < 3 && rc == NW_OK; i++) {
            const char *v = nw_json_str(ebs, str[i].json);
            if (v)
                rc = nw_ec2_paramf(p, v, "LaunchTemplateData.BlockDeviceMapping.%d.Ebs.%s", nb,
                                   str[i].ec2);
        }
        static const struct {
            const char *json, *ec2;
        } num[] = {{"iops", "Iops"},
                   {"throughput", "Throughput"},
                   {"volumeInitializationRate", "VolumeInitializationRate"}};
        for (size_t i = 0; i < 3 && rc == NW_OK; i++) {
            const cJSON *v = nw_json_get(ebs, num[i].json);
            if (cJSON_IsNumber(v) && v->valuedouble != 0) {
                char s[32];
                snprintf(s, sizeof s, "%lld", (long long)v->valuedouble);
                rc = nw_ec2_paramf(p, s, "LaunchTemplateData.BlockDeviceMapping.%d.Ebs.%s", nb,
                                   num[i].ec2);
            }
        }
        static const struct {
            const char *json, *ec2;
        } bl[] = {{"encrypted", "Encrypted"}, {"deleteOnTermination", "DeleteOnTermination"}};
        for (size_t i = 0; i < 2 && rc == NW_OK; i++) {
            const cJSON *v = nw_json_get(ebs, bl[i].json);
            if (cJSON_IsBool(v))
                rc =
                    nw_ec2_paramf(p, cJSON_IsTrue(v) ? "true" : "false",
                                  "LaunchTemplateData.BlockDeviceMapping.%d.Ebs.%s", nb, bl[i].ec2);
        }
    }
    if (nb > 0)
        return rc;
    nw_ami_bdm_t def[2];
    int nd = nw_kubelet_ami_default_bdms(nw_kubelet_ami_family(r->nodeclass), def);
    for (int i = 0; i < nd && rc == NW_OK; i++) {
        char gib[24];
        snprintf(gib, sizeof gib, "%lld", (long long)def[i].gib);
#define BDM(field, val)                                                                            \
    do {                                                                                           \
        if (rc == NW_OK)                                                                           \
            rc =                                                                                   \
                nw_ec2_paramf(p, (val), "LaunchTemplateData.BlockDeviceMapping.%d." field, i + 1); \
    } while (0)
        BDM("DeviceName", def[i].device);
        BDM("Ebs.VolumeSize", gib);
        BDM("Ebs.VolumeType", "gp3");
        BDM("Ebs.Encrypted", "true");
#undef BDM
    }
    return rc;
}

/* NetworkInterface.N (launchtemplate.go generateNetworkInterfaces): the
 * spec's networkInterfaces (an efa-only one gets no prefixes, public IP or connection
 * tracking), else one EFA interface per network card when the claim asks for
 * vpc.amazonaws.com/efa, else the primary interface; each carries the security groups
 * (so the template has no SecurityGroupId of its own), associatePublicIPAddress,
 * ipPrefixCount and connectionTracking; v6 (an IPv6 cluster): PrimaryIpv6, one IPv6
 * address and the prefixes as IPv6 ones. */
static NW_MUST_USE nw_rc_t lt_ni(const nw_launch_req_t *r, nw_ec2_params_t *p, int n, int card,
                                 int dev, const char *type, int full, int v6)
{
    const cJSON *spec = nw_json_get(r->nodeclass, "spec");
    const cJSON *pub = nw_json_get(spec, "associatePublicIPAddress"),
                *ipp = nw_json_get(spec, "ipPrefixCount");
    const cJSON *ct = nw_json_get(spec, "connectionTracking");
    char v[32];
    nw_rc_t rc = NW_OK;
#define NI(field, val)                                                                             \
    do {                                                                                           \
        if (rc == NW_OK)                                                                           \
            rc = nw_ec2_paramf(p, (val), "LaunchTemplateData.NetworkInterface.%d." field, n);      \
    } while (0)
    if (card >= 0) {
        snprintf(v, sizeof v, "%d", card);
        NI("NetworkCardIndex", v);
    }
    snprintf(v, sizeof v, "%d", dev);
    NI("DeviceIndex", v);
    if (type)
        NI("InterfaceType", type);
    if (full && cJSON_IsNumber(ipp)) { /* an IPv6 cluster's prefixes are IPv6 /80s */
        snprintf(v, sizeof v, "%d", (int)ipp->valuedouble);
        if (v6)
            NI("Ipv6PrefixCount", v);
        else
            NI("Ipv4PrefixCount", v);
    }
    for (size_t i = 0; rc == NW_OK && i < r->resolved->nsgs; i++)
        rc = nw_ec2_paramf(p, r->resolved->sgs[i].id,
                           "LaunchTemplateData.NetworkInterface.%d.SecurityGroupId.%zu", n, i + 1);
    if (full && cJSON_IsBool(pub))
        NI("AssociatePublicIpAddress", cJSON_IsTrue(pub) ? "true" : "false");
    if (full && v6) { /* the node's address is the interface's primary IPv6 one */
        NI("PrimaryIpv6", "true");
        NI("Ipv6AddressCount", "1");
    }
    static const struct {
        const char *json, *ec2;
    } cts[] = {{"tcpEstablishedTimeout", "TcpEstablishedTimeout"},
               {"udpStreamTimeout", "UdpStreamTimeout"},
               {"udpTimeout", "UdpTimeout"}};
    for (size_t i = 0; full && i < 3 && rc == NW_OK; i++) {
        const cJSON *t = nw_json_get(ct, cts[i].json);
        if (cJSON_IsNumber(t)) {
            snprintf(v, sizeof v, "%d", (int)t->valuedouble);
            rc = nw_ec2_paramf(p, v,
                               "LaunchTemplateData.NetworkInterface.%d."
                               "ConnectionTrackingSpecification.%s",
                               n, cts[i].ec2);
        }
    }
#undef NI
    return rc;
}

static NW_MUST_USE nw_rc_t lt_nis(const nw_launch_req_t *r, int efa, int v6, nw_ec2_params_t *p)
{
    const cJSON *nis = nw_json_get(nw_json_get(r->nodeclass, "spec"), "networkInterfaces"), *ni;
    nw_rc_t rc = NW_OK;
    int n = 0;
    cJSON_ArrayForEach(ni, nis)
    {
        const char *type = nw_json_str(ni, "interfaceType");
        const cJSON *card = nw_json_get(ni, "networkCardIndex"),
                    *dev = nw_json_get(ni, "deviceIndex");
        if (rc == NW_OK)
            rc = lt_ni(r, p, ++n, cJSON_IsNumber(card) ? (int)card->valuedouble : 0,
                       cJSON_IsNumber(dev) ? (int)dev->valuedouble : 0, type ? type : "interface",
                       !type || strcmp(type, "efa-only") != 0, v6);
    }
    if (n > 0)
        return rc;
    if (efa > 0) {
        for (int i = 0; i < efa && rc == NW_OK; i++)
            rc = lt_ni(r, p, i + 1, i, i == 0 ? 0 : 1, "efa", 1, v6);
        return rc;
    }
    return lt_ni(r, p, 1, -1, 0, NULL, 1, v6);
}

static NW_MUST_USE nw_rc_t lt_params(nw_launch_t *l, const nw_launch_req_t *r, const char *name,
                                     const char *ami_id, const char *ud, int efa,
                                     nw_ec2_params_t *p, nw_err_t *err)
{
    const cJSON *spec = nw_json_get(r->nodeclass, "spec");
    nw_rc_t rc = nw_ec2_param(p, "LaunchTemplateName", name);
    /* idempotent: the template's hash (its name) and how often templates were recreated */
    char lt_tok[NW_CLOUD_TOKEN_MAX + 1];
    const char *slash = strrchr(name, '/');
    snprintf(lt_tok, sizeof lt_tok, "nw-lt-%.40s-%u", slash ? slash + 1 : name, l->lt_gen);
    if (rc == NW_OK)
        rc = nw_ec2_param(p, "ClientToken", lt_tok);
#define LTD(key, val)                                                                              \
    do {                                                                                           \
        if (rc == NW_OK)                                                                           \
            rc = nw_ec2_param(p, "LaunchTemplateData." key, (val));                                \
    } while (0)
    LTD("ImageId", ami_id);
    if (ud && *ud && rc == NW_OK) {
        size_t n = strlen(ud);
        char *b64 = malloc(4 * ((n + 2) / 3) + 1);
        if (!b64)
            return nw_err_set(err, NW_ENOMEM, "userData", "out of memory");
        EVP_EncodeBlock((unsigned char *)b64, (const unsigned char *)ud, (int)n);
        LTD("UserData", b64);
        free(b64);
    }
    /* status.instanceProfile as resolved (made for spec.role: scaler/aws/iam.h), else the
     * spec's; without IAM, the role's name as of old */
    const char *prof = r->resolved->instance_profile[0] ? r->resolved->instance_profile
                                                        : nw_json_str(spec, "instanceProfile");
    if (!prof)
        prof = nw_json_str(spec, "role");
    if (prof)
        LTD("IamInstanceProfile.Name", prof);
    if (rc == NW_OK)
        rc = lt_nis(r, efa, cluster_ipv6(l), p);
    if (rc == NW_OK && (rc = lt_bdms(r, p, err)) == NW_EINVAL)
        return rc;
    /* metadata options, each field defaulted */
    const cJSON *mo = nw_json_get(spec, "metadataOptions");
    const char *ep = nw_json_str(mo, "httpEndpoint"), *v6 = nw_json_str(mo, "httpProtocolIPv6");
    const char *tok = nw_json_str(mo, "httpTokens");
    const cJSON *hop = nw_json_get(mo, "httpPutResponseHopLimit");
    char hops[16];
    snprintf(hops, sizeof hops, "%d", cJSON_IsNumber(hop) ? (int)hop->valuedouble : 1);
    LTD("MetadataOptions.HttpEndpoint", ep ? ep : "enabled");
    LTD("MetadataOptions.HttpProtocolIpv6", v6 ? v6 : "disabled");
    LTD("MetadataOptions.HttpPutResponseHopLimit", hops);
    LTD("MetadataOptions.HttpTokens", tok ? tok : "required");
    LTD("MetadataOptions.InstanceMetadataTags", "disabled");
    const cJSON *mon = nw_json_get(spec, "detailedMonitoring");
    LTD("Monitoring.Enabled", cJSON_IsTrue(mon) ? "true" : "false");
    if (r->resolved->pg_id[0])
        LTD("Placement.GroupId", r->resolved->pg_id);
    int part = nw_launchtemplate_claim_partition(r);
    if (r->resolved->pg_id[0] && part > 0) {
        char ps[16];
        snprintf(ps, sizeof ps, "%d", part);
        LTD("Placement.PartitionNumber", ps);
    }
    /* a reserved launch's template targets its reservation (launchtemplate.go
     * CapacityReservationSpecification; a capacity block's market type is capacity-block) */
    if (l->lt_cr[0]) {
        LTD("CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationId",
            l->lt_cr);
        if (l->lt_cr_block)
            LTD("InstanceMarketOptions.MarketType", "capacity-block");
    }
    const char *nv = nw_json_str(nw_json_get(spec, "cpuOptions"), "nestedVirtualization");
    if (nv)
        LTD("CpuOptions.NestedVirtualization", nv);
#undef LTD
    nw_ec2_tag_t t[MAX_TAGS];
    int nt = nw_launchtemplate_tags_build(l, r, 0, t);
    if (rc == NW_OK)
        rc = nw_launchtemplate_tags_spec(p, "LaunchTemplateData.", 1, "network-interface", t, nt);
    if (rc == NW_OK)
        rc = nw_launchtemplate_tags_spec(p, "", 1, "launch-template", t, nt);
    if (rc != NW_OK)
        return nw_err_set(err, rc, "CreateLaunchTemplate", "request too large");
    return NW_OK;
}

nw_rc_t nw_launchtemplate_params(nw_launch_t *l, const nw_launch_req_t *r, const char *ami_id,
                                 const char *ct, int64_t pods, int efa, nw_ec2_params_t *p,
                                 nw_err_t *err)
{
    char *ud = NULL, name[256];
    nw_rc_t rc = nw_launchtemplate_userdata(l, r, ct, pods, &ud, err);
    if (rc != NW_OK)
        return rc;
    template_name(l, r, ami_id, ct, ud, efa, name, sizeof name);
    rc = lt_params(l, r, name, ami_id, ud, efa, p, err);
    free(ud);
    return rc;
}

/* ---- ensure, cache, delete ---------------------------------------------------------------- */

const char *nw_launchtemplate_cached(nw_launch_t *l, const char *name)
{
    for (int i = 0; i < l->nlts; i++)
        if (strcmp(l->lts[i].name, name) == 0)
            return l->lts[i].id;
    return NULL;
}

static void lt_remember(nw_launch_t *l, const char *name, const char *id)
{
    int i = l->nlts < LT_CACHE ? l->nlts++ : (int)(nw_clock_mono(l->clock) % LT_CACHE);
    snprintf(l->lts[i].name, sizeof l->lts[i].name, "%s", name);
    snprintf(l->lts[i].id, sizeof l->lts[i].id, "%s", id);
}

void nw_launchtemplate_forget(nw_launch_t *l, const char *name)
{
    l->lt_gen++;
    for (int i = 0; i < l->nlts; i++)
        if (strcmp(l->lts[i].name, name) == 0) {
            l->lts[i] = l->lts[--l->nlts];
            return;
        }
}

/* forget a template that was deleted on purpose (nw_launchtemplate_forget: one deleted behind our
 * back) */
void nw_launchtemplate_drop(nw_launch_t *l, const char *name)
{
    for (int i = 0; i < l->nlts; i++)
        if (strcmp(l->lts[i].name, name) == 0) {
            l->lts[i] = l->lts[--l->nlts];
            return;
        }
}

static NW_MUST_USE nw_rc_t ensure_lt_ud(nw_launch_t *l, const nw_launch_req_t *r,
                                        const char *ami_id, const char *ct, const char *ud, int efa,
                                        char *name, size_t namelen, nw_ec2_error_t *ae,
                                        nw_err_t *err)
{
    template_name(l, r, ami_id, ct, ud, efa, name, namelen);
    if (nw_launchtemplate_cached(l, name))
        return NW_OK;
    nw_ec2_lts_t found = {0};
    const char *names[] = {name};
    nw_err_t e = {0};
    nw_rc_t rc = nw_ec2_describe_launch_templates(l->ec2, names, 1, NULL, 0, &found, ae, &e);
    if (rc == NW_OK && found.n > 0) {
        lt_remember(l, name, found.v[0].id);
        nw_ec2xml_lts_free(&found);
        return NW_OK;
    }
    nw_ec2xml_lts_free(&found);
    if (rc != NW_OK && rc != NW_ENOTFOUND) {
        if (err && !err->rc)
            *err = e;
        return rc;
    }
    nw_ec2_params_t p;
    nw_ec2_lt_t lt;
    rc = nw_ec2_params_init(&p, "CreateLaunchTemplate");
    if (rc == NW_OK)
        rc = lt_params(l, r, name, ami_id, ud, efa, &p, err);
    if (rc == NW_OK)
        rc = nw_ec2_create_launch_template(l->ec2, &p, &lt, ae, err);
    nw_ec2_params_cleanup(&p);
    if (rc == NW_OK) {
        lt_remember(l, name, lt.id);
        nw_log_info(COMP, "launch template created", NW_LS("name", name), NW_LS("id", lt.id),
                    NW_LS("image", ami_id));
    }
    return rc;
}

nw_rc_t nw_launchtemplate_ensure(nw_launch_t *l, const nw_launch_req_t *r, const char *ami_id,
                                 const char *ct, int64_t pods, int efa, char *name, size_t namelen,
                                 nw_ec2_error_t *ae, nw_err_t *err)
{
    char *ud = NULL;
    nw_rc_t rc = nw_launchtemplate_userdata(l, r, ct, pods, &ud, err);
    if (rc != NW_OK)
        return rc;
    rc = ensure_lt_ud(l, r, ami_id, ct, ud, efa, name, namelen, ae, err);
    free(ud);
    return rc;
}

nw_rc_t nw_launchtemplate_delete_class(nw_launch_t *l, const char *nodeclass, int *deleted,
                                       nw_err_t *err)
{
    nw_ec2_filter_t f[] = {
        {"tag:eks:eks-cluster-name", {l->cluster}, 1},
        {"tag:karpenter.k8s.aws/ec2nodeclass", {nodeclass}, 1},
    };
    nw_ec2_lts_t found = {0};
    nw_ec2_error_t ae = {0};
    int n = 0;
    nw_rc_t rc = nw_ec2_describe_launch_templates(l->ec2, NULL, 0, f, 2, &found, &ae, err);
    if (rc == NW_ENOTFOUND)
        rc = NW_OK;
    for (size_t i = 0; rc == NW_OK && i < found.n; i++) {
        rc = nw_ec2_delete_launch_template(l->ec2, found.v[i].id, &ae, err);
        if (rc == NW_ENOTFOUND)
            rc = NW_OK;
        if (rc == NW_OK) {
            n++;
            for (int k = 0; k < l->nlts; k++)
                if (strcmp(l->lts[k].id, found.v[i].id) == 0) {
                    l->lts[k] = l->lts[--l->nlts];
                    break;
                }
        }
    }
    if (n)
        nw_log_info(COMP, "launch templates deleted", NW_LS("ec2nodeclass", nodeclass),
                    NW_LI("count", n));
    nw_ec2xml_lts_free(&found);
    if (deleted)
        *deleted = n;
    return rc;
}
