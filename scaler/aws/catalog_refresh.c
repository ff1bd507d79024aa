/* scaler/aws/catalog_refresh.c — the instance catalog from the EC2 API; see catalog_refresh.h. */
#include "scaler/aws/catalog_refresh.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

#define COMP "aws.catalog"

void nw_catalog_refresh_from_api(const nw_ec2_itype_t *a, nw_itype_t *t)
{
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", a->name);
    nw_catalog_itype_split_name(t);
    t->vcpu = a->vcpus;
    t->memory_mib = a->memory_mib;
    snprintf(t->arch, sizeof t->arch, "%s", strcmp(a->arch, "arm64") == 0 ? "arm64" : "amd64");
    nw_catalog_lower_kebab(a->cpu_manufacturer, t->cpu_manufacturer, sizeof t->cpu_manufacturer);
    t->clock_mhz = (int)(a->clock_ghz * 1000 + 0.5);
    /* EC2 describes the GPU of g6f/gr6f (a fractional L4) and of p5.4xlarge with a count
     * of 0: such a type has a GPU all the same, one logical GPU (logicalGpuCount where EC2
     * gives it) as the NVIDIA driver presents it, so its labels and capacity say so and a
     * generic pool's instance-gpu-count DoesNotExist keeps off it */
    if (a->gpu_count > 0 || a->gpu_name[0]) {
        nw_catalog_lower_kebab(a->gpu_name, t->gpu_name, sizeof t->gpu_name);
        nw_catalog_lower_kebab(a->gpu_manufacturer, t->gpu_manufacturer,
                               sizeof t->gpu_manufacturer);
        t->gpu_count = a->gpu_count > 0           ? a->gpu_count
                       : a->gpu_logical_count > 0 ? a->gpu_logical_count
                                                  : 1;
        t->gpu_memory_mib = a->gpu_memory_mib;
    }
    if (a->accel_count > 0) {
        nw_catalog_lower_kebab(a->accel_name, t->accel_name, sizeof t->accel_name);
        nw_catalog_lower_kebab(a->accel_manufacturer, t->accel_manufacturer,
                               sizeof t->accel_manufacturer);
        t->accel_count = a->accel_count;
        t->neuron_cores = a->neuron_cores;
        t->accel_memory_mib = a->accel_memory_mib;
    }
    t->enis = a->max_enis;
    t->ipv4_per_eni = a->ipv4_per_eni;
    t->efa = a->efa_max;
    t->local_nvme_gb = a->local_nvme_gb;
    t->instance_store_gb = a->instance_store_gb;
    t->network_mbps = a->network_mbps;
    t->ebs_mbps = a->ebs_mbps;
    snprintf(t->hypervisor, sizeof t->hypervisor, "%s", a->hypervisor);
    t->bare_metal = a->bare_metal || t->bare_metal;
    t->encryption_in_transit = a->encryption_in_transit;
    t->spot_supported = a->spot_supported;
    t->features_known = 1;
    t->network_cards = a->network_cards;
    for (int i = 0; i < NW_ITYPE_MAX_CARDS && i < 32; i++)
        t->card_enis[i] = a->card_enis[i];
    t->ena_unsupported = a->ena_unsupported;
    t->nested_virt = a->nested_virt;
    t->pg_strategies = a->pg_strategies;
}

nw_rc_t nw_catalog_refresh_fetch_types(nw_ec2_t *ec2, nw_itype_t **out, size_t *n, nw_err_t *err)
{
    nw_ec2_filter_t f[] = {{"supported-virtualization-type", {"hvm"}, 1},
                           {"processor-info.supported-architecture", {"x86_64", "arm64"}, 2}};
    nw_ec2_itypes_t it = {0};
    nw_ec2_offerings_t of = {0};
    nw_ec2_zones_t zs = {0};
    nw_itype_t *nt = NULL;
    size_t nn = 0;
    nw_rc_t rc;
    *out = NULL;
    *n = 0;
    if ((rc = nw_ec2_describe_instance_types(ec2, f, 2, &it, NULL, err)) != NW_OK ||
        (rc = nw_ec2_describe_offerings(ec2, &of, NULL, err)) != NW_OK ||
        (rc = nw_ec2_describe_zones(ec2, &zs, NULL, err)) != NW_OK)
        goto out;
    if (it.n == 0) {
        rc = nw_err_set(err, NW_EAWS, "DescribeInstanceTypes", "no instance types returned");
        goto out;
    }
    nt = calloc(it.n, sizeof *nt);
    if (!nt) {
        rc = nw_err_set(err, NW_ENOMEM, "catalog", "out of memory");
        goto out;
    }
    for (size_t i = 0; i < it.n; i++) {
        nw_itype_t *t = &nt[nn];
        nw_catalog_refresh_from_api(&it.v[i], t);
        if (!t->family[0] || t->vcpu <= 0 || t->memory_mib <= 0)
            continue;
        for (size_t k = 0; k < of.n; k++) {
            if (strcmp(of.v[k].type, t->name) != 0)
                continue;
            const char *zid = "";
            for (size_t z = 0; z < zs.n; z++)
                if (strcmp(zs.v[z].name, of.v[k].location) == 0)
                    zid = zs.v[z].zone_id;
            /* priced by nw_catalog_replace from the price tables */
            nw_catalog_itype_add_offering(t, of.v[k].location, zid, "on-demand", 0);
            if (t->spot_supported)
                nw_catalog_itype_add_offering(t, of.v[k].location, zid, "spot", 0);
        }
        nn++;
    }
    *out = nt;
    *n = nn;
    nt = NULL;
out:
    free(nt);
    nw_ec2xml_itypes_free(&it);
    nw_ec2xml_offerings_free(&of);
    nw_ec2xml_zones_free(&zs);
    return rc;
}

void nw_catalog_refresh_apply_types(nw_catalog_t *c, nw_itype_t *types, size_t n)
{
    size_t noffer = 0;
    for (size_t i = 0; i < n; i++) {
        /* a type the price table lacks keeps the figure the catalog had for it */
        types[i].od_price = nw_catalog_od_price(c, types[i].name);
        noffer += (size_t)types[i].noffer;
    }
    nw_catalog_replace(c, types, n);
    const char *unpriced[8];
    size_t nu = nw_catalog_unpriced(c, unpriced, 8);
    nw_log_info(COMP, "instance types refreshed", NW_LI("types", n), NW_LI("offerings", noffer),
                NW_LI("unpriced", nu));
    if (nu) {
        char names[8 * 66] = "";
        for (size_t i = 0; i < nu && i < 8; i++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? "," : "",
                     unpriced[i]);
        nw_log_warn(COMP,
                    "instance types without an on-demand price: their offerings are not "
                    "available until a price is known",
                    NW_LI("count", nu), NW_LS("first", names));
    }
}

nw_rc_t nw_catalog_refresh_types(nw_catalog_t *c, nw_ec2_t *ec2, nw_err_t *err)
{
    nw_itype_t *t;
    size_t n;
    nw_rc_t rc = nw_catalog_refresh_fetch_types(ec2, &t, &n, err);
    if (rc == NW_OK)
        nw_catalog_refresh_apply_types(c, t, n);
    return rc;
}

typedef struct {
    nw_price_t p;
    int64_t ts;
} spot_rec_t;

static int spot_rec_cmp(const void *a, const void *b)
{
    const spot_rec_t *x = a, *y = b;
    int r = strcmp(x->p.type, y->p.type);
    if (!r)
        r = strcmp(x->p.zone, y->p.zone);
    return r ? r : (x->ts > y->ts) - (x->ts < y->ts);
}

nw_rc_t nw_catalog_refresh_fetch_spot(nw_ec2_t *ec2, nw_price_t **out, size_t *np, nw_err_t *err)
{
    nw_ec2_spot_prices_t sp = {0};
    *out = NULL;
    *np = 0;
    nw_rc_t rc = nw_ec2_describe_spot_prices(ec2, &sp, NULL, err);
    if (rc == NW_OK && sp.n == 0)
        rc = nw_err_set(err, NW_EAWS, "DescribeSpotPriceHistory", "no spot pricing found");
    spot_rec_t *r = rc == NW_OK ? calloc(sp.n, sizeof *r) : NULL;
    nw_price_t *p = rc == NW_OK ? calloc(sp.n, sizeof *p) : NULL;
    if (rc == NW_OK && (!r || !p))
        rc = nw_err_set(err, NW_ENOMEM, "catalog", "out of memory");
    size_t n = 0;
    if (rc == NW_OK) {
        for (size_t i = 0; i < sp.n; i++) {
            snprintf(r[i].p.type, sizeof r[i].p.type, "%s", sp.v[i].type);
            snprintf(r[i].p.zone, sizeof r[i].p.zone, "%s", sp.v[i].zone);
            r[i].p.price = sp.v[i].price;
            r[i].ts = sp.v[i].timestamp_ns;
        }
        /* the newest record per type and zone (both product descriptions come back) */
        qsort(r, sp.n, sizeof *r, spot_rec_cmp);
        for (size_t i = 0; i < sp.n; i++) {
            if (n && strcmp(p[n - 1].type, r[i].p.type) == 0 &&
                strcmp(p[n - 1].zone, r[i].p.zone) == 0)
                p[n - 1] = r[i].p;
            else
                p[n++] = r[i].p;
        }
        *out = p;
        *np = n;
        p = NULL;
    }
    free(r);
    free(p);
    nw_ec2xml_spot_prices_free(&sp);
    return rc;
}

nw_rc_t nw_catalog_refresh_apply_prices(nw_catalog_t *c, int spot, const nw_price_t *p, size_t n,
                                        nw_err_t *err)
{
    nw_rc_t rc =
        spot ? nw_catalog_set_spot_prices(c, p, n, err) : nw_catalog_set_od_prices(c, p, n, err);
    if (rc == NW_OK && spot)
        nw_log_info(COMP, "spot prices refreshed", NW_LI("prices", n),
                    NW_LI("known", nw_catalog_price_count(c, 1)));
    else if (rc == NW_OK)
        nw_log_info(COMP, "on-demand prices refreshed", NW_LI("prices", n),
                    NW_LI("known", nw_catalog_price_count(c, 0)),
                    NW_LI("unpriced", nw_catalog_unpriced(c, NULL, 0)));
    return rc;
}

nw_rc_t nw_catalog_refresh_spot(nw_catalog_t *c, nw_ec2_t *ec2, nw_err_t *err)
{
    nw_price_t *p;
    size_t n;
    nw_rc_t rc = nw_catalog_refresh_fetch_spot(ec2, &p, &n, err);
    if (rc == NW_OK)
        rc = nw_catalog_refresh_apply_prices(c, 1, p, n, err);
    free(p);
    return rc;
}

nw_rc_t nw_catalog_refresh_od(nw_catalog_t *c, nw_pricing_t *pr, nw_err_t *err)
{
    nw_price_t *p = NULL;
    size_t n = 0;
    nw_rc_t rc = nw_pricing_on_demand(pr, &p, &n, NULL, err);
    if (rc == NW_OK)
        rc = nw_catalog_refresh_apply_prices(c, 0, p, n, err);
    free(p);
    return rc;
}

nw_rc_t nw_catalog_refresh(nw_catalog_t *c, nw_ec2_t *ec2, nw_err_t *err)
{
    nw_rc_t rc = nw_catalog_refresh_types(c, ec2, err);
    if (rc != NW_OK)
        return rc;
    /* spot prices are optional here: without them spot is priced like on-demand */
    nw_err_t spe = {0};
    if (nw_catalog_refresh_spot(c, ec2, &spe) != NW_OK)
        nw_log_warn(COMP, "spot prices unavailable; using on-demand prices for spot",
                    NW_LS("error", spe.msg));
    return NW_OK;
}
