/* api/ec2nodeclass_warn.c — admission warnings for EC2NodeClass fields that have no effect
 * for the chosen AMI family (see ec2nodeclass.h). */
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "api/ec2nodeclass.h"
#include "common/json.h"

/* the family the class runs: spec.amiFamily, else its first alias's family */
static const char *family(const cJSON *spec, const char **alias)
{
    static const struct {
        const char *prefix, *family;
    } fam[] = {{"al2023@", "AL2023"},
               {"al2@", "AL2"},
               {"bottlerocket@", "Bottlerocket"},
               {"windows2019@", "Windows2019"},
               {"windows2022@", "Windows2022"},
               {"windows2025@", "Windows2025"}};
    *alias = NULL;
    const cJSON *t;
    cJSON_ArrayForEach(t, nw_json_get(spec, "amiSelectorTerms"))
    {
        const char *a = cJSON_GetStringValue(nw_json_get(t, "alias"));
        if (a && !*alias)
            *alias = a;
    }
    const char *f = cJSON_GetStringValue(nw_json_get(spec, "amiFamily"));
    if (f)
        return f;
    for (size_t i = 0; *alias && i < sizeof fam / sizeof fam[0]; i++)
        if (strncasecmp(*alias, fam[i].prefix, strlen(fam[i].prefix)) == 0)
            return fam[i].family;
    return NULL;
}

void nw_ec2nodeclass_warn(const cJSON *obj, nw_admit_result_t *res)
{
    const cJSON *spec = nw_json_get(obj, "spec");
    if (!res || !cJSON_IsObject(spec))
        return;
    const char *alias = NULL, *fam = family(spec, &alias);
    if (!fam)
        return;
    bool generated =
        strcmp(fam, "AL2") == 0 || strcmp(fam, "AL2023") == 0 || strcmp(fam, "Bottlerocket") == 0;
    bool windows = strncmp(fam, "Windows", 7) == 0;
    const char *boot = cJSON_GetStringValue(nw_json_get(
        nw_json_get(nw_json_get(obj, "metadata"), "annotations"), "nodewarden.io/bootstrap"));
    bool kubeadm = boot && strcmp(boot, "kubeadm") == 0 && !generated;
    const cJSON *kub = nw_json_get(spec, "kubelet");
    const char *ud = cJSON_GetStringValue(nw_json_get(spec, "userData"));

    if (boot && strcmp(boot, "kubeadm") != 0)
        nw_admit_warn(res,
                      "metadata.annotations[nodewarden.io/bootstrap]: \"%s\" is not a bootstrap "
                      "nodewarden knows (kubeadm); it has no effect",
                      boot);
    else if (boot && generated)
        nw_admit_warn(res,
                      "metadata.annotations[nodewarden.io/bootstrap]: no effect with amiFamily %s: "
                      "nodewarden generates that family's bootstrap; the kubeadm join is for "
                      "amiFamily Custom",
                      fam);
    else if (kubeadm && windows)
        nw_admit_warn(res,
                      "metadata.annotations[nodewarden.io/bootstrap]: the kubeadm join is a shell "
                      "script; a %s node does not run it",
                      fam);
    if (ud && generated)
        nw_admit_warn(res,
                      "spec.userData: with amiFamily %s it is merged into the bootstrap nodewarden "
                      "generates (your part first, then the %s join); it is passed through "
                      "unchanged only with amiFamily Custom",
                      fam,
                      strcmp(fam, "Bottlerocket") == 0 ? "settings.kubernetes TOML"
                      : strcmp(fam, "AL2") == 0        ? "bootstrap.sh"
                                                       : "NodeConfig");
    if (cJSON_IsObject(kub) && kub->child && strcmp(fam, "Custom") == 0 && !kubeadm)
        nw_admit_warn(res,
                      "spec.kubelet: with amiFamily Custom nodewarden plans nodes with these "
                      "values but does not configure the kubelet (your userData does): set the "
                      "same there, or use the annotation nodewarden.io/bootstrap: kubeadm");
    if (cJSON_IsObject(kub) && strcmp(fam, "Bottlerocket") == 0) {
        static const char *const ignored[] = {"podsPerCore", "evictionSoft",
                                              "evictionSoftGracePeriod"};
        for (size_t i = 0; i < 3; i++)
            if (nw_json_get(kub, ignored[i]))
                nw_admit_warn(res,
                              "spec.kubelet.%s: Bottlerocket does not support it; it is ignored "
                              "(Karpenter's Bottlerocket feature flags)",
                              ignored[i]);
    }
    if (alias && strcmp(fam, "Custom") == 0)
        nw_admit_warn(res,
                      "spec.amiSelectorTerms: alias %s selects an EKS-optimized image, but with "
                      "amiFamily Custom nodewarden generates no bootstrap for it: your userData "
                      "must join the node",
                      alias);
    if (windows && nw_json_get(spec, "instanceStorePolicy"))
        nw_admit_warn(res, "spec.instanceStorePolicy: no effect with amiFamily %s", fam);
}
