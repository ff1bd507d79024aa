/* common/jsonintern.c — shared copies of equal JSON values (see jsonintern.h). */
#include "common/jsonintern.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonfreeze.h"

struct nw_jsonintern_ref {
    cJSON *json;
    uint64_t h;
    size_t refs;
    struct nw_jsonintern_ref *next;
};

struct nw_jsonintern {
    pthread_mutex_t mu;
    nw_jsonintern_ref_t **b;
    size_t nb, n, refs;
};

static uint64_t mix(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h;
}

static uint64_t hash_bytes(uint64_t h, const char *s)
{
    for (; s && *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

static uint64_t hash_value(const cJSON *v)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t)(v->type & 0xff);
    const cJSON *c;
    switch (v->type & 0xff) {
    case cJSON_String:
    case cJSON_Raw:
        return mix(hash_bytes(h, v->valuestring));
    case cJSON_Number: {
        double d = v->valuedouble;
        uint64_t bits;
        memcpy(&bits, &d, sizeof bits);
        return mix(h ^ bits);
    }
    case cJSON_Array: {
        uint64_t i = 0;
        cJSON_ArrayForEach(c, v) h = mix(h ^ (hash_value(c) + ++i));
        return h;
    }
    case cJSON_Object: {
        /* members in any order compare equal (cJSON_Compare), so they combine by sum */
        uint64_t sum = 0;
        cJSON_ArrayForEach(c, v) sum +=
            mix(hash_bytes(1469598103934665603ull, c->string) ^ hash_value(c));
        return mix(h ^ sum);
    }
    default:
        return mix(h);
    }
}

uint64_t nw_jsonintern_hash(const cJSON *v)
{
    return v ? hash_value(v) : 0;
}

nw_jsonintern_t *nw_jsonintern_new(void)
{
    nw_jsonintern_t *t = calloc(1, sizeof *t);
    if (t)
        pthread_mutex_init(&t->mu, NULL);
    return t;
}

void nw_jsonintern_free(nw_jsonintern_t *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->nb; i++)
        for (nw_jsonintern_ref_t *r = t->b[i], *nx; r; r = nx) {
            nx = r->next;
            nw_jsonfreeze_free(r->json);
            free(r);
        }
    free(t->b);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

static bool grow_locked(nw_jsonintern_t *t)
{
    size_t nb = t->nb ? t->nb * 2 : 256;
    nw_jsonintern_ref_t **b = calloc(nb, sizeof *b);
    if (!b)
        return false;
    for (size_t i = 0; i < t->nb; i++)
        for (nw_jsonintern_ref_t *r = t->b[i], *nx; r; r = nx) {
            nx = r->next;
            r->next = b[r->h & (nb - 1)];
            b[r->h & (nb - 1)] = r;
        }
    free(t->b);
    t->b = b;
    t->nb = nb;
    return true;
}

nw_jsonintern_ref_t *nw_jsonintern_take(nw_jsonintern_t *t, cJSON *value)
{
    if (!value)
        return NULL;
    uint64_t h = hash_value(value);
    pthread_mutex_lock(&t->mu);
    if (t->nb)
        for (nw_jsonintern_ref_t *r = t->b[h & (t->nb - 1)]; r; r = r->next)
            if (r->h == h && cJSON_Compare(r->json, value, true)) {
                r->refs++;
                t->refs++;
                pthread_mutex_unlock(&t->mu);
                cJSON_Delete(value);
                return r;
            }
    nw_jsonintern_ref_t *r = NULL;
    cJSON *frozen = NULL; /* kept long and never changed: one block (common/jsonfreeze.h) */
    if ((t->n + 1 <= t->nb * 3 / 4 || grow_locked(t)) && (frozen = nw_jsonfreeze(value)) &&
        (r = malloc(sizeof *r))) {
        r->json = frozen;
        r->h = h;
        r->refs = 1;
        r->next = t->b[h & (t->nb - 1)];
        t->b[h & (t->nb - 1)] = r;
        t->n++;
        t->refs++;
    }
    pthread_mutex_unlock(&t->mu);
    if (!r)
        nw_jsonfreeze_free(frozen);
    cJSON_Delete(value);
    return r;
}

nw_jsonintern_ref_t *nw_jsonintern_hold(nw_jsonintern_t *t, nw_jsonintern_ref_t *r)
{
    pthread_mutex_lock(&t->mu);
    r->refs++;
    t->refs++;
    pthread_mutex_unlock(&t->mu);
    return r;
}

void nw_jsonintern_release(nw_jsonintern_t *t, nw_jsonintern_ref_t *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&t->mu);
    t->refs--;
    if (--r->refs > 0) {
        pthread_mutex_unlock(&t->mu);
        return;
    }
    nw_jsonintern_ref_t **pp = &t->b[r->h & (t->nb - 1)];
    while (*pp != r)
        pp = &(*pp)->next;
    *pp = r->next;
    t->n--;
    pthread_mutex_unlock(&t->mu);
    nw_jsonfreeze_free(r->json);
    free(r);
}

const cJSON *nw_jsonintern_json(const nw_jsonintern_ref_t *r)
{
    return r ? r->json : NULL;
}

size_t nw_jsonintern_count(nw_jsonintern_t *t)
{
    pthread_mutex_lock(&t->mu);
    size_t n = t->n;
    pthread_mutex_unlock(&t->mu);
    return n;
}

size_t nw_jsonintern_refs(nw_jsonintern_t *t)
{
    pthread_mutex_lock(&t->mu);
    size_t n = t->refs;
    pthread_mutex_unlock(&t->mu);
    return n;
}
