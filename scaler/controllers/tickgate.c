/*
 * scaler/controllers/tickgate.c — when a controller's tick has nothing to do (see
 * tickgate.h).
 */
#include "scaler/controllers/tickgate.h"

#include <stdlib.h>
#include <string.h>

void nw_tickgate_init(nw_tickgate_t *g, unsigned kinds, size_t vsize)
{
    memset(g, 0, sizeof *g);
    g->kinds = kinds;
    g->vsize = vsize;
    g->due_mono = g->due_wall = NW_TICKGATE_NEVER;
}

static void tab_clear(nw_tickgate_tab_t *t)
{
    if (t->keys)
        memset(t->keys, 0, t->cap * sizeof *t->keys);
    t->n = 0;
}

static void tab_free(nw_tickgate_tab_t *t)
{
    free(t->keys);
    free(t->idx);
    free(t->vals);
    memset(t, 0, sizeof *t);
}

void nw_tickgate_reset(nw_tickgate_t *g)
{
    nw_kube_cache_snap_release(g->snap);
    g->snap = NULL;
    g->armed = false;
    g->due_mono = g->due_wall = NW_TICKGATE_NEVER;
    tab_clear(&g->tab[0]);
    tab_clear(&g->tab[1]);
}

void nw_tickgate_cleanup(nw_tickgate_t *g)
{
    if (!g)
        return;
    nw_kube_cache_snap_release(g->snap);
    g->snap = NULL;
    tab_free(&g->tab[0]);
    tab_free(&g->tab[1]);
    g->armed = false;
}

bool nw_tickgate_same_generation(const nw_tickgate_t *g, const nw_kube_snap_t *s)
{
    return g->snap && (g->snap == s ||
                       nw_kube_cache_snap_generation(g->snap) == nw_kube_cache_snap_generation(s));
}

bool nw_tickgate_same(const nw_tickgate_t *g, const nw_kube_snap_t *s, nw_kube_kind_t k)
{
    if (!g->snap)
        return false;
    if (g->snap == s)
        return true;
    size_t n = nw_kube_cache_snap_count(s, k);
    if (n != nw_kube_cache_snap_count(g->snap, k))
        return false;
    for (size_t i = 0; i < n; i++)
        if (nw_kube_cache_snap_at(s, k, i) != nw_kube_cache_snap_at(g->snap, k, i))
            return false;
    return true;
}

bool nw_tickgate_unchanged(const nw_tickgate_t *g, const nw_kube_snap_t *s, int64_t mono,
                           int64_t wall)
{
    if (!g->armed || !g->snap || mono >= g->due_mono || wall >= g->due_wall)
        return false;
    /* the same generation is the same content */
    if (nw_tickgate_same_generation(g, s))
        return true;
    for (int k = 0; k < NW_KUBE_KINDS; k++)
        if ((g->kinds & NW_TICKGATE_KIND(k)) && !nw_tickgate_same(g, s, (nw_kube_kind_t)k))
            return false;
    return true;
}

static void hold(nw_tickgate_t *g, const nw_kube_snap_t *s)
{
    if (g->snap == s)
        return;
    nw_kube_snap_t *old = g->snap;
    g->snap = nw_kube_cache_snap_hold(s);
    nw_kube_cache_snap_release(old);
}

void nw_tickgate_skip(nw_tickgate_t *g, const nw_kube_snap_t *s)
{
    hold(g, s);
    g->skips++;
}

bool nw_tickgate_quiet(nw_tickgate_t *g, const nw_kube_snap_t *s, int64_t mono, int64_t wall)
{
    if (!nw_tickgate_unchanged(g, s, mono, wall))
        return false;
    nw_tickgate_skip(g, s);
    return true;
}

static size_t slot_of(const void *o, size_t cap)
{
    uint64_t h = (uint64_t)(uintptr_t)o;
    h ^= h >> 17;
    h *= UINT64_C(0x9E3779B97F4A7C15);
    return (size_t)(h >> 20) & (cap - 1);
}

/* the slot of o in t, or the free slot where it would go (t->cap > 0) */
static size_t tab_find(const nw_tickgate_tab_t *t, const void *o)
{
    size_t i = slot_of(o, t->cap);
    while (t->keys[i] && t->keys[i] != o)
        i = (i + 1) & (t->cap - 1);
    return i;
}

/* room for one more value: the slots at most half full, the values' array large enough */
static bool tab_room(nw_tickgate_tab_t *t, size_t vsize)
{
    if (t->n == t->vcap) {
        size_t vcap = t->vcap ? 2 * t->vcap : 32;
        unsigned char *vals = realloc(t->vals, vcap * vsize);
        if (!vals)
            return false;
        t->vals = vals;
        t->vcap = vcap;
    }
    if (2 * (t->n + 1) <= t->cap)
        return true;
    size_t cap = t->cap ? 2 * t->cap : 64;
    nw_tickgate_tab_t nt = {
        calloc(cap, sizeof *nt.keys), malloc(cap * sizeof *nt.idx), cap, NULL, 0, 0};
    if (!nt.keys || !nt.idx) {
        free(nt.keys);
        free(nt.idx);
        return false;
    }
    for (size_t i = 0; i < t->cap; i++)
        if (t->keys[i]) {
            size_t j = tab_find(&nt, t->keys[i]);
            nt.keys[j] = t->keys[i];
            nt.idx[j] = t->idx[i];
        }
    free(t->keys);
    free(t->idx);
    t->keys = nt.keys;
    t->idx = nt.idx;
    t->cap = cap;
    return true;
}

void *nw_tickgate_memo(nw_tickgate_t *g, const void *o, bool *fresh)
{
    *fresh = true;
    if (!g->vsize || !o)
        return NULL;
    nw_tickgate_tab_t *cur = &g->tab[g->cur], *prev = &g->tab[!g->cur];
    if (cur->cap) {
        size_t i = tab_find(cur, o);
        if (cur->keys[i]) {
            *fresh = false;
            return cur->vals + (size_t)cur->idx[i] * g->vsize;
        }
    }
    if (cur->n >= UINT32_MAX || !tab_room(cur, g->vsize))
        return NULL;
    size_t i = tab_find(cur, o);
    cur->keys[i] = o;
    cur->idx[i] = (uint32_t)cur->n;
    unsigned char *v = cur->vals + cur->n++ * g->vsize;
    size_t j = prev->cap ? tab_find(prev, o) : 0;
    if (prev->cap && prev->keys[j]) {
        memcpy(v, prev->vals + (size_t)prev->idx[j] * g->vsize, g->vsize);
        *fresh = false;
    } else
        memset(v, 0, g->vsize);
    return v;
}

void nw_tickgate_ran(nw_tickgate_t *g, const nw_kube_snap_t *s, bool complete, int64_t due_mono,
                     int64_t due_wall)
{
    hold(g, s);
    g->armed = complete;
    g->due_mono = due_mono;
    g->due_wall = due_wall;
    g->runs++;
    /* this run's values become the last run's; the older ones go */
    g->cur = !g->cur;
    tab_clear(&g->tab[g->cur]);
}

const nw_kube_obj_t *nw_tickgate_get(nw_tickgate_last_t *last, const nw_kube_snap_t *s,
                                     nw_kube_kind_t kind, const char *name)
{
    if (!name)
        return NULL;
    if (last->s == s && last->name && (last->name == name || strcmp(last->name, name) == 0))
        return last->o;
    last->s = s;
    last->name = name;
    last->o = nw_kube_cache_snap_get(s, kind, NULL, name);
    return last->o;
}
