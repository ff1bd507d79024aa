/*
 * common/json.h — the one set of cJSON helpers: read-only getters over parsed trees
 * (every layer), and checked builders for the layers that abort on out of memory (the
 * scaler and the CLI; docs/internals/ownership.md).
 *
 * Getters: every result is borrowed from the tree passed in (valid while it lives);
 * nothing is allocated.
 * Builders (nw_json_new_*, nw_json_add_*, nw_json_push, nw_json_dup, nw_json_print*):
 * the cJSON call of the same shape, except that a NULL result from non-NULL arguments
 * (an allocation failure) aborts through nw_oom (common/oom.h). A NULL argument gives
 * what cJSON gives (NULL or false: e.g. nw_json_add_string(o, "k", NULL) adds nothing),
 * so they replace the cJSON calls one for one. Results are owned as cJSON's are.
 * Thread: any (no state).
 */
#ifndef NW_COMMON_JSON_H
#define NW_COMMON_JSON_H

#include <stddef.h>

#include <cjson/cJSON.h>

/** Member `key` of object o (case-sensitive). NULL when o is not an object, the
 * member is absent, or its value is JSON null (null counts as absent, as in
 * Kubernetes objects). */
const cJSON *nw_json_get(const cJSON *o, const char *key);

/** o.keys[0].keys[1]... through n nested objects (nw_json_get at each step); NULL
 * as soon as a step is missing. n = 0 returns o. */
const cJSON *nw_json_path(const cJSON *o, const char *const *keys, size_t n);

/** The string value of member `key`, or NULL when it is absent, null or not a string. */
const char *nw_json_str(const cJSON *o, const char *key);

/** The string at a dotted path of nested objects ("spec.nodeClassRef.name"), or NULL when a
 * step is missing or the value is not a string. Segments are at most 127 bytes. */
const char *nw_json_str_at(const cJSON *o, const char *dotted);

/** The status ("True", "False", "Unknown") of condition `type` in a Kubernetes object's
 * status.conditions, or NULL when there is none. */
const char *nw_json_condition(const cJSON *obj, const char *type);

/** JSON type of a value for error messages: "string", "number", "boolean",
 * "array", "object", "null"; "invalid" for NULL or a cJSON node of no JSON type. */
const char *nw_json_type_name(const cJSON *j);

/** Mutable member `key` of object o, for code that edits a tree it owns; as nw_json_get. */
cJSON *nw_json_get_mut(cJSON *o, const char *key);

/** A new object of string members from (key, value) pairs ending with a NULL key, in order;
 * a pair whose value is NULL is left out. NULL when an allocation fails (nothing leaks):
 * how the NW_ENOMEM layers build a small object all or nothing. */
cJSON *nw_json_strings(const char *key, ...) __attribute__((sentinel));

/* ---- checked builders (abort through nw_oom on allocation failure) ---- */

cJSON *nw_json_new_object(void);
cJSON *nw_json_new_array(void);
cJSON *nw_json_new_string(const char *s); /* NULL s -> NULL */
cJSON *nw_json_new_number(double v);
cJSON *nw_json_new_bool(int b);
cJSON *nw_json_new_null(void);
/** Deep copy (cJSON_Duplicate(o, 1)); NULL o -> NULL. */
cJSON *nw_json_dup(const cJSON *o);

/** cJSON_Add{String,Number,Bool,Object,Array}ToObject: the added item; NULL when o, key
 * (or s) is NULL. */
cJSON *nw_json_add_string(cJSON *o, const char *key, const char *s);
cJSON *nw_json_add_number(cJSON *o, const char *key, double v);
cJSON *nw_json_add_bool(cJSON *o, const char *key, int b);
cJSON *nw_json_add_object(cJSON *o, const char *key);
cJSON *nw_json_add_array(cJSON *o, const char *key);

/** cJSON_AddItemToObject / cJSON_AddItemToArray: o takes item. False (item not taken)
 * only when an argument is NULL. */
cJSON_bool nw_json_add_item(cJSON *o, const char *key, cJSON *item);
cJSON_bool nw_json_push(cJSON *a, cJSON *item);

/** cJSON_PrintUnformatted / cJSON_Print: the text, released with cJSON_free (free() too outside
 * an admission review's arena, common/jsonarena.h); NULL o -> NULL. */
char *nw_json_print(const cJSON *o);
char *nw_json_print_pretty(const cJSON *o);

#endif
