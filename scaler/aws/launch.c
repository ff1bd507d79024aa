/* scaler/aws/launch.c — CreateFleet launches, listing and termination; see launch.h. */
#include "scaler/aws/launch.h"

#include <math.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/quantity.h"
#include "common/json.h"
#include "common/log.h"
#include "scaler/aws/launch_int.h"
#include "scaler/aws/sigv4.h"
#include "scaler/aws/userdata.h"
#include "scaler/cloud/compat.h"
#include "scaler/cloud/kubelet.h"

#define MAX_CANDS 1024

nw_launcher_t *nw_launcher_new(nw_ec2_t *ec2, const nw_catalog_t *catalog, nw_ice_t *ice,
                               const nw_clock_t *clock, const char *cluster_name)
{
    nw_launcher_t *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->ec2 = ec2;
    l->cat = catalog;
    l->ice = ice;
    l->clock = clock ? clock : nw_clock_system();
    snprintf(l->cluster, sizeof l->cluster, "%s", cluster_name ? cluster_name : "");
    nw_overhead_opts_default(&l->overhead);
    return l;
}

nw_rc_t nw_launcher_set_bootstrap(nw_launcher_t *l, const nw_launch_bootstrap_t *b)
{
    char *e = strdup(b->endpoint ? b->endpoint : ""), *c = strdup(b->ca_bundle ? b->ca_bundle : "");
    char *r = strdup(b->cluster_cidr ? b->cluster_cidr : "");
    if (!e || !c || !r) {
        free(e);
        free(c);
        free(r);
        return NW_ENOMEM;
    }
    free(l->endpoint);
    free(l->ca_bundle);
    free(l->cidr);
    l->endpoint = e;
    l->ca_bundle = c;
    l->cidr = r;
    if (b->vm_overhead > 0)
        l->overhead.vm_memory_overhead_percent = b->vm_overhead;
    l->overhead.reserved_enis = b->reserved_enis;
    l->overhead.default_max_pods = b->default_max_pods;
    l->k8s_version = b->k8s_version;
    l->k8s_version_ud = b->k8s_version_ud;
    l->kube_dns = b->kube_dns;
    l->kube_dns_ud = b->kube_dns_ud;
    l->dns_ip[0] = 0;
    l->dns_retry_ns = 0;
    return NW_OK;
}

/* the kube-dns Service's ClusterIP (Karpenter's operator reads it once at start; here at
 * the first launch that needs it, retried once a minute while the lookup fails); NULL
 * while unknown */
static const char *kube_dns_ip(nw_launcher_t *l)
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

/* launchtemplate.go ClusterIPFamily: IPv6 when the kube-dns address is not IPv4 */
static int cluster_ipv6(nw_launcher_t *l)
{
    const char *ip = kube_dns_ip(l);
    return ip && strchr(ip, ':') != NULL;
}

/* kubeadm 1.31 and later read (and prefer) v1beta4: the cluster's version decides */
static int kubeadm_v1beta4(const nw_launcher_t *l)
{
    char v[32] = "";
    nw_err_t e = {0};
    if (!l->k8s_version || l->k8s_version(l->k8s_version_ud, v, sizeof v, &e) != NW_OK)
        return 0;
    int major = 0, minor = 0;
    if (sscanf(v, "%d.%d", &major, &minor) != 2)
        return 0;
    return major > 1 || (major == 1 && minor >= 31);
}

void nw_launcher_free(nw_launcher_t *l)
{
    if (!l)
        return;
    free(l->endpoint);
    free(l->ca_bundle);
    free(l->cidr);
    free(l);
}

const cJSON *nw_launcher_jget(const cJSON *o, const char *k)
{
    return cJSON_GetObjectItemCaseSensitive(o, k);
}

const char *nw_launcher_jstr(const cJSON *o, const char *k)
{
    const cJSON *v = nw_launcher_jget(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

int nw_launcher_in(const char *s, const char *const *l, int n)
{
    if (!l || n == 0)
        return 1;
    for (int i = 0; i < n; i++)
        if (strcmp(s, l[i]) == 0)
            return 1;
    return 0;
}

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
int nw_launcher_tags_build(const nw_launcher_t *l, const nw_launch_req_t *r, int with_claim,
                           nw_ec2_tag_t *t)
{
    int n = 0;
    const cJSON *it, *tags = nw_launcher_jget(nw_launcher_jget(r->nodeclass, "spec"), "tags");
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

nw_rc_t nw_launcher_tags_spec(nw_ec2_params_t *p, const char *prefix, int idx, const char *rtype,
                              const nw_ec2_tag_t *t, int n)
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

static void template_name(nw_launcher_t *l, const nw_launch_req_t *r, const char *ami_id,
                          const char *ct, const char *userdata, int efa, char *out, size_t len);

#define LABEL_PG_PARTITION "karpenter.k8s.aws/placement-group-partition"

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The partition a launch into the class's partition placement group asks for: the lowest
 * (as strings, like Karpenter's sort.Strings) of the values the NodeClaim's requirement on
 * karpenter.k8s.aws/placement-group-partition allows; 0 = none asked, EC2 chooses
 * (launchtemplate.go EnsureAll, the instance's Placement.PartitionNumber). */
int nw_launcher_claim_partition(const nw_launch_req_t *r)
{
    if (!r->resolved || strcmp(r->resolved->pg_strategy, "partition") != 0)
        return 0;
    const cJSON *q;
    cJSON_ArrayForEach(q, nw_launcher_jget(nw_launcher_jget(r->claim, "spec"), "requirements"))
    {
        const char *key = nw_launcher_jstr(q, "key"), *op = nw_launcher_jstr(q, "operator");
        if (!key || !op || strcmp(key, LABEL_PG_PARTITION) != 0 || strcmp(op, "In") != 0)
            continue;
        const char *v[64];
        int n = 0;
        const cJSON *it;
        cJSON_ArrayForEach(it, nw_launcher_jget(q, "values"))
        {
            if (cJSON_IsString(it) && n < 64)
                v[n++] = it->valuestring;
        }
        if (n == 0)
            return 0;
        qsort(v, (size_t)n, sizeof v[0], str_cmp);
        char *end = NULL;
        long p = strtol(v[0], &end, 10);
        return end && *end == 0 && p > 0 && p < 1000000 ? (int)p : 0;
    }
    return 0;
}

/* ---- the generated bootstrap ---------------------------------------------------------- */

static int generated(nw_ami_family_t f)
{
    return f == NW_AMI_AL2 || f == NW_AMI_AL2023 || f == NW_AMI_BOTTLEROCKET;
}

/* nodewarden's kubeadm bootstrap: a token, and a family nodewarden does not generate for */
int nw_launcher_kubeadm(const nw_launch_req_t *r)
{
    return r->bootstrap_token && *r->bootstrap_token &&
           !generated(nw_kubelet_ami_family(r->nodeclass));
}

/* nodewarden writes the kubelet's settings (max pods) into the userData */
int nw_launcher_renders_kubelet(const nw_launch_req_t *r)
{
    return generated(nw_kubelet_ami_family(r->nodeclass)) || nw_launcher_kubeadm(r);
}

static int taint_listed(const nw_ud_taint_t *t, int n, const char *key, const char *value,
                        const char *effect)
{
    for (int i = 0; i < n; i++)
        if (strcmp(t[i].key, key) == 0 && strcmp(t[i].value, value) == 0 &&
            strcmp(t[i].effect, effect) == 0)
            return 1;
    return 0;
}

#define UD_MAX_LABELS 128
#define UD_MAX_TAINTS 64

nw_rc_t nw_launcher_userdata(nw_launcher_t *l, const nw_launch_req_t *r, const char *ct,
                             int64_t pods, char **out, nw_err_t *err)
{
    const cJSON *spec = nw_launcher_jget(r->nodeclass, "spec");
    nw_ud_opts_t o;
    memset(&o, 0, sizeof o);
    o.family = nw_kubelet_ami_family(r->nodeclass);
    o.custom = nw_launcher_jstr(spec, "userData");
    if (nw_launcher_kubeadm(r)) {
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
    o.cluster_cidr = l->cidr ? l->cidr : "";
    o.kubelet = nw_launcher_jget(spec, "kubelet");
    o.kube_dns = kube_dns_ip(l);
    o.max_pods = pods;
    const char *isp = nw_launcher_jstr(spec, "instanceStorePolicy");
    o.raid0 = isp && strcmp(isp, "RAID0") == 0;
    /* labels: the NodeClaim's, the capacity type, do-not-sync-taints (CreateAMIOptions,
     * InjectDoNotSyncTaintsLabel) */
    nw_ud_label_t lab[UD_MAX_LABELS] = {{0}};
    int nl = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, nw_launcher_jget(nw_launcher_jget(r->claim, "metadata"), "labels"))
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
        cJSON_ArrayForEach(it, nw_launcher_jget(nw_launcher_jget(r->claim, "spec"), lists[k]))
        {
            const char *key = nw_launcher_jstr(it, "key"), *eff = nw_launcher_jstr(it, "effect");
            const char *val = nw_launcher_jstr(it, "value");
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
    return nw_userdata_render(&o, out, err);
}

/* the max pods a type gets under the request's class (0 when the bootstrap is the user's) */
int64_t nw_launcher_type_pods(const nw_launcher_t *l, const nw_launch_req_t *r, const nw_itype_t *t)
{
    if (!nw_launcher_renders_kubelet(r))
        return 0;
    nw_overhead_opts_t o = l->overhead;
    nw_err_t e = {0};
    if (nw_kubelet_overhead(r->nodeclass, &o, &e) != NW_OK)
        o = l->overhead; /* admission refuses such values; the settings' then */
    return nw_itype_max_pods(t, &o);
}

void nw_launcher_template_name(nw_launcher_t *l, const nw_launch_req_t *r, const char *ami_id,
                               const char *ct, const char *userdata, char *out, size_t len)
{
    template_name(l, r, ami_id, ct, userdata, 0, out, len);
}

static void template_name(nw_launcher_t *l, const nw_launch_req_t *r, const char *ami_id,
                          const char *ct, const char *userdata, int efa, char *out, size_t len)
{
    /* everything that goes into the template data, hashed */
    const cJSON *spec = nw_launcher_jget(r->nodeclass, "spec");
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
        const cJSON *v = nw_launcher_jget(spec, keys[i]);
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
    if (nw_launcher_claim_partition(r) > 0)
        nw_json_push(k, nw_json_new_number(nw_launcher_claim_partition(r)));
    if (l->lt_cr[0]) {
        nw_json_push(k, nw_json_new_string(l->lt_cr));
        nw_json_push(k, nw_json_new_bool(l->lt_cr_block));
    }
    /* a generated bootstrap: its text (labels, taints, max pods, cluster; kubeadm: token) */
    if (nw_launcher_renders_kubelet(r))
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
static nw_rc_t lt_bdms(const nw_launch_req_t *r, nw_ec2_params_t *p, nw_err_t *err)
{
    const cJSON *bdms =
                    nw_launcher_jget(nw_launcher_jget(r->nodeclass, "spec"), "blockDeviceMappings"),
                *b;
    nw_rc_t rc = NW_OK;
    int nb = 0;
    cJSON_ArrayForEach(b, bdms)
    {
        nb++;
        const char *dev = nw_launcher_jstr(b, "deviceName");
        const cJSON *ebs = nw_launcher_jget(b, "ebs");
        if (dev && rc == NW_OK)
            rc = nw_ec2_paramf(p, dev, "LaunchTemplateData.BlockDeviceMapping.%d.DeviceName", nb);
        const char *vs = nw_launcher_jstr(ebs, "volumeSize");
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
            const char *v = nw_launcher_jstr(ebs, str[i].json);
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
            const cJSON *v = nw_launcher_jget(ebs, num[i].json);
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
            const cJSON *v = nw_launcher_jget(ebs, bl[i].json);
            if (cJSON_IsBool(v))
                rc =
                    nw_ec2_paramf(p, cJSON_IsTrue(v) ? "true" : "false",
                                  "LaunchTemplateData.BlockDeviceMapping.%d.Ebs.%s", nb, bl[i].ec2);
        }
    }
    if (nb > 0)
        return rc;
    nw_ami_bdm_t def[2];
    int nd = nw_ami_default_bdms(nw_kubelet_ami_family(r->nodeclass), def);
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
static nw_rc_t lt_ni(const nw_launch_req_t *r, nw_ec2_params_t *p, int n, int card, int dev,
                     const char *type, int full, int v6)
{
    const cJSON *spec = nw_launcher_jget(r->nodeclass, "spec");
    const cJSON *pub = nw_launcher_jget(spec, "associatePublicIPAddress"),
                *ipp = nw_launcher_jget(spec, "ipPrefixCount");
    const cJSON *ct = nw_launcher_jget(spec, "connectionTracking");
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
        const cJSON *t = nw_launcher_jget(ct, cts[i].json);
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

static nw_rc_t lt_nis(const nw_launch_req_t *r, int efa, int v6, nw_ec2_params_t *p)
{
    const cJSON *nis =
                    nw_launcher_jget(nw_launcher_jget(r->nodeclass, "spec"), "networkInterfaces"),
                *ni;
    nw_rc_t rc = NW_OK;
    int n = 0;
    cJSON_ArrayForEach(ni, nis)
    {
        const char *type = nw_launcher_jstr(ni, "interfaceType");
        const cJSON *card = nw_launcher_jget(ni, "networkCardIndex"),
                    *dev = nw_launcher_jget(ni, "deviceIndex");
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

static nw_rc_t lt_params(nw_launcher_t *l, const nw_launch_req_t *r, const char *name,
                         const char *ami_id, const char *ud, int efa, nw_ec2_params_t *p,
                         nw_err_t *err)
{
    const cJSON *spec = nw_launcher_jget(r->nodeclass, "spec");
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
                                                        : nw_launcher_jstr(spec, "instanceProfile");
    if (!prof)
        prof = nw_launcher_jstr(spec, "role");
    if (prof)
        LTD("IamInstanceProfile.Name", prof);
    if (rc == NW_OK)
        rc = lt_nis(r, efa, cluster_ipv6(l), p);
    if (rc == NW_OK && (rc = lt_bdms(r, p, err)) == NW_EINVAL)
        return rc;
    /* metadata options, each field defaulted */
    const cJSON *mo = nw_launcher_jget(spec, "metadataOptions");
    const char *ep = nw_launcher_jstr(mo, "httpEndpoint"),
               *v6 = nw_launcher_jstr(mo, "httpProtocolIPv6");
    const char *tok = nw_launcher_jstr(mo, "httpTokens");
    const cJSON *hop = nw_launcher_jget(mo, "httpPutResponseHopLimit");
    char hops[16];
    snprintf(hops, sizeof hops, "%d", cJSON_IsNumber(hop) ? (int)hop->valuedouble : 1);
    LTD("MetadataOptions.HttpEndpoint", ep ? ep : "enabled");
    LTD("MetadataOptions.HttpProtocolIpv6", v6 ? v6 : "disabled");
    LTD("MetadataOptions.HttpPutResponseHopLimit", hops);
    LTD("MetadataOptions.HttpTokens", tok ? tok : "required");
    LTD("MetadataOptions.InstanceMetadataTags", "disabled");
    const cJSON *mon = nw_launcher_jget(spec, "detailedMonitoring");
    LTD("Monitoring.Enabled", cJSON_IsTrue(mon) ? "true" : "false");
    if (r->resolved->pg_id[0])
        LTD("Placement.GroupId", r->resolved->pg_id);
    int part = nw_launcher_claim_partition(r);
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
    const char *nv = nw_launcher_jstr(nw_launcher_jget(spec, "cpuOptions"), "nestedVirtualization");
    if (nv)
        LTD("CpuOptions.NestedVirtualization", nv);
#undef LTD
    nw_ec2_tag_t t[MAX_TAGS];
    int nt = nw_launcher_tags_build(l, r, 0, t);
    if (rc == NW_OK)
        rc = nw_launcher_tags_spec(p, "LaunchTemplateData.", 1, "network-interface", t, nt);
    if (rc == NW_OK)
        rc = nw_launcher_tags_spec(p, "", 1, "launch-template", t, nt);
    if (rc != NW_OK)
        return nw_err_set(err, rc, "CreateLaunchTemplate", "request too large");
    return NW_OK;
}

nw_rc_t nw_launcher_template_params(nw_launcher_t *l, const nw_launch_req_t *r, const char *ami_id,
                                    const char *ct, int64_t pods, int efa, nw_ec2_params_t *p,
                                    nw_err_t *err)
{
    char *ud = NULL, name[256];
    nw_rc_t rc = nw_launcher_userdata(l, r, ct, pods, &ud, err);
    if (rc != NW_OK)
        return rc;
    template_name(l, r, ami_id, ct, ud, efa, name, sizeof name);
    rc = lt_params(l, r, name, ami_id, ud, efa, p, err);
    free(ud);
    return rc;
}

const char *nw_launcher_lt_cached(nw_launcher_t *l, const char *name)
{
    for (int i = 0; i < l->nlts; i++)
        if (strcmp(l->lts[i].name, name) == 0)
            return l->lts[i].id;
    return NULL;
}

static void lt_remember(nw_launcher_t *l, const char *name, const char *id)
{
    int i = l->nlts < LT_CACHE ? l->nlts++ : (int)(nw_clock_mono(l->clock) % LT_CACHE);
    snprintf(l->lts[i].name, sizeof l->lts[i].name, "%s", name);
    snprintf(l->lts[i].id, sizeof l->lts[i].id, "%s", id);
}

void nw_launcher_lt_forget(nw_launcher_t *l, const char *name)
{
    l->lt_gen++;
    for (int i = 0; i < l->nlts; i++)
        if (strcmp(l->lts[i].name, name) == 0) {
            l->lts[i] = l->lts[--l->nlts];
            return;
        }
}

/* forget a template that was deleted on purpose (nw_launcher_lt_forget: one deleted behind our
 * back) */
void nw_launcher_lt_drop(nw_launcher_t *l, const char *name)
{
    for (int i = 0; i < l->nlts; i++)
        if (strcmp(l->lts[i].name, name) == 0) {
            l->lts[i] = l->lts[--l->nlts];
            return;
        }
}

static nw_rc_t ensure_lt_ud(nw_launcher_t *l, const nw_launch_req_t *r, const char *ami_id,
                            const char *ct, const char *ud, int efa, char *name, size_t namelen,
                            nw_ec2_error_t *ae, nw_err_t *err)
{
    template_name(l, r, ami_id, ct, ud, efa, name, namelen);
    if (nw_launcher_lt_cached(l, name))
        return NW_OK;
    nw_ec2_lts_t found = {0};
    const char *names[] = {name};
    nw_err_t e = {0};
    nw_rc_t rc = nw_ec2_describe_launch_templates(l->ec2, names, 1, NULL, 0, &found, ae, &e);
    if (rc == NW_OK && found.n > 0) {
        lt_remember(l, name, found.v[0].id);
        nw_ec2_lts_free(&found);
        return NW_OK;
    }
    nw_ec2_lts_free(&found);
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

nw_rc_t nw_launcher_ensure_lt(nw_launcher_t *l, const nw_launch_req_t *r, const char *ami_id,
                              const char *ct, int64_t pods, int efa, char *name, size_t namelen,
                              nw_ec2_error_t *ae, nw_err_t *err)
{
    char *ud = NULL;
    nw_rc_t rc = nw_launcher_userdata(l, r, ct, pods, &ud, err);
    if (rc != NW_OK)
        return rc;
    rc = ensure_lt_ud(l, r, ami_id, ct, ud, efa, name, namelen, ae, err);
    free(ud);
    return rc;
}

/* ---- candidates ---------------------------------------------------------------------------- */

int nw_launcher_cand_cmp(const void *a, const void *b)
{
    const cand_t *x = a, *y = b;
    if (x->price != y->price)
        return x->price < y->price ? -1 : 1;
    int c = strcmp(x->t->name, y->t->name);
    return c ? c : strcmp(x->zone, y->zone);
}

const char *nw_launcher_best_subnet(const nw_launcher_t *l, const nw_nodeclass_resolved_t *rs,
                                    const char *zone, int64_t now)
{
    const nw_nc_subnet_t *best = NULL;
    for (size_t i = 0; i < rs->nsubnets; i++) {
        const nw_nc_subnet_t *s = &rs->subnets[i];
        if (strcmp(s->zone, zone) != 0 || nw_ice_subnet_unavailable(l->ice, s->id, now))
            continue;
        if (!best || s->available_ips > best->available_ips)
            best = s;
    }
    return best ? best->id : NULL;
}

/* the claim asks for EFA devices (resolver.go: a template per EFA count, then) */
int nw_launcher_wants_efa(const nw_launch_req_t *r)
{
    return nw_launcher_jget(nw_launcher_jget(nw_launcher_jget(r->claim, "spec"), "resources"),
                            "requests") &&
           nw_launcher_jget(
               nw_launcher_jget(nw_launcher_jget(nw_launcher_jget(r->claim, "spec"), "resources"),
                                "requests"),
               "vpc.amazonaws.com/efa");
}

/* Collect available offerings for one capacity type; returns the count. */
int nw_launcher_collect(nw_launcher_t *l, const nw_launch_req_t *r, const char *ct, cand_t *c,
                        int max, int64_t now)
{
    return nw_launcher_collect_why(l, r, ct, c, max, now, NULL, 0);
}

int nw_launcher_collect_why(nw_launcher_t *l, const nw_launch_req_t *r, const char *ct, cand_t *c,
                            int max, int64_t now, char *why, size_t whylen)
{
    int n = 0;
    for (int i = 0; i < r->ntypes; i++) {
        const nw_itype_t *t = nw_catalog_find(l->cat, r->types[i]);
        if (!t)
            continue;
        const nw_nc_ami_t *ami = nw_nodeclass_ami_for(r->resolved, t); /* arch, variant */
        if (!ami)
            continue;
        /* Karpenter's per-class filters (scaler/cloud/compat.h): a type EC2 would refuse */
        char w[256];
        if (!nw_itype_class_compatible(t, r->nodeclass,
                                       r->resolved->pg_id[0] ? r->resolved->pg_strategy : NULL, w,
                                       sizeof w)) {
            if (why && whylen && !why[0])
                snprintf(why, whylen, "%s", w);
            continue;
        }
        int64_t pods = nw_launcher_type_pods(l, r, t);
        int efa = nw_launcher_wants_efa(r) ? t->efa : 0;
        nw_offering_t of[NW_CATALOG_MAX_OFFERINGS];
        int no = nw_catalog_offerings(t, l->ice, now, of, NW_CATALOG_MAX_OFFERINGS);
        for (int k = 0; k < no && n < max; k++) {
            if (!of[k].available || strcmp(of[k].capacity_type, ct) != 0 ||
                !nw_launcher_in(of[k].zone, r->zones, r->nzones))
                continue;
            const char *sn = nw_launcher_best_subnet(l, r->resolved, of[k].zone, now);
            if (!sn)
                continue;
            cand_t *x = &c[n++];
            memset(x, 0, sizeof *x);
            x->t = t;
            snprintf(x->ami, sizeof x->ami, "%s", ami->id);
            memcpy(x->zone, of[k].zone, sizeof x->zone);
            x->zone[sizeof x->zone - 1] = 0;
            memcpy(x->zone_id, of[k].zone_id, sizeof x->zone_id);
            x->zone_id[sizeof x->zone_id - 1] = 0;
            snprintf(x->subnet, sizeof x->subnet, "%s", sn);
            snprintf(x->ct, sizeof x->ct, "%s", ct);
            x->price = of[k].price;
            x->pods = pods;
            x->efa = efa;
        }
    }
    return n;
}

/* ---- capacity reservations ------------------------------------------------------------- */

/* The available count of reservation cr (resolved at synced): the resolution's count when it
 * is newer than what the launcher follows (Karpenter's syncAvailability), else the count
 * the launcher has followed since. */
static int64_t cr_available(nw_launcher_t *l, const nw_nc_cr_t *cr, int64_t synced)
{
    for (int i = 0; i < l->ncrav; i++)
        if (strcmp(l->crav[i].id, cr->id) == 0) {
            if (synced > l->crav[i].synced) {
                l->crav[i].count = cr->available;
                l->crav[i].synced = synced;
            }
            return l->crav[i].count;
        }
    int i = l->ncrav < NW_LAUNCH_MAX_CRS ? l->ncrav++ : (int)(synced % NW_LAUNCH_MAX_CRS);
    snprintf(l->crav[i].id, sizeof l->crav[i].id, "%s", cr->id);
    l->crav[i].count = cr->available;
    l->crav[i].synced = synced;
    return cr->available;
}

int64_t nw_launcher_cr_available(const nw_launcher_t *l, const char *id, int64_t resolved,
                                 int64_t synced)
{
    for (int i = 0; i < l->ncrav; i++)
        if (strcmp(l->crav[i].id, id) == 0 && l->crav[i].synced >= synced)
            return l->crav[i].count;
    return resolved;
}

/* MarkLaunched (delta -1) and the exhausted reservation (set to 0) */
void nw_launcher_cr_mark(nw_launcher_t *l, const char *id, int zero)
{
    for (int i = 0; i < l->ncrav; i++)
        if (strcmp(l->crav[i].id, id) == 0) {
            if (zero)
                l->crav[i].count = 0;
            else if (l->crav[i].count > 0)
                l->crav[i].count--;
        }
}

/* Reserved offerings (offering.go / reserved_capacity_resolver.go): each resolved
 * reservation of a requested type in an allowed zone with a subnet, not expiring, with
 * instances left, priced at the on-demand price / 10,000,000; then only one reservation
 * type (the fleet's DefaultTargetCapacityType is on-demand or capacity-block): the one of
 * the cheapest offering, capacity blocks on a tie (aws/karpenter-provider-aws
 * designs/capacity-block-support.md). */
int nw_launcher_collect_reserved(nw_launcher_t *l, const nw_launch_req_t *r, cand_t *c, int max,
                                 int64_t now, int *block)
{
    int n = 0;
    const nw_nodeclass_resolved_t *rs = r->resolved;
    for (size_t k = 0; k < rs->ncrs && n < max; k++) {
        const nw_nc_cr_t *cr = &rs->crs[k];
        if (cr->expiring || !nw_launcher_in(cr->type, r->types, r->ntypes) ||
            !nw_launcher_in(cr->zone, r->zones, r->nzones) ||
            (r->ncr_ids && !nw_launcher_in(cr->id, r->cr_ids, r->ncr_ids)))
            continue;
        const nw_itype_t *t = nw_catalog_find(l->cat, cr->type);
        const nw_nc_ami_t *ami = t ? nw_nodeclass_ami_for(rs, t) : NULL;
        if (ami && !nw_itype_class_compatible(t, r->nodeclass,
                                              rs->pg_id[0] ? rs->pg_strategy : NULL, NULL, 0))
            ami = NULL; /* a type the class cannot launch (scaler/cloud/compat.h) */
        const char *sn = ami ? nw_launcher_best_subnet(l, rs, cr->zone, now) : NULL;
        if (!sn || cr_available(l, cr, rs->crs_synced_ns) <= 0)
            continue;
        cand_t *x = &c[n++];
        memset(x, 0, sizeof *x);
        x->t = t;
        snprintf(x->ami, sizeof x->ami, "%s", ami->id);
        snprintf(x->zone, sizeof x->zone, "%s", cr->zone);
        snprintf(x->zone_id, sizeof x->zone_id, "%s", cr->zone_id);
        for (size_t s = 0; !x->zone_id[0] && s < rs->nsubnets; s++)
            if (strcmp(rs->subnets[s].zone, cr->zone) == 0)
                snprintf(x->zone_id, sizeof x->zone_id, "%s", rs->subnets[s].zone_id);
        snprintf(x->subnet, sizeof x->subnet, "%s", sn);
        snprintf(x->ct, sizeof x->ct, "reserved");
        snprintf(x->cr, sizeof x->cr, "%s", cr->id);
        snprintf(x->cr_type, sizeof x->cr_type, "%s", cr->reservation_type);
        x->cr_interruptible = cr->interruptible;
        x->price = nw_catalog_od_price(l->cat, t->name) / 10000000.0;
        x->pods = nw_launcher_type_pods(l, r, t);
        x->efa = nw_launcher_wants_efa(r) ? t->efa : 0;
    }
    if (n == 0)
        return 0;
    int best = 0;
    for (int i = 1; i < n; i++) {
        int bi = strcmp(c[i].cr_type, "capacity-block") == 0,
            bb = strcmp(c[best].cr_type, "capacity-block") == 0;
        if (c[i].price < c[best].price || (c[i].price == c[best].price && bi && !bb))
            best = i;
    }
    *block = strcmp(c[best].cr_type, "capacity-block") == 0;
    int j = 0;
    for (int i = 0; i < n; i++)
        if ((strcmp(c[i].cr_type, "capacity-block") == 0) == *block)
            c[j++] = c[i];
    return j;
}

int nw_launcher_filter_exotic(cand_t *c, int n)
{
    int plain = 0;
    for (int i = 0; i < n; i++)
        plain += !nw_itype_is_exotic(c[i].t);
    if (plain == 0)
        return n;
    int j = 0;
    for (int i = 0; i < n; i++)
        if (!nw_itype_is_exotic(c[i].t))
            c[j++] = c[i];
    return j;
}

/* keep candidates of the 60 cheapest types (c sorted by price) */
int nw_launcher_truncate_types(cand_t *c, int n)
{
    const nw_itype_t *seen[NW_LAUNCH_MAX_TYPES];
    int ns = 0, j = 0;
    for (int i = 0; i < n; i++) {
        int known = 0;
        for (int k = 0; k < ns; k++)
            known |= seen[k] == c[i].t;
        if (!known) {
            if (ns == NW_LAUNCH_MAX_TYPES)
                continue;
            seen[ns++] = c[i].t;
        }
        c[j++] = c[i];
    }
    return j;
}

/* ---- fleet ---------------------------------------------------------------------------------- */

/* The ClientToken of try `attempt` of a launch with token tok ("" when none): the token
 * itself for the first, a suffix for the retry after a missing template (that first
 * CreateFleet answered, so its token is spent). */
static void attempt_token(const char *tok, int attempt, char *out, size_t len)
{
    size_t n = tok ? strlen(tok) : 0, max = attempt ? NW_CLOUD_TOKEN_MAX - 2 : NW_CLOUD_TOKEN_MAX;
    if (n > max)
        n = max;
    if (n + 3 > len)
        n = len > 3 ? len - 3 : 0;
    memcpy(out, tok ? tok : "", n);
    out[n] = 0;
    if (n && attempt) {
        out[n] = '.';
        out[n + 1] = (char)('0' + attempt % 10);
        out[n + 2] = 0;
    }
}

static nw_rc_t fleet_params(nw_launcher_t *l, const nw_launch_req_t *r, nw_launch_plan_t *pl)
{
    nw_ec2_params_t *p = &pl->p;
    const char *ct = pl->ct;
    char tok[NW_CLOUD_TOKEN_MAX + 1];
    attempt_token(r->client_token, pl->attempt, tok, sizeof tok);
    nw_rc_t rc = nw_ec2_param(p, "Type", "instant");
    if (rc == NW_OK && tok[0])
        rc = nw_ec2_param(p, "ClientToken", tok);
    if (rc == NW_OK)
        rc = nw_ec2_param(p, "TargetCapacitySpecification.TotalTargetCapacity", "1");
    /* reserved: on-demand capacity in the templates' reservations, or capacity blocks */
    const char *dtype = strcmp(ct, "reserved") != 0 ? ct
                        : pl->cr_block              ? "capacity-block"
                                                    : "on-demand";
    if (rc == NW_OK)
        rc = nw_ec2_param(p, "TargetCapacitySpecification.DefaultTargetCapacityType", dtype);
    if (rc == NW_OK)
        rc = strcmp(ct, "spot") == 0
                 ? nw_ec2_param(p, "SpotOptions.AllocationStrategy", "price-capacity-optimized")
                 : nw_ec2_param(p, "OnDemandOptions.AllocationStrategy", "lowest-price");
    /* no Context when the NodeClaim's minValues were relaxed (aws/karpenter-provider-aws
     * pkg/providers/instance/instance.go launchInstance) */
    const char *ctx = nw_launcher_jstr(nw_launcher_jget(r->nodeclass, "spec"), "context");
    const char *relaxed =
        nw_launcher_jstr(nw_launcher_jget(nw_launcher_jget(r->claim, "metadata"), "annotations"),
                         "karpenter.sh/nodeclaim-min-values-relaxed");
    if (relaxed && strcmp(relaxed, "true") == 0)
        ctx = NULL;
    if (ctx && rc == NW_OK)
        rc = nw_ec2_param(p, "Context", ctx);
    for (int a = 0; a < pl->namis && rc == NW_OK; a++) {
        rc = nw_ec2_paramf(
            p, pl->names[a],
            "LaunchTemplateConfigs.%d.LaunchTemplateSpecification.LaunchTemplateName", a + 1);
        if (rc == NW_OK)
            rc = nw_ec2_paramf(p, "$Latest",
                               "LaunchTemplateConfigs.%d.LaunchTemplateSpecification.Version",
                               a + 1);
        int o = 0;
        for (int i = 0; i < pl->n && rc == NW_OK; i++) {
            const cand_t *c = &pl->c[i];
            if (strcmp(c->ami, pl->amis[a]) != 0 || c->pods != pl->pods[a] ||
                c->efa != pl->efa[a] || strcmp(c->cr, pl->crs[a]) != 0)
                continue;
            o++;
            char pr[32];
            snprintf(pr, sizeof pr, "%.6f", c->price);
#define OV(field, val)                                                                             \
    do {                                                                                           \
        if (rc == NW_OK)                                                                           \
            rc =                                                                                   \
                nw_ec2_paramf(p, (val), "LaunchTemplateConfigs.%d.Overrides.%d." field, a + 1, o); \
    } while (0)
            OV("InstanceType", c->t->name);
            OV("SubnetId", c->subnet);
            OV("ImageId", c->ami);
            OV("AvailabilityZone", c->zone);
            OV("Priority", pr);
#undef OV
        }
    }
    nw_ec2_tag_t t[MAX_TAGS];
    int nt = nw_launcher_tags_build(l, r, 1, t);
    if (rc == NW_OK)
        rc = nw_launcher_tags_spec(p, "", 1, "instance", t, nt);
    if (rc == NW_OK)
        rc = nw_launcher_tags_spec(p, "", 2, "volume", t, nt);
    nt = nw_launcher_tags_build(l, r, 0, t);
    if (rc == NW_OK)
        rc = nw_launcher_tags_spec(p, "", 3, "fleet", t, nt);
    return rc;
}

static int lt_missing(const char *code)
{
    return strcmp(code, "InvalidLaunchTemplateName.NotFoundException") == 0 ||
           strcmp(code, "InvalidLaunchTemplateId.NotFound") == 0 ||
           strcmp(code, "InvalidLaunchTemplateName.NotFound") == 0 ||
           strcmp(code, "InvalidLaunchTemplateId.NotFoundException") == 0;
}

void nw_launcher_plan_free(nw_launch_plan_t *pl)
{
    if (!pl)
        return;
    if (pl->have_params)
        nw_ec2_params_cleanup(&pl->p);
    nw_ec2_fleet_result_free(&pl->fr);
    free(pl->c);
    free(pl);
}

nw_rc_t nw_launcher_plan(nw_launcher_t *l, const nw_launch_req_t *r, int attempt,
                         nw_launch_plan_t **out, nw_ec2_error_t *ae, nw_err_t *err)
{
    *out = NULL;
    if (!r->resolved || !r->resolved->ready)
        return nw_err_set(err, NW_EINVAL, "nodeclass", "EC2NodeClass %s is not ready: %s",
                          r->resolved ? r->resolved->name : "?",
                          r->resolved ? r->resolved->message : "not resolved");
    int64_t now = nw_clock_mono(l->clock);
    nw_launch_plan_t *pl = calloc(1, sizeof *pl);
    cand_t *c = pl ? calloc(MAX_CANDS, sizeof *c) : NULL;
    if (!c) {
        free(pl);
        return nw_err_set(err, NW_ENOMEM, "launch", "out of memory");
    }
    pl->c = c;
    pl->attempt = attempt;
    snprintf(pl->nodeclaim, sizeof pl->nodeclaim, "%s", r->nodeclaim ? r->nodeclaim : "");
    snprintf(pl->nodepool, sizeof pl->nodepool, "%s", r->nodepool ? r->nodepool : "");
    nw_rc_t rc = NW_OK;
    int want_spot = 0, want_od = r->ncapacity_types == 0, want_res = 0;
    for (int i = 0; i < r->ncapacity_types; i++) {
        want_spot |= strcmp(r->capacity_types[i], "spot") == 0;
        want_od |= strcmp(r->capacity_types[i], "on-demand") == 0;
        want_res |= strcmp(r->capacity_types[i], "reserved") == 0;
    }
    int n = 0;
    const char *ct = NULL;
    char why[256] = ""; /* a type the class cannot launch, and why */
    /* reserved capacity first (it is paid for), then spot, then on-demand */
    if (want_res) {
        n = nw_launcher_collect_reserved(l, r, c, MAX_CANDS, now, &pl->cr_block);
        ct = "reserved";
    }
    if (n == 0 && want_spot) {
        n = nw_launcher_collect_why(l, r, "spot", c, MAX_CANDS, now, why, sizeof why);
        ct = "spot";
        if (!r->min_values)
            n = nw_launcher_filter_exotic(c, n);
        if (n > 0 && want_od) {
            /* drop spot offerings dearer than the cheapest on-demand one */
            cand_t *od = calloc(MAX_CANDS, sizeof *od);
            if (!od) {
                rc = nw_err_set(err, NW_ENOMEM, "launch", "out of memory");
                goto fail;
            }
            int nod = nw_launcher_collect(l, r, "on-demand", od, MAX_CANDS, now);
            if (!r->min_values)
                nod = nw_launcher_filter_exotic(od, nod);
            double cheapest = -1;
            for (int i = 0; i < nod; i++)
                if (cheapest < 0 || od[i].price < cheapest)
                    cheapest = od[i].price;
            free(od);
            if (cheapest > 0) {
                int j = 0;
                for (int i = 0; i < n; i++)
                    if (c[i].price <= cheapest)
                        c[j++] = c[i];
                n = j;
            }
        }
    }
    if (n == 0 && want_od) {
        n = nw_launcher_collect_why(l, r, "on-demand", c, MAX_CANDS, now, why, sizeof why);
        ct = "on-demand";
        if (!r->min_values)
            n = nw_launcher_filter_exotic(c, n);
    }
    if (n == 0) {
        ae->cls = NW_EC2_CAPACITY;
        snprintf(ae->code, sizeof ae->code, "InsufficientCapacity");
        snprintf(ae->message, sizeof ae->message,
                 "no available offering for %d instance types in the allowed zones and "
                 "capacity types (ICE cache, subnets, AMI architectures, the class's "
                 "compatibility filters)%s%.300s",
                 r->ntypes, why[0] ? "; " : "", why);
        rc = nw_err_set(err, NW_EAWS, "launch", "%s", ae->message);
        goto fail;
    }
    qsort(c, (size_t)n, sizeof *c, nw_launcher_cand_cmp);
    pl->n = nw_launcher_truncate_types(c, n);
    snprintf(pl->ct, sizeof pl->ct, "%s", ct);

    /* one template per AMI and, for a generated bootstrap, per max-pods value (and per
     * reservation) */
    int j = 0;
    for (int i = 0; i < pl->n; i++) {
        int k;
        for (k = 0;
             k < pl->namis && (strcmp(pl->amis[k], c[i].ami) != 0 || pl->pods[k] != c[i].pods ||
                               pl->efa[k] != c[i].efa || strcmp(pl->crs[k], c[i].cr) != 0);
             k++) {
        }
        if (k == pl->namis && pl->namis < MAX_LTS) {
            pl->pods[pl->namis] = c[i].pods;
            pl->efa[pl->namis] = c[i].efa;
            snprintf(pl->crs[pl->namis], sizeof pl->crs[0], "%s", c[i].cr);
            snprintf(pl->amis[pl->namis++], sizeof pl->amis[0], "%s", c[i].ami);
        }
        if (k < pl->namis)
            c[j++] = c[i]; /* past MAX_LTS groups, the dearer types are left out */
    }
    pl->n = j;
    pl->kubeadm = nw_launcher_kubeadm(r);
    snprintf(pl->pg_id, sizeof pl->pg_id, "%s", r->resolved->pg_id);
    pl->pg_partitioned = pl->pg_id[0] && strcmp(r->resolved->pg_strategy, "partition") == 0;
    pl->partition = nw_launcher_claim_partition(r);
    for (int a = 0; a < pl->namis; a++) {
        snprintf(l->lt_cr, sizeof l->lt_cr, "%s", pl->crs[a]);
        l->lt_cr_block = pl->crs[a][0] && pl->cr_block;
        rc = nw_launcher_ensure_lt(l, r, pl->amis[a], ct, pl->pods[a], pl->efa[a], pl->names[a],
                                   sizeof pl->names[a], ae, err);
        l->lt_cr[0] = 0;
        l->lt_cr_block = 0;
        if (rc != NW_OK)
            goto fail;
        const char *id = nw_launcher_lt_cached(l, pl->names[a]);
        snprintf(pl->lt_ids[a], sizeof pl->lt_ids[a], "%s", id ? id : "");
    }
    if ((rc = nw_ec2_params_init(&pl->p, "CreateFleet")) == NW_OK)
        rc = fleet_params(l, r, pl);
    pl->have_params = 1;
    if (rc != NW_OK) {
        rc = nw_err_set(err, rc, "CreateFleet", "request too large");
        goto fail;
    }
    *out = pl;
    return NW_OK;
fail:
    nw_launcher_plan_free(pl);
    return rc;
}

nw_rc_t nw_launcher_fleet(nw_launcher_t *l, nw_launch_plan_t *pl, nw_ec2_error_t *ae)
{
    memset(&pl->fleet_err, 0, sizeof pl->fleet_err);
    pl->fleet_rc = nw_ec2_create_fleet(l->ec2, &pl->p, &pl->fr, ae, &pl->fleet_err);
    /* a kubeadm bootstrap's templates hold this NodeClaim's token: used up once launched */
    for (int a = 0; pl->kubeadm && pl->fleet_rc == NW_OK && pl->fr.ninst > 0 && a < pl->namis;
         a++) {
        nw_ec2_error_t dae = {0};
        nw_err_t de = {0};
        if (!pl->lt_ids[a][0])
            continue;
        if (nw_ec2_delete_launch_template(l->ec2, pl->lt_ids[a], &dae, &de) != NW_OK)
            nw_log_warn(COMP, "cannot delete the bootstrap's launch template",
                        NW_LS("id", pl->lt_ids[a]), NW_LS("error", de.msg));
    }
    return pl->fleet_rc;
}

nw_rc_t nw_launcher_settle(nw_launcher_t *l, nw_launch_plan_t *pl, nw_launch_result_t *out,
                           int *again, nw_ec2_error_t *ae, nw_err_t *err)
{
    int64_t now = nw_clock_mono(l->clock);
    nw_ec2_fleet_result_t *fr = &pl->fr;
    const char *ct = pl->ct;
    *again = 0;
    if (pl->fleet_rc == NW_EAWS && lt_missing(ae->code) && pl->attempt == 0) {
        for (int a = 0; a < pl->namis; a++)
            nw_launcher_lt_forget(l, pl->names[a]);
        *again = 1;
        return pl->fleet_rc;
    }
    if (pl->fleet_rc != NW_OK) {
        if (strcmp(ae->code, "IdempotentParameterMismatch") == 0)
            out->token_conflict = 1;
        if (err && !err->rc)
            *err = pl->fleet_err;
        return pl->fleet_rc;
    }
    int all_ice = fr->nerrs > 0, relaunch = 0;
    for (size_t i = 0; i < fr->nerrs; i++) {
        const nw_ec2_fleet_error_t *e = &fr->errs[i];
        nw_ec2_class_t cls = nw_ec2_classify(e->code, e->message, 400);
        if (strcmp(e->code, "InsufficientFreeAddressesInSubnet") == 0 && e->subnet_id[0])
            nw_ice_mark_subnet(l->ice, e->subnet_id, now);
        /* an exhausted reservation has nothing left until the next sync (Karpenter marks
         * the reservation unavailable); its type and zone stay available otherwise */
        int res_full =
            strcmp(ct, "reserved") == 0 && strcmp(e->code, "ReservationCapacityExceeded") == 0;
        for (int a = 0; res_full && a < pl->namis; a++)
            if (!e->lt_id[0] || strcmp(e->lt_id, pl->lt_ids[a]) == 0)
                nw_launcher_cr_mark(l, pl->crs[a], 1);
        if (strcmp(e->code, "AuthFailure.ServiceLinkedRoleCreationNotPermitted") == 0)
            nw_ice_mark_capacity_type(l->ice, "spot", now);
        else if (cls == NW_EC2_CAPACITY && e->type[0] && e->zone[0] && !res_full)
            nw_ice_mark(l->ice, e->lifecycle[0] ? e->lifecycle : ct, e->type, e->zone, now);
        if (cls != NW_EC2_CAPACITY)
            all_ice = 0;
        if (lt_missing(e->code))
            relaunch = 1;
    }
    if (fr->ninst == 0)
        out->token_spent = 1; /* EC2 keeps this fleet (no instance) under the token */
    if (fr->ninst == 0 && relaunch && pl->attempt == 0) {
        for (int a = 0; a < pl->namis; a++)
            nw_launcher_lt_forget(l, pl->names[a]);
        *again = 1;
        return NW_EAWS;
    }
    if (fr->ninst == 0) {
        const nw_ec2_fleet_error_t *e0 = fr->nerrs ? &fr->errs[0] : NULL;
        if (e0) {
            snprintf(out->failed_type, sizeof out->failed_type, "%s", e0->type);
            snprintf(out->failed_zone, sizeof out->failed_zone, "%s", e0->zone);
            snprintf(out->failed_capacity_type, sizeof out->failed_capacity_type, "%s",
                     e0->lifecycle[0] ? e0->lifecycle : ct);
        }
        ae->cls = all_ice ? NW_EC2_CAPACITY : nw_ec2_classify(e0 ? e0->code : "", "", 400);
        snprintf(ae->code, sizeof ae->code, "%s", e0 ? e0->code : "NoInstance");
        snprintf(ae->message, sizeof ae->message, "%s",
                 e0 ? e0->message : "CreateFleet returned no instance and no error");
        return nw_err_set(err, NW_EAWS, "CreateFleet", "CreateFleet launched nothing: %s: %s%s",
                          ae->code, ae->message, all_ice ? " (insufficient capacity)" : "");
    }
    for (int a = 0; pl->kubeadm && a < pl->namis; a++)
        nw_launcher_lt_drop(l, pl->names[a]);
    const nw_ec2_fleet_instance_t *fi = &fr->inst[0];
    snprintf(out->instance_id, sizeof out->instance_id, "%s", fi->instance_id);
    snprintf(out->type, sizeof out->type, "%s", fi->type);
    snprintf(out->zone, sizeof out->zone, "%s", fi->zone);
    snprintf(out->subnet_id, sizeof out->subnet_id, "%s", fi->subnet_id);
    snprintf(out->image_id, sizeof out->image_id, "%s", fi->image_id);
    snprintf(out->capacity_type, sizeof out->capacity_type, "%s", ct);
    for (int i = 0; i < pl->n; i++) {
        const cand_t *c = &pl->c[i];
        if (strcmp(c->t->name, fi->type) != 0 || strcmp(c->zone, fi->zone) != 0)
            continue;
        if (c->cr[0]) { /* the reservation of the template it launched from */
            int a = 0;
            while (a < pl->namis && strcmp(pl->crs[a], c->cr) != 0)
                a++;
            if (fi->lt_id[0] && a < pl->namis && strcmp(pl->lt_ids[a], fi->lt_id) != 0)
                continue;
            snprintf(out->cr_id, sizeof out->cr_id, "%s", c->cr);
            snprintf(out->cr_type, sizeof out->cr_type, "%s", c->cr_type);
            out->cr_interruptible = c->cr_interruptible;
        }
        out->price = c->price;
        snprintf(out->zone_id, sizeof out->zone_id, "%s", c->zone_id);
        if (!out->image_id[0])
            snprintf(out->image_id, sizeof out->image_id, "%s", c->ami);
        for (int a = 0; a < pl->namis; a++)
            if (strcmp(pl->amis[a], c->ami) == 0 && pl->pods[a] == c->pods &&
                pl->efa[a] == c->efa && strcmp(pl->crs[a], c->cr) == 0)
                snprintf(out->launch_template, sizeof out->launch_template, "%s", pl->names[a]);
    }
    if (out->cr_id[0])
        nw_launcher_cr_mark(l, out->cr_id, 0);
    snprintf(out->provider_id, sizeof out->provider_id, "aws:///%s/%s", out->zone,
             out->instance_id);
    snprintf(out->pg_id, sizeof out->pg_id, "%s", pl->pg_id);
    out->pg_partitioned = pl->pg_partitioned;
    if (pl->pg_partitioned && pl->partition > 0)
        snprintf(out->pg_partition, sizeof out->pg_partition, "%d", pl->partition);
    nw_log_info(COMP, "launched", NW_LS("nodeclaim", pl->nodeclaim),
                NW_LS("nodepool", pl->nodepool), NW_LS("instance", out->instance_id),
                NW_LS("type", out->type), NW_LS("zone", out->zone), NW_LS("capacity_type", ct),
                NW_LI("fleet_errors", fr->nerrs));
    return NW_OK;
}

nw_rc_t nw_launcher_launch(nw_launcher_t *l, const nw_launch_req_t *r, nw_launch_result_t *out,
                           nw_ec2_error_t *ae, nw_err_t *err)
{
    nw_ec2_error_t local;
    if (!ae)
        ae = &local;
    memset(ae, 0, sizeof *ae);
    memset(out, 0, sizeof *out);
    nw_rc_t rc = NW_OK;
    for (int attempt = 0; attempt < 2; attempt++) {
        nw_launch_plan_t *pl = NULL;
        if ((rc = nw_launcher_plan(l, r, attempt, &pl, ae, err)) != NW_OK)
            return rc;
        nw_launcher_fleet(l, pl, ae);
        int again = 0;
        rc = nw_launcher_settle(l, pl, out, &again, ae, err);
        nw_launcher_plan_free(pl);
        if (!again)
            break;
        memset(ae, 0, sizeof *ae);
    }
    if (rc == NW_OK)
        nw_launcher_find_partition(l, out);
    return rc;
}

void nw_launcher_find_partition(nw_launcher_t *l, nw_launch_result_t *out)
{
    if (!out->pg_partitioned || out->pg_partition[0] || !out->instance_id[0])
        return;
    const char *ids[] = {out->instance_id};
    nw_ec2_instances_t in = {0};
    nw_err_t e = {0};
    if (nw_ec2_describe_instances(l->ec2, ids, 1, NULL, 0, &in, NULL, &e) == NW_OK && in.n > 0 &&
        in.v[0].partition > 0)
        snprintf(out->pg_partition, sizeof out->pg_partition, "%d", in.v[0].partition);
    else
        nw_log_warn(COMP, "the instance's placement group partition is not known yet",
                    NW_LS("instance", out->instance_id), NW_LS("error", e.msg));
    nw_ec2_instances_free(&in);
}

nw_rc_t nw_launcher_delete_templates(nw_launcher_t *l, const char *nodeclass, int *deleted,
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
    nw_ec2_lts_free(&found);
    if (deleted)
        *deleted = n;
    return rc;
}

/* ---- terminate, list ---------------------------------------------------------------------- */

nw_rc_t nw_launcher_terminate(nw_launcher_t *l, const char *id_or_pid, nw_err_t *err)
{
    const char *id = nw_cloud_instance_id(id_or_pid);
    if (strncmp(id, "i-", 2) != 0)
        return nw_err_set(err, NW_EINVAL, "providerID", "not an instance id: %s", id_or_pid);
    nw_ec2_state_changes_t sc = {0};
    const char *ids[] = {id};
    nw_rc_t rc = nw_ec2_terminate_instances(l->ec2, ids, 1, &sc, NULL, err);
    if (rc == NW_OK)
        nw_log_info(COMP, "terminated", NW_LS("instance", id),
                    NW_LS("state", sc.n ? sc.v[0].current : "?"));
    nw_ec2_state_changes_free(&sc);
    return rc;
}

nw_rc_t nw_launcher_list(nw_launcher_t *l, nw_ec2_instances_t *out, nw_err_t *err)
{
    nw_ec2_filter_t f[] = {
        {"tag-key", {"karpenter.sh/nodepool"}, 1},
        {"tag-key", {"karpenter.k8s.aws/ec2nodeclass"}, 1},
        {"tag:eks:eks-cluster-name", {l->cluster}, 1},
        {"instance-state-name", {"pending", "running", "stopping", "stopped", "shutting-down"}, 5},
    };
    return nw_ec2_describe_instances(l->ec2, NULL, 0, f, 4, out, NULL, err);
}
