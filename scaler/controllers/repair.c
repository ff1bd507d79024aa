/* scaler/controllers/repair.c — node repair and instance health (see repair.h). */
#include "scaler/controllers/repair.h"

#include <ctype.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "scaler/cloud/metered.h"
#include "scaler/controllers/instindex.h"
#include "scaler/controllers/interruption.h"
#include "scaler/controllers/tickgate.h"
#include "scaler/metrics/kmetrics.h"

#define COMP "repair"
#define MIN_NS (60 * NW_NS_PER_SEC)
#define BLOCKED_RETRY_NS (5 * MIN_NS) /* upstream requeues a blocked repair after 5m */
#define MAX_MEMO 4096

const nw_repair_policy_t nw_repair_policies[] = {
    {"Ready", "False", 30 * MIN_NS},
    {"Ready", "Unknown", 30 * MIN_NS},
    {"AcceleratedHardwareReady", "False", 10 * MIN_NS},
    {"StorageReady", "False", 30 * MIN_NS},
    {"NetworkingReady", "False", 30 * MIN_NS},
    {"KernelReady", "False", 30 * MIN_NS},
    {"ContainerRuntimeReady", "False", 30 * MIN_NS},
};
const int nw_repair_npolicies = sizeof nw_repair_policies / sizeof nw_repair_policies[0];

/* Karpenter's message kinds (pkg/controllers/interruption/messages/types.go) and the
 * instance status categories (pkg/providers/instancestatus/instancestatus.go). */
static const char *const kind_names[NW_CLOUD_HEALTH_KINDS] = {"instance_status", "system_status",
                                                              "event_status"};
static const char *const categories[NW_CLOUD_HEALTH_KINDS] = {"InstanceStatus", "SystemStatus",
                                                              "EventStatus"};

typedef struct {
    char uid[64];
    int64_t not_before_ns; /* a blocked repair: look again after */
} memo_t;

typedef struct {
    char instance_id[64];
    int kind;
} seen_t;

/* What a Node's version says (the memo of tickgate.h). */
typedef struct {
    int policy;       /* nw_repair_unhealthy's answer (index), -1: healthy */
    int64_t due;      /* ... and when it is due */
    const char *pool; /* its karpenter.sh/nodepool label (in its record), NULL: none */
} facts_t;

/* Nodes by NodePool label, and how many of them are unhealthy (counted once per pass). */
typedef struct {
    const char *pool;
    int total, unhealthy;
} group_t;

struct nw_repair {
    nw_ctl_deps_t *deps;
    nw_repair_opts_t o;
    memo_t *memo;
    size_t nmemo;
    /* the instance health thread and its latest answer (under mu) */
    pthread_t thread;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
    nw_cloud_healths_t latest;
    uint64_t latest_seq, acted_seq;
    int64_t latest_at_ns; /* wall clock of the answer */
    /* NodeClaims deleted a moment ago: a lagging snapshot may still show them alive */
    char recent[64][64];
    unsigned nrecent;
    /* instance and kind pairs counted once (the reconcile thread's) */
    seen_t *seen;
    size_t nseen;
    nw_tickgate_t gate; /* node repair: Nodes, NodeClaims */
    group_t *groups;    /* this pass's counts (all Nodes first), built when first needed */
    size_t ngroups, capgroups;
    bool counted;
};

/* ---- the pure parts ---- */

static const cJSON *condition(const cJSON *node, const char *type)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, nw_json_get(nw_json_get(node, "status"), "conditions"))
    {
        const char *t = nw_json_str(c, "type");
        if (t && strcmp(t, type) == 0)
            return c;
    }
    return NULL;
}

static bool has_status(const cJSON *cond, const char *status)
{
    const char *st = nw_json_str(cond, "status");
    return st && strcmp(st, status) == 0;
}

const nw_repair_policy_t *nw_repair_unhealthy(const cJSON *node, int64_t *due_ns)
{
    const nw_repair_policy_t *best = NULL;
    int64_t best_due = 0;
    for (int i = 0; i < nw_repair_npolicies; i++) {
        const nw_repair_policy_t *p = &nw_repair_policies[i];
        const cJSON *c = condition(node, p->type);
        if (!c || !has_status(c, p->status))
            continue;
        int64_t since = 0;
        const char *ltt = nw_json_str(c, "lastTransitionTime");
        if (!ltt || nw_clock_time_parse(ltt, &since) != NW_OK)
            since = 0;
        int64_t due = since + p->toleration_ns;
        if (!best || due < best_due) {
            best = p;
            best_due = due;
        }
    }
    if (due_ns)
        *due_ns = best_due;
    return best;
}

const nw_repair_policy_t *nw_repair_unhealthy_of(const nw_node_t *node, int64_t *due_ns)
{
    const nw_repair_policy_t *best = NULL;
    int64_t best_due = 0;
    for (int i = 0; i < nw_repair_npolicies; i++) {
        const nw_repair_policy_t *p = &nw_repair_policies[i];
        const nw_node_cond_t *c = nw_node_meta_condition(&node->m, p->type);
        if (!c || strcmp(c->status_name, p->status) != 0)
            continue;
        int64_t due = c->since + p->toleration_ns;
        if (!best || due < best_due) {
            best = p;
            best_due = due;
        }
    }
    if (due_ns)
        *due_ns = best_due;
    return best;
}

int nw_repair_allowed_unhealthy(int total)
{
    return (total * 20 + 99) / 100;
}

static const char *node_label(const nw_kube_obj_t *o, const char *k)
{
    return nw_node_meta_label(o->node ? &o->node->m : &o->nodeclaim->m, k);
}

bool nw_repair_group_healthy(const nw_kube_snap_t *s, const char *nodepool)
{
    int total = 0, unhealthy = 0;
    for (size_t i = 0; i < nw_kube_cache_snap_count(s, NW_KUBE_NODES); i++) {
        const nw_kube_obj_t *n = nw_kube_cache_snap_at(s, NW_KUBE_NODES, i);
        if (nodepool) {
            const char *np = node_label(n, NW_LABEL_NODEPOOL);
            if (!np || strcmp(np, nodepool) != 0)
                continue;
        }
        total++;
        if (nw_repair_unhealthy_of(n->node, NULL))
            unhealthy++;
    }
    return unhealthy <= nw_repair_allowed_unhealthy(total);
}

void nw_repair_snake(const char *in, char *out, size_t len)
{
    size_t o = 0;
    for (size_t i = 0; in[i] && o + 2 < len; i++) {
        unsigned char ch = (unsigned char)in[i];
        if (isupper(ch)) {
            if (i > 0)
                out[o++] = '_';
            out[o++] = (char)tolower(ch);
        } else
            out[o++] = (char)ch;
    }
    if (len)
        out[o < len ? o : len - 1] = '\0';
}

/* ---- memory of blocked repairs ---- */

static memo_t *memo_find(nw_repair_t *r, const char *uid)
{
    for (size_t i = 0; i < r->nmemo; i++)
        if (strcmp(r->memo[i].uid, uid) == 0)
            return &r->memo[i];
    return NULL;
}

static void memo_block(nw_repair_t *r, const char *uid, int64_t until)
{
    memo_t *m = memo_find(r, uid);
    if (!m && r->nmemo >= MAX_MEMO) { /* full: forget the blocks that ran out */
        size_t k = 0;
        for (size_t i = 0; i < r->nmemo; i++)
            if (r->memo[i].not_before_ns > until - BLOCKED_RETRY_NS)
                r->memo[k++] = r->memo[i];
        r->nmemo = k;
    }
    if (!m && r->nmemo < MAX_MEMO) {
        memo_t *nv = realloc(r->memo, (r->nmemo + 1) * sizeof *nv);
        if (!nv)
            return;
        r->memo = nv;
        m = &r->memo[r->nmemo++];
        snprintf(m->uid, sizeof m->uid, "%s", uid);
    }
    if (m)
        m->not_before_ns = until;
}

/* ---- forceful termination: the annotation, then the delete ---- */

typedef struct {
    char now[64];
    int64_t now_ns;
    int wrote;
} annotate_t;

static int mutate_termination_ts(cJSON *nc, void *ud)
{
    annotate_t *a = ud;
    a->wrote = 0;
    cJSON *md = cJSON_GetObjectItemCaseSensitive(nc, "metadata");
    if (!cJSON_IsObject(md) || nw_json_get(md, "deletionTimestamp"))
        return 1; /* being deleted already: its termination has its own deadline */
    cJSON *ann = cJSON_GetObjectItemCaseSensitive(md, "annotations");
    const char *cur = nw_json_str(ann, NW_ANN_TERMINATION_TS);
    int64_t at = 0;
    if (cur && nw_clock_time_parse(cur, &at) == NW_OK && at < a->now_ns)
        return 1; /* already due: kept */
    if (!cJSON_IsObject(ann)) {
        cJSON_DeleteItemFromObjectCaseSensitive(md, "annotations");
        if (!(ann = cJSON_AddObjectToObject(md, "annotations")))
            return -1;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(ann, NW_ANN_TERMINATION_TS);
    if (!cJSON_AddStringToObject(ann, NW_ANN_TERMINATION_TS, a->now))
        return -1;
    a->wrote = 1;
    return 0;
}

static bool recently_deleted(const nw_repair_t *r, const char *uid)
{
    for (unsigned i = 0; uid[0] && i < r->nrecent && i < 64; i++)
        if (strcmp(r->recent[i], uid) == 0)
            return true;
    return false;
}

/* Annotate (forceful) and delete the NodeClaim; NW_OK when this call deleted it. */
static NW_MUST_USE nw_rc_t terminate_claim(nw_repair_t *r, const nw_kube_obj_t *nc, int forceful)
{
    nw_ctl_deps_t *c = r->deps;
    nw_err_t err = {0};
    if (!nw_ctl_may_write(c) || recently_deleted(r, nc->uid))
        return NW_EINVAL;
    if (forceful) {
        annotate_t a = {"", 0, 0};
        a.now_ns = nw_clock_now(c->clock);
        nw_clock_time_format(a.now_ns, a.now, sizeof a.now);
        if (nw_kube_write_update_retry(c->kube, &nw_kube_client_res_nodeclaims, NULL, nc->name, 0,
                                       mutate_termination_ts, &a, 5, NULL, &err) != NW_OK) {
            if (err.rc != NW_ENOTFOUND)
                nw_log_warn(COMP, "cannot annotate the termination timestamp",
                            NW_LS("nodeclaim", nc->name), NW_LS("error", err.msg));
            return err.rc ? err.rc : NW_EINVAL;
        }
        if (a.wrote)
            nw_log_info(COMP, "annotated nodeclaim", NW_LS("nodeclaim", nc->name),
                        NW_LS(NW_ANN_TERMINATION_TS, a.now));
    }
    nw_kube_delete_opts_t d = {NULL, -1, nc->uid[0] ? nc->uid : NULL, NULL};
    nw_err_clear(&err);
    nw_rc_t rc = nw_kube_write_delete(c->kube, &nw_kube_client_res_nodeclaims, NULL, nc->name, &d,
                                      NULL, &err);
    if (rc != NW_OK) {
        if (rc != NW_ECONFLICT)
            nw_log_warn(COMP, "cannot delete the NodeClaim", NW_LS("nodeclaim", nc->name),
                        NW_LS("error", err.msg));
        return rc;
    }
    snprintf(r->recent[r->nrecent++ % 64], sizeof r->recent[0], "%s", nc->uid);
    return NW_OK;
}

/* ---- node repair ---- */

/* The memo of node (or *tmp when there is none). */
static const facts_t *node_facts(nw_repair_t *r, const nw_kube_obj_t *node, facts_t *tmp)
{
    bool fresh;
    facts_t *f = nw_tickgate_memo(&r->gate, node, &fresh);
    if (!f)
        f = tmp;
    if (fresh || f == tmp) {
        const nw_repair_policy_t *p = nw_repair_unhealthy_of(node->node, &f->due);
        f->policy = p ? (int)(p - nw_repair_policies) : -1;
        f->pool = node_label(node, NW_LABEL_NODEPOOL);
    }
    return f;
}

/* nw_repair_group_healthy, from counts made once per pass */
static bool group_healthy(nw_repair_t *r, const nw_kube_snap_t *s, const char *nodepool)
{
    if (!r->counted) {
        r->ngroups = 0;
        for (size_t i = 0; i < nw_kube_cache_snap_count(s, NW_KUBE_NODES); i++) {
            facts_t tmp;
            const facts_t *f = node_facts(r, nw_kube_cache_snap_at(s, NW_KUBE_NODES, i), &tmp);
            /* [0]: every Node; then one per NodePool label */
            for (int pass = 0; pass < 2; pass++) {
                const char *pool = pass ? f->pool : NULL;
                if (pass && !pool)
                    break;
                size_t g = pass ? 1 : 0;
                while (g < r->ngroups && pass && strcmp(r->groups[g].pool, pool) != 0)
                    g++;
                if (g == r->ngroups) {
                    if (r->ngroups == r->capgroups) {
                        size_t cap = r->capgroups ? 2 * r->capgroups : 8;
                        group_t *v = realloc(r->groups, cap * sizeof *v);
                        if (!v)
                            return nw_repair_group_healthy(s, nodepool);
                        r->groups = v;
                        r->capgroups = cap;
                    }
                    r->groups[r->ngroups++] = (group_t){pool, 0, 0};
                }
                r->groups[g].total++;
                r->groups[g].unhealthy += f->policy >= 0;
            }
        }
        r->counted = true;
    }
    if (!r->ngroups)
        return true; /* no Node at all: 0 unhealthy of 0 */
    const group_t *g = NULL;
    if (!nodepool)
        g = &r->groups[0];
    for (size_t i = 1; !g && i < r->ngroups; i++)
        if (strcmp(r->groups[i].pool, nodepool) == 0)
            g = &r->groups[i];
    if (!g)
        return true; /* no Node of the pool: 0 unhealthy of 0 */
    return g->unhealthy <= nw_repair_allowed_unhealthy(g->total);
}

/* One Node; false when it wrote (or tried to). *due: when it is next due or unblocked. */
static bool repair_node(nw_repair_t *r, const nw_kube_snap_t *s, const nw_kube_obj_t *node,
                        int64_t now, int64_t *due)
{
    nw_ctl_deps_t *c = r->deps;
    facts_t tmp;
    const facts_t *f = node_facts(r, node, &tmp);
    if (f->policy < 0)
        return true; /* no condition of a policy's status */
    const nw_repair_policy_t *p = &nw_repair_policies[f->policy];
    int64_t when = f->due;
    if (!node->provider_id || !*node->provider_id)
        return true;
    const nw_kube_obj_t *nc = nw_kube_cache_snap_nodeclaim_by_provider_id(s, node->provider_id);
    if (!nc || nc->terminating)
        return true; /* not ours, or already going */
    if (now < when) {
        *due = nw_tickgate_min(*due, when);
        return true;
    }
    memo_t *m = node->uid[0] ? memo_find(r, node->uid) : NULL;
    if (m && now < m->not_before_ns) {
        *due = nw_tickgate_min(*due, m->not_before_ns);
        return true;
    }
    if (recently_deleted(r, nc->uid))
        return true; /* a lagging snapshot: deleted a moment ago */
    const char *np = node_label(nc, NW_LABEL_NODEPOOL);
    if (!group_healthy(r, s, np)) {
        const char *msg = np ? "more than 20% nodes are unhealthy in the nodepool"
                             : "more then 20% nodes are unhealthy in the cluster";
        nw_ctl_obj_event(c, &nw_kube_client_res_nodes, node, "Warning", "NodeRepairBlocked", msg);
        nw_log_warn(COMP, "node repair blocked", NW_LS("node", node->name),
                    NW_LS("nodeclaim", nc->name), NW_LS("nodepool", np ? np : ""),
                    NW_LS("condition", p->type), NW_LS("reason", msg));
        if (node->uid[0])
            memo_block(r, node->uid, now + BLOCKED_RETRY_NS);
        return false;
    }
    if (terminate_claim(r, nc, 1) != NW_OK)
        return false;
    nw_log_info(COMP, "deleting unhealthy node", NW_LS("node", node->name),
                NW_LS("nodeclaim", nc->name), NW_LS("condition", p->type),
                NW_LS("status", p->status),
                NW_LI("tolerationSeconds", p->toleration_ns / NW_NS_PER_SEC));
    nw_kmetrics_disrupted_of(c->series, "unhealthy", &node->node->m);
    if (c->series) {
        char cond[96];
        nw_repair_snake(p->type, cond, sizeof cond);
        const char *v[] = {cond, node_label(node, NW_LABEL_NODEPOOL),
                           node_label(node, NW_LABEL_CAPACITY_TYPE), nc->nodeclaim->image_id};
        nw_series_add(c->series, &NW_KMETRICS_NODECLAIMS_UNHEALTHY_DISRUPTED, v, 1);
    }
    return false;
}

/* ---- instance health ---- */

static bool seen_has(const seen_t *v, size_t n, const char *id, int kind)
{
    for (size_t i = 0; i < n; i++)
        if (v[i].kind == kind && strcmp(v[i].instance_id, id) == 0)
            return true;
    return false;
}

/* NodeClaims and Nodes by instance id (instindex.h; without it, interruption.h's walks) */
typedef struct {
    nw_instindex_t claims, nodes;
    bool indexed;
    const nw_kube_snap_t *s;
} by_instance_t;

/* Act on one (instance, kind) with a NodeClaim; returns true when the NodeClaim exists. */
static bool act_health(nw_repair_t *r, const by_instance_t *ix, const char *id, int kind)
{
    nw_ctl_deps_t *c = r->deps;
    const nw_kube_obj_t *nc = ix->indexed ? nw_instindex_find(&ix->claims, id)
                                          : nw_interruption_nodeclaim_for_instance(ix->s, id);
    if (!nc)
        return false;
    if (nc->terminating || recently_deleted(r, nc->uid))
        return true;
    const nw_kube_obj_t *node = ix->indexed ? nw_instindex_find(&ix->nodes, id)
                                            : nw_interruption_node_for_instance(ix->s, id);
    static const char unhealthy[] = "An unhealthy warning was triggered for the instance";
    nw_ctl_obj_event(c, &nw_kube_client_res_nodeclaims, nc, "Warning", "InstanceUnhealthy",
                     unhealthy);
    if (node)
        nw_ctl_obj_event(c, &nw_kube_client_res_nodes, node, "Warning", "InstanceUnhealthy",
                         unhealthy);
    /* instance and system checks: the instance is broken, drain without waiting */
    if (terminate_claim(r, nc, kind != NW_CLOUD_HEALTH_EVENT) != NW_OK)
        return true;
    nw_log_info(COMP, "initiating delete from interruption message", NW_LS("nodeclaim", nc->name),
                NW_LS("instance", id), NW_LS("messageKind", kind_names[kind]));
    nw_ctl_obj_event(c, &nw_kube_client_res_nodeclaims, nc, "Warning", "TerminatingOnInterruption",
                     "Interruption triggered termination for the NodeClaim");
    if (node)
        nw_ctl_obj_event(c, &nw_kube_client_res_nodes, node, "Warning", "TerminatingOnInterruption",
                         "Interruption triggered termination for the Node");
    nw_kmetrics_disrupted_of(c->series, kind_names[kind], &nc->nodeclaim->m);
    return true;
}

static void act_on_health(nw_repair_t *r, const nw_kube_snap_t *s, const nw_cloud_healths_t *h,
                          int64_t at)
{
    by_instance_t ix;
    memset(&ix, 0, sizeof ix);
    bool indexed = h->n && nw_instindex_build(&ix.claims, s, NW_KUBE_NODECLAIMS) == NW_OK &&
                   nw_instindex_build(&ix.nodes, s, NW_KUBE_NODES) == NW_OK;
    ix.s = s;
    ix.indexed = indexed; /* out of memory: the lookups walk the snapshot */
    seen_t *now_seen = h->n ? calloc(h->n, sizeof *now_seen) : NULL;
    size_t nnow = 0;
    for (size_t i = 0; i < h->n; i++) {
        const nw_cloud_health_t *e = &h->v[i];
        if ((int)e->kind < 0 || e->kind >= NW_CLOUD_HEALTH_KINDS)
            continue;
        if (e->kind != NW_CLOUD_HEALTH_EVENT && e->impaired_since_ns > 0 &&
            at - e->impaired_since_ns < r->o.status_threshold_ns)
            continue; /* not failing for long enough yet */
        /* one action per instance and kind, however many of its checks failed */
        int dup = 0;
        for (size_t j = 0; j < i && !dup; j++)
            dup = h->v[j].kind == e->kind && strcmp(h->v[j].instance_id, e->instance_id) == 0 &&
                  (e->kind == NW_CLOUD_HEALTH_EVENT || h->v[j].impaired_since_ns <= 0 ||
                   at - h->v[j].impaired_since_ns >= r->o.status_threshold_ns);
        if (dup || !act_health(r, &ix, e->instance_id, (int)e->kind))
            continue;
        if (!seen_has(r->seen, r->nseen, e->instance_id, (int)e->kind)) {
            nw_log_info(COMP, "detected unhealthy instance owned by cluster",
                        NW_LS("instanceID", e->instance_id), NW_LS("category", categories[e->kind]),
                        NW_LS("check", e->name));
            if (r->deps->series) {
                const char *v[] = {categories[e->kind]};
                nw_series_add(r->deps->series, &NW_KMETRICS_INSTANCE_STATUS_UNHEALTHY, v, 1);
            }
        }
        if (now_seen) {
            snprintf(now_seen[nnow].instance_id, sizeof now_seen[nnow].instance_id, "%s",
                     e->instance_id);
            now_seen[nnow++].kind = (int)e->kind;
        }
    }
    /* forget what is no longer reported, so that it counts again when it comes back */
    free(r->seen);
    r->seen = now_seen;
    r->nseen = nnow;
    nw_instindex_free(&ix.claims);
    nw_instindex_free(&ix.nodes);
}

static void nap(nw_repair_t *r, int64_t ns)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t t = (int64_t)ts.tv_sec * NW_NS_PER_SEC + ts.tv_nsec + ns;
    ts.tv_sec = (time_t)(t / NW_NS_PER_SEC);
    ts.tv_nsec = (long)(t % NW_NS_PER_SEC);
    pthread_mutex_lock(&r->mu);
    if (!r->stop)
        pthread_cond_timedwait(&r->cv, &r->mu, &ts);
    pthread_mutex_unlock(&r->mu);
}

static bool stopping(nw_repair_t *r)
{
    pthread_mutex_lock(&r->mu);
    int s = r->stop;
    pthread_mutex_unlock(&r->mu);
    return s || atomic_load(&r->deps->stopping);
}

static void *health_main(void *arg)
{
    nw_repair_t *r = arg;
    nw_ctl_deps_t *c = r->deps;
    int64_t next_denied_log = 0;
    nw_metered_controller("interruption.instancestatus");
    while (!stopping(r)) {
        if (!atomic_load(&c->leading) || !nw_kube_cache_has_synced(c->cache)) {
            nap(r, 500 * NW_NS_PER_MS);
            continue;
        }
        nw_cloud_healths_t h = {0};
        nw_cloud_error_t ce;
        memset(&ce, 0, sizeof ce);
        nw_err_t err = {0};
        nw_rc_t rc = c->cloud->ops->instance_health(c->cloud, &h, &ce, &err);
        int64_t now = nw_clock_now(c->clock);
        if (rc == NW_OK) {
            pthread_mutex_lock(&r->mu);
            nw_cloud_healths_free(&r->latest);
            r->latest = h;
            r->latest_seq++;
            r->latest_at_ns = now;
            pthread_mutex_unlock(&r->mu);
            nw_kube_cache_wake(c->cache);
        } else {
            nw_cloud_healths_free(&h);
            if (ce.kind == NW_CLOUD_ERR_UNAUTHORIZED) {
                if (now >= next_denied_log) {
                    nw_log_error(COMP,
                                 "ec2:DescribeInstanceStatus permission is not allowed, update "
                                 "the IAM policy to enable instance status health checks",
                                 NW_LS("code", ce.code), NW_LS("error", err.msg));
                    next_denied_log = now + 5 * MIN_NS;
                }
            } else if (!stopping(r))
                nw_log_every(60, NW_LOG_WARN, COMP, "getting instance statuses",
                             NW_LS("class", nw_cloud_err_kind_name(ce.kind)),
                             NW_LS("code", ce.code), NW_LS("error", err.msg));
        }
        nap(r, r->o.instance_status_ns);
    }
    return NULL;
}

/* ---- the controller ---- */

nw_repair_t *nw_repair_new(nw_ctl_deps_t *deps, const nw_repair_opts_t *o)
{
    nw_repair_t *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->deps = deps;
    r->o = *o;
    if (r->o.instance_status_ns <= 0)
        r->o.instance_status_ns = MIN_NS;
    if (r->o.status_threshold_ns <= 0)
        r->o.status_threshold_ns = 2 * MIN_NS;
    if (pthread_mutex_init(&r->mu, NULL) != 0) {
        free(r);
        return NULL;
    }
    if (pthread_cond_init(&r->cv, NULL) != 0) {
        pthread_mutex_destroy(&r->mu);
        free(r);
        return NULL;
    }
    nw_tickgate_init(&r->gate,
                     NW_TICKGATE_KIND(NW_KUBE_NODES) | NW_TICKGATE_KIND(NW_KUBE_NODECLAIMS),
                     sizeof(facts_t));
    return r;
}

nw_rc_t nw_repair_start(nw_repair_t *r, nw_err_t *err)
{
    if (r->started || !r->deps->cloud || !r->deps->cloud->ops->instance_health)
        return NW_OK;
    if (pthread_create(&r->thread, NULL, health_main, r) != 0)
        return nw_err_set(err, NW_ENOMEM, COMP, "cannot start the instance status thread");
    pthread_setname_np(r->thread, "nw-repair");
    r->started = 1;
    return NW_OK;
}

void nw_repair_free(nw_repair_t *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    r->stop = 1;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    if (r->started)
        pthread_join(r->thread, NULL);
    nw_cloud_healths_free(&r->latest);
    free(r->memo);
    free(r->seen);
    free(r->groups);
    nw_tickgate_cleanup(&r->gate);
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

void nw_repair_reset(nw_repair_t *r)
{
    if (!r)
        return;
    r->nmemo = 0;
    nw_tickgate_reset(&r->gate);
    pthread_mutex_lock(&r->mu);
    r->acted_seq = r->latest_seq; /* an answer of the last term is not acted on */
    pthread_mutex_unlock(&r->mu);
}

void nw_repair_tick(nw_repair_t *r, const nw_kube_snap_t *s)
{
    if (!r || !nw_ctl_may_write(r->deps))
        return;
    int64_t now = nw_clock_now(r->deps->clock);
    /* node repair: nothing when no Node or NodeClaim changed and no repair or blocked
     * repair is due */
    if (r->o.node_repair && !nw_tickgate_quiet(&r->gate, s, nw_clock_mono(r->deps->clock), now)) {
        bool complete = true;
        int64_t due = NW_TICKGATE_NEVER;
        r->counted = false;
        for (size_t i = 0; i < nw_kube_cache_snap_count(s, NW_KUBE_NODES); i++) {
            if (!nw_ctl_may_write(r->deps)) {
                complete = false;
                break;
            }
            complete &= repair_node(r, s, nw_kube_cache_snap_at(s, NW_KUBE_NODES, i), now, &due);
        }
        nw_tickgate_ran(&r->gate, s, complete, NW_TICKGATE_NEVER, due);
    }
    nw_cloud_healths_t h = {0};
    int64_t at = 0;
    pthread_mutex_lock(&r->mu);
    if (r->latest_seq != r->acted_seq) {
        r->acted_seq = r->latest_seq;
        h = r->latest;
        at = r->latest_at_ns;
        memset(&r->latest, 0, sizeof r->latest);
    }
    pthread_mutex_unlock(&r->mu);
    if (at)
        act_on_health(r, s, &h, at);
    nw_cloud_healths_free(&h);
}
