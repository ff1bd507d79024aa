/* Unit tests for common/subproc: output and exit status, stderr's last line, a program
 * that does not exist, the stdout cap, and a child (and its own child) killed at the
 * deadline. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/subproc.h"

Suite *nw_subproc_suite(void);

static nw_rc_t run(const char *const *argv, long timeout_ms, size_t max_out, nw_subproc_result_t *r,
                   nw_err_t *err)
{
    nw_subproc_opts_t o = {.argv = argv, .timeout_ms = timeout_ms, .max_out = max_out};
    return nw_subproc_run(&o, r, err);
}

START_TEST(output_and_status)
{
    const char *argv[] = {
        "sh", "-c", "printf 'hello\\n'; echo 'warn 1' >&2; echo 'last words' >&2; exit 3", NULL};
    nw_subproc_result_t r;
    nw_err_t err = {0};
    ck_assert_int_eq(run(argv, 10000, 0, &r, &err), NW_OK);
    ck_assert_str_eq(nw_buf_str(&r.out), "hello\n");
    ck_assert_int_eq(r.exit_code, 3);
    ck_assert_int_eq(r.signal, 0);
    ck_assert_int_eq(r.timed_out, 0);
    char line[64];
    nw_subproc_last_line(&r, line, sizeof line);
    ck_assert_str_eq(line, "last words");
    nw_subproc_result_cleanup(&r);
}
END_TEST

START_TEST(environment_is_given)
{
    const char *argv[] = {"sh", "-c", "printf '%s' \"$NW_SUBPROC_TEST\"", NULL};
    const char *envp[] = {"PATH=/usr/bin:/bin", "NW_SUBPROC_TEST=from the caller", NULL};
    nw_subproc_opts_t o = {.argv = argv, .envp = envp, .timeout_ms = 10000};
    nw_subproc_result_t r;
    ck_assert_int_eq(nw_subproc_run(&o, &r, NULL), NW_OK);
    ck_assert_str_eq(nw_buf_str(&r.out), "from the caller");
    ck_assert_int_eq(r.exit_code, 0);
    nw_subproc_result_cleanup(&r);
}
END_TEST

START_TEST(not_found)
{
    const char *argv[] = {"nw-no-such-program-anywhere", NULL};
    nw_subproc_result_t r;
    nw_err_t err = {0};
    ck_assert_int_eq(run(argv, 10000, 0, &r, &err), NW_ENOTFOUND);
    ck_assert_ptr_nonnull(strstr(err.msg, "nw-no-such-program-anywhere"));
    nw_subproc_result_cleanup(&r);
    const char *abs[] = {"/nonexistent/dir/prog", NULL};
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(run(abs, 10000, 0, &r, &err), NW_ENOTFOUND);
    nw_subproc_result_cleanup(&r);
}
END_TEST

START_TEST(stdout_cap)
{
    const char *argv[] = {"sh", "-c", "head -c 100000 /dev/zero", NULL};
    nw_subproc_result_t r;
    ck_assert_int_eq(run(argv, 10000, 4096, &r, NULL), NW_OK);
    ck_assert_int_eq(r.out_overflow, 1);
    ck_assert_uint_eq(r.out.len, 4096);
    ck_assert_int_eq(r.exit_code, 0);
    nw_subproc_result_cleanup(&r);
}
END_TEST

/* Whether pid runs (a zombie waiting for its reaper does not). */
static int running(int pid)
{
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *close = strrchr(buf, ')');
    return close && close[1] == ' ' && close[2] != 'Z' && close[2] != 'X';
}

/* A child that never answers, with a grandchild holding the pipe: both are killed at
 * the deadline and the call returns. */
START_TEST(deadline_kills_the_group)
{
    char pidfile[] = "/tmp/nwsubprocXXXXXX";
    int fd = mkstemp(pidfile);
    ck_assert_int_ge(fd, 0);
    close(fd);
    char script[256];
    snprintf(script, sizeof script, "sleep 300 & echo $! > %s; wait", pidfile);
    const char *argv[] = {"sh", "-c", script, NULL};
    nw_subproc_result_t r;
    ck_assert_int_eq(run(argv, 300, 0, &r, NULL), NW_OK);
    ck_assert_int_eq(r.timed_out, 1);
    ck_assert_int_eq(r.exit_code, -1);
    nw_subproc_result_cleanup(&r);
    FILE *f = fopen(pidfile, "r");
    ck_assert_ptr_nonnull(f);
    int gpid = 0;
    ck_assert_int_eq(fscanf(f, "%d", &gpid), 1);
    fclose(f);
    unlink(pidfile);
    /* the grandchild got SIGKILL with its group; once reaped by init it is gone */
    int alive = 1;
    for (int i = 0; i < 200 && alive; i++) {
        alive = running(gpid);
        if (alive)
            usleep(10000);
    }
    ck_assert_msg(!alive, "the grandchild %d outlived the deadline", gpid);
}
END_TEST

Suite *nw_subproc_suite(void)
{
    Suite *s = suite_create("subproc");
    TCase *tc = tcase_create("subproc");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, output_and_status);
    tcase_add_test(tc, environment_is_given);
    tcase_add_test(tc, not_found);
    tcase_add_test(tc, stdout_cap);
    tcase_add_test(tc, deadline_kills_the_group);
    suite_add_tcase(s, tc);
    return s;
}
