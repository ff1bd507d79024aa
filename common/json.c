/* common/json.c — see json.h. */
#include "common/json.h"

#include <string.h>

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
