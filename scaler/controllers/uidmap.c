/*
 * scaler/controllers/uidmap.c — uid to index (see uidmap.h): open addressing with linear
 * probing, removal by shifting the following entries back (no tombstones).
 */
#include "scaler/controllers/uidmap.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* FNV-1a of the key as stored (its first NW_UIDMAP_KEY - 1 bytes) */
static size_t hash(const char *k, size_t cap)
{
    uint64_t h = UINT64_C(14695981039346656037);
    for (size_t i = 0; i < NW_UIDMAP_KEY - 1 && k[i]; i++) {
        h ^= (unsigned char)k[i];
        h *= UINT64_C(1099511628211);
    }
    return (size_t)(h ^ (h >> 29)) & (cap - 1);
}

static bool key_eq(const char *stored, const char *k)
{
    return strncmp(stored, k, NW_UIDMAP_KEY - 1) == 0;
}

static size_t find(const nw_uidmap_t *m, const char *key)
{
    size_t i = hash(key, m->cap);
    while (m->v[i].key[0] && !key_eq(m->v[i].key, key))
        i = (i + 1) & (m->cap - 1);
    return i;
}

static nw_rc_t grow(nw_uidmap_t *m)
{
    size_t cap = m->cap ? 2 * m->cap : 64;
    nw_uidmap_slot_t *v = calloc(cap, sizeof *v);
    if (!v)
        return NW_ENOMEM;
    nw_uidmap_t nm = {v, cap, 0};
    for (size_t i = 0; i < m->cap; i++)
        if (m->v[i].key[0]) {
            nm.v[find(&nm, m->v[i].key)] = m->v[i];
            nm.n++;
        }
    free(m->v);
    *m = nm;
    return NW_OK;
}

nw_rc_t nw_uidmap_put(nw_uidmap_t *m, const char *key, long val)
{
    if (!key || !key[0])
        return NW_EINVAL;
    if (2 * (m->n + 1) > m->cap && grow(m) != NW_OK)
        return NW_ENOMEM;
    size_t i = find(m, key);
    if (!m->v[i].key[0]) {
        snprintf(m->v[i].key, sizeof m->v[i].key, "%s", key);
        m->n++;
    }
    m->v[i].val = val;
    return NW_OK;
}

long nw_uidmap_get(const nw_uidmap_t *m, const char *key)
{
    if (!m->n || !key || !key[0])
        return -1;
    size_t i = find(m, key);
    return m->v[i].key[0] ? m->v[i].val : -1;
}

void nw_uidmap_del(nw_uidmap_t *m, const char *key)
{
    if (!m->n || !key || !key[0])
        return;
    size_t i = find(m, key);
    if (!m->v[i].key[0])
        return;
    m->v[i].key[0] = 0;
    m->n--;
    /* shift back the entries of the run after i that may live at i */
    for (size_t j = (i + 1) & (m->cap - 1); m->v[j].key[0]; j = (j + 1) & (m->cap - 1)) {
        size_t h = hash(m->v[j].key, m->cap);
        /* j's entry stays when its home h lies cyclically in (i, j] */
        if (i <= j ? (i < h && h <= j) : (i < h || h <= j))
            continue;
        m->v[i] = m->v[j];
        m->v[j].key[0] = 0;
        i = j;
    }
}

void nw_uidmap_clear(nw_uidmap_t *m)
{
    for (size_t i = 0; i < m->cap; i++)
        m->v[i].key[0] = 0;
    m->n = 0;
}

void nw_uidmap_free(nw_uidmap_t *m)
{
    if (!m)
        return;
    free(m->v);
    m->v = NULL;
    m->cap = m->n = 0;
}
