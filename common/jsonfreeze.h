/*
 * common/jsonfreeze.h — a read-only copy of a cJSON tree in one allocation, for trees
 * that are kept long and never changed (the cluster-state cache's objects, shared pod
 * specs).
 *
 *   cJSON *f = nw_jsonfreeze(tree);   // tree is only read; NULL on out of memory
 *   ... read f with the usual cJSON calls (and cJSON_Duplicate it to edit a copy) ...
 *   nw_jsonfreeze_free(f);
 *
 * Why: cJSON allocates every value, every key and every string separately. A Node of
 * 4 KiB of JSON becomes about 18 KiB of heap that way (a 64-byte node per value plus
 * malloc's header and minimum size for each key and string). A frozen copy packs the
 * nodes and the strings together, each distinct key once: about half of that.
 *
 * Rules: a frozen tree is never modified, and no node of it is passed to cJSON_Delete,
 * cJSON_Detach*, cJSON_Replace*, cJSON_Add*ToObject or cJSON_Set* — only
 * nw_jsonfreeze_free releases it, all at once. Reading, printing, comparing and
 * cJSON_Duplicate are fine (a duplicate is an ordinary tree with its own strings).
 * Threads: a frozen tree may be read from any number of threads at once.
 */
#ifndef NW_COMMON_JSONFREEZE_H
#define NW_COMMON_JSONFREEZE_H

#include <cjson/cJSON.h>
#include <stddef.h>

/** A frozen copy of src (borrowed, unchanged; its own key, if any, is not copied), or
 * NULL when src is NULL or memory runs out. */
cJSON *nw_jsonfreeze(const cJSON *src);

/** Release a frozen tree. NULL-safe. */
void nw_jsonfreeze_free(cJSON *frozen);

/** The bytes a frozen copy of src takes (for tests and sizing). */
size_t nw_jsonfreeze_size(const cJSON *src);

#endif
