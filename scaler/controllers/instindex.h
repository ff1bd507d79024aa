/*
 * scaler/controllers/instindex.h — a snapshot's Nodes or NodeClaims by the instance id of
 * their providerID (nw_cloud_instance_id: its last path segment), for the controllers
 * that meet instances by id (garbage collection, interruption, instance health): built
 * once, then each lookup is a binary search instead of a walk over every object.
 *
 *   nw_instindex_t ix;
 *   if (nw_instindex_build(&ix, s, NW_KUBE_NODES) == NW_OK) {
 *       const nw_kube_obj_t *node = nw_instindex_find(&ix, "i-0abc");
 *       nw_instindex_free(&ix);
 *   }
 *
 * A lookup answers as the walk in key order did: the first object (by key) whose
 * providerID names the id, or NULL.
 *
 * Ownership: caller storage; nw_instindex_build / nw_instindex_free. The objects and ids
 * are borrowed from the snapshot (valid while it is held). Thread: any.
 */
#ifndef NW_SCALER_CONTROLLERS_INSTINDEX_H
#define NW_SCALER_CONTROLLERS_INSTINDEX_H

#include <stddef.h>

#include "common/err.h"
#include "scaler/cloud/cloud.h"
#include "scaler/kube/cache.h"

typedef struct {
    const char *id; /* the instance id (in o's providerID) */
    const nw_kube_obj_t *o;
    size_t pos; /* o's position in the snapshot (key order) */
} nw_instindex_entry_t;

typedef struct {
    nw_instindex_entry_t *v;
    size_t n;
} nw_instindex_t;

/** Index the objects of kind (NW_KUBE_NODES or NW_KUBE_NODECLAIMS) of s that have a
 * providerID. NW_ENOMEM (ix empty) on out of memory. */
NW_MUST_USE nw_rc_t nw_instindex_build(nw_instindex_t *ix, const nw_kube_snap_t *s,
                                       nw_kube_kind_t kind);

/** The first object (in key order) whose providerID names instance id, or NULL. */
const nw_kube_obj_t *nw_instindex_find(const nw_instindex_t *ix, const char *id);

/** Free. NULL-safe; ix is empty afterwards. */
void nw_instindex_free(nw_instindex_t *ix);

/** The positions of a cloud instance list sorted by instance id (then position). NULL on
 * out of memory or for an empty list; free() it. */
size_t *nw_instindex_cloud_sort(const nw_cloud_instances_t *l);

/** In sorted (from nw_instindex_cloud_sort, l not empty), the first place whose instance id
 * is not below id (l->n: none); the instances with this id follow it in list order. */
size_t nw_instindex_cloud_lower(const nw_cloud_instances_t *l, const size_t *sorted,
                                const char *id);

#endif
