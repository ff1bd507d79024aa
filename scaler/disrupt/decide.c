/*
 * scaler/disrupt/decide.c — the disruption methods (kubernetes-sigs/karpenter
 * pkg/controllers/disruption/{emptiness,drift,consolidation,multinodeconsolidation,
 * singlenodeconsolidation,validation}.go): emptiness, drift, multi-node and single-node
 * consolidation with the replacement price and spot rules, validation, and the report; and
 * GPU-aware disruption (issue 33): accelerator nodes that run a pod of their class are not
 * consolidated, idle ones are reclaimed (accelerator-idle). Pure (see disrupt.h).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/json.h"
#include "scaler/disrupt/disrupt.h"

#define MAX_NOTES 64

const char *nw_decide_method_str(nw_disrupt_method_t m)
{
    switch (m) {
    case NW_DIS_EMPTINESS:
        return "emptiness";
    case NW_DIS_DRIFT:
        return "drift";
    case NW_DIS_MULTI:
        return "multi-node-consolidation";
    case NW_DIS_SINGLE:
        return "single-node-consolidation";
    case NW_DIS_ACCEL_IDLE:
        return "accelerator-idle";
    default:
        return "none";
    }
}

const char *nw_decide_action_str(nw_disrupt_action_t a)
{
    return a == NW_DIS_REPLACE ? "replace" : "delete";
}

void nw_decide_sim_cleanup(nw_disrupt_sim_t *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->nrepl; i++)
        free(s->repl[i].types);
    free(s->repl);
    if (s->handle && s->handle_free)
        s->handle_free(s->handle);
    memset(s, 0, sizeof *s);
}

void nw_decide_cmd_cleanup(nw_disrupt_cmd_t *cmd)
{
    if (!cmd)
        return;
    for (size_t i = 0; i < cmd->ncandidates; i++)
        free(cmd->candidates[i]);
    free(cmd->candidates);
    nw_decide_sim_cleanup(&cmd->sim);
    free(cmd->notes);
    memset(cmd, 0, sizeof *cmd);
}

static void note(nw_disrupt_cmd_t *cmd, const char *nc, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void note(nw_disrupt_cmd_t *cmd, const char *nc, const char *reason, const char *fmt, ...)
{
    if (cmd->nnotes >= MAX_NOTES)
        return;
    if (!cmd->notes && !(cmd->notes = calloc(MAX_NOTES, sizeof *cmd->notes)))
        return;
    nw_disrupt_note_t *n = &cmd->notes[cmd->nnotes++];
    snprintf(n->nodeclaim, sizeof n->nodeclaim, "%s", nc);
    snprintf(n->reason, sizeof n->reason, "%s", reason);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(n->message, sizeof n->message, fmt, ap);
    va_end(ap);
}

/* A candidate its NodePool's budget for reason r does not let go: counted and noted. */
static void budget_note(nw_disrupt_cmd_t *cmd, const nw_disrupt_state_t *st,
                        const nw_disrupt_node_t *c, nw_disrupt_reason_t r)
{
    cmd->budget_blocked[r]++;
    note(cmd, c->name, "DisruptionBlocked",
         "No allowed disruptions for disruption reason %s due to blocking budget (NodePool %s)",
         nw_budget_reason_str(r),
         c->pool >= 0 && (size_t)c->pool < st->npools ? st->pools[c->pool].name : "");
}

static NW_MUST_USE nw_rc_t set_candidates(nw_disrupt_cmd_t *cmd, const nw_disrupt_state_t *st,
                                          const int *idx, int n)
{
    cmd->candidates = calloc((size_t)n, sizeof *cmd->candidates);
    if (!cmd->candidates)
        return NW_ENOMEM;
    cmd->ncandidates = 0;
    cmd->old_price = 0;
    for (int i = 0; i < n; i++) {
        if (!(cmd->candidates[i] = strdup(st->nodes[idx[i]].name)))
            return NW_ENOMEM;
        cmd->ncandidates++;
        if (st->nodes[idx[i]].price > 0)
            cmd->old_price += st->nodes[idx[i]].price;
    }
    return NW_OK;
}

/* ---- ordering ---- */

static int by_cost(const void *a, const void *b, void *arg)
{
    const nw_disrupt_state_t *st = arg;
    const nw_disrupt_node_t *x = &st->nodes[*(const int *)a], *y = &st->nodes[*(const int *)b];
    if (x->disruption_cost != y->disruption_cost)
        return x->disruption_cost < y->disruption_cost ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* since when a drift candidate is due: drifted, or expired (a staged pool's), the earlier */
static int64_t drift_time(const nw_disrupt_node_t *n)
{
    int64_t t = n->drifted ? n->drifted_at : 0;
    if (n->expired && n->rollout_class >= 0 && (!t || n->expired_at < t))
        t = n->expired_at;
    return t;
}

static int by_drift(const void *a, const void *b, void *arg)
{
    const nw_disrupt_state_t *st = arg;
    const nw_disrupt_node_t *x = &st->nodes[*(const int *)a], *y = &st->nodes[*(const int *)b];
    if (x->empty != y->empty)
        return x->empty ? -1 : 1;
    int64_t tx = drift_time(x), ty = drift_time(y);
    if (tx != ty)
        return tx < ty ? -1 : 1;
    return strcmp(x->name, y->name);
}

static void sort_idx(const nw_disrupt_state_t *st, int *idx, int n,
                     int (*cmp)(const void *, const void *, void *))
{
    if (n > 1)
        qsort_r(idx, (size_t)n, sizeof *idx, cmp, (void *)st);
}

/* ---- eligibility per method ---- */

static bool consolidation_eligible(const nw_disrupt_state_t *st, const nw_disrupt_node_t *n)
{
    /* GPU-aware: an accelerator node is never consolidated on CPU or memory utilization:
     * kept while a pod of its class runs there, and for consolidateAfter after one last
     * did, then reclaimed by accelerator-idle */
    if (!n->candidate || n->empty || !n->consolidatable || n->pool < 0 || n->accel >= 0)
        return false;
    const nw_disrupt_pool_t *p = &st->pools[n->pool];
    return !p->when_empty && !p->consolidation_never && n->price >= 0 && *n->itype && *n->zone &&
           *n->capacity_type;
}

static bool emptiness_eligible(const nw_disrupt_state_t *st, const nw_disrupt_node_t *n)
{
    return n->candidate && n->empty && n->consolidatable && n->pool >= 0 &&
           !st->pools[n->pool].consolidation_never;
}

/* drifted, or expired on a pool whose accelerator class stages its rollouts (expiry leaves
 * those to this method; like expiry, pods that block eviction do not keep it a candidate) */
static bool drift_eligible(const nw_disrupt_node_t *n)
{
    if (n->pool < 0)
        return false;
    if (n->expired && n->rollout_class >= 0)
        return n->candidate || n->pods_block;
    return n->drifted && (n->candidate || (n->pods_block && n->has_tgp));
}

/* The staged rollout of c's pool holds it back: a note says why. */
static bool rollout_holds(nw_disrupt_cmd_t *cmd, const nw_disrupt_state_t *st,
                          const nw_disrupt_node_t *c)
{
    if (c->rollout_class < 0)
        return false;
    const nw_disrupt_pool_t *p = &st->pools[c->pool];
    const nw_disrupt_accel_t *a = &st->in.accels[c->rollout_class];
    if (p->rollout_blocked) {
        note(cmd, c->name, NW_DIS_ROLLOUT_CONDITION, "Staged replacement stopped: %s",
             p->rollout_why);
        return true;
    }
    if (p->rollout_steps >= a->rollout_max) {
        note(cmd, c->name, "DisruptionBlocked",
             "Staged replacement: %d of at most %d replacement%s of %s accelerator nodes in "
             "progress in NodePool %s (waiting for %s: a pod of the class Running and Ready on "
             "its replacement)",
             p->rollout_steps, a->rollout_max, a->rollout_max == 1 ? "" : "s", a->name, p->name,
             p->rollout_wait);
        return true;
    }
    return false;
}

/* ---- price rules (computeConsolidation in pkg/controllers/disruption/consolidation.go) ---- */

/* worst-case launch price of a type under the replacement's capacity types; < 0 none */
static double launch_price(const nw_disrupt_repl_t *r, const nw_disrupt_topt_t *t)
{
    if (r->allow_reserved && t->reserved >= 0)
        return t->reserved;
    if (r->allow_spot && t->spot >= 0)
        return t->spot;
    if (r->allow_on_demand && t->on_demand >= 0)
        return t->on_demand;
    return -1;
}

static int topt_cmp_repl(const nw_disrupt_repl_t *r, const nw_disrupt_topt_t *a,
                         const nw_disrupt_topt_t *b)
{
    double x = launch_price(r, a), y = launch_price(r, b);
    if (x != y)
        return x < y ? -1 : 1;
    return strcmp(a->name, b->name);
}

static void sort_types(nw_disrupt_repl_t *r)
{
    /* insertion sort: lists are short (<= 600) and this keeps the comparator pure */
    for (int i = 1; i < r->ntypes; i++) {
        nw_disrupt_topt_t t = r->types[i];
        int j = i - 1;
        while (j >= 0 && topt_cmp_repl(r, &r->types[j], &t) > 0) {
            r->types[j + 1] = r->types[j];
            j--;
        }
        r->types[j + 1] = t;
    }
}

/* keep types whose launch price is strictly below max; returns how many remain */
static int filter_price(nw_disrupt_repl_t *r, double max)
{
    int k = 0;
    for (int i = 0; i < r->ntypes; i++) {
        double p = launch_price(r, &r->types[i]);
        if (p >= 0 && p < max)
            r->types[k++] = r->types[i];
    }
    r->ntypes = k;
    sort_types(r);
    return k;
}

static bool min_values_ok(const nw_disrupt_repl_t *r)
{
    return r->min_values <= 0 || r->ntypes >= r->min_values;
}

/* consolidationPolicy Balanced (kubernetes-sigs/karpenter pkg/controllers/disruption/balanced.go
 * EvaluateBalancedMove): each Balanced NodePool among the candidates scores the move,
 *   score = (savings / pool's total cost) / (move's disruption / pool's total disruption),
 * its savings the pool's share of the candidates' price when several pools take part, and
 * every one must reach 1/k (k = 2). true: approved (or no Balanced pool). */
#define NW_DIS_BALANCED_K 2
static bool balanced_ok(const nw_disrupt_state_t *st, const int *idx, int n, double savings,
                        char *why, size_t wn)
{
    double all = 0;
    int pools[NW_DIS_MULTI_MAX], np = 0;
    for (int i = 0; i < n && i < NW_DIS_MULTI_MAX; i++) {
        const nw_disrupt_node_t *c = &st->nodes[idx[i]];
        all += c->price > 0 ? c->price : 0;
        bool seen = false;
        for (int k = 0; k < np && !seen; k++)
            seen = pools[k] == c->pool;
        if (!seen && c->pool >= 0)
            pools[np++] = c->pool;
    }
    for (int k = 0; k < np; k++) {
        const nw_disrupt_pool_t *p = &st->pools[pools[k]];
        if (!p->balanced)
            continue;
        double cost = 0, disruption = 0;
        for (int i = 0; i < n && i < NW_DIS_MULTI_MAX; i++) {
            const nw_disrupt_node_t *c = &st->nodes[idx[i]];
            if (c->pool != pools[k])
                continue;
            cost += c->price > 0 ? c->price : 0;
            disruption += c->move_cost;
        }
        double ps = np > 1 && all > 0 ? savings * (cost / all) : savings;
        double score = 0;
        bool ok;
        if (p->total_cost <= 0 || ps <= 0)
            ok = false;
        else if (p->total_disruption <= 0)
            ok = true;
        else {
            score = (ps / p->total_cost) / (disruption / p->total_disruption);
            ok = score >= 1.0 / NW_DIS_BALANCED_K;
        }
        if (!ok) {
            snprintf(why, wn,
                     "Balanced consolidation: the move scores %.3f for NodePool \"%s\" (savings "
                     "%.3f of %.3f $/h, disruption %.1f of %.1f), below 1/%d",
                     score, p->name, ps, p->total_cost, disruption, p->total_disruption,
                     NW_DIS_BALANCED_K);
            return false;
        }
    }
    return true;
}

/* The price rules on the one replacement: only cheaper types, spot-to-spot's and minValues'
 * limits, spot pinned, and (multi) not the candidates' own types. false: none is left (why). */
static bool narrow_replacement(const nw_disrupt_state_t *st, nw_disrupt_repl_t *rp, const int *idx,
                               int n, double price, bool all_spot, bool multi, char *why, size_t wn)
{
    if (all_spot && rp->allow_spot) {
        /* spot-to-spot */
        if (!st->in.spot_to_spot) {
            snprintf(why, wn,
                     "SpotToSpotConsolidation is disabled, can't replace a spot node "
                     "with a spot node");
            return false;
        }
        rp->allow_on_demand = false;
        rp->allow_reserved = false;
        filter_price(rp, price);
        if (!multi) {
            int need =
                rp->min_values > NW_DIS_SPOT_MIN_TYPES ? rp->min_values : NW_DIS_SPOT_MIN_TYPES;
            if (rp->ntypes < NW_DIS_SPOT_MIN_TYPES) {
                snprintf(why, wn,
                         "SpotToSpotConsolidation requires %d cheaper instance type "
                         "options than the current candidate to consolidate, got %d",
                         NW_DIS_SPOT_MIN_TYPES, rp->ntypes);
                return false;
            }
            if (rp->ntypes > need)
                rp->ntypes = need;
        }
        if (rp->ntypes == 0 || !min_values_ok(rp)) {
            snprintf(why, wn, "can't replace with a cheaper node");
            return false;
        }
    } else {
        if (filter_price(rp, price) == 0 || !min_values_ok(rp)) {
            snprintf(why, wn, "can't replace with a cheaper node");
            return false;
        }
        if (rp->allow_spot && rp->allow_on_demand) {
            /* pin to spot: an ICE on spot must not become a pricier on-demand node */
            rp->allow_on_demand = false;
            if (filter_price(rp, price) == 0) { /* types without a spot offering go */
                snprintf(why, wn, "can't replace with a cheaper node");
                return false;
            }
        }
    }
    if (multi) {
        /* filterOutSameInstanceType: a type one of the candidates runs caps the price */
        double cap = INFINITY;
        for (int t = 0; t < rp->ntypes; t++)
            for (int i = 0; i < n; i++) {
                const nw_disrupt_node_t *c = &st->nodes[idx[i]];
                if (strcmp(c->itype, rp->types[t].name) == 0 && c->price < cap)
                    cap = c->price;
            }
        if (cap < INFINITY && filter_price(rp, cap) == 0) {
            snprintf(why, wn,
                     "the only cheaper replacements are the candidates' own instance "
                     "types");
            return false;
        }
    }
    return true;
}

/*
 * computeConsolidation (kubernetes-sigs/karpenter pkg/controllers/disruption/consolidation.go):
 * 1 command in cmd (action + sim), 0 none (why), -1 error.
 */
static int compute(const nw_disrupt_state_t *st, nw_dis_sim_fn sim, void *ud, const int *idx, int n,
                   bool multi, nw_disrupt_cmd_t *cmd, char *why, size_t wn)
{
    const char *names[NW_DIS_MULTI_MAX];
    double price = 0;
    bool all_spot = true;
    for (int i = 0; i < n && i < NW_DIS_MULTI_MAX; i++) {
        const nw_disrupt_node_t *c = &st->nodes[idx[i]];
        names[i] = c->name;
        price += c->price;
        if (strcmp(c->capacity_type, "spot") != 0)
            all_spot = false;
    }
    nw_disrupt_sim_t r;
    memset(&r, 0, sizeof r);
    nw_err_t e = {0};
    if (sim(ud, st, names, (size_t)n, &r, &e) != NW_OK) {
        snprintf(why, wn, "simulation failed: %.200s", e.msg);
        nw_decide_sim_cleanup(&r);
        return -1;
    }
    if (!r.ok) {
        snprintf(why, wn, "%s", r.why[0] ? r.why : "not all pods would schedule");
        nw_decide_sim_cleanup(&r);
        return 0;
    }
    if (r.nrepl == 0) {
        if (!balanced_ok(st, idx, n, price, why, wn)) {
            nw_decide_sim_cleanup(&r);
            return 0;
        }
        cmd->action = NW_DIS_DELETE;
        cmd->sim = r;
        cmd->new_price = 0;
        return 1;
    }
    if (r.nrepl > 1) {
        snprintf(why, wn, "can't remove without creating %d candidates", r.nrepl);
        nw_decide_sim_cleanup(&r);
        return 0;
    }
    nw_disrupt_repl_t *rp = &r.repl[0];
    if (!narrow_replacement(st, rp, idx, n, price, all_spot, multi, why, wn) ||
        !balanced_ok(st, idx, n, price - launch_price(rp, &rp->types[0]), why, wn)) {
        nw_decide_sim_cleanup(&r);
        return 0;
    }
    cmd->action = NW_DIS_REPLACE;
    cmd->new_price = launch_price(rp, &rp->types[0]);
    cmd->sim = r;
    return 1;
}

/* ---- methods ---- */

static int emptiness(const nw_disrupt_state_t *st, nw_disrupt_cmd_t *cmd, int *idx)
{
    int n = 0;
    for (size_t i = 0; i < st->nnodes; i++)
        if (emptiness_eligible(st, &st->nodes[i]))
            idx[n++] = (int)i;
    if (!n)
        return 0;
    sort_idx(st, idx, n, by_cost);
    int allowed[256 + 1];
    int np = st->npools < 256 ? (int)st->npools : 256;
    for (int k = 0; k < np; k++)
        allowed[k] = st->pools[k].allowed[NW_DIS_EMPTY];
    int take = 0;
    for (int i = 0; i < n; i++) {
        const nw_disrupt_node_t *c = &st->nodes[idx[i]];
        if (c->pool >= np || allowed[c->pool] <= 0) {
            budget_note(cmd, st, c, NW_DIS_EMPTY);
            continue;
        }
        allowed[c->pool]--;
        idx[take++] = idx[i];
    }
    if (!take)
        return 0;
    if (set_candidates(cmd, st, idx, take) != NW_OK)
        return -1;
    cmd->method = NW_DIS_EMPTINESS;
    cmd->reason = NW_DIS_EMPTY;
    cmd->action = NW_DIS_DELETE;
    cmd->validate = true;
    return 1;
}

static int drift(const nw_disrupt_state_t *st, nw_dis_sim_fn sim, void *ud, nw_disrupt_cmd_t *cmd,
                 int *idx)
{
    int n = 0;
    for (size_t i = 0; i < st->nnodes; i++)
        if (drift_eligible(&st->nodes[i]))
            idx[n++] = (int)i;
    sort_idx(st, idx, n, by_drift);
    for (int i = 0; i < n; i++) {
        const nw_disrupt_node_t *c = &st->nodes[idx[i]];
        /* an expired node of a staged pool goes by the rollout alone (expiry ignores
         * budgets); a drifted one by the Drifted budget as well */
        bool expiry = c->expired && c->rollout_class >= 0;
        if (!expiry && st->pools[c->pool].allowed[NW_DIS_DRIFTED] <= 0) {
            budget_note(cmd, st, c, NW_DIS_DRIFTED);
            continue;
        }
        if (rollout_holds(cmd, st, c))
            continue;
        if (c->nresched == 0) {
            if (set_candidates(cmd, st, &idx[i], 1) != NW_OK)
                return -1;
            cmd->method = NW_DIS_DRIFT;
            cmd->reason = NW_DIS_DRIFTED;
            cmd->action = NW_DIS_DELETE;
            return 1;
        }
        if (!sim)
            continue;
        nw_disrupt_sim_t r;
        memset(&r, 0, sizeof r);
        nw_err_t e = {0};
        const char *name = c->name;
        if (sim(ud, st, &name, 1, &r, &e) != NW_OK) {
            nw_decide_sim_cleanup(&r);
            continue;
        }
        if (!r.ok) {
            note(cmd, c->name, "DisruptionBlocked", "Cannot replace drifted NodeClaim: %s",
                 r.why[0] ? r.why : "not all pods would schedule");
            nw_decide_sim_cleanup(&r);
            continue;
        }
        if (set_candidates(cmd, st, &idx[i], 1) != NW_OK) {
            nw_decide_sim_cleanup(&r);
            return -1;
        }
        cmd->method = NW_DIS_DRIFT;
        cmd->reason = NW_DIS_DRIFTED;
        cmd->action = r.nrepl ? NW_DIS_REPLACE : NW_DIS_DELETE;
        cmd->rollout = c->rollout_class >= 0 && c->rollout_pods > 0 && r.nrepl > 0;
        for (int k = 0; k < r.nrepl; k++) {
            sort_types(&r.repl[k]);
            if (r.repl[k].ntypes)
                cmd->new_price += launch_price(&r.repl[k], &r.repl[k].types[0]);
        }
        cmd->sim = r;
        return 1;
    }
    return 0;
}

/* ---- GPU-aware disruption: accelerator nodes left idle ---- */

static bool accel_idle_eligible(const nw_disrupt_node_t *n)
{
    return n->candidate && n->accel >= 0 && n->accel_idle && n->pool >= 0;
}

/* The accelerator class (index into the input's accels) whose label a NodePool's template
 * carries, -1 for a generic pool (or an unknown one). */
static int pool_accel(const nw_disrupt_state_t *st, const char *pool)
{
    const char *key = st->in.accel_label_key;
    for (size_t k = 0; key && k < st->npools; k++) {
        if (strcmp(st->pools[k].name, pool) != 0)
            continue;
        const char *keys[] = {"spec", "template", "metadata", "labels"};
        const char *v = nw_json_str(nw_json_path(st->pools[k].obj, keys, 4), key);
        for (size_t i = 0; v && i < st->in.naccels; i++)
            if (st->in.accels[i].label_value && strcmp(v, st->in.accels[i].label_value) == 0)
                return (int)i;
    }
    return -1;
}

/* The first replacement of r on an accelerator pool, -1 none. */
static int accel_replacement(const nw_disrupt_state_t *st, const nw_disrupt_sim_t *r)
{
    for (int k = 0; k < r->nrepl; k++)
        if (pool_accel(st, r->repl[k].pool) >= 0)
            return k;
    return -1;
}

/* The node's remaining pods simulated elsewhere: true the command (cmd->sim set), false
 * not possible (a note says why: they fit nowhere, only on accelerator capacity, or the
 * simulation failed). */
static bool accel_move(const nw_disrupt_state_t *st, nw_dis_sim_fn sim, void *ud,
                       const nw_disrupt_node_t *c, nw_disrupt_cmd_t *cmd)
{
    const char *cls = st->in.accels[c->accel].name;
    nw_disrupt_sim_t r;
    memset(&r, 0, sizeof r);
    nw_err_t e = {0};
    if (sim(ud, st, &c->name, 1, &r, &e) != NW_OK) {
        note(cmd, c->name, "Unconsolidatable", "GPU-aware disruption: simulation failed: %.200s",
             e.msg);
        nw_decide_sim_cleanup(&r);
        return false;
    }
    int k = r.ok ? accel_replacement(st, &r) : -1;
    if (!r.ok || k >= 0) {
        note(cmd, c->name, "Unconsolidatable",
             "GPU-aware disruption: no pod of the %s accelerator class has run on the node for "
             "its NodePool's consolidateAfter, but its other pods %s",
             cls,
             !r.ok ? (r.why[0] ? r.why : "would not all schedule elsewhere")
                   : "would need new accelerator capacity (NodePool of a class)");
        nw_decide_sim_cleanup(&r);
        return false;
    }
    cmd->action = r.nrepl ? NW_DIS_REPLACE : NW_DIS_DELETE;
    for (k = 0; k < r.nrepl; k++) {
        sort_types(&r.repl[k]);
        if (r.repl[k].ntypes)
            cmd->new_price += launch_price(&r.repl[k], &r.repl[k].types[0]);
    }
    cmd->sim = r;
    return true;
}

/* Reclaim one accelerator node where no pod of its class has run for consolidateAfter:
 * its other pods (CPU-only pods tolerating the taint, helpers) go to generic capacity,
 * existing or new, first; Underutilized budgets and the candidate rules (PDBs,
 * do-not-disrupt) hold as for consolidation. */
static int accel_idle(const nw_disrupt_state_t *st, nw_dis_sim_fn sim, void *ud,
                      nw_disrupt_cmd_t *cmd, int *idx)
{
    int n = 0;
    for (size_t i = 0; i < st->nnodes; i++)
        if (accel_idle_eligible(&st->nodes[i]))
            idx[n++] = (int)i;
    if (!n || !sim)
        return 0;
    sort_idx(st, idx, n, by_cost);
    for (int i = 0; i < n; i++) {
        const nw_disrupt_node_t *c = &st->nodes[idx[i]];
        if (st->pools[c->pool].allowed[NW_DIS_UNDERUTILIZED] <= 0) {
            budget_note(cmd, st, c, NW_DIS_UNDERUTILIZED);
            continue;
        }
        if (!accel_move(st, sim, ud, c, cmd))
            continue;
        if (set_candidates(cmd, st, &idx[i], 1) != NW_OK)
            return -1;
        cmd->method = NW_DIS_ACCEL_IDLE;
        cmd->reason = NW_DIS_UNDERUTILIZED;
        cmd->validate = true;
        return 1;
    }
    return 0;
}

/* consolidation candidates in order, filtered by the Underutilized budget; with notes, an
 * accelerator node kept for the pods of its class says so */
static int consolidation_list(const nw_disrupt_state_t *st, nw_disrupt_cmd_t *cmd, int *idx,
                              bool notes)
{
    for (size_t i = 0; notes && i < st->nnodes; i++) {
        const nw_disrupt_node_t *a = &st->nodes[i];
        if (!a->candidate || a->empty || !a->consolidatable || a->accel < 0 || a->accel_idle)
            continue;
        if (a->accel_pods > 0) {
            note(cmd, a->name, "Unconsolidatable",
                 "GPU-aware disruption: %d pod%s of the %s accelerator class run%s on the node, "
                 "so it is not consolidated on CPU or memory utilization",
                 a->accel_pods, a->accel_pods == 1 ? "" : "s", st->in.accels[a->accel].name,
                 a->accel_pods == 1 ? "s" : "");
        } else {
            char at[40] = "never";
            if (a->accel_idle_at)
                nw_clock_time_format(a->accel_idle_at, at, sizeof at);
            note(cmd, a->name, "Unconsolidatable",
                 "GPU-aware disruption: no pod of the %s accelerator class runs on the node; it "
                 "is kept for its NodePool's consolidateAfter after one last ran (reclaimable "
                 "at %s)",
                 st->in.accels[a->accel].name, at);
        }
    }
    int n = 0;
    for (size_t i = 0; i < st->nnodes; i++)
        if (consolidation_eligible(st, &st->nodes[i]))
            idx[n++] = (int)i;
    sort_idx(st, idx, n, by_cost);
    int allowed[256];
    int np = st->npools < 256 ? (int)st->npools : 256;
    for (int k = 0; k < np; k++)
        allowed[k] = st->pools[k].allowed[NW_DIS_UNDERUTILIZED];
    int k = 0;
    for (int i = 0; i < n; i++) {
        const nw_disrupt_node_t *c = &st->nodes[idx[i]];
        if (c->pool >= np || allowed[c->pool] <= 0) {
            if (notes)
                budget_note(cmd, st, c, NW_DIS_UNDERUTILIZED);
            continue;
        }
        allowed[c->pool]--;
        idx[k++] = idx[i];
    }
    return k;
}

/* The time a search must stop at (mono ns), 0 none. */
static int64_t search_deadline(const nw_disrupt_state_t *st, int64_t limit)
{
    return st->in.mono && limit > 0 ? st->in.mono(st->in.mono_ud) + limit : 0;
}

static bool past(const nw_disrupt_state_t *st, int64_t deadline)
{
    return deadline && st->in.mono(st->in.mono_ud) > deadline;
}

static int multi_node(const nw_disrupt_state_t *st, nw_dis_sim_fn sim, void *ud,
                      nw_disrupt_cmd_t *cmd, int *idx)
{
    int n = consolidation_list(st, cmd, idx, true);
    if (n > NW_DIS_MULTI_MAX)
        n = NW_DIS_MULTI_MAX;
    if (n < 2)
        return 0;
    int lo = 1, hi = n - 1, found = 0;
    nw_disrupt_cmd_t best;
    memset(&best, 0, sizeof best);
    char why[256];
    int64_t deadline = search_deadline(st, st->in.multi_timeout);
    int tried = 0;
    while (lo <= hi) {
        if (past(st, deadline)) {
            /* Karpenter returns the last command that worked, if any */
            cmd->multi_timed_out = true;
            cmd->multi_evaluated = tried;
            break;
        }
        tried++;
        int mid = (lo + hi) / 2;
        nw_disrupt_cmd_t t;
        memset(&t, 0, sizeof t);
        int rc = compute(st, sim, ud, idx, mid + 1, true, &t, why, sizeof why);
        if (rc < 0) {
            nw_decide_sim_cleanup(&t.sim);
            break;
        }
        if (rc == 1) {
            nw_decide_sim_cleanup(&best.sim);
            best.sim = t.sim;
            best.action = t.action;
            best.new_price = t.new_price;
            found = mid + 1;
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    if (!found)
        return 0;
    if (set_candidates(cmd, st, idx, found) != NW_OK) {
        nw_decide_sim_cleanup(&best.sim);
        return -1;
    }
    cmd->method = NW_DIS_MULTI;
    cmd->reason = NW_DIS_UNDERUTILIZED;
    cmd->action = best.action;
    cmd->sim = best.sim;
    cmd->new_price = best.new_price;
    cmd->validate = true;
    return 1;
}

static int single_node(const nw_disrupt_state_t *st, nw_dis_sim_fn sim, void *ud,
                       nw_disrupt_cmd_t *cmd, int *idx)
{
    /* the budget notes were written by the multi-node pass */
    int n = consolidation_list(st, cmd, idx, false);
    char why[256];
    int64_t deadline = search_deadline(st, st->in.single_timeout);
    for (int i = 0; i < n; i++) {
        if (past(st, deadline)) { /* Karpenter abandons the pass */
            cmd->single_timed_out = true;
            cmd->single_evaluated = i;
            return 0;
        }
        nw_disrupt_cmd_t t;
        memset(&t, 0, sizeof t);
        int rc = compute(st, sim, ud, &idx[i], 1, false, &t, why, sizeof why);
        if (rc < 0)
            return -1;
        if (rc == 0) {
            note(cmd, st->nodes[idx[i]].name, "Unconsolidatable", "%s", why);
            continue;
        }
        if (set_candidates(cmd, st, &idx[i], 1) != NW_OK) {
            nw_decide_sim_cleanup(&t.sim);
            return -1;
        }
        cmd->method = NW_DIS_SINGLE;
        cmd->reason = NW_DIS_UNDERUTILIZED;
        cmd->action = t.action;
        cmd->sim = t.sim;
        cmd->new_price = t.new_price;
        cmd->validate = true;
        return 1;
    }
    return 0;
}

static void summarize(const nw_disrupt_state_t *st, nw_disrupt_cmd_t *cmd)
{
    size_t off = (size_t)snprintf(
        cmd->summary, sizeof cmd->summary, "%s/%s via %s:", nw_budget_reason_str(cmd->reason),
        cmd->action == NW_DIS_REPLACE ? "Replace" : "Delete", nw_decide_method_str(cmd->method));
    for (size_t i = 0; i < cmd->ncandidates && off < sizeof cmd->summary; i++) {
        const nw_disrupt_node_t *n = nw_candidates_state_node(st, cmd->candidates[i]);
        off += (size_t)snprintf(
            cmd->summary + off, sizeof cmd->summary - off, "%s %s%s%s%s", i ? "," : "",
            cmd->candidates[i], n && *n->itype ? "/" : "", n ? n->itype : "",
            n && cmd->method == NW_DIS_DRIFT && !n->drifted && n->expired ? " (expired)" : "");
    }
    for (int k = 0; k < cmd->sim.nrepl && off < sizeof cmd->summary; k++) {
        const nw_disrupt_repl_t *r = &cmd->sim.repl[k];
        off += (size_t)snprintf(
            cmd->summary + off, sizeof cmd->summary - off, "%s %s (%d type%s%s)", k ? "," : " ->",
            r->ntypes ? r->types[0].name : "?", r->ntypes, r->ntypes == 1 ? "" : "s",
            r->allow_on_demand ? ""
            : r->allow_spot    ? ", spot"
                               : "");
    }
    if (off < sizeof cmd->summary && cmd->old_price > 0)
        snprintf(cmd->summary + off, sizeof cmd->summary - off, "; $%.4f/h -> $%.4f/h",
                 cmd->old_price, cmd->new_price);
}

/* The pass's simulations, asked first whether a provisioning batch waits (in.yield). */
typedef struct {
    nw_dis_sim_fn sim;
    void *ud;
    bool yielded;
} yield_sim_t;

static nw_rc_t sim_or_yield(void *ud, const nw_disrupt_state_t *st, const char *const *ncs,
                            size_t n, nw_disrupt_sim_t *out, nw_err_t *err)
{
    yield_sim_t *y = ud;
    if (y->yielded || st->in.yield(st->in.yield_ud)) {
        y->yielded = true;
        memset(out, 0, sizeof *out);
        return nw_err_set(err, NW_ETIMEOUT, NULL, "a provisioning batch waits");
    }
    return y->sim(y->ud, st, ncs, n, out, err);
}

nw_rc_t nw_decide(const nw_disrupt_state_t *st, nw_dis_sim_fn sim, void *ud, nw_disrupt_cmd_t *cmd,
                  nw_err_t *err)
{
    memset(cmd, 0, sizeof *cmd);
    yield_sim_t y = {sim, ud, false};
    if (sim && st->in.yield) {
        sim = sim_or_yield;
        ud = &y;
    }
    int *idx = st->nnodes ? calloc(st->nnodes, sizeof *idx) : NULL;
    if (st->nnodes && !idx)
        return nw_err_set(err, NW_ENOMEM, NULL, "out of memory");
    for (int m = 0; m < NW_DIS_NMETHODS; m++)
        cmd->elapsed[m] = -1;
    static const nw_disrupt_method_t order[] = {NW_DIS_EMPTINESS, NW_DIS_DRIFT, NW_DIS_ACCEL_IDLE,
                                                NW_DIS_MULTI, NW_DIS_SINGLE};
    int rc = 0;
    for (size_t o = 0; o < sizeof order / sizeof order[0] && rc == 0; o++) {
        nw_disrupt_method_t m = order[o];
        if ((m == NW_DIS_MULTI || m == NW_DIS_SINGLE) && !sim)
            break;
        int64_t t0 = st->in.mono ? st->in.mono(st->in.mono_ud) : 0;
        rc = m == NW_DIS_EMPTINESS    ? emptiness(st, cmd, idx)
             : m == NW_DIS_DRIFT      ? drift(st, sim, ud, cmd, idx)
             : m == NW_DIS_ACCEL_IDLE ? accel_idle(st, sim, ud, cmd, idx)
             : m == NW_DIS_MULTI      ? multi_node(st, sim, ud, cmd, idx)
                                      : single_node(st, sim, ud, cmd, idx);
        if (st->in.mono)
            cmd->elapsed[m] = st->in.mono(st->in.mono_ud) - t0;
        if (y.yielded)
            break;
    }
    free(idx);
    if (y.yielded) {
        /* whatever the methods had found is dropped: the pass runs again after the batch */
        nw_decide_cmd_cleanup(cmd);
        memset(cmd, 0, sizeof *cmd);
        for (int m = 0; m < NW_DIS_NMETHODS; m++)
            cmd->elapsed[m] = -1;
        cmd->yielded = true;
        return NW_OK;
    }
    if (rc < 0) {
        cmd->method = NW_DIS_NONE;
        return nw_err_set(err, NW_ENOMEM, NULL, "out of memory");
    }
    if (rc == 1)
        summarize(st, cmd);
    return NW_OK;
}

/* ---- validation ---- */

static bool still_eligible(const nw_disrupt_state_t *st, const nw_disrupt_node_t *n,
                           nw_disrupt_method_t m)
{
    switch (m) {
    case NW_DIS_EMPTINESS:
        return emptiness_eligible(st, n);
    case NW_DIS_DRIFT:
        return drift_eligible(n);
    case NW_DIS_ACCEL_IDLE:
        return accel_idle_eligible(n);
    default:
        return consolidation_eligible(st, n);
    }
}

static bool types_superset(const nw_disrupt_repl_t *fresh, const nw_disrupt_repl_t *old)
{
    for (int i = 0; i < old->ntypes; i++) {
        bool have = false;
        for (int k = 0; k < fresh->ntypes && !have; k++)
            have = strcmp(fresh->types[k].name, old->types[i].name) == 0;
        if (!have)
            return false;
    }
    return true;
}

/* An accelerator-idle command against the fresh simulation r (taken): the remaining pods
 * still fit, on generic capacity, and a delete still needs no new NodeClaim; a replace
 * takes the fresh replacements (its pods may have changed). */
static bool validate_accel(const nw_disrupt_state_t *st, nw_disrupt_cmd_t *cmd, nw_disrupt_sim_t *r,
                           char *why, size_t wn)
{
    bool ok = true;
    if (!r->ok) {
        snprintf(why, wn, "scheduling: %s", r->why[0] ? r->why : "not all pods would schedule");
        ok = false;
    } else if (accel_replacement(st, r) >= 0) {
        snprintf(why, wn, "scheduling: the pods would now need new accelerator capacity");
        ok = false;
    } else if (cmd->action == NW_DIS_DELETE && r->nrepl != 0) {
        snprintf(why, wn, "scheduling: a delete now needs %d new NodeClaim%s", r->nrepl,
                 r->nrepl == 1 ? "" : "s");
        ok = false;
    } else if (cmd->action == NW_DIS_REPLACE && r->nrepl == 0) {
        snprintf(why, wn, "scheduling: the replacement changed");
        ok = false;
    }
    if (!ok) {
        nw_decide_sim_cleanup(r);
        return false;
    }
    nw_decide_sim_cleanup(&cmd->sim);
    for (int k = 0; k < r->nrepl; k++)
        sort_types(&r->repl[k]);
    cmd->sim = *r;
    return true;
}

int nw_decide_validate(const nw_disrupt_state_t *st, nw_disrupt_cmd_t *cmd, nw_dis_sim_fn sim,
                       void *ud, char *why, size_t wn)
{
    int allowed[256];
    int np = st->npools < 256 ? (int)st->npools : 256;
    for (int k = 0; k < np; k++)
        allowed[k] = st->pools[k].allowed[cmd->reason];
    size_t keep = 0;
    const char *last_bad = "churn";
    for (size_t i = 0; i < cmd->ncandidates; i++) {
        const nw_disrupt_node_t *n = nw_candidates_state_node(st, cmd->candidates[i]);
        const char *bad = NULL;
        if (!n || !still_eligible(st, n, cmd->method))
            bad = "churn";
        else if (n->pool >= np || allowed[n->pool] <= 0)
            bad = "budget";
        if (bad) {
            if (cmd->method != NW_DIS_EMPTINESS) {
                snprintf(why, wn, "%s: NodeClaim %s %s", bad, cmd->candidates[i],
                         !n                           ? "is gone"
                         : strcmp(bad, "budget") == 0 ? "exceeds the budget"
                         : n->why[0]                  ? n->why
                                                      : "is no longer a candidate");
                return 0;
            }
            last_bad = bad;
            free(cmd->candidates[i]);
            continue;
        }
        allowed[n->pool]--;
        cmd->candidates[keep++] = cmd->candidates[i];
    }
    cmd->ncandidates = keep;
    if (keep == 0) {
        snprintf(why, wn, "%s: no candidate remains", last_bad);
        return 0;
    }
    if (cmd->method == NW_DIS_EMPTINESS || cmd->method == NW_DIS_DRIFT || !sim)
        return 1;
    nw_disrupt_sim_t r;
    memset(&r, 0, sizeof r);
    nw_err_t e = {0};
    if (sim(ud, st, (const char *const *)cmd->candidates, cmd->ncandidates, &r, &e) != NW_OK) {
        snprintf(why, wn, "simulation failed: %.200s", e.msg);
        nw_decide_sim_cleanup(&r);
        return -1;
    }
    if (cmd->method == NW_DIS_ACCEL_IDLE)
        return validate_accel(st, cmd, &r, why, wn) ? 1 : 0;
    int ok = 1;
    if (!r.ok) {
        snprintf(why, wn, "scheduling: %s", r.why[0] ? r.why : "not all pods would schedule");
        ok = 0;
    } else if (cmd->action == NW_DIS_DELETE && r.nrepl != 0) {
        snprintf(why, wn, "scheduling: a delete now needs %d new NodeClaim%s", r.nrepl,
                 r.nrepl == 1 ? "" : "s");
        ok = 0;
    } else if (cmd->action == NW_DIS_REPLACE && (r.nrepl != 1 || cmd->sim.nrepl != 1 ||
                                                 !types_superset(&r.repl[0], &cmd->sim.repl[0]))) {
        snprintf(why, wn, "scheduling: the replacement changed");
        ok = 0;
    }
    if (ok && cmd->action == NW_DIS_REPLACE) {
        /* keep the command's narrowed options, the fresh handle */
        nw_disrupt_repl_t narrowed = cmd->sim.repl[0];
        cmd->sim.repl[0].types = NULL;
        nw_decide_sim_cleanup(&cmd->sim);
        free(r.repl[0].types);
        r.repl[0] = narrowed;
        cmd->sim = r;
        return 1;
    }
    nw_decide_sim_cleanup(&r);
    return ok;
}

/* ---- report ---- */

/* GPU-aware disruption's view of an accelerator node: its class, the class's pods on it,
 * and when (RFC 3339) it becomes or became reclaimable */
static void accel_report(const nw_disrupt_state_t *st, const nw_disrupt_node_t *n, cJSON *j)
{
    cJSON *a = nw_json_add_object(j, "accelerator");
    nw_json_add_string(a, "class", st->in.accels[n->accel].name);
    nw_json_add_number(a, "classPods", n->accel_pods);
    char ts[40];
    if (n->accel_pods > 0) {
        nw_json_add_string(a, "decision",
                           "kept: a pod of its class runs on it (never "
                           "consolidated on CPU or memory utilization)");
    } else if (n->accel_idle_at) {
        nw_clock_time_format(n->accel_since, ts, sizeof ts);
        nw_json_add_string(a, "classPodLastRan", ts);
        nw_clock_time_format(n->accel_idle_at, ts, sizeof ts);
        nw_json_add_string(a, "reclaimableAt", ts);
        nw_json_add_string(a, "decision",
                           n->accel_idle ? "reclaim: no pod of its class for its NodePool's "
                                           "consolidateAfter; its other pods move to "
                                           "generic capacity first"
                                         : "idle: reclaimed at reclaimableAt if no pod of "
                                           "its class comes");
    } else {
        nw_json_add_string(a, "decision",
                           "not reclaimed (consolidateAfter Never, or not "
                           "initialized)");
    }
}

/* staged replacement: the pool's rollout (class, steps in progress of the most allowed, the
 * one waited for, stopped and why) */
static void rollout_pool_report(const nw_disrupt_state_t *st, const nw_disrupt_pool_t *p, cJSON *j)
{
    const nw_disrupt_accel_t *a = &st->in.accels[p->rollout_class];
    cJSON *r = nw_json_add_object(j, "acceleratorRollout");
    nw_json_add_string(r, "class", a->name);
    nw_json_add_number(r, "maxInProgress", a->rollout_max);
    nw_json_add_number(r, "inProgress", p->rollout_steps);
    if (p->rollout_steps)
        nw_json_add_string(r, "waitingFor", p->rollout_wait);
    nw_json_add_bool(r, "blocked", p->rollout_blocked);
    if (p->rollout_blocked)
        nw_json_add_string(r, "reason", p->rollout_why);
}

/* staged replacement: a node's part in its pool's rollout */
static void rollout_node_report(const nw_disrupt_state_t *st, const nw_disrupt_node_t *n, cJSON *j)
{
    const nw_disrupt_pool_t *p = &st->pools[n->pool];
    const nw_disrupt_accel_t *a = &st->in.accels[n->rollout_class];
    cJSON *r = nw_json_add_object(j, "rollout");
    char ts[40];
    if (n->expired_at) {
        nw_clock_time_format(n->expired_at, ts, sizeof ts);
        nw_json_add_string(r, "expiresAt", ts);
    }
    nw_json_add_bool(r, "expired", n->expired);
    nw_json_add_number(r, "classPods", n->rollout_pods);
    if (n->rollout_of) {
        nw_json_add_string(r, "replacementFor", n->rollout_of);
        if (n->rollout_deadline) {
            nw_clock_time_format(n->rollout_deadline, ts, sizeof ts);
            nw_json_add_string(r, "deadline", ts);
        }
        nw_json_add_string(r, "decision",
                           n->rollout_done   ? "replacement done: a pod of its class is Running "
                                               "and Ready on it"
                           : n->deleting     ? "replacement being deleted"
                           : n->rollout_late ? "replacement late: the rollout is stopped"
                                             : "replacement in progress: waiting for a pod of "
                                               "its class to be Running and Ready on it");
        return;
    }
    if (!(n->drifted || n->expired))
        return;
    char msg[512];
    if (n->in_command || n->deleting)
        snprintf(msg, sizeof msg, "being replaced (a step of the staged rollout)");
    else if (p->rollout_blocked)
        snprintf(msg, sizeof msg, "held back: the staged rollout is stopped (%s)", p->rollout_why);
    else if (p->rollout_steps >= a->rollout_max)
        snprintf(msg, sizeof msg,
                 "held back by the staged rollout: %d of at most %d replacement%s in progress "
                 "(waiting for %s)",
                 p->rollout_steps, a->rollout_max, a->rollout_max == 1 ? "" : "s", p->rollout_wait);
    else
        snprintf(msg, sizeof msg, "next: the staged rollout allows a replacement now");
    nw_json_add_string(r, "decision", msg);
}

cJSON *nw_decide_report_json(const nw_disrupt_state_t *st, const nw_disrupt_cmd_t *cmd)
{
    cJSON *o = nw_json_new_object();
    cJSON *pools = nw_json_add_array(o, "nodepools");
    for (size_t k = 0; k < st->npools; k++) {
        const nw_disrupt_pool_t *p = &st->pools[k];
        cJSON *j = nw_json_new_object();
        nw_json_add_string(j, "name", p->name);
        nw_json_add_number(j, "nodes", p->counted);
        nw_json_add_number(j, "disrupting", p->disrupting);
        cJSON *al = nw_json_add_object(j, "allowedDisruptions");
        for (int r = 0; r < NW_DIS_NREASONS; r++) {
            if (p->allowed[r] == NW_DIS_UNLIMITED)
                nw_json_add_string(al, nw_budget_reason_str((nw_disrupt_reason_t)r), "unlimited");
            else
                nw_json_add_number(al, nw_budget_reason_str((nw_disrupt_reason_t)r), p->allowed[r]);
        }
        if (p->budget_error[0])
            nw_json_add_string(j, "budgetError", p->budget_error);
        if (p->rollout_class >= 0)
            rollout_pool_report(st, p, j);
        nw_json_push(pools, j);
    }
    cJSON *nodes = nw_json_add_array(o, "nodeclaims");
    for (size_t i = 0; i < st->nnodes; i++) {
        const nw_disrupt_node_t *n = &st->nodes[i];
        cJSON *j = nw_json_new_object();
        nw_json_add_string(j, "name", n->name);
        nw_json_add_string(j, "node", n->node_name);
        nw_json_add_string(j, "nodepool", n->pool >= 0 ? st->pools[n->pool].name : "");
        nw_json_add_string(j, "instanceType", n->itype);
        nw_json_add_string(j, "capacityType", n->capacity_type);
        nw_json_add_string(j, "zone", n->zone);
        if (n->price >= 0)
            nw_json_add_number(j, "pricePerHour", n->price);
        nw_json_add_bool(j, "candidate", n->candidate);
        if (n->why[0])
            nw_json_add_string(j, "notCandidate", n->why);
        nw_json_add_number(j, "reschedulablePods", n->nresched);
        nw_json_add_bool(j, "empty", n->candidate && n->empty);
        nw_json_add_bool(j, "consolidatable", n->consolidatable);
        nw_json_add_bool(j, "drifted", n->drifted);
        if (n->accel >= 0)
            accel_report(st, n, j);
        if (n->rollout_class >= 0)
            rollout_node_report(st, n, j);
        nw_json_add_number(j, "disruptionCost", round(n->disruption_cost * 1000) / 1000);
        nw_json_push(nodes, j);
    }
    cJSON *c = nw_json_add_object(o, "command");
    if (!cmd || cmd->method == NW_DIS_NONE) {
        nw_json_add_string(c, "method", "none");
    } else {
        nw_json_add_string(c, "method", nw_decide_method_str(cmd->method));
        nw_json_add_string(c, "reason", nw_budget_reason_str(cmd->reason));
        nw_json_add_string(c, "action", nw_decide_action_str(cmd->action));
        cJSON *cs = nw_json_add_array(c, "candidates");
        for (size_t i = 0; i < cmd->ncandidates; i++)
            nw_json_push(cs, nw_json_new_string(cmd->candidates[i]));
        cJSON *rs = nw_json_add_array(c, "replacements");
        for (int k = 0; k < cmd->sim.nrepl; k++) {
            const nw_disrupt_repl_t *r = &cmd->sim.repl[k];
            cJSON *j = nw_json_new_object();
            nw_json_add_string(j, "nodepool", r->pool);
            cJSON *ct = nw_json_add_array(j, "capacityTypes");
            if (r->allow_reserved)
                nw_json_push(ct, nw_json_new_string("reserved"));
            if (r->allow_spot)
                nw_json_push(ct, nw_json_new_string("spot"));
            if (r->allow_on_demand)
                nw_json_push(ct, nw_json_new_string("on-demand"));
            cJSON *ts = nw_json_add_array(j, "instanceTypes");
            for (int t = 0; t < r->ntypes; t++)
                nw_json_push(ts, nw_json_new_string(r->types[t].name));
            nw_json_push(rs, j);
        }
        nw_json_add_number(c, "pricePerHour", round(cmd->old_price * 10000) / 10000);
        nw_json_add_number(c, "replacementPricePerHour", round(cmd->new_price * 10000) / 10000);
        nw_json_add_bool(c, "validationDelay", cmd->validate);
        nw_json_add_string(c, "summary", cmd->summary);
    }
    cJSON *notes = nw_json_add_array(o, "notes");
    for (size_t i = 0; cmd && i < cmd->nnotes; i++) {
        cJSON *j = nw_json_new_object();
        nw_json_add_string(j, "nodeclaim", cmd->notes[i].nodeclaim);
        nw_json_add_string(j, "reason", cmd->notes[i].reason);
        nw_json_add_string(j, "message", cmd->notes[i].message);
        nw_json_push(notes, j);
    }
    return o;
}
