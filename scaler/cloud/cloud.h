/*
 * scaler/cloud/cloud.h — the provider-neutral cloud the controllers use (after Karpenter's
 * CloudProvider interface, pkg/cloudprovider/types.go): launch an instance for a
 * NodeClaim, terminate one, list the cluster's instances, ask one instance's state,
 * resolve a node class, and the instance catalog with its unavailable offerings.
 *
 *   nw_cloud_t *cloud = ...;                   // scaler/aws/cloud.h builds the AWS one
 *   cloud->ops->launch(cloud, &req, &res, &ce, &err);  // res.provider_id
 *   cloud->ops->terminate(cloud, res.provider_id, &err);
 *   cloud->ops->list(cloud, &instances, &err);          // nw_cloud_instances_free
 *   cloud->ops->instance_state(cloud, provider_id, state, sizeof state, &err);
 *   const nw_catalog_t *cat = cloud->ops->catalog(cloud);
 *
 * Every type here is the provider's answer in neutral terms: a provider translates its
 * own errors and instance descriptions into them (the AWS translation is
 * scaler/aws/cloud.c). The unit tests use one fake (tests/unit/fakecloud.c).
 *
 * Instance states use the lifecycle words "pending", "running", "shutting-down",
 * "terminated", "stopping", "stopped" (a provider maps its own onto them).
 *
 * Idempotent launches: a launch request carries a client token (req.client_token, at most
 * NW_CLOUD_TOKEN_MAX characters) that the provider passes to its create calls, so that a
 * retry of a launch whose answer was lost (a timeout) returns the instance the first try
 * made instead of making a second one. The NodeClaim launch path derives it from the
 * NodeClaim's uid (scaler/nodeclaim/nodeclaim.c); the error says when the provider has
 * spent the token on a launch that made nothing (token_spent: the next try needs a new
 * one) or refused it because it was used with other parameters (token_conflict).
 *
 * Ownership: a provider's constructor / cloud->ops->free. Lists returned by list are the
 * caller's (nw_cloud_instances_free); a resolved class is borrowed until the next
 * resolve; the catalog and the ICE cache are the cloud's.
 * Thread: the reconcile thread calls every operation but instance_health; launch and list
 * may also be called at the same time from the NodeClaim launch workers
 * (scaler/nodeclaim/nodeclaim.h), and instance_health is called only from the
 * instance-health thread (scaler/controllers/repair.h), so a provider makes those three
 * safe to run concurrently with each other and with the reconcile thread's calls (the
 * threads: docs/internals/architecture.md). resolve, class_status and offer_zones are the reconcile
 * thread's alone (a resolved class is borrowed until that thread's next resolve); the
 * catalog's instance types may be read from a launch (offer_zones changes offerings only;
 * refresh, on the reconcile thread, replaces them only while no launch runs), the ICE
 * cache is locked.
 */
#ifndef NW_SCALER_CLOUD_CLOUD_H
#define NW_SCALER_CLOUD_CLOUD_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/err.h"
#include "scaler/cloud/catalog.h"
#include "scaler/cloud/ice.h"

/* room for an instance's tags, packed: EC2 allows 50 of up to 128 + 256 bytes (19 KB),
 * kept inline this was 20.8 KB per instance and 104 MB per list of 5,000 instances;
 * the tags nodewarden reads (karpenter.sh/, karpenter.k8s.aws/, kubernetes.io/cluster/)
 * are kept first (nw_cloud_instance_tag_add) */
#define NW_CLOUD_TAG_BYTES 1024
#define NW_CLOUD_MAX_SGS 16
#define NW_CLOUD_MAX_LAUNCH_TYPES 60 /* a launch considers at most this many types */
#define NW_CLOUD_TOKEN_MAX 64        /* EC2's limit for a ClientToken */

/* ---- errors ---- */
typedef enum {
    NW_CLOUD_ERR_NONE = 0,
    NW_CLOUD_ERR_CAPACITY,     /* insufficient capacity: the NodeClaim is given up */
    NW_CLOUD_ERR_UNAUTHORIZED, /* the credentials may not do this */
    NW_CLOUD_ERR_INVALID,      /* the request is wrong (a parameter, a missing resource) */
    NW_CLOUD_ERR_THROTTLED,    /* rate-limited (after the provider's own retries) */
    NW_CLOUD_ERR_OTHER,
} nw_cloud_err_kind_t;

typedef struct {
    nw_cloud_err_kind_t kind;
    /* the offering that failed, "" where the failure is not one offering's */
    char type[64];
    char zone[64];
    char capacity_type[32];
    char code[128];     /* the provider's error code, e.g. "InsufficientInstanceCapacity" */
    char message[512];  /* the provider's message */
    int token_spent;    /* the provider answered that this token launched nothing: a new try
                         * must use a new token */
    int token_conflict; /* the token was used before with other parameters */
} nw_cloud_error_t;

/** "capacity", "unauthorized", "invalid", "throttled", "other", "none". */
const char *nw_cloud_err_kind_name(nw_cloud_err_kind_t k);

/* ---- instances ---- */
typedef struct {
    char id[64];           /* the provider's instance id */
    char provider_id[192]; /* Node.spec.providerID form */
    char type[64];
    char zone[64];
    char capacity_type[16]; /* "spot" | "on-demand" */
    char state[32];         /* see the lifecycle words above */
    int64_t launch_ns;      /* wall clock; 0 = unknown */
    /* what drift compares with the resolved node class */
    char image_id[64];
    char subnet_id[64];
    char sg_ids[NW_CLOUD_MAX_SGS][64];
    int nsg;
    /* tags: ntags pairs "key\0value\0" in tags[0, tags_len); tags_dropped did not fit */
    char tags[NW_CLOUD_TAG_BYTES];
    size_t tags_len;
    int ntags, tags_dropped;
} nw_cloud_instance_t;

typedef struct {
    nw_cloud_instance_t *v;
    size_t n, cap;
} nw_cloud_instances_t;

void nw_cloud_instances_free(nw_cloud_instances_t *l);
/** The value of tag key on i, or NULL. */
const char *nw_cloud_instance_tag(const nw_cloud_instance_t *i, const char *key);
/** Add tag key=value to i: true, or false (tags_dropped counted) when it does not fit in
 * NW_CLOUD_TAG_BYTES. A provider adds the tags nw_cloud_tag_kept names first. */
bool nw_cloud_instance_tag_add(nw_cloud_instance_t *i, const char *key, const char *value);
/** Is key one of the tags nodewarden reads (karpenter.sh/, karpenter.k8s.aws/,
 * kubernetes.io/cluster/ prefixes), which a provider adds before the others? */
bool nw_cloud_tag_kept(const char *key);
/** The instance id in a providerID: its last path segment ("aws:///<zone>/<id>" -> <id>),
 * or the argument itself when it has no '/'. */
const char *nw_cloud_instance_id(const char *provider_id);

/* ---- instance health (the provider's status checks and scheduled events) ---- */
typedef enum {
    NW_CLOUD_HEALTH_INSTANCE = 0, /* the instance's own status check failed */
    NW_CLOUD_HEALTH_SYSTEM,       /* the host's (system) status check failed */
    NW_CLOUD_HEALTH_EVENT,        /* a scheduled event (reboot, maintenance, retirement, stop) */
    NW_CLOUD_HEALTH_KINDS
} nw_cloud_health_kind_t;

/* One failed check of one instance (an instance with several has several entries). */
typedef struct {
    char instance_id[64];
    nw_cloud_health_kind_t kind;
    char name[64];             /* the check ("reachability") or the event code */
    int64_t impaired_since_ns; /* wall clock; 0 = not reported (events) */
} nw_cloud_health_t;

typedef struct {
    nw_cloud_health_t *v;
    size_t n, cap;
} nw_cloud_healths_t;

void nw_cloud_healths_free(nw_cloud_healths_t *l);

/* ---- a resolved node class (EC2NodeClass), as the controllers need it ---- */
typedef struct {
    char id[64];
    char zone[64];
    char zone_id[64];
} nw_cloud_subnet_t;

typedef struct {
    char id[64];
    char arch[8]; /* Kubernetes name: amd64, arm64 */
} nw_cloud_image_t;

typedef struct {
    char name[256]; /* metadata.name */
    int ready;      /* every selector found something */
    char reason[64];
    char message[512];
    const nw_cloud_subnet_t *subnets;
    size_t nsubnets;
    const char (*sg_ids)[64];
    size_t nsgs;
    const nw_cloud_image_t *images;
    size_t nimages;
    char placement_group[64]; /* spec.placementGroupSelector's group id, "" = none */
} nw_cloud_class_t;

/* ---- launches ---- */
typedef struct {
    const char *nodepool;     /* karpenter.sh/nodepool */
    const char *nodeclaim;    /* karpenter.sh/nodeclaim */
    const cJSON *nodeclass;   /* the node class object; the cloud resolves it */
    const char *const *types; /* compatible instance types */
    int ntypes;
    const char *const *zones; /* allowed zones; NULL/0 = any */
    int nzones;
    const char *const *capacity_types; /* "reserved", "spot", "on-demand"; NULL/0 = on-demand:
                                          reserved is tried first, then spot, then on-demand */
    int ncapacity_types;
    int min_values;           /* the requirements carry minValues: keep exotic types */
    const char *client_token; /* idempotency token (<= NW_CLOUD_TOKEN_MAX chars); NULL/"": none */
    /* karpenter.k8s.aws/capacity-reservation-id values the claim allows; NULL/0 = any */
    const char *const *cr_ids;
    int ncr_ids;
    const cJSON *claim; /* the NodeClaim: its labels and taints go into a generated bootstrap */
    /* the kubeadm bootstrap token "<id>.<secret>" minted for this NodeClaim (a class with
     * nodewarden.io/bootstrap: kubeadm, scaler/nodeclaim/bootstrap.h); NULL/"": none */
    const char *bootstrap_token;
} nw_cloud_launch_req_t;

typedef struct {
    char instance_id[64];
    char provider_id[192];
    char type[64];
    char zone[64];
    char zone_id[64];
    char capacity_type[16]; /* "spot", "on-demand", "reserved" */
    char image_id[64];
    double price; /* per hour, 0 = unknown */
    /* the placement group's labels: karpenter.k8s.aws/placement-group-id ("" = no group),
     * and for a partition group (partitioned) placement-group-partition ("" = unknown) */
    char placement_group[64];
    char partition[16];
    int partitioned;
    /* reserved: the capacity reservation, its type (default, capacity-block), interruptible */
    char cr_id[64];
    char cr_type[24];
    int cr_interruptible;
} nw_cloud_launch_t;

/* ---- the interface ---- */
typedef struct nw_cloud nw_cloud_t;

typedef struct {
    /** Launch one instance; ce (nullable) says why it failed. */
    nw_rc_t (*launch)(nw_cloud_t *c, const nw_cloud_launch_req_t *req, nw_cloud_launch_t *out,
                      nw_cloud_error_t *ce, nw_err_t *err);
    /** Terminate by instance id or providerID; idempotent (gone = done). */
    nw_rc_t (*terminate)(nw_cloud_t *c, const char *provider_id, nw_err_t *err);
    /** This cluster's instances (the caller frees with nw_cloud_instances_free). */
    nw_rc_t (*list)(nw_cloud_t *c, nw_cloud_instances_t *out, nw_err_t *err);
    /** The resolved node class (cached with a TTL); borrowed until the next resolve. */
    nw_rc_t (*resolve)(nw_cloud_t *c, const cJSON *nodeclass, const nw_cloud_class_t **out,
                       nw_err_t *err);
    /** The status to write back to the node class object (resolved, cached as above),
     * stamped now_ns; the caller owns it. */
    nw_rc_t (*class_status)(nw_cloud_t *c, const cJSON *nodeclass, int64_t now_ns, cJSON **out,
                            nw_err_t *err);
    const nw_catalog_t *(*catalog)(nw_cloud_t *c);
    nw_ice_t *(*ice)(nw_cloud_t *c);
    void (*free)(nw_cloud_t *c);
    /** The state of a providerID's instance, asked now (no cache); state holds >= 32 bytes.
     * NW_ENOTFOUND when the instance does not exist or is terminated. */
    nw_rc_t (*instance_state)(nw_cloud_t *c, const char *provider_id, char *state, size_t len,
                              nw_err_t *err);
    /** When the catalog has no offerings (it was not refreshed from the API), offer every
     * type in these zones (the zones of the node classes' subnets); otherwise nothing. The
     * cloud owns its catalog: this is the only way a controller changes it. */
    nw_rc_t (*offer_zones)(nw_cloud_t *c, const nw_catalog_zone_t *zones, int n, nw_err_t *err);
    /** On the catalog's thread: apply what the provider's periodic refreshes (instance types,
     * prices) fetched since the last call (now: monotonic ns); a failed refresh keeps the
     * last good data and is logged and counted. Quick (no API call). May be NULL. */
    void (*refresh)(nw_cloud_t *c, int64_t now);
    /** Delete what the cloud made for this node class (AWS: its launch templates and the
     * instance profiles made for spec.role): the node class finalizer's cleanup, once no
     * NodeClaim of the class is left; NW_OK when nothing is left. May be NULL. */
    nw_rc_t (*finalize_class)(nw_cloud_t *c, const cJSON *nodeclass, nw_err_t *err);
    /** The failed status checks and scheduled events of the account's running instances
     * (every instance, not only this cluster's: the caller matches them to its NodeClaims),
     * asked now. May be NULL (the provider has no such checks). */
    nw_rc_t (*instance_health)(nw_cloud_t *c, nw_cloud_healths_t *out, nw_cloud_error_t *ce,
                               nw_err_t *err);
    /** The instances capacity reservation `id` still holds as the provider follows them
     * (the last resolution's count less the launches since); -1 when unknown. Reconcile
     * thread. May be NULL. */
    int64_t (*reservation_available)(nw_cloud_t *c, const char *id);
    /** Append the provider's Prometheus series (its refreshes). May be NULL. */
    nw_rc_t (*metrics)(nw_cloud_t *c, nw_buf_t *out);
} nw_cloud_ops_t;

struct nw_cloud {
    const nw_cloud_ops_t *ops;
};

#endif
