/* scaler/cloud/cloud.c — the neutral types' helpers; see cloud.h. */
#include "scaler/cloud/cloud.h"

#include <stdlib.h>
#include <string.h>

const char *nw_cloud_err_kind_name(nw_cloud_err_kind_t k)
{
    switch (k) {
    case NW_CLOUD_ERR_NONE:
        return "none";
    case NW_CLOUD_ERR_CAPACITY:
        return "capacity";
    case NW_CLOUD_ERR_UNAUTHORIZED:
        return "unauthorized";
    case NW_CLOUD_ERR_INVALID:
        return "invalid";
    case NW_CLOUD_ERR_THROTTLED:
        return "throttled";
    case NW_CLOUD_ERR_OTHER:
        break;
    }
    return "other";
}

void nw_cloud_instances_free(nw_cloud_instances_t *l)
{
    if (!l)
        return;
    free(l->v);
    memset(l, 0, sizeof *l);
}

const char *nw_cloud_instance_tag(const nw_cloud_instance_t *i, const char *key)
{
    for (int t = 0; t < i->ntags; t++)
        if (strcmp(i->tags[t].key, key) == 0)
            return i->tags[t].value;
    return NULL;
}

const char *nw_cloud_instance_id(const char *provider_id)
{
    const char *s = strrchr(provider_id, '/');
    return s ? s + 1 : provider_id;
}

void nw_cloud_healths_free(nw_cloud_healths_t *l)
{
    if (l) {
        free(l->v);
        l->v = NULL;
        l->n = l->cap = 0;
    }
}
