/*
 * tests/unit/ctlfix.h — a fixture for controller tick tests: the scaler context nw_ctl_t
 * wired to a fake clock, the shared fake cloud (fakecloud.h), a watch cache the test fills
 * by hand, and a Kubernetes API (fakeapi.h) that keeps objects in memory: POST stores
 * (generateName gets a counter suffix), GET/PUT/DELETE act on the stored object (PUT to
 * /status replaces it too), a merge PATCH is applied (other patches leave it), and every
 * request is logged so a test can count "DELETE .../nodeclaims/x" or the Events posted.
 *
 * A tick sees only the cache: tests copy what they want the controller to see next
 * with ctlfix_put (the watch is not running).
 *
 * Ownership: ctlfix_init / ctlfix_free. Thread: the test thread plus the fake API's.
 */
#ifndef NW_TESTS_CTLFIX_H
#define NW_TESTS_CTLFIX_H

#include <pthread.h>

#include "fakeapi.h"
#include "fakecloud.h"
#include "scaler/controllers/ctl.h"

#define CTLFIX_T0 (INT64_C(1796040000) * NW_NS_PER_SEC) /* 2026-11-30T12:00:00Z */
#define CTLFIX_MAXREQ 1024
#define CTLFIX_MAXOBJ 64

typedef struct {
    pthread_mutex_t mu;
    char *log[CTLFIX_MAXREQ]; /* "METHOD path body" */
    int nlog;
    char *path[CTLFIX_MAXOBJ]; /* stored objects by path (no /status, no query) */
    char *body[CTLFIX_MAXOBJ];
    int nobj;
    int serial;
    const char *forbid; /* path substring answered 403 */
} ctlfix_api_t;

typedef struct {
    ctlfix_api_t api;
    fake_srv_t *srv;
    fake_cloud_t *cloud;
    nw_clock_fake_t clk;
    nw_ctl_t ctl;
} ctlfix_t;

void ctlfix_init(ctlfix_t *f);
void ctlfix_free(ctlfix_t *f);

/** Parse json into the cache (upsert) and, when api is set, store it in the fake API at
 * its object path too. Aborts on bad JSON. */
void ctlfix_put(ctlfix_t *f, nw_kube_kind_t k, const char *json, int api);

/** Requests logged since mark that contain every non-NULL substring. */
int ctlfix_count(ctlfix_t *f, int mark, const char *s1, const char *s2, const char *s3);

/** The number of requests logged so far (a mark for ctlfix_count). */
int ctlfix_mark(ctlfix_t *f);

/** A copy of the stored object at path (cJSON, owned) or NULL. */
cJSON *ctlfix_get(ctlfix_t *f, const char *path);

/** Copy every NodeClaim the fake API holds into the cache (as the watch would). */
void ctlfix_sync_nodeclaims(ctlfix_t *f);

#endif
