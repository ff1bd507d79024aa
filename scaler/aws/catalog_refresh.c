/* scaler/aws/catalog_refresh.c — the instance catalog from the EC2 API; see catalog_refresh.h. */
#include "scaler/aws/catalog_refresh.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

#define COMP "aws.catalog"

static void from_api(const nw_ec2_itype_t *a, nw_itype_t *t)
{
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", a->name);
    nw_itype_split_name(t);
    t->vcpu = a->vcpus;
    t->memory_mib = a->memory_mib;
    snprintf(t->arch, sizeof t->arch, "%s", strcmp(a->arch, "arm64") == 0 ? "arm64" : "amd64");
    nw_catalog_lower_kebab(a->cpu_manufacturer, t->cpu_manufacturer, sizeof t->cpu_manufacturer);
    t->clock_mhz = (int)(a->clock_ghz * 1000 + 0.5);
    if (a->gpu_count > 0) {
        nw_catalog_lower_kebab(a->gpu_name, t->gpu_name, sizeof t->gpu_name);
        nw_catalog_lower_kebab(a->gpu_manufacturer, t->gpu_manufacturer,
                               sizeof t->gpu_manufacturer);
        t->gpu_count = a->gpu_count;
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
    t->network_mbps = a->network_mbps;
    snprintf(t->hypervisor, sizeof t->hypervisor, "%s", a->hypervisor);
    t->bare_metal = a->bare_metal || t->bare_metal;
    t->encryption_in_transit = a->encryption_in_transit;
    t->spot_supported = a->spot_supported;
}

nw_rc_t nw_catalog_refresh(nw_catalog_t *c, nw_ec2_t *ec2, nw_err_t *err)
{
    nw_ec2_filter_t f[] = {{"supported-virtualization-type", {"hvm"}, 1},
                           {"processor-info.supported-architecture", {"x86_64", "arm64"}, 2}};
    nw_ec2_itypes_t it = {0};
    nw_ec2_offerings_t of = {0};
    nw_ec2_spot_prices_t sp = {0};
    nw_ec2_zones_t zs = {0};
    nw_itype_t *nt = NULL;
    size_t nn = 0;
    nw_rc_t rc;
    if ((rc = nw_ec2_describe_instance_types(ec2, f, 2, &it, NULL, err)) != NW_OK ||
        (rc = nw_ec2_describe_offerings(ec2, &of, NULL, err)) != NW_OK ||
        (rc = nw_ec2_describe_zones(ec2, &zs, NULL, err)) != NW_OK)
        goto out;
    /* spot prices are optional: without them spot is priced like on-demand */
    nw_err_t spe = {0};
    if (nw_ec2_describe_spot_prices(ec2, &sp, NULL, &spe) != NW_OK)
        nw_log_warn(COMP, "spot prices unavailable; using on-demand prices for spot",
                    NW_LS("error", spe.msg));
    nt = calloc(it.n ? it.n : 1, sizeof *nt);
    if (!nt) {
        rc = nw_err_set(err, NW_ENOMEM, "catalog", "out of memory");
        goto out;
    }
    for (size_t i = 0; i < it.n; i++) {
        nw_itype_t *t = &nt[nn];
        from_api(&it.v[i], t);
        if (!t->family[0] || t->vcpu <= 0 || t->memory_mib <= 0)
            continue;
        const nw_itype_t *old = nw_catalog_find(c, t->name);
        t->od_price = old ? old->od_price : 0;
        for (size_t k = 0; k < of.n; k++) {
            if (strcmp(of.v[k].type, t->name) != 0)
                continue;
            const char *zid = "";
            for (size_t z = 0; z < zs.n; z++)
                if (strcmp(zs.v[z].name, of.v[k].location) == 0)
                    zid = zs.v[z].zone_id;
            nw_itype_add_offering(t, of.v[k].location, zid, "on-demand", t->od_price);
            if (t->spot_supported) {
                double price = 0;
                int64_t ts = -1;
                for (size_t s = 0; s < sp.n; s++)
                    if (strcmp(sp.v[s].type, t->name) == 0 &&
                        strcmp(sp.v[s].zone, of.v[k].location) == 0 && sp.v[s].timestamp_ns > ts) {
                        price = sp.v[s].price;
                        ts = sp.v[s].timestamp_ns;
                    }
                nw_itype_add_offering(t, of.v[k].location, zid, "spot",
                                      price > 0 ? price : t->od_price);
            }
        }
        nn++;
    }
    nw_catalog_replace(c, nt, nn);
    nt = NULL;
    nw_log_info(COMP, "catalog refreshed", NW_LI("types", nn), NW_LI("offerings", of.n),
                NW_LI("spot_prices", sp.n));
out:
    free(nt);
    nw_ec2_itypes_free(&it);
    nw_ec2_offerings_free(&of);
    nw_ec2_spot_prices_free(&sp);
    nw_ec2_zones_free(&zs);
    return rc;
}
