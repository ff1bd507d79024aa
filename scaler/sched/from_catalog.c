/* scaler/sched/from_catalog.c — catalog types into a scheduling snapshot; see from_catalog.h. */
#include <stdio.h>
#include <string.h>

#include "scaler/sched/from_catalog.h"

static void to_res(const nw_cat_res_t *r, nw_sched_res_t *out)
{
    memset(out, 0, sizeof *out);
    out->v[NW_SR_CPU] = r->cpu_m;
    out->v[NW_SR_MEMORY] = r->memory_bytes * 1000;
    out->v[NW_SR_EPHEMERAL] = r->ephemeral_bytes * 1000;
    out->v[NW_SR_PODS] = r->pods * 1000;
    out->v[NW_SR_NVIDIA_GPU] = r->nvidia_gpu * 1000;
    out->v[NW_SR_AMD_GPU] = r->amd_gpu * 1000;
    out->v[NW_SR_NEURON] = r->neuron * 1000;
    out->v[NW_SR_NEURONCORE] = r->neuroncore * 1000;
    /* the Neuron device plugin advertises each device as aws.amazon.com/neuron and as
     * aws.amazon.com/neurondevice (Karpenter models only the first) */
    out->v[NW_SR_NEURONDEVICE] = r->neuron * 1000;
    out->v[NW_SR_GAUDI] = r->gaudi * 1000;
    out->v[NW_SR_EFA] = r->efa * 1000;
}

nw_rc_t nw_from_catalog_add_type(nw_sched_snap_t *s, const nw_catalog_t *c, const nw_itype_t *t,
                                 const nw_ice_t *ice, int64_t now, const nw_overhead_opts_t *o,
                                 nw_err_t *err)
{
    nw_overhead_opts_t def;
    if (!o) {
        nw_catalog_overhead_opts_default(&def);
        o = &def;
    }
    nw_cat_label_t lab[64];
    int n = nw_catalog_itype_labels(t, lab, 63);
    const char *keys[64], *vals[64];
    for (int i = 0; i < n; i++) {
        keys[i] = lab[i].key;
        vals[i] = lab[i].value;
    }
    const char *region = nw_catalog_region(c);
    if (region && *region) {
        keys[n] = "topology.kubernetes.io/region";
        vals[n++] = region;
    }
    nw_cat_res_t cap, alloc;
    nw_catalog_itype_capacity(t, o, &cap);
    nw_catalog_itype_allocatable(t, o, &alloc);
    nw_sched_res_t scap, salloc;
    to_res(&cap, &scap);
    to_res(&alloc, &salloc);
    nw_offering_t offs[NW_CATALOG_MAX_OFFERINGS];
    int no = nw_catalog_offerings(t, ice, now, offs, NW_CATALOG_MAX_OFFERINGS);
    nw_sched_offering_t so[NW_SCHED_MAX_OFFERINGS];
    int k = 0;
    for (int i = 0; i < no && k < NW_SCHED_MAX_OFFERINGS; i++, k++) {
        memset(&so[k], 0, sizeof so[k]);
        memcpy(so[k].zone, offs[i].zone, sizeof so[k].zone);
        memcpy(so[k].zone_id, offs[i].zone_id, sizeof so[k].zone_id);
        memcpy(so[k].capacity_type, offs[i].capacity_type, sizeof so[k].capacity_type);
        so[k].price = offs[i].price;
        so[k].available = offs[i].available != 0;
    }
    return nw_snap_node_add_itype_raw(s, t->name, keys, vals, n, &scap, &salloc, t->bare_metal != 0,
                                      so, k, err);
}

nw_rc_t nw_from_catalog_add(nw_sched_snap_t *s, const nw_catalog_t *c, const nw_ice_t *ice,
                            int64_t now, const nw_overhead_opts_t *o, nw_err_t *err)
{
    for (size_t i = 0; i < nw_catalog_len(c); i++) {
        nw_rc_t rc = nw_from_catalog_add_type(s, c, nw_catalog_at(c, i), ice, now, o, err);
        if (rc != NW_OK)
            return rc;
    }
    return NW_OK;
}

nw_rc_t nw_from_catalog_add_class(nw_sched_snap_t *s, const nw_catalog_t *c, const char *name,
                                  const nw_overhead_opts_t *o, nw_err_t *err)
{
    for (size_t i = 0; i < nw_catalog_len(c); i++) {
        const nw_itype_t *t = nw_catalog_at(c, i);
        nw_cat_res_t cap, alloc;
        nw_catalog_itype_capacity(t, o, &cap);
        nw_catalog_itype_allocatable(t, o, &alloc);
        nw_sched_res_t scap, salloc;
        to_res(&cap, &scap);
        to_res(&alloc, &salloc);
        nw_err_t e = {0};
        nw_rc_t rc = nw_snap_node_set_class_res(s, name, t->name, &scap, &salloc, &e);
        if (rc == NW_ENOMEM)
            return nw_err_set(err, rc, "", "out of memory");
    }
    return NW_OK;
}

nw_rc_t nw_from_catalog_load(nw_sched_snap_t *s, const char *json, size_t len, const char *region,
                             const char *const *zones, int nzones, nw_err_t *err)
{
    return nw_from_catalog_load_classes(s, json, len, region, zones, nzones, NULL, NULL, 0, err);
}

nw_rc_t nw_from_catalog_load_classes(nw_sched_snap_t *s, const char *json, size_t len,
                                     const char *region, const char *const *zones, int nzones,
                                     const nw_overhead_opts_t *dflt,
                                     const nw_sched_class_opts_t *classes, int nclasses,
                                     nw_err_t *err)
{
    nw_catalog_t *c = NULL;
    nw_rc_t rc = json ? nw_catalog_new_from_json(json, len, region, &c, err)
                      : nw_catalog_new_embedded(region, &c, err);
    if (rc != NW_OK)
        return rc;
    nw_catalog_zone_t zl[16];
    int nz = 0;
    if (nzones > 16)
        nzones = 16;
    for (int i = 0; i < nzones; i++, nz++) {
        memset(&zl[nz], 0, sizeof zl[nz]);
        /* "us-east-1a=use1-az6": the zone and its id */
        const char *eq = strchr(zones[i], '=');
        snprintf(zl[nz].name, sizeof zl[nz].name, "%.*s",
                 (int)(eq ? (size_t)(eq - zones[i]) : strlen(zones[i])), zones[i]);
        if (eq)
            snprintf(zl[nz].id, sizeof zl[nz].id, "%s", eq + 1);
    }
    if (nz == 0) {
        for (int i = 0; i < 3; i++, nz++) {
            memset(&zl[nz], 0, sizeof zl[nz]);
            snprintf(zl[nz].name, sizeof zl[nz].name, "%s%c", region, 'a' + i);
        }
    }
    rc = nw_catalog_set_zones(c, zl, nz, err);
    if (rc == NW_OK)
        rc = nw_from_catalog_add(s, c, NULL, 0, dflt, err);
    for (int i = 0; i < nclasses && rc == NW_OK; i++)
        rc = nw_from_catalog_add_class(s, c, classes[i].name, &classes[i].o, err);
    nw_catalog_free(c);
    return rc;
}
