/*
 * common/prom.c — Prometheus text helpers (see prom.h).
 */
#include "common/prom.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

nw_rc_t nw_prom_counter(nw_buf_t *out, const char *name, const char *help, uint64_t v)
{
    return nw_buf_addf(out, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", name, help, name, name,
                       (unsigned long long)v);
}

nw_rc_t nw_prom_label_value(nw_buf_t *out, const char *s)
{
    nw_rc_t rc = NW_OK;
    for (; *s && rc == NW_OK; s++) {
        if (*s == '\\')
            rc = nw_buf_adds(out, "\\\\");
        else if (*s == '"')
            rc = nw_buf_adds(out, "\\\"");
        else if (*s == '\n')
            rc = nw_buf_adds(out, "\\n");
        else
            rc = nw_buf_add(out, s, 1);
    }
    return rc;
}

/* ---- histograms ---- */

void nw_prom_hist_init(nw_hist_t *h, const double *le, int n)
{
    memset(h, 0, sizeof *h);
    h->le = le;
    h->n = n < 0 ? 0 : n > NW_HIST_MAX_BUCKETS ? NW_HIST_MAX_BUCKETS : n;
}

void nw_prom_hist_observe(nw_hist_t *h, int64_t ns)
{
    if (ns < 0)
        ns = 0;
    double s = (double)ns / 1e9;
    for (int i = 0; i < h->n; i++)
        if (s <= h->le[i])
            atomic_fetch_add(&h->bucket[i], 1);
    atomic_fetch_add(&h->count, 1);
    atomic_fetch_add(&h->sum_us, (uint64_t)(ns / 1000));
}

nw_rc_t nw_prom_hist_write(nw_hist_t *h, nw_buf_t *out, const char *name, const char *help,
                           const char *label)
{
    nw_rc_t rc = NW_OK;
    const char *l = label ? label : "", *sep = label ? "," : "";
    if (help)
        rc = nw_buf_addf(out, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    for (int i = 0; i < h->n && rc == NW_OK; i++)
        rc = nw_buf_addf(out, "%s_bucket{%s%sle=\"%g\"} %llu\n", name, l, sep, h->le[i],
                         (unsigned long long)atomic_load(&h->bucket[i]));
    uint64_t n = atomic_load(&h->count);
    double sum = (double)atomic_load(&h->sum_us) / 1e6;
    if (rc == NW_OK)
        rc = nw_buf_addf(out, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, l, sep,
                         (unsigned long long)n);
    if (rc == NW_OK)
        rc = label ? nw_buf_addf(out, "%s_sum{%s} %.6f\n%s_count{%s} %llu\n", name, l, sum, name, l,
                                 (unsigned long long)n)
                   : nw_buf_addf(out, "%s_sum %.6f\n%s_count %llu\n", name, sum, name,
                                 (unsigned long long)n);
    return rc;
}

/* ---- labelled counters ---- */

nw_rc_t nw_prom_counters_init(nw_counters_t *r)
{
    memset(r, 0, sizeof *r);
    return pthread_mutex_init(&r->mu, NULL) == 0 ? NW_OK : NW_ENOMEM;
}

void nw_prom_counters_free(nw_counters_t *r)
{
    if (!r)
        return;
    free(r->v);
    r->v = NULL;
    r->n = r->cap = 0;
    pthread_mutex_destroy(&r->mu);
}

static nw_counter_entry_t *find(nw_counters_t *r, const char *metric, const char *a, const char *b)
{
    for (size_t i = 0; i < r->n; i++) {
        nw_counter_entry_t *k = &r->v[i];
        if (strcmp(k->metric, metric) == 0 && strcmp(k->a, a) == 0 && strcmp(k->b, b) == 0)
            return k;
    }
    return NULL;
}

void nw_prom_counters_inc(nw_counters_t *r, const char *metric, const char *a, const char *b)
{
    a = a ? a : "";
    b = b ? b : "";
    pthread_mutex_lock(&r->mu);
    nw_counter_entry_t *k = find(r, metric, a, b);
    if (!k && r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 16;
        nw_counter_entry_t *nv = realloc(r->v, cap * sizeof *nv);
        if (nv) {
            r->v = nv;
            r->cap = cap;
        }
    }
    if (!k && r->n < r->cap) {
        k = &r->v[r->n++];
        memset(k, 0, sizeof *k);
        snprintf(k->metric, sizeof k->metric, "%s", metric);
        snprintf(k->a, sizeof k->a, "%s", a);
        snprintf(k->b, sizeof k->b, "%s", b);
    }
    if (k)
        k->v++;
    pthread_mutex_unlock(&r->mu);
}

uint64_t nw_prom_counters_get(nw_counters_t *r, const char *metric, const char *a, const char *b)
{
    pthread_mutex_lock(&r->mu);
    nw_counter_entry_t *k = find(r, metric, a ? a : "", b ? b : "");
    uint64_t v = k ? k->v : 0;
    pthread_mutex_unlock(&r->mu);
    return v;
}

nw_rc_t nw_prom_counters_write(nw_counters_t *r, nw_buf_t *out, const char *metric,
                               const char *name, const char *help, const char *la, const char *lb)
{
    pthread_mutex_lock(&r->mu);
    nw_rc_t rc = nw_buf_addf(out, "# HELP %s %s\n# TYPE %s counter\n", name, help, name);
    for (size_t i = 0; rc == NW_OK && i < r->n; i++) {
        const nw_counter_entry_t *k = &r->v[i];
        if (strcmp(k->metric, metric) != 0)
            continue;
        rc = nw_buf_addf(out, "%s{%s=\"", name, la);
        if (rc == NW_OK)
            rc = nw_prom_label_value(out, k->a);
        if (rc == NW_OK && lb) {
            rc = nw_buf_addf(out, "\",%s=\"", lb);
            if (rc == NW_OK)
                rc = nw_prom_label_value(out, k->b);
        }
        if (rc == NW_OK)
            rc = nw_buf_addf(out, "\"} %llu\n", (unsigned long long)k->v);
    }
    pthread_mutex_unlock(&r->mu);
    return rc;
}
