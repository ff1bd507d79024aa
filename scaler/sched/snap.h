/*
 * scaler/sched/snap.h — the snapshot's internal representation, shared by
 * snapshot.c, snap_pod.c, snap_class.c, snap_node.c, snap_volume.c (building it) and
 * solve*.c (the simulation). Not an API:
 * other modules use schedule.h.
 *
 * Ownership: everything below is owned by the nw_sched_snap_t it hangs from.
 */
#ifndef NW_SCALER_SCHED_SNAP_H
#define NW_SCALER_SCHED_SNAP_H

#include "scaler/sched/schedule.h"

typedef enum { NW_TG_SPREAD = 0, NW_TG_AFFINITY, NW_TG_ANTI } nw_tg_kind_t;

/* A topology group: one distinct (kind, key, selector, namespaces, skew, node inclusion
 * policies) seen on pods (kubernetes-sigs/karpenter
 * pkg/controllers/provisioning/scheduling/topologygroup.go). */
typedef struct {
    nw_tg_kind_t kind;
    char *key;     /* the topology key, normalized (nw_wellknown_normalize) */
    bool hostname; /* key is kubernetes.io/hostname */
    int max_skew;
    int min_domains;
    bool taints_honor;   /* spread nodeTaintsPolicy: Honor (default Ignore) */
    bool affinity_honor; /* spread nodeAffinityPolicy: Honor (the default) */
    int cls;             /* pod class of the first pod that has it: node filter, tolerations */
    nw_reqs_t sel;       /* the label selector as requirements (Kubernetes semantics) */
    bool sel_nothing;    /* a null selector selects nothing */
    char **ns;           /* namespaces it selects; NULL/0 with all_ns = every namespace */
    size_t nns;
    bool all_ns;
    bool has_nssel;  /* a non-empty namespaceSelector: also the namespaces it matches */
    nw_reqs_t nssel; /* that selector as requirements */
    char *sig;       /* dedup signature */
} nw_tgroup_t;

/* A Namespace and its labels (affinity namespaceSelector). */
typedef struct {
    char *name;
    nw_labels_t labels;
} nw_sns_t;

/* One host port a pod asks for (Karpenter pkg/scheduling/hostportusage.go). */
typedef struct {
    char ip[48]; /* "" = every address (0.0.0.0) */
    int port;
    char proto[8]; /* TCP, UDP, SCTP */
} nw_hostport_t;

typedef struct {
    int group;
    bool preferred; /* preferred pod (anti-)affinity or ScheduleAnyway spread */
    int weight;
} nw_pod_tc_t;

/* Requirement "classes": pods with the same scheduling-relevant spec share one. */
typedef struct {
    char *sig;
    nw_reqs_t selector; /* nodeSelector */
    nw_reqs_t *terms;   /* required node-affinity terms (ORed) */
    size_t nterms;
    nw_reqs_t *sterms; /* the pod's own term of each entry of terms (volume topology
                          crossed in: terms[i] = sterms[i] ∩ a volume alternative) */
    nw_reqs_t *prefs;  /* preferred node-affinity terms, heaviest first */
    size_t nprefs;
    nw_tolerations_t tols;
    bool wants_accel; /* requests an accelerator resource */
    bool refuses;     /* required term with karpenter.sh/nodepool DoesNotExist */
    char *invalid;    /* validation problem (pod ignored), or NULL */
    char *volume_err; /* its volumes cannot be placed (pod ignored), or NULL */
} nw_pclass_t;

/* Storage (Karpenter volumetopology.go): PersistentVolumes, claims, StorageClasses. */
typedef struct {
    char *name;
    nw_reqs_t *terms; /* spec.nodeAffinity.required terms (local/hostPath: no hostname) */
    size_t nterms;
    bool deleting;
    char *driver; /* spec.csi.driver (awsElasticBlockStore: ebs.csi.aws.com), or NULL */
} nw_spv_t;

typedef struct {
    char *ns, *name;
    char *volume; /* spec.volumeName or NULL */
    char *sc;     /* spec.storageClassName or NULL */
    bool bind_completed, deleting, lost;
} nw_spvc_t;

typedef struct {
    char *name;
    nw_reqs_t *alts; /* allowedTopologies, each an alternative */
    size_t nalts;
    bool immediate;    /* volumeBindingMode Immediate (the default) */
    char *provisioner; /* its CSI driver (kubernetes.io/aws-ebs: ebs.csi.aws.com), or NULL */
} nw_ssc_t;

/* A volume of a pod as attach limits count it (Karpenter pkg/scheduling/volumeusage.go):
 * its CSI driver and the claim it is ("namespace/claim"). */
typedef struct {
    char *driver, *id;
} nw_svol_t;

/* The attach limits a Node's CSINode reports: spec.drivers[].allocatable.count. */
typedef struct {
    char *node;
    char **drivers;
    int *limits;
    int n;
} nw_scsinode_t;

typedef struct {
    char *ns, *name, *uid, *key; /* key = "ns/name" */
    char *node_name;             /* spec.nodeName or NULL */
    char *prefer;                /* the node an earlier batch planned it on, or NULL
                                    (nw_sched_pod_as_t.prefer) */
    char *owner_kind, *owner_name;
    int64_t created;
    nw_sched_res_t req;
    const nw_labels_t *labels; /* shared by the pods with the same labels (the snapshot's) */
    int cls;
    nw_pod_tc_t *tcs;
    int ntcs;
    nw_hostport_t *hostports;
    int nhostports;
    nw_svol_t *vols; /* its claims that a CSI driver attaches */
    int nvols;
    bool provisionable_state; /* no nodeName, not terminating, not nominated, not DS/mirror */
    bool unschedulable_cond;
    bool terminating;
    bool finished; /* Succeeded/Failed */
} nw_spod_t;

/* Addresses to indexes (open addressing): how the snapshot finds what it derived from a
 * record's shared part (snap_pod.c). */
typedef struct {
    const void *key;
    int val;
} nw_ptrslot_t;

typedef struct {
    nw_ptrslot_t *slots; /* NULL until the first entry */
    size_t cap, n;
} nw_ptrmap_t;

/* The topology constraints a shared spec gives the pods of one namespace (and, when a
 * spread constraint has matchLabelKeys, one shared label set). */
typedef struct {
    char *ns;
    const cJSON *labels; /* the record's shared labels, by address; NULL: any */
    nw_pod_tc_t *tcs;
    int ntcs;
} nw_sspec_tcs_t;

/* What a snapshot derived from one shared scheduling spec (api/pod.h: a ReplicaSet's
 * replicas hold one `spec`), kept by the spec's address so the other pods that hold it
 * take it instead of parsing the spec again (snap_pod.c). */
typedef struct {
    const cJSON *spec; /* the key, borrowed from the records */
    nw_sched_res_t req;
    bool accel;
    bool per_pod;   /* it has claim volumes: class and volumes depend on the pod's namespace
                       and name and are derived for each pod */
    bool by_labels; /* matchLabelKeys: its constraints depend on the pod's labels too */
    int cls;        /* the pod class (when !per_pod) */
    nw_hostport_t *hostports;
    int nhostports;
    nw_sspec_tcs_t *tcs; /* when !per_pod */
    size_t ntcs, ctcs;
} nw_sspec_t;

typedef struct {
    char *name;
    char *provider_id; /* spec.providerID (Node) / status.providerID (NodeClaim), or NULL */
    bool claim;        /* in-flight NodeClaim */
    nw_labels_t labels;
    nw_reqs_t reqs; /* labels (+ spec.requirements for claims) */
    nw_taints_t taints;
    nw_taints_t startup_taints;
    nw_sched_res_t allocatable, capacity;
    char *pool; /* karpenter.sh/nodepool or NULL */
    bool initialized;
    bool deleting;
} nw_snode_t;

typedef struct {
    char *name, *nodeclass;
    int weight;
    nw_reqs_t reqs; /* requirements + template labels + nodepool label */
    nw_labels_t labels;
    nw_taints_t taints, startup_taints;
    bool has_limits[NW_SCHED_NRES];
    nw_sched_res_t limits;
    bool has_node_limit;
    int64_t node_limit;
    bool has_min_values;
    bool deleting;
    int64_t replicas;    /* spec.replicas: a static NodePool; -1 dynamic */
    int64_t static_want; /* NodeClaims to add to a static pool; -1: replicas − its nodes */
} nw_spool_t;

typedef struct {
    char *ns, *name;
    nw_sched_res_t req;
    nw_reqs_t strict; /* nodeSelector + first required term */
    nw_reqs_t *terms;
    size_t nterms;
    nw_reqs_t selector;
    nw_tolerations_t tols;
    nw_hostport_t *hostports; /* of its pod template: taken on every new node it runs on */
    int nhostports;
} nw_sds_t;

/* A capacity reservation of one node class: its reserved offerings hold `count` nodes */
typedef struct {
    char nodeclass[256];
    char id[64];
    char type[24]; /* default, capacity-block */
    int64_t count; /* instances left; < 0: unknown (no limit) */
} nw_sresv_t;

typedef struct {
    nw_sched_itype_t t;
    nw_reqs_t reqs; /* labels as In, zone/capacity-type In [offered] */
    bool accel;     /* any accelerator capacity */
} nw_sitype_t;

/* Per-node-class capacity/allocatable of the instance types (nw_snap_node_set_class_res);
 * arrays of n entries indexed like itypes, set[t] false = the type's own. */
typedef struct {
    char *name;
    nw_sched_res_t *capacity, *allocatable;
    bool *set;
    bool *excluded; /* the class cannot launch the type (nw_snap_node_exclude_class_type) */
    size_t n;
} nw_sclass_t;

struct nw_sched_snap {
    nw_sched_opts_t opts;
    char *res_names[NW_SCHED_NRES];
    int nres;
    nw_spod_t *pods;
    size_t npods, cpods;
    nw_pclass_t *classes;
    size_t nclasses, cclasses;
    int *class_hash; /* open addressing, -1 empty */
    size_t class_hash_cap;
    nw_tgroup_t *groups;
    size_t ngroups, cgroups;
    int *group_hash; /* the groups by signature: open addressing, -1 empty */
    size_t group_hash_cap;
    nw_snode_t *nodes;
    size_t nnodes, cnodes;
    nw_spool_t *pools;
    size_t npools, cpools;
    nw_sds_t *dss;
    size_t ndss, cdss;
    nw_sitype_t *itypes;
    size_t nitypes, citypes;
    char **nominated;
    size_t nnominated, cnominated;
    nw_sclass_t *nclasses_res;
    size_t nclass_res;
    nw_sresv_t *resvs; /* capacity reservations (offerings' resv - 1) */
    size_t nresvs, cresvs;
    nw_sns_t *nss;
    size_t nnss, cnss;
    nw_spv_t *pvs;
    size_t npvs, cpvs;
    nw_spvc_t *pvcs;
    size_t npvcs, cpvcs;
    nw_ssc_t *scs;
    size_t nscs, cscs;
    nw_scsinode_t *csinodes;
    size_t ncsinodes, ccsinodes;
    /* what each distinct shared spec gave (snap_pod.c), found by its address */
    nw_sspec_t *specs;
    size_t nspecs, cspecs;
    nw_ptrmap_t spec_map;
    /* the pods' label sets, one per distinct shared labels object (by its address) */
    nw_labels_t **lsets;
    size_t nlsets, clsets;
    nw_ptrmap_t labels_map;
    /* the pods nw_snap_pod_add_json decoded, kept while the snapshot lives: their shared
     * parts are keys of `specs` (an address must not be freed and reused meanwhile) */
    nw_jsonintern_t *intern;
    nw_pod_t **recs;
    size_t nrecs, crecs;
    /* nw_snap_mark_set: what the snapshot held then, to go back to (nw_snap_mark_rewind);
     * spec_ntcs[i]: how many namespaces' constraints spec i remembered then */
    struct {
        bool set;
        int nres;
        size_t npods, nclasses, ngroups, nnodes, nspecs, nlsets, nrecs, nnominated;
        size_t npools, ndss, nitypes, nresvs, nnss, npvs, npvcs, nscs, ncsinodes, nclass_res;
        size_t *spec_ntcs;
    } mark;
};

/** Drop from the snapshot's spec and label maps the entries of specs and label sets past
 * nspecs / nlsets (a rewind, snap_mark.c); false: out of memory. */
bool nw_snap_pod_maps_trim(nw_sched_snap_t *s);

/** The node class entry named name, or NULL. */
const nw_sclass_t *nw_snap_node_class_res(const nw_sched_snap_t *s, const char *name);
/** Capacity / allocatable of type t for pools of class cls (NULL: the type's own). */
const nw_sched_res_t *nw_snap_node_type_capacity(const nw_sched_snap_t *s, const nw_sclass_t *cls,
                                                 size_t t);
const nw_sched_res_t *nw_snap_node_type_allocatable(const nw_sched_snap_t *s,
                                                    const nw_sclass_t *cls, size_t t);

/* hash used for class dedup (FNV-1a) */
uint64_t nw_snapshot_hash(const char *s);

/** The index of the pod class of a pod spec (snap_class.c: found or added), whose volumes
 * are those of pod pod_ns/pod_name and which asks for an accelerator when accel; -1 with
 * err set when the spec does not parse. */
int nw_snap_class_get(nw_sched_snap_t *s, const cJSON *spec, const char *pod_ns,
                      const char *pod_name, bool accel, nw_err_t *err);

/** Does group g select pod p (namespace and labels). */
bool nw_snap_pod_group_selects(const nw_sched_snap_t *s, const nw_tgroup_t *g, const nw_spod_t *p);

/** Effective requests of a PodSpec (k8s.io/component-helpers resource/helpers.go
 * PodRequests) into out. */
NW_MUST_USE nw_rc_t nw_snapshot_pod_requests(nw_sched_snap_t *s, const cJSON *spec,
                                             const char *path, nw_sched_res_t *out, nw_err_t *err);

/* Shared by the files that build the snapshot (snapshot.c, snap_pod.c, snap_node.c). */
void *nw_snapshot_grow(void *p, size_t *cap, size_t n, size_t elem);
char *nw_snapshot_dupstr(const char *s);
void nw_snapshot_pclass_free(nw_pclass_t *c);
void nw_snapshot_pod_free(nw_spod_t *p);
void nw_snapshot_spec_free(nw_sspec_t *e);
void nw_snapshot_group_free(nw_tgroup_t *g);
void nw_snapshot_node_free(nw_snode_t *n);
void nw_snapshot_pool_free(nw_spool_t *p);
void nw_snapshot_ds_free(nw_sds_t *d);
/** The volumes of a pod spec that count against attach limits (its persistentVolumeClaim
 * and ephemeral volumes whose driver the snapshot's PVs or StorageClasses name). */
NW_MUST_USE nw_rc_t nw_snap_volume_pod_volumes(const nw_sched_snap_t *s, const cJSON *spec,
                                               const char *ns, const char *pod, nw_svol_t **out,
                                               int *n);
/** The CSINode of a node, or NULL. */
const nw_scsinode_t *nw_snap_volume_csinode(const nw_sched_snap_t *s, const char *node);
/** Host ports of a pod spec's containers (Karpenter pkg/scheduling/hostportusage.go
 * GetHostPorts), appended to *out (n entries); errors name path.containers[i].ports[j]. */
NW_MUST_USE nw_rc_t nw_snap_pod_parse_hostports(const cJSON *spec, const char *path,
                                                nw_hostport_t **out, int *n, nw_err_t *err);
int nw_snapshot_res_slot_find(const nw_sched_snap_t *s, const char *name);
NW_MUST_USE nw_rc_t nw_snapshot_parse_res(nw_sched_snap_t *s, const cJSON *obj, const char *path,
                                          nw_sched_res_t *out, bool *present, nw_err_t *err);
void nw_snapshot_storage_free(nw_sched_snap_t *s);
/** The node requirements a pod's volumes ask for (snap_volume.c): alternatives (ORed; none:
 * *nalts 0), or *msg (malloc'd) when a volume makes the pod unschedulable. */
NW_MUST_USE nw_rc_t nw_snap_volume_alts(const nw_sched_snap_t *s, const cJSON *spec,
                                        const char *pod_ns, const char *pod_name, nw_reqs_t **alts,
                                        size_t *nalts, char **msg);

#endif
