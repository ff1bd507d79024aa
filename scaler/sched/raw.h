/*
 * scaler/sched/raw.h — the plain-C part of the scheduling API: resource slots,
 * offerings, and adding an instance type without the label/requirement types: the
 * provider-neutral way in for instance types. Kept apart from schedule.h so that the
 * catalog adapter (scaler/sched/from_catalog.c, over scaler/cloud/catalog.h) needs only
 * this.
 *
 * Ownership: nw_snap_node_add_itype_raw copies everything it is given.
 */
#ifndef NW_SCALER_SCHED_RAW_H
#define NW_SCALER_SCHED_RAW_H

#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"

#define NW_SCHED_NRES 16
/* fixed resource slots; NVIDIA_GPU..GAUDI are accelerators (exotic capacity) */
enum {
    NW_SR_CPU = 0,
    NW_SR_MEMORY,
    NW_SR_PODS,
    NW_SR_EPHEMERAL,
    NW_SR_NVIDIA_GPU,
    NW_SR_AMD_GPU,
    NW_SR_NEURON,
    NW_SR_NEURONCORE,
    NW_SR_NEURONDEVICE, /* the Neuron device plugin's other name for a device */
    NW_SR_GAUDI,
    NW_SR_EFA,
    NW_SR_FIXED /* first slot for other names */
};

/* int64 milli-units per slot (cpu 1500m = 1500; memory 1Gi = 1073741824000) */
typedef struct {
    int64_t v[NW_SCHED_NRES];
} nw_sched_res_t;

#define NW_SCHED_MAX_OFFERINGS 48

typedef struct {
    char zone[64];
    char zone_id[64];       /* topology.k8s.aws/zone-id ("usw2-az1"), "" = unknown */
    char capacity_type[16]; /* "on-demand" | "spot" | "reserved" */
    double price;           /* USD per hour */
    bool available;         /* false: not offered now (ICE, no price) */
    uint16_t resv;          /* reserved: 1 + its reservation's index in the snapshot (only its
                               node class's pools see it, nw_snap_node_add_reservation); 0 */
} nw_sched_offering_t;

typedef struct nw_sched_snap nw_sched_snap_t;

/** Add an instance type: labels as parallel key/value arrays, capacity and allocatable
 * in slot units, offerings. NW_EINVAL on a duplicate name or too many offerings. */
NW_MUST_USE nw_rc_t nw_snap_node_add_itype_raw(nw_sched_snap_t *s, const char *name,
                                               const char *const *keys, const char *const *values,
                                               int nlabels, const nw_sched_res_t *capacity,
                                               const nw_sched_res_t *allocatable, bool metal,
                                               const nw_sched_offering_t *offers, int noffer,
                                               nw_err_t *err);

/** The capacity and allocatable of instance type `itype` for the NodePools whose
 * nodeClassRef names `nodeclass` (Karpenter resolves instance types per node class: its
 * kubelet settings and AMI family change pods and the reserved resources). Pools of a
 * class without an entry use the type's own. NW_EINVAL for an unknown type. */
/** The NodePools of node class `nodeclass` cannot launch instance type `itype` (Karpenter's
 * per-EC2NodeClass compatibility filters, scaler/cloud/compat.h): they never plan it.
 * NW_EINVAL for an unknown type. */
NW_MUST_USE nw_rc_t nw_snap_node_exclude_class_type(nw_sched_snap_t *s, const char *nodeclass,
                                                    const char *itype, nw_err_t *err);
NW_MUST_USE nw_rc_t nw_snap_node_set_class_res(nw_sched_snap_t *s, const char *nodeclass,
                                               const char *itype, const nw_sched_res_t *capacity,
                                               const nw_sched_res_t *allocatable, nw_err_t *err);

#endif
