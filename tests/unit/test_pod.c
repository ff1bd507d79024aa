/* Unit tests for api/pod (the typed pod record) and common/jsonintern (shared values). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/pod.h"
#include "common/json.h"
#include "common/jsonintern.h"

Suite *nw_pod_suite(void);

/* A Deployment's pod as an API server sends it: managedFields, env, probes, the projected
 * service-account volume with a per-pod name, container statuses. */
static const char *const FULL_POD =
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"web-5d9-%s\","
    "\"namespace\":\"team\",\"uid\":\"uid-%s\",\"resourceVersion\":\"%s\","
    "\"creationTimestamp\":\"2026-12-01T10:00:00Z\",\"labels\":{\"app\":\"web\","
    "\"pod-template-hash\":\"5d9\"},\"annotations\":{\"karpenter.sh/do-not-disrupt\":\"true\","
    "\"kubectl.kubernetes.io/last-applied-configuration\":\"{big}\"},\"ownerReferences\":[{"
    "\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"web-5d9\",\"uid\":\"rs\","
    "\"controller\":true}],\"managedFields\":[{\"manager\":\"kubelet\",\"fieldsV1\":{}}]},"
    "\"spec\":{\"nodeName\":\"%s\",\"priority\":1000,\"terminationGracePeriodSeconds\":30,"
    "\"tolerations\":[{\"key\":\"a\",\"operator\":\"Exists\"}],\"volumes\":[{\"name\":"
    "\"kube-api-access-%s\",\"projected\":{}},{\"name\":\"data\",\"persistentVolumeClaim\":{"
    "\"claimName\":\"data\"}}],\"containers\":[{\"name\":\"web\",\"image\":\"web:1\",\"env\":[{"
    "\"name\":\"A\",\"value\":\"b\"}],\"resources\":{\"requests\":{\"cpu\":\"250m\"}},\"ports\":["
    "{\"containerPort\":80},{\"containerPort\":9090,\"hostPort\":9090}],\"livenessProbe\":{}}]},"
    "\"status\":{\"phase\":\"%s\",\"startTime\":\"2026-12-01T10:00:02Z\",\"conditions\":[{\"type\":"
    "\"Ready\",\"status\":\"True\",\"lastTransitionTime\":\"2026-12-01T10:00:05Z\"},{\"type\":"
    "\"PodScheduled\",\"status\":\"%s\",\"reason\":\"%s\"}],\"containerStatuses\":[{\"name\":"
    "\"web\",\"imageID\":\"sha\"}]}}";

static cJSON *full_pod(const char *suffix, const char *rv, const char *node, const char *phase,
                       const char *sched, const char *reason)
{
    char buf[4096];
    snprintf(buf, sizeof buf, FULL_POD, suffix, suffix, rv, node, suffix, phase, sched, reason);
    cJSON *j = cJSON_Parse(buf);
    ck_assert_ptr_nonnull(j);
    return j;
}

static nw_pod_t *decode(nw_jsonintern_t *in, cJSON *j)
{
    nw_pod_t *p = NULL;
    nw_err_t err = {0};
    ck_assert_int_eq(nw_pod_decode(j, in, &p, &err), NW_OK);
    cJSON_Delete(j);
    return p;
}

START_TEST(decode_keeps_what_readers_read)
{
    nw_jsonintern_t *in = nw_jsonintern_new();
    nw_pod_t *p = decode(in, full_pod("a", "7", "node-1", "Running", "True", ""));
    ck_assert_str_eq(p->key, "team/web-5d9-a");
    ck_assert_str_eq(p->uid, "uid-a");
    ck_assert_str_eq(p->rv, "7");
    ck_assert_str_eq(p->node_name, "node-1");
    ck_assert_int_eq(p->phase, NW_POD_RUNNING);
    ck_assert_str_eq(p->phase_name, "Running");
    ck_assert(p->created > 0 && p->started > p->created);
    ck_assert(!p->terminating);
    ck_assert(p->has_priority);
    ck_assert_int_eq(p->priority, 1000);
    ck_assert(!p->pending);
    ck_assert_str_eq(nw_pod_label(p, "app"), "web");
    ck_assert_str_eq(nw_pod_annotation(p, "karpenter.sh/do-not-disrupt"), "true");
    ck_assert_ptr_null(nw_pod_annotation(p, "kubectl.kubernetes.io/last-applied-configuration"));
    ck_assert(nw_pod_owned_by(p, "ReplicaSet"));
    ck_assert(nw_pod_owned_by_api(p, "apps/v1", "ReplicaSet"));
    ck_assert(!nw_pod_owned_by(p, "DaemonSet"));
    ck_assert_str_eq(nw_json_str(nw_pod_controller(p), "name"), "web-5d9");
    const nw_pod_cond_t *r = nw_pod_condition(p, "Ready");
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->status, NW_POD_COND_TRUE);
    ck_assert(r->since > p->started);
    ck_assert_ptr_null(nw_pod_condition(p, "Initialized"));
    /* the spec keeps scheduling inputs and drops the rest */
    const cJSON *c0 = cJSON_GetArrayItem(nw_json_get(p->spec, "containers"), 0);
    ck_assert_str_eq(nw_json_str_at(c0, "resources.requests.cpu"), "250m");
    ck_assert_ptr_null(nw_json_get(c0, "env"));
    ck_assert_ptr_null(nw_json_get(c0, "image"));
    ck_assert_ptr_null(nw_json_get(c0, "livenessProbe"));
    ck_assert_int_eq(cJSON_GetArraySize(nw_json_get(c0, "ports")), 1); /* the hostPort one */
    ck_assert_int_eq(cJSON_GetArraySize(nw_json_get(p->spec, "volumes")), 1);
    ck_assert_ptr_null(nw_json_get(p->spec, "nodeName"));
    ck_assert_ptr_nonnull(nw_json_get(p->spec, "tolerations"));
    ck_assert_int_eq((int)nw_json_get(p->spec, "terminationGracePeriodSeconds")->valuedouble, 30);
    nw_pod_free(p);
    ck_assert_uint_eq(nw_jsonintern_count(in), 0);
    nw_jsonintern_free(in);
}
END_TEST

START_TEST(replicas_share_their_parts)
{
    nw_jsonintern_t *in = nw_jsonintern_new();
    nw_pod_t *a = decode(in, full_pod("a", "1", "node-1", "Running", "True", ""));
    nw_pod_t *b = decode(in, full_pod("b", "2", "node-2", "Pending", "False", "Unschedulable"));
    ck_assert_ptr_eq(a->spec, b->spec);
    ck_assert_ptr_eq(a->labels, b->labels);
    ck_assert_ptr_eq(a->annotations, b->annotations);
    ck_assert_ptr_eq(a->owners, b->owners);
    ck_assert_uint_eq(nw_jsonintern_count(in), 4);
    ck_assert_uint_eq(nw_jsonintern_refs(in), 8);
    ck_assert_str_ne(a->key, b->key);
    nw_pod_free(a);
    ck_assert_uint_eq(nw_jsonintern_count(in), 4); /* b still holds them */
    ck_assert_str_eq(nw_pod_label(b, "app"), "web");
    nw_pod_free(b);
    ck_assert_uint_eq(nw_jsonintern_count(in), 0);
    ck_assert_uint_eq(nw_jsonintern_refs(in), 0);
    nw_jsonintern_free(in);
}
END_TEST

/* The phases, the usual condition types and reasons are one copy for every record; the name
 * is the key's tail; an unusual word is the record's own copy. */
START_TEST(records_share_common_words)
{
    nw_jsonintern_t *in = nw_jsonintern_new();
    nw_pod_t *a = decode(in, full_pod("a", "1", "", "Pending", "False", "Unschedulable"));
    nw_pod_t *b = decode(in, full_pod("b", "2", "", "Pending", "False", "Unschedulable"));
    nw_pod_t *c = decode(in, full_pod("c", "3", "", "Waiting", "False", "SchedulerError"));
    ck_assert_str_eq(a->name, "web-5d9-a");
    ck_assert_ptr_eq(a->name, a->key + strlen("team/"));
    ck_assert_ptr_eq(a->phase_name, b->phase_name);
    const nw_pod_cond_t *sa = nw_pod_condition(a, "PodScheduled"),
                        *sb = nw_pod_condition(b, "PodScheduled"),
                        *sc = nw_pod_condition(c, "PodScheduled");
    ck_assert_ptr_eq(sa->type, sb->type);
    ck_assert_ptr_eq(sa->reason, sb->reason);
    ck_assert_str_eq(sa->reason, "Unschedulable");
    ck_assert(a->pending && b->pending);
    /* not a shared word: copied, and read the same */
    ck_assert_str_eq(c->phase_name, "Waiting");
    ck_assert_int_eq(c->phase, NW_POD_PHASE_NONE);
    ck_assert_str_eq(sc->reason, "SchedulerError");
    ck_assert(!c->pending);
    ck_assert_str_eq(c->reason, "");
    nw_pod_free(a);
    nw_pod_free(b);
    nw_pod_free(c);
    nw_jsonintern_free(in);
}
END_TEST

START_TEST(pending_is_karpenters_predicate)
{
    nw_jsonintern_t *in = nw_jsonintern_new();
    struct {
        const char *node, *phase, *sched, *reason;
        bool pending;
    } cases[] = {
        {"", "Pending", "False", "Unschedulable", true},
        {"node-1", "Pending", "False", "Unschedulable", false}, /* bound */
        {"", "Pending", "False", "SchedulingGated", false},
        {"", "Pending", "True", "", false},
        {"", "Succeeded", "False", "Unschedulable", false},
        {"", "Failed", "False", "Unschedulable", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        nw_pod_t *p = decode(
            in, full_pod("x", "1", cases[i].node, cases[i].phase, cases[i].sched, cases[i].reason));
        ck_assert_msg(p->pending == cases[i].pending, "case %zu", i);
        ck_assert(nw_pod_is_pending(p) == cases[i].pending);
        nw_pod_free(p);
    }
    /* nominated and terminating pods are not provisionable */
    cJSON *j = full_pod("x", "1", "", "Pending", "False", "Unschedulable");
    nw_json_add_string(nw_json_get_mut(j, "status"), "nominatedNodeName", "n");
    nw_pod_t *p = decode(in, j);
    ck_assert(!p->pending);
    nw_pod_free(p);
    j = full_pod("x", "1", "", "Pending", "False", "Unschedulable");
    nw_json_add_string(nw_json_get_mut(j, "metadata"), "deletionTimestamp", "2026-12-01T11:00:00Z");
    p = decode(in, j);
    ck_assert(p->terminating && p->deleted > p->created);
    ck_assert(!p->pending);
    nw_pod_free(p);
    nw_jsonintern_free(in);
}
END_TEST

/* The scheduler mark follows the PodScheduled condition (a new message is a new attempt),
 * not the other fields a write may change (a nominatedNodeName, the resourceVersion). */
static void set_sched_message(cJSON *j, const char *msg)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, nw_json_get(nw_json_get(j, "status"), "conditions"))
    {
        if (strcmp(nw_json_str(c, "type"), "PodScheduled") == 0)
            nw_json_add_string((cJSON *)c, "message", msg);
    }
}

START_TEST(scheduled_mark_follows_the_scheduler)
{
    nw_jsonintern_t *in = nw_jsonintern_new();
    nw_pod_t *a = decode(in, full_pod("x", "1", "", "Pending", "False", "Unschedulable"));
    cJSON *j = full_pod("x", "2", "", "Pending", "False", "Unschedulable");
    nw_json_add_string(nw_json_get_mut(j, "status"), "nominatedNodeName", "n");
    nw_pod_t *b = decode(in, j);
    j = full_pod("x", "3", "", "Pending", "False", "Unschedulable");
    set_sched_message(j, "0/3 nodes are available: 3 Insufficient cpu.");
    nw_pod_t *c = decode(in, j);
    j = full_pod("x", "4", "", "Pending", "False", "Unschedulable");
    set_sched_message(j, "0/4 nodes are available: 4 Insufficient cpu.");
    nw_pod_t *d = decode(in, j);
    ck_assert_uint_ne(nw_pod_scheduled_mark(a), 0);
    ck_assert_uint_eq(nw_pod_scheduled_mark(a), nw_pod_scheduled_mark(b));
    ck_assert_uint_ne(nw_pod_scheduled_mark(a), nw_pod_scheduled_mark(c));
    ck_assert_uint_ne(nw_pod_scheduled_mark(c), nw_pod_scheduled_mark(d));
    nw_pod_free(a);
    nw_pod_free(b);
    nw_pod_free(c);
    nw_pod_free(d);
    nw_jsonintern_free(in);
}
END_TEST

START_TEST(bad_pods_are_refused_with_the_field)
{
    nw_jsonintern_t *in = nw_jsonintern_new();
    const char *bad[] = {"{}", "{\"metadata\":{}}", "{\"metadata\":{\"name\":\"\"}}", "[]"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cJSON *j = cJSON_Parse(bad[i]);
        nw_pod_t *p = (nw_pod_t *)1;
        nw_err_t err = {0};
        ck_assert_int_eq(nw_pod_decode(j, in, &p, &err), NW_EINVAL);
        ck_assert_ptr_null(p);
        ck_assert_str_eq(err.path, "metadata.name");
        cJSON_Delete(j);
    }
    /* a minimal pod: every string is "", every shared part an empty object or array */
    nw_pod_t *p = decode(in, cJSON_Parse("{\"metadata\":{\"name\":\"solo\"}}"));
    ck_assert_str_eq(p->key, "solo");
    ck_assert_str_eq(p->ns, "");
    ck_assert_str_eq(p->node_name, "");
    ck_assert_int_eq(p->phase, NW_POD_PHASE_NONE);
    ck_assert(cJSON_IsObject(p->labels) && cJSON_IsArray(p->owners) && cJSON_IsObject(p->spec));
    ck_assert_ptr_null(nw_pod_controller(p));
    nw_pod_free(p);
    nw_jsonintern_free(in);
}
END_TEST

START_TEST(to_json_round_trips)
{
    nw_jsonintern_t *in = nw_jsonintern_new();
    nw_pod_t *p = decode(in, full_pod("a", "7", "node-1", "Pending", "False", "Unschedulable"));
    cJSON *j = nw_pod_to_json(p);
    nw_pod_t *q = decode(in, j);
    ck_assert_str_eq(q->key, p->key);
    ck_assert_str_eq(q->node_name, "node-1");
    ck_assert_int_eq(q->created, p->created);
    ck_assert_int_eq(q->started, p->started);
    ck_assert_int_eq(q->nconds, 2);
    ck_assert_int_eq(q->conds[1].status, NW_POD_COND_FALSE);
    ck_assert_str_eq(q->conds[1].reason, "Unschedulable");
    ck_assert_ptr_eq(q->spec, p->spec); /* the same spec, shared */
    nw_pod_free(q);
    nw_pod_free(p);
    nw_jsonintern_free(in);
}
END_TEST

START_TEST(intern_compares_values_not_order)
{
    nw_jsonintern_t *t = nw_jsonintern_new();
    nw_jsonintern_ref_t *a = nw_jsonintern_take(t, cJSON_Parse("{\"x\":1,\"y\":[1,2]}"));
    nw_jsonintern_ref_t *b = nw_jsonintern_take(t, cJSON_Parse("{\"y\":[1,2],\"x\":1}"));
    nw_jsonintern_ref_t *c = nw_jsonintern_take(t, cJSON_Parse("{\"x\":1,\"y\":[2,1]}"));
    ck_assert_ptr_eq(a, b);
    ck_assert_ptr_ne(a, c);
    ck_assert_uint_eq(nw_jsonintern_hash(nw_jsonintern_json(a)),
                      nw_jsonintern_hash(nw_jsonintern_json(b)));
    ck_assert_uint_eq(nw_jsonintern_count(t), 2);
    ck_assert_ptr_null(nw_jsonintern_take(t, NULL));
    nw_jsonintern_ref_t *h = nw_jsonintern_hold(t, c);
    nw_jsonintern_release(t, c);
    ck_assert_uint_eq(nw_jsonintern_count(t), 2);
    nw_jsonintern_release(t, h);
    nw_jsonintern_release(t, a);
    nw_jsonintern_release(t, b);
    nw_jsonintern_release(t, NULL);
    ck_assert_uint_eq(nw_jsonintern_count(t), 0);
    /* many distinct values: the table grows and finds each again */
    nw_jsonintern_ref_t *refs[2000];
    for (int i = 0; i < 2000; i++) {
        cJSON *v = cJSON_CreateObject();
        cJSON_AddNumberToObject(v, "i", i);
        refs[i] = nw_jsonintern_take(t, v);
    }
    for (int i = 0; i < 2000; i++) {
        cJSON *v = cJSON_CreateObject();
        cJSON_AddNumberToObject(v, "i", i);
        ck_assert_ptr_eq(nw_jsonintern_take(t, v), refs[i]);
        nw_jsonintern_release(t, refs[i]);
        nw_jsonintern_release(t, refs[i]);
    }
    ck_assert_uint_eq(nw_jsonintern_count(t), 0);
    nw_jsonintern_free(t);
}
END_TEST

Suite *nw_pod_suite(void)
{
    Suite *s = suite_create("pod");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, decode_keeps_what_readers_read);
    tcase_add_test(tc, replicas_share_their_parts);
    tcase_add_test(tc, records_share_common_words);
    tcase_add_test(tc, pending_is_karpenters_predicate);
    tcase_add_test(tc, scheduled_mark_follows_the_scheduler);
    tcase_add_test(tc, bad_pods_are_refused_with_the_field);
    tcase_add_test(tc, to_json_round_trips);
    tcase_add_test(tc, intern_compares_values_not_order);
    suite_add_tcase(s, tc);
    return s;
}
