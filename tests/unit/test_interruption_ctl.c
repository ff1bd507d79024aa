/* tests/unit/test_interruption_ctl.c — the interruption controller
 * (scaler/controllers/interruption.c) on its one round, nw_interruption_poll, called directly: the
 * fake interruption source of fakecloud.h (the stand-in for the SQS queue; messages are
 * EventBridge bodies parsed by scaler/aws/intrevent.c as the AWS source does, and
 * "deleted" means acknowledged), the in-memory Kubernetes API and cache (ctlfix.h), the
 * shared fake cloud's ICE cache and a fake clock. The parser, the plan and the thread are
 * test_interruption.c's.
 *   spot interruption  the Node is tainted karpenter.sh/disrupted:NoSchedule, the NodeClaim
 *                      deleted, the offering (spot, m5.large, us-west-2a) marked unavailable,
 *                      the message deleted
 *   rebalance          an Event only; the message deleted
 *   unknown instance   nothing written; the message deleted
 *   malformed          nothing written; counted as unparseable and deleted (a message that
 *                      cannot parse never will)
 *   a failed write     the message is kept (redelivered after the visibility timeout)
 *   not leading        nothing handled, nothing deleted
 */
#include <check.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctlfix.h"
#include "scaler/aws/intrevent.h"
#include "scaler/controllers/interruption.h"
#include "tests/unit/testutil.h"

Suite *nw_interruption_ctl_suite(void);

#define ID "0123456789abcdef0" /* the instance of tests/data/interruption/spot.json */
#define MAXMSG 8

/* ---- the fixture: ctlfix and the fake interruption source (fakecloud.h) ---- */

typedef struct {
    ctlfix_t f;
    fake_intr_t q;
    nw_interruption_t *h;
    int serial;
} ifx_t;

static void ifx_init(ifx_t *x)
{
    ctlfix_init(&x->f);
    fake_intr_init(&x->q);
    x->serial = 0;
    nw_interruption_opts_t o = {.ice = x->f.cloud->ice, .source = &x->q.base};
    nw_err_t err = {0};
    ck_assert_msg(nw_interruption_new(&x->f.deps, &o, &x->h, &err) == NW_OK, "%s", err.msg);
    ctlfix_put_nodeclass(&x->f);
    ctlfix_put_nodepool(&x->f, NULL);
    ctlfix_node_pair(&x->f, ID, NULL);
}

static void ifx_free(ifx_t *x)
{
    nw_interruption_free(x->h);
    fake_intr_destroy(&x->q);
    ctlfix_free(&x->f);
}

/* Queue a message with an EventBridge body as SQS delivers it (parsed as the AWS source
 * does; a body that does not parse is queued as such). Returns its id, "m-<n>". */
static const char *enqueue(ifx_t *x, const char *body)
{
    static char ids[MAXMSG][16];
    ck_assert_int_lt(x->serial, MAXMSG);
    char *id = ids[x->serial];
    snprintf(id, sizeof ids[0], "m-%d", x->serial++);
    nw_interrupt_event_t ev;
    nw_err_t err = {0};
    int ok = nw_intrevent_parse(body, strlen(body), &ev, &err) == NW_OK;
    fake_intr_push(&x->q, id, ok ? &ev : NULL);
    return id;
}

static const char *enqueue_file(ifx_t *x, const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "tests/data/interruption/%s", name);
    size_t n;
    char *b = nw_test_read_file(path, &n);
    const char *id = enqueue(x, b);
    free(b);
    return id;
}

static int deleted(ifx_t *x, const char *id)
{
    return fake_intr_acked(&x->q, id);
}

static int writes(ctlfix_t *f, int mark)
{
    return ctlfix_count(f, mark, "PUT ", NULL, NULL) +
           ctlfix_count(f, mark, "DELETE ", NULL, NULL) +
           ctlfix_count(f, mark, "PATCH ", "/nodes/", NULL) +
           ctlfix_count(f, mark, "PATCH ", "/nodeclaims/", NULL);
}

static int has_metric(ifx_t *x, const char *line)
{
    nw_buf_t b;
    nw_buf_init(&b, 1 << 20);
    ck_assert_int_eq(nw_interruption_metrics(x->h, &b), NW_OK);
    int hit = strstr(b.data, line) != NULL;
    if (!hit)
        fprintf(stderr, "no \"%s\" in\n%s", line, b.data);
    nw_buf_cleanup(&b);
    return hit;
}

/* the claim's capacity type becomes spot (the pair is on-demand) */
static void make_spot(ctlfix_t *f)
{
    cJSON *o = ctlfix_get(f, "/apis/karpenter.sh/v1/nodeclaims/" ID);
    ck_assert_ptr_nonnull(o);
    cJSON *labels =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "metadata"), "labels");
    cJSON_ReplaceItemInObjectCaseSensitive(labels, "karpenter.sh/capacity-type",
                                           cJSON_CreateString("spot"));
    char *txt = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    ctlfix_put(f, NW_KUBE_NODECLAIMS, txt, 1);
    free(txt);
}

START_TEST(spot_interruption_taints_deletes_and_marks_ice)
{
    ifx_t x;
    ifx_init(&x);
    make_spot(&x.f);
    enqueue_file(&x, "spot.json");
    int64_t now = nw_clock_mono(x.f.deps.clock);
    ck_assert(!nw_ice_unavailable(x.f.cloud->ice, "spot", "m5.large", "us-west-2a", now));
    int mark = ctlfix_mark(&x.f);
    ck_assert_int_eq(nw_interruption_poll(x.h), 1);
    /* the Node carries the disrupted taint */
    cJSON *n = ctlfix_get(&x.f, "/api/v1/nodes/node-" ID);
    ck_assert_ptr_nonnull(n);
    ck_assert(ctlfix_disrupted_taint(n));
    cJSON_Delete(n);
    /* the NodeClaim is deleted (by uid), the offering is unavailable */
    ck_assert_int_eq(
        ctlfix_count(&x.f, mark, "DELETE /apis/karpenter.sh/v1/nodeclaims/" ID, "uid-" ID, NULL),
        1);
    ck_assert(nw_ice_unavailable(x.f.cloud->ice, "spot", "m5.large", "us-west-2a", now));
    ck_assert(!nw_ice_unavailable(x.f.cloud->ice, "spot", "m5.large", "us-west-2b", now));
    ck_assert_int_ge(ctlfix_count(&x.f, mark, "POST", "/events", "SpotInterrupted"), 1);
    ck_assert_int_eq(ctlfix_count(&x.f, mark, "POST", "/events", "TerminatingOnInterruption"), 1);
    ck_assert_int_eq(deleted(&x, "m-0"), 1);
    ck_assert(
        has_metric(&x, "nodewarden_interruption_actions_total{action=\"delete_nodeclaim\"} 1"));
    ck_assert(has_metric(&x, "nodewarden_interruption_actions_total{action=\"cordon\"} 1"));
    ck_assert(
        has_metric(&x, "nodewarden_interruption_actions_total{action=\"mark_unavailable\"} 1"));
    /* nothing more in the queue: a second round does nothing */
    mark = ctlfix_mark(&x.f);
    ck_assert_int_eq(nw_interruption_poll(x.h), 0);
    ck_assert_int_eq(writes(&x.f, mark), 0);
    ifx_free(&x);
}
END_TEST

START_TEST(rebalance_is_an_event_only)
{
    ifx_t x;
    ifx_init(&x);
    enqueue_file(&x, "rebalance.json");
    int mark = ctlfix_mark(&x.f);
    ck_assert_int_eq(nw_interruption_poll(x.h), 1);
    ck_assert_int_eq(ctlfix_count(&x.f, mark, "POST", "/events", "SpotRebalanceRecommendation"),
                     2); /* on the NodeClaim and its Node */
    ck_assert_int_eq(writes(&x.f, mark), 0);
    ck_assert_int_eq(deleted(&x, "m-0"), 1);
    ifx_free(&x);
}
END_TEST

START_TEST(unknown_instance_is_ignored)
{
    ifx_t x;
    ifx_init(&x);
    enqueue(&x, "{\"version\":\"0\",\"id\":\"e1\",\"detail-type\":\"EC2 Spot Instance Interruption "
                "Warning\",\"source\":\"aws.ec2\",\"detail\":{\"instance-id\":"
                "\"i-0fedcba9876543210\",\"instance-action\":\"terminate\"}}");
    int mark = ctlfix_mark(&x.f);
    ck_assert_int_eq(nw_interruption_poll(x.h), 1);
    ck_assert_int_eq(writes(&x.f, mark), 0);
    ck_assert_int_eq(ctlfix_count(&x.f, mark, "POST", NULL, NULL), 0);
    ck_assert(!nw_ice_unavailable(x.f.cloud->ice, "spot", "m5.large", "us-west-2a",
                                  nw_clock_mono(x.f.deps.clock)));
    ck_assert_int_eq(deleted(&x, "m-0"), 1);
    ck_assert(
        has_metric(&x, "nodewarden_interruption_actions_total{action=\"delete_nodeclaim\"} 0"));
    ifx_free(&x);
}
END_TEST

START_TEST(malformed_message_is_rejected_and_deleted)
{
    ifx_t x;
    ifx_init(&x);
    enqueue(&x, "not json");
    enqueue(&x, "{\"version\":\"0\",\"source\":\"aws.ec2\",\"detail-type\":\"EC2 Spot Instance "
                "Interruption Warning\",\"detail\":{\"instance-id\":\"i-XYZ\"}}");
    int mark = ctlfix_mark(&x.f);
    ck_assert_int_eq(nw_interruption_poll(x.h), 2);
    ck_assert_int_eq(ctlfix_count(&x.f, mark, NULL, NULL, NULL), 0); /* no Kubernetes call */
    ck_assert_int_eq(deleted(&x, "m-0"), 1);
    ck_assert_int_eq(deleted(&x, "m-1"), 1);
    ck_assert(
        has_metric(&x, "nodewarden_interruption_received_messages_total{kind=\"unparseable\"} 2"));
    ck_assert(
        has_metric(&x, "nodewarden_interruption_deleted_messages_total{kind=\"unparseable\"} 2"));
    ifx_free(&x);
}
END_TEST

START_TEST(failed_write_keeps_the_message)
{
    ifx_t x;
    ifx_init(&x);
    x.f.api.forbid = "/nodeclaims/"; /* the NodeClaim delete answers 403 */
    enqueue_file(&x, "terminated.json");
    ck_assert_int_eq(nw_interruption_poll(x.h), 1);
    ck_assert_int_eq(deleted(&x, "m-0"), 0);
    ck_assert(has_metric(&x, "nodewarden_interruption_errors_total{op=\"handle\"} 1"));
    ifx_free(&x);
}
END_TEST

START_TEST(not_leading_handles_nothing)
{
    ifx_t x;
    ifx_init(&x);
    atomic_store(&x.f.deps.leading, 0);
    enqueue_file(&x, "spot.json");
    int mark = ctlfix_mark(&x.f);
    ck_assert_int_eq(nw_interruption_poll(x.h), 1);
    ck_assert_int_eq(ctlfix_count(&x.f, mark, NULL, NULL, NULL), 0);
    ck_assert_int_eq(deleted(&x, "m-0"), 0);
    ifx_free(&x);
}
END_TEST

Suite *nw_interruption_ctl_suite(void)
{
    Suite *s = suite_create("interruption_ctl");
    TCase *t = tcase_create("poll");
    tcase_set_timeout(t, 30);
    tcase_add_test(t, spot_interruption_taints_deletes_and_marks_ice);
    tcase_add_test(t, rebalance_is_an_event_only);
    tcase_add_test(t, unknown_instance_is_ignored);
    tcase_add_test(t, malformed_message_is_rejected_and_deleted);
    tcase_add_test(t, failed_write_keeps_the_message);
    tcase_add_test(t, not_leading_handles_nothing);
    suite_add_tcase(s, t);
    return s;
}
