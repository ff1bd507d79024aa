/* Unit tests for common/jsonarena: cJSON allocations inside begin/end come from the
 * thread's arena and are dropped at end; trees from outside it are freed as before; a
 * thread of its own gets its own arena. (tests/unit/main.c installs the hooks, as
 * cli/main.c does.) */
#include <check.h>
#include <cjson/cJSON.h>
#include <pthread.h>
#include <string.h>

#include "common/jsonarena.h"

Suite *nw_jsonarena_suite(void);

START_TEST(arena_serves_cjson_inside_begin_end)
{
    ck_assert_uint_eq(nw_jsonarena_used(), 0);
    cJSON *before = cJSON_Parse("{\"kept\":[1,2,3]}"); /* malloc'd: outside the arena */
    ck_assert_ptr_nonnull(before);
    nw_jsonarena_begin();
    cJSON *j =
        cJSON_Parse("{\"a\":{\"b\":[\"x\",\"y\",{\"c\":null}]},\"d\":\"long string value\"}");
    ck_assert_ptr_nonnull(j);
    size_t used = nw_jsonarena_used();
    ck_assert_uint_gt(used, 0);
    char *txt = cJSON_PrintUnformatted(j);
    ck_assert_str_eq(txt, "{\"a\":{\"b\":[\"x\",\"y\",{\"c\":null}]},\"d\":\"long string value\"}");
    cJSON_free(txt);
    cJSON_Delete(j);
    cJSON_Delete(before); /* a malloc'd tree freed inside: goes to free() */
    /* big enough for a second chunk */
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; i < 5000; i++)
        cJSON_AddItemToArray(arr, cJSON_CreateString("sixteen bytes..."));
    ck_assert_int_eq(cJSON_GetArraySize(arr), 5000);
    ck_assert_uint_gt(nw_jsonarena_used(), 64u * 1024u);
    cJSON_Delete(arr);
    nw_jsonarena_end();
    ck_assert_uint_eq(nw_jsonarena_used(), 0);
    /* after end cJSON is back on malloc: this tree outlives any arena */
    cJSON *after = cJSON_Parse("[true]");
    ck_assert_ptr_nonnull(after);
    nw_jsonarena_begin();
    nw_jsonarena_end();
    ck_assert(cJSON_IsTrue(cJSON_GetArrayItem(after, 0)));
    cJSON_Delete(after);
}
END_TEST

START_TEST(arena_nests)
{
    nw_jsonarena_begin();
    nw_jsonarena_begin();
    cJSON *j = cJSON_CreateObject();
    ck_assert_uint_gt(nw_jsonarena_used(), 0);
    nw_jsonarena_end(); /* inner end: still inside the outer request */
    ck_assert_uint_gt(nw_jsonarena_used(), 0);
    cJSON_AddStringToObject(j, "k", "v");
    ck_assert_str_eq(cJSON_GetObjectItem(j, "k")->valuestring, "v");
    cJSON_Delete(j);
    nw_jsonarena_end();
    ck_assert_uint_eq(nw_jsonarena_used(), 0);
}
END_TEST

/* Paused, cJSON allocates with malloc: what is built then outlives end(), and the arena's
 * nodes freed then cost nothing (ASan reports a use after end, or free() of arena memory). */
START_TEST(arena_pause_keeps_what_is_built)
{
    nw_jsonarena_begin();
    cJSON *ev = cJSON_Parse("{\"object\":{\"spec\":{\"x\":[1,2,{\"y\":\"z\"}]}}}");
    size_t used = nw_jsonarena_used();
    ck_assert_uint_gt(used, 0);
    ck_assert(nw_jsonarena_owns(ev));
    nw_jsonarena_pause();
    cJSON *kept = cJSON_Duplicate(cJSON_GetObjectItem(ev, "object"), 1);
    ck_assert(!nw_jsonarena_owns(kept));
    ck_assert_uint_eq(nw_jsonarena_used(), used); /* nothing more from the arena */
    cJSON_Delete(ev);                             /* the arena's: nothing to free */
    nw_jsonarena_resume();
    cJSON *more = cJSON_CreateObject();
    ck_assert(nw_jsonarena_owns(more)); /* resumed: the arena again */
    cJSON_Delete(more);
    nw_jsonarena_end();
    char *txt = cJSON_PrintUnformatted(kept);
    ck_assert_str_eq(txt, "{\"spec\":{\"x\":[1,2,{\"y\":\"z\"}]}}");
    cJSON_free(txt);
    cJSON_Delete(kept);
    nw_jsonarena_pause(); /* outside begin/end: nothing */
    nw_jsonarena_resume();
    cJSON *j = cJSON_CreateArray();
    ck_assert(!nw_jsonarena_owns(j));
    cJSON_Delete(j);
}
END_TEST

static void *other_thread(void *arg)
{
    (void)arg;
    size_t outside = nw_jsonarena_used(); /* the creating thread is inside its arena */
    nw_jsonarena_begin();
    cJSON *j = cJSON_Parse("{\"thread\":2}");
    size_t used = nw_jsonarena_used();
    cJSON_Delete(j);
    nw_jsonarena_end();
    return (void *)(outside == 0 && used > 0 ? (size_t)1 : (size_t)0);
}

START_TEST(arena_is_per_thread)
{
    nw_jsonarena_begin();
    cJSON *j = cJSON_Parse("{\"thread\":1}");
    size_t mine = nw_jsonarena_used();
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, other_thread, NULL), 0);
    void *ok = NULL;
    ck_assert_int_eq(pthread_join(t, &ok), 0);
    ck_assert_ptr_eq(ok, (void *)(size_t)1);
    ck_assert_uint_eq(nw_jsonarena_used(), mine); /* the other thread did not use mine */
    cJSON_Delete(j);
    nw_jsonarena_end();
}
END_TEST

Suite *nw_jsonarena_suite(void)
{
    Suite *s = suite_create("jsonarena");
    TCase *tc = tcase_create("arena");
    tcase_add_test(tc, arena_serves_cjson_inside_begin_end);
    tcase_add_test(tc, arena_nests);
    tcase_add_test(tc, arena_pause_keeps_what_is_built);
    tcase_add_test(tc, arena_is_per_thread);
    suite_add_tcase(s, tc);
    return s;
}
