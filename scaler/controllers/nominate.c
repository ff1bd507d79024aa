/*
 * scaler/controllers/nominate.c — status.nominatedNodeName writes on threads of their own
 * (see nominate.h).
 */
#include "scaler/controllers/nominate.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "scaler/kube/write.h"

#define MAX_THREADS 32

typedef struct job {
    struct job *next;
    char *uid, *key, *ns, *name;
    char *seen; /* the pod's status.nominatedNodeName when submitted; NULL: none */
    char *node; /* to write; NULL: clear */
    nw_rc_t rc;
    nw_err_t err;
} job_t;

struct nw_nominate {
    nw_ctl_deps_t *deps;
    pthread_mutex_t mu;
    pthread_cond_t work, idle;
    job_t *head, *tail; /* queued, in order */
    job_t *writing;     /* being written */
    job_t *done;        /* finished, newest first */
    size_t ndone;
    int queued;  /* writes waiting for a thread */
    int running; /* writes in progress */
    int want, started;
    pthread_t th[MAX_THREADS];
    bool stop;
    /* the writers' own rate limit (the client's qps and burst): the writes kube-scheduler
     * makes from its own client, so a thousand nominations do not queue the other
     * controllers' requests behind them on the client's budget */
    nw_kube_rl_t rl;
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

/* Write j (unlocked; on the writing list meanwhile), then hand it to the done list; called
 * and returns with n->mu held. */
static void write_one_done(nw_nominate_t *n, job_t *j)
{
    j->next = n->writing;
    n->writing = j;
    pthread_mutex_unlock(&n->mu);
    write_one(n->deps, j);
    pthread_mutex_lock(&n->mu);
    for (job_t **pp = &n->writing; *pp; pp = &(*pp)->next)
        if (*pp == j) {
            *pp = j->next;
            break;
        }
    j->next = n->done;
    n->done = j;
    n->ndone++;
}

static void *worker(void *arg)
{
    nw_nominate_t *n = arg;
    nw_kube_client_thread_limiter(&n->rl);
    pthread_mutex_lock(&n->mu);
    for (;;) {
        while (!n->stop && !n->head)
            pthread_cond_wait(&n->work, &n->mu);
        if (n->stop)
            break;
        job_t *j = n->head;
        n->head = j->next;
        if (!n->head)
            n->tail = NULL;
        n->queued--;
        n->running++;
        write_one_done(n, j);
        n->running--;
        if (!n->head && !n->running)
            pthread_cond_broadcast(&n->idle);
    }
    pthread_mutex_unlock(&n->mu);
    return NULL;
}

nw_nominate_t *nw_nominate_new(nw_ctl_deps_t *deps, int threads)
{
    nw_nominate_t *n = calloc(1, sizeof *n);
    if (!n)
        return NULL;
    n->deps = deps;
    n->want = threads < 1 ? 1 : threads > MAX_THREADS ? MAX_THREADS : threads;
    pthread_mutex_init(&n->mu, NULL);
    pthread_cond_init(&n->work, NULL);
    pthread_cond_init(&n->idle, NULL);
    if (deps->kube)
        nw_kube_client_limiter_init(deps->kube, &n->rl);
    else
        nw_kube_retry_rl_init(&n->rl, NULL, 0, 1); /* no client: unlimited */
    return n;
}

void nw_nominate_free(nw_nominate_t *n)
{
    if (!n)
        return;
    pthread_mutex_lock(&n->mu);
    n->stop = true;
    pthread_cond_broadcast(&n->work);
    pthread_mutex_unlock(&n->mu);
    for (int i = 0; i < n->started; i++)
        pthread_join(n->th[i], NULL);
    for (job_t *j = n->head, *nx; j; j = nx) {
        nx = j->next;
        job_free(j);
    }
    for (job_t *j = n->done, *nx; j; j = nx) {
        nx = j->next;
        job_free(j);
    }
    nw_kube_retry_rl_cleanup(&n->rl);
    pthread_cond_destroy(&n->idle);
    pthread_cond_destroy(&n->work);
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
    pthread_mutex_lock(&n->mu);
    if (n->tail)
        n->tail->next = j;
    else
        n->head = j;
    n->tail = j;
    n->queued++;
    /* one more thread while there are fewer than wanted and more writes queued than threads
     * idle (a tick submits its writes back to back, before any thread has taken one) */
    if (n->started < n->want && n->queued > n->started - n->running &&
        pthread_create(&n->th[n->started], NULL, worker, n) == 0)
        n->started++;
    int started = n->started;
    pthread_cond_signal(&n->work);
    pthread_mutex_unlock(&n->mu);
    if (!started) {
        /* no thread could be started: write it here */
        pthread_mutex_lock(&n->mu);
        n->head = n->tail = NULL;
        n->queued = 0;
        write_one_done(n, j);
        pthread_mutex_unlock(&n->mu);
    }
    return NW_OK;
}

size_t nw_nominate_collect(nw_nominate_t *n, nw_nominate_result_t **out)
{
    *out = NULL;
    pthread_mutex_lock(&n->mu);
    job_t *d = n->done;
    size_t nd = n->ndone;
    n->done = NULL;
    n->ndone = 0;
    pthread_mutex_unlock(&n->mu);
    if (!nd)
        return 0;
    nw_nominate_result_t *r = calloc(nd, sizeof *r);
    size_t k = 0;
    for (job_t *j = d, *nx; j; j = nx) {
        nx = j->next;
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
    size_t k = 0;
    if (!n || !node)
        return 0;
    pthread_mutex_lock(&n->mu);
    const job_t *lists[] = {n->head, n->writing};
    for (int i = 0; i < 2; i++)
        for (const job_t *j = lists[i]; j; j = j->next)
            k += j->node && strcmp(j->node, node) == 0;
    pthread_mutex_unlock(&n->mu);
    return k;
}

void nw_nominate_wait(nw_nominate_t *n)
{
    pthread_mutex_lock(&n->mu);
    while (n->head || n->running)
        pthread_cond_wait(&n->idle, &n->mu);
    pthread_mutex_unlock(&n->mu);
}
