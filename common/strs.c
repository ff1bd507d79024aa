/*
 * common/strs.c — shared string helpers. See strs.h.
 */
#include "common/strs.h"

#include <stdlib.h>
#include <string.h>

int nw_strs_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

bool nw_strs_in(const char *s, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(s, *list) == 0)
            return true;
    return false;
}

/* the string member of element i */
static const char *member(const void *base, size_t size, size_t off, size_t i)
{
    return *(const char *const *)((const char *)base + i * size + off);
}

size_t nw_strs_lower(const void *base, size_t n, size_t size, size_t off, const char *key,
                     size_t *count)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(member(base, size, off, mid), key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (count) {
        size_t end = lo;
        while (end < n && strcmp(member(base, size, off, end), key) == 0)
            end++;
        *count = end - lo;
    }
    return lo;
}

bool nw_strs_has_suffix(const char *s, size_t len, const char *suffix)
{
    size_t n = strlen(suffix);
    return len >= n && memcmp(s + len - n, suffix, n) == 0;
}

static uint64_t str_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h ^ (h >> 32);
}

bool nw_strs_index_build(nw_strs_index_t *ix, const void *base, size_t n, size_t size, size_t off)
{
    size_t want = 64;
    while (want < 2 * n)
        want *= 2;
    ix->base = base;
    ix->size = size;
    ix->off = off;
    ix->n = 0;
    if (n >= UINT32_MAX)
        return false;
    if (want > ix->cap || want * 4 < ix->cap) {
        uint32_t *sl = malloc(want * sizeof *sl);
        uint64_t *h = malloc(want * sizeof *h);
        if (!sl || !h) {
            free(sl);
            free(h);
            return false;
        }
        nw_strs_index_free(ix);
        ix->slot = sl;
        ix->hash = h;
        ix->cap = want;
        ix->base = base;
        ix->size = size;
        ix->off = off;
    }
    memset(ix->slot, 0, ix->cap * sizeof *ix->slot);
    for (size_t i = 0; i < n; i++) {
        const char *m = member(base, size, off, i);
        if (!m)
            continue;
        uint64_t h = str_hash(m);
        size_t k = (size_t)h & (ix->cap - 1);
        while (ix->slot[k] &&
               (ix->hash[k] != h || strcmp(member(base, size, off, ix->slot[k] - 1), m) != 0))
            k = (k + 1) & (ix->cap - 1);
        ix->slot[k] = (uint32_t)(i + 1);
        ix->hash[k] = h;
    }
    ix->n = n;
    return true;
}

size_t nw_strs_index_find(const nw_strs_index_t *ix, const char *key)
{
    if (!ix->n || !key)
        return SIZE_MAX;
    uint64_t h = str_hash(key);
    for (size_t k = (size_t)h & (ix->cap - 1); ix->slot[k]; k = (k + 1) & (ix->cap - 1)) {
        size_t i = ix->slot[k] - 1;
        const char *m = member(ix->base, ix->size, ix->off, i);
        if (ix->hash[k] == h && m && strcmp(m, key) == 0)
            return i; /* (a member set to NULL since the build is not found) */
    }
    return SIZE_MAX;
}

void nw_strs_index_free(nw_strs_index_t *ix)
{
    free(ix->slot);
    free(ix->hash);
    *ix = (nw_strs_index_t){0};
}
