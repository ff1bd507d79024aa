/* scaler/cloud/kubelet.c — an EC2NodeClass's kubelet settings for the allocatable math; see
 * kubelet.h. */
#include "scaler/cloud/kubelet.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/quantity.h"
#include "common/json.h"

static const struct {
    const char *name, *alias;
    nw_ami_family_t f;
} FAMILIES[] = {
    {"AL2", "al2", NW_AMI_AL2},
    {"AL2023", "al2023", NW_AMI_AL2023},
    {"Bottlerocket", "bottlerocket", NW_AMI_BOTTLEROCKET},
    {"Windows2019", "windows2019", NW_AMI_WINDOWS},
    {"Windows2022", "windows2022", NW_AMI_WINDOWS},
    {"Windows2025", "windows2025", NW_AMI_WINDOWS},
    {"Custom", NULL, NW_AMI_CUSTOM},
};
#define NFAM (sizeof FAMILIES / sizeof FAMILIES[0])

nw_ami_family_t nw_kubelet_ami_family(const cJSON *nc)
{
    const cJSON *spec = nw_json_get(nc, "spec");
    const char *fam = nw_json_str(spec, "amiFamily");
    if (fam) {
        for (size_t i = 0; i < NFAM; i++)
            if (strcmp(FAMILIES[i].name, fam) == 0)
                return FAMILIES[i].f;
        return NW_AMI_CUSTOM;
    }
    const cJSON *t;
    cJSON_ArrayForEach(t, nw_json_get(spec, "amiSelectorTerms"))
    {
        const char *alias = nw_json_str(t, "alias");
        if (!alias || !*alias)
            continue;
        const char *at = strchr(alias, '@');
        size_t n = at ? (size_t)(at - alias) : strlen(alias);
        for (size_t i = 0; i < NFAM; i++)
            if (FAMILIES[i].alias && strlen(FAMILIES[i].alias) == n &&
                strncmp(FAMILIES[i].alias, alias, n) == 0)
                return FAMILIES[i].f;
        return NW_AMI_CUSTOM;
    }
    return NW_AMI_CUSTOM;
}

const char *nw_kubelet_ami_family_name(nw_ami_family_t f)
{
    switch (f) {
    case NW_AMI_AL2:
        return "AL2";
    case NW_AMI_AL2023:
        return "AL2023";
    case NW_AMI_BOTTLEROCKET:
        return "Bottlerocket";
    case NW_AMI_WINDOWS:
        return "Windows";
    default:
        return "Custom";
    }
}

/* a quantity as a whole number of base units (Quantity.Value() rounds up) or millis */
static NW_MUST_USE nw_rc_t quantity(const cJSON *v, const char *path, int milli, int64_t *out,
                                    nw_err_t *err)
{
    nw_quantity_t q;
    nw_err_t e = {0};
    if (!cJSON_IsString(v))
        return nw_err_set(err, NW_EINVAL, path, "must be a quantity string");
    if (nw_quantity_parse(v->valuestring, &q, &e) != NW_OK)
        return nw_err_set(err, NW_EINVAL, path, "%s", e.msg);
    *out = milli ? q.milli : nw_quantity_value(q);
    return NW_OK;
}

static NW_MUST_USE nw_rc_t resource_list(const cJSON *kub, const char *key, nw_kubelet_rl_t *rl,
                                         nw_err_t *err)
{
    const cJSON *m = nw_json_get(kub, key);
    if (!m)
        return NW_OK;
    char path[128];
    if (!cJSON_IsObject(m)) {
        snprintf(path, sizeof path, "spec.kubelet.%s", key);
        return nw_err_set(err, NW_EINVAL, path, "must be an object");
    }
    const cJSON *e;
    cJSON_ArrayForEach(e, m)
    {
        snprintf(path, sizeof path, "spec.kubelet.%s.%s", key, e->string);
        nw_rc_t rc = NW_OK;
        if (strcmp(e->string, "cpu") == 0) {
            rc = quantity(e, path, 1, &rl->cpu_m, err);
            rl->has_cpu = 1;
        } else if (strcmp(e->string, "memory") == 0) {
            rc = quantity(e, path, 0, &rl->memory_bytes, err);
            rl->has_memory = 1;
        } else if (strcmp(e->string, "ephemeral-storage") == 0) {
            rc = quantity(e, path, 0, &rl->ephemeral_bytes, err);
            rl->has_ephemeral = 1;
        } else if (cJSON_IsString(e)) {
            int64_t ignored; /* pid: not a scheduled resource */
            rc = quantity(e, path, 1, &ignored, err);
        }
        if (rc != NW_OK)
            return rc;
    }
    return NW_OK;
}

/* mustParsePercentage / computeEvictionSignal's input */
static NW_MUST_USE nw_rc_t signal(const cJSON *m, const char *key, nw_eviction_signal_t *s,
                                  nw_err_t *err)
{
    const cJSON *v = nw_json_get(m, key);
    if (!v)
        return NW_OK;
    char path[128];
    snprintf(path, sizeof path, "spec.kubelet.evictionHard.%s", key);
    if (!cJSON_IsString(v))
        return nw_err_set(err, NW_EINVAL, path, "must be a string");
    const char *t = v->valuestring;
    size_t n = strlen(t);
    memset(s, 0, sizeof *s);
    s->set = 1;
    if (n > 0 && t[n - 1] == '%') {
        char *end;
        double p = strtod(t, &end);
        if (end != t + n - 1 || !isfinite(p) || p < 0 || p > 100)
            return nw_err_set(err, NW_EINVAL, path, "not a percentage between 0%% and 100%%: %s",
                              t);
        s->percent = 1;
        s->pct = p == 100 ? 0 : p; /* 100% disables the threshold */
        return NW_OK;
    }
    return quantity(v, path, 0, &s->bytes, err);
}

static NW_MUST_USE nw_rc_t int_field(const cJSON *kub, const char *key, int64_t *out, nw_err_t *err)
{
    const cJSON *v = nw_json_get(kub, key);
    if (!v)
        return NW_OK;
    char path[128];
    snprintf(path, sizeof path, "spec.kubelet.%s", key);
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 2147483647 ||
        v->valuedouble != floor(v->valuedouble))
        return nw_err_set(err, NW_EINVAL, path, "must be a non-negative 32-bit integer");
    *out = (int64_t)v->valuedouble;
    return NW_OK;
}

int nw_kubelet_ami_default_bdms(nw_ami_family_t f, nw_ami_bdm_t out[2])
{
    switch (f) {
    case NW_AMI_AL2:
    case NW_AMI_AL2023:
        out[0] = (nw_ami_bdm_t){"/dev/xvda", 20};
        return 1;
    case NW_AMI_BOTTLEROCKET:
        out[0] = (nw_ami_bdm_t){"/dev/xvda", 4};
        out[1] = (nw_ami_bdm_t){"/dev/xvdb", 20};
        return 2;
    case NW_AMI_WINDOWS:
        out[0] = (nw_ami_bdm_t){"/dev/sda1", 50};
        return 1;
    default:
        return 0;
    }
}

const char *nw_kubelet_ami_ephemeral_device(nw_ami_family_t f)
{
    switch (f) {
    case NW_AMI_AL2:
    case NW_AMI_AL2023:
        return "/dev/xvda";
    case NW_AMI_BOTTLEROCKET:
        return "/dev/xvdb";
    case NW_AMI_WINDOWS:
        return "/dev/sda1";
    default:
        return NULL;
    }
}

/* the volumeSize of mapping i (bytes; 0 when unset) */
static NW_MUST_USE nw_rc_t bdm_size(const cJSON *b, int i, int64_t *out, nw_err_t *err)
{
    *out = 0;
    const cJSON *v = nw_json_get(nw_json_get(b, "ebs"), "volumeSize");
    if (!v)
        return NW_OK;
    char path[96];
    snprintf(path, sizeof path, "spec.blockDeviceMappings[%d].ebs.volumeSize", i);
    nw_rc_t rc = quantity(v, path, 0, out, err);
    if (rc == NW_OK && *out <= 0)
        return nw_err_set(err, NW_EINVAL, path, "must be a positive quantity");
    return rc;
}

/* types.go ephemeralStorage() less the RAID0 case (the type's, nw_catalog_itype_capacity) */
static NW_MUST_USE nw_rc_t ephemeral(const cJSON *spec, nw_ami_family_t f, int64_t *out,
                                     nw_err_t *err)
{
    const cJSON *bdms = nw_json_get(spec, "blockDeviceMappings"), *b;
    nw_rc_t rc;
    int64_t sz;
    int n = cJSON_IsArray(bdms) ? cJSON_GetArraySize(bdms) : 0, i = 0;
    if (n > 0) {
        cJSON_ArrayForEach(b, bdms)
        {
            if ((rc = bdm_size(b, i, &sz, err)) != NW_OK)
                return rc;
            if (cJSON_IsTrue(nw_json_get(b, "rootVolume")) && sz > 0) {
                *out = sz;
                return NW_OK;
            }
            i++;
        }
        if (f == NW_AMI_CUSTOM) {
            if ((rc = bdm_size(cJSON_GetArrayItem(bdms, n - 1), n - 1, &sz, err)) != NW_OK)
                return rc;
            *out = sz > 0 ? sz : INT64_C(20) << 30;
            return NW_OK;
        }
        const char *dev = nw_kubelet_ami_ephemeral_device(f);
        i = 0;
        cJSON_ArrayForEach(b, bdms)
        {
            const char *d = nw_json_str(b, "deviceName");
            if ((rc = bdm_size(b, i++, &sz, err)) != NW_OK)
                return rc;
            if (d && dev && strcmp(d, dev) == 0 && sz > 0) {
                *out = sz;
                return NW_OK;
            }
        }
    }
    nw_ami_bdm_t def[2];
    int nd = nw_kubelet_ami_default_bdms(f, def);
    const char *dev = nw_kubelet_ami_ephemeral_device(f);
    *out = INT64_C(20) << 30;
    for (int k = 0; k < nd; k++)
        if (dev && strcmp(def[k].device, dev) == 0)
            *out = def[k].gib << 30;
    return NW_OK;
}

nw_rc_t nw_kubelet_overhead(const cJSON *nc, nw_overhead_opts_t *o, nw_err_t *err)
{
    if (!nc)
        return NW_OK;
    nw_overhead_opts_t w = *o;
    w.family = nw_kubelet_ami_family(nc);
    const cJSON *kub = nw_json_get(nw_json_get(nc, "spec"), "kubelet");
    if (kub && !cJSON_IsObject(kub))
        return nw_err_set(err, NW_EINVAL, "spec.kubelet", "must be an object");
    nw_rc_t rc;
    if ((rc = int_field(kub, "maxPods", &w.max_pods, err)) != NW_OK ||
        (rc = int_field(kub, "podsPerCore", &w.pods_per_core, err)) != NW_OK ||
        (rc = resource_list(kub, "kubeReserved", &w.kube_reserved, err)) != NW_OK ||
        (rc = resource_list(kub, "systemReserved", &w.system_reserved, err)) != NW_OK)
        return rc;
    const cJSON *eh = nw_json_get(kub, "evictionHard");
    if (eh && !cJSON_IsObject(eh))
        return nw_err_set(err, NW_EINVAL, "spec.kubelet.evictionHard", "must be an object");
    if ((rc = signal(eh, "memory.available", &w.evict_memory, err)) != NW_OK ||
        (rc = signal(eh, "nodefs.available", &w.evict_nodefs, err)) != NW_OK)
        return rc;
    const cJSON *spec = nw_json_get(nc, "spec");
    if ((rc = ephemeral(spec, w.family, &w.ephemeral_bytes, err)) != NW_OK)
        return rc;
    const char *isp = nw_json_str(spec, "instanceStorePolicy");
    w.raid0 = isp && strcmp(isp, "RAID0") == 0;
    *o = w;
    return NW_OK;
}
