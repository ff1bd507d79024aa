/* Unit tests for scaler/disrupt/drift: the drift rules as data
 * (tests/data/drift/base.json + cases.jsonl) and the reason names. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/clock.h"
#include "scaler/cloud/catalog.h"
#include "scaler/disrupt/drift.h"
#include "api/drifthash.h"
#include "tests/unit/ctlfix.h"
#include "tests/unit/testutil.h"

Suite *nw_drift_suite(void);

static cJSON *parse(const char *text, const char *what)
{
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(text, strlen(text) + 1, &end, 1);
    ck_assert_msg(j != NULL, "%s: bad JSON", what);
    return j;
}

typedef struct {
    const char *ids[16], *arch[16], *subnets[16], *sgs[16];
    nw_drift_class_t c;
} resolved_t;

static void resolved_from(const cJSON *j, resolved_t *r)
{
    memset(r, 0, sizeof *r);
    const cJSON *a;
    cJSON_ArrayForEach(a, nw_json_get(j, "amis"))
    {
        r->ids[r->c.namis] = nw_json_str(a, "id");
        r->arch[r->c.namis++] = nw_json_str(a, "arch");
    }
    cJSON_ArrayForEach(a, nw_json_get(j, "subnets")) r->subnets[r->c.nsubnets++] = a->valuestring;
    cJSON_ArrayForEach(a, nw_json_get(j, "sgs")) r->sgs[r->c.nsgs++] = a->valuestring;
    r->c.ami_ids = r->ids;
    r->c.ami_arch = r->arch;
    r->c.subnet_ids = r->subnets;
    r->c.sg_ids = r->sgs;
    r->c.placement_group = nw_json_str(j, "placementGroup"); /* absent: not known */
}

typedef struct {
    const char *sgs[16];
    nw_drift_instance_t i;
} instance_t;

static void instance_from(const cJSON *j, instance_t *in)
{
    memset(in, 0, sizeof *in);
    in->i.image_id = nw_json_str(j, "image");
    in->i.subnet_id = nw_json_str(j, "subnet");
    const cJSON *a;
    cJSON_ArrayForEach(a, nw_json_get(j, "sgs")) in->sgs[in->i.nsg++] = a->valuestring;
    in->i.sg_ids = in->sgs;
}

static nw_catalog_t *catalog(void)
{
    nw_catalog_t *cat = NULL;
    ck_assert_int_eq(nw_catalog_new_embedded("us-west-2", &cat, NULL), NW_OK);
    nw_catalog_zone_t z[] = {{"us-west-2a", "usw2-az1"}, {"us-west-2b", "usw2-az2"}};
    ck_assert_int_eq(nw_catalog_set_zones(cat, z, 2, NULL), NW_OK);
    return cat;
}

/* one test per line of tests/data/drift/cases.jsonl */
static const nw_test_cases_t *cases_cases;

START_TEST(cases)
{
    const nw_test_case_t *row = nw_test_case(cases_cases, _i);
    char *btxt = nw_test_read_file("tests/data/drift/base.json", NULL);
    cJSON *base = parse(btxt, "base.json");
    free(btxt);
    nw_catalog_t *cat = catalog();
    do {
        cJSON *c = parse(row->line, "case");
        const char *name = nw_json_str(c, "name");
        cJSON *pool = cJSON_Duplicate(nw_json_get(base, "nodepool"), 1);
        cJSON *class = cJSON_Duplicate(nw_json_get(base, "nodeclass"), 1);
        cJSON *nc = cJSON_Duplicate(nw_json_get(base, "nodeclaim"), 1);
        ck_assert_int_eq(nw_drifthash_stamp_nodeclaim(nc, pool, class, NULL, NULL), NW_OK);
        if (nw_json_get(c, "nodepool"))
            ctlfix_merge(pool, nw_json_get(c, "nodepool"));
        if (nw_json_get(c, "nodeclaim"))
            ctlfix_merge(nc, nw_json_get(c, "nodeclaim"));
        /* here JSON null means "none" (not "absent": absent keeps the base's) */
        const cJSON *cp = cJSON_GetObjectItemCaseSensitive(c, "nodeclass");
        if (cJSON_IsNull(cp)) {
            cJSON_Delete(class);
            class = NULL;
        } else if (cp)
            ctlfix_merge(class, cp);
        const cJSON *rj = cJSON_GetObjectItemCaseSensitive(c, "resolved");
        const cJSON *ij = cJSON_GetObjectItemCaseSensitive(c, "instance");
        if (!rj)
            rj = nw_json_get(base, "resolved");
        if (!ij)
            ij = nw_json_get(base, "instance");
        resolved_t r;
        instance_t inst;
        resolved_from(rj, &r);
        instance_from(ij, &inst);
        const char *now_s = nw_json_str(c, "now");
        int64_t now = 0;
        ck_assert_int_eq(nw_clock_time_parse(now_s ? now_s : "2026-11-30T00:30:00Z", &now), NW_OK);
        nw_node_claim_t *rec = NULL;
        nw_err_t derr = {0};
        ck_assert_msg(nw_node_claim_decode(nc, &rec, &derr) == NW_OK, "%s: %s: %s", name, derr.path,
                      derr.msg);
        nw_drift_in_t in = {
            rec, pool, class, cJSON_IsNull(rj) ? NULL : &r.c, cJSON_IsNull(ij) ? NULL : &inst.i,
            cat, now,  NULL};
        char detail[1024];
        nw_drift_reason_t got = nw_drift_check(&in, detail, sizeof detail);
        const char *want = nw_json_str(c, "expect");
        ck_assert_msg(want && strcmp(nw_drift_reason_str(got), want) == 0,
                      "%s (line %d): got \"%s\" (%s), want \"%s\"", name, row->lineno,
                      nw_drift_reason_str(got), detail, want ? want : "?");
        const char *sub = nw_json_str(c, "detail");
        if (sub)
            ck_assert_msg(strstr(detail, sub), "%s: detail \"%s\" lacks \"%s\"", name, detail, sub);
        if (got == NW_DRIFT_NONE)
            ck_assert_str_eq(detail, "");
        cJSON_Delete(pool);
        cJSON_Delete(class);
        nw_node_claim_free(rec);
        cJSON_Delete(nc);
        cJSON_Delete(c);
    } while (0);
    nw_catalog_free(cat);
    cJSON_Delete(base);
}
END_TEST

START_TEST(reason_names)
{
    for (int r = NW_DRIFT_NONE + 1; r < NW_DRIFT_REASONS; r++) {
        const char *s = nw_drift_reason_str((nw_drift_reason_t)r);
        ck_assert_int_gt((int)strlen(s), 0);
        ck_assert_int_eq(nw_drift_reason_parse(s), r);
    }
    ck_assert_str_eq(nw_drift_reason_str(NW_DRIFT_AMI), "AMIDrift");
    ck_assert_str_eq(nw_drift_reason_str(NW_DRIFT_NODEPOOL), "NodePoolDrifted");
    ck_assert_int_eq(nw_drift_reason_parse("Bogus"), NW_DRIFT_NONE);
    ck_assert_int_eq(nw_drift_reason_parse(NULL), NW_DRIFT_NONE);
    ck_assert_str_eq(nw_drift_reason_str(NW_DRIFT_REASONS), "");
}
END_TEST

START_TEST(missing_inputs)
{
    nw_drift_in_t in;
    memset(&in, 0, sizeof in);
    char d[16] = "x";
    ck_assert_int_eq(nw_drift_check(&in, d, sizeof d), NW_DRIFT_NONE);
    ck_assert_int_eq(nw_drift_check(NULL, NULL, 0), NW_DRIFT_NONE);
    /* a pool without a template and a bare claim: no verdict, no crash */
    cJSON *pool = parse("{\"spec\":{}}", "pool"),
          *nc = parse("{\"metadata\":{\"name\":\"nc\"}}", "nc");
    nw_node_claim_t *rec = NULL;
    ck_assert_int_eq(nw_node_claim_decode(nc, &rec, NULL), NW_OK);
    in.nodeclaim = rec;
    in.nodepool = pool;
    ck_assert_int_eq(nw_drift_check(&in, d, sizeof d), NW_DRIFT_NONE);
    nw_node_claim_free(rec);
    cJSON_Delete(pool);
    cJSON_Delete(nc);
}
END_TEST

Suite *nw_drift_suite(void)
{
    Suite *s = suite_create("drift");
    TCase *tc = tcase_create("rules");
    cases_cases = nw_test_cases_lines("tests/data/drift/cases.jsonl", 31);
    nw_test_add_cases(tc, cases, cases_cases);
    tcase_add_test(tc, reason_names);
    tcase_add_test(tc, missing_inputs);
    suite_add_tcase(s, tc);
    return s;
}
