/*
 * scaler/controllers/poolstatus.c — NodePool status (see poolstatus.h).
 */
#include "scaler/controllers/poolstatus.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/cron.h"
#include "api/nodepool.h"
#include "api/quantity.h"
#include "common/log.h"

#define MAX_RES 32
#define REWRITE_SAME_NS (30 * NW_NS_PER_SEC)

/* ---- registration health window ---- */

void nw_poolstatus_reghealth_reset(nw_reghealth_t *t)
{
    memset(t, 0, sizeof *t);
}

void nw_poolstatus_reghealth_update(nw_reghealth_t *t, int ok)
{
    t->ok[t->next] = ok ? 1 : 0;
    t->next = (t->next + 1) % NW_REGHEALTH_WINDOW;
    if (t->len < NW_REGHEALTH_WINDOW)
        t->len++;
}

nw_reghealth_status_t nw_poolstatus_reghealth_status(const nw_reghealth_t *t)
{
    if (t->len == 0)
        return NW_REGHEALTH_UNKNOWN;
    int bad = 0;
    for (int i = 0; i < t->len; i++) {
        int idx = (t->next - t->len + i + NW_REGHEALTH_WINDOW) % NW_REGHEALTH_WINDOW;
        bad += !t->ok[idx];
    }
    /* failures weighed against the whole window (Karpenter's ThresholdFalse 0.5) */
    return 2 * bad >= NW_REGHEALTH_WINDOW ? NW_REGHEALTH_UNHEALTHY : NW_REGHEALTH_HEALTHY;
}

nw_reghealth_status_t nw_poolstatus_reghealth_dry_run(const nw_reghealth_t *t, int ok)
{
    nw_reghealth_t copy = *t;
    nw_poolstatus_reghealth_update(&copy, ok);
    return nw_poolstatus_reghealth_status(&copy);
}

void nw_poolstatus_reghealth_set(nw_reghealth_t *t, nw_reghealth_status_t s)
{
    nw_poolstatus_reghealth_reset(t);
    if (s == NW_REGHEALTH_HEALTHY)
        nw_poolstatus_reghealth_update(t, 1);
    else if (s == NW_REGHEALTH_UNHEALTHY)
        for (int i = 0; i < (NW_REGHEALTH_WINDOW + 1) / 2; i++)
            nw_poolstatus_reghealth_update(t, 0);
}

/* ---- conditions (operatorpkg's status.ConditionSet semantics) ---- */

static cJSON *cond_find(cJSON *conds, const char *type)
{
    cJSON *cd;
    cJSON_ArrayForEach(cd, conds)
    {
        const char *t = nw_json_str(cd, "type");
        if (t && strcmp(t, type) == 0)
            return cd;
    }
    return NULL;
}

static const char *cond_status(cJSON *conds, const char *type)
{
    return nw_json_str(cond_find(conds, type), "status");
}

static void put_str(cJSON *o, const char *k, const char *v)
{
    cJSON_DeleteItemFromObjectCaseSensitive(o, k);
    cJSON_AddStringToObject(o, k, v ? v : "");
}

/* Set a condition: lastTransitionTime kept while the status stays, observedGeneration
 * = the pool's generation. */
static void cond_set(cJSON *conds, const char *type, const char *status, const char *reason,
                     const char *message, double gen, int64_t now)
{
    cJSON *cd = cond_find(conds, type);
    if (!cd) {
        cd = cJSON_CreateObject();
        cJSON_AddItemToArray(conds, cd);
        cJSON_AddStringToObject(cd, "type", type);
    }
    const char *old = nw_json_str(cd, "status");
    if (!old || strcmp(old, status) != 0 ||
        !cJSON_IsString(nw_json_get(cd, "lastTransitionTime"))) {
        char ts[40];
        nw_clock_time_format(now, ts, sizeof ts);
        put_str(cd, "lastTransitionTime", ts);
    }
    put_str(cd, "status", status);
    put_str(cd, "reason", reason);
    put_str(cd, "message", message);
    cJSON_DeleteItemFromObjectCaseSensitive(cd, "observedGeneration");
    cJSON_AddNumberToObject(cd, "observedGeneration", gen);
}

static double generation(const cJSON *obj)
{
    const cJSON *g = nw_json_get(nw_json_get(obj, "metadata"), "generation");
    return cJSON_IsNumber(g) ? g->valuedouble : 0;
}

/* ---- resources ---- */

typedef struct {
    char name[96];
    nw_quantity_t q;
} res_t;

static void res_add(res_t *r, int *n, const char *name, nw_quantity_t q)
{
    for (int i = 0; i < *n; i++)
        if (strcmp(r[i].name, name) == 0) {
            nw_quantity_t sum;
            if (nw_quantity_add(r[i].q, q, &sum, NULL) == NW_OK)
                r[i].q = sum;
            return;
        }
    if (*n < MAX_RES) {
        snprintf(r[*n].name, sizeof r[*n].name, "%s", name);
        r[(*n)++].q = q;
    }
}

static void res_add_map(res_t *r, int *n, const cJSON *map)
{
    const cJSON *v;
    cJSON_ArrayForEach(v, map)
    {
        nw_quantity_t q;
        if (v->string && cJSON_IsString(v) && nw_quantity_parse(v->valuestring, &q, NULL) == NW_OK)
            res_add(r, n, v->string, q);
    }
}

static cJSON *resources_json(const nw_poolstatus_in_t *in, int *count)
{
    res_t r[MAX_RES];
    memset(r, 0, sizeof r);
    int n = 0;
    static const char *const base[] = {"cpu", "memory", "pods", "ephemeral-storage", "nodes"};
    for (size_t i = 0; i < sizeof base / sizeof *base; i++)
        res_add(r, &n, base[i], nw_quantity_from_milli(0, NW_QTY_DECIMAL_SI));
    *count = 0;
    for (size_t i = 0; i < in->nclaims; i++) {
        const cJSON *nc = in->claims[i];
        if (nw_json_get(nw_json_get(nc, "metadata"), "deletionTimestamp") ||
            !nw_json_str(nw_json_get(nc, "status"), "providerID"))
            continue;
        const cJSON *node = in->claim_nodes ? in->claim_nodes[i] : NULL;
        const cJSON *cap = nw_json_get(nw_json_get(node, "status"), "capacity");
        if (!cJSON_IsObject(cap) || !cap->child)
            cap = nw_json_get(nw_json_get(nc, "status"), "capacity");
        res_add_map(r, &n, cap);
        (*count)++;
    }
    res_add(r, &n, "nodes", nw_quantity_from_milli((int64_t)*count * 1000, NW_QTY_DECIMAL_SI));
    cJSON *o = cJSON_CreateObject();
    for (int i = 0; o && i < n; i++) {
        char buf[NW_QUANTITY_STR_MAX];
        nw_quantity_format(r[i].q, buf, sizeof buf);
        cJSON_AddStringToObject(o, r[i].name, buf);
    }
    return o;
}

/* ---- one pool ---- */

static void node_class_ready(cJSON *conds, const nw_poolstatus_in_t *in, double gen)
{
    const cJSON *cl = in->nodeclass;
    if (!cl) {
        cond_set(conds, "NodeClassReady", "False", "NodeClassNotFound",
                 "NodeClass not found on cluster", gen, in->now_ns);
        return;
    }
    if (nw_json_get(nw_json_get(cl, "metadata"), "deletionTimestamp")) {
        cond_set(conds, "NodeClassReady", "False", "NodeClassTerminating",
                 "NodeClass is Terminating", gen, in->now_ns);
        return;
    }
    cJSON *cconds = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(cl, "status"),
                                                     "conditions");
    cJSON *ready = cond_find(cconds, "Ready");
    const char *st = nw_json_str(ready, "status");
    if (!st || strcmp(st, "Unknown") == 0 || (strcmp(st, "True") != 0 && strcmp(st, "False") != 0))
        cond_set(conds, "NodeClassReady", "False", "NodeClassReadinessUnknown",
                 "Node Class Readiness Unknown", gen, in->now_ns);
    else if (strcmp(st, "False") == 0)
        cond_set(conds, "NodeClassReady", "False", nw_json_str(ready, "reason"),
                 nw_json_str(ready, "message"), gen, in->now_ns);
    else
        cond_set(conds, "NodeClassReady", "True", "NodeClassReady", "", gen, in->now_ns);
}

static void registration_health(cJSON *conds, cJSON *st, const cJSON *old_st,
                                const nw_poolstatus_in_t *in, double gen)
{
    nw_reghealth_t *t = in->tracker;
    const char *cur = cond_status(conds, "NodeRegistrationHealthy");
    if (in->nodeclass && t) {
        /* after a restart: refill the window from the condition */
        if (nw_poolstatus_reghealth_status(t) == NW_REGHEALTH_UNKNOWN && cur) {
            if (strcmp(cur, "True") == 0)
                nw_poolstatus_reghealth_set(t, NW_REGHEALTH_HEALTHY);
            else if (strcmp(cur, "False") == 0)
                nw_poolstatus_reghealth_set(t, NW_REGHEALTH_UNHEALTHY);
        }
        /* NodePool or EC2NodeClass changed: start over */
        cJSON *cd = cond_find(conds, "NodeRegistrationHealthy");
        const cJSON *og = nw_json_get(cd, "observedGeneration");
        const cJSON *ncog = nw_json_get(old_st, "nodeClassObservedGeneration");
        double ncgen = generation(in->nodeclass);
        if (!cd || !cJSON_IsNumber(ncog) || ncog->valuedouble != ncgen || !cJSON_IsNumber(og) ||
            og->valuedouble != gen) {
            cond_set(conds, "NodeRegistrationHealthy", "Unknown", "AwaitingReconciliation",
                     "object is awaiting reconciliation", gen, in->now_ns);
            nw_poolstatus_reghealth_reset(t);
        }
        cJSON_DeleteItemFromObjectCaseSensitive(st, "nodeClassObservedGeneration");
        cJSON_AddNumberToObject(st, "nodeClassObservedGeneration", ncgen);
    }
    for (size_t i = 0; t && i < in->nreg_events; i++) {
        int ok = in->reg_events[i];
        cur = cond_status(conds, "NodeRegistrationHealthy");
        if (ok && nw_poolstatus_reghealth_dry_run(t, 1) == NW_REGHEALTH_HEALTHY &&
            !(cur && strcmp(cur, "True") == 0))
            cond_set(conds, "NodeRegistrationHealthy", "True", "NodeRegistrationHealthy", "", gen,
                     in->now_ns);
        if (!ok && nw_poolstatus_reghealth_dry_run(t, 0) == NW_REGHEALTH_UNHEALTHY &&
            !(cur && strcmp(cur, "False") == 0))
            cond_set(conds, "NodeRegistrationHealthy", "False", "RegistrationFailed",
                     "Failed to register node", gen, in->now_ns);
        nw_poolstatus_reghealth_update(t, ok);
    }
}

/* DisruptionBudgetsValid (nodewarden's own; Karpenter has none): False naming the first
 * budget whose schedule is not a cron expression (the CRD's pattern admits `99 99 99 99
 * 99`): such a budget is never active and counts as allowing 0 disruptions. Added only
 * when a schedule is bad, True again once none is; it is not one of Ready's dependents. */
static void budgets_valid(cJSON *conds, const cJSON *nodepool, double gen, int64_t now)
{
    const cJSON *budgets =
        nw_json_get(nw_json_get(nw_json_get(nodepool, "spec"), "disruption"), "budgets");
    int i = 0;
    char msg[800] = "";
    for (const cJSON *b = cJSON_IsArray(budgets) ? budgets->child : NULL; b && !msg[0];
         b = b->next, i++) {
        const char *s = nw_json_str(b, "schedule");
        nw_cron_t c;
        nw_err_t e = {0};
        if (s && nw_cron_parse(s, &c, &e) != NW_OK)
            snprintf(msg, sizeof msg,
                     "spec.disruption.budgets[%d].schedule %.64s is not a cron schedule (%.200s); "
                     "it is never active and allows 0 disruptions",
                     i, s, e.msg);
    }
    if (msg[0])
        cond_set(conds, "DisruptionBudgetsValid", "False", "InvalidSchedule", msg, gen, now);
    else if (cond_find(conds, "DisruptionBudgetsValid"))
        cond_set(conds, "DisruptionBudgetsValid", "True", "DisruptionBudgetsValid", "", gen, now);
}

static void ready(cJSON *conds, double gen, int64_t now)
{
    static const char *const deps[] = {"ValidationSucceeded", "NodeClassReady"};
    char msg[256] = "";
    size_t off = 0;
    int bad = 0, any_false = 0;
    for (size_t i = 0; i < 2; i++) {
        cJSON *cd = cond_find(conds, deps[i]);
        const char *st = nw_json_str(cd, "status");
        if (st && strcmp(st, "True") == 0)
            continue;
        const cJSON *og = nw_json_get(cd, "observedGeneration");
        if (st && strcmp(st, "False") == 0 && cJSON_IsNumber(og) && og->valuedouble == gen)
            any_false = 1;
        int w = snprintf(msg + off, sizeof msg - off, "%s%s=%s", bad ? ", " : "", deps[i],
                         st ? st : "Unknown");
        if (w > 0 && (size_t)w < sizeof msg - off)
            off += (size_t)w;
        bad++;
    }
    if (!bad)
        cond_set(conds, "Ready", "True", "Ready", "", gen, now);
    else if (any_false)
        cond_set(conds, "Ready", "False", "UnhealthyDependents", msg, gen, now);
    else
        cond_set(conds, "Ready", "Unknown", "ReconcilingDependents", msg, gen, now);
}

cJSON *nw_poolstatus_compute(const nw_poolstatus_in_t *in)
{
    const cJSON *old = nw_json_get(in->nodepool, "status");
    cJSON *st = cJSON_IsObject(old) ? cJSON_Duplicate(old, 1) : cJSON_CreateObject();
    if (!st)
        return NULL;
    double gen = generation(in->nodepool);
    int count = 0;
    cJSON *res = resources_json(in, &count);
    cJSON_DeleteItemFromObjectCaseSensitive(st, "resources");
    if (res)
        cJSON_AddItemToObject(st, "resources", res);
    cJSON_DeleteItemFromObjectCaseSensitive(st, "nodes");
    cJSON_AddNumberToObject(st, "nodes", count);
    cJSON *conds = cJSON_GetObjectItemCaseSensitive(st, "conditions");
    if (!cJSON_IsArray(conds)) {
        cJSON_DeleteItemFromObjectCaseSensitive(st, "conditions");
        conds = cJSON_AddArrayToObject(st, "conditions");
    }
    if (in->validation_error)
        cond_set(conds, "ValidationSucceeded", "False", "NodePoolValidationFailed",
                 in->validation_error, gen, in->now_ns);
    else
        cond_set(conds, "ValidationSucceeded", "True", "ValidationSucceeded", "", gen, in->now_ns);
    node_class_ready(conds, in, gen);
    registration_health(conds, st, old, in, gen);
    budgets_valid(conds, in->nodepool, gen, in->now_ns);
    ready(conds, gen, in->now_ns);
    return st;
}

bool nw_poolstatus_validate(const cJSON *nodepool, char *msg, size_t n)
{
    nw_kv_t kv;
    nw_admit_result_t res;
    nw_kval_init(&kv);
    nw_admit_result_init(&res);
    /* the problems are in kv and res */
    (void)nw_nodepool_validate(nodepool, NULL, &kv, &res);
    static const char suffix[] = " (Karpenter would mark the NodePool ValidationSucceeded=False)";
    size_t off = 0;
    int problems = 0;
    if (msg && n)
        msg[0] = 0;
    for (size_t i = 0; i < res.nwarnings; i++) {
        const char *w = res.warnings[i];
        const char *s = w ? strstr(w, suffix) : NULL;
        if (!s)
            continue;
        problems++;
        if (msg && off < n) {
            int k = snprintf(msg + off, n - off, "%s%.*s", off ? "; " : "", (int)(s - w), w);
            if (k > 0)
                off += (size_t)k;
        }
    }
    nw_admit_result_cleanup(&res);
    nw_kval_cleanup(&kv);
    return problems == 0;
}

/* ---- the controller ---- */

typedef struct {
    char uid[64];
    char pool[128];
    int64_t launched_ns;
    int registered, judged, seen;
} claim_t;

typedef struct {
    char uid[64];
    nw_reghealth_t t;
    int events[16];
    size_t nev;
    char *last_written;  /* the status text we wrote last (owned) */
    cJSON *written;      /* ... and as JSON, until the cache shows it (owned) */
    char written_rv[64]; /* the resourceVersion our write produced */
    int64_t written_mono;
    char valid_rv[64]; /* runtime validation memo: the pool's resourceVersion ... */
    int valid;         /* ... its verdict ... */
    char verr[1024];   /* ... and problems */
    int seen;
} pool_t;

struct nw_poolstatus {
    nw_ctl_deps_t *deps;
    int64_t registration_timeout_ns;
    claim_t *c;
    size_t nc, ccap;
    pool_t *p;
    size_t np, pcap;
    int64_t term_start_ns;
};

nw_poolstatus_t *nw_poolstatus_new(nw_ctl_deps_t *deps, int64_t registration_timeout_ns)
{
    nw_poolstatus_t *p = calloc(1, sizeof(nw_poolstatus_t));
    if (p) {
        p->deps = deps;
        p->registration_timeout_ns = registration_timeout_ns;
    }
    return p;
}

void nw_poolstatus_reset(nw_poolstatus_t *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->np; i++) {
        free(p->p[i].last_written);
        cJSON_Delete(p->p[i].written);
    }
    free(p->p);
    free(p->c);
    nw_ctl_deps_t *deps = p->deps; /* what it was built with stays */
    int64_t timeout = p->registration_timeout_ns;
    memset(p, 0, sizeof *p);
    p->deps = deps;
    p->registration_timeout_ns = timeout;
}

void nw_poolstatus_free(nw_poolstatus_t *p)
{
    nw_poolstatus_reset(p);
    free(p);
}

static pool_t *pool_get(nw_poolstatus_t *p, const char *uid)
{
    for (size_t i = 0; i < p->np; i++)
        if (strcmp(p->p[i].uid, uid) == 0)
            return &p->p[i];
    if (p->np == p->pcap) {
        size_t cap = p->pcap ? p->pcap * 2 : 8;
        pool_t *nv = realloc(p->p, cap * sizeof *nv);
        if (!nv)
            return NULL;
        p->p = nv;
        p->pcap = cap;
    }
    pool_t *e = &p->p[p->np++];
    memset(e, 0, sizeof *e);
    snprintf(e->uid, sizeof e->uid, "%s", uid);
    return e;
}

static void pool_event(nw_poolstatus_t *p, const nw_kube_snap_t *s, const char *pool, int ok)
{
    const nw_kube_obj_t *o = nw_kube_cache_snap_get(s, NW_KUBE_NODEPOOLS, NULL, pool);
    pool_t *e = o && o->uid[0] ? pool_get(p, o->uid) : NULL;
    if (!e)
        return;
    if (e->nev == sizeof e->events / sizeof *e->events) { /* keep the latest outcomes */
        memmove(e->events, e->events + 1, (e->nev - 1) * sizeof *e->events);
        e->nev--;
    }
    e->events[e->nev++] = ok;
    nw_log_info("poolstatus",
                ok ? "registration counted as healthy"
                   : "registration timeout counted as unhealthy",
                NW_LS("nodepool", pool));
}

static claim_t *claim_get(nw_poolstatus_t *p, const char *uid, int *fresh)
{
    *fresh = 0;
    for (size_t i = 0; i < p->nc; i++)
        if (strcmp(p->c[i].uid, uid) == 0)
            return &p->c[i];
    if (p->nc == p->ccap) {
        size_t cap = p->ccap ? p->ccap * 2 : 32;
        claim_t *nv = realloc(p->c, cap * sizeof *nv);
        if (!nv)
            return NULL;
        p->c = nv;
        p->ccap = cap;
    }
    claim_t *e = &p->c[p->nc++];
    memset(e, 0, sizeof *e);
    snprintf(e->uid, sizeof e->uid, "%s", uid);
    *fresh = 1;
    return e;
}

/* lastTransitionTime of a condition that is True, else 0 */
static int64_t true_since(const cJSON *obj, const char *type)
{
    const cJSON *cd;
    cJSON_ArrayForEach(cd, nw_json_get(nw_json_get(obj, "status"), "conditions"))
    {
        const char *t = nw_json_str(cd, "type");
        const char *st = nw_json_str(cd, "status");
        const char *lt = nw_json_str(cd, "lastTransitionTime");
        int64_t ns = 0;
        if (t && st && strcmp(t, type) == 0 && strcmp(st, "True") == 0)
            return lt && nw_clock_time_parse(lt, &ns) == NW_OK && ns > 0 ? ns : 1;
    }
    return 0;
}

/* Registrations (healthy) and registration timeouts (unhealthy) seen since the last pass. */
static void observe(nw_ctl_deps_t *c, nw_poolstatus_t *p, const nw_kube_snap_t *s, int64_t now)
{
    for (size_t i = 0; i < p->nc; i++)
        p->c[i].seen = 0;
    for (size_t i = 0; i < nw_kube_cache_snap_count(s, NW_KUBE_NODECLAIMS); i++) {
        const nw_kube_obj_t *nc = nw_kube_cache_snap_at(s, NW_KUBE_NODECLAIMS, i);
        if (!nc->uid[0] || !nc->nodepool[0])
            continue;
        int fresh = 0;
        claim_t *e = claim_get(p, nc->uid, &fresh);
        if (!e)
            continue;
        e->seen = 1;
        snprintf(e->pool, sizeof e->pool, "%s", nc->nodepool);
        int64_t reg = true_since(nc->json, "Registered");
        int64_t launched = true_since(nc->json, "Launched");
        if (launched > 1)
            e->launched_ns = launched;
        else if (!e->launched_ns) {
            const char *ct = nw_json_str_at(nc->json, "metadata.creationTimestamp");
            if (ct)
                /* unparsable: stays 0 (unknown) */
                (void)nw_clock_time_parse(ct, &e->launched_ns);
        }
        if (fresh && reg) {
            /* registered before this term began: not an outcome we observed */
            e->registered = 1;
            if (reg >= p->term_start_ns)
                pool_event(p, s, nc->nodepool, 1);
            continue;
        }
        if (!e->registered && reg) {
            e->registered = 1;
            pool_event(p, s, nc->nodepool, 1);
        } else if (!e->registered && !e->judged && nc->terminating) {
            e->judged = 1;
            if (e->launched_ns && now - e->launched_ns >= p->registration_timeout_ns)
                pool_event(p, s, nc->nodepool, 0);
        }
    }
    size_t k = 0;
    for (size_t i = 0; i < p->nc; i++) {
        claim_t *e = &p->c[i];
        if (e->seen) {
            p->c[k++] = *e;
            continue;
        }
        if (!e->registered && !e->judged && e->launched_ns &&
            now - e->launched_ns >= p->registration_timeout_ns)
            pool_event(p, s, e->pool, 0);
    }
    p->nc = k;
}

typedef struct {
    const cJSON *status;
} write_t;

static int mutate_status(cJSON *obj, void *ud)
{
    const write_t *w = ud;
    if (cJSON_Compare(nw_json_get(obj, "status"), w->status, 1))
        return 1;
    cJSON_DeleteItemFromObjectCaseSensitive(obj, "status");
    cJSON_AddItemToObject(obj, "status", cJSON_Duplicate(w->status, 1));
    return 0;
}

/* The pool's NodeClaims (cj) and their live Nodes (nj, NULL where none), n of them;
 * false: out of memory. */
static bool pool_claims(const nw_kube_snap_t *s, const nw_kube_obj_t *pool, const cJSON ***cj_out,
                        const cJSON ***nj_out, size_t *n_out)
{
    const nw_kube_obj_t *const *claims = NULL;
    size_t n = nw_kube_cache_snap_nodeclaims_for_nodepool(s, pool->name, &claims);
    const cJSON **cj = n ? calloc(n, sizeof *cj) : NULL;
    const cJSON **nj = n ? calloc(n, sizeof *nj) : NULL;
    if (n && (!cj || !nj)) {
        free(cj);
        free(nj);
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        cj[i] = claims[i]->json;
        const nw_kube_obj_t *node =
            claims[i]->provider_id[0]
                ? nw_kube_cache_snap_node_by_provider_id(s, claims[i]->provider_id)
                : NULL;
        nj[i] = node && !node->terminating ? node->json : NULL;
    }
    *cj_out = cj;
    *nj_out = nj;
    *n_out = n;
    return true;
}

/* The pool to compute the status from. A snapshot taken before our last write landed still
 * shows the older status: start from what we wrote (we are the only writer of NodePool
 * status) until the cache shows our write's resourceVersion; *tmp: that copy (owned). */
static const cJSON *status_base(pool_t *e, const nw_kube_obj_t *pool, int64_t mono, cJSON **tmp)
{
    const cJSON *base = pool->json;
    *tmp = NULL;
    if (e->written &&
        (strcmp(pool->rv, e->written_rv) == 0 || mono - e->written_mono > REWRITE_SAME_NS)) {
        cJSON_Delete(e->written);
        e->written = NULL;
    } else if (e->written && !cJSON_Compare(nw_json_get(pool->json, "status"), e->written, 1)) {
        *tmp = cJSON_Duplicate(pool->json, 1);
        if (*tmp) {
            cJSON_DeleteItemFromObjectCaseSensitive(*tmp, "status");
            cJSON_AddItemToObject(*tmp, "status", cJSON_Duplicate(e->written, 1));
            base = *tmp;
        }
    }
    return base;
}

/* Write status st (txt: its text, owned from here) and remember it; on failure the
 * registration health goes back to before, its events applied again next pass. */
static void write_status(nw_ctl_deps_t *c, pool_t *e, const nw_kube_obj_t *pool, cJSON *st,
                         char *txt, const nw_reghealth_t *before, int64_t mono)
{
    write_t w = {st};
    nw_err_t err = {0};
    cJSON *out = NULL;
    if (nw_kube_write_update_retry(c->kube, &nw_kube_client_res_nodepools, NULL, pool->name, 1,
                                   mutate_status, &w, 5, &out, &err) != NW_OK) {
        e->t = *before; /* the events are applied again next pass */
        nw_log_every(10, NW_LOG_WARN, "poolstatus", "cannot write the NodePool status",
                     NW_LS("nodepool", pool->name), NW_LS("error", err.msg));
        free(txt);
    } else {
        const char *old_reg =
            cond_status(cJSON_GetObjectItemCaseSensitive(
                            cJSON_GetObjectItemCaseSensitive(pool->json, "status"), "conditions"),
                        "NodeRegistrationHealthy");
        const char *new_reg = cond_status(cJSON_GetObjectItemCaseSensitive(st, "conditions"),
                                          "NodeRegistrationHealthy");
        if (new_reg && (!old_reg || strcmp(old_reg, new_reg) != 0))
            nw_log_info("poolstatus", "NodeRegistrationHealthy changed",
                        NW_LS("nodepool", pool->name), NW_LS("status", new_reg));
        e->nev = 0;
        free(e->last_written);
        e->last_written = txt;
        e->written_mono = mono;
        cJSON_Delete(e->written);
        e->written = cJSON_Duplicate(st, 1);
        const char *rv = out ? nw_json_str_at(out, "metadata.resourceVersion") : NULL;
        snprintf(e->written_rv, sizeof e->written_rv, "%s", rv ? rv : "");
    }
    cJSON_Delete(out);
}

static void one_pool(nw_ctl_deps_t *c, nw_poolstatus_t *p, const nw_kube_snap_t *s,
                     const nw_kube_obj_t *pool, int64_t now)
{
    pool_t *e = pool_get(p, pool->uid[0] ? pool->uid : pool->name);
    if (!e)
        return;
    e->seen = 1;
    const cJSON **cj = NULL, **nj = NULL;
    size_t n = 0;
    if (!pool_claims(s, pool, &cj, &nj, &n))
        return;
    const char *cname = nw_json_str_at(pool->json, "spec.template.spec.nodeClassRef.name");
    const nw_kube_obj_t *class =
        cname ? nw_kube_cache_snap_get(s, NW_KUBE_EC2NODECLASSES, NULL, cname) : NULL;
    if (!pool->rv[0] ||
        strcmp(pool->rv, e->valid_rv) != 0) { /* validation depends on the pool only */
        e->valid = nw_poolstatus_validate(pool->json, e->verr, sizeof e->verr);
        snprintf(e->valid_rv, sizeof e->valid_rv, "%s", pool->rv);
    }
    int valid = e->valid;
    const char *verr = e->verr;
    int64_t mono = nw_clock_mono(c->clock);
    cJSON *tmp;
    const cJSON *base = status_base(e, pool, mono, &tmp);
    nw_reghealth_t before = e->t;
    nw_poolstatus_in_t in = {
        base, class ? class->json : NULL, cj, nj, n, valid ? NULL : verr, &e->t, e->events, e->nev,
        now};
    cJSON *st = nw_poolstatus_compute(&in);
    free(cj);
    free(nj);
    if (!st) {
        e->t = before;
        cJSON_Delete(tmp);
        return;
    }
    char *txt = cJSON_PrintUnformatted(st);
    int same_as_cache = cJSON_Compare(nw_json_get(base, "status"), st, 1);
    cJSON_Delete(tmp);
    int same_as_last = txt && e->last_written && strcmp(txt, e->last_written) == 0 &&
                       mono - e->written_mono < REWRITE_SAME_NS;
    if (same_as_cache || same_as_last) {
        e->nev = 0;
        free(txt);
        cJSON_Delete(st);
        return;
    }
    write_status(c, e, pool, st, txt, &before, mono);
    cJSON_Delete(st);
}

void nw_poolstatus_tick(nw_poolstatus_t *p, const nw_kube_snap_t *s)
{
    if (!p)
        return;
    nw_ctl_deps_t *c = p->deps;
    int64_t now = nw_clock_now(c->clock);
    if (!p->term_start_ns)
        p->term_start_ns = now;
    observe(c, p, s, now);
    for (size_t i = 0; i < p->np; i++)
        p->p[i].seen = 0;
    for (size_t i = 0; i < nw_kube_cache_snap_count(s, NW_KUBE_NODEPOOLS) && nw_ctl_may_write(c);
         i++) {
        const nw_kube_obj_t *pool = nw_kube_cache_snap_at(s, NW_KUBE_NODEPOOLS, i);
        if (!pool->terminating)
            one_pool(c, p, s, pool, now);
    }
    /* forget pools that are gone */
    size_t k = 0;
    for (size_t i = 0; i < p->np; i++) {
        if (p->p[i].seen)
            p->p[k++] = p->p[i];
        else {
            free(p->p[i].last_written);
            cJSON_Delete(p->p[i].written);
        }
    }
    p->np = k;
}
