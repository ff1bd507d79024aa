/* Unit tests for scaler/disruption: the cron evaluator, budgets, and the decision core
 * through the table-driven cases of tests/data/disruption/NNN-name.yaml. A case gives
 * NodePools, nodes (a NodeClaim + Node pair each, in a short form), pods and PDBs, the
 * answers of a fake simulation keyed by the excluded NodeClaims, and the expected
 * command, per-node verdicts, budgets and notes; optionally a second state to validate
 * the command against. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "api/duration.h"
#include "common/clock.h"
#include "common/yaml.h"
#include "scaler/sched/from_catalog.h"
#include "api/cron.h"
#include "scaler/disrupt/disrupt.h"
#include "scaler/disrupt/sim.h"
#include "tests/unit/testutil.h"

Suite *nw_disruption_suite(void);

static int64_t T(const char *s)
{
    int64_t t = 0;
    ck_assert_msg(nw_clock_time_parse(s, &t) == NW_OK, "bad time %s", s);
    return t;
}

/* ---- cron ---- */

START_TEST(cron_cases)
{
    static const struct {
        const char *expr, *at;
        int match;
    } m[] = {
        {"* * * * *", "2026-11-30T10:17:00Z", 1},
        {"0 9 * * *", "2026-11-30T09:00:30Z", 1},
        {"0 9 * * *", "2026-11-30T09:01:00Z", 0},
        {"*/15 * * * *", "2026-11-30T09:45:00Z", 1},
        {"*/15 * * * *", "2026-11-30T09:46:00Z", 0},
        {"5-10/5 * * * *", "2026-11-30T09:10:00Z", 1},
        {"5/20 * * * *", "2026-11-30T09:45:00Z", 1},
        {"0 0 * * mon-fri", "2026-11-30T00:00:00Z", 1}, /* a Monday */
        {"0 0 * * SAT,sun", "2026-11-30T00:00:00Z", 0},
        {"0 0 * dec *", "2026-12-01T00:00:00Z", 1},
        {"0 0 1 jan *", "2026-12-01T00:00:00Z", 0},
        /* dom and dow both restricted: either matches (Nov 30 is not the 1st, but a Monday) */
        {"0 0 1 * 1", "2026-11-30T00:00:00Z", 1},
        /* dow is "*": both must match */
        {"0 0 1 * *", "2026-11-30T00:00:00Z", 0},
        /* "*" with a step is not a star (robfig/cron): OR again */
        {"0 0 1 * */2", "2026-11-30T00:00:00Z", 0},
        {"0 0 1 * */1", "2026-11-01T00:00:00Z", 1},
        {"@daily", "2026-11-30T00:00:00Z", 1},
        {"@midnight", "2026-11-30T00:01:00Z", 0},
        {"@hourly", "2026-11-30T07:00:00Z", 1},
        {"@weekly", "2026-11-29T00:00:00Z", 1}, /* Sunday */
        {"@monthly", "2026-11-01T00:00:00Z", 1},
        {"@yearly", "2027-01-01T00:00:00Z", 1},
        {"@annually", "2026-01-02T00:00:00Z", 0},
        {"? ? ? ? ?", "2026-01-02T00:00:00Z", 1},
    };
    for (size_t i = 0; i < sizeof m / sizeof *m; i++) {
        nw_cron_t c;
        nw_err_t err = {0};
        ck_assert_msg(nw_cron_parse(m[i].expr, &c, &err) == NW_OK, "%s: %s", m[i].expr, err.msg);
        ck_assert_msg(nw_cron_matches(&c, T(m[i].at)) == (m[i].match != 0), "%s at %s", m[i].expr,
                      m[i].at);
    }
    static const struct {
        const char *expr, *field;
    } bad[] = {{"", NULL},
               {"* * * *", NULL},
               {"* * * * * *", NULL},
               {"60 * * * *", "minute"},
               {"* 24 * * *", "hour"},
               {"* * 0 * *", "day of month"},
               {"* * * 13 *", "month"},
               {"* * * * 7", "day of week"},
               {"* * * * funday", "day of week"},
               {"*/0 * * * *", "minute"},
               {"5-1 * * * *", "minute"},
               {"1,,2 * * * *", "minute"},
               {"@every 5m", NULL},
               {"@reboot", NULL},
               {"a * * * *", "minute"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        nw_cron_t c;
        nw_err_t err = {0};
        ck_assert_msg(nw_cron_parse(bad[i].expr, &c, &err) == NW_EINVAL, "%s parsed", bad[i].expr);
        ck_assert_msg(err.msg[0], "%s: no message", bad[i].expr);
        if (bad[i].field)
            ck_assert_msg(strstr(err.msg, bad[i].field), "%s: %s", bad[i].expr, err.msg);
    }
}
END_TEST

START_TEST(cron_next_and_window)
{
    nw_cron_t c;
    ck_assert_int_eq(nw_cron_parse("30 9 * * 1-5", &c, NULL), NW_OK);
    int64_t out = 0;
    /* Saturday 2026-11-28 10:00 → Monday 09:30 */
    ck_assert_int_eq(nw_cron_next(&c, T("2026-11-28T10:00:00Z"), T("2026-12-10T00:00:00Z"), &out),
                     1);
    ck_assert_int_eq(out, T("2026-11-30T09:30:00Z"));
    /* strictly after: exactly on a fire time gives the next one */
    ck_assert_int_eq(nw_cron_next(&c, T("2026-11-30T09:30:00Z"), T("2026-12-10T00:00:00Z"), &out),
                     1);
    ck_assert_int_eq(out, T("2026-12-01T09:30:00Z"));
    ck_assert_int_eq(nw_cron_next(&c, T("2026-11-28T10:00:00Z"), T("2026-11-30T09:29:00Z"), &out),
                     0);
    /* window: fire at 09:30 with 1h: active (09:30, 10:30], not at 10:31 */
    ck_assert(!nw_cron_window_active(&c, 3600 * NW_NS_PER_SEC, T("2026-11-30T09:29:59Z")));
    ck_assert(nw_cron_window_active(&c, 3600 * NW_NS_PER_SEC, T("2026-11-30T09:30:00Z")));
    ck_assert(nw_cron_window_active(&c, 3600 * NW_NS_PER_SEC, T("2026-11-30T10:29:59Z")));
    ck_assert(!nw_cron_window_active(&c, 3600 * NW_NS_PER_SEC, T("2026-11-30T10:30:00Z")));
    ck_assert(!nw_cron_window_active(&c, 3600 * NW_NS_PER_SEC, T("2026-11-28T09:45:00Z")));
    /* a yearly window of 48h, checked far from the fire: the search skips by day */
    ck_assert_int_eq(nw_cron_parse("@yearly", &c, NULL), NW_OK);
    ck_assert(nw_cron_window_active(&c, 48 * 3600 * NW_NS_PER_SEC, T("2027-01-02T12:00:00Z")));
    ck_assert(!nw_cron_window_active(&c, 48 * 3600 * NW_NS_PER_SEC, T("2027-01-03T00:00:01Z")));
    ck_assert(nw_cron_window_active(&c, 8760LL * 3600 * NW_NS_PER_SEC, T("2027-12-31T23:59:00Z")));
}
END_TEST

/* ---- budgets ---- */

static int budget(const char *budgets_json, nw_disrupt_reason_t r, int nodes, const char *now,
                  nw_err_t *err)
{
    char buf[2048];
    snprintf(buf, sizeof buf, "{\"spec\":{\"disruption\":{\"budgets\":%s}}}", budgets_json);
    cJSON *p = cJSON_Parse(buf);
    ck_assert_ptr_nonnull(p);
    int v = nw_budget_allowed(p, r, nodes, T(now), err);
    cJSON_Delete(p);
    return v;
}

START_TEST(budget_cases)
{
    static const struct {
        const char *budgets;
        nw_disrupt_reason_t reason;
        int nodes;
        const char *now;
        int want;
        const char *errpath; /* substring of err.path when the budget is bad */
    } c[] = {
        {"[{\"nodes\":\"10%\"}]", NW_DIS_EMPTY, 5, "2026-11-30T10:00:00Z", 1, NULL},
        {"[{\"nodes\":\"10%\"}]", NW_DIS_EMPTY, 10, "2026-11-30T10:00:00Z", 1, NULL},
        {"[{\"nodes\":\"10%\"}]", NW_DIS_EMPTY, 11, "2026-11-30T10:00:00Z", 2, NULL},
        {"[{\"nodes\":\"10%\"}]", NW_DIS_EMPTY, 0, "2026-11-30T10:00:00Z", 0, NULL},
        {"[{\"nodes\":\"0%\"}]", NW_DIS_EMPTY, 7, "2026-11-30T10:00:00Z", 0, NULL},
        {"[{\"nodes\":\"100%\"}]", NW_DIS_EMPTY, 7, "2026-11-30T10:00:00Z", 7, NULL},
        {"[{\"nodes\":\"3\"}]", NW_DIS_DRIFTED, 1, "2026-11-30T10:00:00Z", 3, NULL},
        {"[{\"nodes\":\"3\"},{\"nodes\":\"50%\"}]", NW_DIS_EMPTY, 4, "2026-11-30T10:00:00Z", 2,
         NULL},
        /* reasons: only that reason is limited */
        {"[{\"nodes\":\"0\",\"reasons\":[\"Drifted\"]}]", NW_DIS_DRIFTED, 4, "2026-11-30T10:00:00Z",
         0, NULL},
        {"[{\"nodes\":\"0\",\"reasons\":[\"Drifted\"]}]", NW_DIS_EMPTY, 4, "2026-11-30T10:00:00Z",
         NW_DIS_UNLIMITED, NULL},
        /* schedule windows: business hours block, off hours unlimited */
        {"[{\"nodes\":\"0\",\"schedule\":\"0 9 * * mon-fri\",\"duration\":\"8h\"}]", NW_DIS_EMPTY,
         4, "2026-11-30T10:00:00Z", 0, NULL},
        {"[{\"nodes\":\"0\",\"schedule\":\"0 9 * * mon-fri\",\"duration\":\"8h\"}]", NW_DIS_EMPTY,
         4, "2026-11-30T17:00:00Z", NW_DIS_UNLIMITED, NULL},
        {"[{\"nodes\":\"0\",\"schedule\":\"0 9 * * mon-fri\",\"duration\":\"8h\"}]", NW_DIS_EMPTY,
         4, "2026-11-29T10:00:00Z", NW_DIS_UNLIMITED, NULL},
        {"[{\"nodes\":\"0\",\"schedule\":\"@daily\",\"duration\":\"10m\"},{\"nodes\":\"2\"}]",
         NW_DIS_EMPTY, 4, "2026-11-30T00:05:00Z", 0, NULL},
        {"[{\"nodes\":\"0\",\"schedule\":\"@daily\",\"duration\":\"10m\"},{\"nodes\":\"2\"}]",
         NW_DIS_EMPTY, 4, "2026-11-30T00:15:00Z", 2, NULL},
        /* fail closed */
        {"[{\"nodes\":\"lots\"},{\"nodes\":\"5\"}]", NW_DIS_EMPTY, 4, "2026-11-30T10:00:00Z", 0,
         "budgets[0].nodes"},
        {"[{\"nodes\":\"101%\"}]", NW_DIS_EMPTY, 4, "2026-11-30T10:00:00Z", 0, "budgets[0].nodes"},
        {"[{\"nodes\":\"5\",\"schedule\":\"61 * * * *\",\"duration\":\"1h\"}]", NW_DIS_EMPTY, 4,
         "2026-11-30T10:00:00Z", 0, "budgets[0].schedule"},
        {"[{\"nodes\":\"5\"},{\"nodes\":\"5\",\"schedule\":\"@daily\"}]", NW_DIS_EMPTY, 4,
         "2026-11-30T10:00:00Z", 0, "budgets[1].duration"},
        {"[{\"nodes\":\"5\",\"schedule\":\"@daily\",\"duration\":\"soon\"}]", NW_DIS_EMPTY, 4,
         "2026-11-30T10:00:00Z", 0, "budgets[0].duration"},
        /* a bad budget for another reason does not limit this one */
        {"[{\"nodes\":\"x\",\"reasons\":[\"Drifted\"]},{\"nodes\":\"2\"}]", NW_DIS_EMPTY, 4,
         "2026-11-30T10:00:00Z", 2, "budgets[0].nodes"},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        nw_err_t err = {0};
        int v = budget(c[i].budgets, c[i].reason, c[i].nodes, c[i].now, &err);
        ck_assert_msg(v == c[i].want, "case %zu %s: got %d want %d", i, c[i].budgets, v, c[i].want);
        if (c[i].errpath)
            ck_assert_msg(strstr(err.path, c[i].errpath), "case %zu: path %s", i, err.path);
        else
            ck_assert_msg(err.rc == NW_OK, "case %zu: unexpected error %s", i, err.msg);
    }
    /* no budgets at all: 10% */
    cJSON *p = cJSON_Parse("{\"spec\":{}}");
    ck_assert_int_eq(nw_budget_allowed(p, NW_DIS_EMPTY, 20, 0, NULL), 2);
    cJSON_Delete(p);
}
END_TEST

/* ---- pod rules ---- */

START_TEST(pod_rules)
{
    cJSON *p = cJSON_Parse("{\"metadata\":{\"annotations\":{\"controller.kubernetes.io/"
                           "pod-deletion-cost\":\"134217728\"}},\"spec\":{\"priority\":33554432}}");
    ck_assert_double_eq_tol(nw_candidates_eviction_cost(nw_test_pod(p)), 3.0, 1e-9);
    cJSON_Delete(p);
    p = cJSON_Parse("{\"spec\":{\"priority\":2000000000}}");
    ck_assert_double_eq_tol(nw_candidates_eviction_cost(nw_test_pod(p)), 10.0, 1e-9);
    cJSON_Delete(p);
    p = cJSON_Parse(
        "{\"metadata\":{\"annotations\":{\"controller.kubernetes.io/pod-deletion-cost\":"
        "\"junk\"}},\"spec\":{\"priority\":-2147483648}}");
    ck_assert_double_eq_tol(nw_candidates_eviction_cost(nw_test_pod(p)), -10.0, 1e-9);
    cJSON_Delete(p);
    /* do-not-disrupt durations run from startTime */
    p = cJSON_Parse("{\"metadata\":{\"annotations\":{\"karpenter.sh/do-not-disrupt\":\"30m\"}},"
                    "\"status\":{\"startTime\":\"2026-11-30T10:00:00Z\"}}");
    ck_assert(nw_candidates_pod_do_not_disrupt(nw_test_pod(p), T("2026-11-30T10:29:59Z")));
    ck_assert(!nw_candidates_pod_do_not_disrupt(nw_test_pod(p), T("2026-11-30T10:30:00Z")));
    cJSON_Delete(p);
    p = cJSON_Parse("{\"metadata\":{\"annotations\":{\"karpenter.sh/do-not-disrupt\":\"maybe\"}}}");
    ck_assert(!nw_candidates_pod_do_not_disrupt(nw_test_pod(p), 0));
    cJSON_Delete(p);
    p = cJSON_Parse("{\"metadata\":{\"annotations\":{\"karpenter.sh/do-not-disrupt\":\"false\"}}}");
    ck_assert(!nw_candidates_pod_do_not_disrupt(nw_test_pod(p), 0));
    cJSON_Delete(p);
    /* reschedulable */
    static const struct {
        const char *json;
        bool want;
    } r[] = {
        {"{\"metadata\":{}}", true},
        {"{\"metadata\":{\"ownerReferences\":[{\"kind\":\"DaemonSet\"}]}}", false},
        {"{\"metadata\":{\"ownerReferences\":[{\"kind\":\"Node\"}]}}", false},
        {"{\"metadata\":{\"annotations\":{\"kubernetes.io/config.mirror\":\"x\"}}}", false},
        {"{\"metadata\":{},\"status\":{\"phase\":\"Succeeded\"}}", false},
        {"{\"metadata\":{\"deletionTimestamp\":\"2026-11-30T10:00:00Z\"}}", false},
        {"{\"metadata\":{\"deletionTimestamp\":\"2026-11-30T10:00:00Z\",\"ownerReferences\":[{"
         "\"kind\":\"StatefulSet\"}]}}",
         true},
    };
    for (size_t i = 0; i < sizeof r / sizeof *r; i++) {
        p = cJSON_Parse(r[i].json);
        ck_assert_msg(nw_candidates_pod_reschedulable(nw_test_pod(p)) == r[i].want, "%s",
                      r[i].json);
        cJSON_Delete(p);
    }
    /* selectors */
    static const struct {
        const char *sel, *labels;
        bool want;
    } s[] = {
        {"{}", "{\"a\":\"1\"}", true},
        {"null", "{\"a\":\"1\"}", false},
        {"{\"matchLabels\":{\"a\":\"1\"}}", "{\"a\":\"1\",\"b\":\"2\"}", true},
        {"{\"matchLabels\":{\"a\":\"2\"}}", "{\"a\":\"1\"}", false},
        {"{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\",\"values\":[\"0\",\"1\"]}]}",
         "{\"a\":\"1\"}", true},
        {"{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"NotIn\",\"values\":[\"1\"]}]}",
         "{\"a\":\"1\"}", false},
        {"{\"matchExpressions\":[{\"key\":\"b\",\"operator\":\"NotIn\",\"values\":[\"1\"]}]}",
         "{\"a\":\"1\"}", true},
        {"{\"matchExpressions\":[{\"key\":\"b\",\"operator\":\"Exists\"}]}", "{\"a\":\"1\"}",
         false},
        {"{\"matchExpressions\":[{\"key\":\"b\",\"operator\":\"DoesNotExist\"}]}", "{\"a\":\"1\"}",
         true},
        {"{\"matchExpressions\":[{\"key\":\"b\",\"operator\":\"Gt\",\"values\":[\"1\"]}]}", "{}",
         false},
    };
    for (size_t i = 0; i < sizeof s / sizeof *s; i++) {
        cJSON *sel = cJSON_Parse(s[i].sel), *lab = cJSON_Parse(s[i].labels);
        ck_assert_msg(nw_candidates_selector_matches(cJSON_IsNull(sel) ? NULL : sel, lab) ==
                          s[i].want,
                      "%s on %s", s[i].sel, s[i].labels);
        cJSON_Delete(sel);
        cJSON_Delete(lab);
    }
}
END_TEST

/* ---- data cases ---- */

typedef struct {
    const cJSON *sim;    /* list of {without: [...], ok, why, replacements} */
    const cJSON *simdef; /* default answer */
    const cJSON *prices; /* {"type/zone/ct": price} */
    int calls;
    int64_t step, ticks; /* the case's clock: each reading moves it on by step ns */
    const cJSON *doc;    /* the case (its nodes' accelLastUsedAgo) */
    int64_t now;
    bool yields; /* yieldAfter: a provisioning batch waits once this many simulations ran */
    int yield_after;
} fixture_t;

static bool yield_fn(void *ud)
{
    const fixture_t *f = ud;
    return f->yields && f->calls >= f->yield_after;
}

/* GPU-aware disruption's memory in a case: a node's accelLastUsedAgo (0: unknown) */
static int64_t last_used_fn(void *ud, const char *nc);

static int64_t mono_fn(void *ud)
{
    fixture_t *f = ud;
    return f->step * f->ticks++;
}

static double price_fn(void *ud, const char *it, const char *zone, const char *ct)
{
    fixture_t *f = ud;
    char k[256];
    snprintf(k, sizeof k, "%s/%s/%s", it, zone, ct);
    const cJSON *v = nw_json_get(f->prices, k);
    if (cJSON_IsNumber(v))
        return v->valuedouble;
    snprintf(k, sizeof k, "%s/%s", it, ct);
    v = nw_json_get(f->prices, k);
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

static bool same_set(const cJSON *arr, const char *const *names, size_t n)
{
    if ((size_t)cJSON_GetArraySize(arr) != n)
        return false;
    for (size_t i = 0; i < n; i++) {
        bool have = false;
        const cJSON *it;
        cJSON_ArrayForEach(it, arr)
        {
            have |= cJSON_IsString(it) && strcmp(it->valuestring, names[i]) == 0;
        }
        if (!have)
            return false;
    }
    return true;
}

static double num_or(const cJSON *o, const char *k, double d)
{
    const cJSON *v = nw_json_get(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : d;
}

static nw_rc_t sim_fn(void *ud, const nw_disrupt_state_t *st, const char *const *names, size_t n,
                      nw_disrupt_sim_t *out, nw_err_t *err)
{
    (void)st;
    fixture_t *f = ud;
    f->calls++;
    const cJSON *ans = f->simdef, *e;
    cJSON_ArrayForEach(e, f->sim)
    {
        if (same_set(nw_json_get(e, "without"), names, n)) {
            ans = e;
            break;
        }
    }
    if (cJSON_IsTrue(nw_json_get(ans, "error")))
        return nw_err_set(err, NW_EINVAL, NULL, "simulated failure");
    out->ok = cJSON_IsTrue(nw_json_get(ans, "ok"));
    const char *why = nw_json_str(ans, "why");
    snprintf(out->why, sizeof out->why, "%s", why ? why : "");
    int nr = cJSON_GetArraySize(nw_json_get(ans, "replacements"));
    if (nr) {
        out->repl = calloc((size_t)nr, sizeof *out->repl);
        const cJSON *r;
        cJSON_ArrayForEach(r, nw_json_get(ans, "replacements"))
        {
            nw_disrupt_repl_t *rp = &out->repl[out->nrepl++];
            const char *pool = nw_json_str(r, "pool");
            snprintf(rp->pool, sizeof rp->pool, "%s", pool ? pool : "default");
            const cJSON *cts = nw_json_get(r, "capacityTypes"), *ct;
            if (!cts) {
                rp->allow_on_demand = rp->allow_spot = true;
            }
            cJSON_ArrayForEach(ct, cts)
            {
                rp->allow_on_demand |= strcmp(ct->valuestring, "on-demand") == 0;
                rp->allow_spot |= strcmp(ct->valuestring, "spot") == 0;
                rp->allow_reserved |= strcmp(ct->valuestring, "reserved") == 0;
            }
            rp->min_values = (int)num_or(r, "minValues", 0);
            int nt = cJSON_GetArraySize(nw_json_get(r, "types"));
            rp->types = calloc((size_t)nt + 1, sizeof *rp->types);
            const cJSON *t;
            cJSON_ArrayForEach(t, nw_json_get(r, "types"))
            {
                nw_disrupt_topt_t *o = &rp->types[rp->ntypes++];
                snprintf(o->name, sizeof o->name, "%s", nw_json_str(t, "name"));
                o->on_demand = num_or(t, "onDemand", -1);
                o->spot = num_or(t, "spot", -1);
                o->reserved = num_or(t, "reserved", -1);
            }
        }
    }
    return NW_OK;
}

/* Expand the short forms into Kubernetes objects (appended to objs). */
static void add_obj(cJSON *objs, cJSON *o)
{
    cJSON_AddItemToArray(objs, o);
}

static int64_t ago(int64_t now, const cJSON *v)
{
    int64_t d = 0;
    const char *s = cJSON_GetStringValue(v);
    ck_assert_msg(s && nw_duration_parse(s, &d, NULL) == NW_OK, "bad duration");
    return now - d;
}

static void set_ts(cJSON *o, const char *k, int64_t t)
{
    char b[40];
    nw_clock_time_format(t, b, sizeof b);
    cJSON_AddStringToObject(o, k, b);
}

static void add_cond(cJSON *conds, const char *type, const char *status, int64_t t)
{
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "type", type);
    cJSON_AddStringToObject(c, "status", status);
    set_ts(c, "lastTransitionTime", t);
    cJSON_AddItemToArray(conds, c);
}

static cJSON *dup_or_obj(const cJSON *v)
{
    return v ? cJSON_Duplicate(v, 1) : cJSON_CreateObject();
}

static void expand_node(cJSON *objs, const cJSON *n, int64_t now)
{
    const char *name = nw_json_str(n, "name");
    const char *pool = nw_json_str(n, "pool");
    const char *type = nw_json_str(n, "type");
    const char *zone = nw_json_str(n, "zone");
    const char *ct = nw_json_str(n, "ct");
    ck_assert_msg(name != NULL, "a node without a string name (YAML reads n/y/no as booleans)");
    char nodename[300], pid[300];
    snprintf(nodename, sizeof nodename, "node-%s", name);
    snprintf(pid, sizeof pid, "aws:///%s/i-%s", zone ? zone : "us-east-1a", name);
    cJSON *nc = cJSON_CreateObject();
    cJSON_AddStringToObject(nc, "kind", "NodeClaim");
    cJSON *md = cJSON_AddObjectToObject(nc, "metadata");
    cJSON_AddStringToObject(md, "name", name);
    set_ts(md, "creationTimestamp",
           nw_json_get(n, "age") ? ago(now, nw_json_get(n, "age")) : now - 7200 * NW_NS_PER_SEC);
    cJSON *labels = cJSON_AddObjectToObject(md, "labels");
    if (!cJSON_IsFalse(nw_json_get(n, "managed")))
        cJSON_AddStringToObject(labels, "karpenter.sh/nodepool", pool ? pool : "default");
    cJSON_AddStringToObject(labels, "node.kubernetes.io/instance-type", type ? type : "m5.large");
    cJSON_AddStringToObject(labels, "topology.kubernetes.io/zone", zone ? zone : "us-east-1a");
    cJSON_AddStringToObject(labels, "karpenter.sh/capacity-type", ct ? ct : "on-demand");
    const cJSON *extra;
    cJSON_ArrayForEach(extra, nw_json_get(n, "labels"))
    {
        cJSON_AddItemToObject(labels, extra->string, cJSON_Duplicate(extra, 1));
    }
    cJSON_AddItemToObject(md, "annotations", dup_or_obj(nw_json_get(n, "claimAnnotations")));
    if (cJSON_IsTrue(nw_json_get(n, "deleting")))
        set_ts(md, "deletionTimestamp", now);
    cJSON *spec = cJSON_AddObjectToObject(nc, "spec");
    if (nw_json_get(n, "tgp"))
        cJSON_AddItemToObject(spec, "terminationGracePeriod",
                              cJSON_Duplicate(nw_json_get(n, "tgp"), 1));
    if (nw_json_get(n, "expireAfter"))
        cJSON_AddItemToObject(spec, "expireAfter",
                              cJSON_Duplicate(nw_json_get(n, "expireAfter"), 1));
    cJSON *st = cJSON_AddObjectToObject(nc, "status");
    cJSON_AddStringToObject(st, "providerID", pid);
    cJSON_AddStringToObject(st, "nodeName", nodename);
    cJSON *conds = cJSON_AddArrayToObject(st, "conditions");
    if (!cJSON_IsFalse(nw_json_get(n, "initialized")))
        add_cond(conds, "Initialized", "True",
                 nw_json_get(n, "initializedAgo") ? ago(now, nw_json_get(n, "initializedAgo"))
                                                  : now - 3600 * NW_NS_PER_SEC);
    if (nw_json_get(n, "driftedAgo"))
        add_cond(conds, "Drifted", "True", ago(now, nw_json_get(n, "driftedAgo")));
    if (cJSON_IsTrue(nw_json_get(n, "instanceTerminating")))
        add_cond(conds, "InstanceTerminating", "True", now);
    if (nw_json_get(n, "lastPodEventAgo"))
        set_ts(st, "lastPodEventTime", ago(now, nw_json_get(n, "lastPodEventAgo")));
    add_obj(objs, nc);
    if (cJSON_IsFalse(nw_json_get(n, "hasNode")))
        return;
    cJSON *node = cJSON_CreateObject();
    cJSON_AddStringToObject(node, "kind", "Node");
    md = cJSON_AddObjectToObject(node, "metadata");
    cJSON_AddStringToObject(md, "name", nodename);
    cJSON_AddItemToObject(md, "labels", cJSON_Duplicate(labels, 1));
    cJSON_AddItemToObject(md, "annotations", dup_or_obj(nw_json_get(n, "nodeAnnotations")));
    if (cJSON_IsTrue(nw_json_get(n, "nodeDeleting")))
        set_ts(md, "deletionTimestamp", now);
    spec = cJSON_AddObjectToObject(node, "spec");
    cJSON_AddStringToObject(spec, "providerID", pid);
    st = cJSON_AddObjectToObject(node, "status");
    conds = cJSON_AddArrayToObject(st, "conditions");
    add_cond(conds, "Ready", cJSON_IsFalse(nw_json_get(n, "ready")) ? "False" : "True", now);
    add_obj(objs, node);
}

static void expand_pod(cJSON *objs, const cJSON *p, int64_t now)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "kind", "Pod");
    cJSON *md = cJSON_AddObjectToObject(o, "metadata");
    cJSON_AddStringToObject(md, "name", nw_json_str(p, "name"));
    const char *ns = nw_json_str(p, "ns");
    cJSON_AddStringToObject(md, "namespace", ns ? ns : "default");
    cJSON_AddItemToObject(md, "labels", dup_or_obj(nw_json_get(p, "labels")));
    cJSON_AddItemToObject(md, "annotations", dup_or_obj(nw_json_get(p, "annotations")));
    const char *owner = nw_json_str(p, "owner");
    cJSON *refs = cJSON_AddArrayToObject(md, "ownerReferences");
    cJSON *ref = cJSON_CreateObject();
    cJSON_AddStringToObject(ref, "kind", owner ? owner : "ReplicaSet");
    cJSON_AddStringToObject(ref, "name", "owner");
    cJSON_AddItemToArray(refs, ref);
    if (cJSON_IsTrue(nw_json_get(p, "terminating")))
        set_ts(md, "deletionTimestamp", now);
    cJSON *spec = cJSON_AddObjectToObject(o, "spec");
    const char *node = nw_json_str(p, "node");
    if (node) {
        char nn[300];
        snprintf(nn, sizeof nn, "node-%s", node);
        cJSON_AddStringToObject(spec, "nodeName", nn);
    }
    if (nw_json_get(p, "priority"))
        cJSON_AddItemToObject(spec, "priority", cJSON_Duplicate(nw_json_get(p, "priority"), 1));
    if (nw_json_get(p, "tolerations"))
        cJSON_AddItemToObject(spec, "tolerations",
                              cJSON_Duplicate(nw_json_get(p, "tolerations"), 1));
    if (nw_json_get(p, "resourceClaims"))
        cJSON_AddItemToObject(spec, "resourceClaims",
                              cJSON_Duplicate(nw_json_get(p, "resourceClaims"), 1));
    if (nw_json_get(p, "requests")) { /* one container requesting these */
        cJSON *c = cJSON_CreateObject();
        cJSON_AddStringToObject(c, "name", "c");
        cJSON_AddItemToObject(cJSON_AddObjectToObject(c, "resources"), "requests",
                              cJSON_Duplicate(nw_json_get(p, "requests"), 1));
        cJSON_AddItemToArray(cJSON_AddArrayToObject(spec, "containers"), c);
    }
    cJSON *st = cJSON_AddObjectToObject(o, "status");
    const char *phase = nw_json_str(p, "phase");
    cJSON_AddStringToObject(st, "phase", phase ? phase : "Running");
    set_ts(st, "startTime",
           nw_json_get(p, "startedAgo") ? ago(now, nw_json_get(p, "startedAgo"))
                                        : now - 3600 * NW_NS_PER_SEC);
    cJSON *conds = cJSON_AddArrayToObject(st, "conditions");
    add_cond(conds, "Ready", cJSON_IsFalse(nw_json_get(p, "ready")) ? "False" : "True", now);
    add_obj(objs, o);
}

static void expand(const cJSON *doc, cJSON *objs, int64_t now)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, nw_json_get(doc, "pools"))
    {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "kind", "NodePool");
        cJSON_AddStringToObject(cJSON_AddObjectToObject(o, "metadata"), "name",
                                nw_json_str(it, "name"));
        cJSON *spec = cJSON_AddObjectToObject(o, "spec");
        if (nw_json_get(it, "disruption"))
            cJSON_AddItemToObject(spec, "disruption",
                                  cJSON_Duplicate(nw_json_get(it, "disruption"), 1));
        if (nw_json_get(it, "labels")) /* the template's labels (an accelerator pool's) */
            cJSON_AddItemToObject(
                cJSON_AddObjectToObject(cJSON_AddObjectToObject(spec, "template"), "metadata"),
                "labels", cJSON_Duplicate(nw_json_get(it, "labels"), 1));
        add_obj(objs, o);
    }
    cJSON_ArrayForEach(it, nw_json_get(doc, "nodes"))
    {
        expand_node(objs, it, now);
    }
    cJSON_ArrayForEach(it, nw_json_get(doc, "pods"))
    {
        expand_pod(objs, it, now);
    }
    cJSON_ArrayForEach(it, nw_json_get(doc, "pdbs"))
    {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "kind", "PodDisruptionBudget");
        cJSON *md = cJSON_AddObjectToObject(o, "metadata");
        cJSON_AddStringToObject(md, "name", nw_json_str(it, "name"));
        const char *ns = nw_json_str(it, "ns");
        cJSON_AddStringToObject(md, "namespace", ns ? ns : "default");
        cJSON *spec = cJSON_AddObjectToObject(o, "spec");
        cJSON_AddItemToObject(spec, "selector", dup_or_obj(nw_json_get(it, "selector")));
        if (nw_json_get(it, "policy"))
            cJSON_AddItemToObject(spec, "unhealthyPodEvictionPolicy",
                                  cJSON_Duplicate(nw_json_get(it, "policy"), 1));
        cJSON_AddNumberToObject(cJSON_AddObjectToObject(o, "status"), "disruptionsAllowed",
                                num_or(it, "allowed", 1));
        add_obj(objs, o);
    }
    cJSON_ArrayForEach(it, nw_json_get(doc, "objects"))
    {
        add_obj(objs, cJSON_Duplicate(it, 1));
    }
}

typedef struct {
    const cJSON *v[512];
    const nw_pod_t *pods[512];          /* Pod lists: the records of v */
    const nw_node_t *nodes[512];        /* Node lists: the records of v */
    const nw_node_claim_t *claims[512]; /* NodeClaim lists: the records of v */
    size_t n;
} list_t;

static void collect(const cJSON *objs, const char *kind, list_t *l)
{
    l->n = 0;
    const cJSON *o;
    cJSON_ArrayForEach(o, objs)
    {
        const char *k = nw_json_str(o, "kind");
        if (k && strcmp(k, kind) == 0 && l->n < 512) {
            if (strcmp(kind, "Pod") == 0)
                l->pods[l->n] = nw_test_pod(o);
            else if (strcmp(kind, "Node") == 0)
                l->nodes[l->n] = nw_test_node(o);
            else if (strcmp(kind, "NodeClaim") == 0)
                l->claims[l->n] = nw_test_node_claim(o);
            l->v[l->n++] = o;
        }
    }
}

static size_t str_array(const cJSON *arr, const char **out, size_t max)
{
    size_t n = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, arr)
    {
        if (cJSON_IsString(it) && n < max)
            out[n++] = it->valuestring;
    }
    return n;
}

static int64_t last_used_fn(void *ud, const char *nc)
{
    fixture_t *f = ud;
    const cJSON *n;
    cJSON_ArrayForEach(n, nw_json_get(f->doc, "nodes"))
    {
        const char *name = nw_json_str(n, "name");
        if (name && strcmp(name, nc) == 0 && nw_json_get(n, "accelLastUsedAgo"))
            return ago(f->now, nw_json_get(n, "accelLastUsedAgo"));
    }
    return 0;
}

/* accelerators: [{name, labelValue, resources: [...], aware, rolloutMax, rolloutTimeout,
 * draPods}] (node label key node.accelerator): GPU-aware disruption's classes; rolloutMax 0
 * (the default here): no staged replacement; rolloutTimeout a duration (30m); draPods: the
 * pods (by name) whose DRA claims ask for the class's devices, as the controller finds them
 * in the watch cache (a pod needs spec.resourceClaims to be asked) */

static unsigned case_dra_classes(const nw_pod_t *pod, void *ud)
{
    const cJSON *n;
    cJSON_ArrayForEach(n, (const cJSON *)ud)
    {
        if (cJSON_IsString(n) && strcmp(n->valuestring, pod->name) == 0)
            return ~0u;
    }
    return 0;
}

static nw_disrupt_accel_t case_accels[8];
static const char *case_accel_res[8][8];

static size_t load_accels(const cJSON *doc)
{
    size_t n = 0;
    const cJSON *a;
    cJSON_ArrayForEach(a, nw_json_get(doc, "accelerators"))
    {
        ck_assert_uint_lt(n, 8);
        size_t nr = str_array(nw_json_get(a, "resources"), case_accel_res[n], 8);
        int64_t tmo = 30 * 60 * NW_NS_PER_SEC;
        if (nw_json_str(a, "rolloutTimeout"))
            ck_assert(nw_duration_parse(nw_json_str(a, "rolloutTimeout"), &tmo, NULL) == NW_OK);
        case_accels[n] = (nw_disrupt_accel_t){nw_json_str(a, "name"),
                                              nw_json_str(a, "labelValue"),
                                              case_accel_res[n],
                                              nr,
                                              !cJSON_IsFalse(nw_json_get(a, "aware")),
                                              (int)num_or(a, "rolloutMax", 0),
                                              tmo,
                                              1u << n,
                                              nw_json_get(a, "draPods") ? case_dra_classes : NULL,
                                              (void *)nw_json_get(a, "draPods")};
        n++;
    }
    return n;
}

/* Two light states agree on every node's NodeClaim-level fields. */
static void same_light_nodes(const nw_disrupt_state_t *a, const nw_disrupt_state_t *b)
{
    ck_assert_uint_eq(a->nnodes, b->nnodes);
    for (size_t i = 0; i < a->nnodes; i++) {
        const nw_disrupt_node_t *x = &a->nodes[i], *y = &b->nodes[i];
        ck_assert_str_eq(x->name, y->name);
        ck_assert_ptr_eq(x->nodeclaim, y->nodeclaim);
        ck_assert_ptr_eq(x->node, y->node);
        ck_assert_str_eq(x->node_name, y->node_name);
        ck_assert_int_eq(x->pool, y->pool);
        ck_assert_str_eq(x->itype, y->itype);
        ck_assert_str_eq(x->zone, y->zone);
        ck_assert_str_eq(x->capacity_type, y->capacity_type);
        ck_assert(x->price == y->price);
        ck_assert_int_eq(x->initialized, y->initialized);
        ck_assert_int_eq(x->ready, y->ready);
        ck_assert_int_eq(x->counted, y->counted);
        ck_assert_int_eq(x->consolidatable, y->consolidatable);
        ck_assert_int_eq(x->accel, y->accel);
        ck_assert_int_eq(x->accel_pods, y->accel_pods);
    }
    for (size_t k = 0; k < a->npools && k < b->npools; k++)
        for (int r = 0; r < NW_DIS_NREASONS; r++)
            ck_assert_int_eq(a->pools[k].allowed[r], b->pools[k].allowed[r]);
}

/* A light look that takes each node's match from an earlier light state (the controller's
 * nw_disrupt_input_t.reuse) gives the state a look without it gives; and one whose
 * NodeClaims are not at their places there (here: the same NodeClaims in reverse order)
 * does not take another node's match. */
static void check_reuse(const nw_disrupt_input_t *in)
{
    nw_disrupt_input_t l = *in;
    l.light = true;
    l.reuse = NULL;
    nw_disrupt_state_t *l1 = NULL, *l2 = NULL, *l3 = NULL, *l4 = NULL;
    ck_assert_int_eq(nw_candidates_state_build(&l, &l1, NULL), NW_OK);
    l.reuse = l1;
    ck_assert_int_eq(nw_candidates_state_build(&l, &l2, NULL), NW_OK);
    ck_assert_ptr_null(l2->in.reuse);
    same_light_nodes(l1, l2);
    const nw_node_claim_t **rev = calloc(in->nnodeclaims + 1, sizeof *rev);
    ck_assert_ptr_nonnull(rev);
    for (size_t i = 0; i < in->nnodeclaims; i++)
        rev[i] = in->nodeclaims[in->nnodeclaims - 1 - i];
    l.nodeclaims = rev;
    ck_assert_int_eq(nw_candidates_state_build(&l, &l3, NULL), NW_OK);
    l.reuse = NULL;
    ck_assert_int_eq(nw_candidates_state_build(&l, &l4, NULL), NW_OK);
    same_light_nodes(l3, l4);
    free(rev);
    nw_candidates_state_free(l1);
    nw_candidates_state_free(l2);
    nw_candidates_state_free(l3);
    nw_candidates_state_free(l4);
}

static nw_disrupt_state_t *build(const cJSON *doc, cJSON *objs, fixture_t *f, list_t ls[5])
{
    int64_t now = T(nw_json_str(doc, "now") ? nw_json_str(doc, "now") : "2026-11-30T10:00:00Z");
    f->doc = doc;
    f->now = now;
    expand(doc, objs, now);
    static const char *kinds[5] = {"NodePool", "NodeClaim", "Node", "Pod", "PodDisruptionBudget"};
    for (int i = 0; i < 5; i++)
        collect(objs, kinds[i], &ls[i]);
    static const char *nom[64], *inc[64];
    nw_disrupt_input_t in = {
        .nodepools = ls[0].v,
        .nnodepools = ls[0].n,
        .nodeclaims = ls[1].claims,
        .nnodeclaims = ls[1].n,
        .nodes = ls[2].nodes,
        .nnodes = ls[2].n,
        .pods = ls[3].pods,
        .npods = ls[3].n,
        .pdbs = ls[4].v,
        .npdbs = ls[4].n,
        .now = now,
        .price = price_fn,
        .price_ud = f,
        .spot_to_spot = cJSON_IsTrue(nw_json_get(doc, "spotToSpot")),
    };
    /* clock: {stepSeconds, multiTimeoutSeconds, singleTimeoutSeconds}: the searches' time
     * limits against a clock that moves on at every reading */
    const cJSON *clk = nw_json_get(doc, "clock");
    if (clk) {
        f->step = (int64_t)(num_or(clk, "stepSeconds", 0) * 1e9);
        in.mono = mono_fn;
        in.mono_ud = f;
        in.multi_timeout = (int64_t)(num_or(clk, "multiTimeoutSeconds", 0) * 1e9);
        in.single_timeout = (int64_t)(num_or(clk, "singleTimeoutSeconds", 0) * 1e9);
    }
    if (cJSON_IsNumber(nw_json_get(doc, "yieldAfter"))) {
        f->yields = true;
        f->yield_after = nw_json_get(doc, "yieldAfter")->valueint;
        in.yield = yield_fn;
        in.yield_ud = f;
    }
    in.nnominated = str_array(nw_json_get(doc, "nominated"), nom, 64);
    in.nominated = nom;
    in.nin_command = str_array(nw_json_get(doc, "inCommand"), inc, 64);
    in.in_command = inc;
    in.naccels = load_accels(doc);
    in.accels = case_accels;
    in.accel_label_key = "node.accelerator";
    in.accel_last_used = last_used_fn;
    in.accel_ud = f;
    check_reuse(&in);
    nw_disrupt_state_t *st = NULL;
    ck_assert_int_eq(nw_candidates_state_build(&in, &st, NULL), NW_OK);
    return st;
}

static void check_expect(const char *path, const cJSON *exp, const nw_disrupt_state_t *st,
                         const nw_disrupt_cmd_t *cmd)
{
    cJSON *rep = nw_decide_report_json(st, cmd);
    char *dump = cJSON_Print(rep);
    const char *m = nw_json_str(exp, "method");
    if (m)
        ck_assert_msg(strcmp(m, nw_decide_method_str(cmd->method)) == 0,
                      "%s: method %s, want %s\n%s", path, nw_decide_method_str(cmd->method), m,
                      dump);
    const cJSON *y = nw_json_get(exp, "yielded");
    ck_assert_msg(cmd->yielded == cJSON_IsTrue(y), "%s: yielded %d\n%s", path, cmd->yielded, dump);
    const char *a = nw_json_str(exp, "action");
    if (a)
        ck_assert_msg(strcmp(a, nw_decide_action_str(cmd->action)) == 0, "%s: action\n%s", path,
                      dump);
    if (nw_json_get(exp, "candidates"))
        ck_assert_msg(same_set(nw_json_get(exp, "candidates"), (const char *const *)cmd->candidates,
                               cmd->ncandidates),
                      "%s: candidates\n%s", path, dump);
    const cJSON *r = nw_json_get(exp, "replacements");
    if (cJSON_IsNumber(r))
        ck_assert_msg(cmd->sim.nrepl == r->valueint, "%s: %d replacements\n%s", path,
                      cmd->sim.nrepl, dump);
    const cJSON *rt = nw_json_get(exp, "replacementTypes");
    if (rt) {
        ck_assert_msg(cmd->sim.nrepl >= 1, "%s: no replacement\n%s", path, dump);
        const nw_disrupt_repl_t *rp = &cmd->sim.repl[0];
        ck_assert_msg(cJSON_GetArraySize(rt) == rp->ntypes, "%s: replacement types\n%s", path,
                      dump);
        for (int i = 0; i < rp->ntypes; i++)
            ck_assert_msg(strcmp(cJSON_GetArrayItem(rt, i)->valuestring, rp->types[i].name) == 0,
                          "%s: replacement type %d\n%s", path, i, dump);
    }
    const cJSON *cts = nw_json_get(exp, "capacityTypes");
    if (cts) {
        const nw_disrupt_repl_t *rp = &cmd->sim.repl[0];
        bool od = false, spot = false;
        const cJSON *c;
        cJSON_ArrayForEach(c, cts)
        {
            od |= strcmp(c->valuestring, "on-demand") == 0;
            spot |= strcmp(c->valuestring, "spot") == 0;
        }
        ck_assert_msg(rp->allow_on_demand == od && rp->allow_spot == spot, "%s: capacity types\n%s",
                      path, dump);
    }
    const cJSON *nodes = nw_json_get(exp, "nodes"), *n;
    cJSON_ArrayForEach(n, nodes)
    {
        const nw_disrupt_node_t *dn = nw_candidates_state_node(st, n->string);
        ck_assert_msg(dn != NULL, "%s: no node %s", path, n->string);
        const cJSON *v;
        if ((v = nw_json_get(n, "candidate")))
            ck_assert_msg(dn->candidate == cJSON_IsTrue(v), "%s: %s candidate\n%s", path, n->string,
                          dump);
        if ((v = nw_json_get(n, "empty")))
            ck_assert_msg(dn->empty == cJSON_IsTrue(v), "%s: %s empty\n%s", path, n->string, dump);
        if ((v = nw_json_get(n, "consolidatable")))
            ck_assert_msg(dn->consolidatable == cJSON_IsTrue(v), "%s: %s consolidatable\n%s", path,
                          n->string, dump);
        if ((v = nw_json_get(n, "accelPods")))
            ck_assert_msg(dn->accel_pods == v->valueint, "%s: %s accelPods %d\n%s", path, n->string,
                          dn->accel_pods, dump);
        if ((v = nw_json_get(n, "accelIdle")))
            ck_assert_msg(dn->accel_idle == cJSON_IsTrue(v), "%s: %s accelIdle\n%s", path,
                          n->string, dump);
        if ((v = nw_json_get(n, "expired")))
            ck_assert_msg(dn->expired == cJSON_IsTrue(v), "%s: %s expired\n%s", path, n->string,
                          dump);
        if ((v = nw_json_get(n, "rolloutDone")))
            ck_assert_msg(dn->rollout_done == cJSON_IsTrue(v), "%s: %s rolloutDone\n%s", path,
                          n->string, dump);
        if ((v = nw_json_get(n, "rolloutLate")))
            ck_assert_msg(dn->rollout_late == cJSON_IsTrue(v), "%s: %s rolloutLate\n%s", path,
                          n->string, dump);
        if ((v = nw_json_get(n, "why")))
            ck_assert_msg(strstr(dn->why, v->valuestring), "%s: %s why \"%s\"\n%s", path, n->string,
                          dn->why, dump);
        if ((v = nw_json_get(n, "cost")))
            ck_assert_msg(dn->disruption_cost > v->valuedouble - 1e-6 &&
                              dn->disruption_cost < v->valuedouble + 1e-6,
                          "%s: %s cost %f\n%s", path, n->string, dn->disruption_cost, dump);
    }
    const cJSON *al = nw_json_get(exp, "allowed"), *p;
    cJSON_ArrayForEach(p, al)
    {
        const nw_disrupt_pool_t *pool = NULL;
        for (size_t k = 0; k < st->npools; k++)
            if (strcmp(st->pools[k].name, p->string) == 0)
                pool = &st->pools[k];
        ck_assert_msg(pool != NULL, "%s: no pool %s", path, p->string);
        const cJSON *v;
        cJSON_ArrayForEach(v, p)
        {
            for (int k = 0; k < NW_DIS_NREASONS; k++)
                if (strcmp(v->string, nw_budget_reason_str((nw_disrupt_reason_t)k)) == 0)
                    ck_assert_msg(pool->allowed[k] == v->valueint, "%s: %s allowed %s = %d\n%s",
                                  path, p->string, v->string, pool->allowed[k], dump);
        }
    }
    /* rollout: {pool: {steps, blocked}}: the staged replacement's view of a pool */
    cJSON_ArrayForEach(p, nw_json_get(exp, "rollout"))
    {
        const nw_disrupt_pool_t *pool = NULL;
        for (size_t k = 0; k < st->npools; k++)
            if (strcmp(st->pools[k].name, p->string) == 0)
                pool = &st->pools[k];
        ck_assert_msg(pool != NULL, "%s: no pool %s", path, p->string);
        const cJSON *v;
        if ((v = nw_json_get(p, "steps")))
            ck_assert_msg(pool->rollout_steps == v->valueint, "%s: %s rollout steps %d\n%s", path,
                          p->string, pool->rollout_steps, dump);
        if ((v = nw_json_get(p, "blocked")))
            ck_assert_msg(pool->rollout_blocked == cJSON_IsTrue(v), "%s: %s rollout blocked\n%s",
                          path, p->string, dump);
    }
    const cJSON *ro = nw_json_get(exp, "rolloutCommand");
    if (ro)
        ck_assert_msg(cmd->rollout == cJSON_IsTrue(ro), "%s: command rollout %d\n%s", path,
                      cmd->rollout, dump);
    const char *sc = nw_json_str(exp, "summaryContains");
    if (sc)
        ck_assert_msg(strstr(cmd->summary, sc), "%s: summary \"%s\"\n%s", path, cmd->summary, dump);
    const cJSON *bb = nw_json_get(exp, "budgetBlocked");
    cJSON_ArrayForEach(p, bb)
    {
        for (int k = 0; k < NW_DIS_NREASONS; k++)
            if (strcmp(p->string, nw_budget_reason_str((nw_disrupt_reason_t)k)) == 0)
                ck_assert_msg(cmd->budget_blocked[k] == p->valueint, "%s: budget blocked %s\n%s",
                              path, p->string, dump);
    }
    cJSON_ArrayForEach(p, nw_json_get(exp, "notes"))
    {
        bool found = false;
        for (size_t i = 0; i < cmd->nnotes && !found; i++) {
            const char *nc = nw_json_str(p, "nodeclaim");
            const char *rs = nw_json_str(p, "reason");
            const char *ct = nw_json_str(p, "contains");
            found = (!nc || strcmp(nc, cmd->notes[i].nodeclaim) == 0) &&
                    (!rs || strcmp(rs, cmd->notes[i].reason) == 0) &&
                    (!ct || strstr(cmd->notes[i].message, ct));
        }
        char *ps = cJSON_PrintUnformatted(p);
        ck_assert_msg(found, "%s: note %s missing\n%s", path, ps, dump);
        free(ps);
    }
    const cJSON *to = nw_json_get(exp, "timedOut");
    if (to) {
        bool multi = false, single = false;
        const cJSON *t;
        cJSON_ArrayForEach(t, to)
        {
            multi |= cJSON_IsString(t) && strcmp(t->valuestring, "multi") == 0;
            single |= cJSON_IsString(t) && strcmp(t->valuestring, "single") == 0;
        }
        ck_assert_msg(cmd->multi_timed_out == multi && cmd->single_timed_out == single,
                      "%s: timed out multi %d single %d\n%s", path, cmd->multi_timed_out,
                      cmd->single_timed_out, dump);
    }
    const cJSON *ev = nw_json_get(exp, "evaluated");
    if (nw_json_get(ev, "multi"))
        ck_assert_msg(cmd->multi_evaluated == (int)num_or(ev, "multi", -1),
                      "%s: multi evaluated %d", path, cmd->multi_evaluated);
    if (nw_json_get(ev, "single"))
        ck_assert_msg(cmd->single_evaluated == (int)num_or(ev, "single", -1),
                      "%s: single evaluated %d", path, cmd->single_evaluated);
    const cJSON *rc;
    cJSON_ArrayForEach(rc, nw_json_get(exp, "reportContains"))
    {
        /* the plan --disruption report (compact JSON) holds this text */
        char *compact = cJSON_PrintUnformatted(rep);
        ck_assert_msg(cJSON_IsString(rc) && strstr(compact, rc->valuestring),
                      "%s: report lacks %s\n%s", path, cJSON_GetStringValue(rc), dump);
        free(compact);
    }
    if (nw_json_get(exp, "summaryContains"))
        ck_assert_msg(strstr(cmd->summary, nw_json_str(exp, "summaryContains")), "%s: summary %s",
                      path, cmd->summary);
    free(dump);
    cJSON_Delete(rep);
}

static void run_case(const char *path)
{
    size_t len = 0;
    char *text = nw_test_read_file(path, &len);
    cJSON **docs = NULL;
    size_t nd = 0;
    nw_err_t err = {0};
    ck_assert_msg(nw_yaml_load_docs(text, len, &docs, &nd, &err) == NW_OK, "%s: %s", path, err.msg);
    free(text);
    ck_assert_msg(nd == 1, "%s: one document", path);
    const cJSON *doc = docs[0];
    fixture_t f = {nw_json_get(doc, "sim"),
                   nw_json_get(doc, "simDefault"),
                   nw_json_get(doc, "prices"),
                   0,
                   0,
                   0,
                   doc,
                   0,
                   false,
                   0};
    cJSON *objs = cJSON_CreateArray();
    list_t ls[5];
    nw_disrupt_state_t *st = build(doc, objs, &f, ls);
    nw_disrupt_cmd_t cmd;
    ck_assert_int_eq(
        nw_decide(st, cJSON_IsFalse(nw_json_get(doc, "withSim")) ? NULL : sim_fn, &f, &cmd, &err),
        NW_OK);
    check_expect(path, nw_json_get(doc, "expect"), st, &cmd);
    const cJSON *maxc = nw_json_get(doc, "maxSimCalls");
    if (cJSON_IsNumber(maxc))
        ck_assert_msg(f.calls <= maxc->valueint, "%s: %d simulations", path, f.calls);
    const cJSON *val = nw_json_get(doc, "validate");
    if (val) {
        /* a second state: the case document with `validate` merged over it */
        cJSON *d2 = cJSON_Duplicate(doc, 1);
        const cJSON *it;
        cJSON_ArrayForEach(it, val)
        {
            if (strcmp(it->string, "expect") == 0)
                continue;
            cJSON_DeleteItemFromObjectCaseSensitive(d2, it->string);
            cJSON_AddItemToObject(d2, it->string, cJSON_Duplicate(it, 1));
        }
        fixture_t f2 = {nw_json_get(d2, "sim"),
                        nw_json_get(d2, "simDefault"),
                        nw_json_get(d2, "prices"),
                        0,
                        0,
                        0,
                        d2,
                        0,
                        false,
                        0};
        cJSON *objs2 = cJSON_CreateArray();
        list_t ls2[5];
        nw_disrupt_state_t *st2 = build(d2, objs2, &f2, ls2);
        char why[256] = "";
        int v = nw_decide_validate(st2, &cmd, sim_fn, &f2, why, sizeof why);
        const cJSON *ve = nw_json_get(val, "expect");
        const cJSON *vv = nw_json_get(ve, "valid");
        ck_assert_msg(v == (cJSON_IsTrue(vv) ? 1 : 0), "%s: validate returned %d (%s)", path, v,
                      why);
        const char *wc = nw_json_str(ve, "whyContains");
        if (wc)
            ck_assert_msg(strstr(why, wc), "%s: validation why \"%s\"", path, why);
        if (nw_json_get(ve, "candidates"))
            ck_assert_msg(same_set(nw_json_get(ve, "candidates"),
                                   (const char *const *)cmd.candidates, cmd.ncandidates),
                          "%s: candidates after validation", path);
        nw_candidates_state_free(st2);
        cJSON_Delete(objs2);
        cJSON_Delete(d2);
    }
    nw_decide_cmd_cleanup(&cmd);
    nw_candidates_state_free(st);
    cJSON_Delete(objs);
    nw_yaml_docs_free(docs, nd);
}

/* one test per file of tests/data/disruption */
static const nw_test_cases_t *data_files;

START_TEST(data_case)
{
    run_case(nw_test_case(data_files, _i)->path);
}
END_TEST

/* ---- the simulation adapter over scaler/sched (sim.h) ---- */

static nw_rc_t embedded_types(void *ud, nw_sched_snap_t *s, nw_err_t *err)
{
    (void)ud;
    static const char *const zones[] = {"us-east-1a", "us-east-1b", "us-east-1c"};
    return nw_from_catalog_load(s, NULL, 0, "us-east-1", zones, 3, err);
}

typedef struct {
    cJSON **docs;
    size_t nd;
    list_t ls[6]; /* NodePool NodeClaim Node Pod PodDisruptionBudget DaemonSet */
    nw_disrupt_simctx_t sx;
    nw_disrupt_input_t in;
    nw_disrupt_state_t *st;
} simfix_t;

static void simfix_load(simfix_t *f, const char *path, const char *drop_label_node)
{
    size_t len;
    char *text = nw_test_read_file(path, &len);
    nw_err_t err = {0};
    ck_assert_msg(nw_yaml_load_docs(text, len, &f->docs, &f->nd, &err) == NW_OK, "%s", err.msg);
    free(text);
    for (size_t i = 0; i < f->nd; i++) {
        if (drop_label_node) {
            const char *k = nw_json_str(f->docs[i], "kind");
            const char *n = nw_json_str(nw_json_get(f->docs[i], "metadata"), "name");
            if (k && n && strcmp(k, "Node") == 0 && strcmp(n, drop_label_node) == 0)
                cJSON_DeleteItemFromObjectCaseSensitive(
                    nw_json_get_mut(nw_json_get_mut(f->docs[i], "metadata"), "labels"),
                    "karpenter.sh/initialized");
        }
    }
    static const char *kinds[6] = {"NodePool", "NodeClaim",           "Node",
                                   "Pod",      "PodDisruptionBudget", "DaemonSet"};
    for (int i = 0; i < 6; i++) {
        f->ls[i].n = 0;
        for (size_t k = 0; k < f->nd; k++) {
            const char *kd = nw_json_str(f->docs[k], "kind");
            if (kd && strcmp(kd, kinds[i]) == 0 && f->ls[i].n < 512) {
                if (i == 3)
                    f->ls[i].pods[f->ls[i].n] = nw_test_pod(f->docs[k]);
                else if (i == 2)
                    f->ls[i].nodes[f->ls[i].n] = nw_test_node(f->docs[k]);
                else if (i == 1)
                    f->ls[i].claims[f->ls[i].n] = nw_test_node_claim(f->docs[k]);
                f->ls[i].v[f->ls[i].n++] = f->docs[k];
            }
        }
    }
    nw_disrupt_input_t in = {.nodepools = f->ls[0].v,
                             .nnodepools = f->ls[0].n,
                             .nodeclaims = f->ls[1].claims,
                             .nnodeclaims = f->ls[1].n,
                             .nodes = f->ls[2].nodes,
                             .nnodes = f->ls[2].n,
                             .pods = f->ls[3].pods,
                             .npods = f->ls[3].n,
                             .pdbs = f->ls[4].v,
                             .npdbs = f->ls[4].n,
                             .now = T("2026-11-30T18:00:00Z")};
    f->in = in;
    nw_disrupt_simctx_t sx = {.nodepools = f->ls[0].v,
                              .nnodepools = f->ls[0].n,
                              .nodes = f->ls[2].nodes,
                              .nnodes = f->ls[2].n,
                              .nodeclaims = f->ls[1].claims,
                              .nnodeclaims = f->ls[1].n,
                              .pods = f->ls[3].pods,
                              .npods = f->ls[3].n,
                              .daemonsets = f->ls[5].v,
                              .ndaemonsets = f->ls[5].n,
                              .now = f->in.now,
                              .add_types = embedded_types};
    f->sx = sx;
    ck_assert_int_eq(nw_candidates_state_build(&f->in, &f->st, NULL), NW_OK);
}

static void simfix_free(simfix_t *f)
{
    nw_candidates_state_free(f->st);
    nw_yaml_docs_free(f->docs, f->nd);
}

static void simulate(simfix_t *f, const char *const *names, size_t n, nw_disrupt_sim_t *out)
{
    memset(out, 0, sizeof *out);
    nw_err_t err = {0};
    ck_assert_msg(nw_disrupt_sim_schedule(&f->sx, f->st, names, n, out, &err) == NW_OK, "%s",
                  err.msg);
}

START_TEST(sim_schedule)
{
    simfix_t f;
    simfix_load(&f, "tests/data/disrupt/plan-cluster.yaml", NULL);
    nw_disrupt_sim_t r;
    /* half-a's 700m pod fits on the other nodes: a delete */
    const char *one[] = {"half-a"};
    simulate(&f, one, 1, &r);
    ck_assert_msg(r.ok, "%s", r.why);
    ck_assert_int_eq(r.nrepl, 0);
    nw_decide_sim_cleanup(&r);
    /* every node gone: the 2400m of pods need new capacity, as one NodeClaim */
    const char *all[] = {"empty", "half-a", "half-b", "keep", "guarded"};
    simulate(&f, all, 5, &r);
    ck_assert_msg(r.ok, "%s", r.why);
    ck_assert_int_eq(r.nrepl, 1);
    ck_assert_str_eq(r.repl[0].pool, "default");
    ck_assert(r.repl[0].allow_on_demand && !r.repl[0].allow_spot);
    ck_assert_int_ge(r.repl[0].ntypes, 1);
    for (int i = 0; i < r.repl[0].ntypes; i++) {
        ck_assert_msg(strncmp(r.repl[0].types[i].name, "m6i.", 4) == 0, "%s",
                      r.repl[0].types[i].name);
        ck_assert_msg(r.repl[0].types[i].on_demand > 0, "%s prices", r.repl[0].types[i].name);
    }
    /* the replacement NodeClaim: narrowed types, the pool's template, ownership */
    r.repl[0].ntypes = 1;
    cJSON *nc = nw_disrupt_sim_replacement_json(&r, 0, f.ls[0].v[0]);
    ck_assert_ptr_nonnull(nc);
    ck_assert_ptr_null(nw_disrupt_sim_replacement_json(&r, 1, f.ls[0].v[0]));
    char *txt = cJSON_PrintUnformatted(nc);
    const cJSON *req;
    bool saw_it = false, saw_ct = false;
    cJSON_ArrayForEach(req, nw_json_get(nw_json_get(nc, "spec"), "requirements"))
    {
        const char *k = nw_json_str(req, "key");
        const cJSON *vals = nw_json_get(req, "values");
        if (strcmp(k, "node.kubernetes.io/instance-type") == 0) {
            saw_it = true;
            ck_assert_int_eq(cJSON_GetArraySize(vals), 1);
            ck_assert_str_eq(cJSON_GetArrayItem(vals, 0)->valuestring, r.repl[0].types[0].name);
        }
        if (strcmp(k, "karpenter.sh/capacity-type") == 0) {
            saw_ct = true;
            ck_assert_int_eq(cJSON_GetArraySize(vals), 1);
            ck_assert_str_eq(cJSON_GetArrayItem(vals, 0)->valuestring, "on-demand");
        }
    }
    ck_assert_msg(saw_it && saw_ct, "%s", txt);
    ck_assert_msg(strstr(txt, "\"generateName\":\"default-\"") && strstr(txt, "pool-uid-1") &&
                      strstr(txt, "karpenter.sh/termination") &&
                      strstr(txt, "\"karpenter.sh/nodepool\":\"default\"") &&
                      strstr(txt, "\"nodeClassRef\"") && strstr(txt, "\"cpu\""),
                  "%s", txt);
    free(txt);
    cJSON_Delete(nc);
    nw_decide_sim_cleanup(&r);
    simfix_free(&f);

    /* a pod that would land on a node that is not initialized: no */
    simfix_load(&f, "tests/data/disrupt/plan-cluster.yaml", "node-empty");
    const char *three[] = {"half-a", "keep", "guarded"};
    simulate(&f, three, 3, &r);
    /* 1700m of pods: half-b has room for ~1.2 cpu, the rest goes to node-empty */
    ck_assert_msg(!r.ok && strstr(r.why, "uninitialized node node-empty"), "%d %s", r.ok, r.why);
    nw_decide_sim_cleanup(&r);
    simfix_free(&f);
}
END_TEST

START_TEST(sim_unplaceable)
{
    simfix_t f;
    simfix_load(&f, "tests/data/disrupt/plan-replace.yaml", NULL);
    /* make the pod too big for any allowed type */
    cJSON *pod = (cJSON *)f.ls[3].v[0];
    cJSON *req = nw_json_get_mut(
        nw_json_get_mut(
            cJSON_GetArrayItem(nw_json_get_mut(nw_json_get_mut(pod, "spec"), "containers"), 0),
            "resources"),
        "requests");
    cJSON_ReplaceItemInObjectCaseSensitive(req, "cpu", cJSON_CreateString("100"));
    f.ls[3].pods[0] = nw_test_pod(pod); /* the simulation reads the record */
    nw_disrupt_sim_t r;
    const char *one[] = {"big"};
    simulate(&f, one, 1, &r);
    ck_assert_msg(!r.ok && strstr(r.why, "pod default/s1 cannot be placed"), "%s", r.why);
    nw_decide_sim_cleanup(&r);
    simfix_free(&f);
}
END_TEST

Suite *nw_disruption_suite(void)
{
    Suite *s = suite_create("disruption");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, cron_cases);
    tcase_add_test(tc, cron_next_and_window);
    tcase_add_test(tc, budget_cases);
    tcase_add_test(tc, pod_rules);
    data_files = nw_test_cases_dir("tests/data/disruption", ".yaml", 10);
    nw_test_add_cases(tc, data_case, data_files);
    tcase_add_test(tc, sim_schedule);
    tcase_add_test(tc, sim_unplaceable);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}
