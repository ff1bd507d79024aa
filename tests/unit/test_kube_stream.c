/* Unit tests for the watch-stream parser (chunk boundaries anywhere), the token-bucket
 * rate limiter and the jittered back-off (with a fake clock). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "scaler/kube/retry.h"
#include "scaler/kube/watch.h"

Suite *nw_kube_stream_suite(void);

typedef struct {
    char log[8192];
    int n;
    int stop_after; /* 0: never */
} sink_t;

static int sink(void *ud, const char *type, cJSON *obj)
{
    sink_t *s = ud;
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "name"));
    const char *rv = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "resourceVersion"));
    size_t l = strlen(s->log);
    snprintf(s->log + l, sizeof s->log - l, "%s:%s:%s;", type, name ? name : "-", rv ? rv : "-");
    cJSON_Delete(obj);
    s->n++;
    return s->stop_after && s->n >= s->stop_after;
}

static const char stream[] =
    "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"1\"}}}\n"
    "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"2\","
    "\"annotations\":{\"x\":\"line\\nbreak \\u00e9 }{\"}}}}\n"
    "\n"
    "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":"
    "{\"resourceVersion\":\"7\"}}}\r\n"
    "{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"b\",\"resourceVersion\":\"9\"}}}\n";
static const char want[] = "ADDED:a:1;MODIFIED:a:2;BOOKMARK:-:7;DELETED:b:9;";

START_TEST(parse_whole)
{
    sink_t s = {0};
    nw_kube_wparse_t p;
    nw_kube_watch_wparse_init(&p, 1 << 20, sink, &s);
    ck_assert_int_eq(nw_kube_watch_wparse_feed(&p, stream, strlen(stream)), NW_OK);
    ck_assert_int_eq(nw_kube_watch_wparse_finish(&p), NW_OK);
    ck_assert_str_eq(s.log, want);
    ck_assert_uint_eq(p.events, 4);
    nw_kube_watch_wparse_cleanup(&p);
}
END_TEST

/* every split into three pieces at positions i <= j */
START_TEST(parse_any_boundaries)
{
    size_t n = strlen(stream);
    for (size_t i = 0; i <= n; i++)
        for (size_t j = i; j <= n; j += (j < i + 8 || j > n - 8) ? 1 : 7) {
            sink_t s = {0};
            nw_kube_wparse_t p;
            nw_kube_watch_wparse_init(&p, 1 << 20, sink, &s);
            ck_assert_int_eq(nw_kube_watch_wparse_feed(&p, stream, i), NW_OK);
            ck_assert_int_eq(nw_kube_watch_wparse_feed(&p, stream + i, j - i), NW_OK);
            ck_assert_int_eq(nw_kube_watch_wparse_feed(&p, stream + j, n - j), NW_OK);
            ck_assert_int_eq(nw_kube_watch_wparse_finish(&p), NW_OK);
            ck_assert_msg(!strcmp(s.log, want), "split %zu/%zu: %s", i, j, s.log);
            nw_kube_watch_wparse_cleanup(&p);
        }
}
END_TEST

START_TEST(parse_byte_at_a_time)
{
    sink_t s = {0};
    nw_kube_wparse_t p;
    nw_kube_watch_wparse_init(&p, 1 << 20, sink, &s);
    for (size_t i = 0; stream[i]; i++)
        ck_assert_int_eq(nw_kube_watch_wparse_feed(&p, stream + i, 1), NW_OK);
    ck_assert_int_eq(nw_kube_watch_wparse_finish(&p), NW_OK);
    ck_assert_str_eq(s.log, want);
    nw_kube_watch_wparse_cleanup(&p);
}
END_TEST

START_TEST(parse_last_event_without_newline)
{
    sink_t s = {0};
    nw_kube_wparse_t p;
    nw_kube_watch_wparse_init(&p, 1 << 20, sink, &s);
    const char *ev = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"z\"}}}";
    ck_assert_int_eq(nw_kube_watch_wparse_feed(&p, ev, strlen(ev)), NW_OK);
    ck_assert_int_eq(s.n, 0);
    ck_assert_int_eq(nw_kube_watch_wparse_finish(&p), NW_OK);
    ck_assert_str_eq(s.log, "ADDED:z:-;");
    /* a truncated event at the end of the stream is reported and dropped */
    ck_assert_int_eq(nw_kube_watch_wparse_feed(&p, ev, 20), NW_OK);
    ck_assert_int_eq(nw_kube_watch_wparse_finish(&p), NW_EPARSE);
    ck_assert_int_eq(s.n, 1);
    nw_kube_watch_wparse_cleanup(&p);
}
END_TEST

START_TEST(parse_rejects)
{
    sink_t s = {0};
    nw_kube_wparse_t p;
    nw_kube_watch_wparse_init(&p, 64, sink, &s);
    ck_assert_int_eq(nw_kube_watch_wparse_feed(&p, "not json\n", 9), NW_EPARSE);
    ck_assert_int_eq(nw_kube_watch_wparse_feed(&p, "[1,2]\n", 6), NW_EPARSE);
    ck_assert_int_eq(nw_kube_watch_wparse_feed(&p, "{\"object\":{}}\n", 14), NW_EPARSE);
    ck_assert_ptr_nonnull(strstr(p.err, "type"));
    char big[200];
    memset(big, ' ', sizeof big);
    big[0] = '{';
    /* over the cap, whether in one piece or across chunks */
    ck_assert_int_eq(nw_kube_watch_wparse_feed(&p, big, sizeof big), NW_ERANGE);
    ck_assert_int_eq(nw_kube_watch_wparse_feed(&p, big, 50), NW_OK);
    ck_assert_int_eq(nw_kube_watch_wparse_feed(&p, big, 50), NW_ERANGE);
    ck_assert_int_eq(s.n, 0);
    nw_kube_watch_wparse_cleanup(&p);
}
END_TEST

START_TEST(parse_stop)
{
    sink_t s = {.stop_after = 2};
    nw_kube_wparse_t p;
    nw_kube_watch_wparse_init(&p, 1 << 20, sink, &s);
    ck_assert_int_eq(nw_kube_watch_wparse_feed(&p, stream, strlen(stream)), NW_OK);
    ck_assert_int_eq(s.n, 2);
    ck_assert_int_eq(p.stopped, 1);
    nw_kube_watch_wparse_cleanup(&p);
}
END_TEST

START_TEST(ratelimit_bucket)
{
    nw_clock_fake_t fc;
    nw_clock_fake_init(&fc, 0);
    nw_kube_rl_t rl;
    nw_kube_retry_rl_init(&rl, &fc.base, 2.0, 3); /* 2 QPS, burst 3 */
    ck_assert_int_eq(nw_kube_retry_rl_reserve(&rl), 0);
    ck_assert_int_eq(nw_kube_retry_rl_reserve(&rl), 0);
    ck_assert_int_eq(nw_kube_retry_rl_reserve(&rl), 0);
    /* bucket empty: reservations are spaced 1/qps apart */
    ck_assert_int_eq(nw_kube_retry_rl_reserve(&rl), 500 * NW_NS_PER_MS);
    ck_assert_int_eq(nw_kube_retry_rl_reserve(&rl), 1000 * NW_NS_PER_MS);
    ck_assert_int_eq(nw_kube_retry_rl_try(&rl), 0);
    nw_clock_fake_advance(&fc, 1000 * NW_NS_PER_MS); /* pays back the two reservations */
    ck_assert_int_eq(nw_kube_retry_rl_try(&rl), 0);
    nw_clock_fake_advance(&fc, 500 * NW_NS_PER_MS);
    ck_assert_int_eq(nw_kube_retry_rl_try(&rl), 1);
    /* a long idle period refills to the burst, not beyond */
    nw_clock_fake_advance(&fc, 3600 * NW_NS_PER_SEC);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(nw_kube_retry_rl_reserve(&rl), 0);
    ck_assert_int_gt(nw_kube_retry_rl_reserve(&rl), 0);
    nw_kube_retry_rl_cleanup(&rl);
    /* qps <= 0: unlimited */
    nw_kube_retry_rl_init(&rl, &fc.base, -1, 1);
    for (int i = 0; i < 100; i++)
        ck_assert_int_eq(nw_kube_retry_rl_reserve(&rl), 0);
    nw_kube_retry_rl_cleanup(&rl);
}
END_TEST

START_TEST(backoff_schedule)
{
    nw_kube_backoff_t b;
    int64_t base = 800 * NW_NS_PER_MS, max = 30 * NW_NS_PER_SEC;
    nw_kube_retry_backoff_init(&b, base, max, 120 * NW_NS_PER_SEC, 12345);
    int64_t step = base, t = 0;
    int distinct = 0;
    int64_t prev = -1;
    for (int i = 0; i < 12; i++) {
        int64_t d = nw_kube_retry_backoff_next(&b, t);
        ck_assert_msg(d >= step / 2 && d < step, "attempt %d: %lld not in [%lld,%lld)", i,
                      (long long)d, (long long)(step / 2), (long long)step);
        distinct += d != prev;
        prev = d;
        step = step * 2 > max ? max : step * 2;
        t += d;
    }
    ck_assert_int_gt(distinct, 6); /* jittered */
    /* capped at max */
    ck_assert_int_lt(nw_kube_retry_backoff_next(&b, t), max);
    /* two quiet minutes reset it to the base */
    t += 121 * NW_NS_PER_SEC;
    int64_t d = nw_kube_retry_backoff_next(&b, t);
    ck_assert_int_lt(d, base);
    /* explicit reset too */
    nw_kube_retry_backoff_next(&b, t);
    nw_kube_retry_backoff_next(&b, t);
    nw_kube_retry_backoff_reset(&b);
    ck_assert_int_lt(nw_kube_retry_backoff_next(&b, t), base);
    for (int i = 0; i < 1000; i++) {
        double r = nw_kube_retry_backoff_rand(&b);
        ck_assert(r >= 0.0 && r < 1.0);
    }
}
END_TEST

Suite *nw_kube_stream_suite(void)
{
    Suite *s = suite_create("kube_stream");
    TCase *tc = tcase_create("parser");
    tcase_add_test(tc, parse_whole);
    tcase_add_test(tc, parse_any_boundaries);
    tcase_add_test(tc, parse_byte_at_a_time);
    tcase_add_test(tc, parse_last_event_without_newline);
    tcase_add_test(tc, parse_rejects);
    tcase_add_test(tc, parse_stop);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    tc = tcase_create("resilience");
    tcase_add_test(tc, ratelimit_bucket);
    tcase_add_test(tc, backoff_schedule);
    suite_add_tcase(s, tc);
    return s;
}
