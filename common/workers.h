/*
 * common/workers.h — a few threads that run queued jobs in their order and hand them back
 * finished: the shape of the lifecycle controller's registration writes
 * (scaler/controllers/lifecycle.c) and the provisioner's nomination writes
 * (scaler/controllers/nominate.c).
 *
 *   typedef struct { nw_workers_job_t link; char *what; int rc; } my_job_t;  // link first
 *   static void run(nw_workers_job_t *j, void *ud) { my_job_t *m = (my_job_t *)j; ... }
 *
 *   nw_workers_t *w = nw_workers_new(8, run, NULL, ud);  // no thread yet
 *   nw_workers_submit(w, &job->link);         // queued; a thread runs run(&job->link, ud)
 *   size_t n;
 *   nw_workers_job_t *done = nw_workers_collect(w, &n); // finished, newest first (->next)
 *   nw_workers_count(w, match, arg);          // queued or running jobs that match
 *   nw_workers_wait(w);                       // until none is queued or running
 *   nw_workers_free(w, drop);                 // queued ones dropped unrun, running ones
 *                                             // finish, threads joined
 *
 * Threads start on demand: a submit starts one more (up to the number given to new) while
 * more jobs are queued than threads are idle, so a burst of submits gets every thread and a
 * trickle keeps one. Each thread calls start(ud), when given, once before its first job
 * (e.g. to install a thread-local rate limit).
 *
 * Errors: none to report. A submit never fails: when no thread has ever started and none can
 * be (pthread_create fails), the job runs on the submitting thread before submit returns, and
 * is collected as any other.
 *
 * Ownership: the pool is nw_workers_new's caller's (nw_workers_free). A job is the caller's
 * memory; from submit it belongs to the pool until collect hands it back (then the caller's
 * again), or until free hands it to drop (queued, never run, or finished and not collected).
 * run may change the job but must not free it.
 *
 * Threads: submit, collect, count and wait from any thread (the pool's lock; match runs under
 * it and must not call back into the pool); run on the pool's threads (or the submitter's, as
 * above), at the same time as the submitter's other calls; free from one thread once every
 * other caller is done, never from run.
 */
#ifndef NW_COMMON_WORKERS_H
#define NW_COMMON_WORKERS_H

#include <stdbool.h>
#include <stddef.h>

/* The first member of a job: the pool's link (the pool writes next). */
typedef struct nw_workers_job {
    struct nw_workers_job *next;
} nw_workers_job_t;

typedef struct nw_workers nw_workers_t;

typedef void (*nw_workers_run_fn)(nw_workers_job_t *job, void *ud);
typedef void (*nw_workers_start_fn)(void *ud);
typedef bool (*nw_workers_match_fn)(const nw_workers_job_t *job, const void *arg);

/** New pool of up to threads threads (clamped to 1..64) running run(job, ud); start (NULL:
 * none) runs once on each thread before its first job. NULL on OOM. */
nw_workers_t *nw_workers_new(int threads, nw_workers_run_fn run, nw_workers_start_fn start,
                             void *ud);

/** Stop: queued jobs are not run, running ones finish, the threads are joined; then every
 * queued and every finished, uncollected job is handed to drop (NULL: left alone). NULL-safe. */
void nw_workers_free(nw_workers_t *w, void (*drop)(nw_workers_job_t *job));

/** Queue job (its link is overwritten); see Errors above. */
void nw_workers_submit(nw_workers_t *w, nw_workers_job_t *job);

/** Take the finished jobs (linked by next, newest first; NULL when none); *n their number
 * (n may be NULL). */
nw_workers_job_t *nw_workers_collect(nw_workers_t *w, size_t *n);

/** The queued and running jobs for which match(job, arg) is true (match NULL: all). */
size_t nw_workers_count(nw_workers_t *w, nw_workers_match_fn match, const void *arg);

/** Wait until no job is queued or running (finished ones wait for collect). */
void nw_workers_wait(nw_workers_t *w);

#endif
