/*
 * scaler/controllers/upkeep.c — the upkeep controllers' shared state, tick order and metrics
 * (see upkeep.h).
 */
#include "scaler/controllers/upkeep.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaler/controllers/driftmark.h"
#include "scaler/disrupt/hash.h"
#include "common/log.h"
#include "scaler/controllers/expiry.h"
#include "scaler/controllers/poolstatus.h"

nw_upkeep_t *nw_upkeep_new(void)
{
    nw_upkeep_t *u = calloc(1, sizeof *u);
    if (!u)
        return NULL;
    pthread_mutex_init(&u->mu, NULL);
    u->drift = nw_driftmark_new();
    u->pools = nw_poolstatus_new();
    if (!u->drift || !u->pools) {
        nw_upkeep_free(u);
        return NULL;
    }
    return u;
}

void nw_upkeep_free(nw_upkeep_t *u)
{
    if (!u)
        return;
    nw_driftmark_free(u->drift);
    nw_poolstatus_free(u->pools);
    pthread_mutex_destroy(&u->mu);
    free(u->counters);
    free(u);
}

void nw_upkeep_reset(nw_upkeep_t *u)
{
    if (!u)
        return;
    nw_driftmark_reset(u->drift);
    nw_poolstatus_reset(u->pools);
}

void nw_upkeep_tick(nw_ctl_t *c, const nw_kube_snap_t *s)
{
    if (!c->upkeep || !nw_ctl_may_write(c))
        return;
    /* expiration first: an expired NodeClaim needs no drift verdict */
    nw_expiry_tick(c, s);
    nw_driftmark_tick(c, s);
    nw_poolstatus_tick(c, s);
}

void nw_upkeep_stamp_nodeclaim(cJSON *nodeclaim, const nw_kube_snap_t *s)
{
    const cJSON *labels =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(nodeclaim, "metadata"),
                                         "labels");
    const char *pool = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(labels, NW_LABEL_NODEPOOL));
    const char *class = nw_ctl_str(nodeclaim, "spec.nodeClassRef.name");
    const nw_kube_obj_t *po = pool ? nw_kube_snap_get(s, NW_KUBE_NODEPOOLS, NULL, pool) : NULL;
    const nw_kube_obj_t *cl = class ? nw_kube_snap_get(s, NW_KUBE_EC2NODECLASSES, NULL, class) : NULL;
    nw_err_t err = {0};
    if (nw_hash_stamp_nodeclaim(nodeclaim, po ? po->json : NULL, cl ? cl->json : NULL, &err) != NW_OK)
        nw_log_warn("drift", "cannot stamp the NodeClaim's drift hashes", NW_LS("error", err.msg));
}

void nw_upkeep_event(nw_ctl_t *c, const nw_kube_res_t *res, const cJSON *obj, const char *type,
                     const char *reason, const char *msg)
{
    if (nw_ctl_may_write(c))
        nw_kube_event(c->rec, res, obj, type, reason, msg, NULL);
}

static nw_upkeep_counter_t *find(nw_upkeep_t *u, const char *metric, const char *pool,
                                 const char *reason)
{
    for (size_t i = 0; i < u->ncounters; i++) {
        nw_upkeep_counter_t *k = &u->counters[i];
        if (strcmp(k->metric, metric) == 0 && strcmp(k->nodepool, pool) == 0 &&
            strcmp(k->reason, reason) == 0)
            return k;
    }
    return NULL;
}

void nw_upkeep_count(nw_upkeep_t *u, const char *metric, const char *nodepool, const char *reason)
{
    if (!u)
        return;
    const char *pool = nodepool ? nodepool : "";
    const char *why = reason ? reason : "";
    pthread_mutex_lock(&u->mu);
    nw_upkeep_counter_t *k = find(u, metric, pool, why);
    if (!k && u->ncounters == u->cap) {
        size_t cap = u->cap ? u->cap * 2 : 16;
        nw_upkeep_counter_t *nv = realloc(u->counters, cap * sizeof *nv);
        if (nv) {
            u->counters = nv;
            u->cap = cap;
        }
    }
    if (!k && u->ncounters < u->cap) {
        k = &u->counters[u->ncounters++];
        memset(k, 0, sizeof *k);
        snprintf(k->metric, sizeof k->metric, "%s", metric);
        snprintf(k->nodepool, sizeof k->nodepool, "%s", pool);
        snprintf(k->reason, sizeof k->reason, "%s", why);
    }
    if (k)
        k->v++;
    pthread_mutex_unlock(&u->mu);
}

uint64_t nw_upkeep_counter(nw_upkeep_t *u, const char *metric, const char *nodepool,
                           const char *reason)
{
    if (!u)
        return 0;
    pthread_mutex_lock(&u->mu);
    nw_upkeep_counter_t *k = find(u, metric, nodepool ? nodepool : "", reason ? reason : "");
    uint64_t v = k ? k->v : 0;
    pthread_mutex_unlock(&u->mu);
    return v;
}

/* Prometheus label values: escape backslash, quote and newline. */
static nw_rc_t label_value(nw_buf_t *out, const char *s)
{
    nw_rc_t rc = NW_OK;
    for (; *s && rc == NW_OK; s++) {
        if (*s == '\\')
            rc = nw_buf_adds(out, "\\\\");
        else if (*s == '"')
            rc = nw_buf_adds(out, "\\\"");
        else if (*s == '\n')
            rc = nw_buf_adds(out, "\\n");
        else
            rc = nw_buf_add(out, s, 1);
    }
    return rc;
}

static nw_rc_t family(nw_upkeep_t *u, nw_buf_t *out, const char *metric, const char *name,
                      const char *help, int with_reason)
{
    nw_rc_t rc = nw_buf_addf(out, "# HELP %s %s\n# TYPE %s counter\n", name, help, name);
    for (size_t i = 0; rc == NW_OK && i < u->ncounters; i++) {
        const nw_upkeep_counter_t *k = &u->counters[i];
        if (strcmp(k->metric, metric) != 0)
            continue;
        rc = nw_buf_addf(out, "%s{nodepool=\"", name);
        if (rc == NW_OK)
            rc = label_value(out, k->nodepool);
        if (rc == NW_OK && with_reason) {
            rc = nw_buf_adds(out, "\",reason=\"");
            if (rc == NW_OK)
                rc = label_value(out, k->reason);
        }
        if (rc == NW_OK)
            rc = nw_buf_addf(out, "\"} %llu\n", (unsigned long long)k->v);
    }
    return rc;
}

nw_rc_t nw_upkeep_metrics(nw_upkeep_t *u, nw_buf_t *out)
{
    if (!u)
        return NW_OK;
    pthread_mutex_lock(&u->mu);
    nw_rc_t rc = family(u, out, "drifted", "nodewarden_nodeclaims_drifted_total",
                        "NodeClaims marked Drifted, by NodePool and drift reason.", 1);
    if (rc == NW_OK)
        rc = family(u, out, "expired", "nodewarden_nodeclaims_expired_total",
                    "NodeClaims deleted because they outlived spec.expireAfter.", 0);
    pthread_mutex_unlock(&u->mu);
    return rc;
}
