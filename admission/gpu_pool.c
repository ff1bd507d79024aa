/* admission/gpu_pool.c — the GPU isolation policy for NodePools (admission/gpu.h). */
#include "admission/gpu.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission/gpu_int.h"
#include "common/json.h"

/* ---- NodePools ------------------------------------------------------------------ */

static bool all_values(const cJSON *vals, const nw_gpu_policy_t *p,
                       bool (*pred)(const nw_gpu_policy_t *, const char *))
{
    if (!cJSON_IsArray(vals) || cJSON_GetArraySize(vals) == 0)
        return false;
    const cJSON *v;
    cJSON_ArrayForEach(v, vals)
    {
        if (!cJSON_IsString(v) || !pred(p, v->valuestring))
            return false;
    }
    return true;
}

static bool v_positive(const nw_gpu_policy_t *p, const char *s)
{
    long long n;
    (void)p;
    return nw_gpu_parse_int(s, &n) && n >= 1;
}
static bool v_zero(const nw_gpu_policy_t *p, const char *s)
{
    long long n;
    (void)p;
    return nw_gpu_parse_int(s, &n) && n == 0;
}
static bool v_gpu_family(const nw_gpu_policy_t *p, const char *s)
{
    return nw_gpu_family_is_gpu(p, s);
}
static bool v_cpu_family(const nw_gpu_policy_t *p, const char *s)
{
    return !nw_gpu_family_is_gpu(p, s);
}
static bool v_gpu_type(const nw_gpu_policy_t *p, const char *s)
{
    return nw_gpu_type_is_gpu(p, s);
}
static bool v_cpu_type(const nw_gpu_policy_t *p, const char *s)
{
    return !nw_gpu_type_is_gpu(p, s);
}
static bool v_gpu_category(const nw_gpu_policy_t *p, const char *s)
{
    (void)p;
    return strcmp(s, "g") == 0 || strcmp(s, "p") == 0;
}
static bool v_cpu_category(const nw_gpu_policy_t *p, const char *s)
{
    return !v_gpu_category(p, s);
}

static bool values_contain_all(const cJSON *vals, char *const *want, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        bool found = false;
        const cJSON *v;
        cJSON_ArrayForEach(v, nw_gpu_kids(vals))
        {
            if (cJSON_IsString(v) && strcmp(v->valuestring, want[i]) == 0)
                found = true;
        }
        if (!found)
            return false;
    }
    return true;
}

static bool single_int(const cJSON *vals, long long *out)
{
    return cJSON_GetArraySize(vals) == 1 && cJSON_IsString(cJSON_GetArrayItem(vals, 0)) &&
           nw_gpu_parse_int(cJSON_GetArrayItem(vals, 0)->valuestring, out);
}

/* Classify one requirement: +1 forces GPU instances, -1 excludes them, 0 neither. */
static int classify_requirement(const nw_gpu_policy_t *p, const cJSON *r)
{
    const char *key = nw_json_str(r, "key");
    const char *op = nw_json_str(r, "operator");
    const cJSON *vals = nw_json_get(r, "values");
    if (!key || !op)
        return 0;
    bool in = strcmp(op, "In") == 0, notin = strcmp(op, "NotIn") == 0;
    bool exists = strcmp(op, "Exists") == 0, dne = strcmp(op, "DoesNotExist") == 0;
    long long v;
    if (strcmp(key, NW_GPU_COUNT_KEY) == 0) {
        if (exists || (in && all_values(vals, p, v_positive)))
            return 1;
        if (strcmp(op, "Gt") == 0 && single_int(vals, &v) && v >= 0)
            return 1;
        if (strcmp(op, "Gte") == 0 && single_int(vals, &v) && v >= 1)
            return 1;
        if (dne || (in && all_values(vals, p, v_zero)))
            return -1;
        if (strcmp(op, "Lt") == 0 && single_int(vals, &v) && v <= 1)
            return -1;
        if (strcmp(op, "Lte") == 0 && single_int(vals, &v) && v <= 0)
            return -1;
        return 0;
    }
    if (strcmp(key, K_GPU_MANUFACTURER) == 0 || strcmp(key, K_GPU_NAME) == 0 ||
        strcmp(key, K_GPU_MEMORY) == 0) {
        if (exists || (in && cJSON_GetArraySize(vals) > 0))
            return 1;
        if ((strcmp(op, "Gt") == 0 || strcmp(op, "Gte") == 0) && strcmp(key, K_GPU_MEMORY) == 0)
            return 1;
        if (dne)
            return -1;
        return 0;
    }
    if (strcmp(key, K_FAMILY) == 0) {
        if (in && all_values(vals, p, v_gpu_family))
            return 1;
        if (in && all_values(vals, p, v_cpu_family))
            return -1;
        if (notin && values_contain_all(vals, p->families, p->nfamilies))
            return -1;
        return 0;
    }
    if (strcmp(key, K_TYPE) == 0 || strcmp(key, K_TYPE_BETA) == 0) {
        if (in && all_values(vals, p, v_gpu_type))
            return 1;
        if (in && all_values(vals, p, v_cpu_type))
            return -1;
        return 0;
    }
    if (strcmp(key, K_CATEGORY) == 0) {
        if (in && all_values(vals, p, v_gpu_category))
            return 1;
        if (in && all_values(vals, p, v_cpu_category))
            return -1;
        char *gp[] = {"g", "p"};
        if (notin && values_contain_all(vals, gp, 2))
            return -1;
        return 0;
    }
    return 0;
}

static const cJSON *pool_template_spec(const cJSON *np)
{
    const char *keys[] = {"spec", "template", "spec"};
    return nw_json_path(np, keys, 3);
}

static const cJSON *pool_labels(const cJSON *np)
{
    const char *keys[] = {"spec", "template", "metadata", "labels"};
    return nw_json_path(np, keys, 4);
}

/* 1: exact GPU taint present; -1: a taint with the GPU key and effect but another
 * value; 0: absent. */
static int pool_taint_state(const nw_gpu_policy_t *p, const cJSON *np)
{
    const cJSON *taints = nw_json_get(pool_template_spec(np), "taints");
    const char *eff = nw_taint_effect_str(p->taint_effect);
    int state = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, nw_gpu_kids(taints))
    {
        const char *k = nw_json_str(t, "key"), *e = nw_json_str(t, "effect");
        const char *v = nw_json_str(t, "value");
        if (!k || !e || strcmp(k, p->taint_key) != 0 || strcmp(e, eff) != 0)
            continue;
        if (strcmp(v ? v : "", p->taint_value) == 0)
            return 1;
        state = -1;
    }
    return state;
}

void nw_gpu_pool_analyze(const nw_gpu_policy_t *p, const cJSON *np, nw_gpu_pool_info_t *out)
{
    memset(out, 0, sizeof *out);
    out->skip = nw_gpu_annotated_skip(np);
    const cJSON *reqs = nw_json_get(pool_template_spec(np), "requirements");
    const cJSON *r;
    int i = 0;
    cJSON_ArrayForEach(r, nw_gpu_kids(reqs))
    {
        int c = classify_requirement(p, r);
        if (c != 0 && !out->why[0])
            snprintf(out->why, sizeof out->why, "spec.template.spec.requirements[%d] (%s %s)", i,
                     nw_json_str(r, "key") ? nw_json_str(r, "key") : "",
                     nw_json_str(r, "operator") ? nw_json_str(r, "operator") : "");
        if (c > 0)
            out->gpu_only = true;
        else if (c < 0)
            out->excludes_gpu = true;
        i++;
    }
    const char *lv = nw_json_str(pool_labels(np), p->label_key);
    out->has_label = lv && strcmp(lv, p->label_value) == 0;
    out->has_taint = pool_taint_state(p, np) == 1;
    const cJSON *limits = nw_json_get(nw_json_get(np, "spec"), "limits");
    cJSON_ArrayForEach(r, nw_gpu_kids(limits))
    {
        if (r->string && nw_gpu_in_list(p->resources, p->nresources, r->string))
            out->gpu_limits = true;
    }
}

bool nw_gpu_pool_is_gpu(const nw_gpu_pool_info_t *in)
{
    return in->gpu_only || in->has_label;
}

size_t nw_gpu_pool_problems(const nw_gpu_policy_t *p, const cJSON *np, bool after_mutation,
                            char (*msgs)[512], size_t max)
{
    if (!p || !p->enabled || !cJSON_IsObject(np) || max == 0)
        return 0;
    nw_gpu_pool_info_t in;
    nw_gpu_pool_analyze(p, np, &in);
    if (in.skip)
        return 0;
    char taint[128];
    nw_gpu_taint_text(p, taint, sizeof taint);
    size_t n = 0;
    const char *lv = nw_json_str(pool_labels(np), p->label_key);
    bool label_conflict = lv && !in.has_label;
    bool taint_conflict = pool_taint_state(p, np) == -1;
    bool marked = in.has_label || in.has_taint;
    if (in.gpu_only && in.excludes_gpu) {
        snprintf(msgs[n++], 512,
                 "its requirements both require and exclude GPU instance types, so it can launch "
                 "nothing; remove the contradicting requirement");
        return n;
    }
    if (marked && in.excludes_gpu) {
        snprintf(msgs[n++], 512,
                 "it carries the GPU %s but its requirements exclude GPU instances (%s); remove "
                 "the GPU %s or allow GPU instance types",
                 in.has_label ? "label" : "taint", in.why, in.has_label ? "label" : "taint");
        return n;
    }
    if (marked && !in.gpu_only) {
        snprintf(msgs[n++], 512,
                 "it carries the GPU %s but its requirements also allow non-GPU instances "
                 "(ambiguous); restrict it to GPU instance types, for example "
                 "%s Gt 0 or an instance-family list such as g6, or add the annotation "
                 "%s: skip for a deliberately mixed pool",
                 in.has_label ? "label" : "taint", NW_GPU_COUNT_KEY, NW_GPU_SKIP_ANNOTATION);
        return n;
    }
    bool gpu = nw_gpu_pool_is_gpu(&in);
    if (gpu && label_conflict && n < max)
        snprintf(msgs[n++], 512,
                 "it is a GPU pool but its template label %s=%s conflicts with the GPU label "
                 "%s=%s; set the label to %s",
                 p->label_key, lv, p->label_key, p->label_value, p->label_value);
    if (gpu && taint_conflict && n < max)
        snprintf(msgs[n++], 512,
                 "it is a GPU pool but carries a %s taint with another value than the GPU taint "
                 "%s; use %s",
                 p->taint_key, taint, taint);
    if (!after_mutation || n)
        return n;
    if (gpu && !in.has_taint && n < max)
        snprintf(msgs[n++], 512,
                 "it is a GPU pool (%s) without the GPU taint %s; add it to "
                 "spec.template.spec.taints (the mutating webhook adds it)",
                 in.gpu_only ? in.why : "GPU label", taint);
    if (gpu && !in.has_label && n < max)
        snprintf(msgs[n++], 512,
                 "it is a GPU pool without the GPU label %s=%s; add it to "
                 "spec.template.metadata.labels (the mutating webhook adds it)",
                 p->label_key, p->label_value);
    if (!gpu && !in.excludes_gpu && n < max)
        snprintf(msgs[n++], 512,
                 "it is not a GPU pool but its requirements allow GPU instance types; add the "
                 "requirement %s DoesNotExist (the mutating webhook adds it) or make it a GPU pool",
                 NW_GPU_COUNT_KEY);
    return n;
}

nw_rc_t nw_gpu_pool_patch(const nw_gpu_policy_t *p, const cJSON *np, nw_jsonpatch_t *patch,
                          nw_admit_result_t *res)
{
    if (!p || !p->enabled || !cJSON_IsObject(np))
        return NW_OK;
    nw_gpu_pool_info_t in;
    nw_gpu_pool_analyze(p, np, &in);
    if (in.skip) {
        if (res)
            nw_admit_warn(res,
                          "GPU isolation policy skipped for this NodePool (annotation %s: skip)",
                          NW_GPU_SKIP_ANNOTATION);
        return NW_OK;
    }
    char msgs[2][512];
    if (nw_gpu_pool_problems(p, np, false, msgs, 2) > 0)
        return NW_OK; /* validation denies (or warns); no half-fixes */
    const cJSON *tspec = pool_template_spec(np);
    if (!tspec)
        return NW_OK; /* schema validation reports the missing template */
    nw_rc_t rc = NW_OK;
    if (nw_gpu_pool_is_gpu(&in)) {
        if (!in.has_taint) {
            cJSON *t = nw_json_strings("key", p->taint_key, "value",
                                       *p->taint_value ? p->taint_value : NULL, "effect",
                                       nw_taint_effect_str(p->taint_effect), (const char *)NULL);
            if (cJSON_IsArray(nw_json_get(tspec, "taints")))
                rc = nw_gpu_patch_add_owned(patch, "/spec/template/spec/taints/-", t);
            else
                rc = nw_gpu_patch_add_owned(patch, "/spec/template/spec/taints",
                                            nw_gpu_wrap_array(t));
            if (rc != NW_OK)
                return rc;
        }
        if (!in.has_label) {
            const char *keys[] = {"spec", "template", "metadata"};
            const cJSON *meta = nw_json_path(np, keys, 3);
            const cJSON *labels = nw_json_get(meta, "labels");
            if (cJSON_IsObject(labels)) {
                char tok[256], path[320];
                if (nw_jsonpatch_escape(p->label_key, tok, sizeof tok) != NW_OK)
                    return NW_ERANGE;
                snprintf(path, sizeof path, "/spec/template/metadata/labels/%s", tok);
                rc = nw_gpu_patch_add_owned(patch, path, cJSON_CreateString(p->label_value));
            } else {
                cJSON *m = nw_json_strings(p->label_key, p->label_value, (const char *)NULL);
                if (cJSON_IsObject(meta))
                    rc = nw_gpu_patch_add_owned(patch, "/spec/template/metadata/labels", m);
                else
                    rc = nw_gpu_patch_add_owned(patch, "/spec/template/metadata",
                                                nw_gpu_wrap("labels", m));
            }
        }
        return rc;
    }
    /* the CRD allows at most 100 requirements: at the cap, validation explains instead.
     * requirements is a required field: without it the pool is invalid, and adding one
     * here would make the API server admit it (Karpenter's CRDs refuse it), so leave it. */
    if (!in.excludes_gpu && cJSON_IsArray(nw_json_get(tspec, "requirements")) &&
        cJSON_GetArraySize(nw_json_get(tspec, "requirements")) < 100) {
        cJSON *r = nw_json_strings("key", NW_GPU_COUNT_KEY, "operator", "DoesNotExist",
                                   (const char *)NULL);
        rc = nw_gpu_patch_add_owned(patch, "/spec/template/spec/requirements/-", r);
        if (rc == NW_OK && in.gpu_limits && res)
            nw_admit_warn(res,
                          "this NodePool is not a GPU pool: nodewarden added the requirement %s "
                          "DoesNotExist, so its GPU limits will never be used; make it a GPU "
                          "pool if it should launch GPU instances",
                          NW_GPU_COUNT_KEY);
    }
    return rc;
}
