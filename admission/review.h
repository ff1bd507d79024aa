/*
 * admission/review.h — AdmissionReview v1: bytes in, bytes out.
 *
 * Pure functions over bytes (no MHD, no sockets, no clock), so they can be
 * unit-tested and fuzzed: decode the request body, find the handler for the
 * request's group/kind (api/admit.h), call its mutate or validate function,
 * and encode the response (uid echoed, apiVersion admission.k8s.io/v1, kind
 * AdmissionReview; status for denials; base64 JSONPatch for mutations;
 * warnings). Malformed input gives HTTP 400 with a metav1 Status body that
 * says what is wrong; a handler error gives HTTP 500 with no AdmissionReview,
 * so the apiserver applies the webhook's failurePolicy (kubernetes/kubernetes
 * staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/mutating/dispatcher.go
 * and validating/dispatcher.go).
 *
 * Ownership: nw_review_t owns its parsed tree; nw_review_out_t owns its
 * body. Free both with their _cleanup functions.
 * Thread: any (no shared state).
 */
#ifndef NW_ADMISSION_REVIEW_H
#define NW_ADMISSION_REVIEW_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "admission/handlers.h"
#include "api/admit.h"
#include "common/buf.h"
#include "common/err.h"

#define NW_SRV_ADMISSION_API "admission.k8s.io/v1"

typedef enum {
    NW_SRV_VERDICT_ALLOWED = 0, /* allowed, no patch */
    NW_SRV_VERDICT_PATCHED,     /* allowed with a patch (mutate) */
    NW_SRV_VERDICT_DENIED,      /* allowed: false */
    NW_SRV_VERDICT_BAD_REQUEST, /* HTTP 400: not a usable AdmissionReview */
    NW_SRV_VERDICT_ERROR,       /* HTTP 500: handler failed */
    NW_SRV_VERDICT_COUNT
} nw_review_verdict_t;

/** "allowed", "patched", "denied", "bad_request", "error". Static storage. */
const char *nw_review_verdict_str(nw_review_verdict_t v);

/* A decoded AdmissionReview. req points into root (borrowed from it). */
typedef struct {
    cJSON *root; /* owned */
    nw_admit_req_t req;
    /* the JSON path of the first string (key or value) holding an escaped NUL
     * (\u0000), which the parser cut there; "" if none. The review is then denied
     * (422 naming the field), not judged. */
    char nul_field[256];
} nw_review_t;

/**
 * Decode an AdmissionReview v1 request body (len bytes; need not be
 * NUL-terminated). Checks apiVersion, kind, request, request.uid,
 * request.kind.kind, request.operation and the types of the fields it reads;
 * unknown fields are ignored. request.uid must be valid UTF-8 without NUL (it is
 * echoed byte for byte); a NUL anywhere else is reported in rv->nul_field. NW_EPARSE/NW_EINVAL with
 * a message (naming the field) in err; rv is then empty.
 */
NW_MUST_USE nw_rc_t nw_review_decode(const char *body, size_t len, nw_review_t *rv, nw_err_t *err);

/** Free what a review owns. NULL-safe, idempotent. */
void nw_review_cleanup(nw_review_t *rv);

/**
 * Encode the AdmissionReview response for uid and result into out (appended).
 * mutate=0 never emits a patch (validating webhooks must not). A patch that is
 * not a JSON array, or an empty array, is NW_EINVAL / omitted respectively.
 * Warnings have control characters replaced by spaces.
 */
NW_MUST_USE nw_rc_t nw_review_encode(const char *uid, int mutate, const nw_admit_result_t *res,
                                     nw_buf_t *out);

/** Append a metav1 Status JSON body {"kind":"Status",...,"code":code} to out. */
NW_MUST_USE nw_rc_t nw_review_status_json(nw_buf_t *out, int code, const char *reason,
                                          const char *message);

/* Handler lookup; nw_handlers_find in production, a test table in tests. */
typedef const nw_admit_handler_t *(*nw_srv_lookup_fn)(const char *group, const char *kind);

/* The outcome of one admission call, with copies of the request's identity
 * for logs and metrics (truncated to fit; "" when unknown). */
typedef struct {
    int status; /* HTTP status: 200, 400, 500, or 504 once nw_admit_deadline_passed() */
    char *body; /* owned JSON (AdmissionReview or Status); free via cleanup */
    size_t body_len;
    nw_review_verdict_t verdict;
    char uid[128];
    char group[64];
    char kind[64];
    char name[128];
    char op[16];
    char why[256]; /* for 400/500: the message; for a denial: start of status.message */
} nw_review_out_t;

/**
 * The whole path: decode, dispatch (mutate or validate), encode. Always fills
 * out (status/body) unless it returns NW_ENOMEM.
 * @param lookup  handler lookup (NULL = nw_handlers_find)
 */
NW_MUST_USE nw_rc_t nw_review_handle(const nw_admit_ctx_t *ctx, nw_srv_lookup_fn lookup, int mutate,
                                     const char *body, size_t len, nw_review_out_t *out);

/** Free the body of out. NULL-safe. */
void nw_review_out_cleanup(nw_review_out_t *out);

#endif
