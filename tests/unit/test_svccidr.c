/* Unit tests for the service CIDR discovery (scaler/kube/svccidr.h): the ServiceCIDR list and
 * the kubeadm-config ConfigMap read, and the lookup's order and refusals against a scripted
 * API server (tests/unit/fakeapi.h). */
#include <check.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scaler/kube/config.h"
#include "scaler/kube/svccidr.h"
#include "tests/unit/fakeapi.h"

Suite *nw_svccidr_suite(void);

START_TEST(cidr_syntax)
{
    const char *ok[] = {"10.96.0.0/12", "172.20.0.0/16", "fd00:10:96::/112", "0.0.0.0/0",
                        "2001:db8::/64"};
    const char *bad[] = {"",           "10.96.0.0",   "10.96.0.0/33", "fd00::/129",    "/12",
                         "10.96.0/12", "10.96.0.0/x", "10.96.0.0/-1", "10.96.0.0/12 ", "hello/12"};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++)
        ck_assert_msg(nw_svccidr_valid(ok[i]), "%s refused", ok[i]);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        ck_assert_msg(!nw_svccidr_valid(bad[i]), "%s accepted", bad[i]);
    ck_assert(!nw_svccidr_valid(NULL));
}
END_TEST

static bool from_list(const char *json, char *out, char *src)
{
    cJSON *l = cJSON_Parse(json);
    ck_assert_ptr_nonnull(l);
    bool ok = nw_svccidr_from_list(l, out, 64, src, 128);
    cJSON_Delete(l);
    return ok;
}

START_TEST(list_prefers_kubernetes)
{
    char c[64], src[128];
    /* "kubernetes" wins over a name that sorts first; its first (primary) family */
    ck_assert(from_list("{\"items\":[{\"metadata\":{\"name\":\"extra\"},\"spec\":{\"cidrs\":"
                        "[\"10.200.0.0/16\"]}},{\"metadata\":{\"name\":\"kubernetes\"},\"spec\":"
                        "{\"cidrs\":[\"fd00:10:96::/112\",\"10.96.0.0/12\"]}}]}",
                        c, src));
    ck_assert_str_eq(c, "fd00:10:96::/112");
    ck_assert_str_eq(src, "ServiceCIDR kubernetes");
    /* without it, the first by name; an item without a CIDR is passed over */
    ck_assert(from_list("{\"items\":[{\"metadata\":{\"name\":\"zz\"},\"spec\":{\"cidrs\":"
                        "[\"10.2.0.0/16\"]}},{\"metadata\":{\"name\":\"aa\"},\"spec\":{}},"
                        "{\"metadata\":{\"name\":\"mm\"},\"spec\":{\"cidrs\":[\"10.1.0.0/16\"]}}]}",
                        c, src));
    ck_assert_str_eq(c, "10.1.0.0/16");
    ck_assert_str_eq(src, "ServiceCIDR mm");
    /* none: nothing, and an invalid value counts as none */
    ck_assert(!from_list("{\"items\":[]}", c, src));
    ck_assert_str_eq(c, "");
    ck_assert(!from_list("{\"items\":[{\"metadata\":{\"name\":\"kubernetes\"},\"spec\":{\"cidrs\":"
                         "[\"not-a-cidr\"]}}]}",
                         c, src));
    ck_assert(!from_list("{}", c, src));
}
END_TEST

static bool from_cm(const char *cc_yaml, char *out, char *why)
{
    cJSON *cm = cJSON_CreateObject();
    cJSON *data = cJSON_AddObjectToObject(cm, "data");
    if (cc_yaml)
        cJSON_AddStringToObject(data, "ClusterConfiguration", cc_yaml);
    bool ok = nw_svccidr_from_kubeadm(cm, out, 64, why, 256);
    cJSON_Delete(cm);
    return ok;
}

START_TEST(kubeadm_service_subnet)
{
    char c[64], why[256];
    ck_assert(from_cm("apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\n"
                      "networking:\n  dnsDomain: cluster.local\n  podSubnet: 10.244.0.0/16\n"
                      "  serviceSubnet: 10.96.0.0/12\n",
                      c, why));
    ck_assert_str_eq(c, "10.96.0.0/12");
    /* dual stack: the first */
    ck_assert(from_cm("networking:\n  serviceSubnet: 10.96.0.0/16,fd00:10:96::/112\n", c, why));
    ck_assert_str_eq(c, "10.96.0.0/16");
    ck_assert(!from_cm("networking:\n  podSubnet: 10.244.0.0/16\n", c, why));
    ck_assert_msg(strstr(why, "no networking.serviceSubnet"), "%s", why);
    ck_assert(!from_cm("networking:\n  serviceSubnet: nonsense\n", c, why));
    ck_assert_msg(strstr(why, "nonsense is not a CIDR"), "%s", why);
    ck_assert(!from_cm(NULL, c, why));
    ck_assert_msg(strstr(why, "no data.ClusterConfiguration"), "%s", why);
    ck_assert(!from_cm("networking: [unclosed\n", c, why));
    ck_assert_msg(strstr(why, "not YAML"), "%s", why);
}
END_TEST

/* The scripted API server: what it answers for the two paths, and what it was asked. */
typedef struct {
    int list_code, cm_code;
    const char *list_body, *cm_body;
    int asked_list, asked_cm;
} api_t;

static void handler(void *ud, const fake_req_t *r, fake_conn_t *c)
{
    api_t *a = ud;
    if (strcmp(r->path, "/apis/networking.k8s.io/v1/servicecidrs") == 0) {
        a->asked_list++;
        fake_reply(c, a->list_code, "", a->list_body ? a->list_body : "{}");
    } else if (strcmp(r->path, "/api/v1/namespaces/kube-system/configmaps/kubeadm-config") == 0) {
        a->asked_cm++;
        fake_reply(c, a->cm_code, "", a->cm_body ? a->cm_body : "{}");
    } else
        fake_reply(c, 404, "", "{\"kind\":\"Status\",\"code\":404}");
}

static nw_rc_t discover(api_t *a, char *cidr, char *src, nw_err_t *err)
{
    nw_err_clear(err);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    fake_srv_t *srv = fake_srv_start(handler, a);
    char *kc = fake_kubeconfig(fake_srv_port(srv), "t");
    nw_kube_config_t *cfg = NULL;
    ck_assert_int_eq(nw_kube_config_load_kubeconfig(kc, NULL, &cfg, err), NW_OK);
    unlink(kc);
    free(kc);
    nw_kube_client_opts_t o = {.qps = -1, .max_retries = 1, .timeout_ms = 5000};
    nw_kube_client_t *k = NULL;
    ck_assert_int_eq(nw_kube_client_new(cfg, &o, &k, err), NW_OK);
    nw_rc_t rc = nw_svccidr_discover(k, cidr, 64, src, 128, err);
    nw_kube_client_free(k);
    fake_srv_stop(srv);
    return rc;
}

#define KUBEADM_CM                                                                                 \
    "{\"data\":{\"ClusterConfiguration\":\"networking:\\n  serviceSubnet: 10.96.0.0/12\\n\"}}"
#define NOT_FOUND "{\"kind\":\"Status\",\"code\":404,\"reason\":\"NotFound\"}"
#define FORBIDDEN "{\"kind\":\"Status\",\"code\":403,\"reason\":\"Forbidden\"}"

START_TEST(discover_order)
{
    char c[64], src[128];
    nw_err_t err = {0};
    /* ServiceCIDR objects first: kubeadm-config is not asked */
    api_t a = {200,
               200,
               "{\"items\":[{\"metadata\":{\"name\":\"kubernetes\"},\"spec\":{\"cidrs\":"
               "[\"10.43.0.0/16\"]}}]}",
               KUBEADM_CM,
               0,
               0};
    ck_assert_int_eq(discover(&a, c, src, &err), NW_OK);
    ck_assert_str_eq(c, "10.43.0.0/16");
    ck_assert_str_eq(src, "ServiceCIDR kubernetes");
    ck_assert_int_eq(a.asked_list, 1);
    ck_assert_int_eq(a.asked_cm, 0);
    /* an API server before 1.33 (404): kubeadm-config */
    api_t b = {404, 200, NOT_FOUND, KUBEADM_CM, 0, 0};
    ck_assert_int_eq(discover(&b, c, src, &err), NW_OK);
    ck_assert_str_eq(c, "10.96.0.0/12");
    ck_assert_str_eq(src, "kube-system/kubeadm-config");
    /* served but empty: kubeadm-config too */
    api_t d = {200, 200, "{\"items\":[]}", KUBEADM_CM, 0, 0};
    ck_assert_int_eq(discover(&d, c, src, &err), NW_OK);
    ck_assert_str_eq(src, "kube-system/kubeadm-config");
    ck_assert_int_eq(d.asked_cm, 1);
}
END_TEST

START_TEST(discover_none_says_why)
{
    char c[64] = "x", src[128];
    nw_err_t err = {0};
    api_t a = {403, 404, FORBIDDEN, NOT_FOUND, 0, 0};
    ck_assert_int_eq(discover(&a, c, src, &err), NW_ENOTFOUND);
    ck_assert_str_eq(c, "");
    ck_assert_msg(strstr(err.msg, "ServiceCIDR objects (networking.k8s.io/v1): forbidden (403)"),
                  "%s", err.msg);
    ck_assert_msg(strstr(err.msg, "kube-system/kubeadm-config: not found (404)"), "%s", err.msg);
    api_t b = {200, 200, "{\"items\":[]}", "{\"data\":{}}", 0, 0};
    ck_assert_int_eq(discover(&b, c, src, &err), NW_ENOTFOUND);
    ck_assert_msg(strstr(err.msg, "none with a CIDR"), "%s", err.msg);
    ck_assert_msg(strstr(err.msg, "no data.ClusterConfiguration"), "%s", err.msg);
}
END_TEST

Suite *nw_svccidr_suite(void)
{
    Suite *s = suite_create("svccidr");
    TCase *tc = tcase_create("svccidr");
    tcase_add_test(tc, cidr_syntax);
    tcase_add_test(tc, list_prefers_kubernetes);
    tcase_add_test(tc, kubeadm_service_subnet);
    tcase_add_test(tc, discover_order);
    tcase_add_test(tc, discover_none_says_why);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}
