/*
 * admission/gpu_policy.h — build the GPU isolation policy (admission/gpu.h) from the
 * configuration's `gpu:` block.
 *
 * Ownership: *out is initialised by the call; free with nw_gpu_policy_cleanup.
 * Thread: main.
 */
#ifndef NW_ADMISSION_GPU_POLICY_H
#define NW_ADMISSION_GPU_POLICY_H

#include "admission/gpu.h"
#include "config/config.h"

/** Policy from cfg->gpu. self_namespace (nodewarden's own namespace, may be NULL or
 * "") is exempt in addition to gpu.exemptNamespaces. Errors name the config key. */
NW_MUST_USE nw_rc_t nw_gpu_policy_from_config(const nw_config_t *cfg, const char *self_namespace,
                                              nw_gpu_policy_t *out, nw_err_t *err);

#endif
