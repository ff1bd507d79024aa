/*
 * admission/gpu.c — GPU isolation policy (see admission/gpu.h for the rules).
 */
#include "admission/gpu.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"

/* AWS instance families with NVIDIA or AMD GPUs (EC2 accelerated computing,
 * "GPU instances"); Inferentia/Trainium families are accelerators but not GPUs. */
static const char *const default_families[] = {
    "g3", "g3s", "g4ad", "g4dn", "g5", "g5g", "g6", "g6e", "g6f", "gr6", "gr6f", "g7e",
    "p2", "p3", "p3dn", "p4d", "p4de", "p5", "p5e", "p5en", "p6-b200", "p6e-gb200",
};
static const char *const default_resources[] = {"nvidia.com/gpu", "amd.com/gpu",
                                                "aws.amazon.com/neuron",
                                                "aws.amazon.com/neuroncore"};

#define K_FAMILY "karpenter.k8s.aws/instance-family"
#define K_CATEGORY "karpenter.k8s.aws/instance-category"
#define K_GPU_MANUFACTURER "karpenter.k8s.aws/instance-gpu-manufacturer"
#define K_GPU_NAME "karpenter.k8s.aws/instance-gpu-name"
#define K_GPU_MEMORY "karpenter.k8s.aws/instance-gpu-memory"
#define K_TYPE "node.kubernetes.io/instance-type"
#define K_TYPE_BETA "beta.kubernetes.io/instance-type"

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
    size_t nexempt = (self_namespace && *self_namespace && strcmp(self_namespace, "kube-system"))
                         ? 2
                         : 1;
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

static bool in_list(char *const *v, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i], s) == 0)
            return true;
    return false;
}

bool nw_gpu_family_is_gpu(const nw_gpu_policy_t *p, const char *family)
{
    return family && in_list(p->families, p->nfamilies, family);
}

/* family of an instance type name: the part before the first '.' */
static bool type_is_gpu(const nw_gpu_policy_t *p, const char *type)
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
static const cJSON *kids(const cJSON *c)
{
    return (cJSON_IsArray(c) || cJSON_IsObject(c)) ? c : NULL;
}

static bool annotated_skip(const cJSON *obj)
{
    const char *keys[] = {"metadata", "annotations"};
    const cJSON *ann = nw_json_path(obj, keys, 2);
    const char *v = nw_json_str(ann, NW_GPU_SKIP_ANNOTATION);
    return v && strcmp(v, "skip") == 0;
}

static bool parse_int(const char *s, long long *out)
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

/* ---- node selector terms against the GPU label --------------------------------- */

/* Does one matchExpression on the label key admit a node whose label value is
 * `value` (value NULL = the node lacks the label)? As kubernetes/kubernetes
 * staging/src/k8s.io/component-helpers/scheduling/corev1/nodeaffinity/nodeaffinity.go. */
static bool expr_admits(const cJSON *expr, const char *value)
{
    const char *op = nw_json_str(expr, "operator");
    const cJSON *vals = nw_json_get(expr, "values");
    if (!op)
        return false;
    bool listed = false;
    long long single = 0;
    bool single_ok = false;
    if (cJSON_IsArray(vals)) {
        const cJSON *v;
        cJSON_ArrayForEach(v, vals)
        {
            if (cJSON_IsString(v) && value && strcmp(v->valuestring, value) == 0)
                listed = true;
        }
        if (cJSON_GetArraySize(vals) == 1 && cJSON_IsString(cJSON_GetArrayItem(vals, 0)))
            single_ok = parse_int(cJSON_GetArrayItem(vals, 0)->valuestring, &single);
    }
    if (strcmp(op, "In") == 0)
        return value && listed;
    if (strcmp(op, "NotIn") == 0)
        return !value || !listed;
    if (strcmp(op, "Exists") == 0)
        return value != NULL;
    if (strcmp(op, "DoesNotExist") == 0)
        return value == NULL;
    if (strcmp(op, "Gt") == 0 || strcmp(op, "Lt") == 0) {
        long long nv;
        if (!value || !single_ok || !parse_int(value, &nv))
            return false;
        return op[0] == 'G' ? nv > single : nv < single;
    }
    return false;
}

/* Over the expressions of one term that name the label key: do they all admit `value`? */
static bool term_admits(const cJSON *term, const char *key, const char *value, bool *mentions)
{
    const cJSON *exprs = nw_json_get(term, "matchExpressions");
    const cJSON *fields = nw_json_get(term, "matchFields");
    if (cJSON_GetArraySize(exprs) == 0 && cJSON_GetArraySize(fields) == 0)
        return false; /* an empty term matches nothing */
    bool ok = true;
    const cJSON *e;
    cJSON_ArrayForEach(e, exprs)
    {
        const char *k = nw_json_str(e, "key");
        if (!k || strcmp(k, key) != 0)
            continue;
        if (mentions)
            *mentions = true;
        if (!expr_admits(e, value))
            ok = false;
    }
    return ok;
}

static const cJSON *required_terms(const cJSON *spec)
{
    const char *keys[] = {"affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
                          "nodeSelectorTerms"};
    return nw_json_path(spec, keys, 4);
}

/* Does the pod's nodeSelector + required affinity admit a node with label=value
 * (value NULL: a node without the label)? */
static bool pod_admits(const nw_gpu_policy_t *p, const cJSON *spec, const char *value)
{
    const char *sel = nw_json_str(nw_json_get(spec, "nodeSelector"), p->label_key);
    if (nw_json_get(nw_json_get(spec, "nodeSelector"), p->label_key) && !sel)
        return false;
    if (sel && (!value || strcmp(sel, value) != 0))
        return false;
    const cJSON *terms = required_terms(spec);
    if (!cJSON_IsArray(terms) || cJSON_GetArraySize(terms) == 0)
        return true;
    const cJSON *t;
    cJSON_ArrayForEach(t, terms)
    {
        if (term_admits(t, p->label_key, value, NULL))
            return true;
    }
    return false;
}

/* ---- pods ------------------------------------------------------------------------ */

static bool resources_name_gpu(const nw_gpu_policy_t *p, const cJSON *resources)
{
    static const char *const parts[] = {"requests", "limits"};
    for (size_t i = 0; i < 2; i++) {
        const cJSON *m = nw_json_get(resources, parts[i]);
        const cJSON *r;
        cJSON_ArrayForEach(r, kids(m))
        {
            if (r->string && in_list(p->resources, p->nresources, r->string))
                return true;
        }
    }
    return false;
}

static const char *pod_gpu_resource(const nw_gpu_policy_t *p, const cJSON *spec)
{
    static const char *const lists[] = {"containers", "initContainers"};
    for (size_t l = 0; l < 2; l++) {
        const cJSON *c;
        const cJSON *arr = nw_json_get(spec, lists[l]);
        cJSON_ArrayForEach(c, kids(arr))
        {
            if (resources_name_gpu(p, nw_json_get(c, "resources")))
                return "gpu";
        }
    }
    if (resources_name_gpu(p, nw_json_get(spec, "resources")))
        return "gpu";
    return NULL;
}

static bool pod_tolerates(const nw_gpu_policy_t *p, const cJSON *spec)
{
    nw_tolerations_t tols;
    nw_err_t err = {0};
    if (nw_tolerations_parse(nw_json_get(spec, "tolerations"), "spec.tolerations", &tols, &err) !=
        NW_OK)
        return false;
    nw_taint_t taint = nw_gpu_policy_taint(p);
    bool ok = nw_tolerations_tolerate(&tols, &taint);
    nw_tolerations_cleanup(&tols);
    return ok;
}

void nw_gpu_pod_analyze(const nw_gpu_policy_t *p, const cJSON *pod, const char *ns,
                        nw_gpu_pod_info_t *out)
{
    memset(out, 0, sizeof *out);
    const cJSON *meta = nw_json_get(pod, "metadata");
    const cJSON *spec = nw_json_get(pod, "spec");
    if (!ns || !*ns)
        ns = nw_json_str(meta, "namespace");
    out->exempt_namespace = ns && in_list(p->exempt_namespaces, p->nexempt, ns);
    out->skip = annotated_skip(pod);
    const cJSON *owners = nw_json_get(meta, "ownerReferences");
    const cJSON *o;
    cJSON_ArrayForEach(o, kids(owners))
    {
        const char *kind = nw_json_str(o, "kind");
        if (kind && strcmp(kind, "DaemonSet") == 0)
            out->daemonset = true;
    }
    out->requests_gpu = pod_gpu_resource(p, spec) != NULL;
    out->tolerates_taint = pod_tolerates(p, spec);
    bool mentions = nw_json_get(nw_json_get(spec, "nodeSelector"), p->label_key) != NULL;
    const cJSON *terms = required_terms(spec);
    const cJSON *t;
    cJSON_ArrayForEach(t, kids(terms))
    {
        term_admits(t, p->label_key, NULL, &mentions);
    }
    out->selects_label = mentions;
    bool admits_gpu = pod_admits(p, spec, p->label_value);
    bool admits_cpu = pod_admits(p, spec, NULL);
    out->requires_gpu_label = !admits_cpu && admits_gpu;
    out->excludes_gpu_label = !admits_gpu;
    out->every_term_excludes =
        cJSON_GetArraySize(terms) > 0 && !admits_gpu && admits_cpu;
}

static cJSON *gpu_toleration_json(const nw_gpu_policy_t *p)
{
    cJSON *t = cJSON_CreateObject();
    if (!t)
        return NULL;
    cJSON_AddStringToObject(t, "key", p->taint_key);
    if (p->taint_value && *p->taint_value) {
        cJSON_AddStringToObject(t, "operator", "Equal");
        cJSON_AddStringToObject(t, "value", p->taint_value);
    } else {
        cJSON_AddStringToObject(t, "operator", "Exists");
    }
    cJSON_AddStringToObject(t, "effect", nw_taint_effect_str(p->taint_effect));
    return t;
}

static cJSON *exclude_expr_json(const nw_gpu_policy_t *p)
{
    cJSON *e = cJSON_CreateObject();
    if (!e)
        return NULL;
    cJSON_AddStringToObject(e, "key", p->label_key);
    cJSON_AddStringToObject(e, "operator", "NotIn");
    cJSON *vals = cJSON_AddArrayToObject(e, "values");
    if (vals)
        cJSON_AddItemToArray(vals, cJSON_CreateString(p->label_value));
    return e;
}

/* add `value` (owned here, consumed) at path */
static nw_rc_t patch_add_owned(nw_jsonpatch_t *patch, const char *path, cJSON *value)
{
    if (!value)
        return NW_ENOMEM;
    nw_rc_t rc = nw_jsonpatch_add(patch, "add", path, value);
    cJSON_Delete(value);
    return rc;
}

static cJSON *wrap(const char *key, cJSON *inner)
{
    cJSON *o = cJSON_CreateObject();
    if (!o || !inner) {
        cJSON_Delete(o);
        cJSON_Delete(inner);
        return NULL;
    }
    cJSON_AddItemToObject(o, key, inner);
    return o;
}

static cJSON *wrap_array(cJSON *inner)
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

/* Add the NotIn expression to every required term that admits GPU nodes (or create
 * the required affinity with one term). */
static nw_rc_t patch_exclude_gpu(const nw_gpu_policy_t *p, const cJSON *spec, nw_jsonpatch_t *patch)
{
    const cJSON *aff = nw_json_get(spec, "affinity");
    const cJSON *na = nw_json_get(aff, "nodeAffinity");
    const cJSON *req = nw_json_get(na, "requiredDuringSchedulingIgnoredDuringExecution");
    const cJSON *terms = nw_json_get(req, "nodeSelectorTerms");
    const char *base = "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution";
    if (!cJSON_IsArray(terms) || cJSON_GetArraySize(terms) == 0) {
        cJSON *v = wrap_array(wrap("matchExpressions", wrap_array(exclude_expr_json(p))));
        if (req) {
            char path[160];
            snprintf(path, sizeof path, "%s/nodeSelectorTerms", base);
            return patch_add_owned(patch, path, v);
        }
        v = wrap("nodeSelectorTerms", v);
        if (na)
            return patch_add_owned(patch, base, v);
        v = wrap("requiredDuringSchedulingIgnoredDuringExecution", v);
        if (aff)
            return patch_add_owned(patch, "/spec/affinity/nodeAffinity", v);
        return patch_add_owned(patch, "/spec/affinity", wrap("nodeAffinity", v));
    }
    int i = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, terms)
    {
        if (term_admits(t, p->label_key, p->label_value, NULL)) {
            char path[200];
            const cJSON *exprs = nw_json_get(t, "matchExpressions");
            nw_rc_t rc;
            if (cJSON_IsArray(exprs)) {
                snprintf(path, sizeof path, "%s/nodeSelectorTerms/%d/matchExpressions/-", base, i);
                rc = patch_add_owned(patch, path, exclude_expr_json(p));
            } else {
                snprintf(path, sizeof path, "%s/nodeSelectorTerms/%d/matchExpressions", base, i);
                rc = patch_add_owned(patch, path, wrap_array(exclude_expr_json(p)));
            }
            if (rc != NW_OK)
                return rc;
        }
        i++;
    }
    return NW_OK;
}

static bool pod_left_alone(const nw_gpu_pod_info_t *in)
{
    return in->daemonset || in->exempt_namespace || in->skip;
}

nw_rc_t nw_gpu_pod_patch(const nw_gpu_policy_t *p, const cJSON *pod, const char *ns,
                         nw_jsonpatch_t *patch, nw_admit_result_t *res)
{
    if (!p || !p->enabled || !cJSON_IsObject(pod))
        return NW_OK;
    nw_gpu_pod_info_t in;
    nw_gpu_pod_analyze(p, pod, ns, &in);
    if (in.skip && res)
        nw_admit_warn(res, "GPU isolation policy skipped for this pod (annotation %s: skip)",
                      NW_GPU_SKIP_ANNOTATION);
    if (pod_left_alone(&in))
        return NW_OK;
    const cJSON *spec = nw_json_get(pod, "spec");
    if (!spec)
        return NW_OK;
    nw_rc_t rc = NW_OK;
    if (in.requests_gpu) {
        if (in.excludes_gpu_label)
            return NW_OK; /* denied by validation; nothing sensible to add */
        if (!in.tolerates_taint) {
            cJSON *tol = gpu_toleration_json(p);
            if (cJSON_IsArray(nw_json_get(spec, "tolerations")))
                rc = patch_add_owned(patch, "/spec/tolerations/-", tol);
            else
                rc = patch_add_owned(patch, "/spec/tolerations", wrap_array(tol));
            if (rc != NW_OK)
                return rc;
        }
        const cJSON *sel = nw_json_get(spec, "nodeSelector");
        if (!in.requires_gpu_label && !nw_json_get(sel, p->label_key)) {
            if (cJSON_IsObject(sel)) {
                char tok[256], path[300];
                if (nw_jsonpatch_escape(p->label_key, tok, sizeof tok) != NW_OK)
                    return NW_ERANGE;
                snprintf(path, sizeof path, "/spec/nodeSelector/%s", tok);
                cJSON *v = cJSON_CreateString(p->label_value);
                rc = patch_add_owned(patch, path, v);
            } else {
                cJSON *m = cJSON_CreateObject();
                if (m)
                    cJSON_AddStringToObject(m, p->label_key, p->label_value);
                rc = patch_add_owned(patch, "/spec/nodeSelector", m);
            }
        }
        return rc;
    }
    /* no GPU request: keep it off GPU nodes if it could otherwise land there */
    if (in.tolerates_taint && !in.excludes_gpu_label && !in.requires_gpu_label)
        rc = patch_exclude_gpu(p, spec, patch);
    return rc;
}

static void taint_text(const nw_gpu_policy_t *p, char *buf, size_t n)
{
    nw_taint_t t = nw_gpu_policy_taint(p);
    nw_taint_format(&t, buf, n);
}

size_t nw_gpu_pod_problems(const nw_gpu_policy_t *p, const cJSON *pod, const char *ns,
                           char (*msgs)[512], size_t max)
{
    if (!p || !p->enabled || !cJSON_IsObject(pod) || max == 0)
        return 0;
    nw_gpu_pod_info_t in;
    nw_gpu_pod_analyze(p, pod, ns, &in);
    if (pod_left_alone(&in))
        return 0;
    char taint[128];
    taint_text(p, taint, sizeof taint);
    size_t n = 0;
    if (in.requests_gpu) {
        if (in.excludes_gpu_label) {
            snprintf(msgs[n++], 512,
                     "the pod requests a GPU but its nodeSelector/required node affinity only "
                     "admit nodes without %s=%s, so it can never run on a GPU node; remove the "
                     "constraint on %s or set it to %s",
                     p->label_key, p->label_value, p->label_key, p->label_value);
            return n;
        }
        if (!in.tolerates_taint && n < max)
            snprintf(msgs[n++], 512,
                     "the pod requests a GPU but does not tolerate the GPU taint %s; add the "
                     "toleration (the mutating webhook adds it when it is registered for pods)",
                     taint);
        if (!in.requires_gpu_label && n < max)
            snprintf(msgs[n++], 512,
                     "the pod requests a GPU but can be scheduled on nodes without %s=%s; add "
                     "nodeSelector %s: %s (the mutating webhook adds it when it is registered "
                     "for pods)",
                     p->label_key, p->label_value, p->label_key, p->label_value);
        return n;
    }
    if (in.requires_gpu_label) {
        snprintf(msgs[n++], 512,
                 "the pod selects GPU nodes (%s=%s) but requests no GPU resource (%s); request "
                 "a GPU or remove the selector",
                 p->label_key, p->label_value, p->nresources ? p->resources[0] : "");
        return n;
    }
    if (in.tolerates_taint && !in.excludes_gpu_label)
        snprintf(msgs[n++], 512,
                 "the pod tolerates the GPU taint %s but requests no GPU, so it could land on a "
                 "GPU node; add required node affinity %s NotIn [%s] (the mutating webhook adds "
                 "it when it is registered for pods) or drop the toleration",
                 taint, p->label_key, p->label_value);
    return n;
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

static const char *object_name(const cJSON *obj, const nw_admit_req_t *req)
{
    const char *n = nw_json_str(nw_json_get(obj, "metadata"), "name");
    if (n && *n)
        return n;
    n = nw_json_str(nw_json_get(obj, "metadata"), "generateName");
    if (n && *n)
        return n;
    return req && req->name ? req->name : "";
}

nw_rc_t nw_gpu_pod_mutate(const nw_admit_ctx_t *ctx, const nw_admit_req_t *req,
                          nw_admit_result_t *res)
{
    const nw_gpu_policy_t *p = ctx ? (const nw_gpu_policy_t *)ctx->gpu : NULL;
    if (!p || !p->enabled || req->op != NW_OP_CREATE || !req->object)
        return NW_OK;
    nw_jsonpatch_t patch;
    nw_jsonpatch_init(&patch);
    nw_rc_t rc = nw_gpu_pod_patch(p, req->object, req->namespace_, &patch, res);
    if (rc == NW_OK) {
        free(res->patch);
        res->patch = nw_jsonpatch_take_text(&patch);
        rc = patch.rc;
    }
    nw_jsonpatch_cleanup(&patch);
    return rc;
}

nw_rc_t nw_gpu_pod_validate(const nw_admit_ctx_t *ctx, const nw_admit_req_t *req,
                            nw_admit_result_t *res)
{
    const nw_gpu_policy_t *p = ctx ? (const nw_gpu_policy_t *)ctx->gpu : NULL;
    if (!p || !p->enabled || req->op != NW_OP_CREATE || !req->object)
        return NW_OK;
    char msgs[4][512];
    size_t n = nw_gpu_pod_problems(p, req->object, req->namespace_, msgs, 4);
    return nw_gpu_deny_or_warn(p, "Pod", object_name(req->object, req), msgs, n, res);
}

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
    return parse_int(s, &n) && n >= 1;
}
static bool v_zero(const nw_gpu_policy_t *p, const char *s)
{
    long long n;
    (void)p;
    return parse_int(s, &n) && n == 0;
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
    return type_is_gpu(p, s);
}
static bool v_cpu_type(const nw_gpu_policy_t *p, const char *s)
{
    return !type_is_gpu(p, s);
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
        cJSON_ArrayForEach(v, kids(vals))
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
           parse_int(cJSON_GetArrayItem(vals, 0)->valuestring, out);
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
    cJSON_ArrayForEach(t, kids(taints))
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
    out->skip = annotated_skip(np);
    const cJSON *reqs = nw_json_get(pool_template_spec(np), "requirements");
    const cJSON *r;
    int i = 0;
    cJSON_ArrayForEach(r, kids(reqs))
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
    cJSON_ArrayForEach(r, kids(limits))
    {
        if (r->string && in_list(p->resources, p->nresources, r->string))
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
    taint_text(p, taint, sizeof taint);
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
            nw_admit_warn(res, "GPU isolation policy skipped for this NodePool (annotation %s: skip)",
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
            cJSON *t = cJSON_CreateObject();
            if (t) {
                cJSON_AddStringToObject(t, "key", p->taint_key);
                if (*p->taint_value)
                    cJSON_AddStringToObject(t, "value", p->taint_value);
                cJSON_AddStringToObject(t, "effect", nw_taint_effect_str(p->taint_effect));
            }
            if (cJSON_IsArray(nw_json_get(tspec, "taints")))
                rc = patch_add_owned(patch, "/spec/template/spec/taints/-", t);
            else
                rc = patch_add_owned(patch, "/spec/template/spec/taints", wrap_array(t));
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
                rc = patch_add_owned(patch, path, cJSON_CreateString(p->label_value));
            } else {
                cJSON *m = cJSON_CreateObject();
                if (m)
                    cJSON_AddStringToObject(m, p->label_key, p->label_value);
                if (cJSON_IsObject(meta))
                    rc = patch_add_owned(patch, "/spec/template/metadata/labels", m);
                else
                    rc = patch_add_owned(patch, "/spec/template/metadata", wrap("labels", m));
            }
        }
        return rc;
    }
    /* the CRD allows at most 100 requirements: at the cap, validation explains instead.
     * requirements is a required field: without it the pool is invalid, and adding one
     * here would make the API server admit it (Karpenter's CRDs refuse it), so leave it. */
    if (!in.excludes_gpu && cJSON_IsArray(nw_json_get(tspec, "requirements")) &&
        cJSON_GetArraySize(nw_json_get(tspec, "requirements")) < 100) {
        cJSON *r = cJSON_CreateObject();
        if (r) {
            cJSON_AddStringToObject(r, "key", NW_GPU_COUNT_KEY);
            cJSON_AddStringToObject(r, "operator", "DoesNotExist");
        }
        rc = patch_add_owned(patch, "/spec/template/spec/requirements/-", r);
        if (rc == NW_OK && in.gpu_limits && res)
            nw_admit_warn(res,
                          "this NodePool is not a GPU pool: nodewarden added the requirement %s "
                          "DoesNotExist, so its GPU limits will never be used; make it a GPU "
                          "pool if it should launch GPU instances",
                          NW_GPU_COUNT_KEY);
    }
    return rc;
}

/* ---- cross-object: the EC2NodeClass userData of a GPU pool ---------------------- */

/* Is the GPU taint in a comma-separated taint list ("k=v:Effect,k2:Effect")? */
static bool taint_list_has(const nw_gpu_policy_t *p, const char *s, size_t n)
{
    const char *eff = nw_taint_effect_str(p->taint_effect);
    char want[300];
    if (*p->taint_value)
        snprintf(want, sizeof want, "%s=%s:%s", p->taint_key, p->taint_value, eff);
    else
        snprintf(want, sizeof want, "%s:%s", p->taint_key, eff);
    size_t wl = strlen(want);
    const char *end = s + n;
    while (s < end) {
        const char *comma = memchr(s, ',', (size_t)(end - s));
        const char *e = comma ? comma : end;
        /* trim spaces and quotes */
        while (s < e && (*s == ' ' || *s == '"' || *s == '\'' || *s == '['))
            s++;
        const char *t = e;
        while (t > s && (t[-1] == ' ' || t[-1] == '"' || t[-1] == '\'' || t[-1] == ']'))
            t--;
        if ((size_t)(t - s) == wl && memcmp(s, want, wl) == 0)
            return true;
        s = comma ? comma + 1 : end;
    }
    return false;
}

/* value of "key: value" on a YAML line (after optional "- "), or NULL */
static const char *yaml_field(const char *line, const char *eol, const char *key, size_t *vlen)
{
    const char *q = line;
    while (q < eol && (*q == ' ' || *q == '\t'))
        q++;
    if (q + 1 < eol && q[0] == '-' && q[1] == ' ')
        q += 2;
    while (q < eol && *q == ' ')
        q++;
    size_t kl = strlen(key);
    if ((size_t)(eol - q) <= kl || memcmp(q, key, kl) != 0 || q[kl] != ':')
        return NULL;
    q += kl + 1;
    while (q < eol && (*q == ' ' || *q == '"' || *q == '\''))
        q++;
    const char *e = eol;
    while (e > q && (e[-1] == ' ' || e[-1] == '"' || e[-1] == '\'' || e[-1] == '\r'))
        e--;
    *vlen = (size_t)(e - q);
    return q;
}

static bool field_is(const char *v, size_t n, const char *want)
{
    return v && n == strlen(want) && memcmp(v, want, n) == 0;
}

bool nw_gpu_userdata_registers_taint(const nw_gpu_policy_t *p, const char *ud)
{
    if (!p || !ud)
        return false;
    /* 1. kubelet/kubeadm flags: --register-with-taints=LIST or --register-with-taints LIST */
    static const char flag[] = "--register-with-taints";
    for (const char *f = strstr(ud, flag); f; f = strstr(f + 1, flag)) {
        const char *v = f + sizeof flag - 1;
        if (*v == '=' || *v == ' ')
            v++;
        size_t n = strcspn(v, " \t\r\n\\;&|)");
        if (taint_list_has(p, v, n))
            return true;
    }
    /* 2. KubeletConfiguration registerWithTaints: or kubeadm nodeRegistration taints:
     *    entries (YAML), as "- key: gpu" / "value: ..." / "effect: ..." items */
    static const char *const blocks[] = {"registerWithTaints:", "taints:"};
    for (size_t b = 0; b < 2; b++)
    for (const char *rw = strstr(ud, blocks[b]); rw; rw = strstr(rw + 1, blocks[b])) {
        const char *line = strchr(rw, '\n');
        const char *k = NULL, *v = NULL, *e = NULL;
        size_t kl = 0, vl = 0, el = 0;
        while (line && line[1]) {
            line++;
            const char *eol = strchr(line, '\n');
            if (!eol)
                eol = line + strlen(line);
            const char *first = line;
            while (first < eol && (*first == ' ' || *first == '\t'))
                first++;
            if (first == eol) {
                line = *eol ? eol : NULL;
                continue;
            }
            bool item = first + 1 < eol && first[0] == '-' && first[1] == ' ';
            size_t n;
            const char *x;
            if (item) {
                /* a new item: judge the previous one */
                if (field_is(k, kl, p->taint_key) && field_is(v ? v : "", vl, p->taint_value) &&
                    field_is(e, el, nw_taint_effect_str(p->taint_effect)))
                    return true;
                k = v = e = NULL;
                kl = vl = el = 0;
            }
            if ((x = yaml_field(line, eol, "key", &n))) {
                k = x;
                kl = n;
            } else if ((x = yaml_field(line, eol, "value", &n))) {
                v = x;
                vl = n;
            } else if ((x = yaml_field(line, eol, "effect", &n))) {
                e = x;
                el = n;
            } else if (!item && first == line) {
                break; /* back at the left margin: the list is over */
            } else if (!item && !yaml_field(line, eol, "timeAdded", &n)) {
                break;
            }
            line = *eol ? eol : NULL;
        }
        if (field_is(k, kl, p->taint_key) && field_is(v ? v : "", vl, p->taint_value) &&
            field_is(e, el, nw_taint_effect_str(p->taint_effect)))
            return true;
    }
    return false;
}

nw_rc_t nw_gpu_pool_crosscheck(const nw_gpu_policy_t *p, const cJSON *np, const cJSON *nc,
                               nw_admit_result_t *res)
{
    if (!p || !p->enabled || !cJSON_IsObject(np) || !cJSON_IsObject(nc) || !res)
        return NW_OK;
    nw_gpu_pool_info_t in;
    nw_gpu_pool_analyze(p, np, &in);
    if (in.skip || !nw_gpu_pool_is_gpu(&in))
        return NW_OK;
    const char *ud = nw_json_str(nw_json_get(nc, "spec"), "userData");
    if (!ud || nw_gpu_userdata_registers_taint(p, ud))
        return NW_OK;
    char taint[128];
    taint_text(p, taint, sizeof taint);
    const char *ncname = nw_json_str(nw_json_get(nc, "metadata"), "name");
    const char *npname = nw_json_str(nw_json_get(np, "metadata"), "name");
    return nw_admit_warn(res,
                         "GPU NodePool \"%s\" uses EC2NodeClass \"%s\" whose userData registers "
                         "the kubelet without the GPU taint %s: generic pods can schedule on a new "
                         "node until nodewarden applies the taint; add it to the kubelet's "
                         "--register-with-taints",
                         npname ? npname : "",
                         ncname ? ncname : "", taint);
}
