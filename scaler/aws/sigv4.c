/* scaler/aws/sigv4.c — AWS Signature Version 4; see sigv4.h. */
#include "scaler/aws/sigv4.h"

#include <ctype.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define SIGV4_MAX_HEADERS 64
#define SIGV4_MAX_CANON (64 * 1024)
#define SIGV4_MAX_PARAMS 256

static void hex_encode(const unsigned char *in, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * n] = 0;
}

void nw_sigv4_sha256_hex(const void *data, size_t len, char hex[65])
{
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256(data ? data : (const void *)"", len, md);
    hex_encode(md, sizeof md, hex);
}

static void hmac(const void *key, size_t keylen, const char *msg, unsigned char out[32])
{
    unsigned int n = 32;
    HMAC(EVP_sha256(), key, (int)keylen, (const unsigned char *)msg, strlen(msg), out, &n);
}

void nw_sigv4_signing_key(const char *secret, const char *date8, const char *region,
                          const char *service, unsigned char key[32])
{
    size_t sl = strlen(secret);
    char *k0 = malloc(sl + 5);
    unsigned char k1[32], k2[32], k3[32];
    if (!k0) {
        memset(key, 0, 32);
        return;
    }
    memcpy(k0, "AWS4", 4);
    memcpy(k0 + 4, secret, sl + 1);
    hmac(k0, sl + 4, date8, k1);
    OPENSSL_cleanse(k0, sl + 4);
    free(k0);
    hmac(k1, 32, region, k2);
    hmac(k2, 32, service, k3);
    hmac(k3, 32, "aws4_request", key);
    OPENSSL_cleanse(k1, 32);
    OPENSSL_cleanse(k2, 32);
    OPENSSL_cleanse(k3, 32);
}

static bool unreserved(unsigned char c)
{
    return isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~';
}

nw_rc_t nw_sigv4_uri_encode(nw_buf_t *out, const char *s, size_t len, int keep_slash)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        nw_rc_t rc;
        if (unreserved(c) || (keep_slash && c == '/'))
            rc = nw_buf_add(out, &s[i], 1);
        else
            rc = nw_buf_addf(out, "%%%02X", c);
        if (rc != NW_OK)
            return rc;
    }
    return NW_OK;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = tolower(c);
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* Percent-decode s[0..len) into a malloc'd string ('+' kept literally, as AWS does). */
static char *pct_decode(const char *s, size_t len)
{
    char *o = malloc(len + 1);
    size_t j = 0;
    if (!o)
        return NULL;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '%' && i + 2 < len && hexval((unsigned char)s[i + 1]) >= 0 &&
            hexval((unsigned char)s[i + 2]) >= 0) {
            o[j++] = (char)(hexval((unsigned char)s[i + 1]) * 16 + hexval((unsigned char)s[i + 2]));
            i += 2;
        } else {
            o[j++] = s[i];
        }
    }
    o[j] = 0;
    return o;
}

/* Canonical path: optional dot-segment removal and slash collapsing, then
 * encoding of each segment. */
static NW_MUST_USE nw_rc_t canonical_path(const char *path, int normalize, nw_buf_t *out)
{
    if (!path || !*path)
        return nw_buf_adds(out, "/");
    if (!normalize)
        return nw_sigv4_uri_encode(out, path, strlen(path), 1);
    /* split into segments, resolve . and .. */
    size_t plen = strlen(path);
    const char **seg = calloc(plen + 1, sizeof *seg);
    size_t *seglen = calloc(plen + 1, sizeof *seglen);
    size_t n = 0;
    nw_rc_t rc = NW_OK;
    if (!seg || !seglen) {
        rc = NW_ENOMEM;
        goto out;
    }
    bool trailing = plen > 0 && path[plen - 1] == '/';
    for (size_t i = 0; i < plen;) {
        while (i < plen && path[i] == '/')
            i++;
        size_t start = i;
        while (i < plen && path[i] != '/')
            i++;
        size_t l = i - start;
        if (l == 0)
            continue;
        if (l == 1 && path[start] == '.') {
            if (i >= plen)
                trailing = true;
            continue;
        }
        if (l == 2 && path[start] == '.' && path[start + 1] == '.') {
            if (n > 0)
                n--;
            if (i >= plen)
                trailing = true;
            continue;
        }
        seg[n] = path + start;
        seglen[n] = l;
        n++;
    }
    rc = nw_buf_adds(out, "/");
    for (size_t k = 0; k < n && rc == NW_OK; k++) {
        rc = nw_sigv4_uri_encode(out, seg[k], seglen[k], 0);
        if (rc == NW_OK && (k + 1 < n || trailing))
            rc = nw_buf_adds(out, "/");
    }
out:
    free(seg);
    free(seglen);
    return rc;
}

typedef struct {
    char *k, *v; /* encoded */
} param_t;

static int param_cmp(const void *a, const void *b)
{
    const param_t *x = a, *y = b;
    int c = strcmp(x->k, y->k);
    return c ? c : strcmp(x->v, y->v);
}

static char *encode_dup(const char *s, size_t len)
{
    char *d = pct_decode(s, len);
    nw_buf_t b;
    if (!d)
        return NULL;
    nw_buf_init(&b, SIGV4_MAX_CANON);
    if (nw_sigv4_uri_encode(&b, d, strlen(d), 0) != NW_OK) {
        free(d);
        nw_buf_cleanup(&b);
        return NULL;
    }
    free(d);
    return nw_buf_take(&b);
}

static NW_MUST_USE nw_rc_t canonical_query(const char *q, nw_buf_t *out, nw_err_t *err)
{
    if (!q || !*q)
        return NW_OK;
    param_t p[SIGV4_MAX_PARAMS];
    size_t n = 0;
    nw_rc_t rc = NW_OK;
    const char *s = q;
    while (*s) {
        const char *amp = strchr(s, '&');
        size_t l = amp ? (size_t)(amp - s) : strlen(s);
        if (l > 0) {
            if (n == SIGV4_MAX_PARAMS) {
                rc = nw_err_set(err, NW_ERANGE, "query", "more than %d query parameters",
                                SIGV4_MAX_PARAMS);
                goto out;
            }
            const char *eq = memchr(s, '=', l);
            size_t kl = eq ? (size_t)(eq - s) : l;
            p[n].k = encode_dup(s, kl);
            p[n].v = eq ? encode_dup(eq + 1, l - kl - 1) : strdup("");
            n++;
            if (!p[n - 1].k || !p[n - 1].v) {
                rc = NW_ENOMEM;
                goto out;
            }
        }
        s += l;
        if (*s == '&')
            s++;
    }
    // cppcheck-suppress uninitvar ; p[0..n) were all set in the loop above
    qsort(p, n, sizeof p[0], param_cmp);
    for (size_t i = 0; i < n && rc == NW_OK; i++)
        rc = nw_buf_addf(out, "%s%s=%s", i ? "&" : "", p[i].k, p[i].v);
out:
    for (size_t i = 0; i < n; i++) {
        free(p[i].k);
        free(p[i].v);
    }
    return rc;
}

typedef struct {
    char name[128];
    const char *value;
    size_t order;
} hdr_t;

static int hdr_cmp(const void *a, const void *b)
{
    const hdr_t *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c)
        return c;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* Append value trimmed with inner whitespace runs collapsed to one space. */
static NW_MUST_USE nw_rc_t add_trimmed(nw_buf_t *b, const char *v)
{
    while (*v == ' ' || *v == '\t')
        v++;
    bool pending = false;
    for (; *v; v++) {
        if (*v == ' ' || *v == '\t' || *v == '\n' || *v == '\r') {
            pending = true;
            continue;
        }
        if (pending && nw_buf_adds(b, " ") != NW_OK)
            return NW_ERANGE;
        pending = false;
        if (nw_buf_add(b, v, 1) != NW_OK)
            return NW_ERANGE;
    }
    return NW_OK;
}

nw_rc_t nw_sigv4_canonical_request(const nw_sigv4_req_t *req, const char *amz_date,
                                   const char *session_token, nw_buf_t *out,
                                   nw_buf_t *signed_headers, nw_err_t *err)
{
    hdr_t h[SIGV4_MAX_HEADERS + 2];
    size_t n = 0;
    bool have_host = false;
    nw_rc_t rc;

    if (!req->method || !*req->method)
        return nw_err_set(err, NW_EINVAL, "method", "HTTP method is required");
    if (req->nheaders > SIGV4_MAX_HEADERS)
        return nw_err_set(err, NW_ERANGE, "headers", "more than %d headers", SIGV4_MAX_HEADERS);
    for (size_t i = 0; i < req->nheaders; i++) {
        const char *nm = req->headers[i].name;
        size_t l = strlen(nm);
        if (l == 0 || l >= sizeof h[0].name)
            return nw_err_set(err, NW_EINVAL, "headers", "header name empty or too long");
        for (size_t j = 0; j <= l; j++)
            h[n].name[j] = (char)tolower((unsigned char)nm[j]);
        if (strcmp(h[n].name, "authorization") == 0)
            continue; /* never signed */
        if (strcmp(h[n].name, "host") == 0)
            have_host = true;
        if ((amz_date && strcmp(h[n].name, "x-amz-date") == 0) ||
            (session_token && *session_token && strcmp(h[n].name, "x-amz-security-token") == 0))
            continue; /* the signer supplies these */
        h[n].value = req->headers[i].value ? req->headers[i].value : "";
        h[n].order = n;
        n++;
    }
    if (!have_host)
        return nw_err_set(err, NW_EINVAL, "headers", "the Host header is required");
    if (amz_date) {
        snprintf(h[n].name, sizeof h[n].name, "x-amz-date");
        h[n].value = amz_date;
        h[n].order = n;
        n++;
    }
    if (session_token && *session_token) {
        snprintf(h[n].name, sizeof h[n].name, "x-amz-security-token");
        h[n].value = session_token;
        h[n].order = n;
        n++;
    }
    qsort(h, n, sizeof h[0], hdr_cmp);

    if ((rc = nw_buf_addf(out, "%s\n", req->method)) != NW_OK ||
        (rc = canonical_path(req->path, req->normalize_path, out)) != NW_OK ||
        (rc = nw_buf_adds(out, "\n")) != NW_OK ||
        (rc = canonical_query(req->query, out, err)) != NW_OK ||
        (rc = nw_buf_adds(out, "\n")) != NW_OK)
        goto fail;
    for (size_t i = 0; i < n; i++) {
        int first = i == 0 || strcmp(h[i].name, h[i - 1].name) != 0;
        int last = i + 1 == n || strcmp(h[i].name, h[i + 1].name) != 0;
        if (first) {
            if ((rc = nw_buf_addf(out, "%s:", h[i].name)) != NW_OK)
                goto fail;
            if (signed_headers &&
                (rc = nw_buf_addf(signed_headers, "%s%s", signed_headers->len ? ";" : "",
                                  h[i].name)) != NW_OK)
                goto fail;
        } else if ((rc = nw_buf_adds(out, ",")) != NW_OK) {
            goto fail;
        }
        if ((rc = add_trimmed(out, h[i].value)) != NW_OK)
            goto fail;
        if (last && (rc = nw_buf_adds(out, "\n")) != NW_OK)
            goto fail;
    }
    if ((rc = nw_buf_adds(out, "\n")) != NW_OK)
        goto fail;
    /* the signed-header list once more, then the payload hash */
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && strcmp(h[i].name, h[i - 1].name) == 0)
            continue;
        if ((rc = nw_buf_addf(out, "%s%s", i ? ";" : "", h[i].name)) != NW_OK)
            goto fail;
    }
    char ph[65];
    if (req->payload_hash)
        snprintf(ph, sizeof ph, "%s", req->payload_hash);
    else
        nw_sigv4_sha256_hex(req->payload, req->payload_len, ph);
    if ((rc = nw_buf_addf(out, "\n%s", ph)) != NW_OK)
        goto fail;
    return NW_OK;
fail:
    if (rc == NW_ERANGE)
        nw_err_set(err, rc, "request", "canonical request exceeds %d bytes", SIGV4_MAX_CANON);
    return rc;
}

nw_rc_t nw_sigv4_sign(const nw_sigv4_req_t *req, const nw_sigv4_creds_t *creds,
                      nw_sigv4_result_t *out, nw_err_t *err)
{
    nw_buf_t canon, sh, sts;
    nw_rc_t rc;
    memset(out, 0, sizeof *out);
    if (!req->region || !*req->region)
        return nw_err_set(err, NW_EINVAL, "region", "region is required for signing");
    if (!req->service || !*req->service)
        return nw_err_set(err, NW_EINVAL, "service", "service is required for signing");
    if (!creds || !creds->access_key_id || !*creds->access_key_id || !creds->secret_access_key ||
        !*creds->secret_access_key)
        return nw_err_set(err, NW_EINVAL, "credentials", "no access key to sign with");

    struct tm tm;
    time_t t = (time_t)req->time_s;
    if (!gmtime_r(&t, &tm))
        return nw_err_set(err, NW_EINVAL, "time", "signing time out of range");
    strftime(out->amz_date, sizeof out->amz_date, "%Y%m%dT%H%M%SZ", &tm);
    char date8[9];
    memcpy(date8, out->amz_date, 8);
    date8[8] = 0;

    nw_buf_init(&canon, SIGV4_MAX_CANON);
    nw_buf_init(&sh, 4096);
    nw_buf_init(&sts, 4096);
    const char *tok = creds->session_token && *creds->session_token ? creds->session_token : NULL;
    rc = nw_sigv4_canonical_request(req, out->amz_date, tok, &canon, &sh, err);
    if (rc != NW_OK)
        goto out;
    char chash[65];
    nw_sigv4_sha256_hex(canon.data, canon.len, chash);
    rc = nw_buf_addf(&sts, "AWS4-HMAC-SHA256\n%s\n%s/%s/%s/aws4_request\n%s", out->amz_date, date8,
                     req->region, req->service, chash);
    if (rc != NW_OK)
        goto out;
    unsigned char key[32], sig[32];
    nw_sigv4_signing_key(creds->secret_access_key, date8, req->region, req->service, key);
    hmac(key, 32, nw_buf_str(&sts), sig);
    OPENSSL_cleanse(key, sizeof key);
    hex_encode(sig, 32, out->signature);
    int w = snprintf(out->authorization, sizeof out->authorization,
                     "AWS4-HMAC-SHA256 Credential=%s/%s/%s/%s/aws4_request, SignedHeaders=%s, "
                     "Signature=%s",
                     creds->access_key_id, date8, req->region, req->service, nw_buf_str(&sh),
                     out->signature);
    if (w < 0 || (size_t)w >= sizeof out->authorization) {
        rc = nw_err_set(err, NW_ERANGE, "headers", "Authorization header too long");
        goto out;
    }
    out->session_token = tok;
out:
    nw_buf_cleanup(&canon);
    nw_buf_cleanup(&sh);
    nw_buf_cleanup(&sts);
    return rc;
}
