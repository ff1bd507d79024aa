/*
 * bench/cost/cost.c — one cost scenario through nodewarden's scheduling simulation,
 * and the instance types a model of the same scenario may use.
 *
 *   build/bench/cost SCENARIO.json [greedy]
 *
 * SCENARIO: {"types": "catalog" | [{"name", "cpu", "memoryGi", "price"}...],
 *            "pools": [NodePool...], "pods": [Pod...]}. "catalog" loads the embedded
 * catalog (us-east-1, zones a-c); a list adds synthetic types (110 pods each, 100m CPU
 * and 600Mi memory reserved, one on-demand offering per zone at the given price).
 *
 * Prints one JSON object:
 *   "nodewarden": {"pricePerHour", "unschedulable", "claims": [{"pool", "type", "price",
 *                  "pods": [index...]}]}   (pod indexes into SCENARIO.pods)
 *   "pools": [{"name", "types": [{"name", "price", "cpu", "memory", "pods", "gpu"}]}]
 * where a pool's types are those its requirements admit (matched on each type's labels
 * plus an offering's zone and capacity type, as the simulation matches them), each at
 * its cheapest available admitted offering, with the allocatable a node of that pool
 * gets (cpu in millicores, memory in MiB, pods, nvidia.com/gpu). bench/cost/run
 * writes the bin-packing model from it. The packing is the default (scaler.repack on: the
 * re-pack of interchangeable new claims after Karpenter's greedy placement); "greedy"
 * solves with Karpenter's packing (scaler.repack off).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/requirements.h"
#include "common/file.h"
#include "scaler/sched/from_catalog.h"
#include "scaler/sched/schedule.h"

static const char *const zones[] = {"us-east-1a", "us-east-1b", "us-east-1c"};

static int fail(const char *what, const nw_err_t *err)
{
    fprintf(stderr, "bench/cost: %s: %s%s%s\n", what, err ? err->path : "",
            err && err->path[0] ? ": " : "", err ? err->msg : "");
    return 2;
}

static int add_types(nw_sched_snap_t *s, const cJSON *types)
{
    nw_err_t err = {0};
    if (cJSON_IsString(types) && strcmp(types->valuestring, "catalog") == 0)
        return nw_from_catalog_load(s, NULL, 0, "us-east-1", zones, 3, &err) == NW_OK
                   ? 0
                   : fail("catalog", &err);
    if (!cJSON_IsArray(types))
        return fail("types: want \"catalog\" or a list", NULL);
    const cJSON *t;
    cJSON_ArrayForEach(t, types)
    {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(t, "name");
        const cJSON *cpu = cJSON_GetObjectItemCaseSensitive(t, "cpu");
        const cJSON *mem = cJSON_GetObjectItemCaseSensitive(t, "memoryGi");
        const cJSON *price = cJSON_GetObjectItemCaseSensitive(t, "price");
        if (!cJSON_IsString(name) || !cJSON_IsNumber(cpu) || !cJSON_IsNumber(mem) ||
            !cJSON_IsNumber(price))
            return fail("types[]: want name (string), cpu, memoryGi, price (numbers)", NULL);
        nw_sched_res_t cap = {{0}}, alloc;
        cap.v[NW_SR_CPU] = (int64_t)(cpu->valuedouble * 1000);
        cap.v[NW_SR_MEMORY] = (int64_t)(mem->valuedouble * 1073741824.0) * 1000;
        cap.v[NW_SR_PODS] = 110 * 1000;
        alloc = cap;
        alloc.v[NW_SR_CPU] -= 100;
        alloc.v[NW_SR_MEMORY] -= 600LL * 1048576 * 1000;
        nw_sched_offering_t of[3];
        for (int z = 0; z < 3; z++) {
            memset(&of[z], 0, sizeof of[z]);
            snprintf(of[z].zone, sizeof of[z].zone, "%s", zones[z]);
            snprintf(of[z].capacity_type, sizeof of[z].capacity_type, "on-demand");
            of[z].price = price->valuedouble;
            of[z].available = true;
        }
        const char *k[] = {"kubernetes.io/arch", "kubernetes.io/os"};
        const char *v[] = {"amd64", "linux"};
        if (nw_snap_node_add_itype_raw(s, name->valuestring, k, v, 2, &cap, &alloc, false, of, 3,
                                       &err) != NW_OK)
            return fail(name->valuestring, &err);
    }
    return 0;
}

/* The cheapest available offering of type t that the pool's requirements admit, or a
 * negative price when none does. */
static double pool_price(const nw_sched_itype_t *t, const nw_reqs_t *reqs)
{
    double best = -1;
    for (int o = 0; o < t->noffer; o++) {
        const nw_sched_offering_t *of = &t->offerings[o];
        if (!of->available || of->price <= 0 || (best >= 0 && of->price >= best))
            continue;
        nw_labels_t l;
        nw_labels_init(&l);
        int ok = 1;
        for (size_t i = 0; ok && i < t->labels.n; i++)
            ok = nw_labels_set(&l, t->labels.v[i].key, t->labels.v[i].value) == NW_OK;
        ok = ok && nw_labels_set(&l, "topology.kubernetes.io/zone", of->zone) == NW_OK &&
             nw_labels_set(&l, "karpenter.sh/capacity-type", of->capacity_type) == NW_OK &&
             nw_labels_set(&l, "node.kubernetes.io/instance-type", t->name) == NW_OK;
        if (ok && nw_requirements_match_labels(reqs, &l, NULL))
            best = of->price;
        nw_labels_cleanup(&l);
    }
    return best;
}

static int dump_pool(const nw_sched_snap_t *s, size_t p, const cJSON *pool, cJSON *out)
{
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(pool, "spec");
    const cJSON *tmpl = cJSON_GetObjectItemCaseSensitive(spec, "template");
    const cJSON *tspec = cJSON_GetObjectItemCaseSensitive(tmpl, "spec");
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(tspec, "requirements");
    nw_reqs_t reqs;
    nw_err_t err = {0};
    if (nw_requirements_json_parse_list(arr, "spec.template.spec.requirements",
                                        NW_REQS_PARSE_KARPENTER, &reqs, &err) != NW_OK)
        return fail(nw_snapshot_pool_name(s, p), &err);
    cJSON *jp = cJSON_AddObjectToObject(out, "");
    cJSON_AddStringToObject(jp, "name", nw_snapshot_pool_name(s, p));
    cJSON *jt = cJSON_AddArrayToObject(jp, "types");
    for (size_t t = 0; t < nw_snapshot_nitypes(s); t++) {
        const nw_sched_itype_t *it = nw_snapshot_itype(s, t);
        double price = pool_price(it, &reqs);
        nw_sched_res_t alloc;
        const nw_sched_res_t *a =
            nw_snap_node_pool_type_allocatable(s, p, t, &alloc) ? &alloc : NULL;
        if (price < 0 || !a || it->metal)
            continue;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(jt, o);
        cJSON_AddStringToObject(o, "name", it->name);
        cJSON_AddNumberToObject(o, "price", price);
        cJSON_AddNumberToObject(o, "cpu", (double)a->v[NW_SR_CPU]);
        cJSON_AddNumberToObject(o, "memory", (double)(a->v[NW_SR_MEMORY] / 1000 / 1048576));
        cJSON_AddNumberToObject(o, "pods", (double)(a->v[NW_SR_PODS] / 1000));
        cJSON_AddNumberToObject(o, "gpu", (double)(a->v[NW_SR_NVIDIA_GPU] / 1000));
    }
    nw_requirements_cleanup(&reqs);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2 && !(argc == 3 && strcmp(argv[2], "greedy") == 0)) {
        fprintf(stderr, "usage: %s SCENARIO.json [greedy]\n", argv[0]);
        return 2;
    }
    size_t len = 0;
    char *text = nw_file_read(argv[1], 64u << 20, &len);
    if (!text) {
        fprintf(stderr, "bench/cost: %s: %s\n", argv[1], strerror(errno));
        return 2;
    }
    cJSON *sc = cJSON_ParseWithLength(text, len);
    free(text);
    const cJSON *pools = cJSON_GetObjectItemCaseSensitive(sc, "pools");
    const cJSON *pods = cJSON_GetObjectItemCaseSensitive(sc, "pods");
    if (!cJSON_IsArray(pools) || !cJSON_IsArray(pods)) {
        cJSON_Delete(sc);
        return fail(argv[1], &(nw_err_t){.msg = "want an object with pools and pods lists"});
    }
    nw_sched_snap_t *s = nw_snapshot_new();
    int rc = add_types(s, cJSON_GetObjectItemCaseSensitive(sc, "types"));
    nw_err_t err = {0};
    const cJSON *it;
    cJSON_ArrayForEach(it, pools)
    {
        if (!rc && nw_snap_node_add_pool_json(s, it, &err) != NW_OK)
            rc = fail("pools[]", &err);
    }
    cJSON_ArrayForEach(it, pods)
    {
        if (!rc && nw_snap_pod_add_json(s, it, &err) != NW_OK)
            rc = fail("pods[]", &err);
    }
    nw_sched_opts_t so = {.repack = argc == 2}; /* the default packing; "greedy": Karpenter's */
    nw_snapshot_set_opts(s, &so);
    nw_sched_results_t r;
    if (!rc && nw_solve(s, 0, &r, &err) != NW_OK)
        rc = fail("solve", &err);
    if (rc) {
        nw_snapshot_free(s);
        cJSON_Delete(sc);
        return rc;
    }
    cJSON *out = cJSON_CreateObject();
    cJSON *nwj = cJSON_AddObjectToObject(out, "nodewarden");
    cJSON_AddNumberToObject(nwj, "pricePerHour", r.total_price);
    cJSON_AddNumberToObject(nwj, "unschedulable", r.nunsched);
    cJSON *claims = cJSON_AddArrayToObject(nwj, "claims");
    for (int i = 0; i < r.nclaims; i++) {
        const nw_sched_claim_t *c = &r.claims[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(claims, o);
        cJSON_AddStringToObject(o, "pool", nw_snapshot_pool_name(s, (size_t)c->pool));
        cJSON_AddStringToObject(o, "type", nw_snapshot_itype(s, (size_t)c->itype)->name);
        cJSON_AddNumberToObject(o, "price", c->price);
        cJSON *pl = cJSON_AddArrayToObject(o, "pods");
        for (int k = 0; k < c->npods; k++)
            cJSON_AddItemToArray(pl, cJSON_CreateNumber(c->pods[k]));
    }
    cJSON *jpools = cJSON_AddArrayToObject(out, "pools");
    size_t p = 0;
    cJSON_ArrayForEach(it, pools)
    {
        cJSON *holder = cJSON_CreateObject();
        if (!rc)
            rc = dump_pool(s, p++, it, holder);
        cJSON *jp = holder->child;
        if (jp) {
            cJSON_DetachItemViaPointer(holder, jp);
            cJSON_AddItemToArray(jpools, jp);
        }
        cJSON_Delete(holder);
    }
    if (!rc) {
        char *o = cJSON_PrintUnformatted(out);
        if (o)
            puts(o);
        free(o);
    }
    cJSON_Delete(out);
    nw_solve_results_free(&r);
    nw_snapshot_free(s);
    cJSON_Delete(sc);
    return rc;
}
