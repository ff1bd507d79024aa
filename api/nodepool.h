/*
 * api/nodepool.h — karpenter.sh/v1 NodePool admission: defaulting and validation
 * exactly as the v1.14.1 CRD (schema defaults, OpenAPI checks, CEL rules) does it
 * in kube-apiserver (aws/karpenter-provider-aws pkg/apis/crds/karpenter.sh_nodepools.yaml),
 * plus Karpenter's runtime checks (kubernetes-sigs/karpenter pkg/apis/v1/nodepool_validation.go
 * RuntimeValidate) reported as warnings.
 *
 * Pure functions on cJSON trees; no I/O. Thread: any.
 */
#ifndef NW_API_NODEPOOL_H
#define NW_API_NODEPOOL_H

#include <cjson/cJSON.h>

#include "api/admit.h"
#include "api/jsonpatch.h"
#include "api/kval.h"

/** Append to patch the operations that apply the CRD's schema defaults to obj:
 * minimal (nothing for a field already set), JSON null treated as absent, idempotent. */
NW_MUST_USE nw_rc_t nw_nodepool_defaults_apply(const cJSON *obj, nw_jsonpatch_t *patch);

/** Validate obj (already defaulted) into kv; old is the stored object on UPDATE
 * (NULL on CREATE) for the transition rules. Layer-D findings go to res as
 * warnings when res is not NULL. */
NW_MUST_USE nw_rc_t nw_nodepool_validate(const cJSON *obj, const cJSON *old, nw_kv_t *kv,
                                         nw_admit_result_t *res);

/* Shared with the EC2NodeClass and NodeClaim rules. */

/** The CRD's CEL restrictions on a label or requirement key (the rules on
 * spec.template.metadata.labels and spec.template.spec.requirements[].key): calls fail(msg)
 * for every rule key violates (aws: include the karpenter.k8s.aws rule; nodepool:
 * include the karpenter.sh/nodepool rule). Returns the number of failures. */
int nw_nodepool_validate_key_restrictions(const char *key, int aws, int nodepool,
                                          const char *fails[4]);

#endif
