/*
 * cli/cmd_aws.c — `nodewarden aws VERB`: the EC2 provider by hand, for
 * operators and for the end-to-end tests. Every verb prints JSON on stdout.
 *
 *   whoami      credential source, identity (STS GetCallerIdentity), fetches
 *   zones       DescribeAvailabilityZones
 *   catalog     instance types (embedded, or --refresh from the API)
 *   resolve     resolve --nodeclass FILE: the EC2NodeClass status
 *   launch      launch one instance for --nodeclass/--nodepool/--nodeclaim/--types
 *   list        instances of settings.clusterName (tag filters)
 *   terminate   ID|providerID ...
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/json.h"
#include "common/log.h"
#include "scaler/aws/cloud.h"
#include "cli/awsargs.h"
#include "cli/cmd.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: nodewarden aws VERB [flags] [--config FILE] [--KEY VALUE ...]\n\n"
               "verbs:\n"
               "  whoami [--repeat N --interval-ms MS]   credential source and identity\n"
               "  zones                                  DescribeAvailabilityZones\n"
               "  catalog [--refresh]                    instance types, offerings, prices\n"
               "  resolve --nodeclass FILE               EC2NodeClass status (subnets, SGs, AMIs)\n"
               "  launch --nodeclass FILE --nodepool P --nodeclaim C --types T1,T2\n"
               "         [--zones Z1,Z2] [--capacity-types spot,on-demand] [--refresh]\n"
               "         [--repeat N --interval-ms MS]   N launches (claims C-1..C-N)\n"
               "  list [--repeat N --interval-ms MS]     instances of settings.clusterName\n"
               "  terminate ID|PROVIDER-ID ...           idempotent\n\n"
               "Region and endpoints: aws.region / AWS_REGION, AWS_ENDPOINT_URL_EC2, _STS,\n"
               "AWS_EC2_METADATA_SERVICE_ENDPOINT. Cluster: --settings.clusterName NAME.\n"
               "Debugging knobs (environment): NW_AWS_MAX_RESULTS (page size of Describe\n"
               "calls), NW_AWS_ICE_TTL_MS (insufficient-capacity cache TTL, default 180000),\n"
               "NW_AWS_CALL_TIMEOUT_MS (timeout of one HTTP exchange, default 10000).\n");
}

static void print_json(cJSON *j)
{
    char *s = nw_json_print_pretty(j);
    if (s) {
        printf("%s\n", s);
        free(s);
    }
    cJSON_Delete(j);
}

static int fail(const char *verb, const nw_err_t *err, const nw_ec2_error_t *ae)
{
    cJSON *j = nw_json_new_object();
    nw_json_add_string(j, "error", err->msg[0] ? err->msg : nw_err_rc_str(err->rc));
    if (ae && ae->code[0]) {
        nw_json_add_string(j, "code", ae->code);
        nw_json_add_string(j, "class", nw_ec2_class_name(ae->cls));
    }
    print_json(j);
    fprintf(stderr, "nodewarden aws %s: %s\n", verb,
            err->msg[0] ? err->msg : nw_err_rc_str(err->rc));
    return NW_EXIT_FAIL;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static cJSON *instance_json(const nw_ec2_instance_t *in)
{
    cJSON *o = nw_json_new_object();
    char pid[192];
    snprintf(pid, sizeof pid, "aws:///%s/%s", in->zone, in->id);
    nw_json_add_string(o, "instanceId", in->id);
    nw_json_add_string(o, "providerID", pid);
    nw_json_add_string(o, "type", in->type);
    nw_json_add_string(o, "zone", in->zone);
    nw_json_add_string(o, "state", in->state);
    nw_json_add_string(o, "capacityType",
                       strcmp(in->lifecycle, "spot") == 0 ? "spot" : "on-demand");
    cJSON *t = nw_json_add_object(o, "tags");
    for (int i = 0; i < in->tags.n; i++)
        nw_json_add_string(t, in->tags.v[i].key, in->tags.v[i].value);
    return o;
}

static int verb_whoami(nw_awsargs_t *a, nw_cloud_t *cloud)
{
    nw_creds_t *cr = nw_aws_cloud_creds(cloud);
    nw_sts_result_t id;
    nw_err_t err = {0};
    for (int i = 0; i < a->repeat; i++) {
        if (i > 0 && a->interval_ms > 0)
            sleep_ms(a->interval_ms);
        memset(&err, 0, sizeof err);
        if (nw_creds_sts_caller_identity(&a->aws, cr, NULL, &id, &err) != NW_OK)
            return fail("whoami", &err, NULL);
    }
    cJSON *j = nw_json_new_object();
    nw_json_add_string(j, "source", nw_creds_source_name(nw_creds_source(cr)));
    nw_json_add_string(j, "from", nw_creds_describe(cr));
    nw_json_add_string(j, "arn", id.arn);
    nw_json_add_string(j, "account", id.account);
    nw_json_add_number(j, "fetches", (double)nw_creds_fetch_count(cr));
    nw_json_add_string(j, "region", a->aws.region);
    print_json(j);
    return NW_EXIT_OK;
}

static int verb_zones(nw_cloud_t *cloud)
{
    nw_ec2_zones_t z = {0};
    nw_ec2_error_t ae;
    nw_err_t err = {0};
    if (nw_ec2_describe_zones(nw_aws_cloud_ec2(cloud), &z, &ae, &err) != NW_OK)
        return fail("zones", &err, &ae);
    cJSON *j = nw_json_new_array();
    for (size_t i = 0; i < z.n; i++) {
        cJSON *o = nw_json_new_object();
        nw_json_add_string(o, "name", z.v[i].name);
        nw_json_add_string(o, "zoneId", z.v[i].zone_id);
        nw_json_add_string(o, "state", z.v[i].state);
        nw_json_push(j, o);
    }
    nw_ec2xml_zones_free(&z);
    cJSON *r = nw_json_new_object();
    nw_json_add_item(r, "zones", j);
    nw_json_add_number(r, "requests", (double)nw_ec2_request_count(nw_aws_cloud_ec2(cloud)));
    print_json(r);
    return NW_EXIT_OK;
}

static int verb_catalog(nw_awsargs_t *a, nw_cloud_t *cloud)
{
    nw_err_t err = {0};
    if (a->refresh && nw_aws_cloud_refresh_catalog(cloud, &err) != NW_OK)
        return fail("catalog", &err, NULL);
    const nw_catalog_t *cat = cloud->ops->catalog(cloud);
    nw_overhead_opts_t o;
    nw_catalog_overhead_opts_default(&o);
    o.vm_memory_overhead_percent = a->cfg.settings.vmMemoryOverheadPercent;
    o.reserved_enis = (int)a->cfg.settings.reservedENIs;
    cJSON *arr = nw_json_new_array();
    for (size_t i = 0; i < nw_catalog_len(cat); i++) {
        const nw_itype_t *t = nw_catalog_at(cat, i);
        nw_cat_res_t al;
        nw_catalog_itype_allocatable(t, &o, &al);
        cJSON *e = nw_json_new_object();
        nw_json_add_string(e, "name", t->name);
        nw_json_add_number(e, "vcpu", t->vcpu);
        nw_json_add_number(e, "memoryMiB", (double)t->memory_mib);
        nw_json_add_string(e, "arch", t->arch);
        if (t->gpu_count) {
            nw_json_add_string(e, "gpu", t->gpu_name);
            nw_json_add_number(e, "gpuCount", t->gpu_count);
        }
        nw_json_add_number(e, "maxPods", (double)al.pods);
        nw_json_add_number(e, "allocatableCpuMillis", (double)al.cpu_m);
        nw_json_add_number(e, "allocatableMemoryMiB", (double)(al.memory_bytes / 1048576));
        nw_json_add_number(e, "onDemandPrice", t->od_price);
        cJSON *offs = nw_json_add_array(e, "offerings");
        for (int k = 0; k < t->noffer; k++) {
            cJSON *of = nw_json_new_object();
            nw_json_add_string(of, "zone", t->offerings[k].zone);
            nw_json_add_string(of, "capacityType", t->offerings[k].capacity_type);
            nw_json_add_number(of, "price", t->offerings[k].price);
            nw_json_push(offs, of);
        }
        nw_json_push(arr, e);
    }
    cJSON *r = nw_json_new_object();
    nw_json_add_string(r, "region", nw_catalog_region(cat));
    nw_json_add_number(r, "count", (double)nw_catalog_len(cat));
    nw_json_add_item(r, "types", arr);
    print_json(r);
    return NW_EXIT_OK;
}

static int verb_resolve(nw_awsargs_t *a, nw_cloud_t *cloud)
{
    if (a->nnodeclasses == 0) {
        fprintf(stderr, "nodewarden aws resolve: --nodeclass FILE is required\n");
        return NW_EXIT_USAGE;
    }
    int rc = NW_EXIT_OK;
    cJSON *arr = nw_json_new_array();
    for (int i = 0; i < a->nnodeclasses; i++) {
        const nw_nodeclass_resolved_t *r;
        nw_err_t err = {0};
        if (nw_nodeclass_cache_get(nw_aws_cloud_nodeclasses(cloud), a->nodeclasses[i], &r, &err) !=
            NW_OK) {
            cJSON_Delete(arr);
            return fail("resolve", &err, NULL);
        }
        cJSON *o = nw_json_new_object();
        nw_json_add_string(o, "name", r->name);
        nw_json_add_item(
            o, "status",
            nw_nodeclass_status_json(r, a->nodeclasses[i], nw_clock_now(nw_clock_system())));
        nw_json_push(arr, o);
        if (!r->ready)
            rc = NW_EXIT_FAIL;
    }
    print_json(arr);
    return rc;
}

static int verb_launch(nw_awsargs_t *a, nw_cloud_t *cloud)
{
    if (a->nnodeclasses != 1 || !a->nodepool || !a->nodeclaim || !a->types) {
        fprintf(stderr, "nodewarden aws launch: needs --nodeclass FILE (one EC2NodeClass), "
                        "--nodepool, --nodeclaim and --types\n");
        return NW_EXIT_USAGE;
    }
    char types[4096], zones[1024] = "", cts[64] = "";
    const char *tv[256], *zv[16], *cv[2];
    snprintf(types, sizeof types, "%s", a->types);
    if (a->zones)
        snprintf(zones, sizeof zones, "%s", a->zones);
    if (a->capacity_types)
        snprintf(cts, sizeof cts, "%s", a->capacity_types);
    const nw_nodeclass_resolved_t *r;
    nw_err_t err = {0};
    /* --refresh: the types' facts from DescribeInstanceTypes (the compatibility filters) */
    if (a->refresh && nw_aws_cloud_refresh_catalog(cloud, &err) != NW_OK)
        return fail("catalog", &err, NULL);
    if (nw_nodeclass_cache_get(nw_aws_cloud_nodeclasses(cloud), a->nodeclasses[0], &r, &err) !=
        NW_OK)
        return fail("launch", &err, NULL);
    nw_launch_req_t req = {.nodepool = a->nodepool,
                           .nodeclaim = a->nodeclaim,
                           .nodeclass = a->nodeclasses[0],
                           .resolved = r,
                           .types = tv,
                           .ntypes = nw_awsargs_split_commas(types, tv, 256),
                           .zones = zv,
                           .nzones = nw_awsargs_split_commas(zones, zv, 16),
                           .capacity_types = cv,
                           .ncapacity_types = nw_awsargs_split_commas(cts, cv, 2)};
    cJSON *arr = nw_json_new_array();
    for (int i = 0; i < a->repeat; i++) {
        char claim[256];
        if (a->repeat > 1)
            snprintf(claim, sizeof claim, "%s-%d", a->nodeclaim, i + 1);
        else
            snprintf(claim, sizeof claim, "%s", a->nodeclaim);
        if (i > 0 && a->interval_ms > 0)
            sleep_ms(a->interval_ms);
        req.nodeclaim = claim;
        /* one ClientToken per launch of this run: the EC2 client's retries of a CreateFleet
         * that timed out get the first answer back instead of a second instance, while
         * running the command again launches again */
        char token[64];
        snprintf(token, sizeof token, "nw-cli-%llx-%x-%d", (unsigned long long)time(NULL),
                 (unsigned)getpid(), i);
        req.client_token = token;
        nw_launch_result_t res;
        nw_ec2_error_t ae;
        if (nw_aws_cloud_launch(cloud, &req, &res, &ae, &err) != NW_OK) {
            cJSON_Delete(arr);
            return fail("launch", &err, &ae);
        }
        cJSON *o = nw_json_new_object();
        nw_json_add_string(o, "nodeclaim", claim);
        nw_json_add_string(o, "instanceId", res.instance_id);
        nw_json_add_string(o, "providerID", res.provider_id);
        nw_json_add_string(o, "type", res.type);
        nw_json_add_string(o, "zone", res.zone);
        nw_json_add_string(o, "capacityType", res.capacity_type);
        nw_json_add_string(o, "imageId", res.image_id);
        nw_json_add_string(o, "subnetId", res.subnet_id);
        nw_json_add_string(o, "launchTemplate", res.launch_template);
        nw_json_add_number(o, "price", res.price);
        if (res.pg_id[0])
            nw_json_add_string(o, "placementGroupId", res.pg_id);
        if (res.pg_partitioned)
            nw_json_add_string(o, "placementGroupPartition", res.pg_partition);
        nw_json_push(arr, o);
    }
    cJSON *out = nw_json_new_object();
    nw_json_add_item(out, "launched", arr);
    print_json(out);
    return NW_EXIT_OK;
}

static int verb_list(nw_awsargs_t *a, nw_cloud_t *cloud)
{
    nw_ec2_instances_t in = {0};
    nw_err_t err = {0};
    for (int i = 0; i < a->repeat; i++) {
        if (i > 0 && a->interval_ms > 0)
            sleep_ms(a->interval_ms);
        nw_ec2xml_instances_free(&in);
        if (nw_instance_list(nw_aws_cloud_launcher(cloud), &in, &err) != NW_OK)
            return fail("list", &err, NULL);
    }
    cJSON *arr = nw_json_new_array();
    for (size_t i = 0; i < in.n; i++)
        nw_json_push(arr, instance_json(&in.v[i]));
    nw_ec2xml_instances_free(&in);
    cJSON *r = nw_json_new_object();
    nw_json_add_item(r, "instances", arr);
    nw_json_add_number(r, "requests", (double)nw_ec2_request_count(nw_aws_cloud_ec2(cloud)));
    nw_json_add_number(r, "credentialFetches",
                       (double)nw_creds_fetch_count(nw_aws_cloud_creds(cloud)));
    print_json(r);
    return NW_EXIT_OK;
}

static int verb_terminate(nw_awsargs_t *a, nw_cloud_t *cloud)
{
    if (a->npos < 2) {
        fprintf(stderr, "nodewarden aws terminate: give instance ids or providerIDs\n");
        return NW_EXIT_USAGE;
    }
    cJSON *arr = nw_json_new_array();
    for (int i = 1; i < a->npos; i++) {
        nw_err_t err = {0};
        if (cloud->ops->terminate(cloud, a->pos[i], &err) != NW_OK) {
            cJSON_Delete(arr);
            return fail("terminate", &err, NULL);
        }
        nw_json_push(arr, nw_json_new_string(nw_cloud_instance_id(a->pos[i])));
    }
    cJSON *r = nw_json_new_object();
    nw_json_add_item(r, "terminated", arr);
    print_json(r);
    return NW_EXIT_OK;
}

int nw_cmd_aws(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return NW_EXIT_OK;
        }
    nw_awsargs_t a;
    nw_err_t err = {0};
    if (nw_awsargs_parse(&a, argc, argv, &err) != NW_OK) {
        fprintf(stderr, "nodewarden aws: %s\n", err.msg);
        nw_awsargs_free(&a);
        return NW_EXIT_USAGE;
    }
    if (a.npos < 1) {
        usage(stderr);
        nw_awsargs_free(&a);
        return NW_EXIT_USAGE;
    }
    const char *verb = a.pos[0];
    nw_aws_cloud_opts_t o = {.aws = a.aws,
                             .cluster_name = a.cfg.settings.clusterName,
                             .isolated_vpc = a.cfg.settings.isolatedVPC};
    o.ice_ttl_ns = a.cfg.aws.iceCacheTTL_ns;
    o.bootstrap = (nw_launch_bootstrap_t){.endpoint = a.cfg.settings.clusterEndpoint,
                                          .ca_bundle = a.cfg.settings.clusterCABundle,
                                          .cluster_cidr = a.cfg.settings.clusterCIDR,
                                          .vm_overhead = a.cfg.settings.vmMemoryOverheadPercent,
                                          .reserved_enis = (int)a.cfg.settings.reservedENIs,
                                          .default_max_pods =
                                              nw_config_pod_density(a.cfg.settings.podDensity)};
    if (strcmp(verb, "launch") == 0 || strcmp(verb, "list") == 0 ||
        strcmp(verb, "terminate") == 0) {
        if (!o.cluster_name || !*o.cluster_name) {
            fprintf(stderr, "nodewarden aws %s: --settings.clusterName is required\n", verb);
            nw_awsargs_free(&a);
            return NW_EXIT_USAGE;
        }
    }
    if (!o.cluster_name || !*o.cluster_name)
        o.cluster_name = "-";
    nw_cloud_t *cloud = NULL;
    if (nw_aws_cloud_new(&o, &cloud, &err) != NW_OK) {
        fprintf(stderr, "nodewarden aws %s: %s\n", verb, err.msg);
        nw_awsargs_free(&a);
        return NW_EXIT_FAIL;
    }
    /* debugging and test knobs (aws.testing.*): small pages, a short first retry step */
    if (a.cfg.aws.testing.maxResults > 0)
        nw_ec2_set_max_results(nw_aws_cloud_ec2(cloud), (int)a.cfg.aws.testing.maxResults);
    nw_ec2_retry_t r = nw_ec2_get_retry(nw_aws_cloud_ec2(cloud));
    r.base_ms = a.cfg.aws.testing.retryBase_ns / NW_NS_PER_MS;
    nw_ec2_set_retry(nw_aws_cloud_ec2(cloud), &r);
    int rc;
    if (strcmp(verb, "whoami") == 0)
        rc = verb_whoami(&a, cloud);
    else if (strcmp(verb, "zones") == 0)
        rc = verb_zones(cloud);
    else if (strcmp(verb, "catalog") == 0)
        rc = verb_catalog(&a, cloud);
    else if (strcmp(verb, "resolve") == 0)
        rc = verb_resolve(&a, cloud);
    else if (strcmp(verb, "launch") == 0)
        rc = verb_launch(&a, cloud);
    else if (strcmp(verb, "list") == 0)
        rc = verb_list(&a, cloud);
    else if (strcmp(verb, "terminate") == 0)
        rc = verb_terminate(&a, cloud);
    else {
        fprintf(stderr, "nodewarden aws: unknown verb '%s'\n", verb);
        rc = NW_EXIT_USAGE;
    }
    cloud->ops->free(cloud);
    nw_awsargs_free(&a);
    return rc;
}
