/* scaler/aws/ssm.c — SSM GetParameter with a cache; see ssm.h. */
#include "scaler/aws/ssm.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/json.h"
#include "scaler/aws/awsjson.h"

#define PINNED_TTL_NS (INT64_C(24) * 3600 * NW_NS_PER_SEC)
#define MUTABLE_TTL_NS (INT64_C(30) * 60 * NW_NS_PER_SEC)
#define CACHE_MAX 256

typedef struct {
    char *name, *value;
    int64_t until; /* monotonic */
} entry_t;

struct nw_ssm {
    nw_awscfg_t cfg;
    nw_creds_t *creds;
    const nw_clock_t *clock;
    long requests;
    entry_t cache[CACHE_MAX];
    int n;
};

nw_rc_t nw_ssm_new(const nw_awscfg_t *cfg, nw_creds_t *creds, const nw_clock_t *clock,
                   nw_ssm_t **out, nw_err_t *err)
{
    *out = NULL;
    if (!cfg->region[0] || !cfg->ssm[0])
        return nw_err_set(err, NW_EINVAL, "aws.endpoints.ssm",
                          "no SSM endpoint (the region is not known)");
    nw_ssm_t *s = calloc(1, sizeof *s);
    if (!s)
        return nw_err_set(err, NW_ENOMEM, "ssm", "out of memory");
    s->cfg = *cfg;
    s->creds = creds;
    s->clock = clock ? clock : nw_clock_system();
    *out = s;
    return NW_OK;
}

void nw_ssm_free(nw_ssm_t *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->n; i++) {
        free(s->cache[i].name);
        free(s->cache[i].value);
    }
    free(s);
}

long nw_ssm_request_count(const nw_ssm_t *s)
{
    return s->requests;
}

nw_rc_t nw_ssm_parse(const char *json, size_t len, char *out, size_t outlen, nw_err_t *err)
{
    out[0] = 0;
    cJSON *root = json && len ? cJSON_ParseWithLength(json, len) : NULL;
    const char *v = nw_json_str(nw_json_get(root, "Parameter"), "Value");
    nw_rc_t rc = NW_OK;
    if (!v)
        rc =
            nw_err_set(err, NW_EPARSE, "GetParameter", "GetParameter response: no Parameter.Value");
    else if (strlen(v) >= outlen)
        rc = nw_err_set(err, NW_EPARSE, "GetParameter", "GetParameter response: value too long");
    else
        snprintf(out, outlen, "%s", v);
    cJSON_Delete(root);
    return rc;
}

static void remember(nw_ssm_t *s, const char *name, const char *value, int64_t until)
{
    char *n = strdup(name), *v = strdup(value);
    if (!n || !v) {
        free(n);
        free(v);
        return;
    }
    int i = 0;
    while (i < s->n && strcmp(s->cache[i].name, name) != 0)
        i++;
    if (i == s->n && s->n < CACHE_MAX)
        s->n++;
    else if (i == s->n) /* full: the entry that expires first goes */
        for (int k = i = 0; k < s->n; k++)
            if (s->cache[k].until < s->cache[i].until)
                i = k;
    if (i < s->n && s->cache[i].name) {
        free(s->cache[i].name);
        free(s->cache[i].value);
    }
    s->cache[i] = (entry_t){n, v, until};
}

nw_rc_t nw_ssm_get(nw_ssm_t *s, const char *name, int mutable_value, char *out, size_t len,
                   nw_sqs_error_t *ae, nw_err_t *err)
{
    nw_sqs_error_t dummy;
    if (!ae)
        ae = &dummy;
    memset(ae, 0, sizeof *ae);
    out[0] = 0;
    int64_t now = nw_clock_mono(s->clock);
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->cache[i].name, name) == 0 && now < s->cache[i].until) {
            if (strlen(s->cache[i].value) >= len)
                return nw_err_set(err, NW_EINVAL, "ssm", "buffer too small");
            snprintf(out, len, "%s", s->cache[i].value);
            return NW_OK;
        }
    nw_buf_t body, resp;
    nw_buf_init(&body, 64 * 1024);
    nw_buf_init(&resp, 1024 * 1024);
    nw_rc_t rc = nw_buf_adds(&body, "{\"Name\":\"");
    if (rc == NW_OK)
        rc = nw_buf_add_json_escaped(&body, name);
    if (rc == NW_OK)
        rc = nw_buf_adds(&body, "\"}");
    if (rc != NW_OK)
        rc = nw_err_set(err, rc, "ssm", "out of memory");
    nw_awsjson_req_t r = {s->cfg.ssm, s->cfg.region, "ssm",    "AmazonSSM.GetParameter",
                          1,          s->creds,      s->clock, s->cfg.call_timeout_ms,
                          NULL,       "ssm"};
    if (rc == NW_OK) {
        s->requests++;
        rc = nw_awsjson_call(&r, nw_buf_str(&body), &resp, ae, err);
    }
    if (rc == NW_OK)
        rc = nw_ssm_parse(resp.data, resp.len, out, len, err);
    if (rc == NW_OK)
        remember(s, name, out, now + (mutable_value ? MUTABLE_TTL_NS : PINNED_TTL_NS));
    nw_buf_cleanup(&body);
    nw_buf_cleanup(&resp);
    return rc;
}
