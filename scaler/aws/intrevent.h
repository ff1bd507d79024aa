/*
 * scaler/aws/intrevent.h — EventBridge events from the interruption queue
 * (aws/karpenter-provider-aws pkg/controllers/interruption/messages/): the envelope (`version` "0",
 * `source`, `detail-type`) picks the kind, the detail gives the instance ids.
 *
 *   source     detail-type                                         kind
 *   aws.ec2    EC2 Spot Instance Interruption Warning              SPOT_INTERRUPTION
 *   aws.ec2    EC2 Instance Rebalance Recommendation               REBALANCE
 *   aws.ec2    EC2 Instance State-change Notification              STOPPED (stopping, stopped)
 *                                                                  TERMINATED (shutting-down,
 * terminated) NOOP (other states) aws.ec2    EC2 Capacity Reservation Instance Interruption Warning
 * CAPACITY_RESERVATION aws.health AWS Health Event, detail.service "EC2" and
 *              detail.eventTypeCategory "scheduledChange"          SCHEDULED_CHANGE (others NOOP)
 *   anything else (other version, source or detail-type)           NOOP
 *
 * Instance ids come from detail.instance-id, or for scheduled changes from
 * detail.affectedEntities[].entityValue.
 *
 * Ownership: nw_intr_event_t is caller storage (fixed arrays).
 * Thread: any (pure).
 */
#ifndef NW_SCALER_AWS_INTREVENT_H
#define NW_SCALER_AWS_INTREVENT_H

#include <stddef.h>

#include "common/err.h"

#define NW_INTR_MAX_IDS 64

typedef enum {
    NW_INTR_NOOP = 0,
    NW_INTR_SPOT_INTERRUPTION,
    NW_INTR_REBALANCE,
    NW_INTR_SCHEDULED_CHANGE,
    NW_INTR_STOPPED,
    NW_INTR_TERMINATED,
    NW_INTR_CAPACITY_RESERVATION,
    NW_INTR_KINDS
} nw_intr_kind_t;

typedef struct {
    nw_intr_kind_t kind;
    char id[128]; /* envelope id ("" when absent) */
    char source[64];
    char detail_type[128];
    char state[32];  /* state changes: detail.state */
    char action[32]; /* spot / capacity reservation: detail.instance-action */
    char ids[NW_INTR_MAX_IDS][32];
    size_t nids;
} nw_intr_event_t;

/** Metric/log name of a kind: "noop", "spot_interruption", "rebalance_recommendation",
 * "scheduled_change", "instance_stopped", "instance_terminated",
 * "capacity_reservation_interruption". */
const char *nw_intr_kind_name(nw_intr_kind_t k);

/** 1 when the kind deletes the NodeClaim (everything but NOOP and REBALANCE). */
int nw_intr_kind_deletes(nw_intr_kind_t k);

/** Parse a message body. NW_EPARSE (err names the field, e.g. "detail.instance-id")
 * when the body is not a JSON object, an envelope field has the wrong type, or a
 * known kind lacks what it needs. Unknown kinds are NW_OK with kind NOOP. */
nw_rc_t nw_intr_parse(const char *body, size_t len, nw_intr_event_t *out, nw_err_t *err);

#endif
