/*
 * tests/fuzz/fuzz_requirements.c — libFuzzer target for api/requirements.
 *
 * The input is parsed as JSON and then read as a requirement list (pod flavour and
 * Karpenter flavour), as node-selector terms and as a PodSpec. Every set that parses
 * is intersected with itself and with a fixed set, checked for Intersects /
 * Compatible / label matching both ways, formatted, and asked for Any values.
 * Invariants checked (abort on violation): A∩A prints like A; A∩F equals F∩A;
 * Any() of a requirement satisfies it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/requirements.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fixed_set(nw_reqs_t *f)
{
    const char *zones[] = {"us-east-1a", "us-east-1b"};
    const char *arch[] = {"amd64"};
    const char *cpu[] = {"4"};
    const char *team[] = {"a", "5"};
    nw_requirements_init(f);
    nw_requirements_add(f, "topology.kubernetes.io/zone", NW_REQ_IN, zones, 2, 0, NULL);
    nw_requirements_add(f, "kubernetes.io/arch", NW_REQ_IN, arch, 1, 0, NULL);
    nw_requirements_add(f, "karpenter.k8s.aws/instance-cpu", NW_REQ_GT, cpu, 1, 0, NULL);
    nw_requirements_add(f, "team", NW_REQ_NOT_IN, team, 2, 2, NULL);
}

static void check_set(const nw_reqs_t *s, const nw_reqs_t *f, const nw_labels_t *labels)
{
    char a[4096], b[4096];
    nw_reqs_t x, y;
    if (nw_requirements_intersect(s, s, &x) == NW_OK) {
        nw_requirements_format(s, a, sizeof a);
        nw_requirements_format(&x, b, sizeof b);
        if (strcmp(a, b) != 0)
            abort(); /* intersection is idempotent */
        nw_requirements_cleanup(&x);
    }
    if (nw_requirements_intersect(s, f, &x) == NW_OK) {
        if (nw_requirements_intersect(f, s, &y) == NW_OK) {
            nw_requirements_format(&x, a, sizeof a);
            nw_requirements_format(&y, b, sizeof b);
            if (strcmp(a, b) != 0)
                abort(); /* and commutative */
            nw_requirements_cleanup(&y);
        }
        nw_requirements_match_labels(&x, labels, NULL);
        nw_requirements_cleanup(&x);
    }
    nw_reqs_conflict_t c;
    nw_requirements_intersects(s, f, &c);
    nw_requirements_intersects(f, s, &c);
    nw_requirements_compatible(s, f, 0, &c);
    nw_requirements_compatible(f, s, NW_REQS_ALLOW_UNDEFINED_WELL_KNOWN, &c);
    nw_requirements_compatible(s, s, 0, NULL);
    nw_requirements_match_labels(s, labels, &c);
    for (size_t i = 0; i < s->n; i++) {
        char v[64];
        if (nw_requirements_req_any(&s->v[i], v, sizeof v) && !nw_requirements_req_has(&s->v[i], v))
            abort();
        nw_requirements_req_format(&s->v[i], a, sizeof a);
        nw_requirements_req_has(&s->v[i], "5");
        nw_requirements_req_matches(&s->v[i], NULL);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cJSON *j = cJSON_ParseWithLength((const char *)data, size);
    if (!j)
        return 0;
    nw_reqs_t f, s;
    fixed_set(&f);
    nw_labels_t labels;
    nw_labels_init(&labels);
    nw_labels_set(&labels, "topology.kubernetes.io/zone", "us-east-1a");
    nw_labels_set(&labels, "karpenter.k8s.aws/instance-cpu", "8");
    nw_labels_set(&labels, "team", "b");

    nw_err_t err = {0};
    if (nw_requirements_json_parse_list(j, "p", 0, &s, &err) == NW_OK) {
        check_set(&s, &f, &labels);
        nw_requirements_cleanup(&s);
    }
    if (nw_requirements_json_parse_list(j, "p", NW_REQS_PARSE_KARPENTER, &s, NULL) == NW_OK) {
        check_set(&s, &f, &labels);
        nw_labels_t none;
        nw_labels_init(&none);
        nw_requirements_match_labels(&s, &none, NULL);
        nw_requirements_cleanup(&s);
    }
    nw_reqs_t *terms;
    size_t nterms;
    if (nw_requirements_json_parse_terms(j, "p", &terms, &nterms, NULL) == NW_OK) {
        for (size_t i = 0; i < nterms; i++)
            check_set(&terms[i], &f, &labels);
        nw_requirements_json_terms_free(terms, nterms);
    }
    if (nw_requirements_json_parse_pod_spec(j, "spec", NW_REQS_PARSE_PREFERRED, &s, NULL) ==
        NW_OK) {
        check_set(&s, &f, &labels);
        nw_requirements_cleanup(&s);
    }
    nw_errs_t errs;
    nw_err_list_init(&errs);
    nw_requirements_validate_runtime(j, "spec.template.spec.requirements", &errs);
    if (nw_requirements_json_parse_node_selector(j, "p", &s, NULL) == NW_OK)
        nw_requirements_cleanup(&s);
    nw_labels_cleanup(&labels);
    nw_requirements_cleanup(&f);
    cJSON_Delete(j);
    return 0;
}
