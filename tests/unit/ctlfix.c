/* tests/unit/ctlfix.c — see ctlfix.h. */
#include "tests/unit/ctlfix.h"

#include <check.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/jsonpatch.h"
#include "scaler/kube/config.h"

/* the object path of a request: no query, no /status or /eviction suffix */
static void obj_path(const char *p, char *out, size_t n)
{
    snprintf(out, n, "%.1000s", p);
    char *q = strchr(out, '?');
    if (q)
        *q = 0;
    size_t l = strlen(out);
    if (l > 7 && strcmp(out + l - 7, "/status") == 0)
        out[l - 7] = 0;
}

static int find(ctlfix_api_t *a, const char *path)
{
    for (int i = 0; i < a->nobj; i++)
        if (a->path[i] && strcmp(a->path[i], path) == 0)
            return i;
    return -1;
}

static void store(ctlfix_api_t *a, const char *path, const char *body)
{
    int i = find(a, path);
    if (i < 0) {
        ck_assert_int_lt(a->nobj, CTLFIX_MAXOBJ);
        i = a->nobj++;
        a->path[i] = strdup(path);
    } else
        free(a->body[i]);
    a->body[i] = strdup(body);
}

void ctlfix_merge(cJSON *target, const cJSON *patch)
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
            ctlfix_merge(t, p);
            continue;
        }
        cJSON_DeleteItemFromObjectCaseSensitive(target, p->string);
        cJSON_AddItemToObject(target, p->string, cJSON_Duplicate(p, 1));
    }
}

static void handler(void *ud, const fake_req_t *r, fake_conn_t *c)
{
    ctlfix_api_t *a = ud;
    char path[1024];
    obj_path(r->path, path, sizeof path);
    pthread_mutex_lock(&a->mu);
    if (a->nlog < CTLFIX_MAXREQ) {
        size_t len = strlen(r->path) + (r->body ? r->body_len : 0) + 32;
        a->log[a->nlog] = malloc(len);
        snprintf(a->log[a->nlog], len, "%s %s %s", r->method, r->path, r->body ? r->body : "");
        a->nlog++;
    }
    if (a->hook && a->hook(a->hook_ud, r, c)) {
        pthread_mutex_unlock(&a->mu);
        return;
    }
    if (a->forbid && strstr(r->path, a->forbid)) {
        pthread_mutex_unlock(&a->mu);
        fake_reply(
            c, 403, "",
            "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":\"Forbidden\",\"code\":403}");
        return;
    }
    char *reply = NULL;
    int code = 200;
    if (strcmp(r->method, "POST") == 0) {
        cJSON *o = cJSON_Parse(r->body ? r->body : "{}");
        cJSON *md = o ? cJSON_GetObjectItemCaseSensitive(o, "metadata") : NULL;
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(md, "name"));
        const char *gen =
            cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(md, "generateName"));
        char nm[300];
        if (name)
            snprintf(nm, sizeof nm, "%s", name);
        else
            snprintf(nm, sizeof nm, "%s%05d", gen ? gen : "obj-", ++a->serial);
        if (md && !name)
            cJSON_AddStringToObject(md, "name", nm);
        if (md) {
            char uid[64];
            snprintf(uid, sizeof uid, "uid-%.50s", nm);
            cJSON_DeleteItemFromObjectCaseSensitive(md, "uid");
            cJSON_AddStringToObject(md, "uid", uid);
            cJSON_DeleteItemFromObjectCaseSensitive(md, "resourceVersion");
            cJSON_AddStringToObject(md, "resourceVersion", "1");
            cJSON_DeleteItemFromObjectCaseSensitive(md, "creationTimestamp");
            cJSON_AddStringToObject(md, "creationTimestamp", "2026-11-30T12:00:00Z");
        }
        reply = o ? cJSON_PrintUnformatted(o) : strdup("{}");
        char p2[1400];
        snprintf(p2, sizeof p2, "%s/%s", path, nm);
        if (!strstr(path, "/events") && !strstr(path, "/eviction"))
            store(a, p2, reply);
        cJSON_Delete(o);
        code = 201;
    } else {
        int i = find(a, path);
        if (i < 0)
            code = 404;
        else if (strcmp(r->method, "GET") == 0)
            reply = strdup(a->body[i]);
        else if (strcmp(r->method, "PATCH") == 0) {
            cJSON *o = cJSON_Parse(a->body[i]);
            cJSON *pt = cJSON_Parse(r->body ? r->body : "{}");
            nw_err_t perr = {0};
            if (o && cJSON_IsObject(pt) && strstr(r->ctype, "merge-patch"))
                ctlfix_merge(o, pt);
            else if (o && cJSON_IsArray(pt) && strstr(r->ctype, "json-patch") &&
                     strstr(path, "/api/v1/nodes/") && nw_jsonpatch_apply(&o, pt, &perr) != NW_OK)
                code = 422; /* a failed test, as the API server answers it (JSON patches
                               are applied to Nodes, the lifecycle's registration) */
            reply = o ? cJSON_PrintUnformatted(o) : strdup(a->body[i]);
            if (code == 200)
                store(a, path, reply);
            cJSON_Delete(o);
            cJSON_Delete(pt);
        } else if (strcmp(r->method, "PUT") == 0) {
            store(a, path, r->body ? r->body : "{}");
            reply = strdup(r->body ? r->body : "{}");
        } else if (strcmp(r->method, "DELETE") == 0) {
            cJSON *o = cJSON_Parse(a->body[i]);
            cJSON *md = cJSON_GetObjectItemCaseSensitive(o, "metadata");
            if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(md, "finalizers")) > 0) {
                /* kept until its finalizers are removed */
                if (!cJSON_GetObjectItemCaseSensitive(md, "deletionTimestamp"))
                    cJSON_AddStringToObject(md, "deletionTimestamp", "2026-11-30T12:00:00Z");
                reply = cJSON_PrintUnformatted(o);
                store(a, path, reply);
            } else {
                reply = a->body[i];
                free(a->path[i]);
                a->path[i] = NULL;
                a->body[i] = NULL;
            }
            cJSON_Delete(o);
        }
    }
    pthread_mutex_unlock(&a->mu);
    if (code == 422)
        fake_reply(
            c, 422, "",
            "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":\"Invalid\",\"code\":422}");
    else if (code == 404)
        fake_reply(
            c, 404, "",
            "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":\"NotFound\",\"code\":404}");
    else
        fake_reply(c, code, "", reply ? reply : "{}");
    free(reply);
}

void ctlfix_init(ctlfix_t *f)
{
    memset(f, 0, sizeof *f);
    pthread_mutex_init(&f->api.mu, NULL);
    f->srv = fake_srv_start(handler, &f->api);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    char *kc = fake_kubeconfig(fake_srv_port(f->srv), "tok");
    nw_kube_config_t *cfg = NULL;
    nw_err_t err = {0};
    ck_assert_int_eq(nw_kube_config_load_kubeconfig(kc, NULL, &cfg, &err), NW_OK);
    unlink(kc);
    free(kc);
    nw_kube_client_opts_t o = {.qps = -1,
                               .backoff_base_ms = 10,
                               .backoff_max_ms = 40,
                               .max_retries = 1,
                               .timeout_ms = 5000};
    ck_assert_int_eq(nw_kube_client_new(cfg, &o, &f->deps.kube, &err), NW_OK);
    f->deps.cache = nw_kube_cache_new(NULL);
    f->deps.rec = nw_kube_write_recorder_new(f->deps.kube, "nodewarden", "test");
    nw_clock_fake_init(&f->clk, CTLFIX_T0);
    f->deps.clock = &f->clk.base;
    nw_kube_cache_set_clock(f->deps.cache, f->deps.clock);
    f->cloud = fake_cloud_new(f->deps.clock);
    f->deps.cloud = &f->cloud->base;
    atomic_store(&f->deps.leading, 1);
    ck_assert_int_eq(nw_ctl_shared_init(&f->mem), NW_OK);
    f->mem.batch_max_ns = 10 * NW_NS_PER_SEC;
    f->mem.vm_overhead = 0.075;
    f->claims = nw_nodeclaim_new(&f->deps, &f->mem, NULL);
    ck_assert(f->deps.cache && f->deps.rec && f->claims);
    for (int k = 0; k < NW_KUBE_KINDS; k++)
        nw_kube_cache_mark_synced(f->deps.cache, (nw_kube_kind_t)k);
}

void ctlfix_free(ctlfix_t *f)
{
    nw_nodeclaim_free(f->claims);
    nw_ctl_shared_cleanup(&f->mem);
    nw_kube_write_recorder_free(f->deps.rec);
    nw_kube_cache_free(f->deps.cache);
    nw_kube_client_free(f->deps.kube);
    fake_srv_stop(f->srv);
    fake_cloud_free(f->cloud);
    for (int i = 0; i < f->api.nlog; i++)
        free(f->api.log[i]);
    for (int i = 0; i < f->api.nobj; i++) {
        free(f->api.path[i]);
        free(f->api.body[i]);
    }
    pthread_mutex_destroy(&f->api.mu);
}

static const char *const KIND_PATH[NW_KUBE_KINDS] = {
    [NW_KUBE_PODS] = "/api/v1/namespaces/",
    [NW_KUBE_NODES] = "/api/v1/nodes/",
    [NW_KUBE_NODEPOOLS] = "/apis/karpenter.sh/v1/nodepools/",
    [NW_KUBE_NODECLAIMS] = "/apis/karpenter.sh/v1/nodeclaims/",
    [NW_KUBE_EC2NODECLASSES] = "/apis/karpenter.k8s.aws/v1/ec2nodeclasses/",
};

void ctlfix_put(ctlfix_t *f, nw_kube_kind_t k, const char *json, int api)
{
    cJSON *o = cJSON_Parse(json);
    ck_assert_msg(o != NULL, "bad fixture JSON: %s", json);
    if (api && KIND_PATH[k]) {
        cJSON *md = cJSON_GetObjectItemCaseSensitive(o, "metadata");
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(md, "name"));
        const char *ns = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(md, "namespace"));
        char path[600];
        if (k == NW_KUBE_PODS)
            snprintf(path, sizeof path, "%s%.100s/pods/%.250s", KIND_PATH[k], ns ? ns : "default",
                     name ? name : "");
        else
            snprintf(path, sizeof path, "%s%.250s", KIND_PATH[k], name ? name : "");
        pthread_mutex_lock(&f->api.mu);
        store(&f->api, path, json);
        pthread_mutex_unlock(&f->api.mu);
    }
    ck_assert_int_eq(nw_kube_cache_upsert(f->deps.cache, k, o), NW_OK);
}

int ctlfix_mark(ctlfix_t *f)
{
    pthread_mutex_lock(&f->api.mu);
    int n = f->api.nlog;
    pthread_mutex_unlock(&f->api.mu);
    return n;
}

int ctlfix_count(ctlfix_t *f, int mark, const char *s1, const char *s2, const char *s3)
{
    int k = 0;
    pthread_mutex_lock(&f->api.mu);
    for (int i = mark; i < f->api.nlog; i++)
        if ((!s1 || strstr(f->api.log[i], s1)) && (!s2 || strstr(f->api.log[i], s2)) &&
            (!s3 || strstr(f->api.log[i], s3)))
            k++;
    pthread_mutex_unlock(&f->api.mu);
    return k;
}

cJSON *ctlfix_get(ctlfix_t *f, const char *path)
{
    pthread_mutex_lock(&f->api.mu);
    int i = find(&f->api, path);
    cJSON *o = i >= 0 ? cJSON_Parse(f->api.body[i]) : NULL;
    pthread_mutex_unlock(&f->api.mu);
    return o;
}

void ctlfix_sync_nodeclaims(ctlfix_t *f)
{
    const char *pre = "/apis/karpenter.sh/v1/nodeclaims/";
    pthread_mutex_lock(&f->api.mu);
    for (int i = 0; i < f->api.nobj; i++)
        if (f->api.path[i] && strncmp(f->api.path[i], pre, strlen(pre)) == 0) {
            cJSON *o = cJSON_Parse(f->api.body[i]);
            if (o)
                ck_assert_int_eq(nw_kube_cache_upsert(f->deps.cache, NW_KUBE_NODECLAIMS, o), NW_OK);
        }
    pthread_mutex_unlock(&f->api.mu);
}

int ctlfix_sync(ctlfix_t *f, nw_kube_kind_t k, const char *path)
{
    cJSON *o = ctlfix_get(f, path);
    if (!o)
        return 0;
    ck_assert_int_eq(nw_kube_cache_upsert(f->deps.cache, k, o), NW_OK);
    return 1;
}

void ctlfix_del(ctlfix_t *f, nw_kube_kind_t k, const char *ns, const char *name)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *md = cJSON_AddObjectToObject(o, "metadata");
    cJSON_AddStringToObject(md, "name", name);
    if (ns && *ns)
        cJSON_AddStringToObject(md, "namespace", ns);
    nw_kube_cache_remove(f->deps.cache, k, o);
    cJSON_Delete(o);
}

void ctlfix_put_nodeclass(ctlfix_t *f)
{
    ctlfix_put(f, NW_KUBE_EC2NODECLASSES,
               "{\"apiVersion\":\"karpenter.k8s.aws/v1\",\"kind\":\"EC2NodeClass\",\"metadata\":{"
               "\"name\":\"default\",\"uid\":\"nc-uid\",\"generation\":1},\"spec\":{\"role\":\"r\","
               "\"amiSelectorTerms\":[{\"id\":\"ami-0fake\"}],\"subnetSelectorTerms\":[{\"tags\":{"
               "\"k\":\"v\"}}],\"securityGroupSelectorTerms\":[{\"tags\":{\"k\":\"v\"}}]},"
               "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\","
               "\"reason\":\"Ready\",\"message\":\"\",\"observedGeneration\":1,"
               "\"lastTransitionTime\":\"2026-11-30T11:59:00Z\"}]}}",
               1);
}

void ctlfix_put_nodepool(ctlfix_t *f, const char *disruption)
{
    char b[4096], d[1024] = "";
    if (disruption)
        snprintf(d, sizeof d, ",\"disruption\":%s", disruption);
    snprintf(b, sizeof b,
             "{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodePool\",\"metadata\":{\"name\":"
             "\"default\",\"uid\":\"p1\",\"generation\":1},\"spec\":{\"template\":{\"spec\":{"
             "\"nodeClassRef\":{\"group\":\"karpenter.k8s.aws\",\"kind\":\"EC2NodeClass\",\"name\":"
             "\"default\"},\"requirements\":["
             "{\"key\":\"karpenter.k8s.aws/instance-category\",\"operator\":\"In\",\"values\":"
             "[\"m\"]},{\"key\":\"kubernetes.io/arch\",\"operator\":\"In\",\"values\":[\"amd64\"]},"
             "{\"key\":\"karpenter.sh/capacity-type\",\"operator\":\"In\",\"values\":"
             "[\"on-demand\"]}]}}%s}}",
             d);
    ctlfix_put(f, NW_KUBE_NODEPOOLS, b, 1);
}

void ctlfix_launched_claim(ctlfix_t *f, const char *name, const char *pid, const char *extra_md,
                           const char *extra_spec, const char *conds)
{
    char b[4096];
    snprintf(b, sizeof b,
             "{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodeClaim\",\"metadata\":{\"name\":"
             "\"%s\",\"uid\":\"uid-%s\",\"creationTimestamp\":\"2026-11-30T12:00:00Z\","
             "\"finalizers\":[\"karpenter.sh/termination\"],\"labels\":{\"karpenter.sh/nodepool\":"
             "\"default\",\"node.kubernetes.io/instance-type\":\"m5.large\"}%s},\"spec\":{"
             "\"nodeClassRef\":{\"group\":\"karpenter.k8s.aws\",\"kind\":\"EC2NodeClass\",\"name\":"
             "\"default\"},\"requirements\":[]%s},\"status\":{\"providerID\":\"%s\",\"conditions\":"
             "[{\"type\":\"Launched\",\"status\":\"True\",\"reason\":\"Launched\","
             "\"lastTransitionTime\":\"2026-11-30T12:00:00Z\"}%s]}}",
             name, name, extra_md ? extra_md : "", extra_spec ? extra_spec : "", pid,
             conds ? conds : "");
    ctlfix_put(f, NW_KUBE_NODECLAIMS, b, 1);
}

void ctlfix_node_pair(ctlfix_t *f, const char *name, const char *conds)
{
    const char *labels =
        "\"karpenter.sh/nodepool\":\"default\",\"node.kubernetes.io/instance-type\":"
        "\"m5.large\",\"karpenter.sh/capacity-type\":\"on-demand\","
        "\"topology.kubernetes.io/zone\":\"us-west-2a\",\"kubernetes.io/arch\":\"amd64\","
        "\"karpenter.k8s.aws/instance-category\":\"m\"";
    char b[4096];
    snprintf(b, sizeof b,
             "{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodeClaim\",\"metadata\":{\"name\":"
             "\"%s\",\"uid\":\"uid-%s\",\"creationTimestamp\":\"2026-11-30T10:00:00Z\","
             "\"finalizers\":[\"karpenter.sh/termination\"],\"labels\":{%s}},\"spec\":{"
             "\"nodeClassRef\":{\"group\":\"karpenter.k8s.aws\",\"kind\":\"EC2NodeClass\",\"name\":"
             "\"default\"},\"requirements\":[]},\"status\":{\"providerID\":"
             "\"aws:///us-west-2a/i-%s\",\"nodeName\":\"node-%s\",\"conditions\":["
             "{\"type\":\"Launched\",\"status\":\"True\",\"reason\":\"Launched\","
             "\"lastTransitionTime\":\"2026-11-30T10:00:00Z\"},"
             "{\"type\":\"Registered\",\"status\":\"True\",\"reason\":\"Registered\","
             "\"lastTransitionTime\":\"2026-11-30T10:01:00Z\"},"
             "{\"type\":\"Initialized\",\"status\":\"True\",\"reason\":\"Initialized\","
             "\"lastTransitionTime\":\"2026-11-30T10:02:00Z\"}%s]}}",
             name, name, labels, name, name, conds ? conds : "");
    ctlfix_put(f, NW_KUBE_NODECLAIMS, b, 1);
    snprintf(b, sizeof b,
             "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"node-%s\","
             "\"uid\":\"uid-node-%s\",\"creationTimestamp\":\"2026-11-30T10:01:00Z\",\"labels\":{"
             "%s,\"kubernetes.io/hostname\":\"node-%s\"}},\"spec\":{\"providerID\":"
             "\"aws:///us-west-2a/i-%s\"},\"status\":{\"allocatable\":{\"cpu\":\"1930m\","
             "\"memory\":\"7Gi\",\"pods\":\"29\"},\"capacity\":{\"cpu\":\"2\",\"memory\":"
             "\"8Gi\",\"pods\":\"29\"},\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\","
             "\"lastTransitionTime\":\"2026-11-30T10:01:30Z\"}]}}",
             name, name, labels, name, name);
    ctlfix_put(f, NW_KUBE_NODES, b, 1);
}

int ctlfix_metric(nw_buf_t *b, nw_rc_t rc, const char *line)
{
    ck_assert_int_eq(rc, NW_OK);
    int hit = b->data && strstr(b->data, line) != NULL;
    if (!hit)
        fprintf(stderr, "no \"%s\" in\n%s", line, b->data ? b->data : "");
    nw_buf_cleanup(b);
    return hit;
}

bool ctlfix_disrupted_taint(const cJSON *node)
{
    nw_node_t *rec = NULL;
    nw_err_t err = {0};
    ck_assert_msg(nw_node_decode(node, &rec, &err) == NW_OK, "%s: %s", err.path, err.msg);
    bool t = nw_ctl_has_disrupted_taint(rec);
    nw_node_free(rec);
    return t;
}
