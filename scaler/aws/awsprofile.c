/* scaler/aws/awsprofile.c — the shared config and credentials files; see awsprofile.h. */
#include "scaler/aws/awsprofile.h"

#include <ctype.h>
#include <errno.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/file.h"

#define FILE_MAX (1u << 20)

typedef struct {
    char *key, *value;
    const char *file; /* borrowed from the set's file list */
} entry_t;

typedef struct {
    char *name;
    entry_t *v;
    size_t n, cap;
} profile_t;

struct nw_awsprofile_set {
    profile_t *v;
    size_t n, cap;
    char *files[4]; /* the files parsed, for entry_t.file */
    size_t nfiles;
    char desc[2200];
};

static char *dupn(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

static profile_t *find(const nw_awsprofile_set_t *s, const char *name)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->v[i].name, name) == 0)
            return &s->v[i];
    return NULL;
}

static profile_t *find_or_add(nw_awsprofile_set_t *s, const char *name)
{
    profile_t *p = find(s, name);
    if (p)
        return p;
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 8;
        profile_t *nv = realloc(s->v, nc * sizeof *nv);
        if (!nv)
            return NULL;
        s->v = nv;
        s->cap = nc;
    }
    p = &s->v[s->n];
    memset(p, 0, sizeof *p);
    if (!(p->name = strdup(name)))
        return NULL;
    s->n++;
    return p;
}

static void entry_free(entry_t *e)
{
    if (e->value)
        OPENSSL_cleanse(e->value, strlen(e->value));
    free(e->value);
    free(e->key);
}

/* Set key in p to value (taking both strings), replacing an earlier value. */
static NW_MUST_USE nw_rc_t put(profile_t *p, char *key, char *value, const char *file)
{
    for (size_t i = 0; i < p->n; i++)
        if (strcmp(p->v[i].key, key) == 0) {
            entry_free(&p->v[i]);
            p->v[i] = (entry_t){key, value, file};
            return NW_OK;
        }
    if (p->n == p->cap) {
        size_t nc = p->cap ? p->cap * 2 : 8;
        entry_t *nv = realloc(p->v, nc * sizeof *nv);
        if (!nv) {
            entry_t e = {key, value, NULL};
            entry_free(&e);
            return NW_ENOMEM;
        }
        p->v = nv;
        p->cap = nc;
    }
    p->v[p->n++] = (entry_t){key, value, file};
    return NW_OK;
}

void nw_awsprofile_free(nw_awsprofile_set_t *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++) {
        for (size_t j = 0; j < s->v[i].n; j++)
            entry_free(&s->v[i].v[j]);
        free(s->v[i].v);
        free(s->v[i].name);
    }
    free(s->v);
    for (size_t i = 0; i < s->nfiles; i++)
        free(s->files[i]);
    free(s);
}

/* ---- one file --------------------------------------------------------------------- */

/* The parser's position and what the last lines set up. */
typedef struct {
    nw_awsprofile_set_t *set;
    const char *file;
    bool is_config;
    int lineno;
    profile_t *cur;   /* the section being read; NULL: none or one that is not a profile */
    bool in_section;  /* a section line was seen (even one that is ignored) */
    char *last_key;   /* the last property's key in cur (borrowed from cur) */
    bool last_empty;  /* ... and its value was empty: indented lines are sub-properties */
    char pending[40]; /* "profile default" seen: its name while it is read */
} parse_t;

static void trim(const char **s, size_t *n)
{
    while (*n > 0 && isspace((unsigned char)**s))
        (*s)++, (*n)--;
    while (*n > 0 && isspace((unsigned char)(*s)[*n - 1]))
        (*n)--;
}

/* Cut a value at a comment: '#' or ';' after whitespace. */
static size_t uncomment(const char *s, size_t n)
{
    for (size_t i = 1; i < n; i++)
        if ((s[i] == '#' || s[i] == ';') && (s[i - 1] == ' ' || s[i - 1] == '\t'))
            return i;
    return n;
}

/* The profile name a section line names in this file, or NULL (not a profile). */
static const char *profile_name(parse_t *ps, const char *name, size_t n, char *buf, size_t len)
{
    if (n >= len)
        return NULL;
    memcpy(buf, name, n);
    buf[n] = '\0';
    bool prefixed = strncmp(buf, "profile", 7) == 0 && (buf[7] == ' ' || buf[7] == '\t');
    if (!ps->is_config)
        return prefixed ? NULL : buf;
    if (prefixed) {
        const char *p = buf + 7;
        while (*p == ' ' || *p == '\t')
            p++;
        return *p ? p : NULL;
    }
    return strcmp(buf, "default") == 0 ? buf : NULL;
}

static NW_MUST_USE nw_rc_t section_line(parse_t *ps, const char *s, size_t n, nw_err_t *err)
{
    const char *close = memchr(s, ']', n);
    if (!close)
        return nw_err_set(err, NW_EPARSE, ps->file, "%s:%d: a section line must end with ']'",
                          ps->file, ps->lineno);
    const char *rest = close + 1;
    size_t rn = n - (size_t)(rest - s);
    trim(&rest, &rn);
    if (rn > 0 && rest[0] != '#' && rest[0] != ';')
        return nw_err_set(err, NW_EPARSE, ps->file, "%s:%d: unexpected text after ']'", ps->file,
                          ps->lineno);
    const char *name = s + 1;
    size_t nn = (size_t)(close - name);
    trim(&name, &nn);
    char buf[512];
    const char *pn = profile_name(ps, name, nn, buf, sizeof buf);
    ps->in_section = true;
    ps->cur = NULL;
    ps->last_key = NULL;
    if (!pn)
        return NW_OK;
    /* "[profile default]" replaces what "[default]" set in the same file */
    if (ps->is_config && strcmp(pn, "default") == 0 && strcmp(buf, "default") != 0) {
        profile_t *old = find(ps->set, "default");
        for (size_t i = 0; old && i < old->n; i++)
            if (old->v[i].file == ps->file) {
                entry_free(&old->v[i]);
                old->v[i--] = old->v[--old->n];
            }
        snprintf(ps->pending, sizeof ps->pending, "default");
    } else if (ps->is_config && strcmp(pn, "default") == 0 && ps->pending[0]) {
        return NW_OK; /* "[default]" after "[profile default]": ignored */
    }
    ps->cur = find_or_add(ps->set, pn);
    return ps->cur ? NW_OK : nw_err_set(err, NW_ENOMEM, ps->file, "out of memory");
}

static NW_MUST_USE nw_rc_t property_line(parse_t *ps, const char *s, size_t n, bool indented,
                                         nw_err_t *err)
{
    const char *eq = memchr(s, '=', n);
    if (indented && ps->last_key && !ps->last_empty) { /* a continued value */
        entry_t *e = NULL;
        for (size_t i = 0; i < ps->cur->n; i++)
            if (ps->cur->v[i].key == ps->last_key)
                e = &ps->cur->v[i];
        if (!e) /* last_key is always an entry of cur; kept for the analyzers */
            return nw_err_set(err, NW_EPARSE, ps->file, "%s:%d: nothing to continue", ps->file,
                              ps->lineno);
        size_t vl = strlen(e->value);
        char *nv = realloc(e->value, vl + n + 2);
        if (!nv)
            return nw_err_set(err, NW_ENOMEM, ps->file, "out of memory");
        nv[vl] = '\n';
        memcpy(nv + vl + 1, s, n);
        nv[vl + 1 + n] = '\0';
        e->value = nv;
        return NW_OK;
    }
    if (!eq)
        return nw_err_set(err, NW_EPARSE, ps->file, "%s:%d: expected \"key = value\"", ps->file,
                          ps->lineno);
    const char *k = s, *v = eq + 1;
    size_t kn = (size_t)(eq - s), vn = n - kn - 1;
    trim(&k, &kn);
    vn = uncomment(v, vn);
    trim(&v, &vn);
    if (kn == 0)
        return nw_err_set(err, NW_EPARSE, ps->file, "%s:%d: a property needs a name before '='",
                          ps->file, ps->lineno);
    if (!ps->in_section)
        return nw_err_set(err, NW_EPARSE, ps->file,
                          "%s:%d: property outside a section (a [profile] line must come first)",
                          ps->file, ps->lineno);
    if (!ps->cur)
        return NW_OK; /* in a section that is not a profile */
    bool sub = indented && ps->last_key;
    size_t pl = sub ? strlen(ps->last_key) + 1 : 0;
    char *key = malloc(pl + kn + 1), *val = dupn(v, vn);
    if (key) {
        if (sub)
            snprintf(key, pl + 1, "%s.", ps->last_key);
        for (size_t i = 0; i < kn; i++)
            key[pl + i] = (char)tolower((unsigned char)k[i]);
        key[pl + kn] = '\0';
    }
    if (!key || !val || put(ps->cur, key, val, ps->file) != NW_OK) {
        if (!key || !val) {
            free(key);
            free(val);
        }
        return nw_err_set(err, NW_ENOMEM, ps->file, "out of memory");
    }
    if (!sub) {
        ps->last_key = key;
        ps->last_empty = vn == 0;
    }
    return NW_OK;
}

static NW_MUST_USE nw_rc_t parse_line(parse_t *ps, const char *line, size_t n, nw_err_t *err)
{
    bool indented = n > 0 && (line[0] == ' ' || line[0] == '\t');
    const char *s = line;
    size_t sn = n;
    trim(&s, &sn);
    if (sn == 0 || s[0] == '#' || s[0] == ';')
        return NW_OK;
    if (s[0] == '[' && !indented)
        return section_line(ps, s, sn, err);
    if (indented && !ps->last_key && ps->in_section && ps->cur)
        return nw_err_set(err, NW_EPARSE, ps->file,
                          "%s:%d: an indented line must follow a property", ps->file, ps->lineno);
    return property_line(ps, s, sn, indented, err);
}

static NW_MUST_USE nw_rc_t add_file_name(nw_awsprofile_set_t *s, const char *file,
                                         const char **kept)
{
    for (size_t i = 0; i < s->nfiles; i++)
        if (strcmp(s->files[i], file) == 0) {
            *kept = s->files[i];
            return NW_OK;
        }
    if (s->nfiles == sizeof s->files / sizeof s->files[0])
        return NW_ERANGE;
    if (!(s->files[s->nfiles] = strdup(file)))
        return NW_ENOMEM;
    *kept = s->files[s->nfiles++];
    return NW_OK;
}

nw_rc_t nw_awsprofile_parse(nw_awsprofile_set_t **set, const char *text, const char *file,
                            bool is_config, nw_err_t *err)
{
    if (!*set && !(*set = calloc(1, sizeof **set)))
        return nw_err_set(err, NW_ENOMEM, file, "out of memory");
    parse_t ps = {.set = *set, .is_config = is_config};
    if (add_file_name(*set, file, &ps.file) != NW_OK)
        return nw_err_set(err, NW_ENOMEM, file, "out of memory");
    const char *p = text;
    while (*p) {
        const char *eol = strchr(p, '\n');
        size_t n = eol ? (size_t)(eol - p) : strlen(p);
        ps.lineno++;
        size_t ln = n > 0 && p[n - 1] == '\r' ? n - 1 : n;
        nw_rc_t rc = parse_line(&ps, p, ln, err);
        if (rc != NW_OK)
            return rc;
        p += n + (eol ? 1 : 0);
    }
    return NW_OK;
}

/* ---- the files ------------------------------------------------------------------- */

static void file_path(const char *env_name, const char *dflt, char *out, size_t len)
{
    const char *v = getenv(env_name), *home = getenv("HOME");
    if (!home)
        home = "";
    if (!v || !*v)
        snprintf(out, len, "%s/.aws/%s", home, dflt);
    else if (strncmp(v, "~/", 2) == 0)
        snprintf(out, len, "%s/%s", home, v + 2);
    else
        snprintf(out, len, "%s", v);
}

static NW_MUST_USE nw_rc_t load_one(nw_awsprofile_set_t **set, const char *path, bool is_config,
                                    nw_err_t *err)
{
    size_t len = 0;
    char *text = nw_file_read(path, FILE_MAX, &len);
    if (!text && errno == EFBIG)
        return nw_err_set(err, NW_ERANGE, path, "%s: larger than 1 MiB", path);
    if (!text) /* missing or unreadable: empty, as the SDKs treat it */
        return nw_awsprofile_parse(set, "", path, is_config, err);
    nw_rc_t rc = NW_OK;
    if (strlen(text) != len)
        rc = nw_err_set(err, NW_EPARSE, path, "%s: holds a NUL byte; not a text file", path);
    else
        rc = nw_awsprofile_parse(set, text, path, is_config, err);
    OPENSSL_cleanse(text, len);
    free(text);
    return rc;
}

nw_rc_t nw_awsprofile_load(nw_awsprofile_set_t **out, nw_err_t *err)
{
    char cfg[1024], creds[1024];
    *out = NULL;
    file_path("AWS_CONFIG_FILE", "config", cfg, sizeof cfg);
    file_path("AWS_SHARED_CREDENTIALS_FILE", "credentials", creds, sizeof creds);
    nw_awsprofile_set_t *s = NULL;
    nw_rc_t rc = load_one(&s, cfg, true, err);
    if (rc == NW_OK)
        rc = load_one(&s, creds, false, err);
    if (rc != NW_OK) {
        nw_awsprofile_free(s);
        return rc;
    }
    snprintf(s->desc, sizeof s->desc, "%s or %s", cfg, creds);
    *out = s;
    return NW_OK;
}

const char *nw_awsprofile_selected(bool *explicit_out)
{
    const char *p = getenv("AWS_PROFILE");
    if (!p || !*p)
        p = getenv("AWS_DEFAULT_PROFILE");
    if (explicit_out)
        *explicit_out = p && *p;
    return p && *p ? p : "default";
}

bool nw_awsprofile_has(const nw_awsprofile_set_t *s, const char *profile)
{
    return s && find(s, profile) != NULL;
}

const char *nw_awsprofile_get(const nw_awsprofile_set_t *s, const char *profile, const char *key,
                              const char **file)
{
    const profile_t *p = s ? find(s, profile) : NULL;
    for (size_t i = 0; p && i < p->n; i++)
        if (strcmp(p->v[i].key, key) == 0) {
            if (file)
                *file = p->v[i].file;
            return p->v[i].value;
        }
    return NULL;
}

const char *nw_awsprofile_files(const nw_awsprofile_set_t *s)
{
    return s && s->desc[0] ? s->desc : "the shared config files";
}
