/* scaler/aws/sqs.c — SQS (AWS JSON 1.0) for the interruption queue; see sqs.h. */
#include "common/json.h"
#include "scaler/aws/sqs.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "scaler/aws/awshttp.h"

struct nw_sqs {
    nw_awscfg_t cfg;
    nw_creds_t *creds;
    const nw_clock_t *clock;
    char queue[512]; /* as configured */
    char url[1024];  /* resolved queue URL ("" until known) */
    const atomic_int *abort;
    long requests;
};

static const struct {
    const char *code;
    nw_sqs_class_t cls;
} codes[] = {
    {"ThrottlingException", NW_SQS_THROTTLE},
    {"RequestThrottled", NW_SQS_THROTTLE},
    {"OverLimit", NW_SQS_THROTTLE},
    {"KmsThrottled", NW_SQS_THROTTLE},
    {"AccessDenied", NW_SQS_AUTH},
    {"AccessDeniedException", NW_SQS_AUTH},
    {"InvalidClientTokenId", NW_SQS_AUTH},
    {"UnrecognizedClientException", NW_SQS_AUTH},
    {"SignatureDoesNotMatch", NW_SQS_AUTH},
    {"IncompleteSignature", NW_SQS_AUTH},
    {"MissingAuthenticationToken", NW_SQS_AUTH},
    {"ExpiredToken", NW_SQS_AUTH},
    {"InvalidSecurity", NW_SQS_AUTH},
    {"KmsAccessDenied", NW_SQS_AUTH},
    {"QueueDoesNotExist", NW_SQS_NOTFOUND},
    {"AWS.SimpleQueueService.NonExistentQueue", NW_SQS_NOTFOUND},
    {"InvalidParameterValue", NW_SQS_INVALID},
    {"MissingParameter", NW_SQS_INVALID},
    {"ReceiptHandleIsInvalid", NW_SQS_INVALID},
    {"InvalidAddress", NW_SQS_INVALID},
    {"InvalidAttributeName", NW_SQS_INVALID},
    {"SerializationException", NW_SQS_INVALID},
    {"UnsupportedOperation", NW_SQS_INVALID},
    {"InvalidAction", NW_SQS_INVALID},
    {"InternalError", NW_SQS_SERVER},
    {"InternalFailure", NW_SQS_SERVER},
    {"ServiceUnavailable", NW_SQS_SERVER},
};

nw_sqs_class_t nw_sqs_classify(const char *code, long status)
{
    if (code && *code)
        for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
            if (strcmp(codes[i].code, code) == 0)
                return codes[i].cls;
    if (status >= 500)
        return NW_SQS_SERVER;
    if (status == 429)
        return NW_SQS_THROTTLE;
    if (status == 401 || status == 403)
        return NW_SQS_AUTH;
    if (status == 404)
        return NW_SQS_NOTFOUND;
    return NW_SQS_OTHER;
}

const char *nw_sqs_class_name(nw_sqs_class_t c)
{
    switch (c) {
    case NW_SQS_OK:
        return "ok";
    case NW_SQS_THROTTLE:
        return "throttling";
    case NW_SQS_AUTH:
        return "auth";
    case NW_SQS_NOTFOUND:
        return "not-found";
    case NW_SQS_INVALID:
        return "invalid";
    case NW_SQS_SERVER:
        return "server";
    case NW_SQS_TRANSPORT:
        return "transport";
    default:
        return "other";
    }
}

/* ---- parsers ---- */

static cJSON *parse_obj(const char *json, size_t len, const char *what, nw_err_t *err)
{
    const char *end = NULL;
    if (!json || len == 0) {
        nw_err_set(err, NW_EPARSE, "", "%s: empty body", what);
        return NULL;
    }
    cJSON *root = cJSON_ParseWithLengthOpts(json, len, &end, 0);
    if (!root) {
        nw_err_set(err, NW_EPARSE, "", "%s: not valid JSON", what);
        return NULL;
    }
    /* only whitespace may follow the value */
    for (const char *p = end; p && p < json + len; p++)
        if (*p != ' ' && *p != '\n' && *p != '\r' && *p != '\t') {
            cJSON_Delete(root);
            nw_err_set(err, NW_EPARSE, "", "%s: trailing data after the JSON value", what);
            return NULL;
        }
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        nw_err_set(err, NW_EPARSE, "", "%s: not a JSON object", what);
        return NULL;
    }
    return root;
}

void nw_sqs_msgs_free(nw_sqs_msgs_t *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n; i++) {
        free(m->v[i].receipt);
        free(m->v[i].body);
    }
    memset(m, 0, sizeof *m);
}

nw_rc_t nw_sqs_parse_receive(const char *json, size_t len, nw_sqs_msgs_t *out, nw_err_t *err)
{
    memset(out, 0, sizeof *out);
    cJSON *root = parse_obj(json, len, "ReceiveMessage response", err);
    if (!root)
        return NW_EPARSE;
    nw_rc_t rc = NW_OK;
    char path[64];
    const cJSON *msgs = nw_json_get(root, "Messages");
    if (!msgs || cJSON_IsNull(msgs))
        goto out;
    if (!cJSON_IsArray(msgs)) {
        rc = nw_err_set(err, NW_EPARSE, "Messages", "Messages: must be an array");
        goto out;
    }
    if (cJSON_GetArraySize(msgs) > NW_SQS_MAX_MESSAGES) {
        rc = nw_err_set(err, NW_EPARSE, "Messages", "Messages: %d messages, at most %d expected",
                        cJSON_GetArraySize(msgs), NW_SQS_MAX_MESSAGES);
        goto out;
    }
    const cJSON *m;
    int i = 0;
    cJSON_ArrayForEach(m, msgs)
    {
        const char *field = NULL, *why = NULL;
        const cJSON *id = nw_json_get(m, "MessageId"), *rh = nw_json_get(m, "ReceiptHandle"),
                    *body = nw_json_get(m, "Body");
        if (!cJSON_IsObject(m))
            why = "must be an object";
        else if (!cJSON_IsString(id) || !*id->valuestring)
            field = "MessageId", why = "must be a non-empty string";
        else if (strlen(id->valuestring) >= sizeof out->v[0].id)
            field = "MessageId", why = "too long";
        else if (!cJSON_IsString(rh) || !*rh->valuestring)
            field = "ReceiptHandle", why = "must be a non-empty string";
        else if (strlen(rh->valuestring) >= NW_SQS_MAX_RECEIPT)
            field = "ReceiptHandle", why = "too long";
        else if (!cJSON_IsString(body))
            field = "Body", why = "must be a string";
        else if (strlen(body->valuestring) > NW_SQS_MAX_BODY)
            field = "Body", why = "longer than 256 KiB";
        if (why) {
            snprintf(path, sizeof path, "Messages[%d]%s%s", i, field ? "." : "",
                     field ? field : "");
            rc = nw_err_set(err, NW_EPARSE, path, "%s: %s", path, why);
            goto out;
        }
        nw_sqs_msg_t *d = &out->v[out->n];
        snprintf(d->id, sizeof d->id, "%s", id->valuestring);
        d->receipt = strdup(rh->valuestring);
        d->body_len = strlen(body->valuestring);
        d->body = strdup(body->valuestring);
        out->n++;
        if (!d->receipt || !d->body) {
            rc = nw_err_set(err, NW_ENOMEM, "Messages", "out of memory");
            goto out;
        }
        i++;
    }
out:
    cJSON_Delete(root);
    if (rc != NW_OK)
        nw_sqs_msgs_free(out);
    return rc;
}

nw_rc_t nw_sqs_parse_queue_url(const char *json, size_t len, char *url, size_t urllen,
                               nw_err_t *err)
{
    url[0] = 0;
    cJSON *root = parse_obj(json, len, "GetQueueUrl response", err);
    if (!root)
        return NW_EPARSE;
    nw_rc_t rc = NW_OK;
    const cJSON *u = nw_json_get(root, "QueueUrl");
    if (!cJSON_IsString(u) || !*u->valuestring)
        rc = nw_err_set(err, NW_EPARSE, "QueueUrl", "QueueUrl: must be a non-empty string");
    else if (strncmp(u->valuestring, "http://", 7) != 0 &&
             strncmp(u->valuestring, "https://", 8) != 0)
        rc = nw_err_set(err, NW_EPARSE, "QueueUrl", "QueueUrl: not an http(s) URL");
    else if (strlen(u->valuestring) >= urllen)
        rc = nw_err_set(err, NW_EPARSE, "QueueUrl", "QueueUrl: too long");
    else
        snprintf(url, urllen, "%s", u->valuestring);
    cJSON_Delete(root);
    return rc;
}

void nw_sqs_parse_error(const char *json, size_t len, long status, nw_sqs_error_t *ae)
{
    memset(ae, 0, sizeof *ae);
    ae->status = status;
    cJSON *root = parse_obj(json, len, "error", NULL);
    const char *type = root ? nw_json_str(root, "__type") : NULL;
    if (!type && root)
        type = nw_json_str(root, "code");
    const char *msg = root ? nw_json_str(root, "message") : NULL;
    if (!msg && root)
        msg = nw_json_str(root, "Message");
    if (type && *type) {
        const char *h = strrchr(type, '#');
        snprintf(ae->code, sizeof ae->code, "%s", h ? h + 1 : type);
        /* some services append ":" and a URL to the type */
        char *colon = strchr(ae->code, ':');
        if (colon)
            *colon = 0;
    }
    if (!ae->code[0])
        snprintf(ae->code, sizeof ae->code, "HTTP%ld", status);
    snprintf(ae->message, sizeof ae->message, "%s", msg ? msg : "");
    ae->cls = nw_sqs_classify(ae->code, status);
    cJSON_Delete(root);
}

/* ---- client ---- */

nw_rc_t nw_sqs_new(const nw_awscfg_t *cfg, nw_creds_t *creds, const nw_clock_t *clock,
                   const char *queue, nw_sqs_t **out, nw_err_t *err)
{
    *out = NULL;
    if (!queue || !*queue)
        return nw_err_set(err, NW_EINVAL, "settings.interruptionQueue", "no queue given");
    if (strlen(queue) >= sizeof((nw_sqs_t *)0)->queue)
        return nw_err_set(err, NW_EINVAL, "settings.interruptionQueue", "queue name too long");
    if (!cfg->sqs[0])
        return nw_err_set(err, NW_EINVAL, "aws.endpoints.sqs",
                          "no SQS endpoint (the region is not known)");
    nw_sqs_t *q = calloc(1, sizeof *q);
    if (!q)
        return nw_err_set(err, NW_ENOMEM, "sqs", "out of memory");
    q->cfg = *cfg;
    q->creds = creds;
    q->clock = clock ? clock : nw_clock_system();
    snprintf(q->queue, sizeof q->queue, "%s", queue);
    if (strncmp(queue, "http://", 7) == 0 || strncmp(queue, "https://", 8) == 0)
        snprintf(q->url, sizeof q->url, "%s", queue);
    *out = q;
    return NW_OK;
}

void nw_sqs_free(nw_sqs_t *q)
{
    free(q);
}

void nw_sqs_set_abort(nw_sqs_t *q, const atomic_int *flag)
{
    q->abort = flag;
}

long nw_sqs_request_count(const nw_sqs_t *q)
{
    return q->requests;
}

static bool given_as_url(const nw_sqs_t *q)
{
    return strncmp(q->queue, "http://", 7) == 0 || strncmp(q->queue, "https://", 8) == 0;
}

/* One signed JSON 1.0 exchange. On HTTP 200 the body is in resp. */
static NW_MUST_USE nw_rc_t call(nw_sqs_t *q, const char *action, const char *body, long timeout_ms,
                                nw_buf_t *resp_out, nw_sqs_error_t *ae, nw_err_t *err)
{
    nw_sqs_error_t dummy;
    if (!ae)
        ae = &dummy;
    memset(ae, 0, sizeof *ae);
    nw_creds_value_t cv;
    nw_err_t e = {0};
    if (nw_creds_get(q->creds, &cv, &e) != NW_OK) {
        ae->cls = NW_SQS_AUTH;
        snprintf(ae->code, sizeof ae->code, "NoCredentials");
        snprintf(ae->message, sizeof ae->message, "%s", e.msg);
        return nw_err_set(err, NW_EAWS, "sqs", "%s: no credentials: %s", action, e.msg);
    }
    char target[96];
    snprintf(target, sizeof target, "X-Amz-Target: AmazonSQS.%s", action);
    const char *hdrs[] = {target, NULL};
    nw_awshttp_resp_t resp;
    nw_awshttp_resp_init(&resp);
    resp.abort = q->abort;
    nw_awshttp_sign_t s = {cv.access_key_id,
                           cv.secret_access_key,
                           cv.session_token,
                           q->cfg.region,
                           "sqs",
                           nw_clock_now(q->clock) / NW_NS_PER_SEC};
    q->requests++;
    nw_rc_t rc = nw_awshttp_do("POST", q->cfg.sqs, hdrs, "application/x-amz-json-1.0", body,
                               strlen(body), &s, timeout_ms, &resp, &e);
    nw_creds_value_wipe(&cv);
    ae->status = resp.status;
    if (rc != NW_OK) {
        ae->cls = NW_SQS_TRANSPORT;
        snprintf(ae->code, sizeof ae->code, "%s",
                 rc == NW_ETIMEOUT ? "RequestTimeout" : "ConnectionError");
        snprintf(ae->message, sizeof ae->message, "%s", e.msg);
        rc = nw_err_set(err, rc, "sqs", "%s: %s", action, e.msg);
    } else if (resp.status == 200) {
        nw_buf_reset(resp_out);
        rc = nw_buf_add(resp_out, resp.body.data ? resp.body.data : "", resp.body.len);
        if (rc != NW_OK)
            rc = nw_err_set(err, rc, "sqs", "%s: response too large", action);
    } else {
        nw_sqs_parse_error(resp.body.data, resp.body.len, resp.status, ae);
        rc = nw_err_set(err, NW_EAWS, "sqs", "%s: %ld %s: %s", action, resp.status, ae->code,
                        ae->message);
    }
    nw_awshttp_resp_cleanup(&resp);
    return rc;
}

static long timeout_for(const nw_sqs_t *q, int wait_s)
{
    long t = q->cfg.call_timeout_ms > 0 ? q->cfg.call_timeout_ms : 10000;
    return t + (long)wait_s * 1000;
}

nw_rc_t nw_sqs_queue_url(nw_sqs_t *q, const char **url, nw_sqs_error_t *ae, nw_err_t *err)
{
    *url = NULL;
    if (q->url[0]) {
        *url = q->url;
        return NW_OK;
    }
    nw_buf_t req, resp;
    nw_buf_init(&req, 4096);
    nw_buf_init(&resp, 64 * 1024);
    nw_rc_t rc = nw_buf_adds(&req, "{\"QueueName\":\"");
    if (rc == NW_OK)
        rc = nw_buf_add_json_escaped(&req, q->queue);
    if (rc == NW_OK)
        rc = nw_buf_adds(&req, "\"}");
    if (rc != NW_OK)
        rc = nw_err_set(err, rc, "sqs", "out of memory");
    if (rc == NW_OK)
        rc = call(q, "GetQueueUrl", nw_buf_str(&req), timeout_for(q, 0), &resp, ae, err);
    if (rc == NW_OK)
        rc = nw_sqs_parse_queue_url(resp.data, resp.len, q->url, sizeof q->url, err);
    if (rc == NW_OK)
        *url = q->url;
    nw_buf_cleanup(&req);
    nw_buf_cleanup(&resp);
    return rc;
}

/* After QueueDoesNotExist a name is looked up again next time (the queue may be recreated). */
static void forget_url(nw_sqs_t *q, const nw_sqs_error_t *ae)
{
    if (ae && ae->cls == NW_SQS_NOTFOUND && !given_as_url(q))
        q->url[0] = 0;
}

nw_rc_t nw_sqs_receive(nw_sqs_t *q, int max_messages, int visibility_s, int wait_s,
                       nw_sqs_msgs_t *out, nw_sqs_error_t *ae, nw_err_t *err)
{
    memset(out, 0, sizeof *out);
    if (max_messages < 1 || max_messages > NW_SQS_MAX_MESSAGES)
        return nw_err_set(err, NW_EINVAL, "MaxNumberOfMessages", "must be within 1..10");
    if (wait_s < 0 || wait_s > 20)
        return nw_err_set(err, NW_EINVAL, "WaitTimeSeconds", "must be within 0..20");
    if (visibility_s < 0)
        return nw_err_set(err, NW_EINVAL, "VisibilityTimeout", "must not be negative");
    const char *url;
    nw_rc_t rc = nw_sqs_queue_url(q, &url, ae, err);
    if (rc != NW_OK)
        return rc;
    nw_buf_t req, resp;
    nw_buf_init(&req, 8192);
    nw_buf_init(&resp, 16 * 1024 * 1024);
    rc = nw_buf_adds(&req, "{\"QueueUrl\":\"");
    if (rc == NW_OK)
        rc = nw_buf_add_json_escaped(&req, url);
    if (rc == NW_OK)
        rc = nw_buf_addf(&req,
                         "\",\"MaxNumberOfMessages\":%d,\"VisibilityTimeout\":%d,"
                         "\"WaitTimeSeconds\":%d,\"MessageSystemAttributeNames\":"
                         "[\"SentTimestamp\",\"ApproximateReceiveCount\"]}",
                         max_messages, visibility_s, wait_s);
    if (rc != NW_OK)
        rc = nw_err_set(err, rc, "sqs", "out of memory");
    if (rc == NW_OK)
        rc = call(q, "ReceiveMessage", nw_buf_str(&req), timeout_for(q, wait_s), &resp, ae, err);
    if (rc == NW_OK)
        rc = nw_sqs_parse_receive(resp.data, resp.len, out, err);
    else
        forget_url(q, ae);
    nw_buf_cleanup(&req);
    nw_buf_cleanup(&resp);
    return rc;
}

nw_rc_t nw_sqs_delete(nw_sqs_t *q, const char *receipt, nw_sqs_error_t *ae, nw_err_t *err)
{
    if (!receipt || !*receipt)
        return nw_err_set(err, NW_EINVAL, "ReceiptHandle", "empty receipt handle");
    const char *url;
    nw_rc_t rc = nw_sqs_queue_url(q, &url, ae, err);
    if (rc != NW_OK)
        return rc;
    nw_buf_t req, resp;
    nw_buf_init(&req, 16384);
    nw_buf_init(&resp, 64 * 1024);
    rc = nw_buf_adds(&req, "{\"QueueUrl\":\"");
    if (rc == NW_OK)
        rc = nw_buf_add_json_escaped(&req, url);
    if (rc == NW_OK)
        rc = nw_buf_adds(&req, "\",\"ReceiptHandle\":\"");
    if (rc == NW_OK)
        rc = nw_buf_add_json_escaped(&req, receipt);
    if (rc == NW_OK)
        rc = nw_buf_adds(&req, "\"}");
    if (rc != NW_OK)
        rc = nw_err_set(err, rc, "sqs", "out of memory");
    if (rc == NW_OK)
        rc = call(q, "DeleteMessage", nw_buf_str(&req), timeout_for(q, 0), &resp, ae, err);
    if (rc != NW_OK)
        forget_url(q, ae);
    nw_buf_cleanup(&req);
    nw_buf_cleanup(&resp);
    return rc;
}
