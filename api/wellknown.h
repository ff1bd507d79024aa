/*
 * api/wellknown.h — the well-known label, annotation, taint, tag and finalizer
 * names of Karpenter (karpenter.sh, karpenter.k8s.aws) and Kubernetes that more than
 * one file uses, named once. Values as in upstream Karpenter v1
 * (pkg/apis/v1/labels.go, pkg/apis/v1/taints.go; karpenter-provider-aws
 * pkg/apis/v1/labels.go) and Kubernetes (k8s.io/api/core/v1/well_known_labels.go).
 *
 * The well-known label table below is the one list of Karpenter's well-known labels; the
 * functions (api/wellknown.c) answer from it.
 *
 * Thread: any (constants, and a sorted copy built once under pthread_once).
 */
#ifndef NW_API_WELLKNOWN_H
#define NW_API_WELLKNOWN_H

/* labels (also EC2 tag keys on the instances) */
#define NW_LABEL_NODEPOOL "karpenter.sh/nodepool"
#define NW_LABEL_NODECLAIM "karpenter.sh/nodeclaim"
#define NW_LABEL_NODECLASS "karpenter.k8s.aws/ec2nodeclass"
#define NW_LABEL_CAPACITY_TYPE "karpenter.sh/capacity-type"
#define NW_LABEL_REGISTERED "karpenter.sh/registered"
#define NW_LABEL_INITIALIZED "karpenter.sh/initialized"
#define NW_LABEL_INSTANCE_TYPE "node.kubernetes.io/instance-type"
#define NW_LABEL_ZONE "topology.kubernetes.io/zone"
#define NW_LABEL_ZONE_ID "topology.k8s.aws/zone-id"
#define NW_LABEL_REGION "topology.kubernetes.io/region"
/* a reserved node's capacity reservation (karpenter-provider-aws pkg/apis/v1/labels.go) */
#define NW_LABEL_CAPACITY_RESERVATION_ID "karpenter.k8s.aws/capacity-reservation-id"
#define NW_LABEL_CAPACITY_RESERVATION_TYPE "karpenter.k8s.aws/capacity-reservation-type"
#define NW_LABEL_CAPACITY_RESERVATION_INTERRUPTIBLE                                                \
    "karpenter.k8s.aws/capacity-reservation-interruptible"
#define NW_LABEL_ARCH "kubernetes.io/arch"
#define NW_LABEL_OS "kubernetes.io/os"
#define NW_LABEL_EXCLUDE_LB "node.kubernetes.io/exclude-from-external-load-balancers"
/* the EC2 tag that names an instance's NodeClaim */
#define NW_TAG_NODECLAIM NW_LABEL_NODECLAIM

/* annotations */
#define NW_ANN_DO_NOT_DISRUPT "karpenter.sh/do-not-disrupt"
#define NW_ANN_TERMINATION_TS "karpenter.sh/nodeclaim-termination-timestamp"
#define NW_ANN_NODEPOOL_HASH "karpenter.sh/nodepool-hash"
#define NW_ANN_NODEPOOL_HASH_VERSION "karpenter.sh/nodepool-hash-version"
#define NW_ANN_NODECLASS_HASH "karpenter.k8s.aws/ec2nodeclass-hash"
#define NW_ANN_NODECLASS_HASH_VERSION "karpenter.k8s.aws/ec2nodeclass-hash-version"

/* taints */
#define NW_TAINT_DISRUPTED "karpenter.sh/disrupted" /* effect NoSchedule */
#define NW_TAINT_UNREGISTERED "karpenter.sh/unregistered"

/* finalizer */
#define NW_FINALIZER "karpenter.sh/termination"

/* ---- the well-known labels: one table, every list generated from it -------------------
 *
 * Karpenter's WellKnownLabels: the core set (kubernetes-sigs/karpenter pkg/apis/v1/labels.go)
 * and the AWS provider's additions (aws/karpenter-provider-aws pkg/apis/v1/labels.go,
 * v1.14.1). X(key, metric) per label, in the order Karpenter's node metrics list their
 * labels; metric is the label's name in those metrics (the key after its last "/", lower
 * case, "-" as "_"). Users: api/wellknown.c (lookups, the sorted list, the keys the AWS
 * CRDs allow), api/nodepool_validate.c, scaler/metrics/kmetrics.c (metric label names). */
#define NW_WELLKNOWN_LABELS(X)                                                                     \
    X(NW_LABEL_NODEPOOL, "nodepool")                                                               \
    X(NW_LABEL_ZONE, "zone")                                                                       \
    X(NW_LABEL_REGION, "region")                                                                   \
    X(NW_LABEL_INSTANCE_TYPE, "instance_type")                                                     \
    X(NW_LABEL_ARCH, "arch")                                                                       \
    X(NW_LABEL_OS, "os")                                                                           \
    X(NW_LABEL_CAPACITY_TYPE, "capacity_type")                                                     \
    X("node.kubernetes.io/windows-build", "windows_build")                                         \
    X(NW_LABEL_CAPACITY_RESERVATION_ID, "capacity_reservation_id")                                 \
    X(NW_LABEL_CAPACITY_RESERVATION_TYPE, "capacity_reservation_type")                             \
    X(NW_LABEL_CAPACITY_RESERVATION_INTERRUPTIBLE, "capacity_reservation_interruptible")           \
    X("karpenter.k8s.aws/instance-hypervisor", "instance_hypervisor")                              \
    X("karpenter.k8s.aws/instance-encryption-in-transit-supported",                                \
      "instance_encryption_in_transit_supported")                                                  \
    X("karpenter.k8s.aws/instance-category", "instance_category")                                  \
    X("karpenter.k8s.aws/instance-capability-flex", "instance_capability_flex")                    \
    X("karpenter.k8s.aws/instance-family", "instance_family")                                      \
    X("karpenter.k8s.aws/instance-generation", "instance_generation")                              \
    X("karpenter.k8s.aws/instance-size", "instance_size")                                          \
    X("karpenter.k8s.aws/instance-local-nvme", "instance_local_nvme")                              \
    X("karpenter.k8s.aws/instance-cpu", "instance_cpu")                                            \
    X("karpenter.k8s.aws/instance-cpu-manufacturer", "instance_cpu_manufacturer")                  \
    X("karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz",                                  \
      "instance_cpu_sustained_clock_speed_mhz")                                                    \
    X("karpenter.k8s.aws/instance-memory", "instance_memory")                                      \
    X("karpenter.k8s.aws/instance-ebs-bandwidth", "instance_ebs_bandwidth")                        \
    X("karpenter.k8s.aws/instance-network-bandwidth", "instance_network_bandwidth")                \
    X("karpenter.k8s.aws/instance-gpu-name", "instance_gpu_name")                                  \
    X("karpenter.k8s.aws/instance-gpu-manufacturer", "instance_gpu_manufacturer")                  \
    X("karpenter.k8s.aws/instance-gpu-count", "instance_gpu_count")                                \
    X("karpenter.k8s.aws/instance-gpu-memory", "instance_gpu_memory")                              \
    X("karpenter.k8s.aws/instance-accelerator-name", "instance_accelerator_name")                  \
    X("karpenter.k8s.aws/instance-accelerator-manufacturer", "instance_accelerator_manufacturer")  \
    X("karpenter.k8s.aws/instance-accelerator-count", "instance_accelerator_count")                \
    X(NW_LABEL_ZONE_ID, "zone_id")                                                                 \
    X("karpenter.k8s.aws/instance-tenancy", "instance_tenancy")                                    \
    X("karpenter.k8s.aws/placement-group-id", "placement_group_id")                                \
    X("karpenter.k8s.aws/placement-group-partition", "placement_group_partition")

/* the metric label names of NW_WELLKNOWN_LABELS, in its order, each followed by a comma
 * (for a static initializer: {NW_WELLKNOWN_METRIC_NAMES "node_name"}) */
#define NW_WELLKNOWN_METRIC_NAME_(key, metric) metric,
#define NW_WELLKNOWN_METRIC_NAMES NW_WELLKNOWN_LABELS(NW_WELLKNOWN_METRIC_NAME_)

#include <stdbool.h>
#include <stddef.h>

/** Karpenter's NormalizedLabels: the well-known key an alias stands for
 * (failure-domain.beta.kubernetes.io/zone -> topology.kubernetes.io/zone, region,
 * beta.kubernetes.io/arch|os, beta.kubernetes.io/instance-type), else key itself.
 * Static storage or the argument. */
const char *nw_wellknown_normalize(const char *key);

/** The deprecated alias that nw_wellknown_normalize maps to key (each normalised key has
 * one), or NULL. */
const char *nw_wellknown_alias(const char *key);

/** Is key one of the well-known labels of NW_WELLKNOWN_LABELS (binary search). */
bool nw_wellknown_is_known(const char *key);

/** The well-known keys in NW_WELLKNOWN_LABELS order; *n (if not NULL) receives the count. */
const char *const *nw_wellknown_labels(size_t *n);

/** The karpenter.k8s.aws keys the AWS CRDs allow in NodePool labels and requirements:
 * every well-known karpenter.k8s.aws label and karpenter.k8s.aws/ec2nodeclass. */
bool nw_wellknown_aws_allowed(const char *key);

/** Karpenter's IsRestrictedNodeLabel (with the AWS provider's karpenter.k8s.aws
 * domain): well-known labels, and labels whose domain ends with kubernetes.io,
 * k8s.io, karpenter.sh or karpenter.k8s.aws unless it ends with kops.k8s.io,
 * node.kubernetes.io or node-restriction.kubernetes.io; and kubernetes.io/hostname.
 * These are never copied from requirements onto a node's labels. */
bool nw_wellknown_is_restricted_node_label(const char *key);

#endif
