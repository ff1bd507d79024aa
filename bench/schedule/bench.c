/*
 * bench/schedule/bench.c — the scheduling simulation on Karpenter's scheduling-benchmark
 * mix (sigs.k8s.io/karpenter pkg/controllers/provisioning/scheduling
 * scheduling_benchmark_test.go): pods of which one fifth each are plain, zonal
 * topology spread, hostname topology spread, zonal pod self-affinity and hostname pod
 * self-anti-affinity; CPU from {100,250,500,1000,1500}m, memory from
 * {100,256,512,1024,2048,4096}Mi; labels drawn from 7 values, each constraint selecting
 * the pod's own value.
 *
 *   bench synthetic N   400 instance types, one NodePool
 *   bench plain N       the same types and sizes, every pod plain (packing alone)
 *   bench catalog N     the embedded catalog (us-east-1, 3 zones), 3 NodePools, 5 % GPU pods
 *
 * Prints one JSON line: pods, build and solve seconds, the part of the build spent adding
 * the pods from their JSON (jsonPodsSeconds) and the time to add the same pods from their
 * decoded records (api/pod.h) to a fresh snapshot (recordPodsSeconds: the live scaler's
 * path; the decoding itself is the watch cache's, on ingest, and not counted), pods
 * decided per second (solve),
 * peak RSS (getrusage, whole process), nodes launched, $/hour, the lower bound and
 * the ratio. Lower bound: an LP dual bound — for any direction (w_cpu, w_mem) >= 0 with
 * w·allocatable(t) <= price(t) for every usable type t, no packing can cost less than
 * w·(total requests); the best of 2,000 directions is taken. GPU pods (which cannot
 * share nodes with the others) add max(GPU count x cheapest $/GPU, their own dual bound).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "api/pod.h"
#include "common/jsonintern.h"
#include "scaler/sched/from_catalog.h"
#include "scaler/sched/schedule.h"

static uint64_t rng = 88172645463325252ULL;
static unsigned rnd(unsigned n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng % n);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *zones[3] = {"test-zone-1", "test-zone-2", "test-zone-3"};

static void synthetic_types(nw_sched_snap_t *s)
{
    for (int i = 0; i < 400; i++) {
        char name[32];
        snprintf(name, sizeof name, "fake-it-%d", i);
        nw_sched_res_t cap = {{0}}, alloc;
        int64_t cpu = i + 1, memgi = 2 * (i + 1);
        cap.v[NW_SR_CPU] = cpu * 1000;
        cap.v[NW_SR_MEMORY] = memgi * 1073741824LL * 1000;
        cap.v[NW_SR_PODS] = 110 * 1000;
        alloc = cap;
        alloc.v[NW_SR_CPU] -= 100;
        alloc.v[NW_SR_MEMORY] -= 600LL * 1048576 * 1000;
        nw_sched_offering_t of[3];
        for (int z = 0; z < 3; z++) {
            memset(&of[z], 0, sizeof of[z]);
            snprintf(of[z].zone, sizeof of[z].zone, "%s", zones[z]);
            snprintf(of[z].capacity_type, sizeof of[z].capacity_type, "on-demand");
            of[z].price = 0.0425 * (double)cpu + 0.0053 * (double)memgi;
            of[z].available = true;
        }
        const char *k[] = {"kubernetes.io/arch", "kubernetes.io/os"};
        const char *v[] = {"amd64", "linux"};
        if (nw_snap_node_add_itype_raw(s, name, k, v, 2, &cap, &alloc, false, of, 3, NULL) != NW_OK)
            exit(2);
    }
}

static void add_json(nw_sched_snap_t *s, const char *kind, const char *text)
{
    cJSON *j = cJSON_Parse(text);
    nw_err_t err = {0};
    nw_rc_t rc = NW_EINVAL;
    if (j && strcmp(kind, "pool") == 0)
        rc = nw_snap_node_add_pool_json(s, j, &err);
    else if (j)
        rc = nw_snap_pod_add_json(s, j, &err);
    if (rc != NW_OK) {
        fprintf(stderr, "bench: %s: %s %s\n%s\n", kind, err.path, err.msg, text);
        exit(2);
    }
    cJSON_Delete(j);
}

/* Where make_pods puts each pod: the snapshot (from JSON, timed into json_secs) or, when
 * recs is set, a decoded record appended there. */
static double json_secs;
static nw_jsonintern_t *intern;
static nw_pod_t **recs;

static void add_pod(nw_sched_snap_t *s, int i, const char *text)
{
    if (!recs) {
        double t = now_s();
        add_json(s, "pod", text);
        json_secs += now_s() - t;
        return;
    }
    cJSON *j = cJSON_Parse(text);
    nw_err_t err = {0};
    if (!j || nw_pod_decode(j, intern, &recs[i], &err) != NW_OK) {
        fprintf(stderr, "bench: decode: %s %s\n", err.path, err.msg);
        exit(2);
    }
    cJSON_Delete(j);
}

static const int cpus[] = {100, 250, 500, 1000, 1500};
static const int mems[] = {100, 256, 512, 1024, 2048, 4096};

/* totals for the lower bound */
static double tot_cpu, tot_mem, gpu_cpu, gpu_mem, gpu_n;

static void make_pods(nw_sched_snap_t *s, int n, bool gpu5, bool plain)
{
    char buf[2048];
    for (int i = 0; i < n; i++) {
        int cpu = cpus[rnd(5)], mem = mems[rnd(6)];
        int kind = plain ? 0 : i % 5;
        char v = (char)('a' + rnd(7));
        bool gpu = gpu5 && i % 20 == 19;
        char extra[900] = "", labels[128];
        snprintf(labels, sizeof labels, "{\"my-label\":\"%c\"}", v);
        const char *sel = "{\"matchLabels\":{\"my-label\":\"%c\"}}";
        char selb[64];
        snprintf(selb, sizeof selb, sel, v);
        switch (kind) {
        case 1:
        case 2:
            snprintf(extra, sizeof extra,
                     ",\"topologySpreadConstraints\":[{\"maxSkew\":1,\"topologyKey\":\"%s\","
                     "\"whenUnsatisfiable\":\"DoNotSchedule\",\"labelSelector\":%s}]",
                     kind == 1 ? "topology.kubernetes.io/zone" : "kubernetes.io/hostname", selb);
            break;
        case 3:
            snprintf(
                extra, sizeof extra,
                ",\"affinity\":{\"podAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution"
                "\":[{\"topologyKey\":\"topology.kubernetes.io/zone\",\"labelSelector\":%s}]}}",
                selb);
            break;
        case 4:
            snprintf(
                extra, sizeof extra,
                ",\"affinity\":{\"podAntiAffinity\":{\"requiredDuringSchedulingIgnoredDuring"
                "Execution\":[{\"topologyKey\":\"kubernetes.io/hostname\",\"labelSelector\":%s}]}}",
                selb);
            break;
        default:
            break;
        }
        if (gpu)
            snprintf(extra + strlen(extra), sizeof extra - strlen(extra),
                     ",\"tolerations\":[{\"key\":\"gpu\",\"operator\":\"Exists\"}]");
        snprintf(buf, sizeof buf,
                 "{\"metadata\":{\"name\":\"p%d\",\"namespace\":\"bench\",\"uid\":\"u%d\","
                 "\"labels\":%s},\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{"
                 "\"requests\":{\"cpu\":\"%dm\",\"memory\":\"%dMi\"%s}}}]%s}}",
                 i, i, labels, cpu, mem, gpu ? ",\"nvidia.com/gpu\":\"1\"" : "", extra);
        add_pod(s, i, buf);
        if (gpu) {
            gpu_cpu += cpu / 1000.0;
            gpu_mem += mem / 1024.0;
            gpu_n += 1;
        } else {
            tot_cpu += cpu / 1000.0;
            tot_mem += mem / 1024.0;
        }
    }
}

/* LP dual bound over the usable types (mask: 0 all non-GPU, 1 GPU types only) */
static double dual_bound(const nw_sched_snap_t *s, double rc, double rm, int gpu_only)
{
    double best = 0;
    for (int k = 0; k <= 2000; k++) {
        double th = (M_PI / 2) * k / 2000.0, dc = cos(th), dm = sin(th);
        double sc = INFINITY;
        for (size_t t = 0; t < nw_snapshot_nitypes(s); t++) {
            const nw_sched_itype_t *it = nw_snapshot_itype(s, t);
            bool g = it->capacity.v[NW_SR_NVIDIA_GPU] > 0;
            if (g != (gpu_only != 0) || it->noffer == 0 || it->metal)
                continue;
            double p = 1e300;
            for (int o = 0; o < it->noffer; o++)
                if (it->offerings[o].available && it->offerings[o].price > 0 &&
                    it->offerings[o].price < p)
                    p = it->offerings[o].price;
            if (p >= 1e300)
                continue;
            double ac = it->allocatable.v[NW_SR_CPU] / 1000.0;
            double am = it->allocatable.v[NW_SR_MEMORY] / 1000.0 / 1073741824.0;
            double d = dc * ac + dm * am;
            if (d > 0 && p / d < sc)
                sc = p / d;
        }
        if (isfinite(sc) && sc * (dc * rc + dm * rm) > best)
            best = sc * (dc * rc + dm * rm);
    }
    return best;
}

static double gpu_bound(const nw_sched_snap_t *s, double n)
{
    double best = INFINITY;
    for (size_t t = 0; t < nw_snapshot_nitypes(s); t++) {
        const nw_sched_itype_t *it = nw_snapshot_itype(s, t);
        double g = it->capacity.v[NW_SR_NVIDIA_GPU] / 1000.0;
        for (int o = 0; g > 0 && o < it->noffer; o++)
            if (it->offerings[o].available && it->offerings[o].price / g < best)
                best = it->offerings[o].price / g;
    }
    return isfinite(best) ? best * n : 0;
}

/* The instance types and NodePools of a run. */
static void setup(nw_sched_snap_t *s, bool cat)
{
    if (cat) {
        const char *z[] = {"us-east-1a", "us-east-1b", "us-east-1c"};
        if (nw_from_catalog_load(s, NULL, 0, "us-east-1", z, 3, NULL) != NW_OK)
            exit(2);
        zones[0] = z[0];
        zones[1] = z[1];
        zones[2] = z[2];
        add_json(s, "pool",
                 "{\"metadata\":{\"name\":\"spot\"},\"spec\":{\"weight\":10,\"limits\":{\"cpu\":"
                 "\"2000\"},\"template\":{\"spec\":{\"requirements\":[{\"key\":\"karpenter.sh/"
                 "capacity-type\",\"operator\":\"In\",\"values\":[\"spot\"]},{\"key\":\"karpenter"
                 ".k8s.aws/instance-category\",\"operator\":\"In\",\"values\":[\"c\",\"m\",\"r\"]}"
                 ",{\"key\":\"karpenter.k8s.aws/"
                 "instance-gpu-count\",\"operator\":\"DoesNotExist\"}]}}}}");
        add_json(s, "pool",
                 "{\"metadata\":{\"name\":\"on-demand\"},\"spec\":{\"template\":{\"spec\":{"
                 "\"requirements\":[{\"key\":\"karpenter.sh/capacity-type\",\"operator\":\"In\","
                 "\"values\":[\"on-demand\"]},{\"key\":\"karpenter.k8s.aws/instance-category\","
                 "\"operator\":\"In\",\"values\":[\"c\",\"m\",\"r\"]},{\"key\":\"karpenter.k8s.aws"
                 "/instance-gpu-count\",\"operator\":\"DoesNotExist\"}]}}}}");
        add_json(s, "pool",
                 "{\"metadata\":{\"name\":\"gpu\"},\"spec\":{\"template\":{\"spec\":{\"taints\":"
                 "[{\"key\":\"gpu\",\"value\":\"true\",\"effect\":\"NoSchedule\"}],\"requirements"
                 "\":[{\"key\":\"karpenter.sh/capacity-type\",\"operator\":\"In\",\"values\":[\""
                 "on-demand\"]},{\"key\":\"karpenter.k8s.aws/instance-gpu-count\",\"operator\":"
                 "\"Exists\"}]}}}}");
    } else {
        synthetic_types(s);
        add_json(s, "pool",
                 "{\"metadata\":{\"name\":\"default\"},\"spec\":{\"template\":{"
                 "\"spec\":{}}}}");
    }
}

/* The same pods as make_pods gave the first snapshot, decoded into records first (as the
 * watch cache holds them), then added to a fresh snapshot: the seconds of those adds. */
static double record_pass(bool cat, int n, bool plain, uint64_t seed)
{
    rng = seed;
    intern = nw_jsonintern_new();
    recs = calloc((size_t)n + 1, sizeof *recs);
    if (!intern || !recs)
        exit(2);
    nw_sched_snap_t *s = nw_snapshot_new();
    setup(s, cat);
    make_pods(s, n, cat, plain);
    double t = now_s();
    for (int i = 0; i < n; i++) {
        nw_err_t err = {0};
        if (nw_snap_pod_add(s, recs[i], &err) != NW_OK) {
            fprintf(stderr, "bench: record: %s %s\n", err.path, err.msg);
            exit(2);
        }
    }
    t = now_s() - t;
    nw_snapshot_free(s);
    for (int i = 0; i < n; i++)
        nw_pod_free(recs[i]);
    free(recs);
    recs = NULL;
    nw_jsonintern_free(intern);
    return t;
}

int main(int argc, char **argv)
{
    if (argc != 3 && !(argc == 4 && strcmp(argv[3], "greedy") == 0)) {
        fprintf(stderr, "usage: bench synthetic|plain|catalog N [greedy]\n");
        return 2;
    }
    bool repack = argc == 3; /* the default packing; "greedy": Karpenter's */
    bool cat = strcmp(argv[1], "catalog") == 0;
    int n = atoi(argv[2]); /* NOLINT: bench argument */
    double t0 = now_s();
    nw_sched_snap_t *s = nw_snapshot_new();
    setup(s, cat);
    uint64_t seed = rng;
    make_pods(s, n, cat, strcmp(argv[1], "plain") == 0);
    nw_sched_opts_t so = {.repack = repack};
    nw_snapshot_set_opts(s, &so);
    double t1 = now_s();
    nw_sched_results_t r;
    nw_err_t err = {0};
    if (nw_solve(s, 0, &r, &err) != NW_OK) {
        fprintf(stderr, "bench: %s\n", err.msg);
        return 2;
    }
    double t2 = now_s();
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double lb;
    if (cat) {
        /* CPU pods: the c/m/r types of the two CPU pools */
        double cpu_lb = 0;
        {
            /* restrict to c/m/r families by skipping others: approximate with all non-GPU
             * non-metal types, which can only lower the bound (still a valid bound) */
            cpu_lb = dual_bound(s, tot_cpu, tot_mem, 0);
        }
        double g1 = gpu_bound(s, gpu_n), g2 = dual_bound(s, gpu_cpu, gpu_mem, 1);
        lb = cpu_lb + (g1 > g2 ? g1 : g2);
    } else {
        lb = dual_bound(s, tot_cpu, tot_mem, 0);
    }
    if (getenv("SCHED_DEBUG"))
        for (int i = 0; i < r.nclaims; i++) {
            const nw_sched_claim_t *c = &r.claims[i];
            const nw_sched_itype_t *it = nw_snapshot_itype(s, (size_t)c->itype);
            fprintf(stderr, "%s %s n=%d pods=%d cpu=%.2f/%.2f mem=%.1f/%.1f $%.3f\n",
                    nw_snapshot_pool_name(s, (size_t)c->pool), it->name, c->nitypes, c->npods,
                    c->requests.v[NW_SR_CPU] / 1000.0, it->allocatable.v[NW_SR_CPU] / 1000.0,
                    c->requests.v[NW_SR_MEMORY] / 1e3 / 1073741824.0,
                    it->allocatable.v[NW_SR_MEMORY] / 1e3 / 1073741824.0, c->price);
        }
    int placed = 0;
    for (int i = 0; i < r.nclaims; i++)
        placed += r.claims[i].npods;
    double rec = record_pass(cat, n, strcmp(argv[1], "plain") == 0, seed);
    printf("{\"run\":\"%s%s\",\"pods\":%d,\"considered\":%d,\"onNewNodes\":%d,\"unschedulable\":%d,"
           "\"buildSeconds\":%.3f,\"jsonPodsSeconds\":%.3f,\"recordPodsSeconds\":%.3f,"
           "\"solveSeconds\":%.3f,\"podsPerSecond\":%.0f,"
           "\"peakRssMiB\":%.1f,\"nodes\":%d,\"pricePerHour\":%.2f,\"lowerBound\":%.2f,"
           "\"ratio\":%.3f}\n",
           argv[1], repack ? "" : "+greedy", n, r.considered, placed, r.nunsched, t1 - t0,
           json_secs, rec, t2 - t1, (t2 - t1) > 0 ? r.considered / (t2 - t1) : 0.0,
           ru.ru_maxrss / 1024.0, r.nclaims, r.total_price, lb, lb > 0 ? r.total_price / lb : 0.0);
    nw_solve_results_free(&r);
    nw_snapshot_free(s);
    return 0;
}
