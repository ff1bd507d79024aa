/*
 * scaler/aws/catalog_refresh.h — replace the instance catalog (scaler/cloud/catalog.h)
 * and its prices from the AWS APIs: DescribeInstanceTypes (hvm, x86_64 and arm64),
 * DescribeInstanceTypeOfferings, DescribeAvailabilityZones, DescribeSpotPriceHistory and
 * the Pricing API (pricing.h). The AWS cloud (cloud.h) runs each on its own period.
 *
 * Ownership: the catalog stays the caller's. Thread: the catalog's owner.
 */
#ifndef NW_SCALER_AWS_CATALOG_REFRESH_H
#define NW_SCALER_AWS_CATALOG_REFRESH_H

#include "common/err.h"
#include "scaler/aws/ec2.h"
#include "scaler/aws/pricing.h"
#include "scaler/cloud/catalog.h"

/** Replace the types and their offerings per zone (DescribeInstanceTypes: hvm, x86_64 and
 * arm64; DescribeInstanceTypeOfferings by zone; DescribeAvailabilityZones for zone ids),
 * priced from the catalog's price tables; a type neither table prices is logged (its
 * offerings are not available). On failure (or no types) the catalog is unchanged. */
NW_MUST_USE nw_rc_t nw_catalog_refresh_types(nw_catalog_t *c, nw_ec2_t *ec2, nw_err_t *err);
/** Merge the latest spot prices (DescribeSpotPriceHistory, StartTime now, newest record
 * per type and zone), as pricing.go UpdateSpotPricing; none found is a failure. */
NW_MUST_USE nw_rc_t nw_catalog_refresh_spot(nw_catalog_t *c, nw_ec2_t *ec2, nw_err_t *err);
/** Merge the region's on-demand prices from the Pricing API (pricing.h). */
NW_MUST_USE nw_rc_t nw_catalog_refresh_od(nw_catalog_t *c, nw_pricing_t *p, nw_err_t *err);
/* The same in two steps, so that the calls can run on another thread than the catalog's
 * (the AWS cloud's refresher, cloud.h): fetch (no catalog), then apply (the catalog's
 * thread; it takes types and logs what changed). */
NW_MUST_USE nw_rc_t nw_catalog_refresh_fetch_types(nw_ec2_t *ec2, nw_itype_t **types, size_t *n,
                                                   nw_err_t *err);
void nw_catalog_refresh_apply_types(nw_catalog_t *c, nw_itype_t *types, size_t n);
NW_MUST_USE nw_rc_t nw_catalog_refresh_fetch_spot(nw_ec2_t *ec2, nw_price_t **p, size_t *n,
                                                  nw_err_t *err);
/** Merge fetched prices: spot (1) or on-demand (0). */
NW_MUST_USE nw_rc_t nw_catalog_refresh_apply_prices(nw_catalog_t *c, int spot, const nw_price_t *p,
                                                    size_t n, nw_err_t *err);

/** One catalog type from EC2's description of it (t is overwritten): what the refresh
 * stores, exposed for the tests. A GPU EC2 describes with a count of 0 (g6f, p5.4xlarge)
 * is counted as its logicalGpuCount, else 1. */
void nw_catalog_refresh_from_api(const nw_ec2_itype_t *a, nw_itype_t *t);
/** Types (nw_catalog_refresh_types), then spot prices when EC2 answers (a failure there is
 * logged and spot stays priced like on-demand): `nodewarden aws --refresh`. */
NW_MUST_USE nw_rc_t nw_catalog_refresh(nw_catalog_t *c, nw_ec2_t *ec2, nw_err_t *err);

#endif
