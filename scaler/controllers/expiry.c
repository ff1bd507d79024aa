/*
 * scaler/controllers/expiry.c — expiration (see expiry.h).
 */
#include "scaler/controllers/expiry.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "admission/gpu.h"
#include "api/duration.h"
#include "common/log.h"
#include "scaler/metrics/kmetrics.h"

#define DEFAULT_EXPIRE_AFTER "720h"

/* The deadline from expireAfter as written (NULL: absent, the default) and the creation
 * time (NULL or not RFC 3339: an error). */
static int deadline(const char *s, const char *ct, int64_t *at_ns, nw_err_t *err)
{
    *at_ns = 0;
    if (!s)
        s = DEFAULT_EXPIRE_AFTER;
    int64_t d = 0;
    bool never = false;
    nw_err_t e = {0};
    if (nw_duration_parse_or_never(s, true, &d, &never, &e) != NW_OK) {
        nw_err_set(err, NW_EINVAL, "spec.expireAfter", "spec.expireAfter: %s", e.msg);
        return -1;
    }
    if (never)
        return 0;
    int64_t created = 0;
    if (!ct || nw_clock_time_parse(ct, &created) != NW_OK) {
        nw_err_set(err, NW_EINVAL, "metadata.creationTimestamp",
                   "metadata.creationTimestamp: missing or not RFC 3339");
        return -1;
    }
    if (d > 0 && created > INT64_MAX - d)
        *at_ns = INT64_MAX;
    else
        *at_ns = created + d;
    return 1;
}

int nw_expiry_deadline(const cJSON *nodeclaim, int64_t *at_ns, nw_err_t *err)
{
    *at_ns = 0;
    const cJSON *ea = nw_json_get(nw_json_get(nodeclaim, "spec"), "expireAfter");
    const char *s = NULL;
    if (ea && !cJSON_IsNull(ea)) {
        if (!cJSON_IsString(ea)) {
            nw_err_set(err, NW_EINVAL, "spec.expireAfter", "spec.expireAfter: must be a string");
            return -1;
        }
        s = ea->valuestring;
    }
    return deadline(s, nw_json_str(nw_json_get(nodeclaim, "metadata"), "creationTimestamp"), at_ns,
                    err);
}

int nw_expiry_deadline_of(const nw_node_claim_t *nc, int64_t *at_ns, nw_err_t *err)
{
    return deadline(nc->expire_after_set ? nc->expire_after : NULL,
                    nc->m.created_text[0] ? nc->m.created_text : NULL, at_ns, err);
}

bool nw_expiry_due(const cJSON *nodeclaim, int64_t now_ns)
{
    int64_t at = 0;
    return nw_expiry_deadline(nodeclaim, &at, NULL) == 1 && now_ns >= at;
}

/* A NodeClaim we deleted a moment ago may still look alive in a lagging snapshot. */
static bool recently_expired(const nw_expiry_t *e, const char *uid)
{
    for (unsigned i = 0; uid[0] && i < NW_EXPIRY_RECENT && i < e->n; i++)
        if (strcmp(e->recent[i], uid) == 0)
            return true;
    return false;
}

/* what a NodeClaim's version says of its expiry (the memo of tickgate.h) */
typedef struct {
    int rc; /* nw_expiry_deadline's answer */
    int64_t at;
} expiry_memo_t;

bool nw_expiry_staged(const struct nw_gpu_policy *gpu, const nw_node_claim_t *nodeclaim)
{
    if (!gpu || !gpu->enabled || !gpu->label_key)
        return false;
    const char *v = nw_node_meta_label(&nodeclaim->m, gpu->label_key);
    for (size_t i = 0; v && i < gpu->nclasses; i++)
        if (gpu->classes[i].rollout_max > 0 && gpu->classes[i].label_value &&
            strcmp(gpu->classes[i].label_value, v) == 0)
            return true;
    return false;
}

void nw_expiry_reset(nw_expiry_t *e)
{
    if (e->gate.kinds)
        nw_tickgate_reset(&e->gate);
}

void nw_expiry_cleanup(nw_expiry_t *e)
{
    nw_tickgate_cleanup(&e->gate);
}

void nw_expiry_tick(nw_expiry_t *e, const nw_kube_snap_t *s)
{
    nw_ctl_deps_t *c = e->deps;
    int64_t now = nw_clock_now(c->clock);
    if (!e->gate.kinds)
        nw_tickgate_init(&e->gate, NW_TICKGATE_KIND(NW_KUBE_NODECLAIMS), sizeof(expiry_memo_t));
    if (nw_tickgate_quiet(&e->gate, s, nw_clock_mono(c->clock), now))
        return; /* no NodeClaim changed and none is due yet */
    bool complete = true;
    int64_t next = NW_TICKGATE_NEVER; /* the earliest expiry still to come */
    for (size_t i = 0; i < nw_kube_cache_snap_count(s, NW_KUBE_NODECLAIMS); i++) {
        if (!nw_ctl_may_write(c)) {
            complete = false;
            break;
        }
        const nw_kube_obj_t *nc = nw_kube_cache_snap_at(s, NW_KUBE_NODECLAIMS, i);
        if (nc->terminating)
            continue;
        bool fresh;
        expiry_memo_t *m = nw_tickgate_memo(&e->gate, nc, &fresh), d;
        if (!m || fresh) {
            d.rc = nw_expiry_deadline_of(nc->nodeclaim, &d.at, NULL);
            if (m)
                *m = d;
        } else
            d = *m;
        if (d.rc != 1)
            continue; /* never, or malformed */
        if (now < d.at) {
            next = nw_tickgate_min(next, d.at);
            continue;
        }
        if (recently_expired(e, nc->uid) || nw_expiry_staged(e->gpu, nc->nodeclaim))
            continue;     /* a staged accelerator node is replaced by disruption */
        complete = false; /* a write: its result shows in the cache, a failure is retried */
        const char *ea = nc->nodeclaim->expire_after_set ? nc->nodeclaim->expire_after : NULL;
        nw_err_t err = {0};
        nw_kube_delete_opts_t opts = {NULL, -1, nc->uid[0] ? nc->uid : NULL, NULL};
        if (nw_kube_write_delete(c->kube, &nw_kube_client_res_nodeclaims, NULL, nc->name, &opts,
                                 NULL, &err) != NW_OK) {
            nw_log_warn("expiry", "cannot delete an expired NodeClaim",
                        NW_LS("nodeclaim", nc->name), NW_LS("error", err.msg));
            continue;
        }
        snprintf(e->recent[e->n++ % NW_EXPIRY_RECENT], sizeof e->recent[0], "%s", nc->uid);
        char msg[256];
        snprintf(msg, sizeof msg, "NodeClaim expired: older than expireAfter (%s); deleting it",
                 ea ? ea : DEFAULT_EXPIRE_AFTER);
        nw_log_info("expiry", "deleted an expired NodeClaim", NW_LS("nodeclaim", nc->name),
                    NW_LS("nodepool", nc->nodepool),
                    NW_LS("expireAfter", ea ? ea : DEFAULT_EXPIRE_AFTER),
                    NW_LS("created", nc->nodeclaim->m.created_text));
        nw_ctl_obj_event(c, &nw_kube_client_res_nodeclaims, nc, "Normal", "Expired", msg);
        if (e->counters)
            nw_prom_counters_inc(e->counters, "expired", nc->nodepool, NULL);
        nw_kmetrics_disrupted_of(c->series, "expired", &nc->nodeclaim->m);
    }
    nw_tickgate_ran(&e->gate, s, complete, NW_TICKGATE_NEVER, next);
}
