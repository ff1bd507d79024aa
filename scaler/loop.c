/*
 * scaler/loop.c — the scaler's threads and their start/stop (see loop.h).
 */
#include "scaler/loop.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/metrics.h"
#include "scaler/aws/cloud.h"
#include "scaler/aws/intrsource.h"
#include "scaler/controllers/ctl.h"
#include "scaler/controllers/disruption.h"
#include "scaler/controllers/gc.h"
#include "scaler/controllers/interruption.h"
#include "scaler/controllers/lifecycle.h"
#include "scaler/controllers/provisioning.h"
#include "scaler/controllers/termination.h"
#include "scaler/controllers/upkeep.h"
#include "scaler/kube/leader.h"
#include "scaler/kube/watch.h"

struct nw_scaler {
    nw_ctl_t ctl;
    nw_kube_watch_t *watch;
    nw_kube_leader_t *leader;
    nw_intr_t *intr;               /* interruption thread, when settings.interruptionQueue is set */
    nw_intr_source_t *intr_source; /* its SQS queue (owned) */
    pthread_t thread;
    int thread_started;
};

static void on_started(void *ud)
{
    nw_ctl_t *c = ud;
    atomic_store(&c->leading, 1);
    nw_log_info("scaler", "became leader; running the scaler");
}

static void on_stopped(void *ud)
{
    nw_ctl_t *c = ud;
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

static void *reconcile_main(void *arg)
{
    nw_scaler_t *s = arg;
    nw_ctl_t *c = &s->ctl;
    uint64_t seen = 0;
    int was_leading = 0;
    while (!atomic_load(&c->stopping)) {
        int64_t wait_ms = 1000;
        int64_t d = nw_prov_next_deadline(c, nw_clock_mono(c->clock));
        if (d >= 0 && d / NW_NS_PER_MS + 1 < wait_ms)
            wait_ms = d / NW_NS_PER_MS + 1;
        seen = nw_kube_cache_wait(c->cache, seen, wait_ms);
        if (atomic_load(&c->stopping))
            break;
        int leading = atomic_load(&c->leading);
        if (leading != was_leading) {
            /* a new term: forget what the previous term remembered */
            nw_prov_cleanup(c);
            nw_term_reset(c->term);
            nw_upkeep_reset(c->upkeep);
            nw_dis_ctl_reset(c->disruption);
            c->window_open_mono = c->next_resolve_mono = c->next_nodeclass_mono = 0;
            was_leading = leading;
        }
        if (!leading || !nw_kube_cache_has_synced(c->cache))
            continue;
        nw_kube_snap_t *snap = nw_kube_cache_snapshot(c->cache);
        if (!snap)
            continue;
        nw_prov_tick(c, snap);
        nw_kube_snap_release(snap);
        /* lifecycle on a fresh snapshot (the provisioner's writes may have landed) */
        snap = nw_kube_cache_snapshot(c->cache);
        if (!snap)
            continue;
        nw_life_tick(c, snap);
        nw_gc_tick(c, snap);
        nw_term_tick(c, snap);
        nw_upkeep_tick(c, c->upkeep, snap);
        nw_kube_snap_release(snap);
        snap = nw_kube_cache_snapshot(c->cache);
        if (!snap)
            continue;
        nw_dis_tick(c, snap);
        nw_kube_snap_release(snap);
    }
    return NULL;
}

static void scaler_free(nw_scaler_t *s)
{
    nw_intr_stop(s->intr);
    if (s->intr_source)
        s->intr_source->ops->free(s->intr_source);
    nw_kube_leader_free(s->leader);
    nw_kube_watch_free(s->watch);
    nw_prov_cleanup(&s->ctl);
    nw_gc_free(s->ctl.gc);
    nw_term_free(s->ctl.term);
    nw_upkeep_free(s->ctl.upkeep);
    nw_noms_free(s->ctl.noms);
    nw_dis_ctl_free(s->ctl.disruption);
    if (s->ctl.cloud)
        s->ctl.cloud->ops->free(s->ctl.cloud);
    nw_kube_recorder_free(s->ctl.rec);
    nw_kube_cache_free(s->ctl.cache);
    nw_kube_client_free(s->ctl.kube);
    free(s);
}

nw_rc_t nw_scaler_start(const nw_scaler_opts_t *o, nw_scaler_t **out, nw_err_t *err)
{
    *out = NULL;
    if (!o->cluster_name || !*o->cluster_name)
        return nw_err_set(err, NW_EINVAL, "settings.clusterName",
                          "settings.clusterName is required when scaler.enabled is true");
    nw_scaler_t *s = calloc(1, sizeof *s);
    if (!s)
        return nw_err_set(err, NW_ENOMEM, NULL, "out of memory");
    nw_ctl_t *c = &s->ctl;
    c->clock = o->clock ? o->clock : nw_clock_system();
    if (o->exit_after_nodeclaim) {
        c->fault = exit_after_nodeclaim;
        c->fault_ud = NULL;
    }
    /* the defaults are the config table's (server/config.c); values are taken as given */
    c->batch_idle_ns = o->batch_idle_ns;
    c->batch_max_ns = o->batch_max_ns;
    c->registration_timeout_ns = o->registration_timeout_ns;
    c->vm_overhead = o->vm_memory_overhead_percent;
    c->repack = o->repack;
    nw_dis_opts_t dopts = {o->disruption_poll_ns, o->disruption_validation_ns,
                           o->disruption_command_timeout_ns, o->spot_to_spot};
    c->reserved_enis = (int)o->reserved_enis;
    nw_rc_t rc;
    nw_kube_config_t *kc = NULL;
    if ((rc = nw_kube_config_load(o->kubeconfig, o->context, &kc, err)) != NW_OK)
        goto fail;
    nw_kube_client_opts_t ko = {0};
    ko.qps = o->qps;
    ko.burst = (int)o->burst;
    rc = nw_kube_client_new(kc, &ko, &c->kube, err);
    kc = NULL; /* the client owns it now, also when it failed (scaler/kube/client.h) */
    if (rc != NW_OK)
        goto fail;
    c->cache = nw_kube_cache_new(nw_kube_client_metrics(c->kube));
    const char *pod = o->identity;
    char host[128] = "nodewarden";
    if (!pod || !*pod) {
        gethostname(host, sizeof host - 1);
        pod = host;
    }
    c->rec = nw_kube_recorder_new(c->kube, "nodewarden", pod);
    char lease_id[300] = "";
    if (o->identity && *o->identity)
        snprintf(lease_id, sizeof lease_id, "%s_%ld", o->identity, (long)getpid());
    c->term = nw_term_new();
    c->upkeep = nw_upkeep_new();
    c->noms = nw_noms_new();
    c->disruption = nw_dis_ctl_new(&dopts, c->kube, pod);
    if (!c->cache || !c->rec || !c->term || !c->upkeep || !c->noms || !c->disruption) {
        rc = nw_err_set(err, NW_ENOMEM, NULL, "out of memory");
        goto fail;
    }
    nw_awscfg_explicit_t ex = {o->region, o->ec2, o->sqs, o->sts, o->imds, 0};
    nw_aws_cloud_opts_t ao;
    memset(&ao, 0, sizeof ao);
    if ((rc = nw_awscfg_resolve(&ao.aws, &ex, err)) != NW_OK)
        goto fail;
    if (!ao.aws.region[0]) {
        rc = nw_err_set(err, NW_EINVAL, "aws.region",
                        "aws.region is not set (nor AWS_REGION); the scaler needs it");
        goto fail;
    }
    ao.cluster_name = o->cluster_name;
    /* instance types, offerings and spot prices from the EC2 API (the embedded catalog
     * serves when that fails): placement must rank what the account can launch */
    ao.refresh_catalog = 1;
    ao.ice_ttl_ns = o->ice_ttl_ns;
    ao.clock = c->clock;
    if ((rc = nw_aws_cloud_new(&ao, &c->cloud, err)) != NW_OK)
        goto fail;
    nw_gc_opts_t go = {o->gc_initial_interval_ns, o->gc_interval_ns, 0,
                       o->gc_launch_grace_ns > 0 ? o->gc_launch_grace_ns : -1};
    if (!(c->gc = nw_gc_new(&go))) {
        rc = nw_err_set(err, NW_ENOMEM, NULL, "out of memory");
        goto fail;
    }
    if ((rc = nw_kube_watch_new(c->kube, c->cache, NULL, &s->watch, err)) != NW_OK ||
        (rc = nw_kube_watch_start(s->watch, err)) != NW_OK)
        goto fail;
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
            goto fail;
    } else
        atomic_store(&c->leading, 1);
    if (o->interruption_queue && *o->interruption_queue) {
        /* whole seconds, at least 1 (0 would turn the long poll into a busy loop) */
        int wait_s = o->interruption_wait_ns <= 0 ? -1
                     : o->interruption_wait_ns < NW_NS_PER_SEC
                         ? 1
                         : (int)(o->interruption_wait_ns / NW_NS_PER_SEC);
        if ((rc = nw_aws_intr_source_new(&ao.aws, nw_aws_cloud_creds(c->cloud), c->clock,
                                         o->interruption_queue, wait_s, 20, &s->intr_source,
                                         err)) != NW_OK)
            goto fail;
        nw_intr_opts_t io = {
            .kube = c->kube,
            .cache = c->cache,
            .rec = c->rec,
            .ice = c->cloud->ops->ice(c->cloud),
            .source = s->intr_source,
            .clock = c->clock,
            .leading = &c->leading,
        };
        if ((rc = nw_intr_start(&io, &s->intr, err)) != NW_OK)
            goto fail;
    }
    if (pthread_create(&s->thread, NULL, reconcile_main, s) != 0) {
        rc = nw_err_set(err, NW_ENOMEM, NULL, "cannot start the reconcile thread");
        goto fail;
    }
    s->thread_started = 1;
    nw_log_info("scaler", "scaler started", NW_LS("cluster", o->cluster_name),
                NW_LS("region", ao.aws.region), NW_LB("leaderElection", o->leader_election),
                NW_LI("batchIdleMs", c->batch_idle_ns / NW_NS_PER_MS),
                NW_LI("batchMaxMs", c->batch_max_ns / NW_NS_PER_MS),
                NW_LS("placement", "scheduling simulation (scaler/sched)"),
                NW_LB("repack", c->repack));
    *out = s;
    return NW_OK;
fail:
    nw_kube_config_free(kc); /* still ours only if the client was never made */
    atomic_store(&c->stopping, 1);
    scaler_free(s);
    return rc;
}

void nw_scaler_stop(nw_scaler_t *s)
{
    if (!s)
        return;
    atomic_store(&s->ctl.stopping, 1);
    if (s->thread_started)
        pthread_join(s->thread, NULL);
    nw_kube_leader_stop(s->leader);
    nw_kube_watch_stop(s->watch);
    nw_log_info("scaler", "scaler stopped");
    scaler_free(s);
}

nw_rc_t nw_scaler_metrics(nw_scaler_t *s, nw_buf_t *out)
{
    nw_ctl_t *c = &s->ctl;
    nw_rc_t rc =
        nw_buf_addf(out, "# TYPE nodewarden_scaler_leader gauge\nnodewarden_scaler_leader %d\n",
                    atomic_load(&c->leading));
    if (rc == NW_OK)
        rc = nw_metrics_counter(out, "nodewarden_scaler_solves_total", "Batches placed.",
                                atomic_load(&c->n_solves));
    if (rc == NW_OK)
        rc = nw_metrics_counter(out, "nodewarden_nodeclaims_created_total", "NodeClaims created.",
                                atomic_load(&c->n_created));
    if (rc == NW_OK)
        rc = nw_metrics_counter(out, "nodewarden_nodeclaims_launched_total", "Instances launched.",
                                atomic_load(&c->n_launched));
    if (rc == NW_OK)
        rc = nw_metrics_counter(out, "nodewarden_nodeclaims_launch_failed_total",
                                "Failed launches.", atomic_load(&c->n_launch_failed));
    if (rc == NW_OK)
        rc = nw_metrics_counter(out, "nodewarden_nodeclaims_registered_total",
                                "NodeClaims registered.", atomic_load(&c->n_registered));
    if (rc == NW_OK)
        rc = nw_metrics_counter(out, "nodewarden_nodeclaims_initialized_total",
                                "NodeClaims initialized.", atomic_load(&c->n_initialized));
    if (rc == NW_OK)
        rc = nw_metrics_counter(out, "nodewarden_nodeclaims_registration_timeouts_total",
                                "NodeClaims deleted after the registration timeout.",
                                atomic_load(&c->n_reg_timeouts));
    if (rc == NW_OK && c->disruption)
        rc = nw_dis_metrics(c->disruption, out);
    if (rc == NW_OK)
        rc = nw_intr_metrics(s->intr, out);
    if (rc == NW_OK)
        rc = nw_gc_metrics(c->gc, out);
    if (rc == NW_OK)
        rc = nw_term_metrics(c->term, out);
    if (rc == NW_OK)
        rc = nw_upkeep_metrics(c->upkeep, out);
    if (rc == NW_OK)
        rc = nw_kube_metrics_write(nw_kube_client_metrics(c->kube), out);
    return rc;
}

cJSON *nw_scaler_nodeclass(nw_scaler_t *s, const char *name)
{
    if (!s || !s->ctl.cache || !name)
        return NULL;
    nw_kube_snap_t *snap = nw_kube_cache_snapshot(s->ctl.cache);
    if (!snap)
        return NULL;
    const nw_kube_obj_t *o = nw_kube_snap_get(snap, NW_KUBE_EC2NODECLASSES, "", name);
    cJSON *copy = o ? cJSON_Duplicate(o->json, 1) : NULL;
    nw_kube_snap_release(snap);
    return copy;
}
