/* server/certs.c — swappable GnuTLS credentials + file watcher (see certs.h). */
#include "server/certs.h"

#include <errno.h>
#include <gnutls/x509.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/clock.h"
#include "common/log.h"

#define MAX_CHAIN 16
#define MAX_PEM (1u << 20)

typedef struct pair {
    gnutls_pcert_st pcert[MAX_CHAIN];
    unsigned n;
    gnutls_privkey_t key;
    int64_t not_after;
    struct pair *retired_next;
} pair_t;

static _Atomic(pair_t *) current;
static pthread_mutex_t retired_mu = PTHREAD_MUTEX_INITIALIZER;
static pair_t *retired;

static void pair_free(pair_t *p)
{
    if (!p)
        return;
    for (unsigned i = 0; i < p->n; i++)
        gnutls_pcert_deinit(&p->pcert[i]);
    if (p->key)
        gnutls_privkey_deinit(p->key);
    free(p);
}

static nw_rc_t read_file(const char *path, gnutls_datum_t *d, nw_err_t *err)
{
    d->data = NULL;
    d->size = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return nw_err_set(err, NW_EIO, "", "%s: %s", path, strerror(errno));
    unsigned char *buf = malloc(MAX_PEM + 1);
    if (!buf) {
        fclose(f);
        return NW_ENOMEM;
    }
    size_t n = fread(buf, 1, MAX_PEM + 1, f);
    int bad = ferror(f);
    fclose(f);
    if (bad || n > MAX_PEM || n == 0) {
        free(buf);
        return nw_err_set(err, NW_EIO, "", "%s: %s", path,
                          bad ? "read error"
                          : n ? "larger than 1 MiB"
                              : "empty file");
    }
    d->data = buf;
    d->size = (unsigned)n;
    return NW_OK;
}

static nw_rc_t pubkey_der(gnutls_pubkey_t pk, gnutls_datum_t *out)
{
    return gnutls_pubkey_export2(pk, GNUTLS_X509_FMT_DER, out) < 0 ? NW_EINVAL : NW_OK;
}

static nw_rc_t load_pair(const char *cert_path, const char *key_path, pair_t **out, nw_err_t *err)
{
    *out = NULL;
    gnutls_datum_t cd = {0}, kd = {0};
    nw_rc_t rc = read_file(cert_path, &cd, err);
    if (rc == NW_OK)
        rc = read_file(key_path, &kd, err);
    pair_t *p = NULL;
    if (rc != NW_OK)
        goto out;
    p = calloc(1, sizeof *p);
    if (!p) {
        rc = NW_ENOMEM;
        goto out;
    }
    p->n = MAX_CHAIN;
    int r = gnutls_pcert_list_import_x509_raw(p->pcert, &p->n, &cd, GNUTLS_X509_FMT_PEM, 0);
    if (r < 0 || p->n == 0) {
        p->n = 0;
        rc = nw_err_set(err, NW_EINVAL, "", "%s: not a PEM certificate (chain): %s", cert_path,
                        gnutls_strerror(r));
        goto out;
    }
    if ((r = gnutls_privkey_init(&p->key)) < 0 ||
        (r = gnutls_privkey_import_x509_raw(p->key, &kd, GNUTLS_X509_FMT_PEM, NULL, 0)) < 0) {
        rc = nw_err_set(err, NW_EINVAL, "", "%s: not a PEM private key: %s", key_path,
                        gnutls_strerror(r));
        goto out;
    }
    /* the key must belong to the leaf */
    gnutls_pubkey_t kpub = NULL;
    gnutls_datum_t a = {0}, b = {0};
    int match = 0;
    if (gnutls_pubkey_init(&kpub) >= 0 && gnutls_pubkey_import_privkey(kpub, p->key, 0, 0) >= 0 &&
        pubkey_der(kpub, &a) == NW_OK && pubkey_der(p->pcert[0].pubkey, &b) == NW_OK)
        match = a.size == b.size && memcmp(a.data, b.data, a.size) == 0;
    gnutls_free(a.data);
    gnutls_free(b.data);
    if (kpub)
        gnutls_pubkey_deinit(kpub);
    if (!match) {
        rc = nw_err_set(err, NW_EINVAL, "", "%s does not match the certificate in %s", key_path,
                        cert_path);
        goto out;
    }
    gnutls_x509_crt_t crt;
    if (gnutls_x509_crt_init(&crt) >= 0) {
        if (gnutls_x509_crt_import(crt, &p->pcert[0].cert, GNUTLS_X509_FMT_DER) >= 0)
            p->not_after = (int64_t)gnutls_x509_crt_get_expiration_time(crt);
        gnutls_x509_crt_deinit(crt);
    }
    *out = p;
    p = NULL;
out:
    pair_free(p);
    free(cd.data);
    free(kd.data);
    return rc;
}

static void install(pair_t *p, nw_metrics_t *m)
{
    pair_t *old = atomic_exchange(&current, p);
    if (old) {
        pthread_mutex_lock(&retired_mu);
        old->retired_next = retired;
        retired = old;
        pthread_mutex_unlock(&retired_mu);
    }
    if (m) {
        atomic_fetch_add(&m->cert_reloads, 1);
        atomic_store(&m->cert_not_after, p->not_after);
    }
}

nw_rc_t nw_certs_load_initial(const char *cert_path, const char *key_path, nw_metrics_t *metrics,
                              nw_err_t *err)
{
    pair_t *p;
    nw_rc_t rc = load_pair(cert_path, key_path, &p, err);
    if (rc != NW_OK) {
        if (metrics)
            atomic_fetch_add(&metrics->cert_reload_failures, 1);
        return rc;
    }
    install(p, metrics);
    char exp[32];
    nw_time_format(p->not_after * NW_NS_PER_SEC, exp, sizeof exp);
    nw_log_info("certs", "certificate loaded", NW_LS("cert", cert_path), NW_LI("chain", p->n),
                NW_LS("notAfter", exp));
    return NW_OK;
}

int nw_certs_ready(void)
{
    return atomic_load(&current) != NULL;
}

int nw_certs_retrieve(gnutls_session_t session, const gnutls_datum_t *req_ca_rdn, int nreqs,
                      const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
                      gnutls_pcert_st **pcert, unsigned int *pcert_length,
                      gnutls_privkey_t *privkey)
{
    (void)session, (void)req_ca_rdn, (void)nreqs, (void)pk_algos, (void)pk_algos_length;
    pair_t *p = atomic_load(&current);
    if (!p) {
        *pcert_length = 0;
        return -1;
    }
    *pcert = p->pcert;
    *pcert_length = p->n;
    *privkey = p->key;
    return 0;
}

void nw_certs_shutdown(void)
{
    pair_free(atomic_exchange(&current, NULL));
    pthread_mutex_lock(&retired_mu);
    while (retired) {
        pair_t *n = retired->retired_next;
        pair_free(retired);
        retired = n;
    }
    pthread_mutex_unlock(&retired_mu);
}

/* ---- watcher --------------------------------------------------------------------- */

typedef struct {
    int ok;
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
} sig_t_;

struct nw_certs_watch {
    char *cert, *key;
    int64_t poll_ns;
    nw_metrics_t *metrics;
    sig_t_ seen[2]; /* signatures of the files at the last attempt */
    pthread_t thr;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
};

static sig_t_ file_sig(const char *path)
{
    struct stat st;
    sig_t_ s = {0};
    if (stat(path, &st) == 0) {
        s.ok = 1;
        s.dev = st.st_dev;
        s.ino = st.st_ino;
        s.size = st.st_size;
        s.mtime = st.st_mtim;
    }
    return s;
}

static int sig_eq(const sig_t_ *a, const sig_t_ *b)
{
    return a->ok == b->ok && a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec;
}

int nw_certs_watch_poll(nw_certs_watch_t *w)
{
    sig_t_ c = file_sig(w->cert), k = file_sig(w->key);
    if (sig_eq(&c, &w->seen[0]) && sig_eq(&k, &w->seen[1]))
        return 0;
    w->seen[0] = c;
    w->seen[1] = k;
    pair_t *p;
    nw_err_t err = {0};
    if (load_pair(w->cert, w->key, &p, &err) != NW_OK) {
        if (w->metrics)
            atomic_fetch_add(&w->metrics->cert_reload_failures, 1);
        nw_log_error("certs", "certificate change not loaded; keeping the previous pair",
                     NW_LS("cert", w->cert), NW_LS("key", w->key), NW_LS("error", err.msg));
        return -1;
    }
    install(p, w->metrics);
    char exp[32];
    nw_time_format(p->not_after * NW_NS_PER_SEC, exp, sizeof exp);
    nw_log_info("certs", "certificate reloaded", NW_LS("cert", w->cert), NW_LI("chain", p->n),
                NW_LS("notAfter", exp));
    return 1;
}

static void *watch_main(void *arg)
{
    nw_certs_watch_t *w = arg;
    pthread_mutex_lock(&w->mu);
    while (!w->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        int64_t t = (int64_t)ts.tv_nsec + w->poll_ns;
        ts.tv_sec += (time_t)(t / 1000000000);
        ts.tv_nsec = (long)(t % 1000000000);
        pthread_cond_timedwait(&w->cv, &w->mu, &ts);
        if (w->stop)
            break;
        pthread_mutex_unlock(&w->mu);
        nw_certs_watch_poll(w);
        pthread_mutex_lock(&w->mu);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

nw_rc_t nw_certs_watch_start(const char *cert_path, const char *key_path, int64_t poll_ns,
                             nw_metrics_t *metrics, nw_certs_watch_t **out, nw_err_t *err)
{
    nw_certs_watch_t *w = calloc(1, sizeof *w);
    if (!w)
        return NW_ENOMEM;
    w->cert = strdup(cert_path);
    w->key = strdup(key_path);
    w->poll_ns = poll_ns > 0 ? poll_ns : 1000000000;
    w->metrics = metrics;
    /* the initial load already happened: remember what it saw */
    w->seen[0] = file_sig(cert_path);
    w->seen[1] = file_sig(key_path);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&w->mu, NULL);
    if (!w->cert || !w->key || pthread_create(&w->thr, NULL, watch_main, w) != 0) {
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        free(w->cert);
        free(w->key);
        free(w);
        return nw_err_set(err, NW_ENOMEM, "", "cannot start the certificate watcher");
    }
    *out = w;
    return NW_OK;
}

void nw_certs_watch_stop(nw_certs_watch_t *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thr, NULL);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w->cert);
    free(w->key);
    free(w);
}
