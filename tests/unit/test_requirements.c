/* Unit tests for api/requirements: the operator-pair algebra (tests/data/requirements/
 * pairs.tsv), label matching (match.tsv), Compatible (compat.tsv), parsing
 * (parse.jsonl), and the well-known label helpers. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/requirements.h"
#include "api/wellknown.h"
#include "tests/unit/testutil.h"

Suite *nw_requirements_suite(void);

/* Build a requirement set from the data-file syntax: items joined by "; ", each
 * "[key] Op [v1,v2] [min=N]"; "-" or "" is the empty set. */
static void build(const char *spec, nw_reqs_t *out, const char *ctx)
{
    nw_requirements_init(out);
    if (!*spec || strcmp(spec, "-") == 0)
        return;
    char *copy = strdup(spec);
    char *save = NULL;
    for (char *item = strtok_r(copy, ";", &save); item; item = strtok_r(NULL, ";", &save)) {
        char *tok[8];
        int nt = 0;
        char *s2 = NULL;
        for (char *t = strtok_r(item, " ", &s2); t && nt < 8; t = strtok_r(NULL, " ", &s2))
            tok[nt++] = t;
        ck_assert_msg(nt >= 1, "%s: empty item", ctx);
        const char *key = "k";
        int at = 0;
        nw_req_op_t op;
        if (!nw_requirements_req_op_parse(tok[0], NW_REQS_PARSE_KARPENTER, &op)) {
            key = tok[0];
            at = 1;
            ck_assert_msg(at < nt &&
                              nw_requirements_req_op_parse(tok[at], NW_REQS_PARSE_KARPENTER, &op),
                          "%s: bad operator in '%s'", ctx, spec);
        }
        at++;
        const char *vals[32];
        size_t nv = 0;
        int min_values = 0;
        for (; at < nt; at++) {
            if (strncmp(tok[at], "min=", 4) == 0) {
                min_values = (int)strtol(tok[at] + 4, NULL, 10);
                continue;
            }
            char *s3 = NULL;
            for (char *v = strtok_r(tok[at], ",", &s3); v && nv < 32; v = strtok_r(NULL, ",", &s3))
                vals[nv++] = v;
        }
        nw_err_t err = {0};
        ck_assert_msg(nw_requirements_add(out, key, op, vals, nv, min_values, &err) == NW_OK,
                      "%s: %s", ctx, err.msg);
    }
    free(copy);
}

static bool all_overlap(const nw_reqs_t *a, const nw_reqs_t *b)
{
    for (size_t i = 0; i < a->n; i++) {
        const nw_req_t *rb = nw_requirements_get(b, a->v[i].key);
        if (rb && !nw_requirements_req_has_intersection(&a->v[i], rb))
            return false;
    }
    return true;
}

/* one test per line of tests/data/requirements/pairs.tsv */
static const nw_test_cases_t *pairs_cases;

START_TEST(pairs)
{
    const nw_test_case_t *row = nw_test_case(pairs_cases, _i);
    do {
        char *f[6];
        char ctx[128];
        snprintf(ctx, sizeof ctx, "%s:%d", row->path, row->lineno);
        int nf = nw_test_split_tabs(row->line, f, 6);
        ck_assert_msg(nf == 5, "%s: want 5 fields, got %d", ctx, nf);
        nw_reqs_t a, b, x, y;
        build(f[0], &a, ctx);
        build(f[1], &b, ctx);
        ck_assert_int_eq(nw_requirements_intersect(&a, &b, &x), NW_OK);
        ck_assert_int_eq(nw_requirements_intersect(&b, &a, &y), NW_OK);
        char sx[1024], sy[1024];
        nw_requirements_format(&x, sx, sizeof sx);
        nw_requirements_format(&y, sy, sizeof sy);
        ck_assert_msg(strcmp(sx, f[2]) == 0, "%s: %s ∩ %s\n got: %s\nwant: %s", ctx, f[0], f[1], sx,
                      f[2]);
        ck_assert_msg(strcmp(sy, f[2]) == 0, "%s: B∩A differs: %s", ctx, sy);

        bool ov = strcmp(f[3], "yes") == 0;
        ck_assert_msg(strcmp(f[3], "yes") == 0 || strcmp(f[3], "no") == 0, "%s: overlap?", ctx);
        ck_assert_msg(all_overlap(&a, &b) == ov, "%s: HasIntersection(A,B) != %s", ctx, f[3]);
        ck_assert_msg(all_overlap(&b, &a) == ov, "%s: HasIntersection(B,A) != %s", ctx, f[3]);

        nw_reqs_conflict_t c;
        memset(&c, 0, sizeof c);
        bool ok = nw_requirements_intersects(&a, &b, &c);
        if (strcmp(f[4], "ok") == 0) {
            ck_assert_msg(ok, "%s: unexpected conflict: %s", ctx, c.msg);
        } else {
            ck_assert_msg(!ok, "%s: expected a conflict", ctx);
            ck_assert_msg(strcmp(c.msg, f[4]) == 0, "%s:\n got: %s\nwant: %s", ctx, c.msg, f[4]);
            ck_assert_ptr_nonnull(nw_requirements_get(&a, c.key));
        }
        /* in-place add agrees with intersect */
        ck_assert_int_eq(nw_requirements_add_all(&a, &b), NW_OK);
        nw_requirements_format(&a, sy, sizeof sy);
        ck_assert_str_eq(sy, sx);
        nw_requirements_cleanup(&a);
        nw_requirements_cleanup(&b);
        nw_requirements_cleanup(&x);
        nw_requirements_cleanup(&y);
    } while (0);
}
END_TEST

/* the table covers every operator pair (first word of each operand) */
START_TEST(pairs_cover_every_op)
{
    int seen[8][8] = {{0}};
    for (int i = 0; i < pairs_cases->n; i++) {
        char *f[6];
        nw_req_op_t oa, ob;
        char wa[32], wb[32];
        const nw_test_case_t *row = nw_test_case(pairs_cases, i);
        if (nw_test_split_tabs(row->line, f, 6) >= 2 && sscanf(f[0], "%31s", wa) == 1 &&
            sscanf(f[1], "%31s", wb) == 1 &&
            nw_requirements_req_op_parse(wa, NW_REQS_PARSE_KARPENTER, &oa) &&
            nw_requirements_req_op_parse(wb, NW_REQS_PARSE_KARPENTER, &ob))
            seen[oa][ob] = 1;
    }
    for (int p = 0; p < 8; p++)
        for (int q = 0; q < 8; q++)
            ck_assert_msg(seen[p][q], "pairs.tsv lacks the pair %s x %s",
                          nw_requirements_req_op_str(p), nw_requirements_req_op_str(q));
}
END_TEST

/* "k=v,k2=v2" or "-" */
static void labels_from(char *spec, nw_labels_t *l)
{
    nw_labels_init(l);
    if (strcmp(spec, "-") == 0)
        return;
    char *save = NULL;
    for (char *kv = strtok_r(spec, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        ck_assert_ptr_nonnull(eq);
        *eq = '\0';
        ck_assert_int_eq(nw_labels_set(l, kv, eq + 1), NW_OK);
    }
}

/* one test per line of tests/data/requirements/match.tsv */
static const nw_test_cases_t *match_labels_cases;

START_TEST(match_labels)
{
    const nw_test_case_t *row = nw_test_case(match_labels_cases, _i);
    do {
        char *f[4];
        char ctx[128];
        snprintf(ctx, sizeof ctx, "%s:%d", row->path, row->lineno);
        ck_assert_int_eq(nw_test_split_tabs(row->line, f, 4), 3);
        nw_reqs_t r;
        nw_labels_t lab;
        build(f[0], &r, ctx);
        labels_from(f[1], &lab);
        bool want = strcmp(f[2], "true") == 0;
        nw_reqs_conflict_t c;
        bool got = nw_requirements_match_labels(&r, &lab, &c);
        ck_assert_msg(got == want, "%s: %s vs labels: got %d", ctx, f[0], got);
        if (!got)
            ck_assert_ptr_nonnull(nw_requirements_get(&r, c.key));
        nw_requirements_cleanup(&r);
        nw_labels_cleanup(&lab);
    } while (0);
}
END_TEST

/* one test per line of tests/data/requirements/compat.tsv */
static const nw_test_cases_t *compatible_cases;

START_TEST(compatible)
{
    const nw_test_case_t *row = nw_test_case(compatible_cases, _i);
    do {
        char *f[5];
        char ctx[128];
        snprintf(ctx, sizeof ctx, "%s:%d", row->path, row->lineno);
        ck_assert_int_eq(nw_test_split_tabs(row->line, f, 5), 4);
        nw_reqs_t a, b;
        build(f[0], &a, ctx);
        build(f[1], &b, ctx);
        unsigned flags = 0;
        if (strcmp(f[2], "wellknown") == 0)
            flags = NW_REQS_ALLOW_UNDEFINED_WELL_KNOWN;
        else
            ck_assert_msg(strcmp(f[2], "custom") == 0, "%s: mode", ctx);
        nw_reqs_conflict_t c;
        memset(&c, 0, sizeof c);
        bool ok = nw_requirements_compatible(&a, &b, flags, &c);
        if (strcmp(f[3], "ok") == 0)
            ck_assert_msg(ok, "%s: unexpected: %s", ctx, c.msg);
        else {
            ck_assert_msg(!ok, "%s: expected: %s", ctx, f[3]);
            ck_assert_msg(strcmp(c.msg, f[3]) == 0, "%s:\n got: %s\nwant: %s", ctx, c.msg, f[3]);
        }
        ck_assert_int_eq(nw_requirements_compatible(&a, &b, flags, NULL), ok);
        nw_requirements_cleanup(&a);
        nw_requirements_cleanup(&b);
    } while (0);
}
END_TEST

static void check_error(const cJSON *j, nw_rc_t rc, const nw_err_t *err, const char *ctx)
{
    const char *path = cJSON_GetObjectItemCaseSensitive(j, "path")->valuestring;
    const char *msg = cJSON_GetObjectItemCaseSensitive(j, "msg")->valuestring;
    ck_assert_msg(rc != NW_OK, "%s: expected an error at %s", ctx, path);
    ck_assert_msg(strcmp(err->path, path) == 0, "%s: path %s want %s", ctx, err->path, path);
    ck_assert_msg(strstr(err->msg, msg) != NULL, "%s: msg '%s' lacks '%s'", ctx, err->msg, msg);
}

/* one test per line of tests/data/requirements/parse.jsonl */
static const nw_test_cases_t *parse_cases_cases;

START_TEST(parse_cases)
{
    const nw_test_case_t *row = nw_test_case(parse_cases_cases, _i);
    do {
        char ctx[128];
        snprintf(ctx, sizeof ctx, "%s:%d", row->path, row->lineno);
        const char *end = NULL;
        cJSON *j = cJSON_ParseWithLengthOpts(row->line, strlen(row->line) + 1, &end, 1);
        ck_assert_msg(j != NULL, "%s: bad JSON", ctx);
        const char *fn = cJSON_GetObjectItemCaseSensitive(j, "fn")->valuestring;
        const cJSON *in = cJSON_GetObjectItemCaseSensitive(j, "input");
        const cJSON *expect = cJSON_GetObjectItemCaseSensitive(j, "expect");
        nw_err_t err = {0};
        char s[2048];
        if (strcmp(fn, "terms") == 0) {
            nw_reqs_t *terms = NULL;
            size_t n = 99;
            nw_rc_t rc = nw_requirements_json_parse_terms(in, "p", &terms, &n, &err);
            if (expect) {
                ck_assert_msg(rc == NW_OK, "%s: %s: %s", ctx, err.path, err.msg);
                ck_assert_int_eq((int)n, cJSON_GetArraySize(expect));
                for (size_t t = 0; t < n; t++) {
                    nw_requirements_format(&terms[t], s, sizeof s);
                    ck_assert_str_eq(s, cJSON_GetArrayItem(expect, (int)t)->valuestring);
                }
            } else {
                check_error(j, rc, &err, ctx);
                ck_assert_ptr_null(terms);
                ck_assert_uint_eq(n, 0);
            }
            nw_requirements_json_terms_free(terms, n);
        } else {
            nw_reqs_t r;
            nw_rc_t rc;
            if (strcmp(fn, "list") == 0)
                rc = nw_requirements_json_parse_list(in, "p", 0, &r, &err);
            else if (strcmp(fn, "karpenter") == 0)
                rc = nw_requirements_json_parse_list(in, "p", NW_REQS_PARSE_KARPENTER, &r, &err);
            else if (strcmp(fn, "node_selector") == 0)
                rc = nw_requirements_json_parse_node_selector(in, "p", &r, &err);
            else if (strcmp(fn, "pod") == 0)
                rc = nw_requirements_json_parse_pod_spec(in, "p", 0, &r, &err);
            else if (strcmp(fn, "pod_preferred") == 0)
                rc =
                    nw_requirements_json_parse_pod_spec(in, "p", NW_REQS_PARSE_PREFERRED, &r, &err);
            else
                ck_abort_msg("%s: unknown fn %s", ctx, fn);
            if (expect) {
                ck_assert_msg(rc == NW_OK, "%s: %s: %s", ctx, err.path, err.msg);
                nw_requirements_format(&r, s, sizeof s);
                ck_assert_msg(strcmp(s, expect->valuestring) == 0, "%s: got '%s' want '%s'", ctx, s,
                              expect->valuestring);
            } else {
                check_error(j, rc, &err, ctx);
                ck_assert_uint_eq(r.n, 0);
            }
            nw_requirements_cleanup(&r);
        }
        cJSON_Delete(j);
    } while (0);
}
END_TEST

START_TEST(well_known)
{
    ck_assert(nw_wellknown_is_known("topology.kubernetes.io/zone"));
    ck_assert(nw_wellknown_is_known("karpenter.k8s.aws/instance-cpu-manufacturer"));
    ck_assert(nw_wellknown_is_known("topology.k8s.aws/zone-id"));
    ck_assert(!nw_wellknown_is_known("karpenter.k8s.aws/ec2nodeclass"));
    ck_assert(!nw_wellknown_is_known("kubernetes.io/hostname"));
    ck_assert(!nw_wellknown_is_known("failure-domain.beta.kubernetes.io/zone"));
    size_t n;
    const char *const *all = nw_wellknown_labels(&n);
    ck_assert_uint_eq(n, 36);
    for (size_t i = 0; i < n; i++) {
        ck_assert(nw_labels_key_valid(all[i], NULL));
        ck_assert(nw_wellknown_is_restricted_node_label(all[i]));
    }
    ck_assert_str_eq(nw_wellknown_normalize("failure-domain.beta.kubernetes.io/zone"),
                     "topology.kubernetes.io/zone");
    ck_assert_str_eq(nw_wellknown_normalize("failure-domain.beta.kubernetes.io/region"),
                     "topology.kubernetes.io/region");
    ck_assert_str_eq(nw_wellknown_normalize("beta.kubernetes.io/arch"), "kubernetes.io/arch");
    ck_assert_str_eq(nw_wellknown_normalize("beta.kubernetes.io/os"), "kubernetes.io/os");
    ck_assert_str_eq(nw_wellknown_normalize("beta.kubernetes.io/instance-type"),
                     "node.kubernetes.io/instance-type");
    ck_assert_str_eq(nw_wellknown_normalize("team"), "team");
    ck_assert_str_eq(nw_wellknown_alias("kubernetes.io/arch"), "beta.kubernetes.io/arch");
    ck_assert_ptr_null(nw_wellknown_alias("team"));
    /* the AWS CRDs allow the 27 well-known karpenter.k8s.aws keys and the class label */
    size_t aws = 0;
    for (size_t i = 0; i < n; i++)
        aws += nw_wellknown_aws_allowed(all[i]);
    ck_assert_uint_eq(aws, 27);
    ck_assert(nw_wellknown_aws_allowed("karpenter.k8s.aws/ec2nodeclass"));
    ck_assert(!nw_wellknown_aws_allowed("karpenter.k8s.aws/instance-foo"));
    ck_assert(!nw_wellknown_aws_allowed("topology.k8s.aws/zone-id"));
    /* IsRestrictedNodeLabel */
    ck_assert(nw_wellknown_is_restricted_node_label("kubernetes.io/hostname"));
    ck_assert(nw_wellknown_is_restricted_node_label("karpenter.sh/registered"));
    ck_assert(nw_wellknown_is_restricted_node_label("foo.kubernetes.io/x"));
    ck_assert(nw_wellknown_is_restricted_node_label("k8s.io/x"));
    ck_assert(nw_wellknown_is_restricted_node_label("karpenter.k8s.aws/ec2nodeclass"));
    ck_assert(
        !nw_wellknown_is_restricted_node_label("node.kubernetes.io/exclude-from-external-lb"));
    ck_assert(!nw_wellknown_is_restricted_node_label("node-restriction.kubernetes.io/x"));
    ck_assert(!nw_wellknown_is_restricted_node_label("kops.k8s.io/instancegroup"));
    ck_assert(!nw_wellknown_is_restricted_node_label("team"));
    ck_assert(!nw_wellknown_is_restricted_node_label("example.com/team"));
    ck_assert(!nw_wellknown_is_restricted_node_label("topology.k8s.aws/other"));
}
END_TEST

START_TEST(ops_and_atoi)
{
    nw_req_op_t op;
    const char *names[] = {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"};
    for (int i = 0; i < 8; i++) {
        ck_assert(nw_requirements_req_op_parse(names[i], NW_REQS_PARSE_KARPENTER, &op));
        ck_assert_int_eq(op, i);
        ck_assert_str_eq(nw_requirements_req_op_str(op), names[i]);
        ck_assert_int_eq(nw_requirements_req_op_parse(names[i], 0, &op), i < 6);
    }
    ck_assert(!nw_requirements_req_op_parse("in", NW_REQS_PARSE_KARPENTER, &op));
    ck_assert(!nw_requirements_req_op_parse("", NW_REQS_PARSE_KARPENTER, &op));
    ck_assert(!nw_requirements_req_op_parse("Exists ", NW_REQS_PARSE_KARPENTER, &op));
    int64_t v;
    ck_assert(nw_requirements_req_atoi("+5", &v) && v == 5);
    ck_assert(nw_requirements_req_atoi("-0", &v) && v == 0);
    ck_assert(nw_requirements_req_atoi("007", &v) && v == 7);
    ck_assert(nw_requirements_req_atoi("-9223372036854775808", &v) && v == INT64_MIN);
    ck_assert(!nw_requirements_req_atoi("9223372036854775808", &v));
    ck_assert(!nw_requirements_req_atoi("", &v));
    ck_assert(!nw_requirements_req_atoi("+", &v));
    ck_assert(!nw_requirements_req_atoi("1_000", &v));
    ck_assert(!nw_requirements_req_atoi(" 1", &v));
    ck_assert(!nw_requirements_req_atoi("0x10", &v));
}
END_TEST

START_TEST(any_value)
{
    nw_reqs_t r;
    char buf[32];
    build("a In z,b; b NotIn 0,1,3; c Exists; d DoesNotExist; e Gt 7; f Lt -4; g Gte 5; g Lte 4; "
          "h NotIn 5; h Gte 5; h Lte 6",
          &r, "any");
    ck_assert(nw_requirements_req_any(nw_requirements_get(&r, "a"), buf, sizeof buf));
    ck_assert_str_eq(buf, "b");
    ck_assert(nw_requirements_req_any(nw_requirements_get(&r, "b"), buf, sizeof buf));
    ck_assert_str_eq(buf, "2");
    ck_assert(nw_requirements_req_any(nw_requirements_get(&r, "c"), buf, sizeof buf));
    ck_assert_str_eq(buf, "0");
    ck_assert(!nw_requirements_req_any(nw_requirements_get(&r, "d"), buf, sizeof buf));
    ck_assert(nw_requirements_req_any(nw_requirements_get(&r, "e"), buf, sizeof buf));
    ck_assert_str_eq(buf, "8");
    ck_assert(nw_requirements_req_any(nw_requirements_get(&r, "f"), buf, sizeof buf));
    ck_assert(nw_requirements_req_has(nw_requirements_get(&r, "f"), buf));
    ck_assert(!nw_requirements_req_any(nw_requirements_get(&r, "g"), buf,
                                       sizeof buf)); /* crossed: DoesNotExist */
    ck_assert(nw_requirements_req_any(nw_requirements_get(&r, "h"), buf, sizeof buf));
    ck_assert_str_eq(buf, "6");
    /* every value Any returns satisfies the requirement */
    for (size_t i = 0; i < r.n; i++)
        if (nw_requirements_req_any(&r.v[i], buf, sizeof buf))
            ck_assert_msg(nw_requirements_req_has(&r.v[i], buf), "%s: %s", r.v[i].key, buf);
    nw_requirements_cleanup(&r);
}
END_TEST

START_TEST(misc)
{
    nw_reqs_t r, c;
    build("kubernetes.io/hostname In n1; z In a", &r, "misc");
    char s[128];
    nw_requirements_format(&r, s, sizeof s);
    ck_assert_str_eq(s, "z In [a]"); /* String() leaves out kubernetes.io/hostname */
    ck_assert(nw_requirements_has(&r, "kubernetes.io/hostname"));
    ck_assert(!nw_requirements_has(&r, "y"));
    nw_requirements_init(&c);
    ck_assert_int_eq(nw_requirements_copy(&c, &r), NW_OK);
    nw_requirements_cleanup(&r);
    ck_assert_uint_eq(c.n, 2);
    ck_assert(nw_requirements_req_has(nw_requirements_get(&c, "z"), "a"));
    ck_assert(!nw_requirements_req_is_empty(nw_requirements_get(&c, "z")));
    /* truncation reports the full length */
    char small[4];
    ck_assert_uint_eq(nw_requirements_req_format(nw_requirements_get(&c, "z"), small, sizeof small),
                      8);
    ck_assert_str_eq(small, "z I");
    nw_requirements_cleanup(&c);

    /* from labels: In [value], keys normalised */
    nw_labels_t l;
    nw_labels_init(&l);
    ck_assert_int_eq(nw_labels_set(&l, "beta.kubernetes.io/os", "linux"), NW_OK);
    ck_assert_int_eq(nw_requirements_from_labels(&l, &r), NW_OK);
    nw_requirements_format(&r, s, sizeof s);
    ck_assert_str_eq(s, "kubernetes.io/os In [linux]");
    nw_requirements_cleanup(&r);
    nw_labels_cleanup(&l);

    /* nw_requirements_add rejects bad numeric operands */
    nw_requirements_init(&r);
    nw_err_t err = {0};
    const char *bad[] = {"x"};
    ck_assert_int_eq(nw_requirements_add(&r, "k", NW_REQ_GT, bad, 1, 0, &err), NW_EINVAL);
    ck_assert_str_eq(err.msg, "key k with operator Gt must have a single integer value");
    ck_assert_int_eq(nw_requirements_add(&r, "k", NW_REQ_LTE, NULL, 0, 0, NULL), NW_EINVAL);
    ck_assert_uint_eq(r.n, 0);
    nw_requirements_cleanup(&r);
}
END_TEST

/* "$(c*N)" expands to N copies of c */
static void expand(const char *in, char *out, size_t n)
{
    unsigned cnt;
    char c;
    int used = 0;
    if (sscanf(in, "$(%c*%u)%n", &c, &cnt, &used) == 2 && used > 0 && in[used] == '\0') {
        ck_assert_uint_lt(cnt, n);
        memset(out, c, cnt);
        out[cnt] = '\0';
    } else {
        snprintf(out, n, "%s", in);
    }
}

/* one test per line of tests/data/requirements/validate.tsv */
static const nw_test_cases_t *validate_runtime_cases;

START_TEST(validate_runtime)
{
    const nw_test_case_t *row = nw_test_case(validate_runtime_cases, _i);
    do {
        char *f[6];
        char ctx[128];
        snprintf(ctx, sizeof ctx, "%s:%d", row->path, row->lineno);
        ck_assert_msg(nw_test_split_tabs(row->line, f, 6) == 5, "%s: 5 fields", ctx);
        const char *vals[16];
        char vbuf[16][128];
        size_t nv = 0;
        if (strcmp(f[2], "-") != 0) {
            char *save = NULL;
            for (char *v = strtok_r(f[2], ",", &save); v && nv < 16;
                 v = strtok_r(NULL, ",", &save)) {
                expand(v, vbuf[nv], sizeof vbuf[nv]);
                vals[nv] = vbuf[nv];
                nv++;
            }
        }
        char msg[8192];
        int n = nw_requirements_validate_requirement(f[0], f[1], vals, nv,
                                                     (int)strtol(f[3], NULL, 10), msg, sizeof msg);
        if (strcmp(f[4], "ok") == 0) {
            ck_assert_msg(n == 0, "%s: unexpected: %s", ctx, msg);
            ck_assert_str_eq(msg, "");
        } else if (f[4][0] == '~') {
            ck_assert_msg(n > 0 && strstr(msg, f[4] + 1), "%s: '%s' lacks '%s'", ctx, msg,
                          f[4] + 1);
        } else {
            ck_assert_msg(n > 0 && strcmp(msg, f[4]) == 0, "%s:\n got: %s\nwant: %s", ctx, msg,
                          f[4]);
        }
    } while (0);
}
END_TEST

START_TEST(validate_json_wrapper)
{
    /* the JSON wrapper: one error per bad item, Karpenter's wrapping */
    cJSON *j = cJSON_Parse("[{\"key\":\"team\",\"operator\":\"In\",\"values\":[\"a\"]},"
                           "{\"key\":\"team\",\"operator\":\"In\",\"values\":[]},"
                           "{\"key\":\"a\",\"operator\":\"In\",\"values\":[\"x\"],"
                           "\"minValues\":2},7,{\"key\":\"k\",\"operator\":\"In\","
                           "\"values\":[1]}]");
    nw_errs_t errs;
    nw_err_list_init(&errs);
    ck_assert_int_eq(nw_requirements_validate_runtime(j, "spec.template.spec.requirements", &errs),
                     4);
    ck_assert_uint_eq(errs.n, 4);
    ck_assert_str_eq(errs.v[0].path, "spec.template.spec.requirements[1]");
    ck_assert_str_eq(errs.v[0].msg, "invalid value: key team with operator In must have a value "
                                    "defined in requirements, restricted");
    ck_assert_str_eq(errs.v[1].path, "spec.template.spec.requirements[2]");
    ck_assert_ptr_nonnull(strstr(errs.v[1].msg, "at least minimum number of values"));
    ck_assert_str_eq(errs.v[2].path, "spec.template.spec.requirements[3]");
    ck_assert_str_eq(errs.v[3].path, "spec.template.spec.requirements[4]");
    cJSON_Delete(j);
    char small[16];
    ck_assert_int_eq(
        nw_requirements_validate_requirement("team", "In", NULL, 0, 0, small, sizeof small), 1);
    ck_assert_uint_eq(strlen(small), 15);
    ck_assert_int_eq(nw_requirements_validate_requirement("team", "Gt", NULL, 0, 0, NULL, 0), 1);
}
END_TEST

Suite *nw_requirements_suite(void)
{
    Suite *s = suite_create("requirements");
    TCase *tc = tcase_create("core");
    pairs_cases = nw_test_cases_lines("tests/data/requirements/pairs.tsv", 60);
    nw_test_add_cases(tc, pairs, pairs_cases);
    tcase_add_test(tc, pairs_cover_every_op);
    match_labels_cases = nw_test_cases_lines("tests/data/requirements/match.tsv", 30);
    nw_test_add_cases(tc, match_labels, match_labels_cases);
    compatible_cases = nw_test_cases_lines("tests/data/requirements/compat.tsv", 25);
    nw_test_add_cases(tc, compatible, compatible_cases);
    parse_cases_cases = nw_test_cases_lines("tests/data/requirements/parse.jsonl", 40);
    nw_test_add_cases(tc, parse_cases, parse_cases_cases);
    tcase_add_test(tc, well_known);
    tcase_add_test(tc, ops_and_atoi);
    tcase_add_test(tc, any_value);
    tcase_add_test(tc, misc);
    validate_runtime_cases = nw_test_cases_lines("tests/data/requirements/validate.tsv", 25);
    nw_test_add_cases(tc, validate_runtime, validate_runtime_cases);
    tcase_add_test(tc, validate_json_wrapper);
    suite_add_tcase(s, tc);
    return s;
}
