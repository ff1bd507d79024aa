/*
 * common/oom.h — the one out-of-memory hook for the layers that abort on OOM
 * (docs/internals/ownership.md says which do: the scaler and the CLI).
 *
 *   cJSON *o = nw_json_new_object();          // never NULL: aborts through nw_oom
 *   char *p = nw_oom_check(strdup(s), "copy"); // any other allocation
 *
 * nw_oom logs one error line ({"msg":"out of memory","what":...}) and calls abort():
 * the process exits with SIGABRT, its Deployment restarts it, and it rebuilds its state
 * from the API server. It never returns.
 *
 * Thread: any.
 */
#ifndef NW_COMMON_OOM_H
#define NW_COMMON_OOM_H

/** Log "out of memory" with `what` (the allocation that failed) and abort(). */
_Noreturn void nw_oom(const char *what);

/** p, or nw_oom(what) when p is NULL. */
void *nw_oom_check(void *p, const char *what);

#endif
