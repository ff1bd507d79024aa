/*
 * scaler/disrupt/budget.c — NodePool disruption budgets (kubernetes-sigs/karpenter
 * pkg/apis/v1/nodepool.go GetAllowedDisruptionsByReason):
 * nodes as a count or a percentage (rounded up), cron schedule + duration windows in
 * UTC, optional reasons; the strictest active budget wins; unparseable = 0.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "api/duration.h"
#include "api/cron.h"
#include "scaler/disrupt/disrupt.h"

const char *nw_budget_reason_str(nw_disrupt_reason_t r)
{
    switch (r) {
    case NW_DIS_EMPTY:
        return "Empty";
    case NW_DIS_DRIFTED:
        return "Drifted";
    case NW_DIS_UNDERUTILIZED:
        return "Underutilized";
    default:
        return "Unknown";
    }
}

/* nodes: "N" or "P%" (0-100); -1 when malformed */
static int scaled(const char *v, int nodes)
{
    size_t n = strlen(v);
    if (n == 0 || n > 11)
        return -1;
    /* n >= 1 here; cppcheck pairs the n > 11 bound with a short literal caller */
    // cppcheck-suppress arrayIndexOutOfBoundsCond
    int pct = v[n - 1] == '%';
    size_t digits = pct ? n - 1 : n;
    if (digits == 0)
        return -1;
    long long x = 0;
    for (size_t i = 0; i < digits; i++) {
        if (!isdigit((unsigned char)v[i]))
            return -1;
        x = x * 10 + (v[i] - '0');
        if (x > NW_DIS_UNLIMITED)
            return -1;
    }
    if (!pct)
        return (int)x;
    if (x > 100)
        return -1;
    /* intstr.GetScaledValueFromIntOrPercent(..., roundUp=true) */
    return (int)((x * nodes + 99) / 100);
}

/* One budget's allowance now; -1 malformed (message in err). */
static int one_budget(const cJSON *b, int i, int nodes, int64_t now, nw_err_t *err)
{
    char path[96];
    const cJSON *nv = nw_json_get(b, "nodes");
    const char *v = cJSON_GetStringValue(nv);
    char num[32];
    if (!v && cJSON_IsNumber(nv)) {
        snprintf(num, sizeof num, "%d", nv->valueint);
        v = num;
    }
    if (!v)
        v = "10%"; /* the CRD default */
    int val = scaled(v, nodes);
    if (val < 0) {
        snprintf(path, sizeof path, "spec.disruption.budgets[%d].nodes", i);
        nw_err_set(err, NW_EINVAL, path, "nodes \"%s\" is neither a count nor a percentage 0-100%%",
                   v);
        return -1;
    }
    const cJSON *sj = nw_json_get(b, "schedule"), *dj = nw_json_get(b, "duration");
    if (!sj && !dj)
        return val;
    const char *sched = cJSON_GetStringValue(sj), *dur = cJSON_GetStringValue(dj);
    if (!sched || !dur) {
        snprintf(path, sizeof path, "spec.disruption.budgets[%d].%s", i,
                 sched ? "duration" : "schedule");
        nw_err_set(err, NW_EINVAL, path, "schedule and duration must be set together");
        return -1;
    }
    nw_cron_t cron;
    nw_err_t e = {0};
    if (nw_cron_parse(sched, &cron, &e) != NW_OK) {
        snprintf(path, sizeof path, "spec.disruption.budgets[%d].schedule", i);
        nw_err_set(err, NW_EINVAL, path, "%s", e.msg);
        return -1;
    }
    int64_t d = 0;
    nw_err_clear(&e);
    if (nw_duration_parse(dur, &d, &e) != NW_OK || d < 0) {
        snprintf(path, sizeof path, "spec.disruption.budgets[%d].duration", i);
        nw_err_set(err, NW_EINVAL, path, "bad duration \"%s\"", dur);
        return -1;
    }
    return nw_cron_window_active(&cron, d, now) ? val : NW_DIS_UNLIMITED;
}

int nw_budget_allowed(const cJSON *nodepool, nw_disrupt_reason_t reason, int nodes, int64_t now,
                      nw_err_t *err)
{
    const cJSON *budgets =
        nw_json_get(nw_json_get(nw_json_get(nodepool, "spec"), "disruption"), "budgets");
    if (!cJSON_IsArray(budgets))
        return scaled("10%", nodes);
    int allowed = NW_DIS_UNLIMITED, i = 0;
    const cJSON *b;
    cJSON_ArrayForEach(b, budgets)
    {
        int v = one_budget(b, i++, nodes, now, err);
        if (v < 0)
            v = 0; /* fail closed */
        const cJSON *reasons = nw_json_get(b, "reasons");
        int applies = cJSON_GetArraySize(reasons) == 0;
        const cJSON *r;
        cJSON_ArrayForEach(r, reasons)
        {
            const char *s = cJSON_GetStringValue(r);
            if (s && strcmp(s, nw_budget_reason_str(reason)) == 0)
                applies = 1;
        }
        if (applies && v < allowed)
            allowed = v;
    }
    return allowed;
}
