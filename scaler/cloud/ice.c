/* scaler/cloud/ice.c — insufficient-capacity cache; see ice.h. */
#include "scaler/cloud/ice.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char key[192];
    int64_t expires;
} entry_t;

struct nw_ice {
    pthread_mutex_t mu;
    int64_t ttl;
    entry_t *v;
    size_t n, cap;
    uint64_t seq;
};

nw_ice_t *nw_ice_new(int64_t ttl_ns)
{
    nw_ice_t *ice = calloc(1, sizeof *ice);
    if (!ice)
        return NULL;
    pthread_mutex_init(&ice->mu, NULL);
    ice->ttl = ttl_ns > 0 ? ttl_ns : NW_ICE_TTL_NS;
    return ice;
}

void nw_ice_free(nw_ice_t *ice)
{
    if (!ice)
        return;
    pthread_mutex_destroy(&ice->mu);
    free(ice->v);
    free(ice);
}

static void mark_key(nw_ice_t *ice, const char *key, int64_t now)
{
    pthread_mutex_lock(&ice->mu);
    ice->seq++;
    for (size_t i = 0; i < ice->n; i++) {
        if (strcmp(ice->v[i].key, key) == 0) {
            ice->v[i].expires = now + ice->ttl;
            pthread_mutex_unlock(&ice->mu);
            return;
        }
    }
    if (ice->n == ice->cap) {
        size_t nc = ice->cap ? ice->cap * 2 : 32;
        entry_t *nv = realloc(ice->v, nc * sizeof *nv);
        if (!nv) {
            pthread_mutex_unlock(&ice->mu);
            return; /* out of memory: the offering simply stays available */
        }
        ice->v = nv;
        ice->cap = nc;
    }
    snprintf(ice->v[ice->n].key, sizeof ice->v[ice->n].key, "%s", key);
    ice->v[ice->n].expires = now + ice->ttl;
    ice->n++;
    pthread_mutex_unlock(&ice->mu);
}

static bool has_key(const nw_ice_t *cice, const char *key, int64_t now)
{
    nw_ice_t *ice = (nw_ice_t *)cice; /* the mutex is the only mutable part */
    bool hit = false;
    pthread_mutex_lock(&ice->mu);
    for (size_t i = 0; i < ice->n; i++)
        if (ice->v[i].expires > now && strcmp(ice->v[i].key, key) == 0) {
            hit = true;
            break;
        }
    pthread_mutex_unlock(&ice->mu);
    return hit;
}

void nw_ice_mark(nw_ice_t *ice, const char *ct, const char *type, const char *zone, int64_t now)
{
    char k[192];
    snprintf(k, sizeof k, "%s:%s:%s", ct, type, zone);
    mark_key(ice, k, now);
}

void nw_ice_mark_subnet(nw_ice_t *ice, const char *subnet_id, int64_t now)
{
    char k[192];
    snprintf(k, sizeof k, "subnet:%s", subnet_id);
    mark_key(ice, k, now);
}

void nw_ice_mark_capacity_type(nw_ice_t *ice, const char *ct, int64_t now)
{
    char k[192];
    snprintf(k, sizeof k, "ct:%s", ct);
    mark_key(ice, k, now);
}

bool nw_ice_unavailable(const nw_ice_t *ice, const char *ct, const char *type, const char *zone,
                        int64_t now)
{
    char k[192];
    if (!ice)
        return false;
    snprintf(k, sizeof k, "ct:%s", ct);
    if (has_key(ice, k, now))
        return true;
    snprintf(k, sizeof k, "%s:%s:%s", ct, type, zone);
    return has_key(ice, k, now);
}

bool nw_ice_subnet_unavailable(const nw_ice_t *ice, const char *subnet_id, int64_t now)
{
    char k[192];
    if (!ice)
        return false;
    snprintf(k, sizeof k, "subnet:%s", subnet_id);
    return has_key(ice, k, now);
}

size_t nw_ice_sweep(nw_ice_t *ice, int64_t now)
{
    pthread_mutex_lock(&ice->mu);
    size_t j = 0;
    for (size_t i = 0; i < ice->n; i++)
        if (ice->v[i].expires > now)
            ice->v[j++] = ice->v[i];
    ice->n = j;
    pthread_mutex_unlock(&ice->mu);
    return j;
}

uint64_t nw_ice_seq(const nw_ice_t *cice)
{
    nw_ice_t *ice = (nw_ice_t *)cice;
    pthread_mutex_lock(&ice->mu);
    uint64_t s = ice->seq;
    pthread_mutex_unlock(&ice->mu);
    return s;
}

size_t nw_ice_live(const nw_ice_t *cice, int64_t now)
{
    nw_ice_t *ice = (nw_ice_t *)cice; /* the mutex is the only mutable part */
    if (!ice)
        return 0;
    size_t n = 0;
    pthread_mutex_lock(&ice->mu);
    for (size_t i = 0; i < ice->n; i++)
        n += ice->v[i].expires > now;
    pthread_mutex_unlock(&ice->mu);
    return n;
}
