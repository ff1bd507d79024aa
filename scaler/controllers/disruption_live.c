/*
 * scaler/controllers/disruption_live.c — the disruption simulation on the live cluster: the
 * provisioner's snapshot builder (scaler/state/simsnap.h) with the candidates left out and
 * their pods re-added as pending, and replacements created through the provisioner's
 * NodeClaim path (nominated, launched once).
 */
#include "scaler/controllers/disruption_live.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaler/disrupt/simres.h"
#include "scaler/nodeclaim/nodeclaim.h"
#include "scaler/metrics/kmetrics.h"
#include "scaler/state/simsnap.h"

typedef struct {
    nw_simsnap_t ss;
    nw_sched_results_t res;
    int *claim_of;
    const char **gone; /* node names of the excluded NodeClaims (borrowed from the kube snapshot) */
    size_t ngone;
} handle_t;

static void handle_free(void *p)
{
    handle_t *h = p;
    if (!h)
        return;
    nw_solve_results_free(&h->res);
    nw_simsnap_free(&h->ss);
    free(h->claim_of);
    free(h->gone);
    free(h);
}

static bool must(void *ud, int pod)
{
    const handle_t *h = ud;
    if (pod < 0 || (size_t)pod >= h->ss.npods || !h->ss.rescheduled[pod] || !h->ss.pods[pod])
        return false;
    const char *nn = h->ss.pods[pod]->node_name;
    for (size_t i = 0; i < h->ngone; i++)
        if (strcmp(h->gone[i], nn) == 0)
            return true;
    return false;
}

static bool initialized(void *ud, const char *target)
{
    const handle_t *h = ud;
    return nw_simsnap_claim_of(&h->ss, target) == NULL;
}

nw_rc_t nw_disruption_live_sim(void *ud, const nw_disrupt_state_t *st, const char *const *ncs,
                               size_t n, nw_disrupt_sim_t *out, nw_err_t *err)
{
    const nw_disruption_live_t *l = ud;
    memset(out, 0, sizeof *out);
    handle_t *h = calloc(1, sizeof *h);
    nw_rc_t rc = NW_OK;
    if (!h || !(h->gone = calloc(n + 1, sizeof *h->gone))) {
        free(h);
        return nw_err_set(err, NW_ENOMEM, NULL, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        const nw_disrupt_node_t *dn = nw_candidates_state_node(st, ncs[i]);
        if (dn && dn->node_name[0])
            h->gone[h->ngone++] = dn->node_name;
    }
    nw_simsnap_opts_t o = {
        .exclude = ncs,
        .nexclude = n,
        .reschedule_excluded = true,
        .reschedule_deleting = true,
        .include_pending = true,
    };
    nw_ctl_prepare_catalog(l->c, l->ks);
    nw_simsnap_env_t env;
    nw_ctl_sim_env(l->c, l->mem, &env);
    if ((rc = nw_simsnap_build(&env, l->ks, &o, &h->ss, err)) != NW_OK)
        goto fail;
    int64_t t0 = nw_clock_mono(l->c->clock);
    rc = nw_solve(h->ss.sched, l->now, &h->res, err);
    nw_series_observe(l->c->series, &NW_KMETRICS_SCHEDULER_DURATION, (const char *[]){"disruption"},
                      (double)(nw_clock_mono(l->c->clock) - t0) / 1e9);
    if (rc != NW_OK)
        goto fail;
    if (!(h->claim_of = calloc((size_t)h->res.nclaims + 1, sizeof *h->claim_of))) {
        rc = nw_err_set(err, NW_ENOMEM, NULL, "out of memory");
        goto fail;
    }
    if ((rc = nw_disrupt_sim_interpret(h->ss.sched, &h->res, must, initialized, h, out, h->claim_of,
                                       err)) != NW_OK)
        goto fail;
    out->handle = h;
    out->handle_free = handle_free;
    return NW_OK;
fail:
    handle_free(h);
    nw_decide_sim_cleanup(out);
    return rc;
}

bool nw_disruption_live_owns(const nw_disrupt_sim_t *sim)
{
    return sim && sim->handle && sim->handle_free == handle_free;
}

nw_rc_t nw_disruption_live_create(const nw_disruption_live_t *l, const nw_disrupt_sim_t *sim, int k,
                                  const char *rollout_of, char *name, size_t namelen, nw_err_t *err)
{
    if (!nw_disruption_live_owns(sim) || k < 0 || k >= sim->nrepl)
        return nw_err_set(err, NW_EINVAL, NULL, "no such replacement");
    const handle_t *h = sim->handle;
    const nw_disrupt_repl_t *r = &sim->repl[k];
    const char **types = calloc((size_t)r->ntypes + 1, sizeof *types);
    if (!types)
        return nw_err_set(err, NW_ENOMEM, NULL, "out of memory");
    for (int i = 0; i < r->ntypes; i++)
        types[i] = r->types[i].name;
    const char *ct = NULL;
    if (r->allow_spot && !r->allow_on_demand && !r->allow_reserved)
        ct = "spot";
    else if (r->allow_on_demand && !r->allow_spot && !r->allow_reserved)
        ct = "on-demand";
    nw_simsnap_claim_opts_t o = {
        .capacity_type = ct,
        .itypes = types,
        .nitypes = (size_t)r->ntypes,
        .no_events = true,
        .reason = "disruption",
        .annotation_key = rollout_of ? NW_DIS_ROLLOUT_ANNOTATION : NULL,
        .annotation_value = rollout_of,
    };
    nw_rc_t rc = nw_nodeclaim_create(l->claims, l->ks, &h->ss, &h->res.claims[h->claim_of[k]], &o,
                                     name, namelen, err);
    free(types);
    return rc;
}
