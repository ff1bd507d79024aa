/* scaler/aws/iam.c — IAM instance profiles for EC2NodeClasses; see iam.h. */
#include "scaler/aws/iam.h"

#include <openssl/rand.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/log.h"
#include "scaler/aws/sigv4.h"

#define COMP "aws.iam"

nw_rc_t nw_iam_new(const nw_awscfg_t *cfg, nw_creds_t *creds, const nw_clock_t *clock,
                   nw_ec2_t **out, nw_err_t *err)
{
    bool cn = strncmp(cfg->region, "cn-", 3) == 0;
    const char *url = cfg->iam[0] ? cfg->iam
                      : cn        ? "https://iam.cn-north-1.amazonaws.com.cn"
                                  : "https://iam.amazonaws.com";
    return nw_ec2_new_service(cfg, creds, clock, url, "iam", cn ? "cn-north-1" : "us-east-1", out,
                              err);
}

static NW_MUST_USE nw_rc_t call(nw_ec2_t *iam, nw_ec2_params_t *p, nw_iam_profiles_t *got,
                                char *marker, size_t mlen, nw_ec2_error_t *ae, nw_err_t *err)
{
    nw_buf_t resp;
    nw_buf_init(&resp, 16 * 1024 * 1024);
    nw_rc_t rc = nw_ec2_call(iam, p, &resp, ae, err);
    if (rc == NW_OK && got)
        rc = nw_ec2xml_parse_iam_profiles(resp.data, resp.len, got, marker, mlen, err);
    nw_buf_cleanup(&resp);
    if (rc == NW_EAWS && ae->cls == NW_EC2_NOTFOUND)
        rc = NW_ENOTFOUND;
    return rc;
}

/* one call of action with key=value pairs (NULL-terminated) */
static NW_MUST_USE nw_rc_t simple(nw_ec2_t *iam, const char *action, const char *const *kv,
                                  nw_iam_profiles_t *got, nw_ec2_error_t *ae, nw_err_t *err)
{
    nw_ec2_params_t p;
    nw_rc_t rc = nw_ec2_params_init_version(&p, action, NW_IAM_VERSION);
    for (int i = 0; rc == NW_OK && kv[i]; i += 2)
        rc = nw_ec2_param(&p, kv[i], kv[i + 1]);
    if (rc == NW_OK)
        rc = call(iam, &p, got, NULL, 0, ae, err);
    else
        rc = nw_err_set(err, rc, action, "request too large");
    nw_ec2_params_cleanup(&p);
    return rc;
}

nw_rc_t nw_iam_get_profile(nw_ec2_t *iam, const char *name, nw_iam_profile_t *out,
                           nw_ec2_error_t *ae, nw_err_t *err)
{
    nw_ec2_error_t local;
    nw_iam_profiles_t got = {0};
    const char *kv[] = {"InstanceProfileName", name, NULL};
    nw_rc_t rc = simple(iam, "GetInstanceProfile", kv, &got, ae ? ae : &local, err);
    if (rc == NW_OK && got.n == 0)
        rc = nw_err_set(err, NW_EPARSE, "GetInstanceProfile", "no InstanceProfile in the answer");
    if (rc == NW_OK)
        *out = got.v[0];
    nw_ec2xml_iam_profiles_free(&got);
    return rc;
}

nw_rc_t nw_iam_list_profiles(nw_ec2_t *iam, const char *prefix, nw_iam_profiles_t *out,
                             nw_ec2_error_t *ae, nw_err_t *err)
{
    nw_ec2_error_t local;
    char marker[512] = "";
    nw_rc_t rc = NW_OK;
    for (int page = 0; page < 1000 && rc == NW_OK; page++) {
        nw_ec2_params_t p;
        rc = nw_ec2_params_init_version(&p, "ListInstanceProfiles", NW_IAM_VERSION);
        if (rc == NW_OK)
            rc = nw_ec2_param(&p, "PathPrefix", prefix);
        if (rc == NW_OK && marker[0])
            rc = nw_ec2_param(&p, "Marker", marker);
        if (rc == NW_OK)
            rc = call(iam, &p, out, marker, sizeof marker, ae ? ae : &local, err);
        nw_ec2_params_cleanup(&p);
        if (!marker[0])
            break;
    }
    return rc;
}

nw_rc_t nw_iam_delete_profile(nw_ec2_t *iam, const char *name, nw_ec2_error_t *ae, nw_err_t *err)
{
    nw_iam_profile_t pr;
    nw_rc_t rc = nw_iam_get_profile(iam, name, &pr, ae, err);
    if (rc == NW_ENOTFOUND)
        return NW_OK;
    if (rc != NW_OK)
        return rc;
    if (pr.role[0]) {
        const char *kv[] = {"InstanceProfileName", name, "RoleName", pr.role, NULL};
        rc = simple(iam, "RemoveRoleFromInstanceProfile", kv, NULL, ae, err);
        if (rc != NW_OK && rc != NW_ENOTFOUND)
            return rc;
    }
    const char *kv[] = {"InstanceProfileName", name, NULL};
    rc = simple(iam, "DeleteInstanceProfile", kv, NULL, ae, err);
    if (rc == NW_ENOTFOUND)
        rc = NW_OK;
    if (rc == NW_OK)
        nw_log_info(COMP, "instance profile deleted", NW_LS("name", name));
    return rc;
}

void nw_iam_class_path(const char *region, const char *cluster, const cJSON *nc, char *out,
                       size_t len)
{
    const cJSON *md = nw_json_get(nc, "metadata");
    const char *uid = nw_json_str(md, "uid");
    if (!uid || !*uid)
        uid = nw_json_str(md, "name");
    snprintf(out, len, "/karpenter/%s/%s/%s/", region, cluster, uid ? uid : "");
}

/* the role's last path segment (instanceprofile.go ensureRole) */
static const char *role_name(const char *role)
{
    const char *s = strrchr(role, '/');
    return s ? s + 1 : role;
}

/* "<cluster>_<n>": a 64-bit number from the region, the class name and random bytes */
static void new_name(const char *region, const char *cluster, const char *cls, char *out,
                     size_t len)
{
    unsigned char rnd[16] = {0};
    if (RAND_bytes(rnd, sizeof rnd) != 1)
        memset(rnd, 0x5a, sizeof rnd);
    char seed[512], hex[65];
    int n = snprintf(seed, sizeof seed, "%s%s", region, cls);
    for (size_t i = 0; i < sizeof rnd && n > 0 && (size_t)n + 2 < sizeof seed; i++)
        n += snprintf(seed + n, sizeof seed - (size_t)n, "%02x", rnd[i]);
    nw_sigv4_sha256_hex(seed, strlen(seed), hex);
    hex[16] = 0;
    snprintf(out, len, "%s_%llu", cluster, strtoull(hex, NULL, 16));
}

static NW_MUST_USE nw_rc_t create(nw_ec2_t *iam, const char *region, const char *cluster,
                                  const cJSON *nc, const char *name, const char *path,
                                  nw_ec2_error_t *ae, nw_err_t *err)
{
    nw_ec2_params_t p;
    nw_rc_t rc = nw_ec2_params_init_version(&p, "CreateInstanceProfile", NW_IAM_VERSION);
    if (rc == NW_OK)
        rc = nw_ec2_param(&p, "InstanceProfileName", name);
    if (rc == NW_OK)
        rc = nw_ec2_param(&p, "Path", path);
    /* spec.tags, then ours (which win) */
    char ck[192];
    snprintf(ck, sizeof ck, "kubernetes.io/cluster/%s", cluster);
    const char *ours[][2] = {
        {ck, "owned"},
        {"eks:eks-cluster-name", cluster},
        {"karpenter.k8s.aws/ec2nodeclass", nw_json_str(nw_json_get(nc, "metadata"), "name")},
        {"topology.kubernetes.io/region", region}};
    int nt = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, nw_json_get(nw_json_get(nc, "spec"), "tags"))
    {
        int mine = 0;
        for (size_t i = 0; i < 4; i++)
            mine |= strcmp(t->string, ours[i][0]) == 0;
        if (!cJSON_IsString(t) || mine || rc != NW_OK)
            continue;
        nt++;
        rc = nw_ec2_paramf(&p, t->string, "Tags.member.%d.Key", nt);
        if (rc == NW_OK)
            rc = nw_ec2_paramf(&p, t->valuestring, "Tags.member.%d.Value", nt);
    }
    for (size_t i = 0; i < 4 && rc == NW_OK; i++) {
        nt++;
        rc = nw_ec2_paramf(&p, ours[i][0], "Tags.member.%d.Key", nt);
        if (rc == NW_OK)
            rc = nw_ec2_paramf(&p, ours[i][1] ? ours[i][1] : "", "Tags.member.%d.Value", nt);
    }
    if (rc == NW_OK)
        rc = call(iam, &p, NULL, NULL, 0, ae, err);
    else
        rc = nw_err_set(err, rc, "CreateInstanceProfile", "request too large");
    nw_ec2_params_cleanup(&p);
    return rc;
}

nw_rc_t nw_iam_ensure_profile(nw_ec2_t *iam, const char *region, const char *cluster,
                              const cJSON *nc, char *out, size_t len, nw_err_t *err)
{
    const cJSON *spec = nw_json_get(nc, "spec");
    const char *given = nw_json_str(spec, "instanceProfile"), *role = nw_json_str(spec, "role");
    if (given && *given) {
        snprintf(out, len, "%s", given);
        return NW_OK;
    }
    if (!role || !*role)
        return nw_err_set(err, NW_EINVAL, "spec.role",
                          "neither spec.role nor spec.instanceProfile");
    if (!iam)
        return nw_err_set(err, NW_EINVAL, "spec.role", "no IAM client to make a profile for %s",
                          role);
    const char *want = role_name(role);
    nw_ec2_error_t ae = {0};
    nw_iam_profile_t pr;
    /* the one in the status, while it holds the role */
    const char *cur = nw_json_str(nw_json_get(nc, "status"), "instanceProfile");
    if (cur && *cur) {
        nw_rc_t rc = nw_iam_get_profile(iam, cur, &pr, &ae, err);
        if (rc == NW_OK && strcmp(pr.role, want) == 0) {
            snprintf(out, len, "%s", cur);
            return NW_OK;
        }
        if (rc != NW_OK && rc != NW_ENOTFOUND)
            return rc;
    }
    /* one made for this class earlier (its status not written yet); or one left without its
     * role by a try whose AddRoleToInstanceProfile failed (the role did not exist yet): that
     * one is used again, so a retry makes no new profile */
    char path[512], name[129] = "";
    nw_iam_class_path(region, cluster, nc, path, sizeof path);
    nw_iam_profiles_t l = {0};
    nw_rc_t rc = nw_iam_list_profiles(iam, path, &l, &ae, err);
    for (size_t i = 0; rc == NW_OK && i < l.n; i++) {
        if (strcmp(l.v[i].path, path) != 0)
            continue;
        if (strcmp(l.v[i].role, want) == 0) {
            snprintf(out, len, "%s", l.v[i].name);
            nw_ec2xml_iam_profiles_free(&l);
            return NW_OK;
        }
        if (!l.v[i].role[0] && !name[0])
            snprintf(name, sizeof name, "%s", l.v[i].name);
    }
    nw_ec2xml_iam_profiles_free(&l);
    if (rc != NW_OK)
        return rc;
    if (!name[0]) {
        const char *cls = nw_json_str(nw_json_get(nc, "metadata"), "name");
        new_name(region, cluster, cls ? cls : "", name, sizeof name);
        if ((rc = create(iam, region, cluster, nc, name, path, &ae, err)) != NW_OK)
            return rc;
        nw_log_info(COMP, "instance profile created", NW_LS("name", name), NW_LS("path", path));
    }
    const char *kv[] = {"InstanceProfileName", name, "RoleName", want, NULL};
    if ((rc = simple(iam, "AddRoleToInstanceProfile", kv, NULL, &ae, err)) != NW_OK) {
        /* the profile stays, without a role, for the next try (the node class's finalizer
         * deletes every profile of its path) */
        if (rc != NW_ENOTFOUND)
            return rc;
        nw_err_clear(err);
        return nw_err_set(err, NW_EAWS, "spec.role",
                          "the role %s does not exist (AddRoleToInstanceProfile: %s: %s)", want,
                          ae.code, ae.message);
    }
    nw_log_info(COMP, "role added to the instance profile", NW_LS("name", name),
                NW_LS("role", want));
    snprintf(out, len, "%s", name);
    return NW_OK;
}

nw_rc_t nw_iam_delete_profiles(nw_ec2_t *iam, const char *region, const char *cluster,
                               const cJSON *nc, int *deleted, nw_err_t *err)
{
    char path[512];
    nw_iam_class_path(region, cluster, nc, path, sizeof path);
    nw_iam_profiles_t l = {0};
    nw_ec2_error_t ae = {0};
    int n = 0;
    nw_rc_t rc = nw_iam_list_profiles(iam, path, &l, &ae, err);
    for (size_t i = 0; rc == NW_OK && i < l.n; i++)
        if (strcmp(l.v[i].path, path) == 0 &&
            (rc = nw_iam_delete_profile(iam, l.v[i].name, &ae, err)) == NW_OK)
            n++;
    nw_ec2xml_iam_profiles_free(&l);
    if (deleted)
        *deleted = n;
    return rc;
}

/* does any instance that is not terminated run with this profile? (EC2 reports the
 * profile's ARN on the instance: DescribeInstances iam-instance-profile.arn) */
static NW_MUST_USE nw_rc_t profile_in_use(nw_ec2_t *ec2, const nw_iam_profile_t *p, int *used,
                                          nw_err_t *err)
{
    nw_ec2_filter_t f[2] = {
        {.name = "iam-instance-profile.arn", .values = {p->arn}, .nvalues = 1},
        {.name = "instance-state-name",
         .values = {"pending", "running", "shutting-down", "stopping", "stopped"},
         .nvalues = 5}};
    nw_ec2_instances_t l = {0};
    nw_ec2_error_t ae = {0};
    nw_rc_t rc = nw_ec2_describe_instances(ec2, NULL, 0, f, 2, &l, &ae, err);
    *used = 0;
    for (size_t i = 0; rc == NW_OK && i < l.n; i++)
        *used |= strcmp(l.v[i].profile_arn, p->arn) == 0 && strcmp(l.v[i].state, "terminated");
    nw_ec2xml_instances_free(&l);
    return rc;
}

nw_rc_t nw_iam_gc_profiles(nw_ec2_t *iam, nw_ec2_t *ec2, const char *region, const char *cluster,
                           const cJSON *nc, const char *keep, int *deleted, int *kept,
                           nw_err_t *err)
{
    if (deleted)
        *deleted = 0;
    if (kept)
        *kept = 0;
    if (!iam || !ec2 || !keep || !*keep)
        return nw_err_set(err, NW_EINVAL, "instance profile gc",
                          "needs IAM, EC2 and the profile in use");
    char path[512];
    nw_iam_class_path(region, cluster, nc, path, sizeof path);
    nw_iam_profiles_t l = {0};
    nw_ec2_error_t ae = {0};
    nw_rc_t rc = nw_iam_list_profiles(iam, path, &l, &ae, err);
    for (size_t i = 0; rc == NW_OK && i < l.n; i++) {
        const nw_iam_profile_t *p = &l.v[i];
        /* only this class's own (its exact path), never the one it launches with */
        if (strcmp(p->path, path) != 0 || strcmp(p->name, keep) == 0 || !p->arn[0])
            continue;
        int used = 1;
        if ((rc = profile_in_use(ec2, p, &used, err)) != NW_OK)
            break;
        if (used) {
            if (kept)
                (*kept)++;
            continue;
        }
        if ((rc = nw_iam_delete_profile(iam, p->name, &ae, err)) == NW_OK && deleted)
            (*deleted)++;
    }
    nw_ec2xml_iam_profiles_free(&l);
    return rc;
}
