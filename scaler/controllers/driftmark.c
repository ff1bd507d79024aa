/*
 * scaler/controllers/driftmark.c — hash annotations and drift marking (see driftmark.h).
 */
#include "scaler/controllers/driftmark.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "scaler/controllers/instindex.h"
#include "scaler/controllers/tickgate.h"
#include "scaler/controllers/uidmap.h"
#include "scaler/disrupt/drift.h"
#include "api/drifthash.h"

#define RECHECK_NS (5 * 60 * NW_NS_PER_SEC)
#define INSTANCES_TTL_NS (5 * 60 * NW_NS_PER_SEC)
#define INSTANCES_MISS_NS (10 * NW_NS_PER_SEC)
#define WRITE_BACKOFF_NS (10 * NW_NS_PER_SEC)
#define MAX_AMIS 64
#define MAX_IDS 64

typedef struct {
    char uid[64];
    char pool_rv[32], class_rv[32], nc_rv[32];
    int64_t next_mono;
    int seen; /* in the current snapshot */
} verdict_t;

typedef struct {
    char key[400];          /* kind/name */
    char hash[NW_HASH_LEN]; /* written value, "" after a failed write */
    int64_t until_mono;
} backoff_t;

/* What one object's version says (the memo of tickgate.h): a NodePool's or EC2NodeClass's
 * hash and annotations, a NodeClaim's conditions and class reference. */
typedef struct {
    /* NodePools, EC2NodeClasses */
    char hash[NW_HASH_LEN];
    bool hashed;              /* the hash could be computed */
    bool version_ok, hash_ok; /* the annotations say our version and this hash */
    /* NodeClaims */
    bool launched;     /* condition Launched is True */
    bool drifted_cond; /* it has a Drifted condition */
    const char *cname; /* spec.nodeClassRef.name (in the object's JSON), NULL: none */
    bool has_uid, has_pid;
    bool refs_known; /* pool, class: its NodePool and EC2NodeClass objects, while none changes */
    const nw_kube_obj_t *pool, *class;
    uint64_t vepoch; /* vidx is its verdict's index while the verdicts' epoch is vepoch */
    size_t vidx;
    bool clean; /* its verdict's resourceVersions are those of it, pool and class */
} facts_t;

struct nw_driftmark {
    nw_ctl_deps_t *deps;
    verdict_t *v;
    size_t n, cap;
    nw_uidmap_t by_uid; /* verdict uid -> its index in v */
    uint64_t epoch;     /* changes whenever verdicts move in v */
    nw_tickgate_t gate; /* NodePools, EC2NodeClasses, NodeClaims */
    nw_cloud_instances_t inst;
    size_t *inst_sorted; /* inst by id (instindex.h), NULL: walk it */
    int have_inst;
    int64_t inst_mono, inst_try_mono;
    backoff_t backoff[32];
    unsigned nbackoff;
    nw_counters_t *counters; /* borrowed */
};

nw_driftmark_t *nw_driftmark_new(nw_ctl_deps_t *deps, nw_counters_t *counters)
{
    nw_driftmark_t *d = calloc(1, sizeof(nw_driftmark_t));
    if (d) {
        d->deps = deps;
        d->counters = counters;
        nw_tickgate_init(&d->gate,
                         NW_TICKGATE_KIND(NW_KUBE_NODEPOOLS) |
                             NW_TICKGATE_KIND(NW_KUBE_EC2NODECLASSES) |
                             NW_TICKGATE_KIND(NW_KUBE_NODECLAIMS),
                         sizeof(facts_t));
    }
    return d;
}

void nw_driftmark_reset(nw_driftmark_t *d)
{
    if (!d)
        return;
    free(d->v);
    d->v = NULL;
    d->n = d->cap = 0;
    d->epoch++;
    nw_uidmap_clear(&d->by_uid);
    nw_tickgate_reset(&d->gate);
    nw_cloud_instances_free(&d->inst);
    free(d->inst_sorted);
    d->inst_sorted = NULL;
    d->have_inst = 0;
    d->inst_mono = d->inst_try_mono = 0;
    memset(d->backoff, 0, sizeof d->backoff);
    d->nbackoff = 0;
}

void nw_driftmark_free(nw_driftmark_t *d)
{
    if (!d)
        return;
    nw_driftmark_reset(d);
    nw_uidmap_free(&d->by_uid);
    nw_tickgate_cleanup(&d->gate);
    free(d);
}

/* ---- write memory: a failed write is retried after 10 s, not every pass, and a value
 * just written is not written again while the cache has not caught up ---- */

static backoff_t *memo_find(nw_driftmark_t *d, const char *key)
{
    for (unsigned i = 0; i < 32; i++)
        if (strcmp(d->backoff[i].key, key) == 0)
            return &d->backoff[i];
    return NULL;
}

/* Skip writing hash h to kind/name now? */
static bool write_suppressed(nw_driftmark_t *d, const char *kind, const char *name, const char *h,
                             int64_t mono)
{
    char key[400];
    snprintf(key, sizeof key, "%s/%s", kind, name);
    const backoff_t *b = memo_find(d, key);
    return b && b->until_mono > mono && (!b->hash[0] || strcmp(b->hash, h) == 0);
}

/* Remember a write of h (NULL: a failed write) to kind/name. */
static void remember_write(nw_driftmark_t *d, const char *kind, const char *name, const char *h,
                           int64_t mono)
{
    char key[400];
    snprintf(key, sizeof key, "%s/%s", kind, name);
    backoff_t *b = memo_find(d, key);
    if (!b)
        b = &d->backoff[d->nbackoff++ % 32];
    snprintf(b->key, sizeof b->key, "%s", key);
    snprintf(b->hash, sizeof b->hash, "%s", h ? h : "");
    b->until_mono = mono + WRITE_BACKOFF_NS;
}

/* ---- 1. hash annotations ---- */

static char *annotations_patch(const char *k1, const char *v1, const char *k2, const char *v2)
{
    cJSON *p = cJSON_CreateObject();
    cJSON *ann = cJSON_AddObjectToObject(cJSON_AddObjectToObject(p, "metadata"), "annotations");
    cJSON_AddStringToObject(ann, k1, v1);
    if (k2)
        cJSON_AddStringToObject(ann, k2, v2);
    char *txt = cJSON_PrintUnformatted(p);
    cJSON_Delete(p);
    return txt;
}

static NW_MUST_USE nw_rc_t patch_annotations(nw_ctl_deps_t *c, const nw_kube_res_t *res,
                                             const char *name, const char *k1, const char *v1,
                                             const char *k2, const char *v2, nw_err_t *err)
{
    char *body = annotations_patch(k1, v1, k2, v2);
    if (!body)
        return nw_err_set(err, NW_ENOMEM, NULL, "out of memory");
    nw_rc_t rc =
        nw_kube_write_patch(c->kube, res, NULL, name, NW_KUBE_PATCH_MERGE, body, 0, NULL, err);
    free(body);
    return rc;
}

/* The status of a NodeClaim's condition of this type as nw_json_condition reads it (NULL:
 * none), from its record. */
static const char *cond_status(const nw_kube_obj_t *nc, const char *type)
{
    const nw_node_cond_t *cd = nw_node_meta_condition(&nc->nodeclaim->m, type);
    return cd && cd->status_name[0] ? cd->status_name : NULL;
}

/* The Drifted condition's reason when it is True ("" without one), else NULL. */
static const char *drift_condition_reason(const nw_kube_obj_t *nc)
{
    const nw_node_cond_t *cd = nw_node_meta_condition(&nc->nodeclaim->m, NW_COND_DRIFTED);
    return cd && strcmp(cd->status_name, "True") == 0 ? cd->reason : NULL;
}

/* the NodeClaim's spec.nodeClassRef.name, NULL without one */
static const char *class_name(const nw_kube_obj_t *nc)
{
    const char *n = nc->nodeclaim->class_name;
    return n[0] ? n : NULL;
}

static bool claim_annotation_is(const nw_kube_obj_t *nc, const char *key, const char *value)
{
    const char *v = nw_node_meta_annotation(&nc->nodeclaim->m, key);
    return v && value && strcmp(v, value) == 0;
}

/* Karpenter's updateNodeClaimHash: NodeClaims of an owner whose hash version was not
 * ours get our version, and the current hash unless they are already Drifted. */
static void migrate_claims(nw_ctl_deps_t *c, const nw_kube_snap_t *s, const char *pool,
                           const char *class, const char *hkey, const char *vkey,
                           const char *version, const char *hash)
{
    for (size_t i = 0; i < nw_kube_cache_snap_count(s, NW_KUBE_NODECLAIMS) && nw_ctl_may_write(c);
         i++) {
        const nw_kube_obj_t *nc = nw_kube_cache_snap_at(s, NW_KUBE_NODECLAIMS, i);
        if (nc->terminating || claim_annotation_is(nc, vkey, version))
            continue;
        if (pool && strcmp(nc->nodepool, pool) != 0)
            continue;
        const char *ref = class_name(nc);
        if (class && (!ref || strcmp(ref, class) != 0))
            continue;
        int drifted = cond_status(nc, NW_COND_DRIFTED) != NULL;
        nw_err_t err = {0};
        nw_rc_t rc = drifted ? patch_annotations(c, &nw_kube_client_res_nodeclaims, nc->name, vkey,
                                                 version, NULL, NULL, &err)
                             : patch_annotations(c, &nw_kube_client_res_nodeclaims, nc->name, vkey,
                                                 version, hkey, hash, &err);
        if (rc != NW_OK)
            nw_log_warn("drift", "cannot update the NodeClaim's hash version",
                        NW_LS("nodeclaim", nc->name), NW_LS("error", err.msg));
    }
}

/* The hash annotations of every NodePool or EC2NodeClass; false when it wrote (or meant
 * to and was held back: it looks again on the next tick). */
static bool annotate(nw_ctl_deps_t *c, nw_driftmark_t *d, const nw_kube_snap_t *s,
                     nw_kube_kind_t kind)
{
    int64_t mono = nw_clock_mono(c->clock);
    int pools = kind == NW_KUBE_NODEPOOLS;
    const nw_kube_res_t *res =
        pools ? &nw_kube_client_res_nodepools : &nw_kube_client_res_ec2nodeclasses;
    const char *hkey = pools ? NW_ANN_NODEPOOL_HASH : NW_ANN_NODECLASS_HASH;
    const char *vkey = pools ? NW_ANN_NODEPOOL_HASH_VERSION : NW_ANN_NODECLASS_HASH_VERSION;
    const char *version = pools ? NW_NODEPOOL_HASH_VERSION : NW_NODECLASS_HASH_VERSION;
    bool complete = true;
    for (size_t i = 0; i < nw_kube_cache_snap_count(s, kind); i++) {
        if (!nw_ctl_may_write(c))
            return false;
        const nw_kube_obj_t *o = nw_kube_cache_snap_at(s, kind, i);
        if (o->terminating)
            continue;
        bool fresh;
        facts_t *m = nw_tickgate_memo(&d->gate, o, &fresh), f;
        if (!m || fresh) {
            memset(&f, 0, sizeof f);
            f.hashed =
                (pools ? nw_drifthash_nodepool(o->json, f.hash, NULL)
                       : nw_drifthash_ec2nodeclass(o->json, c->ca_bundle, f.hash, NULL)) == NW_OK;
            f.version_ok = f.hashed && nw_drifthash_annotation_is(o->json, vkey, version);
            f.hash_ok = f.hashed && nw_drifthash_annotation_is(o->json, hkey, f.hash);
            if (m)
                *m = f;
        } else
            f = *m;
        if (!f.hashed || (f.version_ok && f.hash_ok))
            continue;
        const char *h = f.hash;
        complete = false; /* a write, or one held back for a moment */
        if (write_suppressed(d, nw_kube_cache_kind_name(kind), o->name, h, mono))
            continue; /* failed a moment ago, or written and the cache has not caught up */
        if (!f.version_ok)
            migrate_claims(c, s, pools ? o->name : NULL, pools ? NULL : o->name, hkey, vkey,
                           version, h);
        nw_err_t err = {0};
        if (patch_annotations(c, res, o->name, hkey, h, vkey, version, &err) != NW_OK) {
            remember_write(d, nw_kube_cache_kind_name(kind), o->name, NULL, mono);
            nw_log_warn("drift", "cannot write the hash annotation",
                        NW_LS("kind", nw_kube_cache_kind_name(kind)), NW_LS("name", o->name),
                        NW_LS("error", err.msg));
            continue;
        }
        remember_write(d, nw_kube_cache_kind_name(kind), o->name, h, mono);
        nw_log_info("drift", "hash annotation written",
                    NW_LS("kind", nw_kube_cache_kind_name(kind)), NW_LS("name", o->name),
                    NW_LS("hash", h), NW_LS("version", version));
    }
    return complete;
}

/* ---- 2. drift marking ---- */

static verdict_t *verdict_get(nw_driftmark_t *d, const char *uid)
{
    long at = nw_uidmap_get(&d->by_uid, uid);
    if (at >= 0 && (size_t)at < d->n && strcmp(d->v[at].uid, uid) == 0)
        return &d->v[at];
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 32;
        verdict_t *nv = realloc(d->v, cap * sizeof *nv);
        if (!nv)
            return NULL;
        d->v = nv;
        d->cap = cap;
    }
    verdict_t *v = &d->v[d->n];
    memset(v, 0, sizeof *v);
    snprintf(v->uid, sizeof v->uid, "%s", uid);
    if (nw_uidmap_put(&d->by_uid, v->uid, (long)d->n) != NW_OK)
        return NULL;
    d->n++;
    return v;
}

/* The first instance with this id in the list. */
static const nw_cloud_instance_t *find_instance(nw_driftmark_t *d, const char *id)
{
    if (!d->have_inst)
        return NULL;
    if (d->inst_sorted) {
        size_t j = nw_instindex_cloud_lower(&d->inst, d->inst_sorted, id);
        return j < d->inst.n && strcmp(d->inst.v[d->inst_sorted[j]].id, id) == 0
                   ? &d->inst.v[d->inst_sorted[j]]
                   : NULL;
    }
    for (size_t i = 0; i < d->inst.n; i++)
        if (strcmp(d->inst.v[i].id, id) == 0)
            return &d->inst.v[i];
    return NULL;
}

/* The instance's facts from the cached cluster instance list (refreshed when stale, or
 * sooner when the instance is missing). NULL when unknown. */
static const nw_cloud_instance_t *instance_facts(nw_ctl_deps_t *c, nw_driftmark_t *d,
                                                 const char *provider_id)
{
    int64_t mono = nw_clock_mono(c->clock);
    const char *id = nw_cloud_instance_id(provider_id);
    const nw_cloud_instance_t *i = find_instance(d, id);
    int stale = !d->have_inst || mono - d->inst_mono > INSTANCES_TTL_NS;
    int missing = !i && mono - d->inst_try_mono > INSTANCES_MISS_NS;
    if ((stale || missing) && mono - d->inst_try_mono > NW_NS_PER_SEC) {
        d->inst_try_mono = mono;
        nw_cloud_instances_t fresh = {0};
        nw_err_t err = {0};
        if (c->cloud->ops->list(c->cloud, &fresh, &err) == NW_OK) {
            nw_cloud_instances_free(&d->inst);
            free(d->inst_sorted);
            d->inst = fresh;
            d->inst_sorted = nw_instindex_cloud_sort(&d->inst); /* NULL: walked */
            d->have_inst = 1;
            d->inst_mono = mono;
        } else {
            nw_cloud_instances_free(&fresh);
            nw_log_every(30, NW_LOG_WARN, "drift", "cannot list the cluster's instances",
                         NW_LS("error", err.msg));
        }
        i = find_instance(d, id);
    }
    return i;
}

typedef struct {
    const char *reason; /* NULL: remove the condition */
    nw_ctl_deps_t *c;
    int changed; /* out: the write changed the condition */
} mark_t;

static int mutate_drifted(cJSON *obj, void *ud)
{
    const mark_t *m = ud;
    cJSON *conds = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "status"),
                                                    "conditions");
    int idx = -1, k = 0;
    cJSON *cd;
    cJSON_ArrayForEach(cd, conds)
    {
        const char *t = nw_json_str(cd, "type");
        if (t && strcmp(t, NW_COND_DRIFTED) == 0) {
            idx = k;
            break;
        }
        k++;
    }
    if (!m->reason) {
        if (idx < 0)
            return 1;
        cJSON_DeleteItemFromArray(conds, idx);
        ((mark_t *)ud)->changed = 1;
        return 0;
    }
    if (idx >= 0) {
        const char *st = nw_json_str(cd, "status");
        const char *rs = nw_json_str(cd, "reason");
        if (st && rs && strcmp(st, "True") == 0 && strcmp(rs, m->reason) == 0)
            return 1;
    }
    if (nw_ctl_set_condition(obj, NW_COND_DRIFTED, "True", m->reason, m->reason,
                             nw_clock_now(m->c->clock)) != NW_OK)
        return 1; /* out of memory: no write this time */
    ((mark_t *)ud)->changed = 1;
    return 0;
}

/* true when the condition was changed by this write, false when it already was so or failed */
static bool write_mark(nw_ctl_deps_t *c, const nw_kube_obj_t *nc, const char *reason)
{
    mark_t m = {reason, c, 0};
    nw_err_t err = {0};
    if (nw_kube_write_update_retry(c->kube, &nw_kube_client_res_nodeclaims, NULL, nc->name, 1,
                                   mutate_drifted, &m, 5, NULL, &err) != NW_OK) {
        nw_log_warn("drift",
                    reason ? "cannot mark the NodeClaim drifted"
                           : "cannot clear the NodeClaim's Drifted condition",
                    NW_LS("nodeclaim", nc->name), NW_LS("error", err.msg));
        return false;
    }
    return m.changed;
}

/* false when it wrote the NodeClaim's condition (or tried to) */
static bool judge(nw_ctl_deps_t *c, nw_driftmark_t *d, const nw_kube_snap_t *s,
                  const nw_kube_obj_t *nc, const nw_kube_obj_t *pool)
{
    const char *cname = class_name(nc);
    const nw_kube_obj_t *class =
        cname ? nw_kube_cache_snap_get(s, NW_KUBE_EC2NODECLASSES, NULL, cname) : NULL;
    /* the class as resolved from its selectors */
    const char *ami_ids[MAX_AMIS], *ami_arch[MAX_AMIS], *subnets[MAX_IDS], *sgs[MAX_IDS];
    nw_drift_class_t rc;
    memset(&rc, 0, sizeof rc);
    const nw_drift_class_t *resolved = NULL;
    const nw_cloud_class_t *r = NULL;
    nw_err_t err = {0};
    if (class && !class->terminating &&
        c->cloud->ops->resolve(c->cloud, class->json, &r, &err) == NW_OK && r) {
        for (size_t i = 0; i < r->nimages && rc.namis < MAX_AMIS; i++) {
            ami_ids[rc.namis] = r->images[i].id;
            ami_arch[rc.namis++] = r->images[i].arch;
        }
        for (size_t i = 0; i < r->nsubnets && rc.nsubnets < MAX_IDS; i++)
            subnets[rc.nsubnets++] = r->subnets[i].id;
        for (size_t i = 0; i < r->nsgs && rc.nsgs < MAX_IDS; i++)
            sgs[rc.nsgs++] = r->sg_ids[i];
        rc.ami_ids = ami_ids;
        rc.ami_arch = ami_arch;
        rc.subnet_ids = subnets;
        rc.sg_ids = sgs;
        /* a class not ready may have failed to resolve its group: no verdict then */
        rc.placement_group = r->ready ? r->placement_group : NULL;
        resolved = &rc;
    } else if (class && !class->terminating)
        nw_log_every(30, NW_LOG_WARN, "drift",
                     "cannot resolve the EC2NodeClass; provider drift not judged",
                     NW_LS("ec2nodeclass", class->name), NW_LS("error", err.msg));
    /* the instance */
    nw_drift_instance_t inst;
    const char *isgs[16];
    const nw_drift_instance_t *instp = NULL;
    const nw_cloud_instance_t *ei = instance_facts(c, d, nc->provider_id);
    if (ei) {
        memset(&inst, 0, sizeof inst);
        inst.image_id = ei->image_id;
        inst.subnet_id = ei->subnet_id;
        for (int k = 0; k < ei->nsg && inst.nsg < 16; k++)
            isgs[inst.nsg++] = ei->sg_ids[k];
        inst.sg_ids = isgs;
        instp = &inst;
    }
    nw_drift_in_t in = {nc->nodeclaim,
                        pool->json,
                        class && !class->terminating ? class->json : NULL,
                        resolved,
                        instp,
                        c->cloud->ops->catalog(c->cloud),
                        nw_clock_now(c->clock),
                        c->ca_bundle};
    char detail[1024];
    nw_drift_reason_t why = nw_drift_check(&in, detail, sizeof detail);
    const char *now_reason = why == NW_DRIFT_NONE ? NULL : nw_drift_reason_str(why);
    const char *had = drift_condition_reason(nc);
    int has_cond = cond_status(nc, NW_COND_DRIFTED) != NULL;
    if (now_reason && had && strcmp(had, now_reason) == 0)
        return true;
    if (!now_reason && !has_cond)
        return true;
    if (!write_mark(c, nc, now_reason))
        return false;
    if (now_reason) {
        char msg[1200];
        snprintf(msg, sizeof msg, "NodeClaim drifted (%s): %s", now_reason, detail);
        nw_log_info("drift", "NodeClaim drifted", NW_LS("nodeclaim", nc->name),
                    NW_LS("nodepool", nc->nodepool), NW_LS("reason", now_reason),
                    NW_LS("detail", detail));
        nw_ctl_obj_event(c, &nw_kube_client_res_nodeclaims, nc, "Normal", "Drifted", msg);
        nw_prom_counters_inc(d->counters, "drifted", nc->nodepool, now_reason);
    } else {
        nw_log_info("drift", "NodeClaim no longer drifted", NW_LS("nodeclaim", nc->name),
                    NW_LS("nodepool", nc->nodepool), NW_LS("was", had ? had : ""));
    }
    return false;
}

static void copy_rv(char *dst, size_t n, const nw_kube_obj_t *o)
{
    snprintf(dst, n, "%s", o ? o->rv : "-");
}

static bool rv_differs(const char *have, const nw_kube_obj_t *o)
{
    return strcmp(have, o ? o->rv : "-") != 0;
}

/* Drift marking; false when it wrote (or was cut short). *next: the earliest recheck.
 * refs_same: no NodePool or EC2NodeClass changed since the last pass. */
static bool mark(nw_ctl_deps_t *c, nw_driftmark_t *d, const nw_kube_snap_t *s, bool refs_same,
                 int64_t *next)
{
    int64_t mono = nw_clock_mono(c->clock);
    bool complete = true;
    nw_tickgate_last_t pools = {0}, classes = {0};
    for (size_t i = 0; i < d->n; i++)
        d->v[i].seen = 0;
    for (size_t i = 0; i < nw_kube_cache_snap_count(s, NW_KUBE_NODECLAIMS); i++) {
        if (!nw_ctl_may_write(c)) {
            complete = false;
            break;
        }
        const nw_kube_obj_t *nc = nw_kube_cache_snap_at(s, NW_KUBE_NODECLAIMS, i);
        if (nc->terminating)
            continue;
        bool fresh;
        facts_t *m = nw_tickgate_memo(&d->gate, nc, &fresh), f;
        if (!m || fresh) {
            memset(&f, 0, sizeof f);
            const char *launched = cond_status(nc, "Launched");
            f.launched = launched && strcmp(launched, "True") == 0;
            f.drifted_cond = cond_status(nc, NW_COND_DRIFTED) != NULL;
            f.cname = class_name(nc);
            f.has_uid = nc->uid[0] != 0;
            f.has_pid = nc->provider_id[0] != 0;
        } else
            f = *m;
        if (!f.has_uid)
            continue;
        bool refs_kept = f.refs_known && refs_same;
        if (!refs_kept) {
            f.pool = nc->nodepool[0] ? nw_tickgate_get(&pools, s, NW_KUBE_NODEPOOLS, nc->nodepool)
                                     : NULL;
            f.class = nw_tickgate_get(&classes, s, NW_KUBE_EC2NODECLASSES, f.cname);
            f.refs_known = true;
        }
        const nw_kube_obj_t *pool = f.pool, *class = f.class;
        if (m)
            *m = f;
        if (!pool)
            continue;
        if (!f.launched || !f.has_pid) {
            if (f.drifted_cond) {
                write_mark(c, nc, NULL);
                complete = false;
            }
            continue;
        }
        verdict_t *v =
            f.vepoch == d->epoch && f.vidx < d->n ? &d->v[f.vidx] : verdict_get(d, nc->uid);
        if (!v)
            continue;
        v->seen = 1;
        /* the same NodeClaim, NodePool and EC2NodeClass as when its verdict's
         * resourceVersions were last compared: they still match */
        bool same = !fresh && refs_kept && f.clean;
        int due = v->next_mono == 0 || mono >= v->next_mono ||
                  (!same && (rv_differs(v->pool_rv, pool) || rv_differs(v->class_rv, class) ||
                             rv_differs(v->nc_rv, nc)));
        if (due) {
            if (!judge(c, d, s, nc, pool))
                complete = false;
            v->next_mono = mono + RECHECK_NS;
            copy_rv(v->pool_rv, sizeof v->pool_rv, pool);
            copy_rv(v->class_rv, sizeof v->class_rv, class);
            copy_rv(v->nc_rv, sizeof v->nc_rv, nc);
        }
        *next = nw_tickgate_min(*next, v->next_mono);
        if (due && m) /* m stays where it is unless judge asked the memo (it does not now) */
            m = nw_tickgate_memo(&d->gate, nc, &fresh);
        if (m) {
            m->vepoch = d->epoch;
            m->vidx = (size_t)(v - d->v);
            m->clean = true;
        }
    }
    /* forget NodeClaims that are gone */
    size_t k = 0;
    for (size_t i = 0; i < d->n; i++)
        if (d->v[i].seen)
            d->v[k++] = d->v[i];
    if (k != d->n) { /* the indexes moved */
        d->n = k;
        d->epoch++;
        nw_uidmap_clear(&d->by_uid);
        for (size_t i = 0; i < d->n; i++)
            if (nw_uidmap_put(&d->by_uid, d->v[i].uid, (long)i) != NW_OK) {
                /* out of memory: forget them all, each is judged again */
                nw_uidmap_clear(&d->by_uid);
                d->n = 0;
                break;
            }
    }
    return complete;
}

void nw_driftmark_tick(nw_driftmark_t *d, const nw_kube_snap_t *s)
{
    if (!d)
        return;
    nw_ctl_deps_t *c = d->deps;
    int64_t mono = nw_clock_mono(c->clock);
    /* nothing changed and no verdict is due for its recheck: nothing to do */
    if (nw_tickgate_quiet(&d->gate, s, mono, nw_clock_now(c->clock)))
        return;
    bool refs_same = nw_tickgate_same(&d->gate, s, NW_KUBE_NODEPOOLS) &&
                     nw_tickgate_same(&d->gate, s, NW_KUBE_EC2NODECLASSES);
    bool complete = annotate(c, d, s, NW_KUBE_NODEPOOLS);
    complete &= annotate(c, d, s, NW_KUBE_EC2NODECLASSES);
    int64_t next = NW_TICKGATE_NEVER;
    complete &= mark(c, d, s, refs_same, &next);
    nw_tickgate_ran(&d->gate, s, complete, next, NW_TICKGATE_NEVER);
}
