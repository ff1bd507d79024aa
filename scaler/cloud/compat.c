/* scaler/cloud/compat.c — the instance-type compatibility filters; see compat.h. */
#include "scaler/cloud/compat.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "scaler/cloud/kubelet.h"
#include "common/json.h"

static bool refuse(char *why, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool refuse(char *why, size_t n, const char *fmt, ...)
{
    if (why && n) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, n, fmt, ap);
        va_end(ap);
    }
    return false;
}

static int num_or(const cJSON *o, const char *k, int dflt)
{
    const cJSON *v = nw_json_get(o, k);
    return cJSON_IsNumber(v) ? (int)v->valuedouble : dflt;
}

/* compatibility.go networkInterfaceCheck (ResolveNetworkInterfaces carries no secondary
 * IP counts, so that part never applies) */
static bool interfaces_ok(const nw_itype_t *t, const cJSON *nis, char *why, size_t n)
{
    if (!cJSON_IsArray(nis))
        return true;
    if (t->features_known && t->network_cards <= 0)
        return refuse(why, n, "%s has no network cards", t->name);
    if (t->features_known && t->ena_unsupported)
        return refuse(why, n, "%s does not support ENA", t->name);
    int efa_only = 0;
    const cJSON *ni;
    cJSON_ArrayForEach(ni, nis)
    {
        int card = num_or(ni, "networkCardIndex", 0), dev = num_or(ni, "deviceIndex", 0);
        const cJSON *type = nw_json_get(ni, "interfaceType");
        efa_only += cJSON_IsString(type) && strcmp(type->valuestring, "efa-only") == 0;
        int max;
        if (t->features_known) {
            if (card < 0 || card >= t->network_cards || card >= NW_ITYPE_MAX_CARDS)
                return refuse(why, n, "%s has %d network card(s), no networkCardIndex %d", t->name,
                              t->network_cards, card);
            max = t->card_enis[card];
        } else if (card == 0)
            max = t->enis;
        else
            continue; /* the embedded catalog knows card 0 only */
        if (max <= dev)
            return refuse(why, n, "%s's network card %d has %d interface(s), no deviceIndex %d",
                          t->name, card, max, dev);
    }
    if (efa_only > 0 && efa_only > t->efa)
        return refuse(why, n, "%s supports %d EFA interface(s), the class asks for %d", t->name,
                      t->efa, efa_only);
    return true;
}

bool nw_compat_class_compatible(const nw_itype_t *t, const cJSON *nodeclass,
                                const char *pg_strategy, char *why, size_t whylen)
{
    const cJSON *spec = nw_json_get(nodeclass, "spec");
    if (why && whylen)
        why[0] = 0;
    if (!interfaces_ok(t, nw_json_get(spec, "networkInterfaces"), why, whylen))
        return false;
    if (nw_kubelet_ami_family(nodeclass) == NW_AMI_AL2023 && strncmp(t->name, "a1.", 3) == 0)
        return refuse(why, whylen, "%s: AL2023 does not run on a1 types", t->name);
    const cJSON *nv = nw_json_get(nw_json_get(spec, "cpuOptions"), "nestedVirtualization");
    if (cJSON_IsString(nv) && strcmp(nv->valuestring, "enabled") == 0 && t->features_known &&
        !t->nested_virt)
        return refuse(why, whylen, "%s does not support nested virtualization", t->name);
    if (pg_strategy && *pg_strategy && t->features_known) {
        unsigned bit = strcmp(pg_strategy, "cluster") == 0     ? NW_PG_CLUSTER
                       : strcmp(pg_strategy, "partition") == 0 ? NW_PG_PARTITION
                       : strcmp(pg_strategy, "spread") == 0    ? NW_PG_SPREAD
                                                               : 0u;
        if (!(t->pg_strategies & bit))
            return refuse(why, whylen, "%s does not support %s placement groups", t->name,
                          pg_strategy);
    }
    if (nw_json_get(spec, "connectionTracking") &&
        !cJSON_IsNull(nw_json_get(spec, "connectionTracking")) &&
        strcmp(t->hypervisor, "nitro") != 0)
        return refuse(why, whylen, "%s is not a Nitro type (connectionTracking)", t->name);
    return true;
}
