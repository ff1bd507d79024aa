/*
 * scaler/aws/userdata.h — the bootstrap userData Karpenter's AWS provider generates for
 * the AMI families it knows, with the EC2NodeClass's kubelet settings, the NodeClaim's
 * labels and taints and the user's own userData merged in
 * (aws/karpenter-provider-aws pkg/providers/amifamily/bootstrap: eksbootstrap.go for AL2,
 * nodeadm.go + mime/mime.go for AL2023, bottlerocket.go + bottlerocketsettings.go for
 * Bottlerocket; custom.go: Custom passes the user's userData through).
 *
 *  - AL2: MIME multipart (boundary "//"): the user's parts first (a plain script becomes
 *    a text/x-shellscript part), then `/etc/eks/bootstrap.sh` with --apiserver-endpoint,
 *    --b64-cluster-ca, --dns-cluster-ip, --use-max-pods false and --kubelet-extra-args
 *    (--node-labels, --register-with-taints, --max-pods, --pods-per-core,
 *    --system-reserved, --kube-reserved, --eviction-hard/-soft/-soft-grace-period, ...);
 *  - AL2023: MIME multipart: the user's parts (a plain YAML document is a NodeConfig part,
 *    anything else a shell script), then a NodeConfig (node.eks.aws/v1alpha1) whose
 *    spec.kubelet.config carries the kubelet settings, maxPods and registerWithTaints and
 *    whose flags carry --node-labels; the cluster CIDR is required there;
 *  - Bottlerocket: the user's TOML with settings.kubernetes overwritten (cluster name,
 *    API server, CA, node-labels merged, node-taints replaced, max-pods, reserved and
 *    eviction maps, ...); the TOML read is tables and one-line `key = value` pairs.
 * Map-valued flags are written in key order (Karpenter writes Go's map order).
 *
 * With o->kubeadm_token set (nodewarden's own bootstrap, docs/node-bootstrap.md): MIME
 * multipart, the user's parts first, then a shell script that reads the zone and instance
 * id from IMDSv2, writes a kubeadm JoinConfiguration (kubeadm.k8s.io/v1beta3, or v1beta4
 * with o->kubeadm_v1beta4, where kubeletExtraArgs is a list of {name, value}:
 * discovery.bootstrapToken with the API server's host:port, the token and the CA's
 * "sha256:<hash>" pin; nodeRegistration.kubeletExtraArgs provider-id and node-labels,
 * nodeRegistration.taints; patches.directory) and a kubeletconfiguration+merge.yaml patch
 * (the class's spec.kubelet as KubeletConfiguration fields, maxPods always), runs
 * `kubeadm join --config` and removes the files holding the token.
 *
 * Pure: no I/O. Ownership: *out is malloc'd. Thread: any.
 *
 * Files: userdata.c (nw_userdata_render, nw_userdata_label_restricted); one per family,
 * userdata_al2.c, userdata_al2023.c, userdata_bottlerocket.c and userdata_kubeadm.c
 * (nw_userdata_kubeadm_ca_pin); userdata_mime.c (the user's MIME parts) and userdata_common.c (the
 * output buffer, the kubelet settings) serve them. What they share is in userdata_int.h.
 */
#ifndef NW_SCALER_AWS_USERDATA_H
#define NW_SCALER_AWS_USERDATA_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "scaler/cloud/catalog.h"

typedef struct {
    const char *key, *value; /* value "" = none */
    const char *effect;
} nw_ud_taint_t;

typedef struct {
    const char *key, *value;
} nw_ud_label_t;

typedef struct {
    nw_ami_family_t family;
    const char *cluster_name, *endpoint; /* settings.clusterName, clusterEndpoint */
    const char *ca_bundle;               /* settings.clusterCABundle (base64 PEM), "" = none */
    const char *cluster_cidr;            /* the service CIDR (AL2023's NodeConfig) */
    const cJSON *kubelet;                /* the EC2NodeClass's spec.kubelet, NULL = none */
    int64_t max_pods;            /* the launch's types' pods, used without kubelet.maxPods */
    const nw_ud_label_t *labels; /* the NodeClaim's labels (restricted ones dropped here) */
    int nlabels;
    const nw_ud_taint_t *taints; /* taints + startupTaints + karpenter.sh/unregistered */
    int ntaints;
    const char *custom; /* spec.userData, NULL = none */
    int raid0;          /* spec.instanceStorePolicy RAID0 */
    /* the kubeadm bootstrap (EC2NodeClass annotation nodewarden.io/bootstrap: kubeadm, any
     * family nodewarden does not generate for): the token "<id>.<secret>" minted for this
     * NodeClaim; NULL = none */
    const char *kubeadm_token;
    /* the JoinConfiguration's API: kubeadm.k8s.io/v1beta4 (kubeadm 1.31 and later) when set,
     * else v1beta3 (kubeadm 1.22 and later; still read by 1.31+) */
    int kubeadm_v1beta4;
    /* the kube-dns Service's ClusterIP (NULL = unknown): clusterDNS when spec.kubelet has
     * none (Karpenter's defaultClusterDNS); an IPv6 clusterDNS makes the node IPv6
     * (AL2 --ip-family ipv6, kubeadm node-ip "::") */
    const char *kube_dns;
} nw_ud_opts_t;

/** Render the userData (plain text; the caller base64-encodes it). Custom and Windows:
 * the user's userData unchanged (*out NULL when there is none). NW_EINVAL with err->path
 * naming the field: "spec.userData" when the user's part cannot be merged (unreadable MIME,
 * TOML nodewarden does not read), "settings.clusterEndpoint" / "settings.clusterCIDR" when
 * the family needs them and they are empty, "spec.kubelet..." for a value of the wrong
 * type. */
NW_MUST_USE nw_rc_t nw_userdata_render(const nw_ud_opts_t *o, char **out, nw_err_t *err);

/** The kubeadm discovery pin of a CA bundle (base64 of PEM, settings.clusterCABundle):
 * "sha256:" + hex SHA-256 of the first certificate's DER SubjectPublicKeyInfo (kubeadm's
 * pubkeypin.Hash), into out (>= 72 bytes). NW_EINVAL naming settings.clusterCABundle when
 * it is empty or holds no certificate. */
NW_MUST_USE nw_rc_t nw_userdata_kubeadm_ca_pin(const char *ca_bundle_b64, char *out, size_t len,
                                               nw_err_t *err);

/** True when a label may not be set by a kubelet (its domain is or ends in kubernetes.io,
 * k8s.io or node-restriction.kubernetes.io: Karpenter's RejectForbiddenLabels). */
bool nw_userdata_label_restricted(const char *key);

#endif
