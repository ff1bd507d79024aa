/*
 * api/requirements_json.c — reading requirement sets from Kubernetes JSON:
 * NodeSelectorRequirement lists (pod and karpenter.sh/v1 flavours), nodeSelector
 * maps, nodeSelectorTerms and a PodSpec's node affinity. See requirements.h.
 * Errors name the field in kube-apiserver's words (Required value, Unsupported
 * value, Invalid value, must be of type ...).
 */
#include "api/requirements.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"

/* ---- parsing ------------------------------------------------------------------ */

static NW_MUST_USE nw_rc_t type_err(nw_err_t *err, const char *path, const cJSON *j,
                                    const char *want)
{
    return nw_err_set(err, NW_EINVAL, path, "Invalid value: \"%s\": %s must be of type %s",
                      nw_json_type_name(j), path, want);
}

#define MAX_VALUES 4096

static NW_MUST_USE nw_rc_t parse_item(const cJSON *it, const char *base, unsigned flags,
                                      nw_reqs_t *out, nw_err_t *err)
{
    char p[192];
    if (!cJSON_IsObject(it))
        return type_err(err, base, it, "object");
    const cJSON *jk = cJSON_GetObjectItemCaseSensitive(it, "key");
    const cJSON *jo = cJSON_GetObjectItemCaseSensitive(it, "operator");
    const cJSON *jv = cJSON_GetObjectItemCaseSensitive(it, "values");
    snprintf(p, sizeof p, "%s.key", base);
    if (!jk || cJSON_IsNull(jk))
        return nw_err_set(err, NW_EINVAL, p, "Required value");
    if (!cJSON_IsString(jk) || !jk->valuestring)
        return type_err(err, p, jk, "string");
    nw_labels_msgs_t m;
    if (!nw_labels_key_valid(jk->valuestring, &m)) {
        char joined[1024];
        nw_labels_msgs_join(&m, "; ", joined, sizeof joined);
        return nw_err_set(err, NW_EINVAL, p, "Invalid value: \"%.128s\": %s", jk->valuestring,
                          joined);
    }
    snprintf(p, sizeof p, "%s.operator", base);
    if (!jo || cJSON_IsNull(jo))
        return nw_err_set(err, NW_EINVAL, p, "Required value");
    if (!cJSON_IsString(jo) || !jo->valuestring)
        return type_err(err, p, jo, "string");
    nw_req_op_t op;
    if (!nw_requirements_req_op_parse(jo->valuestring, flags, &op))
        return nw_err_set(err, NW_EINVAL, p, "Unsupported value: \"%.64s\": supported values: %s",
                          jo->valuestring,
                          (flags & NW_REQS_PARSE_KARPENTER)
                              ? "\"In\", \"NotIn\", \"Exists\", \"DoesNotExist\", \"Gt\", "
                                "\"Lt\", \"Gte\", \"Lte\""
                              : "\"In\", \"NotIn\", \"Exists\", \"DoesNotExist\", \"Gt\", \"Lt\"");
    snprintf(p, sizeof p, "%s.values", base);
    int nv = 0;
    if (jv && !cJSON_IsNull(jv)) {
        if (!cJSON_IsArray(jv))
            return type_err(err, p, jv, "array");
        nv = cJSON_GetArraySize(jv);
        if (nv > MAX_VALUES)
            return nw_err_set(err, NW_EINVAL, p, "Too many: %d: must have at most %d items", nv,
                              MAX_VALUES);
    }
    const char **vals = nv ? calloc((size_t)nv, sizeof *vals) : NULL;
    if (nv && !vals)
        return nw_err_set(err, NW_ENOMEM, p, "out of memory");
    int k = 0;
    for (const cJSON *v = jv && nv ? jv->child : NULL; v; v = v->next, k++) {
        if (!cJSON_IsString(v) || !v->valuestring) {
            char pv[224];
            snprintf(pv, sizeof pv, "%s[%d]", p, k);
            free(vals);
            return type_err(err, pv, v, "string");
        }
        vals[k] = v->valuestring;
    }
    nw_rc_t rc = NW_OK;
    int64_t x;
    if (op == NW_REQ_IN && nv == 0) {
        rc = nw_err_set(err, NW_EINVAL, p,
                        "Required value: must be specified when `operator` is 'In'");
    } else if ((op == NW_REQ_GT || op == NW_REQ_LT || op == NW_REQ_GTE || op == NW_REQ_LTE) &&
               nv != 1) {
        rc = nw_err_set(err, NW_EINVAL, p,
                        "Required value: must be specified single value when `operator` is '%s'",
                        nw_requirements_req_op_str(op));
    } else if ((op == NW_REQ_GT || op == NW_REQ_LT || op == NW_REQ_GTE || op == NW_REQ_LTE) &&
               !nw_requirements_req_atoi(vals[0], &x)) {
        rc = nw_err_set(err, NW_EINVAL, p, "Invalid value: \"%.64s\": must be an integer", vals[0]);
    }
    int min_values = 0;
    const cJSON *jm = (flags & NW_REQS_PARSE_KARPENTER)
                          ? cJSON_GetObjectItemCaseSensitive(it, "minValues")
                          : NULL;
    if (rc == NW_OK && jm && !cJSON_IsNull(jm)) {
        snprintf(p, sizeof p, "%s.minValues", base);
        if (!cJSON_IsNumber(jm) || !isfinite(jm->valuedouble) ||
            jm->valuedouble != floor(jm->valuedouble))
            rc = type_err(err, p, jm, "integer");
        else if (jm->valuedouble < 1)
            rc = nw_err_set(err, NW_EINVAL, p,
                            "Invalid value: %.0f: %s in body should be greater than or equal to 1",
                            jm->valuedouble, p);
        else if (jm->valuedouble > 50)
            rc = nw_err_set(err, NW_EINVAL, p,
                            "Invalid value: %.0f: %s in body should be less than or equal to 50",
                            jm->valuedouble, p);
        else
            min_values = (int)jm->valuedouble;
    }
    if (rc == NW_OK) {
        rc = nw_requirements_add(out, jk->valuestring, op, vals, (size_t)nv, min_values, NULL);
        if (rc != NW_OK)
            nw_err_set(err, rc, base, "out of memory");
    }
    free(vals);
    return rc;
}

nw_rc_t nw_requirements_json_parse_list(const cJSON *arr, const char *path, unsigned flags,
                                        nw_reqs_t *out, nw_err_t *err)
{
    nw_requirements_init(out);
    if (!path)
        path = "";
    if (!arr || cJSON_IsNull(arr))
        return NW_OK;
    if (!cJSON_IsArray(arr))
        return type_err(err, path, arr, "array");
    int i = 0;
    for (const cJSON *it = arr->child; it; it = it->next, i++) {
        char base[160];
        snprintf(base, sizeof base, "%s[%d]", path, i);
        nw_rc_t rc = parse_item(it, base, flags, out, err);
        if (rc != NW_OK) {
            nw_requirements_cleanup(out);
            return rc;
        }
    }
    return NW_OK;
}

nw_rc_t nw_requirements_json_parse_node_selector(const cJSON *obj, const char *path, nw_reqs_t *out,
                                                 nw_err_t *err)
{
    nw_requirements_init(out);
    nw_labels_t l;
    nw_rc_t rc = nw_labels_parse(obj, path, &l, err);
    if (rc != NW_OK)
        return rc;
    rc = nw_requirements_from_labels(&l, out);
    if (rc != NW_OK)
        nw_err_set(err, rc, path, "out of memory");
    nw_labels_cleanup(&l);
    return rc;
}

void nw_requirements_json_terms_free(nw_reqs_t *terms, size_t nterms)
{
    for (size_t i = 0; terms && i < nterms; i++)
        nw_requirements_cleanup(&terms[i]);
    free(terms);
}

static NW_MUST_USE nw_rc_t parse_term(const cJSON *t, const char *base, nw_reqs_t *out,
                                      nw_err_t *err)
{
    char p[192];
    nw_requirements_init(out);
    if (!cJSON_IsObject(t))
        return type_err(err, base, t, "object");
    const cJSON *mf = cJSON_GetObjectItemCaseSensitive(t, "matchFields");
    if (mf && !cJSON_IsNull(mf) && !cJSON_IsArray(mf)) {
        snprintf(p, sizeof p, "%s.matchFields", base);
        return type_err(err, p, mf, "array");
    }
    snprintf(p, sizeof p, "%s.matchExpressions", base);
    return nw_requirements_json_parse_list(cJSON_GetObjectItemCaseSensitive(t, "matchExpressions"),
                                           p, 0, out, err);
}

nw_rc_t nw_requirements_json_parse_terms(const cJSON *arr, const char *path, nw_reqs_t **terms,
                                         size_t *nterms, nw_err_t *err)
{
    *terms = NULL;
    *nterms = 0;
    if (!path)
        path = "";
    if (!arr || cJSON_IsNull(arr))
        return NW_OK;
    if (!cJSON_IsArray(arr))
        return type_err(err, path, arr, "array");
    int n = cJSON_GetArraySize(arr);
    if (n == 0)
        return NW_OK;
    nw_reqs_t *v = calloc((size_t)n, sizeof *v);
    if (!v)
        return nw_err_set(err, NW_ENOMEM, path, "out of memory");
    int i = 0;
    for (const cJSON *t = arr->child; t; t = t->next, i++) {
        char base[160];
        snprintf(base, sizeof base, "%s[%d]", path, i);
        nw_rc_t rc = parse_term(t, base, &v[i], err);
        if (rc != NW_OK) {
            nw_requirements_json_terms_free(v, (size_t)i);
            return rc;
        }
    }
    *terms = v;
    *nterms = (size_t)n;
    return NW_OK;
}

/* preferredDuringSchedulingIgnoredDuringExecution (under p, the nodeAffinity's path):
 * the heaviest term's requirements added to out. */
static NW_MUST_USE nw_rc_t add_preferred(const cJSON *na, const char *p, nw_reqs_t *out,
                                         nw_err_t *err)
{
    nw_rc_t rc;
    const cJSON *pref =
        cJSON_GetObjectItemCaseSensitive(na, "preferredDuringSchedulingIgnoredDuringExecution");
    char pp[320];
    snprintf(pp, sizeof pp, "%s.preferredDuringSchedulingIgnoredDuringExecution", p);
    if (pref && !cJSON_IsNull(pref) && !cJSON_IsArray(pref))
        return type_err(err, pp, pref, "array");
    const cJSON *best = NULL;
    double best_w = 0;
    int i = 0, best_i = 0;
    for (const cJSON *t = pref ? pref->child : NULL; t; t = t->next, i++) {
        char pt[352];
        snprintf(pt, sizeof pt, "%s[%d]", pp, i);
        if (!cJSON_IsObject(t))
            return type_err(err, pt, t, "object");
        const cJSON *w = cJSON_GetObjectItemCaseSensitive(t, "weight");
        double wv = cJSON_IsNumber(w) ? w->valuedouble : 0;
        if (!best || wv > best_w) {
            best = t;
            best_w = wv;
            best_i = i;
        }
    }
    if (best) {
        char pt[352];
        snprintf(pt, sizeof pt, "%s[%d].preference", pp, best_i);
        nw_reqs_t term;
        rc = parse_term(cJSON_GetObjectItemCaseSensitive(best, "preference"), pt, &term, err);
        if (rc == NW_OK) {
            rc = nw_requirements_add_all(out, &term);
            if (rc != NW_OK)
                nw_err_set(err, rc, pt, "out of memory");
        }
        nw_requirements_cleanup(&term);
        if (rc != NW_OK)
            return rc;
    }
    return NW_OK;
}

/* requiredDuringSchedulingIgnoredDuringExecution (under p, the nodeAffinity's path):
 * the first nodeSelectorTerm's requirements added to out. */
static NW_MUST_USE nw_rc_t add_required(const cJSON *na, const char *p, nw_reqs_t *out,
                                        nw_err_t *err)
{
    nw_rc_t rc;
    const cJSON *req =
        cJSON_GetObjectItemCaseSensitive(na, "requiredDuringSchedulingIgnoredDuringExecution");
    if (req && !cJSON_IsNull(req)) {
        char pr[320];
        snprintf(pr, sizeof pr, "%s.requiredDuringSchedulingIgnoredDuringExecution", p);
        if (!cJSON_IsObject(req))
            return type_err(err, pr, req, "object");
        char pt[352];
        snprintf(pt, sizeof pt, "%s.nodeSelectorTerms", pr);
        nw_reqs_t *terms;
        size_t nterms;
        rc = nw_requirements_json_parse_terms(
            cJSON_GetObjectItemCaseSensitive(req, "nodeSelectorTerms"), pt, &terms, &nterms, err);
        if (rc != NW_OK)
            return rc;
        if (nterms > 0) {
            rc = nw_requirements_add_all(out, &terms[0]);
            if (rc != NW_OK)
                nw_err_set(err, rc, pt, "out of memory");
        }
        nw_requirements_json_terms_free(terms, nterms);
        if (rc != NW_OK)
            return rc;
    }
    return NW_OK;
}

nw_rc_t nw_requirements_json_parse_pod_spec(const cJSON *spec, const char *path, unsigned flags,
                                            nw_reqs_t *out, nw_err_t *err)
{
    char p[256];
    nw_requirements_init(out);
    if (!path)
        path = "";
    if (!spec || cJSON_IsNull(spec))
        return NW_OK;
    if (!cJSON_IsObject(spec))
        return type_err(err, path, spec, "object");
    snprintf(p, sizeof p, "%s.nodeSelector", path);
    nw_rc_t rc = nw_requirements_json_parse_node_selector(
        cJSON_GetObjectItemCaseSensitive(spec, "nodeSelector"), p, out, err);
    if (rc != NW_OK)
        return rc;
    const cJSON *aff = cJSON_GetObjectItemCaseSensitive(spec, "affinity");
    snprintf(p, sizeof p, "%s.affinity", path);
    if (!aff || cJSON_IsNull(aff))
        return NW_OK;
    if (!cJSON_IsObject(aff)) {
        rc = type_err(err, p, aff, "object");
        goto fail;
    }
    const cJSON *na = cJSON_GetObjectItemCaseSensitive(aff, "nodeAffinity");
    snprintf(p, sizeof p, "%s.affinity.nodeAffinity", path);
    if (!na || cJSON_IsNull(na))
        return NW_OK;
    if (!cJSON_IsObject(na)) {
        rc = type_err(err, p, na, "object");
        goto fail;
    }
    if (flags & NW_REQS_PARSE_PREFERRED) {
        if ((rc = add_preferred(na, p, out, err)) != NW_OK)
            goto fail;
    }
    if ((rc = add_required(na, p, out, err)) != NW_OK)
        goto fail;
    return NW_OK;
fail:
    nw_requirements_cleanup(out);
    return rc;
}
