/*
 * common/workers.c — a few threads running queued jobs (see workers.h).
 */
#include "common/workers.h"

#include <pthread.h>
#include <stdlib.h>

#define MAX_THREADS 64

struct nw_workers {
    nw_workers_run_fn run;
    nw_workers_start_fn start;
    void *ud;
    pthread_mutex_t mu;
    pthread_cond_t work, idle;
    nw_workers_job_t *head, *tail; /* queued, in order */
    nw_workers_job_t *running;     /* being run (any order) */
    nw_workers_job_t *done;        /* finished, newest first */
    size_t ndone;
    int queued, nrunning;
    int want, started;
    pthread_t th[MAX_THREADS];
    bool stop;
};

/* Run j with w->mu held on entry and on return; j is on the running list meanwhile and on
 * the done list after. */
static void run_locked(nw_workers_t *w, nw_workers_job_t *j)
{
    j->next = w->running;
    w->running = j;
    w->nrunning++;
    pthread_mutex_unlock(&w->mu);
    w->run(j, w->ud);
    pthread_mutex_lock(&w->mu);
    for (nw_workers_job_t **pp = &w->running; *pp; pp = &(*pp)->next)
        if (*pp == j) {
            *pp = j->next;
            break;
        }
    w->nrunning--;
    j->next = w->done;
    w->done = j;
    w->ndone++;
    if (!w->head && !w->nrunning)
        pthread_cond_broadcast(&w->idle);
}

static void *worker(void *arg)
{
    nw_workers_t *w = arg;
    if (w->start)
        w->start(w->ud);
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->stop && !w->head)
            pthread_cond_wait(&w->work, &w->mu);
        if (w->stop)
            break;
        nw_workers_job_t *j = w->head;
        w->head = j->next;
        if (!w->head)
            w->tail = NULL;
        w->queued--;
        run_locked(w, j);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

nw_workers_t *nw_workers_new(int threads, nw_workers_run_fn run, nw_workers_start_fn start,
                             void *ud)
{
    nw_workers_t *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->run = run;
    w->start = start;
    w->ud = ud;
    w->want = threads < 1 ? 1 : threads > MAX_THREADS ? MAX_THREADS : threads;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->work, NULL);
    pthread_cond_init(&w->idle, NULL);
    return w;
}

static void drop_list(nw_workers_job_t *j, void (*drop)(nw_workers_job_t *job))
{
    for (nw_workers_job_t *nx; j; j = nx) {
        nx = j->next;
        if (drop)
            drop(j);
    }
}

void nw_workers_free(nw_workers_t *w, void (*drop)(nw_workers_job_t *job))
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    w->stop = true;
    pthread_cond_broadcast(&w->work);
    pthread_mutex_unlock(&w->mu);
    for (int i = 0; i < w->started; i++)
        pthread_join(w->th[i], NULL);
    drop_list(w->head, drop);
    drop_list(w->done, drop);
    pthread_cond_destroy(&w->idle);
    pthread_cond_destroy(&w->work);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

void nw_workers_submit(nw_workers_t *w, nw_workers_job_t *job)
{
    pthread_mutex_lock(&w->mu);
    job->next = NULL;
    if (w->tail)
        w->tail->next = job;
    else
        w->head = job;
    w->tail = job;
    w->queued++;
    /* one more thread while there are fewer than wanted and more jobs queued than threads
     * idle (a burst of submits comes before any thread has taken one) */
    if (w->started < w->want && w->queued > w->started - w->nrunning &&
        pthread_create(&w->th[w->started], NULL, worker, w) == 0)
        w->started++;
    if (w->started) {
        pthread_cond_signal(&w->work);
    } else {
        /* no thread could be started (and none ever was, so job is the only one queued):
         * run it here */
        w->head = w->tail = NULL;
        w->queued = 0;
        run_locked(w, job);
    }
    pthread_mutex_unlock(&w->mu);
}

nw_workers_job_t *nw_workers_collect(nw_workers_t *w, size_t *n)
{
    pthread_mutex_lock(&w->mu);
    nw_workers_job_t *d = w->done;
    if (n)
        *n = w->ndone;
    w->done = NULL;
    w->ndone = 0;
    pthread_mutex_unlock(&w->mu);
    return d;
}

size_t nw_workers_count(nw_workers_t *w, nw_workers_match_fn match, const void *arg)
{
    size_t k = 0;
    pthread_mutex_lock(&w->mu);
    const nw_workers_job_t *lists[] = {w->head, w->running};
    for (int i = 0; i < 2; i++)
        for (const nw_workers_job_t *j = lists[i]; j; j = j->next)
            k += !match || match(j, arg);
    pthread_mutex_unlock(&w->mu);
    return k;
}

void nw_workers_wait(nw_workers_t *w)
{
    pthread_mutex_lock(&w->mu);
    while (w->head || w->nrunning)
        pthread_cond_wait(&w->idle, &w->mu);
    pthread_mutex_unlock(&w->mu);
}
