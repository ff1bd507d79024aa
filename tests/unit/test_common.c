/* Unit tests for common/: buf, log, clock, err, strs. */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/err.h"
#include "common/file.h"
#include "common/log.h"
#include "common/strs.h"

Suite *nw_common_suite(void);

START_TEST(buf_bounded)
{
    nw_buf_t b;
    nw_buf_init(&b, 8);
    ck_assert_int_eq(nw_buf_adds(&b, "abcd"), NW_OK);
    ck_assert_int_eq(nw_buf_addf(&b, "%d", 123), NW_OK);
    ck_assert_str_eq(nw_buf_str(&b), "abcd123");
    ck_assert_int_eq(nw_buf_adds(&b, "xy"), NW_ERANGE);
    ck_assert_str_eq(nw_buf_str(&b), "abcd123"); /* unchanged on failure */
    ck_assert_int_eq(nw_buf_adds(&b, "x"), NW_OK);
    ck_assert_uint_eq(b.len, 8);
    char *s = nw_buf_take(&b);
    ck_assert_str_eq(s, "abcd123x");
    ck_assert_uint_eq(b.len, 0);
    free(s);
    nw_buf_cleanup(&b);
}
END_TEST

START_TEST(buf_json_escape)
{
    nw_buf_t b;
    nw_buf_init(&b, 1024);
    ck_assert_int_eq(nw_buf_add_json_escaped(&b, "a\"b\\c\n\x01"), NW_OK);
    ck_assert_str_eq(nw_buf_str(&b), "a\\\"b\\\\c\\n\\u0001");
    /* plain runs between escapes, at both ends; DEL as is; valid UTF-8 as is, a stray
     * continuation byte and a truncated sequence as U+FFFD */
    nw_buf_reset(&b);
    ck_assert_int_eq(nw_buf_add_json_escaped(&b, "\"x\x7f\ty\r\xc3\xa9z\x80w\xe2\x82"), NW_OK);
    ck_assert_str_eq(nw_buf_str(&b), "\\\"x\x7f\\ty\\r\xc3\xa9z\\ufffdw\\ufffd\\ufffd");
    nw_buf_reset(&b);
    ck_assert_int_eq(nw_buf_add_json_escaped(&b, ""), NW_OK);
    ck_assert_str_eq(nw_buf_str(&b), "");
    /* the cap holds inside a run */
    nw_buf_t small;
    nw_buf_init(&small, 4);
    ck_assert_int_eq(nw_buf_add_json_escaped(&small, "abcdefgh"), NW_ERANGE);
    nw_buf_cleanup(&small);
    nw_buf_cleanup(&b);
}
END_TEST

static char *capture_log(void (*fn)(void))
{
    char path[] = "/tmp/nwlogXXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    nw_log_set_fd(fd);
    fn();
    nw_log_set_fd(2);
    lseek(fd, 0, SEEK_SET);
    char *buf = calloc(1, 65536);
    ssize_t n = read(fd, buf, 65535);
    ck_assert_int_ge(n, 0);
    close(fd);
    unlink(path);
    return buf;
}

static int side_effects;
static int bump(void)
{
    return ++side_effects;
}

static void log_some(void)
{
    nw_log_set_level(NW_LOG_INFO);
    nw_log_debug("t", "hidden", NW_LI("n", bump()));
    nw_log_info("t", "shown", NW_LS("name", "a\"b"), NW_LI("n", 42), NW_LB("ok", 1),
                NW_LS("token", "s3cr3t"), NW_LS("awsSecretAccessKey", "k"));
    nw_log_warn("t", "no fields");
}

START_TEST(log_json_lines)
{
    side_effects = 0;
    char *out = capture_log(log_some);
    ck_assert_int_eq(side_effects, 0); /* level checked before arguments are evaluated */
    ck_assert_ptr_null(strstr(out, "hidden"));
    ck_assert_ptr_nonnull(strstr(out, "\"level\":\"info\",\"comp\":\"t\",\"msg\":\"shown\","
                                      "\"name\":\"a\\\"b\",\"n\":42,\"ok\":true,"
                                      "\"token\":\"[redacted]\","
                                      "\"awsSecretAccessKey\":\"[redacted]\"}\n"));
    ck_assert_ptr_null(strstr(out, "s3cr3t"));
    ck_assert_ptr_nonnull(
        strstr(out, "\"level\":\"warn\",\"comp\":\"t\",\"msg\":\"no fields\"}\n"));
    free(out);
}
END_TEST

START_TEST(log_levels_parse)
{
    ck_assert_int_eq(nw_log_level_parse("debug"), NW_LOG_DEBUG);
    ck_assert_int_eq(nw_log_level_parse("warn"), NW_LOG_WARN);
    ck_assert_int_eq(nw_log_level_parse("loud"), -1);
    ck_assert_int_eq(nw_log_level_parse(NULL), -1);
}
END_TEST

START_TEST(log_secret_keys)
{
    static const char *const secret[] = {
        "token",         "sessionToken",    "X-Api-Key",   "aws_secret_access_key",
        "Authorization", "SIGNATURE",       "credentials", "private-key",
        "pass_word",     "bootstrapTokenID"};
    static const char *const plain[] = {"uid",      "kind",   "latency_ms", "providerID",
                                        "capacity", "status", "pods",       "apis",
                                        "tok",      "secre",  "",           "c"};
    for (size_t i = 0; i < sizeof secret / sizeof *secret; i++)
        ck_assert_msg(nw_log_key_is_secret(secret[i]), "%s is secret", secret[i]);
    for (size_t i = 0; i < sizeof plain / sizeof *plain; i++)
        ck_assert_msg(!nw_log_key_is_secret(plain[i]), "%s is not secret", plain[i]);
}
END_TEST

static void log_numbers(void)
{
    nw_log_set_level(NW_LOG_INFO);
    nw_log_info("t", "n", NW_LI("zero", 0), NW_LI("neg", -1234567), NW_LI("min", LLONG_MIN),
                NW_LI("max", LLONG_MAX));
}

START_TEST(log_ints_and_timestamp)
{
    char *out = capture_log(log_numbers);
    ck_assert_ptr_nonnull(strstr(out, "\"zero\":0,\"neg\":-1234567,\"min\":-9223372036854775808,"
                                      "\"max\":9223372036854775807}\n"));
    /* {"ts":"YYYY-MM-DDTHH:MM:SS.mmmZ", */
    ck_assert_int_eq(strncmp(out, "{\"ts\":\"", 7), 0);
    const char *ts = out + 7;
    static const char shape[] = "dddd-dd-ddTdd:dd:dd.dddZ\"";
    for (size_t i = 0; shape[i]; i++) {
        if (shape[i] == 'd')
            ck_assert_msg(ts[i] >= '0' && ts[i] <= '9', "ts[%zu] in %.30s", i, ts);
        else
            ck_assert_msg(ts[i] == shape[i], "ts[%zu] in %.30s", i, ts);
    }
    ck_assert_int_eq(strncmp(ts, "20", 2), 0);
    free(out);
}
END_TEST

START_TEST(clock_fake_and_format)
{
    nw_clock_fake_t f;
    nw_clock_fake_init(&f, INT64_C(1764473400) * NW_NS_PER_SEC);
    const nw_clock_t *c = &f.base;
    int64_t m0 = nw_clock_mono(c);
    nw_clock_fake_advance(&f, 90 * NW_NS_PER_SEC);
    ck_assert_int_eq(nw_clock_mono(c) - m0, 90 * NW_NS_PER_SEC);
    char buf[32];
    nw_clock_time_format(nw_clock_now(c), buf, sizeof buf);
    ck_assert_str_eq(buf, "2025-11-30T03:31:30Z");
    int64_t t;
    ck_assert_int_eq(nw_clock_time_parse(buf, &t), NW_OK);
    ck_assert_int_eq(t, nw_clock_now(c));
    ck_assert_int_eq(nw_clock_time_parse("2025-11-30T05:31:30.5+02:00", &t), NW_OK);
    ck_assert_int_eq(t, nw_clock_now(c) + NW_NS_PER_SEC / 2);
    ck_assert_int_eq(nw_clock_time_parse("2025-11-30 03:31:30Z", &t), NW_EPARSE);
    ck_assert_int_eq(nw_clock_time_parse("2025-13-30T03:31:30Z", &t), NW_EPARSE);
    ck_assert_int_eq(nw_clock_time_parse("2025-11-30T03:31:30", &t), NW_EPARSE);
    ck_assert_int_eq(nw_clock_time_parse("", &t), NW_EPARSE);
    ck_assert_int_eq(nw_clock_time_parse(NULL, &t), NW_EPARSE);
    /* int64 epoch nanoseconds end at 2262-04-11T23:47:16.854775807Z */
    ck_assert_int_eq(nw_clock_time_parse("2262-04-11T23:47:16.854775807Z", &t), NW_OK);
    ck_assert(t == INT64_MAX);
    ck_assert_int_eq(nw_clock_time_parse("2262-04-11T23:47:16.854775808Z", &t), NW_ERANGE);
    ck_assert_int_eq(nw_clock_time_parse("9999-12-31T23:59:59Z", &t), NW_ERANGE);
    ck_assert_int_eq(nw_clock_time_parse("0000-01-01T00:00:00Z", &t), NW_ERANGE);
    ck_assert_int_gt(nw_clock_now(nw_clock_system()), INT64_C(1700000000) * NW_NS_PER_SEC);
}
END_TEST

START_TEST(err_first_wins)
{
    nw_err_t e = {0};
    ck_assert_int_eq(nw_err_set(&e, NW_EINVAL, "spec.a", "bad %d", 1), NW_EINVAL);
    nw_err_set(&e, NW_EPARSE, "spec.b", "second");
    ck_assert_int_eq(e.rc, NW_EINVAL);
    ck_assert_str_eq(e.path, "spec.a");
    ck_assert_str_eq(e.msg, "bad 1");
    ck_assert_int_eq(nw_err_set(NULL, NW_EIO, NULL, "x"), NW_EIO);
    nw_errs_t errs;
    nw_err_list_init(&errs);
    for (int i = 0; i < NW_ERRS_MAX + 3; i++)
        nw_err_list_add(&errs, NW_EINVAL, "p", "m%d", i);
    ck_assert_uint_eq(errs.n, NW_ERRS_MAX);
    ck_assert_uint_eq(errs.dropped, 3);
    ck_assert_str_eq(nw_err_rc_str(NW_ENOMEM), "out of memory");
}
END_TEST

START_TEST(file_read_capped)
{
    char path[] = "/tmp/nw-file-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, "ab\0cd", 5), 5);
    close(fd);
    size_t len = 0;
    char *s = nw_file_read(path, 5, &len);
    ck_assert_ptr_nonnull(s);
    ck_assert_uint_eq(len, 5); /* embedded NUL kept, NUL-terminated */
    ck_assert(memcmp(s, "ab\0cd", 6) == 0);
    free(s);
    errno = 0;
    ck_assert_ptr_null(nw_file_read(path, 4, &len));
    ck_assert_int_eq(errno, EFBIG);
    unlink(path);
    errno = 0;
    ck_assert_ptr_null(nw_file_read(path, 100, &len));
    ck_assert_int_eq(errno, ENOENT);
}
END_TEST

START_TEST(strs_lower_bound)
{
    typedef struct {
        int n;
        const char *name;
    } item_t;
    const item_t v[] = {{0, "a"}, {1, "b"}, {2, "b"}, {3, "b"}, {4, "d"}};
    size_t k = 99, off = offsetof(item_t, name);
    ck_assert_uint_eq(nw_strs_lower(v, 5, sizeof *v, off, "b", &k), 1);
    ck_assert_uint_eq(k, 3);
    ck_assert_uint_eq(nw_strs_lower(v, 5, sizeof *v, off, "a", &k), 0);
    ck_assert_uint_eq(k, 1);
    ck_assert_uint_eq(nw_strs_lower(v, 5, sizeof *v, off, "c", &k), 4); /* d is above */
    ck_assert_uint_eq(k, 0);
    ck_assert_uint_eq(nw_strs_lower(v, 5, sizeof *v, off, "e", &k), 5); /* past the end */
    ck_assert_uint_eq(k, 0);
    ck_assert_uint_eq(nw_strs_lower(v, 5, sizeof *v, off, "d", NULL), 4);
    ck_assert_uint_eq(nw_strs_lower(NULL, 0, sizeof *v, off, "a", &k), 0);
    ck_assert_uint_eq(k, 0);
}
END_TEST

START_TEST(strs_index_finds_members)
{
    typedef struct {
        int n;
        char *name;
    } item_t;
    /* enough elements to grow the table past its first size, and colliding prefixes */
    enum { N = 300 };
    item_t v[N];
    char names[N][16];
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "pod-%d", i % 250); /* 50 names twice */
        v[i] = (item_t){i, names[i]};
    }
    nw_strs_index_t ix = {0};
    ck_assert_uint_eq(nw_strs_index_find(&ix, "pod-1"), SIZE_MAX); /* not built: none */
    ck_assert(nw_strs_index_build(&ix, v, N, sizeof *v, offsetof(item_t, name)));
    for (int i = 0; i < 250; i++) {
        char key[16];
        snprintf(key, sizeof key, "pod-%d", i);
        size_t at = nw_strs_index_find(&ix, key);
        ck_assert_uint_ne(at, SIZE_MAX);
        ck_assert_str_eq(v[at].name, key);
        ck_assert_int_eq(v[at].n, i < 50 ? i + 250 : i); /* the last of equal members */
    }
    ck_assert_uint_eq(nw_strs_index_find(&ix, "pod-250"), SIZE_MAX);
    ck_assert_uint_eq(nw_strs_index_find(&ix, ""), SIZE_MAX);
    ck_assert_uint_eq(nw_strs_index_find(&ix, NULL), SIZE_MAX);
    /* built again over a shorter array (the same storage): what left it is not found */
    ck_assert(nw_strs_index_build(&ix, v, 10, sizeof *v, offsetof(item_t, name)));
    ck_assert_uint_eq(nw_strs_index_find(&ix, "pod-9"), 9);
    ck_assert_uint_eq(nw_strs_index_find(&ix, "pod-10"), SIZE_MAX);
    /* a member moved out (set to NULL) after the build is not found; the others are */
    v[3].name = NULL;
    ck_assert_uint_eq(nw_strs_index_find(&ix, "pod-3"), SIZE_MAX);
    ck_assert_uint_eq(nw_strs_index_find(&ix, "pod-4"), 4);
    ck_assert(nw_strs_index_build(&ix, v, 10, sizeof *v, offsetof(item_t, name)));
    ck_assert_uint_eq(nw_strs_index_find(&ix, "pod-3"), SIZE_MAX); /* NULL members skipped */
    ck_assert_uint_eq(nw_strs_index_find(&ix, "pod-2"), 2);
    v[3].name = names[3];
    ck_assert(nw_strs_index_build(&ix, v, 0, sizeof *v, offsetof(item_t, name)));
    ck_assert_uint_eq(nw_strs_index_find(&ix, "pod-0"), SIZE_MAX);
    nw_strs_index_free(&ix);
    /* an array of plain strings */
    const char *s[] = {"b", "a", "c"};
    ck_assert(nw_strs_index_build(&ix, s, 3, sizeof *s, 0));
    ck_assert_uint_eq(nw_strs_index_find(&ix, "a"), 1);
    ck_assert_uint_eq(nw_strs_index_find(&ix, "d"), SIZE_MAX);
    nw_strs_index_free(&ix);
    nw_strs_index_free(&ix); /* freeing twice is harmless */
}
END_TEST

Suite *nw_common_suite(void)
{
    Suite *s = suite_create("common");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, buf_bounded);
    tcase_add_test(tc, strs_lower_bound);
    tcase_add_test(tc, strs_index_finds_members);
    tcase_add_test(tc, buf_json_escape);
    tcase_add_test(tc, log_json_lines);
    tcase_add_test(tc, log_secret_keys);
    tcase_add_test(tc, log_ints_and_timestamp);
    tcase_add_test(tc, log_levels_parse);
    tcase_add_test(tc, clock_fake_and_format);
    tcase_add_test(tc, err_first_wins);
    tcase_add_test(tc, file_read_capped);
    suite_add_tcase(s, tc);
    return s;
}
