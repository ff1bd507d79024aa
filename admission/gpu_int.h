/*
 * admission/gpu_int.h — what the parts of the GPU isolation policy share
 * (admission/gpu.c); not for use outside admission/gpu*.c.
 */
#ifndef NW_ADMISSION_GPU_INT_H
#define NW_ADMISSION_GPU_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "admission/gpu.h"
#include "api/wellknown.h"

#define K_FAMILY "karpenter.k8s.aws/instance-family"
#define K_CATEGORY "karpenter.k8s.aws/instance-category"
#define K_GPU_MANUFACTURER "karpenter.k8s.aws/instance-gpu-manufacturer"
#define K_GPU_NAME "karpenter.k8s.aws/instance-gpu-name"
#define K_GPU_MEMORY "karpenter.k8s.aws/instance-gpu-memory"
#define K_GPU_PREFIX "karpenter.k8s.aws/instance-gpu-"
#define K_ACCEL_NAME "karpenter.k8s.aws/instance-accelerator-name"
#define K_ACCEL_MANUFACTURER "karpenter.k8s.aws/instance-accelerator-manufacturer"
#define K_ACCEL_PREFIX "karpenter.k8s.aws/instance-accelerator-"
#define K_TYPE NW_LABEL_INSTANCE_TYPE
#define K_TYPE_BETA "beta.kubernetes.io/instance-type"

/** s is one of v[0..n). */
bool nw_gpu_in_list(char *const *v, size_t n, const char *s);

/** The class of an instance type name ("g5.xlarge") by its family, or -1. */
int nw_gpu_type_name_class(const nw_gpu_policy_t *p, const char *type);

/** c itself when it is an array or object (to iterate over), else NULL. */
const cJSON *nw_gpu_kids(const cJSON *c);

/** The object is annotated NW_GPU_SKIP_ANNOTATION: skip. */
bool nw_gpu_annotated_skip(const cJSON *obj);

/** A whole decimal integer (Kubernetes requirement values are strings). */
bool nw_gpu_parse_int(const char *s, long long *out);

/** Append an add operation of value at path; value is taken (freed in every case). */
NW_MUST_USE nw_rc_t nw_gpu_patch_add_owned(nw_jsonpatch_t *patch, const char *path, cJSON *value);

/** {key: inner} (inner taken); NULL on OOM. */
cJSON *nw_gpu_wrap(const char *key, cJSON *inner);

/** [inner] (inner taken); NULL on OOM. */
cJSON *nw_gpu_wrap_array(cJSON *inner);

/** Class c's taint as "key=value:Effect". */
void nw_gpu_taint_text(const nw_gpu_policy_t *p, const nw_accel_class_t *c, char *buf, size_t n);

#endif
