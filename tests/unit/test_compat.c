/* tests/unit/test_compat.c — the instance-type compatibility filters of an EC2NodeClass
 * (scaler/cloud/compat.h) against aws/karpenter-provider-aws
 * pkg/providers/instancetype/compatibility: network cards and interfaces, EFA, AL2023 on
 * a1, nested virtualization, placement strategies, connection tracking; what the embedded
 * catalog (no DescribeInstanceTypes facts) can and cannot judge. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "scaler/cloud/compat.h"

Suite *nw_compat_suite(void);

/* a Nitro type with 2 cards of 4 and 2 interfaces, 1 EFA, nested virtualization, partition
 * and spread groups (no cluster) */
static nw_itype_t known(void)
{
    nw_itype_t t;
    memset(&t, 0, sizeof t);
    snprintf(t.name, sizeof t.name, "m7i.4xlarge");
    snprintf(t.hypervisor, sizeof t.hypervisor, "nitro");
    t.enis = 4;
    t.efa = 1;
    t.features_known = 1;
    t.network_cards = 2;
    t.card_enis[0] = 4;
    t.card_enis[1] = 2;
    t.nested_virt = 1;
    t.pg_strategies = NW_PG_PARTITION | NW_PG_SPREAD;
    return t;
}

static int ok(const nw_itype_t *t, const char *spec, const char *pg, char *why)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "{\"spec\":{%s}}", spec);
    cJSON *nc = cJSON_Parse(buf);
    ck_assert_ptr_nonnull(nc);
    int r = nw_compat_class_compatible(t, nc, pg, why, 256);
    cJSON_Delete(nc);
    if (r)
        ck_assert_str_eq(why, "");
    return r;
}

#define NIS(x) "\"networkInterfaces\":[" x "]"

START_TEST(interfaces)
{
    nw_itype_t t = known();
    char why[256];
    ck_assert(ok(&t, "", NULL, why));
    ck_assert(ok(&t, NIS("{\"networkCardIndex\":1,\"deviceIndex\":1}"), NULL, why));
    ck_assert(!ok(&t, NIS("{\"networkCardIndex\":2,\"deviceIndex\":0}"), NULL, why));
    ck_assert_msg(strstr(why, "networkCardIndex 2"), "%s", why);
    ck_assert(!ok(&t, NIS("{\"networkCardIndex\":1,\"deviceIndex\":2}"), NULL, why));
    ck_assert_msg(strstr(why, "deviceIndex 2"), "%s", why);
    /* efa-only entries against the EFA count; an efa interface is not counted (Karpenter) */
    ck_assert(ok(&t,
                 NIS("{\"networkCardIndex\":1,\"deviceIndex\":0,\"interfaceType\":\"efa-only\"}"),
                 NULL, why));
    ck_assert(!ok(&t,
                  NIS("{\"networkCardIndex\":0,\"deviceIndex\":1,\"interfaceType\":\"efa-only\"},"
                      "{\"networkCardIndex\":1,\"deviceIndex\":0,\"interfaceType\":\"efa-only\"}"),
                  NULL, why));
    ck_assert_msg(strstr(why, "EFA"), "%s", why);
    t.ena_unsupported = 1;
    ck_assert(!ok(&t, NIS("{\"networkCardIndex\":0,\"deviceIndex\":0}"), NULL, why));
    ck_assert(ok(&t, "", NULL, why)); /* no networkInterfaces: no check */
    t.ena_unsupported = 0;
    t.network_cards = 0;
    ck_assert(!ok(&t, NIS("{\"networkCardIndex\":0,\"deviceIndex\":0}"), NULL, why));
}
END_TEST

START_TEST(family_cpu_pg_conntrack)
{
    nw_itype_t t = known();
    char why[256];
    ck_assert(ok(&t, "\"cpuOptions\":{\"nestedVirtualization\":\"enabled\"}", NULL, why));
    t.nested_virt = 0;
    ck_assert(!ok(&t, "\"cpuOptions\":{\"nestedVirtualization\":\"enabled\"}", NULL, why));
    ck_assert(ok(&t, "\"cpuOptions\":{\"nestedVirtualization\":\"disabled\"}", NULL, why));
    ck_assert(ok(&t, "", "partition", why));
    ck_assert(!ok(&t, "", "cluster", why));
    ck_assert_msg(strstr(why, "cluster placement groups"), "%s", why);
    ck_assert(ok(&t, "\"connectionTracking\":{\"udpTimeout\":30}", NULL, why));
    snprintf(t.hypervisor, sizeof t.hypervisor, "xen");
    ck_assert(!ok(&t, "\"connectionTracking\":{\"udpTimeout\":30}", NULL, why));
    nw_itype_t a1 = known();
    snprintf(a1.name, sizeof a1.name, "a1.large");
    ck_assert(!ok(&a1, "\"amiFamily\":\"AL2023\"", NULL, why));
    ck_assert(!ok(&a1, "\"amiSelectorTerms\":[{\"alias\":\"al2023@latest\"}]", NULL, why));
    ck_assert(ok(&a1, "\"amiFamily\":\"AL2\"", NULL, why));
}
END_TEST

/* the embedded catalog: card 0, the EFA count, the name and the hypervisor only */
START_TEST(embedded_catalog)
{
    nw_itype_t t = known();
    t.features_known = 0;
    t.network_cards = 0;
    t.nested_virt = 0;
    t.pg_strategies = 0;
    char why[256];
    ck_assert(ok(&t, NIS("{\"networkCardIndex\":5,\"deviceIndex\":9}"), NULL, why));
    ck_assert(!ok(&t, NIS("{\"networkCardIndex\":0,\"deviceIndex\":4}"), NULL, why));
    ck_assert(ok(&t, "\"cpuOptions\":{\"nestedVirtualization\":\"enabled\"}", "cluster", why));
    t.efa = 0;
    ck_assert(!ok(&t,
                  NIS("{\"networkCardIndex\":0,\"deviceIndex\":0,\"interfaceType\":\"efa-only\"}"),
                  NULL, why));
}
END_TEST

Suite *nw_compat_suite(void)
{
    Suite *s = suite_create("compat");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, interfaces);
    tcase_add_test(tc, family_cpu_pg_conntrack);
    tcase_add_test(tc, embedded_catalog);
    suite_add_tcase(s, tc);
    return s;
}
