/*
 * cli/cmd_plan.c — `nodewarden plan [FILE...]`: offline, the NodeClaims the scaler
 * would launch for the given manifests (scaler/sched), with the instance catalog.
 *
 * Reads NodePools, EC2NodeClasses, Pods, Deployments/ReplicaSets/StatefulSets/Jobs
 * (expanded to their replicas), DaemonSets, Nodes and NodeClaims from YAML or JSON
 * files (multi-document, `List` objects, any order; "-" is stdin). The GPU isolation
 * policy (admission/gpu.h, default settings) is applied to pods and NodePools first, as the
 * webhook would have done at admission.
 *
 * Exit: 0 every pod placed, 1 some pod cannot be placed, 2 usage or input errors.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/admit.h"
#include "admission/gpu.h"
#include "api/jsonpatch.h"
#include "common/clock.h"
#include "common/yaml.h"
#include "scaler/sched/schedule.h"
#include "cli/cmd.h"
#include "cli/plan.h"

#define GET cJSON_GetObjectItemCaseSensitive
#define MAX_REPLICAS 100000

static void usage(FILE *f)
{
    fprintf(f,
            "usage: nodewarden plan [--output text|json] [--catalog FILE] [--region R]\n"
            "                       [--zones Z1,Z2,...] [--ice TYPE:ZONE:CAPACITY_TYPE]...\n"
            "                       [--no-gpu-policy] [--disruption [--now RFC3339]\n"
            "                       [--spot-to-spot]] FILE...\n"
            "\n"
            "Offline: the NodeClaims nodewarden would launch for the pending pods in FILEs\n"
            "(YAML or JSON, multi-document; NodePools, EC2NodeClasses, Pods, Deployments,\n"
            "ReplicaSets, StatefulSets, Jobs, DaemonSets, Nodes, NodeClaims; '-' is stdin).\n"
            "Prices come from the compiled-in catalog (--catalog for another file in the same\n"
            "format); --region picks the price region (default us-east-1) and --zones the\n"
            "zones offered (default <region>a,b,c). --ice marks an offering unavailable.\n"
            "Exit: 0 all pods placed, 1 some pods cannot be placed, 2 usage/input error.\n"
            "\n"
            "--disruption: instead, what one disruption pass would do to the NodeClaims,\n"
            "Nodes, Pods and PodDisruptionBudgets given (their NodePools' budgets at --now,\n"
            "default the current time): each NodeClaim's verdict, the pools' allowed\n"
            "disruptions and the command (emptiness, drift, multi- or single-node\n"
            "consolidation). Exit 0, or 2 on usage/input errors.\n");
}

static char *read_all(const char *path, size_t *len)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (n < cap) {
            if (ferror(f)) {
                free(buf);
                buf = NULL;
            }
            break;
        }
        char *nb = realloc(buf, cap * 2);
        if (!nb) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        cap *= 2;
    }
    if (f != stdin)
        fclose(f);
    if (buf) {
        char *nb = realloc(buf, n + 1);
        if (nb)
            buf = nb;
        buf[n] = 0;
        *len = n;
    }
    return buf;
}

struct nw_plan {
    nw_sched_snap_t *snap;
    nw_gpu_policy_t gpu;
    bool gpu_on;
    cJSON *pools;   /* collected until every doc is read (the GPU patch needs nothing else) */
    cJSON *classes; /* EC2NodeClass names */
    cJSON *later;   /* pods/nodes/etc. in file order */
    cJSON *pdbs;    /* PodDisruptionBudgets (plan --disruption) */
    char **zones;
    int nzones;
};
typedef struct nw_plan plan_t;

static const char *jstr(const cJSON *o, const char *k)
{
    const cJSON *v = o ? GET(o, k) : NULL;
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* apply the GPU policy's mutation to a Pod or NodePool object in place */
static int gpu_mutate(plan_t *p, cJSON **obj, bool pod)
{
    if (!p->gpu_on)
        return 0;
    nw_jsonpatch_t patch;
    nw_admit_result_t res;
    nw_jsonpatch_init(&patch);
    nw_admit_result_init(&res);
    if (pod)
        nw_gpu_pod_patch(&p->gpu, *obj, NULL, &patch, &res);
    else
        nw_gpu_pool_patch(&p->gpu, *obj, &patch, &res);
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
    const cJSON *md = GET(obj, "metadata"), *spec = GET(obj, "spec");
    const cJSON *tmpl = spec ? GET(spec, "template") : NULL;
    const char *name = jstr(md, "name");
    if (!name || !cJSON_IsObject(tmpl) || !cJSON_IsObject(GET(tmpl, "spec"))) {
        snprintf(why, n, "%s needs metadata.name and spec.template.spec", kind);
        return -1;
    }
    const char *ns = jstr(md, "namespace");
    int replicas = 1;
    const cJSON *r = GET(spec, strcmp(kind, "Job") == 0 ? "parallelism" : "replicas");
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
        cJSON *pod = cJSON_CreateObject();
        cJSON *pmd = cJSON_Duplicate(GET(tmpl, "metadata"), 1);
        if (!pmd)
            pmd = cJSON_CreateObject();
        cJSON_DeleteItemFromObjectCaseSensitive(pmd, "name");
        cJSON_DeleteItemFromObjectCaseSensitive(pmd, "namespace");
        char pn[300];
        snprintf(pn, sizeof pn, "%s-%d", name, i);
        cJSON_AddStringToObject(pmd, "name", pn);
        cJSON_AddStringToObject(pmd, "namespace", ns ? ns : "default");
        cJSON *refs = cJSON_AddArrayToObject(pmd, "ownerReferences");
        cJSON *ref = cJSON_CreateObject();
        cJSON_AddStringToObject(ref, "kind", owner);
        cJSON_AddStringToObject(ref, "name", name);
        cJSON_AddBoolToObject(ref, "controller", 1);
        cJSON_AddItemToArray(refs, ref);
        cJSON_AddStringToObject(pod, "apiVersion", "v1");
        cJSON_AddStringToObject(pod, "kind", "Pod");
        cJSON_AddItemToObject(pod, "metadata", pmd);
        cJSON_AddItemToObject(pod, "spec", cJSON_Duplicate(GET(tmpl, "spec"), 1));
        cJSON_AddItemToArray(out, pod);
    }
    return 0;
}

static int collect(plan_t *p, const cJSON *doc, const char *where, int depth)
{
    if (cJSON_IsNull(doc))
        return 0;
    const char *kind = jstr(doc, "kind");
    if (!kind) {
        fprintf(stderr, "nodewarden plan: %s: object without kind\n", where);
        return -1;
    }
    if (strcmp(kind, "List") == 0 || (strlen(kind) > 4 && strcmp(kind + strlen(kind) - 4, "List") == 0)) {
        cJSON *it;
        if (depth > 2)
            return -1;
        cJSON_ArrayForEach(it, GET(doc, "items"))
        {
            if (!GET(it, "kind") && strcmp(kind, "List") != 0) {
                char k[64];
                snprintf(k, sizeof k, "%.*s", (int)(strlen(kind) - 4), kind);
                cJSON *cp = cJSON_Duplicate(it, 1);
                int rc = -1;
                if (cp && cJSON_AddStringToObject(cp, "kind", k))
                    rc = collect(p, cp, where, depth + 1);
                cJSON_Delete(cp);
                if (rc != 0)
                    return -1;
                continue;
            }
            if (collect(p, it, where, depth + 1) != 0)
                return -1;
        }
        return 0;
    }
    if (strcmp(kind, "NodePool") == 0) {
        cJSON_AddItemToArray(p->pools, cJSON_Duplicate(doc, 1));
        const cJSON *spec = GET(doc, "spec"), *t = spec ? GET(spec, "template") : NULL;
        const cJSON *ts = t ? GET(t, "spec") : NULL, *it;
        const cJSON *reqs = ts ? GET(ts, "requirements") : NULL;
        cJSON_ArrayForEach(it, reqs)
        {
            const char *k = jstr(it, "key"), *op = jstr(it, "operator");
            const cJSON *v;
            if (k && op && strcmp(k, "topology.kubernetes.io/zone") == 0 && strcmp(op, "In") == 0)
                cJSON_ArrayForEach(v, GET(it, "values"))
                {
                    if (cJSON_IsString(v))
                        add_zone(p, v->valuestring);
                }
        }
    } else if (strcmp(kind, "EC2NodeClass") == 0) {
        const char *n = jstr(GET(doc, "metadata"), "name");
        if (n)
            cJSON_AddItemToArray(p->classes, cJSON_CreateString(n));
    } else if (strcmp(kind, "PodDisruptionBudget") == 0) {
        cJSON_AddItemToArray(p->pdbs, cJSON_Duplicate(doc, 1)); /* plan --disruption */
    } else if (strcmp(kind, "Pod") == 0 || strcmp(kind, "DaemonSet") == 0 ||
               strcmp(kind, "Node") == 0 || strcmp(kind, "NodeClaim") == 0) {
        if (strcmp(kind, "Node") == 0) {
            const cJSON *l = GET(GET(doc, "metadata"), "labels");
            const char *z = jstr(l, "topology.kubernetes.io/zone");
            if (z)
                add_zone(p, z);
        }
        cJSON_AddItemToArray(p->later, cJSON_Duplicate(doc, 1));
    } else if (strcmp(kind, "Deployment") == 0 || strcmp(kind, "ReplicaSet") == 0 ||
               strcmp(kind, "StatefulSet") == 0 || strcmp(kind, "Job") == 0) {
        char why[200];
        if (expand_workload(doc, kind, p->later, why, sizeof why) != 0) {
            fprintf(stderr, "nodewarden plan: %s: %s\n", where, why);
            return -1;
        }
    } else {
        fprintf(stderr, "nodewarden plan: %s: ignoring kind %s\n", where, kind);
    }
    return 0;
}

static const char *obj_name(const cJSON *o)
{
    const char *n = jstr(GET(o, "metadata"), "name");
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

static int build(plan_t *p)
{
    cJSON *it;
    nw_err_t err = {0};
    cJSON_ArrayForEach(it, p->pools)
    {
        const cJSON *ref = GET(GET(GET(it, "spec"), "template"), "spec");
        const char *cls = jstr(ref ? GET(ref, "nodeClassRef") : NULL, "name");
        if (cJSON_GetArraySize(p->classes) > 0 && cls && !has_class(p, cls)) {
            fprintf(stderr,
                    "nodewarden plan: NodePool %s: EC2NodeClass \"%s\" not found, the pool is "
                    "not ready and is left out\n",
                    obj_name(it), cls);
            continue;
        }
        cJSON *obj = cJSON_Duplicate(it, 1);
        if (!obj || gpu_mutate(p, &obj, false) != 0)
            fprintf(stderr, "nodewarden plan: NodePool %s: GPU policy patch not applied\n",
                    obj_name(it));
        memset(&err, 0, sizeof err);
        nw_rc_t prc = nw_sched_snap_add_pool_json(p->snap, obj ? obj : it, &err);
        cJSON_Delete(obj);
        if (prc != NW_OK) {
            fprintf(stderr, "nodewarden plan: NodePool %s: %s: %s\n", obj_name(it), err.path,
                    err.msg);
            return -1;
        }
    }
    cJSON_ArrayForEach(it, p->later)
    {
        const char *kind = jstr(it, "kind");
        nw_rc_t rc;
        memset(&err, 0, sizeof err);
        if (strcmp(kind, "Pod") == 0) {
            cJSON *obj = NULL;
            /* the webhook sees pods at creation: bound pods are left as they are */
            if (!jstr(GET(it, "spec"), "nodeName") &&
                (!(obj = cJSON_Duplicate(it, 1)) || gpu_mutate(p, &obj, true) != 0))
                fprintf(stderr, "nodewarden plan: Pod %s: GPU policy patch not applied\n",
                        obj_name(it));
            rc = nw_sched_snap_add_pod_json(p->snap, obj ? obj : it, &err);
            cJSON_Delete(obj);
        } else if (strcmp(kind, "DaemonSet") == 0) {
            rc = nw_sched_snap_add_daemonset_json(p->snap, it, &err);
        } else if (strcmp(kind, "Node") == 0) {
            rc = nw_sched_snap_add_node_json(p->snap, it, &err);
        } else {
            rc = nw_sched_snap_add_nodeclaim_json(p->snap, it, &err);
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
    cJSON *o = cJSON_CreateObject();
    cJSON *ncs = cJSON_AddArrayToObject(o, "nodeclaims");
    for (int i = 0; i < r->nclaims; i++) {
        const nw_sched_claim_t *c = &r->claims[i];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "nodepool", nw_sched_pool_name(s, (size_t)c->pool));
        cJSON_AddStringToObject(j, "nodeClass", nw_sched_pool_nodeclass(s, (size_t)c->pool));
        cJSON_AddStringToObject(j, "instanceType",
                                c->itype >= 0 ? nw_sched_snap_itype(s, (size_t)c->itype)->name : "");
        cJSON *its = cJSON_AddArrayToObject(j, "instanceTypes");
        for (int k = 0; k < c->nitypes; k++)
            cJSON_AddItemToArray(
                its, cJSON_CreateString(nw_sched_snap_itype(s, (size_t)c->itypes[k])->name));
        cJSON_AddStringToObject(j, "zone", c->zone);
        cJSON_AddStringToObject(j, "capacityType", c->capacity_type);
        cJSON_AddNumberToObject(j, "pricePerHour", c->price);
        cJSON_AddItemToObject(j, "requests", nw_sched_res_to_json(s, &c->requests));
        char rq[4096];
        nw_reqs_format(&c->reqs, rq, sizeof rq);
        cJSON_AddStringToObject(j, "requirements", rq);
        cJSON *pods = cJSON_AddArrayToObject(j, "pods");
        for (int k = 0; k < c->npods; k++)
            cJSON_AddItemToArray(pods, cJSON_CreateString(nw_sched_pod_key(s, (size_t)c->pods[k])));
        cJSON_AddItemToArray(ncs, j);
    }
    cJSON *pl = cJSON_AddArrayToObject(o, "placed");
    for (int i = 0; i < r->nplaced; i++) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "pod", nw_sched_pod_key(s, (size_t)r->placed[i].pod));
        cJSON_AddStringToObject(j, "node", r->placed[i].node);
        cJSON_AddItemToArray(pl, j);
    }
    cJSON *un = cJSON_AddArrayToObject(o, "unschedulable");
    for (int i = 0; i < r->nunsched; i++) {
        const nw_sched_unsched_t *u = &r->unsched[i];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "pod", nw_sched_pod_key(s, (size_t)u->pod));
        cJSON *rs = cJSON_AddObjectToObject(j, "reasons");
        if (u->reason)
            cJSON_AddStringToObject(rs, "*", u->reason);
        for (int k = 0; k < u->nreasons; k++)
            if (u->reasons[k])
                cJSON_AddStringToObject(rs, nw_sched_pool_name(s, (size_t)k), u->reasons[k]);
        cJSON_AddItemToArray(un, j);
    }
    cJSON_AddNumberToObject(o, "totalPricePerHour", r->total_price);
    return o;
}

static void print_text(const nw_sched_snap_t *s, const nw_sched_results_t *r)
{
    printf("%d pending pod%s considered\n", r->considered, r->considered == 1 ? "" : "s");
    printf("\nNodeClaims to launch: %d\n", r->nclaims);
    for (int i = 0; i < r->nclaims; i++) {
        const nw_sched_claim_t *c = &r->claims[i];
        printf("  %-14s %-16s %-12s %-10s $%.4f/h  %d pod%s\n",
               nw_sched_pool_name(s, (size_t)c->pool),
               c->itype >= 0 ? nw_sched_snap_itype(s, (size_t)c->itype)->name : "-", c->zone,
               c->capacity_type, c->price, c->npods, c->npods == 1 ? "" : "s");
        if (c->nitypes > 1) {
            printf("      also fits:");
            int shown = c->nitypes - 1 < 8 ? c->nitypes - 1 : 8;
            for (int k = 1; k <= shown; k++)
                printf(" %s", nw_sched_snap_itype(s, (size_t)c->itypes[k])->name);
            if (c->nitypes - 1 > shown)
                printf(" (+%d more)", c->nitypes - 1 - shown);
            printf("\n");
        }
        printf("      pods:");
        for (int k = 0; k < c->npods && k < 10; k++)
            printf(" %s", nw_sched_pod_key(s, (size_t)c->pods[k]));
        if (c->npods > 10)
            printf(" (+%d more)", c->npods - 10);
        printf("\n");
    }
    if (r->nplaced) {
        printf("\nPlaced on existing capacity: %d\n", r->nplaced);
        for (int i = 0; i < r->nplaced; i++)
            printf("  %s -> %s\n", nw_sched_pod_key(s, (size_t)r->placed[i].pod), r->placed[i].node);
    }
    if (r->nunsched) {
        printf("\nCannot be placed: %d\n", r->nunsched);
        for (int i = 0; i < r->nunsched; i++) {
            const nw_sched_unsched_t *u = &r->unsched[i];
            printf("  %s\n", nw_sched_pod_key(s, (size_t)u->pod));
            if (u->reason)
                printf("      %s\n", u->reason);
            for (int k = 0; k < u->nreasons; k++)
                if (u->reasons[k])
                    printf("      %s: %s\n", nw_sched_pool_name(s, (size_t)k), u->reasons[k]);
        }
    }
    printf("\nTotal: $%.4f/hour\n", r->total_price);
}

nw_plan_t *nw_plan_new(bool gpu_policy)
{
    plan_t *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->pools = cJSON_CreateArray();
    p->classes = cJSON_CreateArray();
    p->later = cJSON_CreateArray();
    p->pdbs = cJSON_CreateArray();
    p->snap = nw_sched_snap_new();
    p->gpu_on = gpu_policy;
    if (!p->pools || !p->classes || !p->later || !p->pdbs || !p->snap ||
        nw_gpu_policy_init(&p->gpu, "") != NW_OK) {
        nw_plan_free(p);
        return NULL;
    }
    return p;
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
    cJSON_Delete(p->later);
    cJSON_Delete(p->pdbs);
    nw_sched_snap_free(p->snap);
    nw_gpu_policy_cleanup(&p->gpu);
    free(p);
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
        const char *k = jstr(it, "kind");
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
    if (nw_sched_snap_load_catalog(p->snap, catalog, clen, region, zv, nz, &err) != NW_OK) {
        fprintf(stderr, "nodewarden plan: catalog: %s%s%s\n", err.path, *err.path ? ": " : "",
                err.msg);
        return NULL;
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
        nw_sched_snap_ice(p->snap, b, *z ? z : NULL, *ct ? ct : NULL);
    }
    if (build(p) != 0)
        return NULL;
    return p->snap;
}

int nw_cmd_plan(int argc, char **argv)
{
    const char *output = "text", *catalog = NULL, *region = "us-east-1", *zones = NULL;
    const char *now_s = NULL;
    bool gpu_on = true, disruption = false, spot_to_spot = false;
    const char *files[256], *ice[64];
    int nfiles = 0, nice = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = NULL;
        const char *eq = strchr(a, '=');
        char opt[64];
        if (strncmp(a, "--", 2) == 0 && a[2] && eq && (size_t)(eq - a) < sizeof opt) {
            snprintf(opt, sizeof opt, "%.*s", (int)(eq - a), a);
            val = eq + 1;
            a = opt;
        }
        bool takes = strcmp(a, "--output") == 0 || strcmp(a, "-o") == 0 ||
                     strcmp(a, "--catalog") == 0 || strcmp(a, "--region") == 0 ||
                     strcmp(a, "--zones") == 0 || strcmp(a, "--ice") == 0 ||
                     strcmp(a, "--now") == 0;
        if (takes && !val) {
            if (i + 1 >= argc) {
                fprintf(stderr, "nodewarden plan: %s needs a value\n", a);
                return NW_EXIT_USAGE;
            }
            val = argv[++i];
        }
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return NW_EXIT_OK;
        } else if (strcmp(a, "--output") == 0 || strcmp(a, "-o") == 0) {
            output = val;
        } else if (strcmp(a, "--catalog") == 0) {
            catalog = val;
        } else if (strcmp(a, "--region") == 0) {
            region = val;
        } else if (strcmp(a, "--zones") == 0) {
            zones = val;
        } else if (strcmp(a, "--ice") == 0) {
            if (nice < 64)
                ice[nice++] = val;
        } else if (strcmp(a, "--no-gpu-policy") == 0) {
            gpu_on = false;
        } else if (strcmp(a, "--disruption") == 0) {
            disruption = true;
        } else if (strcmp(a, "--spot-to-spot") == 0) {
            spot_to_spot = true;
        } else if (strcmp(a, "--now") == 0) {
            now_s = val;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "nodewarden plan: unknown flag %s\n", a);
            usage(stderr);
            return NW_EXIT_USAGE;
        } else if (nfiles < 256) {
            files[nfiles++] = a;
        }
    }
    if (strcmp(output, "text") != 0 && strcmp(output, "json") != 0) {
        fprintf(stderr, "nodewarden plan: --output must be text or json\n");
        return NW_EXIT_USAGE;
    }
    if (nfiles == 0) {
        usage(stderr);
        return NW_EXIT_USAGE;
    }
    nw_plan_t *pl = nw_plan_new(gpu_on);
    int ret = NW_EXIT_USAGE;
    char *cattext = NULL;
    nw_sched_snap_t *snap = NULL;
    nw_sched_results_t res;
    memset(&res, 0, sizeof res);
    if (!pl) {
        fprintf(stderr, "nodewarden plan: out of memory\n");
        return NW_EXIT_USAGE;
    }
    for (int f = 0; f < nfiles; f++) {
        size_t len = 0;
        char *text = read_all(files[f], &len);
        if (!text) {
            fprintf(stderr, "nodewarden plan: %s: %s\n", files[f], strerror(errno ? errno : EIO));
            goto out;
        }
        cJSON **docs = NULL;
        size_t *lines = NULL, nd = 0;
        nw_err_t err = {0};
        nw_rc_t rc = nw_yaml_load_docs_lines(text, len, &docs, &lines, &nd, &err);
        free(text);
        if (rc != NW_OK) {
            fprintf(stderr, "nodewarden plan: %s: %s\n", files[f], err.msg);
            goto out;
        }
        int bad = 0;
        for (size_t d = 0; d < nd && !bad; d++) {
            char where[600];
            snprintf(where, sizeof where, "%s: document %zu (line %zu)", files[f], d + 1,
                     lines ? lines[d] : 0);
            bad = nw_plan_collect(pl, docs[d], where);
        }
        nw_yaml_docs_free(docs, nd);
        free(lines);
        if (bad)
            goto out;
    }
    char zbuf[1024];
    const char *zv[16];
    int nz = 0;
    if (zones) {
        snprintf(zbuf, sizeof zbuf, "%s", zones);
        char *save = NULL;
        for (char *t = strtok_r(zbuf, ",", &save); t && nz < 16; t = strtok_r(NULL, ",", &save))
            zv[nz++] = t;
    }
    size_t clen = 0;
    if (catalog && !(cattext = read_all(catalog, &clen))) {
        fprintf(stderr, "nodewarden plan: --catalog %s: %s\n", catalog,
                strerror(errno ? errno : EIO));
        goto out;
    }
    int64_t now = 0;
    if (now_s && nw_time_parse(now_s, &now) != NW_OK) {
        fprintf(stderr, "nodewarden plan: --now wants an RFC 3339 time, got %s\n", now_s);
        goto out;
    }
    snap = nw_plan_snapshot(pl, cattext, clen, region, zv, nz, ice, nice);
    if (!snap)
        goto out;
    if (disruption) {
        ret = nw_plan_disruption(pl, snap, now_s ? now : nw_clock_now(nw_clock_system()),
                                 strcmp(output, "json") == 0, spot_to_spot);
        goto out;
    }
    nw_err_t err = {0};
    if (nw_sched_solve(snap, 0, &res, &err) != NW_OK) {
        fprintf(stderr, "nodewarden plan: %s\n", err.msg);
        goto out;
    }
    if (strcmp(output, "json") == 0) {
        cJSON *j = nw_plan_results_json(snap, &res);
        char *t = j ? cJSON_Print(j) : NULL;
        if (t)
            printf("%s\n", t);
        free(t);
        cJSON_Delete(j);
    } else {
        print_text(snap, &res);
    }
    ret = res.nunsched ? NW_EXIT_FAIL : NW_EXIT_OK;
out:
    nw_sched_results_free(&res);
    free(cattext);
    nw_plan_free(pl);
    return ret;
}
