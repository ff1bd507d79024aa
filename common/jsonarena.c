/* common/jsonarena.c — see jsonarena.h. */
#include "common/jsonarena.h"

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define FIRST_CHUNK (64u * 1024u)
#define ALIGN ((size_t)alignof(max_align_t))

typedef struct chunk {
    struct chunk *next; /* older chunk */
    size_t size, used;
    alignas(max_align_t) unsigned char data[];
} chunk_t;

static atomic_int installed;
static pthread_key_t exit_key;        /* its destructor frees a thread's chunks when it exits */
static _Thread_local chunk_t *t_head; /* newest chunk; the oldest is kept between requests */
static _Thread_local int t_depth;     /* begin/end nesting; > 0: allocations go to the arena */
static _Thread_local int t_paused;    /* > 0: allocations go to malloc, frees still check */
static _Thread_local size_t t_used;

static void *arena_alloc(size_t n)
{
    n = (n + ALIGN - 1) & ~(ALIGN - 1);
    if (n == 0)
        n = ALIGN;
    chunk_t *c = t_head;
    if (!c || c->size - c->used < n) {
        size_t size = c ? c->size * 2 : FIRST_CHUNK;
        while (size < n)
            size *= 2;
        chunk_t *nc = malloc(sizeof *nc + size);
        if (!nc)
            return NULL;
        if (!c)
            pthread_setspecific(exit_key, nc); /* any non-NULL value: run the destructor */
        nc->next = c;
        nc->size = size;
        nc->used = 0;
        POISON(nc->data, size);
        t_head = c = nc;
    }
    void *p = c->data + c->used;
    c->used += n;
    t_used += n;
    UNPOISON(p, n);
    return p;
}

static bool in_arena(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    for (const chunk_t *c = t_head; c; c = c->next)
        if (a >= (uintptr_t)c->data && a < (uintptr_t)c->data + c->size)
            return true;
    return false;
}

static void *hook_malloc(size_t n)
{
    return t_depth > 0 && !t_paused ? arena_alloc(n) : malloc(n);
}

static void hook_free(void *p)
{
    if (p && !(t_depth > 0 && in_arena(p)))
        free(p);
}

bool nw_jsonarena_owns(const void *p)
{
    return p && t_depth > 0 && in_arena(p);
}

static void free_chunks(void *unused)
{
    (void)unused;
    while (t_head) {
        chunk_t *c = t_head;
        t_head = c->next;
        free(c);
    }
}

void nw_jsonarena_install(void)
{
    if (atomic_load(&installed))
        return;
    if (pthread_key_create(&exit_key, free_chunks) != 0)
        return; /* no arena: cJSON keeps malloc */
    cJSON_Hooks h = {.malloc_fn = hook_malloc, .free_fn = hook_free};
    cJSON_InitHooks(&h);
    atomic_store(&installed, 1);
}

void nw_jsonarena_begin(void)
{
    if (atomic_load_explicit(&installed, memory_order_relaxed))
        t_depth++;
}

void nw_jsonarena_pause(void)
{
    if (t_depth > 0)
        t_paused++;
}

void nw_jsonarena_resume(void)
{
    if (t_paused > 0)
        t_paused--;
}

void nw_jsonarena_end(void)
{
    if (t_depth == 0 || --t_depth > 0)
        return;
    t_paused = 0;
    /* keep the oldest (smallest) chunk for the next request, free the rest */
    while (t_head && t_head->next) {
        chunk_t *c = t_head;
        t_head = c->next;
        free(c);
    }
    if (t_head) {
        t_head->used = 0;
        POISON(t_head->data, t_head->size);
    }
    t_used = 0;
}

size_t nw_jsonarena_used(void)
{
    return t_depth > 0 ? t_used : 0;
}
