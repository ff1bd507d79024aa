/*
 * cli/cmd_doctor.c — `nodewarden doctor`: the preflight to run when
 * capacity does not come.
 *
 * AWS part (this file): region and endpoints; which credential source is used
 * and its identity (STS GetCallerIdentity); the EC2 endpoint reachable;
 * permissions by DryRun=true calls (RunInstances, CreateFleet,
 * CreateLaunchTemplate, CreateTags, TerminateInstances: DryRunOperation means
 * allowed, UnauthorizedOperation not; a missing iam:PassRole for the node role
 * is named as such); every EC2NodeClass from --nodeclass FILE resolved, term
 * by term (alias terms for the Kubernetes version of the kubeconfig's API server, the
 * "kubernetes version" check). Cluster part (unless --aws-only): cli/doctor.h through
 * nw_doctor_cluster_checks.
 *
 * Exit 0 only when every check passed (skipped checks do not fail), 1 when a
 * check failed, 2 on usage errors. Each failure comes with its fix.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "scaler/aws/cloud.h"
#include "scaler/kube/client.h"
#include "scaler/kube/config.h"
#include "cli/doctor.h"
#include "cli/awsargs.h"
#include "cli/cmd.h"

typedef enum { CHK_PASS, CHK_FAIL, CHK_SKIP } chk_status_t;

typedef struct {
    cJSON *arr;
    int failed;
    bool json;
} report_t;

static void check(report_t *r, const char *name, chk_status_t st, const char *detail,
                  const char *fix)
{
    static const char *tag[] = {"pass", "fail", "skip"};
    cJSON *c = nw_json_new_object();
    nw_json_add_string(c, "name", name);
    nw_json_add_string(c, "status", tag[st]);
    nw_json_add_string(c, "detail", detail ? detail : "");
    if (st == CHK_FAIL && fix)
        nw_json_add_string(c, "fix", fix);
    nw_json_push(r->arr, c);
    if (st == CHK_FAIL)
        r->failed++;
    if (!r->json) {
        printf("[%s] %s: %s\n",
               st == CHK_PASS   ? " ok "
               : st == CHK_FAIL ? "FAIL"
                                : "skip",
               name, detail ? detail : "");
        if (st == CHK_FAIL && fix)
            printf("       fix: %s\n", fix);
    }
}

/* The cluster's Kubernetes version for amiSelectorTerms aliases, read once from the API
 * server of the kubeconfig (GET /version) the first time an alias needs it, as the scaler
 * does (scaler/aws/cloud.h k8s_version); without it every alias term said "unknown". */
typedef struct {
    const nw_awsargs_t *a;
    bool tried;
    char version[32];
    char why[400];
} doctor_k8s_t;

static NW_MUST_USE nw_rc_t doctor_k8s_version(void *ud, char *out, size_t len, nw_err_t *err)
{
    doctor_k8s_t *d = ud;
    if (!d->tried) {
        d->tried = true;
        nw_err_t e = {0};
        nw_kube_config_t *kcfg = NULL;
        nw_kube_client_t *client = NULL;
        nw_kube_client_opts_t copts = {.max_retries = 1, .timeout_ms = 10000};
        if (nw_kube_config_load(d->a->cfg.kubernetes.kubeconfig, d->a->cfg.kubernetes.context,
                                &kcfg, &e) == NW_OK &&
            nw_kube_client_new(kcfg, &copts, &client, &e) == NW_OK)
            /* a failure leaves the version empty: reported below */
            (void)nw_kube_client_server_version(client, d->version, sizeof d->version, &e);
        nw_kube_client_free(client);
        if (!d->version[0])
            snprintf(d->why, sizeof d->why, "not read from the API server: %.300s",
                     e.msg[0] ? e.msg : "no kubeconfig");
    }
    if (!d->version[0])
        return nw_err_set(err, NW_EINVAL, "kubernetes", "%s", d->why);
    snprintf(out, len, "%s", d->version);
    return NW_OK;
}

/* The cluster part of doctor: cli/doctor.h (API server, RBAC, CRDs,
 * webhook registration, NodePool references, providerIDs), folded into this
 * report. */
static void nw_doctor_cluster_checks(report_t *r, const nw_awsargs_t *a)
{
    nw_err_t err = {0};
    nw_kube_config_t *kcfg = NULL;
    nw_kube_client_t *client = NULL;
    if (nw_kube_config_load(a->cfg.kubernetes.kubeconfig, a->cfg.kubernetes.context, &kcfg, &err) !=
        NW_OK) {
        check(r, "cluster", CHK_FAIL, err.msg,
              "give --kubernetes.kubeconfig FILE (or KUBECONFIG), run in-cluster, or use "
              "--aws-only to check AWS alone");
        return;
    }
    nw_kube_client_opts_t copts = {.max_retries = 1, .timeout_ms = 10000};
    if (nw_kube_client_new(kcfg, &copts, &client, &err) != NW_OK) {
        check(r, "cluster", CHK_FAIL, err.msg, "fix the kubeconfig");
        return;
    }
    nw_kube_report_t rep;
    nw_doctor_report_init(&rep);
    /* the Lease permissions where serve takes the Lease, not in the kubeconfig's namespace */
    nw_kube_doctor_opts_t kopts = {.lease_namespace = a->cfg.scaler.leaderElection.namespace_,
                                   .cluster_cidr = a->cfg.settings.clusterCIDR};
    /* every check, failed or not, is in rep */
    (void)nw_doctor_run(client, &kopts, &rep);
    for (size_t i = 0; i < rep.n; i++) {
        const nw_kube_check_t *k = &rep.v[i];
        char name[200], detail[1024];
        snprintf(name, sizeof name, "cluster %s: %s", k->area, k->what);
        snprintf(detail, sizeof detail, "%s%s", k->status == NW_CHECK_WARN ? "warning: " : "",
                 k->detail);
        check(r, name,
              k->status == NW_CHECK_FAIL   ? CHK_FAIL
              : k->status == NW_CHECK_SKIP ? CHK_SKIP
                                           : CHK_PASS,
              detail, k->fix[0] ? k->fix : NULL);
    }
    nw_doctor_report_cleanup(&rep);
    nw_kube_client_free(client);
}

static const char *source_fix(nw_creds_source_t s)
{
    switch (s) {
    case NW_CREDS_ENV:
        return "check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for "
               "temporary keys): they are rejected";
    case NW_CREDS_WEB_IDENTITY:
        return "check AWS_ROLE_ARN, the token file AWS_WEB_IDENTITY_TOKEN_FILE and the role's "
               "trust "
               "policy for the cluster's OIDC provider";
    case NW_CREDS_IMDS:
        return "attach an instance profile to the node running nodewarden; from a pod (not "
               "hostNetwork) set the instance metadata PUT response hop limit to 2";
    case NW_CREDS_PROFILE:
        return "check the profile's aws_access_key_id / aws_secret_access_key (and "
               "aws_session_token) in the shared credentials file: they are rejected";
    case NW_CREDS_PROCESS:
        return "run the profile's credential_process yourself: it must exit 0 and print "
               "Version 1 JSON with AccessKeyId and SecretAccessKey";
    case NW_CREDS_ASSUME_ROLE:
        return "check the profile's role_arn, that its source credentials may call "
               "sts:AssumeRole on it, the role's trust policy and external_id";
    case NW_CREDS_CONTAINER:
        return "check AWS_CONTAINER_CREDENTIALS_FULL_URI / _RELATIVE_URI, the token in "
               "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE, and that the agent (EKS Pod Identity, "
               "ECS) runs and has a role for this pod";
    default:
        return "provide credentials: environment keys, web identity, a profile of "
               "~/.aws/credentials or ~/.aws/config (AWS_PROFILE), container credentials, or "
               "an instance profile";
    }
}

/* One DryRun permission check. */
static void dry_run(report_t *r, nw_ec2_t *ec2, const char *action, nw_ec2_params_t *p,
                    const char *profile)
{
    char name[96], detail[768], fix[768];
    nw_ec2_error_t ae;
    nw_err_t err = {0};
    snprintf(name, sizeof name, "permission ec2:%s", action);
    nw_rc_t rc = nw_ec2_dry_run(ec2, p, &ae, &err);
    nw_ec2_params_cleanup(p);
    if (rc == NW_OK) {
        check(r, name, CHK_PASS, "DryRun: DryRunOperation (allowed)", NULL);
        return;
    }
    if (nw_ec2_error_is_passrole(&ae)) {
        snprintf(detail, sizeof detail, "%s: %s", ae.code, ae.message);
        snprintf(fix, sizeof fix,
                 "allow iam:PassRole on the node role%s%s%s for the role nodewarden runs as "
                 "(ec2:%s needs to pass it to the instances)",
                 profile ? " (instance profile " : "", profile ? profile : "", profile ? ")" : "",
                 action);
        check(r, name, CHK_FAIL, detail, fix);
        return;
    }
    if (ae.cls == NW_EC2_AUTH) {
        snprintf(detail, sizeof detail, "%s: %s", ae.code, ae.message);
        snprintf(fix, sizeof fix, "add ec2:%s to the IAM policy of the role nodewarden runs as",
                 action);
        check(r, name, CHK_FAIL, detail, fix);
        return;
    }
    snprintf(detail, sizeof detail, "%s", err.msg[0] ? err.msg : nw_err_rc_str(rc));
    check(r, name, CHK_FAIL, detail,
          "the dry run did not answer DryRunOperation; see the error (endpoint, parameters)");
}

static void permission_checks(report_t *r, nw_ec2_t *ec2, const nw_nodeclass_resolved_t *res,
                              const cJSON *nc)
{
    const cJSON *spec = nw_json_get(nc, "spec");
    const cJSON *prof = nw_json_get(spec, "instanceProfile");
    if (!cJSON_IsString(prof))
        prof = nw_json_get(spec, "role");
    const char *profile = cJSON_IsString(prof) ? prof->valuestring : NULL;
    const char *ami = res && res->namis ? res->amis[0].id : "ami-00000000000000000";
    const char *subnet = res && res->nsubnets ? res->subnets[0].id : NULL;
    const char *zone = res && res->nsubnets ? res->subnets[0].zone : NULL;
    nw_ec2_params_t p;

    /* only fails out of memory; the dry run then reports the broken request */
    (void)nw_ec2_params_init(&p, "RunInstances");
    (void)(nw_ec2_param(&p, "ImageId", ami) || nw_ec2_param(&p, "InstanceType", "t3.micro") ||
           nw_ec2_param(&p, "MinCount", "1") || nw_ec2_param(&p, "MaxCount", "1") ||
           (subnet && nw_ec2_param(&p, "SubnetId", subnet)) ||
           (profile && nw_ec2_param(&p, "IamInstanceProfile.Name", profile)));
    dry_run(r, ec2, "RunInstances", &p, profile);

    (void)nw_ec2_params_init(&p, "CreateLaunchTemplate");
    (void)(nw_ec2_param(&p, "LaunchTemplateName", "nodewarden-doctor-dry-run") ||
           nw_ec2_param(&p, "LaunchTemplateData.ImageId", ami) ||
           (profile && nw_ec2_param(&p, "LaunchTemplateData.IamInstanceProfile.Name", profile)));
    dry_run(r, ec2, "CreateLaunchTemplate", &p, profile);

    (void)nw_ec2_params_init(&p, "CreateFleet");
    (void)(nw_ec2_param(&p, "Type", "instant") ||
           nw_ec2_param(&p, "TargetCapacitySpecification.TotalTargetCapacity", "1") ||
           nw_ec2_param(&p, "TargetCapacitySpecification.DefaultTargetCapacityType", "on-demand") ||
           nw_ec2_param(&p,
                        "LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateName",
                        "nodewarden-doctor-dry-run") ||
           nw_ec2_param(&p, "LaunchTemplateConfigs.1.LaunchTemplateSpecification.Version",
                        "$Latest") ||
           nw_ec2_param(&p, "LaunchTemplateConfigs.1.Overrides.1.InstanceType", "t3.micro") ||
           (subnet && nw_ec2_param(&p, "LaunchTemplateConfigs.1.Overrides.1.SubnetId", subnet)) ||
           (zone &&
            nw_ec2_param(&p, "LaunchTemplateConfigs.1.Overrides.1.AvailabilityZone", zone)));
    dry_run(r, ec2, "CreateFleet", &p, profile);

    (void)nw_ec2_params_init(&p, "CreateTags");
    (void)(nw_ec2_param(&p, "ResourceId.1", "i-00000000000000000") ||
           nw_ec2_param(&p, "Tag.1.Key", "nodewarden.io/doctor") ||
           nw_ec2_param(&p, "Tag.1.Value", "dry-run"));
    dry_run(r, ec2, "CreateTags", &p, NULL);

    (void)nw_ec2_params_init(&p, "TerminateInstances");
    (void)nw_ec2_param(&p, "InstanceId.1", "i-00000000000000000");
    dry_run(r, ec2, "TerminateInstances", &p, NULL);
}

static void term_checks(report_t *r, const char *nc, const char *kind, const int *found, int n,
                        char notes[][256])
{
    char name[320], detail[512];
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof name, "EC2NodeClass %s %s[%d]", nc, kind, i);
        if (found[i] > 0) {
            snprintf(detail, sizeof detail, "found %d", found[i]);
            check(r, name, CHK_PASS, detail, NULL);
        } else {
            snprintf(detail, sizeof detail, "found none%s%s", notes && notes[i][0] ? ": " : "",
                     notes && notes[i][0] ? notes[i] : "");
            check(r, name, CHK_FAIL, detail,
                  "fix the term (ids, tags, names) or tag the resources it should select; "
                  "terms are ORed, the fields inside a term are ANDed, tag value \"*\" means "
                  "any value");
        }
    }
}

static void nodeclass_checks(report_t *r, nw_cloud_t *cloud, const nw_awsargs_t *a,
                             const nw_nodeclass_resolved_t **first)
{
    *first = NULL;
    /* a preflight makes nothing: no instance profile for spec.role (scaler/aws/iam.h) */
    nw_nodeclass_cache_set_iam(nw_aws_cloud_nodeclasses(cloud), NULL, "", "");
    if (a->nnodeclasses == 0) {
        check(r, "EC2NodeClasses", CHK_SKIP,
              "none given: pass --nodeclass FILE (reading them from the cluster comes with the "
              "Kubernetes client)",
              NULL);
        return;
    }
    for (int i = 0; i < a->nnodeclasses; i++) {
        const nw_nodeclass_resolved_t *res;
        nw_err_t err = {0};
        char name[320], detail[768];
        const cJSON *md = nw_json_get(a->nodeclasses[i], "metadata");
        const cJSON *nm = nw_json_get(md, "name");
        snprintf(name, sizeof name, "EC2NodeClass %s",
                 cJSON_IsString(nm) ? nm->valuestring : a->nodeclass_src[i]);
        if (nw_nodeclass_cache_get(nw_aws_cloud_nodeclasses(cloud), a->nodeclasses[i], &res,
                                   &err) != NW_OK) {
            check(r, name, CHK_FAIL, err.msg, "fix the EC2NodeClass or the EC2 access above");
            continue;
        }
        if (!*first)
            *first = res;
        term_checks(r, res->name, "subnetSelectorTerms", res->subnet_found, res->nsubnet_terms,
                    NULL);
        term_checks(r, res->name, "securityGroupSelectorTerms", res->sg_found, res->nsg_terms,
                    NULL);
        term_checks(r, res->name, "amiSelectorTerms", res->ami_found, res->nami_terms,
                    (char(*)[256])res->ami_term_note);
        snprintf(detail, sizeof detail, "%zu subnets, %zu security groups, %zu AMIs%s%s",
                 res->nsubnets, res->nsgs, res->namis, res->ready ? "" : ": ",
                 res->ready ? "" : res->message);
        check(r, name, res->ready ? CHK_PASS : CHK_FAIL, detail,
              "every selector list must find at least one resource; see the terms above");
    }
}

/* The scaler's periodic refreshes, run once here: instance types and offerings, spot
 * prices, on-demand prices (scaler/aws/cloud.h). A failure is what a running scaler would
 * log and count (nodewarden_aws_refresh_failing) while it keeps the last good data. */
static void refresh_checks(report_t *r, nw_cloud_t *cloud, const nw_awsargs_t *a)
{
    static const struct {
        const char *kind, *name, *fix;
    } k[] = {
        {"instance-types", "instance types",
         "allow ec2:DescribeInstanceTypes and ec2:DescribeInstanceTypeOfferings; until then the "
         "scaler offers the embedded catalog (data/catalog.json)"},
        {"spot-pricing", "spot prices",
         "allow ec2:DescribeSpotPriceHistory; until then spot offerings cost the on-demand price"},
        {"on-demand-pricing", "on-demand prices",
         "allow pricing:GetProducts and egress to the Pricing API (aws.endpoints.pricing), or set "
         "settings.isolatedVPC; until then the embedded us-east-1 prices (data/prices.json) "
         "serve"},
    };
    char detail[640];
    nw_aws_refresh_status_t st[NW_AWS_NREFRESH];
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        if (strcmp(k[i].kind, "on-demand-pricing") == 0 && a->cfg.settings.isolatedVPC) {
            check(r, k[i].name, CHK_SKIP,
                  "settings.isolatedVPC: the Pricing API is not asked; the embedded prices serve",
                  NULL);
            continue;
        }
        nw_err_t e = {0};
        nw_rc_t rc = nw_aws_cloud_refresh_now(cloud, k[i].kind, &e);
        nw_aws_cloud_refresh_status(cloud, st);
        const nw_aws_refresh_status_t *s = NULL;
        for (int j = 0; j < NW_AWS_NREFRESH; j++)
            if (strcmp(st[j].kind, k[i].kind) == 0)
                s = &st[j];
        if (rc != NW_OK) {
            snprintf(detail, sizeof detail,
                     "refresh failed (the scaler keeps the last good data): %s", e.msg);
            check(r, k[i].name, CHK_FAIL, detail, k[i].fix);
        } else if (strcmp(k[i].kind, "instance-types") == 0) {
            snprintf(detail, sizeof detail, "%zu types; %zu without an on-demand price%s",
                     s ? s->count : 0, s ? s->unpriced : 0,
                     s && s->unpriced ? " (not offered until priced)" : "");
            check(r, k[i].name, CHK_PASS, detail, NULL);
        } else {
            snprintf(detail, sizeof detail, "%zu prices known", s ? s->count : 0);
            check(r, k[i].name, CHK_PASS, detail, NULL);
        }
    }
}

static void usage(FILE *f)
{
    fprintf(f, "usage: nodewarden doctor [--aws-only] [--output text|json] [--nodeclass FILE ...]\n"
               "                         [--config FILE] [--KEY VALUE ...]\n\n"
               "Preflight checks: AWS region and endpoints, credentials and identity, EC2\n"
               "reachability, IAM permissions (DryRun), EC2NodeClass selectors; exit 0 only\n"
               "when every check passes, and each failure is printed with its fix.\n");
}

/* Credentials: they load, and STS says whose they are (an endpoint without
 * GetCallerIdentity passes). False when the checks cannot go on. */
static bool credential_checks(report_t *r, nw_awsargs_t *a, nw_cloud_t *cloud)
{
    char detail[4096];
    nw_creds_t *creds = nw_aws_cloud_creds(cloud);
    nw_creds_source_t src = nw_creds_source(creds);
    nw_creds_value_t cv;
    nw_err_t ce = {0};
    if (nw_creds_get(creds, &cv, &ce) != NW_OK) {
        snprintf(detail, sizeof detail, "source %s (%.600s): %s", nw_creds_source_name(src),
                 nw_creds_describe(creds), ce.msg);
        check(r, "credentials", CHK_FAIL, detail, source_fix(src));
        return false;
    }
    nw_creds_value_wipe(&cv);
    nw_sts_result_t id;
    nw_err_t ie = {0};
    if (nw_creds_sts_caller_identity(&a->aws, creds, NULL, &id, &ie) == NW_OK) {
        snprintf(detail, sizeof detail, "source %s (%.600s), identity %s (account %s)",
                 nw_creds_source_name(src), nw_creds_describe(creds), id.arn, id.account);
        check(r, "credentials", CHK_PASS, detail, NULL);
    } else if (strcmp(ie.path, "InvalidAction") == 0 || strcmp(ie.path, "UnknownOperation") == 0) {
        snprintf(detail, sizeof detail,
                 "source %s; identity unknown: the STS endpoint does not support GetCallerIdentity",
                 nw_creds_source_name(src));
        check(r, "credentials", CHK_PASS, detail, NULL);
    } else {
        snprintf(detail, sizeof detail, "source %s: GetCallerIdentity failed: %s",
                 nw_creds_source_name(src), ie.msg);
        check(r, "credentials", CHK_FAIL, detail, source_fix(src));
        return false;
    }
    return true;
}

/* The EC2 endpoint answers DescribeAvailabilityZones. False when it cannot be reached
 * (a refusal is a failed check, and the checks go on). */
static bool ec2_endpoint_check(report_t *r, const nw_awsargs_t *a, nw_ec2_t *ec2)
{
    char detail[4096];
    nw_ec2_zones_t zs = {0};
    nw_ec2_error_t ae;
    nw_err_t ze = {0};
    if (nw_ec2_describe_zones(ec2, &zs, &ae, &ze) == NW_OK) {
        snprintf(detail, sizeof detail, "%s answered; %zu availability zones", a->aws.ec2, zs.n);
        check(r, "ec2 endpoint", CHK_PASS, detail, NULL);
    } else if (ae.cls == NW_EC2_AUTH) {
        snprintf(detail, sizeof detail, "%s answered but refused: %s", a->aws.ec2, ze.msg);
        check(r, "ec2 endpoint", CHK_FAIL, detail,
              "allow ec2:Describe* (DescribeAvailabilityZones, DescribeSubnets, ...) for the role");
    } else {
        snprintf(detail, sizeof detail, "%s: %s", a->aws.ec2, ze.msg);
        check(r, "ec2 endpoint", CHK_FAIL, detail,
              "check network egress to the EC2 endpoint (or AWS_ENDPOINT_URL_EC2) and the region");
        nw_ec2xml_zones_free(&zs);
        return false;
    }
    nw_ec2xml_zones_free(&zs);
    return true;
}

/* The AWS part: region, credentials, the EC2 endpoint, the catalog refresh, the
 * EC2NodeClasses, the Kubernetes version their aliases resolved for, the permissions a
 * launch needs. Stops at the first check the others depend on. *cloud: the AWS cloud
 * (the caller frees it; it borrows k8s). */
static void aws_checks(report_t *r, nw_awsargs_t *a, doctor_k8s_t *k8s, nw_cloud_t **cloud)
{
    char detail[4096];
    nw_err_t err = {0};
    if (!a->aws.region[0]) {
        check(r, "aws region", CHK_FAIL,
              "no region (config aws.region, AWS_REGION, "
              "AWS_DEFAULT_REGION, IMDS placement/region)",
              "set aws.region in the config or AWS_REGION in nodewarden's environment");
        return;
    }
    snprintf(detail, sizeof detail, "%s; ec2 %s, sts %s, imds %s", a->aws.region, a->aws.ec2,
             a->aws.sts, a->aws.imds_disabled ? "disabled" : a->aws.imds);
    check(r, "aws region", CHK_PASS, detail, NULL);

    nw_aws_cloud_opts_t o = {.aws = a->aws,
                             .cluster_name =
                                 a->cfg.settings.clusterName && *a->cfg.settings.clusterName
                                     ? a->cfg.settings.clusterName
                                     : "-",
                             .isolated_vpc = a->cfg.settings.isolatedVPC,
                             .k8s_version = doctor_k8s_version,
                             .k8s_version_ud = k8s};
    if (nw_aws_cloud_new(&o, cloud, &err) != NW_OK) {
        check(r, "credentials", CHK_FAIL, err.msg, source_fix(NW_CREDS_NONE));
        return;
    }
    if (!credential_checks(r, a, *cloud))
        return;

    nw_ec2_t *ec2 = nw_aws_cloud_ec2(*cloud);
    if (!ec2_endpoint_check(r, a, ec2))
        return;
    refresh_checks(r, *cloud, a);

    const nw_nodeclass_resolved_t *first = NULL;
    nodeclass_checks(r, *cloud, a, &first);
    if (k8s->tried) { /* an alias asked for it: say which version the aliases resolved for */
        snprintf(detail, sizeof detail,
                 "%s (the API server's /version; amiSelectorTerms aliases "
                 "resolve for it)",
                 k8s->version);
        check(r, "kubernetes version", k8s->version[0] ? CHK_PASS : CHK_FAIL,
              k8s->version[0] ? detail : k8s->why,
              k8s->version[0] ? NULL
                              : "give --kubernetes.kubeconfig FILE (or KUBECONFIG) so the "
                                "amiSelectorTerms aliases resolve for the cluster's version");
    }
    permission_checks(r, ec2, first, first ? a->nodeclasses[0] : NULL);
}

/* The summary: the checks as JSON (--output json; they were printed as they ran
 * otherwise) and the verdict. */
static void print_summary(report_t *r)
{
    if (r->json) {
        cJSON *out = nw_json_new_object();
        nw_json_add_bool(out, "passed", r->failed == 0);
        nw_json_add_number(out, "failed", r->failed);
        nw_json_add_item(out, "checks", r->arr);
        char *s = nw_json_print_pretty(out);
        if (s)
            printf("%s\n", s);
        free(s);
        cJSON_Delete(out);
    } else {
        printf("%s: %d check(s) failed\n", r->failed ? "FAIL" : "OK", r->failed);
        cJSON_Delete(r->arr);
    }
}

int nw_cmd_doctor(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return NW_EXIT_OK;
        }
    nw_awsargs_t a;
    nw_err_t err = {0};
    if (nw_awsargs_parse(&a, argc, argv, &err) != NW_OK) {
        fprintf(stderr, "nodewarden doctor: %s\n", err.msg);
        nw_awsargs_free(&a);
        return NW_EXIT_USAGE;
    }
    report_t r = {nw_json_new_array(), 0, a.json};
    nw_cloud_t *cloud = NULL;
    doctor_k8s_t k8s = {.a = &a};
    aws_checks(&r, &a, &k8s, &cloud);
    if (!a.aws_only)
        nw_doctor_cluster_checks(&r, &a);
    print_summary(&r);
    if (cloud)
        cloud->ops->free(cloud);
    nw_awsargs_free(&a);
    return r.failed ? NW_EXIT_FAIL : NW_EXIT_OK;
}
