/* tests/unit/test_launch.c — the CreateLaunchTemplate request builder (scaler/aws/launch.h
 * nw_launchtemplate_params) against aws/karpenter-provider-aws
 * pkg/providers/launchtemplate/launchtemplate.go: network interfaces (the primary one, the
 * spec's incl. efa-only, one EFA interface per card), associatePublicIPAddress,
 * ipPrefixCount, connectionTracking, cpuOptions, block devices, and the errors naming a
 * field; the service CIDR of AL2023's NodeConfig (the setting, else the cluster's, asked again
 * on a period). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaler/aws/launch.h"

Suite *nw_launch_suite(void);

/* the value of key in a Query body ("" for none; static) */
static const char *param(const nw_ec2_params_t *p, const char *key)
{
    static char v[512];
    char k[256];
    snprintf(k, sizeof k, "&%s=", key);
    const char *s = strstr(p->body.data, k);
    if (!s)
        return NULL;
    s += strlen(k);
    size_t n = strcspn(s, "&");
    if (n >= sizeof v)
        n = sizeof v - 1;
    memcpy(v, s, n);
    v[n] = 0;
    return v;
}

#define HAS(p, k, v)                                                                               \
    do {                                                                                           \
        const char *got_ = param(p, k);                                                            \
        ck_assert_msg(got_ &&strcmp(got_, v) == 0, "%s = %s, want %s", k, got_ ? got_ : "(none)",  \
                      v);                                                                          \
    } while (0)
#define NONE(p, k) ck_assert_msg(param(p, k) == NULL, "%s is set: %s", k, param(p, k))

static nw_nc_sg_t SGS[] = {{"sg-a", "a"}, {"sg-b", "b"}};

/* the request of spec_json's template (AL2023 unless the spec says), into p */
static const char *g_pg_id, *g_pg_strategy, *g_claim; /* build's placement group and claim */

/* the kube-dns ClusterIP build's launcher discovers (NULL: no lookup) */
static const char *g_dns;
static int g_dns_calls;

static nw_rc_t dns(void *ud, char *out, size_t len, nw_err_t *err)
{
    (void)ud;
    g_dns_calls++;
    if (!*g_dns)
        return nw_err_set(err, NW_EPARSE, "kube-system/kube-dns", "no cluster IP");
    snprintf(out, len, "%s", g_dns);
    return NW_OK;
}

static nw_rc_t build(const char *spec_json, int efa, nw_ec2_params_t *p, nw_err_t *err)
{
    static nw_catalog_t *cat;
    if (!cat)
        ck_assert_int_eq(nw_catalog_new_embedded("us-west-2", &cat, NULL), NW_OK);
    char buf[2048];
    snprintf(buf, sizeof buf,
             "{\"metadata\":{\"name\":\"nc\"},\"spec\":{\"role\":\"r\",\"userData\":\"#!/bin/"
             "sh\\n\",%s}}",
             spec_json);
    cJSON *nc = cJSON_Parse(buf);
    ck_assert_ptr_nonnull(nc);
    nw_nodeclass_resolved_t rs;
    memset(&rs, 0, sizeof rs);
    snprintf(rs.name, sizeof rs.name, "nc");
    rs.sgs = SGS;
    rs.nsgs = 2;
    rs.ready = 1;
    snprintf(rs.pg_id, sizeof rs.pg_id, "%s", g_pg_id ? g_pg_id : "");
    snprintf(rs.pg_strategy, sizeof rs.pg_strategy, "%s", g_pg_strategy ? g_pg_strategy : "");
    cJSON *claim = g_claim ? cJSON_Parse(g_claim) : NULL;
    nw_launch_t *l = nw_launch_new(NULL, cat, NULL, NULL, "demo");
    ck_assert_ptr_nonnull(l);
    nw_launch_bootstrap_t b = {.endpoint = "https://10.0.0.10:6443",
                               .ca_bundle = "Q0E=",
                               .cluster_cidr = "10.96.0.0/12",
                               .kube_dns = g_dns ? dns : NULL};
    ck_assert_int_eq(nw_launch_set_bootstrap(l, &b), NW_OK);
    nw_launch_req_t r = {
        .nodepool = "default", .nodeclaim = "c1", .nodeclass = nc, .resolved = &rs, .claim = claim};
    ck_assert_int_eq(nw_ec2_params_init(p, "CreateLaunchTemplate"), NW_OK);
    nw_rc_t rc = nw_launchtemplate_params(l, &r, "ami-1", "on-demand", 29, efa, p, err);
    nw_launch_free(l);
    cJSON_Delete(nc);
    cJSON_Delete(claim);
    return rc;
}

#define NI "LaunchTemplateData.NetworkInterface."

START_TEST(primary_interface)
{
    nw_ec2_params_t p;
    nw_err_t err = {0};
    ck_assert_int_eq(build("\"amiFamily\":\"AL2023\"", 0, &p, &err), NW_OK);
    /* the security groups go on the interface, not on the template */
    HAS(&p, NI "1.DeviceIndex", "0");
    HAS(&p, NI "1.SecurityGroupId.1", "sg-a");
    HAS(&p, NI "1.SecurityGroupId.2", "sg-b");
    NONE(&p, "LaunchTemplateData.SecurityGroupId.1");
    NONE(&p, NI "1.NetworkCardIndex");
    NONE(&p, NI "1.InterfaceType");
    NONE(&p, NI "1.AssociatePublicIpAddress");
    NONE(&p, NI "1.Ipv4PrefixCount");
    NONE(&p, NI "2.DeviceIndex");
    NONE(&p, "LaunchTemplateData.CpuOptions.NestedVirtualization");
    HAS(&p, "LaunchTemplateData.BlockDeviceMapping.1.DeviceName", "%2Fdev%2Fxvda");
    HAS(&p, "LaunchTemplateData.BlockDeviceMapping.1.Ebs.VolumeSize", "20");
    nw_ec2_params_cleanup(&p);
    /* the spec's public IP, prefixes and connection tracking */
    ck_assert_int_eq(build("\"associatePublicIPAddress\":false,\"ipPrefixCount\":2,"
                           "\"connectionTracking\":{\"tcpEstablishedTimeout\":3600,"
                           "\"udpTimeout\":30},\"cpuOptions\":{\"nestedVirtualization\":"
                           "\"enabled\"},\"detailedMonitoring\":true",
                           0, &p, &err),
                     NW_OK);
    HAS(&p, NI "1.AssociatePublicIpAddress", "false");
    HAS(&p, NI "1.Ipv4PrefixCount", "2");
    HAS(&p, NI "1.ConnectionTrackingSpecification.TcpEstablishedTimeout", "3600");
    HAS(&p, NI "1.ConnectionTrackingSpecification.UdpTimeout", "30");
    NONE(&p, NI "1.ConnectionTrackingSpecification.UdpStreamTimeout");
    HAS(&p, "LaunchTemplateData.CpuOptions.NestedVirtualization", "enabled");
    HAS(&p, "LaunchTemplateData.Monitoring.Enabled", "true");
    /* Custom: no block devices of ours */
    NONE(&p, "LaunchTemplateData.BlockDeviceMapping.1.DeviceName");
    nw_ec2_params_cleanup(&p);
}
END_TEST

/* an IPv6 cluster (the kube-dns ClusterIP is IPv6): PrimaryIpv6, one IPv6 address and
 * ipPrefixCount as IPv6 prefixes on every interface but efa-only ones
 * (launchtemplate.go generateNetworkInterfaces with ClusterIPFamily IPv6) */
START_TEST(ipv6_cluster)
{
    nw_ec2_params_t p;
    nw_err_t err = {0};
    g_dns = "fd00:10:96::a";
    ck_assert_int_eq(build("\"amiFamily\":\"AL2023\",\"ipPrefixCount\":2", 0, &p, &err), NW_OK);
    HAS(&p, NI "1.DeviceIndex", "0");
    HAS(&p, NI "1.PrimaryIpv6", "true");
    HAS(&p, NI "1.Ipv6AddressCount", "1");
    HAS(&p, NI "1.Ipv6PrefixCount", "2");
    NONE(&p, NI "1.Ipv4PrefixCount");
    HAS(&p, NI "1.SecurityGroupId.1", "sg-a");
    nw_ec2_params_cleanup(&p);
    /* EFA: each card's interface */
    ck_assert_int_eq(build("\"amiFamily\":\"AL2023\"", 2, &p, &err), NW_OK);
    HAS(&p, NI "1.PrimaryIpv6", "true");
    HAS(&p, NI "2.PrimaryIpv6", "true");
    HAS(&p, NI "2.Ipv6AddressCount", "1");
    HAS(&p, NI "2.InterfaceType", "efa");
    nw_ec2_params_cleanup(&p);
    /* the spec's list: an efa-only interface has no address */
    ck_assert_int_eq(build("\"networkInterfaces\":[{\"networkCardIndex\":0,\"deviceIndex\":0,"
                           "\"interfaceType\":\"interface\"},{\"networkCardIndex\":1,"
                           "\"deviceIndex\":0,\"interfaceType\":\"efa-only\"}]",
                           0, &p, &err),
                     NW_OK);
    HAS(&p, NI "1.PrimaryIpv6", "true");
    NONE(&p, NI "2.PrimaryIpv6");
    NONE(&p, NI "2.Ipv6AddressCount");
    nw_ec2_params_cleanup(&p);
    /* an IPv4 kube-dns, or none found: IPv4's fields */
    const char *v4[] = {"10.96.0.10", ""};
    for (int i = 0; i < 2; i++) {
        g_dns = v4[i];
        g_dns_calls = 0;
        ck_assert_int_eq(build("\"amiFamily\":\"AL2023\",\"ipPrefixCount\":2", 0, &p, &err), NW_OK);
        ck_assert_int_ge(g_dns_calls, 1);
        NONE(&p, NI "1.PrimaryIpv6");
        NONE(&p, NI "1.Ipv6AddressCount");
        NONE(&p, NI "1.Ipv6PrefixCount");
        HAS(&p, NI "1.Ipv4PrefixCount", "2");
        nw_ec2_params_cleanup(&p);
    }
    g_dns = NULL;
}
END_TEST

START_TEST(spec_interfaces_and_efa)
{
    nw_ec2_params_t p;
    nw_err_t err = {0};
    /* the spec's list: an efa-only interface gets the groups, nothing else */
    ck_assert_int_eq(build("\"associatePublicIPAddress\":true,\"ipPrefixCount\":1,"
                           "\"connectionTracking\":{\"udpStreamTimeout\":120},"
                           "\"networkInterfaces\":[{\"networkCardIndex\":0,\"deviceIndex\":0,"
                           "\"interfaceType\":\"interface\"},{\"networkCardIndex\":1,"
                           "\"deviceIndex\":0,\"interfaceType\":\"efa-only\"}]",
                           4, &p, &err),
                     NW_OK);
    HAS(&p, NI "1.NetworkCardIndex", "0");
    HAS(&p, NI "1.DeviceIndex", "0");
    HAS(&p, NI "1.InterfaceType", "interface");
    HAS(&p, NI "1.AssociatePublicIpAddress", "true");
    HAS(&p, NI "1.Ipv4PrefixCount", "1");
    HAS(&p, NI "1.ConnectionTrackingSpecification.UdpStreamTimeout", "120");
    HAS(&p, NI "2.NetworkCardIndex", "1");
    HAS(&p, NI "2.DeviceIndex", "0");
    HAS(&p, NI "2.InterfaceType", "efa-only");
    HAS(&p, NI "2.SecurityGroupId.1", "sg-a");
    NONE(&p, NI "2.AssociatePublicIpAddress");
    NONE(&p, NI "2.Ipv4PrefixCount");
    NONE(&p, NI "2.ConnectionTrackingSpecification.UdpStreamTimeout");
    NONE(&p, NI "3.DeviceIndex"); /* the list wins over the EFA count */
    nw_ec2_params_cleanup(&p);
    /* no list, the claim asks for EFA: one efa interface per card, device 0 on the first */
    ck_assert_int_eq(build("\"ipPrefixCount\":3", 3, &p, &err), NW_OK);
    const char *want[3][2] = {{"0", "0"}, {"1", "1"}, {"2", "1"}};
    for (int i = 0; i < 3; i++) {
        char k[96];
        snprintf(k, sizeof k, NI "%d.NetworkCardIndex", i + 1);
        HAS(&p, k, want[i][0]);
        snprintf(k, sizeof k, NI "%d.DeviceIndex", i + 1);
        HAS(&p, k, want[i][1]);
        snprintf(k, sizeof k, NI "%d.InterfaceType", i + 1);
        HAS(&p, k, "efa");
        snprintf(k, sizeof k, NI "%d.Ipv4PrefixCount", i + 1);
        HAS(&p, k, "3");
    }
    NONE(&p, NI "4.DeviceIndex");
    char name3[256];
    snprintf(name3, sizeof name3, "%s", param(&p, "LaunchTemplateName"));
    nw_ec2_params_cleanup(&p);
    /* a template per EFA count */
    ck_assert_int_eq(build("\"ipPrefixCount\":3", 0, &p, &err), NW_OK);
    ck_assert_str_ne(param(&p, "LaunchTemplateName"), name3);
    nw_ec2_params_cleanup(&p);
}
END_TEST

START_TEST(bad_volume_size)
{
    nw_ec2_params_t p;
    nw_err_t err = {0};
    ck_assert_int_eq(build("\"blockDeviceMappings\":[{\"deviceName\":\"/dev/xvda\",\"ebs\":{"
                           "\"volumeSize\":\"lots\"}}]",
                           0, &p, &err),
                     NW_EINVAL);
    ck_assert_str_eq(err.path, "spec.blockDeviceMappings.ebs.volumeSize");
    nw_ec2_params_cleanup(&p);
}
END_TEST

/* placement groups (launchtemplate.go EnsureAll): the group's id; a partition group gets
 * the lowest partition (as strings) of the claim's requirement, else none (EC2 picks) */
START_TEST(placement_partition)
{
    nw_ec2_params_t p;
    nw_err_t err = {0};
    char name_none[256];
    g_pg_id = "pg-1";
    g_pg_strategy = "partition";
    ck_assert_int_eq(build("\"amiFamily\":\"AL2023\"", 0, &p, &err), NW_OK);
    HAS(&p, "LaunchTemplateData.Placement.GroupId", "pg-1");
    NONE(&p, "LaunchTemplateData.Placement.PartitionNumber");
    snprintf(name_none, sizeof name_none, "%s", param(&p, "LaunchTemplateName"));
    nw_ec2_params_cleanup(&p);
    g_claim = "{\"spec\":{\"requirements\":[{\"key\":\"karpenter.k8s.aws/"
              "placement-group-partition\",\"operator\":\"In\",\"values\":[\"3\",\"12\","
              "\"2\"]}]}}";
    ck_assert_int_eq(build("\"amiFamily\":\"AL2023\"", 0, &p, &err), NW_OK);
    HAS(&p, "LaunchTemplateData.Placement.PartitionNumber", "12"); /* "12" < "2" < "3" */
    ck_assert_str_ne(param(&p, "LaunchTemplateName"), name_none);
    nw_ec2_params_cleanup(&p);
    /* a cluster group takes no partition number; NotIn asks for none */
    g_pg_strategy = "cluster";
    ck_assert_int_eq(build("\"amiFamily\":\"AL2023\"", 0, &p, &err), NW_OK);
    HAS(&p, "LaunchTemplateData.Placement.GroupId", "pg-1");
    NONE(&p, "LaunchTemplateData.Placement.PartitionNumber");
    nw_ec2_params_cleanup(&p);
    g_pg_strategy = "partition";
    g_claim = "{\"spec\":{\"requirements\":[{\"key\":\"karpenter.k8s.aws/"
              "placement-group-partition\",\"operator\":\"NotIn\",\"values\":[\"1\"]}]}}";
    ck_assert_int_eq(build("\"amiFamily\":\"AL2023\"", 0, &p, &err), NW_OK);
    NONE(&p, "LaunchTemplateData.Placement.PartitionNumber");
    nw_ec2_params_cleanup(&p);
    /* no group: no Placement at all */
    g_pg_id = g_pg_strategy = g_claim = NULL;
    ck_assert_int_eq(build("\"amiFamily\":\"AL2023\"", 0, &p, &err), NW_OK);
    NONE(&p, "LaunchTemplateData.Placement.GroupId");
    nw_ec2_params_cleanup(&p);
}
END_TEST

/* ---- the service CIDR of AL2023's NodeConfig ---- */

typedef struct {
    int calls;
    const char *cidr; /* NULL: the cluster publishes none */
} svc_t;

static nw_rc_t svc_lookup(void *ud, char *out, size_t len, char *src, size_t srclen, nw_err_t *err)
{
    svc_t *s = ud;
    s->calls++;
    if (!s->cidr)
        return nw_err_set(err, NW_ENOTFOUND, "service CIDR", "no ServiceCIDR, no kubeadm-config");
    snprintf(out, len, "%s", s->cidr);
    snprintf(src, srclen, "ServiceCIDR kubernetes");
    return NW_OK;
}

static nw_launch_t *cidr_launcher(nw_clock_fake_t *clk, const char *setting, svc_t *svc)
{
    nw_launch_t *l = nw_launch_new(NULL, NULL, NULL, &clk->base, "demo");
    ck_assert_ptr_nonnull(l);
    nw_launch_bootstrap_t b = {.endpoint = "https://10.0.0.10:6443",
                               .cluster_cidr = setting,
                               .service_cidr = svc_lookup,
                               .service_cidr_ud = svc};
    ck_assert_int_eq(nw_launch_set_bootstrap(l, &b), NW_OK);
    return l;
}

START_TEST(service_cidr_sources)
{
    nw_clock_fake_t clk;
    nw_clock_fake_init(&clk, 0);
    char c[64], src[400];
    /* the setting wins: the cluster is not asked */
    svc_t a = {0, "10.43.0.0/16"};
    nw_launch_t *l = cidr_launcher(&clk, "10.96.0.0/12", &a);
    nw_launchtemplate_cluster_cidr(l, c, sizeof c, src, sizeof src);
    ck_assert_str_eq(c, "10.96.0.0/12");
    ck_assert_str_eq(src, "settings.clusterCIDR");
    ck_assert_int_eq(a.calls, 0);
    nw_launch_free(l);
    /* no setting: the cluster's, asked again only after 10 minutes */
    l = cidr_launcher(&clk, "", &a);
    nw_launchtemplate_cluster_cidr(l, c, sizeof c, src, sizeof src);
    ck_assert_str_eq(c, "10.43.0.0/16");
    ck_assert_str_eq(src, "ServiceCIDR kubernetes");
    nw_clock_fake_advance(&clk, 599 * NW_NS_PER_SEC);
    nw_launchtemplate_cluster_cidr(l, c, sizeof c, src, sizeof src);
    ck_assert_int_eq(a.calls, 1);
    /* a lookup that fails later keeps what was found */
    a.cidr = NULL;
    nw_clock_fake_advance(&clk, 2 * NW_NS_PER_SEC);
    nw_launchtemplate_cluster_cidr(l, c, sizeof c, src, sizeof src);
    ck_assert_int_eq(a.calls, 2);
    ck_assert_str_eq(c, "10.43.0.0/16");
    nw_launch_free(l);
}
END_TEST

START_TEST(service_cidr_none_then_found)
{
    nw_clock_fake_t clk;
    nw_clock_fake_init(&clk, 0);
    char c[64], src[400];
    svc_t a = {0, NULL};
    nw_launch_t *l = cidr_launcher(&clk, NULL, &a);
    nw_launchtemplate_cluster_cidr(l, c, sizeof c, src, sizeof src);
    ck_assert_str_eq(c, "");
    ck_assert_msg(strstr(src, "no ServiceCIDR, no kubeadm-config"), "%s", src);
    /* asked again every 10 s, not at every call */
    nw_clock_fake_advance(&clk, 5 * NW_NS_PER_SEC);
    nw_launchtemplate_cluster_cidr(l, c, sizeof c, src, sizeof src);
    ck_assert_int_eq(a.calls, 1);
    /* the AL2023 bootstrap names why there is none */
    cJSON *nc = cJSON_Parse("{\"metadata\":{\"name\":\"al\"},\"spec\":{\"amiFamily\":\"AL2023\"}}");
    nw_nodeclass_resolved_t rs;
    memset(&rs, 0, sizeof rs);
    snprintf(rs.name, sizeof rs.name, "al");
    nw_launch_req_t r = {.nodepool = "p", .nodeclaim = "c", .nodeclass = nc, .resolved = &rs};
    char *ud = NULL;
    nw_err_t err = {0};
    ck_assert_int_eq(nw_launchtemplate_userdata(l, &r, "on-demand", 29, &ud, &err), NW_EINVAL);
    ck_assert_str_eq(err.path, "settings.clusterCIDR");
    ck_assert_msg(strstr(err.msg, "no service CIDR for AL2023's NodeConfig") &&
                      strstr(err.msg, "no ServiceCIDR, no kubeadm-config") &&
                      strstr(err.msg, "settings.clusterCIDR is empty"),
                  "%s", err.msg);
    /* the cluster publishes one: found at the next lookup, and the bootstrap renders */
    a.cidr = "10.96.0.0/12";
    nw_clock_fake_advance(&clk, 5 * NW_NS_PER_SEC);
    nw_err_clear(&err);
    ck_assert_int_eq(nw_launchtemplate_userdata(l, &r, "on-demand", 29, &ud, &err), NW_OK);
    ck_assert_int_eq(a.calls, 2);
    ck_assert_msg(ud && strstr(ud, "cidr: 10.96.0.0/12"), "%s", ud ? ud : "(none)");
    free(ud);
    cJSON_Delete(nc);
    nw_launch_free(l);
}
END_TEST

Suite *nw_launch_suite(void)
{
    Suite *s = suite_create("launch");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, primary_interface);
    tcase_add_test(tc, spec_interfaces_and_efa);
    tcase_add_test(tc, ipv6_cluster);
    tcase_add_test(tc, bad_volume_size);
    tcase_add_test(tc, placement_partition);
    tcase_add_test(tc, service_cidr_sources);
    tcase_add_test(tc, service_cidr_none_then_found);
    suite_add_tcase(s, tc);
    return s;
}
