/*
 * scaler/aws/launch.h — launch, find and terminate instances for NodeClaims
 * (aws/karpenter-provider-aws pkg/providers/instance/instance.go, instance/filter/filter.go,
 * pkg/providers/launchtemplate/launchtemplate.go, pkg/cache/unavailableofferings.go).
 *
 * nw_launcher_launch turns one NodeClaim-like request into:
 *   - the candidate offerings: requested types × allowed zones that have a
 *     resolved subnet × allowed capacity types, available per catalog + ICE
 *     cache; exotic types (metal, GPU, accelerators) dropped while a plain one
 *     remains (unless min_values); spot offerings dearer than the cheapest
 *     on-demand one dropped when both are allowed; one capacity type per call
 *     (spot when allowed and available, else on-demand); at most 60 types,
 *     cheapest first;
 *   - one launch template per AMI/architecture, named
 *     "karpenter.k8s.aws/<hash>" (found by name, else created): ImageId,
 *     UserData (spec.userData base64-encoded, passed through unchanged),
 *     IamInstanceProfile.Name (spec.instanceProfile, or spec.role used as the
 *     instance-profile name), SecurityGroupIds, BlockDeviceMappings (spec, else
 *     /dev/xvda 20Gi gp3 encrypted for non-Custom families), MetadataOptions
 *     (defaults: endpoint enabled, IPv6 disabled, hop limit 1, tokens
 *     required), Monitoring, tags;
 *   - CreateFleet Type=instant, TotalTargetCapacity 1, lowest-price
 *     (on-demand) or price-capacity-optimized (spot), overrides over every
 *     candidate type × zone (subnet with the most free IPs per zone), tags on
 *     instance, volume and fleet.
 * Per-override ICE errors mark the ICE cache; when no instance comes back and
 * every error is capacity-class the result is NW_EAWS with class
 * NW_EC2_CAPACITY. A missing template (deleted behind our back) is recreated
 * and the fleet retried once.
 *
 * Tags: spec.tags, then kubernetes.io/cluster/<cluster>=owned,
 * karpenter.sh/nodepool, karpenter.k8s.aws/ec2nodeclass,
 * eks:eks-cluster-name (these win); instances and volumes also get
 * karpenter.sh/nodeclaim and Name=<nodeclaim>.
 *
 * Ownership: nw_launcher_new/nw_launcher_free; it borrows ec2, catalog, ice
 * and clock, which must outlive it.
 * Thread: one thread at a time (the controller).
 */
#ifndef NW_SCALER_AWS_LAUNCH_H
#define NW_SCALER_AWS_LAUNCH_H

#include <cjson/cJSON.h>

#include "common/clock.h"
#include "common/err.h"
#include "scaler/cloud/catalog.h"
#include "scaler/aws/ec2.h"
#include "scaler/cloud/ice.h"
#include "scaler/aws/nodeclass.h"
#include "scaler/cloud/cloud.h"

#define NW_LAUNCH_MAX_TYPES NW_CLOUD_MAX_LAUNCH_TYPES

typedef struct {
    const char *nodepool;                    /* karpenter.sh/nodepool */
    const char *nodeclaim;                   /* karpenter.sh/nodeclaim and Name */
    const cJSON *nodeclass;                  /* the EC2NodeClass object */
    const nw_nodeclass_resolved_t *resolved; /* its resolution */
    const char *const *types;                /* compatible instance types */
    int ntypes;
    const char *const *zones; /* allowed zones; NULL/0 = any */
    int nzones;
    const char *const *capacity_types; /* "spot", "on-demand"; NULL/0 = on-demand */
    int ncapacity_types;
    int min_values; /* the requirements carry minValues: keep exotic types */
} nw_launch_req_t;

typedef struct {
    char instance_id[64];
    char type[64];
    char zone[64];
    char zone_id[64];
    char subnet_id[64];
    char image_id[64];
    char capacity_type[16];
    char provider_id[192]; /* aws:///<zone>/<instance-id> */
    char launch_template[256];
    double price;
    /* on failure: the offering CreateFleet reported first, "" when none */
    char failed_type[64];
    char failed_zone[64];
    char failed_capacity_type[32];
} nw_launch_result_t;

typedef struct nw_launcher nw_launcher_t;

nw_launcher_t *nw_launcher_new(nw_ec2_t *ec2, const nw_catalog_t *catalog, nw_ice_t *ice,
                               const nw_clock_t *clock, const char *cluster_name);
void nw_launcher_free(nw_launcher_t *l);

/** Launch one instance. ae (nullable) gets the EC2 error class on failure;
 * NW_EINVAL when the class is not ready or nothing is launchable (the message
 * says which filter emptied the list). */
nw_rc_t nw_launcher_launch(nw_launcher_t *l, const nw_launch_req_t *req, nw_launch_result_t *out,
                           nw_ec2_error_t *ae, nw_err_t *err);

/** Terminate by instance id or providerID; idempotent (gone = done). */
nw_rc_t nw_launcher_terminate(nw_launcher_t *l, const char *id_or_provider_id, nw_err_t *err);

/** Instances of this cluster (tag filters of §1.12, states pending..stopped). */
nw_rc_t nw_launcher_list(nw_launcher_t *l, nw_ec2_instances_t *out, nw_err_t *err);

/** The launch template name this request would use for an AMI (for tests). */
void nw_launcher_template_name(nw_launcher_t *l, const nw_launch_req_t *req, const char *ami_id,
                               const char *capacity_type, char *out, size_t len);

#endif
