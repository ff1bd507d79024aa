/* cli/kubecmd.c — see kubecmd.h. */
#include "cli/kubecmd.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "scaler/kube/config.h"

long nw_kubecmd_positive(const char *cmd, const char *flag, const char *s, const char *unit,
                         int *bad)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*end || v <= 0) {
        fprintf(stderr, "nodewarden %s: %s: not a positive number%s: %s\n", cmd, flag, unit, s);
        *bad = 1;
        return 0;
    }
    return v;
}

void nw_kubecmd_block_stop_signals(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, set, NULL);
}

nw_kube_client_t *nw_kubecmd_connect(const char *cmd, const char *kubeconfig, const char *context,
                                     const nw_kube_client_opts_t *opts)
{
    nw_err_t err = {0};
    nw_kube_config_t *cfg = NULL;
    nw_kube_client_t *client = NULL;
    if (nw_kube_config_load(kubeconfig, context, &cfg, &err) != NW_OK ||
        nw_kube_client_new(cfg, opts, &client, &err) != NW_OK || /* the client owns cfg */
        nw_kube_client_credentials(client, &err) != NW_OK) {     /* an exec plugin runs */
        fprintf(stderr, "nodewarden %s: %s\n", cmd, err.msg);
        nw_kube_client_free(client);
        return NULL;
    }
    return client;
}
