/*
 * config/config.h — the YAML configuration file and its flag overrides.
 *
 * One file (`--config FILE`, libyaml), every key overridable by a flag named
 * after its dotted path (`--webhook.threads 4`, `--webhook.threads=4`), plus
 * the short aliases --listen, --tls-cert, --tls-key, --log-level. Keys and
 * defaults are listed in docs/configuration.md. Unknown keys and
 * wrong types are errors naming the key and the line:
 *   config.yaml:12: webhook.threads: expected an integer, got "many"
 *
 * Ownership: nw_config_t is built once in main (nw_config_load_args) and is
 * immutable afterwards; free with nw_config_free(). Strings and lists inside
 * are owned by the config.
 * Thread: building is main-only; a built config may be read from any thread.
 */
#ifndef NW_CONFIG_H
#define NW_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

/* gpu.classes: classes besides the NVIDIA one (gpu.*) */
#define NW_CONFIG_MAX_ACCEL_CLASSES 15

typedef struct {
    char **v; /* owned strings */
    size_t n;
} nw_strlist_t;

typedef struct {
    struct {
        char *clusterName;
        char *clusterEndpoint;
        char *clusterCABundle;
        char *clusterCIDR; /* the service CIDR, for AL2023's NodeConfig */
        char *interruptionQueue;
        int64_t batchIdleDuration_ns;
        int64_t batchMaxDuration_ns;
        double vmMemoryOverheadPercent;
        int64_t reservedENIs;
        int isolatedVPC;       /* no Pricing API: the embedded on-demand prices serve */
        char *featureGates;    /* Karpenter's FEATURE_GATES syntax: "Gate=true,Gate2=false" */
        char *podDensity;      /* "eni-limited" | "kubelet-default" (nw_config_pod_density) */
        char *minValuesPolicy; /* "Strict" | "BestEffort" (Karpenter's --min-values-policy) */
        /* "Respect" | "Ignore" (Karpenter's --preference-policy): Ignore schedules as if
         * pods had no preferred affinities and no ScheduleAnyway spread constraints */
        char *preferencePolicy;
        int nodeRepair;       /* not a key: the NodeRepair feature gate (nw_config_load_args) */
        int staticCapacity;   /* not a key: the StaticCapacity feature gate */
        int reservedCapacity; /* not a key: the ReservedCapacity feature gate (default on) */
    } settings;
    struct {
        char *kubeconfig;
        char *context;
        double qps;
        int64_t burst;
    } kubernetes;
    struct {
        char *listen; /* "ADDR:PORT" or "[v6]:PORT" */
        char *tlsCert;
        char *tlsKey;
        int64_t maxBodyBytes;
        int64_t requestTimeout_ns;
        int64_t idleTimeout_ns;
        int64_t threads;                 /* 0 = one per CPU */
        int64_t certPollInterval_ns;     /* how often cert/key files are checked */
        int64_t shutdownGrace_ns;        /* max wait for in-flight requests on SIGTERM */
        int64_t shutdownDelay_ns;        /* serving on after SIGTERM, as the Service drops us */
        int64_t maxConnections;          /* all clients together; 0 = sized from memory */
        int64_t connectionMemoryPercent; /* of the memory limit, when maxConnections is 0 */
        int64_t maxConnectionsPerClient; /* per client address; 0 = no limit */
        int64_t headerTimeout_ns;        /* accept to end of request headers */
        int64_t busyHeaderTimeout_ns;    /* the same while over half the cap is open */
        int64_t maxInflightBodyBytes;    /* body bytes of all requests together */
        nw_strlist_t certDNSNames; /* SANs a loaded certificate must carry; empty = no check */
    } webhook;
    struct {
        char *region;
        char *ec2, *sqs, *sts, *imds, *pricing, *iam, *ssm;
        int64_t iceCacheTTL_ns; /* insufficient-capacity cache entry lifetime */
        struct {                /* refresh periods (Karpenter's controllers requeue 12 h) */
            int64_t onDemandPricing_ns, spotPricing_ns, instanceTypes_ns;
        } refresh;
        struct {                    /* knobs of `nodewarden aws` (debugging and tests) */
            int64_t callTimeout_ns; /* one AWS HTTP exchange (10s) */
            int64_t maxResults;     /* page size of Describe calls; 0: AWS's default */
            int64_t retryBase_ns;   /* first EC2 retry step (200ms) */
        } testing;
    } aws;
    struct {
        int enabled;
        int64_t registrationTimeout_ns;
        int repack;
        int64_t launchConcurrency; /* launch worker threads; 0: launch on the reconcile thread */
        int64_t interruptionWaitTime_ns; /* SQS long poll (WaitTimeSeconds), <= 20 s */
        int64_t gcInitialInterval_ns;    /* garbage collection: first 20 passes */
        int64_t gcInterval_ns;           /* garbage collection: afterwards */
        int64_t gcLaunchGrace_ns;        /* instances younger than this are never collected */
        struct {
            int64_t pollPeriod_ns;      /* idle disruption pass period (10s) */
            int64_t validationDelay_ns; /* consolidation/emptiness validation delay (15s) */
            int64_t commandTimeout_ns;  /* replacements must initialize within (10m) */
            int spotToSpot;             /* feature gate SpotToSpotConsolidation (false) */
        } disruption;
        struct {
            int enabled;
            char *namespace_;
            char *name;
            int64_t leaseDuration_ns;
            int64_t renewDeadline_ns;
            int64_t retryPeriod_ns;
        } leaderElection;
        int acceleratorAuditEvict; /* evict pods the accelerator audit finds (false) */
        struct {
            int exitAfterNodeClaim; /* test-only crash point: _exit(3) after a NodeClaim create */
            char *crashAt; /* crash campaigns only: "<point>[:<n>][+<ms>]" (scaler/ctl/ctl.h) */
            int64_t instanceStatusInterval_ns;   /* DescribeInstanceStatus poll period (1m) */
            int64_t nodeClassRefreshInterval_ns; /* an EC2NodeClass resolved again (1m) */
        } testing;
    } scaler;
    struct {
        int enabled; /* false: the GPU isolation policy is off */
        char *mode;  /* "enforce" or "warn" */
        /* the NVIDIA class (the settings of the single-class policy) */
        char *taintKey, *taintValue, *taintEffect;
        char *nodeLabelKey, *nodeLabelValue;
        nw_strlist_t resources;
        nw_strlist_t exemptNamespaces;
        nw_strlist_t instanceFamilies; /* instance families that have NVIDIA GPUs */
        char *requirementKey;          /* instance requirement of its types: key In values */
        nw_strlist_t requirementValues;
        /* families some of whose types EC2 reports with no device count (g6f, p5.4xlarge):
         * joined to instanceFamilies, kept off generic pools by family */
        nw_strlist_t uncountedFamilies;
        /* gpu.dra.drivers and gpu.dra.deviceClasses: the DRA (resource.k8s.io) drivers and
         * DeviceClass names whose devices are the class's (admission/gpu_dra.c) */
        nw_strlist_t draDrivers, draDeviceClasses;
        int acceleratorAware; /* gpu.disruption.acceleratorAware: GPU-aware disruption (true) */
        /* gpu.disruption.rollout.maxReplacing (1; 0: not staged) and .readyTimeout (30m):
         * staged replacement of the class's nodes on drift and expiry */
        int64_t rolloutMaxReplacing;
        int64_t rolloutReadyTimeout_ns;
        /* the other accelerator classes, gpu.classes.<name>.*: the defaults amd, neuron and
         * gaudi first, then the classes the configuration names, in the order named */
        struct nw_config_accel {
            char *name; /* a DNS label */
            int enabled;
            char *taintKey, *taintValue, *nodeLabelValue;
            nw_strlist_t resources, instanceFamilies;
            char *requirementKey;
            nw_strlist_t requirementValues;
            nw_strlist_t uncountedFamilies;            /* as gpu.uncountedFamilies */
            nw_strlist_t draDrivers, draDeviceClasses; /* as gpu.dra.drivers, .deviceClasses */
            int acceleratorAware;                      /* as gpu.disruption.acceleratorAware */
            int64_t rolloutMaxReplacing;               /* as gpu.disruption.rollout.maxReplacing */
            int64_t rolloutReadyTimeout_ns;            /* as gpu.disruption.rollout.readyTimeout */
        } * classes;
        size_t nclasses; /* at most NW_CONFIG_MAX_ACCEL_CLASSES */
    } gpu;
    struct {
        char *level; /* debug, info, warn, error */
    } log;
    struct {
        char *listen; /* "ADDR:PORT" for plain HTTP GET /metrics; "": on the webhook's port */
    } metrics;
} nw_config_t;

/** Fill cfg with the documented defaults. Owned strings; free with nw_config_free. */
NW_MUST_USE nw_rc_t nw_config_defaults(nw_config_t *cfg);

/** Apply a YAML document (text of length len) on top of cfg. `name` is used in
 * error messages ("name:LINE: key: message"). On error cfg may be partially
 * updated (free it with nw_config_free). */
NW_MUST_USE nw_rc_t nw_config_apply_yaml(nw_config_t *cfg, const char *name, const char *text,
                                         size_t len, nw_err_t *err);

/** Read FILE and apply it (nw_config_apply_yaml). */
NW_MUST_USE nw_rc_t nw_config_apply_file(nw_config_t *cfg, const char *path, nw_err_t *err);

/** Set one key by dotted path from a flag value (string form, parsed by type;
 * lists are comma-separated). Errors name the flag ("--webhook.threads: ..."). */
NW_MUST_USE nw_rc_t nw_config_set(nw_config_t *cfg, const char *key, const char *value,
                                  nw_err_t *err);

/** Check cross-field constraints (listen address syntax, ranges, enums). */
NW_MUST_USE nw_rc_t nw_config_validate(const nw_config_t *cfg, nw_err_t *err);

/**
 * Build the config from command-line flags: defaults, then the --config file
 * (wherever it appears), then every other flag in order, then validation.
 * argv[0] is the subcommand name and is skipped. Flags: `--KEY VALUE`,
 * `--KEY=VALUE`, aliases --listen, --tls-cert, --tls-key, --log-level.
 * Returns NW_EINVAL with a message in err for unknown flags or bad values.
 */
NW_MUST_USE nw_rc_t nw_config_load_args(nw_config_t *cfg, int argc, char **argv, nw_err_t *err);

/** Free everything cfg owns and zero it. NULL-safe. */
void nw_config_free(nw_config_t *cfg);

/** Parse a Go duration ("1h2m3.5s", "300ms", "-1.5h", "0"); NW_EPARSE if malformed
 * or out of range (api/duration.h, Go's rules). Thread: any. */
NW_MUST_USE nw_rc_t nw_config_parse_duration(const char *s, int64_t *out_ns);

/** Write the value of key (dotted path) as flag text into buf (lists
 * comma-separated, durations in ns with "ns" suffix). NW_ENOTFOUND if unknown. */
NW_MUST_USE nw_rc_t nw_config_get(const nw_config_t *cfg, const char *key, char *buf, size_t len);

/** Print the list of keys with their types and defaults (for --help). */
void nw_config_print_keys(void *file);

/* Karpenter's feature gates (kubernetes-sigs/karpenter pkg/operator/options/options.go):
 * NodeRepair, ReservedCapacity, SpotToSpotConsolidation, NodeOverlay, StaticCapacity,
 * CapacityBuffer. */
typedef struct {
    int spot_to_spot;      /* SpotToSpotConsolidation: -1 = not given, else 0/1 */
    int node_repair;       /* NodeRepair: default 0 */
    int reserved_capacity; /* default 1; off: no reservation resolution, no reserved offerings */
    int static_capacity;   /* StaticCapacity: default 0 */
    int unimplemented;     /* gates nodewarden does not implement that are turned on */
} nw_feature_gates_t;

/** Parse "Gate=bool,..." as Karpenter does (cliflag MapStringBool, strconv.ParseBool
 * spellings; an unknown gate is ignored, as Karpenter ignores it). With warn, an unknown
 * gate and a gate nodewarden does not implement turned on are logged. NW_EINVAL naming
 * settings.featureGates for a pair without "=" or with a value that is not a bool. */
NW_MUST_USE nw_rc_t nw_config_feature_gates(const char *s, nw_feature_gates_t *out, int warn,
                                            nw_err_t *err);

/* The kubelet's own default of maxPods (KubeletConfiguration v1beta1). */
#define NW_KUBELET_DEFAULT_MAX_PODS 110

/** settings.podDensity as pods per node when spec.kubelet.maxPods is unset: 0 for
 * "eni-limited" (Karpenter's ENI formula, what the VPC CNI allows), 110 for
 * "kubelet-default" (any other CNI: Calico, Cilium, Flannel...); -1 for anything else. */
int64_t nw_config_pod_density(const char *v);

#endif
