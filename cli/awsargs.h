/*
 * cli/awsargs.h — command-line setup shared by `nodewarden doctor` and
 * `nodewarden aws`: the tool flags those commands add, the configuration
 * (every other flag goes to nw_config_load_args), the resolved AWS region
 * and endpoints (config, then environment, then IMDS for the region), and
 * EC2NodeClass objects read from --nodeclass files (YAML or JSON, multi-doc).
 *
 * Ownership: nw_awsargs_t is caller storage; nw_awsargs_free.
 * Thread: main.
 */
#ifndef NW_CLI_AWSARGS_H
#define NW_CLI_AWSARGS_H

#include <cjson/cJSON.h>
#include <stdbool.h>

#include "common/err.h"
#include "scaler/aws/awscfg.h"
#include "config/config.h"

#define NW_SRV_MAX_POS 64
#define NW_SRV_MAX_NODECLASSES 32

typedef struct {
    nw_config_t cfg;
    nw_awscfg_t aws;
    cJSON *nodeclasses[NW_SRV_MAX_NODECLASSES]; /* owned */
    char nodeclass_src[NW_SRV_MAX_NODECLASSES][256];
    int nnodeclasses;
    const char *pos[NW_SRV_MAX_POS]; /* positional arguments (borrowed from argv) */
    int npos;
    bool json;        /* --output json */
    bool aws_only;    /* --aws-only */
    bool refresh;     /* --refresh */
    int repeat;       /* --repeat N (default 1) */
    long interval_ms; /* --interval-ms */
    const char *nodepool, *nodeclaim, *types, *zones, *capacity_types;
} nw_awsargs_t;

/** Parse argv (argv[0] = subcommand). NW_EINVAL with a message naming the flag
 * or file on bad input. Also initialises libcurl and libxml2 (main thread). */
NW_MUST_USE nw_rc_t nw_awsargs_parse(nw_awsargs_t *a, int argc, char **argv, nw_err_t *err);

void nw_awsargs_free(nw_awsargs_t *a);

/** Split a comma-separated list in place into at most max parts. */
int nw_awsargs_split_commas(char *s, const char **out, int max);

#endif
