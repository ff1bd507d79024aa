/*
 * cli/cmd_serve.c — `nodewarden serve`: the admission webhook over HTTPS
 * and, when scaler.enabled, the scaler (scaler/loop.h: watch, Lease, reconcile).
 *
 * main thread: config, certificate, server, cert watcher; then sigwait for
 * SIGTERM/SIGINT; then stop in reverse order and exit 0.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/admit.h"
#include "common/log.h"
#include "server/certs.h"
#include "cli/cmd.h"
#include "config/config.h"
#include "admission/gpu_policy.h"
#include "server/https.h"
#include "server/metrics.h"
#include "server/sizing.h"
#include "scaler/loop.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: nodewarden serve [--listen ADDR:PORT] [--tls-cert FILE] [--tls-key FILE]\n"
               "                        [--config FILE] [--log-level LEVEL] [--KEY VALUE ...]\n\n"
               "Serve the admission webhook over HTTPS: POST /validate, POST /mutate\n"
               "(AdmissionReview v1), GET /healthz, GET /readyz, GET /metrics.\n"
               "The certificate and key are re-read when the files change.\n"
               "SIGTERM/SIGINT: stop accepting, finish requests in flight, exit 0.\n\n"
               "  --listen ADDR:PORT   alias of --webhook.listen (default 0.0.0.0:8443)\n"
               "  --tls-cert FILE      alias of --webhook.tlsCert\n"
               "  --tls-key FILE       alias of --webhook.tlsKey\n"
               "  --config FILE        YAML configuration file (flags override it)\n"
               "  --log-level LEVEL    alias of --log.level (debug, info, warn, error)\n\n"
               "Every configuration key is also a flag (--KEY VALUE or --KEY=VALUE; lists\n"
               "comma-separated):\n");
    nw_config_print_keys(f);
}

/* The admission webhook's cross-object lookup when the scaler runs: EC2NodeClasses
 * (so the GPU userData warning on NodePools works in serve as in check) and the DRA
 * objects a pod's claims name (ResourceClaims, ResourceClaimTemplates, DeviceClasses)
 * from its watch cache. Without the scaler there is no cluster state and no lookup. */
static cJSON *scaler_lookup(void *arg, const char *group, const char *kind, const char *name)
{
    return nw_scaler_loop_lookup(arg, group, kind, name);
}

/* the lookup's view is complete once the watch cache has listed every kind: before, a pod
 * whose claim the cache does not hold yet gets a warning, not a denial */
static bool scaler_synced(void *arg)
{
    return nw_scaler_loop_synced(arg);
}

static NW_MUST_USE nw_rc_t scaler_metrics(void *ud, nw_buf_t *out)
{
    return nw_scaler_loop_metrics(ud, out);
}

/* The webhook server's options from the configuration. */
static nw_https_opts_t build_https_opts(const nw_config_t *cfg, nw_admit_ctx_t *actx,
                                        nw_metrics_t *metrics)
{
    return (nw_https_opts_t){
        .listen = cfg->webhook.listen,
        .max_body = (size_t)cfg->webhook.maxBodyBytes,
        .request_timeout_ns = cfg->webhook.requestTimeout_ns,
        .idle_timeout_ns = cfg->webhook.idleTimeout_ns,
        .shutdown_grace_ns = cfg->webhook.shutdownGrace_ns,
        .threads = (unsigned)cfg->webhook.threads,
        .max_conns = (unsigned)cfg->webhook.maxConnections,
        .conn_memory_percent = (unsigned)cfg->webhook.connectionMemoryPercent,
        .max_conns_per_ip = (unsigned)cfg->webhook.maxConnectionsPerClient,
        .header_timeout_ns = cfg->webhook.headerTimeout_ns,
        .busy_header_timeout_ns = cfg->webhook.busyHeaderTimeout_ns,
        .max_inflight_body = (size_t)cfg->webhook.maxInflightBodyBytes,
        .admit_ctx = actx,
        .lookup = NULL,
        .metrics = metrics,
        .metrics_listen = cfg->metrics.listen,
    };
}

/* The scaler's options from the configuration. */
static nw_scaler_opts_t build_scaler_opts(const nw_config_t *cfg, const nw_gpu_policy_t *gpu)
{
    return (nw_scaler_opts_t){
        .kubeconfig = cfg->kubernetes.kubeconfig,
        .context = cfg->kubernetes.context,
        .qps = cfg->kubernetes.qps,
        .burst = cfg->kubernetes.burst,
        .region = cfg->aws.region,
        .ec2 = cfg->aws.ec2,
        .sqs = cfg->aws.sqs,
        .sts = cfg->aws.sts,
        .imds = cfg->aws.imds,
        .pricing = cfg->aws.pricing,
        .iam = cfg->aws.iam,
        .ssm = cfg->aws.ssm,
        .refresh_types_ns = cfg->aws.refresh.instanceTypes_ns,
        .refresh_od_ns = cfg->aws.refresh.onDemandPricing_ns,
        .refresh_spot_ns = cfg->aws.refresh.spotPricing_ns,
        .isolated_vpc = cfg->settings.isolatedVPC,
        .no_reserved_capacity = !cfg->settings.reservedCapacity,
        .cluster_name = cfg->settings.clusterName,
        .cluster_endpoint = cfg->settings.clusterEndpoint,
        .cluster_ca_bundle = cfg->settings.clusterCABundle,
        .cluster_cidr = cfg->settings.clusterCIDR,
        .batch_idle_ns = cfg->settings.batchIdleDuration_ns,
        .batch_max_ns = cfg->settings.batchMaxDuration_ns,
        .vm_memory_overhead_percent = cfg->settings.vmMemoryOverheadPercent,
        .reserved_enis = cfg->settings.reservedENIs,
        .default_max_pods = nw_config_pod_density(cfg->settings.podDensity),
        .min_values_best_effort = strcmp(cfg->settings.minValuesPolicy, "BestEffort") == 0,
        .ignore_preferences = strcmp(cfg->settings.preferencePolicy, "Ignore") == 0,
        .static_capacity = cfg->settings.staticCapacity,
        .registration_timeout_ns = cfg->scaler.registrationTimeout_ns,
        .repack = cfg->scaler.repack,
        .launch_concurrency = cfg->scaler.launchConcurrency,
        .disruption_poll_ns = cfg->scaler.disruption.pollPeriod_ns,
        .disruption_validation_ns = cfg->scaler.disruption.validationDelay_ns,
        .disruption_command_timeout_ns = cfg->scaler.disruption.commandTimeout_ns,
        .spot_to_spot = cfg->scaler.disruption.spotToSpot,
        .leader_election = cfg->scaler.leaderElection.enabled,
        .lease_namespace = cfg->scaler.leaderElection.namespace_,
        .lease_name = cfg->scaler.leaderElection.name,
        .lease_ns = cfg->scaler.leaderElection.leaseDuration_ns,
        .renew_deadline_ns = cfg->scaler.leaderElection.renewDeadline_ns,
        .retry_ns = cfg->scaler.leaderElection.retryPeriod_ns,
        .interruption_queue = cfg->settings.interruptionQueue,
        .interruption_wait_ns = cfg->scaler.interruptionWaitTime_ns,
        .gc_initial_interval_ns = cfg->scaler.gcInitialInterval_ns,
        .gc_interval_ns = cfg->scaler.gcInterval_ns,
        .gc_launch_grace_ns = cfg->scaler.gcLaunchGrace_ns,
        .ice_ttl_ns = cfg->aws.iceCacheTTL_ns,
        .identity = getenv("POD_NAME"),
        .exit_after_nodeclaim = cfg->scaler.testing.exitAfterNodeClaim,
        .crash_at = cfg->scaler.testing.crashAt,
        .node_repair = cfg->settings.nodeRepair,
        .instance_status_ns = cfg->scaler.testing.instanceStatusInterval_ns,
        .nodeclass_refresh_ns = cfg->scaler.testing.nodeClassRefreshInterval_ns,
        .gpu = gpu,
        .accel_evict = cfg->scaler.acceleratorAuditEvict,
    };
}

/* Start the scaler when scaler.enabled; NULL when it is off or did not start (the
 * webhook serves on without it). Hooks a running scaler into the metrics and the
 * admission lookup. */
static nw_scaler_t *start_scaler(const nw_config_t *cfg, const nw_gpu_policy_t *gpu,
                                 nw_metrics_t *metrics, nw_admit_ctx_t *actx, nw_err_t *err)
{
    if (!cfg->scaler.enabled)
        return NULL;
    nw_scaler_t *scaler = NULL;
    nw_scaler_opts_t so = build_scaler_opts(cfg, gpu);
    if (nw_scaler_loop_start(&so, &scaler, err) != NW_OK) {
        /* the webhook does not depend on the scaler: it serves on, and /readyz and
         * nodewarden_scaler_running say that the scaler is not running and why */
        nw_log_error("serve", "cannot start the scaler; the webhook serves without it",
                     NW_LS("error", err->msg));
        metrics->scaler = -1;
        snprintf(metrics->scaler_error, sizeof metrics->scaler_error, "%s",
                 err->msg[0] ? err->msg : nw_err_rc_str(err->rc));
        scaler = NULL;
    } else {
        metrics->scaler = 1;
        metrics->extra = scaler_metrics;
        metrics->extra_ud = scaler;
        actx->lookup = scaler_lookup;
        actx->lookup_arg = scaler;
        actx->lookup_complete = true;
        actx->lookup_ready = scaler_synced;
    }
    return scaler;
}

/* Every connection holds a descriptor: take the hard RLIMIT_NOFILE as the soft one
 * (container runtimes often give a soft 1024 under a hard limit far above it). */
static void raise_nofile(void)
{
    uint64_t before = 0, after = 0;
    if (nw_sizing_raise_nofile(&before, &after) != NW_OK)
        nw_log_warn("serve", "cannot raise the descriptor limit (RLIMIT_NOFILE)",
                    NW_LS("error", strerror(errno)),
                    NW_LI("limit", before > (uint64_t)INT64_MAX ? -1 : (long long)before));
    else if (after != before)
        nw_log_info("serve", "descriptor limit raised to the hard limit",
                    NW_LI("from", before > (uint64_t)INT64_MAX ? -1 : (long long)before),
                    NW_LI("to", after > (uint64_t)INT64_MAX ? -1 : (long long)after));
}

/* After SIGTERM: serve on for delay_ns (a second signal in the set ends it sooner). */
static void serve_on(const sigset_t *set, int64_t delay_ns)
{
    if (delay_ns <= 0)
        return;
    nw_log_info("serve", "serving on while the Service drops this pod",
                NW_LI("shutdownDelayMs", delay_ns / NW_NS_PER_MS));
    struct timespec ts = {.tv_sec = delay_ns / NW_NS_PER_SEC, .tv_nsec = delay_ns % NW_NS_PER_SEC};
    while (sigtimedwait(set, NULL, &ts) < 0 && errno == EINTR)
        ;
}

int nw_cmd_serve(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return NW_EXIT_OK;
        }
    nw_config_t cfg;
    nw_err_t err = {0};
    if (nw_config_load_args(&cfg, argc, argv, &err) != NW_OK) {
        fprintf(stderr, "nodewarden serve: %s\n", err.msg[0] ? err.msg : nw_err_rc_str(err.rc));
        nw_config_free(&cfg);
        return NW_EXIT_USAGE;
    }
    nw_log_set_level((nw_log_level_t)nw_log_level_parse(cfg.log.level));

    /* Signals: blocked in every thread (inherited), taken with sigwait here. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    raise_nofile();
    static nw_metrics_t metrics; /* outlives the server threads */
    nw_server_metrics_init(&metrics);
    int rc = NW_EXIT_USAGE;
    nw_https_t *srv = NULL;
    nw_certs_watch_t *watch = NULL;
    bool gpu_built = false;
    nw_scaler_t *scaler = NULL;
    bool scaler_stopped = true;
    if (nw_certs_require_dns_names(cfg.webhook.certDNSNames.v, cfg.webhook.certDNSNames.n) !=
            NW_OK ||
        nw_certs_load_initial(cfg.webhook.tlsCert, cfg.webhook.tlsKey, &metrics, &err) != NW_OK) {
        nw_log_error("serve", "cannot load the serving certificate", NW_LS("error", err.msg));
        goto out;
    }
    const char *ns = getenv("POD_NAMESPACE");
    static nw_gpu_policy_t gpu; /* outlives the server threads */
    if (nw_gpu_policy_from_config(&cfg, ns, &gpu, &err) != NW_OK) {
        nw_log_error("serve", "bad GPU policy configuration", NW_LS("error", err.msg));
        goto out;
    }
    gpu_built = true;
    nw_admit_ctx_t actx = {.gpu = &gpu, .self_namespace = ns ? ns : ""};
    nw_https_opts_t o = build_https_opts(&cfg, &actx, &metrics);
    scaler = start_scaler(&cfg, &gpu, &metrics, &actx, &err);
    if (nw_certs_watch_start(cfg.webhook.tlsCert, cfg.webhook.tlsKey,
                             cfg.webhook.certPollInterval_ns, &metrics, &watch, &err) != NW_OK ||
        nw_https_start(&o, &srv, &err) != NW_OK) {
        nw_log_error("serve", "cannot start the webhook server", NW_LS("error", err.msg));
        goto out;
    }
    int sig = 0;
    sigwait(&set, &sig);
    nw_log_info("serve", "signal received; shutting down", NW_LS("signal", strsignal(sig)));
    rc = NW_EXIT_OK;
    /* the Lease goes first (a standby takes over at once), then the webhook serves on
     * while kube-proxy takes this pod out of the Service */
    scaler_stopped = nw_scaler_loop_stop(scaler);
    scaler = NULL;
    serve_on(&set, cfg.webhook.shutdownDelay_ns);
out:
    nw_https_stop(srv);
    if (!scaler_stopped || !nw_scaler_loop_stop(scaler)) {
        /* a reconcile step still runs (its writes are refused, the Lease is released): end
         * the process now rather than free its memory under it or wait for it */
        nw_log_info("serve", "exiting");
        _exit(rc);
    }
    nw_certs_watch_stop(watch);
    nw_certs_shutdown();
    if (gpu_built)
        nw_gpu_policy_cleanup(&gpu);
    nw_config_free(&cfg);
    return rc;
}
