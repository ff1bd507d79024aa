/*
 * scaler/sched/from_catalog.h — feed the EC2 instance catalog (scaler/aws/catalog.h)
 * into a scheduling snapshot: each type with its well-known labels, capacity,
 * allocatable (karpenter-provider-aws pkg/providers/instancetype/types.go) and offerings with availability from the ICE
 * cache at `now`.
 *
 * Ownership: nothing is kept; the snapshot copies. Thread: the caller's.
 */
#ifndef NW_SCALER_SCHED_FROM_CATALOG_H
#define NW_SCALER_SCHED_FROM_CATALOG_H

#include "scaler/aws/catalog.h"
#include "scaler/sched/raw.h"

/** Add every catalog type (ice may be NULL; o NULL = the default overhead options). */
nw_rc_t nw_sched_snap_add_catalog(nw_sched_snap_t *s, const nw_catalog_t *c, const nw_ice_t *ice,
                                  int64_t now, const nw_overhead_opts_t *o, nw_err_t *err);

/** Add one catalog type (as above). */
nw_rc_t nw_sched_snap_add_catalog_type(nw_sched_snap_t *s, const nw_catalog_t *c,
                                       const nw_itype_t *t, const nw_ice_t *ice, int64_t now,
                                       const nw_overhead_opts_t *o, nw_err_t *err);

#endif
