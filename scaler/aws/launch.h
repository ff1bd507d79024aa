/*
 * scaler/aws/launch.h — launch, find and terminate instances for NodeClaims
 * (aws/karpenter-provider-aws pkg/providers/instance/instance.go, instance/filter/filter.go,
 * pkg/providers/launchtemplate/launchtemplate.go, pkg/cache/unavailableofferings.go).
 *
 * nw_launch turns one NodeClaim-like request into:
 *   - the candidate offerings: requested types × allowed zones that have a
 *     resolved subnet × allowed capacity types, available per catalog + ICE
 *     cache; exotic types (metal, GPU, accelerators) dropped while a plain one
 *     remains (unless min_values); spot offerings dearer than the cheapest
 *     on-demand one dropped when both are allowed; one capacity type per call
 *     (spot when allowed and available, else on-demand); at most 60 types,
 *     cheapest first;
 *   - one launch template per AMI/architecture (and, for AL2, AL2023 and
 *     Bottlerocket, per max-pods value of the types, and per EFA count when the claim
 *     asks for EFA, as Karpenter's resolver groups them), named "karpenter.k8s.aws/<hash>" (found
 * by name, else created): ImageId, UserData (Custom and Windows: spec.userData passed through
 * unchanged; AL2, AL2023, Bottlerocket: the bootstrap scaler/aws/userdata.h renders with the
 *     class's kubelet settings, the NodeClaim's labels and taints and the user's part
 *     merged; with req.bootstrap_token on a family nodewarden does not generate for, the
 *     kubeadm join userdata.h renders, grouped by max pods as the generated ones are;
 *     base64-encoded),
 *     IamInstanceProfile.Name (spec.instanceProfile, or spec.role used as the
 *     instance-profile name), NetworkInterfaces (the spec's networkInterfaces, else one
 *     EFA interface per card when the claim asks for vpc.amazonaws.com/efa, else the
 *     primary one; each with the security groups, associatePublicIPAddress, ipPrefixCount,
 *     connectionTracking), BlockDeviceMappings (spec, else the AMI family's defaults,
 *     scaler/cloud/kubelet.h nw_kubelet_ami_default_bdms), CpuOptions, MetadataOptions
 *     (defaults: endpoint enabled, IPv6 disabled, hop limit 1, tokens
 *     required), Monitoring, tags;
 *   - CreateFleet Type=instant, TotalTargetCapacity 1, lowest-price
 *     (on-demand) or price-capacity-optimized (spot), overrides over every
 *     candidate type × zone (subnet with the most free IPs per zone), tags on
 *     instance, volume and fleet.
 * Per-override ICE errors mark the ICE cache; when no instance comes back and
 * every error is capacity-class the result is NW_EAWS with class
 * NW_EC2_CAPACITY. A kubeadm bootstrap's templates carry the NodeClaim's token, so they
 * serve that one launch: nw_fleet deletes them once CreateFleet has launched the
 * instance (the instance keeps its userData). A missing template (deleted behind our back) is
 * recreated and the fleet retried once.
 *
 * Tags: spec.tags, then kubernetes.io/cluster/<cluster>=owned,
 * karpenter.sh/nodepool, karpenter.k8s.aws/ec2nodeclass,
 * eks:eks-cluster-name (these win); instances and volumes also get
 * karpenter.sh/nodeclaim and Name=<nodeclaim>.
 *
 * Idempotency: req.client_token (EC2's ClientToken, <= 64 characters) goes on CreateFleet
 * (".1" appended on the retry after a missing template: the first CreateFleet answered, so
 * its token is spent); CreateLaunchTemplate carries "nw-lt-<template hash>-<n>", n counting
 * the templates forgotten as missing, so a recreate is a new request. A CreateFleet that
 * answered without an instance sets result.token_spent; IdempotentParameterMismatch sets
 * result.token_conflict.
 *
 * A launch is three steps so that the slow one holds no lock (scaler/aws/cloud.c holds
 * its lock around the first and the last): nw_fleet_plan (candidates, launch
 * templates, the CreateFleet request; reads the resolution, the catalog and the template
 * cache, and may call DescribeLaunchTemplates/CreateLaunchTemplate), nw_fleet
 * (the CreateFleet call; touches nothing but the plan), nw_fleet_settle (ICE marks,
 * template cache, the result). nw_launch runs the three in a row.
 *
 * Ownership: nw_launch_new/nw_launch_free; it borrows ec2, catalog, ice
 * and clock, which must outlive it. A plan is owned by its caller (nw_fleet_plan_free)
 * and points into nothing but the catalog.
 * Thread: nw_fleet_plan, _settle, _launch, _terminate's callers serialise (one thread
 * or the cloud's lock); nw_fleet, _terminate and _list may run on any thread
 * at the same time (they touch only the EC2 client, which is thread-safe).
 *
 * Files: launch.c (nw_launch_new, _set_bootstrap, _free, _launch); fleet.c (_plan, _fleet,
 * _settle, _plan_free: one CreateFleet try); launchtemplate.c (_userdata, _template_name,
 * _template_params, _delete_templates: tags, launch templates and their userData);
 * offerings.c (the candidate offerings and subnets); capreservation.c (_cr_available:
 * capacity reservations); instance.c (_find_partition, _terminate, _list). What they share
 * is in launch_int.h.
 */
#ifndef NW_SCALER_AWS_LAUNCH_H
#define NW_SCALER_AWS_LAUNCH_H

#include <cjson/cJSON.h>

#include "common/clock.h"
#include "common/err.h"
#include "scaler/cloud/catalog.h"
#include "scaler/aws/ec2.h"
#include "scaler/cloud/ice.h"
#include "scaler/aws/nodeclass.h"
#include "scaler/cloud/cloud.h"

#define NW_LAUNCH_MAX_TYPES NW_CLOUD_MAX_LAUNCH_TYPES
#define NW_LAUNCH_MAX_CRS 64 /* capacity reservations whose availability is followed */

typedef struct {
    const char *nodepool;                    /* karpenter.sh/nodepool */
    const char *nodeclaim;                   /* karpenter.sh/nodeclaim and Name */
    const cJSON *nodeclass;                  /* the EC2NodeClass object */
    const nw_nodeclass_resolved_t *resolved; /* its resolution */
    const char *const *types;                /* compatible instance types */
    int ntypes;
    const char *const *zones; /* allowed zones; NULL/0 = any */
    int nzones;
    const char *const *capacity_types; /* "reserved", "spot", "on-demand"; NULL/0 = on-demand */
    int ncapacity_types;
    int min_values;           /* the requirements carry minValues: keep exotic types */
    const char *client_token; /* CreateFleet's ClientToken; NULL/"": none */
    /* karpenter.k8s.aws/capacity-reservation-id In [...] of the claim: only these; NULL/0 any */
    const char *const *cr_ids;
    int ncr_ids;
    const cJSON *claim; /* the NodeClaim (labels, taints for a generated bootstrap); NULL ok */
    const char *bootstrap_token; /* kubeadm token for nodewarden's bootstrap; NULL/"": none */
} nw_launch_req_t;

/* What a generated bootstrap needs from the settings (scaler/aws/userdata.h). */
typedef struct {
    const char *endpoint;  /* settings.clusterEndpoint */
    const char *ca_bundle; /* settings.clusterCABundle */
    /* settings.clusterCIDR (AL2023): set, it wins; empty, service_cidr is asked */
    const char *cluster_cidr;
    double vm_overhead;       /* settings.vmMemoryOverheadPercent (<= 0: default) */
    int reserved_enis;        /* settings.reservedENIs */
    int64_t default_max_pods; /* settings.podDensity (0: ENI-limited) */
    /* the cluster's Kubernetes version ("1.31"): the kubeadm bootstrap writes a v1beta4
     * JoinConfiguration from 1.31 on; NULL or a failure: v1beta3 */
    nw_rc_t (*k8s_version)(void *ud, char *out, size_t len, nw_err_t *err);
    void *k8s_version_ud;
    /* the cluster's DNS Service address (kube-system/kube-dns spec.clusterIP, Karpenter's
     * KubeDNSIP): the default clusterDNS of generated bootstraps and the cluster's IP
     * family (an IPv6 address: IPv6 network interfaces, --ip-family ipv6, node-ip "::").
     * NULL: unknown (IPv4). Asked at most once a minute until it answers. */
    nw_rc_t (*kube_dns)(void *ud, char *out, size_t len, nw_err_t *err);
    void *kube_dns_ud;
    /* the cluster's service CIDR as the cluster publishes it (scaler/kube/svccidr.h: the
     * ServiceCIDR objects, then kube-system/kubeadm-config), into out and its source into
     * src; NW_ENOTFOUND when it publishes none. Asked only while settings.clusterCIDR is
     * empty: every 10 s while it has none, every 10 min once it has. NULL: only the
     * setting. */
    nw_rc_t (*service_cidr)(void *ud, char *out, size_t len, char *src, size_t srclen,
                            nw_err_t *err);
    void *service_cidr_ud;
} nw_launch_bootstrap_t;

typedef struct {
    char instance_id[64];
    char type[64];
    char zone[64];
    char zone_id[64];
    char subnet_id[64];
    char image_id[64];
    char capacity_type[16]; /* "spot", "on-demand", "reserved" */
    /* reserved: the capacity reservation, its type (default, capacity-block) and whether it
     * is interruptible (karpenter.k8s.aws/capacity-reservation-{id,type,interruptible}) */
    char cr_id[64];
    char cr_type[24];
    int cr_interruptible;
    char provider_id[192]; /* aws:///<zone>/<instance-id> */
    char launch_template[256];
    double price;
    /* on failure: the offering CreateFleet reported first, "" when none */
    char failed_type[64];
    char failed_zone[64];
    char failed_capacity_type[32];
    int token_spent;    /* CreateFleet answered without an instance: the token is used up */
    int token_conflict; /* IdempotentParameterMismatch */
    /* the class's placement group (karpenter.k8s.aws/placement-group-id), "" = none; for a
     * partition group (partitioned) the partition the launch asked for or EC2 chose
     * (karpenter.k8s.aws/placement-group-partition), "" while unknown */
    char pg_id[64];
    char pg_partition[16];
    int pg_partitioned;
} nw_launch_result_t;

typedef struct nw_launch nw_launch_t;

nw_launch_t *nw_launch_new(nw_ec2_t *ec2, const nw_catalog_t *catalog, nw_ice_t *ice,
                           const nw_clock_t *clock, const char *cluster_name);
void nw_launch_free(nw_launch_t *l);
/** The settings a generated bootstrap uses (copied). */
NW_MUST_USE nw_rc_t nw_launch_set_bootstrap(nw_launch_t *l, const nw_launch_bootstrap_t *b);

/** The service CIDR a generated AL2023 bootstrap gets: settings.clusterCIDR when set, else the
 * cluster's (service_cidr above, asked again when due); "" when neither. Its source into src
 * ("settings.clusterCIDR", "ServiceCIDR kubernetes", "kube-system/kubeadm-config", or why
 * there is none). Under the callers' lock, as a launch plan. */
void nw_launchtemplate_cluster_cidr(nw_launch_t *l, char *out, size_t len, char *src,
                                    size_t srclen);

/** Launch one instance. ae (nullable) gets the EC2 error class on failure;
 * NW_EINVAL when the class is not ready or nothing is launchable (the message
 * says which filter emptied the list). */
NW_MUST_USE nw_rc_t nw_launch(nw_launch_t *l, const nw_launch_req_t *req, nw_launch_result_t *out,
                              nw_ec2_error_t *ae, nw_err_t *err);

typedef struct nw_launch_plan nw_launch_plan_t;

/** Step 1 of a launch: the plan of try `attempt` (0, or 1 after a missing template) of req;
 * fails as nw_launch does before its CreateFleet. req->resolved is read only here. */
NW_MUST_USE nw_rc_t nw_fleet_plan(nw_launch_t *l, const nw_launch_req_t *req, int attempt,
                                  nw_launch_plan_t **out, nw_ec2_error_t *ae, nw_err_t *err);
/** Step 2: the plan's CreateFleet (with the EC2 client's retries); any thread, no lock. */
NW_MUST_USE nw_rc_t nw_fleet(nw_launch_t *l, nw_launch_plan_t *pl, nw_ec2_error_t *ae);
/** Step 3: the outcome of step 2 into out (which the caller zeroed before step 1);
 * *again = 1 when the templates were missing and try 1 should be planned. */
NW_MUST_USE nw_rc_t nw_fleet_settle(nw_launch_t *l, nw_launch_plan_t *pl, nw_launch_result_t *out,
                                    int *again, nw_ec2_error_t *ae, nw_err_t *err);
/** A launch into a partition placement group that did not ask for a partition: the
 * partition EC2 chose, from DescribeInstances (Karpenter's placement-group registration
 * hook); out->pg_partition stays "" when it cannot be read. Any thread. */
void nw_instance_find_partition(nw_launch_t *l, nw_launch_result_t *out);
void nw_fleet_plan_free(nw_launch_plan_t *pl);

/** Delete every launch template of this cluster tagged with the node class
 * (launchtemplate.go DeleteAll: tag:eks:eks-cluster-name and
 * tag:karpenter.k8s.aws/ec2nodeclass), and forget them; *deleted counts them (nullable). */
NW_MUST_USE nw_rc_t nw_launchtemplate_delete_class(nw_launch_t *l, const char *nodeclass,
                                                   int *deleted, nw_err_t *err);

/** The available count the launcher follows for reservation id when it is at least as new as
 * a resolution at `synced` (monotonic ns) that found `resolved`; else `resolved`. */
int64_t nw_capreservation_available(const nw_launch_t *l, const char *id, int64_t resolved,
                                    int64_t synced);

/** Terminate by instance id or providerID; idempotent (gone = done). */
NW_MUST_USE nw_rc_t nw_instance_terminate(nw_launch_t *l, const char *id_or_provider_id,
                                          nw_err_t *err);

/** Instances of this cluster (instance.go List's filters: tag-keys karpenter.sh/nodepool and
 * karpenter.k8s.aws/ec2nodeclass, tag:eks:eks-cluster-name; states pending..stopped). */
NW_MUST_USE nw_rc_t nw_instance_list(nw_launch_t *l, nw_ec2_instances_t *out, nw_err_t *err);

/** The userData a launch template of this request carries for capacity type ct and types
 * of `pods` max pods (plain text, malloc'd; NULL without userData): scaler/aws/userdata.h.
 * NW_EINVAL with err->path naming the field when it cannot be rendered. */
NW_MUST_USE nw_rc_t nw_launchtemplate_userdata(nw_launch_t *l, const nw_launch_req_t *req,
                                               const char *ct, int64_t pods, char **out,
                                               nw_err_t *err);

/** The launch template name this request would use for an AMI and its userData (as
 * nw_launchtemplate_userdata renders it; for tests). */
void nw_launchtemplate_name(nw_launch_t *l, const nw_launch_req_t *req, const char *ami_id,
                            const char *capacity_type, const char *userdata, char *out, size_t len);

/** Add to p (initialised "CreateLaunchTemplate") the request of this request's template for
 * AMI ami_id, capacity type ct, types of `pods` max pods and `efa` EFA interfaces (0: the
 * claim asks for none): what ensuring it would send (for tests). */
NW_MUST_USE nw_rc_t nw_launchtemplate_params(nw_launch_t *l, const nw_launch_req_t *req,
                                             const char *ami_id, const char *ct, int64_t pods,
                                             int efa, nw_ec2_params_t *p, nw_err_t *err);

#endif
