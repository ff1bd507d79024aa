/*
 * scaler/kube/execcred.h — kubeconfig exec credential plugins, run as client-go runs
 * them (client.authentication.k8s.io/v1 and v1beta1 ExecCredential).
 *
 * The plugin gets our environment, the exec section's env entries and
 * KUBERNETES_EXEC_INFO: an ExecCredential of the configured apiVersion whose
 * spec.interactive says whether it may talk to the user, and with provideClusterInfo
 * spec.cluster (server, tls-server-name, insecure-skip-tls-verify,
 * certificate-authority-data, proxy-url, config). It is interactive when
 * interactiveMode is IfAvailable or Always and our stdin is a terminal: it then reads
 * our stdin and writes our stderr; otherwise stdin is /dev/null and its stderr is
 * kept for the error message. It must print an ExecCredential of the same apiVersion
 * whose status holds a token, a client certificate and key (PEM), or both, and may
 * give an expirationTimestamp (RFC 3339).
 *
 * The credential is kept until NW_EXECCRED_EARLY_NS before it expires (half its life
 * when that is shorter; one without expiry is kept), then the plugin runs again; a
 * 401 from the API server (nw_execcred_invalidate) runs it again too. A run that fails
 * while the kept credential is still valid leaves it in use (with a warning) and is
 * tried again after half the time left, at most 5 s, not on every request. Errors
 * name the kubeconfig file, the user entry and the command, show the installHint when
 * the command is not found, and the last line the plugin wrote on stderr when it
 * fails. A plugin that does not answer within the timeout (60 s; 5 min when it may
 * talk to the user) is killed with what it started.
 *
 * Ownership: nw_execcred_new borrows cfg (it must outlive the runner: the client owns
 * both); nw_execcred_cred_t is caller storage, wiped and freed with
 * nw_execcred_cred_cleanup.
 * Thread: any; one mutex: one run at a time, other callers wait for it.
 */
#ifndef NW_SCALER_KUBE_EXECCRED_H
#define NW_SCALER_KUBE_EXECCRED_H

#include <stddef.h>
#include <stdint.h>

#include "common/clock.h"
#include "common/err.h"
#include "scaler/kube/config.h"

#define NW_EXECCRED_EARLY_NS (30 * NW_NS_PER_SEC)
#define NW_EXECCRED_TIMEOUT_MS 60000
#define NW_EXECCRED_INTERACTIVE_TIMEOUT_MS 300000

typedef struct nw_execcred nw_execcred_t;

/* A copy of the current credential. */
typedef struct {
    char *token; /* NULL: none */
    char *cert_pem, *key_pem;
    size_t cert_len, key_len;
    int64_t expires_ns; /* 0: none */
} nw_execcred_cred_t;

/** A runner for cfg->exec (which must be set). timeout_ms <= 0: NW_EXECCRED_TIMEOUT_MS
 * for a plugin that may not talk to the user (one that may gets at least
 * NW_EXECCRED_INTERACTIVE_TIMEOUT_MS). clock NULL: the system's. No plugin runs yet. */
NW_MUST_USE nw_rc_t nw_execcred_new(const nw_kube_config_t *cfg, const nw_clock_t *clock,
                                    long timeout_ms, nw_execcred_t **out, nw_err_t *err);

void nw_execcred_free(nw_execcred_t *x);

/** The current credential (running the plugin when needed), copied into out. */
NW_MUST_USE nw_rc_t nw_execcred_get(nw_execcred_t *x, nw_execcred_cred_t *out, nw_err_t *err);

void nw_execcred_cred_cleanup(nw_execcred_cred_t *c);

/** Forget the credential (the API server refused it): the next get runs the plugin. */
void nw_execcred_invalidate(nw_execcred_t *x);

/** How many times the plugin ran. */
long nw_execcred_runs(const nw_execcred_t *x);

#endif
