/*
 * cli/plan.c — the manifest side of `nodewarden plan` (cli/plan.h): collect the
 * objects of the given documents (workloads expanded to their pods), apply the GPU
 * isolation policy (admission/gpu.h, default settings) to pods and NodePools as the
 * webhook would have done at admission, and build the scheduling snapshot with the
 * instance catalog.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/gpushare.h"
#include "api/admit.h"
#include "admission/gpu.h"
#include "admission/gpu_policy.h"
#include "api/jsonpatch.h"
#include "api/wellknown.h"
#include "scaler/state/simsnap.h"
#include "common/clock.h"
#include "common/json.h"
#include "common/yaml.h"
#include "config/config.h"
#include "scaler/cloud/kubelet.h"
#include "scaler/sched/from_catalog.h"
#include "scaler/sched/schedule.h"
#include "cli/plan.h"

#define MAX_REPLICAS 100000

struct nw_plan {
    nw_sched_snap_t *snap;
    nw_gpu_policy_t gpu;
    bool gpu_on;
    cJSON *pools;      /* collected until every doc is read (the GPU patch needs nothing else) */
    cJSON *classes;    /* EC2NodeClass names */
    cJSON *class_objs; /* the EC2NodeClass objects (their kubelet settings) */
    int64_t default_max_pods; /* settings.podDensity: 0 = ENI-limited */
    cJSON *later;             /* pods/nodes/etc. in file order */
    cJSON *pdbs;              /* PodDisruptionBudgets (plan --disruption) */
    cJSON *dra;               /* ResourceClaims, ResourceClaimTemplates, DeviceClasses */
    cJSON *seen;              /* "kind/namespace/name" -> where it was given first */
    char **zones;
    int nzones;
    nw_sched_opts_t opts; /* the simulation's options (packing, minValues policy) */
};
typedef struct nw_plan plan_t;

/* apply the GPU policy's mutation to a Pod or NodePool object in place; a pod's DRA claims
 * are read from the input's objects, and a pod whose claims ask for a class's devices gets
 * the scaler's DRA view (nw_simsnap_dra_apply: the class's label, its devices) */
static int gpu_mutate(plan_t *p, cJSON **obj, bool pod)
{
    if (!p->gpu_on)
        return 0;
    nw_jsonpatch_t patch;
    nw_admit_result_t res;
    nw_jsonpatch_init(&patch);
    nw_admit_result_init(&res);
    /* the DRA objects of the input, as the webhook reads them from its watch cache */
    nw_gpu_dra_src_t dra = {nw_admit_lookup_in, p->dra, false};
    if (pod)
        /* the verdict and messages are in res */
        (void)nw_gpu_pod_patch(&p->gpu, *obj, NULL, &dra, &patch, &res);
    else
        (void)nw_gpu_pool_patch(&p->gpu, *obj, &patch, &res);
    int rc = 0;
    char *text = nw_jsonpatch_take_text(&patch);
    if (text) {
        nw_err_t err = {0};
        if (nw_jsonpatch_apply_text(obj, text, &err) != NW_OK)
            rc = -1;
        free(text);
    }
    nw_jsonpatch_cleanup(&patch);
    nw_admit_result_cleanup(&res);
    if (rc == 0 && pod)
        nw_simsnap_dra_apply(&p->gpu, *obj, &dra, NULL, NULL);
    return rc;
}

static void add_zone(plan_t *p, const char *z)
{
    for (int i = 0; i < p->nzones; i++)
        if (strcmp(p->zones[i], z) == 0)
            return;
    char **nz = realloc(p->zones, (size_t)(p->nzones + 1) * sizeof *nz);
    if (!nz)
        return;
    p->zones = nz;
    if ((p->zones[p->nzones] = strdup(z)))
        p->nzones++;
}

/* replicas of a workload as Pod objects appended to out */
static int expand_workload(const cJSON *obj, const char *kind, cJSON *out, char *why, size_t n)
{
    const cJSON *md = nw_json_get(obj, "metadata"), *spec = nw_json_get(obj, "spec");
    const cJSON *tmpl = spec ? nw_json_get(spec, "template") : NULL;
    const char *name = nw_json_str(md, "name");
    if (!name || !cJSON_IsObject(tmpl) || !cJSON_IsObject(nw_json_get(tmpl, "spec"))) {
        snprintf(why, n, "%s needs metadata.name and spec.template.spec", kind);
        return -1;
    }
    const char *ns = nw_json_str(md, "namespace");
    int replicas = 1;
    const cJSON *r = nw_json_get(spec, strcmp(kind, "Job") == 0 ? "parallelism" : "replicas");
    if (r && !cJSON_IsNumber(r)) {
        snprintf(why, n, "spec.%s must be an integer", r->string);
        return -1;
    }
    if (cJSON_IsNumber(r))
        replicas = r->valueint;
    if (replicas < 0 || replicas > MAX_REPLICAS) {
        snprintf(why, n, "spec.%s must be between 0 and %d", r ? r->string : "replicas",
                 MAX_REPLICAS);
        return -1;
    }
    const char *owner = strcmp(kind, "Deployment") == 0 ? "ReplicaSet" : kind;
    for (int i = 0; i < replicas; i++) {
        cJSON *pod = nw_json_new_object();
        cJSON *pmd = nw_json_dup(nw_json_get(tmpl, "metadata"));
        if (!pmd)
            pmd = nw_json_new_object();
        cJSON_DeleteItemFromObjectCaseSensitive(pmd, "name");
        cJSON_DeleteItemFromObjectCaseSensitive(pmd, "namespace");
        char pn[300];
        snprintf(pn, sizeof pn, "%s-%d", name, i);
        nw_json_add_string(pmd, "name", pn);
        nw_json_add_string(pmd, "namespace", ns ? ns : "default");
        cJSON *refs = nw_json_add_array(pmd, "ownerReferences");
        cJSON *ref = nw_json_new_object();
        nw_json_add_string(ref, "kind", owner);
        nw_json_add_string(ref, "name", name);
        nw_json_add_bool(ref, "controller", 1);
        nw_json_push(refs, ref);
        nw_json_add_string(pod, "apiVersion", "v1");
        nw_json_add_string(pod, "kind", "Pod");
        nw_json_add_item(pod, "metadata", pmd);
        cJSON *pspec = nw_json_dup(nw_json_get(tmpl, "spec"));
        nw_json_add_item(pod, "spec", pspec);
        /* a StatefulSet's pods use the claims of its volumeClaimTemplates,
         * <template>-<pod>, which its controller creates when they do not exist yet (added
         * after the claims the files give, only where none is) */
        const cJSON *vct, *vcts = strcmp(kind, "StatefulSet") == 0
                                      ? nw_json_get(spec, "volumeClaimTemplates")
                                      : NULL;
        cJSON_ArrayForEach(vct, vcts)
        {
            const char *tn = nw_json_str(nw_json_get(vct, "metadata"), "name");
            if (!tn)
                continue;
            char cn[600];
            snprintf(cn, sizeof cn, "%s-%s", tn, pn);
            cJSON *vols = cJSON_GetObjectItemCaseSensitive(pspec, "volumes");
            if (!cJSON_IsArray(vols))
                vols = nw_json_add_array(pspec, "volumes");
            cJSON *v = nw_json_new_object();
            nw_json_add_string(v, "name", tn);
            nw_json_add_string(nw_json_add_object(v, "persistentVolumeClaim"), "claimName", cn);
            nw_json_push(vols, v);
            cJSON *pvc = nw_json_new_object();
            nw_json_add_string(pvc, "apiVersion", "v1");
            nw_json_add_string(pvc, "kind", "PersistentVolumeClaim");
            cJSON *cmd = nw_json_add_object(pvc, "metadata");
            nw_json_add_string(cmd, "name", cn);
            nw_json_add_string(cmd, "namespace", ns ? ns : "default");
            nw_json_add_bool(pvc, "nwTemplate", 1);
            nw_json_add_item(pvc, "spec", nw_json_dup(nw_json_get(vct, "spec")));
            nw_json_push(out, pvc);
        }
        nw_json_push(out, pod);
    }
    return 0;
}

/* An object given twice (same kind, namespace and name) is an error naming both places:
 * the API server would keep only one of them, so counting both would plan for capacity
 * nobody asked for. Objects without a name (generateName) are all different. */
static int check_duplicate(plan_t *p, const cJSON *doc, const char *kind, const char *where)
{
    static const char *const cluster_scoped[] = {"NodePool",     "EC2NodeClass", "Node",
                                                 "NodeClaim",    "Namespace",    "PersistentVolume",
                                                 "StorageClass", "CSINode"};
    static const char *const namespaced[] = {
        "Pod",         "DaemonSet", "PodDisruptionBudget",  "Deployment", "ReplicaSet",
        "StatefulSet", "Job",       "PersistentVolumeClaim"};
    int ns_scoped = -1;
    for (size_t i = 0; i < sizeof cluster_scoped / sizeof cluster_scoped[0]; i++)
        if (strcmp(kind, cluster_scoped[i]) == 0)
            ns_scoped = 0;
    for (size_t i = 0; i < sizeof namespaced / sizeof namespaced[0]; i++)
        if (strcmp(kind, namespaced[i]) == 0)
            ns_scoped = 1;
    const cJSON *md = nw_json_get(doc, "metadata");
    const char *name = nw_json_str(md, "name"), *ns = NULL;
    if (ns_scoped < 0 || !name || !*name)
        return 0;
    if (ns_scoped) {
        ns = nw_json_str(md, "namespace");
        if (!ns || !*ns)
            ns = "default"; /* where kubectl would create it */
    }
    char key[512], shown[512];
    snprintf(key, sizeof key, "%s/%s/%s", kind, ns ? ns : "", name);
    snprintf(shown, sizeof shown, "%s %s%s%s", kind, ns ? ns : "", ns ? "/" : "", name);
    const char *first = nw_json_str(p->seen, key);
    if (first) {
        fprintf(stderr,
                "nodewarden plan: %s: %s is given twice (same kind, namespace and name); first "
                "at %s\n",
                where, shown, first);
        return -1;
    }
    if (!nw_json_add_string(p->seen, key, where)) {
        fprintf(stderr, "nodewarden plan: out of memory\n");
        return -1;
    }
    return 0;
}

static int collect(plan_t *p, const cJSON *doc, const char *where, int depth)
{
    if (cJSON_IsNull(doc))
        return 0;
    const char *kind = nw_json_str(doc, "kind");
    if (!kind) {
        fprintf(stderr, "nodewarden plan: %s: object without kind\n", where);
        return -1;
    }
    if (strcmp(kind, "List") == 0 ||
        (strlen(kind) > 4 && strcmp(kind + strlen(kind) - 4, "List") == 0)) {
        cJSON *it;
        if (depth > 2)
            return -1;
        int idx = 0;
        cJSON_ArrayForEach(it, nw_json_get(doc, "items"))
        {
            char w[700];
            snprintf(w, sizeof w, "%s, items[%d]", where, idx++);
            if (!nw_json_get(it, "kind") && strcmp(kind, "List") != 0) {
                char k[64];
                snprintf(k, sizeof k, "%.*s", (int)(strlen(kind) - 4), kind);
                cJSON *cp = nw_json_dup(it);
                int rc = -1;
                if (cp && nw_json_add_string(cp, "kind", k))
                    rc = collect(p, cp, w, depth + 1);
                cJSON_Delete(cp);
                if (rc != 0)
                    return -1;
                continue;
            }
            if (collect(p, it, w, depth + 1) != 0)
                return -1;
        }
        return 0;
    }
    if (check_duplicate(p, doc, kind, where) != 0)
        return -1;
    if (strcmp(kind, "NodePool") == 0) {
        nw_json_push(p->pools, nw_json_dup(doc));
        const cJSON *spec = nw_json_get(doc, "spec"),
                    *t = spec ? nw_json_get(spec, "template") : NULL;
        const cJSON *ts = t ? nw_json_get(t, "spec") : NULL, *it;
        const cJSON *reqs = ts ? nw_json_get(ts, "requirements") : NULL;
        cJSON_ArrayForEach(it, reqs)
        {
            const char *k = nw_json_str(it, "key"), *op = nw_json_str(it, "operator");
            const cJSON *v;
            if (k && op && strcmp(k, NW_LABEL_ZONE) == 0 && strcmp(op, "In") == 0)
                cJSON_ArrayForEach(v, nw_json_get(it, "values"))
                {
                    if (cJSON_IsString(v))
                        add_zone(p, v->valuestring);
                }
        }
    } else if (strcmp(kind, "EC2NodeClass") == 0) {
        const char *n = nw_json_str(nw_json_get(doc, "metadata"), "name");
        if (n) {
            nw_json_push(p->classes, nw_json_new_string(n));
            nw_json_push(p->class_objs, nw_json_dup(doc));
        }
    } else if (strcmp(kind, "PodDisruptionBudget") == 0) {
        nw_json_push(p->pdbs, nw_json_dup(doc)); /* plan --disruption */
    } else if (strcmp(kind, "Pod") == 0 || strcmp(kind, "DaemonSet") == 0 ||
               strcmp(kind, "Node") == 0 || strcmp(kind, "NodeClaim") == 0 ||
               strcmp(kind, "Namespace") == 0 || strcmp(kind, "PersistentVolume") == 0 ||
               strcmp(kind, "PersistentVolumeClaim") == 0 || strcmp(kind, "StorageClass") == 0 ||
               strcmp(kind, "CSINode") == 0) {
        if (strcmp(kind, "Node") == 0) {
            const cJSON *l = nw_json_get(nw_json_get(doc, "metadata"), "labels");
            const char *z = nw_json_str(l, NW_LABEL_ZONE);
            if (z)
                add_zone(p, z);
        }
        nw_json_push(p->later, nw_json_dup(doc));
    } else if (strcmp(kind, "Deployment") == 0 || strcmp(kind, "ReplicaSet") == 0 ||
               strcmp(kind, "StatefulSet") == 0 || strcmp(kind, "Job") == 0) {
        char why[200];
        if (expand_workload(doc, kind, p->later, why, sizeof why) != 0) {
            fprintf(stderr, "nodewarden plan: %s: %s\n", where, why);
            return -1;
        }
    } else if ((strcmp(kind, "ResourceClaim") == 0 || strcmp(kind, "ResourceClaimTemplate") == 0 ||
                strcmp(kind, "DeviceClass") == 0) &&
               strncmp(nw_json_str(doc, "apiVersion") ? nw_json_str(doc, "apiVersion") : "",
                       "resource.k8s.io/", 16) == 0) {
        nw_json_push(p->dra, nw_json_dup(doc)); /* what pods' DRA claims ask for */
    } else {
        fprintf(stderr, "nodewarden plan: %s: ignoring kind %s\n", where, kind);
    }
    return 0;
}

static const char *obj_name(const cJSON *o)
{
    const char *n = nw_json_str(nw_json_get(o, "metadata"), "name");
    return n ? n : "?";
}

static bool has_class(const plan_t *p, const char *name)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, p->classes)
    {
        if (strcmp(it->valuestring, name) == 0)
            return true;
    }
    return false;
}

/* is a claim of the same namespace and name given in the files */
static bool given_claim(const plan_t *p, const cJSON *pvc)
{
    const cJSON *md = nw_json_get(pvc, "metadata"), *it;
    cJSON_ArrayForEach(it, p->later)
    {
        const cJSON *m = nw_json_get(it, "metadata");
        const char *k = nw_json_str(it, "kind"), *ns = nw_json_str(m, "namespace");
        if (k && strcmp(k, "PersistentVolumeClaim") == 0 &&
            !cJSON_IsTrue(nw_json_get(it, "nwTemplate")) && nw_json_str(m, "name") &&
            strcmp(nw_json_str(m, "name"), nw_json_str(md, "name")) == 0 &&
            strcmp(ns ? ns : "default", nw_json_str(md, "namespace")) == 0)
            return true;
    }
    return false;
}

/* A NodePool whose shared-GPU labels (api/gpushare.h) do not parse: said naming the label,
 * as the webhook refuses it (the plan would otherwise count its GPUs whole). */
static bool gpushare_bad(const cJSON *pool)
{
    const cJSON *l = nw_json_get(
        nw_json_get(nw_json_get(nw_json_get(pool, "spec"), "template"), "metadata"), "labels");
    const char *keys[] = {NW_GPUSHARE_REPLICAS_LABEL, NW_GPUSHARE_MIG_CONFIG_LABEL,
                          NW_GPUSHARE_MIG_STRATEGY_LABEL};
    nw_gpushare_t sh;
    nw_err_t e = {0};
    if (nw_gpushare_parse(nw_json_str(l, keys[0]), nw_json_str(l, keys[1]), nw_json_str(l, keys[2]),
                          &sh, &e) == NW_OK)
        return false;
    fprintf(stderr,
            "nodewarden plan: NodePool %s: spec.template.metadata.labels[%s]: Invalid value: "
            "\"%s\": %s\n",
            obj_name(pool), e.path, nw_json_str(l, e.path) ? nw_json_str(l, e.path) : "", e.msg);
    return true;
}

static int build(plan_t *p)
{
    cJSON *it;
    nw_err_t err = {0};
    cJSON_ArrayForEach(it, p->pools)
    {
        const cJSON *ref = nw_json_get(nw_json_get(nw_json_get(it, "spec"), "template"), "spec");
        const char *cls = nw_json_str(ref ? nw_json_get(ref, "nodeClassRef") : NULL, "name");
        if (cJSON_GetArraySize(p->classes) > 0 && cls && !has_class(p, cls)) {
            fprintf(stderr,
                    "nodewarden plan: NodePool %s: EC2NodeClass \"%s\" not found, the pool is "
                    "not ready and is left out\n",
                    obj_name(it), cls);
            continue;
        }
        if (gpushare_bad(it))
            return -1;
        cJSON *obj = nw_json_dup(it);
        if (!obj || gpu_mutate(p, &obj, false) != 0)
            fprintf(stderr, "nodewarden plan: NodePool %s: GPU policy patch not applied\n",
                    obj_name(it));
        memset(&err, 0, sizeof err);
        nw_rc_t prc = nw_snap_node_add_pool_json(p->snap, obj ? obj : it, &err);
        cJSON_Delete(obj);
        if (prc != NW_OK) {
            fprintf(stderr, "nodewarden plan: NodePool %s: %s: %s\n", obj_name(it), err.path,
                    err.msg);
            return -1;
        }
    }
    /* storage and namespaces first: a pod's volumes are resolved when it is added; the
     * claims of StatefulSet templates only where the files give none */
    for (int pass = 0; pass < 2; pass++)
        cJSON_ArrayForEach(it, p->later)
        {
            const char *kind = nw_json_str(it, "kind");
            bool tmpl = cJSON_IsTrue(nw_json_get(it, "nwTemplate"));
            if (tmpl != (pass == 1))
                continue;
            memset(&err, 0, sizeof err);
            nw_rc_t rc = NW_OK;
            if (strcmp(kind, "PersistentVolume") == 0)
                rc = nw_snap_volume_add_pv_json(p->snap, it, &err);
            else if (strcmp(kind, "StorageClass") == 0)
                rc = nw_snap_volume_add_storageclass_json(p->snap, it, &err);
            else if (strcmp(kind, "Namespace") == 0)
                rc = nw_snap_pod_add_namespace_json(p->snap, it, &err);
            else if (strcmp(kind, "CSINode") == 0)
                rc = nw_snap_volume_add_csinode_json(p->snap, it, &err);
            else if (strcmp(kind, "PersistentVolumeClaim") == 0 && !(tmpl && given_claim(p, it)))
                rc = nw_snap_volume_add_pvc_json(p->snap, it, &err);
            if (rc != NW_OK) {
                fprintf(stderr, "nodewarden plan: %s %s: %s%s%s\n", kind, obj_name(it), err.path,
                        *err.path ? ": " : "", err.msg);
                return -1;
            }
        }
    cJSON_ArrayForEach(it, p->later)
    {
        const char *kind = nw_json_str(it, "kind");
        nw_rc_t rc;
        memset(&err, 0, sizeof err);
        if (strcmp(kind, "PersistentVolume") == 0 || strcmp(kind, "StorageClass") == 0 ||
            strcmp(kind, "Namespace") == 0 || strcmp(kind, "PersistentVolumeClaim") == 0 ||
            strcmp(kind, "CSINode") == 0)
            continue;
        if (strcmp(kind, "Pod") == 0) {
            cJSON *obj = NULL;
            /* the webhook sees pods at creation: bound pods are left as they are */
            if (!nw_json_str(nw_json_get(it, "spec"), "nodeName") &&
                (!(obj = nw_json_dup(it)) || gpu_mutate(p, &obj, true) != 0))
                fprintf(stderr, "nodewarden plan: Pod %s: GPU policy patch not applied\n",
                        obj_name(it));
            rc = nw_snap_pod_add_json(p->snap, obj ? obj : it, &err);
            cJSON_Delete(obj);
        } else if (strcmp(kind, "DaemonSet") == 0) {
            rc = nw_snap_node_add_daemonset_json(p->snap, it, &err);
        } else if (strcmp(kind, "Node") == 0) {
            rc = nw_snap_node_add_json(p->snap, it, &err);
        } else {
            rc = nw_snap_node_add_nodeclaim_json(p->snap, it, &err);
        }
        if (rc != NW_OK) {
            fprintf(stderr, "nodewarden plan: %s %s: %s%s%s\n", kind, obj_name(it), err.path,
                    *err.path ? ": " : "", err.msg);
            return -1;
        }
    }
    return 0;
}

cJSON *nw_plan_results_json(const nw_sched_snap_t *s, const nw_sched_results_t *r)
{
    cJSON *o = nw_json_new_object();
    cJSON *ncs = nw_json_add_array(o, "nodeclaims");
    for (int i = 0; i < r->nclaims; i++) {
        const nw_sched_claim_t *c = &r->claims[i];
        cJSON *j = nw_json_new_object();
        nw_json_add_string(j, "nodepool", nw_snapshot_pool_name(s, (size_t)c->pool));
        nw_json_add_string(j, "nodeClass", nw_snapshot_pool_nodeclass(s, (size_t)c->pool));
        nw_json_add_string(j, "instanceType",
                           c->itype >= 0 ? nw_snapshot_itype(s, (size_t)c->itype)->name : "");
        cJSON *its = nw_json_add_array(j, "instanceTypes");
        for (int k = 0; k < c->nitypes; k++)
            nw_json_push(its, nw_json_new_string(nw_snapshot_itype(s, (size_t)c->itypes[k])->name));
        nw_json_add_string(j, "zone", c->zone);
        nw_sched_res_t al;
        if (c->itype >= 0 &&
            nw_snap_node_pool_type_allocatable(s, (size_t)c->pool, (size_t)c->itype, &al))
            nw_json_add_item(j, "allocatable", nw_snapshot_res_to_json(s, &al));
        nw_json_add_string(j, "capacityType", c->capacity_type);
        nw_json_add_number(j, "pricePerHour", c->price);
        nw_json_add_item(j, "requests", nw_snapshot_res_to_json(s, &c->requests));
        char rq[4096];
        nw_requirements_format(&c->reqs, rq, sizeof rq);
        nw_json_add_string(j, "requirements", rq);
        nw_json_add_bool(j, "minValuesRelaxed", c->min_values_relaxed);
        if (c->is_static)
            nw_json_add_bool(j, "static", true);
        cJSON *pods = nw_json_add_array(j, "pods");
        for (int k = 0; k < c->npods; k++)
            nw_json_push(pods, nw_json_new_string(nw_snapshot_pod_key(s, (size_t)c->pods[k])));
        nw_json_push(ncs, j);
    }
    cJSON *pl = nw_json_add_array(o, "placed");
    for (int i = 0; i < r->nplaced; i++) {
        cJSON *j = nw_json_new_object();
        nw_json_add_string(j, "pod", nw_snapshot_pod_key(s, (size_t)r->placed[i].pod));
        nw_json_add_string(j, "node", r->placed[i].node);
        nw_json_push(pl, j);
    }
    cJSON *un = nw_json_add_array(o, "unschedulable");
    for (int i = 0; i < r->nunsched; i++) {
        const nw_sched_unsched_t *u = &r->unsched[i];
        cJSON *j = nw_json_new_object();
        nw_json_add_string(j, "pod", nw_snapshot_pod_key(s, (size_t)u->pod));
        cJSON *rs = nw_json_add_object(j, "reasons");
        if (u->reason)
            nw_json_add_string(rs, "*", u->reason);
        for (int k = 0; k < u->nreasons; k++)
            if (u->reasons[k])
                nw_json_add_string(rs, nw_snapshot_pool_name(s, (size_t)k), u->reasons[k]);
        nw_json_push(un, j);
    }
    nw_json_add_number(o, "totalPricePerHour", r->total_price);
    return o;
}

const struct nw_gpu_policy *nw_plan_gpu(const nw_plan_t *p)
{
    return p->gpu_on && p->gpu.enabled ? &p->gpu : NULL;
}

nw_plan_t *nw_plan_new(bool gpu_policy)
{
    plan_t *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->pools = nw_json_new_array();
    p->classes = nw_json_new_array();
    p->class_objs = nw_json_new_array();
    p->later = nw_json_new_array();
    p->pdbs = nw_json_new_array();
    p->dra = nw_json_new_array();
    p->seen = nw_json_new_object();
    p->snap = nw_snapshot_new();
    p->gpu_on = gpu_policy;
    if (!p->pools || !p->classes || !p->class_objs || !p->later || !p->pdbs || !p->dra ||
        !p->seen || !p->snap || nw_gpu_policy_init(&p->gpu, "") != NW_OK) {
        nw_plan_free(p);
        return NULL;
    }
    p->opts.repack = true; /* scaler.repack's default */
    nw_snapshot_set_opts(p->snap, &p->opts);
    return p;
}

int nw_plan_set_gpu_config(nw_plan_t *p, const char *path)
{
    nw_config_t cfg;
    nw_err_t err = {0};
    nw_gpu_policy_t g;
    if (nw_config_defaults(&cfg) != NW_OK || nw_config_apply_file(&cfg, path, &err) != NW_OK ||
        nw_gpu_policy_from_config(&cfg, "", &g, &err) != NW_OK) {
        fprintf(stderr, "nodewarden plan: %s\n", err.msg[0] ? err.msg : "out of memory");
        nw_config_free(&cfg);
        return -1;
    }
    nw_config_free(&cfg);
    nw_gpu_policy_cleanup(&p->gpu);
    p->gpu = g;
    p->gpu.enabled = p->gpu.enabled && p->gpu_on;
    return 0;
}

void nw_plan_free(nw_plan_t *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->nzones; i++)
        free(p->zones[i]);
    free(p->zones);
    cJSON_Delete(p->pools);
    cJSON_Delete(p->classes);
    cJSON_Delete(p->class_objs);
    cJSON_Delete(p->later);
    cJSON_Delete(p->pdbs);
    cJSON_Delete(p->dra);
    cJSON_Delete(p->seen);
    nw_snapshot_free(p->snap);
    nw_gpu_policy_cleanup(&p->gpu);
    free(p);
}

void nw_plan_set_pod_density(nw_plan_t *p, int64_t default_max_pods)
{
    p->default_max_pods = default_max_pods;
}

void nw_plan_set_min_values_best_effort(nw_plan_t *p, bool best_effort)
{
    p->opts.min_values_best_effort = best_effort;
    nw_snapshot_set_opts(p->snap, &p->opts);
}

void nw_plan_set_packing(nw_plan_t *p, bool cheapest)
{
    p->opts.repack = cheapest;
    nw_snapshot_set_opts(p->snap, &p->opts);
}

int nw_plan_collect(nw_plan_t *p, const cJSON *doc, const char *where)
{
    return collect(p, doc, where, 0);
}

size_t nw_plan_objects(const nw_plan_t *p, const char *kind, const cJSON **out, size_t max)
{
    const cJSON *list = strcmp(kind, "NodePool") == 0              ? p->pools
                        : strcmp(kind, "PodDisruptionBudget") == 0 ? p->pdbs
                                                                   : p->later;
    size_t n = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, list)
    {
        const char *k = nw_json_str(it, "kind");
        if (k && strcmp(k, kind) == 0) {
            if (out && n < max)
                out[n] = it;
            n++;
        }
    }
    return n;
}

nw_sched_snap_t *nw_plan_snapshot(nw_plan_t *p, const char *catalog, size_t clen,
                                  const char *region, const char *const *zones, int nzones,
                                  const char *const *ice, int nice)
{
    char zbuf[3][64];
    const char *zv[16];
    int nz = 0;
    for (int i = 0; zones && i < nzones && nz < 16; i++)
        zv[nz++] = zones[i];
    if (nz == 0) {
        for (int i = 0; i < p->nzones && nz < 13; i++)
            if (strncmp(p->zones[i], region, strlen(region)) == 0)
                zv[nz++] = p->zones[i];
        if (nz > 0) {
            for (int c = 0; c < 3; c++) {
                snprintf(zbuf[c], sizeof zbuf[c], "%s%c", region, 'a' + c);
                bool seen = false;
                for (int i = 0; i < nz; i++)
                    seen |= strcmp(zv[i], zbuf[c]) == 0;
                if (!seen)
                    zv[nz++] = zbuf[c];
            }
        }
    }
    nw_err_t err = {0};
    /* the settings' overhead, and each EC2NodeClass's kubelet settings on top */
    nw_overhead_opts_t dflt;
    nw_catalog_overhead_opts_default(&dflt);
    dflt.default_max_pods = p->default_max_pods;
    int ncls = cJSON_GetArraySize(p->class_objs);
    nw_sched_class_opts_t *cls = calloc((size_t)ncls + 1, sizeof *cls);
    if (!cls) {
        fprintf(stderr, "nodewarden plan: out of memory\n");
        return NULL;
    }
    int k = 0;
    const cJSON *co;
    cJSON_ArrayForEach(co, p->class_objs)
    {
        cls[k].name = obj_name(co);
        cls[k].o = dflt;
        if (nw_kubelet_overhead(co, &cls[k].o, &err) != NW_OK) {
            fprintf(stderr, "nodewarden plan: EC2NodeClass %s: %s: %s\n", obj_name(co), err.path,
                    err.msg);
            free(cls);
            return NULL;
        }
        k++;
    }
    nw_rc_t lrc =
        nw_from_catalog_load_classes(p->snap, catalog, clen, region, zv, nz, &dflt, cls, k, &err);
    free(cls);
    if (lrc != NW_OK) {
        fprintf(stderr, "nodewarden plan: catalog: %s%s%s\n", err.path, *err.path ? ": " : "",
                err.msg);
        return NULL;
    }
    /* capacity reservations: each class's status.capacityReservations (as nodewarden writes
     * it, or by hand), holding availableInstanceCount nodes when an entry says so */
    cJSON_ArrayForEach(co, p->class_objs)
    {
        if (nw_snap_node_add_class_reservations(p->snap, co, NULL, NULL, NULL, &err) != NW_OK) {
            fprintf(stderr, "nodewarden plan: EC2NodeClass %s: %s\n", obj_name(co), err.msg);
            return NULL;
        }
    }
    for (int i = 0; i < nice; i++) {
        char b[256];
        snprintf(b, sizeof b, "%s", ice[i]);
        char *z = strchr(b, ':');
        char *ct = z ? strchr(z + 1, ':') : NULL;
        if (!z || !ct) {
            fprintf(stderr, "nodewarden plan: --ice wants TYPE:ZONE:CAPACITY_TYPE, got %s\n",
                    ice[i]);
            return NULL;
        }
        *z++ = 0;
        *ct++ = 0;
        nw_snap_node_ice(p->snap, b, *z ? z : NULL, *ct ? ct : NULL);
    }
    if (build(p) != 0)
        return NULL;
    return p->snap;
}
