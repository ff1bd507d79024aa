/*
 * scaler/sched/snapshot.c — building a scheduling snapshot from Kubernetes JSON
 * (pods, nodes, NodeClaims, NodePools, DaemonSets) and instance types.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/quantity.h"
#include "api/wellknown.h"
#include "common/json.h"
#include "scaler/sched/snap.h"


static const char *const fixed_names[NW_SR_FIXED] = {
    "cpu", "memory", "pods", "ephemeral-storage", "nvidia.com/gpu", "amd.com/gpu",
    "aws.amazon.com/neuron", "aws.amazon.com/neuroncore", "habana.ai/gaudi",
    "vpc.amazonaws.com/efa",
};

uint64_t nw_sched_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

static void *grow(void *p, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return p;
    size_t nc = *cap ? *cap * 2 : 16;
    void *q = realloc(p, nc * elem);
    if (!q)
        return NULL;
    memset((char *)q + *cap * elem, 0, (nc - *cap) * elem);
    *cap = nc;
    return q;
}

static char *dupstr(const char *s)
{
    return s ? strdup(s) : NULL;
}

nw_sched_snap_t *nw_sched_snap_new(void)
{
    nw_sched_snap_t *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    for (int i = 0; i < NW_SR_FIXED; i++)
        s->res_names[i] = (char *)fixed_names[i];
    s->nres = NW_SR_FIXED;
    return s;
}

static void pclass_free(nw_pclass_t *c)
{
    free(c->sig);
    nw_reqs_cleanup(&c->selector);
    nw_reqs_terms_free(c->terms, c->nterms);
    nw_reqs_terms_free(c->prefs, c->nprefs);
    nw_tolerations_cleanup(&c->tols);
    free(c->invalid);
}

static void pod_free(nw_spod_t *p)
{
    free(p->ns);
    free(p->name);
    free(p->uid);
    free(p->key);
    free(p->node_name);
    free(p->owner_kind);
    free(p->owner_name);
    nw_labels_cleanup(&p->labels);
    free(p->tcs);
}

static void group_free(nw_tgroup_t *g)
{
    nw_reqs_cleanup(&g->sel);
    for (size_t i = 0; i < g->nns; i++)
        free(g->ns[i]);
    free(g->ns);
    free(g->sig);
}

static void node_free(nw_snode_t *n)
{
    free(n->name);
    nw_labels_cleanup(&n->labels);
    nw_reqs_cleanup(&n->reqs);
    nw_taints_cleanup(&n->taints);
    nw_taints_cleanup(&n->startup_taints);
    free(n->pool);
}

static void pool_free(nw_spool_t *p)
{
    free(p->name);
    free(p->nodeclass);
    nw_reqs_cleanup(&p->reqs);
    nw_labels_cleanup(&p->labels);
    nw_taints_cleanup(&p->taints);
    nw_taints_cleanup(&p->startup_taints);
}

static void ds_free(nw_sds_t *d)
{
    free(d->ns);
    free(d->name);
    nw_reqs_cleanup(&d->strict);
    nw_reqs_terms_free(d->terms, d->nterms);
    nw_reqs_cleanup(&d->selector);
    nw_tolerations_cleanup(&d->tols);
}

void nw_sched_snap_free(nw_sched_snap_t *s)
{
    if (!s)
        return;
    for (int i = NW_SR_FIXED; i < s->nres; i++)
        free(s->res_names[i]);
    for (size_t i = 0; i < s->npods; i++)
        pod_free(&s->pods[i]);
    free(s->pods);
    for (size_t i = 0; i < s->nclasses; i++)
        pclass_free(&s->classes[i]);
    free(s->classes);
    free(s->class_hash);
    for (size_t i = 0; i < s->ngroups; i++)
        group_free(&s->groups[i]);
    free(s->groups);
    for (size_t i = 0; i < s->nnodes; i++)
        node_free(&s->nodes[i]);
    free(s->nodes);
    for (size_t i = 0; i < s->npools; i++)
        pool_free(&s->pools[i]);
    free(s->pools);
    for (size_t i = 0; i < s->ndss; i++)
        ds_free(&s->dss[i]);
    free(s->dss);
    for (size_t i = 0; i < s->nitypes; i++) {
        nw_labels_cleanup(&s->itypes[i].t.labels);
        nw_reqs_cleanup(&s->itypes[i].reqs);
    }
    free(s->itypes);
    for (size_t i = 0; i < s->nnominated; i++)
        free(s->nominated[i]);
    free(s->nominated);
    free(s);
}

void nw_sched_snap_set_opts(nw_sched_snap_t *s, const nw_sched_opts_t *o)
{
    s->opts = *o;
}

int nw_sched_res_slot(nw_sched_snap_t *s, const char *name)
{
    for (int i = 0; i < s->nres; i++)
        if (strcmp(s->res_names[i], name) == 0)
            return i;
    if (s->nres >= NW_SCHED_NRES)
        return -1;
    s->res_names[s->nres] = strdup(name);
    if (!s->res_names[s->nres])
        return -1;
    return s->nres++;
}

static int res_slot_find(const nw_sched_snap_t *s, const char *name)
{
    for (int i = 0; i < s->nres; i++)
        if (strcmp(s->res_names[i], name) == 0)
            return i;
    return -1;
}

const char *nw_sched_res_name(const nw_sched_snap_t *s, int i)
{
    return (i >= 0 && i < s->nres) ? s->res_names[i] : NULL;
}

size_t nw_sched_snap_npods(const nw_sched_snap_t *s) { return s->npods; }
size_t nw_sched_snap_npools(const nw_sched_snap_t *s) { return s->npools; }
size_t nw_sched_snap_nitypes(const nw_sched_snap_t *s) { return s->nitypes; }
const nw_sched_itype_t *nw_sched_snap_itype(const nw_sched_snap_t *s, size_t i)
{
    return i < s->nitypes ? &s->itypes[i].t : NULL;
}
const char *nw_sched_pod_key(const nw_sched_snap_t *s, size_t i)
{
    return i < s->npods ? s->pods[i].key : NULL;
}
const char *nw_sched_pool_name(const nw_sched_snap_t *s, size_t i)
{
    return i < s->npools ? s->pools[i].name : NULL;
}
const char *nw_sched_pool_nodeclass(const nw_sched_snap_t *s, size_t i)
{
    return i < s->npools ? s->pools[i].nodeclass : NULL;
}

cJSON *nw_sched_res_to_json(const nw_sched_snap_t *s, const nw_sched_res_t *r)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    for (int i = 0; i < s->nres; i++) {
        if (r->v[i] == 0)
            continue;
        nw_quantity_format_t f = (i == NW_SR_MEMORY || i == NW_SR_EPHEMERAL) ? NW_QTY_BINARY_SI
                                                                            : NW_QTY_DECIMAL_SI;
        char buf[64];
        nw_quantity_format(nw_quantity_from_milli(r->v[i], f), buf, sizeof buf);
        cJSON_AddStringToObject(o, s->res_names[i], buf);
    }
    return o;
}

/* ---- resources ------------------------------------------------------------- */

static nw_rc_t parse_res(nw_sched_snap_t *s, const cJSON *obj, const char *path,
                         nw_sched_res_t *out, bool *present, nw_err_t *err)
{
    memset(out, 0, sizeof *out);
    if (present)
        memset(present, 0, sizeof(bool) * NW_SCHED_NRES);
    if (!obj || cJSON_IsNull(obj))
        return NW_OK;
    if (!cJSON_IsObject(obj))
        return nw_err_set(err, NW_EINVAL, path, "must be an object");
    const cJSON *it;
    cJSON_ArrayForEach(it, obj)
    {
        char p[160];
        snprintf(p, sizeof p, "%s[%s]", path, it->string);
        int64_t milli;
        if (cJSON_IsString(it)) {
            nw_quantity_t q;
            nw_err_t e = {0};
            if (nw_quantity_parse(it->valuestring, &q, &e) != NW_OK)
                return nw_err_set(err, NW_EINVAL, p, "%s", e.msg);
            milli = q.milli;
        } else if (cJSON_IsNumber(it)) {
            double d = it->valuedouble * 1000.0;
            if (!(fabs(d) < 9e18))
                return nw_err_set(err, NW_EINVAL, p, "quantity out of range");
            milli = (int64_t)ceil(d);
        } else {
            return nw_err_set(err, NW_EINVAL, p, "must be a quantity string or number");
        }
        if (strcmp(it->string, "nodes") == 0 && present == NULL)
            continue;
        int slot = nw_sched_res_slot(s, it->string);
        if (slot < 0)
            return nw_err_set(err, NW_EINVAL, p, "more than %d distinct resource names",
                              NW_SCHED_NRES);
        out->v[slot] = milli;
        if (present)
            present[slot] = true;
    }
    return NW_OK;
}

/* requests of one container, limits standing in for missing requests (API defaulting) */
static nw_rc_t container_res(nw_sched_snap_t *s, const cJSON *c, const char *path,
                             nw_sched_res_t *out, nw_err_t *err)
{
    const cJSON *res = nw_json_get(c, "resources");
    char p[160];
    nw_sched_res_t lim;
    snprintf(p, sizeof p, "%s.resources.requests", path);
    nw_rc_t rc = parse_res(s, res ? nw_json_get(res, "requests") : NULL, p, out, NULL, err);
    if (rc != NW_OK)
        return rc;
    snprintf(p, sizeof p, "%s.resources.limits", path);
    bool pres[NW_SCHED_NRES];
    rc = parse_res(s, res ? nw_json_get(res, "limits") : NULL, p, &lim, pres, err);
    if (rc != NW_OK)
        return rc;
    const cJSON *rq = res ? nw_json_get(res, "requests") : NULL;
    for (int i = 0; i < NW_SCHED_NRES; i++)
        if (pres[i] && !(rq && nw_json_get(rq, s->res_names[i])))
            out->v[i] = lim.v[i];
    return NW_OK;
}

nw_rc_t nw_sched_pod_requests(nw_sched_snap_t *s, const cJSON *spec, const char *path,
                              nw_sched_res_t *out, nw_err_t *err)
{
    nw_sched_res_t apps = {{0}}, side = {{0}}, peak = {{0}}, c;
    char p[160];
    const cJSON *arr = nw_json_get(spec, "containers"), *it;
    int i = 0;
    nw_rc_t rc;
    if (arr && !cJSON_IsArray(arr))
        return nw_err_set(err, NW_EINVAL, "spec.containers", "must be a list");
    cJSON_ArrayForEach(it, arr)
    {
        snprintf(p, sizeof p, "%s.containers[%d]", path, i++);
        if ((rc = container_res(s, it, p, &c, err)) != NW_OK)
            return rc;
        for (int k = 0; k < NW_SCHED_NRES; k++)
            apps.v[k] += c.v[k];
    }
    arr = nw_json_get(spec, "initContainers");
    i = 0;
    cJSON_ArrayForEach(it, arr)
    {
        snprintf(p, sizeof p, "%s.initContainers[%d]", path, i++);
        if ((rc = container_res(s, it, p, &c, err)) != NW_OK)
            return rc;
        const char *rp = nw_json_str(it, "restartPolicy");
        bool sidecar = rp && strcmp(rp, "Always") == 0;
        for (int k = 0; k < NW_SCHED_NRES; k++) {
            int64_t v = sidecar ? side.v[k] + c.v[k] : c.v[k] + side.v[k];
            if (v > peak.v[k])
                peak.v[k] = v;
            if (sidecar)
                side.v[k] += c.v[k];
        }
    }
    for (int k = 0; k < NW_SCHED_NRES; k++) {
        int64_t v = apps.v[k] + side.v[k];
        out->v[k] = v > peak.v[k] ? v : peak.v[k];
    }
    const cJSON *pr = nw_json_get(spec, "resources");
    if (pr && nw_json_get(pr, "requests")) {
        nw_sched_res_t podlvl;
        bool pres[NW_SCHED_NRES];
        snprintf(p, sizeof p, "%s.resources.requests", path);
        if ((rc = parse_res(s, nw_json_get(pr, "requests"), p, &podlvl, pres, err)) != NW_OK)
            return rc;
        for (int k = 0; k < NW_SCHED_NRES; k++)
            if (pres[k])
                out->v[k] = podlvl.v[k];
    }
    const cJSON *ov = nw_json_get(spec, "overhead");
    if (ov) {
        nw_sched_res_t o;
        snprintf(p, sizeof p, "%s.overhead", path);
        if ((rc = parse_res(s, ov, p, &o, NULL, err)) != NW_OK)
            return rc;
        for (int k = 0; k < NW_SCHED_NRES; k++)
            out->v[k] += o.v[k];
    }
    out->v[NW_SR_PODS] = 1000;
    return NW_OK;
}

/* ---- time ------------------------------------------------------------------- */

static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    const int64_t era = (y >= 0 ? y : y - 399) / 400;
    const unsigned yoe = (unsigned)(y - era * 400);
    const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

/* RFC 3339 "2024-01-02T03:04:05Z" -> ns since the epoch; 0 when absent/unparsable */
static int64_t parse_time(const char *t)
{
    int y, mo, d, h, mi, se;
    if (!t || sscanf(t, "%4d-%2d-%2dT%2d:%2d:%2d", &y, &mo, &d, &h, &mi, &se) != 6)
        return 0;
    int64_t days = days_from_civil(y, (unsigned)mo, (unsigned)d);
    return ((days * 86400) + h * 3600 + mi * 60 + se) * 1000000000LL;
}

/* ---- label selectors and topology groups ----------------------------------- */

static nw_rc_t parse_selector(const cJSON *sel, const char *path, nw_reqs_t *out, bool *nothing,
                              nw_err_t *err)
{
    nw_reqs_init(out);
    *nothing = false;
    if (!sel || cJSON_IsNull(sel)) {
        *nothing = true;
        return NW_OK;
    }
    if (!cJSON_IsObject(sel))
        return nw_err_set(err, NW_EINVAL, path, "must be an object");
    char p[160];
    nw_reqs_t ml, me;
    snprintf(p, sizeof p, "%s.matchLabels", path);
    nw_rc_t rc = nw_reqs_parse_node_selector(nw_json_get(sel, "matchLabels"), p, &ml, err);
    if (rc != NW_OK)
        return rc;
    snprintf(p, sizeof p, "%s.matchExpressions", path);
    rc = nw_reqs_parse_list(nw_json_get(sel, "matchExpressions"), p, 0, &me, err);
    if (rc != NW_OK) {
        nw_reqs_cleanup(&ml);
        return rc;
    }
    rc = nw_reqs_intersect(&ml, &me, out);
    nw_reqs_cleanup(&ml);
    nw_reqs_cleanup(&me);
    return rc;
}

bool nw_sched_group_selects(const nw_tgroup_t *g, const nw_spod_t *p)
{
    if (g->sel_nothing)
        return false;
    if (!g->all_ns) {
        bool ok = false;
        for (size_t i = 0; i < g->nns && !ok; i++)
            ok = strcmp(g->ns[i], p->ns) == 0;
        if (!ok)
            return false;
    }
    return nw_reqs_match_labels(&g->sel, &p->labels, NULL);
}

static int topo_key(const char *k)
{
    if (!k)
        return -1;
    if (strcmp(k, "kubernetes.io/hostname") == 0)
        return NW_SCHED_HOSTNAME;
    if (strcmp(nw_wk_normalize(k), NW_LABEL_ZONE) == 0)
        return NW_SCHED_ZONE;
    return -1;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* find or add a group; returns its index or -1 (err set) */
static int group_get(nw_sched_snap_t *s, nw_tg_kind_t kind, int key, int skew, int min_domains,
                     const cJSON *selector, const char *selpath, const char *pod_ns,
                     const cJSON *namespaces, const cJSON *ns_selector, nw_err_t *err)
{
    char *selj = selector ? cJSON_PrintUnformatted(selector) : strdup("null");
    if (!selj) {
        nw_err_set(err, NW_ENOMEM, selpath, "out of memory");
        return -1;
    }
    /* namespaces */
    char **ns = NULL;
    size_t nns = 0;
    bool all = false;
    if (kind != NW_TG_SPREAD && cJSON_GetArraySize(namespaces) > 0) {
        nns = (size_t)cJSON_GetArraySize(namespaces);
        ns = calloc(nns, sizeof *ns);
        size_t k = 0;
        const cJSON *it;
        cJSON_ArrayForEach(it, namespaces)
        {
            if (ns && cJSON_IsString(it))
                ns[k++] = strdup(it->valuestring);
        }
        nns = k;
        if (ns)
            qsort(ns, nns, sizeof *ns, cmp_str);
    } else if (kind != NW_TG_SPREAD && ns_selector && cJSON_IsObject(ns_selector)) {
        all = true; /* namespaceSelector: approximated as every namespace */
    } else {
        ns = calloc(1, sizeof *ns);
        if (ns)
            ns[nns++] = strdup(pod_ns);
    }
    size_t siglen = strlen(selj) + 64;
    for (size_t i = 0; i < nns; i++)
        siglen += (ns[i] ? strlen(ns[i]) : 0) + 1;
    char *sig = malloc(siglen);
    if (!sig) {
        free(selj);
        for (size_t i = 0; i < nns; i++)
            free(ns[i]);
        free(ns);
        nw_err_set(err, NW_ENOMEM, selpath, "out of memory");
        return -1;
    }
    int off = snprintf(sig, siglen, "%d|%d|%d|%d|%d|", kind, key, skew, min_domains, all);
    for (size_t i = 0; i < nns; i++)
        off += snprintf(sig + off, siglen - (size_t)off, "%s,", ns[i] ? ns[i] : "");
    snprintf(sig + off, siglen - (size_t)off, "|%s", selj);
    free(selj);
    for (size_t i = 0; i < s->ngroups; i++) {
        if (strcmp(s->groups[i].sig, sig) == 0) {
            free(sig);
            for (size_t k = 0; k < nns; k++)
                free(ns[k]);
            free(ns);
            return (int)i;
        }
    }
    nw_tgroup_t g = {.kind = kind, .key = key, .max_skew = skew, .min_domains = min_domains,
                     .ns = ns, .nns = nns, .all_ns = all, .sig = sig};
    if (parse_selector(selector, selpath, &g.sel, &g.sel_nothing, err) != NW_OK) {
        group_free(&g);
        return -1;
    }
    nw_tgroup_t *ng = grow(s->groups, &s->cgroups, s->ngroups, sizeof *ng);
    if (!ng) {
        group_free(&g);
        nw_err_set(err, NW_ENOMEM, selpath, "out of memory");
        return -1;
    }
    s->groups = ng;
    s->groups[s->ngroups] = g;
    return (int)s->ngroups++;
}

static nw_rc_t add_tc(nw_spod_t *p, int group, bool preferred, int weight, size_t *cap)
{
    nw_pod_tc_t *n = grow(p->tcs, cap, (size_t)p->ntcs, sizeof *n);
    if (!n)
        return NW_ENOMEM;
    p->tcs = n;
    p->tcs[p->ntcs++] = (nw_pod_tc_t){.group = group, .preferred = preferred, .weight = weight};
    return NW_OK;
}

static nw_rc_t parse_affinity_terms(nw_sched_snap_t *s, nw_spod_t *p, const cJSON *aff,
                                    nw_tg_kind_t kind, const char *path, size_t *cap,
                                    nw_err_t *err)
{
    if (!aff)
        return NW_OK;
    char pp[160];
    const cJSON *req = nw_json_get(aff, "requiredDuringSchedulingIgnoredDuringExecution"), *it;
    int i = 0;
    cJSON_ArrayForEach(it, req)
    {
        snprintf(pp, sizeof pp, "%s.requiredDuringSchedulingIgnoredDuringExecution[%d].labelSelector",
                 path, i++);
        int key = topo_key(nw_json_str(it, "topologyKey"));
        if (key < 0)
            continue; /* other topology keys are not simulated */
        int g = group_get(s, kind, key, 0, 0, nw_json_get(it, "labelSelector"), pp, p->ns,
                          nw_json_get(it, "namespaces"), nw_json_get(it, "namespaceSelector"), err);
        if (g < 0)
            return NW_EINVAL;
        if (add_tc(p, g, false, 0, cap) != NW_OK)
            return nw_err_set(err, NW_ENOMEM, path, "out of memory");
    }
    const cJSON *pref = nw_json_get(aff, "preferredDuringSchedulingIgnoredDuringExecution");
    i = 0;
    cJSON_ArrayForEach(it, pref)
    {
        const cJSON *term = nw_json_get(it, "podAffinityTerm");
        snprintf(pp, sizeof pp,
                 "%s.preferredDuringSchedulingIgnoredDuringExecution[%d].podAffinityTerm.labelSelector",
                 path, i++);
        int key = topo_key(nw_json_str(term, "topologyKey"));
        if (key < 0)
            continue;
        int g = group_get(s, kind, key, 0, 0, nw_json_get(term, "labelSelector"), pp, p->ns,
                          nw_json_get(term, "namespaces"), nw_json_get(term, "namespaceSelector"), err);
        if (g < 0)
            return NW_EINVAL;
        const cJSON *w = nw_json_get(it, "weight");
        if (add_tc(p, g, true, cJSON_IsNumber(w) ? w->valueint : 1, cap) != NW_OK)
            return nw_err_set(err, NW_ENOMEM, path, "out of memory");
    }
    return NW_OK;
}

/* ---- pod classes ------------------------------------------------------------- */

static int cmp_pref(const void *a, const void *b)
{
    const int *x = a, *y = b;
    return x[0] != y[0] ? (y[0] > x[0]) - (y[0] < x[0]) : x[1] - y[1];
}

static void validate_expr_list(const cJSON *arr, const char *path, char **invalid)
{
    const cJSON *it;
    int i = 0;
    cJSON_ArrayForEach(it, arr)
    {
        if (*invalid)
            return;
        const char *k = nw_json_str(it, "key"), *op = nw_json_str(it, "operator");
        const char *vals[64];
        size_t nv = 0;
        const cJSON *v;
        cJSON_ArrayForEach(v, nw_json_get(it, "values"))
        {
            if (cJSON_IsString(v) && nv < 64)
                vals[nv++] = v->valuestring;
        }
        char msg[512];
        if (k && op && nw_reqs_validate_requirement(k, op, vals, nv, 0, msg, sizeof msg) > 0) {
            size_t n = strlen(msg) + strlen(path) + 32;
            *invalid = malloc(n);
            if (*invalid)
                snprintf(*invalid, n, "%s[%d]: %s", path, i, msg);
        }
        i++;
    }
}

static nw_rc_t class_build(nw_pclass_t *c, const cJSON *spec, nw_err_t *err)
{
    nw_rc_t rc = nw_reqs_parse_node_selector(nw_json_get(spec, "nodeSelector"), "spec.nodeSelector",
                                             &c->selector, err);
    if (rc != NW_OK)
        return rc;
    const cJSON *aff = nw_json_get(spec, "affinity");
    const cJSON *na = aff ? nw_json_get(aff, "nodeAffinity") : NULL;
    const cJSON *req = na ? nw_json_get(na, "requiredDuringSchedulingIgnoredDuringExecution") : NULL;
    const char *tp = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
                     "nodeSelectorTerms";
    if (req) {
        rc = nw_reqs_parse_terms(nw_json_get(req, "nodeSelectorTerms"), tp, &c->terms, &c->nterms, err);
        if (rc != NW_OK)
            return rc;
    }
    const cJSON *pref = na ? nw_json_get(na, "preferredDuringSchedulingIgnoredDuringExecution") : NULL;
    int np = cJSON_GetArraySize(pref);
    if (np > 0) {
        int(*order)[2] = calloc((size_t)np, sizeof *order);
        nw_reqs_t *tmp = calloc((size_t)np, sizeof *tmp);
        c->prefs = calloc((size_t)np, sizeof *c->prefs);
        if (!order || !tmp || !c->prefs) {
            free(order);
            free(tmp);
            return nw_err_set(err, NW_ENOMEM, "spec.affinity", "out of memory");
        }
        const cJSON *it;
        int i = 0;
        rc = NW_OK;
        cJSON_ArrayForEach(it, pref)
        {
            char p[200];
            snprintf(p, sizeof p,
                     "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[%d]"
                     ".preference.matchExpressions",
                     i);
            const cJSON *w = nw_json_get(it, "weight"), *pr = nw_json_get(it, "preference");
            order[i][0] = cJSON_IsNumber(w) ? w->valueint : 0;
            order[i][1] = i;
            if (rc == NW_OK)
                rc = nw_reqs_parse_list(pr ? nw_json_get(pr, "matchExpressions") : NULL, p, 0, &tmp[i],
                                        err);
            else
                nw_reqs_init(&tmp[i]);
            i++;
        }
        if (rc == NW_OK) {
            qsort(order, (size_t)np, sizeof *order, cmp_pref);
            for (int k = 0; k < np; k++)
                c->prefs[k] = tmp[order[k][1]];
            c->nprefs = (size_t)np;
        } else {
            nw_reqs_terms_free(tmp, (size_t)np);
            tmp = NULL;
        }
        free(tmp);
        free(order);
        if (rc != NW_OK)
            return rc;
    }
    rc = nw_tolerations_parse(nw_json_get(spec, "tolerations"), "spec.tolerations", &c->tols, err);
    if (rc != NW_OK)
        return rc;
    /* refuses Karpenter capacity: required term with karpenter.sh/nodepool DoesNotExist */
    for (size_t i = 0; i < c->nterms; i++) {
        const nw_req_t *r = nw_reqs_get(&c->terms[i], NW_LABEL_NODEPOOL);
        if (r && nw_req_operator(r) == NW_REQ_DOES_NOT_EXIST)
            c->refuses = true;
    }
    /* validation (Karpenter ignores pods with invalid requirements) */
    const cJSON *ns = nw_json_get(spec, "nodeSelector"), *it;
    cJSON_ArrayForEach(it, ns)
    {
        if (c->invalid || !cJSON_IsString(it))
            continue;
        const char *v[1] = {it->valuestring};
        char msg[512];
        if (nw_reqs_validate_requirement(it->string, "In", v, 1, 0, msg, sizeof msg) > 0) {
            size_t n = strlen(msg) + strlen(it->string) + 40;
            c->invalid = malloc(n);
            if (c->invalid)
                snprintf(c->invalid, n, "spec.nodeSelector[%s]: %s", it->string, msg);
        }
    }
    const cJSON *t;
    int ti = 0;
    const cJSON *terms_arr = req ? nw_json_get(req, "nodeSelectorTerms") : NULL;
    cJSON_ArrayForEach(t, terms_arr)
    {
        char p[200];
        snprintf(p, sizeof p, "%s[%d].matchExpressions", tp, ti++);
        validate_expr_list(nw_json_get(t, "matchExpressions"), p, &c->invalid);
        if (!c->invalid && cJSON_GetArraySize(nw_json_get(t, "matchFields")) > 0) {
            c->invalid = strdup("matchFields in required node affinity is not supported");
        }
    }
    return NW_OK;
}

static int class_get(nw_sched_snap_t *s, const cJSON *spec, bool accel, nw_err_t *err)
{
    cJSON *k = cJSON_CreateObject();
    if (!k) {
        nw_err_set(err, NW_ENOMEM, "spec", "out of memory");
        return -1;
    }
    const cJSON *aff = nw_json_get(spec, "affinity");
    const char *keys[] = {"nodeSelector", "tolerations"};
    for (int i = 0; i < 2; i++)
        if (nw_json_get(spec, keys[i]))
            cJSON_AddItemToObject(k, keys[i], cJSON_Duplicate(nw_json_get(spec, keys[i]), 1));
    if (aff && nw_json_get(aff, "nodeAffinity"))
        cJSON_AddItemToObject(k, "na", cJSON_Duplicate(nw_json_get(aff, "nodeAffinity"), 1));
    cJSON_AddBoolToObject(k, "accel", accel);
    char *sig = cJSON_PrintUnformatted(k);
    cJSON_Delete(k);
    if (!sig) {
        nw_err_set(err, NW_ENOMEM, "spec", "out of memory");
        return -1;
    }
    uint64_t h = nw_sched_hash(sig);
    if (s->class_hash) {
        for (size_t i = h & (s->class_hash_cap - 1);; i = (i + 1) & (s->class_hash_cap - 1)) {
            int ci = s->class_hash[i];
            if (ci < 0)
                break;
            if (strcmp(s->classes[ci].sig, sig) == 0) {
                free(sig);
                return ci;
            }
        }
    }
    nw_pclass_t c = {.sig = sig, .wants_accel = accel};
    nw_reqs_init(&c.selector);
    nw_tolerations_init(&c.tols);
    if (class_build(&c, spec, err) != NW_OK) {
        pclass_free(&c);
        return -1;
    }
    nw_pclass_t *nc = grow(s->classes, &s->cclasses, s->nclasses, sizeof *nc);
    if (!nc) {
        pclass_free(&c);
        nw_err_set(err, NW_ENOMEM, "spec", "out of memory");
        return -1;
    }
    s->classes = nc;
    s->classes[s->nclasses] = c;
    int idx = (int)s->nclasses++;
    /* rehash when over half full */
    if (s->nclasses * 2 > s->class_hash_cap) {
        size_t cap = s->class_hash_cap ? s->class_hash_cap * 2 : 64;
        int *nh = malloc(cap * sizeof *nh);
        if (!nh) {
            nw_err_set(err, NW_ENOMEM, "spec", "out of memory");
            return -1;
        }
        for (size_t i = 0; i < cap; i++)
            nh[i] = -1;
        free(s->class_hash);
        s->class_hash = nh;
        s->class_hash_cap = cap;
        for (size_t ci = 0; ci < s->nclasses; ci++) {
            size_t i = nw_sched_hash(s->classes[ci].sig) & (cap - 1);
            while (nh[i] >= 0)
                i = (i + 1) & (cap - 1);
            nh[i] = (int)ci;
        }
    } else {
        size_t i = h & (s->class_hash_cap - 1);
        while (s->class_hash[i] >= 0)
            i = (i + 1) & (s->class_hash_cap - 1);
        s->class_hash[i] = idx;
    }
    return idx;
}

/* ---- pods -------------------------------------------------------------------- */

static bool is_nominated(const nw_sched_snap_t *s, const char *uid)
{
    for (size_t i = 0; i < s->nnominated; i++)
        if (strcmp(s->nominated[i], uid) == 0)
            return true;
    return false;
}

nw_rc_t nw_sched_snap_nominated(nw_sched_snap_t *s, const char *pod_uid)
{
    char **n = grow(s->nominated, &s->cnominated, s->nnominated, sizeof *n);
    if (!n)
        return NW_ENOMEM;
    s->nominated = n;
    if (!(s->nominated[s->nnominated] = strdup(pod_uid)))
        return NW_ENOMEM;
    s->nnominated++;
    for (size_t i = 0; i < s->npods; i++)
        if (strcmp(s->pods[i].uid, pod_uid) == 0)
            s->pods[i].provisionable_state = false;
    return NW_OK;
}

nw_rc_t nw_sched_snap_add_pod_json(nw_sched_snap_t *s, const cJSON *pod, nw_err_t *err)
{
    if (!cJSON_IsObject(pod))
        return nw_err_set(err, NW_EINVAL, "", "pod must be an object");
    const cJSON *md = nw_json_get(pod, "metadata"), *spec = nw_json_get(pod, "spec"), *st = nw_json_get(pod, "status");
    const char *name = nw_json_str(md, "name");
    if (!name)
        return nw_err_set(err, NW_EINVAL, "metadata.name", "Required value");
    if (!cJSON_IsObject(spec))
        return nw_err_set(err, NW_EINVAL, "spec", "Required value");
    const char *ns = nw_json_str(md, "namespace");
    if (!ns)
        ns = "default";
    nw_spod_t p = {0};
    nw_labels_init(&p.labels);
    size_t tccap = 0;
    nw_rc_t rc = NW_ENOMEM;
    p.ns = strdup(ns);
    p.name = strdup(name);
    size_t kl = strlen(ns) + strlen(name) + 2;
    p.key = malloc(kl);
    if (p.key)
        snprintf(p.key, kl, "%s/%s", ns, name);
    p.uid = dupstr(nw_json_str(md, "uid") ? nw_json_str(md, "uid") : p.key);
    if (!p.ns || !p.name || !p.key || !p.uid)
        goto fail_nomem;
    p.node_name = dupstr(nw_json_str(spec, "nodeName"));
    if (p.node_name && !*p.node_name) {
        free(p.node_name);
        p.node_name = NULL;
    }
    p.created = parse_time(nw_json_str(md, "creationTimestamp"));
    const cJSON *owners = nw_json_get(md, "ownerReferences"), *o, *owner = NULL;
    cJSON_ArrayForEach(o, owners)
    {
        if (!owner || cJSON_IsTrue(nw_json_get(o, "controller")))
            owner = o;
    }
    if (owner) {
        p.owner_kind = dupstr(nw_json_str(owner, "kind"));
        p.owner_name = dupstr(nw_json_str(owner, "name"));
    }
    if ((rc = nw_labels_parse(nw_json_get(md, "labels"), "metadata.labels", &p.labels, err)) != NW_OK)
        goto fail;
    if ((rc = nw_sched_pod_requests(s, spec, "spec", &p.req, err)) != NW_OK)
        goto fail;
    bool accel = false;
    for (int k = NW_SR_NVIDIA_GPU; k <= NW_SR_GAUDI; k++)
        accel |= p.req.v[k] > 0;
    p.cls = class_get(s, spec, accel, err);
    if (p.cls < 0) {
        rc = NW_EINVAL;
        goto fail;
    }
    /* topology spread */
    const cJSON *tsc = nw_json_get(spec, "topologySpreadConstraints"), *it;
    int i = 0;
    cJSON_ArrayForEach(it, tsc)
    {
        char pp[128];
        snprintf(pp, sizeof pp, "spec.topologySpreadConstraints[%d]", i++);
        int key = topo_key(nw_json_str(it, "topologyKey"));
        const cJSON *ms = nw_json_get(it, "maxSkew"), *md2 = nw_json_get(it, "minDomains");
        if (!cJSON_IsNumber(ms) || ms->valueint < 1) {
            rc = nw_err_set(err, NW_EINVAL, pp, "maxSkew must be an integer >= 1");
            goto fail;
        }
        if (key < 0)
            continue;
        const char *wu = nw_json_str(it, "whenUnsatisfiable");
        bool anyway = wu && strcmp(wu, "ScheduleAnyway") == 0;
        char sp[160];
        snprintf(sp, sizeof sp, "%s.labelSelector", pp);
        int g = group_get(s, NW_TG_SPREAD, key, ms->valueint,
                          cJSON_IsNumber(md2) && !anyway ? md2->valueint : 0, nw_json_get(it, "labelSelector"),
                          sp, p.ns, NULL, NULL, err);
        if (g < 0) {
            rc = NW_EINVAL;
            goto fail;
        }
        if (add_tc(&p, g, anyway, 1, &tccap) != NW_OK)
            goto fail_nomem;
    }
    const cJSON *aff = nw_json_get(spec, "affinity");
    if (aff) {
        if ((rc = parse_affinity_terms(s, &p, nw_json_get(aff, "podAffinity"), NW_TG_AFFINITY,
                                       "spec.affinity.podAffinity", &tccap, err)) != NW_OK)
            goto fail;
        if ((rc = parse_affinity_terms(s, &p, nw_json_get(aff, "podAntiAffinity"), NW_TG_ANTI,
                                       "spec.affinity.podAntiAffinity", &tccap, err)) != NW_OK)
            goto fail;
    }
    p.terminating = nw_json_get(md, "deletionTimestamp") && !cJSON_IsNull(nw_json_get(md, "deletionTimestamp"));
    const char *phase = nw_json_str(st, "phase");
    p.finished = phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0);
    const char *nom = nw_json_str(st, "nominatedNodeName");
    const cJSON *conds = st ? nw_json_get(st, "conditions") : NULL;
    cJSON_ArrayForEach(it, conds)
    {
        const char *t = nw_json_str(it, "type"), *sv = nw_json_str(it, "status"), *r = nw_json_str(it, "reason");
        if (t && strcmp(t, "PodScheduled") == 0 && sv && strcmp(sv, "False") == 0 && r &&
            strcmp(r, "Unschedulable") == 0)
            p.unschedulable_cond = true;
    }
    bool ds = p.owner_kind && strcmp(p.owner_kind, "DaemonSet") == 0;
    bool mirror = p.owner_kind && strcmp(p.owner_kind, "Node") == 0;
    p.provisionable_state = !p.node_name && !(nom && *nom) && !ds && !mirror && !p.terminating &&
                            !p.finished && !is_nominated(s, p.uid);
    nw_spod_t *np = grow(s->pods, &s->cpods, s->npods, sizeof *np);
    if (!np)
        goto fail_nomem;
    s->pods = np;
    s->pods[s->npods++] = p;
    return NW_OK;
fail_nomem:
    rc = nw_err_set(err, NW_ENOMEM, "", "out of memory");
fail:
    pod_free(&p);
    return rc;
}

/* ---- nodes and NodeClaims ---------------------------------------------------- */

static nw_rc_t node_common(nw_sched_snap_t *s, const cJSON *obj, bool claim, nw_err_t *err)
{
    if (!cJSON_IsObject(obj))
        return nw_err_set(err, NW_EINVAL, "", "must be an object");
    const cJSON *md = nw_json_get(obj, "metadata"), *spec = nw_json_get(obj, "spec"), *st = nw_json_get(obj, "status");
    const char *name = nw_json_str(md, "name");
    if (!name)
        return nw_err_set(err, NW_EINVAL, "metadata.name", "Required value");
    nw_snode_t n = {.claim = claim};
    nw_labels_init(&n.labels);
    nw_reqs_init(&n.reqs);
    nw_taints_init(&n.taints);
    nw_taints_init(&n.startup_taints);
    nw_rc_t rc;
    if (!(n.name = strdup(name))) {
        rc = nw_err_set(err, NW_ENOMEM, "", "out of memory");
        goto fail;
    }
    if ((rc = nw_labels_parse(nw_json_get(md, "labels"), "metadata.labels", &n.labels, err)) != NW_OK)
        goto fail;
    if ((rc = nw_reqs_from_labels(&n.labels, &n.reqs)) != NW_OK)
        goto fail;
    if (claim && spec) {
        nw_reqs_t r;
        if ((rc = nw_reqs_parse_list(nw_json_get(spec, "requirements"), "spec.requirements",
                                     NW_REQS_PARSE_KARPENTER, &r, err)) != NW_OK)
            goto fail;
        rc = nw_reqs_add_all(&n.reqs, &r);
        nw_reqs_cleanup(&r);
        if (rc != NW_OK)
            goto fail;
        if ((rc = nw_taints_parse(nw_json_get(spec, "startupTaints"), "spec.startupTaints",
                                  &n.startup_taints, err)) != NW_OK)
            goto fail;
    }
    nw_taints_cleanup(&n.taints);
    if ((rc = nw_taints_parse(spec ? nw_json_get(spec, "taints") : NULL, "spec.taints", &n.taints,
                              err)) != NW_OK)
        goto fail;
    if ((rc = parse_res(s, st ? nw_json_get(st, "allocatable") : NULL, "status.allocatable",
                        &n.allocatable, NULL, err)) != NW_OK)
        goto fail;
    if ((rc = parse_res(s, st ? nw_json_get(st, "capacity") : NULL, "status.capacity", &n.capacity, NULL,
                        err)) != NW_OK)
        goto fail;
    const char *pool = nw_labels_get(&n.labels, NW_LABEL_NODEPOOL);
    if (!pool && claim) {
        const nw_req_t *r = nw_reqs_get(&n.reqs, NW_LABEL_NODEPOOL);
        if (r && !r->complement && r->nvalues == 1)
            pool = r->values[0];
    }
    n.pool = dupstr(pool);
    const char *init = nw_labels_get(&n.labels, NW_LABEL_INITIALIZED);
    n.initialized = pool == NULL || (init && strcmp(init, "true") == 0);
    if (claim)
        n.initialized = false;
    n.deleting = nw_json_get(md, "deletionTimestamp") && !cJSON_IsNull(nw_json_get(md, "deletionTimestamp"));
    if (claim) {
        /* a claim whose node registered is represented by its Node */
        const char *nn = nw_json_str(st, "nodeName");
        for (size_t i = 0; nn && i < s->nnodes; i++)
            if (!s->nodes[i].claim && strcmp(s->nodes[i].name, nn) == 0)
                goto skip;
    } else {
        /* drop the claim this node replaces (same name in status.nodeName not known here:
         * match by providerID-less name equality of label karpenter.sh/nodeclaim) */
        const char *ncn = nw_labels_get(&n.labels, NW_LABEL_NODECLAIM);
        for (size_t i = 0; ncn && i < s->nnodes; i++)
            if (s->nodes[i].claim && strcmp(s->nodes[i].name, ncn) == 0)
                s->nodes[i].deleting = true;
    }
    nw_snode_t *nn2 = grow(s->nodes, &s->cnodes, s->nnodes, sizeof *nn2);
    if (!nn2) {
        rc = nw_err_set(err, NW_ENOMEM, "", "out of memory");
        goto fail;
    }
    s->nodes = nn2;
    s->nodes[s->nnodes++] = n;
    return NW_OK;
skip:
    node_free(&n);
    return NW_OK;
fail:
    node_free(&n);
    return rc;
}

nw_rc_t nw_sched_snap_add_node_json(nw_sched_snap_t *s, const cJSON *node, nw_err_t *err)
{
    return node_common(s, node, false, err);
}

nw_rc_t nw_sched_snap_add_nodeclaim_json(nw_sched_snap_t *s, const cJSON *nc, nw_err_t *err)
{
    return node_common(s, nc, true, err);
}

/* ---- NodePools ----------------------------------------------------------------- */

nw_rc_t nw_sched_snap_add_pool_json(nw_sched_snap_t *s, const cJSON *np, nw_err_t *err)
{
    if (!cJSON_IsObject(np))
        return nw_err_set(err, NW_EINVAL, "", "NodePool must be an object");
    const cJSON *md = nw_json_get(np, "metadata"), *spec = nw_json_get(np, "spec");
    const char *name = nw_json_str(md, "name");
    if (!name)
        return nw_err_set(err, NW_EINVAL, "metadata.name", "Required value");
    for (size_t i = 0; i < s->npools; i++)
        if (strcmp(s->pools[i].name, name) == 0)
            return nw_err_set(err, NW_EINVAL, "metadata.name", "duplicate NodePool \"%s\"", name);
    const cJSON *tmpl = spec ? nw_json_get(spec, "template") : NULL;
    const cJSON *tmd = tmpl ? nw_json_get(tmpl, "metadata") : NULL;
    const cJSON *tsp = tmpl ? nw_json_get(tmpl, "spec") : NULL;
    nw_spool_t p = {0};
    nw_reqs_init(&p.reqs);
    nw_labels_init(&p.labels);
    nw_taints_init(&p.taints);
    nw_taints_init(&p.startup_taints);
    nw_rc_t rc;
    p.name = strdup(name);
    const cJSON *ref = tsp ? nw_json_get(tsp, "nodeClassRef") : NULL;
    p.nodeclass = dupstr(nw_json_str(ref, "name") ? nw_json_str(ref, "name") : "");
    if (!p.name || !p.nodeclass) {
        rc = nw_err_set(err, NW_ENOMEM, "", "out of memory");
        goto fail;
    }
    const cJSON *w = spec ? nw_json_get(spec, "weight") : NULL;
    p.weight = cJSON_IsNumber(w) ? w->valueint : 0;
    if ((rc = nw_reqs_parse_list(tsp ? nw_json_get(tsp, "requirements") : NULL,
                                 "spec.template.spec.requirements", NW_REQS_PARSE_KARPENTER,
                                 &p.reqs, err)) != NW_OK)
        goto fail;
    if ((rc = nw_labels_parse(tmd ? nw_json_get(tmd, "labels") : NULL, "spec.template.metadata.labels",
                              &p.labels, err)) != NW_OK)
        goto fail;
    for (size_t i = 0; i < p.labels.n; i++) {
        const char *v[1] = {p.labels.v[i].value};
        if ((rc = nw_reqs_add(&p.reqs, p.labels.v[i].key, NW_REQ_IN, v, 1, 0, err)) != NW_OK)
            goto fail;
    }
    const char *pv[1] = {name};
    if ((rc = nw_reqs_add(&p.reqs, NW_LABEL_NODEPOOL, NW_REQ_IN, pv, 1, 0, err)) != NW_OK)
        goto fail;
    for (size_t i = 0; i < p.reqs.n; i++)
        if (p.reqs.v[i].min_values > 0)
            p.has_min_values = true;
    if ((rc = nw_taints_parse(tsp ? nw_json_get(tsp, "taints") : NULL, "spec.template.spec.taints",
                              &p.taints, err)) != NW_OK)
        goto fail;
    if ((rc = nw_taints_parse(tsp ? nw_json_get(tsp, "startupTaints") : NULL,
                              "spec.template.spec.startupTaints", &p.startup_taints, err)) != NW_OK)
        goto fail;
    const cJSON *lim = spec ? nw_json_get(spec, "limits") : NULL;
    if ((rc = parse_res(s, lim, "spec.limits", &p.limits, p.has_limits, err)) != NW_OK)
        goto fail;
    const cJSON *nl = lim ? nw_json_get(lim, "nodes") : NULL;
    if (nl) {
        int slot = res_slot_find(s, "nodes");
        p.has_node_limit = true;
        p.node_limit = slot >= 0 ? p.limits.v[slot] / 1000 : 0;
        if (slot >= 0)
            p.has_limits[slot] = false;
    }
    p.deleting = nw_json_get(md, "deletionTimestamp") && !cJSON_IsNull(nw_json_get(md, "deletionTimestamp"));
    nw_spool_t *n = grow(s->pools, &s->cpools, s->npools, sizeof *n);
    if (!n) {
        rc = nw_err_set(err, NW_ENOMEM, "", "out of memory");
        goto fail;
    }
    s->pools = n;
    s->pools[s->npools++] = p;
    return NW_OK;
fail:
    pool_free(&p);
    return rc;
}

/* ---- DaemonSets ------------------------------------------------------------------ */

nw_rc_t nw_sched_snap_add_daemonset_json(nw_sched_snap_t *s, const cJSON *ds, nw_err_t *err)
{
    if (!cJSON_IsObject(ds))
        return nw_err_set(err, NW_EINVAL, "", "DaemonSet must be an object");
    const cJSON *md = nw_json_get(ds, "metadata"), *spec = nw_json_get(ds, "spec");
    const cJSON *tmpl = spec ? nw_json_get(spec, "template") : NULL;
    const cJSON *ps = tmpl ? nw_json_get(tmpl, "spec") : NULL;
    const char *name = nw_json_str(md, "name");
    if (!name)
        return nw_err_set(err, NW_EINVAL, "metadata.name", "Required value");
    if (!cJSON_IsObject(ps))
        return nw_err_set(err, NW_EINVAL, "spec.template.spec", "Required value");
    nw_sds_t d = {0};
    nw_reqs_init(&d.strict);
    nw_reqs_init(&d.selector);
    nw_tolerations_init(&d.tols);
    nw_rc_t rc;
    d.ns = strdup(nw_json_str(md, "namespace") ? nw_json_str(md, "namespace") : "default");
    d.name = strdup(name);
    if (!d.ns || !d.name) {
        rc = nw_err_set(err, NW_ENOMEM, "", "out of memory");
        goto fail;
    }
    if ((rc = nw_sched_pod_requests(s, ps, "spec.template.spec", &d.req, err)) != NW_OK)
        goto fail;
    if ((rc = nw_reqs_parse_node_selector(nw_json_get(ps, "nodeSelector"),
                                          "spec.template.spec.nodeSelector", &d.selector, err)) !=
        NW_OK)
        goto fail;
    const cJSON *aff = nw_json_get(ps, "affinity");
    const cJSON *na = aff ? nw_json_get(aff, "nodeAffinity") : NULL;
    const cJSON *req = na ? nw_json_get(na, "requiredDuringSchedulingIgnoredDuringExecution") : NULL;
    if (req && (rc = nw_reqs_parse_terms(nw_json_get(req, "nodeSelectorTerms"),
                                         "spec.template.spec.affinity.nodeAffinity."
                                         "requiredDuringSchedulingIgnoredDuringExecution."
                                         "nodeSelectorTerms",
                                         &d.terms, &d.nterms, err)) != NW_OK)
        goto fail;
    if ((rc = nw_reqs_parse_pod_spec(ps, "spec.template.spec", 0, &d.strict, err)) != NW_OK)
        goto fail;
    if ((rc = nw_tolerations_parse(nw_json_get(ps, "tolerations"), "spec.template.spec.tolerations",
                                   &d.tols, err)) != NW_OK)
        goto fail;
    nw_sds_t *n = grow(s->dss, &s->cdss, s->ndss, sizeof *n);
    if (!n) {
        rc = nw_err_set(err, NW_ENOMEM, "", "out of memory");
        goto fail;
    }
    s->dss = n;
    s->dss[s->ndss++] = d;
    return NW_OK;
fail:
    ds_free(&d);
    return rc;
}

/* ---- instance types -------------------------------------------------------------- */

static nw_rc_t itype_finish(nw_sched_snap_t *s, nw_sitype_t *it, nw_err_t *err)
{
    nw_rc_t rc = nw_reqs_from_labels(&it->t.labels, &it->reqs);
    if (rc != NW_OK)
        return nw_err_set(err, rc, "", "out of memory");
    const char *zones[NW_SCHED_MAX_OFFERINGS], *cts[NW_SCHED_MAX_OFFERINGS];
    size_t nz = 0, nc = 0;
    for (int i = 0; i < it->t.noffer; i++) {
        const nw_sched_offering_t *o = &it->t.offerings[i];
        bool seen = false;
        for (size_t k = 0; k < nz && !seen; k++)
            seen = strcmp(zones[k], o->zone) == 0;
        if (!seen)
            zones[nz++] = o->zone;
        seen = false;
        for (size_t k = 0; k < nc && !seen; k++)
            seen = strcmp(cts[k], o->capacity_type) == 0;
        if (!seen)
            cts[nc++] = o->capacity_type;
    }
    if (nz && (rc = nw_reqs_add(&it->reqs, NW_LABEL_ZONE, NW_REQ_IN, zones, nz, 0,
                                err)) != NW_OK)
        return rc;
    if (nc && (rc = nw_reqs_add(&it->reqs, NW_LABEL_CAPACITY_TYPE, NW_REQ_IN, cts, nc, 0,
                                err)) != NW_OK)
        return rc;
    for (int k = NW_SR_NVIDIA_GPU; k <= NW_SR_GAUDI; k++)
        it->accel |= it->t.capacity.v[k] > 0;
    (void)s;
    return NW_OK;
}

static nw_rc_t itype_push(nw_sched_snap_t *s, nw_sitype_t *it, nw_err_t *err)
{
    for (size_t i = 0; i < s->nitypes; i++)
        if (strcmp(s->itypes[i].t.name, it->t.name) == 0)
            return nw_err_set(err, NW_EINVAL, "name", "duplicate instance type \"%s\"", it->t.name);
    nw_rc_t rc = itype_finish(s, it, err);
    if (rc != NW_OK)
        return rc;
    nw_sitype_t *n = grow(s->itypes, &s->citypes, s->nitypes, sizeof *n);
    if (!n)
        return nw_err_set(err, NW_ENOMEM, "", "out of memory");
    s->itypes = n;
    s->itypes[s->nitypes++] = *it;
    return NW_OK;
}

nw_rc_t nw_sched_snap_add_itype(nw_sched_snap_t *s, const nw_sched_itype_t *t, nw_err_t *err)
{
    nw_sitype_t it;
    memset(&it, 0, sizeof it);
    it.t = *t;
    nw_labels_init(&it.t.labels);
    nw_reqs_init(&it.reqs);
    nw_rc_t rc = nw_labels_copy(&it.t.labels, &t->labels);
    if (rc == NW_OK)
        rc = itype_push(s, &it, err);
    else
        nw_err_set(err, rc, "", "out of memory");
    if (rc != NW_OK) {
        nw_labels_cleanup(&it.t.labels);
        nw_reqs_cleanup(&it.reqs);
    }
    return rc;
}

nw_rc_t nw_sched_snap_add_itype_raw(nw_sched_snap_t *s, const char *name,
                                    const char *const *keys, const char *const *values,
                                    int nlabels, const nw_sched_res_t *capacity,
                                    const nw_sched_res_t *allocatable, bool metal,
                                    const nw_sched_offering_t *offers, int noffer, nw_err_t *err)
{
    if (noffer > NW_SCHED_MAX_OFFERINGS)
        return nw_err_set(err, NW_EINVAL, "offerings", "more than %d offerings",
                          NW_SCHED_MAX_OFFERINGS);
    nw_sitype_t it;
    memset(&it, 0, sizeof it);
    snprintf(it.t.name, sizeof it.t.name, "%s", name);
    nw_labels_init(&it.t.labels);
    nw_reqs_init(&it.reqs);
    nw_rc_t rc = NW_OK;
    for (int i = 0; i < nlabels && rc == NW_OK; i++)
        rc = nw_labels_set(&it.t.labels, keys[i], values[i]);
    if (rc == NW_OK && !nw_labels_get(&it.t.labels, NW_LABEL_INSTANCE_TYPE))
        rc = nw_labels_set(&it.t.labels, NW_LABEL_INSTANCE_TYPE, name);
    it.t.capacity = *capacity;
    it.t.allocatable = *allocatable;
    it.t.metal = metal;
    memcpy(it.t.offerings, offers, sizeof *offers * (size_t)noffer);
    it.t.noffer = noffer;
    if (rc == NW_OK)
        rc = itype_push(s, &it, err);
    else
        nw_err_set(err, rc, "", "out of memory");
    if (rc != NW_OK) {
        nw_labels_cleanup(&it.t.labels);
        nw_reqs_cleanup(&it.reqs);
    }
    return rc;
}

void nw_sched_snap_ice(nw_sched_snap_t *s, const char *itype, const char *zone,
                       const char *capacity_type)
{
    for (size_t i = 0; i < s->nitypes; i++) {
        nw_sched_itype_t *t = &s->itypes[i].t;
        if (strcmp(t->name, itype) != 0)
            continue;
        for (int k = 0; k < t->noffer; k++)
            if ((!zone || strcmp(t->offerings[k].zone, zone) == 0) &&
                (!capacity_type || strcmp(t->offerings[k].capacity_type, capacity_type) == 0))
                t->offerings[k].available = false;
    }
}
