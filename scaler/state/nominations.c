/*
 * scaler/state/nominations.c — nominations and FailedScheduling memory (see nominations.h).
 */
#include "scaler/state/nominations.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/strs.h"

#define NOM_KEEP_NS (30 * NW_NS_PER_SEC)

typedef struct {
    char *uid;
    char *claim;
    int64_t at;       /* monotonic ns */
    int64_t ready_at; /* when the claim was first seen initialized (0: not yet) */
    int misses;       /* nw_nominations_missed answers true for this claim so far */
    int64_t base_at;  /* the start of the grace base_rv belongs to */
    uint64_t base_rv; /* the pod's scheduler mark when the grace began */
    uint64_t seq;     /* the order of nominations, for the appended ones' settling */
    char *wrote;      /* the node written to the pod's status.nominatedNodeName (NULL: none) */
} nom_t;

/* a NodeClaim some nomination targets, and its newest nomination */
typedef struct {
    const char *claim; /* borrowed from a nom_t */
    int64_t newest;
} target_t;

typedef struct {
    char *uid;
    uint64_t hash; /* of the last FailedScheduling message */
    int seen;
} evmem_t;

struct nw_nominations {
    /* [0, nsorted) sorted by uid; [nsorted, nnoms) appended since (a batch nominates
     * thousands of pods: inserting each in order would move the array each time), sorted
     * in by settle() before the next lookup by uid */
    nom_t *noms;
    size_t nnoms, cnoms, nsorted;
    /* the sorted part indexed by uid (common/strs.h), made on the first lookup after it
     * changed: the provisioner looks up every pending pod's uid several times a pass, and
     * a binary search over 5,000 uids read a dozen cold strings per lookup (a third of the
     * reconcile thread's time in a 5,000-pod scale-out) */
    nw_strs_index_t ix;
    bool index_ok;
    uint64_t seq;
    /* the claims nominations target, sorted by name (disruption asks about every node):
     * rebuilt on the first question after a change */
    target_t *targets;
    size_t ntargets, ctargets;
    bool targets_ok;
    evmem_t *ev; /* sorted by uid */
    size_t nev, cev;
};

nw_nominations_t *nw_nominations_new(void)
{
    return calloc(1, sizeof(nw_nominations_t));
}

void nw_nominations_clear(nw_nominations_t *st)
{
    if (!st)
        return;
    for (size_t i = 0; i < st->nnoms; i++) {
        free(st->noms[i].uid);
        free(st->noms[i].claim);
        free(st->noms[i].wrote);
    }
    for (size_t i = 0; i < st->nev; i++)
        free(st->ev[i].uid);
    st->nnoms = st->nev = st->nsorted = 0;
    st->targets_ok = false;
    st->index_ok = false;
}

void nw_nominations_free(nw_nominations_t *st)
{
    if (!st)
        return;
    nw_nominations_clear(st);
    free(st->noms);
    nw_strs_index_free(&st->ix);
    free(st->targets);
    free(st->ev);
    free(st);
}

/* binary search in an array of structs whose first member is `char *uid` */
static size_t uid_lower(const void *arr, size_t n, size_t elem, const char *uid)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const char *u = *(char *const *)((const char *)arr + mid * elem);
        if (strcmp(u, uid) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static uint64_t fnv(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static int nom_cmp(const void *a, const void *b)
{
    const nom_t *x = a, *y = b;
    int c = strcmp(x->uid, y->uid);
    return c ? c : (x->seq < y->seq ? -1 : x->seq > y->seq);
}

/* Sort the appended nominations in. A pod appended twice keeps its last nomination;
 * one to the same claim as the one before it keeps that one's readiness and misses, as
 * nominating in place does. The appended uids are never in the sorted part (nominate
 * updates those in place). */
static void settle(nw_nominations_t *st)
{
    if (st->nsorted == st->nnoms)
        return;
    qsort(st->noms, st->nnoms, sizeof *st->noms, nom_cmp);
    size_t k = 0;
    for (size_t i = 0; i < st->nnoms; i++) {
        nom_t *e = &st->noms[i];
        if (k && strcmp(st->noms[k - 1].uid, e->uid) == 0) {
            nom_t *prev = &st->noms[k - 1];
            if (strcmp(prev->claim, e->claim) == 0) {
                e->ready_at = prev->ready_at;
                e->misses = prev->misses;
                e->base_at = prev->base_at;
                e->base_rv = prev->base_rv;
            }
            if (!e->wrote) {
                e->wrote = prev->wrote;
                prev->wrote = NULL;
            }
            free(prev->uid);
            free(prev->claim);
            free(prev->wrote);
            *prev = *e;
            continue;
        }
        st->noms[k++] = *e;
    }
    st->nnoms = st->nsorted = k;
}

static nom_t *nom_find(nw_nominations_t *st, const char *uid)
{
    if (!st || !st->nnoms || !uid)
        return NULL;
    if (st->nsorted != st->nnoms) {
        settle(st);
        st->index_ok = false;
    }
    if (!st->index_ok)
        st->index_ok = nw_strs_index_build(&st->ix, st->noms, st->nnoms, sizeof *st->noms,
                                           offsetof(nom_t, uid));
    if (st->index_ok) {
        size_t i = nw_strs_index_find(&st->ix, uid);
        return i == SIZE_MAX ? NULL : &st->noms[i];
    }
    size_t i = uid_lower(st->noms, st->nnoms, sizeof *st->noms, uid);
    return i < st->nnoms && strcmp(st->noms[i].uid, uid) == 0 ? &st->noms[i] : NULL;
}

void nw_nominations_nominate(nw_nominations_t *st, const char *pod_uid, const char *claim,
                             int64_t mono)
{
    if (!st || !pod_uid || !*pod_uid || !claim)
        return;
    st->targets_ok = false;
    size_t i = uid_lower(st->noms, st->nsorted, sizeof *st->noms, pod_uid);
    if (i < st->nsorted && strcmp(st->noms[i].uid, pod_uid) == 0) {
        nom_t *e = &st->noms[i];
        e->at = mono;
        if (strcmp(e->claim, claim) == 0)
            return;
        char *cl = strdup(claim);
        if (!cl)
            return;
        free(e->claim);
        e->claim = cl;
        e->ready_at = 0;
        e->misses = 0;
        return;
    }
    if (st->nnoms == st->cnoms) {
        size_t n = st->cnoms ? st->cnoms * 2 : 64;
        nom_t *v = realloc(st->noms, n * sizeof *v);
        if (!v)
            return;
        st->noms = v;
        st->cnoms = n;
    }
    nom_t e = {strdup(pod_uid), strdup(claim), mono, 0, 0, 0, 0, st->seq++, NULL};
    if (!e.uid || !e.claim) {
        free(e.uid);
        free(e.claim);
        return;
    }
    st->noms[st->nnoms++] = e;
}

const char *nw_nominations_claim_of(nw_nominations_t *st, const char *pod_uid)
{
    const nom_t *n = nom_find(st, pod_uid);
    return n ? n->claim : NULL;
}

void nw_nominations_wrote(nw_nominations_t *st, const char *pod_uid, const char *node)
{
    nom_t *e = nom_find(st, pod_uid);
    if (!e)
        return;
    char *w = node ? strdup(node) : NULL;
    if (node && !w)
        return; /* out of memory: the old record stays, the next write is tried again */
    free(e->wrote);
    e->wrote = w;
}

const char *nw_nominations_written(nw_nominations_t *st, const char *pod_uid)
{
    const nom_t *n = nom_find(st, pod_uid);
    return n ? n->wrote : NULL;
}

bool nw_nominations_missed(nw_nominations_t *st, const char *pod_uid, uint64_t tried_mark,
                           bool claim_ready, int64_t mono, int64_t grace_ns, int64_t *due_ns)
{
    nom_t *e = nom_find(st, pod_uid);
    if (!e)
        return false;
    if (!claim_ready) {
        e->ready_at = 0;
        return false;
    }
    if (!e->ready_at)
        e->ready_at = mono;
    /* placed on the same claim again: the scheduler is slow rather than the room gone,
     * so each look waits twice as long (up to 32 graces) */
    grace_ns <<= e->misses < 5 ? e->misses : 5;
    int64_t since = e->ready_at > e->at ? e->ready_at : e->at;
    uint64_t rv = tried_mark;
    if (e->base_at != since) {
        e->base_at = since;
        e->base_rv = rv;
    }
    if (rv == e->base_rv)
        return false; /* not tried by the scheduler since: nothing to place again yet */
    if (mono - since >= grace_ns) {
        e->misses++;
        return true;
    }
    if (grace_ns - (mono - since) < *due_ns)
        *due_ns = grace_ns - (mono - since);
    return false;
}

static int target_cmp(const void *a, const void *b)
{
    return strcmp(((const target_t *)a)->claim, ((const target_t *)b)->claim);
}

static bool targets_build(nw_nominations_t *st)
{
    if (!st->nnoms) {
        st->ntargets = 0;
        return st->targets_ok = true;
    }
    if (st->ctargets < st->nnoms) {
        target_t *v = realloc(st->targets, st->nnoms * sizeof *v);
        if (!v)
            return false;
        st->targets = v;
        st->ctargets = st->nnoms;
    }
    for (size_t i = 0; i < st->nnoms; i++)
        st->targets[i] = (target_t){st->noms[i].claim, st->noms[i].at};
    qsort(st->targets, st->nnoms, sizeof *st->targets, target_cmp);
    size_t k = 0;
    for (size_t i = 0; i < st->nnoms; i++) {
        if (k && strcmp(st->targets[k - 1].claim, st->targets[i].claim) == 0) {
            if (st->targets[i].newest > st->targets[k - 1].newest)
                st->targets[k - 1].newest = st->targets[i].newest;
        } else
            st->targets[k++] = st->targets[i];
    }
    st->ntargets = k;
    return st->targets_ok = true;
}

bool nw_nominations_any(const nw_nominations_t *st)
{
    return st && st->nnoms > 0;
}

bool nw_nominations_targets(nw_nominations_t *st, const char *claim, bool in_flight, int64_t mono,
                            int64_t window_ns)
{
    if (!st || !claim)
        return false;
    if (!st->targets_ok && !targets_build(st)) {
        for (size_t i = 0; i < st->nnoms; i++) /* out of memory: the long way */
            if (strcmp(st->noms[i].claim, claim) == 0 &&
                (in_flight || mono - st->noms[i].at < window_ns))
                return true;
        return false;
    }
    if (!st->ntargets)
        return false;
    target_t key = {claim, 0};
    const target_t *t = bsearch(&key, st->targets, st->ntargets, sizeof key, target_cmp);
    return t && (in_flight || mono - t->newest < window_ns);
}

void nw_nominations_prune(nw_nominations_t *st, const char *const *keep, size_t nkeep, int64_t mono)
{
    if (!st)
        return;
    settle(st);
    st->targets_ok = false;
    const char **sorted = nkeep ? malloc(nkeep * sizeof *sorted) : NULL;
    if (nkeep && !sorted)
        return; /* out of memory: keep everything until the next prune */
    if (nkeep) {
        memcpy(sorted, keep, nkeep * sizeof *sorted);
        qsort(sorted, nkeep, sizeof *sorted, nw_strs_cmp);
    }
    size_t k = 0;
    for (size_t i = 0; i < st->nnoms; i++) {
        nom_t *n = &st->noms[i];
        const char *u = n->uid;
        int used = nkeep && bsearch(&u, sorted, nkeep, sizeof *sorted, nw_strs_cmp);
        if (used || mono - n->at < NOM_KEEP_NS)
            st->noms[k++] = *n;
        else {
            free(n->uid);
            free(n->claim);
            free(n->wrote);
        }
    }
    st->nnoms = st->nsorted = k;
    st->index_ok = false;
    free(sorted);
}

bool nw_nominations_event_once(nw_nominations_t *st, const char *uid, const char *msg)
{
    if (!st)
        return true;
    uint64_t h = fnv(msg);
    size_t i = uid_lower(st->ev, st->nev, sizeof *st->ev, uid);
    if (i < st->nev && strcmp(st->ev[i].uid, uid) == 0) {
        st->ev[i].seen = 1;
        if (st->ev[i].hash == h)
            return false;
        st->ev[i].hash = h;
        return true;
    }
    if (st->nev == st->cev) {
        size_t n = st->cev ? st->cev * 2 : 64;
        evmem_t *v = realloc(st->ev, n * sizeof *v);
        if (!v)
            return true;
        st->ev = v;
        st->cev = n;
    }
    char *u = strdup(uid);
    if (!u)
        return true;
    memmove(&st->ev[i + 1], &st->ev[i], (st->nev - i) * sizeof *st->ev);
    st->ev[i].uid = u;
    st->ev[i].hash = h;
    st->ev[i].seen = 1;
    st->nev++;
    return true;
}

void nw_nominations_event_prune(nw_nominations_t *st)
{
    if (!st)
        return;
    size_t k = 0;
    for (size_t i = 0; i < st->nev; i++) {
        if (st->ev[i].seen) {
            st->ev[i].seen = 0;
            st->ev[k++] = st->ev[i];
        } else
            free(st->ev[i].uid);
    }
    st->nev = k;
}
