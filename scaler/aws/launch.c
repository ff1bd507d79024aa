/*
 * scaler/aws/launch.c — the launcher (scaler/aws/launch.h): its life cycle, the settings of
 * the bootstraps it generates, and a launch from plan to settle
 * (aws/karpenter-provider-aws pkg/providers/instance/instance.go Create). Its parts:
 * launchtemplate.c (tags, launch templates and their userData), offerings.c (candidate
 * offerings and subnets), capreservation.c (capacity reservations), fleet.c (the plan, the
 * CreateFleet call, its outcome), instance.c (find, terminate, list); what they share is in
 * launch_int.h.
 */
#include "scaler/aws/launch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaler/aws/launch_int.h"

nw_launch_t *nw_launch_new(nw_ec2_t *ec2, const nw_catalog_t *catalog, nw_ice_t *ice,
                           const nw_clock_t *clock, const char *cluster_name)
{
    nw_launch_t *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->ec2 = ec2;
    l->cat = catalog;
    l->ice = ice;
    l->clock = clock ? clock : nw_clock_system();
    snprintf(l->cluster, sizeof l->cluster, "%s", cluster_name ? cluster_name : "");
    nw_catalog_overhead_opts_default(&l->overhead);
    return l;
}

nw_rc_t nw_launch_set_bootstrap(nw_launch_t *l, const nw_launch_bootstrap_t *b)
{
    char *e = strdup(b->endpoint ? b->endpoint : ""), *c = strdup(b->ca_bundle ? b->ca_bundle : "");
    char *r = strdup(b->cluster_cidr ? b->cluster_cidr : "");
    if (!e || !c || !r) {
        free(e);
        free(c);
        free(r);
        return NW_ENOMEM;
    }
    free(l->endpoint);
    free(l->ca_bundle);
    free(l->cidr);
    l->endpoint = e;
    l->ca_bundle = c;
    l->cidr = r;
    if (b->vm_overhead > 0)
        l->overhead.vm_memory_overhead_percent = b->vm_overhead;
    l->overhead.reserved_enis = b->reserved_enis;
    l->overhead.default_max_pods = b->default_max_pods;
    l->k8s_version = b->k8s_version;
    l->k8s_version_ud = b->k8s_version_ud;
    l->kube_dns = b->kube_dns;
    l->kube_dns_ud = b->kube_dns_ud;
    l->dns_ip[0] = 0;
    l->dns_retry_ns = 0;
    l->service_cidr = b->service_cidr;
    l->service_cidr_ud = b->service_cidr_ud;
    l->svc_cidr[0] = l->svc_src[0] = l->svc_why[0] = 0;
    l->svc_next_ns = 0;
    return NW_OK;
}

void nw_launch_free(nw_launch_t *l)
{
    if (!l)
        return;
    free(l->endpoint);
    free(l->ca_bundle);
    free(l->cidr);
    free(l);
}

nw_rc_t nw_launch(nw_launch_t *l, const nw_launch_req_t *r, nw_launch_result_t *out,
                  nw_ec2_error_t *ae, nw_err_t *err)
{
    nw_ec2_error_t local;
    if (!ae)
        ae = &local;
    memset(ae, 0, sizeof *ae);
    memset(out, 0, sizeof *out);
    nw_rc_t rc = NW_OK;
    for (int attempt = 0; attempt < 2; attempt++) {
        nw_launch_plan_t *pl = NULL;
        if ((rc = nw_fleet_plan(l, r, attempt, &pl, ae, err)) != NW_OK)
            return rc;
        /* the outcome is in pl and ae: nw_fleet_settle reads it */
        (void)nw_fleet(l, pl, ae);
        int again = 0;
        rc = nw_fleet_settle(l, pl, out, &again, ae, err);
        nw_fleet_plan_free(pl);
        if (!again)
            break;
        memset(ae, 0, sizeof *ae);
    }
    if (rc == NW_OK)
        nw_instance_find_partition(l, out);
    return rc;
}
