/*
 * scaler/nodeclaim/bootstrap.h — nodewarden's kubeadm bootstrap tokens: one per NodeClaim
 * of an EC2NodeClass annotated nodewarden.io/bootstrap: kubeadm (docs/node-bootstrap.md).
 *
 * The token is a kubeadm bootstrap token Secret (kubernetes/kubernetes
 * staging/src/k8s.io/cluster-bootstrap/token/api/types.go; kubeadm's
 * cmd/kubeadm/app/apis/bootstraptoken/v1/utils.go BootstrapTokenToSecret):
 * kube-system/bootstrap-token-<id>, type bootstrap.kubernetes.io/token, token-id,
 * token-secret, expiration (RFC 3339: now + the registration timeout, so the API server
 * refuses it afterwards even if nodewarden never deletes it),
 * usage-bootstrap-authentication and usage-bootstrap-signing "true", auth-extra-groups
 * system:bootstrappers:kubeadm:default-node-token (the group kubeadm's RBAC lets create
 * CSRs and have them approved), labelled nodewarden.io/nodeclaim=<name>.
 *
 * The id is derived from the NodeClaim's uid (six of [a-z0-9]), so it is known wherever
 * the NodeClaim is (registration deletes it by name; no list of Secrets is needed, and the
 * chart grants create and delete on secrets in kube-system only). The secret is an
 * HMAC-SHA256 of the uid under a key drawn at start (16 of [a-z0-9]): a retried launch in
 * the same process renders the same userData (its launch template and CreateFleet token
 * match); after a restart the Secret is replaced (delete, create) with a new value. A
 * retried launch in the same process does not create it again while it is younger than half
 * its lifetime (nw_bootstrap_token gives the token then).
 *
 * Deletion (scaler/controllers/lifecycle.c): once the NodeClaim is Registered, or when it
 * is being deleted; after a restart every such NodeClaim's token is deleted once (a 404 is
 * success). A token whose NodeClaim vanished while nodewarden was down is refused by the
 * API server at its expiration (and kube-controller-manager's tokencleaner, on in kubeadm
 * clusters, deletes it).
 *
 * Thread: any (the Kubernetes client is thread-safe; the key is drawn once).
 */
#ifndef NW_SCALER_NODECLAIM_BOOTSTRAP_H
#define NW_SCALER_NODECLAIM_BOOTSTRAP_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "scaler/kube/client.h"

#define NW_BOOT_ANNOTATION "nodewarden.io/bootstrap"
#define NW_BOOT_NAMESPACE "kube-system"
#define NW_BOOT_LABEL "nodewarden.io/nodeclaim"
#define NW_BOOT_GROUP "system:bootstrappers:kubeadm:default-node-token"
#define NW_BOOT_TOKEN_MAX 24 /* "<6>.<16>" and its NUL */

/** True when the EC2NodeClass asks for nodewarden's kubeadm bootstrap and its amiFamily is one
 * nodewarden does not generate a bootstrap for (Custom, Windows); the annotation on AL2,
 * AL2023 or Bottlerocket has no effect (admission warns). */
bool nw_bootstrap_wanted(const cJSON *nodeclass);

/** The token id of a NodeClaim uid (7 bytes with the NUL). */
void nw_bootstrap_token_id(const char *uid, char id[7]);

/** Create the token Secret of the NodeClaim nc (metadata.uid and .name required), valid
 * for ttl_ns from now_ns (wall clock); token gets "<id>.<secret>". An existing Secret of
 * that name is replaced. NW_EINVAL without a uid; the API's errors otherwise. */
NW_MUST_USE nw_rc_t nw_bootstrap_mint(nw_kube_client_t *kube, const cJSON *nc, int64_t now_ns,
                                      int64_t ttl_ns, char token[NW_BOOT_TOKEN_MAX], nw_err_t *err);

/** The token "<id>.<secret>" nw_bootstrap_mint gives the NodeClaim nc in this process, with
 * no API call: a retried launch of a NodeClaim whose Secret this process created already
 * uses it again instead of creating the Secret anew (scaler/nodeclaim/nodeclaim.c).
 * NW_EINVAL without a uid. */
NW_MUST_USE nw_rc_t nw_bootstrap_token(const cJSON *nc, char token[NW_BOOT_TOKEN_MAX],
                                       nw_err_t *err);

/** Delete the token Secret of a NodeClaim uid; gone already is success. */
NW_MUST_USE nw_rc_t nw_bootstrap_delete(nw_kube_client_t *kube, const char *uid, nw_err_t *err);

#endif
