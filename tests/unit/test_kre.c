/*
 * Unit tests for api/kre: each CRD pattern's direct matcher decides what its POSIX
 * translation decides. Three sources of strings, each checked against both:
 * - every string up to three bytes over an alphabet of the characters the patterns
 *   care about (their classes' edges, separators, units, suffixes);
 * - 20,000 seeded random concatenations of 1 to 8 tokens (prefixes, units, digits,
 *   separators), which build the long well-formed and nearly well-formed cases;
 * - named examples with the answer Karpenter's CRDs give, so an oracle and a matcher
 *   that agree on nonsense still fail.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/kre.h"

Suite *nw_kre_suite(void);

static const char ALPHABET[] = "aA0z19-._/@%+ehmsiKMnkEGTt\n \t:";

/* Both answers for every pattern with a direct matcher; returns how many were compared
 * (fails the test on the first disagreement). */
static int agree(const char *s)
{
    int n = 0;
    for (int id = 0; id < NW_RE__COUNT; id++) {
        const nw_kv_re_t *re = nw_kre((nw_re_id_t)id);
        if (!re->direct)
            continue;
        bool want = nw_kval_re_match_posix(re, s), got = re->direct(s);
        ck_assert_msg(want == got, "pattern %s on \"%s\": regex %d, direct %d", re->re2, s, want,
                      got);
        n++;
    }
    return n;
}

START_TEST(kre_direct_matchers_exist)
{
    int n = 0;
    for (int id = 0; id < NW_RE__COUNT; id++) {
        const nw_kv_re_t *re = nw_kre((nw_re_id_t)id);
        ck_assert_msg(re->ok, "pattern %s does not compile", re->re2);
        n += re->direct != NULL;
    }
    /* every pattern: no regex engine (and its lock) on the admission path */
    ck_assert_int_eq(n, NW_RE__COUNT);
}
END_TEST

START_TEST(kre_exhaustive_short)
{
    size_t k = strlen(ALPHABET);
    char s[4];
    long compared = 0;
    compared += agree("");
    for (size_t a = 0; a < k; a++) {
        s[0] = ALPHABET[a], s[1] = 0;
        compared += agree(s);
        for (size_t b = 0; b < k; b++) {
            s[1] = ALPHABET[b], s[2] = 0;
            compared += agree(s);
            for (size_t c = 0; c < k; c++) {
                s[2] = ALPHABET[c], s[3] = 0;
                compared += agree(s);
            }
        }
    }
    ck_assert_int_gt(compared, (long)(k * k * k));
}
END_TEST

START_TEST(kre_random_tokens)
{
    static const char *tok[] = {"a",   "Z",   "0",     "42",          "-",     ".",    "_",
                                "/",   "@",   "%",     "+",           "h",     "m",    "s",
                                "0s",  "100", "Ki",    "Gi",          "e",     "E",    "k",
                                "n",   ".5",  "ami-",  "sg-",         "cr-",   "pg-",  "subnet-",
                                " ",   "\n",  "Never", "example.com", "1234",  "5678", "9012",
                                "x-y", "a.b", "\t",    "latest",      "al2023"};
    size_t ntok = sizeof tok / sizeof tok[0];
    uint64_t x = 0x9e3779b97f4a7c15u;
    char s[256];
    for (int i = 0; i < 20000; i++) {
        size_t len = 0;
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int parts = 1 + (int)(x % 8);
        for (int j = 0; j < parts; j++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            const char *t = tok[x % ntok];
            size_t tl = strlen(t);
            if (len + tl >= sizeof s)
                break;
            memcpy(s + len, t, tl);
            len += tl;
        }
        s[len] = 0;
        agree(s);
    }
}
END_TEST

typedef struct {
    nw_re_id_t id;
    const char *s;
    bool match;
} example_t;

/* answers as Karpenter v1.14.1's CRD patterns give them */
static const example_t EXAMPLES[] = {
    {NW_RE_QNAME, "karpenter.sh/nodepool", true},
    {NW_RE_QNAME, "node.kubernetes.io/instance-type", true},
    {NW_RE_QNAME, "Example.com/x", false}, /* prefix is lower case */
    {NW_RE_QNAME, "a..b/c", false},
    {NW_RE_QNAME, "a/b/c", false},
    {NW_RE_QNAME, "team_A.v2", true},
    {NW_RE_QNAME, "-a", false},
    {NW_RE_LABEL_VALUE, "", true},
    {NW_RE_LABEL_VALUE, "on-demand", true},
    {NW_RE_LABEL_VALUE, "x.", false},
    {NW_RE_DUR_NEVER, "720h", true},
    {NW_RE_DUR_NEVER, "Never", true},
    {NW_RE_DUR_NEVER, "1h30m", true},
    {NW_RE_DUR_NEVER, "1.5h", false},
    {NW_RE_DUR_NEVER, "never", false},
    {NW_RE_DUR, "", false},
    {NW_RE_BUDGET_DUR, "8h", true},
    {NW_RE_BUDGET_DUR, "1h30m0s", true},
    {NW_RE_BUDGET_DUR, "10s", false},
    {NW_RE_BUDGET_NODES, "10%", true},
    {NW_RE_BUDGET_NODES, "100%", true},
    {NW_RE_BUDGET_NODES, "101%", false},
    {NW_RE_BUDGET_NODES, "250", true},
    {NW_RE_QUANTITY, "1.5Gi", true},
    {NW_RE_QUANTITY, "100m", true},
    {NW_RE_QUANTITY, "1e3", true},
    {NW_RE_QUANTITY, "1Mi5", false},
    {NW_RE_QUANTITY, "K", false},
    {NW_RE_GROUP, "karpenter.k8s.aws", true},
    {NW_RE_GROUP, "a/b", false},
    {NW_RE_ALIAS, "al2023@latest", true},
    {NW_RE_ALIAS, "al2023@", false},
    {NW_RE_AMI_ID, "ami-0123456789abcdef0", true},
    {NW_RE_AMI_ID, "ami-", false},
    {NW_RE_SUBNET_ID, "subnet-0abc", true},
    {NW_RE_SG_ID, "sg-X", false},
    {NW_RE_CR_ID, "cr-0123abcd", true},
    {NW_RE_OWNER_ID, "123456789012", true},
    {NW_RE_OWNER_ID, "1234567890123", false},
    {NW_RE_PG_ID, "pg-0a", true},
    {NW_RE_CRON, "@daily", true},
    {NW_RE_CRON, "@dailyish", true}, /* the first branch is a prefix */
    {NW_RE_CRON, "0 9 * * mon-fri", true},
    {NW_RE_CRON, "0 9 * *", false},
    {NW_RE_CRON, "x\n0 9 * * 1", true}, /* the second branch is a suffix */
    {NW_RE_CRON, "0 9 * * 1\n", false},
    {NW_RE_DATETIME, "2026-12-01T09:30:00Z", true},
    {NW_RE_DATETIME, "2026-12-01 09:30:00.123+01:00", true},
    {NW_RE_DATETIME, "2026-12-01T09:30Z", false},
    {NW_RE_EVICT, "", true},
    {NW_RE_EVICT, "5%", true},
    {NW_RE_EVICT, "10.5%", true},
    {NW_RE_EVICT, "100.00%", true},
    {NW_RE_EVICT, "100.5%", false},
    {NW_RE_EVICT, "500Mi", true},
    {NW_RE_VOLUME_SIZE, "100Gi", true},
    {NW_RE_VOLUME_SIZE, "59001Gi", false},
    {NW_RE_VOLUME_SIZE, "64000G", true},
    {NW_RE_VOLUME_SIZE, "Ti", true},
    {NW_RE_VOLUME_SIZE, "18Ti", false},
    {NW_RE_VOLUME_SIZE, "64T", true},
    {NW_RE_VOLUME_SIZE, "065T", false},
};

START_TEST(kre_examples)
{
    const example_t *e = &EXAMPLES[_i];
    const nw_kv_re_t *re = nw_kre(e->id);
    ck_assert_msg(nw_kval_re_match(re, e->s) == e->match, "%s on \"%s\": want %d", re->re2, e->s,
                  e->match);
    ck_assert_msg(nw_kval_re_match_posix(re, e->s) == e->match, "regex %s on \"%s\": want %d",
                  re->re2, e->s, e->match);
}
END_TEST

/* a budget schedule of 7 MiB (kube-apiserver would refuse the object for its size, but
 * the webhook still reads it): judged in one pass; a backtracking engine took seconds
 * for 60 kB, so this would never end within the test's timeout */
START_TEST(kre_cron_long_input)
{
    size_t n = 7u << 20;
    char *s = malloc(n + 1);
    ck_assert_ptr_nonnull(s);
    for (size_t i = 0; i < n; i++)
        s[i] = (i % 7 == 3) ? ' ' : '1';
    s[n] = 0;
    ck_assert(nw_kval_re_match(nw_kre(NW_RE_CRON), s));
    s[n - 1] = '\n'; /* the last field may not end in a newline */
    ck_assert(!nw_kval_re_match(nw_kre(NW_RE_CRON), s));
    free(s);
}
END_TEST

Suite *nw_kre_suite(void)
{
    Suite *s = suite_create("kre");
    TCase *tc = tcase_create("direct matchers vs regex");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, kre_direct_matchers_exist);
    tcase_add_test(tc, kre_exhaustive_short);
    tcase_add_test(tc, kre_random_tokens);
    tcase_add_test(tc, kre_cron_long_input);
    tcase_add_loop_test(tc, kre_examples, 0, (int)(sizeof EXAMPLES / sizeof EXAMPLES[0]));
    suite_add_tcase(s, tc);
    return s;
}
