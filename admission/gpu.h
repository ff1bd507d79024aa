/*
 * admission/gpu.h — the GPU isolation policy, enforced at admission (issue 4).
 *
 * GPU nodes carry a taint (default gpu=true:NoSchedule) and a label (default
 * node.accelerator=nvidia-gpu). The policy keeps both sides of that contract
 * whole:
 *   - a Pod that requests a GPU resource gets the toleration and a node selector
 *     for the label; one whose constraints can only be met by non-GPU nodes is
 *     denied;
 *   - a Pod without a GPU request that tolerates the GPU taint gets required
 *     node affinity excluding GPU nodes;
 *   - a NodePool whose requirements can only yield GPU instances (or whose
 *     template labels carry the GPU label) gets the taint and the label; any
 *     other NodePool gets a requirement excluding GPU instance types; pools that
 *     are ambiguous or contradictory are denied.
 * DaemonSet pods, exempt namespaces and objects annotated
 * `nodewarden.io/gpu-policy: skip` are left alone. In warn mode every denial
 * becomes an admission warning (patches still apply).
 *
 * Pure: no I/O. Ownership: a policy owns its strings (init/cleanup); analysis
 * functions borrow their inputs. Thread: any (the policy is read-only once built).
 */
#ifndef NW_ADMISSION_GPU_H
#define NW_ADMISSION_GPU_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "api/admit.h"
#include "api/jsonpatch.h"
#include "api/taints.h"
#include "common/err.h"

#define NW_GPU_SKIP_ANNOTATION "nodewarden.io/gpu-policy"
#define NW_GPU_COUNT_KEY "karpenter.k8s.aws/instance-gpu-count"

typedef struct nw_gpu_policy {
    bool enabled;      /* false: the policy does nothing */
    bool warn_only;    /* mode warn: denials become warnings */
    char *taint_key;   /* owned */
    char *taint_value; /* owned, "" for none */
    nw_taint_effect_t taint_effect;
    char *label_key;   /* owned */
    char *label_value; /* owned */
    char **resources;  /* owned list of GPU resource names */
    size_t nresources;
    char **exempt_namespaces; /* owned */
    size_t nexempt;
    char **families; /* owned list of GPU instance families (g5, p4d, ...) */
    size_t nfamilies;
} nw_gpu_policy_t;

/** Fill p with the defaults (enforce; gpu=true:NoSchedule; node.accelerator=nvidia-gpu;
 * nvidia.com/gpu, amd.com/gpu, aws.amazon.com/neuron, aws.amazon.com/neuroncore;
 * exempt kube-system and self_namespace (if non-empty); the AWS GPU families).
 * NW_ENOMEM on allocation failure (p is then cleaned up). */
nw_rc_t nw_gpu_policy_init(nw_gpu_policy_t *p, const char *self_namespace);

/** Free what p owns. NULL-safe. */
void nw_gpu_policy_cleanup(nw_gpu_policy_t *p);

/** Replace a string list (resources, exempt namespaces, families) with a copy of v. */
nw_rc_t nw_gpu_policy_set_list(char ***list, size_t *n, const char *const *v, size_t nv);

/** Replace one owned string field with a copy of s. */
nw_rc_t nw_gpu_policy_set_str(char **field, const char *s);

/** The GPU taint as a nw_taint_t view (borrowed strings, valid while p lives). */
nw_taint_t nw_gpu_policy_taint(const nw_gpu_policy_t *p);

/** Is an instance family (m6i, g5, p4d...) a GPU family under p. */
bool nw_gpu_family_is_gpu(const nw_gpu_policy_t *p, const char *family);

/* ---- Pods ---------------------------------------------------------------- */

typedef struct {
    bool requests_gpu;        /* some container/init container requests or limits a GPU */
    bool daemonset;           /* owned by a DaemonSet */
    bool exempt_namespace;    /* namespace is exempt */
    bool skip;                /* annotated nodewarden.io/gpu-policy: skip */
    bool tolerates_taint;     /* some toleration tolerates the GPU taint */
    bool selects_label;       /* nodeSelector or required affinity constrains the label key */
    bool requires_gpu_label;  /* every way to schedule it needs label=value */
    bool excludes_gpu_label;  /* no way to schedule it admits label=value */
    bool every_term_excludes; /* required affinity present and each term excludes GPU nodes */
} nw_gpu_pod_info_t;

/** Analyse a Pod object (namespace from the request, may be NULL to use the
 * object's metadata.namespace). */
void nw_gpu_pod_analyze(const nw_gpu_policy_t *p, const cJSON *pod, const char *ns,
                        nw_gpu_pod_info_t *out);

/** Admission handlers for core/v1 Pod (CREATE only; other operations allowed). */
nw_rc_t nw_gpu_pod_mutate(const nw_admit_ctx_t *ctx, const nw_admit_req_t *req,
                          nw_admit_result_t *res);
nw_rc_t nw_gpu_pod_validate(const nw_admit_ctx_t *ctx, const nw_admit_req_t *req,
                            nw_admit_result_t *res);

/** Append the pod's GPU patch to patch and its warnings to res (no denial here).
 * Used by nw_gpu_pod_mutate and by `nodewarden check`. */
nw_rc_t nw_gpu_pod_patch(const nw_gpu_policy_t *p, const cJSON *pod, const char *ns,
                         nw_jsonpatch_t *patch, nw_admit_result_t *res);

/** Policy problems of a Pod, as human-readable messages with their fix; returns the
 * count written (at most max). Empty when the pod is fine or exempt. */
size_t nw_gpu_pod_problems(const nw_gpu_policy_t *p, const cJSON *pod, const char *ns,
                           char (*msgs)[512], size_t max);

/* ---- NodePools ------------------------------------------------------------- */

typedef struct {
    bool skip;         /* annotated nodewarden.io/gpu-policy: skip */
    bool gpu_only;     /* requirements can only yield GPU instances */
    bool excludes_gpu; /* requirements exclude GPU instances */
    bool has_label;    /* template labels carry label=value */
    bool has_taint;    /* template taints carry the GPU taint */
    bool gpu_limits;   /* spec.limits names a GPU resource */
    char why[160];     /* which requirement decided gpu_only / excludes_gpu */
} nw_gpu_pool_info_t;

/** Analyse a NodePool object. */
void nw_gpu_pool_analyze(const nw_gpu_policy_t *p, const cJSON *nodepool, nw_gpu_pool_info_t *out);

/** Is the pool a GPU pool (GPU-only requirements, or the GPU label as explicit intent). */
bool nw_gpu_pool_is_gpu(const nw_gpu_pool_info_t *info);

/** Append the NodePool's GPU patch ops to patch (computed against nodepool as given)
 * and warnings to res. Nothing is added for skipped or denied pools. */
nw_rc_t nw_gpu_pool_patch(const nw_gpu_policy_t *p, const cJSON *nodepool, nw_jsonpatch_t *patch,
                          nw_admit_result_t *res);

/** Policy problems of a NodePool (ambiguous, contradictory, or — when after_mutation is
 * true — a GPU pool without its taint/label or a CPU pool that can launch GPUs).
 * Returns the count written (at most max). */
size_t nw_gpu_pool_problems(const nw_gpu_policy_t *p, const cJSON *nodepool, bool after_mutation,
                            char (*msgs)[512], size_t max);

/** Does this userData (plain text as in EC2NodeClass spec.userData: a shell script,
 * MIME multipart, or kubeadm/kubelet configuration YAML) make the kubelet register
 * with the GPU taint? Looks at every --register-with-taints flag value, and reads as
 * YAML (common/yaml.h) the userData itself, its shell here-documents and its MIME parts
 * for the registerWithTaints list of a KubeletConfiguration or the
 * nodeRegistration.taints of a kubeadm JoinConfiguration/InitConfiguration. */
bool nw_gpu_userdata_registers_taint(const nw_gpu_policy_t *p, const char *userdata);

/** Cross-object check: a GPU NodePool whose EC2NodeClass userData registers the
 * kubelet without the GPU taint gets a warning in res (the node is schedulable by
 * generic pods until nodewarden applies the taint at registration). nodeclass may
 * be NULL (then nothing is said). */
nw_rc_t nw_gpu_pool_crosscheck(const nw_gpu_policy_t *p, const cJSON *nodepool,
                               const cJSON *nodeclass, nw_admit_result_t *res);

/** Turn problems into a denial (enforce: 403 Forbidden, message names the object and
 * each problem with its fix) or warnings (warn mode). kind/name for the message. */
nw_rc_t nw_gpu_deny_or_warn(const nw_gpu_policy_t *p, const char *kind, const char *name,
                            char (*msgs)[512], size_t n, nw_admit_result_t *res);

#endif
