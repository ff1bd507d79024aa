/*
 * scaler/controllers/tickgate.h — when a controller's tick has nothing to do, and what it
 * may remember of each object between two runs.
 *
 * The reconcile thread runs every controller about every 100 ms under churn and every
 * second at rest, on a snapshot of the cache (scaler/kube/cache.h). A controller whose
 * work depends only on the objects of some kinds and on its own timers can skip a tick
 * when those objects are the ones its last complete run saw and none of its deadlines
 * has come:
 *
 *   nw_tickgate_t g;                        // in the controller's struct
 *   nw_tickgate_init(&g, NW_TICKGATE_KIND(NW_KUBE_NODECLAIMS), sizeof(facts_t));
 *   ...
 *   if (nw_tickgate_quiet(&g, s, mono, wall))  // in the tick
 *       return;
 *   ... the full run; for each object o:
 *       facts_t *f = nw_tickgate_memo(&g, o, &fresh); // NULL: out of memory
 *       if (!f || fresh) ... read o's JSON into f ...
 *   nw_tickgate_ran(&g, s, complete, due_mono, due_wall);
 *
 * "The same objects" is decided by address, kind by kind (the count and every pointer
 * of the snapshot's sorted array): cached objects are immutable and replaced on every
 * change, and the gate holds the snapshot of the last run (nw_kube_cache_snap_hold), so
 * no object it compares with can have been freed and its address reused. When the
 * objects are the same the gate holds the newer snapshot instead, so the objects of
 * other kinds that left the cache since are not kept alive longer than one tick. A
 * controller that remembers objects of other kinds (the pods of some nodes) checks them
 * itself between nw_tickgate_unchanged and nw_tickgate_skip.
 *
 * The memo keeps a fixed-size value per object (keyed by the object's address, valid for
 * the same reason: an object of the gate's kinds, or one the controller checks itself): a value set
 * during a run is found again in the next run for the same object, and is dropped when the object
 * changed or left. nw_tickgate_ran ends a run: values not asked for in it are forgotten.
 *
 * A run is complete when it did everything it had to on that snapshot: it attempted no
 * write (a write's result shows up as a change of the cache, a failed one must be
 * retried) and it was not cut short (leadership lost). After an incomplete run the next
 * tick runs again. due_mono (monotonic) and due_wall (wall clock) are when the run's
 * result goes stale without a change, e.g. the earliest expiry; INT64_MAX: never.
 *
 * Ownership: caller storage; nw_tickgate_init, nw_tickgate_cleanup (releases the
 * snapshot; before the cache is freed). nw_tickgate_reset forgets everything (a new
 * leadership term). Thread: the reconcile thread.
 */
#ifndef NW_SCALER_CONTROLLERS_TICKGATE_H
#define NW_SCALER_CONTROLLERS_TICKGATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "scaler/kube/cache.h"

#define NW_TICKGATE_KIND(k) (1u << (unsigned)(k))
#define NW_TICKGATE_NEVER INT64_MAX

typedef struct {
    const void **keys; /* open addressing on the object's address; NULL: free slot */
    uint32_t *idx;     /* the slot's value in vals */
    size_t cap;
    unsigned char *vals; /* n values of vsize bytes, dense */
    size_t n, vcap;
} nw_tickgate_tab_t;

typedef struct {
    unsigned kinds;       /* NW_TICKGATE_KIND of each kind the controller reads */
    size_t vsize;         /* memo value size (0: no memo) */
    nw_kube_snap_t *snap; /* held: the last run's snapshot, or a newer one with the same objects */
    bool armed;           /* the last run was complete */
    int64_t due_mono, due_wall;
    nw_tickgate_tab_t tab[2]; /* memo: [cur] this run's values, [!cur] the last run's */
    int cur;
    uint64_t runs, skips; /* counted for tests and benchmarks */
} nw_tickgate_t;

/** Set up g for the kinds (NW_TICKGATE_KIND bits) with a memo of vsize bytes per object
 * (0: none). */
void nw_tickgate_init(nw_tickgate_t *g, unsigned kinds, size_t vsize);

/** Forget the last run and every memo value; the next tick runs. */
void nw_tickgate_reset(nw_tickgate_t *g);

/** Free what g holds (the snapshot, the memo). NULL-safe. */
void nw_tickgate_cleanup(nw_tickgate_t *g);

/** Has nothing the last run depended on changed: it was complete, no deadline has come
 * (mono, wall: now) and the objects of g's kinds in s are those of the last run's
 * snapshot. Changes nothing. */
bool nw_tickgate_unchanged(const nw_tickgate_t *g, const nw_kube_snap_t *s, int64_t mono,
                           int64_t wall);

/** The tick on s is skipped: hold s instead of the older snapshot (only when every object
 * the memo or the controller remembers is in s too) and count the skip. */
void nw_tickgate_skip(nw_tickgate_t *g, const nw_kube_snap_t *s);

/** nw_tickgate_unchanged, then nw_tickgate_skip when true: may the tick return at once. */
bool nw_tickgate_quiet(nw_tickgate_t *g, const nw_kube_snap_t *s, int64_t mono, int64_t wall);

/** Is s of the same generation as g's snapshot (the same content, every kind)? */
bool nw_tickgate_same_generation(const nw_tickgate_t *g, const nw_kube_snap_t *s);

/** Are the objects of kind k in s and in g's snapshot the same (false: no snapshot)? */
bool nw_tickgate_same(const nw_tickgate_t *g, const nw_kube_snap_t *s, nw_kube_kind_t k);

/** The memo value of o for this run: the last run's value when o is the object it was
 * asked for (*fresh false), else zeroed (*fresh true). NULL when g has no memo or on out
 * of memory: then compute without it. Valid until the next call on g. */
void *nw_tickgate_memo(nw_tickgate_t *g, const void *o, bool *fresh);

/** A run on s ended (see above); s is held from now on, the memo values not asked for in
 * this run are dropped. */
void nw_tickgate_ran(nw_tickgate_t *g, const nw_kube_snap_t *s, bool complete, int64_t due_mono,
                     int64_t due_wall);

/* The last answer of nw_tickgate_get: the NodeClaims of a pass name the same few NodePools
 * and EC2NodeClasses, and each nw_kube_cache_snap_get formats its key first. Zero it before
 * a pass; it is good for one snapshot and one kind. */
typedef struct {
    const nw_kube_snap_t *s;
    const char *name; /* borrowed (the caller's name, from an object of s) */
    const nw_kube_obj_t *o;
} nw_tickgate_last_t;

/** nw_kube_cache_snap_get(s, kind, NULL, name) for a cluster-scoped kind, answered from last
 * when it is the same name (name: a string that lives as long as s, e.g. in an object). */
const nw_kube_obj_t *nw_tickgate_get(nw_tickgate_last_t *last, const nw_kube_snap_t *s,
                                     nw_kube_kind_t kind, const char *name);

/** The earlier of a and b (deadlines). */
static inline int64_t nw_tickgate_min(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

#endif
