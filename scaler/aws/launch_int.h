/*
 * scaler/aws/launch_int.h — what the files of the launcher share (scaler/aws/launch.h is
 * their public face): the launcher, a candidate offering and a launch plan, and the
 * functions one file calls in another. Only for launch.c (the launcher, nw_launch),
 * fleet.c (plan, CreateFleet, settle), instance.c (find_partition, terminate, list),
 * capreservation.c (capacity reservations), offerings.c (candidate offerings and subnets) and
 * launchtemplate.c (tags, launch templates and their userData): a file calls only files
 * after it in this list (tools/check_layers.py fails on a link cycle).
 */
#ifndef NW_SCALER_AWS_LAUNCH_INT_H
#define NW_SCALER_AWS_LAUNCH_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "scaler/aws/launch.h"
#include "common/json.h"

#define COMP "aws.launch"
#define MAX_TAGS 64
#define LT_CACHE 64
#define MAX_LTS 8 /* launch templates per CreateFleet (AMIs x max-pods groups) */

typedef struct {
    char name[256];
    char id[64];
} lt_entry_t;

struct nw_launch {
    nw_ec2_t *ec2;
    const nw_catalog_t *cat;
    nw_ice_t *ice;
    const nw_clock_t *clock;
    char cluster[128];
    lt_entry_t lts[LT_CACHE];
    int nlts;
    unsigned lt_gen; /* templates forgotten so far: part of CreateLaunchTemplate's token */
    char *endpoint, *ca_bundle, *cidr; /* the generated bootstrap's settings */
    nw_rc_t (*k8s_version)(void *ud, char *out, size_t len, nw_err_t *err);
    void *k8s_version_ud;
    nw_rc_t (*kube_dns)(void *ud, char *out, size_t len, nw_err_t *err);
    void *kube_dns_ud;
    nw_rc_t (*service_cidr)(void *ud, char *out, size_t len, char *src, size_t srclen,
                            nw_err_t *err);
    void *service_cidr_ud;
    char svc_cidr[64], svc_src[128]; /* the cluster's service CIDR once found, its source */
    char svc_why[520];               /* why none was found (the last answer) */
    int64_t svc_next_ns;             /* monotonic time of the next lookup (0: now) */
    char dns_ip[64];                 /* the kube-dns Service's ClusterIP once known */
    int64_t dns_retry_ns;            /* monotonic time of the next lookup while unknown */
    nw_overhead_opts_t overhead;     /* vm overhead, reserved ENIs, pod density */
    /* the reservation the template being ensured targets ("" = none) and whether it is a
     * capacity block: set around nw_launchtemplate_ensure by a reserved plan (under the callers'
     * lock)
     */
    char lt_cr[64];
    int lt_cr_block;
    /* capacity reservations' available instances (Karpenter's availabilityCache): synced
     * from each resolution, less the launches since, 0 after ReservationCapacityExceeded */
    struct {
        char id[64];
        int64_t count, synced;
    } crav[NW_LAUNCH_MAX_CRS];
    int ncrav;
};

/* One offering a launch may use. Self-contained but for t (the catalog outlives every
 * launch): nothing points into the node class resolution, which another thread's resolve
 * may replace once the cloud's lock is released (nw_fleet). */
typedef struct {
    const nw_itype_t *t;
    char ami[64];
    char zone[64];
    char zone_id[64];
    char subnet[64];
    char ct[16];
    double price;
    int64_t pods; /* max pods of the type (generated bootstraps; else 0) */
    int efa;      /* EFA interfaces the template gives it (the claim asks for EFA; else 0) */
    char cr[64];  /* reserved: the capacity reservation, its type and interruptibility */
    char cr_type[24];
    int cr_interruptible;
} cand_t;

/* One CreateFleet try: the candidates, their templates and the request (nw_fleet_plan). */
struct nw_launch_plan {
    cand_t *c;
    int n;
    char ct[16];
    char amis[MAX_LTS][64]; /* one launch template per AMI (and max-pods value) */
    int64_t pods[MAX_LTS];
    int efa[MAX_LTS];
    char crs[MAX_LTS][64]; /* reserved: the template's reservation */
    int cr_block;          /* reserved into capacity blocks (DefaultTargetCapacityType) */
    char names[MAX_LTS][256];
    int namis;
    int attempt;
    nw_ec2_params_t p;
    int have_params;
    nw_ec2_fleet_result_t fr;
    nw_rc_t fleet_rc;
    nw_err_t fleet_err;
    char nodeclaim[256], nodepool[256];
    int kubeadm;                   /* the templates carry this NodeClaim's token */
    char lt_ids[MAX_LTS][64];      /* their ids (kubeadm: deleted after the launch) */
    char pg_id[64];                /* the class's placement group, "" = none */
    int pg_partitioned, partition; /* a partition group; the partition asked (0 = EC2's) */
};

/* ---- launchtemplate.c: tags, launch templates and their bootstrap ---------------------------- */

/** spec.tags then the cluster tags (which win) into t (MAX_TAGS of them); with_claim adds
 * karpenter.sh/nodeclaim and Name. Returns the count. */
int nw_launchtemplate_tags_build(const nw_launch_t *l, const nw_launch_req_t *r, int with_claim,
                                 nw_ec2_tag_t *t);
/** Add <prefix>TagSpecification.<idx> of resource type rtype with the n tags t to p. */
NW_MUST_USE nw_rc_t nw_launchtemplate_tags_spec(nw_ec2_params_t *p, const char *prefix, int idx,
                                                const char *rtype, const nw_ec2_tag_t *t, int n);
/** The partition of the class's partition placement group the claim asks for (0: none
 * asked, EC2 chooses). */
int nw_launchtemplate_claim_partition(const nw_launch_req_t *r);
/** True for nodewarden's kubeadm bootstrap: a token, and a family nodewarden does not generate
 * for. */
bool nw_launchtemplate_kubeadm(const nw_launch_req_t *r);
/** True when nodewarden writes the kubelet's settings (max pods) into the userData. */
bool nw_launchtemplate_renders_kubelet(const nw_launch_req_t *r);
/** The id of the cached template name; NULL when it is not cached. */
const char *nw_launchtemplate_cached(nw_launch_t *l, const char *name);
/** Forget a template deleted behind our back (the next CreateLaunchTemplate gets a new
 * ClientToken). */
void nw_launchtemplate_forget(nw_launch_t *l, const char *name);
/** Forget a template deleted on purpose. */
void nw_launchtemplate_drop(nw_launch_t *l, const char *name);
/** Find by name, else create, the template of AMI ami_id, capacity type ct, types of `pods`
 * max pods and `efa` EFA interfaces; its name into name. */
NW_MUST_USE nw_rc_t nw_launchtemplate_ensure(nw_launch_t *l, const nw_launch_req_t *r,
                                             const char *ami_id, const char *ct, int64_t pods,
                                             int efa, char *name, size_t namelen,
                                             nw_ec2_error_t *ae, nw_err_t *err);

/* ---- offerings.c: candidate offerings -------------------------------------------------------- */

/** True when s is one of the n strings l, or the list is empty (no restriction). */
bool nw_offerings_in(const char *s, const char *const *l, int n);
/** qsort order of candidates: price, then type, then zone. */
int nw_offerings_cand_cmp(const void *a, const void *b);
/** The subnet of zone with the most free addresses that is not marked unavailable; NULL
 * when there is none. */
const char *nw_offerings_best_subnet(const nw_launch_t *l, const nw_nodeclass_resolved_t *rs,
                                     const char *zone, int64_t now);
/** True when the claim asks for EFA devices (vpc.amazonaws.com/efa). */
bool nw_offerings_wants_efa(const nw_launch_req_t *r);
/** The max pods type t gets under the request's class (0 when the bootstrap is the
 * user's). */
int64_t nw_offerings_type_pods(const nw_launch_t *l, const nw_launch_req_t *r, const nw_itype_t *t);
/** Collect available offerings for one capacity type into c (at most max); returns the
 * count. */
int nw_offerings_collect(nw_launch_t *l, const nw_launch_req_t *r, const char *ct, cand_t *c,
                         int max, int64_t now);
/** nw_offerings_collect; why (nullable) gets the first compatibility refusal
 * (scaler/cloud/compat.h). */
int nw_offerings_collect_why(nw_launch_t *l, const nw_launch_req_t *r, const char *ct, cand_t *c,
                             int max, int64_t now, char *why, size_t whylen);
/** Drop the exotic types while a plain one remains; returns the count left. */
int nw_offerings_filter_exotic(cand_t *c, int n);
/** Keep the candidates of the NW_LAUNCH_MAX_TYPES cheapest types (c sorted by price);
 * returns the count left. */
int nw_offerings_truncate_types(cand_t *c, int n);

/* ---- capreservation.c: capacity reservations ------------------------------------------------- */

/** A launch into reservation id (zero = 0: one instance less) or the reservation exhausted
 * (zero = 1: none left until the next resolution). */
void nw_capreservation_mark(nw_launch_t *l, const char *id, int zero);
/** Collect the reserved offerings of the request into c (at most max), of one reservation
 * type; *block = 1 when that is capacity blocks. Returns the count. */
int nw_capreservation_collect(nw_launch_t *l, const nw_launch_req_t *r, cand_t *c, int max,
                              int64_t now, int *block);

#endif
