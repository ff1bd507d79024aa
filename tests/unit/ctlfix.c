/* tests/unit/ctlfix.c — see ctlfix.h. */
#include "tests/unit/ctlfix.h"

#include <check.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* RFC 7386 JSON merge patch of patch into target (a merge PATCH) */
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
            if (o && cJSON_IsObject(pt) && strstr(r->ctype, "merge-patch"))
                merge(o, pt);
            reply = o ? cJSON_PrintUnformatted(o) : strdup(a->body[i]);
            store(a, path, reply);
            cJSON_Delete(o);
            cJSON_Delete(pt);
        } else if (strcmp(r->method, "PUT") == 0) {
            store(a, path, r->body ? r->body : "{}");
            reply = strdup(r->body ? r->body : "{}");
        } else if (strcmp(r->method, "DELETE") == 0) {
            reply = a->body[i];
            free(a->path[i]);
            a->path[i] = NULL;
            a->body[i] = NULL;
        }
    }
    pthread_mutex_unlock(&a->mu);
    if (code == 404)
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
    ck_assert_int_eq(nw_kube_client_new(cfg, &o, &f->ctl.kube, &err), NW_OK);
    f->ctl.cache = nw_kube_cache_new(NULL);
    f->ctl.rec = nw_kube_recorder_new(f->ctl.kube, "nodewarden", "test");
    nw_clock_fake_init(&f->clk, CTLFIX_T0);
    f->ctl.clock = &f->clk.base;
    f->cloud = fake_cloud_new(f->ctl.clock);
    f->ctl.cloud = &f->cloud->base;
    f->ctl.noms = nw_noms_new();
    f->ctl.batch_idle_ns = NW_NS_PER_SEC;
    f->ctl.batch_max_ns = 10 * NW_NS_PER_SEC;
    f->ctl.registration_timeout_ns = 15 * 60 * NW_NS_PER_SEC;
    f->ctl.vm_overhead = 0.075;
    atomic_store(&f->ctl.leading, 1);
    ck_assert(f->ctl.cache && f->ctl.rec && f->ctl.noms);
    for (int k = 0; k < NW_KUBE_KINDS; k++)
        nw_kube_cache_mark_synced(f->ctl.cache, (nw_kube_kind_t)k);
}

void ctlfix_free(ctlfix_t *f)
{
    nw_inflight_clear(&f->ctl.inflight);
    for (size_t i = 0; i < f->ctl.nseen; i++)
        free(f->ctl.seen_uids[i]);
    free(f->ctl.seen_uids);
    nw_noms_free(f->ctl.noms);
    nw_kube_recorder_free(f->ctl.rec);
    nw_kube_cache_free(f->ctl.cache);
    nw_kube_client_free(f->ctl.kube);
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
    ck_assert_int_eq(nw_kube_cache_upsert(f->ctl.cache, k, o), NW_OK);
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
                ck_assert_int_eq(nw_kube_cache_upsert(f->ctl.cache, NW_KUBE_NODECLAIMS, o), NW_OK);
        }
    pthread_mutex_unlock(&f->api.mu);
}
