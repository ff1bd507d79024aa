/* scaler/cloud/catalog.c — the instance-type catalog and its allocatable math; see catalog.h. */
#include "scaler/cloud/catalog.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/embed.h"

NW_EMBED_DECL(catalog_json);
NW_EMBED_DECL(prices_json);

#define MAX_ZONES 16

struct nw_catalog {
    char region[64];
    nw_itype_t *t;
    size_t n;
    nw_catalog_zone_t zones[MAX_ZONES];
    int nzones;
    /* what is known about prices, also of types not in t (a later refresh may add
     * them): on-demand by type (zone ""), spot by type and zone; both sorted */
    nw_price_t *od, *spot;
    size_t nod, nspot;
    int spot_known; /* spot prices were set (a refresh succeeded) */
    /* bumped by every change to the types, offerings or prices (nw_catalog_version);
     * zones_at: the version the zones were last set at */
    _Atomic uint64_t version;
    uint64_t zones_at;
};

/* ---- names ---------------------------------------------------------------------- */

void nw_catalog_lower_kebab(const char *in, char *out, size_t len)
{
    size_t j = 0;
    for (size_t i = 0; in[i] && j + 1 < len; i++) {
        unsigned char ch = (unsigned char)in[i];
        out[j++] = ch == ' ' || ch == '_' ? '-' : (char)tolower(ch);
    }
    out[j] = 0;
}

/* Fill family/category/size/generation from the name. */
int nw_catalog_itype_split_name(nw_itype_t *t)
{
    const char *dot = strchr(t->name, '.');
    if (!dot || dot == t->name || !dot[1])
        return -1;
    snprintf(t->family, sizeof t->family, "%.*s", (int)(dot - t->name), t->name);
    snprintf(t->size, sizeof t->size, "%s", dot + 1);
    size_t i = 0;
    while (t->family[i] && isalpha((unsigned char)t->family[i]))
        i++;
    snprintf(t->category, sizeof t->category, "%.*s", (int)i, t->family);
    t->generation = 0;
    while (isdigit((unsigned char)t->family[i]))
        t->generation = t->generation * 10 + (t->family[i++] - '0');
    t->bare_metal = strncmp(t->size, "metal", 5) == 0;
    return 0;
}

/* ---- prices ---------------------------------------------------------------------------- */

static int price_cmp(const void *a, const void *b)
{
    const nw_price_t *x = a, *y = b;
    int r = strcmp(x->type, y->type);
    return r ? r : strcmp(x->zone, y->zone);
}

static const nw_price_t *price_find(const nw_price_t *v, size_t n, const char *type,
                                    const char *zone)
{
    nw_price_t key = {0};
    snprintf(key.type, sizeof key.type, "%s", type);
    snprintf(key.zone, sizeof key.zone, "%s", zone ? zone : "");
    return n ? bsearch(&key, v, n, sizeof *v, price_cmp) : NULL;
}

/* Merge add[0..n) into the sorted table *v: an added key replaces the old entry, old keys
 * not added stay (Karpenter's lo.Assign of the old and the new maps). Entries without a
 * positive price or a type (or, when zonal, a zone) are skipped. */
static NW_MUST_USE nw_rc_t price_merge(nw_price_t **v, size_t *nv, const nw_price_t *add, size_t n,
                                       int zonal, nw_err_t *err)
{
    nw_price_t *m = malloc((*nv + n + 1) * sizeof *m);
    if (!m)
        return nw_err_set(err, NW_ENOMEM, "catalog", "out of memory");
    size_t k = 0, u = 0;
    for (size_t i = 0; i < n; i++) {
        if (!(add[i].price > 0) || !add[i].type[0] || (zonal && !add[i].zone[0]))
            continue;
        m[k] = add[i];
        if (!zonal)
            m[k].zone[0] = 0;
        k++;
    }
    qsort(m, k, sizeof *m, price_cmp);
    for (size_t i = 0; i < k; i++) {
        if (u && price_cmp(&m[u - 1], &m[i]) == 0)
            m[u - 1] = m[i];
        else
            m[u++] = m[i];
    }
    size_t added = u;
    for (size_t i = 0; i < *nv; i++)
        if (!price_find(m, added, (*v)[i].type, (*v)[i].zone))
            m[u++] = (*v)[i];
    qsort(m, u, sizeof *m, price_cmp);
    free(*v);
    *v = m;
    *nv = u;
    return NW_OK;
}

/* Price every type and offering from the tables: on-demand from the on-demand table (a
 * type's own figure when the table has none), spot from the spot table once spot prices
 * are known (the on-demand price before that, and in a zone without a spot price). */
static void apply_prices(nw_catalog_t *c)
{
    atomic_fetch_add(&c->version, 1);
    for (size_t i = 0; i < c->n; i++) {
        nw_itype_t *t = &c->t[i];
        const nw_price_t *p = price_find(c->od, c->nod, t->name, "");
        if (p)
            t->od_price = p->price;
        for (int k = 0; k < t->noffer; k++) {
            nw_offering_t *o = &t->offerings[k];
            o->price = t->od_price;
            if (strcmp(o->capacity_type, "spot") == 0 && c->spot_known) {
                const nw_price_t *sp = price_find(c->spot, c->nspot, t->name, o->zone);
                if (sp)
                    o->price = sp->price;
            }
        }
    }
}

nw_rc_t nw_catalog_set_od_prices(nw_catalog_t *c, const nw_price_t *p, size_t n, nw_err_t *err)
{
    nw_rc_t rc = price_merge(&c->od, &c->nod, p, n, 0, err);
    if (rc == NW_OK)
        apply_prices(c);
    return rc;
}

nw_rc_t nw_catalog_set_spot_prices(nw_catalog_t *c, const nw_price_t *p, size_t n, nw_err_t *err)
{
    nw_rc_t rc = price_merge(&c->spot, &c->nspot, p, n, 1, err);
    if (rc == NW_OK) {
        c->spot_known = 1;
        apply_prices(c);
    }
    return rc;
}

double nw_catalog_od_price(const nw_catalog_t *c, const char *type)
{
    const nw_price_t *p = price_find(c->od, c->nod, type, "");
    if (p)
        return p->price;
    const nw_itype_t *t = nw_catalog_find(c, type);
    return t ? t->od_price : 0;
}

uint64_t nw_catalog_version(const nw_catalog_t *c)
{
    return c ? atomic_load(&((nw_catalog_t *)c)->version) : 0;
}

size_t nw_catalog_price_count(const nw_catalog_t *c, int spot)
{
    return spot ? c->nspot : c->nod;
}

size_t nw_catalog_unpriced(const nw_catalog_t *c, const char **names, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < c->n; i++)
        if (!(c->t[i].od_price > 0)) {
            if (names && n < max)
                names[n] = c->t[i].name;
            n++;
        }
    return n;
}

nw_rc_t nw_catalog_load_prices(nw_catalog_t *c, const char *json, size_t len, nw_err_t *err)
{
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(json, len, &end, 0);
    const cJSON *od = cJSON_GetObjectItemCaseSensitive(root, "onDemand");
    nw_rc_t rc = NW_OK;
    if (!cJSON_IsObject(od) || !od->child) {
        cJSON_Delete(root);
        return nw_err_set(err, NW_EPARSE, "onDemand", "price table: missing or empty object");
    }
    size_t n = (size_t)cJSON_GetArraySize(od), k = 0;
    nw_price_t *v = calloc(n, sizeof *v);
    if (!v) {
        cJSON_Delete(root);
        return nw_err_set(err, NW_ENOMEM, "catalog", "out of memory");
    }
    const cJSON *e;
    cJSON_ArrayForEach(e, od)
    {
        if (!cJSON_IsNumber(e) || !(e->valuedouble > 0) || strlen(e->string) >= sizeof v->type) {
            rc = nw_err_set(err, NW_EPARSE, "onDemand",
                            "price table: onDemand.%s: not a positive number", e->string);
            break;
        }
        snprintf(v[k].type, sizeof v[k].type, "%s", e->string);
        v[k++].price = e->valuedouble;
    }
    if (rc == NW_OK)
        rc = nw_catalog_set_od_prices(c, v, k, err);
    free(v);
    cJSON_Delete(root);
    return rc;
}

/* ---- JSON loading -------------------------------------------------------------------- */

static int jint(cJSON *o, const char *k, int64_t *out)
{
    cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!v)
        return 0;
    if (!cJSON_IsNumber(v) || v->valuedouble < 0)
        return -1;
    *out = (int64_t)v->valuedouble;
    return 1;
}

static int jstr(cJSON *o, const char *k, char *out, size_t len)
{
    cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!v)
        return 0;
    if (!cJSON_IsString(v))
        return -1;
    snprintf(out, len, "%s", v->valuestring);
    return 1;
}

/* The type's devices: gpu, accel and media (each with a name and a positive count). */
static NW_MUST_USE nw_rc_t parse_devices(cJSON *o, nw_itype_t *t, const char *path, nw_err_t *err)
{
    int64_t v;
    char buf[64];
    cJSON *g = cJSON_GetObjectItemCaseSensitive(o, "gpu");
    if (g) {
        if (jstr(g, "name", buf, sizeof buf) != 1 || jint(g, "count", &v) != 1 || v <= 0)
            return nw_err_set(err, NW_EPARSE, path, "%s: gpu needs name and count", t->name);
        nw_catalog_lower_kebab(buf, t->gpu_name, sizeof t->gpu_name);
        t->gpu_count = (int)v;
        if (jstr(g, "manufacturer", buf, sizeof buf) == 1)
            nw_catalog_lower_kebab(buf, t->gpu_manufacturer, sizeof t->gpu_manufacturer);
        jint(g, "memMiB", &t->gpu_memory_mib);
    }
    cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "accel");
    if (a) {
        if (jstr(a, "name", buf, sizeof buf) != 1 || jint(a, "count", &v) != 1 || v <= 0)
            return nw_err_set(err, NW_EPARSE, path, "%s: accel needs name and count", t->name);
        nw_catalog_lower_kebab(buf, t->accel_name, sizeof t->accel_name);
        t->accel_count = (int)v;
        if (jstr(a, "manufacturer", buf, sizeof buf) == 1)
            nw_catalog_lower_kebab(buf, t->accel_manufacturer, sizeof t->accel_manufacturer);
        if (jint(a, "cores", &v) == 1)
            t->neuron_cores = (int)v;
        jint(a, "memMiB", &t->accel_memory_mib);
    }
    cJSON *m = cJSON_GetObjectItemCaseSensitive(o, "media");
    if (m) {
        if (jstr(m, "name", buf, sizeof buf) != 1 || jint(m, "count", &v) != 1 || v <= 0)
            return nw_err_set(err, NW_EPARSE, path, "%s: media needs name and count", t->name);
        nw_catalog_lower_kebab(buf, t->media_name, sizeof t->media_name);
        t->media_count = (int)v;
        if (jstr(m, "manufacturer", buf, sizeof buf) == 1)
            nw_catalog_lower_kebab(buf, t->media_manufacturer, sizeof t->media_manufacturer);
    }
    return NW_OK;
}

/* The compatibility facts (DescribeInstanceTypes' names) of a type's "features". */
static NW_MUST_USE nw_rc_t parse_features(cJSON *f, nw_itype_t *t, const char *path, nw_err_t *err)
{
    const cJSON *cards = cJSON_GetObjectItemCaseSensitive(f, "networkCards");
    const cJSON *ena = cJSON_GetObjectItemCaseSensitive(f, "enaSupported");
    const cJSON *nv = cJSON_GetObjectItemCaseSensitive(f, "nestedVirtualization");
    const cJSON *pgs = cJSON_GetObjectItemCaseSensitive(f, "placementGroupStrategies"), *it;
    if (!cJSON_IsObject(f) || !cJSON_IsArray(cards) || cJSON_GetArraySize(cards) < 1 ||
        cJSON_GetArraySize(cards) > NW_ITYPE_MAX_CARDS || (ena && !cJSON_IsBool(ena)) ||
        (nv && !cJSON_IsBool(nv)) || (pgs && !cJSON_IsArray(pgs)))
        return nw_err_set(err, NW_EPARSE, path,
                          "%s: features needs networkCards (1-%d interface counts), "
                          "enaSupported/nestedVirtualization booleans, "
                          "placementGroupStrategies a list",
                          t->name, NW_ITYPE_MAX_CARDS);
    t->features_known = 1;
    cJSON_ArrayForEach(it, cards)
    {
        if (!cJSON_IsNumber(it) || it->valuedouble < 0)
            return nw_err_set(err, NW_EPARSE, path, "%s: features.networkCards: interface counts",
                              t->name);
        t->card_enis[t->network_cards++] = (int)it->valuedouble;
    }
    t->ena_unsupported = ena && !cJSON_IsTrue(ena);
    t->nested_virt = cJSON_IsTrue(nv);
    t->pg_strategies = pgs ? 0 : NW_PG_CLUSTER | NW_PG_PARTITION | NW_PG_SPREAD;
    cJSON_ArrayForEach(it, pgs)
    {
        const char *s = cJSON_IsString(it) ? it->valuestring : "";
        t->pg_strategies |= strcmp(s, "cluster") == 0     ? NW_PG_CLUSTER
                            : strcmp(s, "partition") == 0 ? NW_PG_PARTITION
                            : strcmp(s, "spread") == 0    ? NW_PG_SPREAD
                                                          : 0u;
    }
    return NW_OK;
}

static NW_MUST_USE nw_rc_t parse_type(cJSON *o, nw_itype_t *t, size_t idx, nw_err_t *err)
{
    int64_t v;
    char path[64];
    memset(t, 0, sizeof *t);
    snprintf(path, sizeof path, "types[%zu]", idx);
    if (jstr(o, "name", t->name, sizeof t->name) != 1 || nw_catalog_itype_split_name(t) != 0)
        return nw_err_set(err, NW_EPARSE, path, "name missing or not <family>.<size>");
#define NEED_INT(key, dst)                                                                         \
    do {                                                                                           \
        if (jint(o, key, &v) != 1 || v <= 0)                                                       \
            return nw_err_set(err, NW_EPARSE, path, "%s: \"%s\" missing or not a positive number", \
                              t->name, key);                                                       \
        dst = v;                                                                                   \
    } while (0)
    NEED_INT("vcpu", t->vcpu);
    NEED_INT("memMiB", t->memory_mib);
    NEED_INT("enis", t->enis);
    NEED_INT("ipv4", t->ipv4_per_eni);
#undef NEED_INT
    if (jstr(o, "arch", t->arch, sizeof t->arch) != 1 ||
        (strcmp(t->arch, "amd64") != 0 && strcmp(t->arch, "arm64") != 0))
        return nw_err_set(err, NW_EPARSE, path, "%s: arch must be amd64 or arm64", t->name);
    if (jstr(o, "cpu", t->cpu_manufacturer, sizeof t->cpu_manufacturer) < 0 ||
        jstr(o, "hypervisor", t->hypervisor, sizeof t->hypervisor) < 0)
        return nw_err_set(err, NW_EPARSE, path, "%s: cpu/hypervisor must be strings", t->name);
    if (jint(o, "nvmeGB", &t->local_nvme_gb) < 0 || jint(o, "netMbps", &t->network_mbps) < 0 ||
        jint(o, "ebsMbps", &t->ebs_mbps) < 0)
        return nw_err_set(err, NW_EPARSE, path, "%s: nvmeGB/netMbps/ebsMbps must be numbers",
                          t->name);
    /* every instance store of the listed families is NVMe: its size is the store's */
    t->instance_store_gb = t->local_nvme_gb;
    if (jint(o, "efa", &v) < 0)
        return nw_err_set(err, NW_EPARSE, path, "%s: efa must be a number", t->name);
    t->efa = jint(o, "efa", &v) == 1 ? (int)v : 0;
    cJSON *price = cJSON_GetObjectItemCaseSensitive(o, "price");
    if (price && (!cJSON_IsNumber(price) || price->valuedouble < 0))
        return nw_err_set(err, NW_EPARSE, path, "%s: price must be a non-negative number", t->name);
    t->od_price = price ? price->valuedouble : 0; /* a price table entry wins (apply_prices) */
    nw_rc_t rc = parse_devices(o, t, path, err);
    if (rc != NW_OK)
        return rc;
    t->spot_supported = 1;
    cJSON *sp = cJSON_GetObjectItemCaseSensitive(o, "spot");
    if (cJSON_IsBool(sp))
        t->spot_supported = cJSON_IsTrue(sp);
    t->encryption_in_transit = t->hypervisor[0] && strcmp(t->hypervisor, "nitro") == 0;
    /* the compatibility facts (DescribeInstanceTypes' names), optional: without them the
     * filters of scaler/cloud/compat.h do not judge the type */
    cJSON *f = cJSON_GetObjectItemCaseSensitive(o, "features");
    if (f)
        return parse_features(f, t, path, err);
    return NW_OK;
}

nw_rc_t nw_catalog_new_from_json(const char *json, size_t len, const char *region,
                                 nw_catalog_t **out, nw_err_t *err)
{
    nw_rc_t rc = NW_OK;
    const char *end = NULL;
    *out = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(json, len, &end, 0);
    nw_catalog_t *c = calloc(1, sizeof *c);
    if (!c) {
        cJSON_Delete(root);
        return nw_err_set(err, NW_ENOMEM, "catalog", "out of memory");
    }
    snprintf(c->region, sizeof c->region, "%s", region ? region : "");
    if (!cJSON_IsObject(root)) {
        rc = nw_err_set(err, NW_EPARSE, "catalog", "not a JSON object");
        goto out;
    }
    cJSON *it;
    cJSON *types = cJSON_GetObjectItemCaseSensitive(root, "types");
    if (!cJSON_IsArray(types) || cJSON_GetArraySize(types) == 0) {
        rc = nw_err_set(err, NW_EPARSE, "types", "missing or empty array");
        goto out;
    }
    c->t = calloc((size_t)cJSON_GetArraySize(types), sizeof *c->t);
    if (!c->t) {
        rc = nw_err_set(err, NW_ENOMEM, "catalog", "out of memory");
        goto out;
    }
    cJSON_ArrayForEach(it, types)
    {
        if ((rc = parse_type(it, &c->t[c->n], c->n, err)) != NW_OK)
            goto out;
        c->n++;
    }
    // cppcheck-suppress comparePointers ; _start/_end delimit one linker-embedded object
    rc = nw_catalog_load_prices(c, NW_EMBED_PTR(prices_json), NW_EMBED_LEN(prices_json), err);
out:
    cJSON_Delete(root);
    if (rc != NW_OK) {
        nw_catalog_free(c);
        return rc;
    }
    *out = c;
    return NW_OK;
}

nw_rc_t nw_catalog_new_embedded(const char *region, nw_catalog_t **out, nw_err_t *err)
{
    // cppcheck-suppress comparePointers ; _start/_end delimit one linker-embedded object
    return nw_catalog_new_from_json(NW_EMBED_PTR(catalog_json), NW_EMBED_LEN(catalog_json), region,
                                    out, err);
}

void nw_catalog_free(nw_catalog_t *c)
{
    if (!c)
        return;
    free(c->t);
    free(c->od);
    free(c->spot);
    free(c);
}

size_t nw_catalog_len(const nw_catalog_t *c)
{
    return c->n;
}

const nw_itype_t *nw_catalog_at(const nw_catalog_t *c, size_t i)
{
    return i < c->n ? &c->t[i] : NULL;
}

const nw_itype_t *nw_catalog_find(const nw_catalog_t *c, const char *name)
{
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->t[i].name, name) == 0)
            return &c->t[i];
    return NULL;
}

const char *nw_catalog_region(const nw_catalog_t *c)
{
    return c->region;
}

/* ---- offerings ----------------------------------------------------------------------- */

void nw_catalog_itype_add_offering(nw_itype_t *t, const char *zone, const char *zone_id,
                                   const char *ct, double price)
{
    if (t->noffer >= NW_CATALOG_MAX_OFFERINGS)
        return;
    nw_offering_t *o = &t->offerings[t->noffer++];
    memset(o, 0, sizeof *o);
    snprintf(o->zone, sizeof o->zone, "%s", zone);
    snprintf(o->zone_id, sizeof o->zone_id, "%s", zone_id ? zone_id : "");
    snprintf(o->capacity_type, sizeof o->capacity_type, "%s", ct);
    o->price = price;
}

bool nw_catalog_offline(const nw_catalog_t *c)
{
    return c && c->n > 0 && c->t[0].noffer == 0;
}

int nw_catalog_zone_add(nw_catalog_zone_t *z, int nz, int max, const char *name, const char *id)
{
    if (nz >= max)
        return nz;
    for (int i = 0; i < nz; i++)
        if (strcmp(z[i].name, name) == 0)
            return nz;
    snprintf(z[nz].name, sizeof z[nz].name, "%s", name);
    snprintf(z[nz].id, sizeof z[nz].id, "%s", id ? id : "");
    return nz + 1;
}

nw_rc_t nw_catalog_set_zones(nw_catalog_t *c, const nw_catalog_zone_t *zones, int n, nw_err_t *err)
{
    if (n > MAX_ZONES || n * 2 > NW_CATALOG_MAX_OFFERINGS)
        return nw_err_set(err, NW_ERANGE, "zones", "at most %d zones", MAX_ZONES);
    /* the same zones on the same types and prices: the same offerings, the same version */
    uint64_t v0 = atomic_load(&c->version);
    bool same = n == c->nzones && c->zones_at == v0;
    for (int i = 0; i < n && same; i++)
        same = strcmp(c->zones[i].name, zones[i].name) == 0 &&
               strcmp(c->zones[i].id, zones[i].id) == 0;
    c->nzones = n;
    for (int i = 0; i < n; i++)
        c->zones[i] = zones[i];
    for (size_t i = 0; i < c->n; i++) {
        nw_itype_t *t = &c->t[i];
        t->noffer = 0;
        for (int z = 0; z < n; z++) {
            nw_catalog_itype_add_offering(t, zones[z].name, zones[z].id, "on-demand", t->od_price);
            if (t->spot_supported)
                nw_catalog_itype_add_offering(t, zones[z].name, zones[z].id, "spot", t->od_price);
        }
    }
    apply_prices(c);
    if (same)
        atomic_store(&c->version, v0);
    c->zones_at = atomic_load(&c->version);
    return NW_OK;
}

int nw_catalog_offerings(const nw_itype_t *t, const nw_ice_t *ice, int64_t now, nw_offering_t *out,
                         int max)
{
    int n = 0;
    for (int i = 0; i < t->noffer && n < max; i++) {
        out[n] = t->offerings[i];
        out[n].available = out[n].price > 0 && !nw_ice_unavailable(ice, out[n].capacity_type,
                                                                   t->name, out[n].zone, now);
        n++;
    }
    return n;
}

double nw_catalog_cheapest(const nw_itype_t *t, const char *ct, const nw_ice_t *ice, int64_t now)
{
    double best = -1;
    for (int i = 0; i < t->noffer; i++) {
        const nw_offering_t *o = &t->offerings[i];
        if (ct && strcmp(ct, o->capacity_type) != 0)
            continue;
        if (o->price <= 0 || nw_ice_unavailable(ice, o->capacity_type, t->name, o->zone, now))
            continue;
        if (best < 0 || o->price < best)
            best = o->price;
    }
    return best;
}

void nw_catalog_replace(nw_catalog_t *c, nw_itype_t *types, size_t n)
{
    free(c->t);
    c->t = types;
    c->n = n;
    apply_prices(c);
}

/* ---- labels ------------------------------------------------------------------------------ */

static int add_label(nw_cat_label_t *out, int n, int max, const char *k, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int add_label(nw_cat_label_t *out, int n, int max, const char *k, const char *fmt, ...)
{
    if (n >= max)
        return n;
    va_list ap;
    snprintf(out[n].key, sizeof out[n].key, "%s", k);
    va_start(ap, fmt);
    vsnprintf(out[n].value, sizeof out[n].value, fmt, ap);
    va_end(ap);
    return n + 1;
}

#define KA "karpenter.k8s.aws/"

int nw_catalog_itype_labels(const nw_itype_t *t, nw_cat_label_t *out, int max)
{
    int n = 0;
    n = add_label(out, n, max, "node.kubernetes.io/instance-type", "%s", t->name);
    n = add_label(out, n, max, "kubernetes.io/arch", "%s", t->arch);
    n = add_label(out, n, max, "kubernetes.io/os", "linux");
    n = add_label(out, n, max, KA "instance-category", "%s", t->category);
    n = add_label(out, n, max, KA "instance-family", "%s", t->family);
    n = add_label(out, n, max, KA "instance-generation", "%d", t->generation);
    n = add_label(out, n, max, KA "instance-size", "%s", t->size);
    n = add_label(out, n, max, KA "instance-cpu", "%d", t->vcpu);
    if (t->cpu_manufacturer[0])
        n = add_label(out, n, max, KA "instance-cpu-manufacturer", "%s", t->cpu_manufacturer);
    if (t->clock_mhz > 0)
        n = add_label(out, n, max, KA "instance-cpu-sustained-clock-speed-mhz", "%d", t->clock_mhz);
    n = add_label(out, n, max, KA "instance-memory", "%lld", (long long)t->memory_mib);
    n = add_label(out, n, max, KA "instance-hypervisor", "%s", t->hypervisor);
    n = add_label(out, n, max, KA "instance-encryption-in-transit-supported", "%s",
                  t->encryption_in_transit ? "true" : "false");
    if (t->network_mbps > 0)
        n = add_label(out, n, max, KA "instance-network-bandwidth", "%lld",
                      (long long)t->network_mbps);
    if (t->gpu_count > 0) {
        n = add_label(out, n, max, KA "instance-gpu-name", "%s", t->gpu_name);
        n = add_label(out, n, max, KA "instance-gpu-manufacturer", "%s", t->gpu_manufacturer);
        n = add_label(out, n, max, KA "instance-gpu-count", "%d", t->gpu_count);
        n = add_label(out, n, max, KA "instance-gpu-memory", "%lld", (long long)t->gpu_memory_mib);
    }
    if (t->accel_count > 0) {
        n = add_label(out, n, max, KA "instance-accelerator-name", "%s", t->accel_name);
        n = add_label(out, n, max, KA "instance-accelerator-manufacturer", "%s",
                      t->accel_manufacturer);
        n = add_label(out, n, max, KA "instance-accelerator-count", "%d", t->accel_count);
    }
    if (t->local_nvme_gb > 0)
        n = add_label(out, n, max, KA "instance-local-nvme", "%lld", (long long)t->local_nvme_gb);
    if (t->ebs_mbps > 0)
        n = add_label(out, n, max, KA "instance-ebs-bandwidth", "%lld", (long long)t->ebs_mbps);
    /* "-flex" in the family (m7i-flex), as computeRequirements inserts true or false */
    n = add_label(out, n, max, KA "instance-capability-flex", "%s",
                  strstr(t->family, "-flex") ? "true" : "false");
    return n;
}

int nw_catalog_offering_labels(const nw_catalog_t *c, const nw_offering_t *o, nw_cat_label_t *out,
                               int max)
{
    int n = 0;
    n = add_label(out, n, max, "topology.kubernetes.io/zone", "%s", o->zone);
    if (o->zone_id[0])
        n = add_label(out, n, max, "topology.k8s.aws/zone-id", "%s", o->zone_id);
    n = add_label(out, n, max, "karpenter.sh/capacity-type", "%s", o->capacity_type);
    if (c->region[0])
        n = add_label(out, n, max, "topology.kubernetes.io/region", "%s", c->region);
    return n;
}

/* ---- capacity and allocatable ------------------------------------------------------------ */

void nw_catalog_overhead_opts_default(nw_overhead_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->vm_memory_overhead_percent = 0.075;
    o->family = NW_AMI_CUSTOM;
    o->max_pods = -1;
}

int64_t nw_catalog_itype_eni_pods(const nw_itype_t *t, int reserved)
{
    int64_t enis = (int64_t)t->enis - reserved;
    if (enis <= 0)
        return 0;
    return enis * ((int64_t)t->ipv4_per_eni - 1) + 2;
}

int64_t nw_catalog_itype_max_pods(const nw_itype_t *t, const nw_overhead_opts_t *o)
{
    int64_t pods;
    if (o->max_pods >= 0)
        pods = o->max_pods;
    else if (o->family == NW_AMI_WINDOWS) /* SupportsENILimitedPodDensity: false */
        pods = 110;
    else if (o->default_max_pods > 0)
        pods = o->default_max_pods;
    else
        pods = nw_catalog_itype_eni_pods(t, o->reserved_enis);
    /* PodsPerCoreEnabled: every family but Bottlerocket */
    if (o->pods_per_core > 0 && o->family != NW_AMI_BOTTLEROCKET) {
        int64_t ppc = o->pods_per_core * t->vcpu;
        if (ppc < pods)
            pods = ppc;
    }
    return pods;
}

int64_t nw_catalog_kube_reserved_cpu_m(int vcpu)
{
    /* kubeReservedResources: 6 % of the first core, 1 % of the second, 0.5 % of the next
     * two, 0.25 % above; each step truncated as Go's int64(r*percentage) */
    static const struct {
        int64_t start, end;
        double pct;
    } step[] = {
        {0, 1000, 0.06}, {1000, 2000, 0.01}, {2000, 4000, 0.005}, {4000, 1LL << 31, 0.0025}};
    int64_t cpu = (int64_t)vcpu * 1000, r = 0;
    for (size_t i = 0; i < sizeof step / sizeof step[0]; i++) {
        if (cpu < step[i].start)
            continue;
        double span = (double)(step[i].end - step[i].start);
        if (cpu < step[i].end)
            span = (double)(cpu - step[i].start);
        r += (int64_t)(span * step[i].pct);
    }
    return r;
}

#define MIB INT64_C(1048576)
#define GIB (INT64_C(1024) * MIB)

/* the memory capacity in bytes: MiB less the Graviton CMA and the VM overhead (memory()) */
static int64_t capacity_memory(const nw_itype_t *t, const nw_overhead_opts_t *o)
{
    int64_t mib = t->memory_mib;
    if (strcmp(t->arch, "arm64") == 0)
        mib -= 64; /* Graviton CMA reservation */
    mib -= (int64_t)ceil((double)(mib * MIB) * o->vm_memory_overhead_percent / 1024 / 1024);
    return mib * MIB;
}

void nw_catalog_itype_capacity(const nw_itype_t *t, const nw_overhead_opts_t *o, nw_cat_res_t *out)
{
    memset(out, 0, sizeof *out);
    out->cpu_m = (int64_t)t->vcpu * 1000;
    out->memory_bytes = capacity_memory(t, o);
    /* ephemeralStorage(): the instance store's total size with RAID0 (decimal GB, "%dG"), else
     * the root volume */
    if (o->raid0 && t->instance_store_gb > 0)
        out->ephemeral_bytes = t->instance_store_gb * INT64_C(1000000000);
    else
        out->ephemeral_bytes = o->ephemeral_bytes > 0 ? o->ephemeral_bytes : 20 * GIB;
    out->pods = nw_catalog_itype_max_pods(t, o);
    if (t->gpu_count > 0 && strcmp(t->gpu_manufacturer, "nvidia") == 0)
        out->nvidia_gpu = t->gpu_count;
    if (t->gpu_count > 0 && strcmp(t->gpu_manufacturer, "amd") == 0)
        out->amd_gpu = t->gpu_count;
    /* Habana Gaudi devices are GPUs to EC2 (GpuInfo, manufacturer Habana) */
    if (t->gpu_count > 0 && strcmp(t->gpu_manufacturer, "habana") == 0)
        out->gaudi = t->gpu_count;
    /* Neuron devices (Inferentia, Trainium) are EC2's NeuronInfo, manufacturer "aws" */
    if (t->accel_count > 0 && strcmp(t->accel_manufacturer, "aws") == 0) {
        out->neuron = t->accel_count;
        out->neuroncore = t->neuron_cores;
    }
    out->efa = t->efa;
}

/* computeEvictionSignal: a percentage of capacity (rounded up), else the quantity */
static int64_t eviction_signal(const nw_eviction_signal_t *s, int64_t capacity, int64_t dflt)
{
    if (!s->set)
        return dflt;
    if (!s->percent)
        return s->bytes;
    return (int64_t)ceil((double)capacity / 100 * s->pct);
}

void nw_catalog_itype_allocatable(const nw_itype_t *t, const nw_overhead_opts_t *o,
                                  nw_cat_res_t *out)
{
    nw_catalog_itype_capacity(t, o, out);
    /* kube-reserved memory: 11 Mi per pod + 255 Mi, the pods being the ENI-limited count
     * for the families with UsesENILimitedMemoryOverhead (AL2, AL2023, Custom), else pods() */
    bool eni_mem = o->family != NW_AMI_BOTTLEROCKET && o->family != NW_AMI_WINDOWS;
    int64_t pods_for_mem = eni_mem ? nw_catalog_itype_eni_pods(t, 0) : out->pods;
    const nw_kubelet_rl_t *kr = &o->kube_reserved, *sr = &o->system_reserved;
    int64_t kr_cpu = kr->has_cpu ? kr->cpu_m : nw_catalog_kube_reserved_cpu_m(t->vcpu);
    int64_t kr_mem = kr->has_memory ? kr->memory_bytes : (11 * pods_for_mem + 255) * MIB;
    int64_t kr_eph = kr->has_ephemeral ? kr->ephemeral_bytes : GIB;
    int64_t sr_cpu = sr->has_cpu ? sr->cpu_m : 0;
    int64_t sr_mem = sr->has_memory ? sr->memory_bytes : 0;
    int64_t sr_eph = sr->has_ephemeral ? sr->ephemeral_bytes : 0;
    /* evictionThreshold: 100Mi and 10 % of the root volume unless evictionHard says */
    int64_t eph = out->ephemeral_bytes;
    int64_t ev_mem = eviction_signal(&o->evict_memory, out->memory_bytes, 100 * MIB);
    int64_t ev_eph = eviction_signal(&o->evict_nodefs, eph, (int64_t)ceil((double)eph / 100 * 10));
    out->cpu_m -= kr_cpu + sr_cpu;
    out->memory_bytes -= kr_mem + sr_mem + ev_mem;
    out->ephemeral_bytes -= kr_eph + sr_eph + ev_eph;
    if (out->cpu_m < 0)
        out->cpu_m = 0;
    if (out->memory_bytes < 0)
        out->memory_bytes = 0;
    if (out->ephemeral_bytes < 0)
        out->ephemeral_bytes = 0;
}

bool nw_catalog_itype_is_exotic(const nw_itype_t *t)
{
    return t->bare_metal || strstr(t->size, "metal") != NULL || t->gpu_count > 0 ||
           t->accel_count > 0;
}
