/* scaler/sched/solve_topo.c — the provisioning simulation (scaler/sched/solve.c): topology spread
 * and pod (anti-)affinity counts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/wellknown.h"
#include "scaler/sched/solve_int.h"

/* ---- topology ------------------------------------------------------------------ */

bool nw_sv_tc_active(const ctx_t *c, int pod, int i)
{
    return !(c->ps[pod].tc_off >> i & 1);
}

static bool selects_self(const ctx_t *c, int pod, int g)
{
    const pstate_t *st = &c->ps[pod];
    for (int i = 0; i < st->nsel; i++)
        if (st->selgroups[i] == g)
            return true;
    return false;
}

/* Which zones (subset of zin) and whether the host slot (-1 = a brand-new node) are
 * allowed for pod. Returns the allowed zone mask; *host_ok false rejects. *zone_pinned
 * says a zone must be chosen (the pod has zone constraints). why (nullable) names the
 * first constraint that failed. */
uint64_t nw_sv_topo_allowed(const ctx_t *c, int pod, int host, uint64_t zin, uint64_t pod_zones,
                            bool *host_ok, bool *zone_pinned, const char **why)
{
    const nw_spod_t *p = &c->s->pods[pod];
    const pstate_t *st = &c->ps[pod];
    uint64_t m = zin;
    *host_ok = true;
    *zone_pinned = false;
    int pick_spread = -1;
    for (int i = 0; i < p->ntcs && *host_ok && m; i++) {
        if (!nw_sv_tc_active(c, pod, i))
            continue;
        int g = p->tcs[i].group;
        const nw_tgroup_t *gr = &c->s->groups[g];
        bool self = selects_self(c, pod, g);
        if (gr->key == NW_SCHED_HOSTNAME) {
            int cnt = host >= 0 ? c->hcount[g][host] : 0;
            switch (gr->kind) {
            case NW_TG_SPREAD:
                if (cnt + (self ? 1 : 0) > gr->max_skew) {
                    *host_ok = false;
                    if (why)
                        *why = "topology spread (kubernetes.io/hostname)";
                }
                break;
            case NW_TG_AFFINITY:
                if (c->gtotal[g] > 0 ? cnt == 0 : !self) {
                    *host_ok = false;
                    if (why)
                        *why = "pod affinity (kubernetes.io/hostname)";
                }
                break;
            case NW_TG_ANTI:
                if (cnt > 0) {
                    *host_ok = false;
                    if (why)
                        *why = "pod anti-affinity (kubernetes.io/hostname)";
                }
                break;
            }
            continue;
        }
        *zone_pinned = true;
        const int *zc = c->zcount[g];
        switch (gr->kind) {
        case NW_TG_SPREAD: {
            int64_t mn = INT64_MAX;
            int elig = 0;
            for (int z = 0; z < c->nz; z++)
                if (pod_zones >> z & 1) {
                    elig++;
                    if (zc[z] < mn)
                        mn = zc[z];
                }
            if (elig < gr->min_domains || mn == INT64_MAX)
                mn = 0;
            uint64_t ok = 0;
            for (int z = 0; z < c->nz; z++)
                if ((m >> z & 1) && zc[z] + (self ? 1 : 0) - mn <= gr->max_skew)
                    ok |= 1ULL << z;
            m = ok;
            if (!m && why)
                *why = "topology spread (topology.kubernetes.io/zone)";
            pick_spread = g;
            break;
        }
        case NW_TG_AFFINITY:
            if (c->gtotal[g] > 0) {
                uint64_t ok = 0;
                for (int z = 0; z < c->nz; z++)
                    if (zc[z] > 0)
                        ok |= 1ULL << z;
                m &= ok;
            } else if (!self) {
                m = 0;
            }
            if (!m && why)
                *why = "pod affinity (topology.kubernetes.io/zone)";
            break;
        case NW_TG_ANTI: {
            uint64_t ok = 0;
            for (int z = 0; z < c->nz; z++)
                if (zc[z] == 0)
                    ok |= 1ULL << z;
            m &= ok;
            if (!m && why)
                *why = "pod anti-affinity (topology.kubernetes.io/zone)";
            break;
        }
        }
    }
    /* inverse anti-affinity: pods whose required anti-affinity selects this one */
    for (int i = 0; i < st->nsel && *host_ok && m; i++) {
        int g = st->selgroups[i];
        const nw_tgroup_t *gr = &c->s->groups[g];
        if (gr->kind != NW_TG_ANTI)
            continue;
        if (gr->key == NW_SCHED_HOSTNAME) {
            if (host >= 0 && c->howners[g][host] > 0) {
                *host_ok = false;
                if (why)
                    *why = "another pod's anti-affinity (kubernetes.io/hostname)";
            }
        } else {
            uint64_t ok = 0;
            for (int z = 0; z < c->nz; z++)
                if (c->zowners[g][z] == 0)
                    ok |= 1ULL << z;
            if ((m & ok) != m)
                *zone_pinned = true;
            m &= ok;
            if (!m && why)
                *why = "another pod's anti-affinity (topology.kubernetes.io/zone)";
        }
    }
    if (!*host_ok)
        return 0;
    if (*zone_pinned && m) {
        /* choose one zone: the least used for spread, else the first */
        int best = -1;
        for (int z = 0; z < c->nz; z++) {
            if (!(m >> z & 1))
                continue;
            if (best < 0 ||
                (pick_spread >= 0 && c->zcount[pick_spread][z] < c->zcount[pick_spread][best]))
                best = z;
        }
        if (best >= 0)
            m = 1ULL << best;
    }
    return m;
}
