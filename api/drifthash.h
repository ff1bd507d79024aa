/*
 * api/drifthash.h — the static-drift hashes Karpenter keeps in annotations
 * (kubernetes-sigs/karpenter pkg/apis/v1/nodepool.go Hash, pkg/controllers/nodepool/hash;
 * aws/karpenter-provider-aws pkg/apis/v1/ec2nodeclass.go Hash, pkg/controllers/nodeclass/hash):
 *
 *   karpenter.sh/nodepool-hash            + karpenter.sh/nodepool-hash-version: v3
 *   karpenter.k8s.aws/ec2nodeclass-hash   + karpenter.k8s.aws/ec2nodeclass-hash-version: v5
 *
 * on the NodePool / EC2NodeClass (written by the drift controller) and stamped on
 * every NodeClaim at creation (nw_drifthash_stamp_nodeclaim). A NodeClaim whose hash
 * differs from its pool's (or class's) at equal versions is NodePoolDrifted
 * (NodeClassDrift).
 *
 * The values are Karpenter's own, bit for bit: the same algorithm (mitchellh/hashstructure
 * v2, FormatV2, SlicesAsSets + IgnoreZeroValue + ZeroNil: FNV-1 64 over Karpenter's Go
 * structs, field names included) walked over the same Go types (drifthash.c has them as
 * tables), so a NodeClaim Karpenter stamped is not drifted when nodewarden takes over.
 * tests/data/karpenter-hash holds objects and the hashes Karpenter's code gives them
 * (tests/karphash, a Go test tool), and the unit tests compare every one.
 *
 * What that means for which changes drift:
 *  - NodePool: spec.template only (labels, annotations, taints, startupTaints,
 *    nodeClassRef, expireAfter, terminationGracePeriod); spec.template.spec.requirements
 *    are judged separately, nothing outside the template is hashed.
 *  - EC2NodeClass: spec minus the selector terms (subnet, securityGroup,
 *    capacityReservation, ami), ipPrefixCount and the literal amiFamily; the resolved
 *    family (amiFamily, else the alias's family, else Custom) and the cluster CA bundle
 *    (settings.clusterCABundle, as Karpenter's --cluster-ca-bundle) are hashed with it.
 *  - Go semantics, not JSON's: map key and list order never matter, durations compare by
 *    value ("720h" == "43200m"), expireAfter "Never" == absent, but an empty list or
 *    object present ([] / {}) differs from an absent one, and volumeSize is hashed as
 *    Kubernetes prints the quantity ("20Gi" != "21474836480").
 *
 * Pure; thread: any.
 */
#ifndef NW_API_DRIFTHASH_H
#define NW_API_DRIFTHASH_H

#include <cjson/cJSON.h>
#include <stdbool.h>

#include "common/err.h"

#define NW_ANN_NODEPOOL_HASH "karpenter.sh/nodepool-hash"
#define NW_ANN_NODEPOOL_HASH_VERSION "karpenter.sh/nodepool-hash-version"
#define NW_NODEPOOL_HASH_VERSION "v3"
#define NW_ANN_NODECLASS_HASH "karpenter.k8s.aws/ec2nodeclass-hash"
#define NW_ANN_NODECLASS_HASH_VERSION "karpenter.k8s.aws/ec2nodeclass-hash-version"
#define NW_NODECLASS_HASH_VERSION "v5"

/* A hash as text: a decimal uint64 (as Go's fmt.Sprint prints it) plus NUL. */
#define NW_HASH_LEN 24

/** The NodePool hash of a NodePool object into out. NW_EINVAL (path
 * "spec.template") when the object has no spec.template object, or naming the field
 * Karpenter could not decode. */
NW_MUST_USE nw_rc_t nw_drifthash_nodepool(const cJSON *nodepool, char out[NW_HASH_LEN],
                                          nw_err_t *err);

/** The EC2NodeClass hash of an EC2NodeClass object into out, for the cluster CA bundle
 * ca_bundle (base64 PEM as Karpenter holds it; NULL or "" when none is known). NW_EINVAL
 * (path "spec") when it has no spec object, or naming the field Karpenter could not
 * decode (a number where a string belongs, a bad duration or quantity). */
NW_MUST_USE nw_rc_t nw_drifthash_ec2nodeclass(const cJSON *nodeclass, const char *ca_bundle,
                                              char out[NW_HASH_LEN], nw_err_t *err);

/** The AMI family the EC2NodeClass hash uses: spec.amiFamily, else the family of
 * an `alias` AMI selector term (al2023@latest → "AL2023"), else "Custom".
 * Static storage or a string inside nodeclass (borrowed). */
const char *nw_drifthash_ami_family(const cJSON *nodeclass);

/**
 * Stamp a NodeClaim object being created: set metadata.annotations
 * karpenter.sh/nodepool-hash(-version) from the NodePool and, when nodeclass is
 * not NULL, karpenter.k8s.aws/ec2nodeclass-hash(-version) from the EC2NodeClass
 * (values computed from the objects, not read from their annotations, so a pool
 * created a moment ago is stamped right). nodeclaim is modified in place.
 * ca_bundle as for nw_drifthash_ec2nodeclass.
 * NW_EINVAL when the pool or class has no template/spec (nothing is stamped for it).
 */
NW_MUST_USE nw_rc_t nw_drifthash_stamp_nodeclaim(cJSON *nodeclaim, const cJSON *nodepool,
                                                 const cJSON *nodeclass, const char *ca_bundle,
                                                 nw_err_t *err);

/** Does obj's metadata.annotations[key] equal value (both present)? */
bool nw_drifthash_annotation_is(const cJSON *obj, const char *key, const char *value);

#endif
