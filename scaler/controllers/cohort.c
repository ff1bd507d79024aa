/*
 * scaler/controllers/cohort.c — NodeClaims registered together (see cohort.h).
 */
#include "scaler/controllers/cohort.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"

#define MAX_COHORTS 64

typedef struct {
    char **claims;
    size_t n;
    char **keys; /* the spreads' topology keys */
    size_t nkeys;
    int64_t first_ns; /* the first question about a member; 0: none yet */
} cohort_t;

struct nw_cohorts {
    pthread_mutex_t mu;
    cohort_t v[MAX_COHORTS]; /* oldest first */
    size_t n;
};

nw_cohorts_t *nw_cohort_new(void)
{
    nw_cohorts_t *c = calloc(1, sizeof *c);
    if (c)
        pthread_mutex_init(&c->mu, NULL);
    return c;
}

static void cohort_clear(cohort_t *k)
{
    for (size_t i = 0; i < k->n; i++)
        free(k->claims[i]);
    free(k->claims);
    for (size_t i = 0; i < k->nkeys; i++)
        free(k->keys[i]);
    free(k->keys);
    *k = (cohort_t){0};
}

/* A copy of the n strings of v into *out (owned); false on OOM (*out then NULL). */
static bool dup_all(const char *const *v, size_t n, char ***out)
{
    *out = calloc(n ? n : 1, sizeof **out);
    for (size_t i = 0; *out && i < n; i++)
        if (!((*out)[i] = strdup(v[i]))) {
            while (i--)
                free((*out)[i]);
            free(*out);
            *out = NULL;
        }
    return *out != NULL;
}

/* Call with mu held: forget cohort i. */
static void drop(nw_cohorts_t *c, size_t i)
{
    cohort_clear(&c->v[i]);
    memmove(c->v + i, c->v + i + 1, (c->n - i - 1) * sizeof *c->v);
    c->n--;
}

void nw_cohort_free(nw_cohorts_t *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++)
        cohort_clear(&c->v[i]);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

size_t nw_cohort_pod_domain_keys(const nw_pod_t *pod, const char **keys, size_t n, size_t max)
{
    if (!pod)
        return n;
    const cJSON *t;
    cJSON_ArrayForEach(t, nw_json_get(pod->spec, "topologySpreadConstraints"))
    {
        const char *key = nw_json_str(t, "topologyKey");
        const char *when = nw_json_str(t, "whenUnsatisfiable");
        if (!key || strcmp(key, "kubernetes.io/hostname") == 0 ||
            (when && strcmp(when, "DoNotSchedule") != 0))
            continue;
        bool dup = false;
        for (size_t i = 0; i < n && !dup; i++)
            dup = strcmp(keys[i], key) == 0;
        if (!dup && n < max)
            keys[n++] = key;
    }
    return n;
}

nw_rc_t nw_cohort_add(nw_cohorts_t *c, const char *const *claims, size_t n, const char *const *keys,
                      size_t nkeys)
{
    if (!c || n < 2 || !nkeys)
        return NW_OK;
    cohort_t k = {0};
    if (!dup_all(claims, n, &k.claims))
        return NW_ENOMEM;
    k.n = n;
    if (!dup_all(keys, nkeys, &k.keys)) {
        cohort_clear(&k);
        return NW_ENOMEM;
    }
    k.nkeys = nkeys;
    pthread_mutex_lock(&c->mu);
    if (c->n == MAX_COHORTS)
        drop(c, 0);
    c->v[c->n++] = k;
    pthread_mutex_unlock(&c->mu);
    return NW_OK;
}

/* A member's NodeClaim in s (NULL: gone or deleting) and its Node (NULL: none yet). */
static const nw_kube_obj_t *member(const nw_kube_snap_t *s, const char *claim,
                                   const nw_kube_obj_t **node)
{
    *node = NULL;
    const nw_kube_obj_t *nc = nw_kube_cache_snap_get(s, NW_KUBE_NODECLAIMS, NULL, claim);
    if (!nc || nc->terminating || !nc->nodeclaim)
        return NULL;
    if (nc->provider_id[0])
        *node = nw_kube_cache_snap_node_by_provider_id(s, nc->provider_id);
    return nc;
}

/* Does every domain of k's spreads that a member is in hold a Node the scheduler sees?
 * Per key: a member without a Node is in the domain its NodeClaim's label names (unknown
 * before the launch writes it: not yet), which some member's Node must carry. */
static bool domains_exist(const cohort_t *k, const nw_kube_snap_t *s)
{
    for (size_t j = 0; j < k->n; j++) {
        const nw_kube_obj_t *node, *nc = member(s, k->claims[j], &node);
        if (!nc || (node && node->node))
            continue;
        for (size_t q = 0; q < k->nkeys; q++) {
            const char *want = nw_node_meta_label(&nc->nodeclaim->m, k->keys[q]);
            if (!want)
                return false;
            bool seen = false;
            for (size_t o = 0; o < k->n && !seen; o++) {
                const nw_kube_obj_t *on;
                if (o == j || !member(s, k->claims[o], &on) || !on || !on->node)
                    continue;
                const char *v = nw_node_meta_label(&on->node->m, k->keys[q]);
                seen = v && strcmp(v, want) == 0;
            }
            if (!seen)
                return false;
        }
    }
    return true;
}

bool nw_cohort_ready(nw_cohorts_t *c, const nw_kube_snap_t *s, const char *claim, int64_t now_ns,
                     int64_t *due)
{
    if (!c || !claim)
        return true;
    pthread_mutex_lock(&c->mu);
    bool ok = true;
    for (size_t i = 0; i < c->n; i++) {
        cohort_t *k = &c->v[i];
        bool member = false;
        for (size_t j = 0; j < k->n && !member; j++)
            member = strcmp(k->claims[j], claim) == 0;
        if (!member)
            continue;
        if (!k->first_ns)
            k->first_ns = now_ns;
        if (domains_exist(k, s) || now_ns - k->first_ns >= NW_COHORT_WAIT_NS) {
            /* complete (or waited long enough): every member registers as it comes */
            drop(c, i);
        } else {
            ok = false;
            if (due && k->first_ns + NW_COHORT_WAIT_NS < *due)
                *due = k->first_ns + NW_COHORT_WAIT_NS;
        }
        break;
    }
    pthread_mutex_unlock(&c->mu);
    return ok;
}

size_t nw_cohort_count(nw_cohorts_t *c)
{
    pthread_mutex_lock(&c->mu);
    size_t n = c->n;
    pthread_mutex_unlock(&c->mu);
    return n;
}
