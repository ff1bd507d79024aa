/*
 * scaler/aws/cloud.h — the AWS implementation of the provider-neutral cloud
 * (scaler/cloud/cloud.h): launches through CreateFleet (launch.h), the cluster's
 * instances by tag, EC2NodeClass resolution (nodeclass.h), the catalog refreshed from the
 * EC2 API (catalog_refresh.h). EC2's errors, instances and resolved classes are
 * translated into the neutral types here; nothing above this folder sees an EC2 type.
 *
 *   nw_cloud_t *cloud;
 *   nw_aws_cloud_new(&opts, &cloud, &err);
 *   cloud->ops->launch(cloud, &req, &res, &ce, &err);   // see scaler/cloud/cloud.h
 *
 * The `aws` and `doctor` subcommands also reach the EC2 side directly (the accessors
 * below), to print what EC2 said.
 *
 * Ownership: nw_aws_cloud_new / cloud->ops->free. The AWS cloud owns its
 * credentials, EC2 and Pricing clients, catalog, ICE cache, node-class cache, launcher and
 * refresher thread (stopped by free).
 * Thread: as scaler/cloud/cloud.h says: ops->launch and ops->list on any thread (the
 * launch workers), the other operations on the reconcile thread; one mutex guards the
 * node-class cache, the launch templates and the catalog's offerings, and is never held
 * across CreateFleet (it is held across the Describe calls of a node-class resolution and
 * of a launch template's first use). A refresh changes the catalog under that mutex, and
 * its instance types only while no launch is between its plan and its settle.
 * nw_aws_cloud_launch and the accessors are for the CLI's one thread.
 */
#ifndef NW_SCALER_AWS_CLOUD_H
#define NW_SCALER_AWS_CLOUD_H

#include "common/clock.h"
#include "common/err.h"
#include "scaler/aws/awscfg.h"
#include "scaler/aws/creds.h"
#include "scaler/aws/ec2.h"
#include "scaler/aws/launch.h"
#include "scaler/aws/nodeclass.h"
#include "scaler/aws/pricing.h"
#include "scaler/aws/ssm.h"
#include "scaler/cloud/cloud.h"

typedef struct {
    nw_awscfg_t aws;          /* resolved region and endpoints */
    const nw_clock_t *clock;  /* NULL = system clock */
    const char *cluster_name; /* settings.clusterName */
    int refresh_catalog;      /* refresh types, offerings and prices at start and on a period */
    int64_t ice_ttl_ns;       /* 0 = NW_ICE_TTL_NS (3 min) */
    int64_t nodeclass_ttl_ns; /* how long a resolved EC2NodeClass stands before it is resolved
                               * again (its instance profiles cleaned up with it); 0 = 1 min */
    /* refresh periods (aws.refresh.*; 0 = 12 h, Karpenter's pricing and instancetype
     * controllers' requeue) */
    int64_t types_period_ns, od_period_ns, spot_period_ns;
    int isolated_vpc;                /* settings.isolatedVPC: never ask the Pricing API */
    int no_reserved_capacity;        /* the ReservedCapacity gate is off (nodeclass.h) */
    nw_launch_bootstrap_t bootstrap; /* what a generated bootstrap uses (launch.h) */
    /* the cluster's Kubernetes version ("1.31") for amiSelectorTerms aliases (nodeclass.h);
     * NULL: unknown (alias terms then say so). Called under the cloud's lock. */
    nw_rc_t (*k8s_version)(void *ud, char *out, size_t len, nw_err_t *err);
    void *k8s_version_ud;
    /* the kube-system/kube-dns Service's ClusterIP (scaler/aws/launch.h kube_dns); NULL:
     * unknown (IPv4) */
    nw_rc_t (*kube_dns)(void *ud, char *out, size_t len, nw_err_t *err);
    void *kube_dns_ud;
    /* the cluster's service CIDR (scaler/aws/launch.h service_cidr); NULL: only
     * settings.clusterCIDR */
    nw_rc_t (*service_cidr)(void *ud, char *out, size_t len, char *src, size_t srclen,
                            nw_err_t *err);
    void *service_cidr_ud;
} nw_aws_cloud_opts_t;

/** Build the AWS cloud: credentials chain, EC2 and Pricing clients, embedded catalog and
 * prices, ICE cache, node-class cache (1 min TTL; a class whose bootstrap cannot be rendered,
 * e.g. AL2023 without a service CIDR, is not ready: ValidationSucceeded False). With
 * refresh_catalog, instance types and
 * offerings (DescribeInstanceTypes, DescribeInstanceTypeOfferings), spot prices
 * (DescribeSpotPriceHistory) and on-demand prices (pricing.h) are refreshed now and then
 * every period: the calls run on the cloud's own refresher thread (a slow or hanging API
 * never holds up the reconcile loop) and ops->refresh applies what they fetched on the
 * catalog's thread; a failed refresh keeps the last good data (the embedded
 * data before the first success), logs a warning, shows in the metrics
 * (nodewarden_aws_refresh_*) and in nw_aws_cloud_refresh_status, and is tried again after
 * a minute (or its period, when shorter). */
NW_MUST_USE nw_rc_t nw_aws_cloud_new(const nw_aws_cloud_opts_t *o, nw_cloud_t **out, nw_err_t *err);

/** While *abort reads non-zero (the scaler stopping), every EC2 call ends within about a
 * second without further retries (nw_ec2_set_abort); borrowed; call before sharing c. */
void nw_aws_cloud_set_abort(nw_cloud_t *c, const atomic_int *abort);

/** The EC2 client inside an AWS cloud (doctor, tests); borrowed. */
nw_ec2_t *nw_aws_cloud_ec2(nw_cloud_t *c);
nw_creds_t *nw_aws_cloud_creds(nw_cloud_t *c);
/** Refresh the cloud's catalog from the EC2 API now (nw_catalog_refresh). */
NW_MUST_USE nw_rc_t nw_aws_cloud_refresh_catalog(nw_cloud_t *c, nw_err_t *err);
/** Run one refresh now ("instance-types", "on-demand-pricing", "spot-pricing") and record
 * its outcome as the periodic one does (doctor). */
NW_MUST_USE nw_rc_t nw_aws_cloud_refresh_now(nw_cloud_t *c, const char *kind, nw_err_t *err);

typedef struct {
    const char *kind; /* as above */
    int64_t period_ns;
    long ok, failed;
    int failing;       /* the last attempt failed */
    int64_t last_ok_s; /* epoch seconds, 0 = never */
    char error[512];
    size_t count;    /* types in the catalog / prices known */
    size_t unpriced; /* instance-types: types without an on-demand price */
} nw_aws_refresh_status_t;
#define NW_AWS_NREFRESH 3
/** The refreshes' state, out[NW_AWS_NREFRESH] (any thread). */
void nw_aws_cloud_refresh_status(nw_cloud_t *c, nw_aws_refresh_status_t *out);
/** The launcher and the EC2NodeClass cache inside an AWS cloud (the aws subcommand,
 * doctor); borrowed. */
nw_launch_t *nw_aws_cloud_launcher(nw_cloud_t *c);
nw_nodeclass_cache_t *nw_aws_cloud_nodeclasses(nw_cloud_t *c);
/** The EC2-level launch behind ops->launch: with an offline catalog, first offer the zones
 * of req->resolved's subnets; then nw_launch (ae, out as there). */
NW_MUST_USE nw_rc_t nw_aws_cloud_launch(nw_cloud_t *c, const nw_launch_req_t *req,
                                        nw_launch_result_t *out, nw_ec2_error_t *ae, nw_err_t *err);

/* ---- EC2 -> neutral (exposed for tests) ---- */
/** The neutral kind of an EC2 error class. */
nw_cloud_err_kind_t nw_aws_cloud_err_kind(nw_ec2_class_t cls);
/** One DescribeInstances entry as a neutral instance (providerID aws:///<zone>/<id>). */
void nw_aws_cloud_instance(const nw_ec2_instance_t *in, nw_cloud_instance_t *out);

#endif
