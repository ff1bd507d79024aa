/* scaler/aws/awsjson.c — one signed AWS JSON protocol call; see awsjson.h. */
#include "scaler/aws/awsjson.h"

#include <stdio.h>
#include <string.h>

#include "scaler/aws/awshttp.h"

nw_rc_t nw_awsjson_call(const nw_awsjson_req_t *r, const char *body, nw_buf_t *out,
                        nw_sqs_error_t *ae, nw_err_t *err)
{
    memset(ae, 0, sizeof *ae);
    const char *action = strchr(r->target, '.') ? strchr(r->target, '.') + 1 : r->target;
    nw_creds_value_t cv;
    nw_err_t e = {0};
    if (nw_creds_get(r->creds, &cv, &e) != NW_OK) {
        ae->cls = NW_SQS_AUTH;
        snprintf(ae->code, sizeof ae->code, "NoCredentials");
        snprintf(ae->message, sizeof ae->message, "%s", e.msg);
        return nw_err_set(err, NW_EAWS, r->what, "%s: no credentials: %s", action, e.msg);
    }
    char target[128], ctype[40];
    snprintf(target, sizeof target, "X-Amz-Target: %s", r->target);
    snprintf(ctype, sizeof ctype, "application/x-amz-json-1.%d", r->json_minor);
    const char *hdrs[] = {target, NULL};
    nw_awshttp_resp_t resp;
    nw_awshttp_resp_init(&resp);
    resp.abort = r->abort;
    nw_awshttp_sign_t s = {
        cv.access_key_id, cv.secret_access_key,
        cv.session_token, r->region,
        r->service,       nw_clock_now(r->clock ? r->clock : nw_clock_system()) / NW_NS_PER_SEC};
    nw_rc_t rc = nw_awshttp_do("POST", r->endpoint, hdrs, ctype, body, strlen(body), &s,
                               r->timeout_ms > 0 ? r->timeout_ms : 10000, &resp, &e);
    nw_creds_value_wipe(&cv);
    ae->status = resp.status;
    if (rc != NW_OK) {
        ae->cls = NW_SQS_TRANSPORT;
        snprintf(ae->code, sizeof ae->code, "%s",
                 rc == NW_ETIMEOUT ? "RequestTimeout" : "ConnectionError");
        snprintf(ae->message, sizeof ae->message, "%s", e.msg);
        rc = nw_err_set(err, rc, r->what, "%s: %s", action, e.msg);
    } else if (resp.status == 200) {
        nw_buf_reset(out);
        rc = nw_buf_add(out, resp.body.data ? resp.body.data : "", resp.body.len);
        if (rc != NW_OK)
            rc = nw_err_set(err, rc, r->what, "%s: response too large", action);
    } else {
        nw_sqs_parse_error(resp.body.data, resp.body.len, resp.status, ae);
        rc = nw_err_set(err, NW_EAWS, r->what, "%s: %ld %s: %s", action, resp.status, ae->code,
                        ae->message);
    }
    nw_awshttp_resp_cleanup(&resp);
    return rc;
}
