/* scaler/aws/creds_container.c — credentials from a container endpoint: ECS task roles
 * (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI) and the EKS Pod Identity agent or any local
 * agent (AWS_CONTAINER_CREDENTIALS_FULL_URI); see creds_int.h. */
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "common/file.h"
#include "scaler/aws/awshttp.h"
#include "scaler/aws/creds_int.h"

#define TOKEN_MAX 16384

static const char *env(const char *k)
{
    const char *v = getenv(k);
    return v && *v ? v : NULL;
}

/* Loopback, or one of the addresses ECS and EKS serve credentials on. */
static bool addr_allowed(const struct sockaddr *sa)
{
    static const unsigned char eks6[16] = {0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0, 0,
                                           0,    0,    0,    0,    0, 0, 0, 0x23};
    uint32_t v4;
    if (sa->sa_family == AF_INET) {
        v4 = ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr);
    } else if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        if (IN6_IS_ADDR_LOOPBACK(a) || memcmp(a->s6_addr, eks6, 16) == 0)
            return true;
        if (!IN6_IS_ADDR_V4MAPPED(a))
            return false;
        memcpy(&v4, a->s6_addr + 12, 4);
        v4 = ntohl(v4);
    } else {
        return false;
    }
    return (v4 >> 24) == 127 || v4 == 0xA9FEAA02u /* 169.254.170.2 */ ||
           v4 == 0xA9FEAA17u /* 169.254.170.23 */;
}

/* Plain http is allowed only to a host whose every address is allowed. */
static NW_MUST_USE nw_rc_t check_host(const char *url, const char *host, nw_err_t *err)
{
    char h[256];
    size_t n = strlen(host);
    if (n >= 2 && host[0] == '[' && host[n - 1] == ']') /* an IPv6 literal */
        snprintf(h, sizeof h, "%.*s", (int)(n - 2), host + 1);
    else
        snprintf(h, sizeof h, "%s", host);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    int e = getaddrinfo(h, NULL, &hints, &res);
    if (e != 0)
        return nw_err_set(err, NW_EINVAL, "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                          "AWS_CONTAINER_CREDENTIALS_FULL_URI %s: cannot resolve %s: %s", url, h,
                          gai_strerror(e));
    bool ok = res != NULL;
    for (struct addrinfo *a = res; a; a = a->ai_next)
        ok = ok && addr_allowed(a->ai_addr);
    freeaddrinfo(res);
    if (!ok)
        return nw_err_set(err, NW_EINVAL, "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                          "AWS_CONTAINER_CREDENTIALS_FULL_URI %s: plain http is allowed only to "
                          "a loopback address, 169.254.170.2, 169.254.170.23 or fd00:ec2::23 "
                          "(use https for any other host)",
                          url);
    return NW_OK;
}

/* The full URI must be https, or http to an allowed host. */
static NW_MUST_USE nw_rc_t check_full_uri(const char *url, nw_err_t *err)
{
    CURLU *u = curl_url();
    char *scheme = NULL, *host = NULL;
    nw_rc_t rc = NW_OK;
    if (!u)
        return nw_err_set(err, NW_ENOMEM, "creds", "out of memory");
    if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK)
        rc = nw_err_set(err, NW_EINVAL, "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                        "AWS_CONTAINER_CREDENTIALS_FULL_URI is not a URL: %s", url);
    else if (strcasecmp(scheme, "http") == 0)
        rc = check_host(url, host, err);
    else if (strcasecmp(scheme, "https") != 0)
        rc = nw_err_set(err, NW_EINVAL, "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                        "AWS_CONTAINER_CREDENTIALS_FULL_URI %s: the scheme must be http or https",
                        url);
    curl_free(scheme);
    curl_free(host);
    curl_url_cleanup(u);
    return rc;
}

/* An Authorization value may not break the header: no CR or LF inside. */
static NW_MUST_USE nw_rc_t check_token(const char *tok, const char *from, nw_err_t *err)
{
    if (strpbrk(tok, "\r\n"))
        return nw_err_set(err, NW_EINVAL, from, "%s: the token holds a line break", from);
    return NW_OK;
}

/* The token in the file (trailing blanks dropped) into out. */
static NW_MUST_USE nw_rc_t read_token_file(const char *path, char *out, size_t len, nw_err_t *err)
{
    size_t n = 0;
    char *t = nw_file_read(path, TOKEN_MAX, &n);
    if (!t)
        return nw_err_set(err, NW_EIO, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
                          "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE: cannot read %s", path);
    while (n > 0 && (t[n - 1] == '\n' || t[n - 1] == '\r' || t[n - 1] == ' ' || t[n - 1] == '\t'))
        t[--n] = '\0';
    nw_rc_t rc = check_token(t, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", err);
    if (rc == NW_OK && n >= len)
        rc =
            nw_err_set(err, NW_ERANGE, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
                       "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE: the token in %s is too long", path);
    if (rc == NW_OK)
        snprintf(out, len, "%s", t);
    OPENSSL_cleanse(t, n);
    free(t);
    return rc;
}

nw_rc_t nw_creds_container_from_env(const nw_awscfg_t *cfg, nw_creds_prov_t **out, nw_err_t *err)
{
    const char *rel = env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
    const char *full = env("AWS_CONTAINER_CREDENTIALS_FULL_URI");
    const char *tf = env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
    const char *tok = env("AWS_CONTAINER_AUTHORIZATION_TOKEN");
    char probe[TOKEN_MAX];
    nw_rc_t rc = NW_OK;
    *out = NULL;
    if (!rel && !full)
        return NW_OK;
    if (!rel && (rc = check_full_uri(full, err)) != NW_OK)
        return rc;
    if (tf && (rc = read_token_file(tf, probe, sizeof probe, err)) != NW_OK)
        return rc;
    OPENSSL_cleanse(probe, sizeof probe);
    if (!tf && tok && (rc = check_token(tok, "AWS_CONTAINER_AUTHORIZATION_TOKEN", err)) != NW_OK)
        return rc;
    nw_creds_prov_t *p = nw_creds_prov_new(NW_CREDS_CONTAINER);
    if (!p)
        return nw_err_set(err, NW_ENOMEM, "creds", "out of memory");
    if (rel)
        snprintf(p->url, sizeof p->url, "%s%s%s", cfg->ecs_base, rel[0] == '/' ? "" : "/", rel);
    else
        snprintf(p->url, sizeof p->url, "%s", full);
    if (tf)
        snprintf(p->auth_file, sizeof p->auth_file, "%s", tf);
    else if (tok && strlen(tok) < sizeof p->auth_token)
        snprintf(p->auth_token, sizeof p->auth_token, "%s", tok);
    else if (tok)
        rc = nw_err_set(err, NW_ERANGE, "AWS_CONTAINER_AUTHORIZATION_TOKEN",
                        "AWS_CONTAINER_AUTHORIZATION_TOKEN is too long");
    snprintf(p->what, sizeof p->what, "the container endpoint %s", p->url);
    if (rc != NW_OK) {
        nw_creds_prov_free(p);
        return rc;
    }
    *out = p;
    return NW_OK;
}

/* The string member k of j into out (required, or optional). */
static NW_MUST_USE nw_rc_t member(const nw_creds_prov_t *p, const cJSON *j, const char *k,
                                  bool required, char *out, size_t len, nw_err_t *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, k);
    out[0] = '\0';
    if (!v && !required)
        return NW_OK;
    if (!cJSON_IsString(v) || (required && !v->valuestring[0]) || strlen(v->valuestring) >= len)
        return nw_err_set(err, NW_EPARSE, k, "%s: %s missing, not a string or too long", p->what,
                          k);
    snprintf(out, len, "%s", v->valuestring);
    return NW_OK;
}

/* An answer: credentials (200) or an error document {"code", "message"}. */
static NW_MUST_USE nw_rc_t parse_answer(const nw_creds_prov_t *p, const nw_awshttp_resp_t *resp,
                                        nw_creds_value_t *v, nw_err_t *err)
{
    const char *end = NULL;
    cJSON *j =
        resp->body.len ? cJSON_ParseWithLengthOpts(resp->body.data, resp->body.len, &end, 0) : NULL;
    char exp[64];
    nw_rc_t rc = NW_OK;
    if (resp->status != 200) {
        const char *code =
            cJSON_IsObject(j) ? cJSON_GetStringValue(cJSON_GetObjectItem(j, "code")) : NULL;
        const char *msg =
            cJSON_IsObject(j) ? cJSON_GetStringValue(cJSON_GetObjectItem(j, "message")) : NULL;
        rc = nw_err_set(err, NW_EAWS, "container credentials", "%s: HTTP %ld%s%s%s%s", p->what,
                        resp->status, code ? ": " : "", code ? code : "", msg ? ": " : "",
                        msg ? msg : "");
    } else if (!cJSON_IsObject(j)) {
        rc = nw_err_set(err, NW_EPARSE, "container credentials", "%s: the answer is not JSON",
                        p->what);
    } else {
        memset(v, 0, sizeof *v);
        if ((rc = member(p, j, "AccessKeyId", true, v->access_key_id, sizeof v->access_key_id,
                         err)) == NW_OK &&
            (rc = member(p, j, "SecretAccessKey", true, v->secret_access_key,
                         sizeof v->secret_access_key, err)) == NW_OK &&
            (rc = member(p, j, "Token", false, v->session_token, sizeof v->session_token, err)) ==
                NW_OK &&
            (rc = member(p, j, "Expiration", false, exp, sizeof exp, err)) == NW_OK && exp[0] &&
            nw_clock_time_parse(exp, &v->expires_ns) != NW_OK)
            rc = nw_err_set(err, NW_EPARSE, "Expiration", "%s: Expiration \"%s\" is not RFC 3339",
                            p->what, exp);
        v->source = NW_CREDS_CONTAINER;
    }
    if (j) {
        for (cJSON *it = j->child; it; it = it->next)
            if (cJSON_IsString(it))
                OPENSSL_cleanse(it->valuestring, strlen(it->valuestring));
        cJSON_Delete(j);
    }
    return rc;
}

nw_rc_t nw_creds_container_fetch(const nw_creds_ctx_t *x, nw_creds_prov_t *p, nw_creds_value_t *v,
                                 nw_err_t *err)
{
    char tok[TOKEN_MAX], hdr[TOKEN_MAX + 32];
    nw_rc_t rc = NW_OK;
    snprintf(tok, sizeof tok, "%s", p->auth_token);
    if (p->auth_file[0] && (rc = read_token_file(p->auth_file, tok, sizeof tok, err)) != NW_OK)
        return rc;
    snprintf(hdr, sizeof hdr, "Authorization: %s", tok);
    const char *hdrs[] = {"Accept: application/json", tok[0] ? hdr : NULL, NULL};
    nw_awshttp_resp_t resp;
    nw_awshttp_resp_init(&resp);
    resp.direct = 1;
    long timeout = x->cfg->call_timeout_ms > 0 && x->cfg->call_timeout_ms < 5000
                       ? x->cfg->call_timeout_ms
                       : 5000;
    rc = nw_awshttp_do("GET", p->url, hdrs, NULL, NULL, 0, NULL, timeout, &resp, err);
    if (rc == NW_OK)
        rc = parse_answer(p, &resp, v, err);
    if (rc != NW_OK)
        OPENSSL_cleanse(v, sizeof *v);
    OPENSSL_cleanse(tok, sizeof tok);
    OPENSSL_cleanse(hdr, sizeof hdr);
    if (resp.body.data)
        OPENSSL_cleanse(resp.body.data, resp.body.len);
    nw_awshttp_resp_cleanup(&resp);
    return rc;
}
