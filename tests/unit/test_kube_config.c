/* Unit tests for scaler/kube/config: kubeconfig variants (tests/data/kubeconfig) and
 * the in-cluster service account. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/file.h"
#include "scaler/kube/config.h"
#include "cli/doctor.h"

Suite *nw_kube_config_suite(void);

#define D "tests/data/kubeconfig/"

static nw_kube_config_t *load_ok(const char *path, const char *ctx)
{
    nw_kube_config_t *c = NULL;
    nw_err_t err = {0};
    nw_rc_t rc = nw_kube_config_load_kubeconfig(path, ctx, &c, &err);
    ck_assert_msg(rc == NW_OK, "%s: %s", path, err.msg);
    ck_assert_ptr_nonnull(c);
    return c;
}

static void load_fail(const char *path, const char *ctx, const char *want1, const char *want2)
{
    nw_kube_config_t *c = (nw_kube_config_t *)1;
    nw_err_t err = {0};
    nw_rc_t rc = nw_kube_config_load_kubeconfig(path, ctx, &c, &err);
    ck_assert_int_ne(rc, NW_OK);
    ck_assert_ptr_null(c);
    ck_assert_msg(strstr(err.msg, want1), "%s: message \"%s\" lacks \"%s\"", path, err.msg, want1);
    if (want2)
        ck_assert_msg(strstr(err.msg, want2), "%s: message \"%s\" lacks \"%s\"", path, err.msg,
                      want2);
}

START_TEST(kc_token)
{
    nw_kube_config_t *c = load_ok(D "token.yaml", NULL);
    ck_assert_str_eq(c->server, "https://10.0.0.1:6443"); /* trailing slash dropped */
    ck_assert_str_eq(c->token, "sekret-token");
    ck_assert_ptr_null(c->token_file);
    ck_assert_str_eq(c->namespace, "kube-system");
    ck_assert_str_eq(c->context, "prod");
    ck_assert_ptr_nonnull(c->ca_pem);
    ck_assert_ptr_nonnull(strstr(c->ca_pem, "-----BEGIN CERTIFICATE-----"));
    ck_assert_int_eq(c->insecure, 0);
    ck_assert_ptr_null(c->cert_pem);
    nw_kube_config_free(c);
}
END_TEST

START_TEST(kc_client_cert_data)
{
    nw_kube_config_t *c = load_ok(D "client-cert-data.yaml", NULL);
    ck_assert_str_eq(c->server, "https://api.example.com:6443");
    ck_assert_ptr_nonnull(strstr(c->cert_pem, "BEGIN CERTIFICATE"));
    ck_assert_ptr_nonnull(strstr(c->key_pem, "PRIVATE KEY"));
    ck_assert_ptr_null(c->token);
    ck_assert_str_eq(c->namespace, "default");
    nw_kube_config_free(c);
}
END_TEST

START_TEST(kc_ca_file_relative)
{
    nw_kube_config_t *c = load_ok(D "ca-file.yaml", NULL);
    size_t n;
    char *want = nw_file_read(D "ca.pem", 1 << 20, &n);
    ck_assert_ptr_nonnull(want);
    ck_assert_uint_eq(c->ca_len, n);
    ck_assert_int_eq(memcmp(c->ca_pem, want, n), 0);
    free(want);
    ck_assert_ptr_nonnull(strstr(c->cert_pem, "BEGIN CERTIFICATE"));
    ck_assert_str_eq(c->tls_server_name, "kubernetes.default.svc");
    nw_kube_config_free(c);
}
END_TEST

START_TEST(kc_insecure_token_file)
{
    nw_kube_config_t *c = load_ok(D "insecure.yaml", NULL);
    ck_assert_int_eq(c->insecure, 1);
    ck_assert_ptr_null(c->ca_pem);
    ck_assert_ptr_null(c->token);
    ck_assert_str_eq(c->token_file, D "token.txt");
    nw_kube_config_free(c);
}
END_TEST

START_TEST(kc_exec_plugin)
{
    nw_kube_config_t *c = load_ok(D "exec.yaml", NULL);
    ck_assert_ptr_nonnull(c->exec);
    ck_assert_str_eq(c->exec->command, "aws");
    ck_assert_str_eq(c->exec->args[0], "eks");
    ck_assert_str_eq(c->exec->args[3], "demo");
    ck_assert_ptr_null(c->exec->args[4]);
    ck_assert_ptr_null(c->exec->env[0]);
    ck_assert_str_eq(c->exec->api_version, "client.authentication.k8s.io/v1beta1");
    ck_assert_int_eq(c->exec->interactive, NW_KUBE_EXEC_IF_AVAILABLE); /* v1beta1's default */
    ck_assert_str_eq(c->exec->user, "eks-user");
    ck_assert_ptr_null(c->token);
    nw_kube_config_free(c);
}
END_TEST

/* Write a kubeconfig whose user is `user_yaml` (indented under "user:"). */
static char *exec_kubeconfig(const char *user_yaml)
{
    char *path = strdup("/tmp/nwkcexecXXXXXX");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    fprintf(
        f,
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: "
        "https://10.0.0.1:6443\n    extensions:\n    - name: client.authentication.k8s.io/exec\n"
        "      extension: {audience: x}\nusers:\n- name: u\n  user:\n%s\ncontexts:\n- name: "
        "c\n  context: {cluster: c, user: u}\ncurrent-context: c\n",
        user_yaml);
    fclose(f);
    return path;
}

START_TEST(kc_exec_fields_and_errors)
{
    char *p = exec_kubeconfig("    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"
                              "      command: ./bin/helper\n      args: [a, b]\n"
                              "      env: [{name: A, value: '1'}, {name: B, value: ''}]\n"
                              "      interactiveMode: Never\n      provideClusterInfo: true\n"
                              "      installHint: get it\n");
    nw_kube_config_t *c = load_ok(p, NULL);
    ck_assert_str_eq(c->exec->command, "/tmp/./bin/helper"); /* beside the kubeconfig */
    ck_assert_str_eq(c->exec->env[0], "A=1");
    ck_assert_str_eq(c->exec->env[1], "B=");
    ck_assert_int_eq(c->exec->interactive, NW_KUBE_EXEC_NEVER);
    ck_assert_int_eq(c->exec->provide_cluster_info, 1);
    ck_assert_str_eq(c->exec->install_hint, "get it");
    ck_assert_str_eq(c->exec->cluster_config, "{\"audience\":\"x\"}");
    nw_kube_config_free(c);
    unlink(p);
    free(p);
    /* a token of the same user wins over the plugin, as in client-go */
    p = exec_kubeconfig("    token: t\n    exec: {apiVersion: client.authentication.k8s.io/v1, "
                        "command: x, interactiveMode: Never}\n");
    c = load_ok(p, NULL);
    ck_assert_ptr_null(c->exec);
    ck_assert_str_eq(c->token, "t");
    nw_kube_config_free(c);
    unlink(p);
    free(p);
    static const struct {
        const char *user, *want;
    } bad[] = {
        {"    exec: {apiVersion: client.authentication.k8s.io/v1, interactiveMode: Never}",
         "users[].user.exec.command is required"},
        {"    exec: {apiVersion: client.authentication.k8s.io/v1alpha1, command: x}",
         "users[].user.exec.apiVersion must be"},
        {"    exec: {apiVersion: client.authentication.k8s.io/v1, command: x}",
         "users[].user.exec.interactiveMode is required"},
        {"    exec: {apiVersion: client.authentication.k8s.io/v1, command: x, interactiveMode: "
         "Sometimes}",
         "interactiveMode must be Never, IfAvailable or Always"},
        {"    exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: x, args: a}",
         "users[].user.exec.args must be a list"},
        {"    exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: x, args: [[1]]}",
         "users[].user.exec.args[0] must be a string"},
        {"    exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: x, env: [{name: "
         "A}]}",
         "users[].user.exec.env[0] needs a name"},
        {"    exec: helper", "users[].user.exec must be a mapping"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        p = exec_kubeconfig(bad[i].user);
        load_fail(p, NULL, bad[i].want, "user \"u\"");
        unlink(p);
        free(p);
    }
}
END_TEST

START_TEST(kc_auth_provider_rejected)
{
    load_fail(D "auth-provider.yaml", NULL, "auth-provider", "not supported");
}
END_TEST

START_TEST(kc_missing_context)
{
    load_fail(D "missing-context.yaml", NULL, "context \"ctx-gone\" not found", "ctx-a, ctx-b");
    load_fail(D "token.yaml", "nope", "context \"nope\" not found", "prod");
}
END_TEST

START_TEST(kc_explicit_context)
{
    nw_kube_config_t *c = load_ok(D "missing-context.yaml", "ctx-b");
    ck_assert_str_eq(c->context, "ctx-b");
    ck_assert_str_eq(c->server, "https://1.2.3.4");
    nw_kube_config_free(c);
}
END_TEST

START_TEST(kc_bad_base64)
{
    load_fail(D "bad-base64.yaml", NULL, "certificate-authority-data", "base64");
}
END_TEST

START_TEST(kc_merge_first_wins)
{
    /* token.yaml first: its current-context, its "prod" cluster and "admin" user win */
    nw_kube_config_t *c = load_ok(D "token.yaml:" D "second.yaml", NULL);
    ck_assert_str_eq(c->server, "https://10.0.0.1:6443");
    ck_assert_str_eq(c->token, "sekret-token");
    nw_kube_config_free(c);
    /* a context defined only in the second file, with the first file's user */
    c = load_ok(D "token.yaml:" D "second.yaml", "other");
    ck_assert_str_eq(c->server, "https://other.example.com:8443");
    ck_assert_str_eq(c->token, "sekret-token");
    ck_assert_str_eq(c->namespace, "team-b");
    nw_kube_config_free(c);
    /* missing files in a list are skipped */
    c = load_ok("/nonexistent/kc:" D "second.yaml", NULL);
    ck_assert_str_eq(c->context, "other");
    nw_kube_config_free(c);
}
END_TEST

START_TEST(kc_missing_file_and_garbage)
{
    load_fail("/nonexistent/kubeconfig", NULL, "cannot read kubeconfig", NULL);
    char path[] = "/tmp/nwkcgXXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, "clusters: [\n", 12), 12);
    close(fd);
    load_fail(path, NULL, path, NULL);
    unlink(path);
}
END_TEST

static char *mk_sa_dir(const char *token, const char *ns)
{
    char *dir = strdup("/tmp/nwsaXXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char p[512];
    FILE *f;
    snprintf(p, sizeof p, "%s/token", dir);
    f = fopen(p, "w");
    fputs(token, f);
    fclose(f);
    snprintf(p, sizeof p, "%s/ca.crt", dir);
    f = fopen(p, "w");
    fputs("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n", f);
    fclose(f);
    if (ns) {
        snprintf(p, sizeof p, "%s/namespace", dir);
        f = fopen(p, "w");
        fputs(ns, f);
        fclose(f);
    }
    return dir;
}

static void rm_sa_dir(char *dir)
{
    char p[512];
    const char *names[] = {"token", "ca.crt", "namespace"};
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        unlink(p);
    }
    rmdir(dir);
    free(dir);
}

START_TEST(incluster_ok)
{
    char *dir = mk_sa_dir("tok\n", "nodewarden\n");
    setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    nw_kube_config_t *c = NULL;
    nw_err_t err = {0};
    ck_assert_int_eq(nw_kube_config_load_incluster(dir, &c, &err), NW_OK);
    ck_assert_str_eq(c->server, "https://10.96.0.1:443");
    ck_assert_str_eq(c->namespace, "nodewarden");
    ck_assert_ptr_null(c->token); /* never cached: the client re-reads the file */
    ck_assert_ptr_nonnull(strstr(c->token_file, "/token"));
    ck_assert_ptr_nonnull(c->ca_pem);
    nw_kube_config_free(c);
    /* IPv6 host is bracketed */
    setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
    ck_assert_int_eq(nw_kube_config_load_incluster(dir, &c, &err), NW_OK);
    ck_assert_str_eq(c->server, "https://[fd00::1]:443");
    nw_kube_config_free(c);
    rm_sa_dir(dir);
}
END_TEST

START_TEST(incluster_errors)
{
    unsetenv("KUBERNETES_SERVICE_HOST");
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    nw_kube_config_t *c = NULL;
    nw_err_t err = {0};
    ck_assert_int_ne(nw_kube_config_load_incluster("/nonexistent", &c, &err), NW_OK);
    ck_assert_ptr_nonnull(strstr(err.msg, "KUBERNETES_SERVICE_HOST"));
    setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
    nw_err_clear(&err);
    ck_assert_int_ne(nw_kube_config_load_incluster("/nonexistent", &c, &err), NW_OK);
    ck_assert_ptr_nonnull(strstr(err.msg, "/nonexistent/token"));
    ck_assert_ptr_null(c);
}
END_TEST

START_TEST(b64)
{
    size_t n;
    char *s = nw_kube_config_b64_decode("aGVsbG8gd29ybGQ=", &n);
    ck_assert_str_eq(s, "hello world");
    ck_assert_uint_eq(n, 11);
    free(s);
    s = nw_kube_config_b64_decode("aGVs\nbG8=", &n);
    ck_assert_str_eq(s, "hello");
    free(s);
    ck_assert_ptr_null(nw_kube_config_b64_decode("aGVsbG8", &n)); /* not a multiple of 4 */
    ck_assert_ptr_null(nw_kube_config_b64_decode("aG=Vz", &n));   /* data after padding */
    ck_assert_ptr_null(nw_kube_config_b64_decode("a*bc", &n));
}
END_TEST

START_TEST(ca_bundle_verifies_serving_cert)
{
    size_t cl, ol;
    char *ca = nw_file_read(D "ca.pem", 1 << 20, &cl);
    char *other = nw_file_read(D "other-ca.pem", 1 << 20, &ol);
    char *leaf = nw_file_read(D "serving.pem", 1 << 20, NULL);
    ck_assert_ptr_nonnull(ca);
    ck_assert_ptr_nonnull(other);
    ck_assert_ptr_nonnull(leaf);
    char why[256] = "";
    ck_assert_int_eq(nw_doctor_ca_verifies(ca, cl, leaf, why, sizeof why), 1);
    ck_assert_int_eq(nw_doctor_ca_verifies(other, ol, leaf, why, sizeof why), 0);
    ck_assert_msg(strstr(why, "issuer") != NULL, "why: %s", why);
    /* a bundle with both CAs (rotation overlap) verifies */
    size_t bl = cl + ol;
    char *both = malloc(bl + 1);
    memcpy(both, other, ol);
    memcpy(both + ol, ca, cl);
    both[bl] = '\0';
    ck_assert_int_eq(nw_doctor_ca_verifies(both, bl, leaf, why, sizeof why), 1);
    ck_assert_int_eq(nw_doctor_ca_verifies("garbage", 7, leaf, why, sizeof why), 0);
    ck_assert_ptr_nonnull(strstr(why, "no PEM"));
    ck_assert_int_eq(nw_doctor_ca_verifies(ca, cl, "not a cert", why, sizeof why), 0);
    free(both);
    free(ca);
    free(other);
    free(leaf);
}
END_TEST

START_TEST(doctor_report_format)
{
    nw_kube_report_t r;
    nw_doctor_report_init(&r);
    nw_doctor_report_add(&r, NW_CHECK_OK, "api", "API server", "never shown", "reachable");
    nw_doctor_report_add(&r, NW_CHECK_FAIL, "rbac", "create core/pods/eviction", "grant it",
                         "denied");
    nw_doctor_report_add(&r, NW_CHECK_WARN, "rbac", "x", "y", "%d", 3);
    ck_assert_uint_eq(r.n, 3);
    ck_assert_uint_eq(r.failed, 1);
    ck_assert_uint_eq(r.warned, 1);
    ck_assert_str_eq(r.v[0].fix, "");
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    nw_doctor_report_print(&r, f);
    fclose(f);
    ck_assert_ptr_nonnull(
        strstr(buf, "FAIL  rbac      create core/pods/eviction: denied\n      fix: grant it\n"));
    ck_assert_ptr_nonnull(strstr(buf, "3 checks, 1 failed, 1 warnings"));
    free(buf);
    nw_doctor_report_cleanup(&r);
}
END_TEST

Suite *nw_kube_config_suite(void)
{
    Suite *s = suite_create("kube_config");
    TCase *tc = tcase_create("kubeconfig");
    tcase_add_test(tc, kc_token);
    tcase_add_test(tc, kc_client_cert_data);
    tcase_add_test(tc, kc_ca_file_relative);
    tcase_add_test(tc, kc_insecure_token_file);
    tcase_add_test(tc, kc_exec_plugin);
    tcase_add_test(tc, kc_exec_fields_and_errors);
    tcase_add_test(tc, kc_auth_provider_rejected);
    tcase_add_test(tc, kc_missing_context);
    tcase_add_test(tc, kc_explicit_context);
    tcase_add_test(tc, kc_bad_base64);
    tcase_add_test(tc, kc_merge_first_wins);
    tcase_add_test(tc, kc_missing_file_and_garbage);
    tcase_add_test(tc, incluster_ok);
    tcase_add_test(tc, incluster_errors);
    tcase_add_test(tc, b64);
    tcase_add_test(tc, ca_bundle_verifies_serving_cert);
    tcase_add_test(tc, doctor_report_format);
    suite_add_tcase(s, tc);
    return s;
}
