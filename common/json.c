/* common/json.c — see json.h. */
#include "common/json.h"

#include <stdarg.h>
#include <string.h>

#include "common/oom.h"

const cJSON *nw_json_get(const cJSON *o, const char *key)
{
    if (!cJSON_IsObject(o) || !key)
        return NULL;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNull(v) ? NULL : v;
}

const cJSON *nw_json_path(const cJSON *o, const char *const *keys, size_t n)
{
    for (size_t i = 0; i < n && o; i++)
        o = nw_json_get(o, keys[i]);
    return o;
}

const char *nw_json_str(const cJSON *o, const char *key)
{
    const cJSON *v = nw_json_get(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

const char *nw_json_type_name(const cJSON *j)
{
    if (cJSON_IsString(j))
        return "string";
    if (cJSON_IsNumber(j))
        return "number";
    if (cJSON_IsBool(j))
        return "boolean";
    if (cJSON_IsArray(j))
        return "array";
    if (cJSON_IsObject(j))
        return "object";
    if (cJSON_IsNull(j))
        return "null";
    return "invalid";
}

const char *nw_json_str_at(const cJSON *o, const char *dotted)
{
    char seg[128];
    const cJSON *cur = o;
    const char *p = dotted;
    while (cur && *p) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        if (n >= sizeof seg)
            return NULL;
        memcpy(seg, p, n);
        seg[n] = 0;
        cur = nw_json_get(cur, seg);
        p = dot ? dot + 1 : p + n;
    }
    return cJSON_IsString(cur) ? cur->valuestring : NULL;
}

const char *nw_json_condition(const cJSON *obj, const char *type)
{
    const cJSON *cd;
    cJSON_ArrayForEach(cd, nw_json_get(nw_json_get(obj, "status"), "conditions"))
    {
        const char *t = nw_json_str(cd, "type");
        if (t && strcmp(t, type) == 0)
            return nw_json_str(cd, "status");
    }
    return NULL;
}

cJSON *nw_json_get_mut(cJSON *o, const char *key)
{
    if (!cJSON_IsObject(o) || !key)
        return NULL;
    cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNull(v) ? NULL : v;
}

cJSON *nw_json_strings(const char *key, ...)
{
    cJSON *o = cJSON_CreateObject();
    va_list ap;
    va_start(ap, key);
    for (const char *k = key; o && k; k = va_arg(ap, const char *)) {
        const char *v = va_arg(ap, const char *);
        if (v && !cJSON_AddStringToObject(o, k, v)) {
            cJSON_Delete(o);
            o = NULL;
        }
    }
    va_end(ap);
    return o;
}

/* ---- checked builders ---- */

static cJSON *must(cJSON *j, const char *what)
{
    return nw_oom_check(j, what);
}

cJSON *nw_json_new_object(void)
{
    return must(cJSON_CreateObject(), "json object");
}

cJSON *nw_json_new_array(void)
{
    return must(cJSON_CreateArray(), "json array");
}

cJSON *nw_json_new_string(const char *s)
{
    return s ? must(cJSON_CreateString(s), "json string") : NULL;
}

cJSON *nw_json_new_number(double v)
{
    return must(cJSON_CreateNumber(v), "json number");
}

cJSON *nw_json_new_bool(int b)
{
    return must(cJSON_CreateBool(b ? 1 : 0), "json bool");
}

cJSON *nw_json_new_null(void)
{
    return must(cJSON_CreateNull(), "json null");
}

cJSON *nw_json_dup(const cJSON *o)
{
    return o ? must(cJSON_Duplicate(o, 1), "json copy") : NULL;
}

cJSON *nw_json_add_string(cJSON *o, const char *key, const char *s)
{
    return o && key && s ? must(cJSON_AddStringToObject(o, key, s), key) : NULL;
}

cJSON *nw_json_add_number(cJSON *o, const char *key, double v)
{
    return o && key ? must(cJSON_AddNumberToObject(o, key, v), key) : NULL;
}

cJSON *nw_json_add_bool(cJSON *o, const char *key, int b)
{
    return o && key ? must(cJSON_AddBoolToObject(o, key, b ? 1 : 0), key) : NULL;
}

cJSON *nw_json_add_object(cJSON *o, const char *key)
{
    return o && key ? must(cJSON_AddObjectToObject(o, key), key) : NULL;
}

cJSON *nw_json_add_array(cJSON *o, const char *key)
{
    return o && key ? must(cJSON_AddArrayToObject(o, key), key) : NULL;
}

cJSON_bool nw_json_add_item(cJSON *o, const char *key, cJSON *item)
{
    if (!o || !key || !item)
        return 0;
    if (!cJSON_AddItemToObject(o, key, item))
        nw_oom(key);
    return 1;
}

cJSON_bool nw_json_push(cJSON *a, cJSON *item)
{
    if (!a || !item)
        return 0;
    if (!cJSON_AddItemToArray(a, item))
        nw_oom("json array item");
    return 1;
}

char *nw_json_print(const cJSON *o)
{
    return o ? nw_oom_check(cJSON_PrintUnformatted(o), "json text") : NULL;
}

char *nw_json_print_pretty(const cJSON *o)
{
    return o ? nw_oom_check(cJSON_Print(o), "json text") : NULL;
}
