/*
 * scaler/sched/from_catalog.h — feed the cloud's instance catalog (scaler/cloud/catalog.h)
 * into a scheduling snapshot through its raw entry (scaler/sched/raw.h):
 * each type with its well-known labels, capacity, allocatable (karpenter-provider-aws
 * pkg/providers/instancetype/types.go) and offerings with availability from the ICE
 * cache at `now`. The scheduler itself knows
 * no provider: only the catalog model of the layer below it.
 *
 * Ownership: nothing is kept; the snapshot copies. Thread: the caller's.
 */
#ifndef NW_SCALER_SCHED_FROM_CATALOG_H
#define NW_SCALER_SCHED_FROM_CATALOG_H

#include "scaler/cloud/catalog.h"
#include "scaler/sched/raw.h"

/** Add every catalog type (ice may be NULL; o NULL = the default overhead options). */
NW_MUST_USE nw_rc_t nw_from_catalog_add(nw_sched_snap_t *s, const nw_catalog_t *c,
                                        const nw_ice_t *ice, int64_t now,
                                        const nw_overhead_opts_t *o, nw_err_t *err);

/** Add one catalog type (as above). */
NW_MUST_USE nw_rc_t nw_from_catalog_add_type(nw_sched_snap_t *s, const nw_catalog_t *c,
                                             const nw_itype_t *t, const nw_ice_t *ice, int64_t now,
                                             const nw_overhead_opts_t *o, nw_err_t *err);

/** The capacity and allocatable of every catalog type for the pools of node class `name`,
 * computed with o (its kubelet settings; scaler/cloud/kubelet.h). Types the snapshot does
 * not have are skipped. */
NW_MUST_USE nw_rc_t nw_from_catalog_add_class(nw_sched_snap_t *s, const nw_catalog_t *c,
                                              const char *name, const nw_overhead_opts_t *o,
                                              nw_err_t *err);

/* One node class's overhead options for nw_from_catalog_load_classes. */
typedef struct {
    const char *name;
    nw_overhead_opts_t o;
} nw_sched_class_opts_t;

/** Instance types from the compiled-in catalog (json NULL) or catalog JSON text in the
 * data/catalog.json format, for region (prices apply to the catalog's priceRegions),
 * offered on-demand (and spot where supported, at the on-demand price until real spot
 * prices are known) in zones ("us-east-1a", or "us-east-1a=use1-az6" with its zone id;
 * NULL/0: "<region>a", "<region>b", "<region>c"), with the
 * default allocatable overhead. */
NW_MUST_USE nw_rc_t nw_from_catalog_load(nw_sched_snap_t *s, const char *json, size_t len,
                                         const char *region, const char *const *zones, int nzones,
                                         nw_err_t *err);

/** As nw_from_catalog_load with the overhead options dflt (NULL: the defaults) and,
 * for each of classes[0..n), that class's own (nw_from_catalog_add_class). */
NW_MUST_USE nw_rc_t nw_from_catalog_load_classes(nw_sched_snap_t *s, const char *json, size_t len,
                                                 const char *region, const char *const *zones,
                                                 int nzones, const nw_overhead_opts_t *dflt,
                                                 const nw_sched_class_opts_t *classes, int nclasses,
                                                 nw_err_t *err);

#endif
