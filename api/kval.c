/* api/kval.c — kube-apiserver-style validation error list and helpers. */
#include "api/kval.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/json.h"

void nw_kval_init(nw_kv_t *kv)
{
    memset(kv, 0, sizeof *kv);
}

void nw_kval_cleanup(nw_kv_t *kv)
{
    if (!kv)
        return;
    for (size_t i = 0; i < kv->n; i++) {
        free(kv->v[i].field);
        free(kv->v[i].body);
    }
    free(kv->v);
    nw_kval_init(kv);
}

void nw_kval_add(nw_kv_t *kv, nw_kv_type_t type, bool cel, const char *field, const char *fmt, ...)
{
    if (kv->n == kv->cap) {
        size_t nc = kv->cap ? kv->cap * 2 : 8;
        nw_kv_err_t *nv = realloc(kv->v, nc * sizeof *nv);
        if (!nv) {
            kv->oom = true;
            return;
        }
        kv->v = nv;
        kv->cap = nc;
    }
    va_list ap;
    va_start(ap, fmt);
    char *body = NULL;
    int r = vasprintf(&body, fmt, ap);
    va_end(ap);
    char *f = strdup(field);
    if (r < 0 || !f) {
        if (r >= 0)
            free(body);
        free(f);
        kv->oom = true;
        return;
    }
    kv->v[kv->n++] = (nw_kv_err_t){type, cel, f, body};
    // cppcheck-suppress memleak ; f and body moved into kv->v, freed by nw_kval_cleanup
}

static const char *reason_of(nw_kv_type_t t)
{
    switch (t) {
    case NW_KV_REQUIRED:
        return "FieldValueRequired";
    case NW_KV_NOTSUPPORTED:
        return "FieldValueNotSupported";
    case NW_KV_INVALID:
        return "FieldValueInvalid";
    case NW_KV_TOOLONG:
        return "FieldValueTooLong";
    case NW_KV_TOOMANY:
        return "FieldValueTooMany";
    case NW_KV_TYPE:
        return "FieldValueTypeInvalid";
    case NW_KV_DUPLICATE:
        return "FieldValueDuplicate";
    }
    return "FieldValueInvalid";
}

#define GATE_FIELD "<nil>"
#define GATE_BODY                                                                                  \
    "Invalid value: null: some validation rules were not checked because the object was "          \
    "invalid; correct the existing errors to complete validation"

/* The lines kept so far, as a hash set of their indices (a review with 100,000 bad
 * taints has 100,000 lines: comparing each with all before it took minutes). */
typedef struct {
    size_t *slot; /* index + 1; 0 = empty */
    size_t mask;
} seen_t;

static bool seen_init(seen_t *s, size_t n)
{
    size_t cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    s->mask = cap - 1;
    s->slot = calloc(cap, sizeof *s->slot);
    return s->slot != NULL;
}

/* true if l is among lines[slot - 1]; otherwise records it as index i */
static bool seen_add(seen_t *s, char **lines, const char *l, size_t i)
{
    size_t h = 1469598103934665603u; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)l; *p; p++)
        h = (h ^ *p) * 1099511628211u;
    for (size_t k = h & s->mask;; k = (k + 1) & s->mask) {
        if (!s->slot[k]) {
            s->slot[k] = i + 1;
            return false;
        }
        if (strcmp(lines[s->slot[k] - 1], l) == 0)
            return true;
    }
}

size_t nw_kval_lines(const nw_kv_t *kv, char ***out, nw_kv_err_t **errs)
{
    *out = NULL;
    if (errs)
        *errs = NULL;
    bool gate = false;
    size_t nschema = 0;
    for (size_t i = 0; i < kv->n; i++) {
        if (kv->v[i].cel)
            continue;
        nschema++;
        nw_kv_type_t t = kv->v[i].type;
        if (t == NW_KV_REQUIRED || t == NW_KV_NOTSUPPORTED || t == NW_KV_TOOLONG ||
            t == NW_KV_TOOMANY || t == NW_KV_TYPE)
            gate = true;
    }
    size_t max = kv->n + 1;
    char **lines = calloc(max, sizeof *lines);
    nw_kv_err_t *ev = calloc(max, sizeof *ev);
    seen_t seen;
    if (!lines || !ev || !seen_init(&seen, max)) {
        free(lines);
        free(ev);
        return 0;
    }
    size_t n = 0;
    for (int pass = 0; pass < 3; pass++) {
        for (size_t i = 0; i < kv->n + (pass == 2); i++) {
            nw_kv_err_t e;
            if (pass == 2) {
                if (!gate || i != kv->n)
                    continue;
                e = (nw_kv_err_t){NW_KV_INVALID, false, (char *)GATE_FIELD, (char *)GATE_BODY};
            } else {
                if (i >= kv->n)
                    continue;
                e = kv->v[i];
                if (pass == 0 && e.cel)
                    continue;
                if (pass == 1 && (!e.cel || gate))
                    continue;
            }
            char *l = NULL;
            if (asprintf(&l, "%s: %s", e.field, e.body) < 0)
                continue;
            if (seen_add(&seen, lines, l, n)) { /* an exact duplicate */
                free(l);
                continue;
            }
            lines[n] = l;
            ev[n] = e;
            n++;
        }
    }
    (void)nschema;
    free(seen.slot);
    if (n == 0) {
        free(lines);
        free(ev);
        return 0;
    }
    *out = lines;
    if (errs)
        *errs = ev;
    else
        free(ev);
    return n;
}

void nw_kval_lines_free(char **lines, nw_kv_err_t *errs, size_t n)
{
    if (lines)
        for (size_t i = 0; i < n; i++)
            free(lines[i]);
    free(lines);
    free(errs); /* fields/bodies are borrowed from the nw_kv_t */
}

nw_rc_t nw_kval_finish(const nw_kv_t *kv, const char *kind, const char *group, const char *name,
                       nw_admit_result_t *res)
{
    if (kv->oom)
        return NW_ENOMEM;
    char **lines = NULL;
    nw_kv_err_t *errs = NULL;
    size_t n = nw_kval_lines(kv, &lines, &errs);
    if (n == 0)
        return NW_OK;
    nw_buf_t b;
    nw_buf_init(&b, (size_t)4 << 20);
    /* `Pod "x"` for the core group, `NodePool.karpenter.sh "x"` otherwise */
    nw_rc_t rc = nw_buf_addf(&b, "%s%s%s \"%s\" is invalid: %s", kind, *group ? "." : "", group,
                             name ? name : "", n > 1 ? "[" : "");
    size_t shown = n < NW_KV_MAX_SHOWN ? n : NW_KV_MAX_SHOWN;
    for (size_t i = 0; i < shown && rc == NW_OK; i++)
        rc = nw_buf_addf(&b, "%s%s", i ? ", " : "", lines[i]);
    if (rc == NW_OK && shown < n)
        rc = nw_buf_addf(&b, ", and %zu more errors not shown", n - shown);
    if (rc == NW_OK && n > 1)
        rc = nw_buf_adds(&b, "]");
    cJSON *details = cJSON_CreateObject();
    cJSON *causes = details ? cJSON_AddArrayToObject(details, "causes") : NULL;
    if (!details || !causes || !cJSON_AddStringToObject(details, "name", name ? name : "") ||
        !cJSON_AddStringToObject(details, "group", group) ||
        !cJSON_AddStringToObject(details, "kind", kind))
        rc = NW_ENOMEM;
    for (size_t i = 0; i < shown && rc == NW_OK; i++) {
        cJSON *c = cJSON_CreateObject();
        if (!c || !cJSON_AddStringToObject(c, "reason", reason_of(errs[i].type)) ||
            !cJSON_AddStringToObject(c, "message", errs[i].body) ||
            !cJSON_AddStringToObject(c, "field", errs[i].field)) {
            cJSON_Delete(c);
            rc = NW_ENOMEM;
            break;
        }
        cJSON_AddItemToArray(causes, c);
    }
    nw_kval_lines_free(lines, errs, n);
    char *msg = rc == NW_OK ? nw_buf_take(&b) : NULL;
    char *reason = rc == NW_OK ? strdup("Invalid") : NULL;
    nw_buf_cleanup(&b);
    if (rc != NW_OK || !msg || !reason) {
        free(msg);
        free(reason);
        cJSON_Delete(details);
        return NW_ENOMEM;
    }
    free(res->message);
    free(res->reason);
    cJSON_Delete(res->details);
    res->allowed = 0;
    res->code = 422;
    res->reason = reason;
    res->message = msg;
    res->details = details;
    return NW_OK;
}

/* ---- paths ----------------------------------------------------------------------- */

/* Append n bytes of s at out[*at], keeping out a NUL-terminated string of at most
 * NW_KV_PATH_MAX - 1 bytes (truncated like snprintf would). Paths are built for every
 * field the validators visit, errors or not: memcpy, not a printf. */
static void path_put(char *out, size_t *at, const char *s, size_t n)
{
    size_t room = NW_KV_PATH_MAX - 1 - *at;
    if (n > room)
        n = room;
    memcpy(out + *at, s, n);
    *at += n;
    out[*at] = '\0';
}

/* out = parent (moved or copied; parent may be out itself) */
static size_t path_start(char *out, const char *parent)
{
    size_t n = parent ? strlen(parent) : 0;
    if (n > NW_KV_PATH_MAX - 1)
        n = NW_KV_PATH_MAX - 1;
    if (parent != out)
        memmove(out, parent ? parent : "", n);
    out[n] = '\0';
    return n;
}

const char *nw_kval_path(char *out, const char *parent, const char *name)
{
    size_t at = path_start(out, parent);
    if (at)
        path_put(out, &at, ".", 1);
    path_put(out, &at, name, strlen(name));
    return out;
}

const char *nw_kval_idx(char *out, const char *parent, size_t i)
{
    char num[24];
    size_t k = sizeof num;
    do
        num[--k] = (char)('0' + i % 10);
    while ((i /= 10) && k > 1);
    size_t at = path_start(out, parent);
    path_put(out, &at, "[", 1);
    path_put(out, &at, num + k, sizeof num - k);
    path_put(out, &at, "]", 1);
    return out;
}

const char *nw_kval_key(char *out, const char *parent, const char *key)
{
    size_t at = path_start(out, parent);
    path_put(out, &at, ".", 1);
    path_put(out, &at, key, strlen(key));
    return out;
}

/* ---- access and scalar checks ---------------------------------------------------- */

const cJSON *nw_kval_get(const cJSON *obj, const char *name)
{
    if (!cJSON_IsObject(obj))
        return NULL;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    if (!v || cJSON_IsNull(v))
        return NULL;
    return v;
}

const char *nw_kval_jtype(const cJSON *v)
{
    if (cJSON_IsString(v))
        return "string";
    if (cJSON_IsNumber(v))
        return (isfinite(v->valuedouble) && v->valuedouble == floor(v->valuedouble)) ? "integer"
                                                                                     : "number";
    if (cJSON_IsBool(v))
        return "boolean";
    if (cJSON_IsObject(v))
        return "object";
    if (cJSON_IsArray(v))
        return "array";
    return "null";
}

bool nw_kval_type(nw_kv_t *kv, const char *path, const cJSON *v, const char *type)
{
    const char *got = nw_kval_jtype(v);
    if (strcmp(got, type) == 0)
        return true;
    nw_kval_add(kv, NW_KV_TYPE, false, path,
                "Invalid value: \"%s\": %s in body must be of type %s: \"%s\"", got, path, type,
                got);
    return false;
}

void nw_kval_required(nw_kv_t *kv, const char *parent, const char *name)
{
    char p[NW_KV_PATH_MAX];
    nw_kval_add(kv, NW_KV_REQUIRED, false, nw_kval_path(p, parent, name), "Required value");
}

const char *nw_kval_quote(char *out, size_t cap, const char *s)
{
    size_t k = 0;
    if (cap < 8) {
        if (cap)
            out[0] = 0;
        return out;
    }
    out[k++] = '"';
    for (const unsigned char *p = (const unsigned char *)s; *p && k + 6 < cap; p++) {
        unsigned char c = *p;
        const char *esc = NULL;
        switch (c) {
        case '"':
            esc = "\\\"";
            break;
        case '\\':
            esc = "\\\\";
            break;
        case '\n':
            esc = "\\n";
            break;
        case '\t':
            esc = "\\t";
            break;
        case '\r':
            esc = "\\r";
            break;
        case '\a':
            esc = "\\a";
            break;
        case '\b':
            esc = "\\b";
            break;
        case '\f':
            esc = "\\f";
            break;
        case '\v':
            esc = "\\v";
            break;
        default:
            break;
        }
        if (esc) {
            size_t l = strlen(esc);
            memcpy(out + k, esc, l);
            k += l;
        } else if (c < 0x20 || c == 0x7f) {
            k += (size_t)snprintf(out + k, cap - k, "\\x%02x", c);
        } else {
            out[k++] = (char)c;
        }
    }
    out[k++] = '"';
    out[k] = 0;
    return out;
}

bool nw_kval_enum(nw_kv_t *kv, const char *path, const char *s, const char *const *allowed)
{
    for (const char *const *a = allowed; *a; a++)
        if (strcmp(s, *a) == 0)
            return true;
    nw_buf_t b;
    nw_buf_init(&b, 4096);
    char q[512];
    int ok = 1;
    for (const char *const *a = allowed; *a && ok; a++)
        ok = nw_buf_addf(&b, "%s%s", a == allowed ? "" : ", ", nw_kval_quote(q, sizeof q, *a)) ==
             NW_OK;
    nw_kval_add(kv, NW_KV_NOTSUPPORTED, false, path, "Unsupported value: %s: supported values: %s",
                nw_kval_quote(q, sizeof q, s), nw_buf_str(&b));
    nw_buf_cleanup(&b);
    return false;
}

void nw_kval_int_range(nw_kv_t *kv, const char *path, double v, long long min, long long max)
{
    if (min != LLONG_MIN && v < (double)min)
        nw_kval_add(kv, NW_KV_INVALID, false, path,
                    "Invalid value: %.0f: %s in body should be greater than or equal to %lld", v,
                    path, min);
    if (max != LLONG_MAX && v > (double)max)
        nw_kval_add(kv, NW_KV_INVALID, false, path,
                    "Invalid value: %.0f: %s in body should be less than or equal to %lld", v, path,
                    max);
}

size_t nw_kval_strlen(const char *s)
{
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if ((*p & 0xC0) != 0x80)
            n++;
    return n;
}

/* A string schema stops at its first failure: maxLength, minLength, then pattern
 * (k8s.io/kube-openapi pkg/validation/validate/validator.go, stringValidator), so the
 * callers check the pattern only when these return true. */
bool nw_kval_max_len(nw_kv_t *kv, const char *path, const char *s, size_t max)
{
    if (nw_kval_strlen(s) <= max)
        return true;
    nw_kval_add(kv, NW_KV_TOOLONG, false, path, "Too long: may not be more than %zu bytes", max);
    return false;
}

bool nw_kval_min_len(nw_kv_t *kv, const char *path, const char *s, size_t min)
{
    char q[600];
    if (nw_kval_strlen(s) >= min)
        return true;
    nw_kval_add(kv, NW_KV_INVALID, false, path,
                "Invalid value: %s: %s in body should be at least %zu chars long",
                nw_kval_quote(q, sizeof q, s), path, min);
    return false;
}

void nw_kval_max_items(nw_kv_t *kv, const char *path, const cJSON *arr, int max)
{
    int n = cJSON_GetArraySize(arr);
    if (n > max)
        nw_kval_add(kv, NW_KV_TOOMANY, false, path, "Too many: %d: must have at most %d items", n,
                    max);
}

void nw_kval_min_items(nw_kv_t *kv, const char *path, const cJSON *arr, int min)
{
    int n = cJSON_GetArraySize(arr);
    if (n < min)
        nw_kval_add(kv, NW_KV_INVALID, false, path,
                    "Invalid value: %d: %s in body should have at least %d items", n, path, min);
}

/* ---- patterns ------------------------------------------------------------------------ */

bool nw_kval_re_compile(nw_kv_re_t *res, size_t n)
{
    bool all = true;
    for (size_t i = 0; i < n; i++) {
        res[i].ok = regcomp(&res[i].rx, res[i].posix, REG_EXTENDED | REG_NOSUB) == 0;
        all = all && res[i].ok;
    }
    return all;
}

bool nw_kval_re_match_posix(const nw_kv_re_t *re, const char *s)
{
    return re->ok && regexec(&re->rx, s, 0, NULL, 0) == 0;
}

bool nw_kval_re_match(const nw_kv_re_t *re, const char *s)
{
    return re->direct ? re->direct(s) : nw_kval_re_match_posix(re, s);
}

bool nw_kval_pattern(nw_kv_t *kv, const char *path, const char *s, const nw_kv_re_t *re)
{
    if (nw_kval_re_match(re, s))
        return true;
    char q[1200];
    nw_kval_add(kv, NW_KV_INVALID, false, path, "Invalid value: %s: %s in body should match '%s'",
                nw_kval_quote(q, sizeof q, s), path, re->re2);
    return false;
}

/* Kubernetes 1.35 (k8s.io/apiextensions-apiserver pkg/apiserver/schema/cel/validation.go):
 * a rule that evaluates to false on an object or an array omits the value; on a scalar
 * the value itself is shown (field.Error.ErrorBody: a string %q-quoted). */
void nw_kval_cel(nw_kv_t *kv, const char *path, const char *type, const char *msg)
{
    if (strcmp(type, "object") == 0 || strcmp(type, "array") == 0)
        nw_kval_add(kv, NW_KV_INVALID, true, path, "Invalid value: %s", msg);
    else
        nw_kval_add(kv, NW_KV_INVALID, true, path, "Invalid value: \"%s\": %s", type, msg);
}

void nw_kval_cel_str(nw_kv_t *kv, const char *path, const char *value, const char *msg)
{
    char q[NW_KV_PATH_MAX];
    nw_kval_add(kv, NW_KV_INVALID, true, path, "Invalid value: %s: %s",
                nw_kval_quote(q, sizeof q, value), msg);
}

void nw_kval_cel_eval(nw_kv_t *kv, const char *path, const char *type, const char *err,
                      const char *msg)
{
    nw_kval_add(kv, NW_KV_INVALID, true, path, "Invalid value: \"%s\": %s evaluating rule: %s",
                type, err, msg);
}

bool nw_kval_cel_int(const char *s, long long *out)
{
    const char *p = s;
    if (*p == '+' || *p == '-')
        p++;
    if (!*p)
        return false;
    for (const char *c = p; *c; c++)
        if (*c < '0' || *c > '9')
            return false;
    errno = 0;
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    if (errno == ERANGE || *end)
        return false;
    *out = v;
    return true;
}

/* ---- typed members, as the API server words its type errors ---- */

/* Optional string member: absent or null -> def; a non-string is an error. */
nw_rc_t nw_kval_str_member(const cJSON *obj, const char *name, const char *base, const char *def,
                           const char **out, nw_err_t *err)
{
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(obj, name);
    if (!j || cJSON_IsNull(j)) {
        *out = def;
        return NW_OK;
    }
    if (!cJSON_IsString(j) || !j->valuestring) {
        char p[128];
        snprintf(p, sizeof p, "%s.%s", base, name);
        return nw_err_set(err, NW_EINVAL, p, "Invalid value: \"%s\": %s must be of type string",
                          nw_json_type_name(j), p);
    }
    *out = j->valuestring;
    return NW_OK;
}

nw_rc_t nw_kval_array(const cJSON *arr, const char *path, nw_err_t *err)
{
    if (!cJSON_IsArray(arr))
        return nw_err_set(err, NW_EINVAL, path, "Invalid value: \"%s\": %s must be of type array",
                          nw_json_type_name(arr), path);
    return NW_OK;
}
