/* api/nodepool_defaults.c — the NodePool CRD's schema defaults as a JSON patch (the `default:`
 * values of aws/karpenter-provider-aws pkg/apis/crds/karpenter.sh_nodepools.yaml). */
#include "api/kval.h"
#include "api/nodepool.h"

#include <stdio.h>

static NW_MUST_USE nw_rc_t add_str(nw_jsonpatch_t *p, const char *path, const char *s)
{
    cJSON *v = cJSON_CreateString(s);
    if (!v)
        return NW_ENOMEM;
    nw_rc_t rc = nw_jsonpatch_add(p, "add", path, v);
    cJSON_Delete(v);
    return rc;
}

static cJSON *budget_default(void)
{
    cJSON *arr = cJSON_CreateArray();
    cJSON *b = cJSON_CreateObject();
    if (!arr || !b || !cJSON_AddStringToObject(b, "nodes", "10%")) {
        cJSON_Delete(arr);
        cJSON_Delete(b);
        return NULL;
    }
    cJSON_AddItemToArray(arr, b);
    return arr;
}

nw_rc_t nw_nodepool_defaults_apply(const cJSON *obj, nw_jsonpatch_t *p)
{
    const cJSON *spec = nw_kval_get(obj, "spec");
    if (!cJSON_IsObject(spec))
        return NW_OK; /* spec is required; nothing to default into */
    nw_rc_t rc = NW_OK;
    const cJSON *dis = nw_kval_get(spec, "disruption");
    if (!dis) {
        /* {consolidateAfter: 0s}, then the nested defaults of that value */
        cJSON *d = cJSON_CreateObject();
        cJSON *budgets = budget_default();
        if (!d || !budgets || !cJSON_AddStringToObject(d, "consolidateAfter", "0s") ||
            !cJSON_AddStringToObject(d, "consolidationPolicy", "WhenEmptyOrUnderutilized")) {
            cJSON_Delete(d);
            cJSON_Delete(budgets);
            return NW_ENOMEM;
        }
        if (!cJSON_AddItemToObject(d, "budgets", budgets)) {
            cJSON_Delete(d);
            cJSON_Delete(budgets);
            return NW_ENOMEM;
        }
        rc = nw_jsonpatch_add(p, "add", "/spec/disruption", d);
        cJSON_Delete(d);
    } else if (cJSON_IsObject(dis)) {
        if (!nw_kval_get(dis, "consolidationPolicy"))
            rc = add_str(p, "/spec/disruption/consolidationPolicy", "WhenEmptyOrUnderutilized");
        const cJSON *budgets = nw_kval_get(dis, "budgets");
        if (rc == NW_OK && !budgets) {
            cJSON *b = budget_default();
            if (!b)
                return NW_ENOMEM;
            rc = nw_jsonpatch_add(p, "add", "/spec/disruption/budgets", b);
            cJSON_Delete(b);
        } else if (rc == NW_OK && cJSON_IsArray(budgets)) {
            int i = 0;
            for (const cJSON *b = budgets->child; b && rc == NW_OK; b = b->next, i++) {
                if (cJSON_IsObject(b) && !nw_kval_get(b, "nodes")) {
                    char path[96];
                    snprintf(path, sizeof path, "/spec/disruption/budgets/%d/nodes", i);
                    rc = add_str(p, path, "10%");
                }
            }
        }
        /* v1.14.x: consolidateAfter has no field-level default (aws/karpenter-provider-aws
         * v1.14.1 pkg/apis/crds/karpenter.sh_nodepools.yaml) */
    }
    const cJSON *tspec = nw_kval_get(nw_kval_get(spec, "template"), "spec");
    if (rc == NW_OK && cJSON_IsObject(tspec) && !nw_kval_get(tspec, "expireAfter"))
        rc = add_str(p, "/spec/template/spec/expireAfter", "720h");
    return rc;
}
