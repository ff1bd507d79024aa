/*
 * Unit tests for common/series: the text a registry writes (HELP and TYPE, label values
 * escaped, values as Go prints them, series in first-seen order with removed ones left
 * out), and that a producer writing its own series with nw_series_write_header and
 * nw_series_write_sample gets the same text as the registry for the same series.
 */
#include <check.h>
#include <string.h>

#include "common/series.h"

Suite *nw_series_suite(void);

static const nw_series_desc_t GAUGE = {
    .name = "x_gauge", .help = "A gauge.", .kind = NW_SERIES_GAUGE, .labels = {"a", "b"}};
static const nw_series_desc_t BARE = {
    .name = "x_bare", .help = "No labels.", .kind = NW_SERIES_GAUGE, .labels = {NULL}};

START_TEST(registry_text)
{
    nw_series_t *r = nw_series_new();
    ck_assert_ptr_nonnull(r);
    nw_series_set(r, &GAUGE, (const char *[]){"1", "q\"uo\\te\nx"}, 0.5);
    nw_series_set(r, &GAUGE, (const char *[]){"2", NULL}, 3);
    nw_series_set(r, &GAUGE, (const char *[]){"3", ""}, 1e21);
    nw_series_remove(r, &GAUGE, (const char *[]){"2", ""});
    nw_series_set(r, &GAUGE, (const char *[]){"0", "last"}, -2.25);
    nw_series_set(r, &BARE, NULL, 7);
    const nw_series_desc_t *all[] = {&GAUGE, &BARE};
    nw_buf_t b;
    nw_buf_init(&b, 1 << 16);
    ck_assert_int_eq(nw_series_write(r, all, 2, &b), NW_OK);
    ck_assert_str_eq(nw_buf_str(&b), "# HELP x_gauge A gauge.\n"
                                     "# TYPE x_gauge gauge\n"
                                     "x_gauge{a=\"1\",b=\"q\\\"uo\\\\te\\nx\"} 0.5\n"
                                     "x_gauge{a=\"3\",b=\"\"} 1e+21\n"
                                     "x_gauge{a=\"0\",b=\"last\"} -2.25\n"
                                     "# HELP x_bare No labels.\n"
                                     "# TYPE x_bare gauge\n"
                                     "x_bare 7\n");
    nw_buf_cleanup(&b);
    nw_series_free(r);
}
END_TEST

START_TEST(own_series_as_registry)
{
    static const char *const vals[][2] = {
        {"a", "b"}, {"", "x\\y"}, {"\"", "\n"}, {"é", "long value with spaces"}};
    static const double vs[] = {0, 1.5, 123456789012, 0.1};
    nw_series_t *r = nw_series_new();
    nw_buf_t want, got;
    nw_buf_init(&want, 1 << 16);
    nw_buf_init(&got, 1 << 16);
    ck_assert_int_eq(nw_series_write_header(&got, &GAUGE), NW_OK);
    for (int i = 0; i < 4; i++) {
        nw_series_set(r, &GAUGE, vals[i], vs[i]);
        ck_assert_int_eq(nw_series_write_sample(&got, &GAUGE, vals[i], vs[i]), NW_OK);
    }
    const nw_series_desc_t *one[] = {&GAUGE};
    ck_assert_int_eq(nw_series_write(r, one, 1, &want), NW_OK);
    ck_assert_str_eq(nw_buf_str(&got), nw_buf_str(&want));
    /* NULL values count as "" there too */
    nw_buf_reset(&got);
    ck_assert_int_eq(nw_series_write_sample(&got, &GAUGE, NULL, 2), NW_OK);
    ck_assert_str_eq(nw_buf_str(&got), "x_gauge{a=\"\",b=\"\"} 2\n");
    nw_buf_cleanup(&want);
    nw_buf_cleanup(&got);
    nw_series_free(r);
}
END_TEST

Suite *nw_series_suite(void)
{
    Suite *s = suite_create("series");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, registry_text);
    tcase_add_test(tc, own_series_as_registry);
    suite_add_tcase(s, tc);
    return s;
}
