/* scaler/aws/creds_process.c — credentials from a profile's credential_process: the
 * command runs without a shell (its line split here), must exit 0 within a minute and
 * print {"Version": 1, "AccessKeyId", "SecretAccessKey", "SessionToken"?,
 * "Expiration"?} on stdout; see creds_int.h. */
#include <cjson/cJSON.h>
#include <openssl/crypto.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/subproc.h"
#include "scaler/aws/creds_int.h"

#define PROCESS_TIMEOUT_MS 60000
#define PROCESS_MAX_OUT (64 * 1024)

void nw_creds_process_argv_free(char **argv)
{
    for (char **a = argv; a && *a; a++)
        free(*a);
    free(argv);
}

/* Append word (len n) to *argv (count *n_argv). */
static NW_MUST_USE nw_rc_t push_word(char ***argv, size_t *n_argv, const char *w, size_t n)
{
    char **nv = realloc(*argv, (*n_argv + 2) * sizeof *nv);
    if (!nv)
        return NW_ENOMEM;
    *argv = nv;
    nv[*n_argv] = NULL;
    char *word = malloc(n + 1); /* w is not NUL-terminated */
    if (!word)
        return NW_ENOMEM;
    memcpy(word, w, n);
    word[n] = '\0';
    nv[*n_argv] = word;
    nv[++*n_argv] = NULL;
    return NW_OK;
}

nw_rc_t nw_creds_process_split(const char *cmd, char ***argv, nw_err_t *err)
{
    size_t n_argv = 0, wl = 0;
    char *word = malloc(strlen(cmd) + 1);
    char q = 0; /* the open quote, if any */
    bool started = false;
    nw_rc_t rc = NW_OK;
    *argv = NULL;
    if (!word)
        return nw_err_set(err, NW_ENOMEM, "credential_process", "out of memory");
    for (const char *p = cmd;; p++) {
        char ch = *p;
        if (!ch) {
            if (q)
                rc = nw_err_set(err, NW_EINVAL, "credential_process",
                                "credential_process: unterminated %c quote", q);
            else if (started)
                rc = push_word(argv, &n_argv, word, wl);
            break;
        }
        if (q == '\'') {
            if (ch == '\'')
                q = 0;
            else
                word[wl++] = ch;
        } else if (q == '"') {
            if (ch == '"')
                q = 0;
            else if (ch == '\\' && p[1] && strchr("\"\\$`", p[1]))
                word[wl++] = *++p;
            else
                word[wl++] = ch;
        } else if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r') {
            if (started && (rc = push_word(argv, &n_argv, word, wl)) != NW_OK)
                break;
            started = false;
            wl = 0;
        } else {
            started = true;
            if (ch == '\'' || ch == '"') {
                q = ch;
            } else if (ch == '\\') {
                if (!p[1]) {
                    rc = nw_err_set(err, NW_EINVAL, "credential_process",
                                    "credential_process: unterminated escape");
                    break;
                }
                word[wl++] = *++p;
            } else {
                word[wl++] = ch;
            }
        }
    }
    free(word);
    if (rc == NW_OK && n_argv == 0)
        rc = nw_err_set(err, NW_EINVAL, "credential_process", "credential_process is empty");
    if (rc != NW_OK) {
        if (rc == NW_ENOMEM)
            nw_err_set(err, NW_ENOMEM, "credential_process", "out of memory");
        nw_creds_process_argv_free(*argv);
        *argv = NULL;
    }
    return rc;
}

/* The string member k of j into out; required says whether it must be there. */
static NW_MUST_USE nw_rc_t member(const nw_creds_prov_t *p, const cJSON *j, const char *k,
                                  bool required, char *out, size_t len, nw_err_t *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, k);
    out[0] = '\0';
    if (!v && !required)
        return NW_OK;
    if (!cJSON_IsString(v) || (required && !v->valuestring[0]))
        return nw_err_set(err, NW_EPARSE, k, "%s printed no %s (a non-empty string)", p->what, k);
    if (strlen(v->valuestring) >= len)
        return nw_err_set(err, NW_EPARSE, k, "%s printed a %s longer than %zu bytes", p->what, k,
                          len - 1);
    snprintf(out, len, "%s", v->valuestring);
    return NW_OK;
}

/* The credentials in the process's output. */
static NW_MUST_USE nw_rc_t parse_output(const nw_creds_prov_t *p, const nw_buf_t *out,
                                        nw_creds_value_t *v, nw_err_t *err)
{
    const char *end = NULL;
    cJSON *j = out->len ? cJSON_ParseWithLengthOpts(out->data, out->len, &end, 0) : NULL;
    nw_rc_t rc = NW_OK;
    char exp[64];
    if (!cJSON_IsObject(j)) {
        rc = nw_err_set(err, NW_EPARSE, "credential_process", "%s printed %s, not a JSON object",
                        p->what, out->len ? "something else" : "nothing");
        goto out;
    }
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(j, "Version");
    if (!cJSON_IsNumber(ver) || ver->valuedouble != 1) {
        rc = nw_err_set(err, NW_EPARSE, "Version", "%s printed Version %s; it must be 1", p->what,
                        cJSON_IsNumber(ver) ? "other than 1" : "missing or not a number");
        goto out;
    }
    memset(v, 0, sizeof *v);
    if ((rc = member(p, j, "AccessKeyId", true, v->access_key_id, sizeof v->access_key_id, err)) ||
        (rc = member(p, j, "SecretAccessKey", true, v->secret_access_key,
                     sizeof v->secret_access_key, err)) ||
        (rc =
             member(p, j, "SessionToken", false, v->session_token, sizeof v->session_token, err)) ||
        (rc = member(p, j, "Expiration", false, exp, sizeof exp, err)))
        goto out;
    if (exp[0] && nw_clock_time_parse(exp, &v->expires_ns) != NW_OK)
        rc = nw_err_set(err, NW_EPARSE, "Expiration",
                        "%s printed Expiration \"%s\", not an RFC 3339 time", p->what, exp);
    v->source = NW_CREDS_PROCESS;
out:
    if (j) {
        for (cJSON *it = j->child; it; it = it->next)
            if (cJSON_IsString(it))
                OPENSSL_cleanse(it->valuestring, strlen(it->valuestring));
        cJSON_Delete(j);
    }
    if (rc != NW_OK)
        OPENSSL_cleanse(v, sizeof *v);
    return rc;
}

nw_rc_t nw_creds_process_fetch(const nw_creds_ctx_t *x, nw_creds_prov_t *p, nw_creds_value_t *v,
                               nw_err_t *err)
{
    (void)x;
    nw_subproc_opts_t o = {.argv = (const char *const *)p->argv,
                           .timeout_ms = PROCESS_TIMEOUT_MS,
                           .max_out = PROCESS_MAX_OUT};
    nw_subproc_result_t r;
    nw_err_t e = {0};
    char line[300];
    nw_rc_t rc = nw_subproc_run(&o, &r, &e);
    nw_subproc_last_line(&r, line, sizeof line);
    if (rc != NW_OK)
        rc = nw_err_set(err, rc, "credential_process", "%s: %s", p->what, e.msg);
    else if (r.timed_out)
        rc = nw_err_set(err, NW_ETIMEOUT, "credential_process",
                        "%s: no answer within %d s; it was killed", p->what,
                        PROCESS_TIMEOUT_MS / 1000);
    else if (r.signal)
        rc = nw_err_set(err, NW_EIO, "credential_process", "%s: killed by signal %d%s%s", p->what,
                        r.signal, line[0] ? ": " : "", line);
    else if (r.exit_code != 0)
        rc = nw_err_set(err, NW_EIO, "credential_process", "%s: exit status %d%s%s", p->what,
                        r.exit_code, line[0] ? ": " : "", line);
    else if (r.out_overflow)
        rc = nw_err_set(err, NW_ERANGE, "credential_process", "%s printed more than %d bytes",
                        p->what, PROCESS_MAX_OUT);
    else
        rc = parse_output(p, &r.out, v, err);
    nw_subproc_result_cleanup(&r);
    return rc;
}
