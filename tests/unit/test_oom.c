/* Unit tests for the out-of-memory policy (docs/internals/ownership.md): with cJSON's
 * allocator failing (cJSON_InitHooks), the checked builders of common/json.h abort
 * through nw_oom (the scaler's and the CLI's policy), while api/ returns NW_ENOMEM (its
 * contract) at every allocation it makes. */
#include <check.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api/jsonpatch.h"
#include "api/nodepool.h"
#include "common/json.h"
#include "common/jsonarena.h"
#include "common/log.h"
#include "common/oom.h"

Suite *nw_oom_suite(void);

/* cJSON's allocator: the first `budget` allocations succeed, then every one fails */
static long budget = -1; /* < 0: never fail */
static long nallocs;

static void *failing_malloc(size_t n)
{
    nallocs++;
    if (budget >= 0 && nallocs > budget)
        return NULL;
    return malloc(n);
}

static void fail_after(long n)
{
    budget = n;
    nallocs = 0;
    cJSON_Hooks h = {failing_malloc, free};
    cJSON_InitHooks(&h);
}

static void restore(void)
{
    nw_jsonarena_install(); /* the allocator tests/unit/main.c installs for every suite */
    budget = -1;
}

/* Run fn in a child whose cJSON allocations fail after n; the child's log goes to a pipe.
 * Returns the wait status; *log gets what it logged. */
static int in_child(void (*fn)(void), long n, char *log, size_t cap)
{
    int fd[2];
    ck_assert_int_eq(pipe(fd), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(fd[0]);
        nw_log_set_fd(fd[1]);
        fail_after(n);
        fn();
        _exit(0);
    }
    close(fd[1]);
    size_t got = 0;
    ssize_t r;
    while (got + 1 < cap && (r = read(fd[0], log + got, cap - 1 - got)) > 0)
        got += (size_t)r;
    log[got] = 0;
    close(fd[0]);
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    return st;
}

static void new_object(void)
{
    cJSON *o = nw_json_new_object();
    cJSON_Delete(o);
}

static void add_string(void)
{
    cJSON *o = nw_json_new_object(); /* allocation 1 succeeds; the member fails */
    nw_json_add_string(o, "providerID", "aws:///zone-a/i-1");
    cJSON_Delete(o);
}

static void print(void)
{
    cJSON *o = nw_json_new_object();
    nw_json_add_string(o, "k", "v");
    free(nw_json_print(o));
    cJSON_Delete(o);
}

START_TEST(builder_aborts_through_hook)
{
    char log[2048];
    int st = in_child(new_object, 0, log, sizeof log);
    ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "status %d", st);
    ck_assert_ptr_nonnull(strstr(log, "\"msg\":\"out of memory\""));
    ck_assert_ptr_nonnull(strstr(log, "\"what\":\"json object\""));

    st = in_child(add_string, 1, log, sizeof log);
    ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "status %d", st);
    ck_assert_ptr_nonnull(strstr(log, "\"what\":\"providerID\"")); /* names the member */

    /* the printer: object, member item, value and key succeed; the text buffer fails */
    st = in_child(print, 4, log, sizeof log);
    ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "status %d", st);
    ck_assert_ptr_nonnull(strstr(log, "\"what\":\"json text\""));
}
END_TEST

START_TEST(builder_succeeds_with_memory)
{
    /* the same calls with enough memory exit normally and log nothing */
    char log[2048];
    int st = in_child(add_string, 100, log, sizeof log);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
    ck_assert_str_eq(log, "");
    st = in_child(print, 100, log, sizeof log);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
}
END_TEST

START_TEST(null_arguments_are_not_oom)
{
    /* NULL in gives what cJSON gives, without calling the hook */
    cJSON *o = nw_json_new_object();
    ck_assert_ptr_null(nw_json_add_string(o, "k", NULL));
    ck_assert_ptr_null(nw_json_add_string(NULL, "k", "v"));
    ck_assert_ptr_null(nw_json_add_object(NULL, "k"));
    ck_assert_ptr_null(nw_json_new_string(NULL));
    ck_assert_ptr_null(nw_json_dup(NULL));
    ck_assert_ptr_null(nw_json_print(NULL));
    ck_assert(!nw_json_add_item(o, "k", NULL));
    cJSON *n = nw_json_new_null();
    ck_assert(!nw_json_push(NULL, n));
    cJSON_Delete(n);
    ck_assert_int_eq(cJSON_GetArraySize(o), 0);
    ck_assert_ptr_eq(nw_oom_check(o, "x"), o);
    cJSON_Delete(o);
}
END_TEST

/* api/: nw_nodepool_defaults_apply at every cJSON allocation it makes returns NW_ENOMEM (never
 * another code, never a crash) and, with memory, the patch it always gave. */
START_TEST(api_returns_enomem)
{
    cJSON *obj = cJSON_Parse("{\"spec\":{\"template\":{\"spec\":{}}}}");
    ck_assert_ptr_nonnull(obj);
    nw_jsonpatch_t p;
    nw_jsonpatch_init(&p);
    ck_assert_int_eq(nw_nodepool_defaults_apply(obj, &p), NW_OK);
    char *want = nw_jsonpatch_take_text(&p);
    nw_jsonpatch_cleanup(&p);
    ck_assert_ptr_nonnull(want);
    ck_assert_ptr_nonnull(strstr(want, "/spec/disruption"));

    int failures = 0;
    for (long n = 0;; n++) {
        ck_assert_int_lt(n, 10000);
        nw_jsonpatch_init(&p);
        fail_after(n);
        nw_rc_t rc = nw_nodepool_defaults_apply(obj, &p);
        long used = nallocs;
        restore();
        if (rc == NW_OK) {
            char *got = nw_jsonpatch_take_text(&p);
            ck_assert_str_eq(got, want);
            free(got);
            nw_jsonpatch_cleanup(&p);
            ck_assert_int_le(used, n); /* it succeeded because nothing failed */
            break;
        }
        ck_assert_msg(rc == NW_ENOMEM, "allocation %ld: rc %s", n + 1, nw_err_rc_str(rc));
        nw_jsonpatch_cleanup(&p);
        failures++;
    }
    ck_assert_int_gt(failures, 3); /* the defaults make several allocations */
    free(want);
    cJSON_Delete(obj);
}
END_TEST

/* nw_json_strings, the NW_ENOMEM layers' small-object builder: all or nothing */
START_TEST(strings_all_or_nothing)
{
    cJSON *o =
        nw_json_strings("key", "k", "value", NULL, "effect", "NoSchedule", (const char *)NULL);
    char *t = cJSON_PrintUnformatted(o);
    ck_assert_str_eq(t, "{\"key\":\"k\",\"effect\":\"NoSchedule\"}");
    free(t);
    cJSON_Delete(o);
    int failures = 0;
    for (long n = 0;; n++) {
        fail_after(n);
        o = nw_json_strings("key", "k", "operator", "Exists", "effect", "NoSchedule",
                            (const char *)NULL);
        restore();
        if (o) {
            ck_assert_int_eq(cJSON_GetArraySize(o), 3);
            cJSON_Delete(o);
            break;
        }
        failures++; /* NULL, and LeakSanitizer shows the partial object was freed */
    }
    ck_assert_int_eq(failures, 10); /* the object, then item, value and key of each member */
}
END_TEST

Suite *nw_oom_suite(void)
{
    Suite *s = suite_create("oom");
    TCase *tc = tcase_create("oom");
    tcase_set_timeout(tc, 30); /* forks children: run as a fork suite under ASan */
    tcase_add_checked_fixture(tc, NULL, restore);
    tcase_add_test(tc, builder_aborts_through_hook);
    tcase_add_test(tc, builder_succeeds_with_memory);
    tcase_add_test(tc, null_arguments_are_not_oom);
    tcase_add_test(tc, api_returns_enomem);
    tcase_add_test(tc, strings_all_or_nothing);
    suite_add_tcase(s, tc);
    return s;
}
