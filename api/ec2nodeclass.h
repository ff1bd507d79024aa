/*
 * api/ec2nodeclass.h — karpenter.k8s.aws/v1 EC2NodeClass admission: the schema
 * default of metadataOptions, and every validation rule of the v1.14.1 CRD
 * (aws/karpenter-provider-aws pkg/apis/crds/karpenter.k8s.aws_ec2nodeclasses.yaml) in
 * kube-apiserver wording.
 *
 * Pure functions on cJSON trees; no I/O. Thread: any.
 */
#ifndef NW_API_EC2NODECLASS_H
#define NW_API_EC2NODECLASS_H

#include <cjson/cJSON.h>

#include "api/admit.h"
#include "api/jsonpatch.h"
#include "api/kval.h"

/** Append the schema-default operations for obj to patch (metadataOptions and its
 * fields; null = absent; minimal; idempotent). */
NW_MUST_USE nw_rc_t nw_api_ec2nodeclass_default(const cJSON *obj, nw_jsonpatch_t *patch);

/** Validate obj (already defaulted) into kv. old: the stored object on UPDATE or NULL
 * (EC2NodeClass has no transition rules; accepted for symmetry). */
NW_MUST_USE nw_rc_t nw_api_ec2nodeclass_validate(const cJSON *obj, const cJSON *old, nw_kv_t *kv,
                                                 nw_admit_result_t *res);

/** Admission warnings (not denials) for fields that have no effect, or another effect
 * than Custom's, with the class's AMI family (spec.amiFamily, else its alias's):
 * the nodewarden.io/bootstrap annotation on a family nodewarden generates for (or with a
 * value it does not know); userData merged into a generated bootstrap; spec.kubelet with
 * Custom (planning only, without the kubeadm bootstrap); Bottlerocket's ignored kubelet
 * fields (podsPerCore, evictionSoft, evictionSoftGracePeriod); an alias with amiFamily
 * Custom; instanceStorePolicy on Windows. */
void nw_ec2nodeclass_warn(const cJSON *obj, nw_admit_result_t *res);

#endif
