/* common/yaml.c — libyaml event stream → cJSON (goyaml.v2 typing), cJSON → YAML. */
#include "common/yaml.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "common/buf.h"
#include "common/strs.h"

#define TAG_PREFIX "tag:yaml.org,2002:"

typedef struct {
    char *name;
    cJSON *node;  /* owned by the document tree */
    size_t nodes; /* size of the subtree */
} anchor_t;

typedef struct {
    yaml_parser_t p;
    anchor_t *anchors;
    size_t nanchors, capanchors;
    size_t nodes, alias_nodes;
    cJSON *keep; /* key and merge-source nodes that anchors may still point into */
    nw_err_t *err;
} loader_t;

/* ---- scalars ------------------------------------------------------------------ */

static const char *const TRUE_WORDS[] = {"y",    "Y",    "yes", "Yes", "YES", "true",
                                         "True", "TRUE", "on",  "On",  "ON",  NULL};
static const char *const FALSE_WORDS[] = {"n",     "N",     "no",  "No",  "NO",  "false",
                                          "False", "FALSE", "off", "Off", "OFF", NULL};
static const char *const NULL_WORDS[] = {"", "~", "null", "Null", "NULL", NULL};
static const char *const SPECIAL_FLOATS[] = {".nan",  ".NaN",  ".NAN",  ".inf",  ".Inf",
                                             ".INF",  "+.inf", "+.Inf", "+.INF", "-.inf",
                                             "-.Inf", "-.INF", NULL};

/* Go's strconv.ParseInt/ParseUint(s, 0, 64) syntax. Returns 1 and the value (as a
 * double, plus exactness not tracked) when s is an integer that fits int64 or uint64;
 * 2 when it is syntactically an integer but out of range; 0 otherwise. */
static int go_parse_int(const char *s, double *out)
{
    const char *p = s;
    bool neg = false;
    if (*p == '+' || *p == '-') {
        neg = *p == '-';
        p++;
    }
    int base = 10;
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
        base = 16;
        p += 2;
    } else if (p[0] == '0' && (p[1] == 'o' || p[1] == 'O')) {
        base = 8;
        p += 2;
    } else if (p[0] == '0' && (p[1] == 'b' || p[1] == 'B')) {
        base = 2;
        p += 2;
    } else if (p[0] == '0' && p[1]) {
        base = 8;
        p += 1;
    }
    if (!*p)
        return 0;
    unsigned __int128 v = 0;
    bool overflow = false;
    for (; *p; p++) {
        int d;
        if (*p >= '0' && *p <= '9')
            d = *p - '0';
        else if (*p >= 'a' && *p <= 'f')
            d = *p - 'a' + 10;
        else if (*p >= 'A' && *p <= 'F')
            d = *p - 'A' + 10;
        else
            return 0;
        if (d >= base)
            return 0;
        if (!overflow) {
            v = v * (unsigned)base + (unsigned)d;
            if (v > (unsigned __int128)UINT64_MAX)
                overflow = true;
        }
    }
    if (overflow)
        return 2;
    if (neg) {
        if (v > (unsigned __int128)INT64_MAX + 1)
            return 2;
        *out = -(double)v;
    } else {
        /* ParseInt fits int64; else ParseUint (no sign allowed) fits uint64 */
        if (v > (unsigned __int128)INT64_MAX && s[0] == '+')
            return 2;
        *out = (double)v;
    }
    return 1;
}

/* goyaml.v2's yamlStyleFloat: ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$ */
static bool yaml_style_float(const char *s)
{
    const char *p = s;
    if (*p == '+' || *p == '-')
        p++;
    if (*p == '.') {
        p++;
        if (!isdigit((unsigned char)*p))
            return false;
        while (isdigit((unsigned char)*p))
            p++;
    } else {
        if (!isdigit((unsigned char)*p))
            return false;
        while (isdigit((unsigned char)*p))
            p++;
        if (*p == '.') {
            p++;
            while (isdigit((unsigned char)*p))
                p++;
        }
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (!isdigit((unsigned char)*p))
            return false;
        while (isdigit((unsigned char)*p))
            p++;
    }
    return *p == 0;
}

typedef enum { R_STR, R_NULL, R_BOOL, R_INT, R_FLOAT, R_SPECIAL } rkind_t;

/* Resolve a plain scalar as goyaml.v2 does (tag ""). */
static rkind_t resolve_plain(const char *in, double *num, bool *b)
{
    char c = in[0];
    if (nw_strs_in(in, NULL_WORDS))
        return R_NULL;
    if (nw_strs_in(in, TRUE_WORDS)) {
        *b = true;
        return R_BOOL;
    }
    if (nw_strs_in(in, FALSE_WORDS)) {
        *b = false;
        return R_BOOL;
    }
    if (nw_strs_in(in, SPECIAL_FLOATS))
        return R_SPECIAL;
    if (c == '.') {
        /* strconv.ParseFloat on ".5", ".5e3" */
        if (yaml_style_float(in)) {
            errno = 0;
            double d = strtod(in, NULL);
            if (errno == ERANGE && isinf(d))
                return R_STR;
            *num = d;
            return R_FLOAT;
        }
        return R_STR;
    }
    if (!(isdigit((unsigned char)c) || c == '+' || c == '-'))
        return R_STR;
    size_t n = strlen(in);
    char *plain = malloc(n + 1);
    if (!plain)
        return R_STR;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (in[i] != '_')
            plain[k++] = in[i];
    plain[k] = 0;
    rkind_t r = R_STR;
    int ir = go_parse_int(plain, num);
    if (ir == 1) {
        r = R_INT;
    } else if (yaml_style_float(plain)) {
        errno = 0;
        double d = strtod(plain, NULL);
        if (!(errno == ERANGE && isinf(d))) {
            *num = d;
            r = R_FLOAT;
        }
    } else if (ir == 2) {
        /* goyaml.v2 falls back to big.Int; JSON carries it as a (large) number */
        const char *q = plain;
        bool neg = *q == '-';
        if (*q == '+' || *q == '-')
            q++;
        bool dec = true;
        for (const char *t = q; *t; t++)
            if (!isdigit((unsigned char)*t))
                dec = false;
        if (dec && !(q[0] == '0' && q[1])) {
            double d = strtod(q, NULL);
            *num = neg ? -d : d;
            r = R_INT;
        }
    }
    free(plain);
    return r;
}

static NW_MUST_USE nw_rc_t fail_at(loader_t *l, yaml_mark_t m, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static NW_MUST_USE nw_rc_t fail_at(loader_t *l, yaml_mark_t m, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return nw_err_set(l->err, NW_EPARSE, NULL, "line %zu, column %zu: %s", m.line + 1, m.column + 1,
                      msg);
}

/* Build the cJSON value for a scalar event. */
static NW_MUST_USE nw_rc_t scalar_value(loader_t *l, const yaml_event_t *ev, cJSON **out)
{
    const char *v = (const char *)ev->data.scalar.value;
    size_t len = ev->data.scalar.length;
    if (memchr(v, 0, len))
        return fail_at(l, ev->start_mark, "%s", "NUL characters are not supported");
    const char *tag = (const char *)ev->data.scalar.tag;
    bool plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
    const char *t = NULL; /* short tag name for yaml.org tags */
    if (tag) {
        if (strncmp(tag, TAG_PREFIX, strlen(TAG_PREFIX)) == 0)
            t = tag + strlen(TAG_PREFIX);
        else if (strcmp(tag, "!") == 0)
            t = "str"; /* non-specific tag: a string */
        else
            t = "other";
    }
    if (t && (strcmp(t, "str") == 0 || strcmp(t, "binary") == 0 || strcmp(t, "timestamp") == 0 ||
              strcmp(t, "other") == 0)) {
        *out = cJSON_CreateString(v);
        return *out ? NW_OK : NW_ENOMEM;
    }
    if (!t && !plain) {
        *out = cJSON_CreateString(v);
        return *out ? NW_OK : NW_ENOMEM;
    }
    double num = 0;
    bool b = false;
    rkind_t k = resolve_plain(v, &num, &b);
    if (t && strcmp(t, "int") != 0 && strcmp(t, "float") != 0 && strcmp(t, "bool") != 0 &&
        strcmp(t, "null") != 0) {
        /* !!map / !!seq / !!merge on a scalar and the like: keep the text */
        *out = cJSON_CreateString(v);
        return *out ? NW_OK : NW_ENOMEM;
    }
    if (t) {
        bool ok = (strcmp(t, "int") == 0 && k == R_INT) ||
                  (strcmp(t, "float") == 0 && (k == R_FLOAT || k == R_INT || k == R_SPECIAL)) ||
                  (strcmp(t, "bool") == 0 && k == R_BOOL) ||
                  (strcmp(t, "null") == 0 && k == R_NULL);
        if (!ok) {
            char msg[300];
            snprintf(msg, sizeof msg, "cannot decode `%.200s` as a !!%s", v, t);
            return fail_at(l, ev->start_mark, "%s", msg);
        }
    }
    switch (k) {
    case R_NULL:
        *out = cJSON_CreateNull();
        break;
    case R_BOOL:
        *out = cJSON_CreateBool(b);
        break;
    case R_INT:
    case R_FLOAT:
        *out = cJSON_CreateNumber(num);
        break;
    case R_SPECIAL:
        return fail_at(l, ev->start_mark, "%s cannot be represented in JSON", v);
    case R_STR:
        *out = cJSON_CreateString(v);
        break;
    }
    return *out ? NW_OK : NW_ENOMEM;
}

/* ---- tree building ------------------------------------------------------------- */

static NW_MUST_USE nw_rc_t next_event(loader_t *l, yaml_event_t *ev)
{
    if (!yaml_parser_parse(&l->p, ev)) {
        const char *problem = l->p.problem ? l->p.problem : "syntax error";
        yaml_mark_t m = l->p.problem_mark;
        if (l->p.context) {
            char msg[400];
            snprintf(msg, sizeof msg, "%s %s", problem, l->p.context);
            return nw_err_set(l->err, NW_EPARSE, NULL, "line %zu, column %zu: %s", m.line + 1,
                              m.column + 1, msg);
        }
        return nw_err_set(l->err, NW_EPARSE, NULL, "line %zu, column %zu: %s", m.line + 1,
                          m.column + 1, problem);
    }
    return NW_OK;
}

static size_t count_nodes(const cJSON *n)
{
    size_t c = 1;
    for (const cJSON *ch = n->child; ch; ch = ch->next)
        c += count_nodes(ch);
    return c;
}

static NW_MUST_USE nw_rc_t add_anchor(loader_t *l, const char *name, cJSON *node, size_t nodes)
{
    if (l->nanchors == l->capanchors) {
        size_t nc = l->capanchors ? l->capanchors * 2 : 8;
        anchor_t *na = realloc(l->anchors, nc * sizeof *na);
        if (!na)
            return NW_ENOMEM;
        l->anchors = na;
        l->capanchors = nc;
    }
    char *dup = strdup(name);
    if (!dup)
        return NW_ENOMEM;
    l->anchors[l->nanchors++] = (anchor_t){dup, node, nodes};
    // cppcheck-suppress memleak ; dup moved into l->anchors, freed by clear_anchors
    return NW_OK;
}

static void clear_anchors(loader_t *l)
{
    for (size_t i = 0; i < l->nanchors; i++)
        free(l->anchors[i].name);
    l->nanchors = 0;
    cJSON_Delete(l->keep);
    l->keep = NULL;
}

/* Dispose of a node built for a key or a merge source: anchors may point into it,
 * so it lives until the document ends. */
static void retire(loader_t *l, cJSON *n)
{
    if (!n)
        return;
    if (!l->keep && !(l->keep = cJSON_CreateArray())) {
        cJSON_Delete(n); /* out of memory: no alias can be resolved safely anyway */
        return;
    }
    cJSON_AddItemToArray(l->keep, n);
}

static NW_MUST_USE nw_rc_t parse_node(loader_t *l, yaml_event_t *ev, int depth, cJSON **out);

/* Key text for a mapping key node built by parse_node. */
static NW_MUST_USE nw_rc_t key_string(loader_t *l, const cJSON *k, yaml_mark_t m, char **out)
{
    char tmp[64];
    const char *s = NULL;
    if (cJSON_IsString(k)) {
        s = k->valuestring;
    } else if (cJSON_IsBool(k)) {
        s = cJSON_IsTrue(k) ? "true" : "false";
    } else if (cJSON_IsNumber(k)) {
        double d = k->valuedouble;
        if (d == floor(d) && fabs(d) < 1e18)
            snprintf(tmp, sizeof tmp, "%lld", (long long)d);
        else
            snprintf(tmp, sizeof tmp, "%g", d);
        s = tmp;
    } else if (cJSON_IsNull(k)) {
        return fail_at(l, m, "%s", "unsupported map key: null");
    } else {
        return fail_at(l, m, "%s", "unsupported map key: a mapping or sequence");
    }
    *out = strdup(s);
    return *out ? NW_OK : NW_ENOMEM;
}

/* Merge the entries of src (a mapping) into the pending merge object. Earlier
 * merge sources win over later ones. */
static NW_MUST_USE nw_rc_t merge_into(loader_t *l, cJSON *merged, const cJSON *src, yaml_mark_t m)
{
    if (!cJSON_IsObject(src))
        return fail_at(l, m, "%s", "map merge requires a mapping or a list of mappings");
    for (const cJSON *e = src->child; e; e = e->next) {
        if (cJSON_GetObjectItemCaseSensitive(merged, e->string))
            continue;
        size_t c = count_nodes(e);
        if (l->nodes + c > NW_YAML_MAX_NODES || l->alias_nodes + c > NW_YAML_MAX_ALIAS_NODES)
            return fail_at(l, m, "%s", "document too large (alias/merge expansion limit)");
        l->nodes += c;
        l->alias_nodes += c;
        cJSON *d = cJSON_Duplicate(e, 1);
        if (!d)
            return NW_ENOMEM;
        cJSON_AddItemToObject(merged, e->string, d);
    }
    return NW_OK;
}

static NW_MUST_USE nw_rc_t parse_mapping(loader_t *l, yaml_event_t *start, int depth, cJSON **out)
{
    cJSON *obj = cJSON_CreateObject();
    cJSON *merged = NULL;
    nw_rc_t rc = NW_OK;
    if (!obj)
        return NW_ENOMEM;
    const char *anchor = (const char *)start->data.mapping_start.anchor;
    char *anchor_name = anchor ? strdup(anchor) : NULL;
    size_t nodes_before = l->nodes;
    for (;;) {
        yaml_event_t kev, vev;
        if ((rc = next_event(l, &kev)) != NW_OK)
            goto out;
        if (kev.type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&kev);
            break;
        }
        yaml_mark_t km = kev.start_mark;
        bool is_merge = kev.type == YAML_SCALAR_EVENT &&
                        kev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
                        strcmp((const char *)kev.data.scalar.value, "<<") == 0 &&
                        (!kev.data.scalar.tag ||
                         strcmp((const char *)kev.data.scalar.tag, TAG_PREFIX "merge") == 0);
        cJSON *k = NULL;
        rc = parse_node(l, &kev, depth + 1, &k);
        yaml_event_delete(&kev);
        if (rc != NW_OK)
            goto out;
        retire(l, k); /* k stays readable until the document ends */
        if ((rc = next_event(l, &vev)) != NW_OK)
            goto out;
        yaml_mark_t vm = vev.start_mark;
        cJSON *v = NULL;
        rc = parse_node(l, &vev, depth + 1, &v);
        yaml_event_delete(&vev);
        if (rc != NW_OK)
            goto out;
        if (is_merge) {
            retire(l, v);
            if (!merged && !(merged = cJSON_CreateObject())) {
                rc = NW_ENOMEM;
                goto out;
            }
            if (cJSON_IsArray(v)) {
                for (const cJSON *e = v->child; e && rc == NW_OK; e = e->next)
                    rc = merge_into(l, merged, e, vm);
            } else {
                rc = merge_into(l, merged, v, vm);
            }
            if (rc != NW_OK)
                goto out;
            continue;
        }
        char *ks = NULL;
        rc = key_string(l, k, km, &ks);
        if (rc != NW_OK) {
            cJSON_Delete(v);
            goto out;
        }
        if (cJSON_GetObjectItemCaseSensitive(obj, ks)) {
            rc = fail_at(l, km, "mapping key \"%.200s\" already defined", ks);
            free(ks);
            cJSON_Delete(v);
            goto out;
        }
        cJSON_AddItemToObject(obj, ks, v);
        free(ks);
    }
    if (merged) {
        cJSON *e = merged->child;
        while (e) {
            cJSON *nx = e->next;
            if (!cJSON_GetObjectItemCaseSensitive(obj, e->string)) {
                cJSON *d = cJSON_DetachItemViaPointer(merged, e);
                cJSON_AddItemToObject(obj, d->string, d);
                /* cJSON_AddItemToObject copied the key; the detached item keeps its own */
            }
            e = nx;
        }
    }
    if (anchor_name && (rc = add_anchor(l, anchor_name, obj, l->nodes - nodes_before + 1)) != NW_OK)
        goto out;
out:
    free(anchor_name);
    cJSON_Delete(merged);
    if (rc != NW_OK) {
        cJSON_Delete(obj);
        return rc;
    }
    *out = obj;
    return NW_OK;
}

static NW_MUST_USE nw_rc_t parse_sequence(loader_t *l, yaml_event_t *start, int depth, cJSON **out)
{
    cJSON *arr = cJSON_CreateArray();
    nw_rc_t rc = NW_OK;
    if (!arr)
        return NW_ENOMEM;
    const char *anchor = (const char *)start->data.sequence_start.anchor;
    char *anchor_name = anchor ? strdup(anchor) : NULL;
    size_t nodes_before = l->nodes;
    for (;;) {
        yaml_event_t ev;
        if ((rc = next_event(l, &ev)) != NW_OK)
            goto out;
        if (ev.type == YAML_SEQUENCE_END_EVENT) {
            yaml_event_delete(&ev);
            break;
        }
        cJSON *v = NULL;
        rc = parse_node(l, &ev, depth + 1, &v);
        yaml_event_delete(&ev);
        if (rc != NW_OK)
            goto out;
        cJSON_AddItemToArray(arr, v);
    }
    if (anchor_name)
        rc = add_anchor(l, anchor_name, arr, l->nodes - nodes_before + 1);
out:
    free(anchor_name);
    if (rc != NW_OK) {
        cJSON_Delete(arr);
        return rc;
    }
    *out = arr;
    return NW_OK;
}

/* Build the node that starts with event ev (borrowed; the caller deletes it). */
static NW_MUST_USE nw_rc_t parse_node(loader_t *l, yaml_event_t *ev, int depth, cJSON **out)
{
    *out = NULL;
    if (depth > NW_YAML_MAX_DEPTH)
        return fail_at(l, ev->start_mark, "nesting deeper than %d levels", NW_YAML_MAX_DEPTH);
    if (++l->nodes > NW_YAML_MAX_NODES)
        return fail_at(l, ev->start_mark, "%s", "document too large (node limit)");
    switch (ev->type) {
    case YAML_SCALAR_EVENT: {
        nw_rc_t rc = scalar_value(l, ev, out);
        if (rc == NW_OK && ev->data.scalar.anchor) {
            rc = add_anchor(l, (const char *)ev->data.scalar.anchor, *out, 1);
            if (rc != NW_OK) {
                cJSON_Delete(*out);
                *out = NULL;
            }
        }
        return rc;
    }
    case YAML_MAPPING_START_EVENT:
        return parse_mapping(l, ev, depth, out);
    case YAML_SEQUENCE_START_EVENT:
        return parse_sequence(l, ev, depth, out);
    case YAML_ALIAS_EVENT: {
        const char *name = (const char *)ev->data.alias.anchor;
        /* the most recent definition of a name wins */
        for (size_t i = l->nanchors; i-- > 0;) {
            if (strcmp(l->anchors[i].name, name) != 0)
                continue;
            size_t c = l->anchors[i].nodes;
            if (l->nodes + c > NW_YAML_MAX_NODES || l->alias_nodes + c > NW_YAML_MAX_ALIAS_NODES)
                return fail_at(l, ev->start_mark, "%s",
                               "document too large (alias expansion limit)");
            l->nodes += c;
            l->alias_nodes += c;
            *out = cJSON_Duplicate(l->anchors[i].node, 1);
            return *out ? NW_OK : NW_ENOMEM;
        }
        return fail_at(l, ev->start_mark, "unknown anchor '%.200s' referenced", name);
    }
    default:
        return fail_at(l, ev->start_mark, "%s", "unexpected YAML event");
    }
}

/* ---- JSON fast path ---------------------------------------------------------------- */

static void line_col(const char *text, size_t off, size_t *line, size_t *col)
{
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < off; i++) {
        if (text[i] == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
    }
}

static bool depth_ok(const cJSON *n, int depth)
{
    if (depth > NW_YAML_MAX_DEPTH)
        return false;
    for (const cJSON *c = n->child; c; c = c->next)
        if (!depth_ok(c, depth + 1))
            return false;
    return true;
}

static const char *dup_key(const cJSON *n)
{
    for (const cJSON *c = n->child; c; c = c->next) {
        if (cJSON_IsObject(n))
            for (const cJSON *d = c->next; d; d = d->next)
                if (strcmp(c->string, d->string) == 0)
                    return c->string;
        const char *r = dup_key(c);
        if (r)
            return r;
    }
    return NULL;
}

typedef struct {
    cJSON **docs;
    size_t *lines;
    size_t n, cap;
} doclist_t;

static NW_MUST_USE nw_rc_t doclist_add(doclist_t *dl, cJSON *doc, size_t line)
{
    if (dl->n == dl->cap) {
        size_t nc = dl->cap ? dl->cap * 2 : 4;
        cJSON **nd = realloc(dl->docs, nc * sizeof *nd);
        if (!nd)
            return NW_ENOMEM;
        dl->docs = nd;
        size_t *nl = realloc(dl->lines, nc * sizeof *nl);
        if (!nl)
            return NW_ENOMEM;
        dl->lines = nl;
        dl->cap = nc;
    }
    dl->docs[dl->n] = doc;
    dl->lines[dl->n] = line;
    dl->n++;
    return NW_OK;
}

static void doclist_free(doclist_t *dl)
{
    nw_yaml_docs_free(dl->docs, dl->n);
    free(dl->lines);
    memset(dl, 0, sizeof *dl);
}

/* Returns NW_OK when the whole text is a stream of JSON values. NW_EPARSE with
 * jerr->rc unset means "not JSON, try YAML"; with jerr->rc set it is a hard error. */
static NW_MUST_USE nw_rc_t load_json(const char *text, size_t len, doclist_t *dl, nw_err_t *jerr)
{
    size_t off = 0;
    for (;;) {
        while (off < len && isspace((unsigned char)text[off]))
            off++;
        if (off >= len)
            break;
        if (text[off] != '{' && text[off] != '[')
            return NW_EPARSE;
        const char *end = NULL;
        cJSON *v = cJSON_ParseWithLengthOpts(text + off, len - off, &end, 0);
        if (!v)
            return NW_EPARSE;
        size_t line, col;
        line_col(text, off, &line, &col);
        if (!depth_ok(v, 0)) {
            cJSON_Delete(v);
            return nw_err_set(jerr, NW_EPARSE, NULL,
                              "line %zu, column %zu: nesting deeper than %d levels", line, col,
                              NW_YAML_MAX_DEPTH);
        }
        const char *dk = dup_key(v);
        if (dk) {
            nw_rc_t rc = nw_err_set(jerr, NW_EPARSE, NULL,
                                    "line %zu, column %zu: duplicate key \"%.200s\" in JSON object",
                                    line, col, dk);
            cJSON_Delete(v);
            return rc;
        }
        if (doclist_add(dl, v, line) != NW_OK) {
            cJSON_Delete(v);
            return nw_err_set(jerr, NW_ENOMEM, NULL, "out of memory");
        }
        off = (size_t)(end - text);
    }
    return NW_OK;
}

/* ---- public ------------------------------------------------------------------------ */

static NW_MUST_USE nw_rc_t load_yaml(const char *text, size_t len, doclist_t *dl, nw_err_t *err)
{
    loader_t l;
    memset(&l, 0, sizeof l);
    l.err = err;
    if (!yaml_parser_initialize(&l.p))
        return NW_ENOMEM;
    yaml_parser_set_input_string(&l.p, (const unsigned char *)text, len);
    nw_rc_t rc = NW_OK;
    yaml_event_t ev;
    bool done = false;
    while (!done) {
        if ((rc = next_event(&l, &ev)) != NW_OK)
            break;
        switch (ev.type) {
        case YAML_STREAM_END_EVENT:
            done = true;
            break;
        case YAML_DOCUMENT_START_EVENT: {
            size_t line = ev.start_mark.line + 1;
            yaml_event_t nev;
            if ((rc = next_event(&l, &nev)) != NW_OK)
                break;
            cJSON *doc = NULL;
            /* the first content line when the document has no explicit `---` */
            if (ev.data.document_start.implicit)
                line = nev.start_mark.line + 1;
            rc = parse_node(&l, &nev, 0, &doc);
            yaml_event_delete(&nev);
            if (rc != NW_OK)
                break;
            if (!depth_ok(doc, 0)) { /* aliases can nest deeper than the text does */
                rc = nw_err_set(
                    err, NW_EPARSE, NULL,
                    "line %zu, column %zu: nesting deeper than %d levels (through aliases)", line,
                    (size_t)1, NW_YAML_MAX_DEPTH);
                cJSON_Delete(doc);
                break;
            }
            yaml_event_t eev;
            if ((rc = next_event(&l, &eev)) != NW_OK) {
                cJSON_Delete(doc);
                break;
            }
            yaml_event_delete(&eev);
            if ((rc = doclist_add(dl, doc, line)) != NW_OK) {
                cJSON_Delete(doc);
                break;
            }
            clear_anchors(&l); /* anchors do not cross documents */
            break;
        }
        default:
            break;
        }
        yaml_event_delete(&ev);
        if (rc != NW_OK)
            break;
    }
    clear_anchors(&l);
    free(l.anchors);
    yaml_parser_delete(&l.p);
    if (rc == NW_ENOMEM)
        nw_err_set(err, NW_ENOMEM, NULL, "out of memory");
    return rc;
}

nw_rc_t nw_yaml_load_docs_lines(const char *text, size_t len, cJSON ***docs, size_t **lines,
                                size_t *ndocs, nw_err_t *err)
{
    *docs = NULL;
    *ndocs = 0;
    if (lines)
        *lines = NULL;
    doclist_t dl = {0};
    size_t p = 0;
    /* skip a UTF-8 byte order mark and whitespace to sniff JSON */
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
        p = 3;
    while (p < len && isspace((unsigned char)text[p]))
        p++;
    nw_rc_t rc = NW_EPARSE;
    nw_err_t e = {0};
    if (p < len && (text[p] == '{' || text[p] == '[')) {
        rc = load_json(text + p, len - p, &dl, &e);
        if (rc == NW_OK) {
            for (size_t i = 0; i < dl.n; i++) { /* lines relative to text + p */
                size_t l0, c0;
                line_col(text, p, &l0, &c0);
                dl.lines[i] += l0 - 1;
            }
        } else {
            doclist_free(&dl);
            if (e.rc != NW_OK) {
                if (err)
                    *err = e;
                return e.rc;
            }
        }
    }
    if (rc != NW_OK) {
        rc = load_yaml(text, len, &dl, &e);
        if (rc != NW_OK) {
            if (err)
                *err = e;
            doclist_free(&dl);
            return rc;
        }
    }
    *docs = dl.docs;
    *ndocs = dl.n;
    if (lines)
        *lines = dl.lines;
    else
        free(dl.lines);
    return NW_OK;
}

nw_rc_t nw_yaml_load_docs(const char *text, size_t len, cJSON ***docs, size_t *ndocs, nw_err_t *err)
{
    return nw_yaml_load_docs_lines(text, len, docs, NULL, ndocs, err);
}

void nw_yaml_docs_free(cJSON **docs, size_t ndocs)
{
    if (!docs)
        return;
    for (size_t i = 0; i < ndocs; i++)
        cJSON_Delete(docs[i]);
    free(docs);
}

/* ---- emitter ----------------------------------------------------------------------- */

static int write_cb(void *data, unsigned char *buffer, size_t size)
{
    return nw_buf_add((nw_buf_t *)data, buffer, size) == NW_OK;
}

static bool emit_scalar(yaml_emitter_t *em, const char *s, yaml_scalar_style_t style)
{
    yaml_event_t ev;
    if (!yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)strlen(s), 1, 1,
                                      style))
        return false;
    return yaml_emitter_emit(em, &ev);
}

static void format_number(double d, char *buf, size_t n)
{
    if (d == floor(d) && fabs(d) < 9007199254740992.0) {
        snprintf(buf, n, "%lld", (long long)d);
        return;
    }
    snprintf(buf, n, "%.15g", d);
    if (strtod(buf, NULL) != d)
        snprintf(buf, n, "%.17g", d);
}

static bool emit_node(yaml_emitter_t *em, const cJSON *n)
{
    yaml_event_t ev;
    if (cJSON_IsObject(n)) {
        if (!yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1,
                                                 n->child ? YAML_BLOCK_MAPPING_STYLE
                                                          : YAML_FLOW_MAPPING_STYLE) ||
            !yaml_emitter_emit(em, &ev))
            return false;
        for (const cJSON *c = n->child; c; c = c->next) {
            double num;
            bool b;
            rkind_t k = c->string[0] ? resolve_plain(c->string, &num, &b) : R_NULL;
            bool quote = k != R_STR || strcmp(c->string, "<<") == 0; /* not a merge key */
            if (!emit_scalar(em, c->string,
                             quote ? YAML_DOUBLE_QUOTED_SCALAR_STYLE : YAML_ANY_SCALAR_STYLE) ||
                !emit_node(em, c))
                return false;
        }
        if (!yaml_mapping_end_event_initialize(&ev) || !yaml_emitter_emit(em, &ev))
            return false;
        return true;
    }
    if (cJSON_IsArray(n)) {
        if (!yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1,
                                                  n->child ? YAML_BLOCK_SEQUENCE_STYLE
                                                           : YAML_FLOW_SEQUENCE_STYLE) ||
            !yaml_emitter_emit(em, &ev))
            return false;
        for (const cJSON *c = n->child; c; c = c->next)
            if (!emit_node(em, c))
                return false;
        if (!yaml_sequence_end_event_initialize(&ev) || !yaml_emitter_emit(em, &ev))
            return false;
        return true;
    }
    if (cJSON_IsString(n)) {
        double num;
        bool b;
        rkind_t k = resolve_plain(n->valuestring, &num, &b);
        return emit_scalar(em, n->valuestring,
                           k == R_STR ? YAML_ANY_SCALAR_STYLE : YAML_DOUBLE_QUOTED_SCALAR_STYLE);
    }
    if (cJSON_IsNumber(n)) {
        char buf[64];
        format_number(n->valuedouble, buf, sizeof buf);
        return emit_scalar(em, buf, YAML_PLAIN_SCALAR_STYLE);
    }
    if (cJSON_IsBool(n))
        return emit_scalar(em, cJSON_IsTrue(n) ? "true" : "false", YAML_PLAIN_SCALAR_STYLE);
    return emit_scalar(em, "null", YAML_PLAIN_SCALAR_STYLE);
}

nw_rc_t nw_yaml_emit(const cJSON *doc, char **out, size_t *outlen, nw_err_t *err)
{
    *out = NULL;
    if (outlen)
        *outlen = 0;
    nw_buf_t b;
    nw_buf_init(&b, (size_t)64 << 20);
    yaml_emitter_t em;
    if (!yaml_emitter_initialize(&em))
        return nw_err_set(err, NW_ENOMEM, NULL, "out of memory");
    yaml_emitter_set_output(&em, write_cb, &b);
    yaml_emitter_set_unicode(&em, 1);
    yaml_emitter_set_indent(&em, 2);
    yaml_emitter_set_width(&em, -1);
    yaml_event_t ev;
    bool ok = yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING) &&
              yaml_emitter_emit(&em, &ev) &&
              yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1) &&
              yaml_emitter_emit(&em, &ev) && emit_node(&em, doc) &&
              yaml_document_end_event_initialize(&ev, 1) && yaml_emitter_emit(&em, &ev) &&
              yaml_stream_end_event_initialize(&ev) && yaml_emitter_emit(&em, &ev) &&
              yaml_emitter_flush(&em);
    nw_rc_t rc = NW_OK;
    if (!ok)
        rc = nw_err_set(err, NW_EINVAL, NULL, "yaml emitter: %s",
                        em.problem ? em.problem : "write failed");
    yaml_emitter_delete(&em);
    if (rc != NW_OK) {
        nw_buf_cleanup(&b);
        return rc;
    }
    if (outlen)
        *outlen = b.len;
    *out = nw_buf_take(&b);
    nw_buf_cleanup(&b);
    return *out ? NW_OK : nw_err_set(err, NW_ENOMEM, NULL, "out of memory");
}
