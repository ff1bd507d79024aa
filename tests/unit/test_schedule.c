/* Unit tests for scaler/sched: the table-driven cases of tests/data/schedule/NNN-name.yaml
 * (manifests in, expected NodeClaims / placements / per-pool reasons out, through the
 * same path as `nodewarden plan`), plus effective requests and determinism. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/pod.h"
#include "common/json.h"
#include "common/jsonintern.h"
#include "common/yaml.h"
#include "scaler/sched/schedule.h"
#include "scaler/sched/snap.h"
#include "cli/plan.h"
#include "config/config.h"
#include "tests/unit/testutil.h"

Suite *nw_schedule_suite(void);

static const char *js(const cJSON *o, const char *k)
{
    const cJSON *v = o ? nw_json_get(o, k) : NULL;
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int strlist(const cJSON *arr, const char **out, int max)
{
    int n = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, arr)
    {
        if (cJSON_IsString(it) && n < max)
            out[n++] = it->valuestring;
    }
    return n;
}

static bool in_list(const cJSON *arr, const char *s)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, arr)
    {
        if (cJSON_IsString(it) && strcmp(it->valuestring, s) == 0)
            return true;
    }
    return false;
}

static bool family_of(const char *itype, const char *fam)
{
    size_t n = strlen(fam);
    return strncmp(itype, fam, n) == 0 && itype[n] == '.';
}

/* does one result claim match an expected claim spec */
static bool claim_matches(const cJSON *c, const cJSON *e)
{
    const char *v;
    if ((v = js(e, "pool")) && strcmp(v, js(c, "nodepool")) != 0)
        return false;
    if ((v = js(e, "instanceType")) && strcmp(v, js(c, "instanceType")) != 0)
        return false;
    if ((v = js(e, "family")) && !family_of(js(c, "instanceType"), v))
        return false;
    if ((v = js(e, "zone")) && strcmp(v, js(c, "zone")) != 0)
        return false;
    if ((v = js(e, "capacityType")) && strcmp(v, js(c, "capacityType")) != 0)
        return false;
    if ((v = js(e, "requirementsContain")) && !strstr(js(c, "requirements"), v))
        return false;
    const cJSON *mvr = nw_json_get(e, "minValuesRelaxed");
    if (cJSON_IsBool(mvr) && cJSON_IsTrue(mvr) != cJSON_IsTrue(nw_json_get(c, "minValuesRelaxed")))
        return false;
    const cJSON *n = nw_json_get(e, "pods");
    if (cJSON_IsNumber(n) && cJSON_GetArraySize(nw_json_get(c, "pods")) != n->valueint)
        return false;
    const cJSON *it;
    cJSON_ArrayForEach(it, nw_json_get(e, "withPods"))
    {
        if (!in_list(nw_json_get(c, "pods"), it->valuestring))
            return false;
    }
    if ((v = js(e, "firstPod")) &&
        strcmp(cJSON_GetArrayItem(nw_json_get(c, "pods"), 0)->valuestring, v) != 0)
        return false;
    /* no kept alternative may be of these families */
    cJSON_ArrayForEach(it, nw_json_get(e, "neverFamilies"))
    {
        const cJSON *t;
        cJSON_ArrayForEach(t, nw_json_get(c, "instanceTypes"))
        {
            if (family_of(t->valuestring, it->valuestring))
                return false;
        }
    }
    const cJSON *mf = nw_json_get(e, "minFamilies");
    if (cJSON_IsNumber(mf)) {
        char fams[64][32];
        int nf = 0;
        const cJSON *t;
        cJSON_ArrayForEach(t, nw_json_get(c, "instanceTypes"))
        {
            char f[32];
            snprintf(f, sizeof f, "%s", t->valuestring);
            char *dot = strchr(f, '.');
            if (dot)
                *dot = 0;
            bool seen = false;
            for (int i = 0; i < nf && !seen; i++)
                seen = strcmp(fams[i], f) == 0;
            if (!seen && nf < 64)
                snprintf(fams[nf++], sizeof fams[0], "%s", f);
        }
        if (nf < mf->valueint)
            return false;
    }
    const cJSON *rq = nw_json_get(e, "requests");
    cJSON_ArrayForEach(it, rq)
    {
        const char *got = js(nw_json_get(c, "requests"), it->string);
        if (!got || !cJSON_IsString(it) || strcmp(got, it->valuestring) != 0)
            return false;
    }
    return true;
}

static void run_case(const char *path)
{
    size_t len;
    char *text = nw_test_read_file(path, &len);
    cJSON **docs = NULL;
    size_t nd = 0;
    nw_err_t err = {0};
    ck_assert_msg(nw_yaml_load_docs(text, len, &docs, &nd, &err) == NW_OK, "%s: %s", path, err.msg);
    free(text);
    ck_assert_msg(nd >= 2 && strcmp(js(docs[0], "kind"), "Case") == 0,
                  "%s: first document must be kind: Case", path);
    const cJSON *cs = docs[0], *exp = nw_json_get(cs, "expect");
    const cJSON *gp = nw_json_get(cs, "gpuPolicy");
    nw_plan_t *pl = nw_plan_new(!cJSON_IsFalse(gp));
    ck_assert_ptr_nonnull(pl);
    if (js(cs, "podDensity"))
        nw_plan_set_pod_density(pl, nw_config_pod_density(js(cs, "podDensity")));
    if (js(cs, "minValuesPolicy"))
        nw_plan_set_min_values_best_effort(pl,
                                           strcmp(js(cs, "minValuesPolicy"), "BestEffort") == 0);
    for (size_t i = 1; i < nd; i++)
        ck_assert_msg(nw_plan_collect(pl, docs[i], path) == 0, "%s: doc %zu", path, i + 1);
    const char *zones[16], *ice[16];
    int nz = strlist(nw_json_get(cs, "zones"), zones, 16),
        ni = strlist(nw_json_get(cs, "ice"), ice, 16);
    const char *region = js(cs, "region") ? js(cs, "region") : "us-east-1";
    nw_sched_snap_t *s = nw_plan_snapshot(pl, NULL, 0, region, zones, nz, ice, ni);
    ck_assert_msg(s != NULL, "%s: snapshot", path);
    nw_sched_results_t r;
    ck_assert_int_eq(nw_solve(s, 0, &r, &err), NW_OK);
    cJSON *res = nw_plan_results_json(s, &r);
    char *dump = cJSON_PrintUnformatted(res);
    if (dump && strlen(dump) > 2500)
        memcpy(dump + 2490, "...", 4);
    const cJSON *ncs = nw_json_get(res, "nodeclaims"), *un = nw_json_get(res, "unschedulable");
    const cJSON *n;
    if (cJSON_IsNumber(n = nw_json_get(exp, "claims")))
        ck_assert_msg(cJSON_GetArraySize(ncs) == n->valueint, "%s: %d claims, want %d\n%s", path,
                      cJSON_GetArraySize(ncs), n->valueint, dump);
    if (cJSON_IsNumber(n = nw_json_get(exp, "placedCount")))
        ck_assert_msg(cJSON_GetArraySize(nw_json_get(res, "placed")) == n->valueint,
                      "%s: placed count, want %d\n%s", path, n->valueint, dump);
    if (cJSON_IsNumber(n = nw_json_get(exp, "unschedulableCount")))
        ck_assert_msg(cJSON_GetArraySize(un) == n->valueint, "%s: %d unschedulable, want %d\n%s",
                      path, cJSON_GetArraySize(un), n->valueint, dump);
    if (cJSON_IsNumber(n = nw_json_get(exp, "distinctZones"))) {
        const char *zs[64];
        int k = 0;
        const cJSON *c;
        cJSON_ArrayForEach(c, ncs)
        {
            bool seen = false;
            for (int i = 0; i < k && !seen; i++)
                seen = strcmp(zs[i], js(c, "zone")) == 0;
            if (!seen && k < 64)
                zs[k++] = js(c, "zone");
        }
        ck_assert_msg(k == n->valueint, "%s: %d distinct zones, want %d\n%s", path, k, n->valueint,
                      dump);
    }
    const cJSON *e;
    cJSON_ArrayForEach(e, nw_json_get(exp, "nodeclaims"))
    {
        const cJSON *cnt = nw_json_get(e, "count");
        int want = cJSON_IsNumber(cnt) ? cnt->valueint : 1, got = 0;
        const cJSON *c;
        cJSON_ArrayForEach(c, ncs)
        {
            got += claim_matches(c, e);
        }
        char *es = cJSON_PrintUnformatted(e);
        ck_assert_msg(got == want, "%s: %d claims match %s, want %d\n%s", path, got, es, want,
                      dump);
        free(es);
    }
    cJSON_ArrayForEach(e, nw_json_get(exp, "placed"))
    {
        bool ok = false;
        const cJSON *pl2;
        cJSON_ArrayForEach(pl2, nw_json_get(res, "placed"))
        {
            ok |= strcmp(js(pl2, "pod"), e->string) == 0 &&
                  strcmp(js(pl2, "node"), e->valuestring) == 0;
        }
        ck_assert_msg(ok, "%s: %s not placed on %s\n%s", path, e->string, e->valuestring, dump);
    }
    /* placedOn: how many pods go to each existing node or in-flight claim */
    cJSON_ArrayForEach(e, nw_json_get(exp, "placedOn"))
    {
        int got = 0;
        const cJSON *pl2;
        cJSON_ArrayForEach(pl2, nw_json_get(res, "placed"))
        {
            got += strcmp(js(pl2, "node"), e->string) == 0;
        }
        ck_assert_msg(cJSON_IsNumber(e) && got == e->valueint,
                      "%s: %d pods placed on %s, want %d\n%s", path, got, e->string,
                      cJSON_IsNumber(e) ? e->valueint : -1, dump);
    }
    cJSON_ArrayForEach(e, nw_json_get(exp, "unschedulable"))
    {
        const cJSON *u = NULL, *it;
        cJSON_ArrayForEach(it, un)
        {
            if (strcmp(js(it, "pod"), js(e, "pod")) == 0)
                u = it;
        }
        ck_assert_msg(u != NULL, "%s: %s should be unschedulable\n%s", path, js(e, "pod"), dump);
        const cJSON *want;
        cJSON_ArrayForEach(want, nw_json_get(e, "reasons"))
        {
            const char *got = js(nw_json_get(u, "reasons"), want->string);
            ck_assert_msg(got && strstr(got, want->valuestring),
                          "%s: %s reason for %s: %s, want %s", path, js(e, "pod"), want->string,
                          got ? got : "(none)", want->valuestring);
        }
    }
    cJSON_ArrayForEach(e, nw_json_get(exp, "scheduled"))
    {
        ck_assert_msg(cJSON_IsString(e), "%s: expect.scheduled: a list of namespace/name", path);
        bool found = false;
        const cJSON *c, *it;
        cJSON_ArrayForEach(c, ncs)
        {
            found |= in_list(nw_json_get(c, "pods"), e->valuestring);
        }
        cJSON_ArrayForEach(it, nw_json_get(res, "placed"))
        {
            found |= strcmp(js(it, "pod"), e->valuestring) == 0;
        }
        ck_assert_msg(found, "%s: %s not scheduled\n%s", path, e->valuestring, dump);
    }
    /* podsWhere: the pods of every claim matching the filter, summed (the claims' split
     * is the packing's; the constraint is where the pods go) */
    cJSON_ArrayForEach(e, nw_json_get(exp, "podsWhere"))
    {
        cJSON *f = cJSON_Duplicate(e, true);
        ck_assert_ptr_nonnull(f);
        const cJSON *want = nw_json_get(e, "pods");
        ck_assert_msg(cJSON_IsNumber(want), "%s: expect.podsWhere: each needs pods", path);
        cJSON_DeleteItemFromObjectCaseSensitive(f, "pods");
        int got = 0;
        const cJSON *c;
        cJSON_ArrayForEach(c, ncs)
        {
            if (claim_matches(c, f))
                got += cJSON_GetArraySize(nw_json_get(c, "pods"));
        }
        char *es = cJSON_PrintUnformatted(e);
        ck_assert_msg(got == want->valueint, "%s: %d pods on claims matching %s\n%s", path, got, es,
                      dump);
        free(es);
        cJSON_Delete(f);
    }
    if (cJSON_IsNumber(n = nw_json_get(exp, "maxPrice")))
        ck_assert_msg(nw_json_get(res, "totalPricePerHour")->valuedouble <= n->valuedouble + 1e-9,
                      "%s: total %f > %f", path, nw_json_get(res, "totalPricePerHour")->valuedouble,
                      n->valuedouble);
    /* the cheapest packing (the default) never costs more than Karpenter's greedy one on the
     * same snapshot, and leaves no more pods out */
    if (!cJSON_IsFalse(nw_json_get(cs, "compareGreedy"))) {
        nw_sched_results_t g;
        nw_plan_set_packing(pl, false);
        ck_assert_int_eq(nw_solve(s, 0, &g, &err), NW_OK);
        ck_assert_msg(r.total_price <= g.total_price * (1 + 1e-9) + 1e-9,
                      "%s: cheapest packing $%.4f/h > greedy $%.4f/h\n%s", path, r.total_price,
                      g.total_price, dump);
        ck_assert_msg(r.nunsched <= g.nunsched, "%s: %d unschedulable, greedy %d\n%s", path,
                      r.nunsched, g.nunsched, dump);
        nw_solve_results_free(&g);
    }
    free(dump);
    cJSON_Delete(res);
    nw_solve_results_free(&r);
    nw_plan_free(pl);
    nw_yaml_docs_free(docs, nd);
}

/* one test per file of tests/data/schedule */
static const nw_test_cases_t *data_files;

START_TEST(data_case)
{
    run_case(nw_test_case(data_files, _i)->path);
}
END_TEST

/* effective requests as kubernetes/kubernetes staging/src/k8s.io/component-helpers/resource/
 * helpers.go PodRequests computes them: sidecars, init peak, overhead */
START_TEST(effective_requests)
{
    const char *pod =
        "{\"metadata\":{\"name\":\"p\"},\"spec\":{"
        "\"initContainers\":[{\"name\":\"setup\",\"resources\":{\"requests\":{\"cpu\":\"1\","
        "\"memory\":\"1Gi\"}}},{\"name\":\"proxy\",\"restartPolicy\":\"Always\",\"resources\":"
        "{\"requests\":{\"cpu\":\"100m\",\"memory\":\"64Mi\"}}}],"
        "\"containers\":[{\"name\":\"app\",\"resources\":{\"requests\":{\"cpu\":\"500m\","
        "\"memory\":\"512Mi\"}}}],\"overhead\":{\"cpu\":\"250m\",\"memory\":\"120Mi\"}}}";
    nw_sched_snap_t *s = nw_snapshot_new();
    cJSON *j = cJSON_Parse(pod);
    nw_err_t err = {0};
    ck_assert_int_eq(nw_snap_pod_add_json(s, j, &err), NW_OK);
    /* one pool with nothing: the pod is unschedulable; check via a 1-type catalog */
    nw_sched_res_t cap = {{0}};
    cap.v[NW_SR_CPU] = 1250;
    cap.v[NW_SR_MEMORY] = (1024LL + 120) * 1048576 * 1000;
    cap.v[NW_SR_PODS] = 1000;
    nw_sched_offering_t of = {
        .zone = "z1", .capacity_type = "on-demand", .price = 1, .available = true};
    ck_assert_int_eq(
        nw_snap_node_add_itype_raw(s, "exact", NULL, NULL, 0, &cap, &cap, false, &of, 1, &err),
        NW_OK);
    cJSON *np =
        cJSON_Parse("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"template\":{\"spec\":{}}}}");
    ck_assert_int_eq(nw_snap_node_add_pool_json(s, np, &err), NW_OK);
    nw_sched_results_t r;
    ck_assert_int_eq(nw_solve(s, 0, &r, &err), NW_OK);
    ck_assert_int_eq(r.nclaims, 1);
    ck_assert_int_eq(r.claims[0].requests.v[NW_SR_CPU], 1250);
    ck_assert_int_eq(r.claims[0].requests.v[NW_SR_MEMORY], (1024LL + 120) * 1048576 * 1000);
    nw_solve_results_free(&r);
    /* one millicore less and it no longer fits */
    nw_snapshot_free(s);
    cJSON_Delete(j);
    cJSON_Delete(np);
}
END_TEST

/* opts.repack: 18 pods of 3.5 CPU / 28 Gi. Karpenter's packing fills one claim until
 * only "big" (128 CPU / 512 Gi, $6.144) holds it; the re-pack puts them on two "mid"
 * (32 CPU / 256 Gi, $2.016: 9 each), cheaper than big and than nine "small". A pod
 * with hostname anti-affinity keeps its claim out of the re-pack. */
static nw_sched_snap_t *repack_snap(bool repack, bool anti)
{
    nw_sched_snap_t *s = nw_snapshot_new();
    nw_err_t err = {0};
    struct {
        const char *name;
        int cpu, gib;
        double price;
    } ty[] = {{"small", 8, 64, 0.504}, {"mid", 32, 256, 2.016}, {"big", 128, 512, 6.144}};
    for (int i = 0; i < 3; i++) {
        nw_sched_res_t cap = {{0}};
        cap.v[NW_SR_CPU] = ty[i].cpu * 1000LL;
        cap.v[NW_SR_MEMORY] = ty[i].gib * 1073741824LL * 1000;
        cap.v[NW_SR_PODS] = 110 * 1000;
        nw_sched_offering_t of = {
            .zone = "z1", .capacity_type = "on-demand", .price = ty[i].price, .available = true};
        ck_assert_int_eq(nw_snap_node_add_itype_raw(s, ty[i].name, NULL, NULL, 0, &cap, &cap, false,
                                                    &of, 1, &err),
                         NW_OK);
    }
    cJSON *np =
        cJSON_Parse("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"template\":{\"spec\":{}}}}");
    ck_assert_int_eq(nw_snap_node_add_pool_json(s, np, &err), NW_OK);
    cJSON_Delete(np);
    for (int i = 0; i < 18; i++) {
        char b[1024];
        snprintf(b, sizeof b,
                 "{\"metadata\":{\"name\":\"p%02d\",\"labels\":{\"app\":\"%s\"}},\"spec\":{"
                 "\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"3500m\","
                 "\"memory\":\"28Gi\"}}}]%s}}",
                 i, anti && i == 0 ? "solo" : "x",
                 anti && i == 0 ? ",\"affinity\":{\"podAntiAffinity\":{\"requiredDuringScheduling"
                                  "IgnoredDuringExecution\":[{\"topologyKey\":\"kubernetes.io/"
                                  "hostname\",\"labelSelector\":{\"matchLabels\":{\"app\":"
                                  "\"solo\"}}}]}}"
                                : "");
        cJSON *pj = cJSON_Parse(b);
        ck_assert_ptr_nonnull(pj);
        ck_assert_int_eq(nw_snap_pod_add_json(s, pj, &err), NW_OK);
        cJSON_Delete(pj);
    }
    nw_sched_opts_t o = {.repack = repack};
    nw_snapshot_set_opts(s, &o);
    return s;
}

START_TEST(repack_interchangeable_claims)
{
    nw_err_t err = {0};
    nw_sched_results_t r;
    nw_sched_snap_t *s = repack_snap(false, false);
    ck_assert_int_eq(nw_solve(s, 0, &r, &err), NW_OK);
    ck_assert_int_eq(r.nclaims, 1);
    ck_assert_str_eq(nw_snapshot_itype(s, (size_t)r.claims[0].itype)->name, "big");
    nw_solve_results_free(&r);
    nw_snapshot_free(s);

    s = repack_snap(true, false);
    ck_assert_int_eq(nw_solve(s, 0, &r, &err), NW_OK);
    ck_assert_int_eq(r.nclaims, 2);
    int pods = 0;
    for (int i = 0; i < r.nclaims; i++) {
        ck_assert_str_eq(nw_snapshot_itype(s, (size_t)r.claims[i].itype)->name, "mid");
        ck_assert_int_eq(r.claims[i].npods, 9);
        ck_assert_int_eq(r.claims[i].requests.v[NW_SR_CPU], 9 * 3500);
        pods += r.claims[i].npods;
    }
    ck_assert_int_eq(pods, 18);
    ck_assert(r.total_price > 4.03 && r.total_price < 4.04);
    nw_solve_results_free(&r);
    nw_snapshot_free(s);

    /* the claim with the anti-affinity pod is left as Karpenter packed it */
    s = repack_snap(true, true);
    ck_assert_int_eq(nw_solve(s, 0, &r, &err), NW_OK);
    ck_assert_int_eq(r.nclaims, 1);
    ck_assert_str_eq(nw_snapshot_itype(s, (size_t)r.claims[0].itype)->name, "big");
    nw_solve_results_free(&r);
    nw_snapshot_free(s);
}
END_TEST

/* tests/data/schedule/063-split-tied-claims.yaml solved at the default packing and at
 * Karpenter's: pods under hostname anti-affinity ("anti") each start a claim that the greedy
 * placement fills with unconstrained pods; the free pods are re-packed out of those claims
 * (solve_split.c). Every constraint still holds — at most one "anti" pod per claim, each
 * app's zonal spread within its skew — every pod is placed, and it costs less than
 * Karpenter's packing with no more claims. */
static void split_case_counts(const nw_sched_snap_t *s, const nw_sched_results_t *r)
{
    const char *apps[3] = {"default/anti-", "default/mem-", "default/small-"};
    int zc[3][3] = {{0}}, placed = 0;
    for (int i = 0; i < r->nclaims; i++) {
        const nw_sched_claim_t *cl = &r->claims[i];
        int z = cl->zone[strlen(cl->zone) - 1] - 'a', anti = 0;
        ck_assert(z >= 0 && z < 3);
        for (int k = 0; k < cl->npods; k++) {
            const char *key = nw_snapshot_pod_key(s, (size_t)cl->pods[k]);
            for (int a = 0; a < 3; a++)
                if (strncmp(key, apps[a], strlen(apps[a])) == 0) {
                    zc[a][z]++;
                    anti += a == 0;
                }
            placed++;
        }
        ck_assert_int_le(anti, 1);
    }
    ck_assert_int_eq(placed, 30);
    for (int a = 0; a < 3; a++) {
        int lo = zc[a][0], hi = zc[a][0];
        for (int z = 1; z < 3; z++) {
            lo = zc[a][z] < lo ? zc[a][z] : lo;
            hi = zc[a][z] > hi ? zc[a][z] : hi;
        }
        ck_assert_int_le(hi - lo, 1);
    }
}

/* A data case's objects (every document after the first) collected into a new plan at the
 * default packing; free with case_plan_free. */
typedef struct {
    nw_plan_t *pl;
    char *text;
    cJSON **docs;
    size_t nd;
} case_plan_t;

static nw_sched_snap_t *case_plan(case_plan_t *c, const char *path)
{
    size_t len;
    c->pl = nw_plan_new(true);
    c->text = nw_test_read_file(path, &len);
    c->docs = NULL;
    c->nd = 0;
    ck_assert_int_eq(nw_yaml_load_docs(c->text, len, &c->docs, &c->nd, NULL), NW_OK);
    for (size_t i = 1; i < c->nd; i++)
        ck_assert_int_eq(nw_plan_collect(c->pl, c->docs[i], "x"), 0);
    return nw_plan_snapshot(c->pl, NULL, 0, "us-east-1", NULL, 0, NULL, 0);
}

static void case_plan_free(case_plan_t *c)
{
    free(c->text);
    nw_yaml_docs_free(c->docs, c->nd);
    nw_plan_free(c->pl);
}

START_TEST(split_tied_claims)
{
    case_plan_t c;
    nw_sched_snap_t *s = case_plan(&c, "tests/data/schedule/063-split-tied-claims.yaml");
    nw_plan_t *pl = c.pl;
    ck_assert_ptr_nonnull(s);
    nw_sched_results_t r, g;
    ck_assert_int_eq(nw_solve(s, 0, &r, NULL), NW_OK);
    split_case_counts(s, &r);
    nw_plan_set_packing(pl, false);
    ck_assert_int_eq(nw_solve(s, 0, &g, NULL), NW_OK);
    split_case_counts(s, &g);
    ck_assert_int_le(r.nclaims, g.nclaims);
    ck_assert_msg(r.total_price < g.total_price * 0.9, "split $%.4f/h, greedy $%.4f/h",
                  r.total_price, g.total_price);
    nw_solve_results_free(&r);
    nw_solve_results_free(&g);
    case_plan_free(&c);
}
END_TEST

START_TEST(bad_input_names_field)
{
    nw_sched_snap_t *s = nw_snapshot_new();
    nw_err_t err = {0};
    cJSON *j = cJSON_Parse("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":"
                           "\"a\",\"resources\":{\"requests\":{\"cpu\":\"1.2.3\"}}}]}}");
    ck_assert_int_ne(nw_snap_pod_add_json(s, j, &err), NW_OK);
    ck_assert_str_eq(err.path, "spec.containers[0].resources.requests[cpu]");
    cJSON_Delete(j);
    memset(&err, 0, sizeof err);
    j = cJSON_Parse("{\"metadata\":{\"name\":\"np\"},\"spec\":{\"template\":{\"spec\":{"
                    "\"requirements\":[{\"key\":\"a\",\"operator\":\"Bogus\"}]}}}}");
    ck_assert_int_ne(nw_snap_node_add_pool_json(s, j, &err), NW_OK);
    ck_assert_ptr_nonnull(strstr(err.path, "requirements[0].operator"));
    cJSON_Delete(j);
    ck_assert_int_eq(nw_snapshot_npods(s), 0);
    ck_assert_int_eq(nw_snapshot_npools(s), 0);
    nw_snapshot_free(s);
}
END_TEST

/* the same snapshot solved twice gives the same answer */
START_TEST(deterministic)
{
    nw_plan_t *pl = nw_plan_new(true);
    size_t len;
    char *text = nw_test_read_file("tests/data/schedule/010-zonal-spread.yaml", &len);
    cJSON **docs = NULL;
    size_t nd = 0;
    ck_assert_int_eq(nw_yaml_load_docs(text, len, &docs, &nd, NULL), NW_OK);
    for (size_t i = 1; i < nd; i++)
        ck_assert_int_eq(nw_plan_collect(pl, docs[i], "x"), 0);
    nw_sched_snap_t *s = nw_plan_snapshot(pl, NULL, 0, "us-east-1", NULL, 0, NULL, 0);
    ck_assert_ptr_nonnull(s);
    nw_sched_results_t a, b;
    ck_assert_int_eq(nw_solve(s, 0, &a, NULL), NW_OK);
    ck_assert_int_eq(nw_solve(s, 0, &b, NULL), NW_OK);
    cJSON *ja = nw_plan_results_json(s, &a), *jb = nw_plan_results_json(s, &b);
    char *ta = cJSON_PrintUnformatted(ja), *tb = cJSON_PrintUnformatted(jb);
    ck_assert_str_eq(ta, tb);
    free(ta);
    free(tb);
    cJSON_Delete(ja);
    cJSON_Delete(jb);
    nw_solve_results_free(&a);
    nw_solve_results_free(&b);
    free(text);
    nw_yaml_docs_free(docs, nd);
    nw_plan_free(pl);
}
END_TEST

/* ---- pods from their records (api/pod.h) -------------------------------------- */

/* Three zones of one type, a pool, a node in zone za; the pods are added by the caller. */
static nw_sched_snap_t *record_snap(void)
{
    nw_sched_snap_t *s = nw_snapshot_new();
    nw_err_t err = {0};
    nw_sched_res_t cap = {{0}};
    cap.v[NW_SR_CPU] = 4000;
    cap.v[NW_SR_MEMORY] = 16 * 1073741824LL * 1000;
    cap.v[NW_SR_PODS] = 110 * 1000;
    nw_sched_offering_t of[3];
    const char *zones[] = {"za", "zb", "zc"};
    for (int z = 0; z < 3; z++) {
        of[z] = (nw_sched_offering_t){.capacity_type = "on-demand", .price = 1, .available = true};
        snprintf(of[z].zone, sizeof of[z].zone, "%s", zones[z]);
    }
    ck_assert_int_eq(
        nw_snap_node_add_itype_raw(s, "t4", NULL, NULL, 0, &cap, &cap, false, of, 3, &err), NW_OK);
    cJSON *j = cJSON_Parse("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"template\":{\"spec\":{}}}}");
    ck_assert_int_eq(nw_snap_node_add_pool_json(s, j, &err), NW_OK);
    cJSON_Delete(j);
    j = cJSON_Parse("{\"metadata\":{\"name\":\"n1\",\"labels\":{\"topology.kubernetes.io/zone\":"
                    "\"za\",\"node.kubernetes.io/instance-type\":\"t4\"}},\"status\":{"
                    "\"allocatable\":{\"cpu\":\"4\",\"memory\":\"16Gi\",\"pods\":\"110\"}}}");
    ck_assert_int_eq(nw_snap_node_add_json(s, j, &err), NW_OK);
    cJSON_Delete(j);
    return s;
}

/* a Deployment's replica: name, namespace, uid, app label, pod-template-hash, owner, second
 * of creation, image, cpu, extra container members, app label again (the spread's selector) */
#define REPLICA                                                                                    \
    "{\"metadata\":{\"name\":\"%s-%d\",\"namespace\":\"%s\",\"uid\":\"u-%s-%d\",\"labels\":{"      \
    "\"app\":\"%s\",\"pod-template-hash\":\"h%d\"},\"ownerReferences\":[{\"kind\":\"ReplicaSet\"," \
    "\"name\":\"%s\",\"controller\":true}],\"creationTimestamp\":\"2026-01-01T00:00:0%dZ\"},"      \
    "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x:%d\",\"resources\":{\"requests\":{"   \
    "\"cpu\":\"%s\"}}%s}],\"tolerations\":[{\"key\":\"k\",\"operator\":\"Exists\"}],"              \
    "\"topologySpreadConstraints\":[{\"maxSkew\":1,\"topologyKey\":\"topology.kubernetes.io/"      \
    "zone\",\"whenUnsatisfiable\":\"DoNotSchedule\",\"labelSelector\":{\"matchLabels\":{\"app\":"  \
    "\"%s\"}},\"matchLabelKeys\":[\"pod-template-hash\"]}]},\"status\":{\"phase\":\"Pending\"}}"

#define SOLO                                                                                       \
    "{\"metadata\":{\"name\":\"solo-%d\",\"namespace\":\"a\",\"labels\":{\"app\":\"solo\"}},"      \
    "\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}],"    \
    "\"affinity\":{\"podAntiAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":[{"     \
    "\"topologyKey\":\"kubernetes.io/hostname\",\"labelSelector\":{\"matchLabels\":{\"app\":"      \
    "\"solo\"}}}]}}}}"

/* Replicas of two Deployments (one in two namespaces: zonal spread with matchLabelKeys, a
 * toleration; one with a host port), hostname anti-affinity, a bound pod, a finished one. */
static int record_pods(char (*out)[1400], int max)
{
    int n = 0;
    const char *nss[] = {"a", "b"};
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < 5 && n < max; i++)
            snprintf(out[n++], sizeof out[0], REPLICA, "web", i, nss[k], nss[k], i, "web", i % 2,
                     "web", i, i, "700m", "", "web");
    for (int i = 0; i < 3 && n < max; i++)
        snprintf(out[n++], sizeof out[0], REPLICA, "hp", i, "a", "hp", i, "hp", 0, "hp", i, 0,
                 "100m", ",\"ports\":[{\"containerPort\":80},{\"hostPort\":8080}]", "hp");
    for (int i = 0; i < 2 && n < max; i++)
        snprintf(out[n++], sizeof out[0], SOLO, i);
    snprintf(out[n++], sizeof out[0], "%s",
             "{\"metadata\":{\"name\":\"bound\",\"namespace\":\"a\"},\"spec\":{\"nodeName\":\"n1\","
             "\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"3\"}}}]},"
             "\"status\":{\"phase\":\"Running\"}}");
    snprintf(out[n++], sizeof out[0], "%s",
             "{\"metadata\":{\"name\":\"done\",\"namespace\":\"a\"},\"spec\":{\"containers\":[{"
             "\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"3\"}}}]},\"status\":{\"phase\":"
             "\"Succeeded\"}}");
    return n;
}

static char *results_text(const nw_sched_snap_t *s, const nw_sched_results_t *r)
{
    cJSON *j = nw_plan_results_json(s, r);
    char *t = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return t;
}

/* The same pods give the same answer from their JSON and from their records; replicas hold
 * one spec, which a snapshot derives once (one entry per distinct spec). */
START_TEST(records_match_json)
{
    static char pods[32][1400];
    int n = record_pods(pods, 32);
    nw_sched_snap_t *a = record_snap(), *b = record_snap();
    nw_jsonintern_t *in = nw_jsonintern_new();
    nw_pod_t *recs[32];
    nw_err_t err = {0};
    for (int i = 0; i < n; i++) {
        cJSON *j = cJSON_Parse(pods[i]);
        ck_assert_msg(j != NULL, "pod %d", i);
        ck_assert_msg(nw_snap_pod_add_json(a, j, &err) == NW_OK, "%s: %s", err.path, err.msg);
        ck_assert_int_eq(nw_pod_decode(j, in, &recs[i], &err), NW_OK);
        cJSON_Delete(j);
    }
    for (int i = 0; i < n; i++)
        ck_assert_msg(nw_snap_pod_add(b, recs[i], &err) == NW_OK, "%s: %s", err.path, err.msg);
    /* web (both namespaces, both pod-template-hash values, any image), hp, solo, and one
     * for bound and done (the node is not part of the spec) */
    ck_assert_int_eq(a->nspecs, 4);
    ck_assert_int_eq(b->nspecs, 4);
    nw_sched_results_t ra, rb;
    ck_assert_int_eq(nw_solve(a, 0, &ra, &err), NW_OK);
    ck_assert_int_eq(nw_solve(b, 0, &rb, &err), NW_OK);
    ck_assert_int_eq(rb.considered, n - 2);
    char *ta = results_text(a, &ra), *tb = results_text(b, &rb);
    ck_assert_str_eq(ta, tb);
    free(ta);
    free(tb);
    nw_solve_results_free(&ra);
    nw_solve_results_free(&rb);
    nw_snapshot_free(a);
    nw_snapshot_free(b);
    for (int i = 0; i < n; i++)
        nw_pod_free(recs[i]);
    nw_jsonintern_free(in);
}
END_TEST

/* A Node added from its record (what the cache decodes) is the node its JSON gives: labels,
 * requirements, taints, resources, pool, readiness to schedule, provider ID. */
START_TEST(node_record_matches_json)
{
    static const char *const nodes[] = {
        "{\"metadata\":{\"name\":\"n1\",\"labels\":{\"karpenter.sh/nodepool\":\"default\","
        "\"karpenter.sh/initialized\":\"true\",\"topology.kubernetes.io/zone\":\"z1\","
        "\"node.kubernetes.io/instance-type\":\"m5.large\"}},\"spec\":{\"providerID\":"
        "\"aws:///z1/i-1\",\"taints\":[{\"key\":\"a\",\"value\":\"b\",\"effect\":"
        "\"NoSchedule\"},{\"key\":\"c\",\"effect\":\"PreferNoSchedule\"}]},\"status\":{"
        "\"allocatable\":{\"pods\":\"29\",\"cpu\":\"1930m\",\"memory\":\"7Gi\","
        "\"example.com/dev\":2},\"capacity\":{\"cpu\":\"2\",\"memory\":\"8Gi\","
        "\"pods\":\"29\"}}}",
        "{\"metadata\":{\"name\":\"n2\",\"deletionTimestamp\":\"2026-12-01T00:00:00Z\","
        "\"labels\":{\"karpenter.sh/nodepool\":\"gpu\"}},\"spec\":{}}",
        "{\"metadata\":{\"name\":\"n3\"}}",
    };
    nw_sched_snap_t *a = nw_snapshot_new(), *b = nw_snapshot_new();
    nw_err_t err = {0};
    for (size_t i = 0; i < sizeof nodes / sizeof *nodes; i++) {
        cJSON *j = cJSON_Parse(nodes[i]);
        ck_assert_ptr_nonnull(j);
        nw_node_t *rec = NULL;
        ck_assert_int_eq(nw_node_decode(j, &rec, &err), NW_OK);
        ck_assert_msg(nw_snap_node_add_json(a, j, &err) == NW_OK, "%s: %s", err.path, err.msg);
        ck_assert_msg(nw_snap_node_add_node(b, rec, &err) == NW_OK, "%s: %s", err.path, err.msg);
        nw_node_free(rec);
        cJSON_Delete(j);
    }
    ck_assert_uint_eq(a->nnodes, 3);
    ck_assert_uint_eq(b->nnodes, a->nnodes);
    for (size_t i = 0; i < a->nnodes; i++) {
        const nw_snode_t *x = &a->nodes[i], *y = &b->nodes[i];
        ck_assert_str_eq(x->name, y->name);
        ck_assert_int_eq(x->claim, y->claim);
        ck_assert_int_eq(x->initialized, y->initialized);
        ck_assert_int_eq(x->deleting, y->deleting);
        ck_assert((x->pool == NULL) == (y->pool == NULL));
        if (x->pool)
            ck_assert_str_eq(x->pool, y->pool);
        ck_assert((x->provider_id == NULL) == (y->provider_id == NULL));
        if (x->provider_id)
            ck_assert_str_eq(x->provider_id, y->provider_id);
        ck_assert_uint_eq(x->labels.n, y->labels.n);
        for (size_t k = 0; k < x->labels.n; k++) {
            ck_assert_str_eq(x->labels.v[k].key, y->labels.v[k].key);
            ck_assert_str_eq(x->labels.v[k].value, y->labels.v[k].value);
        }
        char fa[2048], fb[2048];
        nw_requirements_format(&x->reqs, fa, sizeof fa);
        nw_requirements_format(&y->reqs, fb, sizeof fb);
        ck_assert_str_eq(fa, fb);
        ck_assert_uint_eq(x->taints.n, y->taints.n);
        for (size_t k = 0; k < x->taints.n; k++) {
            ck_assert_str_eq(x->taints.v[k].key, y->taints.v[k].key);
            ck_assert_str_eq(x->taints.v[k].value, y->taints.v[k].value);
            ck_assert_int_eq(x->taints.v[k].effect, y->taints.v[k].effect);
        }
        /* the slots are the snapshots' own: compare by resource name */
        for (int k = 0; k < NW_SCHED_NRES; k++) {
            if (k >= (int)a->nres)
                break;
            int kb = nw_snapshot_res_slot_find(b, a->res_names[k]);
            int64_t ya = kb >= 0 ? y->allocatable.v[kb] : 0, yc = kb >= 0 ? y->capacity.v[kb] : 0;
            ck_assert_int_eq(x->allocatable.v[k], ya);
            ck_assert_int_eq(x->capacity.v[k], yc);
        }
    }
    ck_assert_int_eq(a->nodes[0].allocatable.v[nw_snapshot_res_slot_find(a, "example.com/dev")],
                     2000);
    nw_snapshot_free(a);
    nw_snapshot_free(b);
}
END_TEST

/* nw_snap_pod_add_as: a running pod put back as pending is placed again; a pending pod
 * bound to a node counts there and is not provisioned. */
START_TEST(record_moved)
{
    nw_sched_snap_t *s = record_snap();
    nw_jsonintern_t *in = nw_jsonintern_new();
    nw_err_t err = {0};
    cJSON *j = cJSON_Parse(
        "{\"metadata\":{\"name\":\"r\",\"namespace\":\"a\"},\"spec\":{\"nodeName\":\"gone\","
        "\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"2\"}}}]},"
        "\"status\":{\"phase\":\"Running\",\"nominatedNodeName\":\"x\"}}");
    cJSON *k = cJSON_Parse("{\"metadata\":{\"name\":\"q\",\"namespace\":\"a\"},\"spec\":{"
                           "\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":"
                           "\"3\"}}}]},\"status\":{\"phase\":\"Pending\"}}");
    nw_pod_t *r, *q;
    ck_assert_int_eq(nw_pod_decode(j, in, &r, &err), NW_OK);
    ck_assert_int_eq(nw_pod_decode(k, in, &q, &err), NW_OK);
    nw_sched_pod_as_t again = {.pending = true}, on_n1 = {.node = "n1"};
    ck_assert_int_eq(nw_snap_pod_add_as(s, r, &again, &err), NW_OK);
    ck_assert_int_eq(nw_snap_pod_add_as(s, q, &on_n1, &err), NW_OK);
    nw_sched_results_t res;
    ck_assert_int_eq(nw_solve(s, 0, &res, &err), NW_OK);
    /* q takes 3 of n1's 4 CPUs, so r (2 CPUs) needs a new claim */
    ck_assert_int_eq(res.considered, 1);
    ck_assert_int_eq(res.nclaims, 1);
    ck_assert_int_eq(res.claims[0].npods, 1);
    ck_assert_str_eq(nw_snapshot_pod_key(s, (size_t)res.claims[0].pods[0]), "a/r");
    nw_solve_results_free(&res);
    nw_snapshot_free(s);
    nw_pod_free(r);
    nw_pod_free(q);
    nw_jsonintern_free(in);
    cJSON_Delete(j);
    cJSON_Delete(k);
}
END_TEST

/* nw_snap_pod_add_json decodes the pod but keeps the errors of the JSON as given: what the
 * record leaves out (a label set that is not an object, a host port that is not a number,
 * pod-level requests) is read from the JSON, the field named as written there. */
START_TEST(json_errors_as_given)
{
    static const struct {
        const char *pod, *path;
    } cases[] = {
        {"{\"metadata\":{\"name\":\"p\",\"labels\":[\"x\"]},\"spec\":{}}", "metadata.labels"},
        {"{\"metadata\":{\"name\":\"p\"}}", "spec"},
        {"{\"metadata\":{},\"spec\":{}}", "metadata.name"},
        {"{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"ports\":[{"
         "\"containerPort\":80},{\"hostPort\":\"http\"}]}]}}",
         "spec.containers[0].ports[1]"},
        {"{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"ports\":[{"
         "\"containerPort\":80},{\"hostPort\":80,\"protocol\":\"ICMP\"}]}]}}",
         "spec.containers[0].ports[1]"},
        {"{\"metadata\":{\"name\":\"p\"},\"spec\":{\"resources\":{\"requests\":{\"cpu\":"
         "\"1.2.3\"}},\"containers\":[{\"name\":\"c\"}]}}",
         "spec.resources.requests[cpu]"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        nw_sched_snap_t *s = nw_snapshot_new();
        nw_err_t err = {0};
        cJSON *j = cJSON_Parse(cases[i].pod);
        ck_assert_int_ne(nw_snap_pod_add_json(s, j, &err), NW_OK);
        ck_assert_msg(strcmp(err.path, cases[i].path) == 0, "case %zu: %s: %s", i, err.path,
                      err.msg);
        ck_assert_int_eq(nw_snapshot_npods(s), 0);
        cJSON_Delete(j);
        nw_snapshot_free(s);
    }
    /* pod-level requests count (spec.resources.requests over the containers' sum): 4.5
     * CPUs fit neither n1 nor the 4-CPU type, the containers' 1 CPU would fit n1 */
    nw_sched_snap_t *s = record_snap();
    nw_err_t err = {0};
    cJSON *j = cJSON_Parse("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"resources\":{\"requests\":{"
                           "\"cpu\":\"4500m\"}},\"containers\":[{\"name\":\"c\",\"resources\":{"
                           "\"requests\":{\"cpu\":\"1\"}}}]}}");
    ck_assert_int_eq(nw_snap_pod_add_json(s, j, &err), NW_OK);
    cJSON_Delete(j);
    nw_sched_results_t r;
    ck_assert_int_eq(nw_solve(s, 0, &r, &err), NW_OK);
    ck_assert_int_eq(r.nplaced, 0);
    ck_assert_int_eq(r.nunsched, 1);
    nw_solve_results_free(&r);
    nw_snapshot_free(s);
}
END_TEST

Suite *nw_schedule_suite(void)
{
    Suite *s = suite_create("schedule");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    data_files = nw_test_cases_dir("tests/data/schedule", ".yaml", 14);
    nw_test_add_cases(tc, data_case, data_files);
    tcase_add_test(tc, effective_requests);
    tcase_add_test(tc, bad_input_names_field);
    tcase_add_test(tc, deterministic);
    tcase_add_test(tc, repack_interchangeable_claims);
    tcase_add_test(tc, split_tied_claims);
    tcase_add_test(tc, records_match_json);
    tcase_add_test(tc, node_record_matches_json);
    tcase_add_test(tc, record_moved);
    tcase_add_test(tc, json_errors_as_given);
    suite_add_tcase(s, tc);
    return s;
}
