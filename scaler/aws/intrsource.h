/*
 * scaler/aws/intrsource.h — the AWS interruption source (scaler/cloud/interrupt.h): an
 * SQS queue fed by EventBridge rules (settings.interruptionQueue). receive is one
 * ReceiveMessage long poll (up to 10 messages, the given wait and visibility timeout),
 * each body parsed as an EventBridge event (intrevent.h); ack is DeleteMessage. SQS
 * errors are translated into the neutral kinds (throttled, unauthorized, invalid, other;
 * SQS's code and message).
 *
 * Ownership: nw_intrsource_new / ops->free; cfg and queue are copied, creds and
 * clock borrowed (they must outlive the source).
 * Thread: one (the interruption thread).
 */
#ifndef NW_SCALER_AWS_INTRSOURCE_H
#define NW_SCALER_AWS_INTRSOURCE_H

#include "common/clock.h"
#include "common/err.h"
#include "scaler/aws/awscfg.h"
#include "scaler/aws/creds.h"
#include "scaler/aws/sqs.h"
#include "scaler/cloud/interrupt.h"

/** wait_s: WaitTimeSeconds, 0..20 (others: 20); visibility_s: VisibilityTimeout
 * (<= 0: 20). NW_EINVAL when the queue or the SQS endpoint is missing. No network I/O. */
NW_MUST_USE nw_rc_t nw_intrsource_new(const nw_awscfg_t *cfg, nw_creds_t *creds,
                                      const nw_clock_t *clock, const char *queue, int wait_s,
                                      int visibility_s, nw_interrupt_source_t **out, nw_err_t *err);

/** The neutral kind of an SQS error class. */
nw_cloud_err_kind_t nw_intrsource_sqs_err_kind(nw_sqs_class_t cls);

#endif
