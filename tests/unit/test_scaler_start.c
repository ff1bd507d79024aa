/* Unit tests for nw_scaler_loop_start's failure paths (scaler/loop.c): a start that fails
 * returns an error naming the field and frees what it made exactly once. The
 * regression: with tls-server-name set and a server URL that does not parse,
 * nw_kube_client_new fails and frees the kubeconfig it was given (it takes it, also
 * on failure, scaler/kube/client.h); nw_scaler_loop_start used to free it a second time.
 * Under ASan (make unit-asan) a double free aborts the test. */
#include <check.h>
#include <string.h>

#include "scaler/kube/client.h"
#include "scaler/kube/config.h"
#include "scaler/loop.h"

Suite *nw_scaler_start_suite(void);

#define SNI_BAD "tests/data/kubeconfig/sni-bad-server.yaml"

START_TEST(start_bad_server_with_sni)
{
    nw_scaler_opts_t o = {0};
    o.kubeconfig = SNI_BAD;
    o.cluster_name = "unit";
    nw_scaler_t *s = (nw_scaler_t *)1;
    nw_err_t err = {0};
    ck_assert_int_eq(nw_scaler_loop_start(&o, &s, &err), NW_EINVAL);
    ck_assert_ptr_null(s);
    ck_assert_str_eq(err.path, "clusters[].cluster.server");
    ck_assert_msg(strstr(err.msg, "clusters[].cluster.server") &&
                      strstr(err.msg, "https://api .example.com:6443"),
                  "message: %s", err.msg);
}
END_TEST

START_TEST(client_new_takes_config_on_failure)
{
    /* the same failure one level down: the client frees cfg (ASan would report a leak
     * otherwise) and the caller must not */
    nw_kube_config_t *cfg = NULL;
    nw_err_t err = {0};
    ck_assert_int_eq(nw_kube_config_load(SNI_BAD, NULL, &cfg, &err), NW_OK);
    ck_assert_str_eq(cfg->tls_server_name, "kubernetes.default.svc");
    nw_kube_client_t *c = (nw_kube_client_t *)1;
    ck_assert_int_eq(nw_kube_client_new(cfg, NULL, &c, &err), NW_EINVAL);
    ck_assert_ptr_null(c);
    ck_assert_str_eq(err.path, "clusters[].cluster.server");
}
END_TEST

START_TEST(start_needs_cluster_name)
{
    nw_scaler_opts_t o = {0};
    o.kubeconfig = SNI_BAD;
    nw_scaler_t *s = NULL;
    nw_err_t err = {0};
    ck_assert_int_eq(nw_scaler_loop_start(&o, &s, &err), NW_EINVAL);
    ck_assert_ptr_null(s);
    ck_assert_str_eq(err.path, "settings.clusterName");
}
END_TEST

START_TEST(start_missing_kubeconfig)
{
    nw_scaler_opts_t o = {0};
    o.kubeconfig = "tests/data/kubeconfig/does-not-exist.yaml";
    o.cluster_name = "unit";
    nw_scaler_t *s = NULL;
    nw_err_t err = {0};
    ck_assert_int_ne(nw_scaler_loop_start(&o, &s, &err), NW_OK);
    ck_assert_ptr_null(s);
    ck_assert_msg(strstr(err.msg, "does-not-exist.yaml"), "message: %s", err.msg);
}
END_TEST

Suite *nw_scaler_start_suite(void)
{
    Suite *s = suite_create("scaler_start");
    TCase *tc = tcase_create("failures");
    tcase_add_test(tc, start_bad_server_with_sni);
    tcase_add_test(tc, client_new_takes_config_on_failure);
    tcase_add_test(tc, start_needs_cluster_name);
    tcase_add_test(tc, start_missing_kubeconfig);
    suite_add_tcase(s, tc);
    return s;
}
