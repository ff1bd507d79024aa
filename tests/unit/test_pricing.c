/* Unit tests for scaler/aws/pricing (the Price List Query API's GetProducts): the page
 * parser on canned bodies, the endpoint's region by the cluster's region, and the client
 * against a fake endpoint (both of Karpenter's queries, paging, errors). */
#include <check.h>
#include <curl/curl.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "scaler/aws/awscfg.h"
#include "scaler/aws/pricing.h"
#include "tests/unit/fakeapi.h"
#include "tests/unit/testutil.h"

Suite *nw_pricing_suite(void);

/* one product as the API sends it: a JSON document in a string */
#define PRODUCT(type, usd)                                                                         \
    "\"{\\\"product\\\":{\\\"productFamily\\\":\\\"Compute Instance\\\",\\\"attributes\\\":{"      \
    "\\\"instanceType\\\":\\\"" type "\\\",\\\"operatingSystem\\\":\\\"Linux\\\"}},"               \
    "\\\"terms\\\":{\\\"OnDemand\\\":{\\\"X.JRTCKXETXF\\\":{\\\"priceDimensions\\\":{"             \
    "\\\"X.JRTCKXETXF.6YS6EN2CT7\\\":{\\\"unit\\\":\\\"Hrs\\\",\\\"pricePerUnit\\\":{"             \
    "\\\"USD\\\":\\\"" usd "\\\"}}}}}}}\""

START_TEST(parse_page)
{
    static const char page[] =
        "{\"FormatVersion\":\"aws_v1\",\"NextToken\":\"tok-2\",\"PriceList\":[" PRODUCT(
            "m6i.large", "0.0960000000") "," PRODUCT("m7a.large",
                                                     "0.1159200000") "," PRODUCT("c5."
                                                                                 "large",
                                                                                 "0."
                                                                                 "0000000"
                                                                                 "000") ","
                                                                                        "\"{}\"]}";
    nw_price_t *v = NULL;
    size_t n = 0, cap = 0;
    char next[64];
    nw_err_t err = {0};
    ck_assert_int_eq(
        nw_pricing_parse_page(page, strlen(page), "USD", &v, &n, &cap, next, sizeof next, &err),
        NW_OK);
    ck_assert_str_eq(next, "tok-2");
    ck_assert_uint_eq(n, 2); /* a zero price and a product without a type are skipped */
    ck_assert_str_eq(v[0].type, "m6i.large");
    ck_assert(fabs(v[0].price - 0.096) < 1e-12);
    ck_assert_str_eq(v[1].type, "m7a.large");
    ck_assert_str_eq(v[1].zone, "");
    /* another currency finds nothing */
    size_t n2 = 0;
    ck_assert_int_eq(
        nw_pricing_parse_page(page, strlen(page), "CNY", &v, &n2, &cap, next, sizeof next, &err),
        NW_OK);
    ck_assert_uint_eq(n2, 0);
    free(v);
    static const struct {
        const char *body, *path;
    } bad[] = {
        {"", "GetProducts"},
        {"[]", "GetProducts"},
        {"{\"PriceList\":{}}", "PriceList"},
        {"{\"PriceList\":[1]}", "PriceList"},
        {"{\"PriceList\":[\"not json\"]}", "PriceList"},
        {"{\"NextToken\":\"0123456789012345678901234567890123456789012345678901234567890123456\"}",
         "NextToken"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        v = NULL;
        n = cap = 0;
        nw_err_t e = {0};
        ck_assert_int_eq(nw_pricing_parse_page(bad[i].body, strlen(bad[i].body), "USD", &v, &n,
                                               &cap, next, sizeof next, &e),
                         NW_EPARSE);
        ck_assert_str_eq(e.path, bad[i].path);
        free(v);
    }
}
END_TEST

START_TEST(endpoint_region)
{
    static const char *const in[][2] = {
        {"us-west-2", "us-east-1"},       {"eu-west-1", "eu-central-1"},
        {"ap-southeast-2", "ap-south-1"}, {"cn-north-1", "cn-northwest-1"},
        {"sa-east-1", "us-east-1"},
    };
    unsetenv("AWS_ENDPOINT_URL");
    unsetenv("AWS_ENDPOINT_URL_PRICING");
    for (int i = 0; i < 5; i++) {
        nw_awscfg_t cfg;
        nw_awscfg_explicit_t ex = {.region = in[i][0]};
        ck_assert_int_eq(nw_awscfg_resolve(&cfg, &ex, NULL), NW_OK);
        ck_assert_str_eq(cfg.pricing_region, in[i][1]);
        char want[128];
        snprintf(want, sizeof want, "https://api.pricing.%s.amazonaws.com", in[i][1]);
        ck_assert_str_eq(cfg.pricing, want);
    }
    nw_awscfg_t cfg;
    nw_awscfg_explicit_t ex = {.region = "eu-west-1", .pricing = "http://127.0.0.1:1/"};
    ck_assert_int_eq(nw_awscfg_resolve(&cfg, &ex, NULL), NW_OK);
    ck_assert_str_eq(cfg.pricing, "http://127.0.0.1:1");
    ck_assert_str_eq(cfg.pricing_region, "eu-central-1");
    ex.pricing = "ftp://x";
    nw_err_t err = {0};
    ck_assert_int_eq(nw_awscfg_resolve(&cfg, &ex, &err), NW_EINVAL);
    ck_assert_str_eq(err.path, "aws.endpoints.pricing");
}
END_TEST

typedef struct {
    pthread_mutex_t mu;
    atomic_int calls;
    atomic_int fail; /* 1: AccessDeniedException; 2: no metal products */
    char auth[512];
    int shared_pages, metal_pages, bad_ctype, bad_filters;
} fake_pricing_t;

static void handler(void *ud, const fake_req_t *r, fake_conn_t *c)
{
    fake_pricing_t *f = ud;
    const char *b = r->body ? r->body : "";
    atomic_fetch_add(&f->calls, 1);
    pthread_mutex_lock(&f->mu);
    snprintf(f->auth, sizeof f->auth, "%s", r->auth);
    if (strcmp(r->ctype, "application/x-amz-json-1.1") != 0)
        f->bad_ctype++;
    /* Karpenter's filters (pricing.go fetchOnDemandPricing), each a TERM_MATCH */
    static const char *const need[] = {
        "\"ServiceCode\":\"AmazonEC2\"",
        "{\"Type\":\"TERM_MATCH\",\"Field\":\"regionCode\",\"Value\":\"us-west-2\"}",
        "\"Field\":\"operatingSystem\",\"Value\":\"Linux\"",
        "\"Field\":\"preInstalledSw\",\"Value\":\"NA\"",
        "\"Field\":\"capacitystatus\",\"Value\":\"Used\"",
        "\"Field\":\"marketoption\",\"Value\":\"OnDemand\"",
        "\"MaxResults\":100"};
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        if (!strstr(b, need[i]))
            f->bad_filters++;
    int metal = strstr(b, "Compute Instance (bare metal)") != NULL;
    if (metal)
        f->metal_pages++;
    else
        f->shared_pages++;
    pthread_mutex_unlock(&f->mu);
    if (atomic_load(&f->fail) == 1) {
        fake_reply(c, 400, "",
                   "{\"__type\":\"AccessDeniedException\",\"message\":\"not authorized to "
                   "perform: pricing:GetProducts\"}");
        return;
    }
    if (metal)
        fake_reply(c, 200, "",
                   atomic_load(&f->fail) == 2
                       ? "{\"PriceList\":[]}"
                       : "{\"PriceList\":[" PRODUCT("m5.metal", "4.6080000000") "]}");
    else if (!strstr(b, "\"NextToken\":\"p2\""))
        fake_reply(c, 200, "",
                   "{\"NextToken\":\"p2\",\"PriceList\":[" PRODUCT("m5.large", "0.096") "]}");
    else
        fake_reply(c, 200, "", "{\"PriceList\":[" PRODUCT("m7a.large", "0.11592") "]}");
}

START_TEST(client_flow)
{
    fake_pricing_t f;
    memset(&f, 0, sizeof f);
    pthread_mutex_init(&f.mu, NULL);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    setenv("AWS_ACCESS_KEY_ID", "AKIDTEST", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "secret", 1);
    setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
    fake_srv_t *srv = fake_srv_start(handler, &f);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", fake_srv_port(srv));
    nw_awscfg_t cfg;
    nw_awscfg_explicit_t ex = {.region = "us-west-2", .pricing = url, .call_timeout_ms = 5000};
    ck_assert_int_eq(nw_awscfg_resolve(&cfg, &ex, NULL), NW_OK);
    nw_creds_t *creds;
    ck_assert_int_eq(nw_creds_new(&cfg, NULL, &creds, NULL), NW_OK);
    nw_pricing_t *p;
    ck_assert_int_eq(nw_pricing_new(&cfg, creds, NULL, &p, NULL), NW_OK);
    nw_price_t *v = NULL;
    size_t n = 0;
    nw_sqs_error_t ae;
    nw_err_t err = {0};
    ck_assert_int_eq(nw_pricing_on_demand(p, &v, &n, &ae, &err), NW_OK);
    ck_assert_uint_eq(n, 3);
    ck_assert_str_eq(v[0].type, "m5.large");
    ck_assert_str_eq(v[1].type, "m7a.large");
    ck_assert_str_eq(v[2].type, "m5.metal");
    free(v);
    ck_assert_int_eq(f.shared_pages, 2);
    ck_assert_int_eq(f.metal_pages, 1);
    ck_assert_int_eq(f.bad_ctype, 0);
    ck_assert_int_eq(f.bad_filters, 0);
    ck_assert_ptr_nonnull(strstr(f.auth, "/us-east-1/pricing/aws4_request"));
    ck_assert_int_eq(nw_pricing_request_count(p), 3);
    /* an API error: nothing returned, the code kept */
    atomic_store(&f.fail, 1);
    ck_assert_int_eq(nw_pricing_on_demand(p, &v, &n, &ae, &err), NW_EAWS);
    ck_assert_ptr_null(v);
    ck_assert_uint_eq(n, 0);
    ck_assert_str_eq(ae.code, "AccessDeniedException");
    ck_assert_int_eq(ae.cls, NW_SQS_AUTH);
    /* one query finding nothing fails the refresh (pricing.go: "no on-demand pricing found") */
    atomic_store(&f.fail, 2);
    nw_err_clear(&err);
    ck_assert_int_eq(nw_pricing_on_demand(p, &v, &n, &ae, &err), NW_EAWS);
    ck_assert_msg(strstr(err.msg, "no on-demand pricing found") != NULL, "%s", err.msg);
    ck_assert_ptr_null(v);
    nw_pricing_free(p);
    fake_srv_stop(srv);
    /* nothing listens: a transport error */
    ck_assert_int_eq(nw_pricing_new(&cfg, creds, NULL, &p, NULL), NW_OK);
    ck_assert_int_ne(nw_pricing_on_demand(p, &v, &n, &ae, &err), NW_OK);
    ck_assert_int_eq(ae.cls, NW_SQS_TRANSPORT);
    nw_pricing_free(p);
    nw_creds_free(creds);
    pthread_mutex_destroy(&f.mu);
}
END_TEST

Suite *nw_pricing_suite(void)
{
    Suite *s = suite_create("pricing");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, parse_page);
    tcase_add_test(tc, endpoint_region);
    tcase_add_test(tc, client_flow);
    suite_add_tcase(s, tc);
    return s;
}
