/*
 * cli/doctor.h — the cluster part of `nodewarden doctor`: preflight
 * checks against the API server, each failure with its fix.
 *
 * Checks, in order:
 *   api        the API server answers with the configured credentials
 *   rbac       every permission nodewarden needs, via SelfSubjectAccessReview
 *   crds       nodepools.karpenter.sh, nodeclaims.karpenter.sh and
 *              ec2nodeclasses.karpenter.k8s.aws installed and serving v1
 *   webhooks   the validating and mutating configurations registered, every
 *              webhook with a caBundle that verifies nodewarden's serving
 *              certificate (when its PEM is given); then a real round trip: a dry-run
 *              NodePool create (dryRun=All, nothing stored) the API server sends through
 *              the webhooks; when it cannot call them, the NetworkPolicies of the webhook's
 *              namespace that admit ingress are named as the likely cause
 *   classes    every EC2NodeClass's Ready condition as the scaler wrote it (False: its
 *              NodePools get no NodeClaims; the reason and a fix), and the service CIDR
 *              (scaler/kube/svccidr.h, else settings.clusterCIDR) that AL2023 classes
 *              need; a class with the kubeadm bootstrap makes rbac check the Secrets too
 *   nodepools  every NodePool's nodeClassRef names an EC2NodeClass that exists
 *   nodes      nodes launched by nodewarden (label karpenter.sh/nodepool) carry
 *              an aws:///<zone>/<instance-id> providerID that matches their
 *              NodeClaim's status.providerID
 * When the API is unreachable the later checks are skipped (reported as such).
 *
 * Ownership: the report owns its entries (nw_doctor_report_cleanup).
 * Thread: the caller's (synchronous requests through the client).
 */
#ifndef NW_CLI_DOCTOR_H
#define NW_CLI_DOCTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "common/err.h"
#include "scaler/kube/client.h"

typedef enum { NW_CHECK_OK = 0, NW_CHECK_FAIL, NW_CHECK_WARN, NW_CHECK_SKIP } nw_check_status_t;

typedef struct {
    nw_check_status_t status;
    char area[16];    /* "api", "rbac", "crds", "webhooks", "classes", "nodepools", "nodes" */
    char what[160];   /* what was checked */
    char detail[512]; /* what was found */
    char fix[512];    /* what to do ("" when OK) */
} nw_kube_check_t;

typedef struct {
    nw_kube_check_t *v;
    size_t n, cap;
    size_t failed, warned;
} nw_kube_report_t;

typedef struct {
    const char *validating_name;  /* default "nodewarden-validating" */
    const char *mutating_name;    /* default "nodewarden-mutating" */
    const char *serving_cert_pem; /* nodewarden's serving certificate (chain), or NULL */
    const char *lease_namespace;  /* where the leader Lease lives; default config namespace */
    const char *cluster_cidr;     /* settings.clusterCIDR, or NULL */
} nw_kube_doctor_opts_t;

/** Initialise an empty report. */
void nw_doctor_report_init(nw_kube_report_t *r);

/** Free the entries. */
void nw_doctor_report_cleanup(nw_kube_report_t *r);

/** Append an entry (printf-style detail; fix may be NULL). */
void nw_doctor_report_add(nw_kube_report_t *r, nw_check_status_t st, const char *area,
                          const char *what, const char *fix, const char *detail_fmt, ...)
    __attribute__((format(printf, 6, 7)));

/** Run every check; appends to rep. Returns NW_OK (failures are in the report). */
NW_MUST_USE nw_rc_t nw_doctor_run(nw_kube_client_t *c, const nw_kube_doctor_opts_t *opts,
                                  nw_kube_report_t *rep);

/** Print the report: one line per check ("ok", "FAIL", "warn", "skip"), with the fix
 * indented under each failure, then a summary line. */
void nw_doctor_report_print(const nw_kube_report_t *rep, FILE *f);

/** True if the PEM bundle (CA certificates) verifies the PEM certificate chain (leaf first);
 * why (nullable) receives OpenSSL's reason otherwise. */
bool nw_doctor_ca_verifies(const char *bundle_pem, size_t bundle_len, const char *cert_pem,
                           char *why, size_t why_len);

#endif
