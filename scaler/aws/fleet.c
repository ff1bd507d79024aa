/*
 * scaler/aws/fleet.c — one CreateFleet try of a launch: the plan (candidates, one template per
 * AMI, max pods, EFA count and reservation, the request), the call, and its outcome (ICE
 * marks, the template cache, the result)
 * (aws/karpenter-provider-aws pkg/providers/instance/instance.go launchInstance,
 * getLaunchTemplateConfigs, getOverrides, updateUnavailableOfferingsCache). See launch.h.
 */
#include "scaler/aws/launch.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "scaler/aws/launch_int.h"

#define MAX_CANDS 1024

/* ---- fleet ---------------------------------------------------------------------------------- */

/* The ClientToken of try `attempt` of a launch with token tok ("" when none): the token
 * itself for the first, a suffix for the retry after a missing template (that first
 * CreateFleet answered, so its token is spent). */
static void attempt_token(const char *tok, int attempt, char *out, size_t len)
{
    size_t n = tok ? strlen(tok) : 0, max = attempt ? NW_CLOUD_TOKEN_MAX - 2 : NW_CLOUD_TOKEN_MAX;
    if (n > max)
        n = max;
    if (n + 3 > len)
        n = len > 3 ? len - 3 : 0;
    memcpy(out, tok ? tok : "", n);
    out[n] = 0;
    if (n && attempt) {
        out[n] = '.';
        out[n + 1] = (char)('0' + attempt % 10);
        out[n + 2] = 0;
    }
}

static NW_MUST_USE nw_rc_t fleet_params(nw_launch_t *l, const nw_launch_req_t *r,
                                        nw_launch_plan_t *pl)
{
    nw_ec2_params_t *p = &pl->p;
    const char *ct = pl->ct;
    char tok[NW_CLOUD_TOKEN_MAX + 1];
    attempt_token(r->client_token, pl->attempt, tok, sizeof tok);
    nw_rc_t rc = nw_ec2_param(p, "Type", "instant");
    if (rc == NW_OK && tok[0])
        rc = nw_ec2_param(p, "ClientToken", tok);
    if (rc == NW_OK)
        rc = nw_ec2_param(p, "TargetCapacitySpecification.TotalTargetCapacity", "1");
    /* reserved: on-demand capacity in the templates' reservations, or capacity blocks */
    const char *dtype = strcmp(ct, "reserved") != 0 ? ct
                        : pl->cr_block              ? "capacity-block"
                                                    : "on-demand";
    if (rc == NW_OK)
        rc = nw_ec2_param(p, "TargetCapacitySpecification.DefaultTargetCapacityType", dtype);
    if (rc == NW_OK)
        rc = strcmp(ct, "spot") == 0
                 ? nw_ec2_param(p, "SpotOptions.AllocationStrategy", "price-capacity-optimized")
                 : nw_ec2_param(p, "OnDemandOptions.AllocationStrategy", "lowest-price");
    /* no Context when the NodeClaim's minValues were relaxed (aws/karpenter-provider-aws
     * pkg/providers/instance/instance.go launchInstance) */
    const char *ctx = nw_json_str(nw_json_get(r->nodeclass, "spec"), "context");
    const char *relaxed = nw_json_str(nw_json_get(nw_json_get(r->claim, "metadata"), "annotations"),
                                      "karpenter.sh/nodeclaim-min-values-relaxed");
    if (relaxed && strcmp(relaxed, "true") == 0)
        ctx = NULL;
    if (ctx && rc == NW_OK)
        rc = nw_ec2_param(p, "Context", ctx);
    for (int a = 0; a < pl->namis && rc == NW_OK; a++) {
        rc = nw_ec2_paramf(
            p, pl->names[a],
            "LaunchTemplateConfigs.%d.LaunchTemplateSpecification.LaunchTemplateName", a + 1);
        if (rc == NW_OK)
            rc = nw_ec2_paramf(p, "$Latest",
                               "LaunchTemplateConfigs.%d.LaunchTemplateSpecification.Version",
                               a + 1);
        int o = 0;
        for (int i = 0; i < pl->n && rc == NW_OK; i++) {
            const cand_t *c = &pl->c[i];
            if (strcmp(c->ami, pl->amis[a]) != 0 || c->pods != pl->pods[a] ||
                c->efa != pl->efa[a] || strcmp(c->cr, pl->crs[a]) != 0)
                continue;
            o++;
            char pr[32];
            snprintf(pr, sizeof pr, "%.6f", c->price);
#define OV(field, val)                                                                             \
    do {                                                                                           \
        if (rc == NW_OK)                                                                           \
            rc =                                                                                   \
                nw_ec2_paramf(p, (val), "LaunchTemplateConfigs.%d.Overrides.%d." field, a + 1, o); \
    } while (0)
            OV("InstanceType", c->t->name);
            OV("SubnetId", c->subnet);
            OV("ImageId", c->ami);
            OV("AvailabilityZone", c->zone);
            OV("Priority", pr);
#undef OV
        }
    }
    nw_ec2_tag_t t[MAX_TAGS];
    int nt = nw_launchtemplate_tags_build(l, r, 1, t);
    if (rc == NW_OK)
        rc = nw_launchtemplate_tags_spec(p, "", 1, "instance", t, nt);
    if (rc == NW_OK)
        rc = nw_launchtemplate_tags_spec(p, "", 2, "volume", t, nt);
    nt = nw_launchtemplate_tags_build(l, r, 0, t);
    if (rc == NW_OK)
        rc = nw_launchtemplate_tags_spec(p, "", 3, "fleet", t, nt);
    return rc;
}

static bool lt_missing(const char *code)
{
    return strcmp(code, "InvalidLaunchTemplateName.NotFoundException") == 0 ||
           strcmp(code, "InvalidLaunchTemplateId.NotFound") == 0 ||
           strcmp(code, "InvalidLaunchTemplateName.NotFound") == 0 ||
           strcmp(code, "InvalidLaunchTemplateId.NotFoundException") == 0;
}

void nw_fleet_plan_free(nw_launch_plan_t *pl)
{
    if (!pl)
        return;
    if (pl->have_params)
        nw_ec2_params_cleanup(&pl->p);
    nw_ec2xml_fleet_result_free(&pl->fr);
    free(pl->c);
    free(pl);
}

/* With on-demand allowed too, drop the spot candidates c[0..n) dearer than the cheapest
 * on-demand offering; the new count, or -1 out of memory. */
static int drop_dearer_spot(nw_launch_t *l, const nw_launch_req_t *r, cand_t *c, int n, int64_t now)
{
    cand_t *od = calloc(MAX_CANDS, sizeof *od);
    if (!od)
        return -1;
    int nod = nw_offerings_collect(l, r, "on-demand", od, MAX_CANDS, now);
    if (!r->min_values)
        nod = nw_offerings_filter_exotic(od, nod);
    double cheapest = -1;
    for (int i = 0; i < nod; i++)
        if (cheapest < 0 || od[i].price < cheapest)
            cheapest = od[i].price;
    free(od);
    if (cheapest > 0) {
        int j = 0;
        for (int i = 0; i < n; i++)
            if (c[i].price <= cheapest)
                c[j++] = c[i];
        n = j;
    }
    return n;
}

/* The candidate offerings into pl->c and their capacity type *ct: reserved capacity
 * first (it is paid for), then spot, then on-demand, as the claim allows; *n of them.
 * None: an InsufficientCapacity error in ae. */
static NW_MUST_USE nw_rc_t collect_candidates(nw_launch_t *l, const nw_launch_req_t *r,
                                              nw_launch_plan_t *pl, int64_t now, int *n,
                                              const char **ct, nw_ec2_error_t *ae, nw_err_t *err)
{
    cand_t *c = pl->c;
    bool want_spot = false, want_od = r->ncapacity_types == 0, want_res = false;
    for (int i = 0; i < r->ncapacity_types; i++) {
        want_spot |= strcmp(r->capacity_types[i], "spot") == 0;
        want_od |= strcmp(r->capacity_types[i], "on-demand") == 0;
        want_res |= strcmp(r->capacity_types[i], "reserved") == 0;
    }
    *n = 0;
    *ct = NULL;
    char why[256] = ""; /* a type the class cannot launch, and why */
    /* reserved capacity first (it is paid for), then spot, then on-demand */
    if (want_res) {
        *n = nw_capreservation_collect(l, r, c, MAX_CANDS, now, &pl->cr_block);
        *ct = "reserved";
    }
    if (*n == 0 && want_spot) {
        *n = nw_offerings_collect_why(l, r, "spot", c, MAX_CANDS, now, why, sizeof why);
        *ct = "spot";
        if (!r->min_values)
            *n = nw_offerings_filter_exotic(c, *n);
        if (*n > 0 && want_od) {
            /* drop spot offerings dearer than the cheapest on-demand one */
            *n = drop_dearer_spot(l, r, c, *n, now);
            if (*n < 0)
                return nw_err_set(err, NW_ENOMEM, "launch", "out of memory");
        }
    }
    if (*n == 0 && want_od) {
        *n = nw_offerings_collect_why(l, r, "on-demand", c, MAX_CANDS, now, why, sizeof why);
        *ct = "on-demand";
        if (!r->min_values)
            *n = nw_offerings_filter_exotic(c, *n);
    }
    if (*n == 0) {
        ae->cls = NW_EC2_CAPACITY;
        snprintf(ae->code, sizeof ae->code, "InsufficientCapacity");
        snprintf(ae->message, sizeof ae->message,
                 "no available offering for %d instance types in the allowed zones and "
                 "capacity types (ICE cache, subnets, AMI architectures, the class's "
                 "compatibility filters)%s%.300s",
                 r->ntypes, why[0] ? "; " : "", why);
        return nw_err_set(err, NW_EAWS, "launch", "%s", ae->message);
    }
    return NW_OK;
}

/* One template per AMI and, for a generated bootstrap, per max-pods value (and per
 * reservation): the groups into pl->amis/pods/efa/crs; past MAX_LTS groups the dearer
 * candidates are left out of pl->c. */
static void group_templates(nw_launch_plan_t *pl)
{
    cand_t *c = pl->c;
    int j = 0;
    for (int i = 0; i < pl->n; i++) {
        int k;
        for (k = 0;
             k < pl->namis && (strcmp(pl->amis[k], c[i].ami) != 0 || pl->pods[k] != c[i].pods ||
                               pl->efa[k] != c[i].efa || strcmp(pl->crs[k], c[i].cr) != 0);
             k++) {
        }
        if (k == pl->namis && pl->namis < MAX_LTS) {
            pl->pods[pl->namis] = c[i].pods;
            pl->efa[pl->namis] = c[i].efa;
            snprintf(pl->crs[pl->namis], sizeof pl->crs[0], "%s", c[i].cr);
            snprintf(pl->amis[pl->namis++], sizeof pl->amis[0], "%s", c[i].ami);
        }
        if (k < pl->namis)
            c[j++] = c[i]; /* past MAX_LTS groups, the dearer types are left out */
    }
    pl->n = j;
}

/* Ensure each group's launch template exists (names and cached ids into pl). */
static NW_MUST_USE nw_rc_t ensure_templates(nw_launch_t *l, const nw_launch_req_t *r,
                                            nw_launch_plan_t *pl, const char *ct,
                                            nw_ec2_error_t *ae, nw_err_t *err)
{
    for (int a = 0; a < pl->namis; a++) {
        snprintf(l->lt_cr, sizeof l->lt_cr, "%s", pl->crs[a]);
        l->lt_cr_block = pl->crs[a][0] && pl->cr_block;
        nw_rc_t rc = nw_launchtemplate_ensure(l, r, pl->amis[a], ct, pl->pods[a], pl->efa[a],
                                              pl->names[a], sizeof pl->names[a], ae, err);
        l->lt_cr[0] = 0;
        l->lt_cr_block = 0;
        if (rc != NW_OK)
            return rc;
        const char *id = nw_launchtemplate_cached(l, pl->names[a]);
        snprintf(pl->lt_ids[a], sizeof pl->lt_ids[a], "%s", id ? id : "");
    }
    return NW_OK;
}

nw_rc_t nw_fleet_plan(nw_launch_t *l, const nw_launch_req_t *r, int attempt, nw_launch_plan_t **out,
                      nw_ec2_error_t *ae, nw_err_t *err)
{
    *out = NULL;
    if (!r->resolved || !r->resolved->ready)
        return nw_err_set(err, NW_EINVAL, "nodeclass", "EC2NodeClass %s is not ready: %s",
                          r->resolved ? r->resolved->name : "?",
                          r->resolved ? r->resolved->message : "not resolved");
    int64_t now = nw_clock_mono(l->clock);
    nw_launch_plan_t *pl = calloc(1, sizeof *pl);
    cand_t *c = pl ? calloc(MAX_CANDS, sizeof *c) : NULL;
    if (!c) {
        free(pl);
        return nw_err_set(err, NW_ENOMEM, "launch", "out of memory");
    }
    pl->c = c;
    pl->attempt = attempt;
    snprintf(pl->nodeclaim, sizeof pl->nodeclaim, "%s", r->nodeclaim ? r->nodeclaim : "");
    snprintf(pl->nodepool, sizeof pl->nodepool, "%s", r->nodepool ? r->nodepool : "");
    int n;
    const char *ct;
    nw_rc_t rc = collect_candidates(l, r, pl, now, &n, &ct, ae, err);
    if (rc != NW_OK)
        goto fail;
    qsort(c, (size_t)n, sizeof *c, nw_offerings_cand_cmp);
    pl->n = nw_offerings_truncate_types(c, n);
    /* the plan is kept through the CreateFleet call (a second or more on EC2, with up to
     * scaler.launchConcurrency plans at once): only the candidates left, not room for
     * MAX_CANDS (400 KB) */
    cand_t *fit = realloc(c, (size_t)(pl->n > 0 ? pl->n : 1) * sizeof *c);
    if (fit)
        pl->c = c = fit;
    snprintf(pl->ct, sizeof pl->ct, "%s", ct);
    group_templates(pl);
    pl->kubeadm = nw_launchtemplate_kubeadm(r);
    snprintf(pl->pg_id, sizeof pl->pg_id, "%s", r->resolved->pg_id);
    pl->pg_partitioned = pl->pg_id[0] && strcmp(r->resolved->pg_strategy, "partition") == 0;
    pl->partition = nw_launchtemplate_claim_partition(r);
    if ((rc = ensure_templates(l, r, pl, ct, ae, err)) != NW_OK)
        goto fail;
    if ((rc = nw_ec2_params_init(&pl->p, "CreateFleet")) == NW_OK)
        rc = fleet_params(l, r, pl);
    pl->have_params = 1;
    if (rc != NW_OK) {
        rc = nw_err_set(err, rc, "CreateFleet", "request too large");
        goto fail;
    }
    *out = pl;
    return NW_OK;
fail:
    nw_fleet_plan_free(pl);
    return rc;
}

nw_rc_t nw_fleet(nw_launch_t *l, nw_launch_plan_t *pl, nw_ec2_error_t *ae)
{
    memset(&pl->fleet_err, 0, sizeof pl->fleet_err);
    pl->fleet_rc = nw_ec2_create_fleet(l->ec2, &pl->p, &pl->fr, ae, &pl->fleet_err);
    /* a kubeadm bootstrap's templates hold this NodeClaim's token: used up once launched */
    for (int a = 0; pl->kubeadm && pl->fleet_rc == NW_OK && pl->fr.ninst > 0 && a < pl->namis;
         a++) {
        nw_ec2_error_t dae = {0};
        nw_err_t de = {0};
        if (!pl->lt_ids[a][0])
            continue;
        if (nw_ec2_delete_launch_template(l->ec2, pl->lt_ids[a], &dae, &de) != NW_OK)
            nw_log_warn(COMP, "cannot delete the bootstrap's launch template",
                        NW_LS("id", pl->lt_ids[a]), NW_LS("error", de.msg));
    }
    return pl->fleet_rc;
}

/* What the fleet's errors say about capacity: subnets out of addresses, exhausted
 * reservations, spot not permitted and unavailable offerings marked in the ICE cache;
 * *all_ice when every error was a capacity one, *relaunch when a template was missing. */
static void note_fleet_errors(nw_launch_t *l, const nw_launch_plan_t *pl, int64_t now,
                              bool *all_ice, bool *relaunch)
{
    const nw_ec2_fleet_result_t *fr = &pl->fr;
    const char *ct = pl->ct;
    *all_ice = fr->nerrs > 0;
    *relaunch = false;
    for (size_t i = 0; i < fr->nerrs; i++) {
        const nw_ec2_fleet_error_t *e = &fr->errs[i];
        nw_ec2_class_t cls = nw_ec2_classify(e->code, e->message, 400);
        if (strcmp(e->code, "InsufficientFreeAddressesInSubnet") == 0 && e->subnet_id[0])
            nw_ice_mark_subnet(l->ice, e->subnet_id, now);
        /* an exhausted reservation has nothing left until the next sync (Karpenter marks
         * the reservation unavailable); its type and zone stay available otherwise */
        bool res_full =
            strcmp(ct, "reserved") == 0 && strcmp(e->code, "ReservationCapacityExceeded") == 0;
        for (int a = 0; res_full && a < pl->namis; a++)
            if (!e->lt_id[0] || strcmp(e->lt_id, pl->lt_ids[a]) == 0)
                nw_capreservation_mark(l, pl->crs[a], 1);
        if (strcmp(e->code, "AuthFailure.ServiceLinkedRoleCreationNotPermitted") == 0)
            nw_ice_mark_capacity_type(l->ice, "spot", now);
        else if (cls == NW_EC2_CAPACITY && e->type[0] && e->zone[0] && !res_full)
            nw_ice_mark(l->ice, e->lifecycle[0] ? e->lifecycle : ct, e->type, e->zone, now);
        if (cls != NW_EC2_CAPACITY)
            *all_ice = false;
        if (lt_missing(e->code))
            *relaunch = true;
    }
}

/* The fleet launched nothing: its first error (the offering it names into out) as the
 * launch's error. */
static NW_MUST_USE nw_rc_t launched_nothing(const nw_launch_plan_t *pl, bool all_ice,
                                            nw_launch_result_t *out, nw_ec2_error_t *ae,
                                            nw_err_t *err)
{
    const nw_ec2_fleet_result_t *fr = &pl->fr;
    const char *ct = pl->ct;
    const nw_ec2_fleet_error_t *e0 = fr->nerrs ? &fr->errs[0] : NULL;
    if (e0) {
        snprintf(out->failed_type, sizeof out->failed_type, "%s", e0->type);
        snprintf(out->failed_zone, sizeof out->failed_zone, "%s", e0->zone);
        snprintf(out->failed_capacity_type, sizeof out->failed_capacity_type, "%s",
                 e0->lifecycle[0] ? e0->lifecycle : ct);
    }
    ae->cls = all_ice ? NW_EC2_CAPACITY : nw_ec2_classify(e0 ? e0->code : "", "", 400);
    snprintf(ae->code, sizeof ae->code, "%s", e0 ? e0->code : "NoInstance");
    snprintf(ae->message, sizeof ae->message, "%s",
             e0 ? e0->message : "CreateFleet returned no instance and no error");
    return nw_err_set(err, NW_EAWS, "CreateFleet", "CreateFleet launched nothing: %s: %s%s",
                      ae->code, ae->message, all_ice ? " (insufficient capacity)" : "");
}

/* The launched instance into out, with what its candidate offering says (price, zone
 * id, reservation, template) and the placement group; its reservation marked
 * available again. */
static void describe_instance(nw_launch_t *l, const nw_launch_plan_t *pl, nw_launch_result_t *out)
{
    const nw_ec2_fleet_result_t *fr = &pl->fr;
    const char *ct = pl->ct;
    const nw_ec2_fleet_instance_t *fi = &fr->inst[0];
    snprintf(out->instance_id, sizeof out->instance_id, "%s", fi->instance_id);
    snprintf(out->type, sizeof out->type, "%s", fi->type);
    snprintf(out->zone, sizeof out->zone, "%s", fi->zone);
    snprintf(out->subnet_id, sizeof out->subnet_id, "%s", fi->subnet_id);
    snprintf(out->image_id, sizeof out->image_id, "%s", fi->image_id);
    snprintf(out->capacity_type, sizeof out->capacity_type, "%s", ct);
    for (int i = 0; i < pl->n; i++) {
        const cand_t *c = &pl->c[i];
        if (strcmp(c->t->name, fi->type) != 0 || strcmp(c->zone, fi->zone) != 0)
            continue;
        if (c->cr[0]) { /* the reservation of the template it launched from */
            int a = 0;
            while (a < pl->namis && strcmp(pl->crs[a], c->cr) != 0)
                a++;
            if (fi->lt_id[0] && a < pl->namis && strcmp(pl->lt_ids[a], fi->lt_id) != 0)
                continue;
            snprintf(out->cr_id, sizeof out->cr_id, "%s", c->cr);
            snprintf(out->cr_type, sizeof out->cr_type, "%s", c->cr_type);
            out->cr_interruptible = c->cr_interruptible;
        }
        out->price = c->price;
        snprintf(out->zone_id, sizeof out->zone_id, "%s", c->zone_id);
        if (!out->image_id[0])
            snprintf(out->image_id, sizeof out->image_id, "%s", c->ami);
        for (int a = 0; a < pl->namis; a++)
            if (strcmp(pl->amis[a], c->ami) == 0 && pl->pods[a] == c->pods &&
                pl->efa[a] == c->efa && strcmp(pl->crs[a], c->cr) == 0)
                snprintf(out->launch_template, sizeof out->launch_template, "%s", pl->names[a]);
    }
    if (out->cr_id[0])
        nw_capreservation_mark(l, out->cr_id, 0);
    snprintf(out->provider_id, sizeof out->provider_id, "aws:///%s/%s", out->zone,
             out->instance_id);
    snprintf(out->pg_id, sizeof out->pg_id, "%s", pl->pg_id);
    out->pg_partitioned = pl->pg_partitioned;
    if (pl->pg_partitioned && pl->partition > 0)
        snprintf(out->pg_partition, sizeof out->pg_partition, "%d", pl->partition);
}

nw_rc_t nw_fleet_settle(nw_launch_t *l, nw_launch_plan_t *pl, nw_launch_result_t *out, int *again,
                        nw_ec2_error_t *ae, nw_err_t *err)
{
    int64_t now = nw_clock_mono(l->clock);
    nw_ec2_fleet_result_t *fr = &pl->fr;
    const char *ct = pl->ct;
    *again = 0;
    if (pl->fleet_rc == NW_EAWS && lt_missing(ae->code) && pl->attempt == 0) {
        for (int a = 0; a < pl->namis; a++)
            nw_launchtemplate_forget(l, pl->names[a]);
        *again = 1;
        return pl->fleet_rc;
    }
    if (pl->fleet_rc != NW_OK) {
        if (strcmp(ae->code, "IdempotentParameterMismatch") == 0)
            out->token_conflict = 1;
        if (err && !err->rc)
            *err = pl->fleet_err;
        return pl->fleet_rc;
    }
    bool all_ice, relaunch;
    note_fleet_errors(l, pl, now, &all_ice, &relaunch);
    if (fr->ninst == 0)
        out->token_spent = 1; /* EC2 keeps this fleet (no instance) under the token */
    if (fr->ninst == 0 && relaunch && pl->attempt == 0) {
        for (int a = 0; a < pl->namis; a++)
            nw_launchtemplate_forget(l, pl->names[a]);
        *again = 1;
        return NW_EAWS;
    }
    if (fr->ninst == 0)
        return launched_nothing(pl, all_ice, out, ae, err);
    for (int a = 0; pl->kubeadm && a < pl->namis; a++)
        nw_launchtemplate_drop(l, pl->names[a]);
    describe_instance(l, pl, out);
    nw_log_info(COMP, "launched", NW_LS("nodeclaim", pl->nodeclaim),
                NW_LS("nodepool", pl->nodepool), NW_LS("instance", out->instance_id),
                NW_LS("type", out->type), NW_LS("zone", out->zone), NW_LS("capacity_type", ct),
                NW_LI("fleet_errors", fr->nerrs));
    return NW_OK;
}
