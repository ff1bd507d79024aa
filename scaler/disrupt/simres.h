/*
 * scaler/disrupt/simres.h — reading a solved scheduling simulation as a disruption
 * simulation result (disrupt.h nw_disrupt_sim_t). Kept apart from sim.h because it needs
 * scaler/sched/schedule.h (api/ types).
 *
 * Pure. Ownership: out->repl is allocated here (freed by nw_decide_sim_cleanup).
 */
#ifndef NW_SCALER_DISRUPT_SIMRES_H
#define NW_SCALER_DISRUPT_SIMRES_H

#include <stdbool.h>

#include "scaler/disrupt/disrupt.h"
#include "scaler/sched/schedule.h"

/**
 * Turn a solved scheduling snapshot into a simulation result (shared with the live
 * adapter of controller.c): out->ok is false when a pod for which must() holds cannot be
 * placed, or when any pod is placed on a target for which initialized() is false;
 * out->repl gets one entry per new claim that carries a must() pod, and claim_of[k]
 * the results' claim index of replacement k (claim_of has room for r->nclaims).
 */
NW_MUST_USE nw_rc_t nw_disrupt_sim_interpret(const nw_sched_snap_t *snap,
                                             const nw_sched_results_t *r,
                                             bool (*must)(void *ud, int pod),
                                             bool (*initialized)(void *ud, const char *target),
                                             void *ud, nw_disrupt_sim_t *out, int *claim_of,
                                             nw_err_t *err);

#endif
