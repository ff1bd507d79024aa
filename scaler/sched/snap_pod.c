/* scaler/sched/snap_pod.c — building a scheduling snapshot (scaler/sched/snapshot.c): pods: label
 * selectors, topology groups, pod classes and the pods themselves. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/pod.h"
#include "api/quantity.h"
#include "api/wellknown.h"
#include "common/json.h"
#include "common/strs.h"
#include "scaler/sched/mig.h"
#include "scaler/sched/snap.h"
/* ---- label selectors and topology groups ----------------------------------- */

static NW_MUST_USE nw_rc_t parse_selector(const cJSON *sel, const char *path, nw_reqs_t *out,
                                          bool *nothing, nw_err_t *err)
{
    nw_requirements_init(out);
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
    nw_rc_t rc =
        nw_requirements_json_parse_node_selector(nw_json_get(sel, "matchLabels"), p, &ml, err);
    if (rc != NW_OK)
        return rc;
    snprintf(p, sizeof p, "%s.matchExpressions", path);
    rc = nw_requirements_json_parse_list(nw_json_get(sel, "matchExpressions"), p, 0, &me, err);
    if (rc != NW_OK) {
        nw_requirements_cleanup(&ml);
        return rc;
    }
    rc = nw_requirements_intersect(&ml, &me, out);
    nw_requirements_cleanup(&ml);
    nw_requirements_cleanup(&me);
    return rc;
}

bool nw_snap_pod_group_selects(const nw_sched_snap_t *s, const nw_tgroup_t *g, const nw_spod_t *p)
{
    if (g->sel_nothing)
        return false;
    if (!g->all_ns) {
        bool ok = false;
        for (size_t i = 0; i < g->nns && !ok; i++)
            ok = strcmp(g->ns[i], p->ns) == 0;
        for (size_t i = 0; g->has_nssel && i < s->nnss && !ok; i++)
            ok = strcmp(s->nss[i].name, p->ns) == 0 &&
                 nw_requirements_match_labels(&g->nssel, &s->nss[i].labels, NULL);
        if (!ok)
            return false;
    }
    return nw_requirements_match_labels(&g->sel, p->labels, NULL);
}

typedef struct {
    nw_tg_kind_t kind;
    const char *key;
    int skew, min_domains;
    bool taints_honor, affinity_honor;
    int cls;
} gspec_t;

/* find or add a group; returns its index or -1 (err set). Namespaces as Karpenter's
 * buildNamespaceList (topology.go): none and no selector = the pod's; an empty selector =
 * every namespace; otherwise the list plus the namespaces the selector matches. */
/* The group with this signature, -1 when none: a hash of the signatures (a walk over every
 * group per pod constraint was quadratic in the groups, thousands at 100,000 pods). */
static int group_find(const nw_sched_snap_t *s, const char *sig)
{
    if (!s->group_hash)
        return -1;
    size_t m = s->group_hash_cap - 1;
    for (size_t i = nw_snapshot_hash(sig) & m;; i = (i + 1) & m) {
        int g = s->group_hash[i];
        if (g < 0 || strcmp(s->groups[g].sig, sig) == 0)
            return g;
    }
}

/* Index group g (the one being added; groups 0..g-1 are indexed); false on OOM. */
static bool group_index(nw_sched_snap_t *s, int g)
{
    if ((size_t)(g + 1) * 2 > s->group_hash_cap) { /* over half full: twice the room */
        size_t cap = s->group_hash_cap ? s->group_hash_cap * 2 : 64;
        int *nh = malloc(cap * sizeof *nh);
        if (!nh)
            return false;
        for (size_t i = 0; i < cap; i++)
            nh[i] = -1;
        free(s->group_hash);
        s->group_hash = nh;
        s->group_hash_cap = cap;
        for (int k = 0; k < g; k++) {
            size_t i = nw_snapshot_hash(s->groups[k].sig) & (cap - 1);
            while (nh[i] >= 0)
                i = (i + 1) & (cap - 1);
            nh[i] = k;
        }
    }
    size_t i = nw_snapshot_hash(s->groups[g].sig) & (s->group_hash_cap - 1);
    while (s->group_hash[i] >= 0)
        i = (i + 1) & (s->group_hash_cap - 1);
    s->group_hash[i] = g;
    return true;
}

static void strs_free(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static int group_get(nw_sched_snap_t *s, const gspec_t *gs, const cJSON *selector,
                     const char *selpath, const char *pod_ns, const cJSON *namespaces,
                     const cJSON *ns_selector, nw_err_t *err)
{
    char *selj = selector ? nw_json_print(selector) : strdup("null");
    bool has_nssel = gs->kind != NW_TG_SPREAD && ns_selector && cJSON_IsObject(ns_selector);
    char *nsselj = has_nssel ? nw_json_print(ns_selector) : strdup("");
    if (!selj || !nsselj) {
        free(selj);
        free(nsselj);
        nw_err_set(err, NW_ENOMEM, selpath, "out of memory");
        return -1;
    }
    char **ns = NULL;
    size_t nns = 0;
    bool all = has_nssel && cJSON_GetArraySize(nw_json_get(ns_selector, "matchLabels")) == 0 &&
               cJSON_GetArraySize(nw_json_get(ns_selector, "matchExpressions")) == 0;
    if (gs->kind != NW_TG_SPREAD && cJSON_GetArraySize(namespaces) > 0) {
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
            qsort(ns, nns, sizeof *ns, nw_strs_cmp);
    } else if (!has_nssel) {
        ns = calloc(1, sizeof *ns);
        if (ns)
            ns[nns++] = strdup(pod_ns);
    }
    size_t siglen = strlen(selj) + strlen(nsselj) + strlen(gs->key) + 96;
    for (size_t i = 0; i < nns; i++)
        siglen += (ns[i] ? strlen(ns[i]) : 0) + 1;
    char *sig = malloc(siglen);
    char *key = strdup(gs->key);
    if (!sig || !key) {
        free(sig);
        free(key);
        free(selj);
        free(nsselj);
        strs_free(ns, nns);
        nw_err_set(err, NW_ENOMEM, selpath, "out of memory");
        return -1;
    }
    int cls = gs->kind == NW_TG_SPREAD ? gs->cls : -1;
    int off = snprintf(sig, siglen, "%d|%s|%d|%d|%d%d|%d|%d|%s|", gs->kind, gs->key, gs->skew,
                       gs->min_domains, gs->taints_honor, gs->affinity_honor, cls, all, nsselj);
    for (size_t i = 0; i < nns; i++)
        off += snprintf(sig + off, siglen - (size_t)off, "%s,", ns[i] ? ns[i] : "");
    snprintf(sig + off, siglen - (size_t)off, "|%s", selj);
    free(selj);
    int found = group_find(s, sig);
    if (found >= 0) {
        free(sig);
        free(key);
        free(nsselj);
        strs_free(ns, nns);
        return found;
    }
    nw_tgroup_t g = {.kind = gs->kind,
                     .key = key,
                     .hostname = strcmp(gs->key, "kubernetes.io/hostname") == 0,
                     .max_skew = gs->skew,
                     .min_domains = gs->min_domains,
                     .taints_honor = gs->taints_honor,
                     .affinity_honor = gs->affinity_honor,
                     .cls = gs->cls,
                     .ns = ns,
                     .nns = nns,
                     .all_ns = all,
                     .has_nssel = has_nssel && !all,
                     .sig = sig};
    nw_requirements_init(&g.nssel);
    free(nsselj);
    bool nothing = false;
    char nsp[200];
    snprintf(nsp, sizeof nsp, "%.150s.namespaceSelector", selpath);
    if (parse_selector(selector, selpath, &g.sel, &g.sel_nothing, err) != NW_OK ||
        (g.has_nssel && parse_selector(ns_selector, nsp, &g.nssel, &nothing, err) != NW_OK)) {
        nw_snapshot_group_free(&g);
        return -1;
    }
    nw_tgroup_t *ng = nw_snapshot_grow(s->groups, &s->cgroups, s->ngroups, sizeof *ng);
    if (!ng) {
        nw_snapshot_group_free(&g);
        nw_err_set(err, NW_ENOMEM, selpath, "out of memory");
        return -1;
    }
    s->groups = ng;
    s->groups[s->ngroups] = g;
    if (!group_index(s, (int)s->ngroups)) {
        nw_snapshot_group_free(&s->groups[s->ngroups]);
        nw_err_set(err, NW_ENOMEM, selpath, "out of memory");
        return -1;
    }
    return (int)s->ngroups++;
}

static NW_MUST_USE nw_rc_t add_tc(nw_spod_t *p, int group, bool preferred, int weight, size_t *cap)
{
    nw_pod_tc_t *n = nw_snapshot_grow(p->tcs, cap, (size_t)p->ntcs, sizeof *n);
    if (!n)
        return NW_ENOMEM;
    p->tcs = n;
    p->tcs[p->ntcs++] = (nw_pod_tc_t){.group = group, .preferred = preferred, .weight = weight};
    return NW_OK;
}

static NW_MUST_USE nw_rc_t parse_affinity_terms(nw_sched_snap_t *s, nw_spod_t *p, const cJSON *aff,
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
        snprintf(pp, sizeof pp,
                 "%s.requiredDuringSchedulingIgnoredDuringExecution[%d].labelSelector", path, i++);
        const char *key = nw_json_str(it, "topologyKey");
        if (!key || !*key)
            return nw_err_set(err, NW_EINVAL, pp, "topologyKey: Required value");
        gspec_t gs = {.kind = kind, .key = nw_wellknown_normalize(key), .cls = p->cls};
        int g = group_get(s, &gs, nw_json_get(it, "labelSelector"), pp, p->ns,
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
        snprintf(
            pp, sizeof pp,
            "%s.preferredDuringSchedulingIgnoredDuringExecution[%d].podAffinityTerm.labelSelector",
            path, i++);
        const char *key = nw_json_str(term, "topologyKey");
        if (!key || !*key)
            return nw_err_set(err, NW_EINVAL, pp, "topologyKey: Required value");
        gspec_t gs = {.kind = kind, .key = nw_wellknown_normalize(key), .cls = p->cls};
        int g =
            group_get(s, &gs, nw_json_get(term, "labelSelector"), pp, p->ns,
                      nw_json_get(term, "namespaces"), nw_json_get(term, "namespaceSelector"), err);
        if (g < 0)
            return NW_EINVAL;
        const cJSON *w = nw_json_get(it, "weight");
        if (add_tc(p, g, true, cJSON_IsNumber(w) ? w->valueint : 1, cap) != NW_OK)
            return nw_err_set(err, NW_ENOMEM, path, "out of memory");
    }
    return NW_OK;
}

/* ---- pods -------------------------------------------------------------------- */

static bool is_nominated(const nw_sched_snap_t *s, const char *uid)
{
    for (size_t i = 0; i < s->nnominated; i++)
        if (strcmp(s->nominated[i], uid) == 0)
            return true;
    return false;
}

nw_rc_t nw_snap_pod_nominated(nw_sched_snap_t *s, const char *pod_uid)
{
    char **n = nw_snapshot_grow(s->nominated, &s->cnominated, s->nnominated, sizeof *n);
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

nw_rc_t nw_snap_pod_parse_hostports(const cJSON *spec, const char *path, nw_hostport_t **out,
                                    int *n, nw_err_t *err)
{
    const cJSON *ctr, *port;
    int ci = 0;
    cJSON_ArrayForEach(ctr, nw_json_get(spec, "containers"))
    {
        int pi = 0;
        cJSON_ArrayForEach(port, nw_json_get(ctr, "ports"))
        {
            char pp[160];
            snprintf(pp, sizeof pp, "%s.containers[%d].ports[%d]", path, ci, pi++);
            const cJSON *hp = nw_json_get(port, "hostPort");
            if (!hp || (cJSON_IsNumber(hp) && hp->valuedouble == 0))
                continue;
            if (!cJSON_IsNumber(hp) || hp->valuedouble < 1 || hp->valuedouble > 65535 ||
                hp->valuedouble != (int)hp->valuedouble)
                return nw_err_set(err, NW_EINVAL, pp, "hostPort: must be an integer 1-65535");
            const char *proto = nw_json_str(port, "protocol"), *ip = nw_json_str(port, "hostIP");
            if (proto && strcmp(proto, "TCP") != 0 && strcmp(proto, "UDP") != 0 &&
                strcmp(proto, "SCTP") != 0)
                return nw_err_set(err, NW_EINVAL, pp,
                                  "protocol: Unsupported value: \"%s\": supported values: "
                                  "\"SCTP\", \"TCP\", \"UDP\"",
                                  proto);
            if (ip && strlen(ip) >= sizeof(*out)[0].ip)
                return nw_err_set(err, NW_EINVAL, pp, "hostIP: must be a valid IP address");
            nw_hostport_t *nh = realloc(*out, (size_t)(*n + 1) * sizeof **out);
            if (!nh)
                return nw_err_set(err, NW_ENOMEM, "", "out of memory");
            *out = nh;
            nw_hostport_t *h = &nh[(*n)++];
            memset(h, 0, sizeof *h);
            h->port = (int)hp->valuedouble;
            snprintf(h->proto, sizeof h->proto, "%s", proto ? proto : "TCP");
            if (ip && strcmp(ip, "0.0.0.0") != 0 && strcmp(ip, "::") != 0)
                snprintf(h->ip, sizeof h->ip, "%s", ip);
        }
        ci++;
    }
    return NW_OK;
}

/* Who the pod is: namespace ("default" when it has none), name, key and uid (false: out of
 * memory), its node (`node` when not NULL: an empty one is none), creation time and
 * controlling owner. */
static bool pod_identity(nw_spod_t *p, const nw_pod_t *pod, const char *node)
{
    const char *ns = pod->ns[0] ? pod->ns : "default";
    p->ns = strdup(ns);
    p->name = strdup(pod->name);
    size_t kl = strlen(ns) + strlen(pod->name) + 2;
    p->key = malloc(kl);
    if (p->key)
        snprintf(p->key, kl, "%s/%s", ns, pod->name);
    p->uid = nw_snapshot_dupstr(pod->uid[0] ? pod->uid : p->key);
    if (!p->ns || !p->name || !p->key || !p->uid)
        return false;
    if (!node)
        node = pod->node_name;
    if (*node && !(p->node_name = strdup(node)))
        return false;
    /* whole seconds, as the API server writes them: pods created in one second are ordered
     * by uid */
    p->created = pod->created - pod->created % 1000000000LL;
    const cJSON *o, *owner = NULL;
    cJSON_ArrayForEach(o, pod->owners)
    {
        if (!owner || cJSON_IsTrue(nw_json_get(o, "controller")))
            owner = o;
    }
    if (owner) {
        p->owner_kind = nw_snapshot_dupstr(nw_json_str(owner, "kind"));
        p->owner_name = nw_snapshot_dupstr(nw_json_str(owner, "name"));
    }
    return true;
}

/* topologySpreadConstraints: one topology group and constraint each. */
static NW_MUST_USE nw_rc_t parse_spread(nw_sched_snap_t *s, nw_spod_t *p, const cJSON *spec,
                                        size_t *tccap, nw_err_t *err)
{
    const cJSON *tsc = nw_json_get(spec, "topologySpreadConstraints"), *it;
    int i = 0;
    cJSON_ArrayForEach(it, tsc)
    {
        char pp[128];
        snprintf(pp, sizeof pp, "spec.topologySpreadConstraints[%d]", i++);
        const char *key = nw_json_str(it, "topologyKey");
        const cJSON *ms = nw_json_get(it, "maxSkew"), *md2 = nw_json_get(it, "minDomains");
        if (!cJSON_IsNumber(ms) || ms->valueint < 1)
            return nw_err_set(err, NW_EINVAL, pp, "maxSkew must be an integer >= 1");
        if (!key || !*key)
            return nw_err_set(err, NW_EINVAL, pp, "topologyKey: Required value");
        bool honor[2] = {false, true}; /* nodeTaintsPolicy Ignore, nodeAffinityPolicy Honor */
        const char *pol[2] = {"nodeTaintsPolicy", "nodeAffinityPolicy"};
        for (int k = 0; k < 2; k++) {
            const char *v = nw_json_str(it, pol[k]);
            if (!v)
                continue;
            if (strcmp(v, "Honor") != 0 && strcmp(v, "Ignore") != 0)
                return nw_err_set(err, NW_EINVAL, pp,
                                  "%s: Unsupported value: \"%s\": supported "
                                  "values: \"Honor\", \"Ignore\"",
                                  pol[k], v);
            honor[k] = strcmp(v, "Honor") == 0;
        }
        const char *wu = nw_json_str(it, "whenUnsatisfiable");
        bool anyway = wu && strcmp(wu, "ScheduleAnyway") == 0;
        char sp[160];
        snprintf(sp, sizeof sp, "%s.labelSelector", pp);
        /* matchLabelKeys: the pod's values of those labels join the selector (Karpenter
         * topology.go newForTopologies; keys the pod does not carry are ignored) */
        const cJSON *sel = nw_json_get(it, "labelSelector");
        cJSON *selx = NULL;
        const cJSON *mk;
        cJSON_ArrayForEach(mk, nw_json_get(it, "matchLabelKeys"))
        {
            const char *lv = cJSON_IsString(mk) ? nw_labels_get(p->labels, mk->valuestring) : NULL;
            if (!lv || !sel || !cJSON_IsObject(sel))
                continue;
            if (!selx)
                selx = nw_json_dup(sel);
            cJSON *me = cJSON_GetObjectItemCaseSensitive(selx, "matchExpressions");
            if (!cJSON_IsArray(me))
                me = nw_json_add_array(selx, "matchExpressions");
            cJSON *e = nw_json_new_object();
            nw_json_add_string(e, "key", mk->valuestring);
            nw_json_add_string(e, "operator", "In");
            nw_json_push(nw_json_add_array(e, "values"), nw_json_new_string(lv));
            nw_json_push(me, e);
        }
        gspec_t gs = {.kind = NW_TG_SPREAD,
                      .key = nw_wellknown_normalize(key),
                      .skew = ms->valueint,
                      .min_domains = cJSON_IsNumber(md2) && !anyway ? md2->valueint : 0,
                      .taints_honor = honor[0],
                      .affinity_honor = honor[1],
                      .cls = p->cls};
        int g = group_get(s, &gs, selx ? selx : sel, sp, p->ns, NULL, NULL, err);
        cJSON_Delete(selx);
        if (g < 0)
            return NW_EINVAL;
        if (add_tc(p, g, anyway, 1, tccap) != NW_OK)
            return nw_err_set(err, NW_ENOMEM, "", "out of memory");
    }
    return NW_OK;
}

/* Where the pod stands: terminating, finished, unschedulable, and whether provisioning is
 * for it (not bound, nominated, DaemonSet or mirror, terminating or finished). A pod put
 * back as pending (`again`) is Pending and unschedulable whatever its status says. */
static void pod_state(const nw_sched_snap_t *s, nw_spod_t *p, const nw_pod_t *pod, bool again)
{
    p->terminating = pod->terminating;
    p->finished = !again && nw_pod_is_terminal(pod);
    bool nominated = !again && pod->nominated[0];
    p->unschedulable_cond = again;
    for (int i = 0; i < pod->nconds && !again; i++) {
        const nw_pod_cond_t *c = &pod->conds[i];
        if (strcmp(c->type, "PodScheduled") == 0 && c->status == NW_POD_COND_FALSE &&
            strcmp(c->reason, "Unschedulable") == 0)
            p->unschedulable_cond = true;
    }
    bool ds = p->owner_kind && strcmp(p->owner_kind, "DaemonSet") == 0;
    bool mirror = p->owner_kind && strcmp(p->owner_kind, "Node") == 0;
    p->provisionable_state = !p->node_name && !nominated && !ds && !mirror && !p->terminating &&
                             !p->finished && !is_nominated(s, p->uid);
}

/* ---- what a pod's spec gives, once per shared spec --------------------------- */

/* The pod's topology constraints: its spread constraints, then pod affinity and
 * anti-affinity terms (their groups found or added). */
static NW_MUST_USE nw_rc_t pod_constraints(nw_sched_snap_t *s, nw_spod_t *p, const cJSON *spec,
                                           nw_err_t *err)
{
    size_t tccap = 0;
    nw_rc_t rc = parse_spread(s, p, spec, &tccap, err);
    const cJSON *aff = nw_json_get(spec, "affinity");
    if (rc == NW_OK && aff)
        rc = parse_affinity_terms(s, p, nw_json_get(aff, "podAffinity"), NW_TG_AFFINITY,
                                  "spec.affinity.podAffinity", &tccap, err);
    if (rc == NW_OK && aff)
        rc = parse_affinity_terms(s, p, nw_json_get(aff, "podAntiAffinity"), NW_TG_ANTI,
                                  "spec.affinity.podAntiAffinity", &tccap, err);
    return rc;
}

static bool wants_accel(const nw_sched_snap_t *s, const nw_sched_res_t *req)
{
    bool accel = false;
    for (int k = NW_SR_NVIDIA_GPU; k <= NW_SR_GAUDI; k++)
        accel |= req->v[k] > 0;
    for (int k = NW_SR_FIXED; k < s->nres; k++) /* a MIG slice is an accelerator too */
        accel |= req->v[k] > 0 && nw_mig_is_resource(s->res_names[k]);
    return accel;
}

/* Everything the spec gives the pod, derived from the spec (the JSON path: host ports from
 * raw, the pod's spec as given, when not NULL). */
static NW_MUST_USE nw_rc_t derive(nw_sched_snap_t *s, nw_spod_t *p, const cJSON *spec,
                                  const cJSON *req_spec, const cJSON *raw, bool *accel,
                                  nw_err_t *err)
{
    nw_rc_t rc = nw_snapshot_pod_requests(s, req_spec, "spec", &p->req, err);
    if (rc != NW_OK)
        return rc;
    *accel = wants_accel(s, &p->req);
    if ((p->cls = nw_snap_class_get(s, spec, p->ns, p->name, *accel, err)) < 0)
        return NW_EINVAL;
    rc = nw_snap_pod_parse_hostports(raw ? raw : spec, "spec", &p->hostports, &p->nhostports, err);
    if (rc != NW_OK)
        return rc;
    if (nw_snap_volume_pod_volumes(s, spec, p->ns, p->name, &p->vols, &p->nvols) != NW_OK)
        return nw_err_set(err, NW_ENOMEM, "", "out of memory");
    return pod_constraints(s, p, spec, err);
}

static size_t ptr_slot(const void *key, size_t cap)
{
    uint64_t x = (uint64_t)(uintptr_t)key;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (size_t)x & (cap - 1);
}

/* The index stored for key, or -1. */
static int ptrmap_get(const nw_ptrmap_t *m, const void *key)
{
    if (!m->slots)
        return -1;
    for (size_t i = ptr_slot(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (!m->slots[i].key)
            return -1;
        if (m->slots[i].key == key)
            return m->slots[i].val;
    }
}

static void ptrmap_place(nw_ptrslot_t *slots, size_t cap, const void *key, int val)
{
    size_t i = ptr_slot(key, cap);
    while (slots[i].key)
        i = (i + 1) & (cap - 1);
    slots[i] = (nw_ptrslot_t){.key = key, .val = val};
}

/* Store key (not there yet) -> val, the table rebuilt twice as large when it would be over
 * half full. false: out of memory. */
static bool ptrmap_put(nw_ptrmap_t *m, const void *key, int val)
{
    if ((m->n + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        nw_ptrslot_t *slots = calloc(cap, sizeof *slots);
        if (!slots)
            return false;
        for (size_t i = 0; i < m->cap; i++)
            if (m->slots[i].key)
                ptrmap_place(slots, cap, m->slots[i].key, m->slots[i].val);
        free(m->slots);
        m->slots = slots;
        m->cap = cap;
    }
    ptrmap_place(m->slots, m->cap, key, val);
    m->n++;
    return true;
}

/* Keep only the entries of m whose index is below n (the rest were dropped by a rewind).
 * false: out of memory (m unchanged). */
static bool ptrmap_keep_below(nw_ptrmap_t *m, size_t n)
{
    if (!m->slots)
        return true;
    nw_ptrslot_t *slots = calloc(m->cap, sizeof *slots);
    if (!slots)
        return false;
    size_t k = 0;
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].key && (size_t)m->slots[i].val < n) {
            ptrmap_place(slots, m->cap, m->slots[i].key, m->slots[i].val);
            k++;
        }
    free(m->slots);
    m->slots = slots;
    m->n = k;
    return true;
}

bool nw_snap_pod_maps_trim(nw_sched_snap_t *s)
{
    return ptrmap_keep_below(&s->spec_map, s->nspecs) &&
           ptrmap_keep_below(&s->labels_map, s->nlsets);
}

static nw_sspec_t *spec_find(const nw_sched_snap_t *s, const cJSON *spec)
{
    int k = ptrmap_get(&s->spec_map, spec);
    return k < 0 ? NULL : &s->specs[k];
}

/* The label set of the pods holding this shared labels object (parsed by the first). */
static NW_MUST_USE nw_rc_t labels_of(nw_sched_snap_t *s, const cJSON *labels,
                                     const nw_labels_t **out, nw_err_t *err)
{
    int k = ptrmap_get(&s->labels_map, labels);
    if (k >= 0) {
        *out = s->lsets[k];
        return NW_OK;
    }
    nw_labels_t **v = nw_snapshot_grow(s->lsets, &s->clsets, s->nlsets, sizeof *v);
    nw_labels_t *l = v ? malloc(sizeof *l) : NULL;
    if (!l)
        return nw_err_set(err, NW_ENOMEM, "", "out of memory");
    s->lsets = v;
    nw_rc_t rc = nw_labels_parse(labels, "metadata.labels", l, err);
    if (rc == NW_OK && !ptrmap_put(&s->labels_map, labels, (int)s->nlsets))
        rc = nw_err_set(err, NW_ENOMEM, "", "out of memory");
    if (rc != NW_OK) {
        nw_labels_cleanup(l);
        free(l);
        return rc;
    }
    s->lsets[s->nlsets++] = l;
    *out = l;
    return NW_OK;
}

static void *copy_of(const void *v, size_t n)
{
    void *c = n ? malloc(n) : NULL;
    if (c)
        memcpy(c, v, n);
    return c;
}

/* Remember pod p's topology constraints for the pods of its namespace (and labels). */
static NW_MUST_USE nw_rc_t tcs_remember(nw_sspec_t *e, const nw_spod_t *p, const nw_pod_t *pod)
{
    nw_sspec_tcs_t *v = nw_snapshot_grow(e->tcs, &e->ctcs, e->ntcs, sizeof *v);
    if (!v)
        return NW_ENOMEM;
    e->tcs = v;
    nw_sspec_tcs_t t = {.ns = strdup(p->ns),
                        .labels = e->by_labels ? pod->labels : NULL,
                        .tcs = copy_of(p->tcs, (size_t)p->ntcs * sizeof *p->tcs),
                        .ntcs = p->ntcs};
    if (!t.ns || (p->ntcs && !t.tcs)) {
        free(t.ns);
        free(t.tcs);
        return NW_ENOMEM;
    }
    e->tcs[e->ntcs++] = t;
    return NW_OK;
}

static bool spread_by_labels(const cJSON *spec)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, nw_json_get(spec, "topologySpreadConstraints"))
    {
        if (cJSON_GetArraySize(nw_json_get(c, "matchLabelKeys")) > 0)
            return true;
    }
    return false;
}

/* Keep what pod p, just derived, took from its record's spec for the next pods with it. */
static NW_MUST_USE nw_rc_t spec_remember(nw_sched_snap_t *s, const nw_spod_t *p,
                                         const nw_pod_t *pod, bool accel)
{
    nw_sspec_t *v = nw_snapshot_grow(s->specs, &s->cspecs, s->nspecs, sizeof *v);
    if (!v)
        return NW_ENOMEM;
    s->specs = v;
    nw_sspec_t e = {
        .spec = pod->spec,
        .req = p->req,
        .accel = accel,
        .per_pod = cJSON_GetArraySize(nw_json_get(pod->spec, "volumes")) > 0,
        .by_labels = spread_by_labels(pod->spec),
        .cls = p->cls,
        .hostports = copy_of(p->hostports, (size_t)p->nhostports * sizeof *p->hostports),
        .nhostports = p->nhostports,
    };
    if ((p->nhostports && !e.hostports) || (!e.per_pod && tcs_remember(&e, p, pod) != NW_OK)) {
        nw_snapshot_spec_free(&e);
        return NW_ENOMEM;
    }
    if (!ptrmap_put(&s->spec_map, e.spec, (int)s->nspecs)) {
        nw_snapshot_spec_free(&e);
        return NW_ENOMEM;
    }
    s->specs[s->nspecs++] = e;
    return NW_OK;
}

/* The pod's topology constraints from entry e: those remembered for its namespace (and
 * labels), else derived and remembered. */
static NW_MUST_USE nw_rc_t tcs_from(nw_sched_snap_t *s, nw_sspec_t *e, nw_spod_t *p,
                                    const nw_pod_t *pod, nw_err_t *err)
{
    for (size_t i = 0; i < e->ntcs; i++) {
        const nw_sspec_tcs_t *t = &e->tcs[i];
        if (strcmp(t->ns, p->ns) != 0 || (e->by_labels && t->labels != pod->labels))
            continue;
        p->tcs = copy_of(t->tcs, (size_t)t->ntcs * sizeof *t->tcs);
        p->ntcs = t->ntcs;
        return !t->ntcs || p->tcs ? NW_OK : nw_err_set(err, NW_ENOMEM, "", "out of memory");
    }
    nw_rc_t rc = pod_constraints(s, p, pod->spec, err);
    if (rc == NW_OK && tcs_remember(e, p, pod) != NW_OK)
        rc = nw_err_set(err, NW_ENOMEM, "", "out of memory");
    return rc;
}

/* What the spec gives the pod, from the entry an earlier pod with the same spec left
 * (raw: as derive). The spec parsed for that pod, so only memory can fail here, and the
 * host ports of a pod given as JSON (raw: read there, as the JSON always was). */
static NW_MUST_USE nw_rc_t from_spec(nw_sched_snap_t *s, nw_sspec_t *e, nw_spod_t *p,
                                     const nw_pod_t *pod, const cJSON *raw, nw_err_t *err)
{
    p->req = e->req;
    p->cls = e->per_pod ? nw_snap_class_get(s, pod->spec, p->ns, p->name, e->accel, err) : e->cls;
    if (p->cls < 0)
        return NW_EINVAL;
    nw_rc_t rc = NW_OK;
    if (raw)
        rc = nw_snap_pod_parse_hostports(raw, "spec", &p->hostports, &p->nhostports, err);
    else if (e->nhostports &&
             (p->hostports = copy_of(e->hostports, (size_t)e->nhostports * sizeof *e->hostports)))
        p->nhostports = e->nhostports;
    else if (e->nhostports)
        rc = nw_err_set(err, NW_ENOMEM, "", "out of memory");
    if (rc != NW_OK || !e->per_pod)
        return rc == NW_OK ? tcs_from(s, e, p, pod, err) : rc;
    if (nw_snap_volume_pod_volumes(s, pod->spec, p->ns, p->name, &p->vols, &p->nvols) != NW_OK)
        return nw_err_set(err, NW_ENOMEM, "", "out of memory");
    return pod_constraints(s, p, pod->spec, err);
}

/* ---- pods -------------------------------------------------------------------- */

/* Add a pod from its record, moved as `as` says (NULL: where it is). raw: the pod's spec as
 * given to nw_snap_pod_add_json (NULL for a record): host ports are read there (errors name
 * the port as written), and when it has pod-level requests (spec.resources) its requests
 * too, without the shared entry (so an error names the field as given). */
static NW_MUST_USE nw_rc_t add_record(nw_sched_snap_t *s, const nw_pod_t *pod,
                                      const nw_sched_pod_as_t *as, const cJSON *raw, nw_err_t *err)
{
    bool own_req = raw && nw_json_get(raw, "resources");
    nw_spod_t p = {0};
    nw_rc_t rc = NW_ENOMEM;
    if (!pod_identity(&p, pod, as && as->node ? as->node : as && as->pending ? "" : NULL))
        goto fail_nomem;
    if ((rc = labels_of(s, pod->labels, &p.labels, err)) != NW_OK)
        goto fail;
    nw_sspec_t *e = own_req ? NULL : spec_find(s, pod->spec);
    if (e) {
        if ((rc = from_spec(s, e, &p, pod, raw, err)) != NW_OK)
            goto fail;
    } else {
        bool accel = false;
        if ((rc = derive(s, &p, pod->spec, own_req ? raw : pod->spec, raw, &accel, err)) != NW_OK)
            goto fail;
        if (!own_req && spec_remember(s, &p, pod, accel) != NW_OK)
            goto fail_nomem;
    }
    pod_state(s, &p, pod, as && as->pending);
    if (as && as->prefer && !as->node && !p.node_name && !(p.prefer = strdup(as->prefer)))
        goto fail_nomem;
    /* grown without zeroing the spare room (nw_snapshot_grow does): each pod is written
     * whole, and untouched room costs no page */
    if (s->npods == s->cpods) {
        size_t cap = s->cpods ? 2 * s->cpods : 64;
        nw_spod_t *np = realloc(s->pods, cap * sizeof *np);
        if (!np)
            goto fail_nomem;
        s->pods = np;
        s->cpods = cap;
    }
    s->pods[s->npods++] = p;
    return NW_OK;
fail_nomem:
    rc = nw_err_set(err, NW_ENOMEM, "", "out of memory");
fail:
    nw_snapshot_pod_free(&p);
    return rc;
}

nw_rc_t nw_snap_pod_add(nw_sched_snap_t *s, const nw_pod_t *pod, nw_err_t *err)
{
    return add_record(s, pod, NULL, NULL, err);
}

nw_rc_t nw_snap_pod_add_as(nw_sched_snap_t *s, const nw_pod_t *pod, const nw_sched_pod_as_t *as,
                           nw_err_t *err)
{
    return add_record(s, pod, as, NULL, err);
}

nw_rc_t nw_snap_pod_add_json(nw_sched_snap_t *s, const cJSON *pod, nw_err_t *err)
{
    return nw_snap_pod_add_json_as(s, pod, NULL, err);
}

nw_rc_t nw_snap_pod_add_json_as(nw_sched_snap_t *s, const cJSON *pod, const nw_sched_pod_as_t *as,
                                nw_err_t *err)
{
    if (!cJSON_IsObject(pod))
        return nw_err_set(err, NW_EINVAL, "", "pod must be an object");
    const cJSON *md = nw_json_get(pod, "metadata"), *spec = nw_json_get(pod, "spec");
    const char *name = nw_json_str(md, "name");
    if (!name || !*name)
        return nw_err_set(err, NW_EINVAL, "metadata.name", "Required value");
    if (!cJSON_IsObject(spec))
        return nw_err_set(err, NW_EINVAL, "spec", "Required value");
    /* labels that are not an object: the record would hold none */
    const cJSON *labels = nw_json_get(md, "labels");
    if (labels && !cJSON_IsObject(labels)) {
        nw_labels_t l;
        nw_rc_t rc = nw_labels_parse(labels, "metadata.labels", &l, err);
        nw_labels_cleanup(&l);
        return rc;
    }
    if (!s->intern && !(s->intern = nw_jsonintern_new()))
        return nw_err_set(err, NW_ENOMEM, "", "out of memory");
    nw_pod_t **v = nw_snapshot_grow(s->recs, &s->crecs, s->nrecs, sizeof *v);
    if (!v)
        return nw_err_set(err, NW_ENOMEM, "", "out of memory");
    s->recs = v;
    nw_rc_t rc = nw_pod_decode(pod, s->intern, &s->recs[s->nrecs], err);
    if (rc != NW_OK)
        return rc;
    /* kept until the snapshot is freed: its shared spec and labels are keys (above) */
    const nw_pod_t *rec = s->recs[s->nrecs++];
    return add_record(s, rec, as, spec, err);
}

nw_rc_t nw_snap_pod_add_namespace_json(nw_sched_snap_t *s, const cJSON *ns, nw_err_t *err)
{
    const cJSON *md = nw_json_get(ns, "metadata");
    const char *name = nw_json_str(md, "name");
    if (!name)
        return nw_err_set(err, NW_EINVAL, "metadata.name", "Required value");
    nw_sns_t n = {.name = strdup(name)};
    nw_labels_init(&n.labels);
    nw_rc_t rc = n.name
                     ? nw_labels_parse(nw_json_get(md, "labels"), "metadata.labels", &n.labels, err)
                     : nw_err_set(err, NW_ENOMEM, "", "out of memory");
    nw_sns_t *nn = rc == NW_OK ? nw_snapshot_grow(s->nss, &s->cnss, s->nnss, sizeof *nn) : NULL;
    if (!nn) {
        free(n.name);
        nw_labels_cleanup(&n.labels);
        return rc != NW_OK ? rc : nw_err_set(err, NW_ENOMEM, "", "out of memory");
    }
    s->nss = nn;
    s->nss[s->nnss++] = n;
    return NW_OK;
}
