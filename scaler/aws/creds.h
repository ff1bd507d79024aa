/*
 * scaler/aws/creds.h — AWS credentials in the SDKs' order, refreshed before expiry.
 *
 * Chain (the first that applies wins, as aws-sdk-go-v2 resolves it):
 *   1. environment: AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN);
 *      one without the other is an error;
 *   2. web identity: AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN (+ AWS_ROLE_SESSION_NAME)
 *      through STS AssumeRoleWithWebIdentity (unsigned; the token file is re-read
 *      on every refresh); the file without the role is an error;
 *   3. the selected profile of the shared config files (awsprofile.h), when it
 *      holds credentials (creds_profile.c): static keys, credential_process,
 *      role_arn with web_identity_token_file, source_profile or credential_source
 *      (STS AssumeRole signed with the source's credentials); SSO and MFA keys
 *      are refused naming the key. AWS_PROFILE naming a profile neither file has is
 *      an error; a profile without credentials (only a region, say) lets the chain
 *      go on;
 *   4. container credentials (creds_container.c): AWS_CONTAINER_CREDENTIALS_RELATIVE_URI
 *      (a path on 169.254.170.2, ECS) or AWS_CONTAINER_CREDENTIALS_FULL_URI (the EKS Pod
 *      Identity agent; plain http only to loopback, 169.254.170.2, 169.254.170.23 or
 *      fd00:ec2::23), with AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE (re-read on every
 *      refresh) or AWS_CONTAINER_AUTHORIZATION_TOKEN as the Authorization header;
 *   5. IMDSv2 instance profile: PUT /latest/api/token, GET the role name, GET the
 *      role's credentials (unless AWS_EC2_METADATA_DISABLED=true).
 * Credentials that expire are refreshed NW_CREDS_REFRESH_EARLY_NS before they do,
 * whatever their source (a role's source credentials too). When a refresh fails
 * while the old credentials are still valid, they keep being used (and a warning is
 * logged); once expired, nw_creds_get fails.
 *
 * Secrets never reach the log: messages name the source and the expiry only.
 *
 * Ownership: nw_creds_new/nw_creds_free. nw_creds_value_t is caller storage;
 * wipe it with nw_creds_value_wipe when done.
 * Thread: nw_creds_new reads the environment and the files (main); nw_creds_get is
 * safe from any thread (one mutex; a refresh holds it).
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
    NW_CREDS_PROFILE, /* static keys of a profile */
    NW_CREDS_PROCESS,
    NW_CREDS_ASSUME_ROLE,
    NW_CREDS_CONTAINER,
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

/** Name of a source: "environment", "web-identity", "profile", "process", "assume-role",
 * "container", "imds", "none". */
const char *nw_creds_source_name(nw_creds_source_t s);

/** Pick the source from the environment and the shared config files (no network
 * I/O yet: the first nw_creds_get fetches). NW_ENOTFOUND when no source applies,
 * NW_EINVAL for a source set up wrong (the message names the variable, or the
 * profile, file and key). cfg is copied. */
NW_MUST_USE nw_rc_t nw_creds_new(const nw_awscfg_t *cfg, const nw_clock_t *clock, nw_creds_t **out,
                                 nw_err_t *err);

void nw_creds_free(nw_creds_t *c);

nw_creds_source_t nw_creds_source(const nw_creds_t *c);

/** Where the credentials come from, for messages ("profile dev in /root/.aws/credentials",
 * "role arn:... assumed with profile base", "http://169.254.170.23/v1/credentials");
 * borrowed while c lives. */
const char *nw_creds_describe(const nw_creds_t *c);

/** Current credentials, fetched or refreshed when needed. */
NW_MUST_USE nw_rc_t nw_creds_get(nw_creds_t *c, nw_creds_value_t *out, nw_err_t *err);

/** How many times credentials were fetched (STS, IMDS, a container endpoint, a
 * credential process; a role and its source count one each) (tests, doctor). */
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
