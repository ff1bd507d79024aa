/*
 * scaler/aws/iam.h — the IAM Query API (version 2010-05-08, SigV4 service "iam", signed for
 * the partition's global region: us-east-1, cn-north-1 in China) for EC2NodeClass instance
 * profiles, and the instance-profile reconciliation of aws/karpenter-provider-aws
 * pkg/controllers/nodeclass/instanceprofile.go with pkg/providers/instanceprofile.
 *
 * The client is the EC2 Query client (scaler/aws/ec2.h) pointed at IAM: the same
 * retries, deadline, error classes (NoSuchEntity is not-found) and abort.
 *
 * Reconciliation (nw_iam_ensure_profile), for a class with spec.role:
 *   - the profile in status.instanceProfile is kept while it holds the role;
 *   - else a profile under the class's path /karpenter/<region>/<cluster>/<uid>/ that holds
 *     the role is adopted (a profile made before a crash, before its status was written);
 *   - else a profile under that path without a role (left by a try whose role did not
 *     exist) gets the role; else one is made: "<cluster>_<n>" (EC2NodeClass.
 *     InstanceProfileName: a 64-bit number from the region, the class name and random
 *     bytes), that path, the class's tags and kubernetes.io/cluster/<cluster>=owned,
 *     eks:eks-cluster-name, karpenter.k8s.aws/ec2nodeclass, topology.kubernetes.io/region
 *     (InstanceProfileTags); then the role (its last path segment) is added. A failed add
 *     (the role does not exist) keeps the profile for the next try, as Karpenter's
 *     instance-profile provider does, so retries make no new profile and delete none; the
 *     caller spaces the retries (scaler/aws/nodeclass.c).
 * A role change thus makes a new profile (the old one's role is not swapped: its instances
 * keep their credentials) and status.instanceProfile follows. nw_iam_gc_profiles deletes
 * the replaced ones (Karpenter's instance-profile garbage collection controller): under
 * the class's exact path, not the current one, and used by no instance (DescribeInstances
 * iam-instance-profile.arn, any state but terminated; Karpenter reads its NodeClaims'
 * annotation instead); the caller skips the pass that switched profiles.
 * A class with spec.instanceProfile uses it as it is, with no IAM call.
 * nw_iam_delete_profiles removes every profile under the class's path (its role first):
 * the EC2NodeClass finalizer's cleanup.
 *
 * Ownership: nw_iam_new returns an nw_ec2_t (nw_ec2_free). Thread: as ec2.h.
 */
#ifndef NW_SCALER_AWS_IAM_H
#define NW_SCALER_AWS_IAM_H

#include <cjson/cJSON.h>

#include "scaler/aws/ec2.h"

#define NW_IAM_VERSION "2010-05-08"

/** An IAM client: the endpoint cfg->iam (empty: the partition's global endpoint, by the
 * region's prefix), signed for us-east-1 (cn-north-1 for cn-* regions). */
NW_MUST_USE nw_rc_t nw_iam_new(const nw_awscfg_t *cfg, nw_creds_t *creds, const nw_clock_t *clock,
                               nw_ec2_t **out, nw_err_t *err);

/** GetInstanceProfile; NW_ENOTFOUND when there is none. */
NW_MUST_USE nw_rc_t nw_iam_get_profile(nw_ec2_t *iam, const char *name, nw_iam_profile_t *out,
                                       nw_ec2_error_t *ae, nw_err_t *err);
/** ListInstanceProfiles under path_prefix (every page); out is caller storage
 * (nw_ec2xml_iam_profiles_free). */
NW_MUST_USE nw_rc_t nw_iam_list_profiles(nw_ec2_t *iam, const char *path_prefix,
                                         nw_iam_profiles_t *out, nw_ec2_error_t *ae, nw_err_t *err);
/** Remove the profile's role (if any) and delete it; gone already = done. */
NW_MUST_USE nw_rc_t nw_iam_delete_profile(nw_ec2_t *iam, const char *name, nw_ec2_error_t *ae,
                                          nw_err_t *err);

/** The instance profile path of an EC2NodeClass (instanceprofile.FormatPath("karpenter",
 * region, cluster, uid); the name when the object has no uid). */
void nw_iam_class_path(const char *region, const char *cluster, const cJSON *nodeclass, char *out,
                       size_t len);

/** The profile launches of this class use, made or found as above, into out (len >= 129).
 * spec.instanceProfile: itself. NW_EAWS / NW_EIO with err saying which call failed. */
NW_MUST_USE nw_rc_t nw_iam_ensure_profile(nw_ec2_t *iam, const char *region, const char *cluster,
                                          const cJSON *nodeclass, char *out, size_t len,
                                          nw_err_t *err);

/** Replaced profiles: every profile under the class's exact path other than keep (the one
 * its launches use now) that no instance uses any more (DescribeInstances
 * iam-instance-profile.arn, any state but terminated) is deleted (its role first);
 * *deleted counts those, *kept the ones still in use (both nullable). */
NW_MUST_USE nw_rc_t nw_iam_gc_profiles(nw_ec2_t *iam, nw_ec2_t *ec2, const char *region,
                                       const char *cluster, const cJSON *nc, const char *keep,
                                       int *deleted, int *kept, nw_err_t *err);

/** Delete every profile under the class's path (the finalizer's cleanup); *deleted counts
 * them (nullable). */
NW_MUST_USE nw_rc_t nw_iam_delete_profiles(nw_ec2_t *iam, const char *region, const char *cluster,
                                           const cJSON *nodeclass, int *deleted, nw_err_t *err);

#endif
