/*
 * scaler/cloud/catalog.h — instance types, their offerings and prices, and the
 * allocatable math of aws/karpenter-provider-aws pkg/providers/instancetype/types.go: what
 * the cloud tells the scheduler, drift and the cluster input about the machines it can
 * launch (Karpenter's cloudprovider.InstanceType and Offering, pkg/cloudprovider/types.go).
 * No I/O: it lives below the pure decisions so that they can read it
 * (docs/internals/layout.md). AWS is the only provider, so its figures are EC2's.
 *
 * The catalog starts from data/catalog.json (compiled in; see tools/gen_catalog.py for
 * its sources); a provider may replace its contents from its API (the EC2 refresh is
 * scaler/aws/catalog_refresh.h). Offline, every type is offered in every zone given to
 * nw_catalog_set_zones.
 *
 * Prices: the catalog keeps a table of on-demand prices by type and of spot prices by
 * type and zone, also for types it does not list (a later refresh may add them), and
 * prices every offering from it. The on-demand table starts as data/prices.json, the
 * us-east-1 table of aws/karpenter-provider-aws pkg/providers/pricing/
 * zz_generated.pricing_aws.go (tools/gen_prices.py), in EVERY region, as Karpenter's
 * pricing.go Reset falls back to us-east-1 where it has no table of the region, until a
 * Pricing API refresh replaces it. Spot offerings cost the on-demand price until spot
 * prices are set (what Karpenter does before its first spot price refresh), then the
 * zone's spot price (the on-demand price in a zone the spot table lacks). An offering
 * without a price (a type in neither table) is never available.
 *
 * The scheduler uses the pure part: iterate types, their offerings (with availability
 * from the unavailable-offerings cache, scaler/cloud/ice.h), labels, capacity and
 * allocatable.
 *
 * Ownership: nw_catalog_new_* / nw_catalog_free. nw_itype_t pointers are borrowed and
 * valid until the next replace or set_zones.
 * Thread: loading and refreshing belong to one thread (the controller); reads from
 * other threads need outside synchronisation.
 */
#ifndef NW_SCALER_CLOUD_CATALOG_H
#define NW_SCALER_CLOUD_CATALOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "scaler/cloud/ice.h"

#define NW_CATALOG_MAX_OFFERINGS 48
#define NW_ITYPE_MAX_CARDS 32 /* network cards of a type (p5.48xlarge has 32) */
#define NW_PG_CLUSTER 0x1u
#define NW_PG_PARTITION 0x2u
#define NW_PG_SPREAD 0x4u

typedef struct {
    char zone[64];
    char zone_id[64];
    char capacity_type[16]; /* "on-demand" | "spot" */
    double price;           /* USD per hour; 0 = unknown */
    int available;          /* filled by nw_catalog_offerings */
} nw_offering_t;

typedef struct {
    char name[64];     /* "m6i.large" */
    char family[32];   /* "m6i" */
    char category[16]; /* "m" */
    char size[32];     /* "large" */
    int generation;    /* 6 */
    int vcpu;
    int64_t memory_mib;
    char arch[8];              /* "amd64" | "arm64" (Kubernetes names) */
    char cpu_manufacturer[16]; /* "intel" | "amd" | "aws" */
    int clock_mhz;             /* 0 = unknown */
    char gpu_name[32];         /* lower-kebab: "a10g", "l4"; "" = none */
    char gpu_manufacturer[16];
    int gpu_count;
    int64_t gpu_memory_mib; /* per GPU */
    char accel_name[32];    /* "inferentia2" */
    char accel_manufacturer[16];
    int accel_count;          /* neuron devices */
    int64_t accel_memory_mib; /* per device; 0 = unknown */
    int neuron_cores;
    /* media accelerators (EC2's MediaAcceleratorInfo: the Xilinx U30 of vt1); Karpenter
     * derives no label or resource from them */
    char media_name[32];
    char media_manufacturer[16];
    int media_count;
    int enis; /* of the default network card */
    int ipv4_per_eni;
    int efa;
    int64_t local_nvme_gb;
    int64_t instance_store_gb; /* InstanceStorageInfo.TotalSizeInGB (any disk kind); 0 = none */
    int64_t network_mbps;      /* 0 = unknown */
    int64_t ebs_mbps;          /* EBS-optimized bandwidth by default; 0 = unknown / not default */
    char hypervisor[16];       /* "nitro", "xen", "" for metal */
    int bare_metal;
    int encryption_in_transit;
    int spot_supported;
    double od_price; /* on-demand USD/h in the catalog's region, 0 = unknown */
    /* what the compatibility filters need (scaler/cloud/compat.h), from DescribeInstanceTypes
     * or the catalog JSON; features_known = 0 (the embedded catalog): unknown, not checked */
    int features_known;
    int network_cards;                 /* networkInfo.maximumNetworkCards */
    int card_enis[NW_ITYPE_MAX_CARDS]; /* maximumNetworkInterfaces per card index */
    int ena_unsupported;               /* networkInfo.enaSupport = unsupported */
    int nested_virt;                   /* processorInfo.supportedFeatures nested-virtualization */
    unsigned pg_strategies;            /* NW_PG_* bits: placementGroupInfo.supportedStrategies */
    nw_offering_t offerings[NW_CATALOG_MAX_OFFERINGS];
    int noffer;
} nw_itype_t;

typedef struct nw_catalog nw_catalog_t;

typedef struct {
    char name[64];
    char id[64]; /* "usw2-az1"; may be "" */
} nw_catalog_zone_t;

/** The compiled-in catalog for region, priced from the compiled-in price table (the same
 * for every region: see above). */
NW_MUST_USE nw_rc_t nw_catalog_new_embedded(const char *region, nw_catalog_t **out, nw_err_t *err);

/** A catalog from JSON text in the data/catalog.json format, priced from the compiled-in
 * table (a type's own "price" serves where the table has none). */
NW_MUST_USE nw_rc_t nw_catalog_new_from_json(const char *json, size_t len, const char *region,
                                             nw_catalog_t **out, nw_err_t *err);

void nw_catalog_free(nw_catalog_t *c);

/** True when the catalog has types but no offerings (it was not refreshed from an API):
 * what offer_zones (scaler/cloud/cloud.h) fills in. */
bool nw_catalog_offline(const nw_catalog_t *c);

/** Append zone (name, id) to z[0..nz) unless its name is there or nz == max; returns the
 * new count. */
int nw_catalog_zone_add(nw_catalog_zone_t *z, int nz, int max, const char *name, const char *id);

/** Offer every type in these zones (on-demand always, spot when supported). */
NW_MUST_USE nw_rc_t nw_catalog_set_zones(nw_catalog_t *c, const nw_catalog_zone_t *zones, int n,
                                         nw_err_t *err);

/* ---- for a provider that builds the catalog from its API (scaler/aws/catalog_refresh.c) */
/** Replace every type with types[0..n) (calloc'd; the catalog takes it and frees it);
 * their od_price and offerings' prices are set from the price tables. */
void nw_catalog_replace(nw_catalog_t *c, nw_itype_t *types, size_t n);
/** Fill family, category, size, generation and bare_metal from t->name ("m6i.large");
 * -1 when the name has no "family.size" form. */
int nw_catalog_itype_split_name(nw_itype_t *t);
/** Append one offering (ignored past NW_CATALOG_MAX_OFFERINGS). */
void nw_catalog_itype_add_offering(nw_itype_t *t, const char *zone, const char *zone_id,
                                   const char *ct, double price);
/** "NVIDIA A10G" -> "nvidia-a10g": the label form of a manufacturer or device name. */
void nw_catalog_lower_kebab(const char *in, char *out, size_t len);

/* ---- prices (see the top of this file) ---- */
typedef struct {
    char type[64]; /* "m6i.large" */
    char zone[64]; /* spot: "us-west-2a"; on-demand: "" */
    double price;  /* USD per hour, > 0 */
} nw_price_t;

/** Merge on-demand prices into the table (types not in p keep theirs) and re-price every
 * offering. Entries without a positive price are skipped; for a type given twice,
 * which entry wins is unspecified. */
NW_MUST_USE nw_rc_t nw_catalog_set_od_prices(nw_catalog_t *c, const nw_price_t *p, size_t n,
                                             nw_err_t *err);
/** Merge spot prices by (type, zone) likewise; from now on spot offerings use them. */
NW_MUST_USE nw_rc_t nw_catalog_set_spot_prices(nw_catalog_t *c, const nw_price_t *p, size_t n,
                                               nw_err_t *err);
/** Merge a price table in the data/prices.json format ({"onDemand": {type: price}}). */
NW_MUST_USE nw_rc_t nw_catalog_load_prices(nw_catalog_t *c, const char *json, size_t len,
                                           nw_err_t *err);
/** The on-demand price of a type (listed or not); 0 = unknown. */
double nw_catalog_od_price(const nw_catalog_t *c, const char *type);
/** Entries in the on-demand (spot = 0) or spot (spot = 1) table. */
size_t nw_catalog_price_count(const nw_catalog_t *c, int spot);
/** A number that changes with every change to the catalog's types, offerings or prices
 * (a refresh, new zones; setting the same zones again leaves it): what was derived from
 * the catalog at one version holds while it stays (0 for NULL). Any thread. */
uint64_t nw_catalog_version(const nw_catalog_t *c);
/** Listed types without an on-demand price (their offerings are never available): the
 * count, and the first max names in names (borrowed; may be NULL). */
size_t nw_catalog_unpriced(const nw_catalog_t *c, const char **names, size_t max);

size_t nw_catalog_len(const nw_catalog_t *c);
const nw_itype_t *nw_catalog_at(const nw_catalog_t *c, size_t i);
const nw_itype_t *nw_catalog_find(const nw_catalog_t *c, const char *name);
const char *nw_catalog_region(const nw_catalog_t *c);

/** Copy t's offerings into out (max entries) with `available` computed: the
 * offering has a price and is not in the ICE cache at now (monotonic ns;
 * ice may be NULL). Returns the count. */
int nw_catalog_offerings(const nw_itype_t *t, const nw_ice_t *ice, int64_t now, nw_offering_t *out,
                         int max);

/** Cheapest available offering of t for capacity type ct (NULL = any); -1 if none. */
double nw_catalog_cheapest(const nw_itype_t *t, const char *ct, const nw_ice_t *ice, int64_t now);

/* ---- labels ---- */
typedef struct {
    char key[64];
    char value[64];
} nw_cat_label_t;

/** Well-known labels of the type (aws/karpenter-provider-aws pkg/apis/v1/labels.go; the
 * single-valued ones of pkg/providers/instancetype/types.go computeRequirements):
 * instance-type, arch, os, karpenter.k8s.aws/instance-{category,family,generation,size,
 * cpu,cpu-manufacturer,cpu-sustained-clock-speed-mhz,memory,hypervisor,
 * encryption-in-transit-supported,gpu-*,accelerator-*,local-nvme,network-bandwidth,
 * ebs-bandwidth,capability-flex} (those whose value is known). Returns the count (<= max). */
int nw_catalog_itype_labels(const nw_itype_t *t, nw_cat_label_t *out, int max);

/** Labels of one offering: zone, zone-id, capacity-type, region. */
int nw_catalog_offering_labels(const nw_catalog_t *c, const nw_offering_t *o, nw_cat_label_t *out,
                               int max);

/* ---- capacity and allocatable (karpenter-provider-aws pkg/providers/instancetype/types.go) ----
 * computeCapacity, pods(), ENILimitedPods, kubeReservedResources, systemReservedResources,
 * evictionThreshold, with the AMI family's feature flags (pkg/providers/amifamily:
 * resolver.go DefaultFamily, bottlerocket.go, windows.go). */

/* spec.amiFamily, or the family of the first amiSelectorTerms[].alias (EC2NodeClass.AMIFamily) */
typedef enum {
    NW_AMI_CUSTOM = 0, /* also AL2 and AL2023: DefaultFamily's flags */
    NW_AMI_AL2,
    NW_AMI_AL2023,
    NW_AMI_BOTTLEROCKET,
    NW_AMI_WINDOWS, /* Windows2019/2022/2025 */
} nw_ami_family_t;

/* A kubelet resource list (kubeReserved, systemReserved): which keys are set, their values. */
typedef struct {
    int has_cpu, has_memory, has_ephemeral;
    int64_t cpu_m, memory_bytes, ephemeral_bytes;
} nw_kubelet_rl_t;

/* One evictionHard signal: a quantity or a percentage of capacity ("100%" counts as 0). */
typedef struct {
    int set, percent;
    double pct;    /* when percent */
    int64_t bytes; /* otherwise */
} nw_eviction_signal_t;

typedef struct {
    double vm_memory_overhead_percent; /* settings.vmMemoryOverheadPercent, 0.075 */
    int reserved_enis;                 /* settings.reservedENIs, 0 */
    int64_t default_max_pods;          /* settings.defaultMaxPods: 0 = the family's (ENI-limited,
                                          Windows 110); N = pods when maxPods is unset */
    nw_ami_family_t family;
    int64_t max_pods;        /* spec.kubelet.maxPods; -1 = unset */
    int64_t pods_per_core;   /* spec.kubelet.podsPerCore; 0 = off */
    int64_t ephemeral_bytes; /* the node's ephemeral storage (its root volume, from
                                spec.blockDeviceMappings and the family's defaults:
                                nw_kubelet_overhead); 0 = 20 Gi */
    int raid0;               /* spec.instanceStorePolicy RAID0: a type with an instance store
                                has that store's size (GB) as ephemeral storage */
    nw_kubelet_rl_t kube_reserved, system_reserved;
    nw_eviction_signal_t evict_memory, evict_nodefs; /* evictionHard memory/nodefs.available */
} nw_overhead_opts_t;

/** Defaults: 0.075, 0 reserved ENIs, Custom family, no kubelet settings, 20 Gi root, no RAID0. */
void nw_catalog_overhead_opts_default(nw_overhead_opts_t *o);

typedef struct {
    int64_t cpu_m;
    int64_t memory_bytes;
    int64_t ephemeral_bytes;
    int64_t pods;
    int64_t nvidia_gpu, amd_gpu, neuron, neuroncore, gaudi, efa;
} nw_cat_res_t;

/** ENIs x (IPv4 per ENI - 1) + 2 less reserved ENIs (0 when no ENI is left). */
int64_t nw_catalog_itype_eni_pods(const nw_itype_t *t, int reserved_enis);
/** Karpenter's pods(): maxPods, else ENI-limited (or default_max_pods; Windows: 110), then
 * min(podsPerCore x vCPUs) where the family honours podsPerCore (not Bottlerocket). */
int64_t nw_catalog_itype_max_pods(const nw_itype_t *t, const nw_overhead_opts_t *o);
/** kube-reserved CPU in millicores for a vCPU count (6/1/0.5/0.25 % rule). */
int64_t nw_catalog_kube_reserved_cpu_m(int vcpu);
void nw_catalog_itype_capacity(const nw_itype_t *t, const nw_overhead_opts_t *o, nw_cat_res_t *out);
/** Capacity less kube-reserved, system-reserved and the evictionHard threshold (evictionSoft
 * does not count, as in Karpenter); negative results are 0. */
void nw_catalog_itype_allocatable(const nw_itype_t *t, const nw_overhead_opts_t *o,
                                  nw_cat_res_t *out);

/** True when t is "exotic" (metal or any GPU/accelerator), as Karpenter's launch filter says. */
bool nw_catalog_itype_is_exotic(const nw_itype_t *t);

#endif
