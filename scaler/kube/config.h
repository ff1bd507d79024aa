/*
 * scaler/kube/config.h — where the Kubernetes API server is and how to
 * authenticate: kubeconfig files (libyaml) and the in-cluster service account.
 *
 * Supported kubeconfig fields (client-go tools/clientcmd/api/v1/types.go):
 *   clusters[].cluster: server, certificate-authority, certificate-authority-data,
 *     insecure-skip-tls-verify, tls-server-name, proxy-url
 *   users[].user: token, tokenFile, client-certificate(-data), client-key(-data),
 *     exec (credential plugins: command, args, env, apiVersion, installHint,
 *     interactiveMode, provideClusterInfo; run by scaler/kube/execcred.h)
 *   clusters[].cluster.extensions[] named client.authentication.k8s.io/exec (the
 *     plugin's per-cluster config, given to it with provideClusterInfo)
 *   contexts[].context: cluster, user, namespace; current-context
 * `*-data` wins over the file variant, `token` over `tokenFile`; a token or client
 * certificate in the same user wins over exec, as in client-go; relative paths
 * (an exec command only when it holds a '/') are resolved against the kubeconfig's
 * directory; KUBECONFIG may list several files separated by ':' (first definition
 * of a name wins).
 * exec: apiVersion client.authentication.k8s.io/v1 or /v1beta1; interactiveMode
 * Never, IfAvailable or Always, required with v1 (v1beta1: IfAvailable). A malformed
 * exec section is an error naming the file, the user entry and the field.
 * Rejected with a message naming the field and the fix: user.auth-provider,
 * user.username/password, user.as / as-groups (impersonation).
 *
 * Ownership: nw_kube_config_t is heap-allocated by the loaders, immutable after
 * load, freed with nw_kube_config_free. The token is NOT cached here: the client
 * re-reads token_file (see client.h).
 * Thread: the loaders belong to main; a loaded config may be read from any thread.
 */
#ifndef NW_SCALER_KUBE_CONFIG_H
#define NW_SCALER_KUBE_CONFIG_H

#include <stddef.h>

#include "common/err.h"

#define NW_KUBE_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

typedef enum {
    NW_KUBE_EXEC_NEVER,
    NW_KUBE_EXEC_IF_AVAILABLE,
    NW_KUBE_EXEC_ALWAYS,
} nw_kube_exec_mode_t;

/* users[].user.exec: a credential plugin (all strings owned). */
typedef struct {
    char *command;     /* a name looked up in PATH, or a path */
    char **args;       /* NULL-terminated (empty: just the NULL) */
    char **env;        /* "NAME=value", NULL-terminated, added to the plugin's environment */
    char *api_version; /* client.authentication.k8s.io/v1 or .../v1beta1 */
    char *install_hint;
    nw_kube_exec_mode_t interactive;
    int provide_cluster_info;
    char *cluster_config; /* JSON of the cluster's exec extension, or NULL */
    char *user;           /* the users[] entry, for messages */
    char *file;           /* the kubeconfig that holds it, for messages */
} nw_kube_exec_t;

typedef struct {
    char *server; /* "https://host:port" (no trailing slash); owned */
    char *ca_pem; /* PEM bundle or NULL (system roots); owned */
    size_t ca_len;
    char *cert_pem; /* client certificate PEM or NULL */
    size_t cert_len;
    char *key_pem; /* client key PEM or NULL */
    size_t key_len;
    char *token;           /* static bearer token or NULL */
    char *token_file;      /* bearer token file, re-read by the client, or NULL */
    char *tls_server_name; /* name to verify instead of the server host, or NULL */
    char *proxy;           /* proxy URL or NULL */
    int insecure;          /* insecure-skip-tls-verify */
    char *namespace;       /* context namespace / service-account namespace ("default") */
    char *context;         /* context name used ("in-cluster" for the service account) */
    char *source;          /* human description for messages: file path or "in-cluster" */
    nw_kube_exec_t *exec;  /* a credential plugin, or NULL */
} nw_kube_config_t;

/**
 * Load a kubeconfig. @p paths is one file or several separated by ':'.
 * @p context selects a context; NULL or "" means current-context.
 * @return NW_OK and *out (owned, free with nw_kube_config_free); otherwise
 *         *out is NULL and err says which file/field is wrong and what to do.
 */
NW_MUST_USE nw_rc_t nw_kube_config_load_kubeconfig(const char *paths, const char *context,
                                                   nw_kube_config_t **out, nw_err_t *err);

/**
 * Load the in-cluster configuration: KUBERNETES_SERVICE_HOST/_PORT and
 * @p sa_dir/{token,ca.crt,namespace} (sa_dir NULL means NW_KUBE_SA_DIR).
 */
NW_MUST_USE nw_rc_t nw_kube_config_load_incluster(const char *sa_dir, nw_kube_config_t **out,
                                                  nw_err_t *err);

/**
 * The usual resolution order: @p kubeconfig if non-empty; else $KUBECONFIG;
 * else in-cluster when KUBERNETES_SERVICE_HOST is set; else ~/.kube/config.
 */
NW_MUST_USE nw_rc_t nw_kube_config_load(const char *kubeconfig, const char *context,
                                        nw_kube_config_t **out, nw_err_t *err);

/** Free a config. NULL-safe. */
void nw_kube_config_free(nw_kube_config_t *cfg);

/** Decode standard base64 (whitespace ignored). Returns a malloc'd buffer with a
 * trailing NUL (not counted in *len), or NULL if the input is not base64. */
char *nw_kube_config_b64_decode(const char *s, size_t *len);

#endif
