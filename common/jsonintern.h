/*
 * common/jsonintern.h — one shared copy of equal JSON values: the watch cache keeps a
 * pod's labels, annotations, owner references and scheduling spec once for every pod
 * that has the same ones (the replicas of a ReplicaSet share all four).
 *
 *   nw_jsonintern_t *t = nw_jsonintern_new();
 *   nw_jsonintern_ref_t *r = nw_jsonintern_take(t, cJSON_Duplicate(spec, 1));
 *   const cJSON *shared = nw_jsonintern_json(r);   // equal inputs give the same pointer
 *   ...
 *   nw_jsonintern_release(t, r);                  // the last release frees the value
 *   nw_jsonintern_free(t);                        // after every reference was released
 *
 * Values are compared with cJSON_Compare (case-sensitive keys, object member order
 * ignored) after a structural hash. A shared value is never modified: readers hold it
 * through a reference and must not edit it. It is kept frozen (common/jsonfreeze.h: one
 * block, not the taken tree), so it must not be given to cJSON_Delete either.
 *
 * Errors: nw_jsonintern_take returns NULL only when value is NULL or memory ran out (the
 * value is freed then). Ownership: take consumes value; each reference is released once.
 * Thread: any; one mutex per table. The table must outlive its references.
 */
#ifndef NW_COMMON_JSONINTERN_H
#define NW_COMMON_JSONINTERN_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

typedef struct nw_jsonintern nw_jsonintern_t;
typedef struct nw_jsonintern_ref nw_jsonintern_ref_t;

/** An empty table; NULL on OOM. */
nw_jsonintern_t *nw_jsonintern_new(void);

/** Free the table. NULL-safe. Every reference must have been released. */
void nw_jsonintern_free(nw_jsonintern_t *t);

/** The shared copy of value (taken and always freed: a frozen copy is kept when no equal
 * value is held), with one more reference. NULL when value is NULL or on OOM. */
nw_jsonintern_ref_t *nw_jsonintern_take(nw_jsonintern_t *t, cJSON *value);

/** One more reference to r (r non-NULL). */
nw_jsonintern_ref_t *nw_jsonintern_hold(nw_jsonintern_t *t, nw_jsonintern_ref_t *r);

/** Drop one reference. NULL-safe. */
void nw_jsonintern_release(nw_jsonintern_t *t, nw_jsonintern_ref_t *r);

/** The shared value (borrowed while the reference is held). NULL for a NULL r. */
const cJSON *nw_jsonintern_json(const nw_jsonintern_ref_t *r);

/** Distinct values held, and the references to them (tests, metrics). */
size_t nw_jsonintern_count(nw_jsonintern_t *t);
size_t nw_jsonintern_refs(nw_jsonintern_t *t);

/** The structural hash used to find equal values (exposed for tests). */
uint64_t nw_jsonintern_hash(const cJSON *v);

#endif
