/* scaler/sched/snap_class.c — building a scheduling snapshot (scaler/sched/snapshot.c): pod
 * classes, the requirements pods with the same scheduling-relevant spec share (node selector,
 * required and preferred node affinity, tolerations, volume topology). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/wellknown.h"
#include "common/json.h"
#include "scaler/sched/snap.h"

static int cmp_pref(const void *a, const void *b)
{
    const int *x = a, *y = b;
    return x[0] != y[0] ? (y[0] > x[0]) - (y[0] < x[0]) : x[1] - y[1];
}

static void validate_expr_list(const cJSON *arr, const char *path, char **invalid)
{
    const cJSON *it;
    int i = 0;
    cJSON_ArrayForEach(it, arr)
    {
        if (*invalid)
            return;
        const char *k = nw_json_str(it, "key"), *op = nw_json_str(it, "operator");
        const char *vals[64];
        size_t nv = 0;
        const cJSON *v;
        cJSON_ArrayForEach(v, nw_json_get(it, "values"))
        {
            if (cJSON_IsString(v) && nv < 64)
                vals[nv++] = v->valuestring;
        }
        char msg[512];
        if (k && op &&
            nw_requirements_validate_requirement(k, op, vals, nv, 0, msg, sizeof msg) > 0) {
            size_t n = strlen(msg) + strlen(path) + 32;
            *invalid = malloc(n);
            if (*invalid)
                snprintf(*invalid, n, "%s[%d]: %s", path, i, msg);
        }
        i++;
    }
}

/* preferredDuringSchedulingIgnoredDuringExecution: the preference terms, heaviest first. */
static NW_MUST_USE nw_rc_t parse_prefs(nw_pclass_t *c, const cJSON *na, nw_err_t *err)
{
    nw_rc_t rc;
    const cJSON *pref =
        na ? nw_json_get(na, "preferredDuringSchedulingIgnoredDuringExecution") : NULL;
    int np = cJSON_GetArraySize(pref);
    if (np > 0) {
        int(*order)[2] = calloc((size_t)np, sizeof *order);
        nw_reqs_t *tmp = calloc((size_t)np, sizeof *tmp);
        c->prefs = calloc((size_t)np, sizeof *c->prefs);
        if (!order || !tmp || !c->prefs) {
            free(order);
            free(tmp);
            return nw_err_set(err, NW_ENOMEM, "spec.affinity", "out of memory");
        }
        const cJSON *it;
        int i = 0;
        rc = NW_OK;
        cJSON_ArrayForEach(it, pref)
        {
            char p[200];
            snprintf(
                p, sizeof p,
                "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[%d]"
                ".preference.matchExpressions",
                i);
            const cJSON *w = nw_json_get(it, "weight"), *pr = nw_json_get(it, "preference");
            order[i][0] = cJSON_IsNumber(w) ? w->valueint : 0;
            order[i][1] = i;
            if (rc == NW_OK)
                rc = nw_requirements_json_parse_list(
                    pr ? nw_json_get(pr, "matchExpressions") : NULL, p, 0, &tmp[i], err);
            else
                nw_requirements_init(&tmp[i]);
            i++;
        }
        if (rc == NW_OK) {
            qsort(order, (size_t)np, sizeof *order, cmp_pref);
            for (int k = 0; k < np; k++)
                c->prefs[k] = tmp[order[k][1]];
            c->nprefs = (size_t)np;
        } else {
            nw_requirements_json_terms_free(tmp, (size_t)np);
            tmp = NULL;
        }
        free(tmp);
        free(order);
        if (rc != NW_OK)
            return rc;
    }
    return NW_OK;
}

/* Karpenter ignores pods with invalid requirements: the first problem goes to c->invalid. */
static void validate_class(nw_pclass_t *c, const cJSON *spec, const cJSON *req, const char *tp)
{
    const cJSON *ns = nw_json_get(spec, "nodeSelector"), *it;
    cJSON_ArrayForEach(it, ns)
    {
        if (c->invalid || !cJSON_IsString(it))
            continue;
        const char *v[1] = {it->valuestring};
        char msg[512];
        if (nw_requirements_validate_requirement(it->string, "In", v, 1, 0, msg, sizeof msg) > 0) {
            size_t n = strlen(msg) + strlen(it->string) + 40;
            c->invalid = malloc(n);
            if (c->invalid)
                snprintf(c->invalid, n, "spec.nodeSelector[%s]: %s", it->string, msg);
        }
    }
    const cJSON *t;
    int ti = 0;
    const cJSON *terms_arr = req ? nw_json_get(req, "nodeSelectorTerms") : NULL;
    cJSON_ArrayForEach(t, terms_arr)
    {
        char p[200];
        snprintf(p, sizeof p, "%s[%d].matchExpressions", tp, ti++);
        validate_expr_list(nw_json_get(t, "matchExpressions"), p, &c->invalid);
        if (!c->invalid && cJSON_GetArraySize(nw_json_get(t, "matchFields")) > 0) {
            c->invalid = strdup("matchFields in required node affinity is not supported");
        }
    }
}

static NW_MUST_USE nw_rc_t class_build(nw_pclass_t *c, const cJSON *spec, nw_err_t *err)
{
    nw_rc_t rc = nw_requirements_json_parse_node_selector(nw_json_get(spec, "nodeSelector"),
                                                          "spec.nodeSelector", &c->selector, err);
    if (rc != NW_OK)
        return rc;
    const cJSON *aff = nw_json_get(spec, "affinity");
    const cJSON *na = aff ? nw_json_get(aff, "nodeAffinity") : NULL;
    const cJSON *req =
        na ? nw_json_get(na, "requiredDuringSchedulingIgnoredDuringExecution") : NULL;
    const char *tp = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
                     "nodeSelectorTerms";
    if (req) {
        rc = nw_requirements_json_parse_terms(nw_json_get(req, "nodeSelectorTerms"), tp, &c->terms,
                                              &c->nterms, err);
        if (rc != NW_OK)
            return rc;
    }
    if ((rc = parse_prefs(c, na, err)) != NW_OK)
        return rc;
    rc = nw_tolerations_parse(nw_json_get(spec, "tolerations"), "spec.tolerations", &c->tols, err);
    if (rc != NW_OK)
        return rc;
    /* refuses Karpenter capacity: required term with karpenter.sh/nodepool DoesNotExist */
    for (size_t i = 0; i < c->nterms; i++) {
        const nw_req_t *r = nw_requirements_get(&c->terms[i], NW_LABEL_NODEPOOL);
        if (r && nw_requirements_req_operator(r) == NW_REQ_DOES_NOT_EXIST)
            c->refuses = true;
    }
    /* validation (Karpenter ignores pods with invalid requirements) */
    validate_class(c, spec, req, tp);
    return NW_OK;
}

/* cross the pod's required terms with its volumes' alternatives */
static NW_MUST_USE nw_rc_t class_add_volumes(nw_pclass_t *c, const nw_reqs_t *alts, size_t nalts)
{
    size_t nt = c->nterms ? c->nterms : 1, n = 0;
    nw_reqs_t *terms = calloc(nt * nalts, sizeof *terms),
              *sterms = calloc(nt * nalts, sizeof *sterms);
    nw_rc_t rc = terms && sterms ? NW_OK : NW_ENOMEM;
    for (size_t t = 0; t < nt && rc == NW_OK; t++)
        for (size_t a = 0; a < nalts && rc == NW_OK; a++, n++) {
            nw_requirements_init(&terms[n]);
            nw_requirements_init(&sterms[n]);
            if (c->nterms && (rc = nw_requirements_copy(&sterms[n], &c->terms[t])) != NW_OK)
                break;
            if ((rc = nw_requirements_copy(&terms[n], &sterms[n])) == NW_OK)
                rc = nw_requirements_add_all(&terms[n], &alts[a]);
        }
    if (rc != NW_OK) {
        if (terms)
            nw_requirements_json_terms_free(terms, n);
        if (sterms)
            nw_requirements_json_terms_free(sterms, n);
        return rc;
    }
    nw_requirements_json_terms_free(c->terms, c->nterms);
    c->terms = terms;
    c->sterms = sterms;
    c->nterms = n;
    return NW_OK;
}

int nw_snap_class_get(nw_sched_snap_t *s, const cJSON *spec, const char *pod_ns,
                      const char *pod_name, bool accel, nw_err_t *err)
{
    nw_reqs_t *alts = NULL;
    size_t nalts = 0;
    char *vmsg = NULL;
    if (nw_snap_volume_alts(s, spec, pod_ns, pod_name, &alts, &nalts, &vmsg) != NW_OK) {
        nw_err_set(err, NW_ENOMEM, "spec.volumes", "out of memory");
        return -1;
    }
    cJSON *k = nw_json_new_object();
    if (vmsg)
        nw_json_add_string(k, "volerr", vmsg);
    for (size_t i = 0; i < nalts; i++) {
        char buf[1024];
        nw_requirements_format(&alts[i], buf, sizeof buf);
        nw_json_push(nw_json_add_array(k, "vol"), nw_json_new_string(buf));
    }
    const cJSON *aff = nw_json_get(spec, "affinity");
    const char *keys[] = {"nodeSelector", "tolerations"};
    for (int i = 0; i < 2; i++)
        if (nw_json_get(spec, keys[i]))
            nw_json_add_item(k, keys[i], nw_json_dup(nw_json_get(spec, keys[i])));
    if (aff && nw_json_get(aff, "nodeAffinity"))
        nw_json_add_item(k, "na", nw_json_dup(nw_json_get(aff, "nodeAffinity")));
    nw_json_add_bool(k, "accel", accel);
    char *sig = nw_json_print(k);
    cJSON_Delete(k);
    if (!sig) {
        nw_requirements_json_terms_free(alts, nalts);
        free(vmsg);
        nw_err_set(err, NW_ENOMEM, "spec", "out of memory");
        return -1;
    }
    uint64_t h = nw_snapshot_hash(sig);
    if (s->class_hash) {
        for (size_t i = h & (s->class_hash_cap - 1);; i = (i + 1) & (s->class_hash_cap - 1)) {
            int ci = s->class_hash[i];
            if (ci < 0)
                break;
            if (strcmp(s->classes[ci].sig, sig) == 0) {
                free(sig);
                nw_requirements_json_terms_free(alts, nalts);
                free(vmsg);
                return ci;
            }
        }
    }
    nw_pclass_t c = {.sig = sig, .wants_accel = accel, .volume_err = vmsg};
    nw_requirements_init(&c.selector);
    nw_tolerations_init(&c.tols);
    if (class_build(&c, spec, err) != NW_OK ||
        (nalts && class_add_volumes(&c, alts, nalts) != NW_OK &&
         nw_err_set(err, NW_ENOMEM, "spec.volumes", "out of memory"))) {
        nw_requirements_json_terms_free(alts, nalts);
        nw_snapshot_pclass_free(&c);
        return -1;
    }
    nw_requirements_json_terms_free(alts, nalts);
    nw_pclass_t *nc = nw_snapshot_grow(s->classes, &s->cclasses, s->nclasses, sizeof *nc);
    if (!nc) {
        nw_snapshot_pclass_free(&c);
        nw_err_set(err, NW_ENOMEM, "spec", "out of memory");
        return -1;
    }
    s->classes = nc;
    s->classes[s->nclasses] = c;
    int idx = (int)s->nclasses++;
    /* rehash when over half full */
    if (s->nclasses * 2 > s->class_hash_cap) {
        size_t cap = s->class_hash_cap ? s->class_hash_cap * 2 : 64;
        int *nh = malloc(cap * sizeof *nh);
        if (!nh) {
            nw_err_set(err, NW_ENOMEM, "spec", "out of memory");
            return -1;
        }
        for (size_t i = 0; i < cap; i++)
            nh[i] = -1;
        free(s->class_hash);
        s->class_hash = nh;
        s->class_hash_cap = cap;
        for (size_t ci = 0; ci < s->nclasses; ci++) {
            size_t i = nw_snapshot_hash(s->classes[ci].sig) & (cap - 1);
            while (nh[i] >= 0)
                i = (i + 1) & (cap - 1);
            nh[i] = (int)ci;
        }
    } else {
        size_t i = h & (s->class_hash_cap - 1);
        while (s->class_hash[i] >= 0)
            i = (i + 1) & (s->class_hash_cap - 1);
        s->class_hash[i] = idx;
    }
    return idx;
}
