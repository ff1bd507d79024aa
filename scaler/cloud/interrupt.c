/* scaler/cloud/interrupt.c — interruption kinds and batches; see interrupt.h. */
#include "scaler/cloud/interrupt.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

const char *nw_interrupt_kind_name(nw_interrupt_kind_t k)
{
    switch (k) {
    case NW_INTR_SPOT_INTERRUPTION:
        return "spot_interruption";
    case NW_INTR_REBALANCE:
        return "rebalance_recommendation";
    case NW_INTR_SCHEDULED_CHANGE:
        return "scheduled_change";
    case NW_INTR_STOPPED:
        return "instance_stopped";
    case NW_INTR_TERMINATED:
        return "instance_terminated";
    case NW_INTR_CAPACITY_RESERVATION:
        return "capacity_reservation_interruption";
    default:
        return "noop";
    }
}

bool nw_interrupt_kind_deletes(nw_interrupt_kind_t k)
{
    return k != NW_INTR_NOOP && k != NW_INTR_REBALANCE && k < NW_INTR_KINDS;
}

void nw_interrupt_batch_free(nw_interrupt_batch_t *b)
{
    if (!b)
        return;
    for (size_t i = 0; i < b->n; i++)
        free(b->v[i].handle);
    free(b->v);
    memset(b, 0, sizeof *b);
}
