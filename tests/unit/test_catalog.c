/* Unit tests for scaler/aws/catalog and ice: the embedded catalog, offerings,
 * labels and the allocatable figures of tests/data/catalog/allocatable.txt. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaler/cloud/catalog.h"
#include "scaler/cloud/ice.h"
#include "scaler/cloud/kubelet.h"
#include "tests/unit/testutil.h"

Suite *nw_catalog_suite(void);

#define MIB INT64_C(1048576)
#define GIB (1024 * MIB)

/* one test per line of tests/data/catalog/allocatable.txt */
static const nw_test_cases_t *doc_table_cases;

START_TEST(doc_table)
{
    const nw_test_case_t *row = nw_test_case(doc_table_cases, _i);
    nw_catalog_t *c;
    nw_err_t err = {0};
    ck_assert_int_eq(nw_catalog_new_embedded("us-east-1", &c, &err), NW_OK);
    ck_assert_uint_ge(nw_catalog_len(c), 150);
    nw_overhead_opts_t o;
    nw_catalog_overhead_opts_default(&o);
    do {
        char *f[8];
        ck_assert_int_eq(nw_test_split_tabs(row->line, f, 8), 5);
        const nw_itype_t *t = nw_catalog_find(c, f[0]);
        ck_assert_msg(t != NULL, "%s missing", f[0]);
        nw_cat_res_t a;
        nw_catalog_itype_allocatable(t, &o, &a);
        ck_assert_msg(a.pods == strtoll(f[1], NULL, 10), "%s pods %lld", f[0], (long long)a.pods);
        ck_assert_msg(a.cpu_m == strtoll(f[2], NULL, 10), "%s cpu %lld", f[0], (long long)a.cpu_m);
        ck_assert_msg(a.memory_bytes == strtoll(f[3], NULL, 10) * MIB, "%s mem %lld", f[0],
                      (long long)a.memory_bytes);
        ck_assert_msg(fabs(t->od_price - strtod(f[4], NULL)) < 0.0001, "%s price %f", f[0],
                      t->od_price);
        ck_assert_int_eq(a.ephemeral_bytes, INT64_C(17) * 1024 * 1024 * 1024);
    } while (0);
    nw_catalog_free(c);
}
END_TEST

START_TEST(formulas)
{
    static const int vcpu[] = {2, 4, 8, 16, 48, 96, 192};
    static const int want[] = {70, 80, 90, 110, 190, 310, 550};
    for (int i = 0; i < 7; i++)
        ck_assert_int_eq(nw_catalog_kube_reserved_cpu_m(vcpu[i]), want[i]);

    nw_catalog_t *c;
    ck_assert_int_eq(nw_catalog_new_embedded("us-west-2", &c, NULL), NW_OK);
    const nw_itype_t *t = nw_catalog_find(c, "m6i.large");
    nw_overhead_opts_t o;
    nw_catalog_overhead_opts_default(&o);
    nw_cat_res_t cap, a;
    nw_catalog_itype_capacity(t, &o, &cap);
    ck_assert_int_eq(cap.memory_bytes, (8192 - 615) * MIB); /* 615 = ceil(8192 x 0.075) */
    /* reserved ENIs lower max pods; maxPods overrides; kube-reserved memory keeps the ENI pods */
    o.reserved_enis = 1;
    ck_assert_int_eq(nw_catalog_itype_max_pods(t, &o), 2 * 9 + 2);
    o.reserved_enis = 0;
    o.max_pods = 110;
    nw_catalog_itype_allocatable(t, &o, &a);
    ck_assert_int_eq(a.pods, 110);
    ck_assert_int_eq(a.memory_bytes, 6903 * MIB);
    o.max_pods = -1;
    o.pods_per_core = 4;
    ck_assert_int_eq(nw_catalog_itype_max_pods(t, &o), 8);
    nw_catalog_overhead_opts_default(&o);
    o.ephemeral_bytes = INT64_C(100) << 30;
    nw_catalog_itype_allocatable(t, &o, &a);
    ck_assert_int_eq(a.ephemeral_bytes, (INT64_C(100) - 1 - 10) * 1024 * 1024 * 1024);
    /* Graviton: 64 MiB CMA first, then the VM overhead on what is left */
    t = nw_catalog_find(c, "m7g.large");
    ck_assert_ptr_nonnull(t);
    nw_catalog_overhead_opts_default(&o);
    nw_catalog_itype_capacity(t, &o, &cap);
    ck_assert_int_eq(cap.memory_bytes, (8128 - 610) * MIB);
    /* GPUs show up as extended resources; CPU types have none */
    nw_catalog_itype_capacity(nw_catalog_find(c, "g5.12xlarge"), &o, &cap);
    ck_assert_int_eq(cap.nvidia_gpu, 4);
    nw_catalog_itype_capacity(nw_catalog_find(c, "inf2.24xlarge"), &o, &cap);
    ck_assert_int_eq(cap.neuron, 6);
    ck_assert_int_eq(cap.neuroncore, 12);
    ck_assert_int_eq(cap.nvidia_gpu, 0);
    ck_assert(nw_catalog_itype_is_exotic(nw_catalog_find(c, "g6.xlarge")));
    ck_assert(nw_catalog_itype_is_exotic(nw_catalog_find(c, "m5.metal")));
    ck_assert(!nw_catalog_itype_is_exotic(nw_catalog_find(c, "m5.large")));
    nw_catalog_free(c);
}
END_TEST

static const char *label(const nw_cat_label_t *l, int n, const char *k)
{
    for (int i = 0; i < n; i++)
        if (strcmp(l[i].key, k) == 0)
            return l[i].value;
    return NULL;
}

START_TEST(labels_and_offerings)
{
    nw_catalog_t *c;
    ck_assert_int_eq(nw_catalog_new_embedded("us-west-2", &c, NULL), NW_OK);
    nw_cat_label_t l[32];
    const nw_itype_t *t = nw_catalog_find(c, "g6.12xlarge");
    int n = nw_catalog_itype_labels(t, l, 32);
    ck_assert_str_eq(label(l, n, "node.kubernetes.io/instance-type"), "g6.12xlarge");
    ck_assert_str_eq(label(l, n, "kubernetes.io/arch"), "amd64");
    ck_assert_str_eq(label(l, n, "karpenter.k8s.aws/instance-category"), "g");
    ck_assert_str_eq(label(l, n, "karpenter.k8s.aws/instance-family"), "g6");
    ck_assert_str_eq(label(l, n, "karpenter.k8s.aws/instance-generation"), "6");
    ck_assert_str_eq(label(l, n, "karpenter.k8s.aws/instance-size"), "12xlarge");
    ck_assert_str_eq(label(l, n, "karpenter.k8s.aws/instance-cpu"), "48");
    ck_assert_str_eq(label(l, n, "karpenter.k8s.aws/instance-memory"), "196608");
    ck_assert_str_eq(label(l, n, "karpenter.k8s.aws/instance-gpu-name"), "l4");
    ck_assert_str_eq(label(l, n, "karpenter.k8s.aws/instance-gpu-manufacturer"), "nvidia");
    /* network bandwidth from zz_generated.bandwidth.go; capability-flex from the name */
    ck_assert_str_eq(label(l, n, "karpenter.k8s.aws/instance-network-bandwidth"), "40000");
    ck_assert_str_eq(label(l, n, "karpenter.k8s.aws/instance-capability-flex"), "false");
    ck_assert_ptr_null(label(l, n, "karpenter.k8s.aws/instance-ebs-bandwidth"));
    ck_assert_str_eq(label(l, n, "karpenter.k8s.aws/instance-gpu-count"), "4");
    ck_assert_str_eq(label(l, n, "karpenter.k8s.aws/instance-gpu-memory"), "22888");
    ck_assert_str_eq(label(l, n, "karpenter.k8s.aws/instance-cpu-manufacturer"), "amd");
    ck_assert_ptr_nonnull(label(l, n, "karpenter.k8s.aws/instance-local-nvme"));
    t = nw_catalog_find(c, "c7g.large");
    n = nw_catalog_itype_labels(t, l, 32);
    ck_assert_str_eq(label(l, n, "kubernetes.io/arch"), "arm64");
    ck_assert_ptr_null(label(l, n, "karpenter.k8s.aws/instance-gpu-name"));
    t = nw_catalog_find(c, "inf2.xlarge");
    n = nw_catalog_itype_labels(t, l, 32);
    ck_assert_str_eq(label(l, n, "karpenter.k8s.aws/instance-category"), "inf");
    ck_assert_str_eq(label(l, n, "karpenter.k8s.aws/instance-accelerator-name"), "inferentia2");
    /* every accelerator family's devices as the device plugins advertise them, and their
     * memory (aws/karpenter-provider-aws pkg/providers/instancetype/types.go) */
    static const struct {
        const char *type;
        int64_t nvidia, amd, neuron, neuroncore, gaudi, mem_mib;
    } dev[] = {
        {"g6.12xlarge", 4, 0, 0, 0, 0, 22888},     {"g4ad.8xlarge", 0, 2, 0, 0, 0, 8192},
        {"inf2.48xlarge", 0, 0, 12, 24, 0, 32768}, {"trn1.32xlarge", 0, 0, 16, 32, 0, 32768},
        {"dl1.24xlarge", 0, 0, 0, 0, 8, 32768},
    };
    nw_overhead_opts_t oo;
    nw_catalog_overhead_opts_default(&oo);
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) {
        t = nw_catalog_find(c, dev[i].type);
        ck_assert_msg(t != NULL, "%s not in the catalog", dev[i].type);
        nw_cat_res_t r;
        nw_catalog_itype_capacity(t, &oo, &r);
        ck_assert_msg(
            r.nvidia_gpu == dev[i].nvidia && r.amd_gpu == dev[i].amd && r.neuron == dev[i].neuron &&
                r.neuroncore == dev[i].neuroncore && r.gaudi == dev[i].gaudi,
            "%s: devices %lld/%lld/%lld/%lld/%lld", dev[i].type, (long long)r.nvidia_gpu,
            (long long)r.amd_gpu, (long long)r.neuron, (long long)r.neuroncore, (long long)r.gaudi);
        ck_assert_int_eq(t->gpu_count ? t->gpu_memory_mib : t->accel_memory_mib, dev[i].mem_mib);
        ck_assert(nw_catalog_itype_is_exotic(t));
    }

    /* the zones of subnets, each once, at most max */
    nw_catalog_zone_t z[2];
    int nz = nw_catalog_zone_add(z, 0, 2, "us-west-2a", "usw2-az1");
    nz = nw_catalog_zone_add(z, nz, 2, "us-west-2a", "usw2-az1");
    nz = nw_catalog_zone_add(z, nz, 2, "us-west-2b", "usw2-az2");
    ck_assert_int_eq(nz, 2);
    ck_assert_int_eq(nw_catalog_zone_add(z, nz, 2, "us-west-2c", NULL), 2);
    ck_assert_str_eq(z[1].id, "usw2-az2");
    ck_assert_int_eq(nw_catalog_offline(c), 1); /* embedded: types, no offerings yet */
    ck_assert_int_eq(nw_catalog_set_zones(c, z, 2, NULL), NW_OK);
    ck_assert_int_eq(nw_catalog_offline(c), 0);
    t = nw_catalog_find(c, "m6i.large");
    nw_offering_t of[NW_CATALOG_MAX_OFFERINGS];
    nw_ice_t *ice = nw_ice_new(0);
    int64_t now = INT64_C(1000) * 1000000000;
    ck_assert_int_eq(nw_catalog_offerings(t, ice, now, of, NW_CATALOG_MAX_OFFERINGS), 4);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(of[i].available, 1);
    n = nw_catalog_offering_labels(c, &of[0], l, 32);
    ck_assert_str_eq(label(l, n, "topology.kubernetes.io/zone"), "us-west-2a");
    ck_assert_str_eq(label(l, n, "topology.k8s.aws/zone-id"), "usw2-az1");
    ck_assert_str_eq(label(l, n, "karpenter.sh/capacity-type"), "on-demand");
    ck_assert_str_eq(label(l, n, "topology.kubernetes.io/region"), "us-west-2");
    /* ICE: the marked offering is unavailable for 3 minutes, then back */
    nw_ice_mark(ice, "on-demand", "m6i.large", "us-west-2a", now);
    nw_catalog_offerings(t, ice, now + 1, of, NW_CATALOG_MAX_OFFERINGS);
    int avail = 0;
    for (int i = 0; i < 4; i++)
        avail += of[i].available;
    ck_assert_int_eq(avail, 3);
    ck_assert(nw_catalog_cheapest(t, "on-demand", ice, now + 1) > 0);
    ck_assert_int_eq(
        nw_ice_unavailable(ice, "on-demand", "m6i.large", "us-west-2a", now + NW_ICE_TTL_NS - 1),
        1);
    ck_assert_int_eq(
        nw_ice_unavailable(ice, "on-demand", "m6i.large", "us-west-2a", now + NW_ICE_TTL_NS), 0);
    ck_assert_uint_eq(nw_ice_sweep(ice, now + NW_ICE_TTL_NS), 0);
    nw_ice_mark_capacity_type(ice, "spot", now);
    ck_assert_int_eq(nw_ice_unavailable(ice, "spot", "m6i.large", "us-west-2b", now), 1);
    ck_assert_int_eq(nw_ice_unavailable(ice, "on-demand", "m6i.large", "us-west-2b", now), 0);
    nw_ice_free(ice);
    /* any region: the us-east-1 table serves (Karpenter's fallback), on-demand and spot */
    static const char *const regions[] = {"eu-west-1", "ap-southeast-2", "eu-north-1"};
    for (int r = 0; r < 3; r++) {
        nw_catalog_t *c2;
        ck_assert_int_eq(nw_catalog_new_embedded(regions[r], &c2, NULL), NW_OK);
        ck_assert_int_eq(nw_catalog_set_zones(c2, z, 1, NULL), NW_OK);
        const nw_itype_t *m = nw_catalog_find(c2, "m6i.large");
        ck_assert(fabs(nw_catalog_cheapest(m, "on-demand", NULL, now) - 0.096) < 1e-9);
        ck_assert(fabs(nw_catalog_cheapest(m, "spot", NULL, now) - 0.096) < 1e-9);
        /* every type priced but the two the us-east-1 table does not sell (offered
         * nowhere until a refresh prices them) */
        const char *unpriced[4];
        ck_assert_uint_eq(nw_catalog_unpriced(c2, unpriced, 4), 2);
        ck_assert_str_eq(unpriced[0], "dl2q.24xlarge");
        ck_assert_str_eq(unpriced[1], "trn2.48xlarge");
        ck_assert(nw_catalog_cheapest(nw_catalog_find(c2, "trn2.48xlarge"), NULL, NULL, now) < 0);
        nw_catalog_free(c2);
    }
    nw_catalog_free(c);
}
END_TEST

/* the price tables: the embedded table prices types the catalog does not list; merges keep
 * what a refresh does not mention; spot by zone once known; unknown types are counted */
START_TEST(price_tables)
{
    nw_catalog_t *c;
    ck_assert_int_eq(nw_catalog_new_embedded("eu-west-1", &c, NULL), NW_OK);
    ck_assert_uint_ge(nw_catalog_price_count(c, 0), 1000);
    /* types from the EC2 refresh that data/catalog.json lacks */
    ck_assert(fabs(nw_catalog_od_price(c, "t4g.medium") - 0.0336) < 1e-9);
    ck_assert(fabs(nw_catalog_od_price(c, "m7a.large") - 0.11592) < 1e-9);
    ck_assert(nw_catalog_od_price(c, "c8g.large") > 0);
    ck_assert(nw_catalog_od_price(c, "i4i.large") > 0);
    ck_assert(nw_catalog_od_price(c, "zz9.large") == 0);
    /* a refreshed type list: a known name is priced, an unknown one is reported */
    nw_itype_t *nt = calloc(2, sizeof *nt);
    snprintf(nt[0].name, sizeof nt[0].name, "m7a.large");
    snprintf(nt[1].name, sizeof nt[1].name, "zz9.large");
    for (int i = 0; i < 2; i++) {
        nw_catalog_itype_split_name(&nt[i]);
        nt[i].spot_supported = 1;
        nw_catalog_itype_add_offering(&nt[i], "eu-west-1a", "euw1-az1", "on-demand", 0);
        nw_catalog_itype_add_offering(&nt[i], "eu-west-1a", "euw1-az1", "spot", 0);
        nw_catalog_itype_add_offering(&nt[i], "eu-west-1b", "euw1-az2", "spot", 0);
    }
    nw_catalog_replace(c, nt, 2);
    const nw_itype_t *m = nw_catalog_find(c, "m7a.large");
    ck_assert(fabs(m->offerings[0].price - 0.11592) < 1e-9);
    ck_assert(fabs(m->offerings[1].price - 0.11592) < 1e-9); /* spot before spot prices */
    const char *names[4];
    ck_assert_uint_eq(nw_catalog_unpriced(c, names, 4), 1);
    ck_assert_str_eq(names[0], "zz9.large");
    ck_assert(nw_catalog_cheapest(nw_catalog_find(c, "zz9.large"), NULL, NULL, 0) < 0);
    /* on-demand refresh: zz9 priced, m7a changed, the rest kept */
    size_t before = nw_catalog_price_count(c, 0);
    nw_price_t od[] = {{"zz9.large", "", 0.5}, {"m7a.large", "", 0.2}, {"bad.large", "", 0}};
    ck_assert_int_eq(nw_catalog_set_od_prices(c, od, 3, NULL), NW_OK);
    ck_assert_uint_eq(nw_catalog_price_count(c, 0), before + 1);
    ck_assert(fabs(nw_catalog_od_price(c, "t4g.medium") - 0.0336) < 1e-9);
    ck_assert_uint_eq(nw_catalog_unpriced(c, NULL, 0), 0);
    m = nw_catalog_find(c, "m7a.large");
    ck_assert(fabs(m->od_price - 0.2) < 1e-9);
    ck_assert(fabs(m->offerings[0].price - 0.2) < 1e-9);
    /* spot: the zone's price where known, on-demand elsewhere; a later merge keeps zones */
    nw_price_t sp[] = {{"m7a.large", "eu-west-1a", 0.05}, {"m7a.large", "", 0.01}};
    ck_assert_int_eq(nw_catalog_set_spot_prices(c, sp, 2, NULL), NW_OK);
    ck_assert_uint_eq(nw_catalog_price_count(c, 1), 1);
    ck_assert(fabs(m->offerings[1].price - 0.05) < 1e-9);
    ck_assert(fabs(m->offerings[2].price - 0.2) < 1e-9);
    nw_price_t sp2[] = {{"m7a.large", "eu-west-1b", 0.04}};
    ck_assert_int_eq(nw_catalog_set_spot_prices(c, sp2, 1, NULL), NW_OK);
    ck_assert(fabs(m->offerings[1].price - 0.05) < 1e-9);
    ck_assert(fabs(m->offerings[2].price - 0.04) < 1e-9);
    ck_assert(fabs(nw_catalog_cheapest(m, "spot", NULL, 0) - 0.04) < 1e-9);
    /* a price table in the data/prices.json format; bad ones name the field */
    static const char ok[] = "{\"onDemand\":{\"zz9.large\":0.25}}";
    ck_assert_int_eq(nw_catalog_load_prices(c, ok, strlen(ok), NULL), NW_OK);
    ck_assert(fabs(nw_catalog_od_price(c, "zz9.large") - 0.25) < 1e-9);
    static const char *const bad[] = {"{}", "{\"onDemand\":{}}", "{\"onDemand\":{\"a.b\":-1}}",
                                      "{\"onDemand\":{\"a.b\":\"1\"}}", "[1"};
    for (int i = 0; i < 5; i++) {
        nw_err_t err = {0};
        ck_assert_int_eq(nw_catalog_load_prices(c, bad[i], strlen(bad[i]), &err), NW_EPARSE);
        ck_assert_str_eq(err.path, "onDemand");
    }
    nw_catalog_free(c);
}
END_TEST

/* allocatable of m5.xlarge (4 vCPU, 16384 MiB, 4 ENIs x 15 IPv4) under an EC2NodeClass
 * whose spec is spec_json; the figures are those of aws/karpenter-provider-aws
 * pkg/providers/instancetype/suite_test.go ("Overhead" context) */
static void m5x(const char *spec_json, double vm, int64_t density, nw_cat_res_t *cap,
                nw_cat_res_t *a)
{
    static nw_catalog_t *c;
    if (!c)
        ck_assert_int_eq(nw_catalog_new_embedded("us-west-2", &c, NULL), NW_OK);
    char buf[1024];
    snprintf(buf, sizeof buf, "{\"metadata\":{\"name\":\"x\"},\"spec\":%s}", spec_json);
    cJSON *nc = cJSON_Parse(buf);
    ck_assert_ptr_nonnull(nc);
    nw_overhead_opts_t o;
    nw_catalog_overhead_opts_default(&o);
    o.vm_memory_overhead_percent = vm;
    o.default_max_pods = density;
    nw_err_t err = {0};
    ck_assert_msg(nw_kubelet_overhead(nc, &o, &err) == NW_OK, "%s: %s", err.path, err.msg);
    cJSON_Delete(nc);
    const nw_itype_t *t = nw_catalog_find(c, "m5.xlarge");
    nw_catalog_itype_capacity(t, &o, cap);
    nw_catalog_itype_allocatable(t, &o, a);
}

START_TEST(kubelet_settings)
{
    nw_cat_res_t cap, a;
    /* defaults: kube-reserved 80m CPU, 11 x 58 + 255 = 893Mi, 1Gi; eviction 100Mi, 10 % */
    m5x("{}", 0.075, 0, &cap, &a);
    ck_assert_int_eq(cap.pods, 58);
    ck_assert_int_eq(cap.memory_bytes, (16384 - 1229) * MIB);
    ck_assert_int_eq(a.cpu_m, 4000 - 80);
    ck_assert_int_eq(a.memory_bytes, (16384 - 1229 - 893 - 100) * MIB);
    ck_assert_int_eq(a.ephemeral_bytes, 20 * GIB - GIB - 2 * GIB);
    /* systemReserved adds to kube-reserved */
    m5x("{\"kubelet\":{\"systemReserved\":{\"cpu\":\"2\",\"memory\":\"2Gi\","
        "\"ephemeral-storage\":\"10Gi\"}}}",
        0.075, 0, &cap, &a);
    ck_assert_int_eq(a.cpu_m, 4000 - 80 - 2000);
    ck_assert_int_eq(a.memory_bytes, (16384 - 1229 - 893 - 100 - 2048) * MIB);
    ck_assert_int_eq(a.ephemeral_bytes, 20 * GIB - GIB - 10 * GIB - 2 * GIB);
    /* kubeReserved replaces the computed values key by key */
    m5x("{\"kubelet\":{\"kubeReserved\":{\"cpu\":\"500m\",\"ephemeral-storage\":\"2Gi\"},"
        "\"systemReserved\":{\"cpu\":\"1\"}}}",
        0.075, 0, &cap, &a);
    ck_assert_int_eq(a.cpu_m, 4000 - 500 - 1000);
    ck_assert_int_eq(a.memory_bytes, (16384 - 1229 - 893 - 100) * MIB);
    ck_assert_int_eq(a.ephemeral_bytes, 20 * GIB - 2 * GIB - 2 * GIB);
    /* evictionHard: a percentage of capacity (rounded up), 100% = disabled; evictionSoft
     * does not count */
    m5x("{\"kubelet\":{\"evictionHard\":{\"memory.available\":\"10%\",\"nodefs.available\":"
        "\"15%\"},\"evictionSoft\":{\"memory.available\":\"5Gi\"},"
        "\"evictionSoftGracePeriod\":{\"memory.available\":\"1m\"}}}",
        0, 0, &cap, &a);
    ck_assert_int_eq(a.memory_bytes, 16384 * MIB - 893 * MIB - INT64_C(1717986919));
    ck_assert_int_eq(a.ephemeral_bytes, 20 * GIB - GIB - INT64_C(3221225472));
    m5x("{\"kubelet\":{\"evictionHard\":{\"memory.available\":\"100%\"}}}", 0, 0, &cap, &a);
    ck_assert_int_eq(a.memory_bytes, (16384 - 893) * MIB);
    m5x("{\"kubelet\":{\"evictionHard\":{\"memory.available\":\"500Mi\"}}}", 0, 0, &cap, &a);
    ck_assert_int_eq(a.memory_bytes, (16384 - 893 - 500) * MIB);
    /* maxPods sets pods; kube-reserved memory keeps the ENI-limited 58 (AL2/AL2023/Custom) */
    m5x("{\"kubelet\":{\"maxPods\":20}}", 0.075, 0, &cap, &a);
    ck_assert_int_eq(a.pods, 20);
    ck_assert_int_eq(a.memory_bytes, (16384 - 1229 - 893 - 100) * MIB);
    m5x("{\"kubelet\":{\"maxPods\":0}}", 0.075, 0, &cap, &a);
    ck_assert_int_eq(a.pods, 0);
    /* podsPerCore caps pods, except on Bottlerocket; Bottlerocket's kube-reserved memory
     * follows the real pods value */
    m5x("{\"kubelet\":{\"podsPerCore\":4}}", 0.075, 0, &cap, &a);
    ck_assert_int_eq(a.pods, 16);
    m5x("{\"amiSelectorTerms\":[{\"alias\":\"bottlerocket@latest\"}],\"kubelet\":{"
        "\"podsPerCore\":4,\"maxPods\":110}}",
        0.075, 0, &cap, &a);
    ck_assert_int_eq(a.pods, 110);
    ck_assert_int_eq(a.memory_bytes, (16384 - 1229 - (11 * 110 + 255) - 100) * MIB);
    /* Windows: 110 without ENI-limited density */
    m5x("{\"amiFamily\":\"Windows2022\"}", 0.075, 0, &cap, &a);
    ck_assert_int_eq(a.pods, 110);
    ck_assert_int_eq(a.memory_bytes, (16384 - 1229 - (11 * 110 + 255) - 100) * MIB);
    /* settings.podDensity kubelet-default: 110 where maxPods is unset */
    m5x("{\"amiFamily\":\"AL2023\"}", 0.075, 110, &cap, &a);
    ck_assert_int_eq(a.pods, 110);
    ck_assert_int_eq(a.memory_bytes, (16384 - 1229 - 893 - 100) * MIB);
    m5x("{\"amiFamily\":\"AL2023\",\"kubelet\":{\"maxPods\":30}}", 0.075, 110, &cap, &a);
    ck_assert_int_eq(a.pods, 30);
}
END_TEST

/* the ephemeral-storage capacity of type under an EC2NodeClass spec (types.go ephemeralStorage) */
static int64_t eph(const char *spec_json, const char *type)
{
    static nw_catalog_t *c;
    if (!c)
        ck_assert_int_eq(nw_catalog_new_embedded("us-west-2", &c, NULL), NW_OK);
    char buf[1024];
    snprintf(buf, sizeof buf, "{\"metadata\":{\"name\":\"x\"},\"spec\":%s}", spec_json);
    cJSON *nc = cJSON_Parse(buf);
    ck_assert_ptr_nonnull(nc);
    nw_overhead_opts_t o;
    nw_catalog_overhead_opts_default(&o);
    nw_err_t err = {0};
    ck_assert_msg(nw_kubelet_overhead(nc, &o, &err) == NW_OK, "%s: %s", err.path, err.msg);
    cJSON_Delete(nc);
    nw_cat_res_t cap;
    nw_catalog_itype_capacity(nw_catalog_find(c, type), &o, &cap);
    return cap.ephemeral_bytes;
}

START_TEST(ephemeral_storage)
{
#define XVDA(size) "{\"deviceName\":\"/dev/xvda\",\"ebs\":{\"volumeSize\":\"" size "\"}}"
    /* the family's default ephemeral device: xvda 20Gi, Bottlerocket xvdb 20Gi, Windows 50Gi */
    ck_assert_int_eq(eph("{\"amiFamily\":\"AL2023\"}", "m5.xlarge"), 20 * GIB);
    ck_assert_int_eq(eph("{\"amiFamily\":\"Bottlerocket\"}", "m5.xlarge"), 20 * GIB);
    ck_assert_int_eq(eph("{\"amiFamily\":\"Windows2022\"}", "m5.xlarge"), 50 * GIB);
    ck_assert_int_eq(eph("{}", "m5.xlarge"), 20 * GIB);
    /* the mapping of the family's ephemeral device */
    ck_assert_int_eq(
        eph("{\"amiFamily\":\"AL2023\",\"blockDeviceMappings\":[" XVDA("64Gi") "]}", "m5.xlarge"),
        64 * GIB);
    /* Bottlerocket's is xvdb: a 100Gi xvda is not it */
    ck_assert_int_eq(
        eph("{\"amiFamily\":\"Bottlerocket\",\"blockDeviceMappings\":[" XVDA("100Gi") "]}",
            "m5.xlarge"),
        20 * GIB);
    /* rootVolume wins over the device name */
    ck_assert_int_eq(eph("{\"amiFamily\":\"AL2\",\"blockDeviceMappings\":[" XVDA(
                             "30Gi") ",{\"deviceName\":\"/dev/xvdc\",\"rootVolume\":true,"
                                     "\"ebs\":{\"volumeSize\":\"1Ti\"}}]}",
                         "m5.xlarge"),
                     1024 * GIB);
    /* Custom: the last mapping, in its own unit (decimal G here) */
    ck_assert_int_eq(eph("{\"amiFamily\":\"Custom\",\"blockDeviceMappings\":[" XVDA(
                             "30Gi") ",{\"deviceName\":\"/dev/xvdc\",\"ebs\":{\"volumeSize\":"
                                     "\"200G\"}}]}",
                         "m5.xlarge"),
                     INT64_C(200000000000));
    ck_assert_int_eq(eph("{\"amiFamily\":\"Custom\",\"blockDeviceMappings\":[{\"deviceName\":"
                         "\"/dev/xvda\",\"ebs\":{\"snapshotID\":\"snap-1\"}}]}",
                         "m5.xlarge"),
                     20 * GIB);
    /* RAID0: the instance store's total size (GB) where the type has one */
    ck_assert_int_eq(
        eph("{\"amiFamily\":\"AL2023\",\"instanceStorePolicy\":\"RAID0\"}", "g5.xlarge"),
        INT64_C(250000000000));
    ck_assert_int_eq(eph("{\"amiFamily\":\"AL2023\",\"instanceStorePolicy\":\"RAID0\","
                         "\"blockDeviceMappings\":[" XVDA("64Gi") "]}",
                         "m5.xlarge"),
                     64 * GIB);
#undef XVDA
    /* allocatable follows: 64Gi less 1Gi kube-reserved and 10 % eviction (rounded up) */
    nw_cat_res_t cap, a;
    m5x("{\"amiFamily\":\"AL2023\",\"blockDeviceMappings\":[{\"deviceName\":\"/dev/xvda\","
        "\"ebs\":{\"volumeSize\":\"64Gi\"}}]}",
        0.075, 0, &cap, &a);
    ck_assert_int_eq(a.ephemeral_bytes, 64 * GIB - GIB - (int64_t)ceil(64.0 * GIB / 10));
}
END_TEST

START_TEST(kubelet_family_and_errors)
{
    static const struct {
        const char *json;
        nw_ami_family_t f;
    } fam[] = {
        {"{}", NW_AMI_CUSTOM},
        {"{\"spec\":{\"amiSelectorTerms\":[{\"alias\":\"al2023@v20250101\"}]}}", NW_AMI_AL2023},
        {"{\"spec\":{\"amiSelectorTerms\":[{\"id\":\"ami-1\"},{\"alias\":\"al2@latest\"}]}}",
         NW_AMI_AL2},
        {"{\"spec\":{\"amiFamily\":\"Bottlerocket\",\"amiSelectorTerms\":[{\"alias\":"
         "\"al2@latest\"}]}}",
         NW_AMI_BOTTLEROCKET},
        {"{\"spec\":{\"amiSelectorTerms\":[{\"alias\":\"windows2025@latest\"}]}}", NW_AMI_WINDOWS},
    };
    for (size_t i = 0; i < sizeof fam / sizeof fam[0]; i++) {
        cJSON *nc = cJSON_Parse(fam[i].json);
        ck_assert_int_eq(nw_kubelet_ami_family(nc), fam[i].f);
        cJSON_Delete(nc);
    }
    static const struct {
        const char *json, *path;
    } bad[] = {
        {"{\"spec\":{\"kubelet\":{\"kubeReserved\":{\"memory\":\"lots\"}}}}",
         "spec.kubelet.kubeReserved.memory"},
        {"{\"spec\":{\"kubelet\":{\"systemReserved\":{\"cpu\":1}}}}",
         "spec.kubelet.systemReserved.cpu"},
        {"{\"spec\":{\"kubelet\":{\"evictionHard\":{\"memory.available\":\"101%\"}}}}",
         "spec.kubelet.evictionHard.memory.available"},
        {"{\"spec\":{\"kubelet\":{\"evictionHard\":{\"nodefs.available\":\"x%\"}}}}",
         "spec.kubelet.evictionHard.nodefs.available"},
        {"{\"spec\":{\"kubelet\":{\"maxPods\":-1}}}", "spec.kubelet.maxPods"},
        {"{\"spec\":{\"kubelet\":{\"podsPerCore\":\"4\"}}}", "spec.kubelet.podsPerCore"},
        {"{\"spec\":{\"kubelet\":[]}}", "spec.kubelet"},
        {"{\"spec\":{\"blockDeviceMappings\":[{\"ebs\":{\"volumeSize\":\"20Gi\"}},{\"ebs\":{"
         "\"volumeSize\":\"lots\"}}]}}",
         "spec.blockDeviceMappings[1].ebs.volumeSize"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cJSON *nc = cJSON_Parse(bad[i].json);
        ck_assert_ptr_nonnull(nc);
        nw_overhead_opts_t o, before;
        nw_catalog_overhead_opts_default(&o);
        before = o;
        nw_err_t err = {0};
        ck_assert_int_eq(nw_kubelet_overhead(nc, &o, &err), NW_EINVAL);
        ck_assert_str_eq(err.path, bad[i].path);
        ck_assert_mem_eq(&o, &before, sizeof o);
        cJSON_Delete(nc);
    }
}
END_TEST

START_TEST(rejects_bad_json)
{
    static const struct {
        const char *json, *path;
    } cases[] = {
        {"[]", "catalog"},
        {"{\"types\":[]}", "types"},
        {"{\"types\":[{\"name\":\"nodot\",\"vcpu\":2,\"memMiB\":1,\"enis\":1,\"ipv4\":2,\"arch\":"
         "\"amd64\"}]}",
         "types[0]"},
        {"{\"types\":[{\"name\":\"m.x\",\"vcpu\":2,\"memMiB\":1,\"enis\":1,\"ipv4\":2,\"arch\":"
         "\"sparc\"}]}",
         "types[0]"},
        {"{\"types\":[{\"name\":\"m.x\",\"vcpu\":\"2\",\"memMiB\":1,\"enis\":1,\"ipv4\":2,\"arch\":"
         "\"amd64\"}]}",
         "types[0]"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        nw_catalog_t *c = (nw_catalog_t *)1;
        nw_err_t err = {0};
        ck_assert_int_eq(
            nw_catalog_new_from_json(cases[i].json, strlen(cases[i].json), "us-east-1", &c, &err),
            NW_EPARSE);
        ck_assert_ptr_null(c);
        ck_assert_str_eq(err.path, cases[i].path);
    }
}
END_TEST

Suite *nw_catalog_suite(void)
{
    Suite *s = suite_create("catalog");
    TCase *tc = tcase_create("core");
    doc_table_cases = nw_test_cases_lines("tests/data/catalog/allocatable.txt", 30);
    nw_test_add_cases(tc, doc_table, doc_table_cases);
    tcase_add_test(tc, formulas);
    tcase_add_test(tc, labels_and_offerings);
    tcase_add_test(tc, price_tables);
    tcase_add_test(tc, rejects_bad_json);
    tcase_add_test(tc, kubelet_settings);
    tcase_add_test(tc, kubelet_family_and_errors);
    tcase_add_test(tc, ephemeral_storage);
    suite_add_tcase(s, tc);
    return s;
}
