/*
 * api/pod.h — a Pod as the scaler keeps it: a small typed record decoded once from the
 * API server's JSON, with what the controllers, the scheduling simulation and the
 * disruption decisions read, and nothing else.
 *
 *   nw_jsonintern_t *in = nw_jsonintern_new();
 *   nw_pod_t *p;
 *   if (nw_pod_decode(json, in, &p, &err) == NW_OK) {   // json stays the caller's
 *       if (p->phase == NW_POD_RUNNING && nw_pod_owned_by(p, "DaemonSet")) ...
 *       const char *v = nw_pod_label(p, "app");
 *       nw_pod_free(p);
 *   }
 *
 * What is kept per pod: namespace, name, uid, resourceVersion, node and nominated node,
 * the phase, status.reason, the timestamps (creation, deletion, start), the pod's
 * conditions as (type, status, reason, lastTransitionTime), in one allocation with the
 * record (the name is the tail of the key; the phases and the usual condition types and
 * reasons point to one static copy instead). What is shared between pods
 * (common/jsonintern.h: one copy for every pod with equal values, so the replicas of a
 * ReplicaSet hold one copy): labels, annotations (without kubectl's
 * last-applied-configuration), ownerReferences, and the scheduling part of the spec
 * (`spec`, below). metadata.managedFields, status.containerStatuses, env, images,
 * probes, mounts and the other volumes are dropped.
 *
 * `spec` is the pod's spec reduced to: nodeSelector, affinity, tolerations,
 * topologySpreadConstraints, priority, priorityClassName, preemptionPolicy,
 * schedulerName, runtimeClassName, terminationGracePeriodSeconds, overhead,
 * resourceClaims, the pod-level resources, hostNetwork, containers and initContainers (name,
 * resources, restartPolicy, and ports that have a hostPort), and the volumes that are claims
 * (persistentVolumeClaim, ephemeral). spec.nodeName is not in it (it is `node_name`), so pods that
 * differ only by node share it; nor, for a pod a DaemonSet owns, the required node-affinity
 * term that pins it to its node (matchFields on metadata.name, which the DaemonSet
 * controller adds), so a DaemonSet's pods share one spec too.
 *
 * Errors: nw_pod_decode returns NW_EINVAL with the field named ("metadata.name") when the
 * pod has no name, NW_ENOMEM on out of memory; *out is NULL then.
 * Ownership: nw_pod_decode's record is the caller's, freed with nw_pod_free, which
 * releases the shared parts; every string and JSON pointer in it is borrowed from the
 * record. The intern table must outlive its records.
 * Thread: a record is immutable after decode; any thread may read it.
 */
#ifndef NW_API_POD_H
#define NW_API_POD_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "common/jsonintern.h"

typedef enum {
    NW_POD_PHASE_NONE = 0, /* absent or not one of the four */
    NW_POD_PENDING,
    NW_POD_RUNNING,
    NW_POD_SUCCEEDED,
    NW_POD_FAILED,
} nw_pod_phase_t;

/* A condition's status: absent (no such condition), True, False, Unknown. */
typedef enum {
    NW_POD_COND_ABSENT = 0,
    NW_POD_COND_TRUE,
    NW_POD_COND_FALSE,
    NW_POD_COND_UNKNOWN
} nw_pod_cond_status_t;

typedef struct {
    const char *type;   /* "Ready", "PodScheduled", ... */
    const char *reason; /* "" when absent */
    nw_pod_cond_status_t status;
    int64_t since;         /* lastTransitionTime, ns since the epoch; 0 when absent */
    uint64_t message_hash; /* FNV-1a of its message; 0 when absent */
} nw_pod_cond_t;

typedef struct nw_pod {
    const char *ns, *name, *uid, *rv; /* "" when absent (never NULL) */
    const char *key;                  /* "namespace/name" */
    const char *node_name;            /* spec.nodeName, "" when unbound */
    const char *nominated;            /* status.nominatedNodeName, "" */
    const char *reason;               /* status.reason ("Evicted", ...), "" */
    nw_pod_phase_t phase;
    const char *phase_name; /* status.phase as written, "" when absent */
    int64_t created;        /* metadata.creationTimestamp, ns; 0 absent */
    int64_t deleted;        /* metadata.deletionTimestamp, ns; 0 absent */
    bool terminating;       /* metadata.deletionTimestamp is set */
    int64_t started;        /* status.startTime, ns; 0 absent */
    nw_pod_cond_t *conds;
    int nconds;
    const cJSON *labels;      /* object, never NULL (empty when none); shared */
    const cJSON *annotations; /* object, never NULL; shared */
    const cJSON *owners;      /* metadata.ownerReferences, array, never NULL; shared */
    const cJSON *spec;        /* the scheduling spec (above), object, never NULL; shared */
    /* derived from the above */
    bool has_priority;
    int32_t priority; /* spec.priority */
    bool pending;     /* nw_pod_is_pending */
    /* private */
    nw_jsonintern_t *in_;
    nw_jsonintern_ref_t *labels_, *annotations_, *owners_, *spec_;
} nw_pod_t;

/** Decode a Pod object (borrowed) into a new record (see above). */
NW_MUST_USE nw_rc_t nw_pod_decode(const cJSON *pod, nw_jsonintern_t *in, nw_pod_t **out,
                                  nw_err_t *err);

/** Free a record. NULL-safe. */
void nw_pod_free(nw_pod_t *p);

/** A label's value, NULL when absent. */
const char *nw_pod_label(const nw_pod_t *p, const char *key);

/** An annotation's value, NULL when absent. */
const char *nw_pod_annotation(const nw_pod_t *p, const char *key);

/** The condition of this type, NULL when the pod has none. */
const nw_pod_cond_t *nw_pod_condition(const nw_pod_t *p, const char *type);

/** Whether an ownerReference has this kind (any apiVersion). */
bool nw_pod_owned_by(const nw_pod_t *p, const char *kind);

/** Whether an ownerReference has this apiVersion and kind. */
bool nw_pod_owned_by_api(const nw_pod_t *p, const char *api_version, const char *kind);

/** The controller ownerReference (controller: true), or the first one when none says so;
 * NULL without owners. */
const cJSON *nw_pod_controller(const nw_pod_t *p);

/** Succeeded or Failed. */
bool nw_pod_is_terminal(const nw_pod_t *p);

/** Karpenter's provisionable-pod predicate (kubernetes-sigs/karpenter
 * pkg/utils/pod/scheduling.go IsProvisionable's state half): not bound, not nominated,
 * not finished, not terminating, and PodScheduled False with reason Unschedulable. */
bool nw_pod_is_pending(const nw_pod_t *p);

/** A mark of the pod's PodScheduled condition (status, reason, lastTransitionTime and
 * message), 0 without one. The kube-scheduler rewrites the condition when an attempt to
 * place the pod fails differently from the last (a new message: "0/7 nodes are
 * available: ..."), so a new mark means it tried the pod again; writes of other fields
 * (a nominatedNodeName, labels) leave the mark alone. */
uint64_t nw_pod_scheduled_mark(const nw_pod_t *p);

/** Rebuild a Pod JSON object from the record (what it keeps: the fields above, spec with
 * nodeName), for `plan` and the tests that print a pod. Owned by the caller. Aborts on
 * out of memory (common/json.h's builders: only the scaler and the CLI call it). */
cJSON *nw_pod_to_json(const nw_pod_t *p);

#endif
