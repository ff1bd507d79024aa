/*
 * common/strs.h — the string helpers every layer shares, so that no file keeps its own
 * copy: the qsort/bsearch comparator for arrays of C strings, membership in a
 * NULL-terminated list, a suffix test on a prefix of a string, and the lower bound of a
 * key in an array of structs sorted by a string member, and a hash index by such a member.
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
#include <stdint.h>

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

/** A hash index over an array of n elements of size bytes at base, by a string member at
 * offset off (as nw_strs_lower), for lookups that a binary search would make read a
 * dozen cold strings each: one hash of the key, then mostly one string compared. The
 * array is borrowed and must not change while the index is used (build again after it
 * does). Zero-initialise; free with nw_strs_index_free. Not thread-safe. */
typedef struct {
    uint32_t *slot; /* 1 + the element's index; 0: empty */
    uint64_t *hash; /* the member's hash, per slot */
    size_t cap;     /* a power of two, at least twice n; 0: none */
    const void *base;
    size_t n, size, off;
} nw_strs_index_t;

/** Index the array; false when out of memory (the index is then empty: nw_strs_index_find
 * answers SIZE_MAX for every key, so the caller searches the long way). With equal
 * members, the last one is found. */
bool nw_strs_index_build(nw_strs_index_t *ix, const void *base, size_t n, size_t size, size_t off);

/** The index of the element whose member equals key, SIZE_MAX when none (or the index is
 * empty). A NULL member is never found (one may be set to NULL after the build: an entry
 * moved out). */
size_t nw_strs_index_find(const nw_strs_index_t *ix, const char *key);

void nw_strs_index_free(nw_strs_index_t *ix);

#endif
