/*
 * api/requirements.c — Karpenter's requirement algebra in C. See requirements.h.
 *
 * Follows kubernetes-sigs/karpenter pkg/scheduling/requirement.go (inclusive
 * gte/lte bounds, Gt/Lt canonicalised, Intersection, HasIntersection, Has,
 * Operator, String) and requirements.go (Add, Intersects, Compatible, labelHint).
 * Deliberate differences, all documented in the header or below:
 *   - values are kept sorted so that membership and intersection tests are
 *     binary searches / merges and never allocate;
 *   - Lt with the smallest int64 matches nothing (Go wraps around);
 *   - Any() is deterministic;
 *   - absent_ok tracks Kubernetes' "label absent" answer for label matching.
 */
#include "api/requirements.h"
#include "api/wellknown.h"
#include "common/strs.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- operators ----------------------------------------- */

static const char *const OPS[] = {"In", "NotIn", "Exists", "DoesNotExist",
                                  "Gt", "Lt",    "Gte",    "Lte"};

const char *nw_requirements_req_op_str(nw_req_op_t op)
{
    return (unsigned)op < 8 ? OPS[op] : "";
}

bool nw_requirements_req_op_parse(const char *s, unsigned flags, nw_req_op_t *out)
{
    int max = (flags & NW_REQS_PARSE_KARPENTER) ? 8 : 6;
    for (int i = 0; i < max; i++)
        if (strcmp(s, OPS[i]) == 0) {
            *out = (nw_req_op_t)i;
            return true;
        }
    return false;
}

bool nw_requirements_req_atoi(const char *s, int64_t *out)
{
    size_t i = 0;
    bool neg = false;
    if (s[0] == '+' || s[0] == '-') {
        neg = s[0] == '-';
        i = 1;
    }
    if (s[i] == '\0')
        return false;
    int64_t v = 0; /* accumulated negatively so INT64_MIN fits */
    for (; s[i]; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        int d = s[i] - '0';
        if (v < (INT64_MIN + d) / 10)
            return false;
        v = v * 10 - d;
    }
    if (!neg) {
        if (v == INT64_MIN)
            return false;
        v = -v;
    }
    *out = v;
    return true;
}

/* ---- sorted string arrays -------------------------------------------------- */

static bool vals_has(char *const *v, size_t n, const char *s)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(v[mid], s);
        if (c == 0)
            return true;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

static void vals_free(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

/* Copy, sort and de-duplicate. *out NULL when n == 0. */
static NW_MUST_USE nw_rc_t vals_from(const char *const *in, size_t n, char ***out, size_t *nout)
{
    *out = NULL;
    *nout = 0;
    if (n == 0)
        return NW_OK;
    char **v = calloc(n, sizeof *v);
    if (!v)
        return NW_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        v[i] = strdup(in[i] ? in[i] : "");
        if (!v[i]) {
            vals_free(v, i);
            return NW_ENOMEM;
        }
    }
    qsort(v, n, sizeof *v, nw_strs_cmp);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (k > 0 && strcmp(v[k - 1], v[i]) == 0)
            free(v[i]);
        else
            v[k++] = v[i];
    }
    *out = v;
    *nout = k;
    return NW_OK;
}

static bool within(const char *value, bool has_gte, int64_t gte, bool has_lte, int64_t lte)
{
    if (!has_gte && !has_lte)
        return true;
    int64_t x;
    if (!nw_requirements_req_atoi(value, &x)) /* bounded: non-integers are outside */
        return false;
    if (has_gte && x < gte)
        return false;
    if (has_lte && x > lte)
        return false;
    return true;
}

/* ---- one requirement ------------------------------------------------------- */

void nw_requirements_req_cleanup(nw_req_t *r)
{
    if (!r)
        return;
    free(r->key);
    vals_free(r->values, r->nvalues);
    memset(r, 0, sizeof *r);
}

nw_req_op_t nw_requirements_req_operator(const nw_req_t *r)
{
    if (r->complement)
        return r->nvalues > 0 ? NW_REQ_NOT_IN : NW_REQ_EXISTS;
    return r->nvalues > 0 ? NW_REQ_IN : NW_REQ_DOES_NOT_EXIST;
}

bool nw_requirements_req_has(const nw_req_t *r, const char *value)
{
    bool in = vals_has(r->values, r->nvalues, value);
    if (r->complement ? in : !in)
        return false;
    return within(value, r->has_gte, r->gte, r->has_lte, r->lte);
}

bool nw_requirements_req_matches(const nw_req_t *r, const char *value)
{
    return value ? nw_requirements_req_has(r, value) : r->absent_ok;
}

bool nw_requirements_req_is_empty(const nw_req_t *r)
{
    return !r->complement && r->nvalues == 0;
}

/* combined bounds of a and b; false when they cross */
static bool bounds(const nw_req_t *a, const nw_req_t *b, bool *hg, int64_t *g, bool *hl, int64_t *l)
{
    *hg = a->has_gte || b->has_gte;
    *g = !a->has_gte ? b->gte : !b->has_gte ? a->gte : (a->gte > b->gte ? a->gte : b->gte);
    *hl = a->has_lte || b->has_lte;
    *l = !a->has_lte ? b->lte : !b->has_lte ? a->lte : (a->lte < b->lte ? a->lte : b->lte);
    return !(*hg && *hl && *g > *l);
}

bool nw_requirements_req_has_intersection(const nw_req_t *a, const nw_req_t *b)
{
    bool hg, hl;
    int64_t g, l;
    if (!bounds(a, b, &hg, &g, &hl, &l))
        return false;
    if (a->complement && b->complement)
        return true;
    if (a->complement != b->complement) {
        const nw_req_t *c = a->complement ? a : b, *f = a->complement ? b : a;
        for (size_t i = 0; i < f->nvalues; i++)
            if (!vals_has(c->values, c->nvalues, f->values[i]) &&
                within(f->values[i], hg, g, hl, l))
                return true;
        return false;
    }
    /* both finite: merge */
    size_t i = 0, j = 0;
    while (i < a->nvalues && j < b->nvalues) {
        int c = strcmp(a->values[i], b->values[j]);
        if (c == 0) {
            if (within(a->values[i], hg, g, hl, l))
                return true;
            i++;
            j++;
        } else if (c < 0) {
            i++;
        } else {
            j++;
        }
    }
    return false;
}

/* Append a copy of s to v (capacity cap is known to be large enough). */
static NW_MUST_USE nw_rc_t push(char **v, size_t *n, const char *s)
{
    v[*n] = strdup(s);
    if (!v[*n])
        return NW_ENOMEM;
    (*n)++;
    return NW_OK;
}

nw_rc_t nw_requirements_req_intersect(const nw_req_t *a, const nw_req_t *b, nw_req_t *out)
{
    memset(out, 0, sizeof *out);
    out->key = strdup(a->key);
    if (!out->key)
        return NW_ENOMEM;
    out->min_values = a->min_values > b->min_values ? a->min_values : b->min_values;
    out->absent_ok = a->absent_ok && b->absent_ok;
    out->well_known = a->well_known;
    bool hg, hl;
    int64_t g, l;
    if (!bounds(a, b, &hg, &g, &hl, &l))
        return NW_OK; /* DoesNotExist (keeps minValues, as Karpenter does) */
    bool comp = a->complement && b->complement;
    size_t cap = comp ? a->nvalues + b->nvalues : (!a->complement ? a->nvalues : b->nvalues);
    char **v = cap ? calloc(cap, sizeof *v) : NULL;
    if (cap && !v) {
        nw_requirements_req_cleanup(out);
        return NW_ENOMEM;
    }
    size_t n = 0, i = 0, j = 0;
    nw_rc_t rc = NW_OK;
    /* merge the sorted arrays: union (both complements), difference (one), or
     * intersection (none); then keep the values within the bounds */
    while (rc == NW_OK && (i < a->nvalues || j < b->nvalues)) {
        int c = i >= a->nvalues ? 1 : j >= b->nvalues ? -1 : strcmp(a->values[i], b->values[j]);
        const char *pick = NULL;
        if (c == 0) {
            if (comp || (!a->complement && !b->complement))
                pick = a->values[i];
            i++;
            j++;
        } else if (c < 0) { /* only in a */
            if (comp || (!a->complement && b->complement))
                pick = a->values[i];
            i++;
        } else { /* only in b */
            if (comp || (a->complement && !b->complement))
                pick = b->values[j];
            j++;
        }
        if (pick && within(pick, hg, g, hl, l))
            rc = push(v, &n, pick);
    }
    if (rc != NW_OK) {
        vals_free(v, n);
        nw_requirements_req_cleanup(out);
        return rc;
    }
    if (n == 0) {
        free(v);
        v = NULL;
    }
    out->values = v;
    out->nvalues = n;
    out->complement = comp;
    if (comp) { /* concrete sets drop their bounds */
        out->has_gte = hg;
        out->gte = g;
        out->has_lte = hl;
        out->lte = l;
    }
    return NW_OK;
}

/* bounded append into buf (snprintf semantics, total length tracked) */
typedef struct {
    char *buf;
    size_t n, len;
} out_t;

static void outf(out_t *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void outf(out_t *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = o->len < o->n ? o->n - o->len : 0;
    int r = vsnprintf(room ? o->buf + o->len : NULL, room, fmt, ap);
    va_end(ap);
    if (r > 0)
        o->len += (size_t)r;
}

/* Go's %q for the ASCII keys we print */
static void outq(out_t *o, const char *s)
{
    outf(o, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            outf(o, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f)
            outf(o, "\\x%02x", *p);
        else
            outf(o, "%c", *p);
    }
    outf(o, "\"");
}

static void format_req(out_t *o, const nw_req_t *r)
{
    nw_req_op_t op = nw_requirements_req_operator(r);
    if (op == NW_REQ_EXISTS || op == NW_REQ_DOES_NOT_EXIST) {
        outf(o, "%s %s", r->key, nw_requirements_req_op_str(op));
    } else {
        outf(o, "%s %s [", r->key, nw_requirements_req_op_str(op));
        size_t shown = r->nvalues > 5 ? 5 : r->nvalues;
        for (size_t i = 0; i < shown; i++)
            outf(o, "%s%s", i ? " " : "", r->values[i]);
        if (r->nvalues > 5)
            outf(o, " and %zu others", r->nvalues - 5);
        outf(o, "]");
    }
    if (r->has_gte)
        outf(o, " >=%lld", (long long)r->gte);
    if (r->has_lte)
        outf(o, " <=%lld", (long long)r->lte);
    if (r->min_values)
        outf(o, " minValues %d", r->min_values);
}

size_t nw_requirements_req_format(const nw_req_t *r, char *buf, size_t n)
{
    out_t o = {buf, n, 0};
    if (n)
        buf[0] = '\0';
    format_req(&o, r);
    return o.len;
}

bool nw_requirements_req_any(const nw_req_t *r, char *buf, size_t n)
{
    nw_req_op_t op = nw_requirements_req_operator(r);
    if (op == NW_REQ_IN) {
        int w = snprintf(buf, n, "%s", r->values[0]);
        return w >= 0 && (size_t)w < n; /* a truncated value would not satisfy r */
    }
    if (op == NW_REQ_DOES_NOT_EXIST)
        return false;
    int64_t lo = r->has_gte ? r->gte : 0;
    int64_t hi = r->has_lte ? r->lte : INT64_MAX;
    if (!r->has_gte && r->has_lte && hi < 0) { /* only an upper bound below zero */
        int64_t cnt = (int64_t)(r->nvalues < 1000000 ? r->nvalues : 1000000);
        lo = hi < INT64_MIN + cnt ? INT64_MIN : hi - cnt;
    }
    /* at most nvalues candidates can be excluded */
    for (int64_t x = lo; x <= hi; x++) {
        char tmp[24];
        snprintf(tmp, sizeof tmp, "%lld", (long long)x);
        if (!vals_has(r->values, r->nvalues, tmp)) {
            int w = snprintf(buf, n, "%s", tmp);
            return w >= 0 && (size_t)w < n;
        }
        if (x == INT64_MAX)
            break;
    }
    return false;
}

/* ---- requirement sets ------------------------------------------------------- */

void nw_requirements_init(nw_reqs_t *s)
{
    s->v = NULL;
    s->n = s->cap = 0;
}

void nw_requirements_cleanup(nw_reqs_t *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        nw_requirements_req_cleanup(&s->v[i]);
    free(s->v);
    nw_requirements_init(s);
}

/* index of key, or -(insertion point)-1 */
static ptrdiff_t find(const nw_reqs_t *s, const char *key)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(s->v[mid].key, key);
        if (c == 0)
            return (ptrdiff_t)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -(ptrdiff_t)lo - 1;
}

const nw_req_t *nw_requirements_get(const nw_reqs_t *s, const char *key)
{
    ptrdiff_t i = find(s, nw_wellknown_normalize(key));
    return i >= 0 ? &s->v[i] : NULL;
}

bool nw_requirements_has(const nw_reqs_t *s, const char *key)
{
    return nw_requirements_get(s, key) != NULL;
}

static NW_MUST_USE nw_rc_t req_dup(const nw_req_t *r, nw_req_t *out)
{
    *out = *r;
    out->key = strdup(r->key);
    out->values = NULL;
    out->nvalues = 0;
    if (!out->key)
        return NW_ENOMEM;
    if (r->nvalues == 0)
        return NW_OK;
    /* already sorted and unique: copy as is */
    out->values = calloc(r->nvalues, sizeof *out->values);
    nw_rc_t rc = out->values ? NW_OK : NW_ENOMEM;
    for (size_t i = 0; rc == NW_OK && i < r->nvalues; i++)
        rc = push(out->values, &out->nvalues, r->values[i]);
    if (rc != NW_OK) {
        vals_free(out->values, out->nvalues);
        out->values = NULL;
        out->nvalues = 0;
        free(out->key);
        out->key = NULL;
    }
    return rc;
}

/* Take ownership of *r: intersect into s (Karpenter's Add). r is emptied. */
static NW_MUST_USE nw_rc_t add_take(nw_reqs_t *s, nw_req_t *r)
{
    ptrdiff_t i = find(s, r->key);
    if (i >= 0) {
        nw_req_t x;
        nw_rc_t rc = nw_requirements_req_intersect(r, &s->v[i], &x);
        nw_requirements_req_cleanup(r);
        if (rc != NW_OK)
            return rc;
        nw_requirements_req_cleanup(&s->v[i]);
        s->v[i] = x;
        return NW_OK;
    }
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 8;
        nw_req_t *nv = realloc(s->v, cap * sizeof *nv);
        if (!nv) {
            nw_requirements_req_cleanup(r);
            return NW_ENOMEM;
        }
        s->v = nv;
        s->cap = cap;
    }
    size_t at = (size_t)(-i - 1);
    memmove(s->v + at + 1, s->v + at, (s->n - at) * sizeof *s->v);
    s->v[at] = *r;
    s->n++;
    memset(r, 0, sizeof *r);
    return NW_OK;
}

nw_rc_t nw_requirements_add_req(nw_reqs_t *s, const nw_req_t *r)
{
    nw_req_t c;
    nw_rc_t rc = req_dup(r, &c);
    if (rc != NW_OK)
        return rc;
    return add_take(s, &c);
}

nw_rc_t nw_requirements_add(nw_reqs_t *s, const char *key, nw_req_op_t op,
                            const char *const *values, size_t nvalues, int min_values,
                            nw_err_t *err)
{
    key = nw_wellknown_normalize(key);
    nw_req_t r;
    memset(&r, 0, sizeof r);
    r.min_values = min_values > 0 ? min_values : 0;
    int64_t x = 0;
    bool numeric = op == NW_REQ_GT || op == NW_REQ_LT || op == NW_REQ_GTE || op == NW_REQ_LTE;
    if (numeric && (nvalues != 1 || !values[0] || !nw_requirements_req_atoi(values[0], &x)))
        return nw_err_set(err, NW_EINVAL, "",
                          "key %s with operator %s must have a single integer value", key,
                          nw_requirements_req_op_str(op));
    if ((unsigned)op > NW_REQ_LTE)
        return nw_err_set(err, NW_EINVAL, "", "key %s has an unsupported operator", key);
    switch (op) {
    case NW_REQ_IN:
        break;
    case NW_REQ_NOT_IN:
        r.complement = true;
        r.absent_ok = true;
        break;
    case NW_REQ_EXISTS:
        r.complement = true;
        break;
    case NW_REQ_DOES_NOT_EXIST:
        r.absent_ok = true;
        break;
    case NW_REQ_GT:
        if (x == INT64_MAX) /* Gt MaxInt matches nothing (Karpenter: DoesNotExist) */
            break;
        r.complement = true;
        r.has_gte = true;
        r.gte = x + 1;
        break;
    case NW_REQ_LT:
        if (x == INT64_MIN) /* Lt MinInt matches nothing */
            break;
        r.complement = true;
        r.has_lte = true;
        r.lte = x - 1;
        break;
    case NW_REQ_GTE:
        r.complement = true;
        r.has_gte = true;
        r.gte = x;
        break;
    case NW_REQ_LTE:
        r.complement = true;
        r.has_lte = true;
        r.lte = x;
        break;
    }
    if (op == NW_REQ_GT && x == INT64_MAX)
        r.min_values = 0; /* Karpenter builds that DoesNotExist without minValues */
    r.key = strdup(key);
    if (!r.key)
        return nw_err_set(err, NW_ENOMEM, "", "out of memory");
    r.well_known = nw_wellknown_is_known(key);
    if (op == NW_REQ_IN || op == NW_REQ_NOT_IN) {
        nw_rc_t rc = vals_from(values, nvalues, &r.values, &r.nvalues);
        if (rc != NW_OK) {
            nw_requirements_req_cleanup(&r);
            return nw_err_set(err, rc, "", "out of memory");
        }
    }
    nw_rc_t rc = add_take(s, &r);
    return rc == NW_OK ? NW_OK : nw_err_set(err, rc, "", "out of memory");
}

nw_rc_t nw_requirements_copy(nw_reqs_t *dst, const nw_reqs_t *src)
{
    nw_requirements_cleanup(dst);
    if (src->n == 0)
        return NW_OK;
    dst->v = calloc(src->n, sizeof *dst->v);
    if (!dst->v)
        return NW_ENOMEM;
    dst->cap = src->n;
    for (size_t i = 0; i < src->n; i++) {
        if (req_dup(&src->v[i], &dst->v[i]) != NW_OK) {
            nw_requirements_cleanup(dst);
            return NW_ENOMEM;
        }
        dst->n++;
    }
    return NW_OK;
}

nw_rc_t nw_requirements_add_all(nw_reqs_t *s, const nw_reqs_t *b)
{
    for (size_t i = 0; i < b->n; i++) {
        nw_rc_t rc = nw_requirements_add_req(s, &b->v[i]);
        if (rc != NW_OK)
            return rc;
    }
    return NW_OK;
}

nw_rc_t nw_requirements_intersect(const nw_reqs_t *a, const nw_reqs_t *b, nw_reqs_t *out)
{
    nw_requirements_init(out);
    nw_rc_t rc = nw_requirements_copy(out, a);
    if (rc == NW_OK)
        rc = nw_requirements_add_all(out, b);
    if (rc != NW_OK)
        nw_requirements_cleanup(out);
    return rc;
}

static bool negative(nw_req_op_t op)
{
    return op == NW_REQ_NOT_IN || op == NW_REQ_DOES_NOT_EXIST;
}

static void set_key(nw_reqs_conflict_t *c, const char *key)
{
    snprintf(c->key, sizeof c->key, "%s", key);
}

/* One key present in both: record a conflict unless the two overlap or are both
 * negative. Returns false on conflict. */
static bool key_ok(const nw_req_t *e, const nw_req_t *in, nw_reqs_conflict_t *c)
{
    if (nw_requirements_req_has_intersection(e, in))
        return true;
    if (negative(nw_requirements_req_operator(in)) && negative(nw_requirements_req_operator(e)))
        return true;
    if (c) {
        set_key(c, e->key);
        out_t o = {c->msg, sizeof c->msg, 0};
        c->msg[0] = '\0';
        outf(&o, "key %s, ", e->key);
        format_req(&o, in);
        outf(&o, " not in ");
        format_req(&o, e);
    }
    return false;
}

bool nw_requirements_intersects(const nw_reqs_t *existing, const nw_reqs_t *incoming,
                                nw_reqs_conflict_t *c)
{
    /* Walk the smaller set and binary-search the larger when that is cheaper than a
     * merge (the usual pod-vs-instance-type case); keys are visited in sorted order
     * either way, so the first conflict reported is the same. */
    const nw_reqs_t *small = existing->n <= incoming->n ? existing : incoming;
    const nw_reqs_t *large = small == existing ? incoming : existing;
    if (small->n * 4 < large->n) {
        for (size_t k = 0; k < small->n; k++) {
            ptrdiff_t at = find(large, small->v[k].key);
            if (at < 0)
                continue;
            const nw_req_t *e = small == existing ? &small->v[k] : &large->v[at];
            const nw_req_t *in = small == existing ? &large->v[at] : &small->v[k];
            if (!key_ok(e, in, c))
                return false;
        }
        return true;
    }
    size_t i = 0, j = 0;
    while (i < existing->n && j < incoming->n) {
        int cmp = strcmp(existing->v[i].key, incoming->v[j].key);
        if (cmp < 0) {
            i++;
        } else if (cmp > 0) {
            j++;
        } else {
            if (!key_ok(&existing->v[i], &incoming->v[j], c))
                return false;
            i++;
            j++;
        }
    }
    return true;
}

static const char *suffix_of(const char *key)
{
    const char *slash = strchr(key, '/');
    return slash ? slash + 1 : key;
}

static bool hint_match(const char *candidate, const char *key)
{
    if (strstr(candidate, key))
        return true;
    return nw_strs_has_suffix(candidate, strlen(candidate), suffix_of(key));
}

static void label_hint(out_t *o, const nw_reqs_t *existing, const char *key, unsigned flags)
{
    size_t nwk;
    const char *const *wk = nw_wellknown_labels(&nwk);
    if (flags & NW_REQS_ALLOW_UNDEFINED_WELL_KNOWN)
        for (size_t i = 0; i < nwk; i++)
            if (hint_match(wk[i], key)) {
                outf(o, " (typo of ");
                outq(o, wk[i]);
                outf(o, "?)");
                return;
            }
    for (size_t i = 0; i < existing->n; i++)
        if (hint_match(existing->v[i].key, key)) {
            outf(o, " (typo of ");
            outq(o, existing->v[i].key);
            outf(o, "?)");
            return;
        }
}

bool nw_requirements_compatible(const nw_reqs_t *existing, const nw_reqs_t *incoming,
                                unsigned flags, nw_reqs_conflict_t *c)
{
    for (size_t j = 0; j < incoming->n; j++) {
        const nw_req_t *in = &incoming->v[j];
        if ((flags & NW_REQS_ALLOW_UNDEFINED_WELL_KNOWN) && in->well_known)
            continue;
        if (negative(nw_requirements_req_operator(in)) || find(existing, in->key) >= 0)
            continue;
        if (c) {
            set_key(c, in->key);
            out_t o = {c->msg, sizeof c->msg, 0};
            c->msg[0] = '\0';
            outf(&o, "label ");
            outq(&o, in->key);
            outf(&o, " does not have known values");
            label_hint(&o, existing, in->key, flags);
        }
        return false;
    }
    return nw_requirements_intersects(existing, incoming, c);
}

bool nw_requirements_match_labels(const nw_reqs_t *s, const nw_labels_t *labels,
                                  nw_reqs_conflict_t *c)
{
    for (size_t i = 0; i < s->n; i++) {
        const nw_req_t *r = &s->v[i];
        const char *v = labels ? nw_labels_get(labels, r->key) : NULL;
        /* a node that carries only the deprecated alias of a normalised key */
        const char *alias = !v && labels ? nw_wellknown_alias(r->key) : NULL;
        if (alias)
            v = nw_labels_get(labels, alias);
        if (nw_requirements_req_matches(r, v))
            continue;
        if (c) {
            set_key(c, r->key);
            out_t o = {c->msg, sizeof c->msg, 0};
            c->msg[0] = '\0';
            if (v)
                outf(&o, "label %s=%s does not satisfy ", r->key, v);
            else
                outf(&o, "label %s is absent; ", r->key);
            format_req(&o, r);
        }
        return false;
    }
    return true;
}

nw_rc_t nw_requirements_from_labels(const nw_labels_t *labels, nw_reqs_t *out)
{
    nw_requirements_init(out);
    for (size_t i = 0; i < labels->n; i++) {
        const char *v = labels->v[i].value;
        nw_rc_t rc = nw_requirements_add(out, labels->v[i].key, NW_REQ_IN, &v, 1, 0, NULL);
        if (rc != NW_OK) {
            nw_requirements_cleanup(out);
            return rc;
        }
    }
    return NW_OK;
}

size_t nw_requirements_format(const nw_reqs_t *s, char *buf, size_t n)
{
    out_t o = {buf, n, 0};
    if (n)
        buf[0] = '\0';
    /* Karpenter sorts the requirement strings. Each starts with its key and a space;
     * keys are sorted and unique, and label-key bytes all sort above ' ', so key
     * order is the strings' order. */
    bool first = true;
    for (size_t i = 0; i < s->n; i++) {
        if (strcmp(s->v[i].key, "kubernetes.io/hostname") == 0)
            continue;
        if (!first)
            outf(&o, ", ");
        first = false;
        format_req(&o, &s->v[i]);
    }
    return o.len;
}
