/*
 * api/tolerations.c — tolerations: the list, parsing, and Kubernetes' matching of one
 * toleration against a taint (kubernetes/kubernetes staging/src/k8s.io/api/core/v1/
 * toleration.go ToleratesTaint). Declared in api/taints.h.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/kval.h"
#include "api/taints.h"
#include "common/json.h"

static const char *const TOL_OPS[] = {"Equal", "Exists", "Lt", "Gt"};

const char *nw_tolerations_op_str(nw_tol_op_t op)
{
    return (unsigned)op < 4 ? TOL_OPS[op] : "";
}

void nw_tolerations_init(nw_tolerations_t *t)
{
    t->v = NULL;
    t->n = 0;
}

void nw_tolerations_cleanup(nw_tolerations_t *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++) {
        free(t->v[i].key);
        free(t->v[i].value);
    }
    free(t->v);
    nw_tolerations_init(t);
}

nw_rc_t nw_tolerations_add(nw_tolerations_t *t, const char *key, nw_tol_op_t op, const char *value,
                           nw_taint_effect_t effect, bool has_seconds, int64_t seconds)
{
    char *k = strdup(key ? key : "");
    char *v = strdup(value ? value : "");
    nw_toleration_t *nv = (k && v) ? realloc(t->v, (t->n + 1) * sizeof *nv) : NULL;
    if (!nv) {
        free(k);
        free(v);
        return NW_ENOMEM;
    }
    t->v = nv;
    t->v[t->n++] = (nw_toleration_t){.key = k,
                                     .op = op,
                                     .value = v,
                                     .effect = effect,
                                     .has_seconds = has_seconds,
                                     .seconds = has_seconds ? seconds : 0};
    return NW_OK;
}

nw_rc_t nw_tolerations_parse(const cJSON *arr, const char *path, nw_tolerations_t *out,
                             nw_err_t *err)
{
    nw_tolerations_init(out);
    if (!path)
        path = "";
    if (!arr || cJSON_IsNull(arr))
        return NW_OK;
    nw_rc_t rc = nw_kval_array(arr, path, err);
    if (rc != NW_OK)
        return rc;
    int i = 0;
    for (const cJSON *it = arr->child; it; it = it->next, i++) {
        char base[NW_KV_PATH_MAX], p[NW_KV_PATH_MAX];
        nw_kval_idx(base, path, (size_t)i);
        if (!cJSON_IsObject(it)) {
            rc =
                nw_err_set(err, NW_EINVAL, base, "Invalid value: \"%s\": %s must be of type object",
                           nw_json_type_name(it), base);
            goto fail;
        }
        const char *key, *op, *value, *effect;
        if ((rc = nw_kval_str_member(it, "key", base, "", &key, err)) != NW_OK ||
            (rc = nw_kval_str_member(it, "operator", base, "", &op, err)) != NW_OK ||
            (rc = nw_kval_str_member(it, "value", base, "", &value, err)) != NW_OK ||
            (rc = nw_kval_str_member(it, "effect", base, "", &effect, err)) != NW_OK)
            goto fail;
        nw_tol_op_t o;
        if (!*op || strcmp(op, "Equal") == 0) {
            o = NW_TOL_EQUAL;
        } else if (strcmp(op, "Exists") == 0) {
            o = NW_TOL_EXISTS;
        } else if (strcmp(op, "Lt") == 0) {
            o = NW_TOL_LT;
        } else if (strcmp(op, "Gt") == 0) {
            o = NW_TOL_GT;
        } else {
            nw_kval_path(p, base, "operator");
            rc = nw_err_set(err, NW_EINVAL, p,
                            "Unsupported value: \"%s\": supported values: \"Equal\", \"Exists\", "
                            "\"Lt\", \"Gt\"",
                            op);
            goto fail;
        }
        nw_taint_effect_t eff;
        if (!nw_taints_effect_parse(effect, &eff)) {
            nw_kval_path(p, base, "effect");
            rc = nw_err_set(err, NW_EINVAL, p,
                            "Unsupported value: \"%s\": supported values: \"NoSchedule\", "
                            "\"PreferNoSchedule\", \"NoExecute\"",
                            effect);
            goto fail;
        }
        bool has_seconds = false;
        int64_t seconds = 0;
        const cJSON *ts = cJSON_GetObjectItemCaseSensitive(it, "tolerationSeconds");
        if (ts && !cJSON_IsNull(ts)) {
            nw_kval_path(p, base, "tolerationSeconds");
            double d = ts->valuedouble;
            if (!cJSON_IsNumber(ts) || !isfinite(d) || d != floor(d)) {
                rc = nw_err_set(err, NW_EINVAL, p,
                                "Invalid value: \"%s\": %s must be of type integer",
                                cJSON_IsNumber(ts) ? "number" : nw_json_type_name(ts), p);
                goto fail;
            }
            if (d >= 9223372036854775808.0 || d < -9223372036854775808.0) {
                rc =
                    nw_err_set(err, NW_EINVAL, p, "Invalid value: %.0f: out of range for int64", d);
                goto fail;
            }
            has_seconds = true;
            seconds = (int64_t)d;
        }
        if ((rc = nw_tolerations_add(out, key, o, value, eff, has_seconds, seconds)) != NW_OK) {
            nw_err_set(err, rc, base, "out of memory");
            goto fail;
        }
    }
    return NW_OK;
fail:
    nw_tolerations_cleanup(out);
    return rc;
}

bool nw_tolerations_parse_decimal(const char *s, int64_t *out)
{
    size_t i = 0;
    bool neg = false;
    if (s[0] == '-') {
        neg = true;
        i = 1;
    }
    if (s[i] == '\0')
        return false;
    if (s[i] == '0') {
        if (i == 0 && s[1] == '\0') {
            *out = 0;
            return true;
        }
        return false; /* leading zero or "-0" */
    }
    /* accumulate negatively so INT64_MIN fits */
    int64_t v = 0;
    for (; s[i]; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        int d = s[i] - '0';
        if (v < (INT64_MIN + d) / 10)
            return false;
        v = v * 10 - d;
    }
    if (!neg) {
        if (v == INT64_MIN)
            return false;
        v = -v;
    }
    *out = v;
    return true;
}

bool nw_tolerations_match(const nw_toleration_t *tol, const nw_taint_t *taint)
{
    if (tol->effect != NW_TAINT_EFFECT_ANY && tol->effect != taint->effect)
        return false;
    if (tol->key[0] && strcmp(tol->key, taint->key) != 0)
        return false;
    switch (tol->op) {
    case NW_TOL_EQUAL:
        return strcmp(tol->value, taint->value) == 0;
    case NW_TOL_EXISTS:
        return true;
    case NW_TOL_LT:
    case NW_TOL_GT: {
        int64_t tv, nv;
        if (!nw_tolerations_parse_decimal(tol->value, &tv) ||
            !nw_tolerations_parse_decimal(taint->value, &nv))
            return false;
        return tol->op == NW_TOL_LT ? nv < tv : nv > tv;
    }
    }
    return false;
}

bool nw_tolerations_tolerate(const nw_tolerations_t *tols, const nw_taint_t *taint)
{
    for (size_t i = 0; tols && i < tols->n; i++)
        if (nw_tolerations_match(&tols->v[i], taint))
            return true;
    return false;
}

const nw_taint_t *nw_tolerations_first_untolerated(const nw_taints_t *taints,
                                                   const nw_tolerations_t *tols,
                                                   nw_taints_mode_t mode)
{
    for (size_t i = 0; taints && i < taints->n; i++) {
        const nw_taint_t *t = &taints->v[i];
        if (mode == NW_TAINTS_SCHEDULING && t->effect != NW_TAINT_NO_SCHEDULE &&
            t->effect != NW_TAINT_NO_EXECUTE)
            continue;
        if (!nw_tolerations_tolerate(tols, t))
            return t;
    }
    return NULL;
}

bool nw_tolerations_tolerate_all(const nw_taints_t *taints, const nw_tolerations_t *tols,
                                 nw_taints_mode_t mode)
{
    return nw_tolerations_first_untolerated(taints, tols, mode) == NULL;
}
