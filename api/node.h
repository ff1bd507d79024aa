/*
 * api/node.h — a Node and a NodeClaim as the scaler keeps them: small typed records
 * decoded once from the API server's JSON (the watch thread does it on ingest,
 * scaler/kube/cache.h), with what the controllers read, and nothing else.
 *
 *   nw_node_t *n;
 *   if (nw_node_decode(json, &n, &err) == NW_OK) {          // json stays the caller's
 *       const char *pool = nw_node_meta_label(&n->m, "karpenter.sh/nodepool");
 *       if (n->ready == NW_NODE_COND_TRUE && !n->unschedulable) ...
 *       nw_quantity_t cpu = nw_resources_get_or_zero(&n->allocatable, "cpu");
 *       nw_node_free(n);
 *   }
 *   nw_node_claim_t *c;
 *   if (nw_node_claim_decode(json, &c, &err) == NW_OK) {
 *       const nw_node_cond_t *l = nw_node_meta_condition(&c->m, "Launched");
 *       ...
 *       nw_node_claim_free(c);
 *   }
 *
 * What both keep (nw_node_meta_t): name, uid, resourceVersion, generation, the creation and
 * deletion timestamps, labels and annotations (sorted by key; kubectl's
 * last-applied-configuration annotation is dropped), finalizers, the owners' uids
 * (metadata.ownerReferences), spec.taints, and
 * status.conditions as (type, status, reason, message, lastTransitionTime,
 * observedGeneration): enough to write the conditions back (nw_node_meta_conditions_json).
 * A Node adds: spec.providerID, spec.unschedulable, status.capacity and
 * status.allocatable (typed quantities), status.phase, the Ready condition's status.
 * A NodeClaim adds: spec.nodeClassRef (group, kind, name), spec.requirements (parsed as
 * Karpenter's), spec.startupTaints, spec.resources.requests, spec.expireAfter and
 * spec.terminationGracePeriod (as written and parsed), the first instance type its
 * requirements list (type_first), and status.providerID, nodeName,
 * imageID, capacity, allocatable and lastPodEventTime.
 * metadata.managedFields, status.images, nodeInfo, addresses, daemonEndpoints and
 * volumes are dropped.
 *
 * Errors: the decoders return NW_EINVAL with the field named for input that is not
 * what the API server sends: no metadata.name ("metadata.name"), labels or annotations
 * that are not an object of strings ("metadata.labels[app]"), a taint that is not one
 * ("spec.taints[0].effect"), a quantity that does not parse ("status.allocatable[cpu]"),
 * a spec.expireAfter or spec.terminationGracePeriod that is not a string,
 * a requirement that does not parse ("spec.requirements[0].operator"), a condition
 * without a type ("status.conditions[1].type"), an owner reference without a uid
 * ("metadata.ownerReferences[0].uid"), a metadata.generation or a condition's
 * observedGeneration that is not a number ("status.conditions[0].observedGeneration"). A timestamp
 * that does not parse counts as absent (0), as in api/pod.h, and a duration that does not parse is
 * kept as written with its `_ok` false (the controllers report it on the NodeClaim, as they did).
 * NW_ENOMEM on out of memory. *out is NULL on error.
 * Ownership: the record is the caller's, freed with nw_node_free / nw_node_claim_free;
 * every string, array and list in it is borrowed from the record (never cleaned up by a
 * reader). Thread: a record is immutable after decode; any thread may read it.
 */
#ifndef NW_API_NODE_H
#define NW_API_NODE_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/requirements.h"
#include "api/resources.h"
#include "api/taints.h"
#include "common/err.h"

/* A condition's status: absent (no such condition), True, False, Unknown (or another
 * value). */
typedef enum {
    NW_NODE_COND_ABSENT = 0,
    NW_NODE_COND_TRUE,
    NW_NODE_COND_FALSE,
    NW_NODE_COND_UNKNOWN
} nw_node_cond_status_t;

typedef struct {
    const char *type;        /* "Ready", "Launched", ... */
    const char *status_name; /* status as written ("True", ...); "" when absent */
    const char *reason;      /* "" when absent */
    const char *message;     /* "" when absent */
    const char *since_text;  /* lastTransitionTime as written, "" when absent */
    nw_node_cond_status_t status;
    int64_t since;         /* lastTransitionTime, ns since the epoch; 0 when absent */
    bool observed_gen_set; /* observedGeneration present (a number) */
    int64_t observed_gen;
} nw_node_cond_t;

typedef struct {
    const char *key, *value;
} nw_node_kv_t;

/* What a Node and a NodeClaim both keep. */
typedef struct {
    const char *name, *uid, *rv; /* "" when absent (never NULL) */
    const char *created_text;    /* metadata.creationTimestamp as written, "" */
    const char *deleted_text;    /* metadata.deletionTimestamp as written, "" */
    int64_t created, deleted;    /* ns since the epoch; 0 absent */
    int64_t generation;          /* metadata.generation; 0 absent */
    bool terminating;            /* metadata.deletionTimestamp is set */
    const nw_node_kv_t *labels;  /* sorted by key */
    size_t nlabels;
    const nw_node_kv_t *annotations; /* sorted by key */
    size_t nannotations;
    bool has_annotations; /* metadata.annotations is a non-empty map (even when all it
                             holds is the dropped last-applied-configuration) */
    const char *const *finalizers;
    size_t nfinalizers;
    const char *const *owner_uids; /* metadata.ownerReferences[].uid, in order */
    size_t nowners;
    const nw_node_cond_t *conds; /* in the object's order */
    size_t nconds;
    nw_taints_t taints; /* spec.taints; borrowed */
} nw_node_meta_t;

typedef struct nw_node {
    nw_node_meta_t m;
    const char *provider_id;              /* spec.providerID, "" */
    const char *phase;                    /* status.phase, "" */
    bool unschedulable;                   /* spec.unschedulable */
    nw_node_cond_status_t ready;          /* the Ready condition's status (ABSENT without one) */
    nw_resources_t capacity, allocatable; /* borrowed */
    size_t bytes_;                        /* private: the block's size */
} nw_node_t;

typedef struct nw_node_claim {
    nw_node_meta_t m;
    const char *nodepool;       /* label karpenter.sh/nodepool, "" */
    const char *class_group;    /* spec.nodeClassRef.group, "" */
    const char *class_kind;     /* spec.nodeClassRef.kind, "" */
    const char *class_name;     /* spec.nodeClassRef.name, "" */
    nw_reqs_t requirements;     /* spec.requirements; borrowed */
    nw_taints_t startup_taints; /* spec.startupTaints; borrowed */
    nw_resources_t requests;    /* spec.resources.requests; borrowed */
    const char *expire_after;   /* spec.expireAfter as written, "" when absent */
    bool expire_after_set;      /* present (not null), even if "" */
    bool expire_after_ok;       /* it parsed: expire_after_ns (INT64_MAX for "Never") */
    int64_t expire_after_ns;
    const char *tgp; /* spec.terminationGracePeriod as written, "" when absent */
    bool tgp_set;    /* present (not null), even if "" */
    bool tgp_ok;     /* it parsed: tgp_ns */
    int64_t tgp_ns;
    const char *provider_id; /* status.providerID, "" */
    const char *node_name;   /* status.nodeName, "" */
    const char *image_id;    /* status.imageID, "" */
    /* the first value of the first spec.requirements item node.kubernetes.io/instance-type
     * In, as written ("" without one): the provisioner writes the types cheapest first,
     * an order `requirements` (sorted values) does not keep */
    const char *type_first;
    nw_resources_t capacity, allocatable; /* status.*; borrowed */
    int64_t last_pod_event;               /* status.lastPodEventTime, ns; 0 absent */
    size_t bytes_;                        /* private: the block's size */
} nw_node_claim_t;

/** Decode a Node object (borrowed) into a new record (see above). */
NW_MUST_USE nw_rc_t nw_node_decode(const cJSON *node, nw_node_t **out, nw_err_t *err);

/** Decode a NodeClaim object (borrowed) into a new record (see above). */
NW_MUST_USE nw_rc_t nw_node_claim_decode(const cJSON *nc, nw_node_claim_t **out, nw_err_t *err);

/** Free a record. NULL-safe. */
void nw_node_free(nw_node_t *n);
void nw_node_claim_free(nw_node_claim_t *c);

/** The heap bytes a record holds (the block, and what its lists allocated): what the
 * cache reports per object. */
size_t nw_node_bytes(const nw_node_t *n);
size_t nw_node_claim_bytes(const nw_node_claim_t *c);

/** A label's value, NULL when absent (binary search). */
const char *nw_node_meta_label(const nw_node_meta_t *m, const char *key);

/** An annotation's value, NULL when absent (binary search). */
const char *nw_node_meta_annotation(const nw_node_meta_t *m, const char *key);

/** The condition of this type, NULL when there is none. */
const nw_node_cond_t *nw_node_meta_condition(const nw_node_meta_t *m, const char *type);

/** The status of the condition of this type (NW_NODE_COND_ABSENT without one). */
nw_node_cond_status_t nw_node_meta_condition_status(const nw_node_meta_t *m, const char *type);

/** status.conditions rendered back as the API server sent them (type, status, reason,
 * message, and lastTransitionTime and observedGeneration when present), in their order:
 * a new array the caller owns, NULL when memory runs out. Writes that patch the
 * conditions of a cached object start from it. */
cJSON *nw_node_meta_conditions_json(const nw_node_meta_t *m);

/** Whether metadata.finalizers holds f. */
bool nw_node_meta_has_finalizer(const nw_node_meta_t *m, const char *f);

/** Whether spec.taints holds a taint with this key and effect (effect NULL: any). */
bool nw_node_meta_has_taint(const nw_node_meta_t *m, const char *key, const char *effect);

#endif
