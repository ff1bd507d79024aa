/*
 * scaler/controllers/uidmap.h — a map from an object's uid (or another short string key)
 * to an index, for the controllers' per-object memory: a lookup costs a hash and one or
 * two string compares instead of a walk over every entry.
 *
 *   nw_uidmap_t m = {0};
 *   if (nw_uidmap_put(&m, uid, i) != NW_OK) ...   // i: the entry's index in the caller's array
 *   long i = nw_uidmap_get(&m, uid);               // -1: absent
 *   nw_uidmap_del(&m, uid);
 *   nw_uidmap_free(&m);
 *
 * Keys are copied (at most NW_UIDMAP_KEY - 1 bytes; longer keys are compared on that
 * prefix, as the fixed-size uid fields they index are).
 *
 * Ownership: caller storage, zeroed; nw_uidmap_free. Thread: one at a time.
 */
#ifndef NW_SCALER_CONTROLLERS_UIDMAP_H
#define NW_SCALER_CONTROLLERS_UIDMAP_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

#define NW_UIDMAP_KEY 64

typedef struct {
    char key[NW_UIDMAP_KEY]; /* "" : free */
    long val;
} nw_uidmap_slot_t;

typedef struct {
    nw_uidmap_slot_t *v;
    size_t cap, n;
} nw_uidmap_t;

/** Map key to val (replacing its value). NW_ENOMEM when it cannot grow; "" is refused
 * (NW_EINVAL). */
NW_MUST_USE nw_rc_t nw_uidmap_put(nw_uidmap_t *m, const char *key, long val);

/** The value of key, or -1. */
long nw_uidmap_get(const nw_uidmap_t *m, const char *key);

/** Remove key (absent: nothing). */
void nw_uidmap_del(nw_uidmap_t *m, const char *key);

/** Remove every key (the storage is kept). */
void nw_uidmap_clear(nw_uidmap_t *m);

/** Free. NULL-safe; m is empty afterwards. */
void nw_uidmap_free(nw_uidmap_t *m);

#endif
