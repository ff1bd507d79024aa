/*
 * scaler/aws/cloud.h — the cloud-provider interface the provisioner uses, and
 * its AWS implementation (after Karpenter's pkg/cloudprovider/types.go).
 *
 *   nw_cloud_t *cloud;
 *   nw_aws_cloud_new(&opts, &cloud, &err);
 *   cloud->ops->launch(cloud, &req, &res, &ae, &err);   // res.provider_id
 *   cloud->ops->terminate(cloud, res.provider_id, &err);
 *   cloud->ops->list(cloud, &instances, &err);
 *   cloud->ops->instance_state(cloud, provider_id, state, sizeof state, &err);
 *   const nw_catalog_t *cat = cloud->ops->catalog(cloud);
 *
 * A fake for tests implements the same vtable.
 *
 * Ownership: nw_aws_cloud_new / cloud->ops->free. The AWS cloud owns its
 * credentials, EC2 client, catalog, ICE cache, node-class cache and launcher.
 * Thread: the controller thread; resolve/launch/terminate are not reentrant.
 */
#ifndef NW_SCALER_AWS_CLOUD_H
#define NW_SCALER_AWS_CLOUD_H

#include "common/clock.h"
#include "common/err.h"
#include "scaler/aws/awscfg.h"
#include "scaler/cloud/catalog.h"
#include "scaler/aws/creds.h"
#include "scaler/aws/ec2.h"
#include "scaler/aws/launch.h"
#include "scaler/aws/nodeclass.h"

typedef struct nw_cloud nw_cloud_t;

typedef struct {
    nw_rc_t (*launch)(nw_cloud_t *c, const nw_launch_req_t *req, nw_launch_result_t *out,
                      nw_ec2_error_t *ae, nw_err_t *err);
    nw_rc_t (*terminate)(nw_cloud_t *c, const char *provider_id, nw_err_t *err);
    nw_rc_t (*list)(nw_cloud_t *c, nw_ec2_instances_t *out, nw_err_t *err);
    /** Resolved EC2NodeClass (cached with a TTL); borrowed until the next call. */
    nw_rc_t (*resolve)(nw_cloud_t *c, const cJSON *nodeclass, const nw_nodeclass_resolved_t **out,
                       nw_err_t *err);
    const nw_catalog_t *(*catalog)(nw_cloud_t *c);
    nw_ice_t *(*ice)(nw_cloud_t *c);
    void (*free)(nw_cloud_t *c);
    /** The state ("pending", "running", "shutting-down", ...) of a providerID's instance,
     * asked of EC2 now (DescribeInstances by id, no cache); state holds >= 32 bytes.
     * NW_ENOTFOUND when the instance does not exist or is terminated. */
    nw_rc_t (*instance_state)(nw_cloud_t *c, const char *provider_id, char *state, size_t len,
                              nw_err_t *err);
    /** When the catalog has no offerings (it was not refreshed from the API), offer every
     * type in these zones (the zones of the node classes' subnets); otherwise nothing. The
     * cloud owns its catalog: this is the only way a controller changes it. */
    nw_rc_t (*offer_zones)(nw_cloud_t *c, const nw_catalog_zone_t *zones, int n, nw_err_t *err);
} nw_cloud_ops_t;

struct nw_cloud {
    const nw_cloud_ops_t *ops;
};

typedef struct {
    nw_awscfg_t aws;          /* resolved region and endpoints */
    const nw_clock_t *clock;  /* NULL = system clock */
    const char *cluster_name; /* settings.clusterName */
    int refresh_catalog;      /* ask DescribeInstanceTypes & co. at start */
    int64_t ice_ttl_ns;       /* 0 = NW_ICE_TTL_NS (3 min) */
} nw_aws_cloud_opts_t;

/** Build the AWS cloud: credentials chain, EC2 client, embedded catalog
 * (refreshed from the API when refresh_catalog; a failed refresh is logged
 * and the embedded data serves), ICE cache, node-class cache (1 min TTL). */
nw_rc_t nw_aws_cloud_new(const nw_aws_cloud_opts_t *o, nw_cloud_t **out, nw_err_t *err);

/** The EC2 client inside an AWS cloud (doctor, tests); borrowed. */
nw_ec2_t *nw_aws_cloud_ec2(nw_cloud_t *c);
nw_creds_t *nw_aws_cloud_creds(nw_cloud_t *c);

#endif
