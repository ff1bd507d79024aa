/*
 * scaler/controllers/lifecycle.c — registration and initialization of launched NodeClaims,
 * the registration timeout and the EC2NodeClass status (kubernetes-sigs/karpenter
 * pkg/controllers/nodeclaim/lifecycle/{registration,initialization,liveness}.go;
 * aws/karpenter-provider-aws pkg/controllers/nodeclass/controller.go). The termination
 * finalizers: scaler/controllers/termination.c.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/quantity.h"
#include "common/log.h"
#include "common/workers.h"
#include "scaler/nodeclaim/bootstrap.h"
#include "scaler/controllers/lifecycle.h"
#include "scaler/controllers/tickgate.h"
#include "scaler/controllers/uidmap.h"
#include "scaler/metrics/kmetrics.h"

#define NODECLASS_EVERY_NS (30 * NW_NS_PER_SEC)
#define UNREADY_EVERY_NS (10 * NW_NS_PER_SEC) /* a class not ready */

/* A NodeClaim whose bootstrap token this process deleted. */
typedef struct {
    char *uid, *name;
    bool seen; /* its NodeClaim was looked at in this pass */
} boot_t;

/* What one object's version says (the memo of tickgate.h). */
typedef struct {
    /* NodeClaims */
    bool registered, initialized; /* the conditions are True */
    int64_t launched;             /* launched_at */
    const char *cname;            /* spec.nodeClassRef.name (in the JSON), NULL: none */
    bool has_pid;                 /* status.providerID is set */
    const void *init_node;        /* the Node init_ok was judged with (NULL: none yet) */
    bool init_ok;                 /* node_initialized with init_node */
    bool job;                     /* a job was submitted on this version of the NodeClaim */
    bool boot_known;              /* boot: boot_class, while no EC2NodeClass changes */
    bool boot;
    /* EC2NodeClasses */
    bool boot_wanted; /* nw_bootstrap_wanted */
} facts_t;

#define JOB_THREADS 8
#define JOB_OUT 0
#define JOB_FAILED 1

typedef enum { JOB_REGISTER, JOB_INITIALIZE } job_kind_t;

typedef struct job {
    nw_workers_job_t link; /* first: the pool's */
    job_kind_t kind;
    char *uid;       /* the NodeClaim's */
    char *node_name; /* the Node's */
    /* from the snapshot the job was made from: the NodeClaim, its Node and its NodePool
     * (NULL: none), each held (nw_kube_cache_obj_hold), not the snapshot: a job may wait
     * seconds in the queue, and a held snapshot would keep every pod version retired
     * meanwhile */
    const nw_kube_obj_t *nc, *node, *pool_obj;
    const cJSON *pool; /* pool_obj's JSON */
    bool node_ok;      /* the Node's write was made (or had nothing to do) */
    bool ok;           /* both writes were made (or had nothing to do) */
    bool wrote;        /* the NodeClaim's condition was set by this job */
    int warned_unregistered;
} job_t;

struct nw_lifecycle {
    nw_ctl_deps_t *deps;
    nw_tickgate_last_t classes; /* the last EC2NodeClass looked up by name (this tick) */
    nw_lifecycle_opts_t o;
    int64_t next_nodeclass_mono; /* the next EC2NodeClass status refresh */
    _Atomic uint64_t registered, initialized, reg_timeouts, tokens_deleted;
    /* NodeClaims whose bootstrap token this process deleted (sorted by uid after a tick;
     * pruned to the NodeClaims that still exist) */
    boot_t *boot_done;
    size_t nboot_done, cap_boot_done, nboot_sorted; /* [0, nboot_sorted) sorted */
    nw_tickgate_t gate;         /* the NodeClaims: NodeClaims, Nodes, EC2NodeClasses */
    nw_tickgate_t classes_gate; /* the EC2NodeClasses' status and finalizer: EC2NodeClasses,
                                   NodeClaims (a class being deleted waits for its claims) */
    nw_workers_t *jobs;         /* the registration and initialization writes (common/workers.h) */
    /* the NodeClaims (uid) with a job out: JOB_OUT, or JOB_FAILED once it came back with a
     * write not made (the reconcile thread's) */
    nw_uidmap_t jobs_out;
    size_t njobs_out; /* JOB_OUT entries */
};

static void job_run(nw_workers_job_t *job, void *ud);
static void job_drop(nw_workers_job_t *job);

nw_lifecycle_t *nw_lifecycle_new(nw_ctl_deps_t *deps, const nw_lifecycle_opts_t *o)
{
    nw_lifecycle_t *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->deps = deps;
    if (o)
        l->o = *o;
    if (!(l->jobs = nw_workers_new(JOB_THREADS, job_run, NULL, l))) {
        free(l);
        return NULL;
    }
    nw_tickgate_init(&l->gate,
                     NW_TICKGATE_KIND(NW_KUBE_NODECLAIMS) | NW_TICKGATE_KIND(NW_KUBE_NODES) |
                         NW_TICKGATE_KIND(NW_KUBE_EC2NODECLASSES),
                     sizeof(facts_t));
    nw_tickgate_init(
        &l->classes_gate,
        NW_TICKGATE_KIND(NW_KUBE_EC2NODECLASSES) | NW_TICKGATE_KIND(NW_KUBE_NODECLAIMS), 0);
    return l;
}

void nw_lifecycle_free(nw_lifecycle_t *l)
{
    if (!l)
        return;
    nw_workers_free(l->jobs, job_drop);
    nw_uidmap_free(&l->jobs_out);
    for (size_t i = 0; i < l->nboot_done; i++) {
        free(l->boot_done[i].uid);
        free(l->boot_done[i].name);
    }
    free(l->boot_done);
    nw_tickgate_cleanup(&l->gate);
    nw_tickgate_cleanup(&l->classes_gate);
    free(l);
}

void nw_lifecycle_reset(nw_lifecycle_t *l)
{
    if (!l)
        return;
    l->next_nodeclass_mono = 0;
    nw_tickgate_reset(&l->gate);
    nw_tickgate_reset(&l->classes_gate);
}

nw_rc_t nw_lifecycle_metrics(nw_lifecycle_t *l, nw_buf_t *out)
{
    if (!l)
        return NW_OK;
    const nw_ctl_counter_t v[] = {
        {"nodewarden_nodeclaims_registered_total", "NodeClaims registered.", &l->registered},
        {"nodewarden_nodeclaims_initialized_total", "NodeClaims initialized.", &l->initialized},
        {"nodewarden_nodeclaims_registration_timeouts_total",
         "NodeClaims deleted after the registration timeout.", &l->reg_timeouts},
        {"nodewarden_bootstrap_tokens_deleted_total",
         "kubeadm bootstrap token Secrets deleted (registered or deleted NodeClaims).",
         &l->tokens_deleted},
    };
    return nw_ctl_counters_write(out, v, sizeof v / sizeof *v);
}

static bool is_true(const cJSON *obj, const char *cond)
{
    const char *s = nw_json_condition(obj, cond);
    return s && strcmp(s, "True") == 0;
}

static bool rec_true(const nw_node_meta_t *m, const char *cond)
{
    return nw_node_meta_condition_status(m, cond) == NW_NODE_COND_TRUE;
}

static cJSON *obj_child(cJSON *o, const char *k, int array)
{
    cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (array ? cJSON_IsArray(v) : cJSON_IsObject(v))
        return v;
    cJSON_DeleteItemFromObjectCaseSensitive(o, k);
    return array ? cJSON_AddArrayToObject(o, k) : cJSON_AddObjectToObject(o, k);
}

static bool set_label(cJSON *labels, const char *k, const char *v)
{
    const char *cur = nw_json_str(labels, k);
    if (cur && strcmp(cur, v) == 0)
        return false;
    cJSON_DeleteItemFromObjectCaseSensitive(labels, k);
    cJSON_AddStringToObject(labels, k, v);
    return true;
}

static bool taint_eq(const nw_taint_t *a, const nw_taint_t *b)
{
    return strcmp(a->key, b->key) == 0 && a->effect == b->effect;
}

/* ---- kubeadm bootstrap tokens (scaler/nodeclaim/bootstrap.h) ---- */

static int cmp_boot(const void *a, const void *b)
{
    return strcmp(((const boot_t *)a)->uid, ((const boot_t *)b)->uid);
}

/* Was uid's token deleted? Its entry is marked seen. */
static bool boot_done(nw_lifecycle_t *l, const char *uid)
{
    boot_t key = {(char *)uid, NULL, false};
    boot_t *b = l->nboot_sorted
                    ? bsearch(&key, l->boot_done, l->nboot_sorted, sizeof *l->boot_done, cmp_boot)
                    : NULL;
    for (size_t i = l->nboot_sorted; !b && i < l->nboot_done; i++) /* marked this tick */
        if (strcmp(l->boot_done[i].uid, uid) == 0)
            b = &l->boot_done[i];
    if (b)
        b->seen = true;
    return b != NULL;
}

static void boot_mark(nw_lifecycle_t *l, const char *uid, const char *name)
{
    if (l->nboot_done == l->cap_boot_done) {
        size_t cap = l->cap_boot_done ? 2 * l->cap_boot_done : 64;
        boot_t *v = realloc(l->boot_done, cap * sizeof *v);
        if (!v)
            return;
        l->boot_done = v;
        l->cap_boot_done = cap;
    }
    boot_t b = {strdup(uid), strdup(name), true};
    if (b.uid && b.name)
        l->boot_done[l->nboot_done++] = b;
    else {
        free(b.uid);
        free(b.name);
    }
}

/* The memo of o (or *tmp, zeroed, when there is none); *fresh: to be filled. */
static facts_t *facts(nw_lifecycle_t *l, const nw_kube_obj_t *o, facts_t *tmp, bool *fresh)
{
    facts_t *f = nw_tickgate_memo(&l->gate, o, fresh);
    if (f)
        return f;
    memset(tmp, 0, sizeof *tmp);
    *fresh = true;
    return tmp;
}

/* nc's spec.nodeClassRef.name, NULL when it has none */
static const char *class_of(const nw_kube_obj_t *nc)
{
    return nc->nodeclaim->class_name[0] ? nc->nodeclaim->class_name : NULL;
}

/* Does nc's EC2NodeClass (its spec.nodeClassRef.name: cname) use nodewarden's kubeadm
 * bootstrap? */
static bool boot_class(nw_lifecycle_t *l, const nw_kube_snap_t *s, const char *cname)
{
    const nw_kube_obj_t *o = nw_tickgate_get(&l->classes, s, NW_KUBE_EC2NODECLASSES, cname);
    if (!o)
        return false;
    facts_t tmp;
    bool fresh;
    facts_t *f = facts(l, o, &tmp, &fresh);
    if (fresh)
        f->boot_wanted = nw_bootstrap_wanted(o->json);
    return f->boot_wanted;
}

/* Delete nc's token once it is no longer needed (registered, or the NodeClaim is going);
 * wanted: boot_class of its EC2NodeClass. False when it wrote (or tried to). */
static bool boot_token_done(nw_lifecycle_t *l, const nw_kube_obj_t *nc, bool wanted)
{
    const char *uid = wanted && nc->uid[0] ? nc->uid : NULL;
    if (!uid || boot_done(l, uid))
        return true;
    nw_err_t err = {0};
    if (nw_bootstrap_delete(l->deps->kube, uid, &err) != NW_OK) {
        nw_log_warn("lifecycle", "cannot delete the bootstrap token", NW_LS("nodeclaim", nc->name),
                    NW_LS("error", err.msg));
        return false;
    }
    atomic_fetch_add(&l->tokens_deleted, 1);
    boot_mark(l, uid, nc->name);
    return false;
}

/* Keep the NodeClaims that still exist (seen in this pass, or the same uid under the name),
 * sorted. */
static void boot_prune(nw_lifecycle_t *l, const nw_kube_snap_t *s)
{
    size_t j = 0;
    for (size_t i = 0; i < l->nboot_done; i++) {
        const nw_kube_obj_t *o =
            l->boot_done[i].seen
                ? NULL
                : nw_kube_cache_snap_get(s, NW_KUBE_NODECLAIMS, NULL, l->boot_done[i].name);
        if (l->boot_done[i].seen || (o && strcmp(o->uid, l->boot_done[i].uid) == 0))
            l->boot_done[j++] = l->boot_done[i];
        else {
            free(l->boot_done[i].uid);
            free(l->boot_done[i].name);
        }
    }
    l->nboot_done = j;
    if (l->nboot_sorted != l->nboot_done)
        qsort(l->boot_done, l->nboot_done, sizeof *l->boot_done, cmp_boot);
    l->nboot_sorted = l->nboot_done;
}

/* ---- registration: one update of the Node ---- */

typedef struct {
    const nw_node_claim_t *nc;
    const cJSON *pool; /* may be NULL */
    int warned_unregistered;
} reg_t;

/* "~" and "/" escaped for a JSON pointer (RFC 6901) */
static void ptr_escape(char *out, size_t n, const char *prefix, const char *key)
{
    size_t o = (size_t)snprintf(out, n, "%s", prefix);
    for (const char *p = key; *p && o + 3 < n; p++) {
        if (*p == '~' || *p == '/') {
            out[o++] = '~';
            out[o++] = *p == '~' ? '0' : '1';
        } else {
            out[o++] = *p;
        }
    }
    out[o < n ? o : n - 1] = 0;
}

static bool add_op(cJSON *ops, const char *op, const char *path, cJSON *value)
{
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddItemToArray(ops, o)) {
        cJSON_Delete(o);
        cJSON_Delete(value);
        return false;
    }
    if (!cJSON_AddStringToObject(o, "op", op) || !cJSON_AddStringToObject(o, "path", path)) {
        cJSON_Delete(value);
        return false;
    }
    if (value)
        cJSON_AddItemToObject(o, "value", value);
    return true;
}

static cJSON *taint_json(const nw_taint_t *t)
{
    cJSON *o = cJSON_CreateObject();
    if (o && (!cJSON_AddStringToObject(o, "key", t->key) ||
              (t->value[0] && !cJSON_AddStringToObject(o, "value", t->value)) ||
              !cJSON_AddStringToObject(o, "effect", nw_taints_effect_str(t->effect)))) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* The labels (or annotations) the Node is to carry: kv set on top of have, one op per key
 * that changes (the whole map when the Node has none: kept is whether it had any) */
typedef struct {
    const nw_node_kv_t *kv;
    size_t n;
} kvs_t;

static const char *kvs_get(const kvs_t *have, const cJSON *set, const char *k)
{
    const char *v = nw_json_str(set, k);
    if (v)
        return v;
    for (size_t i = 0; i < have->n; i++)
        if (strcmp(have->kv[i].key, k) == 0)
            return have->kv[i].value;
    return NULL;
}

static bool kvs_put(cJSON *set, const kvs_t *have, const char *k, const char *v, int *changed)
{
    const char *cur = kvs_get(have, set, k);
    if (cur && strcmp(cur, v) == 0)
        return true;
    *changed = 1;
    cJSON_DeleteItemFromObjectCaseSensitive(set, k);
    return cJSON_AddStringToObject(set, k, v) != NULL;
}

static bool kvs_ops(cJSON *ops, const char *path, const cJSON *set, bool had_map)
{
    if (!set->child)
        return true;
    if (!had_map)
        return add_op(ops, "add", path, cJSON_Duplicate(set, 1));
    char p[600], prefix[64];
    snprintf(prefix, sizeof prefix, "%s/", path);
    for (const cJSON *e = set->child; e; e = e->next) {
        ptr_escape(p, sizeof p, prefix, e->string);
        if (!add_op(ops, "add", p, cJSON_CreateString(e->valuestring)))
            return false;
    }
    return true;
}

/* The NodeClaim's labels and annotations and the pool template's labels onto the Node (in
 * set_l and set_a: what changes) */
static bool reg_meta(const reg_t *r, const kvs_t *hl, const kvs_t *ha, cJSON *set_l, cJSON *set_a,
                     int *changed)
{
    const nw_node_meta_t *m = &r->nc->m;
    for (size_t i = 0; i < m->nlabels; i++)
        if (!kvs_put(set_l, hl, m->labels[i].key, m->labels[i].value, changed))
            return false;
    const cJSON *l;
    cJSON_ArrayForEach(
        l,
        nw_json_get(nw_json_get(nw_json_get(nw_json_get(r->pool, "spec"), "template"), "metadata"),
                    "labels"))
    {
        if (cJSON_IsString(l) && !kvs_put(set_l, hl, l->string, l->valuestring, changed))
            return false;
    }
    /* the NodeClaim's annotations (the pool template's among them: registration.go syncNode) */
    for (size_t i = 0; i < m->nannotations; i++)
        if (!kvs_put(set_a, ha, m->annotations[i].key, m->annotations[i].value, changed))
            return false;
    return true;
}

/* The taints: karpenter.sh/unregistered lifted, the NodeClaim's taints and startup taints
 * added unless karpenter.sh/do-not-sync-taints (as ops on /spec/taints; the record's taints
 * are the Node's, in its order) */
static bool reg_taints(reg_t *r, const nw_node_t *node, const kvs_t *hl, const cJSON *set_l,
                       cJSON *ops, int *changed)
{
    const nw_taints_t *have = &node->m.taints;
    size_t left = have->n;
    int had_unreg = 0;
    char p[64];
    for (size_t i = have->n; i-- > 0;)
        if (strcmp(have->v[i].key, NW_TAINT_UNREGISTERED) == 0) {
            snprintf(p, sizeof p, "/spec/taints/%zu", i);
            if (!add_op(ops, "remove", p, NULL))
                return false;
            had_unreg = *changed = 1;
            left--;
        }
    r->warned_unregistered = !had_unreg && !kvs_get(hl, set_l, "karpenter.sh/registered");
    const char *dns = kvs_get(hl, set_l, "karpenter.sh/do-not-sync-taints");
    cJSON *added = cJSON_CreateArray();
    if (!added)
        return false;
    for (int k = 0; !(dns && strcmp(dns, "true") == 0) && k < 2; k++) {
        const nw_taints_t *want = k ? &r->nc->startup_taints : &r->nc->m.taints;
        for (size_t i = 0; i < want->n; i++) {
            bool on = false;
            for (size_t j = 0; j < have->n && !on; j++)
                on = strcmp(have->v[j].key, NW_TAINT_UNREGISTERED) != 0 &&
                     taint_eq(&have->v[j], &want->v[i]);
            const cJSON *x;
            cJSON_ArrayForEach(x, added)
            {
                on = on || (strcmp(nw_json_str(x, "key"), want->v[i].key) == 0 &&
                            strcmp(nw_json_str(x, "effect"),
                                   nw_taints_effect_str(want->v[i].effect)) == 0);
            }
            cJSON *t = on ? NULL : taint_json(&want->v[i]);
            if (!on && (!t || !cJSON_AddItemToArray(added, t))) {
                cJSON_Delete(t);
                cJSON_Delete(added);
                return false;
            }
        }
    }
    bool ok = true;
    if (added->child) {
        *changed = 1;
        if (!left) /* none left (or none at all): the list as it is to be */
            ok = add_op(ops, "add", "/spec/taints", cJSON_Duplicate(added, 1));
        for (const cJSON *t = added->child; ok && left && t; t = t->next)
            ok = add_op(ops, "add", "/spec/taints/-", cJSON_Duplicate(t, 1));
    } else if (have->n && !left) {
        ok = add_op(ops, "remove", "/spec/taints", NULL);
    }
    cJSON_Delete(added);
    return ok;
}

/* The registration of node for r->nc as a JSON patch held to the Node's resourceVersion:
 * *ops NULL when there is nothing to write. -1 when the Node is being deleted, or on out of
 * memory (then no write: the caller reads and decides again). */
static int register_ops(reg_t *r, const nw_node_t *node, cJSON **out)
{
    *out = NULL;
    if (node->m.terminating)
        return -1;
    kvs_t hl = {node->m.labels, node->m.nlabels}, ha = {node->m.annotations, node->m.nannotations};
    cJSON *ops = cJSON_CreateArray(), *set_l = cJSON_CreateObject(), *set_a = cJSON_CreateObject();
    int changed = 0;
    /* held to the version the records show (none known: unconditional, as a PUT without one) */
    bool ok = ops && set_l && set_a &&
              (!node->m.rv[0] ||
               add_op(ops, "test", "/metadata/resourceVersion", cJSON_CreateString(node->m.rv))) &&
              reg_meta(r, &hl, &ha, set_l, set_a, &changed) &&
              reg_taints(r, node, &hl, set_l, ops, &changed) &&
              kvs_put(set_l, &hl, "karpenter.sh/registered", "true", &changed) &&
              kvs_ops(ops, "/metadata/labels", set_l, node->m.nlabels > 0) &&
              kvs_ops(ops, "/metadata/annotations", set_a, node->m.has_annotations);
    if (ok && !nw_node_meta_has_finalizer(&node->m, NW_FINALIZER)) {
        changed = 1;
        ok = node->m.nfinalizers
                 ? add_op(ops, "add", "/metadata/finalizers/-", cJSON_CreateString(NW_FINALIZER))
                 : add_op(ops, "add", "/metadata/finalizers",
                          cJSON_CreateStringArray((const char *[]){NW_FINALIZER}, 1));
    }
    const char *uid = r->nc->m.uid;
    bool owned = false;
    for (size_t i = 0; i < node->m.nowners && !owned; i++)
        owned = strcmp(node->m.owner_uids[i], uid) == 0;
    if (ok && !owned && uid[0]) {
        cJSON *own = cJSON_CreateObject();
        ok = own && cJSON_AddStringToObject(own, "apiVersion", "karpenter.sh/v1") &&
             cJSON_AddStringToObject(own, "kind", "NodeClaim") &&
             cJSON_AddStringToObject(own, "name", r->nc->m.name) &&
             cJSON_AddStringToObject(own, "uid", uid) &&
             cJSON_AddBoolToObject(own, "blockOwnerDeletion", 1);
        cJSON *v = own;
        if (ok && !node->m.nowners && (v = cJSON_CreateArray()) != NULL)
            cJSON_AddItemToArray(v, own);
        else if (!ok || !v) {
            cJSON_Delete(own);
            ok = false;
        }
        ok = ok &&
             add_op(ops, "add",
                    node->m.nowners ? "/metadata/ownerReferences/-" : "/metadata/ownerReferences",
                    v);
        changed = 1;
    }
    cJSON_Delete(set_l);
    cJSON_Delete(set_a);
    if (!ok || !changed) {
        cJSON_Delete(ops);
        return ok ? 0 : -1;
    }
    *out = ops;
    return 0;
}

/* The same as a mutate function over the Node's JSON (the fallback's read, mutate and
 * write): labels, annotations, taints, finalizer, owner. */
static int mutate_register(cJSON *node, void *ud)
{
    reg_t *r = ud;
    int changed = 0;
    cJSON *md = obj_child(node, "metadata", 0);
    if (nw_json_get(md, "deletionTimestamp"))
        return -1;
    cJSON *labels = obj_child(md, "labels", 0);
    /* NodeClaim labels (pool template labels are in them), then the markers */
    const nw_node_meta_t *m = &r->nc->m;
    for (size_t i = 0; i < m->nlabels; i++)
        changed |= set_label(labels, m->labels[i].key, m->labels[i].value);
    const cJSON *l;
    cJSON_ArrayForEach(
        l,
        nw_json_get(nw_json_get(nw_json_get(nw_json_get(r->pool, "spec"), "template"), "metadata"),
                    "labels"))
    {
        if (cJSON_IsString(l))
            changed |= set_label(labels, l->string, l->valuestring);
    }
    /* the NodeClaim's annotations (the pool template's among them: registration.go syncNode) */
    cJSON *ann = obj_child(md, "annotations", 0);
    for (size_t i = 0; i < m->nannotations; i++)
        changed |= set_label(ann, m->annotations[i].key, m->annotations[i].value);
    r->warned_unregistered = 0;
    cJSON *taints = obj_child(obj_child(node, "spec", 0), "taints", 1);
    int had_unreg = 0;
    for (int i = cJSON_GetArraySize(taints) - 1; i >= 0; i--) {
        const char *k = nw_json_str(cJSON_GetArrayItem(taints, i), "key");
        if (k && strcmp(k, NW_TAINT_UNREGISTERED) == 0) {
            cJSON_DeleteItemFromArray(taints, i);
            had_unreg = changed = 1;
        }
    }
    if (!had_unreg && !nw_json_get(labels, "karpenter.sh/registered"))
        r->warned_unregistered = 1;
    if (!(nw_json_str(labels, "karpenter.sh/do-not-sync-taints") &&
          strcmp(nw_json_str(labels, "karpenter.sh/do-not-sync-taints"), "true") == 0)) {
        for (int k = 0; k < 2; k++) {
            const nw_taints_t *want = k ? &r->nc->startup_taints : &r->nc->m.taints;
            for (size_t i = 0; i < want->n; i++) {
                int have = 0;
                const cJSON *x;
                cJSON_ArrayForEach(x, taints)
                {
                    const char *xk = nw_json_str(x, "key"), *xe = nw_json_str(x, "effect");
                    if (xk && xe && strcmp(xk, want->v[i].key) == 0 &&
                        strcmp(xe, nw_taints_effect_str(want->v[i].effect)) == 0)
                        have = 1;
                }
                if (!have) {
                    cJSON_AddItemToArray(taints, taint_json(&want->v[i]));
                    changed = 1;
                }
            }
        }
    }
    if (cJSON_GetArraySize(taints) == 0)
        cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(node, "spec"),
                                                "taints");
    changed |= set_label(labels, "karpenter.sh/registered", "true");
    cJSON *fins = obj_child(md, "finalizers", 1);
    int hasfin = 0;
    const cJSON *f;
    cJSON_ArrayForEach(f, fins)
    {
        if (cJSON_IsString(f) && strcmp(f->valuestring, NW_FINALIZER) == 0)
            hasfin = 1;
    }
    if (!hasfin) {
        cJSON_AddItemToArray(fins, cJSON_CreateString(NW_FINALIZER));
        changed = 1;
    }
    cJSON *owners = obj_child(md, "ownerReferences", 1);
    const char *uid = m->uid[0] ? m->uid : NULL;
    int hasown = 0;
    const cJSON *o;
    cJSON_ArrayForEach(o, owners)
    {
        const char *ou = nw_json_str(o, "uid");
        if (ou && uid && strcmp(ou, uid) == 0)
            hasown = 1;
    }
    if (!hasown && uid) {
        cJSON *own = cJSON_CreateObject();
        cJSON_AddStringToObject(own, "apiVersion", "karpenter.sh/v1");
        cJSON_AddStringToObject(own, "kind", "NodeClaim");
        cJSON_AddStringToObject(own, "name", m->name);
        cJSON_AddStringToObject(own, "uid", uid);
        cJSON_AddBoolToObject(own, "blockOwnerDeletion", 1);
        cJSON_AddItemToArray(owners, own);
        changed = 1;
    }
    return changed ? 0 : 1;
}

typedef struct {
    nw_ctl_deps_t *c;
    const char *cond;
    const char *node_name; /* nullable */
    bool wrote;            /* the last mutate changed the NodeClaim (it was written) */
} cond_t;

static int mutate_condition(cJSON *nc, void *ud)
{
    cond_t *cd = ud;
    cd->wrote = false;
    if (is_true(nc, cd->cond) &&
        (!cd->node_name || (nw_json_str_at(nc, "status.nodeName") &&
                            strcmp(nw_json_str_at(nc, "status.nodeName"), cd->node_name) == 0)))
        return 1;
    int64_t now = nw_clock_now(cd->c->clock);
    if (nw_ctl_set_condition(nc, cd->cond, "True", cd->cond, "", now) != NW_OK)
        return 1; /* out of memory: no write this time */
    cJSON *st = cJSON_GetObjectItemCaseSensitive(nc, "status");
    if (cd->node_name) {
        cJSON_DeleteItemFromObjectCaseSensitive(st, "nodeName");
        if (!cJSON_AddStringToObject(st, "nodeName", cd->node_name))
            return 1;
    }
    if (is_true(nc, "Launched") && is_true(nc, "Registered") && is_true(nc, "Initialized") &&
        nw_ctl_set_condition(nc, "Ready", "True", "Ready", "", now) != NW_OK)
        return 1;
    cd->wrote = true;
    return 0;
}

/* Karpenter's initialization checks (requested extended resources registered in full,
 * not only non-zero: shared GPUs); on failure *why says what is missing. */
static bool node_initialized(const nw_node_claim_t *nc, const nw_node_t *node, const char **why)
{
    if (node->ready != NW_NODE_COND_TRUE) {
        *why = "node not ready";
        return false;
    }
    const nw_taints_t *taints = &node->m.taints;
    for (size_t i = 0; i < nc->startup_taints.n; i++)
        for (size_t k = 0; k < taints->n; k++)
            if (taint_eq(&taints->v[k], &nc->startup_taints.v[i])) {
                *why = "startup taint remains";
                return false;
            }
    static const char *const ephemeral[] = {
        "node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable",
        "node.cloudprovider.kubernetes.io/uninitialized", NW_TAINT_UNREGISTERED};
    for (size_t k = 0; k < taints->n; k++)
        for (size_t i = 0; i < sizeof ephemeral / sizeof *ephemeral; i++)
            if (strcmp(taints->v[k].key, ephemeral[i]) == 0) {
                *why = "ephemeral taint remains";
                return false;
            }
    for (size_t i = 0; i < nw_resources_len(&nc->requests); i++) {
        const char *name = nw_resources_name_at(&nc->requests, i);
        nw_quantity_t want = nw_resources_at(&nc->requests, i), have;
        if (!strchr(name, '/') || want.milli <= 0)
            continue; /* only extended resources (vendor-domain names) */
        if (!nw_resources_get(&node->allocatable, name, &have) || have.milli <= 0) {
            *why = "requested extended resource not registered";
            return false;
        }
        /* and registered in full: a shared GPU's replicas or MIG slices appear when the
         * device plugin takes its configuration, which may follow the first count */
        if (nw_quantity_cmp(have, want) < 0) {
            *why = "requested extended resource not registered in full";
            return false;
        }
    }
    return true;
}

/* ---- the registration and initialization writes, on threads of their own ----
 *
 * Registering a NodeClaim is two read-modify-writes (the Node: labels, taints, finalizer,
 * owner; then the NodeClaim's Registered condition), initializing it two more (the Node's
 * karpenter.sh/initialized label; then Initialized and Ready). One at a time on the
 * reconcile thread, a scale-out of a thousand nodes waited seconds for them; so the tick
 * only decides, and a job per NodeClaim does the writes on up to JOB_THREADS threads. Within
 * a job the order is the sequential one (the Node before the NodeClaim, the crash point
 * "registering" between them); a NodeClaim has at most one job at a time, and after a
 * finished one it is looked at again only once the cache holds a newer version of it, so
 * initialization never starts before its registration is seen. The Events, the counters
 * and the bootstrap token follow on the reconcile thread when the job is collected (the
 * next tick), and only for a condition the job itself set. */

static void job_free(job_t *j)
{
    if (!j)
        return;
    free(j->uid);
    free(j->node_name);
    nw_kube_cache_obj_release(j->nc);
    nw_kube_cache_obj_release(j->node);
    nw_kube_cache_obj_release(j->pool_obj);
    free(j);
}

/* A failed test of the resourceVersion (422) or a conflict: the object changed since the
 * snapshot */
static bool changed_since(nw_rc_t rc, const nw_err_t *err)
{
    return rc == NW_ECONFLICT || (rc == NW_EKUBE && strstr(err->msg, "HTTP 422"));
}

/* The Node's registration, from the records (no read): a JSON patch held to the Node's
 * resourceVersion; when the Node changed since (or is being deleted) the read, mutate and
 * write of nw_kube_write_update_retry. */
static nw_rc_t register_node(nw_ctl_deps_t *c, job_t *j, reg_t *r, nw_err_t *err)
{
    cJSON *ops = NULL;
    nw_rc_t rc = NW_ECONFLICT;
    if (register_ops(r, j->node->node, &ops) == 0) {
        char *body = ops ? cJSON_PrintUnformatted(ops) : NULL;
        if (!ops)
            rc = NW_OK; /* nothing to write */
        else if (body)
            rc = nw_kube_write_patch(c->kube, &nw_kube_client_res_nodes, NULL, j->node_name,
                                     NW_KUBE_PATCH_JSON, body, 0, NULL, err);
        cJSON_free(body);
        cJSON_Delete(ops);
    }
    if (rc != NW_ECONFLICT && !changed_since(rc, err))
        return rc;
    nw_err_clear(err);
    return nw_kube_write_update_retry(c->kube, &nw_kube_client_res_nodes, NULL, j->node_name, 0,
                                      mutate_register, r, 5, NULL, err);
}

static void job_register(nw_ctl_deps_t *c, job_t *j)
{
    const char *ncname = j->nc->name;
    reg_t r = {j->nc->nodeclaim, j->pool, 0};
    nw_err_t err = {0};
    if (register_node(c, j, &r, &err) != NW_OK) {
        nw_log_warn("lifecycle", "cannot register the node", NW_LS("node", j->node_name),
                    NW_LS("nodeclaim", ncname), NW_LS("error", err.msg));
        return;
    }
    j->node_ok = true;
    j->warned_unregistered = r.warned_unregistered;
    nw_ctl_fault(c, "registering", ncname); /* crash point (scaler/ctl/ctl.h) */
    cond_t cd = {c, "Registered", j->node_name, false};
    nw_err_clear(&err);
    if (nw_ctl_claim_status_update(c, j->nc->nodeclaim, mutate_condition, &cd, &err) != NW_OK) {
        nw_log_warn("lifecycle", "cannot mark the NodeClaim registered", NW_LS("nodeclaim", ncname),
                    NW_LS("error", err.msg));
        return;
    }
    j->ok = true;
    j->wrote = cd.wrote;
}

static void job_initialize(nw_ctl_deps_t *c, job_t *j)
{
    const char *ncname = j->nc->name;
    nw_err_t err = {0};
    const char *have = nw_node_meta_label(&j->node->node->m, "karpenter.sh/initialized");
    /* the label alone, as a merge patch: nothing else of the Node is read or written */
    if (!(have && strcmp(have, "true") == 0) &&
        nw_kube_write_patch(c->kube, &nw_kube_client_res_nodes, NULL, j->node_name,
                            NW_KUBE_PATCH_MERGE,
                            "{\"metadata\":{\"labels\":{\"karpenter.sh/initialized\":\"true\"}}}",
                            0, NULL, &err) != NW_OK) {
        nw_log_warn("lifecycle", "cannot label the node initialized", NW_LS("node", j->node_name),
                    NW_LS("error", err.msg));
        return;
    }
    j->node_ok = true;
    cond_t cd = {c, "Initialized", NULL, false};
    nw_err_clear(&err);
    if (nw_ctl_claim_status_update(c, j->nc->nodeclaim, mutate_condition, &cd, &err) != NW_OK) {
        nw_log_warn("lifecycle", "cannot mark the NodeClaim initialized",
                    NW_LS("nodeclaim", ncname), NW_LS("error", err.msg));
        return;
    }
    j->ok = true;
    j->wrote = cd.wrote;
}

/* Run a job on a pool thread (no write while another replica leads). */
static void job_run(nw_workers_job_t *job, void *ud)
{
    nw_lifecycle_t *l = ud;
    job_t *j = (job_t *)job;
    if (!nw_ctl_may_write(l->deps))
        return;
    if (j->kind == JOB_REGISTER)
        job_register(l->deps, j);
    else
        job_initialize(l->deps, j);
}

static void job_drop(nw_workers_job_t *job)
{
    job_free((job_t *)job);
}

void nw_lifecycle_wait(nw_lifecycle_t *l)
{
    nw_workers_wait(l->jobs);
}

/* ---- the NodeClaims with a job out (the reconcile thread's) ---- */

/* Does nc want a job now? Not while one is out, nor after one on this version of it
 * (had_job) that came back done; at once after one that failed. */
static bool job_wanted(nw_lifecycle_t *l, const nw_kube_obj_t *nc, bool had_job)
{
    long st = nw_uidmap_get(&l->jobs_out, nc->uid);
    if (st == JOB_OUT)
        return false;
    if (st == JOB_FAILED) {
        nw_uidmap_del(&l->jobs_out, nc->uid);
        return true;
    }
    return !had_job;
}

/* After a whole pass: the failed jobs of claims that no longer want one are forgotten. */
static void jobs_forget_failed(nw_lifecycle_t *l)
{
    for (size_t i = 0; i < l->jobs_out.cap; i++)
        if (l->jobs_out.v[i].key[0] && l->jobs_out.v[i].val == JOB_FAILED) {
            char k[NW_UIDMAP_KEY];
            memcpy(k, l->jobs_out.v[i].key, sizeof k);
            nw_uidmap_del(&l->jobs_out, k);
            i = (size_t)-1; /* the table may have moved entries: from the start */
        }
}

/* Submit a job for nc (node: its Node); false when it could not be. */
static bool submit(nw_lifecycle_t *l, const nw_kube_snap_t *s, job_kind_t kind,
                   const nw_kube_obj_t *nc, const nw_kube_obj_t *node)
{
    job_t *j = calloc(1, sizeof *j);
    if (!j)
        return false;
    j->kind = kind;
    j->uid = strdup(nc->uid);
    j->node_name = strdup(node->name);
    j->nc = nw_kube_cache_obj_hold(nc);
    j->node = nw_kube_cache_obj_hold(node);
    const nw_kube_obj_t *pool =
        kind == JOB_REGISTER ? nw_kube_cache_snap_get(s, NW_KUBE_NODEPOOLS, NULL, nc->nodepool)
                             : NULL;
    j->pool_obj = pool ? nw_kube_cache_obj_hold(pool) : NULL;
    j->pool = pool ? pool->json : NULL;
    if (!j->uid || !j->node_name || nw_uidmap_put(&l->jobs_out, nc->uid, JOB_OUT) != NW_OK) {
        job_free(j);
        return false;
    }
    l->njobs_out++;
    nw_workers_submit(l->jobs, &j->link);
    return true;
}

/* Submit a job for nc unless it has had one (or has one out); false when one was submitted
 * (a write is coming), else complete. */
static bool claim_job(nw_lifecycle_t *l, const nw_kube_snap_t *s, job_kind_t kind,
                      const nw_kube_obj_t *nc, const nw_kube_obj_t *node, bool had_job,
                      bool complete)
{
    if (!job_wanted(l, nc, had_job))
        return complete;
    if (!submit(l, s, kind, nc, node))
        return false; /* tried again on the next tick */
    facts_t tmp;
    bool fresh;
    facts(l, nc, &tmp, &fresh)->job = true;
    return false;
}

/* What follows a finished registration on the reconcile thread. */
static void after_register(nw_lifecycle_t *l, const nw_kube_snap_t *s, const job_t *j)
{
    nw_ctl_deps_t *c = l->deps;
    if (j->warned_unregistered)
        nw_ctl_obj_event(
            c, &nw_kube_client_res_nodes, j->node, "Warning", "UnregisteredTaintMissing",
            "node registered without the karpenter.sh/unregistered:NoExecute taint; pods may "
            "have been scheduled before its labels and taints were applied");
    if (!j->ok || !j->wrote)
        return;
    const char *ncname = j->nc->name;
    atomic_fetch_add(&l->registered, 1);
    /* the kubelet has its credentials: the token is spent */
    const nw_kube_obj_t *nc = nw_kube_cache_snap_get(s, NW_KUBE_NODECLAIMS, NULL, ncname);
    if (nc && strcmp(nc->uid, j->uid) == 0)
        (void)boot_token_done(l, nc, boot_class(l, s, class_of(nc)));
    static const char *const created[] = {NW_LABEL_NODEPOOL, "topology.kubernetes.io/zone"};
    nw_kmetrics_count_labels_of(c->series, &NW_KMETRICS_NODES_CREATED, &j->nc->nodeclaim->m,
                                created);
    nw_log_info("lifecycle", "registered", NW_LS("nodeclaim", ncname), NW_LS("node", j->node_name),
                NW_LS("providerID", j->nc->nodeclaim->provider_id));
    char msg[600];
    snprintf(msg, sizeof msg,
             "Status condition transitioned, Type: Registered, Status: True, "
             "Node: %s",
             j->node_name);
    nw_ctl_obj_event(c, &nw_kube_client_res_nodeclaims, j->nc, "Normal", "Registered", msg);
}

static void after_initialize(nw_lifecycle_t *l, const job_t *j)
{
    if (!j->ok || !j->wrote)
        return;
    const char *ncname = j->nc->name;
    atomic_fetch_add(&l->initialized, 1);
    nw_log_info("lifecycle", "initialized", NW_LS("nodeclaim", ncname),
                NW_LS("node", j->node_name));
    nw_ctl_obj_event(l->deps, &nw_kube_client_res_nodeclaims, j->nc, "Normal", "Initialized",
                     "Status condition transitioned, Type: Initialized, Status: True");
}

/* Take the finished jobs: their Events and counters; a claim whose job failed may get
 * another at once, one that succeeded once the cache shows a newer version of it (the memo's
 * `job` is per version). The number collected. */
static size_t collect(nw_lifecycle_t *l, const nw_kube_snap_t *s)
{
    nw_workers_job_t *d = nw_workers_collect(l->jobs, NULL);
    size_t n = 0;
    for (nw_workers_job_t *jj = d, *nx; jj; jj = nx, n++) {
        nx = jj->next;
        job_t *j = (job_t *)jj;
        if (j->kind == JOB_REGISTER)
            after_register(l, s, j);
        else
            after_initialize(l, j);
        if (nw_uidmap_get(&l->jobs_out, j->uid) == JOB_OUT) {
            l->njobs_out--;
            if (j->ok)
                nw_uidmap_del(&l->jobs_out, j->uid);
            else /* the slot is there already: no allocation */
                (void)nw_uidmap_put(&l->jobs_out, j->uid, JOB_FAILED);
        }
        job_free(j);
    }
    return n;
}

/* When did the NodeClaim launch (Launched transition, else creation); 0 unknown. */
static int64_t launched_at(const nw_node_claim_t *nc)
{
    const nw_node_cond_t *l = nw_node_meta_condition(&nc->m, "Launched");
    return l && l->since ? l->since : nc->m.created;
}

/* ---- EC2NodeClass status ---- */

static void keep_transition_times(const cJSON *old, cJSON *nw)
{
    cJSON *cd;
    cJSON_ArrayForEach(cd, nw_json_get(nw, "conditions"))
    {
        const char *t = nw_json_str(cd, "type");
        const char *st = nw_json_str(cd, "status");
        const cJSON *o;
        cJSON_ArrayForEach(o, nw_json_get(old, "conditions"))
        {
            const char *ot = nw_json_str(o, "type");
            const char *os = nw_json_str(o, "status");
            const cJSON *lt = nw_json_get(o, "lastTransitionTime");
            if (t && ot && st && os && lt && strcmp(t, ot) == 0 && strcmp(st, os) == 0) {
                cJSON_DeleteItemFromObjectCaseSensitive(cd, "lastTransitionTime");
                cJSON_AddItemToObject(cd, "lastTransitionTime", cJSON_Duplicate(lt, 1));
            }
        }
    }
}

static int mutate_status(cJSON *obj, void *ud)
{
    cJSON *st = cJSON_Duplicate((const cJSON *)ud, 1);
    keep_transition_times(nw_json_get(obj, "status"), st);
    /* observedGeneration follows the object */
    const cJSON *gen = nw_json_get(nw_json_get(obj, "metadata"), "generation");
    cJSON *cd;
    cJSON_ArrayForEach(cd, nw_json_get(st, "conditions"))
    {
        cJSON_DeleteItemFromObjectCaseSensitive(cd, "observedGeneration");
        if (cJSON_IsNumber(gen))
            cJSON_AddNumberToObject(cd, "observedGeneration", gen->valuedouble);
    }
    if (cJSON_Compare(nw_json_get(obj, "status"), st, 1)) {
        cJSON_Delete(st);
        return 1;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(obj, "status");
    cJSON_AddItemToObject(obj, "status", st);
    return 0;
}

/* Does every condition's observedGeneration match metadata.generation? */
static bool observed_current(const cJSON *obj)
{
    const cJSON *gen = nw_json_get(nw_json_get(obj, "metadata"), "generation"), *cd;
    cJSON_ArrayForEach(cd, nw_json_get(nw_json_get(obj, "status"), "conditions"))
    {
        const cJSON *og = nw_json_get(cd, "observedGeneration");
        if (cJSON_IsNumber(gen) && (!cJSON_IsNumber(og) || og->valuedouble != gen->valuedouble))
            return false;
    }
    return true;
}

/* false when a class's status is not Ready for its generation (it is resolved again on
 * every tick until it is) or a write was made or tried */
static bool nodeclass_status(nw_lifecycle_t *l, const nw_kube_snap_t *s)
{
    nw_ctl_deps_t *c = l->deps;
    int64_t mono = nw_clock_mono(c->clock);
    int due = mono >= l->next_nodeclass_mono;
    bool complete = true;
    if (due)
        l->next_nodeclass_mono =
            mono + (l->o.nodeclass_every_ns > 0 && l->o.nodeclass_every_ns < NODECLASS_EVERY_NS
                        ? l->o.nodeclass_every_ns
                        : NODECLASS_EVERY_NS);
    for (size_t i = 0; i < nw_kube_cache_snap_count(s, NW_KUBE_EC2NODECLASSES); i++) {
        const nw_kube_obj_t *o = nw_kube_cache_snap_at(s, NW_KUBE_EC2NODECLASSES, i);
        if (!nw_ctl_may_write(c))
            complete = false;
        if (o->terminating || !nw_ctl_may_write(c))
            continue;
        bool settled = nw_json_condition(o->json, "Ready") && observed_current(o->json);
        if (!settled)
            complete = false; /* resolved again on the next tick */
        if (!due && settled)
            continue; /* between refreshes only new or changed classes are resolved */
        const nw_cloud_class_t *r = NULL;
        nw_err_t err = {0};
        if (c->cloud->ops->resolve(c->cloud, o->json, &r, &err) != NW_OK || !r) {
            nw_log_warn("lifecycle", "cannot resolve the EC2NodeClass",
                        NW_LS("ec2nodeclass", o->name), NW_LS("error", err.msg));
            l->next_nodeclass_mono = mono + 5 * NW_NS_PER_SEC;
            continue;
        }
        /* a class that is not ready is looked at again sooner: what it waits for (a
         * ServiceCIDR, a role) may appear at any time */
        if (!r->ready && l->next_nodeclass_mono > mono + UNREADY_EVERY_NS)
            l->next_nodeclass_mono = mono + UNREADY_EVERY_NS;
        cJSON *st = NULL;
        if (c->cloud->ops->class_status(c->cloud, o->json, nw_clock_now(c->clock), &st, &err) !=
                NW_OK ||
            !st) {
            nw_log_warn("lifecycle", "cannot build the EC2NodeClass status",
                        NW_LS("ec2nodeclass", o->name), NW_LS("error", err.msg));
            continue;
        }
        cJSON *probe = cJSON_Duplicate(o->json, 1);
        int need = probe && mutate_status(probe, st) == 0;
        cJSON_Delete(probe);
        if (need || !probe)
            complete = false;
        if (need &&
            nw_kube_write_update_retry(c->kube, &nw_kube_client_res_ec2nodeclasses, NULL, o->name,
                                       1, mutate_status, st, 5, NULL, &err) != NW_OK)
            nw_log_warn("lifecycle", "cannot write the EC2NodeClass status",
                        NW_LS("ec2nodeclass", o->name), NW_LS("error", err.msg));
        else if (need)
            nw_log_info("lifecycle", "EC2NodeClass status written", NW_LS("ec2nodeclass", o->name),
                        NW_LB("ready", r->ready), NW_LS("reason", r->reason));
        cJSON_Delete(st);
    }
    return complete;
}

#define NC_FINALIZER "karpenter.k8s.aws/termination"

static bool has_nc_finalizer(const cJSON *obj)
{
    const cJSON *f;
    cJSON_ArrayForEach(f, nw_json_get(nw_json_get(obj, "metadata"), "finalizers"))
    {
        if (cJSON_IsString(f) && strcmp(f->valuestring, NC_FINALIZER) == 0)
            return true;
    }
    return false;
}

/* The EC2NodeClass finalizer (aws/karpenter-provider-aws pkg/controllers/nodeclass/
 * controller.go finalize): every class gets karpenter.k8s.aws/termination; a class being
 * deleted keeps it while a NodeClaim refers to it, then the cloud deletes what it made for
 * the class (launch templates, instance profiles) and the finalizer goes. */
/* false when a write was made or tried */
static bool nodeclass_finalizers(nw_lifecycle_t *l, const nw_kube_snap_t *s)
{
    nw_ctl_deps_t *c = l->deps;
    bool complete = true;
    for (size_t i = 0; i < nw_kube_cache_snap_count(s, NW_KUBE_EC2NODECLASSES); i++) {
        if (!nw_ctl_may_write(c))
            return false;
        const nw_kube_obj_t *o = nw_kube_cache_snap_at(s, NW_KUBE_EC2NODECLASSES, i);
        nw_err_t err = {0};
        int has = has_nc_finalizer(o->json);
        if (!o->terminating) {
            if (has)
                continue;
            complete = false;
            if (nw_kube_write_finalizer_add(c->kube, &nw_kube_client_res_ec2nodeclasses, NULL,
                                            o->name, NC_FINALIZER, &err) != NW_OK)
                nw_log_warn("lifecycle", "cannot add the EC2NodeClass finalizer",
                            NW_LS("ec2nodeclass", o->name), NW_LS("error", err.msg));
            continue;
        }
        if (!has)
            continue;
        size_t claims = 0;
        for (size_t k = 0; k < nw_kube_cache_snap_count(s, NW_KUBE_NODECLAIMS); k++) {
            const nw_node_claim_t *r = nw_kube_cache_snap_at(s, NW_KUBE_NODECLAIMS, k)->nodeclaim;
            const char *g = r->class_group;
            if (strcmp(r->class_name, o->name) == 0 &&
                (!g[0] || strcmp(g, "karpenter.k8s.aws") == 0))
                claims++;
        }
        if (claims > 0)
            continue; /* WaitingOnNodeClaimTermination */
        complete = false;
        if (c->cloud->ops->finalize_class &&
            c->cloud->ops->finalize_class(c->cloud, o->json, &err) != NW_OK) {
            nw_log_warn("lifecycle", "cannot clean up after the EC2NodeClass",
                        NW_LS("ec2nodeclass", o->name), NW_LS("error", err.msg));
            continue;
        }
        if (nw_kube_write_finalizer_remove(c->kube, &nw_kube_client_res_ec2nodeclasses, NULL,
                                           o->name, NC_FINALIZER, &err) != NW_OK)
            nw_log_warn("lifecycle", "cannot remove the EC2NodeClass finalizer",
                        NW_LS("ec2nodeclass", o->name), NW_LS("error", err.msg));
        else
            nw_log_info("lifecycle", "EC2NodeClass finalized", NW_LS("ec2nodeclass", o->name));
    }
    return complete;
}

/* The registration timeout: nc never registered in time is deleted; false when it was. */
static bool registration_timeout(nw_lifecycle_t *l, const nw_kube_obj_t *nc)
{
    nw_ctl_deps_t *c = l->deps;
    char msg[256];
    snprintf(msg, sizeof msg,
             "node did not register within the registration timeout (%llds); "
             "deleting the NodeClaim",
             (long long)(l->o.registration_timeout_ns / NW_NS_PER_SEC));
    nw_log_warn("lifecycle", "registration timeout", NW_LS("nodeclaim", nc->name),
                NW_LS("providerID", nc->provider_id));
    nw_ctl_obj_event(c, &nw_kube_client_res_nodeclaims, nc, "Warning", "RegistrationTimeout", msg);
    atomic_fetch_add(&l->reg_timeouts, 1);
    /* best effort: a NodeClaim left behind times out again next tick */
    (void)nw_kube_write_delete(c->kube, &nw_kube_client_res_nodeclaims, NULL, nc->name, NULL, NULL,
                               NULL);
    return false;
}

/* One NodeClaim; false when it wrote (or tried to). *due: when its registration times out.
 * classes_same: no EC2NodeClass changed since the last pass. */
static bool one_claim(nw_lifecycle_t *l, const nw_kube_snap_t *s, const nw_kube_obj_t *nc,
                      int64_t now, bool classes_same, int64_t *due)
{
    facts_t tmp;
    bool fresh;
    facts_t *f = facts(l, nc, &tmp, &fresh);
    if (fresh) {
        f->registered = rec_true(&nc->nodeclaim->m, "Registered");
        f->initialized = rec_true(&nc->nodeclaim->m, "Initialized");
        f->launched = launched_at(nc->nodeclaim);
        f->cname = class_of(nc);
        f->has_pid = nc->provider_id[0] != 0;
    }
    if (!classes_same)
        f->boot_known = false;
    /* f may move with the next memo lookup (boot_class): copy what is needed */
    facts_t now_f = *f;
    bool complete = true;
    if (nc->terminating || now_f.registered) {
        bool wanted = now_f.boot;
        if (!now_f.boot_known) {
            wanted = boot_class(l, s, now_f.cname);
            f = facts(l, nc, &tmp, &fresh);
            f->boot = wanted;
            f->boot_known = true;
        }
        complete = boot_token_done(l, nc, wanted); /* once per NodeClaim and process */
    }
    if (nc->terminating)
        return complete; /* scaler/termination */
    if (!now_f.has_pid)
        return complete;
    if (now_f.registered && now_f.initialized)
        return complete;
    const nw_kube_obj_t *node = nw_kube_cache_snap_node_by_provider_id(s, nc->provider_id);
    if (!now_f.registered) {
        if (node && !node->terminating) {
            if (!nw_nominate_may_register(l->o.nominate, node->name,
                                          nw_kube_cache_snap_generation(s)))
                return false; /* its pods' nominations first: looked at again next tick */
            if (!nw_cohort_ready(l->o.cohorts, s, nc->name, now, due))
                return false; /* the Nodes its batch's spread counts on first (cohort.h) */
            return claim_job(l, s, JOB_REGISTER, nc, node, now_f.job, complete);
        }
        if (now_f.launched && now - now_f.launched > l->o.registration_timeout_ns)
            return registration_timeout(l, nc);
        if (now_f.launched) /* not a moment later than needed */
            *due = nw_tickgate_min(*due, now_f.launched + l->o.registration_timeout_ns + 1);
        return complete;
    }
    if (!node)
        return complete;
    /* Karpenter's initialization checks read the NodeClaim and the Node: judged again when
     * either changes */
    bool init_ok = now_f.init_ok;
    if (now_f.init_node != node) {
        const char *why = NULL;
        init_ok = node_initialized(nc->nodeclaim, node->node, &why);
        f = facts(l, nc, &tmp, &fresh);
        f->init_node = node;
        f->init_ok = init_ok;
    }
    if (!init_ok)
        return complete;
    return claim_job(l, s, JOB_INITIALIZE, nc, node, now_f.job, complete);
}

void nw_lifecycle_tick(nw_lifecycle_t *l, const nw_kube_snap_t *s)
{
    nw_ctl_deps_t *c = l->deps;
    int64_t now = nw_clock_now(c->clock), mono = nw_clock_mono(c->clock);
    memset(&l->classes, 0, sizeof l->classes);
    /* the EC2NodeClasses: their finalizer and status, when one of them or a NodeClaim
     * changed or the status refresh is due */
    if (!nw_tickgate_quiet(&l->classes_gate, s, mono, now)) {
        bool complete = nodeclass_finalizers(l, s);
        complete &= nodeclass_status(l, s);
        nw_tickgate_ran(&l->classes_gate, s, complete, l->next_nodeclass_mono, NW_TICKGATE_NEVER);
    }
    /* the registration and initialization jobs finished since the last tick */
    (void)collect(l, s);
    /* the NodeClaims: nothing when no NodeClaim, Node or EC2NodeClass changed, no
     * registration timeout is due and no job is out */
    if (nw_tickgate_quiet(&l->gate, s, mono, now))
        return;
    bool classes_same = nw_tickgate_same(&l->gate, s, NW_KUBE_EC2NODECLASSES);
    bool complete = true;
    for (size_t i = 0; i < l->nboot_done; i++)
        l->boot_done[i].seen = false;
    int64_t due = NW_TICKGATE_NEVER;
    for (size_t i = 0; i < nw_kube_cache_snap_count(s, NW_KUBE_NODECLAIMS); i++) {
        if (!nw_ctl_may_write(c)) {
            complete = false;
            break;
        }
        complete &= one_claim(l, s, nw_kube_cache_snap_at(s, NW_KUBE_NODECLAIMS, i), now,
                              classes_same, &due);
    }
    if (nw_ctl_may_write(c)) {
        boot_prune(l, s);
        jobs_forget_failed(l);
    }
    complete &= l->njobs_out == 0; /* looked at again until every job is back */
    nw_tickgate_ran(&l->gate, s, complete, NW_TICKGATE_NEVER, due);
}
