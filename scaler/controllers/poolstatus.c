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
#include "scaler/controllers/tickgate.h"
#include "scaler/controllers/uidmap.h"

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

/* the resources every pool's status has, at zero */
static void res_base(res_t *r, int *n)
{
    memset(r, 0, MAX_RES * sizeof *r);
    *n = 0;
    static const char *const base[] = {"cpu", "memory", "pods", "ephemeral-storage", "nodes"};
    for (size_t i = 0; i < sizeof base / sizeof *base; i++)
        res_add(r, n, base[i], nw_quantity_from_milli(0, NW_QTY_DECIMAL_SI));
}

/* status.resources: the sums, and nodes = count */
static cJSON *res_render(res_t *r, int n, int count)
{
    res_add(r, &n, "nodes", nw_quantity_from_milli((int64_t)count * 1000, NW_QTY_DECIMAL_SI));
    cJSON *o = cJSON_CreateObject();
    for (int i = 0; o && i < n; i++) {
        char buf[NW_QUANTITY_STR_MAX];
        nw_quantity_format(r[i].q, buf, sizeof buf);
        cJSON_AddStringToObject(o, r[i].name, buf);
    }
    return o;
}

/* Is the NodeClaim counted (launched and not being deleted)? */
static bool claim_counts(const cJSON *nc)
{
    return !nw_json_get(nw_json_get(nc, "metadata"), "deletionTimestamp") &&
           nw_json_str(nw_json_get(nc, "status"), "providerID");
}

/* The capacity a counted NodeClaim adds: its live Node's (node may be NULL), else its own. */
static const cJSON *claim_capacity(const cJSON *nc, const cJSON *node)
{
    const cJSON *cap = nw_json_get(nw_json_get(node, "status"), "capacity");
    if (!cJSON_IsObject(cap) || !cap->child)
        cap = nw_json_get(nw_json_get(nc, "status"), "capacity");
    return cap;
}

static cJSON *resources_json(const nw_poolstatus_in_t *in, int *count)
{
    res_t r[MAX_RES];
    int n;
    res_base(r, &n);
    *count = 0;
    for (size_t i = 0; i < in->nclaims; i++) {
        const cJSON *nc = in->claims[i];
        if (!claim_counts(nc))
            continue;
        res_add_map(r, &n, claim_capacity(nc, in->claim_nodes ? in->claim_nodes[i] : NULL));
        (*count)++;
    }
    return res_render(r, n, *count);
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

/* nw_poolstatus_compute; resources (non-NULL): status.resources summed by the controller
 * (it keeps each NodeClaim's parsed capacity between passes) with nodes the NodeClaims
 * counted, instead of summing in->claims */
static cJSON *compute(const nw_poolstatus_in_t *in, const cJSON *resources, int nodes)
{
    const cJSON *old = nw_json_get(in->nodepool, "status");
    cJSON *st = cJSON_IsObject(old) ? cJSON_Duplicate(old, 1) : cJSON_CreateObject();
    if (!st)
        return NULL;
    double gen = generation(in->nodepool);
    int count = nodes;
    cJSON *res = resources ? cJSON_Duplicate(resources, 1) : resources_json(in, &count);
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

cJSON *nw_poolstatus_compute(const nw_poolstatus_in_t *in)
{
    return compute(in, NULL, 0);
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

#define MEMO_RES 8   /* resources of a capacity kept numbered; more: summed by name each pass */
#define MAX_NAMES 64 /* resource names told apart by a number (the first five: res_base's) */
#define NAME_LEN 96  /* res_t's name: longer names are summed by name each pass */

/* What a NodeClaim's version says (the memo of tickgate.h): its condition times, and the
 * capacity it adds to its pool's status.resources, parsed. */
typedef struct {
    int64_t reg, launched; /* true_since Registered, Launched */
    bool created_ok;       /* metadata.creationTimestamp parsed into created */
    int64_t created;
    bool counts; /* claim_counts */
    bool has_uid, has_pool, has_pid;
    uint64_t cepoch; /* cidx is its claim_t's index while the claims' epoch is cepoch */
    size_t cidx;
    bool pool_known;  /* pool_at: its NodePool's place in the snapshot, while none changes */
    long pool_at;     /* -1: no NodePool of its label */
    bool res_known;   /* res is the capacity of node */
    const void *node; /* the live Node whose capacity it is (NULL: the NodeClaim's own) */
    int nres;         /* -1: not kept (more than MEMO_RES, or a name not numbered) */
    struct {
        unsigned char name; /* in nw_poolstatus_t.names */
        nw_quantity_t q;
    } res[MEMO_RES];
} claim_facts_t;

struct nw_poolstatus {
    nw_ctl_deps_t *deps;
    int64_t registration_timeout_ns;
    claim_t *c;
    size_t nc, ccap;
    nw_uidmap_t by_uid; /* claim uid -> its index in c */
    uint64_t cepoch;    /* changes whenever claims move in c */
    pool_t *p;
    size_t np, pcap;
    int64_t term_start_ns;
    nw_tickgate_t gate;              /* NodePools, EC2NodeClasses, NodeClaims, Nodes */
    char names[MAX_NAMES][NAME_LEN]; /* resource names by number, in the order first seen */
    int nnames;
    /* this pass: the NodeClaims of each NodePool (by its place in the snapshot), in key order */
    const nw_kube_obj_t **by_pool;
    size_t *pool_first, *pool_n, cap_by_pool, cap_pools;
};

/* The number of resource name `name`, or -1 (too long, or no room left). */
static int name_id(nw_poolstatus_t *p, const char *name)
{
    if (strlen(name) >= NAME_LEN)
        return -1;
    for (int i = 0; i < p->nnames; i++)
        if (strcmp(p->names[i], name) == 0)
            return i;
    if (p->nnames == MAX_NAMES)
        return -1;
    snprintf(p->names[p->nnames], NAME_LEN, "%s", name);
    return p->nnames++;
}

static void gate_init(nw_poolstatus_t *p)
{
    static const char *const base[] = {"cpu", "memory", "pods", "ephemeral-storage", "nodes"};
    p->nnames = 0;
    for (size_t i = 0; i < sizeof base / sizeof *base; i++)
        (void)name_id(p, base[i]); /* numbers 0-4, res_base's order */
    nw_tickgate_init(&p->gate,
                     NW_TICKGATE_KIND(NW_KUBE_NODEPOOLS) |
                         NW_TICKGATE_KIND(NW_KUBE_EC2NODECLASSES) |
                         NW_TICKGATE_KIND(NW_KUBE_NODECLAIMS) | NW_TICKGATE_KIND(NW_KUBE_NODES),
                     sizeof(claim_facts_t));
}

nw_poolstatus_t *nw_poolstatus_new(nw_ctl_deps_t *deps, int64_t registration_timeout_ns)
{
    nw_poolstatus_t *p = calloc(1, sizeof(nw_poolstatus_t));
    if (p) {
        p->deps = deps;
        p->registration_timeout_ns = registration_timeout_ns;
        gate_init(p);
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
    free(p->by_pool);
    free(p->pool_first);
    free(p->pool_n);
    nw_uidmap_free(&p->by_uid);
    nw_tickgate_cleanup(&p->gate);
    nw_ctl_deps_t *deps = p->deps; /* what it was built with stays */
    int64_t timeout = p->registration_timeout_ns;
    memset(p, 0, sizeof *p);
    p->deps = deps;
    p->registration_timeout_ns = timeout;
    gate_init(p);
}

void nw_poolstatus_free(nw_poolstatus_t *p)
{
    nw_poolstatus_reset(p);
    if (p)
        nw_tickgate_cleanup(&p->gate);
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
    long at = nw_uidmap_get(&p->by_uid, uid);
    if (at >= 0 && (size_t)at < p->nc && strcmp(p->c[at].uid, uid) == 0)
        return &p->c[at];
    if (p->nc == p->ccap) {
        size_t cap = p->ccap ? p->ccap * 2 : 32;
        claim_t *nv = realloc(p->c, cap * sizeof *nv);
        if (!nv)
            return NULL;
        p->c = nv;
        p->ccap = cap;
    }
    claim_t *e = &p->c[p->nc];
    memset(e, 0, sizeof *e);
    snprintf(e->uid, sizeof e->uid, "%s", uid);
    if (nw_uidmap_put(&p->by_uid, e->uid, (long)p->nc) != NW_OK)
        return NULL;
    p->nc++;
    *fresh = 1;
    return e;
}

/* lastTransitionTime of a condition that is True, else 0 (1 when it has no time) */
static int64_t true_since(const nw_node_meta_t *m, const char *type)
{
    for (size_t i = 0; i < m->nconds; i++) {
        const nw_node_cond_t *cd = &m->conds[i];
        if (strcmp(cd->type, type) == 0 && strcmp(cd->status_name, "True") == 0)
            return cd->since > 0 ? cd->since : 1;
    }
    return 0;
}

/* claim_counts of a NodeClaim's record */
static bool claim_counts_rec(const nw_node_claim_t *nc)
{
    return !nc->m.terminating && nc->provider_id[0];
}

/* The facts of NodeClaim nc (memo, or read now into *tmp); *fresh: just read. */
static claim_facts_t *claim_facts(nw_poolstatus_t *p, const nw_kube_obj_t *nc, claim_facts_t *tmp,
                                  bool *fresh)
{
    claim_facts_t *f = nw_tickgate_memo(&p->gate, nc, fresh);
    if (f && !*fresh)
        return f;
    if (!f)
        f = tmp;
    *fresh = true;
    memset(f, 0, sizeof *f);
    const nw_node_claim_t *rec = nc->nodeclaim;
    f->reg = true_since(&rec->m, "Registered");
    f->launched = true_since(&rec->m, "Launched");
    const char *ct = rec->m.created_text;
    f->created_ok = ct[0] && nw_clock_time_parse(ct, &f->created) == NW_OK;
    f->counts = claim_counts_rec(rec);
    f->has_uid = nc->uid[0] != 0;
    f->has_pool = nc->nodepool[0] != 0;
    f->has_pid = nc->provider_id[0] != 0;
    return f;
}

/* Registrations (healthy) and registration timeouts (unhealthy) seen since the last pass. */
static void observe(nw_ctl_deps_t *c, nw_poolstatus_t *p, const nw_kube_snap_t *s, int64_t now)
{
    for (size_t i = 0; i < p->nc; i++)
        p->c[i].seen = 0;
    for (size_t i = 0; i < nw_kube_cache_snap_count(s, NW_KUBE_NODECLAIMS); i++) {
        const nw_kube_obj_t *nc = nw_kube_cache_snap_at(s, NW_KUBE_NODECLAIMS, i);
        claim_facts_t tmp;
        bool changed;
        claim_facts_t *f = claim_facts(p, nc, &tmp, &changed);
        if (!f->has_uid || !f->has_pool)
            continue;
        int fresh = 0;
        claim_t *e;
        if (!changed && f->cepoch == p->cepoch && f->cidx < p->nc)
            e = &p->c[f->cidx]; /* the same NodeClaim as the last pass, at the same place */
        else {
            e = claim_get(p, nc->uid, &fresh);
            if (!e)
                continue;
            snprintf(e->pool, sizeof e->pool, "%s", nc->nodepool);
            if (f != &tmp) {
                f->cepoch = p->cepoch;
                f->cidx = (size_t)(e - p->c);
            }
        }
        e->seen = 1;
        int64_t reg = f->reg;
        int64_t launched = f->launched;
        if (launched > 1)
            e->launched_ns = launched;
        else if (!e->launched_ns && f->created_ok)
            e->launched_ns = f->created; /* unparsable: stays 0 (unknown) */
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
    if (k != p->nc) { /* the indexes moved */
        p->nc = k;
        p->cepoch++;
        nw_uidmap_clear(&p->by_uid);
        for (size_t i = 0; i < p->nc; i++)
            if (nw_uidmap_put(&p->by_uid, p->c[i].uid, (long)i) != NW_OK) {
                /* out of memory: a linear walk finds nothing, so start over */
                nw_uidmap_clear(&p->by_uid);
                p->nc = 0;
                break;
            }
    }
}

typedef struct {
    const cJSON *status;
} write_t;

/* the condition of this type in a status's conditions, NULL when none */
static cJSON *status_cond(const cJSON *st, const char *type)
{
    cJSON *cd;
    cJSON_ArrayForEach(cd, cJSON_GetObjectItemCaseSensitive(st, "conditions"))
    {
        const char *t = nw_json_str(cd, "type");
        if (t && strcmp(t, type) == 0)
            return cd;
    }
    return NULL;
}

/* The status w computed, with the conditions other controllers own taken from the stored
 * object (the disruption controller's AcceleratorRolloutBlocked: a status computed from an
 * older snapshot must not undo its write). */
static int mutate_status(cJSON *obj, void *ud)
{
    const write_t *w = ud;
    cJSON *want = cJSON_Duplicate(w->status, 1);
    if (!want)
        return 1;
    static const char *const foreign[] = {"AcceleratorRolloutBlocked"};
    for (size_t i = 0; i < sizeof foreign / sizeof *foreign; i++) {
        cJSON *conds = cJSON_GetObjectItemCaseSensitive(want, "conditions");
        cJSON *mine = status_cond(want, foreign[i]);
        if (mine)
            cJSON_DetachItemViaPointer(conds, mine);
        cJSON_Delete(mine);
        const cJSON *theirs = status_cond(nw_json_get(obj, "status"), foreign[i]);
        if (theirs && cJSON_IsArray(conds))
            cJSON_AddItemToArray(conds, cJSON_Duplicate(theirs, 1));
    }
    if (cJSON_Compare(nw_json_get(obj, "status"), want, 1)) {
        cJSON_Delete(want);
        return 1;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(obj, "status");
    cJSON_AddItemToObject(obj, "status", want);
    return 0;
}

/* The NodeClaims of each NodePool of s, into p->by_pool by the pool's place in the snapshot:
 * the NodeClaims of its label in key order, as nw_kube_cache_snap_nodeclaims_for_nodepool
 * gives them. pools_same: no NodePool changed since the last pass. False on out of memory. */
static bool bucket_claims(nw_poolstatus_t *p, const nw_kube_snap_t *s, bool pools_same)
{
    size_t nc = nw_kube_cache_snap_count(s, NW_KUBE_NODECLAIMS);
    size_t np = nw_kube_cache_snap_count(s, NW_KUBE_NODEPOOLS);
    if (nc > p->cap_by_pool) {
        const nw_kube_obj_t **v = realloc(p->by_pool, nc * sizeof *v);
        if (!v)
            return false;
        p->by_pool = v;
        p->cap_by_pool = nc;
    }
    if (np + 1 > p->cap_pools) {
        size_t *f = realloc(p->pool_first, (np + 1) * sizeof *f);
        if (f)
            p->pool_first = f;
        size_t *n = realloc(p->pool_n, (np + 1) * sizeof *n);
        if (n)
            p->pool_n = n;
        if (!f || !n)
            return false;
        p->cap_pools = np + 1;
    }
    memset(p->pool_n, 0, (np + 1) * sizeof *p->pool_n);
    nw_tickgate_last_t last = {0};
    /* count, then place: two passes over the NodeClaims (the memo answers the second) */
    for (int pass = 0; pass < 2; pass++) {
        if (pass) {
            size_t off = 0;
            for (size_t j = 0; j < np; j++) {
                p->pool_first[j] = off;
                off += p->pool_n[j];
                p->pool_n[j] = 0;
            }
        }
        for (size_t i = 0; i < nc; i++) {
            const nw_kube_obj_t *o = nw_kube_cache_snap_at(s, NW_KUBE_NODECLAIMS, i);
            claim_facts_t tmp;
            bool changed;
            claim_facts_t *f = claim_facts(p, o, &tmp, &changed);
            if (changed || !f->pool_known || !pools_same) {
                const nw_kube_obj_t *po =
                    f->has_pool ? nw_tickgate_get(&last, s, NW_KUBE_NODEPOOLS, o->nodepool) : NULL;
                f->pool_at = -1;
                for (size_t j = 0; po && j < np; j++)
                    if (nw_kube_cache_snap_at(s, NW_KUBE_NODEPOOLS, j) == po)
                        f->pool_at = (long)j;
                f->pool_known = f != &tmp;
                if (!f->pool_known)
                    return false; /* out of memory: the second pass would not know */
            }
            if (f->pool_at < 0)
                continue;
            size_t j = (size_t)f->pool_at;
            if (pass)
                p->by_pool[p->pool_first[j] + p->pool_n[j]] = o;
            p->pool_n[j]++;
        }
    }
    return true;
}

/* Add q to the sum of resource name number id (res_add by number; pos: each number's place
 * in r, -1: not found yet). */
static void res_add_id(const nw_poolstatus_t *p, res_t *r, int *n, int *pos, int id,
                       nw_quantity_t q)
{
    if (pos[id] < 0)
        for (int i = 0; i < *n; i++) /* added by name (res_add_map) */
            if (strcmp(r[i].name, p->names[id]) == 0)
                pos[id] = i;
    if (pos[id] >= 0) {
        nw_quantity_t sum;
        if (nw_quantity_add(r[pos[id]].q, q, &sum, NULL) == NW_OK)
            r[pos[id]].q = sum;
        return;
    }
    if (*n < MAX_RES) {
        snprintf(r[*n].name, sizeof r[*n].name, "%s", p->names[id]);
        r[*n].q = q;
        pos[id] = (*n)++;
    }
}

/* The pool's status.resources (owned; NULL on out of memory) and the NodeClaims counted:
 * as nw_poolstatus_compute sums them, from each NodeClaim's capacity parsed once per
 * version of it and of its Node. claims: the pool's n NodeClaims, in key order. */
static cJSON *pool_resources(nw_poolstatus_t *p, const nw_kube_snap_t *s,
                             const nw_kube_obj_t *const *claims, size_t n, bool nodes_same,
                             int *count)
{
    res_t r[MAX_RES];
    int nr, pos[MAX_NAMES];
    res_base(r, &nr);
    for (int i = 0; i < MAX_NAMES; i++)
        pos[i] = i < nr ? i : -1; /* res_base's names are numbers 0-4, in its order */
    *count = 0;
    for (size_t i = 0; i < n; i++) {
        claim_facts_t tmp;
        bool changed;
        claim_facts_t *f = claim_facts(p, claims[i], &tmp, &changed);
        if (!f->counts)
            continue;
        const nw_kube_obj_t *node;
        if (!changed && f->res_known && nodes_same)
            node = f->node; /* the same NodeClaim and the same Nodes: the same Node */
        else {
            node = f->has_pid ? nw_kube_cache_snap_node_by_provider_id(s, claims[i]->provider_id)
                              : NULL;
            if (node && node->terminating)
                node = NULL;
        }
        if (!f->res_known || f->node != node) {
            /* its live Node's capacity, else its own (claim_capacity) */
            const nw_resources_t *cap = node && nw_resources_len(&node->node->capacity)
                                            ? &node->node->capacity
                                            : &claims[i]->nodeclaim->capacity;
            f->res_known = true;
            f->node = node;
            f->nres = 0;
            for (size_t k = 0; k < nw_resources_len(cap); k++) {
                int id = f->nres < MEMO_RES ? name_id(p, nw_resources_name_at(cap, k)) : -1;
                if (id < 0) {
                    f->nres = -1;
                    break;
                }
                f->res[f->nres].name = (unsigned char)id;
                f->res[f->nres++].q = nw_resources_at(cap, k);
            }
            if (f->nres < 0) {
                for (size_t k = 0; k < nw_resources_len(cap); k++)
                    res_add(r, &nr, nw_resources_name_at(cap, k), nw_resources_at(cap, k));
                f->res_known = false; /* not kept: read from the record every pass */
                (*count)++;
                continue;
            }
            if (f == &tmp)
                f->res_known = false; /* out of memory: not kept */
        }
        for (int k = 0; k < f->nres; k++)
            res_add_id(p, r, &nr, pos, f->res[k].name, f->res[k].q);
        (*count)++;
    }
    return res_render(r, nr, *count);
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

/* false when it wrote the status (or tried to); *due: when what it decided goes stale */
static bool one_pool(nw_ctl_deps_t *c, nw_poolstatus_t *p, const nw_kube_snap_t *s,
                     const nw_kube_obj_t *const *claims, size_t nclaims, const nw_kube_obj_t *pool,
                     int64_t now, bool nodes_same, int64_t *due)
{
    pool_t *e = pool_get(p, pool->uid[0] ? pool->uid : pool->name);
    if (!e)
        return false;
    e->seen = 1;
    int count = 0;
    cJSON *res = pool_resources(p, s, claims, nclaims, nodes_same, &count);
    if (!res)
        return false;
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
    if (e->written) /* dropped REWRITE_SAME_NS after our write if the cache never shows it */
        *due = nw_tickgate_min(*due, e->written_mono + REWRITE_SAME_NS + 1);
    nw_reghealth_t before = e->t;
    nw_poolstatus_in_t in = {base,   class ? class->json : NULL,
                             NULL,   NULL,
                             0,      valid ? NULL : verr,
                             &e->t,  e->events,
                             e->nev, now};
    cJSON *st = compute(&in, res, count);
    cJSON_Delete(res);
    if (!st) {
        e->t = before;
        cJSON_Delete(tmp);
        return false;
    }
    char *txt = cJSON_PrintUnformatted(st);
    int same_as_cache = cJSON_Compare(nw_json_get(base, "status"), st, 1);
    cJSON_Delete(tmp);
    int same_as_last = txt && e->last_written && strcmp(txt, e->last_written) == 0 &&
                       mono - e->written_mono < REWRITE_SAME_NS;
    if (same_as_cache || same_as_last) {
        if (!same_as_cache) /* written again once REWRITE_SAME_NS has passed */
            *due = nw_tickgate_min(*due, e->written_mono + REWRITE_SAME_NS);
        e->nev = 0;
        free(txt);
        cJSON_Delete(st);
        return true;
    }
    write_status(c, e, pool, st, txt, &before, mono);
    cJSON_Delete(st);
    return false;
}

void nw_poolstatus_tick(nw_poolstatus_t *p, const nw_kube_snap_t *s)
{
    if (!p)
        return;
    nw_ctl_deps_t *c = p->deps;
    int64_t now = nw_clock_now(c->clock), mono = nw_clock_mono(c->clock);
    if (!p->term_start_ns)
        p->term_start_ns = now;
    /* nothing the statuses are computed from changed, and no write is to be repeated */
    if (nw_tickgate_quiet(&p->gate, s, mono, now))
        return;
    bool nodes_same = nw_tickgate_same(&p->gate, s, NW_KUBE_NODES);
    bool pools_same = nw_tickgate_same(&p->gate, s, NW_KUBE_NODEPOOLS);
    observe(c, p, s, now);
    bool bucketed = bucket_claims(p, s, pools_same), complete = true;
    int64_t due = NW_TICKGATE_NEVER;
    for (size_t i = 0; i < p->np; i++)
        p->p[i].seen = 0;
    for (size_t i = 0; i < nw_kube_cache_snap_count(s, NW_KUBE_NODEPOOLS); i++) {
        if (!nw_ctl_may_write(c)) {
            complete = false;
            break;
        }
        const nw_kube_obj_t *pool = nw_kube_cache_snap_at(s, NW_KUBE_NODEPOOLS, i);
        if (pool->terminating)
            continue;
        const nw_kube_obj_t *const *claims = NULL;
        size_t n;
        if (bucketed) {
            claims = p->by_pool + p->pool_first[i];
            n = p->pool_n[i];
        } else /* out of memory: the index */
            n = nw_kube_cache_snap_nodeclaims_for_nodepool(s, pool->name, &claims);
        if (!one_pool(c, p, s, claims, n, pool, now, nodes_same, &due))
            complete = false;
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
    nw_tickgate_ran(&p->gate, s, complete, due, NW_TICKGATE_NEVER);
}
