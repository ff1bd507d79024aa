/*
 * tests/fuzz/fuzz_schedule.c — libFuzzer target for scaler/sched through the `plan`
 * path (cli/plan.h): the input is a YAML/JSON multi-document stream of manifests
 * (NodePools, Pods, workloads, DaemonSets, Nodes, NodeClaims); they are collected,
 * turned into a snapshot with the embedded catalog and solved. Invariants (abort on
 * violation): every considered pod ends up exactly once (new claim, existing node or
 * unschedulable); a claim's chosen type is the first it keeps; each unschedulable pod
 * has a reason for every pool or a single reason.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/yaml.h"
#include "scaler/sched/schedule.h"
#include "cli/plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 65536)
        return 0;
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = 0;
    cJSON **docs = NULL;
    size_t nd = 0;
    if (nw_yaml_load_docs(text, size, &docs, &nd, NULL) != NW_OK) {
        free(text);
        return 0;
    }
    free(text);
    nw_plan_t *pl = nw_plan_new(true);
    int ok = pl != NULL;
    for (size_t i = 0; ok && i < nd; i++) {
        /* keep the fuzzer away from huge replica counts: they are slow, not interesting */
        const cJSON *spec = cJSON_GetObjectItemCaseSensitive(docs[i], "spec");
        const cJSON *r = spec ? cJSON_GetObjectItemCaseSensitive(spec, "replicas") : NULL;
        if (cJSON_IsNumber(r) && r->valuedouble > 200)
            ok = 0;
        else
            ok = nw_plan_collect(pl, docs[i], "fuzz") == 0;
    }
    nw_sched_snap_t *s = ok ? nw_plan_snapshot(pl, NULL, 0, "us-east-1", NULL, 0, NULL, 0) : NULL;
    if (s && nw_snapshot_npods(s) <= 2000) {
        nw_sched_results_t r;
        if (nw_solve(s, 0, &r, NULL) == NW_OK) {
            size_t n = nw_snapshot_npods(s);
            unsigned char *seen = calloc(n + 1, 1);
            int total = 0;
            for (int i = 0; seen && i < r.nclaims; i++) {
                const nw_sched_claim_t *c = &r.claims[i];
                if (c->nitypes > 0 && c->itypes[0] != c->itype)
                    abort();
                for (int k = 0; k < c->npods; k++, total++)
                    if (seen[c->pods[k]]++)
                        abort();
            }
            for (int i = 0; seen && i < r.nplaced; i++, total++)
                if (seen[r.placed[i].pod]++)
                    abort();
            for (int i = 0; seen && i < r.nunsched; i++, total++) {
                const nw_sched_unsched_t *u = &r.unsched[i];
                if (seen[u->pod]++)
                    abort();
                if (!u->reason && u->nreasons != (int)nw_snapshot_npools(s))
                    abort();
            }
            if (seen && total != r.considered)
                abort();
            free(seen);
        }
        nw_solve_results_free(&r);
    }
    nw_plan_free(pl);
    nw_yaml_docs_free(docs, nd);
    return 0;
}
