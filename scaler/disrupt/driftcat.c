/*
 * scaler/disrupt/driftcat.c — the catalog questions the drift rules ask (instance
 * type and offering labels, offerings, architecture), so that the rules in drift.c
 * see the catalog only through these three calls.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "scaler/cloud/catalog.h"
#include "scaler/disrupt/drift.h"

#define MAX_LABELS 48

static bool offering_matches(const nw_offering_t *o, const char *zone, const char *ct)
{
    if (zone && *zone && strcmp(o->zone, zone) != 0)
        return false;
    if (ct && *ct && strcmp(o->capacity_type, ct) != 0)
        return false;
    return true;
}

int nw_driftcat__type_labels(const nw_catalog_t *cat, const char *type, const char *zone,
                             const char *capacity_type, char (*keys)[64], char (*vals)[64], int max)
{
    const nw_itype_t *t = cat && type ? nw_catalog_find(cat, type) : NULL;
    if (!t)
        return -1;
    nw_cat_label_t l[MAX_LABELS];
    int n = nw_catalog_itype_labels(t, l, MAX_LABELS);
    for (int i = 0; i < t->noffer && n < MAX_LABELS; i++) {
        if (offering_matches(&t->offerings[i], zone, capacity_type) && zone && *zone) {
            n += nw_catalog_offering_labels(cat, &t->offerings[i], l + n, MAX_LABELS - n);
            break;
        }
    }
    int k = 0;
    for (int i = 0; i < n && k < max; i++, k++) {
        /* longer labels are cut to 63 bytes */
        size_t kl = strnlen(l[i].key, 63), vl = strnlen(l[i].value, 63);
        memcpy(keys[k], l[i].key, kl);
        keys[k][kl] = '\0';
        memcpy(vals[k], l[i].value, vl);
        vals[k][vl] = '\0';
    }
    return k;
}

int nw_driftcat__offering_exists(const nw_catalog_t *cat, const char *type, const char *zone,
                                 const char *capacity_type)
{
    const nw_itype_t *t = cat && type ? nw_catalog_find(cat, type) : NULL;
    if (!t)
        return -1;
    if (t->noffer == 0) /* the catalog knows no offerings at all (zones not set): no verdict */
        return 1;
    for (int i = 0; i < t->noffer; i++)
        if (offering_matches(&t->offerings[i], zone, capacity_type))
            return 1;
    return 0;
}

const char *nw_driftcat__type_arch(const nw_catalog_t *cat, const char *type)
{
    const nw_itype_t *t = cat && type ? nw_catalog_find(cat, type) : NULL;
    return t && t->arch[0] ? t->arch : NULL;
}
