/*
 * scaler/disrupt/rollout.c — staged replacement of accelerator nodes (issue 33): which
 * NodePools stage the drift and expiry replacements of their accelerator nodes, how many
 * steps are in progress, and whether a replacement that never ran its class's pods has
 * stopped the rollout; see disrupt.h (nw_rollout_build) and docs/scaler.md.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/duration.h"
#include "common/clock.h"
#include "common/json.h"
#include "scaler/disrupt/disrupt.h"

/* the staged class whose node label value is v, -1 none */
static int staged_class(const nw_disrupt_input_t *in, const char *v)
{
    for (size_t i = 0; v && i < in->naccels; i++)
        if (in->accels[i].rollout_max > 0 && in->accels[i].label_value &&
            strcmp(v, in->accels[i].label_value) == 0)
            return (int)i;
    return -1;
}

/* When the NodeClaim expires (epoch ns): creationTimestamp + spec.expireAfter (720h when
 * absent, Karpenter's default); 0 when never or unreadable. */
static int64_t expires_at(const nw_node_claim_t *nc)
{
    const char *ea = nc->expire_after_set ? nc->expire_after : NULL;
    int64_t created = nc->m.created, d = 0;
    bool never = false;
    nw_err_t e = {0};
    if (!created || nw_duration_parse_or_never(ea ? ea : "720h", true, &d, &never, &e) != NW_OK ||
        never || d < 0)
        return 0;
    return created + d;
}

bool nw_rollout_pod_ready(const nw_pod_t *p, const nw_disrupt_accel_t *a)
{
    if (p->phase != NW_POD_RUNNING || p->terminating || nw_pod_owned_by(p, "DaemonSet") ||
        nw_pod_owned_by(p, "Node") || nw_pod_annotation(p, "kubernetes.io/config.mirror"))
        return false;
    const nw_pod_cond_t *c = nw_pod_condition(p, "Ready");
    return c && c->status == NW_POD_COND_TRUE && nw_accel_pod_uses(p, a);
}

static bool pod_counts(const nw_pod_t *p, const nw_disrupt_accel_t *a)
{
    return p->phase != NW_POD_SUCCEEDED && p->phase != NW_POD_FAILED && !p->terminating &&
           !nw_pod_owned_by(p, "DaemonSet") && !nw_pod_owned_by(p, "Node") &&
           nw_accel_pod_uses(p, a);
}

/* a replacement names this NodeClaim as the one it replaces (its step is that one's) */
static bool replaced_by_step(const nw_disrupt_state_t *st, const char *name)
{
    for (size_t i = 0; i < st->nnodes; i++) {
        const nw_disrupt_node_t *r = &st->nodes[i];
        if (r->rollout_of && strcmp(r->rollout_of, name) == 0)
            return true;
    }
    return false;
}

static void step(nw_disrupt_pool_t *p, const char *name)
{
    if (!p->rollout_steps++)
        snprintf(p->rollout_wait, sizeof p->rollout_wait, "%s", name);
}

void nw_rollout_build(nw_disrupt_state_t *st)
{
    const nw_disrupt_input_t *in = &st->in;
    for (size_t k = 0; k < st->npools; k++) {
        nw_disrupt_pool_t *p = &st->pools[k];
        p->rollout_class = -1;
        if (!in->accel_label_key)
            continue;
        const cJSON *tl = nw_json_get(
            nw_json_get(nw_json_get(nw_json_get(p->obj, "spec"), "template"), "metadata"),
            "labels");
        p->rollout_class = staged_class(in, nw_json_str(tl, in->accel_label_key));
    }
    for (size_t i = 0; i < st->nnodes; i++) {
        nw_disrupt_node_t *n = &st->nodes[i];
        n->rollout_class = -1;
        if (n->pool < 0 || st->pools[n->pool].rollout_class < 0)
            continue;
        nw_disrupt_pool_t *p = &st->pools[n->pool];
        const nw_disrupt_accel_t *a = &in->accels[p->rollout_class];
        n->rollout_class = p->rollout_class;
        for (size_t k = 0; k < n->npods; k++)
            n->rollout_pods += pod_counts(n->pods[k], a);
        n->expired_at = expires_at(n->nodeclaim);
        n->expired = n->expired_at && in->now >= n->expired_at;
        const char *of = nw_node_meta_annotation(&n->nodeclaim->m, NW_DIS_ROLLOUT_ANNOTATION);
        if (!of)
            continue;
        n->rollout_of = of;
        for (size_t k = 0; k < n->npods && !n->rollout_done; k++)
            n->rollout_done = nw_rollout_pod_ready(n->pods[k], a);
        if (n->rollout_done || n->deleting)
            continue; /* a replacement being deleted is no longer a step (nor a blocker) */
        int64_t created = n->nodeclaim->m.created;
        n->rollout_deadline = created ? created + a->rollout_timeout : 0;
        n->rollout_late = n->rollout_deadline && in->now >= n->rollout_deadline;
        step(p, n->name);
        if (n->rollout_late && !p->rollout_blocked) {
            char ts[40], d[NW_DURATION_STR_MAX];
            nw_clock_time_format(n->rollout_deadline, ts, sizeof ts);
            nw_duration_format(a->rollout_timeout, d, sizeof d);
            p->rollout_blocked = true;
            snprintf(p->rollout_why, sizeof p->rollout_why,
                     "replacement NodeClaim %s (for %s) has no Running and Ready pod of the %s "
                     "accelerator class %s after its creation (deadline %s); the staged "
                     "rollout of NodePool %s stops until it does or is deleted",
                     n->name, of, a->name, d, ts, p->name);
        }
    }
    /* drifted or expired nodes of a staged class on their way out with no replacement
     * running the step (a delete, or a replace whose replacements are not created yet) */
    for (size_t i = 0; i < st->nnodes; i++) {
        nw_disrupt_node_t *n = &st->nodes[i];
        if (n->rollout_class < 0 || n->rollout_of || !(n->drifted || n->expired) ||
            !(n->in_command || n->deleting) || replaced_by_step(st, n->name))
            continue;
        step(&st->pools[n->pool], n->name);
    }
}
