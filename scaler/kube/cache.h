/*
 * scaler/kube/cache.h — the cluster-state cache: typed, indexed stores of the
 * objects the scaler decides from, and immutable snapshots of them.
 *
 * Concurrency model (the threads: docs/internals/architecture.md): the watch
 * thread is the only writer (nw_kube_cache_upsert/remove/replace); any thread
 * may read, but only through a snapshot. Objects are immutable (an update replaces the
 * object, it never edits it). The cache keeps each kind sorted by key and its indexes
 * (pods by node, by phase, pending pods, nodes and NodeClaims by provider ID, NodeClaims
 * by NodePool) sorted as changes arrive, so a snapshot is a copy of those arrays taken
 * under the cache mutex: O(n) pointer copies, no sorting, no reference per object. An
 * object that leaves the store (replaced, deleted, dropped by a relist) is retired: it
 * stays alive until no live snapshot older than its leaving is held. A relist is
 * applied with nw_kube_cache_replace, which swaps the whole store of one kind under
 * the mutex: a snapshot sees either the old or the new list, never a half-applied one.
 * Snapshots are cached per generation, so asking twice without a change returns the
 * same snapshot.
 *
 * Pods, Nodes and NodeClaims are kept as records only (nw_kube_obj_t.pod, api/pod.h;
 * .node and .nodeclaim, api/node.h: what the controllers read, typed): the watch thread
 * parses an object, builds its record and frees the tree, so their JSON is never kept
 * (json is NULL); a write that needs a whole Node or NodeClaim GETs it
 * (docs/internals/kube-client.md). A Node or
 * NodeClaim whose record does not decode (a malformed field: an API server never sends
 * one) is refused with a warning naming the field, as an object without a name is, and
 * takes the version before it out of the cache (a relist would leave it out too).
 * Every other kind is kept as its JSON without metadata.managedFields.
 *
 * Change notification: every applied change bumps the generation, broadcasts a
 * condition variable (nw_kube_cache_wait) and makes an eventfd readable
 * (nw_kube_cache_eventfd) for poll-based loops. An optional hook sees every
 * change (with the old and new object) on the watch thread, including the
 * synthetic deletes a relist produces.
 *
 * Ownership: cache: nw_kube_cache_new / nw_kube_cache_free (after the watch
 * thread stopped and every snapshot and object hold was released). Snapshot: owned
 * reference from nw_kube_cache_snapshot, release with nw_kube_cache_snap_release (any
 * thread); objects and arrays obtained from a snapshot are borrowed, valid while the
 * snapshot is held, or, one object, while a reference from nw_kube_cache_obj_hold is.
 */
#ifndef NW_SCALER_KUBE_CACHE_H
#define NW_SCALER_KUBE_CACHE_H

#include <cjson/cJSON.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/node.h"
#include "api/pod.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/err.h"
#include "scaler/kube/client.h"
#include "scaler/kube/metrics.h"

typedef enum {
    NW_KUBE_PODS = 0,
    NW_KUBE_NODES,
    NW_KUBE_NODEPOOLS,
    NW_KUBE_EC2NODECLASSES,
    NW_KUBE_NODECLAIMS,
    NW_KUBE_PDBS,
    NW_KUBE_DAEMONSETS,
    NW_KUBE_PVS, /* volume topology (scaler/sched/snap_volume.c) */
    NW_KUBE_PVCS,
    NW_KUBE_STORAGECLASSES,
    NW_KUBE_NAMESPACES, /* pod affinity namespaceSelector */
    NW_KUBE_CSINODES,   /* volume attach limits of existing nodes */
    /* DRA (resource.k8s.io/v1): which accelerator class a pod's claims ask devices of
     * (admission/gpu_dra.c); not served before Kubernetes 1.34: empty */
    NW_KUBE_RESOURCECLAIMS,
    NW_KUBE_RESOURCECLAIMTEMPLATES,
    NW_KUBE_DEVICECLASSES,
    NW_KUBE_KINDS
} nw_kube_kind_t;

/** Resource descriptor of a cached kind (static storage). */
const nw_kube_res_t *nw_kube_cache_kind_res(nw_kube_kind_t k);

/** Plural lower-case name ("pods", "poddisruptionbudgets", ...; static storage). */
const char *nw_kube_cache_kind_name(nw_kube_kind_t k);

/* One cached object. Everything is read-only for users; strings point into json, or into
 * the record for pods, nodes and NodeClaims. */
typedef struct nw_kube_obj {
    _Atomic int refs_;     /* private */
    char *key_;            /* private: key's storage (NULL for pods) */
    cJSON *json;           /* the whole object, never modified; NULL for pods, Nodes and
                              NodeClaims (their JSON is not kept: the record holds what the
                              scaler reads) */
    const nw_pod_t *pod;   /* pods: the typed record decoded on ingest (api/pod.h); else NULL */
    const nw_node_t *node; /* nodes: the typed record (api/node.h); else NULL */
    const nw_node_claim_t *nodeclaim; /* nodeclaims: the typed record (api/node.h); else NULL */
    const char *key;                  /* "namespace/name", or "name" for cluster-scoped */
    const char *ns;                   /* "" for cluster-scoped */
    const char *name;
    const char *uid; /* "" if absent */
    const char *rv;  /* metadata.resourceVersion, "" if absent */
    /* indexed fields ("" when absent / not applicable) */
    const char *node_name;   /* pods: spec.nodeName */
    const char *phase;       /* pods: status.phase */
    const char *provider_id; /* nodes: spec.providerID; nodeclaims: status.providerID */
    const char *nodepool;    /* nodeclaims: label karpenter.sh/nodepool */
    int pending;             /* pods: nw_kube_cache_pod_is_pending */
    int terminating;         /* metadata.deletionTimestamp is set */
    /* pods: when the pod became pending in this cache, the monotonic time of the cache's
     * clock (nw_kube_cache_set_clock) at which the watch thread applied the change (or the
     * relist page) that made it pending; kept across updates while it stays pending; 0 when
     * not pending. The provisioner's batch window opens and idles from it, as Karpenter's
     * batcher from the pod controller's trigger. */
    int64_t pending_since;
} nw_kube_obj_t;

typedef struct nw_kube_cache nw_kube_cache_t;
typedef struct nw_kube_snap nw_kube_snap_t;

typedef enum { NW_KUBE_ADDED, NW_KUBE_MODIFIED, NW_KUBE_DELETED } nw_kube_change_t;

/* Called on the writer's thread after the change is visible; old/new may be NULL.
 * Borrowed objects, valid during the call. Must not call back into the cache's writers. */
typedef void (*nw_kube_cache_hook_fn)(nw_kube_kind_t kind, nw_kube_change_t change,
                                      const nw_kube_obj_t *old_obj, const nw_kube_obj_t *new_obj,
                                      void *ud);

/** New empty cache; metrics (nullable, borrowed) receives nodewarden_kube_cache_objects. */
nw_kube_cache_t *nw_kube_cache_new(nw_kube_metrics_t *metrics);

/** Free. NULL-safe. All snapshots must have been released. */
void nw_kube_cache_free(nw_kube_cache_t *c);

/** The clock whose monotonic time stamps pods' pending_since (borrowed, outlives the cache;
 * default the system clock). Set before the watch starts; tests pass their fake clock. */
void nw_kube_cache_set_clock(nw_kube_cache_t *c, const nw_clock_t *clock);

/** Install a change hook (before the watch starts). */
void nw_kube_cache_set_hook(nw_kube_cache_t *c, nw_kube_cache_hook_fn fn, void *ud);

/* ---- writers (the watch thread) ---- */

/** Insert or replace an object. Takes ownership of obj (also on error). NW_EINVAL if it
 * has no metadata.name, or is a Node or NodeClaim whose record does not decode (then the
 * object of its name is removed). */
NW_MUST_USE nw_rc_t nw_kube_cache_upsert(nw_kube_cache_t *c, nw_kube_kind_t kind, cJSON *obj);

/** Remove the object with obj's namespace/name (obj borrowed). Absent is not an error. */
NW_MUST_USE nw_rc_t nw_kube_cache_remove(nw_kube_cache_t *c, nw_kube_kind_t kind, const cJSON *obj);

/** Replace every object of a kind at once with the items of a JSON array (taken), and
 * mark the kind synced. Objects without a name are skipped. */
NW_MUST_USE nw_rc_t nw_kube_cache_replace(nw_kube_cache_t *c, nw_kube_kind_t kind, cJSON *items);

/** A relist built page by page, so a LIST of 100,000 pods never holds more than one page
 * as JSON: stage_new, stage_add with each page's items (taken; decoded at once), then
 * stage_commit, which applies them as nw_kube_cache_replace does and frees the stage
 * (stage_free drops one unapplied). A failed add (NW_ENOMEM, NW_EINVAL for items that are
 * not an array) is returned again by the commit, which then changes nothing. */
typedef struct nw_kube_cache_stage nw_kube_cache_stage_t;
nw_kube_cache_stage_t *nw_kube_cache_stage_new(nw_kube_cache_t *c, nw_kube_kind_t kind);
NW_MUST_USE nw_rc_t nw_kube_cache_stage_add(nw_kube_cache_stage_t *st, cJSON *items);
size_t nw_kube_cache_stage_count(const nw_kube_cache_stage_t *st);
NW_MUST_USE nw_rc_t nw_kube_cache_stage_commit(nw_kube_cache_stage_t *st);
void nw_kube_cache_stage_free(nw_kube_cache_stage_t *st);

/** Mark a kind synced without data (the resource is not served: treated as empty). */
void nw_kube_cache_mark_synced(nw_kube_cache_t *c, nw_kube_kind_t kind);

/** Mark a kind not synced: its watch lost events (410 Gone, an ERROR event, a broken
 * stream) and a relist is on its way. The objects stay as they were; has_synced and the
 * snapshots' synced are false until the relist commits (stage_commit, replace,
 * mark_synced), so the scaler makes no decision from a view known to be stale. */
void nw_kube_cache_mark_unsynced(nw_kube_cache_t *c, nw_kube_kind_t kind);

/* ---- readers (any thread) ---- */

/** True when every kind has been listed and none has been marked unsynced since its last
 * list (nw_kube_cache_mark_unsynced). */
bool nw_kube_cache_has_synced(nw_kube_cache_t *c);

/** Generation: increases on every applied change. */
uint64_t nw_kube_cache_generation(nw_kube_cache_t *c);

/** Block until the generation differs from `seen`, nw_kube_cache_wake was called since the
 * last wait returned, or timeout_ms passes (< 0: forever). Returns the current generation. */
uint64_t nw_kube_cache_wait(nw_kube_cache_t *c, uint64_t seen, int64_t timeout_ms);

/** End the current (or next) nw_kube_cache_wait early without a change (any thread): the
 * scaler's launch workers wake the reconcile loop with it. */
void nw_kube_cache_wake(nw_kube_cache_t *c);

/** Block until synced or timeout; returns true if synced. */
bool nw_kube_cache_wait_synced(nw_kube_cache_t *c, int64_t timeout_ms);

/** An eventfd that becomes readable after a change (read 8 bytes to clear). -1 if
 * unavailable. Borrowed. */
int nw_kube_cache_eventfd(nw_kube_cache_t *c);

/** Number of objects of a kind now. */
size_t nw_kube_cache_count(nw_kube_cache_t *c, nw_kube_kind_t kind);

/** Objects that left the store but are still kept for an older live snapshot (freed once
 * the last snapshot that can see them is released). */
size_t nw_kube_cache_retired(nw_kube_cache_t *c);

/** One more reference to an object obtained from a snapshot: it stays alive (and
 * unchanged) until nw_kube_cache_obj_release, whatever becomes of the snapshot or of the
 * object's place in the cache. For a job that keeps a few objects past the tick it was
 * made in: a held snapshot keeps every object version retired after it (under a stream
 * of pod events, thousands), a held object only itself. Any thread; release every hold
 * before nw_kube_cache_free. Returns o. */
const nw_kube_obj_t *nw_kube_cache_obj_hold(const nw_kube_obj_t *o);

/** Drop a reference taken with nw_kube_cache_obj_hold (the last one frees the object).
 * NULL-safe; any thread. */
void nw_kube_cache_obj_release(const nw_kube_obj_t *o);

/** An immutable snapshot (owned reference; NULL only on OOM). */
nw_kube_snap_t *nw_kube_cache_snapshot(nw_kube_cache_t *c);

/* ---- snapshots ---- */

/** Drop a reference. NULL-safe. */
void nw_kube_cache_snap_release(nw_kube_snap_t *s);

/** One more reference to s (a snapshot kept past the call it was lent to; released with
 * nw_kube_cache_snap_release). Holding one keeps the objects it shows alive. */
nw_kube_snap_t *nw_kube_cache_snap_hold(const nw_kube_snap_t *s);

uint64_t nw_kube_cache_snap_generation(const nw_kube_snap_t *s);
/** The generation of kind's last change as of s: equal in two snapshots when no object of
 * that kind changed between them (a tick can skip work on kinds that did not change). */
uint64_t nw_kube_cache_snap_kind_generation(const nw_kube_snap_t *s, nw_kube_kind_t kind);
/** The generation of the last change, as of s, to a pod bound to a node (spec.nodeName set
 * in its version before or after the change), or of a relist of pods: equal in two
 * snapshots when no bound pod changed between them (pending pods may have). */
uint64_t nw_kube_cache_snap_bound_pods_generation(const nw_kube_snap_t *s);
bool nw_kube_cache_snap_synced(const nw_kube_snap_t *s);

/** Objects of a kind, sorted by key. */
size_t nw_kube_cache_snap_count(const nw_kube_snap_t *s, nw_kube_kind_t kind);
const nw_kube_obj_t *nw_kube_cache_snap_at(const nw_kube_snap_t *s, nw_kube_kind_t kind, size_t i);

/** Lookup by namespace/name (ns ignored for cluster-scoped kinds). NULL if absent. */
const nw_kube_obj_t *nw_kube_cache_snap_get(const nw_kube_snap_t *s, nw_kube_kind_t kind,
                                            const char *ns, const char *name);

/* Index lookups: *out receives a borrowed array (sorted by key) and the count is returned. */
size_t nw_kube_cache_snap_pods_on_node(const nw_kube_snap_t *s, const char *node,
                                       const nw_kube_obj_t *const **out);
/** The generation of the last change to the pods bound to node (a pod whose spec.nodeName is
 * node added, changed or removed, or the pods relisted), so that a reader that keeps
 * something per node can tell which nodes' pods changed without reading them: 0 when no
 * change is known; UINT64_MAX when the node's pods changed after s was taken (s cannot then
 * tell its reader anything: look at the pods again). Takes the cache mutex. */
uint64_t nw_kube_cache_snap_node_pods_gen(const nw_kube_snap_t *s, const char *node);
/** nw_kube_cache_snap_node_pods_gen for n nodes at once into out[0..n), under one take of
 * the cache mutex (a reader asking for every Node does not take it once per Node). */
void nw_kube_cache_snap_node_pods_gens(const nw_kube_snap_t *s, const char *const *nodes, size_t n,
                                       uint64_t *out);
/* The pods in status.phase `phase`, in key order. "Running" (nearly every pod) is not
 * indexed: its list is made from the snapshot's pods on the first ask, then kept with it. */
size_t nw_kube_cache_snap_pods_in_phase(const nw_kube_snap_t *s, const char *phase,
                                        const nw_kube_obj_t *const **out);
size_t nw_kube_cache_snap_pending_pods(const nw_kube_snap_t *s, const nw_kube_obj_t *const **out);
size_t nw_kube_cache_snap_nodeclaims_for_nodepool(const nw_kube_snap_t *s, const char *nodepool,
                                                  const nw_kube_obj_t *const **out);
const nw_kube_obj_t *nw_kube_cache_snap_node_by_provider_id(const nw_kube_snap_t *s,
                                                            const char *pid);
const nw_kube_obj_t *nw_kube_cache_snap_nodeclaim_by_provider_id(const nw_kube_snap_t *s,
                                                                 const char *pid);

/** A copy of the object of `kind` (its Kubernetes kind: "DeviceClass", ...) in API group
 * `group` ("" for the core group) among the snapshot's kinds, named "name" or, for a
 * namespaced kind, "namespace/name"; NULL when absent, not a cached kind, or a kind kept as
 * records only (Pod, Node, NodeClaim: no JSON to copy). The caller frees
 * it (cJSON_Delete). The signature of nw_admit_ctx_t's lookup, with the snapshot as arg. */
cJSON *nw_kube_cache_snap_lookup(void *snap, const char *group, const char *kind, const char *name);

/** Append the kube-dump form: {"pods":["ns/name",...],"nodes":[...],...} with one key per
 * kind (plural lower-case) and sorted keys. */
NW_MUST_USE nw_rc_t nw_kube_cache_snap_dump_json(const nw_kube_snap_t *s, nw_buf_t *out);

/** Append the kube-dump --versions form: {"pods":{"ns/name":"resourceVersion",...},...},
 * the same kinds and keys as nw_kube_cache_snap_dump_json, each with its object's
 * metadata.resourceVersion ("" if it has none). */
NW_MUST_USE nw_rc_t nw_kube_cache_snap_dump_versions_json(const nw_kube_snap_t *s, nw_buf_t *out);

/** Karpenter's "provisionable pod" predicate on a pod object (nw_pod_is_pending of its
 * record, api/pod.h; for tests). */
bool nw_kube_cache_pod_is_pending(const cJSON *pod);

#endif
