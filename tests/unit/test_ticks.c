/* tests/unit/test_ticks.c — ticks that have nothing to do (scaler/controllers/tickgate.h)
 * and the lookups that keep a tick's cost per object small:
 *   tickgate    quiet while the objects of its kinds are the same (other kinds may change;
 *               it then holds the newer snapshot), not after an incomplete run, a change of
 *               its kinds or a deadline (monotonic or wall); the memo keeps a value for the
 *               same object, not for its replacement, and forgets what a run did not ask
 *   uidmap      put, get, delete (the entries after a deleted one still found), grow
 *   instindex   the first object in key order with an instance id; the cloud list by id
 *   controllers on the in-memory API (ctlfix.h) and a fake clock: ticks without a change make
 *               no request, and what a timer decides still happens when it is due with no
 *               change: expiry (expireAfter), lifecycle (the registration timeout, the
 *               EC2NodeClass refresh), drift (the 5-minute recheck), repair (a condition's
 *               toleration), the provisioner (pending pods looked at again), termination
 *               (a drain in progress goes on every tick)
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctlfix.h"
#include "scaler/controllers/driftmark.h"
#include "scaler/controllers/expiry.h"
#include "scaler/controllers/instindex.h"
#include "scaler/controllers/lifecycle.h"
#include "scaler/controllers/provisioning.h"
#include "scaler/controllers/repair.h"
#include "scaler/controllers/termination.h"
#include "scaler/controllers/tickgate.h"
#include "scaler/controllers/uidmap.h"

Suite *nw_ticks_suite(void);

#define SEC NW_NS_PER_SEC
#define MIN (60 * SEC)

static void put(nw_kube_cache_t *c, nw_kube_kind_t k, const char *json)
{
    cJSON *o = cJSON_Parse(json);
    ck_assert_ptr_nonnull(o);
    ck_assert_int_eq(nw_kube_cache_upsert(c, k, o), NW_OK);
}

static void claim(nw_kube_cache_t *c, const char *name, const char *rv)
{
    char b[512];
    snprintf(b, sizeof b,
             "{\"metadata\":{\"name\":\"%s\",\"uid\":\"u-%s\",\"resourceVersion\":\"%s\"},"
             "\"status\":{\"providerID\":\"aws:///us-west-2a/i-%s\"}}",
             name, name, rv, name);
    put(c, NW_KUBE_NODECLAIMS, b);
}

START_TEST(gate_quiet_and_deadlines)
{
    nw_kube_cache_t *c = nw_kube_cache_new(NULL);
    claim(c, "a", "1");
    claim(c, "b", "1");
    nw_tickgate_t g;
    nw_tickgate_init(&g, NW_TICKGATE_KIND(NW_KUBE_NODECLAIMS), 0);
    nw_kube_snap_t *s1 = nw_kube_cache_snapshot(c);
    ck_assert(!nw_tickgate_quiet(&g, s1, 0, 0)); /* never ran */
    nw_tickgate_ran(&g, s1, true, NW_TICKGATE_NEVER, NW_TICKGATE_NEVER);
    ck_assert(nw_tickgate_quiet(&g, s1, 0, 0));
    ck_assert(nw_tickgate_quiet(&g, s1, 1000 * MIN, 1000 * MIN));
    /* another kind changes: still quiet, and the newer snapshot is the one held */
    put(c, NW_KUBE_PODS, "{\"metadata\":{\"name\":\"p\",\"namespace\":\"d\"}}");
    nw_kube_snap_t *s2 = nw_kube_cache_snapshot(c);
    ck_assert_ptr_ne(s1, s2);
    ck_assert(nw_tickgate_same(&g, s2, NW_KUBE_NODECLAIMS));
    ck_assert(!nw_tickgate_same(&g, s2, NW_KUBE_PODS));
    ck_assert(nw_tickgate_quiet(&g, s2, 0, 0));
    ck_assert_ptr_eq(g.snap, s2);
    ck_assert_uint_eq(g.skips, 3);
    nw_kube_cache_snap_release(s1);
    /* a NodeClaim changes (same name, a new object): not quiet */
    claim(c, "b", "2");
    nw_kube_snap_t *s3 = nw_kube_cache_snapshot(c);
    ck_assert(!nw_tickgate_quiet(&g, s3, 0, 0));
    ck_assert(!nw_tickgate_quiet(&g, s3, 0, 0));
    /* an incomplete run: not quiet on the same snapshot either */
    nw_tickgate_ran(&g, s3, false, NW_TICKGATE_NEVER, NW_TICKGATE_NEVER);
    ck_assert(!nw_tickgate_quiet(&g, s3, 0, 0));
    /* deadlines, each clock on its own */
    nw_tickgate_ran(&g, s3, true, 50, 70);
    ck_assert(nw_tickgate_quiet(&g, s3, 49, 69));
    ck_assert(!nw_tickgate_quiet(&g, s3, 50, 0));
    ck_assert(!nw_tickgate_quiet(&g, s3, 0, 70));
    /* a NodeClaim leaves */
    nw_tickgate_ran(&g, s3, true, NW_TICKGATE_NEVER, NW_TICKGATE_NEVER);
    cJSON *gone = cJSON_Parse("{\"metadata\":{\"name\":\"a\"}}");
    ck_assert_int_eq(nw_kube_cache_remove(c, NW_KUBE_NODECLAIMS, gone), NW_OK);
    cJSON_Delete(gone);
    nw_kube_snap_t *s4 = nw_kube_cache_snapshot(c);
    ck_assert(!nw_tickgate_quiet(&g, s4, 0, 0));
    /* a new term forgets everything */
    nw_tickgate_ran(&g, s4, true, NW_TICKGATE_NEVER, NW_TICKGATE_NEVER);
    nw_tickgate_reset(&g);
    ck_assert_ptr_null(g.snap);
    ck_assert(!nw_tickgate_quiet(&g, s4, 0, 0));
    nw_tickgate_cleanup(&g);
    nw_kube_cache_snap_release(s2);
    nw_kube_cache_snap_release(s3);
    nw_kube_cache_snap_release(s4);
    nw_kube_cache_free(c);
}
END_TEST

START_TEST(gate_memo)
{
    nw_kube_cache_t *c = nw_kube_cache_new(NULL);
    for (int i = 0; i < 300; i++) { /* enough for the tables to grow */
        char n[16];
        snprintf(n, sizeof n, "c%03d", i);
        claim(c, n, "1");
    }
    nw_tickgate_t g;
    nw_tickgate_init(&g, NW_TICKGATE_KIND(NW_KUBE_NODECLAIMS), sizeof(int));
    nw_kube_snap_t *s = nw_kube_cache_snapshot(c);
    size_t n = nw_kube_cache_snap_count(s, NW_KUBE_NODECLAIMS);
    bool fresh;
    for (size_t i = 0; i < n; i++) {
        int *v = nw_tickgate_memo(&g, nw_kube_cache_snap_at(s, NW_KUBE_NODECLAIMS, i), &fresh);
        ck_assert_ptr_nonnull(v);
        ck_assert(fresh);
        ck_assert_int_eq(*v, 0);
        *v = (int)i + 1;
    }
    /* asked twice in one run: the value set */
    int *v = nw_tickgate_memo(&g, nw_kube_cache_snap_at(s, NW_KUBE_NODECLAIMS, 7), &fresh);
    ck_assert(!fresh);
    ck_assert_int_eq(*v, 8);
    nw_tickgate_ran(&g, s, true, NW_TICKGATE_NEVER, NW_TICKGATE_NEVER);
    /* c005 replaced; the next run asks every object but c010 */
    claim(c, "c005", "2");
    nw_kube_snap_t *s2 = nw_kube_cache_snapshot(c);
    for (size_t i = 0; i < n; i++) {
        const nw_kube_obj_t *o = nw_kube_cache_snap_at(s2, NW_KUBE_NODECLAIMS, i);
        if (i == 10)
            continue;
        v = nw_tickgate_memo(&g, o, &fresh);
        ck_assert_ptr_nonnull(v);
        if (i == 5) {
            ck_assert(fresh);
            ck_assert_int_eq(*v, 0);
        } else {
            ck_assert_msg(!fresh, "object %zu lost its value", i);
            ck_assert_int_eq(*v, (int)i + 1);
        }
    }
    nw_tickgate_ran(&g, s2, true, NW_TICKGATE_NEVER, NW_TICKGATE_NEVER);
    /* c010 was not asked in that run: forgotten */
    v = nw_tickgate_memo(&g, nw_kube_cache_snap_at(s2, NW_KUBE_NODECLAIMS, 10), &fresh);
    ck_assert(fresh);
    v = nw_tickgate_memo(&g, nw_kube_cache_snap_at(s2, NW_KUBE_NODECLAIMS, 11), &fresh);
    ck_assert(!fresh);
    ck_assert_int_eq(*v, 12);
    /* reset forgets every value */
    nw_tickgate_reset(&g);
    v = nw_tickgate_memo(&g, nw_kube_cache_snap_at(s2, NW_KUBE_NODECLAIMS, 11), &fresh);
    ck_assert(fresh);
    /* the cached lookup by name */
    nw_tickgate_last_t last = {0};
    const nw_kube_obj_t *o = nw_tickgate_get(&last, s2, NW_KUBE_NODECLAIMS, "c123");
    ck_assert_ptr_nonnull(o);
    ck_assert_str_eq(o->name, "c123");
    ck_assert_ptr_eq(nw_tickgate_get(&last, s2, NW_KUBE_NODECLAIMS, "c123"), o);
    ck_assert_ptr_null(nw_tickgate_get(&last, s2, NW_KUBE_NODECLAIMS, "nope"));
    ck_assert_ptr_null(nw_tickgate_get(&last, s2, NW_KUBE_NODECLAIMS, NULL));
    nw_tickgate_cleanup(&g);
    nw_kube_cache_snap_release(s);
    nw_kube_cache_snap_release(s2);
    nw_kube_cache_free(c);
}
END_TEST

START_TEST(uidmap)
{
    nw_uidmap_t m = {0};
    char k[80];
    for (long i = 0; i < 1000; i++) {
        snprintf(k, sizeof k, "uid-%ld", i);
        ck_assert_int_eq(nw_uidmap_put(&m, k, i), NW_OK);
    }
    ck_assert_int_eq(nw_uidmap_put(&m, "", 1), NW_EINVAL);
    ck_assert_uint_eq(m.n, 1000);
    for (long i = 0; i < 1000; i += 2) {
        snprintf(k, sizeof k, "uid-%ld", i);
        nw_uidmap_del(&m, k);
    }
    nw_uidmap_del(&m, "absent");
    ck_assert_uint_eq(m.n, 500);
    for (long i = 0; i < 1000; i++) {
        snprintf(k, sizeof k, "uid-%ld", i);
        ck_assert_int_eq(nw_uidmap_get(&m, k), i % 2 ? i : -1);
    }
    ck_assert_int_eq(nw_uidmap_put(&m, "uid-3", 33), NW_OK); /* replaced */
    ck_assert_int_eq(nw_uidmap_get(&m, "uid-3"), 33);
    ck_assert_uint_eq(m.n, 500);
    nw_uidmap_clear(&m);
    ck_assert_int_eq(nw_uidmap_get(&m, "uid-3"), -1);
    nw_uidmap_free(&m);
    ck_assert_int_eq(nw_uidmap_get(&m, "uid-3"), -1);
}
END_TEST

START_TEST(instindex)
{
    nw_kube_cache_t *c = nw_kube_cache_new(NULL);
    put(c, NW_KUBE_NODES,
        "{\"metadata\":{\"name\":\"n2\"},\"spec\":{\"providerID\":"
        "\"aws:///us-west-2a/i-1\"}}");
    put(c, NW_KUBE_NODES,
        "{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"providerID\":"
        "\"aws:///us-west-2b/i-1\"}}");
    put(c, NW_KUBE_NODES, "{\"metadata\":{\"name\":\"n3\"},\"spec\":{\"providerID\":\"i-3\"}}");
    put(c, NW_KUBE_NODES, "{\"metadata\":{\"name\":\"n4\"},\"spec\":{}}");
    nw_kube_snap_t *s = nw_kube_cache_snapshot(c);
    nw_instindex_t ix;
    ck_assert_int_eq(nw_instindex_build(&ix, s, NW_KUBE_NODES), NW_OK);
    ck_assert_uint_eq(ix.n, 3);
    ck_assert_str_eq(nw_instindex_find(&ix, "i-1")->name, "n1"); /* the first by key */
    ck_assert_str_eq(nw_instindex_find(&ix, "i-3")->name, "n3");
    ck_assert_ptr_null(nw_instindex_find(&ix, "i-2"));
    ck_assert_ptr_null(nw_instindex_find(&ix, ""));
    nw_instindex_free(&ix);
    nw_instindex_free(&ix);
    nw_kube_cache_snap_release(s);
    nw_kube_cache_free(c);

    nw_cloud_instance_t v[4];
    memset(v, 0, sizeof v);
    const char *ids[] = {"i-9", "i-2", "i-9", "i-1"};
    for (int i = 0; i < 4; i++)
        snprintf(v[i].id, sizeof v[i].id, "%s", ids[i]);
    nw_cloud_instances_t l = {v, 4, 4};
    size_t *sorted = nw_instindex_cloud_sort(&l);
    ck_assert_ptr_nonnull(sorted);
    size_t j = nw_instindex_cloud_lower(&l, sorted, "i-9");
    ck_assert_uint_eq(sorted[j], 0); /* the first in list order */
    ck_assert_uint_eq(sorted[j + 1], 2);
    ck_assert_uint_eq(sorted[nw_instindex_cloud_lower(&l, sorted, "i-1")], 3);
    ck_assert_uint_eq(nw_instindex_cloud_lower(&l, sorted, "i-99"), 4);
    free(sorted);
}
END_TEST

/* ---- controllers ---- */

static nw_kube_snap_t *snap(ctlfix_t *f)
{
    nw_kube_snap_t *s = nw_kube_cache_snapshot(f->deps.cache);
    ck_assert_ptr_nonnull(s);
    return s;
}

START_TEST(expiry_at_its_time)
{
    ctlfix_t f;
    ctlfix_init(&f);
    nw_expiry_t e;
    memset(&e, 0, sizeof e);
    e.deps = &f.deps;
    ctlfix_launched_claim(&f, "c1", "aws:///us-west-2a/i-1", NULL, ",\"expireAfter\":\"1h\"", NULL);
    ctlfix_launched_claim(&f, "c2", "aws:///us-west-2a/i-2", NULL, ",\"expireAfter\":\"2h\"", NULL);
    int m = ctlfix_mark(&f);
    for (int i = 0; i < 5; i++) { /* nothing changes, nothing is due: nothing asked */
        nw_kube_snap_t *s = snap(&f);
        nw_expiry_tick(&e, s);
        nw_kube_cache_snap_release(s);
        nw_clock_fake_advance(&f.clk, 10 * MIN);
    }
    ck_assert_int_eq(ctlfix_mark(&f), m);
    ck_assert_uint_ge(e.gate.skips, 4);
    /* 12:50 now; c1 (created 12:00) expires at 13:00, without any change of the cache */
    nw_clock_fake_advance(&f.clk, 10 * MIN - 1);
    nw_kube_snap_t *s = snap(&f);
    nw_expiry_tick(&e, s);
    ck_assert_int_eq(ctlfix_mark(&f), m);
    nw_clock_fake_advance(&f.clk, 1);
    nw_expiry_tick(&e, s);
    nw_expiry_tick(&e, s); /* the cache still shows it: not deleted twice */
    nw_kube_cache_snap_release(s);
    ck_assert_int_eq(ctlfix_count(&f, m, "DELETE", "/nodeclaims/c1", NULL), 1);
    ck_assert_int_eq(ctlfix_count(&f, m, "DELETE", "/nodeclaims/c2", NULL), 0);
    nw_expiry_cleanup(&e);
    ctlfix_free(&f);
}
END_TEST

START_TEST(lifecycle_timers)
{
    ctlfix_t f;
    ctlfix_init(&f);
    nw_lifecycle_opts_t o = {.registration_timeout_ns = 15 * MIN};
    nw_lifecycle_t *l = nw_lifecycle_new(&f.deps, &o);
    /* the fake API does not apply JSON patches: the class has its finalizer already */
    ctlfix_put(&f, NW_KUBE_EC2NODECLASSES,
               "{\"apiVersion\":\"karpenter.k8s.aws/v1\",\"kind\":\"EC2NodeClass\",\"metadata\":{"
               "\"name\":\"default\",\"uid\":\"nc-uid\",\"generation\":1,\"finalizers\":["
               "\"karpenter.k8s.aws/termination\"]},\"spec\":{\"role\":\"r\",\"amiSelectorTerms\":"
               "[{\"id\":\"ami-0fake\"}],\"subnetSelectorTerms\":[{\"tags\":{\"k\":\"v\"}}],"
               "\"securityGroupSelectorTerms\":[{\"tags\":{\"k\":\"v\"}}]}}",
               1);
    ctlfix_node_pair(&f, "a", NULL);
    ctlfix_launched_claim(&f, "c1", "aws:///us-west-2a/i-1", NULL, NULL, NULL); /* no Node */
    nw_kube_snap_t *s = snap(&f);
    nw_lifecycle_tick(l, s); /* the class's status written */
    nw_kube_cache_snap_release(s);
    ck_assert(ctlfix_sync(&f, NW_KUBE_EC2NODECLASSES,
                          "/apis/karpenter.k8s.aws/v1/ec2nodeclasses/default"));
    int resolves = f.cloud->resolves;
    int m = ctlfix_mark(&f);
    s = snap(&f);
    for (int i = 0; i < 10; i++) { /* the class is Ready for its generation: at rest */
        nw_lifecycle_tick(l, s);
        nw_clock_fake_advance(&f.clk, 2 * SEC);
    }
    ck_assert_int_eq(ctlfix_mark(&f), m);
    ck_assert_int_eq(f.cloud->resolves, resolves);
    /* 30 s after the first tick: the class is resolved again, with no change */
    nw_clock_fake_advance(&f.clk, 10 * SEC);
    nw_lifecycle_tick(l, s);
    ck_assert_int_eq(f.cloud->resolves, resolves + 1);
    ck_assert_int_eq(ctlfix_mark(&f), m); /* its status is what it was */
    /* c1 launched at 12:00 times out after 12:15, with no change */
    nw_clock_fake_advance(&f.clk, 15 * MIN - 30 * SEC);
    nw_lifecycle_tick(l, s);
    ck_assert_int_eq(ctlfix_count(&f, m, "DELETE", "/nodeclaims/c1", NULL), 0);
    nw_clock_fake_advance(&f.clk, 1);
    nw_lifecycle_tick(l, s);
    ck_assert_int_eq(ctlfix_count(&f, m, "DELETE", "/nodeclaims/c1", NULL), 1);
    ck_assert_int_eq(ctlfix_count(&f, m, "DELETE", "/nodeclaims/a", NULL), 0);
    nw_kube_cache_snap_release(s);
    /* a new term looks at everything again */
    nw_lifecycle_reset(l);
    resolves = f.cloud->resolves;
    s = snap(&f);
    nw_lifecycle_tick(l, s);
    nw_kube_cache_snap_release(s);
    ck_assert_int_eq(f.cloud->resolves, resolves + 1);
    nw_lifecycle_free(l);
    ctlfix_free(&f);
}
END_TEST

START_TEST(drift_recheck)
{
    ctlfix_t f;
    ctlfix_init(&f);
    nw_counters_t counters;
    ck_assert_int_eq(nw_prom_counters_init(&counters), NW_OK);
    nw_driftmark_t *d = nw_driftmark_new(&f.deps, &counters);
    ctlfix_put_nodeclass(&f);
    ctlfix_put_nodepool(&f, NULL);
    ctlfix_node_pair(&f, "a", NULL);
    fake_cloud_add(f.cloud, "i-a", "a", 60 * SEC);
    nw_kube_snap_t *s = snap(&f);
    nw_driftmark_tick(d, s); /* the hash annotations written */
    nw_kube_cache_snap_release(s);
    ck_assert(ctlfix_sync(&f, NW_KUBE_NODEPOOLS, "/apis/karpenter.sh/v1/nodepools/default"));
    ck_assert(ctlfix_sync(&f, NW_KUBE_EC2NODECLASSES,
                          "/apis/karpenter.k8s.aws/v1/ec2nodeclasses/default"));
    s = snap(&f);
    nw_driftmark_tick(d, s); /* the NodePool and class changed: judged again */
    ctlfix_sync_nodeclaims(&f);
    nw_kube_cache_snap_release(s);
    s = snap(&f);
    nw_driftmark_tick(d, s);
    int resolves = f.cloud->resolves, m = ctlfix_mark(&f);
    for (int i = 0; i < 4; i++) {
        nw_clock_fake_advance(&f.clk, MIN);
        nw_driftmark_tick(d, s);
    }
    ck_assert_int_eq(f.cloud->resolves, resolves);
    ck_assert_int_eq(ctlfix_mark(&f), m);
    /* the verdict is 5 minutes old: judged again (the class resolved), with no change */
    nw_clock_fake_advance(&f.clk, MIN);
    nw_driftmark_tick(d, s);
    ck_assert_int_eq(f.cloud->resolves, resolves + 1);
    nw_kube_cache_snap_release(s);
    nw_driftmark_free(d);
    nw_prom_counters_free(&counters);
    ctlfix_free(&f);
}
END_TEST

START_TEST(repair_at_its_toleration)
{
    ctlfix_t f;
    ctlfix_init(&f);
    nw_repair_opts_t o = {1, 0, 0};
    nw_repair_t *r = nw_repair_new(&f.deps, &o);
    ctlfix_put_nodeclass(&f);
    ctlfix_put_nodepool(&f, NULL);
    for (int i = 0; i < 5; i++) {
        char n[16];
        snprintf(n, sizeof n, "n%d", i);
        ctlfix_node_pair(&f, n, NULL);
    }
    /* node-n0 NotReady since 11:31: due at 12:01 */
    cJSON *node = ctlfix_get(&f, "/api/v1/nodes/node-n0");
    cJSON *cond = cJSON_GetArrayItem(nw_json_get(nw_json_get(node, "status"), "conditions"), 0);
    cJSON_ReplaceItemInObject(cond, "status", cJSON_CreateString("False"));
    cJSON_ReplaceItemInObject(cond, "lastTransitionTime",
                              cJSON_CreateString("2026-11-30T11:31:00Z"));
    char *txt = cJSON_PrintUnformatted(node);
    ctlfix_put(&f, NW_KUBE_NODES, txt, 1);
    free(txt);
    cJSON_Delete(node);
    int m = ctlfix_mark(&f);
    nw_kube_snap_t *s = snap(&f);
    for (int i = 0; i < 6; i++) {
        nw_repair_tick(r, s);
        nw_clock_fake_advance(&f.clk, 10 * SEC - (i == 5));
    }
    ck_assert_int_eq(ctlfix_mark(&f), m);
    nw_repair_tick(r, s);
    ck_assert_int_eq(ctlfix_mark(&f), m);
    nw_clock_fake_advance(&f.clk, 1);
    nw_repair_tick(r, s);
    ck_assert_int_eq(ctlfix_count(&f, m, "DELETE", "/nodeclaims/n0", NULL), 1);
    ck_assert_int_eq(ctlfix_count(&f, m, "DELETE", "/nodeclaims/", NULL), 1);
    nw_kube_cache_snap_release(s);
    nw_repair_free(r);
    ctlfix_free(&f);
}
END_TEST

static const char *PENDING_POD =
    "{\"metadata\":{\"name\":\"web\",\"namespace\":\"default\",\"uid\":\"uid-web\","
    "\"creationTimestamp\":\"2026-11-30T11:59:00Z\"},\"spec\":{\"containers\":[{\"name\":\"c\","
    "\"resources\":{\"requests\":{\"cpu\":\"1\",\"memory\":\"1Gi\"}}}]},\"status\":{\"phase\":"
    "\"Pending\",\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"False\",\"reason\":"
    "\"Unschedulable\"}]}}";

static int solves(nw_provisioning_t *p)
{
    nw_buf_t b;
    nw_buf_init(&b, 1 << 16);
    ck_assert_int_eq(nw_provisioning_metrics(p, &b), NW_OK);
    const char *v = strstr(b.data, "\nnodewarden_scaler_solves_total ");
    int n = v ? atoi(v + strlen("\nnodewarden_scaler_solves_total ")) : -1;
    nw_buf_cleanup(&b);
    return n;
}

START_TEST(provisioner_looks_again)
{
    ctlfix_t f;
    ctlfix_init(&f);
    nw_provisioning_opts_t o = {.batch_idle_ns = SEC, .batch_max_ns = 10 * SEC, .repack = 1};
    nw_provisioning_t *p = nw_provisioning_new(&f.deps, f.claims, &f.mem, &o);
    ctlfix_put(&f, NW_KUBE_PODS, PENDING_POD, 1); /* no NodePool: it stays pending */
    nw_kube_snap_t *s = snap(&f);
    nw_provisioning_tick(p, s); /* the window opens */
    nw_clock_fake_advance(&f.clk, SEC);
    nw_provisioning_tick(p, s); /* and closes: one pass */
    ck_assert_int_eq(solves(p), 1);
    int m = ctlfix_mark(&f);
    for (int i = 0; i < 8; i++) { /* the same snapshot: nothing new */
        nw_clock_fake_advance(&f.clk, SEC);
        nw_provisioning_tick(p, s);
    }
    ck_assert_int_eq(solves(p), 1);
    ck_assert_int_eq(ctlfix_mark(&f), m);
    /* 10 s after the last look, with no change: looked at again (window, then a pass) */
    nw_clock_fake_advance(&f.clk, SEC);
    nw_provisioning_tick(p, s);
    nw_clock_fake_advance(&f.clk, SEC);
    nw_provisioning_tick(p, s);
    ck_assert_int_eq(solves(p), 2);
    nw_kube_cache_snap_release(s);
    nw_provisioning_free(p);
    ctlfix_free(&f);
}
END_TEST

START_TEST(termination_goes_on)
{
    ctlfix_t f;
    ctlfix_init(&f);
    nw_termination_t *t = nw_termination_new(&f.deps);
    ctlfix_node_pair(&f, "a", NULL);
    fake_cloud_add(f.cloud, "i-a", "a", 60 * SEC);
    int m = ctlfix_mark(&f);
    nw_kube_snap_t *s = snap(&f);
    for (int i = 0; i < 3; i++) /* nothing being deleted */
        nw_termination_tick(t, s);
    nw_kube_cache_snap_release(s);
    ck_assert_int_eq(ctlfix_mark(&f), m);
    /* the NodeClaim is deleted: its Node goes, then its instance, tick after tick with the
     * cache showing each step only when the test copies it */
    ctlfix_put(&f, NW_KUBE_NODECLAIMS,
               "{\"metadata\":{\"name\":\"a\",\"uid\":\"uid-a\",\"deletionTimestamp\":"
               "\"2026-11-30T12:00:00Z\",\"finalizers\":[\"karpenter.sh/termination\"],"
               "\"labels\":{\"karpenter.sh/nodepool\":\"default\"}},\"spec\":{},\"status\":{"
               "\"providerID\":\"aws:///us-west-2a/i-a\"}}",
               1);
    s = snap(&f);
    nw_termination_tick(t, s);
    ck_assert_int_eq(ctlfix_count(&f, m, "DELETE", "/nodes/node-a", NULL), 1);
    nw_termination_tick(t, s); /* the Node is still there: asked again, as before */
    ck_assert_int_eq(ctlfix_count(&f, m, "DELETE", "/nodes/node-a", NULL), 2);
    nw_kube_cache_snap_release(s);
    ctlfix_del(&f, NW_KUBE_NODES, "", "node-a");
    s = snap(&f);
    nw_termination_tick(t, s); /* the instance: terminate */
    ck_assert_int_eq(f.cloud->terminates, 1);
    nw_clock_fake_advance(&f.clk, 6 * SEC); /* checked again every 5 s, with no change */
    nw_termination_tick(t, s);
    ck_assert_int_ge(f.cloud->state_checks, 2);
    nw_kube_cache_snap_release(s);
    nw_termination_free(t);
    ctlfix_free(&f);
}
END_TEST

Suite *nw_ticks_suite(void)
{
    Suite *s = suite_create("ticks");
    TCase *tc = tcase_create("ticks");
    tcase_add_test(tc, gate_quiet_and_deadlines);
    tcase_add_test(tc, gate_memo);
    tcase_add_test(tc, uidmap);
    tcase_add_test(tc, instindex);
    tcase_add_test(tc, expiry_at_its_time);
    tcase_add_test(tc, lifecycle_timers);
    tcase_add_test(tc, drift_recheck);
    tcase_add_test(tc, repair_at_its_toleration);
    tcase_add_test(tc, provisioner_looks_again);
    tcase_add_test(tc, termination_goes_on);
    suite_add_tcase(s, tc);
    return s;
}
