/* admission/gpu_pod.c — the accelerator isolation policy for Pods (admission/gpu.h). */
#include "admission/gpu.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission/gpu_int.h"
#include "common/json.h"

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
            single_ok = nw_gpu_parse_int(cJSON_GetArrayItem(vals, 0)->valuestring, &single);
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
        if (!value || !single_ok || !nw_gpu_parse_int(value, &nv))
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
    const char *keys[] = {"affinity", "nodeAffinity",
                          "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"};
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

/* bit i set: the resource map names a resource of class i; first[i] the first such name
 * seen (borrowed from the pod) */
static unsigned resources_classes(const nw_gpu_policy_t *p, const cJSON *resources,
                                  const char **first)
{
    static const char *const parts[] = {"requests", "limits"};
    unsigned m = 0;
    for (size_t i = 0; i < 2; i++) {
        const cJSON *r;
        cJSON_ArrayForEach(r, nw_gpu_kids(nw_json_get(resources, parts[i])))
        {
            int c = r->string ? nw_gpu_resource_class(p, r->string) : -1;
            if (c >= 0) {
                m |= 1u << c;
                if (!first[c])
                    first[c] = r->string;
            }
        }
    }
    return m;
}

static unsigned pod_requested_classes(const nw_gpu_policy_t *p, const cJSON *spec,
                                      const char **first)
{
    static const char *const lists[] = {"containers", "initContainers"};
    unsigned m = 0;
    for (size_t l = 0; l < 2; l++) {
        const cJSON *c;
        cJSON_ArrayForEach(c, nw_gpu_kids(nw_json_get(spec, lists[l])))
        {
            m |= resources_classes(p, nw_json_get(c, "resources"), first);
        }
    }
    return m | resources_classes(p, nw_json_get(spec, "resources"), first);
}

/* Does some toleration tolerate class c's taint key with the policy's effect for some
 * value: a pool of the class may give the taint any value, so a toleration of the key
 * (Exists, or Equal to the value the user's pools use) lets the pod onto the class's
 * nodes, and one that names the key makes the pod one that can land there. */
static bool pod_tolerates(const nw_gpu_policy_t *p, const nw_accel_class_t *c,
                          const nw_tolerations_t *tols)
{
    for (size_t i = 0; i < tols->n; i++) {
        const nw_toleration_t *t = &tols->v[i];
        if (t->effect != NW_TAINT_EFFECT_ANY && t->effect != p->taint_effect)
            continue;
        if (t->key[0] ? strcmp(t->key, c->taint_key) == 0 : t->op == NW_TOL_EXISTS)
            return true;
    }
    return false;
}

static int lowest_bit(unsigned m)
{
    for (int i = 0; i < NW_GPU_MAX_CLASSES; i++)
        if (m & (1u << i))
            return i;
    return -1;
}

void nw_gpu_pod_analyze(const nw_gpu_policy_t *p, const cJSON *pod, const char *ns,
                        const nw_gpu_dra_src_t *dra, nw_gpu_pod_info_t *out)
{
    memset(out, 0, sizeof *out);
    out->cls = -1;
    const cJSON *meta = nw_json_get(pod, "metadata");
    const cJSON *spec = nw_json_get(pod, "spec");
    if (!ns || !*ns)
        ns = nw_json_str(meta, "namespace");
    out->exempt_namespace = ns && nw_gpu_in_list(p->exempt_namespaces, p->nexempt, ns);
    out->skip = nw_gpu_annotated_skip(pod);
    const cJSON *owners = nw_json_get(meta, "ownerReferences");
    const cJSON *o;
    cJSON_ArrayForEach(o, nw_gpu_kids(owners))
    {
        const char *kind = nw_json_str(o, "kind");
        if (kind && strcmp(kind, "DaemonSet") == 0)
            out->daemonset = true;
    }
    const char *first[NW_GPU_MAX_CLASSES] = {0};
    out->requested = pod_requested_classes(p, spec, first);
    /* devices its DRA claims request count as requests of their class */
    nw_gpu_dra_pod(p, spec, ns, nw_json_str(meta, "name"), dra, &out->dra);
    out->requested |= out->dra.classes;
    out->requests_gpu = out->requested != 0;
    out->cls = lowest_bit(out->requested);
    if (out->cls >= 0)
        snprintf(out->resource, sizeof out->resource, "%s",
                 first[out->cls] ? first[out->cls] : out->dra.what);
    nw_tolerations_t tols;
    nw_err_t err = {0};
    bool tols_ok = nw_tolerations_parse(nw_json_get(spec, "tolerations"), "spec.tolerations", &tols,
                                        &err) == NW_OK;
    bool mentions = nw_json_get(nw_json_get(spec, "nodeSelector"), p->label_key) != NULL;
    const cJSON *terms = required_terms(spec);
    const cJSON *t;
    cJSON_ArrayForEach(t, nw_gpu_kids(terms))
    {
        term_admits(t, p->label_key, NULL, &mentions);
    }
    out->selects_label = mentions;
    bool admits_cpu = pod_admits(p, spec, NULL);
    for (size_t i = 0; i < p->nclasses; i++) {
        const nw_accel_class_t *c = &p->classes[i];
        bool admits = pod_admits(p, spec, c->label_value);
        bool tolerates = tols_ok && pod_tolerates(p, c, &tols);
        if ((int)i == out->cls) {
            out->tolerates_taint = tolerates;
            out->requires_gpu_label = !admits_cpu && admits;
            out->excludes_gpu_label = !admits;
            out->every_term_excludes = cJSON_GetArraySize(terms) > 0 && !admits && admits_cpu;
        }
        if (tolerates && admits && admits_cpu)
            out->open_to |= 1u << i;
        if (!admits_cpu && admits)
        out->requires |= 1u << i;
    }
    if (tols_ok)
        nw_tolerations_cleanup(&tols);
}

/* Exists on the class's taint key: it matches the taint of every pool of the class,
 * whatever value the pool gives it */
static cJSON *gpu_toleration_json(const nw_gpu_policy_t *p, const nw_accel_class_t *c)
{
    return nw_json_strings("key", c->taint_key, "operator", "Exists", "effect",
                           nw_taints_effect_str(p->taint_effect), (const char *)NULL);
}

/* label_key NotIn [the label values of the classes in mask] */
static cJSON *exclude_expr_json(const nw_gpu_policy_t *p, unsigned mask)
{
    cJSON *e = nw_json_strings("key", p->label_key, "operator", "NotIn", (const char *)NULL);
    cJSON *vals = e ? cJSON_AddArrayToObject(e, "values") : NULL;
    if (!vals) {
        cJSON_Delete(e);
        return NULL;
    }
    for (size_t i = 0; i < p->nclasses; i++) {
        if (!(mask & (1u << i)))
            continue;
        cJSON *v = cJSON_CreateString(p->classes[i].label_value);
        if (!v) {
            cJSON_Delete(e);
            return NULL;
        }
        cJSON_AddItemToArray(vals, v);
    }
    return e;
}

/* the classes of mask whose label value term admits */
static unsigned term_admitted(const nw_gpu_policy_t *p, const cJSON *term, unsigned mask)
{
    unsigned m = 0;
    for (size_t i = 0; i < p->nclasses; i++)
        if ((mask & (1u << i)) && term_admits(term, p->label_key, p->classes[i].label_value, NULL))
            m |= 1u << i;
    return m;
}

/* Add a NotIn expression to every required term that admits nodes of the classes in
 * mask (or create the required affinity with one term). */
static NW_MUST_USE nw_rc_t patch_exclude_gpu(const nw_gpu_policy_t *p, const cJSON *spec,
                                             unsigned mask, nw_jsonpatch_t *patch)
{
    const cJSON *aff = nw_json_get(spec, "affinity");
    const cJSON *na = nw_json_get(aff, "nodeAffinity");
    const cJSON *req = nw_json_get(na, "requiredDuringSchedulingIgnoredDuringExecution");
    const cJSON *terms = nw_json_get(req, "nodeSelectorTerms");
    const char *base = "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution";
    if (!cJSON_IsArray(terms) || cJSON_GetArraySize(terms) == 0) {
        cJSON *v = nw_gpu_wrap_array(
            nw_gpu_wrap("matchExpressions", nw_gpu_wrap_array(exclude_expr_json(p, mask))));
        if (req) {
            char path[160];
            snprintf(path, sizeof path, "%s/nodeSelectorTerms", base);
            return nw_gpu_patch_add_owned(patch, path, v);
        }
        v = nw_gpu_wrap("nodeSelectorTerms", v);
        if (na)
            return nw_gpu_patch_add_owned(patch, base, v);
        v = nw_gpu_wrap("requiredDuringSchedulingIgnoredDuringExecution", v);
        if (aff)
            return nw_gpu_patch_add_owned(patch, "/spec/affinity/nodeAffinity", v);
        return nw_gpu_patch_add_owned(patch, "/spec/affinity", nw_gpu_wrap("nodeAffinity", v));
    }
    int i = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, terms)
    {
        unsigned m = term_admitted(p, t, mask);
        if (m) {
            char path[200];
            const cJSON *exprs = nw_json_get(t, "matchExpressions");
            nw_rc_t rc;
            if (cJSON_IsArray(exprs)) {
                snprintf(path, sizeof path, "%s/nodeSelectorTerms/%d/matchExpressions/-", base, i);
                rc = nw_gpu_patch_add_owned(patch, path, exclude_expr_json(p, m));
            } else {
                snprintf(path, sizeof path, "%s/nodeSelectorTerms/%d/matchExpressions", base, i);
                rc =
                    nw_gpu_patch_add_owned(patch, path, nw_gpu_wrap_array(exclude_expr_json(p, m)));
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
                         const nw_gpu_dra_src_t *dra, nw_jsonpatch_t *patch, nw_admit_result_t *res)
{
    if (!p || !p->enabled || !cJSON_IsObject(pod))
        return NW_OK;
    nw_gpu_pod_info_t in;
    nw_gpu_pod_analyze(p, pod, ns, dra, &in);
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
        if (in.excludes_gpu_label || (in.requested & (in.requested - 1)))
            return NW_OK; /* denied by validation; nothing sensible to add */
        const nw_accel_class_t *c = &p->classes[in.cls];
        if (!in.tolerates_taint) {
            cJSON *tol = gpu_toleration_json(p, c);
            if (cJSON_IsArray(nw_json_get(spec, "tolerations")))
                rc = nw_gpu_patch_add_owned(patch, "/spec/tolerations/-", tol);
            else
                rc = nw_gpu_patch_add_owned(patch, "/spec/tolerations", nw_gpu_wrap_array(tol));
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
                cJSON *v = cJSON_CreateString(c->label_value);
                rc = nw_gpu_patch_add_owned(patch, path, v);
            } else {
                cJSON *m = nw_json_strings(p->label_key, c->label_value, (const char *)NULL);
                rc = nw_gpu_patch_add_owned(patch, "/spec/nodeSelector", m);
            }
        }
        return rc;
    }
    /* no accelerator request: keep it off the nodes of every class whose taint it
     * tolerates and whose nodes it could otherwise land on */
    if (in.open_to && !in.requires)
        rc = patch_exclude_gpu(p, spec, in.open_to, patch);
    return rc;
}

/* "nvidia-gpu, aws-neuron" for the classes in mask */
static void class_values(const nw_gpu_policy_t *p, unsigned mask, bool names, char *buf, size_t n)
{
    size_t off = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < p->nclasses && off < n; i++) {
        if (!(mask & (1u << i)))
            continue;
        int w = snprintf(buf + off, n - off, "%s%s", off ? ", " : "",
                         names ? p->classes[i].name : p->classes[i].label_value);
        if (w < 0)
            break;
        off += (size_t)w;
    }
}

size_t nw_gpu_pod_problems(const nw_gpu_policy_t *p, const cJSON *pod, const char *ns,
                           const nw_gpu_dra_src_t *dra, char (*msgs)[512], size_t max)
{
    if (!p || !p->enabled || !cJSON_IsObject(pod) || max == 0)
        return 0;
    nw_gpu_pod_info_t in;
    nw_gpu_pod_analyze(p, pod, ns, dra, &in);
    if (pod_left_alone(&in))
        return 0;
    size_t n = 0;
    char list[160];
    if (in.requested & (in.requested - 1)) {
        class_values(p, in.requested, true, list, sizeof list);
        snprintf(msgs[n++], 512,
                 "the pod requests the resources of more than one accelerator class (%s), and no "
                 "node has two; request the resources of one class per pod",
                 list);
        return n;
    }
    if (in.requests_gpu) {
        const nw_accel_class_t *c = &p->classes[in.cls];
        char taint[128];
        nw_gpu_taint_text(p, c, taint, sizeof taint);
        if (in.excludes_gpu_label) {
            snprintf(
                msgs[n++], 512,
                "the pod requests %.127s (class %s) but its nodeSelector/required node affinity "
                "only admit nodes without %s=%s, so it can never run on a node of its class; "
                "remove the constraint on %s or set it to %s",
                in.resource, c->name, p->label_key, c->label_value, p->label_key, c->label_value);
            return n;
        }
        if (!in.tolerates_taint && n < max)
            snprintf(
                msgs[n++], 512,
                "the pod requests %.127s (class %s) but does not tolerate the class's taint %s "
                "(with any value of its key); add the toleration {key: %s, operator: Exists, "
                "effect: %s} (the "
                "mutating webhook adds it when it is registered for pods)",
                in.resource, c->name, taint, c->taint_key, nw_taints_effect_str(p->taint_effect));
        if (!in.requires_gpu_label && n < max)
            snprintf(
                msgs[n++], 512,
                "the pod requests %.127s (class %s) but can be scheduled on nodes without %s=%s; "
                "add nodeSelector %s: %s (the mutating webhook adds it when it is registered "
                "for pods)",
                in.resource, c->name, p->label_key, c->label_value, p->label_key, c->label_value);
        return n;
    }
    if (in.requires) {
        int k = lowest_bit(in.requires);
        const nw_accel_class_t *c = &p->classes[k];
        char res[200] = "";
        for (size_t i = 0, off = 0; i < c->nresources && off < sizeof res; i++) {
            int w = snprintf(res + off, sizeof res - off, "%s%s", i ? ", " : "", c->resources[i]);
            if (w < 0)
                break;
            off += (size_t)w;
        }
        snprintf(msgs[n++], 512,
                 "the pod selects the nodes of the %s class (%s=%s) but requests none of its "
                 "resources (%s); request one or remove the selector",
                 c->name, p->label_key, c->label_value, res);
        return n;
    }
    if (in.open_to) {
        int k = lowest_bit(in.open_to);
        char taint[128], m[1024];
        nw_gpu_taint_text(p, &p->classes[k], taint, sizeof taint);
        class_values(p, in.open_to, false, list, sizeof list);
        snprintf(m, sizeof m,
                 "the pod tolerates the taint %s of the %s class but requests no accelerator "
                 "resource, so it could land on an accelerator node (%s=%s); add required node "
                 "affinity %s NotIn [%s] (the mutating webhook adds it when it is registered for "
                 "pods) or drop the toleration",
                 taint, p->classes[k].name, p->label_key, p->classes[k].label_value, p->label_key,
                 list);
        size_t len = strlen(m);
        len = len < 511 ? len : 511;
        memcpy(msgs[n], m, len);
        msgs[n++][len] = '\0';
    }
    return n;
}

/* where the handlers read a pod's claims: the context's lookup, complete once its view is */
static nw_gpu_dra_src_t dra_src(const nw_admit_ctx_t *ctx)
{
    bool complete =
        ctx->lookup_complete && (!ctx->lookup_ready || ctx->lookup_ready(ctx->lookup_arg));
    return (nw_gpu_dra_src_t){ctx->lookup, ctx->lookup_arg, complete};
}

/* What the validating side says of DRA claims it could not judge (said once, there: the
 * mutating side's warnings do not reach `nodewarden check`'s report) */
static void dra_warnings(const nw_gpu_policy_t *p, const cJSON *pod, const char *ns,
                         const nw_gpu_dra_src_t *dra, nw_admit_result_t *res)
{
    if (cJSON_GetArraySize(nw_json_get(nw_json_get(pod, "spec"), "resourceClaims")) == 0)
        return;
    nw_gpu_pod_info_t in;
    nw_gpu_pod_analyze(p, pod, ns, dra, &in);
    if (pod_left_alone(&in))
        return;
    if (in.dra.unjudged)
        nw_admit_warn(res, "GPU isolation policy: the pod's DRA ResourceClaims were not judged "
                           "(no cluster state: the scaler is off); a claim for accelerator "
                           "devices does not get its class's toleration and node selector");
    /* a claim that does not exist yet (or is not seen yet) is admitted: it may ask for any
     * devices (a NIC's as well as a GPU's), and a pod without its class's toleration cannot
     * reach the class's tainted nodes, so nothing is breached; the warning says why such a
     * pod may stay Pending */
    if (in.dra.missing[0] && !dra->complete)
        nw_admit_warn(res,
                      "GPU isolation policy: %s is not in what nodewarden sees of the "
                      "cluster (the files given to check, or a watch cache still "
                      "syncing), so the devices it requests were not judged",
                      in.dra.missing);
    else if (in.dra.missing[0])
        nw_admit_warn(res,
                      "GPU isolation policy: %s does not exist, so the devices it requests were "
                      "not judged; if they are accelerators the pod gets no toleration or node "
                      "selector for their nodes and stays Pending: create the claim (or "
                      "template) before the pod",
                      in.dra.missing);
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
    nw_gpu_dra_src_t dra = dra_src(ctx);
    nw_rc_t rc = nw_gpu_pod_patch(p, req->object, req->namespace_, &dra, &patch, res);
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
    nw_gpu_dra_src_t dra = dra_src(ctx);
    size_t n = nw_gpu_pod_problems(p, req->object, req->namespace_, &dra, msgs, 4);
    nw_rc_t rc = nw_gpu_deny_or_warn(p, "Pod", object_name(req->object, req), msgs, n, res);
    if (rc == NW_OK && res->allowed)
        dra_warnings(p, req->object, req->namespace_, &dra, res);
    return rc;
}
