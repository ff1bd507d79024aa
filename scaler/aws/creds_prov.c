/* scaler/aws/creds_prov.c — making credential providers: the environment's keys, the
 * instance profile, and freeing any of them; see creds_int.h. */
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaler/aws/creds_int.h"

static const char *env(const char *k)
{
    const char *v = getenv(k);
    return v && *v ? v : NULL;
}

nw_creds_prov_t *nw_creds_prov_new(nw_creds_source_t kind)
{
    nw_creds_prov_t *p = calloc(1, sizeof *p);
    if (p)
        p->kind = kind;
    return p;
}

void nw_creds_prov_free(nw_creds_prov_t *p)
{
    if (!p)
        return;
    nw_creds_prov_free(p->source);
    nw_creds_process_argv_free(p->argv);
    OPENSSL_cleanse(p, sizeof *p);
    free(p);
}

void nw_creds_prov_session_name(const nw_clock_t *clock, char *out, size_t len)
{
    snprintf(out, len, "nodewarden-%lld",
             (long long)(nw_clock_now(clock ? clock : nw_clock_system()) / NW_NS_PER_SEC));
}

nw_rc_t nw_creds_prov_env(nw_creds_prov_t **out, nw_err_t *err)
{
    const char *ak = env("AWS_ACCESS_KEY_ID"), *sk = env("AWS_SECRET_ACCESS_KEY");
    *out = NULL;
    if (!ak && !sk)
        return NW_OK;
    if (!ak || !sk)
        return nw_err_set(err, NW_EINVAL, ak ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID",
                          "%s is set but %s is not",
                          ak ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY",
                          ak ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID");
    nw_creds_prov_t *p = nw_creds_prov_new(NW_CREDS_ENV);
    if (!p)
        return nw_err_set(err, NW_ENOMEM, "creds", "out of memory");
    snprintf(p->fixed.access_key_id, sizeof p->fixed.access_key_id, "%s", ak);
    snprintf(p->fixed.secret_access_key, sizeof p->fixed.secret_access_key, "%s", sk);
    const char *tok = env("AWS_SESSION_TOKEN");
    if (tok)
        snprintf(p->fixed.session_token, sizeof p->fixed.session_token, "%s", tok);
    p->fixed.source = NW_CREDS_ENV;
    snprintf(p->what, sizeof p->what, "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY");
    *out = p;
    return NW_OK;
}

nw_rc_t nw_creds_prov_imds(const nw_awscfg_t *cfg, nw_creds_prov_t **out, nw_err_t *err)
{
    *out = NULL;
    if (cfg->imds_disabled)
        return nw_err_set(err, NW_EINVAL, "AWS_EC2_METADATA_DISABLED",
                          "the instance metadata is disabled (AWS_EC2_METADATA_DISABLED=true)");
    if (!(*out = nw_creds_prov_new(NW_CREDS_IMDS)))
        return nw_err_set(err, NW_ENOMEM, "creds", "out of memory");
    snprintf((*out)->what, sizeof(*out)->what, "the instance profile at %s", cfg->imds);
    return NW_OK;
}
