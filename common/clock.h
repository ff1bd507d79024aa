/*
 * common/clock.h — time, replaceable in tests.
 *
 * Code that decides on time takes a `const nw_clock_t *` and asks it; tests
 * pass a fake clock they advance by hand. Times are int64 nanoseconds:
 * wall time since the Unix epoch (now_ns) and monotonic time (mono_ns).
 *
 * Thread: any (the fake clock uses atomics).
 */
#ifndef NW_COMMON_CLOCK_H
#define NW_COMMON_CLOCK_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

#define NW_NS_PER_SEC INT64_C(1000000000)
#define NW_NS_PER_MS INT64_C(1000000)

typedef struct nw_clock {
    int64_t (*now_ns)(const struct nw_clock *c);  /* wall clock, epoch ns */
    int64_t (*mono_ns)(const struct nw_clock *c); /* monotonic ns */
} nw_clock_t;

/** The real clock (static storage). */
const nw_clock_t *nw_clock_system(void);

struct timespec;
/** *ts = the real clock clk (CLOCK_MONOTONIC, CLOCK_REALTIME) plus ms: an absolute
 * deadline for pthread_cond_timedwait (a condition variable waits on CLOCK_REALTIME
 * unless its attributes say CLOCK_MONOTONIC). */
void nw_clock_deadline_after(struct timespec *ts, int clk, int64_t ms);

/** A clock tests move by hand; both readings advance together. */
typedef struct {
    nw_clock_t base; /* pass &fake.base where a clock is wanted */
    _Atomic int64_t wall_ns;
    _Atomic int64_t mono_ns;
} nw_clock_fake_t;

/** Start a fake clock at the given wall time (monotonic starts at 1 s). */
void nw_clock_fake_init(nw_clock_fake_t *f, int64_t wall_ns);

/** Move a fake clock forward. */
void nw_clock_fake_advance(nw_clock_fake_t *f, int64_t delta_ns);

static inline int64_t nw_clock_now(const nw_clock_t *c)
{
    return c->now_ns(c);
}

static inline int64_t nw_clock_mono(const nw_clock_t *c)
{
    return c->mono_ns(c);
}

/** Format wall time as RFC 3339 UTC with second precision ("2026-11-30T03:40:00Z").
 * buf must hold at least 21 bytes. Returns buf. */
char *nw_clock_time_format(int64_t wall_ns, char *buf, size_t len);

/** Parse RFC 3339 ("2026-11-30T03:40:00Z", with optional fraction and a Z or
 * +hh:mm offset) into epoch ns. NW_EPARSE on malformed input, NW_ERANGE for a
 * time outside int64 nanoseconds (after 2262-04-11T23:47:16Z or before 1677). */
NW_MUST_USE nw_rc_t nw_clock_time_parse(const char *s, int64_t *out_ns);

#endif
