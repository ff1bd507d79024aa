/*
 * admission/gpu_policy.c — the accelerator isolation policy: its default classes, the
 * policy object (init, cleanup, class lookup by name) and the policy built from the
 * configuration's `gpu:` block. See admission/gpu_policy.h and admission/gpu.h.
 */
#include "admission/gpu_policy.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission/gpu_int.h"
#include "common/json.h"
#include "common/log.h"

/* The default classes. Families: EC2 accelerated computing instance families by
 * accelerator (NVIDIA GPUs; AMD Radeon Pro V520 in g4ad; Inferentia and Trainium;
 * Habana Gaudi in dl1; Qualcomm AI 100 in dl2q; AMD Xilinx U30 media accelerators in
 * vt1). Resources: the device plugins' extended resources (NVIDIA: whole GPUs, MIG slices
 * nvidia.com/mig-<profile>, time-sliced nvidia.com/gpu.shared; AWS Neuron: devices and
 * cores; Qualcomm's qaic; the Xilinx FPGA plugin's xilinx.com/fpga-<shell>, the U30 shells
 * xilinx_u30_*). Instance requirements: the labels of aws/karpenter-provider-aws
 * pkg/providers/instancetype/types.go (GPUs by instance-gpu-manufacturer, Neuron devices
 * and other inference accelerators by instance-accelerator-manufacturer); Karpenter gives
 * vt1 no device label, so the xilinx class knows its types by family only. Uncounted
 * families: EC2's DescribeInstanceTypes reports a GPU count of 0 for the fractional-GPU
 * families g6f and gr6f (an L4 partitioned by vGPU) and for p5.4xlarge
 * (aws/karpenter-provider-aws issues 8324 and 8368), so Karpenter's instance-gpu-count
 * label misses them. */
typedef struct {
    const char *name, *taint_key, *taint_value, *label_value;
    const char *resources[4];
    const char *families[24];
    const char *req_key;
    const char *req_values[2];
    const char *uncounted[4];
    const char *dra_drivers[2];
    const char *dra_classes[3];
} default_class_t;

static const default_class_t default_classes[] = {
    {"nvidia",
     "gpu",
     "true",
     "nvidia-gpu",
     {"nvidia.com/gpu", "nvidia.com/mig-*", "nvidia.com/gpu.shared"},
     {"g3", "g3s", "g4dn", "g5",  "g5g",  "g6", "g6e", "g6f",  "gr6",     "gr6f",     "g7e",
      "p2", "p3",  "p3dn", "p4d", "p4de", "p5", "p5e", "p5en", "p6-b200", "p6e-gb200"},
     K_GPU_MANUFACTURER,
     {"nvidia"},
     {"g6f", "gr6f", "p5"},
     {"gpu.nvidia.com"},
     {"gpu.nvidia.com", "mig.nvidia.com"}},
    {"amd",
     "amd.com/gpu",
     "",
     "amd-gpu",
     {"amd.com/gpu"},
     {"g4ad"},
     K_GPU_MANUFACTURER,
     {"amd"},
     {NULL},
     {"gpu.amd.com"},
     {"gpu.amd.com"}},
    {"neuron",
     "aws.amazon.com/neuron",
     "",
     "aws-neuron",
     {"aws.amazon.com/neuron", "aws.amazon.com/neuroncore", "aws.amazon.com/neurondevice"},
     {"inf1", "inf2", "trn1", "trn1n", "trn2", "trn2u"},
     K_ACCEL_MANUFACTURER,
     {"aws"},
     {NULL},
     {"neuron.aws.com"},
     {"neuron.aws.com"}},
    {"gaudi",
     "habana.ai/gaudi",
     "",
     "habana-gaudi",
     {"habana.ai/gaudi"},
     {"dl1"},
     K_GPU_MANUFACTURER,
     {"habana"},
     {NULL},
     {"gaudi.intel.com"},
     {"gaudi.intel.com"}},
    {"qualcomm",
     "qualcomm.com/qaic",
     "",
     "qualcomm-ai100",
     {"qualcomm.com/qaic"},
     {"dl2q"},
     K_ACCEL_MANUFACTURER,
     {"qualcomm"},
     {NULL},
     {NULL},
     {NULL}},
    {"xilinx",
     "xilinx.com/fpga",
     "",
     "xilinx-u30",
     {"xilinx.com/fpga-xilinx_u30*"},
     {"vt1"},
     "",
     {NULL},
     {NULL},
     {NULL},
     {NULL}},
};

static size_t count_strs(const char *const *v, size_t max)
{
    size_t n = 0;
    while (n < max && v[n])
        n++;
    return n;
}

/* ---- policy ----------------------------------------------------------------- */

nw_rc_t nw_gpu_policy_set_str(char **field, const char *s)
{
    char *c = strdup(s ? s : "");
    if (!c)
        return NW_ENOMEM;
    free(*field);
    *field = c;
    return NW_OK;
}

static void free_list(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

nw_rc_t nw_gpu_policy_set_list(char ***list, size_t *n, const char *const *v, size_t nv)
{
    char **c = calloc(nv ? nv : 1, sizeof *c);
    if (!c)
        return NW_ENOMEM;
    for (size_t i = 0; i < nv; i++) {
        c[i] = strdup(v[i]);
        if (!c[i]) {
            free_list(c, i);
            return NW_ENOMEM;
        }
    }
    free_list(*list, *n);
    *list = c;
    *n = nv;
    return NW_OK;
}

void nw_gpu_policy_class_cleanup(nw_accel_class_t *c)
{
    free(c->name);
    free(c->taint_key);
    free(c->taint_value);
    free(c->label_value);
    free_list(c->resources, c->nresources);
    free_list(c->families, c->nfamilies);
    free(c->req_key);
    free_list(c->req_values, c->nreq_values);
    free_list(c->uncounted, c->nuncounted);
    free_list(c->dra_drivers, c->ndra_drivers);
    free_list(c->dra_classes, c->ndra_classes);
    memset(c, 0, sizeof *c);
}

static NW_MUST_USE nw_rc_t class_from_default(nw_accel_class_t *c, const default_class_t *d)
{
    memset(c, 0, sizeof *c);
    if (nw_gpu_policy_set_str(&c->name, d->name) ||
        nw_gpu_policy_set_str(&c->taint_key, d->taint_key) ||
        nw_gpu_policy_set_str(&c->taint_value, d->taint_value) ||
        nw_gpu_policy_set_str(&c->label_value, d->label_value) ||
        nw_gpu_policy_set_list(&c->resources, &c->nresources, d->resources,
                               count_strs(d->resources, 4)) ||
        nw_gpu_policy_set_list(&c->families, &c->nfamilies, d->families,
                               count_strs(d->families, 24)) ||
        nw_gpu_policy_set_str(&c->req_key, d->req_key) ||
        nw_gpu_policy_set_list(&c->req_values, &c->nreq_values, d->req_values,
                               count_strs(d->req_values, 2)) ||
        nw_gpu_policy_set_list(&c->uncounted, &c->nuncounted, d->uncounted,
                               count_strs(d->uncounted, 4)) ||
        nw_gpu_policy_set_list(&c->dra_drivers, &c->ndra_drivers, d->dra_drivers,
                               count_strs(d->dra_drivers, 2)) ||
        nw_gpu_policy_set_list(&c->dra_classes, &c->ndra_classes, d->dra_classes,
                               count_strs(d->dra_classes, 3)))
        return NW_ENOMEM;
    c->aware_disruption = true;
    c->rollout_max = NW_GPU_ROLLOUT_MAX_DEFAULT;
    c->rollout_timeout_ns = NW_GPU_ROLLOUT_TIMEOUT_DEFAULT_NS;
    return NW_OK;
}

nw_rc_t nw_gpu_policy_init(nw_gpu_policy_t *p, const char *self_namespace)
{
    memset(p, 0, sizeof *p);
    p->enabled = true;
    p->taint_effect = NW_TAINT_NO_SCHEDULE;
    const char *exempt[2] = {"kube-system", self_namespace};
    size_t nexempt =
        (self_namespace && *self_namespace && strcmp(self_namespace, "kube-system")) ? 2 : 1;
    if (nw_gpu_policy_set_str(&p->label_key, "node.accelerator") ||
        nw_gpu_policy_set_list(&p->exempt_namespaces, &p->nexempt, exempt, nexempt)) {
        nw_gpu_policy_cleanup(p);
        return NW_ENOMEM;
    }
    for (size_t i = 0; i < sizeof default_classes / sizeof default_classes[0]; i++) {
        p->nclasses++;
        if (class_from_default(&p->classes[i], &default_classes[i]) != NW_OK) {
            nw_gpu_policy_cleanup(p);
            return NW_ENOMEM;
        }
    }
    return NW_OK;
}

void nw_gpu_policy_cleanup(nw_gpu_policy_t *p)
{
    if (!p)
        return;
    free(p->label_key);
    free_list(p->exempt_namespaces, p->nexempt);
    for (size_t i = 0; i < p->nclasses; i++)
        nw_gpu_policy_class_cleanup(&p->classes[i]);
    memset(p, 0, sizeof *p);
}

nw_accel_class_t *nw_gpu_policy_class(nw_gpu_policy_t *p, const char *name)
{
    for (size_t i = 0; i < p->nclasses; i++)
        if (strcmp(p->classes[i].name, name) == 0)
            return &p->classes[i];
    return NULL;
}

/* ---- the policy from the configuration ---- */

/* One class's settings as the configuration names them. */
typedef struct {
    const char *name; /* class name */
    char prefix[96];  /* "gpu" or "gpu.classes.amd": the config keys' prefix */
    const char *taint_key, *taint_value, *label_value, *req_key;
    const nw_strlist_t *resources, *families, *req_values;
    const nw_strlist_t *uncounted;
    const nw_strlist_t *dra_drivers, *dra_classes;
    int aware;
    int64_t rollout_max;
    int64_t rollout_timeout;
} class_cfg_t;

_Static_assert(NW_CONFIG_MAX_ACCEL_CLASSES + 1 <= NW_GPU_MAX_CLASSES,
               "every configured class must fit the policy");

static NW_MUST_USE nw_rc_t oom(nw_gpu_policy_t *out, nw_err_t *err)
{
    nw_gpu_policy_cleanup(out);
    return nw_err_set(err, NW_ENOMEM, "gpu", "out of memory");
}

static NW_MUST_USE nw_rc_t bad(nw_gpu_policy_t *out, nw_err_t *err, const char *field,
                               const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static NW_MUST_USE nw_rc_t bad(nw_gpu_policy_t *out, nw_err_t *err, const char *field,
                               const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    nw_gpu_policy_cleanup(out);
    return nw_err_set(err, NW_EINVAL, field, "%s", msg);
}

/* does resource name r (itself maybe a "prefix*" entry) overlap class k's resources */
static bool overlaps(const nw_accel_class_t *k, const char *r)
{
    size_t n = strlen(r);
    if (n && r[n - 1] == '*') {
        for (size_t i = 0; i < k->nresources; i++)
            if (strncmp(k->resources[i], r, n - 1) == 0)
                return true;
    }
    return nw_gpu_class_has_resource(k, r);
}

/* every entry of list (the class's key `what`) is an instance family name */
static NW_MUST_USE nw_rc_t check_families(nw_gpu_policy_t *out, nw_err_t *err, const class_cfg_t *s,
                                          const nw_strlist_t *list, const char *what)
{
    char f[128];
    for (size_t i = 0; i < list->n; i++) {
        const char *v = list->v[i];
        bool ok = *v != '\0';
        for (const char *ch = v; *ch; ch++)
            ok &= (*ch >= 'a' && *ch <= 'z') || (*ch >= '0' && *ch <= '9') || *ch == '-';
        if (!ok)
            return snprintf(f, sizeof f, "%s.%s", s->prefix, what),
                   bad(out, err, f,
                       "%s[%zu]: \"%s\" is not an instance family (lower-case letters, digits "
                       "and '-', as g5 or inf2)",
                       f, i, v);
    }
    return NW_OK;
}

/* no entry of list (the class's key `what`) is a family of the class o before it */
static NW_MUST_USE nw_rc_t other_families(nw_gpu_policy_t *out, nw_err_t *err, const class_cfg_t *s,
                                          const nw_accel_class_t *o, const nw_strlist_t *list,
                                          const char *what)
{
    char f[128];
    for (size_t i = 0; i < list->n; i++)
        if (nw_gpu_in_list(o->families, o->nfamilies, list->v[i]))
            return snprintf(f, sizeof f, "%s.%s", s->prefix, what),
                   bad(out, err, f, "%s[%zu]: %s is also an instance family of the %s class", f, i,
                       list->v[i], o->name);
    return NW_OK;
}

/* every entry of list (the class's key `what`) is a DNS subdomain (RFC 1123), what a DRA
 * driver name and a DeviceClass name are: lower-case letters, digits, '-' and '.', at most
 * 253 characters, each part starting and ending with a letter or digit */
static NW_MUST_USE nw_rc_t check_dra_names(nw_gpu_policy_t *out, nw_err_t *err,
                                           const class_cfg_t *s, const nw_strlist_t *list,
                                           const char *what)
{
    char f[128];
    for (size_t i = 0; i < list->n; i++) {
        const char *v = list->v[i];
        size_t n = strlen(v);
        bool ok = n > 0 && n <= 253;
        for (size_t k = 0; ok && k < n; k++) {
            char ch = v[k];
            bool alnum = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
            bool edge = k == 0 || k == n - 1 || v[k - 1] == '.' || v[k + 1] == '.';
            ok = alnum || (!edge && ch == '-') ||
                 (ch == '.' && k > 0 && k < n - 1 && v[k - 1] != '.');
        }
        for (size_t j = 0; ok && j < i; j++)
            if (strcmp(list->v[j], v) == 0)
                return snprintf(f, sizeof f, "%s.%s", s->prefix, what),
                       bad(out, err, f, "%s[%zu]: \"%s\" is listed twice", f, i, v);
        if (!ok)
            return snprintf(f, sizeof f, "%s.%s", s->prefix, what),
                   bad(out, err, f,
                       "%s[%zu]: \"%s\" is not a DNS subdomain (lower-case letters, digits, '-' "
                       "and '.', as gpu.nvidia.com)",
                       f, i, v);
    }
    return NW_OK;
}

/* no entry of list (the class's key `what`) is among the names v[0..n) of class oname */
static NW_MUST_USE nw_rc_t other_dra(nw_gpu_policy_t *out, nw_err_t *err, const class_cfg_t *s,
                                     char *const *v, size_t n, const char *oname,
                                     const nw_strlist_t *list, const char *what, const char *noun)
{
    char f[128];
    for (size_t i = 0; i < list->n; i++)
        if (nw_gpu_in_list(v, n, list->v[i]))
            return snprintf(f, sizeof f, "%s.%s", s->prefix, what),
                   bad(out, err, f, "%s[%zu]: %s is also %s of the %s class", f, i, list->v[i],
                       noun, oname);
    return NW_OK;
}

/* the class's DRA drivers and DeviceClass names: DNS subdomains, none another class's */
static NW_MUST_USE nw_rc_t check_dra(nw_gpu_policy_t *out, nw_err_t *err, const class_cfg_t *s,
                                     size_t idx)
{
    nw_rc_t rc;
    if ((rc = check_dra_names(out, err, s, s->dra_drivers, "dra.drivers")) != NW_OK ||
        (rc = check_dra_names(out, err, s, s->dra_classes, "dra.deviceClasses")) != NW_OK)
        return rc;
    for (size_t j = 0; j < idx; j++) {
        const nw_accel_class_t *o = &out->classes[j];
        if ((rc = other_dra(out, err, s, o->dra_drivers, o->ndra_drivers, o->name, s->dra_drivers,
                            "dra.drivers", "a DRA driver")) != NW_OK ||
            (rc = other_dra(out, err, s, o->dra_classes, o->ndra_classes, o->name, s->dra_classes,
                            "dra.deviceClasses", "a DeviceClass")) != NW_OK)
            return rc;
    }
    return NW_OK;
}

/* the uncounted families are the class's families too: append those not listed */
static NW_MUST_USE nw_rc_t join_uncounted(nw_accel_class_t *c)
{
    for (size_t i = 0; i < c->nuncounted; i++) {
        if (nw_gpu_in_list(c->families, c->nfamilies, c->uncounted[i]))
            continue;
        char **v = realloc(c->families, (c->nfamilies + 1) * sizeof *v);
        if (!v)
            return NW_ENOMEM;
        c->families = v;
        if (!(v[c->nfamilies] = strdup(c->uncounted[i])))
            return NW_ENOMEM;
        c->nfamilies++;
    }
    return NW_OK;
}

/* fill class c from its settings; checks against the classes before it */
static NW_MUST_USE nw_rc_t load_class(nw_gpu_policy_t *out, size_t idx, const class_cfg_t *s,
                                      nw_err_t *err)
{
    char f[96];
    nw_accel_class_t *c = &out->classes[idx];
    if (!s->taint_key || !*s->taint_key)
        return snprintf(f, sizeof f, "%s.taint.key", s->prefix),
               bad(out, err, f, "%s: the taint key of the %s accelerator class must be set", f,
                   s->name);
    if (!s->label_value || !*s->label_value)
        return snprintf(f, sizeof f, "%s.nodeLabel.value", s->prefix),
               bad(out, err, f, "%s: the node label value of the %s accelerator class must be set",
                   f, s->name);
    if (s->resources->n == 0)
        return snprintf(f, sizeof f, "%s.resources", s->prefix),
               bad(out, err, f, "%s: the %s accelerator class needs at least one resource", f,
                   s->name);
    for (size_t i = 0; i < s->resources->n; i++) {
        const char *r = s->resources->v[i], *star = strchr(r, '*');
        if (!strchr(r, '/') || (star && star[1]) || r[0] == '/' || r[0] == '*')
            return snprintf(f, sizeof f, "%s.resources", s->prefix),
                   bad(out, err, f,
                       "%s[%zu]: \"%s\" is not an extended resource name (domain/name, e.g. "
                       "nvidia.com/gpu; a '*' may only end it, as in nvidia.com/mig-*)",
                       f, i, r);
    }
    nw_rc_t rc = check_families(out, err, s, s->families, "instanceFamilies");
    if (rc == NW_OK)
        rc = check_families(out, err, s, s->uncounted, "uncountedFamilies");
    if (rc != NW_OK)
        return rc;
    bool has_key = s->req_key && *s->req_key, has_vals = s->req_values->n > 0;
    if (has_key != has_vals)
        return snprintf(f, sizeof f, "%s.instanceRequirement.%s", s->prefix,
                        has_key ? "values" : "key"),
               bad(out, err, f,
                   "%s: the instance requirement of the %s accelerator class needs both its key "
                   "and its values",
                   f, s->name);
    if (s->families->n == 0 && s->uncounted->n == 0 && !has_key)
        return snprintf(f, sizeof f, "%s.instanceFamilies", s->prefix),
               bad(out, err, f,
                   "%s: the %s accelerator class needs instance families or an instance "
                   "requirement (instanceRequirement.key and .values) to know its instance types",
                   f, s->name);
    /* a generic pool keeps off a class by the catalog's device count labels
     * (instance-gpu-count, instance-accelerator-count DoesNotExist) when the class's types
     * carry them, else by its instance families (admission/gpu_pool.c) */
    if (s->families->n == 0 && s->uncounted->n == 0 &&
        strncmp(s->req_key, K_GPU_PREFIX, strlen(K_GPU_PREFIX)) != 0 &&
        strncmp(s->req_key, K_ACCEL_PREFIX, strlen(K_ACCEL_PREFIX)) != 0)
        return snprintf(f, sizeof f, "%s.instanceFamilies", s->prefix),
               bad(out, err, f,
                   "%s: the %s accelerator class's instance requirement %s is not one of the "
                   "catalog's device labels (%s*, %s*), so generic NodePools can only be kept "
                   "off its types by family: list its instance families",
                   f, s->name, s->req_key, K_GPU_PREFIX, K_ACCEL_PREFIX);
    if ((rc = check_dra(out, err, s, idx)) != NW_OK)
        return rc;
    for (size_t j = 0; j < idx; j++) {
        const nw_accel_class_t *o = &out->classes[j];
        if (strcmp(o->label_value, s->label_value) == 0)
            return snprintf(f, sizeof f, "%s.nodeLabel.value", s->prefix),
                   bad(out, err, f, "%s: \"%s\" is also the node label value of the %s class", f,
                       s->label_value, o->name);
        for (size_t i = 0; i < s->resources->n; i++)
            if (overlaps(o, s->resources->v[i]))
                return snprintf(f, sizeof f, "%s.resources", s->prefix),
                       bad(out, err, f,
                           "%s: %s is also a resource of the %s class; a resource belongs to one "
                           "class",
                           f, s->resources->v[i], o->name);
        if ((rc = other_families(out, err, s, o, s->families, "instanceFamilies")) != NW_OK ||
            (rc = other_families(out, err, s, o, s->uncounted, "uncountedFamilies")) != NW_OK)
            return rc;
    }
    out->nclasses = idx + 1;
    if (nw_gpu_policy_set_str(&c->name, s->name) ||
        nw_gpu_policy_set_str(&c->taint_key, s->taint_key) ||
        nw_gpu_policy_set_str(&c->taint_value, s->taint_value ? s->taint_value : "") ||
        nw_gpu_policy_set_str(&c->label_value, s->label_value) ||
        nw_gpu_policy_set_str(&c->req_key, s->req_key ? s->req_key : "") ||
        nw_gpu_policy_set_list(&c->resources, &c->nresources, (const char *const *)s->resources->v,
                               s->resources->n) ||
        nw_gpu_policy_set_list(&c->families, &c->nfamilies, (const char *const *)s->families->v,
                               s->families->n) ||
        nw_gpu_policy_set_list(&c->req_values, &c->nreq_values,
                               (const char *const *)s->req_values->v, s->req_values->n) ||
        nw_gpu_policy_set_list(&c->uncounted, &c->nuncounted, (const char *const *)s->uncounted->v,
                               s->uncounted->n) ||
        nw_gpu_policy_set_list(&c->dra_drivers, &c->ndra_drivers,
                               (const char *const *)s->dra_drivers->v, s->dra_drivers->n) ||
        nw_gpu_policy_set_list(&c->dra_classes, &c->ndra_classes,
                               (const char *const *)s->dra_classes->v, s->dra_classes->n) ||
        join_uncounted(c) != NW_OK)
        return oom(out, err);
    c->aware_disruption = s->aware != 0;
    c->rollout_max = (int)s->rollout_max;
    c->rollout_timeout_ns = s->rollout_timeout;
    return NW_OK;
}

/* is resource r listed, as it is, among class s's resources (its "prefix*" patterns do
 * not count: a pattern overlapping another class is a mistake to name, not to mend) */
static bool claimed_by(const class_cfg_t *s, const char *r)
{
    for (size_t i = 0; i < s->resources->n; i++)
        if (strcmp(r, s->resources->v[i]) == 0)
            return true;
    return false;
}

static class_cfg_t other_class(const struct nw_config_accel *a)
{
    class_cfg_t s = {a->name,
                     "",
                     a->taintKey,
                     a->taintValue,
                     a->nodeLabelValue,
                     a->requirementKey,
                     &a->resources,
                     &a->instanceFamilies,
                     &a->requirementValues,
                     &a->uncountedFamilies,
                     &a->draDrivers,
                     &a->draDeviceClasses,
                     a->acceleratorAware,
                     a->rolloutMaxReplacing,
                     a->rolloutReadyTimeout_ns};
    snprintf(s.prefix, sizeof s.prefix, "gpu.classes.%s", a->name);
    return s;
}

nw_rc_t nw_gpu_policy_from_config(const nw_config_t *cfg, const char *self_namespace,
                                  nw_gpu_policy_t *out, nw_err_t *err)
{
    nw_rc_t rc = nw_gpu_policy_init(out, self_namespace);
    if (rc != NW_OK)
        return nw_err_set(err, rc, "gpu", "out of memory");
    out->enabled = cfg->gpu.enabled != 0;
    out->warn_only = cfg->gpu.mode && strcmp(cfg->gpu.mode, "warn") == 0;
    if (!nw_taints_effect_parse(cfg->gpu.taintEffect, &out->taint_effect) ||
        out->taint_effect == NW_TAINT_EFFECT_ANY) {
        nw_gpu_policy_cleanup(out);
        return nw_err_set(err, NW_EINVAL, "gpu.taint.effect",
                          "gpu.taint.effect: expected NoSchedule, PreferNoSchedule or NoExecute");
    }
    if (!cfg->gpu.nodeLabelKey || !*cfg->gpu.nodeLabelKey)
        return bad(out, err, "gpu.nodeLabel.key", "gpu.nodeLabel.key must be set");
    if (nw_gpu_policy_set_str(&out->label_key, cfg->gpu.nodeLabelKey))
        return oom(out, err);
    /* the classes: NVIDIA from the single-class settings, then those enabled */
    for (size_t i = 0; i < out->nclasses; i++)
        nw_gpu_policy_class_cleanup(&out->classes[i]);
    out->nclasses = 0;
    class_cfg_t cls[NW_GPU_MAX_CLASSES];
    size_t ncls = 0;
    cls[ncls++] = (class_cfg_t){"nvidia",
                                "gpu",
                                cfg->gpu.taintKey,
                                cfg->gpu.taintValue,
                                cfg->gpu.nodeLabelValue,
                                cfg->gpu.requirementKey,
                                &cfg->gpu.resources,
                                &cfg->gpu.instanceFamilies,
                                &cfg->gpu.requirementValues,
                                &cfg->gpu.uncountedFamilies,
                                &cfg->gpu.draDrivers,
                                &cfg->gpu.draDeviceClasses,
                                cfg->gpu.acceleratorAware,
                                cfg->gpu.rolloutMaxReplacing,
                                cfg->gpu.rolloutReadyTimeout_ns};
    for (size_t i = 0; i < cfg->gpu.nclasses && ncls < NW_GPU_MAX_CLASSES; i++)
        if (cfg->gpu.classes[i].enabled)
            cls[ncls++] = other_class(&cfg->gpu.classes[i]);
    /* the single-class settings of old listed every accelerator's resources in
     * gpu.resources (the old default did): an entry another enabled class claims is that
     * class's now, said once at start, so such a configuration keeps working */
    const nw_strlist_t *legacy = cls[0].resources;
    char **kept = calloc(legacy->n + 1, sizeof *kept);
    if (!kept)
        return oom(out, err);
    nw_strlist_t nv = {kept, 0};
    for (size_t i = 0; i < legacy->n; i++) {
        size_t j = 1;
        while (j < ncls && !claimed_by(&cls[j], legacy->v[i]))
            j++;
        if (j < ncls)
            nw_log_warn("gpu",
                        "a resource in gpu.resources belongs to another accelerator class; "
                        "judged as that class's (drop it from gpu.resources to silence this)",
                        NW_LS("resource", legacy->v[i]), NW_LS("class", cls[j].name));
        else
            kept[nv.n++] = legacy->v[i];
    }
    cls[0].resources = &nv;
    for (size_t i = 0; i < ncls && rc == NW_OK; i++)
        rc = load_class(out, i, &cls[i], err);
    free(kept);
    if (rc != NW_OK)
        return rc;
    /* exempt: the configured namespaces plus our own */
    size_t n = cfg->gpu.exemptNamespaces.n;
    const char **ex = calloc(n + 1, sizeof *ex);
    if (!ex)
        return oom(out, err);
    size_t k = 0;
    bool self_listed = !self_namespace || !*self_namespace;
    for (size_t i = 0; i < n; i++) {
        ex[k++] = cfg->gpu.exemptNamespaces.v[i];
        if (!self_listed && strcmp(cfg->gpu.exemptNamespaces.v[i], self_namespace) == 0)
            self_listed = true;
    }
    if (!self_listed)
        ex[k++] = self_namespace;
    rc = nw_gpu_policy_set_list(&out->exempt_namespaces, &out->nexempt, ex, k);
    free(ex);
    return rc == NW_OK ? NW_OK : oom(out, err);
}
