/*
 * scaler/aws/pricing.h — the AWS Price List Query API's GetProducts (AWS JSON 1.1: POST to
 * the pricing endpoint with X-Amz-Target: AWSPriceListService.GetProducts and Content-Type
 * application/x-amz-json-1.1, SigV4 service "pricing") for the on-demand Linux prices of a
 * region, asked as aws/karpenter-provider-aws pkg/providers/pricing/pricing.go
 * UpdateOnDemandPricing asks: two queries (shared tenancy "Compute Instance" and dedicated
 * "Compute Instance (bare metal)"), both filtered on the region, AmazonEC2, Linux, no
 * pre-installed software, capacitystatus Used and marketoption OnDemand; 100 products a
 * page; the price is the OnDemand term's pricePerUnit in USD (CNY in cn- regions).
 *
 * The API lives in a few regions only; the endpoint's region is picked as NewAPI there
 * does (awscfg.h: ap-* -> ap-south-1, cn-* -> cn-northwest-1, eu-* -> eu-central-1, else
 * us-east-1).
 *
 *   nw_pricing_t *p;
 *   nw_pricing_new(&cfg, creds, clock, &p, &err);
 *   nw_price_t *v; size_t n;
 *   nw_pricing_on_demand(p, &v, &n, &ae, &err);   // free(v)
 *
 * Errors: NW_EAWS with the API's code in the nullable nw_sqs_error_t (sqs.h parses the
 * JSON protocol's error shape for both), NW_ETIMEOUT / NW_EIO without a response,
 * NW_EPARSE for a body that is not what the API sends. No retries: the caller's refresh
 * period retries.
 *
 * Ownership: nw_pricing_new/nw_pricing_free; creds and clock are borrowed.
 * Thread: one thread at a time.
 */
#ifndef NW_SCALER_AWS_PRICING_H
#define NW_SCALER_AWS_PRICING_H

#include <stddef.h>

#include "common/clock.h"
#include "common/err.h"
#include "scaler/aws/awscfg.h"
#include "scaler/aws/creds.h"
#include "scaler/aws/sqs.h"
#include "scaler/cloud/catalog.h"

typedef struct nw_pricing nw_pricing_t;

/** A client for cfg's region (its prices) at cfg->pricing (signed for cfg->pricing_region). */
NW_MUST_USE nw_rc_t nw_pricing_new(const nw_awscfg_t *cfg, nw_creds_t *creds,
                                   const nw_clock_t *clock, nw_pricing_t **out, nw_err_t *err);
void nw_pricing_free(nw_pricing_t *p);
/** Page size (1..100; 0 = 100): small pages in tests exercise NextToken. */
void nw_pricing_set_page_size(nw_pricing_t *p, int n);
long nw_pricing_request_count(const nw_pricing_t *p);

/** The region's on-demand prices, one entry per instance type (*out malloc'd, zone "").
 * Fails (nothing returned) when a call fails or either query finds nothing. */
NW_MUST_USE nw_rc_t nw_pricing_on_demand(nw_pricing_t *p, nw_price_t **out, size_t *n,
                                         nw_sqs_error_t *ae, nw_err_t *err);

/** One GetProducts response: append its prices to *v (*n entries, *cap allocated) and
 * copy NextToken into next ("" on the last page). Products without an instanceType or a
 * positive price in currency are skipped; a PriceList entry that is not JSON fails. */
NW_MUST_USE nw_rc_t nw_pricing_parse_page(const char *json, size_t len, const char *currency,
                                          nw_price_t **v, size_t *n, size_t *cap, char *next,
                                          size_t nextlen, nw_err_t *err);

#endif
