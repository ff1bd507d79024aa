/*
 * cli/cmd_plan_disrupt.c — `nodewarden plan --disruption`: what one disruption pass
 * (scaler/disruption) would do to the NodeClaims, Nodes, Pods and PodDisruptionBudgets
 * in the files, with the instance types and prices of the plan's catalog snapshot.
 * Offline: nothing is written anywhere.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission/gpu.h"
#include "common/clock.h"
#include "common/json.h"
#include "scaler/disrupt/disrupt.h"
#include "scaler/disrupt/sim.h"
#include "scaler/sched/schedule.h"
#include "cli/cmd.h"
#include "cli/plan.h"

/* the price of an offering from the catalog snapshot (< 0 unknown) */
static double snap_price(void *ud, const char *itype, const char *zone, const char *ct)
{
    const nw_sched_snap_t *s = ud;
    for (size_t i = 0; i < nw_snapshot_nitypes(s); i++) {
        const nw_sched_itype_t *t = nw_snapshot_itype(s, i);
        if (strcmp(t->name, itype) != 0)
            continue;
        for (int k = 0; k < t->noffer; k++)
            if (strcmp(t->offerings[k].zone, zone) == 0 &&
                strcmp(t->offerings[k].capacity_type, ct) == 0 && t->offerings[k].price > 0)
                return t->offerings[k].price;
        return -1;
    }
    return -1;
}

static NW_MUST_USE nw_rc_t snap_types(void *ud, nw_sched_snap_t *dst, nw_err_t *err)
{
    const nw_sched_snap_t *src = ud;
    for (size_t i = 0; i < nw_snapshot_nitypes(src); i++) {
        nw_rc_t rc = nw_snap_node_add_itype(dst, nw_snapshot_itype(src, i), err);
        if (rc != NW_OK)
            return rc;
    }
    return NW_OK;
}

static const cJSON **objects(const nw_plan_t *p, const char *kind, size_t *n)
{
    *n = nw_plan_objects(p, kind, NULL, 0);
    const cJSON **v = calloc(*n + 1, sizeof *v);
    if (v)
        nw_plan_objects(p, kind, v, *n);
    else
        *n = 0;
    return v;
}

/* The pods of the plan as records (the disruption rules read records, api/pod.h); pods
 * without a name are left out, as the cache leaves them out. */
static const nw_pod_t **pod_records(const cJSON *const *pods, size_t n, nw_jsonintern_t *in,
                                    size_t *out_n)
{
    const nw_pod_t **v = calloc(n + 1, sizeof *v);
    *out_n = 0;
    for (size_t i = 0; v && i < n; i++) {
        nw_pod_t *p = NULL;
        nw_err_t err = {0};
        if (nw_pod_decode(pods[i], in, &p, &err) == NW_OK)
            v[(*out_n)++] = p;
    }
    return v;
}

static void pod_records_free(const nw_pod_t **v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        nw_pod_free((nw_pod_t *)v[i]);
    free(v);
}

/* The Nodes (claim false) or NodeClaims of the plan as records (api/node.h), as the cache
 * decodes them; one that does not decode is left out with a warning naming the field, as
 * the cache refuses it. */
static const void **node_records(const cJSON *const *objs, size_t n, bool claim, size_t *out_n)
{
    const void **v = calloc(n + 1, sizeof *v);
    *out_n = 0;
    for (size_t i = 0; v && i < n; i++) {
        nw_err_t err = {0};
        nw_node_t *node = NULL;
        nw_node_claim_t *nc = NULL;
        nw_rc_t rc =
            claim ? nw_node_claim_decode(objs[i], &nc, &err) : nw_node_decode(objs[i], &node, &err);
        if (rc == NW_OK)
            v[(*out_n)++] = claim ? (const void *)nc : (const void *)node;
        else
            fprintf(stderr, "nodewarden plan: %s %s left out: %s: %s\n",
                    claim ? "NodeClaim" : "Node",
                    nw_json_str(nw_json_get(objs[i], "metadata"), "name")
                        ? nw_json_str(nw_json_get(objs[i], "metadata"), "name")
                        : "(no name)",
                    err.path, err.msg);
    }
    return v;
}

static void node_records_free(const void **v, size_t n, bool claim)
{
    for (size_t i = 0; v && i < n; i++) {
        if (claim)
            nw_node_claim_free((nw_node_claim_t *)v[i]);
        else
            nw_node_free((nw_node_t *)v[i]);
    }
    free(v);
}

/* GPU-aware disruption's verdict on an accelerator node */
static void print_accel(const nw_disrupt_state_t *st, const nw_disrupt_node_t *n)
{
    if (n->accel < 0)
        return;
    const char *cls = st->in.accels[n->accel].name;
    char at[40];
    if (n->accel_pods > 0) {
        printf("      %s accelerator node: %d pod%s of its class on it: kept, never "
               "consolidated on CPU or memory utilization\n",
               cls, n->accel_pods, n->accel_pods == 1 ? "" : "s");
    } else if (n->accel_idle_at) {
        nw_clock_time_format(n->accel_idle_at, at, sizeof at);
        printf("      %s accelerator node: no pod of its class: %s %s (its NodePool's "
               "consolidateAfter after one last ran)\n",
               cls, n->accel_idle ? "reclaimable since" : "reclaimable at", at);
    } else {
        printf("      %s accelerator node: no pod of its class; not reclaimed (consolidateAfter "
               "Never, or not initialized)\n",
               cls);
    }
}

/* the staged rollout's view of a node: a replacement and its progress, or a drifted or
 * expired node held back */
static void print_rollout(const nw_disrupt_state_t *st, const nw_disrupt_node_t *n)
{
    if (n->rollout_class < 0)
        return;
    const nw_disrupt_pool_t *p = &st->pools[n->pool];
    const nw_disrupt_accel_t *a = &st->in.accels[n->rollout_class];
    char at[40] = "";
    if (n->rollout_of) {
        if (n->rollout_deadline)
            nw_clock_time_format(n->rollout_deadline, at, sizeof at);
        printf("      staged rollout: replacement for %s: %s%s%s\n", n->rollout_of,
               n->rollout_done   ? "done (a pod of its class is Running and Ready on it)"
               : n->deleting     ? "being deleted"
               : n->rollout_late ? "late, the rollout is stopped (deadline was "
                                 : "waiting for a pod of its class Running and Ready (deadline ",
               n->rollout_done || n->deleting ? "" : at, n->rollout_done || n->deleting ? "" : ")");
        return;
    }
    if (!(n->drifted || n->expired))
        return;
    const char *what = n->drifted ? "drifted" : "expired";
    if (n->in_command || n->deleting)
        printf("      staged rollout: %s, being replaced\n", what);
    else if (p->rollout_blocked)
        printf("      staged rollout: %s, held back: the rollout is stopped\n", what);
    else if (p->rollout_steps >= a->rollout_max)
        printf("      staged rollout: %s, held back: %d of at most %d %s replacement%s in "
               "progress (waiting for %s)\n",
               what, p->rollout_steps, a->rollout_max, a->name, a->rollout_max == 1 ? "" : "s",
               p->rollout_wait);
    else
        printf("      staged rollout: %s, may be replaced now\n", what);
}

static void print_text(const nw_disrupt_state_t *st, const nw_disrupt_cmd_t *cmd)
{
    printf("NodePools:\n");
    for (size_t k = 0; k < st->npools; k++) {
        const nw_disrupt_pool_t *p = &st->pools[k];
        printf("  %-16s %d node%s, %d disrupting; allowed now:", p->name, p->counted,
               p->counted == 1 ? "" : "s", p->disrupting);
        for (int r = 0; r < NW_DIS_NREASONS; r++) {
            if (p->allowed[r] == NW_DIS_UNLIMITED)
                printf(" %s any", nw_budget_reason_str((nw_disrupt_reason_t)r));
            else
                printf(" %s %d", nw_budget_reason_str((nw_disrupt_reason_t)r), p->allowed[r]);
            printf("%s", r + 1 < NW_DIS_NREASONS ? "," : "\n");
        }
        if (p->consolidation_never)
            printf("      consolidateAfter Never%s\n", p->when_empty ? ", WhenEmpty" : "");
        else
            printf("      consolidateAfter %llds%s\n",
                   (long long)(p->consolidate_after / 1000000000LL),
                   p->when_empty ? ", WhenEmpty" : "");
        if (p->budget_error[0])
            printf("      budget error (counts as 0): %s\n", p->budget_error);
        if (p->rollout_class >= 0) {
            const nw_disrupt_accel_t *a = &st->in.accels[p->rollout_class];
            printf("      staged %s rollout: %d of at most %d replacement%s in progress%s%s%s\n",
                   a->name, p->rollout_steps, a->rollout_max, a->rollout_max == 1 ? "" : "s",
                   p->rollout_steps ? " (waiting for " : "",
                   p->rollout_steps ? p->rollout_wait : "", p->rollout_steps ? ")" : "");
            if (p->rollout_blocked)
                printf("      %s: %s\n", NW_DIS_ROLLOUT_CONDITION, p->rollout_why);
        }
    }
    printf("\nNodeClaims: %zu\n", st->nnodes);
    for (size_t i = 0; i < st->nnodes; i++) {
        const nw_disrupt_node_t *n = &st->nodes[i];
        char price[32] = "-";
        if (n->price >= 0)
            snprintf(price, sizeof price, "$%.4f/h", n->price);
        printf("  %-24s %-14s %-12s %-9s %-10s %2d pod%s  cost %.2f  ", n->name,
               n->pool >= 0 ? st->pools[n->pool].name : "?", *n->itype ? n->itype : "-",
               *n->capacity_type ? n->capacity_type : "-", price, n->nresched,
               n->nresched == 1 ? " " : "s", n->disruption_cost);
        if (!n->candidate)
            printf("not a candidate: %s%s\n", n->why, n->drifted ? " (drifted)" : "");
        else
            printf("candidate%s%s%s\n", n->empty ? ", empty" : "",
                   n->consolidatable ? ", consolidatable" : ", not consolidatable yet",
                   n->drifted ? ", drifted" : "");
        print_accel(st, n);
        print_rollout(st, n);
    }
    printf("\nCommand: ");
    if (cmd->method == NW_DIS_NONE) {
        printf("none\n");
    } else {
        printf("%s (%s, %s)%s\n", nw_decide_method_str(cmd->method),
               nw_budget_reason_str(cmd->reason), nw_decide_action_str(cmd->action),
               cmd->validate ? ", re-checked after the validation delay" : "");
        printf("  delete:");
        for (size_t i = 0; i < cmd->ncandidates; i++)
            printf(" %s", cmd->candidates[i]);
        printf("\n");
        for (int k = 0; k < cmd->sim.nrepl; k++) {
            const nw_disrupt_repl_t *r = &cmd->sim.repl[k];
            printf("  launch first: NodeClaim in %s, %s%s%s, %d type%s:", r->pool,
                   r->allow_reserved ? "reserved " : "", r->allow_spot ? "spot " : "",
                   r->allow_on_demand ? "on-demand" : "", r->ntypes, r->ntypes == 1 ? "" : "s");
            for (int t = 0; t < r->ntypes && t < 8; t++)
                printf(" %s", r->types[t].name);
            if (r->ntypes > 8)
                printf(" (+%d more)", r->ntypes - 8);
            printf("\n");
        }
        if (cmd->old_price > 0)
            printf("  price: $%.4f/h -> $%.4f/h\n", cmd->old_price, cmd->new_price);
    }
    if (cmd->nnotes) {
        printf("\nPassed over:\n");
        for (size_t i = 0; i < cmd->nnotes; i++)
            printf("  %s: %s: %s\n", cmd->notes[i].nodeclaim, cmd->notes[i].reason,
                   cmd->notes[i].message);
    }
}

int nw_cmd_plan_disrupt(const nw_plan_t *p, const nw_sched_snap_t *snap, int64_t now, bool json,
                        bool spot_to_spot)
{
    size_t npools, nclaims, nnodes, npods, npdbs, ndss;
    const cJSON **pools = objects(p, "NodePool", &npools);
    const cJSON **claimjs = objects(p, "NodeClaim", &nclaims);
    const cJSON **nodejs = objects(p, "Node", &nnodes);
    const nw_node_claim_t **claims =
        claimjs ? (const nw_node_claim_t **)node_records(claimjs, nclaims, true, &nclaims) : NULL;
    const nw_node_t **nodes =
        nodejs ? (const nw_node_t **)node_records(nodejs, nnodes, false, &nnodes) : NULL;
    const cJSON **podjs = objects(p, "Pod", &npods);
    nw_jsonintern_t *intern = nw_jsonintern_new();
    const nw_pod_t **pods = podjs && intern ? pod_records(podjs, npods, intern, &npods) : NULL;
    const cJSON **pdbs = objects(p, "PodDisruptionBudget", &npdbs);
    const cJSON **dss = objects(p, "DaemonSet", &ndss);
    int ret = NW_EXIT_USAGE;
    nw_disrupt_state_t *st = NULL;
    nw_disrupt_cmd_t cmd;
    memset(&cmd, 0, sizeof cmd);
    if (!pools || !claims || !nodes || !pods || !pdbs || !dss) {
        fprintf(stderr, "nodewarden plan: out of memory\n");
        goto out;
    }
    nw_disrupt_input_t in = {
        .nodepools = pools,
        .nnodepools = npools,
        .nodeclaims = claims,
        .nnodeclaims = nclaims,
        .nodes = nodes,
        .nnodes = nnodes,
        .pods = pods,
        .npods = npods,
        .pdbs = pdbs,
        .npdbs = npdbs,
        .now = now,
        .price = snap_price,
        .price_ud = (void *)snap,
        .spot_to_spot = spot_to_spot,
    };
    /* GPU-aware disruption for the policy's classes; no memory of past passes here: a
     * node's last pod event stands for when a pod of its class last ran */
    nw_disrupt_accel_t accels[NW_GPU_MAX_CLASSES];
    const nw_gpu_policy_t *gpu = (const nw_gpu_policy_t *)nw_plan_gpu(p);
    for (size_t i = 0; gpu && i < gpu->nclasses; i++) {
        const nw_accel_class_t *k = &gpu->classes[i];
        accels[in.naccels++] = nw_accel_of_class(k);
        in.accels = accels;
        in.accel_label_key = gpu->label_key;
    }
    nw_disrupt_simctx_t sx = {
        .nodepools = pools,
        .nnodepools = npools,
        .nodes = nodes,
        .nnodes = nnodes,
        .nodeclaims = claims,
        .nnodeclaims = nclaims,
        .pods = pods,
        .npods = npods,
        .daemonsets = dss,
        .ndaemonsets = ndss,
        .now = now,
        .add_types = snap_types,
        .types_ud = (void *)snap,
    };
    nw_err_t err = {0};
    if (nw_candidates_state_build(&in, &st, &err) != NW_OK ||
        nw_decide(st, nw_disrupt_sim_schedule, &sx, &cmd, &err) != NW_OK) {
        fprintf(stderr, "nodewarden plan: %s\n", err.msg);
        goto out;
    }
    if (json) {
        cJSON *j = nw_decide_report_json(st, &cmd);
        char *t = j ? nw_json_print_pretty(j) : NULL;
        if (t)
            printf("%s\n", t);
        free(t);
        cJSON_Delete(j);
    } else {
        print_text(st, &cmd);
    }
    ret = NW_EXIT_OK;
out:
    nw_decide_cmd_cleanup(&cmd);
    nw_candidates_state_free(st);
    free(pools);
    node_records_free((const void **)claims, nclaims, true);
    node_records_free((const void **)nodes, nnodes, false);
    free(claimjs);
    free(nodejs);
    pod_records_free(pods, npods);
    nw_jsonintern_free(intern);
    free(podjs);
    free(pdbs);
    free(dss);
    return ret;
}
