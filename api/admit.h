/*
 * api/admit.h — the contract between the admission layer (admission/) and the
 * object-model rules (api/). Pure: no I/O, no threads of its own.
 *
 * admission/review.c parses an AdmissionReview, finds the handler for the request's
 * kind (group + kind) in nw_handlers[] (admission/handlers.h), and calls its
 * mutate or validate function with the decoded request. The handler fills a
 * nw_admit_result_t; admission/review.c turns it into the AdmissionReview response.
 *
 * Ownership: the request is borrowed (valid during the call). Everything the
 * handler puts into the result is owned by the result; free with
 * nw_admit_result_cleanup(). Handlers are called from many threads at once and
 * must not keep state between calls.
 * Thread: any.
 */
#ifndef NW_API_ADMIT_H
#define NW_API_ADMIT_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

typedef enum { NW_OP_CREATE, NW_OP_UPDATE, NW_OP_DELETE, NW_OP_CONNECT } nw_admit_op_t;

struct nw_gpu_policy; /* admission/gpu.h (GPU isolation settings); may be NULL */

/* What every handler may consult besides the request. */
typedef struct {
    const struct nw_gpu_policy *gpu; /* borrowed; NULL = GPU policy off */
    const char *self_namespace;      /* nodewarden's own namespace, "" if unknown */
    /* Optional cluster state for cross-object checks: a copy of the named object (owned
     * by the caller of lookup, free with cJSON_Delete) or NULL when unknown; a namespaced
     * kind (ResourceClaim, ResourceClaimTemplate) is named "namespace/name". NULL lookup
     * = no cluster state (checks are skipped). */
    cJSON *(*lookup)(void *arg, const char *group, const char *kind, const char *name);
    void *lookup_arg;
    /* the lookup sees the whole cluster (serve's watch cache), so an object it does not
     * find does not exist; false for `nodewarden check`, which sees only its files */
    bool lookup_complete;
    /* optional: false while the lookup's view is still being filled (the watch cache
     * before its first list), when lookup_complete does not hold yet; NULL: it holds */
    bool (*lookup_ready)(void *arg);
} nw_admit_ctx_t;

/** A lookup (nw_admit_ctx_t.lookup) over arg, a cJSON array of manifests (the objects of
 * `nodewarden check`'s files, `plan`'s input): a copy of the first object of that group
 * (its apiVersion "<group>/..."), kind and name, or NULL. ResourceClaim and
 * ResourceClaimTemplate are namespaced ("namespace/name", a manifest without a namespace
 * being in "default"); other kinds are named by name alone. */
cJSON *nw_admit_lookup_in(void *arg, const char *group, const char *kind, const char *name);

/* The decoded AdmissionReview request (borrowed). */
typedef struct {
    nw_admit_op_t op;
    const char *uid;
    const char *group;       /* request.kind.group ("" for core) */
    const char *version;     /* request.kind.version */
    const char *kind;        /* request.kind.kind */
    const char *resource;    /* request.resource.resource */
    const char *subresource; /* "" if none */
    const char *name;        /* may be "" (generateName on CREATE) */
    const char *namespace_;  /* "" for cluster-scoped objects */
    const cJSON *object;     /* NULL for DELETE */
    const cJSON *old_object; /* NULL unless UPDATE/DELETE */
    int dry_run;
} nw_admit_req_t;

#define NW_ADMIT_MAX_WARNINGS 16

typedef struct {
    int allowed;    /* 1 allow, 0 deny */
    int code;       /* HTTP status for a denial (422 Invalid, 403 Forbidden, 400) */
    char *reason;   /* owned, metav1.StatusReason ("Invalid", "Forbidden"); may be NULL */
    char *message;  /* owned, full status.message; NULL when allowed */
    cJSON *details; /* owned, Status details {name, group, kind, causes[]}; may be NULL */
    char *patch;    /* owned, RFC 6902 JSON Patch array as JSON text; NULL = no patch */
    char *warnings[NW_ADMIT_MAX_WARNINGS]; /* owned; admission warnings */
    size_t nwarnings;
} nw_admit_result_t;

typedef nw_rc_t (*nw_admit_fn)(const nw_admit_ctx_t *ctx, const nw_admit_req_t *req,
                               nw_admit_result_t *res);

typedef struct {
    const char *group;    /* "karpenter.sh", "karpenter.k8s.aws", "" for core */
    const char *kind;     /* "NodePool", "EC2NodeClass", "Pod" */
    nw_admit_fn mutate;   /* /mutate; NULL = nothing to default */
    nw_admit_fn validate; /* /validate; NULL = always allowed */
} nw_admit_handler_t;

/** Initialise a result as "allowed, no patch, no warnings". */
void nw_admit_result_init(nw_admit_result_t *res);

/** Free everything a result owns and reinitialise it. */
void nw_admit_result_cleanup(nw_admit_result_t *res);

/** Add a printf-style warning (dropped silently past NW_ADMIT_MAX_WARNINGS). */
nw_rc_t nw_admit_warn(nw_admit_result_t *res, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- the time budget of the review being handled on this thread ---------------------
 * The server sets the deadline of the request (the apiserver's ?timeout=, or
 * webhook.requestTimeout) around the call; the validators check it in their loops over
 * an object's items and stop early once it has passed, and the review is then answered
 * with a timeout instead of a verdict (the caller has stopped waiting). Thread-local. */

/** Deadline on CLOCK_MONOTONIC in ns for this thread's reviews; 0 = none. */
void nw_admit_deadline_set(int64_t mono_ns);

/** Has this thread's deadline passed? (false when none is set) */
bool nw_admit_deadline_passed(void);

/** The request's name, or metadata.name of its object, or "" (borrowed). */
const char *nw_admit_object_name(const nw_admit_req_t *req);

#endif
