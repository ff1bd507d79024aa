/* scaler/aws/creds_role.c — credentials of a role from STS: AssumeRoleWithWebIdentity
 * (a token file) and AssumeRole (signed with other credentials); see creds_int.h. */
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/file.h"
#include "scaler/aws/awshttp.h"
#include "scaler/aws/creds_int.h"
#include "scaler/aws/ec2xml.h"

/* POST the form body to STS (signed when sign is given), and read the credentials of
 * the answer into v. action names the call in messages. */
static NW_MUST_USE nw_rc_t sts_call(const nw_creds_ctx_t *x, const nw_creds_prov_t *p,
                                    const char *action, const nw_buf_t *body,
                                    const nw_awshttp_sign_t *sign, nw_creds_value_t *v,
                                    nw_err_t *err)
{
    nw_awshttp_resp_t resp;
    char url[600];
    snprintf(url, sizeof url, "%s/", x->cfg->sts);
    nw_awshttp_resp_init(&resp);
    nw_rc_t rc =
        nw_awshttp_do("POST", url, NULL, "application/x-www-form-urlencoded; charset=utf-8",
                      body->data, body->len, sign, x->cfg->call_timeout_ms, &resp, err);
    if (rc == NW_OK && resp.status != 200) {
        nw_ec2xml_error_t e;
        nw_err_t ignore = {0};
        if (nw_ec2xml_parse_error(resp.body.data, resp.body.len, &e, &ignore) == NW_OK)
            rc = nw_err_set(err, NW_EAWS, "sts", "%s for %s: %s: %s", action, p->role_arn, e.code,
                            e.message);
        else
            rc = nw_err_set(err, NW_EAWS, "sts", "%s for %s: HTTP %ld", action, p->role_arn,
                            resp.status);
    }
    nw_sts_result_t r;
    if (rc == NW_OK &&
        (rc = nw_ec2xml_parse_sts(resp.body.data, resp.body.len, &r, err)) == NW_OK) {
        memset(v, 0, sizeof *v);
        snprintf(v->access_key_id, sizeof v->access_key_id, "%s", r.access_key_id);
        snprintf(v->secret_access_key, sizeof v->secret_access_key, "%s", r.secret_access_key);
        snprintf(v->session_token, sizeof v->session_token, "%s", r.session_token);
        v->expires_ns = r.expiration_ns;
        v->source = p->kind;
        OPENSSL_cleanse(&r, sizeof r);
    }
    if (resp.body.data)
        OPENSSL_cleanse(resp.body.data, resp.body.len);
    nw_awshttp_resp_cleanup(&resp);
    return rc;
}

static void buf_wipe(nw_buf_t *b)
{
    if (b->data)
        OPENSSL_cleanse(b->data, b->len);
    nw_buf_cleanup(b);
}

nw_rc_t nw_creds_role_web_identity(const nw_creds_ctx_t *x, nw_creds_prov_t *p, nw_creds_value_t *v,
                                   nw_err_t *err)
{
    size_t n = 0;
    char *tok = nw_file_read(p->token_file, 65535, &n);
    if (!tok)
        return nw_err_set(err, NW_EIO, "web identity token", "cannot read the token file %s",
                          p->token_file);
    while (n > 0 && (tok[n - 1] == '\n' || tok[n - 1] == '\r' || tok[n - 1] == ' '))
        tok[--n] = 0;
    if (n == 0) {
        free(tok);
        return nw_err_set(err, NW_EINVAL, "web identity token", "the token file %s is empty",
                          p->token_file);
    }
    nw_buf_t body;
    nw_rc_t rc;
    nw_buf_init(&body, 128 * 1024);
    if ((rc = nw_buf_adds(&body, "Action=AssumeRoleWithWebIdentity&Version=2011-06-15&RoleArn=")) ||
        (rc = nw_awshttp_form_escape(&body, p->role_arn)) ||
        (rc = nw_buf_adds(&body, "&RoleSessionName=")) ||
        (rc = nw_awshttp_form_escape(&body, p->session_name)) ||
        (rc = nw_buf_adds(&body, "&DurationSeconds=3600&WebIdentityToken=")) ||
        (rc = nw_awshttp_form_escape(&body, tok)))
        rc = nw_err_set(err, rc, "creds", "request too large");
    else
        rc = sts_call(x, p, "AssumeRoleWithWebIdentity", &body, NULL, v, err);
    OPENSSL_cleanse(tok, n);
    free(tok);
    buf_wipe(&body);
    return rc;
}

nw_rc_t nw_creds_role_assume(const nw_creds_ctx_t *x, nw_creds_prov_t *p,
                             const nw_creds_value_t *src, nw_creds_value_t *v, nw_err_t *err)
{
    nw_rc_t rc;
    nw_buf_t body;
    nw_buf_init(&body, 16 * 1024);
    if ((rc = nw_buf_adds(&body, "Action=AssumeRole&Version=2011-06-15&RoleArn=")) ||
        (rc = nw_awshttp_form_escape(&body, p->role_arn)) ||
        (rc = nw_buf_adds(&body, "&RoleSessionName=")) ||
        (rc = nw_awshttp_form_escape(&body, p->session_name)) ||
        (rc = nw_buf_addf(&body, "&DurationSeconds=%d", p->duration_s ? p->duration_s : 3600)) ||
        (p->external_id[0] && ((rc = nw_buf_adds(&body, "&ExternalId=")) ||
                               (rc = nw_awshttp_form_escape(&body, p->external_id))))) {
        rc = nw_err_set(err, rc, "creds", "request too large");
    } else {
        /* no region (an explicit STS endpoint): the global endpoint's */
        const char *region = x->cfg->region[0] ? x->cfg->region : "us-east-1";
        nw_awshttp_sign_t s = {src->access_key_id,
                               src->secret_access_key,
                               src->session_token,
                               region,
                               "sts",
                               nw_clock_now(x->clock) / NW_NS_PER_SEC};
        rc = sts_call(x, p, "AssumeRole", &body, &s, v, err);
    }
    buf_wipe(&body);
    return rc;
}
