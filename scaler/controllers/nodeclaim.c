/*
 * scaler/controllers/nodeclaim.c — NodeClaim create and launch (see nodeclaim.h).
 */
#include "scaler/controllers/nodeclaim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/log.h"
#include "scaler/disrupt/hash.h"

#define LAUNCH_RETRY_NS (5 * NW_NS_PER_SEC)

struct nw_claims {
    nw_ctl_deps_t *deps;
    nw_ctl_shared_t *mem;
    _Atomic uint64_t created, launched, launch_failed, ice_deleted;
};

nw_claims_t *nw_claims_new(nw_ctl_deps_t *deps, nw_ctl_shared_t *mem)
{
    nw_claims_t *k = calloc(1, sizeof *k);
    if (!k)
        return NULL;
    k->deps = deps;
    k->mem = mem;
    return k;
}

void nw_claims_free(nw_claims_t *k)
{
    free(k);
}

uint64_t nw_claims_ice_deletes(nw_claims_t *k)
{
    return atomic_load(&k->ice_deleted);
}

nw_rc_t nw_claims_metrics(nw_claims_t *k, nw_buf_t *out)
{
    if (!k)
        return NW_OK;
    const nw_ctl_counter_t v[] = {
        {"nodewarden_nodeclaims_created_total", "NodeClaims created.", &k->created},
        {"nodewarden_nodeclaims_launched_total", "Instances launched.", &k->launched},
        {"nodewarden_nodeclaims_launch_failed_total", "Failed launches.", &k->launch_failed},
    };
    return nw_ctl_counters_write(out, v, sizeof v / sizeof *v);
}

/* The values of requirement key in a NodeClaim's spec.requirements (borrowed array). */
static const cJSON *req_values(const cJSON *nc, const char *key)
{
    const cJSON *r;
    cJSON_ArrayForEach(r, nw_json_get(nw_json_get(nc, "spec"), "requirements"))
    {
        const char *k = nw_json_str(r, "key");
        const char *op = nw_json_str(r, "operator");
        if (k && op && strcmp(k, key) == 0 && strcmp(op, "In") == 0)
            return nw_json_get(r, "values");
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
    nw_claims_t *k;
    const nw_cloud_launch_t *r;
    const char *provider_id, *type, *zone, *ct, *image;
} launched_t;

static cJSON *status_of_launch(nw_claims_t *k, const launched_t *l, const cJSON *base)
{
    cJSON *st = base ? nw_json_dup(base) : nw_json_new_object();
    if (!cJSON_IsObject(st)) {
        cJSON_Delete(st);
        st = nw_json_new_object();
    }
    const char *keys[] = {"providerID", "imageID", "capacity", "allocatable"};
    for (size_t i = 0; i < 4; i++)
        cJSON_DeleteItemFromObjectCaseSensitive(st, keys[i]);
    nw_json_add_string(st, "providerID", l->provider_id);
    if (l->image && *l->image)
        nw_json_add_string(st, "imageID", l->image);
    nw_simsnap_env_t env;
    nw_ctl_sim_env(k->deps, k->mem, &env);
    cJSON *cap = nw_simsnap_type_resources(&env, l->type, 0),
          *al = nw_simsnap_type_resources(&env, l->type, 1);
    nw_json_add_item(st, "capacity", cap ? cap : nw_json_new_object());
    nw_json_add_item(st, "allocatable", al ? al : nw_json_new_object());
    return st;
}

static int mutate_launched(cJSON *obj, void *ud)
{
    const launched_t *l = ud;
    if (cJSON_IsObject(nw_json_get(obj, "status")) && nw_json_str_at(obj, "status.providerID") &&
        strcmp(nw_json_str_at(obj, "status.providerID"), l->provider_id) == 0 &&
        nw_json_condition(obj, "Launched"))
        return 1;
    cJSON *st = status_of_launch(l->k, l, nw_json_get(obj, "status"));
    cJSON_DeleteItemFromObjectCaseSensitive(obj, "status");
    nw_json_add_item(obj, "status", st);
    /* a status without its Launched condition is never written: the next tick retries */
    if (nw_ctl_set_condition(obj, "Launched", "True", "Launched", "",
                             nw_clock_now(l->k->deps->clock)) != NW_OK)
        return 1;
    return 0;
}

static int mutate_labels(cJSON *obj, void *ud)
{
    const launched_t *l = ud;
    cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    cJSON *labels = cJSON_GetObjectItemCaseSensitive(md, "labels");
    if (!cJSON_IsObject(labels)) {
        cJSON_DeleteItemFromObjectCaseSensitive(md, "labels");
        labels = nw_json_add_object(md, "labels");
    }
    const char *kv[][2] = {{"node.kubernetes.io/instance-type", l->type},
                           {"topology.kubernetes.io/zone", l->zone},
                           {"karpenter.sh/capacity-type", l->ct}};
    int changed = 0;
    for (size_t i = 0; i < 3; i++) {
        if (!kv[i][1] || !*kv[i][1])
            continue;
        const char *cur = nw_json_str(labels, kv[i][0]);
        if (cur && strcmp(cur, kv[i][1]) == 0)
            continue;
        cJSON_DeleteItemFromObjectCaseSensitive(labels, kv[i][0]);
        nw_json_add_string(labels, kv[i][0], kv[i][1]);
        changed = 1;
    }
    return changed ? 0 : 1;
}

static void record_launch(nw_ctl_deps_t *c, const cJSON *nc, const launched_t *l)
{
    const char *name = nw_json_str_at(nc, "metadata.name");
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

/* Look for an instance already tagged for this NodeClaim (a launch before a crash). */
static int find_tagged(nw_ctl_deps_t *c, const char *name, nw_cloud_instance_t *out, int *failed)
{
    nw_cloud_instances_t list = {0};
    nw_err_t err = {0};
    *failed = 0;
    if (c->cloud->ops->list(c->cloud, &list, &err) != NW_OK) {
        nw_log_warn("provisioner", "cannot list instances", NW_LS("error", err.msg));
        *failed = 1;
        nw_cloud_instances_free(&list);
        return 0;
    }
    int found = 0;
    for (size_t i = 0; i < list.n && !found; i++) {
        const nw_cloud_instance_t *in = &list.v[i];
        if (strcmp(in->state, "terminated") == 0 || strcmp(in->state, "shutting-down") == 0)
            continue;
        const char *owner = nw_cloud_instance_tag(in, NW_TAG_NODECLAIM);
        if (owner && strcmp(owner, name) == 0) {
            *out = *in;
            found = 1;
        }
    }
    nw_cloud_instances_free(&list);
    return found;
}

/* Launch one NodeClaim that has no providerID. fresh: we created it this tick
 * (no earlier launch can exist, so the tag lookup is skipped). */
void nw_claim_launch(nw_claims_t *k, const nw_kube_snap_t *s, const cJSON *nc, int fresh)
{
    nw_ctl_deps_t *c = k->deps;
    const char *name = nw_json_str_at(nc, "metadata.name");
    if (!name || !nw_ctl_may_write(c))
        return;
    nw_inflight_claim_t *m = nw_inflight_remember(&k->mem->inflight, name, nw_clock_mono(c->clock));
    if (!m)
        return;
    int64_t mono = nw_clock_mono(c->clock);
    if (m->launched) {
        /* launched by us; the cache has not caught up or the status write failed */
        if (mono - m->created_mono > 10 * NW_NS_PER_SEC && mono >= m->next_try_mono) {
            launched_t l = {k,
                            NULL,
                            m->provider_id,
                            nw_json_str_at(m->status, "type"),
                            nw_json_str_at(m->status, "zone"),
                            nw_json_str_at(m->status, "ct"),
                            nw_json_str_at(m->status, "image")};
            record_launch(c, nc, &l);
            m->next_try_mono = mono + LAUNCH_RETRY_NS;
        }
        return;
    }
    if (mono < m->next_try_mono)
        return;
    m->next_try_mono = mono + LAUNCH_RETRY_NS;
    if (!fresh) {
        nw_cloud_instance_t in;
        int failed = 0;
        if (find_tagged(c, name, &in, &failed)) {
            const char *pid = in.provider_id, *ct = in.capacity_type;
            launched_t l = {k, NULL, pid, in.type, in.zone, ct, in.image_id};
            nw_log_info("provisioner",
                        "found the instance of a NodeClaim launched before a restart",
                        NW_LS("nodeclaim", name), NW_LS("providerID", pid));
            m->launched = 1;
            snprintf(m->provider_id, sizeof m->provider_id, "%s", pid);
            cJSON_Delete(m->status);
            m->status = nw_json_new_object();
            nw_json_add_string(m->status, "type", in.type);
            nw_json_add_string(m->status, "zone", in.zone);
            nw_json_add_string(m->status, "ct", ct);
            nw_json_add_string(m->status, "image", in.image_id);
            record_launch(c, nc, &l);
            return;
        }
        if (failed)
            return;
    }
    const char *class = nw_json_str_at(nc, "spec.nodeClassRef.name");
    const nw_kube_obj_t *ncl =
        class ? nw_kube_snap_get(s, NW_KUBE_EC2NODECLASSES, NULL, class) : NULL;
    nw_err_t err = {0};
    if (!ncl) {
        nw_log_warn("provisioner", "the NodeClaim's EC2NodeClass does not exist; not launching",
                    NW_LS("nodeclaim", name), NW_LS("ec2nodeclass", class ? class : ""));
        return;
    }
    const nw_cloud_class_t *rs = NULL;
    if (c->cloud->ops->resolve(c->cloud, ncl->json, &rs, &err) != NW_OK) {
        nw_log_warn("provisioner", "cannot resolve the EC2NodeClass", NW_LS("nodeclaim", name),
                    NW_LS("error", err.msg));
        return;
    }
    const char *types[NW_CLOUD_MAX_LAUNCH_TYPES * 10], *zones[16], *cts[4];
    int nt = str_list(req_values(nc, "node.kubernetes.io/instance-type"), types,
                      (int)(sizeof types / sizeof *types));
    int nz = str_list(req_values(nc, "topology.kubernetes.io/zone"), zones, 16);
    int nct = str_list(req_values(nc, "karpenter.sh/capacity-type"), cts, 4);
    int minv = 0;
    const cJSON *r;
    cJSON_ArrayForEach(r, nw_json_get(nw_json_get(nc, "spec"), "requirements"))
    {
        if (nw_json_get(r, "minValues"))
            minv = 1;
    }
    nw_cloud_launch_req_t req = {
        .nodepool =
            nw_json_str(nw_json_get(nw_json_get(nc, "metadata"), "labels"), NW_LABEL_NODEPOOL),
        .nodeclaim = name,
        .nodeclass = ncl->json,
        .types = types,
        .ntypes = nt,
        .zones = nz ? zones : NULL,
        .nzones = nz,
        .capacity_types = nct ? cts : NULL,
        .ncapacity_types = nct,
        .min_values = minv,
    };
    nw_cloud_launch_t res;
    memset(&res, 0, sizeof res);
    nw_cloud_error_t ce;
    memset(&ce, 0, sizeof ce);
    if (!nw_ctl_may_write(c))
        return;
    if (c->cloud->ops->launch(c->cloud, &req, &res, &ce, &err) != NW_OK) {
        atomic_fetch_add(&k->launch_failed, 1);
        char msg[700];
        snprintf(msg, sizeof msg, "launching nodeclaim: %s", err.msg);
        nw_log_warn("provisioner", "launch failed", NW_LS("nodeclaim", name),
                    NW_LS("error", err.msg));
        if (ce.kind == NW_CLOUD_ERR_CAPACITY) {
            /* Karpenter: an insufficient-capacity launch deletes the NodeClaim; the
             * pods are placed again next batch without the ICE'd offerings. */
            nw_ctl_event(c, &nw_kube_res_nodeclaims, nc, "Warning", "InsufficientCapacityError",
                         msg);
            nw_err_t e2 = {0};
            nw_kube_delete(c->kube, &nw_kube_res_nodeclaims, NULL, name, NULL, NULL, &e2);
            m->deleted = 1;
            atomic_fetch_add(&k->ice_deleted, 1);
        } else
            nw_ctl_event(c, &nw_kube_res_nodeclaims, nc, "Warning", "LaunchFailed", msg);
        return;
    }
    atomic_fetch_add(&k->launched, 1);
    m->launched = 1;
    snprintf(m->provider_id, sizeof m->provider_id, "%s", res.provider_id);
    cJSON_Delete(m->status);
    m->status = nw_json_new_object();
    nw_json_add_string(m->status, "type", res.type);
    nw_json_add_string(m->status, "zone", res.zone);
    nw_json_add_string(m->status, "ct", res.capacity_type);
    nw_json_add_string(m->status, "image", res.image_id);
    nw_log_info("provisioner", "launched", NW_LS("nodeclaim", name),
                NW_LS("instanceType", res.type), NW_LS("zone", res.zone),
                NW_LS("capacityType", res.capacity_type), NW_LS("providerID", res.provider_id),
                NW_LF("price", res.price));
    char msg[512];
    snprintf(msg, sizeof msg, "Launched %s %s instance %s in %s", res.capacity_type, res.type,
             res.instance_id, res.zone);
    nw_ctl_event(c, &nw_kube_res_nodeclaims, nc, "Normal", "Launched", msg);
    launched_t l = {k, &res, res.provider_id, res.type, res.zone, res.capacity_type, res.image_id};
    record_launch(c, nc, &l);
}

/* ---- create ---- */

/* The NodePool's and EC2NodeClass's drift hashes on a NodeClaim about to be created
 * (nw_hash_stamp_nodeclaim); a pool or class missing from s is left out. */
static void stamp_hashes(cJSON *nodeclaim, const nw_kube_snap_t *s)
{
    const char *pool =
        nw_json_str(nw_json_get(nw_json_get(nodeclaim, "metadata"), "labels"), NW_LABEL_NODEPOOL);
    const char *class = nw_json_str_at(nodeclaim, "spec.nodeClassRef.name");
    const nw_kube_obj_t *po = pool ? nw_kube_snap_get(s, NW_KUBE_NODEPOOLS, NULL, pool) : NULL;
    const nw_kube_obj_t *cl =
        class ? nw_kube_snap_get(s, NW_KUBE_EC2NODECLASSES, NULL, class) : NULL;
    nw_err_t err = {0};
    if (nw_hash_stamp_nodeclaim(nodeclaim, po ? po->json : NULL, cl ? cl->json : NULL, &err) !=
        NW_OK)
        nw_log_warn("drift", "cannot stamp the NodeClaim's drift hashes", NW_LS("error", err.msg));
}

nw_rc_t nw_claim_create(nw_claims_t *k, const nw_kube_snap_t *ks, const nw_simsnap_t *s,
                        const nw_sched_claim_t *cl, const nw_simsnap_claim_opts_t *o, char *name,
                        size_t namelen, nw_err_t *err)
{
    nw_ctl_deps_t *c = k->deps;
    static const nw_simsnap_claim_opts_t defaults = {0};
    if (!o)
        o = &defaults;
    if (name && namelen)
        name[0] = 0;
    if (!nw_ctl_may_write(c))
        return nw_err_set(err, NW_EINVAL, "", "not leading");
    const char *poolname = nw_sched_pool_name(s->sched, (size_t)cl->pool);
    const nw_kube_obj_t *pool =
        poolname ? nw_kube_snap_get(ks, NW_KUBE_NODEPOOLS, NULL, poolname) : NULL;
    if (!pool)
        return nw_err_set(err, NW_EINVAL, "", "NodePool %s not found", poolname ? poolname : "");
    int ntypes = 0;
    const char *first = "";
    cJSON *body = nw_simsnap_claim_body(s, cl, pool, o, &ntypes, &first, err);
    if (!body)
        return err && err->rc != NW_OK ? err->rc : NW_EINVAL;
    stamp_hashes(body, ks);
    cJSON *created = NULL;
    nw_rc_t rc = nw_kube_create(c->kube, &nw_kube_res_nodeclaims, NULL, body, &created, err);
    cJSON_Delete(body);
    if (rc != NW_OK) {
        nw_log_error("provisioner", "cannot create a NodeClaim", NW_LS("nodepool", poolname),
                     NW_LS("error", err ? err->msg : ""));
        return rc;
    }
    atomic_fetch_add(&k->created, 1);
    const char *nm = nw_json_str_at(created, "metadata.name");
    if (!nm) {
        cJSON_Delete(created);
        return nw_err_set(err, NW_EKUBE, "metadata.name", "the created NodeClaim has no name");
    }
    if (name && namelen)
        snprintf(name, namelen, "%s", nm);
    nw_log_info(
        "provisioner", "created NodeClaim", NW_LS("nodeclaim", nm), NW_LS("nodepool", poolname),
        NW_LS("reason", o->reason ? o->reason : "provisioning"), NW_LS("instanceType", first),
        NW_LI("instanceTypes", ntypes), NW_LS("zone", cl->zone),
        NW_LS("capacityType", o->capacity_type ? o->capacity_type : cl->capacity_type),
        NW_LF("price", cl->price), NW_LI("pods", cl->npods));
    int64_t mono = nw_clock_mono(c->clock);
    nw_inflight_claim_t *m = nw_inflight_remember(&k->mem->inflight, nm, mono);
    if (m) {
        cJSON_Delete(m->obj);
        m->obj = nw_json_dup(created);
    }
    char msg[400];
    snprintf(msg, sizeof msg, "Pod should schedule on: nodeclaim/%s", nm);
    for (int i = 0; i < cl->npods; i++) {
        int pi = cl->pods[i];
        if (pi < 0 || (size_t)pi >= s->npods)
            continue;
        if (!o->no_nominate)
            nw_noms_nominate(k->mem->noms, s->pods[pi]->uid, nm, mono);
        if (!o->no_events)
            nw_ctl_event(c, &nw_kube_res_pods, s->pods[pi]->json, "Normal", "Nominated", msg);
    }
    nw_ctl_fault(c, "nodeclaim-created", nm); /* test-only crash point (ctl.h) */
    nw_claim_launch(k, ks, created, 1);
    cJSON_Delete(created);
    return NW_OK;
}
