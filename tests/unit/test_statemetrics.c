/*
 * Unit tests for scaler/controllers/statemetrics: karpenter_pods_state follows the cluster
 * from one update to the next (a pod's new phase replaces its series, a deleted pod's
 * series goes, a node's new labels reach its pods' series), and the families are written
 * once each in their order; the node gauges are Karpenter's values (requests with init
 * containers and overhead, DaemonSet pods, finished pods left out, overhead, utilization,
 * age, managed); after any sequence of cache changes the page kept up to date change by
 * change is the page a rebuild from nothing writes from the same snapshot; an offering
 * marked unavailable shows at the next 5-second look; a scrape on another thread while
 * the gauges change sees whole pages.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaler/controllers/statemetrics.h"
#include "scaler/metrics/kmetrics.h"
#include "tests/unit/ctlfix.h"

Suite *nw_statemetrics_suite(void);

static void put_pod(ctlfix_t *f, const char *name, const char *node, const char *phase)
{
    char b[1024];
    snprintf(b, sizeof b,
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\",\"uid\":\"u-%s\","
             "\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\","
             "\"name\":\"web\"}]},\"spec\":{\"nodeName\":\"%s\",\"containers\":[{\"name\":\"c\","
             "\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]},\"status\":{\"phase\":\"%s\"}}",
             name, name, node, phase);
    ctlfix_put(f, NW_KUBE_PODS, b, 0);
}

static void put_node(ctlfix_t *f, const char *name, const char *zone)
{
    char b[1024];
    snprintf(b, sizeof b,
             "{\"metadata\":{\"name\":\"%s\",\"uid\":\"u-%s\",\"labels\":{"
             "\"topology.kubernetes.io/zone\":\"%s\",\"karpenter.sh/nodepool\":\"default\"}},"
             "\"status\":{\"allocatable\":{\"cpu\":\"4\"},\"capacity\":{\"cpu\":\"4\"}}}",
             name, name, zone);
    ctlfix_put(f, NW_KUBE_NODES, b, 0);
}

/* The karpenter_pods_state lines of the metrics text, and how many there are. */
static int state_lines(nw_statemetrics_t *m, char *out, size_t len)
{
    nw_buf_t b;
    nw_buf_init(&b, 1 << 22);
    ck_assert_int_eq(nw_statemetrics_write(m, &b), NW_OK);
    int n = 0, help = 0;
    out[0] = '\0';
    for (const char *p = nw_buf_str(&b); p && *p;) {
        const char *e = strchr(p, '\n');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (!strncmp(p, "karpenter_pods_state{", 21)) {
            n++;
            size_t used = strlen(out);
            if (used + l + 2 <= len) { /* the first lines, as many as fit */
                memcpy(out + used, p, l);
                memcpy(out + used + l, "\n", 2);
            }
        }
        help += !strncmp(p, "# HELP karpenter_pods_state ", 27);
        p = e ? e + 1 : p + l;
    }
    ck_assert_int_eq(help, 1); /* the family is written once */
    nw_buf_cleanup(&b);
    return n;
}

static void rebuild(ctlfix_t *f, nw_statemetrics_t *m)
{
    nw_kube_snap_t *s = nw_kube_cache_snapshot(f->deps.cache);
    nw_statemetrics_rebuild(m, s);
    nw_kube_cache_snap_release(s);
}

START_TEST(pods_state_follows_changes)
{
    ctlfix_t f;
    ctlfix_init(&f);
    nw_statemetrics_t *m = nw_statemetrics_new(&f.deps);
    char text[8192];
    ck_assert_int_eq(state_lines(m, text, sizeof text), 0); /* before a rebuild: HELP only */
    put_node(&f, "n1", "us-west-2a");
    put_pod(&f, "a", "n1", "Running");
    put_pod(&f, "b", "n1", "Pending");
    put_pod(&f, "c", "", "Pending");
    rebuild(&f, m);
    ck_assert_int_eq(state_lines(m, text, sizeof text), 3);
    ck_assert_msg(strstr(text, "name=\"a\"") && strstr(text, "zone=\"us-west-2a\""), "%s", text);
    ck_assert_msg(strstr(text, "owner=\"/apis/apps/v1/namespaces/default/replicasets/web\""), "%s",
                  text);
    /* b runs now, c is deleted: b's Pending series goes, c's too */
    put_pod(&f, "b", "n1", "Running");
    ctlfix_del(&f, NW_KUBE_PODS, "default", "c");
    rebuild(&f, m);
    ck_assert_int_eq(state_lines(m, text, sizeof text), 2);
    ck_assert_msg(!strstr(text, "phase=\"Pending\"") && !strstr(text, "name=\"c\""), "%s", text);
    /* the node moves zone: its pods' series follow */
    put_node(&f, "n1", "us-west-2b");
    rebuild(&f, m);
    ck_assert_int_eq(state_lines(m, text, sizeof text), 2);
    ck_assert_msg(!strstr(text, "us-west-2a") && strstr(text, "us-west-2b"), "%s", text);
    /* nothing changed: the same two series */
    rebuild(&f, m);
    ck_assert_int_eq(state_lines(m, text, sizeof text), 2);
    /* many come and go: the removed ones never come back */
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 150; i++) {
            char n[16];
            snprintf(n, sizeof n, "x%d", i);
            put_pod(&f, n, "n1", round % 2 ? "Running" : "Pending");
        }
        rebuild(&f, m);
        ck_assert_int_eq(state_lines(m, text, sizeof text), 152);
        for (int i = 0; i < 150; i++) {
            char n[16];
            snprintf(n, sizeof n, "x%d", i);
            ctlfix_del(&f, NW_KUBE_PODS, "default", n);
        }
        rebuild(&f, m);
        ck_assert_int_eq(state_lines(m, text, sizeof text), 2);
    }
    nw_statemetrics_free(m);
    ctlfix_free(&f);
}
END_TEST

static void tick(ctlfix_t *f, nw_statemetrics_t *m)
{
    nw_kube_snap_t *s = nw_kube_cache_snapshot(f->deps.cache);
    nw_statemetrics_tick(m, s);
    nw_kube_cache_snap_release(s);
}

static void put_started_pod(ctlfix_t *f, const char *name, const char *phase, bool ready)
{
    char b[1024];
    snprintf(b, sizeof b,
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\",\"uid\":\"u-%s\","
             "\"creationTimestamp\":\"2026-01-01T00:00:00Z\"},\"spec\":{\"nodeName\":\"n1\","
             "\"containers\":[{\"name\":\"c\"}]},\"status\":{\"phase\":\"%s\"%s}}",
             name, name, phase,
             ready ? ",\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\","
                     "\"lastTransitionTime\":\"2026-01-01T00:00:07Z\"}]"
                   : "");
    ctlfix_put(f, NW_KUBE_PODS, b, 0);
}

/* A pod seen Pending, then Ready, gives one startup duration; ticks on which no pod
 * changed (skipped) forget nothing: the pod is still waited for when it turns Ready. */
START_TEST(startup_observed_across_quiet_ticks)
{
    ctlfix_t f;
    ctlfix_init(&f);
    f.deps.series = nw_series_new();
    ck_assert_ptr_nonnull(f.deps.series);
    nw_statemetrics_t *m = nw_statemetrics_new(&f.deps);
    put_node(&f, "n1", "us-west-2a");
    put_started_pod(&f, "s", "Pending", false);
    tick(&f, m);
    tick(&f, m);                      /* nothing changed */
    put_node(&f, "n2", "us-west-2b"); /* another kind changed: still no pod */
    tick(&f, m);
    ck_assert_int_eq((int)nw_series_get(f.deps.series, &NW_KMETRICS_PODS_STARTUP_DURATION, NULL),
                     0);
    put_started_pod(&f, "s", "Running", false); /* running, not ready yet */
    tick(&f, m);
    tick(&f, m);
    ck_assert_int_eq((int)nw_series_get(f.deps.series, &NW_KMETRICS_PODS_STARTUP_DURATION, NULL),
                     0);
    put_started_pod(&f, "s", "Running", true);
    tick(&f, m);
    tick(&f, m);
    ck_assert_int_eq((int)nw_series_get(f.deps.series, &NW_KMETRICS_PODS_STARTUP_DURATION, NULL),
                     1);
    nw_statemetrics_free(m);
    nw_series_free(f.deps.series);
    ctlfix_free(&f);
}
END_TEST

/* Many pods Pending over many ticks, each turning Ready at its own tick, and one replaced
 * by a pod of the same name (a new uid) while Pending: one startup per pod that turned
 * Ready, none for the replaced one, each counted once. */
START_TEST(startups_of_many_pending_pods)
{
    ctlfix_t f;
    ctlfix_init(&f);
    f.deps.series = nw_series_new();
    ck_assert_ptr_nonnull(f.deps.series);
    nw_statemetrics_t *m = nw_statemetrics_new(&f.deps);
    put_node(&f, "n1", "us-west-2a");
    enum { N = 200 };
    for (int i = 0; i < N; i++) {
        char n[16];
        snprintf(n, sizeof n, "p%d", i);
        put_started_pod(&f, n, "Pending", false);
    }
    tick(&f, m);
    /* p0 is deleted and made again (another uid) while Pending, then turns Ready */
    ctlfix_del(&f, NW_KUBE_PODS, "default", "p0");
    tick(&f, m);
    ctlfix_put(&f, NW_KUBE_PODS,
               "{\"metadata\":{\"name\":\"p0\",\"namespace\":\"default\",\"uid\":\"u-p0-2\","
               "\"creationTimestamp\":\"2026-01-01T00:00:00Z\"},\"spec\":{\"nodeName\":\"n1\","
               "\"containers\":[{\"name\":\"c\"}]},\"status\":{\"phase\":\"Running\","
               "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\","
               "\"lastTransitionTime\":\"2026-01-01T00:00:07Z\"}]}}",
               0);
    tick(&f, m);
    ck_assert_int_eq((int)nw_series_get(f.deps.series, &NW_KMETRICS_PODS_STARTUP_DURATION, NULL),
                     0);
    /* ten at a time turn Ready, the others stay Pending (their entries kept across ticks) */
    for (int i = 1; i < N; i++) {
        char n[16];
        snprintf(n, sizeof n, "p%d", i);
        put_started_pod(&f, n, "Running", true);
        if (i % 10 == 0 || i == N - 1) {
            tick(&f, m);
            tick(&f, m); /* nothing changed */
            ck_assert_int_eq(
                (int)nw_series_get(f.deps.series, &NW_KMETRICS_PODS_STARTUP_DURATION, NULL), i);
        }
    }
    nw_statemetrics_free(m);
    nw_series_free(f.deps.series);
    ctlfix_free(&f);
}
END_TEST

/* The whole page (owned). */
static char *page(nw_statemetrics_t *m)
{
    nw_buf_t b;
    nw_buf_init(&b, 1 << 26);
    ck_assert_int_eq(nw_statemetrics_write(m, &b), NW_OK);
    char *p = strdup(nw_buf_str(&b) ? nw_buf_str(&b) : "");
    nw_buf_cleanup(&b);
    return p;
}

/* The page a new nw_statemetrics_t writes after one rebuild from the cache as it is. */
static char *fresh_page(ctlfix_t *f)
{
    nw_statemetrics_t *m = nw_statemetrics_new(&f->deps);
    rebuild(f, m);
    char *p = page(m);
    nw_statemetrics_free(m);
    return p;
}

/* The line of family fam (name{...} value) that contains needles a and b (NULL: any), or
 * NULL; the value is at the returned pointer's last space. */
static const char *line_of(const char *pg, const char *fam, const char *a, const char *b, char *out,
                           size_t len)
{
    size_t fl = strlen(fam);
    for (const char *p = pg; p && *p;) {
        const char *e = strchr(p, '\n');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l < len && !strncmp(p, fam, fl) && p[fl] == '{') {
            memcpy(out, p, l);
            out[l] = '\0';
            if ((!a || strstr(out, a)) && (!b || strstr(out, b)))
                return strrchr(out, ' ') + 1;
        }
        p = e ? e + 1 : p + l;
    }
    return NULL;
}

/* Lines that start with prefix and contain needle. */
static int count_lines(const char *pg, const char *prefix, const char *needle)
{
    int n = 0;
    for (const char *p = pg; p && *p;) {
        const char *e = strchr(p, '\n');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        const char *at = strstr(p, needle);
        n += !strncmp(p, prefix, strlen(prefix)) && at && at < p + l;
        p = e ? e + 1 : p + l;
    }
    return n;
}

static void expect(const char *pg, const char *fam, const char *a, const char *b, const char *v)
{
    char line[4096];
    const char *got = line_of(pg, fam, a, b, line, sizeof line);
    ck_assert_msg(got, "no %s line with %s and %s", fam, a, b ? b : "");
    ck_assert_msg(!strcmp(got, v), "%s: want %s", line, v);
}

START_TEST(node_values_as_karpenter)
{
    ctlfix_t f;
    ctlfix_init(&f);
    nw_statemetrics_t *m = nw_statemetrics_new(&f.deps);
    ctlfix_put(&f, NW_KUBE_NODES,
               "{\"metadata\":{\"name\":\"n1\",\"creationTimestamp\":\"2026-11-30T11:00:00Z\","
               "\"labels\":{\"karpenter.sh/nodepool\":\"default\",\"topology.kubernetes.io/zone\":"
               "\"us-west-2a\"}},\"spec\":{\"providerID\":\"aws:///us-west-2a/i-1\"},\"status\":{"
               "\"allocatable\":{\"cpu\":\"3\",\"memory\":\"1Gi\",\"pods\":\"110\"},"
               "\"capacity\":{\"cpu\":\"4\",\"memory\":\"2Gi\",\"pods\":\"110\"}}}",
               0);
    ctlfix_put(
        &f, NW_KUBE_NODES,
        "{\"metadata\":{\"name\":\"n2\"},\"spec\":{\"providerID\":\"aws:///us-west-2a/i-2\"},"
        "\"status\":{\"allocatable\":{\"cpu\":\"1\",\"example.com/x-y\":\"2\","
        "\"example.com/x_y\":\"3\"}}}",
        0);
    ctlfix_put(
        &f, NW_KUBE_NODECLAIMS,
        "{\"metadata\":{\"name\":\"c1\"},\"status\":{\"providerID\":\"aws:///us-west-2a/i-1\"}}",
        0);
    /* containers 750m (at least the init container's 1) plus 100m overhead; 100Mi */
    ctlfix_put(
        &f, NW_KUBE_PODS,
        "{\"metadata\":{\"name\":\"a\",\"namespace\":\"default\",\"uid\":\"ua\"},\"spec\":{"
        "\"nodeName\":\"n1\",\"overhead\":{\"cpu\":\"100m\"},\"containers\":[{\"name\":\"c1\","
        "\"resources\":{\"requests\":{\"cpu\":\"500m\",\"memory\":\"100Mi\"},\"limits\":{"
        "\"cpu\":\"1\"}}},{\"name\":\"c2\",\"resources\":{\"requests\":{\"cpu\":\"250m\"}}}],"
        "\"initContainers\":[{\"name\":\"i\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]},"
        "\"status\":{\"phase\":\"Running\"}}",
        0);
    ctlfix_put(&f, NW_KUBE_PODS,
               "{\"metadata\":{\"name\":\"d\",\"namespace\":\"kube-system\",\"uid\":\"ud\","
               "\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"DaemonSet\",\"name\":"
               "\"agent\"}]},\"spec\":{\"nodeName\":\"n1\",\"containers\":[{\"name\":\"c\","
               "\"resources\":{\"requests\":{\"cpu\":\"100m\",\"memory\":\"50Mi\"},\"limits\":{"
               "\"memory\":\"100Mi\"}}}]},\"status\":{\"phase\":\"Running\"}}",
               0);
    ctlfix_put(&f, NW_KUBE_PODS,
               "{\"metadata\":{\"name\":\"t\",\"namespace\":\"default\",\"uid\":\"ut\"},\"spec\":{"
               "\"nodeName\":\"n1\",\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{"
               "\"cpu\":\"2\"}}}]},\"status\":{\"phase\":\"Succeeded\"}}",
               0);
    rebuild(&f, m);
    char *pg = page(m);
    const char *n1 = "node_name=\"n1\",phase=\"\",managed=\"true\"";
    expect(pg, "karpenter_nodes_allocatable", n1, "resource_type=\"cpu\"", "3");
    expect(pg, "karpenter_nodes_allocatable", n1, "resource_type=\"memory\"", "1073741824");
    expect(pg, "karpenter_nodes_total_pod_requests", n1, "resource_type=\"cpu\"", "1.2");
    expect(pg, "karpenter_nodes_total_pod_requests", n1, "resource_type=\"memory\"", "157286400");
    expect(pg, "karpenter_nodes_total_pod_limits", n1, "resource_type=\"cpu\"", "1");
    expect(pg, "karpenter_nodes_total_pod_limits", n1, "resource_type=\"memory\"", "104857600");
    expect(pg, "karpenter_nodes_total_daemon_requests", n1, "resource_type=\"cpu\"", "0.1");
    expect(pg, "karpenter_nodes_total_daemon_limits", n1, "resource_type=\"memory\"", "104857600");
    expect(pg, "karpenter_nodes_system_overhead", n1, "resource_type=\"cpu\"", "1");
    expect(pg, "karpenter_nodes_system_overhead", n1, "resource_type=\"pods\"", "0");
    expect(pg, "karpenter_nodes_current_lifetime_seconds", n1, "zone=\"us-west-2a\"", "3600");
    expect(pg, "karpenter_nodes_allocatable", "node_name=\"n2\",phase=\"\",managed=\"false\"",
           "resource_type=\"cpu\"", "1");
    /* two resources of one resource_type: one series, with the last value (as a registry
     * keeps a series set twice) */
    expect(pg, "karpenter_nodes_allocatable", "node_name=\"n2\"", "example.com/x_y", "3");
    ck_assert_int_eq(count_lines(pg, "karpenter_nodes_allocatable{", "example.com/x_y"), 1);
    /* requests 1.2 of 4 cores; 150Mi of 1Gi; no pods requested of 110 */
    expect(pg, "karpenter_cluster_utilization_percent", "\"cpu\"", NULL, "30");
    expect(pg, "karpenter_cluster_utilization_percent", "\"memory\"", NULL, "14.6484375");
    expect(pg, "karpenter_cluster_utilization_percent", "\"pods\"", NULL, "0");
    char line[4096];
    ck_assert_ptr_null(line_of(pg, "karpenter_nodes_total_daemon_requests", "node_name=\"n2\"",
                               NULL, line, sizeof line));
    ck_assert_ptr_null(line_of(pg, "karpenter_nodes_current_lifetime_seconds", "node_name=\"n2\"",
                               NULL, line, sizeof line));
    expect(pg, "karpenter_pods_state", "name=\"d\"",
           "owner=\"/apis/apps/v1/namespaces/kube-system/daemonsets/agent\",node=\"n1\","
           "scheduled=\"true\",nodepool=\"default\",zone=\"us-west-2a\"",
           "1");
    free(pg);
    /* the ages move with the clock, without an update */
    nw_clock_fake_advance(&f.clk, 60 * NW_NS_PER_SEC);
    pg = page(m);
    expect(pg, "karpenter_nodes_current_lifetime_seconds", n1, NULL, "3660");
    free(pg);
    /* the claim goes: n1 is not managed any more; the finished pod's requests stay out */
    ctlfix_del(&f, NW_KUBE_NODECLAIMS, "", "c1");
    ctlfix_del(&f, NW_KUBE_PODS, "default", "a");
    rebuild(&f, m);
    pg = page(m);
    const char *n1u = "node_name=\"n1\",phase=\"\",managed=\"false\"";
    expect(pg, "karpenter_nodes_total_pod_requests", n1u, "resource_type=\"cpu\"", "0.1");
    ck_assert_ptr_null(
        line_of(pg, "karpenter_nodes_allocatable", "managed=\"true\"", NULL, line, sizeof line));
    free(pg);
    nw_statemetrics_free(m);
    ctlfix_free(&f);
}
END_TEST

/* ---- random changes: kept up to date == rebuilt from nothing ---- */

#define RN_NODES 9 /* node-8 never gets a Node: its pods wait for one */
#define RN_PODS 40

static void rnd_node(ctlfix_t *f, unsigned *seed)
{
    static const char *const zones[] = {"us-west-2a", "us-west-2b", "us-west-2c"};
    static const char *const alloc[] = {
        "{\"cpu\":\"3920m\",\"memory\":\"15Gi\",\"pods\":\"58\"}",
        "{\"cpu\":\"7\",\"memory\":\"30Gi\",\"pods\":\"110\",\"nvidia.com/gpu\":\"1\"}",
        "{\"cpu\":\"1\",\"ephemeral-storage\":\"17Gi\",\"example.com/foo-bar\":\"2\","
        "\"example.com/foo_bar\":\"3\"}",
        "{}"};
    static const char *const cap[] = {"{\"cpu\":\"4\",\"memory\":\"16Gi\",\"pods\":\"58\"}",
                                      "{\"cpu\":\"8\",\"hugepages-2Mi\":\"0\"}", "{}"};
    int j = rand_r(seed) % (RN_NODES - 1);
    char b[2048], phase[64] = "", created[96] = "";
    if (rand_r(seed) % 4 == 0)
        snprintf(phase, sizeof phase, ",\"phase\":\"%s\"",
                 rand_r(seed) % 2 ? "Running" : "Pending");
    if (rand_r(seed) % 5)
        snprintf(created, sizeof created, ",\"creationTimestamp\":\"2026-11-30T1%d:00:00Z\"",
                 rand_r(seed) % 2);
    snprintf(b, sizeof b,
             "{\"metadata\":{\"name\":\"node-%d\"%s,\"labels\":{\"karpenter.sh/nodepool\":"
             "\"%s\",\"topology.kubernetes.io/zone\":\"%s\",\"kubernetes.io/arch\":\"amd64\"}},"
             "\"spec\":{\"providerID\":\"aws:///x/i-%d\"},\"status\":{\"allocatable\":%s,"
             "\"capacity\":%s%s}}",
             j, created, rand_r(seed) % 3 ? "default" : "gpu", zones[rand_r(seed) % 3], j,
             alloc[rand_r(seed) % 4], cap[rand_r(seed) % 3], phase);
    ctlfix_put(f, NW_KUBE_NODES, b, 0);
}

static void rnd_pod(ctlfix_t *f, unsigned *seed)
{
    static const char *const phases[] = {"Running", "Pending", "Succeeded", "Failed", "Running"};
    static const char *const specs[] = {
        "\"containers\":[{\"name\":\"a\",\"resources\":{\"requests\":{\"cpu\":\"100m\","
        "\"memory\":\"64Mi\"},\"limits\":{\"cpu\":\"1\"}}}]",
        "\"containers\":[{\"name\":\"a\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}},{\"name\":"
        "\"b\",\"resources\":{\"requests\":{\"ephemeral-storage\":\"1Gi\"}}}],\"initContainers\":"
        "[{\"name\":\"i\",\"resources\":{\"requests\":{\"cpu\":\"2\",\"memory\":\"1Mi\"}}}]",
        "\"overhead\":{\"cpu\":\"250m\"},\"containers\":[{\"name\":\"a\",\"resources\":{"
        "\"limits\":{\"nvidia.com/gpu\":\"1\",\"memory\":\"1Gi\"}}}]",
        "\"containers\":[{\"name\":\"a\",\"resources\":{\"requests\":{\"example.com/foo-bar\":"
        "\"1\",\"example.com/foo_bar\":\"1\"}}}]",
        "\"containers\":[{\"name\":\"a\"}]"};
    int i = rand_r(seed) % RN_PODS, node = rand_r(seed) % (RN_NODES + 1);
    char nn[32] = "";
    if (node < RN_NODES)
        snprintf(nn, sizeof nn, "node-%d", node);
    const char *kind = rand_r(seed) % 3 ? "ReplicaSet" : "DaemonSet";
    char b[2048];
    snprintf(b, sizeof b,
             "{\"metadata\":{\"name\":\"p%d\",\"namespace\":\"ns%d\",\"uid\":\"u%d-%u\","
             "\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"%s\",\"name\":\"o\"}]},"
             "\"spec\":{\"nodeName\":\"%s\",%s},\"status\":{\"phase\":\"%s\",\"conditions\":[{"
             "\"type\":\"Ready\",\"status\":\"%s\",\"lastTransitionTime\":"
             "\"2026-11-30T11:30:00Z\"}]}}",
             i, i % 3, i, rand_r(seed), kind, nn, specs[rand_r(seed) % 5], phases[rand_r(seed) % 5],
             rand_r(seed) % 2 ? "True" : "False");
    ctlfix_put(f, NW_KUBE_PODS, b, 0);
}

static void rnd_change(ctlfix_t *f, unsigned *seed)
{
    char n[32], b[512];
    int op = rand_r(seed) % 10, j = rand_r(seed) % (RN_NODES - 1);
    if (op < 5)
        rnd_pod(f, seed);
    else if (op == 5) {
        snprintf(n, sizeof n, "p%d", rand_r(seed) % RN_PODS);
        char ns[16];
        snprintf(ns, sizeof ns, "ns%d", atoi(n + 1) % 3);
        ctlfix_del(f, NW_KUBE_PODS, ns, n);
    } else if (op == 6)
        rnd_node(f, seed);
    else if (op == 7) {
        snprintf(n, sizeof n, "node-%d", j);
        ctlfix_del(f, NW_KUBE_NODES, "", n);
    } else if (op == 8) { /* a NodeClaim (launched: the state stays in sync) comes or goes */
        snprintf(n, sizeof n, "claim-%d", j);
        if (rand_r(seed) % 2) {
            snprintf(b, sizeof b,
                     "{\"metadata\":{\"name\":\"%s\",\"labels\":{\"karpenter.sh/nodepool\":"
                     "\"default\"}},\"status\":{\"providerID\":\"aws:///x/i-%d\"}}",
                     n, j);
            ctlfix_put(f, NW_KUBE_NODECLAIMS, b, 0);
        } else
            ctlfix_del(f, NW_KUBE_NODECLAIMS, "", n);
    } else {
        snprintf(b, sizeof b,
                 "{\"metadata\":{\"name\":\"pool-%d\"},\"spec\":{\"limits\":{\"cpu\":\"%d\"}},"
                 "\"status\":{\"resources\":{\"cpu\":\"%d\",\"memory\":\"%dGi\"}}}",
                 j % 2, rand_r(seed) % 100, rand_r(seed) % 50, rand_r(seed) % 8);
        if (rand_r(seed) % 4)
            ctlfix_put(f, NW_KUBE_NODEPOOLS, b, 0);
        else {
            snprintf(n, sizeof n, "pool-%d", j % 2);
            ctlfix_del(f, NW_KUBE_NODEPOOLS, "", n);
        }
    }
}

/* The first line where a and b differ, both ways, into out. */
static const char *first_difference(const char *a, const char *b, char *out, size_t len)
{
    size_t i = 0, line = 0;
    while (a[i] && a[i] == b[i])
        if (a[i++] == '\n')
            line = i;
    int la = (int)strcspn(a + line, "\n"), lb = (int)strcspn(b + line, "\n");
    snprintf(out, len, "kept:    %.*s\nrebuilt: %.*s", la < 400 ? la : 400, a + line,
             lb < 400 ? lb : 400, b + line);
    return out;
}

START_TEST(kept_up_to_date_is_rebuilt)
{
    ctlfix_t f;
    ctlfix_init(&f);
    nw_cloud_t *cloud = f.deps.cloud;
    f.deps.cloud = NULL; /* the offerings have their own test; here they would only be long */
    nw_statemetrics_t *m = nw_statemetrics_new(&f.deps);
    unsigned seed = 27u + (unsigned)_i;
    int differed = 0;
    char *last = NULL;
    for (int step = 0; step < 300; step++) {
        for (int k = rand_r(&seed) % 4; k >= 0; k--)
            rnd_change(&f, &seed);
        nw_clock_fake_advance(&f.clk, (rand_r(&seed) % 3) * NW_NS_PER_SEC);
        nw_kube_snap_t *s = nw_kube_cache_snapshot(f.deps.cache);
        nw_statemetrics_tick(m, s);
        if (step % 7 == 0)
            nw_statemetrics_tick(m, s); /* nothing changed since */
        nw_kube_cache_snap_release(s);
        char *kept = page(m), *want = fresh_page(&f);
        char why[1024];
        ck_assert_msg(!strcmp(kept, want), "step %d:\n%s", step,
                      first_difference(kept, want, why, sizeof why));
        differed += last && strcmp(last, kept) != 0;
        free(last);
        free(want);
        last = kept;
    }
    free(last);
    ck_assert_int_gt(differed, 200); /* the changes did reach the page */
    nw_statemetrics_free(m);
    f.deps.cloud = cloud;
    ctlfix_free(&f);
}
END_TEST

START_TEST(offering_marked_unavailable)
{
    ctlfix_t f;
    ctlfix_init(&f);
    nw_statemetrics_t *m = nw_statemetrics_new(&f.deps);
    const char *sel = "instance_type=\"m5.large\",capacity_type=\"spot\",zone=\"us-west-2b\"";
    const char *fam = "karpenter_cloudprovider_instance_type_offering_available";
    nw_kube_snap_t *s = nw_kube_cache_snapshot(f.deps.cache);
    nw_statemetrics_tick(m, s);
    char *pg = page(m);
    expect(pg, fam, sel, NULL, "1");
    free(pg);
    nw_ice_mark(f.cloud->ice, "spot", "m5.large", "us-west-2b", nw_clock_mono(f.deps.clock));
    nw_clock_fake_advance(&f.clk, NW_NS_PER_SEC);
    nw_statemetrics_tick(m, s); /* looked at every 5 s */
    pg = page(m);
    expect(pg, fam, sel, NULL, "1");
    free(pg);
    nw_clock_fake_advance(&f.clk, 4 * NW_NS_PER_SEC);
    nw_statemetrics_tick(m, s);
    pg = page(m);
    expect(pg, fam, sel, NULL, "0");
    expect(pg, fam, "instance_type=\"m5.large\",capacity_type=\"spot\",zone=\"us-west-2a\"", NULL,
           "1");
    free(pg);
    /* the mark expires (3 minutes): available again */
    nw_clock_fake_advance(&f.clk, 200 * NW_NS_PER_SEC);
    nw_statemetrics_tick(m, s);
    pg = page(m);
    expect(pg, fam, sel, NULL, "1");
    free(pg);
    nw_kube_cache_snap_release(s);
    nw_statemetrics_free(m);
    ctlfix_free(&f);
}
END_TEST

START_TEST(cluster_state_out_of_sync)
{
    ctlfix_t f;
    ctlfix_init(&f);
    nw_statemetrics_t *m = nw_statemetrics_new(&f.deps);
    /* a NodeClaim not launched yet: out of sync, for as long as it lasts */
    ctlfix_put(&f, NW_KUBE_NODECLAIMS, "{\"metadata\":{\"name\":\"c1\"}}", 0);
    ctlfix_put(&f, NW_KUBE_NODES, "{\"metadata\":{\"name\":\"n1\"}}", 0);
    nw_kube_snap_t *s = nw_kube_cache_snapshot(f.deps.cache);
    nw_statemetrics_tick(m, s);
    char *pg = page(m);
    ck_assert_msg(strstr(pg, "\nkarpenter_cluster_state_node_count 2\n") &&
                      strstr(pg, "\nkarpenter_cluster_state_synced 0\n") &&
                      strstr(pg, "\nkarpenter_cluster_state_unsynced_time_seconds 0\n"),
                  "%s", strstr(pg, "# HELP karpenter_cluster_state_node_count"));
    free(pg);
    for (int i = 0; i < 10; i++) { /* nothing changes in the cache; the time does */
        nw_clock_fake_advance(&f.clk, NW_NS_PER_SEC);
        nw_statemetrics_tick(m, s);
    }
    nw_kube_cache_snap_release(s);
    pg = page(m);
    ck_assert_msg(strstr(pg, "\nkarpenter_cluster_state_unsynced_time_seconds 10\n"), "%s",
                  strstr(pg, "# HELP karpenter_cluster_state_node_count"));
    free(pg);
    /* launched: in sync, and the node is the claim's */
    ctlfix_put(&f, NW_KUBE_NODECLAIMS,
               "{\"metadata\":{\"name\":\"c1\"},\"status\":{\"providerID\":\"aws:///x/i-1\"}}", 0);
    ctlfix_put(&f, NW_KUBE_NODES,
               "{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"providerID\":\"aws:///x/i-1\"}}", 0);
    nw_clock_fake_advance(&f.clk, NW_NS_PER_SEC);
    s = nw_kube_cache_snapshot(f.deps.cache);
    nw_statemetrics_tick(m, s);
    nw_kube_cache_snap_release(s);
    pg = page(m);
    ck_assert_msg(strstr(pg, "\nkarpenter_cluster_state_node_count 1\n") &&
                      strstr(pg, "\nkarpenter_cluster_state_synced 1\n") &&
                      strstr(pg, "\nkarpenter_cluster_state_unsynced_time_seconds 0\n"),
                  "%s", strstr(pg, "# HELP karpenter_cluster_state_node_count"));
    free(pg);
    nw_statemetrics_free(m);
    ctlfix_free(&f);
}
END_TEST

typedef struct {
    nw_statemetrics_t *m;
    _Atomic int stop;
    int pages;
} scraper_t;

static void *scrape_main(void *arg)
{
    scraper_t *sc = arg;
    while (!atomic_load(&sc->stop)) {
        nw_buf_t b;
        nw_buf_init(&b, 1 << 26);
        ck_assert_int_eq(nw_statemetrics_write(sc->m, &b), NW_OK);
        /* every family once: a whole page */
        int helps = 0;
        for (const char *p = nw_buf_str(&b); p && (p = strstr(p, "# HELP ")); p++)
            helps++;
        ck_assert_int_eq(helps, 16);
        nw_buf_cleanup(&b);
        sc->pages++;
    }
    return NULL;
}

START_TEST(scrape_while_changing)
{
    ctlfix_t f;
    ctlfix_init(&f);
    nw_cloud_t *cloud = f.deps.cloud;
    f.deps.cloud = NULL;
    nw_statemetrics_t *m = nw_statemetrics_new(&f.deps);
    scraper_t sc = {.m = m};
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, scrape_main, &sc), 0);
    unsigned seed = 5;
    for (int step = 0; step < 400; step++) {
        rnd_change(&f, &seed);
        nw_kube_snap_t *s = nw_kube_cache_snapshot(f.deps.cache);
        nw_statemetrics_tick(m, s);
        nw_kube_cache_snap_release(s);
    }
    atomic_store(&sc.stop, 1);
    pthread_join(t, NULL);
    ck_assert_int_gt(sc.pages, 0);
    nw_statemetrics_free(m);
    f.deps.cloud = cloud;
    ctlfix_free(&f);
}
END_TEST

Suite *nw_statemetrics_suite(void)
{
    Suite *s = suite_create("statemetrics");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, pods_state_follows_changes);
    tcase_add_test(tc, startup_observed_across_quiet_ticks);
    tcase_add_test(tc, startups_of_many_pending_pods);
    tcase_add_test(tc, node_values_as_karpenter);
    tcase_add_loop_test(tc, kept_up_to_date_is_rebuilt, 0, 3);
    tcase_add_test(tc, offering_marked_unavailable);
    tcase_add_test(tc, cluster_state_out_of_sync);
    tcase_add_test(tc, scrape_while_changing);
    suite_add_tcase(s, tc);
    return s;
}
