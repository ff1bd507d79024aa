/* libFuzzer target: every EC2, IAM and STS XML response parser over the same input (IAM's
 * instance profiles: GetInstanceProfile, CreateInstanceProfile, ListInstanceProfiles). */
#include <libxml/parser.h>
#include <stddef.h>
#include <stdint.h>

#include "scaler/aws/ec2xml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *x = (const char *)data;
    char next[256];
    nw_err_t err = {0};
    nw_ec2xml_error_t e;
    (void)nw_ec2xml_parse_error(x, size, &e, &err);
    nw_ec2_itypes_t it = {0};
    (void)nw_ec2xml_parse_instance_types(x, size, &it, next, sizeof next, &err);
    nw_ec2xml_itypes_free(&it);
    nw_ec2_offerings_t of = {0};
    (void)nw_ec2xml_parse_offerings(x, size, &of, next, sizeof next, &err);
    nw_ec2xml_offerings_free(&of);
    nw_ec2_spot_prices_t sp = {0};
    (void)nw_ec2xml_parse_spot_prices(x, size, &sp, next, sizeof next, &err);
    nw_ec2xml_spot_prices_free(&sp);
    nw_ec2_zones_t z = {0};
    (void)nw_ec2xml_parse_zones(x, size, &z, &err);
    nw_ec2xml_zones_free(&z);
    nw_ec2_subnets_t sn = {0};
    (void)nw_ec2xml_parse_subnets(x, size, &sn, next, sizeof next, &err);
    nw_ec2xml_subnets_free(&sn);
    nw_ec2_sgs_t sg = {0};
    (void)nw_ec2xml_parse_sgs(x, size, &sg, next, sizeof next, &err);
    nw_ec2xml_sgs_free(&sg);
    nw_ec2_images_t im = {0};
    (void)nw_ec2xml_parse_images(x, size, &im, next, sizeof next, &err);
    nw_ec2xml_images_free(&im);
    nw_ec2_lts_t lt = {0};
    (void)nw_ec2xml_parse_launch_templates(x, size, &lt, next, sizeof next, &err);
    nw_ec2xml_lts_free(&lt);
    nw_ec2_instances_t in = {0};
    (void)nw_ec2xml_parse_instances(x, size, &in, next, sizeof next, &err);
    nw_ec2xml_instances_free(&in);
    nw_ec2_istatuses_t is = {0};
    (void)nw_ec2xml_parse_instance_status(x, size, &is, next, sizeof next, &err);
    nw_ec2xml_istatuses_free(&is);
    nw_ec2_state_changes_t sc = {0};
    (void)nw_ec2xml_parse_terminate(x, size, &sc, &err);
    nw_ec2xml_state_changes_free(&sc);
    nw_ec2_fleet_result_t fr = {0};
    (void)nw_ec2xml_parse_fleet(x, size, &fr, &err);
    nw_ec2xml_fleet_result_free(&fr);
    nw_ec2_pgs_t pg = {0};
    (void)nw_ec2xml_parse_placement_groups(x, size, &pg, &err);
    nw_ec2xml_pgs_free(&pg);
    nw_ec2_crs_t cr = {0};
    (void)nw_ec2xml_parse_capacity_reservations(x, size, &cr, next, sizeof next, &err);
    nw_ec2xml_crs_free(&cr);
    nw_iam_profiles_t ip = {0};
    (void)nw_ec2xml_parse_iam_profiles(x, size, &ip, next, sizeof next, &err);
    nw_ec2xml_iam_profiles_free(&ip);
    nw_sts_result_t st;
    (void)nw_ec2xml_parse_sts(x, size, &st, &err);
    (void)nw_ec2xml_expect_root(x, size, "CreateTagsResponse", &err);
    return 0;
}
