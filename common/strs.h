/*
 * common/strs.h — the string helpers every layer shares, so that no file keeps its own
 * copy: the qsort/bsearch comparator for arrays of C strings, membership in a
 * NULL-terminated list, and a suffix test on a prefix of a string.
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

#endif
