/*
 * scaler/ctl/ctl.c — the helpers every controller shares (see ctl.h).
 */
#include "scaler/ctl/ctl.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/json.h"
#include "common/log.h"
#include "common/prom.h"

bool nw_ctl_may_write(nw_ctl_deps_t *c)
{
    return atomic_load(&c->leading) && !atomic_load(&c->stopping);
}

void nw_ctl_fault(nw_ctl_deps_t *c, const char *point, const char *object)
{
    if (c->fault)
        c->fault(c->fault_ud, point, object ? object : "");
}

const char *const nw_ctl_crash_points[] = {
    "nodeclaim-creating",   /* provisioning decided, before the NodeClaim's create */
    "nodeclaim-created",    /* the NodeClaim created, before its launch */
    "launch-sending",       /* on the launch worker, right before CreateFleet */
    "launched",             /* CreateFleet answered, before the NodeClaim's status is written */
    "registering",          /* the Node found and synced, before Registered is written */
    "evicted",              /* a drain's eviction accepted */
    "instance-terminating", /* TerminateInstances sent, before the finalizer goes */
    "disruption-tainted",   /* a disruption's candidates tainted, before replacements */
    "disruption-deleting",  /* a disruption about to delete a candidate NodeClaim */
    "interruption-acting",  /* an SQS message received, before its action */
    "interruption-acked",   /* its action done, before the message is deleted */
    NULL,
};

nw_rc_t nw_ctl_crash_parse(const char *spec, nw_ctl_crash_t *out, nw_err_t *err)
{
    memset(out, 0, sizeof *out);
    out->nth = 1;
    size_t n = strcspn(spec, ":+");
    int known = 0;
    for (int i = 0; nw_ctl_crash_points[i]; i++)
        if (strlen(nw_ctl_crash_points[i]) == n && strncmp(spec, nw_ctl_crash_points[i], n) == 0)
            known = 1;
    if (!known || n >= sizeof out->point)
        return nw_err_set(
            err, NW_EINVAL, "scaler.testing.crashAt",
            "scaler.testing.crashAt: unknown crash point \"%.*s\" (want <point>[:<n>][+<ms>], "
            "a point of docs/robustness.md)",
            (int)(n < 64 ? n : 64), spec);
    memcpy(out->point, spec, n);
    const char *p = spec + n;
    char *end;
    if (*p == ':') {
        errno = 0;
        out->nth = strtol(p + 1, &end, 10);
        if (end == p + 1 || errno || out->nth < 1)
            return nw_err_set(
                err, NW_EINVAL, "scaler.testing.crashAt",
                "scaler.testing.crashAt: the hit count after ':' must be a number >= 1 "
                "(got \"%s\")",
                p + 1);
        p = end;
    }
    if (*p == '+') {
        errno = 0;
        out->delay_ms = strtol(p + 1, &end, 10);
        if (end == p + 1 || errno || out->delay_ms < 0 || out->delay_ms > 600000)
            return nw_err_set(err, NW_EINVAL, "scaler.testing.crashAt",
                              "scaler.testing.crashAt: the delay after '+' must be 0 to 600000 ms "
                              "(got \"%s\")",
                              p + 1);
        p = end;
    }
    if (*p)
        return nw_err_set(err, NW_EINVAL, "scaler.testing.crashAt",
                          "scaler.testing.crashAt: unexpected \"%s\" (want <point>[:<n>][+<ms>])",
                          p);
    return NW_OK;
}

bool nw_ctl_crash_due(nw_ctl_crash_t *cr, const char *point)
{
    if (strcmp(point, cr->point) != 0)
        return false;
    return atomic_fetch_add(&cr->hits, 1) + 1 == cr->nth;
}

static void *crash_later(void *arg)
{
    long ms = (long)(intptr_t)arg;
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
    raise(SIGKILL);
    return NULL;
}

void nw_ctl_crash_fault(void *ud, const char *point, const char *object)
{
    nw_ctl_crash_t *cr = ud;
    if (!nw_ctl_crash_due(cr, point))
        return;
    nw_log_warn("scaler", "crash point reached (scaler.testing.crashAt): SIGKILL",
                NW_LS("point", point), NW_LS("object", object), NW_LI("hit", cr->nth),
                NW_LI("delayMs", cr->delay_ms));
    pthread_t t;
    if (cr->delay_ms > 0 &&
        pthread_create(&t, NULL, crash_later, (void *)(intptr_t)cr->delay_ms) == 0) {
        pthread_detach(t);
        return;
    }
    raise(SIGKILL);
}

nw_rc_t nw_ctl_shared_init(nw_ctl_shared_t *m)
{
    memset(m, 0, sizeof *m);
    return (m->noms = nw_nominations_new()) != NULL ? NW_OK : NW_ENOMEM;
}

void nw_ctl_shared_clear(nw_ctl_shared_t *m)
{
    nw_inflight_clear(&m->inflight);
    nw_nominations_clear(m->noms);
}

void nw_ctl_shared_cleanup(nw_ctl_shared_t *m)
{
    if (!m)
        return;
    nw_inflight_clear(&m->inflight);
    nw_nominations_free(m->noms);
    m->noms = NULL;
}

static int64_t reservation_available(void *ud, const char *id)
{
    nw_cloud_t *cloud = ud;
    return cloud->ops->reservation_available(cloud, id);
}

void nw_ctl_sim_env(nw_ctl_deps_t *c, nw_ctl_shared_t *m, nw_simsnap_env_t *env)
{
    memset(env, 0, sizeof *env);
    env->catalog = c->cloud->ops->catalog(c->cloud);
    env->ice = c->cloud->ops->ice ? c->cloud->ops->ice(c->cloud) : NULL;
    env->now_mono = nw_clock_mono(c->clock);
    env->vm_overhead = m->vm_overhead;
    env->reserved_enis = m->reserved_enis;
    env->default_max_pods = m->default_max_pods;
    env->min_values_best_effort = m->min_values_best_effort;
    env->ignore_preferences = m->ignore_preferences;
    env->gpu = m->gpu;
    env->inflight = &m->inflight;
    env->noms = m->noms;
    if (c->cloud->ops->reservation_available) {
        env->reservation_available = reservation_available;
        env->reservation_ud = c->cloud;
    }
}

void nw_ctl_prepare_catalog(nw_ctl_deps_t *c, const nw_kube_snap_t *s)
{
    const nw_catalog_t *cat = c->cloud->ops->catalog(c->cloud);
    if (!c->cloud->ops->offer_zones || !nw_catalog_offline(cat))
        return;
    nw_catalog_zone_t z[16];
    int nz = 0;
    for (size_t i = 0; i < nw_kube_cache_snap_count(s, NW_KUBE_EC2NODECLASSES); i++) {
        const nw_cloud_class_t *r = NULL;
        if (c->cloud->ops->resolve(c->cloud,
                                   nw_kube_cache_snap_at(s, NW_KUBE_EC2NODECLASSES, i)->json, &r,
                                   NULL) != NW_OK ||
            !r)
            continue;
        for (size_t k = 0; k < r->nsubnets; k++)
            nz = nw_catalog_zone_add(z, nz, 16, r->subnets[k].zone, r->subnets[k].zone_id);
    }
    nw_err_t err = {0};
    if (nz && c->cloud->ops->offer_zones(c->cloud, z, nz, &err) != NW_OK)
        nw_log_warn("provisioner", "cannot set the catalog's zones", NW_LS("error", err.msg));
}

int64_t nw_ctl_nomination_window(const nw_ctl_shared_t *m)
{
    return 2 * m->batch_max_ns > 10 * NW_NS_PER_SEC ? 2 * m->batch_max_ns : 10 * NW_NS_PER_SEC;
}

nw_rc_t nw_ctl_counters_write(nw_buf_t *out, const nw_ctl_counter_t *v, size_t n)
{
    nw_rc_t rc = NW_OK;
    for (size_t i = 0; i < n && rc == NW_OK; i++)
        rc = nw_prom_counter(out, v[i].name, v[i].help, atomic_load(v[i].v));
    return rc;
}

void nw_ctl_event(nw_ctl_deps_t *c, const nw_kube_res_t *res, const cJSON *obj, const char *type,
                  const char *reason, const char *msg)
{
    if (nw_ctl_may_write(c))
        nw_kube_write_event(c->rec, res, obj, type, reason, msg, NULL);
}

void nw_ctl_obj_event(nw_ctl_deps_t *c, const nw_kube_res_t *res, const nw_kube_obj_t *o,
                      const char *type, const char *reason, const char *msg)
{
    if (nw_ctl_may_write(c))
        nw_ctl_obj_event_rec(c->rec, res, o, type, reason, msg);
}

void nw_ctl_obj_event_rec(nw_kube_recorder_t *rec, const nw_kube_res_t *res, const nw_kube_obj_t *o,
                          const char *type, const char *reason, const char *msg)
{
    nw_kube_event_ref_t ref = {o->ns, o->name, o->uid, o->rv};
    (void)nw_kube_write_event_ref(rec, res, &ref, type, reason, msg, NULL);
}

void nw_ctl_pod_event(nw_ctl_deps_t *c, const nw_pod_t *pod, const char *type, const char *reason,
                      const char *msg)
{
    if (nw_ctl_may_write(c))
        (void)nw_kube_write_event_pod(c->rec, pod, type, reason, msg, NULL);
}

bool nw_ctl_claims_launched(const nw_kube_snap_t *s)
{
    for (size_t i = 0; i < nw_kube_cache_snap_count(s, NW_KUBE_NODECLAIMS); i++) {
        const nw_kube_obj_t *nc = nw_kube_cache_snap_at(s, NW_KUBE_NODECLAIMS, i);
        if (!nc->terminating && !nc->provider_id[0])
            return false;
    }
    return true;
}

bool nw_ctl_node_ready(const cJSON *node)
{
    const char *st = nw_json_condition(node, "Ready");
    return st && strcmp(st, "True") == 0;
}

/* The NodeClaim's status as the record has it, for a mutate function (see ctl.h). */
static cJSON *claim_status_base(const nw_node_claim_t *rec)
{
    cJSON *o = cJSON_CreateObject(), *conds = nw_node_meta_conditions_json(&rec->m);
    cJSON *md = o ? cJSON_AddObjectToObject(o, "metadata") : NULL,
          *st = o ? cJSON_AddObjectToObject(o, "status") : NULL;
    bool ok = md && st && conds && cJSON_AddStringToObject(md, "name", rec->m.name) &&
              (!rec->m.rv[0] || cJSON_AddStringToObject(md, "resourceVersion", rec->m.rv)) &&
              (!rec->m.generation ||
               cJSON_AddNumberToObject(md, "generation", (double)rec->m.generation));
    if (ok) {
        cJSON_AddItemToObject(st, "conditions", conds);
        conds = NULL;
        if (rec->node_name[0])
            ok = cJSON_AddStringToObject(st, "nodeName", rec->node_name) != NULL;
        if (ok && rec->last_pod_event) {
            char ts[40];
            nw_clock_time_format(rec->last_pod_event, ts, sizeof ts);
            ok = cJSON_AddStringToObject(st, "lastPodEventTime", ts) != NULL;
        }
    }
    cJSON_Delete(conds);
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

nw_rc_t nw_ctl_claim_status_update(nw_ctl_deps_t *c, const nw_node_claim_t *rec,
                                   nw_kube_mutate_fn mutate, void *ud, nw_err_t *err)
{
    cJSON *o = claim_status_base(rec);
    int m = o ? mutate(o, ud) : -1;
    nw_rc_t rc = NW_ECONFLICT;
    if (m == 1) {
        rc = NW_OK;
    } else if (m == 0) {
        cJSON *patch = cJSON_CreateObject(), *md = cJSON_AddObjectToObject(patch, "metadata");
        char *body = NULL;
        /* held to the record's version (none known: unconditional, as a PUT without one) */
        if (md && (!rec->m.rv[0] || cJSON_AddStringToObject(md, "resourceVersion", rec->m.rv))) {
            cJSON_AddItemToObject(patch, "status",
                                  cJSON_DetachItemFromObjectCaseSensitive(o, "status"));
            body = cJSON_PrintUnformatted(patch);
        }
        cJSON_Delete(patch);
        if (!body)
            rc = nw_err_set(err, NW_ENOMEM, "", "out of memory");
        else
            rc = nw_kube_write_patch(c->kube, &nw_kube_client_res_nodeclaims, NULL, rec->m.name,
                                     NW_KUBE_PATCH_MERGE, body, 1, NULL, err);
        cJSON_free(body);
    }
    cJSON_Delete(o);
    if (rc != NW_ECONFLICT)
        return rc;
    nw_err_clear(err);
    return nw_kube_write_update_retry(c->kube, &nw_kube_client_res_nodeclaims, NULL, rec->m.name, 1,
                                      mutate, ud, 5, NULL, err);
}

bool nw_ctl_has_disrupted_taint(const nw_node_t *node)
{
    return node && nw_node_meta_has_taint(&node->m, NW_TAINT_DISRUPTED, "NoSchedule");
}

int nw_ctl_disrupted_taint(cJSON *node, int add)
{
    cJSON *spec = cJSON_GetObjectItemCaseSensitive(node, "spec");
    if (!cJSON_IsObject(spec)) {
        if (!add)
            return 0;
        cJSON_DeleteItemFromObjectCaseSensitive(node, "spec");
        if (!(spec = cJSON_AddObjectToObject(node, "spec")))
            return -1;
    }
    cJSON *taints = cJSON_GetObjectItemCaseSensitive(spec, "taints");
    int have = 0, changed = 0;
    for (int i = cJSON_GetArraySize(taints) - 1; i >= 0; i--) {
        const cJSON *t = cJSON_GetArrayItem(taints, i);
        const char *k = nw_json_str(t, "key");
        if (!k || strcmp(k, NW_TAINT_DISRUPTED) != 0)
            continue;
        const char *e = nw_json_str(t, "effect"), *v = nw_json_str(t, "value");
        if (add && !have && e && strcmp(e, "NoSchedule") == 0 && (!v || !*v)) {
            have = 1;
            continue;
        }
        cJSON_DeleteItemFromArray(taints, i); /* another effect/value, a duplicate, or removing */
        changed = 1;
    }
    if (add && !have) {
        if (!cJSON_IsArray(taints)) {
            cJSON_DeleteItemFromObjectCaseSensitive(spec, "taints");
            if (!(taints = cJSON_AddArrayToObject(spec, "taints")))
                return -1;
        }
        cJSON *t = cJSON_CreateObject();
        if (!t || !cJSON_AddStringToObject(t, "key", NW_TAINT_DISRUPTED) ||
            !cJSON_AddStringToObject(t, "effect", "NoSchedule")) {
            cJSON_Delete(t);
            return -1;
        }
        cJSON_AddItemToArray(taints, t);
        changed = 1;
    }
    if (!add && cJSON_IsArray(taints) && cJSON_GetArraySize(taints) == 0)
        cJSON_DeleteItemFromObjectCaseSensitive(spec, "taints");
    return changed;
}

/* Replace member key of o by a string; false on OOM. */
static bool set_str(cJSON *o, const char *key, const char *v)
{
    cJSON_DeleteItemFromObjectCaseSensitive(o, key);
    return cJSON_AddStringToObject(o, key, v) != NULL;
}

nw_rc_t nw_ctl_set_condition(cJSON *obj, const char *type, const char *status, const char *reason,
                             const char *message, int64_t now_ns)
{
    cJSON *st = cJSON_GetObjectItemCaseSensitive(obj, "status");
    if (!cJSON_IsObject(st)) {
        cJSON_DeleteItemFromObjectCaseSensitive(obj, "status");
        if (!(st = cJSON_AddObjectToObject(obj, "status")))
            return NW_ENOMEM;
    }
    cJSON *conds = cJSON_GetObjectItemCaseSensitive(st, "conditions");
    if (!cJSON_IsArray(conds)) {
        cJSON_DeleteItemFromObjectCaseSensitive(st, "conditions");
        if (!(conds = cJSON_AddArrayToObject(st, "conditions")))
            return NW_ENOMEM;
    }
    char ts[40];
    nw_clock_time_format(now_ns, ts, sizeof ts);
    cJSON *cd;
    cJSON_ArrayForEach(cd, conds)
    {
        const char *t = nw_json_str(cd, "type");
        if (t && strcmp(t, type) == 0)
            break;
    }
    if (!cd) {
        if (!(cd = cJSON_CreateObject()))
            return NW_ENOMEM;
        cJSON_AddItemToArray(conds, cd);
        if (!cJSON_AddStringToObject(cd, "type", type))
            return NW_ENOMEM;
    }
    const char *old = nw_json_str(cd, "status");
    if (!old || strcmp(old, status) != 0 || !nw_json_get(cd, "lastTransitionTime"))
        if (!set_str(cd, "lastTransitionTime", ts))
            return NW_ENOMEM;
    if (!set_str(cd, "status", status) || !set_str(cd, "reason", reason) ||
        !set_str(cd, "message", message ? message : ""))
        return NW_ENOMEM;
    const cJSON *gen = nw_json_get(nw_json_get(obj, "metadata"), "generation");
    cJSON_DeleteItemFromObjectCaseSensitive(cd, "observedGeneration");
    if (cJSON_IsNumber(gen) && !cJSON_AddNumberToObject(cd, "observedGeneration", gen->valuedouble))
        return NW_ENOMEM;
    return NW_OK;
}
