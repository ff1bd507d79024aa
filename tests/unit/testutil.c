#include "tests/unit/testutil.h"

#include <check.h>
#include <ctype.h>
#include <dirent.h>
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

nw_test_lines_t *nw_test_lines_load(const char *path)
{
    char *text = nw_test_read_file(path, NULL);
    nw_test_lines_t *l = calloc(1, sizeof *l);
    ck_assert_ptr_nonnull(l);
    l->path = strdup(path);
    int cap = 0, lineno = 0;
    char *save = NULL;
    char *p = text;
    (void)save;
    while (p && *p) {
        char *nl = strchr(p, '\n');
        if (nl)
            *nl = '\0';
        lineno++;
        size_t len = strlen(p);
        if (len && p[len - 1] == '\r')
            p[--len] = '\0';
        const char *q = p;
        while (*q == ' ' || *q == '\t')
            q++;
        if (*q && *q != '#') {
            if (l->n == cap) {
                cap = cap ? cap * 2 : 64;
                l->line = realloc(l->line, (size_t)cap * sizeof *l->line);
                l->lineno = realloc(l->lineno, (size_t)cap * sizeof *l->lineno);
                ck_assert(l->line && l->lineno);
            }
            l->line[l->n] = strdup(p);
            l->lineno[l->n] = lineno;
            l->n++;
        }
        p = nl ? nl + 1 : NULL;
    }
    free(text);
    return l;
}

void nw_test_lines_free(nw_test_lines_t *l)
{
    if (!l)
        return;
    for (int i = 0; i < l->n; i++)
        free(l->line[i]);
    free(l->line);
    free(l->lineno);
    free(l->path);
    free(l);
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

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int nw_test_list_dir(const char *dir, const char *suffix, char ***out)
{
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "cannot open directory %s", dir);
    int n = 0, cap = 0;
    char **v = NULL;
    struct dirent *e;
    size_t sl = strlen(suffix);
    while ((e = readdir(d)) != NULL) {
        size_t nl = strlen(e->d_name);
        if (e->d_name[0] == '.' || nl < sl || strcmp(e->d_name + nl - sl, suffix) != 0)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 32;
            v = realloc(v, (size_t)cap * sizeof *v);
            ck_assert_ptr_nonnull(v);
        }
        size_t len = strlen(dir) + nl + 2;
        v[n] = malloc(len);
        snprintf(v[n], len, "%s/%s", dir, e->d_name);
        n++;
    }
    closedir(d);
    if (n)
        qsort(v, (size_t)n, sizeof *v, cmp_str);
    *out = v;
    return n;
}

void nw_test_list_free(char **paths, int n)
{
    for (int i = 0; i < n; i++)
        free(paths[i]);
    free(paths);
}
