/* scaler/aws/awscfg.c — region and endpoint resolution; see awscfg.h. */
#include "scaler/aws/awscfg.h"

#include <curl/curl.h>
#include <errno.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "scaler/aws/awsprofile.h"

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

/* The first of the variables that is set, or NULL. */
static const char *env2(const char *a, const char *b)
{
    const char *v = nonempty(getenv(a));
    return v ? v : nonempty(getenv(b));
}

/* A CA bundle must be readable and hold at least one PEM certificate. */
static NW_MUST_USE nw_rc_t check_ca_bundle(const char *path, const char *from, nw_err_t *err)
{
    BIO *b = BIO_new_file(path, "r");
    if (!b)
        return nw_err_set(err, NW_EINVAL, from, "%s: cannot read %s: %s", from, path,
                          strerror(errno ? errno : ENOENT));
    int n = 0;
    X509 *x;
    while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL) {
        X509_free(x);
        n++;
    }
    ERR_clear_error();
    BIO_free(b);
    if (n == 0)
        return nw_err_set(err, NW_EINVAL, from, "%s: %s holds no PEM certificate", from, path);
    return NW_OK;
}

/* A proxy variable's value must be a URL libcurl can use (a bare host:port is http). */
static NW_MUST_USE nw_rc_t check_proxy(const char *name, const char *v, nw_err_t *err)
{
    CURLU *u = curl_url();
    char *scheme = NULL;
    nw_rc_t rc = NW_OK;
    if (!u)
        return nw_err_set(err, NW_ENOMEM, name, "out of memory");
    if (curl_url_set(u, CURLUPART_URL, v, CURLU_GUESS_SCHEME | CURLU_NON_SUPPORT_SCHEME) !=
            CURLUE_OK ||
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK)
        rc = nw_err_set(err, NW_EINVAL, name, "%s is not a proxy URL: %s", name, v);
    else if (strcasecmp(scheme, "http") != 0 && strcasecmp(scheme, "https") != 0 &&
             strcasecmp(scheme, "socks5") != 0 && strcasecmp(scheme, "socks5h") != 0)
        rc = nw_err_set(err, NW_EINVAL, name,
                        "%s: proxy scheme %s is not http, https, socks5 or socks5h", name, scheme);
    curl_free(scheme);
    curl_url_cleanup(u);
    return rc;
}

/* The region and CA bundle of the selected profile, the proxies of the environment. */
static NW_MUST_USE nw_rc_t resolve_profile_and_net(nw_awscfg_t *cfg, nw_err_t *err)
{
    nw_awsprofile_set_t *ps = NULL;
    nw_rc_t rc = nw_awsprofile_load(&ps, err);
    if (rc != NW_OK)
        return rc;
    const char *prof = nw_awsprofile_selected(NULL);
    const char *region = nw_awsprofile_get(ps, prof, "region", NULL);
    if (!cfg->region[0] && region && *region)
        snprintf(cfg->region, sizeof cfg->region, "%s", region);
    const char *cafile = NULL;
    const char *ca = nonempty(getenv("AWS_CA_BUNDLE"));
    char where[1400] = "AWS_CA_BUNDLE";
    if (!ca && (ca = nonempty(nw_awsprofile_get(ps, prof, "ca_bundle", &cafile))) != NULL)
        snprintf(where, sizeof where, "ca_bundle of profile %s in %s", prof, cafile);
    nw_awshttp_net_t *n = &cfg->net;
    if (ca && strncmp(ca, "~/", 2) == 0 && getenv("HOME"))
        snprintf(n->ca_bundle, sizeof n->ca_bundle, "%s/%s", getenv("HOME"), ca + 2);
    else if (ca)
        snprintf(n->ca_bundle, sizeof n->ca_bundle, "%s", ca);
    if (n->ca_bundle[0])
        rc = check_ca_bundle(n->ca_bundle, where, err);
    nw_awsprofile_free(ps);
    const char *hp = env2("HTTP_PROXY", "http_proxy"), *sp = env2("HTTPS_PROXY", "https_proxy");
    const char *np = env2("NO_PROXY", "no_proxy");
    snprintf(n->http_proxy, sizeof n->http_proxy, "%s", hp ? hp : "");
    snprintf(n->https_proxy, sizeof n->https_proxy, "%s", sp ? sp : "");
    snprintf(n->no_proxy, sizeof n->no_proxy, "%s", np ? np : "");
    if (rc == NW_OK && hp)
        rc = check_proxy(
            getenv("HTTP_PROXY") && *getenv("HTTP_PROXY") ? "HTTP_PROXY" : "http_proxy", hp, err);
    if (rc == NW_OK && sp)
        rc = check_proxy(getenv("HTTPS_PROXY") && *getenv("HTTPS_PROXY") ? "HTTPS_PROXY"
                                                                         : "https_proxy",
                         sp, err);
    return rc;
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
    snprintf(cfg->ecs_base, sizeof cfg->ecs_base, "%s", NW_AWSCFG_ECS_BASE);
    if ((rc = resolve_profile_and_net(cfg, err)) != NW_OK)
        return rc;
    nw_awshttp_set_net(&cfg->net);
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
