/*
 * scaler/state/nominations.c — nominations and FailedScheduling memory (see nominations.h).
 */
#include "scaler/state/nominations.h"

#include <stdbool.h>
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
    char *wrote;      /* the node written to the pod's status.nominatedNodeName (NULL: none) */
} nom_t;

typedef struct {
    char *uid;
    uint64_t hash; /* of the last FailedScheduling message */
    int seen;
} evmem_t;

struct nw_nominations {
    nom_t *noms; /* sorted by uid */
    size_t nnoms, cnoms;
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
    st->nnoms = st->nev = 0;
}

void nw_nominations_free(nw_nominations_t *st)
{
    if (!st)
        return;
    nw_nominations_clear(st);
    free(st->noms);
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

static const nom_t *nom_find(const nw_nominations_t *st, const char *uid)
{
    if (!st || !st->nnoms || !uid)
        return NULL;
    size_t i = uid_lower(st->noms, st->nnoms, sizeof *st->noms, uid);
    return i < st->nnoms && strcmp(st->noms[i].uid, uid) == 0 ? &st->noms[i] : NULL;
}

void nw_nominations_nominate(nw_nominations_t *st, const char *pod_uid, const char *claim,
                             int64_t mono)
{
    if (!st || !pod_uid || !*pod_uid || !claim)
        return;
    size_t i = uid_lower(st->noms, st->nnoms, sizeof *st->noms, pod_uid);
    if (i < st->nnoms && strcmp(st->noms[i].uid, pod_uid) == 0) {
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
    nom_t e = {strdup(pod_uid), strdup(claim), mono, 0, 0, NULL};
    if (!e.uid || !e.claim) {
        free(e.uid);
        free(e.claim);
        return;
    }
    memmove(&st->noms[i + 1], &st->noms[i], (st->nnoms - i) * sizeof *st->noms);
    st->noms[i] = e;
    st->nnoms++;
}

const char *nw_nominations_claim_of(const nw_nominations_t *st, const char *pod_uid)
{
    const nom_t *n = nom_find(st, pod_uid);
    return n ? n->claim : NULL;
}

void nw_nominations_wrote(nw_nominations_t *st, const char *pod_uid, const char *node)
{
    nom_t *e = (nom_t *)nom_find(st, pod_uid);
    if (!e)
        return;
    char *w = node ? strdup(node) : NULL;
    if (node && !w)
        return; /* out of memory: the old record stays, the next write is tried again */
    free(e->wrote);
    e->wrote = w;
}

const char *nw_nominations_written(const nw_nominations_t *st, const char *pod_uid)
{
    const nom_t *n = nom_find(st, pod_uid);
    return n ? n->wrote : NULL;
}

bool nw_nominations_missed(nw_nominations_t *st, const char *pod_uid, bool claim_ready,
                           int64_t mono, int64_t grace_ns, int64_t *due_ns)
{
    if (!st || !st->nnoms || !pod_uid)
        return false;
    size_t i = uid_lower(st->noms, st->nnoms, sizeof *st->noms, pod_uid);
    if (i >= st->nnoms || strcmp(st->noms[i].uid, pod_uid) != 0)
        return false;
    nom_t *e = &st->noms[i];
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
    if (mono - since >= grace_ns) {
        e->misses++;
        return true;
    }
    if (grace_ns - (mono - since) < *due_ns)
        *due_ns = grace_ns - (mono - since);
    return false;
}

bool nw_nominations_targets(const nw_nominations_t *st, const char *claim, bool in_flight,
                            int64_t mono, int64_t window_ns)
{
    if (!st || !claim)
        return false;
    for (size_t i = 0; i < st->nnoms; i++)
        if (strcmp(st->noms[i].claim, claim) == 0 &&
            (in_flight || mono - st->noms[i].at < window_ns))
            return true;
    return false;
}

void nw_nominations_prune(nw_nominations_t *st, const char *const *keep, size_t nkeep, int64_t mono)
{
    if (!st)
        return;
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
    st->nnoms = k;
    free(sorted);
}

static uint64_t fnv(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
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
