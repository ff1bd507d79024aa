/*
 * scaler/controllers/provisioning.c — batching, placement, NodeClaim creation and launch
 * (kubernetes-sigs/karpenter pkg/controllers/provisioning/provisioner.go, batcher.go;
 * aws/karpenter-provider-aws pkg/cloudprovider/cloudprovider.go Create). The placement is the scheduling
 * simulation (scaler/sched/, nw_sched_solve) on the live snapshot that
 * scaler/state/simsnap.c builds; NodeClaims are created by nw_simsnap_create_claim.
 */
#include <stdio.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "scaler/controllers/ctl.h"
#include "scaler/state/simsnap.h"

#define GET(o, k) cJSON_GetObjectItemCaseSensitive((o), (k))
#define RESOLVE_EVERY_NS (10 * NW_NS_PER_SEC)
#define LAUNCH_RETRY_NS (5 * NW_NS_PER_SEC)
#define CLAIM_MEMORY_NS (120 * NW_NS_PER_SEC)

/* ---- shared helpers (declared in ctl.h) ---- */

int nw_ctl_may_write(nw_ctl_t *c)
{
    return atomic_load(&c->leading) && !atomic_load(&c->stopping);
}

const char *nw_ctl_str(const cJSON *obj, const char *path)
{
    char seg[128];
    const cJSON *cur = obj;
    const char *p = path;
    while (cur && *p) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        if (n >= sizeof seg)
            return NULL;
        memcpy(seg, p, n);
        seg[n] = 0;
        cur = GET(cur, seg);
        p = dot ? dot + 1 : p + n;
    }
    return cJSON_IsString(cur) ? cur->valuestring : NULL;
}

const char *nw_ctl_condition(const cJSON *obj, const char *type)
{
    const cJSON *cd;
    cJSON_ArrayForEach(cd, GET(GET(obj, "status"), "conditions"))
    {
        const char *t = cJSON_GetStringValue(GET(cd, "type"));
        if (t && strcmp(t, type) == 0)
            return cJSON_GetStringValue(GET(cd, "status"));
    }
    return NULL;
}

void nw_ctl_set_condition(cJSON *obj, const char *type, const char *status, const char *reason,
                          const char *message, int64_t now_ns)
{
    cJSON *st = GET(obj, "status");
    if (!cJSON_IsObject(st)) {
        cJSON_DeleteItemFromObjectCaseSensitive(obj, "status");
        st = cJSON_AddObjectToObject(obj, "status");
    }
    cJSON *conds = GET(st, "conditions");
    if (!cJSON_IsArray(conds)) {
        cJSON_DeleteItemFromObjectCaseSensitive(st, "conditions");
        conds = cJSON_AddArrayToObject(st, "conditions");
    }
    char ts[40];
    nw_time_format(now_ns, ts, sizeof ts);
    cJSON *cd;
    cJSON_ArrayForEach(cd, conds)
    {
        const char *t = cJSON_GetStringValue(GET(cd, "type"));
        if (t && strcmp(t, type) == 0)
            break;
    }
    if (!cd) {
        cd = cJSON_CreateObject();
        cJSON_AddItemToArray(conds, cd);
        cJSON_AddStringToObject(cd, "type", type);
    }
    const char *old = cJSON_GetStringValue(GET(cd, "status"));
    if (!old || strcmp(old, status) != 0 || !GET(cd, "lastTransitionTime")) {
        cJSON_DeleteItemFromObjectCaseSensitive(cd, "lastTransitionTime");
        cJSON_AddStringToObject(cd, "lastTransitionTime", ts);
    }
    cJSON_DeleteItemFromObjectCaseSensitive(cd, "status");
    cJSON_AddStringToObject(cd, "status", status);
    cJSON_DeleteItemFromObjectCaseSensitive(cd, "reason");
    cJSON_AddStringToObject(cd, "reason", reason);
    cJSON_DeleteItemFromObjectCaseSensitive(cd, "message");
    cJSON_AddStringToObject(cd, "message", message ? message : "");
    const cJSON *gen = GET(GET(obj, "metadata"), "generation");
    cJSON_DeleteItemFromObjectCaseSensitive(cd, "observedGeneration");
    if (cJSON_IsNumber(gen))
        cJSON_AddNumberToObject(cd, "observedGeneration", gen->valuedouble);
}

nw_rc_t nw_ctl_counter(nw_buf_t *out, const char *name, const char *help, uint64_t v)
{
    return nw_buf_addf(out, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", name, help, name, name,
                       (unsigned long long)v);
}

nw_ctl_claim_t *nw_ctl_claim_find(nw_ctl_t *c, const char *name)
{
    for (nw_ctl_claim_t *m = c->claims; m; m = m->next)
        if (strcmp(m->name, name) == 0)
            return m;
    return NULL;
}

nw_ctl_claim_t *nw_ctl_claim_remember(nw_ctl_t *c, const char *name)
{
    nw_ctl_claim_t *m = nw_ctl_claim_find(c, name);
    if (m)
        return m;
    m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    snprintf(m->name, sizeof m->name, "%s", name);
    m->created_mono = nw_clock_mono(c->clock);
    m->next = c->claims;
    c->claims = m;
    return m;
}

static void claim_free(nw_ctl_claim_t *m)
{
    cJSON_Delete(m->obj);
    cJSON_Delete(m->status);
    free(m);
}

void nw_prov_cleanup(nw_ctl_t *c)
{
    while (c->claims) {
        nw_ctl_claim_t *m = c->claims;
        c->claims = m->next;
        claim_free(m);
    }
    for (size_t i = 0; i < c->nseen; i++)
        free(c->seen_uids[i]);
    free(c->seen_uids);
    c->seen_uids = NULL;
    c->nseen = 0;
    nw_simsnap_cleanup(c);
}

/* Forget remembered claims the cache shows with our status (or that are gone for good). */
static void claims_expire(nw_ctl_t *c, const nw_kube_snap_t *s)
{
    int64_t now = nw_clock_mono(c->clock);
    nw_ctl_claim_t **pp = &c->claims;
    while (*pp) {
        nw_ctl_claim_t *m = *pp;
        const nw_kube_obj_t *o = nw_kube_snap_get(s, NW_KUBE_NODECLAIMS, NULL, m->name);
        if (o)
            m->seen_in_cache = 1;
        int settled = o && (!m->launched || (o->provider_id[0] != 0));
        if (!o && (m->seen_in_cache || m->deleted))
            settled = 1; /* gone */
        else if (!o && now - m->created_mono < CLAIM_MEMORY_NS)
            settled = 0;
        else if (!o)
            settled = 1;
        if (settled && now - m->created_mono > 2 * NW_NS_PER_SEC) {
            *pp = m->next;
            claim_free(m);
        } else
            pp = &m->next;
    }
}


/* The values of requirement key in a NodeClaim's spec.requirements (borrowed array). */
static const cJSON *req_values(const cJSON *nc, const char *key)
{
    const cJSON *r;
    cJSON_ArrayForEach(r, GET(GET(nc, "spec"), "requirements"))
    {
        const char *k = cJSON_GetStringValue(GET(r, "key"));
        const char *op = cJSON_GetStringValue(GET(r, "operator"));
        if (k && op && strcmp(k, key) == 0 && strcmp(op, "In") == 0)
            return GET(r, "values");
    }
    return NULL;
}


/* ---- launch ---- */

static int str_list(const cJSON *arr, const char **out, int max)
{
    int n = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, arr)
    {
        if (n < max && cJSON_IsString(v))
            out[n++] = v->valuestring;
    }
    return n;
}

typedef struct {
    nw_ctl_t *c;
    const nw_launch_result_t *r;
    const char *provider_id, *type, *zone, *ct, *image;
} launched_t;

static cJSON *status_of_launch(nw_ctl_t *c, const launched_t *l, const cJSON *base)
{
    cJSON *st = base ? cJSON_Duplicate(base, 1) : cJSON_CreateObject();
    if (!cJSON_IsObject(st)) {
        cJSON_Delete(st);
        st = cJSON_CreateObject();
    }
    const char *keys[] = {"providerID", "imageID", "capacity", "allocatable"};
    for (size_t i = 0; i < 4; i++)
        cJSON_DeleteItemFromObjectCaseSensitive(st, keys[i]);
    cJSON_AddStringToObject(st, "providerID", l->provider_id);
    if (l->image && *l->image)
        cJSON_AddStringToObject(st, "imageID", l->image);
    cJSON *cap = nw_simsnap_type_resources(c, l->type, 0),
          *al = nw_simsnap_type_resources(c, l->type, 1);
    cJSON_AddItemToObject(st, "capacity", cap ? cap : cJSON_CreateObject());
    cJSON_AddItemToObject(st, "allocatable", al ? al : cJSON_CreateObject());
    return st;
}

static int mutate_launched(cJSON *obj, void *ud)
{
    const launched_t *l = ud;
    if (cJSON_IsObject(GET(obj, "status")) &&
        nw_ctl_str(obj, "status.providerID") &&
        strcmp(nw_ctl_str(obj, "status.providerID"), l->provider_id) == 0 &&
        nw_ctl_condition(obj, "Launched"))
        return 1;
    cJSON *st = status_of_launch(l->c, l, GET(obj, "status"));
    cJSON_DeleteItemFromObjectCaseSensitive(obj, "status");
    cJSON_AddItemToObject(obj, "status", st);
    nw_ctl_set_condition(obj, "Launched", "True", "Launched", "", nw_clock_now(l->c->clock));
    return 0;
}

static int mutate_labels(cJSON *obj, void *ud)
{
    const launched_t *l = ud;
    cJSON *md = GET(obj, "metadata");
    cJSON *labels = GET(md, "labels");
    if (!cJSON_IsObject(labels)) {
        cJSON_DeleteItemFromObjectCaseSensitive(md, "labels");
        labels = cJSON_AddObjectToObject(md, "labels");
    }
    const char *kv[][2] = {{"node.kubernetes.io/instance-type", l->type},
                           {"topology.kubernetes.io/zone", l->zone},
                           {"karpenter.sh/capacity-type", l->ct}};
    int changed = 0;
    for (size_t i = 0; i < 3; i++) {
        if (!kv[i][1] || !*kv[i][1])
            continue;
        const char *cur = cJSON_GetStringValue(GET(labels, kv[i][0]));
        if (cur && strcmp(cur, kv[i][1]) == 0)
            continue;
        cJSON_DeleteItemFromObjectCaseSensitive(labels, kv[i][0]);
        cJSON_AddStringToObject(labels, kv[i][0], kv[i][1]);
        changed = 1;
    }
    return changed ? 0 : 1;
}

static void record_launch(nw_ctl_t *c, const cJSON *nc, const launched_t *l)
{
    const char *name = nw_ctl_str(nc, "metadata.name");
    nw_err_t err = {0};
    if (nw_kube_update_retry(c->kube, &nw_kube_res_nodeclaims, NULL, name, 0, mutate_labels,
                             (void *)l, 5, NULL, &err) != NW_OK)
        nw_log_warn("provisioner", "cannot label the NodeClaim", NW_LS("nodeclaim", name),
                    NW_LS("error", err.msg));
    nw_err_clear(&err);
    if (nw_kube_update_retry(c->kube, &nw_kube_res_nodeclaims, NULL, name, 1, mutate_launched,
                             (void *)l, 5, NULL, &err) != NW_OK)
        nw_log_warn("provisioner", "cannot record the launch in the NodeClaim status",
                    NW_LS("nodeclaim", name), NW_LS("error", err.msg));
}

static void event(nw_ctl_t *c, const nw_kube_res_t *res, const cJSON *obj, const char *type,
                  const char *reason, const char *msg)
{
    if (!nw_ctl_may_write(c))
        return;
    nw_kube_event(c->rec, res, obj, type, reason, msg, NULL);
}

/* Look for an instance already tagged for this NodeClaim (a launch before a crash). */
static int find_tagged(nw_ctl_t *c, const char *name, nw_ec2_instance_t *out, int *failed)
{
    nw_ec2_instances_t list = {0};
    nw_err_t err = {0};
    *failed = 0;
    if (c->cloud->ops->list(c->cloud, &list, &err) != NW_OK) {
        nw_log_warn("provisioner", "cannot list instances", NW_LS("error", err.msg));
        *failed = 1;
        nw_ec2_instances_free(&list);
        return 0;
    }
    int found = 0;
    for (size_t i = 0; i < list.n && !found; i++) {
        const nw_ec2_instance_t *in = &list.v[i];
        if (strcmp(in->state, "terminated") == 0 || strcmp(in->state, "shutting-down") == 0)
            continue;
        for (int k = 0; k < in->tags.n; k++)
            if (strcmp(in->tags.v[k].key, "karpenter.sh/nodeclaim") == 0 &&
                strcmp(in->tags.v[k].value, name) == 0) {
                *out = *in;
                found = 1;
                break;
            }
    }
    nw_ec2_instances_free(&list);
    return found;
}

/* Launch one NodeClaim that has no providerID. fresh: we created it this tick
 * (no earlier launch can exist, so the tag lookup is skipped). */
void nw_prov_launch_claim(nw_ctl_t *c, const nw_kube_snap_t *s, const cJSON *nc, int fresh)
{
    const char *name = nw_ctl_str(nc, "metadata.name");
    if (!name || !nw_ctl_may_write(c))
        return;
    nw_ctl_claim_t *m = nw_ctl_claim_remember(c, name);
    if (!m)
        return;
    int64_t mono = nw_clock_mono(c->clock);
    if (m->launched) {
        /* launched by us; the cache has not caught up or the status write failed */
        if (mono - m->created_mono > 10 * NW_NS_PER_SEC && mono >= m->next_try_mono) {
            launched_t l = {c, NULL, m->provider_id, nw_ctl_str(m->status, "type"),
                            nw_ctl_str(m->status, "zone"), nw_ctl_str(m->status, "ct"),
                            nw_ctl_str(m->status, "image")};
            record_launch(c, nc, &l);
            m->next_try_mono = mono + LAUNCH_RETRY_NS;
        }
        return;
    }
    if (mono < m->next_try_mono)
        return;
    m->next_try_mono = mono + LAUNCH_RETRY_NS;
    char pid[192];
    if (!fresh) {
        nw_ec2_instance_t in;
        int failed = 0;
        if (find_tagged(c, name, &in, &failed)) {
            snprintf(pid, sizeof pid, "aws:///%s/%s", in.zone, in.id);
            const char *ct = strcmp(in.lifecycle, "spot") == 0 ? "spot" : "on-demand";
            launched_t l = {c, NULL, pid, in.type, in.zone, ct, in.image_id};
            nw_log_info("provisioner", "found the instance of a NodeClaim launched before a restart",
                        NW_LS("nodeclaim", name), NW_LS("providerID", pid));
            m->launched = 1;
            snprintf(m->provider_id, sizeof m->provider_id, "%s", pid);
            cJSON_Delete(m->status);
            m->status = cJSON_CreateObject();
            cJSON_AddStringToObject(m->status, "type", in.type);
            cJSON_AddStringToObject(m->status, "zone", in.zone);
            cJSON_AddStringToObject(m->status, "ct", ct);
            cJSON_AddStringToObject(m->status, "image", in.image_id);
            record_launch(c, nc, &l);
            return;
        }
        if (failed)
            return;
    }
    const char *class = nw_ctl_str(nc, "spec.nodeClassRef.name");
    const nw_kube_obj_t *ncl =
        class ? nw_kube_snap_get(s, NW_KUBE_EC2NODECLASSES, NULL, class) : NULL;
    nw_err_t err = {0};
    if (!ncl) {
        nw_log_warn("provisioner", "the NodeClaim's EC2NodeClass does not exist; not launching",
                    NW_LS("nodeclaim", name), NW_LS("ec2nodeclass", class ? class : ""));
        return;
    }
    const nw_nodeclass_resolved_t *rs = NULL;
    if (c->cloud->ops->resolve(c->cloud, ncl->json, &rs, &err) != NW_OK) {
        nw_log_warn("provisioner", "cannot resolve the EC2NodeClass", NW_LS("nodeclaim", name),
                    NW_LS("error", err.msg));
        return;
    }
    const char *types[NW_LAUNCH_MAX_TYPES * 10], *zones[16], *cts[4];
    int nt = str_list(req_values(nc, "node.kubernetes.io/instance-type"), types,
                      (int)(sizeof types / sizeof *types));
    int nz = str_list(req_values(nc, "topology.kubernetes.io/zone"), zones, 16);
    int nct = str_list(req_values(nc, "karpenter.sh/capacity-type"), cts, 4);
    int minv = 0;
    const cJSON *r;
    cJSON_ArrayForEach(r, GET(GET(nc, "spec"), "requirements"))
    {
        if (GET(r, "minValues"))
            minv = 1;
    }
    nw_launch_req_t req = {
        .nodepool = cJSON_GetStringValue(GET(GET(GET(nc, "metadata"), "labels"), NW_LABEL_NODEPOOL)),
        .nodeclaim = name,
        .nodeclass = ncl->json,
        .resolved = rs,
        .types = types,
        .ntypes = nt,
        .zones = nz ? zones : NULL,
        .nzones = nz,
        .capacity_types = nct ? cts : NULL,
        .ncapacity_types = nct,
        .min_values = minv,
    };
    nw_launch_result_t res;
    memset(&res, 0, sizeof res);
    nw_ec2_error_t ae;
    memset(&ae, 0, sizeof ae);
    if (!nw_ctl_may_write(c))
        return;
    if (c->cloud->ops->launch(c->cloud, &req, &res, &ae, &err) != NW_OK) {
        atomic_fetch_add(&c->n_launch_failed, 1);
        char msg[700];
        snprintf(msg, sizeof msg, "launching nodeclaim: %s", err.msg);
        nw_log_warn("provisioner", "launch failed", NW_LS("nodeclaim", name),
                    NW_LS("error", err.msg));
        if (ae.cls == NW_EC2_CAPACITY) {
            /* Karpenter: an insufficient-capacity launch deletes the NodeClaim; the
             * pods are placed again next batch without the ICE'd offerings. */
            event(c, &nw_kube_res_nodeclaims, nc, "Warning", "InsufficientCapacityError", msg);
            nw_err_t e2 = {0};
            nw_kube_delete(c->kube, &nw_kube_res_nodeclaims, NULL, name, NULL, NULL, &e2);
            m->deleted = 1;
            c->next_resolve_mono = 0;
        } else
            event(c, &nw_kube_res_nodeclaims, nc, "Warning", "LaunchFailed", msg);
        return;
    }
    atomic_fetch_add(&c->n_launched, 1);
    m->launched = 1;
    snprintf(m->provider_id, sizeof m->provider_id, "%s", res.provider_id);
    cJSON_Delete(m->status);
    m->status = cJSON_CreateObject();
    cJSON_AddStringToObject(m->status, "type", res.type);
    cJSON_AddStringToObject(m->status, "zone", res.zone);
    cJSON_AddStringToObject(m->status, "ct", res.capacity_type);
    cJSON_AddStringToObject(m->status, "image", res.image_id);
    nw_log_info("provisioner", "launched", NW_LS("nodeclaim", name),
                NW_LS("instanceType", res.type), NW_LS("zone", res.zone),
                NW_LS("capacityType", res.capacity_type), NW_LS("providerID", res.provider_id),
                NW_LF("price", res.price));
    char msg[512];
    snprintf(msg, sizeof msg, "Launched %s %s instance %s in %s", res.capacity_type, res.type,
             res.instance_id, res.zone);
    event(c, &nw_kube_res_nodeclaims, nc, "Normal", "Launched", msg);
    launched_t l = {c, &res, res.provider_id, res.type, res.zone, res.capacity_type, res.image_id};
    record_launch(c, nc, &l);
}

/* ---- batching ---- */

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Was this pending pod's uid already counted (sorted list, binary search)? */
static int seen(nw_ctl_t *c, const char *uid)
{
    return c->nseen && bsearch(&uid, c->seen_uids, c->nseen, sizeof *c->seen_uids, str_cmp);
}

static void seen_reset(nw_ctl_t *c, const nw_kube_obj_t *const *p, size_t n)
{
    /* keep only uids still pending, add the new ones */
    char **keep = calloc(n + 1, sizeof *keep);
    size_t nk = 0;
    for (size_t i = 0; keep && i < n; i++)
        if ((keep[nk] = strdup(p[i]->uid)) != NULL)
            nk++;
    for (size_t i = 0; i < c->nseen; i++)
        free(c->seen_uids[i]);
    free(c->seen_uids);
    c->seen_uids = keep;
    c->nseen = keep ? nk : 0;
    if (keep)
        qsort(keep, nk, sizeof *keep, str_cmp);
}


/* Per-pool reasons as one message: "Failed to schedule pod, nodepool "a": ..., ...". */
static void unsched_msg(const nw_simsnap_t *ss, const nw_sched_unsched_t *u, char *msg, size_t n)
{
    size_t off;
    if (u->reason) {
        snprintf(msg, n, "Failed to schedule pod, %s", u->reason);
        return;
    }
    off = (size_t)snprintf(msg, n, "Failed to schedule pod");
    for (int k = 0; k < u->nreasons && off < n; k++)
        if (u->reasons[k])
            off += (size_t)snprintf(msg + off, n - off, ", nodepool \"%s\": %s",
                                    nw_sched_pool_name(ss->sched, (size_t)k), u->reasons[k]);
}

static void provision(nw_ctl_t *c, const nw_kube_snap_t *s, size_t npend)
{
    nw_simsnap_opts_t so = {.include_pending = true, .reschedule_deleting = true,
                            .repack = c->repack};
    nw_simsnap_t ss;
    nw_err_t err = {0};
    atomic_fetch_add(&c->n_solves, 1);
    if (nw_simsnap_build(c, s, &so, &ss, &err) != NW_OK) {
        nw_log_error("provisioner", "cannot build the scheduling snapshot", NW_LS("error", err.msg));
        nw_simsnap_free(&ss);
        return;
    }
    nw_sched_results_t r;
    if (nw_sched_solve(ss.sched, nw_clock_now(c->clock), &r, &err) != NW_OK) {
        nw_log_error("provisioner", "scheduling simulation failed", NW_LS("error", err.msg));
        nw_sched_results_free(&r);
        nw_simsnap_free(&ss);
        return;
    }
    nw_log_info("provisioner", "batch scheduled", NW_LI("pendingPods", (long long)npend),
                NW_LI("podsConsidered", r.considered), NW_LI("newNodeClaims", r.nclaims),
                NW_LI("onExistingCapacity", r.nplaced), NW_LI("unschedulable", r.nunsched),
                NW_LF("pricePerHour", r.total_price));
    /* pods placed on in-flight capacity stay nominated to it */
    int64_t mono = nw_clock_mono(c->clock);
    for (int i = 0; i < r.nplaced; i++) {
        const char *claim = nw_simsnap_claim_of(&ss, r.placed[i].node);
        int pi = r.placed[i].pod;
        if (claim && pi >= 0 && (size_t)pi < ss.npods)
            nw_simsnap_nominate(c, ss.pods[pi]->uid, claim, mono);
    }
    for (int i = 0; i < r.nunsched; i++) {
        const nw_sched_unsched_t *u = &r.unsched[i];
        if (u->pod < 0 || (size_t)u->pod >= ss.npods)
            continue;
        const nw_kube_obj_t *pod = ss.pods[u->pod];
        char msg[2048];
        unsched_msg(&ss, u, msg, sizeof msg);
        if (!nw_simsnap_event_once(c, pod->uid, msg))
            continue;
        nw_log_info("provisioner", "pod cannot be placed", NW_LS("pod", pod->key),
                    NW_LS("reason", msg));
        if (nw_ctl_may_write(c))
            nw_kube_event(c->rec, &nw_kube_res_pods, pod->json, "Warning", "FailedScheduling", msg,
                          NULL);
    }
    nw_simsnap_event_prune(c);
    for (int i = 0; i < r.nclaims && nw_ctl_may_write(c); i++) {
        char name[256];
        nw_err_t e = {0};
        nw_simsnap_claim_opts_t co = {.reason = "provisioning"};
        if (nw_simsnap_create_claim(c, s, &ss, &r.claims[i], &co, name, sizeof name, &e) != NW_OK)
            nw_log_warn("provisioner", "NodeClaim not created", NW_LS("error", e.msg));
    }
    nw_sched_results_free(&r);
    nw_simsnap_free(&ss);
    malloc_trim(0); /* the simulation's transient memory back to the system */
}


/* A node being deleted or disrupted that still runs pods that must move elsewhere. */
static int node_moving(const nw_kube_snap_t *s, const nw_kube_obj_t *n)
{
    int deleting = n->terminating;
    const cJSON *t;
    cJSON_ArrayForEach(t, GET(GET(n->json, "spec"), "taints"))
    {
        const char *k = cJSON_GetStringValue(GET(t, "key"));
        const char *e = cJSON_GetStringValue(GET(t, "effect"));
        if (k && e && strcmp(k, "karpenter.sh/disrupted") == 0 && strcmp(e, "NoSchedule") == 0)
            deleting = 1;
    }
    if (!deleting && n->provider_id[0]) {
        const nw_kube_obj_t *nc = nw_kube_snap_nodeclaim_by_provider_id(s, n->provider_id);
        deleting = nc && nc->terminating;
    }
    if (!deleting)
        return 0;
    const nw_kube_obj_t *const *on;
    size_t np = nw_kube_snap_pods_on_node(s, n->name, &on);
    for (size_t i = 0; i < np; i++)
        if (nw_simsnap_pod_reschedulable(on[i]))
            return 1;
    return 0;
}

void nw_prov_tick(nw_ctl_t *c, const nw_kube_snap_t *s)
{
    claims_expire(c, s);
    /* NodeClaims that exist without a providerID: launch them (once) */
    for (size_t i = 0; i < nw_kube_snap_count(s, NW_KUBE_NODECLAIMS); i++) {
        const nw_kube_obj_t *nc = nw_kube_snap_at(s, NW_KUBE_NODECLAIMS, i);
        if (nc->terminating || nc->provider_id[0])
            continue;
        nw_prov_launch_claim(c, s, nc->json, 0);
    }
    const nw_kube_obj_t *const *pend;
    size_t np = nw_kube_snap_pending_pods(s, &pend);
    /* triggers: pending pods, and nodes being deleted or disrupted whose pods must move
     * (their replacement capacity is computed with the pending pods, §1.1) */
    size_t nn = nw_kube_snap_count(s, NW_KUBE_NODES);
    const nw_kube_obj_t **trig = malloc((np + nn + 1) * sizeof *trig);
    if (!trig)
        return;
    size_t nt = 0;
    for (size_t i = 0; i < np; i++)
        trig[nt++] = pend[i];
    for (size_t i = 0; i < nn; i++) {
        const nw_kube_obj_t *n = nw_kube_snap_at(s, NW_KUBE_NODES, i);
        if (node_moving(s, n))
            trig[nt++] = n;
    }
    int64_t mono = nw_clock_mono(c->clock);
    int trigger = 0;
    for (size_t i = 0; i < nt && !trigger; i++)
        if (!seen(c, trig[i]->uid))
            trigger = 1;
    if (nt && c->next_resolve_mono && mono >= c->next_resolve_mono)
        trigger = 1; /* pods still pending: look again every 10 s */
    if (nt && !c->next_resolve_mono)
        trigger = 1;
    if (trigger) {
        seen_reset(c, trig, nt);
        if (!c->window_open_mono)
            c->window_open_mono = mono;
        c->last_trigger_mono = mono;
        c->next_resolve_mono = mono + RESOLVE_EVERY_NS;
    }
    free(trig);
    if (!c->window_open_mono)
        return;
    if (mono - c->last_trigger_mono < c->batch_idle_ns &&
        mono - c->window_open_mono < c->batch_max_ns)
        return;
    c->window_open_mono = 0;
    if (nt)
        provision(c, s, np);
}

/* How long until the batch window closes (ns; < 0: no window open). */
int64_t nw_prov_next_deadline(const nw_ctl_t *c, int64_t mono);
int64_t nw_prov_next_deadline(const nw_ctl_t *c, int64_t mono)
{
    if (!c->window_open_mono)
        return c->next_resolve_mono ? c->next_resolve_mono - mono : -1;
    int64_t a = c->last_trigger_mono + c->batch_idle_ns - mono,
            b = c->window_open_mono + c->batch_max_ns - mono;
    return a < b ? a : b;
}
