/* Unit tests for scaler/expiry: when a NodeClaim expires, driven by a fake clock. */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "common/clock.h"
#include "scaler/controllers/expiry.h"

Suite *nw_expiry_suite(void);

static cJSON *claim(const char *created, const char *expire_after_json)
{
    char buf[512];
    snprintf(buf, sizeof buf,
             "{\"metadata\":{\"name\":\"a\",\"creationTimestamp\":%s%s%s},\"spec\":{%s%s}}",
             created ? "\"" : "", created ? created : "null", created ? "\"" : "",
             expire_after_json ? "\"expireAfter\":" : "",
             expire_after_json ? expire_after_json : "");
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(buf, strlen(buf) + 1, &end, 1);
    ck_assert_ptr_nonnull(j);
    return j;
}

static int64_t t(const char *rfc3339)
{
    int64_t ns = 0;
    ck_assert_int_eq(nw_clock_time_parse(rfc3339, &ns), NW_OK);
    return ns;
}

START_TEST(fake_clock)
{
    nw_clock_fake_t fc;
    nw_clock_fake_init(&fc, t("2026-11-30T00:00:00Z"));
    const nw_clock_t *clk = &fc.base;
    cJSON *nc = claim("2026-11-30T00:00:00Z", "\"20s\"");
    int64_t at = 0;
    ck_assert_int_eq(nw_expiry_deadline(nc, &at, NULL), 1);
    ck_assert_int_eq(at, t("2026-11-30T00:00:20Z"));
    ck_assert_int_eq(nw_expiry_due(nc, nw_clock_now(clk)), 0);
    nw_clock_fake_advance(&fc, 19 * NW_NS_PER_SEC);
    ck_assert_int_eq(nw_expiry_due(nc, nw_clock_now(clk)), 0);
    nw_clock_fake_advance(&fc, NW_NS_PER_SEC - 1);
    ck_assert_int_eq(nw_expiry_due(nc, nw_clock_now(clk)), 0);
    nw_clock_fake_advance(&fc, 1); /* now == creation + expireAfter */
    ck_assert_int_eq(nw_expiry_due(nc, nw_clock_now(clk)), 1);
    nw_clock_fake_advance(&fc, 3600 * NW_NS_PER_SEC);
    ck_assert_int_eq(nw_expiry_due(nc, nw_clock_now(clk)), 1);
    cJSON_Delete(nc);
}
END_TEST

START_TEST(defaults_and_never)
{
    int64_t at = 0;
    cJSON *nc = claim("2026-11-01T00:00:00Z", NULL); /* CRD default 720h */
    ck_assert_int_eq(nw_expiry_deadline(nc, &at, NULL), 1);
    ck_assert_int_eq(at, t("2026-12-01T00:00:00Z"));
    ck_assert_int_eq(nw_expiry_due(nc, t("2026-11-30T23:59:59Z")), 0);
    ck_assert_int_eq(nw_expiry_due(nc, t("2026-12-01T00:00:00Z")), 1);
    cJSON_Delete(nc);
    nc = claim("2026-11-01T00:00:00Z", "null");
    ck_assert_int_eq(nw_expiry_deadline(nc, &at, NULL), 1);
    cJSON_Delete(nc);
    nc = claim("2000-01-01T00:00:00Z", "\"Never\"");
    ck_assert_int_eq(nw_expiry_deadline(nc, &at, NULL), 0);
    ck_assert_int_eq(nw_expiry_due(nc, t("2100-01-01T00:00:00Z")), 0);
    cJSON_Delete(nc);
    nc = claim("2026-11-30T00:00:00Z", "\"1h30m\"");
    ck_assert_int_eq(nw_expiry_deadline(nc, &at, NULL), 1);
    ck_assert_int_eq(at, t("2026-11-30T01:30:00Z"));
    cJSON_Delete(nc);
}
END_TEST

START_TEST(bad_input)
{
    int64_t at = 1;
    nw_err_t err = {0};
    cJSON *nc = claim("2026-11-30T00:00:00Z", "\"soon\"");
    ck_assert_int_eq(nw_expiry_deadline(nc, &at, &err), -1);
    ck_assert_str_eq(err.path, "spec.expireAfter");
    ck_assert_int_eq(nw_expiry_due(nc, INT64_MAX), 0);
    cJSON_Delete(nc);
    nw_err_clear(&err);
    nc = claim("2026-11-30T00:00:00Z", "20");
    ck_assert_int_eq(nw_expiry_deadline(nc, &at, &err), -1);
    ck_assert_str_eq(err.path, "spec.expireAfter");
    cJSON_Delete(nc);
    nw_err_clear(&err);
    nc = claim(NULL, "\"1h\"");
    ck_assert_int_eq(nw_expiry_deadline(nc, &at, &err), -1);
    ck_assert_str_eq(err.path, "metadata.creationTimestamp");
    cJSON_Delete(nc);
    nw_err_clear(&err);
    nc = claim("yesterday", "\"1h\"");
    ck_assert_int_eq(nw_expiry_deadline(nc, &at, &err), -1);
    ck_assert_str_eq(err.path, "metadata.creationTimestamp");
    cJSON_Delete(nc);
    /* a huge expireAfter does not overflow */
    nc = claim("2200-01-01T00:00:00Z", "\"2562047h\"");
    ck_assert_int_eq(nw_expiry_deadline(nc, &at, NULL), 1);
    ck_assert_int_eq(at, INT64_MAX);
    ck_assert_int_eq(nw_expiry_due(nc, t("2262-01-01T00:00:00Z")), 0);
    cJSON_Delete(nc);
}
END_TEST

/* The record's deadline (what the tick reads) is the JSON's, case by case. */
START_TEST(record_deadline_is_the_jsons)
{
    static const struct {
        const char *created, *ea;
    } cases[] = {
        {"2026-11-30T00:00:00Z", "\"20s\""},
        {"2026-11-30T00:00:00Z", NULL},
        {"2026-11-30T00:00:00Z", "\"Never\""},
        {"2026-11-30T00:00:00Z", "\"soon\""},
        {"2026-11-30T00:00:00Z", "\"\""},
        {NULL, "\"1h\""},
        {"yesterday", "\"1h\""},
        {"2200-01-01T00:00:00Z", "\"2562047h\""},
        {"2026-11-30T00:00:00Z", "null"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        cJSON *j = claim(cases[i].created, cases[i].ea);
        nw_node_claim_t *rec = NULL;
        nw_err_t err = {0}, e1 = {0}, e2 = {0};
        ck_assert_int_eq(nw_node_claim_decode(j, &rec, &err), NW_OK);
        int64_t a1 = 1, a2 = 2;
        int r1 = nw_expiry_deadline(j, &a1, &e1), r2 = nw_expiry_deadline_of(rec, &a2, &e2);
        ck_assert_msg(r1 == r2 && a1 == a2, "case %zu: %d/%lld vs %d/%lld", i, r1, (long long)a1,
                      r2, (long long)a2);
        ck_assert_str_eq(e1.path, e2.path);
        nw_node_claim_free(rec);
        cJSON_Delete(j);
    }
}
END_TEST

Suite *nw_expiry_suite(void)
{
    Suite *s = suite_create("expiry");
    TCase *tc = tcase_create("expiry");
    tcase_add_test(tc, fake_clock);
    tcase_add_test(tc, defaults_and_never);
    tcase_add_test(tc, bad_input);
    tcase_add_test(tc, record_deadline_is_the_jsons);
    suite_add_tcase(s, tc);
    return s;
}
