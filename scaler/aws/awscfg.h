/*
 * scaler/aws/awscfg.h — region and endpoints, resolved the way the AWS SDKs do.
 *
 * Region: explicit value (config file) > AWS_REGION > AWS_DEFAULT_REGION > the
 * `region` of the selected profile in the shared config files (awsprofile.h)
 * (> IMDS placement/region, which the callers ask when the region is still empty).
 * Endpoints, per service: explicit value > AWS_ENDPOINT_URL_<SERVICE>
 * (EC2, SQS, STS, PRICING, IAM, SSM) > AWS_ENDPOINT_URL > https://<service>.<region>.amazonaws.com;
 * the Pricing API's default is https://api.pricing.<pricing region>.amazonaws.com, its
 * region the one aws/karpenter-provider-aws pkg/providers/pricing/pricing.go NewAPI
 * picks: ap-south-1 for ap-*, cn-northwest-1 for cn-*, eu-central-1 for eu-*, else
 * us-east-1 (signed for that region also at an explicit endpoint).
 * IMDS: explicit value > AWS_EC2_METADATA_SERVICE_ENDPOINT > http://169.254.169.254;
 * AWS_EC2_METADATA_DISABLED=true turns IMDS off.
 * Network (awshttp.h): AWS_CA_BUNDLE > the profile's `ca_bundle`, a PEM file that must
 * hold at least one certificate; HTTPS_PROXY > https_proxy, HTTP_PROXY > http_proxy,
 * NO_PROXY > no_proxy (a proxy value without a scheme is http://). Resolving installs
 * them process-wide (nw_awshttp_set_net).
 *
 * Ownership: plain value struct, caller storage.
 * Thread: nw_awscfg_resolve reads the environment and sets the process-wide network
 * settings: call it from main, before threads make AWS calls.
 */
#ifndef NW_SCALER_AWS_AWSCFG_H
#define NW_SCALER_AWS_AWSCFG_H

#include "common/err.h"
#include "scaler/aws/awshttp.h"

/* Where ECS serves task credentials (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI is a path
 * on it); a field of nw_awscfg_t only so that tests can point it elsewhere. */
#define NW_AWSCFG_ECS_BASE "http://169.254.170.2"

typedef struct {
    char region[64];
    char ec2[512];
    char sqs[512];
    char sts[512];
    char imds[512];
    char pricing[512];
    char iam[512]; /* "" = the partition's global endpoint (scaler/aws/iam.h) */
    char ssm[512];
    char pricing_region[64]; /* where the Pricing API is asked (see above) */
    int imds_disabled;
    long call_timeout_ms; /* per HTTP exchange; default 10000 */
    char ecs_base[128];   /* NW_AWSCFG_ECS_BASE */
    nw_awshttp_net_t net; /* CA bundle and proxies (installed by resolve) */
} nw_awscfg_t;

/** Explicit settings (any may be NULL or "") from the config file. */
typedef struct {
    const char *region;
    const char *ec2, *sqs, *sts, *imds;
    long call_timeout_ms;
    const char *pricing;
    const char *iam;
    const char *ssm;
} nw_awscfg_explicit_t;

/** Resolve cfg from ex (may be NULL), the environment and the shared config files.
 * Endpoints that need a region are left empty while the region is unknown;
 * nw_awscfg_set_region fills them later. NW_EINVAL for an endpoint that is not
 * http(s)://, a CA bundle that cannot be read or holds no certificate, a proxy URL
 * that is not one; NW_EPARSE for a malformed shared config file. */
NW_MUST_USE nw_rc_t nw_awscfg_resolve(nw_awscfg_t *cfg, const nw_awscfg_explicit_t *ex,
                                      nw_err_t *err);

/** Set the region (e.g. from IMDS) and fill the endpoints still empty. */
void nw_awscfg_set_region(nw_awscfg_t *cfg, const char *region);

#endif
