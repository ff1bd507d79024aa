/* The Kubernetes client's write paths against the cluster simulator (tests/sim/sim.py,
 * or $NW_SIM_PY): 409 Conflict and the bounded re-read-and-retry, eviction blocked by a
 * PodDisruptionBudget then allowed, finalizers around deletion, aggregated Events. One
 * simulator serves the suite (an unchecked fixture: started once before the tests, stopped
 * after the last; a start took seconds, once per test); each test has its own client and
 * objects of its own names. */
#include <check.h>
#include <curl/curl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "scaler/kube/client.h"
#include "scaler/kube/write.h"

Suite *nw_kube_sim_suite(void);

typedef struct {
    pid_t pid;
    char dir[64];
    nw_kube_client_t *c;
} sim_t;

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void sim_start(sim_t *s)
{
    const char *py = getenv("NW_SIM_PY") ? getenv("NW_SIM_PY") : "tests/sim/sim.py";
    ck_assert_msg(access(py, R_OK) == 0, "the cluster simulator %s is missing", py);
    snprintf(s->dir, sizeof s->dir, "/tmp/nwsimXXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(s->dir));
    char logp[128];
    snprintf(logp, sizeof logp, "%s/sim.log", s->dir);
    s->pid = fork();
    ck_assert_int_ge(s->pid, 0);
    if (s->pid == 0) {
        FILE *l = freopen(logp, "w", stdout);
        (void)l;
        dup2(1, 2);
        execlp("python3", "python3", py, "--dir", s->dir, "--no-webhooks", "--boot-delay", "0.2",
               (char *)NULL);
        _exit(127);
    }
    char ports[128];
    snprintf(ports, sizeof ports, "%s/ports.json", s->dir);
    for (int i = 0; i < 600 && access(ports, R_OK) != 0; i++) {
        int st;
        ck_assert_msg(waitpid(s->pid, &st, WNOHANG) == 0, "simulator exited, see %s", logp);
        sleep_ms(50);
    }
    ck_assert_msg(access(ports, R_OK) == 0, "simulator did not start");
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* the suite's simulator (sim_setup) with a client of this test's own */
static void sim_connect(sim_t *s)
{
    char kc[128];
    snprintf(kc, sizeof kc, "%s/kubeconfig", s->dir);
    nw_kube_config_t *cfg = NULL;
    nw_err_t err = {0};
    ck_assert_msg(nw_kube_config_load_kubeconfig(kc, NULL, &cfg, &err) == NW_OK, "%s", err.msg);
    nw_kube_client_opts_t o = {.qps = -1, .backoff_base_ms = 50, .backoff_max_ms = 500};
    ck_assert_int_eq(nw_kube_client_new(cfg, &o, &s->c, &err), NW_OK);
}

static void sim_stop(sim_t *s)
{
    kill(s->pid, SIGTERM);
    int st;
    waitpid(s->pid, &st, 0);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", s->dir);
    ck_assert_int_eq(system(cmd), 0);
}

static sim_t suite_sim;

static void sim_setup(void)
{
    sim_start(&suite_sim);
}

static void sim_teardown(void)
{
    sim_stop(&suite_sim);
}

static void sim_disconnect(sim_t *s)
{
    nw_kube_client_free(s->c);
    s->c = NULL;
}

static cJSON *parse(const char *s)
{
    cJSON *j = cJSON_Parse(s);
    ck_assert_msg(j != NULL, "bad JSON in test: %s", s);
    return j;
}

static void create(sim_t *s, const nw_kube_res_t *r, const char *ns, const char *json)
{
    cJSON *o = parse(json);
    nw_err_t err = {0};
    ck_assert_msg(nw_kube_write_create(s->c, r, ns, o, NULL, &err) == NW_OK, "create %s: %s",
                  r->plural, err.msg);
    cJSON_Delete(o);
}

typedef struct {
    sim_t *s;
    int calls;
} conflict_ud_t;

/* The first time, someone else writes the object between our read and our write. */
static int mutate_with_race(cJSON *obj, void *ud)
{
    conflict_ud_t *u = ud;
    u->calls++;
    if (u->calls == 1) {
        nw_err_t err = {0};
        ck_assert_int_eq(
            nw_kube_write_patch(
                u->s->c, &nw_kube_client_res_nodes, NULL, "n-conflict", NW_KUBE_PATCH_MERGE,
                "{\"metadata\":{\"labels\":{\"other-writer\":\"yes\"}}}", 0, NULL, &err),
            NW_OK);
    }
    cJSON *m = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    cJSON *l = cJSON_GetObjectItemCaseSensitive(m, "labels");
    if (!l)
        l = cJSON_AddObjectToObject(m, "labels");
    cJSON_DeleteItemFromObjectCaseSensitive(l, "nodewarden.io/seen");
    cJSON_AddStringToObject(l, "nodewarden.io/seen", "true");
    return 0;
}

START_TEST(sim_update_conflict_retry)
{
    sim_t s = suite_sim;
    sim_connect(&s);
    create(&s, &nw_kube_client_res_nodes, NULL,
           "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n-conflict\"}}");
    conflict_ud_t u = {&s, 0};
    nw_err_t err = {0};
    cJSON *out = NULL;
    ck_assert_msg(nw_kube_write_update_retry(s.c, &nw_kube_client_res_nodes, NULL, "n-conflict", 0,
                                             mutate_with_race, &u, 5, &out, &err) == NW_OK,
                  "%s", err.msg);
    ck_assert_int_eq(u.calls, 2); /* 409 once, then re-read and succeed */
    ck_assert_int_eq(
        nw_kube_metrics_get(nw_kube_client_metrics(s.c), NW_KM_REQUESTS, "update", "nodes", 409),
        1);
    cJSON *l = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(out, "metadata"),
                                                "labels");
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(l, "other-writer")),
                     "yes");
    ck_assert_str_eq(
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(l, "nodewarden.io/seen")), "true");
    cJSON_Delete(out);
    /* a plain update with a stale resourceVersion is NW_ECONFLICT */
    cJSON *stale =
        parse("{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n-conflict\","
              "\"resourceVersion\":\"1\"}}");
    nw_err_clear(&err);
    ck_assert_int_eq(nw_kube_write_update(s.c, &nw_kube_client_res_nodes, stale, 0, NULL, &err),
                     NW_ECONFLICT);
    ck_assert_ptr_nonnull(strstr(err.msg, "409"));
    cJSON_Delete(stale);
    sim_disconnect(&s);
}
END_TEST

static int pdb_allowed(sim_t *s, const char *ns, const char *name)
{
    cJSON *o = NULL;
    nw_err_t err = {0};
    if (nw_kube_write_get(s->c, &nw_kube_client_res_pdbs, ns, name, &o, &err) != NW_OK)
        return -1;
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(o, "status");
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(st, "disruptionsAllowed");
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(st, "currentHealthy");
    int v = cJSON_IsNumber(a) && cJSON_IsNumber(h) && h->valueint == 2 ? a->valueint : -1;
    cJSON_Delete(o);
    return v;
}

START_TEST(sim_eviction_pdb_blocks_then_allows)
{
    sim_t s = suite_sim;
    sim_connect(&s);
    nw_err_t err = {0};
    create(&s, &nw_kube_client_res_nodes, NULL,
           "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\"},"
           "\"spec\":{\"providerID\":\"aws:///us-west-2a/i-0123456789abcdef0\"}}");
    ck_assert_int_eq(nw_kube_write_patch(
                         s.c, &nw_kube_client_res_nodes, NULL, "n1", NW_KUBE_PATCH_MERGE,
                         "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}],"
                         "\"allocatable\":{\"cpu\":\"4\",\"memory\":\"8Gi\",\"pods\":\"110\"},"
                         "\"capacity\":{\"cpu\":\"4\",\"memory\":\"8Gi\",\"pods\":\"110\"}}}",
                         1, NULL, &err),
                     NW_OK);
    create(&s, &nw_kube_client_res_namespaces, NULL,
           "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"shop\"}}");
    for (int i = 0; i < 2; i++) {
        char pod[512];
        snprintf(pod, sizeof pod,
                 "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"web-%d\","
                 "\"namespace\":\"shop\","
                 "\"labels\":{\"app\":\"web\"}},\"spec\":{\"containers\":[{\"name\":\"app\","
                 "\"image\":\"nginx\","
                 "\"resources\":{\"requests\":{\"cpu\":\"100m\"}}}]}}",
                 i);
        create(&s, &nw_kube_client_res_pods, "shop", pod);
    }
    create(&s, &nw_kube_client_res_pdbs, "shop",
           "{\"apiVersion\":\"policy/"
           "v1\",\"kind\":\"PodDisruptionBudget\",\"metadata\":{\"name\":\"web\"},"
           "\"spec\":{\"minAvailable\":2,\"selector\":{\"matchLabels\":{\"app\":\"web\"}}}}");
    int allowed = -1;
    for (int i = 0; i < 300 && (allowed = pdb_allowed(&s, "shop", "web")) != 0; i++)
        sleep_ms(50);
    ck_assert_int_eq(allowed, 0);

    nw_kube_evict_t res;
    int ra = 0;
    nw_err_clear(&err);
    ck_assert_int_eq(nw_kube_write_evict(s.c, "shop", "web-0", -1, &res, &ra, &err), NW_OK);
    ck_assert_int_eq(res, NW_KUBE_EVICT_NOT_NOW);
    ck_assert_int_eq(ra, 5); /* no Retry-After: the drain interval */
    ck_assert_ptr_nonnull(strstr(err.msg, "429"));

    /* the budget relaxes: the eviction goes through */
    ck_assert_int_eq(nw_kube_write_patch(s.c, &nw_kube_client_res_pdbs, "shop", "web",
                                         NW_KUBE_PATCH_MERGE, "{\"spec\":{\"minAvailable\":1}}", 0,
                                         NULL, &err),
                     NW_OK);
    for (int i = 0; i < 300 && (allowed = pdb_allowed(&s, "shop", "web")) != 1; i++)
        sleep_ms(50);
    ck_assert_int_eq(allowed, 1);
    ck_assert_int_eq(nw_kube_write_evict(s.c, "shop", "web-0", 0, &res, &ra, &err), NW_OK);
    ck_assert_int_eq(res, NW_KUBE_EVICT_STARTED);
    /* the pod goes; evicting it again reports it gone */
    cJSON *o = NULL;
    nw_rc_t rc = NW_OK;
    for (int i = 0; i < 300; i++) {
        nw_err_t e = {0};
        rc = nw_kube_write_get(s.c, &nw_kube_client_res_pods, "shop", "web-0", &o, &e);
        cJSON_Delete(o);
        o = NULL;
        if (rc == NW_ENOTFOUND)
            break;
        sleep_ms(50);
    }
    ck_assert_int_eq(rc, NW_ENOTFOUND);
    ck_assert_int_eq(nw_kube_write_evict(s.c, "shop", "web-0", -1, &res, &ra, &err), NW_OK);
    ck_assert_int_eq(res, NW_KUBE_EVICT_GONE);
    sim_disconnect(&s);
}
END_TEST

START_TEST(sim_finalizers_and_events)
{
    sim_t s = suite_sim;
    sim_connect(&s);
    nw_err_t err = {0};
    create(
        &s, &nw_kube_client_res_nodeclaims, NULL,
        "{\"apiVersion\":\"karpenter.sh/"
        "v1\",\"kind\":\"NodeClaim\",\"metadata\":{\"name\":\"nc-1\","
        "\"labels\":{\"karpenter.sh/nodepool\":\"general\"}},\"spec\":{\"nodeClassRef\":{\"group\":"
        "\"karpenter.k8s.aws\",\"kind\":\"EC2NodeClass\",\"name\":\"default\"},\"requirements\":[]}"
        "}");
    ck_assert_msg(nw_kube_write_finalizer_add(s.c, &nw_kube_client_res_nodeclaims, NULL, "nc-1",
                                              "nodewarden.io/termination", &err) == NW_OK,
                  "%s", err.msg);
    int gone = -1;
    ck_assert_int_eq(
        nw_kube_write_delete(s.c, &nw_kube_client_res_nodeclaims, NULL, "nc-1", NULL, &gone, &err),
        NW_OK);
    ck_assert_int_eq(gone, 0);
    cJSON *o = NULL;
    ck_assert_int_eq(nw_kube_write_get(s.c, &nw_kube_client_res_nodeclaims, NULL, "nc-1", &o, &err),
                     NW_OK);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(o, "metadata"), "deletionTimestamp");
    ck_assert(cJSON_IsString(dt)); /* held by the finalizer */
    nw_kube_recorder_t *r = nw_kube_write_recorder_new(s.c, "nodewarden", "test-0");
    for (int i = 0; i < 3; i++)
        ck_assert_msg(nw_kube_write_event(r, &nw_kube_client_res_nodeclaims, o, "Normal",
                                          "Terminating", "waiting for the instance to terminate",
                                          &err) == NW_OK,
                      "%s", err.msg);
    cJSON_Delete(o);
    ck_assert_int_eq(nw_kube_write_finalizer_add(s.c, &nw_kube_client_res_nodeclaims, NULL, "nc-1",
                                                 "other.io/x", &err),
                     NW_EINVAL);
    nw_err_clear(&err);
    ck_assert_msg(nw_kube_write_finalizer_remove(s.c, &nw_kube_client_res_nodeclaims, NULL, "nc-1",
                                                 "nodewarden.io/termination", &err) == NW_OK,
                  "%s", err.msg);
    o = NULL;
    ck_assert_int_eq(nw_kube_write_get(s.c, &nw_kube_client_res_nodeclaims, NULL, "nc-1", &o, &err),
                     NW_ENOTFOUND);
    /* one Event in "default" with count 3 */
    cJSON *evs = NULL;
    ck_assert_int_eq(nw_kube_client_get_json(s.c, "/api/v1/namespaces/default/events", "list",
                                             "events", &evs, &err),
                     NW_OK);
    int n = 0, count = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(evs, "items"))
    {
        const char *reason = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "reason"));
        if (reason && !strcmp(reason, "Terminating")) {
            n++;
            count = cJSON_GetObjectItemCaseSensitive(e, "count")->valueint;
        }
    }
    ck_assert_int_eq(n, 1);
    ck_assert_int_eq(count, 3);
    cJSON_Delete(evs);
    nw_kube_write_recorder_free(r);
    sim_disconnect(&s);
}
END_TEST

Suite *nw_kube_sim_suite(void)
{
    Suite *s = suite_create("kube_sim");
    TCase *tc = tcase_create("sim");
    tcase_add_unchecked_fixture(tc, sim_setup, sim_teardown);
    tcase_add_test(tc, sim_update_conflict_retry);
    tcase_add_test(tc, sim_eviction_pdb_blocks_then_allows);
    tcase_add_test(tc, sim_finalizers_and_events);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return s;
}
