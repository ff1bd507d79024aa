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

#include "common/log.h"
#include "common/strs.h"
#include "scaler/nodeclaim/bootstrap.h"
#include "scaler/controllers/lifecycle.h"
#include "scaler/metrics/kmetrics.h"

#define NODECLASS_EVERY_NS (30 * NW_NS_PER_SEC)

struct nw_lifecycle {
    nw_ctl_deps_t *deps;
    nw_lifecycle_opts_t o;
    int64_t next_nodeclass_mono; /* the next EC2NodeClass status refresh */
    _Atomic uint64_t registered, initialized, reg_timeouts, tokens_deleted;
    /* uids of NodeClaims whose bootstrap token this process deleted (sorted after a tick;
     * pruned to the NodeClaims that still exist) */
    char **boot_done;
    size_t nboot_done, cap_boot_done, nboot_sorted; /* [0, nboot_sorted) sorted */
};

nw_lifecycle_t *nw_lifecycle_new(nw_ctl_deps_t *deps, const nw_lifecycle_opts_t *o)
{
    nw_lifecycle_t *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->deps = deps;
    if (o)
        l->o = *o;
    return l;
}

void nw_lifecycle_free(nw_lifecycle_t *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->nboot_done; i++)
        free(l->boot_done[i]);
    free(l->boot_done);
    free(l);
}

void nw_lifecycle_reset(nw_lifecycle_t *l)
{
    if (l)
        l->next_nodeclass_mono = 0;
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

static bool taint_eq(const cJSON *a, const cJSON *b)
{
    const char *ka = nw_json_str(a, "key"), *kb = nw_json_str(b, "key");
    const char *ea = nw_json_str(a, "effect"), *eb = nw_json_str(b, "effect");
    return ka && kb && ea && eb && strcmp(ka, kb) == 0 && strcmp(ea, eb) == 0;
}

/* ---- kubeadm bootstrap tokens (scaler/nodeclaim/bootstrap.h) ---- */

static bool boot_done(const nw_lifecycle_t *l, const char *uid)
{
    if (l->nboot_sorted &&
        bsearch(&uid, l->boot_done, l->nboot_sorted, sizeof *l->boot_done, nw_strs_cmp))
        return true;
    for (size_t i = l->nboot_sorted; i < l->nboot_done; i++) /* marked this tick */
        if (strcmp(l->boot_done[i], uid) == 0)
            return true;
    return false;
}

static void boot_mark(nw_lifecycle_t *l, const char *uid)
{
    if (l->nboot_done == l->cap_boot_done) {
        size_t cap = l->cap_boot_done ? 2 * l->cap_boot_done : 64;
        char **v = realloc(l->boot_done, cap * sizeof *v);
        if (!v)
            return;
        l->boot_done = v;
        l->cap_boot_done = cap;
    }
    char *d = strdup(uid);
    if (d)
        l->boot_done[l->nboot_done++] = d;
}

/* Does nc's EC2NodeClass use nodewarden's kubeadm bootstrap? */
static bool boot_class(const nw_kube_snap_t *s, const nw_kube_obj_t *nc)
{
    const char *cls = nw_json_str_at(nc->json, "spec.nodeClassRef.name");
    const nw_kube_obj_t *o =
        cls ? nw_kube_cache_snap_get(s, NW_KUBE_EC2NODECLASSES, NULL, cls) : NULL;
    return o && nw_bootstrap_wanted(o->json);
}

/* Delete nc's token once it is no longer needed (registered, or the NodeClaim is going). */
static void boot_token_done(nw_lifecycle_t *l, const nw_kube_snap_t *s, const nw_kube_obj_t *nc)
{
    const char *uid = nw_json_str_at(nc->json, "metadata.uid");
    if (!uid || boot_done(l, uid) || !boot_class(s, nc))
        return;
    nw_err_t err = {0};
    if (nw_bootstrap_delete(l->deps->kube, uid, &err) != NW_OK) {
        nw_log_warn("lifecycle", "cannot delete the bootstrap token", NW_LS("nodeclaim", nc->name),
                    NW_LS("error", err.msg));
        return;
    }
    atomic_fetch_add(&l->tokens_deleted, 1);
    boot_mark(l, uid);
}

/* Keep the uids of NodeClaims that still exist, sorted. */
static void boot_prune(nw_lifecycle_t *l, const nw_kube_snap_t *s)
{
    size_t n = nw_kube_cache_snap_count(s, NW_KUBE_NODECLAIMS);
    const char **live = n ? malloc(n * sizeof *live) : NULL;
    size_t nl = 0;
    for (size_t i = 0; live && i < n; i++) {
        const char *uid =
            nw_json_str_at(nw_kube_cache_snap_at(s, NW_KUBE_NODECLAIMS, i)->json, "metadata.uid");
        if (uid)
            live[nl++] = uid;
    }
    if (live)
        qsort(live, nl, sizeof *live, nw_strs_cmp);
    int known = n == 0 || live; /* out of memory: keep everything */
    size_t j = 0;
    for (size_t i = 0; i < l->nboot_done; i++) {
        const char *u = l->boot_done[i];
        if (known && (!nl || !bsearch(&u, live, nl, sizeof *live, nw_strs_cmp)))
            free(l->boot_done[i]);
        else
            l->boot_done[j++] = l->boot_done[i];
    }
    l->nboot_done = j;
    free(live);
    if (l->nboot_done)
        qsort(l->boot_done, l->nboot_done, sizeof *l->boot_done, nw_strs_cmp);
    l->nboot_sorted = l->nboot_done;
}

/* ---- registration: one update of the Node ---- */

typedef struct {
    const cJSON *nc;
    const cJSON *pool; /* may be NULL */
    int warned_unregistered;
} reg_t;

static int mutate_register(cJSON *node, void *ud)
{
    reg_t *r = ud;
    int changed = 0;
    cJSON *md = obj_child(node, "metadata", 0);
    if (nw_json_get(md, "deletionTimestamp"))
        return -1;
    cJSON *labels = obj_child(md, "labels", 0);
    /* NodeClaim labels (pool template labels are in them), then the markers */
    const cJSON *l;
    cJSON_ArrayForEach(l, nw_json_get(nw_json_get(r->nc, "metadata"), "labels"))
    {
        if (cJSON_IsString(l))
            changed |= set_label(labels, l->string, l->valuestring);
    }
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
    cJSON_ArrayForEach(l, nw_json_get(nw_json_get(r->nc, "metadata"), "annotations"))
    {
        if (cJSON_IsString(l))
            changed |= set_label(ann, l->string, l->valuestring);
    }
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
        const char *lists[] = {"taints", "startupTaints"};
        for (int k = 0; k < 2; k++) {
            const cJSON *t;
            cJSON_ArrayForEach(t, nw_json_get(nw_json_get(r->nc, "spec"), lists[k]))
            {
                int have = 0;
                const cJSON *x;
                cJSON_ArrayForEach(x, taints)
                {
                    if (taint_eq(x, t))
                        have = 1;
                }
                if (!have) {
                    cJSON_AddItemToArray(taints, cJSON_Duplicate(t, 1));
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
    const char *uid = nw_json_str_at(r->nc, "metadata.uid");
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
        cJSON_AddStringToObject(own, "name", nw_json_str_at(r->nc, "metadata.name"));
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
} cond_t;

static int mutate_condition(cJSON *nc, void *ud)
{
    const cond_t *cd = ud;
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
    return 0;
}

static int mutate_initialized_label(cJSON *node, void *ud)
{
    (void)ud;
    cJSON *labels = obj_child(obj_child(node, "metadata", 0), "labels", 0);
    return set_label(labels, "karpenter.sh/initialized", "true") ? 0 : 1;
}

static bool quantity_nonzero(const char *q)
{
    if (!q)
        return false;
    for (const char *p = q; *p; p++)
        if (*p >= '1' && *p <= '9')
            return true;
        else if (*p != '0' && *p != '.')
            break;
    return false;
}

/* Karpenter's initialization checks; on failure *why says what is missing. */
static bool node_initialized(const cJSON *nc, const cJSON *node, const char **why)
{
    if (!nw_ctl_node_ready(node)) {
        *why = "node not ready";
        return false;
    }
    const cJSON *t, *x;
    const cJSON *taints = nw_json_get(nw_json_get(node, "spec"), "taints");
    cJSON_ArrayForEach(t, nw_json_get(nw_json_get(nc, "spec"), "startupTaints"))
    {
        cJSON_ArrayForEach(x, taints)
        {
            if (taint_eq(x, t)) {
                *why = "startup taint remains";
                return false;
            }
        }
    }
    static const char *const ephemeral[] = {
        "node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable",
        "node.cloudprovider.kubernetes.io/uninitialized", NW_TAINT_UNREGISTERED};
    cJSON_ArrayForEach(x, taints)
    {
        const char *k = nw_json_str(x, "key");
        for (size_t i = 0; k && i < sizeof ephemeral / sizeof *ephemeral; i++)
            if (strcmp(k, ephemeral[i]) == 0) {
                *why = "ephemeral taint remains";
                return false;
            }
    }
    const cJSON *r;
    const cJSON *alloc = nw_json_get(nw_json_get(node, "status"), "allocatable");
    cJSON_ArrayForEach(r,
                       nw_json_get(nw_json_get(nw_json_get(nc, "spec"), "resources"), "requests"))
    {
        if (!r->string || !strchr(r->string, '/') || !quantity_nonzero(cJSON_GetStringValue(r)))
            continue; /* only extended resources (vendor-domain names) */
        if (!quantity_nonzero(nw_json_str(alloc, r->string))) {
            *why = "requested extended resource not registered";
            return false;
        }
    }
    return true;
}

static void register_claim(nw_lifecycle_t *l, const nw_kube_snap_t *s, const nw_kube_obj_t *nc,
                           const nw_kube_obj_t *node)
{
    nw_ctl_deps_t *c = l->deps;
    const nw_kube_obj_t *pool = nw_kube_cache_snap_get(s, NW_KUBE_NODEPOOLS, NULL, nc->nodepool);
    reg_t r = {nc->json, pool ? pool->json : NULL, 0};
    nw_err_t err = {0};
    if (nw_kube_write_update_retry(c->kube, &nw_kube_client_res_nodes, NULL, node->name, 0,
                                   mutate_register, &r, 5, NULL, &err) != NW_OK) {
        nw_log_warn("lifecycle", "cannot register the node", NW_LS("node", node->name),
                    NW_LS("nodeclaim", nc->name), NW_LS("error", err.msg));
        return;
    }
    if (r.warned_unregistered)
        nw_ctl_event(
            c, &nw_kube_client_res_nodes, node->json, "Warning", "UnregisteredTaintMissing",
            "node registered without the karpenter.sh/unregistered:NoExecute taint; pods may "
            "have been scheduled before its labels and taints were applied");
    cond_t cd = {c, "Registered", node->name};
    nw_err_clear(&err);
    if (nw_kube_write_update_retry(c->kube, &nw_kube_client_res_nodeclaims, NULL, nc->name, 1,
                                   mutate_condition, &cd, 5, NULL, &err) != NW_OK) {
        nw_log_warn("lifecycle", "cannot mark the NodeClaim registered",
                    NW_LS("nodeclaim", nc->name), NW_LS("error", err.msg));
        return;
    }
    atomic_fetch_add(&l->registered, 1);
    boot_token_done(l, s, nc); /* the kubelet has its credentials: the token is spent */
    static const char *const created[] = {NW_LABEL_NODEPOOL, "topology.kubernetes.io/zone"};
    nw_kmetrics_count_labels(c->series, &NW_KMETRICS_NODES_CREATED, nc->json, created);
    nw_log_info("lifecycle", "registered", NW_LS("nodeclaim", nc->name), NW_LS("node", node->name),
                NW_LS("providerID", nc->provider_id));
    char msg[600];
    snprintf(msg, sizeof msg,
             "Status condition transitioned, Type: Registered, Status: True, "
             "Node: %s",
             node->name);
    nw_ctl_event(c, &nw_kube_client_res_nodeclaims, nc->json, "Normal", "Registered", msg);
}

static void initialize_claim(nw_lifecycle_t *l, const nw_kube_obj_t *nc, const nw_kube_obj_t *node)
{
    nw_ctl_deps_t *c = l->deps;
    const char *why = NULL;
    if (!node_initialized(nc->json, node->json, &why))
        return;
    nw_err_t err = {0};
    if (nw_kube_write_update_retry(c->kube, &nw_kube_client_res_nodes, NULL, node->name, 0,
                                   mutate_initialized_label, NULL, 5, NULL, &err) != NW_OK) {
        nw_log_warn("lifecycle", "cannot label the node initialized", NW_LS("node", node->name),
                    NW_LS("error", err.msg));
        return;
    }
    cond_t cd = {c, "Initialized", NULL};
    nw_err_clear(&err);
    if (nw_kube_write_update_retry(c->kube, &nw_kube_client_res_nodeclaims, NULL, nc->name, 1,
                                   mutate_condition, &cd, 5, NULL, &err) != NW_OK) {
        nw_log_warn("lifecycle", "cannot mark the NodeClaim initialized",
                    NW_LS("nodeclaim", nc->name), NW_LS("error", err.msg));
        return;
    }
    atomic_fetch_add(&l->initialized, 1);
    nw_log_info("lifecycle", "initialized", NW_LS("nodeclaim", nc->name),
                NW_LS("node", node->name));
    nw_ctl_event(c, &nw_kube_client_res_nodeclaims, nc->json, "Normal", "Initialized",
                 "Status condition transitioned, Type: Initialized, Status: True");
}

/* When did the NodeClaim launch (Launched transition, else creation); 0 unknown. */
static int64_t launched_at(const cJSON *nc)
{
    const cJSON *cd;
    int64_t t = 0;
    cJSON_ArrayForEach(cd, nw_json_get(nw_json_get(nc, "status"), "conditions"))
    {
        const char *ty = nw_json_str(cd, "type");
        const char *lt = nw_json_str(cd, "lastTransitionTime");
        if (ty && lt && strcmp(ty, "Launched") == 0)
            /* unparsable: t stays 0 and the creation time serves */
            (void)nw_clock_time_parse(lt, &t);
    }
    if (!t) {
        const char *ct = nw_json_str_at(nc, "metadata.creationTimestamp");
        if (ct)
            /* unparsable: t stays 0 */
            (void)nw_clock_time_parse(ct, &t);
    }
    return t;
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

static void nodeclass_status(nw_lifecycle_t *l, const nw_kube_snap_t *s)
{
    nw_ctl_deps_t *c = l->deps;
    int64_t mono = nw_clock_mono(c->clock);
    int due = mono >= l->next_nodeclass_mono;
    if (due)
        l->next_nodeclass_mono = mono + NODECLASS_EVERY_NS;
    for (size_t i = 0; i < nw_kube_cache_snap_count(s, NW_KUBE_EC2NODECLASSES); i++) {
        const nw_kube_obj_t *o = nw_kube_cache_snap_at(s, NW_KUBE_EC2NODECLASSES, i);
        if (o->terminating || !nw_ctl_may_write(c))
            continue;
        if (!due && nw_json_condition(o->json, "Ready") && observed_current(o->json))
            continue; /* between refreshes only new or changed classes are resolved */
        const nw_cloud_class_t *r = NULL;
        nw_err_t err = {0};
        if (c->cloud->ops->resolve(c->cloud, o->json, &r, &err) != NW_OK || !r) {
            nw_log_warn("lifecycle", "cannot resolve the EC2NodeClass",
                        NW_LS("ec2nodeclass", o->name), NW_LS("error", err.msg));
            l->next_nodeclass_mono = mono + 5 * NW_NS_PER_SEC;
            continue;
        }
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
static void nodeclass_finalizers(nw_lifecycle_t *l, const nw_kube_snap_t *s)
{
    nw_ctl_deps_t *c = l->deps;
    for (size_t i = 0;
         i < nw_kube_cache_snap_count(s, NW_KUBE_EC2NODECLASSES) && nw_ctl_may_write(c); i++) {
        const nw_kube_obj_t *o = nw_kube_cache_snap_at(s, NW_KUBE_EC2NODECLASSES, i);
        nw_err_t err = {0};
        int has = has_nc_finalizer(o->json);
        if (!o->terminating) {
            if (!has && nw_kube_write_finalizer_add(c->kube, &nw_kube_client_res_ec2nodeclasses,
                                                    NULL, o->name, NC_FINALIZER, &err) != NW_OK)
                nw_log_warn("lifecycle", "cannot add the EC2NodeClass finalizer",
                            NW_LS("ec2nodeclass", o->name), NW_LS("error", err.msg));
            continue;
        }
        if (!has)
            continue;
        size_t claims = 0;
        for (size_t k = 0; k < nw_kube_cache_snap_count(s, NW_KUBE_NODECLAIMS); k++) {
            const cJSON *ref = nw_json_get(
                nw_json_get(nw_kube_cache_snap_at(s, NW_KUBE_NODECLAIMS, k)->json, "spec"),
                "nodeClassRef");
            const char *n = nw_json_str(ref, "name"), *g = nw_json_str(ref, "group");
            if (n && strcmp(n, o->name) == 0 && (!g || strcmp(g, "karpenter.k8s.aws") == 0))
                claims++;
        }
        if (claims > 0)
            continue; /* WaitingOnNodeClaimTermination */
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
}

void nw_lifecycle_tick(nw_lifecycle_t *l, const nw_kube_snap_t *s)
{
    nw_ctl_deps_t *c = l->deps;
    nodeclass_finalizers(l, s);
    nodeclass_status(l, s);
    int64_t now = nw_clock_now(c->clock);
    for (size_t i = 0; i < nw_kube_cache_snap_count(s, NW_KUBE_NODECLAIMS) && nw_ctl_may_write(c);
         i++) {
        const nw_kube_obj_t *nc = nw_kube_cache_snap_at(s, NW_KUBE_NODECLAIMS, i);
        if (nc->terminating || is_true(nc->json, "Registered"))
            boot_token_done(l, s, nc); /* once per NodeClaim and process */
        if (nc->terminating)
            continue; /* scaler/termination */
        if (!nc->provider_id[0])
            continue;
        const nw_kube_obj_t *node = nw_kube_cache_snap_node_by_provider_id(s, nc->provider_id);
        if (!is_true(nc->json, "Registered")) {
            if (node && !node->terminating) {
                register_claim(l, s, nc, node);
                continue;
            }
            int64_t t = launched_at(nc->json);
            if (t && now - t > l->o.registration_timeout_ns) {
                char msg[256];
                snprintf(msg, sizeof msg,
                         "node did not register within the registration timeout (%llds); "
                         "deleting the NodeClaim",
                         (long long)(l->o.registration_timeout_ns / NW_NS_PER_SEC));
                nw_log_warn("lifecycle", "registration timeout", NW_LS("nodeclaim", nc->name),
                            NW_LS("providerID", nc->provider_id));
                nw_ctl_event(c, &nw_kube_client_res_nodeclaims, nc->json, "Warning",
                             "RegistrationTimeout", msg);
                atomic_fetch_add(&l->reg_timeouts, 1);
                /* best effort: a NodeClaim left behind times out again next tick */
                (void)nw_kube_write_delete(c->kube, &nw_kube_client_res_nodeclaims, NULL, nc->name,
                                           NULL, NULL, NULL);
            }
            continue;
        }
        if (node && !is_true(nc->json, "Initialized"))
            initialize_claim(l, nc, node);
    }
    if (nw_ctl_may_write(c))
        boot_prune(l, s);
}
