/* api/pod.c — a Pod's typed record, decoded once (see pod.h). */
#include "api/pod.h"

#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/json.h"

/* spec members kept as they are (the scheduling and eviction inputs) */
static const char *const spec_keep[] = {
    "nodeSelector",     "affinity",
    "tolerations",      "topologySpreadConstraints",
    "priority",         "priorityClassName",
    "preemptionPolicy", "schedulerName",
    "runtimeClassName", "terminationGracePeriodSeconds",
    "overhead",         "resourceClaims",
    "hostNetwork",      "resources", /* pod-level requests and limits (Kubernetes 1.34+) */
};

/* container members kept */
static const char *const container_keep[] = {"name", "resources", "restartPolicy"};

/* annotations never kept: large, and read by no controller */
static const char *const annotation_drop[] = {
    "kubectl.kubernetes.io/last-applied-configuration",
};

static cJSON *dup_or_null(const cJSON *v)
{
    return v ? cJSON_Duplicate(v, 1) : NULL;
}

/* Add a duplicate of src[key] to dst when present. false on OOM. */
static bool keep(cJSON *dst, const cJSON *src, const char *key)
{
    const cJSON *v = nw_json_get(src, key);
    if (!v)
        return true;
    cJSON *d = cJSON_Duplicate(v, 1);
    return d && cJSON_AddItemToObject(dst, key, d);
}

/* A container reduced to what scheduling reads: resources, restartPolicy (sidecars), and
 * the ports that take a host port. */
static cJSON *slim_container(const cJSON *c)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    for (size_t i = 0; i < sizeof container_keep / sizeof *container_keep; i++)
        if (!keep(o, c, container_keep[i]))
            goto oom;
    const cJSON *port;
    cJSON *ports = NULL;
    cJSON_ArrayForEach(port, nw_json_get(c, "ports"))
    {
        const cJSON *hp = nw_json_get(port, "hostPort");
        if (!cJSON_IsNumber(hp) || hp->valuedouble == 0)
            continue;
        if (!ports && !(ports = cJSON_AddArrayToObject(o, "ports")))
            goto oom;
        cJSON *d = cJSON_Duplicate(port, 1);
        if (!d || !cJSON_AddItemToArray(ports, d)) {
            cJSON_Delete(d);
            goto oom;
        }
    }
    return o;
oom:
    cJSON_Delete(o);
    return NULL;
}

static bool slim_containers(cJSON *dst, const cJSON *spec, const char *key)
{
    const cJSON *cs = nw_json_get(spec, key);
    if (!cJSON_IsArray(cs))
        return keep(dst, spec, key); /* malformed: kept as is, the readers report it */
    cJSON *a = cJSON_AddArrayToObject(dst, key);
    if (!a)
        return false;
    const cJSON *c;
    cJSON_ArrayForEach(c, cs)
    {
        cJSON *s = cJSON_IsObject(c) ? slim_container(c) : cJSON_Duplicate(c, 1);
        if (!s || !cJSON_AddItemToArray(a, s)) {
            cJSON_Delete(s);
            return false;
        }
    }
    return true;
}

/* The volumes that are claims: a projected service-account volume has a random name per
 * pod and would keep replicas from sharing their spec. */
static bool slim_volumes(cJSON *dst, const cJSON *spec)
{
    const cJSON *v;
    cJSON *a = NULL;
    cJSON_ArrayForEach(v, nw_json_get(spec, "volumes"))
    {
        if (!nw_json_get(v, "persistentVolumeClaim") && !nw_json_get(v, "ephemeral"))
            continue;
        if (!a && !(a = cJSON_AddArrayToObject(dst, "volumes")))
            return false;
        cJSON *d = cJSON_Duplicate(v, 1);
        if (!d || !cJSON_AddItemToArray(a, d)) {
            cJSON_Delete(d);
            return false;
        }
    }
    return true;
}

/* A DaemonSet pod's required node affinity without the term the DaemonSet controller
 * adds to pin it to its node (matchFields metadata.name In [node]): what is left is its
 * DaemonSet's own, so the DaemonSet's pods share one spec. Its node is node_name. */
static void drop_node_pin(cJSON *spec)
{
    cJSON *na = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(spec, "affinity"),
                                                 "nodeAffinity");
    cJSON *req =
        cJSON_GetObjectItemCaseSensitive(na, "requiredDuringSchedulingIgnoredDuringExecution");
    cJSON *terms = cJSON_GetObjectItemCaseSensitive(req, "nodeSelectorTerms");
    if (!cJSON_IsArray(terms))
        return;
    for (int i = cJSON_GetArraySize(terms) - 1; i >= 0; i--) {
        cJSON *t = cJSON_GetArrayItem(terms, i);
        cJSON_DeleteItemFromObjectCaseSensitive(t, "matchFields");
        if (cJSON_IsObject(t) && !t->child)
            cJSON_DeleteItemFromArray(terms, i);
    }
    if (!cJSON_GetArraySize(terms))
        cJSON_DeleteItemFromObjectCaseSensitive(na,
                                                "requiredDuringSchedulingIgnoredDuringExecution");
}

static cJSON *slim_spec(const cJSON *spec, bool daemon)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    for (size_t i = 0; i < sizeof spec_keep / sizeof *spec_keep; i++)
        if (!keep(o, spec, spec_keep[i]))
            goto oom;
    if (!slim_containers(o, spec, "containers") || !slim_containers(o, spec, "initContainers") ||
        !slim_volumes(o, spec))
        goto oom;
    if (daemon)
        drop_node_pin(o);
    return o;
oom:
    cJSON_Delete(o);
    return NULL;
}

static cJSON *slim_annotations(const cJSON *a)
{
    cJSON *o = cJSON_IsObject(a) ? cJSON_Duplicate(a, 1) : cJSON_CreateObject();
    for (size_t i = 0; o && i < sizeof annotation_drop / sizeof *annotation_drop; i++)
        cJSON_DeleteItemFromObjectCaseSensitive(o, annotation_drop[i]);
    return o;
}

static int64_t time_of(const cJSON *o, const char *key)
{
    int64_t t = 0;
    const char *s = nw_json_str(o, key);
    if (!s || nw_clock_time_parse(s, &t) != NW_OK)
        return 0;
    return t;
}

static nw_pod_phase_t phase_of(const char *s)
{
    if (!s)
        return NW_POD_PHASE_NONE;
    if (!strcmp(s, "Pending"))
        return NW_POD_PENDING;
    if (!strcmp(s, "Running"))
        return NW_POD_RUNNING;
    if (!strcmp(s, "Succeeded"))
        return NW_POD_SUCCEEDED;
    if (!strcmp(s, "Failed"))
        return NW_POD_FAILED;
    return NW_POD_PHASE_NONE;
}

static nw_pod_cond_status_t cond_status_of(const char *s)
{
    if (!s)
        return NW_POD_COND_UNKNOWN;
    if (!strcmp(s, "True"))
        return NW_POD_COND_TRUE;
    if (!strcmp(s, "False"))
        return NW_POD_COND_FALSE;
    return NW_POD_COND_UNKNOWN;
}

/* the strings a record copies, in order (the name is not one: it is the key's tail) */
enum { S_NS, S_NAME, S_UID, S_RV, S_NODE, S_NOM, S_REASON, S_PHASE, S_N };

/* Values most pods share, pointed to rather than copied into each record: the phases, the
 * kubelet's and the scheduler's condition types, and the reasons they give. */
static const char *const shared_words[] = {
    "Pending",
    "Running",
    "Succeeded",
    "Failed",
    "PodScheduled",
    "Initialized",
    "ContainersReady",
    "Ready",
    "PodReadyToStartContainers",
    "DisruptionTarget",
    "Unschedulable",
    "PodCompleted",
    "ContainersNotReady",
    "",
};

/* The shared copy of s, or NULL when s is none of them. */
static const char *shared_word(const char *s)
{
    if (!s)
        return NULL;
    for (size_t i = 0; i < sizeof shared_words / sizeof *shared_words; i++)
        if (strcmp(s, shared_words[i]) == 0)
            return shared_words[i];
    return NULL;
}

static size_t slen(const char *s)
{
    return s ? strlen(s) + 1 : 1;
}

/* The bytes a copy of s takes in a record: none for a shared word (or NULL: ""). */
static size_t wlen(const char *s)
{
    return !s || shared_word(s) ? 0 : strlen(s) + 1;
}

/* The shared word s, else a copy of s at *at (advanced). NULL: "". */
static const char *put_word(char **at, const char *s)
{
    const char *w = s ? shared_word(s) : "";
    if (w)
        return w;
    char *d = *at;
    size_t n = strlen(s) + 1;
    memcpy(d, s, n);
    *at += n;
    return d;
}

/* Copy s (NULL: "") to *at and advance it. */
static const char *put(char **at, const char *s)
{
    char *d = *at;
    size_t n = slen(s);
    if (s)
        memcpy(d, s, n);
    else
        d[0] = '\0';
    *at += n;
    return d;
}

/* One allocation: the record, its conditions, then its strings. */
static nw_pod_t *alloc_record(const cJSON *pod, const char *const *str, const cJSON *conds,
                              int *nconds)
{
    size_t bytes = 0;
    for (int i = 0; i < S_N; i++)
        if (i != S_NAME && i != S_REASON && i != S_PHASE)
            bytes += slen(str[i]);
    bytes += wlen(str[S_REASON]) + wlen(str[S_PHASE]);
    bytes += slen(str[S_NS]) + slen(str[S_NAME]); /* the key, whose tail is the name */
    int n = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, conds)
    {
        if (!nw_json_str(c, "type"))
            continue;
        n++;
        bytes += wlen(nw_json_str(c, "type")) + wlen(nw_json_str(c, "reason"));
    }
    (void)pod;
    size_t head = sizeof(nw_pod_t) + (size_t)n * sizeof(nw_pod_cond_t);
    nw_pod_t *p = calloc(1, head + bytes);
    if (p)
        p->conds = n ? (nw_pod_cond_t *)(p + 1) : NULL;
    *nconds = n;
    return p;
}

#define FNV_OFFSET 1469598103934665603ULL

/* FNV-1a of s (NULL: 0) continued from h */
static uint64_t fnv1a(const char *s, uint64_t h)
{
    if (!s)
        return 0;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static void fill_strings(nw_pod_t *p, const char *const *str, const cJSON *conds, int nconds)
{
    char *at = (char *)(p + 1) + (size_t)nconds * sizeof(nw_pod_cond_t);
    p->ns = put(&at, str[S_NS]);
    p->uid = put(&at, str[S_UID]);
    p->rv = put(&at, str[S_RV]);
    p->node_name = put(&at, str[S_NODE]);
    p->nominated = put(&at, str[S_NOM]);
    p->reason = put_word(&at, str[S_REASON]);
    p->phase_name = put_word(&at, str[S_PHASE]);
    char *key = at;
    if (p->ns[0]) {
        size_t a = strlen(p->ns), b = strlen(str[S_NAME]);
        memcpy(key, p->ns, a);
        key[a] = '/';
        memcpy(key + a + 1, str[S_NAME], b + 1);
        at += a + b + 2;
        p->name = key + a + 1;
    } else {
        p->name = put(&at, str[S_NAME]);
    }
    p->key = key;
    const cJSON *c;
    cJSON_ArrayForEach(c, conds)
    {
        const char *type = nw_json_str(c, "type");
        if (!type)
            continue;
        nw_pod_cond_t *d = &p->conds[p->nconds++];
        d->type = put_word(&at, type);
        d->reason = put_word(&at, nw_json_str(c, "reason"));
        d->status = cond_status_of(nw_json_str(c, "status"));
        d->since = time_of(c, "lastTransitionTime");
        d->message_hash = fnv1a(nw_json_str(c, "message"), FNV_OFFSET);
    }
}

static bool share(nw_pod_t *p, nw_jsonintern_ref_t **ref, const cJSON **out, cJSON *value)
{
    *ref = nw_jsonintern_take(p->in_, value);
    *out = nw_jsonintern_json(*ref);
    return *ref != NULL;
}

nw_rc_t nw_pod_decode(const cJSON *pod, nw_jsonintern_t *in, nw_pod_t **out, nw_err_t *err)
{
    *out = NULL;
    const cJSON *meta = nw_json_get(pod, "metadata"), *spec = nw_json_get(pod, "spec"),
                *status = nw_json_get(pod, "status");
    const char *name = nw_json_str(meta, "name");
    if (!name || !*name)
        return nw_err_set(err, NW_EINVAL, "metadata.name", "a pod needs a name");
    const char *str[S_N] = {
        [S_NS] = nw_json_str(meta, "namespace"),
        [S_NAME] = name,
        [S_UID] = nw_json_str(meta, "uid"),
        [S_RV] = nw_json_str(meta, "resourceVersion"),
        [S_NODE] = nw_json_str(spec, "nodeName"),
        [S_NOM] = nw_json_str(status, "nominatedNodeName"),
        [S_REASON] = nw_json_str(status, "reason"),
        [S_PHASE] = nw_json_str(status, "phase"),
    };
    const cJSON *conds = nw_json_get(status, "conditions");
    int nconds = 0;
    nw_pod_t *p = alloc_record(pod, str, conds, &nconds);
    if (!p)
        return nw_err_set(err, NW_ENOMEM, "metadata.name", "pod %s: out of memory", name);
    fill_strings(p, str, conds, nconds);
    p->in_ = in;
    p->phase = phase_of(str[S_PHASE]);
    p->created = time_of(meta, "creationTimestamp");
    p->terminating = nw_json_get(meta, "deletionTimestamp") != NULL;
    p->deleted = time_of(meta, "deletionTimestamp");
    p->started = time_of(status, "startTime");
    const cJSON *labels = nw_json_get(meta, "labels"),
                *owners = nw_json_get(meta, "ownerReferences");
    if (!share(p, &p->labels_, &p->labels,
               cJSON_IsObject(labels) ? dup_or_null(labels) : cJSON_CreateObject()) ||
        !share(p, &p->annotations_, &p->annotations,
               slim_annotations(nw_json_get(meta, "annotations"))) ||
        !share(p, &p->owners_, &p->owners,
               cJSON_IsArray(owners) ? dup_or_null(owners) : cJSON_CreateArray()) ||
        !share(p, &p->spec_, &p->spec, slim_spec(spec, nw_pod_owned_by(p, "DaemonSet")))) {
        nw_pod_free(p);
        return nw_err_set(err, NW_ENOMEM, "metadata.name", "pod %s: out of memory", name);
    }
    const cJSON *pr = nw_json_get(p->spec, "priority");
    if (cJSON_IsNumber(pr)) {
        p->has_priority = true;
        p->priority = (int32_t)pr->valuedouble;
    }
    p->pending = nw_pod_is_pending(p);
    *out = p;
    return NW_OK;
}

void nw_pod_free(nw_pod_t *p)
{
    if (!p)
        return;
    nw_jsonintern_release(p->in_, p->labels_);
    nw_jsonintern_release(p->in_, p->annotations_);
    nw_jsonintern_release(p->in_, p->owners_);
    nw_jsonintern_release(p->in_, p->spec_);
    free(p);
}

const char *nw_pod_label(const nw_pod_t *p, const char *key)
{
    return nw_json_str(p->labels, key);
}

const char *nw_pod_annotation(const nw_pod_t *p, const char *key)
{
    return nw_json_str(p->annotations, key);
}

const nw_pod_cond_t *nw_pod_condition(const nw_pod_t *p, const char *type)
{
    for (int i = 0; i < p->nconds; i++)
        if (!strcmp(p->conds[i].type, type))
            return &p->conds[i];
    return NULL;
}

bool nw_pod_owned_by(const nw_pod_t *p, const char *kind)
{
    const cJSON *r;
    cJSON_ArrayForEach(r, p->owners)
    {
        const char *k = nw_json_str(r, "kind");
        if (k && !strcmp(k, kind))
            return true;
    }
    return false;
}

bool nw_pod_owned_by_api(const nw_pod_t *p, const char *api_version, const char *kind)
{
    const cJSON *r;
    cJSON_ArrayForEach(r, p->owners)
    {
        const char *k = nw_json_str(r, "kind"), *av = nw_json_str(r, "apiVersion");
        if (k && av && !strcmp(k, kind) && !strcmp(av, api_version))
            return true;
    }
    return false;
}

const cJSON *nw_pod_controller(const nw_pod_t *p)
{
    const cJSON *r;
    cJSON_ArrayForEach(r, p->owners)
    {
        if (cJSON_IsTrue(nw_json_get(r, "controller")))
            return r;
    }
    return cJSON_GetArrayItem(p->owners, 0);
}

bool nw_pod_is_terminal(const nw_pod_t *p)
{
    return p->phase == NW_POD_SUCCEEDED || p->phase == NW_POD_FAILED;
}

bool nw_pod_is_pending(const nw_pod_t *p)
{
    if (p->node_name[0] || p->nominated[0] || nw_pod_is_terminal(p) || p->terminating)
        return false;
    const nw_pod_cond_t *c = nw_pod_condition(p, "PodScheduled");
    return c && c->status == NW_POD_COND_FALSE && !strcmp(c->reason, "Unschedulable");
}

uint64_t nw_pod_scheduled_mark(const nw_pod_t *p)
{
    const nw_pod_cond_t *c = nw_pod_condition(p, "PodScheduled");
    if (!c)
        return 0;
    uint64_t h = fnv1a(c->reason, FNV_OFFSET ^ (uint64_t)c->status);
    h = (h ^ (uint64_t)c->since) * 1099511628211ULL;
    h = (h ^ c->message_hash) * 1099511628211ULL;
    return h ? h : 1;
}

static void add_time(cJSON *o, const char *key, int64_t t)
{
    char buf[40];
    if (t && nw_clock_time_format(t, buf, sizeof buf))
        nw_json_add_string(o, key, buf);
}

static void add_nonempty(cJSON *o, const char *key, const char *s)
{
    if (s && *s)
        nw_json_add_string(o, key, s);
}

cJSON *nw_pod_to_json(const nw_pod_t *p)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    nw_json_add_string(o, "apiVersion", "v1");
    nw_json_add_string(o, "kind", "Pod");
    cJSON *m = nw_json_add_object(o, "metadata");
    nw_json_add_string(m, "name", p->name);
    add_nonempty(m, "namespace", p->ns);
    add_nonempty(m, "uid", p->uid);
    add_nonempty(m, "resourceVersion", p->rv);
    add_time(m, "creationTimestamp", p->created);
    if (p->terminating)
        add_time(m, "deletionTimestamp", p->deleted ? p->deleted : 1);
    if (p->labels->child)
        nw_json_add_item(m, "labels", nw_json_dup(p->labels));
    if (p->annotations->child)
        nw_json_add_item(m, "annotations", nw_json_dup(p->annotations));
    if (p->owners->child)
        nw_json_add_item(m, "ownerReferences", nw_json_dup(p->owners));
    cJSON *spec = nw_json_dup(p->spec);
    add_nonempty(spec, "nodeName", p->node_name);
    nw_json_add_item(o, "spec", spec);
    cJSON *st = nw_json_add_object(o, "status");
    add_nonempty(st, "phase", p->phase_name);
    add_nonempty(st, "reason", p->reason);
    add_nonempty(st, "nominatedNodeName", p->nominated);
    add_time(st, "startTime", p->started);
    if (p->nconds) {
        cJSON *cs = nw_json_add_array(st, "conditions");
        for (int i = 0; i < p->nconds; i++) {
            cJSON *c = cJSON_CreateObject();
            nw_json_push(cs, c);
            nw_json_add_string(c, "type", p->conds[i].type);
            static const char *const st_names[] = {"", "True", "False", "Unknown"};
            nw_json_add_string(c, "status", st_names[p->conds[i].status]);
            add_nonempty(c, "reason", p->conds[i].reason);
            add_time(c, "lastTransitionTime", p->conds[i].since);
        }
    }
    return o;
}
