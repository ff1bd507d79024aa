/*
 * server/certs.h — the serving certificate, swappable at runtime.
 *
 * libmicrohttpd's TLS is GnuTLS; the server registers nw_certs_retrieve as
 * MHD_OPTION_HTTPS_CERT_CALLBACK, and every new handshake takes the pair that
 * is current at that moment. A watcher thread polls the certificate and key
 * files (stat: device, inode, size, mtime; symlinks followed, so the kubelet's
 * atomic ..data swap is seen) and installs a new pair once both parse, the
 * key matches the certificate, the leaf is inside its validity period and
 * names every DNS name of nw_certs_require_dns_names in its subjectAltName.
 * Files are opened without blocking and must be regular files (a FIFO at the
 * path is refused at once). A refused pair is logged with its reason, counted
 * in nodewarden_cert_reload_failures_total and, by reason, in
 * nodewarden_cert_reload_errors_total, and the old pair stays in use;
 * connections already established are never touched. The same checks apply
 * to the first load.
 *
 * Ownership: the current pair is process-global (the GnuTLS callback has no
 * user pointer). Pairs that were replaced are kept until nw_certs_shutdown()
 * because a session may still reference the one it handshook with; rotations
 * are rare (days), so this costs a few KiB per rotation.
 * Thread: nw_certs_retrieve any; the rest main (start/stop) or the watcher.
 */
#ifndef NW_SERVER_CERTS_H
#define NW_SERVER_CERTS_H

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "server/metrics.h"

typedef struct nw_certs_watch nw_certs_watch_t;

/**
 * Load the pair now and make it current (first load at startup). Errors name
 * the file and the problem (unreadable, not PEM, key does not match, ...).
 * @param metrics  may be NULL; counts reloads/failures and the expiry gauge
 */
NW_MUST_USE nw_rc_t nw_certs_load_initial(const char *cert_path, const char *key_path,
                                          nw_metrics_t *metrics, nw_err_t *err);

/** The DNS names every loaded certificate must carry as subjectAltNames
 * (webhook.certDNSNames); n == 0 turns the check off. Copied. Call before the
 * first load; nw_certs_shutdown clears it. */
NW_MUST_USE nw_rc_t nw_certs_require_dns_names(char *const *names, size_t n);

/** True once a pair is installed. */
bool nw_certs_ready(void);

/** The GnuTLS retrieve callback (gnutls_certificate_retrieve_function2). */
int nw_certs_retrieve(gnutls_session_t session, const gnutls_datum_t *req_ca_rdn, int nreqs,
                      const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
                      gnutls_pcert_st **pcert, unsigned int *pcert_length,
                      gnutls_privkey_t *privkey);

/** Start the watcher thread (poll every poll_ns). */
NW_MUST_USE nw_rc_t nw_certs_watch_start(const char *cert_path, const char *key_path,
                                         int64_t poll_ns, nw_metrics_t *metrics,
                                         nw_certs_watch_t **out, nw_err_t *err);

/** Stop and join the watcher; waits at most 2 s (then leaves it). NULL-safe. */
void nw_certs_watch_stop(nw_certs_watch_t *w);

/** Check the files once now (the watcher's step; exposed for tests).
 * Returns 1 if a new pair was installed, 0 if unchanged, -1 if a change failed. */
int nw_certs_watch_poll(nw_certs_watch_t *w);

/** Free the current and every retired pair. Call after the server stopped. */
void nw_certs_shutdown(void);

#endif
