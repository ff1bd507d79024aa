/* scaler/aws/creds_profile.c — a profile of the shared config files turned into a
 * credential provider, in the order the SDKs look at its keys; see creds_int.h.
 *
 * With role_arn: web_identity_token_file (AssumeRoleWithWebIdentity), else the
 * credentials of source_profile (its static keys when it has them, else what it
 * describes, roles chained) or of credential_source (Environment, Ec2InstanceMetadata,
 * EcsContainer) sign STS AssumeRole. Without: static keys, then credential_process.
 * Refused, naming the key: IAM Identity Center (sso_*), mfa_serial, more than one of
 * source_profile / credential_source / credential_process / web_identity_token_file,
 * a key that needs another (web_identity_token_file or source_profile without
 * role_arn, one static key without the other), a source_profile loop. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaler/aws/creds_int.h"

#define MAX_CHAIN 8

typedef struct {
    const nw_awscfg_t *cfg;
    const nw_clock_t *clock;
    const nw_awsprofile_set_t *set;
    const char *chain[MAX_CHAIN]; /* the profiles being built, outermost first */
    int depth;
} build_t;

static const char *get(const build_t *b, const char *prof, const char *key)
{
    const char *v = nw_awsprofile_get(b->set, prof, key, NULL);
    return v && *v ? v : NULL;
}

/* "profile "x" in <file of key>" (or of the files) into out, for messages. */
static const char *where(const build_t *b, const char *prof, const char *key, char *out, size_t len)
{
    const char *file = NULL;
    if (!nw_awsprofile_get(b->set, prof, key, &file) || !file)
        file = nw_awsprofile_files(b->set);
    snprintf(out, len, "profile \"%s\" in %s", prof, file);
    return out;
}

static NW_MUST_USE nw_rc_t refuse(const build_t *b, const char *prof, nw_err_t *err)
{
    static const char *const sso[] = {"sso_session", "sso_start_url", "sso_account_id",
                                      "sso_role_name", "sso_region"};
    const char *const counted[] = {"source_profile", "credential_source", "credential_process",
                                   "web_identity_token_file"};
    char w[1200];
    for (size_t i = 0; i < sizeof sso / sizeof sso[0]; i++)
        if (get(b, prof, sso[i]))
            return nw_err_set(err, NW_EINVAL, sso[i],
                              "%s: %s: IAM Identity Center (SSO) sign-in is not supported; "
                              "use static keys, a role, or credential_process = aws configure "
                              "export-credentials --profile %s --format process",
                              where(b, prof, sso[i], w, sizeof w), sso[i], prof);
    if (get(b, prof, "mfa_serial"))
        return nw_err_set(err, NW_EINVAL, "mfa_serial",
                          "%s: mfa_serial: a role that needs an MFA code cannot be assumed "
                          "without someone to type it; use credentials that need none",
                          where(b, prof, "mfa_serial", w, sizeof w));
    const char *first = NULL;
    for (size_t i = 0; i < sizeof counted / sizeof counted[0]; i++) {
        if (!get(b, prof, counted[i]))
            continue;
        if (first)
            return nw_err_set(err, NW_EINVAL, counted[i],
                              "%s: %s and %s are both set; a profile takes one source of "
                              "credentials",
                              where(b, prof, counted[i], w, sizeof w), first, counted[i]);
        first = counted[i];
    }
    return NW_OK;
}

/* The profile's static keys; *out NULL when it has neither. */
static NW_MUST_USE nw_rc_t static_keys(const build_t *b, const char *prof, nw_creds_prov_t **out,
                                       nw_err_t *err)
{
    const char *ak = get(b, prof, "aws_access_key_id"), *sk = get(b, prof, "aws_secret_access_key");
    const char *tok = get(b, prof, "aws_session_token");
    char w[1200];
    *out = NULL;
    if (!ak && !sk)
        return NW_OK;
    if (!ak || !sk)
        return nw_err_set(
            err, NW_EINVAL, ak ? "aws_secret_access_key" : "aws_access_key_id",
            "%s: %s is set but %s is not",
            where(b, prof, ak ? "aws_access_key_id" : "aws_secret_access_key", w, sizeof w),
            ak ? "aws_access_key_id" : "aws_secret_access_key",
            ak ? "aws_secret_access_key" : "aws_access_key_id");
    nw_creds_prov_t *p = nw_creds_prov_new(NW_CREDS_PROFILE);
    if (!p)
        return nw_err_set(err, NW_ENOMEM, "creds", "out of memory");
    snprintf(p->fixed.access_key_id, sizeof p->fixed.access_key_id, "%s", ak);
    snprintf(p->fixed.secret_access_key, sizeof p->fixed.secret_access_key, "%s", sk);
    if (tok)
        snprintf(p->fixed.session_token, sizeof p->fixed.session_token, "%s", tok);
    p->fixed.source = NW_CREDS_PROFILE;
    snprintf(p->what, sizeof p->what, "%s", where(b, prof, "aws_access_key_id", w, sizeof w));
    *out = p;
    return NW_OK;
}

/* A path from the files: "~/" is the home directory. */
static void expand(const char *path, char *out, size_t len)
{
    const char *home = getenv("HOME");
    if (strncmp(path, "~/", 2) == 0 && home)
        snprintf(out, len, "%s/%s", home, path + 2);
    else
        snprintf(out, len, "%s", path);
}

static NW_MUST_USE nw_rc_t build(build_t *b, const char *prof, nw_creds_prov_t **out,
                                 nw_err_t *err);

/* The credentials credential_source names. */
static NW_MUST_USE nw_rc_t from_credential_source(const build_t *b, const char *prof,
                                                  const char *cs, nw_creds_prov_t **out,
                                                  nw_err_t *err)
{
    char w[1200];
    nw_rc_t rc;
    where(b, prof, "credential_source", w, sizeof w);
    if (strcmp(cs, "Environment") == 0) {
        if ((rc = nw_creds_prov_env(out, err)) == NW_OK && !*out)
            rc = nw_err_set(err, NW_EINVAL, "credential_source",
                            "%s: credential_source Environment, but AWS_ACCESS_KEY_ID and "
                            "AWS_SECRET_ACCESS_KEY are not set",
                            w);
        return rc;
    }
    if (strcmp(cs, "Ec2InstanceMetadata") == 0)
        return nw_creds_prov_imds(b->cfg, out, err);
    if (strcmp(cs, "EcsContainer") == 0) {
        if ((rc = nw_creds_container_from_env(b->cfg, out, err)) == NW_OK && !*out)
            rc = nw_err_set(err, NW_EINVAL, "credential_source",
                            "%s: credential_source EcsContainer, but neither "
                            "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI nor "
                            "AWS_CONTAINER_CREDENTIALS_FULL_URI is set",
                            w);
        return rc;
    }
    return nw_err_set(err, NW_EINVAL, "credential_source",
                      "%s: credential_source must be Environment, Ec2InstanceMetadata or "
                      "EcsContainer, not \"%s\"",
                      w, cs);
}

/* The credentials source_profile sp of prof gives. */
static NW_MUST_USE nw_rc_t from_source_profile(build_t *b, const char *prof, const char *sp,
                                               nw_creds_prov_t **out, nw_err_t *err)
{
    char w[1200], loop[600] = "";
    nw_rc_t rc;
    where(b, prof, "source_profile", w, sizeof w);
    if (strcmp(sp, prof) == 0) { /* the role's own keys sign for it */
        if ((rc = static_keys(b, prof, out, err)) == NW_OK && !*out)
            rc = nw_err_set(err, NW_EINVAL, "source_profile",
                            "%s: source_profile names the profile itself, which has no "
                            "aws_access_key_id and aws_secret_access_key",
                            w);
        return rc;
    }
    for (int i = 0; i < b->depth; i++)
        if (strcmp(b->chain[i], sp) == 0) {
            for (int k = 0; k < b->depth; k++)
                snprintf(loop + strlen(loop), sizeof loop - strlen(loop), "%s -> ", b->chain[k]);
            return nw_err_set(err, NW_EINVAL, "source_profile", "%s: source_profile loop: %s%s", w,
                              loop, sp);
        }
    if (!nw_awsprofile_has(b->set, sp))
        return nw_err_set(err, NW_EINVAL, "source_profile",
                          "%s: source_profile \"%s\" is not in %s", w, sp,
                          nw_awsprofile_files(b->set));
    if (b->depth >= MAX_CHAIN)
        return nw_err_set(err, NW_EINVAL, "source_profile",
                          "%s: more than %d roles chained through source_profile", w, MAX_CHAIN);
    if ((rc = static_keys(b, sp, out, err)) != NW_OK || *out)
        return rc;
    if ((rc = build(b, sp, out, err)) == NW_OK && !*out)
        rc = nw_err_set(err, NW_EINVAL, "source_profile",
                        "%s: source_profile \"%s\" holds no credentials", w, sp);
    return rc;
}

/* role_arn of prof: web identity, or AssumeRole signed with the source's credentials. */
static NW_MUST_USE nw_rc_t build_role(build_t *b, const char *prof, const char *arn,
                                      nw_creds_prov_t **out, nw_err_t *err)
{
    char w[1200], path[1024];
    const char *wif = get(b, prof, "web_identity_token_file"), *sp = get(b, prof, "source_profile");
    const char *cs = get(b, prof, "credential_source"), *sn = get(b, prof, "role_session_name");
    const char *dur = get(b, prof, "duration_seconds"), *ext = get(b, prof, "external_id");
    where(b, prof, "role_arn", w, sizeof w);
    if (!b->cfg->sts[0])
        return nw_err_set(err, NW_EINVAL, "aws.region",
                          "%s: role_arn needs the STS endpoint: set a region (AWS_REGION, the "
                          "profile's region) or AWS_ENDPOINT_URL_STS",
                          w);
    if (!wif && !sp && !cs)
        return nw_err_set(err, NW_EINVAL, "role_arn",
                          "%s: role_arn needs source_profile, credential_source or "
                          "web_identity_token_file",
                          w);
    char *end = NULL;
    long d = dur ? strtol(dur, &end, 10) : 0;
    if (dur && (*end || d < 900 || d > 43200))
        return nw_err_set(err, NW_EINVAL, "duration_seconds",
                          "%s: duration_seconds must be a number of seconds from 900 to 43200, "
                          "not \"%s\"",
                          where(b, prof, "duration_seconds", w, sizeof w), dur);
    nw_creds_prov_t *p = nw_creds_prov_new(wif ? NW_CREDS_WEB_IDENTITY : NW_CREDS_ASSUME_ROLE);
    if (!p)
        return nw_err_set(err, NW_ENOMEM, "creds", "out of memory");
    snprintf(p->role_arn, sizeof p->role_arn, "%s", arn);
    if (sn)
        snprintf(p->session_name, sizeof p->session_name, "%s", sn);
    else
        nw_creds_prov_session_name(b->clock, p->session_name, sizeof p->session_name);
    nw_rc_t rc = NW_OK;
    if (wif) {
        expand(wif, path, sizeof path);
        snprintf(p->token_file, sizeof p->token_file, "%s", path);
        snprintf(p->what, sizeof p->what, "role %s with the token in %s (%.400s)", arn, path, w);
    } else {
        p->duration_s = (int)d;
        if (ext)
            snprintf(p->external_id, sizeof p->external_id, "%s", ext);
        rc = cs ? from_credential_source(b, prof, cs, &p->source, err)
                : from_source_profile(b, prof, sp, &p->source, err);
        if (rc == NW_OK)
            snprintf(p->what, sizeof p->what, "role %s of profile \"%s\", assumed with %.300s", arn,
                     prof, p->source->what);
    }
    if (rc != NW_OK) {
        nw_creds_prov_free(p);
        return rc;
    }
    *out = p;
    return NW_OK;
}

static NW_MUST_USE nw_rc_t build(build_t *b, const char *prof, nw_creds_prov_t **out, nw_err_t *err)
{
    char w[1200];
    nw_rc_t rc;
    const char *arn = get(b, prof, "role_arn"), *cp = get(b, prof, "credential_process");
    *out = NULL;
    if ((rc = refuse(b, prof, err)) != NW_OK)
        return rc;
    b->chain[b->depth++] = prof;
    if (arn) {
        rc = build_role(b, prof, arn, out, err);
    } else if ((rc = static_keys(b, prof, out, err)) != NW_OK || *out) {
        /* static keys, or a partial pair */
    } else if (cp) {
        nw_creds_prov_t *p = nw_creds_prov_new(NW_CREDS_PROCESS);
        if (!p) {
            rc = nw_err_set(err, NW_ENOMEM, "creds", "out of memory");
        } else if ((rc = nw_creds_process_split(cp, &p->argv, err)) != NW_OK) {
            nw_creds_prov_free(p);
        } else {
            snprintf(p->what, sizeof p->what, "credential_process of %s",
                     where(b, prof, "credential_process", w, sizeof w));
            *out = p;
        }
    } else {
        const char *const need_role[] = {"web_identity_token_file", "source_profile",
                                         "credential_source"};
        for (size_t i = 0; i < 3 && rc == NW_OK; i++)
            if (get(b, prof, need_role[i]))
                rc = nw_err_set(err, NW_EINVAL, need_role[i], "%s: %s needs role_arn",
                                where(b, prof, need_role[i], w, sizeof w), need_role[i]);
    }
    b->depth--;
    return rc;
}

nw_rc_t nw_creds_profile_provider(const nw_awscfg_t *cfg, const nw_clock_t *clock,
                                  const nw_awsprofile_set_t *set, const char *profile,
                                  nw_creds_prov_t **out, nw_err_t *err)
{
    build_t b = {.cfg = cfg, .clock = clock, .set = set};
    return build(&b, profile, out, err);
}
