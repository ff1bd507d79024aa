/*
 * tests/unit/ctlfix.h — a fixture for controller tick tests: the controllers' dependencies
 * (nw_ctl_deps_t), shared memory (nw_ctl_shared_t) and NodeClaim launcher (nw_nodeclaim_t, the
 * provisioner's and disruption's) wired to a fake clock, the shared fake cloud (fakecloud.h), a
 * watch cache the test fills by hand, and a Kubernetes API (fakeapi.h) that keeps objects in
 * memory: POST stores (generateName gets a counter suffix), GET/PUT/DELETE act on the stored object
 * (PUT to /status replaces it too; DELETE of an object with finalizers only sets its
 * deletionTimestamp, as the API server does), a merge PATCH is applied (other patches leave
 * it), a test hook may answer first (evictions, errors), and every request is logged so a test can
 * count "DELETE .../nodeclaims/x" or the Events posted.
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
#include "scaler/ctl/ctl.h"
#include "scaler/nodeclaim/nodeclaim.h"

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
    /* a test's own answers, asked first (after logging): 1 when it replied */
    int (*hook)(void *ud, const fake_req_t *r, fake_conn_t *c);
    void *hook_ud;
} ctlfix_api_t;

typedef struct {
    ctlfix_api_t api;
    fake_srv_t *srv;
    fake_cloud_t *cloud;
    nw_clock_fake_t clk;
    nw_ctl_deps_t deps;
    nw_ctl_shared_t mem; /* vmMemoryOverheadPercent 0.075, batchMaxDuration 10 s */
    nw_nodeclaim_t *claims;
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

/** Does the Node object carry karpenter.sh/disrupted:NoSchedule (nw_ctl_has_disrupted_taint
 * of its record; the object must decode). */
bool ctlfix_disrupted_taint(const cJSON *node);

/** Does b, just filled by a controller's metrics function that returned rc, hold line?
 * Prints the text when not; frees b. Use: nw_buf_init(&b, 1 << 20);
 * ck_assert(ctlfix_metric(&b, nw_x_metrics(x, &b), "name 1\n")). */
int ctlfix_metric(nw_buf_t *b, nw_rc_t rc, const char *line);

/** Copy every NodeClaim the fake API holds into the cache (as the watch would). */
void ctlfix_sync_nodeclaims(ctlfix_t *f);

/** Copy the object the fake API holds at path into the cache (kind k); 0 when it holds none. */
int ctlfix_sync(ctlfix_t *f, nw_kube_kind_t k, const char *path);

/** Remove object ns/name (ns "" for cluster-scoped) of kind k from the cache, as a watch
 * DELETED event would. */
void ctlfix_del(ctlfix_t *f, nw_kube_kind_t k, const char *ns, const char *name);

/* ---- shared objects (in the cache and the API) ---- */

/** EC2NodeClass "default" (an AMI id, subnet and security-group selectors). */
void ctlfix_put_nodeclass(ctlfix_t *f);

/** NodePool "default" on EC2NodeClass default: instance category m, amd64, on-demand;
 * disruption (a JSON object, NULL: none) goes into spec.disruption. */
void ctlfix_put_nodepool(ctlfix_t *f, const char *disruption);

/** A launched NodeClaim `name` of pool default (m5.large) with providerID pid; extra_md is
 * appended inside metadata, extra_spec inside spec, conds after the Launched condition (each
 * NULL or starting with a comma). */
void ctlfix_launched_claim(ctlfix_t *f, const char *name, const char *pid, const char *extra_md,
                           const char *extra_spec, const char *conds);

/** A NodeClaim `name` (pool default, m5.large, on-demand, us-west-2a, created 2 h before
 * CTLFIX_T0, Launched, Registered and Initialized; providerID aws:///us-west-2a/i-<name>)
 * and its Ready Node "node-<name>"; conds (NULL or starting with a comma) are added to the
 * NodeClaim's conditions. */
void ctlfix_node_pair(ctlfix_t *f, const char *name, const char *conds);

/** RFC 7386 JSON merge patch of patch into target, in place (what a merge PATCH does). */
void ctlfix_merge(cJSON *target, const cJSON *patch);

#endif
