/*
 * scaler/disrupt/drift.c — the drift rules (see drift.h).
 */
#include "common/json.h"
#include "scaler/disrupt/drift.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "api/labels.h"
#include "api/requirements.h"
#include "common/clock.h"
#include "api/drifthash.h"

#define INSTANCE_TYPE_CHECK_AGE_NS (3600 * NW_NS_PER_SEC)
#define MAX_TYPE_LABELS 48

static const char *const NAMES[NW_DRIFT_REASONS] = {
    "",
    "NodePoolDrifted",
    "RequirementsDrifted",
    "InstanceTypeNotFound",
    "NodeClassDrift",
    "AMIDrift",
    "SecurityGroupDrift",
    "SubnetDrift",
    "PlacementGroupDrift",
};

const char *nw_drift_reason_str(nw_drift_reason_t r)
{
    return (int)r >= 0 && r < NW_DRIFT_REASONS ? NAMES[r] : "";
}

nw_drift_reason_t nw_drift_reason_parse(const char *s)
{
    for (int i = 1; s && i < NW_DRIFT_REASONS; i++)
        if (strcmp(s, NAMES[i]) == 0)
            return (nw_drift_reason_t)i;
    return NW_DRIFT_NONE;
}

static void say(char *detail, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *detail, size_t n, const char *fmt, ...)
{
    if (!detail || !n)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, n, fmt, ap);
    va_end(ap);
}

static const char *annotation(const nw_node_claim_t *nc, const char *key)
{
    return nw_node_meta_annotation(&nc->m, key);
}

static const char *label(const nw_node_claim_t *nc, const char *key)
{
    return nw_node_meta_label(&nc->m, key);
}

/* Karpenter's areStaticFieldsDrifted: both hash annotations on the NodeClaim, the same
 * version as ours; the pool's hash is computed (it is what its annotation holds or is
 * about to hold). */
static bool hash_drifted(const nw_node_claim_t *nc, const char *hash_key, const char *version_key,
                         const char *version, const char *current)
{
    const char *h = annotation(nc, hash_key), *v = annotation(nc, version_key);
    if (!h || !v || !current || !*current)
        return false;
    if (strcmp(v, version) != 0)
        return false;
    return strcmp(h, current) != 0;
}

/* The NodeClaim's labels, completed from the catalog (type and offering labels). */
static NW_MUST_USE nw_rc_t claim_labels(const nw_drift_in_t *in, nw_labels_t *out)
{
    nw_labels_init(out);
    const nw_node_meta_t *m = &in->nodeclaim->m;
    for (size_t i = 0; i < m->nlabels; i++)
        if (nw_labels_set(out, m->labels[i].key, m->labels[i].value) != NW_OK)
            return NW_ENOMEM;
    if (!in->catalog)
        return NW_OK;
    char keys[MAX_TYPE_LABELS][64], vals[MAX_TYPE_LABELS][64];
    int n = nw_driftcat__type_labels(
        in->catalog, label(in->nodeclaim, "node.kubernetes.io/instance-type"),
        label(in->nodeclaim, "topology.kubernetes.io/zone"),
        label(in->nodeclaim, "karpenter.sh/capacity-type"), keys, vals, MAX_TYPE_LABELS);
    for (int i = 0; i < n; i++)
        if (!nw_labels_get(out, keys[i]) && nw_labels_set(out, keys[i], vals[i]) != NW_OK)
            return NW_ENOMEM;
    return NW_OK;
}

/* Karpenter's areRequirementsDrifted: NewLabelRequirements(labels).Compatible(pool reqs). */
static bool requirements_drifted(const nw_drift_in_t *in, char *detail, size_t n)
{
    const cJSON *arr =
        nw_json_get(nw_json_get(nw_json_get(nw_json_get(in->nodepool, "spec"), "template"), "spec"),
                    "requirements");
    nw_reqs_t pool, have;
    nw_labels_t labels;
    bool drifted = false;
    if (nw_requirements_json_parse_list(arr, "spec.template.spec.requirements",
                                        NW_REQS_PARSE_KARPENTER, &pool, NULL) != NW_OK)
        return false; /* an invalid pool is reported by its ValidationSucceeded condition */
    nw_requirements_init(&have);
    if (claim_labels(in, &labels) == NW_OK &&
        nw_requirements_from_labels(&labels, &have) == NW_OK) {
        nw_reqs_conflict_t cf;
        memset(&cf, 0, sizeof cf);
        if (!nw_requirements_compatible(&have, &pool, 0, &cf)) {
            drifted = true;
            say(detail, n,
                "the NodeClaim's labels no longer satisfy the NodePool's requirements: %s", cf.msg);
        }
    }
    nw_labels_cleanup(&labels);
    nw_requirements_cleanup(&have);
    nw_requirements_cleanup(&pool);
    return drifted;
}

static bool instance_type_gone(const nw_drift_in_t *in, char *detail, size_t n)
{
    if (!in->catalog)
        return false;
    int64_t created = in->nodeclaim->m.created; /* 0: absent or not a time */
    if (!created || in->now_ns - created < INSTANCE_TYPE_CHECK_AGE_NS)
        return false;
    const char *type = label(in->nodeclaim, "node.kubernetes.io/instance-type");
    if (!type || !*type)
        return false;
    const char *zone = label(in->nodeclaim, "topology.kubernetes.io/zone");
    const char *cap = label(in->nodeclaim, "karpenter.sh/capacity-type");
    int r = nw_driftcat__offering_exists(in->catalog, type, zone, cap);
    if (r < 0) {
        say(detail, n, "instance type %s is no longer offered", type);
        return true;
    }
    if (r == 0) {
        say(detail, n, "instance type %s has no offering in zone %s for capacity type %s", type,
            zone ? zone : "(any)", cap ? cap : "(any)");
        return true;
    }
    return false;
}

static bool in_set(const char *const *set, size_t n, const char *v)
{
    for (size_t i = 0; i < n; i++)
        if (set[i] && strcmp(set[i], v) == 0)
            return true;
    return false;
}

static void join(char *buf, size_t n, const char *const *v, size_t k)
{
    size_t off = 0;
    buf[0] = 0;
    for (size_t i = 0; i < k && off < n; i++) {
        int w = snprintf(buf + off, n - off, "%s%s", i ? " " : "", v[i] ? v[i] : "");
        if (w < 0)
            break;
        off += (size_t)w;
    }
}

static bool ami_drifted(const nw_drift_in_t *in, char *detail, size_t n)
{
    const nw_drift_class_t *r = in->resolved;
    const char *image = in->instance && in->instance->image_id && *in->instance->image_id
                            ? in->instance->image_id
                            : in->nodeclaim->image_id;
    if (!r || !r->namis || !image || !*image)
        return false; /* Karpenter: "no amis exist given constraints" — an error, no verdict */
    const char *arch = nw_driftcat__type_arch(
        in->catalog, label(in->nodeclaim, "node.kubernetes.io/instance-type"));
    if (!arch)
        arch = label(in->nodeclaim, "kubernetes.io/arch");
    const char *fit[64];
    size_t nfit = 0;
    for (size_t i = 0; i < r->namis && nfit < 64; i++)
        if (!arch || !r->ami_arch || !r->ami_arch[i] || !*r->ami_arch[i] ||
            strcmp(r->ami_arch[i], arch) == 0)
            fit[nfit++] = r->ami_ids[i];
    if (!nfit)
        return false; /* no AMI fits the instance type: an error in Karpenter, no verdict */
    if (in_set(fit, nfit, image))
        return false;
    char list[512];
    join(list, sizeof list, fit, nfit);
    say(detail, n, "instance AMI %s is not among the EC2NodeClass's AMIs [%s]", image, list);
    return true;
}

static bool sg_drifted(const nw_drift_in_t *in, char *detail, size_t n)
{
    const nw_drift_class_t *r = in->resolved;
    const nw_drift_instance_t *i = in->instance;
    if (!r || !r->nsgs || !i || !i->nsg)
        return false;
    bool same = true;
    for (size_t k = 0; k < i->nsg && same; k++)
        same = in_set(r->sg_ids, r->nsgs, i->sg_ids[k]);
    for (size_t k = 0; k < r->nsgs && same; k++)
        same = in_set(i->sg_ids, i->nsg, r->sg_ids[k]);
    if (same)
        return false;
    char a[512], b[512];
    join(a, sizeof a, i->sg_ids, i->nsg);
    join(b, sizeof b, r->sg_ids, r->nsgs);
    say(detail, n, "instance security groups [%s] differ from the EC2NodeClass's [%s]", a, b);
    return true;
}

static bool subnet_drifted(const nw_drift_in_t *in, char *detail, size_t n)
{
    const nw_drift_class_t *r = in->resolved;
    const nw_drift_instance_t *i = in->instance;
    if (!r || !r->nsubnets || !i || !i->subnet_id || !*i->subnet_id)
        return false;
    if (in_set(r->subnet_ids, r->nsubnets, i->subnet_id))
        return false;
    char b[512];
    join(b, sizeof b, r->subnet_ids, r->nsubnets);
    say(detail, n, "instance subnet %s is not among the EC2NodeClass's subnets [%s]", i->subnet_id,
        b);
    return true;
}

/* drift.go isPlacementGroupDrifted: the label against the class's group, both "" if none */
static bool pg_drifted(const nw_drift_in_t *in, char *detail, size_t n)
{
    const nw_drift_class_t *r = in->resolved;
    if (!r || !r->placement_group)
        return false;
    const char *have = label(in->nodeclaim, "karpenter.k8s.aws/placement-group-id");
    if (!have)
        have = "";
    if (strcmp(have, r->placement_group) == 0)
        return false;
    say(detail, n, "the NodeClaim's placement group %s is not the EC2NodeClass's %s",
        *have ? have : "(none)", *r->placement_group ? r->placement_group : "(none)");
    return true;
}

nw_drift_reason_t nw_drift_check(const nw_drift_in_t *in, char *detail, size_t n)
{
    say(detail, n, "%s", "");
    if (!in || !in->nodeclaim || !in->nodepool)
        return NW_DRIFT_NONE;
    char h[NW_HASH_LEN];
    if (nw_drifthash_nodepool(in->nodepool, h, NULL) == NW_OK &&
        hash_drifted(in->nodeclaim, NW_ANN_NODEPOOL_HASH, NW_ANN_NODEPOOL_HASH_VERSION,
                     NW_NODEPOOL_HASH_VERSION, h)) {
        say(detail, n, "the NodePool's template changed (nodepool-hash %s, the NodeClaim has %s)",
            h, annotation(in->nodeclaim, NW_ANN_NODEPOOL_HASH));
        return NW_DRIFT_NODEPOOL;
    }
    if (requirements_drifted(in, detail, n))
        return NW_DRIFT_REQUIREMENTS;
    if (instance_type_gone(in, detail, n))
        return NW_DRIFT_INSTANCE_TYPE;
    if (!in->nodeclass)
        return NW_DRIFT_NONE;
    if (nw_drifthash_ec2nodeclass(in->nodeclass, in->ca_bundle, h, NULL) == NW_OK &&
        hash_drifted(in->nodeclaim, NW_ANN_NODECLASS_HASH, NW_ANN_NODECLASS_HASH_VERSION,
                     NW_NODECLASS_HASH_VERSION, h)) {
        say(detail, n, "the EC2NodeClass changed (ec2nodeclass-hash %s, the NodeClaim has %s)", h,
            annotation(in->nodeclaim, NW_ANN_NODECLASS_HASH));
        return NW_DRIFT_NODECLASS;
    }
    if (ami_drifted(in, detail, n))
        return NW_DRIFT_AMI;
    if (sg_drifted(in, detail, n))
        return NW_DRIFT_SECURITY_GROUP;
    if (subnet_drifted(in, detail, n))
        return NW_DRIFT_SUBNET;
    if (pg_drifted(in, detail, n))
        return NW_DRIFT_PLACEMENT_GROUP;
    return NW_DRIFT_NONE;
}
