/*
 * Unit tests for admission/gpu*: the GPU isolation policy.
 *
 * Cases live in tests/data/gpu/{pods,nodepools}.json: each has the object, the
 * exact expected mutating patch ("patch", null = none), an optional warning
 * substring ("warn"), and the validation verdict before and after the patch
 * ("before"/"after": "allow" or "deny:<substring>"; "after" defaults to allow).
 * Every case is also checked for idempotence (a second mutation of the patched
 * object yields no patch) and in warn mode (a denial becomes a warning).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission/gpu.h"
#include "api/jsonpatch.h"
#include "api/labels.h"
#include "api/requirements.h"
#include "api/taints.h"
#include "tests/unit/testutil.h"

Suite *nw_gpu_suite(void);

typedef enum { K_POD, K_POOL } kind_t;

/* Run mutate; returns the patch (cJSON array) or NULL; warnings into res. */
static cJSON *run_mutate(kind_t k, const nw_gpu_policy_t *p, const cJSON *obj, const char *ns,
                         nw_admit_result_t *res)
{
    nw_jsonpatch_t patch;
    nw_jsonpatch_init(&patch);
    nw_rc_t rc = k == K_POD ? nw_gpu_pod_patch(p, obj, ns, &patch, res)
                            : nw_gpu_pool_patch(p, obj, &patch, res);
    ck_assert_int_eq(rc, NW_OK);
    char *text = nw_jsonpatch_take_text(&patch);
    ck_assert_int_eq(patch.rc, NW_OK);
    nw_jsonpatch_cleanup(&patch);
    if (!text)
        return NULL;
    cJSON *j = cJSON_Parse(text);
    free(text);
    ck_assert_ptr_nonnull(j);
    return j;
}

static void run_validate(kind_t k, const nw_gpu_policy_t *p, const cJSON *obj, const char *ns,
                         nw_admit_result_t *res)
{
    char msgs[4][512];
    size_t n = k == K_POD ? nw_gpu_pod_problems(p, obj, ns, msgs, 4)
                          : nw_gpu_pool_problems(p, obj, true, msgs, 4);
    ck_assert_int_eq(nw_gpu_deny_or_warn(p, k == K_POD ? "Pod" : "NodePool", "x", msgs, n, res),
                     NW_OK);
}

static bool any_warning(const nw_admit_result_t *res, const char *sub)
{
    for (size_t i = 0; i < res->nwarnings; i++)
        if (strstr(res->warnings[i], sub))
            return true;
    return false;
}

static void check_verdict(const char *name, const char *when, kind_t k, const nw_gpu_policy_t *p,
                          const cJSON *obj, const char *ns, const char *want)
{
    nw_admit_result_t res;
    nw_admit_result_init(&res);
    run_validate(k, p, obj, ns, &res);
    if (strcmp(want, "allow") == 0) {
        ck_assert_msg(res.allowed, "%s (%s): expected allow, got deny: %s", name, when,
                      res.message ? res.message : "");
    } else {
        ck_assert_msg(strncmp(want, "deny:", 5) == 0, "%s: bad expectation %s", name, want);
        ck_assert_msg(!res.allowed, "%s (%s): expected denial containing '%s'", name, when,
                      want + 5);
        ck_assert_int_eq(res.code, 403);
        ck_assert_msg(strstr(res.message, want + 5), "%s (%s): message '%s' lacks '%s'", name, when,
                      res.message, want + 5);
        /* warn mode turns the same denial into a warning */
        nw_gpu_policy_t *wp = (nw_gpu_policy_t *)p;
        wp->warn_only = true;
        nw_admit_result_t w;
        nw_admit_result_init(&w);
        run_validate(k, p, obj, ns, &w);
        wp->warn_only = false;
        ck_assert_msg(w.allowed, "%s (%s): warn mode must allow", name, when);
        ck_assert_msg(any_warning(&w, want + 5), "%s (%s): warn mode lacks warning '%s'", name,
                      when, want + 5);
        nw_admit_result_cleanup(&w);
    }
    nw_admit_result_cleanup(&res);
}

/* one case of tests/data/gpu/pods.json or nodepools.json */
static void run_case(const nw_test_case_t *row, kind_t k)
{
    nw_gpu_policy_t p;
    ck_assert_int_eq(nw_gpu_policy_init(&p, "nodewarden"), NW_OK);
    cJSON *c = cJSON_Parse(row->line);
    ck_assert_msg(cJSON_IsObject(c), "%s: not a JSON object", row->name);
    {
        const char *name = row->name;
        const cJSON *obj = cJSON_GetObjectItemCaseSensitive(c, k == K_POD ? "pod" : "nodepool");
        const cJSON *nsj = cJSON_GetObjectItemCaseSensitive(c, "namespace");
        const char *ns = cJSON_IsString(nsj) ? nsj->valuestring : "default";
        const cJSON *want_patch = cJSON_GetObjectItemCaseSensitive(c, "patch");
        const cJSON *warn = cJSON_GetObjectItemCaseSensitive(c, "warn");
        const cJSON *before = cJSON_GetObjectItemCaseSensitive(c, "before");
        const cJSON *after = cJSON_GetObjectItemCaseSensitive(c, "after");
        ck_assert_msg(obj != NULL, "%s: no object", name);

        nw_admit_result_t res;
        nw_admit_result_init(&res);
        cJSON *got = run_mutate(k, &p, obj, ns, &res);
        if (cJSON_IsArray(want_patch)) {
            char *g = got ? cJSON_PrintUnformatted(got) : NULL;
            char *w = cJSON_PrintUnformatted(want_patch);
            ck_assert_msg(got && cJSON_Compare(got, want_patch, 1), "%s: patch\n got  %s\n want %s",
                          name, g ? g : "(none)", w);
            free(g);
            free(w);
        } else {
            char *g = got ? cJSON_PrintUnformatted(got) : NULL;
            ck_assert_msg(got == NULL, "%s: expected no patch, got %s", name, g);
            free(g);
        }
        if (cJSON_IsString(warn))
            ck_assert_msg(any_warning(&res, warn->valuestring), "%s: no warning '%s'", name,
                          warn->valuestring);
        nw_admit_result_cleanup(&res);

        if (cJSON_IsString(before))
            check_verdict(name, "before", k, &p, obj, ns, before->valuestring);

        /* apply and check idempotence and the verdict afterwards */
        cJSON *doc = cJSON_Duplicate(obj, 1);
        if (got) {
            nw_err_t err = {0};
            ck_assert_msg(nw_jsonpatch_apply(&doc, got, &err) == NW_OK,
                          "%s: patch does not apply: %s", name, err.msg);
            nw_admit_result_init(&res);
            cJSON *again = run_mutate(k, &p, doc, ns, &res);
            char *a = again ? cJSON_PrintUnformatted(again) : NULL;
            ck_assert_msg(again == NULL, "%s: not idempotent, second patch %s", name, a);
            free(a);
            nw_admit_result_cleanup(&res);
        }
        check_verdict(name, "after", k, &p, doc, ns,
                      cJSON_IsString(after) ? after->valuestring : "allow");
        cJSON_Delete(doc);
        cJSON_Delete(got);
    }
    cJSON_Delete(c);
    nw_gpu_policy_cleanup(&p);
}

static const nw_test_cases_t *pod_cases, *pool_cases, *userdata_cases;

START_TEST(pod_case)
{
    run_case(nw_test_case(pod_cases, _i), K_POD);
}
END_TEST

START_TEST(nodepool_case)
{
    run_case(nw_test_case(pool_cases, _i), K_POOL);
}
END_TEST

START_TEST(policy_disabled_and_handlers)
{
    nw_gpu_policy_t p;
    ck_assert_int_eq(nw_gpu_policy_init(&p, ""), NW_OK);
    ck_assert_uint_eq(p.nexempt, 1);
    cJSON *pod = cJSON_Parse("{\"metadata\":{\"name\":\"c\"},\"spec\":{\"containers\":[{\"name\":"
                             "\"c\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}");
    nw_admit_ctx_t ctx = {.gpu = (const struct nw_gpu_policy *)&p, .self_namespace = ""};
    nw_admit_req_t req = {.op = NW_OP_CREATE,
                          .kind = "Pod",
                          .group = "",
                          .namespace_ = "default",
                          .name = "",
                          .object = pod};
    nw_admit_result_t res;
    nw_admit_result_init(&res);
    ck_assert_int_eq(nw_gpu_pod_mutate(&ctx, &req, &res), NW_OK);
    ck_assert_ptr_nonnull(res.patch);
    nw_admit_result_cleanup(&res);
    ck_assert_int_eq(nw_gpu_pod_validate(&ctx, &req, &res), NW_OK);
    ck_assert(!res.allowed);
    ck_assert_ptr_nonnull(strstr(res.message, "Pod \"c\" violates the GPU isolation policy"));
    nw_admit_result_cleanup(&res);
    /* UPDATE is not policed */
    req.op = NW_OP_UPDATE;
    ck_assert_int_eq(nw_gpu_pod_mutate(&ctx, &req, &res), NW_OK);
    ck_assert_ptr_null(res.patch);
    ck_assert_int_eq(nw_gpu_pod_validate(&ctx, &req, &res), NW_OK);
    ck_assert(res.allowed);
    /* disabled policy and no policy do nothing */
    req.op = NW_OP_CREATE;
    p.enabled = false;
    ck_assert_int_eq(nw_gpu_pod_mutate(&ctx, &req, &res), NW_OK);
    ck_assert_ptr_null(res.patch);
    ctx.gpu = NULL;
    ck_assert_int_eq(nw_gpu_pod_validate(&ctx, &req, &res), NW_OK);
    ck_assert(res.allowed);
    nw_admit_result_cleanup(&res);
    cJSON_Delete(pod);
    nw_gpu_policy_cleanup(&p);
}
END_TEST

START_TEST(custom_policy_and_garbage)
{
    nw_gpu_policy_t p;
    ck_assert_int_eq(nw_gpu_policy_init(&p, "ops"), NW_OK);
    ck_assert_int_eq(nw_gpu_policy_set_str(&p.label_key, "example.com/acc~x"), NW_OK);
    ck_assert_int_eq(nw_gpu_policy_set_str(&p.taint_value, ""), NW_OK);
    const char *res_names[] = {"example.com/tpu"};
    ck_assert_int_eq(nw_gpu_policy_set_list(&p.resources, &p.nresources, res_names, 1), NW_OK);
    cJSON *pod =
        cJSON_Parse("{\"metadata\":{\"name\":\"t\"},\"spec\":{\"nodeSelector\":{},"
                    "\"containers\":[{\"resources\":{\"limits\":{\"example.com/tpu\":1}}}]}}");
    nw_admit_result_t res;
    nw_admit_result_init(&res);
    cJSON *patch = run_mutate(K_POD, &p, pod, "default", &res);
    ck_assert_ptr_nonnull(patch);
    char *t = cJSON_PrintUnformatted(patch);
    ck_assert_str_eq(
        t, "[{\"op\":\"add\",\"path\":\"/spec/tolerations\",\"value\":[{\"key\":\"gpu\","
           "\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}]},{\"op\":\"add\","
           "\"path\":\"/spec/nodeSelector/example.com~1acc~0x\",\"value\":\"nvidia-gpu\"}]");
    free(t);
    cJSON_Delete(patch);
    cJSON_Delete(pod);
    /* ill-typed objects never crash and produce no patch */
    const char *garbage[] = {
        "null",
        "[]",
        "{\"spec\":7}",
        "{\"spec\":{\"containers\":7}}",
        "{\"spec\":{\"containers\":[7,{\"resources\":[]}],\"tolerations\":{}}}",
        "{\"spec\":{\"affinity\":{\"nodeAffinity\":{\"requiredDuringScheduling"
        "IgnoredDuringExecution\":{\"nodeSelectorTerms\":[1,{\"matchExpressions\":[2]}]}}},"
        "\"tolerations\":[{\"operator\":\"Exists\"}]}}"};
    for (size_t i = 0; i < sizeof garbage / sizeof garbage[0]; i++) {
        cJSON *g = cJSON_Parse(garbage[i]);
        cJSON *pp = run_mutate(K_POD, &p, g, "default", &res);
        cJSON_Delete(pp);
        run_validate(K_POD, &p, g, "default", &res);
        cJSON *np = run_mutate(K_POOL, &p, g, NULL, &res);
        cJSON_Delete(np);
        run_validate(K_POOL, &p, g, NULL, &res);
        cJSON_Delete(g);
        nw_admit_result_cleanup(&res);
    }
    nw_gpu_policy_cleanup(&p);
}
END_TEST

/* ---- the isolation invariant over a matrix of pods --------------------------------
 * GPU request × toleration (none / exact / wildcard) × constraint (none / nodeSelector
 * / required affinity) × DaemonSet × exempt namespace. After mutation, every pod the
 * validating side admits is evaluated with api/taints and api/requirements against a
 * GPU node (label + taint) and a CPU node: a GPU pod must fit only the GPU node, a pod
 * without a GPU request must never fit the GPU node. */

static bool fits(const cJSON *pod, const nw_labels_t *labels, const nw_taints_t *taints)
{
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(pod, "spec");
    nw_err_t err = {0};
    nw_tolerations_t tols;
    ck_assert_int_eq(nw_tolerations_parse(cJSON_GetObjectItemCaseSensitive(spec, "tolerations"),
                                          "spec.tolerations", &tols, &err),
                     NW_OK);
    bool ok = nw_taints_tolerated(taints, &tols, NW_TAINTS_SCHEDULING);
    nw_tolerations_cleanup(&tols);
    nw_reqs_t sel;
    ck_assert_int_eq(
        nw_reqs_parse_node_selector(cJSON_GetObjectItemCaseSensitive(spec, "nodeSelector"),
                                    "spec.nodeSelector", &sel, &err),
        NW_OK);
    ok = ok && nw_reqs_match_labels(&sel, labels, NULL);
    nw_reqs_cleanup(&sel);
    const cJSON *aff = cJSON_GetObjectItemCaseSensitive(spec, "affinity");
    const cJSON *na = cJSON_GetObjectItemCaseSensitive(aff, "nodeAffinity");
    const cJSON *req =
        cJSON_GetObjectItemCaseSensitive(na, "requiredDuringSchedulingIgnoredDuringExecution");
    const cJSON *terms = cJSON_GetObjectItemCaseSensitive(req, "nodeSelectorTerms");
    if (terms) {
        nw_reqs_t *t = NULL;
        size_t nt = 0;
        ck_assert_int_eq(nw_reqs_parse_terms(terms, "terms", &t, &nt, &err), NW_OK);
        bool any = false;
        for (size_t i = 0; i < nt; i++)
            if (t[i].n > 0 && nw_reqs_match_labels(&t[i], labels, NULL))
                any = true;
        nw_reqs_terms_free(t, nt);
        ok = ok && any;
    }
    return ok;
}

START_TEST(isolation_matrix)
{
    nw_gpu_policy_t p;
    ck_assert_int_eq(nw_gpu_policy_init(&p, "nodewarden"), NW_OK);
    nw_labels_t gpu_labels, cpu_labels;
    nw_labels_init(&gpu_labels);
    nw_labels_init(&cpu_labels);
    const char *common[][2] = {{"kubernetes.io/arch", "amd64"},
                               {"topology.kubernetes.io/zone", "us-west-2a"}};
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(nw_labels_set(&gpu_labels, common[i][0], common[i][1]), NW_OK);
        ck_assert_int_eq(nw_labels_set(&cpu_labels, common[i][0], common[i][1]), NW_OK);
    }
    ck_assert_int_eq(nw_labels_set(&gpu_labels, "node.accelerator", "nvidia-gpu"), NW_OK);
    nw_taints_t gpu_taints, cpu_taints;
    nw_taints_init(&gpu_taints);
    nw_taints_init(&cpu_taints);
    ck_assert_int_eq(nw_taints_add(&gpu_taints, "gpu", "true", NW_TAINT_NO_SCHEDULE), NW_OK);

    static const char *const tols[] = {"",
                                       ",\"tolerations\":[{\"key\":\"gpu\",\"operator\":\"Equal\","
                                       "\"value\":\"true\",\"effect\":\"NoSchedule\"}]",
                                       ",\"tolerations\":[{\"operator\":\"Exists\"}]"};
    static const char *const cons[] = {
        "", ",\"nodeSelector\":{\"kubernetes.io/arch\":\"amd64\"}",
        ",\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{"
        "\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"topology.kubernetes.io/zone\","
        "\"operator\":\"In\",\"values\":[\"us-west-2a\",\"us-west-2b\"]}]}]}}}"};
    int checked = 0, admitted = 0;
    for (int gpu = 0; gpu < 2; gpu++)
        for (int t = 0; t < 3; t++)
            for (int c = 0; c < 3; c++)
                for (int ds = 0; ds < 2; ds++)
                    for (int ex = 0; ex < 2; ex++) {
                        char text[2048];
                        snprintf(text, sizeof text,
                                 "{\"metadata\":{\"name\":\"m\"%s},\"spec\":{\"containers\":[{"
                                 "\"name\":\"c\","
                                 "\"resources\":{\"limits\":{%s}}}]%s%s}}",
                                 ds ? ",\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":"
                                      "\"DaemonSet\",\"name\":\"d\",\"uid\":\"u\"}]"
                                    : "",
                                 gpu ? "\"nvidia.com/gpu\":\"1\"" : "\"cpu\":\"1\"", tols[t],
                                 cons[c]);
                        const char *ns = ex ? "kube-system" : "team-a";
                        cJSON *pod = cJSON_Parse(text);
                        ck_assert_ptr_nonnull(pod);
                        nw_admit_result_t res;
                        nw_admit_result_init(&res);
                        cJSON *patch = run_mutate(K_POD, &p, pod, ns, &res);
                        nw_admit_result_cleanup(&res);
                        if (patch) {
                            nw_err_t err = {0};
                            ck_assert_int_eq(nw_jsonpatch_apply(&pod, patch, &err), NW_OK);
                            cJSON *again = run_mutate(K_POD, &p, pod, ns, &res);
                            ck_assert_msg(again == NULL, "not idempotent: %s", text);
                            nw_admit_result_cleanup(&res);
                            cJSON_Delete(patch);
                        }
                        run_validate(K_POD, &p, pod, ns, &res);
                        bool allowed = res.allowed;
                        nw_admit_result_cleanup(&res);
                        if (allowed && !ds && !ex) {
                            admitted++;
                            bool on_gpu = fits(pod, &gpu_labels, &gpu_taints);
                            bool on_cpu = fits(pod, &cpu_labels, &cpu_taints);
                            if (gpu) {
                                ck_assert_msg(on_gpu && !on_cpu,
                                              "GPU pod misplaced (gpu=%d cpu=%d): %s", on_gpu,
                                              on_cpu, text);
                            } else {
                                ck_assert_msg(!on_gpu && on_cpu,
                                              "plain pod misplaced (gpu=%d cpu=%d): %s", on_gpu,
                                              on_cpu, text);
                            }
                        }
                        /* every generated pod is policy-clean once mutated */
                        ck_assert_msg(allowed, "mutated pod still denied: %s", text);
                        cJSON_Delete(pod);
                        checked++;
                    }
    ck_assert_int_eq(checked, 72);
    ck_assert_int_eq(admitted, 18);
    nw_labels_cleanup(&gpu_labels);
    nw_labels_cleanup(&cpu_labels);
    nw_taints_cleanup(&gpu_taints);
    nw_taints_cleanup(&cpu_taints);
    nw_gpu_policy_cleanup(&p);
}
END_TEST

/* one case of tests/data/gpu/userdata.json */
START_TEST(userdata_case)
{
    const nw_test_case_t *row = nw_test_case(userdata_cases, _i);
    nw_gpu_policy_t p;
    ck_assert_int_eq(nw_gpu_policy_init(&p, ""), NW_OK);
    cJSON *c = cJSON_Parse(row->line);
    const cJSON *udj = cJSON_GetObjectItemCaseSensitive(c, "userData");
    ck_assert_msg(cJSON_IsString(udj), "%s: no userData", row->name);
    bool want = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "registers"));
    ck_assert_msg(nw_gpu_userdata_registers_taint(&p, udj->valuestring) == want, "%s: expected %s",
                  row->name, want ? "registers the GPU taint" : "does not register it");
    cJSON_Delete(c);
    nw_gpu_policy_cleanup(&p);
}
END_TEST

START_TEST(userdata_taint_detection)
{
    nw_gpu_policy_t p;
    ck_assert_int_eq(nw_gpu_policy_init(&p, ""), NW_OK);

    /* the cross-object warning: GPU pool + nodeclass without the taint */
    cJSON *pool =
        cJSON_Parse("{\"metadata\":{\"name\":\"l4\"},\"spec\":{\"template\":{\"spec\":{"
                    "\"nodeClassRef\":{\"name\":\"gpu\"},\"requirements\":[{\"key\":"
                    "\"karpenter.k8s.aws/instance-family\",\"operator\":\"In\",\"values\":"
                    "[\"g6\"]}]}}}}");
    cJSON *cpu =
        cJSON_Parse("{\"metadata\":{\"name\":\"general\"},\"spec\":{\"template\":{\"spec\":{"
                    "\"nodeClassRef\":{\"name\":\"gpu\"},\"requirements\":[]}}}}");
    cJSON *bad = cJSON_Parse("{\"metadata\":{\"name\":\"gpu\"},\"spec\":{\"userData\":"
                             "\"#!/bin/bash\\nkubeadm join x\\n\"}}");
    cJSON *good = cJSON_Parse("{\"metadata\":{\"name\":\"gpu\"},\"spec\":{\"userData\":"
                              "\"kubelet --register-with-taints=gpu=true:NoSchedule\\n\"}}");
    nw_admit_result_t res;
    nw_admit_result_init(&res);
    ck_assert_int_eq(nw_gpu_pool_crosscheck(&p, pool, bad, &res), NW_OK);
    ck_assert_uint_eq(res.nwarnings, 1);
    ck_assert_ptr_nonnull(strstr(res.warnings[0], "GPU NodePool \"l4\" uses EC2NodeClass \"gpu\""));
    nw_admit_result_cleanup(&res);
    ck_assert_int_eq(nw_gpu_pool_crosscheck(&p, pool, good, &res), NW_OK);
    ck_assert_int_eq(nw_gpu_pool_crosscheck(&p, cpu, bad, &res), NW_OK);
    ck_assert_int_eq(nw_gpu_pool_crosscheck(&p, pool, NULL, &res), NW_OK);
    ck_assert_uint_eq(res.nwarnings, 0);
    cJSON_Delete(pool);
    cJSON_Delete(cpu);
    cJSON_Delete(bad);
    cJSON_Delete(good);
    nw_gpu_policy_cleanup(&p);
}
END_TEST

Suite *nw_gpu_suite(void)
{
    Suite *s = suite_create("gpu");
    TCase *tc = tcase_create("policy");
    pod_cases = nw_test_cases_json("tests/data/gpu/pods.json", 10);
    pool_cases = nw_test_cases_json("tests/data/gpu/nodepools.json", 5);
    userdata_cases = nw_test_cases_json("tests/data/gpu/userdata.json", 14);
    nw_test_add_cases(tc, pod_case, pod_cases);
    nw_test_add_cases(tc, nodepool_case, pool_cases);
    nw_test_add_cases(tc, userdata_case, userdata_cases);
    tcase_add_test(tc, policy_disabled_and_handlers);
    tcase_add_test(tc, custom_policy_and_garbage);
    tcase_add_test(tc, isolation_matrix);
    tcase_add_test(tc, userdata_taint_detection);
    suite_add_tcase(s, tc);
    return s;
}
