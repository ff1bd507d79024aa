/* scaler/aws/nodeclass.c — EC2NodeClass selector resolution; see nodeclass.h. */
#include "scaler/aws/nodeclass.h"

#include "common/json.h"
#include "common/log.h"
#include "scaler/aws/iam.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_FILTERS 24

void nw_nodeclass_resolved_cleanup(nw_nodeclass_resolved_t *r)
{
    if (!r)
        return;
    free(r->subnets);
    free(r->sgs);
    free(r->amis);
    free(r->crs);
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

static NW_MUST_USE nw_rc_t check_terms(const cJSON *spec, const char *key, const cJSON **terms,
                                       int *n, nw_err_t *err)
{
    char path[64];
    snprintf(path, sizeof path, "spec.%s", key);
    *terms = nw_json_get(spec, key);
    if (!cJSON_IsArray(*terms) || cJSON_GetArraySize(*terms) == 0)
        return nw_err_set(err, NW_EINVAL, path, "required: at least one selector term");
    *n = cJSON_GetArraySize(*terms);
    if (*n > NW_NC_MAX_TERMS)
        return nw_err_set(err, NW_EINVAL, path, "at most %d terms", NW_NC_MAX_TERMS);
    return NW_OK;
}

static NW_MUST_USE nw_rc_t resolve_subnets(nw_ec2_t *ec2, const cJSON *terms,
                                           nw_nodeclass_resolved_t *r, nw_err_t *err)
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
        const char *id = nw_json_str(t, "id");
        if (id)
            f[nf++] = (nw_ec2_filter_t){"subnet-id", {id}, 1};
        nf = tag_filters(nw_json_get(t, "tags"), f, nf, names);
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
    nw_ec2xml_subnets_free(&all);
    return rc;
}

static NW_MUST_USE nw_rc_t resolve_sgs(nw_ec2_t *ec2, const cJSON *terms,
                                       nw_nodeclass_resolved_t *r, nw_err_t *err)
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
        const char *id = nw_json_str(t, "id"), *name = nw_json_str(t, "name");
        if (id)
            f[nf++] = (nw_ec2_filter_t){"group-id", {id}, 1};
        if (name)
            f[nf++] = (nw_ec2_filter_t){"group-name", {name}, 1};
        nf = tag_filters(nw_json_get(t, "tags"), f, nf, names);
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
    nw_ec2xml_sgs_free(&all);
    return rc;
}

/* ---- AMIs ---- */

enum { V_STANDARD = 1, V_NVIDIA = 2, V_NEURON = 4 };

static const char *const VARIANT_NAMES[] = {"standard", "nvidia", "neuron"};

typedef struct {
    char path[384];
    unsigned variants;
} ssm_path_t;

const char *nw_nodeclass_alias_family(const char *alias)
{
    static const struct {
        const char *prefix, *family;
    } fam[] = {{"al2023@", "AL2023"},
               {"al2@", "AL2"},
               {"bottlerocket@", "Bottlerocket"},
               {"windows2019@", "Windows2019"},
               {"windows2022@", "Windows2022"},
               {"windows2025@", "Windows2025"}};
    for (size_t i = 0; alias && i < sizeof fam / sizeof fam[0]; i++)
        if (strncasecmp(alias, fam[i].prefix, strlen(fam[i].prefix)) == 0)
            return fam[i].family;
    return NULL;
}

/* The SSM parameters of an alias for Kubernetes version k8s (paths in nodeclass.h);
 * returns how many, 0 for an alias nodewarden does not know (*why says so). */
static int alias_paths(const char *alias, const char *k8s, ssm_path_t *out, const char **why)
{
    const char *at = strchr(alias, '@');
    const char *fam = nw_nodeclass_alias_family(alias);
    *why = NULL;
    if (!fam || !at || !at[1]) {
        *why = "the alias is not <family>@<version> with family al2, al2023, bottlerocket, "
               "windows2019, windows2022 or windows2025";
        return 0;
    }
    const char *ver = at + 1;
    bool latest = strcmp(ver, "latest") == 0;
    int n = 0;
    if (strcmp(fam, "AL2023") == 0) {
        static const char *const arch[] = {"x86_64", "arm64"};
        for (int a = 0; a < 2; a++)
            for (int v = 0; v < (a == 0 ? 3 : 2); v++) {
                char name[160];
                if (latest)
                    snprintf(name, sizeof name, "recommended");
                else
                    snprintf(name, sizeof name, "amazon-eks-node-al2023-%s-%s-%s-%s", arch[a],
                             VARIANT_NAMES[v], k8s, ver);
                snprintf(out[n].path, sizeof out[n].path,
                         "/aws/service/eks/optimized-ami/%s/amazon-linux-2023/%s/%s/%s/image_id",
                         k8s, arch[a], VARIANT_NAMES[v], name);
                out[n++].variants = 1u << v;
            }
    } else if (strcmp(fam, "AL2") == 0) {
        static const struct {
            const char *suffix;
            unsigned variants;
        } v[] = {{"", V_STANDARD}, {"-arm64", V_STANDARD}, {"-gpu", V_NVIDIA | V_NEURON}};
        for (int k = 0; k < 3; k++) {
            char name[160];
            if (latest)
                snprintf(name, sizeof name, "recommended");
            else
                snprintf(name, sizeof name, "amazon-eks%s-node-%s-%s", v[k].suffix, k8s, ver);
            snprintf(out[n].path, sizeof out[n].path,
                     "/aws/service/eks/optimized-ami/%s/amazon-linux-2%s/%s/image_id", k8s,
                     v[k].suffix, name);
            out[n++].variants = v[k].variants;
        }
    } else if (strcmp(fam, "Bottlerocket") == 0) {
        const char *tv = ver[0] == 'v' ? ver + 1 : ver; /* GitHub's "v1.2.3" is "1.2.3" here */
        static const struct {
            const char *suffix, *arch;
            unsigned variants;
        } v[] = {{"", "x86_64", V_STANDARD | V_NEURON},
                 {"", "arm64", V_STANDARD},
                 {"-nvidia", "x86_64", V_NVIDIA},
                 {"-nvidia", "arm64", V_NVIDIA}};
        for (int k = 0; k < 4; k++) {
            snprintf(out[n].path, sizeof out[n].path,
                     "/aws/service/bottlerocket/aws-k8s-%s%s/%s/%s/image_id", k8s, v[k].suffix,
                     v[k].arch, tv);
            out[n++].variants = v[k].variants;
        }
    } else {
        if (!latest) {
            *why = "Windows aliases take the version latest only";
            return 0;
        }
        snprintf(out[n].path, sizeof out[n].path,
                 "/aws/service/ami-windows-latest/Windows_Server-%s-English-Core-EKS_Optimized-%s/"
                 "image_id",
                 fam + 7, k8s); /* "Windows2019" -> 2019 */
        out[n++].variants = 0;
    }
    return n;
}

/* The AMI ids an alias or ssmParameter term names, with their variants; 0 found: *note
 * says why */
static NW_MUST_USE nw_rc_t ssm_ids(const nw_nc_ssm_t *src, const char *alias, const char *param,
                                   char ids[][64], unsigned *variants, int *nids, char *note,
                                   size_t nlen)
{
    *nids = 0;
    if (!src || !src->ssm) {
        snprintf(note, nlen, "%s needs SSM, which is not configured",
                 alias ? "alias" : "ssmParameter");
        return NW_OK;
    }
    ssm_path_t paths[8] = {{"", 0}};
    int np = 0;
    char k8s[32] = "";
    if (param) {
        snprintf(paths[0].path, sizeof paths[0].path, "%s", param);
        paths[0].variants = 0;
        np = 1;
    } else {
        nw_err_t e = {0};
        if (!src->k8s_version || src->k8s_version(src->ud, k8s, sizeof k8s, &e) != NW_OK ||
            !k8s[0]) {
            snprintf(note, nlen,
                     "alias %.60s: the cluster's Kubernetes version is unknown (%.120s)", alias,
                     e.msg[0] ? e.msg : "not read from the API server");
            return NW_OK;
        }
        const char *why = NULL;
        np = alias_paths(alias, k8s, paths, &why);
        if (!np) {
            snprintf(note, nlen, "alias %.60s: %.180s", alias, why);
            return NW_OK;
        }
    }
    bool latest = alias && strstr(alias, "@latest") != NULL;
    char last[200] = "";
    for (int i = 0; i < np; i++) {
        char v[64];
        nw_sqs_error_t ae;
        nw_err_t e = {0};
        /* a custom parameter and a "recommended"/"latest" path can change; a pinned one not */
        if (nw_ssm_get(src->ssm, paths[i].path, param || latest, v, sizeof v, &ae, &e) != NW_OK) {
            if (ae.cls == NW_SQS_TRANSPORT || ae.cls == NW_SQS_THROTTLE) {
                snprintf(note, nlen, "%.200s", e.msg); /* not an answer: retried later */
                return NW_EAWS;
            }
            snprintf(last, sizeof last, "%.50s for %.140s", ae.code[0] ? ae.code : e.msg,
                     paths[i].path);
            continue;
        }
        int k;
        for (k = 0; k < *nids && strcmp(ids[k], v) != 0; k++) {
        }
        if (k == *nids) {
            snprintf(ids[k], 64, "%s", v);
            variants[k] = 0;
            (*nids)++;
        }
        variants[k] |= paths[i].variants;
    }
    if (!*nids && param)
        snprintf(note, nlen, "ssmParameter %.50s: %.180s", param, last);
    else if (!*nids)
        snprintf(note, nlen,
                 "alias %.50s: no AMI for Kubernetes %.10s in SSM (%d parameters; last: %.120s)",
                 alias, k8s, np, last);
    return NW_OK;
}

/* The i-th amiSelectorTerms item: the available images it selects appended to *all
 * (their variants, known from an alias's SSM parameters, to *vmask, 0: none known),
 * how many into r->ami_found[i] and, for an alias or SSM term that finds none, why
 * into r->ami_term_note[i]. */
static NW_MUST_USE nw_rc_t term_images(nw_ec2_t *ec2, const nw_nc_ssm_t *src, const cJSON *t, int i,
                                       nw_nodeclass_resolved_t *r, nw_ec2_images_t *all,
                                       unsigned **vmask, nw_err_t *err)
{
    nw_rc_t rc;
    nw_ec2_filter_t f[MAX_FILTERS];
    char names[MAX_FILTERS][160];
    int nf = 0;
    const char *id = nw_json_str(t, "id"), *name = nw_json_str(t, "name"),
               *owner = nw_json_str(t, "owner");
    const char *alias = nw_json_str(t, "alias"), *ssm = nw_json_str(t, "ssmParameter");
    const char *owners[2];
    int nowners = 0;
    char ids[8][64];
    unsigned idv[8] = {0};
    int nids = 0;
    if (alias || ssm) {
        rc = ssm_ids(src, alias, alias ? NULL : ssm, ids, idv, &nids, r->ami_term_note[i],
                     sizeof r->ami_term_note[i]);
        if (rc != NW_OK)
            return nw_err_set(err, rc, "ssm", "%s", r->ami_term_note[i]);
        if (!nids) {
            r->ami_found[i] = 0;
            return NW_OK;
        }
        f[0] = (nw_ec2_filter_t){"image-id", {NULL}, nids};
        for (int k = 0; k < nids; k++)
            f[0].values[k] = ids[k];
        nf = 1;
    } else {
        if (id)
            f[nf++] = (nw_ec2_filter_t){"image-id", {id}, 1};
        if (name)
            f[nf++] = (nw_ec2_filter_t){"name", {name}, 1};
        nf = tag_filters(nw_json_get(t, "tags"), f, nf, names);
        if (owner) {
            owners[nowners++] = owner;
        } else if (name && !id) {
            owners[nowners++] = "self";
            owners[nowners++] = "amazon";
        }
    }
    size_t before = all->n;
    if (nf == 0) {
        r->ami_found[i] = 0;
        return NW_OK;
    }
    if ((rc = nw_ec2_describe_images(ec2, f, nf, owners, nowners, all, NULL, err)) != NW_OK)
        return rc;
    unsigned *vm = realloc(*vmask, (all->n ? all->n : 1) * sizeof *vm);
    if (!vm)
        return nw_err_set(err, NW_ENOMEM, "amis", "out of memory");
    *vmask = vm;
    /* only available images count */
    size_t j = before;
    for (size_t k = before; k < all->n; k++)
        if (all->v[k].state[0] == 0 || strcmp(all->v[k].state, "available") == 0) {
            (*vmask)[j] = 0;
            for (int q = 0; q < nids; q++)
                if (strcmp(ids[q], all->v[k].id) == 0)
                    (*vmask)[j] = idv[q];
            all->v[j++] = all->v[k];
        }
    all->n = j;
    r->ami_found[i] = (int)(all->n - before);
    if (!r->ami_found[i] && (alias || ssm))
        snprintf(r->ami_term_note[i], sizeof r->ami_term_note[i],
                 "%s %.80s: SSM named %.30s, which DescribeImages does not find (available)",
                 alias ? "alias" : "ssmParameter", alias ? alias : ssm, ids[0]);
    return NW_OK;
}

/* Newest image per architecture and variant into r->amis, a non-deprecated one
 * preferred; vmask: each image's variants (0: none known, it serves every type). */
static void pick_newest(nw_nodeclass_resolved_t *r, const nw_ec2_images_t *all,
                        const unsigned *vmask)
{
    for (size_t k = 0; k < all->n; k++) {
        const nw_ec2_image_t *im = &all->v[k];
        const char *arch = strcmp(im->arch, "arm64") == 0 ? "arm64" : "amd64";
        bool dep =
            im->deprecation_ns != 0; /* deprecation set; the caller's clock decides nothing here */
        for (int v = -1; v < 3; v++) {
            if (v < 0 ? vmask[k] != 0 : !(vmask[k] & (1u << v)))
                continue;
            const char *var = v < 0 ? "" : VARIANT_NAMES[v];
            nw_nc_ami_t *cur = NULL;
            for (size_t j = 0; j < r->namis; j++)
                if (strcmp(r->amis[j].arch, arch) == 0 && strcmp(r->amis[j].variant, var) == 0)
                    cur = &r->amis[j];
            bool better = !cur || (cur->deprecated && !dep) ||
                          (cur->deprecated == dep && im->creation_ns > cur->creation_ns);
            if (!better)
                continue;
            if (!cur)
                cur = &r->amis[r->namis++];
            snprintf(cur->id, sizeof cur->id, "%s", im->id);
            snprintf(cur->name, sizeof cur->name, "%s", im->name);
            snprintf(cur->arch, sizeof cur->arch, "%s", arch);
            snprintf(cur->variant, sizeof cur->variant, "%s", var);
            cur->creation_ns = im->creation_ns;
            cur->deprecated = dep;
        }
    }
}

static NW_MUST_USE nw_rc_t resolve_amis(nw_ec2_t *ec2, const nw_nc_ssm_t *src, const cJSON *terms,
                                        nw_nodeclass_resolved_t *r, nw_err_t *err)
{
    const cJSON *t;
    int i = 0;
    nw_ec2_images_t all = {0};
    unsigned *vmask = NULL; /* per image of all: its variants (0: none known) */
    nw_rc_t rc = NW_OK;
    cJSON_ArrayForEach(t, terms)
    {
        if (i >= NW_NC_MAX_TERMS)
            break;
        if ((rc = term_images(ec2, src, t, i, r, &all, &vmask, err)) != NW_OK)
            goto out;
        i++;
    }
    r->nami_terms = i;
    r->amis = calloc(all.n ? 3 * all.n : 1, sizeof *r->amis);
    if (!r->amis) {
        rc = nw_err_set(err, NW_ENOMEM, "amis", "out of memory");
        goto out;
    }
    /* newest per architecture and variant; non-deprecated preferred */
    pick_newest(r, &all, vmask);
out:
    free(vmask);
    nw_ec2xml_images_free(&all);
    return rc;
}

static bool variant_fits(const char *v, const nw_itype_t *t)
{
    if (!*v)
        return true;
    if (strcmp(v, "standard") == 0)
        return t->gpu_count == 0 && t->accel_count == 0;
    if (strcmp(v, "nvidia") == 0)
        return t->gpu_count > 0;
    return t->accel_count > 0; /* neuron */
}

const nw_nc_ami_t *nw_nodeclass_ami_for(const nw_nodeclass_resolved_t *r, const nw_itype_t *t)
{
    for (size_t i = 0; i < r->namis; i++)
        if (strcmp(r->amis[i].arch, t->arch) == 0 && variant_fits(r->amis[i].variant, t))
            return &r->amis[i];
    return NULL;
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
    return nw_nodeclass_resolve_ssm(ec2, NULL, nc, r, err);
}

nw_rc_t nw_nodeclass_resolve_ssm(nw_ec2_t *ec2, const nw_nc_ssm_t *ssm, const cJSON *nc,
                                 nw_nodeclass_resolved_t *r, nw_err_t *err)
{
    nw_rc_t rc;
    memset(r, 0, sizeof *r);
    const char *name = nw_json_str(nw_json_get(nc, "metadata"), "name");
    if (!name || !*name)
        return nw_err_set(err, NW_EINVAL, "metadata.name", "required");
    snprintf(r->name, sizeof r->name, "%s", name);
    const cJSON *spec = nw_json_get(nc, "spec");
    if (!cJSON_IsObject(spec))
        return nw_err_set(err, NW_EINVAL, "spec", "required");
    const char *fam = nw_json_str(spec, "amiFamily");
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
        (rc = resolve_amis(ec2, ssm, at, r, err)) != NW_OK) {
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
    if (!r->amis_ready) {
        /* the first term's reason, when one is known (alias, ssmParameter) */
        char msg[512] = "AMISelector did not match any AMIs";
        for (int k = 0; k < r->nami_terms; k++)
            if (r->ami_term_note[k][0]) {
                snprintf(msg, sizeof msg, "AMISelector did not match any AMIs: %s",
                         r->ami_term_note[k]);
                break;
            }
        set_not_ready(r, "AMINotFound", msg);
    }
    r->ready = r->subnets_ready && r->sgs_ready && r->amis_ready;
    return NW_OK;
}

/* ---- capacity reservations ------------------------------------------------------------ */

#define CB_EXPIRING_NS                                                                             \
    (40 * 60 * NW_NS_PER_SEC) /* drain a capacity block 40 min before its end                      \
                               */

static NW_MUST_USE nw_rc_t cr_query(nw_ec2_t *ec2, const cJSON *term, int by_id, nw_ec2_crs_t *out,
                                    nw_err_t *err)
{
    nw_ec2_filter_t f[MAX_FILTERS];
    char names[MAX_FILTERS][160];
    int nf = 0;
    f[nf++] = (nw_ec2_filter_t){"state", {"active"}, 1};
    if (by_id) {
        const char *ids[] = {nw_json_str(term, "id")};
        nw_rc_t rc = nw_ec2_describe_capacity_reservations(ec2, ids, 1, f, nf, out, NULL, err);
        if (rc == NW_ENOTFOUND) { /* only asked for one id: nothing found */
            nw_err_clear(err);
            return NW_OK;
        }
        return rc;
    }
    const char *owner = nw_json_str(term, "ownerID"),
               *imc = nw_json_str(term, "instanceMatchCriteria");
    if (owner && *owner)
        f[nf++] = (nw_ec2_filter_t){"owner-id", {owner}, 1};
    nf = tag_filters(nw_json_get(term, "tags"), f, nf, names);
    if (imc && *imc && nf < MAX_FILTERS)
        f[nf++] = (nw_ec2_filter_t){"instance-match-criteria", {imc}, 1};
    return nw_ec2_describe_capacity_reservations(ec2, NULL, 0, f, nf, out, NULL, err);
}

static int cr_cmp(const void *a, const void *b)
{
    return strcmp(((const nw_nc_cr_t *)a)->id, ((const nw_nc_cr_t *)b)->id);
}

nw_rc_t nw_nodeclass_resolve_crs(nw_ec2_t *ec2, const cJSON *nc, int64_t now_wall_ns,
                                 nw_nodeclass_resolved_t *r, nw_err_t *err)
{
    free(r->crs);
    r->crs = NULL;
    r->ncrs = 0;
    r->crs_message[0] = 0;
    const cJSON *terms = nw_json_get(nw_json_get(nc, "spec"), "capacityReservationSelectorTerms");
    r->crs_selected = cJSON_IsArray(terms) && cJSON_GetArraySize(terms) > 0;
    r->crs_ready = 1;
    if (!r->crs_selected)
        return NW_OK;
    nw_ec2_crs_t all = {0};
    nw_rc_t rc = NW_OK;
    const cJSON *t;
    cJSON_ArrayForEach(t, terms)
    {
        if (nw_json_str(t, "id") && *nw_json_str(t, "id") &&
            (rc = cr_query(ec2, t, 1, &all, err)) != NW_OK)
            break;
        if ((cJSON_IsObject(nw_json_get(t, "tags")) &&
             cJSON_GetArraySize(nw_json_get(t, "tags")) > 0) ||
            (nw_json_str(t, "instanceMatchCriteria") && *nw_json_str(t, "instanceMatchCriteria")))
            if ((rc = cr_query(ec2, t, 0, &all, err)) != NW_OK)
                break;
    }
    if (rc != NW_OK) {
        r->crs_ready = 0;
        snprintf(r->crs_message, sizeof r->crs_message,
                 "Failed to list capacity reservations: %.200s", err ? err->msg : "");
        nw_ec2xml_crs_free(&all);
        return rc;
    }
    r->crs = calloc(all.n ? all.n : 1, sizeof *r->crs);
    if (!r->crs) {
        nw_ec2xml_crs_free(&all);
        return nw_err_set(err, NW_ENOMEM, "capacityReservations", "out of memory");
    }
    for (size_t i = 0; i < all.n; i++) {
        const nw_ec2_cr_t *e = &all.v[i];
        bool dup = false;
        for (size_t k = 0; k < r->ncrs && !dup; k++)
            dup = strcmp(r->crs[k].id, e->id) == 0;
        if (dup || (e->end_ns && e->end_ns <= now_wall_ns) ||
            (e->state[0] && strcmp(e->state, "active") != 0))
            continue;
        if (strcmp(e->match, "open") != 0 && strcmp(e->match, "targeted") != 0) {
            nw_log_warn("nodeclass",
                        "capacity reservation has an unsupported instance match "
                        "criteria",
                        NW_LS("id", e->id), NW_LS("instanceMatchCriteria", e->match));
            continue;
        }
        nw_nc_cr_t *o = &r->crs[r->ncrs++];
        memset(o, 0, sizeof *o);
        snprintf(o->id, sizeof o->id, "%s", e->id);
        snprintf(o->type, sizeof o->type, "%s", e->type);
        snprintf(o->zone, sizeof o->zone, "%s", e->zone);
        snprintf(o->zone_id, sizeof o->zone_id, "%s", e->zone_id);
        snprintf(o->owner, sizeof o->owner, "%s", e->owner);
        snprintf(o->match, sizeof o->match, "%s", e->match);
        snprintf(o->reservation_type, sizeof o->reservation_type, "%s",
                 e->reservation_type[0] ? e->reservation_type : "default");
        o->interruptible = e->interruptible;
        o->available = e->available;
        o->end_ns = e->end_ns;
        o->expiring = strcmp(o->reservation_type, "capacity-block") == 0 && e->end_ns &&
                      now_wall_ns >= e->end_ns - CB_EXPIRING_NS;
    }
    nw_ec2xml_crs_free(&all);
    qsort(r->crs, r->ncrs, sizeof *r->crs, cr_cmp);
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

/* One status.amis entry: id, name, deprecated, and the requirements of its
 * architecture and variant. */
static cJSON *ami_json(const nw_nc_ami_t *ami)
{
    cJSON *s = nw_json_new_object();
    nw_json_add_string(s, "id", ami->id);
    nw_json_add_string(s, "name", ami->name);
    if (ami->deprecated)
        nw_json_add_bool(s, "deprecated", 1);
    cJSON *reqs = nw_json_add_array(s, "requirements");
    cJSON *req = nw_json_new_object();
    nw_json_add_string(req, "key", "kubernetes.io/arch");
    nw_json_add_string(req, "operator", "In");
    cJSON *vals = nw_json_add_array(req, "values");
    nw_json_push(vals, nw_json_new_string(ami->arch));
    nw_json_push(reqs, req);
    /* the variant's requirements (types.go Variant.Requirements) */
    const char *v = ami->variant;
    static const char *const gpu = "karpenter.k8s.aws/instance-gpu-count",
                             *acc = "karpenter.k8s.aws/instance-accelerator-count";
    struct {
        const char *key, *op;
    } vr[2] = {{NULL, NULL}, {NULL, NULL}};
    if (strcmp(v, "standard") == 0) {
        vr[0].key = acc, vr[0].op = "DoesNotExist";
        vr[1].key = gpu, vr[1].op = "DoesNotExist";
    } else if (strcmp(v, "nvidia") == 0)
        vr[0].key = gpu, vr[0].op = "Exists";
    else if (strcmp(v, "neuron") == 0)
        vr[0].key = acc, vr[0].op = "Exists";
    for (int k = 0; k < 2 && vr[k].key; k++) {
        cJSON *q = nw_json_new_object();
        nw_json_add_string(q, "key", vr[k].key);
        nw_json_add_string(q, "operator", vr[k].op);
        nw_json_push(reqs, q);
    }
    return s;
}

/* One status.capacityReservations entry. */
static cJSON *cr_json(const nw_nc_cr_t *c)
{
    cJSON *s = nw_json_new_object();
    nw_json_add_string(s, "id", c->id);
    nw_json_add_string(s, "availabilityZone", c->zone);
    nw_json_add_string(s, "instanceType", c->type);
    nw_json_add_string(s, "instanceMatchCriteria", c->match);
    nw_json_add_string(s, "ownerID", c->owner);
    nw_json_add_string(s, "reservationType", c->reservation_type);
    nw_json_add_string(s, "state", c->expiring ? "expiring" : "active");
    if (c->end_ns) {
        char et[32];
        nw_clock_time_format(c->end_ns, et, sizeof et);
        nw_json_add_string(s, "endTime", et);
    }
    if (c->interruptible)
        nw_json_add_bool(s, "interruptible", 1);
    return s;
}

/* The status conditions: one per part the class resolves (subnets, security groups,
 * AMIs, and the placement group, instance profile and capacity reservations when
 * asked for) and Ready. */
static void add_conditions(cJSON *conds, const nw_nodeclass_resolved_t *r, const char *ts,
                           double gen)
{
    add_condition(conds, "SubnetsReady", r->subnets_ready, "SubnetsNotFound",
                  "SubnetSelector did not match any Subnets", ts, gen);
    add_condition(conds, "SecurityGroupsReady", r->sgs_ready, "SecurityGroupsNotFound",
                  "SecurityGroupSelector did not match any SecurityGroups", ts, gen);
    add_condition(conds, "AMIsReady", r->amis_ready, "AMINotFound",
                  r->amis_ready || strcmp(r->reason, "AMINotFound") != 0
                      ? "AMISelector did not match any AMIs"
                      : r->message,
                  ts, gen);
    if (r->pg_selected)
        add_condition(conds, "PlacementGroupReady", r->pg_ready,
                      r->pg_message[0] == 'F' ? "PlacementGroupResolutionFailed"
                                              : "PlacementGroupNotFound",
                      r->pg_message, ts, gen);
    if (r->instance_profile[0] || r->profile_message[0])
        add_condition(conds, "InstanceProfileReady", r->profile_ready,
                      "InstanceProfileCreationFailed", r->profile_message, ts, gen);
    if (!r->crs_off)
        add_condition(conds, "CapacityReservationsReady", r->crs_ready || !r->crs_selected,
                      "CapacityReservationsResolutionFailed", r->crs_message, ts, gen);
    if (r->validated)
        add_condition(conds, "ValidationSucceeded", r->valid_ready, r->valid_reason,
                      r->valid_message, ts, gen);
    add_condition(conds, "Ready", r->ready, r->reason, r->message, ts, gen);
}

cJSON *nw_nodeclass_status_json(const nw_nodeclass_resolved_t *r, const cJSON *nc, int64_t now_ns)
{
    char ts[32];
    nw_clock_time_format(now_ns, ts, sizeof ts);
    const cJSON *g = nw_json_get(nw_json_get(nc, "metadata"), "generation");
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
    for (size_t i = 0; i < r->namis; i++)
        nw_json_push(a, ami_json(&r->amis[i]));
    const char *prof = nw_json_str(nw_json_get(nc, "spec"), "instanceProfile");
    if (r->instance_profile[0])
        prof = r->instance_profile;
    if (prof)
        nw_json_add_string(st, "instanceProfile", prof);
    if (r->crs_selected) {
        a = nw_json_add_array(st, "capacityReservations");
        for (size_t i = 0; i < r->ncrs; i++)
            nw_json_push(a, cr_json(&r->crs[i]));
    }
    cJSON *conds = nw_json_add_array(st, "conditions");
    add_conditions(conds, r, ts, gen);
    return st;
}

/* ---- cache -------------------------------------------------------------------------- */

typedef struct {
    char name[256];
    char *key; /* selectors as JSON: a change re-resolves */
    int64_t at;
    nw_nodeclass_resolved_t r;
    /* the readiness of the selectors alone, before the validation hook judged r */
    int base_ready;
    char base_reason[64];
    char base_message[512];
    int64_t validate_at; /* monotonic: the next judgement of a class the hook failed */
    int failures;        /* resolutions in a row that asked for a retry (the backoff) */
} cache_entry_t;

struct nw_nodeclass_cache {
    nw_ec2_t *ec2;
    nw_ec2_t *iam; /* nullable */
    char region[64], cluster[128];
    nw_nc_ssm_t ssm;
    const nw_clock_t *clock;
    int64_t ttl;
    int no_reserved; /* the ReservedCapacity gate is off */
    nw_nc_validate_fn validate;
    void *validate_ud;
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

void nw_nodeclass_cache_set_ssm(nw_nodeclass_cache_t *c, const nw_nc_ssm_t *ssm)
{
    if (ssm)
        c->ssm = *ssm;
    else
        memset(&c->ssm, 0, sizeof c->ssm);
    nw_nodeclass_cache_invalidate(c);
}

void nw_nodeclass_cache_set_validate(nw_nodeclass_cache_t *c, nw_nc_validate_fn fn, void *ud)
{
    c->validate = fn;
    c->validate_ud = ud;
    nw_nodeclass_cache_invalidate(c);
}

#define VALIDATE_RETRY_NS (10 * NW_NS_PER_SEC)

/* Judge e->r with the hook and set its readiness: the selectors' first, then the hook's. */
static void validate_entry(nw_nodeclass_cache_t *c, cache_entry_t *e, const cJSON *nc, int64_t now)
{
    nw_nodeclass_resolved_t *r = &e->r;
    if (!c->validate)
        return;
    char reason[64] = "", msg[512] = "";
    bool ok = c->validate(c->validate_ud, nc, r, reason, sizeof reason, msg, sizeof msg);
    bool news = !ok && strcmp(r->valid_message, msg) != 0; /* said once per message */
    r->validated = 1;
    r->valid_ready = ok;
    snprintf(r->valid_reason, sizeof r->valid_reason, "%s", ok ? "" : reason);
    snprintf(r->valid_message, sizeof r->valid_message, "%s", ok ? "" : msg);
    r->ready = e->base_ready && ok;
    if (!e->base_ready) {
        snprintf(r->reason, sizeof r->reason, "%s", e->base_reason);
        snprintf(r->message, sizeof r->message, "%s", e->base_message);
    } else if (!ok) {
        snprintf(r->reason, sizeof r->reason, "%s", reason);
        snprintf(r->message, sizeof r->message, "%s", msg);
    } else
        r->reason[0] = r->message[0] = 0;
    e->validate_at = ok ? 0 : now + VALIDATE_RETRY_NS;
    if (news)
        nw_log_warn("nodeclass", "EC2NodeClass cannot launch", NW_LS("ec2nodeclass", r->name),
                    NW_LS("reason", reason), NW_LS("message", msg));
}

/* How long a resolution that asked for a retry (an API call failed) stays: 5 s, doubling
 * with each failure in a row up to the TTL, so a class that keeps failing is not asked about
 * every 5 s. */
static int64_t retry_after(const nw_nodeclass_cache_t *c, int failures)
{
    int64_t d = 5 * NW_NS_PER_SEC;
    for (int i = 1; i < failures && d < c->ttl; i++)
        d *= 2;
    return d < c->ttl ? d : c->ttl;
}

void nw_nodeclass_cache_set_reserved_capacity(nw_nodeclass_cache_t *c, int on)
{
    c->no_reserved = !on;
}

void nw_nodeclass_cache_set_iam(nw_nodeclass_cache_t *c, nw_ec2_t *iam, const char *region,
                                const char *cluster)
{
    c->iam = iam;
    snprintf(c->region, sizeof c->region, "%s", region ? region : "");
    snprintf(c->cluster, sizeof c->cluster, "%s", cluster ? cluster : "");
}

/* profiles of this class that spec.role replaced, deleted once no instance uses them
 * (instanceprofile garbagecollection). Only once status.instanceProfile names the profile
 * launches use now: the pass that replaces it leaves the old one alone (launches may still
 * be on their way with it, as Karpenter's protected profiles are). A failure is logged and
 * tried again on the next refresh; it does not make the class not ready. */
static void gc_profiles(nw_nodeclass_cache_t *c, const cJSON *nc, const char *cur)
{
    const char *st = nw_json_str(nw_json_get(nc, "status"), "instanceProfile");
    const char *role = nw_json_str(nw_json_get(nc, "spec"), "role");
    if (!c->iam || !c->ec2 || !role || !*role || !st || strcmp(st, cur) != 0)
        return;
    nw_err_t e = {0};
    int deleted = 0, kept = 0;
    if (nw_iam_gc_profiles(c->iam, c->ec2, c->region, c->cluster, nc, cur, &deleted, &kept, &e) !=
        NW_OK)
        nw_log_warn("nodeclass", "instance profile cleanup failed",
                    NW_LS("ec2nodeclass", nw_json_str(nw_json_get(nc, "metadata"), "name")),
                    NW_LS("error", e.msg));
    else if (deleted || kept)
        nw_log_info("nodeclass", "replaced instance profiles",
                    NW_LS("ec2nodeclass", nw_json_str(nw_json_get(nc, "metadata"), "name")),
                    NW_LI("deleted", deleted), NW_LI("in_use", kept));
}

/* the instance profile of a resolved class (instanceprofile.go Reconcile): a failure makes
 * the class not ready; *retry_soon then asks for another try before the TTL */
static void resolve_profile(nw_nodeclass_cache_t *c, const cJSON *nc, nw_nodeclass_resolved_t *r,
                            int *retry_soon)
{
    const char *given = nw_json_str(nw_json_get(nc, "spec"), "instanceProfile");
    if (!c->iam && !(given && *given))
        return; /* as before IAM: the role stands for the profile (nw_launcher) */
    nw_err_t e = {0};
    if (nw_iam_ensure_profile(c->iam, c->region, c->cluster, nc, r->instance_profile,
                              sizeof r->instance_profile, &e) == NW_OK) {
        r->profile_ready = 1;
        gc_profiles(c, nc, r->instance_profile);
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

/* spec.placementGroupSelector (pkg/providers/placementgroup Get, controllers/nodeclass/
 * placementgroup.go): the available group of that id or name; none makes the class not
 * ready (PlacementGroupNotFound) */
static void resolve_pg(nw_nodeclass_cache_t *c, const cJSON *nc, nw_nodeclass_resolved_t *r,
                       int *retry_soon)
{
    const cJSON *sel = nw_json_get(nw_json_get(nc, "spec"), "placementGroupSelector");
    if (!cJSON_IsObject(sel))
        return;
    r->pg_selected = 1;
    const char *id = nw_json_str(sel, "id"), *name = nw_json_str(sel, "name");
    nw_ec2_pgs_t l = {0};
    nw_ec2_error_t ae = {0};
    nw_err_t e = {0};
    nw_rc_t rc = nw_ec2_describe_placement_group(c->ec2, id, name ? name : "", &l, &ae, &e);
    if (rc == NW_OK && l.n > 0) {
        snprintf(r->pg_id, sizeof r->pg_id, "%s", l.v[0].id);
        snprintf(r->pg_strategy, sizeof r->pg_strategy, "%s", l.v[0].strategy);
        r->pg_partitions = l.v[0].partitions;
        r->pg_ready = 1;
    } else {
        if (rc != NW_OK)
            snprintf(r->pg_message, sizeof r->pg_message,
                     "Failed to resolve placement group: %.200s", e.msg);
        else
            snprintf(r->pg_message, sizeof r->pg_message, "Placement group \"%.200s\" not found",
                     id     ? id
                     : name ? name
                            : "");
        if (r->ready || !r->reason[0]) {
            snprintf(r->reason, sizeof r->reason, "%s",
                     rc != NW_OK ? "PlacementGroupResolutionFailed" : "PlacementGroupNotFound");
            snprintf(r->message, sizeof r->message, "%s", r->pg_message);
        }
        r->ready = 0;
        *retry_soon |= rc != NW_OK;
    }
    nw_ec2xml_pgs_free(&l);
}

/* spec.capacityReservationSelectorTerms; a failed DescribeCapacityReservations makes the
 * class not ready (CapacityReservationsReady False) until the next try */
static void resolve_crs(nw_nodeclass_cache_t *c, const cJSON *nc, nw_nodeclass_resolved_t *r,
                        int64_t now_mono, int *retry_soon)
{
    if (c->no_reserved) {
        r->crs_off = 1;
        return;
    }
    nw_err_t e = {0};
    nw_rc_t rc = nw_nodeclass_resolve_crs(c->ec2, nc, nw_clock_now(c->clock), r, &e);
    r->crs_synced_ns = now_mono;
    if (rc == NW_OK || rc == NW_ENOMEM)
        return;
    if (r->ready || !r->reason[0]) {
        snprintf(r->reason, sizeof r->reason, "CapacityReservationsResolutionFailed");
        snprintf(r->message, sizeof r->message, "%s", r->crs_message);
    }
    r->ready = 0;
    *retry_soon = 1;
}

int64_t nw_nodeclass_cache_cr_available(const nw_nodeclass_cache_t *c, const char *id,
                                        int64_t *synced)
{
    int64_t best = -1;
    *synced = 0;
    for (size_t i = 0; i < c->n; i++)
        for (size_t k = 0; k < c->v[i].r.ncrs; k++)
            if (strcmp(c->v[i].r.crs[k].id, id) == 0 && c->v[i].r.crs_synced_ns >= *synced) {
                best = c->v[i].r.crs[k].available;
                *synced = c->v[i].r.crs_synced_ns;
            }
    return best;
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
    const cJSON *spec = nw_json_get(nc, "spec");
    cJSON *k = nw_json_new_array();
    const char *keys[] = {"subnetSelectorTerms",
                          "securityGroupSelectorTerms",
                          "amiSelectorTerms",
                          "amiFamily",
                          "role",
                          "instanceProfile",
                          "placementGroupSelector",
                          "capacityReservationSelectorTerms"};
    for (int i = 0; i < 8; i++) {
        const cJSON *v = nw_json_get(spec, keys[i]);
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
    const char *name = nw_json_str(nw_json_get(nc, "metadata"), "name");
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
        if (e->validate_at && now >= e->validate_at)
            validate_entry(c, e, nc, now);
        *out = &e->r;
        return NW_OK;
    }
    nw_nodeclass_resolved_t r;
    nw_rc_t rc = nw_nodeclass_resolve_ssm(c->ec2, &c->ssm, nc, &r, err);
    if (rc != NW_OK) {
        free(key);
        return rc;
    }
    int retry_soon = 0;
    resolve_profile(c, nc, &r, &retry_soon);
    resolve_pg(c, nc, &r, &retry_soon);
    resolve_crs(c, nc, &r, now, &retry_soon);
    int failures = 0;
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
        failures = e->failures;
        free(e->key);
        nw_nodeclass_resolved_cleanup(&e->r);
    }
    e->failures = retry_soon ? failures + 1 : 0;
    e->key = key;
    e->at = retry_soon ? now - c->ttl + retry_after(c, e->failures) : now;
    e->r = r;
    e->base_ready = r.ready;
    snprintf(e->base_reason, sizeof e->base_reason, "%s", r.reason);
    snprintf(e->base_message, sizeof e->base_message, "%s", r.message);
    e->validate_at = 0;
    validate_entry(c, e, nc, now);
    *out = &e->r;
    return NW_OK;
}
