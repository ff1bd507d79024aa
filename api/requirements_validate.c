/*
 * api/requirements_validate.c — Karpenter's runtime validation of requirements
 * (a NodePool that fails it is stored but not used: kubernetes-sigs/karpenter
 * pkg/controllers/nodepool/validation/controller.go).
 * Messages are Karpenter's (pkg/apis/v1/nodeclaim_validation.go ValidateRequirement,
 * validateWellKnownValues; pkg/apis/v1/labels.go IsRestrictedLabel). Where Karpenter
 * prints a Go set in map order, the list is printed sorted.
 */
#include "api/requirements.h"
#include "api/wellknown.h"
#include "common/strs.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *buf;
    size_t n, len;
    int count;
} acc_t;

static void accf(acc_t *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void accf(acc_t *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = a->buf && a->len < a->n ? a->n - a->len : 0;
    int r = vsnprintf(room ? a->buf + a->len : NULL, room, fmt, ap);
    va_end(ap);
    if (r > 0)
        a->len += (size_t)r;
}

/* start one multierr element */
static void next(acc_t *a)
{
    if (a->count++)
        accf(a, "; ");
}

/* Go's %v of a []string: [a b c] */
static void list(acc_t *a, const char *const *v, size_t n)
{
    accf(a, "[");
    for (size_t i = 0; i < n; i++)
        accf(a, "%s%s", i ? " " : "", v[i]);
    accf(a, "]");
}

static void restricted_msg(acc_t *a, const char *key)
{
    size_t n;
    const char *const *wk = nw_wellknown_labels(&n);
    const char *sorted[64];
    if (n > 64)
        n = 64;
    memcpy(sorted, wk, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, nw_strs_cmp);
    static const char *const domains[] = {"k8s.io", "karpenter.k8s.aws", "karpenter.sh",
                                          "kubernetes.io"};
    accf(a, "label %s is restricted; specify a well known label: ", key);
    list(a, sorted, n);
    accf(a, ", or a custom label that does not use a restricted domain: ");
    list(a, domains, 4);
}

static void well_known_values(acc_t *a, const char *key, const char *op, const char *const *values,
                              size_t nvalues, int min_values)
{
    static const char *const cap[] = {"on-demand", "reserved", "spot"};
    static const char *const ten[] = {"default", "dedicated"};
    const char *const *known;
    size_t nknown;
    if (strcmp(op, "In") != 0)
        return;
    if (strcmp(key, NW_LABEL_CAPACITY_TYPE) == 0) {
        known = cap;
        nknown = 3;
    } else if (strcmp(key, "karpenter.k8s.aws/instance-tenancy") == 0) {
        known = ten;
        nknown = 2;
    } else {
        return;
    }
    size_t good = 0;
    for (size_t i = 0; i < nvalues; i++)
        for (size_t k = 0; k < nknown; k++)
            if (strcmp(values[i], known[k]) == 0) {
                good++;
                break;
            }
    if (good == 0) {
        next(a);
        accf(a, "no valid values found in ");
        list(a, values, nvalues);
        accf(a, " for %s, expected one of: map[", key);
        for (size_t k = 0; k < nknown; k++)
            accf(a, "%s%s:{}", k ? " " : "", known[k]);
        accf(a, "], got: ");
        list(a, values, nvalues); /* all of them are invalid */
        return;
    }
    if (min_values > 0 && good < (size_t)min_values) {
        next(a);
        accf(a, "not enough valid values found in ");
        list(a, values, nvalues);
        accf(a, " for %s, expected at least %d valid values from: ", key, min_values);
        list(a, known, nknown);
        accf(a, ", got: %zu", good);
    }
}

int nw_requirements_validate_requirement(const char *key, const char *op, const char *const *values,
                                         size_t nvalues, int min_values, char *msg, size_t n)
{
    acc_t a = {msg, n, 0, 0};
    if (msg && n)
        msg[0] = '\0';
    key = nw_wellknown_normalize(key);
    nw_req_op_t o;
    bool op_ok = nw_requirements_req_op_parse(op, NW_REQS_PARSE_KARPENTER, &o);
    if (!op_ok) {
        next(&a);
        accf(&a,
             "key %s has an unsupported operator %s not in [In NotIn Exists DoesNotExist "
             "Gt Lt Gte Lte]",
             key, op);
    }
    if (!nw_wellknown_is_known(key) && nw_wellknown_is_restricted_node_label(key)) {
        next(&a);
        restricted_msg(&a, key);
    }
    if (nw_wellknown_is_known(key))
        well_known_values(&a, key, op, values, nvalues, min_values);
    nw_labels_msgs_t m;
    nw_labels_key_valid(key, &m);
    for (size_t i = 0; i < m.n; i++) {
        next(&a);
        accf(&a, "key %s is not a qualified name, %s", key, m.v[i]);
    }
    for (size_t v = 0; v < nvalues; v++) {
        nw_labels_value_valid(values[v], &m);
        for (size_t i = 0; i < m.n; i++) {
            next(&a);
            accf(&a, "invalid value %s for key %s, %s", values[v], key, m.v[i]);
        }
    }
    if (strcmp(op, "In") == 0 && nvalues == 0) {
        next(&a);
        accf(&a, "key %s with operator %s must have a value defined", key, op);
    }
    if (strcmp(op, "In") == 0 && min_values > 0 && nvalues < (size_t)min_values) {
        next(&a);
        accf(&a,
             "key %s with operator %s must have at least minimum number of values defined in "
             "'values' field",
             key, op);
    }
    if (op_ok && (o == NW_REQ_GT || o == NW_REQ_LT || o == NW_REQ_GTE || o == NW_REQ_LTE)) {
        int64_t x;
        if (nvalues != 1 || !nw_requirements_req_atoi(values[0], &x) || x < 0) {
            next(&a);
            accf(&a, "key %s with operator %s must have a single positive integer value", key, op);
        }
    }
    return a.count;
}

int nw_requirements_validate_runtime(const cJSON *arr, const char *path, nw_errs_t *errs)
{
    if (!path)
        path = "";
    if (!arr || cJSON_IsNull(arr))
        return 0;
    if (!cJSON_IsArray(arr)) {
        nw_err_list_add(errs, NW_EINVAL, path, "must be of type array");
        return 1;
    }
    int added = 0, i = 0;
    for (const cJSON *it = arr->child; it; it = it->next, i++) {
        char p[160];
        snprintf(p, sizeof p, "%s[%d]", path, i);
        const cJSON *jk = cJSON_GetObjectItemCaseSensitive(it, "key");
        const cJSON *jo = cJSON_GetObjectItemCaseSensitive(it, "operator");
        const cJSON *jv = cJSON_GetObjectItemCaseSensitive(it, "values");
        const cJSON *jm = cJSON_GetObjectItemCaseSensitive(it, "minValues");
        if (!cJSON_IsObject(it) || !cJSON_IsString(jk) || !cJSON_IsString(jo) ||
            (jv && !cJSON_IsNull(jv) && !cJSON_IsArray(jv)) ||
            (jm && !cJSON_IsNull(jm) && !cJSON_IsNumber(jm))) {
            nw_err_list_add(errs, NW_EINVAL, p, "must be an object with string key and operator");
            added++;
            continue;
        }
        int nv = jv && cJSON_IsArray(jv) ? cJSON_GetArraySize(jv) : 0;
        const char **vals = nv ? calloc((size_t)nv, sizeof *vals) : NULL;
        if (nv && !vals) {
            nw_err_list_add(errs, NW_ENOMEM, p, "out of memory");
            return added + 1;
        }
        int k = 0;
        bool typed = true;
        for (const cJSON *v = nv ? jv->child : NULL; v; v = v->next, k++) {
            if (!cJSON_IsString(v))
                typed = false;
            vals[k] = cJSON_IsString(v) ? v->valuestring : "";
        }
        if (!typed) {
            nw_err_list_add(errs, NW_EINVAL, p, "values must be strings");
            added++;
            free(vals);
            continue;
        }
        int min_values = 0;
        if (jm && cJSON_IsNumber(jm))
            min_values = jm->valuedouble >= 1 && jm->valuedouble <= 1e6 ? (int)jm->valuedouble : 0;
        char msg[sizeof errs->v[0].msg];
        if (nw_requirements_validate_requirement(jk->valuestring, jo->valuestring, vals, (size_t)nv,
                                                 min_values, msg, sizeof msg - 48) > 0) {
            nw_err_list_add(errs, NW_EINVAL, p, "invalid value: %s in requirements, restricted",
                            msg);
            added++;
        }
        free(vals);
    }
    return added;
}
