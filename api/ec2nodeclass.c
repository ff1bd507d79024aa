/* api/ec2nodeclass.c — EC2NodeClass rules: metadataOptions defaults and the
 * v1.14.1 CRD's schema and CEL rules (aws/karpenter-provider-aws
 * pkg/apis/crds/karpenter.k8s.aws_ec2nodeclasses.yaml). */
#include "api/ec2nodeclass.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/kre.h"
#include "api/nodepool.h"
#include "api/wellknown.h"
#include "common/strs.h"

typedef char path_t[NW_KV_PATH_MAX];

static const char *const AMI_FAMILIES[] = {"AL2",         "AL2023",      "Bottlerocket", "Custom",
                                           "Windows2019", "Windows2022", "Windows2025",  NULL};
static const char *const VOLUME_TYPES[] = {"standard", "io1", "io2", "gp2",
                                           "sc1",      "st1", "gp3", NULL};
static const char *const ENABLED_DISABLED[] = {"enabled", "disabled", NULL};
static const char *const TOKENS[] = {"required", "optional", NULL};
static const char *const MATCH_CRITERIA[] = {"open", "targeted", NULL};
static const char *const STORE_POLICIES[] = {"RAID0", NULL};
static const char *const IFACE_TYPES[] = {"interface", "efa-only", NULL};
static const char *const EVICTION_KEYS[] = {"memory.available",
                                            "nodefs.available",
                                            "nodefs.inodesFree",
                                            "imagefs.available",
                                            "imagefs.inodesFree",
                                            "pid.available",
                                            NULL};
static const char *const RESERVED_KEYS[] = {"cpu", "memory", "ephemeral-storage", "pid", NULL};

/* ---- defaulting ---------------------------------------------------------------------- */

nw_rc_t nw_api_ec2nodeclass_default(const cJSON *obj, nw_jsonpatch_t *p)
{
    const cJSON *spec = nw_kval_get(obj, "spec");
    if (!cJSON_IsObject(spec))
        return NW_OK;
    const cJSON *mo = nw_kval_get(spec, "metadataOptions");
    nw_rc_t rc = NW_OK;
    if (!mo) {
        cJSON *d = cJSON_CreateObject();
        if (!d || !cJSON_AddStringToObject(d, "httpEndpoint", "enabled") ||
            !cJSON_AddStringToObject(d, "httpProtocolIPv6", "disabled") ||
            !cJSON_AddNumberToObject(d, "httpPutResponseHopLimit", 1) ||
            !cJSON_AddStringToObject(d, "httpTokens", "required")) {
            cJSON_Delete(d);
            return NW_ENOMEM;
        }
        rc = nw_jsonpatch_add(p, "add", "/spec/metadataOptions", d);
        cJSON_Delete(d);
        return rc;
    }
    if (!cJSON_IsObject(mo))
        return NW_OK;
    static const struct {
        const char *name, *path, *s;
        double n;
    } defs[] = {
        {"httpEndpoint", "/spec/metadataOptions/httpEndpoint", "enabled", 0},
        {"httpProtocolIPv6", "/spec/metadataOptions/httpProtocolIPv6", "disabled", 0},
        {"httpPutResponseHopLimit", "/spec/metadataOptions/httpPutResponseHopLimit", NULL, 1},
        {"httpTokens", "/spec/metadataOptions/httpTokens", "required", 0},
    };
    for (size_t i = 0; i < sizeof defs / sizeof defs[0] && rc == NW_OK; i++) {
        if (nw_kval_get(mo, defs[i].name))
            continue;
        cJSON *v = defs[i].s ? cJSON_CreateString(defs[i].s) : cJSON_CreateNumber(defs[i].n);
        if (!v)
            return NW_ENOMEM;
        rc = nw_jsonpatch_add(p, "add", defs[i].path, v);
        cJSON_Delete(v);
    }
    return rc;
}

/* ---- schema helpers ------------------------------------------------------------------- */

static const cJSON *opt(nw_kv_t *kv, const cJSON *obj, const char *parent, const char *name,
                        const char *type)
{
    const cJSON *v = nw_kval_get(obj, name);
    path_t p;
    if (!v || !nw_kval_type(kv, nw_kval_path(p, parent, name), v, type))
        return NULL;
    return v;
}

static const cJSON *reqd(nw_kv_t *kv, const cJSON *obj, const char *parent, const char *name,
                         const char *type)
{
    if (!nw_kval_get(obj, name)) {
        nw_kval_required(kv, parent, name);
        return NULL;
    }
    return opt(kv, obj, parent, name, type);
}

static const char *opt_str(nw_kv_t *kv, const cJSON *obj, const char *parent, const char *name)
{
    const cJSON *v = opt(kv, obj, parent, name, "string");
    return v ? v->valuestring : NULL;
}

static void opt_enum(nw_kv_t *kv, const cJSON *obj, const char *parent, const char *name,
                     const char *const *allowed)
{
    path_t p;
    const char *s = opt_str(kv, obj, parent, name);
    if (s)
        nw_kval_enum(kv, nw_kval_path(p, parent, name), s, allowed);
}

static void opt_int(nw_kv_t *kv, const cJSON *obj, const char *parent, const char *name,
                    long long min, long long max)
{
    path_t p;
    const cJSON *v = opt(kv, obj, parent, name, "integer");
    if (v)
        nw_kval_int_range(kv, nw_kval_path(p, parent, name), v->valuedouble, min, max);
}

static void opt_pattern(nw_kv_t *kv, const cJSON *obj, const char *parent, const char *name,
                        nw_re_id_t re)
{
    path_t p;
    const char *s = opt_str(kv, obj, parent, name);
    if (s)
        nw_kval_pattern(kv, nw_kval_path(p, parent, name), s, nw_kre(re));
}

/* map string -> string: type-check the values; returns the map or NULL */
static const cJSON *string_map(nw_kv_t *kv, const cJSON *obj, const char *parent, const char *name)
{
    path_t mp, kp;
    const cJSON *m = opt(kv, obj, parent, name, "object");
    if (!m)
        return NULL;
    nw_kval_path(mp, parent, name);
    for (const cJSON *e = m->child; e; e = e->next)
        nw_kval_type(kv, nw_kval_key(kp, mp, e->string), e, "string");
    return m;
}

/* selector `tags`: ≤20 entries, CEL no empty key or value */
static void selector_tags(nw_kv_t *kv, const cJSON *term, const char *tp)
{
    path_t p;
    const cJSON *tags = string_map(kv, term, tp, "tags");
    if (!tags)
        return;
    nw_kval_path(p, tp, "tags");
    nw_kval_max_items(kv, p, tags, 20);
    for (const cJSON *e = tags->child; e; e = e->next)
        if (!*e->string || (cJSON_IsString(e) && !*e->valuestring)) {
            nw_kval_cel(kv, p, "object", "empty tag keys or values aren't supported");
            break;
        }
}

#define HAS(o, k) (nw_kval_get((o), (k)) != NULL)

/* ---- spec.amiSelectorTerms ------------------------------------------------------------------- */

static void check_ami_terms(nw_kv_t *kv, const cJSON *spec)
{
    const char *lp = "spec.amiSelectorTerms";
    const cJSON *terms = reqd(kv, spec, "spec", "amiSelectorTerms", "array");
    if (!terms)
        return;
    nw_kval_min_items(kv, lp, terms, 1);
    nw_kval_max_items(kv, lp, terms, 30);
    path_t ip, fp;
    size_t i = 0;
    bool none = false, id_mixed = false, alias_mixed = false, any_alias = false;
    for (const cJSON *t = terms->child; t; t = t->next, i++) {
        nw_kval_idx(ip, lp, i);
        if (!nw_kval_type(kv, ip, t, "object"))
            continue;
        const char *alias = opt_str(kv, t, ip, "alias");
        opt_pattern(kv, t, ip, "id", NW_RE_AMI_ID);
        opt_str(kv, t, ip, "name");
        opt_str(kv, t, ip, "owner");
        opt_str(kv, t, ip, "ssmParameter");
        selector_tags(kv, t, ip);
        if (alias) {
            nw_kval_path(fp, ip, "alias");
            nw_kval_max_len(kv, fp, alias, 30);
            if (!nw_kval_re_match(nw_kre(NW_RE_ALIAS), alias))
                nw_kval_cel_str(
                    kv, fp, alias,
                    "'alias' is improperly formatted, must match the format 'family@version'");
            const char *at = strchr(alias, '@');
            size_t fl = at ? (size_t)(at - alias) : strlen(alias);
            char fam[64];
            snprintf(fam, sizeof fam, "%.*s", (int)(fl < 63 ? fl : 63), alias);
            static const char *const fams[] = {
                "al2", "al2023", "bottlerocket", "windows2019", "windows2022", "windows2025", NULL};
            if (fl >= 63 || !nw_strs_in(fam, fams))
                nw_kval_cel_str(
                    kv, fp, alias,
                    "family is not supported, must be one of the following: 'al2', 'al2023', "
                    "'bottlerocket', 'windows2019', 'windows2022', 'windows2025'");
            static const char *const M_WIN = "windows families may only specify version 'latest'";
            if (fl < 63 && strncmp(fam, "windows", 7) == 0 && nw_strs_in(fam, fams)) {
                if (!at)
                    nw_kval_cel_eval(kv, fp, "string", "index '1' out of range in list size '1'",
                                     M_WIN);
                else {
                    /* split('@')[1]: the text up to the next '@' */
                    const char *v = at + 1, *e = strchr(v, '@');
                    size_t vl = e ? (size_t)(e - v) : strlen(v);
                    if (vl != 6 || strncmp(v, "latest", 6) != 0)
                        nw_kval_cel_str(kv, fp, alias, M_WIN);
                }
            }
        }
        bool has_alias = HAS(t, "alias"), has_id = HAS(t, "id"), has_tags = HAS(t, "tags"),
             has_name = HAS(t, "name"), has_owner = HAS(t, "owner");
        if (!(has_tags || has_id || has_name || has_alias || HAS(t, "ssmParameter")))
            none = true;
        if (has_id && (has_alias || has_tags || has_name || has_owner))
            id_mixed = true;
        if (has_alias && (has_id || has_tags || has_name || has_owner))
            alias_mixed = true;
        any_alias |= has_alias;
    }
    if (none)
        nw_kval_cel(
            kv, lp, "array",
            "expected at least one, got none, ['tags', 'id', 'name', 'alias', 'ssmParameter']");
    if (id_mixed)
        nw_kval_cel(
            kv, lp, "array",
            "'id' is mutually exclusive, cannot be set with a combination of other fields in "
            "amiSelectorTerms");
    if (alias_mixed)
        nw_kval_cel(
            kv, lp, "array",
            "'alias' is mutually exclusive, cannot be set with a combination of other fields "
            "in amiSelectorTerms");
    if (any_alias && cJSON_GetArraySize(terms) != 1)
        nw_kval_cel(kv, lp, "array",
                    "'alias' is mutually exclusive, cannot be set with a combination of other "
                    "amiSelectorTerms");
}

/* ---- spec.{subnet,securityGroup,capacityReservation}SelectorTerms ---------------------------- */

static void check_subnet_terms(nw_kv_t *kv, const cJSON *spec)
{
    const char *lp = "spec.subnetSelectorTerms";
    const cJSON *terms = reqd(kv, spec, "spec", "subnetSelectorTerms", "array");
    if (!terms)
        return;
    nw_kval_max_items(kv, lp, terms, 30);
    path_t ip;
    size_t i = 0;
    int all_some = 1, all_mixed = 1;
    for (const cJSON *t = terms->child; t; t = t->next, i++) {
        nw_kval_idx(ip, lp, i);
        if (!nw_kval_type(kv, ip, t, "object"))
            continue;
        opt_pattern(kv, t, ip, "id", NW_RE_SUBNET_ID);
        selector_tags(kv, t, ip);
        all_some &= HAS(t, "tags") || HAS(t, "id");
        all_mixed &= HAS(t, "id") && HAS(t, "tags");
    }
    if (cJSON_GetArraySize(terms) == 0)
        nw_kval_cel(kv, lp, "array", "subnetSelectorTerms cannot be empty");
    if (!all_some)
        nw_kval_cel(kv, lp, "array", "expected at least one, got none, ['tags', 'id']");
    if (all_mixed) /* !self.all(...): fires only when every term mixes (and on an empty list) */
        nw_kval_cel(
            kv, lp, "array",
            "'id' is mutually exclusive, cannot be set with a combination of other fields in "
            "a subnet selector term");
}

static void check_sg_terms(nw_kv_t *kv, const cJSON *spec)
{
    const char *lp = "spec.securityGroupSelectorTerms";
    const cJSON *terms = reqd(kv, spec, "spec", "securityGroupSelectorTerms", "array");
    if (!terms)
        return;
    nw_kval_max_items(kv, lp, terms, 30);
    path_t ip;
    size_t i = 0;
    int all_some = 1, all_id_mixed = 1, all_name_mixed = 1;
    for (const cJSON *t = terms->child; t; t = t->next, i++) {
        nw_kval_idx(ip, lp, i);
        if (!nw_kval_type(kv, ip, t, "object"))
            continue;
        opt_pattern(kv, t, ip, "id", NW_RE_SG_ID);
        opt_str(kv, t, ip, "name");
        selector_tags(kv, t, ip);
        int id = HAS(t, "id"), tags = HAS(t, "tags"), name = HAS(t, "name");
        all_some &= tags || id || name;
        all_id_mixed &= id && (tags || name);
        all_name_mixed &= name && (tags || id);
    }
    if (cJSON_GetArraySize(terms) == 0)
        nw_kval_cel(kv, lp, "array", "securityGroupSelectorTerms cannot be empty");
    if (!all_some)
        nw_kval_cel(kv, lp, "array", "expected at least one, got none, ['tags', 'id', 'name']");
    if (all_id_mixed)
        nw_kval_cel(
            kv, lp, "array",
            "'id' is mutually exclusive, cannot be set with a combination of other fields in "
            "a security group selector term");
    if (all_name_mixed)
        nw_kval_cel(
            kv, lp, "array",
            "'name' is mutually exclusive, cannot be set with a combination of other fields "
            "in a security group selector term");
}

static void check_cr_terms(nw_kv_t *kv, const cJSON *spec)
{
    const char *lp = "spec.capacityReservationSelectorTerms";
    const cJSON *terms = opt(kv, spec, "spec", "capacityReservationSelectorTerms", "array");
    if (!terms)
        return;
    nw_kval_max_items(kv, lp, terms, 30);
    path_t ip;
    size_t i = 0;
    int all_some = 1, all_mixed = 1;
    for (const cJSON *t = terms->child; t; t = t->next, i++) {
        nw_kval_idx(ip, lp, i);
        if (!nw_kval_type(kv, ip, t, "object"))
            continue;
        opt_pattern(kv, t, ip, "id", NW_RE_CR_ID);
        opt_pattern(kv, t, ip, "ownerID", NW_RE_OWNER_ID);
        opt_enum(kv, t, ip, "instanceMatchCriteria", MATCH_CRITERIA);
        selector_tags(kv, t, ip);
        int id = HAS(t, "id"), tags = HAS(t, "tags"), imc = HAS(t, "instanceMatchCriteria");
        all_some &= tags || id || imc;
        all_mixed &= id && (tags || HAS(t, "ownerID") || imc);
    }
    if (!all_some)
        nw_kval_cel(kv, lp, "array",
                    "expected at least one, got none, ['tags', 'id', 'instanceMatchCriteria']");
    if (all_mixed)
        nw_kval_cel(
            kv, lp, "array",
            "'id' is mutually exclusive, cannot be set along with other fields in a capacity "
            "reservation selector term");
}

/* ---- spec.tags ------------------------------------------------------------------------------- */

static void check_tags(nw_kv_t *kv, const cJSON *spec)
{
    const cJSON *tags = string_map(kv, spec, "spec", "tags");
    if (!tags)
        return;
    int empty = 0, eks = 0, cluster = 0, np = 0, nc = 0, ec2nc = 0;
    for (const cJSON *e = tags->child; e; e = e->next) {
        const char *k = e->string;
        empty |= !*k;
        eks |= strcmp(k, "eks:eks-cluster-name") == 0;
        cluster |= strncmp(k, "kubernetes.io/cluster", 21) == 0;
        np |= strcmp(k, NW_LABEL_NODEPOOL) == 0;
        nc |= strcmp(k, NW_LABEL_NODECLAIM) == 0;
        ec2nc |= strcmp(k, NW_LABEL_NODECLASS) == 0;
    }
    const char *p = "spec.tags";
    if (empty)
        nw_kval_cel(kv, p, "object", "empty tag keys aren't supported");
    if (eks)
        nw_kval_cel(kv, p, "object", "tag contains a restricted tag matching eks:eks-cluster-name");
    if (cluster)
        nw_kval_cel(kv, p, "object",
                    "tag contains a restricted tag matching kubernetes.io/cluster/");
    if (np)
        nw_kval_cel(kv, p, "object",
                    "tag contains a restricted tag matching karpenter.sh/nodepool");
    if (nc)
        nw_kval_cel(kv, p, "object",
                    "tag contains a restricted tag matching karpenter.sh/nodeclaim");
    if (ec2nc)
        nw_kval_cel(kv, p, "object",
                    "tag contains a restricted tag matching karpenter.k8s.aws/ec2nodeclass");
}

/* ---- spec.kubelet ---------------------------------------------------------------------------- */

static void reserved_map(nw_kv_t *kv, const cJSON *kub, const char *name)
{
    path_t mp, kp;
    const cJSON *m = string_map(kv, kub, "spec.kubelet", name);
    if (!m)
        return;
    nw_kval_path(mp, "spec.kubelet", name);
    int badkey = 0, neg = 0;
    for (const cJSON *e = m->child; e; e = e->next) {
        badkey |= !nw_strs_in(e->string, RESERVED_KEYS);
        if (cJSON_IsString(e)) {
            nw_kval_pattern(kv, nw_kval_key(kp, mp, e->string), e->valuestring,
                            nw_kre(NW_RE_QUANTITY));
            neg |= e->valuestring[0] == '-';
        }
    }
    char msg[160];
    if (badkey) {
        snprintf(msg, sizeof msg,
                 "valid keys for %s are ['cpu','memory','ephemeral-storage','pid']", name);
        nw_kval_cel(kv, mp, "object", msg);
    }
    if (neg) {
        snprintf(msg, sizeof msg, "%s value cannot be a negative resource quantity", name);
        nw_kval_cel(kv, mp, "object", msg);
    }
}

static const cJSON *eviction_map(nw_kv_t *kv, const cJSON *kub, const char *name, int pattern)
{
    path_t mp, kp;
    const cJSON *m = string_map(kv, kub, "spec.kubelet", name);
    if (!m)
        return NULL;
    nw_kval_path(mp, "spec.kubelet", name);
    int badkey = 0;
    for (const cJSON *e = m->child; e; e = e->next) {
        badkey |= !nw_strs_in(e->string, EVICTION_KEYS);
        if (pattern && cJSON_IsString(e))
            nw_kval_pattern(kv, nw_kval_key(kp, mp, e->string), e->valuestring,
                            nw_kre(NW_RE_EVICT));
    }
    if (badkey) {
        char msg[300];
        snprintf(msg, sizeof msg,
                 "valid keys for %s are ['memory.available','nodefs.available','nodefs.inodesFree',"
                 "'imagefs.available','imagefs.inodesFree','pid.available']",
                 name);
        nw_kval_cel(kv, mp, "object", msg);
    }
    return m;
}

static void check_kubelet(nw_kv_t *kv, const cJSON *spec)
{
    const char *kp = "spec.kubelet";
    const cJSON *kub = opt(kv, spec, "spec", "kubelet", "object");
    if (!kub)
        return;
    path_t p, ip;
    const cJSON *dns = opt(kv, kub, kp, "clusterDNS", "array");
    if (dns) {
        size_t i = 0;
        nw_kval_path(p, kp, "clusterDNS");
        for (const cJSON *e = dns->child; e; e = e->next, i++)
            nw_kval_type(kv, nw_kval_idx(ip, p, i), e, "string");
    }
    opt_int(kv, kub, kp, "maxPods", 0, LLONG_MAX);
    opt_int(kv, kub, kp, "podsPerCore", 0, LLONG_MAX);
    reserved_map(kv, kub, "systemReserved");
    reserved_map(kv, kub, "kubeReserved");
    eviction_map(kv, kub, "evictionHard", 1);
    const cJSON *soft = eviction_map(kv, kub, "evictionSoft", 1);
    const cJSON *grace = eviction_map(kv, kub, "evictionSoftGracePeriod", 0);
    opt_int(kv, kub, kp, "evictionMaxPodGracePeriod", LLONG_MIN, LLONG_MAX);
    opt_int(kv, kub, kp, "imageGCHighThresholdPercent", 0, 100);
    opt_int(kv, kub, kp, "imageGCLowThresholdPercent", 0, 100);
    opt(kv, kub, kp, "cpuCFSQuota", "boolean");
    const cJSON *hi = nw_kval_get(kub, "imageGCHighThresholdPercent");
    const cJSON *lo = nw_kval_get(kub, "imageGCLowThresholdPercent");
    if (cJSON_IsNumber(hi) && cJSON_IsNumber(lo) && !(hi->valuedouble > lo->valuedouble))
        nw_kval_cel(kv, kp, "object",
                    "imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent");
    static const char *const M_SOFT =
        "evictionSoft OwnerKey does not have a matching evictionSoftGracePeriod";
    static const char *const M_GRACE =
        "evictionSoftGracePeriod OwnerKey does not have a matching evictionSoft";
    /* has(evictionSoft) ? evictionSoft.all(e, e in evictionSoftGracePeriod) : true */
    if (soft && soft->child) {
        if (!grace)
            nw_kval_cel_eval(kv, kp, "object", "no such key: evictionSoftGracePeriod", M_SOFT);
        else
            for (const cJSON *e = soft->child; e; e = e->next)
                if (!cJSON_GetObjectItemCaseSensitive(grace, e->string)) {
                    nw_kval_cel(kv, kp, "object", M_SOFT);
                    break;
                }
    }
    if (grace && grace->child) {
        if (!soft)
            nw_kval_cel_eval(kv, kp, "object", "no such key: evictionSoft", M_GRACE);
        else
            for (const cJSON *e = grace->child; e; e = e->next)
                if (!cJSON_GetObjectItemCaseSensitive(soft, e->string)) {
                    nw_kval_cel(kv, kp, "object", M_GRACE);
                    break;
                }
    }
}

/* ---- spec.blockDeviceMappings ---------------------------------------------------------------- */

static void check_bdm(nw_kv_t *kv, const cJSON *spec)
{
    const char *lp = "spec.blockDeviceMappings";
    const cJSON *bdms = opt(kv, spec, "spec", "blockDeviceMappings", "array");
    if (!bdms)
        return;
    nw_kval_max_items(kv, lp, bdms, 50);
    path_t ip, ep;
    size_t i = 0;
    int roots = 0;
    for (const cJSON *b = bdms->child; b; b = b->next, i++) {
        nw_kval_idx(ip, lp, i);
        if (!nw_kval_type(kv, ip, b, "object"))
            continue;
        opt_str(kv, b, ip, "deviceName");
        const cJSON *root = opt(kv, b, ip, "rootVolume", "boolean");
        roots += cJSON_IsTrue(root);
        const cJSON *ebs = opt(kv, b, ip, "ebs", "object");
        if (!ebs)
            continue;
        nw_kval_path(ep, ip, "ebs");
        opt_pattern(kv, ebs, ep, "volumeSize", NW_RE_VOLUME_SIZE);
        opt_enum(kv, ebs, ep, "volumeType", VOLUME_TYPES);
        opt_int(kv, ebs, ep, "iops", LLONG_MIN, LLONG_MAX);
        opt_int(kv, ebs, ep, "throughput", LLONG_MIN, LLONG_MAX);
        opt(kv, ebs, ep, "encrypted", "boolean");
        opt(kv, ebs, ep, "deleteOnTermination", "boolean");
        opt_str(kv, ebs, ep, "kmsKeyID");
        const char *snap = opt_str(kv, ebs, ep, "snapshotID");
        opt_int(kv, ebs, ep, "volumeInitializationRate", 100, 300);
        if (!HAS(ebs, "snapshotID") && !HAS(ebs, "volumeSize"))
            nw_kval_cel(kv, ep, "object", "snapshotID or volumeSize must be defined");
        if (HAS(ebs, "volumeInitializationRate") && !(snap && *snap))
            nw_kval_cel(kv, ep, "object",
                        "snapshotID must be set when volumeInitializationRate is set");
    }
    if (roots > 1)
        nw_kval_cel(kv, lp, "array", "must have only one blockDeviceMappings with rootVolume");
}

/* ---- networkInterfaces, connectionTracking, placement group, cpuOptions ------------------ */

static void check_network_interfaces(nw_kv_t *kv, const cJSON *spec)
{
    const char *lp = "spec.networkInterfaces";
    const cJSON *nis = opt(kv, spec, "spec", "networkInterfaces", "array");
    if (!nis)
        return;
    nw_kval_max_items(kv, lp, nis, 150);
    path_t ip;
    size_t i = 0;
    bool primary = false, dup = false, efa_dup = false;
    for (const cJSON *n = nis->child; n; n = n->next, i++) {
        nw_kval_idx(ip, lp, i);
        if (!nw_kval_type(kv, ip, n, "object"))
            continue;
        const cJSON *card = reqd(kv, n, ip, "networkCardIndex", "integer");
        const cJSON *dev = reqd(kv, n, ip, "deviceIndex", "integer");
        const cJSON *type = reqd(kv, n, ip, "interfaceType", "string");
        path_t fp;
        if (card)
            nw_kval_int_range(kv, nw_kval_path(fp, ip, "networkCardIndex"), card->valuedouble, 0,
                              INT_MAX);
        if (dev)
            nw_kval_int_range(kv, nw_kval_path(fp, ip, "deviceIndex"), dev->valuedouble, 0,
                              INT_MAX);
        if (type)
            nw_kval_enum(kv, nw_kval_path(fp, ip, "interfaceType"), type->valuestring, IFACE_TYPES);
        if (!card || !dev || !type)
            continue;
        if (card->valuedouble == 0 && dev->valuedouble == 0 &&
            strcmp(type->valuestring, "interface") == 0)
            primary = true;
        for (const cJSON *m = nis->child; m != n; m = m->next) {
            const cJSON *c2 = nw_kval_get(m, "networkCardIndex"),
                        *d2 = nw_kval_get(m, "deviceIndex");
            const cJSON *t2 = nw_kval_get(m, "interfaceType");
            if (!cJSON_IsNumber(c2) || !cJSON_IsNumber(d2))
                continue;
            if (c2->valuedouble == card->valuedouble && d2->valuedouble == dev->valuedouble)
                dup = true;
            if (c2->valuedouble == card->valuedouble && cJSON_IsString(t2) &&
                strcmp(t2->valuestring, "efa-only") == 0 &&
                strcmp(type->valuestring, "efa-only") == 0)
                efa_dup = true;
        }
    }
    if (cJSON_GetArraySize(nis) > 0 && !primary)
        nw_kval_cel(
            kv, lp, "array",
            "networkInterfaces must include a primary interface with interfaceType='interface'");
    if (dup || efa_dup) /* one rule upstream, so one error */
        nw_kval_cel(kv, lp, "array",
                    "networkInterfaces must not have duplicate networkCardIndex and deviceIndex "
                    "pairs, and can have at most one efa device per network card");
}

static void check_connection_tracking(nw_kv_t *kv, const cJSON *spec)
{
    const char *cp = "spec.connectionTracking";
    const cJSON *ct = opt(kv, spec, "spec", "connectionTracking", "object");
    if (!ct)
        return;
    opt_int(kv, ct, cp, "tcpEstablishedTimeout", 60, 432000);
    opt_int(kv, ct, cp, "udpStreamTimeout", 60, 180);
    opt_int(kv, ct, cp, "udpTimeout", 30, 60);
    if (!HAS(ct, "tcpEstablishedTimeout") && !HAS(ct, "udpStreamTimeout") && !HAS(ct, "udpTimeout"))
        nw_kval_cel(
            kv, cp, "object",
            "at least one of tcpEstablishedTimeout, udpStreamTimeout, or udpTimeout must be set");
}

static void check_placement_group(nw_kv_t *kv, const cJSON *spec)
{
    const char *pp = "spec.placementGroupSelector";
    const cJSON *pg = opt(kv, spec, "spec", "placementGroupSelector", "object");
    if (!pg)
        return;
    path_t p;
    const char *name = opt_str(kv, pg, pp, "name");
    if (name)
        nw_kval_min_len(kv, nw_kval_path(p, pp, "name"), name, 1);
    opt_pattern(kv, pg, pp, "id", NW_RE_PG_ID);
    if (!HAS(pg, "name") && !HAS(pg, "id"))
        nw_kval_cel(kv, pp, "object", "expected at least one, got none, ['name', 'id']");
    if (HAS(pg, "name") && HAS(pg, "id"))
        nw_kval_cel(kv, pp, "object", "'name' and 'id' are mutually exclusive");
}

/* ---- spec ------------------------------------------------------------------------------------ */

/* spec.metadataOptions; a warning (into res, when given) for IMDSv1 reachable from the
 * node's pods. */
static void check_metadata_options(nw_kv_t *kv, const cJSON *mo, nw_admit_result_t *res)
{
    const char *mp = "spec.metadataOptions";
    opt_enum(kv, mo, mp, "httpEndpoint", ENABLED_DISABLED);
    opt_enum(kv, mo, mp, "httpProtocolIPv6", ENABLED_DISABLED);
    opt_int(kv, mo, mp, "httpPutResponseHopLimit", 1, 64);
    opt_enum(kv, mo, mp, "httpTokens", TOKENS);
    /* IMDSv1 reachable from the node's pods: admitted (the CRD allows it), said */
    const cJSON *tok = nw_kval_get(mo, "httpTokens");
    const cJSON *hop = nw_kval_get(mo, "httpPutResponseHopLimit");
    const cJSON *ep = nw_kval_get(mo, "httpEndpoint");
    if (res && cJSON_IsString(tok) && strcmp(tok->valuestring, "optional") == 0 &&
        cJSON_IsNumber(hop) && hop->valuedouble > 1 &&
        !(cJSON_IsString(ep) && strcmp(ep->valuestring, "disabled") == 0))
        nw_admit_warn(res,
                      "%s: httpTokens optional with httpPutResponseHopLimit %.0f: every pod "
                      "on these nodes can read the instance role's credentials from IMDSv1 "
                      "without a token; use httpTokens required, or a hop limit of 1",
                      mp, hop->valuedouble);
}

/* The CEL rules on spec itself (x-kubernetes-validations of spec in the CRD): one of
 * role and instanceProfile, amiFamily agreeing with the aliases, amiFamily without an
 * alias. */
static void check_spec_rules(nw_kv_t *kv, const cJSON *spec)
{
    if (HAS(spec, "role") == HAS(spec, "instanceProfile"))
        nw_kval_cel(kv, "spec", "object",
                    "must specify exactly one of ['role', 'instanceProfile']");
    const cJSON *terms = nw_kval_get(spec, "amiSelectorTerms");
    const cJSON *fam = nw_kval_get(spec, "amiFamily");
    bool any_alias = false;
    static const struct {
        const char *alias, *family, *msg;
    } rules[] = {
        {"al2", "AL2", "if set, amiFamily must be 'AL2' or 'Custom' when using an AL2 alias"},
        {"al2023", "AL2023",
         "if set, amiFamily must be 'AL2023' or 'Custom' when using an AL2023 alias"},
        {"bottlerocket", "Bottlerocket",
         "if set, amiFamily must be 'Bottlerocket' or 'Custom' when using a Bottlerocket alias"},
        {"windows2019", "Windows2019",
         "if set, amiFamily must be 'Windows2019' or 'Custom' when using a Windows2019 alias"},
        {"windows2022", "Windows2022",
         "if set, amiFamily must be 'Windows2022' or 'Custom' when using a Windows2022 alias"},
        {"windows2025", "Windows2025",
         "if set, amiFamily must be 'Windows2025' or 'Custom' when using a Windows2025 alias"},
    };
    if (cJSON_IsArray(terms)) {
        for (const cJSON *t = terms->child; t; t = t->next)
            any_alias |= HAS(t, "alias");
        for (size_t r = 0; r < sizeof rules / sizeof rules[0]; r++) {
            bool match = false;
            for (const cJSON *t = terms->child; t && !match; t = t->next) {
                const cJSON *a = nw_kval_get(t, "alias");
                if (!cJSON_IsString(a))
                    continue;
                /* x.alias.find('^[^@]+') */
                size_t fl = strcspn(a->valuestring, "@");
                match = fl == strlen(rules[r].alias) &&
                        strncmp(a->valuestring, rules[r].alias, fl) == 0;
            }
            if (match && cJSON_IsString(fam) && strcmp(fam->valuestring, "Custom") != 0 &&
                strcmp(fam->valuestring, rules[r].family) != 0)
                nw_kval_cel(kv, "spec", "object", rules[r].msg);
        }
        if (!any_alias && !fam)
            nw_kval_cel(kv, "spec", "object",
                        "must specify amiFamily if amiSelectorTerms does not contain an alias");
    }
}

nw_rc_t nw_api_ec2nodeclass_validate(const cJSON *obj, const cJSON *old, nw_kv_t *kv,
                                     nw_admit_result_t *res)
{
    (void)old;
    const cJSON *spec = nw_kval_get(obj, "spec");
    if (!spec) /* the top-level schema does not require spec (quirk 17) */
        return NW_OK;
    if (!nw_kval_type(kv, "spec", spec, "object"))
        return kv->oom ? NW_ENOMEM : NW_OK;
    path_t p;
    check_ami_terms(kv, spec);
    opt_enum(kv, spec, "spec", "amiFamily", AMI_FAMILIES);
    check_subnet_terms(kv, spec);
    check_sg_terms(kv, spec);
    check_cr_terms(kv, spec);
    check_placement_group(kv, spec);
    const char *role = opt_str(kv, spec, "spec", "role");
    if (role && !*role)
        nw_kval_cel_str(kv, "spec.role", role, "role cannot be empty");
    const char *ip = opt_str(kv, spec, "spec", "instanceProfile");
    if (ip && !*ip)
        nw_kval_cel_str(kv, "spec.instanceProfile", ip, "instanceProfile cannot be empty");
    opt_str(kv, spec, "spec", "userData");
    opt_str(kv, spec, "spec", "context");
    check_tags(kv, spec);
    check_kubelet(kv, spec);
    check_bdm(kv, spec);
    opt_enum(kv, spec, "spec", "instanceStorePolicy", STORE_POLICIES);
    check_network_interfaces(kv, spec);
    opt(kv, spec, "spec", "detailedMonitoring", "boolean");
    opt(kv, spec, "spec", "associatePublicIPAddress", "boolean");
    opt_int(kv, spec, "spec", "ipPrefixCount", 0, LLONG_MAX);
    const cJSON *mo = opt(kv, spec, "spec", "metadataOptions", "object");
    if (mo)
        check_metadata_options(kv, mo, res);
    check_connection_tracking(kv, spec);
    const cJSON *cpu = opt(kv, spec, "spec", "cpuOptions", "object");
    if (cpu)
        opt_enum(kv, cpu, nw_kval_path(p, "spec", "cpuOptions"), "nestedVirtualization",
                 ENABLED_DISABLED);
    check_spec_rules(kv, spec);
    nw_ec2nodeclass_warn(obj, res);
    return kv->oom ? NW_ENOMEM : NW_OK;
}
