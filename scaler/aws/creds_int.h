/*
 * scaler/aws/creds_int.h — what the credential files of scaler/aws share: one
 * provider per source (a role's provider holds the provider of its source
 * credentials), its cache, and the fetch of each kind.
 *
 * creds.c: the chain, the cache and refresh of every provider, IMDS; creds_prov.c:
 * making providers (the environment's keys, IMDS); creds_role.c: STS
 * AssumeRoleWithWebIdentity and AssumeRole; creds_process.c: credential_process;
 * creds_container.c: the container endpoints; creds_profile.c: a profile of the
 * shared config files turned into a provider. Calls go one way (creds.c at the top,
 * creds_process.c and creds_role.c at the bottom), so the fetchers get what they
 * need as arguments: AssumeRole is given its source's credentials.
 *
 * Ownership: a provider owns its argv and its source; nw_creds_prov_free frees (and
 * wipes) the tree.
 * Thread: a provider is used under its nw_creds_t's mutex only.
 */
#ifndef NW_SCALER_AWS_CREDS_INT_H
#define NW_SCALER_AWS_CREDS_INT_H

#include "scaler/aws/awsprofile.h"
#include "scaler/aws/creds.h"

/* What a fetch needs besides its provider. */
typedef struct {
    const nw_awscfg_t *cfg;
    const nw_clock_t *clock;
    long *fetches; /* counted atomically */
} nw_creds_ctx_t;

typedef struct nw_creds_prov nw_creds_prov_t;
struct nw_creds_prov {
    nw_creds_source_t kind;
    char what[2048];        /* where from, for messages (nw_creds_describe) */
    nw_creds_value_t fixed; /* NW_CREDS_ENV, NW_CREDS_PROFILE: the keys */
    /* NW_CREDS_WEB_IDENTITY, NW_CREDS_ASSUME_ROLE */
    char role_arn[512], session_name[128], external_id[1300], token_file[1024];
    int duration_s;                         /* NW_CREDS_ASSUME_ROLE: DurationSeconds (0: 3600) */
    char **argv;                            /* NW_CREDS_PROCESS: the command line, split (owned) */
    char url[1200];                         /* NW_CREDS_CONTAINER: the endpoint */
    char auth_token[4096], auth_file[1024]; /* ... its Authorization value or file */
    nw_creds_prov_t *source;                /* NW_CREDS_ASSUME_ROLE: who signs AssumeRole (owned) */
    nw_creds_value_t cur;                   /* the last credentials fetched */
    int have;
};

/* ---- creds_prov.c --------------------------------------------------------------------- */

/** A zeroed provider of kind (NULL when out of memory). */
nw_creds_prov_t *nw_creds_prov_new(nw_creds_source_t kind);

/** Free (after wiping) p, its argv and its source. NULL-safe. */
void nw_creds_prov_free(nw_creds_prov_t *p);

/** The static keys of the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
 * AWS_SESSION_TOKEN) as a provider; *out NULL when neither key is set, NW_EINVAL when
 * only one is. */
NW_MUST_USE nw_rc_t nw_creds_prov_env(nw_creds_prov_t **out, nw_err_t *err);

/** The instance profile through IMDSv2; NW_EINVAL when IMDS is disabled. */
NW_MUST_USE nw_rc_t nw_creds_prov_imds(const nw_awscfg_t *cfg, nw_creds_prov_t **out,
                                       nw_err_t *err);

/** A role session name when none is configured: "nodewarden-<unix seconds>". */
void nw_creds_prov_session_name(const nw_clock_t *clock, char *out, size_t len);

/* ---- creds_role.c --------------------------------------------------------------------- */

/** STS AssumeRoleWithWebIdentity with p->token_file (read now) for p->role_arn. */
NW_MUST_USE nw_rc_t nw_creds_role_web_identity(const nw_creds_ctx_t *x, nw_creds_prov_t *p,
                                               nw_creds_value_t *v, nw_err_t *err);

/** STS AssumeRole of p->role_arn, signed with src (p->source's credentials). */
NW_MUST_USE nw_rc_t nw_creds_role_assume(const nw_creds_ctx_t *x, nw_creds_prov_t *p,
                                         const nw_creds_value_t *src, nw_creds_value_t *v,
                                         nw_err_t *err);

/* ---- creds_process.c ------------------------------------------------------------------ */

/** Split a credential_process command line as a shell splits words (blanks separate;
 * '...' keeps everything, "..." and a backslash escape), without expanding anything.
 * *argv is NULL-terminated and owned (nw_creds_process_argv_free). */
NW_MUST_USE nw_rc_t nw_creds_process_split(const char *cmd, char ***argv, nw_err_t *err);

void nw_creds_process_argv_free(char **argv);

/** Run p->argv and read the credentials it prints (Version 1 JSON). */
NW_MUST_USE nw_rc_t nw_creds_process_fetch(const nw_creds_ctx_t *x, nw_creds_prov_t *p,
                                           nw_creds_value_t *v, nw_err_t *err);

/* ---- creds_container.c ---------------------------------------------------------------- */

/** The container provider the environment describes (the relative URI on
 * cfg->ecs_base first, then the full URI, whose host must be allowed); *out NULL when
 * neither variable is set. */
NW_MUST_USE nw_rc_t nw_creds_container_from_env(const nw_awscfg_t *cfg, nw_creds_prov_t **out,
                                                nw_err_t *err);

/** GET the endpoint (the token file re-read now) and read the credentials. */
NW_MUST_USE nw_rc_t nw_creds_container_fetch(const nw_creds_ctx_t *x, nw_creds_prov_t *p,
                                             nw_creds_value_t *v, nw_err_t *err);

/* ---- creds_profile.c ------------------------------------------------------------------ */

/** The provider profile describes in set (which must have it); *out NULL when the
 * profile holds no credentials. NW_EINVAL naming the profile, file and key for keys
 * that do not fit together, that nodewarden refuses (SSO, MFA), or a source_profile
 * loop. */
NW_MUST_USE nw_rc_t nw_creds_profile_provider(const nw_awscfg_t *cfg, const nw_clock_t *clock,
                                              const nw_awsprofile_set_t *set, const char *profile,
                                              nw_creds_prov_t **out, nw_err_t *err);

#endif
