/*
 * common/strs.h — the string helpers every layer shares, so that no file keeps its own
 * copy: the qsort/bsearch comparator for arrays of C strings, membership in a
 * NULL-terminated list, a suffix test on a prefix of a string, and the lower bound of a
 * key in an array of structs sorted by a string member.
 *
 *   qsort(names, n, sizeof names[0], nw_strs_cmp);   // char *names[] or const char *names[]
 *   if (nw_strs_in(op, (const char *const[]){"In", "NotIn", NULL})) ...
 *
 * Thread: any (pure functions).
 */
#ifndef NW_COMMON_STRS_H
#define NW_COMMON_STRS_H

#include <stdbool.h>
#include <stddef.h>

/** qsort/bsearch comparator for an array of C strings (elements char * or const char *):
 * strcmp of the pointed-to strings. */
int nw_strs_cmp(const void *a, const void *b);

/** Is s one of the strings of list, a NULL-terminated array (strcmp). */
bool nw_strs_in(const char *s, const char *const *list);

/** Do the first len bytes of s end with suffix. */
bool nw_strs_has_suffix(const char *s, size_t len, const char *suffix);

/** In an array sorted by a string member (n elements of size bytes at base; the member a
 * char * or const char * at offset off), the index of the first element whose member is
 * not below key (strcmp order), n when none; *count (when not NULL) gets how many
 * elements from there have a member equal to key. For example
 *   size_t i = nw_strs_lower(v, n, sizeof *v, offsetof(item_t, name), "x", &k);
 *   // v[i] .. v[i + k - 1] are the items named "x" */
size_t nw_strs_lower(const void *base, size_t n, size_t size, size_t off, const char *key,
                     size_t *count);

#endif
