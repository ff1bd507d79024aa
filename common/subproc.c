/* common/subproc.c — run a helper program with a deadline; see subproc.h. */
#include "common/subproc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"

extern char **environ;

#define CHUNK 16384

static void wipe_buf(nw_buf_t *b)
{
    if (b->data)
        explicit_bzero(b->data, b->cap);
    nw_buf_cleanup(b);
}

void nw_subproc_result_cleanup(nw_subproc_result_t *r)
{
    if (!r)
        return;
    wipe_buf(&r->out);
    wipe_buf(&r->err);
}

void nw_subproc_last_line(const nw_subproc_result_t *r, char *out, size_t len)
{
    const char *s = nw_buf_str(&r->err);
    size_t n = r->err.len;
    out[0] = '\0';
    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    size_t start = n;
    while (start > 0 && s[start - 1] != '\n')
        start--;
    size_t l = n - start;
    if (l >= len)
        l = len - 1;
    memcpy(out, s + start, l);
    out[l] = '\0';
}

/* Start the child with stdout on out_w and stderr on err_w (-1: ours). */
static NW_MUST_USE nw_rc_t spawn(const nw_subproc_opts_t *o, int out_w, int err_w, pid_t *pid,
                                 nw_err_t *err)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    sigset_t none, all;
    int e = posix_spawn_file_actions_init(&fa);
    if (e)
        return nw_err_set(err, NW_ENOMEM, "subproc", "cannot start %s: %s", o->argv[0],
                          strerror(e));
    if ((e = posix_spawnattr_init(&at)) != 0) {
        posix_spawn_file_actions_destroy(&fa);
        return nw_err_set(err, NW_ENOMEM, "subproc", "cannot start %s: %s", o->argv[0],
                          strerror(e));
    }
    if (!o->pass_stdin)
        e = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    if (!e)
        e = posix_spawn_file_actions_adddup2(&fa, out_w, 1);
    if (!e && err_w >= 0)
        e = posix_spawn_file_actions_adddup2(&fa, err_w, 2);
    sigemptyset(&none);
    sigfillset(&all);
    short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
    if (!o->pass_stdin) {
        flags |= POSIX_SPAWN_SETPGROUP;
        if (!e)
            e = posix_spawnattr_setpgroup(&at, 0);
    }
    if (!e)
        e = posix_spawnattr_setsigmask(&at, &none);
    if (!e)
        e = posix_spawnattr_setsigdefault(&at, &all);
    if (!e)
        e = posix_spawnattr_setflags(&at, flags);
    if (!e)
        e = posix_spawnp(pid, o->argv[0], &fa, &at, (char *const *)o->argv,
                         o->envp ? (char *const *)o->envp : environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (e == ENOENT || e == EACCES || e == ENOTDIR || e == ENOEXEC)
        return nw_err_set(err, NW_ENOTFOUND, "subproc", "%s: %s", o->argv[0],
                          e == ENOENT ? "not found" : strerror(e));
    if (e)
        return nw_err_set(err, NW_EIO, "subproc", "cannot start %s: %s", o->argv[0], strerror(e));
    return NW_OK;
}

/* Read what fd has now into b (past cap: dropped, *overflow set). False at EOF or error. */
static bool pump(int fd, nw_buf_t *b, size_t cap, int *overflow)
{
    char chunk[CHUNK];
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n > 0) {
            size_t room = b->len < cap ? cap - b->len : 0;
            size_t take = (size_t)n < room ? (size_t)n : room;
            if (take < (size_t)n && overflow)
                *overflow = 1;
            if (take && nw_buf_add(b, chunk, take) != NW_OK && overflow)
                *overflow = 1;
            explicit_bzero(chunk, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    }
}

/* Collect the child's output until it exits or the deadline passes (then kill it). */
static void collect(const nw_subproc_opts_t *o, pid_t pid, int fds[2], nw_subproc_result_t *r,
                    size_t max_out, size_t max_err)
{
    const nw_clock_t *clk = nw_clock_system();
    int64_t deadline = nw_clock_mono(clk) + (int64_t)o->timeout_ms * NW_NS_PER_MS;
    int status = 0, *ovf[2] = {&r->out_overflow, NULL};
    nw_buf_t *bufs[2] = {&r->out, &r->err};
    size_t caps[2] = {max_out, max_err};
    bool exited = false;
    while (!exited) {
        int64_t left_ms = (deadline - nw_clock_mono(clk)) / NW_NS_PER_MS;
        if (left_ms <= 0) {
            r->timed_out = 1;
            break;
        }
        struct pollfd p[2] = {{fds[0], POLLIN, 0}, {fds[1], POLLIN, 0}};
        if (fds[0] >= 0 || fds[1] >= 0) {
            if (poll(p, 2, (int)(left_ms < 100 ? left_ms : 100)) > 0)
                for (int i = 0; i < 2; i++)
                    if (fds[i] >= 0 && p[i].revents && !pump(fds[i], bufs[i], caps[i], ovf[i])) {
                        close(fds[i]);
                        fds[i] = -1;
                    }
        } else {
            struct timespec ts = {0, (left_ms < 20 ? left_ms : 20) * 1000000L};
            nanosleep(&ts, NULL);
        }
        exited = waitpid(pid, &status, WNOHANG) == pid;
    }
    if (r->timed_out) {
        kill(o->pass_stdin ? pid : -pid, SIGKILL);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
    }
    for (int i = 0; i < 2; i++)
        if (fds[i] >= 0) {
            if (!r->timed_out) /* whatever it left in the pipe before it exited */
                (void)pump(fds[i], bufs[i], caps[i], ovf[i]);
            close(fds[i]);
            fds[i] = -1;
        }
    if (WIFEXITED(status) && !r->timed_out)
        r->exit_code = WEXITSTATUS(status);
    else if (WIFSIGNALED(status))
        r->signal = WTERMSIG(status);
}

nw_rc_t nw_subproc_run(const nw_subproc_opts_t *o, nw_subproc_result_t *r, nw_err_t *err)
{
    size_t max_out = o->max_out ? o->max_out : (size_t)1 << 20;
    size_t max_err = o->max_err ? o->max_err : (size_t)64 << 10;
    memset(r, 0, sizeof *r);
    nw_buf_init(&r->out, max_out);
    nw_buf_init(&r->err, max_err);
    r->exit_code = -1;
    int outp[2] = {-1, -1}, errp[2] = {-1, -1};
    if (pipe2(outp, O_CLOEXEC) != 0 || (!o->pass_stderr && pipe2(errp, O_CLOEXEC) != 0)) {
        int e = errno;
        for (int i = 0; i < 2; i++) {
            if (outp[i] >= 0)
                close(outp[i]);
            if (errp[i] >= 0)
                close(errp[i]);
        }
        return nw_err_set(err, NW_EIO, "subproc", "cannot start %s: pipe: %s", o->argv[0],
                          strerror(e));
    }
    pid_t pid = -1;
    nw_rc_t rc = spawn(o, outp[1], errp[1], &pid, err);
    close(outp[1]);
    if (errp[1] >= 0)
        close(errp[1]);
    int fds[2] = {outp[0], errp[0]};
    if (rc != NW_OK) {
        close(fds[0]);
        if (fds[1] >= 0)
            close(fds[1]);
        return rc;
    }
    for (int i = 0; i < 2; i++)
        if (fds[i] >= 0)
            fcntl(fds[i], F_SETFL, fcntl(fds[i], F_GETFL) | O_NONBLOCK);
    collect(o, pid, fds, r, max_out, max_err);
    return NW_OK;
}
