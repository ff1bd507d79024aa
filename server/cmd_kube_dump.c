/*
 * server/cmd_kube_dump.c — `nodewarden kube-dump [--kubeconfig FILE] [--context NAME]
 * [--timeout SECONDS]`: connect, list+watch every cached kind until the cache has
 * synced, print it as one JSON object (a sorted list of "namespace/name", or "name"
 * for cluster-scoped objects, per resource) and exit 0. Connection, TLS and auth
 * failures print a clear error and exit 2.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "scaler/kube/cache.h"
#include "scaler/kube/client.h"
#include "scaler/kube/config.h"
#include "scaler/kube/watch.h"
#include "server/cmd.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: nodewarden kube-dump [--kubeconfig FILE] [--context NAME] "
               "[--timeout SECONDS]\n\n"
               "Connect to the Kubernetes API server, sync the cluster-state cache (pods, nodes,\n"
               "nodepools, ec2nodeclasses, nodeclaims, poddisruptionbudgets, daemonsets) and\n"
               "print it as JSON. Without --kubeconfig: $KUBECONFIG, the in-cluster service\n"
               "account, then ~/.kube/config. Exit 0 on success, 2 on connection/auth errors.\n");
}

int nw_cmd_kube_dump(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"kubeconfig", required_argument, NULL, 'k'},
        {"context", required_argument, NULL, 'c'},
        {"timeout", required_argument, NULL, 't'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *kubeconfig = NULL, *context = NULL;
    long timeout_s = 60;
    int opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "k:c:t:h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'k':
            kubeconfig = optarg;
            break;
        case 'c':
            context = optarg;
            break;
        case 't': {
            char *end;
            timeout_s = strtol(optarg, &end, 10);
            if (*end || timeout_s <= 0) {
                fprintf(stderr, "nodewarden kube-dump: --timeout: not a positive number: %s\n",
                        optarg);
                return NW_EXIT_USAGE;
            }
            break;
        }
        case 'h':
            usage(stdout);
            return NW_EXIT_OK;
        default:
            usage(stderr);
            return NW_EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "nodewarden kube-dump: unexpected argument '%s'\n", argv[optind]);
        return NW_EXIT_USAGE;
    }

    nw_err_t err = {0};
    nw_kube_config_t *cfg = NULL;
    nw_kube_client_t *client = NULL;
    nw_kube_cache_t *cache = NULL;
    nw_kube_watch_t *watch = NULL;
    int rc = NW_EXIT_USAGE;
    if (nw_kube_config_load(kubeconfig, context, &cfg, &err) != NW_OK) {
        fprintf(stderr, "nodewarden kube-dump: %s\n", err.msg);
        return NW_EXIT_USAGE;
    }
    nw_kube_client_opts_t copts = {.max_retries = 2, .timeout_ms = 15000};
    if (nw_kube_client_new(cfg, &copts, &client, &err) != NW_OK) {
        fprintf(stderr, "nodewarden kube-dump: %s\n", err.msg);
        return NW_EXIT_USAGE;
    }
    const nw_kube_config_t *c = nw_kube_client_config(client);
    /* probe: reachability, TLS and credentials, with a precise error */
    cJSON *probe = NULL;
    if (nw_kube_get_json(client, "/api/v1/namespaces?limit=1", "list", "namespaces", &probe,
                         &err) != NW_OK) {
        fprintf(stderr, "nodewarden kube-dump: cannot use the API server %s (context %s from %s): %s\n",
                c->server, c->context, c->source, err.msg);
        goto out;
    }
    cJSON_Delete(probe);
    cache = nw_kube_cache_new(nw_kube_client_metrics(client));
    if (!cache || nw_kube_watch_new(client, cache, NULL, &watch, &err) != NW_OK ||
        nw_kube_watch_start(watch, &err) != NW_OK) {
        fprintf(stderr, "nodewarden kube-dump: %s\n", err.msg[0] ? err.msg : "out of memory");
        goto out;
    }
    if (!nw_kube_cache_wait_synced(cache, timeout_s * 1000)) {
        char last[512];
        nw_kube_watch_last_error(watch, last, sizeof last);
        fprintf(stderr, "nodewarden kube-dump: cache did not sync within %lds%s%s\n", timeout_s,
                last[0] ? ": " : "", last);
        goto out;
    }
    nw_kube_watch_stop(watch);
    nw_kube_snap_t *snap = nw_kube_cache_snapshot(cache);
    nw_buf_t out;
    nw_buf_init(&out, (size_t)256 << 20);
    if (!snap || nw_kube_snap_dump_json(snap, &out) != NW_OK) {
        fprintf(stderr, "nodewarden kube-dump: out of memory\n");
    } else {
        fwrite(out.data, 1, out.len, stdout);
        fflush(stdout);
        rc = NW_EXIT_OK;
    }
    nw_buf_cleanup(&out);
    nw_kube_snap_release(snap);
out:
    nw_kube_watch_free(watch);
    nw_kube_cache_free(cache);
    nw_kube_client_free(client);
    return rc;
}
