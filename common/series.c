/* common/series.c — labelled Prometheus series (see series.h). */
#include "common/series.h"

#include <math.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/prom.h"

typedef struct {
    const nw_series_desc_t *d;
    char *key; /* the label values, each followed by '\x1f' */
    double v;  /* counter, gauge; histograms: the sum */
    uint64_t count;
    uint64_t *buckets; /* histograms: per bucket (not cumulative) */
    double *window;    /* summaries: the last observations (a ring) */
    bool dead;         /* removed (nw_series_remove); dropped at the next compaction */
} entry_t;

struct nw_series {
    pthread_mutex_t mu;
    entry_t *v;
    size_t n, cap, dead;
    size_t *index; /* open addressing: entry index + 1, 0 = empty */
    size_t icap;   /* a power of two, > 2 n */
};

nw_series_t *nw_series_new(void)
{
    nw_series_t *r = calloc(1, sizeof *r);
    if (r && pthread_mutex_init(&r->mu, NULL) != 0) {
        free(r);
        r = NULL;
    }
    return r;
}

static void drop_entries(nw_series_t *r, const nw_series_desc_t *only)
{
    size_t k = 0;
    for (size_t i = 0; i < r->n; i++) {
        if (!only || r->v[i].d == only) {
            free(r->v[i].key);
            free(r->v[i].buckets);
            free(r->v[i].window);
        } else
            r->v[k++] = r->v[i];
    }
    r->n = k;
}

void nw_series_free(nw_series_t *r)
{
    if (!r)
        return;
    drop_entries(r, NULL);
    free(r->v);
    free(r->index);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

static int nlabels(const nw_series_desc_t *d)
{
    int n = 0;
    while (n < NW_SERIES_MAX_LABELS && d->labels[n])
        n++;
    return n;
}

static char *make_key(const nw_series_desc_t *d, const char *const *values)
{
    nw_buf_t b;
    nw_buf_init(&b, 1u << 16);
    int n = nlabels(d), ok = 1;
    for (int i = 0; i < n && ok; i++)
        ok = nw_buf_adds(&b, values && values[i] ? values[i] : "") == NW_OK &&
             nw_buf_add(&b, "\x1f", 1) == NW_OK;
    char *k = ok ? nw_buf_take(&b) : NULL;
    if (ok && !k)
        k = strdup("");
    nw_buf_cleanup(&b);
    return k;
}

static size_t hash(const nw_series_desc_t *d, const char *key)
{
    uint64_t h = 1469598103934665603ULL ^ (uint64_t)(uintptr_t)d;
    for (const unsigned char *p = (const unsigned char *)key; *p; p++)
        h = (h ^ *p) * 1099511628211ULL;
    return (size_t)h;
}

static int reindex(nw_series_t *r, size_t icap)
{
    size_t *ix = calloc(icap, sizeof *ix);
    if (!ix)
        return -1;
    for (size_t i = 0; i < r->n; i++) {
        size_t h = hash(r->v[i].d, r->v[i].key) & (icap - 1);
        while (ix[h])
            h = (h + 1) & (icap - 1);
        ix[h] = i + 1;
    }
    free(r->index);
    r->index = ix;
    r->icap = icap;
    return 0;
}

/* The entry of (d, values), made when create is set; NULL when absent or on OOM. */
static entry_t *lookup(nw_series_t *r, const nw_series_desc_t *d, const char *const *values,
                       int create)
{
    char *key = make_key(d, values);
    if (!key)
        return NULL;
    if (r->icap) {
        for (size_t h = hash(d, key) & (r->icap - 1); r->index[h]; h = (h + 1) & (r->icap - 1)) {
            entry_t *e = &r->v[r->index[h] - 1];
            if (!e->dead && e->d == d && strcmp(e->key, key) == 0) {
                free(key);
                return e;
            }
        }
    }
    if (!create || (2 * (r->n + 1) >= r->icap && reindex(r, r->icap ? 2 * r->icap : 64) != 0)) {
        free(key);
        return NULL;
    }
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 64;
        entry_t *nv = realloc(r->v, cap * sizeof *nv);
        if (!nv) {
            free(key);
            return NULL;
        }
        r->v = nv;
        r->cap = cap;
    }
    entry_t *e = &r->v[r->n];
    memset(e, 0, sizeof *e);
    e->d = d;
    e->key = key;
    if ((d->kind == NW_SERIES_HISTOGRAM &&
         !(e->buckets = calloc((size_t)(d->nbuckets > 0 ? d->nbuckets : 1), sizeof *e->buckets))) ||
        (d->kind == NW_SERIES_SUMMARY &&
         !(e->window = calloc(NW_SERIES_SUMMARY_WINDOW, sizeof *e->window)))) {
        free(e->buckets);
        free(key);
        return NULL;
    }
    size_t h = hash(d, key) & (r->icap - 1);
    while (r->index[h])
        h = (h + 1) & (r->icap - 1);
    r->index[h] = ++r->n;
    return e;
}

void nw_series_add(nw_series_t *r, const nw_series_desc_t *d, const char *const *values, double v)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    entry_t *e = lookup(r, d, values, 1);
    if (e)
        e->v += v;
    pthread_mutex_unlock(&r->mu);
}

void nw_series_set(nw_series_t *r, const nw_series_desc_t *d, const char *const *values, double v)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    entry_t *e = lookup(r, d, values, 1);
    if (e)
        e->v = v;
    pthread_mutex_unlock(&r->mu);
}

void nw_series_observe(nw_series_t *r, const nw_series_desc_t *d, const char *const *values,
                       double v)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    entry_t *e = lookup(r, d, values, 1);
    if (e && e->window) {
        e->window[e->count % NW_SERIES_SUMMARY_WINDOW] = v;
        e->count++;
        e->v += v;
    } else if (e && e->buckets) {
        int i = 0;
        while (i < d->nbuckets && v > d->buckets[i])
            i++;
        if (i < d->nbuckets)
            e->buckets[i]++;
        e->count++;
        e->v += v;
    }
    pthread_mutex_unlock(&r->mu);
}

double nw_series_get(nw_series_t *r, const nw_series_desc_t *d, const char *const *values)
{
    if (!r)
        return 0;
    pthread_mutex_lock(&r->mu);
    entry_t *e = lookup(r, d, values, 0);
    double v = !e                                                               ? 0
               : d->kind == NW_SERIES_HISTOGRAM || d->kind == NW_SERIES_SUMMARY ? (double)e->count
                                                                                : e->v;
    pthread_mutex_unlock(&r->mu);
    return v;
}

/* Drop the removed entries and index the rest again (order kept). */
static void compact(nw_series_t *r)
{
    size_t k = 0;
    for (size_t i = 0; i < r->n; i++) {
        if (r->v[i].dead) {
            free(r->v[i].key);
            free(r->v[i].buckets);
            free(r->v[i].window);
        } else
            r->v[k++] = r->v[i];
    }
    r->n = k;
    r->dead = 0;
    if (r->icap)
        reindex(r, r->icap); /* on OOM the old index is kept: rebuilt by the next change */
}

void nw_series_remove(nw_series_t *r, const nw_series_desc_t *d, const char *const *values)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    entry_t *e = lookup(r, d, values, 0);
    if (e) {
        e->dead = true;
        if (++r->dead > 64 && r->dead * 2 > r->n)
            compact(r);
    }
    pthread_mutex_unlock(&r->mu);
}

void nw_series_clear(nw_series_t *r, const nw_series_desc_t *d)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    if (r->dead)
        compact(r);
    drop_entries(r, d);
    if (r->icap)
        reindex(r, r->icap); /* on OOM the old index is kept: rebuilt by the next change */
    pthread_mutex_unlock(&r->mu);
}

/* {a="x",b="y"[,extra]} from the label values (NULL counts as ""); "" when there is
 * nothing to write. */
static NW_MUST_USE nw_rc_t write_labels(nw_buf_t *out, const nw_series_desc_t *d,
                                        const char *const *values, const char *extra)
{
    int n = nlabels(d);
    if (!n && !extra)
        return NW_OK;
    nw_rc_t rc = nw_buf_adds(out, "{");
    for (int i = 0; i < n && rc == NW_OK; i++) {
        /* no printf here: a page of 100,000 series writes millions of labels */
        if (i)
            rc = nw_buf_add(out, ",", 1);
        if (rc == NW_OK && (rc = nw_buf_adds(out, d->labels[i])) == NW_OK)
            rc = nw_buf_add(out, "=\"", 2);
        const char *v = values && values[i] ? values[i] : "";
        if (rc == NW_OK) /* escaped byte by byte only when there is something to escape */
            rc = strpbrk(v, "\\\"\n") ? nw_prom_label_value(out, v) : nw_buf_adds(out, v);
        if (rc == NW_OK)
            rc = nw_buf_adds(out, "\"");
    }
    if (rc == NW_OK && extra)
        rc = nw_buf_addf(out, "%s%s", n ? "," : "", extra);
    return rc == NW_OK ? nw_buf_adds(out, "}") : rc;
}

/* An entry's label values, split out of its key into v (pointers into *copy, which the
 * caller frees). */
static NW_MUST_USE nw_rc_t key_values(const nw_series_desc_t *d, const char *key, char **copy,
                                      const char *v[NW_SERIES_MAX_LABELS])
{
    if (!(*copy = strdup(key)))
        return NW_ENOMEM;
    char *p = *copy;
    for (int i = 0, n = nlabels(d); i < n; i++) {
        v[i] = p;
        char *end = strchr(p, '\x1f');
        if (end) {
            *end = '\0';
            p = end + 1;
        } else
            p += strlen(p);
    }
    return NW_OK;
}

/* The shortest %g text that reads back as v (Go's strconv 'g', -1). */
static void shortest(char *buf, size_t len, double v)
{
    if (v == floor(v) && fabs(v) < 1e15) { /* integers without an exponent, as Go prints */
        snprintf(buf, len, "%.0f", v);
        return;
    }
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, len, "%.*g", p, v);
        if (strtod(buf, NULL) == v)
            return;
    }
}

static NW_MUST_USE nw_rc_t write_value(nw_buf_t *out, double v)
{
    if (isnan(v))
        return nw_buf_adds(out, " NaN\n");
    if (isinf(v))
        return nw_buf_adds(out, v > 0 ? " +Inf\n" : " -Inf\n");
    char b[40];
    shortest(b, sizeof b, v);
    return nw_buf_addf(out, " %s\n", b);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* name{labels,quantile="q"} v for Karpenter's objectives, then _sum and _count. */
static NW_MUST_USE nw_rc_t write_summary(nw_buf_t *out, const entry_t *e, const char *const *lv)
{
    static const double qs[] = {0, 0.5, 0.9, 0.99, 1};
    const nw_series_desc_t *d = e->d;
    size_t n = e->count < NW_SERIES_SUMMARY_WINDOW ? (size_t)e->count : NW_SERIES_SUMMARY_WINDOW;
    double sorted[NW_SERIES_SUMMARY_WINDOW];
    memcpy(sorted, e->window, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, cmp_double);
    nw_rc_t rc = NW_OK;
    for (size_t i = 0; i < sizeof qs / sizeof qs[0] && rc == NW_OK; i++) {
        char q[64], b[40];
        shortest(b, sizeof b, qs[i]);
        snprintf(q, sizeof q, "quantile=\"%s\"", b);
        double v = n ? sorted[(size_t)(qs[i] * (double)(n - 1) + 0.5)] : NAN;
        if ((rc = nw_buf_adds(out, d->name)) == NW_OK &&
            (rc = write_labels(out, d, lv, q)) == NW_OK)
            rc = write_value(out, v);
    }
    if (rc == NW_OK && (rc = nw_buf_addf(out, "%s_sum", d->name)) == NW_OK &&
        (rc = write_labels(out, d, lv, NULL)) == NW_OK)
        rc = write_value(out, e->v);
    if (rc == NW_OK && (rc = nw_buf_addf(out, "%s_count", d->name)) == NW_OK &&
        (rc = write_labels(out, d, lv, NULL)) == NW_OK)
        rc = nw_buf_addf(out, " %llu\n", (unsigned long long)e->count);
    return rc;
}

/* name_bucket{labels,le="x"} for each bucket and +Inf, then _sum and _count. */
static NW_MUST_USE nw_rc_t write_histogram(nw_buf_t *out, const entry_t *e, const char *const *lv)
{
    const nw_series_desc_t *d = e->d;
    nw_rc_t rc = NW_OK;
    uint64_t cum = 0;
    char le[64];
    for (int i = 0; i <= d->nbuckets && rc == NW_OK; i++) {
        if (i < d->nbuckets) {
            cum += e->buckets[i];
            char b[40];
            shortest(b, sizeof b, d->buckets[i]);
            snprintf(le, sizeof le, "le=\"%s\"", b);
        } else {
            cum = e->count;
            snprintf(le, sizeof le, "le=\"+Inf\"");
        }
        if ((rc = nw_buf_addf(out, "%s_bucket", d->name)) == NW_OK &&
            (rc = write_labels(out, d, lv, le)) == NW_OK)
            rc = nw_buf_addf(out, " %llu\n", (unsigned long long)cum);
    }
    if (rc == NW_OK && (rc = nw_buf_addf(out, "%s_sum", d->name)) == NW_OK &&
        (rc = write_labels(out, d, lv, NULL)) == NW_OK)
        rc = write_value(out, e->v);
    if (rc == NW_OK && (rc = nw_buf_addf(out, "%s_count", d->name)) == NW_OK &&
        (rc = write_labels(out, d, lv, NULL)) == NW_OK)
        rc = nw_buf_addf(out, " %llu\n", (unsigned long long)e->count);
    return rc;
}

nw_rc_t nw_series_write_header(nw_buf_t *out, const nw_series_desc_t *d)
{
    static const char *const kinds[] = {"counter", "gauge", "histogram", "summary"};
    return nw_buf_addf(out, "# HELP %s %s\n# TYPE %s %s\n", d->name, d->help, d->name,
                       kinds[d->kind]);
}

nw_rc_t nw_series_write_sample(nw_buf_t *out, const nw_series_desc_t *d, const char *const *values,
                               double v)
{
    nw_rc_t rc = nw_buf_adds(out, d->name);
    if (rc == NW_OK)
        rc = write_labels(out, d, values, NULL);
    return rc == NW_OK ? write_value(out, v) : rc;
}

static NW_MUST_USE nw_rc_t write_entry(nw_buf_t *out, const entry_t *e)
{
    const nw_series_desc_t *d = e->d;
    const char *lv[NW_SERIES_MAX_LABELS];
    char *copy = NULL;
    nw_rc_t rc = key_values(d, e->key, &copy, lv);
    if (rc == NW_OK)
        rc = d->kind == NW_SERIES_SUMMARY     ? write_summary(out, e, lv)
             : d->kind == NW_SERIES_HISTOGRAM ? write_histogram(out, e, lv)
                                              : nw_series_write_sample(out, d, lv, e->v);
    free(copy);
    return rc;
}

nw_rc_t nw_series_write(nw_series_t *r, const nw_series_desc_t *const *descs, size_t n,
                        nw_buf_t *out)
{
    pthread_mutex_lock(&r->mu);
    nw_rc_t rc = NW_OK;
    for (size_t i = 0; i < n && rc == NW_OK; i++) {
        const nw_series_desc_t *d = descs[i];
        rc = nw_series_write_header(out, d);
        for (size_t k = 0; k < r->n && rc == NW_OK; k++)
            if (r->v[k].d == d && !r->v[k].dead)
                rc = write_entry(out, &r->v[k]);
    }
    pthread_mutex_unlock(&r->mu);
    return rc;
}
