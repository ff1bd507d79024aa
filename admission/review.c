/* admission/review.c — AdmissionReview v1 decode / dispatch / encode (see admission.h). */
#include "admission/review.h"

#include "api/kval.h"
#include "common/jsonarena.h"

#include <openssl/evp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OUT_MAX (64u << 20) /* bound on a response body */

static const char *const verdict_names[] = {"allowed", "patched", "denied", "bad_request", "error"};

const char *nw_review_verdict_str(nw_review_verdict_t v)
{
    return (unsigned)v < NW_SRV_VERDICT_COUNT ? verdict_names[v] : "unknown";
}

/* ---- decode -------------------------------------------------------------------- */

/* A string field: missing/null -> dflt (required: error); wrong type -> error. */
static NW_MUST_USE nw_rc_t get_str(const cJSON *obj, const char *key, const char *path,
                                   int required, const char *dflt, const char **out, nw_err_t *err)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!it || cJSON_IsNull(it)) {
        if (required)
            return nw_err_set(err, NW_EINVAL, path, "%s: required field is missing", path);
        *out = dflt;
        return NW_OK;
    }
    if (!cJSON_IsString(it) || !it->valuestring)
        return nw_err_set(err, NW_EINVAL, path, "%s: must be a string", path);
    *out = it->valuestring;
    return NW_OK;
}

static NW_MUST_USE nw_rc_t get_obj(const cJSON *obj, const char *key, const char *path,
                                   const cJSON **out, nw_err_t *err)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!it || cJSON_IsNull(it)) {
        *out = NULL;
        return NW_OK;
    }
    if (!cJSON_IsObject(it))
        return nw_err_set(err, NW_EINVAL, path, "%s: must be an object", path);
    *out = it;
    return NW_OK;
}

static NW_MUST_USE nw_rc_t decode_request(const cJSON *root, nw_admit_req_t *r, nw_err_t *err)
{
    nw_rc_t rc;
    if (!cJSON_IsObject(root))
        return nw_err_set(err, NW_EINVAL, "", "body: expected a JSON object (AdmissionReview)");
    const char *api, *kind;
    if ((rc = get_str(root, "apiVersion", "apiVersion", 1, NULL, &api, err)) != NW_OK)
        return rc;
    if (strcmp(api, NW_SRV_ADMISSION_API) != 0)
        return nw_err_set(err, NW_EINVAL, "apiVersion",
                          "apiVersion: unsupported \"%.100s\"; only " NW_SRV_ADMISSION_API
                          " is served (set admissionReviewVersions: [v1])",
                          api);
    if ((rc = get_str(root, "kind", "kind", 1, NULL, &kind, err)) != NW_OK)
        return rc;
    if (strcmp(kind, "AdmissionReview") != 0)
        return nw_err_set(err, NW_EINVAL, "kind", "kind: expected AdmissionReview, got \"%.100s\"",
                          kind);
    const cJSON *req = cJSON_GetObjectItemCaseSensitive(root, "request");
    if (!req || cJSON_IsNull(req))
        return nw_err_set(err, NW_EINVAL, "request", "request: required field is missing");
    if (!cJSON_IsObject(req))
        return nw_err_set(err, NW_EINVAL, "request", "request: must be an object");
    if ((rc = get_str(req, "uid", "request.uid", 1, NULL, &r->uid, err)) != NW_OK)
        return rc;
    if (!*r->uid)
        return nw_err_set(err, NW_EINVAL, "request.uid", "request.uid: must not be empty");
    for (const char *u = r->uid, *n; *u; u = n) /* echoed byte for byte: must be valid */
        if ((n = u + nw_buf_utf8_seq_len(u)) == u)
            return nw_err_set(err, NW_EINVAL, "request.uid", "request.uid: not valid UTF-8");

    const cJSON *k = cJSON_GetObjectItemCaseSensitive(req, "kind");
    if (!k || cJSON_IsNull(k))
        return nw_err_set(err, NW_EINVAL, "request.kind",
                          "request.kind: required field is missing");
    if (!cJSON_IsObject(k))
        return nw_err_set(err, NW_EINVAL, "request.kind", "request.kind: must be an object");
    if ((rc = get_str(k, "group", "request.kind.group", 0, "", &r->group, err)) != NW_OK ||
        (rc = get_str(k, "version", "request.kind.version", 0, "", &r->version, err)) != NW_OK ||
        (rc = get_str(k, "kind", "request.kind.kind", 1, NULL, &r->kind, err)) != NW_OK)
        return rc;
    if (!*r->kind)
        return nw_err_set(err, NW_EINVAL, "request.kind.kind",
                          "request.kind.kind: must not be empty");

    const cJSON *res;
    if ((rc = get_obj(req, "resource", "request.resource", &res, err)) != NW_OK)
        return rc;
    r->resource = "";
    if (res && (rc = get_str(res, "resource", "request.resource.resource", 0, "", &r->resource,
                             err)) != NW_OK)
        return rc;
    if ((rc = get_str(req, "subResource", "request.subResource", 0, "", &r->subresource, err)) !=
            NW_OK ||
        (rc = get_str(req, "name", "request.name", 0, "", &r->name, err)) != NW_OK ||
        (rc = get_str(req, "namespace", "request.namespace", 0, "", &r->namespace_, err)) != NW_OK)
        return rc;

    const char *op;
    if ((rc = get_str(req, "operation", "request.operation", 1, NULL, &op, err)) != NW_OK)
        return rc;
    if (strcmp(op, "CREATE") == 0)
        r->op = NW_OP_CREATE;
    else if (strcmp(op, "UPDATE") == 0)
        r->op = NW_OP_UPDATE;
    else if (strcmp(op, "DELETE") == 0)
        r->op = NW_OP_DELETE;
    else if (strcmp(op, "CONNECT") == 0)
        r->op = NW_OP_CONNECT;
    else
        return nw_err_set(err, NW_EINVAL, "request.operation",
                          "request.operation: expected CREATE, UPDATE, DELETE or CONNECT, got "
                          "\"%.40s\"",
                          op);

    if ((rc = get_obj(req, "object", "request.object", &r->object, err)) != NW_OK ||
        (rc = get_obj(req, "oldObject", "request.oldObject", &r->old_object, err)) != NW_OK)
        return rc;
    if ((r->op == NW_OP_CREATE || r->op == NW_OP_UPDATE) && !r->object)
        return nw_err_set(err, NW_EINVAL, "request.object", "request.object: required for %s", op);
    if (r->op == NW_OP_UPDATE && !r->old_object)
        return nw_err_set(err, NW_EINVAL, "request.oldObject",
                          "request.oldObject: required for UPDATE");

    const cJSON *dry = cJSON_GetObjectItemCaseSensitive(req, "dryRun");
    if (dry && !cJSON_IsNull(dry) && !cJSON_IsBool(dry))
        return nw_err_set(err, NW_EINVAL, "request.dryRun", "request.dryRun: must be a boolean");
    r->dry_run = dry && cJSON_IsTrue(dry);
    return NW_OK;
}

/* ---- NUL inside strings ------------------------------------------------------ */

/* cJSON ends a string at an escaped NUL (\u0000), so "t\u0000evil" would be
 * checked as "t". nul_scan walks the raw text (already parsed, so valid JSON) and
 * records the JSON path of the first string (key or value) holding one that is
 * judged, and whether request.uid holds one. */
typedef struct {
    char path[256];  /* scratch: the path being walked */
    char first[256]; /* the first string with a NUL; "" if none */
    int uid;         /* request.uid holds one */
} nul_found_t;

static const char *ws(const char *p, const char *e)
{
    while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

static const char *str_end(const char *p, const char *e, int *nul)
{
    for (p++; p < e; p++)
        if (*p == '\\') {
            *nul |= e - p >= 6 && memcmp(p + 1, "u0000", 5) == 0;
            p++;
        } else if (*p == '"')
            return p + 1;
    return e;
}

/* Strings nothing judges, or that the user cannot change: the stored object an
 * UPDATE replaces (denying would keep a NUL there for good), who asks, the options. */
static bool nul_ignored(const char *path)
{
    static const char *const skip[] = {"request.oldObject", "request.userInfo", "request.options"};
    for (size_t i = 0; i < sizeof skip / sizeof *skip; i++) {
        size_t n = strlen(skip[i]);
        if (strncmp(path, skip[i], n) == 0 && strchr(".[", path[n]))
            return true; /* strchr also matches the terminating NUL: the field itself */
    }
    return false;
}

static void nul_at(nul_found_t *f)
{
    if (!f->first[0] && !nul_ignored(f->path))
        memcpy(f->first, f->path, sizeof f->first);
    f->uid |= strcmp(f->path, "request.uid") == 0;
}

static void nul_scan(const char **pp, const char *e, size_t at, nul_found_t *f)
{
    const size_t cap = sizeof f->path;
    const char *p = ws(*pp, e);
    int nul = 0;
    if (p < e && *p == '"') {
        *pp = str_end(p, e, &nul);
        if (nul)
            nul_at(f);
        return;
    }
    if (p < e && (*p == '{' || *p == '[')) {
        bool obj = *p++ == '{';
        for (size_t idx = 0;; idx++) {
            p = ws(p, e);
            if (p >= e || *p == '}' || *p == ']')
                break;
            int n;
            nul = 0;
            if (obj) {
                const char *k = p;
                p = str_end(p, e, &nul);
                n = snprintf(f->path + at, cap - at, "%s%.*s", at ? "." : "", (int)(p - k - 2),
                             k + 1);
                p = ws(p, e);
                p += p < e && *p == ':';
            } else
                n = snprintf(f->path + at, cap - at, "[%zu]", idx);
            size_t next = n > 0 && at + (size_t)n < cap ? at + (size_t)n : cap - 1;
            if (nul)
                nul_at(f);
            nul_scan(&p, e, next, f);
            f->path[at] = '\0';
            p = ws(p, e);
            p += p < e && *p == ',';
        }
        *pp = p < e ? p + 1 : e;
        return;
    }
    while (p < e && !strchr(",}] \t\r\n", *p))
        p++;
    *pp = p;
}

/* The deepest nesting of arrays and objects in body (strings skipped). */
static size_t max_depth(const char *p, const char *e)
{
    size_t d = 0, max = 0;
    int nul = 0;
    while (p < e) {
        if (*p == '"') {
            p = str_end(p, e, &nul);
            continue;
        }
        if (*p == '{' || *p == '[')
            max = ++d > max ? d : max;
        else if ((*p == '}' || *p == ']') && d)
            d--;
        p++;
    }
    return max;
}

/* Whether the text has an escaped NUL ("\\u0000") anywhere: memchr to each backslash
 * (reviews have few) is several times cheaper than memmem over the whole body. A hit
 * inside a longer escape ("\\\\u0000") is only a false alarm for nul_scan to clear. */
static bool may_hold_nul(const char *b, size_t len)
{
    const char *p = b, *end = b + len;
    while ((p = memchr(p, '\\', (size_t)(end - p))) != NULL) {
        if ((size_t)(end - p) >= 6 && memcmp(p, "\\u0000", 6) == 0)
            return true;
        p++;
    }
    return false;
}

nw_rc_t nw_review_decode(const char *body, size_t len, nw_review_t *rv, nw_err_t *err)
{
    memset(rv, 0, sizeof *rv);
    if (len == 0)
        return nw_err_set(err, NW_EPARSE, "", "body: empty; expected an AdmissionReview");
    if (memchr(body, '\0', len))
        return nw_err_set(err, NW_EPARSE, "", "body: contains a NUL byte; not JSON");
    /* Parse within len (the body need not be NUL-terminated), then allow only
     * whitespace after the value. */
    const char *end = NULL;
    rv->root = cJSON_ParseWithLengthOpts(body, len, &end, 0);
    if (!rv->root && max_depth(body, body + len) > CJSON_NESTING_LIMIT)
        return nw_err_set(err, NW_EPARSE, "",
                          "body: JSON nested deeper than %d levels of arrays and objects (the "
                          "parser's limit)",
                          CJSON_NESTING_LIMIT);
    if (!rv->root)
        return nw_err_set(err, NW_EPARSE, "", "body: malformed JSON (not an AdmissionReview)");
    for (const char *p = end ? end : body + len; p < body + len; p++)
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
            nw_review_cleanup(rv);
            return nw_err_set(err, NW_EPARSE, "", "body: unexpected data after the JSON value");
        }
    nw_rc_t rc = decode_request(rv->root, &rv->req, err);
    if (rc != NW_OK) {
        nw_review_cleanup(rv);
        return rc;
    }
    const char *p = body;
    nul_found_t f = {.path = "", .first = "", .uid = 0};
    if (may_hold_nul(body, len))
        nul_scan(&p, body + len, 0, &f);
    if (f.uid) { /* it could not be echoed as sent (kube-apiserver sends a UUID) */
        nw_review_cleanup(rv);
        return nw_err_set(err, NW_EINVAL, "request.uid",
                          "request.uid: contains a NUL character (\\u0000)");
    }
    memcpy(rv->nul_field, f.first, sizeof rv->nul_field);
    return NW_OK;
}

void nw_review_cleanup(nw_review_t *rv)
{
    if (!rv)
        return;
    /* decode parsed the review inside the admission arena (nw_review_handle) and
     * the handlers only read it: the arena's end drops it without a walk */
    if (!nw_jsonarena_owns(rv->root))
        cJSON_Delete(rv->root);
    memset(rv, 0, sizeof *rv);
}

/* ---- encode -------------------------------------------------------------------- */

static NW_MUST_USE nw_rc_t add_jstr(nw_buf_t *b, const char *s)
{
    nw_rc_t rc;
    if ((rc = nw_buf_add(b, "\"", 1)) || (rc = nw_buf_add_json_escaped(b, s ? s : "")) ||
        (rc = nw_buf_add(b, "\"", 1)))
        return rc;
    return NW_OK;
}

/* A warning with control characters (which the apiserver would drop) replaced. */
static NW_MUST_USE nw_rc_t add_warning(nw_buf_t *b, const char *w)
{
    size_t n = strlen(w);
    char *c = malloc(n + 1);
    if (!c)
        return NW_ENOMEM;
    for (size_t i = 0; i <= n; i++) {
        unsigned char ch = (unsigned char)w[i];
        c[i] = (i < n && (ch < 0x20 || ch == 0x7f)) ? ' ' : (char)ch;
    }
    nw_rc_t rc = add_jstr(b, c);
    free(c);
    return rc;
}

nw_rc_t nw_review_encode(const char *uid, int mutate, const nw_admit_result_t *res, nw_buf_t *out)
{
    nw_rc_t rc;
    /* Check the patch first: emitting an undecodable patch is a call failure. */
    cJSON *patch = NULL;
    if (mutate && res->allowed && res->patch) {
        size_t plen = strlen(res->patch);
        patch = cJSON_ParseWithLengthOpts(res->patch, plen + 1, NULL, 1);
        if (!patch || !cJSON_IsArray(patch)) {
            cJSON_Delete(patch);
            return NW_EINVAL;
        }
    }
    bool with_patch = patch && cJSON_GetArraySize(patch) > 0;
    cJSON_Delete(patch);

#define ADD(s) ((rc = nw_buf_adds(out, (s))) != NW_OK)
    if (ADD("{\"apiVersion\":\"" NW_SRV_ADMISSION_API
            "\",\"kind\":\"AdmissionReview\",\"response\":{\"uid\":") ||
        (rc = add_jstr(out, uid)) || ADD(res->allowed ? ",\"allowed\":true" : ",\"allowed\":false"))
        return rc;
    if (!res->allowed) {
        int code = res->code >= 400 && res->code <= 599 ? res->code : 403;
        if ((rc = nw_buf_addf(out, ",\"status\":{\"status\":\"Failure\",\"code\":%d", code)))
            return rc;
        if (res->reason && (ADD(",\"reason\":") || (rc = add_jstr(out, res->reason))))
            return rc;
        if (res->message && (ADD(",\"message\":") || (rc = add_jstr(out, res->message))))
            return rc;
        if (res->details) {
            char *d = cJSON_PrintUnformatted(res->details);
            if (!d)
                return NW_ENOMEM;
            rc = ADD(",\"details\":") ? rc : nw_buf_add_utf8(out, d);
            cJSON_free(d);
            if (rc)
                return rc;
        }
        if (ADD("}"))
            return rc;
    }
    if (with_patch) {
        size_t plen = strlen(res->patch);
        size_t blen = 4 * ((plen + 2) / 3);
        unsigned char *b64 = malloc(blen + 1);
        if (!b64)
            return NW_ENOMEM;
        EVP_EncodeBlock(b64, (const unsigned char *)res->patch, (int)plen);
        if (ADD(",\"patchType\":\"JSONPatch\",\"patch\":\"") || (rc = nw_buf_add(out, b64, blen)) ||
            ADD("\"")) {
            free(b64);
            return rc;
        }
        free(b64);
    }
    if (res->nwarnings) {
        if (ADD(",\"warnings\":["))
            return rc;
        for (size_t i = 0; i < res->nwarnings && i < NW_ADMIT_MAX_WARNINGS; i++)
            if ((i && ADD(",")) ||
                (rc = add_warning(out, res->warnings[i] ? res->warnings[i] : "")))
                return rc;
        if (ADD("]"))
            return rc;
    }
    if (ADD("}}"))
        return rc;
#undef ADD
    return NW_OK;
}

nw_rc_t nw_review_status_json(nw_buf_t *out, int code, const char *reason, const char *message)
{
    nw_rc_t rc;
    if ((rc = nw_buf_adds(out, "{\"apiVersion\":\"v1\",\"kind\":\"Status\",\"status\":\"Failure\","
                               "\"message\":")) ||
        (rc = add_jstr(out, message)) || (rc = nw_buf_adds(out, ",\"reason\":")) ||
        (rc = add_jstr(out, reason)) || (rc = nw_buf_addf(out, ",\"code\":%d}", code)))
        return rc;
    return NW_OK;
}

/* ---- the whole path ------------------------------------------------------------ */

/* src into dst[n], truncated and NUL-terminated (runs five times per review: no printf) */
static void copy(char *dst, size_t n, const char *src)
{
    size_t k = src ? strnlen(src, n - 1) : 0;
    memcpy(dst, src ? src : "", k);
    dst[k] = '\0';
}

static NW_MUST_USE nw_rc_t finish(nw_review_out_t *out, nw_buf_t *b, int status)
{
    out->status = status;
    out->body_len = b->len;
    out->body = nw_buf_take(b);
    nw_buf_cleanup(b);
    return out->body ? NW_OK : NW_ENOMEM;
}

static NW_MUST_USE nw_rc_t fail(nw_review_out_t *out, int status, nw_review_verdict_t v,
                                const char *reason, const char *msg)
{
    nw_buf_t b;
    nw_buf_init(&b, OUT_MAX);
    out->verdict = v;
    copy(out->why, sizeof out->why, msg);
    nw_rc_t rc = nw_review_status_json(&b, status, reason, msg);
    if (rc != NW_OK) {
        nw_buf_cleanup(&b);
        return NW_ENOMEM;
    }
    return finish(out, &b, status);
}

/* A string holding a NUL is refused as kube-apiserver refuses an invalid field:
 * a 422 denial naming it (relative to the object when it is in request.object). */
static NW_MUST_USE nw_rc_t deny_nul(const nw_admit_req_t *r, const char *where,
                                    nw_admit_result_t *res)
{
    static const char obj[] = "request.object.";
    const char *field = strncmp(where, obj, sizeof obj - 1) == 0 ? where + sizeof obj - 1 : where;
    nw_kv_t kv;
    nw_kval_init(&kv);
    nw_kval_add(&kv, NW_KV_INVALID, false, field,
                "Invalid value: contains a NUL character (\\u0000): refused, as the rules would "
                "see only the part before it");
    nw_rc_t rc = nw_kval_finish(&kv, r->kind, r->group, nw_admit_object_name(r), res);
    nw_kval_cleanup(&kv);
    return rc;
}

#define TIMEOUT_MSG                                                                                \
    "the request's time budget (?timeout= or webhook.requestTimeout) ran out while it was "        \
    "being judged; no verdict"

static const char *const op_names[] = {"CREATE", "UPDATE", "DELETE", "CONNECT"};

static NW_MUST_USE nw_rc_t handle(const nw_admit_ctx_t *ctx, nw_srv_lookup_fn lookup, int mutate,
                                  const char *body, size_t len, nw_review_out_t *out)
{
    memset(out, 0, sizeof *out);
    nw_err_t err = {0};
    nw_review_t rv;
    nw_rc_t rc = nw_review_decode(body, len, &rv, &err);
    if (rc == NW_ENOMEM)
        return rc;
    if (rc != NW_OK)
        return fail(out, 400, NW_SRV_VERDICT_BAD_REQUEST, "BadRequest", err.msg);

    const nw_admit_req_t *r = &rv.req;
    copy(out->uid, sizeof out->uid, r->uid);
    if (nw_admit_deadline_passed()) {
        nw_review_cleanup(&rv);
        return fail(out, 504, NW_SRV_VERDICT_ERROR, "Timeout", TIMEOUT_MSG);
    }
    copy(out->group, sizeof out->group, r->group);
    copy(out->kind, sizeof out->kind, r->kind);
    copy(out->name, sizeof out->name, r->name);
    copy(out->op, sizeof out->op, op_names[r->op]);

    const nw_admit_handler_t *h = (lookup ? lookup : nw_handlers_find)(r->group, r->kind);
    nw_admit_fn fn = h ? (mutate ? h->mutate : h->validate) : NULL;
    nw_admit_result_t res;
    nw_admit_result_init(&res);
    if (rv.nul_field[0]) {
        rc = deny_nul(r, rv.nul_field, &res);
        if (rc != NW_OK) {
            nw_admit_result_cleanup(&res);
            nw_review_cleanup(&rv);
            return rc;
        }
    } else if (fn) {
        rc = fn(ctx, r, &res);
        if (rc != NW_OK) {
            nw_admit_result_cleanup(&res);
            nw_review_cleanup(&rv);
            if (rc == NW_ENOMEM)
                return rc;
            char msg[200];
            snprintf(msg, sizeof msg, "admission handler for %s failed: %s", out->kind,
                     nw_err_rc_str(rc));
            return fail(out, 500, NW_SRV_VERDICT_ERROR, "InternalError", msg);
        }
    }
    nw_buf_t b;
    nw_buf_init(&b, OUT_MAX);
    rc = nw_review_encode(r->uid, mutate, &res, &b);
    if (rc == NW_OK) {
        if (!res.allowed) {
            out->verdict = NW_SRV_VERDICT_DENIED;
            copy(out->why, sizeof out->why, res.message ? res.message : res.reason);
        } else {
            /* encode wrote a patch iff the response carries "patchType" */
            out->verdict = mutate && res.patch && strstr(nw_buf_str(&b), "\"patchType\":")
                               ? NW_SRV_VERDICT_PATCHED
                               : NW_SRV_VERDICT_ALLOWED;
        }
        if (!mutate && res.patch)
            copy(out->why, sizeof out->why, "validate handler returned a patch; dropped");
    }
    nw_admit_result_cleanup(&res);
    nw_review_cleanup(&rv);
    if (rc == NW_OK && nw_admit_deadline_passed()) { /* the rules stopped early: no verdict */
        nw_buf_cleanup(&b);
        return fail(out, 504, NW_SRV_VERDICT_ERROR, "Timeout", TIMEOUT_MSG);
    }
    if (rc == NW_OK)
        return finish(out, &b, 200);
    nw_buf_cleanup(&b);
    if (rc == NW_ENOMEM)
        return rc;
    char msg[200];
    snprintf(msg, sizeof msg, "admission handler for %s produced an invalid response: %s",
             out->kind, rc == NW_EINVAL ? "patch is not a JSON array" : nw_err_rc_str(rc));
    return fail(out, 500, NW_SRV_VERDICT_ERROR, "InternalError", msg);
}

void nw_review_out_cleanup(nw_review_out_t *out)
{
    if (!out)
        return;
    free(out->body);
    out->body = NULL;
    out->body_len = 0;
}

nw_rc_t nw_review_handle(const nw_admit_ctx_t *ctx, nw_srv_lookup_fn lookup, int mutate,
                         const char *body, size_t len, nw_review_out_t *out)
{
    /* every cJSON tree of one review lives and dies inside this call: out holds only
     * malloc'd memory (nw_buf), so the whole review can allocate from the arena */
    nw_jsonarena_begin();
    nw_rc_t rc = handle(ctx, lookup, mutate, body, len, out);
    nw_jsonarena_end();
    return rc;
}
