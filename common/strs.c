/*
 * common/strs.c — shared string helpers. See strs.h.
 */
#include "common/strs.h"

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
