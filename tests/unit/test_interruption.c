/* Unit tests for scaler/interruption: the EventBridge parser (sample events in
 * tests/data/interruption/), the plan over a cache snapshot, the cordon taint. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "scaler/aws/intrevent.h"
#include "scaler/ctl/ctl.h"
#include "scaler/controllers/interruption.h"
#include "tests/unit/ctlfix.h"
#include "tests/unit/testutil.h"

Suite *nw_interruption_suite(void);

#define ID1 "i-0123456789abcdef0"
#define ID2 "i-0fedcba9876543210"
#define ID3 "i-0aaaaaaaaaaaaaaaa"

static nw_rc_t parse_file(const char *name, nw_interrupt_event_t *ev, nw_err_t *err)
{
    char path[256];
    snprintf(path, sizeof path, "tests/data/interruption/%s", name);
    size_t n;
    char *b = nw_test_read_file(path, &n);
    nw_rc_t rc = nw_intrevent_parse(b, n, ev, err);
    free(b);
    return rc;
}

static const struct {
    const char *file;
    nw_interrupt_kind_t kind;
    size_t nids;
} samples[] = {
    {"spot.json", NW_INTR_SPOT_INTERRUPTION, 1},
    {"rebalance.json", NW_INTR_REBALANCE, 1},
    {"scheduled.json", NW_INTR_SCHEDULED_CHANGE, 2},
    {"health-other.json", NW_INTR_NOOP, 0},
    {"stopping.json", NW_INTR_STOPPED, 1},
    {"terminated.json", NW_INTR_TERMINATED, 1},
    {"running.json", NW_INTR_NOOP, 0},
    {"capacity-reservation.json", NW_INTR_CAPACITY_RESERVATION, 1},
    {"unknown.json", NW_INTR_NOOP, 0},
};

START_TEST(sample_events)
{
    nw_interrupt_event_t ev;
    nw_err_t err = {0};
    ck_assert_msg(parse_file(samples[_i].file, &ev, &err) == NW_OK, "%s: %s", samples[_i].file,
                  err.msg);
    ck_assert_msg(ev.kind == samples[_i].kind, "%s: kind %s", samples[_i].file,
                  nw_interrupt_kind_name(ev.kind));
    ck_assert_uint_eq(ev.nids, samples[_i].nids);
    if (ev.nids)
        ck_assert_str_eq(ev.ids[0], ID1);
}
END_TEST

START_TEST(sample_details)
{
    nw_interrupt_event_t ev;
    ck_assert_int_eq(parse_file("spot.json", &ev, NULL), NW_OK);
    ck_assert_str_eq(ev.action, "terminate");
    ck_assert_str_eq(ev.source, "aws.ec2");
    ck_assert_str_eq(ev.id, "1e5527d7-bb36-4607-3370-4164db56a40e");
    int64_t t = 0;
    ck_assert_int_eq(nw_clock_time_parse("2026-11-30T07:00:00Z", &t), NW_OK);
    ck_assert_int_eq(ev.time_ns, t); /* the envelope's time */
    ck_assert_int_eq(parse_file("scheduled.json", &ev, NULL), NW_OK);
    ck_assert_str_eq(ev.ids[1], ID2);
    ck_assert_int_eq(parse_file("terminated.json", &ev, NULL), NW_OK);
    ck_assert_str_eq(ev.state, "terminated");
    ck_assert_int_eq(parse_file("stopping.json", &ev, NULL), NW_OK);
    ck_assert_str_eq(ev.state, "stopping");
    ck_assert_int_eq(nw_interrupt_kind_deletes(NW_INTR_SPOT_INTERRUPTION), 1);
    ck_assert_int_eq(nw_interrupt_kind_deletes(NW_INTR_REBALANCE), 0);
    ck_assert_int_eq(nw_interrupt_kind_deletes(NW_INTR_NOOP), 0);
    ck_assert_int_eq(nw_interrupt_kind_deletes(NW_INTR_TERMINATED), 1);
    ck_assert_str_eq(nw_interrupt_kind_name(NW_INTR_STOPPED), "instance_stopped");
}
END_TEST

static const struct {
    const char *body;
    nw_interrupt_kind_t kind; /* when ok */
    const char *path;         /* NULL: parses */
} inline_cases[] = {
    /* a version other than 0 and foreign sources are not ours */
    {"{\"version\":\"1\",\"source\":\"aws.ec2\",\"detail-type\":\"EC2 Spot Instance Interruption "
     "Warning\",\"detail\":{}}",
     NW_INTR_NOOP, NULL},
    {"{\"version\":\"0\",\"source\":\"my.app\",\"detail-type\":\"EC2 Spot Instance Interruption "
     "Warning\",\"detail\":{}}",
     NW_INTR_NOOP, NULL},
    {"{\"version\":\"0\",\"source\":\"aws.ec2\",\"detail-type\":\"EC2 Instance State-change "
     "Notification\",\"detail\":{\"instance-id\":\"i-01234567\",\"state\":\"shutting-down\"}}",
     NW_INTR_TERMINATED, NULL},
    {"{\"version\":\"0\",\"source\":\"aws.ec2\",\"detail-type\":\"EC2 Instance State-change "
     "Notification\",\"detail\":{\"instance-id\":\"i-01234567\",\"state\":\"stopped\"}}  \n",
     NW_INTR_STOPPED, NULL},
    {"{\"version\":\"0\",\"source\":\"aws.health\",\"detail-type\":\"AWS Health Event\","
     "\"detail\":{\"service\":\"EC2\",\"eventTypeCategory\":\"accountNotification\"}}",
     NW_INTR_NOOP, NULL},
    /* malformed */
    {"", 0, ""},
    {"not json", 0, ""},
    {"[1,2]", 0, ""},
    {"{\"version\":\"0\"} trailing", 0, ""},
    {"{\"version\":0,\"source\":\"aws.ec2\",\"detail-type\":\"x\"}", 0, "version"},
    {"{\"version\":\"0\",\"detail-type\":\"x\"}", 0, "source"},
    {"{\"version\":\"0\",\"source\":\"aws.ec2\"}", 0, "detail-type"},
    {"{\"version\":\"0\",\"source\":\"aws.ec2\",\"detail-type\":[]}", 0, "detail-type"},
    {"{\"version\":\"0\",\"source\":\"aws.ec2\",\"detail-type\":\"EC2 Spot Instance Interruption "
     "Warning\"}",
     0, "detail"},
    {"{\"version\":\"0\",\"source\":\"aws.ec2\",\"detail-type\":\"EC2 Spot Instance Interruption "
     "Warning\",\"detail\":{}}",
     0, "detail.instance-id"},
    {"{\"version\":\"0\",\"source\":\"aws.ec2\",\"detail-type\":\"EC2 Spot Instance Interruption "
     "Warning\",\"detail\":{\"instance-id\":\"i-XYZ\"}}",
     0, "detail.instance-id"},
    {"{\"version\":\"0\",\"source\":\"aws.ec2\",\"detail-type\":\"EC2 Spot Instance Interruption "
     "Warning\",\"detail\":{\"instance-id\":\"i-01234567\",\"instance-action\":5}}",
     0, "detail.instance-action"},
    {"{\"version\":\"0\",\"source\":\"aws.ec2\",\"detail-type\":\"EC2 Instance State-change "
     "Notification\",\"detail\":{\"instance-id\":\"i-01234567\"}}",
     0, "detail.state"},
    {"{\"version\":\"0\",\"source\":\"aws.health\",\"detail-type\":\"AWS Health Event\","
     "\"detail\":{\"service\":\"EC2\",\"eventTypeCategory\":\"scheduledChange\"}}",
     0, "detail.affectedEntities"},
    {"{\"version\":\"0\",\"source\":\"aws.health\",\"detail-type\":\"AWS Health Event\","
     "\"detail\":{\"service\":\"EC2\",\"eventTypeCategory\":\"scheduledChange\","
     "\"affectedEntities\":[{\"entityValue\":\"i-01234567\"},{\"x\":1}]}}",
     0, "detail.affectedEntities[1].entityValue"},
    {"{\"version\":\"0\",\"source\":\"aws.health\",\"detail-type\":\"AWS Health Event\","
     "\"detail\":{\"service\":\"EC2\",\"eventTypeCategory\":\"scheduledChange\","
     "\"affectedEntities\":[]}}",
     0, "detail.affectedEntities"},
};

START_TEST(inline_events)
{
    nw_interrupt_event_t ev;
    nw_err_t err = {0};
    const char *b = inline_cases[_i].body;
    nw_rc_t rc = nw_intrevent_parse(b, strlen(b), &ev, &err);
    if (!inline_cases[_i].path) {
        ck_assert_msg(rc == NW_OK, "case %d: %s", _i, err.msg);
        ck_assert_msg(ev.kind == inline_cases[_i].kind, "case %d: kind %s", _i,
                      nw_interrupt_kind_name(ev.kind));
    } else {
        ck_assert_msg(rc == NW_EPARSE, "case %d parsed", _i);
        ck_assert_msg(strcmp(err.path, inline_cases[_i].path) == 0, "case %d: path %s (%s)", _i,
                      err.path, err.msg);
        ck_assert(err.msg[0]);
        ck_assert_int_eq(ev.kind, NW_INTR_NOOP);
        ck_assert_uint_eq(ev.nids, 0);
    }
}
END_TEST

START_TEST(bad_id_file)
{
    nw_interrupt_event_t ev;
    nw_err_t err = {0};
    ck_assert_int_eq(parse_file("bad-id.json", &ev, &err), NW_EPARSE);
    ck_assert_str_eq(err.path, "detail.instance-id");
}
END_TEST

/* ---- the plan ---- */

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

#define NC(name, pid, extra)                                                                       \
    "{\"metadata\":{\"name\":\"" name "\",\"uid\":\"u-" name "\"" extra                            \
    ",\"labels\":{\"karpenter.sh/capacity-type\":\"spot\","                                        \
    "\"node.kubernetes.io/instance-type\":\"m5.large\","                                           \
    "\"topology.kubernetes.io/zone\":\"us-west-2a\"}},\"status\":{\"providerID\":\"" pid "\"}}"
#define NODE(name, pid, taints)                                                                    \
    "{\"metadata\":{\"name\":\"" name "\"},\"spec\":{\"providerID\":\"" pid "\"" taints "}}"

static nw_interrupt_event_t event_of(nw_interrupt_kind_t kind, const char *id1, const char *id2)
{
    nw_interrupt_event_t ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = kind;
    snprintf(ev.ids[ev.nids++], sizeof ev.ids[0], "%s", id1);
    if (id2)
        snprintf(ev.ids[ev.nids++], sizeof ev.ids[0], "%s", id2);
    return ev;
}

START_TEST(plan_spot)
{
    nw_kube_cache_t *c = cache_with(
        "[" NC("a", "aws:///us-west-2a/" ID1, "") "," NC("b", "aws:///us-west-2b/" ID2, "") "]",
        "[" NODE("node-a", "aws:///us-west-2a/" ID1, "") "]");
    nw_kube_snap_t *s = nw_kube_cache_snapshot(c);
    nw_interrupt_event_t ev = event_of(NW_INTR_SPOT_INTERRUPTION, ID1, "i-00000000");
    nw_interruption_action_t a[4];
    ck_assert_uint_eq(nw_interruption_plan(s, &ev, a, 4), 2);
    ck_assert_str_eq(a[0].instance_id, ID1);
    ck_assert_str_eq(a[0].nodeclaim->name, "a");
    ck_assert_str_eq(a[0].node->name, "node-a");
    ck_assert_int_eq(a[0].delete_claim, 1);
    ck_assert_int_eq(a[0].cordon, 1);
    ck_assert_int_eq(a[0].mark_ice, 1);
    ck_assert_str_eq(a[0].ice_ct, "spot");
    ck_assert_str_eq(a[0].ice_type, "m5.large");
    ck_assert_str_eq(a[0].ice_zone, "us-west-2a");
    ck_assert_str_eq(a[0].reason, "SpotInterrupted");
    ck_assert_str_eq(a[0].type, "Warning");
    /* an instance nobody owns: nothing to do */
    ck_assert_ptr_null(a[1].nodeclaim);
    ck_assert_int_eq(a[1].delete_claim, 0);
    ck_assert_int_eq(a[1].cordon, 0);
    ck_assert_ptr_null(a[1].reason);
    nw_kube_cache_snap_release(s);
    nw_kube_cache_free(c);
}
END_TEST

START_TEST(plan_kinds)
{
    nw_kube_cache_t *c = cache_with(
        "[" NC("a", "aws:///us-west-2a/" ID1, "") "," NC(
            "b", "aws:///us-west-2b/" ID2, ",\"deletionTimestamp\":\"2026-01-01T00:00:00Z\"") "]",
        "[" NODE(
            "node-a", "aws:///us-west-2a/" ID1,
            ",\"taints\":[{\"key\":\"karpenter.sh/disrupted\",\"effect\":\"NoSchedule\"}]") "]");
    nw_kube_snap_t *s = nw_kube_cache_snapshot(c);
    nw_interruption_action_t a[4];
    /* rebalance: an event only */
    nw_interrupt_event_t ev = event_of(NW_INTR_REBALANCE, ID1, NULL);
    ck_assert_uint_eq(nw_interruption_plan(s, &ev, a, 4), 1);
    ck_assert_int_eq(a[0].delete_claim, 0);
    ck_assert_int_eq(a[0].cordon, 0);
    ck_assert_int_eq(a[0].mark_ice, 0);
    ck_assert_str_eq(a[0].reason, "SpotRebalanceRecommendation");
    ck_assert_str_eq(a[0].type, "Normal");
    /* spot on an already tainted node: no second cordon; a deleting claim is not deleted again */
    ev = event_of(NW_INTR_SPOT_INTERRUPTION, ID1, ID2);
    ck_assert_uint_eq(nw_interruption_plan(s, &ev, a, 4), 2);
    ck_assert_int_eq(a[0].cordon, 0);
    ck_assert_int_eq(a[0].delete_claim, 1);
    ck_assert_str_eq(a[1].nodeclaim->name, "b");
    ck_assert_int_eq(a[1].delete_claim, 0);
    ck_assert_ptr_null(a[1].node);
    /* scheduled change, state changes, capacity reservation: delete without cordon or ICE */
    nw_interrupt_kind_t del[] = {NW_INTR_SCHEDULED_CHANGE, NW_INTR_STOPPED, NW_INTR_TERMINATED,
                                 NW_INTR_CAPACITY_RESERVATION};
    const char *reasons[] = {"Unhealthy", "InstanceStopping", "InstanceTerminating",
                             "CapacityReservationInterrupted"};
    for (int k = 0; k < 4; k++) {
        ev = event_of(del[k], ID1, NULL);
        ck_assert_uint_eq(nw_interruption_plan(s, &ev, a, 4), 1);
        ck_assert_int_eq(a[0].delete_claim, 1);
        ck_assert_int_eq(a[0].cordon, 0);
        ck_assert_int_eq(a[0].mark_ice, 0);
        ck_assert_str_eq(a[0].reason, reasons[k]);
    }
    /* noop: no actions; cap respected */
    ev = event_of(NW_INTR_NOOP, ID1, NULL);
    ck_assert_uint_eq(nw_interruption_plan(s, &ev, a, 4), 0);
    ev = event_of(NW_INTR_TERMINATED, ID1, ID2);
    ck_assert_uint_eq(nw_interruption_plan(s, &ev, a, 1), 1);
    ck_assert_str_eq(a[0].nodeclaim->name, "a");
    ck_assert_str_eq(nw_interruption_nodeclaim_for_instance(s, ID2)->name, "b");
    ck_assert_ptr_null(nw_interruption_nodeclaim_for_instance(s, "i-0123456789abcdef"));
    ck_assert_ptr_null(nw_interruption_node_for_instance(s, ID2));
    nw_kube_cache_snap_release(s);
    nw_kube_cache_free(c);
}
END_TEST

START_TEST(taint)
{
    cJSON *n = js("{\"metadata\":{\"name\":\"n\"}}");
    ck_assert_int_eq(nw_ctl_disrupted_taint(n, 1), 1);
    ck_assert_int_eq(nw_ctl_disrupted_taint(n, 1), 0);
    char *p = cJSON_PrintUnformatted(n);
    ck_assert_str_eq(p, "{\"metadata\":{\"name\":\"n\"},\"spec\":{\"taints\":[{\"key\":"
                        "\"karpenter.sh/disrupted\",\"effect\":\"NoSchedule\"}]}}");
    free(p);
    cJSON_Delete(n);
    /* a same-key taint with another effect is replaced by the NoSchedule one */
    n = js("{\"spec\":{\"taints\":[{\"key\":\"karpenter.sh/disrupted\",\"effect\":\"NoExecute\"},"
           "{\"key\":\"x\",\"effect\":\"NoSchedule\"}]}}");
    ck_assert_int_eq(nw_ctl_disrupted_taint(n, 1), 1);
    ck_assert_int_eq(
        cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(n, "spec"), "taints")), 2);
    p = cJSON_PrintUnformatted(n);
    ck_assert_ptr_null(strstr(p, "NoExecute"));
    free(p);
    /* removing drops every taint with the key, then the empty list */
    ck_assert_int_eq(nw_ctl_disrupted_taint(n, 0), 1);
    ck_assert_int_eq(nw_ctl_disrupted_taint(n, 0), 0);
    p = cJSON_PrintUnformatted(n);
    ck_assert_str_eq(p, "{\"spec\":{\"taints\":[{\"key\":\"x\",\"effect\":\"NoSchedule\"}]}}");
    free(p);
    cJSON_Delete(n);
}
END_TEST

/* ---- the thread, on the fake interruption source and the fake API ---- */

static int intr_done(fake_intr_t *q)
{
    return fake_intr_acked(q, "m-spot") && fake_intr_acked(q, "m-bad") &&
           fake_intr_acked(q, "m-rebalance") && fake_intr_deliveries(q, "m-sched") >= 3;
}

START_TEST(thread_acts_and_acks)
{
    ctlfix_t f;
    ctlfix_init(&f);
    ctlfix_put(&f, NW_KUBE_NODECLAIMS, NC("a", "aws:///us-west-2a/" ID1, ""), 1);
    ctlfix_put(&f, NW_KUBE_NODES, NODE("node-a", "aws:///us-west-2a/" ID1, ""), 1);
    ctlfix_put(&f, NW_KUBE_NODECLAIMS, NC("b", "aws:///us-west-2b/" ID2, ""), 1);
    ctlfix_put(&f, NW_KUBE_NODECLAIMS, NC("c", "aws:///us-west-2c/" ID3, ""), 1);
    f.api.forbid = "nodeclaims/c"; /* handling c fails: its message is not acknowledged */
    fake_intr_t q;
    fake_intr_init(&q);
    q.fail_receives = 1; /* the first receive fails; the thread backs off and goes on */
    nw_interrupt_event_t spot = event_of(NW_INTR_SPOT_INTERRUPTION, ID1, NULL),
                         reb = event_of(NW_INTR_REBALANCE, ID2, NULL),
                         sched = event_of(NW_INTR_SCHEDULED_CHANGE, ID3, NULL);
    fake_intr_push(&q, "m-spot", &spot);
    fake_intr_push(&q, "m-bad", NULL);
    fake_intr_push(&q, "m-rebalance", &reb);
    fake_intr_push(&q, "m-sched", &sched);
    nw_interruption_opts_t o = {.ice = f.cloud->ice, .source = &q.base};
    nw_interruption_t *h = NULL;
    nw_err_t err = {0};
    ck_assert_int_eq(nw_interruption_new(&f.deps, &o, &h, &err), NW_OK);
    ck_assert_int_eq(nw_interruption_start(h, &err), NW_OK);
    /* wait for the outcome (not a timing: the deadline only bounds a hang) */
    for (int i = 0; i < 2000 && !intr_done(&q); i++) {
        struct timespec ts = {0, 10000000L};
        nanosleep(&ts, NULL);
    }
    ck_assert_msg(intr_done(&q), "spot %d bad %d rebalance %d sched deliveries %d",
                  fake_intr_acked(&q, "m-spot"), fake_intr_acked(&q, "m-bad"),
                  fake_intr_acked(&q, "m-rebalance"), fake_intr_deliveries(&q, "m-sched"));
    nw_buf_t b;
    nw_buf_init(&b, 1 << 16);
    ck_assert_int_eq(nw_interruption_metrics(h, &b), NW_OK);
    nw_interruption_free(h);
    /* spot: the offering is unavailable, the node tainted, the NodeClaim deleted */
    ck_assert_int_eq(nw_ice_unavailable(f.cloud->ice, "spot", "m5.large", "us-west-2a",
                                        nw_clock_mono(f.deps.clock)),
                     1);
    ck_assert_int_ge(ctlfix_count(&f, 0, "PUT", "nodes/node-a", "karpenter.sh/disrupted"), 1);
    ck_assert_int_eq(ctlfix_count(&f, 0, "DELETE", "nodeclaims/a", NULL), 1);
    /* rebalance: nothing deleted; the scheduled change was tried (its third delivery
     * came after the second try was done) and stays queued */
    ck_assert_int_eq(ctlfix_count(&f, 0, "DELETE", "nodeclaims/b", NULL), 0);
    ck_assert_int_ge(ctlfix_count(&f, 0, "DELETE", "nodeclaims/c", NULL), 2);
    ck_assert(!fake_intr_acked(&q, "m-sched"));
    ck_assert_ptr_nonnull(strstr(
        b.data, "nodewarden_interruption_received_messages_total{kind=\"unparseable\"} 1\n"));
    ck_assert_ptr_nonnull(
        strstr(b.data, "nodewarden_interruption_errors_total{op=\"receive\"} 1\n"));
    nw_buf_cleanup(&b);
    fake_intr_destroy(&q);
    ctlfix_free(&f);
}
END_TEST

Suite *nw_interruption_suite(void)
{
    Suite *s = suite_create("interruption");
    TCase *t = tcase_create("parse");
    tcase_add_loop_test(t, sample_events, 0, (int)(sizeof samples / sizeof samples[0]));
    tcase_add_test(t, sample_details);
    tcase_add_loop_test(t, inline_events, 0, (int)(sizeof inline_cases / sizeof inline_cases[0]));
    tcase_add_test(t, bad_id_file);
    suite_add_tcase(s, t);
    t = tcase_create("plan");
    tcase_add_test(t, plan_spot);
    tcase_add_test(t, plan_kinds);
    tcase_add_test(t, taint);
    suite_add_tcase(s, t);
    t = tcase_create("thread");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, thread_acts_and_acks);
    suite_add_tcase(s, t);
    return s;
}
