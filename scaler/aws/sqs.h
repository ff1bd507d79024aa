/*
 * scaler/aws/sqs.h — SQS client for the interruption queue (AWS JSON 1.0:
 * POST to the SQS endpoint with X-Amz-Target: AmazonSQS.<Action> and
 * Content-Type application/x-amz-json-1.0, SigV4 service "sqs";
 * aws/karpenter-provider-aws pkg/providers/sqs/sqs.go).
 *
 *   nw_sqs_t *q;
 *   nw_sqs_new(&cfg, creds, clock, "my-queue", &q, &err);   // name or https URL
 *   nw_sqs_msgs_t m = {0};
 *   nw_sqs_receive(q, 10, 20, 20, &m, &ae, &err);           // long poll
 *   nw_sqs_delete(q, m.v[0].receipt, &ae, &err);
 *   nw_sqs_msgs_free(&m);
 *
 * A queue given by name is resolved with GetQueueUrl on first use (and again
 * after QueueDoesNotExist). Each call is one HTTP exchange (no retries: the
 * caller polls again); API errors come back as NW_EAWS with the SQS code (the
 * part of `__type` after '#') and a class in the nullable nw_sqs_error_t.
 *
 * Ownership: nw_sqs_new/nw_sqs_free; the client borrows creds and clock (they
 * must outlive it). nw_sqs_msgs_t is caller storage, freed with nw_sqs_msgs_free.
 * Thread: one thread uses a client at a time (the queue URL is cached inside);
 * the abort flag may be set from any thread.
 */
#ifndef NW_SCALER_AWS_SQS_H
#define NW_SCALER_AWS_SQS_H

#include <stdatomic.h>
#include <stddef.h>

#include "common/clock.h"
#include "common/err.h"
#include "scaler/aws/awscfg.h"
#include "scaler/aws/creds.h"

#define NW_SQS_MAX_MESSAGES 10
#define NW_SQS_MAX_BODY (256 * 1024)
#define NW_SQS_MAX_RECEIPT 2048

typedef enum {
    NW_SQS_OK = 0,
    NW_SQS_THROTTLE,  /* ThrottlingException, RequestThrottled, OverLimit */
    NW_SQS_AUTH,      /* AccessDenied, InvalidClientTokenId, SignatureDoesNotMatch, ... */
    NW_SQS_NOTFOUND,  /* QueueDoesNotExist (AWS.SimpleQueueService.NonExistentQueue) */
    NW_SQS_INVALID,   /* InvalidParameterValue, ReceiptHandleIsInvalid, MissingParameter, ... */
    NW_SQS_SERVER,    /* InternalError, ServiceUnavailable, any 5xx */
    NW_SQS_TRANSPORT, /* no HTTP response (connect error, timeout, aborted) */
    NW_SQS_OTHER,
} nw_sqs_class_t;

typedef struct {
    nw_sqs_class_t cls;
    long status;
    char code[128];
    char message[512];
} nw_sqs_error_t;

typedef struct {
    char id[128];  /* MessageId */
    char *receipt; /* ReceiptHandle (owned) */
    char *body;    /* Body (owned, NUL-terminated) */
    size_t body_len;
} nw_sqs_msg_t;

typedef struct {
    nw_sqs_msg_t v[NW_SQS_MAX_MESSAGES];
    size_t n;
} nw_sqs_msgs_t;

typedef struct nw_sqs nw_sqs_t;

/** Class of an SQS error code (status used for codes the table does not know). */
nw_sqs_class_t nw_sqs_classify(const char *code, long status);
/** "throttling", "auth", "not-found", "invalid", "server", "transport", "other", "ok". */
const char *nw_sqs_class_name(nw_sqs_class_t c);

/** queue: a queue name, or a queue URL (http:// or https://). cfg is copied;
 * cfg->sqs must be set (the endpoint). No network I/O. */
NW_MUST_USE nw_rc_t nw_sqs_new(const nw_awscfg_t *cfg, nw_creds_t *creds, const nw_clock_t *clock,
                               const char *queue, nw_sqs_t **out, nw_err_t *err);
void nw_sqs_free(nw_sqs_t *q);

/** Abandon an exchange in progress (a long poll) when *flag becomes non-zero
 * (borrowed; NULL turns it off). */
void nw_sqs_set_abort(nw_sqs_t *q, const atomic_int *flag);

/** The queue URL, resolving it with GetQueueUrl when the queue was given by name. */
NW_MUST_USE nw_rc_t nw_sqs_queue_url(nw_sqs_t *q, const char **url, nw_sqs_error_t *ae,
                                     nw_err_t *err);

/** ReceiveMessage: max_messages 1..10, visibility_s >= 0, wait_s 0..20 (long
 * poll). out is reset first; on failure it is empty. */
NW_MUST_USE nw_rc_t nw_sqs_receive(nw_sqs_t *q, int max_messages, int visibility_s, int wait_s,
                                   nw_sqs_msgs_t *out, nw_sqs_error_t *ae, nw_err_t *err);

/** DeleteMessage by receipt handle. */
NW_MUST_USE nw_rc_t nw_sqs_delete(nw_sqs_t *q, const char *receipt, nw_sqs_error_t *ae,
                                  nw_err_t *err);

/** HTTP exchanges made so far. */
long nw_sqs_request_count(const nw_sqs_t *q);

void nw_sqs_msgs_free(nw_sqs_msgs_t *m);

/* ---- parsers (pure; exposed for tests and fuzzing) ---- */

/** A ReceiveMessage response body ({} or {"Messages":[...]}) into out (reset
 * first; empty on failure). Errors name the field ("Messages[1].ReceiptHandle"). */
NW_MUST_USE nw_rc_t nw_sqs_parse_receive(const char *json, size_t len, nw_sqs_msgs_t *out,
                                         nw_err_t *err);

/** A GetQueueUrl response body ({"QueueUrl":"..."}) into url. */
NW_MUST_USE nw_rc_t nw_sqs_parse_queue_url(const char *json, size_t len, char *url, size_t urllen,
                                           nw_err_t *err);

/** An error response (status >= 300) into ae: code from `__type` (after '#'),
 * message from `message` or `Message`; a body that is not JSON gives code
 * "HTTP<status>". Always fills ae. */
void nw_sqs_parse_error(const char *json, size_t len, long status, nw_sqs_error_t *ae);

#endif
