/*
 * scaler/controllers/nominate.h — the provisioner's writes of pods' status.nominatedNodeName,
 * off the reconcile thread.
 *
 * Kubernetes 1.35's kube-scheduler (KEP-5278, feature gate NominatedNodeNameForExpectation,
 * beta and on by default) tries a pending pod's nominated node first, whoever nominated it,
 * and counts the pods nominated to a node as taking their room there against pods of no
 * higher priority. The provisioner (provisioning.c) submits one write per pod once the Node
 * planned for it exists, a Node's writes together; a few threads of this module's own send
 * them (a JSON patch of pods/status; a common/workers.h pool) in parallel; the provisioner
 * waits only for those naming Nodes about to be registered, and collects the answers on its
 * next tick. The lifecycle controller registers a Node only once nw_nominate_may_register
 * says so.
 *
 * Each write is a JSON patch whose tests make it a no-op (HTTP 422) on a pod that changed
 * since it was seen: the same uid, still unbound, and status.nominatedNodeName still what was
 * seen (absent, or the provisioner's own; kube-apiserver's JSON patch takes a missing member
 * as equal to null). A nomination the kube-scheduler wrote meanwhile is so never overwritten.
 *
 * Ownership: nw_nominate_new / nw_nominate_free; submitted strings are copied; collected
 * results are the caller's (nw_nominate_results_free).
 * Threads: submit, collect and wait from one thread (the reconcile thread), pending, scanned
 * and may_register from any; the writes run on up to `threads` threads started on demand
 * (common/workers.h) and joined by nw_nominate_free.
 */
#ifndef NW_SCALER_CONTROLLERS_NOMINATE_H
#define NW_SCALER_CONTROLLERS_NOMINATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/pod.h"
#include "common/err.h"
#include "scaler/ctl/ctl.h"

typedef struct nw_nominate nw_nominate_t;

/** A finished write. */
typedef struct {
    char *uid, *key; /* the pod's uid and "namespace/name" */
    char *node;      /* what was written; NULL: the nomination was cleared */
    nw_rc_t rc;      /* NW_OK, or the write's error (NW_EKUBE "HTTP 422": a test failed) */
    nw_err_t err;
} nw_nominate_result_t;

/** New writer on deps' Kubernetes client (borrowed; outlives it), with up to threads
 * threads (1..32). NULL on OOM. */
nw_nominate_t *nw_nominate_new(nw_ctl_deps_t *deps, int threads);

/** Stop: writes not started are dropped, the running ones finish, the threads are joined. */
void nw_nominate_free(nw_nominate_t *n);

/** Queue a write of pod's status.nominatedNodeName: node, or NULL to clear the one the pod
 * has (which must then be the provisioner's). The pod record is borrowed for the call.
 * NW_ENOMEM when it could not be queued. */
NW_MUST_USE nw_rc_t nw_nominate_submit(nw_nominate_t *n, const nw_pod_t *pod, const char *node);

/** Take the finished writes (*out owned, NULL when none); their number. */
size_t nw_nominate_collect(nw_nominate_t *n, nw_nominate_result_t **out);

void nw_nominate_results_free(nw_nominate_result_t *r, size_t n);

/** The writes naming node (queued or being written): the lifecycle controller registers a
 * Node, which lets pods bind there, only once none is left (n NULL: 0). Any thread. */
size_t nw_nominate_pending(nw_nominate_t *n, const char *node);

/** The provisioner has submitted every write the pods of snapshot generation gen call for
 * (a scan of it, or of an earlier one with nothing changed since). From the first call on,
 * nw_nominate_may_register also waits for such a scan. Any thread. */
void nw_nominate_scanned(nw_nominate_t *n, uint64_t gen);

/** May Node node, seen in a snapshot of generation gen, be registered now (its
 * karpenter.sh/unregistered taint lifted, which lets pods bind there)? Only once no write
 * naming it is queued or being written, and, once the provisioner reports its scans
 * (nw_nominate_scanned), once it has scanned a snapshot at least as new as the one in which
 * this question was first asked about node: one that holds the Node, so that the writes for
 * the pods planned there were submitted. Without that, a Node that appears between the
 * provisioner's snapshot and the lifecycle controller's would be registered before any of
 * its pods is nominated, and the kube-scheduler, which prefers the emptiest node, would fill
 * it with pods planned elsewhere. n NULL: true. Any thread. */
bool nw_nominate_may_register(nw_nominate_t *n, const char *node, uint64_t gen);

/** Wait until every queued write has finished (tests; the results wait for collect). */
void nw_nominate_wait(nw_nominate_t *n);

#endif
