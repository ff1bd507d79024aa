/* scaler/aws/ec2.c — EC2 Query API client; see ec2.h. */
#include "scaler/aws/ec2.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/strs.h"
#include "scaler/aws/awshttp.h"

#define COMP "aws.ec2"
#define EC2_VERSION "2016-11-15"
#define MAX_PAGES 10000

struct nw_ec2 {
    nw_awscfg_t cfg;
    nw_creds_t *creds;
    const nw_clock_t *clock;
    nw_ec2_retry_t retry;
    _Atomic long requests;
    int max_results;
    _Atomic unsigned long long rng;
    const atomic_int *abort; /* nullable: end calls when it reads non-zero */
    char url[520];           /* endpoint + "/" */
    char service[16];        /* SigV4 service: "ec2", "iam" */
    char sign_region[64];
};

/* ---- classification --------------------------------------------------------------- */

static bool ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

nw_ec2_class_t nw_ec2_classify(const char *code, const char *message, long status)
{
    static const char *const throttle[] = {"RequestLimitExceeded",      "Throttling",
                                           "ThrottlingException",       "RequestThrottled",
                                           "RequestThrottledException", "TooManyRequestsException",
                                           "EC2ThrottledException",     "SlowDown",
                                           "PriorRequestNotComplete",   NULL};
    static const char *const capacity[] = {"InsufficientInstanceCapacity",
                                           "UnfulfillableCapacity",
                                           "MaxSpotInstanceCountExceeded",
                                           "VcpuLimitExceeded",
                                           "MaxFleetCountExceeded",
                                           "Unsupported",
                                           "ReservationCapacityExceeded",
                                           "InsufficientFreeAddressesInSubnet",
                                           "InsufficientCapacity",
                                           "InsufficientHostCapacity",
                                           "InstanceLimitExceeded",
                                           "AuthFailure.ServiceLinkedRoleCreationNotPermitted",
                                           NULL};
    static const char *const auth[] = {"UnauthorizedOperation",
                                       "AccessDenied",
                                       "AccessDeniedException",
                                       "AuthFailure",
                                       "InvalidClientTokenId",
                                       "SignatureDoesNotMatch",
                                       "ExpiredToken",
                                       "ExpiredTokenException",
                                       "IncompleteSignature",
                                       "OptInRequired",
                                       "Blocked",
                                       "UnrecognizedClientException",
                                       "InvalidIdentityToken",
                                       NULL};
    static const char *const server[] = {"InternalError", "InternalFailure", "ServiceUnavailable",
                                         "Unavailable",   "ServerInternal",  NULL};
    static const char *const notfound[] = {"ParameterNotFound", "NoSuchEntity", "QueueDoesNotExist",
                                           "AWS.SimpleQueueService.NonExistentQueue", NULL};
    if (!code || !*code) {
        if (status == 429)
            return NW_EC2_THROTTLE;
        if (status >= 500)
            return NW_EC2_SERVER;
        if (status == 401 || status == 403)
            return NW_EC2_AUTH;
        if (status == 404)
            return NW_EC2_NOTFOUND;
        return status == 0 ? NW_EC2_TRANSPORT : NW_EC2_OTHER;
    }
    if (strcmp(code, "DryRunOperation") == 0)
        return NW_EC2_DRYRUN_OK;
    if (nw_strs_in(code, throttle))
        return NW_EC2_THROTTLE;
    if (nw_strs_in(code, capacity))
        return NW_EC2_CAPACITY;
    if (nw_strs_in(code, auth) || strncmp(code, "AuthFailure", 11) == 0)
        return NW_EC2_AUTH;
    if (nw_strs_in(code, server))
        return NW_EC2_SERVER;
    if (nw_strs_in(code, notfound) || ends_with(code, ".NotFound") ||
        ends_with(code, ".NotFoundException") || ends_with(code, "NotFound"))
        return NW_EC2_NOTFOUND;
    if (strcmp(code, "InvalidParameterValue") == 0 && message &&
        strstr(message, "Invalid IAM Instance Profile name"))
        return NW_EC2_NOTFOUND; /* eventual consistency of a new profile */
    if (strncmp(code, "Invalid", 7) == 0 || strcmp(code, "MissingParameter") == 0 ||
        strcmp(code, "UnknownParameter") == 0 || strcmp(code, "ValidationError") == 0 ||
        ends_with(code, ".Malformed") || strcmp(code, "MalformedQueryString") == 0)
        return NW_EC2_INVALID;
    if (status == 429)
        return NW_EC2_THROTTLE;
    if (status >= 500)
        return NW_EC2_SERVER;
    return NW_EC2_OTHER;
}

bool nw_ec2_error_is_passrole(const nw_ec2_error_t *ae)
{
    return ae && ae->cls == NW_EC2_AUTH && strstr(ae->message, "iam:PassRole") != NULL;
}

const char *nw_ec2_class_name(nw_ec2_class_t c)
{
    switch (c) {
    case NW_EC2_OK:
        return "ok";
    case NW_EC2_THROTTLE:
        return "throttling";
    case NW_EC2_CAPACITY:
        return "capacity";
    case NW_EC2_AUTH:
        return "auth";
    case NW_EC2_NOTFOUND:
        return "not-found";
    case NW_EC2_INVALID:
        return "invalid-parameter";
    case NW_EC2_DRYRUN_OK:
        return "dry-run-ok";
    case NW_EC2_SERVER:
        return "server";
    case NW_EC2_TRANSPORT:
        return "transport";
    default:
        return "other";
    }
}

/* ---- client ---------------------------------------------------------------------- */

nw_rc_t nw_ec2_new(const nw_awscfg_t *cfg, nw_creds_t *creds, const nw_clock_t *clock,
                   nw_ec2_t **out, nw_err_t *err)
{
    *out = NULL;
    if (!cfg->ec2[0])
        return nw_err_set(err, NW_EINVAL, "aws.region",
                          "no EC2 endpoint: set aws.region / AWS_REGION or AWS_ENDPOINT_URL_EC2");
    if (!cfg->region[0])
        return nw_err_set(err, NW_EINVAL, "aws.region",
                          "the region is needed to sign requests: set aws.region or AWS_REGION");
    return nw_ec2_new_service(cfg, creds, clock, cfg->ec2, "ec2", cfg->region, out, err);
}

nw_rc_t nw_ec2_new_service(const nw_awscfg_t *cfg, nw_creds_t *creds, const nw_clock_t *clock,
                           const char *endpoint, const char *service, const char *region,
                           nw_ec2_t **out, nw_err_t *err)
{
    *out = NULL;
    nw_ec2_t *c = calloc(1, sizeof *c);
    if (!c)
        return nw_err_set(err, NW_ENOMEM, service, "out of memory");
    c->cfg = *cfg;
    snprintf(c->url, sizeof c->url, "%s/", endpoint);
    snprintf(c->service, sizeof c->service, "%s", service);
    snprintf(c->sign_region, sizeof c->sign_region, "%s", region);
    c->creds = creds;
    c->clock = clock ? clock : nw_clock_system();
    c->retry = (nw_ec2_retry_t){5, 200, 20000, 60000};
    c->rng = (unsigned long long)nw_clock_mono(c->clock) | 1ULL;
    *out = c;
    return NW_OK;
}

void nw_ec2_free(nw_ec2_t *c)
{
    free(c);
}

void nw_ec2_set_retry(nw_ec2_t *c, const nw_ec2_retry_t *r)
{
    c->retry = *r;
    if (c->retry.max_attempts < 1)
        c->retry.max_attempts = 1;
}

nw_ec2_retry_t nw_ec2_get_retry(const nw_ec2_t *c)
{
    return c->retry;
}

void nw_ec2_set_abort(nw_ec2_t *c, const atomic_int *abort)
{
    c->abort = abort;
}

void nw_ec2_set_max_results(nw_ec2_t *c, int n)
{
    c->max_results = n > 0 ? n : 0;
}

long nw_ec2_request_count(const nw_ec2_t *c)
{
    return c->requests;
}

const char *nw_ec2_endpoint(const nw_ec2_t *c)
{
    return c->cfg.ec2;
}

static unsigned long long rnd(nw_ec2_t *c)
{
    unsigned long long x = c->rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    c->rng = x;
    return x;
}

/* ---- params ---------------------------------------------------------------------------- */

nw_rc_t nw_ec2_params_init(nw_ec2_params_t *p, const char *action)
{
    return nw_ec2_params_init_version(p, action, EC2_VERSION);
}

nw_rc_t nw_ec2_params_init_version(nw_ec2_params_t *p, const char *action, const char *version)
{
    nw_buf_init(&p->body, 4 * 1024 * 1024);
    return nw_buf_addf(&p->body, "Action=%s&Version=%s", action, version);
}

void nw_ec2_params_cleanup(nw_ec2_params_t *p)
{
    nw_buf_cleanup(&p->body);
}

nw_rc_t nw_ec2_param(nw_ec2_params_t *p, const char *key, const char *value)
{
    nw_rc_t rc;
    if ((rc = nw_buf_adds(&p->body, "&")) != NW_OK ||
        (rc = nw_awshttp_form_escape(&p->body, key)) != NW_OK ||
        (rc = nw_buf_adds(&p->body, "=")) != NW_OK ||
        (rc = nw_awshttp_form_escape(&p->body, value ? value : "")) != NW_OK)
        return rc;
    return NW_OK;
}

nw_rc_t nw_ec2_paramf(nw_ec2_params_t *p, const char *value, const char *keyfmt, ...)
{
    char key[512];
    va_list ap;
    va_start(ap, keyfmt);
    int n = vsnprintf(key, sizeof key, keyfmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof key)
        return NW_ERANGE;
    return nw_ec2_param(p, key, value);
}

nw_rc_t nw_ec2_params_filters(nw_ec2_params_t *p, const nw_ec2_filter_t *f, int nf)
{
    nw_rc_t rc = NW_OK;
    for (int i = 0; i < nf && rc == NW_OK; i++) {
        rc = nw_ec2_paramf(p, f[i].name, "Filter.%d.Name", i + 1);
        for (int j = 0; j < f[i].nvalues && rc == NW_OK; j++)
            rc = nw_ec2_paramf(p, f[i].values[j], "Filter.%d.Value.%d", i + 1, j + 1);
    }
    return rc;
}

static const char *action_of(const nw_ec2_params_t *p, char *buf, size_t len)
{
    const char *s = nw_buf_str(&p->body) + strlen("Action=");
    size_t l = strcspn(s, "&");
    if (l >= len)
        l = len - 1;
    memcpy(buf, s, l);
    buf[l] = 0;
    return buf;
}

/* ---- the call with retries --------------------------------------------------------------- */

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static bool retryable(nw_ec2_class_t c)
{
    return c == NW_EC2_THROTTLE || c == NW_EC2_SERVER || c == NW_EC2_TRANSPORT;
}

/* An error response: its EC2 error (code, message, request id) into ae, classified. */
static void error_response(nw_ec2_error_t *ae, const nw_awshttp_resp_t *resp)
{
    nw_ec2xml_error_t x;
    nw_err_t ignore = {0};
    if (nw_ec2xml_parse_error(resp->body.data, resp->body.len, &x, &ignore) == NW_OK) {
        snprintf(ae->code, sizeof ae->code, "%s", x.code);
        snprintf(ae->message, sizeof ae->message, "%s", x.message);
        snprintf(ae->request_id, sizeof ae->request_id, "%s", x.request_id);
    } else {
        ae->code[0] = 0;
        snprintf(ae->message, sizeof ae->message, "HTTP %ld without an EC2 error body",
                 resp->status);
    }
    ae->cls = nw_ec2_classify(ae->code, ae->message, resp->status);
}

/* The pause before the retry after the attempt-th call: equal jitter on the exponential
 * step (half of it fixed, half random), at most retry.max_ms. */
static long retry_delay(nw_ec2_t *c, int attempt)
{
    long step = c->retry.base_ms;
    for (int i = 1; i < attempt && step < c->retry.max_ms; i++)
        step *= 2;
    if (step > c->retry.max_ms)
        step = c->retry.max_ms;
    long delay = step / 2 + (long)(rnd(c) % (unsigned long long)(step / 2 + 1));
    return delay;
}

nw_rc_t nw_ec2_call(nw_ec2_t *c, const nw_ec2_params_t *p, nw_buf_t *resp_out, nw_ec2_error_t *ae,
                    nw_err_t *err)
{
    nw_ec2_error_t local;
    char action[64], url[600];
    nw_rc_t rc = NW_EAWS;
    if (!ae)
        ae = &local;
    memset(ae, 0, sizeof *ae);
    action_of(p, action, sizeof action);
    snprintf(url, sizeof url, "%s", c->url);
    int64_t start = nw_clock_mono(c->clock);
    int64_t deadline = start + (int64_t)c->retry.deadline_ms * NW_NS_PER_MS;
    nw_awshttp_resp_t resp;
    nw_awshttp_resp_init(&resp);
    resp.abort = c->abort;
    nw_err_t last = {0};

    for (int attempt = 1; attempt <= c->retry.max_attempts; attempt++) {
        nw_creds_value_t cv;
        nw_err_t e = {0};
        ae->attempts = attempt;
        if ((rc = nw_creds_get(c->creds, &cv, &e)) != NW_OK) {
            ae->cls = NW_EC2_AUTH;
            snprintf(ae->code, sizeof ae->code, "NoCredentials");
            snprintf(ae->message, sizeof ae->message, "%s", e.msg);
            if (err && !err->rc)
                *err = e;
            goto out;
        }
        int64_t now = nw_clock_mono(c->clock);
        long remaining = (long)((deadline - now) / NW_NS_PER_MS);
        long timeout = c->cfg.call_timeout_ms;
        if (remaining < timeout)
            timeout = remaining > 100 ? remaining : 100;
        nw_awshttp_sign_t s = {cv.access_key_id, cv.secret_access_key,
                               cv.session_token, c->sign_region,
                               c->service,       nw_clock_now(c->clock) / NW_NS_PER_SEC};
        c->requests++;
        rc = nw_awshttp_do("POST", url, NULL, "application/x-www-form-urlencoded; charset=utf-8",
                           p->body.data, p->body.len, &s, timeout, &resp, &e);
        nw_creds_value_wipe(&cv);
        ae->status = resp.status;
        if (rc != NW_OK) {
            ae->cls = NW_EC2_TRANSPORT;
            snprintf(ae->code, sizeof ae->code, "%s",
                     rc == NW_ETIMEOUT ? "RequestTimeout" : "ConnectionError");
            snprintf(ae->message, sizeof ae->message, "%s", e.msg);
            last = e;
        } else if (resp.status == 200) {
            ae->cls = NW_EC2_OK;
            ae->code[0] = 0;
            nw_buf_reset(resp_out);
            if (nw_buf_add(resp_out, resp.body.data ? resp.body.data : "", resp.body.len) !=
                NW_OK) {
                rc = nw_err_set(err, NW_ERANGE, action, "%s: response too large", action);
                goto out;
            }
            rc = NW_OK;
            goto out;
        } else {
            error_response(ae, &resp);
            rc = NW_EAWS;
            if (ae->cls == NW_EC2_DRYRUN_OK)
                goto out;
        }
        if (!retryable(ae->cls) || attempt == c->retry.max_attempts ||
            (c->abort && atomic_load(c->abort)))
            break;
        /* equal jitter: half of the exponential step fixed, half random */
        long delay = retry_delay(c, attempt);
        if (nw_clock_mono(c->clock) + (int64_t)delay * NW_NS_PER_MS >= deadline) {
            nw_log_warn(COMP, "retry would pass the deadline", NW_LS("action", action),
                        NW_LS("code", ae->code), NW_LI("attempts", attempt));
            break;
        }
        nw_log_every(5, NW_LOG_WARN, COMP, "retrying", NW_LS("action", action),
                     NW_LS("code", ae->code), NW_LS("class", nw_ec2_class_name(ae->cls)),
                     NW_LI("attempt", attempt), NW_LI("delay_ms", delay));
        sleep_ms(delay);
    }
    if (ae->cls == NW_EC2_TRANSPORT)
        rc = nw_err_set(err, last.rc ? last.rc : NW_EIO, action, "%s: %s (after %d attempts)",
                        action, ae->message, ae->attempts);
    else
        rc = nw_err_set(err, NW_EAWS, action, "%s: %s: %s (%s, HTTP %ld, request %s)", action,
                        ae->code[0] ? ae->code : "error", ae->message, nw_ec2_class_name(ae->cls),
                        ae->status, ae->request_id[0] ? ae->request_id : "-");
out:
    nw_awshttp_resp_cleanup(&resp);
    return rc;
}

#define DESCRIBE_INSTANCES_PAGE 200 /* MaxResults of a cluster-wide DescribeInstances */

/* ---- paging helper ---------------------------------------------------------------------- */

typedef nw_rc_t (*page_fn)(const char *xml, size_t len, void *out, char *next, size_t nextlen,
                           nw_err_t *err);

/* Run the request built by build(p, ctx) for every page. */
static NW_MUST_USE nw_rc_t paged(nw_ec2_t *c, const char *action,
                                 nw_rc_t (*build)(nw_ec2_params_t *, const void *), const void *ctx,
                                 int max_results, page_fn parse, void *out, nw_ec2_error_t *ae,
                                 nw_err_t *err)
{
    char next[4096] = "";
    nw_buf_t body;
    nw_rc_t rc = NW_OK;
    nw_buf_init(&body, NW_AWSHTTP_MAX_BODY);
    if (max_results > 0 && c->max_results > 0 && c->max_results < max_results)
        max_results = c->max_results;
    for (int page = 0; page < MAX_PAGES; page++) {
        nw_ec2_params_t p;
        if ((rc = nw_ec2_params_init(&p, action)) == NW_OK && build)
            rc = build(&p, ctx);
        if (rc == NW_OK && max_results > 0) {
            char mr[16];
            snprintf(mr, sizeof mr, "%d", max_results);
            rc = nw_ec2_param(&p, "MaxResults", mr);
        }
        if (rc == NW_OK && next[0])
            rc = nw_ec2_param(&p, "NextToken", next);
        if (rc != NW_OK) {
            nw_ec2_params_cleanup(&p);
            rc = nw_err_set(err, rc, action, "%s: request too large", action);
            break;
        }
        rc = nw_ec2_call(c, &p, &body, ae, err);
        nw_ec2_params_cleanup(&p);
        if (rc != NW_OK)
            break;
        char prev[4096];
        snprintf(prev, sizeof prev, "%s", next);
        if ((rc = parse(body.data, body.len, out, next, sizeof next, err)) != NW_OK)
            break;
        if (!next[0])
            break;
        if (strcmp(prev, next) == 0) {
            rc = nw_err_set(err, NW_EPARSE, action, "%s: NextToken repeated; stopping", action);
            break;
        }
    }
    nw_buf_cleanup(&body);
    return rc;
}

typedef struct {
    const nw_ec2_filter_t *f;
    int nf;
    const char *const *list;
    int nlist;
    const char *list_key; /* "InstanceId", "Owner", "LaunchTemplateName" */
} filt_ctx_t;

static NW_MUST_USE nw_rc_t build_filters(nw_ec2_params_t *p, const void *vctx)
{
    const filt_ctx_t *x = vctx;
    nw_rc_t rc = nw_ec2_params_filters(p, x->f, x->nf);
    for (int i = 0; rc == NW_OK && i < x->nlist; i++)
        rc = nw_ec2_paramf(p, x->list[i], "%s.%d", x->list_key, i + 1);
    return rc;
}

/* adapters from typed parsers to page_fn */
static NW_MUST_USE nw_rc_t pg_itypes(const char *x, size_t l, void *o, char *n, size_t nl,
                                     nw_err_t *e)
{
    return nw_ec2xml_parse_instance_types(x, l, o, n, nl, e);
}
static NW_MUST_USE nw_rc_t pg_offerings(const char *x, size_t l, void *o, char *n, size_t nl,
                                        nw_err_t *e)
{
    return nw_ec2xml_parse_offerings(x, l, o, n, nl, e);
}
static NW_MUST_USE nw_rc_t pg_spot(const char *x, size_t l, void *o, char *n, size_t nl,
                                   nw_err_t *e)
{
    return nw_ec2xml_parse_spot_prices(x, l, o, n, nl, e);
}
static NW_MUST_USE nw_rc_t pg_subnets(const char *x, size_t l, void *o, char *n, size_t nl,
                                      nw_err_t *e)
{
    return nw_ec2xml_parse_subnets(x, l, o, n, nl, e);
}
static NW_MUST_USE nw_rc_t pg_sgs(const char *x, size_t l, void *o, char *n, size_t nl, nw_err_t *e)
{
    return nw_ec2xml_parse_sgs(x, l, o, n, nl, e);
}
static NW_MUST_USE nw_rc_t pg_images(const char *x, size_t l, void *o, char *n, size_t nl,
                                     nw_err_t *e)
{
    return nw_ec2xml_parse_images(x, l, o, n, nl, e);
}
static NW_MUST_USE nw_rc_t pg_lts(const char *x, size_t l, void *o, char *n, size_t nl, nw_err_t *e)
{
    return nw_ec2xml_parse_launch_templates(x, l, o, n, nl, e);
}
static NW_MUST_USE nw_rc_t pg_instances(const char *x, size_t l, void *o, char *n, size_t nl,
                                        nw_err_t *e)
{
    return nw_ec2xml_parse_instances(x, l, o, n, nl, e);
}

static NW_MUST_USE nw_rc_t pg_crs(const char *x, size_t l, void *o, char *n, size_t nl, nw_err_t *e)
{
    return nw_ec2xml_parse_capacity_reservations(x, l, o, n, nl, e);
}

/* ---- actions ---------------------------------------------------------------------------- */

nw_rc_t nw_ec2_describe_instance_types(nw_ec2_t *c, const nw_ec2_filter_t *f, int nf,
                                       nw_ec2_itypes_t *out, nw_ec2_error_t *ae, nw_err_t *err)
{
    filt_ctx_t x = {f, nf, NULL, 0, NULL};
    return paged(c, "DescribeInstanceTypes", build_filters, &x, 100, pg_itypes, out, ae, err);
}

static NW_MUST_USE nw_rc_t build_offerings(nw_ec2_params_t *p, const void *ctx)
{
    (void)ctx;
    return nw_ec2_param(p, "LocationType", "availability-zone");
}

nw_rc_t nw_ec2_describe_offerings(nw_ec2_t *c, nw_ec2_offerings_t *out, nw_ec2_error_t *ae,
                                  nw_err_t *err)
{
    return paged(c, "DescribeInstanceTypeOfferings", build_offerings, NULL, 1000, pg_offerings, out,
                 ae, err);
}

static NW_MUST_USE nw_rc_t build_spot(nw_ec2_params_t *p, const void *ctx)
{
    const char *start = ctx;
    nw_rc_t rc = nw_ec2_param(p, "ProductDescription.1", "Linux/UNIX");
    if (rc == NW_OK)
        rc = nw_ec2_param(p, "ProductDescription.2", "Linux/UNIX (Amazon VPC)");
    if (rc == NW_OK)
        rc = nw_ec2_param(p, "StartTime", start);
    return rc;
}

nw_rc_t nw_ec2_describe_spot_prices(nw_ec2_t *c, nw_ec2_spot_prices_t *out, nw_ec2_error_t *ae,
                                    nw_err_t *err)
{
    char start[32];
    nw_clock_time_format(nw_clock_now(c->clock), start, sizeof start);
    return paged(c, "DescribeSpotPriceHistory", build_spot, start, 1000, pg_spot, out, ae, err);
}

nw_rc_t nw_ec2_describe_zones(nw_ec2_t *c, nw_ec2_zones_t *out, nw_ec2_error_t *ae, nw_err_t *err)
{
    nw_ec2_params_t p;
    nw_buf_t body;
    nw_rc_t rc = nw_ec2_params_init(&p, "DescribeAvailabilityZones");
    nw_buf_init(&body, NW_AWSHTTP_MAX_BODY);
    if (rc == NW_OK)
        rc = nw_ec2_call(c, &p, &body, ae, err);
    if (rc == NW_OK)
        rc = nw_ec2xml_parse_zones(body.data, body.len, out, err);
    nw_ec2_params_cleanup(&p);
    nw_buf_cleanup(&body);
    return rc;
}

nw_rc_t nw_ec2_describe_subnets(nw_ec2_t *c, const nw_ec2_filter_t *f, int nf,
                                nw_ec2_subnets_t *out, nw_ec2_error_t *ae, nw_err_t *err)
{
    filt_ctx_t x = {f, nf, NULL, 0, NULL};
    return paged(c, "DescribeSubnets", build_filters, &x, 1000, pg_subnets, out, ae, err);
}

nw_rc_t nw_ec2_describe_sgs(nw_ec2_t *c, const nw_ec2_filter_t *f, int nf, nw_ec2_sgs_t *out,
                            nw_ec2_error_t *ae, nw_err_t *err)
{
    filt_ctx_t x = {f, nf, NULL, 0, NULL};
    return paged(c, "DescribeSecurityGroups", build_filters, &x, 1000, pg_sgs, out, ae, err);
}

nw_rc_t nw_ec2_describe_images(nw_ec2_t *c, const nw_ec2_filter_t *f, int nf,
                               const char *const *owners, int nowners, nw_ec2_images_t *out,
                               nw_ec2_error_t *ae, nw_err_t *err)
{
    filt_ctx_t x = {f, nf, owners, nowners, "Owner"};
    return paged(c, "DescribeImages", build_filters, &x, 1000, pg_images, out, ae, err);
}

nw_rc_t nw_ec2_describe_launch_templates(nw_ec2_t *c, const char *const *names, int nnames,
                                         const nw_ec2_filter_t *f, int nf, nw_ec2_lts_t *out,
                                         nw_ec2_error_t *ae, nw_err_t *err)
{
    nw_ec2_error_t local;
    if (!ae)
        ae = &local;
    filt_ctx_t x = {f, nf, names, nnames, "LaunchTemplateName"};
    nw_rc_t rc = paged(c, "DescribeLaunchTemplates", build_filters, &x, nnames ? 0 : 200, pg_lts,
                       out, ae, err);
    if (rc == NW_EAWS && ae->cls == NW_EC2_NOTFOUND) {
        if (err)
            err->rc = NW_ENOTFOUND;
        return NW_ENOTFOUND;
    }
    return rc;
}

nw_rc_t nw_ec2_describe_capacity_reservations(nw_ec2_t *c, const char *const *ids, int nids,
                                              const nw_ec2_filter_t *f, int nf, nw_ec2_crs_t *out,
                                              nw_ec2_error_t *ae, nw_err_t *err)
{
    nw_ec2_error_t local = {0};
    if (!ae)
        ae = &local;
    filt_ctx_t x = {f, nf, ids, nids, "CapacityReservationId"};
    nw_rc_t rc = paged(c, "DescribeCapacityReservations", build_filters, &x, nids ? 0 : 1000,
                       pg_crs, out, ae, err);
    if (rc == NW_EAWS && ae->cls == NW_EC2_NOTFOUND) {
        if (err)
            err->rc = NW_ENOTFOUND;
        return NW_ENOTFOUND;
    }
    return rc;
}

nw_rc_t nw_ec2_describe_placement_group(nw_ec2_t *c, const char *id, const char *name,
                                        nw_ec2_pgs_t *out, nw_ec2_error_t *ae, nw_err_t *err)
{
    nw_ec2_error_t local = {0};
    if (!ae)
        ae = &local;
    nw_ec2_params_t p;
    nw_buf_t body;
    nw_rc_t rc = nw_ec2_params_init(&p, "DescribePlacementGroups");
    if (rc == NW_OK)
        rc = id && *id ? nw_ec2_param(&p, "GroupId.1", id) : nw_ec2_param(&p, "GroupName.1", name);
    if (rc == NW_OK)
        rc = nw_ec2_param(&p, "Filter.1.Name", "state");
    if (rc == NW_OK)
        rc = nw_ec2_param(&p, "Filter.1.Value.1", "available");
    nw_buf_init(&body, NW_AWSHTTP_MAX_BODY);
    if (rc == NW_OK)
        rc = nw_ec2_call(c, &p, &body, ae, err);
    if (rc == NW_OK)
        rc = nw_ec2xml_parse_placement_groups(body.data, body.len, out, err);
    /* an unknown group is an error to EC2 (InvalidPlacementGroup.Unknown, ...Id.NotFound):
     * here it is no group */
    if (rc == NW_EAWS && (ae->cls == NW_EC2_NOTFOUND || strstr(ae->code, "InvalidPlacementGroup")))
        rc = NW_OK;
    nw_buf_cleanup(&body);
    nw_ec2_params_cleanup(&p);
    return rc;
}

nw_rc_t nw_ec2_create_launch_template(nw_ec2_t *c, const nw_ec2_params_t *p, nw_ec2_lt_t *out,
                                      nw_ec2_error_t *ae, nw_err_t *err)
{
    nw_buf_t body;
    nw_ec2_lts_t l = {0};
    nw_buf_init(&body, NW_AWSHTTP_MAX_BODY);
    nw_rc_t rc = nw_ec2_call(c, p, &body, ae, err);
    if (rc == NW_OK)
        rc = nw_ec2xml_parse_launch_templates(body.data, body.len, &l, NULL, 0, err);
    if (rc == NW_OK)
        *out = l.v[0];
    nw_ec2xml_lts_free(&l);
    nw_buf_cleanup(&body);
    return rc;
}

nw_rc_t nw_ec2_delete_launch_template(nw_ec2_t *c, const char *id, nw_ec2_error_t *ae,
                                      nw_err_t *err)
{
    nw_ec2_params_t p;
    nw_buf_t body;
    nw_ec2_error_t local;
    if (!ae)
        ae = &local;
    nw_buf_init(&body, 1 << 20);
    nw_rc_t rc = nw_ec2_params_init(&p, "DeleteLaunchTemplate");
    if (rc == NW_OK)
        rc = nw_ec2_param(&p, "LaunchTemplateId", id);
    nw_err_t e = {0};
    if (rc == NW_OK)
        rc = nw_ec2_call(c, &p, &body, ae, &e);
    if (rc == NW_EAWS && ae->cls == NW_EC2_NOTFOUND)
        rc = NW_OK;
    else if (rc != NW_OK && err && !err->rc)
        *err = e;
    nw_ec2_params_cleanup(&p);
    nw_buf_cleanup(&body);
    return rc;
}

nw_rc_t nw_ec2_create_fleet(nw_ec2_t *c, const nw_ec2_params_t *p, nw_ec2_fleet_result_t *out,
                            nw_ec2_error_t *ae, nw_err_t *err)
{
    nw_buf_t body;
    nw_buf_init(&body, NW_AWSHTTP_MAX_BODY);
    nw_rc_t rc = nw_ec2_call(c, p, &body, ae, err);
    if (rc == NW_OK)
        rc = nw_ec2xml_parse_fleet(body.data, body.len, out, err);
    nw_buf_cleanup(&body);
    return rc;
}

nw_rc_t nw_ec2_run_instances(nw_ec2_t *c, const nw_ec2_params_t *p, nw_ec2_instances_t *out,
                             nw_ec2_error_t *ae, nw_err_t *err)
{
    nw_buf_t body;
    nw_buf_init(&body, NW_AWSHTTP_MAX_BODY);
    nw_rc_t rc = nw_ec2_call(c, p, &body, ae, err);
    if (rc == NW_OK)
        rc = nw_ec2xml_parse_instances(body.data, body.len, out, NULL, 0, err);
    nw_buf_cleanup(&body);
    return rc;
}

nw_rc_t nw_ec2_create_tags(nw_ec2_t *c, const char *const *ids, int nids, const nw_ec2_tag_t *tags,
                           int ntags, nw_ec2_error_t *ae, nw_err_t *err)
{
    nw_ec2_params_t p;
    nw_buf_t body;
    nw_buf_init(&body, 1 << 20);
    nw_rc_t rc = nw_ec2_params_init(&p, "CreateTags");
    for (int i = 0; rc == NW_OK && i < nids; i++)
        rc = nw_ec2_paramf(&p, ids[i], "ResourceId.%d", i + 1);
    for (int i = 0; rc == NW_OK && i < ntags; i++) {
        rc = nw_ec2_paramf(&p, tags[i].key, "Tag.%d.Key", i + 1);
        if (rc == NW_OK)
            rc = nw_ec2_paramf(&p, tags[i].value, "Tag.%d.Value", i + 1);
    }
    if (rc == NW_OK)
        rc = nw_ec2_call(c, &p, &body, ae, err);
    if (rc == NW_OK)
        rc = nw_ec2xml_expect_root(body.data, body.len, "CreateTagsResponse", err);
    nw_ec2_params_cleanup(&p);
    nw_buf_cleanup(&body);
    return rc;
}

static NW_MUST_USE nw_rc_t pg_istatus(const char *x, size_t l, void *o, char *n, size_t nl,
                                      nw_err_t *e)
{
    return nw_ec2xml_parse_instance_status(x, l, o, n, nl, e);
}

nw_rc_t nw_ec2_describe_instance_status(nw_ec2_t *c, const nw_ec2_filter_t *f, int nf,
                                        nw_ec2_istatuses_t *out, nw_ec2_error_t *ae, nw_err_t *err)
{
    filt_ctx_t x = {f, nf, NULL, 0, "InstanceId"};
    return paged(c, "DescribeInstanceStatus", build_filters, &x, 1000, pg_istatus, out, ae, err);
}

nw_rc_t nw_ec2_describe_instances(nw_ec2_t *c, const char *const *ids, int nids,
                                  const nw_ec2_filter_t *f, int nf, nw_ec2_instances_t *out,
                                  nw_ec2_error_t *ae, nw_err_t *err)
{
    filt_ctx_t x = {f, nf, ids, nids, "InstanceId"};
    /* pages of 200: a page is about 10 KB of XML an instance, read whole before it is
     * parsed, so pages of EC2's largest (1,000) held 4 MB for 358 instances, and 10 MB
     * from 1,000 on, while the cluster's list was made (garbage collection and drift each
     * make one, at once during a scale-out) */
    return paged(c, "DescribeInstances", build_filters, &x, nids ? 0 : DESCRIBE_INSTANCES_PAGE,
                 pg_instances, out, ae, err);
}

static nw_ec2_state_change_t *push_state(nw_ec2_state_changes_t *l)
{
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 8;
        nw_ec2_state_change_t *nv = realloc(l->v, nc * sizeof *nv);
        if (!nv)
            return NULL;
        l->v = nv;
        l->cap = nc;
    }
    nw_ec2_state_change_t *s = &l->v[l->n++];
    memset(s, 0, sizeof *s);
    return s;
}

static NW_MUST_USE nw_rc_t terminate_batch(nw_ec2_t *c, const char *const *ids, int nids,
                                           nw_ec2_state_changes_t *out, nw_ec2_error_t *ae,
                                           nw_err_t *err)
{
    nw_ec2_params_t p;
    nw_buf_t body;
    nw_buf_init(&body, NW_AWSHTTP_MAX_BODY);
    nw_rc_t rc = nw_ec2_params_init(&p, "TerminateInstances");
    for (int i = 0; rc == NW_OK && i < nids; i++)
        rc = nw_ec2_paramf(&p, ids[i], "InstanceId.%d", i + 1);
    if (rc == NW_OK)
        rc = nw_ec2_call(c, &p, &body, ae, err);
    if (rc == NW_OK)
        rc = nw_ec2xml_parse_terminate(body.data, body.len, out, err);
    nw_ec2_params_cleanup(&p);
    nw_buf_cleanup(&body);
    return rc;
}

nw_rc_t nw_ec2_terminate_instances(nw_ec2_t *c, const char *const *ids, int nids,
                                   nw_ec2_state_changes_t *out, nw_ec2_error_t *ae, nw_err_t *err)
{
    nw_ec2_error_t local;
    nw_err_t e = {0};
    if (!ae)
        ae = &local;
    if (nids == 0)
        return NW_OK;
    nw_rc_t rc = terminate_batch(c, ids, nids, out, ae, &e);
    if (rc == NW_EAWS && ae->cls == NW_EC2_NOTFOUND) {
        /* EC2 rejects the whole batch when one id is unknown: retry one by one
         * and count the unknown ones as terminated. */
        rc = NW_OK;
        for (int i = 0; i < nids && rc == NW_OK; i++) {
            nw_err_t e1 = {0};
            rc = nids == 1 ? NW_EAWS : terminate_batch(c, &ids[i], 1, out, ae, &e1);
            if (rc == NW_EAWS && ae->cls == NW_EC2_NOTFOUND) {
                nw_ec2_state_change_t *s = push_state(out);
                if (!s)
                    return nw_err_set(err, NW_ENOMEM, "TerminateInstances", "out of memory");
                snprintf(s->id, sizeof s->id, "%s", ids[i]);
                snprintf(s->current, sizeof s->current, "terminated");
                snprintf(s->previous, sizeof s->previous, "unknown");
                rc = NW_OK;
                ae->cls = NW_EC2_OK;
            } else if (rc != NW_OK && err && !err->rc) {
                *err = e1;
            }
        }
        return rc;
    }
    if (rc != NW_OK && err && !err->rc)
        *err = e;
    return rc;
}

nw_rc_t nw_ec2_dry_run(nw_ec2_t *c, nw_ec2_params_t *p, nw_ec2_error_t *ae, nw_err_t *err)
{
    nw_ec2_error_t local;
    nw_buf_t body;
    if (!ae)
        ae = &local;
    nw_buf_init(&body, 1 << 20);
    nw_rc_t rc = nw_ec2_param(p, "DryRun", "true");
    nw_err_t e = {0};
    if (rc == NW_OK)
        rc = nw_ec2_call(c, p, &body, ae, &e);
    nw_buf_cleanup(&body);
    if (rc == NW_EAWS && ae->cls == NW_EC2_DRYRUN_OK)
        return NW_OK;
    if (rc == NW_OK) /* a dry run that really ran: the endpoint ignored DryRun */
        return nw_err_set(err, NW_EAWS, "DryRun", "the endpoint ignored DryRun=true");
    if (err && !err->rc)
        *err = e;
    return rc;
}
