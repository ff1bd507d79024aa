/*
 * common/json.h — small read-only getters over parsed cJSON trees, shared by the
 * parsers and validators (api/, server/, scaler/) instead of each file keeping its
 * own copy.
 *
 * Ownership: every result is borrowed from the tree passed in (valid while it
 * lives); nothing is allocated. Thread: any (no state).
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

#endif
