/*
 * admission/gpu.c — accelerator isolation: what the pod, NodePool and userData checks share
 * (class lookups, JSON patch helpers, deny-or-warn); see admission/gpu.h for the rules,
 * admission/gpu_policy.c for the policy and its default classes, admission/gpu_pod.c,
 * admission/gpu_pool.c, admission/gpu_userdata.c for the checks.
 */
#include "admission/gpu.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission/gpu_int.h"
#include "common/json.h"

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

bool nw_gpu_class_uncounted(const nw_accel_class_t *c, const char *family)
{
    return family && nw_gpu_in_list(c->uncounted, c->nuncounted, family);
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
    nw_taints_format(&t, buf, n);
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
