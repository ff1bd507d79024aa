/* Unit tests for common/workers: every job runs once and comes back, threads start only as
 * jobs call for them and never beyond the limit, the start hook runs once per thread,
 * count sees queued and running jobs, and free drops what was never run or collected. */
#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/workers.h"

Suite *nw_workers_suite(void);

typedef struct {
    nw_workers_job_t link;
    int id;
    int runs;
    pthread_t ran_on;
} job_t;

/* The jobs' shared state: a gate that holds every run until opened, and what ran. */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool open;
    int running, max_running, started;
    int dropped;
} fix_t;

static void fix_init(fix_t *f, bool open)
{
    memset(f, 0, sizeof *f);
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cv, NULL);
    f->open = open;
}

static void fix_open(fix_t *f)
{
    pthread_mutex_lock(&f->mu);
    f->open = true;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

static void *fix_open_thread(void *f)
{
    fix_open(f);
    return NULL;
}

static void fix_cleanup(fix_t *f)
{
    pthread_cond_destroy(&f->cv);
    pthread_mutex_destroy(&f->mu);
}

static void run(nw_workers_job_t *job, void *ud)
{
    fix_t *f = ud;
    job_t *j = (job_t *)job;
    pthread_mutex_lock(&f->mu);
    f->running++;
    if (f->running > f->max_running)
        f->max_running = f->running;
    pthread_cond_broadcast(&f->cv);
    while (!f->open)
        pthread_cond_wait(&f->cv, &f->mu);
    f->running--;
    pthread_mutex_unlock(&f->mu);
    j->runs++;
    j->ran_on = pthread_self();
}

static void start(void *ud)
{
    fix_t *f = ud;
    pthread_mutex_lock(&f->mu);
    f->started++;
    pthread_mutex_unlock(&f->mu);
}

static fix_t *drop_fix; /* the fixture drop counts into */

static void drop(nw_workers_job_t *job)
{
    drop_fix->dropped++;
    free(job);
}

static bool is_even(const nw_workers_job_t *job, const void *arg)
{
    (void)arg;
    return ((const job_t *)job)->id % 2 == 0;
}

/* Wait until n jobs are inside run. */
static void wait_running(fix_t *f, int n)
{
    pthread_mutex_lock(&f->mu);
    while (f->running < n)
        pthread_cond_wait(&f->cv, &f->mu);
    pthread_mutex_unlock(&f->mu);
}

/* 20 jobs on 4 threads: each runs exactly once, never more than 4 at a time, no thread
 * beyond 4 starts, and all come back through collect. */
START_TEST(every_job_runs_once)
{
    fix_t f;
    fix_init(&f, false);
    nw_workers_t *w = nw_workers_new(4, run, start, &f);
    ck_assert_ptr_nonnull(w);
    job_t jobs[20];
    memset(jobs, 0, sizeof jobs);
    for (int i = 0; i < 20; i++) {
        jobs[i].id = i;
        nw_workers_submit(w, &jobs[i].link);
    }
    wait_running(&f, 4);
    ck_assert_uint_eq(nw_workers_count(w, NULL, NULL), 20);
    ck_assert_uint_eq(nw_workers_count(w, is_even, NULL), 10);
    fix_open(&f);
    nw_workers_wait(w);
    ck_assert_uint_eq(nw_workers_count(w, NULL, NULL), 0);
    size_t n;
    nw_workers_job_t *d = nw_workers_collect(w, &n);
    ck_assert_uint_eq(n, 20);
    size_t k = 0;
    for (; d; d = d->next)
        k++;
    ck_assert_uint_eq(k, 20);
    for (int i = 0; i < 20; i++) {
        ck_assert_int_eq(jobs[i].runs, 1);
        ck_assert(!pthread_equal(jobs[i].ran_on, pthread_self()));
    }
    ck_assert_int_eq(f.max_running, 4);
    ck_assert_int_eq(f.started, 4);
    ck_assert_ptr_null(nw_workers_collect(w, &n));
    ck_assert_uint_eq(n, 0);
    nw_workers_free(w, NULL);
    fix_cleanup(&f);
}
END_TEST

/* Jobs one after another, each waited for: one thread is enough and only one starts. */
START_TEST(a_trickle_keeps_one_thread)
{
    fix_t f;
    fix_init(&f, true);
    nw_workers_t *w = nw_workers_new(8, run, start, &f);
    ck_assert_ptr_nonnull(w);
    job_t jobs[5];
    memset(jobs, 0, sizeof jobs);
    for (int i = 0; i < 5; i++) {
        nw_workers_submit(w, &jobs[i].link);
        nw_workers_wait(w);
    }
    size_t n;
    (void)nw_workers_collect(w, &n);
    ck_assert_uint_eq(n, 5);
    ck_assert_int_eq(f.started, 1);
    nw_workers_free(w, NULL);
    fix_cleanup(&f);
}
END_TEST

/* free while jobs wait: the running one finishes, the queued ones are dropped unrun, and the
 * finished ones nobody collected are dropped too. */
START_TEST(free_drops_queued_and_uncollected)
{
    fix_t f;
    fix_init(&f, false);
    drop_fix = &f;
    nw_workers_t *w = nw_workers_new(1, run, NULL, &f);
    ck_assert_ptr_nonnull(w);
    job_t *jobs[4];
    for (int i = 0; i < 4; i++) {
        jobs[i] = calloc(1, sizeof *jobs[i]);
        ck_assert_ptr_nonnull(jobs[i]);
        nw_workers_submit(w, &jobs[i]->link);
    }
    wait_running(&f, 1); /* the first runs, three wait */
    ck_assert_uint_eq(nw_workers_count(w, NULL, NULL), 4);
    /* opening the gate from another thread while free joins: free must not wait for the
     * queued three, only for the one running */
    pthread_t opener;
    ck_assert_int_eq(pthread_create(&opener, NULL, fix_open_thread, &f), 0);
    nw_workers_free(w, drop);
    pthread_join(opener, NULL);
    /* at least the three queued when free stopped the pool, plus the finished first one
     * (never collected): all four come back through drop, none twice */
    ck_assert_int_eq(f.dropped, 4);
    fix_cleanup(&f);
}
END_TEST

/* Threads clamp to at least one: a pool asked for 0 still runs its jobs on a thread. */
START_TEST(zero_threads_means_one)
{
    fix_t f;
    fix_init(&f, true);
    nw_workers_t *w = nw_workers_new(0, run, start, &f);
    ck_assert_ptr_nonnull(w);
    job_t j = {0};
    nw_workers_submit(w, &j.link);
    nw_workers_wait(w);
    ck_assert_int_eq(j.runs, 1);
    ck_assert_int_eq(f.started, 1);
    size_t n;
    ck_assert_ptr_eq(nw_workers_collect(w, &n), &j.link);
    ck_assert_uint_eq(n, 1);
    nw_workers_free(w, NULL);
    nw_workers_free(NULL, NULL);
    fix_cleanup(&f);
}
END_TEST

Suite *nw_workers_suite(void)
{
    Suite *s = suite_create("workers");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, every_job_runs_once);
    tcase_add_test(tc, a_trickle_keeps_one_thread);
    tcase_add_test(tc, free_drops_queued_and_uncollected);
    tcase_add_test(tc, zero_threads_means_one);
    suite_add_tcase(s, tc);
    return s;
}
