/*
 * scaler/loop.h — the scaler inside `nodewarden serve`: a Kubernetes client and the watch-fed cache
 * (one curl_multi thread), the AWS cloud, a Lease elector, and ONE reconcile thread that, while
 * this replica holds the Lease, runs on every cache change and at least every
 * second: the provisioner (scaler/controllers/provisioning.c: batch window, placement,
 * NodeClaim create + launch), the AWS cloud's periodic refreshes of instance types
 * and prices (scaler/aws/cloud.h), and the lifecycle (scaler/controllers/lifecycle.c:
 * registration, initialization, registration timeout, finalizers, EC2NodeClass
 * status) and garbage collection (scaler/controllers/gc.h). The cloud's part of a NodeClaim
 * launch runs on scaler.launchConcurrency launch workers (scaler/nodeclaim/nodeclaim.h),
 * which wake the reconcile thread when one ends. With settings.interruptionQueue
 * set, one more thread long-polls the SQS interruption queue
 * (scaler/controllers/interruption.h); the AWS cloud refreshes its catalog on a thread
 * of its own and node repair asks for instance health on another. Every thread, what
 * it may touch and how it stops: docs/internals/architecture.md. Every replica serves
 * the webhook; only the Lease holder writes.
 *
 * Losing the Lease stops all writes at once (every write checks it) and the
 * reconcile thread idles until the Lease is won again. nw_scaler_loop_stop releases
 * the Lease first, so a standby takes over within about a second.
 *
 * Ownership: nw_scaler_loop_start returns an owned handle; nw_scaler_loop_stop stops the
 * threads and frees everything (unless it returns false: see there). Strings in the
 * options are copied where kept.
 * Thread: start/stop from one controlling thread (cmd_serve's main thread);
 * nw_scaler_loop_metrics and nw_scaler_loop_nodeclass from any thread.
 */
#ifndef NW_SCALER_LOOP_H
#define NW_SCALER_LOOP_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/err.h"

typedef struct {
    const char *kubeconfig, *context; /* "" / NULL: the usual resolution order */
    double qps;
    int64_t burst;
    const char *region, *ec2, *sqs, *sts, *imds, *pricing, *iam, *ssm; /* aws.* */
    int64_t refresh_types_ns, refresh_od_ns, refresh_spot_ns;          /* aws.refresh.* */
    int isolated_vpc;                                                  /* settings.isolatedVPC */
    int no_reserved_capacity;            /* the ReservedCapacity gate is off */
    const char *cluster_name;            /* settings.clusterName (required) */
    int64_t batch_idle_ns, batch_max_ns; /* settings.batch{Idle,Max}Duration */
    const char *cluster_endpoint, *cluster_ca_bundle, *cluster_cidr; /* generated bootstraps */
    double vm_memory_overhead_percent;
    int64_t reserved_enis;
    int64_t default_max_pods; /* settings.podDensity (nw_config_pod_density): 0 = ENI-limited */
    int64_t registration_timeout_ns;       /* scaler.registrationTimeout */
    int repack;                            /* scaler.repack */
    int min_values_best_effort;            /* settings.minValuesPolicy=BestEffort */
    int ignore_preferences;                /* settings.preferencePolicy=Ignore */
    int static_capacity;                   /* feature gate StaticCapacity */
    int64_t launch_concurrency;            /* scaler.launchConcurrency (launch workers) */
    int64_t disruption_poll_ns;            /* scaler.disruption.pollPeriod (10s) */
    int64_t disruption_validation_ns;      /* scaler.disruption.validationDelay (0: none) */
    int64_t disruption_command_timeout_ns; /* scaler.disruption.commandTimeout (10m) */
    int spot_to_spot;                      /* ...spotToSpotConsolidation */
    int leader_election;                   /* scaler.leaderElection.enabled */
    const char *lease_namespace, *lease_name;
    int64_t lease_ns, renew_deadline_ns, retry_ns;
    const char *interruption_queue; /* settings.interruptionQueue ("" = off) */
    int64_t interruption_wait_ns;   /* scaler.interruption.waitTime (<= 20 s) */
    int64_t gc_initial_interval_ns, gc_interval_ns,
        gc_launch_grace_ns;  /* scaler.garbageCollection.* */
    int64_t ice_ttl_ns;      /* aws.iceCacheTTL */
    const char *identity;    /* this replica's name for events and the Lease (POD_NAME); NULL:
                              * the host name */
    const nw_clock_t *clock; /* NULL: the system clock */
    const struct nw_gpu_policy *gpu; /* the isolation policy the audit checks (borrowed,
                                        outlives the scaler); NULL: no audit */
    int accel_evict;                 /* scaler.acceleratorAudit.evict */
    int exit_after_nodeclaim;        /* scaler.testing.exitAfterNodeClaim: _exit(3) right after a
                                      * NodeClaim create, before its launch (crash tests only) */
    const char *crash_at;            /* scaler.testing.crashAt: a crash point to die at (crash
                                      * campaigns only; scaler/ctl/ctl.h); NULL or "": none */
    int node_repair;                 /* the NodeRepair feature gate (settings.featureGates) */
    int64_t instance_status_ns;      /* scaler.testing.instanceStatusInterval (0: 1m) */
    int64_t nodeclass_refresh_ns;    /* scaler.testing.nodeClassRefreshInterval (0: 1m) */
} nw_scaler_opts_t;

typedef struct nw_scaler nw_scaler_t;

/** Build the clients and start the watch, elector and reconcile threads. Errors
 * (bad kubeconfig, no AWS region, ...) name what is wrong; nothing is left running. */
NW_MUST_USE nw_rc_t nw_scaler_loop_start(const nw_scaler_opts_t *o, nw_scaler_t **out,
                                         nw_err_t *err);

/**
 * Stop: no write starts any more, the Lease is released at once, then the reconcile
 * thread is given 3 s to finish the step it is in (a pass stops between steps; one step
 * took up to 20 s at 20,000 pods), the watch stops and everything is freed. NULL-safe.
 * @return true when all that was done; false when the reconcile step was still running:
 * the Lease is released and the watch stopped, but nothing was freed and threads still
 * run, so the caller must end the process with _exit (no atexit handler may tear a
 * library down under them) without touching the scaler again.
 */
NW_MUST_USE bool nw_scaler_loop_stop(nw_scaler_t *s);

/** Append the scaler's Prometheus series (nodewarden_scaler_*, the Kubernetes client's
 * nodewarden_kube_*). */
NW_MUST_USE nw_rc_t nw_scaler_loop_metrics(nw_scaler_t *s, nw_buf_t *out);

/** The EC2NodeClass `name` as the watch cache holds it now (a snapshot is taken):
 * an owned deep copy (free with cJSON_Delete), or NULL when the cache has no such
 * object (not created, deleted, or not listed yet) or on OOM. Used by `serve` as the
 * admission webhook's cross-object lookup (api/admit.h nw_admit_ctx_t.lookup). */
cJSON *nw_scaler_loop_nodeclass(nw_scaler_t *s, const char *name);

/** Has the watch cache listed every kind (nw_kube_cache_has_synced)? Any thread. */
bool nw_scaler_loop_synced(nw_scaler_t *s);

/** A copy of a cached object (nw_kube_cache_snap_lookup: group, kind, "name" or
 * "namespace/name"), or NULL; the caller frees it. Any thread. */
cJSON *nw_scaler_loop_lookup(nw_scaler_t *s, const char *group, const char *kind, const char *name);

#endif
