/* scaler/kube/metrics.c — a small fixed-size series table behind a mutex. */
#include "scaler/kube/metrics.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SERIES 512

typedef struct {
    nw_kube_metric_t family;
    char verb[16];
    char resource[48];
    int code;
    int64_t value;
} series_t;

struct nw_kube_metrics {
    pthread_mutex_t mu;
    size_t n;
    series_t s[MAX_SERIES];
};

static const struct {
    const char *name, *type, *help;
} families[NW_KM_FAMILIES] = {
    {"nodewarden_kube_requests_total", "counter",
     "Kubernetes API requests by verb, resource and HTTP code (0: no answer)."},
    {"nodewarden_kube_retries_total", "counter",
     "Kubernetes API requests retried after 429, 5xx or a network error."},
    {"nodewarden_kube_watch_events_total", "counter", "Watch events received."},
    {"nodewarden_kube_watch_restarts_total", "counter",
     "Watch streams re-established (timeouts, drops, errors)."},
    {"nodewarden_kube_relists_total", "counter",
     "Full lists (initial sync, 410 Gone, other errors)."},
    {"nodewarden_kube_cache_objects", "gauge", "Objects in the cluster-state cache."},
};

nw_kube_metrics_t *nw_kube_metrics_new(void)
{
    nw_kube_metrics_t *m = calloc(1, sizeof *m);
    if (m)
        pthread_mutex_init(&m->mu, NULL);
    return m;
}

void nw_kube_metrics_free(nw_kube_metrics_t *m)
{
    if (!m)
        return;
    pthread_mutex_destroy(&m->mu);
    free(m);
}

static series_t *find(nw_kube_metrics_t *m, nw_kube_metric_t f, const char *verb, const char *res,
                      int code, int create)
{
    verb = verb ? verb : "";
    res = res ? res : "";
    for (size_t i = 0; i < m->n; i++) {
        series_t *s = &m->s[i];
        if (s->family == f && s->code == code && !strncmp(s->verb, verb, sizeof s->verb - 1) &&
            !strncmp(s->resource, res, sizeof s->resource - 1))
            return s;
    }
    if (!create || m->n >= MAX_SERIES)
        return NULL;
    series_t *s = &m->s[m->n++];
    s->family = f;
    snprintf(s->verb, sizeof s->verb, "%s", verb);
    snprintf(s->resource, sizeof s->resource, "%s", res);
    s->code = code;
    s->value = 0;
    return s;
}

void nw_kube_metrics_add(nw_kube_metrics_t *m, nw_kube_metric_t family, const char *verb,
                         const char *resource, int code, int64_t delta)
{
    if (!m || family >= NW_KM_FAMILIES)
        return;
    pthread_mutex_lock(&m->mu);
    series_t *s = find(m, family, verb, resource, code, 1);
    if (s) {
        if (family == NW_KM_CACHE_OBJECTS)
            s->value = delta;
        else
            s->value += delta;
    }
    pthread_mutex_unlock(&m->mu);
}

int64_t nw_kube_metrics_get(nw_kube_metrics_t *m, nw_kube_metric_t family, const char *verb,
                            const char *resource, int code)
{
    if (!m)
        return 0;
    pthread_mutex_lock(&m->mu);
    series_t *s = find(m, family, verb, resource, code, 0);
    int64_t v = s ? s->value : 0;
    pthread_mutex_unlock(&m->mu);
    return v;
}

nw_rc_t nw_kube_metrics_write(nw_kube_metrics_t *m, nw_buf_t *out)
{
    nw_rc_t rc = NW_OK;
    pthread_mutex_lock(&m->mu);
    for (int f = 0; f < NW_KM_FAMILIES && !rc; f++) {
        bool any = false;
        for (size_t i = 0; i < m->n && !rc; i++) {
            const series_t *s = &m->s[i];
            if ((int)s->family != f)
                continue;
            if (!any) {
                rc = nw_buf_addf(out, "# HELP %s %s\n# TYPE %s %s\n", families[f].name,
                                 families[f].help, families[f].name, families[f].type);
                any = true;
            }
            if (!rc)
                rc = nw_buf_addf(out, "%s{", families[f].name);
            const char *sep = "";
            if (!rc && s->verb[0]) {
                rc = nw_buf_addf(out, "verb=\"%s\"", s->verb);
                sep = ",";
            }
            if (!rc)
                rc = nw_buf_addf(out, "%sresource=\"%s\"", sep, s->resource);
            if (!rc && s->code >= 0)
                rc = nw_buf_addf(out, ",code=\"%d\"", s->code);
            if (!rc)
                rc = nw_buf_addf(out, "} %lld\n", (long long)s->value);
        }
    }
    pthread_mutex_unlock(&m->mu);
    return rc;
}
