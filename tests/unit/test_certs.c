/* Unit tests for server/certs: loading, key/cert matching, the watcher's
 * change detection, and the GnuTLS retrieve callback. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/certs.h"
#include "server/metrics.h"

Suite *nw_certs_suite(void);

#define D "tests/data/certs/"

static void copy_file(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb");
    ck_assert_ptr_nonnull(in);
    char tmp[512];
    snprintf(tmp, sizeof tmp, "%s.tmp", to);
    FILE *out = fopen(tmp, "wb");
    ck_assert_ptr_nonnull(out);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        ck_assert_uint_eq(fwrite(buf, 1, n, out), n);
    fclose(in);
    fclose(out);
    ck_assert_int_eq(rename(tmp, to), 0); /* atomic replace: new inode */
}

static int served_is(const char *pem_path)
{
    gnutls_pcert_st *pc = NULL;
    unsigned n = 0;
    gnutls_privkey_t key = NULL;
    if (nw_certs_retrieve(NULL, NULL, 0, NULL, 0, &pc, &n, &key) != 0 || n == 0 || !key)
        return 0;
    gnutls_pcert_st want[4];
    unsigned wn = 4;
    FILE *f = fopen(pem_path, "rb");
    char buf[8192];
    size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    gnutls_datum_t d = {(unsigned char *)buf, (unsigned)len};
    ck_assert_int_ge(gnutls_pcert_list_import_x509_raw(want, &wn, &d, GNUTLS_X509_FMT_PEM, 0), 0);
    int same = pc[0].cert.size == want[0].cert.size &&
               memcmp(pc[0].cert.data, want[0].cert.data, want[0].cert.size) == 0;
    for (unsigned i = 0; i < wn; i++)
        gnutls_pcert_deinit(&want[i]);
    return same;
}

START_TEST(certs_load_errors)
{
    nw_metrics_t m;
    nw_server_metrics_init(&m);
    nw_err_t err = {0};
    ck_assert(!nw_certs_ready());
    ck_assert_int_eq(nw_certs_load_initial(D "missing.crt", D "a.key", &m, &err), NW_EIO);
    ck_assert_ptr_nonnull(strstr(err.msg, "missing.crt: No such file"));
    nw_err_clear(&err);
    ck_assert_int_eq(nw_certs_load_initial(D "garbage.crt", D "a.key", &m, &err), NW_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "garbage.crt: not a PEM certificate"));
    nw_err_clear(&err);
    ck_assert_int_eq(nw_certs_load_initial(D "a.crt", D "a.crt", &m, &err), NW_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "a.crt: not a PEM private key"));
    nw_err_clear(&err);
    ck_assert_int_eq(nw_certs_load_initial(D "a.crt", D "b.key", &m, &err), NW_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "b.key does not match the certificate in"));
    ck_assert_uint_eq(atomic_load(&m.cert_reload_failures), 4);
    ck_assert(!nw_certs_ready());
    gnutls_pcert_st *pc;
    unsigned n = 7;
    gnutls_privkey_t key;
    ck_assert_int_eq(nw_certs_retrieve(NULL, NULL, 0, NULL, 0, &pc, &n, &key), -1);
    ck_assert_uint_eq(n, 0);
    nw_certs_shutdown();
}
END_TEST

START_TEST(certs_load_and_chain)
{
    nw_metrics_t m;
    nw_server_metrics_init(&m);
    nw_err_t err = {0};
    ck_assert_int_eq(nw_certs_load_initial(D "a-chain.crt", D "a.key", &m, &err), NW_OK);
    ck_assert(nw_certs_ready());
    gnutls_pcert_st *pc;
    unsigned n = 0;
    gnutls_privkey_t key;
    ck_assert_int_eq(nw_certs_retrieve(NULL, NULL, 0, NULL, 0, &pc, &n, &key), 0);
    ck_assert_uint_eq(n, 2); /* leaf + CA */
    ck_assert(served_is(D "a.crt"));
    ck_assert_uint_eq(atomic_load(&m.cert_reloads), 1);
    ck_assert_int_gt(atomic_load(&m.cert_not_after), 1700000000);
    nw_certs_shutdown();
    ck_assert(!nw_certs_ready());
}
END_TEST

START_TEST(certs_watch)
{
    char dir[] = "/tmp/nw-certs-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char crt[256], key[256];
    snprintf(crt, sizeof crt, "%s/tls.crt", dir);
    snprintf(key, sizeof key, "%s/tls.key", dir);
    copy_file(D "a.crt", crt);
    copy_file(D "a.key", key);
    nw_metrics_t m;
    nw_server_metrics_init(&m);
    nw_err_t err = {0};
    ck_assert_int_eq(nw_certs_load_initial(crt, key, &m, &err), NW_OK);
    nw_certs_watch_t *w;
    /* a long interval: the test drives the polls itself */
    ck_assert_int_eq(nw_certs_watch_start(crt, key, 3600LL * 1000000000LL, &m, &w, &err), NW_OK);
    ck_assert_int_eq(nw_certs_watch_poll(w), 0); /* nothing changed */
    ck_assert(served_is(D "a.crt"));

    copy_file(D "b.crt", crt); /* cert changed, key not yet: mismatch, keep a */
    ck_assert_int_eq(nw_certs_watch_poll(w), -1);
    ck_assert(served_is(D "a.crt"));
    ck_assert_int_eq(nw_certs_watch_poll(w), 0); /* same files: not retried */
    copy_file(D "b.key", key);                   /* now the pair matches */
    ck_assert_int_eq(nw_certs_watch_poll(w), 1);
    ck_assert(served_is(D "b.crt"));
    copy_file(D "garbage.crt", crt);
    ck_assert_int_eq(nw_certs_watch_poll(w), -1);
    ck_assert(served_is(D "b.crt"));
    unlink(crt); /* file gone: a failure, b still served */
    ck_assert_int_eq(nw_certs_watch_poll(w), -1);
    ck_assert(served_is(D "b.crt"));
    copy_file(D "a.crt", crt);
    copy_file(D "a.key", key);
    ck_assert_int_eq(nw_certs_watch_poll(w), 1);
    ck_assert(served_is(D "a.crt"));
    ck_assert_uint_eq(atomic_load(&m.cert_reloads), 3);
    ck_assert_uint_eq(atomic_load(&m.cert_reload_failures), 3);
    nw_certs_watch_stop(w);
    nw_certs_shutdown();
    unlink(crt);
    unlink(key);
    rmdir(dir);
}
END_TEST

/* Each refusal: the error names the file and the problem, the metric counts the reason,
 * and nothing is installed. */
static void refused(const char *crt, const char *key, nw_cert_err_t why, const char *msg)
{
    nw_metrics_t m;
    nw_server_metrics_init(&m);
    nw_err_t err = {0};
    ck_assert_int_ne(nw_certs_load_initial(crt, key, &m, &err), NW_OK);
    ck_assert_msg(strstr(err.msg, msg), "error \"%s\" lacks \"%s\"", err.msg, msg);
    ck_assert_uint_eq(atomic_load(&m.cert_reload_errors[why]), 1);
    ck_assert_uint_eq(atomic_load(&m.cert_reload_failures), 1);
    ck_assert(!nw_certs_ready());
}

START_TEST(certs_refusals)
{
    static char *const svc[] = {"nodewarden.nodewarden.svc"};
    ck_assert_int_eq(nw_certs_require_dns_names(svc, 1), NW_OK);
    refused(D "missing.crt", D "a.key", NW_CERT_ERR_UNREADABLE, "missing.crt: No such file");
    refused(D, D "a.key", NW_CERT_ERR_NOT_REGULAR, "certs/: not a regular file");
    refused(D "garbage.crt", D "a.key", NW_CERT_ERR_PARSE, "not a PEM certificate");
    refused(D "a.crt", D "b.key", NW_CERT_ERR_KEY_MISMATCH, "b.key does not match");
    refused(D "a-expired.crt", D "a.key", NW_CERT_ERR_EXPIRED,
            "a-expired.crt: certificate expired at 2020-01-02");
    refused(D "a-future.crt", D "a.key", NW_CERT_ERR_NOT_YET_VALID,
            "a-future.crt: certificate not valid before 2090-01-01");
    refused(D "a-othername.crt", D "a.key", NW_CERT_ERR_DNS_NAME,
            "does not name nodewarden.nodewarden.svc in its subjectAltName");
    /* the named certificate loads; without required names the other one does too */
    nw_err_t err = {0};
    ck_assert_int_eq(nw_certs_load_initial(D "a.crt", D "a.key", NULL, &err), NW_OK);
    nw_certs_shutdown(); /* also forgets the names */
    ck_assert_int_eq(nw_certs_load_initial(D "a-othername.crt", D "a.key", NULL, &err), NW_OK);
    nw_certs_shutdown();
}
END_TEST

/* A FIFO at the certificate path is refused at once (it used to block the watcher in
 * fopen forever, and SIGTERM then waited on it); the old pair stays and stop returns. */
START_TEST(certs_watch_fifo)
{
    char dir[] = "/tmp/nw-certs-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char crt[256], key[256];
    snprintf(crt, sizeof crt, "%s/tls.crt", dir);
    snprintf(key, sizeof key, "%s/tls.key", dir);
    copy_file(D "a.crt", crt);
    copy_file(D "a.key", key);
    nw_metrics_t m;
    nw_server_metrics_init(&m);
    nw_err_t err = {0};
    ck_assert_int_eq(nw_certs_load_initial(crt, key, &m, &err), NW_OK);
    nw_certs_watch_t *w;
    ck_assert_int_eq(nw_certs_watch_start(crt, key, 3600LL * 1000000000LL, &m, &w, &err), NW_OK);
    unlink(crt);
    ck_assert_int_eq(mkfifo(crt, 0600), 0);
    ck_assert_int_eq(nw_certs_watch_poll(w), -1); /* returns: no writer needed */
    ck_assert(served_is(D "a.crt"));
    ck_assert_uint_eq(atomic_load(&m.cert_reload_errors[NW_CERT_ERR_NOT_REGULAR]), 1);
    unlink(key);
    ck_assert_int_eq(mkfifo(key, 0600), 0);
    unlink(crt);
    copy_file(D "b.crt", crt);
    ck_assert_int_eq(nw_certs_watch_poll(w), -1); /* the key is the FIFO now */
    ck_assert(served_is(D "a.crt"));
    ck_assert_uint_eq(atomic_load(&m.cert_reload_errors[NW_CERT_ERR_NOT_REGULAR]), 2);
    nw_certs_watch_stop(w);
    nw_certs_shutdown();
    unlink(crt);
    unlink(key);
    rmdir(dir);
}
END_TEST

Suite *nw_certs_suite(void)
{
    Suite *s = suite_create("certs");
    TCase *tc = tcase_create("certs");
    tcase_add_test(tc, certs_load_errors);
    tcase_add_test(tc, certs_load_and_chain);
    tcase_add_test(tc, certs_watch);
    tcase_add_test(tc, certs_refusals);
    tcase_add_test(tc, certs_watch_fifo);
    suite_add_tcase(s, tc);
    return s;
}
