/*
 * api/wellknown.h — the Karpenter names nodewarden reads and writes on objects, in one
 * place (kubernetes-sigs/karpenter pkg/apis/v1/labels.go and taints.go,
 * aws/karpenter-provider-aws pkg/apis/v1/labels.go).
 *
 * Thread: any (constants only).
 */
#ifndef NW_API_WELLKNOWN_H
#define NW_API_WELLKNOWN_H

#define NW_LABEL_NODEPOOL "karpenter.sh/nodepool"
#define NW_LABEL_NODECLASS "karpenter.k8s.aws/ec2nodeclass"
#define NW_LABEL_CAPACITY_TYPE "karpenter.sh/capacity-type"
#define NW_LABEL_INSTANCE_TYPE "node.kubernetes.io/instance-type"
#define NW_LABEL_ZONE "topology.kubernetes.io/zone"
#define NW_LABEL_INITIALIZED "karpenter.sh/initialized"
#define NW_FINALIZER "karpenter.sh/termination"
#define NW_TAINT_UNREGISTERED "karpenter.sh/unregistered"
#define NW_TAINT_DISRUPTED "karpenter.sh/disrupted" /* effect NoSchedule */
#define NW_TAG_NODECLAIM "karpenter.sh/nodeclaim"

#endif
