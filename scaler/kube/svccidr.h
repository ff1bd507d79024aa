/*
 * scaler/kube/svccidr.h — the cluster's service CIDR, as the cluster publishes it: what
 * AL2023's NodeConfig needs (spec.cluster.cidr), which Karpenter reads from EKS and a
 * self-managed cluster keeps in the API server.
 *
 *   char cidr[64], src[128];
 *   nw_svccidr_discover(kube, cidr, sizeof cidr, src, sizeof src, &err);
 *
 * The sources, in order (the first that answers wins):
 *   1. ServiceCIDR objects (networking.k8s.io/v1, GA in Kubernetes 1.33): the one named
 *      "kubernetes" (the one kube-apiserver makes from --service-cluster-ip-range), else the
 *      first by name; its spec.cidrs[0] (the primary family of a dual-stack cluster);
 *   2. the ConfigMap kube-system/kubeadm-config: data.ClusterConfiguration (YAML)
 *      networking.serviceSubnet; of a dual-stack list "a,b" the first.
 * A source that is not served (404: an API server before 1.33, a cluster kubeadm did not
 * make), empty, or refused (403) is passed over; the error then names each one's answer.
 * settings.clusterCIDR, when set, is used instead: the launcher asks only while it is empty
 * (scaler/aws/launch.h service_cidr).
 *
 * Errors: NW_ENOTFOUND when no source has a CIDR (err says what each answered); a value
 * that is not a CIDR counts as none. Thread: any (the Kubernetes client is thread-safe).
 * Nothing is kept: each call asks again.
 */
#ifndef NW_SCALER_KUBE_SVCCIDR_H
#define NW_SCALER_KUBE_SVCCIDR_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"
#include "scaler/kube/client.h"

/** The service CIDR into out, and where it came from into src ("ServiceCIDR kubernetes",
 * "kube-system/kubeadm-config"); see above. */
NW_MUST_USE nw_rc_t nw_svccidr_discover(nw_kube_client_t *kube, char *out, size_t len, char *src,
                                        size_t srclen, nw_err_t *err);

/** From a ServiceCIDRList: the CIDR of the "kubernetes" item, else of the first by name;
 * its name into src. False when no item has one. */
bool nw_svccidr_from_list(const cJSON *list, char *out, size_t len, char *src, size_t srclen);

/** From the kubeadm-config ConfigMap: networking.serviceSubnet of data.ClusterConfiguration
 * (its first entry). False when it has none; why into why. */
bool nw_svccidr_from_kubeadm(const cJSON *cm, char *out, size_t len, char *why, size_t whylen);

/** True when s looks like an IPv4 or IPv6 CIDR ("10.96.0.0/12", "fd00:10:96::/112"). */
bool nw_svccidr_valid(const char *s);

#endif
