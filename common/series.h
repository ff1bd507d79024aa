/*
 * common/series.h — a registry of labelled Prometheus series: counters, gauges and
 * histograms whose families are described once (name, help, label names, buckets) and
 * whose series are keyed by their label values, as client_golang's *Vec types are.
 *
 *   static const nw_series_desc_t DISRUPTED = {
 *       "karpenter_nodeclaims_disrupted_total", "Number of nodeclaims disrupted ...",
 *       NW_SERIES_COUNTER, {"reason", "nodepool", "capacity_type"}};
 *   nw_series_t *r = nw_series_new();
 *   nw_series_add(r, &DISRUPTED, (const char *[]){"unhealthy", "default", "spot"}, 1);
 *   const nw_series_desc_t *all[] = {&DISRUPTED};
 *   nw_series_write(r, all, 1, out);       // HELP, TYPE, then every series of each family
 *
 * Label values are escaped on output (common/prom.h); a family written with no series
 * yet gets its HELP and TYPE lines only.
 *
 * Ownership: nw_series_new / nw_series_free; descriptions are borrowed (static storage).
 * Thread: any; every call takes the registry's mutex. A NULL registry: every change is
 * dropped, every value 0.
 */
#ifndef NW_COMMON_SERIES_H
#define NW_COMMON_SERIES_H

#include <stddef.h>

#include "common/buf.h"
#include "common/err.h"

#define NW_SERIES_MAX_LABELS 48

typedef enum {
    NW_SERIES_COUNTER,
    NW_SERIES_GAUGE,
    NW_SERIES_HISTOGRAM,
    NW_SERIES_SUMMARY /* quantiles 0, 0.5, 0.9, 0.99, 1 over the last NW_SERIES_SUMMARY_WINDOW
                       * observations (client_golang keeps 10 minutes of them) */
} nw_series_kind_t;
#define NW_SERIES_SUMMARY_WINDOW 512

typedef struct {
    const char *name, *help;
    nw_series_kind_t kind;
    const char *labels[NW_SERIES_MAX_LABELS]; /* label names, NULL-terminated (or full) */
    const double *buckets;                    /* histograms: upper bounds, ascending */
    int nbuckets;
} nw_series_desc_t;

typedef struct nw_series nw_series_t;

/** An empty registry, NULL on OOM. */
nw_series_t *nw_series_new(void);
/** Free. NULL-safe. */
void nw_series_free(nw_series_t *r);

/** Add v to the series of d with these label values (one per label name of d; NULL
 * counts as ""). Counters and gauges. On OOM the change is dropped. */
void nw_series_add(nw_series_t *r, const nw_series_desc_t *d, const char *const *values, double v);
/** Set a gauge's series to v. */
void nw_series_set(nw_series_t *r, const nw_series_desc_t *d, const char *const *values, double v);
/** Record one observation of a histogram's or summary's series. */
void nw_series_observe(nw_series_t *r, const nw_series_desc_t *d, const char *const *values,
                       double v);
/** The current value of a counter's or gauge's series (a histogram's: its count); 0 when
 * the series does not exist. */
double nw_series_get(nw_series_t *r, const nw_series_desc_t *d, const char *const *values);
/** Drop one series (a gauge whose object went away or whose labels changed). Absent: a
 * no-op. The registry keeps the order of the rest. */
void nw_series_remove(nw_series_t *r, const nw_series_desc_t *d, const char *const *values);
/** Drop every series of d (a gauge family rebuilt from scratch). */
void nw_series_clear(nw_series_t *r, const nw_series_desc_t *d);

/** Append each family of descs (HELP, TYPE, its series in first-seen order). */
NW_MUST_USE nw_rc_t nw_series_write(nw_series_t *r, const nw_series_desc_t *const *descs, size_t n,
                                    nw_buf_t *out);

/* For a producer that keeps its own series (no registry) and writes them as
 * nw_series_write would: the family's HELP and TYPE lines, then each series. */
/** Append d's HELP and TYPE lines. */
NW_MUST_USE nw_rc_t nw_series_write_header(nw_buf_t *out, const nw_series_desc_t *d);
/** Append one counter or gauge series of d: name{labels} value, the label values one per
 * label name of d (NULL counts as ""). */
NW_MUST_USE nw_rc_t nw_series_write_sample(nw_buf_t *out, const nw_series_desc_t *d,
                                           const char *const *values, double v);

#endif
