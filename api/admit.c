#include "api/admit.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/json.h"

static _Thread_local int64_t t_deadline;

void nw_admit_deadline_set(int64_t mono_ns)
{
    t_deadline = mono_ns;
}

bool nw_admit_deadline_passed(void)
{
    if (!t_deadline)
        return false;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec > t_deadline;
}

void nw_admit_result_init(nw_admit_result_t *res)
{
    memset(res, 0, sizeof *res);
    res->allowed = 1;
}

void nw_admit_result_cleanup(nw_admit_result_t *res)
{
    free(res->reason);
    free(res->message);
    cJSON_Delete(res->details);
    free(res->patch);
    for (size_t i = 0; i < res->nwarnings; i++)
        free(res->warnings[i]);
    nw_admit_result_init(res);
}

nw_rc_t nw_admit_warn(nw_admit_result_t *res, const char *fmt, ...)
{
    if (res->nwarnings >= NW_ADMIT_MAX_WARNINGS)
        return NW_OK;
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NW_ENOMEM;
    res->warnings[res->nwarnings++] = s;
    return NW_OK;
}

const char *nw_admit_object_name(const nw_admit_req_t *req)
{
    if (req->name && *req->name)
        return req->name;
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(req->object, "metadata"), "name");
    return cJSON_IsString(n) ? n->valuestring : "";
}

cJSON *nw_admit_lookup_in(void *arg, const char *group, const char *kind, const char *name)
{
    const cJSON *all = arg;
    if (!all || !group || !kind || !name)
        return NULL;
    size_t gl = strlen(group);
    bool namespaced =
        strcmp(kind, "ResourceClaim") == 0 || strcmp(kind, "ResourceClaimTemplate") == 0;
    const cJSON *o;
    cJSON_ArrayForEach(o, all)
    {
        const char *k = nw_json_str(o, "kind"), *api = nw_json_str(o, "apiVersion");
        const cJSON *md = nw_json_get(o, "metadata");
        const char *n = nw_json_str(md, "name"), *ns = nw_json_str(md, "namespace");
        if (!k || !api || !n || strcmp(k, kind) != 0 || strncmp(api, group, gl) != 0 ||
            api[gl] != '/')
            continue;
        char key[512];
        snprintf(key, sizeof key, "%s%s%s", namespaced ? (ns && *ns ? ns : "default") : "",
                 namespaced ? "/" : "", n);
        if (strcmp(key, name) == 0)
            return nw_json_dup(o);
    }
    return NULL;
}
