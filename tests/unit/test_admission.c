/* Unit tests for admission/review (AdmissionReview decode/dispatch/encode)
 * and server/metrics rendering. */
#include <check.h>
#include <cjson/cJSON.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admission/review.h"
#include "server/metrics.h"
#include "testutil.h"

Suite *nw_admission_suite(void);

#define G "test.nodewarden.io"

static nw_rc_t h_deny(const nw_admit_ctx_t *ctx, const nw_admit_req_t *req, nw_admit_result_t *res)
{
    (void)ctx;
    res->allowed = 0;
    res->code = 422;
    res->reason = strdup("Invalid");
    res->message = strdup("Deny.test.nodewarden.io \"x\" is invalid: spec.a: Required value");
    res->details = cJSON_CreateObject();
    cJSON_AddStringToObject(res->details, "name", req->name);
    return NW_OK;
}

static nw_rc_t h_deny_nocode(const nw_admit_ctx_t *ctx, const nw_admit_req_t *req,
                             nw_admit_result_t *res)
{
    (void)ctx, (void)req;
    res->allowed = 0;
    res->message = strdup("no");
    return NW_OK;
}

static nw_rc_t h_patch(const nw_admit_ctx_t *ctx, const nw_admit_req_t *req, nw_admit_result_t *res)
{
    (void)ctx, (void)req;
    res->patch = strdup("[{\"op\":\"add\",\"path\":\"/metadata/labels/karpenter.sh~1nodepool\","
                        "\"value\":\"a~b\"}]");
    nw_admit_warn(res, "line one\nline\ttwo");
    return NW_OK;
}

static nw_rc_t h_fail(const nw_admit_ctx_t *ctx, const nw_admit_req_t *req, nw_admit_result_t *res)
{
    (void)ctx, (void)req;
    res->message = strdup("leaked unless cleaned up");
    return NW_EINVAL;
}

static nw_rc_t h_badpatch(const nw_admit_ctx_t *ctx, const nw_admit_req_t *req,
                          nw_admit_result_t *res)
{
    (void)ctx, (void)req;
    res->patch = strdup("{\"op\":\"add\"}");
    return NW_OK;
}

static nw_rc_t h_emptypatch(const nw_admit_ctx_t *ctx, const nw_admit_req_t *req,
                            nw_admit_result_t *res)
{
    (void)ctx, (void)req;
    res->patch = strdup("[]");
    return NW_OK;
}

/* reports what it was given, as a warning */
static nw_rc_t h_echo(const nw_admit_ctx_t *ctx, const nw_admit_req_t *req, nw_admit_result_t *res)
{
    static const char *const ops[] = {"CREATE", "UPDATE", "DELETE", "CONNECT"};
    nw_admit_warn(res,
                  "op=%s group=%s version=%s kind=%s res=%s sub=%s name=%s ns=%s dry=%d "
                  "obj=%d old=%d self=%s",
                  ops[req->op], req->group, req->version, req->kind, req->resource,
                  req->subresource, req->name, req->namespace_, req->dry_run, req->object != NULL,
                  req->old_object != NULL, ctx->self_namespace);
    return NW_OK;
}

static const nw_admit_handler_t test_handlers[] = {
    {G, "Deny", NULL, h_deny},         {G, "DenyNoCode", NULL, h_deny_nocode},
    {G, "Patch", h_patch, h_patch},    {G, "Fail", h_fail, h_fail},
    {G, "BadPatch", h_badpatch, NULL}, {G, "EmptyPatch", h_emptypatch, NULL},
    {G, "Echo", h_echo, h_echo},       {NULL, NULL, NULL, NULL},
};

static const nw_admit_handler_t *test_lookup(const char *group, const char *kind)
{
    for (const nw_admit_handler_t *h = test_handlers; h->kind; h++)
        if (strcmp(h->group, group) == 0 && strcmp(h->kind, kind) == 0)
            return h;
    return NULL;
}

static const nw_admit_ctx_t ctx = {.gpu = NULL, .self_namespace = "nodewarden"};

static char *review(const char *kind, const char *op, const char *extra)
{
    char *s = NULL;
    if (asprintf(&s,
                 "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
                 "\"request\":{\"uid\":\"u-1\\\"q\",\"kind\":{\"group\":\"" G
                 "\",\"version\":\"v2\",\"kind\":\"%s\"},\"operation\":\"%s\"%s}}",
                 kind, op, extra) < 0)
        ck_abort();
    return s;
}

/* Run the path and parse the response body; returns the "response" object. */
static cJSON *run(const char *kind, const char *op, const char *extra, int mutate, int want_status,
                  cJSON **root)
{
    char *body = review(kind, op, extra);
    nw_review_out_t out;
    ck_assert_int_eq(nw_review_handle(&ctx, test_lookup, mutate, body, strlen(body), &out), NW_OK);
    ck_assert_msg(out.status == want_status, "status %d, want %d: %s", out.status, want_status,
                  out.body);
    ck_assert_uint_eq(strlen(out.body), out.body_len);
    *root = cJSON_Parse(out.body);
    ck_assert_ptr_nonnull(*root);
    nw_review_out_cleanup(&out);
    free(body);
    if (want_status != 200)
        return *root;
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(*root, "apiVersion")->valuestring,
                     "admission.k8s.io/v1");
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(*root, "kind")->valuestring,
                     "AdmissionReview");
    cJSON *resp = cJSON_GetObjectItemCaseSensitive(*root, "response");
    ck_assert_ptr_nonnull(resp);
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(resp, "uid")->valuestring, "u-1\"q");
    return resp;
}

static const char *OBJ = ",\"object\":{\"metadata\":{\"name\":\"x\"}}";

START_TEST(adm_allowed_untouched)
{
    cJSON *root;
    /* kind without handler */
    cJSON *r = run("Unknown", "CREATE", OBJ, 1, 200, &root);
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "allowed")));
    ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(r, "patch"));
    ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(r, "patchType"));
    ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(r, "status"));
    cJSON_Delete(root);
    /* handler table entry with no validate function */
    r = run("BadPatch", "CREATE", OBJ, 0, 200, &root);
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "allowed")));
    cJSON_Delete(root);
    /* empty patch array: no patch emitted */
    r = run("EmptyPatch", "CREATE", OBJ, 1, 200, &root);
    ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(r, "patchType"));
    cJSON_Delete(root);
}
END_TEST

START_TEST(adm_deny)
{
    cJSON *root;
    cJSON *r = run("Deny", "UPDATE", ",\"name\":\"x\",\"object\":{\"a\":1},\"oldObject\":{\"a\":0}",
                   0, 200, &root);
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(r, "allowed")));
    cJSON *st = cJSON_GetObjectItemCaseSensitive(r, "status");
    ck_assert_int_eq(cJSON_GetObjectItemCaseSensitive(st, "code")->valueint, 422);
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(st, "reason")->valuestring, "Invalid");
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(st, "status")->valuestring, "Failure");
    ck_assert_ptr_nonnull(
        strstr(cJSON_GetObjectItemCaseSensitive(st, "message")->valuestring, "spec.a: Required"));
    cJSON *d = cJSON_GetObjectItemCaseSensitive(st, "details");
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(d, "name")->valuestring, "x");
    cJSON_Delete(root);
    /* no code from the handler: 403, no reason field */
    r = run("DenyNoCode", "CREATE", OBJ, 0, 200, &root);
    st = cJSON_GetObjectItemCaseSensitive(r, "status");
    ck_assert_int_eq(cJSON_GetObjectItemCaseSensitive(st, "code")->valueint, 403);
    ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(st, "reason"));
    cJSON_Delete(root);
}
END_TEST

START_TEST(adm_patch)
{
    cJSON *root;
    cJSON *r = run("Patch", "CREATE", OBJ, 1, 200, &root);
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "allowed")));
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(r, "patchType")->valuestring, "JSONPatch");
    const char *b64 = cJSON_GetObjectItemCaseSensitive(r, "patch")->valuestring;
    ck_assert_ptr_null(strchr(b64, '\n'));
    unsigned char dec[512];
    int n = EVP_DecodeBlock(dec, (const unsigned char *)b64, (int)strlen(b64));
    ck_assert_int_gt(n, 0);
    while (n > 0 && dec[n - 1] == '\0') /* DecodeBlock keeps padding bytes */
        n--;
    dec[n] = '\0';
    ck_assert_str_eq((char *)dec,
                     "[{\"op\":\"add\",\"path\":\"/metadata/labels/karpenter.sh~1nodepool\","
                     "\"value\":\"a~b\"}]");
    cJSON *w = cJSON_GetObjectItemCaseSensitive(r, "warnings");
    ck_assert_int_eq(cJSON_GetArraySize(w), 1);
    ck_assert_str_eq(cJSON_GetArrayItem(w, 0)->valuestring, "line one line two");
    cJSON_Delete(root);
    /* the same handler on /validate: a validating response never carries a patch */
    r = run("Patch", "CREATE", OBJ, 0, 200, &root);
    ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(r, "patch"));
    ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(r, "patchType"));
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(r, "warnings")), 1);
    cJSON_Delete(root);
}
END_TEST

START_TEST(adm_handler_errors)
{
    cJSON *root;
    cJSON *r = run("Fail", "CREATE", OBJ, 0, 500, &root);
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(r, "kind")->valuestring, "Status");
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(r, "reason")->valuestring, "InternalError");
    ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(r, "response"));
    cJSON_Delete(root);
    r = run("BadPatch", "CREATE", OBJ, 1, 500, &root);
    ck_assert_ptr_nonnull(strstr(cJSON_GetObjectItemCaseSensitive(r, "message")->valuestring,
                                 "patch is not a JSON array"));
    cJSON_Delete(root);
}
END_TEST

START_TEST(adm_decode_fields)
{
    cJSON *root;
    cJSON *r = run("Echo", "UPDATE",
                   ",\"resource\":{\"resource\":\"echoes\"},\"subResource\":\"status\","
                   "\"name\":\"n1\",\"namespace\":\"ns1\",\"dryRun\":true,"
                   "\"object\":{},\"oldObject\":{}",
                   0, 200, &root);
    ck_assert_str_eq(
        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(r, "warnings"), 0)->valuestring,
        "op=UPDATE group=" G " version=v2 kind=Echo res=echoes sub=status name=n1 "
        "ns=ns1 dry=1 obj=1 old=1 self=nodewarden");
    cJSON_Delete(root);
    /* DELETE: object null, name absent */
    r = run("Echo", "DELETE", ",\"object\":null,\"oldObject\":{}", 1, 200, &root);
    ck_assert_str_eq(
        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(r, "warnings"), 0)->valuestring,
        "op=DELETE group=" G " version=v2 kind=Echo res= sub= name= ns= dry=0 "
        "obj=0 old=1 self=nodewarden");
    cJSON_Delete(root);
}
END_TEST

/* Data cases: tests/data/admission/cases.tsv (file, route, status, body substring), one
 * test per line. */
static const nw_test_cases_t *adm_cases;

START_TEST(adm_data_case)
{
    const nw_test_case_t *c = nw_test_case(adm_cases, _i);
    char *f[4];
    ck_assert_msg(nw_test_split_tabs(c->line, f, 4) == 4, "%s: want 4 tab-separated fields",
                  c->name);
    char path[256];
    snprintf(path, sizeof path, "tests/data/admission/%s", f[0]);
    size_t len;
    char *body = nw_test_read_file(path, &len);
    nw_review_out_t out;
    int mutate = strcmp(f[1], "mutate") == 0;
    ck_assert_msg(nw_review_handle(&ctx, test_lookup, mutate, body, len, &out) == NW_OK,
                  "%s: %s: handler failed", c->name, f[0]);
    ck_assert_msg(out.status == (int)strtol(f[2], NULL, 10), "%s: %s: status %d: %s", c->name, f[0],
                  out.status, out.body);
    ck_assert_msg(strstr(out.body, f[3]) != NULL, "%s: %s: body %s lacks %s", c->name, f[0],
                  out.body, f[3]);
    cJSON *j = cJSON_Parse(out.body);
    ck_assert_msg(j != NULL, "%s: %s: response is not JSON", c->name, f[0]);
    cJSON_Delete(j);
    nw_review_out_cleanup(&out);
    free(body);
}
END_TEST

/* The production table: a kind nobody handles is allowed untouched. */
START_TEST(adm_real_table)
{
    const char *b = "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
                    "\"request\":{\"uid\":\"z\",\"kind\":{\"group\":\"\",\"version\":\"v1\","
                    "\"kind\":\"ConfigMap\"},\"operation\":\"CREATE\",\"object\":{}}}";
    nw_review_out_t out;
    for (int m = 0; m < 2; m++) {
        ck_assert_int_eq(nw_review_handle(&ctx, NULL, m, b, strlen(b), &out), NW_OK);
        ck_assert_int_eq(out.status, 200);
        ck_assert_str_eq(out.body,
                         "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":"
                         "\"AdmissionReview\",\"response\":{\"uid\":\"z\",\"allowed\":true}}");
        ck_assert_int_eq(out.verdict, NW_SRV_VERDICT_ALLOWED);
        nw_review_out_cleanup(&out);
    }
}
END_TEST

/* Bodies that are not NUL-terminated and that contain NUL bytes. */
START_TEST(adm_raw_bytes)
{
    const char *b =
        "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
        "\"request\":{\"uid\":\"z\",\"kind\":{\"kind\":\"X\"},\"operation\":\"CONNECT\"}}";
    size_t n = strlen(b);
    char *exact = malloc(n);
    memcpy(exact, b, n);
    nw_review_out_t out;
    ck_assert_int_eq(nw_review_handle(&ctx, test_lookup, 0, exact, n, &out), NW_OK);
    ck_assert_int_eq(out.status, 200);
    nw_review_out_cleanup(&out);
    ck_assert_int_eq(nw_review_handle(&ctx, test_lookup, 0, exact, n - 1, &out), NW_OK);
    ck_assert_int_eq(out.status, 400);
    nw_review_out_cleanup(&out);
    free(exact);
    const char nul[] = "{\"a\":1}\0{}";
    ck_assert_int_eq(nw_review_handle(&ctx, test_lookup, 0, nul, sizeof nul - 1, &out), NW_OK);
    ck_assert_int_eq(out.status, 400);
    ck_assert_ptr_nonnull(strstr(out.body, "NUL byte"));
    nw_review_out_cleanup(&out);
}
END_TEST

/* Bytes that are not UTF-8 reach a message, a cause and its field through the real
 * NodePool rules: each comes back as \ufffd, and the whole body is valid UTF-8. */
START_TEST(adm_utf8_escaped)
{
    size_t len;
    char *body = nw_test_read_file("tests/data/admission/nul-taint-key.json", &len);
    char *at = strstr(body, "t\\u0000evil");
    ck_assert_ptr_nonnull(at);
    memcpy(at,
           "t\xff\xc3\x28"
           "eeeevil",
           11); /* same length: stray byte, bad 2-byte sequence */
    nw_review_out_t out;
    ck_assert_int_eq(nw_review_handle(&ctx, NULL, 0, body, len, &out), NW_OK);
    ck_assert_int_eq(out.status, 200);
    ck_assert_msg(strstr(out.body, "\"allowed\":false") != NULL, "%s", out.body);
    ck_assert_msg(strstr(out.body, "\"field\":\"spec.template.spec.taints[0].key\"") != NULL, "%s",
                  out.body);
    ck_assert_msg(strstr(out.body, "Invalid value: \\\"t\\ufffd\\ufffd(eeeevil\\\"") != NULL, "%s",
                  out.body);
    for (const char *p = out.body, *n; *p; p = n) {
        n = p + nw_buf_utf8_seq_len(p);
        ck_assert_msg(n != p, "byte %d at %zu is not UTF-8", (unsigned char)*p,
                      (size_t)(p - out.body));
    }
    nw_review_out_cleanup(&out);
    free(body);
}
END_TEST

/* The review's time budget: once this thread's deadline has passed the answer is 504
 * Timeout, never a verdict made on part of the object; a deadline ahead changes nothing. */
START_TEST(adm_deadline)
{
    size_t len;
    char *body = nw_test_read_file("tests/data/admission/nodepool-create.json", &len);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    nw_review_out_t out;
    for (int m = 0; m < 2; m++) {
        nw_admit_deadline_set(now - 1);
        ck_assert_int_eq(nw_review_handle(&ctx, NULL, m, body, len, &out), NW_OK);
        ck_assert_int_eq(out.status, 504);
        ck_assert_int_eq(out.verdict, NW_SRV_VERDICT_ERROR);
        ck_assert_msg(strstr(out.body, "\"reason\":\"Timeout\"") &&
                          strstr(out.body, "?timeout= or webhook.requestTimeout"),
                      "%s", out.body);
        nw_review_out_cleanup(&out);
        nw_admit_deadline_set(now + (int64_t)3600 * 1000000000);
        ck_assert_int_eq(nw_review_handle(&ctx, NULL, m, body, len, &out), NW_OK);
        ck_assert_int_eq(out.status, 200);
        nw_review_out_cleanup(&out);
    }
    nw_admit_deadline_set(0);
    ck_assert(!nw_admit_deadline_passed());
    free(body);
}
END_TEST

START_TEST(metrics_render)
{
    nw_metrics_t m;
    nw_server_metrics_init(&m);
    nw_server_metrics_admission(&m, NW_ROUTE_VALIDATE, "NodePool", NW_SRV_VERDICT_DENIED, 3000000);
    nw_server_metrics_admission(&m, NW_ROUTE_MUTATE, "Whatever", NW_SRV_VERDICT_PATCHED, 50000);
    nw_server_metrics_http(&m, NW_ROUTE_OTHER, 404);
    nw_server_metrics_http(&m, NW_ROUTE_VALIDATE, 418);
    atomic_store(&m.cert_reloads, 2);
    nw_buf_t b;
    nw_buf_init(&b, 1 << 20);
    ck_assert_int_eq(nw_server_metrics_render(&m, &b), NW_OK);
    const char *s = nw_buf_str(&b);
    ck_assert_ptr_nonnull(strstr(s, "nodewarden_admission_requests_total{route=\"validate\","
                                    "kind=\"NodePool\",verdict=\"denied\"} 1\n"));
    ck_assert_ptr_nonnull(strstr(s, "nodewarden_admission_requests_total{route=\"mutate\","
                                    "kind=\"other\",verdict=\"patched\"} 1\n"));
    /* 3 ms falls in le=0.005, not le=0.0025 */
    ck_assert_ptr_nonnull(strstr(
        s, "nodewarden_admission_duration_seconds_bucket{route=\"validate\",le=\"0.0025\"} 0\n"));
    ck_assert_ptr_nonnull(strstr(
        s, "nodewarden_admission_duration_seconds_bucket{route=\"validate\",le=\"0.005\"} 1\n"));
    ck_assert_ptr_nonnull(strstr(
        s, "nodewarden_admission_duration_seconds_bucket{route=\"validate\",le=\"+Inf\"} 1\n"));
    ck_assert_ptr_nonnull(
        strstr(s, "nodewarden_admission_duration_seconds_count{route=\"mutate\"} 1\n"));
    ck_assert_ptr_nonnull(
        strstr(s, "nodewarden_http_responses_total{route=\"other\",code=\"404\"} 1\n"));
    ck_assert_ptr_nonnull(
        strstr(s, "nodewarden_http_responses_total{route=\"validate\",code=\"other\"} 1\n"));
    ck_assert_ptr_nonnull(strstr(s, "nodewarden_cert_reloads_total 2\n"));
    ck_assert_ptr_nonnull(strstr(s, "# TYPE nodewarden_admission_duration_seconds histogram\n"));
    nw_buf_cleanup(&b);
}
END_TEST

Suite *nw_admission_suite(void)
{
    Suite *s = suite_create("admission");
    TCase *tc = tcase_create("admission");
    tcase_add_test(tc, adm_allowed_untouched);
    tcase_add_test(tc, adm_deny);
    tcase_add_test(tc, adm_patch);
    tcase_add_test(tc, adm_handler_errors);
    tcase_add_test(tc, adm_decode_fields);
    adm_cases = nw_test_cases_lines("tests/data/admission/cases.tsv", 20);
    nw_test_add_cases(tc, adm_data_case, adm_cases);
    tcase_add_test(tc, adm_real_table);
    tcase_add_test(tc, adm_raw_bytes);
    tcase_add_test(tc, adm_utf8_escaped);
    tcase_add_test(tc, adm_deadline);
    tcase_add_test(tc, metrics_render);
    suite_add_tcase(s, tc);
    return s;
}
