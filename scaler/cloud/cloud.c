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
    const char *p = i->tags, *end = i->tags + i->tags_len;
    while (p < end) {
        const char *v = p + strlen(p) + 1;
        if (strcmp(p, key) == 0)
            return v;
        p = v + strlen(v) + 1;
    }
    return NULL;
}

bool nw_cloud_instance_tag_add(nw_cloud_instance_t *i, const char *key, const char *value)
{
    size_t kl = strlen(key) + 1, vl = strlen(value) + 1;
    if (i->tags_len + kl + vl > sizeof i->tags) {
        i->tags_dropped++;
        return false;
    }
    memcpy(i->tags + i->tags_len, key, kl);
    memcpy(i->tags + i->tags_len + kl, value, vl);
    i->tags_len += kl + vl;
    i->ntags++;
    return true;
}

bool nw_cloud_tag_kept(const char *key)
{
    static const char *const prefixes[] = {"karpenter.sh/", "karpenter.k8s.aws/",
                                           "kubernetes.io/cluster/"};
    for (size_t k = 0; k < sizeof prefixes / sizeof *prefixes; k++)
        if (strncmp(key, prefixes[k], strlen(prefixes[k])) == 0)
            return true;
    return false;
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
