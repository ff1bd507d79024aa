/* api/jsonpatch.c — RFC 6902 JSON Patch: building and applying. */
#include "api/jsonpatch.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void nw_jsonpatch_init(nw_jsonpatch_t *p)
{
    p->ops = NULL;
    p->rc = NW_OK;
}

void nw_jsonpatch_cleanup(nw_jsonpatch_t *p)
{
    if (!p)
        return;
    cJSON_Delete(p->ops);
    nw_jsonpatch_init(p);
}

nw_rc_t nw_jsonpatch_add(nw_jsonpatch_t *p, const char *op, const char *path, const cJSON *value)
{
    if (p->rc != NW_OK)
        return p->rc;
    if (!p->ops && !(p->ops = cJSON_CreateArray()))
        return p->rc = NW_ENOMEM;
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddStringToObject(o, "op", op) || !cJSON_AddStringToObject(o, "path", path)) {
        cJSON_Delete(o);
        return p->rc = NW_ENOMEM;
    }
    if (value) {
        cJSON *v = cJSON_Duplicate(value, 1);
        if (!v || !cJSON_AddItemToObject(o, "value", v)) {
            cJSON_Delete(v);
            cJSON_Delete(o);
            return p->rc = NW_ENOMEM;
        }
    }
    cJSON_AddItemToArray(p->ops, o);
    return NW_OK;
}

size_t nw_jsonpatch_len(const nw_jsonpatch_t *p)
{
    return p->ops ? (size_t)cJSON_GetArraySize(p->ops) : 0;
}

char *nw_jsonpatch_take_text(nw_jsonpatch_t *p)
{
    char *s = NULL;
    if (p->rc == NW_OK && nw_jsonpatch_len(p) > 0) {
        /* the text outlives the tree and is released with free(): a malloc'd copy, not
         * cJSON's own buffer (which may come from the request's arena, common/jsonarena.h) */
        char *t = cJSON_PrintUnformatted(p->ops);
        s = t ? strdup(t) : NULL;
        cJSON_free(t);
        if (!s)
            p->rc = NW_ENOMEM;
    }
    cJSON_Delete(p->ops);
    p->ops = NULL;
    return s;
}

nw_rc_t nw_jsonpatch_escape(const char *token, char *out, size_t cap)
{
    size_t k = 0;
    for (const char *s = token; *s; s++) {
        const char *rep = *s == '~' ? "~0" : *s == '/' ? "~1" : NULL;
        size_t need = rep ? 2 : 1;
        if (k + need >= cap) {
            if (cap)
                out[0] = 0;
            return NW_ERANGE;
        }
        if (rep) {
            out[k++] = rep[0];
            out[k++] = rep[1];
        } else {
            out[k++] = *s;
        }
    }
    if (k >= cap)
        return NW_ERANGE;
    out[k] = 0;
    return NW_OK;
}

/* ---- applying ---------------------------------------------------------------------- */

typedef struct {
    char **tok;
    size_t n;
} ptr_t;

static void ptr_free(ptr_t *p)
{
    for (size_t i = 0; i < p->n; i++)
        free(p->tok[i]);
    free(p->tok);
    p->tok = NULL;
    p->n = 0;
}

/* Split and unescape a JSON pointer; NW_EINVAL on bad syntax. */
static NW_MUST_USE nw_rc_t ptr_parse(const char *s, ptr_t *p)
{
    p->tok = NULL;
    p->n = 0;
    if (!*s)
        return NW_OK;
    if (*s != '/')
        return NW_EINVAL;
    size_t count = 0;
    for (const char *c = s; *c; c++)
        count += *c == '/';
    p->tok = calloc(count, sizeof *p->tok);
    if (!p->tok)
        return NW_ENOMEM;
    const char *c = s + 1;
    for (;;) {
        const char *e = strchr(c, '/');
        size_t len = e ? (size_t)(e - c) : strlen(c);
        char *t = malloc(len + 1);
        if (!t) {
            ptr_free(p);
            return NW_ENOMEM;
        }
        size_t k = 0;
        for (size_t i = 0; i < len; i++) {
            if (c[i] == '~') {
                if (i + 1 < len && c[i + 1] == '0')
                    t[k++] = '~';
                else if (i + 1 < len && c[i + 1] == '1')
                    t[k++] = '/';
                else {
                    free(t);
                    ptr_free(p);
                    return NW_EINVAL;
                }
                i++;
            } else {
                t[k++] = c[i];
            }
        }
        t[k] = 0;
        p->tok[p->n++] = t;
        if (!e)
            break;
        c = e + 1;
    }
    return NW_OK;
}

/* Array index token: "0" or [1-9][0-9]*; -1 if not one. */
static long arr_index(const char *t)
{
    if (!*t || (t[0] == '0' && t[1]))
        return -1;
    long v = 0;
    for (const char *c = t; *c; c++) {
        if (*c < '0' || *c > '9' || v > 100000000L)
            return -1;
        v = v * 10 + (*c - '0');
    }
    return v;
}

static cJSON *child(cJSON *node, const char *tok)
{
    if (cJSON_IsObject(node))
        return cJSON_GetObjectItemCaseSensitive(node, tok);
    if (cJSON_IsArray(node)) {
        long i = arr_index(tok);
        if (i < 0 || i >= cJSON_GetArraySize(node))
            return NULL;
        return cJSON_GetArrayItem(node, (int)i);
    }
    return NULL;
}

/* Resolve the first n tokens. */
static cJSON *resolve(cJSON *root, const ptr_t *p, size_t n)
{
    cJSON *cur = root;
    for (size_t i = 0; i < n && cur; i++)
        cur = child(cur, p->tok[i]);
    return cur;
}

/* Insert at index i < size. (cJSON 1.7.15's cJSON_InsertItemInArray fails on
 * arrays it parsed, so re-append the tail instead.) */
static void arr_insert(cJSON *arr, int i, cJSON *v)
{
    cJSON *tail = cJSON_CreateArray();
    if (!tail) {
        cJSON_AddItemToArray(arr, v);
        return;
    }
    while (cJSON_GetArraySize(arr) > i)
        cJSON_AddItemToArray(tail, cJSON_DetachItemFromArray(arr, i));
    cJSON_AddItemToArray(arr, v);
    while (cJSON_GetArraySize(tail) > 0)
        cJSON_AddItemToArray(arr, cJSON_DetachItemFromArray(tail, 0));
    cJSON_Delete(tail);
}

/* Put value (owned) at pointer p, as "add" does (replace=0) or "replace" (1). */
static NW_MUST_USE nw_rc_t put(cJSON **root, const ptr_t *p, cJSON *value, int replace,
                               const char **why)
{
    if (p->n == 0) {
        cJSON_Delete(*root);
        *root = value;
        return NW_OK;
    }
    cJSON *parent = resolve(*root, p, p->n - 1);
    const char *last = p->tok[p->n - 1];
    if (!parent) {
        *why = "parent path does not exist";
        return NW_ENOTFOUND;
    }
    if (cJSON_IsObject(parent)) {
        cJSON *old = cJSON_GetObjectItemCaseSensitive(parent, last);
        if (old) {
            if (!cJSON_ReplaceItemInObjectCaseSensitive(parent, last, value)) {
                *why = "out of memory";
                return NW_ENOMEM;
            }
            return NW_OK;
        }
        if (replace) {
            *why = "path does not exist";
            return NW_ENOTFOUND;
        }
        if (!cJSON_AddItemToObject(parent, last, value)) {
            *why = "out of memory";
            return NW_ENOMEM;
        }
        return NW_OK;
    }
    if (cJSON_IsArray(parent)) {
        int size = cJSON_GetArraySize(parent);
        long i = strcmp(last, "-") == 0 && !replace ? size : arr_index(last);
        if (i < 0 || i > size || (replace && i == size)) {
            *why = "array index out of range";
            return NW_ERANGE;
        }
        if (replace)
            cJSON_ReplaceItemInArray(parent, (int)i, value);
        else if (i == size)
            cJSON_AddItemToArray(parent, value);
        else
            arr_insert(parent, (int)i, value);
        return NW_OK;
    }
    *why = "parent is not an object or array";
    return NW_EINVAL;
}

/* Detach the value at p (owned by the caller afterwards). */
static cJSON *take(cJSON *root, const ptr_t *p)
{
    if (p->n == 0)
        return NULL;
    cJSON *parent = resolve(root, p, p->n - 1);
    cJSON *target = parent ? child(parent, p->tok[p->n - 1]) : NULL;
    return target ? cJSON_DetachItemViaPointer(parent, target) : NULL;
}

static NW_MUST_USE nw_rc_t apply_one(cJSON **doc, const cJSON *op, size_t idx, nw_err_t *err)
{
    char where[32];
    snprintf(where, sizeof where, "[%zu]", idx);
    const cJSON *jop = cJSON_GetObjectItemCaseSensitive(op, "op");
    const cJSON *jpath = cJSON_GetObjectItemCaseSensitive(op, "path");
    const cJSON *jval = cJSON_GetObjectItemCaseSensitive(op, "value");
    const cJSON *jfrom = cJSON_GetObjectItemCaseSensitive(op, "from");
    if (!cJSON_IsObject(op))
        return nw_err_set(err, NW_EINVAL, where, "operation is not an object");
    if (!cJSON_IsString(jop))
        return nw_err_set(err, NW_EINVAL, where, "missing \"op\"");
    if (!cJSON_IsString(jpath))
        return nw_err_set(err, NW_EINVAL, where, "missing \"path\"");
    const char *o = jop->valuestring;
    bool needs_value = !strcmp(o, "add") || !strcmp(o, "replace") || !strcmp(o, "test");
    bool needs_from = !strcmp(o, "move") || !strcmp(o, "copy");
    if (!needs_value && !needs_from && strcmp(o, "remove") != 0)
        return nw_err_set(err, NW_EINVAL, where, "unknown op \"%.40s\"", o);
    if (needs_value && !jval)
        return nw_err_set(err, NW_EINVAL, where, "op \"%s\" needs \"value\"", o);
    if (needs_from && !cJSON_IsString(jfrom))
        return nw_err_set(err, NW_EINVAL, where, "op \"%s\" needs \"from\"", o);
    ptr_t p, f = {0};
    nw_rc_t rc = ptr_parse(jpath->valuestring, &p);
    if (rc != NW_OK)
        return nw_err_set(err, rc, where, "bad JSON pointer \"%.100s\"", jpath->valuestring);
    if (needs_from && (rc = ptr_parse(jfrom->valuestring, &f)) != NW_OK) {
        ptr_free(&p);
        return nw_err_set(err, rc, where, "bad JSON pointer \"%.100s\"", jfrom->valuestring);
    }
    const char *why = NULL;
    if (!strcmp(o, "test")) {
        cJSON *t = resolve(*doc, &p, p.n);
        if (!t || !cJSON_Compare(t, jval, 1)) {
            why = "test failed";
            rc = NW_ECONFLICT;
        }
    } else if (!strcmp(o, "remove")) {
        cJSON *t = p.n ? take(*doc, &p) : NULL;
        if (!t) {
            why = p.n ? "path does not exist" : "cannot remove the root";
            rc = NW_ENOTFOUND;
        }
        cJSON_Delete(t);
    } else if (!strcmp(o, "add") || !strcmp(o, "replace")) {
        if (!strcmp(o, "replace") && !resolve(*doc, &p, p.n)) {
            why = "path does not exist";
            rc = NW_ENOTFOUND;
        } else {
            cJSON *v = cJSON_Duplicate(jval, 1);
            if (!v) {
                rc = NW_ENOMEM;
                why = "out of memory";
            } else if ((rc = put(doc, &p, v, !strcmp(o, "replace"), &why)) != NW_OK) {
                cJSON_Delete(v);
            }
        }
    } else { /* move, copy */
        size_t fl = strlen(jfrom->valuestring);
        if (!strcmp(o, "move") && strncmp(jpath->valuestring, jfrom->valuestring, fl) == 0 &&
            jpath->valuestring[fl] == '/') {
            why = "cannot move a value into itself";
            rc = NW_EINVAL;
        } else {
            cJSON *src = resolve(*doc, &f, f.n);
            cJSON *v = NULL;
            if (!src) {
                why = "from path does not exist";
                rc = NW_ENOTFOUND;
            } else if (!strcmp(o, "copy") || f.n == 0) {
                v = cJSON_Duplicate(src, 1);
                if (!v) {
                    why = "out of memory";
                    rc = NW_ENOMEM;
                }
            } else {
                v = take(*doc, &f);
            }
            if (v && (rc = put(doc, &p, v, 0, &why)) != NW_OK)
                cJSON_Delete(v);
        }
    }
    if (rc != NW_OK)
        nw_err_set(err, rc, where, "%s %s: %s", o, jpath->valuestring,
                   why ? why : nw_err_rc_str(rc));
    ptr_free(&p);
    ptr_free(&f);
    return rc;
}

nw_rc_t nw_jsonpatch_apply(cJSON **doc, const cJSON *patch, nw_err_t *err)
{
    if (!cJSON_IsArray(patch))
        return nw_err_set(err, NW_EINVAL, "", "a JSON patch must be an array");
    cJSON *work = *doc ? cJSON_Duplicate(*doc, 1) : cJSON_CreateNull();
    if (!work)
        return nw_err_set(err, NW_ENOMEM, "", "out of memory");
    size_t i = 0;
    for (const cJSON *op = patch->child; op; op = op->next, i++) {
        nw_rc_t rc = apply_one(&work, op, i, err);
        if (rc != NW_OK) {
            cJSON_Delete(work);
            return rc;
        }
    }
    cJSON_Delete(*doc);
    *doc = work;
    return NW_OK;
}

nw_rc_t nw_jsonpatch_apply_text(cJSON **doc, const char *patch, nw_err_t *err)
{
    const char *end = NULL;
    cJSON *p = cJSON_ParseWithLengthOpts(patch, strlen(patch) + 1, &end, 1);
    if (!p)
        return nw_err_set(err, NW_EPARSE, "", "patch is not valid JSON");
    nw_rc_t rc = nw_jsonpatch_apply(doc, p, err);
    cJSON_Delete(p);
    return rc;
}
