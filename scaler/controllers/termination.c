/* scaler/controllers/termination.c — the NodeClaim and Node termination finalizers;
 * see termination.h (what) and drain.h (the pure decisions). */
#include "scaler/controllers/termination.h"
#include "scaler/metrics/kmetrics.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/prom.h"
#include "scaler/controllers/tickgate.h"
#include "scaler/disrupt/drain.h"

#define COMP "termination"
#define CLOUD_EVERY_NS (5 * NW_NS_PER_SEC)   /* instance checks while it shuts down */
#define VOLUME_EVERY_NS (1 * NW_NS_PER_SEC)  /* VolumeAttachment checks */
#define EVICTED_QUIET_NS (2 * NW_NS_PER_SEC) /* no second eviction while the cache lags */
#define VA_PATH "/apis/storage.k8s.io/v1/volumeattachments"

/* ---- memory (derivable from the objects; lost on restart without harm) ---------- */

typedef struct {
    char uid[64];
    int failures;        /* consecutive failed evictions */
    int64_t next_mono;   /* no eviction before */
    int deleted;         /* force-deleted for the TGP deadline */
    int delete_failures; /* failed deletes at the deadline (logged, a 403 told once) */
    int seen;
} pod_mem_t;

typedef struct node_mem {
    char uid[64];
    int64_t first_attempt_ns; /* wall time of the first drain attempt, 0 = none yet */
    int64_t next_gone_mono;   /* next "not Ready: is the instance gone?" check */
    int64_t next_cloud_mono;  /* next termination check */
    int64_t next_volume_mono;
    int tgp_event, drained, volumes_done, seen;
    int finalized; /* its finalizer was removed: a stale snapshot must not count it again */
    int64_t last_log_mono;
    pod_mem_t *pods;
    size_t npods, cap;
    struct node_mem *next;
} node_mem_t;

typedef struct claim_mem {
    char uid[64];
    int64_t next_cloud_mono;
    int seen;
    struct claim_mem *next;
} claim_mem_t;

enum { EC_2XX, EC_404, EC_409, EC_429, EC_500, EC_403, EC_504, EC_OTHER, EC_N };
static const char *const EC_LABEL[EC_N] = {"200", "404", "409", "429",
                                           "500", "403", "504", "other"};

static const double HB_LE[] = {1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200};

struct nw_termination {
    nw_ctl_deps_t *deps;
    node_mem_t *nodes;
    claim_mem_t *claims;
    _Atomic uint64_t nodes_drained, nodes_terminated, claims_terminated, pods_evicted, pods_deleted,
        instances_terminated;
    _Atomic uint64_t evictions[EC_N];
    nw_hist_t drain_s, term_s;
    nw_tickgate_t gate; /* NodeClaims, Nodes: while none is being deleted, nothing to do */
};

nw_termination_t *nw_termination_new(nw_ctl_deps_t *deps)
{
    nw_termination_t *t = calloc(1, sizeof(nw_termination_t));
    if (t) {
        t->deps = deps;
        int n = (int)(sizeof HB_LE / sizeof *HB_LE);
        nw_prom_hist_init(&t->drain_s, HB_LE, n);
        nw_prom_hist_init(&t->term_s, HB_LE, n);
        nw_tickgate_init(&t->gate,
                         NW_TICKGATE_KIND(NW_KUBE_NODECLAIMS) | NW_TICKGATE_KIND(NW_KUBE_NODES), 0);
    }
    return t;
}

void nw_termination_reset(nw_termination_t *t)
{
    if (!t)
        return;
    while (t->nodes) {
        node_mem_t *n = t->nodes;
        t->nodes = n->next;
        free(n->pods);
        free(n);
    }
    while (t->claims) {
        claim_mem_t *m = t->claims;
        t->claims = m->next;
        free(m);
    }
    nw_tickgate_reset(&t->gate);
}

void nw_termination_free(nw_termination_t *t)
{
    nw_termination_reset(t);
    if (t)
        nw_tickgate_cleanup(&t->gate);
    free(t);
}

static node_mem_t *node_mem(nw_termination_t *t, const nw_kube_obj_t *n)
{
    for (node_mem_t *m = t->nodes; m; m = m->next)
        if (strcmp(m->uid, n->uid) == 0) {
            m->seen = 1;
            return m;
        }
    node_mem_t *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    snprintf(m->uid, sizeof m->uid, "%s", n->uid);
    m->seen = 1;
    m->next = t->nodes;
    t->nodes = m;
    return m;
}

static claim_mem_t *claim_mem(nw_termination_t *t, const nw_kube_obj_t *nc)
{
    for (claim_mem_t *m = t->claims; m; m = m->next)
        if (strcmp(m->uid, nc->uid) == 0) {
            m->seen = 1;
            return m;
        }
    claim_mem_t *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    snprintf(m->uid, sizeof m->uid, "%s", nc->uid);
    m->seen = 1;
    m->next = t->claims;
    t->claims = m;
    return m;
}

static pod_mem_t *pod_mem(node_mem_t *nm, const char *uid)
{
    for (size_t i = 0; i < nm->npods; i++)
        if (strcmp(nm->pods[i].uid, uid) == 0) {
            nm->pods[i].seen = 1;
            return &nm->pods[i];
        }
    if (nm->npods == nm->cap) {
        size_t cap = nm->cap ? nm->cap * 2 : 16;
        pod_mem_t *v = realloc(nm->pods, cap * sizeof *v);
        if (!v)
            return NULL;
        nm->pods = v;
        nm->cap = cap;
    }
    pod_mem_t *p = &nm->pods[nm->npods++];
    memset(p, 0, sizeof *p);
    snprintf(p->uid, sizeof p->uid, "%s", uid);
    p->seen = 1;
    return p;
}

/* Drop memory of objects the last pass did not see (gone or finished). */
static void sweep(nw_termination_t *t)
{
    for (node_mem_t **pp = &t->nodes; *pp;) {
        node_mem_t *m = *pp;
        if (!m->seen) {
            *pp = m->next;
            free(m->pods);
            free(m);
            continue;
        }
        m->seen = 0;
        size_t k = 0;
        for (size_t i = 0; i < m->npods; i++)
            if (m->pods[i].seen) {
                m->pods[i].seen = 0;
                m->pods[k++] = m->pods[i];
            }
        m->npods = k;
        pp = &m->next;
    }
    for (claim_mem_t **pp = &t->claims; *pp;) {
        claim_mem_t *m = *pp;
        if (!m->seen) {
            *pp = m->next;
            free(m);
            continue;
        }
        m->seen = 0;
        pp = &m->next;
    }
}

/* ---- small helpers -------------------------------------------------------------- */

/* The record (api/node.h) of a cached Node or NodeClaim: what both keep. */
static const nw_node_meta_t *meta_of(const nw_kube_obj_t *o)
{
    return o->node ? &o->node->m : &o->nodeclaim->m;
}

static bool has_finalizer(const nw_kube_obj_t *o)
{
    return nw_node_meta_has_finalizer(meta_of(o), NW_FINALIZER);
}

/* lastTransitionTime of a condition (epoch ns) when its status is `status`, else 0. */
static int64_t condition_since(const nw_kube_obj_t *o, const char *type, const char *status)
{
    const nw_node_meta_t *m = meta_of(o);
    for (size_t i = 0; i < m->nconds; i++) {
        const nw_node_cond_t *cd = &m->conds[i];
        if (strcmp(cd->type, type) == 0 && strcmp(cd->status_name, status) == 0 &&
            cd->since_text[0] && cd->since)
            return cd->since;
    }
    return 0;
}

/* nw_kmetrics_observe_since from a record's timestamp as written (nothing when it is absent
 * or does not parse) */
static void observe_since(nw_series_t *r, const nw_series_desc_t *d, const nw_node_meta_t *m,
                          const char *text, int64_t now)
{
    int64_t at = 0;
    if (text[0] && nw_clock_time_parse(text, &at) == NW_OK)
        nw_kmetrics_observe_from_of(r, d, m, at, now);
}

/* condition_is of a cached object's record (the first condition of the type decides) */
static bool cached_condition_is(const nw_kube_obj_t *o, const char *type, const char *status,
                                const char *reason)
{
    const nw_node_cond_t *cd = nw_node_meta_condition(meta_of(o), type);
    return cd && strcmp(cd->status_name, status) == 0 && cd->status_name[0] &&
           (!reason || (cd->reason[0] && strcmp(cd->reason, reason) == 0));
}

static bool condition_is(const cJSON *obj, const char *type, const char *status, const char *reason)
{
    const cJSON *cd;
    cJSON_ArrayForEach(cd, nw_json_get(nw_json_get(obj, "status"), "conditions"))
    {
        const char *t = nw_json_str(cd, "type");
        if (!t || strcmp(t, type) != 0)
            continue;
        const char *st = nw_json_str(cd, "status");
        const char *r = nw_json_str(cd, "reason");
        return st && strcmp(st, status) == 0 && (!reason || (r && strcmp(r, reason) == 0));
    }
    return false;
}

typedef struct {
    const char *type, *status, *reason, *message;
    int64_t now;
} cond_set_t;

static int mutate_cond(cJSON *obj, void *ud)
{
    const cond_set_t *cs = ud;
    if (nw_json_get(obj, "metadata") && condition_is(obj, cs->type, cs->status, cs->reason))
        return 1;
    if (nw_ctl_set_condition(obj, cs->type, cs->status, cs->reason, cs->message, cs->now) != NW_OK)
        return 1; /* out of memory: no write this time */
    return 0;
}

/* Set a NodeClaim status condition unless the cached object already has it. */
static void claim_condition(nw_termination_t *t, const nw_kube_obj_t *nc, const char *type,
                            const char *status, const char *reason, const char *message)
{
    nw_ctl_deps_t *c = t->deps;
    if (!nc || cached_condition_is(nc, type, status, reason) || !nw_ctl_may_write(c))
        return;
    cond_set_t cs = {type, status, reason, message, nw_clock_now(c->clock)};
    nw_err_t err = {0};
    if (nw_kube_write_update_retry(c->kube, &nw_kube_client_res_nodeclaims, NULL, nc->name, 1,
                                   mutate_cond, &cs, 5, NULL, &err) != NW_OK &&
        err.rc != NW_ENOTFOUND)
        nw_log_warn(COMP, "cannot set a NodeClaim condition", NW_LS("nodeclaim", nc->name),
                    NW_LS("condition", type), NW_LS("error", err.msg));
}

/* ---- NodeClaim finalizer (kubernetes-sigs/karpenter pkg/controllers/nodeclaim/lifecycle) -- */

typedef struct {
    const char *value;
    int wrote; /* this call added it (not: it was there already) */
} annotate_t;

static int mutate_annotate(cJSON *nc, void *ud)
{
    annotate_t *an = ud;
    const char *value = an->value;
    an->wrote = 0;
    cJSON *md = cJSON_GetObjectItemCaseSensitive(nc, "metadata");
    if (!cJSON_IsObject(md) || !nw_json_get(md, "deletionTimestamp"))
        return -1;
    cJSON *ann = cJSON_GetObjectItemCaseSensitive(md, "annotations");
    if (nw_json_get(ann, NW_ANN_TERMINATION_TS))
        return 1; /* set once, never moved */
    if (!cJSON_IsObject(ann)) {
        cJSON_DeleteItemFromObjectCaseSensitive(md, "annotations");
        ann = cJSON_AddObjectToObject(md, "annotations");
    }
    cJSON_AddStringToObject(ann, NW_ANN_TERMINATION_TS, value);
    an->wrote = 1;
    return 0;
}

/* Terminate an instance until EC2 says it is gone: true; false = not yet (or error). */
static bool ensure_terminated(nw_termination_t *t, const char *pid, const char *who,
                              int64_t *next_mono)
{
    nw_ctl_deps_t *c = t->deps;
    int64_t mono = nw_clock_mono(c->clock);
    if (mono < *next_mono)
        return false;
    *next_mono = mono + CLOUD_EVERY_NS;
    char state[32] = "";
    nw_err_t err = {0};
    nw_rc_t rc = c->cloud->ops->instance_state(c->cloud, pid, state, sizeof state, &err);
    if (rc == NW_ENOTFOUND)
        return true;
    if (rc != NW_OK) {
        nw_log_warn(COMP, "cannot read the instance state", NW_LS("object", who),
                    NW_LS("providerID", pid), NW_LS("error", err.msg));
        return false;
    }
    if (strcmp(state, "shutting-down") != 0) {
        if (!nw_ctl_may_write(c))
            return false;
        nw_err_clear(&err);
        if (c->cloud->ops->terminate(c->cloud, pid, &err) != NW_OK) {
            nw_log_warn(COMP, "cannot terminate the instance", NW_LS("object", who),
                        NW_LS("providerID", pid), NW_LS("error", err.msg));
            return false;
        }
        atomic_fetch_add(&t->instances_terminated, 1);
        nw_log_info(COMP, "terminating the instance", NW_LS("object", who),
                    NW_LS("providerID", pid), NW_LS("was", state));
        nw_ctl_fault(c, "instance-terminating", who); /* crash point (scaler/ctl/ctl.h) */
    }
    return false;
}

/* Step 1: the NodeClaim's termination deadline annotation, once. */
static void annotate_deadline(nw_termination_t *t, const nw_kube_obj_t *nc)
{
    nw_ctl_deps_t *c = t->deps;
    nw_err_t err = {0};
    if (!nw_node_meta_annotation(&nc->nodeclaim->m, NW_ANN_TERMINATION_TS)) {
        char value[64];
        nw_rc_t rc = nw_drain_tgp_value(nc->nodeclaim, value, sizeof value, &err);
        if (rc == NW_OK && nw_ctl_may_write(c)) {
            nw_err_clear(&err);
            annotate_t an = {value, 0};
            if (nw_kube_write_update_retry(c->kube, &nw_kube_client_res_nodeclaims, NULL, nc->name,
                                           0, mutate_annotate, &an, 5, NULL, &err) != NW_OK) {
                if (err.rc != NW_ENOTFOUND)
                    nw_log_warn(COMP, "cannot annotate the termination deadline",
                                NW_LS("nodeclaim", nc->name), NW_LS("error", err.msg));
            } else if (an.wrote) {
                char msg[128];
                snprintf(msg, sizeof msg, "All pods will be deleted by %s", value);
                nw_ctl_obj_event(c, &nw_kube_client_res_nodeclaims, nc, "Warning",
                                 "TerminationGracePeriodExpiring", msg);
                nw_log_info(COMP, "termination deadline set", NW_LS("nodeclaim", nc->name),
                            NW_LS("deadline", value));
            }
        } else if (rc != NW_OK && rc != NW_ENOTFOUND)
            nw_log_warn(COMP, "no termination deadline", NW_LS("nodeclaim", nc->name),
                        NW_LS("field", err.path), NW_LS("error", err.msg));
    }
}

/* Steps 2 and 3 of a launched NodeClaim: its Node goes first (the Node's finalizer drains
 * it), then its instance, until EC2 reports it gone; false: not yet. */
static bool node_and_instance_gone(nw_termination_t *t, const nw_kube_snap_t *s,
                                   const nw_kube_obj_t *nc, claim_mem_t *cm)
{
    nw_ctl_deps_t *c = t->deps;
    nw_err_t err = {0};
    const nw_kube_obj_t *node = nw_kube_cache_snap_node_by_provider_id(s, nc->provider_id);
    if (node) {
        if (!node->terminating && nw_ctl_may_write(c)) {
            if (nw_kube_write_delete(c->kube, &nw_kube_client_res_nodes, NULL, node->name, NULL,
                                     NULL, &err) == NW_OK)
                nw_log_info(COMP, "deleting the node of a deleted NodeClaim",
                            NW_LS("nodeclaim", nc->name), NW_LS("node", node->name));
            else
                nw_log_warn(COMP, "cannot delete the node", NW_LS("node", node->name),
                            NW_LS("error", err.msg));
        }
        return false; /* wait until it is gone */
    }
    /* 3. the instance, until EC2 reports it gone */
    if (!ensure_terminated(t, nc->provider_id, nc->name, &cm->next_cloud_mono)) {
        claim_condition(t, nc, "InstanceTerminating", "True", "InstanceTerminating",
                        "the instance is terminating");
        return false;
    }
    return true;
}

/* A NodeClaim never launched as far as the object says: an instance may still carry its tag
 * (a launch just before a crash); false while one is left. */
static bool unrecorded_instances_gone(nw_termination_t *t, const nw_kube_obj_t *nc)
{
    nw_ctl_deps_t *c = t->deps;
    nw_err_t err = {0};
    nw_cloud_instances_t list = {0};
    if (c->cloud->ops->list(c->cloud, &list, &err) != NW_OK) {
        nw_cloud_instances_free(&list);
        nw_log_warn(COMP, "cannot list instances", NW_LS("nodeclaim", nc->name),
                    NW_LS("error", err.msg));
        return false;
    }
    bool left = false;
    for (size_t i = 0; i < list.n; i++) {
        const char *owner = nw_cloud_instance_tag(&list.v[i], NW_TAG_NODECLAIM);
        if (owner && strcmp(owner, nc->name) == 0 && strcmp(list.v[i].state, "terminated") != 0) {
            nw_err_clear(&err);
            if (nw_ctl_may_write(c) &&
                c->cloud->ops->terminate(c->cloud, list.v[i].id, &err) == NW_OK) {
                atomic_fetch_add(&t->instances_terminated, 1);
                nw_log_info(COMP, "terminated an unrecorded instance of a deleted NodeClaim",
                            NW_LS("nodeclaim", nc->name), NW_LS("instance", list.v[i].id));
            } else
                left = true;
        }
    }
    nw_cloud_instances_free(&list);
    return !left;
}

/* Step 4: the finalizer goes; the termination metrics. */
static void remove_claim_finalizer(nw_termination_t *t, const nw_kube_obj_t *nc)
{
    nw_ctl_deps_t *c = t->deps;
    nw_err_t err = {0};
    if (!nw_ctl_may_write(c))
        return;
    if (nw_kube_write_finalizer_remove(c->kube, &nw_kube_client_res_nodeclaims, NULL, nc->name,
                                       NW_FINALIZER, &err) != NW_OK) {
        nw_log_warn(COMP, "cannot remove the NodeClaim finalizer", NW_LS("nodeclaim", nc->name),
                    NW_LS("error", err.msg));
        return;
    }
    atomic_fetch_add(&t->claims_terminated, 1);
    static const char *const terminated[] = {NW_LABEL_NODEPOOL, NW_LABEL_CAPACITY_TYPE,
                                             "topology.kubernetes.io/zone"};
    const nw_node_meta_t *m = &nc->nodeclaim->m;
    nw_kmetrics_count_labels_of(c->series, &NW_KMETRICS_NODECLAIMS_TERMINATED, m, terminated);
    int64_t now_fin = nw_clock_now(c->clock);
    observe_since(c->series, &NW_KMETRICS_NODECLAIMS_TERMINATION_DURATION, m, m->deleted_text,
                  now_fin);
    /* from the InstanceTerminating condition's transition, as Karpenter's lifecycle
     * controller measures it */
    for (size_t i = 0; i < m->nconds; i++) {
        if (strcmp(m->conds[i].type, "InstanceTerminating") == 0) {
            const char *ts = m->conds[i].since_text;
            int64_t at = 0;
            if (ts[0] && nw_clock_time_parse(ts, &at) == NW_OK)
                nw_kmetrics_observe_from_of(c->series,
                                            &NW_KMETRICS_NODECLAIMS_INSTANCE_TERMINATION_DURATION,
                                            m, at, now_fin);
        }
    }
    nw_log_info(COMP, "NodeClaim finalized", NW_LS("nodeclaim", nc->name),
                NW_LS("providerID", nc->provider_id));
}

/* false when there was work: a finalizer of ours on an object being deleted */
static bool finalize_claim(nw_termination_t *t, const nw_kube_snap_t *s, const nw_kube_obj_t *nc)
{
    if (!has_finalizer(nc))
        return true;
    claim_mem_t *cm = claim_mem(t, nc);
    if (!cm)
        return false;
    /* 1. the TGP deadline, once */
    annotate_deadline(t, nc);
    /* 2. its Node goes first; 3. the instance (or one launched but never recorded) */
    if (nc->provider_id[0] ? !node_and_instance_gone(t, s, nc, cm)
                           : !unrecorded_instances_gone(t, nc))
        return false;
    /* 4. done */
    remove_claim_finalizer(t, nc);
    return false;
}

/* ---- Node finalizer (kubernetes-sigs/karpenter pkg/controllers/node/termination) --------- */

static int mutate_disrupt(cJSON *node, void *ud)
{
    (void)ud;
    cJSON *md = cJSON_GetObjectItemCaseSensitive(node, "metadata");
    if (!cJSON_IsObject(md))
        return -1;
    int changed = nw_ctl_disrupted_taint(node, 1);
    if (changed < 0)
        return 1; /* out of memory: no write this time */
    cJSON *labels = cJSON_GetObjectItemCaseSensitive(md, "labels");
    if (!cJSON_IsObject(labels)) {
        cJSON_DeleteItemFromObjectCaseSensitive(md, "labels");
        labels = cJSON_AddObjectToObject(md, "labels");
    }
    const char *lv = nw_json_str(labels, NW_LABEL_EXCLUDE_LB);
    if (!lv || strcmp(lv, "karpenter") != 0) {
        cJSON_DeleteItemFromObjectCaseSensitive(labels, NW_LABEL_EXCLUDE_LB);
        cJSON_AddStringToObject(labels, NW_LABEL_EXCLUDE_LB, "karpenter");
        changed = 1;
    }
    return changed ? 0 : 1;
}

/* Would mutate_disrupt change the Node: not exactly one disrupted taint (NoSchedule, no
 * value), or not the exclude-from-load-balancers label "karpenter"? From its record. */
static bool needs_disrupt(const nw_node_t *node)
{
    bool have = false, other = false;
    for (size_t i = 0; i < node->m.taints.n; i++) {
        const nw_taint_t *tn = &node->m.taints.v[i];
        if (strcmp(tn->key, NW_TAINT_DISRUPTED) != 0)
            continue;
        if (!have && tn->effect == NW_TAINT_NO_SCHEDULE && !tn->value[0])
            have = true;
        else
            other = true;
    }
    const char *lv = nw_node_meta_label(&node->m, NW_LABEL_EXCLUDE_LB);
    return !have || other || !lv || strcmp(lv, "karpenter") != 0;
}

static int ec_index(long code)
{
    if (code >= 200 && code < 300)
        return EC_2XX;
    switch (code) {
    case 404:
        return EC_404;
    case 409:
        return EC_409;
    case 429:
        return EC_429;
    case 500:
        return EC_500;
    case 403:
        return EC_403;
    case 504:
        return EC_504;
    default:
        return EC_OTHER;
    }
}

static void evict_one(nw_termination_t *t, const nw_kube_obj_t *node, const nw_kube_obj_t *pod,
                      pod_mem_t *pm, int64_t mono)
{
    nw_ctl_deps_t *c = t->deps;
    if (mono < pm->next_mono || !nw_ctl_may_write(c))
        return;
    nw_kube_evict_opts_t o = {-1, pod->uid[0] ? pod->uid : NULL};
    nw_kube_evict_t res = NW_KUBE_EVICT_BLOCKED;
    int ra = 0;
    long code = 0;
    nw_err_t err = {0};
    nw_rc_t rc = nw_kube_write_evict_ex(c->kube, pod->ns, pod->name, &o, &res, &ra, &code, &err);
    atomic_fetch_add(&t->evictions[ec_index(code)], 1);
    if (rc == NW_OK && (res == NW_KUBE_EVICT_STARTED || res == NW_KUBE_EVICT_GONE ||
                        res == NW_KUBE_EVICT_CONFLICT)) {
        pm->failures = 0;
        pm->next_mono = mono + EVICTED_QUIET_NS;
        if (res == NW_KUBE_EVICT_STARTED) {
            atomic_fetch_add(&t->pods_evicted, 1);
            nw_ctl_pod_event(c, pod->pod, "Normal", "Evicted", "Evicted pod");
            nw_log_info(COMP, "evicted", NW_LS("node", node->name), NW_LS("pod", pod->key));
            nw_ctl_fault(c, "evicted", pod->key); /* crash point (scaler/ctl/ctl.h) */
        }
        return;
    }
    pm->failures++;
    pm->next_mono = mono + nw_drain_backoff(pm->failures);
    char msg[900];
    if (rc == NW_OK && (code == 429 || (code == 500 && res == NW_KUBE_EVICT_BLOCKED))) {
        if (code == 429)
            snprintf(msg, sizeof msg, "Failed to drain node, evicting pod %s violates a PDB",
                     pod->key);
        else
            snprintf(msg, sizeof msg, "Failed to drain node, evicting pod %s: %.600s", pod->key,
                     err.msg);
        nw_ctl_obj_event(c, &nw_kube_client_res_nodes, node, "Warning", "FailedDraining", msg);
    }
    if (pm->failures == 1 || pm->failures % 10 == 0)
        nw_log_info(COMP, "eviction not done; retrying with backoff", NW_LS("node", node->name),
                    NW_LS("pod", pod->key), NW_LI("code", code), NW_LI("failures", pm->failures),
                    NW_LI("backoffMs", nw_drain_backoff(pm->failures) / NW_NS_PER_MS),
                    NW_LS("reason", err.msg));
}

static void delete_one(nw_termination_t *t, const nw_kube_obj_t *node, const nw_kube_obj_t *pod,
                       const nw_drain_pod_t *dp, pod_mem_t *pm, int64_t deadline, int64_t now)
{
    nw_ctl_deps_t *c = t->deps;
    if (pm->deleted || !nw_ctl_may_write(c))
        return;
    int64_t grace = nw_drain_delete_grace(deadline, now);
    nw_kube_delete_opts_t o = {NULL, grace, pod->uid[0] ? pod->uid : NULL, NULL};
    nw_err_t err = {0};
    nw_rc_t rc =
        nw_kube_write_delete(c->kube, &nw_kube_client_res_pods, pod->ns, pod->name, &o, NULL, &err);
    if (rc != NW_OK && rc != NW_ECONFLICT) {
        if (pm->delete_failures++ % 30 == 0)
            nw_log_warn(COMP, "cannot delete a pod at the termination deadline",
                        NW_LS("node", node->name), NW_LS("pod", pod->key),
                        NW_LI("failures", pm->delete_failures), NW_LS("error", err.msg));
        if (rc == NW_EFORBIDDEN && pm->delete_failures == 1) {
            char msg[900];
            snprintf(msg, sizeof msg,
                     "Failed to drain node, deleting pod %s at the termination deadline: %.700s",
                     pod->key, err.msg);
            nw_ctl_obj_event(c, &nw_kube_client_res_nodes, node, "Warning", "FailedDraining", msg);
        }
        return;
    }
    pm->deleted = 1;
    if (rc != NW_OK)
        return; /* the name holds another pod now */
    atomic_fetch_add(&t->pods_deleted, 1);
    char ts[40], msg[400];
    nw_clock_time_format(deadline, ts, sizeof ts);
    snprintf(msg, sizeof msg,
             "Deleting the pod to accommodate the terminationTime %s of the node. The pod was "
             "granted %lld seconds of grace-period of its %lld terminationGracePeriodSeconds. "
             "This bypasses the PDB of the pod and the do-not-disrupt annotation.",
             ts, (long long)grace, (long long)dp->grace_s);
    nw_ctl_pod_event(c, pod->pod, "Normal", "Disrupted", msg);
    nw_log_info(COMP, "deleted a pod at the termination deadline", NW_LS("node", node->name),
                NW_LS("pod", pod->key), NW_LI("graceSeconds", grace));
}

/* Drain pass. Returns the number of pods still waited for (-1: could not look). */
static long drain(nw_termination_t *t, const nw_kube_snap_t *s, const nw_kube_obj_t *node,
                  node_mem_t *nm, int64_t deadline)
{
    nw_ctl_deps_t *c = t->deps;
    const nw_kube_obj_t *const *pods = NULL;
    size_t n = nw_kube_cache_snap_pods_on_node(s, node->name, &pods);
    int64_t now = nw_clock_now(c->clock), mono = nw_clock_mono(c->clock);
    nw_drain_pod_t *dp = n ? calloc(n, sizeof *dp) : NULL;
    nw_drain_action_t *act = n ? calloc(n, sizeof *act) : NULL;
    if (n && (!dp || !act)) {
        free(dp);
        free(act);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        nw_drain_classify(pods[i]->pod, now, &dp[i]);
    nw_drain_plan_t plan;
    nw_drain_plan(dp, n, deadline, now, act, &plan);
    for (size_t i = 0; i < n; i++) {
        if (act[i] == NW_DRAIN_SKIP)
            continue;
        pod_mem_t *pm = pod_mem(nm, pods[i]->uid);
        if (!pm)
            continue;
        if (act[i] == NW_DRAIN_DELETE)
            delete_one(t, node, pods[i], &dp[i], pm, deadline, now);
        else if (act[i] == NW_DRAIN_EVICT)
            evict_one(t, node, pods[i], pm, mono);
    }
    if (plan.waiting && mono - nm->last_log_mono >= 10 * NW_NS_PER_SEC) {
        nm->last_log_mono = mono;
        nw_log_info(COMP, "draining", NW_LS("node", node->name), NW_LI("waiting", plan.waiting),
                    NW_LI("wave", plan.wave), NW_LI("evicting", plan.evict),
                    NW_LI("doNotDisrupt", plan.blocked_dnd));
    }
    free(dp);
    free(act);
    return (long)plan.waiting;
}

/* VolumeAttachments that still hold the node: those on it whose PersistentVolume is not
 * used by a pod the drain does not wait for. -1 when they could not be read, -2 when
 * nodewarden may not read them (403, *why says which); 0 when the API does not serve
 * them. */
#define VOLUMES_FORBIDDEN (-2)
static long pending_volumes(nw_termination_t *t, const nw_kube_snap_t *s, const nw_kube_obj_t *node,
                            char *why, size_t why_len)
{
    nw_ctl_deps_t *c = t->deps;
    cJSON *list = NULL;
    nw_err_t err = {0};
    nw_rc_t rc =
        nw_kube_client_get_json(c->kube, VA_PATH, "list", "volumeattachments", &list, &err);
    if (rc == NW_ENOTFOUND)
        return 0;
    if (rc != NW_OK) {
        snprintf(why, why_len, "%s", err.msg);
        nw_log_warn(COMP, "cannot list VolumeAttachments", NW_LS("node", node->name),
                    NW_LS("error", err.msg));
        return rc == NW_EFORBIDDEN ? VOLUMES_FORBIDDEN : -1;
    }
    const cJSON *va;
    const char *pvs[256];
    size_t npv = 0;
    cJSON_ArrayForEach(va, nw_json_get(list, "items"))
    {
        const char *nn = nw_json_str(nw_json_get(va, "spec"), "nodeName");
        const char *pv =
            nw_json_str(nw_json_get(nw_json_get(va, "spec"), "source"), "persistentVolumeName");
        if (nn && pv && strcmp(nn, node->name) == 0 && npv < sizeof pvs / sizeof *pvs)
            pvs[npv++] = pv;
    }
    long pending = (long)npv;
    if (npv) {
        /* PVs of pods the drain does not wait for do not block */
        const nw_kube_obj_t *const *pods = NULL;
        size_t n = nw_kube_cache_snap_pods_on_node(s, node->name, &pods);
        int64_t now = nw_clock_now(c->clock);
        int skip[256] = {0};
        for (size_t i = 0; i < n; i++) {
            nw_drain_pod_t dp;
            nw_drain_classify(pods[i]->pod, now, &dp);
            if (nw_drain_waits_for(&dp))
                continue;
            const cJSON *v;
            cJSON_ArrayForEach(v, nw_json_get(pods[i]->pod->spec, "volumes"))
            {
                const char *claim =
                    nw_json_str(nw_json_get(v, "persistentVolumeClaim"), "claimName");
                if (!claim)
                    continue;
                char path[700];
                snprintf(path, sizeof path, "/api/v1/namespaces/%s/persistentvolumeclaims/%s",
                         pods[i]->ns, claim);
                cJSON *pvc = NULL;
                nw_err_clear(&err);
                rc = nw_kube_client_get_json(c->kube, path, "get", "persistentvolumeclaims", &pvc,
                                             &err);
                if (rc == NW_ENOTFOUND)
                    continue;
                if (rc != NW_OK) {
                    snprintf(why, why_len, "%s", err.msg);
                    nw_log_warn(COMP, "cannot read a PersistentVolumeClaim",
                                NW_LS("node", node->name), NW_LS("error", err.msg));
                    pending = rc == NW_EFORBIDDEN ? VOLUMES_FORBIDDEN : -1;
                    goto out;
                }
                const char *vn = nw_json_str(nw_json_get(pvc, "spec"), "volumeName");
                for (size_t k = 0; vn && k < npv; k++)
                    if (!skip[k] && strcmp(pvs[k], vn) == 0) {
                        skip[k] = 1;
                        pending--;
                    }
                cJSON_Delete(pvc);
            }
        }
    }
out:
    cJSON_Delete(list);
    return pending;
}

static void remove_node_finalizer(nw_termination_t *t, const nw_kube_obj_t *node, node_mem_t *nm,
                                  const char *why)
{
    nw_ctl_deps_t *c = t->deps;
    if (!nw_ctl_may_write(c))
        return;
    nw_err_t err = {0};
    if (nw_kube_write_finalizer_remove(c->kube, &nw_kube_client_res_nodes, NULL, node->name,
                                       NW_FINALIZER, &err) != NW_OK) {
        nw_log_warn(COMP, "cannot remove the node finalizer", NW_LS("node", node->name),
                    NW_LS("error", err.msg));
        return;
    }
    nm->finalized = 1;
    atomic_fetch_add(&t->nodes_terminated, 1);
    static const char *const node_terminated[] = {NW_LABEL_NODEPOOL, "topology.kubernetes.io/zone"};
    const nw_node_meta_t *m = &node->node->m;
    nw_kmetrics_count_labels_of(c->series, &NW_KMETRICS_NODES_TERMINATED, m, node_terminated);
    int64_t now_fin = nw_clock_now(c->clock);
    observe_since(c->series, &NW_KMETRICS_NODES_TERMINATION_DURATION, m, m->deleted_text, now_fin);
    observe_since(c->series, &NW_KMETRICS_NODES_LIFETIME_DURATION, m, m->created_text, now_fin);
    int64_t del = 0;
    const char *dts = node->node->m.deleted_text;
    if (dts[0] && nw_clock_time_parse(dts, &del) == NW_OK)
        nw_prom_hist_observe(&t->term_s, nw_clock_now(c->clock) - del);
    nw_log_info(COMP, "node terminated", NW_LS("node", node->name),
                NW_LS("providerID", node->provider_id), NW_LS("how", why));
}

/* Step 1: the Node's NodeClaim goes too. */
static void delete_claim_of(nw_termination_t *t, const nw_kube_obj_t *node, const nw_kube_obj_t *nc)
{
    nw_ctl_deps_t *c = t->deps;
    nw_err_t err = {0};
    if (nc && !nc->terminating && nw_ctl_may_write(c)) {
        if (nw_kube_write_delete(c->kube, &nw_kube_client_res_nodeclaims, NULL, nc->name, NULL,
                                 NULL, &err) == NW_OK)
            nw_log_info(COMP, "deleting the NodeClaim of a deleted node", NW_LS("node", node->name),
                        NW_LS("nodeclaim", nc->name));
        else
            nw_log_warn(COMP, "cannot delete the NodeClaim", NW_LS("nodeclaim", nc->name),
                        NW_LS("error", err.msg));
    }
}

/* Step 2: is the instance of a node that is not Ready gone (checked every CLOUD_EVERY_NS)? */
static bool instance_gone(nw_termination_t *t, const nw_kube_obj_t *node, node_mem_t *nm,
                          int64_t mono)
{
    nw_ctl_deps_t *c = t->deps;
    nw_err_t err = {0};
    if (node->provider_id[0] && node->node->ready != NW_NODE_COND_TRUE &&
        mono >= nm->next_gone_mono) {
        nm->next_gone_mono = mono + CLOUD_EVERY_NS;
        char state[32];
        if (c->cloud->ops->instance_state(c->cloud, node->provider_id, state, sizeof state, &err) ==
            NW_ENOTFOUND)
            return true;
    }
    return false;
}

/* Step 3: the NodeClaim's termination deadline (0: none), announced once. */
static int64_t tgp_deadline(nw_termination_t *t, const nw_kube_obj_t *node, const nw_kube_obj_t *nc,
                            node_mem_t *nm)
{
    nw_ctl_deps_t *c = t->deps;
    nw_err_t err = {0};
    int64_t deadline = 0;
    if (nc) {
        nw_rc_t rc = nw_drain_tgp_deadline(nc->nodeclaim, &deadline, &err);
        if (rc == NW_EPARSE && !nm->tgp_event)
            nw_log_warn(COMP, "ignoring a malformed termination deadline",
                        NW_LS("nodeclaim", nc->name), NW_LS("error", err.msg));
        if (rc == NW_OK && !nm->tgp_event) {
            char ts[40], msg[80];
            nw_clock_time_format(deadline, ts, sizeof ts);
            snprintf(msg, sizeof msg, "All pods will be deleted by %s", ts);
            nw_ctl_obj_event(c, &nw_kube_client_res_nodes, node, "Warning",
                             "TerminationGracePeriodExpiring", msg);
        }
        if (rc != NW_ENOTFOUND)
            nm->tgp_event = 1;
    }
    return deadline;
}

/* Step 4: no new pods, out of load balancers (the disrupted taint); false: not yet. */
static bool taint_node(nw_termination_t *t, const nw_kube_obj_t *node)
{
    nw_ctl_deps_t *c = t->deps;
    nw_err_t err = {0};
    if (needs_disrupt(node->node)) {
        if (!nw_ctl_may_write(c))
            return false;
        if (nw_kube_write_update_retry(c->kube, &nw_kube_client_res_nodes, NULL, node->name, 0,
                                       mutate_disrupt, NULL, 5, NULL, &err) != NW_OK) {
            nw_log_warn(COMP, "cannot taint the node", NW_LS("node", node->name),
                        NW_LS("error", err.msg));
            return false;
        }
        nw_log_info(COMP, "tainted the node", NW_LS("node", node->name),
                    NW_LS("taint", NW_TAINT_DISRUPTED ":NoSchedule"));
    }
    return true;
}

/* Step 5: drain (the NodeClaim's Drained condition follows); false: pods still wait. */
static bool drain_node(nw_termination_t *t, const nw_kube_snap_t *s, const nw_kube_obj_t *node,
                       const nw_kube_obj_t *nc, node_mem_t *nm, int64_t deadline, int64_t now)
{
    nw_ctl_deps_t *c = t->deps;
    if (!nm->first_attempt_ns) {
        /* after a restart: when the drain began, from the NodeClaim's Drained condition */
        nm->first_attempt_ns = nc ? condition_since(nc, "Drained", "Unknown") : 0;
        if (!nm->first_attempt_ns)
            nm->first_attempt_ns = now;
    }
    if (nc && cached_condition_is(nc, "Drained", "True", NULL))
        nm->drained = 1;
    if (!nm->drained) {
        long waiting = drain(t, s, node, nm, deadline);
        if (waiting != 0) {
            claim_condition(t, nc, "Drained", "Unknown", "Draining",
                            "pods are waiting to be evicted");
            return false;
        }
        if (now - nm->first_attempt_ns < NW_DRAIN_SETTLE_NS) {
            claim_condition(t, nc, "Drained", "Unknown", "Draining",
                            "pods are waiting to be evicted");
            return false; /* pods bound just before the taint landed show up in this window */
        }
        claim_condition(t, nc, "Drained", "True", "Drained", "");
        nm->drained = 1;
        atomic_fetch_add(&t->nodes_drained, 1);
        static const char *const drained_keys[] = {NW_LABEL_NODEPOOL};
        nw_kmetrics_count_labels_of(c->series, &NW_KMETRICS_NODES_DRAINED, &node->node->m,
                                    drained_keys);
        nw_prom_hist_observe(&t->drain_s, now - nm->first_attempt_ns);
        nw_log_info(COMP, "node drained", NW_LS("node", node->name),
                    NW_LI("ms", (now - nm->first_attempt_ns) / NW_NS_PER_MS));
    }
    return true;
}

/* Step 6: the VolumeAttachments detach (or cannot be read, or the deadline passed); false:
 * not yet. */
static bool detach_volumes(nw_termination_t *t, const nw_kube_snap_t *s, const nw_kube_obj_t *node,
                           const nw_kube_obj_t *nc, node_mem_t *nm, int64_t deadline, int64_t mono,
                           int64_t now)
{
    nw_ctl_deps_t *c = t->deps;
    if (!nm->volumes_done) {
        if (mono < nm->next_volume_mono)
            return false;
        nm->next_volume_mono = mono + VOLUME_EVERY_NS;
        char why[512] = "";
        long pv = pending_volumes(t, s, node, why, sizeof why);
        int elapsed = deadline && now >= deadline;
        if (pv == VOLUMES_FORBIDDEN) {
            /* a permission that is missing stays missing: waiting for it would keep the
             * instance and the finalizers forever, so say so once and go on */
            char msg[700];
            snprintf(msg, sizeof msg,
                     "Not waiting for VolumeAttachments to detach, they cannot be read: %.500s",
                     why);
            nw_ctl_obj_event(c, &nw_kube_client_res_nodes, node, "Warning",
                             "FailedVolumeDetachmentCheck", msg);
            claim_condition(t, nc, "VolumesDetached", "False", "VolumeAttachmentsForbidden",
                            "VolumeAttachments cannot be read (HTTP 403)");
        } else if (pv < 0 && !elapsed) {
            return false; /* retried in VOLUME_EVERY_NS; past the deadline nothing waits */
        } else if (pv > 0 && !elapsed) {
            char msg[128];
            snprintf(msg, sizeof msg, "Awaiting deletion of %ld VolumeAttachments bound to node",
                     pv);
            nw_ctl_obj_event(c, &nw_kube_client_res_nodes, node, "Warning",
                             "AwaitingVolumeDetachment", msg);
            claim_condition(t, nc, "VolumesDetached", "Unknown", "AwaitingVolumeDetachment",
                            "AwaitingVolumeDetachment");
            return false;
        } else if (pv != 0) {
            claim_condition(t, nc, "VolumesDetached", "False", "TerminationGracePeriodElapsed",
                            "TerminationGracePeriodElapsed");
        } else {
            claim_condition(t, nc, "VolumesDetached", "True", "VolumesDetached", "");
        }
        nm->volumes_done = 1;
    }
    return true;
}

/* false when there was work: our finalizer on a Node being deleted (still to be removed, or
 * removed and not yet seen gone) */
static bool finalize_node(nw_termination_t *t, const nw_kube_snap_t *s, const nw_kube_obj_t *node)
{
    nw_ctl_deps_t *c = t->deps;
    if (!has_finalizer(node))
        return true;
    node_mem_t *nm = node_mem(t, node);
    if (!nm || nm->finalized)
        return false; /* finalized on an earlier tick; this snapshot has not seen it yet */
    int64_t mono = nw_clock_mono(c->clock), now = nw_clock_now(c->clock);
    const nw_kube_obj_t *nc =
        node->provider_id[0] ? nw_kube_cache_snap_nodeclaim_by_provider_id(s, node->provider_id)
                             : NULL;
    /* 1. its NodeClaim goes too */
    delete_claim_of(t, node, nc);
    /* 2. a node that is not Ready and whose instance is gone needs no drain */
    if (instance_gone(t, node, nm, mono)) {
        remove_node_finalizer(t, node, nm, "not ready and the instance is gone");
        return false;
    }
    /* 3. the deadline */
    int64_t deadline = tgp_deadline(t, node, nc, nm);
    /* 4. no new pods; out of load balancers; 5. drain; 6. volumes */
    if (!taint_node(t, node) || !drain_node(t, s, node, nc, nm, deadline, now) ||
        !detach_volumes(t, s, node, nc, nm, deadline, mono, now))
        return false;
    /* 7. the instance */
    const char *pid = node->provider_id[0] ? node->provider_id : (nc ? nc->provider_id : "");
    if (pid[0]) {
        if (!ensure_terminated(t, pid, node->name, &nm->next_cloud_mono)) {
            claim_condition(t, nc, "InstanceTerminating", "True", "InstanceTerminating",
                            "the instance is terminating");
            return false;
        }
    }
    /* 8. the Node goes; the NodeClaim finalizer completes */
    remove_node_finalizer(t, node, nm, "drained and terminated");
    return false;
}

void nw_termination_tick(nw_termination_t *t, const nw_kube_snap_t *s)
{
    if (!t)
        return;
    nw_ctl_deps_t *c = t->deps;
    /* no NodeClaim or Node changed, and none with our finalizer was being deleted: every
     * step of a termination waits for a change or for a timer of its own, so only a
     * termination in progress runs on every tick */
    if (nw_tickgate_quiet(&t->gate, s, nw_clock_mono(c->clock), nw_clock_now(c->clock)))
        return;
    bool idle = true;
    for (size_t i = 0; i < nw_kube_cache_snap_count(s, NW_KUBE_NODECLAIMS); i++) {
        if (!nw_ctl_may_write(c)) {
            idle = false;
            break;
        }
        const nw_kube_obj_t *nc = nw_kube_cache_snap_at(s, NW_KUBE_NODECLAIMS, i);
        if (nc->terminating)
            idle &= finalize_claim(t, s, nc);
    }
    for (size_t i = 0; i < nw_kube_cache_snap_count(s, NW_KUBE_NODES); i++) {
        if (!nw_ctl_may_write(c)) {
            idle = false;
            break;
        }
        const nw_kube_obj_t *n = nw_kube_cache_snap_at(s, NW_KUBE_NODES, i);
        if (n->terminating)
            idle &= finalize_node(t, s, n);
    }
    sweep(t);
    nw_tickgate_ran(&t->gate, s, idle, NW_TICKGATE_NEVER, NW_TICKGATE_NEVER);
}

/* ---- metrics ------------------------------------------------------------------------ */

nw_rc_t nw_termination_metrics(nw_termination_t *t, nw_buf_t *out)
{
    if (!t)
        return NW_OK;
    const nw_ctl_counter_t v[] = {
        {"nodewarden_nodes_drained_total", "Nodes drained (Drained=True).", &t->nodes_drained},
        {"nodewarden_nodes_terminated_total", "Nodes whose termination finalizer was removed.",
         &t->nodes_terminated},
        {"nodewarden_nodeclaims_terminated_total",
         "NodeClaims whose termination finalizer was removed.", &t->claims_terminated},
        {"nodewarden_instances_terminated_total", "Instances nodewarden asked EC2 to terminate.",
         &t->instances_terminated},
        {"nodewarden_pods_evicted_total", "Pods evicted by drains (eviction started).",
         &t->pods_evicted},
        {"nodewarden_pods_deleted_at_deadline_total",
         "Pods deleted because the NodeClaim's terminationGracePeriod ran out.", &t->pods_deleted},
    };
    nw_rc_t rc = nw_ctl_counters_write(out, v, sizeof v / sizeof *v);
    if (rc == NW_OK)
        rc = nw_buf_addf(out, "# HELP nodewarden_eviction_requests_total Eviction API calls by "
                              "HTTP status.\n# TYPE nodewarden_eviction_requests_total counter\n");
    for (int i = 0; i < EC_N && rc == NW_OK; i++)
        rc = nw_buf_addf(out, "nodewarden_eviction_requests_total{code=\"%s\"} %llu\n", EC_LABEL[i],
                         (unsigned long long)atomic_load(&t->evictions[i]));
    if (rc == NW_OK)
        rc = nw_prom_hist_write(&t->drain_s, out, "nodewarden_node_drain_duration_seconds",
                                "From the first drain attempt to Drained=True.", NULL);
    if (rc == NW_OK)
        rc = nw_prom_hist_write(&t->term_s, out, "nodewarden_node_termination_duration_seconds",
                                "From the Node's deletionTimestamp to its finalizer's removal.",
                                NULL);
    return rc;
}
