/* scaler/aws/nodeclass.c — EC2NodeClass selector resolution; see nodeclass.h. */
#include "scaler/aws/nodeclass.h"

#include "common/json.h"
#include "scaler/aws/iam.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FILTERS 24

static const cJSON *get(const cJSON *o, const char *k)
{
    return cJSON_GetObjectItemCaseSensitive(o, k);
}

static const char *gets(const cJSON *o, const char *k)
{
    const cJSON *v = get(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

void nw_nodeclass_resolved_cleanup(nw_nodeclass_resolved_t *r)
{
    if (!r)
        return;
    free(r->subnets);
    free(r->sgs);
    free(r->amis);
    memset(r, 0, sizeof *r);
}

/* tags: {k: v} -> tag:k=v, or tag-key=k for "*" */
static int tag_filters(const cJSON *tags, nw_ec2_filter_t *f, int nf, char names[][160])
{
    const cJSON *it;
    cJSON_ArrayForEach(it, tags)
    {
        if (nf >= MAX_FILTERS || !cJSON_IsString(it))
            continue;
        if (strcmp(it->valuestring, "*") == 0) {
            f[nf] = (nw_ec2_filter_t){"tag-key", {it->string}, 1};
        } else {
            snprintf(names[nf], 160, "tag:%s", it->string);
            f[nf] = (nw_ec2_filter_t){names[nf], {it->valuestring}, 1};
        }
        nf++;
    }
    return nf;
}

static nw_rc_t check_terms(const cJSON *spec, const char *key, const cJSON **terms, int *n,
                           nw_err_t *err)
{
    char path[64];
    snprintf(path, sizeof path, "spec.%s", key);
    *terms = get(spec, key);
    if (!cJSON_IsArray(*terms) || cJSON_GetArraySize(*terms) == 0)
        return nw_err_set(err, NW_EINVAL, path, "required: at least one selector term");
    *n = cJSON_GetArraySize(*terms);
    if (*n > NW_NC_MAX_TERMS)
        return nw_err_set(err, NW_EINVAL, path, "at most %d terms", NW_NC_MAX_TERMS);
    return NW_OK;
}

static nw_rc_t resolve_subnets(nw_ec2_t *ec2, const cJSON *terms, nw_nodeclass_resolved_t *r,
                               nw_err_t *err)
{
    const cJSON *t;
    int i = 0;
    nw_ec2_subnets_t all = {0};
    nw_rc_t rc = NW_OK;
    cJSON_ArrayForEach(t, terms)
    {
        nw_ec2_filter_t f[MAX_FILTERS];
        char names[MAX_FILTERS][160];
        int nf = 0;
        const char *id = gets(t, "id");
        if (id)
            f[nf++] = (nw_ec2_filter_t){"subnet-id", {id}, 1};
        nf = tag_filters(get(t, "tags"), f, nf, names);
        size_t before = all.n;
        if (nf == 0) {
            r->subnet_found[i++] = 0;
            continue;
        }
        if ((rc = nw_ec2_describe_subnets(ec2, f, nf, &all, NULL, err)) != NW_OK)
            goto out;
        r->subnet_found[i++] = (int)(all.n - before);
    }
    r->nsubnet_terms = i;
    r->subnets = calloc(all.n ? all.n : 1, sizeof *r->subnets);
    if (!r->subnets) {
        rc = nw_err_set(err, NW_ENOMEM, "subnets", "out of memory");
        goto out;
    }
    for (size_t k = 0; k < all.n; k++) {
        int dup = 0;
        for (size_t j = 0; j < r->nsubnets; j++)
            dup |= strcmp(r->subnets[j].id, all.v[k].id) == 0;
        if (dup)
            continue;
        nw_nc_subnet_t *s = &r->subnets[r->nsubnets++];
        snprintf(s->id, sizeof s->id, "%s", all.v[k].id);
        snprintf(s->zone, sizeof s->zone, "%s", all.v[k].zone);
        snprintf(s->zone_id, sizeof s->zone_id, "%s", all.v[k].zone_id);
        s->available_ips = all.v[k].available_ips;
    }
out:
    nw_ec2_subnets_free(&all);
    return rc;
}

static nw_rc_t resolve_sgs(nw_ec2_t *ec2, const cJSON *terms, nw_nodeclass_resolved_t *r,
                           nw_err_t *err)
{
    const cJSON *t;
    int i = 0;
    nw_ec2_sgs_t all = {0};
    nw_rc_t rc = NW_OK;
    cJSON_ArrayForEach(t, terms)
    {
        nw_ec2_filter_t f[MAX_FILTERS];
        char names[MAX_FILTERS][160];
        int nf = 0;
        const char *id = gets(t, "id"), *name = gets(t, "name");
        if (id)
            f[nf++] = (nw_ec2_filter_t){"group-id", {id}, 1};
        if (name)
            f[nf++] = (nw_ec2_filter_t){"group-name", {name}, 1};
        nf = tag_filters(get(t, "tags"), f, nf, names);
        size_t before = all.n;
        if (nf == 0) {
            r->sg_found[i++] = 0;
            continue;
        }
        if ((rc = nw_ec2_describe_sgs(ec2, f, nf, &all, NULL, err)) != NW_OK)
            goto out;
        r->sg_found[i++] = (int)(all.n - before);
    }
    r->nsg_terms = i;
    r->sgs = calloc(all.n ? all.n : 1, sizeof *r->sgs);
    if (!r->sgs) {
        rc = nw_err_set(err, NW_ENOMEM, "securityGroups", "out of memory");
        goto out;
    }
    for (size_t k = 0; k < all.n; k++) {
        int dup = 0;
        for (size_t j = 0; j < r->nsgs; j++)
            dup |= strcmp(r->sgs[j].id, all.v[k].id) == 0;
        if (dup)
            continue;
        nw_nc_sg_t *s = &r->sgs[r->nsgs++];
        snprintf(s->id, sizeof s->id, "%s", all.v[k].id);
        snprintf(s->name, sizeof s->name, "%s", all.v[k].name);
    }
out:
    nw_ec2_sgs_free(&all);
    return rc;
}

static nw_rc_t resolve_amis(nw_ec2_t *ec2, const cJSON *terms, nw_nodeclass_resolved_t *r,
                            nw_err_t *err)
{
    const cJSON *t;
    int i = 0;
    nw_ec2_images_t all = {0};
    nw_rc_t rc = NW_OK;
    cJSON_ArrayForEach(t, terms)
    {
        nw_ec2_filter_t f[MAX_FILTERS];
        char names[MAX_FILTERS][160];
        int nf = 0;
        const char *id = gets(t, "id"), *name = gets(t, "name"), *owner = gets(t, "owner");
        const char *alias = gets(t, "alias"), *ssm = gets(t, "ssmParameter");
        const char *owners[2];
        int nowners = 0;
        if (alias || ssm) {
            r->ami_found[i] = -1;
            snprintf(r->ami_term_note[i], sizeof r->ami_term_note[i],
                     "%s needs SSM, which nodewarden does not use: select the AMI by id, name or "
                     "tags",
                     alias ? "alias" : "ssmParameter");
            i++;
            continue;
        }
        if (id)
            f[nf++] = (nw_ec2_filter_t){"image-id", {id}, 1};
        if (name)
            f[nf++] = (nw_ec2_filter_t){"name", {name}, 1};
        nf = tag_filters(get(t, "tags"), f, nf, names);
        if (owner) {
            owners[nowners++] = owner;
        } else if (name && !id) {
            owners[nowners++] = "self";
            owners[nowners++] = "amazon";
        }
        size_t before = all.n;
        if (nf == 0) {
            r->ami_found[i++] = 0;
            continue;
        }
        if ((rc = nw_ec2_describe_images(ec2, f, nf, owners, nowners, &all, NULL, err)) != NW_OK)
            goto out;
        /* only available images count */
        size_t j = before;
        for (size_t k = before; k < all.n; k++)
            if (all.v[k].state[0] == 0 || strcmp(all.v[k].state, "available") == 0)
                all.v[j++] = all.v[k];
        all.n = j;
        r->ami_found[i++] = (int)(all.n - before);
    }
    r->nami_terms = i;
    r->amis = calloc(all.n ? all.n : 1, sizeof *r->amis);
    if (!r->amis) {
        rc = nw_err_set(err, NW_ENOMEM, "amis", "out of memory");
        goto out;
    }
    /* newest per architecture; non-deprecated preferred */
    for (size_t k = 0; k < all.n; k++) {
        const nw_ec2_image_t *im = &all.v[k];
        const char *arch = strcmp(im->arch, "arm64") == 0 ? "arm64" : "amd64";
        int dep =
            im->deprecation_ns != 0; /* deprecation set; the caller's clock decides nothing here */
        nw_nc_ami_t *cur = NULL;
        for (size_t j = 0; j < r->namis; j++)
            if (strcmp(r->amis[j].arch, arch) == 0)
                cur = &r->amis[j];
        int better = !cur || (cur->deprecated && !dep) ||
                     (cur->deprecated == dep && im->creation_ns > cur->creation_ns);
        if (!better)
            continue;
        if (!cur)
            cur = &r->amis[r->namis++];
        snprintf(cur->id, sizeof cur->id, "%s", im->id);
        snprintf(cur->name, sizeof cur->name, "%s", im->name);
        snprintf(cur->arch, sizeof cur->arch, "%s", arch);
        cur->creation_ns = im->creation_ns;
        cur->deprecated = dep;
    }
out:
    nw_ec2_images_free(&all);
    return rc;
}

static void set_not_ready(nw_nodeclass_resolved_t *r, const char *reason, const char *msg)
{
    if (r->reason[0])
        return;
    snprintf(r->reason, sizeof r->reason, "%s", reason);
    snprintf(r->message, sizeof r->message, "%s", msg);
}

nw_rc_t nw_nodeclass_resolve(nw_ec2_t *ec2, const cJSON *nc, nw_nodeclass_resolved_t *r,
                             nw_err_t *err)
{
    nw_rc_t rc;
    memset(r, 0, sizeof *r);
    const char *name = gets(get(nc, "metadata"), "name");
    if (!name || !*name)
        return nw_err_set(err, NW_EINVAL, "metadata.name", "required");
    snprintf(r->name, sizeof r->name, "%s", name);
    const cJSON *spec = get(nc, "spec");
    if (!cJSON_IsObject(spec))
        return nw_err_set(err, NW_EINVAL, "spec", "required");
    const char *fam = gets(spec, "amiFamily");
    if (fam)
        snprintf(r->ami_family, sizeof r->ami_family, "%s", fam);
    const cJSON *st, *gt, *at;
    int n;
    if ((rc = check_terms(spec, "subnetSelectorTerms", &st, &n, err)) != NW_OK ||
        (rc = check_terms(spec, "securityGroupSelectorTerms", &gt, &n, err)) != NW_OK ||
        (rc = check_terms(spec, "amiSelectorTerms", &at, &n, err)) != NW_OK)
        return rc;
    if ((rc = resolve_subnets(ec2, st, r, err)) != NW_OK ||
        (rc = resolve_sgs(ec2, gt, r, err)) != NW_OK ||
        (rc = resolve_amis(ec2, at, r, err)) != NW_OK) {
        nw_nodeclass_resolved_cleanup(r);
        return rc;
    }
    r->subnets_ready = r->nsubnets > 0;
    r->sgs_ready = r->nsgs > 0;
    r->amis_ready = r->namis > 0;
    if (!r->subnets_ready)
        set_not_ready(r, "SubnetsNotFound", "SubnetSelector did not match any Subnets");
    if (!r->sgs_ready)
        set_not_ready(r, "SecurityGroupsNotFound",
                      "SecurityGroupSelector did not match any SecurityGroups");
    if (!r->amis_ready)
        set_not_ready(r, "AMINotFound", "AMISelector did not match any AMIs");
    r->ready = r->subnets_ready && r->sgs_ready && r->amis_ready;
    return NW_OK;
}

static void add_condition(cJSON *conds, const char *type, int ok, const char *reason,
                          const char *msg, const char *ts, double gen)
{
    cJSON *c = nw_json_new_object();
    nw_json_add_string(c, "type", type);
    nw_json_add_string(c, "status", ok ? "True" : "False");
    nw_json_add_string(c, "reason", ok ? type : reason);
    nw_json_add_string(c, "message", ok ? "" : msg);
    nw_json_add_string(c, "lastTransitionTime", ts);
    if (gen > 0)
        nw_json_add_number(c, "observedGeneration", gen);
    nw_json_push(conds, c);
}

cJSON *nw_nodeclass_status_json(const nw_nodeclass_resolved_t *r, const cJSON *nc, int64_t now_ns)
{
    char ts[32];
    nw_time_format(now_ns, ts, sizeof ts);
    const cJSON *g = get(get(nc, "metadata"), "generation");
    double gen = cJSON_IsNumber(g) ? g->valuedouble : 0;
    cJSON *st = nw_json_new_object();
    cJSON *a = nw_json_add_array(st, "subnets");
    for (size_t i = 0; i < r->nsubnets; i++) {
        cJSON *s = nw_json_new_object();
        nw_json_add_string(s, "id", r->subnets[i].id);
        nw_json_add_string(s, "zone", r->subnets[i].zone);
        if (r->subnets[i].zone_id[0])
            nw_json_add_string(s, "zoneID", r->subnets[i].zone_id);
        nw_json_push(a, s);
    }
    a = nw_json_add_array(st, "securityGroups");
    for (size_t i = 0; i < r->nsgs; i++) {
        cJSON *s = nw_json_new_object();
        nw_json_add_string(s, "id", r->sgs[i].id);
        nw_json_add_string(s, "name", r->sgs[i].name);
        nw_json_push(a, s);
    }
    a = nw_json_add_array(st, "amis");
    for (size_t i = 0; i < r->namis; i++) {
        cJSON *s = nw_json_new_object();
        nw_json_add_string(s, "id", r->amis[i].id);
        nw_json_add_string(s, "name", r->amis[i].name);
        if (r->amis[i].deprecated)
            nw_json_add_bool(s, "deprecated", 1);
        cJSON *reqs = nw_json_add_array(s, "requirements");
        cJSON *req = nw_json_new_object();
        nw_json_add_string(req, "key", "kubernetes.io/arch");
        nw_json_add_string(req, "operator", "In");
        cJSON *vals = nw_json_add_array(req, "values");
        nw_json_push(vals, nw_json_new_string(r->amis[i].arch));
        nw_json_push(reqs, req);
        nw_json_push(a, s);
    }
    const char *prof = gets(get(nc, "spec"), "instanceProfile");
    if (r->instance_profile[0])
        prof = r->instance_profile;
    if (prof)
        nw_json_add_string(st, "instanceProfile", prof);
    cJSON *conds = nw_json_add_array(st, "conditions");
    add_condition(conds, "SubnetsReady", r->subnets_ready, "SubnetsNotFound",
                  "SubnetSelector did not match any Subnets", ts, gen);
    add_condition(conds, "SecurityGroupsReady", r->sgs_ready, "SecurityGroupsNotFound",
                  "SecurityGroupSelector did not match any SecurityGroups", ts, gen);
    add_condition(conds, "AMIsReady", r->amis_ready, "AMINotFound",
                  "AMISelector did not match any AMIs", ts, gen);
    if (r->instance_profile[0] || r->profile_message[0])
        add_condition(conds, "InstanceProfileReady", r->profile_ready,
                      "InstanceProfileCreationFailed", r->profile_message, ts, gen);
    add_condition(conds, "Ready", r->ready, r->reason, r->message, ts, gen);
    return st;
}

/* ---- cache -------------------------------------------------------------------------- */

typedef struct {
    char name[256];
    char *key; /* selectors as JSON: a change re-resolves */
    int64_t at;
    nw_nodeclass_resolved_t r;
} cache_entry_t;

struct nw_nodeclass_cache {
    nw_ec2_t *ec2;
    nw_ec2_t *iam; /* nullable */
    char region[64], cluster[128];
    const nw_clock_t *clock;
    int64_t ttl;
    cache_entry_t *v;
    size_t n, cap;
};

nw_nodeclass_cache_t *nw_nodeclass_cache_new(nw_ec2_t *ec2, const nw_clock_t *clock, int64_t ttl_ns)
{
    nw_nodeclass_cache_t *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->ec2 = ec2;
    c->clock = clock ? clock : nw_clock_system();
    c->ttl = ttl_ns > 0 ? ttl_ns : 60 * NW_NS_PER_SEC;
    return c;
}

void nw_nodeclass_cache_set_iam(nw_nodeclass_cache_t *c, nw_ec2_t *iam, const char *region,
                                const char *cluster)
{
    c->iam = iam;
    snprintf(c->region, sizeof c->region, "%s", region ? region : "");
    snprintf(c->cluster, sizeof c->cluster, "%s", cluster ? cluster : "");
}

/* the instance profile of a resolved class (instanceprofile.go Reconcile): a failure makes
 * the class not ready; *retry_soon then asks for another try before the TTL */
static void resolve_profile(nw_nodeclass_cache_t *c, const cJSON *nc, nw_nodeclass_resolved_t *r,
                            int *retry_soon)
{
    const char *given = gets(get(nc, "spec"), "instanceProfile");
    if (!c->iam && !(given && *given))
        return; /* as before IAM: the role stands for the profile (nw_launcher) */
    nw_err_t e = {0};
    if (nw_iam_ensure_profile(c->iam, c->region, c->cluster, nc, r->instance_profile,
                              sizeof r->instance_profile, &e) == NW_OK) {
        r->profile_ready = 1;
        return;
    }
    r->instance_profile[0] = 0;
    snprintf(r->profile_message, sizeof r->profile_message, "%s", e.msg);
    if (r->ready || !r->reason[0]) {
        snprintf(r->reason, sizeof r->reason, "InstanceProfileCreationFailed");
        snprintf(r->message, sizeof r->message, "%s", e.msg);
    }
    r->ready = 0;
    *retry_soon = 1;
}

void nw_nodeclass_cache_invalidate(nw_nodeclass_cache_t *c)
{
    for (size_t i = 0; i < c->n; i++) {
        free(c->v[i].key);
        nw_nodeclass_resolved_cleanup(&c->v[i].r);
    }
    c->n = 0;
}

void nw_nodeclass_cache_free(nw_nodeclass_cache_t *c)
{
    if (!c)
        return;
    nw_nodeclass_cache_invalidate(c);
    free(c->v);
    free(c);
}

static char *selector_key(const cJSON *nc)
{
    const cJSON *spec = get(nc, "spec");
    cJSON *k = nw_json_new_array();
    const char *keys[] = {"subnetSelectorTerms",
                          "securityGroupSelectorTerms",
                          "amiSelectorTerms",
                          "amiFamily",
                          "role",
                          "instanceProfile"};
    for (int i = 0; i < 6; i++) {
        const cJSON *v = get(spec, keys[i]);
        nw_json_push(k, v ? nw_json_dup(v) : nw_json_new_null());
    }
    char *s = nw_json_print(k);
    cJSON_Delete(k);
    return s;
}

nw_rc_t nw_nodeclass_cache_get(nw_nodeclass_cache_t *c, const cJSON *nc,
                               const nw_nodeclass_resolved_t **out, nw_err_t *err)
{
    *out = NULL;
    const char *name = gets(get(nc, "metadata"), "name");
    if (!name)
        return nw_err_set(err, NW_EINVAL, "metadata.name", "required");
    char *key = selector_key(nc);
    if (!key)
        return nw_err_set(err, NW_ENOMEM, "nodeclass", "out of memory");
    int64_t now = nw_clock_mono(c->clock);
    cache_entry_t *e = NULL;
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->v[i].name, name) == 0)
            e = &c->v[i];
    if (e && strcmp(e->key, key) == 0 && now - e->at < c->ttl) {
        free(key);
        *out = &e->r;
        return NW_OK;
    }
    nw_nodeclass_resolved_t r;
    nw_rc_t rc = nw_nodeclass_resolve(c->ec2, nc, &r, err);
    if (rc != NW_OK) {
        free(key);
        return rc;
    }
    int retry_soon = 0;
    resolve_profile(c, nc, &r, &retry_soon);
    if (!e) {
        if (c->n == c->cap) {
            size_t nc2 = c->cap ? c->cap * 2 : 8;
            cache_entry_t *nv = realloc(c->v, nc2 * sizeof *nv);
            if (!nv) {
                free(key);
                nw_nodeclass_resolved_cleanup(&r);
                return nw_err_set(err, NW_ENOMEM, "nodeclass", "out of memory");
            }
            c->v = nv;
            c->cap = nc2;
        }
        e = &c->v[c->n++];
        memset(e, 0, sizeof *e);
        snprintf(e->name, sizeof e->name, "%s", name);
    } else {
        free(e->key);
        nw_nodeclass_resolved_cleanup(&e->r);
    }
    e->key = key;
    e->at = retry_soon ? now - c->ttl + 5 * NW_NS_PER_SEC : now;
    e->r = r;
    *out = &e->r;
    return NW_OK;
}
