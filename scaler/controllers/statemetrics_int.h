/*
 * scaler/controllers/statemetrics_int.h — what the two files of the state gauges share
 * (scaler/controllers/statemetrics.h is their public face): the per-node gauges of
 * statemetrics_nodes.c, which statemetrics.c keeps up to date and writes with the other
 * families. statemetrics.c calls statemetrics_nodes.c, never the reverse.
 *
 * The node gauges: karpenter_nodes_{allocatable,total_pod_requests,total_pod_limits,
 * total_daemon_requests,total_daemon_limits,system_overhead,current_lifetime_seconds} of
 * every Node, kept from one snapshot to the next, and the sums of allocatable and pod
 * requests over every Node (karpenter_cluster_utilization_percent).
 *
 *   nw_statemetrics_nodes_t *n = nw_statemetrics_nodes_new();
 *   nw_statemetrics_nodes_pub_t *pub;
 *   nw_statemetrics_changed_t what;
 *   if (nw_statemetrics_nodes_update(n, prev, s, &what, &pub) == NW_OK) {
 *       lock; nw_statemetrics_nodes_publish(n, pub); unlock;   // what scrapes see
 *       nw_statemetrics_nodes_settle(n, pub);                  // frees what it replaced
 *   }
 *   // a scrape: lock; view = nw_statemetrics_nodes_view(n); unlock; write; view_free
 *
 * Ownership: nodes _new/_free; an update's pub is settled once; a view is freed with
 * _view_free. Thread: update, publish, settle and utilization on the reconcile thread
 * (publish and view under the owner's mutex); a view and its writes on any thread.
 */
#ifndef NW_SCALER_CONTROLLERS_STATEMETRICS_INT_H
#define NW_SCALER_CONTROLLERS_STATEMETRICS_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "api/resources.h"
#include "common/buf.h"
#include "common/json.h"
#include "common/series.h"
#include "scaler/kube/cache.h"

typedef struct nw_statemetrics_nodes nw_statemetrics_nodes_t;
typedef struct nw_statemetrics_nodes_pub nw_statemetrics_nodes_pub_t;
typedef struct nw_statemetrics_nodes_view nw_statemetrics_nodes_view_t;

/* Which kinds changed between the two snapshots of an update (all of them from nothing). */
typedef struct {
    bool nodes, claims, pools;
} nw_statemetrics_changed_t;

/** New, empty (NULL on OOM). */
nw_statemetrics_nodes_t *nw_statemetrics_nodes_new(void);
/** Free. NULL-safe. Views taken from it may outlive it. */
void nw_statemetrics_nodes_free(nw_statemetrics_nodes_t *n);

/** Bring the node gauges from snapshot prev (the one of the last update, still held;
 * NULL: from nothing) to s: the Nodes that changed, whose NodeClaim did or whose pods did
 * are built again. *what says which kinds changed; *pub is the update to publish.
 * NW_ENOMEM: nothing changed, *pub NULL, and the next update starts from nothing. */
NW_MUST_USE nw_rc_t nw_statemetrics_nodes_update(nw_statemetrics_nodes_t *n,
                                                 const nw_kube_snap_t *prev,
                                                 const nw_kube_snap_t *s,
                                                 nw_statemetrics_changed_t *what,
                                                 nw_statemetrics_nodes_pub_t **pub);
/** Whether the update changed any node's gauges. */
bool nw_statemetrics_nodes_pub_changed(const nw_statemetrics_nodes_pub_t *pub);
/** Make the update what views see (under the owner's mutex). */
void nw_statemetrics_nodes_publish(nw_statemetrics_nodes_t *n, nw_statemetrics_nodes_pub_t *pub);
/** Let go of what the published update replaced, and of pub (after the mutex). */
void nw_statemetrics_nodes_settle(nw_statemetrics_nodes_t *n, nw_statemetrics_nodes_pub_t *pub);

/** karpenter_cluster_utilization_percent from the sums over every node, into g. */
void nw_statemetrics_nodes_utilization(const nw_statemetrics_nodes_t *n, nw_series_t *g);

/** The published gauges, counted (under the owner's mutex); NULL on OOM. */
nw_statemetrics_nodes_view_t *nw_statemetrics_nodes_view(const nw_statemetrics_nodes_t *n);
void nw_statemetrics_nodes_view_free(nw_statemetrics_nodes_view_t *v);
/** Is d one of the node families (the lifetime included). */
bool nw_statemetrics_nodes_family(const nw_series_desc_t *d);
/** Append the series of node family d (no HELP, TYPE); the ages as of now (epoch ns). */
NW_MUST_USE nw_rc_t nw_statemetrics_nodes_write(const nw_statemetrics_nodes_view_t *v,
                                                const nw_series_desc_t *d, int64_t now,
                                                nw_buf_t *out);
/** The label values of the Node named name in the view, in the order of
 * nw_kmetrics_node_label_keys ("" for an absent label); NULL when it has no such Node.
 * Borrowed from the view. */
const char *const *nw_statemetrics_nodes_labels(const nw_statemetrics_nodes_view_t *v,
                                                const char *name);

/* ---- shared helpers ---- */

/* Karpenter's value of a quantity: cpu in cores, the others their Value() (rounded up). */
static inline double nw_statemetrics_value(const char *name, int64_t milli)
{
    if (strcmp(name, "cpu") == 0)
        return (double)milli / 1000.0;
    return (double)(milli / 1000 + (milli % 1000 > 0));
}

/* acc += the resource list obj (a JSON object); out of range or memory: the gauge is short
 * by this object. */
static inline void nw_statemetrics_add_json(nw_resources_t *acc, const cJSON *obj)
{
    nw_resources_t r;
    nw_resources_init(&r);
    if (obj && nw_resources_from_json(&r, obj, NULL, NULL) == NW_OK)
        (void)nw_resources_add(acc, &r, NULL);
    nw_resources_cleanup(&r);
}

#endif
