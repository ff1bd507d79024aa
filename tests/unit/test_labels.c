/* Unit tests for api/labels: validation (cases in tests/data/labels/validation.tsv)
 * and the label set. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/labels.h"
#include "tests/unit/testutil.h"

Suite *nw_labels_suite(void);

#define CASES "tests/data/labels/validation.tsv"

/* Expand $(c*N) and "" in a data-file input. Returns a malloc'd string. */
static char *expand(const char *in)
{
    if (strcmp(in, "\"\"") == 0)
        return strdup("");
    size_t cap = strlen(in) + 1024, n = 0;
    char *out = malloc(cap);
    ck_assert_ptr_nonnull(out);
    for (const char *p = in; *p;) {
        unsigned cnt;
        char c;
        int used = 0;
        if (p[0] == '$' && p[1] == '(' && sscanf(p, "$(%c*%u)%n", &c, &cnt, &used) == 2 &&
            used > 0) {
            ck_assert_uint_lt(cnt, 1000);
            for (unsigned i = 0; i < cnt; i++)
                out[n++] = c;
            p += used;
        } else {
            out[n++] = *p++;
        }
        ck_assert_uint_lt(n, cap - 1);
    }
    out[n] = '\0';
    return out;
}

typedef struct {
    char *name[32];
    char *text[32];
    int n;
} macros_t;

static const char *macro(const macros_t *m, const char *tok)
{
    for (int i = 0; i < m->n; i++)
        if (strcmp(m->name[i], tok) == 0)
            return m->text[i];
    ck_abort_msg("unknown macro %s", tok);
    return NULL;
}

/* Build the expected joined text: expand @NAME tokens separated by " || ". */
static void expected_text(const macros_t *m, const char *exp, char *buf, size_t n)
{
    buf[0] = '\0';
    const char *p = exp;
    int first = 1;
    while (*p) {
        const char *sep = strstr(p, " || ");
        size_t len = sep ? (size_t)(sep - p) : strlen(p);
        char tok[1024];
        ck_assert_uint_lt(len, sizeof tok);
        memcpy(tok, p, len);
        tok[len] = '\0';
        const char *t = tok[0] == '@' ? macro(m, tok) : tok;
        size_t cur = strlen(buf);
        snprintf(buf + cur, n - cur, "%s%s", first ? "" : " || ", t);
        first = 0;
        p = sep ? sep + 4 : p + len;
    }
}

/* one test per line of CASES; "@NAME<TAB>text" lines define the macros the expected
 * messages use (every case sees every macro of the file) */
static const nw_test_cases_t *validation_cases_cases;

/* the macros of the table, from private copies of its "@" lines (freed by the caller) */
static void load_macros(macros_t *m, char **copies)
{
    for (int i = 0; i < validation_cases_cases->n; i++) {
        const char *line = validation_cases_cases->v[i].text;
        if (line[0] != '@')
            continue;
        ck_assert_int_lt(m->n, 32);
        char *f[3];
        copies[m->n] = strdup(line);
        ck_assert_ptr_nonnull(copies[m->n]);
        ck_assert_msg(nw_test_split_tabs(copies[m->n], f, 3) == 2, "%s: want @NAME<TAB>text",
                      validation_cases_cases->v[i].name);
        m->name[m->n] = f[0];
        m->text[m->n] = f[1];
        m->n++;
    }
}

START_TEST(validation_cases)
{
    const nw_test_case_t *row = nw_test_case(validation_cases_cases, _i);
    macros_t m = {0};
    char *copies[32];
    load_macros(&m, copies);
    do {
        if (row->line[0] == '@')
            continue; /* a macro (load_macros checks it) */
        char *f[4];
        int nf = nw_test_split_tabs(row->line, f, 4);
        ck_assert_msg(nf == 3, "%s:%d: want 3 fields", CASES, row->lineno);
        char *in = expand(f[1]);
        nw_labels_msgs_t msgs;
        bool ok;
        if (strcmp(f[0], "key") == 0)
            ok = nw_labels_key_valid(in, &msgs);
        else if (strcmp(f[0], "value") == 0)
            ok = nw_labels_value_valid(in, &msgs);
        else if (strcmp(f[0], "subdomain") == 0)
            ok = nw_labels_dns1123_subdomain_valid(in, &msgs);
        else if (strcmp(f[0], "dnslabel") == 0)
            ok = nw_labels_dns1123_label_valid(in, &msgs);
        else
            ck_abort_msg("%s:%d: unknown function %s", CASES, row->lineno, f[0]);
        char got[4096], want[4096];
        nw_labels_msgs_join(&msgs, " || ", got, sizeof got);
        if (strcmp(f[2], "ok") == 0) {
            ck_assert_msg(ok && msgs.n == 0, "%s:%d: %s(%s) should be valid, got: %s", CASES,
                          row->lineno, f[0], f[1], got);
        } else {
            expected_text(&m, f[2], want, sizeof want);
            ck_assert_msg(!ok, "%s:%d: %s(%s) should be invalid", CASES, row->lineno, f[0], f[1]);
            ck_assert_msg(strcmp(got, want) == 0, "%s:%d: %s(%s)\n got: %s\nwant: %s", CASES,
                          row->lineno, f[0], f[1], got, want);
        }
        /* the NULL-msgs form must agree */
        bool ok2 = strcmp(f[0], "key") == 0         ? nw_labels_key_valid(in, NULL)
                   : strcmp(f[0], "value") == 0     ? nw_labels_value_valid(in, NULL)
                   : strcmp(f[0], "subdomain") == 0 ? nw_labels_dns1123_subdomain_valid(in, NULL)
                                                    : nw_labels_dns1123_label_valid(in, NULL);
        ck_assert_int_eq(ok, ok2);
        free(in);
    } while (0);
    for (int i = 0; i < m.n; i++)
        free(copies[i]);
}
END_TEST

START_TEST(join_truncates)
{
    nw_labels_msgs_t m = {.v = {"abc", "defg"}, .n = 2};
    char buf[6];
    ck_assert_uint_eq(nw_labels_msgs_join(&m, ", ", buf, sizeof buf), 9);
    ck_assert_str_eq(buf, "abc, ");
    char big[32];
    nw_labels_msgs_join(&m, ", ", big, sizeof big);
    ck_assert_str_eq(big, "abc, defg");
}
END_TEST

START_TEST(domain)
{
    char b[64];
    ck_assert_uint_eq(nw_labels_domain("karpenter.sh/nodepool", b, sizeof b), 12);
    ck_assert_str_eq(b, "karpenter.sh");
    ck_assert_uint_eq(nw_labels_domain("plain", b, sizeof b), 0);
    ck_assert_str_eq(b, "");
}
END_TEST

START_TEST(set_get_remove)
{
    nw_labels_t l;
    nw_labels_init(&l);
    ck_assert_ptr_null(nw_labels_get(&l, "a"));
    const char *keys[] = {"zone", "arch", "m", "b", "zz", "a"};
    for (size_t i = 0; i < 6; i++)
        ck_assert_int_eq(nw_labels_set(&l, keys[i], keys[i]), NW_OK);
    ck_assert_uint_eq(l.n, 6);
    for (size_t i = 1; i < l.n; i++) /* sorted */
        ck_assert_int_lt(strcmp(l.v[i - 1].key, l.v[i].key), 0);
    ck_assert_str_eq(nw_labels_get(&l, "m"), "m");
    ck_assert_int_eq(nw_labels_set(&l, "m", "new"), NW_OK);
    ck_assert_uint_eq(l.n, 6);
    ck_assert_str_eq(nw_labels_get(&l, "m"), "new");
    ck_assert(nw_labels_remove(&l, "arch"));
    ck_assert(!nw_labels_remove(&l, "arch"));
    ck_assert_ptr_null(nw_labels_get(&l, "arch"));
    ck_assert_uint_eq(l.n, 5);
    nw_labels_t c;
    nw_labels_init(&c);
    ck_assert_int_eq(nw_labels_copy(&c, &l), NW_OK);
    nw_labels_cleanup(&l);
    ck_assert_uint_eq(c.n, 5);
    ck_assert_str_eq(nw_labels_get(&c, "zz"), "zz");
    nw_labels_cleanup(&c);
    nw_labels_cleanup(&c); /* idempotent */
}
END_TEST

START_TEST(parse)
{
    const char *ok = "{\"kubernetes.io/arch\":\"amd64\",\"b\":\"\"}";
    cJSON *j = cJSON_Parse(ok);
    nw_labels_t l;
    nw_err_t err = {0};
    ck_assert_int_eq(nw_labels_parse(j, "spec.nodeSelector", &l, &err), NW_OK);
    ck_assert_uint_eq(l.n, 2);
    ck_assert_str_eq(nw_labels_get(&l, "kubernetes.io/arch"), "amd64");
    ck_assert_str_eq(nw_labels_get(&l, "b"), "");
    nw_labels_cleanup(&l);
    cJSON_Delete(j);

    j = cJSON_Parse("{\"a\":\"x\",\"n\":5}");
    ck_assert_int_eq(nw_labels_parse(j, "spec.nodeSelector", &l, &err), NW_EINVAL);
    ck_assert_str_eq(err.path, "spec.nodeSelector[n]");
    ck_assert_ptr_nonnull(strstr(err.msg, "must be of type string"));
    ck_assert_uint_eq(l.n, 0);
    cJSON_Delete(j);

    nw_err_clear(&err);
    j = cJSON_Parse("[1]");
    ck_assert_int_eq(nw_labels_parse(j, "metadata.labels", &l, &err), NW_EINVAL);
    ck_assert_str_eq(err.path, "metadata.labels");
    ck_assert_ptr_nonnull(strstr(err.msg, "object"));
    cJSON_Delete(j);

    ck_assert_int_eq(nw_labels_parse(NULL, "x", &l, NULL), NW_OK);
    ck_assert_uint_eq(l.n, 0);
}
END_TEST

Suite *nw_labels_suite(void)
{
    Suite *s = suite_create("labels");
    TCase *tc = tcase_create("core");
    validation_cases_cases = nw_test_cases_lines(CASES, 60);
    nw_test_add_cases(tc, validation_cases, validation_cases_cases);
    tcase_add_test(tc, join_truncates);
    tcase_add_test(tc, domain);
    tcase_add_test(tc, set_get_remove);
    tcase_add_test(tc, parse);
    suite_add_tcase(s, tc);
    return s;
}
