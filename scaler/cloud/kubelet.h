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
const char *nw_kubelet_ami_family_name(nw_ami_family_t f);

/* One default block device of an AMI family (gp3, encrypted). */
typedef struct {
    const char *device; /* "/dev/xvda" */
    int64_t gib;
} nw_ami_bdm_t;

/** The block devices a launch gets when spec.blockDeviceMappings is empty (aws/
 * karpenter-provider-aws pkg/providers/amifamily DefaultBlockDeviceMappings: AL2 and AL2023
 * /dev/xvda 20Gi; Bottlerocket /dev/xvda 4Gi + /dev/xvdb 20Gi; Windows /dev/sda1 50Gi;
 * Custom none, the AMI's own). Fills out[0..2), returns the count. */
int nw_kubelet_ami_default_bdms(nw_ami_family_t f, nw_ami_bdm_t out[2]);

/** The device the kubelet's ephemeral storage is on (EphemeralBlockDevice): /dev/xvda,
 * Bottlerocket /dev/xvdb, Windows /dev/sda1; NULL for Custom. */
const char *nw_kubelet_ami_ephemeral_device(nw_ami_family_t f);

/** Apply nodeclass's family and spec.kubelet to o (start from nw_catalog_overhead_opts_default and
 * the settings), and its ephemeral storage as types.go ephemeralStorage() finds it: the
 * rootVolume mapping's size, else (Custom) the last mapping's, else the mapping of the
 * family's ephemeral device, else the family's default (o->ephemeral_bytes), and
 * instanceStorePolicy RAID0 (o->raid0). A value that is not a quantity / percentage / integer is
 * NW_EINVAL with err->path naming the field ("spec.kubelet.kubeReserved.memory",
 * "spec.blockDeviceMappings[0].ebs.volumeSize"); o is then unchanged.
 * nodeclass NULL: o unchanged, NW_OK. */
NW_MUST_USE nw_rc_t nw_kubelet_overhead(const cJSON *nodeclass, nw_overhead_opts_t *o,
                                        nw_err_t *err);

#endif
