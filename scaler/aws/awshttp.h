/*
 * scaler/aws/awshttp.h — one HTTP exchange with an AWS endpoint (libcurl),
 * optionally SigV4-signed. Used by creds (IMDS, STS) and ec2.
 *
 * Every call uses its own curl easy handle, so calls from different threads
 * never share state. curl_global_init must have run (main does it; tests too).
 *
 * Ownership: nw_awshttp_resp_t is caller storage; nw_awshttp_resp_cleanup frees
 * the body.
 * Thread: any.
 */
#ifndef NW_SCALER_AWS_AWSHTTP_H
#define NW_SCALER_AWS_AWSHTTP_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/err.h"

#define NW_AWSHTTP_MAX_BODY (32 * 1024 * 1024)

typedef struct {
    long status;   /* HTTP status, 0 when no response arrived */
    nw_buf_t body; /* response body (capped at NW_AWSHTTP_MAX_BODY) */
    int timed_out; /* 1 when the per-call timeout fired */
    /* optional, set by the caller after nw_awshttp_resp_init (borrowed): when it
     * reads non-zero the exchange is abandoned within about a second (NW_EIO,
     * "aborted"); lets a long poll end when its thread is told to stop */
    const atomic_int *abort;
} nw_awshttp_resp_t;

/** Credentials for signing; NULL access key means "send unsigned". */
typedef struct {
    const char *access_key_id;
    const char *secret_access_key;
    const char *session_token;
    const char *region;
    const char *service;
    int64_t time_s; /* signing time (epoch seconds) */
} nw_awshttp_sign_t;

void nw_awshttp_resp_init(nw_awshttp_resp_t *r);
void nw_awshttp_resp_cleanup(nw_awshttp_resp_t *r);

/**
 * Perform method on url with extra headers ("Name: value", NULL-terminated
 * array, may be NULL) and body. When sign is non-NULL with an access key, the
 * request is signed (Host, Content-Type when a body is sent, X-Amz-Date and
 * the token are signed). timeout_ms bounds the whole exchange.
 * Returns NW_OK whenever an HTTP response arrived (any status; look at
 * resp->status), NW_ETIMEOUT on timeout, NW_EIO on connection errors.
 */
NW_MUST_USE nw_rc_t nw_awshttp_do(const char *method, const char *url, const char *const *headers,
                                  const char *content_type, const char *body, size_t body_len,
                                  const nw_awshttp_sign_t *sign, long timeout_ms,
                                  nw_awshttp_resp_t *resp, nw_err_t *err);

/** application/x-www-form-urlencoded escaping of s appended to b (RFC 3986
 * unreserved kept; everything else %XX, space as %20). */
NW_MUST_USE nw_rc_t nw_awshttp_form_escape(nw_buf_t *b, const char *s);

#endif
