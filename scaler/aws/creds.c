/* scaler/aws/creds.c — credential chain; see creds.h. */
#include "scaler/aws/creds.h"

#include <cjson/cJSON.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "scaler/aws/awshttp.h"

#define COMP "aws.creds"

struct nw_creds {
    nw_awscfg_t cfg;
    const nw_clock_t *clock;
    nw_creds_source_t source;
    pthread_mutex_t mu;
    nw_creds_value_t cur;
    int have;
    long fetches;
    char role_arn[512];
    char token_file[1024];
    char session_name[128];
};

const char *nw_creds_source_name(nw_creds_source_t s)
{
    switch (s) {
    case NW_CREDS_ENV:
        return "environment";
    case NW_CREDS_WEB_IDENTITY:
        return "web-identity";
    case NW_CREDS_IMDS:
        return "imds";
    default:
        return "none";
    }
}

void nw_creds_value_wipe(nw_creds_value_t *v)
{
    if (v)
        OPENSSL_cleanse(v, sizeof *v);
}

static const char *env(const char *k)
{
    const char *v = getenv(k);
    return v && *v ? v : NULL;
}

nw_rc_t nw_creds_new(const nw_awscfg_t *cfg, const nw_clock_t *clock, nw_creds_t **out,
                     nw_err_t *err)
{
    *out = NULL;
    nw_creds_t *c = calloc(1, sizeof *c);
    if (!c)
        return nw_err_set(err, NW_ENOMEM, "creds", "out of memory");
    c->cfg = *cfg;
    c->clock = clock ? clock : nw_clock_system();
    pthread_mutex_init(&c->mu, NULL);
    const char *ak = env("AWS_ACCESS_KEY_ID"), *sk = env("AWS_SECRET_ACCESS_KEY");
    const char *arn = env("AWS_ROLE_ARN"), *tf = env("AWS_WEB_IDENTITY_TOKEN_FILE");
    if (ak && sk) {
        c->source = NW_CREDS_ENV;
        snprintf(c->cur.access_key_id, sizeof c->cur.access_key_id, "%s", ak);
        snprintf(c->cur.secret_access_key, sizeof c->cur.secret_access_key, "%s", sk);
        const char *tok = env("AWS_SESSION_TOKEN");
        if (tok)
            snprintf(c->cur.session_token, sizeof c->cur.session_token, "%s", tok);
        c->cur.source = NW_CREDS_ENV;
        c->have = 1;
    } else if (ak || sk) {
        nw_creds_free(c);
        return nw_err_set(err, NW_EINVAL, ak ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID",
                          "%s is set but %s is not",
                          ak ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY",
                          ak ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID");
    } else if (arn && tf) {
        c->source = NW_CREDS_WEB_IDENTITY;
        snprintf(c->role_arn, sizeof c->role_arn, "%s", arn);
        snprintf(c->token_file, sizeof c->token_file, "%s", tf);
        const char *sn = env("AWS_ROLE_SESSION_NAME");
        if (sn)
            snprintf(c->session_name, sizeof c->session_name, "%s", sn);
        else
            snprintf(c->session_name, sizeof c->session_name, "nodewarden-%lld",
                     (long long)(nw_clock_now(c->clock) / NW_NS_PER_SEC));
        if (!c->cfg.sts[0]) {
            nw_creds_free(c);
            return nw_err_set(err, NW_EINVAL, "aws.region",
                              "web identity needs the STS endpoint: set AWS_REGION or "
                              "AWS_ENDPOINT_URL_STS");
        }
    } else if (!c->cfg.imds_disabled) {
        c->source = NW_CREDS_IMDS;
    } else {
        nw_creds_free(c);
        return nw_err_set(err, NW_ENOTFOUND, "credentials",
                          "no credentials: set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, or "
                          "AWS_ROLE_ARN/AWS_WEB_IDENTITY_TOKEN_FILE, or enable IMDS");
    }
    *out = c;
    return NW_OK;
}

void nw_creds_free(nw_creds_t *c)
{
    if (!c)
        return;
    pthread_mutex_destroy(&c->mu);
    OPENSSL_cleanse(c, sizeof *c);
    free(c);
}

nw_creds_source_t nw_creds_source(const nw_creds_t *c)
{
    return c->source;
}

long nw_creds_fetch_count(const nw_creds_t *c)
{
    return __atomic_load_n(&c->fetches, __ATOMIC_RELAXED);
}

/* ---- web identity ---------------------------------------------------------------- */

static NW_MUST_USE nw_rc_t fetch_web_identity(nw_creds_t *c, nw_creds_value_t *v, nw_err_t *err)
{
    nw_rc_t rc;
    FILE *f = fopen(c->token_file, "r");
    if (!f)
        return nw_err_set(err, NW_EIO, "AWS_WEB_IDENTITY_TOKEN_FILE", "cannot read %s",
                          c->token_file);
    char *tok = calloc(1, 65536);
    size_t n = tok ? fread(tok, 1, 65535, f) : 0;
    fclose(f);
    if (!tok)
        return nw_err_set(err, NW_ENOMEM, "creds", "out of memory");
    while (n > 0 && (tok[n - 1] == '\n' || tok[n - 1] == '\r' || tok[n - 1] == ' '))
        tok[--n] = 0;
    if (n == 0) {
        free(tok);
        return nw_err_set(err, NW_EINVAL, "AWS_WEB_IDENTITY_TOKEN_FILE", "%s is empty",
                          c->token_file);
    }
    nw_buf_t body;
    nw_awshttp_resp_t resp;
    nw_buf_init(&body, 128 * 1024);
    nw_awshttp_resp_init(&resp);
    if ((rc = nw_buf_adds(&body, "Action=AssumeRoleWithWebIdentity&Version=2011-06-15&RoleArn=")) ||
        (rc = nw_awshttp_form_escape(&body, c->role_arn)) ||
        (rc = nw_buf_adds(&body, "&RoleSessionName=")) ||
        (rc = nw_awshttp_form_escape(&body, c->session_name)) ||
        (rc = nw_buf_adds(&body, "&DurationSeconds=3600&WebIdentityToken=")) ||
        (rc = nw_awshttp_form_escape(&body, tok))) {
        rc = nw_err_set(err, rc, "creds", "request too large");
        goto out;
    }
    char url[600];
    snprintf(url, sizeof url, "%s/", c->cfg.sts);
    rc = nw_awshttp_do("POST", url, NULL, "application/x-www-form-urlencoded; charset=utf-8",
                       body.data, body.len, NULL, c->cfg.call_timeout_ms, &resp, err);
    if (rc != NW_OK)
        goto out;
    if (resp.status != 200) {
        nw_ec2xml_error_t e;
        nw_err_t ignore = {0};
        if (nw_ec2xml_parse_error(resp.body.data, resp.body.len, &e, &ignore) == NW_OK)
            rc = nw_err_set(err, NW_EAWS, "sts", "AssumeRoleWithWebIdentity for %s: %s: %s",
                            c->role_arn, e.code, e.message);
        else
            rc =
                nw_err_set(err, NW_EAWS, "sts", "AssumeRoleWithWebIdentity: HTTP %ld", resp.status);
        goto out;
    }
    nw_sts_result_t r;
    if ((rc = nw_ec2xml_parse_sts(resp.body.data, resp.body.len, &r, err)) != NW_OK)
        goto out;
    memset(v, 0, sizeof *v);
    snprintf(v->access_key_id, sizeof v->access_key_id, "%s", r.access_key_id);
    snprintf(v->secret_access_key, sizeof v->secret_access_key, "%s", r.secret_access_key);
    snprintf(v->session_token, sizeof v->session_token, "%s", r.session_token);
    v->expires_ns = r.expiration_ns;
    v->source = NW_CREDS_WEB_IDENTITY;
    OPENSSL_cleanse(&r, sizeof r);
out:
    OPENSSL_cleanse(tok, 65536);
    free(tok);
    if (body.data)
        OPENSSL_cleanse(body.data, body.len);
    nw_buf_cleanup(&body);
    if (resp.body.data)
        OPENSSL_cleanse(resp.body.data, resp.body.len);
    nw_awshttp_resp_cleanup(&resp);
    return rc;
}

/* ---- IMDSv2 ------------------------------------------------------------------------- */

static NW_MUST_USE nw_rc_t imds_token(const nw_awscfg_t *cfg, char *tok, size_t len, nw_err_t *err)
{
    nw_awshttp_resp_t resp;
    char url[600];
    const char *hdr[] = {"X-aws-ec2-metadata-token-ttl-seconds: 21600", NULL};
    nw_awshttp_resp_init(&resp);
    snprintf(url, sizeof url, "%s/latest/api/token", cfg->imds);
    nw_rc_t rc =
        nw_awshttp_do("PUT", url, hdr, NULL, "", 0, NULL,
                      cfg->call_timeout_ms < 2000 ? cfg->call_timeout_ms : 2000, &resp, err);
    if (rc == NW_OK && resp.status != 200)
        rc = nw_err_set(err, NW_EAWS, "imds",
                        "IMDSv2 token request: HTTP %ld (is the PUT "
                        "response hop limit >= 2 for pods?)",
                        resp.status);
    if (rc == NW_OK) {
        if (resp.body.len == 0 || resp.body.len >= len)
            rc = nw_err_set(err, NW_EPARSE, "imds", "IMDSv2 token missing or too long");
        else
            snprintf(tok, len, "%s", resp.body.data);
    }
    nw_awshttp_resp_cleanup(&resp);
    return rc;
}

static NW_MUST_USE nw_rc_t imds_get_with(const nw_awscfg_t *cfg, const char *tok, const char *path,
                                         nw_buf_t *out, nw_err_t *err)
{
    nw_awshttp_resp_t resp;
    char url[1200], th[1200];
    snprintf(url, sizeof url, "%s%s", cfg->imds, path);
    snprintf(th, sizeof th, "X-aws-ec2-metadata-token: %s", tok);
    const char *hdr[] = {th, NULL};
    nw_awshttp_resp_init(&resp);
    nw_rc_t rc =
        nw_awshttp_do("GET", url, hdr, NULL, NULL, 0, NULL, cfg->call_timeout_ms, &resp, err);
    if (rc == NW_OK && resp.status == 404)
        rc = nw_err_set(err, NW_ENOTFOUND, "imds", "IMDS %s: not found (no instance profile?)",
                        path);
    else if (rc == NW_OK && resp.status != 200)
        rc = nw_err_set(err, NW_EAWS, "imds", "IMDS %s: HTTP %ld", path, resp.status);
    if (rc == NW_OK &&
        nw_buf_add(out, resp.body.data ? resp.body.data : "", resp.body.len) != NW_OK)
        rc = nw_err_set(err, NW_ERANGE, "imds", "IMDS %s: response too large", path);
    if (resp.body.data)
        OPENSSL_cleanse(resp.body.data, resp.body.len);
    nw_awshttp_resp_cleanup(&resp);
    return rc;
}

nw_rc_t nw_creds_imds_get(const nw_awscfg_t *cfg, const char *path, char *out, size_t outlen,
                          nw_err_t *err)
{
    char tok[1024];
    nw_buf_t b;
    if (cfg->imds_disabled)
        return nw_err_set(err, NW_EINVAL, "imds", "IMDS is disabled (AWS_EC2_METADATA_DISABLED)");
    nw_rc_t rc = imds_token(cfg, tok, sizeof tok, err);
    if (rc != NW_OK)
        return rc;
    nw_buf_init(&b, 65536);
    rc = imds_get_with(cfg, tok, path, &b, err);
    if (rc == NW_OK)
        snprintf(out, outlen, "%s", nw_buf_str(&b));
    nw_buf_cleanup(&b);
    OPENSSL_cleanse(tok, sizeof tok);
    return rc;
}

static NW_MUST_USE nw_rc_t json_str(cJSON *o, const char *k, char *out, size_t len, nw_err_t *err)
{
    cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsString(v) || !v->valuestring[0])
        return nw_err_set(err, NW_EPARSE, k, "IMDS credentials: %s missing", k);
    if (strlen(v->valuestring) >= len)
        return nw_err_set(err, NW_EPARSE, k, "IMDS credentials: %s too long", k);
    snprintf(out, len, "%s", v->valuestring);
    return NW_OK;
}

static NW_MUST_USE nw_rc_t fetch_imds(nw_creds_t *c, nw_creds_value_t *v, nw_err_t *err)
{
    char tok[1024], role[256], path[512], exp[64];
    nw_buf_t b;
    cJSON *j = NULL;
    nw_rc_t rc = imds_token(&c->cfg, tok, sizeof tok, err);
    if (rc != NW_OK)
        return rc;
    nw_buf_init(&b, 65536);
    if ((rc = imds_get_with(&c->cfg, tok, "/latest/meta-data/iam/security-credentials/", &b,
                            err)) != NW_OK)
        goto out;
    /* first line is the role name */
    size_t l = strcspn(nw_buf_str(&b), "\r\n");
    if (l == 0 || l >= sizeof role) {
        rc = nw_err_set(err, NW_EPARSE, "imds", "IMDS returned no instance-profile role name");
        goto out;
    }
    memcpy(role, b.data, l);
    role[l] = 0;
    nw_buf_reset(&b);
    snprintf(path, sizeof path, "/latest/meta-data/iam/security-credentials/%s", role);
    if ((rc = imds_get_with(&c->cfg, tok, path, &b, err)) != NW_OK)
        goto out;
    const char *end = NULL;
    j = cJSON_ParseWithLengthOpts(b.data, b.len, &end, 0);
    if (!cJSON_IsObject(j)) {
        rc = nw_err_set(err, NW_EPARSE, "imds", "IMDS credentials for role %s: not JSON", role);
        goto out;
    }
    cJSON *code = cJSON_GetObjectItemCaseSensitive(j, "Code");
    if (cJSON_IsString(code) && strcmp(code->valuestring, "Success") != 0) {
        rc = nw_err_set(err, NW_EAWS, "imds", "IMDS credentials for role %s: Code %s", role,
                        code->valuestring);
        goto out;
    }
    memset(v, 0, sizeof *v);
    if ((rc = json_str(j, "AccessKeyId", v->access_key_id, sizeof v->access_key_id, err)) ||
        (rc = json_str(j, "SecretAccessKey", v->secret_access_key, sizeof v->secret_access_key,
                       err)) ||
        (rc = json_str(j, "Token", v->session_token, sizeof v->session_token, err)) ||
        (rc = json_str(j, "Expiration", exp, sizeof exp, err)))
        goto out;
    if (nw_clock_time_parse(exp, &v->expires_ns) != NW_OK) {
        rc = nw_err_set(err, NW_EPARSE, "Expiration", "IMDS credentials: bad Expiration");
        goto out;
    }
    v->source = NW_CREDS_IMDS;
out:
    if (rc != NW_OK)
        nw_creds_value_wipe(v);
    if (j) {
        /* wipe the secret strings before freeing */
        for (cJSON *it = j->child; it; it = it->next)
            if (cJSON_IsString(it))
                OPENSSL_cleanse(it->valuestring, strlen(it->valuestring));
        cJSON_Delete(j);
    }
    if (b.data)
        OPENSSL_cleanse(b.data, b.len);
    nw_buf_cleanup(&b);
    OPENSSL_cleanse(tok, sizeof tok);
    return rc;
}

/* ---- the getter ------------------------------------------------------------------ */

nw_rc_t nw_creds_get(nw_creds_t *c, nw_creds_value_t *out, nw_err_t *err)
{
    nw_rc_t rc = NW_OK;
    pthread_mutex_lock(&c->mu);
    int64_t now = nw_clock_now(c->clock);
    bool fresh =
        c->have && (c->cur.expires_ns == 0 || now < c->cur.expires_ns - NW_CREDS_REFRESH_EARLY_NS);
    if (!fresh && c->source != NW_CREDS_ENV) {
        nw_creds_value_t v;
        nw_err_t e = {0};
        memset(&v, 0, sizeof v);
        rc = c->source == NW_CREDS_WEB_IDENTITY ? fetch_web_identity(c, &v, &e)
                                                : fetch_imds(c, &v, &e);
        __atomic_fetch_add(&c->fetches, 1, __ATOMIC_RELAXED);
        if (rc == NW_OK) {
            char exp[32];
            nw_clock_time_format(v.expires_ns, exp, sizeof exp);
            nw_log_info(COMP, "credentials fetched",
                        NW_LS("source", nw_creds_source_name(c->source)), NW_LS("expires", exp));
            nw_creds_value_wipe(&c->cur);
            c->cur = v;
            c->have = 1;
            nw_creds_value_wipe(&v);
        } else if (c->have && now < c->cur.expires_ns) {
            nw_log_warn(COMP, "credential refresh failed; using the current ones until they expire",
                        NW_LS("source", nw_creds_source_name(c->source)), NW_LS("error", e.msg));
            rc = NW_OK;
        } else {
            if (err && !err->rc)
                *err = e;
        }
    } else if (!c->have) {
        rc = nw_err_set(err, NW_ENOTFOUND, "credentials", "no credentials");
    }
    if (rc == NW_OK)
        *out = c->cur;
    pthread_mutex_unlock(&c->mu);
    return rc;
}

/* ---- STS GetCallerIdentity ----------------------------------------------------------- */

nw_rc_t nw_creds_sts_caller_identity(const nw_awscfg_t *cfg, nw_creds_t *creds,
                                     const nw_clock_t *clock, nw_sts_result_t *out, nw_err_t *err)
{
    nw_creds_value_t v;
    nw_rc_t rc = nw_creds_get(creds, &v, err);
    if (rc != NW_OK)
        return rc;
    const char *body = "Action=GetCallerIdentity&Version=2011-06-15";
    nw_awshttp_sign_t s = {
        v.access_key_id, v.secret_access_key,
        v.session_token, cfg->region,
        "sts",           nw_clock_now(clock ? clock : nw_clock_system()) / NW_NS_PER_SEC};
    nw_awshttp_resp_t resp;
    char url[600];
    snprintf(url, sizeof url, "%s/", cfg->sts);
    nw_awshttp_resp_init(&resp);
    rc = nw_awshttp_do("POST", url, NULL, "application/x-www-form-urlencoded; charset=utf-8", body,
                       strlen(body), &s, cfg->call_timeout_ms, &resp, err);
    nw_creds_value_wipe(&v);
    if (rc == NW_OK && resp.status != 200) {
        nw_ec2xml_error_t e;
        nw_err_t ignore = {0};
        if (nw_ec2xml_parse_error(resp.body.data, resp.body.len, &e, &ignore) == NW_OK)
            rc = nw_err_set(err, NW_EAWS, e.code, "GetCallerIdentity: %s: %s", e.code, e.message);
        else
            rc = nw_err_set(err, NW_EAWS, "sts", "GetCallerIdentity: HTTP %ld", resp.status);
    } else if (rc == NW_OK) {
        rc = nw_ec2xml_parse_sts(resp.body.data, resp.body.len, out, err);
    }
    nw_awshttp_resp_cleanup(&resp);
    return rc;
}
