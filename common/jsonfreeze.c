/* common/jsonfreeze.c — see jsonfreeze.h. */
#include "common/jsonfreeze.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The distinct keys of a tree: an open-addressing set of borrowed strings. Each entry
 * later gets its place in the block (at). */
typedef struct {
    const char **key;
    size_t *at;
    size_t cap, n, bytes;
} keyset_t;

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

/* The slot of k: where it is, or the empty one where it goes. */
static size_t slot(const keyset_t *ks, const char *k)
{
    size_t i = (size_t)hash_str(k) & (ks->cap - 1);
    while (ks->key[i] && strcmp(ks->key[i], k) != 0)
        i = (i + 1) & (ks->cap - 1);
    return i;
}

static int keys_grow(keyset_t *ks)
{
    size_t ncap = ks->cap ? ks->cap * 2 : 64;
    const char **nk = calloc(ncap, sizeof *nk);
    size_t *na = calloc(ncap, sizeof *na);
    if (!nk || !na) {
        free(nk);
        free(na);
        return -1;
    }
    keyset_t grown = {nk, na, ncap, 0, ks->bytes};
    for (size_t i = 0; i < ks->cap; i++)
        if (ks->key[i]) {
            size_t j = slot(&grown, ks->key[i]);
            grown.key[j] = ks->key[i];
            grown.n++;
        }
    free(ks->key);
    free(ks->at);
    *ks = grown;
    return 0;
}

static int keys_add(keyset_t *ks, const char *k)
{
    if ((ks->n + 1) * 2 > ks->cap && keys_grow(ks) != 0)
        return -1;
    size_t i = slot(ks, k);
    if (!ks->key[i]) {
        ks->key[i] = k;
        ks->n++;
        ks->bytes += strlen(k) + 1;
    }
    return 0;
}

/* Pass 1: the nodes, the value strings' bytes and the distinct keys of a list of
 * siblings and what is under them (keyed: they are an object's members). */
static int measure(const cJSON *first, int keyed, size_t *nodes, size_t *vbytes, keyset_t *ks)
{
    for (const cJSON *v = first; v; v = v->next) {
        (*nodes)++;
        if (keyed && v->string && keys_add(ks, v->string) != 0)
            return -1;
        if (v->valuestring)
            *vbytes += strlen(v->valuestring) + 1;
        if (v->child && measure(v->child, cJSON_IsObject(v), nodes, vbytes, ks) != 0)
            return -1;
    }
    return 0;
}

typedef struct {
    cJSON *nodes;
    size_t next_node;
    char *strs;
    size_t next_str;
    const keyset_t *ks;
} fill_t;

static char *put_str(fill_t *f, const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = f->strs + f->next_str;
    memcpy(d, s, n);
    f->next_str += n;
    return d;
}

/* Pass 2: a copy of one value (and its children) into the block. */
static cJSON *copy(fill_t *f, const cJSON *v, int with_key)
{
    cJSON *d = &f->nodes[f->next_node++];
    memset(d, 0, sizeof *d);
    d->type = v->type & ~(cJSON_IsReference | cJSON_StringIsConst);
    d->valueint = v->valueint;
    d->valuedouble = v->valuedouble;
    if (v->valuestring)
        d->valuestring = put_str(f, v->valuestring);
    if (with_key && v->string)
        d->string = f->strs + f->ks->at[slot(f->ks, v->string)];
    cJSON *last = NULL;
    for (const cJSON *c = v->child; c; c = c->next) {
        cJSON *dc = copy(f, c, cJSON_IsObject(v));
        if (last) {
            last->next = dc;
            dc->prev = last;
        } else {
            d->child = dc;
        }
        last = dc;
    }
    if (d->child)
        d->child->prev = last; /* cJSON keeps the last child in the first one's prev */
    return d;
}

static int plan(const cJSON *src, size_t *nodes, size_t *vbytes, keyset_t *ks)
{
    *nodes = 0;
    *vbytes = 0;
    (*nodes)++;
    if (src->valuestring)
        *vbytes += strlen(src->valuestring) + 1;
    return src->child ? measure(src->child, cJSON_IsObject(src), nodes, vbytes, ks) : 0;
}

size_t nw_jsonfreeze_size(const cJSON *src)
{
    if (!src)
        return 0;
    keyset_t ks = {0};
    size_t nodes, vbytes;
    int rc = plan(src, &nodes, &vbytes, &ks);
    size_t total = nodes * sizeof(cJSON) + vbytes + ks.bytes;
    free(ks.key);
    free(ks.at);
    return rc == 0 ? total : 0;
}

cJSON *nw_jsonfreeze(const cJSON *src)
{
    if (!src)
        return NULL;
    keyset_t ks = {0};
    size_t nodes, vbytes;
    cJSON *block = NULL;
    if (plan(src, &nodes, &vbytes, &ks) != 0)
        goto out;
    block = malloc(nodes * sizeof(cJSON) + vbytes + ks.bytes);
    if (!block)
        goto out;
    fill_t f = {block, 0, (char *)(block + nodes), 0, &ks};
    for (size_t i = 0; i < ks.cap; i++) /* the keys first, each once */
        if (ks.key[i]) {
            ks.at[i] = f.next_str;
            put_str(&f, ks.key[i]);
        }
    copy(&f, src, 0);
out:
    free(ks.key);
    free(ks.at);
    return block;
}

void nw_jsonfreeze_free(cJSON *frozen)
{
    free(frozen); /* the root is the block's first node */
}
