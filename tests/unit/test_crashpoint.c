/* tests/unit/test_crashpoint.c — the crash points of the crash campaign (scaler.testing.crashAt,
 * scaler/ctl/ctl.h):
 *   parse      "<point>[:<n>][+<ms>]"; an unknown point, a count below 1, a bad delay or
 *              trailing text is NW_EINVAL naming scaler.testing.crashAt
 *   due        only the armed point counts, and only its n-th hit is due
 *   the hook   in a child process: the hits before the n-th return, the n-th dies of
 *              SIGKILL (not an exit, so nothing is flushed); with +ms it dies later, from
 *              another thread, while the caller goes on
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/err.h"
#include "scaler/ctl/ctl.h"

Suite *nw_crashpoint_suite(void);

START_TEST(parse_forms)
{
    nw_ctl_crash_t cr;
    nw_err_t err = {0};
    ck_assert_int_eq(nw_ctl_crash_parse("launched", &cr, &err), NW_OK);
    ck_assert_str_eq(cr.point, "launched");
    ck_assert_int_eq(cr.nth, 1);
    ck_assert_int_eq(cr.delay_ms, 0);
    ck_assert_int_eq(nw_ctl_crash_parse("evicted:3", &cr, &err), NW_OK);
    ck_assert_str_eq(cr.point, "evicted");
    ck_assert_int_eq(cr.nth, 3);
    ck_assert_int_eq(nw_ctl_crash_parse("launch-sending:2+1500", &cr, &err), NW_OK);
    ck_assert_str_eq(cr.point, "launch-sending");
    ck_assert_int_eq(cr.nth, 2);
    ck_assert_int_eq(cr.delay_ms, 1500);
    ck_assert_int_eq(nw_ctl_crash_parse("launch-sending+20", &cr, &err), NW_OK);
    ck_assert_int_eq(cr.nth, 1);
    ck_assert_int_eq(cr.delay_ms, 20);
    for (int i = 0; nw_ctl_crash_points[i]; i++) {
        ck_assert_int_eq(nw_ctl_crash_parse(nw_ctl_crash_points[i], &cr, &err), NW_OK);
        ck_assert_str_eq(cr.point, nw_ctl_crash_points[i]);
    }
}
END_TEST

START_TEST(parse_errors_name_the_variable)
{
    static const char *const bad[] = {
        "",           "launch",     "launched:",   "launched:0",       "launched:-1",
        "launched:x", "launched+",  "launched+-5", "launched+9999999", "launched:1+5x",
        "launched 1", "evicted:2:3"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        nw_ctl_crash_t cr;
        nw_err_t err = {0};
        ck_assert_msg(nw_ctl_crash_parse(bad[i], &cr, &err) == NW_EINVAL, "accepted \"%s\"",
                      bad[i]);
        ck_assert_str_eq(err.path, "scaler.testing.crashAt");
        ck_assert_msg(strstr(err.msg, "scaler.testing.crashAt") != NULL, "%s", err.msg);
    }
}
END_TEST

START_TEST(due_on_the_nth_hit_of_its_point_only)
{
    nw_ctl_crash_t cr;
    nw_err_t err = {0};
    ck_assert_int_eq(nw_ctl_crash_parse("evicted:3", &cr, &err), NW_OK);
    ck_assert(!nw_ctl_crash_due(&cr, "launched"));
    ck_assert(!nw_ctl_crash_due(&cr, "evicted"));
    ck_assert(!nw_ctl_crash_due(&cr, "instance-terminating"));
    ck_assert(!nw_ctl_crash_due(&cr, "evicted"));
    ck_assert(nw_ctl_crash_due(&cr, "evicted"));
    ck_assert(!nw_ctl_crash_due(&cr, "evicted")); /* once */
}
END_TEST

/* the hook in a child: returns how it ended (exit status or 128 + signal) and whether it
 * came back from the hits before the due one ("before" written to the pipe) */
static int run_child(const char *spec, int hits, int *returned)
{
    int fd[2];
    ck_assert_int_eq(pipe(fd), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(fd[0]);
        nw_ctl_crash_t cr;
        nw_err_t err = {0};
        if (nw_ctl_crash_parse(spec, &cr, &err) != NW_OK)
            _exit(2);
        for (int i = 1; i <= hits; i++) {
            nw_ctl_crash_fault(&cr, "other-point", "x");
            nw_ctl_crash_fault(&cr, cr.point, "obj");
            if (i == hits - 1 && write(fd[1], "b", 1) != 1)
                _exit(2);
        }
        /* with a delay the due hit returns; the thread kills this process later */
        if (write(fd[1], "a", 1) != 1)
            _exit(2);
        for (int i = 0; i < 100; i++) /* 1 s: the delayed kill comes long before */
            usleep(10000);
        _exit(0);
    }
    close(fd[1]);
    char buf[4] = {0};
    ssize_t n = read(fd[0], buf, sizeof buf);
    if (n == 1) { /* the other byte may come in a second read */
        ssize_t m = read(fd[0], buf + 1, sizeof buf - 1);
        n += m > 0 ? m : 0;
    }
    close(fd[0]);
    *returned = n > 0 ? (int)n : 0;
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
}

START_TEST(hook_dies_of_sigkill_on_the_due_hit)
{
    int returned = 0;
    /* 3 hits armed for the 3rd: back from the 2nd ("b"), never back from the 3rd */
    ck_assert_int_eq(run_child("evicted:3", 3, &returned), 128 + SIGKILL);
    ck_assert_int_eq(returned, 1);
    /* never due (4th hit armed, 3 hits): the child finishes normally */
    ck_assert_int_eq(run_child("evicted:4", 3, &returned), 0);
    ck_assert_int_eq(returned, 2);
}
END_TEST

START_TEST(hook_with_a_delay_returns_then_dies)
{
    int returned = 0;
    /* the due hit returns (the caller goes on, "a" written), then SIGKILL from the thread */
    ck_assert_int_eq(run_child("launch-sending:2+50", 2, &returned), 128 + SIGKILL);
    ck_assert_int_eq(returned, 2);
}
END_TEST

Suite *nw_crashpoint_suite(void)
{
    Suite *s = suite_create("crashpoint");
    TCase *t = tcase_create("crashpoint");
    tcase_add_test(t, parse_forms);
    tcase_add_test(t, parse_errors_name_the_variable);
    tcase_add_test(t, due_on_the_nth_hit_of_its_point_only);
    tcase_add_test(t, hook_dies_of_sigkill_on_the_due_hit);
    tcase_add_test(t, hook_with_a_delay_returns_then_dies);
    suite_add_tcase(s, t);
    return s;
}
