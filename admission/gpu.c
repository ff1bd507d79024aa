/*
 * admission/gpu.c — accelerator isolation policy: the settings and classes and what the pod,
 * NodePool and userData parts share (see admission/gpu.h for the rules; admission/gpu_pod.c,
 * admission/gpu_pool.c, admission/gpu_userdata.c).
 */
#include "admission/gpu.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission/gpu_int.h"
#include "common/json.h"

/* The default classes. Families: EC2 accelerated computing instance families by
 * accelerator (NVIDIA GPUs; AMD Radeon Pro V520 in g4ad; Inferentia and Trainium;
 * Habana Gaudi in dl1; Qualcomm AI 100 in dl2q; AMD Xilinx U30 media accelerators in
 * vt1). Resources: the device plugins' extended resources (NVIDIA: whole GPUs, MIG slices
 * nvidia.com/mig-<profile>, time-sliced nvidia.com/gpu.shared; AWS Neuron: devices and
 * cores; Qualcomm's qaic; the Xilinx FPGA plugin's xilinx.com/fpga-<shell>, the U30 shells
 * xilinx_u30_*). Instance requirements: the labels of aws/karpenter-provider-aws
 * pkg/providers/instancetype/types.go (GPUs by instance-gpu-manufacturer, Neuron devices
 * and other inference accelerators by instance-accelerator-manufacturer); Karpenter gives
 * vt1 no device label, so the xilinx class knows its types by family only. */
typedef struct {
    const char *name, *taint_key, *taint_value, *label_value;
    const char *resources[4];
    const char *families[24];
    const char *req_key;
    const char *req_values[2];
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
     {"nvidia"}},
    {"amd", "amd.com/gpu", "", "amd-gpu", {"amd.com/gpu"}, {"g4ad"}, K_GPU_MANUFACTURER, {"amd"}},
    {"neuron",
     "aws.amazon.com/neuron",
     "",
     "aws-neuron",
     {"aws.amazon.com/neuron", "aws.amazon.com/neuroncore", "aws.amazon.com/neurondevice"},
     {"inf1", "inf2", "trn1", "trn1n", "trn2", "trn2u"},
     K_ACCEL_MANUFACTURER,
     {"aws"}},
    {"gaudi",
     "habana.ai/gaudi",
     "",
     "habana-gaudi",
     {"habana.ai/gaudi"},
     {"dl1"},
     K_GPU_MANUFACTURER,
     {"habana"}},
    {"qualcomm",
     "qualcomm.com/qaic",
     "",
     "qualcomm-ai100",
     {"qualcomm.com/qaic"},
     {"dl2q"},
     K_ACCEL_MANUFACTURER,
     {"qualcomm"}},
    {"xilinx",
     "xilinx.com/fpga",
     "",
     "xilinx-u30",
     {"xilinx.com/fpga-xilinx_u30*"},
     {"vt1"},
     "",
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
    memset(c, 0, sizeof *c);
}

static nw_rc_t class_from_default(nw_accel_class_t *c, const default_class_t *d)
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
                               count_strs(d->req_values, 2)))
        return NW_ENOMEM;
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

nw_taint_t nw_gpu_class_taint(const nw_gpu_policy_t *p, const nw_accel_class_t *c)
{
    nw_taint_t t = {c->taint_key, c->taint_value, p->taint_effect};
    return t;
}

bool nw_gpu_class_has_resource(const nw_accel_class_t *c, const char *res)
{
    for (size_t i = 0; i < c->nresources; i++) {
        const char *r = c->resources[i];
        size_t n = strlen(r);
        if (n > 0 && r[n - 1] == '*' ? strncmp(res, r, n - 1) == 0 : strcmp(res, r) == 0)
            return true;
    }
    return false;
}

int nw_gpu_resource_class(const nw_gpu_policy_t *p, const char *res)
{
    for (size_t i = 0; i < p->nclasses; i++)
        if (nw_gpu_class_has_resource(&p->classes[i], res))
            return (int)i;
    return -1;
}

bool nw_gpu_in_list(char *const *v, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i], s) == 0)
            return true;
    return false;
}

int nw_gpu_family_class(const nw_gpu_policy_t *p, const char *family)
{
    for (size_t i = 0; family && i < p->nclasses; i++)
        if (nw_gpu_in_list(p->classes[i].families, p->classes[i].nfamilies, family))
            return (int)i;
    return -1;
}

bool nw_gpu_family_is_gpu(const nw_gpu_policy_t *p, const char *family)
{
    return nw_gpu_family_class(p, family) >= 0;
}

/* family of an instance type name: the part before the first '.' */
int nw_gpu_type_name_class(const nw_gpu_policy_t *p, const char *type)
{
    const char *dot = strchr(type, '.');
    size_t n = dot ? (size_t)(dot - type) : strlen(type);
    char fam[64];
    if (n == 0 || n >= sizeof fam)
        return -1;
    memcpy(fam, type, n);
    fam[n] = '\0';
    return nw_gpu_family_class(p, fam);
}

int nw_gpu_type_class(const nw_gpu_policy_t *p, const char *(*get)(const char *key, void *arg),
                      void *arg)
{
    int c = nw_gpu_family_class(p, get(K_FAMILY, arg));
    if (c >= 0)
        return c;
    for (size_t i = 0; i < p->nclasses; i++) {
        const nw_accel_class_t *k = &p->classes[i];
        const char *v = k->req_key && *k->req_key ? get(k->req_key, arg) : NULL;
        if (v && nw_gpu_in_list(k->req_values, k->nreq_values, v))
            return (int)i;
    }
    return -1;
}

/* ---- small JSON helpers ------------------------------------------------------- */

/* a container to iterate, or NULL (cJSON_ArrayForEach then does nothing) */
const cJSON *nw_gpu_kids(const cJSON *c)
{
    return (cJSON_IsArray(c) || cJSON_IsObject(c)) ? c : NULL;
}

bool nw_gpu_annotated_skip(const cJSON *obj)
{
    const char *keys[] = {"metadata", "annotations"};
    const cJSON *ann = nw_json_path(obj, keys, 2);
    const char *v = nw_json_str(ann, NW_GPU_SKIP_ANNOTATION);
    return v && strcmp(v, "skip") == 0;
}

bool nw_gpu_parse_int(const char *s, long long *out)
{
    if (!s || !*s)
        return false;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end)
        return false;
    *out = v;
    return true;
}

/* add `value` (owned here, consumed) at path */
nw_rc_t nw_gpu_patch_add_owned(nw_jsonpatch_t *patch, const char *path, cJSON *value)
{
    if (!value)
        return NW_ENOMEM;
    nw_rc_t rc = nw_jsonpatch_add(patch, "add", path, value);
    cJSON_Delete(value);
    return rc;
}

cJSON *nw_gpu_wrap(const char *key, cJSON *inner)
{
    cJSON *o = cJSON_CreateObject();
    if (!o || !inner) {
        cJSON_Delete(o);
        cJSON_Delete(inner);
        return NULL;
    }
    if (!cJSON_AddItemToObject(o, key, inner)) {
        cJSON_Delete(o);
        cJSON_Delete(inner);
        return NULL;
    }
    return o;
}

cJSON *nw_gpu_wrap_array(cJSON *inner)
{
    cJSON *a = cJSON_CreateArray();
    if (!a || !inner) {
        cJSON_Delete(a);
        cJSON_Delete(inner);
        return NULL;
    }
    cJSON_AddItemToArray(a, inner);
    return a;
}

void nw_gpu_taint_text(const nw_gpu_policy_t *p, const nw_accel_class_t *c, char *buf, size_t n)
{
    nw_taint_t t = nw_gpu_class_taint(p, c);
    nw_taint_format(&t, buf, n);
}

nw_rc_t nw_gpu_deny_or_warn(const nw_gpu_policy_t *p, const char *kind, const char *name,
                            char (*msgs)[512], size_t n, nw_admit_result_t *res)
{
    if (n == 0)
        return NW_OK;
    if (p->warn_only) {
        for (size_t i = 0; i < n; i++)
            nw_admit_warn(res, "GPU isolation policy (warn mode): %s", msgs[i]);
        return NW_OK;
    }
    size_t cap = 256 + n * 520;
    char *m = malloc(cap);
    if (!m)
        return NW_ENOMEM;
    int off = snprintf(m, cap, "%s \"%s\" violates the GPU isolation policy: ", kind,
                       name && *name ? name : "(generated)");
    for (size_t i = 0; i < n && off >= 0 && (size_t)off < cap; i++)
        off += snprintf(m + off, cap - (size_t)off, "%s%s", i ? "; " : "", msgs[i]);
    free(res->message);
    free(res->reason);
    res->message = m;
    res->reason = strdup("Forbidden");
    res->allowed = 0;
    res->code = 403;
    return res->reason ? NW_OK : NW_ENOMEM;
}
