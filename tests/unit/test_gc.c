/* Unit tests for scaler/gc: which instances leak and which NodeClaims are orphans. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaler/controllers/gc.h"

Suite *nw_gc_suite(void);

#define S INT64_C(1000000000)
#define NOW (INT64_C(1800000000) * S)

static cJSON *js(const char *s)
{
    cJSON *o = cJSON_Parse(s);
    ck_assert_ptr_nonnull(o);
    return o;
}

static nw_kube_cache_t *cache_with(const char *nodeclaims, const char *nodes)
{
    nw_kube_cache_t *c = nw_kube_cache_new(NULL);
    ck_assert_int_eq(nw_kube_cache_replace(c, NW_KUBE_NODECLAIMS, js(nodeclaims)), NW_OK);
    ck_assert_int_eq(nw_kube_cache_replace(c, NW_KUBE_NODES, js(nodes)), NW_OK);
    for (int k = 0; k < NW_KUBE_KINDS; k++)
        if (k != NW_KUBE_NODECLAIMS && k != NW_KUBE_NODES)
            nw_kube_cache_mark_synced(c, (nw_kube_kind_t)k);
    return c;
}

static void add(nw_cloud_instances_t *l, const char *id, const char *state, int64_t age_s,
                const char *claim_tag)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 8;
        l->v = realloc(l->v, l->cap * sizeof *l->v);
    }
    nw_cloud_instance_t *i = &l->v[l->n++];
    memset(i, 0, sizeof *i);
    snprintf(i->id, sizeof i->id, "%s", id);
    snprintf(i->state, sizeof i->state, "%s", state);
    snprintf(i->zone, sizeof i->zone, "us-west-2a");
    snprintf(i->provider_id, sizeof i->provider_id, "aws:///us-west-2a/%s", id);
    i->launch_ns = age_s < 0 ? 0 : NOW - age_s * S;
    if (claim_tag)
        ck_assert(nw_cloud_instance_tag_add(i, "karpenter.sh/nodeclaim", claim_tag));
}

static int leaked(const nw_gc_plan_t *p, const char *id)
{
    for (size_t i = 0; i < p->nleaked; i++)
        if (strcmp(p->leaked[i].instance_id, id) == 0)
            return 1;
    return 0;
}

static int orphan(const nw_gc_plan_t *p, const char *name)
{
    for (size_t i = 0; i < p->norphans; i++)
        if (strcmp(p->orphans[i]->name, name) == 0)
            return 1;
    return 0;
}

#define REG "\"conditions\":[{\"type\":\"Registered\",\"status\":\"True\"}]"
#define NC(name, pid, status_extra, md_extra)                                                      \
    "{\"metadata\":{\"name\":\"" name "\",\"uid\":\"u\"" md_extra                                  \
    "},\"status\":{\"providerID\":\"" pid "\"" status_extra "}}"
#define NODE(name, pid, ready)                                                                     \
    "{\"metadata\":{\"name\":\"" name "\"},\"spec\":{\"providerID\":\"" pid "\"},"                 \
    "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"" ready "\"}]}}"

START_TEST(leaked_instances)
{
    nw_kube_cache_t *c =
        cache_with("[" NC("owned", "aws:///us-west-2a/i-00000001", ",\"conditions\":[]",
                          "") ","
                              "{\"metadata\":{\"name\":\"launching\"}}," NC(
                                  "dup", "aws:///us-west-2a/i-00000009", "", "") "]",
                   "[" NODE("leak-node", "aws:///us-west-2a/i-00000002", "True") "]");
    nw_kube_snap_t *s = nw_kube_cache_snapshot(c);
    nw_cloud_instances_t l = {0};
    add(&l, "i-00000001", "running", 600, "owned");     /* owned by providerID */
    add(&l, "i-00000002", "running", 600, NULL);        /* leaked, with a node */
    add(&l, "i-00000003", "running", 10, NULL);         /* too young */
    add(&l, "i-00000004", "shutting-down", 600, NULL);  /* already going */
    add(&l, "i-00000005", "running", -1, NULL);         /* launch time unknown */
    add(&l, "i-00000006", "running", 600, "mem-claim"); /* in flight by name */
    add(&l, "i-00000007", "running", 600, NULL);        /* in flight by providerID */
    add(&l, "i-00000008", "running", 600, "launching"); /* its claim has no providerID yet */
    add(&l, "i-0000000a", "running", 600, "dup");       /* its claim owns another instance */
    add(&l, "i-0000000b", "stopped", 600, NULL);        /* stopped and ownerless */
    add(&l, "i-0000000c", "terminated", 600, NULL);
    const char *names[] = {"mem-claim"};
    const char *ids[] = {"aws:///us-west-2b/i-00000007"};
    nw_gc_inflight_t f = {names, 1, ids, 1};
    nw_gc_plan_t p;
    ck_assert_int_eq(nw_gc_plan(s, &l, &f, NOW, 30 * S, &p), NW_OK);
    ck_assert_uint_eq(p.nleaked, 3);
    ck_assert(leaked(&p, "i-00000002"));
    ck_assert(leaked(&p, "i-0000000a"));
    ck_assert(leaked(&p, "i-0000000b"));
    ck_assert_str_eq(p.leaked[0].provider_id, "aws:///us-west-2a/i-00000002");
    ck_assert_ptr_nonnull(p.leaked[0].node);
    ck_assert_str_eq(p.leaked[0].node->name, "leak-node");
    ck_assert_ptr_null(p.leaked[1].node);
    nw_gc_plan_free(&p);
    /* without the in-flight list, those two are collected too; grace 0 takes the young one */
    ck_assert_int_eq(nw_gc_plan(s, &l, NULL, NOW, 0, &p), NW_OK);
    ck_assert(leaked(&p, "i-00000006"));
    ck_assert(leaked(&p, "i-00000007"));
    ck_assert(leaked(&p, "i-00000003"));
    ck_assert(!leaked(&p, "i-00000001"));
    ck_assert(!leaked(&p, "i-00000004"));
    ck_assert(!leaked(&p, "i-00000005"));
    ck_assert(!leaked(&p, "i-00000008"));
    ck_assert_uint_eq(p.norphans, 0); /* dup is not Registered */
    nw_gc_plan_free(&p);
    nw_cloud_instances_free(&l);
    nw_kube_cache_snap_release(s);
    nw_kube_cache_free(c);
}
END_TEST

START_TEST(orphaned_claims)
{
    nw_kube_cache_t *c = cache_with(
        "[" NC("gone-notready", "aws:///us-west-2a/i-00000001", "," REG, "") "," NC(
            "gone-ready", "aws:///us-west-2a/i-00000002", "," REG,
            "") "," NC("gone-nonode", "aws:///us-west-2a/i-00000003", "," REG,
                       "") "," NC("gone-unregistered", "aws:///us-west-2a/i-00000004", "",
                                  "") "," NC("gone-deleting", "aws:///us-west-2a/i-00000005",
                                             "," REG,
                                             ",\"deletionTimestamp\":\"2026-01-01T00:00:"
                                             "00Z\"") "," NC("present",
                                                             "aws:///us-west-2a/i-00000006",
                                                             "," REG,
                                                             "") "," NC("shutting",
                                                                        "aws:///us-west-2a/"
                                                                        "i-00000007",
                                                                        "," REG,
                                                                        "") "," NC("termina"
                                                                                   "ted",
                                                                                   "aws:///"
                                                                                   "us-"
                                                                                   "west-"
                                                                                   "2a/"
                                                                                   "i-"
                                                                                   "0000000"
                                                                                   "8",
                                                                                   "," REG,
                                                                                   "") ","
                                                                                       "{\""
                                                                                       "met"
                                                                                       "ada"
                                                                                       "ta"
                                                                                       "\":"
                                                                                       "{\""
                                                                                       "nam"
                                                                                       "e\""
                                                                                       ":\""
                                                                                       "no-"
                                                                                       "pid"
                                                                                       "\"}"
                                                                                       ",\""
                                                                                       "sta"
                                                                                       "tus"
                                                                                       "\":"
                                                                                       "{" REG "}}"
                                                                                       "]",
        "[" NODE("n1", "aws:///us-west-2a/i-00000001", "Unknown") "," NODE(
            "n2", "aws:///us-west-2a/i-00000002",
            "True") "," NODE("n6", "aws:///us-west-2a/i-00000006", "False") "]");
    nw_kube_snap_t *s = nw_kube_cache_snapshot(c);
    nw_cloud_instances_t l = {0};
    add(&l, "i-00000006", "running", 600, "present");
    add(&l, "i-00000007", "shutting-down", 600, "shutting");
    add(&l, "i-00000008", "terminated", 600, "terminated");
    nw_gc_plan_t p;
    ck_assert_int_eq(nw_gc_plan(s, &l, NULL, NOW, 30 * S, &p), NW_OK);
    ck_assert(orphan(&p, "gone-notready"));
    ck_assert(orphan(&p, "gone-nonode"));
    ck_assert(orphan(&p, "terminated"));
    ck_assert(!orphan(&p, "gone-ready"));
    ck_assert(!orphan(&p, "gone-unregistered"));
    ck_assert(!orphan(&p, "gone-deleting"));
    ck_assert(!orphan(&p, "present"));
    ck_assert(!orphan(&p, "shutting"));
    ck_assert(!orphan(&p, "no-pid"));
    ck_assert_uint_eq(p.norphans, 3);
    ck_assert_uint_eq(p.nleaked, 0);
    nw_gc_plan_free(&p);
    /* an empty cloud list with no claims: nothing */
    nw_cloud_instances_t none = {0};
    nw_kube_cache_t *c2 = cache_with("[]", "[]");
    nw_kube_snap_t *s2 = nw_kube_cache_snapshot(c2);
    ck_assert_int_eq(nw_gc_plan(s2, &none, NULL, NOW, 30 * S, &p), NW_OK);
    ck_assert_uint_eq(p.nleaked + p.norphans, 0);
    nw_gc_plan_free(&p);
    nw_kube_cache_snap_release(s2);
    nw_kube_cache_free(c2);
    nw_cloud_instances_free(&l);
    nw_kube_cache_snap_release(s);
    nw_kube_cache_free(c);
}
END_TEST

START_TEST(metrics_and_defaults)
{
    nw_gc_t *g = nw_gc_new(NULL, NULL, NULL);
    ck_assert_ptr_nonnull(g);
    nw_buf_t b;
    nw_buf_init(&b, 1 << 16);
    ck_assert_int_eq(nw_gc_metrics(g, &b), NW_OK);
    ck_assert_ptr_nonnull(strstr(nw_buf_str(&b), "nodewarden_gc_instances_terminated_total 0\n"));
    ck_assert_ptr_nonnull(strstr(nw_buf_str(&b), "nodewarden_gc_nodeclaims_deleted_total 0\n"));
    ck_assert_int_eq(nw_gc_metrics(NULL, &b), NW_OK);
    nw_buf_cleanup(&b);
    nw_gc_free(g);
}
END_TEST

Suite *nw_gc_suite(void)
{
    Suite *s = suite_create("gc");
    TCase *t = tcase_create("plan");
    tcase_add_test(t, leaked_instances);
    tcase_add_test(t, orphaned_claims);
    tcase_add_test(t, metrics_and_defaults);
    suite_add_tcase(s, t);
    return s;
}
