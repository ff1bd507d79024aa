#include "admission/gpu_policy.h"

#include <stdlib.h>
#include <string.h>

nw_rc_t nw_srv_gpu_policy(const nw_config_t *cfg, const char *self_namespace, nw_gpu_policy_t *out,
                          nw_err_t *err)
{
    nw_rc_t rc = nw_gpu_policy_init(out, self_namespace);
    if (rc != NW_OK)
        return nw_err_set(err, rc, "gpu", "out of memory");
    out->enabled = cfg->gpu.enabled != 0;
    out->warn_only = cfg->gpu.mode && strcmp(cfg->gpu.mode, "warn") == 0;
    if (!nw_taint_effect_parse(cfg->gpu.taintEffect, &out->taint_effect) ||
        out->taint_effect == NW_TAINT_EFFECT_ANY) {
        nw_gpu_policy_cleanup(out);
        return nw_err_set(err, NW_EINVAL, "gpu.taint.effect",
                          "gpu.taint.effect: expected NoSchedule, PreferNoSchedule or NoExecute");
    }
    if (!cfg->gpu.taintKey || !*cfg->gpu.taintKey || !cfg->gpu.nodeLabelKey ||
        !*cfg->gpu.nodeLabelKey || !cfg->gpu.nodeLabelValue || !*cfg->gpu.nodeLabelValue) {
        nw_gpu_policy_cleanup(out);
        return nw_err_set(err, NW_EINVAL, "gpu",
                          "gpu.taint.key, gpu.nodeLabel.key and gpu.nodeLabel.value must be set");
    }
    /* exempt: the configured namespaces plus our own */
    size_t n = cfg->gpu.exemptNamespaces.n;
    const char **ex = calloc(n + 1, sizeof *ex);
    if (!ex) {
        nw_gpu_policy_cleanup(out);
        return nw_err_set(err, NW_ENOMEM, "gpu", "out of memory");
    }
    size_t k = 0;
    bool self_listed = !self_namespace || !*self_namespace;
    for (size_t i = 0; i < n; i++) {
        ex[k++] = cfg->gpu.exemptNamespaces.v[i];
        if (!self_listed && strcmp(cfg->gpu.exemptNamespaces.v[i], self_namespace) == 0)
            self_listed = true;
    }
    if (!self_listed)
        ex[k++] = self_namespace;
    if (nw_gpu_policy_set_str(&out->taint_key, cfg->gpu.taintKey) ||
        nw_gpu_policy_set_str(&out->taint_value, cfg->gpu.taintValue ? cfg->gpu.taintValue : "") ||
        nw_gpu_policy_set_str(&out->label_key, cfg->gpu.nodeLabelKey) ||
        nw_gpu_policy_set_str(&out->label_value, cfg->gpu.nodeLabelValue) ||
        nw_gpu_policy_set_list(&out->resources, &out->nresources,
                               (const char *const *)cfg->gpu.resources.v, cfg->gpu.resources.n) ||
        nw_gpu_policy_set_list(&out->exempt_namespaces, &out->nexempt, ex, k) ||
        nw_gpu_policy_set_list(&out->families, &out->nfamilies,
                               (const char *const *)cfg->gpu.instanceFamilies.v,
                               cfg->gpu.instanceFamilies.n)) {
        free(ex);
        nw_gpu_policy_cleanup(out);
        return nw_err_set(err, NW_ENOMEM, "gpu", "out of memory");
    }
    free(ex);
    return NW_OK;
}
