/*
 * scaler/kube/write.h — reads of single objects and every write the scaler makes:
 * create, update (optimistic concurrency, bounded re-read-and-retry on 409),
 * merge and JSON patch, the status subresource, delete (preconditions,
 * propagation), finalizer add/remove, pod eviction (policy/v1) and Events with
 * aggregation (kubernetes/kubernetes pkg/registry/core/pod/storage/eviction.go,
 * pkg/apis/core/validation/events.go; client-go tools/record/events_cache.go).
 *
 * Conventions: res is a descriptor from client.h; ns is ignored for
 * cluster-scoped resources; `status` non-zero targets the /status subresource.
 * Objects passed in are borrowed; *out objects (nullable out-pointers) are
 * owned by the caller (cJSON_Delete). Errors: NW_ENOTFOUND (404), NW_ECONFLICT
 * (409), NW_EFORBIDDEN (403), NW_EKUBE (other HTTP errors, message from the Status), NW_EHTTP /
 * NW_ETIMEOUT (no answer after the client's retries).
 * Thread: any (each call is independent; the recorder has its own mutex).
 */
#ifndef NW_SCALER_KUBE_WRITE_H
#define NW_SCALER_KUBE_WRITE_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "api/pod.h"
#include "common/err.h"
#include "scaler/kube/client.h"

/** GET one object. */
NW_MUST_USE nw_rc_t nw_kube_write_get(nw_kube_client_t *c, const nw_kube_res_t *res, const char *ns,
                                      const char *name, cJSON **out, nw_err_t *err);

/** POST obj to the collection (namespace taken from ns, else obj's metadata.namespace).
 * 409 AlreadyExists → NW_ECONFLICT. */
NW_MUST_USE nw_rc_t nw_kube_write_create(nw_kube_client_t *c, const nw_kube_res_t *res,
                                         const char *ns, const cJSON *obj, cJSON **out,
                                         nw_err_t *err);

/** PUT obj (it must carry the metadata.resourceVersion that was read; 409 → NW_ECONFLICT). */
NW_MUST_USE nw_rc_t nw_kube_write_update(nw_kube_client_t *c, const nw_kube_res_t *res,
                                         const cJSON *obj, int status, cJSON **out, nw_err_t *err);

/* Change obj in place for an update. Return 0 to write it, 1 when no write is needed
 * (the change is already there), -1 to give up (the call returns NW_EINVAL). */
typedef int (*nw_kube_mutate_fn)(cJSON *obj, void *ud);

/**
 * Read-modify-write: GET, mutate, PUT with the read resourceVersion; on 409 re-read
 * and mutate again, at most max_attempts times (<= 0: 5), with a short jittered pause.
 * @return NW_OK (also when mutate said nothing to do), NW_ECONFLICT when the attempts
 * ran out, or the first other error.
 */
NW_MUST_USE nw_rc_t nw_kube_write_update_retry(nw_kube_client_t *c, const nw_kube_res_t *res,
                                               const char *ns, const char *name, int status,
                                               nw_kube_mutate_fn mutate, void *ud, int max_attempts,
                                               cJSON **out, nw_err_t *err);

typedef enum { NW_KUBE_PATCH_MERGE, NW_KUBE_PATCH_JSON } nw_kube_patch_t;

/** PATCH with application/merge-patch+json or application/json-patch+json. A failed JSON
 * patch "test" comes back as NW_EKUBE with code 422 in the message. */
NW_MUST_USE nw_rc_t nw_kube_write_patch(nw_kube_client_t *c, const nw_kube_res_t *res,
                                        const char *ns, const char *name, nw_kube_patch_t type,
                                        const char *patch, int status, cJSON **out, nw_err_t *err);

typedef struct {
    const char *propagation; /* "Background", "Foreground", "Orphan" or NULL */
    int64_t grace_seconds;   /* < 0: server default */
    const char *uid;         /* precondition, or NULL */
    const char *rv;          /* precondition, or NULL */
} nw_kube_delete_opts_t;

/** DELETE. 404 is success (*gone = 1 if gone is non-NULL); a failed precondition is
 * NW_ECONFLICT. opts may be NULL. */
NW_MUST_USE nw_rc_t nw_kube_write_delete(nw_kube_client_t *c, const nw_kube_res_t *res,
                                         const char *ns, const char *name,
                                         const nw_kube_delete_opts_t *opts, int *gone,
                                         nw_err_t *err);

/** Add a finalizer with a JSON patch conditional on the resourceVersion (retried on
 * conflict). Already present: NW_OK without a write. The object being deleted:
 * NW_EINVAL (no new finalizers may be added). */
NW_MUST_USE nw_rc_t nw_kube_write_finalizer_add(nw_kube_client_t *c, const nw_kube_res_t *res,
                                                const char *ns, const char *name,
                                                const char *finalizer, nw_err_t *err);

/** Remove a finalizer with a JSON patch that tests the element first (retried). Absent,
 * or the object gone: NW_OK. */
NW_MUST_USE nw_rc_t nw_kube_write_finalizer_remove(nw_kube_client_t *c, const nw_kube_res_t *res,
                                                   const char *ns, const char *name,
                                                   const char *finalizer, nw_err_t *err);

typedef enum {
    NW_KUBE_EVICT_STARTED = 0, /* 2xx: graceful deletion began; wait for the pod to go */
    NW_KUBE_EVICT_GONE,        /* 404: the pod is already gone */
    NW_KUBE_EVICT_NOT_NOW,     /* 429 (a PDB) or 504: retry after *retry_after_s */
    NW_KUBE_EVICT_BLOCKED,     /* 500 with several PDBs, or 403: retrying will not help */
    NW_KUBE_EVICT_CONFLICT,    /* 409: a precondition failed; re-read */
} nw_kube_evict_t;

/**
 * POST a policy/v1 Eviction for ns/name. grace_seconds < 0 uses the pod's own.
 * On NW_OK *result says what happened; for NOT_NOW *retry_after_s is the server's
 * Retry-After, or 5 s (client-go's drain interval) when it sent none. The reason is
 * in err->msg for NOT_NOW/BLOCKED/CONFLICT (err is not an error then: rc is NW_OK).
 */
NW_MUST_USE nw_rc_t nw_kube_write_evict(nw_kube_client_t *c, const char *ns, const char *name,
                                        int64_t grace_seconds, nw_kube_evict_t *result,
                                        int *retry_after_s, nw_err_t *err);

typedef struct {
    int64_t grace_seconds; /* < 0: the pod's own */
    const char *uid;       /* deleteOptions.preconditions.uid, or NULL */
} nw_kube_evict_opts_t;

/** nw_kube_write_evict with options: a UID precondition (409 / NW_KUBE_EVICT_CONFLICT then
 * means the name now holds another pod) and the HTTP status in *code (nullable; 0 when
 * no answer arrived). */
NW_MUST_USE nw_rc_t nw_kube_write_evict_ex(nw_kube_client_t *c, const char *ns, const char *name,
                                           const nw_kube_evict_opts_t *o, nw_kube_evict_t *result,
                                           int *retry_after_s, long *code, nw_err_t *err);

/* ---- Events ---- */

typedef struct nw_kube_recorder nw_kube_recorder_t;

/**
 * An event recorder for core/v1 Events. component is the source/reportingComponent
 * ("nodewarden"), instance the reportingInstance (pod name or host). Events with the
 * same involved object, type, reason and message are aggregated: the first creates an
 * Event, repeats PATCH its count and lastTimestamp; writes are limited by a token
 * bucket (burst 25, 1 per second) and a suppressed repeat is carried by the next write.
 * Owned: free with nw_kube_write_recorder_free.
 */
nw_kube_recorder_t *nw_kube_write_recorder_new(nw_kube_client_t *c, const char *component,
                                               const char *instance);

void nw_kube_write_recorder_free(nw_kube_recorder_t *r);

/**
 * Record an event about obj (a full object of resource res; uid/resourceVersion are
 * copied from it). type "Normal" or "Warning". Best-effort: never blocks on the
 * limiter; failures are logged and returned.
 */
nw_rc_t nw_kube_write_event(nw_kube_recorder_t *r, const nw_kube_res_t *res, const cJSON *obj,
                            const char *type, const char *reason, const char *message,
                            nw_err_t *err);

/* The object an event is about, by reference: what the involvedObject carries. */
typedef struct {
    const char *ns;   /* "" or NULL when cluster-scoped */
    const char *name; /* required */
    const char *uid;  /* "" or NULL: not sent */
    const char *rv;   /* resourceVersion; "" or NULL: not sent */
} nw_kube_event_ref_t;

/** nw_kube_write_event about an object named by reference (a cached Node or NodeClaim,
 * whose JSON is not kept: its record's metadata). ref borrowed; the same aggregation,
 * limits and errors. */
nw_rc_t nw_kube_write_event_ref(nw_kube_recorder_t *r, const nw_kube_res_t *res,
                                const nw_kube_event_ref_t *ref, const char *type,
                                const char *reason, const char *message, nw_err_t *err);

/** The same about a pod kept as a record (api/pod.h): its name, namespace, uid and
 * resourceVersion are the involved object. */
nw_rc_t nw_kube_write_event_pod(nw_kube_recorder_t *r, const nw_pod_t *pod, const char *type,
                                const char *reason, const char *message, nw_err_t *err);

/** Events written so far (created, patched, suppressed): for tests and metrics. */
void nw_kube_write_recorder_stats(nw_kube_recorder_t *r, uint64_t *created, uint64_t *patched,
                                  uint64_t *suppressed);

#endif
