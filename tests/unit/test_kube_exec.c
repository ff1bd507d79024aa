/* Unit tests for kubeconfig exec credential plugins (scaler/kube/execcred) through the
 * Kubernetes client against a local API server (tests/unit/fakeapi.c) and a real plugin
 * (a shell script): the token it prints is sent, a 401 runs it again, a credential near
 * its expiry is replaced (a fake clock moves), a failing run keeps a credential that is
 * still valid, a plugin that hangs is stopped, and every malformed answer is named. */
#include <check.h>
#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scaler/kube/client.h"
#include "scaler/kube/execcred.h"
#include "tests/unit/fakeapi.h"

Suite *nw_kube_exec_suite(void);

static char dir[64];

static void write_file(const char *name, const char *text)
{
    char p[160];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static int read_int(const char *name)
{
    char p[160];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "r");
    int n = 0;
    if (f) {
        if (fscanf(f, "%d", &n) != 1)
            n = 0;
        fclose(f);
    }
    return n;
}

static void setup(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    snprintf(dir, sizeof dir, "/tmp/nwexecXXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char script[1200];
    snprintf(script, sizeof script,
             "#!/bin/sh\n"
             "d=%s\n"
             "n=$(cat $d/runs 2>/dev/null || echo 0); echo $((n+1)) > $d/runs\n"
             "printf '%%s' \"$KUBERNETES_EXEC_INFO\" > $d/info\n"
             "if [ -f $d/fail ]; then echo 'first line' >&2; echo 'the login expired' >&2; "
             "exit 4; fi\n"
             "if [ -f $d/hang ]; then exec sleep 30; fi\n"
             "if [ -f $d/out ]; then cat $d/out; exit 0; fi\n"
             "exp=$(date -u -d \"+60 seconds\" +%%Y-%%m-%%dT%%H:%%M:%%SZ)\n"
             "printf '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":"
             "\"ExecCredential\",\"status\":{\"token\":\"%%s\",\"expirationTimestamp\":\"%%s\"}}' "
             "\"$(cat $d/token)\" \"$exp\"\n",
             dir);
    write_file("plugin", script);
    char p[160];
    snprintf(p, sizeof p, "%s/plugin", dir);
    chmod(p, 0700);
    write_file("token", "tok-1");
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}

typedef struct {
    char want[64]; /* the bearer token the server takes */
    _Atomic int calls, refused;
} srv_state_t;

static pthread_mutex_t want_mu = PTHREAD_MUTEX_INITIALIZER;

static void handler(void *ud, const fake_req_t *r, fake_conn_t *c)
{
    srv_state_t *st = ud;
    char want[96];
    pthread_mutex_lock(&want_mu);
    snprintf(want, sizeof want, "Bearer %s", st->want);
    pthread_mutex_unlock(&want_mu);
    atomic_fetch_add(&st->calls, 1);
    if (strcmp(r->auth, want) != 0) {
        atomic_fetch_add(&st->refused, 1);
        fake_reply(c, 401, "", "{\"kind\":\"Status\",\"reason\":\"Unauthorized\",\"code\":401}");
        return;
    }
    fake_reply(c, 200, "", "{\"kind\":\"Namespace\",\"metadata\":{\"name\":\"default\"}}");
}

static void set_want(srv_state_t *st, const char *tok)
{
    pthread_mutex_lock(&want_mu);
    snprintf(st->want, sizeof st->want, "%s", tok);
    pthread_mutex_unlock(&want_mu);
}

/* A client for port whose user runs the plugin (interactiveMode mode). */
static nw_kube_client_t *client(int port, const char *mode, const nw_clock_t *clk, long timeout_ms)
{
    char kc[160], text[1400];
    snprintf(kc, sizeof kc, "%s/kubeconfig", dir);
    snprintf(text, sizeof text,
             "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: "
             "http://127.0.0.1:%d\nusers:\n- name: plugged\n  user:\n    exec:\n      apiVersion: "
             "client.authentication.k8s.io/v1\n      command: ./plugin\n      interactiveMode: %s\n"
             "      provideClusterInfo: true\ncontexts:\n- name: fake\n  context: {cluster: fake, "
             "user: plugged}\ncurrent-context: fake\n",
             port, mode);
    write_file("kubeconfig", text);
    nw_kube_config_t *cfg = NULL;
    nw_err_t err = {0};
    ck_assert_msg(nw_kube_config_load_kubeconfig(kc, NULL, &cfg, &err) == NW_OK, "%s", err.msg);
    nw_kube_client_opts_t o = {.qps = -1,
                               .max_retries = -1,
                               .timeout_ms = 5000,
                               .clock = clk,
                               .exec_timeout_ms = timeout_ms};
    nw_kube_client_t *c = NULL;
    ck_assert_int_eq(nw_kube_client_new(cfg, &o, &c, &err), NW_OK);
    return c;
}

static nw_rc_t get(nw_kube_client_t *c, nw_err_t *err)
{
    cJSON *out = NULL;
    nw_rc_t rc =
        nw_kube_client_get_json(c, "/api/v1/namespaces/default", "get", "namespaces", &out, err);
    cJSON_Delete(out);
    return rc;
}

START_TEST(token_sent_and_401_runs_it_again)
{
    srv_state_t st = {0};
    set_want(&st, "tok-1");
    fake_srv_t *srv = fake_srv_start(handler, &st);
    nw_kube_client_t *c = client(fake_srv_port(srv), "Never", NULL, 0);
    nw_err_t err = {0};
    ck_assert_msg(get(c, &err) == NW_OK, "%s", err.msg);
    ck_assert_int_eq(read_int("runs"), 1);
    ck_assert_int_eq(get(c, &err), NW_OK); /* kept: 60 s left */
    ck_assert_int_eq(read_int("runs"), 1);
    /* the server now wants another token: the 401 runs the plugin, the retry passes */
    write_file("token", "tok-2");
    set_want(&st, "tok-2");
    ck_assert_msg(get(c, &err) == NW_OK, "%s", err.msg);
    ck_assert_int_eq(read_int("runs"), 2);
    ck_assert_int_eq(atomic_load(&st.refused), 1);
    ck_assert_int_eq(nw_kube_client_plugin_runs(c), 2);
    nw_kube_client_free(c);
    fake_srv_stop(srv);
}
END_TEST

START_TEST(exec_info_given)
{
    srv_state_t st = {0};
    set_want(&st, "tok-1");
    fake_srv_t *srv = fake_srv_start(handler, &st);
    nw_kube_client_t *c = client(fake_srv_port(srv), "IfAvailable", NULL, 0);
    ck_assert_int_eq(nw_kube_client_credentials(c, NULL), NW_OK);
    char p[160], want[128];
    snprintf(p, sizeof p, "%s/info", dir);
    FILE *f = fopen(p, "r");
    ck_assert_ptr_nonnull(f);
    char info[2048] = "";
    size_t n = fread(info, 1, sizeof info - 1, f);
    info[n] = '\0';
    fclose(f);
    ck_assert_ptr_nonnull(strstr(info, "\"apiVersion\":\"client.authentication.k8s.io/v1\""));
    ck_assert_ptr_nonnull(strstr(info, "\"kind\":\"ExecCredential\""));
    ck_assert_ptr_nonnull(strstr(info, "\"interactive\":false")); /* stdin is no terminal */
    snprintf(want, sizeof want, "\"server\":\"http://127.0.0.1:%d\"", fake_srv_port(srv));
    ck_assert_ptr_nonnull(strstr(info, want));
    nw_kube_client_free(c);
    fake_srv_stop(srv);
}
END_TEST

START_TEST(replaced_before_expiry)
{
    srv_state_t st = {0};
    set_want(&st, "tok-1");
    fake_srv_t *srv = fake_srv_start(handler, &st);
    nw_clock_fake_t clk;
    nw_clock_fake_init(&clk, nw_clock_now(nw_clock_system()));
    nw_kube_client_t *c = client(fake_srv_port(srv), "Never", &clk.base, 0);
    nw_err_t err = {0};
    ck_assert_msg(get(c, &err) == NW_OK, "%s", err.msg);
    ck_assert_int_eq(read_int("runs"), 1);
    nw_clock_fake_advance(&clk, 10 * NW_NS_PER_SEC);
    ck_assert_int_eq(get(c, &err), NW_OK);
    ck_assert_int_eq(read_int("runs"), 1);
    nw_clock_fake_advance(&clk, 25 * NW_NS_PER_SEC); /* 35 s: within 30 s of the expiry */
    ck_assert_int_eq(get(c, &err), NW_OK);
    ck_assert_int_eq(read_int("runs"), 2);
    /* that one expires at +60 s too (the plugin reads the real clock): at +50 s it is
     * due again; a run that fails while it is still valid leaves it in use */
    write_file("fail", "");
    nw_clock_fake_advance(&clk, 15 * NW_NS_PER_SEC);
    ck_assert_msg(get(c, &err) == NW_OK, "%s", err.msg);
    ck_assert_int_eq(read_int("runs"), 3);
    /* once it has expired the failure is the answer, naming the user and the plugin */
    nw_clock_fake_advance(&clk, 15 * NW_NS_PER_SEC);
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(get(c, &err), NW_EIO);
    ck_assert_ptr_nonnull(strstr(err.msg, "user \"plugged\": exec plugin"));
    ck_assert_ptr_nonnull(strstr(err.msg, "failed with exit status 4: the login expired"));
    ck_assert_ptr_nonnull(strstr(err.path, "users[].user.exec"));
    nw_kube_client_free(c);
    fake_srv_stop(srv);
}
END_TEST

START_TEST(hanging_plugin_stopped)
{
    write_file("hang", "");
    nw_kube_client_t *c = client(1, "Never", NULL, 300);
    nw_err_t err = {0};
    ck_assert_int_eq(nw_kube_client_credentials(c, &err), NW_ETIMEOUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "gave no answer within 0.3 s and was stopped"));
    nw_kube_client_free(c);
}
END_TEST

START_TEST(malformed_answers)
{
    static const struct {
        const char *out, *want;
    } bad[] = {
        {"", "printed nothing, not an ExecCredential"},
        {"token", "printed something, not an ExecCredential"},
        {"{\"apiVersion\":\"client.authentication.k8s.io/v1beta1\",\"kind\":\"ExecCredential\","
         "\"status\":{\"token\":\"t\"}}",
         "configured for client.authentication.k8s.io/v1 but returned apiVersion"},
        {"{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"Secret\"}",
         "returned kind \"Secret\""},
        {"{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\"}",
         "returned no status"},
        {"{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
         "\"status\":{}}",
         "neither status.token nor status.clientCertificateData"},
        {"{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
         "\"status\":{\"clientCertificateData\":\"x\"}}",
         "status.clientCertificateData without status.clientKeyData"},
        {"{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
         "\"status\":{\"clientCertificateData\":\"x\",\"clientKeyData\":\"y\"}}",
         "not PEM"},
        {"{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
         "\"status\":{\"token\":\"t\",\"expirationTimestamp\":\"tomorrow\"}}",
         "expirationTimestamp \"tomorrow\", not an RFC 3339 time"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_file("out", bad[i].out);
        nw_kube_client_t *c = client(1, "Never", NULL, 0);
        nw_err_t err = {0};
        ck_assert_int_ne(nw_kube_client_credentials(c, &err), NW_OK);
        ck_assert_msg(strstr(err.msg, bad[i].want), "case %zu: \"%s\" lacks \"%s\"", i, err.msg,
                      bad[i].want);
        nw_kube_client_free(c);
    }
    /* a client certificate and key that are PEM */
    char *crt = NULL, *key = NULL;
    size_t cl = 0, kl = 0;
    FILE *f = fopen("tests/data/kubeconfig/client.pem", "r");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_ge(getdelim(&crt, &cl, '\0', f), 0);
    fclose(f);
    f = fopen("tests/data/kubeconfig/client.key", "r");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_ge(getdelim(&key, &kl, '\0', f), 0);
    fclose(f);
    cJSON *o = cJSON_CreateObject(), *s = cJSON_AddObjectToObject(o, "status");
    cJSON_AddStringToObject(o, "apiVersion", "client.authentication.k8s.io/v1");
    cJSON_AddStringToObject(o, "kind", "ExecCredential");
    cJSON_AddStringToObject(s, "clientCertificateData", crt);
    cJSON_AddStringToObject(s, "clientKeyData", key);
    char *txt = cJSON_PrintUnformatted(o);
    write_file("out", txt);
    cJSON_free(txt);
    cJSON_Delete(o);
    free(crt);
    free(key);
    nw_kube_client_t *c = client(1, "Never", NULL, 0);
    nw_err_t err = {0};
    ck_assert_msg(nw_kube_client_credentials(c, &err) == NW_OK, "%s", err.msg);
    nw_kube_client_free(c);
}
END_TEST

Suite *nw_kube_exec_suite(void)
{
    Suite *s = suite_create("kube_exec");
    TCase *tc = tcase_create("kube_exec");
    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, token_sent_and_401_runs_it_again);
    tcase_add_test(tc, exec_info_given);
    tcase_add_test(tc, replaced_before_expiry);
    tcase_add_test(tc, hanging_plugin_stopped);
    tcase_add_test(tc, malformed_answers);
    suite_add_tcase(s, tc);
    return s;
}
