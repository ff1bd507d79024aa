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
 * Into the neutral event of scaler/cloud/interrupt.h (the envelope's `time` into
 * time_ns when it parses).
 *
 * Ownership: nw_interrupt_event_t is caller storage (fixed arrays).
 * Thread: any (pure).
 */
#ifndef NW_SCALER_AWS_INTREVENT_H
#define NW_SCALER_AWS_INTREVENT_H

#include <stddef.h>

#include "common/err.h"
#include "scaler/cloud/interrupt.h"

/** Parse a message body. NW_EPARSE (err names the field, e.g. "detail.instance-id")
 * when the body is not a JSON object, an envelope field has the wrong type, or a
 * known kind lacks what it needs. Unknown kinds are NW_OK with kind NOOP. */
NW_MUST_USE nw_rc_t nw_intrevent_parse(const char *body, size_t len, nw_interrupt_event_t *out,
                                       nw_err_t *err);

#endif
