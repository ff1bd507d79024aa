/*
 * scaler/cloud/kubelet.h — an EC2NodeClass's kubelet settings as the allocatable math sees
 * them (scaler/cloud/catalog.h nw_overhead_opts_t): spec.kubelet maxPods, podsPerCore,
 * kubeReserved, systemReserved, evictionHard, and the AMI family that decides which of
 * them apply (aws/karpenter-provider-aws pkg/apis/v1/ec2nodeclass.go AMIFamily(),
 * pkg/providers/instancetype/types.go NewInstanceType).
 *
 * Pure: no I/O. The object is borrowed. Thread: any.
 */
#ifndef NW_SCALER_CLOUD_KUBELET_H
#define NW_SCALER_CLOUD_KUBELET_H

#include <cjson/cJSON.h>

#include "common/err.h"
#include "scaler/cloud/catalog.h"

/** spec.amiFamily, else the family of the first amiSelectorTerms[].alias ("al2023@latest"),
 * else Custom. */
nw_ami_family_t nw_kubelet_ami_family(const cJSON *nodeclass);

/** "AL2", "AL2023", "Bottlerocket", "Windows", "Custom". */
const char *nw_ami_family_name(nw_ami_family_t f);

/** Apply nodeclass's family and spec.kubelet to o (start from nw_overhead_opts_default and
 * the settings). A value that is not a quantity / percentage / integer is NW_EINVAL with
 * err->path naming the field ("spec.kubelet.kubeReserved.memory"); o is then unchanged.
 * nodeclass NULL: o unchanged, NW_OK. */
nw_rc_t nw_kubelet_overhead(const cJSON *nodeclass, nw_overhead_opts_t *o, nw_err_t *err);

#endif
