/* Unit tests for api/duration: cases in tests/data/duration/parse.tsv. */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/duration.h"
#include "tests/unit/testutil.h"

Suite *nw_duration_suite(void);

/* Decode \s \t \xHH \\ escapes in place; returns the decoded length. */
static size_t unescape(char *s)
{
    char *o = s;
    for (char *p = s; *p; p++) {
        if (*p != '\\' || !p[1]) {
            *o++ = *p;
            continue;
        }
        p++;
        if (*p == 's') {
            *o++ = ' ';
        } else if (*p == 't') {
            *o++ = '\t';
        } else if (*p == 'x' && p[1] && p[2]) {
            char hex[3] = {p[1], p[2], 0};
            *o++ = (char)strtol(hex, NULL, 16);
            p += 2;
        } else {
            *o++ = *p;
        }
    }
    *o = '\0';
    return (size_t)(o - s);
}

/* one test per line of tests/data/duration/parse.tsv */
static const nw_test_cases_t *parse_table_cases;

START_TEST(parse_table)
{
    const nw_test_case_t *row = nw_test_case(parse_table_cases, _i);
    do {
        char *f[4];
        int nf = nw_test_split_tabs(row->line, f, 4);
        ck_assert_msg(nf == 3, "parse.tsv:%d: want 3 fields, got %d", row->lineno, nf);
        size_t len = unescape(f[0]);
        int64_t ns = 42;
        nw_err_t err = {0};
        nw_rc_t rc = nw_duration_parse_n(f[0], len, &ns, &err);
        if (strcmp(f[1], "error") == 0) {
            if (rc != NW_EINVAL || err.rc != NW_EINVAL || ns != 0 || !strstr(err.msg, f[2])) {
                ck_abort_msg("parse.tsv:%d: want error containing [%s], got rc=%s [%s]",
                             row->lineno, f[2], nw_err_rc_str(rc), err.msg);
            }
            continue;
        }
        errno = 0;
        int64_t want = strtoll(f[1], NULL, 10);
        ck_assert_int_eq(errno, 0);
        char buf[NW_DURATION_STR_MAX];
        nw_duration_format(ns, buf, sizeof buf);
        if (rc != NW_OK || ns != want || strcmp(buf, f[2]) != 0) {
            ck_abort_msg("parse.tsv:%d: want %" PRId64 " %s, got rc=%s %" PRId64 " %s (%s)",
                         row->lineno, want, f[2], nw_err_rc_str(rc), ns, buf, err.msg);
            continue;
        }
        /* String() parses back to the same duration */
        int64_t back;
        if (nw_duration_parse(buf, &back, NULL) != NW_OK || back != ns) {
            ck_abort_msg("parse.tsv:%d: %s does not round-trip", row->lineno, buf);
        }
    } while (0);
}
END_TEST

START_TEST(never_literal)
{
    int64_t ns = 1;
    bool never = true;
    nw_err_t err = {0};
    ck_assert_int_eq(nw_duration_parse_or_never("Never", true, &ns, &never, &err), NW_OK);
    ck_assert(never);
    ck_assert(ns == INT64_MAX);
    ck_assert_int_eq(nw_duration_parse_or_never("720h", true, &ns, &never, &err), NW_OK);
    ck_assert(!never);
    ck_assert(ns == 720 * NW_HOUR);
    ck_assert_int_eq(nw_duration_parse_or_never("Never", false, &ns, &never, &err), NW_EINVAL);
    ck_assert(!never);
    ck_assert(ns == 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "\"Never\" is not allowed here"));
    /* only the exact spelling */
    nw_err_clear(&err);
    ck_assert_int_eq(nw_duration_parse_or_never("never", true, &ns, &never, &err), NW_EINVAL);
    ck_assert(!never);
    ck_assert_str_eq(err.msg, "time: invalid duration \"never\"");
    nw_err_clear(&err);
    ck_assert_int_eq(nw_duration_parse_or_never("Never ", true, &ns, NULL, &err), NW_EINVAL);
    ck_assert_int_eq(nw_duration_parse_or_never(NULL, true, &ns, &never, NULL), NW_EINVAL);
}
END_TEST

START_TEST(format_edges)
{
    char buf[NW_DURATION_STR_MAX];
    ck_assert_uint_eq(nw_duration_format(INT64_MIN, buf, sizeof buf), 25);
    ck_assert_str_eq(buf, "-2562047h47m16.854775808s");
    ck_assert_uint_eq(nw_duration_format(1500, buf, sizeof buf), strlen("1.5\xc2\xb5s"));
    ck_assert_str_eq(buf, "1.5\xc2\xb5s");
    ck_assert_uint_eq(nw_duration_format(-1, buf, sizeof buf), 4);
    ck_assert_str_eq(buf, "-1ns");
    ck_assert_uint_eq(nw_duration_format(90 * NW_MINUTE, buf, sizeof buf), 7);
    ck_assert_str_eq(buf, "1h30m0s");
    char small[4];
    ck_assert_uint_eq(nw_duration_format(720 * NW_HOUR, small, sizeof small), 8);
    ck_assert_str_eq(small, "720");
    /* a long bad input is quoted truncated */
    char longs[200];
    memset(longs, '1', sizeof longs - 1);
    longs[sizeof longs - 1] = '\0';
    nw_err_t err = {0};
    int64_t ns;
    ck_assert_int_eq(nw_duration_parse(longs, &ns, &err), NW_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "...\""));
}
END_TEST

Suite *nw_duration_suite(void)
{
    Suite *s = suite_create("duration");
    TCase *tc = tcase_create("duration");
    parse_table_cases = nw_test_cases_lines("tests/data/duration/parse.tsv", 75);
    nw_test_add_cases(tc, parse_table, parse_table_cases);
    tcase_add_test(tc, never_literal);
    tcase_add_test(tc, format_edges);
    suite_add_tcase(s, tc);
    return s;
}
