/* cli/awsargs.c — flags and setup for doctor and aws; see awsargs.h. */
#include "cli/awsargs.h"

#include <curl/curl.h>
#include <libxml/parser.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/file.h"
#include "common/log.h"
#include "common/yaml.h"
#include "scaler/aws/creds.h"

static NW_MUST_USE nw_rc_t load_nodeclasses(nw_awsargs_t *a, const char *path, nw_err_t *err)
{
    size_t len;
    char *text = nw_file_read(path, (size_t)16 << 20, &len);
    if (!text)
        return nw_err_set(err, NW_EIO, "--nodeclass", "cannot read %s", path);
    cJSON **docs = NULL;
    size_t n = 0;
    nw_err_t e = {0};
    nw_rc_t rc = nw_yaml_load_docs(text, len, &docs, &n, &e);
    free(text);
    if (rc != NW_OK)
        return nw_err_set(err, rc, "--nodeclass", "%s: %s", path, e.msg);
    for (size_t i = 0; i < n; i++) {
        const cJSON *kind = cJSON_GetObjectItemCaseSensitive(docs[i], "kind");
        if (!cJSON_IsString(kind) || strcmp(kind->valuestring, "EC2NodeClass") != 0)
            continue; /* other kinds in the same file are ignored */
        if (a->nnodeclasses == NW_SRV_MAX_NODECLASSES) {
            nw_yaml_docs_free(docs, n);
            return nw_err_set(err, NW_ERANGE, "--nodeclass", "more than %d EC2NodeClasses",
                              NW_SRV_MAX_NODECLASSES);
        }
        snprintf(a->nodeclass_src[a->nnodeclasses], sizeof a->nodeclass_src[0], "%s", path);
        a->nodeclasses[a->nnodeclasses++] = docs[i];
        docs[i] = NULL;
    }
    nw_yaml_docs_free(docs, n);
    return NW_OK;
}

int nw_awsargs_split_commas(char *s, const char **out, int max)
{
    int n = 0;
    while (s && *s && n < max) {
        char *c = strchr(s, ',');
        if (c)
            *c = 0;
        if (*s)
            out[n++] = s;
        s = c ? c + 1 : NULL;
    }
    return n;
}

/* One option that takes a value (arg: its name, val: the value) into a. */
static NW_MUST_USE nw_rc_t apply_value_flag(nw_awsargs_t *a, const char *arg, const char *val,
                                            nw_err_t *err)
{
    if (strcmp(arg, "--nodeclass") == 0) {
        return load_nodeclasses(a, val, err);
    } else if (strcmp(arg, "--output") == 0) {
        if (strcmp(val, "json") != 0 && strcmp(val, "text") != 0)
            return nw_err_set(err, NW_EINVAL, "--output", "--output must be json or text");
        a->json = strcmp(val, "json") == 0;
    } else if (strcmp(arg, "--repeat") == 0 || strcmp(arg, "--interval-ms") == 0) {
        char *end;
        long v = strtol(val, &end, 10);
        if (*end || v < 0 || v > 1000000)
            return nw_err_set(err, NW_EINVAL, arg, "%s: not a number: %s", arg, val);
        if (arg[2] == 'r')
            a->repeat = (int)v;
        else
            a->interval_ms = v;
    } else if (strcmp(arg, "--nodepool") == 0) {
        a->nodepool = val;
    } else if (strcmp(arg, "--nodeclaim") == 0) {
        a->nodeclaim = val;
    } else if (strcmp(arg, "--types") == 0) {
        a->types = val;
    } else if (strcmp(arg, "--zones") == 0) {
        a->zones = val;
    } else {
        a->capacity_types = val;
    }
    return NW_OK;
}

/* The log level and the AWS endpoints and region from the configuration (the region
 * from IMDS when none is given and IMDS is not disabled). */
static NW_MUST_USE nw_rc_t resolve_aws(nw_awsargs_t *a, nw_err_t *err)
{
    nw_log_set_level((nw_log_level_t)nw_log_level_parse(a->cfg.log.level));
    nw_awscfg_explicit_t ex = {
        a->cfg.aws.region,  a->cfg.aws.ec2,
        a->cfg.aws.sqs,     a->cfg.aws.sts,
        a->cfg.aws.imds,    (long)(a->cfg.aws.testing.callTimeout_ns / NW_NS_PER_MS),
        a->cfg.aws.pricing, a->cfg.aws.iam,
        a->cfg.aws.ssm};
    nw_rc_t rc = nw_awscfg_resolve(&a->aws, &ex, err);
    if (rc != NW_OK)
        return rc;
    if (!a->aws.region[0] && !a->aws.imds_disabled) {
        char region[64];
        nw_awscfg_t quick = a->aws;
        quick.call_timeout_ms = 2000;
        nw_err_t e = {0};
        if (nw_creds_imds_get(&quick, "/latest/meta-data/placement/region", region, sizeof region,
                              &e) == NW_OK &&
            region[0])
            nw_awscfg_set_region(&a->aws, region);
    }
    return NW_OK;
}

nw_rc_t nw_awsargs_parse(nw_awsargs_t *a, int argc, char **argv, nw_err_t *err)
{
    static const char *with_value[] = {
        "--nodeclass", "--output",         "--nodepool", "--nodeclaim",   "--types",
        "--zones",     "--capacity-types", "--repeat",   "--interval-ms", NULL};
    memset(a, 0, sizeof *a);
    a->repeat = 1;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    xmlInitParser();
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    if (!rest)
        return nw_err_set(err, NW_ENOMEM, "args", "out of memory");
    int nrest = 0;
    rest[nrest++] = argv[0];
    nw_rc_t rc = NW_OK;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *val = NULL;
        bool matched = false;
        for (int k = 0; with_value[k]; k++) {
            size_t l = strlen(with_value[k]);
            if (strncmp(arg, with_value[k], l) == 0 && (arg[l] == 0 || arg[l] == '=')) {
                matched = true;
                if (arg[l] == '=')
                    val = arg + l + 1;
                else if (i + 1 < argc)
                    val = argv[++i];
                else {
                    rc = nw_err_set(err, NW_EINVAL, with_value[k], "%s needs a value",
                                    with_value[k]);
                    goto out;
                }
                arg = with_value[k];
                break;
            }
        }
        if (matched) {
            if ((rc = apply_value_flag(a, arg, val, err)) != NW_OK)
                goto out;
            continue;
        }
        if (strcmp(arg, "--aws-only") == 0) {
            a->aws_only = true;
        } else if (strcmp(arg, "--refresh") == 0) {
            a->refresh = true;
        } else if (strcmp(arg, "--json") == 0) {
            a->json = true;
        } else if (strncmp(arg, "--", 2) == 0) {
            rest[nrest++] = argv[i];
            /* config flags take a value unless written --key=value */
            if (!strchr(arg, '=') && i + 1 < argc)
                rest[nrest++] = argv[++i];
        } else if (a->npos < NW_SRV_MAX_POS) {
            a->pos[a->npos++] = arg;
        } else {
            rc = nw_err_set(err, NW_EINVAL, "args", "too many arguments");
            goto out;
        }
    }
    if ((rc = nw_config_load_args(&a->cfg, nrest, rest, err)) != NW_OK)
        goto out;
    rc = resolve_aws(a, err);
out:
    free(rest);
    return rc;
}

void nw_awsargs_free(nw_awsargs_t *a)
{
    for (int i = 0; i < a->nnodeclasses; i++)
        cJSON_Delete(a->nodeclasses[i]);
    nw_config_free(&a->cfg);
    memset(a, 0, sizeof *a);
}
