/* tests/unit/admitcase.c — runs tests/data admission case files (see admitcase.h). */
#include "admitcase.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission/handlers.h"
#include "api/admit.h"
#include "api/jsonpatch.h"
#include "common/yaml.h"
#include "testutil.h"

static int has_line(const cJSON *causes, const char *line)
{
    for (const cJSON *c = causes ? causes->child : NULL; c; c = c->next) {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(c, "field");
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(c, "message");
        size_t fl = strlen(f->valuestring);
        if (strncmp(line, f->valuestring, fl) == 0 && strncmp(line + fl, ": ", 2) == 0 &&
            strcmp(line + fl + 2, m->valuestring) == 0)
            return 1;
    }
    return 0;
}

static int has_contains(const cJSON *causes, const char *path, const char *sub)
{
    for (const cJSON *c = causes ? causes->child : NULL; c; c = c->next) {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(c, "field");
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(c, "message");
        if (strcmp(f->valuestring, path) == 0 && strstr(m->valuestring, sub))
            return 1;
    }
    return 0;
}

static void run_handler(nw_admit_fn fn, nw_admit_req_t *req, nw_admit_result_t *res,
                        const char *path)
{
    nw_admit_ctx_t ctx = {.gpu = NULL, .self_namespace = ""};
    nw_admit_result_init(res);
    ck_assert_msg(fn(&ctx, req, res) == NW_OK, "%s: handler failed", path);
}

void nw_test_admit_case(const char *path, const char *group, const char *kind)
{
    size_t len = 0;
    char *text = nw_test_read_file(path, &len);
    cJSON **docs = NULL;
    size_t n = 0;
    nw_err_t err = {0};
    ck_assert_msg(nw_yaml_load_docs(text, len, &docs, &n, &err) == NW_OK, "%s: %s", path, err.msg);
    free(text);
    ck_assert_msg(n >= 2 && cJSON_IsObject(docs[0]), "%s: want a header and an object", path);
    const cJSON *hdr = docs[0];
    const cJSON *expect = cJSON_GetObjectItemCaseSensitive(hdr, "expect");
    const cJSON *opj = cJSON_GetObjectItemCaseSensitive(hdr, "op");
    int update = cJSON_IsString(opj) && strcmp(opj->valuestring, "UPDATE") == 0;
    ck_assert_msg(!update || n >= 3, "%s: UPDATE needs the old object as document 3", path);
    const nw_admit_handler_t *h = nw_handlers_find(group, kind);
    ck_assert_ptr_nonnull(h);

    nw_admit_req_t req = {0};
    req.op = update ? NW_OP_UPDATE : NW_OP_CREATE;
    req.uid = "u";
    req.group = group;
    req.version = "v1";
    req.kind = kind;
    req.name = "";
    req.namespace_ = "";
    req.subresource = "";
    req.object = docs[1];
    req.old_object = update ? docs[2] : NULL;

    /* defaulting: exact patch when given, idempotence always */
    nw_admit_result_t res;
    run_handler(h->mutate, &req, &res, path);
    const cJSON *want_patch = cJSON_GetObjectItemCaseSensitive(hdr, "patch");
    if (want_patch) {
        if (cJSON_IsNull(want_patch)) {
            ck_assert_msg(res.patch == NULL, "%s: unexpected patch %s", path, res.patch);
        } else {
            ck_assert_msg(res.patch != NULL, "%s: expected a patch", path);
            cJSON *got = cJSON_Parse(res.patch);
            ck_assert_msg(cJSON_Compare(got, want_patch, 1), "%s: patch %s", path, res.patch);
            cJSON_Delete(got);
        }
    }
    cJSON *defaulted = cJSON_Duplicate(docs[1], 1);
    if (res.patch)
        ck_assert_msg(nw_jsonpatch_apply_text(&defaulted, res.patch, &err) == NW_OK,
                      "%s: apply: %s", path, err.msg);
    nw_admit_result_cleanup(&res);
    req.object = defaulted;
    run_handler(h->mutate, &req, &res, path);
    ck_assert_msg(res.patch == NULL, "%s: second pass patched: %s", path, res.patch);
    nw_admit_result_cleanup(&res);

    /* validation of the defaulted object and of the raw input agree */
    nw_admit_result_t res2;
    run_handler(h->validate, &req, &res2, path);
    req.object = docs[1];
    run_handler(h->validate, &req, &res, path);
    ck_assert_int_eq(res.allowed, res2.allowed);
    if (!res.allowed)
        ck_assert_str_eq(res.message, res2.message);
    nw_admit_result_cleanup(&res2);

    ck_assert_msg(expect != NULL, "%s: no expect", path);
    const cJSON *causes =
        res.details ? cJSON_GetObjectItemCaseSensitive(res.details, "causes") : NULL;
    if (cJSON_IsString(expect)) {
        ck_assert_msg(strcmp(expect->valuestring, "allowed") == 0, "%s: bad expect", path);
        ck_assert_msg(res.allowed, "%s: denied: %s", path, res.message ? res.message : "");
    } else {
        ck_assert_msg(cJSON_IsArray(expect), "%s: bad expect", path);
        ck_assert_msg(!res.allowed, "%s: allowed but expected errors", path);
        ck_assert_int_eq(res.code, 422);
        ck_assert_str_eq(res.reason, "Invalid");
        int exact = 1, nwant = 0;
        for (const cJSON *e = expect->child; e; e = e->next, nwant++) {
            if (cJSON_IsString(e)) {
                ck_assert_msg(has_line(causes, e->valuestring), "%s: missing error\n  %s\ngot: %s",
                              path, e->valuestring, res.message);
            } else {
                exact = 0;
                const cJSON *p = cJSON_GetObjectItemCaseSensitive(e, "path");
                const cJSON *c = cJSON_GetObjectItemCaseSensitive(e, "contains");
                ck_assert_msg(cJSON_IsString(p) && cJSON_IsString(c), "%s: bad expect item", path);
                ck_assert_msg(has_contains(causes, p->valuestring, c->valuestring),
                              "%s: no error at %s containing '%s'\ngot: %s", path, p->valuestring,
                              c->valuestring, res.message);
            }
        }
        if (exact)
            ck_assert_msg(cJSON_GetArraySize(causes) == nwant, "%s: %d errors, want %d: %s", path,
                          cJSON_GetArraySize(causes), nwant, res.message);
    }
    const cJSON *warns = cJSON_GetObjectItemCaseSensitive(hdr, "warnings");
    for (const cJSON *w = warns ? warns->child : NULL; w; w = w->next) {
        int found = 0;
        for (size_t i = 0; i < res.nwarnings && !found; i++)
            found = strstr(res.warnings[i], w->valuestring) != NULL;
        ck_assert_msg(found, "%s: no warning containing '%s' (%zu warnings%s%s)", path,
                      w->valuestring, res.nwarnings, res.nwarnings ? ", first: " : "",
                      res.nwarnings ? res.warnings[0] : "");
    }
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(hdr, "nowarnings")))
        ck_assert_msg(res.nwarnings == 0, "%s: unexpected warning: %s", path, res.warnings[0]);
    nw_admit_result_cleanup(&res);
    cJSON_Delete(defaulted);
    nw_yaml_docs_free(docs, n);
}
