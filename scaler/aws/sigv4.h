/*
 * scaler/aws/sigv4.h — AWS Signature Version 4 (header signing) with OpenSSL.
 *
 * nw_sigv4_sign computes the canonical request, the string to sign, the
 * signing key and the Authorization header for one HTTP request. The caller
 * sends the request with the headers it passed in plus the ones the signer
 * adds (X-Amz-Date, and X-Amz-Security-Token for temporary credentials),
 * which nw_sigv4_result_t returns ready to use.
 *
 * Paths are given raw (not percent-encoded); with normalize set, '.' and '..'
 * segments are removed and repeated slashes collapsed before encoding (S3
 * would not normalise; nodewarden never talks to S3). The query string may be
 * given raw or percent-encoded: it is decoded, re-encoded per RFC 3986 and
 * sorted.
 *
 * Secrets: nothing here logs. The result holds the signature (not secret
 * once sent) and the caller's session token pointer (borrowed).
 *
 * Thread: any (no global state).
 */
#ifndef NW_SCALER_AWS_SIGV4_H
#define NW_SCALER_AWS_SIGV4_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/err.h"

typedef struct {
    const char *name;  /* any case; compared case-insensitively */
    const char *value; /* leading/trailing space trimmed, inner runs collapsed */
} nw_sigv4_header_t;

typedef struct {
    const char *method;               /* "GET", "POST" */
    const char *path;                 /* raw path, "/" when NULL or empty */
    const char *query;                /* query string without '?', may be NULL */
    const nw_sigv4_header_t *headers; /* must include Host */
    size_t nheaders;
    const void *payload; /* may be NULL when payload_len is 0 */
    size_t payload_len;
    const char *payload_hash; /* lowercase hex SHA-256 to use instead of hashing payload */
    const char *region;       /* "us-east-1" */
    const char *service;      /* "ec2", "sts", "sqs" */
    int64_t time_s;           /* signing time, epoch seconds */
    int normalize_path;       /* 1: remove dot segments, collapse slashes */
} nw_sigv4_req_t;

typedef struct {
    const char *access_key_id;
    const char *secret_access_key;
    const char *session_token; /* NULL or "" for long-term keys */
} nw_sigv4_creds_t;

typedef struct {
    char amz_date[17];         /* "20150830T123600Z" (send as X-Amz-Date) */
    char signature[65];        /* lowercase hex */
    char authorization[1024];  /* full Authorization header value */
    const char *session_token; /* borrowed from creds; send as X-Amz-Security-Token when set */
} nw_sigv4_result_t;

/** Sign req with creds. NW_EINVAL (with the field named) for a missing host
 * header, region, service or key; NW_ERANGE if something exceeds the limits
 * (64 headers, 64 KiB canonical request). */
NW_MUST_USE nw_rc_t nw_sigv4_sign(const nw_sigv4_req_t *req, const nw_sigv4_creds_t *creds,
                                  nw_sigv4_result_t *out, nw_err_t *err);

/** Build only the canonical request (for tests and debugging) into out
 * (caller-initialised buffer); signed_headers (may be NULL) receives the
 * ';'-joined header list. The signer's own headers (x-amz-date, token) are
 * included when amz_date / session_token are non-NULL. */
NW_MUST_USE nw_rc_t nw_sigv4_canonical_request(const nw_sigv4_req_t *req, const char *amz_date,
                                               const char *session_token, nw_buf_t *out,
                                               nw_buf_t *signed_headers, nw_err_t *err);

/** Lowercase hex SHA-256 of data into hex (65 bytes). */
void nw_sigv4_sha256_hex(const void *data, size_t len, char hex[65]);

/** Derive the signing key (32 bytes) for date "YYYYMMDD", region, service. */
void nw_sigv4_signing_key(const char *secret, const char *date8, const char *region,
                          const char *service, unsigned char key[32]);

/** Percent-encode s per RFC 3986 (unreserved A-Z a-z 0-9 - . _ ~ kept; '/'
 * kept when keep_slash) and append to out. */
NW_MUST_USE nw_rc_t nw_sigv4_uri_encode(nw_buf_t *out, const char *s, size_t len, int keep_slash);

#endif
