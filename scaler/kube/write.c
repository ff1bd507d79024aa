/* scaler/kube/write.c — single-object reads, writes, finalizers, eviction, events. */
#include "scaler/kube/write.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/log.h"
#include "scaler/kube/retry.h"

#define COMP "kube.write"

static const char *meta_str(const cJSON *obj, const char *k)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, k));
}

/* One request; parses a JSON answer into *out when wanted. *code gets the HTTP code. */
static NW_MUST_USE nw_rc_t send_req(nw_kube_client_t *c, const char *method, const char *path,
                                    const char *body, const char *ctype, const char *verb,
                                    const char *resource, int no_retry, cJSON **out, long *code,
                                    nw_kube_resp_t *keep, nw_err_t *err)
{
    if (out)
        *out = NULL;
    nw_kube_resp_t resp;
    nw_kube_client_resp_init(&resp);
    nw_kube_req_t req = {.method = method,
                         .path = path,
                         .body = body,
                         .body_len = body ? strlen(body) : 0,
                         .content_type = ctype,
                         .verb = verb,
                         .resource = resource,
                         .no_retry = no_retry};
    nw_rc_t rc = nw_kube_client_do(c, &req, &resp, err);
    if (code)
        *code = resp.code;
    if (!rc && (resp.code < 200 || resp.code >= 300)) {
        char what[300];
        snprintf(what, sizeof what, "%s %s", method, path);
        rc = nw_kube_client_resp_error(&resp, what, err);
    }
    if (!rc && out && resp.body.len) {
        *out = nw_kube_client_json_parse(resp.body.data, resp.body.len);
        if (!*out)
            rc = nw_err_set(err, NW_EPARSE, "", "%s %s: response is not JSON", method, path);
    }
    if (keep)
        *keep = resp;
    else
        nw_kube_client_resp_cleanup(&resp);
    return rc;
}

static NW_MUST_USE nw_rc_t obj_path(nw_buf_t *p, const nw_kube_res_t *res, const char *ns,
                                    const char *name, int status)
{
    return nw_kube_client_path(p, res, ns, name, status ? "status" : NULL);
}

nw_rc_t nw_kube_write_get(nw_kube_client_t *c, const nw_kube_res_t *res, const char *ns,
                          const char *name, cJSON **out, nw_err_t *err)
{
    nw_buf_t p;
    nw_buf_init(&p, 4096);
    nw_rc_t rc = obj_path(&p, res, ns, name, 0);
    if (!rc)
        rc = send_req(c, "GET", nw_buf_str(&p), NULL, NULL, "get", res->plural, 0, out, NULL, NULL,
                      err);
    nw_buf_cleanup(&p);
    return rc;
}

nw_rc_t nw_kube_write_create(nw_kube_client_t *c, const nw_kube_res_t *res, const char *ns,
                             const cJSON *obj, cJSON **out, nw_err_t *err)
{
    if (!ns || !ns[0])
        ns = meta_str(obj, "namespace");
    if (res->namespaced && (!ns || !ns[0]))
        ns = "default";
    char *body = nw_json_print(obj);
    if (!body)
        return nw_err_set(err, NW_ENOMEM, "", "out of memory");
    nw_buf_t p;
    nw_buf_init(&p, 4096);
    nw_rc_t rc = nw_kube_client_path(&p, res, ns, NULL, NULL);
    if (!rc)
        rc = send_req(c, "POST", nw_buf_str(&p), body, "application/json", "create", res->plural, 0,
                      out, NULL, NULL, err);
    nw_buf_cleanup(&p);
    free(body);
    return rc;
}

nw_rc_t nw_kube_write_update(nw_kube_client_t *c, const nw_kube_res_t *res, const cJSON *obj,
                             int status, cJSON **out, nw_err_t *err)
{
    const char *name = meta_str(obj, "name");
    if (!name || !name[0])
        return nw_err_set(err, NW_EINVAL, "metadata.name", "update: object has no name");
    char *body = nw_json_print(obj);
    if (!body)
        return nw_err_set(err, NW_ENOMEM, "", "out of memory");
    nw_buf_t p;
    nw_buf_init(&p, 4096);
    char rl[64];
    snprintf(rl, sizeof rl, "%s%s", res->plural, status ? "/status" : "");
    nw_rc_t rc = obj_path(&p, res, meta_str(obj, "namespace"), name, status);
    if (!rc)
        rc = send_req(c, "PUT", nw_buf_str(&p), body, "application/json", "update", rl, 0, out,
                      NULL, NULL, err);
    nw_buf_cleanup(&p);
    free(body);
    return rc;
}

static void conflict_pause(int attempt)
{
    nw_kube_backoff_t b;
    nw_kube_retry_backoff_init(&b, 50 * NW_NS_PER_MS, 1000 * NW_NS_PER_MS, 0, 0);
    int64_t d = 0;
    for (int i = 0; i <= attempt; i++)
        d = nw_kube_retry_backoff_next(&b, 0);
    nw_kube_retry_sleep_ns(d);
}

nw_rc_t nw_kube_write_update_retry(nw_kube_client_t *c, const nw_kube_res_t *res, const char *ns,
                                   const char *name, int status, nw_kube_mutate_fn mutate, void *ud,
                                   int max_attempts, cJSON **out, nw_err_t *err)
{
    if (out)
        *out = NULL;
    if (max_attempts <= 0)
        max_attempts = 5;
    for (int attempt = 0; attempt < max_attempts; attempt++) {
        cJSON *obj = NULL;
        nw_rc_t rc = nw_kube_write_get(c, res, ns, name, &obj, err);
        if (rc)
            return rc;
        int m = mutate(obj, ud);
        if (m < 0) {
            cJSON_Delete(obj);
            return nw_err_set(err, NW_EINVAL, "", "update of %s %s abandoned by the caller",
                              res->kind, name);
        }
        if (m > 0) {
            if (out)
                *out = obj;
            else
                cJSON_Delete(obj);
            return NW_OK;
        }
        nw_err_t e = {0};
        rc = nw_kube_write_update(c, res, obj, status, out, &e);
        cJSON_Delete(obj);
        if (rc != NW_ECONFLICT) {
            if (rc)
                nw_err_set(err, e.rc, e.path, "%s", e.msg);
            return rc;
        }
        nw_log_debug(COMP, "update conflict; re-reading", NW_LS("resource", res->plural),
                     NW_LS("name", name), NW_LI("attempt", attempt + 1));
        if (attempt + 1 < max_attempts)
            conflict_pause(attempt);
    }
    return nw_err_set(err, NW_ECONFLICT, "", "update of %s %s: still conflicting after %d attempts",
                      res->kind, name, max_attempts);
}

nw_rc_t nw_kube_write_patch(nw_kube_client_t *c, const nw_kube_res_t *res, const char *ns,
                            const char *name, nw_kube_patch_t type, const char *patch, int status,
                            cJSON **out, nw_err_t *err)
{
    nw_buf_t p;
    nw_buf_init(&p, 4096);
    char rl[64];
    snprintf(rl, sizeof rl, "%s%s", res->plural, status ? "/status" : "");
    nw_rc_t rc = obj_path(&p, res, ns, name, status);
    if (!rc)
        rc = send_req(c, "PATCH", nw_buf_str(&p), patch,
                      type == NW_KUBE_PATCH_JSON ? "application/json-patch+json"
                                                 : "application/merge-patch+json",
                      "patch", rl, 0, out, NULL, NULL, err);
    nw_buf_cleanup(&p);
    return rc;
}

nw_rc_t nw_kube_write_delete(nw_kube_client_t *c, const nw_kube_res_t *res, const char *ns,
                             const char *name, const nw_kube_delete_opts_t *o, int *gone,
                             nw_err_t *err)
{
    if (gone)
        *gone = 0;
    cJSON *opts = nw_json_new_object();
    if (!opts)
        return nw_err_set(err, NW_ENOMEM, "", "out of memory");
    nw_json_add_string(opts, "apiVersion", "v1");
    nw_json_add_string(opts, "kind", "DeleteOptions");
    if (o && o->propagation)
        nw_json_add_string(opts, "propagationPolicy", o->propagation);
    if (o && o->grace_seconds >= 0)
        nw_json_add_number(opts, "gracePeriodSeconds", (double)o->grace_seconds);
    if (o && (o->uid || o->rv)) {
        cJSON *pre = nw_json_add_object(opts, "preconditions");
        if (o->uid)
            nw_json_add_string(pre, "uid", o->uid);
        if (o->rv)
            nw_json_add_string(pre, "resourceVersion", o->rv);
    }
    char *body = nw_json_print(opts);
    cJSON_Delete(opts);
    if (!body)
        return nw_err_set(err, NW_ENOMEM, "", "out of memory");
    nw_buf_t p;
    nw_buf_init(&p, 4096);
    nw_rc_t rc = obj_path(&p, res, ns, name, 0);
    nw_err_t e = {0};
    if (!rc)
        rc = send_req(c, "DELETE", nw_buf_str(&p), body, "application/json", "delete", res->plural,
                      0, NULL, NULL, NULL, &e);
    nw_buf_cleanup(&p);
    free(body);
    if (rc == NW_ENOTFOUND) {
        if (gone)
            *gone = 1;
        return NW_OK;
    }
    if (rc)
        nw_err_set(err, e.rc, e.path, "%s", e.msg);
    return rc;
}

/* JSON-pointer escaping of a string (~ → ~0, / → ~1) into a JSON string value. */
static int finalizer_index(const cJSON *obj, const char *fin)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(m, "finalizers");
    int i = 0;
    const cJSON *f;
    cJSON_ArrayForEach(f, arr)
    {
        if (cJSON_IsString(f) && !strcmp(f->valuestring, fin))
            return i;
        i++;
    }
    return -1;
}

static NW_MUST_USE nw_rc_t finalizer_edit(nw_kube_client_t *c, const nw_kube_res_t *res,
                                          const char *ns, const char *name, const char *fin,
                                          int add, nw_err_t *err)
{
    for (int attempt = 0; attempt < 5; attempt++) {
        cJSON *obj = NULL;
        nw_err_t e = {0};
        nw_rc_t rc = nw_kube_write_get(c, res, ns, name, &obj, &e);
        if (rc == NW_ENOTFOUND && !add)
            return NW_OK;
        if (rc) {
            nw_err_set(err, e.rc, e.path, "%s", e.msg);
            return rc;
        }
        int idx = finalizer_index(obj, fin);
        const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
        const cJSON *dt = cJSON_GetObjectItemCaseSensitive(meta, "deletionTimestamp");
        const cJSON *fins = cJSON_GetObjectItemCaseSensitive(meta, "finalizers");
        const char *rv = meta_str(obj, "resourceVersion");
        if ((add && idx >= 0) || (!add && idx < 0)) {
            cJSON_Delete(obj);
            return NW_OK;
        }
        if (add && dt && !cJSON_IsNull(dt)) {
            cJSON_Delete(obj);
            return nw_err_set(err, NW_EINVAL, "metadata.finalizers",
                              "%s %s is being deleted: no new finalizers can be added", res->kind,
                              name);
        }
        cJSON *patch = nw_json_new_array();
        cJSON *op = nw_json_new_object();
        nw_json_push(patch, op);
        if (add) {
            nw_json_add_string(op, "op", "test");
            nw_json_add_string(op, "path", "/metadata/resourceVersion");
            nw_json_add_string(op, "value", rv ? rv : "");
            op = nw_json_new_object();
            nw_json_push(patch, op);
            nw_json_add_string(op, "op", "add");
            if (cJSON_IsArray(fins)) {
                nw_json_add_string(op, "path", "/metadata/finalizers/-");
                nw_json_add_string(op, "value", fin);
            } else {
                nw_json_add_string(op, "path", "/metadata/finalizers");
                cJSON *v = nw_json_add_array(op, "value");
                nw_json_push(v, nw_json_new_string(fin));
            }
        } else {
            char ptr[64];
            snprintf(ptr, sizeof ptr, "/metadata/finalizers/%d", idx);
            nw_json_add_string(op, "op", "test");
            nw_json_add_string(op, "path", ptr);
            nw_json_add_string(op, "value", fin);
            op = nw_json_new_object();
            nw_json_push(patch, op);
            nw_json_add_string(op, "op", "remove");
            nw_json_add_string(op, "path", ptr);
        }
        cJSON_Delete(obj);
        char *body = nw_json_print(patch);
        cJSON_Delete(patch);
        if (!body)
            return nw_err_set(err, NW_ENOMEM, "", "out of memory");
        memset(&e, 0, sizeof e);
        rc = nw_kube_write_patch(c, res, ns, name, NW_KUBE_PATCH_JSON, body, 0, NULL, &e);
        free(body);
        if (rc == NW_OK)
            return NW_OK;
        if (rc == NW_ENOTFOUND && !add)
            return NW_OK;
        /* a failed test (422) or a conflict: someone else wrote; re-read and retry */
        bool retry = rc == NW_ECONFLICT || (rc == NW_EKUBE && strstr(e.msg, "HTTP 422"));
        if (!retry) {
            nw_err_set(err, e.rc, e.path, "%s", e.msg);
            return rc;
        }
        conflict_pause(attempt);
    }
    return nw_err_set(err, NW_ECONFLICT, "", "%s finalizer %s on %s %s: still conflicting",
                      add ? "adding" : "removing", fin, res->kind, name);
}

nw_rc_t nw_kube_write_finalizer_add(nw_kube_client_t *c, const nw_kube_res_t *res, const char *ns,
                                    const char *name, const char *finalizer, nw_err_t *err)
{
    return finalizer_edit(c, res, ns, name, finalizer, 1, err);
}

nw_rc_t nw_kube_write_finalizer_remove(nw_kube_client_t *c, const nw_kube_res_t *res,
                                       const char *ns, const char *name, const char *finalizer,
                                       nw_err_t *err)
{
    return finalizer_edit(c, res, ns, name, finalizer, 0, err);
}

nw_rc_t nw_kube_write_evict(nw_kube_client_t *c, const char *ns, const char *name,
                            int64_t grace_seconds, nw_kube_evict_t *result, int *retry_after_s,
                            nw_err_t *err)
{
    nw_kube_evict_opts_t o = {grace_seconds, NULL};
    return nw_kube_write_evict_ex(c, ns, name, &o, result, retry_after_s, NULL, err);
}

nw_rc_t nw_kube_write_evict_ex(nw_kube_client_t *c, const char *ns, const char *name,
                               const nw_kube_evict_opts_t *o, nw_kube_evict_t *result,
                               int *retry_after_s, long *code_out, nw_err_t *err)
{
    int64_t grace_seconds = o ? o->grace_seconds : -1;
    const char *uid = o ? o->uid : NULL;
    *result = NW_KUBE_EVICT_BLOCKED;
    if (retry_after_s)
        *retry_after_s = 0;
    if (code_out)
        *code_out = 0;
    cJSON *ev = nw_json_new_object();
    if (!ev)
        return nw_err_set(err, NW_ENOMEM, "", "out of memory");
    nw_json_add_string(ev, "apiVersion", "policy/v1");
    nw_json_add_string(ev, "kind", "Eviction");
    cJSON *m = nw_json_add_object(ev, "metadata");
    nw_json_add_string(m, "name", name);
    nw_json_add_string(m, "namespace", ns);
    if (grace_seconds >= 0 || (uid && *uid)) {
        cJSON *d = nw_json_add_object(ev, "deleteOptions");
        if (grace_seconds >= 0)
            nw_json_add_number(d, "gracePeriodSeconds", (double)grace_seconds);
        if (uid && *uid)
            nw_json_add_string(nw_json_add_object(d, "preconditions"), "uid", uid);
    }
    char *body = nw_json_print(ev);
    cJSON_Delete(ev);
    if (!body)
        return nw_err_set(err, NW_ENOMEM, "", "out of memory");
    nw_buf_t p;
    nw_buf_init(&p, 4096);
    nw_rc_t rc = nw_kube_client_path(&p, &nw_kube_client_res_pods, ns, name, "eviction");
    nw_kube_resp_t resp;
    nw_kube_client_resp_init(&resp);
    if (!rc) {
        nw_kube_req_t req = {.method = "POST",
                             .path = nw_buf_str(&p),
                             .body = body,
                             .body_len = strlen(body),
                             .verb = "create",
                             .resource = "pods/eviction",
                             .no_retry = 1};
        rc = nw_kube_client_do(c, &req, &resp, err);
    }
    free(body);
    if (!rc) {
        long code = resp.code;
        if (code_out)
            *code_out = code;
        if (code >= 300)
            nw_kube_client__resp_parse_status(&resp);
        if (code >= 200 && code < 300) {
            *result = NW_KUBE_EVICT_STARTED;
        } else if (code == 404) {
            *result = NW_KUBE_EVICT_GONE;
        } else if (code == 429 || code == 504) {
            *result = NW_KUBE_EVICT_NOT_NOW;
            if (retry_after_s)
                *retry_after_s = resp.retry_after_s > 0 ? resp.retry_after_s : 5;
            nw_err_set(err, NW_OK, "", "eviction of %s/%s: not now (HTTP %ld): %s", ns, name, code,
                       resp.message);
        } else if (code == 409) {
            *result = NW_KUBE_EVICT_CONFLICT;
            nw_err_set(err, NW_OK, "", "eviction of %s/%s: conflict: %s", ns, name, resp.message);
        } else if (code == 500 || code == 403) {
            *result = NW_KUBE_EVICT_BLOCKED;
            nw_err_set(err, NW_OK, "", "eviction of %s/%s blocked (HTTP %ld): %s", ns, name, code,
                       resp.message);
        } else {
            char what[300];
            snprintf(what, sizeof what, "POST %s", nw_buf_str(&p));
            rc = nw_kube_client_resp_error(&resp, what, err);
        }
    }
    nw_kube_client_resp_cleanup(&resp);
    nw_buf_cleanup(&p);
    return rc;
}

/* ---- events ---------------------------------------------------------------------- */

#define REC_MAX 1024

typedef struct {
    char *key;       /* involved object + type + reason + message */
    uint64_t hash;   /* of key: most entries are told apart without a compare of their keys,
                        which share long prefixes (a burst's Nominated events) */
    char *ns;        /* namespace of the Event */
    char *name;      /* name of the Event */
    int count;       /* count as we know it */
    int written;     /* count last written */
    int64_t last_ns; /* wall time of the last occurrence */
    uint64_t used;   /* LRU tick */
} rec_ent_t;

struct nw_kube_recorder {
    nw_kube_client_t *c;
    char *component, *instance;
    pthread_mutex_t mu;
    nw_kube_rl_t rl;
    rec_ent_t ent[REC_MAX];
    size_t n;
    uint64_t tick;
    uint64_t created, patched, suppressed;
};

nw_kube_recorder_t *nw_kube_write_recorder_new(nw_kube_client_t *c, const char *component,
                                               const char *instance)
{
    nw_kube_recorder_t *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->c = c;
    r->component = strdup(component ? component : "nodewarden");
    r->instance = strdup(instance ? instance : "");
    if (!r->component || !r->instance) {
        free(r->component);
        free(r->instance);
        free(r);
        return NULL;
    }
    pthread_mutex_init(&r->mu, NULL);
    nw_kube_retry_rl_init(&r->rl, nw_kube_client_clock(c), 1.0, 25);
    return r;
}

void nw_kube_write_recorder_free(nw_kube_recorder_t *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++) {
        free(r->ent[i].key);
        free(r->ent[i].ns);
        free(r->ent[i].name);
    }
    nw_kube_retry_rl_cleanup(&r->rl);
    pthread_mutex_destroy(&r->mu);
    free(r->component);
    free(r->instance);
    free(r);
}

void nw_kube_write_recorder_stats(nw_kube_recorder_t *r, uint64_t *created, uint64_t *patched,
                                  uint64_t *suppressed)
{
    pthread_mutex_lock(&r->mu);
    if (created)
        *created = r->created;
    if (patched)
        *patched = r->patched;
    if (suppressed)
        *suppressed = r->suppressed;
    pthread_mutex_unlock(&r->mu);
}

static void fmt_time(int64_t ns, char *buf, size_t len)
{
    nw_clock_time_format(ns, buf, len);
}

/* The recorder's entry for key (r->mu held): found, else new (the least recently used
 * evicted when full) with the Event's namespace and a name from the object's and now;
 * *create says it is new. key is taken (kept by a new entry, else freed). */
static uint64_t key_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

static rec_ent_t *entry_locked(nw_kube_recorder_t *r, char *key, const char *ens, const char *name,
                               int64_t now, bool *create)
{
    rec_ent_t *e = NULL;
    uint64_t h = key_hash(key);
    for (size_t i = 0; i < r->n; i++)
        if (r->ent[i].hash == h && !strcmp(r->ent[i].key, key)) {
            e = &r->ent[i];
            break;
        }
    *create = false;
    if (!e) {
        if (r->n < REC_MAX) {
            e = &r->ent[r->n++];
        } else { /* evict the least recently used */
            e = &r->ent[0];
            for (size_t i = 1; i < r->n; i++)
                if (r->ent[i].used < e->used)
                    e = &r->ent[i];
            free(e->key);
            free(e->ns);
            free(e->name);
        }
        memset(e, 0, sizeof *e);
        e->key = key;
        e->hash = h;
        key = NULL;
        e->ns = strdup(ens);
        char nm[300];
        snprintf(nm, sizeof nm, "%.200s.%llx", name, (unsigned long long)now);
        e->name = strdup(nm);
        *create = true;
    }
    free(key);
    return e;
}

/* The object an event is about. */
typedef struct {
    const nw_kube_res_t *res;
    const char *name, *ons, *uid, *orv; /* its metadata (ons: NULL when cluster-scoped) */
} involved_t;

/* A new v1 Event ev_ns/ev_name about inv. */
static cJSON *event_object(const nw_kube_recorder_t *r, const involved_t *inv, const char *ev_ns,
                           const char *ev_name, const char *type, const char *reason,
                           const char *msg, int count, const char *ts)
{
    cJSON *ev = nw_json_new_object();
    nw_json_add_string(ev, "apiVersion", "v1");
    nw_json_add_string(ev, "kind", "Event");
    cJSON *m = nw_json_add_object(ev, "metadata");
    nw_json_add_string(m, "name", ev_name);
    nw_json_add_string(m, "namespace", ev_ns);
    cJSON *io = nw_json_add_object(ev, "involvedObject");
    nw_json_add_string(io, "apiVersion", inv->res->api_version);
    nw_json_add_string(io, "kind", inv->res->kind);
    nw_json_add_string(io, "name", inv->name);
    if (inv->ons && inv->ons[0])
        nw_json_add_string(io, "namespace", inv->ons);
    if (inv->uid)
        nw_json_add_string(io, "uid", inv->uid);
    if (inv->orv)
        nw_json_add_string(io, "resourceVersion", inv->orv);
    nw_json_add_string(ev, "reason", reason);
    nw_json_add_string(ev, "message", msg);
    nw_json_add_string(ev, "type", type);
    nw_json_add_number(ev, "count", count);
    nw_json_add_string(ev, "firstTimestamp", ts);
    nw_json_add_string(ev, "lastTimestamp", ts);
    cJSON *src = nw_json_add_object(ev, "source");
    nw_json_add_string(src, "component", r->component);
    if (r->instance[0])
        nw_json_add_string(src, "host", r->instance);
    nw_json_add_string(ev, "reportingComponent", r->component);
    nw_json_add_string(ev, "reportingInstance", r->instance);
    return ev;
}

nw_rc_t nw_kube_write_event(nw_kube_recorder_t *r, const nw_kube_res_t *res, const cJSON *obj,
                            const char *type, const char *reason, const char *message,
                            nw_err_t *err)
{
    nw_kube_event_ref_t ref = {res->namespaced ? meta_str(obj, "namespace") : NULL,
                               meta_str(obj, "name"), meta_str(obj, "uid"),
                               meta_str(obj, "resourceVersion")};
    return nw_kube_write_event_ref(r, res, &ref, type, reason, message, err);
}

nw_rc_t nw_kube_write_event_ref(nw_kube_recorder_t *r, const nw_kube_res_t *res,
                                const nw_kube_event_ref_t *ref, const char *type,
                                const char *reason, const char *message, nw_err_t *err)
{
    const char *name = ref->name;
    const char *ons = res->namespaced && ref->ns && ref->ns[0] ? ref->ns : NULL;
    const char *uid = ref->uid && ref->uid[0] ? ref->uid : NULL;
    const char *orv = ref->rv && ref->rv[0] ? ref->rv : NULL;
    if (!name || !name[0])
        return nw_err_set(err, NW_EINVAL, "metadata.name", "event: involved object has no name");
    const char *ens = ons && ons[0] ? ons : "default";
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", message ? message : ""); /* at most 1 KiB */
    size_t kl = strlen(res->kind) + strlen(ens) + strlen(name) + strlen(uid ? uid : "") +
                strlen(type) + strlen(reason) + strlen(msg) + 16;
    char *key = malloc(kl);
    if (!key)
        return nw_err_set(err, NW_ENOMEM, "", "out of memory");
    snprintf(key, kl, "%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s", res->kind, ens, name,
             uid ? uid : "", type, reason, msg);
    const nw_clock_t *clk = nw_kube_client_clock(r->c);
    int64_t now = nw_clock_now(clk);
    char ts[40];
    fmt_time(now, ts, sizeof ts);

    pthread_mutex_lock(&r->mu);
    bool create;
    rec_ent_t *e = entry_locked(r, key, ens, name, now, &create);
    e->count++;
    e->last_ns = now;
    e->used = ++r->tick;
    int count = e->count;
    char *ev_ns = e->ns ? strdup(e->ns) : NULL;
    char *ev_name = e->name ? strdup(e->name) : NULL;
    /* best effort: never wait for the limiter; a suppressed occurrence is carried in
     * e->count by the next write */
    bool allowed = nw_kube_retry_rl_try(&r->rl);
    if (!allowed)
        r->suppressed++;
    pthread_mutex_unlock(&r->mu);
    if (!allowed || !ev_ns || !ev_name) {
        free(ev_ns);
        free(ev_name);
        return NW_OK;
    }

    nw_rc_t rc;
    nw_err_t e2 = {0};
    bool was_create = create;
    if (!create) {
        char patch[160];
        snprintf(patch, sizeof patch, "{\"count\":%d,\"lastTimestamp\":\"%s\"}", count, ts);
        rc = nw_kube_write_patch(r->c, &nw_kube_client_res_events, ev_ns, ev_name,
                                 NW_KUBE_PATCH_MERGE, patch, 0, NULL, &e2);
        if (rc == NW_ENOTFOUND) /* expired on the server: start again */
            create = true;
        else if (!rc) {
            pthread_mutex_lock(&r->mu);
            r->patched++;
            pthread_mutex_unlock(&r->mu);
        }
    }
    if (create) {
        involved_t inv = {res, name, ons, uid, orv};
        cJSON *ev =
            event_object(r, &inv, ev_ns, ev_name, type, reason, msg, was_create ? 1 : count, ts);
        memset(&e2, 0, sizeof e2);
        rc = nw_kube_write_create(r->c, &nw_kube_client_res_events, ev_ns, ev, NULL, &e2);
        cJSON_Delete(ev);
        pthread_mutex_lock(&r->mu);
        if (!rc)
            r->created++;
        pthread_mutex_unlock(&r->mu);
    }
    if (rc) {
        nw_log_every(30, NW_LOG_WARN, COMP, "event not recorded", NW_LS("reason", reason),
                     NW_LS("error", e2.msg));
        nw_err_set(err, e2.rc, e2.path, "%s", e2.msg);
    }
    free(ev_ns);
    free(ev_name);
    return rc;
}

nw_rc_t nw_kube_write_event_pod(nw_kube_recorder_t *r, const nw_pod_t *pod, const char *type,
                                const char *reason, const char *message, nw_err_t *err)
{
    nw_kube_event_ref_t ref = {pod->ns, pod->name, pod->uid, pod->rv};
    return nw_kube_write_event_ref(r, &nw_kube_client_res_pods, &ref, type, reason, message, err);
}
