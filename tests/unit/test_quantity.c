/* Unit tests for api/quantity: cases in tests/data/quantity/{parse,arith}.tsv. */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/quantity.h"
#include "tests/unit/testutil.h"

Suite *nw_quantity_suite(void);

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

static int64_t to_i64(const char *s)
{
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    ck_assert_msg(errno == 0 && *s && !*end, "bad integer in case file: %s", s);
    return (int64_t)v;
}

static nw_quantity_t must_parse(const char *s, const char *where)
{
    nw_quantity_t q;
    nw_err_t err = {0};
    ck_assert_msg(nw_quantity_parse(s, &q, &err) == NW_OK, "%s: cannot parse %s: %s", where, s,
                  err.msg);
    return q;
}

static const char *fmt_q(nw_quantity_t q, char *buf)
{
    nw_quantity_format(q, buf, NW_QUANTITY_STR_MAX);
    return buf;
}

/* one test per line of tests/data/quantity/parse.tsv */
static const nw_test_cases_t *parse_table_cases;

START_TEST(parse_table)
{
    const nw_test_case_t *row = nw_test_case(parse_table_cases, _i);
    do {
        char *f[5];
        int nf = nw_test_split_tabs(row->line, f, 5);
        char where[64];
        snprintf(where, sizeof where, "parse.tsv:%d", row->lineno);
        ck_assert_msg(nf == 3 || nf == 4, "%s: want 3 or 4 fields, got %d", where, nf);
        size_t len = unescape(f[0]);
        nw_quantity_t q = {12345, NW_QTY_DECIMAL_EXPONENT};
        nw_err_t err = {0};
        nw_rc_t rc = nw_quantity_parse_n(f[0], len, &q, &err);
        char buf[NW_QUANTITY_STR_MAX];
        if (strcmp(f[1], "error") == 0 || strcmp(f[1], "erange") == 0) {
            nw_rc_t want = strcmp(f[1], "error") == 0 ? NW_EINVAL : NW_ERANGE;
            if (rc != want || !strstr(err.msg, f[2]) || err.rc != want || q.milli != 0) {
                ck_abort_msg("%s: input \"%s\": want %s containing \"%s\", got rc=%s msg=%s", where,
                             row->line, nw_err_rc_str(want), f[2], nw_err_rc_str(rc), err.msg);
            }
            continue;
        }
        ck_assert_msg(nf == 4, "%s: want 4 fields", where);
        int64_t milli = to_i64(f[2]);
        if (rc != NW_OK || q.milli != milli || strcmp(fmt_q(q, buf), f[1]) != 0 ||
            strcmp(nw_quantity_format_name(q.format), f[3]) != 0) {
            ck_abort_msg("%s: input \"%s\": want %s %" PRId64 " %s, got rc=%s %s %" PRId64
                         " %s (%s)",
                         where, f[0], f[1], milli, f[3], nw_err_rc_str(rc), buf, q.milli,
                         nw_quantity_format_name(q.format), err.msg);
            continue;
        }
        /* the canonical text parses back to the same value and prints the same */
        nw_quantity_t back;
        char buf2[NW_QUANTITY_STR_MAX];
        if (nw_quantity_parse(buf, &back, NULL) != NW_OK || back.milli != q.milli ||
            (strcmp(fmt_q(back, buf2), buf) != 0 && q.format != NW_QTY_BINARY_SI)) {
            ck_abort_msg("%s: canonical %s does not round-trip (%s)", where, buf, buf2);
        }
    } while (0);
}
END_TEST

/* one test per line of tests/data/quantity/arith.tsv */
static const nw_test_cases_t *arith_table_cases;

START_TEST(arith_table)
{
    const nw_test_case_t *row = nw_test_case(arith_table_cases, _i);
    do {
        char *f[5];
        int nf = nw_test_split_tabs(row->line, f, 5);
        char where[64];
        snprintf(where, sizeof where, "arith.tsv:%d", row->lineno);
        ck_assert_msg(nf == 4, "%s: want 4 fields, got %d", where, nf);
        nw_quantity_t a, b = {0, NW_QTY_DECIMAL_SI};
        if (strcmp(f[3], "erange") == 0 && nw_quantity_parse(f[1], &a, NULL) == NW_ERANGE)
            continue; /* an operand itself out of range */
        a = must_parse(f[1], where);
        nw_quantity_t r = {777, NW_QTY_DECIMAL_SI};
        const nw_quantity_t r0 = r;
        nw_err_t err = {0};
        nw_rc_t rc = NW_OK;
        char got[64], buf[NW_QUANTITY_STR_MAX];
        const char *op = f[0];
        if (strcmp(op, "add") == 0 || strcmp(op, "sub") == 0 || strcmp(op, "mul") == 0) {
            if (op[0] == 'a')
                rc = nw_quantity_add(a, must_parse(f[2], where), &r, &err);
            else if (op[0] == 's')
                rc = nw_quantity_sub(a, must_parse(f[2], where), &r, &err);
            else
                rc = nw_quantity_mul_int(a, to_i64(f[2]), &r, &err);
            if (rc == NW_ERANGE) {
                snprintf(got, sizeof got, "erange");
                if (r.milli != r0.milli || !strstr(err.msg, "overflows")) {
                    ck_abort_msg("%s: output changed on overflow or bad message: %s", where,
                                 err.msg);
                }
            } else if (rc != NW_OK) {
                snprintf(got, sizeof got, "rc=%s", nw_err_rc_str(rc));
            } else {
                snprintf(got, sizeof got, "%s", fmt_q(r, buf));
            }
        } else if (strcmp(op, "cmp") == 0) {
            b = must_parse(f[2], where);
            int c = nw_quantity_cmp(a, b);
            snprintf(got, sizeof got, "%d", c);
            if (nw_quantity_cmp(b, a) != -c) {
                ck_abort_msg("%s: cmp is not antisymmetric", where);
            }
        } else if (strcmp(op, "value") == 0) {
            snprintf(got, sizeof got, "%" PRId64, nw_quantity_value(a));
        } else {
            ck_abort_msg("%s: unknown op %s", where, op);
        }
        if (strcmp(got, f[3]) != 0) {
            ck_abort_msg("%s: %s %s %s: want %s, got %s", where, op, f[1], f[2], f[3], got);
        }
    } while (0);
}
END_TEST

START_TEST(constructors)
{
    nw_quantity_t q;
    nw_err_t err = {0};
    char buf[NW_QUANTITY_STR_MAX];
    ck_assert_int_eq(nw_quantity_from_int(2048, NW_QTY_BINARY_SI, &q, &err), NW_OK);
    ck_assert_str_eq(fmt_q(q, buf), "2Ki");
    ck_assert_int_eq(nw_quantity_from_int(INT64_MAX / 1000 + 1, NW_QTY_DECIMAL_SI, &q, &err),
                     NW_ERANGE);
    ck_assert_int_eq(err.rc, NW_ERANGE);
    q = nw_quantity_from_milli(INT64_MIN, NW_QTY_DECIMAL_SI);
    ck_assert(q.milli == -INT64_MAX);
    ck_assert_str_eq(fmt_q(q, buf), "-9223372036854775807m");
    q = nw_quantity_from_milli(1500, NW_QTY_DECIMAL_EXPONENT);
    ck_assert_str_eq(fmt_q(q, buf), "1500e-3");
    ck_assert(nw_quantity_is_zero(nw_quantity_from_milli(0, NW_QTY_BINARY_SI)));
    /* truncating output still reports the full length */
    char small[4];
    ck_assert_uint_eq(nw_quantity_format(nw_quantity_from_milli(1500, 0), small, sizeof small), 5);
    ck_assert_str_eq(small, "150");
    /* NULL error pointer and NULL input are safe */
    ck_assert_int_eq(nw_quantity_parse(NULL, &q, NULL), NW_EINVAL);
    ck_assert_int_eq(nw_quantity_parse("1Gi", NULL, NULL), NW_OK);
    /* a long malformed input is quoted truncated */
    char longs[300];
    memset(longs, '9', sizeof longs - 2);
    longs[sizeof longs - 2] = 'x';
    longs[sizeof longs - 1] = '\0';
    nw_err_clear(&err);
    ck_assert_int_eq(nw_quantity_parse(longs, &q, &err), NW_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "...\""));
    ck_assert_ptr_nonnull(strstr(err.msg, "offset 298"));
}
END_TEST

/* Every milli value in a sweep formats to text that parses back to itself. */
START_TEST(format_roundtrip_sweep)
{
    static const int64_t seeds[] = {1,
                                    7,
                                    999,
                                    1000,
                                    1001,
                                    1024000,
                                    1536000,
                                    1073741824000,
                                    999999999,
                                    123456789,
                                    INT64_MAX,
                                    INT64_MAX / 3,
                                    5000000000000};
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
        for (int f = 0; f < 3; f++) {
            for (int sign = -1; sign <= 1; sign += 2) {
                nw_quantity_t q = nw_quantity_from_milli(seeds[i] * sign, f), back;
                char buf[NW_QUANTITY_STR_MAX];
                nw_err_t err = {0};
                fmt_q(q, buf);
                ck_assert_msg(nw_quantity_parse(buf, &back, &err) == NW_OK, "%s: %s", buf, err.msg);
                ck_assert_msg(back.milli == q.milli, "%s: %" PRId64 " != %" PRId64, buf, back.milli,
                              q.milli);
            }
        }
    }
}
END_TEST

Suite *nw_quantity_suite(void)
{
    Suite *s = suite_create("quantity");
    TCase *tc = tcase_create("quantity");
    parse_table_cases = nw_test_cases_lines("tests/data/quantity/parse.tsv", 90);
    nw_test_add_cases(tc, parse_table, parse_table_cases);
    arith_table_cases = nw_test_cases_lines("tests/data/quantity/arith.tsv", 30);
    nw_test_add_cases(tc, arith_table, arith_table_cases);
    tcase_add_test(tc, constructors);
    tcase_add_test(tc, format_roundtrip_sweep);
    suite_add_tcase(s, tc);
    return s;
}
