/*
 * scaler/aws/creds.h — AWS credentials in the SDKs' order, refreshed before expiry.
 *
 * Chain (first that applies wins, as aws-sdk-go-v2 resolves it):
 *   1. environment: AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN);
 *   2. web identity: AWS_ROLE_ARN + AWS_WEB_IDENTITY_TOKEN_FILE (+ AWS_ROLE_SESSION_NAME)
 *      through STS AssumeRoleWithWebIdentity (unsigned; the token file is re-read
 *      on every refresh);
 *   3. IMDSv2 instance profile: PUT /latest/api/token, GET the role name, GET the
 *      role's credentials (unless AWS_EC2_METADATA_DISABLED=true).
 * Temporary credentials are refreshed NW_CREDS_REFRESH_EARLY_NS before they
 * expire. When a refresh fails while the old credentials are still valid, they
 * keep being used (and a warning is logged); once expired, nw_creds_get fails.
 *
 * Secrets never reach the log: messages name the source and the expiry only.
 *
 * Ownership: nw_creds_new/nw_creds_free. nw_creds_value_t is caller storage;
 * wipe it with nw_creds_value_wipe when done.
 * Thread: nw_creds_get is safe from any thread (one mutex; a refresh holds it).
 */
#ifndef NW_SCALER_AWS_CREDS_H
#define NW_SCALER_AWS_CREDS_H

#include <stdint.h>

#include "common/clock.h"
#include "common/err.h"
#include "scaler/aws/awscfg.h"
#include "scaler/aws/ec2xml.h"

#define NW_CREDS_REFRESH_EARLY_NS (5 * 60 * NW_NS_PER_SEC)

typedef enum {
    NW_CREDS_NONE = 0,
    NW_CREDS_ENV,
    NW_CREDS_WEB_IDENTITY,
    NW_CREDS_IMDS,
} nw_creds_source_t;

typedef struct {
    char access_key_id[128];
    char secret_access_key[128];
    char session_token[4096]; /* "" for long-term keys */
    int64_t expires_ns;       /* 0: never expires */
    nw_creds_source_t source;
} nw_creds_value_t;

typedef struct nw_creds nw_creds_t;

/** Name of a source: "environment", "web-identity", "imds", "none". */
const char *nw_creds_source_name(nw_creds_source_t s);

/** Pick the source from the environment (no network I/O yet: the first
 * nw_creds_get fetches). NW_ENOTFOUND when no source applies (names what is
 * missing). cfg is copied. */
NW_MUST_USE nw_rc_t nw_creds_new(const nw_awscfg_t *cfg, const nw_clock_t *clock, nw_creds_t **out,
                                 nw_err_t *err);

void nw_creds_free(nw_creds_t *c);

nw_creds_source_t nw_creds_source(const nw_creds_t *c);

/** Current credentials, fetched or refreshed when needed. */
NW_MUST_USE nw_rc_t nw_creds_get(nw_creds_t *c, nw_creds_value_t *out, nw_err_t *err);

/** How many times credentials were fetched from STS/IMDS (tests, doctor). */
long nw_creds_fetch_count(const nw_creds_t *c);

/** Overwrite the secret fields with zeros. */
void nw_creds_value_wipe(nw_creds_value_t *v);

/** GET an IMDSv2 path (e.g. "/latest/meta-data/placement/region") into out. */
NW_MUST_USE nw_rc_t nw_creds_imds_get(const nw_awscfg_t *cfg, const char *path, char *out,
                                      size_t outlen, nw_err_t *err);

/** STS GetCallerIdentity signed with creds (arn, account, user_id filled). */
NW_MUST_USE nw_rc_t nw_creds_sts_caller_identity(const nw_awscfg_t *cfg, nw_creds_t *creds,
                                                 const nw_clock_t *clock, nw_sts_result_t *out,
                                                 nw_err_t *err);

#endif
