/*
 * common/subproc.h — run a helper program (a credential process, a kubeconfig exec
 * plugin) and collect what it prints, with a deadline.
 *
 * The child is started with posix_spawn (safe in a threaded process): stdout is
 * captured, stderr captured or passed through, stdin /dev/null or passed through,
 * every signal at its default disposition and none blocked. A child whose stdin is
 * not ours runs in its own process group, so at the deadline the whole group (a
 * `sh -c` and what it started) gets SIGKILL; one that reads our terminal stays in
 * our group (a background group could not read it) and only it is killed. Output
 * past a cap is dropped and flagged, never buffered without bound.
 *
 * Ownership: nw_subproc_result_t is caller storage; nw_subproc_result_cleanup frees
 * (and wipes) the captured bytes.
 * Thread: any; each call waits for its own child only (waitpid on its pid).
 */
#ifndef NW_COMMON_SUBPROC_H
#define NW_COMMON_SUBPROC_H

#include <stddef.h>

#include "common/buf.h"
#include "common/err.h"

typedef struct {
    const char *const *argv; /* argv[0] is the program: looked up in PATH unless it has a '/' */
    const char *const *envp; /* the child's whole environment; NULL: ours */
    int pass_stdin;          /* 1: the child reads our stdin; 0: /dev/null */
    int pass_stderr;         /* 1: the child writes our stderr; 0: captured into err */
    long timeout_ms;         /* > 0 */
    size_t max_out;          /* stdout cap in bytes (0: 1 MiB) */
    size_t max_err;          /* stderr cap in bytes (0: 64 KiB); the rest is dropped */
} nw_subproc_opts_t;

typedef struct {
    nw_buf_t out;     /* stdout */
    nw_buf_t err;     /* stderr (when captured): its first max_err bytes */
    int exit_code;    /* when it exited: its status; else -1 */
    int signal;       /* when a signal ended it: the signal; else 0 */
    int timed_out;    /* 1: the deadline passed and it was killed */
    int out_overflow; /* 1: it printed more than max_out on stdout */
} nw_subproc_result_t;

/**
 * Run o->argv and wait until it exits or o->timeout_ms pass. NW_OK once it ran (look
 * at exit_code, signal, timed_out, out_overflow); NW_ENOTFOUND when the program does
 * not exist or is not executable (the message names it), NW_EIO/NW_ENOMEM when it
 * could not be started. r is initialised here; clean it up on every path.
 */
NW_MUST_USE nw_rc_t nw_subproc_run(const nw_subproc_opts_t *o, nw_subproc_result_t *r,
                                   nw_err_t *err);

/** Free (after wiping) the captured output. NULL-safe. */
void nw_subproc_result_cleanup(nw_subproc_result_t *r);

/** The last line of the captured stderr that is not blank, at most len-1 bytes, in
 * out ("" when none): what a failing helper usually says about itself. */
void nw_subproc_last_line(const nw_subproc_result_t *r, char *out, size_t len);

#endif
