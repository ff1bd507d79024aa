/*
 * scaler/aws/awsjson.h — one signed call of an AWS JSON protocol API (JSON 1.0: SQS; JSON
 * 1.1: the Price List Query API, SSM): POST the body to the endpoint with X-Amz-Target
 * <target> and Content-Type application/x-amz-json-1.<minor>, SigV4 for region/service
 * with the credentials of creds. Used by pricing.c and ssm.c (sqs.c keeps its own, which
 * this file's error parsing, nw_sqs_parse_error, comes from).
 *
 * Errors: NW_EAWS with the API's code (nw_sqs_parse_error: the `__type` after '#') and a
 * class in ae (NoCredentials: NW_SQS_AUTH), NW_ETIMEOUT / NW_EIO without a response
 * (class NW_SQS_TRANSPORT). No retries.
 *
 * Thread: any (the credentials provider is thread-safe; each call has its own handle).
 */
#ifndef NW_SCALER_AWS_AWSJSON_H
#define NW_SCALER_AWS_AWSJSON_H

#include <stdatomic.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/err.h"
#include "scaler/aws/creds.h"
#include "scaler/aws/sqs.h"

typedef struct {
    const char *endpoint;    /* https://ssm.us-west-2.amazonaws.com */
    const char *region;      /* signing region */
    const char *service;     /* signing service: "ssm", "pricing", "sqs" */
    const char *target;      /* "AmazonSSM.GetParameter" */
    int json_minor;          /* 0: application/x-amz-json-1.0, 1: 1.1 */
    nw_creds_t *creds;       /* borrowed */
    const nw_clock_t *clock; /* signing time */
    long timeout_ms;         /* the whole exchange */
    const atomic_int *abort; /* nullable: see awshttp.h */
    const char *what;        /* error path ("ssm", "pricing", "sqs") */
} nw_awsjson_req_t;

/** One call; on HTTP 200 the response body is in out (reset first). ae must not be NULL. */
NW_MUST_USE nw_rc_t nw_awsjson_call(const nw_awsjson_req_t *r, const char *body, nw_buf_t *out,
                                    nw_sqs_error_t *ae, nw_err_t *err);

#endif
