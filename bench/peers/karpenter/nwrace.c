/*
 * bench/peers/karpenter/nwrace.c — nodewarden's side of the race against Karpenter's own
 * scheduler (bench/peers/karpenter/run): the same case file both sides read.
 *
 *   build/bench/nwrace solve CASE.json [greedy]
 *                                         solve the case at the default (cheapest) packing,
 *                                         or Karpenter's greedy one; print one result line
 *   build/bench/nwrace catalog            print the embedded catalog (us-east-1, zones
 *                                         a-c, default overhead) as a case's
 *                                         "instanceTypes" ({"instanceTypes": [...]})
 *
 * The case format (Karpenter's side writes and reads it too: race_test.go):
 *   {"name": string, "ignorePreferences": bool,
 *    "nodePools": [NodePool...],                          (at least one)
 *    "instanceTypes": [{"name": string,
 *                       "labels": {key: value},           (optional)
 *                       "capacity": {resource: quantity}, (cpu, memory, pods required)
 *                       "allocatable": {resource: quantity},
 *                       "offerings": [{"zone": string, "capacityType": string,
 *                                      "price": number >= 0, "available": bool}]}],
 *    "pods": [Pod...]}
 * A type is metal when its karpenter.k8s.aws/instance-size label ends in "metal".
 * Malformed input is refused with the field named (instanceTypes[3].offerings[1].price),
 * exit status 2.
 *
 * A result line: {"side": "nodewarden", "pods", "scheduled", "unschedulable", "nodes",
 * "pricePerHour", "solveSeconds" (the mean of "solves" solves, repeated until they add
 * up to a second, at most 50), "podsPerSec", "peakRssMiB" (VmHWM: one solve's, each result being
 * freed before the next solve), "types": {type: nodes}}. Solve time only: building the snapshot is
 * not counted (nor is Karpenter's setup).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/quantity.h"
#include "common/file.h"
#include "scaler/sched/from_catalog.h"
#include "scaler/sched/schedule.h"

#define MAX_LABELS 64
#define MIN_SOLVE_SECONDS 1.0
#define MAX_SOLVES 50

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Print "nwrace: PATH: MSG" and return 2. */
static int fail(const char *path, const char *msg)
{
    fprintf(stderr, "nwrace: %s%s%s\n", path, path[0] ? ": " : "", msg);
    return 2;
}

/* A resource map {name: quantity} into slots; at = the field's path. */
static int load_res(nw_sched_snap_t *s, const cJSON *m, const char *at, nw_sched_res_t *out)
{
    char path[512], msg[600];
    memset(out, 0, sizeof *out);
    if (!cJSON_IsObject(m))
        return fail(at, "want an object of resource quantities");
    const cJSON *q;
    cJSON_ArrayForEach(q, m)
    {
        snprintf(path, sizeof path, "%s[%s]", at, q->string);
        if (!cJSON_IsString(q))
            return fail(path, "want a quantity string");
        nw_quantity_t v;
        nw_err_t err = {0};
        if (nw_quantity_parse(q->valuestring, &v, &err) != NW_OK) {
            snprintf(msg, sizeof msg, "%s", err.msg);
            return fail(path, msg);
        }
        if (v.milli < 0)
            return fail(path, "want a quantity >= 0");
        int slot = nw_snapshot_res_slot(s, q->string);
        if (slot < 0)
            return fail(path, "too many resource names");
        out->v[slot] = v.milli;
    }
    static const char *const need[] = {"cpu", "memory", "pods"};
    for (size_t i = 0; i < sizeof need / sizeof *need; i++)
        if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(m, need[i]))) {
            snprintf(path, sizeof path, "%s[%s]", at, need[i]);
            return fail(path, "missing");
        }
    return 0;
}

/* A string field of o that fits in cap bytes (non-empty). */
static int get_str(const cJSON *o, const char *key, const char *at, char *dst, size_t cap)
{
    char path[512];
    snprintf(path, sizeof path, "%s.%s", at, key);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsString(v) || !v->valuestring[0])
        return fail(path, "want a non-empty string");
    if (strlen(v->valuestring) >= cap)
        return fail(path, "too long");
    snprintf(dst, cap, "%s", v->valuestring);
    return 0;
}

static int load_offering(const cJSON *o, const char *at, nw_sched_offering_t *of)
{
    char path[512];
    memset(of, 0, sizeof *of);
    if (!cJSON_IsObject(o))
        return fail(at, "want an object");
    if (get_str(o, "zone", at, of->zone, sizeof of->zone) ||
        get_str(o, "capacityType", at, of->capacity_type, sizeof of->capacity_type))
        return 2;
    if (strcmp(of->capacity_type, "on-demand") != 0 && strcmp(of->capacity_type, "spot") != 0) {
        snprintf(path, sizeof path, "%s.capacityType", at);
        return fail(path, "want on-demand or spot");
    }
    const cJSON *price = cJSON_GetObjectItemCaseSensitive(o, "price");
    const cJSON *avail = cJSON_GetObjectItemCaseSensitive(o, "available");
    snprintf(path, sizeof path, "%s.price", at);
    if (!cJSON_IsNumber(price) || !(price->valuedouble >= 0))
        return fail(path, "want a number >= 0");
    snprintf(path, sizeof path, "%s.available", at);
    if (!cJSON_IsBool(avail))
        return fail(path, "want true or false");
    of->price = price->valuedouble;
    of->available = cJSON_IsTrue(avail);
    return 0;
}

static int load_labels(const cJSON *l, const char *at, const char **keys, const char **vals, int *n)
{
    char path[256];
    *n = 0;
    if (!l)
        return 0;
    snprintf(path, sizeof path, "%s.labels", at);
    if (!cJSON_IsObject(l))
        return fail(path, "want an object of strings");
    const cJSON *v;
    cJSON_ArrayForEach(v, l)
    {
        snprintf(path, sizeof path, "%s.labels[%s]", at, v->string);
        if (!cJSON_IsString(v))
            return fail(path, "want a string");
        if (*n >= MAX_LABELS)
            return fail(path, "too many labels");
        keys[*n] = v->string;
        vals[*n] = v->valuestring;
        (*n)++;
    }
    return 0;
}

static bool is_metal(const char **keys, const char **vals, int n)
{
    for (int i = 0; i < n; i++) {
        size_t len = strlen(vals[i]);
        if (strcmp(keys[i], "karpenter.k8s.aws/instance-size") == 0 && len >= 5 &&
            strcmp(vals[i] + len - 5, "metal") == 0)
            return true;
    }
    return false;
}

static int load_itype(nw_sched_snap_t *s, const cJSON *t, int i)
{
    char at[64], path[256], name[64];
    snprintf(at, sizeof at, "instanceTypes[%d]", i);
    if (!cJSON_IsObject(t))
        return fail(at, "want an object");
    const char *keys[MAX_LABELS], *vals[MAX_LABELS];
    int nl = 0;
    nw_sched_res_t cap, alloc;
    if (get_str(t, "name", at, name, sizeof name) ||
        load_labels(cJSON_GetObjectItemCaseSensitive(t, "labels"), at, keys, vals, &nl))
        return 2;
    snprintf(path, sizeof path, "%s.capacity", at);
    if (load_res(s, cJSON_GetObjectItemCaseSensitive(t, "capacity"), path, &cap))
        return 2;
    snprintf(path, sizeof path, "%s.allocatable", at);
    if (load_res(s, cJSON_GetObjectItemCaseSensitive(t, "allocatable"), path, &alloc))
        return 2;
    const cJSON *offs = cJSON_GetObjectItemCaseSensitive(t, "offerings");
    int noff = cJSON_GetArraySize(offs);
    snprintf(path, sizeof path, "%s.offerings", at);
    if (!cJSON_IsArray(offs) || noff == 0 || noff > NW_SCHED_MAX_OFFERINGS)
        return fail(path, "want a list of 1 to 48 offerings");
    nw_sched_offering_t of[NW_SCHED_MAX_OFFERINGS];
    for (int k = 0; k < noff; k++) {
        snprintf(path, sizeof path, "%s.offerings[%d]", at, k);
        if (load_offering(cJSON_GetArrayItem(offs, k), path, &of[k]))
            return 2;
    }
    nw_err_t err = {0};
    if (nw_snap_node_add_itype_raw(s, name, keys, vals, nl, &cap, &alloc, is_metal(keys, vals, nl),
                                   of, noff, &err) != NW_OK) {
        snprintf(path, sizeof path, "%s%s%s", at, err.path[0] ? "." : "", err.path);
        return fail(path, err.msg);
    }
    return 0;
}

/* Objects of a list through add (a NodePool or a Pod from its JSON), errors named
 * list[i].field. */
static int load_list(nw_sched_snap_t *s, const cJSON *c, const char *key, bool nonempty,
                     nw_rc_t (*add)(nw_sched_snap_t *, const cJSON *, nw_err_t *))
{
    char path[256];
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(c, key);
    if (!cJSON_IsArray(l) || (nonempty && cJSON_GetArraySize(l) == 0))
        return fail(key, nonempty ? "want a non-empty list" : "want a list");
    int i = 0;
    const cJSON *o;
    cJSON_ArrayForEach(o, l)
    {
        nw_err_t err = {0};
        snprintf(path, sizeof path, "%s[%d]", key, i);
        if (!cJSON_IsObject(o))
            return fail(path, "want an object");
        if (add(s, o, &err) != NW_OK) {
            snprintf(path, sizeof path, "%s[%d]%s%s", key, i, err.path[0] ? "." : "", err.path);
            return fail(path, err.msg);
        }
        i++;
    }
    return 0;
}

/* The snapshot of a case; NULL after printing why. */
static nw_sched_snap_t *load_case(const cJSON *c, bool greedy)
{
    if (!cJSON_IsObject(c)) {
        fail("", "want a JSON object (a case)");
        return NULL;
    }
    const cJSON *ign = cJSON_GetObjectItemCaseSensitive(c, "ignorePreferences");
    if (ign && !cJSON_IsBool(ign)) {
        fail("ignorePreferences", "want true or false");
        return NULL;
    }
    const cJSON *types = cJSON_GetObjectItemCaseSensitive(c, "instanceTypes");
    if (!cJSON_IsArray(types) || cJSON_GetArraySize(types) == 0) {
        fail("instanceTypes", "want a non-empty list");
        return NULL;
    }
    nw_sched_snap_t *s = nw_snapshot_new();
    int rc = s ? 0 : fail("", "out of memory");
    for (int i = 0; !rc && i < cJSON_GetArraySize(types); i++)
        rc = load_itype(s, cJSON_GetArrayItem(types, i), i);
    if (!rc)
        rc = load_list(s, c, "nodePools", true, nw_snap_node_add_pool_json);
    if (!rc)
        rc = load_list(s, c, "pods", true, nw_snap_pod_add_json);
    if (rc) {
        nw_snapshot_free(s);
        return NULL;
    }
    nw_sched_opts_t so = {.ignore_preferences = cJSON_IsTrue(ign), .repack = !greedy};
    nw_snapshot_set_opts(s, &so);
    return s;
}

/* This process's peak resident memory in MiB (VmHWM: getrusage's maxrss also counts the
 * parent's, up to the exec, when that was larger). */
static double peak_rss_mib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    double kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %lf kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb / 1024.0;
}

/* What the result line says of a solve's result, kept so that the result itself can be
 * freed before the next solve. */
typedef struct {
    int scheduled, unschedulable, nodes;
    double price;
    char *types; /* {type: nodes} as JSON */
} summary_t;

static void summarize(const nw_sched_snap_t *s, const nw_sched_results_t *r, summary_t *out)
{
    int scheduled = r->nplaced;
    cJSON *types = cJSON_CreateObject();
    for (int i = 0; i < r->nclaims; i++) {
        scheduled += r->claims[i].npods;
        const char *name = nw_snapshot_itype(s, (size_t)r->claims[i].itype)->name;
        cJSON *n = cJSON_GetObjectItemCaseSensitive(types, name);
        if (n)
            cJSON_SetNumberValue(n, n->valuedouble + 1);
        else
            cJSON_AddNumberToObject(types, name, 1);
    }
    *out = (summary_t){.scheduled = scheduled,
                       .unschedulable = r->nunsched,
                       .nodes = r->nclaims,
                       .price = r->total_price,
                       .types = cJSON_PrintUnformatted(types)};
    cJSON_Delete(types);
}

static void print_result(const nw_sched_snap_t *s, const summary_t *m, double secs, int solves)
{
    printf("{\"side\":\"nodewarden\",\"pods\":%zu,\"scheduled\":%d,\"unschedulable\":%d,"
           "\"nodes\":%d,\"pricePerHour\":%.4f,\"solveSeconds\":%.6f,\"solves\":%d,"
           "\"podsPerSec\":%.1f,\"peakRssMiB\":%.1f,\"types\":%s}\n",
           nw_snapshot_npods(s), m->scheduled, m->unschedulable, m->nodes, m->price, secs, solves,
           secs > 0 ? (double)nw_snapshot_npods(s) / secs : 0.0, peak_rss_mib(),
           m->types ? m->types : "{}");
}

/* NWRACE_CLAIMS=1: each claim on stderr (type, zone, price, requests, its pods' keys), to
 * see where a packing's money goes. */
static void print_claims(const nw_sched_snap_t *s, const nw_sched_results_t *r)
{
    for (int i = 0; i < r->nclaims; i++) {
        const nw_sched_claim_t *cl = &r->claims[i];
        cJSON *req = nw_snapshot_res_to_json(s, &cl->requests);
        char *rq = req ? cJSON_PrintUnformatted(req) : NULL;
        fprintf(stderr, "claim %d %s %s $%.4f %s pods=%d:", i,
                nw_snapshot_itype(s, (size_t)cl->itype)->name, cl->zone, cl->price, rq ? rq : "{}",
                cl->npods);
        for (int k = 0; k < cl->npods; k++)
            fprintf(stderr, " %s", nw_snapshot_pod_key(s, (size_t)cl->pods[k]));
        fputc('\n', stderr);
        free(rq);
        cJSON_Delete(req);
    }
}

static int solve(const char *file, bool greedy)
{
    size_t len = 0;
    char *text = nw_file_read(file, 1024u << 20, &len);
    if (!text)
        return fail(file, strerror(errno));
    cJSON *c = cJSON_ParseWithLength(text, len);
    free(text);
    if (!c)
        return fail(file, "not JSON");
    nw_sched_snap_t *s = load_case(c, greedy);
    cJSON_Delete(c);
    if (!s)
        return 2;
    summary_t first = {0};
    double total = 0;
    int solves = 0, rc = 0;
    /* each result is freed before the next solve (the first's summary kept), so that the
     * peak RSS is one solve's whatever the number of solves the second allows */
    while (!rc && solves < MAX_SOLVES && (solves == 0 || total < MIN_SOLVE_SECONDS)) {
        nw_sched_results_t r;
        nw_err_t err = {0};
        double t0 = now_s();
        if (nw_solve(s, 0, &r, &err) != NW_OK) {
            rc = fail("solve", err.msg);
            break;
        }
        total += now_s() - t0;
        if (solves++ == 0) {
            if (getenv("NWRACE_CLAIMS"))
                print_claims(s, &r);
            summarize(s, &r, &first);
        }
        nw_solve_results_free(&r);
    }
    if (!rc)
        print_result(s, &first, total / solves, solves);
    free(first.types);
    nw_snapshot_free(s);
    return rc;
}

/* A resource vector as {name: quantity} (zero slots left out). */
static cJSON *res_json(const nw_sched_snap_t *s, const nw_sched_res_t *r)
{
    cJSON *o = cJSON_CreateObject();
    for (int i = 0; i < NW_SCHED_NRES; i++) {
        const char *name = nw_snapshot_res_name(s, i);
        if (!name || r->v[i] == 0)
            continue;
        char buf[NW_QUANTITY_STR_MAX];
        nw_quantity_format(nw_quantity_from_milli(r->v[i], NW_QTY_DECIMAL_SI), buf, sizeof buf);
        cJSON_AddStringToObject(o, name, buf);
    }
    return o;
}

static cJSON *itype_json(const nw_sched_snap_t *s, const nw_sched_itype_t *it)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", it->name);
    cJSON *l = cJSON_AddObjectToObject(o, "labels");
    for (size_t k = 0; k < it->labels.n; k++)
        if (strcmp(it->labels.v[k].key, "node.kubernetes.io/instance-type") != 0)
            cJSON_AddStringToObject(l, it->labels.v[k].key, it->labels.v[k].value);
    cJSON_AddItemToObject(o, "capacity", res_json(s, &it->capacity));
    cJSON_AddItemToObject(o, "allocatable", res_json(s, &it->allocatable));
    cJSON *offs = cJSON_AddArrayToObject(o, "offerings");
    for (int k = 0; k < it->noffer; k++) {
        const nw_sched_offering_t *of = &it->offerings[k];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "zone", of->zone);
        cJSON_AddStringToObject(j, "capacityType", of->capacity_type);
        cJSON_AddNumberToObject(j, "price", of->price);
        cJSON_AddBoolToObject(j, "available", of->available);
        cJSON_AddItemToArray(offs, j);
    }
    return o;
}

static int catalog(void)
{
    static const char *const zones[] = {"us-east-1a", "us-east-1b", "us-east-1c"};
    nw_sched_snap_t *s = nw_snapshot_new();
    nw_err_t err = {0};
    if (!s || nw_from_catalog_load(s, NULL, 0, "us-east-1", zones, 3, &err) != NW_OK) {
        nw_snapshot_free(s);
        return fail("catalog", err.msg);
    }
    cJSON *out = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(out, "instanceTypes");
    for (size_t t = 0; t < nw_snapshot_nitypes(s); t++)
        cJSON_AddItemToArray(arr, itype_json(s, nw_snapshot_itype(s, t)));
    char *text = cJSON_PrintUnformatted(out);
    int rc = text ? (puts(text) < 0 ? fail("catalog", "write failed") : 0) : fail("", "no memory");
    free(text);
    cJSON_Delete(out);
    nw_snapshot_free(s);
    return rc;
}

int main(int argc, char **argv)
{
    if ((argc == 3 || (argc == 4 && strcmp(argv[3], "greedy") == 0)) &&
        strcmp(argv[1], "solve") == 0)
        return solve(argv[2], argc == 4);
    if (argc == 2 && strcmp(argv[1], "catalog") == 0)
        return catalog();
    fprintf(stderr, "usage: %s solve CASE.json [greedy] | catalog\n", argv[0]);
    return 2;
}
