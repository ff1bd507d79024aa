/*
 * scaler/kube/watch.h — list+watch of every cached kind, driven by one thread
 * through one curl_multi handle, feeding the cache (cache.h).
 *
 * Connections: no transfer of the watch thread shares one with another (the multi handle
 * does not multiplex): a LIST never waits behind a watch stream (see nw_kube_watch_new).
 *
 * Per kind (client-go tools/cache/reflector.go):
 *   LIST  GET <collection>?limit=N[&continue=T] (+ selectors) until continue is
 *         empty; pages are accumulated and applied with one nw_kube_cache_replace,
 *         so readers never see a partial relist. 410 on a continue token restarts
 *         the list. 404 (CRD not installed) counts as an empty, synced kind and
 *         is re-listed every backoff_max.
 *   WATCH GET ...?watch=1&resourceVersion=RV&allowWatchBookmarks=true&timeoutSeconds=T
 *         (T random in [timeout_min_s, timeout_max_s]); HTTP/1.1, one connection
 *         per stream; newline-delimited events parsed across arbitrary chunk
 *         boundaries; RV remembered after every event including BOOKMARK.
 *         Clean end or drop → re-watch from the last RV (after a back-off if the
 *         stream died at once); HTTP 410 or an ERROR event with code 410 →
 *         relist and replace; 504 ResourceVersionTooLarge → back off, relist;
 *         401 → reload the token, back off; 429/5xx/network → jittered back-off.
 *         Every relist of a watch that could not resume (410, an ERROR event, a broken
 *         stream, 504) marks the kind unsynced (nw_kube_cache_mark_unsynced) until it
 *         commits: events were lost, and the scaler pauses its writes meanwhile. A
 *         watch that failed so within a second of starting relists after the back-off
 *         (the window is still gone), any other at once; a list that succeeds and goes
 *         on to watch restarts the back-off at its first step.
 *
 * Ownership: nw_kube_watch_new borrows the client and cache (they must outlive
 * the watch); free with nw_kube_watch_free after nw_kube_watch_stop.
 * Thread: new/start/stop/free from one controlling thread; the watch thread is
 * the cache's only writer.
 */
#ifndef NW_SCALER_KUBE_WATCH_H
#define NW_SCALER_KUBE_WATCH_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "common/buf.h"
#include "common/err.h"
#include "scaler/kube/cache.h"
#include "scaler/kube/client.h"

/* ---- the event stream parser (pure, no I/O) ---- */

/* Called once per complete event. type is borrowed; object is owned by the callee (may
 * be NULL when the event has none). Return 0 to continue, non-zero to stop parsing. */
typedef int (*nw_kube_event_fn)(void *ud, const char *type, cJSON *object);

typedef struct {
    nw_buf_t line; /* the incomplete event carried over between chunks */
    nw_kube_event_fn fn;
    void *ud;
    int stopped;   /* the callback asked to stop */
    size_t events; /* events delivered */
    char err[160]; /* why the last feed failed */
} nw_kube_wparse_t;

/** Initialise; max_event caps one event's size (bytes). */
void nw_kube_watch_wparse_init(nw_kube_wparse_t *p, size_t max_event, nw_kube_event_fn fn,
                               void *ud);

/** Free the carry-over buffer. */
void nw_kube_watch_wparse_cleanup(nw_kube_wparse_t *p);

/**
 * Feed bytes as they arrive. @return NW_OK; NW_EPARSE for a line that is not an event
 * object ({"type": string, "object": ...}); NW_ERANGE for an event over max_event.
 * After the callback asks to stop, further input is ignored (NW_OK).
 */
NW_MUST_USE nw_rc_t nw_kube_watch_wparse_feed(nw_kube_wparse_t *p, const char *data, size_t n);

/** End of stream: a final event without its newline is delivered; an incomplete one
 * is reported with NW_EPARSE (and dropped). */
NW_MUST_USE nw_rc_t nw_kube_watch_wparse_finish(nw_kube_wparse_t *p);

/* ---- the watch engine ---- */

typedef struct {
    int timeout_min_s; /* watch timeoutSeconds range; default 300..600 */
    int timeout_max_s;
    int page_limit;          /* list page size; default 500 */
    int64_t backoff_base_ms; /* default 800 */
    int64_t backoff_max_ms;  /* default 30000 */
    unsigned kinds;          /* bit mask (1u << kind) of kinds to watch; 0 = all. Others are
                                marked synced and stay empty. */
    const char *label_selector[NW_KUBE_KINDS]; /* optional, per kind */
    const char *field_selector[NW_KUBE_KINDS]; /* optional, per kind */
} nw_kube_watch_opts_t;

typedef struct nw_kube_watch nw_kube_watch_t;

/** Create (no I/O, no thread yet). opts may be NULL. */
NW_MUST_USE nw_rc_t nw_kube_watch_new(nw_kube_client_t *c, nw_kube_cache_t *cache,
                                      const nw_kube_watch_opts_t *opts, nw_kube_watch_t **out,
                                      nw_err_t *err);

/** Start the watch thread. */
NW_MUST_USE nw_rc_t nw_kube_watch_start(nw_kube_watch_t *w, nw_err_t *err);

/** Stop the thread and close every stream (returns promptly). Idempotent. */
void nw_kube_watch_stop(nw_kube_watch_t *w);

/** Free (stops first if needed). NULL-safe. */
void nw_kube_watch_free(nw_kube_watch_t *w);

/**
 * The last error that kept a kind from syncing (e.g. 401/403/connection refused),
 * copied into buf ("" when none). Thread: any.
 */
void nw_kube_watch_last_error(nw_kube_watch_t *w, char *buf, size_t len);

#endif
