/*
 * scaler/sched/snap_mark.c — a snapshot's mark and the rewind back to it (schedule.h):
 * the counts of what it held at the mark, and the additions since dropped, its hash tables
 * made again without them.
 */
#include <stdlib.h>

#include "scaler/sched/snap.h"

nw_rc_t nw_snap_mark_set(nw_sched_snap_t *s)
{
    size_t *ntcs = malloc((s->nspecs + 1) * sizeof *ntcs);
    if (!ntcs)
        return NW_ENOMEM;
    for (size_t i = 0; i < s->nspecs; i++)
        ntcs[i] = s->specs[i].ntcs;
    free(s->mark.spec_ntcs);
    s->mark.spec_ntcs = ntcs;
    s->mark.set = true;
    s->mark.nres = s->nres;
    s->mark.npods = s->npods;
    s->mark.nclasses = s->nclasses;
    s->mark.ngroups = s->ngroups;
    s->mark.nnodes = s->nnodes;
    s->mark.nspecs = s->nspecs;
    s->mark.nlsets = s->nlsets;
    s->mark.nrecs = s->nrecs;
    s->mark.nnominated = s->nnominated;
    s->mark.npools = s->npools;
    s->mark.ndss = s->ndss;
    s->mark.nitypes = s->nitypes;
    s->mark.nresvs = s->nresvs;
    s->mark.nnss = s->nnss;
    s->mark.npvs = s->npvs;
    s->mark.npvcs = s->npvcs;
    s->mark.nscs = s->nscs;
    s->mark.ncsinodes = s->ncsinodes;
    s->mark.nclass_res = s->nclass_res;
    return NW_OK;
}

/* Index entries [0, n) of an open-addressing table of cap slots by their signatures. */
static void sig_reindex(int *hash, size_t cap, size_t n, const char *(*sig)(const void *, size_t),
                        const void *v)
{
    for (size_t i = 0; i < cap; i++)
        hash[i] = -1;
    for (size_t k = 0; k < n; k++) {
        size_t i = nw_snapshot_hash(sig(v, k)) & (cap - 1);
        while (hash[i] >= 0)
            i = (i + 1) & (cap - 1);
        hash[i] = (int)k;
    }
}

static const char *class_sig(const void *v, size_t k)
{
    return ((const nw_pclass_t *)v)[k].sig;
}

static const char *group_sig(const void *v, size_t k)
{
    return ((const nw_tgroup_t *)v)[k].sig;
}

bool nw_snap_mark_rewind(nw_sched_snap_t *s)
{
    /* what a rewind does not take back must not have changed */
    if (!s->mark.set || s->npools != s->mark.npools || s->ndss != s->mark.ndss ||
        s->nitypes != s->mark.nitypes || s->nresvs != s->mark.nresvs || s->nnss != s->mark.nnss ||
        s->npvs != s->mark.npvs || s->npvcs != s->mark.npvcs || s->nscs != s->mark.nscs ||
        s->ncsinodes != s->mark.ncsinodes || s->nclass_res != s->mark.nclass_res ||
        s->nrecs != s->mark.nrecs || s->nnominated != s->mark.nnominated ||
        s->npods < s->mark.npods || s->nclasses < s->mark.nclasses ||
        s->ngroups < s->mark.ngroups || s->nnodes < s->mark.nnodes || s->nspecs < s->mark.nspecs ||
        s->nlsets < s->mark.nlsets || s->nres < s->mark.nres)
        return false;
    for (size_t i = s->mark.npods; i < s->npods; i++)
        nw_snapshot_pod_free(&s->pods[i]);
    s->npods = s->mark.npods;
    for (size_t i = s->mark.nclasses; i < s->nclasses; i++)
        nw_snapshot_pclass_free(&s->classes[i]);
    s->nclasses = s->mark.nclasses;
    for (size_t i = s->mark.ngroups; i < s->ngroups; i++)
        nw_snapshot_group_free(&s->groups[i]);
    s->ngroups = s->mark.ngroups;
    for (size_t i = s->mark.nnodes; i < s->nnodes; i++)
        nw_snapshot_node_free(&s->nodes[i]);
    s->nnodes = s->mark.nnodes;
    for (size_t i = s->mark.nspecs; i < s->nspecs; i++)
        nw_snapshot_spec_free(&s->specs[i]);
    s->nspecs = s->mark.nspecs;
    for (size_t i = 0; i < s->nspecs; i++) {
        nw_sspec_t *e = &s->specs[i];
        for (size_t k = s->mark.spec_ntcs[i]; k < e->ntcs; k++) {
            free(e->tcs[k].ns);
            free(e->tcs[k].tcs);
        }
        e->ntcs = s->mark.spec_ntcs[i];
    }
    for (size_t i = s->mark.nlsets; i < s->nlsets; i++) {
        nw_labels_cleanup(s->lsets[i]);
        free(s->lsets[i]);
    }
    s->nlsets = s->mark.nlsets;
    for (int i = s->mark.nres; i < s->nres; i++)
        free(s->res_names[i]);
    s->nres = s->mark.nres;
    if (s->class_hash)
        sig_reindex(s->class_hash, s->class_hash_cap, s->nclasses, class_sig, s->classes);
    if (s->group_hash)
        sig_reindex(s->group_hash, s->group_hash_cap, s->ngroups, group_sig, s->groups);
    return nw_snap_pod_maps_trim(s);
}
