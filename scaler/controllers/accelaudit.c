/*
 * scaler/controllers/accelaudit.c — the accelerator isolation audit (see accelaudit.h).
 */
#include "scaler/controllers/accelaudit.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/taints.h"
#include "common/log.h"
#include "common/prom.h"
#include "scaler/controllers/tickgate.h"

#define COMP "accelaudit"
#define NW_AUDIT_MEMORY 512                        /* pods remembered (reported, eviction times) */
#define NW_AUDIT_EVICT_MIN_NS (10 * NW_NS_PER_SEC) /* between two evictions of one pod */

typedef struct {
    char uid[64];
    int64_t next_evict_mono; /* no eviction before */
    int64_t seen_mono;       /* last tick that saw it violating (oldest is replaced) */
} audit_pod_t;

/* What one object's version says (the memo of tickgate.h). */
typedef struct {
    int cls; /* Nodes: nw_accelaudit_node_class */
    /* pods: the webhook's analysis (what the audit reads of it) */
    bool mirror, daemonset, exempt_namespace, skip;
    unsigned requested;
    int requested_cls;
    unsigned dra; /* the classes its DRA claims request devices of */
} facts_t;

/* The nodes of the last pass and the pods they ran (its snapshot's objects; the gate holds
 * them): a tick whose Nodes are the same and whose nodes run the same pod objects has
 * nothing new to look at (every node: a pod with DRA claims for accelerator devices on a
 * generic node is reported too). */
typedef struct {
    const nw_kube_obj_t *node;
    size_t first, n; /* its pods: pods[first .. first + n) */
} accel_node_t;

struct nw_accelaudit {
    nw_ctl_deps_t *deps;
    nw_accelaudit_opts_t o;
    nw_counters_t counters; /* audit_found{class}, audit_evicted{class} */
    audit_pod_t pods[NW_AUDIT_MEMORY];
    _Atomic unsigned current[NW_GPU_MAX_CLASSES];
    nw_tickgate_t gate; /* Nodes, and the pods of accelerator nodes (last) */
    accel_node_t *last;
    size_t nlast, caplast;
    const nw_kube_obj_t **last_pods;
    size_t nlast_pods, caplast_pods;
    bool last_dra; /* the last look walked generic nodes too (ResourceClaims existed) */
};

nw_accelaudit_t *nw_accelaudit_new(nw_ctl_deps_t *deps, const nw_accelaudit_opts_t *o)
{
    nw_accelaudit_t *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    if (nw_prom_counters_init(&a->counters) != NW_OK) {
        free(a);
        return NULL;
    }
    a->deps = deps;
    if (o)
        a->o = *o;
    nw_tickgate_init(&a->gate, NW_TICKGATE_KIND(NW_KUBE_NODES), sizeof(facts_t));
    return a;
}

void nw_accelaudit_free(nw_accelaudit_t *a)
{
    if (!a)
        return;
    nw_prom_counters_free(&a->counters);
    nw_tickgate_cleanup(&a->gate);
    free(a->last);
    free(a->last_pods);
    free(a);
}

void nw_accelaudit_reset(nw_accelaudit_t *a)
{
    if (!a)
        return;
    memset(a->pods, 0, sizeof a->pods);
    nw_tickgate_reset(&a->gate);
    a->nlast = a->nlast_pods = 0;
}

/* the remembered entry of uid; created (replacing the least recently seen) when absent;
 * *fresh says it was not known */
static audit_pod_t *remember(nw_accelaudit_t *a, const char *uid, int64_t mono, bool *fresh)
{
    audit_pod_t *old = &a->pods[0];
    for (size_t i = 0; i < NW_AUDIT_MEMORY; i++) {
        if (strcmp(a->pods[i].uid, uid) == 0) {
            *fresh = false;
            a->pods[i].seen_mono = mono;
            return &a->pods[i];
        }
        if (a->pods[i].seen_mono < old->seen_mono)
            old = &a->pods[i];
    }
    memset(old, 0, sizeof *old);
    snprintf(old->uid, sizeof old->uid, "%s", uid);
    old->seen_mono = mono;
    *fresh = true;
    return old;
}

static const char *label_of(const char *key, void *node)
{
    return nw_node_meta_label(&((const nw_node_t *)node)->m, key);
}

int nw_accelaudit_node_class(const nw_gpu_policy_t *p, const nw_node_t *node)
{
    const char *lv = nw_node_meta_label(&node->m, p->label_key);
    for (size_t i = 0; lv && i < p->nclasses; i++)
        if (strcmp(lv, p->classes[i].label_value) == 0)
            return (int)i;
    for (size_t t = 0; t < node->m.taints.n; t++) {
        /* the class's taint key, whatever its value (a pool may give it any) */
        const char *k = node->m.taints.v[t].key;
        for (size_t i = 0; i < p->nclasses; i++)
            if (strcmp(k, p->classes[i].taint_key) == 0)
                return (int)i;
    }
    return nw_gpu_type_class(p, label_of, (void *)node);
}

static bool finished_or_leaving(const nw_kube_obj_t *pod)
{
    return pod->terminating || (pod->phase && (strcmp(pod->phase, "Succeeded") == 0 ||
                                               strcmp(pod->phase, "Failed") == 0));
}

static bool mirror_pod(const nw_pod_t *pod)
{
    return nw_json_get(pod->annotations, "kubernetes.io/config.mirror") != NULL;
}

static void evict(nw_accelaudit_t *a, const nw_kube_obj_t *pod, const char *node, const char *cls,
                  audit_pod_t *m, int64_t mono)
{
    nw_ctl_deps_t *c = a->deps;
    nw_kube_evict_opts_t o = {-1, pod->uid[0] ? pod->uid : NULL};
    nw_kube_evict_t res = NW_KUBE_EVICT_BLOCKED;
    int ra = 0;
    long code = 0;
    nw_err_t err = {0};
    nw_rc_t rc = nw_kube_write_evict_ex(c->kube, pod->ns, pod->name, &o, &res, &ra, &code, &err);
    int64_t wait = (int64_t)(ra > 10 ? ra : 10) * NW_NS_PER_SEC;
    m->next_evict_mono = mono + (wait > NW_AUDIT_EVICT_MIN_NS ? wait : NW_AUDIT_EVICT_MIN_NS);
    if (rc == NW_OK && res == NW_KUBE_EVICT_STARTED) {
        char msg[512];
        snprintf(msg, sizeof msg,
                 "Evicted: the pod requests no %s accelerator resource but ran on %s node %s "
                 "(scaler.acceleratorAudit.evict)",
                 cls, cls, node);
        nw_ctl_pod_event(c, pod->pod, "Normal", "Evicted", msg);
        nw_log_info(COMP, "evicted a pod from an accelerator node", NW_LS("pod", pod->key),
                    NW_LS("node", node), NW_LS("class", cls));
        nw_prom_counters_inc(&a->counters, "audit_evicted", cls, NULL);
        return;
    }
    nw_log_info(COMP, "eviction not done; retrying later", NW_LS("pod", pod->key),
                NW_LS("node", node), NW_LI("code", code), NW_LS("reason", err.msg));
}

/* Do the accelerator nodes of the last pass run the same pods in s? */
static bool same_pods(const nw_accelaudit_t *a, const nw_kube_snap_t *s)
{
    for (size_t i = 0; i < a->nlast; i++) {
        const nw_kube_obj_t *const *pods = NULL;
        size_t n = nw_kube_cache_snap_pods_on_node(s, a->last[i].node->name, &pods);
        if (n != a->last[i].n ||
            (n && memcmp(pods, a->last_pods + a->last[i].first, n * sizeof *pods) != 0))
            return false;
    }
    return true;
}

/* Remember node and its pods for same_pods; false on out of memory. */
static bool keep_node(nw_accelaudit_t *a, const nw_kube_obj_t *node,
                      const nw_kube_obj_t *const *pods, size_t n)
{
    if (a->nlast == a->caplast) {
        size_t cap = a->caplast ? 2 * a->caplast : 16;
        accel_node_t *v = realloc(a->last, cap * sizeof *v);
        if (!v)
            return false;
        a->last = v;
        a->caplast = cap;
    }
    if (a->nlast_pods + n > a->caplast_pods) {
        size_t cap = a->caplast_pods ? a->caplast_pods : 64;
        while (cap < a->nlast_pods + n)
            cap *= 2;
        const nw_kube_obj_t **v = realloc(a->last_pods, cap * sizeof *v);
        if (!v)
            return false;
        a->last_pods = v;
        a->caplast_pods = cap;
    }
    a->last[a->nlast++] = (accel_node_t){node, a->nlast_pods, n};
    if (n)
        memcpy(a->last_pods + a->nlast_pods, pods, n * sizeof *pods);
    a->nlast_pods += n;
    return true;
}

/* The memo of o, or *tmp (zeroed) when there is none; *fresh: to be filled. */
static facts_t *facts(nw_accelaudit_t *a, const void *o, facts_t *tmp, bool *fresh)
{
    facts_t *f = nw_tickgate_memo(&a->gate, o, fresh);
    if (f)
        return f;
    memset(tmp, 0, sizeof *tmp);
    *fresh = true;
    return tmp;
}

/* The webhook's analysis of a pod, once per version of it; its DRA claims are read from
 * the snapshot s. */
static facts_t pod_facts(nw_accelaudit_t *a, const nw_kube_snap_t *s, const nw_kube_obj_t *pod)
{
    facts_t tmp;
    bool fresh;
    facts_t *f = facts(a, pod, &tmp, &fresh);
    if (fresh) {
        f->mirror = mirror_pod(pod->pod);
        if (!f->mirror) {
            /* the webhook's analysis reads a Pod object: the record's JSON form (only pods
             * on accelerator nodes, and pods with DRA claims, get here) */
            nw_gpu_pod_info_t in;
            nw_gpu_dra_src_t dra = {nw_kube_cache_snap_lookup, (void *)s, true};
            cJSON *pj = nw_pod_to_json(pod->pod);
            nw_gpu_pod_analyze(a->o.policy, pj, pod->ns, &dra, &in);
            cJSON_Delete(pj);
            f->daemonset = in.daemonset;
            f->exempt_namespace = in.exempt_namespace;
            f->skip = in.skip;
            f->requested = in.requested;
            f->requested_cls = in.cls;
            f->dra = in.dra.classes;
        }
    }
    return *f;
}

static bool has_claims(const nw_kube_obj_t *pod)
{
    return cJSON_GetArraySize(nw_json_get(pod->pod->spec, "resourceClaims")) > 0;
}

void nw_accelaudit_tick(nw_accelaudit_t *a, const nw_kube_snap_t *s)
{
    if (!a)
        return;
    const nw_gpu_policy_t *p = a->o.policy;
    unsigned cur[NW_GPU_MAX_CLASSES] = {0};
    nw_ctl_deps_t *c = a->deps;
    int64_t mono = nw_clock_mono(c->clock);
    /* generic nodes matter only for pods whose DRA claims ask for a class's devices: with
     * no ResourceClaim in the cluster (every pod's claims are ResourceClaims, a template's
     * too) there is none, and the look stays on the accelerator nodes (at 5,000 nodes and
     * 100,000 pods, walking them all on every pod change took 37 ms a pass) */
    bool dra = nw_kube_cache_snap_count(s, NW_KUBE_RESOURCECLAIMS) > 0;
    /* the same Nodes, the same pods on the nodes looked at, no eviction due: nothing new */
    if (dra == a->last_dra && nw_tickgate_unchanged(&a->gate, s, mono, nw_clock_now(c->clock)) &&
        (nw_tickgate_same_generation(&a->gate, s) || same_pods(a, s))) {
        nw_tickgate_skip(&a->gate, s);
        return;
    }
    bool complete = true;
    int64_t due = NW_TICKGATE_NEVER;
    a->nlast = a->nlast_pods = 0;
    a->last_dra = dra;
    for (size_t i = 0; p && p->enabled && i < nw_kube_cache_snap_count(s, NW_KUBE_NODES); i++) {
        const nw_kube_obj_t *node = nw_kube_cache_snap_at(s, NW_KUBE_NODES, i);
        facts_t tmp;
        bool fresh;
        facts_t *nf = facts(a, node, &tmp, &fresh);
        if (fresh)
            nf->cls = nw_accelaudit_node_class(p, node->node);
        int node_k = nf->cls;
        if (node_k < 0 && !dra)
            continue;
        const nw_kube_obj_t *const *pods = NULL;
        size_t n = nw_kube_cache_snap_pods_on_node(s, node->name, &pods);
        if (!keep_node(a, node, pods, n))
            complete = false; /* out of memory: no skipping */
        for (size_t j = 0; j < n; j++) {
            const nw_kube_obj_t *pod = pods[j];
            /* on a generic node only the pods whose DRA claims ask for a class's devices */
            if (finished_or_leaving(pod) || (node_k < 0 && !has_claims(pod)))
                continue;
            facts_t in = pod_facts(a, s, pod);
            if (in.mirror || in.daemonset || in.exempt_namespace)
                continue;
            int k = node_k;
            if (k >= 0 && (in.requested & (1u << k)))
                continue;
            if (k < 0 && !in.dra)
                continue;
            if (k < 0)
                for (k = 0; !(in.dra & (1u << k)); k++)
                    ;
            const char *cls = p->classes[k].name;
            cur[k]++;
            if (!nw_ctl_may_write(c)) {
                complete = false;
                continue;
            }
            bool fresh_pod = false;
            audit_pod_t *m = remember(a, pod->uid[0] ? pod->uid : pod->key, mono, &fresh_pod);
            if (fresh_pod) {
                complete = false; /* an Event */
                char msg[512];
                if (node_k >= 0)
                    snprintf(msg, sizeof msg,
                             "the pod requests no %s accelerator resource but runs on %s node %s; "
                             "it takes capacity from accelerator workloads (isolation: "
                             "docs/admission.md)",
                             cls, cls, node->name);
                else
                    snprintf(msg, sizeof msg,
                             "the pod's DRA ResourceClaims request %s accelerator devices but it "
                             "runs on node %s, which is no node of the %s class (isolation: "
                             "docs/admission.md)",
                             cls, node->name, cls);
                nw_ctl_pod_event(c, pod->pod, "Warning", "AcceleratorIsolation", msg);
                nw_log_warn(
                    COMP,
                    node_k >= 0 ? "a pod without an accelerator request on an accelerator node"
                                : "a pod with DRA claims for accelerator devices on a node of no "
                                  "accelerator class",
                    NW_LS("pod", pod->key), NW_LS("node", node->name), NW_LS("class", cls),
                    NW_LS("requested",
                          in.requested_cls >= 0 ? p->classes[in.requested_cls].name : "none"));
                nw_prom_counters_inc(&a->counters, "audit_found", cls, NULL);
            }
            if (a->o.evict && !in.skip) {
                if (mono >= m->next_evict_mono) {
                    complete = false; /* an eviction */
                    evict(a, pod, node->name, cls, m, mono);
                }
                due = nw_tickgate_min(due, m->next_evict_mono);
            }
        }
    }
    for (size_t k = 0; k < NW_GPU_MAX_CLASSES; k++)
        atomic_store(&a->current[k], cur[k]);
    nw_tickgate_ran(&a->gate, s, complete, due, NW_TICKGATE_NEVER);
}

unsigned nw_accelaudit_current(const nw_accelaudit_t *a, size_t cls)
{
    return a && cls < NW_GPU_MAX_CLASSES ? atomic_load(&((nw_accelaudit_t *)a)->current[cls]) : 0;
}

nw_rc_t nw_accelaudit_metrics(nw_accelaudit_t *a, nw_buf_t *out)
{
    if (!a || !a->o.policy || !a->o.policy->enabled)
        return NW_OK;
    const nw_gpu_policy_t *p = a->o.policy;
    nw_rc_t rc = nw_buf_adds(
        out, "# HELP nodewarden_accelerator_isolation_violations Pods without a request for the "
             "node's accelerator class running on an accelerator node, at the last audit.\n"
             "# TYPE nodewarden_accelerator_isolation_violations gauge\n");
    for (size_t k = 0; rc == NW_OK && k < p->nclasses; k++) {
        rc = nw_buf_adds(out, "nodewarden_accelerator_isolation_violations{class=\"");
        if (rc == NW_OK)
            rc = nw_prom_label_value(out, p->classes[k].name);
        if (rc == NW_OK)
            rc = nw_buf_addf(out, "\"} %u\n", nw_accelaudit_current(a, k));
    }
    if (rc == NW_OK)
        rc = nw_prom_counters_write(&a->counters, out, "audit_found",
                                    "nodewarden_accelerator_isolation_violations_total",
                                    "Pods found running on an accelerator node of a class they "
                                    "request nothing of (each pod counted once).",
                                    "class", NULL);
    if (rc == NW_OK)
        rc = nw_prom_counters_write(
            &a->counters, out, "audit_evicted", "nodewarden_accelerator_isolation_evictions_total",
            "Such pods evicted (scaler.acceleratorAudit.evict).", "class", NULL);
    return rc;
}
