/*
 * scaler/nodeclaim/nodeclaim.c — NodeClaim create and launch (see nodeclaim.h).
 */
#include "scaler/nodeclaim/nodeclaim.h"
#include "scaler/metrics/kmetrics.h"
#include "scaler/cloud/metered.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/json.h"
#include "common/log.h"
#include "scaler/nodeclaim/bootstrap.h"
#include "api/drifthash.h"

#define LAUNCH_RETRY_NS (5 * NW_NS_PER_SEC)

typedef enum { JOB_QUEUED, JOB_RUNNING, JOB_DONE } job_state_t;

/* A launch's request and outcome, made when a worker takes its job (job_run): a batch
 * queues hundreds of launches at once and 16 run at a time, so the queue holds only what
 * each was asked (about 0.5 KB and the NodeClaim), not this (about 10 KB). */
typedef struct {
    const char *types[NW_CLOUD_MAX_LAUNCH_TYPES * 10], *zones[16], *cts[4], *crids[16];
    char token[NW_CLOUD_TOKEN_MAX + 1];
    char boot_token[NW_BOOT_TOKEN_MAX]; /* minted on the worker before the launch */
    nw_cloud_launch_req_t req;          /* points into the job's nc and nodeclass, and above */
    nw_cloud_instance_t found;
    nw_cloud_launch_t res;
    nw_cloud_error_t ce;
    nw_err_t err;
} launch_run_t;

/* One launch handed to a worker: what it reads (the NodeClaim, taken; its class, held in
 * the cache), and what it found. */
typedef struct launch_job {
    struct launch_job *next;
    job_state_t state;
    char name[256];
    int fresh;          /* created just now: no earlier instance can exist */
    unsigned token_gen; /* the client token's generation (client_token) */
    cJSON *nc;          /* the NodeClaim (owned) */
    /* its EC2NodeClass: the cache's object (nw_kube_cache_obj_hold; immutable, shared by
     * every job of the class) and its JSON; NULL: only look for an instance */
    const nw_kube_obj_t *class_obj;
    const cJSON *nodeclass;
    char *class_problem; /* why there is no class to launch with (owned); NULL: none */
    int boot;            /* the class wants nodewarden's kubeadm bootstrap */
    int boot_have;       /* its Secret exists (made by an earlier try) */
    int boot_minted;     /* this try created the Secret */
    int class_unready;   /* the class is not ready: no launch */
    /* the outcome */
    int adopted, list_failed, skipped;
    int recorded;      /* the labels and status were written (on the worker) */
    nw_rc_t rc;        /* NW_ENOMEM with run NULL: the worker could not make it */
    launch_run_t *run; /* NULL until a worker took the job */
} launch_job_t;

struct nw_nodeclaim {
    nw_ctl_deps_t *deps;
    nw_ctl_shared_t *mem;
    nw_nodeclaim_opts_t o;
    _Atomic uint64_t created, launched, launch_failed, ice_deleted, adopted;
    /* the jobs, oldest first, and the workers (all under mu) */
    pthread_mutex_t mu;
    pthread_cond_t work, idle;
    launch_job_t *jobs;
    int stop, nthreads;
    pthread_t *threads;
};

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
    nw_nodeclaim_t *k;
    const nw_cloud_launch_t *r;
    const char *provider_id, *type, *zone, *ct, *image;
} launched_t;

static cJSON *status_of_launch(nw_nodeclaim_t *k, const launched_t *l, const cJSON *obj)
{
    const cJSON *base = nw_json_get(obj, "status");
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
    /* the EC2NodeClass's kubelet settings shape capacity and allocatable */
    const char *class = nw_json_str_at(obj, "spec.nodeClassRef.name");
    nw_kube_snap_t *ks = k->deps->cache ? nw_kube_cache_snapshot(k->deps->cache) : NULL;
    const nw_kube_obj_t *ncl =
        ks && class ? nw_kube_cache_snap_get(ks, NW_KUBE_EC2NODECLASSES, NULL, class) : NULL;
    cJSON *cap = nw_simsnap_type_resources(&env, ncl ? ncl->json : NULL, l->type, 0),
          *al = nw_simsnap_type_resources(&env, ncl ? ncl->json : NULL, l->type, 1);
    if (ks)
        nw_kube_cache_snap_release(ks);
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
    cJSON *st = status_of_launch(l->k, l, obj);
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
    /* the instance type's single-valued labels, its zone, zone id, region and capacity type
     * (aws/karpenter-provider-aws pkg/cloudprovider/cloudprovider.go instanceToNodeClaim):
     * what the simulation placed pods by */
    nw_cat_label_t cl[64];
    int ncl = nw_nodeclaim_launch_labels(l->k->deps, l->type, l->zone, l->r ? l->r->zone_id : NULL,
                                         cl, 64);
    const char *kv[80][2];
    size_t nkv = 0;
    for (int i = 0; i < ncl; i++) {
        kv[nkv][0] = cl[i].key;
        kv[nkv++][1] = cl[i].value;
    }
    /* a reserved launch: its reservation (instanceToNodeClaim: capacity-reservation-id,
     * -type, -interruptible) */
    const char *cr = l->r && l->r->cr_id[0] ? l->r->cr_id : NULL;
    const char *base[][2] = {{"node.kubernetes.io/instance-type", l->type},
                             {"topology.kubernetes.io/zone", l->zone},
                             {"karpenter.sh/capacity-type", l->ct},
                             {NW_LABEL_CAPACITY_RESERVATION_ID, cr},
                             {NW_LABEL_CAPACITY_RESERVATION_TYPE, cr ? l->r->cr_type : NULL},
                             {NW_LABEL_CAPACITY_RESERVATION_INTERRUPTIBLE,
                              cr ? (l->r->cr_interruptible ? "true" : "false") : NULL}};
    for (size_t i = 0; i < sizeof base / sizeof base[0]; i++) {
        kv[nkv][0] = base[i][0];
        kv[nkv++][1] = base[i][1];
    }
    /* the class's placement group and, for a partition group, the partition (the one the
     * claim asked for or EC2 chose; "" while unknown, as Karpenter's sentinel) */
    int pg_keys = 0;
    if (l->r && l->r->placement_group[0]) {
        kv[nkv][0] = "karpenter.k8s.aws/placement-group-id";
        kv[nkv++][1] = l->r->placement_group;
        pg_keys = 1;
        if (l->r->partitioned) {
            kv[nkv][0] = "karpenter.k8s.aws/placement-group-partition";
            kv[nkv++][1] = l->r->partition;
            pg_keys = 2;
        }
    }
    int changed = 0;
    for (size_t i = 0; i < nkv; i++) {
        int pg = i >= nkv - (size_t)pg_keys;
        if (!kv[i][1] || (!*kv[i][1] && !pg))
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

int nw_nodeclaim_launch_labels(nw_ctl_deps_t *c, const char *type, const char *zone,
                               const char *zone_id, nw_cat_label_t *out, int max)
{
    const nw_catalog_t *cat = c->cloud ? c->cloud->ops->catalog(c->cloud) : NULL;
    const nw_itype_t *t = cat && type ? nw_catalog_find(cat, type) : NULL;
    if (!t)
        return 0;
    int n = nw_catalog_itype_labels(t, out, max);
    nw_offering_t o;
    memset(&o, 0, sizeof o);
    snprintf(o.zone, sizeof o.zone, "%s", zone ? zone : "");
    /* the launch's zone id (the type's offerings may change under another thread) */
    snprintf(o.zone_id, sizeof o.zone_id, "%s", zone_id ? zone_id : "");
    if (o.zone[0]) {
        nw_cat_label_t ol[8];
        int no = nw_catalog_offering_labels(cat, &o, ol, 8);
        for (int i = 0; i < no && n < max; i++)
            if (strcmp(ol[i].key, "karpenter.sh/capacity-type") != 0)
                out[n++] = ol[i];
    }
    return n;
}

/* Write a launch into the NodeClaim: its labels first, then its status (providerID and the
 * rest). When the labels cannot be written the status is not written either: a NodeClaim
 * whose status names its instance counts as launched, and one launched without the
 * launch's labels (instance type, zone, capacity type) looks drifted from its NodePool and
 * would be replaced; without the status the in-flight memory records the whole launch
 * again (nw_nodeclaim_launch, below). */
static void record_launch(nw_ctl_deps_t *c, const char *name, const launched_t *l)
{
    nw_err_t err = {0};
    if (nw_kube_write_update_retry(c->kube, &nw_kube_client_res_nodeclaims, NULL, name, 0,
                                   mutate_labels, (void *)l, 5, NULL, &err) != NW_OK) {
        nw_log_warn("provisioner", "cannot label the NodeClaim; its launch is recorded later",
                    NW_LS("nodeclaim", name), NW_LS("error", err.msg));
        return;
    }
    nw_err_clear(&err);
    if (nw_kube_write_update_retry(c->kube, &nw_kube_client_res_nodeclaims, NULL, name, 1,
                                   mutate_launched, (void *)l, 5, NULL, &err) != NW_OK)
        nw_log_warn("provisioner", "cannot record the launch in the NodeClaim status",
                    NW_LS("nodeclaim", name), NW_LS("error", err.msg));
}

/* Remember in m what a launch chose (the simulation reads it while the cache lags). */
static void remember_launch(nw_inflight_claim_t *m, const char *pid, const char *type,
                            const char *zone, const char *ct, const char *image)
{
    m->launched = 1;
    snprintf(m->provider_id, sizeof m->provider_id, "%s", pid);
    cJSON_Delete(m->status);
    m->status = nw_json_new_object();
    nw_json_add_string(m->status, "type", type);
    nw_json_add_string(m->status, "zone", zone);
    nw_json_add_string(m->status, "ct", ct);
    nw_json_add_string(m->status, "image", image);
}

/* Look for an instance already tagged for this NodeClaim (a launch before a crash, or one
 * whose answer was lost). Any thread. */
static bool find_tagged(nw_ctl_deps_t *c, const char *name, nw_cloud_instance_t *out, int *failed)
{
    nw_cloud_instances_t list = {0};
    nw_err_t err = {0};
    *failed = 0;
    if (c->cloud->ops->list(c->cloud, &list, &err) != NW_OK) {
        nw_log_warn("provisioner", "cannot list instances", NW_LS("error", err.msg));
        *failed = 1;
        nw_cloud_instances_free(&list);
        return false;
    }
    bool found = false;
    for (size_t i = 0; i < list.n && !found; i++) {
        const nw_cloud_instance_t *in = &list.v[i];
        if (strcmp(in->state, "terminated") == 0 || strcmp(in->state, "shutting-down") == 0)
            continue;
        const char *owner = nw_cloud_instance_tag(in, NW_TAG_NODECLAIM);
        if (owner && strcmp(owner, name) == 0) {
            *out = *in;
            found = true;
        }
    }
    nw_cloud_instances_free(&list);
    return found;
}

/* The launch's client token: the NodeClaim's uid (stable across retries and restarts;
 * a new NodeClaim has a new one) and the generation, which moves on only when the cloud
 * said the token launched nothing. Without a uid, a hash of the name. */
static void client_token(const cJSON *nc, const char *name, unsigned gen, char *out, size_t len)
{
    const char *uid = nw_json_str_at(nc, "metadata.uid");
    if (uid && *uid && strlen(uid) <= 40) {
        snprintf(out, len, "nw-%s-%u", uid, gen);
        return;
    }
    uint64_t h = UINT64_C(1469598103934665603); /* FNV-1a */
    for (const char *p = name; *p; p++)
        h = (h ^ (unsigned char)*p) * UINT64_C(1099511628211);
    snprintf(out, len, "nw-n%016llx-%u", (unsigned long long)h, gen);
}

/* ---- the launch workers ---- */

static void job_free(launch_job_t *j)
{
    if (!j)
        return;
    cJSON_Delete(j->nc);
    nw_kube_cache_obj_release(j->class_obj);
    free(j->class_problem);
    free(j->run);
    free(j);
}

/* The launch request of j into r (a worker; it reads only the job's own NodeClaim). */
static void job_request(const launch_job_t *j, launch_run_t *r)
{
    int nt = str_list(req_values(j->nc, "node.kubernetes.io/instance-type"), r->types,
                      (int)(sizeof r->types / sizeof *r->types));
    int nz = str_list(req_values(j->nc, "topology.kubernetes.io/zone"), r->zones, 16);
    int nct = str_list(req_values(j->nc, "karpenter.sh/capacity-type"), r->cts, 4);
    int ncr = str_list(req_values(j->nc, NW_LABEL_CAPACITY_RESERVATION_ID), r->crids, 16);
    int minv = 0;
    const cJSON *q;
    cJSON_ArrayForEach(q, nw_json_get(nw_json_get(j->nc, "spec"), "requirements"))
    {
        if (nw_json_get(q, "minValues"))
            minv = 1;
    }
    client_token(j->nc, j->name, j->token_gen, r->token, sizeof r->token);
    r->req = (nw_cloud_launch_req_t){
        .nodepool =
            nw_json_str(nw_json_get(nw_json_get(j->nc, "metadata"), "labels"), NW_LABEL_NODEPOOL),
        .nodeclaim = j->name,
        .nodeclass = j->nodeclass,
        .types = r->types,
        .ntypes = nt,
        .zones = nz ? r->zones : NULL,
        .nzones = nz,
        .capacity_types = nct ? r->cts : NULL,
        .ncapacity_types = nct,
        .min_values = minv,
        .client_token = r->token,
        .cr_ids = ncr ? r->crids : NULL,
        .ncr_ids = ncr,
        .claim = j->nc,
        .bootstrap_token = j->boot ? r->boot_token : NULL,
    };
}

/* Run one job: look for an instance first unless fresh, then launch, then write the
 * launch into the NodeClaim's labels and status (so that a batch's writes overlap as its
 * launches do). Any thread; touches only the job, the cloud (launch and list are
 * thread-safe, cloud.h), the Kubernetes client (thread-safe), the catalog's instance
 * types (never changed after start; only their offerings are) and atomics. */
static void job_run(nw_nodeclaim_t *k, launch_job_t *j)
{
    nw_ctl_deps_t *c = k->deps;
    launch_run_t *r = j->run = calloc(1, sizeof *j->run);
    if (!r) {
        j->rc = NW_ENOMEM;
        return;
    }
    job_request(j, r);
    if (!j->fresh) {
        int failed = 0;
        if (find_tagged(c, j->name, &r->found, &failed)) {
            j->adopted = 1;
            const nw_cloud_instance_t *in = &r->found;
            launched_t l = {
                k, NULL, in->provider_id, in->type, in->zone, in->capacity_type, in->image_id};
            if (nw_ctl_may_write(c)) {
                record_launch(c, j->name, &l);
                j->recorded = 1;
            }
            return;
        }
        if (failed) {
            j->list_failed = 1;
            return;
        }
    }
    if (!j->nodeclass) {
        j->rc = nw_err_set(&r->err, NW_EINVAL, "spec.nodeClassRef", "%s",
                           j->class_problem ? j->class_problem : "no EC2NodeClass");
        return;
    }
    if (!nw_ctl_may_write(c)) {
        j->skipped = 1;
        return;
    }
    if (j->boot && j->boot_have)
        j->rc = nw_bootstrap_token(j->nc, r->boot_token, &r->err);
    else if (j->boot) {
        j->rc = nw_bootstrap_mint(c->kube, j->nc, nw_clock_now(c->clock), k->o.bootstrap_ttl_ns,
                                  r->boot_token, &r->err);
        j->boot_minted = j->rc == NW_OK;
    }
    if (j->rc != NW_OK)
        return;
    const char *jname = nw_json_str_at(j->nc, "metadata.name");
    nw_ctl_fault(c, "launch-sending", jname); /* crash points (scaler/ctl/ctl.h) */
    j->rc = c->cloud->ops->launch(c->cloud, &r->req, &r->res, &r->ce, &r->err);
    if (j->rc == NW_OK)
        nw_ctl_fault(c, "launched", jname);
    if (j->rc == NW_OK && nw_ctl_may_write(c)) {
        const nw_cloud_launch_t *res = &r->res;
        launched_t l = {
            k, res, res->provider_id, res->type, res->zone, res->capacity_type, res->image_id};
        record_launch(c, j->name, &l);
        j->recorded = 1;
    }
}

static void *worker_main(void *arg)
{
    nw_metered_controller("nodeclaim.lifecycle"); /* the launches' metrics label */
    nw_nodeclaim_t *k = arg;
    pthread_mutex_lock(&k->mu);
    for (;;) {
        launch_job_t *j = NULL;
        while (!k->stop) {
            for (j = k->jobs; j && j->state != JOB_QUEUED; j = j->next) {
            }
            if (j)
                break;
            pthread_cond_wait(&k->work, &k->mu);
        }
        if (k->stop)
            break;
        j->state = JOB_RUNNING;
        pthread_mutex_unlock(&k->mu);
        job_run(k, j);
        pthread_mutex_lock(&k->mu);
        j->state = JOB_DONE;
        pthread_cond_broadcast(&k->idle);
        if (k->o.wake) {
            pthread_mutex_unlock(&k->mu);
            k->o.wake(k->o.wake_ud);
            pthread_mutex_lock(&k->mu);
        }
    }
    pthread_mutex_unlock(&k->mu);
    return NULL;
}

nw_nodeclaim_t *nw_nodeclaim_new(nw_ctl_deps_t *deps, nw_ctl_shared_t *mem,
                                 const nw_nodeclaim_opts_t *o)
{
    nw_nodeclaim_t *k = calloc(1, sizeof *k);
    if (!k)
        return NULL;
    k->deps = deps;
    k->mem = mem;
    if (o)
        k->o = *o;
    if (k->o.workers < 0)
        k->o.workers = 0;
    pthread_mutex_init(&k->mu, NULL);
    pthread_cond_init(&k->work, NULL);
    pthread_cond_init(&k->idle, NULL);
    if (k->o.workers > 0 && !(k->threads = calloc((size_t)k->o.workers, sizeof *k->threads))) {
        nw_nodeclaim_free(k);
        return NULL;
    }
    for (int i = 0; i < k->o.workers; i++) {
        if (pthread_create(&k->threads[i], NULL, worker_main, k) != 0) {
            nw_nodeclaim_free(k);
            return NULL;
        }
        pthread_setname_np(k->threads[i], "nw-launch");
        k->nthreads++;
    }
    return k;
}

void nw_nodeclaim_free(nw_nodeclaim_t *k)
{
    if (!k)
        return;
    pthread_mutex_lock(&k->mu);
    k->stop = 1;
    pthread_cond_broadcast(&k->work);
    pthread_mutex_unlock(&k->mu);
    for (int i = 0; i < k->nthreads; i++)
        pthread_join(k->threads[i], NULL);
    free(k->threads);
    while (k->jobs) {
        launch_job_t *j = k->jobs;
        k->jobs = j->next;
        job_free(j);
    }
    pthread_cond_destroy(&k->idle);
    pthread_cond_destroy(&k->work);
    pthread_mutex_destroy(&k->mu);
    free(k);
}

uint64_t nw_nodeclaim_ice_deletes(nw_nodeclaim_t *k)
{
    return atomic_load(&k->ice_deleted);
}

nw_rc_t nw_nodeclaim_metrics(nw_nodeclaim_t *k, nw_buf_t *out)
{
    if (!k)
        return NW_OK;
    const nw_ctl_counter_t v[] = {
        {"nodewarden_nodeclaims_created_total", "NodeClaims created.", &k->created},
        {"nodewarden_nodeclaims_launched_total", "Instances launched.", &k->launched},
        {"nodewarden_nodeclaims_launch_failed_total", "Failed launches.", &k->launch_failed},
        {"nodewarden_nodeclaims_adopted_total",
         "Instances found tagged for a NodeClaim without a providerID and recorded.", &k->adopted},
    };
    nw_rc_t rc = nw_ctl_counters_write(out, v, sizeof v / sizeof *v);
    if (rc == NW_OK)
        rc = nw_buf_addf(out,
                         "# HELP nodewarden_nodeclaims_launches_in_flight Launches queued or "
                         "running on the launch workers.\n"
                         "# TYPE nodewarden_nodeclaims_launches_in_flight gauge\n"
                         "nodewarden_nodeclaims_launches_in_flight %d\n",
                         nw_nodeclaim_in_flight(k));
    return rc;
}

int nw_nodeclaim_in_flight(nw_nodeclaim_t *k)
{
    int n = 0;
    pthread_mutex_lock(&k->mu);
    for (const launch_job_t *j = k->jobs; j; j = j->next)
        n += j->state != JOB_DONE;
    pthread_mutex_unlock(&k->mu);
    return n;
}

bool nw_nodeclaim_wait_idle(nw_nodeclaim_t *k, int64_t timeout_ms)
{
    struct timespec dl;
    nw_clock_deadline_after(&dl, CLOCK_REALTIME, timeout_ms);
    pthread_mutex_lock(&k->mu);
    int busy = 1;
    while (busy) {
        busy = 0;
        for (const launch_job_t *j = k->jobs; j; j = j->next)
            busy |= j->state != JOB_DONE;
        if (busy && pthread_cond_timedwait(&k->idle, &k->mu, &dl) != 0)
            break;
    }
    pthread_mutex_unlock(&k->mu);
    return !busy;
}

/* Is a launch of name queued, running or finished but not yet collected? (k->mu held) */
static bool job_pending_locked(const nw_nodeclaim_t *k, const char *name)
{
    for (const launch_job_t *j = k->jobs; j; j = j->next)
        if (strcmp(j->name, name) == 0)
            return true;
    return false;
}

/* What a finished job found, written back: the in-flight memory, the NodeClaim's labels
 * and status, Events, the delete on insufficient capacity. The reconcile thread. */
static void job_finish(nw_nodeclaim_t *k, launch_job_t *j)
{
    nw_ctl_deps_t *c = k->deps;
    const char *name = j->name;
    int64_t mono = nw_clock_mono(c->clock);
    /* a new leadership term may have cleared the memory meanwhile: remember again */
    nw_inflight_claim_t *m = nw_inflight_remember(&k->mem->inflight, name, mono);
    if (m)
        m->launching = 0;
    if (m && j->boot_minted)
        m->boot_minted_mono = mono;
    const launch_run_t *r = j->run;
    if (!r) {
        /* tried again after LAUNCH_RETRY_NS */
        nw_log_warn("provisioner", "launch not tried: out of memory", NW_LS("nodeclaim", name));
        return;
    }
    if (j->adopted) {
        const nw_cloud_instance_t *in = &r->found;
        const char *pid = in->provider_id, *ct = in->capacity_type;
        nw_log_info("provisioner", "found the instance of a NodeClaim launched before",
                    NW_LS("nodeclaim", name), NW_LS("providerID", pid));
        atomic_fetch_add(&k->adopted, 1);
        if (m) {
            remember_launch(m, pid, in->type, in->zone, ct, in->image_id);
            if (!j->recorded)
                m->next_try_mono = 0; /* write it from the memory (nw_nodeclaim_launch) */
        }
        return;
    }
    if (j->list_failed || j->skipped)
        return; /* tried again after LAUNCH_RETRY_NS */
    if (j->rc != NW_OK) {
        if (!j->nodeclass) {
            nw_log_warn("provisioner", "not launching", NW_LS("nodeclaim", name),
                        NW_LS("reason", r->err.msg));
            return;
        }
        atomic_fetch_add(&k->launch_failed, 1);
        /* a token the cloud spent on a launch that made nothing, or one it refused after
         * the instance list (just asked) showed none: the next try needs a new one */
        if (m && (r->ce.token_spent || (r->ce.token_conflict && !j->fresh)))
            m->token_gen++;
        char msg[700];
        snprintf(msg, sizeof msg, "launching nodeclaim: %s", r->err.msg);
        nw_log_warn("provisioner", "launch failed", NW_LS("nodeclaim", name),
                    NW_LS("error", r->err.msg));
        if (r->ce.kind == NW_CLOUD_ERR_CAPACITY) {
            /* Karpenter: an insufficient-capacity launch deletes the NodeClaim; the
             * pods are placed again next batch without the ICE'd offerings. */
            nw_ctl_event(c, &nw_kube_client_res_nodeclaims, j->nc, "Warning",
                         "InsufficientCapacityError", msg);
            if (nw_ctl_may_write(c)) {
                nw_err_t e2 = {0};
                /* best effort: the NodeClaim has no instance, and a failed delete is retried by the
                 * launch path on the next tick */
                (void)nw_kube_write_delete(c->kube, &nw_kube_client_res_nodeclaims, NULL, name,
                                           NULL, NULL, &e2);
                if (m)
                    m->deleted = 1;
                atomic_fetch_add(&k->ice_deleted, 1);
            }
        } else
            nw_ctl_event(c, &nw_kube_client_res_nodeclaims, j->nc, "Warning", "LaunchFailed", msg);
        return;
    }
    const nw_cloud_launch_t *res = &r->res;
    atomic_fetch_add(&k->launched, 1);
    if (m)
        remember_launch(m, res->provider_id, res->type, res->zone, res->capacity_type,
                        res->image_id);
    nw_log_info("provisioner", "launched", NW_LS("nodeclaim", name),
                NW_LS("instanceType", res->type), NW_LS("zone", res->zone),
                NW_LS("capacityType", res->capacity_type), NW_LS("providerID", res->provider_id),
                NW_LF("price", res->price));
    char msg[512];
    snprintf(msg, sizeof msg, "Launched %s %s instance %s in %s", res->capacity_type, res->type,
             res->instance_id, res->zone);
    nw_ctl_event(c, &nw_kube_client_res_nodeclaims, j->nc, "Normal", "Launched", msg);
    if (m && !j->recorded)
        m->next_try_mono = 0; /* not written (not leading then): from the memory later */
}

void nw_nodeclaim_collect(nw_nodeclaim_t *k)
{
    pthread_mutex_lock(&k->mu);
    launch_job_t *done = NULL, **tail = &done;
    for (launch_job_t **pp = &k->jobs; *pp;) {
        launch_job_t *j = *pp;
        if (j->state == JOB_DONE) {
            *pp = j->next;
            j->next = NULL;
            *tail = j;
            tail = &j->next;
        } else
            pp = &j->next;
    }
    pthread_mutex_unlock(&k->mu);
    while (done) {
        launch_job_t *j = done;
        done = j->next;
        job_finish(k, j);
        job_free(j);
    }
}

/* Does the class's status say Ready True or False (not absent, not Unknown)? */
static bool class_has_verdict(const cJSON *nodeclass)
{
    const char *st = nw_json_condition(nodeclass, "Ready");
    return st && (strcmp(st, "True") == 0 || strcmp(st, "False") == 0);
}

/* The job for NodeClaim nc (taken: the job's, also when NULL is returned): its class held,
 * or why there is none. NULL on OOM. The reconcile thread (it resolves the class and offers
 * its zones). */
static launch_job_t *job_new(nw_nodeclaim_t *k, const nw_kube_snap_t *s, cJSON *nc,
                             const char *name, int fresh, unsigned gen)
{
    nw_ctl_deps_t *c = k->deps;
    launch_job_t *j = calloc(1, sizeof *j);
    if (!j) {
        cJSON_Delete(nc);
        return NULL;
    }
    snprintf(j->name, sizeof j->name, "%s", name);
    j->fresh = fresh;
    j->token_gen = gen;
    j->nc = nc;
    const char *class = nw_json_str_at(j->nc, "spec.nodeClassRef.name");
    const nw_kube_obj_t *ncl =
        class ? nw_kube_cache_snap_get(s, NW_KUBE_EC2NODECLASSES, NULL, class) : NULL;
    nw_err_t err = {0};
    const nw_cloud_class_t *rs = NULL;
    char problem[600] = "";
    if (!ncl)
        snprintf(problem, sizeof problem, "the NodeClaim's EC2NodeClass %s does not exist",
                 class ? class : "");
    else if (c->cloud->ops->resolve(c->cloud, ncl->json, &rs, &err) != NW_OK)
        snprintf(problem, sizeof problem, "cannot resolve the EC2NodeClass: %s", err.msg);
    else if (rs && !rs->ready) {
        /* its launches cannot succeed: none is tried (no instance profile, no token Secret,
         * no EC2 call) until the class is ready (Karpenter: NodeClassNotReady) */
        snprintf(problem, sizeof problem, "the EC2NodeClass %s is not ready: %s: %.400s", class,
                 rs->reason, rs->message);
        j->class_unready = 1;
    } else if (!class_has_verdict(ncl->json)) {
        /* the class's status has no verdict yet (just created, not reconciled): its launch
         * waits for one, as Karpenter's does for a class whose readiness is Unknown (a
         * stale False gives way to the resolve above, which is newer) */
        snprintf(problem, sizeof problem,
                 "the EC2NodeClass %s is not ready: NodeClassReadinessUnknown: %s", class,
                 nw_json_condition(ncl->json, "Ready") ? "Node Class Readiness Unknown"
                                                       : "it has no status yet");
        j->class_unready = 1;
    } else {
        /* an offline catalog offers the class's zones (the reconcile thread's to change) */
        nw_catalog_zone_t z[16];
        int nz = 0;
        for (size_t i = 0; rs && i < rs->nsubnets; i++)
            nz = nw_catalog_zone_add(z, nz, 16, rs->subnets[i].zone, rs->subnets[i].zone_id);
        nw_err_clear(&err);
        if (nz && c->cloud->ops->offer_zones(c->cloud, z, nz, &err) != NW_OK)
            nw_log_warn("provisioner", "cannot offer the node class's zones",
                        NW_LS("error", err.msg));
        /* the cache's object, not a copy: it never changes, and every launch of a batch
         * reads the same one */
        j->class_obj = nw_kube_cache_obj_hold(ncl);
        j->nodeclass = ncl->json;
        j->boot = nw_bootstrap_wanted(ncl->json);
    }
    if (problem[0] && !(j->class_problem = strdup(problem))) {
        job_free(j);
        return NULL;
    }
    return j;
}

/* A NodeClaim launched by us whose launch the cache does not show (it has not caught up,
 * or the status write failed): written again from the memory, at most every
 * LAUNCH_RETRY_NS once 10 s passed. */
static void record_again(nw_nodeclaim_t *k, nw_inflight_claim_t *m, const char *name, int64_t mono)
{
    if (mono - m->created_mono <= 10 * NW_NS_PER_SEC || mono < m->next_try_mono)
        return;
    launched_t l = {k,
                    NULL,
                    m->provider_id,
                    nw_json_str_at(m->status, "type"),
                    nw_json_str_at(m->status, "zone"),
                    nw_json_str_at(m->status, "ct"),
                    nw_json_str_at(m->status, "image")};
    record_launch(k->deps, name, &l);
    m->next_try_mono = mono + LAUNCH_RETRY_NS;
}

static const char *problem_of(const launch_job_t *j)
{
    return j->class_problem ? j->class_problem : "";
}

/* The launch of NodeClaim `name_in`, whose JSON is nc (taken; name_in may point into it),
 * or NULL: a NodeClaim of the cache (which keeps its record only), fetched from the API
 * server when a launch is to be tried, and left alone when that copy shows it launched or
 * deleted meanwhile. */
static void launch(nw_nodeclaim_t *k, const nw_kube_snap_t *s, const char *name_in, cJSON *nc,
                   int fresh)
{
    nw_ctl_deps_t *c = k->deps;
    char name[256];
    snprintf(name, sizeof name, "%s", name_in ? name_in : "");
    if (!name_in || !nw_ctl_may_write(c)) {
        cJSON_Delete(nc);
        return;
    }
    pthread_mutex_lock(&k->mu);
    int pending = job_pending_locked(k, name);
    pthread_mutex_unlock(&k->mu);
    nw_inflight_claim_t *m =
        pending ? NULL : nw_inflight_remember(&k->mem->inflight, name, nw_clock_mono(c->clock));
    if (!m) {
        cJSON_Delete(nc);
        return; /* pending: its outcome is collected by the next tick */
    }
    int64_t mono = nw_clock_mono(c->clock);
    if (m->launched) {
        cJSON_Delete(nc);
        record_again(k, m, name, mono);
        return;
    }
    if (mono < m->next_try_mono) {
        cJSON_Delete(nc);
        return;
    }
    m->next_try_mono = mono + LAUNCH_RETRY_NS;
    if (!nc) {
        /* the whole object, for the launch (its template, labels, requirements) */
        nw_err_t err = {0};
        nw_rc_t rc =
            nw_kube_write_get(c->kube, &nw_kube_client_res_nodeclaims, NULL, name, &nc, &err);
        if (rc != NW_OK) {
            if (rc != NW_ENOTFOUND)
                nw_log_warn("provisioner", "cannot read the NodeClaim to launch",
                            NW_LS("nodeclaim", name), NW_LS("error", err.msg));
            return;
        }
        const cJSON *dt = nw_json_get(nw_json_get(nc, "metadata"), "deletionTimestamp");
        const char *pid = nw_json_str_at(nc, "status.providerID");
        if ((pid && *pid) || (dt && !cJSON_IsNull(dt))) {
            cJSON_Delete(nc);
            return; /* launched or deleted since the cache's view */
        }
    }
    launch_job_t *j = job_new(k, s, nc, name, fresh, m->token_gen); /* the job's now */
    if (!j)
        return;
    if (j->class_unready) {
        if (!m->class_unready) {
            nw_log_warn("provisioner", "not launching until its EC2NodeClass is ready",
                        NW_LS("nodeclaim", name), NW_LS("reason", problem_of(j)));
            nw_ctl_event(c, &nw_kube_client_res_nodeclaims, j->nc, "Warning", "NodeClassNotReady",
                         problem_of(j));
        }
        m->class_unready = 1;
        m->launch_tried = 1; /* the record stays (and with it what was said) */
        job_free(j);
        return;
    }
    m->class_unready = 0;
    /* a Secret this process made for an earlier try serves while younger than half its
     * lifetime (the API server refuses it at its expiration) */
    j->boot_have =
        j->boot && m->boot_minted_mono && mono - m->boot_minted_mono < k->o.bootstrap_ttl_ns / 2;
    if (!j->nodeclass && fresh) {
        /* nothing to look for and nothing to launch with */
        nw_log_warn("provisioner", "not launching", NW_LS("nodeclaim", name),
                    NW_LS("reason", problem_of(j)));
        job_free(j);
        return;
    }
    m->launching = 1;
    m->launch_tried = 1;
    if (k->o.workers == 0) {
        /* no workers: launch on this thread, at once */
        job_run(k, j);
        job_finish(k, j);
        job_free(j);
        return;
    }
    pthread_mutex_lock(&k->mu);
    launch_job_t **pp = &k->jobs;
    while (*pp)
        pp = &(*pp)->next;
    *pp = j;
    pthread_cond_signal(&k->work);
    pthread_mutex_unlock(&k->mu);
}

void nw_nodeclaim_launch(nw_nodeclaim_t *k, const nw_kube_snap_t *s, const cJSON *nc, int fresh)
{
    launch(k, s, nw_json_str_at(nc, "metadata.name"), nc ? nw_json_dup(nc) : NULL, fresh);
}

void nw_nodeclaim_launch_cached(nw_nodeclaim_t *k, const nw_kube_snap_t *s, const nw_kube_obj_t *nc)
{
    launch(k, s, nc->name, NULL, 0);
}

/* ---- create ---- */

/* The NodePool's and EC2NodeClass's drift hashes on a NodeClaim about to be created
 * (nw_drifthash_stamp_nodeclaim); a pool or class missing from s is left out. */
static void stamp_hashes(cJSON *nodeclaim, const nw_kube_snap_t *s, const char *ca_bundle)
{
    const char *pool =
        nw_json_str(nw_json_get(nw_json_get(nodeclaim, "metadata"), "labels"), NW_LABEL_NODEPOOL);
    const char *class = nw_json_str_at(nodeclaim, "spec.nodeClassRef.name");
    const nw_kube_obj_t *po =
        pool ? nw_kube_cache_snap_get(s, NW_KUBE_NODEPOOLS, NULL, pool) : NULL;
    const nw_kube_obj_t *cl =
        class ? nw_kube_cache_snap_get(s, NW_KUBE_EC2NODECLASSES, NULL, class) : NULL;
    nw_err_t err = {0};
    if (nw_drifthash_stamp_nodeclaim(nodeclaim, po ? po->json : NULL, cl ? cl->json : NULL,
                                     ca_bundle, &err) != NW_OK)
        nw_log_warn("drift", "cannot stamp the NodeClaim's drift hashes", NW_LS("error", err.msg));
}

/* One NodeClaim to create: its body, then the API's answer. */
typedef struct {
    const nw_sched_claim_t *cl;
    const char *poolname, *first;
    int ntypes;
    cJSON *body, *created; /* owned */
    nw_rc_t rc;
    nw_err_t err;
} create_t;

/* The body of simulated claim x->cl (the reconcile thread; pure). */
static NW_MUST_USE nw_rc_t create_prepare(nw_nodeclaim_t *k, const nw_kube_snap_t *ks,
                                          const nw_simsnap_t *s, const nw_simsnap_claim_opts_t *o,
                                          create_t *x)
{
    if (!nw_ctl_may_write(k->deps))
        return x->rc = nw_err_set(&x->err, NW_EINVAL, "", "not leading");
    x->poolname = nw_snapshot_pool_name(s->sched, (size_t)x->cl->pool);
    const nw_kube_obj_t *pool =
        x->poolname ? nw_kube_cache_snap_get(ks, NW_KUBE_NODEPOOLS, NULL, x->poolname) : NULL;
    if (!pool)
        return x->rc = nw_err_set(&x->err, NW_EINVAL, "", "NodePool %s not found",
                                  x->poolname ? x->poolname : "");
    x->first = "";
    x->body = nw_simsnap_claim_body(s, x->cl, pool, o, &x->ntypes, &x->first, &x->err);
    if (!x->body)
        return x->rc = x->err.rc != NW_OK ? x->err.rc : NW_EINVAL;
    stamp_hashes(x->body, ks, k->deps->ca_bundle);
    return x->rc = NW_OK;
}

/* The create call (any thread: the Kubernetes client is thread-safe). */
static void create_post(nw_nodeclaim_t *k, create_t *x)
{
    if (x->rc != NW_OK)
        return;
    nw_ctl_fault(k->deps, "nodeclaim-creating", x->poolname); /* crash point (ctl.h) */
    x->rc = nw_kube_write_create(k->deps->kube, &nw_kube_client_res_nodeclaims, NULL, x->body,
                                 &x->created, &x->err);
    cJSON_Delete(x->body);
    x->body = NULL;
}

/* What follows a create (the reconcile thread): memory, nominations, Events, the launch. */
static NW_MUST_USE nw_rc_t create_finish(nw_nodeclaim_t *k, const nw_kube_snap_t *ks,
                                         const nw_simsnap_t *s, const nw_simsnap_claim_opts_t *o,
                                         create_t *x, char *name, size_t namelen)
{
    nw_ctl_deps_t *c = k->deps;
    const nw_sched_claim_t *cl = x->cl;
    if (name && namelen)
        name[0] = 0;
    if (x->rc != NW_OK) {
        if (x->poolname && x->rc != NW_EINVAL)
            nw_log_error("provisioner", "cannot create a NodeClaim", NW_LS("nodepool", x->poolname),
                         NW_LS("error", x->err.msg));
        return x->rc;
    }
    atomic_fetch_add(&k->created, 1);
    if (!o->reason || strcmp(o->reason, "provisioning") == 0) { /* disruption counts its own */
        const char *v[] = {"provisioned", x->poolname, cl->min_values_relaxed ? "true" : "false"};
        nw_series_add(c->series, &NW_KMETRICS_NODECLAIMS_CREATED, v, 1);
    }
    const char *nm = nw_json_str_at(x->created, "metadata.name");
    if (!nm)
        return x->rc = nw_err_set(&x->err, NW_EKUBE, "metadata.name",
                                  "the created NodeClaim has no name");
    if (name && namelen)
        snprintf(name, namelen, "%s", nm);
    nw_log_info(
        "provisioner", "created NodeClaim", NW_LS("nodeclaim", nm), NW_LS("nodepool", x->poolname),
        NW_LS("reason", o->reason ? o->reason : "provisioning"), NW_LS("instanceType", x->first),
        NW_LI("instanceTypes", x->ntypes), NW_LS("zone", cl->zone),
        NW_LS("capacityType", o->capacity_type ? o->capacity_type : cl->capacity_type),
        NW_LF("price", cl->price), NW_LI("pods", cl->npods));
    int64_t mono = nw_clock_mono(c->clock);
    nw_inflight_claim_t *m = nw_inflight_remember(&k->mem->inflight, nm, mono);
    if (m) {
        cJSON_Delete(m->obj);
        m->obj = nw_json_dup(x->created);
    }
    char msg[400];
    snprintf(msg, sizeof msg, "Pod should schedule on: nodeclaim/%s", nm);
    for (int i = 0; i < cl->npods; i++) {
        int pi = cl->pods[i];
        if (pi < 0 || (size_t)pi >= s->npods)
            continue;
        if (!o->no_nominate)
            nw_nominations_nominate(k->mem->noms, s->pods[pi]->uid, nm, mono);
        if (!o->no_events)
            nw_ctl_pod_event(c, s->pods[pi]->pod, "Normal", "Nominated", msg);
    }
    nw_ctl_fault(c, "nodeclaim-created", nm); /* test-only crash point (scaler/ctl/ctl.h) */
    cJSON *created = x->created;              /* the launch's from here (nm points into it) */
    x->created = NULL;
    launch(k, ks, nm, created, 1);
    return NW_OK;
}

static void create_free(create_t *x)
{
    cJSON_Delete(x->body);
    cJSON_Delete(x->created);
}

nw_rc_t nw_nodeclaim_create(nw_nodeclaim_t *k, const nw_kube_snap_t *ks, const nw_simsnap_t *s,
                            const nw_sched_claim_t *cl, const nw_simsnap_claim_opts_t *o,
                            char *name, size_t namelen, nw_err_t *err)
{
    static const nw_simsnap_claim_opts_t defaults = {0};
    if (!o)
        o = &defaults;
    create_t x = {.cl = cl};
    /* the outcome is in x.rc, which create_post and create_finish honour */
    (void)create_prepare(k, ks, s, o, &x);
    create_post(k, &x);
    nw_rc_t rc = create_finish(k, ks, s, o, &x, name, namelen);
    if (rc != NW_OK && err)
        *err = x.err;
    create_free(&x);
    return rc;
}

/* The creates of a batch on up to workers threads of their own (the launch workers may be
 * busy with slow launches; these are short API calls the caller waits for). */
typedef struct {
    nw_nodeclaim_t *k;
    create_t *xs;
    int n;
    atomic_int next;
} create_batch_t;

static void *create_main(void *arg)
{
    create_batch_t *b = arg;
    for (int i; (i = atomic_fetch_add(&b->next, 1)) < b->n;)
        create_post(b->k, &b->xs[i]);
    return NULL;
}

int nw_nodeclaim_create_batch(nw_nodeclaim_t *k, const nw_kube_snap_t *ks, const nw_simsnap_t *s,
                              const nw_sched_claim_t *claims, int n,
                              const nw_simsnap_claim_opts_t *o)
{
    static const nw_simsnap_claim_opts_t defaults = {0};
    if (!o)
        o = &defaults;
    create_t *xs = n > 0 ? calloc((size_t)n, sizeof *xs) : NULL;
    if (!xs)
        return 0;
    for (int i = 0; i < n; i++) {
        xs[i].cl = &claims[i];
        (void)create_prepare(k, ks, s, o, &xs[i]);
    }
    create_batch_t b = {k, xs, n, 0};
    pthread_t th[64];
    int nt = k->o.workers < n ? k->o.workers : n;
    if (nt > (int)(sizeof th / sizeof *th))
        nt = (int)(sizeof th / sizeof *th);
    int started = 0;
    while (started < nt - 1 && pthread_create(&th[started], NULL, create_main, &b) == 0)
        started++;
    create_main(&b); /* this thread takes its share (all of them without workers) */
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    int created = 0;
    for (int i = 0; i < n; i++) {
        char name[256];
        if (create_finish(k, ks, s, o, &xs[i], name, sizeof name) == NW_OK)
            created++;
        else
            nw_log_warn("provisioner", "NodeClaim not created", NW_LS("error", xs[i].err.msg));
        create_free(&xs[i]);
    }
    free(xs);
    return created;
}
