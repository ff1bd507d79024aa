/*
 * scaler/controllers/cohort.h — the NodeClaims of one batch whose Nodes are registered
 * together because the batch's pods spread over their domains.
 *
 * The kube-scheduler counts a topology spread's domains over the Nodes it knows (tainted
 * ones included: nodeTaintsPolicy defaults to Ignore). A batch that planned the pods of a
 * spread over karpenter.sh/capacity-type (or a zone, or any key but the hostname) onto
 * NodeClaims in two domains counts on both domains existing when the first of those pods
 * binds. If the first Node is registered (its karpenter.sh/unregistered taint lifted) while
 * the other NodeClaims' Nodes do not exist yet, the scheduler sees one domain, in which any
 * skew is zero, and binds every pod of the spread there: four pods of a capacity-type spread
 * all on the on-demand Node (Karpenter has the same race; its own zonal-spread e2e test was
 * made tolerant of it). So the provisioner records such NodeClaims and the spreads' keys
 * as one cohort (nw_cohort_add), and the lifecycle controller registers a member only once
 * every domain a member is planned in holds a Node of the cohort (nw_cohort_ready): for
 * each key, a member without a Node is in the domain its NodeClaim's label names, which some
 * member's Node must carry (one Node per zone is enough for a zonal spread over thirty
 * NodeClaims). A domain whose Node is late holds the others at most NW_COHORT_WAIT_NS from
 * the moment the first member could have been registered; after that each registers as
 * before.
 *
 * Usage: nw_cohort_new in the provisioner; nw_cohort_add after a batch's creates;
 * nw_cohort_ready from the lifecycle controller before each registration.
 * Errors: nw_cohort_add returns NW_ENOMEM (the batch then registers as before).
 * Ownership: nw_cohort_new / nw_cohort_free; names are copied.
 * Threads: any (one mutex); in practice the reconcile thread.
 */
#ifndef NW_SCALER_CONTROLLERS_COHORT_H
#define NW_SCALER_CONTROLLERS_COHORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/pod.h"
#include "common/err.h"
#include "scaler/kube/cache.h"

/** How long the first member of a cohort ready to register waits for the others' Nodes. */
#define NW_COHORT_WAIT_NS (10 * 1000000000LL)

typedef struct nw_cohorts nw_cohorts_t;

/** New, empty (NULL on OOM). */
nw_cohorts_t *nw_cohort_new(void);
void nw_cohort_free(nw_cohorts_t *c);

/** The topology keys (other than kubernetes.io/hostname) of pod's spreads that count
 * domains (whenUnsatisfiable DoNotSchedule), appended to keys[n..max) when not there yet
 * (borrowed from the pod's record); the new count. */
size_t nw_cohort_pod_domain_keys(const nw_pod_t *pod, const char **keys, size_t n, size_t max);

/** Record the n NodeClaims named in claims, whose pods spread over the nkeys keys, as one
 * cohort (n < 2 or no key: nothing to record). The oldest cohorts are forgotten beyond 64. */
NW_MUST_USE nw_rc_t nw_cohort_add(nw_cohorts_t *c, const char *const *claims, size_t n,
                                  const char *const *keys, size_t nkeys);

/** May NodeClaim claim, whose Node exists in s, be registered at wall time now_ns? True when
 * it is in no cohort, when every domain of the cohort's keys that a member (not gone nor
 * deleting) is planned in holds a member's Node, or NW_COHORT_WAIT_NS after the first such
 * question about a member; a cohort found complete is forgotten. When false, *due is lowered
 * to the moment the wait ends. c NULL: true. */
bool nw_cohort_ready(nw_cohorts_t *c, const nw_kube_snap_t *s, const char *claim, int64_t now_ns,
                     int64_t *due);

/** How many cohorts are remembered (tests, the debug log). */
size_t nw_cohort_count(nw_cohorts_t *c);

#endif
