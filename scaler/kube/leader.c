/* scaler/kube/leader.c — Lease-based leader election. */
#include "scaler/kube/leader.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/json.h"
#include "common/log.h"
#include "scaler/kube/retry.h"

#define COMP "kube.leader"

struct nw_kube_leader {
    nw_kube_client_t *c;
    nw_kube_leader_opts_t o;
    char *ns, *name, *identity;
    pthread_t thread;
    int running;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    atomic_bool leading;
    /* what we observed (thread-owned) */
    char *observed_spec;   /* serialized spec of the last Lease read */
    int64_t observed_mono; /* our monotonic time when it last changed */
    char *observed_holder;
    int64_t last_renew_mono; /* last successful acquire/renew */
    nw_kube_backoff_t rnd;
};

char *nw_kube_leader_microtime(int64_t wall_ns, char *buf, size_t len)
{
    time_t secs = (time_t)(wall_ns / NW_NS_PER_SEC);
    long us = (long)((wall_ns % NW_NS_PER_SEC) / 1000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, us);
    return buf;
}

nw_rc_t nw_kube_leader_new(nw_kube_client_t *c, const nw_kube_leader_opts_t *opts,
                           nw_kube_leader_t **out, nw_err_t *err)
{
    *out = NULL;
    if (!opts || !opts->namespace || !opts->namespace[0] || !opts->name || !opts->name[0])
        return nw_err_set(err, NW_EINVAL, "scaler.leaderElection",
                          "leader election needs a Lease namespace and name");
    nw_kube_leader_opts_t o = *opts;
    if (o.lease_ms <= 0)
        o.lease_ms = 15000;
    if (o.renew_deadline_ms <= 0)
        o.renew_deadline_ms = 10000;
    if (o.retry_ms <= 0)
        o.retry_ms = 2000;
    if (!(o.lease_ms > o.renew_deadline_ms))
        return nw_err_set(err, NW_EINVAL, "scaler.leaderElection.leaseDuration",
                          "leaseDuration (%lld ms) must be greater than renewDeadline (%lld ms)",
                          (long long)o.lease_ms, (long long)o.renew_deadline_ms);
    if (!((double)o.renew_deadline_ms > 1.2 * (double)o.retry_ms))
        return nw_err_set(
            err, NW_EINVAL, "scaler.leaderElection.renewDeadline",
            "renewDeadline (%lld ms) must be greater than 1.2 x retryPeriod (%lld ms)",
            (long long)o.renew_deadline_ms, (long long)o.retry_ms);
    nw_kube_leader_t *l = calloc(1, sizeof *l);
    if (!l)
        return nw_err_set(err, NW_ENOMEM, "", "out of memory");
    l->c = c;
    l->o = o;
    l->ns = strdup(o.namespace);
    l->name = strdup(o.name);
    char idbuf[300];
    if (o.identity && o.identity[0]) {
        snprintf(idbuf, sizeof idbuf, "%s", o.identity);
    } else {
        char host[256] = "";
        gethostname(host, sizeof host - 1);
        snprintf(idbuf, sizeof idbuf, "%s_%ld", host[0] ? host : "nodewarden", (long)getpid());
    }
    l->identity = strdup(idbuf);
    pthread_mutex_init(&l->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&l->cv, &ca);
    pthread_condattr_destroy(&ca);
    nw_kube_retry_backoff_init(&l->rnd, 1, 1, 0, 0);
    if (!l->ns || !l->name || !l->identity) {
        nw_kube_leader_free(l);
        return nw_err_set(err, NW_ENOMEM, "", "out of memory");
    }
    *out = l;
    return NW_OK;
}

const char *nw_kube_leader_identity(const nw_kube_leader_t *l)
{
    return l->identity;
}

bool nw_kube_leader_is_leader(nw_kube_leader_t *l)
{
    return atomic_load(&l->leading);
}

/* One Lease request: a single attempt bounded by the retry period. */
static NW_MUST_USE nw_rc_t lease_req(nw_kube_leader_t *l, const char *method, const cJSON *body,
                                     cJSON **out, long *code, nw_err_t *err)
{
    nw_buf_t p;
    nw_buf_init(&p, 1024);
    nw_rc_t rc = nw_kube_client_path(&p, &nw_kube_client_res_leases, l->ns,
                                     strcmp(method, "POST") ? l->name : NULL, NULL);
    char *b = body ? nw_json_print(body) : NULL;
    nw_kube_resp_t resp;
    nw_kube_client_resp_init(&resp);
    *code = 0;
    if (out)
        *out = NULL;
    if (!rc) {
        nw_kube_req_t req = {.method = method,
                             .path = nw_buf_str(&p),
                             .body = b,
                             .body_len = b ? strlen(b) : 0,
                             .verb = !strcmp(method, "GET")    ? "get"
                                     : !strcmp(method, "POST") ? "create"
                                                               : "update",
                             .resource = "leases",
                             .timeout_ms = (int)(l->o.retry_ms > 1000 ? l->o.retry_ms : 1000),
                             .no_retry = 1};
        rc = nw_kube_client_do(l->c, &req, &resp, err);
    }
    if (!rc) {
        *code = resp.code;
        if (resp.code >= 200 && resp.code < 300) {
            if (out)
                *out = nw_kube_client_json_parse(resp.body.data, resp.body.len);
        } else if (resp.code != 404 && resp.code != 409) {
            nw_kube_client__resp_parse_status(&resp);
            char what[300];
            snprintf(what, sizeof what, "%s %s", method, nw_buf_str(&p));
            rc = nw_kube_client_resp_error(&resp, what, err);
        }
    }
    nw_kube_client_resp_cleanup(&resp);
    nw_buf_cleanup(&p);
    free(b);
    return rc;
}

static void set_spec(cJSON *spec, const char *holder, int64_t dur_s, const char *acquire,
                     const char *renew, int64_t transitions)
{
    cJSON_DeleteItemFromObjectCaseSensitive(spec, "holderIdentity");
    cJSON_DeleteItemFromObjectCaseSensitive(spec, "leaseDurationSeconds");
    cJSON_DeleteItemFromObjectCaseSensitive(spec, "acquireTime");
    cJSON_DeleteItemFromObjectCaseSensitive(spec, "renewTime");
    cJSON_DeleteItemFromObjectCaseSensitive(spec, "leaseTransitions");
    nw_json_add_string(spec, "holderIdentity", holder);
    nw_json_add_number(spec, "leaseDurationSeconds", (double)dur_s);
    if (acquire)
        nw_json_add_string(spec, "acquireTime", acquire);
    nw_json_add_string(spec, "renewTime", renew);
    nw_json_add_number(spec, "leaseTransitions", (double)transitions);
}

static void observe(nw_kube_leader_t *l, const cJSON *lease, int64_t now)
{
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(lease, "spec");
    char *s = nw_json_print(spec);
    if (!s)
        return;
    if (!l->observed_spec || strcmp(s, l->observed_spec) != 0) {
        free(l->observed_spec);
        l->observed_spec = s;
        l->observed_mono = now;
        const char *h =
            cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(spec, "holderIdentity"));
        if (!l->observed_holder || strcmp(l->observed_holder, h ? h : "") != 0) {
            free(l->observed_holder);
            l->observed_holder = strdup(h ? h : "");
            if (l->o.on_new_leader && l->observed_holder && l->observed_holder[0])
                l->o.on_new_leader(l->observed_holder, l->o.ud);
        }
    } else {
        free(s);
    }
}

nw_rc_t nw_kube_leader_try(nw_kube_leader_t *l, int *leading, nw_err_t *err)
{
    const nw_clock_t *clk = nw_kube_client_clock(l->c);
    int64_t now_mono = nw_clock_mono(clk);
    char now[40];
    nw_kube_leader_microtime(nw_clock_now(clk), now, sizeof now);
    int64_t dur_s = (l->o.lease_ms + 999) / 1000;
    *leading = 0;
    cJSON *lease = NULL;
    long code;
    nw_rc_t rc = lease_req(l, "GET", NULL, &lease, &code, err);
    if (rc)
        return rc;
    if (code == 404) {
        cJSON *nl = nw_json_new_object();
        nw_json_add_string(nl, "apiVersion", "coordination.k8s.io/v1");
        nw_json_add_string(nl, "kind", "Lease");
        cJSON *m = nw_json_add_object(nl, "metadata");
        nw_json_add_string(m, "name", l->name);
        nw_json_add_string(m, "namespace", l->ns);
        cJSON *spec = nw_json_add_object(nl, "spec");
        set_spec(spec, l->identity, dur_s, now, now, 0);
        cJSON *created = NULL;
        rc = lease_req(l, "POST", nl, &created, &code, err);
        cJSON_Delete(nl);
        if (!rc && code >= 200 && code < 300) {
            observe(l, created, now_mono);
            l->last_renew_mono = now_mono;
            *leading = 1;
        }
        cJSON_Delete(created);
        return rc; /* 409: someone else created it first; not leading */
    }
    if (!lease)
        return nw_err_set(err, NW_EPARSE, "", "Lease %s/%s: response is not JSON", l->ns, l->name);
    observe(l, lease, now_mono);
    cJSON *spec = cJSON_GetObjectItemCaseSensitive(lease, "spec");
    const char *holder =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(spec, "holderIdentity"));
    const cJSON *ld = cJSON_GetObjectItemCaseSensitive(spec, "leaseDurationSeconds");
    int64_t their_ms =
        cJSON_IsNumber(ld) && ld->valuedouble > 0 ? (int64_t)ld->valuedouble * 1000 : l->o.lease_ms;
    bool mine = holder && !strcmp(holder, l->identity);
    if (holder && holder[0] && !mine && now_mono - l->observed_mono < their_ms * NW_NS_PER_MS) {
        cJSON_Delete(lease);
        return NW_OK; /* held by someone else and not expired */
    }
    const cJSON *lt = cJSON_GetObjectItemCaseSensitive(spec, "leaseTransitions");
    int64_t transitions = cJSON_IsNumber(lt) ? (int64_t)lt->valuedouble : 0;
    const char *acq = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(spec, "acquireTime"));
    char *acq_copy = mine && acq ? strdup(acq) : NULL;
    if (!spec)
        spec = nw_json_add_object(lease, "spec");
    set_spec(spec, l->identity, dur_s, mine ? (acq_copy ? acq_copy : now) : now, now,
             mine ? transitions : transitions + 1);
    free(acq_copy);
    cJSON *updated = NULL;
    rc = lease_req(l, "PUT", lease, &updated, &code, err);
    cJSON_Delete(lease);
    if (!rc && code >= 200 && code < 300) {
        observe(l, updated, now_mono);
        l->last_renew_mono = now_mono;
        *leading = 1;
    }
    cJSON_Delete(updated);
    return rc; /* 409: lost the race */
}

static void release(nw_kube_leader_t *l)
{
    nw_err_t err = {0};
    cJSON *lease = NULL;
    long code;
    if (lease_req(l, "GET", NULL, &lease, &code, &err) || !lease) {
        cJSON_Delete(lease);
        return;
    }
    cJSON *spec = cJSON_GetObjectItemCaseSensitive(lease, "spec");
    const char *holder =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(spec, "holderIdentity"));
    if (holder && !strcmp(holder, l->identity)) {
        char now[40];
        nw_kube_leader_microtime(nw_clock_now(nw_kube_client_clock(l->c)), now, sizeof now);
        const cJSON *lt = cJSON_GetObjectItemCaseSensitive(spec, "leaseTransitions");
        set_spec(spec, "", 1, now, now, cJSON_IsNumber(lt) ? (int64_t)lt->valuedouble : 0);
        if (lease_req(l, "PUT", lease, NULL, &code, &err) == NW_OK && code == 200)
            nw_log_info(COMP, "released the lease", NW_LS("lease", l->name));
    }
    cJSON_Delete(lease);
}

/* Sleep up to ms or until stop; returns true if stopping. */
static bool pause_ms(nw_kube_leader_t *l, int64_t ms)
{
    struct timespec dl;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    dl.tv_sec += ms / 1000;
    dl.tv_nsec += (ms % 1000) * 1000000;
    if (dl.tv_nsec >= 1000000000) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&l->mu);
    while (!l->stop && pthread_cond_timedwait(&l->cv, &l->mu, &dl) != ETIMEDOUT) {
    }
    bool s = l->stop;
    pthread_mutex_unlock(&l->mu);
    return s;
}

static bool stopping(nw_kube_leader_t *l)
{
    pthread_mutex_lock(&l->mu);
    bool s = l->stop;
    pthread_mutex_unlock(&l->mu);
    return s;
}

static void *run(void *arg)
{
    nw_kube_leader_t *l = arg;
    const nw_clock_t *clk = nw_kube_client_clock(l->c);
    while (!stopping(l)) {
        /* acquire */
        int leading = 0;
        while (!leading) {
            nw_err_t err = {0};
            if (nw_kube_leader_try(l, &leading, &err) != NW_OK)
                nw_log_every(10, NW_LOG_WARN, COMP, "lease acquire attempt failed",
                             NW_LS("lease", l->name), NW_LS("error", err.msg));
            if (leading)
                break;
            int64_t wait = (int64_t)((double)l->o.retry_ms *
                                     (1.0 + nw_kube_retry_backoff_rand(&l->rnd) * 1.2));
            if (pause_ms(l, wait))
                return NULL;
        }
        nw_log_info(COMP, "became leader", NW_LS("lease", l->name), NW_LS("identity", l->identity));
        if (l->o.on_started)
            l->o.on_started(l->o.ud);
        /* only now: whoever sees is_leader() true may rely on on_started having run */
        atomic_store(&l->leading, true);
        /* renew */
        for (;;) {
            if (pause_ms(l, l->o.retry_ms))
                goto stopped;
            bool ok = false;
            while (!ok) {
                nw_err_t err = {0};
                int still = 0;
                if (nw_kube_leader_try(l, &still, &err) != NW_OK)
                    nw_log_warn(COMP, "lease renew failed", NW_LS("lease", l->name),
                                NW_LS("error", err.msg));
                if (still) {
                    ok = true;
                    break;
                }
                int64_t since = nw_clock_mono(clk) - l->last_renew_mono;
                if (since >= l->o.renew_deadline_ms * NW_NS_PER_MS || stopping(l))
                    break;
                if (pause_ms(l, l->o.retry_ms / 2 > 0 ? l->o.retry_ms / 2 : 1))
                    goto stopped;
            }
            if (!ok)
                break;
        }
        atomic_store(&l->leading, false);
        nw_log_warn(COMP, "lost leadership", NW_LS("lease", l->name),
                    NW_LS("identity", l->identity));
        if (l->o.on_stopped)
            l->o.on_stopped(l->o.ud);
    }
    return NULL;
stopped:
    if (!l->o.no_release)
        release(l);
    atomic_store(&l->leading, false);
    if (l->o.on_stopped)
        l->o.on_stopped(l->o.ud);
    return NULL;
}

nw_rc_t nw_kube_leader_start(nw_kube_leader_t *l, nw_err_t *err)
{
    if (l->running)
        return NW_OK;
    l->stop = false;
    if (pthread_create(&l->thread, NULL, run, l) != 0)
        return nw_err_set(err, NW_EIO, "", "cannot start the leader-election thread");
    pthread_setname_np(l->thread, "nw-leader");
    l->running = 1;
    return NW_OK;
}

void nw_kube_leader_stop(nw_kube_leader_t *l)
{
    if (!l || !l->running)
        return;
    pthread_mutex_lock(&l->mu);
    l->stop = true;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
    pthread_join(l->thread, NULL);
    l->running = 0;
}

void nw_kube_leader_free(nw_kube_leader_t *l)
{
    if (!l)
        return;
    nw_kube_leader_stop(l);
    pthread_cond_destroy(&l->cv);
    pthread_mutex_destroy(&l->mu);
    free(l->ns);
    free(l->name);
    free(l->identity);
    free(l->observed_spec);
    free(l->observed_holder);
    free(l);
}
