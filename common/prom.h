/*
 * common/prom.h — Prometheus text exposition shared by every /metrics producer:
 * one counter line, fixed-bucket histograms, and a small registry of labelled
 * counters (a family keyed by up to two label values).
 *
 *   nw_prom_counter(out, "x_total", "Help.", v);
 *   nw_hist_t h; nw_prom_hist_init(&h, bounds, n);    // bounds in seconds, ascending
 *   nw_prom_hist_observe(&h, ns);
 *   nw_prom_hist_write(&h, out, "x_seconds", "Help.", NULL);   // or a label: "route=\"a\""
 *
 * Ownership: nw_hist_t is caller storage (bounds borrowed, usually a static array);
 * nw_counters_t owns its entries (nw_prom_counters_free).
 * Thread: nw_prom_hist_observe/_write are lock-free (atomics); nw_counters_* take the
 * registry's mutex, so any thread may count and write.
 */
#ifndef NW_COMMON_PROM_H
#define NW_COMMON_PROM_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/err.h"

/** Append one counter (HELP, TYPE, value). */
NW_MUST_USE nw_rc_t nw_prom_counter(nw_buf_t *out, const char *name, const char *help, uint64_t v);

/** Append a label value with Prometheus escaping (backslash, quote, newline). */
NW_MUST_USE nw_rc_t nw_prom_label_value(nw_buf_t *out, const char *s);

#define NW_HIST_MAX_BUCKETS 16

typedef struct {
    const double *le; /* upper bounds in seconds, ascending (borrowed) */
    int n;            /* <= NW_HIST_MAX_BUCKETS */
    _Atomic uint64_t bucket[NW_HIST_MAX_BUCKETS]; /* cumulative counts */
    _Atomic uint64_t count;
    _Atomic uint64_t sum_us;
} nw_hist_t;

/** Zero h and set its bounds (n is clamped to NW_HIST_MAX_BUCKETS). */
void nw_prom_hist_init(nw_hist_t *h, const double *le, int n);

/** Record one observation of ns nanoseconds (negative counts as 0). */
void nw_prom_hist_observe(nw_hist_t *h, int64_t ns);

/** Append the series of h: name_bucket{le=...}, name_sum (seconds), name_count. label is
 * NULL or one `key="value"` pair put before le. help != NULL also writes HELP and TYPE
 * (pass NULL for the second and later series of one family). */
NW_MUST_USE nw_rc_t nw_prom_hist_write(nw_hist_t *h, nw_buf_t *out, const char *name,
                                       const char *help, const char *label);

/* A family of counters keyed by (metric, label values): e.g. drifted{nodepool,reason}. */
typedef struct {
    char metric[48];
    char a[128]; /* first label value */
    char b[48];  /* second label value ("" when the family has one label) */
    uint64_t v;
} nw_counter_entry_t;

typedef struct {
    pthread_mutex_t mu;
    nw_counter_entry_t *v;
    size_t n, cap;
} nw_counters_t;

/** Initialise an empty registry; NW_ENOMEM when the mutex cannot be made. */
NW_MUST_USE nw_rc_t nw_prom_counters_init(nw_counters_t *r);

/** Free the entries and the mutex. */
void nw_prom_counters_free(nw_counters_t *r);

/** Add one to (metric, a, b); a or b may be NULL (""). On OOM the count is dropped. */
void nw_prom_counters_inc(nw_counters_t *r, const char *metric, const char *a, const char *b);

/** Current value (0 if never counted). */
uint64_t nw_prom_counters_get(nw_counters_t *r, const char *metric, const char *a, const char *b);

/** Append HELP and TYPE of `name`, then the family of `metric` as `name{la="a"[,lb="b"]} v`
 * lines in first-counted order; lb NULL = one label. */
NW_MUST_USE nw_rc_t nw_prom_counters_write(nw_counters_t *r, nw_buf_t *out, const char *metric,
                                           const char *name, const char *help, const char *la,
                                           const char *lb);

#endif
