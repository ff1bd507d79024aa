/*
 * common/jsonarena.h — a per-thread bump allocator for cJSON trees that live for one
 * request only.
 *
 *   nw_jsonarena_install();          // once, in main, before any thread starts
 *   nw_jsonarena_begin();            // this thread's cJSON allocations come from its arena
 *   ... parse, inspect, build, print ...
 *   nw_jsonarena_end();              // back to malloc; the arena is reset
 *
 * The admission path parses a review, copies and patches the object, builds errors and
 * prints a response: hundreds of small allocations per request, each freed at its end.
 * Inside begin/end, cJSON's allocations are carved from chunks owned by the thread and
 * its frees of them cost nothing; end() drops everything at once (keeping the first
 * 64 KiB chunk for the next request, so an idle thread holds at most that). Frees of
 * memory that came from malloc (a tree built before begin, e.g. by another thread) go
 * to free() as always.
 *
 * The rule for callers: nothing cJSON allocates between begin and end may be used or
 * freed after end — strings that must outlive the request are copied with malloc, and
 * cJSON_Print results are released with cJSON_free, never free(). Under AddressSanitizer
 * the reset chunks are poisoned, so a use after end is reported as one.
 *
 * To keep something built from an arena tree (a decoded record, a frozen copy), pause:
 *
 *   nw_jsonarena_begin();
 *   cJSON *ev = cJSON_Parse(text);   // from the arena
 *   nw_jsonarena_pause();            // cJSON allocates with malloc again; frees of the
 *   keep = cJSON_Duplicate(part, 1); //   arena's nodes still cost nothing
 *   cJSON_Delete(ev);
 *   nw_jsonarena_resume();
 *   nw_jsonarena_end();              // ev's memory goes; keep stays
 *
 * Without nw_jsonarena_install (or after another cJSON_InitHooks), begin and end do
 * nothing and cJSON uses malloc. Thread: each thread has its own arena; install is not
 * thread-safe (call it before threads exist).
 */
#ifndef NW_COMMON_JSONARENA_H
#define NW_COMMON_JSONARENA_H

#include <stdbool.h>
#include <stddef.h>

void nw_jsonarena_install(void);
void nw_jsonarena_begin(void);
void nw_jsonarena_end(void);
/** Inside begin/end: cJSON's allocations come from malloc until resume (nests); frees of
 * the arena's memory still cost nothing. Outside: nothing. */
void nw_jsonarena_pause(void);
void nw_jsonarena_resume(void);

/** Whether p was handed out by this thread's arena and the arena is still in use (inside
 * begin/end). A tree wholly built inside begin/end and never joined with nodes from
 * elsewhere needs no cJSON_Delete: end() drops it at once, without walking it. */
bool nw_jsonarena_owns(const void *p);

/** Bytes handed out by this thread's arena since its begin (0 outside). For tests. */
size_t nw_jsonarena_used(void);

#endif
