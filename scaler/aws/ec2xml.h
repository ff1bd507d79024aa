/*
 * scaler/aws/ec2xml.h — parsers for EC2 (and STS) Query API XML responses.
 *
 * Pure functions over a byte buffer (libxml2, no network access, no entity
 * expansion), so the module can be fuzzed (tests/fuzz/fuzz_ec2xml.c). Each
 * nw_ec2xml_parse_<what> appends the records of one response page to a list
 * the caller owns and copies NextToken (empty when absent) into next.
 * Malformed XML, or a document whose root is not the expected response,
 * returns NW_EPARSE with a message naming the element.
 *
 * Ownership: every list is caller storage: zero-initialise, fill, then
 * nw_ec2_<list>_free. Strings are fixed-size arrays inside the records
 * (values longer than a field are truncated).
 * Thread: any (libxml2 must have been initialised once with xmlInitParser).
 */
#ifndef NW_SCALER_AWS_EC2XML_H
#define NW_SCALER_AWS_EC2XML_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

#define NW_EC2_ID 64
#define NW_EC2_NAME 256
#define NW_EC2_MAX_TAGS 50

typedef struct {
    char key[128];
    char value[256];
} nw_ec2_tag_t;

/* A resource's tags, up to NW_EC2_MAX_TAGS (AWS's limit per resource), in an array
 * allocated to their count (5,000 instances of a few tags each cost a few MB, not the
 * 100 MB a fixed array of 50 would): freed with the list that holds the resource
 * (nw_ec2xml_*_free) or, for one built by hand, with nw_ec2xml_tags_free. */
typedef struct {
    nw_ec2_tag_t *v;
    int n;
} nw_ec2_tags_t;
void nw_ec2xml_tags_free(nw_ec2_tags_t *t);

/* ---- errors ---- */
typedef struct {
    char code[128];
    char message[512];
    char request_id[96];
} nw_ec2xml_error_t;

/** Parse an EC2 (<Response><Errors><Error>) or STS (<ErrorResponse><Error>)
 * error document. NW_EPARSE when no error code is found. */
NW_MUST_USE nw_rc_t nw_ec2xml_parse_error(const char *xml, size_t len, nw_ec2xml_error_t *out,
                                          nw_err_t *err);

/* ---- DescribePlacementGroups ---- */
typedef struct {
    char id[NW_EC2_ID];
    char name[NW_EC2_NAME];
    char strategy[16]; /* cluster, partition, spread */
    char state[16];
    char spread_level[16];
    int partitions;
} nw_ec2_pg_t;

typedef struct {
    nw_ec2_pg_t *v;
    size_t n, cap;
} nw_ec2_pgs_t;

void nw_ec2xml_pgs_free(nw_ec2_pgs_t *l);
NW_MUST_USE nw_rc_t nw_ec2xml_parse_placement_groups(const char *xml, size_t len, nw_ec2_pgs_t *out,
                                                     nw_err_t *err);

/* ---- DescribeCapacityReservations ---- */
typedef struct {
    char id[NW_EC2_ID];
    char type[NW_EC2_ID];
    char zone[NW_EC2_ID];
    char zone_id[NW_EC2_ID];
    char owner[24];
    char match[16];            /* instanceMatchCriteria: open, targeted */
    char state[24];            /* active, expired, cancelled, ... */
    char reservation_type[24]; /* default, capacity-block ("" = default) */
    int interruptible;
    int64_t available, total;
    int64_t end_ns; /* endDate, wall clock; 0 = none (unlimited) */
} nw_ec2_cr_t;

typedef struct {
    nw_ec2_cr_t *v;
    size_t n, cap;
} nw_ec2_crs_t;

void nw_ec2xml_crs_free(nw_ec2_crs_t *l);
NW_MUST_USE nw_rc_t nw_ec2xml_parse_capacity_reservations(const char *xml, size_t len,
                                                          nw_ec2_crs_t *out, char *next,
                                                          size_t nextlen, nw_err_t *err);

/* ---- IAM instance profiles (GetInstanceProfile, CreateInstanceProfile,
 * ListInstanceProfiles) ---- */
typedef struct {
    char name[129];
    char path[513];
    char arn[640];
    char role[129]; /* its role's name ("" when none; a profile holds at most one) */
} nw_iam_profile_t;

typedef struct {
    nw_iam_profile_t *v;
    size_t n, cap;
} nw_iam_profiles_t;

void nw_ec2xml_iam_profiles_free(nw_iam_profiles_t *l);
/** Append the InstanceProfile of a Get/Create answer, or the InstanceProfiles members of a
 * List page (marker: the next page's Marker when IsTruncated, else ""; nullable). */
NW_MUST_USE nw_rc_t nw_ec2xml_parse_iam_profiles(const char *xml, size_t len,
                                                 nw_iam_profiles_t *out, char *marker,
                                                 size_t marker_len, nw_err_t *err);

/* ---- DescribeInstanceTypes ---- */
typedef struct {
    char name[NW_EC2_ID]; /* "m6i.large" */
    int vcpus;
    int64_t memory_mib;
    char arch[16];             /* first supported architecture: "x86_64", "arm64" */
    char cpu_manufacturer[32]; /* "Intel", "AMD", "AWS" as EC2 reports it */
    double clock_ghz;
    char gpu_name[64];
    char gpu_manufacturer[64];
    int gpu_count;
    int gpu_logical_count;  /* gpuInfo's logicalGpuCount: what EC2 says of fractional GPUs
                               (g6f), whose count is 0; 0 when absent */
    int64_t gpu_memory_mib; /* per GPU */
    char accel_name[64];    /* neuron / inference */
    char accel_manufacturer[64];
    int accel_count;
    int neuron_cores;
    int64_t accel_memory_mib; /* per Neuron device */
    int max_enis;             /* of the default network card */
    int ipv4_per_eni;
    int efa_max;
    int encryption_in_transit;
    int64_t local_nvme_gb;
    int64_t instance_store_gb; /* instanceStorageInfo/totalSizeInGB, NVMe or not */
    char hypervisor[16];
    int bare_metal;
    int spot_supported, on_demand_supported;
    int64_t network_mbps;
    int64_t ebs_mbps;    /* ebsOptimizedInfo.maximumBandwidthInMbps when EBS-optimized by default */
    int network_cards;   /* networkInfo/maximumNetworkCards */
    int card_enis[32];   /* networkCards/item maximumNetworkInterfaces by networkCardIndex */
    int ena_unsupported; /* networkInfo/enaSupport = unsupported */
    int nested_virt;     /* processorInfo/supportedFeatures has nested-virtualization */
    unsigned pg_strategies; /* placementGroupInfo/supportedStrategies: 1 cluster, 2 partition,
                             * 4 spread */
} nw_ec2_itype_t;

typedef struct {
    nw_ec2_itype_t *v;
    size_t n, cap;
} nw_ec2_itypes_t;
void nw_ec2xml_itypes_free(nw_ec2_itypes_t *l);
NW_MUST_USE nw_rc_t nw_ec2xml_parse_instance_types(const char *xml, size_t len,
                                                   nw_ec2_itypes_t *out, char *next, size_t nextlen,
                                                   nw_err_t *err);

/* ---- DescribeInstanceTypeOfferings ---- */
typedef struct {
    char type[NW_EC2_ID];
    char location[NW_EC2_ID];
} nw_ec2_offering_t;
typedef struct {
    nw_ec2_offering_t *v;
    size_t n, cap;
} nw_ec2_offerings_t;
void nw_ec2xml_offerings_free(nw_ec2_offerings_t *l);
NW_MUST_USE nw_rc_t nw_ec2xml_parse_offerings(const char *xml, size_t len, nw_ec2_offerings_t *out,
                                              char *next, size_t nextlen, nw_err_t *err);

/* ---- DescribeSpotPriceHistory ---- */
typedef struct {
    char type[NW_EC2_ID];
    char zone[NW_EC2_ID];
    double price;
    int64_t timestamp_ns;
} nw_ec2_spot_price_t;
typedef struct {
    nw_ec2_spot_price_t *v;
    size_t n, cap;
} nw_ec2_spot_prices_t;
void nw_ec2xml_spot_prices_free(nw_ec2_spot_prices_t *l);
NW_MUST_USE nw_rc_t nw_ec2xml_parse_spot_prices(const char *xml, size_t len,
                                                nw_ec2_spot_prices_t *out, char *next,
                                                size_t nextlen, nw_err_t *err);

/* ---- DescribeAvailabilityZones ---- */
typedef struct {
    char name[NW_EC2_ID];
    char zone_id[NW_EC2_ID];
    char state[32];
} nw_ec2_zone_t;
typedef struct {
    nw_ec2_zone_t *v;
    size_t n, cap;
} nw_ec2_zones_t;
void nw_ec2xml_zones_free(nw_ec2_zones_t *l);
NW_MUST_USE nw_rc_t nw_ec2xml_parse_zones(const char *xml, size_t len, nw_ec2_zones_t *out,
                                          nw_err_t *err);

/* ---- DescribeSubnets ---- */
typedef struct {
    char id[NW_EC2_ID];
    char zone[NW_EC2_ID];
    char zone_id[NW_EC2_ID];
    char vpc_id[NW_EC2_ID];
    int64_t available_ips;
    nw_ec2_tags_t tags;
} nw_ec2_subnet_t;
typedef struct {
    nw_ec2_subnet_t *v;
    size_t n, cap;
} nw_ec2_subnets_t;
void nw_ec2xml_subnets_free(nw_ec2_subnets_t *l);
NW_MUST_USE nw_rc_t nw_ec2xml_parse_subnets(const char *xml, size_t len, nw_ec2_subnets_t *out,
                                            char *next, size_t nextlen, nw_err_t *err);

/* ---- DescribeSecurityGroups ---- */
typedef struct {
    char id[NW_EC2_ID];
    char name[NW_EC2_NAME];
    char vpc_id[NW_EC2_ID];
    nw_ec2_tags_t tags;
} nw_ec2_sg_t;
typedef struct {
    nw_ec2_sg_t *v;
    size_t n, cap;
} nw_ec2_sgs_t;
void nw_ec2xml_sgs_free(nw_ec2_sgs_t *l);
NW_MUST_USE nw_rc_t nw_ec2xml_parse_sgs(const char *xml, size_t len, nw_ec2_sgs_t *out, char *next,
                                        size_t nextlen, nw_err_t *err);

/* ---- DescribeImages ---- */
typedef struct {
    char id[NW_EC2_ID];
    char name[NW_EC2_NAME];
    char arch[16];
    char state[32];
    char owner[NW_EC2_ID];
    int64_t creation_ns;
    int64_t deprecation_ns; /* 0 when not set */
    nw_ec2_tags_t tags;
} nw_ec2_image_t;
typedef struct {
    nw_ec2_image_t *v;
    size_t n, cap;
} nw_ec2_images_t;
void nw_ec2xml_images_free(nw_ec2_images_t *l);
NW_MUST_USE nw_rc_t nw_ec2xml_parse_images(const char *xml, size_t len, nw_ec2_images_t *out,
                                           char *next, size_t nextlen, nw_err_t *err);

/* ---- Create/DescribeLaunchTemplates ---- */
typedef struct {
    char id[NW_EC2_ID];
    char name[NW_EC2_NAME];
    int64_t latest_version;
} nw_ec2_lt_t;
typedef struct {
    nw_ec2_lt_t *v;
    size_t n, cap;
} nw_ec2_lts_t;
void nw_ec2xml_lts_free(nw_ec2_lts_t *l);
/** DescribeLaunchTemplatesResponse, CreateLaunchTemplateResponse and
 * DeleteLaunchTemplateResponse are all accepted. */
NW_MUST_USE nw_rc_t nw_ec2xml_parse_launch_templates(const char *xml, size_t len, nw_ec2_lts_t *out,
                                                     char *next, size_t nextlen, nw_err_t *err);

/* ---- DescribeInstances / RunInstances / CreateFleet instances ---- */
#define NW_EC2_MAX_INSTANCE_SGS 16 /* EC2 allows 5 per interface by default, 16 at most */
typedef struct {
    char id[NW_EC2_ID];
    char type[NW_EC2_ID];
    char image_id[NW_EC2_ID];
    char zone[NW_EC2_ID];
    char zone_id[NW_EC2_ID];
    char state[32];
    char subnet_id[NW_EC2_ID];
    char private_ip[64];
    char lifecycle[32]; /* "spot" or "" */
    char spot_request_id[NW_EC2_ID];
    char capacity_reservation_id[NW_EC2_ID]; /* the reservation it runs in, "" = none */
    int64_t launch_ns;
    nw_ec2_tags_t tags;
    char sg_ids[NW_EC2_MAX_INSTANCE_SGS][NW_EC2_ID]; /* groupSet/item/groupId */
    int nsg;
    char pg_id[NW_EC2_ID]; /* placement/groupId, "" = none */
    int partition;         /* placement/partitionNumber, 0 = none */
    char profile_arn[640]; /* iamInstanceProfile/arn (its path included), "" = none */
} nw_ec2_instance_t;
typedef struct {
    nw_ec2_instance_t *v;
    size_t n, cap;
} nw_ec2_instances_t;
void nw_ec2xml_instances_free(nw_ec2_instances_t *l);
/** DescribeInstancesResponse (reservationSet/item/instancesSet) or
 * RunInstancesResponse (instancesSet). */
NW_MUST_USE nw_rc_t nw_ec2xml_parse_instances(const char *xml, size_t len, nw_ec2_instances_t *out,
                                              char *next, size_t nextlen, nw_err_t *err);

/* ---- DescribeInstanceStatus ---- */
#define NW_EC2_MAX_STATUS_CHECKS 12
typedef struct {
    char category[16]; /* "instance", "system" (status check details) or "event" */
    char name[64];     /* the check ("reachability") or the event code ("system-reboot") */
    char status[32];   /* "passed", "failed", "insufficient-data", "initializing"; events: "" */
    int64_t impaired_since_ns; /* 0 when absent */
    int64_t not_before_ns;     /* events: the scheduled start; 0 when absent */
} nw_ec2_status_check_t;
typedef struct {
    char id[NW_EC2_ID];
    char zone[NW_EC2_ID];
    char state[32];           /* instanceState/name */
    char instance_status[32]; /* summary: "ok", "impaired", "insufficient-data", ... */
    char system_status[32];
    nw_ec2_status_check_t checks[NW_EC2_MAX_STATUS_CHECKS];
    int nchecks;
} nw_ec2_istatus_t;
typedef struct {
    nw_ec2_istatus_t *v;
    size_t n, cap;
} nw_ec2_istatuses_t;
void nw_ec2xml_istatuses_free(nw_ec2_istatuses_t *l);
/** DescribeInstanceStatusResponse (instanceStatusSet/item: instanceStatus, systemStatus,
 * eventsSet). */
NW_MUST_USE nw_rc_t nw_ec2xml_parse_instance_status(const char *xml, size_t len,
                                                    nw_ec2_istatuses_t *out, char *next,
                                                    size_t nextlen, nw_err_t *err);

/* ---- TerminateInstances ---- */
typedef struct {
    char id[NW_EC2_ID];
    char current[32];
    char previous[32];
} nw_ec2_state_change_t;
typedef struct {
    nw_ec2_state_change_t *v;
    size_t n, cap;
} nw_ec2_state_changes_t;
void nw_ec2xml_state_changes_free(nw_ec2_state_changes_t *l);
NW_MUST_USE nw_rc_t nw_ec2xml_parse_terminate(const char *xml, size_t len,
                                              nw_ec2_state_changes_t *out, nw_err_t *err);

/* ---- CreateFleet (instant) ---- */
typedef struct {
    char instance_id[NW_EC2_ID];
    char type[NW_EC2_ID];
    char zone[NW_EC2_ID];
    char subnet_id[NW_EC2_ID];
    char image_id[NW_EC2_ID];
    char lifecycle[32];    /* "spot" / "on-demand" */
    char lt_id[NW_EC2_ID]; /* launchTemplateAndOverrides.launchTemplateSpecification */
} nw_ec2_fleet_instance_t;
typedef struct {
    char code[128];
    char message[512];
    char type[NW_EC2_ID];
    char zone[NW_EC2_ID];
    char subnet_id[NW_EC2_ID];
    char lifecycle[32];
    char lt_id[NW_EC2_ID]; /* the override's launch template */
} nw_ec2_fleet_error_t;
typedef struct {
    char fleet_id[NW_EC2_ID];
    nw_ec2_fleet_instance_t *inst;
    size_t ninst, capinst;
    nw_ec2_fleet_error_t *errs;
    size_t nerrs, caperrs;
} nw_ec2_fleet_result_t;
void nw_ec2xml_fleet_result_free(nw_ec2_fleet_result_t *r);
NW_MUST_USE nw_rc_t nw_ec2xml_parse_fleet(const char *xml, size_t len, nw_ec2_fleet_result_t *out,
                                          nw_err_t *err);

/* ---- simple responses: CreateTags/DeleteLaunchTemplate return <return>true</return> ---- */
/** Check the root element is `<root>` (e.g. "CreateTagsResponse"). */
NW_MUST_USE nw_rc_t nw_ec2xml_expect_root(const char *xml, size_t len, const char *root,
                                          nw_err_t *err);

/* ---- STS ---- */
typedef struct {
    char access_key_id[128];
    char secret_access_key[128];
    char session_token[4096];
    int64_t expiration_ns;
    char arn[512];    /* AssumedRoleUser/Arn or GetCallerIdentity Arn */
    char account[32]; /* GetCallerIdentity only */
    char user_id[256];
} nw_sts_result_t;
/** AssumeRoleWithWebIdentityResponse, AssumeRoleResponse or GetCallerIdentityResponse. */
NW_MUST_USE nw_rc_t nw_ec2xml_parse_sts(const char *xml, size_t len, nw_sts_result_t *out,
                                        nw_err_t *err);

#endif
