/*
 * scaler/controllers/nominate.c — status.nominatedNodeName writes on threads of their own
 * (see nominate.h).
 */
#include "scaler/controllers/nominate.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/workers.h"
#include "scaler/kube/write.h"

/* A Node the lifecycle controller would register, and the snapshot generation in which it
 * first asked */
typedef struct {
    char *node;
    uint64_t gen;
} asked_t;

/* The writers' bucket against the client's (qps and burst both): 1,000 a second after a
 * burst of 1,500 at the client's defaults. Each write is a small status patch, one per
 * planned pod and plan, and a Node's registration waits for the writes naming it: at the
 * client's 200 a second a 5,000-pod scale-out's 2,500 writes took 11 s, all of it time the
 * new Nodes stood idle. The load they can put on the API server is bounded by the writer
 * threads (one write in flight each: `threads` of nw_nominate_new), and the server guards
 * itself with API Priority and Fairness (on since Kubernetes 1.20: a flow over its share
 * is queued or answered 429, which the client retries after Retry-After); a client rate
 * of < 0 (none) stays none. */
#define NOMINATE_RATE_X 5

/* at most this many Nodes remembered (a Node deleted before it registered stays until it
 * is pushed out: the oldest goes, and is asked about afresh if it is still there) */
#define MAX_ASKED 4096

/* The writes queued or running per node they name (a chained hash under mu): the
 * lifecycle controller asks about each Node it would register, every pass, while
 * thousands of writes may be queued */
typedef struct pend {
    struct pend *next;
    size_t count;
    char node[];
} pend_t;

#define PEND_BUCKETS 512

typedef struct job {
    nw_workers_job_t link; /* first: the pool's */
    char *uid, *key, *ns, *name;
    char *seen; /* the pod's status.nominatedNodeName when submitted; NULL: none */
    char *node; /* to write; NULL: clear */
    nw_rc_t rc;
    nw_err_t err;
} job_t;

struct nw_nominate {
    nw_ctl_deps_t *deps;
    nw_workers_t *pool; /* the writes (common/workers.h) */
    /* the writers' own rate limit (NOMINATE_RATE_X times the client's qps and burst):
     * the writes kube-scheduler makes from its own client, so a thousand nominations do
     * not queue the other controllers' requests behind them on the client's budget */
    nw_kube_rl_t rl;
    /* the registration gate (nw_nominate_may_register), under mu: the snapshot generation
     * of the provisioner's last complete scan (scanned: it has reported one), and the Nodes
     * the lifecycle controller asked about with the generation it first asked at */
    pthread_mutex_t mu;
    pend_t *pend[PEND_BUCKETS];
    bool scanned;
    uint64_t scanned_gen;
    asked_t *asked;
    size_t nasked, casked;
};

static void job_free(job_t *j)
{
    if (!j)
        return;
    free(j->uid);
    free(j->key);
    free(j->ns);
    free(j->name);
    free(j->seen);
    free(j->node);
    free(j);
}

/* Append {"op": kind, "path": path, "value": val} (no value for "remove"; val NULL: null). */
static bool add_op(cJSON *ops, const char *kind, const char *path, const char *val)
{
    cJSON *op = nw_json_new_object();
    if (!op)
        return false;
    cJSON_AddItemToArray(ops, op);
    if (!nw_json_add_string(op, "op", kind) || !nw_json_add_string(op, "path", path))
        return false;
    if (strcmp(kind, "remove") == 0)
        return true;
    cJSON *v = val ? nw_json_new_string(val) : nw_json_new_null();
    return v && cJSON_AddItemToObject(op, "value", v);
}

static void write_one(nw_ctl_deps_t *c, job_t *j)
{
    cJSON *ops = nw_json_new_array();
    char *body = NULL;
    if (ops && add_op(ops, "test", "/metadata/uid", j->uid) &&
        add_op(ops, "test", "/spec/nodeName", NULL) &&
        add_op(ops, "test", "/status/nominatedNodeName", j->seen) &&
        add_op(ops, j->node ? "add" : "remove", "/status/nominatedNodeName", j->node))
        body = nw_json_print(ops);
    cJSON_Delete(ops);
    if (!body) {
        j->rc = nw_err_set(&j->err, NW_ENOMEM, "", "out of memory");
        return;
    }
    j->rc = nw_kube_write_patch(c->kube, &nw_kube_client_res_pods, j->ns, j->name,
                                NW_KUBE_PATCH_JSON, body, 1, NULL, &j->err);
    free(body);
}

static size_t hash_name(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return (size_t)(h ^ (h >> 29));
}

/* Call with n->mu held: node's count (its link in *prev when prev is given), NULL when
 * none is pending. */
static pend_t *pend_find(nw_nominate_t *n, const char *node, pend_t ***prev)
{
    pend_t **pp = &n->pend[hash_name(node) % PEND_BUCKETS];
    for (; *pp; pp = &(*pp)->next)
        if (strcmp((*pp)->node, node) == 0)
            break;
    if (prev)
        *prev = pp;
    return *pp;
}

/* One more write naming node; false on OOM. */
static bool pend_add(nw_nominate_t *n, const char *node)
{
    pthread_mutex_lock(&n->mu);
    pend_t **pp, *e = pend_find(n, node, &pp);
    if (!e) {
        size_t len = strlen(node) + 1;
        if ((e = calloc(1, sizeof *e + len)) != NULL) {
            memcpy(e->node, node, len);
            *pp = e;
        }
    }
    if (e)
        e->count++;
    pthread_mutex_unlock(&n->mu);
    return e != NULL;
}

static void pend_done(nw_nominate_t *n, const char *node)
{
    pthread_mutex_lock(&n->mu);
    pend_t **pp, *e = pend_find(n, node, &pp);
    if (e && --e->count == 0) {
        *pp = e->next;
        free(e);
    }
    pthread_mutex_unlock(&n->mu);
}

static void run_write(nw_workers_job_t *job, void *ud)
{
    nw_nominate_t *n = ud;
    job_t *j = (job_t *)job;
    write_one(n->deps, j);
    if (j->node)
        pend_done(n, j->node);
}

/* Each writer thread's requests draw on the writers' bucket. */
static void start_writer(void *ud)
{
    nw_nominate_t *n = ud;
    nw_kube_client_thread_limiter(&n->rl);
}

static void drop_job(nw_workers_job_t *job)
{
    job_free((job_t *)job);
}

nw_nominate_t *nw_nominate_new(nw_ctl_deps_t *deps, int threads)
{
    nw_nominate_t *n = calloc(1, sizeof *n);
    if (!n)
        return NULL;
    n->deps = deps;
    n->pool = nw_workers_new(threads < 1    ? 1
                             : threads > 32 ? 32
                                            : threads,
                             run_write, start_writer, n);
    if (!n->pool) {
        free(n);
        return NULL;
    }
    pthread_mutex_init(&n->mu, NULL);
    if (deps->kube) {
        const nw_kube_client_opts_t *o = nw_kube_client_opts(deps->kube);
        nw_kube_retry_rl_init(&n->rl, o->clock, o->qps > 0 ? o->qps * NOMINATE_RATE_X : o->qps,
                              o->burst * NOMINATE_RATE_X);
    } else
        nw_kube_retry_rl_init(&n->rl, NULL, 0, 1); /* no client: unlimited */
    return n;
}

void nw_nominate_free(nw_nominate_t *n)
{
    if (!n)
        return;
    nw_workers_free(n->pool, drop_job);
    for (size_t i = 0; i < n->nasked; i++)
        free(n->asked[i].node);
    free(n->asked);
    for (size_t b = 0; b < PEND_BUCKETS; b++)
        for (pend_t *e = n->pend[b], *nx; e; e = nx) {
            nx = e->next;
            free(e);
        }
    nw_kube_retry_rl_cleanup(&n->rl);
    pthread_mutex_destroy(&n->mu);
    free(n);
}

static char *dup_or_null(const char *s)
{
    return s && *s ? strdup(s) : NULL;
}

nw_rc_t nw_nominate_submit(nw_nominate_t *n, const nw_pod_t *pod, const char *node)
{
    job_t *j = calloc(1, sizeof *j);
    if (!j)
        return NW_ENOMEM;
    j->uid = strdup(pod->uid);
    j->key = strdup(pod->key);
    j->ns = strdup(pod->ns);
    j->name = strdup(pod->name);
    j->seen = dup_or_null(pod->nominated);
    j->node = dup_or_null(node);
    if (!j->uid || !j->key || !j->ns || !j->name || (pod->nominated[0] && !j->seen) ||
        (node && *node && !j->node)) {
        job_free(j);
        return NW_ENOMEM;
    }
    if (j->node && !pend_add(n, j->node)) {
        job_free(j);
        return NW_ENOMEM;
    }
    nw_workers_submit(n->pool, &j->link);
    return NW_OK;
}

size_t nw_nominate_collect(nw_nominate_t *n, nw_nominate_result_t **out)
{
    *out = NULL;
    size_t nd;
    nw_workers_job_t *d = nw_workers_collect(n->pool, &nd);
    if (!nd)
        return 0;
    nw_nominate_result_t *r = calloc(nd, sizeof *r);
    size_t k = 0;
    for (nw_workers_job_t *jj = d, *nx; jj; jj = nx) {
        nx = jj->next;
        job_t *j = (job_t *)jj;
        if (r) {
            r[k++] = (nw_nominate_result_t){
                .uid = j->uid, .key = j->key, .node = j->node, .rc = j->rc, .err = j->err};
            j->uid = j->key = j->node = NULL;
        }
        job_free(j);
    }
    *out = r;
    return r ? k : 0;
}

void nw_nominate_results_free(nw_nominate_result_t *r, size_t n)
{
    for (size_t i = 0; r && i < n; i++) {
        free(r[i].uid);
        free(r[i].key);
        free(r[i].node);
    }
    free(r);
}

size_t nw_nominate_pending(nw_nominate_t *n, const char *node)
{
    if (!n || !node)
        return 0;
    pthread_mutex_lock(&n->mu);
    const pend_t *e = pend_find(n, node, NULL);
    size_t k = e ? e->count : 0;
    pthread_mutex_unlock(&n->mu);
    return k;
}

void nw_nominate_wait(nw_nominate_t *n)
{
    nw_workers_wait(n->pool);
}

void nw_nominate_scanned(nw_nominate_t *n, uint64_t gen)
{
    pthread_mutex_lock(&n->mu);
    n->scanned = true;
    if (gen > n->scanned_gen)
        n->scanned_gen = gen;
    pthread_mutex_unlock(&n->mu);
}

/* Call with n->mu held: the generation at which node was first asked about (remembered
 * now as gen when it was not). */
static uint64_t asked_gen(nw_nominate_t *n, const char *node, uint64_t gen)
{
    for (size_t i = 0; i < n->nasked; i++)
        if (strcmp(n->asked[i].node, node) == 0)
            return n->asked[i].gen;
    if (n->nasked == MAX_ASKED) {
        free(n->asked[0].node);
        memmove(n->asked, n->asked + 1, --n->nasked * sizeof *n->asked);
    }
    if (n->nasked == n->casked) {
        size_t c = n->casked ? 2 * n->casked : 16;
        asked_t *v = realloc(n->asked, c * sizeof *v);
        if (!v)
            return UINT64_MAX; /* out of memory: asked again next time */
        n->asked = v;
        n->casked = c;
    }
    char *d = strdup(node);
    if (!d)
        return UINT64_MAX;
    n->asked[n->nasked++] = (asked_t){d, gen};
    return gen;
}

static void asked_forget(nw_nominate_t *n, const char *node)
{
    for (size_t i = 0; i < n->nasked; i++)
        if (strcmp(n->asked[i].node, node) == 0) {
            free(n->asked[i].node);
            memmove(n->asked + i, n->asked + i + 1, (n->nasked - i - 1) * sizeof *n->asked);
            n->nasked--;
            return;
        }
}

bool nw_nominate_may_register(nw_nominate_t *n, const char *node, uint64_t gen)
{
    if (!n || !node)
        return true;
    if (nw_nominate_pending(n, node))
        return false;
    pthread_mutex_lock(&n->mu);
    bool ok = true;
    if (n->scanned) {
        uint64_t first = asked_gen(n, node, gen);
        ok = first != UINT64_MAX && n->scanned_gen >= first;
        if (ok)
            asked_forget(n, node);
    }
    pthread_mutex_unlock(&n->mu);
    return ok;
}
