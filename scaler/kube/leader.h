/*
 * scaler/kube/leader.h — leader election with a coordination.k8s.io/v1 Lease,
 * the algorithm of client-go's tools/leaderelection/leaderelection.go:
 *
 *   - GET the Lease; 404 → create it naming us (409: someone else won).
 *   - Expiry is judged on OUR monotonic clock: the Lease is expired when its
 *     spec has not changed for leaseDurationSeconds since we saw it change
 *     (never by comparing the holder's renewTime with our wall clock).
 *   - Not held, expired, or ours → PUT with the read resourceVersion naming us
 *     (acquireTime/leaseTransitions kept when we already held it).
 *   - As leader, renew every retry period; if no renew succeeds within the renew
 *     deadline, on_stopped is called at once and the elector goes back to
 *     acquiring. Lease requests are single attempts bounded by the retry period.
 *   - nw_kube_leader_stop releases a held Lease (holder "", duration 1 s) so a
 *     standby takes over within about a second.
 * Defaults: lease 15 s, renew deadline 10 s, retry 2 s, jitter 1.2; required
 * lease > renew deadline > 1.2 × retry.
 *
 * Ownership: the elector borrows the client; free with nw_kube_leader_free.
 * Thread: callbacks run on the elector's own thread; nw_kube_leader_is_leader
 * from any thread; new/start/stop/free from one controlling thread.
 */
#ifndef NW_SCALER_KUBE_LEADER_H
#define NW_SCALER_KUBE_LEADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "scaler/kube/client.h"

typedef struct {
    const char *namespace;                                 /* Lease namespace (required) */
    const char *name;                                      /* Lease name (required) */
    const char *identity;                                  /* holderIdentity; NULL: hostname_pid */
    int64_t lease_ms;                                      /* default 15000 */
    int64_t renew_deadline_ms;                             /* default 10000 */
    int64_t retry_ms;                                      /* default 2000 */
    int no_release;                                        /* 1: do not release the Lease on stop */
    void (*on_started)(void *ud);                          /* became leader */
    void (*on_stopped)(void *ud);                          /* lost or gave up leadership */
    void (*on_new_leader)(const char *identity, void *ud); /* observed holder changed */
    void *ud;
} nw_kube_leader_opts_t;

typedef struct nw_kube_leader nw_kube_leader_t;

/** Validate options and create an elector (no I/O). */
NW_MUST_USE nw_rc_t nw_kube_leader_new(nw_kube_client_t *c, const nw_kube_leader_opts_t *opts,
                                       nw_kube_leader_t **out, nw_err_t *err);

/** Start the elector thread. */
NW_MUST_USE nw_rc_t nw_kube_leader_start(nw_kube_leader_t *l, nw_err_t *err);

/** Stop the thread; if leading, release the Lease (unless no_release) and call
 * on_stopped. Idempotent. */
void nw_kube_leader_stop(nw_kube_leader_t *l);

/** Free (stops first). NULL-safe. */
void nw_kube_leader_free(nw_kube_leader_t *l);

/** True while this process holds the Lease: set only after on_started has returned,
 * cleared before on_stopped is called. */
bool nw_kube_leader_is_leader(nw_kube_leader_t *l);

/** Our holderIdentity (borrowed, valid while l lives). */
const char *nw_kube_leader_identity(const nw_kube_leader_t *l);

/**
 * One acquire-or-renew attempt, synchronously (what the thread does each retry
 * period; for tests with a fake clock). Sets *leading. Does not call callbacks.
 */
NW_MUST_USE nw_rc_t nw_kube_leader_try(nw_kube_leader_t *l, int *leading, nw_err_t *err);

/** Format wall time as a MicroTime ("2026-11-30T03:40:00.123456Z"); buf >= 32 bytes. */
char *nw_kube_leader_microtime(int64_t wall_ns, char *buf, size_t len);

#endif
