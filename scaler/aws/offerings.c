/*
 * scaler/aws/offerings.c — the candidate offerings of a launch: each requested type × allowed
 * zone × capacity type the catalog and the ICE cache offer, in the zone's subnet with the most
 * free addresses, with its AMI, max pods and EFA count
 * (aws/karpenter-provider-aws pkg/providers/instancetype/offering/offering.go,
 * pkg/providers/subnet/subnet.go ZonalSubnetsForLaunch); exotic types dropped while a plain one
 * remains (pkg/providers/instance/filter/filter.go ExoticInstanceTypeFilter); the cheapest 60
 * types kept (pkg/providers/instance/instance.go maxInstanceTypes). See launch.h.
 */
#include "scaler/aws/launch.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "scaler/aws/launch_int.h"
#include "scaler/cloud/compat.h"
#include "scaler/cloud/kubelet.h"

bool nw_offerings_in(const char *s, const char *const *l, int n)
{
    if (!l || n == 0)
        return true;
    for (int i = 0; i < n; i++)
        if (strcmp(s, l[i]) == 0)
            return true;
    return false;
}

/* the max pods a type gets under the request's class (0 when the bootstrap is the user's) */
int64_t nw_offerings_type_pods(const nw_launch_t *l, const nw_launch_req_t *r, const nw_itype_t *t)
{
    if (!nw_launchtemplate_renders_kubelet(r))
        return 0;
    nw_overhead_opts_t o = l->overhead;
    nw_err_t e = {0};
    if (nw_kubelet_overhead(r->nodeclass, &o, &e) != NW_OK)
        o = l->overhead; /* admission refuses such values; the settings' then */
    return nw_catalog_itype_max_pods(t, &o);
}

/* ---- candidates ---------------------------------------------------------------------------- */

int nw_offerings_cand_cmp(const void *a, const void *b)
{
    const cand_t *x = a, *y = b;
    if (x->price != y->price)
        return x->price < y->price ? -1 : 1;
    int c = strcmp(x->t->name, y->t->name);
    return c ? c : strcmp(x->zone, y->zone);
}

const char *nw_offerings_best_subnet(const nw_launch_t *l, const nw_nodeclass_resolved_t *rs,
                                     const char *zone, int64_t now)
{
    const nw_nc_subnet_t *best = NULL;
    for (size_t i = 0; i < rs->nsubnets; i++) {
        const nw_nc_subnet_t *s = &rs->subnets[i];
        if (strcmp(s->zone, zone) != 0 || nw_ice_subnet_unavailable(l->ice, s->id, now))
            continue;
        if (!best || s->available_ips > best->available_ips)
            best = s;
    }
    return best ? best->id : NULL;
}

/* the claim asks for EFA devices (resolver.go: a template per EFA count, then) */
bool nw_offerings_wants_efa(const nw_launch_req_t *r)
{
    return nw_json_get(nw_json_get(nw_json_get(r->claim, "spec"), "resources"), "requests") &&
           nw_json_get(
               nw_json_get(nw_json_get(nw_json_get(r->claim, "spec"), "resources"), "requests"),
               "vpc.amazonaws.com/efa");
}

/* Collect available offerings for one capacity type; returns the count. */
int nw_offerings_collect(nw_launch_t *l, const nw_launch_req_t *r, const char *ct, cand_t *c,
                         int max, int64_t now)
{
    return nw_offerings_collect_why(l, r, ct, c, max, now, NULL, 0);
}

int nw_offerings_collect_why(nw_launch_t *l, const nw_launch_req_t *r, const char *ct, cand_t *c,
                             int max, int64_t now, char *why, size_t whylen)
{
    int n = 0;
    for (int i = 0; i < r->ntypes; i++) {
        const nw_itype_t *t = nw_catalog_find(l->cat, r->types[i]);
        if (!t)
            continue;
        const nw_nc_ami_t *ami = nw_nodeclass_ami_for(r->resolved, t); /* arch, variant */
        if (!ami)
            continue;
        /* Karpenter's per-class filters (scaler/cloud/compat.h): a type EC2 would refuse */
        char w[256];
        if (!nw_compat_class_compatible(t, r->nodeclass,
                                        r->resolved->pg_id[0] ? r->resolved->pg_strategy : NULL, w,
                                        sizeof w)) {
            if (why && whylen && !why[0])
                snprintf(why, whylen, "%s", w);
            continue;
        }
        int64_t pods = nw_offerings_type_pods(l, r, t);
        int efa = nw_offerings_wants_efa(r) ? t->efa : 0;
        nw_offering_t of[NW_CATALOG_MAX_OFFERINGS];
        int no = nw_catalog_offerings(t, l->ice, now, of, NW_CATALOG_MAX_OFFERINGS);
        for (int k = 0; k < no && n < max; k++) {
            if (!of[k].available || strcmp(of[k].capacity_type, ct) != 0 ||
                !nw_offerings_in(of[k].zone, r->zones, r->nzones))
                continue;
            const char *sn = nw_offerings_best_subnet(l, r->resolved, of[k].zone, now);
            if (!sn)
                continue;
            cand_t *x = &c[n++];
            memset(x, 0, sizeof *x);
            x->t = t;
            snprintf(x->ami, sizeof x->ami, "%s", ami->id);
            memcpy(x->zone, of[k].zone, sizeof x->zone);
            x->zone[sizeof x->zone - 1] = 0;
            memcpy(x->zone_id, of[k].zone_id, sizeof x->zone_id);
            x->zone_id[sizeof x->zone_id - 1] = 0;
            snprintf(x->subnet, sizeof x->subnet, "%s", sn);
            snprintf(x->ct, sizeof x->ct, "%s", ct);
            x->price = of[k].price;
            x->pods = pods;
            x->efa = efa;
        }
    }
    return n;
}

int nw_offerings_filter_exotic(cand_t *c, int n)
{
    int plain = 0;
    for (int i = 0; i < n; i++)
        plain += !nw_catalog_itype_is_exotic(c[i].t);
    if (plain == 0)
        return n;
    int j = 0;
    for (int i = 0; i < n; i++)
        if (!nw_catalog_itype_is_exotic(c[i].t))
            c[j++] = c[i];
    return j;
}

/* keep candidates of the 60 cheapest types (c sorted by price) */
int nw_offerings_truncate_types(cand_t *c, int n)
{
    const nw_itype_t *seen[NW_LAUNCH_MAX_TYPES];
    int ns = 0, j = 0;
    for (int i = 0; i < n; i++) {
        int known = 0;
        for (int k = 0; k < ns; k++)
            known |= seen[k] == c[i].t;
        if (!known) {
            if (ns == NW_LAUNCH_MAX_TYPES)
                continue;
            seen[ns++] = c[i].t;
        }
        c[j++] = c[i];
    }
    return j;
}
