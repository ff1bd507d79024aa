/*
 * api/resources.c — resource lists as small sorted arrays of (name, quantity).
 */
#include "api/resources.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Names interned as static strings: no allocation for the usual keys.
 * Sorted for bsearch. */
static const char *const well_known[] = {
    "amd.com/gpu",
    "aws.amazon.com/neuron",
    "aws.amazon.com/neuroncore",
    "aws.amazon.com/neurondevice",
    "cpu",
    "ephemeral-storage",
    "hugepages-1Gi",
    "hugepages-2Mi",
    "memory",
    "nvidia.com/gpu",
    "pods",
    "vpc.amazonaws.com/efa",
    "vpc.amazonaws.com/pod-eni",
};

static int cmp_name(const void *key, const void *elem)
{
    return strcmp((const char *)key, *(const char *const *)elem);
}

static const char *intern(const char *name)
{
    const char *const *p = bsearch(name, well_known, sizeof well_known / sizeof well_known[0],
                                   sizeof well_known[0], cmp_name);
    return p ? *p : NULL;
}

static nw_res_entry_t *entries(nw_resources_t *r)
{
    return r->heap ? r->heap : r->inl;
}

static const nw_res_entry_t *centries(const nw_resources_t *r)
{
    return r->heap ? r->heap : r->inl;
}

static nw_quantity_t entry_q(const nw_res_entry_t *e)
{
    nw_quantity_t q = {e->milli, (nw_quantity_format_t)e->format};
    return q;
}

void nw_resources_init(nw_resources_t *r)
{
    memset(r, 0, sizeof *r);
}

void nw_resources_cleanup(nw_resources_t *r)
{
    if (!r)
        return;
    nw_res_entry_t *e = entries(r);
    for (uint32_t i = 0; i < r->n; i++)
        if (e[i].owned)
            free((char *)e[i].name);
    free(r->heap);
    memset(r, 0, sizeof *r);
}

size_t nw_resources_len(const nw_resources_t *r)
{
    return r->n;
}

const char *nw_resources_name_at(const nw_resources_t *r, size_t i)
{
    return i < r->n ? centries(r)[i].name : NULL;
}

nw_quantity_t nw_resources_at(const nw_resources_t *r, size_t i)
{
    nw_quantity_t zero = {0, NW_QTY_DECIMAL_SI};
    return i < r->n ? entry_q(&centries(r)[i]) : zero;
}

/* Index of name, or -(insertion point) - 1. */
static long find(const nw_resources_t *r, const char *name)
{
    const nw_res_entry_t *e = centries(r);
    long lo = 0, hi = (long)r->n - 1;
    while (lo <= hi) {
        long mid = lo + (hi - lo) / 2;
        int c = strcmp(e[mid].name, name);
        if (c == 0)
            return mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -lo - 1;
}

/* Make room for one more entry. */
static NW_MUST_USE nw_rc_t reserve(nw_resources_t *r)
{
    if (!r->heap && r->n < NW_RESOURCES_INLINE)
        return NW_OK;
    if (r->heap && r->n < r->cap)
        return NW_OK;
    uint32_t cap = r->heap ? r->cap * 2 : NW_RESOURCES_INLINE * 2;
    nw_res_entry_t *h = r->heap ? realloc(r->heap, cap * sizeof *h) : malloc(cap * sizeof *h);
    if (!h)
        return NW_ENOMEM;
    if (!r->heap)
        memcpy(h, r->inl, r->n * sizeof *h);
    r->heap = h;
    r->cap = cap;
    return NW_OK;
}

/* Insert name at position pos (from find); the name is interned or copied. */
static NW_MUST_USE nw_rc_t insert_at(nw_resources_t *r, size_t pos, const char *name,
                                     nw_quantity_t q)
{
    const char *stat = intern(name);
    char *copy = NULL;
    if (!stat && !(copy = strdup(name)))
        return NW_ENOMEM;
    if (reserve(r) != NW_OK) {
        free(copy);
        return NW_ENOMEM;
    }
    nw_res_entry_t *e = entries(r);
    memmove(e + pos + 1, e + pos, (r->n - pos) * sizeof *e);
    e[pos].name = stat ? stat : copy;
    e[pos].owned = copy != NULL;
    e[pos].milli = q.milli;
    e[pos].format = (uint8_t)q.format;
    r->n++;
    /* copy is owned by the entry now (freed by remove/cleanup) */
    // cppcheck-suppress memleak
    return NW_OK;
}

nw_rc_t nw_resources_set(nw_resources_t *r, const char *name, nw_quantity_t q, nw_err_t *err)
{
    if (!name || !*name)
        return nw_err_set(err, NW_EINVAL, "", "resource name must not be empty");
    long i = find(r, name);
    if (i >= 0) {
        nw_res_entry_t *e = &entries(r)[i];
        e->milli = q.milli;
        e->format = (uint8_t)q.format;
        return NW_OK;
    }
    if (insert_at(r, (size_t)(-i - 1), name, q) != NW_OK)
        return nw_err_set(err, NW_ENOMEM, "", "out of memory");
    return NW_OK;
}

bool nw_resources_remove(nw_resources_t *r, const char *name)
{
    long i = find(r, name);
    if (i < 0)
        return false;
    nw_res_entry_t *e = entries(r);
    if (e[i].owned)
        free((char *)e[i].name);
    memmove(e + i, e + i + 1, (r->n - (size_t)i - 1) * sizeof *e);
    r->n--;
    return true;
}

bool nw_resources_get(const nw_resources_t *r, const char *name, nw_quantity_t *out)
{
    long i = name ? find(r, name) : -1;
    if (i < 0) {
        if (out) {
            out->milli = 0;
            out->format = NW_QTY_DECIMAL_SI;
        }
        return false;
    }
    if (out)
        *out = entry_q(&centries(r)[i]);
    return true;
}

nw_quantity_t nw_resources_get_or_zero(const nw_resources_t *r, const char *name)
{
    nw_quantity_t q;
    nw_resources_get(r, name, &q);
    return q;
}

nw_rc_t nw_resources_copy(nw_resources_t *dst, const nw_resources_t *src, nw_err_t *err)
{
    if (dst == src)
        return NW_OK;
    nw_resources_cleanup(dst);
    const nw_res_entry_t *e = centries(src);
    for (uint32_t i = 0; i < src->n; i++) {
        /* sorted input: always append */
        if (insert_at(dst, dst->n, e[i].name, entry_q(&e[i])) != NW_OK) {
            nw_resources_cleanup(dst);
            return nw_err_set(err, NW_ENOMEM, "", "out of memory");
        }
    }
    return NW_OK;
}

/* a op= b for op in {add, sub}: check every overflow first so that NW_ERANGE
 * leaves a unchanged. */
static NW_MUST_USE nw_rc_t combine(nw_resources_t *a, const nw_resources_t *b, bool sub,
                                   nw_err_t *err)
{
    const nw_res_entry_t *be = centries(b);
    for (uint32_t j = 0; j < b->n; j++) {
        nw_quantity_t x = nw_resources_get_or_zero(a, be[j].name), y = entry_q(&be[j]), z;
        nw_err_t e = {0};
        nw_rc_t rc = sub ? nw_quantity_sub(x, y, &z, &e) : nw_quantity_add(x, y, &z, &e);
        if (rc != NW_OK)
            return nw_err_set(err, rc, "", "%s: %s", be[j].name, e.msg);
    }
    for (uint32_t j = 0; j < b->n; j++) {
        const char *name = centries(b)[j].name;
        nw_quantity_t y = entry_q(&centries(b)[j]), z;
        long i = find(a, name);
        if (i >= 0) {
            nw_res_entry_t *ae = &entries(a)[i];
            nw_quantity_t x = entry_q(ae);
            if (sub)
                /* overflow was ruled out by the loop above */
                (void)nw_quantity_sub(x, y, &z, NULL);
            else
                (void)nw_quantity_add(x, y, &z, NULL);
            ae->milli = z.milli;
            ae->format = (uint8_t)z.format;
            continue;
        }
        if (sub) {
            nw_quantity_t zero = {0, NW_QTY_DECIMAL_SI};
            /* overflow was ruled out by the loop above */
            (void)nw_quantity_sub(zero, y, &z, NULL);
        } else {
            z = y;
        }
        if (insert_at(a, (size_t)(-i - 1), name, z) != NW_OK)
            return nw_err_set(err, NW_ENOMEM, "", "out of memory");
    }
    return NW_OK;
}

nw_rc_t nw_resources_add(nw_resources_t *a, const nw_resources_t *b, nw_err_t *err)
{
    return combine(a, b, false, err);
}

nw_rc_t nw_resources_sub(nw_resources_t *a, const nw_resources_t *b, nw_err_t *err)
{
    return combine(a, b, true, err);
}

nw_rc_t nw_resources_max(nw_resources_t *a, const nw_resources_t *b, nw_err_t *err)
{
    for (uint32_t j = 0; j < b->n; j++) {
        const nw_res_entry_t *y = &centries(b)[j];
        long i = find(a, y->name);
        if (i >= 0) {
            nw_res_entry_t *x = &entries(a)[i];
            if (x->milli <= y->milli) { /* Max: a value <= b's takes b's (and its format) */
                x->milli = y->milli;
                x->format = y->format;
            }
        } else if (insert_at(a, (size_t)(-i - 1), y->name, entry_q(y)) != NW_OK) {
            return nw_err_set(err, NW_ENOMEM, "", "out of memory");
        }
    }
    return NW_OK;
}

bool nw_resources_fits(const nw_resources_t *request, const nw_resources_t *capacity,
                       const char **first_over)
{
    const nw_res_entry_t *re = centries(request), *ce = centries(capacity);
    uint32_t j = 0;
    /* merge walk: both arrays are sorted by name */
    for (uint32_t i = 0; i < request->n; i++) {
        while (j < capacity->n && strcmp(ce[j].name, re[i].name) < 0)
            j++;
        int64_t have = (j < capacity->n && strcmp(ce[j].name, re[i].name) == 0) ? ce[j].milli : 0;
        if (re[i].milli > have) {
            if (first_over)
                *first_over = re[i].name;
            return false;
        }
    }
    if (first_over)
        *first_over = NULL;
    return true;
}

bool nw_resources_is_zero(const nw_resources_t *r)
{
    const nw_res_entry_t *e = centries(r);
    for (uint32_t i = 0; i < r->n; i++)
        if (e[i].milli != 0)
            return false;
    return true;
}

/* Quote up to 64 bytes of s for a message: non-printables as \xNN. */
static void quote_value(const char *s, char *out, size_t cap)
{
    size_t o = 0, i = 0;
    out[o++] = '"';
    for (; i < 64 && s[i] && o + 6 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c >= 0x7f) {
            o += (size_t)snprintf(out + o, cap - o, "\\x%02x", c);
        } else {
            if (c == '"' || c == '\\')
                out[o++] = '\\';
            out[o++] = (char)c;
        }
    }
    if (s[i] && o + 5 < cap) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o++] = '"';
    out[o] = '\0';
}

static const char *json_type(const cJSON *j)
{
    if (cJSON_IsString(j))
        return "string";
    if (cJSON_IsNumber(j))
        return "number";
    if (cJSON_IsBool(j))
        return "boolean";
    if (cJSON_IsNull(j))
        return "null";
    if (cJSON_IsArray(j))
        return "array";
    if (cJSON_IsObject(j))
        return "object";
    return "unknown";
}

/* A JSON number's text as Kubernetes would see it: the shortest form that
 * reads back as the same double ("0.1", not 0.10000000000000001). */
static void number_text(double v, char *buf, size_t cap)
{
    if (v == floor(v) && fabs(v) < 9007199254740992.0) {
        snprintf(buf, cap, "%lld", (long long)v);
        return;
    }
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, cap, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            return;
    }
}

nw_rc_t nw_resources_from_json(nw_resources_t *r, const cJSON *obj, const char *path, nw_err_t *err)
{
    nw_resources_cleanup(r);
    if (!path)
        path = "";
    if (!obj || cJSON_IsNull(obj))
        return NW_OK;
    if (!cJSON_IsObject(obj))
        return nw_err_set(err, NW_EINVAL, path,
                          "Invalid value: %s: must be an object of resource name to quantity",
                          json_type(obj));
    nw_rc_t rc = NW_OK;
    char p[sizeof err->path];
    for (const cJSON *m = obj->child; m; m = m->next) {
        const char *name = m->string ? m->string : "";
        snprintf(p, sizeof p, "%s[%s]", path, name);
        if (!*name) {
            rc = nw_err_set(err, NW_EINVAL, p, "resource name must not be empty");
            goto fail;
        }
        char num[64];
        const char *text;
        if (cJSON_IsString(m) && m->valuestring) {
            text = m->valuestring;
        } else if (cJSON_IsNumber(m)) {
            number_text(m->valuedouble, num, sizeof num);
            text = num;
        } else {
            rc = nw_err_set(err, NW_EINVAL, p,
                            "Invalid value: %s: must be a quantity (string or number)",
                            json_type(m));
            goto fail;
        }
        nw_quantity_t q;
        nw_err_t qe = {0};
        rc = nw_quantity_parse(text, &q, &qe);
        if (rc != NW_OK) {
            char qv[300];
            quote_value(text, qv, sizeof qv);
            nw_err_set(err, rc, p, "Invalid value: %s: %s", qv, qe.msg);
            goto fail;
        }
        rc = nw_resources_set(r, name, q, NULL);
        if (rc != NW_OK) {
            nw_err_set(err, rc, p, "out of memory");
            goto fail;
        }
    }
    return NW_OK;
fail:
    nw_resources_cleanup(r);
    return rc;
}

cJSON *nw_resources_to_json(const nw_resources_t *r)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    const nw_res_entry_t *e = centries(r);
    for (uint32_t i = 0; i < r->n; i++) {
        char buf[NW_QUANTITY_STR_MAX];
        nw_quantity_format(entry_q(&e[i]), buf, sizeof buf);
        if (!cJSON_AddStringToObject(o, e[i].name, buf)) {
            cJSON_Delete(o);
            return NULL;
        }
    }
    return o;
}
