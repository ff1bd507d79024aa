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
#include "admission/gpu_policy.h"
#include "config/config.h"
#include "scaler/sched/mig.h"
#include "scaler/cloud/catalog.h"
#include "api/jsonpatch.h"
#include "api/labels.h"
#include "api/requirements.h"
#include "api/taints.h"
#include "tests/unit/testutil.h"

Suite *nw_gpu_suite(void);

/* the configuration of tests/data/gpu/classes.json's cases */
#define CLASSES_CONFIG "tests/data/gpu/classes.yaml"

typedef enum { K_POD, K_POOL } kind_t;

/* The DRA objects of the case being run (tests/data/gpu/dra.json "objects"; NULL: no
 * cluster state), read through dra_lookup as the webhook reads the watch cache */
static const nw_gpu_dra_src_t *case_dra;

static cJSON *dra_lookup(void *arg, const char *group, const char *kind, const char *name)
{
    const cJSON *o;
    cJSON_ArrayForEach(o, (const cJSON *)arg)
    {
        const char *k = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "kind"));
        const char *api = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "apiVersion"));
        const cJSON *md = cJSON_GetObjectItemCaseSensitive(o, "metadata");
        const char *n = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(md, "name"));
        const char *ns = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(md, "namespace"));
        char key[300];
        snprintf(key, sizeof key, "%s%s%s", ns ? ns : "", ns ? "/" : "", n ? n : "");
        if (k && api && strcmp(k, kind) == 0 && strncmp(api, group, strlen(group)) == 0 &&
            strcmp(key, name) == 0)
            return cJSON_Duplicate(o, 1);
    }
    return NULL;
}

/* Run mutate; returns the patch (cJSON array) or NULL; warnings into res. */
static cJSON *run_mutate(kind_t k, const nw_gpu_policy_t *p, const cJSON *obj, const char *ns,
                         nw_admit_result_t *res)
{
    nw_jsonpatch_t patch;
    nw_jsonpatch_init(&patch);
    nw_rc_t rc = k == K_POD ? nw_gpu_pod_patch(p, obj, ns, case_dra, &patch, res)
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
    size_t n = k == K_POD ? nw_gpu_pod_problems(p, obj, ns, case_dra, msgs, 4)
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

/* one case of tests/data/gpu/pods.json or nodepools.json (the default policy), or of
 * classes.json or classes-pools.json (config: the policy of that configuration file) */
static void run_case_in(const nw_test_case_t *row, kind_t k, const char *config)
{
    nw_gpu_policy_t p;
    if (config) {
        nw_config_t cfg;
        nw_err_t err = {0};
        ck_assert_int_eq(nw_config_defaults(&cfg), NW_OK);
        ck_assert_msg(nw_config_apply_file(&cfg, config, &err) == NW_OK, "%s", err.msg);
        ck_assert_msg(nw_gpu_policy_from_config(&cfg, "nodewarden", &p, &err) == NW_OK, "%s",
                      err.msg);
        nw_config_free(&cfg);
    } else {
        ck_assert_int_eq(nw_gpu_policy_init(&p, "nodewarden"), NW_OK);
    }
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
        const cJSON *objects = cJSON_GetObjectItemCaseSensitive(c, "objects");
        nw_gpu_dra_src_t dra = {dra_lookup, (void *)objects,
                                !cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(c, "complete"))};
        case_dra = cJSON_IsArray(objects) ? &dra : NULL;
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
        if (cJSON_IsString(warn) && !any_warning(&res, warn->valuestring) && k == K_POD) {
            /* the DRA warnings are the validating handler's */
            nw_admit_result_t v;
            nw_admit_result_init(&v);
            nw_admit_ctx_t ctx = {.gpu = &p};
            if (case_dra)
                ctx = (nw_admit_ctx_t){.gpu = &p,
                                       .self_namespace = "",
                                       .lookup = case_dra->lookup,
                                       .lookup_arg = case_dra->arg,
                                       .lookup_complete = case_dra->complete};
            nw_admit_req_t req = {.op = NW_OP_CREATE, .object = obj, .namespace_ = ns};
            ck_assert_int_eq(nw_gpu_pod_validate(&ctx, &req, &v), NW_OK);
            for (size_t i = 0; i < v.nwarnings; i++)
                nw_admit_warn(&res, "%s", v.warnings[i]);
            nw_admit_result_cleanup(&v);
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
        case_dra = NULL;
    }
    cJSON_Delete(c);
    nw_gpu_policy_cleanup(&p);
}

static const nw_test_cases_t *pod_cases, *pool_cases, *userdata_cases, *class_pod_cases,
    *class_pool_cases, *dra_cases;

START_TEST(dra_case)
{
    run_case_in(nw_test_case(dra_cases, _i), K_POD, NULL);
}
END_TEST

START_TEST(pod_case)
{
    run_case_in(nw_test_case(pod_cases, _i), K_POD, NULL);
}
END_TEST

START_TEST(nodepool_case)
{
    run_case_in(nw_test_case(pool_cases, _i), K_POOL, NULL);
}
END_TEST

START_TEST(class_pod_case)
{
    run_case_in(nw_test_case(class_pod_cases, _i), K_POD, CLASSES_CONFIG);
}
END_TEST

START_TEST(class_pool_case)
{
    run_case_in(nw_test_case(class_pool_cases, _i), K_POOL, CLASSES_CONFIG);
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
    ck_assert_int_eq(nw_gpu_policy_set_str(&p.classes[0].taint_value, ""), NW_OK);
    const char *res_names[] = {"example.com/tpu"};
    ck_assert_int_eq(
        nw_gpu_policy_set_list(&p.classes[0].resources, &p.classes[0].nresources, res_names, 1),
        NW_OK);
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
 * Accelerator request (none / each class, NVIDIA also by MIG slice) × toleration (none /
 * each class's exact taint / wildcard) × constraint (none / nodeSelector / required
 * affinity) × DaemonSet × exempt namespace. After mutation, every pod the validating
 * side admits is evaluated with api/taints and api/requirements against one node per
 * class (its label and taint) and a CPU node: a class's pod must fit only its class's
 * node, a pod without a request must fit only the CPU node. */

static bool fits(const cJSON *pod, const nw_labels_t *labels, const nw_taints_t *taints)
{
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(pod, "spec");
    nw_err_t err = {0};
    nw_tolerations_t tols;
    ck_assert_int_eq(nw_tolerations_parse(cJSON_GetObjectItemCaseSensitive(spec, "tolerations"),
                                          "spec.tolerations", &tols, &err),
                     NW_OK);
    bool ok = nw_tolerations_tolerate_all(taints, &tols, NW_TAINTS_SCHEDULING);
    nw_tolerations_cleanup(&tols);
    nw_reqs_t sel;
    ck_assert_int_eq(nw_requirements_json_parse_node_selector(
                         cJSON_GetObjectItemCaseSensitive(spec, "nodeSelector"),
                         "spec.nodeSelector", &sel, &err),
                     NW_OK);
    ok = ok && nw_requirements_match_labels(&sel, labels, NULL);
    nw_requirements_cleanup(&sel);
    const cJSON *aff = cJSON_GetObjectItemCaseSensitive(spec, "affinity");
    const cJSON *na = cJSON_GetObjectItemCaseSensitive(aff, "nodeAffinity");
    const cJSON *req =
        cJSON_GetObjectItemCaseSensitive(na, "requiredDuringSchedulingIgnoredDuringExecution");
    const cJSON *terms = cJSON_GetObjectItemCaseSensitive(req, "nodeSelectorTerms");
    if (terms) {
        nw_reqs_t *t = NULL;
        size_t nt = 0;
        ck_assert_int_eq(nw_requirements_json_parse_terms(terms, "terms", &t, &nt, &err), NW_OK);
        bool any = false;
        for (size_t i = 0; i < nt; i++)
            if (t[i].n > 0 && nw_requirements_match_labels(&t[i], labels, NULL))
                any = true;
        nw_requirements_json_terms_free(t, nt);
        ok = ok && any;
    }
    return ok;
}

/* user_values: every class node carries its class's taint key with a value of the user's
 * choosing (issue 33) instead of the class's: a pod still fits no other class's node, and
 * a pod given its toleration by the webhook still fits its own */
static void isolation_matrix_run(bool user_values)
{
    nw_gpu_policy_t p;
    ck_assert_int_eq(nw_gpu_policy_init(&p, "nodewarden"), NW_OK);
    ck_assert_uint_eq(p.nclasses, 6);
    /* node 0: CPU; node 1 + i: class i */
    enum { NNODES = 7 };
    nw_labels_t labels[NNODES];
    nw_taints_t taints[NNODES];
    for (int n = 0; n < NNODES; n++) {
        nw_labels_init(&labels[n]);
        nw_taints_init(&taints[n]);
        ck_assert_int_eq(nw_labels_set(&labels[n], "kubernetes.io/arch", "amd64"), NW_OK);
        ck_assert_int_eq(nw_labels_set(&labels[n], "topology.kubernetes.io/zone", "us-west-2a"),
                         NW_OK);
        if (n == 0)
            continue;
        const nw_accel_class_t *c = &p.classes[n - 1];
        ck_assert_int_eq(nw_labels_set(&labels[n], "node.accelerator", c->label_value), NW_OK);
        ck_assert_int_eq(nw_taints_add(&taints[n], c->taint_key,
                                       user_values ? "user-chosen" : c->taint_value,
                                       NW_TAINT_NO_SCHEDULE),
                         NW_OK);
    }
    /* request -> the node it must land on */
    static const struct {
        const char *res;
        int node;
    } reqs[] = {{"\"cpu\":\"1\"", 0},
                {"\"nvidia.com/gpu\":\"1\"", 1},
                {"\"nvidia.com/mig-3g.20gb\":\"1\"", 1},
                {"\"amd.com/gpu\":\"1\"", 2},
                {"\"aws.amazon.com/neuroncore\":\"2\"", 3},
                {"\"habana.ai/gaudi\":\"1\"", 4},
                {"\"qualcomm.com/qaic\":\"1\"", 5},
                {"\"xilinx.com/fpga-xilinx_u30_gen3x4_base_2-0\":\"1\"", 6}};
    static const char *const tols[] = {
        "",
        ",\"tolerations\":[{\"key\":\"gpu\",\"operator\":\"Equal\",\"value\":\"true\","
        "\"effect\":\"NoSchedule\"}]",
        ",\"tolerations\":[{\"key\":\"amd.com/gpu\",\"operator\":\"Exists\"}]",
        ",\"tolerations\":[{\"key\":\"aws.amazon.com/neuron\",\"operator\":\"Exists\","
        "\"effect\":\"NoSchedule\"}]",
        ",\"tolerations\":[{\"key\":\"habana.ai/gaudi\",\"operator\":\"Exists\"}]",
        ",\"tolerations\":[{\"key\":\"qualcomm.com/qaic\",\"operator\":\"Exists\"}]",
        ",\"tolerations\":[{\"key\":\"xilinx.com/fpga\",\"operator\":\"Exists\","
        "\"effect\":\"NoSchedule\"}]",
        ",\"tolerations\":[{\"operator\":\"Exists\"}]"};
    static const char *const cons[] = {
        "", ",\"nodeSelector\":{\"kubernetes.io/arch\":\"amd64\"}",
        ",\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{"
        "\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"topology.kubernetes.io/zone\","
        "\"operator\":\"In\",\"values\":[\"us-west-2a\",\"us-west-2b\"]}]}]}}}"};
    int checked = 0, admitted = 0;
    for (size_t r = 0; r < sizeof reqs / sizeof reqs[0]; r++)
        for (size_t t = 0; t < sizeof tols / sizeof tols[0]; t++)
            for (size_t c = 0; c < sizeof cons / sizeof cons[0]; c++)
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
                                 reqs[r].res, tols[t], cons[c]);
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
                            for (int n = 0; n < NNODES; n++) {
                                bool on = fits(pod, &labels[n], &taints[n]);
                                /* with the user's values, only a toleration of the class's
                                 * own value (tols[1], NVIDIA's gpu=true) keeps an NVIDIA pod
                                 * off its nodes: pending, never elsewhere */
                                if (user_values && t == 1 && reqs[r].node == 1 && n == 1)
                                    continue;
                                ck_assert_msg(on == (n == reqs[r].node),
                                              "pod %s node %d (want only node %d): %s",
                                              on ? "fits" : "does not fit", n, reqs[r].node, text);
                            }
                        }
                        /* every generated pod is policy-clean once mutated */
                        ck_assert_msg(allowed, "mutated pod still denied: %s", text);
                        cJSON_Delete(pod);
                        checked++;
                    }
    ck_assert_int_eq(checked, 8 * 8 * 3 * 4);
    ck_assert_int_eq(admitted, 8 * 8 * 3);
    for (int n = 0; n < NNODES; n++) {
        nw_labels_cleanup(&labels[n]);
        nw_taints_cleanup(&taints[n]);
    }
    nw_gpu_policy_cleanup(&p);
}

START_TEST(isolation_matrix)
{
    isolation_matrix_run(false);
}
END_TEST

START_TEST(isolation_matrix_user_taint_values)
{
    isolation_matrix_run(true);
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
    ck_assert_msg(nw_gpu_userdata_registers_taint(&p, &p.classes[0], udj->valuestring) == want,
                  "%s: expected %s", row->name,
                  want ? "registers the GPU taint" : "does not register it");
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
    ck_assert_int_eq(nw_gpu_userdata_pool_crosscheck(&p, pool, bad, &res), NW_OK);
    ck_assert_uint_eq(res.nwarnings, 1);
    ck_assert_ptr_nonnull(strstr(
        res.warnings[0], "NodePool \"l4\" (accelerator class nvidia) uses EC2NodeClass \"gpu\""));
    nw_admit_result_cleanup(&res);
    ck_assert_int_eq(nw_gpu_userdata_pool_crosscheck(&p, pool, good, &res), NW_OK);
    ck_assert_int_eq(nw_gpu_userdata_pool_crosscheck(&p, cpu, bad, &res), NW_OK);
    ck_assert_int_eq(nw_gpu_userdata_pool_crosscheck(&p, pool, NULL, &res), NW_OK);
    /* a generated bootstrap (AL2023 here) carries the pool's taints itself */
    cJSON *al2023 = cJSON_Parse("{\"metadata\":{\"name\":\"gpu\"},\"spec\":{\"amiFamily\":"
                                "\"AL2023\",\"userData\":\"#!/bin/bash\\necho pre\\n\"}}");
    ck_assert_int_eq(nw_gpu_userdata_pool_crosscheck(&p, pool, al2023, &res), NW_OK);
    cJSON_Delete(al2023);
    ck_assert_uint_eq(res.nwarnings, 0);
    cJSON_Delete(pool);
    cJSON_Delete(cpu);
    cJSON_Delete(bad);
    cJSON_Delete(good);
    nw_gpu_policy_cleanup(&p);
}
END_TEST

/* ---- every accelerator type of the catalog ------------------------------------------
 * A generic NodePool, once mutated, admits no accelerator instance type of the embedded
 * catalog (judged by Karpenter's requirement semantics against each type's labels);
 * every accelerator type belongs to one class, and a pool of its family becomes a pool
 * of that class whose requirements admit the type. */

static const char *label_get(const char *key, void *arg)
{
    return nw_labels_get((const nw_labels_t *)arg, key);
}

static bool pool_admits(const cJSON *np, const nw_labels_t *labels)
{
    const char *keys[] = {"spec", "template", "spec", "requirements"};
    const cJSON *reqs = np;
    for (int i = 0; i < 4; i++)
        reqs = cJSON_GetObjectItemCaseSensitive(reqs, keys[i]);
    nw_reqs_t r;
    nw_err_t err = {0};
    ck_assert_int_eq(
        nw_requirements_json_parse_list(reqs, "requirements", NW_REQS_PARSE_KARPENTER, &r, &err),
        NW_OK);
    bool ok = nw_requirements_match_labels(&r, labels, NULL);
    nw_requirements_cleanup(&r);
    return ok;
}

static cJSON *mutated_pool(const nw_gpu_policy_t *p, const char *reqs_json)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"metadata\":{\"name\":\"np\"},\"spec\":{\"template\":{\"spec\":{\"nodeClassRef\":"
             "{\"group\":\"karpenter.k8s.aws\",\"kind\":\"EC2NodeClass\",\"name\":\"d\"},"
             "\"requirements\":%s}}}}",
             reqs_json);
    cJSON *np = cJSON_Parse(text);
    ck_assert_ptr_nonnull(np);
    nw_admit_result_t res;
    nw_admit_result_init(&res);
    cJSON *patch = run_mutate(K_POOL, p, np, NULL, &res);
    nw_admit_result_cleanup(&res);
    if (patch) {
        nw_err_t err = {0};
        ck_assert_int_eq(nw_jsonpatch_apply(&np, patch, &err), NW_OK);
        cJSON_Delete(patch);
    }
    run_validate(K_POOL, p, np, NULL, &res);
    ck_assert_msg(res.allowed, "mutated pool %s still denied: %s", reqs_json,
                  res.message ? res.message : "");
    nw_admit_result_cleanup(&res);
    return np;
}

/* the walk under policy p; every_class: each class of p has types in the catalog */
static void walk_catalog(const nw_gpu_policy_t *pp, bool every_class)
{
    const nw_gpu_policy_t p = *pp; /* borrowed: not cleaned up here */
    nw_catalog_t *cat = NULL;
    ck_assert_int_eq(nw_catalog_new_embedded("us-east-1", &cat, NULL), NW_OK);
    static const char *const generic[] = {
        "[{\"key\":\"karpenter.sh/capacity-type\",\"operator\":\"In\",\"values\":[\"on-demand\"]}]",
        "[{\"key\":\"kubernetes.io/arch\",\"operator\":\"In\",\"values\":[\"amd64\",\"arm64\"]}]",
        "[{\"key\":\"karpenter.k8s.aws/instance-cpu\",\"operator\":\"Gt\",\"values\":[\"3\"]}]",
        "[{\"key\":\"karpenter.k8s.aws/instance-gpu-count\",\"operator\":\"DoesNotExist\"}]"};
    cJSON *pools[4];
    for (int g = 0; g < 4; g++)
        pools[g] = mutated_pool(&p, generic[g]);
    int accel = 0, cpu = 0, seen[NW_GPU_MAX_CLASSES] = {0};
    for (size_t i = 0; i < nw_catalog_len(cat); i++) {
        const nw_itype_t *t = nw_catalog_at(cat, i);
        nw_cat_label_t l[48];
        int nl = nw_catalog_itype_labels(t, l, 48);
        nw_labels_t labels;
        nw_labels_init(&labels);
        for (int k = 0; k < nl; k++)
            ck_assert_int_eq(nw_labels_set(&labels, l[k].key, l[k].value), NW_OK);
        ck_assert_int_eq(nw_labels_set(&labels, "karpenter.sh/capacity-type", "on-demand"), NW_OK);
        /* media accelerators (vt1's U30) carry no label; the class knows them by family */
        bool is_accel = t->gpu_count > 0 || t->accel_count > 0 || t->media_count > 0;
        int cls = nw_gpu_type_class(&p, label_get, &labels);
        if (is_accel && cls < 0 && !every_class) {
            /* a type the configuration gives no class (its device labels keep generic
             * pools off it all the same) */
            for (int g = 0; g < 4; g++)
                ck_assert_msg(!pool_admits(pools[g], &labels),
                              "generic pool %s can launch accelerator type %s", generic[g],
                              t->name);
        } else if (is_accel) {
            accel++;
            ck_assert_msg(cls >= 0, "%s: an accelerator type of no class", t->name);
            seen[cls]++;
            /* its device count and memory are known (EC2 tabulates no memory of media
             * accelerators) */
            ck_assert_msg(t->gpu_count > 0     ? t->gpu_memory_mib > 0
                          : t->accel_count > 0 ? t->accel_memory_mib > 0
                                               : t->media_count > 0,
                          "%s: accelerator memory unknown", t->name);
            for (int g = 0; g < 4; g++)
                ck_assert_msg(!pool_admits(pools[g], &labels),
                              "generic pool %s can launch accelerator type %s", generic[g],
                              t->name);
            char reqs[256];
            snprintf(reqs, sizeof reqs,
                     "[{\"key\":\"karpenter.k8s.aws/instance-family\",\"operator\":\"In\","
                     "\"values\":[\"%s\"]}]",
                     t->family);
            cJSON *fp = mutated_pool(&p, reqs);
            nw_gpu_pool_info_t in;
            nw_gpu_pool_analyze(&p, fp, &in);
            ck_assert_msg(nw_gpu_pool_is_gpu(&in) && in.cls == cls,
                          "%s: family pool is not a pool of class %s", t->name,
                          p.classes[cls].name);
            ck_assert_msg(pool_admits(fp, &labels), "%s: its family pool cannot launch it",
                          t->name);
            cJSON_Delete(fp);
        } else {
            cpu++;
            ck_assert_msg(cls < 0, "%s: a CPU type in class %d", t->name, cls);
            ck_assert_msg(pool_admits(pools[0], &labels), "generic pool cannot launch %s", t->name);
        }
        nw_labels_cleanup(&labels);
    }
    /* the catalog has types of every default class, and CPU types */
    for (size_t k = 0; every_class && k < p.nclasses; k++)
        ck_assert_msg(seen[k] > 0, "no %s type in the catalog", p.classes[k].name);
    ck_assert_int_gt(accel, every_class ? 40 : 30);
    ck_assert_int_gt(cpu, 100);
    for (int g = 0; g < 4; g++)
        cJSON_Delete(pools[g]);
    nw_catalog_free(cat);
}

START_TEST(catalog_accelerators_isolated)
{
    /* the default classes; then classes.yaml (a class of one's own, the Neuron class cut
     * down to inf2: inf1 and trn are then no class's, yet have device labels) */
    nw_gpu_policy_t p;
    ck_assert_int_eq(nw_gpu_policy_init(&p, ""), NW_OK);
    walk_catalog(&p, true);
    nw_gpu_policy_cleanup(&p);
    nw_config_t cfg;
    nw_err_t err = {0};
    ck_assert_int_eq(nw_config_defaults(&cfg), NW_OK);
    ck_assert_int_eq(nw_config_apply_file(&cfg, CLASSES_CONFIG, &err), NW_OK);
    ck_assert_msg(nw_gpu_policy_from_config(&cfg, "", &p, &err) == NW_OK, "%s", err.msg);
    nw_config_free(&cfg);
    walk_catalog(&p, false);
    nw_gpu_policy_cleanup(&p);
}
END_TEST

/* ---- the policy from the configuration ------------------------------------------------ */

static bool same_list(char *const *a, size_t na, char *const *b, size_t nb)
{
    if (na != nb)
        return false;
    for (size_t i = 0; i < na; i++)
        if (strcmp(a[i], b[i]) != 0)
            return false;
    return true;
}

START_TEST(policy_from_config)
{
    /* the configuration's defaults are the policy's defaults, class by class */
    nw_config_t cfg;
    ck_assert_int_eq(nw_config_defaults(&cfg), NW_OK);
    nw_gpu_policy_t a, b;
    nw_err_t err = {0};
    ck_assert_int_eq(nw_gpu_policy_from_config(&cfg, "nodewarden", &a, &err), NW_OK);
    ck_assert_int_eq(nw_gpu_policy_init(&b, "nodewarden"), NW_OK);
    ck_assert_uint_eq(a.nclasses, b.nclasses);
    for (size_t i = 0; i < a.nclasses; i++) {
        const nw_accel_class_t *x = &a.classes[i], *y = &b.classes[i];
        ck_assert_str_eq(x->name, y->name);
        ck_assert_str_eq(x->taint_key, y->taint_key);
        ck_assert_str_eq(x->taint_value, y->taint_value);
        ck_assert_str_eq(x->label_value, y->label_value);
        ck_assert_str_eq(x->req_key, y->req_key);
        ck_assert_msg(same_list(x->resources, x->nresources, y->resources, y->nresources),
                      "%s resources", x->name);
        ck_assert_msg(same_list(x->families, x->nfamilies, y->families, y->nfamilies),
                      "%s families", x->name);
        ck_assert_msg(same_list(x->req_values, x->nreq_values, y->req_values, y->nreq_values),
                      "%s requirement values", x->name);
        ck_assert_msg(same_list(x->uncounted, x->nuncounted, y->uncounted, y->nuncounted),
                      "%s uncounted families", x->name);
        ck_assert_int_eq(x->aware_disruption, y->aware_disruption);
    }
    nw_gpu_policy_cleanup(&a);
    nw_gpu_policy_cleanup(&b);
    /* the single-class settings of old: all accelerator resources in gpu.resources; with
     * the other classes on, each entry they claim is theirs (the configuration keeps
     * working), with them off that is one class */
    ck_assert_int_eq(nw_config_set(&cfg, "gpu.resources",
                                   "nvidia.com/gpu,amd.com/gpu,aws.amazon.com/neuron", &err),
                     NW_OK);
    ck_assert_int_eq(nw_gpu_policy_from_config(&cfg, "", &a, &err), NW_OK);
    ck_assert_uint_eq(a.nclasses, 6);
    ck_assert_str_eq(a.classes[0].name, "nvidia");
    ck_assert_uint_eq(a.classes[0].nresources, 1);
    ck_assert_str_eq(a.classes[0].resources[0], "nvidia.com/gpu");
    ck_assert_str_eq(a.classes[nw_gpu_resource_class(&a, "amd.com/gpu")].name, "amd");
    ck_assert_str_eq(a.classes[nw_gpu_resource_class(&a, "aws.amazon.com/neuron")].name, "neuron");
    nw_gpu_policy_cleanup(&a);
    /* an entry no other class claims stays the NVIDIA class's */
    ck_assert_int_eq(nw_config_set(&cfg, "gpu.resources", "nvidia.com/gpu,example.com/fpga", &err),
                     NW_OK);
    ck_assert_int_eq(nw_gpu_policy_from_config(&cfg, "", &a, &err), NW_OK);
    ck_assert_int_eq(nw_gpu_resource_class(&a, "example.com/fpga"), 0);
    nw_gpu_policy_cleanup(&a);
    ck_assert_int_eq(nw_config_set(&cfg, "gpu.resources",
                                   "nvidia.com/gpu,amd.com/gpu,aws.amazon.com/neuron", &err),
                     NW_OK);
    ck_assert_int_eq(nw_config_set(&cfg, "gpu.classes.amd.enabled", "false", &err), NW_OK);
    ck_assert_int_eq(nw_config_set(&cfg, "gpu.classes.neuron.enabled", "false", &err), NW_OK);
    ck_assert_int_eq(nw_gpu_policy_from_config(&cfg, "", &a, &err), NW_OK);
    ck_assert_uint_eq(a.nclasses, 4);
    ck_assert_str_eq(a.classes[1].name, "gaudi");
    ck_assert_int_eq(nw_gpu_resource_class(&a, "amd.com/gpu"), 0);
    nw_gpu_policy_cleanup(&a);
    /* clear errors naming the field */
    static const struct {
        const char *key, *value, *path, *msg;
    } bad[] = {
        {"gpu.classes.gaudi.nodeLabel.value", "nvidia-gpu", "gpu.classes.gaudi.nodeLabel.value",
         "also the node label value of the nvidia class"},
        {"gpu.classes.gaudi.instanceFamilies", "dl1,g5", "gpu.classes.gaudi.instanceFamilies",
         "g5 is also an instance family of the nvidia class"},
        {"gpu.classes.gaudi.resources", "nvidia.com/*", "gpu.classes.gaudi.resources",
         "also a resource of the nvidia class"},
        {"gpu.classes.gaudi.taint.key", "", "gpu.classes.gaudi.taint.key", "must be set"},
        {"gpu.classes.gaudi.resources", "", "gpu.classes.gaudi.resources", "at least one"},
        {"gpu.classes.gaudi.resources", "habana.ai/gaudi,gaudi", "gpu.classes.gaudi.resources",
         "resources[1]: \"gaudi\" is not an extended resource name"},
        {"gpu.classes.gaudi.resources", "habana.ai/*gaudi", "gpu.classes.gaudi.resources",
         "a '*' may only end it"},
        {"gpu.resources", "nvidia.com/gpu,gpu", "gpu.resources", "resources[1]"},
        {"gpu.classes.gaudi.instanceFamilies", "dl1,DL2", "gpu.classes.gaudi.instanceFamilies",
         "instanceFamilies[1]: \"DL2\" is not an instance family"},
        {"gpu.classes.gaudi.instanceRequirement.values", "",
         "gpu.classes.gaudi.instanceRequirement.values", "needs both its key and its values"},
        {"gpu.classes.fpga.taint.key", "aws.amazon.com/fpga", "gpu.classes.fpga.nodeLabel.value",
         "the node label value of the fpga accelerator class must be set"},
        {"gpu.classes.fpga.enabled", "true", "gpu.classes.fpga.taint.key",
         "the taint key of the fpga accelerator class must be set"},
        {"gpu.uncountedFamilies", "g6f,G7F", "gpu.uncountedFamilies",
         "uncountedFamilies[1]: \"G7F\" is not an instance family"},
        {"gpu.classes.gaudi.uncountedFamilies", "g6f", "gpu.classes.gaudi.uncountedFamilies",
         "uncountedFamilies[0]: g6f is also an instance family of the nvidia class"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        nw_config_t c2;
        ck_assert_int_eq(nw_config_defaults(&c2), NW_OK);
        memset(&err, 0, sizeof err);
        ck_assert_int_eq(nw_config_set(&c2, bad[i].key, bad[i].value, &err), NW_OK);
        ck_assert_int_eq(nw_gpu_policy_from_config(&c2, "", &a, &err), NW_EINVAL);
        ck_assert_str_eq(err.path, bad[i].path);
        ck_assert_msg(strstr(err.msg, bad[i].msg), "%s: %s", bad[i].key, err.msg);
        nw_config_free(&c2);
    }
    nw_config_free(&cfg);
}
END_TEST

/* The uncounted families (issue 33): the defaults, a family the user adds (joined to the
 * class's families, so the class knows it), GPU-aware disruption per class. */
START_TEST(policy_uncounted_families)
{
    nw_gpu_policy_t a;
    ck_assert_int_eq(nw_gpu_policy_init(&a, ""), NW_OK);
    ck_assert(nw_gpu_class_uncounted(&a.classes[0], "g6f"));
    ck_assert(nw_gpu_class_uncounted(&a.classes[0], "p5"));
    ck_assert(!nw_gpu_class_uncounted(&a.classes[0], "g6"));
    ck_assert(a.classes[0].aware_disruption && a.classes[2].aware_disruption);
    nw_gpu_policy_cleanup(&a);
    nw_config_t cfg;
    nw_err_t err = {0};
    ck_assert_int_eq(nw_config_defaults(&cfg), NW_OK);
    ck_assert_int_eq(nw_config_set(&cfg, "gpu.uncountedFamilies", "g6f,gr6f,p5,g7f", &err), NW_OK);
    ck_assert_int_eq(
        nw_config_set(&cfg, "gpu.classes.neuron.disruption.acceleratorAware", "false", &err),
        NW_OK);
    ck_assert_int_eq(nw_gpu_policy_from_config(&cfg, "", &a, &err), NW_OK);
    ck_assert_int_eq(nw_gpu_family_class(&a, "g7f"), 0);
    ck_assert(nw_gpu_class_uncounted(&a.classes[0], "g7f"));
    ck_assert(a.classes[0].aware_disruption);
    nw_accel_class_t *neuron = nw_gpu_policy_class(&a, "neuron");
    ck_assert_ptr_nonnull(neuron);
    ck_assert(!neuron->aware_disruption);
    /* a generic pool now keeps off g7f by name as well */
    cJSON *np = cJSON_Parse("{\"spec\":{\"template\":{\"spec\":{\"requirements\":[]}}}}");
    cJSON *patch = run_mutate(K_POOL, &a, np, NULL, NULL);
    char *txt = cJSON_PrintUnformatted(patch);
    ck_assert_msg(strstr(txt, "\"values\":[\"g6f\",\"gr6f\",\"p5\",\"g7f\",\"vt1\"]"), "%s", txt);
    free(txt);
    cJSON_Delete(patch);
    cJSON_Delete(np);
    nw_gpu_policy_cleanup(&a);
    nw_config_free(&cfg);
}
END_TEST

/* set the pairs of kv (key, value, ..., NULL) on a default configuration */
static void config_with(nw_config_t *cfg, const char *const *kv)
{
    nw_err_t err = {0};
    ck_assert_int_eq(nw_config_defaults(cfg), NW_OK);
    for (size_t i = 0; kv[i]; i += 2)
        ck_assert_msg(nw_config_set(cfg, kv[i], kv[i + 1], &err) == NW_OK, "%s: %s", kv[i],
                      err.msg);
}

/* DRA (issue 33): which class a DeviceClass is, by name and by its CEL selectors; the
 * defaults of the NVIDIA, AMD, Neuron and Gaudi drivers; a user's class with its driver;
 * the device counts of a claim */
START_TEST(dra_device_classes)
{
    nw_gpu_policy_t p;
    ck_assert_int_eq(nw_gpu_policy_init(&p, ""), NW_OK);
    ck_assert_int_eq(nw_gpu_dra_device_class(&p, "gpu.nvidia.com", NULL), 0);
    ck_assert_int_eq(nw_gpu_dra_device_class(&p, "mig.nvidia.com", NULL), 0);
    ck_assert_int_eq(nw_gpu_dra_device_class(&p, "gpu.amd.com", NULL), 1);
    ck_assert_int_eq(nw_gpu_dra_device_class(&p, "neuron.aws.com", NULL), 2);
    ck_assert_int_eq(nw_gpu_dra_device_class(&p, "gaudi.intel.com", NULL), 3);
    ck_assert_int_eq(nw_gpu_dra_device_class(&p, "h100", NULL), -1);
    const char *sel[][2] = {
        {"device.driver == 'gpu.nvidia.com'", "0"},
        {"device.driver==\"neuron.aws.com\" && device.attributes['neuron.aws.com'].x == 1", "2"},
        {"device.attributes['gpu.nvidia.com'].type == 'gpu'", "-1"}, /* no driver compared */
        {"device.driver == 'gpu.nvidia.com.evil'", "-1"},
        {"device.driver == 'dra.net'", "-1"},
        {"device.driver != 'x' || device.driver == 'gaudi.intel.com'", "3"},
    };
    for (size_t i = 0; i < sizeof sel / sizeof sel[0]; i++) {
        cJSON *dc = cJSON_CreateObject();
        cJSON *spec = cJSON_AddObjectToObject(dc, "spec");
        cJSON *sels = cJSON_AddArrayToObject(spec, "selectors");
        cJSON *one = cJSON_CreateObject();
        cJSON_AddStringToObject(cJSON_AddObjectToObject(one, "cel"), "expression", sel[i][0]);
        cJSON_AddItemToArray(sels, one);
        ck_assert_msg(nw_gpu_dra_device_class(&p, "custom", dc) == atoi(sel[i][1]), "%s",
                      sel[i][0]);
        cJSON_Delete(dc);
    }
    /* devices counted per class: ExactCount 4 of NVIDIA, All of Neuron as 1 */
    cJSON *cs = cJSON_Parse(
        "{\"devices\":{\"requests\":[{\"name\":\"a\",\"exactly\":{\"deviceClassName\":"
        "\"gpu.nvidia.com\",\"count\":4}},{\"name\":\"b\",\"exactly\":{\"deviceClassName\":"
        "\"neuron.aws.com\",\"allocationMode\":\"All\"}}]}}");
    int dev[NW_GPU_MAX_CLASSES] = {0};
    char what[100] = "";
    ck_assert_uint_eq(nw_gpu_dra_claim_spec(&p, cs, NULL, dev, what, sizeof what), 1u | 4u);
    ck_assert_int_eq(dev[0], 4);
    ck_assert_int_eq(dev[2], 1);
    ck_assert_str_eq(what, "DeviceClass gpu.nvidia.com");
    cJSON_Delete(cs);
    nw_gpu_policy_cleanup(&p);
    /* a class of one's own with its own driver and DeviceClass */
    static const char *const kv[] = {"gpu.classes.fpga.taint.key",
                                     "aws.amazon.com/fpga",
                                     "gpu.classes.fpga.nodeLabel.value",
                                     "aws-fpga",
                                     "gpu.classes.fpga.resources",
                                     "xilinx.com/fpga-xilinx_aws*",
                                     "gpu.classes.fpga.instanceFamilies",
                                     "f1,f2",
                                     "gpu.classes.fpga.dra.drivers",
                                     "fpga.example.com",
                                     "gpu.classes.fpga.dra.deviceClasses",
                                     "f2-fpga",
                                     NULL};
    nw_config_t cfg;
    config_with(&cfg, kv);
    nw_err_t err = {0};
    ck_assert_msg(nw_gpu_policy_from_config(&cfg, "", &p, &err) == NW_OK, "%s", err.msg);
    int fpga = (int)(nw_gpu_policy_class(&p, "fpga") - p.classes);
    ck_assert_int_eq(nw_gpu_dra_device_class(&p, "f2-fpga", NULL), fpga);
    cJSON *dc = cJSON_Parse("{\"spec\":{\"selectors\":[{\"cel\":{\"expression\":\"device.driver == "
                            "'fpga.example.com'\"}}]}}");
    ck_assert_int_eq(nw_gpu_dra_device_class(&p, "other", dc), fpga);
    cJSON_Delete(dc);
    ck_assert_int_eq(nw_gpu_dra_device_class(&p, "gpu.nvidia.com", NULL), 0);
    nw_gpu_policy_cleanup(&p);
    nw_config_free(&cfg);
}
END_TEST

static bool not_ready(void *arg)
{
    (void)arg;
    return false;
}

/* serve's lookup before the watch cache has listed everything: a claim it does not hold
 * yet is not known not to exist, so the pod gets a warning, not a denial */
START_TEST(dra_cache_not_synced)
{
    nw_gpu_policy_t p;
    ck_assert_int_eq(nw_gpu_policy_init(&p, ""), NW_OK);
    cJSON *none = cJSON_CreateArray();
    cJSON *pod = cJSON_Parse("{\"metadata\":{\"name\":\"x\",\"namespace\":\"default\"},"
                             "\"spec\":{\"resourceClaims\":[{\"name\":\"g\","
                             "\"resourceClaimName\":\"later\"}],\"containers\":[{\"name\":"
                             "\"c\"}]}}");
    nw_admit_req_t req = {.op = NW_OP_CREATE, .object = pod, .namespace_ = "default"};
    for (int ready = 0; ready < 2; ready++) {
        nw_admit_ctx_t ctx = {.gpu = &p,
                              .lookup = dra_lookup,
                              .lookup_arg = none,
                              .lookup_complete = true,
                              .lookup_ready = ready ? NULL : not_ready};
        nw_admit_result_t res;
        nw_admit_result_init(&res);
        ck_assert_int_eq(nw_gpu_pod_validate(&ctx, &req, &res), NW_OK);
        if (ready) {
            ck_assert(res.allowed); /* its devices are unknown: admitted, with a warning */
            ck_assert(any_warning(&res, "ResourceClaim default/later does not exist"));
        } else {
            ck_assert(res.allowed);
            ck_assert(any_warning(&res, "a watch cache still syncing"));
        }
        nw_admit_result_cleanup(&res);
    }
    cJSON_Delete(pod);
    cJSON_Delete(none);
    nw_gpu_policy_cleanup(&p);
}
END_TEST

/* A claim several pods share counts its devices once: an allocated one for the first pod it
 * is reserved for; one not allocated yet for every pod naming it (planned as if each needed
 * its own, the conservative side) */
START_TEST(dra_shared_claim_counted_once)
{
    nw_gpu_policy_t p;
    ck_assert_int_eq(nw_gpu_policy_init(&p, ""), NW_OK);
    cJSON *objs = cJSON_Parse(
        "[{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{"
        "\"name\":\"shared\",\"namespace\":\"default\"},\"spec\":{\"devices\":{\"requests\":"
        "[{\"name\":\"g\",\"exactly\":{\"deviceClassName\":\"gpu.nvidia.com\"}}]}},"
        "\"status\":{\"allocation\":{\"devices\":{\"results\":[]}},\"reservedFor\":["
        "{\"resource\":\"pods\",\"name\":\"a\",\"uid\":\"1\"}]}},"
        "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{"
        "\"name\":\"fresh\",\"namespace\":\"default\"},\"spec\":{\"devices\":{\"requests\":"
        "[{\"name\":\"g\",\"exactly\":{\"deviceClassName\":\"gpu.nvidia.com\"}}]}}}]");
    nw_gpu_dra_src_t src = {dra_lookup, objs, true};
    static const char *const cases[][3] = {
        {"shared", "a", "1"}, {"shared", "b", "0"}, {"fresh", "a", "1"}, {"fresh", "b", "1"}};
    for (size_t i = 0; i < 4; i++) {
        char js[200];
        snprintf(js, sizeof js,
                 "{\"resourceClaims\":[{\"name\":\"g\",\"resourceClaimName\":"
                 "\"%s\"}]}",
                 cases[i][0]);
        cJSON *spec = cJSON_Parse(js);
        nw_gpu_dra_t d;
        nw_gpu_dra_pod(&p, spec, "default", cases[i][1], &src, &d);
        ck_assert_uint_eq(d.classes, 1u); /* the class either way */
        ck_assert_msg(d.devices[0] == atoi(cases[i][2]), "%s for %s: %d devices", cases[i][0],
                      cases[i][1], d.devices[0]);
        cJSON_Delete(spec);
    }
    cJSON_Delete(objs);
    nw_gpu_policy_cleanup(&p);
}
END_TEST

/* Bad DRA settings are refused naming the key. */
START_TEST(dra_config_errors)
{
    static const char *const bad[][3] = {
        {"gpu.dra.drivers", "gpu.nvidia.com,Bad_Driver",
         "gpu.dra.drivers[1]: \"Bad_Driver\" is "
         "not a DNS subdomain"},
        {"gpu.dra.deviceClasses", "a..b", "gpu.dra.deviceClasses[0]: \"a..b\" is not a DNS"},
        {"gpu.dra.drivers", "x.com,x.com", "gpu.dra.drivers[1]: \"x.com\" is listed twice"},
        {"gpu.classes.amd.dra.drivers", "gpu.nvidia.com",
         "gpu.classes.amd.dra.drivers[0]: gpu.nvidia.com is also a DRA driver of the nvidia "
         "class"},
        {"gpu.classes.neuron.dra.deviceClasses", "mig.nvidia.com",
         "gpu.classes.neuron.dra.deviceClasses[0]: mig.nvidia.com is also a DeviceClass of the "
         "nvidia class"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *kv[] = {bad[i][0], bad[i][1], NULL};
        nw_config_t cfg;
        config_with(&cfg, kv);
        nw_gpu_policy_t p;
        nw_err_t err = {0};
        ck_assert_int_eq(nw_gpu_policy_from_config(&cfg, "", &p, &err), NW_EINVAL);
        ck_assert_msg(strstr(err.msg, bad[i][2]), "%s: got '%s'", bad[i][0], err.msg);
        nw_config_free(&cfg);
    }
}
END_TEST

START_TEST(policy_user_classes)
{
    /* a class of one's own beside the defaults, a default redefined */
    static const char *const kv[] = {"gpu.classes.fpga.taint.key",
                                     "aws.amazon.com/fpga",
                                     "gpu.classes.fpga.nodeLabel.value",
                                     "aws-fpga",
                                     "gpu.classes.fpga.resources",
                                     "xilinx.com/fpga-xilinx_aws*",
                                     "gpu.classes.fpga.instanceFamilies",
                                     "f1,f2",
                                     "gpu.classes.neuron.instanceFamilies",
                                     "inf2",
                                     "gpu.classes.nvidia.nodeLabel.value",
                                     "nvidia",
                                     NULL};
    nw_config_t cfg;
    config_with(&cfg, kv);
    nw_gpu_policy_t p;
    nw_err_t err = {0};
    ck_assert_msg(nw_gpu_policy_from_config(&cfg, "", &p, &err) == NW_OK, "%s", err.msg);
    ck_assert_uint_eq(p.nclasses, 7);
    ck_assert_str_eq(p.classes[0].label_value, "nvidia");
    const nw_accel_class_t *x = nw_gpu_policy_class(&p, "fpga");
    ck_assert_ptr_nonnull(x);
    ck_assert_str_eq(x->taint_key, "aws.amazon.com/fpga");
    ck_assert_str_eq(x->label_value, "aws-fpga");
    ck_assert_int_eq(nw_gpu_resource_class(&p, "xilinx.com/fpga-xilinx_aws-vu9p-f1_dynamic_5_0"),
                     6);
    ck_assert_int_eq(nw_gpu_family_class(&p, "f2"), 6);
    /* the default xilinx class keeps the U30 shells */
    ck_assert_int_eq(nw_gpu_resource_class(&p, "xilinx.com/fpga-xilinx_u30_gen3x4_base_2-0"), 5);
    const nw_accel_class_t *n = nw_gpu_policy_class(&p, "neuron");
    ck_assert_uint_eq(n->nfamilies, 1);
    ck_assert_str_eq(n->families[0], "inf2");
    ck_assert_int_eq(nw_gpu_family_class(&p, "trn1"), -1);
    nw_gpu_policy_cleanup(&p);
    nw_config_free(&cfg);
    /* the class's instance types: by a label that is not the catalog's device label, generic
     * pools could not be kept off them; two classes claiming one resource */
    static const struct {
        const char *const kv[12];
        const char *path, *msg;
    } bad[] = {
        {{"gpu.classes.fpga.taint.key", "fpga", "gpu.classes.fpga.nodeLabel.value", "fpga",
          "gpu.classes.fpga.resources", "example.com/fpga", NULL},
         "gpu.classes.fpga.instanceFamilies",
         "needs instance families or an instance requirement"},
        {{"gpu.classes.fpga.taint.key", "fpga", "gpu.classes.fpga.nodeLabel.value", "fpga",
          "gpu.classes.fpga.resources", "example.com/fpga",
          "gpu.classes.fpga.instanceRequirement.key", "example.com/fpga-node",
          "gpu.classes.fpga.instanceRequirement.values", "true", NULL},
         "gpu.classes.fpga.instanceFamilies",
         "is not one of the catalog's device labels"},
        {{"gpu.classes.fpga.taint.key", "fpga", "gpu.classes.fpga.nodeLabel.value", "fpga",
          "gpu.classes.fpga.resources", "aws.amazon.com/neurondevice",
          "gpu.classes.fpga.instanceFamilies", "vt1", NULL},
         "gpu.classes.fpga.resources",
         "aws.amazon.com/neurondevice is also a resource of the neuron class"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        config_with(&cfg, bad[i].kv);
        memset(&err, 0, sizeof err);
        ck_assert_int_eq(nw_gpu_policy_from_config(&cfg, "", &p, &err), NW_EINVAL);
        ck_assert_str_eq(err.path, bad[i].path);
        ck_assert_msg(strstr(err.msg, bad[i].msg), "%zu: %s", i, err.msg);
        nw_config_free(&cfg);
    }
}
END_TEST

/* ---- MIG slices of a pool's GPUs (scaler/sched/mig.h) -------------------------------- */

START_TEST(mig_capacity_model)
{
    /* per GPU: the all-<profile> layouts and all-balanced, by model and memory */
    ck_assert_int_eq(nw_gpushare_slices("a100", 40960, "all-1g.5gb", "1g.5gb"), 7);
    ck_assert_int_eq(nw_gpushare_slices("a100", 40960, "all-3g.20gb", "3g.20gb"), 2);
    ck_assert_int_eq(nw_gpushare_slices("a100", 40960, "all-1g.5gb", "3g.20gb"), 0);
    ck_assert_int_eq(nw_gpushare_slices("a100", 40960, "all-balanced", "1g.5gb"), 2);
    ck_assert_int_eq(nw_gpushare_slices("a100", 40960, "all-balanced", "2g.10gb"), 1);
    ck_assert_int_eq(nw_gpushare_slices("a100", 81920, "all-1g.10gb", "1g.10gb"), 7);
    ck_assert_int_eq(nw_gpushare_slices("h100", 81920, "all-7g.80gb", "7g.80gb"), 1);
    ck_assert_int_eq(nw_gpushare_slices("a100", 40960, "all-1g.10gb", "1g.10gb"), 4);
    /* not MIG-capable, an unknown layout, a profile of another memory size */
    ck_assert_int_eq(nw_gpushare_slices("a10g", 22888, "all-1g.5gb", "1g.5gb"), -1);
    ck_assert_int_eq(nw_gpushare_slices("a100", 40960, "custom-config", "1g.5gb"), -1);
    ck_assert_int_eq(nw_gpushare_slices("h100", 81920, "all-1g.5gb", "1g.5gb"), -1);
    ck_assert(nw_mig_is_resource("nvidia.com/mig-1g.5gb"));
    ck_assert(!nw_mig_is_resource("nvidia.com/mig-"));
    ck_assert(!nw_mig_is_resource("nvidia.com/gpu"));
    /* a type's resources under a pool's layout */
    nw_labels_t pool, type;
    nw_labels_init(&pool);
    nw_labels_init(&type);
    ck_assert_int_eq(nw_labels_set(&type, "karpenter.k8s.aws/instance-gpu-name", "a100"), NW_OK);
    ck_assert_int_eq(nw_labels_set(&type, "karpenter.k8s.aws/instance-gpu-memory", "40960"), NW_OK);
    char *names[NW_SCHED_NRES] = {0};
    names[NW_SR_FIXED] = "nvidia.com/mig-1g.5gb";
    names[NW_SR_FIXED + 1] = "example.com/other";
    nw_sched_res_t r = {{0}};
    r.v[NW_SR_NVIDIA_GPU] = 8000;
    r.v[NW_SR_FIXED + 1] = 3000;
    nw_mig_adjust(&pool, &type, names, NW_SR_FIXED + 2, &r); /* no layout: as it is */
    ck_assert_int_eq(r.v[NW_SR_NVIDIA_GPU], 8000);
    ck_assert_int_eq(r.v[NW_SR_FIXED], 0);
    ck_assert_int_eq(nw_labels_set(&pool, NW_MIG_CONFIG_LABEL, "all-1g.5gb"), NW_OK);
    nw_mig_adjust(&pool, &type, names, NW_SR_FIXED + 2, &r);
    ck_assert_int_eq(r.v[NW_SR_NVIDIA_GPU], 0);
    ck_assert_int_eq(r.v[NW_SR_FIXED], 56000);
    ck_assert_int_eq(r.v[NW_SR_FIXED + 1], 3000);
    /* GPUs that cannot run the layout stay whole */
    ck_assert_int_eq(nw_labels_set(&type, "karpenter.k8s.aws/instance-gpu-name", "l4"), NW_OK);
    nw_sched_res_t l4 = {{0}};
    l4.v[NW_SR_NVIDIA_GPU] = 1000;
    nw_mig_adjust(&pool, &type, names, NW_SR_FIXED + 2, &l4);
    ck_assert_int_eq(l4.v[NW_SR_NVIDIA_GPU], 1000);
    ck_assert_int_eq(l4.v[NW_SR_FIXED], 0);
    /* time-slicing: 4 replicas of each device, whole GPUs (l4) or slices (a100, mixed) */
    ck_assert_int_eq(nw_labels_set(&pool, NW_GPUSHARE_REPLICAS_LABEL, "4"), NW_OK);
    l4.v[NW_SR_NVIDIA_GPU] = 1000;
    nw_mig_adjust(&pool, &type, names, NW_SR_FIXED + 2, &l4);
    ck_assert_int_eq(l4.v[NW_SR_NVIDIA_GPU], 4000);
    ck_assert_int_eq(nw_labels_set(&type, "karpenter.k8s.aws/instance-gpu-name", "a100"), NW_OK);
    nw_sched_res_t a = {{0}};
    a.v[NW_SR_NVIDIA_GPU] = 8000;
    nw_mig_adjust(&pool, &type, names, NW_SR_FIXED + 2, &a);
    ck_assert_int_eq(a.v[NW_SR_NVIDIA_GPU], 0);
    ck_assert_int_eq(a.v[NW_SR_FIXED], 224000); /* 8 GPUs x 7 slices x 4 */
    /* single strategy: the slices are nvidia.com/gpu */
    ck_assert_int_eq(nw_labels_set(&pool, NW_GPUSHARE_REPLICAS_LABEL, "1"), NW_OK);
    ck_assert_int_eq(nw_labels_set(&pool, NW_GPUSHARE_MIG_STRATEGY_LABEL, "single"), NW_OK);
    nw_sched_res_t sg = {{0}};
    sg.v[NW_SR_NVIDIA_GPU] = 8000;
    nw_mig_adjust(&pool, &type, names, NW_SR_FIXED + 2, &sg);
    ck_assert_int_eq(sg.v[NW_SR_NVIDIA_GPU], 56000);
    ck_assert_int_eq(sg.v[NW_SR_FIXED], 0);
    /* a declaration the webhook refuses changes nothing */
    ck_assert_int_eq(nw_labels_set(&pool, NW_GPUSHARE_REPLICAS_LABEL, "0"), NW_OK);
    nw_sched_res_t bad = {{0}};
    bad.v[NW_SR_NVIDIA_GPU] = 8000;
    nw_mig_adjust(&pool, &type, names, NW_SR_FIXED + 2, &bad);
    ck_assert_int_eq(bad.v[NW_SR_NVIDIA_GPU], 8000);
    nw_labels_cleanup(&pool);
    nw_labels_cleanup(&type);
}
END_TEST

/* The declaration's labels: what is accepted, and errors naming the label */
START_TEST(gpushare_parse)
{
    nw_gpushare_t sh;
    nw_err_t e = {0};
    ck_assert_int_eq(nw_gpushare_parse(NULL, NULL, NULL, &sh, &e), NW_OK);
    ck_assert_int_eq(sh.replicas, 1);
    ck_assert_ptr_null(sh.layout);
    ck_assert_int_eq(nw_gpushare_parse("8", "all-1g.10gb", "single", &sh, &e), NW_OK);
    ck_assert_int_eq(sh.replicas, 8);
    ck_assert_str_eq(sh.layout, "all-1g.10gb");
    ck_assert(sh.single);
    ck_assert_int_eq(nw_gpushare_parse(NULL, "all-disabled", "none", &sh, &e), NW_OK);
    ck_assert_ptr_null(sh.layout);
    ck_assert_int_eq(nw_gpushare_parse("256", "all-balanced", "mixed", &sh, &e), NW_OK);
    static const struct {
        const char *r, *l, *s, *path, *msg;
    } bad[] = {
        {"0", NULL, NULL, "nvidia.com/gpu.replicas", "integer from 1 to 256, got \"0\""},
        {"257", NULL, NULL, "nvidia.com/gpu.replicas", "got \"257\""},
        {"4x", NULL, NULL, "nvidia.com/gpu.replicas", "got \"4x\""},
        {"-2", NULL, NULL, "nvidia.com/gpu.replicas", "got \"-2\""},
        {"", NULL, NULL, "nvidia.com/gpu.replicas", "got \"\""},
        {NULL, "all-9g.99gb", NULL, "nvidia.com/mig.config", "unknown MIG layout \"all-9g.99gb\""},
        {NULL, "custom", NULL, "nvidia.com/mig.config", "unknown MIG layout"},
        {NULL, "all-enabled", NULL, "nvidia.com/mig.config", "unknown MIG layout"},
        {NULL, NULL, "Mixed", "nvidia.com/mig.strategy", "unknown MIG strategy \"Mixed\""},
        {NULL, "all-balanced", "single", "nvidia.com/mig.strategy", "not all-balanced"},
        {NULL, "all-3g.40gb", "none", "nvidia.com/mig.strategy", "exposes no MIG device"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        nw_err_t b = {0};
        ck_assert_int_eq(nw_gpushare_parse(bad[i].r, bad[i].l, bad[i].s, &sh, &b), NW_EINVAL);
        ck_assert_str_eq(b.path, bad[i].path);
        ck_assert_msg(strstr(b.msg, bad[i].msg), "case %zu: %s", i, b.msg);
    }
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
    class_pod_cases = nw_test_cases_json("tests/data/gpu/classes.json", 7);
    class_pool_cases = nw_test_cases_json("tests/data/gpu/classes-pools.json", 5);
    nw_test_add_cases(tc, class_pod_case, class_pod_cases);
    nw_test_add_cases(tc, class_pool_case, class_pool_cases);
    nw_test_add_cases(tc, userdata_case, userdata_cases);
    dra_cases = nw_test_cases_json("tests/data/gpu/dra.json", 12);
    nw_test_add_cases(tc, dra_case, dra_cases);
    tcase_add_test(tc, dra_device_classes);
    tcase_add_test(tc, dra_config_errors);
    tcase_add_test(tc, dra_cache_not_synced);
    tcase_add_test(tc, dra_shared_claim_counted_once);
    tcase_add_test(tc, policy_disabled_and_handlers);
    tcase_add_test(tc, custom_policy_and_garbage);
    tcase_add_test(tc, isolation_matrix);
    tcase_add_test(tc, isolation_matrix_user_taint_values);
    tcase_add_test(tc, userdata_taint_detection);
    tcase_add_test(tc, catalog_accelerators_isolated);
    tcase_add_test(tc, policy_from_config);
    tcase_add_test(tc, policy_user_classes);
    tcase_add_test(tc, policy_uncounted_families);
    tcase_add_test(tc, mig_capacity_model);
    tcase_add_test(tc, gpushare_parse);
    suite_add_tcase(s, tc);
    return s;
}
