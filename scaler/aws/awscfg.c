/* scaler/aws/awscfg.c — region and endpoint resolution; see awscfg.h. */
#include "scaler/aws/awscfg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *nonempty(const char *s)
{
    return s && *s ? s : NULL;
}

static NW_MUST_USE nw_rc_t pick(char *out, size_t len, const char *field, const char *explicit_v,
                                const char *env1, const char *env2, nw_err_t *err)
{
    const char *v = nonempty(explicit_v);
    if (!v && env1)
        v = nonempty(getenv(env1));
    if (!v && env2)
        v = nonempty(getenv(env2));
    out[0] = 0;
    if (!v)
        return NW_OK;
    if (strncmp(v, "http://", 7) != 0 && strncmp(v, "https://", 8) != 0)
        return nw_err_set(err, NW_EINVAL, field, "endpoint must start with http:// or https://: %s",
                          v);
    snprintf(out, len, "%s", v);
    size_t l = strlen(out);
    while (l > 0 && out[l - 1] == '/')
        out[--l] = 0; /* "http://x:1/" and "http://x:1" are the same endpoint */
    return NW_OK;
}

nw_rc_t nw_awscfg_resolve(nw_awscfg_t *cfg, const nw_awscfg_explicit_t *ex, nw_err_t *err)
{
    nw_awscfg_explicit_t none = {0};
    nw_rc_t rc;
    if (!ex)
        ex = &none;
    memset(cfg, 0, sizeof *cfg);
    const char *r = nonempty(ex->region);
    if (!r)
        r = nonempty(getenv("AWS_REGION"));
    if (!r)
        r = nonempty(getenv("AWS_DEFAULT_REGION"));
    if (r)
        snprintf(cfg->region, sizeof cfg->region, "%s", r);
    if ((rc = pick(cfg->ec2, sizeof cfg->ec2, "aws.endpoints.ec2", ex->ec2, "AWS_ENDPOINT_URL_EC2",
                   "AWS_ENDPOINT_URL", err)) != NW_OK ||
        (rc = pick(cfg->sqs, sizeof cfg->sqs, "aws.endpoints.sqs", ex->sqs, "AWS_ENDPOINT_URL_SQS",
                   "AWS_ENDPOINT_URL", err)) != NW_OK ||
        (rc = pick(cfg->sts, sizeof cfg->sts, "aws.endpoints.sts", ex->sts, "AWS_ENDPOINT_URL_STS",
                   "AWS_ENDPOINT_URL", err)) != NW_OK ||
        (rc = pick(cfg->pricing, sizeof cfg->pricing, "aws.endpoints.pricing", ex->pricing,
                   "AWS_ENDPOINT_URL_PRICING", "AWS_ENDPOINT_URL", err)) != NW_OK ||
        (rc = pick(cfg->iam, sizeof cfg->iam, "aws.endpoints.iam", ex->iam, "AWS_ENDPOINT_URL_IAM",
                   "AWS_ENDPOINT_URL", err)) != NW_OK ||
        (rc = pick(cfg->ssm, sizeof cfg->ssm, "aws.endpoints.ssm", ex->ssm, "AWS_ENDPOINT_URL_SSM",
                   "AWS_ENDPOINT_URL", err)) != NW_OK ||
        (rc = pick(cfg->imds, sizeof cfg->imds, "aws.endpoints.imds", ex->imds,
                   "AWS_EC2_METADATA_SERVICE_ENDPOINT", NULL, err)) != NW_OK)
        return rc;
    if (!cfg->imds[0])
        snprintf(cfg->imds, sizeof cfg->imds, "http://169.254.169.254");
    const char *dis = getenv("AWS_EC2_METADATA_DISABLED");
    cfg->imds_disabled = dis && strcasecmp(dis, "true") == 0;
    cfg->call_timeout_ms = ex->call_timeout_ms > 0 ? ex->call_timeout_ms : 10000;
    if (cfg->region[0])
        nw_awscfg_set_region(cfg, cfg->region);
    return NW_OK;
}

void nw_awscfg_set_region(nw_awscfg_t *cfg, const char *region)
{
    if (region != cfg->region)
        snprintf(cfg->region, sizeof cfg->region, "%s", region);
    if (!cfg->ec2[0])
        snprintf(cfg->ec2, sizeof cfg->ec2, "https://ec2.%s.amazonaws.com", region);
    if (!cfg->sqs[0])
        snprintf(cfg->sqs, sizeof cfg->sqs, "https://sqs.%s.amazonaws.com", region);
    if (!cfg->sts[0])
        snprintf(cfg->sts, sizeof cfg->sts, "https://sts.%s.amazonaws.com", region);
    if (!cfg->ssm[0])
        snprintf(cfg->ssm, sizeof cfg->ssm, "https://ssm.%s.amazonaws.com", region);
    const char *pr = strncmp(region, "ap-", 3) == 0   ? "ap-south-1"
                     : strncmp(region, "cn-", 3) == 0 ? "cn-northwest-1"
                     : strncmp(region, "eu-", 3) == 0 ? "eu-central-1"
                                                      : "us-east-1";
    snprintf(cfg->pricing_region, sizeof cfg->pricing_region, "%s", pr);
    if (!cfg->pricing[0])
        snprintf(cfg->pricing, sizeof cfg->pricing, "https://api.pricing.%s.amazonaws.com", pr);
}
