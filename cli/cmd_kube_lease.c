/*
 * cli/cmd_kube_lease.c — `nodewarden kube-lease`: a diagnostic that joins the
 * scaler's leader election (the same code `serve` uses) and prints one JSON line
 * per transition on stdout: {"event":"leading"|"stopped"|"leader","identity":...}.
 * Runs until SIGINT/SIGTERM, then releases the Lease if it holds it.
 */
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaler/kube/client.h"
#include "scaler/kube/config.h"
#include "scaler/kube/leader.h"
#include "cli/cmd.h"
#include "cli/kubecmd.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: nodewarden kube-lease [--kubeconfig FILE] [--context NAME]\n"
               "         [--namespace NS] [--name LEASE] [--identity ID]\n"
               "         [--lease-duration MS] [--renew-deadline MS] [--retry-period MS]\n\n"
               "Join the leader election on a coordination.k8s.io/v1 Lease (defaults:\n"
               "namespace nodewarden, name nodewarden-leader, 15000/10000/2000 ms) and print a\n"
               "JSON line per transition until interrupted.\n");
}

typedef struct {
    const char *id;
} ctx_t;

static void emit(const char *event, const char *id)
{
    printf("{\"event\":\"%s\",\"identity\":\"%s\"}\n", event, id);
    fflush(stdout);
}

static void on_started(void *ud)
{
    emit("leading", ((ctx_t *)ud)->id);
}

static void on_stopped(void *ud)
{
    emit("stopped", ((ctx_t *)ud)->id);
}

static void on_new_leader(const char *who, void *ud)
{
    (void)ud;
    emit("leader", who);
}

static long parse_ms(const char *s, const char *flag, int *bad)
{
    return nw_kubecmd_positive("kube-lease", flag, s, " of milliseconds", bad);
}

int nw_cmd_kube_lease(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"kubeconfig", required_argument, NULL, 'k'},
        {"context", required_argument, NULL, 'c'},
        {"namespace", required_argument, NULL, 'n'},
        {"name", required_argument, NULL, 'N'},
        {"identity", required_argument, NULL, 'i'},
        {"lease-duration", required_argument, NULL, 'l'},
        {"renew-deadline", required_argument, NULL, 'r'},
        {"retry-period", required_argument, NULL, 'p'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *kubeconfig = NULL, *context = NULL;
    nw_kube_leader_opts_t lo = {.namespace = "nodewarden", .name = "nodewarden-leader"};
    int opt, bad = 0;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'k':
            kubeconfig = optarg;
            break;
        case 'c':
            context = optarg;
            break;
        case 'n':
            lo.namespace = optarg;
            break;
        case 'N':
            lo.name = optarg;
            break;
        case 'i':
            lo.identity = optarg;
            break;
        case 'l':
            lo.lease_ms = parse_ms(optarg, "--lease-duration", &bad);
            break;
        case 'r':
            lo.renew_deadline_ms = parse_ms(optarg, "--renew-deadline", &bad);
            break;
        case 'p':
            lo.retry_ms = parse_ms(optarg, "--retry-period", &bad);
            break;
        case 'h':
            usage(stdout);
            return NW_EXIT_OK;
        default:
            usage(stderr);
            return NW_EXIT_USAGE;
        }
    }
    if (bad)
        return NW_EXIT_USAGE;
    /* the Downward API's pod name (docs/configuration.md), as `serve` uses it */
    char idbuf[300];
    const char *pod = getenv("POD_NAME");
    if (!lo.identity && pod && *pod) {
        snprintf(idbuf, sizeof idbuf, "%s_%ld", pod, (long)getpid());
        lo.identity = idbuf;
    }
    nw_err_t err = {0};
    sigset_t set;
    nw_kubecmd_block_stop_signals(&set); /* before any thread starts */
    nw_kube_client_t *client = nw_kubecmd_connect("kube-lease", kubeconfig, context, NULL);
    if (!client)
        return NW_EXIT_USAGE;
    ctx_t ctx = {0};
    lo.on_started = on_started;
    lo.on_stopped = on_stopped;
    lo.on_new_leader = on_new_leader;
    lo.ud = &ctx;
    nw_kube_leader_t *l = NULL;
    int rc = NW_EXIT_USAGE;
    if (nw_kube_leader_new(client, &lo, &l, &err) != NW_OK ||
        (ctx.id = nw_kube_leader_identity(l), nw_kube_leader_start(l, &err)) != NW_OK) {
        fprintf(stderr, "nodewarden kube-lease: %s\n", err.msg);
        goto out;
    }
    int sig;
    sigwait(&set, &sig);
    nw_kube_leader_stop(l);
    rc = NW_EXIT_OK;
out:
    nw_kube_leader_free(l);
    nw_kube_client_free(client);
    return rc;
}
