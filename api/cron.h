/*
 * api/cron.h — the cron schedules of NodePool disruption budgets
 * (kubernetes-sigs/karpenter pkg/apis/v1/nodepool.go Budget): standard 5-field expressions (minute
 * hour day-of-month month day-of-week; `*`, `?`, lists, ranges, steps, month and weekday names) and
 * the macros @yearly @annually @monthly @weekly @daily @midnight @hourly, always in UTC.
 * Day-of-month and day-of-week combine as in robfig/cron (what Karpenter uses): when
 * either field starts with `*` both must match, otherwise either may.
 *
 * Pure: no clock reads (times are passed in, epoch nanoseconds). Thread: any.
 */
#ifndef NW_API_CRON_H
#define NW_API_CRON_H

#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"

typedef struct {
    uint64_t minute; /* bit i: minute i (0-59) */
    uint32_t hour;   /* 0-23 */
    uint32_t dom;    /* 1-31 */
    uint32_t month;  /* 1-12 */
    uint32_t dow;    /* 0-6, Sunday = 0 */
    bool dom_star, dow_star;
} nw_cron_t;

/** Parse an expression. Errors (NW_EINVAL) name the field and the bad text. */
NW_MUST_USE nw_rc_t nw_cron_parse(const char *expr, nw_cron_t *out, nw_err_t *err);

/** Does the schedule fire at the minute containing t (epoch ns, UTC)? */
bool nw_cron_matches(const nw_cron_t *c, int64_t t);

/** The first fire time strictly after `after`, searching up to `limit` (both epoch ns).
 * Returns true and *out, or false when there is none in (after, limit]. */
bool nw_cron_next(const nw_cron_t *c, int64_t after, int64_t limit, int64_t *out);

/** A budget window: active when a fire time lies in (now - duration, now]
 * (Karpenter: the next fire after now - duration is not after now). */
bool nw_cron_window_active(const nw_cron_t *c, int64_t duration_ns, int64_t now);

#endif
