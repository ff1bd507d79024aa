/*
 * api/wellknown.h — the well-known label, annotation, taint, tag and finalizer
 * names of Karpenter (karpenter.sh, karpenter.k8s.aws) and Kubernetes that more than
 * one file uses, named once. Values as in upstream Karpenter v1
 * (pkg/apis/v1/labels.go, pkg/apis/v1/taints.go; karpenter-provider-aws
 * pkg/apis/v1/labels.go) and Kubernetes (k8s.io/api/core/v1/well_known_labels.go).
 *
 * Thread: any (constants only).
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

#endif
