/*
 * admission/gpu.c — GPU isolation policy: the settings and what the pod, NodePool and
 * userData parts share (see admission/gpu.h for the rules; admission/gpu_pod.c,
 * admission/gpu_pool.c, admission/gpu_userdata.c).
 */
#include "admission/gpu.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission/gpu_int.h"
#include "common/json.h"

/* AWS instance families with NVIDIA or AMD GPUs (EC2 accelerated computing,
 * "GPU instances"); Inferentia/Trainium families are accelerators but not GPUs. */
static const char *const default_families[] = {
    "g3",  "g3s", "g4ad", "g4dn", "g5",  "g5g",  "g6", "g6e", "g6f",  "gr6",     "gr6f",
    "g7e", "p2",  "p3",   "p3dn", "p4d", "p4de", "p5", "p5e", "p5en", "p6-b200", "p6e-gb200",
};
static const char *const default_resources[] = {
    "nvidia.com/gpu", "amd.com/gpu", "aws.amazon.com/neuron", "aws.amazon.com/neuroncore"};

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

nw_rc_t nw_gpu_policy_init(nw_gpu_policy_t *p, const char *self_namespace)
{
    memset(p, 0, sizeof *p);
    p->enabled = true;
    p->taint_effect = NW_TAINT_NO_SCHEDULE;
    const char *exempt[2] = {"kube-system", self_namespace};
    size_t nexempt =
        (self_namespace && *self_namespace && strcmp(self_namespace, "kube-system")) ? 2 : 1;
    if (nw_gpu_policy_set_str(&p->taint_key, "gpu") ||
        nw_gpu_policy_set_str(&p->taint_value, "true") ||
        nw_gpu_policy_set_str(&p->label_key, "node.accelerator") ||
        nw_gpu_policy_set_str(&p->label_value, "nvidia-gpu") ||
        nw_gpu_policy_set_list(&p->resources, &p->nresources, default_resources,
                               sizeof default_resources / sizeof default_resources[0]) ||
        nw_gpu_policy_set_list(&p->exempt_namespaces, &p->nexempt, exempt, nexempt) ||
        nw_gpu_policy_set_list(&p->families, &p->nfamilies, default_families,
                               sizeof default_families / sizeof default_families[0])) {
        nw_gpu_policy_cleanup(p);
        return NW_ENOMEM;
    }
    return NW_OK;
}

void nw_gpu_policy_cleanup(nw_gpu_policy_t *p)
{
    if (!p)
        return;
    free(p->taint_key);
    free(p->taint_value);
    free(p->label_key);
    free(p->label_value);
    free_list(p->resources, p->nresources);
    free_list(p->exempt_namespaces, p->nexempt);
    free_list(p->families, p->nfamilies);
    memset(p, 0, sizeof *p);
}

nw_taint_t nw_gpu_policy_taint(const nw_gpu_policy_t *p)
{
    nw_taint_t t = {p->taint_key, p->taint_value, p->taint_effect};
    return t;
}

bool nw_gpu_in_list(char *const *v, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i], s) == 0)
            return true;
    return false;
}

bool nw_gpu_family_is_gpu(const nw_gpu_policy_t *p, const char *family)
{
    return family && nw_gpu_in_list(p->families, p->nfamilies, family);
}

/* family of an instance type name: the part before the first '.' */
bool nw_gpu_type_is_gpu(const nw_gpu_policy_t *p, const char *type)
{
    const char *dot = strchr(type, '.');
    size_t n = dot ? (size_t)(dot - type) : strlen(type);
    char fam[64];
    if (n == 0 || n >= sizeof fam)
        return false;
    memcpy(fam, type, n);
    fam[n] = '\0';
    return nw_gpu_family_is_gpu(p, fam);
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

void nw_gpu_taint_text(const nw_gpu_policy_t *p, char *buf, size_t n)
{
    nw_taint_t t = nw_gpu_policy_taint(p);
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
