/* scaler/cloud/metered.c — the timing cloud decorator (see metered.h). */
#include "scaler/cloud/metered.h"

#include <stdlib.h>

/* client_golang prometheus.DefBuckets (the decorator's histogram sets none) */
static const double def_buckets[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};

const nw_series_desc_t NW_METERED_CLOUDPROVIDER_DURATION = {
    .name = "karpenter_cloudprovider_duration_seconds",
    .help = "Duration of cloud provider method calls. Labeled by the controller, method name and "
            "provider.",
    .kind = NW_SERIES_HISTOGRAM,
    .labels = {"controller", "method", "provider"},
    .buckets = def_buckets,
    .nbuckets = sizeof def_buckets / sizeof def_buckets[0]};

const nw_series_desc_t NW_METERED_CLOUDPROVIDER_ERRORS = {
    .name = "karpenter_cloudprovider_errors_total",
    .help = "Total number of errors returned from CloudProvider calls.",
    .kind = NW_SERIES_COUNTER,
    .labels = {"controller", "method", "provider", "error"}};

static _Thread_local const char *controller = "";

void nw_metered_controller(const char *name)
{
    controller = name ? name : "";
}

typedef struct {
    nw_cloud_t base;
    nw_cloud_t *inner;
    const char *provider;
    nw_series_t *series;
    const nw_clock_t *clock;
} metered_t;

static metered_t *me(nw_cloud_t *c)
{
    return (metered_t *)c;
}

static void measure(metered_t *m, const char *method, int64_t t0, nw_rc_t rc, const char *error)
{
    const char *v[] = {controller, method, m->provider, error};
    nw_series_observe(m->series, &NW_METERED_CLOUDPROVIDER_DURATION, v,
                      (double)(nw_clock_mono(m->clock) - t0) / 1e9);
    if (rc != NW_OK)
        nw_series_add(m->series, &NW_METERED_CLOUDPROVIDER_ERRORS, v, 1);
}

static NW_MUST_USE nw_rc_t op_launch(nw_cloud_t *c, const nw_cloud_launch_req_t *req,
                                     nw_cloud_launch_t *out, nw_cloud_error_t *ce, nw_err_t *err)
{
    metered_t *m = me(c);
    int64_t t0 = nw_clock_mono(m->clock);
    nw_rc_t rc = m->inner->ops->launch(m->inner, req, out, ce, err);
    measure(m, "Create", t0, rc,
            rc != NW_OK && ce && ce->kind == NW_CLOUD_ERR_CAPACITY ? "InsufficientCapacityError"
                                                                   : "");
    return rc;
}

static NW_MUST_USE nw_rc_t op_terminate(nw_cloud_t *c, const char *pid, nw_err_t *err)
{
    metered_t *m = me(c);
    int64_t t0 = nw_clock_mono(m->clock);
    nw_rc_t rc = m->inner->ops->terminate(m->inner, pid, err);
    measure(m, "Delete", t0, rc, rc == NW_ENOTFOUND ? "NodeClaimNotFoundError" : "");
    return rc;
}

static NW_MUST_USE nw_rc_t op_list(nw_cloud_t *c, nw_cloud_instances_t *out, nw_err_t *err)
{
    metered_t *m = me(c);
    int64_t t0 = nw_clock_mono(m->clock);
    nw_rc_t rc = m->inner->ops->list(m->inner, out, err);
    measure(m, "List", t0, rc, "");
    return rc;
}

static NW_MUST_USE nw_rc_t op_state(nw_cloud_t *c, const char *pid, char *state, size_t len,
                                    nw_err_t *err)
{
    metered_t *m = me(c);
    int64_t t0 = nw_clock_mono(m->clock);
    nw_rc_t rc = m->inner->ops->instance_state(m->inner, pid, state, len, err);
    measure(m, "Get", t0, rc, rc == NW_ENOTFOUND ? "NodeClaimNotFoundError" : "");
    return rc;
}

/* ---- passed through ---- */

static NW_MUST_USE nw_rc_t op_resolve(nw_cloud_t *c, const cJSON *nc, const nw_cloud_class_t **out,
                                      nw_err_t *err)
{
    return me(c)->inner->ops->resolve(me(c)->inner, nc, out, err);
}

static NW_MUST_USE nw_rc_t op_class_status(nw_cloud_t *c, const cJSON *nc, int64_t now, cJSON **out,
                                           nw_err_t *err)
{
    return me(c)->inner->ops->class_status(me(c)->inner, nc, now, out, err);
}

static const nw_catalog_t *op_catalog(nw_cloud_t *c)
{
    return me(c)->inner->ops->catalog(me(c)->inner);
}

static nw_ice_t *op_ice(nw_cloud_t *c)
{
    return me(c)->inner->ops->ice(me(c)->inner);
}

static NW_MUST_USE nw_rc_t op_offer_zones(nw_cloud_t *c, const nw_catalog_zone_t *z, int n,
                                          nw_err_t *err)
{
    return me(c)->inner->ops->offer_zones(me(c)->inner, z, n, err);
}

static void op_refresh(nw_cloud_t *c, int64_t now)
{
    if (me(c)->inner->ops->refresh)
        me(c)->inner->ops->refresh(me(c)->inner, now);
}

static int64_t op_reservation_available(nw_cloud_t *c, const char *id)
{
    return me(c)->inner->ops->reservation_available
               ? me(c)->inner->ops->reservation_available(me(c)->inner, id)
               : -1;
}

static NW_MUST_USE nw_rc_t op_metrics(nw_cloud_t *c, nw_buf_t *out)
{
    return me(c)->inner->ops->metrics ? me(c)->inner->ops->metrics(me(c)->inner, out) : NW_OK;
}

static NW_MUST_USE nw_rc_t op_finalize_class(nw_cloud_t *c, const cJSON *nc, nw_err_t *err)
{
    if (!me(c)->inner->ops->finalize_class)
        return NW_OK;
    return me(c)->inner->ops->finalize_class(me(c)->inner, nc, err);
}

static NW_MUST_USE nw_rc_t op_health(nw_cloud_t *c, nw_cloud_healths_t *out, nw_cloud_error_t *ce,
                                     nw_err_t *err)
{
    if (!me(c)->inner->ops->instance_health)
        return nw_err_set(err, NW_EINVAL, "cloud", "the provider has no instance health");
    return me(c)->inner->ops->instance_health(me(c)->inner, out, ce, err);
}

static void op_free(nw_cloud_t *c)
{
    if (!c)
        return;
    me(c)->inner->ops->free(me(c)->inner);
    free(c);
}

static const nw_cloud_ops_t metered_ops = {
    .launch = op_launch,
    .terminate = op_terminate,
    .list = op_list,
    .resolve = op_resolve,
    .class_status = op_class_status,
    .catalog = op_catalog,
    .ice = op_ice,
    .free = op_free,
    .instance_state = op_state,
    .offer_zones = op_offer_zones,
    .refresh = op_refresh,
    .metrics = op_metrics,
    .instance_health = op_health,
    .reservation_available = op_reservation_available,
    .finalize_class = op_finalize_class,
};

nw_cloud_t *nw_metered_new(nw_cloud_t *inner, const char *provider, nw_series_t *series,
                           const nw_clock_t *clock)
{
    metered_t *m = calloc(1, sizeof *m);
    if (!m) {
        inner->ops->free(inner);
        return NULL;
    }
    m->base.ops = &metered_ops;
    m->inner = inner;
    m->provider = provider;
    m->series = series;
    m->clock = clock;
    return &m->base;
}
