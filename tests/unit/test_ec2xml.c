/* Unit tests for scaler/aws/ec2xml (on the fuzz corpus files) and ec2 error classes. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaler/aws/cloud.h"
#include "scaler/aws/ec2.h"
#include "scaler/aws/intrsource.h"
#include "scaler/aws/ec2xml.h"
#include "scaler/aws/catalog_refresh.h"
#include "scaler/cloud/catalog.h"
#include "tests/unit/testutil.h"

Suite *nw_ec2xml_suite(void);

#define DIR "tests/fuzz/corpus/ec2xml/"

static char *load(const char *name, size_t *len)
{
    return nw_test_read_file(name, len);
}

START_TEST(instance_types)
{
    size_t len;
    char *x = load(DIR "describe-instance-types.xml", &len);
    nw_ec2_itypes_t l = {0};
    char next[128];
    nw_err_t err = {0};
    ck_assert_int_eq(nw_ec2xml_parse_instance_types(x, len, &l, next, sizeof next, &err), NW_OK);
    ck_assert_uint_eq(l.n, 4);
    ck_assert_str_eq(next, "AAEAAVR5cGVzLVBhZ2UtMg==");
    nw_ec2_itype_t *m = &l.v[0];
    ck_assert_str_eq(m->name, "m6i.large");
    ck_assert_int_eq(m->vcpus, 2);
    ck_assert_int_eq(m->memory_mib, 8192);
    ck_assert_str_eq(m->arch, "x86_64");
    ck_assert_str_eq(m->cpu_manufacturer, "Intel");
    ck_assert_int_eq(m->max_enis, 3);
    ck_assert_int_eq(m->ipv4_per_eni, 10);
    ck_assert_int_eq(m->gpu_count, 0);
    ck_assert_int_eq(m->ebs_mbps, 10000); /* EBS-optimized by default: its maximum */
    ck_assert_int_eq(l.v[1].ebs_mbps, 0);
    ck_assert_int_eq(m->spot_supported, 1);
    ck_assert_int_eq(m->on_demand_supported, 1);
    ck_assert_int_eq(m->network_mbps, 781);
    ck_assert_int_eq(m->encryption_in_transit, 1);
    ck_assert_str_eq(m->hypervisor, "nitro");
    /* the compatibility facts (scaler/cloud/compat.h) */
    ck_assert_int_eq(m->network_cards, 1);
    ck_assert_int_eq(m->card_enis[0], 3);
    ck_assert_int_eq(m->ena_unsupported, 0);
    ck_assert_int_eq(m->nested_virt, 0);
    ck_assert_uint_eq(m->pg_strategies, 7);
    ck_assert_uint_eq(l.v[1].pg_strategies, 0);
    ck_assert_int_eq(l.v[2].network_cards, 32);
    ck_assert_int_eq(l.v[2].card_enis[1], 2);
    nw_ec2_itype_t *g = &l.v[1];
    ck_assert_str_eq(g->gpu_name, "A10G");
    ck_assert_str_eq(g->gpu_manufacturer, "NVIDIA");
    ck_assert_int_eq(g->gpu_count, 4);
    ck_assert_int_eq(g->gpu_memory_mib, 22888);
    ck_assert_int_eq(g->local_nvme_gb, 3800);
    ck_assert_int_eq(g->efa_max, 1);
    /* p5: ENIs of the default network card (2), not the instance total (64) */
    ck_assert_int_eq(l.v[2].max_enis, 2);
    ck_assert_int_eq(l.v[2].gpu_count, 8);
    ck_assert_str_eq(l.v[3].accel_name, "Inferentia2");
    ck_assert_int_eq(l.v[3].accel_count, 1);
    ck_assert_int_eq(l.v[3].neuron_cores, 2);
    ck_assert_int_eq(l.v[3].accel_memory_mib, 32768);
    /* a second page appends */
    ck_assert_int_eq(nw_ec2xml_parse_instance_types(x, len, &l, next, sizeof next, &err), NW_OK);
    ck_assert_uint_eq(l.n, 8);
    nw_ec2xml_itypes_free(&l);
    free(x);
}
END_TEST

/* the label of key among t's labels, or "" */
static const char *type_label(const nw_itype_t *t, const char *key, char *buf, size_t n)
{
    nw_cat_label_t l[64];
    int k = nw_catalog_itype_labels(t, l, 64);
    buf[0] = '\0';
    for (int i = 0; i < k; i++)
        if (strcmp(l[i].key, key) == 0)
            snprintf(buf, n, "%s", l[i].value);
    return buf;
}

/* GPUs EC2 describes with a count of 0 (issue 33): g6f's fractional L4 (logicalGpuCount
 * 1) and p5.4xlarge's H100 (no logical count) are one GPU each in the catalog, with the
 * GPU labels and capacity */
START_TEST(uncounted_gpus)
{
    size_t len;
    char *x = load(DIR "describe-instance-types-uncounted.xml", &len);
    nw_ec2_itypes_t l = {0};
    char next[128];
    nw_err_t err = {0};
    ck_assert_int_eq(nw_ec2xml_parse_instance_types(x, len, &l, next, sizeof next, &err), NW_OK);
    ck_assert_uint_eq(l.n, 2);
    ck_assert_int_eq(l.v[0].gpu_count, 0);
    ck_assert_int_eq(l.v[0].gpu_logical_count, 1);
    ck_assert_int_eq(l.v[1].gpu_count, 0);
    ck_assert_int_eq(l.v[1].gpu_logical_count, 0);
    static const char *const want_name[] = {"l4", "h100"};
    for (size_t i = 0; i < 2; i++) {
        nw_itype_t t;
        nw_catalog_refresh_from_api(&l.v[i], &t);
        ck_assert_int_eq(t.gpu_count, 1);
        ck_assert_str_eq(t.gpu_name, want_name[i]);
        char b[64];
        ck_assert_str_eq(type_label(&t, "karpenter.k8s.aws/instance-gpu-count", b, sizeof b), "1");
        ck_assert_str_eq(type_label(&t, "karpenter.k8s.aws/instance-gpu-manufacturer", b, sizeof b),
                         "nvidia");
        nw_overhead_opts_t o;
        nw_catalog_overhead_opts_default(&o);
        nw_cat_res_t cap;
        nw_catalog_itype_capacity(&t, &o, &cap);
        ck_assert_int_eq(cap.nvidia_gpu, 1);
        ck_assert(nw_catalog_itype_is_exotic(&t));
    }
    nw_ec2xml_itypes_free(&l);
    free(x);
}
END_TEST

START_TEST(describe_lists)
{
    size_t len;
    char next[128];
    nw_err_t err = {0};
    char *x = load(DIR "describe-subnets.xml", &len);
    nw_ec2_subnets_t s = {0};
    ck_assert_int_eq(nw_ec2xml_parse_subnets(x, len, &s, next, sizeof next, &err), NW_OK);
    ck_assert_uint_eq(s.n, 2);
    ck_assert_str_eq(s.v[0].id, "subnet-0a1b2c3d4e5f60001");
    ck_assert_str_eq(s.v[0].zone, "us-west-2a");
    ck_assert_str_eq(s.v[0].zone_id, "usw2-az1");
    ck_assert_int_eq(s.v[0].available_ips, 4091);
    ck_assert_int_eq(s.v[0].tags.n, 2);
    ck_assert_str_eq(s.v[0].tags.v[0].key, "karpenter.sh/discovery");
    ck_assert_str_eq(s.v[0].tags.v[0].value, "demo");
    ck_assert_str_eq(next, "c3VibmV0cy1wYWdlLTI=");
    nw_ec2xml_subnets_free(&s);
    free(x);

    x = load(DIR "describe-security-groups.xml", &len);
    nw_ec2_sgs_t g = {0};
    ck_assert_int_eq(nw_ec2xml_parse_sgs(x, len, &g, next, sizeof next, &err), NW_OK);
    ck_assert_uint_eq(g.n, 1);
    ck_assert_str_eq(g.v[0].name, "demo-nodes");
    ck_assert_str_eq(next, "");
    nw_ec2xml_sgs_free(&g);
    free(x);

    x = load(DIR "describe-images.xml", &len);
    nw_ec2_images_t im = {0};
    ck_assert_int_eq(nw_ec2xml_parse_images(x, len, &im, next, sizeof next, &err), NW_OK);
    ck_assert_uint_eq(im.n, 2);
    ck_assert_str_eq(im.v[1].arch, "arm64");
    ck_assert_int_eq(im.v[0].deprecation_ns, 0);
    ck_assert_int_gt(im.v[1].deprecation_ns, 0);
    ck_assert_int_gt(im.v[0].creation_ns, im.v[1].creation_ns);
    nw_ec2xml_images_free(&im);
    free(x);

    x = load(DIR "describe-instance-type-offerings.xml", &len);
    nw_ec2_offerings_t of = {0};
    ck_assert_int_eq(nw_ec2xml_parse_offerings(x, len, &of, next, sizeof next, &err), NW_OK);
    ck_assert_uint_eq(of.n, 3);
    ck_assert_str_eq(of.v[2].location, "us-west-2c");
    nw_ec2xml_offerings_free(&of);
    free(x);

    x = load(DIR "describe-spot-price-history.xml", &len);
    nw_ec2_spot_prices_t sp = {0};
    ck_assert_int_eq(nw_ec2xml_parse_spot_prices(x, len, &sp, next, sizeof next, &err), NW_OK);
    ck_assert_uint_eq(sp.n, 2);
    ck_assert(sp.v[0].price > 0.0353 && sp.v[0].price < 0.0355);
    nw_ec2xml_spot_prices_free(&sp);
    free(x);

    x = load(DIR "describe-availability-zones.xml", &len);
    nw_ec2_zones_t z = {0};
    ck_assert_int_eq(nw_ec2xml_parse_zones(x, len, &z, &err), NW_OK);
    ck_assert_uint_eq(z.n, 2);
    ck_assert_str_eq(z.v[1].zone_id, "usw2-az2");
    nw_ec2xml_zones_free(&z);
    free(x);
}
END_TEST

START_TEST(error_kinds)
{
    /* EC2's and SQS's error classes in the cloud's neutral kinds */
    ck_assert_int_eq(
        nw_aws_cloud_err_kind(nw_ec2_classify("InsufficientInstanceCapacity", "", 500)),
        NW_CLOUD_ERR_CAPACITY);
    ck_assert_int_eq(nw_aws_cloud_err_kind(nw_ec2_classify("UnauthorizedOperation", "", 403)),
                     NW_CLOUD_ERR_UNAUTHORIZED);
    ck_assert_int_eq(nw_aws_cloud_err_kind(nw_ec2_classify("InvalidParameterValue", "", 400)),
                     NW_CLOUD_ERR_INVALID);
    ck_assert_int_eq(nw_aws_cloud_err_kind(nw_ec2_classify("RequestLimitExceeded", "", 503)),
                     NW_CLOUD_ERR_THROTTLED);
    ck_assert_int_eq(nw_aws_cloud_err_kind(NW_EC2_SERVER), NW_CLOUD_ERR_OTHER);
    ck_assert_int_eq(nw_aws_cloud_err_kind(NW_EC2_OK), NW_CLOUD_ERR_NONE);
    ck_assert_int_eq(nw_intrsource_sqs_err_kind(nw_sqs_classify("ThrottlingException", 400)),
                     NW_CLOUD_ERR_THROTTLED);
    ck_assert_int_eq(nw_intrsource_sqs_err_kind(nw_sqs_classify("AccessDenied", 403)),
                     NW_CLOUD_ERR_UNAUTHORIZED);
    ck_assert_int_eq(nw_intrsource_sqs_err_kind(NW_SQS_TRANSPORT), NW_CLOUD_ERR_OTHER);
    ck_assert_str_eq(nw_cloud_err_kind_name(NW_CLOUD_ERR_CAPACITY), "capacity");
    ck_assert_str_eq(nw_cloud_err_kind_name(NW_CLOUD_ERR_THROTTLED), "throttled");
}
END_TEST

START_TEST(instances_and_launch)
{
    size_t len;
    char next[128];
    nw_err_t err = {0};
    char *x = load(DIR "describe-instances.xml", &len);
    nw_ec2_instances_t in = {0};
    ck_assert_int_eq(nw_ec2xml_parse_instances(x, len, &in, next, sizeof next, &err), NW_OK);
    ck_assert_uint_eq(in.n, 2);
    ck_assert_str_eq(in.v[0].zone, "us-west-2b");
    ck_assert_str_eq(in.v[0].state, "running");
    ck_assert_int_eq(in.v[0].tags.n, 4);
    ck_assert_str_eq(in.v[1].lifecycle, "spot");
    ck_assert_int_eq(in.v[0].nsg, 2); /* the instance's groupSet, not the reservation's */
    ck_assert_str_eq(in.v[0].sg_ids[0], "sg-0a1b2c3d4e5f60001");
    ck_assert_str_eq(in.v[0].sg_ids[1], "sg-0a1b2c3d4e5f60002");
    ck_assert_str_eq(in.v[0].subnet_id, "subnet-0a1b2c3d4e5f60002");
    ck_assert_int_eq(in.v[1].nsg, 0);
    /* the profile's ARN, its path included (instance profile cleanup, scaler/aws/iam.h) */
    ck_assert_str_eq(in.v[0].profile_arn,
                     "arn:aws:iam::123456789012:instance-profile/karpenter/us-west-2/demo/0c6bfd00/"
                     "demo_42");
    ck_assert_str_eq(in.v[1].profile_arn, "");
    ck_assert_str_eq(next, "ZGVzY3JpYmUtaW5zdGFuY2VzLTI=");
    /* the same instances in the cloud's neutral terms (scaler/aws/cloud.c) */
    nw_cloud_instance_t ci;
    nw_aws_cloud_instance(&in.v[0], &ci);
    ck_assert_str_eq(ci.id, "i-0123456789abcdef0");
    ck_assert_str_eq(ci.provider_id, "aws:///us-west-2b/i-0123456789abcdef0");
    ck_assert_str_eq(nw_cloud_instance_id(ci.provider_id), ci.id);
    ck_assert_str_eq(ci.type, "m7i.large");
    ck_assert_str_eq(ci.capacity_type, "on-demand");
    ck_assert_str_eq(ci.state, "running");
    ck_assert_str_eq(ci.image_id, "ami-0aaaaaaaaaaaaaaa1");
    ck_assert_str_eq(ci.subnet_id, "subnet-0a1b2c3d4e5f60002");
    ck_assert_int_eq(ci.nsg, 2);
    ck_assert_str_eq(ci.sg_ids[1], "sg-0a1b2c3d4e5f60002");
    ck_assert_int_eq(ci.launch_ns, in.v[0].launch_ns);
    ck_assert(ci.launch_ns > 0);
    ck_assert_int_eq(ci.ntags, 4);
    ck_assert_str_eq(nw_cloud_instance_tag(&ci, "karpenter.sh/nodepool"), "default");
    ck_assert_ptr_null(nw_cloud_instance_tag(&ci, "karpenter.sh/nodeclaim"));
    nw_aws_cloud_instance(&in.v[1], &ci);
    ck_assert_str_eq(ci.capacity_type, "spot");
    /* 50 tags of the longest sizes do not fit: the ones nodewarden reads are kept first,
     * wherever EC2 lists them, and the ones left out are counted */
    nw_ec2_instance_t big = in.v[0];
    nw_ec2_tag_t many[NW_EC2_MAX_TAGS];
    big.tags.v = many;
    big.tags.n = 0;
    for (int t = 0; t < NW_EC2_MAX_TAGS - 1; t++) {
        snprintf(big.tags.v[t].key, sizeof big.tags.v[t].key, "team.example.com/k%03u-%090d",
                 (unsigned)t % 1000u, 0);
        memset(big.tags.v[t].value, 'v', sizeof big.tags.v[t].value - 1);
        big.tags.v[t].value[sizeof big.tags.v[t].value - 1] = 0;
        big.tags.n++;
    }
    snprintf(big.tags.v[big.tags.n].key, sizeof big.tags.v[0].key, "karpenter.sh/nodeclaim");
    snprintf(big.tags.v[big.tags.n++].value, sizeof big.tags.v[0].value, "default-x2");
    nw_aws_cloud_instance(&big, &ci);
    ck_assert_str_eq(nw_cloud_instance_tag(&ci, "karpenter.sh/nodeclaim"), "default-x2");
    ck_assert_int_gt(ci.tags_dropped, 0);
    ck_assert_int_eq(ci.ntags + ci.tags_dropped, NW_EC2_MAX_TAGS);
    char k0[128];
    snprintf(k0, sizeof k0, "team.example.com/k000-%090d", 0);
    ck_assert_ptr_nonnull(nw_cloud_instance_tag(&ci, k0)); /* the first one fits */
    free(x);
    x = load(DIR "run-instances.xml", &len);
    ck_assert_int_eq(nw_ec2xml_parse_instances(x, len, &in, next, sizeof next, &err), NW_OK);
    ck_assert_uint_eq(in.n, 3);
    ck_assert_str_eq(in.v[2].state, "pending");
    nw_ec2xml_instances_free(&in);
    free(x);

    x = load(DIR "create-fleet.xml", &len);
    nw_ec2_fleet_result_t fr = {0};
    ck_assert_int_eq(nw_ec2xml_parse_fleet(x, len, &fr, &err), NW_OK);
    ck_assert_str_eq(fr.fleet_id, "fleet-12a34b55-67cd-8ef9-ba9b-9208dEXAMPLE");
    ck_assert_uint_eq(fr.ninst, 1);
    ck_assert_str_eq(fr.inst[0].instance_id, "i-0123456789abcdef0");
    ck_assert_str_eq(fr.inst[0].type, "m7i.large");
    ck_assert_str_eq(fr.inst[0].zone, "us-west-2b");
    ck_assert_uint_eq(fr.nerrs, 1);
    ck_assert_str_eq(fr.errs[0].code, "InsufficientInstanceCapacity");
    ck_assert_str_eq(fr.errs[0].type, "m6i.large");
    ck_assert_str_eq(fr.errs[0].zone, "us-west-2a");
    nw_ec2xml_fleet_result_free(&fr);
    free(x);

    x = load(DIR "terminate-instances.xml", &len);
    nw_ec2_state_changes_t sc = {0};
    ck_assert_int_eq(nw_ec2xml_parse_terminate(x, len, &sc, &err), NW_OK);
    ck_assert_str_eq(sc.v[0].current, "shutting-down");
    ck_assert_str_eq(sc.v[0].previous, "running");
    nw_ec2xml_state_changes_free(&sc);
    free(x);

    const char *lts[] = {"describe-launch-templates.xml", "create-launch-template.xml",
                         "delete-launch-template.xml"};
    for (int i = 0; i < 3; i++) {
        char p[256];
        snprintf(p, sizeof p, DIR "%s", lts[i]);
        x = load(p, &len);
        nw_ec2_lts_t l = {0};
        ck_assert_int_eq(nw_ec2xml_parse_launch_templates(x, len, &l, next, sizeof next, &err),
                         NW_OK);
        ck_assert_uint_eq(l.n, 1);
        ck_assert_int_eq(strncmp(l.v[0].id, "lt-", 3), 0);
        nw_ec2xml_lts_free(&l);
        free(x);
    }
    x = load(DIR "create-tags.xml", &len);
    ck_assert_int_eq(nw_ec2xml_expect_root(x, len, "CreateTagsResponse", &err), NW_OK);
    free(x);
}
END_TEST

START_TEST(errors_and_sts)
{
    static const struct {
        const char *file, *code;
        nw_ec2_class_t cls;
    } cases[] = {
        {"error-RequestLimitExceeded.xml", "RequestLimitExceeded", NW_EC2_THROTTLE},
        {"error-UnauthorizedOperation.xml", "UnauthorizedOperation", NW_EC2_AUTH},
        {"error-DryRunOperation.xml", "DryRunOperation", NW_EC2_DRYRUN_OK},
        {"error-InvalidInstanceID.NotFound.xml", "InvalidInstanceID.NotFound", NW_EC2_NOTFOUND},
        {"error-InvalidParameterValue.xml", "InvalidParameterValue", NW_EC2_INVALID},
        {"error-InsufficientInstanceCapacity.xml", "InsufficientInstanceCapacity", NW_EC2_CAPACITY},
        {"error-InternalError.xml", "InternalError", NW_EC2_SERVER},
        {"sts-error.xml", "InvalidIdentityToken", NW_EC2_AUTH},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char p[256];
        size_t len;
        snprintf(p, sizeof p, DIR "%s", cases[i].file);
        char *x = load(p, &len);
        nw_ec2xml_error_t e;
        nw_err_t err = {0};
        ck_assert_int_eq(nw_ec2xml_parse_error(x, len, &e, &err), NW_OK);
        ck_assert_str_eq(e.code, cases[i].code);
        ck_assert(e.request_id[0]);
        ck_assert_int_eq(nw_ec2_classify(e.code, e.message, 400), cases[i].cls);
        free(x);
    }
    ck_assert_int_eq(nw_ec2_classify("", "", 503), NW_EC2_SERVER);
    {
        size_t l2;
        char *x = load(DIR "error-UnauthorizedOperation.xml", &l2);
        nw_ec2xml_error_t e;
        ck_assert_int_eq(nw_ec2xml_parse_error(x, l2, &e, NULL), NW_OK);
        nw_ec2_error_t ae = {0};
        ae.cls = nw_ec2_classify(e.code, e.message, 403);
        snprintf(ae.message, sizeof ae.message, "%s", e.message);
        ck_assert(nw_ec2_error_is_passrole(&ae));
        snprintf(ae.message, sizeof ae.message, "not authorized to perform: ec2:CreateFleet");
        ck_assert(!nw_ec2_error_is_passrole(&ae));
        free(x);
    }
    ck_assert_int_eq(nw_ec2_classify("", "", 429), NW_EC2_THROTTLE);
    ck_assert_int_eq(nw_ec2_classify("InvalidLaunchTemplateName.NotFoundException", "", 400),
                     NW_EC2_NOTFOUND);
    ck_assert_int_eq(nw_ec2_classify("InvalidParameterValue",
                                     "Value (x) for parameter iamInstanceProfile.name is invalid. "
                                     "Invalid IAM Instance Profile name",
                                     400),
                     NW_EC2_NOTFOUND);
    ck_assert_int_eq(nw_ec2_classify("AuthFailure.ServiceLinkedRoleCreationNotPermitted", "", 400),
                     NW_EC2_CAPACITY);

    size_t len;
    nw_err_t err = {0};
    nw_sts_result_t r;
    char *x = load(DIR "sts-assume-role-with-web-identity.xml", &len);
    ck_assert_int_eq(nw_ec2xml_parse_sts(x, len, &r, &err), NW_OK);
    ck_assert_str_eq(r.access_key_id, "ASgeIAIOSFODNN7EXAMPLE");
    ck_assert_str_eq(r.session_token, "AQoDYXdzEE0a8ANXXXXXXXXNO1ewxE5TijQyp+IEXAMPLE");
    ck_assert_int_gt(r.expiration_ns, 0);
    free(x);
    x = load(DIR "sts-get-caller-identity.xml", &len);
    ck_assert_int_eq(nw_ec2xml_parse_sts(x, len, &r, &err), NW_OK);
    ck_assert_str_eq(r.account, "123456789012");
    free(x);
}
END_TEST

/* DescribePlacementGroups and the IAM instance-profile answers (Get, List with a Marker) */
START_TEST(placement_groups_and_profiles)
{
    const char *pg = "<DescribePlacementGroupsResponse xmlns=\"http://ec2.amazonaws.com/doc/"
                     "2016-11-15/\"><requestId>r</requestId><placementGroupSet><item><groupName>"
                     "p</groupName><groupId>pg-1</groupId><strategy>partition</strategy><state>"
                     "available</state><partitionCount>3</partitionCount></item>"
                     "</placementGroupSet></DescribePlacementGroupsResponse>";
    nw_ec2_pgs_t pgs = {0};
    nw_err_t err = {0};
    ck_assert_int_eq(nw_ec2xml_parse_placement_groups(pg, strlen(pg), &pgs, &err), NW_OK);
    ck_assert_uint_eq(pgs.n, 1);
    ck_assert_str_eq(pgs.v[0].id, "pg-1");
    ck_assert_str_eq(pgs.v[0].strategy, "partition");
    ck_assert_int_eq(pgs.v[0].partitions, 3);
    nw_ec2xml_pgs_free(&pgs);
    const char *get =
        "<GetInstanceProfileResponse xmlns=\"https://iam.amazonaws.com/doc/2010-05-08/"
        "\"><GetInstanceProfileResult><InstanceProfile><InstanceProfileName>c_1"
        "</InstanceProfileName><Path>/karpenter/r/c/u/</Path><Arn>arn:x</Arn><Roles>"
        "<member><RoleName>node</RoleName></member></Roles></InstanceProfile>"
        "</GetInstanceProfileResult></GetInstanceProfileResponse>";
    nw_iam_profiles_t l = {0};
    char marker[64] = "x";
    ck_assert_int_eq(
        nw_ec2xml_parse_iam_profiles(get, strlen(get), &l, marker, sizeof marker, &err), NW_OK);
    ck_assert_uint_eq(l.n, 1);
    ck_assert_str_eq(l.v[0].name, "c_1");
    ck_assert_str_eq(l.v[0].path, "/karpenter/r/c/u/");
    ck_assert_str_eq(l.v[0].role, "node");
    ck_assert_str_eq(marker, "");
    const char *list =
        "<ListInstanceProfilesResponse><ListInstanceProfilesResult><InstanceProfiles>"
        "<member><InstanceProfileName>a</InstanceProfileName><Path>/</Path><Roles/>"
        "</member><member><InstanceProfileName>b</InstanceProfileName><Path>/</Path>"
        "</member></InstanceProfiles><IsTruncated>true</IsTruncated><Marker>m2"
        "</Marker></ListInstanceProfilesResult></ListInstanceProfilesResponse>";
    ck_assert_int_eq(
        nw_ec2xml_parse_iam_profiles(list, strlen(list), &l, marker, sizeof marker, &err), NW_OK);
    ck_assert_uint_eq(l.n, 3);
    ck_assert_str_eq(l.v[1].name, "a");
    ck_assert_str_eq(l.v[1].role, "");
    ck_assert_str_eq(marker, "m2");
    nw_ec2xml_iam_profiles_free(&l);
    const char *bad = "<ListInstanceProfilesResponse><ListInstanceProfilesResult/>"
                      "</ListInstanceProfilesResponse>";
    ck_assert_int_eq(nw_ec2xml_parse_iam_profiles(bad, strlen(bad), &l, NULL, 0, &err), NW_EPARSE);
    nw_ec2xml_iam_profiles_free(&l);
}
END_TEST

/* DescribeInstances is read one reservation at a time: every reservation's instances, the
 * nextToken wherever the root holds it, and a document cut short inside a reservation or
 * after the last one is an error. */
START_TEST(instances_streamed)
{
    nw_err_t err = {0};
    nw_buf_t b;
    nw_buf_init(&b, 1 << 22);
    ck_assert_int_eq(nw_buf_adds(&b, "<?xml version=\"1.0\"?>\n<DescribeInstancesResponse "
                                     "xmlns=\"http://ec2.amazonaws.com/doc/2016-11-15/\">"
                                     "<requestId>r</requestId><reservationSet>"),
                     NW_OK);
    for (int r = 0; r < 300; r++) {
        ck_assert_int_eq(
            nw_buf_addf(&b, "<item><reservationId>r-%d</reservationId><instancesSet>", r), NW_OK);
        for (int i = 0; i < 3; i++)
            ck_assert_int_eq(nw_buf_addf(&b,
                                         "<item><instanceId>i-%d-%d</instanceId><instanceState>"
                                         "<name>running</name></instanceState><tagSet><item><key>k"
                                         "</key><value>%d</value></item></tagSet></item>",
                                         r, i, r * 3 + i),
                             NW_OK);
        ck_assert_int_eq(nw_buf_adds(&b, "</instancesSet></item>"), NW_OK);
    }
    ck_assert_int_eq(
        nw_buf_adds(&b,
                    "</reservationSet><nextToken>page-2</nextToken></DescribeInstancesResponse>"),
        NW_OK);
    nw_ec2_instances_t in = {0};
    char next[64];
    ck_assert_int_eq(nw_ec2xml_parse_instances(b.data, b.len, &in, next, sizeof next, &err), NW_OK);
    ck_assert_uint_eq(in.n, 900);
    ck_assert_str_eq(in.v[0].id, "i-0-0");
    ck_assert_str_eq(in.v[899].id, "i-299-2");
    ck_assert_str_eq(in.v[899].state, "running");
    ck_assert_str_eq(in.v[451].tags.v[0].value, "451");
    ck_assert_str_eq(next, "page-2");
    nw_ec2xml_instances_free(&in);

    /* cut inside the 200th reservation, then cut after the root's last child */
    size_t cut = (size_t)(strstr(b.data, "<reservationId>r-200<") - b.data);
    ck_assert_int_eq(nw_ec2xml_parse_instances(b.data, cut, &in, next, sizeof next, &err),
                     NW_EPARSE);
    ck_assert_str_eq(err.path, "response");
    nw_ec2xml_instances_free(&in);
    nw_err_clear(&err);
    ck_assert_int_eq(nw_ec2xml_parse_instances(b.data, b.len - 10, &in, next, sizeof next, &err),
                     NW_EPARSE);
    nw_ec2xml_instances_free(&in);
    nw_err_clear(&err);

    const char *first = "<DescribeInstancesResponse><nextToken>t1</nextToken><reservationSet/>"
                        "</DescribeInstancesResponse>";
    ck_assert_int_eq(nw_ec2xml_parse_instances(first, strlen(first), &in, next, sizeof next, &err),
                     NW_OK);
    ck_assert_uint_eq(in.n, 0);
    ck_assert_str_eq(next, "t1");
    nw_buf_cleanup(&b);
}
END_TEST

START_TEST(rejects_bad_input)
{
    size_t len;
    nw_err_t err = {0};
    char *x = load(DIR "truncated.xml", &len);
    nw_ec2_instances_t in = {0};
    ck_assert_int_eq(nw_ec2xml_parse_instances(x, len, &in, NULL, 0, &err), NW_EPARSE);
    ck_assert_str_eq(err.path, "response");
    free(x);
    nw_err_clear(&err);
    x = load(DIR "describe-subnets.xml", &len);
    ck_assert_int_eq(nw_ec2xml_parse_instances(x, len, &in, NULL, 0, &err), NW_EPARSE);
    ck_assert_ptr_nonnull(strstr(err.msg, "DescribeSubnetsResponse"));
    free(x);
    nw_err_clear(&err);
    x = load(DIR "error-UnauthorizedOperation.xml", &len);
    nw_ec2_fleet_result_t fr = {0};
    ck_assert_int_eq(nw_ec2xml_parse_fleet(x, len, &fr, &err), NW_EPARSE);
    ck_assert_ptr_nonnull(strstr(err.msg, "error document"));
    free(x);
    nw_err_clear(&err);
    const char *noid = "<DescribeSubnetsResponse><subnetSet><item><vpcId>v</vpcId></item>"
                       "</subnetSet></DescribeSubnetsResponse>";
    nw_ec2_subnets_t s = {0};
    ck_assert_int_eq(nw_ec2xml_parse_subnets(noid, strlen(noid), &s, NULL, 0, &err), NW_EPARSE);
    ck_assert_str_eq(err.path, "subnetSet.item.subnetId");
    ck_assert_uint_eq(s.n, 0);
    nw_ec2xml_subnets_free(&s);
    nw_err_clear(&err);
    ck_assert_int_eq(nw_ec2xml_parse_subnets("", 0, &s, NULL, 0, &err), NW_EPARSE);
    nw_ec2xml_error_t e;
    nw_err_clear(&err);
    const char *ok = "<CreateTagsResponse><return>true</return></CreateTagsResponse>";
    ck_assert_int_eq(nw_ec2xml_parse_error(ok, strlen(ok), &e, &err), NW_EPARSE);
    nw_ec2xml_instances_free(&in);
}
END_TEST

/* Tags are held in an array of their count, at most AWS's 50 per resource; an item
 * dropped for a missing id frees its tags (ASan's leak check runs this). */
START_TEST(tags_sized_to_count)
{
    nw_err_t err = {0};
    nw_buf_t b;
    nw_buf_init(&b, 1 << 20);
    ck_assert_int_eq(nw_buf_adds(&b,
                                 "<DescribeInstancesResponse><reservationSet><item><instancesSet>"
                                 "<item><instanceId>i-1</instanceId><tagSet>"),
                     NW_OK);
    for (int t = 0; t < 60; t++)
        ck_assert_int_eq(nw_buf_addf(&b, "<item><key>k%d</key><value>v%d</value></item>", t, t),
                         NW_OK);
    ck_assert_int_eq(
        nw_buf_adds(&b, "</tagSet></item><item><instanceId>i-2</instanceId><tagSet><item><key>"
                        "karpenter.sh/nodeclaim</key><value>c</value></item></tagSet></item>"
                        "<item><instanceId>i-3</instanceId></item>"
                        "</instancesSet></item></reservationSet></DescribeInstancesResponse>"),
        NW_OK);
    nw_ec2_instances_t in = {0};
    char next[64];
    ck_assert_int_eq(nw_ec2xml_parse_instances(b.data, b.len, &in, next, sizeof next, &err), NW_OK);
    ck_assert_uint_eq(in.n, 3);
    ck_assert_int_eq(in.v[0].tags.n, NW_EC2_MAX_TAGS);
    ck_assert_str_eq(in.v[0].tags.v[49].key, "k49");
    ck_assert_str_eq(in.v[0].tags.v[49].value, "v49");
    ck_assert_int_eq(in.v[1].tags.n, 1);
    ck_assert_str_eq(in.v[1].tags.v[0].value, "c");
    ck_assert_int_eq(in.v[2].tags.n, 0);
    ck_assert_ptr_null(in.v[2].tags.v);
    nw_ec2xml_instances_free(&in);
    nw_buf_cleanup(&b);

    const char *noid = "<DescribeInstancesResponse><reservationSet><item><instancesSet><item>"
                       "<tagSet><item><key>a</key><value>b</value></item></tagSet></item>"
                       "</instancesSet></item></reservationSet></DescribeInstancesResponse>";
    ck_assert_int_eq(nw_ec2xml_parse_instances(noid, strlen(noid), &in, NULL, 0, &err), NW_EPARSE);
    ck_assert_str_eq(err.path, "instancesSet.item.instanceId");
    ck_assert_uint_eq(in.n, 0);
    nw_ec2xml_instances_free(&in);
    nw_err_clear(&err);
    const char *sg = "<DescribeSecurityGroupsResponse><securityGroupInfo><item><tagSet><item><key>"
                     "a</key><value>b</value></item></tagSet></item></securityGroupInfo>"
                     "</DescribeSecurityGroupsResponse>";
    nw_ec2_sgs_t sgs = {0};
    ck_assert_int_eq(nw_ec2xml_parse_sgs(sg, strlen(sg), &sgs, NULL, 0, &err), NW_EPARSE);
    ck_assert_uint_eq(sgs.n, 0);
    nw_ec2xml_sgs_free(&sgs);
}
END_TEST

Suite *nw_ec2xml_suite(void)
{
    Suite *s = suite_create("ec2xml");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, instance_types);
    tcase_add_test(tc, uncounted_gpus);
    tcase_add_test(tc, describe_lists);
    tcase_add_test(tc, instances_and_launch);
    tcase_add_test(tc, instances_streamed);
    tcase_add_test(tc, error_kinds);
    tcase_add_test(tc, errors_and_sts);
    tcase_add_test(tc, rejects_bad_input);
    tcase_add_test(tc, placement_groups_and_profiles);
    tcase_add_test(tc, tags_sized_to_count);
    suite_add_tcase(s, tc);
    return s;
}
