/* Unit tests for api/node (the typed Node and NodeClaim records). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/node.h"
#include "common/json.h"

Suite *nw_node_suite(void);

/* A Node as a kubelet and the API server write it: managedFields, images, nodeInfo. */
static const char *const FULL_NODE =
    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"ip-10-0-1-5\","
    "\"uid\":\"n-uid\",\"resourceVersion\":\"42\",\"creationTimestamp\":\"2026-12-01T10:00:00Z\","
    "\"labels\":{\"karpenter.sh/nodepool\":\"default\",\"topology.kubernetes.io/zone\":"
    "\"us-east-1a\",\"kubernetes.io/hostname\":\"ip-10-0-1-5\",\"a\":\"1\"},"
    "\"annotations\":{\"karpenter.sh/nodepool-hash\":\"123\","
    "\"kubectl.kubernetes.io/last-applied-configuration\":\"{big}\"},"
    "\"finalizers\":[\"karpenter.sh/termination\"],"
    "\"managedFields\":[{\"manager\":\"kubelet\",\"fieldsV1\":{}}]},"
    "\"spec\":{\"providerID\":\"aws:///us-east-1a/i-0abc\",\"unschedulable\":true,"
    "\"taints\":[{\"key\":\"karpenter.sh/disrupted\",\"effect\":\"NoSchedule\"},"
    "{\"key\":\"dedicated\",\"value\":\"gpu\",\"effect\":\"NoExecute\"}]},"
    "\"status\":{\"phase\":\"Running\",\"capacity\":{\"cpu\":\"4\",\"memory\":\"16Gi\","
    "\"pods\":\"110\",\"nvidia.com/gpu\":1},\"allocatable\":{\"cpu\":\"3920m\",\"memory\":"
    "\"15Gi\",\"pods\":\"110\"},\"conditions\":[{\"type\":\"MemoryPressure\",\"status\":\"False\"},"
    "{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"KubeletReady\",\"message\":\"ok\","
    "\"lastTransitionTime\":\"2026-12-01T10:01:00Z\"}],\"images\":[{\"names\":[\"x\"]}],"
    "\"nodeInfo\":{\"kubeletVersion\":\"v1.34.0\"}}}";

static const char *const FULL_CLAIM =
    "{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodeClaim\",\"metadata\":{\"name\":"
    "\"default-x7k2p\",\"uid\":\"c-uid\",\"resourceVersion\":\"9\",\"creationTimestamp\":"
    "\"2026-12-01T10:00:00Z\",\"deletionTimestamp\":\"2026-12-02T10:00:00Z\",\"labels\":{"
    "\"karpenter.sh/nodepool\":\"default\",\"karpenter.sh/capacity-type\":\"spot\"},"
    "\"annotations\":{\"karpenter.sh/nodepool-hash\":\"123\"},\"finalizers\":["
    "\"karpenter.sh/termination\"]},\"spec\":{\"nodeClassRef\":{\"group\":\"karpenter.k8s.aws\","
    "\"kind\":\"EC2NodeClass\",\"name\":\"default\"},\"requirements\":[{\"key\":"
    "\"karpenter.sh/capacity-type\",\"operator\":\"In\",\"values\":[\"spot\"]},{\"key\":"
    "\"node.kubernetes.io/instance-type\",\"operator\":\"In\",\"values\":[\"m5.large\","
    "\"m5.xlarge\"],\"minValues\":2}],\"taints\":[{\"key\":\"t\",\"effect\":\"NoSchedule\"}],"
    "\"startupTaints\":[{\"key\":\"s\",\"effect\":\"NoSchedule\"}],\"resources\":{\"requests\":{"
    "\"cpu\":\"1500m\",\"pods\":\"3\"}},\"expireAfter\":\"720h\",\"terminationGracePeriod\":"
    "\"%s\"},\"status\":{\"providerID\":\"aws:///us-east-1a/i-0abc\",\"nodeName\":"
    "\"ip-10-0-1-5\",\"imageID\":\"ami-1\",\"capacity\":{\"cpu\":\"2\"},\"allocatable\":{"
    "\"cpu\":\"1930m\"},\"lastPodEventTime\":\"2026-12-01T11:00:00Z\",\"conditions\":[{\"type\":"
    "\"Launched\",\"status\":\"True\",\"lastTransitionTime\":\"2026-12-01T10:00:30Z\"},{\"type\":"
    "\"Drifted\",\"status\":\"True\",\"reason\":\"NodePoolDrifted\"}]}}";

static cJSON *parse(const char *s)
{
    cJSON *j = cJSON_Parse(s);
    ck_assert_ptr_nonnull(j);
    return j;
}

static cJSON *claim_json(const char *tgp)
{
    char buf[4096];
    snprintf(buf, sizeof buf, FULL_CLAIM, tgp);
    return parse(buf);
}

static int64_t milli(const nw_resources_t *r, const char *name)
{
    return nw_resources_get_or_zero(r, name).milli;
}

START_TEST(node_keeps_what_readers_read)
{
    cJSON *j = parse(FULL_NODE);
    nw_node_t *n = NULL;
    nw_err_t err = {0};
    ck_assert_int_eq(nw_node_decode(j, &n, &err), NW_OK);
    cJSON_Delete(j); /* the record holds no pointer into the JSON */
    ck_assert_str_eq(n->m.name, "ip-10-0-1-5");
    ck_assert_str_eq(n->m.uid, "n-uid");
    ck_assert_str_eq(n->m.rv, "42");
    ck_assert_str_eq(n->m.created_text, "2026-12-01T10:00:00Z");
    ck_assert(n->m.created > 0);
    ck_assert(!n->m.terminating);
    ck_assert_int_eq(n->m.deleted, 0);
    ck_assert_str_eq(n->m.deleted_text, "");
    /* labels sorted, looked up by key */
    ck_assert_uint_eq(n->m.nlabels, 4);
    for (size_t i = 1; i < n->m.nlabels; i++)
        ck_assert(strcmp(n->m.labels[i - 1].key, n->m.labels[i].key) < 0);
    ck_assert_str_eq(nw_node_meta_label(&n->m, "karpenter.sh/nodepool"), "default");
    ck_assert_str_eq(nw_node_meta_label(&n->m, "a"), "1");
    ck_assert_ptr_null(nw_node_meta_label(&n->m, "b"));
    ck_assert_str_eq(nw_node_meta_annotation(&n->m, "karpenter.sh/nodepool-hash"), "123");
    ck_assert_ptr_null(
        nw_node_meta_annotation(&n->m, "kubectl.kubernetes.io/last-applied-configuration"));
    ck_assert_uint_eq(n->m.nannotations, 1);
    ck_assert(nw_node_meta_has_finalizer(&n->m, "karpenter.sh/termination"));
    ck_assert(!nw_node_meta_has_finalizer(&n->m, "other"));
    ck_assert_str_eq(n->provider_id, "aws:///us-east-1a/i-0abc");
    ck_assert(n->unschedulable);
    ck_assert_str_eq(n->phase, "Running");
    ck_assert_uint_eq(n->m.taints.n, 2);
    ck_assert(nw_node_meta_has_taint(&n->m, "karpenter.sh/disrupted", "NoSchedule"));
    ck_assert(!nw_node_meta_has_taint(&n->m, "karpenter.sh/disrupted", "NoExecute"));
    ck_assert(nw_node_meta_has_taint(&n->m, "dedicated", NULL));
    ck_assert_str_eq(n->m.taints.v[1].value, "gpu");
    ck_assert_int_eq(milli(&n->capacity, "cpu"), 4000);
    ck_assert_int_eq(milli(&n->capacity, "nvidia.com/gpu"), 1000);
    ck_assert_int_eq(milli(&n->allocatable, "cpu"), 3920);
    ck_assert_int_eq(milli(&n->allocatable, "memory"), 15LL * 1024 * 1024 * 1024 * 1000);
    ck_assert_int_eq(n->ready, NW_NODE_COND_TRUE);
    const nw_node_cond_t *r = nw_node_meta_condition(&n->m, "Ready");
    ck_assert_ptr_nonnull(r);
    ck_assert_str_eq(r->reason, "KubeletReady");
    ck_assert_str_eq(r->message, "ok");
    ck_assert_str_eq(r->status_name, "True");
    ck_assert(r->since > n->m.created);
    ck_assert_int_eq(nw_node_meta_condition_status(&n->m, "MemoryPressure"), NW_NODE_COND_FALSE);
    ck_assert_int_eq(nw_node_meta_condition_status(&n->m, "DiskPressure"), NW_NODE_COND_ABSENT);
    /* a compact record: well under the JSON it came from */
    ck_assert(nw_node_bytes(n) > sizeof *n && nw_node_bytes(n) < strlen(FULL_NODE) * 2);
    nw_node_free(n);
}
END_TEST

START_TEST(node_minimal_is_all_absent)
{
    cJSON *j = parse("{\"metadata\":{\"name\":\"n\"}}");
    nw_node_t *n = NULL;
    nw_err_t err = {0};
    ck_assert_int_eq(nw_node_decode(j, &n, &err), NW_OK);
    cJSON_Delete(j);
    ck_assert_str_eq(n->m.uid, "");
    ck_assert_str_eq(n->provider_id, "");
    ck_assert_uint_eq(n->m.nlabels, 0);
    ck_assert_ptr_null(nw_node_meta_label(&n->m, "x"));
    ck_assert_uint_eq(n->m.taints.n, 0);
    ck_assert_int_eq(n->ready, NW_NODE_COND_ABSENT);
    ck_assert(!n->unschedulable);
    ck_assert_uint_eq(nw_resources_len(&n->allocatable), 0);
    nw_node_free(n);
    nw_node_free(NULL);
}
END_TEST

START_TEST(claim_keeps_what_readers_read)
{
    cJSON *j = claim_json("1h");
    nw_node_claim_t *c = NULL;
    nw_err_t err = {0};
    ck_assert_int_eq(nw_node_claim_decode(j, &c, &err), NW_OK);
    cJSON_Delete(j);
    ck_assert_str_eq(c->m.name, "default-x7k2p");
    ck_assert(c->m.terminating);
    ck_assert(c->m.deleted > c->m.created);
    ck_assert_str_eq(c->nodepool, "default");
    ck_assert_str_eq(c->class_group, "karpenter.k8s.aws");
    ck_assert_str_eq(c->class_kind, "EC2NodeClass");
    ck_assert_str_eq(c->class_name, "default");
    ck_assert_uint_eq(c->requirements.n, 2);
    const nw_req_t *it = nw_requirements_get(&c->requirements, "node.kubernetes.io/instance-type");
    ck_assert_ptr_nonnull(it);
    ck_assert_uint_eq(it->nvalues, 2);
    ck_assert_int_eq(it->min_values, 2);
    ck_assert_str_eq(c->type_first, "m5.large");
    ck_assert_uint_eq(c->m.taints.n, 1);
    ck_assert_uint_eq(c->startup_taints.n, 1);
    ck_assert_str_eq(c->startup_taints.v[0].key, "s");
    ck_assert_int_eq(milli(&c->requests, "cpu"), 1500);
    ck_assert_int_eq(milli(&c->requests, "pods"), 3000);
    ck_assert_str_eq(c->expire_after, "720h");
    ck_assert(c->expire_after_ok);
    ck_assert_int_eq(c->expire_after_ns, 720LL * 3600 * 1000000000LL);
    ck_assert_str_eq(c->tgp, "1h");
    ck_assert(c->tgp_ok);
    ck_assert_int_eq(c->tgp_ns, 3600LL * 1000000000LL);
    ck_assert_str_eq(c->provider_id, "aws:///us-east-1a/i-0abc");
    ck_assert_str_eq(c->node_name, "ip-10-0-1-5");
    ck_assert_str_eq(c->image_id, "ami-1");
    ck_assert_int_eq(milli(&c->capacity, "cpu"), 2000);
    ck_assert_int_eq(milli(&c->allocatable, "cpu"), 1930);
    ck_assert(c->last_pod_event > c->m.created);
    const nw_node_cond_t *d = nw_node_meta_condition(&c->m, "Drifted");
    ck_assert_ptr_nonnull(d);
    ck_assert_str_eq(d->reason, "NodePoolDrifted");
    ck_assert_int_eq(d->since, 0);
    ck_assert_int_eq(nw_node_meta_condition_status(&c->m, "Launched"), NW_NODE_COND_TRUE);
    ck_assert(nw_node_claim_bytes(c) > sizeof *c);
    nw_node_claim_free(c);
    nw_node_claim_free(NULL);
}
END_TEST

/* The first instance type a NodeClaim's requirements list, in the order written (the
 * provisioner writes the cheapest first); the parsed requirement keeps its values sorted.
 * Only an In item of that exact key counts; none: "". */
START_TEST(claim_type_first_as_written)
{
    static const struct {
        const char *reqs, *first;
    } cases[] = {
        {"[{\"key\":\"node.kubernetes.io/instance-type\",\"operator\":\"In\",\"values\":["
         "\"m5.xlarge\",\"c5.large\",\"m5.large\"]}]",
         "m5.xlarge"},
        {"[{\"key\":\"node.kubernetes.io/instance-type\",\"operator\":\"NotIn\",\"values\":["
         "\"t3.nano\"]},{\"key\":\"karpenter.sh/capacity-type\",\"operator\":\"In\",\"values\""
         ":[\"spot\"]},{\"key\":\"node.kubernetes.io/instance-type\",\"operator\":\"In\","
         "\"values\":[\"r5.large\",\"a1.large\"]}]",
         "r5.large"},
        {"[{\"key\":\"karpenter.sh/capacity-type\",\"operator\":\"In\",\"values\":[\"spot\"]}]",
         ""},
        {"[]", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char buf[1024];
        snprintf(buf, sizeof buf, "{\"metadata\":{\"name\":\"c\"},\"spec\":{\"requirements\":%s}}",
                 cases[i].reqs);
        cJSON *j = parse(buf);
        nw_node_claim_t *c = NULL;
        nw_err_t err = {0};
        ck_assert_int_eq(nw_node_claim_decode(j, &c, &err), NW_OK);
        cJSON_Delete(j); /* the record holds its own copy */
        ck_assert_str_eq(c->type_first, cases[i].first);
        const nw_req_t *it =
            nw_requirements_get(&c->requirements, "node.kubernetes.io/instance-type");
        if (i == 0) /* sorted in the set, as written in type_first */
            ck_assert_str_eq(it->values[0], "c5.large");
        nw_node_claim_free(c);
    }
}
END_TEST

START_TEST(claim_durations_kept_as_written)
{
    nw_node_claim_t *c = NULL;
    nw_err_t err = {0};
    cJSON *j = claim_json("soon");
    ck_assert_int_eq(nw_node_claim_decode(j, &c, &err), NW_OK);
    ck_assert_str_eq(c->tgp, "soon");
    ck_assert(c->tgp_set && !c->tgp_ok);
    nw_node_claim_free(c);
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(j, "spec"), "expireAfter",
                              cJSON_CreateString("Never"));
    ck_assert_int_eq(nw_node_claim_decode(j, &c, &err), NW_OK);
    ck_assert(c->expire_after_ok);
    ck_assert_int_eq(c->expire_after_ns, INT64_MAX);
    nw_node_claim_free(c);
    cJSON_Delete(j);
}
END_TEST

/* One malformed field at a time: the error names it, nothing is returned. */
static void node_refused(const char *json, const char *path)
{
    cJSON *j = parse(json);
    nw_node_t *n = (nw_node_t *)1;
    nw_err_t err = {0};
    ck_assert_int_eq(nw_node_decode(j, &n, &err), NW_EINVAL);
    ck_assert_ptr_null(n);
    ck_assert_msg(strcmp(err.path, path) == 0, "path %s, want %s (%s)", err.path, path, err.msg);
    cJSON_Delete(j);
}

static void claim_refused(const char *json, const char *path)
{
    cJSON *j = parse(json);
    nw_node_claim_t *c = (nw_node_claim_t *)1;
    nw_err_t err = {0};
    ck_assert_int_eq(nw_node_claim_decode(j, &c, &err), NW_EINVAL);
    ck_assert_ptr_null(c);
    ck_assert_msg(strstr(err.path, path) == err.path, "path %s, want %s (%s)", err.path, path,
                  err.msg);
    cJSON_Delete(j);
}

START_TEST(malformed_input_names_the_field)
{
    node_refused("[]", "");
    node_refused("{\"metadata\":{}}", "metadata.name");
    node_refused("{\"metadata\":{\"name\":\"\"}}", "metadata.name");
    node_refused("{\"metadata\":{\"name\":\"n\",\"labels\":[]}}", "metadata.labels");
    node_refused("{\"metadata\":{\"name\":\"n\",\"labels\":{\"a\":1}}}", "metadata.labels[a]");
    node_refused("{\"metadata\":{\"name\":\"n\",\"annotations\":{\"x\":true}}}",
                 "metadata.annotations[x]");
    node_refused("{\"metadata\":{\"name\":\"n\",\"finalizers\":\"f\"}}", "metadata.finalizers");
    node_refused("{\"metadata\":{\"name\":\"n\",\"finalizers\":[\"a\",2]}}",
                 "metadata.finalizers[1]");
    node_refused("{\"metadata\":{\"name\":\"n\"},\"status\":{\"conditions\":{}}}",
                 "status.conditions");
    node_refused("{\"metadata\":{\"name\":\"n\"},\"status\":{\"conditions\":[{\"type\":\"R\"},"
                 "{\"status\":\"True\"}]}}",
                 "status.conditions[1].type");
    node_refused("{\"metadata\":{\"name\":\"n\"},\"status\":{\"allocatable\":{\"cpu\":\"1.2.3\"}}}",
                 "status.allocatable[cpu]");
    node_refused("{\"metadata\":{\"name\":\"n\"},\"status\":{\"capacity\":{\"memory\":\"x\"}}}",
                 "status.capacity[memory]");
    claim_refused("{\"metadata\":{\"name\":\"c\"},\"spec\":{\"taints\":[{\"key\":\"k\","
                  "\"effect\":\"Sometimes\"}]}}",
                  "spec.taints[0]");
    claim_refused("{\"metadata\":{\"name\":\"c\"},\"spec\":{\"startupTaints\":{}}}",
                  "spec.startupTaints");
    claim_refused("{\"metadata\":{\"name\":\"c\"},\"spec\":{\"requirements\":[{\"key\":\"k\","
                  "\"operator\":\"Maybe\",\"values\":[]}]}}",
                  "spec.requirements[0]");
    claim_refused("{\"metadata\":{\"name\":\"c\"},\"spec\":{\"resources\":{\"requests\":{"
                  "\"cpu\":\"lots\"}}}}",
                  "spec.resources.requests[cpu]");
    claim_refused("{\"metadata\":{\"name\":\"c\"},\"spec\":{\"expireAfter\":720}}",
                  "spec.expireAfter");
    claim_refused("{\"metadata\":{\"name\":\"c\"},\"spec\":{\"terminationGracePeriod\":[]}}",
                  "spec.terminationGracePeriod");
    claim_refused("{\"metadata\":{\"name\":\"c\"},\"spec\":{\"nodeClassRef\":\"default\"}}",
                  "spec.nodeClassRef");
    claim_refused("{\"metadata\":{\"name\":\"c\"},\"status\":{\"allocatable\":{\"cpu\":\"?\"}}}",
                  "status.allocatable[cpu]");
    claim_refused("{\"metadata\":{\"name\":\"c\",\"generation\":\"2\"}}", "metadata.generation");
    claim_refused("{\"metadata\":{\"name\":\"c\"},\"status\":{\"conditions\":[{\"type\":\"A\"},"
                  "{\"type\":\"B\",\"observedGeneration\":\"1\"}]}}",
                  "status.conditions[1].observedGeneration");
}
END_TEST

/* A bad timestamp counts as absent (as in a pod's record); null maps are absent. */
START_TEST(lenient_where_readers_were)
{
    cJSON *j = parse("{\"metadata\":{\"name\":\"n\",\"creationTimestamp\":\"yesterday\","
                     "\"labels\":null,\"deletionTimestamp\":null},\"status\":{\"conditions\":[{"
                     "\"type\":\"Ready\",\"status\":\"Maybe\",\"lastTransitionTime\":\"x\"}]}}");
    nw_node_t *n = NULL;
    nw_err_t err = {0};
    ck_assert_int_eq(nw_node_decode(j, &n, &err), NW_OK);
    cJSON_Delete(j);
    ck_assert_int_eq(n->m.created, 0);
    ck_assert_str_eq(n->m.created_text, "yesterday");
    ck_assert(!n->m.terminating);
    ck_assert_int_eq(n->ready, NW_NODE_COND_UNKNOWN);
    ck_assert_int_eq(n->m.conds[0].since, 0);
    nw_node_free(n);
}
END_TEST

/* The conditions come back as written (what a status patch built from the record sends):
 * every field the API server keeps, lastTransitionTime and observedGeneration only when
 * they were there; metadata.generation is kept for the next observedGeneration. */
START_TEST(conditions_render_back)
{
    cJSON *j =
        parse("{\"metadata\":{\"name\":\"c\",\"generation\":3},\"status\":{"
              "\"conditions\":[{\"type\":\"Launched\",\"status\":\"True\",\"reason\":"
              "\"Launched\",\"message\":\"\",\"lastTransitionTime\":\"2026-12-01T10:00:30Z\","
              "\"observedGeneration\":3},{\"type\":\"Drifted\",\"status\":\"False\"}]}}");
    nw_node_claim_t *c = NULL;
    ck_assert_int_eq(nw_node_claim_decode(j, &c, NULL), NW_OK);
    ck_assert_int_eq(c->m.generation, 3);
    ck_assert(c->m.conds[0].observed_gen_set);
    ck_assert_int_eq(c->m.conds[0].observed_gen, 3);
    ck_assert(!c->m.conds[1].observed_gen_set);
    cJSON *back = nw_node_meta_conditions_json(&c->m);
    ck_assert_ptr_nonnull(back);
    cJSON *want = parse("[{\"type\":\"Launched\",\"status\":\"True\",\"reason\":\"Launched\","
                        "\"message\":\"\",\"lastTransitionTime\":\"2026-12-01T10:00:30Z\","
                        "\"observedGeneration\":3},{\"type\":\"Drifted\",\"status\":\"False\","
                        "\"reason\":\"\",\"message\":\"\"}]");
    if (!cJSON_Compare(back, want, 1)) {
        char *t = cJSON_PrintUnformatted(back);
        ck_abort_msg("conditions rendered as %s", t ? t : "?");
    }
    cJSON_Delete(want);
    cJSON_Delete(back);
    nw_node_claim_free(c);
    cJSON_Delete(j);
    /* none: an empty array */
    j = parse("{\"metadata\":{\"name\":\"n\"}}");
    nw_node_t *n = NULL;
    ck_assert_int_eq(nw_node_decode(j, &n, NULL), NW_OK);
    ck_assert_int_eq(n->m.generation, 0);
    back = nw_node_meta_conditions_json(&n->m);
    ck_assert(cJSON_IsArray(back) && cJSON_GetArraySize(back) == 0);
    cJSON_Delete(back);
    nw_node_free(n);
    cJSON_Delete(j);
}
END_TEST

Suite *nw_node_suite(void)
{
    Suite *s = suite_create("node");
    TCase *tc = tcase_create("records");
    tcase_add_test(tc, node_keeps_what_readers_read);
    tcase_add_test(tc, node_minimal_is_all_absent);
    tcase_add_test(tc, claim_keeps_what_readers_read);
    tcase_add_test(tc, claim_durations_kept_as_written);
    tcase_add_test(tc, claim_type_first_as_written);
    tcase_add_test(tc, malformed_input_names_the_field);
    tcase_add_test(tc, lenient_where_readers_were);
    tcase_add_test(tc, conditions_render_back);
    suite_add_tcase(s, tc);
    return s;
}
