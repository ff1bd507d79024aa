/*
 * bench/ticks/bench.c — one reconcile tick of each controller of the reconcile thread but
 * the state gauges (disruption only when asked: its last argument) (provisioning's bookkeeping
 * without a solve, lifecycle, gc, termination, upkeep, the accelerator audit, repair), at cluster
 * scale, in one process and without the other threads of `nodewarden serve`:
 *
 *   - a cache filled by hand with N Nodes and their NodeClaims (4 NodePools, one
 *     EC2NodeClass, 5 % of the nodes NVIDIA GPU nodes) and pods_per_node Running pods on
 *     each node, all consistent, so that a tick at rest has nothing to write;
 *   - a Kubernetes API on 127.0.0.1 (tests/unit/fakeapi.h) that answers from that cache
 *     and applies each write to it at once, as the watch would a moment later;
 *   - the unit tests' fake cloud (tests/unit/fakecloud.h) whose instance list holds the
 *     N instances;
 *   - a fake clock, moved 1 s before each idle tick and 100 ms before each churn tick.
 *
 * Before the phases it prints the cache's memory per Node and NodeClaim (their records,
 * api/node.h, all the cache keeps of them, beside the frozen JSON it kept before) and the
 * CPU a scheduling snapshot pays for the cluster's Nodes from their JSON and from their
 * records.
 *
 * Phases: warm-up (ticks until one writes nothing), idle (nothing changes), pod churn
 * (pods_per_tick pods created, marked for deletion or deleted before each tick: 500 events/s
 * at 100 ms ticks by default), NodeClaim churn (the pod churn plus claims_per_tick NodeClaim
 * annotations changed per tick, default 1, as disruption's status writes do). Each phase
 * prints one line per controller: ticks, p50, p99, max and mean in ms of wall time, p99 and
 * max of the ticking thread's CPU time (which a loaded machine inflates far less), and the
 * API requests the phase made. Read the wall times with the machine's load.
 *
 * usage: bench <nodes> [pods_per_node [idle_ticks [churn_ticks [pods_per_tick
 *        [claims_per_tick [none|keep|consolidate [burst_pods [bursts]]]]]]]]
 * The seventh argument adds the disruption controller's tick: "keep" with the NodePools of
 * bench/cluster (consolidateAfter Never, a budget of 0 nodes: its markers and state build,
 * no decision to act on); "consolidate" times decision passes instead of the phases: the
 * bench's own NodePools (30 s, a budget of 10 %), every node consolidatable (its pods use a
 * quarter of it), idle_ticks passes each by a new controller, the decision logged. The
 * consolidation searches' time limits read the fake clock, so they never stop a pass here.
 * burst_pods (default 0: none) adds the burst phase, bench/cluster's burst in one process:
 * that many pending pods (1 CPU / 2 GiB, a zone spread, a nodeSelector only the "burst"
 * NodePool's nodes have, so none fits on an existing node) created at once, then passes
 * until the batch is placed; bursts (default 1) repeats it (each burst's pods deleted, its
 * NodeClaims forgotten, before the next). It prints each burst's provisioning pass (the
 * batch's snapshot build, solve and NodeClaim creates; the launches are a counter).
 * Run through bench/ticks/run (it builds this file against the program's objects).
 */
#include <check.h>
#include <pthread.h>
#include <curl/curl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "admission/gpu.h"
#include "api/drifthash.h"
#include "common/json.h"
#include "common/jsonfreeze.h"
#include "common/log.h"
#include "scaler/controllers/accelaudit.h"
#include "scaler/controllers/disruption.h"
#include "scaler/controllers/gc.h"
#include "scaler/controllers/lifecycle.h"
#include "scaler/controllers/provisioning.h"
#include "scaler/controllers/repair.h"
#include "scaler/controllers/termination.h"
#include "scaler/controllers/upkeep.h"
#include "scaler/kube/config.h"
#include "scaler/nodeclaim/nodeclaim.h"
#include "scaler/sched/schedule.h"
#include "tests/unit/fakeapi.h"
#include "tests/unit/fakecloud.h"

#define T0 (INT64_C(1796040000) * NW_NS_PER_SEC) /* 2026-11-30T12:00:00Z */
#define NPOOLS 4

static nw_kube_cache_t *cache;

/* The cache keeps Nodes and NodeClaims as records only: the objects this bench's API server
 * serves (GET, and the base of PUT, PATCH and DELETE) are kept here too, by kind and name,
 * as the API server holds them. */
typedef struct side {
    char *name;
    cJSON *o;
    struct side *next;
} side_t;
#define SIDE_BUCKETS 16384
static side_t *side[2][SIDE_BUCKETS];
static pthread_mutex_t side_mu = PTHREAD_MUTEX_INITIALIZER;

static int side_kind(nw_kube_kind_t k)
{
    return k == NW_KUBE_NODES ? 0 : k == NW_KUBE_NODECLAIMS ? 1 : -1;
}

static side_t **side_slot(int sk, const char *name)
{
    uint64_t h = 1469598103934665603ull;
    for (const char *p = name; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    side_t **pp = &side[sk][h & (SIDE_BUCKETS - 1)];
    while (*pp && strcmp((*pp)->name, name) != 0)
        pp = &(*pp)->next;
    return pp;
}

/* Keep a copy of o (borrowed) as its kind's object of its name. */
static void side_put(nw_kube_kind_t k, const cJSON *o)
{
    int sk = side_kind(k);
    const char *name = nw_json_str_at(o, "metadata.name");
    if (sk < 0 || !name)
        return;
    cJSON *copy = cJSON_Duplicate(o, 1);
    pthread_mutex_lock(&side_mu);
    side_t **pp = side_slot(sk, name);
    if (*pp) {
        cJSON_Delete((*pp)->o);
        (*pp)->o = copy;
    } else {
        side_t *e = calloc(1, sizeof *e);
        e->name = strdup(name);
        e->o = copy;
        *pp = e;
    }
    pthread_mutex_unlock(&side_mu);
}

/* A copy of the kept object (NULL: none, or not a kept kind). */
static cJSON *side_get(nw_kube_kind_t k, const char *name)
{
    int sk = side_kind(k);
    if (sk < 0 || !name)
        return NULL;
    pthread_mutex_lock(&side_mu);
    side_t **pp = side_slot(sk, name);
    cJSON *copy = *pp ? cJSON_Duplicate((*pp)->o, 1) : NULL;
    pthread_mutex_unlock(&side_mu);
    return copy;
}

static void side_del(nw_kube_kind_t k, const char *name)
{
    int sk = side_kind(k);
    if (sk < 0 || !name)
        return;
    pthread_mutex_lock(&side_mu);
    side_t **pp = side_slot(sk, name);
    side_t *e = *pp;
    if (e) {
        *pp = e->next;
        cJSON_Delete(e->o);
        free(e->name);
        free(e);
    }
    pthread_mutex_unlock(&side_mu);
}
static _Atomic long req_get, req_write, req_post;
static _Atomic long rv_serial = 1000;
static size_t nnodes;
/* the NodePools' disruption: the bench's default, or (disruption mode "keep") what
 * bench/cluster's pools have, which keeps the cluster as it is */
static const char *consolidate_after = "30s", *budget = "10%";
/* disruption mode "consolidate": the NodeClaims carry Consolidatable=True already (the
 * marker a first tick would write), so the timed passes write nothing but their decision */
static bool consolidatable;

/* ---- the API: the cache's objects, each write applied to the cache ---- */

static void merge(cJSON *target, const cJSON *patch)
{
    const cJSON *p;
    cJSON_ArrayForEach(p, patch)
    {
        if (cJSON_IsNull(p)) {
            cJSON_DeleteItemFromObjectCaseSensitive(target, p->string);
            continue;
        }
        cJSON *t = cJSON_GetObjectItemCaseSensitive(target, p->string);
        if (cJSON_IsObject(p) && cJSON_IsObject(t)) {
            merge(t, p);
            continue;
        }
        cJSON_DeleteItemFromObjectCaseSensitive(target, p->string);
        cJSON_AddItemToObject(target, p->string, cJSON_Duplicate(p, 1));
    }
}

static void set_rv(cJSON *o)
{
    char rv[32];
    snprintf(rv, sizeof rv, "%ld", atomic_fetch_add(&rv_serial, 1));
    cJSON *md = cJSON_GetObjectItemCaseSensitive(o, "metadata");
    cJSON_DeleteItemFromObjectCaseSensitive(md, "resourceVersion");
    cJSON_AddStringToObject(md, "resourceVersion", rv);
}

/* the kind and name of an object path; false for anything else */
static bool parse_path(const char *path, nw_kube_kind_t *k, char *ns, char *name, size_t n)
{
    static const struct {
        const char *prefix;
        nw_kube_kind_t kind;
    } kinds[] = {{"/api/v1/nodes/", NW_KUBE_NODES},
                 {"/apis/karpenter.sh/v1/nodeclaims/", NW_KUBE_NODECLAIMS},
                 {"/apis/karpenter.sh/v1/nodepools/", NW_KUBE_NODEPOOLS},
                 {"/apis/karpenter.k8s.aws/v1/ec2nodeclasses/", NW_KUBE_EC2NODECLASSES}};
    char p[1024];
    snprintf(p, sizeof p, "%.1000s", path);
    char *q = strchr(p, '?');
    if (q)
        *q = 0;
    size_t l = strlen(p);
    if (l > 7 && strcmp(p + l - 7, "/status") == 0)
        p[l - 7] = 0;
    ns[0] = 0;
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
        if (strncmp(p, kinds[i].prefix, strlen(kinds[i].prefix)) == 0) {
            *k = kinds[i].kind;
            snprintf(name, n, "%s", p + strlen(kinds[i].prefix));
            return !strchr(name, '/');
        }
    return false;
}

static void reply_404(fake_conn_t *c)
{
    fake_reply(c, 404, "",
               "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":\"NotFound\",\"code\":404}");
}

static void put(nw_kube_kind_t k, cJSON *o);

/* The NodeClaims the burst's batch created (names owned), removed after each burst. */
static char **burst_claims;
static size_t nburst_claims;
static pthread_mutex_t burst_mu = PTHREAD_MUTEX_INITIALIZER;

/* A NodeClaim create: named from generateName, given a uid and a resourceVersion, and put
 * in the cache as the watch would show it. */
static void created_claim(fake_conn_t *c, const char *body)
{
    cJSON *o = cJSON_Parse(body);
    cJSON *md = cJSON_GetObjectItemCaseSensitive(o, "metadata");
    if (!md) {
        cJSON_Delete(o);
        fake_reply(c, 422, "", "{\"kind\":\"Status\",\"code\":422}");
        return;
    }
    pthread_mutex_lock(&burst_mu);
    char name[128];
    const char *gen = nw_json_str(md, "generateName");
    if (!nw_json_str(md, "name")) {
        snprintf(name, sizeof name, "%sb%05zu", gen ? gen : "nc-", nburst_claims);
        cJSON_AddStringToObject(md, "name", name);
    } else
        snprintf(name, sizeof name, "%s", nw_json_str(md, "name"));
    snprintf(name + 100, 28, "uid-%zu", nburst_claims);
    cJSON_AddStringToObject(md, "uid", name + 100);
    burst_claims = realloc(burst_claims, (nburst_claims + 1) * sizeof *burst_claims);
    burst_claims[nburst_claims++] = strdup(name);
    pthread_mutex_unlock(&burst_mu);
    set_rv(o);
    char *txt = cJSON_PrintUnformatted(o);
    put(NW_KUBE_NODECLAIMS, o);
    fake_reply(c, 201, "", txt);
    free(txt);
}

static void handler(void *ud, const fake_req_t *r, fake_conn_t *c)
{
    (void)ud;
    if (strcmp(r->method, "POST") == 0) { /* events, evictions; NodeClaims (the burst) */
        atomic_fetch_add(&req_post, 1);
        if (strncmp(r->path, "/apis/karpenter.sh/v1/nodeclaims", 32) == 0 && r->body) {
            created_claim(c, r->body);
            return;
        }
        fake_reply(c, 201, "", r->body && r->body[0] ? r->body : "{}");
        return;
    }
    if (strcmp(r->method, "GET") == 0)
        atomic_fetch_add(&req_get, 1);
    else
        atomic_fetch_add(&req_write, 1);
    nw_kube_kind_t k;
    char ns[128], name[512];
    if (!parse_path(r->path, &k, ns, name, sizeof name)) {
        reply_404(c);
        return;
    }
    cJSON *cur = side_get(k, name);
    if (side_kind(k) < 0) {
        nw_kube_snap_t *s = nw_kube_cache_snapshot(cache);
        const nw_kube_obj_t *o = s ? nw_kube_cache_snap_get(s, k, ns, name) : NULL;
        cur = o && o->json ? cJSON_Duplicate(o->json, 1) : NULL;
        nw_kube_cache_snap_release(s);
    }
    if (!cur) {
        reply_404(c);
        return;
    }
    cJSON *next = NULL;
    if (strcmp(r->method, "PUT") == 0)
        next = cJSON_Parse(r->body ? r->body : "{}");
    else if (strcmp(r->method, "PATCH") == 0) {
        cJSON *pt = cJSON_Parse(r->body ? r->body : "{}");
        next = cJSON_Duplicate(cur, 1);
        if (pt && strstr(r->ctype, "merge-patch"))
            merge(next, pt);
        cJSON_Delete(pt);
    } else if (strcmp(r->method, "DELETE") == 0) {
        cJSON *md = cJSON_GetObjectItemCaseSensitive(cur, "metadata");
        if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(md, "finalizers")) > 0) {
            next = cJSON_Duplicate(cur, 1);
            md = cJSON_GetObjectItemCaseSensitive(next, "metadata");
            if (!cJSON_GetObjectItemCaseSensitive(md, "deletionTimestamp"))
                cJSON_AddStringToObject(md, "deletionTimestamp", "2026-11-30T12:00:00Z");
        } else {
            nw_rc_t rc = nw_kube_cache_remove(cache, k, cur);
            (void)rc;
            side_del(k, name);
        }
    }
    char *txt;
    if (next) {
        set_rv(next);
        txt = cJSON_PrintUnformatted(next);
        side_put(k, next);
        nw_rc_t rc = nw_kube_cache_upsert(cache, k, next); /* takes next */
        (void)rc;
    } else
        txt = cJSON_PrintUnformatted(cur);
    cJSON_Delete(cur);
    fake_reply(c, 200, "", txt);
    free(txt);
}

/* ---- the cloud's instance list: one running instance per NodeClaim ---- */

static nw_cloud_ops_t ops;

static void instance_id(size_t i, char *out, size_t n)
{
    snprintf(out, n, "i-%017zx", i + 1);
}

static nw_rc_t list(nw_cloud_t *c, nw_cloud_instances_t *out, nw_err_t *err)
{
    (void)c;
    (void)err;
    memset(out, 0, sizeof *out);
    out->v = calloc(nnodes ? nnodes : 1, sizeof *out->v);
    if (!out->v)
        return NW_ENOMEM;
    for (size_t i = 0; i < nnodes; i++) {
        nw_cloud_instance_t *v = &out->v[i];
        instance_id(i, v->id, sizeof v->id);
        snprintf(v->provider_id, sizeof v->provider_id, "aws:///us-west-2a/%s", v->id);
        snprintf(v->type, sizeof v->type, "m5.2xlarge");
        snprintf(v->zone, sizeof v->zone, "us-west-2a");
        snprintf(v->capacity_type, sizeof v->capacity_type, "on-demand");
        snprintf(v->state, sizeof v->state, "running");
        v->launch_ns = T0 - 3600 * NW_NS_PER_SEC;
        snprintf(v->image_id, sizeof v->image_id, "ami-0fake");
        snprintf(v->subnet_id, sizeof v->subnet_id, "subnet-a");
        snprintf(v->sg_ids[0], sizeof v->sg_ids[0], "sg-1");
        v->nsg = 1;
        char claim[32];
        snprintf(claim, sizeof claim, "nc-%05zu", i);
        (void)nw_cloud_instance_tag_add(v, "karpenter.sh/nodeclaim", claim);
    }
    out->n = out->cap = nnodes;
    return NW_OK;
}

/* ---- the cluster ---- */

static void put(nw_kube_kind_t k, cJSON *o)
{
    side_put(k, o);
    if (nw_kube_cache_upsert(cache, k, o) != NW_OK) {
        fprintf(stderr, "bench: cannot add an object\n");
        exit(1);
    }
}

static cJSON *parse(const char *txt)
{
    cJSON *o = cJSON_Parse(txt);
    if (!o) {
        fprintf(stderr, "bench: bad JSON: %s\n", txt);
        exit(1);
    }
    return o;
}

static void annotate(cJSON *o, const char *k, const char *v)
{
    cJSON *md = cJSON_GetObjectItemCaseSensitive(o, "metadata");
    cJSON *ann = cJSON_GetObjectItemCaseSensitive(md, "annotations");
    if (!ann)
        ann = cJSON_AddObjectToObject(md, "annotations");
    cJSON_DeleteItemFromObjectCaseSensitive(ann, k);
    cJSON_AddStringToObject(ann, k, v);
}

static char pool_hash[NPOOLS][NW_HASH_LEN], class_hash[NW_HASH_LEN];

static void put_classes_and_pools(void)
{
    cJSON *nc =
        parse("{\"apiVersion\":\"karpenter.k8s.aws/v1\",\"kind\":\"EC2NodeClass\",\"metadata\":{"
              "\"name\":\"default\",\"uid\":\"nc-uid\",\"generation\":1,\"resourceVersion\":\"1\","
              "\"finalizers\":[\"karpenter.k8s.aws/termination\"]},\"spec\":{\"role\":\"r\","
              "\"amiSelectorTerms\":[{\"id\":\"ami-0fake\"}],\"subnetSelectorTerms\":[{\"tags\":{"
              "\"k\":\"v\"}}],\"securityGroupSelectorTerms\":[{\"tags\":{\"k\":\"v\"}}]}}");
    if (nw_drifthash_ec2nodeclass(nc, NULL, class_hash, NULL) != NW_OK)
        exit(1);
    annotate(nc, NW_ANN_NODECLASS_HASH, class_hash);
    annotate(nc, NW_ANN_NODECLASS_HASH_VERSION, NW_NODECLASS_HASH_VERSION);
    put(NW_KUBE_EC2NODECLASSES, nc);
    for (int p = 0; p < NPOOLS; p++) {
        char b[4096];
        snprintf(b, sizeof b,
                 "{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodePool\",\"metadata\":{\"name\":"
                 "\"pool-%d\",\"uid\":\"p%d\",\"generation\":1,\"resourceVersion\":\"%d\"},"
                 "\"spec\":{\"disruption\":{\"consolidationPolicy\":\"WhenEmptyOrUnderutilized\","
                 "\"consolidateAfter\":\"%s\",\"budgets\":[{\"nodes\":\"%s\"}]},"
                 "\"template\":{\"metadata\":{\"labels\":{\"team\":\"t%d\"}},\"spec\":{"
                 "\"expireAfter\":\"720h\",\"nodeClassRef\":{\"group\":\"karpenter.k8s.aws\","
                 "\"kind\":\"EC2NodeClass\",\"name\":\"default\"},\"requirements\":["
                 "{\"key\":\"karpenter.k8s.aws/instance-category\",\"operator\":\"In\","
                 "\"values\":[\"m\"]},{\"key\":\"kubernetes.io/arch\",\"operator\":\"In\","
                 "\"values\":[\"amd64\"]},{\"key\":\"karpenter.sh/capacity-type\",\"operator\":"
                 "\"In\",\"values\":[\"on-demand\"]}]}}}}",
                 p, p, 10 + p, consolidate_after, budget, p);
        cJSON *o = parse(b);
        if (nw_drifthash_nodepool(o, pool_hash[p], NULL) != NW_OK)
            exit(1);
        annotate(o, NW_ANN_NODEPOOL_HASH, pool_hash[p]);
        annotate(o, NW_ANN_NODEPOOL_HASH_VERSION, NW_NODEPOOL_HASH_VERSION);
        put(NW_KUBE_NODEPOOLS, o);
    }
}

static const char *LABELS =
    "\"node.kubernetes.io/instance-type\":\"m5.2xlarge\",\"karpenter.sh/capacity-type\":"
    "\"on-demand\",\"topology.kubernetes.io/zone\":\"us-west-2a\",\"topology.kubernetes.io/"
    "region\":\"us-west-2\",\"kubernetes.io/arch\":\"amd64\",\"kubernetes.io/os\":\"linux\","
    "\"karpenter.k8s.aws/instance-category\":\"m\",\"karpenter.k8s.aws/instance-family\":"
    "\"m5\",\"karpenter.k8s.aws/instance-generation\":\"5\",\"karpenter.k8s.aws/instance-size\":"
    "\"2xlarge\",\"karpenter.k8s.aws/instance-cpu\":\"8\",\"karpenter.k8s.aws/instance-memory\":"
    "\"32768\"";

static void put_node(size_t i, const nw_gpu_policy_t *gpu)
{
    int pool = (int)(i % NPOOLS);
    bool is_gpu = i % 20 == 7;
    char id[32], extra[512] = "", taints[512] = "";
    instance_id(i, id, sizeof id);
    if (is_gpu) {
        snprintf(extra, sizeof extra, ",\"%s\":\"%s\"", gpu->label_key,
                 gpu->classes[0].label_value);
        snprintf(taints, sizeof taints,
                 ",\"taints\":[{\"key\":\"%s\",\"value\":\"%s\",\"effect\":"
                 "\"NoSchedule\"}]",
                 gpu->classes[0].taint_key, gpu->classes[0].taint_value);
    }
    char b[8192];
    snprintf(b, sizeof b,
             "{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodeClaim\",\"metadata\":{\"name\":"
             "\"nc-%05zu\",\"uid\":\"uid-nc-%05zu\",\"resourceVersion\":\"%zu\",\"generation\":1,"
             "\"creationTimestamp\":\"2026-11-30T10:00:00Z\",\"finalizers\":["
             "\"karpenter.sh/termination\"],\"labels\":{\"karpenter.sh/nodepool\":\"pool-%d\","
             "\"team\":\"t%d\",%s%s},\"annotations\":{\"%s\":\"%s\",\"%s\":\"%s\",\"%s\":\"%s\","
             "\"%s\":\"%s\"},\"ownerReferences\":[{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":"
             "\"NodePool\",\"name\":\"pool-%d\",\"uid\":\"p%d\",\"blockOwnerDeletion\":true}]},"
             "\"spec\":{\"expireAfter\":\"720h\",\"nodeClassRef\":{\"group\":\"karpenter.k8s.aws\","
             "\"kind\":\"EC2NodeClass\",\"name\":\"default\"},\"requirements\":["
             "{\"key\":\"karpenter.k8s.aws/instance-category\",\"operator\":\"In\",\"values\":"
             "[\"m\"]},{\"key\":\"kubernetes.io/arch\",\"operator\":\"In\",\"values\":[\"amd64\"]},"
             "{\"key\":\"karpenter.sh/capacity-type\",\"operator\":\"In\",\"values\":"
             "[\"on-demand\"]},{\"key\":\"node.kubernetes.io/instance-type\",\"operator\":\"In\","
             "\"values\":[\"m5.2xlarge\"]}],\"resources\":{\"requests\":{\"cpu\":\"3\",\"memory\":"
             "\"6Gi\",\"pods\":\"20\"}}},\"status\":{\"providerID\":\"aws:///us-west-2a/%s\","
             "\"nodeName\":\"node-%05zu\",\"imageID\":\"ami-0fake\",\"capacity\":{\"cpu\":\"8\","
             "\"memory\":\"32Gi\",\"pods\":\"58\",\"ephemeral-storage\":\"20Gi\"},\"allocatable\":"
             "{\"cpu\":\"7910m\",\"memory\":\"29Gi\",\"pods\":\"58\",\"ephemeral-storage\":"
             "\"18Gi\"},\"conditions\":["
             "{\"type\":\"Launched\",\"status\":\"True\",\"reason\":\"Launched\",\"message\":\"\","
             "\"lastTransitionTime\":\"2026-11-30T10:00:10Z\"},"
             "{\"type\":\"Registered\",\"status\":\"True\",\"reason\":\"Registered\",\"message\":"
             "\"\",\"lastTransitionTime\":\"2026-11-30T10:01:00Z\"},"
             "{\"type\":\"Initialized\",\"status\":\"True\",\"reason\":\"Initialized\","
             "\"message\":\"\",\"lastTransitionTime\":\"2026-11-30T10:02:00Z\"},"
             "{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"Ready\",\"message\":\"\","
             "\"lastTransitionTime\":\"2026-11-30T10:02:00Z\"}%s]}}",
             i, i, 100 + 2 * i, pool, pool, LABELS, extra, NW_ANN_NODEPOOL_HASH, pool_hash[pool],
             NW_ANN_NODEPOOL_HASH_VERSION, NW_NODEPOOL_HASH_VERSION, NW_ANN_NODECLASS_HASH,
             class_hash, NW_ANN_NODECLASS_HASH_VERSION, NW_NODECLASS_HASH_VERSION, pool, pool, id,
             i,
             consolidatable ? ",{\"type\":\"Consolidatable\",\"status\":\"True\",\"reason\":"
                              "\"Consolidatable\",\"message\":\"\",\"lastTransitionTime\":"
                              "\"2026-11-30T10:03:00Z\"}"
                            : "");
    put(NW_KUBE_NODECLAIMS, parse(b));
    snprintf(b, sizeof b,
             "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"node-%05zu\","
             "\"uid\":\"uid-node-%05zu\",\"resourceVersion\":\"%zu\",\"creationTimestamp\":"
             "\"2026-11-30T10:01:00Z\",\"finalizers\":[\"karpenter.sh/termination\"],\"labels\":{"
             "\"karpenter.sh/nodepool\":\"pool-%d\",\"team\":\"t%d\",\"karpenter.sh/registered\":"
             "\"true\",\"karpenter.sh/initialized\":\"true\",\"kubernetes.io/hostname\":"
             "\"node-%05zu\",%s%s},\"annotations\":{\"node.alpha.kubernetes.io/ttl\":\"0\","
             "\"volumes.kubernetes.io/controller-managed-attach-detach\":\"true\"},"
             "\"ownerReferences\":[{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodeClaim\","
             "\"name\":\"nc-%05zu\",\"uid\":\"uid-nc-%05zu\",\"blockOwnerDeletion\":true}]},"
             "\"spec\":{\"providerID\":\"aws:///us-west-2a/%s\"%s},\"status\":{\"capacity\":{"
             "\"cpu\":\"8\",\"memory\":\"32Gi\",\"pods\":\"58\",\"ephemeral-storage\":\"20Gi\"},"
             "\"allocatable\":{\"cpu\":\"7910m\",\"memory\":\"29Gi\",\"pods\":\"58\","
             "\"ephemeral-storage\":\"18Gi\"},\"conditions\":["
             "{\"type\":\"MemoryPressure\",\"status\":\"False\",\"reason\":"
             "\"KubeletHasSufficientMemory\",\"lastHeartbeatTime\":\"2026-11-30T11:59:00Z\","
             "\"lastTransitionTime\":\"2026-11-30T10:01:30Z\"},"
             "{\"type\":\"DiskPressure\",\"status\":\"False\",\"reason\":"
             "\"KubeletHasNoDiskPressure\",\"lastHeartbeatTime\":\"2026-11-30T11:59:00Z\","
             "\"lastTransitionTime\":\"2026-11-30T10:01:30Z\"},"
             "{\"type\":\"PIDPressure\",\"status\":\"False\",\"reason\":"
             "\"KubeletHasSufficientPID\",\"lastHeartbeatTime\":\"2026-11-30T11:59:00Z\","
             "\"lastTransitionTime\":\"2026-11-30T10:01:30Z\"},"
             "{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"KubeletReady\","
             "\"lastHeartbeatTime\":\"2026-11-30T11:59:00Z\",\"lastTransitionTime\":"
             "\"2026-11-30T10:01:30Z\"}],\"addresses\":[{\"type\":\"InternalIP\",\"address\":"
             "\"10.0.%zu.%zu\"},{\"type\":\"Hostname\",\"address\":\"node-%05zu\"}],\"nodeInfo\":{"
             "\"kubeletVersion\":\"v1.34.1\",\"containerRuntimeVersion\":\"containerd://2.1.4\","
             "\"osImage\":\"Amazon Linux 2023\",\"architecture\":\"amd64\"}}}",
             i, i, 101 + 2 * i, pool, pool, i, LABELS, extra, i, i, id, taints, i / 256 % 256,
             i % 256, i);
    put(NW_KUBE_NODES, parse(b));
}

/* With a burst (bench/cluster's pods): 2,000 Deployments of about 50 pods, each with a zone
 * spread and a preferred hostname anti-affinity, as the stand-in generates them; else 50
 * apps without either. */
static bool topo_pods;

static cJSON *pod_json(size_t node, size_t k, int deleting, bool gpu)
{
    char b[4096], topo[1024] = "";
    size_t app = topo_pods ? (node * 20 + k) / 50 % 2000 : k % 50;
    if (topo_pods)
        snprintf(topo, sizeof topo,
                 ",\"topologySpreadConstraints\":[{\"maxSkew\":1,\"topologyKey\":"
                 "\"topology.kubernetes.io/zone\",\"whenUnsatisfiable\":\"ScheduleAnyway\","
                 "\"labelSelector\":{\"matchLabels\":{\"app\":\"app%zu\"}}}],\"affinity\":{"
                 "\"podAntiAffinity\":{\"preferredDuringSchedulingIgnoredDuringExecution\":[{"
                 "\"weight\":100,\"podAffinityTerm\":{\"topologyKey\":"
                 "\"kubernetes.io/hostname\",\"labelSelector\":{\"matchLabels\":{\"app\":"
                 "\"app%zu\"}}}}]}}",
                 app, app);
    snprintf(b, sizeof b,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"app%zu-%05zu-%zu\","
             "\"namespace\":\"ns-%zu\",\"uid\":\"uid-pod-%zu-%zu\",\"resourceVersion\":\"%ld\","
             "\"creationTimestamp\":\"2026-11-30T10:05:00Z\"%s,\"labels\":{\"app\":\"app%zu\","
             "\"pod-template-hash\":\"5d8f7c9b4\"},\"ownerReferences\":[{\"apiVersion\":"
             "\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"app%zu-5d8f7c9b4\",\"uid\":\"rs-%zu\","
             "\"controller\":true,\"blockOwnerDeletion\":true}]},\"spec\":{\"nodeName\":"
             "\"node-%05zu\",\"containers\":[{\"name\":\"main\",\"image\":\"registry/app:1\","
             "\"resources\":{\"requests\":{\"cpu\":\"100m\",\"memory\":\"128Mi\"%s}}}]%s%s},"
             "\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":\"PodScheduled\","
             "\"status\":\"True\",\"lastTransitionTime\":\"2026-11-30T10:05:00Z\"},{\"type\":"
             "\"Ready\",\"status\":\"True\",\"lastTransitionTime\":\"2026-11-30T10:05:10Z\"}],"
             "\"startTime\":\"2026-11-30T10:05:01Z\"}}",
             app, node, k, app % 10, node, k, atomic_fetch_add(&rv_serial, 1),
             deleting ? ",\"deletionTimestamp\":\"2026-11-30T12:00:00Z\"" : "", app, app, app, node,
             gpu ? ",\"nvidia.com/gpu\":\"1\"" : "",
             gpu ? ",\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\"}]" : "",
             topo);
    return parse(b);
}

/* ---- the burst (bench/cluster's: pending pods only new nodes of the "burst" pool hold) ---- */

static _Atomic long launches;

static nw_rc_t launch_ok(nw_cloud_t *c, const nw_cloud_launch_req_t *req, nw_cloud_launch_t *out,
                         nw_cloud_error_t *ce, nw_err_t *err)
{
    (void)c;
    (void)ce;
    (void)err;
    long n = atomic_fetch_add(&launches, 1) + 1000000;
    memset(out, 0, sizeof *out);
    snprintf(out->instance_id, sizeof out->instance_id, "i-%017lx", n);
    snprintf(out->type, sizeof out->type, "%s", req->ntypes > 0 ? req->types[0] : "m5.large");
    snprintf(out->zone, sizeof out->zone, "us-west-2a");
    snprintf(out->zone_id, sizeof out->zone_id, "usw2-az1");
    snprintf(out->image_id, sizeof out->image_id, "ami-0fake");
    snprintf(out->capacity_type, sizeof out->capacity_type, "on-demand");
    snprintf(out->provider_id, sizeof out->provider_id, "aws:///us-west-2a/%s", out->instance_id);
    out->price = 0.1;
    return NW_OK;
}

static void put_burst_pool(void)
{
    put(NW_KUBE_NODEPOOLS,
        parse("{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodePool\",\"metadata\":{\"name\":"
              "\"burst\",\"uid\":\"pburst\",\"generation\":1,\"resourceVersion\":\"50\"},"
              "\"spec\":{\"disruption\":{\"consolidationPolicy\":\"WhenEmptyOrUnderutilized\","
              "\"consolidateAfter\":\"Never\",\"budgets\":[{\"nodes\":\"0\"}]},"
              "\"template\":{\"metadata\":{\"labels\":{\"bench/pool\":\"burst\"}},\"spec\":{"
              "\"expireAfter\":\"Never\",\"nodeClassRef\":{\"group\":\"karpenter.k8s.aws\","
              "\"kind\":\"EC2NodeClass\",\"name\":\"default\"},\"requirements\":["
              "{\"key\":\"karpenter.k8s.aws/instance-category\",\"operator\":\"In\","
              "\"values\":[\"c\",\"m\",\"r\"]},{\"key\":\"kubernetes.io/arch\",\"operator\":\"In\","
              "\"values\":[\"amd64\"]},{\"key\":\"karpenter.sh/capacity-type\",\"operator\":"
              "\"In\",\"values\":[\"on-demand\",\"spot\"]},{\"key\":"
              "\"karpenter.k8s.aws/instance-generation\",\"operator\":\"Gt\",\"values\":[\"4\"]}"
              "]}}}}"));
}

static cJSON *burst_pod_json(int round, size_t i)
{
    char b[4096];
    snprintf(b, sizeof b,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"burst%d-%06zu\","
             "\"namespace\":\"ml-batch\",\"uid\":\"uid-burst-%d-%zu\",\"resourceVersion\":\"%ld\","
             "\"creationTimestamp\":\"2026-11-30T12:00:00Z\",\"labels\":{\"app\":\"burst%d\"},"
             "\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":"
             "\"burst%d-6f7d\",\"uid\":\"rs-burst-%d\",\"controller\":true}]},\"spec\":{"
             "\"nodeSelector\":{\"bench/pool\":\"burst\"},\"topologySpreadConstraints\":[{"
             "\"maxSkew\":1,\"topologyKey\":\"topology.kubernetes.io/zone\",\"whenUnsatisfiable\":"
             "\"ScheduleAnyway\",\"labelSelector\":{\"matchLabels\":{\"app\":\"burst%d\"}}}],"
             "\"containers\":[{\"name\":\"main\",\"image\":\"registry/batch:1\",\"resources\":{"
             "\"requests\":{\"cpu\":\"1\",\"memory\":\"2Gi\"}}}]},\"status\":{\"phase\":"
             "\"Pending\",\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"False\","
             "\"reason\":\"Unschedulable\",\"message\":\"0/1 nodes are available\","
             "\"lastTransitionTime\":\"2026-11-30T12:00:00Z\"}]}}",
             round, i, round, i, atomic_fetch_add(&rv_serial, 1), round, round, round, round);
    return parse(b);
}

/* ---- timing ---- */

enum { C_PROV, C_LIFE, C_GC, C_TERM, C_UPKEEP, C_AUDIT, C_REPAIR, C_DIS, C_N };
static const char *const CNAME[C_N] = {"provisioning", "lifecycle",  "gc",     "termination",
                                       "upkeep",       "accelaudit", "repair", "disruption"};

typedef struct {
    nw_provisioning_t *prov;
    nw_lifecycle_t *life;
    nw_gc_t *gc;
    nw_termination_t *term;
    nw_upkeep_t *upkeep;
    nw_accelaudit_t *audit;
    nw_repair_t *repair;
    nw_disruption_t *dis; /* NULL: not measured */
} ctls_t;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* the calling thread's CPU time (the tick's own, without the fake API's threads) */
static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* one reconcile pass as scaler/loop.c runs it; ms[c] gets each controller's wall time and,
 * when cpu is not NULL, cpu[c] its thread CPU time (what a loaded machine does not inflate) */
static void pass(ctls_t *c, double *ms, double *cpu)
{
    double t, u;
    double scratch[C_N];
    if (!cpu)
        cpu = scratch;
#define TIMED(k, call)                                                                             \
    do {                                                                                           \
        t = now_ms();                                                                              \
        u = cpu_ms();                                                                              \
        call;                                                                                      \
        ms[k] = now_ms() - t;                                                                      \
        cpu[k] = cpu_ms() - u;                                                                     \
    } while (0)
    nw_kube_snap_t *s = nw_kube_cache_snapshot(cache);
    TIMED(C_PROV, nw_provisioning_tick(c->prov, s));
    nw_kube_cache_snap_release(s);
    s = nw_kube_cache_snapshot(cache);
    TIMED(C_LIFE, nw_lifecycle_tick(c->life, s));
    TIMED(C_GC, nw_gc_tick(c->gc, s));
    TIMED(C_TERM, nw_termination_tick(c->term, s));
    TIMED(C_UPKEEP, nw_upkeep_tick(c->upkeep, s));
    TIMED(C_AUDIT, nw_accelaudit_tick(c->audit, s));
    TIMED(C_REPAIR, nw_repair_tick(c->repair, s));
    nw_kube_cache_snap_release(s);
    ms[C_DIS] = cpu[C_DIS] = 0;
    if (c->dis) {
        s = nw_kube_cache_snapshot(cache);
        TIMED(C_DIS, nw_disruption_tick(c->dis, s));
        nw_kube_cache_snap_release(s);
    }
#undef TIMED
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double q(double *v, int n, double p)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    int i = (int)(p * (n - 1) + 0.5);
    return v[i < 0 ? 0 : i >= n ? n - 1 : i];
}

static bool with_disruption;

static void report(const char *phase, double (*ms)[C_N], double (*cpu)[C_N], int n, long gets,
                   long writes, long posts)
{
    double *v = malloc((size_t)n * sizeof *v);
    double all_sum = 0;
    for (int c = 0; c < C_N; c++) {
        if (c == C_DIS && !with_disruption)
            continue;
        double sum = 0;
        for (int i = 0; i < n; i++)
            sum += v[i] = ms[i][c];
        all_sum += sum;
        double mean = sum / n, p50 = q(v, n, 0.5), p99 = q(v, n, 0.99), max = v[n - 1];
        for (int i = 0; i < n; i++)
            v[i] = cpu[i][c];
        double cpu99 = q(v, n, 0.99), cpumax = v[n - 1];
        printf("%-6s %-13s ticks %4d  p50 %8.3f  p99 %8.3f  max %8.3f  mean %8.3f ms"
               "  cpu p99 %8.3f  max %8.3f\n",
               phase, CNAME[c], n, p50, p99, max, mean, cpu99, cpumax);
    }
    printf("%-6s %-13s mean %.3f ms per pass; API: %ld GET, %ld writes, %ld POST\n", phase, "all",
           all_sum / n, gets, writes, posts);
    fflush(stdout);
    free(v);
}

/* ---- churn: pods bound, deleted and created, as bench/cluster's stand-in does ---- */

typedef struct {
    size_t node, k;
    int stage; /* 0 Running, 1 being deleted */
} live_t;

static live_t *churn_pods;
static size_t nchurn, cap_churn, churn_serial;

static void churn(size_t events, size_t pods_per_node)
{
    for (size_t e = 0; e < events; e++) {
        if (nchurn > 0 && (e % 3 != 0 || nchurn > 2000)) {
            /* the oldest churn pod moves on: marked for deletion, then deleted */
            live_t *p = &churn_pods[0];
            if (p->stage == 0) {
                p->stage = 1;
                put(NW_KUBE_PODS, pod_json(p->node, p->k, 1, false));
                live_t t = *p; /* to the back */
                memmove(churn_pods, churn_pods + 1, (nchurn - 1) * sizeof *churn_pods);
                churn_pods[nchurn - 1] = t;
            } else {
                cJSON *o = pod_json(p->node, p->k, 1, false);
                nw_rc_t rc = nw_kube_cache_remove(cache, NW_KUBE_PODS, o);
                (void)rc;
                cJSON_Delete(o);
                memmove(churn_pods, churn_pods + 1, (nchurn - 1) * sizeof *churn_pods);
                nchurn--;
            }
            continue;
        }
        if (nchurn == cap_churn) {
            cap_churn = cap_churn ? 2 * cap_churn : 256;
            churn_pods = realloc(churn_pods, cap_churn * sizeof *churn_pods);
        }
        live_t *p = &churn_pods[nchurn++];
        p->node = (churn_serial * 7919) % nnodes;
        if (p->node % 20 == 7) /* not on the GPU nodes (the audit would report each) */
            p->node = (p->node + 1) % nnodes;
        p->k = pods_per_node + churn_serial++;
        p->stage = 0;
        put(NW_KUBE_PODS, pod_json(p->node, p->k, 0, false));
    }
}

/* one NodeClaim's annotation changed, as disruption's status writes do */
static void touch_claim(size_t i)
{
    char name[32];
    snprintf(name, sizeof name, "nc-%05zu", i % nnodes);
    cJSON *c = side_get(NW_KUBE_NODECLAIMS, name);
    if (!c)
        return;
    char v[32];
    snprintf(v, sizeof v, "%zu", i);
    annotate(c, "bench/touched", v);
    set_rv(c);
    put(NW_KUBE_NODECLAIMS, c);
}

static void run_phase(const char *name, ctls_t *c, nw_clock_fake_t *clk, int ticks, int64_t step_ns,
                      size_t pods_per_tick, size_t pods_per_node, int claims)
{
    double(*ms)[C_N] = calloc((size_t)ticks, sizeof *ms);
    double(*cpu)[C_N] = calloc((size_t)ticks, sizeof *cpu);
    long g0 = atomic_load(&req_get), w0 = atomic_load(&req_write), p0 = atomic_load(&req_post);
    for (int i = 0; i < ticks; i++) {
        nw_clock_fake_advance(clk, step_ns);
        if (pods_per_tick)
            churn(pods_per_tick, pods_per_node);
        for (int k = 0; k < claims; k++)
            touch_claim((size_t)(i * claims + k) * 37);
        pass(c, ms[i], cpu[i]);
    }
    report(name, ms, cpu, ticks, atomic_load(&req_get) - g0, atomic_load(&req_write) - w0,
           atomic_load(&req_post) - p0);
    free(cpu);
    free(ms);
}

/* disruption mode "consolidate": `passes` decision passes, each by a new disruption
 * controller on the same cluster (its first tick: the whole-cluster look, the markers,
 * which have nothing to write, and a pass that finds a command and holds it for
 * validation), timed one by one; the decision is logged at info */
static void consolidation_passes(nw_ctl_deps_t *deps, nw_nodeclaim_t *claims, nw_ctl_shared_t *mem,
                                 int passes)
{
    /* serve's validation delay: the pass holds its command, which is not executed */
    nw_disruption_opts_t dopts = {.validation_ns = 15 * NW_NS_PER_SEC, .view_duty = 10};
    double *v = calloc((size_t)(passes > 0 ? passes : 1), sizeof *v);
    for (int i = 0; i < passes && v; i++) {
        nw_disruption_t *d = nw_disruption_ctl_new(deps, claims, mem, &dopts, NULL);
        if (!d)
            break;
        nw_log_set_level(NW_LOG_INFO);
        nw_kube_snap_t *s = nw_kube_cache_snapshot(cache);
        double t = now_ms(), cpu = cpu_ms();
        nw_disruption_tick(d, s);
        v[i] = now_ms() - t;
        cpu = cpu_ms() - cpu;
        nw_kube_cache_snap_release(s);
        nw_log_set_level(NW_LOG_ERROR);
        nw_disruption_ctl_free(d);
        printf("consolidate pass %d: %.1f ms (%.1f ms of this thread's CPU)\n", i + 1, v[i], cpu);
        fflush(stdout);
    }
    if (v && passes > 0) {
        double p50 = q(v, passes, 0.5); /* sorts v */
        printf("consolidate passes %d  p50 %.1f  max %.1f ms; API: %ld GET, %ld writes, %ld POST\n",
               passes, p50, v[passes - 1], atomic_load(&req_get), atomic_load(&req_write),
               atomic_load(&req_post));
    }
    free(v);
}

/* One burst: n pending pods at once, then 100 ms passes until the batch launched its
 * NodeClaims (at most 30 passes); the pods and the NodeClaims are removed after it and the
 * provisioner's memory forgotten, so the next burst starts as this one did. */
static void run_burst(ctls_t *c, nw_nodeclaim_t *claims, nw_ctl_shared_t *mem, nw_clock_fake_t *clk,
                      size_t n, int round)
{
    long l0 = atomic_load(&launches), p0 = atomic_load(&req_post);
    size_t c0 = nburst_claims;
    double t = now_ms();
    for (size_t i = 0; i < n; i++)
        put(NW_KUBE_PODS, burst_pod_json(round, i));
    printf("burst  %d: %zu pending pods added in %.0f ms\n", round, n, now_ms() - t);
    fflush(stdout);
    nw_log_set_level(NW_LOG_INFO);
    double total = 0;
    for (int k = 0; k < 30 && nburst_claims == c0; k++) {
        double ms[C_N], all = 0;
        nw_clock_fake_advance(clk, 100 * NW_NS_PER_MS);
        pass(c, ms, NULL);
        for (int i = 0; i < C_N; i++)
            all += ms[i];
        total += all;
        printf("burst  %d pass %2d: provisioning %9.1f ms, lifecycle %7.1f, gc %5.1f, "
               "termination %5.1f, upkeep %6.1f, accelaudit %5.1f, repair %5.1f; all %9.1f ms\n",
               round, k, ms[C_PROV], ms[C_LIFE], ms[C_GC], ms[C_TERM], ms[C_UPKEEP], ms[C_AUDIT],
               ms[C_REPAIR], all);
        fflush(stdout);
        if (k == 0)
            nw_clock_fake_advance(clk, NW_NS_PER_SEC); /* the batch's idle window */
    }
    nw_log_set_level(NW_LOG_ERROR);
    (void)nw_nodeclaim_wait_idle(claims, 60000);
    nw_nodeclaim_collect(claims);
    printf("burst  %d: %ld NodeClaims launched, %ld POSTs, %.1f ms of passes\n", round,
           atomic_load(&launches) - l0, atomic_load(&req_post) - p0, total);
    fflush(stdout);
    for (size_t i = 0; i < n; i++) {
        cJSON *o = burst_pod_json(round, i);
        nw_rc_t rc = nw_kube_cache_remove(cache, NW_KUBE_PODS, o);
        (void)rc;
        cJSON_Delete(o);
    }
    pthread_mutex_lock(&burst_mu);
    for (size_t i = 0; i < nburst_claims; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(cJSON_AddObjectToObject(o, "metadata"), "name", burst_claims[i]);
        nw_rc_t rc = nw_kube_cache_remove(cache, NW_KUBE_NODECLAIMS, o);
        (void)rc;
        cJSON_Delete(o);
        side_del(NW_KUBE_NODECLAIMS, burst_claims[i]);
        free(burst_claims[i]);
    }
    nburst_claims = 0;
    pthread_mutex_unlock(&burst_mu);
    nw_ctl_shared_clear(mem);
    nw_provisioning_reset(c->prov);
}

static int g_argc;
/* The frozen size of the kept object (what the cache held beside the record before it
 * kept records only), 0 without one. */
static size_t side_frozen(nw_kube_kind_t k, const char *name)
{
    cJSON *o = side_get(k, name);
    /* less what it dropped: managedFields, and a Node's images, addresses, daemonEndpoints
     * and nodeInfo */
    cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "metadata"),
                                            "managedFields");
    static const char *const unread[] = {"images", "addresses", "daemonEndpoints", "nodeInfo"};
    for (size_t i = 0; k == NW_KUBE_NODES && i < sizeof unread / sizeof *unread; i++)
        cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "status"),
                                                unread[i]);
    cJSON *f = o ? nw_jsonfreeze(o) : NULL;
    size_t n = f ? nw_jsonfreeze_size(f) : 0;
    nw_jsonfreeze_free(f);
    cJSON_Delete(o);
    return n;
}

/* The cache's memory per Node and NodeClaim: the typed record (api/node.h), all it keeps,
 * and the frozen JSON it kept beside the record before (the bench's objects have no
 * managedFields or images to drop). */
static void print_record_bytes(void)
{
    nw_kube_snap_t *s = nw_kube_cache_snapshot(cache);
    size_t nrec = 0, njson = 0, crec = 0, cjson = 0;
    size_t nn = nw_kube_cache_snap_count(s, NW_KUBE_NODES),
           nc = nw_kube_cache_snap_count(s, NW_KUBE_NODECLAIMS);
    for (size_t i = 0; i < nn; i++) {
        const nw_kube_obj_t *o = nw_kube_cache_snap_at(s, NW_KUBE_NODES, i);
        nrec += nw_node_bytes(o->node);
        njson += side_frozen(NW_KUBE_NODES, o->name);
    }
    for (size_t i = 0; i < nc; i++) {
        const nw_kube_obj_t *o = nw_kube_cache_snap_at(s, NW_KUBE_NODECLAIMS, i);
        crec += nw_node_claim_bytes(o->nodeclaim);
        cjson += side_frozen(NW_KUBE_NODECLAIMS, o->name);
    }
    printf("memory per object: Node record %zu B (JSON no longer kept: %zu B); NodeClaim record "
           "%zu B (JSON %zu B)\n",
           nn ? nrec / nn : 0, nn ? njson / nn : 0, nc ? crec / nc : 0, nc ? cjson / nc : 0);
    nw_kube_cache_snap_release(s);
}

/* What a scheduling snapshot pays for the cluster's Nodes on every pass that builds one
 * (provisioning's solve, disruption's simulations): every Node added from its JSON
 * (nw_snap_node_add_json: labels, taints, quantities parsed by field name) and from its
 * record (nw_snap_node_add_node, what scaler/state/simsnap.c does), thread CPU, median of
 * 7 rounds. */
static void print_node_snapshot_cost(void)
{
    nw_kube_snap_t *s = nw_kube_cache_snapshot(cache);
    size_t nn = nw_kube_cache_snap_count(s, NW_KUBE_NODES);
    /* the Nodes' JSON as the API server sends it (the cache keeps records only) */
    cJSON **js = calloc(nn ? nn : 1, sizeof *js);
    for (size_t i = 0; i < nn; i++)
        js[i] = side_get(NW_KUBE_NODES, nw_kube_cache_snap_at(s, NW_KUBE_NODES, i)->name);
    double t[2][7];
    for (int r = 0; r < 7; r++)
        for (int way = 0; way < 2; way++) {
            nw_sched_snap_t *ss = nw_snapshot_new();
            nw_err_t err = {0};
            double t0 = cpu_ms();
            for (size_t i = 0; i < nn; i++) {
                const nw_kube_obj_t *o = nw_kube_cache_snap_at(s, NW_KUBE_NODES, i);
                nw_rc_t rc = way ? nw_snap_node_add_node(ss, o->node, &err)
                                 : nw_snap_node_add_json(ss, js[i], &err);
                ck_assert_int_eq(rc, NW_OK);
            }
            t[way][r] = cpu_ms() - t0;
            nw_snapshot_free(ss);
        }
    for (size_t i = 0; i < nn; i++)
        cJSON_Delete(js[i]);
    free(js);
    qsort(t[0], 7, sizeof(double), cmp_d);
    qsort(t[1], 7, sizeof(double), cmp_d);
    printf("snapshot of %zu Nodes: from JSON %.2f ms, from records %.2f ms (thread CPU, median "
           "of 7)\n",
           nn, t[0][3], t[1][3]);
    nw_kube_cache_snap_release(s);
}

static char **g_argv;

static int bench(int argc, char **argv)
{
    nnodes = (size_t)atol(argv[1]);
    size_t per_node = argc > 2 ? (size_t)atol(argv[2]) : 20;
    int idle = argc > 3 ? atoi(argv[3]) : 60;
    int churn_ticks = argc > 4 ? atoi(argv[4]) : 60;
    size_t per_tick = argc > 5 ? (size_t)atol(argv[5]) : 50;
    int claims_per_tick = argc > 6 ? atoi(argv[6]) : 1;
    const char *dis_mode = argc > 7 ? argv[7] : "none";
    size_t burst = argc > 8 ? (size_t)atol(argv[8]) : 0;
    int bursts = argc > 9 ? atoi(argv[9]) : 1;
    if (strcmp(dis_mode, "keep") == 0) {
        consolidate_after = "Never";
        budget = "0";
        with_disruption = true;
    } else if (strcmp(dis_mode, "consolidate") == 0)
        consolidatable = true;
    else if (strcmp(dis_mode, "none") != 0) {
        fprintf(stderr, "bench: disruption mode must be none, keep or consolidate, not %s\n",
                dis_mode);
        return 2;
    }
    if (nnodes == 0)
        return 2;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    nw_log_set_level(NW_LOG_ERROR);
    cache = nw_kube_cache_new(NULL);
    fake_srv_t *srv = fake_srv_start(handler, NULL);
    char *kc = fake_kubeconfig(fake_srv_port(srv), "tok");
    nw_kube_config_t *cfg = NULL;
    nw_err_t err = {0};
    nw_ctl_deps_t deps;
    memset(&deps, 0, sizeof deps);
    nw_kube_client_opts_t ko = {.qps = -1, .max_retries = 1, .timeout_ms = 5000};
    if (nw_kube_config_load_kubeconfig(kc, NULL, &cfg, &err) != NW_OK ||
        nw_kube_client_new(cfg, &ko, &deps.kube, &err) != NW_OK) {
        fprintf(stderr, "bench: %s\n", err.msg);
        return 1;
    }
    unlink(kc);
    free(kc);
    nw_clock_fake_t clk;
    nw_clock_fake_init(&clk, T0);
    deps.cache = cache;
    deps.clock = &clk.base;
    nw_kube_cache_set_clock(cache, deps.clock);
    deps.rec = nw_kube_write_recorder_new(deps.kube, "nodewarden", "bench");
    deps.series = nw_series_new();
    fake_cloud_t *fc = fake_cloud_new(deps.clock);
    ops = *fc->base.ops;
    ops.list = list;
    if (burst)
        ops.launch = launch_ok;
    topo_pods = burst > 0;
    fc->base.ops = &ops;
    deps.cloud = &fc->base;
    atomic_store(&deps.leading, 1);
    nw_ctl_shared_t mem;
    if (nw_ctl_shared_init(&mem) != NW_OK)
        return 1;
    mem.batch_max_ns = 10 * NW_NS_PER_SEC;
    mem.vm_overhead = 0.075;
    nw_gpu_policy_t gpu;
    if (nw_gpu_policy_init(&gpu, "nodewarden") != NW_OK)
        return 1;
    for (int k = 0; k < NW_KUBE_KINDS; k++)
        nw_kube_cache_mark_synced(cache, (nw_kube_kind_t)k);

    double t = now_ms();
    put_classes_and_pools();
    if (burst)
        put_burst_pool();
    for (size_t i = 0; i < nnodes; i++) {
        put_node(i, &gpu);
        bool g = i % 20 == 7;
        for (size_t k = 0; k < per_node; k++)
            put(NW_KUBE_PODS, pod_json(i, k, 0, g));
    }
    printf("cluster: %zu nodes, %zu NodeClaims, %zu pods (built in %.0f ms)\n", nnodes, nnodes,
           nnodes * per_node, now_ms() - t);
    print_record_bytes();
    print_node_snapshot_cost();

    /* the burst's creates and launches on serve's 16 workers */
    nw_nodeclaim_opts_t kopts = {burst ? 16 : 0, NULL, NULL, 15 * 60 * NW_NS_PER_SEC};
    nw_nodeclaim_t *claims = nw_nodeclaim_new(&deps, &mem, &kopts);
    nw_provisioning_opts_t popts = {NW_NS_PER_SEC, 10 * NW_NS_PER_SEC, 0, 0};
    nw_lifecycle_opts_t lopts = {.registration_timeout_ns = 15 * 60 * NW_NS_PER_SEC};
    nw_gc_opts_t go = {0, 0, 0, -1};
    nw_accelaudit_opts_t aopts = {&gpu, false};
    nw_repair_opts_t ropts = {1, 0, 0};
    ctls_t c = {nw_provisioning_new(&deps, claims, &mem, &popts),
                nw_lifecycle_new(&deps, &lopts),
                nw_gc_new(&deps, &mem.inflight, &go),
                nw_termination_new(&deps),
                nw_upkeep_new(&deps, 15 * 60 * NW_NS_PER_SEC),
                nw_accelaudit_new(&deps, &aopts),
                nw_repair_new(&deps, &ropts),
                NULL};
    nw_disruption_opts_t dopts = {.view_duty = 10}; /* as serve has it */
    if (with_disruption && !(c.dis = nw_disruption_ctl_new(&deps, claims, &mem, &dopts, NULL)))
        return 1;
    if (!claims || !c.prov || !c.life || !c.gc || !c.term || !c.upkeep || !c.audit || !c.repair)
        return 1;
    if (consolidatable)
        consolidation_passes(&deps, claims, &mem, idle);

    /* warm-up: until a pass writes nothing (the first passes judge drift, write statuses) */
    double ms[C_N];
    int w;
    for (w = 0; w < 30 && !consolidatable; w++) {
        long w0 = atomic_load(&req_write) + atomic_load(&req_post);
        nw_clock_fake_advance(&clk, NW_NS_PER_SEC);
        pass(&c, ms, NULL);
        if (w > 0 && atomic_load(&req_write) + atomic_load(&req_post) == w0)
            break;
    }
    if (!consolidatable)
        printf("warm-up: %d passes; %ld GET, %ld writes, %ld POST\n", w + 1, atomic_load(&req_get),
               atomic_load(&req_write), atomic_load(&req_post));

    if (!consolidatable) {
        run_phase("idle", &c, &clk, idle, NW_NS_PER_SEC, 0, per_node, 0);
        run_phase("pods", &c, &clk, churn_ticks, 100 * NW_NS_PER_MS, per_tick, per_node, 0);
        run_phase("claims", &c, &clk, churn_ticks, 100 * NW_NS_PER_MS, per_tick, per_node,
                  claims_per_tick);
        for (int b = 0; burst && b < bursts; b++)
            run_burst(&c, claims, &mem, &clk, burst, b);
    }

    nw_disruption_ctl_free(c.dis);
    nw_repair_free(c.repair);
    nw_accelaudit_free(c.audit);
    nw_upkeep_free(c.upkeep);
    nw_termination_free(c.term);
    nw_gc_free(c.gc);
    nw_lifecycle_free(c.life);
    nw_provisioning_free(c.prov);
    nw_nodeclaim_free(claims);
    nw_ctl_shared_cleanup(&mem);
    nw_gpu_policy_cleanup(&gpu);
    nw_kube_write_recorder_free(deps.rec);
    nw_series_free(deps.series);
    nw_kube_client_free(deps.kube);
    fake_srv_stop(srv);
    nw_kube_cache_free(cache);
    fake_cloud_free(fc);
    free(churn_pods);
    return 0;
}

/* the fakes assert with libcheck, which only works inside a test: the bench is one */
START_TEST(run_bench)
{
    ck_assert_int_eq(bench(g_argc, g_argv), 0);
}
END_TEST

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(
            stderr,
            "usage: %s nodes [pods_per_node [idle_ticks [churn_ticks "
            "[pods_per_tick [claims_per_tick [none|keep|consolidate [burst_pods [bursts]]]]]]]]\n",
            argv[0]);
        return 2;
    }
    g_argc = argc;
    g_argv = argv;
    Suite *s = suite_create("ticks");
    TCase *tc = tcase_create("bench");
    tcase_set_timeout(tc, 0);
    tcase_add_test(tc, run_bench);
    suite_add_tcase(s, tc);
    SRunner *r = srunner_create(s);
    srunner_set_fork_status(r, CK_NOFORK);
    srunner_run_all(r, CK_SILENT);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? 1 : 0;
}
