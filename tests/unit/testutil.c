#include "tests/unit/testutil.h"

#include <check.h>
#include <cjson/cJSON.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *nw_test_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    ck_assert_ptr_nonnull(buf);
    size_t r;
    while ((r = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += r;
        if (cap - n - 1 == 0) {
            cap *= 2;
            buf = realloc(buf, cap);
            ck_assert_ptr_nonnull(buf);
        }
    }
    fclose(f);
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

int nw_test_split_tabs(char *s, char **fields, int max)
{
    int n = 0;
    while (n < max) {
        fields[n++] = s;
        char *t = strchr(s, '\t');
        if (!t)
            break;
        *t = '\0';
        s = t + 1;
    }
    return n;
}

int nw_test_split_ws(char *s, char **fields, int max)
{
    int n = 0;
    char *p = s;
    while (*p && n < max) {
        while (isspace((unsigned char)*p))
            p++;
        if (!*p)
            break;
        char *out = p;
        fields[n++] = out;
        while (*p && !isspace((unsigned char)*p)) {
            if (*p == '"') {
                p++;
                while (*p && *p != '"')
                    *out++ = *p++;
                if (*p == '"')
                    p++;
            } else {
                *out++ = *p++;
            }
        }
        char *next = *p ? p + 1 : p;
        *out = '\0';
        p = next;
    }
    return n;
}

/* ---- data cases, one Check test each ---- */

static void oom(void)
{
    fprintf(stderr, "out of memory building test suites\n");
    exit(2);
}

static char *xstrdup(const char *s)
{
    char *d = strdup(s);
    if (!d)
        oom();
    return d;
}

static nw_test_cases_t *cases_new(const char *source)
{
    nw_test_cases_t *cs = calloc(1, sizeof *cs);
    if (!cs)
        oom();
    cs->source = xstrdup(source);
    return cs;
}

static void cases_push(nw_test_cases_t *cs, int *cap, nw_test_case_t c)
{
    if (cs->n == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        nw_test_case_t *nv = realloc(cs->v, (size_t)*cap * sizeof *nv);
        if (!nv)
            oom();
        cs->v = nv;
    }
    cs->v[cs->n++] = c;
}

static void cases_check_min(nw_test_cases_t *cs, int min, const char *what)
{
    if (min < 1)
        min = 1;
    if (!cs->error && cs->n < min &&
        asprintf(&cs->error,
                 "%s: %d %s, want at least %d (a data folder or case file that "
                 "tests nothing must not pass)",
                 cs->source, cs->n, what, min) < 0)
        oom();
}

static int cmp_case(const void *a, const void *b)
{
    return strcmp(((const nw_test_case_t *)a)->path, ((const nw_test_case_t *)b)->path);
}

const nw_test_cases_t *nw_test_cases_dir(const char *dir, const char *suffix, int min)
{
    nw_test_cases_t *cs = cases_new(dir);
    DIR *d = opendir(dir);
    if (!d) {
        if (asprintf(&cs->error, "%s: cannot open the case folder: %s", dir, strerror(errno)) < 0)
            oom();
        return cs;
    }
    int cap = 0;
    size_t sl = strlen(suffix);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t nl = strlen(e->d_name);
        if (e->d_name[0] == '.' || nl < sl || strcmp(e->d_name + nl - sl, suffix) != 0)
            continue;
        nw_test_case_t c = {0};
        if (asprintf(&c.path, "%s/%s", dir, e->d_name) < 0)
            oom();
        c.name = c.path;
        cases_push(cs, &cap, c);
    }
    closedir(d);
    if (cs->n)
        qsort(cs->v, (size_t)cs->n, sizeof *cs->v, cmp_case);
    cases_check_min(cs, min, "case files");
    return cs;
}

const nw_test_cases_t *nw_test_cases_lines(const char *path, int min)
{
    nw_test_cases_t *cs = cases_new(path);
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (asprintf(&cs->error, "%s: cannot open the case file: %s", path, strerror(errno)) < 0)
            oom();
        return cs;
    }
    int cap = 0, lineno = 0;
    char *buf = NULL;
    size_t bcap = 0;
    ssize_t len;
    while ((len = getline(&buf, &bcap, f)) >= 0) {
        lineno++;
        while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
            buf[--len] = '\0';
        const char *q = buf;
        while (*q == ' ' || *q == '\t')
            q++;
        if (!*q || *q == '#')
            continue;
        nw_test_case_t c = {0};
        c.path = cs->source;
        c.text = xstrdup(buf);
        c.lineno = lineno;
        if (asprintf(&c.name, "%s:%d", path, lineno) < 0)
            oom();
        cases_push(cs, &cap, c);
    }
    free(buf);
    fclose(f);
    cases_check_min(cs, min, "cases");
    return cs;
}

const nw_test_cases_t *nw_test_cases_json(const char *path, int min)
{
    nw_test_cases_t *cs = cases_new(path);
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (asprintf(&cs->error, "%s: cannot open the case file: %s", path, strerror(errno)) < 0)
            oom();
        return cs;
    }
    char *text = NULL;
    size_t tcap = 0;
    ssize_t len = getdelim(&text, &tcap, '\0', f);
    fclose(f);
    cJSON *arr = len > 0 ? cJSON_Parse(text) : NULL;
    free(text);
    if (!cJSON_IsArray(arr)) {
        if (asprintf(&cs->error, "%s: not a JSON array of cases", path) < 0)
            oom();
        cJSON_Delete(arr);
        return cs;
    }
    int cap = 0, i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, arr)
    {
        nw_test_case_t c = {0};
        c.path = cs->source;
        c.text = cJSON_PrintUnformatted(e);
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(e, "name");
        if (!c.text || asprintf(&c.name, "%s[%d]%s%s", path, i, cJSON_IsString(nm) ? " " : "",
                                cJSON_IsString(nm) ? nm->valuestring : "") < 0)
            oom();
        cases_push(cs, &cap, c);
        i++;
    }
    cJSON_Delete(arr);
    cases_check_min(cs, min, "cases");
    return cs;
}

/* the sources that did not load, one failing iteration each */
static const nw_test_cases_t *broken[64];
static int nbroken;

START_TEST(data_cases_missing)
{
    ck_abort_msg("%s", broken[_i]->error);
}
END_TEST

void nw_test_add_cases(TCase *tc, const TTest *fn, const nw_test_cases_t *cs)
{
    if (cs->error || cs->n == 0) {
        if (nbroken == (int)(sizeof broken / sizeof broken[0])) {
            fprintf(stderr, "%s: %s\n", cs->source, cs->error ? cs->error : "no cases");
            exit(2);
        }
        broken[nbroken] = cs;
        _tcase_add_test(tc, data_cases_missing, 0, 0, nbroken, nbroken + 1);
        nbroken++;
        return;
    }
    _tcase_add_test(tc, fn, 0, 0, 0, cs->n);
}

const nw_test_case_t *nw_test_case(const nw_test_cases_t *cs, int i)
{
    ck_assert_msg(i >= 0 && i < cs->n, "%s: no case %d", cs->source, i);
    nw_test_case_t *c = &cs->v[i]; /* the tables are ours: see cases_new */
    if (c->text) {
        free(c->line);
        c->line = xstrdup(c->text);
    }
    return c;
}

/* ---- pod records ---- */

/* a copy of json (an object) with metadata.name set to dflt when it has none */
static cJSON *named_copy(const cJSON *json, const char *dflt)
{
    cJSON *copy = cJSON_IsObject(json) ? cJSON_Duplicate(json, 1) : cJSON_CreateObject();
    ck_assert_ptr_nonnull(copy);
    cJSON *md = cJSON_GetObjectItemCaseSensitive(copy, "metadata");
    if (!cJSON_IsObject(md)) {
        cJSON_DeleteItemFromObjectCaseSensitive(copy, "metadata");
        md = cJSON_AddObjectToObject(copy, "metadata");
    }
    if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(md, "name"))) {
        cJSON_DeleteItemFromObjectCaseSensitive(md, "name");
        cJSON_AddStringToObject(md, "name", dflt);
    }
    return copy;
}

static pthread_mutex_t test_pods_mu = PTHREAD_MUTEX_INITIALIZER;
static nw_jsonintern_t *test_pods_intern;
static nw_pod_t **test_pods;
static size_t test_npods, test_pods_cap;

const nw_pod_t *nw_test_pod(const cJSON *json)
{
    cJSON *copy = named_copy(json, "pod");
    pthread_mutex_lock(&test_pods_mu);
    if (!test_pods_intern)
        test_pods_intern = nw_jsonintern_new();
    nw_pod_t *p = NULL;
    nw_err_t err = {0};
    nw_rc_t rc = nw_pod_decode(copy, test_pods_intern, &p, &err);
    if (rc == NW_OK && test_npods == test_pods_cap) {
        test_pods_cap = test_pods_cap ? test_pods_cap * 2 : 64;
        test_pods = realloc(test_pods, test_pods_cap * sizeof *test_pods);
    }
    if (rc == NW_OK)
        test_pods[test_npods++] = p;
    pthread_mutex_unlock(&test_pods_mu);
    cJSON_Delete(copy);
    ck_assert_msg(rc == NW_OK, "pod: %s: %s", err.path, err.msg);
    return p;
}

static void **test_recs;
static bool *test_recs_claim;
static size_t test_nrecs, test_recs_cap;

static void *test_rec(const cJSON *json, bool claim)
{
    cJSON *copy = named_copy(json, claim ? "nodeclaim" : "node");
    nw_node_t *n = NULL;
    nw_node_claim_t *c = NULL;
    nw_err_t err = {0};
    nw_rc_t rc = claim ? nw_node_claim_decode(copy, &c, &err) : nw_node_decode(copy, &n, &err);
    cJSON_Delete(copy);
    ck_assert_msg(rc == NW_OK, "%s: %s: %s", claim ? "NodeClaim" : "Node", err.path, err.msg);
    void *r = claim ? (void *)c : (void *)n;
    pthread_mutex_lock(&test_pods_mu);
    if (test_nrecs == test_recs_cap) {
        test_recs_cap = test_recs_cap ? test_recs_cap * 2 : 64;
        test_recs = realloc(test_recs, test_recs_cap * sizeof *test_recs);
        test_recs_claim = realloc(test_recs_claim, test_recs_cap * sizeof *test_recs_claim);
        ck_assert(test_recs && test_recs_claim);
    }
    test_recs_claim[test_nrecs] = claim;
    test_recs[test_nrecs++] = r;
    pthread_mutex_unlock(&test_pods_mu);
    return r;
}

const nw_node_t *nw_test_node(const cJSON *json)
{
    return test_rec(json, false);
}

const nw_node_claim_t *nw_test_node_claim(const cJSON *json)
{
    return test_rec(json, true);
}
