/*
 * scaler/aws/userdata_mime.c — the user's userData as MIME parts: a multipart document read
 * part by part (headers canonical and sorted), a plain one as one part (a shell script, or
 * for AL2023 a NodeConfig when it reads as a YAML mapping), and the parts written back as one
 * multipart/mixed document with boundary "//"
 * (aws/karpenter-provider-aws pkg/providers/amifamily/bootstrap/mime/mime.go: NewArchive,
 * Serialize). See userdata.h.
 */
#include "scaler/aws/userdata.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/strs.h"
#include "common/yaml.h"
#include "scaler/aws/userdata_int.h"

#define BOUNDARY "//"

/* ---- the user's MIME parts ---- */

void nw_userdata_mime_parts_free(parts_t *p)
{
    for (int i = 0; i < p->n; i++) {
        free(p->v[i].headers);
        free(p->v[i].content);
    }
    free(p->v);
    memset(p, 0, sizeof *p);
}

static NW_MUST_USE nw_rc_t parts_add(parts_t *p, const char *headers, size_t hl,
                                     const char *content, size_t cl)
{
    part_t *v = realloc(p->v, (size_t)(p->n + 1) * sizeof *v);
    if (!v)
        return NW_ENOMEM;
    p->v = v;
    v[p->n].headers = strndup(headers, hl);
    v[p->n].content = strndup(content, cl);
    if (!v[p->n].headers || !v[p->n].content) {
        free(v[p->n].headers);
        free(v[p->n].content);
        return NW_ENOMEM;
    }
    p->n++;
    return NW_OK;
}

nw_rc_t nw_userdata_mime_parts_add_typed(parts_t *p, const char *ctype, const char *content)
{
    char h[128];
    int n = snprintf(h, sizeof h, "Content-Type: %s\n", ctype);
    return parts_add(p, h, (size_t)n, content, strlen(content));
}

static bool is_mime(const char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    return strncmp(s, "MIME-Version:", 13) == 0 || strncmp(s, "Content-Type:", 13) == 0;
}

/* canonical MIME header key (textproto.CanonicalMIMEHeaderKey): Content-Type */
static void canon_key(char *k)
{
    bool up = true;
    for (; *k; k++) {
        *k = up ? (char)toupper((unsigned char)*k) : (char)tolower((unsigned char)*k);
        up = *k == '-';
    }
}

/* a header block (lines up to a blank line) into canonical, sorted "Key: value\n" text;
 * *ctype gets the Content-Type value (malloc'd, NULL if none). Returns the text or NULL. */
static char *headers_norm(const char *h, size_t len, char **ctype)
{
    char *copy = strndup(h, len), *save = NULL;
    char *lines[64];
    int n = 0;
    *ctype = NULL;
    if (!copy)
        return NULL;
    for (char *l = strtok_r(copy, "\n", &save); l && n < 64; l = strtok_r(NULL, "\n", &save)) {
        char *colon = strchr(l, ':');
        if (!colon)
            continue;
        *colon = 0;
        canon_key(l);
        char *v = colon + 1;
        while (*v == ' ' || *v == '\t')
            v++;
        size_t vl = strlen(v);
        while (vl && isspace((unsigned char)v[vl - 1]))
            v[--vl] = 0;
        if (strcmp(l, "Content-Type") == 0 && !*ctype)
            *ctype = strdup(v);
        size_t need = strlen(l) + vl + 4;
        if (!(lines[n] = malloc(need)))
            break;
        snprintf(lines[n++], need, "%s: %s\n", l, v);
    }
    free(copy);
    qsort(lines, (size_t)n, sizeof *lines, nw_strs_cmp);
    nw_buf_t b;
    nw_buf_init(&b, UD_MAX);
    nw_rc_t rc = NW_OK;
    for (int i = 0; i < n; i++) {
        if (rc == NW_OK)
            rc = nw_buf_adds(&b, lines[i]);
        free(lines[i]);
    }
    if (rc != NW_OK) {
        nw_buf_cleanup(&b);
        return NULL;
    }
    return nw_buf_take(&b);
}

/* the boundary parameter of a multipart Content-Type, into out; 0 if none */
static bool boundary_of(const char *ctype, char *out, size_t n)
{
    if (!ctype || strncasecmp(ctype, "multipart/", 10) != 0)
        return false;
    const char *p = strcasestr(ctype, "boundary=");
    if (!p)
        return false;
    p += 9;
    size_t k = 0;
    if (*p == '"') {
        for (p++; *p && *p != '"' && k + 1 < n; p++)
            out[k++] = *p;
    } else {
        for (; *p && *p != ';' && !isspace((unsigned char)*p) && k + 1 < n; p++)
            out[k++] = *p;
    }
    out[k] = 0;
    return k > 0;
}

/* mail.ReadMessage + multipart.Reader over text (no CR): every part's headers and body */
static NW_MUST_USE nw_rc_t mime_parse(const char *text, parts_t *out, nw_err_t *err)
{
    while (isspace((unsigned char)*text))
        text++;
    const char *body = strstr(text, "\n\n");
    if (!body)
        return nw_err_set(err, NW_EINVAL, "spec.userData",
                          "MIME userData has no blank line after its headers");
    char *ctype = NULL;
    char *h = headers_norm(text, (size_t)(body - text), &ctype);
    free(h);
    char bnd[256];
    int ok = boundary_of(ctype, bnd, sizeof bnd);
    free(ctype);
    if (!ok)
        return nw_err_set(err, NW_EINVAL, "spec.userData",
                          "MIME userData is not multipart or has no boundary");
    char delim[272];
    snprintf(delim, sizeof delim, "--%s", bnd);
    size_t dl = strlen(delim);
    /* the first delimiter line */
    const char *p = body + 1;
    for (;;) {
        if (strncmp(p, delim, dl) == 0 && (p[dl] == '\n' || p[dl] == 0 || p[dl] == '-'))
            break;
        const char *nl = strchr(p, '\n');
        if (!nl)
            return nw_err_set(err, NW_EINVAL, "spec.userData",
                              "MIME userData has no part (no line %s)", delim);
        p = nl + 1;
    }
    while (strncmp(p + dl, "--", 2) != 0) {
        const char *ph = strchr(p, '\n');
        if (!ph)
            break;
        ph++;
        const char *blank = strstr(ph, "\n\n");
        const char *hend, *content;
        if (*ph == '\n') { /* no headers */
            hend = ph;
            content = ph + 1;
        } else if (blank) {
            hend = blank + 1;
            content = blank + 2;
        } else
            return nw_err_set(err, NW_EINVAL, "spec.userData", "MIME part without a body");
        /* the body ends at "\n--boundary" */
        const char *end = content;
        for (;;) {
            const char *q = strstr(end, delim);
            if (!q)
                return nw_err_set(err, NW_EINVAL, "spec.userData",
                                  "MIME userData does not end with %s--", delim);
            if ((q == content || q[-1] == '\n') &&
                (q[dl] == '\n' || q[dl] == 0 || strncmp(q + dl, "--", 2) == 0)) {
                end = q;
                break;
            }
            end = q + dl;
        }
        size_t cl = (size_t)(end - content);
        if (cl && content[cl - 1] == '\n')
            cl--;
        char *ct = NULL;
        char *hn = headers_norm(ph, (size_t)(hend - ph), &ct);
        free(ct);
        if (!hn)
            return nw_err_set(err, NW_ENOMEM, "spec.userData", "out of memory");
        nw_rc_t rc = parts_add(out, hn, strlen(hn), cl ? content : "", cl);
        free(hn);
        if (rc != NW_OK)
            return nw_err_set(err, rc, "spec.userData", "out of memory");
        p = end;
        if (strncmp(p + dl, "--", 2) == 0)
            break;
    }
    return NW_OK;
}

/* mime.Archive.Serialize / multipart.Writer with boundary "//", CRs removed */
void nw_userdata_mime_write(out_t *w, const parts_t *p)
{
    nw_userdata_common_put(
        w, "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"" BOUNDARY "\"\n\n");
    for (int i = 0; i < p->n; i++) {
        nw_userdata_common_put(w, "%s--" BOUNDARY "\n%s\n", i ? "\n" : "", p->v[i].headers);
        nw_userdata_common_put(w, "%s", p->v[i].content);
    }
    nw_userdata_common_put(w, "\n--" BOUNDARY "--\n");
}

/* A line a MIME reader takes for the boundary of the document written here: "--//" or
 * "--//--", then only blanks (Go's mime/multipart, which nodeadm reads AL2023's userData
 * with, and Python's email package, cloud-init's, both read it so). */
static bool boundary_line(const char *l, size_t n)
{
    static const char d[] = "--" BOUNDARY;
    if (n < sizeof d - 1 || strncmp(l, d, sizeof d - 1) != 0)
        return false;
    size_t i = sizeof d - 1;
    if (n - i >= 2 && l[i] == '-' && l[i + 1] == '-')
        i += 2;
    while (i < n && (l[i] == ' ' || l[i] == '\t'))
        i++;
    return i == n;
}

/* A user's part must not hold a boundary line: the document would end, or a new part
 * begin, there, and the bootstrap after it would be lost. */
static NW_MUST_USE nw_rc_t check_boundary(const parts_t *p, nw_err_t *err)
{
    for (int i = 0; i < p->n; i++) {
        int line = 1;
        for (const char *l = p->v[i].content; *l; line++) {
            const char *nl = strchr(l, '\n');
            size_t n = nl ? (size_t)(nl - l) : strlen(l);
            if (boundary_line(l, n))
                return nw_err_set(err, NW_EINVAL, "spec.userData",
                                  "line %d of part %d is \"%.*s\", a boundary of "
                                  "the MIME document the bootstrap is written in (\"" BOUNDARY
                                  "\"): the part would end there; change that line",
                                  line, i + 1, (int)(n > 40 ? 40 : n), l);
            if (!nl)
                break;
            l = nl + 1;
        }
    }
    return NW_OK;
}

/* the user's userData as parts: MIME as it is; else one part of type plain_type, or for
 * AL2023 a NodeConfig part when it reads as a YAML mapping */
nw_rc_t nw_userdata_mime_custom_parts(const char *ud, int al2023, parts_t *out, nw_err_t *err)
{
    if (!ud || !*ud)
        return NW_OK;
    char *text = strdup(ud);
    if (!text)
        return nw_err_set(err, NW_ENOMEM, "spec.userData", "out of memory");
    size_t j = 0; /* the multipart writer's CRs are removed: do it to the input too */
    for (size_t i = 0; text[i]; i++)
        if (text[i] != '\r')
            text[j++] = text[i];
    text[j] = 0;
    nw_rc_t rc;
    if (is_mime(text)) {
        rc = mime_parse(text, out, err);
    } else {
        const char *ct = CT_SHELL;
        if (al2023) {
            cJSON **docs = NULL;
            size_t nd = 0;
            nw_err_t e = {0};
            if (nw_yaml_load_docs(text, strlen(text), &docs, &nd, &e) == NW_OK && nd == 1 &&
                cJSON_IsObject(docs[0]))
                ct = CT_NODECONFIG;
            nw_yaml_docs_free(docs, nd);
        }
        rc = nw_userdata_mime_parts_add_typed(out, ct, text);
        if (rc != NW_OK)
            nw_err_set(err, rc, "spec.userData", "out of memory");
    }
    free(text);
    return rc == NW_OK ? check_boundary(out, err) : rc;
}

nw_rc_t nw_userdata_mime_finish_shell(out_t *w, parts_t *parts, out_t *s, nw_err_t *err)
{
    if (s->rc == NW_OK)
        s->rc = nw_userdata_mime_parts_add_typed(parts, CT_SHELL, nw_buf_str(&s->b));
    nw_rc_t rc = s->rc;
    nw_buf_cleanup(&s->b);
    if (rc == NW_OK)
        nw_userdata_mime_write(w, parts);
    nw_userdata_mime_parts_free(parts);
    return rc == NW_OK ? NW_OK : nw_err_set(err, rc, "spec.userData", "userData too large");
}
