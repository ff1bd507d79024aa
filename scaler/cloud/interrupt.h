/*
 * scaler/cloud/interrupt.h — interruption events in provider-neutral terms, and the
 * source the interruption controller reads them from (after aws/karpenter-provider-aws
 * pkg/controllers/interruption/controller.go, whose message kinds these are).
 *
 *   kind                  what happened to the instance            what nodewarden does
 *   SPOT_INTERRUPTION     the spot instance is being reclaimed     ICE mark, taint, delete
 *   REBALANCE             rebalance recommendation (may be soon)   an Event only
 *   SCHEDULED_CHANGE      maintenance scheduled by the provider    delete the NodeClaim
 *   STOPPED, TERMINATED   a state change: stopping/stopped,        delete the NodeClaim
 *                         shutting-down/terminated
 *   CAPACITY_RESERVATION  its capacity reservation is reclaimed    delete the NodeClaim
 *   NOOP                  anything else                            nothing
 *
 * A source (the AWS one is an SQS queue fed by EventBridge, scaler/aws/intrsource.h)
 * yields messages; each carries a parsed event or why its body did not parse, and the
 * controller acknowledges each message it is done with (a handled one, or one that will
 * never parse); one that is not acknowledged comes back later.
 *
 * Ownership: nw_interrupt_event_t is caller storage (fixed arrays). A batch is the caller's
 * (nw_interrupt_batch_free). A source: its constructor / ops->free.
 * Thread: a source is used by one thread (the interruption thread); the rest is pure.
 */
#ifndef NW_SCALER_CLOUD_INTERRUPT_H
#define NW_SCALER_CLOUD_INTERRUPT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "scaler/cloud/cloud.h"

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
} nw_interrupt_kind_t;

typedef struct {
    nw_interrupt_kind_t kind;
    char id[128];    /* the provider's event id ("" when absent) */
    int64_t time_ns; /* when the provider says it happened (wall clock); 0 = unknown */
    char source[64]; /* the provider's names for the event, for logs */
    char detail_type[128];
    char state[32];                /* state changes: the new state */
    char action[32];               /* spot / capacity reservation: the announced action */
    char ids[NW_INTR_MAX_IDS][32]; /* the instance ids (as in their providerIDs) */
    size_t nids;
} nw_interrupt_event_t;

/** Metric/log name of a kind: "noop", "spot_interruption", "rebalance_recommendation",
 * "scheduled_change", "instance_stopped", "instance_terminated",
 * "capacity_reservation_interruption". */
const char *nw_interrupt_kind_name(nw_interrupt_kind_t k);

/** True when the kind deletes the NodeClaim (everything but NOOP and REBALANCE). */
bool nw_interrupt_kind_deletes(nw_interrupt_kind_t k);

/* ---- the source ---- */
typedef struct {
    char id[128]; /* the message id, for logs */
    char *handle; /* what ack needs (owned by the batch) */
    int parsed;   /* 1: ev holds the event; 0: the body did not parse, perr says where */
    nw_interrupt_event_t ev;
    nw_err_t perr;
} nw_interrupt_msg_t;

typedef struct {
    nw_interrupt_msg_t *v;
    size_t n;
} nw_interrupt_batch_t;

void nw_interrupt_batch_free(nw_interrupt_batch_t *b);

typedef struct nw_interrupt_source nw_interrupt_source_t;

typedef struct {
    /** Wait for messages (a long poll of at most the source's wait time): NW_OK with
     * out->n == 0 when none came. On failure ce (nullable) says why. */
    nw_rc_t (*receive)(nw_interrupt_source_t *s, nw_interrupt_batch_t *out, nw_cloud_error_t *ce,
                       nw_err_t *err);
    /** The controller is done with m: it will not be delivered again. */
    nw_rc_t (*ack)(nw_interrupt_source_t *s, const nw_interrupt_msg_t *m, nw_cloud_error_t *ce,
                   nw_err_t *err);
    /** Make a receive in flight return within about a second once *flag is non-zero. */
    void (*set_abort)(nw_interrupt_source_t *s, const atomic_int *flag);
    void (*free)(nw_interrupt_source_t *s);
} nw_interrupt_source_ops_t;

struct nw_interrupt_source {
    const nw_interrupt_source_ops_t *ops;
    const char *name; /* for logs: the queue */
};

#endif
