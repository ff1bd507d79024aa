/*
 * scaler/aws/nodeclass.h — resolve an EC2NodeClass's subnets, security groups
 * and AMIs from its selector terms, and build the status to write back.
 *
 * Semantics (aws/karpenter-provider-aws pkg/apis/v1/ec2nodeclass.go, pkg/providers/subnet,
 * securitygroup, amifamily/ami.go): terms are ORed, fields inside a term
 * are ANDed; `tags: {k: "*"}` means "has tag k"; subnet terms take id/tags,
 * security-group terms id/name/tags, AMI terms id/name/owner/tags (a name
 * without owner searches owners self and amazon). AMI `ssmParameter`: the
 * parameter's value (an AMI id) through SSM (scaler/aws/ssm.h); AMI `alias`
 * (<family>@<version>, pkg/providers/amifamily/{al2,al2023,bottlerocket,windows}.go
 * DescribeImageQuery): the family's SSM parameters for the cluster's Kubernetes
 * version (major.minor) and each architecture and variant, the found ids described:
 *   al2023: /aws/service/eks/optimized-ami/<k8s>/amazon-linux-2023/<x86_64|arm64>/
 *           <standard|nvidia|neuron (x86_64 only)>/<recommended | amazon-eks-node-al2023-
 *           <arch>-<variant>-<k8s>-<version>>/image_id;
 *   al2:    /aws/service/eks/optimized-ami/<k8s>/amazon-linux-2[-arm64|-gpu]/<recommended |
 *           amazon-eks[-arm64|-gpu]-node-<k8s>-<version>>/image_id (-gpu: nvidia and neuron);
 *   bottlerocket: /aws/service/bottlerocket/aws-k8s-<k8s>[-nvidia]/<x86_64|arm64>/
 *           <latest | version without its "v">/image_id (x86_64 standard also neuron);
 *   windows2019|2022|2025: /aws/service/ami-windows-latest/Windows_Server-<2019|2022|2025>-
 *           English-Core-EKS_Optimized-<k8s>/image_id (latest only).
 * A variant is a requirement on the AMI (types.go Variant.Requirements): standard: no GPU
 * and no accelerator; nvidia: a GPU; neuron: an accelerator; nw_nodeclass_ami_for picks
 * by it. Without SSM, or when the Kubernetes version is unknown, such a term resolves
 * to nothing and says why. Only available AMIs count; per architecture (and variant)
 * the newest non-deprecated image wins (a deprecated one only if nothing else exists).
 *
 * Ownership: nw_nodeclass_resolved_t is caller storage (nw_nodeclass_resolved_cleanup).
 * The cache owns its entries; pointers it returns are borrowed until the next
 * nw_nodeclass_cache_get for the same class or nw_nodeclass_cache_free.
 * Thread: the cache belongs to one thread at a time (the AWS cloud serialises it with its
 * mutex, scaler/aws/cloud.c).
 */
#ifndef NW_SCALER_AWS_NODECLASS_H
#define NW_SCALER_AWS_NODECLASS_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/clock.h"
#include "common/err.h"
#include "scaler/aws/ec2.h"
#include "scaler/aws/ssm.h"
#include "scaler/cloud/catalog.h"

#define NW_NC_MAX_TERMS 30

typedef struct {
    char id[64];
    char zone[64];
    char zone_id[64];
    int64_t available_ips;
} nw_nc_subnet_t;

typedef struct {
    char id[64];
    char name[256];
} nw_nc_sg_t;

typedef struct {
    char id[64];
    char name[256];
    char arch[8];     /* Kubernetes name: amd64, arm64 */
    char variant[12]; /* an alias's: "standard", "nvidia", "neuron"; "" = any type */
    int64_t creation_ns;
    int deprecated;
} nw_nc_ami_t;

/* A capacity reservation the class's capacityReservationSelectorTerms found (active, not
 * past its end; status.capacityReservations) */
typedef struct {
    char id[64];
    char type[64];
    char zone[64];
    char zone_id[64];
    char owner[24];
    char match[16];            /* instanceMatchCriteria: open, targeted */
    char reservation_type[24]; /* default, capacity-block */
    int interruptible;
    int expiring;      /* a capacity block within 40 minutes of its end (state: expiring) */
    int64_t available; /* AvailableInstanceCount when resolved */
    int64_t end_ns;    /* wall clock; 0 = none */
} nw_nc_cr_t;

typedef struct {
    char name[256];      /* metadata.name */
    char ami_family[32]; /* spec.amiFamily (or the alias family), "" if none */
    nw_nc_subnet_t *subnets;
    size_t nsubnets;
    nw_nc_sg_t *sgs;
    size_t nsgs;
    nw_nc_ami_t *amis;
    size_t namis;
    /* per selector term: how many objects it found (-1: the term could not be asked) */
    int nsubnet_terms, nsg_terms, nami_terms;
    int subnet_found[NW_NC_MAX_TERMS], sg_found[NW_NC_MAX_TERMS], ami_found[NW_NC_MAX_TERMS];
    char ami_term_note[NW_NC_MAX_TERMS][256]; /* why a term found nothing, if known */
    char instance_profile[129]; /* what launches use (scaler/aws/iam.h), "" until known */
    char pg_id[64];             /* spec.placementGroupSelector resolved; "" = none */
    char pg_strategy[16];
    int pg_partitions;         /* a partition group's partition count */
    int pg_selected, pg_ready; /* the spec has a selector; it found an available group */
    char pg_message[256];
    char profile_message[512]; /* why there is none */
    nw_nc_cr_t *crs;           /* spec.capacityReservationSelectorTerms resolved, sorted by id */
    size_t ncrs;
    int crs_selected, crs_ready; /* the spec has terms; they could be asked */
    int crs_off; /* the ReservedCapacity gate is off: terms not resolved, no condition */
    char crs_message[256];
    int64_t crs_synced_ns; /* monotonic time of the DescribeCapacityReservations (0: never) */
    int subnets_ready, sgs_ready, amis_ready, profile_ready, ready;
    char reason[64]; /* first failing condition, e.g. "SubnetsNotFound" */
    char message[512];
    /* the cache's validation hook (nw_nodeclass_cache_set_validate): asked, passed, and why
     * not (condition ValidationSucceeded) */
    int validated, valid_ready;
    char valid_reason[64];
    char valid_message[512];
} nw_nodeclass_resolved_t;

void nw_nodeclass_resolved_cleanup(nw_nodeclass_resolved_t *r);

/** Resolve nodeclass (an EC2NodeClass object). API failures are returned
 * (NW_EAWS ...); selectors that match nothing are not errors: they make the
 * class not ready (r->ready = 0 with reason and message). NW_EINVAL when the
 * object lacks metadata.name or a selector list. */
NW_MUST_USE nw_rc_t nw_nodeclass_resolve(nw_ec2_t *ec2, const cJSON *nodeclass,
                                         nw_nodeclass_resolved_t *r, nw_err_t *err);

/* What `alias` and `ssmParameter` terms need: the SSM client and the cluster's Kubernetes
 * version ("1.31", from the API server's /version; the callback may fail, and is asked
 * again at the next resolution). */
typedef struct {
    nw_ssm_t *ssm; /* NULL: no SSM */
    nw_rc_t (*k8s_version)(void *ud, char *out, size_t len, nw_err_t *err);
    void *ud;
} nw_nc_ssm_t;

/** nw_nodeclass_resolve with SSM (ssm NULL: as nw_nodeclass_resolve). */
NW_MUST_USE nw_rc_t nw_nodeclass_resolve_ssm(nw_ec2_t *ec2, const nw_nc_ssm_t *ssm,
                                             const cJSON *nodeclass, nw_nodeclass_resolved_t *r,
                                             nw_err_t *err);

/** spec.capacityReservationSelectorTerms into r->crs (aws/karpenter-provider-aws
 * pkg/providers/capacityreservation types.go QueriesFromSelectorTerms, provider.go List,
 * controllers/nodeclass/capacityreservation.go): a term with an id asks for that id (a
 * missing one finds nothing), a term with tags and/or instanceMatchCriteria asks with the
 * filters state=active, owner-id (ownerID), tag:<k>=<v> or tag-key=<k> ("*"),
 * instance-match-criteria; every query also filters state=active. Reservations are
 * deduplicated, those past their end dropped, those of another match criteria than open and
 * targeted skipped, and sorted by id; a capacity block within 40 minutes of its end is
 * expiring. now_wall_ns: wall clock. An API failure leaves r->crs empty, crs_ready 0 and
 * says why in crs_message (and returns the error); no terms: nothing asked, crs_ready 1. */
NW_MUST_USE nw_rc_t nw_nodeclass_resolve_crs(nw_ec2_t *ec2, const cJSON *nodeclass,
                                             int64_t now_wall_ns, nw_nodeclass_resolved_t *r,
                                             nw_err_t *err);

/** The AMI of the resolution a type launches with: its architecture, and a variant that
 * fits its GPUs and accelerators; NULL when none does. */
const nw_nc_ami_t *nw_nodeclass_ami_for(const nw_nodeclass_resolved_t *r, const nw_itype_t *t);

/** The family of an alias ("al2023@latest" -> "AL2023"; NULL when the alias names none of
 * al2, al2023, bottlerocket, windows2019, windows2022, windows2025). */
const char *nw_nodeclass_alias_family(const char *alias);

/** The status object to write back: subnets {id, zone, zoneID}, securityGroups
 * {id, name}, amis {id, name, requirements}, instanceProfile (the resolved one; else
 * spec.instanceProfile), conditions SubnetsReady, SecurityGroupsReady, AMIsReady,
 * InstanceProfileReady (when the cache knows IAM or the spec names a profile),
 * capacityReservations {id, availabilityZone, instanceType, instanceMatchCriteria, ownerID,
 * reservationType, state, endTime, interruptible} and CapacityReservationsReady (always:
 * the ReservedCapacity feature gate is on), ValidationSucceeded (when the cache has a
 * validation hook), Ready.
 * now_ns stamps lastTransitionTime. Owned by the caller (cJSON_Delete). */
cJSON *nw_nodeclass_status_json(const nw_nodeclass_resolved_t *r, const cJSON *nodeclass,
                                int64_t now_ns);

/* ---- cache with a TTL (Karpenter refreshes subnets/AMIs every minute) ---- */
typedef struct nw_nodeclass_cache nw_nodeclass_cache_t;

nw_nodeclass_cache_t *nw_nodeclass_cache_new(nw_ec2_t *ec2, const nw_clock_t *clock,
                                             int64_t ttl_ns);
void nw_nodeclass_cache_free(nw_nodeclass_cache_t *c);
/** Resolved class, from the cache when younger than the TTL and the selectors
 * are unchanged; otherwise resolved again. */
NW_MUST_USE nw_rc_t nw_nodeclass_cache_get(nw_nodeclass_cache_t *c, const cJSON *nodeclass,
                                           const nw_nodeclass_resolved_t **out, nw_err_t *err);
/** Make and find the instance profiles of classes with spec.role through this IAM client
 * (borrowed; NULL: no IAM, a role-only class is then not ready), for the cluster and region
 * (scaler/aws/iam.h nw_iam_ensure_profile). Without this, spec.instanceProfile still
 * counts. */
void nw_nodeclass_cache_set_iam(nw_nodeclass_cache_t *c, nw_ec2_t *iam, const char *region,
                                const char *cluster);
/** The ReservedCapacity feature gate (default on). Off: capacityReservationSelectorTerms are
 * not resolved (status lists no reservations, no CapacityReservationsReady condition), so no
 * reserved offerings and no launches into reservations (Karpenter skips its
 * CapacityReservation reconciler and reserved offerings without the gate). */
void nw_nodeclass_cache_set_reserved_capacity(nw_nodeclass_cache_t *c, int on);
/* What a launch of the class needs besides what its selectors find (the AWS cloud: a
 * bootstrap it can render, scaler/aws/cloud.c): true when launches can succeed; otherwise
 * reason (a CamelCase word) and msg say why. Called under the cache's thread rules with the
 * resolution it judges. */
typedef bool (*nw_nc_validate_fn)(void *ud, const cJSON *nodeclass,
                                  const nw_nodeclass_resolved_t *r, char *reason, size_t rlen,
                                  char *msg, size_t mlen);

/** Judge every resolution with fn (NULL: none; no ValidationSucceeded condition then). A
 * class it fails is not ready (reason and message its own when the selectors found everything)
 * and is judged again every 10 s, without resolving its selectors again, until it passes. */
void nw_nodeclass_cache_set_validate(nw_nodeclass_cache_t *c, nw_nc_validate_fn fn, void *ud);

/** Use SSM for alias and ssmParameter terms (copied; its pointers borrowed). */
void nw_nodeclass_cache_set_ssm(nw_nodeclass_cache_t *c, const nw_nc_ssm_t *ssm);
/** The count the latest resolution found for capacity reservation id (-1: none has it), and
 * when (monotonic ns, in *synced). */
int64_t nw_nodeclass_cache_cr_available(const nw_nodeclass_cache_t *c, const char *id,
                                        int64_t *synced);
/** Drop every entry (e.g. after a launch failed with a not-found subnet). */
void nw_nodeclass_cache_invalidate(nw_nodeclass_cache_t *c);

#endif
