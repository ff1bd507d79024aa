/* server/certs.c — swappable GnuTLS credentials + file watcher (see certs.h). */
#include "server/certs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <gnutls/x509.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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

/* Why the last load_pair failed (an nw_cert_err_t), for the metric. */
typedef struct {
    nw_err_t *err;
    nw_cert_err_t why;
} fail_t;

static NW_MUST_USE nw_rc_t fail(fail_t *f, nw_cert_err_t why, nw_rc_t rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static NW_MUST_USE nw_rc_t fail(fail_t *f, nw_cert_err_t why, nw_rc_t rc, const char *fmt, ...)
{
    f->why = why;
    char msg[sizeof f->err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return nw_err_set(f->err, rc, "", "%s", msg);
}

/* Read a whole PEM file. Symlinks are followed (the kubelet's ..data swap), but
 * the target must be a regular file: it is opened with O_NONBLOCK, so a FIFO or
 * a device at the path fails at once instead of blocking the watcher. */
static NW_MUST_USE nw_rc_t read_file(const char *path, gnutls_datum_t *d, fail_t *f)
{
    d->data = NULL;
    d->size = 0;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return fail(f, NW_CERT_ERR_UNREADABLE, NW_EIO, "%s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return fail(f, NW_CERT_ERR_NOT_REGULAR, NW_EIO, "%s: not a regular file", path);
    }
    unsigned char *buf = malloc(MAX_PEM + 1);
    if (!buf) {
        close(fd);
        return NW_ENOMEM;
    }
    size_t n = 0;
    bool bad = false;
    while (n <= MAX_PEM) {
        ssize_t r = read(fd, buf + n, MAX_PEM + 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            bad = r < 0;
            break;
        }
        n += (size_t)r;
    }
    close(fd);
    if (bad || n > MAX_PEM || n == 0) {
        free(buf);
        return fail(f, NW_CERT_ERR_UNREADABLE, NW_EIO, "%s: %s", path,
                    bad ? "read error"
                    : n ? "larger than 1 MiB"
                        : "empty file");
    }
    d->data = buf;
    d->size = (unsigned)n;
    return NW_OK;
}

static NW_MUST_USE nw_rc_t pubkey_der(gnutls_pubkey_t pk, gnutls_datum_t *out)
{
    return gnutls_pubkey_export2(pk, GNUTLS_X509_FMT_DER, out) < 0 ? NW_EINVAL : NW_OK;
}

/* The DNS names a new certificate must carry (nw_certs_require_dns_names). */
static pthread_mutex_t names_mu = PTHREAD_MUTEX_INITIALIZER;
static char **req_names;
static size_t n_req_names;

static void names_free(void)
{
    for (size_t i = 0; i < n_req_names; i++)
        free(req_names[i]);
    free(req_names);
    req_names = NULL;
    n_req_names = 0;
}

nw_rc_t nw_certs_require_dns_names(char *const *names, size_t n)
{
    pthread_mutex_lock(&names_mu);
    names_free();
    nw_rc_t rc = NW_OK;
    if (n && !(req_names = calloc(n, sizeof *req_names)))
        rc = NW_ENOMEM;
    for (size_t i = 0; rc == NW_OK && i < n; i++, n_req_names++)
        if (!(req_names[i] = strdup(names[i])))
            rc = NW_ENOMEM;
    pthread_mutex_unlock(&names_mu);
    return rc;
}

/* True if the certificate has a DNS subjectAltName matching name (the
 * apiserver's Go client ignores the CN, so a CN alone does not count). */
static bool has_dns_name(gnutls_x509_crt_t crt, const char *name)
{
    int dns_sans = 0;
    for (unsigned i = 0;; i++) {
        char buf[512];
        size_t len = sizeof buf;
        int t = gnutls_x509_crt_get_subject_alt_name(crt, i, buf, &len, NULL);
        if (t == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE)
            break;
        if (t == GNUTLS_SAN_DNSNAME)
            dns_sans++;
    }
    return dns_sans > 0 && gnutls_x509_crt_check_hostname2(crt, name, 0) != 0;
}

/* Validity period and DNS names of the leaf. */
static NW_MUST_USE nw_rc_t check_leaf(const char *cert_path, gnutls_x509_crt_t crt, pair_t *p,
                                      fail_t *f)
{
    int64_t now = (int64_t)time(NULL);
    int64_t nb = (int64_t)gnutls_x509_crt_get_activation_time(crt);
    p->not_after = (int64_t)gnutls_x509_crt_get_expiration_time(crt);
    char t[32];
    if (p->not_after != -1 && now > p->not_after) {
        nw_clock_time_format(p->not_after * NW_NS_PER_SEC, t, sizeof t);
        return fail(f, NW_CERT_ERR_EXPIRED, NW_EINVAL, "%s: certificate expired at %s", cert_path,
                    t);
    }
    if (nb != -1 && now < nb) {
        nw_clock_time_format(nb * NW_NS_PER_SEC, t, sizeof t);
        return fail(f, NW_CERT_ERR_NOT_YET_VALID, NW_EINVAL, "%s: certificate not valid before %s",
                    cert_path, t);
    }
    nw_rc_t rc = NW_OK;
    pthread_mutex_lock(&names_mu);
    for (size_t i = 0; rc == NW_OK && i < n_req_names; i++)
        if (!has_dns_name(crt, req_names[i]))
            rc = fail(f, NW_CERT_ERR_DNS_NAME, NW_EINVAL,
                      "%s: certificate does not name %s in its subjectAltName "
                      "(webhook.certDNSNames)",
                      cert_path, req_names[i]);
    pthread_mutex_unlock(&names_mu);
    return rc;
}

static NW_MUST_USE nw_rc_t load_pair(const char *cert_path, const char *key_path, pair_t **out,
                                     fail_t *f)
{
    *out = NULL;
    gnutls_datum_t cd = {0}, kd = {0};
    nw_rc_t rc = read_file(cert_path, &cd, f);
    if (rc == NW_OK)
        rc = read_file(key_path, &kd, f);
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
        rc = fail(f, NW_CERT_ERR_PARSE, NW_EINVAL, "%s: not a PEM certificate (chain): %s",
                  cert_path, gnutls_strerror(r));
        goto out;
    }
    if ((r = gnutls_privkey_init(&p->key)) < 0 ||
        (r = gnutls_privkey_import_x509_raw(p->key, &kd, GNUTLS_X509_FMT_PEM, NULL, 0)) < 0) {
        rc = fail(f, NW_CERT_ERR_PARSE, NW_EINVAL, "%s: not a PEM private key: %s", key_path,
                  gnutls_strerror(r));
        goto out;
    }
    /* the key must belong to the leaf */
    gnutls_pubkey_t kpub = NULL;
    gnutls_datum_t a = {0}, b = {0};
    bool match = false;
    if (gnutls_pubkey_init(&kpub) >= 0 && gnutls_pubkey_import_privkey(kpub, p->key, 0, 0) >= 0 &&
        pubkey_der(kpub, &a) == NW_OK && pubkey_der(p->pcert[0].pubkey, &b) == NW_OK)
        match = a.size == b.size && memcmp(a.data, b.data, a.size) == 0;
    gnutls_free(a.data);
    gnutls_free(b.data);
    if (kpub)
        gnutls_pubkey_deinit(kpub);
    if (!match) {
        rc = fail(f, NW_CERT_ERR_KEY_MISMATCH, NW_EINVAL, "%s does not match the certificate in %s",
                  key_path, cert_path);
        goto out;
    }
    gnutls_x509_crt_t crt;
    if (gnutls_x509_crt_init(&crt) < 0) {
        rc = NW_ENOMEM;
        goto out;
    }
    if (gnutls_x509_crt_import(crt, &p->pcert[0].cert, GNUTLS_X509_FMT_DER) < 0)
        rc = fail(f, NW_CERT_ERR_PARSE, NW_EINVAL, "%s: the leaf certificate does not parse",
                  cert_path);
    else
        rc = check_leaf(cert_path, crt, p, f);
    gnutls_x509_crt_deinit(crt);
    if (rc != NW_OK)
        goto out;
    *out = p;
    p = NULL;
out:
    pair_free(p);
    free(cd.data);
    free(kd.data);
    return rc;
}

/* Count a refused pair (total and by reason). */
static void count_failure(nw_metrics_t *m, nw_cert_err_t why)
{
    if (!m)
        return;
    atomic_fetch_add(&m->cert_reload_failures, 1);
    if ((unsigned)why < NW_CERT_ERR_COUNT)
        atomic_fetch_add(&m->cert_reload_errors[why], 1);
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
    fail_t f = {err, NW_CERT_ERR_COUNT};
    nw_rc_t rc = load_pair(cert_path, key_path, &p, &f);
    if (rc != NW_OK) {
        count_failure(metrics, f.why);
        return rc;
    }
    install(p, metrics);
    char exp[32];
    nw_clock_time_format(p->not_after * NW_NS_PER_SEC, exp, sizeof exp);
    nw_log_info("certs", "certificate loaded", NW_LS("cert", cert_path), NW_LI("chain", p->n),
                NW_LS("notAfter", exp));
    return NW_OK;
}

bool nw_certs_ready(void)
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
    pthread_mutex_lock(&names_mu);
    names_free();
    pthread_mutex_unlock(&names_mu);
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

static bool sig_eq(const sig_t_ *a, const sig_t_ *b)
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
    fail_t f = {&err, NW_CERT_ERR_COUNT};
    if (load_pair(w->cert, w->key, &p, &f) != NW_OK) {
        count_failure(w->metrics, f.why);
        nw_log_error("certs", "certificate change not loaded; keeping the previous pair",
                     NW_LS("cert", w->cert), NW_LS("key", w->key),
                     NW_LS("reason", nw_server_metrics_cert_err_str(f.why)),
                     NW_LS("error", err.msg));
        return -1;
    }
    install(p, w->metrics);
    char exp[32];
    nw_clock_time_format(p->not_after * NW_NS_PER_SEC, exp, sizeof exp);
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
    /* A poll never blocks on a file (read_file), but shutdown must not depend on
     * it: wait at most 2 s, then leave the thread and its state to the exit. */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 2;
    if (pthread_timedjoin_np(w->thr, NULL, &ts) != 0) {
        nw_log_warn("certs", "certificate watcher did not stop within 2s; not waiting for it");
        return;
    }
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w->cert);
    free(w->key);
    free(w);
}
