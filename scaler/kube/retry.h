/*
 * scaler/kube/retry.h — client-side rate limiting (token bucket) and jittered
 * exponential back-off, both driven by an injected clock so tests control time.
 *
 * Token bucket: `burst` tokens, refilled at `qps` per second. Every request
 * takes one token; nw_kube_retry_rl_reserve says how long the caller must wait for
 * it (0 = go now). Reservations are first come, first served, so waiters are
 * spaced 1/qps apart once the bucket is empty (client-go's flowcontrol).
 *
 * Back-off: base doubling to max with "full jitter" in [d/2, d) (d = current
 * step); reset after `reset_after_ns` without a failure (the reflector model:
 * 800 ms .. 30 s, reset after 2 minutes; client-go tools/cache/reflector.go).
 *
 * Ownership: caller storage (_init). Thread: nw_kube_rl_* is thread-safe (a
 * mutex); a back-off belongs to one thread.
 */
#ifndef NW_SCALER_KUBE_RETRY_H
#define NW_SCALER_KUBE_RETRY_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/clock.h"

typedef struct {
    pthread_mutex_t mu;
    const nw_clock_t *clock;
    double qps;      /* tokens per second; <= 0 disables limiting */
    double burst;    /* bucket size (>= 1) */
    double tokens;   /* may go negative: outstanding reservations */
    int64_t last_ns; /* monotonic time of the last refill */
} nw_kube_rl_t;

/** Initialise a full bucket. qps <= 0 means unlimited. */
void nw_kube_retry_rl_init(nw_kube_rl_t *rl, const nw_clock_t *clock, double qps, int burst);

/** Release the mutex. */
void nw_kube_retry_rl_cleanup(nw_kube_rl_t *rl);

/** Take one token; returns the nanoseconds to wait before using it (0: now). */
int64_t nw_kube_retry_rl_reserve(nw_kube_rl_t *rl);

/** Take a token only if one is available now; returns true if taken, false if not. */
bool nw_kube_retry_rl_try(nw_kube_rl_t *rl);

/** Take a token and sleep until it is due (real time; for synchronous callers). */
void nw_kube_retry_rl_wait(nw_kube_rl_t *rl);

typedef struct {
    int64_t base_ns, max_ns, reset_after_ns;
    int64_t cur_ns;       /* next un-jittered step; 0 = start at base */
    int64_t last_fail_ns; /* monotonic time of the last failure */
    uint64_t rng;         /* xorshift state for jitter */
} nw_kube_backoff_t;

/** Initialise; seed 0 picks a seed from the clock. */
void nw_kube_retry_backoff_init(nw_kube_backoff_t *b, int64_t base_ns, int64_t max_ns,
                                int64_t reset_after_ns, uint64_t seed);

/** A failure happened at monotonic time now_ns: return how long to wait. */
int64_t nw_kube_retry_backoff_next(nw_kube_backoff_t *b, int64_t now_ns);

/** Forget the failures (after a success). */
void nw_kube_retry_backoff_reset(nw_kube_backoff_t *b);

/** A uniformly random value in [0, 1) from the back-off's generator. */
double nw_kube_retry_backoff_rand(nw_kube_backoff_t *b);

/** Sleep for ns nanoseconds (restarts on EINTR). */
void nw_kube_retry_sleep_ns(int64_t ns);

#endif
