/*
 * cli/cmd_kube_dump.c — `nodewarden kube-dump [--kubeconfig FILE] [--context NAME]
 * [--timeout SECONDS] [--follow] [--versions] [--metrics] [--backoff MS] [--backoff-max MS]`:
 * connect, list+watch every cached kind until the cache has synced, print it as one JSON object (a
 * sorted list of "namespace/name", or "name" for cluster-scoped objects, per resource) and exit 0.
 * --versions prints, per resource, an object of "namespace/name" to the cached object's
 * resourceVersion instead (to compare the cache with a fresh LIST key by key).
 * Connection, TLS and auth failures print a clear error and exit 2.
 * --follow keeps watching and prints the cache again, as one compact JSON line,
 * whenever it changed (changes are coalesced until 100 ms of quiet), until
 * SIGINT/SIGTERM; --metrics prints the client's metrics to stderr at exit; --backoff and
 * --backoff-max set the first and largest retry back-off step of requests and watches
 * (tests use short ones).
 */
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/log.h"
#include "scaler/kube/cache.h"
#include "scaler/kube/client.h"
#include "scaler/kube/config.h"
#include "scaler/kube/watch.h"
#include "cli/cmd.h"
#include "cli/kubecmd.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: nodewarden kube-dump [--kubeconfig FILE] [--context NAME] "
               "[--timeout SECONDS] [--follow] [--metrics]\n"
               "                           [--versions] [--backoff MS] [--backoff-max MS]\n\n"
               "Connect to the Kubernetes API server, sync the cluster-state cache (pods, nodes,\n"
               "nodepools, ec2nodeclasses, nodeclaims, poddisruptionbudgets, daemonsets,\n"
               "persistentvolumes, persistentvolumeclaims, storageclasses, namespaces) and\n"
               "print it as JSON. Without --kubeconfig: $KUBECONFIG, the in-cluster service\n"
               "account, then ~/.kube/config. Exit 0 on success, 2 on connection/auth errors.\n"
               "--follow: keep watching; print the cache as a JSON line after every change\n"
               "(until SIGINT/SIGTERM). --versions: each object's resourceVersion, as\n"
               "{\"pods\": {\"ns/name\": \"rv\", ...}, ...}. --metrics: print the client\n"
               "metrics to stderr at exit.\n"
               "--backoff, --backoff-max: first and largest retry back-off step of requests\n"
               "and watches (defaults 800 ms and 30000 ms).\n");
}

/* The dump of a snapshot: names, or names with their resourceVersions. */
static nw_rc_t dump(const nw_kube_snap_t *snap, bool versions, nw_buf_t *out)
{
    return versions ? nw_kube_cache_snap_dump_versions_json(snap, out)
                    : nw_kube_cache_snap_dump_json(snap, out);
}

/* Print the cache as one compact JSON line if it differs from *last (updated). */
static int print_if_changed(nw_kube_cache_t *cache, bool versions, char **last)
{
    nw_kube_snap_t *snap = nw_kube_cache_snapshot(cache);
    nw_buf_t out;
    nw_buf_init(&out, (size_t)256 << 20);
    bool ok = snap && dump(snap, versions, &out) == NW_OK;
    nw_kube_cache_snap_release(snap);
    cJSON *j = ok ? nw_kube_client_json_parse(out.data, out.len) : NULL;
    char *line = j ? nw_json_print(j) : NULL;
    cJSON_Delete(j);
    nw_buf_cleanup(&out);
    if (!line)
        return -1;
    if (!*last || strcmp(*last, line) != 0) {
        printf("%s\n", line);
        fflush(stdout);
        free(*last);
        *last = line;
    } else {
        free(line);
    }
    return 0;
}

static int follow_loop(nw_kube_cache_t *cache, bool versions, const sigset_t *sigs)
{
    char *last = NULL;
    uint64_t gen = nw_kube_cache_generation(cache);
    int rc = NW_EXIT_OK;
    bool dirty = true;
    struct timespec zero = {0, 0};
    while (rc == NW_EXIT_OK && sigtimedwait(sigs, NULL, &zero) < 0) {
        /* print only a synced cache, once per burst of changes */
        if (dirty && nw_kube_cache_has_synced(cache)) {
            if (print_if_changed(cache, versions, &last) != 0)
                rc = NW_EXIT_USAGE;
            dirty = false;
        }
        uint64_t g = nw_kube_cache_wait(cache, gen, 200);
        if (g == gen)
            continue;
        /* coalesce a burst: wait for 100 ms without a change (at most 2 s) */
        for (int i = 0; i < 20; i++) {
            uint64_t g2 = nw_kube_cache_wait(cache, g, 100);
            if (g2 == g)
                break;
            g = g2;
        }
        gen = g;
        dirty = true;
    }
    free(last);
    return rc;
}

/* The command line. */
typedef struct {
    const char *kubeconfig, *context;
    long timeout_s, backoff_ms, backoff_max_ms;
    bool follow, metrics, versions;
} dump_opts_t;

/* Parse argv into o. False when the command ends here (--help, a usage error) with
 * *exit_code. */
static bool parse_args(int argc, char **argv, dump_opts_t *o, int *exit_code)
{
    static const struct option longopts[] = {
        {"kubeconfig", required_argument, NULL, 'k'},
        {"context", required_argument, NULL, 'c'},
        {"timeout", required_argument, NULL, 't'},
        {"follow", no_argument, NULL, 'f'},
        {"metrics", no_argument, NULL, 'm'},
        {"versions", no_argument, NULL, 'v'},
        {"backoff", required_argument, NULL, 'b'},
        {"backoff-max", required_argument, NULL, 'B'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    *o = (dump_opts_t){.timeout_s = 60};
    int opt, bad = 0;
    optind = 1;
    *exit_code = NW_EXIT_USAGE;
    while ((opt = getopt_long(argc, argv, "k:c:t:h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'k':
            o->kubeconfig = optarg;
            break;
        case 'c':
            o->context = optarg;
            break;
        case 't':
            o->timeout_s = nw_kubecmd_positive("kube-dump", "--timeout", optarg, "", &bad);
            break;
        case 'b':
            o->backoff_ms = nw_kubecmd_positive("kube-dump", "--backoff", optarg, "", &bad);
            break;
        case 'B':
            o->backoff_max_ms = nw_kubecmd_positive("kube-dump", "--backoff-max", optarg, "", &bad);
            break;
        case 'f':
            o->follow = true;
            break;
        case 'm':
            o->metrics = true;
            break;
        case 'v':
            o->versions = true;
            break;
        case 'h':
            usage(stdout);
            *exit_code = NW_EXIT_OK;
            return false;
        default:
            usage(stderr);
            return false;
        }
    }
    if (bad)
        return false;
    if (optind < argc) {
        fprintf(stderr, "nodewarden kube-dump: unexpected argument '%s'\n", argv[optind]);
        return false;
    }
    return true;
}

/* Stop watching and print the synced cache once; the exit code. */
static int dump_once(nw_kube_cache_t *cache, nw_kube_watch_t *watch, bool versions)
{
    int rc = NW_EXIT_USAGE;
    nw_kube_watch_stop(watch);
    nw_kube_snap_t *snap = nw_kube_cache_snapshot(cache);
    nw_buf_t out;
    nw_buf_init(&out, (size_t)256 << 20);
    if (!snap || dump(snap, versions, &out) != NW_OK) {
        fprintf(stderr, "nodewarden kube-dump: out of memory\n");
    } else {
        fwrite(out.data, 1, out.len, stdout);
        fflush(stdout);
        rc = NW_EXIT_OK;
    }
    nw_buf_cleanup(&out);
    nw_kube_cache_snap_release(snap);
    return rc;
}

/* --metrics: the client's metrics to stderr. */
static void print_metrics(nw_kube_client_t *client)
{
    nw_buf_t mb;
    nw_buf_init(&mb, (size_t)4 << 20);
    if (nw_kube_metrics_write(nw_kube_client_metrics(client), &mb) == NW_OK)
        fputs(nw_buf_str(&mb), stderr);
    nw_buf_cleanup(&mb);
}

int nw_cmd_kube_dump(int argc, char **argv)
{
    dump_opts_t o;
    int rc;
    if (!parse_args(argc, argv, &o, &rc))
        return rc;

    sigset_t sigs;
    sigemptyset(&sigs);
    if (o.follow)
        nw_kubecmd_block_stop_signals(&sigs);
    nw_err_t err = {0};
    nw_kube_cache_t *cache = NULL;
    nw_kube_watch_t *watch = NULL;
    rc = NW_EXIT_USAGE;
    nw_kube_client_opts_t copts = {.max_retries = 2,
                                   .timeout_ms = 15000,
                                   .backoff_base_ms = o.backoff_ms,
                                   .backoff_max_ms = o.backoff_max_ms};
    nw_kube_watch_opts_t wopts = {.backoff_base_ms = o.backoff_ms,
                                  .backoff_max_ms = o.backoff_max_ms};
    nw_kube_client_t *client = nw_kubecmd_connect("kube-dump", o.kubeconfig, o.context, &copts);
    if (!client)
        return NW_EXIT_USAGE;
    const nw_kube_config_t *c = nw_kube_client_config(client);
    /* probe: reachability, TLS and credentials, with a precise error */
    cJSON *probe = NULL;
    if (nw_kube_client_get_json(client, "/api", "get", "discovery", &probe, &err) != NW_OK) {
        fprintf(stderr,
                "nodewarden kube-dump: %scannot use the API server %s (context %s from %s): %s\n",
                o.follow ? "warning: " : "", c->server, c->context, c->source, err.msg);
        if (!o.follow) /* --follow keeps retrying, as the scaler does */
            goto out;
    }
    cJSON_Delete(probe);
    cache = nw_kube_cache_new(nw_kube_client_metrics(client));
    if (!cache || nw_kube_watch_new(client, cache, &wopts, &watch, &err) != NW_OK ||
        nw_kube_watch_start(watch, &err) != NW_OK) {
        fprintf(stderr, "nodewarden kube-dump: %s\n", err.msg[0] ? err.msg : "out of memory");
        goto out;
    }
    if (!o.follow && !nw_kube_cache_wait_synced(cache, o.timeout_s * 1000)) {
        char last[512];
        nw_kube_watch_last_error(watch, last, sizeof last);
        fprintf(stderr, "nodewarden kube-dump: cache did not sync within %lds%s%s\n", o.timeout_s,
                last[0] ? ": " : "", last);
        goto out;
    }
    rc = o.follow ? follow_loop(cache, o.versions, &sigs) : dump_once(cache, watch, o.versions);
out:
    if (o.metrics && client)
        print_metrics(client);
    nw_kube_watch_free(watch);
    nw_kube_cache_free(cache);
    nw_kube_client_free(client);
    return rc;
}
