/* server/conns.c — the table of open connections (see conns.h). */
#include "server/conns.h"

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "common/clock.h"
#include "common/log.h"

struct nw_conn {
    int fd;
    nw_conn_state_t st;
    int64_t since_ns; /* when it entered its state */
    struct nw_conn *prev, *next;
};

typedef struct {
    nw_conn_t *head, *tail;
    unsigned n;
} clist_t;

struct nw_conns {
    nw_conns_opts_t o;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    clist_t lists[NW_CONN_STATES];
    bool stop;
    bool started;
    pthread_t sweeper;
};

static void list_push(clist_t *l, nw_conn_t *k)
{
    k->next = NULL;
    k->prev = l->tail;
    if (l->tail)
        l->tail->next = k;
    else
        l->head = k;
    l->tail = k;
    l->n++;
}

static void list_remove(clist_t *l, nw_conn_t *k)
{
    if (k->prev)
        k->prev->next = k->next;
    else
        l->head = k->next;
    if (k->next)
        k->next->prev = k->prev;
    else
        l->tail = k->prev;
    k->prev = k->next = NULL;
    l->n--;
}

static unsigned live_locked(const nw_conns_t *t)
{
    unsigned n = 0;
    for (int s = 0; s < NW_CONN_CLOSING; s++)
        n += t->lists[s].n;
    return n;
}

static void publish_locked(nw_conns_t *t)
{
    if (t->o.metrics)
        atomic_store_explicit(&t->o.metrics->conns_open, (int64_t)live_locked(t),
                              memory_order_relaxed);
}

static void count_close(nw_conns_t *t, nw_conn_close_t why, unsigned n)
{
    if (t->o.metrics && n)
        atomic_fetch_add_explicit(&t->o.metrics->conns_closed[why], n, memory_order_relaxed);
}

/* Shut k's socket down (libmicrohttpd then closes it) and park it as CLOSING. */
static void shut_locked(nw_conns_t *t, nw_conn_t *k, int64_t now_ns)
{
    shutdown(k->fd, SHUT_RDWR);
    list_remove(&t->lists[k->st], k);
    k->st = NW_CONN_CLOSING;
    k->since_ns = now_ns;
    list_push(&t->lists[NW_CONN_CLOSING], k);
}

nw_conns_t *nw_conns_new(const nw_conns_opts_t *o)
{
    nw_conns_t *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->o = *o;
    if (!t->o.cap)
        t->o.cap = 1;
    pthread_mutex_init(&t->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&t->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (t->o.metrics) {
        atomic_store(&t->o.metrics->conns_max, (int64_t)t->o.cap);
        atomic_store(&t->o.metrics->conns_open, 0);
    }
    return t;
}

void nw_conns_free(nw_conns_t *t)
{
    if (!t)
        return;
    nw_conns_sweeper_stop(t);
    for (int s = 0; s < NW_CONN_STATES; s++)
        for (nw_conn_t *k = t->lists[s].head, *n; k; k = n) {
            n = k->next;
            free(k);
        }
    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

/* The connection to give up for a new one: the oldest that has not sent a request,
 * then the one idle longest, then the body that started first; NULL if all others
 * are busy. */
static nw_conn_t *victim_locked(nw_conns_t *t, const nw_conn_t *fresh)
{
    nw_conn_t *k = t->lists[NW_CONN_FRESH].head;
    if (k && k != fresh)
        return k;
    if ((k = t->lists[NW_CONN_IDLE].head) != NULL)
        return k;
    return t->lists[NW_CONN_BODY].head;
}

nw_conn_t *nw_conns_open(nw_conns_t *t, int fd, int64_t now_ns)
{
    nw_conn_t *k = calloc(1, sizeof *k);
    if (!k)
        return NULL;
    k->fd = fd;
    k->st = NW_CONN_FRESH;
    k->since_ns = now_ns;
    pthread_mutex_lock(&t->mu);
    list_push(&t->lists[NW_CONN_FRESH], k);
    if (live_locked(t) > t->o.cap) {
        nw_conn_t *v = victim_locked(t, k);
        bool refused = v == NULL;
        shut_locked(t, refused ? k : v, now_ns);
        count_close(t, refused ? NW_CONN_CLOSE_REFUSED : NW_CONN_CLOSE_EVICTED, 1);
        if (refused)
            nw_log_every(5, NW_LOG_WARN, "webhook",
                         "connection closed at accept: webhook.maxConnections are open and "
                         "every one is in a request",
                         NW_LI("maxConnections", t->o.cap));
        else
            nw_log_every(5, NW_LOG_WARN, "webhook",
                         "webhook.maxConnections reached: closing the oldest connection "
                         "without a request in progress for each new one",
                         NW_LI("maxConnections", t->o.cap));
    }
    publish_locked(t);
    pthread_mutex_unlock(&t->mu);
    return k;
}

void nw_conns_set(nw_conns_t *t, nw_conn_t *k, nw_conn_state_t st, int64_t now_ns)
{
    if (!k || st >= NW_CONN_CLOSING)
        return;
    pthread_mutex_lock(&t->mu);
    if (k->st != NW_CONN_CLOSING) {
        list_remove(&t->lists[k->st], k);
        k->st = st;
        k->since_ns = now_ns;
        list_push(&t->lists[st], k);
    }
    pthread_mutex_unlock(&t->mu);
}

void nw_conns_closed(nw_conns_t *t, nw_conn_t *k)
{
    if (!k)
        return;
    pthread_mutex_lock(&t->mu);
    list_remove(&t->lists[k->st], k);
    publish_locked(t);
    pthread_mutex_unlock(&t->mu);
    free(k);
}

/* Shut down the head entries of state st that entered it more than limit_ns ago, at
 * most max of them. */
static unsigned expire_locked(nw_conns_t *t, nw_conn_state_t st, int64_t limit_ns, int64_t now_ns,
                              unsigned max)
{
    unsigned n = 0;
    nw_conn_t *k;
    while (n < max && (k = t->lists[st].head) != NULL && now_ns - k->since_ns > limit_ns) {
        shut_locked(t, k, now_ns);
        n++;
    }
    return n;
}

unsigned nw_conns_sweep(nw_conns_t *t, int64_t now_ns)
{
    pthread_mutex_lock(&t->mu);
    unsigned n = 0, busy_n = 0;
    int64_t limit = t->o.header_timeout_ns;
    int64_t busy = t->o.busy_header_timeout_ns;
    if (busy > 0 && (limit <= 0 || busy < limit) && 2 * (uint64_t)live_locked(t) > t->o.cap) {
        /* spread: when the server passes half full, every fresh connection older than
         * the busy timeout is due at once, and closing thousands in one go holds
         * libmicrohttpd's threads for that long */
        unsigned max = t->o.cap / NW_CONNS_BUSY_SPREAD;
        busy_n = expire_locked(t, NW_CONN_FRESH, busy, now_ns, max < 16 ? 16 : max);
        count_close(t, NW_CONN_CLOSE_BUSY_HEADER_TIMEOUT, busy_n);
    }
    if (limit > 0) {
        n = expire_locked(t, NW_CONN_FRESH, limit, now_ns, UINT_MAX);
        n += expire_locked(t, NW_CONN_IDLE, t->o.idle_timeout_ns + limit, now_ns, UINT_MAX);
        count_close(t, NW_CONN_CLOSE_HEADER_TIMEOUT, n);
    }
    publish_locked(t);
    pthread_mutex_unlock(&t->mu);
    if (n + busy_n && t->o.metrics)
        atomic_fetch_add(&t->o.metrics->aborted, n + busy_n);
    if (n + busy_n)
        nw_log_every(5, NW_LOG_WARN, "webhook",
                     "connections closed: no request headers within webhook.headerTimeout "
                     "(webhook.busyHeaderTimeout while over half of webhook.maxConnections "
                     "are open)",
                     NW_LI("closed", n), NW_LI("closedBusy", busy_n));
    return n + busy_n;
}

unsigned nw_conns_live(nw_conns_t *t)
{
    pthread_mutex_lock(&t->mu);
    unsigned n = live_locked(t);
    pthread_mutex_unlock(&t->mu);
    return n;
}

unsigned nw_conns_count(nw_conns_t *t, nw_conn_state_t st)
{
    if (st >= NW_CONN_STATES)
        return 0;
    pthread_mutex_lock(&t->mu);
    unsigned n = t->lists[st].n;
    pthread_mutex_unlock(&t->mu);
    return n;
}

nw_conn_state_t nw_conns_state(nw_conns_t *t, const nw_conn_t *k)
{
    pthread_mutex_lock(&t->mu);
    nw_conn_state_t st = k->st;
    pthread_mutex_unlock(&t->mu);
    return st;
}

static void *sweeper_main(void *arg)
{
    nw_conns_t *t = arg;
    pthread_mutex_lock(&t->mu);
    while (!t->stop) {
        struct timespec ts;
        nw_clock_deadline_after(&ts, CLOCK_MONOTONIC, NW_CONNS_SWEEP_MS);
        pthread_cond_timedwait(&t->cv, &t->mu, &ts);
        if (t->stop)
            break;
        pthread_mutex_unlock(&t->mu);
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        (void)nw_conns_sweep(t, (int64_t)now.tv_sec * NW_NS_PER_SEC + now.tv_nsec);
        pthread_mutex_lock(&t->mu);
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

nw_rc_t nw_conns_sweeper_start(nw_conns_t *t)
{
    if (t->started)
        return NW_OK;
    t->stop = false;
    if (pthread_create(&t->sweeper, NULL, sweeper_main, t) != 0)
        return NW_EIO;
    pthread_setname_np(t->sweeper, "nw-sweeper");
    t->started = true;
    return NW_OK;
}

void nw_conns_sweeper_stop(nw_conns_t *t)
{
    if (!t->started)
        return;
    pthread_mutex_lock(&t->mu);
    t->stop = true;
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
    pthread_join(t->sweeper, NULL);
    t->started = false;
}
