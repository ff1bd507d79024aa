/*
 * cli/kubecmd.h — the setup the Kubernetes diagnostics (`kube-dump`, `kube-lease`) share:
 * a positive-number flag, the stop signals, and a connected API client.
 *
 * Ownership: nw_kubecmd_connect's client is the caller's (nw_kube_client_free).
 * Thread: main, before any thread starts.
 */
#ifndef NW_CLI_KUBECMD_H
#define NW_CLI_KUBECMD_H

#include <signal.h>

#include "scaler/kube/client.h"

/** The value of a flag that must be a positive integer; otherwise print
 * "nodewarden <cmd>: <flag>: not a positive number<unit>: <s>", set *bad and return 0. */
long nw_kubecmd_positive(const char *cmd, const char *flag, const char *s, const char *unit,
                         int *bad);

/** Block SIGINT and SIGTERM (threads started later inherit it); *set is for sigwait. */
void nw_kubecmd_block_stop_signals(sigset_t *set);

/** Load the kubeconfig (kubeconfig and context may be NULL: the default chain of
 * scaler/kube/config.h), make a client with opts (NULL: defaults) and get its first
 * credentials (an exec plugin runs now). NULL after printing "nodewarden <cmd>: <error>"
 * to stderr. */
nw_kube_client_t *nw_kubecmd_connect(const char *cmd, const char *kubeconfig, const char *context,
                                     const nw_kube_client_opts_t *opts);

#endif
