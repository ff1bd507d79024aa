/*
 * admission/gpu.h — the accelerator isolation policy, enforced at admission (issues 4, 20).
 *
 * The policy knows a list of accelerator classes (defaults: NVIDIA, AMD, AWS Neuron,
 * Habana Gaudi; docs/admission.md). Each class has its extended resources (exact names
 * or prefixes ending in '*', e.g. nvidia.com/mig-*), its instance families, an instance
 * requirement that selects its types among the catalog's accelerator labels (e.g.
 * karpenter.k8s.aws/instance-gpu-manufacturer In [nvidia]), its taint and its value of
 * the node label (default key node.accelerator). The policy keeps every class whole:
 *   - a Pod that requests a class's resources gets a toleration of the class's taint key
 *     (Exists, so it matches whatever value a pool of the class gives the taint) and a
 *     node selector for its label value, unless it already tolerates some value of the key; one
 * whose constraints admit no node of the class is denied, and so is one that requests the resources
 * of two classes;
 *   - a Pod without an accelerator request that tolerates a class's taint gets required
 *     node affinity excluding that class's nodes;
 *   - a NodePool whose requirements can only yield accelerator instances (or whose
 *     template labels carry a class's label value) is a pool of one class: it gets the
 *     class's taint (any value of its key is accepted with the policy's effect), label and (when
 * its requirements also admit other classes) the class's instance requirement; any other NodePool
 * gets requirements excluding every class's instance types (by the catalog's device count labels,
 * and by family for a class known by family only and for a class's uncounted families, whose types
 * EC2 describes with a device count of 0); pools that are ambiguous or contradictory are denied.
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
#include <stdint.h>

#include "api/taints.h"
#include "common/err.h"

#define NW_GPU_SKIP_ANNOTATION "nodewarden.io/gpu-policy"
#define NW_GPU_COUNT_KEY "karpenter.k8s.aws/instance-gpu-count"

#define NW_ACCEL_COUNT_KEY "karpenter.k8s.aws/instance-accelerator-count"
#define NW_GPU_MAX_CLASSES 16
/* staged replacement's defaults (disruption.rollout.maxReplacing, .readyTimeout) */
#define NW_GPU_ROLLOUT_MAX_DEFAULT 1
#define NW_GPU_ROLLOUT_TIMEOUT_DEFAULT_NS (30LL * 60 * 1000000000LL)

/* One accelerator class. All strings owned by the policy. */
typedef struct {
    char *name;        /* "nvidia", "amd", "neuron", "gaudi" */
    char *taint_key;   /* the class's taint */
    char *taint_value; /* "" for none */
    char *label_value; /* its value of the policy's node label */
    char **resources;  /* extended resource names; "prefix*" matches by prefix */
    size_t nresources;
    char **families; /* its instance families (g5, inf2, ...) */
    size_t nfamilies;
    char *req_key; /* instance requirement of its types: req_key In req_values */
    char **req_values;
    size_t nreq_values;
    /* families (among `families`) some of whose types EC2 reports with no device count
     * (fractional GPUs such as g6f, and p5.4xlarge): the catalog's count labels miss them,
     * so generic pools keep off them by family too (admission/gpu_pool.c) and the scaler's
     * scheduling input does the same */
    char **uncounted;
    size_t nuncounted;
    /* DRA (resource.k8s.io): the drivers whose devices are the class's (gpu.nvidia.com,
     * neuron.aws.com, ...) and the DeviceClass names that are the class's; a pod whose
     * ResourceClaims request devices of such a DeviceClass is a pod of the class
     * (admission/gpu_dra.c) */
    char **dra_drivers;
    size_t ndra_drivers;
    char **dra_classes;
    size_t ndra_classes;
    bool aware_disruption; /* GPU-aware disruption for the class's nodes (scaler/disrupt) */
    /* staged replacement of its nodes on drift and expiry (disruption.rollout): at most
     * rollout_max per NodePool at a time (0: not staged), each replacement given
     * rollout_timeout_ns to run a pod of the class Running and Ready */
    int rollout_max;
    int64_t rollout_timeout_ns;
} nw_accel_class_t;

typedef struct nw_gpu_policy {
    bool enabled;   /* false: the policy does nothing */
    bool warn_only; /* mode warn: denials become warnings */
    nw_taint_effect_t taint_effect;
    char *label_key;          /* owned; the node label every class sets to its label_value */
    char **exempt_namespaces; /* owned */
    size_t nexempt;
    nw_accel_class_t classes[NW_GPU_MAX_CLASSES];
    size_t nclasses;
} nw_gpu_policy_t;

/** Fill p with the defaults (enforce; effect NoSchedule; label key node.accelerator;
 * the classes nvidia (gpu=true, nvidia-gpu), amd (amd.com/gpu, amd-gpu), neuron
 * (aws.amazon.com/neuron, aws-neuron) and gaudi (habana.ai/gaudi, habana-gaudi) with
 * their resources, families and instance requirements; exempt kube-system and
 * self_namespace (if non-empty)). NW_ENOMEM on allocation failure (p is then cleaned up). */
NW_MUST_USE nw_rc_t nw_gpu_policy_init(nw_gpu_policy_t *p, const char *self_namespace);

/** Free what p owns. NULL-safe. */
void nw_gpu_policy_cleanup(nw_gpu_policy_t *p);

/** Replace a string list (resources, exempt namespaces, families) with a copy of v. */
NW_MUST_USE nw_rc_t nw_gpu_policy_set_list(char ***list, size_t *n, const char *const *v,
                                           size_t nv);

/** Replace one owned string field with a copy of s. */
NW_MUST_USE nw_rc_t nw_gpu_policy_set_str(char **field, const char *s);

/** The class named name, or NULL. */
nw_accel_class_t *nw_gpu_policy_class(nw_gpu_policy_t *p, const char *name);

/** Free what class c owns (the policy's cleanup does this for every class). */
void nw_gpu_policy_class_cleanup(nw_accel_class_t *c);

/** A class's taint as a nw_taint_t view (borrowed strings, valid while p lives). */
nw_taint_t nw_gpu_class_taint(const nw_gpu_policy_t *p, const nw_accel_class_t *c);

/** Does resource name `res` belong to class c (exact name, or a "prefix*" entry). */
bool nw_gpu_class_has_resource(const nw_accel_class_t *c, const char *res);

/** Index of the class whose resources include res, or -1. */
int nw_gpu_resource_class(const nw_gpu_policy_t *p, const char *res);

/** Is family one of class c's uncounted families. */
bool nw_gpu_class_uncounted(const nw_accel_class_t *c, const char *family);

/** Index of the class with this instance family (m6i, g5, inf2...), or -1. */
int nw_gpu_family_class(const nw_gpu_policy_t *p, const char *family);

/** Is an instance family an accelerator family of some class under p. */
bool nw_gpu_family_is_gpu(const nw_gpu_policy_t *p, const char *family);

/** Index of the class an instance type belongs to, judged from its labels as the
 * catalog gives them (karpenter.k8s.aws/instance-family and the class's instance
 * requirement label), or -1 for none. get(key, arg) returns a label value or NULL. */
int nw_gpu_type_class(const nw_gpu_policy_t *p, const char *(*get)(const char *key, void *arg),
                      void *arg);

/* ---- DRA (resource.k8s.io/v1) ------------------------------------------------
 *
 * A pod's ResourceClaims (spec.resourceClaims: resourceClaimName, or
 * resourceClaimTemplateName) request devices of DeviceClasses. A DeviceClass is class i's
 * when its name is among the class's dra_classes, or when one of its CEL selectors names
 * one of the class's dra_drivers (device.driver == "gpu.nvidia.com"); a request whose own
 * selectors name such a driver counts too. The claims and DeviceClasses are read through
 * a lookup (nw_admit_ctx_t's: serve's watch cache, or the files `check` is given). */

/* lookup(arg, group, kind, name): a copy of the object (caller frees) or NULL; namespaced
 * kinds are named "namespace/name" */
typedef cJSON *(*nw_gpu_lookup_fn)(void *arg, const char *group, const char *kind,
                                   const char *name);

typedef struct nw_gpu_dra_src {
    nw_gpu_lookup_fn lookup; /* NULL: no cluster state, claims are not judged */
    void *arg;
    bool complete; /* an object the lookup does not find does not exist */
} nw_gpu_dra_src_t;

typedef struct {
    int nclaims;                     /* entries of spec.resourceClaims */
    unsigned classes;                /* bit i: a claim requests devices of class i */
    int devices[NW_GPU_MAX_CLASSES]; /* devices requested per class (allocationMode All: 1) */
    bool unjudged;                   /* claims present but no lookup */
    char missing[200]; /* "ResourceClaim ns/x" or "ResourceClaimTemplate ns/x" not found; "" */
    char what[200];    /* what made the first class's claim: "ResourceClaim x (DeviceClass y)" */
} nw_gpu_dra_t;

/** The class index of a DeviceClass (its name, and its object dc, which may be NULL), or -1. */
int nw_gpu_dra_device_class(const nw_gpu_policy_t *p, const char *name, const cJSON *dc);

/** The classes a ResourceClaimSpec (a claim's spec, a template's spec.spec) requests devices
 * of; device counts added to devices[] (may be NULL); the first request of a class is
 * described in what (may be NULL). DeviceClasses are read through src (may be NULL). */
unsigned nw_gpu_dra_claim_spec(const nw_gpu_policy_t *p, const cJSON *claim_spec,
                               const nw_gpu_dra_src_t *src, int *devices, char *what, size_t n);

/** Judge a pod spec's ResourceClaims (ns and name: the pod's; name may be NULL). src may
 * be NULL. A claim several pods share (resourceClaimName) counts its devices once: an
 * allocated one for the first pod it is reserved for only, and for no other pod. */
void nw_gpu_dra_pod(const nw_gpu_policy_t *p, const cJSON *spec, const char *ns, const char *name,
                    const nw_gpu_dra_src_t *src, nw_gpu_dra_t *out);

/* ---- Pods ---------------------------------------------------------------- */

typedef struct {
    bool requests_gpu;     /* some container/init container requests or limits a class's resource */
    int cls;               /* the requested class (index), -1 none */
    unsigned requested;    /* bit i: the pod requests a resource of class i */
    bool daemonset;        /* owned by a DaemonSet */
    bool exempt_namespace; /* namespace is exempt */
    bool skip;             /* annotated nodewarden.io/gpu-policy: skip */
    bool tolerates_taint;  /* some toleration tolerates the requested class's taint */
    bool selects_label;    /* nodeSelector or required affinity constrains the label key */
    bool requires_gpu_label;  /* every way to schedule it needs label=the class's value */
    bool excludes_gpu_label;  /* no way to schedule it admits label=the class's value */
    bool every_term_excludes; /* required affinity present and each term excludes the class */
    unsigned open_to;   /* (no request) bit i: tolerates class i's taint and admits its nodes */
    unsigned requires;  /* (no request) bit i: can only schedule on class i's nodes */
    char resource[224]; /* the first resource of the requested class the pod names (or
                           its DRA claim: nw_gpu_dra_t.what) */
    nw_gpu_dra_t dra;   /* its ResourceClaims; their classes are in `requested` too */
} nw_gpu_pod_info_t;

/** Analyse a Pod object (namespace from the request, may be NULL to use the
 * object's metadata.namespace). dra: where its ResourceClaims are read (NULL: not). */
void nw_gpu_pod_analyze(const nw_gpu_policy_t *p, const cJSON *pod, const char *ns,
                        const nw_gpu_dra_src_t *dra, nw_gpu_pod_info_t *out);

/** Admission handlers for core/v1 Pod (CREATE only; other operations allowed). */
NW_MUST_USE nw_rc_t nw_gpu_pod_mutate(const nw_admit_ctx_t *ctx, const nw_admit_req_t *req,
                                      nw_admit_result_t *res);
NW_MUST_USE nw_rc_t nw_gpu_pod_validate(const nw_admit_ctx_t *ctx, const nw_admit_req_t *req,
                                        nw_admit_result_t *res);

/** Append the pod's GPU patch to patch and its warnings to res (no denial here).
 * Used by nw_gpu_pod_mutate and by `nodewarden check`. */
NW_MUST_USE nw_rc_t nw_gpu_pod_patch(const nw_gpu_policy_t *p, const cJSON *pod, const char *ns,
                                     const nw_gpu_dra_src_t *dra, nw_jsonpatch_t *patch,
                                     nw_admit_result_t *res);

/** Policy problems of a Pod, as human-readable messages with their fix; returns the
 * count written (at most max). Empty when the pod is fine or exempt. */
size_t nw_gpu_pod_problems(const nw_gpu_policy_t *p, const cJSON *pod, const char *ns,
                           const nw_gpu_dra_src_t *dra, char (*msgs)[512], size_t max);

/* ---- NodePools ------------------------------------------------------------- */

typedef struct {
    bool skip;             /* annotated nodewarden.io/gpu-policy: skip */
    bool gpu_only;         /* requirements can only yield accelerator instances */
    bool excludes_gpu;     /* requirements exclude every class's instances */
    unsigned possible;     /* bit i: the requirements admit class i's instance types */
    unsigned dev_excluded; /* bit i: a device label requirement excludes class i's labelled
                              types (its uncounted families may still be possible) */
    unsigned unc_excluded; /* bit i: a family or category list excludes class i's uncounted
                              families */
    bool several;          /* a family/type list names instance types of several classes */
    int cls;               /* the pool's class (label, taint, or the first possible), -1 none */
    int label_cls;         /* class whose label value the template labels carry, -1 none */
    int taint_cls;         /* class whose taint key (any value) the template carries, -1 none */
    bool has_label;        /* template labels carry label=the class's value */
    bool has_taint;        /* template taints carry the class's taint key (any value) */
    bool gpu_limits;       /* spec.limits names an accelerator resource */
    char why[160];         /* which requirement decided gpu_only / excludes_gpu */
} nw_gpu_pool_info_t;

/** Analyse a NodePool object. */
void nw_gpu_pool_analyze(const nw_gpu_policy_t *p, const cJSON *nodepool, nw_gpu_pool_info_t *out);

/** Is the pool an accelerator pool (accelerator-only requirements, or a class's label
 * as explicit intent); then info->cls is its class. */
bool nw_gpu_pool_is_gpu(const nw_gpu_pool_info_t *info);

/** Append the NodePool's GPU patch ops to patch (computed against nodepool as given)
 * and warnings to res. Nothing is added for skipped or denied pools. */
NW_MUST_USE nw_rc_t nw_gpu_pool_patch(const nw_gpu_policy_t *p, const cJSON *nodepool,
                                      nw_jsonpatch_t *patch, nw_admit_result_t *res);

/** Policy problems of a NodePool (ambiguous, contradictory, or — when after_mutation is
 * true — a GPU pool without its taint/label or a CPU pool that can launch GPUs).
 * Returns the count written (at most max). */
size_t nw_gpu_pool_problems(const nw_gpu_policy_t *p, const cJSON *nodepool, bool after_mutation,
                            char (*msgs)[512], size_t max);

/** Does this userData (plain text as in EC2NodeClass spec.userData: a shell script,
 * MIME multipart, or kubeadm/kubelet configuration YAML) make the kubelet register
 * with class c's taint? Looks at every --register-with-taints flag value, and reads as
 * YAML (common/yaml.h) the userData itself, its shell here-documents and its MIME parts
 * for the registerWithTaints list of a KubeletConfiguration or the
 * nodeRegistration.taints of a kubeadm JoinConfiguration/InitConfiguration. */
bool nw_gpu_userdata_registers_taint(const nw_gpu_policy_t *p, const nw_accel_class_t *c,
                                     const char *userdata);

/** Cross-object check: an accelerator NodePool whose EC2NodeClass userData registers
 * the kubelet without its class's taint gets a warning in res (the node is schedulable by
 * generic pods until nodewarden applies the taint at registration). nodeclass may
 * be NULL (then nothing is said). */
NW_MUST_USE nw_rc_t nw_gpu_userdata_pool_crosscheck(const nw_gpu_policy_t *p, const cJSON *nodepool,
                                                    const cJSON *nodeclass, nw_admit_result_t *res);

/** Turn problems into a denial (enforce: 403 Forbidden, message names the object and
 * each problem with its fix) or warnings (warn mode). kind/name for the message. */
NW_MUST_USE nw_rc_t nw_gpu_deny_or_warn(const nw_gpu_policy_t *p, const char *kind,
                                        const char *name, char (*msgs)[512], size_t n,
                                        nw_admit_result_t *res);

#endif
