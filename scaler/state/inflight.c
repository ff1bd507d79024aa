/*
 * scaler/state/inflight.c — NodeClaims created or launched by this process (see inflight.h).
 */
#include "scaler/state/inflight.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"

#define CLAIM_MEMORY_NS (120 * NW_NS_PER_SEC)
#define CLAIM_MIN_NS (2 * NW_NS_PER_SEC)

nw_inflight_claim_t *nw_inflight_find(const nw_inflight_t *f, const char *name)
{
    for (nw_inflight_claim_t *m = f->head; m; m = m->next)
        if (strcmp(m->name, name) == 0)
            return m;
    return NULL;
}

nw_inflight_claim_t *nw_inflight_remember(nw_inflight_t *f, const char *name, int64_t mono)
{
    nw_inflight_claim_t *m = nw_inflight_find(f, name);
    if (m)
        return m;
    m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    snprintf(m->name, sizeof m->name, "%s", name);
    m->created_mono = mono;
    m->next = f->head;
    f->head = m;
    return m;
}

static void claim_free(nw_inflight_claim_t *m)
{
    cJSON_Delete(m->obj);
    cJSON_Delete(m->status);
    free(m);
}

void nw_inflight_expire(nw_inflight_t *f, const nw_kube_snap_t *s, int64_t now)
{
    nw_inflight_claim_t **pp = &f->head;
    while (*pp) {
        nw_inflight_claim_t *m = *pp;
        const nw_kube_obj_t *o = nw_kube_cache_snap_get(s, NW_KUBE_NODECLAIMS, NULL, m->name);
        if (o) {
            /* its readers use the created object only while the cache lags */
            m->seen_in_cache = 1;
            cJSON_Delete(m->obj);
            m->obj = NULL;
        }
        int settled =
            o && !m->launching && (o->provider_id[0] != 0 || (!m->launched && !m->launch_tried));
        if (!o && (m->seen_in_cache || m->deleted))
            settled = 1; /* gone */
        else if (!o && now - m->created_mono < CLAIM_MEMORY_NS)
            settled = 0;
        else if (!o)
            settled = 1;
        if (settled && now - m->created_mono > CLAIM_MIN_NS) {
            *pp = m->next;
            claim_free(m);
        } else
            pp = &m->next;
    }
}

void nw_inflight_clear(nw_inflight_t *f)
{
    while (f->head) {
        nw_inflight_claim_t *m = f->head;
        f->head = m->next;
        claim_free(m);
    }
}
