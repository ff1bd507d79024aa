/*
 * tests/fuzz/fuzz_userdata.c — the userData a user supplies (EC2NodeClass
 * spec.userData) merged into each bootstrap nodewarden generates
 * (scaler/aws/userdata*.c): AL2 and AL2023 read it as MIME multipart or a single part,
 * Bottlerocket as TOML, nodewarden's kubeadm bootstrap as MIME. The input, up to its
 * first NUL (the field is a JSON string), is rendered for each. Invariants: a merged
 * MIME bootstrap is one multipart document with the "//" boundary, closed; Bottlerocket's
 * keeps the cluster's settings; a refusal names spec.userData and says why.
 */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaler/aws/userdata.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* a P-256 CA (the one of tests/unit/test_userdata.c), base64 of its PEM */
static const char *CA =
    "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJlekNDQVNHZ0F3SUJBZ0lVTGFicGplbm1lV1ZBWmVNWURu"
    "OXZsUHo5N2VVd0NnWUlLb1pJemowRUF3SXcKRWpFUU1BNEdBMVVFQXd3SGRXNXBkQzFqWVRBZ0Z3MHlOakV5TURJ"
    "d05UUXlNVGRhR0E4eU1USTJNVEV3T0RBMQpOREl4TjFvd0VqRVFNQTRHQTFVRUF3d0hkVzVwZEMxallUQlpNQk1H"
    "QnlxR1NNNDlBZ0VHQ0NxR1NNNDlBd0VICkEwSUFCSHArTGo3MnRpaTZweTNGWSsxTzNVN1I2MG90MTlBMzJicVRJ"
    "Z0hQTFpDNDhRdG1DMjNsRFd3aVR1aTkKbk05V1B3NlM3elpHMDNwSmwwVDJyTno0QW5LalV6QlJNQjBHQTFVZERn"
    "UVdCQlNWQmFKaThpZUkrV1RNcnBBSApvYU5QaHZ4Nk1UQWZCZ05WSFNNRUdEQVdnQlNWQmFKaThpZUkrV1RNcnBB"
    "SG9hTlBodng2TVRBUEJnTlZIUk1CCkFmOEVCVEFEQVFIL01Bb0dDQ3FHU000OUJBTUNBMGdBTUVVQ0lRQzBXNUVo"
    "MGw0NFdKakwvMG1wZFlWb1VEeUgKWFViZjFrdE0vSU11UUlYVjhBSWdZS0ZSb2RaSkNZMm9vQ0h1dVBVMTNqTURP"
    "OU1JSkZ6a2tSaEZzMlJEb0tNPQotLS0tLUVORCBDRVJUSUZJQ0FURS0tLS0tCg==";

static const nw_ud_label_t LABELS[] = {{"karpenter.sh/nodepool", "default"}, {"team", "ml"}};
static const nw_ud_taint_t TAINTS[] = {{"karpenter.sh/unregistered", "", "NoExecute"}};

static void check(int cond, const char *what, const char *family, const char *detail)
{
    if (!cond) {
        fprintf(stderr, "invariant violated (%s): %s\n%s\n", family, what, detail);
        abort();
    }
}

static void render(const char *family, nw_ami_family_t f, const char *token, const char *custom,
                   const cJSON *kubelet)
{
    nw_ud_opts_t o = {.family = f,
                      .cluster_name = "fuzz",
                      .endpoint = "https://10.0.0.10:6443",
                      .ca_bundle = CA,
                      .cluster_cidr = "10.96.0.0/12",
                      .kubelet = kubelet,
                      .max_pods = 29,
                      .labels = LABELS,
                      .nlabels = 2,
                      .taints = TAINTS,
                      .ntaints = 1,
                      .custom = custom,
                      .kubeadm_token = token,
                      .kube_dns = "10.96.0.10"};
    char *out = NULL;
    nw_err_t err = {0};
    nw_rc_t rc = nw_userdata_render(&o, &out, &err);
    if (rc != NW_OK) {
        check(out == NULL, "nothing is returned on error", family, err.msg);
        if (rc != NW_ENOMEM)
            check(strcmp(err.path, "spec.userData") == 0 && err.msg[0],
                  "a refused userData names spec.userData and says why", family, err.msg);
        return;
    }
    check(out != NULL, "a bootstrap is returned", family, "");
    if (f == NW_AMI_BOTTLEROCKET) {
        check(strstr(out, "cluster-name = \"fuzz\"\n") &&
                  strstr(out, "api-server = \"https://10.0.0.10:6443\"\n"),
              "the cluster's settings are in the TOML", family, out);
    } else {
        static const char head[] =
            "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"//\"\n\n--//\n";
        static const char tail[] = "\n--//--\n";
        size_t n = strlen(out);
        check(strncmp(out, head, sizeof head - 1) == 0, "a multipart document", family, out);
        check(n >= sizeof tail - 1 && strcmp(out + n - (sizeof tail - 1), tail) == 0 &&
                  strstr(out, tail) == out + n - (sizeof tail - 1),
              "closed once, at its end", family, out);
    }
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static cJSON *kubelet;
    if (!kubelet && !(kubelet = cJSON_Parse("{\"maxPods\":20,\"systemReserved\":{\"cpu\":"
                                            "\"100m\"},\"evictionHard\":{\"memory.available\":"
                                            "\"5%\"}}")))
        abort();
    char *custom = malloc(size + 1);
    if (!custom)
        abort();
    memcpy(custom, data, size);
    custom[size] = '\0';
    render("AL2", NW_AMI_AL2, NULL, custom, kubelet);
    render("AL2023", NW_AMI_AL2023, NULL, custom, kubelet);
    render("Bottlerocket", NW_AMI_BOTTLEROCKET, NULL, custom, kubelet);
    render("kubeadm", NW_AMI_CUSTOM, "abcdef.0123456789abcdef", custom, kubelet);
    free(custom);
    return 0;
}
