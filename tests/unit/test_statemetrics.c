/*
 * Unit tests for scaler/controllers/statemetrics: karpenter_pods_state follows the cluster
 * from one rebuild to the next, changing only what changed (a pod's new phase replaces its
 * series, a deleted pod's series goes, a node's new labels reach its pods' series), and the
 * families are written once each in their order.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "scaler/controllers/statemetrics.h"
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

Suite *nw_statemetrics_suite(void)
{
    Suite *s = suite_create("statemetrics");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, pods_state_follows_changes);
    suite_add_tcase(s, tc);
    return s;
}
