/*
 * scaler/aws/ec2.h — EC2 Query API client (libcurl + libxml2, API version 2016-11-15).
 *
 * Requests are form-encoded POSTs signed with SigV4 (service "ec2") using the
 * credentials from creds.h. Every call:
 *   - is bounded by a per-exchange timeout (awscfg call_timeout_ms) and an
 *     overall deadline across retries (nw_ec2_retry_t.deadline_ms);
 *   - retries throttling (RequestLimitExceeded, HTTP 429/503 throttles), 5xx
 *     and transport errors with jittered exponential backoff (equal jitter:
 *     half the step fixed, half random), at most max_attempts times;
 *   - reports API errors as NW_EAWS with the EC2 code, message, request id and
 *     class in the nullable nw_ec2_error_t.
 * Describe* calls follow NextToken until the last page.
 *
 * Ownership: nw_ec2_new/nw_ec2_free; the client borrows creds and clock (they
 * must outlive it). Result lists are caller storage (see ec2xml.h).
 * Thread: any; the client has no mutable state besides atomic counters.
 */
#ifndef NW_SCALER_AWS_EC2_H
#define NW_SCALER_AWS_EC2_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/err.h"
#include "scaler/aws/awscfg.h"
#include "scaler/aws/creds.h"
#include "scaler/aws/ec2xml.h"

typedef enum {
    NW_EC2_OK = 0,
    NW_EC2_THROTTLE,  /* RequestLimitExceeded and friends: retried */
    NW_EC2_CAPACITY,  /* InsufficientInstanceCapacity, quotas, free addresses: ICE */
    NW_EC2_AUTH,      /* UnauthorizedOperation, AuthFailure, AccessDenied */
    NW_EC2_NOTFOUND,  /* *.NotFound: the thing is gone */
    NW_EC2_INVALID,   /* InvalidParameterValue, MissingParameter, ... */
    NW_EC2_DRYRUN_OK, /* DryRunOperation: the call would have succeeded */
    NW_EC2_SERVER,    /* InternalError, 5xx: retried */
    NW_EC2_TRANSPORT, /* no HTTP response (connect error, timeout): retried */
    NW_EC2_OTHER,
} nw_ec2_class_t;

typedef struct {
    nw_ec2_class_t cls;
    long status;
    char code[128];
    char message[512];
    char request_id[96];
    int attempts; /* HTTP exchanges made for this call */
} nw_ec2_error_t;

typedef struct {
    int max_attempts; /* default 5 */
    long base_ms;     /* first backoff step, default 200 */
    long max_ms;      /* cap of one step, default 20000 */
    long deadline_ms; /* whole call incl. retries, default 60000 */
} nw_ec2_retry_t;

typedef struct nw_ec2 nw_ec2_t;

/** Class of an EC2 error code (status used for codes the table does not know). */
nw_ec2_class_t nw_ec2_classify(const char *code, const char *message, long status);

/** True when an authorization error says iam:PassRole was refused (the role
 * nodewarden runs as may not hand the node role to instances). */
bool nw_ec2_error_is_passrole(const nw_ec2_error_t *ae);

/** Name of a class: "throttling", "capacity", "auth", "not-found", ... */
const char *nw_ec2_class_name(nw_ec2_class_t c);

NW_MUST_USE nw_rc_t nw_ec2_new(const nw_awscfg_t *cfg, nw_creds_t *creds, const nw_clock_t *clock,
                               nw_ec2_t **out, nw_err_t *err);
/** The same Query client for another service of the protocol (IAM: scaler/aws/iam.h): its
 * endpoint, SigV4 service name and signing region. */
NW_MUST_USE nw_rc_t nw_ec2_new_service(const nw_awscfg_t *cfg, nw_creds_t *creds,
                                       const nw_clock_t *clock, const char *endpoint,
                                       const char *service, const char *region, nw_ec2_t **out,
                                       nw_err_t *err);
void nw_ec2_free(nw_ec2_t *c);
void nw_ec2_set_retry(nw_ec2_t *c, const nw_ec2_retry_t *r);
/** The retry policy in effect (a copy). */
nw_ec2_retry_t nw_ec2_get_retry(const nw_ec2_t *c);
/** Abandon calls (within about a second, no further retry) while *abort reads non-zero;
 * NULL: never. Borrowed; set before the client is shared between threads. */
void nw_ec2_set_abort(nw_ec2_t *c, const atomic_int *abort);
/** Cap MaxResults of paged Describe calls (0 = the defaults: 100 for instance
 * types, 200 for launch templates, 1000 otherwise). Debugging and tests. */
void nw_ec2_set_max_results(nw_ec2_t *c, int n);
/** HTTP exchanges made so far (every attempt counts). */
long nw_ec2_request_count(const nw_ec2_t *c);
const char *nw_ec2_endpoint(const nw_ec2_t *c);

/* ---- request parameters (form body) ---- */
typedef struct {
    nw_buf_t body;
} nw_ec2_params_t;

/** Start a body "Action=<action>&Version=2016-11-15". */
NW_MUST_USE nw_rc_t nw_ec2_params_init(nw_ec2_params_t *p, const char *action);
/** Start a body "Action=<action>&Version=<version>" (another service's API version). */
NW_MUST_USE nw_rc_t nw_ec2_params_init_version(nw_ec2_params_t *p, const char *action,
                                               const char *version);
void nw_ec2_params_cleanup(nw_ec2_params_t *p);
/** Add key=value (both escaped). */
NW_MUST_USE nw_rc_t nw_ec2_param(nw_ec2_params_t *p, const char *key, const char *value);
/** Add a parameter whose key is printf-formatted ("Filter.%d.Name"). */
NW_MUST_USE nw_rc_t nw_ec2_paramf(nw_ec2_params_t *p, const char *value, const char *keyfmt, ...)
    __attribute__((format(printf, 3, 4)));

typedef struct {
    const char *name; /* "tag:Name", "subnet-id", "instance-state-name" */
    const char *values[16];
    int nvalues;
} nw_ec2_filter_t;

/** Add Filter.N.Name / Filter.N.Value.M for each filter. */
NW_MUST_USE nw_rc_t nw_ec2_params_filters(nw_ec2_params_t *p, const nw_ec2_filter_t *f, int nf);

/** Perform one action (with retries); on HTTP 200 the XML body is in resp. */
NW_MUST_USE nw_rc_t nw_ec2_call(nw_ec2_t *c, const nw_ec2_params_t *p, nw_buf_t *resp,
                                nw_ec2_error_t *ae, nw_err_t *err);

/* ---- actions (all pages) ---- */
NW_MUST_USE nw_rc_t nw_ec2_describe_instance_types(nw_ec2_t *c, const nw_ec2_filter_t *f, int nf,
                                                   nw_ec2_itypes_t *out, nw_ec2_error_t *ae,
                                                   nw_err_t *err);
NW_MUST_USE nw_rc_t nw_ec2_describe_offerings(nw_ec2_t *c, nw_ec2_offerings_t *out,
                                              nw_ec2_error_t *ae, nw_err_t *err);
/** Latest spot prices (StartTime = now) for Linux/UNIX. */
NW_MUST_USE nw_rc_t nw_ec2_describe_spot_prices(nw_ec2_t *c, nw_ec2_spot_prices_t *out,
                                                nw_ec2_error_t *ae, nw_err_t *err);
NW_MUST_USE nw_rc_t nw_ec2_describe_zones(nw_ec2_t *c, nw_ec2_zones_t *out, nw_ec2_error_t *ae,
                                          nw_err_t *err);
NW_MUST_USE nw_rc_t nw_ec2_describe_subnets(nw_ec2_t *c, const nw_ec2_filter_t *f, int nf,
                                            nw_ec2_subnets_t *out, nw_ec2_error_t *ae,
                                            nw_err_t *err);
NW_MUST_USE nw_rc_t nw_ec2_describe_sgs(nw_ec2_t *c, const nw_ec2_filter_t *f, int nf,
                                        nw_ec2_sgs_t *out, nw_ec2_error_t *ae, nw_err_t *err);
/** owners may be NULL/0 (no Owner parameter). */
NW_MUST_USE nw_rc_t nw_ec2_describe_images(nw_ec2_t *c, const nw_ec2_filter_t *f, int nf,
                                           const char *const *owners, int nowners,
                                           nw_ec2_images_t *out, nw_ec2_error_t *ae, nw_err_t *err);
/** By names (LaunchTemplateName.N) or filters; a missing name is NW_ENOTFOUND. */
NW_MUST_USE nw_rc_t nw_ec2_describe_launch_templates(nw_ec2_t *c, const char *const *names,
                                                     int nnames, const nw_ec2_filter_t *f, int nf,
                                                     nw_ec2_lts_t *out, nw_ec2_error_t *ae,
                                                     nw_err_t *err);
/** p holds a complete CreateLaunchTemplate request (see launchtemplate.c). */
/** DescribePlacementGroups of the available group with this id (or, id NULL/"", this
 * name): out gets it, or nothing (NW_OK) when there is none. */
NW_MUST_USE nw_rc_t nw_ec2_describe_placement_group(nw_ec2_t *c, const char *id, const char *name,
                                                    nw_ec2_pgs_t *out, nw_ec2_error_t *ae,
                                                    nw_err_t *err);
/** DescribeCapacityReservations: by id (ids; MaxResults is not sent then) or by filters
 * (all pages, MaxResults 1000). A missing id is NW_ENOTFOUND (out empty). */
NW_MUST_USE nw_rc_t nw_ec2_describe_capacity_reservations(nw_ec2_t *c, const char *const *ids,
                                                          int nids, const nw_ec2_filter_t *f,
                                                          int nf, nw_ec2_crs_t *out,
                                                          nw_ec2_error_t *ae, nw_err_t *err);
NW_MUST_USE nw_rc_t nw_ec2_create_launch_template(nw_ec2_t *c, const nw_ec2_params_t *p,
                                                  nw_ec2_lt_t *out, nw_ec2_error_t *ae,
                                                  nw_err_t *err);
/** Not-found counts as deleted. */
NW_MUST_USE nw_rc_t nw_ec2_delete_launch_template(nw_ec2_t *c, const char *id, nw_ec2_error_t *ae,
                                                  nw_err_t *err);
/** p holds a complete CreateFleet request; per-override errors come back in out. */
NW_MUST_USE nw_rc_t nw_ec2_create_fleet(nw_ec2_t *c, const nw_ec2_params_t *p,
                                        nw_ec2_fleet_result_t *out, nw_ec2_error_t *ae,
                                        nw_err_t *err);
NW_MUST_USE nw_rc_t nw_ec2_run_instances(nw_ec2_t *c, const nw_ec2_params_t *p,
                                         nw_ec2_instances_t *out, nw_ec2_error_t *ae,
                                         nw_err_t *err);
NW_MUST_USE nw_rc_t nw_ec2_create_tags(nw_ec2_t *c, const char *const *ids, int nids,
                                       const nw_ec2_tag_t *tags, int ntags, nw_ec2_error_t *ae,
                                       nw_err_t *err);
/** By ids (may be NULL) and/or filters; paged with MaxResults 1000 when no ids. */
NW_MUST_USE nw_rc_t nw_ec2_describe_instances(nw_ec2_t *c, const char *const *ids, int nids,
                                              const nw_ec2_filter_t *f, int nf,
                                              nw_ec2_instances_t *out, nw_ec2_error_t *ae,
                                              nw_err_t *err);
/** Status checks and scheduled events of running instances matching the filters (all
 * pages, MaxResults 1000). */
NW_MUST_USE nw_rc_t nw_ec2_describe_instance_status(nw_ec2_t *c, const nw_ec2_filter_t *f, int nf,
                                                    nw_ec2_istatuses_t *out, nw_ec2_error_t *ae,
                                                    nw_err_t *err);
/** Idempotent: instances that no longer exist count as terminated. */
NW_MUST_USE nw_rc_t nw_ec2_terminate_instances(nw_ec2_t *c, const char *const *ids, int nids,
                                               nw_ec2_state_changes_t *out, nw_ec2_error_t *ae,
                                               nw_err_t *err);
/** Send p with DryRun=true; returns NW_OK and ae->cls NW_EC2_DRYRUN_OK when
 * allowed, NW_EAWS with ae->cls NW_EC2_AUTH when not. */
NW_MUST_USE nw_rc_t nw_ec2_dry_run(nw_ec2_t *c, nw_ec2_params_t *p, nw_ec2_error_t *ae,
                                   nw_err_t *err);

#endif
