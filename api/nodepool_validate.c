/* api/nodepool_validate.c — NodePool CRD validation (schema + CEL of aws/karpenter-provider-aws
 * pkg/apis/crds/karpenter.sh_nodepools.yaml) and Karpenter's runtime checks as warnings
 * (kubernetes-sigs/karpenter pkg/apis/v1/nodepool_validation.go RuntimeValidate). */
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/cron.h"
#include "api/duration.h"
#include "api/kre.h"
#include "api/kval.h"
#include "api/labels.h"
#include "api/nodepool.h"
#include "api/requirements.h"
#include "api/wellknown.h"
#include "common/strs.h"

typedef char path_t[NW_KV_PATH_MAX];

#define MAX_SEEN 200 /* taints compared for duplicates (layer D) */

/* in the CRD's enum order (Karpenter v1.14.1), which "supported values" lists */
static const char *const OPERATORS[] = {"Gte",          "Lte", "In", "NotIn", "Exists",
                                        "DoesNotExist", "Gt",  "Lt", NULL};
static const char *const EFFECTS[] = {"NoSchedule", "PreferNoSchedule", "NoExecute", NULL};
static const char *const POLICIES[] = {"WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced", NULL};
static const char *const REASONS[] = {"Underutilized", "Empty", "Drifted", NULL};

int nw_nodepool_validate_key_restrictions(const char *key, int aws, int nodepool,
                                          const char *fails[4])
{
    /* CEL: x.find("^([^/]+)") — the text before the first '/' ("" if key starts with '/') */
    const char *slash = strchr(key, '/');
    size_t dlen = slash ? (size_t)(slash - key) : strlen(key);
    int n = 0;
    if (nw_strs_has_suffix(key, dlen, "karpenter.sh") &&
        !nw_strs_in(key, (const char *const[]){NW_LABEL_CAPACITY_TYPE, NW_LABEL_NODEPOOL, NULL}))
        fails[n++] = "label domain \"karpenter.sh\" is restricted";
    if (nodepool && strcmp(key, NW_LABEL_NODEPOOL) == 0)
        fails[n++] = "label \"karpenter.sh/nodepool\" is restricted";
    if (strcmp(key, "kubernetes.io/hostname") == 0)
        fails[n++] = "label \"kubernetes.io/hostname\" is restricted";
    if (aws && nw_strs_has_suffix(key, dlen, "karpenter.k8s.aws") && !nw_wellknown_aws_allowed(key))
        fails[n++] = "label domain \"karpenter.k8s.aws\" is restricted";
    return n;
}

/* ---- layer D (runtime) checks, as warnings ------------------------------------------ */

static void warn(nw_admit_result_t *res, const char *path, const char *what, const char *detail)
{
    if (res)
        nw_admit_warn(res,
                      "%s: %s%s%s (Karpenter would mark the NodePool ValidationSucceeded=False)",
                      path, what, detail && *detail ? ": " : "", detail ? detail : "");
}

/* runtime: domain equals or is a dot-subdomain of karpenter.sh / karpenter.k8s.aws */
static bool runtime_restricted(const char *key)
{
    char dom[256];
    nw_labels_domain(key, dom, sizeof dom);
    static const char *const doms[] = {"karpenter.sh", "karpenter.k8s.aws", NULL};
    for (const char *const *d = doms; *d; d++) {
        size_t dl = strlen(dom), l = strlen(*d);
        if (strcmp(dom, *d) == 0 ||
            (dl > l && dom[dl - l - 1] == '.' && strcmp(dom + dl - l, *d) == 0))
            return strcmp(key, NW_LABEL_NODEPOOL) == 0 || !nw_wellknown_is_known(key);
    }
    return false;
}

static void warn_key(nw_admit_result_t *res, const char *path, const char *key)
{
    nw_labels_msgs_t m = {0};
    char buf[512];
    if (!nw_labels_key_valid(key, &m)) {
        nw_labels_msgs_join(&m, "; ", buf, sizeof buf);
        warn(res, path, "invalid label key", buf);
    }
    if (runtime_restricted(key))
        warn(res, path, "restricted label key", key);
}

static void warn_value(nw_admit_result_t *res, const char *path, const char *v)
{
    nw_labels_msgs_t m = {0};
    char buf[512];
    if (!nw_labels_value_valid(v, &m)) {
        nw_labels_msgs_join(&m, "; ", buf, sizeof buf);
        warn(res, path, "invalid label value", buf);
    }
}

/* ---- schema pieces ------------------------------------------------------------------- */

/* Type-check an optional string member; returns it or NULL. */
static const char *opt_str(nw_kv_t *kv, const cJSON *obj, const char *parent, const char *name)
{
    const cJSON *v = nw_kval_get(obj, name);
    path_t p;
    if (!v || !nw_kval_type(kv, nw_kval_path(p, parent, name), v, "string"))
        return NULL;
    return v->valuestring;
}

/* Required string member. */
static const char *req_str(nw_kv_t *kv, const cJSON *obj, const char *parent, const char *name)
{
    if (!nw_kval_get(obj, name)) {
        nw_kval_required(kv, parent, name);
        return NULL;
    }
    return opt_str(kv, obj, parent, name);
}

static const cJSON *opt_typed(nw_kv_t *kv, const cJSON *obj, const char *parent, const char *name,
                              const char *type)
{
    const cJSON *v = nw_kval_get(obj, name);
    path_t p;
    if (!v || !nw_kval_type(kv, nw_kval_path(p, parent, name), v, type))
        return NULL;
    return v;
}

static void check_taints(nw_kv_t *kv, const cJSON *tspec, const char *tpath, const char *name,
                         nw_admit_result_t *res, char seen[][2][320], int *nseen)
{
    path_t lp, ip, fp;
    const cJSON *arr = opt_typed(kv, tspec, tpath, name, "array");
    if (!arr)
        return;
    nw_kval_path(lp, tpath, name);
    size_t i = 0;
    for (const cJSON *t = arr->child; t && !nw_admit_deadline_passed(); t = t->next, i++) {
        nw_kval_idx(ip, lp, i);
        if (!nw_kval_type(kv, ip, t, "object"))
            continue;
        const char *key = req_str(kv, t, ip, "key");
        const char *effect = req_str(kv, t, ip, "effect");
        const char *value = opt_str(kv, t, ip, "value");
        const char *added = opt_str(kv, t, ip, "timeAdded");
        if (key) {
            nw_kval_path(fp, ip, "key");
            if (nw_kval_min_len(kv, fp, key, 1))
                nw_kval_pattern(kv, fp, key, nw_kre(NW_RE_QNAME));
            if (*key)
                warn_key(res, fp, key);
        }
        if (value) {
            nw_kval_path(fp, ip, "value");
            nw_kval_pattern(kv, fp, value, nw_kre(NW_RE_QNAME));
        }
        if (effect) {
            nw_kval_path(fp, ip, "effect");
            nw_kval_enum(kv, fp, effect, EFFECTS);
        }
        if (added && !nw_kval_re_match(nw_kre(NW_RE_DATETIME), added)) {
            char q[600];
            nw_kval_path(fp, ip, "timeAdded");
            /* a format failure is a TypeInvalid error, which gates the CEL rules */
            nw_kval_add(kv, NW_KV_TYPE, false, fp,
                        "Invalid value: %s: %s in body must be of type date-time: %s",
                        nw_kval_quote(q, sizeof q, added), fp, q);
        }
        /* layer D: no duplicate (key, effect) across taints and startupTaints */
        if (key && effect && *nseen < MAX_SEEN) {
            for (int k = 0; k < *nseen; k++)
                if (strcmp(seen[k][0], key) == 0 && strcmp(seen[k][1], effect) == 0) {
                    char d[700];
                    snprintf(d, sizeof d, "%s:%s", key, effect);
                    warn(res, ip, "duplicate taint", d);
                    break;
                }
            snprintf(seen[*nseen][0], sizeof seen[0][0], "%s", key);
            snprintf(seen[*nseen][1], sizeof seen[0][1], "%s", effect);
            (*nseen)++;
        }
    }
}

/* CEL list rules over requirements (path = the list). */
static void requirements_cel(nw_kv_t *kv, const char *lp, const cJSON *arr)
{
    static const char *const M_IN = "requirements with operator 'In' must have a value defined";
    static const char *const M_NUM = "requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have "
                                     "a single positive integer value";
    static const char *const M_MIN = "requirements with 'minValues' must have at least that many "
                                     "values specified in the 'values' field";
    /* self.all(): a false item wins over an evaluation error in another item */
    bool f_in = false, f_num = false, f_min = false;
    const char *e_in = NULL, *e_num = NULL, *e_min = NULL;
    for (const cJSON *r = arr->child; r && !nw_admit_deadline_passed(); r = r->next) {
        const cJSON *op = nw_kval_get(r, "operator");
        const cJSON *vals = nw_kval_get(r, "values");
        const cJSON *minv = nw_kval_get(r, "minValues");
        if (!cJSON_IsString(op))
            continue; /* schema errors gate CEL */
        const char *o = op->valuestring;
        int nvals = cJSON_IsArray(vals) ? cJSON_GetArraySize(vals) : -1;
        if (strcmp(o, "In") == 0) {
            if (nvals < 0)
                e_in = e_in ? e_in : "no such key: values";
            else if (nvals == 0)
                f_in = true;
            if (minv) {
                if (nvals < 0)
                    e_min = e_min ? e_min : "no such key: values";
                else if (cJSON_IsNumber(minv) && nvals < minv->valuedouble)
                    f_min = true;
            }
        }
        if (!strcmp(o, "Gt") || !strcmp(o, "Lt") || !strcmp(o, "Gte") || !strcmp(o, "Lte")) {
            if (nvals < 0) {
                e_num = e_num ? e_num : "no such key: values";
            } else if (nvals != 1) {
                f_num = true;
            } else {
                const cJSON *v0 = vals->child;
                long long n = 0;
                if (!cJSON_IsString(v0) || !nw_kval_cel_int(v0->valuestring, &n))
                    e_num = e_num ? e_num : "type conversion error from 'string' to 'int'";
                else if (n < 0)
                    f_num = true;
            }
        }
    }
    if (f_in)
        nw_kval_cel(kv, lp, "array", M_IN);
    else if (e_in)
        nw_kval_cel_eval(kv, lp, "array", e_in, M_IN);
    if (f_num)
        nw_kval_cel(kv, lp, "array", M_NUM);
    else if (e_num)
        nw_kval_cel_eval(kv, lp, "array", e_num, M_NUM);
    if (f_min)
        nw_kval_cel(kv, lp, "array", M_MIN);
    else if (e_min)
        nw_kval_cel_eval(kv, lp, "array", e_min, M_MIN);
}

static void check_requirements(nw_kv_t *kv, const cJSON *tspec, const char *tpath,
                               nw_admit_result_t *res)
{
    path_t lp, ip, fp;
    nw_kval_path(lp, tpath, "requirements");
    if (!nw_kval_get(tspec, "requirements")) {
        nw_kval_required(kv, tpath, "requirements");
        return;
    }
    const cJSON *arr = opt_typed(kv, tspec, tpath, "requirements", "array");
    if (!arr)
        return;
    nw_kval_max_items(kv, lp, arr, 100);
    size_t i = 0;
    for (const cJSON *r = arr->child; r && !nw_admit_deadline_passed(); r = r->next, i++) {
        nw_kval_idx(ip, lp, i);
        if (!nw_kval_type(kv, ip, r, "object"))
            continue;
        const char *key = req_str(kv, r, ip, "key");
        const char *op = req_str(kv, r, ip, "operator");
        const cJSON *vals = opt_typed(kv, r, ip, "values", "array");
        const cJSON *minv = opt_typed(kv, r, ip, "minValues", "integer");
        if (key) {
            nw_kval_path(fp, ip, "key");
            if (nw_kval_max_len(kv, fp, key, 316))
                nw_kval_pattern(kv, fp, key, nw_kre(NW_RE_QNAME));
            const char *fails[4];
            int nf = nw_nodepool_validate_key_restrictions(key, 1, 1, fails);
            for (int k = 0; k < nf; k++)
                nw_kval_cel_str(kv, fp, key, fails[k]);
        }
        if (op) {
            nw_kval_path(fp, ip, "operator");
            nw_kval_enum(kv, fp, op, OPERATORS);
        }
        if (vals) {
            size_t j = 0;
            path_t vp, vl;
            nw_kval_path(vl, ip, "values");
            for (const cJSON *v = vals->child; v; v = v->next, j++)
                nw_kval_type(kv, nw_kval_idx(vp, vl, j), v, "string");
        }
        if (minv) {
            nw_kval_path(fp, ip, "minValues");
            nw_kval_int_range(kv, fp, minv->valuedouble, 1, 50);
        }
    }
    requirements_cel(kv, lp, arr);
    /* layer D: Karpenter's ValidateRequirement (api/requirements) as warnings */
    if (res) {
        nw_errs_t *errs = malloc(sizeof *errs);
        if (errs) {
            nw_err_list_init(errs);
            nw_requirements_validate_runtime(arr, lp, errs);
            for (size_t k = 0; k < errs->n; k++)
                warn(res, errs->v[k].path, errs->v[k].msg, NULL);
            free(errs);
        }
    }
}

static void check_labels(nw_kv_t *kv, const cJSON *meta, const char *mpath, nw_admit_result_t *res)
{
    path_t lp, kp;
    const cJSON *labels = opt_typed(kv, meta, mpath, "labels", "object");
    if (labels) {
        nw_kval_path(lp, mpath, "labels");
        nw_kval_max_items(kv, lp, labels, 100);
        /* each CEL rule is self.all() over the keys: at most one error per rule, in
         * rule order (karpenter.sh domain, nodepool, hostname, karpenter.k8s.aws) */
        static const char *const order[] = {"label domain \"karpenter.sh\" is restricted",
                                            "label \"karpenter.sh/nodepool\" is restricted",
                                            "label \"kubernetes.io/hostname\" is restricted",
                                            "label domain \"karpenter.k8s.aws\" is restricted"};
        int failed[4] = {0};
        for (const cJSON *l = labels->child; l; l = l->next) {
            nw_kval_key(kp, lp, l->string);
            if (nw_kval_type(kv, kp, l, "string")) {
                if (nw_kval_max_len(kv, kp, l->valuestring, 63))
                    nw_kval_pattern(kv, kp, l->valuestring, nw_kre(NW_RE_LABEL_VALUE));
                warn_value(res, kp, l->valuestring);
            }
            warn_key(res, kp, l->string);
            const char *fails[4];
            int nf = nw_nodepool_validate_key_restrictions(l->string, 1, 1, fails);
            for (int k = 0; k < nf; k++)
                for (int o = 0; o < 4; o++)
                    if (strcmp(fails[k], order[o]) == 0)
                        failed[o] = 1;
        }
        for (int o = 0; o < 4; o++)
            if (failed[o])
                nw_kval_cel(kv, lp, "object", order[o]);
    }
    const cJSON *ann = opt_typed(kv, meta, mpath, "annotations", "object");
    if (ann) {
        nw_kval_path(lp, mpath, "annotations");
        for (const cJSON *a = ann->child; a; a = a->next)
            nw_kval_type(kv, nw_kval_key(kp, lp, a->string), a, "string");
    }
}

static void check_node_class_ref(nw_kv_t *kv, const cJSON *tspec, const char *tpath,
                                 const cJSON *old_tspec, nw_admit_result_t *res)
{
    path_t rp, fp;
    nw_kval_path(rp, tpath, "nodeClassRef");
    if (!nw_kval_get(tspec, "nodeClassRef")) {
        nw_kval_required(kv, tpath, "nodeClassRef");
        return;
    }
    const cJSON *ref = opt_typed(kv, tspec, tpath, "nodeClassRef", "object");
    if (!ref)
        return;
    const char *group = req_str(kv, ref, rp, "group");
    const char *kind = req_str(kv, ref, rp, "kind");
    const char *name = req_str(kv, ref, rp, "name");
    if (group) {
        nw_kval_path(fp, rp, "group");
        nw_kval_pattern(kv, fp, group, nw_kre(NW_RE_GROUP));
        if (!*group)
            nw_kval_cel_str(kv, fp, group, "group may not be empty");
    }
    if (kind && !*kind)
        nw_kval_cel_str(kv, nw_kval_path(fp, rp, "kind"), kind, "kind may not be empty");
    if (name && !*name)
        nw_kval_cel_str(kv, nw_kval_path(fp, rp, "name"), name, "name may not be empty");
    /* transition rules: only when the old object has nodeClassRef */
    const cJSON *old = nw_kval_get(old_tspec, "nodeClassRef");
    if (cJSON_IsObject(old)) {
        const cJSON *og = nw_kval_get(old, "group"), *ok = nw_kval_get(old, "kind");
        if (group && cJSON_IsString(og) && strcmp(group, og->valuestring) != 0)
            nw_kval_cel(kv, rp, "object", "nodeClassRef.group is immutable");
        if (kind && cJSON_IsString(ok) && strcmp(kind, ok->valuestring) != 0)
            nw_kval_cel(kv, rp, "object", "nodeClassRef.kind is immutable");
    }
    if (group && kind && *group && *kind &&
        (strcmp(group, "karpenter.k8s.aws") != 0 || strcmp(kind, "EC2NodeClass") != 0)) {
        char d[400];
        snprintf(d, sizeof d,
                 "%.120s/%.120s (the AWS provider supports karpenter.k8s.aws/EC2NodeClass)", group,
                 kind);
        warn(res, rp, "unsupported node class", d);
    }
}

/* ---- values the CRD admits that can never work, as warnings ------------------------ */

/* A duration that matches its pattern but that Go's time.ParseDuration refuses (beyond
 * 2562047h47m16.854775807s, int64 nanoseconds): Karpenter cannot decode the NodePool. */
static void warn_duration(nw_admit_result_t *res, const char *path, const char *s, bool matched)
{
    int64_t ns;
    nw_err_t e = {0};
    if (res && matched && strcmp(s, "Never") != 0 && nw_duration_parse(s, &ns, &e) != NW_OK)
        nw_admit_warn(res,
                      "%s: %.64s can never work: Karpenter cannot read it (%s; at most "
                      "2562047h47m16s)",
                      path, s, e.msg);
}

/* A schedule that matches the CRD's pattern but is not a cron expression (`99 99 99 99
 * 99`, a step of 0): the budget never applies, and Karpenter counts it as allowing 0
 * disruptions. */
static void warn_schedule(nw_admit_result_t *res, const char *path, const char *s, bool matched)
{
    nw_cron_t c;
    nw_err_t e = {0};
    if (res && matched && nw_cron_parse(s, &c, &e) != NW_OK)
        nw_admit_warn(res,
                      "%s: %.64s is not a cron schedule (%s): this budget can never be active, "
                      "and while it is there the NodePool allows 0 disruptions",
                      path, s, e.msg);
}

static void check_disruption(nw_kv_t *kv, const cJSON *spec, nw_admit_result_t *res)
{
    path_t dp, fp, bp, ip, rp, xp;
    const cJSON *dis = opt_typed(kv, spec, "spec", "disruption", "object");
    if (!dis)
        return;
    nw_kval_path(dp, "spec", "disruption");
    const char *ca = req_str(kv, dis, dp, "consolidateAfter");
    if (ca)
        warn_duration(res, fp, ca,
                      nw_kval_pattern(kv, nw_kval_path(fp, dp, "consolidateAfter"), ca,
                                      nw_kre(NW_RE_DUR_NEVER)));
    const char *pol = opt_str(kv, dis, dp, "consolidationPolicy");
    if (pol)
        nw_kval_enum(kv, nw_kval_path(fp, dp, "consolidationPolicy"), pol, POLICIES);
    const cJSON *budgets = opt_typed(kv, dis, dp, "budgets", "array");
    if (!budgets)
        return;
    nw_kval_path(bp, dp, "budgets");
    nw_kval_max_items(kv, bp, budgets, 50);
    size_t i = 0;
    bool mismatch = false;
    for (const cJSON *b = budgets->child; b; b = b->next, i++) {
        nw_kval_idx(ip, bp, i);
        if (!nw_kval_type(kv, ip, b, "object"))
            continue;
        const char *nodes = req_str(kv, b, ip, "nodes");
        const char *sched = opt_str(kv, b, ip, "schedule");
        const char *dur = opt_str(kv, b, ip, "duration");
        if (nodes)
            nw_kval_pattern(kv, nw_kval_path(fp, ip, "nodes"), nodes, nw_kre(NW_RE_BUDGET_NODES));
        if (sched)
            warn_schedule(
                res, fp, sched,
                nw_kval_pattern(kv, nw_kval_path(fp, ip, "schedule"), sched, nw_kre(NW_RE_CRON)));
        if (dur)
            warn_duration(res, fp, dur,
                          nw_kval_pattern(kv, nw_kval_path(fp, ip, "duration"), dur,
                                          nw_kre(NW_RE_BUDGET_DUR)));
        if ((nw_kval_get(b, "schedule") != NULL) != (nw_kval_get(b, "duration") != NULL))
            mismatch = true;
        const cJSON *reasons = opt_typed(kv, b, ip, "reasons", "array");
        if (reasons) {
            nw_kval_path(rp, ip, "reasons");
            nw_kval_max_items(kv, rp, reasons, 50);
            size_t j = 0;
            for (const cJSON *r = reasons->child; r; r = r->next, j++) {
                nw_kval_idx(xp, rp, j);
                if (!nw_kval_type(kv, xp, r, "string"))
                    continue;
                nw_kval_enum(kv, xp, r->valuestring, REASONS);
                /* only the second appearance of a value is a Duplicate (k8s.io/
                 * apiextensions-apiserver pkg/apiserver/schema/listtype validateListSet) */
                int seen = 0;
                for (const cJSON *q = reasons->child; q != r; q = q->next)
                    seen += cJSON_IsString(q) && strcmp(q->valuestring, r->valuestring) == 0;
                if (seen == 1) {
                    char qq[600];
                    nw_kval_add(kv, NW_KV_DUPLICATE, false, xp, "Duplicate value: %s",
                                nw_kval_quote(qq, sizeof qq, r->valuestring));
                }
            }
        }
    }
    if (mismatch)
        nw_kval_cel(kv, bp, "array", "'schedule' must be set with 'duration'");
}

static void check_limits(nw_kv_t *kv, const cJSON *spec)
{
    path_t lp, kp;
    const cJSON *limits = opt_typed(kv, spec, "spec", "limits", "object");
    if (!limits)
        return;
    nw_kval_path(lp, "spec", "limits");
    for (const cJSON *l = limits->child; l; l = l->next) {
        nw_kval_key(kp, lp, l->string);
        const char *t = nw_kval_jtype(l);
        if (strcmp(t, "integer") == 0)
            continue;
        if (strcmp(t, "string") == 0) {
            nw_kval_pattern(kv, kp, l->valuestring, nw_kre(NW_RE_QUANTITY));
            continue;
        }
        /* the int-or-string schema (anyOf integer, string) fails three ways, as
         * kube-apiserver reports it: the type, the anyOf, the first branch's type */
        nw_kval_add(kv, NW_KV_TYPE, false, kp,
                    "Invalid value: \"%s\": %s in body must be of type integer,string: \"%s\"", t,
                    kp, t);
        nw_kval_add(kv, NW_KV_INVALID, false, "<nil>",
                    "Invalid value: \"\": \"%s\" must validate at least one schema (anyOf)", kp);
        nw_kval_add(kv, NW_KV_TYPE, false, kp,
                    "Invalid value: \"%s\": %s in body must be of type integer: \"%s\"", t, kp, t);
    }
}

nw_rc_t nw_nodepool_validate(const cJSON *obj, const cJSON *old, nw_kv_t *kv,
                             nw_admit_result_t *res)
{
    path_t fp;
    const cJSON *spec = nw_kval_get(obj, "spec");
    if (!spec) {
        nw_kval_required(kv, "", "spec");
        return kv->oom ? NW_ENOMEM : NW_OK;
    }
    if (!nw_kval_type(kv, "spec", spec, "object"))
        return kv->oom ? NW_ENOMEM : NW_OK;
    const cJSON *ospec = nw_kval_get(old, "spec");

    const cJSON *tmpl = nw_kval_get(spec, "template");
    if (!tmpl)
        nw_kval_required(kv, "spec", "template");
    else if (nw_kval_type(kv, "spec.template", tmpl, "object")) {
        const cJSON *meta = opt_typed(kv, tmpl, "spec.template", "metadata", "object");
        if (meta)
            check_labels(kv, meta, "spec.template.metadata", res);
        const cJSON *tspec = nw_kval_get(tmpl, "spec");
        if (!tspec)
            nw_kval_required(kv, "spec.template", "spec");
        else if (nw_kval_type(kv, "spec.template.spec", tspec, "object")) {
            const char *tp = "spec.template.spec";
            const cJSON *old_tspec = nw_kval_get(nw_kval_get(ospec, "template"), "spec");
            check_node_class_ref(kv, tspec, tp, old_tspec, res);
            check_requirements(kv, tspec, tp, res);
            char(*seen)[2][320] = malloc(sizeof(char[MAX_SEEN][2][320]));
            int nseen = seen ? 0 : MAX_SEEN;
            check_taints(kv, tspec, tp, "taints", res, seen, &nseen);
            check_taints(kv, tspec, tp, "startupTaints", res, seen, &nseen);
            free(seen);
            const char *ea = opt_str(kv, tspec, tp, "expireAfter");
            if (ea)
                warn_duration(res, fp, ea,
                              nw_kval_pattern(kv, nw_kval_path(fp, tp, "expireAfter"), ea,
                                              nw_kre(NW_RE_DUR_NEVER)));
            const char *tgp = opt_str(kv, tspec, tp, "terminationGracePeriod");
            if (tgp)
                warn_duration(res, fp, tgp,
                              nw_kval_pattern(kv, nw_kval_path(fp, tp, "terminationGracePeriod"),
                                              tgp, nw_kre(NW_RE_DUR)));
        }
    }
    check_disruption(kv, spec, res);
    check_limits(kv, spec);
    const cJSON *weight = opt_typed(kv, spec, "spec", "weight", "integer");
    if (weight)
        nw_kval_int_range(kv, "spec.weight", weight->valuedouble, 1, 100);
    const cJSON *replicas = opt_typed(kv, spec, "spec", "replicas", "integer");
    if (replicas)
        nw_kval_int_range(kv, "spec.replicas", replicas->valuedouble, 0, LLONG_MAX);

    /* spec-level CEL rules */
    bool has_rep = nw_kval_get(spec, "replicas") != NULL;
    if (cJSON_IsObject(ospec) && has_rep != (nw_kval_get(ospec, "replicas") != NULL))
        nw_kval_cel(
            kv, "spec", "object",
            "Cannot transition NodePool between static (replicas set) and dynamic (replicas "
            "unset) provisioning modes");
    if (has_rep) {
        const cJSON *lim = nw_kval_get(spec, "limits");
        int nlim = cJSON_IsObject(lim) ? cJSON_GetArraySize(lim) : 0;
        if (lim && !(nlim == 0 || (nlim == 1 && nw_kval_get(lim, "nodes"))))
            nw_kval_cel(kv, "spec", "object",
                        "only 'limits.nodes' is supported on static NodePools");
        if (nw_kval_get(spec, "weight"))
            nw_kval_cel(kv, "spec", "object", "'weight' is not supported on static NodePools");
    }
    return kv->oom ? NW_ENOMEM : NW_OK;
}
