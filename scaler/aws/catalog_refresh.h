/*
 * scaler/aws/catalog_refresh.h — replace the instance catalog (scaler/cloud/catalog.h)
 * from the EC2 API: DescribeInstanceTypes (hvm, x86_64 and arm64),
 * DescribeInstanceTypeOfferings, DescribeAvailabilityZones and DescribeSpotPriceHistory
 * (optional: without it spot is priced like on-demand).
 *
 * Ownership: the catalog stays the caller's. Thread: the catalog's owner.
 */
#ifndef NW_SCALER_AWS_CATALOG_REFRESH_H
#define NW_SCALER_AWS_CATALOG_REFRESH_H

#include "common/err.h"
#include "scaler/aws/ec2.h"
#include "scaler/cloud/catalog.h"

/** Refresh types, offerings and spot prices from the EC2 API. On-demand prices
 * of known types are kept; new types get price 0 unless priced already. On
 * failure the catalog is unchanged. */
nw_rc_t nw_catalog_refresh(nw_catalog_t *c, nw_ec2_t *ec2, nw_err_t *err);

#endif
