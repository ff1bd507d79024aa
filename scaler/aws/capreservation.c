/*
 * scaler/aws/capreservation.c — launches into capacity reservations: the reserved offerings of
 * a request, one reservation type a fleet
 * (aws/karpenter-provider-aws pkg/providers/instancetype/offering/reserved_capacity_resolver.go,
 * pkg/providers/instance/filter/filter.go CapacityReservationTypeFilter), and the available
 * count of each reservation the launcher follows between resolutions
 * (pkg/providers/capacityreservation/types.go availabilityCache: syncAvailability,
 * MarkLaunched, MarkUnavailable). See launch.h.
 */
#include "scaler/aws/launch.h"

#include <stdio.h>
#include <string.h>

#include "scaler/aws/launch_int.h"
#include "scaler/cloud/compat.h"

/* ---- capacity reservations ------------------------------------------------------------- */

/* The available count of reservation cr (resolved at synced): the resolution's count when it
 * is newer than what the launcher follows (Karpenter's syncAvailability), else the count
 * the launcher has followed since. */
static int64_t cr_available(nw_launch_t *l, const nw_nc_cr_t *cr, int64_t synced)
{
    for (int i = 0; i < l->ncrav; i++)
        if (strcmp(l->crav[i].id, cr->id) == 0) {
            if (synced > l->crav[i].synced) {
                l->crav[i].count = cr->available;
                l->crav[i].synced = synced;
            }
            return l->crav[i].count;
        }
    int i = l->ncrav < NW_LAUNCH_MAX_CRS ? l->ncrav++ : (int)(synced % NW_LAUNCH_MAX_CRS);
    snprintf(l->crav[i].id, sizeof l->crav[i].id, "%s", cr->id);
    l->crav[i].count = cr->available;
    l->crav[i].synced = synced;
    return cr->available;
}

int64_t nw_capreservation_available(const nw_launch_t *l, const char *id, int64_t resolved,
                                    int64_t synced)
{
    for (int i = 0; i < l->ncrav; i++)
        if (strcmp(l->crav[i].id, id) == 0 && l->crav[i].synced >= synced)
            return l->crav[i].count;
    return resolved;
}

/* MarkLaunched (delta -1) and the exhausted reservation (set to 0) */
void nw_capreservation_mark(nw_launch_t *l, const char *id, int zero)
{
    for (int i = 0; i < l->ncrav; i++)
        if (strcmp(l->crav[i].id, id) == 0) {
            if (zero)
                l->crav[i].count = 0;
            else if (l->crav[i].count > 0)
                l->crav[i].count--;
        }
}

/* Reserved offerings (offering.go / reserved_capacity_resolver.go): each resolved
 * reservation of a requested type in an allowed zone with a subnet, not expiring, with
 * instances left, priced at the on-demand price / 10,000,000; then only one reservation
 * type (the fleet's DefaultTargetCapacityType is on-demand or capacity-block): the one of
 * the cheapest offering, capacity blocks on a tie (aws/karpenter-provider-aws
 * designs/capacity-block-support.md). */
int nw_capreservation_collect(nw_launch_t *l, const nw_launch_req_t *r, cand_t *c, int max,
                              int64_t now, int *block)
{
    int n = 0;
    const nw_nodeclass_resolved_t *rs = r->resolved;
    for (size_t k = 0; k < rs->ncrs && n < max; k++) {
        const nw_nc_cr_t *cr = &rs->crs[k];
        if (cr->expiring || !nw_offerings_in(cr->type, r->types, r->ntypes) ||
            !nw_offerings_in(cr->zone, r->zones, r->nzones) ||
            (r->ncr_ids && !nw_offerings_in(cr->id, r->cr_ids, r->ncr_ids)))
            continue;
        const nw_itype_t *t = nw_catalog_find(l->cat, cr->type);
        const nw_nc_ami_t *ami = t ? nw_nodeclass_ami_for(rs, t) : NULL;
        if (ami && !nw_compat_class_compatible(t, r->nodeclass,
                                               rs->pg_id[0] ? rs->pg_strategy : NULL, NULL, 0))
            ami = NULL; /* a type the class cannot launch (scaler/cloud/compat.h) */
        const char *sn = ami ? nw_offerings_best_subnet(l, rs, cr->zone, now) : NULL;
        if (!sn || cr_available(l, cr, rs->crs_synced_ns) <= 0)
            continue;
        cand_t *x = &c[n++];
        memset(x, 0, sizeof *x);
        x->t = t;
        snprintf(x->ami, sizeof x->ami, "%s", ami->id);
        snprintf(x->zone, sizeof x->zone, "%s", cr->zone);
        snprintf(x->zone_id, sizeof x->zone_id, "%s", cr->zone_id);
        for (size_t s = 0; !x->zone_id[0] && s < rs->nsubnets; s++)
            if (strcmp(rs->subnets[s].zone, cr->zone) == 0)
                snprintf(x->zone_id, sizeof x->zone_id, "%s", rs->subnets[s].zone_id);
        snprintf(x->subnet, sizeof x->subnet, "%s", sn);
        snprintf(x->ct, sizeof x->ct, "reserved");
        snprintf(x->cr, sizeof x->cr, "%s", cr->id);
        snprintf(x->cr_type, sizeof x->cr_type, "%s", cr->reservation_type);
        x->cr_interruptible = cr->interruptible;
        x->price = nw_catalog_od_price(l->cat, t->name) / 10000000.0;
        x->pods = nw_offerings_type_pods(l, r, t);
        x->efa = nw_offerings_wants_efa(r) ? t->efa : 0;
    }
    if (n == 0)
        return 0;
    int best = 0;
    for (int i = 1; i < n; i++) {
        int bi = strcmp(c[i].cr_type, "capacity-block") == 0,
            bb = strcmp(c[best].cr_type, "capacity-block") == 0;
        if (c[i].price < c[best].price || (c[i].price == c[best].price && bi && !bb))
            best = i;
    }
    *block = strcmp(c[best].cr_type, "capacity-block") == 0;
    int j = 0;
    for (int i = 0; i < n; i++)
        if ((strcmp(c[i].cr_type, "capacity-block") == 0) == *block)
            c[j++] = c[i];
    return j;
}
