/*
 * scaler/disrupt/accel.c — which pods are of an accelerator class (its resources requested
 * or limited by a container, an init container or the pod-level resources); see disrupt.h.
 */
#include <string.h>

#include "common/json.h"
#include "scaler/disrupt/disrupt.h"

static bool accel_resource(const nw_disrupt_accel_t *a, const char *res)
{
    for (size_t i = 0; res && i < a->nresources; i++) {
        const char *r = a->resources[i];
        size_t n = strlen(r);
        if (n > 0 && r[n - 1] == '*' ? strncmp(res, r, n - 1) == 0 : strcmp(res, r) == 0)
            return true;
    }
    return false;
}

/* does a resources object ({requests, limits}) name one of a's resources */
static bool resources_use(const cJSON *resources, const nw_disrupt_accel_t *a)
{
    static const char *const parts[] = {"requests", "limits"};
    for (size_t i = 0; i < 2; i++) {
        const cJSON *r;
        cJSON_ArrayForEach(r, nw_json_get(resources, parts[i]))
        {
            if (accel_resource(a, r->string))
                return true;
        }
    }
    return false;
}

bool nw_accel_pod_uses(const nw_pod_t *pod, const nw_disrupt_accel_t *a)
{
    static const char *const lists[] = {"containers", "initContainers"};
    if (a->dra_classes && cJSON_GetArraySize(nw_json_get(pod->spec, "resourceClaims")) > 0 &&
        (a->dra_classes(pod, a->dra_ud) & a->bit))
        return true;
    for (size_t l = 0; l < 2; l++) {
        const cJSON *c;
        cJSON_ArrayForEach(c, nw_json_get(pod->spec, lists[l]))
        {
            if (resources_use(nw_json_get(c, "resources"), a))
                return true;
        }
    }
    return resources_use(nw_json_get(pod->spec, "resources"), a);
}

nw_disrupt_accel_t nw_accel_of_class(const nw_accel_class_t *k)
{
    return (nw_disrupt_accel_t){k->name,
                                k->label_value,
                                (const char *const *)k->resources,
                                k->nresources,
                                k->aware_disruption,
                                k->rollout_max,
                                k->rollout_timeout_ns,
                                0,
                                NULL,
                                NULL};
}
