/*
 * cli/cmd_plan.c — `nodewarden plan [FILE...]`: offline, the NodeClaims the scaler
 * would launch for the given manifests (scaler/sched), with the instance catalog.
 *
 * Reads NodePools, EC2NodeClasses, Pods, Deployments/ReplicaSets/StatefulSets/Jobs
 * (expanded to their replicas), DaemonSets, Nodes and NodeClaims from YAML or JSON
 * files (multi-document, `List` objects, any order; "-" is stdin) through cli/plan.h;
 * `--disruption` hands them to one disruption pass (cli/cmd_plan_disrupt.c).
 *
 * Exit: 0 every pod placed, 1 some pod cannot be placed, 2 usage or input errors.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "cli/cmd.h"
#include "cli/plan.h"
#include "common/clock.h"
#include "common/file.h"
#include "common/yaml.h"
#include "config/config.h"
#include "scaler/sched/schedule.h"

/* the largest manifest or catalog file read */
#define PLAN_MAX_FILE ((size_t)1 << 30)

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: nodewarden plan [--output text|json] [--catalog FILE] [--region R]\n"
        "                       [--zones Z1[=ZONE_ID],...] [--ice TYPE:ZONE:CAPACITY_TYPE]...\n"
        "                       [--pod-density eni-limited|kubelet-default]\n"
        "                       [--min-values-policy Strict|BestEffort] [--packing "
        "cheapest|greedy]\n"
        "                       [--config FILE] [--no-gpu-policy] [--disruption [--now RFC3339]\n"
        "                       [--spot-to-spot]] FILE...\n"
        "\n"
        "Offline: the NodeClaims nodewarden would launch for the pending pods in FILEs\n"
        "(YAML or JSON, multi-document; NodePools, EC2NodeClasses, Pods, Deployments,\n"
        "ReplicaSets, StatefulSets, Jobs, DaemonSets, Nodes, NodeClaims, Namespaces,\n"
        "PersistentVolumes, PersistentVolumeClaims, StorageClasses; '-' is stdin).\n"
        "Prices come from the compiled-in catalog (--catalog for another file in the same\n"
        "format); --region picks the price region (default us-east-1) and --zones the\n"
        "zones offered (default <region>a,b,c). --ice marks an offering unavailable.\n"
        "Each EC2NodeClass's spec.kubelet (maxPods, podsPerCore, kubeReserved,\n"
        "systemReserved, evictionHard) and AMI family shape its types' allocatable;\n"
        "--pod-density is settings.podDensity: the pods per node where maxPods is unset\n"
        "(eni-limited, the VPC CNI's limit, default; kubelet-default, 110).\n"
        "--min-values-policy is settings.minValuesPolicy: Strict (default) leaves a pod\n"
        "pending when minValues cannot be met; BestEffort lowers them on the NodeClaim.\n"
        "--packing is scaler.repack: cheapest (default, true) re-packs the new NodeClaims\n"
        "onto the types that cost least; greedy (false) keeps Karpenter's packing.\n"
        "An EC2NodeClass's status.capacityReservations (as nodewarden writes it) are\n"
        "reserved offerings of its pools, each holding its availableInstanceCount nodes\n"
        "(no limit without one).\n"
        "--config takes the GPU isolation policy (its accelerator classes) from a\n"
        "nodewarden configuration file's gpu: block; --no-gpu-policy turns it off.\n"
        "Exit: 0 all pods placed, 1 some pods cannot be placed, 2 usage/input error.\n"
        "\n"
        "--disruption: instead, what one disruption pass would do to the NodeClaims,\n"
        "Nodes, Pods and PodDisruptionBudgets given (their NodePools' budgets at --now,\n"
        "default the current time): each NodeClaim's verdict, the pools' allowed\n"
        "disruptions and the command (emptiness, drift, multi- or single-node\n"
        "consolidation). Exit 0, or 2 on usage/input errors.\n");
}

static void print_text(const nw_sched_snap_t *s, const nw_sched_results_t *r)
{
    printf("%d pending pod%s considered\n", r->considered, r->considered == 1 ? "" : "s");
    printf("\nNodeClaims to launch: %d\n", r->nclaims);
    for (int i = 0; i < r->nclaims; i++) {
        const nw_sched_claim_t *c = &r->claims[i];
        printf("  %-14s %-16s %-12s %-10s $%.4f/h  %d pod%s\n",
               nw_snapshot_pool_name(s, (size_t)c->pool),
               c->itype >= 0 ? nw_snapshot_itype(s, (size_t)c->itype)->name : "-", c->zone,
               c->capacity_type, c->price, c->npods, c->npods == 1 ? "" : "s");
        nw_sched_res_t al;
        if (c->itype >= 0 &&
            nw_snap_node_pool_type_allocatable(s, (size_t)c->pool, (size_t)c->itype, &al)) {
            printf("      allocatable: %lld pods, %lldm cpu, %lldMi memory",
                   (long long)(al.v[NW_SR_PODS] / 1000), (long long)al.v[NW_SR_CPU],
                   (long long)(al.v[NW_SR_MEMORY] / 1000 / 1048576));
            if (al.v[NW_SR_NVIDIA_GPU] > 0) /* shared GPUs count as their replicas or slices */
                printf(", %lld nvidia.com/gpu", (long long)(al.v[NW_SR_NVIDIA_GPU] / 1000));
            printf("\n");
        }
        if (c->nitypes > 1) {
            printf("      also fits:");
            int shown = c->nitypes - 1 < 8 ? c->nitypes - 1 : 8;
            for (int k = 1; k <= shown; k++)
                printf(" %s", nw_snapshot_itype(s, (size_t)c->itypes[k])->name);
            if (c->nitypes - 1 > shown)
                printf(" (+%d more)", c->nitypes - 1 - shown);
            printf("\n");
        }
        printf("      pods:");
        for (int k = 0; k < c->npods && k < 10; k++)
            printf(" %s", nw_snapshot_pod_key(s, (size_t)c->pods[k]));
        if (c->npods > 10)
            printf(" (+%d more)", c->npods - 10);
        printf("\n");
    }
    if (r->nplaced) {
        printf("\nPlaced on existing capacity: %d\n", r->nplaced);
        for (int i = 0; i < r->nplaced; i++)
            printf("  %s -> %s\n", nw_snapshot_pod_key(s, (size_t)r->placed[i].pod),
                   r->placed[i].node);
    }
    if (r->nunsched) {
        printf("\nCannot be placed: %d\n", r->nunsched);
        for (int i = 0; i < r->nunsched; i++) {
            const nw_sched_unsched_t *u = &r->unsched[i];
            printf("  %s\n", nw_snapshot_pod_key(s, (size_t)u->pod));
            if (u->reason)
                printf("      %s\n", u->reason);
            for (int k = 0; k < u->nreasons; k++)
                if (u->reasons[k])
                    printf("      %s: %s\n", nw_snapshot_pool_name(s, (size_t)k), u->reasons[k]);
        }
    }
    printf("\nTotal: $%.4f/hour\n", r->total_price);
}

/* The command line's options, as parse_args leaves them. */
typedef struct {
    const char *output, *catalog, *region, *zones;
    const char *now_s, *density, *config;
    const char *mvpolicy, *packing;
    bool gpu_on, disruption, spot_to_spot;
    const char *files[256], *ice[64];
    int nfiles, nice;
} plan_opts_t;

/* Parse argv into o. False when the command ends here (--help, a usage error) with
 * *exit_code. */
static bool parse_args(int argc, char **argv, plan_opts_t *o, int *exit_code)
{
    *o = (plan_opts_t){.output = "text",
                       .region = "us-east-1",
                       .density = "eni-limited",
                       .mvpolicy = "Strict",
                       .packing = "cheapest",
                       .gpu_on = true};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = NULL;
        const char *eq = strchr(a, '=');
        char opt[64];
        if (strncmp(a, "--", 2) == 0 && a[2] && eq && (size_t)(eq - a) < sizeof opt) {
            snprintf(opt, sizeof opt, "%.*s", (int)(eq - a), a);
            val = eq + 1;
            a = opt;
        }
        bool takes = strcmp(a, "--output") == 0 || strcmp(a, "-o") == 0 ||
                     strcmp(a, "--catalog") == 0 || strcmp(a, "--region") == 0 ||
                     strcmp(a, "--zones") == 0 || strcmp(a, "--ice") == 0 ||
                     strcmp(a, "--now") == 0 || strcmp(a, "--pod-density") == 0 ||
                     strcmp(a, "--config") == 0 || strcmp(a, "--min-values-policy") == 0 ||
                     strcmp(a, "--packing") == 0;
        if (takes && !val) {
            if (i + 1 >= argc) {
                fprintf(stderr, "nodewarden plan: %s needs a value\n", a);
                *exit_code = NW_EXIT_USAGE;
                return false;
            }
            val = argv[++i];
        }
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            *exit_code = NW_EXIT_OK;
            return false;
        } else if (strcmp(a, "--output") == 0 || strcmp(a, "-o") == 0) {
            o->output = val;
        } else if (strcmp(a, "--catalog") == 0) {
            o->catalog = val;
        } else if (strcmp(a, "--region") == 0) {
            o->region = val;
        } else if (strcmp(a, "--zones") == 0) {
            o->zones = val;
        } else if (strcmp(a, "--ice") == 0) {
            if (o->nice < 64)
                o->ice[o->nice++] = val;
        } else if (strcmp(a, "--no-gpu-policy") == 0) {
            o->gpu_on = false;
        } else if (strcmp(a, "--disruption") == 0) {
            o->disruption = true;
        } else if (strcmp(a, "--spot-to-spot") == 0) {
            o->spot_to_spot = true;
        } else if (strcmp(a, "--now") == 0) {
            o->now_s = val;
        } else if (strcmp(a, "--pod-density") == 0) {
            o->density = val;
        } else if (strcmp(a, "--config") == 0) {
            o->config = val;
        } else if (strcmp(a, "--min-values-policy") == 0) {
            o->mvpolicy = val;
        } else if (strcmp(a, "--packing") == 0) {
            o->packing = val;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "nodewarden plan: unknown flag %s\n", a);
            usage(stderr);
            *exit_code = NW_EXIT_USAGE;
            return false;
        } else if (o->nfiles < 256) {
            o->files[o->nfiles++] = a;
        }
    }
    return true;
}

/* Check the values parse_args took; *default_max_pods from --pod-density. False (after
 * saying why) on a usage error. */
static bool validate_args(const plan_opts_t *o, int64_t *default_max_pods)
{
    if (strcmp(o->output, "text") != 0 && strcmp(o->output, "json") != 0) {
        fprintf(stderr, "nodewarden plan: --output must be text or json\n");
        return false;
    }
    if (o->nfiles == 0) {
        usage(stderr);
        return false;
    }
    if (strcmp(o->mvpolicy, "Strict") != 0 && strcmp(o->mvpolicy, "BestEffort") != 0) {
        fprintf(stderr, "nodewarden plan: --min-values-policy must be Strict or BestEffort\n");
        return false;
    }
    if (strcmp(o->packing, "cheapest") != 0 && strcmp(o->packing, "greedy") != 0) {
        fprintf(stderr, "nodewarden plan: --packing must be cheapest or greedy\n");
        return false;
    }
    *default_max_pods = nw_config_pod_density(o->density);
    if (*default_max_pods < 0) {
        fprintf(stderr, "nodewarden plan: --pod-density must be eni-limited or kubelet-default\n");
        return false;
    }
    return true;
}

/* Read every FILE's documents into pl. False (after saying why) on an error. */
static bool load_files(nw_plan_t *pl, const plan_opts_t *o)
{
    for (int f = 0; f < o->nfiles; f++) {
        size_t len = 0;
        char *text = nw_file_read(o->files[f], PLAN_MAX_FILE, &len);
        if (!text) {
            fprintf(stderr, "nodewarden plan: %s: %s\n", o->files[f],
                    strerror(errno ? errno : EIO));
            return false;
        }
        cJSON **docs = NULL;
        size_t *lines = NULL, nd = 0;
        nw_err_t err = {0};
        nw_rc_t rc = nw_yaml_load_docs_lines(text, len, &docs, &lines, &nd, &err);
        free(text);
        if (rc != NW_OK) {
            fprintf(stderr, "nodewarden plan: %s: %s\n", o->files[f], err.msg);
            return false;
        }
        int bad = 0;
        for (size_t d = 0; d < nd && !bad; d++) {
            char where[600];
            snprintf(where, sizeof where, "%s: document %zu (line %zu)", o->files[f], d + 1,
                     lines ? lines[d] : 0);
            bad = nw_plan_collect(pl, docs[d], where);
        }
        nw_yaml_docs_free(docs, nd);
        free(lines);
        if (bad)
            return false;
    }
    return true;
}

/* Solve the snapshot and print the plan; the exit code. */
static int solve_and_print(const plan_opts_t *o, nw_sched_snap_t *snap, nw_sched_results_t *res)
{
    nw_err_t err = {0};
    if (nw_solve(snap, 0, res, &err) != NW_OK) {
        fprintf(stderr, "nodewarden plan: %s\n", err.msg);
        return NW_EXIT_USAGE;
    }
    if (strcmp(o->output, "json") == 0) {
        cJSON *j = nw_plan_results_json(snap, res);
        char *t = j ? nw_json_print_pretty(j) : NULL;
        if (t)
            printf("%s\n", t);
        free(t);
        cJSON_Delete(j);
    } else {
        print_text(snap, res);
    }
    return res->nunsched ? NW_EXIT_FAIL : NW_EXIT_OK;
}

int nw_cmd_plan(int argc, char **argv)
{
    plan_opts_t o;
    int exit_code;
    if (!parse_args(argc, argv, &o, &exit_code))
        return exit_code;
    int64_t default_max_pods;
    if (!validate_args(&o, &default_max_pods))
        return NW_EXIT_USAGE;
    nw_plan_t *pl = nw_plan_new(o.gpu_on);
    int ret = NW_EXIT_USAGE;
    char *cattext = NULL;
    nw_sched_snap_t *snap = NULL;
    nw_sched_results_t res;
    memset(&res, 0, sizeof res);
    if (!pl) {
        fprintf(stderr, "nodewarden plan: out of memory\n");
        return NW_EXIT_USAGE;
    }
    nw_plan_set_pod_density(pl, default_max_pods);
    nw_plan_set_min_values_best_effort(pl, strcmp(o.mvpolicy, "BestEffort") == 0);
    nw_plan_set_packing(pl, strcmp(o.packing, "cheapest") == 0);
    if (o.config && nw_plan_set_gpu_config(pl, o.config) != 0) {
        nw_plan_free(pl);
        return NW_EXIT_USAGE;
    }
    if (!load_files(pl, &o))
        goto out;
    char zbuf[1024];
    const char *zv[16];
    int nz = 0;
    if (o.zones) {
        snprintf(zbuf, sizeof zbuf, "%s", o.zones);
        char *save = NULL;
        for (char *t = strtok_r(zbuf, ",", &save); t && nz < 16; t = strtok_r(NULL, ",", &save))
            zv[nz++] = t;
    }
    size_t clen = 0;
    if (o.catalog && !(cattext = nw_file_read(o.catalog, PLAN_MAX_FILE, &clen))) {
        fprintf(stderr, "nodewarden plan: --catalog %s: %s\n", o.catalog,
                strerror(errno ? errno : EIO));
        goto out;
    }
    int64_t now = 0;
    if (o.now_s && nw_clock_time_parse(o.now_s, &now) != NW_OK) {
        fprintf(stderr, "nodewarden plan: --now wants an RFC 3339 time, got %s\n", o.now_s);
        goto out;
    }
    snap = nw_plan_snapshot(pl, cattext, clen, o.region, zv, nz, o.ice, o.nice);
    if (!snap)
        goto out;
    if (o.disruption) {
        ret = nw_cmd_plan_disrupt(pl, snap, o.now_s ? now : nw_clock_now(nw_clock_system()),
                                  strcmp(o.output, "json") == 0, o.spot_to_spot);
        goto out;
    }
    ret = solve_and_print(&o, snap, &res);
out:
    nw_solve_results_free(&res);
    free(cattext);
    nw_plan_free(pl);
    return ret;
}
