/*
 * cli/main.c — entry point: global library setup and subcommand dispatch.
 */
#include <curl/curl.h>
#include <stdio.h>
#include <string.h>

#include "cli/cmd.h"
#include "common/jsonarena.h"

typedef struct {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
} nw_cmd_t;

static int cmd_version(int argc, char **argv);

static const nw_cmd_t commands[] = {
    {"serve", nw_cmd_serve,
     "webhook server, plus the scaler when scaler.enabled (needs a cluster and AWS)"},
    {"check", nw_cmd_check, "offline: validate and default NodePool/EC2NodeClass YAML or JSON"},
    {"plan", nw_cmd_plan, "offline: print the NodeClaims the scheduler would launch for manifests"},
    {"doctor", nw_cmd_doctor, "preflight: credentials, API reachability, permissions, selectors"},
    {"kube-dump", nw_cmd_kube_dump, "connect, sync the cluster cache, print it as JSON, exit"},
    {"kube-lease", nw_cmd_kube_lease, "diagnostic: join the leader election, print transitions"},
    {"aws", nw_cmd_aws,
     "the EC2 provider by hand: whoami, catalog, resolve, launch, list, terminate"},
    {"version", cmd_version, "print version and build info"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: nodewarden <command> [options]\n\n"
               "Karpenter-compatible admission webhook and EC2 node autoscaler for\n"
               "self-managed Kubernetes clusters on AWS.\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\nRun 'nodewarden <command> --help' for a command's options.\n");
}

static int cmd_version(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    printf("nodewarden %s (git %s, built %s)\n", NW_VERSION, NW_GIT_REV, __DATE__);
    return NW_EXIT_OK;
}

int main(int argc, char **argv)
{
    curl_global_init(CURL_GLOBAL_DEFAULT); /* once, before any thread: libcurl's global init is not
                                              thread-safe */
    nw_jsonarena_install();                /* the same: cJSON's hooks are process-global */
    if (argc < 2) {
        usage(stderr);
        return NW_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 || strcmp(name, "help") == 0) {
        usage(stdout);
        return NW_EXIT_OK;
    }
    if (strcmp(name, "--version") == 0)
        return cmd_version(0, NULL);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(name, commands[i].name) == 0)
            return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "nodewarden: unknown command '%s'\n\n", name);
    usage(stderr);
    return NW_EXIT_USAGE;
}
