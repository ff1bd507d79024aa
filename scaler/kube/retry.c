/* scaler/kube/retry.c — token bucket and jittered exponential back-off. */
#include "scaler/kube/retry.h"

#include <errno.h>
#include <stdbool.h>
#include <time.h>

void nw_kube_retry_rl_init(nw_kube_rl_t *rl, const nw_clock_t *clock, double qps, int burst)
{
    pthread_mutex_init(&rl->mu, NULL);
    rl->clock = clock ? clock : nw_clock_system();
    rl->qps = qps;
    rl->burst = burst >= 1 ? burst : 1;
    rl->tokens = rl->burst;
    rl->last_ns = nw_clock_mono(rl->clock);
}

void nw_kube_retry_rl_cleanup(nw_kube_rl_t *rl)
{
    pthread_mutex_destroy(&rl->mu);
}

static void refill(nw_kube_rl_t *rl)
{
    int64_t now = nw_clock_mono(rl->clock);
    if (now > rl->last_ns) {
        rl->tokens += (double)(now - rl->last_ns) / 1e9 * rl->qps;
        if (rl->tokens > rl->burst)
            rl->tokens = rl->burst;
        rl->last_ns = now;
    }
}

bool nw_kube_retry_rl_try(nw_kube_rl_t *rl)
{
    if (rl->qps <= 0)
        return true;
    pthread_mutex_lock(&rl->mu);
    refill(rl);
    bool ok = rl->tokens >= 1.0;
    if (ok)
        rl->tokens -= 1.0;
    pthread_mutex_unlock(&rl->mu);
    return ok;
}

int64_t nw_kube_retry_rl_reserve(nw_kube_rl_t *rl)
{
    if (rl->qps <= 0)
        return 0;
    pthread_mutex_lock(&rl->mu);
    refill(rl);
    rl->tokens -= 1.0;
    int64_t wait = 0;
    if (rl->tokens < 0)
        wait = (int64_t)(-rl->tokens / rl->qps * 1e9);
    pthread_mutex_unlock(&rl->mu);
    return wait;
}

void nw_kube_retry_sleep_ns(int64_t ns)
{
    if (ns <= 0)
        return;
    struct timespec ts = {.tv_sec = ns / NW_NS_PER_SEC, .tv_nsec = ns % NW_NS_PER_SEC};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

void nw_kube_retry_rl_wait(nw_kube_rl_t *rl)
{
    nw_kube_retry_sleep_ns(nw_kube_retry_rl_reserve(rl));
}

void nw_kube_retry_backoff_init(nw_kube_backoff_t *b, int64_t base_ns, int64_t max_ns,
                                int64_t reset_after_ns, uint64_t seed)
{
    b->base_ns = base_ns > 0 ? base_ns : 1;
    b->max_ns = max_ns >= b->base_ns ? max_ns : b->base_ns;
    b->reset_after_ns = reset_after_ns;
    b->cur_ns = 0;
    b->last_fail_ns = 0;
    if (!seed) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        seed = (uint64_t)ts.tv_nsec * 2654435761u + (uint64_t)ts.tv_sec + (uint64_t)(uintptr_t)b;
    }
    b->rng = seed ? seed : 88172645463325252ull;
}

double nw_kube_retry_backoff_rand(nw_kube_backoff_t *b)
{
    uint64_t x = b->rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    b->rng = x;
    return (double)(x >> 11) / 9007199254740992.0; /* 2^53 */
}

int64_t nw_kube_retry_backoff_next(nw_kube_backoff_t *b, int64_t now_ns)
{
    if (b->cur_ns && b->reset_after_ns > 0 && now_ns - b->last_fail_ns >= b->reset_after_ns)
        b->cur_ns = 0;
    b->last_fail_ns = now_ns;
    int64_t d = b->cur_ns ? b->cur_ns : b->base_ns;
    b->cur_ns = d >= b->max_ns / 2 ? b->max_ns : d * 2;
    /* jitter in [d/2, d) */
    return d / 2 + (int64_t)(nw_kube_retry_backoff_rand(b) * (double)(d - d / 2));
}

void nw_kube_retry_backoff_reset(nw_kube_backoff_t *b)
{
    b->cur_ns = 0;
}
