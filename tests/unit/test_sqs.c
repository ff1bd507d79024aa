/* Unit tests for scaler/aws/sqs: response parsers on canned bodies, error
 * classification, and the client against a fake SQS endpoint (GetQueueUrl,
 * ReceiveMessage, DeleteMessage, errors, a long poll abandoned by the abort flag). */
#include <check.h>
#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scaler/aws/sqs.h"
#include "tests/unit/fakeapi.h"
#include "tests/unit/testutil.h"

Suite *nw_sqs_suite(void);

START_TEST(parse_receive)
{
    size_t n;
    char *b = nw_test_read_file("tests/data/interruption/receive.json", &n);
    nw_sqs_msgs_t m;
    nw_err_t err = {0};
    ck_assert_int_eq(nw_sqs_parse_receive(b, n, &m, &err), NW_OK);
    ck_assert_uint_eq(m.n, 2);
    ck_assert_str_eq(m.v[0].id, "6c7e4a1e-7b1a-4d9c-8f2a-1b2c3d4e5f60");
    ck_assert_str_eq(m.v[0].receipt, "AQEBrh1");
    ck_assert_ptr_nonnull(strstr(m.v[0].body, "Rebalance"));
    ck_assert_uint_eq(m.v[0].body_len, strlen(m.v[0].body));
    ck_assert_str_eq(m.v[1].body, "not json");
    nw_sqs_msgs_free(&m);
    free(b);
    ck_assert_int_eq(nw_sqs_parse_receive("{}", 2, &m, NULL), NW_OK);
    ck_assert_uint_eq(m.n, 0);
    ck_assert_int_eq(nw_sqs_parse_receive("{\"Messages\":[]}", 15, &m, NULL), NW_OK);
    ck_assert_uint_eq(m.n, 0);
}
END_TEST

static const struct {
    const char *body, *path;
} bad_receive[] = {
    {"", ""},
    {"[]", ""},
    {"{\"Messages\":{}}", "Messages"},
    {"{\"Messages\":[1]}", "Messages[0]"},
    {"{\"Messages\":[{\"ReceiptHandle\":\"r\",\"Body\":\"b\"}]}", "Messages[0].MessageId"},
    {"{\"Messages\":[{\"MessageId\":\"m\",\"Body\":\"b\"}]}", "Messages[0].ReceiptHandle"},
    {"{\"Messages\":[{\"MessageId\":\"m\",\"ReceiptHandle\":\"\",\"Body\":\"b\"}]}",
     "Messages[0].ReceiptHandle"},
    {"{\"Messages\":[{\"MessageId\":\"m\",\"ReceiptHandle\":\"r\",\"Body\":\"b\"},"
     "{\"MessageId\":\"m\",\"ReceiptHandle\":\"r\",\"Body\":7}]}",
     "Messages[1].Body"},
    {"{\"Messages\":[1,2,3,4,5,6,7,8,9,10,11]}", "Messages"},
    {"{} x", ""},
};

START_TEST(parse_receive_bad)
{
    nw_sqs_msgs_t m;
    nw_err_t err = {0};
    const char *b = bad_receive[_i].body;
    ck_assert_int_eq(nw_sqs_parse_receive(b, strlen(b), &m, &err), NW_EPARSE);
    ck_assert_msg(strcmp(err.path, bad_receive[_i].path) == 0, "case %d: path %s (%s)", _i,
                  err.path, err.msg);
    ck_assert(err.msg[0]);
    ck_assert_uint_eq(m.n, 0);
}
END_TEST

START_TEST(parse_url_and_errors)
{
    char url[128];
    nw_err_t err = {0};
    const char *ok = "{\"QueueUrl\":\"https://sqs.us-west-2.amazonaws.com/123456789012/q\"}";
    ck_assert_int_eq(nw_sqs_parse_queue_url(ok, strlen(ok), url, sizeof url, &err), NW_OK);
    ck_assert_str_eq(url, "https://sqs.us-west-2.amazonaws.com/123456789012/q");
    ck_assert_int_eq(nw_sqs_parse_queue_url("{}", 2, url, sizeof url, &err), NW_EPARSE);
    ck_assert_str_eq(err.path, "QueueUrl");
    nw_err_clear(&err);
    const char *ftp = "{\"QueueUrl\":\"ftp://x\"}";
    ck_assert_int_eq(nw_sqs_parse_queue_url(ftp, strlen(ftp), url, sizeof url, &err), NW_EPARSE);
    ck_assert_str_eq(err.path, "QueueUrl");

    nw_sqs_error_t ae;
    const char *e1 = "{\"__type\":\"com.amazonaws.sqs#QueueDoesNotExist\",\"message\":\"gone\"}";
    nw_sqs_parse_error(e1, strlen(e1), 400, &ae);
    ck_assert_str_eq(ae.code, "QueueDoesNotExist");
    ck_assert_str_eq(ae.message, "gone");
    ck_assert_int_eq(ae.cls, NW_SQS_NOTFOUND);
    const char *e2 = "{\"__type\":\"com.amazon.coral.service#AccessDeniedException\","
                     "\"Message\":\"no\"}";
    nw_sqs_parse_error(e2, strlen(e2), 400, &ae);
    ck_assert_str_eq(ae.code, "AccessDeniedException");
    ck_assert_str_eq(ae.message, "no");
    ck_assert_int_eq(ae.cls, NW_SQS_AUTH);
    nw_sqs_parse_error("<html>", 6, 503, &ae);
    ck_assert_str_eq(ae.code, "HTTP503");
    ck_assert_int_eq(ae.cls, NW_SQS_SERVER);
    nw_sqs_parse_error("{\"__type\":\"x#\"}", 15, 429, &ae);
    ck_assert_str_eq(ae.code, "HTTP429");
    ck_assert_int_eq(ae.cls, NW_SQS_THROTTLE);
    ck_assert_int_eq(nw_sqs_classify("ThrottlingException", 400), NW_SQS_THROTTLE);
    ck_assert_int_eq(nw_sqs_classify("ReceiptHandleIsInvalid", 400), NW_SQS_INVALID);
    ck_assert_int_eq(nw_sqs_classify("Whatever", 400), NW_SQS_OTHER);
    ck_assert_str_eq(nw_sqs_class_name(NW_SQS_NOTFOUND), "not-found");
}
END_TEST

/* ---- the client against a fake endpoint ---- */

typedef struct {
    _Atomic int urls, receives, deletes, hang;
    fake_srv_t *_Atomic srv;
    char last_body[4096];
    char last_auth[512];
    pthread_mutex_t mu;
} fake_sqs_t;

static void handler(void *ud, const fake_req_t *r, fake_conn_t *c)
{
    fake_sqs_t *f = ud;
    pthread_mutex_lock(&f->mu);
    snprintf(f->last_body, sizeof f->last_body, "%s", r->body ? r->body : "");
    snprintf(f->last_auth, sizeof f->last_auth, "%s", r->auth);
    pthread_mutex_unlock(&f->mu);
    const char *b = r->body ? r->body : "";
    if (strcmp(r->ctype, "application/x-amz-json-1.0") != 0 || strcmp(r->method, "POST") != 0) {
        fake_reply(c, 400, "", "{\"__type\":\"x#InvalidParameterValue\",\"message\":\"ctype\"}");
        return;
    }
    if (strstr(b, "\"QueueName\"")) {
        atomic_fetch_add(&f->urls, 1);
        if (strstr(b, "\"nope\""))
            fake_reply(c, 400, "",
                       "{\"__type\":\"com.amazonaws.sqs#QueueDoesNotExist\",\"message\":\"The "
                       "specified queue does not exist.\"}");
        else
            fake_reply(c, 200, "", "{\"QueueUrl\":\"http://127.0.0.1/123456789012/q\"}");
        return;
    }
    if (strstr(b, "\"MaxNumberOfMessages\"")) {
        int n = atomic_fetch_add(&f->receives, 1);
        if (atomic_load(&f->hang)) {
            for (int i = 0; i < 100 && !fake_srv_stopping(atomic_load(&f->srv)); i++)
                usleep(50000);
            fake_reply(c, 200, "", "{}");
            return;
        }
        if (n == 0)
            fake_reply(c, 200, "",
                       "{\"Messages\":[{\"MessageId\":\"m1\",\"ReceiptHandle\":\"rh-1\","
                       "\"Body\":\"{\\\"version\\\":\\\"0\\\"}\"}]}");
        else if (n == 1)
            fake_reply(c, 503, "", "{\"__type\":\"x#ServiceUnavailable\",\"message\":\"later\"}");
        else
            fake_reply(c, 200, "", "{}");
        return;
    }
    if (strstr(b, "\"ReceiptHandle\"")) {
        atomic_fetch_add(&f->deletes, 1);
        if (strstr(b, "\"bad\""))
            fake_reply(c, 400, "", "{\"__type\":\"com.amazonaws.sqs#ReceiptHandleIsInvalid\"}");
        else
            fake_reply(c, 200, "", "{}");
        return;
    }
    fake_reply(c, 400, "", "{}");
}

typedef struct {
    fake_sqs_t f;
    fake_srv_t *srv;
    nw_awscfg_t cfg;
    nw_creds_t *creds;
} rig_t;

static void rig_up(rig_t *r)
{
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->f.mu, NULL);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    setenv("AWS_ACCESS_KEY_ID", "AKIDTEST", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "secret", 1);
    setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
    r->srv = fake_srv_start(handler, &r->f);
    atomic_store(&r->f.srv, r->srv);
    snprintf(r->cfg.region, sizeof r->cfg.region, "us-west-2");
    snprintf(r->cfg.sqs, sizeof r->cfg.sqs, "http://127.0.0.1:%d/", fake_srv_port(r->srv));
    r->cfg.call_timeout_ms = 5000;
    ck_assert_int_eq(nw_creds_new(&r->cfg, NULL, &r->creds, NULL), NW_OK);
}

static void rig_down(rig_t *r)
{
    fake_srv_stop(r->srv);
    nw_creds_free(r->creds);
}

START_TEST(client_flow)
{
    rig_t r;
    rig_up(&r);
    nw_sqs_t *q;
    nw_err_t err = {0};
    ck_assert_int_eq(nw_sqs_new(&r.cfg, r.creds, NULL, "q", &q, &err), NW_OK);
    nw_sqs_msgs_t m;
    nw_sqs_error_t ae;
    ck_assert_int_eq(nw_sqs_receive(q, 10, 20, 0, &m, &ae, &err), NW_OK);
    ck_assert_int_eq(atomic_load(&r.f.urls), 1); /* resolved by name first */
    ck_assert_uint_eq(m.n, 1);
    ck_assert_str_eq(m.v[0].receipt, "rh-1");
    ck_assert_str_eq(m.v[0].body, "{\"version\":\"0\"}");
    ck_assert_ptr_nonnull(
        strstr(r.f.last_body, "\"QueueUrl\":\"http://127.0.0.1/123456789012/q\""));
    ck_assert_ptr_nonnull(strstr(r.f.last_body, "\"MaxNumberOfMessages\":10"));
    ck_assert_ptr_nonnull(strstr(r.f.last_body, "\"VisibilityTimeout\":20"));
    ck_assert_ptr_nonnull(strstr(r.f.last_body, "\"WaitTimeSeconds\":0"));
    ck_assert_ptr_nonnull(strstr(r.f.last_auth, "AWS4-HMAC-SHA256 Credential=AKIDTEST/"));
    ck_assert_ptr_nonnull(strstr(r.f.last_auth, "/us-west-2/sqs/aws4_request"));
    ck_assert_int_eq(nw_sqs_delete(q, m.v[0].receipt, &ae, &err), NW_OK);
    ck_assert_ptr_nonnull(strstr(r.f.last_body, "\"ReceiptHandle\":\"rh-1\""));
    nw_sqs_msgs_free(&m);
    /* a 503: typed error, the URL stays cached */
    ck_assert_int_eq(nw_sqs_receive(q, 10, 20, 0, &m, &ae, &err), NW_EAWS);
    ck_assert_int_eq(ae.cls, NW_SQS_SERVER);
    ck_assert_str_eq(ae.code, "ServiceUnavailable");
    ck_assert_int_eq(ae.status, 503);
    ck_assert_uint_eq(m.n, 0);
    nw_err_clear(&err);
    ck_assert_int_eq(nw_sqs_receive(q, 10, 20, 0, &m, &ae, &err), NW_OK);
    ck_assert_uint_eq(m.n, 0);
    ck_assert_int_eq(atomic_load(&r.f.urls), 1);
    /* a bad receipt */
    ck_assert_int_eq(nw_sqs_delete(q, "bad", &ae, &err), NW_EAWS);
    ck_assert_int_eq(ae.cls, NW_SQS_INVALID);
    ck_assert_str_eq(ae.code, "ReceiptHandleIsInvalid");
    /* argument checks */
    nw_err_clear(&err);
    ck_assert_int_eq(nw_sqs_receive(q, 11, 20, 0, &m, &ae, &err), NW_EINVAL);
    ck_assert_str_eq(err.path, "MaxNumberOfMessages");
    nw_err_clear(&err);
    ck_assert_int_eq(nw_sqs_receive(q, 10, 20, 21, &m, &ae, &err), NW_EINVAL);
    ck_assert_str_eq(err.path, "WaitTimeSeconds");
    ck_assert_int_eq(nw_sqs_request_count(q), 6); /* url, 3 receives, 2 deletes */
    nw_sqs_free(q);
    /* a missing queue */
    ck_assert_int_eq(nw_sqs_new(&r.cfg, r.creds, NULL, "nope", &q, &err), NW_OK);
    nw_err_clear(&err);
    ck_assert_int_eq(nw_sqs_receive(q, 10, 20, 0, &m, &ae, &err), NW_EAWS);
    ck_assert_int_eq(ae.cls, NW_SQS_NOTFOUND);
    ck_assert_str_eq(ae.code, "QueueDoesNotExist");
    nw_sqs_free(q);
    /* a URL is used as given, without GetQueueUrl */
    int before = atomic_load(&r.f.urls);
    ck_assert_int_eq(nw_sqs_new(&r.cfg, r.creds, NULL, "https://sqs.example/1/q", &q, &err), NW_OK);
    const char *url;
    ck_assert_int_eq(nw_sqs_queue_url(q, &url, &ae, &err), NW_OK);
    ck_assert_str_eq(url, "https://sqs.example/1/q");
    ck_assert_int_eq(atomic_load(&r.f.urls), before);
    nw_sqs_free(q);
    /* configuration errors */
    nw_err_clear(&err);
    ck_assert_int_eq(nw_sqs_new(&r.cfg, r.creds, NULL, "", &q, &err), NW_EINVAL);
    nw_awscfg_t no = r.cfg;
    no.sqs[0] = 0;
    nw_err_clear(&err);
    ck_assert_int_eq(nw_sqs_new(&no, r.creds, NULL, "q", &q, &err), NW_EINVAL);
    ck_assert_str_eq(err.path, "aws.endpoints.sqs");
    rig_down(&r);
}
END_TEST

typedef struct {
    atomic_int *flag;
} setter_t;

static void *set_later(void *arg)
{
    setter_t *s = arg;
    usleep(300000);
    atomic_store(s->flag, 1);
    return NULL;
}

START_TEST(client_abort)
{
    rig_t r;
    rig_up(&r);
    atomic_store(&r.f.hang, 1);
    nw_sqs_t *q;
    ck_assert_int_eq(nw_sqs_new(&r.cfg, r.creds, NULL, "http://127.0.0.1/1/q", &q, NULL), NW_OK);
    atomic_int stop = 0;
    nw_sqs_set_abort(q, &stop);
    setter_t st = {&stop};
    pthread_t t;
    pthread_create(&t, NULL, set_later, &st);
    nw_sqs_msgs_t m;
    nw_sqs_error_t ae;
    nw_err_t err = {0};
    /* the fake holds the poll for 5 s; the flag ends it early */
    ck_assert_int_eq(nw_sqs_receive(q, 10, 20, 20, &m, &ae, &err), NW_EIO);
    ck_assert_int_eq(ae.cls, NW_SQS_TRANSPORT);
    ck_assert_ptr_nonnull(strstr(err.msg, "aborted"));
    pthread_join(t, NULL);
    nw_sqs_free(q);
    rig_down(&r);
}
END_TEST

Suite *nw_sqs_suite(void)
{
    Suite *s = suite_create("sqs");
    TCase *t = tcase_create("parse");
    tcase_add_test(t, parse_receive);
    tcase_add_loop_test(t, parse_receive_bad, 0, (int)(sizeof bad_receive / sizeof bad_receive[0]));
    tcase_add_test(t, parse_url_and_errors);
    suite_add_tcase(s, t);
    t = tcase_create("client");
    tcase_set_timeout(t, 20);
    tcase_add_test(t, client_flow);
    tcase_add_test(t, client_abort);
    suite_add_tcase(s, t);
    return s;
}
