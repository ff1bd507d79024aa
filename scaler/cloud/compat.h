/*
 * scaler/cloud/compat.h — can an EC2NodeClass launch an instance type at all
 * (aws/karpenter-provider-aws pkg/providers/instancetype/compatibility
 * IsCompatibleWithNodeClass, applied to every type of a class before scheduling):
 *
 *   spec.networkInterfaces   the type has network cards, ENA, a card at each interface's
 *                            networkCardIndex with more interfaces than its deviceIndex,
 *                            and at least as many EFA interfaces as efa-only entries
 *   amiFamily AL2023         not an a1 type
 *   cpuOptions.nestedVirtualization: enabled
 *                            processorInfo.supportedFeatures has nested-virtualization
 *   placementGroupSelector   the group's strategy is in placementGroupInfo.supportedStrategies
 *   connectionTracking       a Nitro type
 *
 * The facts are DescribeInstanceTypes' (nw_itype_t features_known). A type of the embedded
 * catalog (no such facts) is judged on what it has: the EFA count, card 0's interfaces, the
 * name and the hypervisor; the card layout, ENA, nested virtualization and placement
 * strategies are then not judged.
 *
 * Pure: no I/O. Thread: any.
 */
#ifndef NW_SCALER_CLOUD_COMPAT_H
#define NW_SCALER_CLOUD_COMPAT_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "scaler/cloud/catalog.h"

/** True when nodeclass can launch t; false with why (nullable) saying which check refused it.
 * pg_strategy: the strategy of the class's resolved placement group ("cluster",
 * "partition", "spread"), NULL/"" when it has none or it is not known. */
bool nw_compat_class_compatible(const nw_itype_t *t, const cJSON *nodeclass,
                                const char *pg_strategy, char *why, size_t whylen);

#endif
