/* scaler/aws/creds.c — the credential chain, the cache and refresh, the environment
 * keys and IMDS; see creds.h and creds_int.h. */
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
#include "scaler/aws/awsprofile.h"
#include "scaler/aws/creds_int.h"

#define COMP "aws.creds"

struct nw_creds {
    nw_awscfg_t cfg;
    const nw_clock_t *clock;
    pthread_mutex_t mu;
    long fetches;
    nw_creds_prov_t *top;
};

const char *nw_creds_source_name(nw_creds_source_t s)
{
    switch (s) {
    case NW_CREDS_ENV:
        return "environment";
    case NW_CREDS_WEB_IDENTITY:
        return "web-identity";
    case NW_CREDS_PROFILE:
        return "profile";
    case NW_CREDS_PROCESS:
        return "process";
    case NW_CREDS_ASSUME_ROLE:
        return "assume-role";
    case NW_CREDS_CONTAINER:
        return "container";
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

/* AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN; *out NULL when the file is not set. */
static NW_MUST_USE nw_rc_t prov_web_identity_env(const nw_creds_t *c, nw_creds_prov_t **out,
                                                 nw_err_t *err)
{
    const char *arn = env("AWS_ROLE_ARN"), *tf = env("AWS_WEB_IDENTITY_TOKEN_FILE");
    *out = NULL;
    if (!tf)
        return NW_OK;
    if (!arn)
        return nw_err_set(err, NW_EINVAL, "AWS_ROLE_ARN",
                          "AWS_WEB_IDENTITY_TOKEN_FILE is set but AWS_ROLE_ARN is not: web "
                          "identity needs the role to assume");
    if (!c->cfg.sts[0])
        return nw_err_set(err, NW_EINVAL, "aws.region",
                          "web identity needs the STS endpoint: set AWS_REGION or "
                          "AWS_ENDPOINT_URL_STS");
    nw_creds_prov_t *p = nw_creds_prov_new(NW_CREDS_WEB_IDENTITY);
    if (!p)
        return nw_err_set(err, NW_ENOMEM, "creds", "out of memory");
    snprintf(p->role_arn, sizeof p->role_arn, "%s", arn);
    snprintf(p->token_file, sizeof p->token_file, "%s", tf);
    const char *sn = env("AWS_ROLE_SESSION_NAME");
    if (sn)
        snprintf(p->session_name, sizeof p->session_name, "%s", sn);
    else
        nw_creds_prov_session_name(c->clock, p->session_name, sizeof p->session_name);
    snprintf(p->what, sizeof p->what, "role %s with the token in %s", arn, tf);
    *out = p;
    return NW_OK;
}

/* Step 3 of the chain: the selected profile, when it holds credentials. */
static NW_MUST_USE nw_rc_t prov_profile(const nw_creds_t *c, nw_creds_prov_t **out, nw_err_t *err)
{
    nw_awsprofile_set_t *set = NULL;
    bool explicit_profile = false;
    const char *name = nw_awsprofile_selected(&explicit_profile);
    *out = NULL;
    nw_rc_t rc = nw_awsprofile_load(&set, err);
    if (rc != NW_OK)
        return rc;
    if (nw_awsprofile_has(set, name))
        rc = nw_creds_profile_provider(&c->cfg, c->clock, set, name, out, err);
    else if (explicit_profile)
        rc = nw_err_set(err, NW_EINVAL, env("AWS_PROFILE") ? "AWS_PROFILE" : "AWS_DEFAULT_PROFILE",
                        "%s names profile \"%s\", which is not in %s",
                        env("AWS_PROFILE") ? "AWS_PROFILE" : "AWS_DEFAULT_PROFILE", name,
                        nw_awsprofile_files(set));
    nw_awsprofile_free(set);
    return rc;
}

/* The first source of the chain (creds.h) that applies. */
static NW_MUST_USE nw_rc_t choose(nw_creds_t *c, nw_err_t *err)
{
    nw_rc_t rc;
    if ((rc = nw_creds_prov_env(&c->top, err)) != NW_OK || c->top)
        return rc;
    if ((rc = prov_web_identity_env(c, &c->top, err)) != NW_OK || c->top)
        return rc;
    if ((rc = prov_profile(c, &c->top, err)) != NW_OK || c->top)
        return rc;
    if ((rc = nw_creds_container_from_env(&c->cfg, &c->top, err)) != NW_OK || c->top)
        return rc;
    if (!c->cfg.imds_disabled)
        return nw_creds_prov_imds(&c->cfg, &c->top, err);
    return nw_err_set(err, NW_ENOTFOUND, "credentials",
                      "no credentials: set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, "
                      "AWS_ROLE_ARN/AWS_WEB_IDENTITY_TOKEN_FILE, a profile with credentials "
                      "(AWS_PROFILE, ~/.aws/credentials), AWS_CONTAINER_CREDENTIALS_FULL_URI, "
                      "or enable IMDS");
}

nw_rc_t nw_creds_new(const nw_awscfg_t *cfg, const nw_clock_t *clock, nw_creds_t **out,
                     nw_err_t *err)
{
    *out = NULL;
    nw_creds_t *c = calloc(1, sizeof *c);
    if (!c)
        return nw_err_set(err, NW_ENOMEM, "creds", "out of memory");
    c->cfg = *cfg;
    if (!c->cfg.ecs_base[0])
        snprintf(c->cfg.ecs_base, sizeof c->cfg.ecs_base, "%s", NW_AWSCFG_ECS_BASE);
    c->clock = clock ? clock : nw_clock_system();
    pthread_mutex_init(&c->mu, NULL);
    nw_rc_t rc = choose(c, err);
    if (rc != NW_OK) {
        nw_creds_free(c);
        return rc;
    }
    *out = c;
    return NW_OK;
}

void nw_creds_free(nw_creds_t *c)
{
    if (!c)
        return;
    nw_creds_prov_free(c->top);
    pthread_mutex_destroy(&c->mu);
    OPENSSL_cleanse(c, sizeof *c);
    free(c);
}

nw_creds_source_t nw_creds_source(const nw_creds_t *c)
{
    return c->top ? c->top->kind : NW_CREDS_NONE;
}

const char *nw_creds_describe(const nw_creds_t *c)
{
    return c->top ? c->top->what : "";
}

long nw_creds_fetch_count(const nw_creds_t *c)
{
    return __atomic_load_n(&c->fetches, __ATOMIC_RELAXED);
}

/* ---- IMDSv2 ------------------------------------------------------------------------- */

static NW_MUST_USE nw_rc_t imds_token(const nw_awscfg_t *cfg, char *tok, size_t len, nw_err_t *err)
{
    nw_awshttp_resp_t resp;
    char url[600];
    const char *hdr[] = {"X-aws-ec2-metadata-token-ttl-seconds: 21600", NULL};
    nw_awshttp_resp_init(&resp);
    resp.direct = 1;
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
    resp.direct = 1;
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

static NW_MUST_USE nw_rc_t fetch_imds(const nw_awscfg_t *cfg, nw_creds_value_t *v, nw_err_t *err)
{
    char tok[1024], role[256], path[512], exp[64];
    nw_buf_t b;
    cJSON *j = NULL;
    nw_rc_t rc = imds_token(cfg, tok, sizeof tok, err);
    if (rc != NW_OK)
        return rc;
    nw_buf_init(&b, 65536);
    if ((rc = imds_get_with(cfg, tok, "/latest/meta-data/iam/security-credentials/", &b, err)) !=
        NW_OK)
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
    if ((rc = imds_get_with(cfg, tok, path, &b, err)) != NW_OK)
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

/* ---- the cache ------------------------------------------------------------------- */

static NW_MUST_USE nw_rc_t prov_get(const nw_creds_ctx_t *x, nw_creds_prov_t *p,
                                    nw_creds_value_t *out, nw_err_t *err);

/* A role's credentials, signed for with its source's (cached or fetched). */
static NW_MUST_USE nw_rc_t fetch_role(const nw_creds_ctx_t *x, nw_creds_prov_t *p,
                                      nw_creds_value_t *v, nw_err_t *err)
{
    nw_creds_value_t src;
    nw_rc_t rc = prov_get(x, p->source, &src, err);
    if (rc == NW_OK)
        rc = nw_creds_role_assume(x, p, &src, v, err);
    nw_creds_value_wipe(&src);
    return rc;
}

static NW_MUST_USE nw_rc_t fetch(const nw_creds_ctx_t *x, nw_creds_prov_t *p, nw_creds_value_t *v,
                                 nw_err_t *err)
{
    switch (p->kind) {
    case NW_CREDS_WEB_IDENTITY:
        return nw_creds_role_web_identity(x, p, v, err);
    case NW_CREDS_ASSUME_ROLE:
        return fetch_role(x, p, v, err);
    case NW_CREDS_PROCESS:
        return nw_creds_process_fetch(x, p, v, err);
    case NW_CREDS_CONTAINER:
        return nw_creds_container_fetch(x, p, v, err);
    case NW_CREDS_IMDS:
        return fetch_imds(x->cfg, v, err);
    default:
        return nw_err_set(err, NW_EINVAL, "credentials", "nothing to fetch");
    }
}

/* p's credentials: the cached ones while they are fresh, else fetched (a failed refresh
 * keeps credentials that have not expired yet). */
static NW_MUST_USE nw_rc_t prov_get(const nw_creds_ctx_t *x, nw_creds_prov_t *p,
                                    nw_creds_value_t *out, nw_err_t *err)
{
    if (p->kind == NW_CREDS_ENV || p->kind == NW_CREDS_PROFILE) {
        *out = p->fixed;
        return NW_OK;
    }
    int64_t now = nw_clock_now(x->clock);
    if (p->have &&
        (p->cur.expires_ns == 0 || now < p->cur.expires_ns - NW_CREDS_REFRESH_EARLY_NS)) {
        *out = p->cur;
        return NW_OK;
    }
    nw_creds_value_t v;
    nw_err_t e = {0};
    memset(&v, 0, sizeof v);
    nw_rc_t rc = fetch(x, p, &v, &e);
    __atomic_fetch_add(x->fetches, 1, __ATOMIC_RELAXED);
    if (rc == NW_OK) {
        char exp[32] = "never";
        if (v.expires_ns)
            nw_clock_time_format(v.expires_ns, exp, sizeof exp);
        v.source = p->kind;
        nw_log_info(COMP, "credentials fetched", NW_LS("source", nw_creds_source_name(p->kind)),
                    NW_LS("from", p->what), NW_LS("expires", exp));
        nw_creds_value_wipe(&p->cur);
        p->cur = v;
        p->have = 1;
        nw_creds_value_wipe(&v);
    } else if (p->have && (p->cur.expires_ns == 0 || now < p->cur.expires_ns)) {
        nw_log_warn(COMP, "credential refresh failed; using the current ones until they expire",
                    NW_LS("source", nw_creds_source_name(p->kind)), NW_LS("error", e.msg));
        rc = NW_OK;
    } else {
        if (err && !err->rc)
            *err = e;
        return rc;
    }
    *out = p->cur;
    return NW_OK;
}

nw_rc_t nw_creds_get(nw_creds_t *c, nw_creds_value_t *out, nw_err_t *err)
{
    nw_creds_ctx_t x = {&c->cfg, c->clock, &c->fetches};
    pthread_mutex_lock(&c->mu);
    nw_rc_t rc = c->top ? prov_get(&x, c->top, out, err)
                        : nw_err_set(err, NW_ENOTFOUND, "credentials", "no credentials");
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
