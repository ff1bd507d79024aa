/*
 * scaler/loop.c — the scaler's threads and their start/stop (see loop.h).
 */
#include "scaler/loop.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "common/json.h"
#include "common/log.h"
#include "common/prom.h"
#include "scaler/aws/cloud.h"
#include "scaler/aws/intrsource.h"
#include "scaler/cloud/metered.h"
#include "scaler/controllers/accelaudit.h"
#include "scaler/ctl/ctl.h"
#include "scaler/controllers/disruption.h"
#include "scaler/controllers/gc.h"
#include "scaler/controllers/interruption.h"
#include "scaler/controllers/lifecycle.h"
#include "scaler/nodeclaim/nodeclaim.h"
#include "scaler/metrics/kmetrics.h"
#include "scaler/controllers/provisioning.h"
#include "scaler/controllers/repair.h"
#include "scaler/controllers/statemetrics.h"
#include "scaler/controllers/termination.h"
#include "scaler/controllers/upkeep.h"
#include "scaler/kube/leader.h"
#include "scaler/kube/svccidr.h"
#include "scaler/kube/watch.h"

/* How long each controller's tick takes, on the real monotonic clock (the controllers'
 * own clock may be a test's fake one). The reconcile thread observes; /metrics reads. */
static const double tick_buckets[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                      0.01,   0.025,   0.05,   0.1,   0.25,   0.5,
                                      1,      2.5,     5,      10,    30};
static const nw_series_desc_t TICK_SECONDS = {
    "nodewarden_reconcile_tick_duration_seconds",
    "Wall time of one tick of a controller on the reconcile thread (the leader only).",
    NW_SERIES_HISTOGRAM,
    {"controller"},
    tick_buckets,
    sizeof tick_buckets / sizeof tick_buckets[0]};
static const nw_series_desc_t *const tick_families[] = {&TICK_SECONDS};

static int64_t tick_start(void)
{
    return nw_clock_mono(nw_clock_system());
}

static void tick_done(nw_series_t *series, const char *controller, int64_t t0)
{
    double s = (double)(nw_clock_mono(nw_clock_system()) - t0) / 1e9;
    nw_series_observe(series, &TICK_SECONDS, (const char *const[]){controller}, s);
}

/* Everything here is owned by the scaler: the shared dependencies and memory, and one
 * struct per controller, each built from what it needs (scaler/ctl/ctl.h). */
struct nw_scaler {
    nw_ctl_deps_t deps;
    nw_ctl_crash_t crash; /* scaler.testing.crashAt's point, when armed (deps.fault_ud) */
    char *ca_bundle;      /* deps.ca_bundle's storage */
    nw_ctl_shared_t mem;  /* in-flight claims, nominations (provisioning, nodeclaim, disruption) */
    nw_nodeclaim_t *claims;    /* NodeClaim create/launch (provisioning and disruption use it) */
    nw_provisioning_t *prov;   /* provisioning */
    nw_lifecycle_t *life;      /* lifecycle */
    nw_gc_t *gc;               /* garbage collection */
    nw_termination_t *term;    /* termination */
    nw_upkeep_t *upkeep;       /* expiry, drift marking, NodePool status */
    nw_disruption_t *dis;      /* disruption */
    nw_accelaudit_t *audit;    /* accelerator isolation audit */
    nw_repair_t *repair;       /* node repair and instance health */
    nw_statemetrics_t *gauges; /* Karpenter's state gauges */
    nw_interruption_t *intr;   /* interruption thread, when settings.interruptionQueue is set */
    nw_interrupt_source_t *intr_source; /* its SQS queue (owned) */
    nw_kube_watch_t *watch;
    nw_kube_leader_t *leader;
    pthread_t thread;
    int thread_started;
    atomic_int thread_done;     /* reconcile_main has returned */
    _Atomic(const char *) step; /* the pass's step running now (NULL between passes) */
    int64_t dis_held_mono;      /* since when disruption waits for provisioning batches */
};

static void on_started(void *ud)
{
    nw_ctl_deps_t *c = ud;
    atomic_store(&c->leading, 1);
    nw_log_info("scaler", "became leader; running the scaler");
}

static void on_stopped(void *ud)
{
    nw_ctl_deps_t *c = ud;
    atomic_store(&c->leading, 0);
    nw_log_warn("scaler", "not the leader any more; scaler writes stopped");
}

static void on_new_leader(const char *id, void *ud)
{
    (void)ud;
    nw_log_info("scaler", "leader observed", NW_LS("identity", id ? id : ""));
}

/* scaler.testing.exitAfterNodeClaim: die like a SIGKILL (no cleanup, the Lease kept)
 * between a NodeClaim's create and its launch; tests/e2e/t_provision_restart. */
static void exit_after_nodeclaim(void *ud, const char *point, const char *object)
{
    (void)ud;
    if (strcmp(point, "nodeclaim-created") != 0)
        return;
    nw_log_warn("provisioner", "scaler.testing.exitAfterNodeClaim: exiting before the launch",
                NW_LS("nodeclaim", object));
    _exit(3);
}

/* A launch worker finished a launch: run the reconcile loop now (nodeclaim.h). */
/* the cluster's Kubernetes version for AMI aliases (scaler/aws/nodeclass.h) */
static NW_MUST_USE nw_rc_t k8s_version(void *ud, char *out, size_t len, nw_err_t *err)
{
    return nw_kube_client_server_version(ud, out, len, err);
}

/* the kube-dns Service address (scaler/aws/cloud.h kube_dns) */
static NW_MUST_USE nw_rc_t kube_dns(void *ud, char *out, size_t len, nw_err_t *err)
{
    return nw_kube_client_dns_ip(ud, out, len, err);
}

/* the cluster's service CIDR (scaler/kube/svccidr.h) for AL2023's NodeConfig */
static NW_MUST_USE nw_rc_t service_cidr(void *ud, char *out, size_t len, char *src, size_t srclen,
                                        nw_err_t *err)
{
    return nw_svccidr_discover(ud, out, len, src, srclen, err);
}

static void wake_reconcile(void *ud)
{
    nw_ctl_deps_t *c = ud;
    nw_kube_cache_wake(c->cache);
}

/* The shortest time between the starts of two reconcile passes. A pass looks at the
 * whole cluster, and under a stream of pod events the cache changes every millisecond:
 * without a gap the passes would run back to back and take a core. */
#define PASS_GAP_NS (100 * NW_NS_PER_MS)

/* Sleep until PASS_GAP_NS after the last pass started (in short slices, so a stop is
 * seen within 20 ms). */
static void pass_gap(nw_ctl_deps_t *c, int64_t last)
{
    for (;;) {
        int64_t left = last + PASS_GAP_NS - nw_clock_mono(nw_clock_system());
        if (left <= 0 || atomic_load(&c->stopping))
            return;
        if (left > 20 * NW_NS_PER_MS)
            left = 20 * NW_NS_PER_MS;
        struct timespec ts = {0, (long)left};
        nanosleep(&ts, NULL);
    }
}

/* The steps of one reconcile pass, in order (docs/internals/architecture.md); each runs
 * on a fresh snapshot when it asks for one (the writes of the steps before may have
 * landed). */
typedef void (*step_fn)(nw_scaler_t *s, const nw_kube_snap_t *snap);

static void step_provisioning(nw_scaler_t *s, const nw_kube_snap_t *snap)
{
    nw_provisioning_tick(s->prov, snap);
}

static void step_lifecycle(nw_scaler_t *s, const nw_kube_snap_t *snap)
{
    nw_lifecycle_tick(s->life, snap);
}

static void step_gc(nw_scaler_t *s, const nw_kube_snap_t *snap)
{
    nw_gc_tick(s->gc, snap);
}

static void step_termination(nw_scaler_t *s, const nw_kube_snap_t *snap)
{
    nw_termination_tick(s->term, snap);
}

static void step_upkeep(nw_scaler_t *s, const nw_kube_snap_t *snap)
{
    nw_upkeep_tick(s->upkeep, snap);
}

static void step_accelaudit(nw_scaler_t *s, const nw_kube_snap_t *snap)
{
    nw_accelaudit_tick(s->audit, snap);
}

static void step_repair(nw_scaler_t *s, const nw_kube_snap_t *snap)
{
    nw_repair_tick(s->repair, snap);
}

static void step_statemetrics(nw_scaler_t *s, const nw_kube_snap_t *snap)
{
    nw_statemetrics_tick(s->gauges, snap);
}

static void step_disruption(nw_scaler_t *s, const nw_kube_snap_t *snap)
{
    nw_disruption_tick(s->dis, snap);
}

/* Disruption waits while a provisioning batch does (its simulations would hold the batch:
 * at 5,000 nodes a pass with the batch's pending pods in it simulates for seconds), for at
 * most DIS_HELD_MAX_NS in a row (a cluster whose pods never stop arriving). */
#define DIS_HELD_MAX_NS (30 * NW_NS_PER_SEC)

static bool due_disruption(nw_scaler_t *s, const nw_kube_snap_t *snap)
{
    if (!nw_disruption_due(s->dis, snap))
        return false;
    int64_t mono = nw_clock_mono(s->deps.clock);
    if (!nw_provisioning_waiting(s->prov, snap, mono)) {
        s->dis_held_mono = 0;
        return true;
    }
    if (!s->dis_held_mono)
        s->dis_held_mono = mono;
    if (mono - s->dis_held_mono < DIS_HELD_MAX_NS)
        return false;
    s->dis_held_mono = 0;
    return true;
}

/* nw_ctl_deps_t.batch_waiting: on a fresh snapshot (pods that came during the step) */
static bool batch_waiting(void *ud)
{
    nw_scaler_t *s = ud;
    nw_kube_snap_t *snap = nw_kube_cache_snapshot(s->deps.cache);
    bool w = snap && nw_provisioning_waiting(s->prov, snap, nw_clock_mono(s->deps.clock));
    nw_kube_cache_snap_release(snap);
    return w;
}

static const struct {
    const char *metered; /* nw_metered_controller's name while it runs */
    const char *label;   /* its tick-duration series */
    bool fresh;          /* on a new snapshot */
    step_fn fn;
    /* NULL, or whether the step has anything to do, asked on the pass's snapshot before a
     * fresh one is taken for it (a snapshot copies the pods' vectors: 2.4 MB at 100,000) */
    bool (*due)(nw_scaler_t *s, const nw_kube_snap_t *snap);
} STEPS[] = {
    {"provisioner", "provisioning", true, step_provisioning, NULL},
    {"nodeclaim.lifecycle", "lifecycle", true, step_lifecycle, NULL},
    {"nodeclaim.garbagecollection", "gc", false, step_gc, NULL},
    {"node.termination", "termination", false, step_termination, NULL},
    {"", "upkeep", false, step_upkeep, NULL},
    {"", "accelaudit", false, step_accelaudit, NULL},
    {"", "repair", false, step_repair, NULL},
    {"", "statemetrics", false, step_statemetrics, NULL},
    {"disruption", "disruption", true, step_disruption, due_disruption},
};

/* Has the batch window come to its close (or pending pods to their next look) since the
 * pass began? Then the provisioner runs again before the next step: a window timed from
 * the pods' arrival closes within one step, not one whole pass (a disruption pass at 5,000
 * nodes takes seconds). */
static bool provisioning_due(nw_scaler_t *s)
{
    return nw_provisioning_next_deadline(s->prov, nw_clock_mono(s->deps.clock)) == 0;
}

/* One pass: every step in order. A stop is seen between two steps: at 20,000 pods a
 * whole pass took up to 20 s (a provisioning solve, the state gauges' rebuild, a
 * disruption pass), and a SIGTERM waited for all of it. */
static void pass(nw_scaler_t *s)
{
    nw_ctl_deps_t *c = &s->deps;
    nw_kube_snap_t *snap = NULL;
    int64_t all0 = tick_start();
    size_t i = 0;
    for (; i < sizeof STEPS / sizeof STEPS[0] && !atomic_load(&c->stopping); i++) {
        if (i > 0 && provisioning_due(s)) {
            /* on a fresh snapshot, and the step after it on another (its writes) */
            nw_kube_cache_snap_release(snap);
            nw_kube_snap_t *ps = nw_kube_cache_snapshot(c->cache);
            if (!ps)
                break;
            nw_metered_controller(STEPS[0].metered);
            atomic_store(&s->step, STEPS[0].label);
            int64_t t0 = tick_start();
            STEPS[0].fn(s, ps);
            tick_done(c->series, STEPS[0].label, t0);
            nw_kube_cache_snap_release(ps);
            if (!(snap = nw_kube_cache_snapshot(c->cache)))
                break;
        }
        bool idle = snap && STEPS[i].due && !STEPS[i].due(s, snap);
        if ((STEPS[i].fresh && !idle) || !snap) {
            nw_kube_cache_snap_release(snap);
            if (!(snap = nw_kube_cache_snapshot(c->cache)))
                break;
        }
        nw_metered_controller(STEPS[i].metered);
        atomic_store(&s->step, STEPS[i].label);
        int64_t t0 = tick_start();
        if (!idle)
            STEPS[i].fn(s, snap);
        tick_done(c->series, STEPS[i].label, t0);
    }
    atomic_store(&s->step, NULL);
    nw_metered_controller("");
    nw_kube_cache_snap_release(snap);
    if (i == sizeof STEPS / sizeof STEPS[0])
        tick_done(c->series, "all", all0);
}

static void *reconcile_main(void *arg)
{
    nw_scaler_t *s = arg;
    nw_ctl_deps_t *c = &s->deps;
    uint64_t seen = 0;
    int was_leading = 0;
    int64_t last_pass = 0, unsynced_since = 0;
    while (!atomic_load(&c->stopping)) {
        int64_t wait_ms = 1000;
        int64_t d = nw_provisioning_next_deadline(s->prov, nw_clock_mono(c->clock));
        if (d >= 0 && d / NW_NS_PER_MS + 1 < wait_ms)
            wait_ms = d / NW_NS_PER_MS + 1;
        seen = nw_kube_cache_wait(c->cache, seen, wait_ms);
        if (atomic_load(&c->stopping))
            break;
        int leading = atomic_load(&c->leading);
        if (leading != was_leading) {
            /* a new term: forget what the previous term remembered */
            nw_ctl_shared_clear(&s->mem);
            nw_provisioning_reset(s->prov);
            nw_lifecycle_reset(s->life);
            nw_termination_reset(s->term);
            nw_upkeep_reset(s->upkeep);
            nw_disruption_ctl_reset(s->dis);
            nw_accelaudit_reset(s->audit);
            nw_repair_reset(s->repair);
            was_leading = leading;
        }
        if (!leading)
            continue;
        if (!nw_kube_cache_has_synced(c->cache)) {
            /* Karpenter's unsynced-state guard: no decision (and so no write) from a view
             * that misses objects or lost events; the relist brings it back */
            if (last_pass && !unsynced_since) {
                unsynced_since = nw_clock_mono(nw_clock_system());
                nw_log_warn("scaler", "cluster state not synced (a watch lost events); "
                                      "writes paused until the relist");
            }
            /* the gauges still follow (karpenter_cluster_state_synced 0, the time out of
             * sync): they write nothing to the cluster */
            nw_kube_snap_t *snap = last_pass ? nw_kube_cache_snapshot(c->cache) : NULL;
            if (snap)
                nw_statemetrics_tick(s->gauges, snap);
            nw_kube_cache_snap_release(snap);
            continue;
        }
        if (unsynced_since) {
            nw_log_info("scaler", "cluster state synced again; writes resumed",
                        NW_LI("paused_ms",
                              (nw_clock_mono(nw_clock_system()) - unsynced_since) / NW_NS_PER_MS));
            unsynced_since = 0;
        }
        pass_gap(c, last_pass);
        last_pass = nw_clock_mono(nw_clock_system());
        /* instance types and prices, each when its period is due (a few API calls) */
        if (c->cloud->ops->refresh && !atomic_load(&c->stopping))
            c->cloud->ops->refresh(c->cloud, nw_clock_mono(c->clock));
        pass(s);
    }
    atomic_store(&s->thread_done, 1);
    return NULL;
}

static void scaler_free(nw_scaler_t *s)
{
    nw_interruption_free(s->intr);
    if (s->intr_source)
        s->intr_source->ops->free(s->intr_source);
    nw_kube_leader_free(s->leader);
    nw_kube_watch_free(s->watch);
    nw_repair_free(s->repair);
    nw_statemetrics_free(s->gauges);
    nw_disruption_ctl_free(s->dis);
    nw_accelaudit_free(s->audit);
    nw_upkeep_free(s->upkeep);
    nw_termination_free(s->term);
    nw_gc_free(s->gc);
    nw_lifecycle_free(s->life);
    nw_provisioning_free(s->prov);
    nw_nodeclaim_free(s->claims);
    nw_ctl_shared_cleanup(&s->mem);
    if (s->deps.cloud)
        s->deps.cloud->ops->free(s->deps.cloud);
    nw_kube_write_recorder_free(s->deps.rec);
    nw_series_free(s->deps.series);
    nw_kube_cache_free(s->deps.cache);
    nw_kube_client_free(s->deps.kube);
    free(s->ca_bundle);
    free(s);
}

/* The Kubernetes client (kubeconfig, the CA bundle Karpenter hashes), the cache and the
 * metric series. */
static NW_MUST_USE nw_rc_t connect_kube(nw_scaler_t *s, const nw_scaler_opts_t *o, nw_err_t *err)
{
    nw_ctl_deps_t *c = &s->deps;
    nw_rc_t rc;
    nw_kube_config_t *kc = NULL;
    if ((rc = nw_kube_config_load(o->kubeconfig, o->context, &kc, err)) != NW_OK) {
        nw_kube_config_free(kc); /* still ours only if the client was never made */
        return rc;
    }
    /* Karpenter hashes its --cluster-ca-bundle, else base64 of the CA its client trusts */
    if (o->cluster_ca_bundle && *o->cluster_ca_bundle)
        s->ca_bundle = strdup(o->cluster_ca_bundle);
    else if (kc->ca_pem && kc->ca_len > 0 && kc->ca_len < INT_MAX / 2) {
        if ((s->ca_bundle = malloc(4 * ((kc->ca_len + 2) / 3) + 1)))
            EVP_EncodeBlock((unsigned char *)s->ca_bundle, (const unsigned char *)kc->ca_pem,
                            (int)kc->ca_len);
    }
    c->ca_bundle = s->ca_bundle;
    nw_kube_client_opts_t ko = {0};
    ko.qps = o->qps;
    ko.burst = (int)o->burst;
    rc = nw_kube_client_new(kc, &ko, &c->kube, err);
    /* the client owns kc now, also when it failed (scaler/kube/client.h) */
    if (rc != NW_OK)
        return rc;
    /* a stopping scaler's queued requests go out unthrottled (scaler/kube/client.h) */
    nw_kube_client_set_abort(c->kube, &c->stopping);
    c->cache = nw_kube_cache_new(nw_kube_client_metrics(c->kube));
    if (c->cache) /* pods' arrivals on the controllers' clock (the batch window) */
        nw_kube_cache_set_clock(c->cache, c->clock);
    c->series = nw_series_new();
    c->batch_waiting = batch_waiting; /* disruption's simulations step aside for a batch */
    c->batch_waiting_ud = s;
    return NW_OK;
}

/* The controllers that need neither the cloud nor a thread of their own. */
static NW_MUST_USE nw_rc_t build_controllers(nw_scaler_t *s, const nw_scaler_opts_t *o,
                                             const nw_provisioning_opts_t *popts,
                                             const nw_nodeclaim_opts_t *kopts, const char *pod,
                                             nw_err_t *err)
{
    nw_ctl_deps_t *c = &s->deps;
    nw_lifecycle_opts_t lopts = {o->registration_timeout_ns, o->nodeclass_refresh_ns, NULL, NULL};
    /* full disruption ticks under a stream of changes: at most a tenth of the time */
    nw_disruption_opts_t dopts = {o->disruption_poll_ns, o->disruption_validation_ns,
                                  o->disruption_command_timeout_ns, o->spot_to_spot, 10};
    s->claims = nw_nodeclaim_new(c, &s->mem, kopts);
    s->prov = nw_provisioning_new(c, s->claims, &s->mem, popts);
    lopts.nominate = nw_provisioning_nominator(s->prov);
    lopts.cohorts = nw_provisioning_cohorts(s->prov);
    s->life = nw_lifecycle_new(c, &lopts);
    s->term = nw_termination_new(c);
    s->upkeep = nw_upkeep_new(c, o->registration_timeout_ns);
    if (s->upkeep)
        s->upkeep->expiry.gpu = o->gpu;
    s->dis = nw_disruption_ctl_new(c, s->claims, &s->mem, &dopts, pod);
    nw_accelaudit_opts_t aopts = {o->gpu, o->accel_evict != 0};
    s->audit = nw_accelaudit_new(c, &aopts);
    if (!c->cache || !c->series || !c->rec || !s->claims || !s->prov || !s->life || !s->term ||
        !s->upkeep || !s->dis || !s->audit)
        return nw_err_set(err, NW_ENOMEM, NULL, "out of memory");
    return NW_OK;
}

/* The AWS cloud (region, endpoints, catalog refresh) behind Karpenter's call metrics;
 * ao and creds stay for the interruption queue. */
static NW_MUST_USE nw_rc_t connect_cloud(nw_scaler_t *s, const nw_scaler_opts_t *o,
                                         nw_aws_cloud_opts_t *ao, nw_creds_t **creds, nw_err_t *err)
{
    nw_ctl_deps_t *c = &s->deps;
    nw_rc_t rc;
    nw_awscfg_explicit_t ex = {o->region, o->ec2,     o->sqs, o->sts, o->imds,
                               0,         o->pricing, o->iam, o->ssm};
    memset(ao, 0, sizeof *ao);
    if ((rc = nw_awscfg_resolve(&ao->aws, &ex, err)) != NW_OK)
        return rc;
    if (!ao->aws.region[0])
        return nw_err_set(err, NW_EINVAL, "aws.region",
                          "aws.region is not set (nor AWS_REGION); the scaler needs it");
    ao->cluster_name = o->cluster_name;
    ao->bootstrap = (nw_launch_bootstrap_t){.endpoint = o->cluster_endpoint,
                                            .ca_bundle = o->cluster_ca_bundle,
                                            .cluster_cidr = o->cluster_cidr,
                                            .vm_overhead = o->vm_memory_overhead_percent,
                                            .reserved_enis = (int)o->reserved_enis,
                                            .default_max_pods = o->default_max_pods};
    /* instance types, offerings and prices from the AWS APIs, now and on their periods
     * (the embedded catalog and prices serve until a refresh succeeds): placement must
     * rank what the account can launch at what it costs */
    ao->refresh_catalog = 1;
    ao->types_period_ns = o->refresh_types_ns;
    ao->od_period_ns = o->refresh_od_ns;
    ao->spot_period_ns = o->refresh_spot_ns;
    ao->isolated_vpc = o->isolated_vpc;
    ao->no_reserved_capacity = o->no_reserved_capacity;
    ao->ice_ttl_ns = o->ice_ttl_ns;
    ao->nodeclass_ttl_ns = o->nodeclass_refresh_ns;
    ao->clock = c->clock;
    ao->k8s_version = k8s_version;
    ao->k8s_version_ud = c->kube;
    ao->kube_dns = kube_dns;
    ao->kube_dns_ud = c->kube;
    ao->service_cidr = service_cidr;
    ao->service_cidr_ud = c->kube;
    nw_cloud_t *aws = NULL;
    if ((rc = nw_aws_cloud_new(ao, &aws, err)) != NW_OK)
        return rc;
    /* the launch workers' EC2 calls end at once when the scaler stops (their join waits) */
    nw_aws_cloud_set_abort(aws, &c->stopping);
    *creds = nw_aws_cloud_creds(aws);
    /* Karpenter's cloud provider call metrics (scaler/cloud/metered.h) */
    if (!(c->cloud = nw_metered_new(aws, "aws", c->series, c->clock)))
        return nw_err_set(err, NW_ENOMEM, NULL, "out of memory");
    return NW_OK;
}

/* Garbage collection, node repair (its thread), the state gauges and the watch. */
static NW_MUST_USE nw_rc_t start_controllers(nw_scaler_t *s, const nw_scaler_opts_t *o,
                                             nw_err_t *err)
{
    nw_ctl_deps_t *c = &s->deps;
    nw_rc_t rc;
    nw_gc_opts_t go = {o->gc_initial_interval_ns, o->gc_interval_ns, 0,
                       o->gc_launch_grace_ns > 0 ? o->gc_launch_grace_ns : -1};
    if (!(s->gc = nw_gc_new(c, &s->mem.inflight, &go)))
        return nw_err_set(err, NW_ENOMEM, NULL, "out of memory");
    nw_repair_opts_t ropts = {o->node_repair, o->instance_status_ns, 0};
    if (!(s->repair = nw_repair_new(c, &ropts)) || !(s->gauges = nw_statemetrics_new(c)))
        return nw_err_set(err, NW_ENOMEM, NULL, "out of memory");
    if ((rc = nw_repair_start(s->repair, err)) != NW_OK)
        return rc;
    if ((rc = nw_kube_watch_new(c->kube, c->cache, NULL, &s->watch, err)) != NW_OK ||
        (rc = nw_kube_watch_start(s->watch, err)) != NW_OK)
        return rc;
    return NW_OK;
}

/* Leader election on the Lease (or leading at once without it). */
static NW_MUST_USE nw_rc_t start_leader(nw_scaler_t *s, const nw_scaler_opts_t *o,
                                        const char *lease_id, nw_err_t *err)
{
    nw_ctl_deps_t *c = &s->deps;
    nw_rc_t rc;
    if (o->leader_election) {
        nw_kube_leader_opts_t lo = {
            .namespace = o->lease_namespace,
            .name = o->lease_name,
            .lease_ms = o->lease_ns / NW_NS_PER_MS,
            .renew_deadline_ms = o->renew_deadline_ns / NW_NS_PER_MS,
            .retry_ms = o->retry_ns / NW_NS_PER_MS,
            .identity = lease_id[0] ? lease_id : NULL,
            .on_started = on_started,
            .on_stopped = on_stopped,
            .on_new_leader = on_new_leader,
            .ud = c,
        };
        if ((rc = nw_kube_leader_new(c->kube, &lo, &s->leader, err)) != NW_OK ||
            (rc = nw_kube_leader_start(s->leader, err)) != NW_OK)
            return rc;
    } else
        atomic_store(&c->leading, 1);
    return NW_OK;
}

/* The interruption thread on settings.interruptionQueue, when set. */
static NW_MUST_USE nw_rc_t start_interruption(nw_scaler_t *s, const nw_scaler_opts_t *o,
                                              const nw_awscfg_t *aws, nw_creds_t *creds,
                                              nw_err_t *err)
{
    nw_ctl_deps_t *c = &s->deps;
    nw_rc_t rc;
    if (o->interruption_queue && *o->interruption_queue) {
        /* whole seconds, at least 1 (0 would turn the long poll into a busy loop) */
        int wait_s = o->interruption_wait_ns <= 0 ? -1
                     : o->interruption_wait_ns < NW_NS_PER_SEC
                         ? 1
                         : (int)(o->interruption_wait_ns / NW_NS_PER_SEC);
        if ((rc = nw_intrsource_new(aws, creds, c->clock, o->interruption_queue, wait_s, 20,
                                    &s->intr_source, err)) != NW_OK)
            return rc;
        nw_interruption_opts_t io = {
            .ice = c->cloud->ops->ice(c->cloud),
            .source = s->intr_source,
        };
        if ((rc = nw_interruption_new(c, &io, &s->intr, err)) != NW_OK ||
            (rc = nw_interruption_start(s->intr, err)) != NW_OK)
            return rc;
    }
    return NW_OK;
}

nw_rc_t nw_scaler_loop_start(const nw_scaler_opts_t *o, nw_scaler_t **out, nw_err_t *err)
{
    *out = NULL;
    if (!o->cluster_name || !*o->cluster_name)
        return nw_err_set(err, NW_EINVAL, "settings.clusterName",
                          "settings.clusterName is required when scaler.enabled is true");
    nw_scaler_t *s = calloc(1, sizeof *s);
    if (!s)
        return nw_err_set(err, NW_ENOMEM, NULL, "out of memory");
    nw_ctl_deps_t *c = &s->deps;
    c->clock = o->clock ? o->clock : nw_clock_system();
    if (o->exit_after_nodeclaim) {
        c->fault = exit_after_nodeclaim;
        c->fault_ud = NULL;
    }
    if (o->crash_at && *o->crash_at) { /* crash campaigns only (scaler/ctl/ctl.h) */
        nw_rc_t crc = nw_ctl_crash_parse(o->crash_at, &s->crash, err);
        if (crc != NW_OK) {
            free(s);
            return crc;
        }
        c->fault = nw_ctl_crash_fault;
        c->fault_ud = &s->crash;
        nw_log_warn("scaler", "crash point armed (scaler.testing.crashAt)",
                    NW_LS("spec", o->crash_at));
    }
    nw_rc_t rc;
    if ((rc = nw_ctl_shared_init(&s->mem)) != NW_OK) {
        free(s);
        return nw_err_set(err, NW_ENOMEM, NULL, "out of memory");
    }
    /* the defaults are the config table's (config/config.c); values are taken as given */
    s->mem.batch_max_ns = o->batch_max_ns;
    s->mem.vm_overhead = o->vm_memory_overhead_percent;
    s->mem.reserved_enis = (int)o->reserved_enis;
    s->mem.default_max_pods = o->default_max_pods;
    s->mem.min_values_best_effort = o->min_values_best_effort != 0;
    s->mem.ignore_preferences = o->ignore_preferences != 0;
    s->mem.gpu = o->gpu;
    nw_provisioning_opts_t popts = {o->batch_idle_ns, o->batch_max_ns, o->repack,
                                    o->static_capacity};
    if ((rc = connect_kube(s, o, err)) != NW_OK)
        goto fail;
    const char *pod = o->identity;
    char host[128] = "nodewarden";
    if (!pod || !*pod) {
        gethostname(host, sizeof host - 1);
        pod = host;
    }
    c->rec = nw_kube_write_recorder_new(c->kube, "nodewarden", pod);
    char lease_id[300] = "";
    if (o->identity && *o->identity)
        snprintf(lease_id, sizeof lease_id, "%s_%ld", o->identity, (long)getpid());
    nw_nodeclaim_opts_t kopts = {(int)o->launch_concurrency, wake_reconcile, c,
                                 o->registration_timeout_ns};
    if ((rc = build_controllers(s, o, &popts, &kopts, pod, err)) != NW_OK)
        goto fail;
    nw_aws_cloud_opts_t ao;
    nw_creds_t *creds = NULL;
    if ((rc = connect_cloud(s, o, &ao, &creds, err)) != NW_OK ||
        (rc = start_controllers(s, o, err)) != NW_OK ||
        (rc = start_leader(s, o, lease_id, err)) != NW_OK ||
        (rc = start_interruption(s, o, &ao.aws, creds, err)) != NW_OK)
        goto fail;
    if (pthread_create(&s->thread, NULL, reconcile_main, s) != 0) {
        rc = nw_err_set(err, NW_ENOMEM, NULL, "cannot start the reconcile thread");
        goto fail;
    }
    pthread_setname_np(s->thread, "nw-reconcile");
    s->thread_started = 1;
    nw_log_info("scaler", "scaler started", NW_LS("cluster", o->cluster_name),
                NW_LS("region", ao.aws.region), NW_LB("leaderElection", o->leader_election),
                NW_LI("batchIdleMs", popts.batch_idle_ns / NW_NS_PER_MS),
                NW_LI("batchMaxMs", popts.batch_max_ns / NW_NS_PER_MS),
                NW_LS("placement", "scheduling simulation (scaler/sched)"),
                NW_LB("repack", popts.repack), NW_LI("launchConcurrency", kopts.workers));
    *out = s;
    return NW_OK;
fail:
    atomic_store(&c->stopping, 1);
    scaler_free(s);
    return rc;
}

/* How long a stop waits for the reconcile thread to finish the step it is in. */
#define STOP_WAIT_NS (3 * NW_NS_PER_SEC)

/* Join the reconcile thread if it ends within STOP_WAIT_NS (false: still running). */
static bool join_reconcile(nw_scaler_t *s)
{
    int64_t until = nw_clock_mono(nw_clock_system()) + STOP_WAIT_NS;
    while (!atomic_load(&s->thread_done) && nw_clock_mono(nw_clock_system()) < until) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (!atomic_load(&s->thread_done))
        return false;
    pthread_join(s->thread, NULL);
    s->thread_started = 0;
    return true;
}

bool nw_scaler_loop_stop(nw_scaler_t *s)
{
    if (!s)
        return true;
    atomic_store(&s->deps.stopping, 1);
    /* From here no write starts (nw_ctl_may_write): the Lease goes at once, so a standby
     * takes over within about a second whatever the reconcile thread is doing */
    nw_kube_leader_stop(s->leader);
    if (s->thread_started && !join_reconcile(s)) {
        const char *step = atomic_load(&s->step);
        nw_log_warn("scaler", "a reconcile step is still running; stopping without it",
                    NW_LS("step", step ? step : ""),
                    NW_LI("waitedMs", STOP_WAIT_NS / NW_NS_PER_MS));
        nw_kube_watch_stop(s->watch);
        return false;
    }
    nw_kube_watch_stop(s->watch);
    nw_log_info("scaler", "scaler stopped");
    scaler_free(s);
    return true;
}

nw_rc_t nw_scaler_loop_metrics(nw_scaler_t *s, nw_buf_t *out)
{
    nw_rc_t rc =
        nw_buf_addf(out,
                    "# HELP nodewarden_scaler_leader 1 while this replica holds the Lease.\n"
                    "# TYPE nodewarden_scaler_leader gauge\nnodewarden_scaler_leader %d\n",
                    atomic_load(&s->deps.leading));
    /* each controller's own counters, in the order of a tick */
    if (rc == NW_OK)
        rc = nw_provisioning_metrics(s->prov, out);
    if (rc == NW_OK)
        rc = nw_nodeclaim_metrics(s->claims, out);
    if (rc == NW_OK)
        rc = nw_lifecycle_metrics(s->life, out);
    if (rc == NW_OK)
        rc = nw_disruption_metrics(s->dis, out);
    if (rc == NW_OK)
        rc = nw_interruption_metrics(s->intr, out);
    if (rc == NW_OK)
        rc = nw_gc_metrics(s->gc, out);
    if (rc == NW_OK)
        rc = nw_termination_metrics(s->term, out);
    if (rc == NW_OK)
        rc = nw_upkeep_metrics(s->upkeep, out);
    if (rc == NW_OK && s->deps.cloud->ops->metrics)
        rc = s->deps.cloud->ops->metrics(s->deps.cloud, out);
    if (rc == NW_OK)
        rc = nw_accelaudit_metrics(s->audit, out);
    if (rc == NW_OK)
        rc = nw_kube_metrics_write(nw_kube_client_metrics(s->deps.kube), out);
    if (rc == NW_OK)
        rc = nw_series_write(s->deps.series, nw_kmetrics_counted, nw_kmetrics_ncounted, out);
    if (rc == NW_OK)
        rc = nw_statemetrics_write(s->gauges, out);
    if (rc == NW_OK)
        rc = nw_series_write(s->deps.series, tick_families, 1, out);
    return rc;
}

cJSON *nw_scaler_loop_lookup(nw_scaler_t *s, const char *group, const char *kind, const char *name)
{
    if (!s || !s->deps.cache)
        return NULL;
    nw_kube_snap_t *snap = nw_kube_cache_snapshot(s->deps.cache);
    if (!snap)
        return NULL;
    cJSON *copy = nw_kube_cache_snap_lookup(snap, group, kind, name);
    nw_kube_cache_snap_release(snap);
    return copy;
}

bool nw_scaler_loop_synced(nw_scaler_t *s)
{
    return s && s->deps.cache && nw_kube_cache_has_synced(s->deps.cache);
}

cJSON *nw_scaler_loop_nodeclass(nw_scaler_t *s, const char *name)
{
    if (!s || !s->deps.cache || !name)
        return NULL;
    nw_kube_snap_t *snap = nw_kube_cache_snapshot(s->deps.cache);
    if (!snap)
        return NULL;
    const nw_kube_obj_t *o = nw_kube_cache_snap_get(snap, NW_KUBE_EC2NODECLASSES, "", name);
    cJSON *copy = o ? nw_json_dup(o->json) : NULL;
    nw_kube_cache_snap_release(snap);
    return copy;
}
