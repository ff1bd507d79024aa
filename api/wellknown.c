/*
 * api/wellknown.c — answers from the one table of Karpenter's well-known labels
 * (NW_WELLKNOWN_LABELS in api/wellknown.h): alias normalisation, membership, the AWS
 * CRDs' allowed karpenter.k8s.aws keys, and Karpenter's IsRestrictedNodeLabel
 * (kubernetes-sigs/karpenter pkg/apis/v1/labels.go).
 */
#include "api/wellknown.h"
#include "common/strs.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define NW_WELLKNOWN_KEY_(key, metric) key,
static const char *const WELL_KNOWN[] = {NW_WELLKNOWN_LABELS(NW_WELLKNOWN_KEY_)};
#define N_WELL_KNOWN (sizeof WELL_KNOWN / sizeof WELL_KNOWN[0])

/* the same keys in strcmp order, for binary search; built once */
static const char *sorted_keys[N_WELL_KNOWN];
static pthread_once_t sorted_once = PTHREAD_ONCE_INIT;

static void sort_keys(void)
{
    memcpy(sorted_keys, WELL_KNOWN, sizeof WELL_KNOWN);
    qsort(sorted_keys, N_WELL_KNOWN, sizeof sorted_keys[0], nw_strs_cmp);
}

static const char *const NORMALIZED[][2] = {
    {"failure-domain.beta.kubernetes.io/zone", NW_LABEL_ZONE},
    {"failure-domain.beta.kubernetes.io/region", NW_LABEL_REGION},
    {"beta.kubernetes.io/arch", NW_LABEL_ARCH},
    {"beta.kubernetes.io/os", NW_LABEL_OS},
    {"beta.kubernetes.io/instance-type", NW_LABEL_INSTANCE_TYPE},
};

const char *nw_wellknown_normalize(const char *key)
{
    for (size_t i = 0; i < sizeof NORMALIZED / sizeof NORMALIZED[0]; i++)
        if (strcmp(key, NORMALIZED[i][0]) == 0)
            return NORMALIZED[i][1];
    return key;
}

const char *nw_wellknown_alias(const char *key)
{
    for (size_t i = 0; i < sizeof NORMALIZED / sizeof NORMALIZED[0]; i++)
        if (strcmp(key, NORMALIZED[i][1]) == 0)
            return NORMALIZED[i][0];
    return NULL;
}

bool nw_wellknown_is_known(const char *key)
{
    pthread_once(&sorted_once, sort_keys);
    return bsearch(&key, sorted_keys, N_WELL_KNOWN, sizeof sorted_keys[0], nw_strs_cmp) != NULL;
}

const char *const *nw_wellknown_labels(size_t *n)
{
    if (n)
        *n = N_WELL_KNOWN;
    return WELL_KNOWN;
}

bool nw_wellknown_aws_allowed(const char *key)
{
    static const char aws[] = "karpenter.k8s.aws/";
    if (strcmp(key, NW_LABEL_NODECLASS) == 0)
        return true;
    return strncmp(key, aws, sizeof aws - 1) == 0 && nw_wellknown_is_known(key);
}

bool nw_wellknown_is_restricted_node_label(const char *key)
{
    static const char *const restricted_domains[] = {"kubernetes.io", "k8s.io", "karpenter.sh",
                                                     "karpenter.k8s.aws"};
    static const char *const exceptions[] = {"kops.k8s.io", "node.kubernetes.io",
                                             "node-restriction.kubernetes.io"};
    if (nw_wellknown_is_known(key))
        return true;
    const char *slash = strchr(key, '/');
    size_t dlen = slash ? (size_t)(slash - key) : 0; /* GetLabelDomain: "" without '/' */
    for (size_t i = 0; i < 3; i++)
        if (nw_strs_has_suffix(key, dlen, exceptions[i]))
            return false;
    for (size_t i = 0; i < 4; i++)
        if (nw_strs_has_suffix(key, dlen, restricted_domains[i]))
            return true;
    return strcmp(key, "kubernetes.io/hostname") == 0;
}
