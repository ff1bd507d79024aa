/* config/config.c — YAML config file + flag overrides (see config.h). */
#include "config/config.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "api/duration.h"
#include "common/file.h"
#include "common/log.h"

typedef enum { T_STR, T_INT, T_FLOAT, T_BOOL, T_DUR, T_LIST } key_type_t;

typedef struct {
    const char *path; /* dotted key */
    key_type_t type;
    size_t off;       /* offset in nw_config_t */
    const char *def;  /* default, in flag syntax */
    int64_t min, max; /* T_INT range; T_DUR range in ns when max > 0 */
} key_t_;

#define OFF(f) offsetof(nw_config_t, f)
#define NW_NS_PER_SEC_ INT64_C(1000000000)

static const key_t_ keys[] = {
    {"settings.clusterName", T_STR, OFF(settings.clusterName), "", 0, 0},
    {"settings.clusterEndpoint", T_STR, OFF(settings.clusterEndpoint), "", 0, 0},
    {"settings.clusterCABundle", T_STR, OFF(settings.clusterCABundle), "", 0, 0},
    {"settings.clusterCIDR", T_STR, OFF(settings.clusterCIDR), "", 0, 0},
    {"settings.interruptionQueue", T_STR, OFF(settings.interruptionQueue), "", 0, 0},
    {"settings.batchIdleDuration", T_DUR, OFF(settings.batchIdleDuration_ns), "1s", 1, 0},
    {"settings.batchMaxDuration", T_DUR, OFF(settings.batchMaxDuration_ns), "10s", 1, 0},
    {"settings.vmMemoryOverheadPercent", T_FLOAT, OFF(settings.vmMemoryOverheadPercent), "0.075", 0,
     0},
    {"settings.reservedENIs", T_INT, OFF(settings.reservedENIs), "0", 0, 1000},
    {"settings.isolatedVPC", T_BOOL, OFF(settings.isolatedVPC), "false", 0, 0},
    {"settings.featureGates", T_STR, OFF(settings.featureGates), "", 0, 0},
    {"settings.podDensity", T_STR, OFF(settings.podDensity), "eni-limited", 0, 0},
    {"settings.minValuesPolicy", T_STR, OFF(settings.minValuesPolicy), "Strict", 0, 0},
    {"settings.preferencePolicy", T_STR, OFF(settings.preferencePolicy), "Respect", 0, 0},
    {"kubernetes.kubeconfig", T_STR, OFF(kubernetes.kubeconfig), "", 0, 0},
    {"kubernetes.context", T_STR, OFF(kubernetes.context), "", 0, 0},
    {"kubernetes.qps", T_FLOAT, OFF(kubernetes.qps), "200", 0, 0},
    {"kubernetes.burst", T_INT, OFF(kubernetes.burst), "300", 1, 100000},
    {"webhook.listen", T_STR, OFF(webhook.listen), "0.0.0.0:8443", 0, 0},
    {"webhook.tlsCert", T_STR, OFF(webhook.tlsCert), "/etc/nodewarden/tls/tls.crt", 0, 0},
    {"webhook.tlsKey", T_STR, OFF(webhook.tlsKey), "/etc/nodewarden/tls/tls.key", 0, 0},
    {"webhook.maxBodyBytes", T_INT, OFF(webhook.maxBodyBytes), "7340032", 1024, INT64_C(1) << 30},
    {"webhook.requestTimeout", T_DUR, OFF(webhook.requestTimeout_ns), "10s", 1, 0},
    {"webhook.idleTimeout", T_DUR, OFF(webhook.idleTimeout_ns), "120s", 1, 0},
    {"webhook.threads", T_INT, OFF(webhook.threads), "0", 0, 1024},
    {"webhook.certPollInterval", T_DUR, OFF(webhook.certPollInterval_ns), "1s", 1, 0},
    {"webhook.shutdownGrace", T_DUR, OFF(webhook.shutdownGrace_ns), "15s", 1, 0},
    {"webhook.shutdownDelay", T_DUR, OFF(webhook.shutdownDelay_ns), "0s", 0, 0},
    {"webhook.maxConnections", T_INT, OFF(webhook.maxConnections), "0", 0, 1000000},
    {"webhook.connectionMemoryPercent", T_INT, OFF(webhook.connectionMemoryPercent), "25", 1, 90},
    {"webhook.maxConnectionsPerClient", T_INT, OFF(webhook.maxConnectionsPerClient), "128", 0,
     1000000},
    {"webhook.headerTimeout", T_DUR, OFF(webhook.headerTimeout_ns), "10s", 1, 0},
    {"webhook.busyHeaderTimeout", T_DUR, OFF(webhook.busyHeaderTimeout_ns), "1s", 1, 0},
    {"webhook.maxInflightBodyBytes", T_INT, OFF(webhook.maxInflightBodyBytes), "67108864", 1024,
     INT64_C(1) << 40},
    {"webhook.certDNSNames", T_LIST, OFF(webhook.certDNSNames), "", 0, 0},
    {"aws.region", T_STR, OFF(aws.region), "", 0, 0},
    {"aws.endpoints.ec2", T_STR, OFF(aws.ec2), "", 0, 0},
    {"aws.endpoints.sqs", T_STR, OFF(aws.sqs), "", 0, 0},
    {"aws.endpoints.sts", T_STR, OFF(aws.sts), "", 0, 0},
    {"aws.endpoints.imds", T_STR, OFF(aws.imds), "", 0, 0},
    {"aws.endpoints.pricing", T_STR, OFF(aws.pricing), "", 0, 0},
    {"aws.endpoints.iam", T_STR, OFF(aws.iam), "", 0, 0},
    {"aws.endpoints.ssm", T_STR, OFF(aws.ssm), "", 0, 0},
    {"aws.iceCacheTTL", T_DUR, OFF(aws.iceCacheTTL_ns), "3m", 1, 0},
    {"aws.refresh.onDemandPricing", T_DUR, OFF(aws.refresh.onDemandPricing_ns), "12h", 1, 0},
    {"aws.refresh.spotPricing", T_DUR, OFF(aws.refresh.spotPricing_ns), "12h", 1, 0},
    {"aws.refresh.instanceTypes", T_DUR, OFF(aws.refresh.instanceTypes_ns), "12h", 1, 0},
    {"aws.testing.callTimeout", T_DUR, OFF(aws.testing.callTimeout_ns), "10s", 1, 0},
    {"aws.testing.maxResults", T_INT, OFF(aws.testing.maxResults), "0", 0, 1000},
    {"aws.testing.retryBase", T_DUR, OFF(aws.testing.retryBase_ns), "200ms", 1, 0},
    {"scaler.enabled", T_BOOL, OFF(scaler.enabled), "false", 0, 0},
    {"scaler.registrationTimeout", T_DUR, OFF(scaler.registrationTimeout_ns), "15m", 1, 0},
    {"scaler.repack", T_BOOL, OFF(scaler.repack), "true", 0, 0},
    {"scaler.launchConcurrency", T_INT, OFF(scaler.launchConcurrency), "16", 0, 256},
    {"scaler.interruption.waitTime", T_DUR, OFF(scaler.interruptionWaitTime_ns), "20s", 1,
     20 * NW_NS_PER_SEC_},
    {"scaler.garbageCollection.initialInterval", T_DUR, OFF(scaler.gcInitialInterval_ns), "10s", 1,
     0},
    {"scaler.garbageCollection.interval", T_DUR, OFF(scaler.gcInterval_ns), "2m", 1, 0},
    {"scaler.garbageCollection.launchGrace", T_DUR, OFF(scaler.gcLaunchGrace_ns), "30s", 1, 0},
    {"scaler.disruption.pollPeriod", T_DUR, OFF(scaler.disruption.pollPeriod_ns), "10s", 1, 0},
    {"scaler.disruption.validationDelay", T_DUR, OFF(scaler.disruption.validationDelay_ns), "15s",
     0, 0},
    {"scaler.disruption.commandTimeout", T_DUR, OFF(scaler.disruption.commandTimeout_ns), "10m", 1,
     0},
    {"scaler.disruption.spotToSpotConsolidation", T_BOOL, OFF(scaler.disruption.spotToSpot),
     "false", 0, 0},
    {"scaler.leaderElection.enabled", T_BOOL, OFF(scaler.leaderElection.enabled), "true", 0, 0},
    {"scaler.leaderElection.namespace", T_STR, OFF(scaler.leaderElection.namespace_), "nodewarden",
     0, 0},
    {"scaler.leaderElection.name", T_STR, OFF(scaler.leaderElection.name), "nodewarden-leader", 0,
     0},
    {"scaler.leaderElection.leaseDuration", T_DUR, OFF(scaler.leaderElection.leaseDuration_ns),
     "15s", 1, 0},
    {"scaler.leaderElection.renewDeadline", T_DUR, OFF(scaler.leaderElection.renewDeadline_ns),
     "10s", 1, 0},
    {"scaler.leaderElection.retryPeriod", T_DUR, OFF(scaler.leaderElection.retryPeriod_ns), "2s", 1,
     0},
    {"scaler.acceleratorAudit.evict", T_BOOL, OFF(scaler.acceleratorAuditEvict), "false", 0, 0},
    {"scaler.testing.exitAfterNodeClaim", T_BOOL, OFF(scaler.testing.exitAfterNodeClaim), "false",
     0, 0},
    {"scaler.testing.crashAt", T_STR, OFF(scaler.testing.crashAt), "", 0, 0},
    {"scaler.testing.instanceStatusInterval", T_DUR, OFF(scaler.testing.instanceStatusInterval_ns),
     "1m", 1, 0},
    {"scaler.testing.nodeClassRefreshInterval", T_DUR,
     OFF(scaler.testing.nodeClassRefreshInterval_ns), "1m", 1, 0},
    {"gpu.enabled", T_BOOL, OFF(gpu.enabled), "true", 0, 0},
    {"gpu.mode", T_STR, OFF(gpu.mode), "enforce", 0, 0},
    {"gpu.taint.key", T_STR, OFF(gpu.taintKey), "gpu", 0, 0},
    {"gpu.taint.value", T_STR, OFF(gpu.taintValue), "true", 0, 0},
    {"gpu.taint.effect", T_STR, OFF(gpu.taintEffect), "NoSchedule", 0, 0},
    {"gpu.nodeLabel.key", T_STR, OFF(gpu.nodeLabelKey), "node.accelerator", 0, 0},
    {"gpu.nodeLabel.value", T_STR, OFF(gpu.nodeLabelValue), "nvidia-gpu", 0, 0},
    {"gpu.resources", T_LIST, OFF(gpu.resources),
     "nvidia.com/gpu,nvidia.com/mig-*,nvidia.com/gpu.shared", 0, 0},
    {"gpu.exemptNamespaces", T_LIST, OFF(gpu.exemptNamespaces), "kube-system,nodewarden", 0, 0},
    {"gpu.instanceFamilies", T_LIST, OFF(gpu.instanceFamilies),
     "g3,g3s,g4dn,g5,g5g,g6,g6e,g6f,gr6,gr6f,g7e,p2,p3,p3dn,p4d,p4de,p5,p5e,p5en,p6-b200,p6e-"
     "gb200",
     0, 0},
    {"gpu.instanceRequirement.key", T_STR, OFF(gpu.requirementKey),
     "karpenter.k8s.aws/instance-gpu-manufacturer", 0, 0},
    {"gpu.instanceRequirement.values", T_LIST, OFF(gpu.requirementValues), "nvidia", 0, 0},
    {"gpu.uncountedFamilies", T_LIST, OFF(gpu.uncountedFamilies), "g6f,gr6f,p5", 0, 0},
    {"gpu.dra.drivers", T_LIST, OFF(gpu.draDrivers), "gpu.nvidia.com", 0, 0},
    {"gpu.dra.deviceClasses", T_LIST, OFF(gpu.draDeviceClasses), "gpu.nvidia.com,mig.nvidia.com", 0,
     0},
    {"gpu.disruption.acceleratorAware", T_BOOL, OFF(gpu.acceleratorAware), "true", 0, 0},
    {"gpu.disruption.rollout.maxReplacing", T_INT, OFF(gpu.rolloutMaxReplacing), "1", 0, 1000},
    {"gpu.disruption.rollout.readyTimeout", T_DUR, OFF(gpu.rolloutReadyTimeout_ns), "30m", 1, 0},
    {"log.level", T_STR, OFF(log.level), "info", 0, 0},
    {"metrics.listen", T_STR, OFF(metrics.listen), "0.0.0.0:8080", 0, 0},
};
#define NKEYS (sizeof keys / sizeof keys[0])

static const struct {
    const char *alias, *key;
} aliases[] = {
    {"listen", "webhook.listen"},
    {"tls-cert", "webhook.tlsCert"},
    {"tls-key", "webhook.tlsKey"},
    {"log-level", "log.level"},
};

static const key_t_ *find_key(const char *path)
{
    for (size_t i = 0; i < NKEYS; i++)
        if (strcmp(keys[i].path, path) == 0)
            return &keys[i];
    return NULL;
}

/* ---- accelerator classes: gpu.classes.<name>.<field> ---------------------------------- */

#define CLASS_PREFIX "gpu.classes."
#define COFF(f) offsetof(struct nw_config_accel, f)

/* a class's fields: the path below gpu.classes.<name>, the type, the offset in the class,
 * the default of a class the configuration adds */
static const key_t_ class_fields[] = {
    {"enabled", T_BOOL, COFF(enabled), "true", 0, 0},
    {"taint.key", T_STR, COFF(taintKey), "", 0, 0},
    {"taint.value", T_STR, COFF(taintValue), "", 0, 0},
    {"nodeLabel.value", T_STR, COFF(nodeLabelValue), "", 0, 0},
    {"resources", T_LIST, COFF(resources), "", 0, 0},
    {"instanceFamilies", T_LIST, COFF(instanceFamilies), "", 0, 0},
    {"instanceRequirement.key", T_STR, COFF(requirementKey), "", 0, 0},
    {"instanceRequirement.values", T_LIST, COFF(requirementValues), "", 0, 0},
    {"uncountedFamilies", T_LIST, COFF(uncountedFamilies), "", 0, 0},
    {"dra.drivers", T_LIST, COFF(draDrivers), "", 0, 0},
    {"dra.deviceClasses", T_LIST, COFF(draDeviceClasses), "", 0, 0},
    {"disruption.acceleratorAware", T_BOOL, COFF(acceleratorAware), "true", 0, 0},
    {"disruption.rollout.maxReplacing", T_INT, COFF(rolloutMaxReplacing), "1", 0, 1000},
    {"disruption.rollout.readyTimeout", T_DUR, COFF(rolloutReadyTimeout_ns), "30m", 1, 0},
};
#define NCFIELDS (sizeof class_fields / sizeof class_fields[0])

/* the classes there are out of the box, their values in the order of class_fields
 * (admission/gpu.c has the same defaults for a policy built without a configuration) */
static const struct {
    const char *name;
    const char *v[NCFIELDS];
} default_classes[] = {
    {"amd",
     {"true", "amd.com/gpu", "", "amd-gpu", "amd.com/gpu", "g4ad",
      "karpenter.k8s.aws/instance-gpu-manufacturer", "amd", "", "gpu.amd.com", "gpu.amd.com",
      "true", "1", "30m"}},
    {"neuron",
     {"true", "aws.amazon.com/neuron", "", "aws-neuron",
      "aws.amazon.com/neuron,aws.amazon.com/neuroncore,aws.amazon.com/neurondevice",
      "inf1,inf2,trn1,trn1n,trn2,trn2u", "karpenter.k8s.aws/instance-accelerator-manufacturer",
      "aws", "", "neuron.aws.com", "neuron.aws.com", "true", "1", "30m"}},
    {"gaudi",
     {"true", "habana.ai/gaudi", "", "habana-gaudi", "habana.ai/gaudi", "dl1",
      "karpenter.k8s.aws/instance-gpu-manufacturer", "habana", "", "gaudi.intel.com",
      "gaudi.intel.com", "true", "1", "30m"}},
    {"qualcomm",
     {"true", "qualcomm.com/qaic", "", "qualcomm-ai100", "qualcomm.com/qaic", "dl2q",
      "karpenter.k8s.aws/instance-accelerator-manufacturer", "qualcomm", "", "", "", "true", "1",
      "30m"}},
    {"xilinx",
     {"true", "xilinx.com/fpga", "", "xilinx-u30", "xilinx.com/fpga-xilinx_u30*", "vt1", "", "", "",
      "", "", "true", "1", "30m"}},
};

static const key_t_ *class_field(const char *field)
{
    for (size_t i = 0; i < NCFIELDS; i++)
        if (strcmp(class_fields[i].path, field) == 0)
            return &class_fields[i];
    return NULL;
}

/* a DNS label (RFC 1123): what a class name may be */
static bool valid_class_name(const char *s, size_t n)
{
    if (n == 0 || n > 63 || s[0] == '-' || s[n - 1] == '-')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
            return false;
    return true;
}

static struct nw_config_accel *find_class(const nw_config_t *cfg, const char *name, size_t n)
{
    for (size_t i = 0; i < cfg->gpu.nclasses; i++)
        if (strlen(cfg->gpu.classes[i].name) == n &&
            strncmp(cfg->gpu.classes[i].name, name, n) == 0)
            return &cfg->gpu.classes[i];
    return NULL;
}

/* a key resolved to its field: k a copy of the key with the full dotted path */
typedef struct {
    key_t_ k;
    char path[256];
    char *base;
} rkey_t;

static NW_MUST_USE nw_rc_t set_scalar(char *base, const key_t_ *k, const char *val, int from_flag,
                                      const char *where, nw_err_t *err);

static void class_free(struct nw_config_accel *c);

/* a new class named name: the defaults of class_fields, then vals (NULL: none) */
static NW_MUST_USE nw_rc_t add_class(nw_config_t *cfg, const char *name, size_t n,
                                     const char *const *vals)
{
    struct nw_config_accel *v =
        realloc(cfg->gpu.classes, (cfg->gpu.nclasses + 1) * sizeof *cfg->gpu.classes);
    if (!v)
        return NW_ENOMEM;
    cfg->gpu.classes = v;
    struct nw_config_accel *c = &v[cfg->gpu.nclasses];
    memset(c, 0, sizeof *c);
    if (!(c->name = strndup(name, n)))
        return NW_ENOMEM;
    cfg->gpu.nclasses++;
    for (size_t i = 0; i < NCFIELDS; i++) {
        nw_rc_t rc = set_scalar((char *)c + class_fields[i].off, &class_fields[i],
                                vals ? vals[i] : class_fields[i].def, 1, "default ", NULL);
        if (rc != NW_OK)
            return rc;
    }
    return NW_OK;
}

/* Resolve path to its field. *found = 0: no such key (nothing set in err). A class key
 * of a class not yet known creates the class when create is set. gpu.classes.nvidia.<field>
 * is the NVIDIA class's own gpu.<field>. Errors (a bad class name, too many classes) name
 * the key, where before them. */
static NW_MUST_USE nw_rc_t resolve(nw_config_t *cfg, const char *path, int create, rkey_t *r,
                                   int *found, const char *where, nw_err_t *err)
{
    *found = 0;
    const key_t_ *k = find_key(path);
    if (k) {
        r->k = *k;
        r->base = (char *)cfg + k->off;
        *found = 1;
        return NW_OK;
    }
    size_t pl = strlen(CLASS_PREFIX);
    if (strncmp(path, CLASS_PREFIX, pl) != 0 || strlen(path) >= sizeof r->path)
        return NW_OK;
    const char *name = path + pl, *dot = strchr(name, '.');
    const key_t_ *f = dot ? class_field(dot + 1) : NULL;
    if (!f)
        return NW_OK;
    size_t n = (size_t)(dot - name);
    if (!valid_class_name(name, n))
        return nw_err_set(err, NW_EINVAL, path,
                          "%s" CLASS_PREFIX "%.*s: a class name is a DNS label (at most 63 "
                          "lower-case letters, digits and '-', starting and ending with a letter "
                          "or digit)",
                          where, (int)n, name);
    snprintf(r->path, sizeof r->path, "%s", path);
    if (n == 6 && strncmp(name, "nvidia", 6) == 0) {
        char alias[256];
        snprintf(alias, sizeof alias, "gpu.%s", dot + 1);
        k = strcmp(f->path, "enabled") != 0 ? find_key(alias) : NULL;
        if (!k)
            return nw_err_set(err, NW_EINVAL, path,
                              "%s%s: the nvidia class is always there (gpu.enabled turns the "
                              "whole policy off)",
                              where, path);
        r->k = *k;
        r->k.path = r->path;
        r->base = (char *)cfg + k->off;
        *found = 1;
        return NW_OK;
    }
    struct nw_config_accel *c = find_class(cfg, name, n);
    if (!c && !create)
        return NW_OK;
    if (!c) {
        if (cfg->gpu.nclasses >= NW_CONFIG_MAX_ACCEL_CLASSES)
            return nw_err_set(err, NW_EINVAL, path,
                              "%s%s: too many accelerator classes (at most %d besides nvidia)",
                              where, path, NW_CONFIG_MAX_ACCEL_CLASSES);
        if (add_class(cfg, name, n, NULL) != NW_OK)
            return NW_ENOMEM;
        c = &cfg->gpu.classes[cfg->gpu.nclasses - 1];
    }
    r->k = *f;
    r->k.path = r->path;
    r->base = (char *)c + f->off;
    *found = 1;
    return NW_OK;
}

/* gpu.classes, gpu.classes.<name> and its groups (taint, nodeLabel, instanceRequirement) */
static bool is_class_section(const char *path)
{
    if (strcmp(path, "gpu.classes") == 0)
        return true;
    size_t pl = strlen(CLASS_PREFIX);
    if (strncmp(path, CLASS_PREFIX, pl) != 0)
        return false;
    const char *dot = strchr(path + pl, '.');
    if (!dot)
        return true;
    size_t n = strlen(dot + 1);
    for (size_t i = 0; i < NCFIELDS; i++)
        if (strncmp(class_fields[i].path, dot + 1, n) == 0 && class_fields[i].path[n] == '.')
            return true;
    return false;
}

/* True if path names a mapping (a proper prefix of some key, followed by '.'). */
static bool is_section(const char *path)
{
    if (is_class_section(path))
        return true;
    size_t n = strlen(path);
    for (size_t i = 0; i < NKEYS; i++)
        if (strncmp(keys[i].path, path, n) == 0 && keys[i].path[n] == '.')
            return true;
    return false;
}

static const char *type_name(key_type_t t)
{
    switch (t) {
    case T_STR:
        return "a string";
    case T_INT:
        return "an integer";
    case T_FLOAT:
        return "a number";
    case T_BOOL:
        return "a boolean";
    case T_DUR:
        return "a duration";
    case T_LIST:
        return "a list of strings";
    }
    return "?";
}

/* ---- Go durations ---------------------------------------------------------- */

nw_rc_t nw_config_parse_duration(const char *s, int64_t *out_ns)
{
    int64_t ns = 0;
    if (!s || nw_duration_parse(s, &ns, NULL) != NW_OK)
        return NW_EPARSE;
    *out_ns = ns;
    return NW_OK;
}

/* ---- typed setters ----------------------------------------------------------- */

static void list_free(nw_strlist_t *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    l->v = NULL;
    l->n = 0;
}

static NW_MUST_USE nw_rc_t list_push(nw_strlist_t *l, const char *s, size_t n)
{
    char **nv = realloc(l->v, (l->n + 1) * sizeof *nv);
    if (!nv)
        return NW_ENOMEM;
    l->v = nv;
    if (!(l->v[l->n] = strndup(s, n)))
        return NW_ENOMEM;
    l->n++;
    return NW_OK;
}

static int parse_int(const char *s, int64_t *out)
{
    if (!*s)
        return -1;
    const char *p = s;
    if (*p == '+' || *p == '-')
        p++;
    if (*p < '0' || *p > '9')
        return -1;
    errno = 0;
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

static int parse_bool(const char *s, int *out)
{
    static const char *const t[] = {"true", "True", "TRUE"}, *const f[] = {"false", "False",
                                                                           "FALSE"};
    for (int i = 0; i < 3; i++) {
        if (strcmp(s, t[i]) == 0)
            return *out = 1, 0;
        if (strcmp(s, f[i]) == 0)
            return *out = 0, 0;
    }
    return -1;
}

/* Set the value of field base (of key k). where: prefix for messages ("file:12: " or "--"). */
static NW_MUST_USE nw_rc_t set_scalar(char *base, const key_t_ *k, const char *val, int from_flag,
                                      const char *where, nw_err_t *err)
{
    switch (k->type) {
    case T_STR: {
        char *dup = strdup(val);
        if (!dup)
            return NW_ENOMEM;
        free(*(char **)base);
        *(char **)base = dup;
        return NW_OK;
    }
    case T_INT: {
        int64_t v;
        if (parse_int(val, &v) != 0)
            return nw_err_set(err, NW_EINVAL, k->path, "%s%s: expected an integer, got \"%s\"",
                              where, k->path, val);
        if (v < k->min || v > k->max)
            return nw_err_set(err, NW_EINVAL, k->path, "%s%s: %lld is out of range (%lld..%lld)",
                              where, k->path, (long long)v, (long long)k->min, (long long)k->max);
        *(int64_t *)base = v;
        return NW_OK;
    }
    case T_FLOAT: {
        char *end = NULL;
        errno = 0;
        double v = strtod(val, &end);
        if (!*val || errno || *end || !isfinite(v))
            return nw_err_set(err, NW_EINVAL, k->path, "%s%s: expected a number, got \"%s\"", where,
                              k->path, val);
        if (v < 0)
            return nw_err_set(err, NW_EINVAL, k->path, "%s%s: must not be negative, got %s", where,
                              k->path, val);
        // cppcheck-suppress invalidPointerCast
        *(double *)base = v;
        return NW_OK;
    }
    case T_BOOL: {
        int v;
        if (parse_bool(val, &v) != 0)
            return nw_err_set(err, NW_EINVAL, k->path,
                              "%s%s: expected a boolean (true or false), got \"%s\"", where,
                              k->path, val);
        *(int *)base = v;
        return NW_OK;
    }
    case T_DUR: {
        int64_t v;
        if (nw_config_parse_duration(val, &v) != NW_OK)
            return nw_err_set(err, NW_EINVAL, k->path,
                              "%s%s: expected a duration such as \"10s\" or \"1m30s\", got \"%s\"",
                              where, k->path, val);
        if (k->min > 0 && v <= 0)
            return nw_err_set(err, NW_EINVAL, k->path, "%s%s: must be positive, got \"%s\"", where,
                              k->path, val);
        if (k->max > 0 && v > k->max)
            return nw_err_set(err, NW_EINVAL, k->path, "%s%s: at most %llds, got \"%s\"", where,
                              k->path, (long long)(k->max / NW_NS_PER_SEC_), val);
        *(int64_t *)base = v;
        return NW_OK;
    }
    case T_LIST: {
        if (!from_flag)
            return nw_err_set(err, NW_EINVAL, k->path,
                              "%s%s: expected a list of strings, got \"%s\"", where, k->path, val);
        nw_strlist_t *l = (nw_strlist_t *)base;
        list_free(l);
        const char *p = val;
        while (*p) {
            const char *c = strchr(p, ',');
            size_t n = c ? (size_t)(c - p) : strlen(p);
            if (n && list_push(l, p, n) != NW_OK)
                return NW_ENOMEM;
            p += n + (c ? 1 : 0);
        }
        return NW_OK;
    }
    }
    return NW_EINVAL;
}

nw_rc_t nw_config_defaults(nw_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->settings.reservedCapacity = 1; /* the ReservedCapacity gate's default */
    for (size_t i = 0; i < NKEYS; i++) {
        nw_rc_t rc =
            set_scalar((char *)cfg + keys[i].off, &keys[i], keys[i].def, 1, "default ", NULL);
        if (rc != NW_OK)
            return rc;
    }
    for (size_t i = 0; i < sizeof default_classes / sizeof default_classes[0]; i++) {
        const char *name = default_classes[i].name;
        nw_rc_t rc = add_class(cfg, name, strlen(name), default_classes[i].v);
        if (rc != NW_OK)
            return rc;
    }
    return NW_OK;
}

static void class_free(struct nw_config_accel *c)
{
    for (size_t i = 0; i < NCFIELDS; i++) {
        char *base = (char *)c + class_fields[i].off;
        if (class_fields[i].type == T_STR)
            free(*(char **)base);
        else if (class_fields[i].type == T_LIST)
            list_free((nw_strlist_t *)base);
    }
    free(c->name);
}

void nw_config_free(nw_config_t *cfg)
{
    if (!cfg)
        return;
    for (size_t i = 0; i < NKEYS; i++) {
        char *base = (char *)cfg + keys[i].off;
        if (keys[i].type == T_STR)
            free(*(char **)base);
        else if (keys[i].type == T_LIST)
            list_free((nw_strlist_t *)base);
    }
    for (size_t i = 0; i < cfg->gpu.nclasses; i++)
        class_free(&cfg->gpu.classes[i]);
    free(cfg->gpu.classes);
    memset(cfg, 0, sizeof *cfg);
}

/* ---- YAML ---------------------------------------------------------------------- */

typedef struct {
    nw_config_t *cfg;
    yaml_document_t *doc;
    const char *name;
    nw_err_t *err;
} walk_t;

static bool is_null_scalar(const yaml_node_t *n)
{
    if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return false;
    const char *v = (const char *)n->data.scalar.value;
    return !*v || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 || strcmp(v, "Null") == 0 ||
           strcmp(v, "NULL") == 0;
}

static const char *node_kind(const yaml_node_t *n)
{
    return n->type == YAML_MAPPING_NODE    ? "a mapping"
           : n->type == YAML_SEQUENCE_NODE ? "a list"
                                           : "a scalar";
}

static NW_MUST_USE nw_rc_t walk_value(walk_t *w, const char *path, yaml_node_t *n, unsigned line);

static NW_MUST_USE nw_rc_t walk_mapping(walk_t *w, const char *prefix, yaml_node_t *n)
{
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(w->doc, p->key);
        yaml_node_t *v = yaml_document_get_node(w->doc, p->value);
        unsigned line = (unsigned)k->start_mark.line + 1;
        if (k->type != YAML_SCALAR_NODE)
            return nw_err_set(w->err, NW_EINVAL, prefix, "%s:%u: %s%skeys must be strings", w->name,
                              line, prefix, *prefix ? ": " : "");
        /* duplicate keys */
        for (yaml_node_pair_t *q = n->data.mapping.pairs.start; q < p; q++) {
            yaml_node_t *k2 = yaml_document_get_node(w->doc, q->key);
            if (k2->type == YAML_SCALAR_NODE &&
                strcmp((char *)k2->data.scalar.value, (char *)k->data.scalar.value) == 0)
                return nw_err_set(w->err, NW_EINVAL, prefix, "%s:%u: %s%s%s: duplicate key",
                                  w->name, line, prefix, *prefix ? "." : "",
                                  (char *)k->data.scalar.value);
        }
        char path[256];
        int len = snprintf(path, sizeof path, "%s%s%s", prefix, *prefix ? "." : "",
                           (char *)k->data.scalar.value);
        if (len < 0 || (size_t)len >= sizeof path)
            return nw_err_set(w->err, NW_EINVAL, prefix, "%s:%u: key too long", w->name, line);
        nw_rc_t rc = walk_value(w, path, v, line);
        if (rc != NW_OK)
            return rc;
    }
    return NW_OK;
}

/* line: where the key is (errors point at the key, as editors show it) */
static NW_MUST_USE nw_rc_t walk_value(walk_t *w, const char *path, yaml_node_t *n, unsigned line)
{
    char where[300];
    snprintf(where, sizeof where, "%s:%u: ", w->name, line);
    rkey_t rk;
    int found = 0;
    /* a null value keeps the default: it creates no class either */
    nw_rc_t rrc = resolve(w->cfg, path, !is_null_scalar(n), &rk, &found, where, w->err);
    if (rrc != NW_OK)
        return rrc;
    const key_t_ *k = found ? &rk.k : NULL;
    if (!k) {
        if (!is_section(path))
            return nw_err_set(w->err, NW_EINVAL, path, "%s%s: unknown key", where, path);
        const char *cname = path + strlen(CLASS_PREFIX);
        if (strncmp(path, CLASS_PREFIX, strlen(CLASS_PREFIX)) == 0 && !strchr(cname, '.') &&
            !valid_class_name(cname, strlen(cname)))
            return nw_err_set(w->err, NW_EINVAL, path,
                              "%s%s: a class name is a DNS label (at most 63 lower-case letters, "
                              "digits and '-', starting and ending with a letter or digit)",
                              where, path);
        if (is_null_scalar(n))
            return NW_OK;
        if (n->type != YAML_MAPPING_NODE)
            return nw_err_set(w->err, NW_EINVAL, path, "%s%s: expected a mapping, got %s", where,
                              path, node_kind(n));
        return walk_mapping(w, path, n);
    }
    if (is_null_scalar(n) && k->type != T_STR)
        return NW_OK; /* null keeps the default */
    if (k->type == T_LIST) {
        if (n->type != YAML_SEQUENCE_NODE)
            return nw_err_set(w->err, NW_EINVAL, path, "%s%s: expected a list of strings, got %s",
                              where, path, node_kind(n));
        nw_strlist_t *l = (nw_strlist_t *)rk.base;
        list_free(l);
        for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top;
             it++) {
            yaml_node_t *e = yaml_document_get_node(w->doc, *it);
            if (e->type != YAML_SCALAR_NODE) {
                snprintf(where, sizeof where, "%s:%u: ", w->name, (unsigned)e->start_mark.line + 1);
                return nw_err_set(w->err, NW_EINVAL, path, "%s%s[%td]: expected a string, got %s",
                                  where, path, it - n->data.sequence.items.start, node_kind(e));
            }
            if (list_push(l, (char *)e->data.scalar.value, e->data.scalar.length) != NW_OK)
                return NW_ENOMEM;
        }
        return NW_OK;
    }
    if (n->type != YAML_SCALAR_NODE)
        return nw_err_set(w->err, NW_EINVAL, path, "%s%s: expected %s, got %s", where, path,
                          type_name(k->type), node_kind(n));
    const char *val = (const char *)n->data.scalar.value;
    if (strlen(val) != n->data.scalar.length)
        return nw_err_set(w->err, NW_EINVAL, path, "%s%s: value contains a NUL byte", where, path);
    /* quoted scalars are strings: "8" is not an integer, "true" is not a boolean */
    if (k->type != T_STR && k->type != T_DUR && n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return nw_err_set(w->err, NW_EINVAL, path, "%s%s: expected %s, got the string \"%s\"",
                          where, path, type_name(k->type), val);
    if (k->type == T_STR && is_null_scalar(n))
        val = "";
    return set_scalar(rk.base, k, val, 0, where, w->err);
}

nw_rc_t nw_config_apply_yaml(nw_config_t *cfg, const char *name, const char *text, size_t len,
                             nw_err_t *err)
{
    yaml_parser_t parser;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&parser))
        return NW_ENOMEM;
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    nw_rc_t rc = NW_OK;
    if (!yaml_parser_load(&parser, &doc)) {
        rc = nw_err_set(err, NW_EPARSE, "", "%s:%zu:%zu: YAML syntax error: %s %s", name,
                        parser.problem_mark.line + 1, parser.problem_mark.column + 1,
                        parser.problem ? parser.problem : "malformed",
                        parser.context ? parser.context : "");
        yaml_parser_delete(&parser);
        return rc;
    }
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (root && !is_null_scalar(root)) {
        if (root->type != YAML_MAPPING_NODE) {
            rc = nw_err_set(err, NW_EINVAL, "", "%s:%zu: the configuration must be a mapping", name,
                            root->start_mark.line + 1);
        } else {
            walk_t w = {cfg, &doc, name, err};
            rc = walk_mapping(&w, "", root);
        }
    }
    yaml_document_delete(&doc);
    if (rc == NW_OK) {
        /* a second document is a mistake, not something to ignore */
        yaml_document_t doc2;
        if (yaml_parser_load(&parser, &doc2)) {
            if (yaml_document_get_root_node(&doc2))
                rc = nw_err_set(err, NW_EINVAL, "", "%s: more than one YAML document", name);
            yaml_document_delete(&doc2);
        }
    }
    yaml_parser_delete(&parser);
    return rc;
}

nw_rc_t nw_config_apply_file(nw_config_t *cfg, const char *path, nw_err_t *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return nw_err_set(err, NW_EIO, "", "%s: %s", path, strerror(errno));
    size_t len = 0;
    char *buf = nw_file_read_stream(f, ((size_t)1 << 22) - 1, &len);
    int e = errno;
    fclose(f);
    if (!buf && e == EFBIG)
        return nw_err_set(err, NW_EIO, "", "%s: larger than 4 MiB", path);
    if (!buf && e == ENOMEM)
        return NW_ENOMEM;
    if (!buf)
        return nw_err_set(err, NW_EIO, "", "%s: read error", path);
    nw_rc_t rc = nw_config_apply_yaml(cfg, path, buf, len, err);
    free(buf);
    return rc;
}

nw_rc_t nw_config_set(nw_config_t *cfg, const char *key, const char *value, nw_err_t *err)
{
    char where[8] = "--";
    rkey_t rk;
    int found = 0;
    nw_rc_t rc = resolve(cfg, key, 1, &rk, &found, where, err);
    if (rc != NW_OK)
        return rc;
    if (!found)
        return nw_err_set(err, NW_EINVAL, key, "--%s: unknown flag", key);
    return set_scalar(rk.base, &rk.k, value, 1, where, err);
}

/* ---- validation ------------------------------------------------------------------ */

static bool valid_listen(const char *s)
{
    const char *colon = strrchr(s, ':');
    if (!colon || colon == s)
        return false;
    if (s[0] == '[' && colon[-1] != ']')
        return false;
    int64_t port;
    if (parse_int(colon + 1, &port) != 0 || port < 0 || port > 65535)
        return false;
    return true;
}

int64_t nw_config_pod_density(const char *v)
{
    if (!v || strcmp(v, "eni-limited") == 0)
        return 0;
    if (strcmp(v, "kubelet-default") == 0)
        return NW_KUBELET_DEFAULT_MAX_PODS;
    return -1;
}

nw_rc_t nw_config_validate(const nw_config_t *cfg, nw_err_t *err)
{
    if (!valid_listen(cfg->webhook.listen))
        return nw_err_set(
            err, NW_EINVAL, "webhook.listen",
            "webhook.listen: expected ADDR:PORT (port 0..65535; 0 picks a free port), got \"%s\"",
            cfg->webhook.listen);
    if (nw_log_level_parse(cfg->log.level) < 0)
        return nw_err_set(err, NW_EINVAL, "log.level",
                          "log.level: expected debug, info, warn or error, got \"%s\"",
                          cfg->log.level);
    if (nw_config_pod_density(cfg->settings.podDensity) < 0)
        return nw_err_set(
            err, NW_EINVAL, "settings.podDensity",
            "settings.podDensity: expected eni-limited or kubelet-default, got \"%s\"",
            cfg->settings.podDensity);
    if (strcmp(cfg->settings.minValuesPolicy, "Strict") != 0 &&
        strcmp(cfg->settings.minValuesPolicy, "BestEffort") != 0)
        return nw_err_set(err, NW_EINVAL, "settings.minValuesPolicy",
                          "settings.minValuesPolicy: expected Strict or BestEffort, got \"%s\"",
                          cfg->settings.minValuesPolicy);
    if (strcmp(cfg->settings.preferencePolicy, "Respect") != 0 &&
        strcmp(cfg->settings.preferencePolicy, "Ignore") != 0)
        return nw_err_set(err, NW_EINVAL, "settings.preferencePolicy",
                          "settings.preferencePolicy: expected Respect or Ignore, got \"%s\"",
                          cfg->settings.preferencePolicy);
    if (strcmp(cfg->gpu.mode, "enforce") != 0 && strcmp(cfg->gpu.mode, "warn") != 0)
        return nw_err_set(err, NW_EINVAL, "gpu.mode",
                          "gpu.mode: expected enforce or warn, got \"%s\"", cfg->gpu.mode);
    const char *e = cfg->gpu.taintEffect;
    if (strcmp(e, "NoSchedule") != 0 && strcmp(e, "PreferNoSchedule") != 0 &&
        strcmp(e, "NoExecute") != 0)
        return nw_err_set(err, NW_EINVAL, "gpu.taint.effect",
                          "gpu.taint.effect: expected NoSchedule, PreferNoSchedule or NoExecute, "
                          "got \"%s\"",
                          e);
    if (!*cfg->webhook.tlsCert || !*cfg->webhook.tlsKey)
        return nw_err_set(err, NW_EINVAL, "webhook.tlsCert",
                          "webhook.tlsCert and webhook.tlsKey must be set");
    if (cfg->webhook.requestTimeout_ns < NW_NS_PER_SEC_ / 1000)
        return nw_err_set(err, NW_EINVAL, "webhook.requestTimeout",
                          "webhook.requestTimeout: must be at least 1ms");
    if (cfg->webhook.idleTimeout_ns < NW_NS_PER_SEC_)
        return nw_err_set(err, NW_EINVAL, "webhook.idleTimeout",
                          "webhook.idleTimeout: must be at least 1s");
    if (cfg->webhook.maxInflightBodyBytes < cfg->webhook.maxBodyBytes)
        return nw_err_set(err, NW_EINVAL, "webhook.maxInflightBodyBytes",
                          "webhook.maxInflightBodyBytes: must be at least webhook.maxBodyBytes "
                          "(%lld)",
                          (long long)cfg->webhook.maxBodyBytes);
    if (cfg->settings.batchMaxDuration_ns < cfg->settings.batchIdleDuration_ns)
        return nw_err_set(err, NW_EINVAL, "settings.batchMaxDuration",
                          "settings.batchMaxDuration: must not be shorter than "
                          "settings.batchIdleDuration");
    nw_feature_gates_t fg;
    return nw_config_feature_gates(cfg->settings.featureGates, &fg, 0, err);
}

/* ---- feature gates (Karpenter's --feature-gates / FEATURE_GATES) ---------------------- */

/* kubernetes-sigs/karpenter pkg/operator/options/options.go: the gates and their defaults;
 * implemented: whether nodewarden changes behaviour with the gate */
static const struct {
    const char *name;
    int def, implemented;
} gates[] = {
    {"NodeRepair", 0, 1},  {"ReservedCapacity", 1, 1}, {"SpotToSpotConsolidation", 0, 1},
    {"NodeOverlay", 0, 0}, {"StaticCapacity", 0, 1},   {"CapacityBuffer", 0, 0},
};

/* strconv.ParseBool's spellings (cliflag's MapStringBool parses with it) */
static int parse_go_bool(const char *s, size_t n, int *out)
{
    static const char *const t[] = {"1", "t", "T", "TRUE", "true", "True"};
    static const char *const f[] = {"0", "f", "F", "FALSE", "false", "False"};
    for (int i = 0; i < 6; i++) {
        if (strlen(t[i]) == n && strncmp(s, t[i], n) == 0) {
            *out = 1;
            return 0;
        }
        if (strlen(f[i]) == n && strncmp(s, f[i], n) == 0) {
            *out = 0;
            return 0;
        }
    }
    return -1;
}

nw_rc_t nw_config_feature_gates(const char *s, nw_feature_gates_t *out, int warn, nw_err_t *err)
{
    memset(out, 0, sizeof *out);
    out->reserved_capacity = 1;
    out->spot_to_spot = -1;
    const char *p = s ? s : "";
    while (*p) {
        const char *end = strchr(p, ',');
        const char *a = p, *b = end ? end : p + strlen(p);
        p = end ? end + 1 : b;
        while (a < b && (*a == ' ' || *a == '\t'))
            a++;
        while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
            b--;
        if (a == b)
            continue;
        const char *eq = memchr(a, '=', (size_t)(b - a));
        int v = 0;
        if (!eq)
            return nw_err_set(err, NW_EINVAL, "settings.featureGates",
                              "settings.featureGates: missing bool value for %.*s", (int)(b - a),
                              a);
        int nl = (int)(eq - a);
        if (parse_go_bool(eq + 1, (size_t)(b - eq - 1), &v) != 0)
            return nw_err_set(err, NW_EINVAL, "settings.featureGates",
                              "settings.featureGates: invalid value of %.*s: \"%.*s\" (true or "
                              "false)",
                              nl, a, (int)(b - eq - 1), eq + 1);
        char name[64];
        snprintf(name, sizeof name, "%.*s", nl, a);
        size_t g = 0;
        while (g < sizeof gates / sizeof gates[0] && strcmp(gates[g].name, name) != 0)
            g++;
        if (g == sizeof gates / sizeof gates[0]) {
            if (warn) /* Karpenter ignores a gate it does not know, silently */
                nw_log_warn("config", "settings.featureGates: unknown feature gate, ignored",
                            NW_LS("gate", name));
            continue;
        }
        if (strcmp(name, "SpotToSpotConsolidation") == 0)
            out->spot_to_spot = v;
        else if (strcmp(name, "NodeRepair") == 0)
            out->node_repair = v;
        else if (strcmp(name, "ReservedCapacity") == 0)
            out->reserved_capacity = v;
        else if (strcmp(name, "StaticCapacity") == 0)
            out->static_capacity = v;
        else if (v && !gates[g].implemented) {
            out->unimplemented++;
            if (warn)
                nw_log_warn("config",
                            "settings.featureGates: nodewarden does not implement this feature; "
                            "the gate changes nothing",
                            NW_LS("gate", name));
        }
    }
    return NW_OK;
}

/* ---- flags ------------------------------------------------------------------------- */

static const char *resolve_flag(const char *name)
{
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (strcmp(aliases[i].alias, name) == 0)
            return aliases[i].key;
    return name;
}

/* Split argv[i] into name/value; consumes argv[i+1] if needed. Returns args used, 0 on error. */
static int split_flag(int argc, char **argv, int i, char *name, size_t nsz, const char **value,
                      nw_err_t *err)
{
    const char *a = argv[i];
    if (strncmp(a, "--", 2) != 0 || !a[2]) {
        nw_err_set(err, NW_EINVAL, "", "unexpected argument \"%s\"", a);
        return 0;
    }
    a += 2;
    const char *eq = strchr(a, '=');
    size_t n = eq ? (size_t)(eq - a) : strlen(a);
    if (n >= nsz) {
        nw_err_set(err, NW_EINVAL, "", "--%.40s...: unknown flag", a);
        return 0;
    }
    memcpy(name, a, n);
    name[n] = '\0';
    if (eq) {
        *value = eq + 1;
        return 1;
    }
    if (i + 1 >= argc) {
        nw_err_set(err, NW_EINVAL, "", "--%s: needs a value", name);
        return 0;
    }
    *value = argv[i + 1];
    return 2;
}

nw_rc_t nw_config_load_args(nw_config_t *cfg, int argc, char **argv, nw_err_t *err)
{
    nw_rc_t rc = nw_config_defaults(cfg);
    if (rc != NW_OK)
        return rc;
    char name[128];
    const char *value;
    /* pass 1: the config file */
    for (int i = 1; i < argc;) {
        int used = split_flag(argc, argv, i, name, sizeof name, &value, err);
        if (!used)
            return NW_EINVAL;
        if (strcmp(name, "config") == 0 && (rc = nw_config_apply_file(cfg, value, err)) != NW_OK)
            return rc;
        i += used;
    }
    /* pass 2: every other flag, in order */
    for (int i = 1; i < argc;) {
        int used = split_flag(argc, argv, i, name, sizeof name, &value, err);
        if (strcmp(name, "config") != 0 &&
            (rc = nw_config_set(cfg, resolve_flag(name), value, err)) != NW_OK)
            return rc;
        i += used;
    }
    if ((rc = nw_config_validate(cfg, err)) != NW_OK)
        return rc;
    /* the SpotToSpotConsolidation gate, when given, sets
     * scaler.disruption.spotToSpotConsolidation */
    nw_feature_gates_t fg;
    if ((rc = nw_config_feature_gates(cfg->settings.featureGates, &fg, 1, err)) != NW_OK)
        return rc;
    if (fg.spot_to_spot >= 0)
        cfg->scaler.disruption.spotToSpot = fg.spot_to_spot;
    cfg->settings.nodeRepair = fg.node_repair;
    cfg->settings.staticCapacity = fg.static_capacity;
    cfg->settings.reservedCapacity = fg.reserved_capacity;
    return NW_OK;
}

nw_rc_t nw_config_get(const nw_config_t *cfg, const char *key, char *buf, size_t len)
{
    rkey_t rk;
    int found = 0;
    /* create 0: nothing in cfg changes */
    if (!len || resolve((nw_config_t *)cfg, key, 0, &rk, &found, "", NULL) != NW_OK || !found)
        return NW_ENOTFOUND;
    const key_t_ *k = &rk.k;
    const char *base = rk.base;
    buf[0] = '\0';
    switch (k->type) {
    case T_STR:
        snprintf(buf, len, "%s", *(char *const *)base ? *(char *const *)base : "");
        break;
    case T_INT:
        snprintf(buf, len, "%lld", (long long)*(const int64_t *)base);
        break;
    case T_FLOAT:
        /* base points at a double field (offsetof) */
        // cppcheck-suppress invalidPointerCast
        snprintf(buf, len, "%g", *(const double *)base);
        break;
    case T_BOOL:
        snprintf(buf, len, "%s", *(const int *)base ? "true" : "false");
        break;
    case T_DUR:
        snprintf(buf, len, "%lldns", (long long)*(const int64_t *)base);
        break;
    case T_LIST: {
        const nw_strlist_t *l = (const nw_strlist_t *)base;
        size_t off = 0;
        for (size_t i = 0; i < l->n && off < len; i++) {
            int n = snprintf(buf + off, len - off, "%s%s", i ? "," : "", l->v[i]);
            if (n < 0)
                break;
            off += (size_t)n;
        }
        break;
    }
    }
    return NW_OK;
}

void nw_config_print_keys(void *file)
{
    FILE *f = file;
    for (size_t i = 0; i < NKEYS; i++) {
        const char *t = keys[i].type == T_STR     ? "string"
                        : keys[i].type == T_INT   ? "int"
                        : keys[i].type == T_FLOAT ? "number"
                        : keys[i].type == T_BOOL  ? "bool"
                        : keys[i].type == T_DUR   ? "duration"
                                                  : "list";
        fprintf(f, "  --%-38s %-8s (default \"%s\")\n", keys[i].path, t, keys[i].def);
    }
    for (size_t c = 0; c < sizeof default_classes / sizeof default_classes[0]; c++)
        for (size_t i = 0; i < NCFIELDS; i++) {
            char path[128];
            snprintf(path, sizeof path, CLASS_PREFIX "%s.%s", default_classes[c].name,
                     class_fields[i].path);
            fprintf(f, "  --%-38s %-8s (default \"%s\")\n", path,
                    class_fields[i].type == T_BOOL   ? "bool"
                    : class_fields[i].type == T_LIST ? "list"
                    : class_fields[i].type == T_INT  ? "int"
                    : class_fields[i].type == T_DUR  ? "duration"
                                                     : "string",
                    default_classes[c].v[i]);
        }
    fprintf(f, "  --%-38s (a class of your own: any DNS-label name, the fields above)\n",
            CLASS_PREFIX "<name>.<field>");
}
