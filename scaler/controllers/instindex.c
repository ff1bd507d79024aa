/*
 * scaler/controllers/instindex.c — objects and cloud instances by instance id (see
 * instindex.h).
 */
#include "scaler/controllers/instindex.h"

#include <stdlib.h>
#include <string.h>

static int cmp_entry(const void *a, const void *b)
{
    const nw_instindex_entry_t *x = a, *y = b;
    int c = strcmp(x->id, y->id);
    return c ? c : (x->pos > y->pos) - (x->pos < y->pos);
}

nw_rc_t nw_instindex_build(nw_instindex_t *ix, const nw_kube_snap_t *s, nw_kube_kind_t kind)
{
    ix->v = NULL;
    ix->n = 0;
    size_t n = nw_kube_cache_snap_count(s, kind);
    if (!n)
        return NW_OK;
    ix->v = malloc(n * sizeof *ix->v);
    if (!ix->v)
        return NW_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        const nw_kube_obj_t *o = nw_kube_cache_snap_at(s, kind, i);
        if (o->provider_id && o->provider_id[0])
            ix->v[ix->n++] = (nw_instindex_entry_t){nw_cloud_instance_id(o->provider_id), o, i};
    }
    qsort(ix->v, ix->n, sizeof *ix->v, cmp_entry);
    return NW_OK;
}

const nw_kube_obj_t *nw_instindex_find(const nw_instindex_t *ix, const char *id)
{
    size_t lo = 0, hi = ix->n;
    while (lo < hi) { /* the first entry whose id is not below id */
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(ix->v[mid].id, id) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < ix->n && strcmp(ix->v[lo].id, id) == 0 ? ix->v[lo].o : NULL;
}

void nw_instindex_free(nw_instindex_t *ix)
{
    if (!ix)
        return;
    free(ix->v);
    ix->v = NULL;
    ix->n = 0;
}

static int cmp_pos(const void *a, const void *b, void *ud)
{
    const nw_cloud_instances_t *l = ud;
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    int c = strcmp(l->v[x].id, l->v[y].id);
    return c ? c : (x > y) - (x < y);
}

size_t *nw_instindex_cloud_sort(const nw_cloud_instances_t *l)
{
    size_t *v = l->n ? malloc(l->n * sizeof *v) : NULL;
    if (!v)
        return NULL;
    for (size_t i = 0; i < l->n; i++)
        v[i] = i;
    qsort_r(v, l->n, sizeof *v, cmp_pos, (void *)l);
    return v;
}

size_t nw_instindex_cloud_lower(const nw_cloud_instances_t *l, const size_t *sorted, const char *id)
{
    size_t lo = 0, hi = l->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(l->v[sorted[mid]].id, id) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}
