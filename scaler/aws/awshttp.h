/*
 * scaler/aws/awshttp.h — one HTTP exchange with an AWS endpoint (libcurl),
 * optionally SigV4-signed. Used by creds (IMDS, STS, container and process
 * credentials) and by every AWS client (EC2, SQS, SSM, Pricing, IAM).
 *
 * Every call uses its own curl easy handle, so calls from different threads
 * never share state. curl_global_init must have run (main does it; tests too).
 *
 * Network settings (nw_awshttp_net_t) are process-wide, as the environment they come
 * from is: nw_awscfg_resolve installs them (AWS_CA_BUNDLE or the profile's ca_bundle,
 * HTTPS_PROXY/HTTP_PROXY/NO_PROXY and their lower-case forms) before any client
 * starts. A CA bundle replaces the system's roots for every HTTPS call, as in the
 * SDKs. A proxy is chosen by the URL's scheme and skipped for hosts NO_PROXY matches
 * (libcurl's matching: host names and domain suffixes, IP addresses and CIDR ranges,
 * "*" for all); libcurl's own reading of the proxy variables is turned off, so
 * exactly these rules hold. Calls marked direct (instance metadata, container
 * credential endpoints: link-local or loopback) never use a proxy.
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
    /* optional, set by the caller after nw_awshttp_resp_init: 1 sends the exchange
     * directly, never through a proxy (instance metadata, container credentials) */
    int direct;
} nw_awshttp_resp_t;

/** The process-wide network settings; "" means unset. */
typedef struct {
    char ca_bundle[1024];  /* PEM file of the CAs trusted for HTTPS ("": the system's) */
    char http_proxy[1024]; /* proxy for http:// URLs */
    char https_proxy[1024];
    char no_proxy[2048]; /* hosts reached directly, comma-separated */
} nw_awshttp_net_t;

/** Install n for every later call (copied; NULL: no CA bundle, no proxy). Call before
 * the threads that make AWS calls start. */
void nw_awshttp_set_net(const nw_awshttp_net_t *n);

/** The settings in effect (a copy). */
void nw_awshttp_get_net(nw_awshttp_net_t *out);

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
