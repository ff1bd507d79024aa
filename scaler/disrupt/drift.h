/*
 * scaler/disrupt/drift.h — is a launched NodeClaim drifted from its NodePool or
 * EC2NodeClass, and why (Karpenter's pkg/controllers/nodeclaim/disruption/drift.go and the AWS
 * provider's pkg/cloudprovider/drift.go). The first reason that applies wins, in Karpenter's order:
 *
 *   NodePoolDrifted       karpenter.sh/nodepool-hash on the NodeClaim differs from the
 *                         pool's (api/drifthash.h), both with hash version v3
 *   RequirementsDrifted   the NodeClaim's labels no longer satisfy the pool's
 *                         spec.template.spec.requirements (Karpenter's Compatible)
 *   InstanceTypeNotFound  the NodeClaim's instance type is gone from the catalog, or no
 *                         offering matches its zone and capacity type (only for
 *                         NodeClaims older than 1 h, as Karpenter does)
 *   NodeClassDrift        karpenter.k8s.aws/ec2nodeclass-hash differs, both at v5
 *   AMIDrift              the instance's AMI is not among the class's resolved AMIs
 *                         (those whose architecture fits the instance type)
 *   SecurityGroupDrift    the instance's security groups are not exactly the class's
 *   SubnetDrift           the instance's subnet is not among the class's
 *   PlacementGroupDrift   the NodeClaim's karpenter.k8s.aws/placement-group-id label (none:
 *                         "") is not the group the class resolves to (none: "")
 *
 * The labels compared with the requirements are the NodeClaim's, completed with
 * the instance type's and offering's well-known labels from the catalog where the
 * NodeClaim lacks them (Karpenter's NodeClaims carry them after launch).
 * Provider checks that lack their input (class not resolved, no instance facts)
 * are skipped, as Karpenter requeues on such errors without changing the condition.
 *
 * The Drifted condition the controller writes (driftmark.h) is the contract with
 * the disruption methods: type "Drifted", status "True", reason one of the names
 * above (nw_drift_reason_str), message the same name; absent when not drifted.
 *
 * Pure (no I/O, time passed in). Thread: any.
 */
#ifndef NW_SCALER_DISRUPT_DRIFT_H
#define NW_SCALER_DISRUPT_DRIFT_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "api/node.h"
#include "common/err.h"

#define NW_COND_DRIFTED "Drifted"

typedef enum {
    NW_DRIFT_NONE = 0,
    NW_DRIFT_NODEPOOL,        /* "NodePoolDrifted" */
    NW_DRIFT_REQUIREMENTS,    /* "RequirementsDrifted" */
    NW_DRIFT_INSTANCE_TYPE,   /* "InstanceTypeNotFound" */
    NW_DRIFT_NODECLASS,       /* "NodeClassDrift" */
    NW_DRIFT_AMI,             /* "AMIDrift" */
    NW_DRIFT_SECURITY_GROUP,  /* "SecurityGroupDrift" */
    NW_DRIFT_SUBNET,          /* "SubnetDrift" */
    NW_DRIFT_PLACEMENT_GROUP, /* "PlacementGroupDrift" */
    NW_DRIFT_REASONS
} nw_drift_reason_t;

/** The reason's name ("AMIDrift", ...; "" for NONE). Static storage. */
const char *nw_drift_reason_str(nw_drift_reason_t r);

/** The reason for a name, NW_DRIFT_NONE if unknown. */
nw_drift_reason_t nw_drift_reason_parse(const char *s);

/* Facts about the running instance (DescribeInstances); any field may be "". */
typedef struct {
    const char *image_id;
    const char *subnet_id;
    const char *const *sg_ids;
    size_t nsg;
} nw_drift_instance_t;

/* The EC2NodeClass as resolved from its selectors (scaler/aws/nodeclass.h). */
typedef struct {
    const char *const *ami_ids;
    const char *const *ami_arch; /* per AMI: "amd64", "arm64" or "" */
    size_t namis;
    const char *const *subnet_ids;
    size_t nsubnets;
    const char *const *sg_ids;
    size_t nsgs;
    /* the placement group the class resolves to ("" = none); NULL = not known (no verdict) */
    const char *placement_group;
} nw_drift_class_t;

typedef struct nw_catalog nw_catalog_t;

typedef struct {
    const nw_node_claim_t *nodeclaim;    /* required: its record (api/node.h) */
    const cJSON *nodepool;               /* required */
    const cJSON *nodeclass;              /* nullable: NodeClassDrift and provider checks skipped */
    const nw_drift_class_t *resolved;    /* nullable: AMI/SG/subnet checks skipped */
    const nw_drift_instance_t *instance; /* nullable: AMI from status.imageID; SG/subnet skipped */
    const nw_catalog_t *catalog; /* nullable: InstanceTypeNotFound skipped, no label completion */
    int64_t now_ns;              /* wall clock */
    const char *ca_bundle;       /* nullable: the CA bundle the EC2NodeClass hash includes */
} nw_drift_in_t;

/**
 * The drift reason for a NodeClaim (NW_DRIFT_NONE when not drifted). detail (n bytes,
 * nullable) receives a human sentence for events and logs ("instance AMI ami-1 is not
 * among the EC2NodeClass's AMIs [ami-2]"). Does not look at the Launched condition:
 * the caller only asks for launched NodeClaims.
 */
nw_drift_reason_t nw_drift_check(const nw_drift_in_t *in, char *detail, size_t n);

/* ---- catalog adapter (driftcat.c; internal to the drift rules) ---- */

/** Labels of the instance type (and of its offering in zone/capacity type, when found)
 * into keys/vals (max entries of 64 bytes each). -1 when the type is unknown. */
int nw_driftcat__type_labels(const nw_catalog_t *cat, const char *type, const char *zone,
                             const char *capacity_type, char (*keys)[64], char (*vals)[64],
                             int max);

/** 1 when the catalog has the type and an offering matching zone and capacity type
 * (either may be NULL/"" = any), 0 when it has the type but no such offering,
 * -1 when the type is unknown. */
int nw_driftcat__offering_exists(const nw_catalog_t *cat, const char *type, const char *zone,
                                 const char *capacity_type);

/** The type's architecture ("amd64"/"arm64") or NULL when unknown. Borrowed. */
const char *nw_driftcat__type_arch(const nw_catalog_t *cat, const char *type);

#endif
