/*
 * scaler/aws/userdata_kubeadm.c — nodewarden's own bootstrap for the families it does not
 * generate for (docs/node-bootstrap.md; Karpenter has none): the user's parts, then a script
 * that writes a kubeadm JoinConfiguration (the bootstrap token, the CA's public key pin:
 * kubernetes/kubernetes cmd/kubeadm/app/util/pubkeypin/pubkeypin.go Hash) and a
 * KubeletConfiguration patch, and runs kubeadm join. See userdata.h.
 */
#include "scaler/aws/userdata.h"

#include <ctype.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/sha.h>
#include <openssl/x509.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/yaml.h"
#include "scaler/aws/userdata_int.h"

/* ---- kubeadm: nodewarden's own bootstrap ---- */

nw_rc_t nw_userdata_kubeadm_ca_pin(const char *ca, char *out, size_t len, nw_err_t *err)
{
    if (len)
        *out = 0;
    if (!ca || !*ca)
        return nw_err_set(err, NW_EINVAL, "settings.clusterCABundle",
                          "settings.clusterCABundle is empty: kubeadm join pins the cluster CA "
                          "by its public key's hash");
    /* base64 of PEM (Karpenter's form), or the PEM itself */
    unsigned char *pem = NULL;
    int pl = 0;
    if (strstr(ca, "-----BEGIN")) {
        pem = (unsigned char *)strdup(ca);
        pl = pem ? (int)strlen(ca) : 0;
    } else {
        char *clean = malloc(strlen(ca) + 1);
        size_t n = 0;
        for (const char *p = ca; clean && *p; p++)
            if (!isspace((unsigned char)*p))
                clean[n++] = *p;
        if (clean && n % 4 == 0 && n > 0) {
            pem = malloc(n / 4 * 3 + 1);
            pl = pem ? EVP_DecodeBlock(pem, (unsigned char *)clean, (int)n) : -1;
            if (pl < 0) {
                free(pem);
                pem = NULL;
            }
        }
        free(clean);
    }
    X509 *x = NULL;
    if (pem && pl > 0) {
        BIO *b = BIO_new_mem_buf(pem, pl);
        x = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
        BIO_free(b);
    }
    free(pem);
    ERR_clear_error();
    if (!x)
        return nw_err_set(err, NW_EINVAL, "settings.clusterCABundle",
                          "settings.clusterCABundle holds no PEM certificate (base64 of the "
                          "cluster CA's ca.crt)");
    unsigned char *der = NULL;
    int dl = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(x), &der);
    X509_free(x);
    if (dl <= 0)
        return nw_err_set(err, NW_EINVAL, "settings.clusterCABundle",
                          "cannot encode the CA certificate's public key");
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256(der, (size_t)dl, md);
    OPENSSL_free(der);
    if (len < 7 + 2 * SHA256_DIGEST_LENGTH + 1)
        return nw_err_set(err, NW_EINVAL, "settings.clusterCABundle", "pin buffer too small");
    memcpy(out, "sha256:", 7);
    for (int i = 0; i < SHA256_DIGEST_LENGTH; i++)
        snprintf(out + 7 + 2 * i, 3, "%02x", md[i]);
    return NW_OK;
}

/* host:port of an endpoint URL ("https://10.0.0.10:6443/" -> "10.0.0.10:6443"; no port:
 * the scheme's) */
static void endpoint_hostport(const char *url, char *out, size_t n)
{
    const char *p = strstr(url, "://");
    bool http = strncmp(url, "http://", 7) == 0;
    p = p ? p + 3 : url;
    size_t l = strcspn(p, "/?#");
    const char *close = memchr(p, ']', l);
    const char *colon = NULL;
    for (const char *q = close ? close : p; q < p + l; q++)
        if (*q == ':')
            colon = q;
    if (colon)
        snprintf(out, n, "%.*s", (int)l, p);
    else
        snprintf(out, n, "%.*s:%s", (int)l, p, http ? "80" : "443");
}

#define KUBEADM_DIR "/etc/kubernetes/nodewarden"

nw_rc_t nw_userdata_kubeadm_render(const nw_ud_opts_t *o, const nw_ud_label_t *l, int nl, out_t *w,
                                   nw_err_t *err)
{
    char pin[80];
    nw_rc_t rc = nw_userdata_kubeadm_ca_pin(o->ca_bundle, pin, sizeof pin, err);
    if (rc != NW_OK)
        return rc;
    for (const char *p = o->kubeadm_token; *p; p++)
        if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '.'))
            return nw_err_set(err, NW_EINVAL, "bootstrap token", "not a kubeadm token");
    parts_t parts = {0};
    rc = nw_userdata_mime_custom_parts(o->custom, 0, &parts, err);
    if (rc != NW_OK) {
        nw_userdata_mime_parts_free(&parts);
        return rc;
    }
    cJSON *cfg = nw_userdata_common_kubelet_config(o);
    cJSON_DeleteItemFromObjectCaseSensitive(cfg, "providerID");
    char *patch = NULL;
    size_t pl = 0;
    rc = nw_yaml_emit(cfg, &patch, &pl, err);
    cJSON_Delete(cfg);
    if (rc != NW_OK) {
        nw_userdata_mime_parts_free(&parts);
        return rc;
    }
    char ep[512];
    endpoint_hostport(o->endpoint, ep, sizeof ep);
    out_t s = {{0}, NW_OK};
    nw_buf_init(&s.b, UD_MAX);
    nw_userdata_common_put(
        &s, "#!/bin/bash\n"
            "# nodewarden's kubeadm bootstrap (EC2NodeClass annotation nodewarden.io/bootstrap: "
            "kubeadm).\n"
            "# The token was minted for this node alone: it expires with the registration "
            "timeout and\n"
            "# nodewarden deletes it once the node has registered.\n"
            "set -euo pipefail\n"
            "trap 'rm -f " KUBEADM_DIR "/join.yaml' EXIT\n"
            "IMDS=http://169.254.169.254/latest\n"
            "T=$(curl -sSf -X PUT \"$IMDS/api/token\" -H "
            "'X-aws-ec2-metadata-token-ttl-seconds: 300')\n"
            "ZONE=$(curl -sSf -H \"X-aws-ec2-metadata-token: $T\" "
            "\"$IMDS/meta-data/placement/availability-zone\")\n"
            "INSTANCE_ID=$(curl -sSf -H \"X-aws-ec2-metadata-token: $T\" "
            "\"$IMDS/meta-data/instance-id\")\n"
            "install -d -m 0700 " KUBEADM_DIR "/patches\n"
            "umask 077\n"
            "cat > " KUBEADM_DIR "/patches/kubeletconfiguration+merge.yaml <<'NWEOF'\n");
    nw_userdata_common_put(&s, "%s%sNWEOF\n", patch, pl && patch[pl - 1] == '\n' ? "" : "\n");
    nw_userdata_common_put(&s,
                           "cat > " KUBEADM_DIR "/join.yaml <<NWEOF\n"
                           "apiVersion: kubeadm.k8s.io/%s\n"
                           "kind: JoinConfiguration\n"
                           "discovery:\n"
                           "  bootstrapToken:\n"
                           "    apiServerEndpoint: \"%s\"\n"
                           "    token: \"%s\"\n"
                           "    caCertHashes:\n"
                           "      - \"%s\"\n"
                           "nodeRegistration:\n"
                           "  kubeletExtraArgs:\n",
                           o->kubeadm_v1beta4 ? "v1beta4" : "v1beta3", ep, o->kubeadm_token, pin);
    /* v1beta3: a map of flag to value; v1beta4: a list of {name, value} */
    const char *ind = o->kubeadm_v1beta4 ? "    - name: " : "    ";
    const char *sep = o->kubeadm_v1beta4 ? "\n      value: \"" : ": \"";
    nw_userdata_common_put(&s, "%sprovider-id%saws:///${ZONE}/${INSTANCE_ID}\"\n", ind, sep);
    if (nw_userdata_common_ipv6_node(
            o)) /* the kubelet's node address: its IPv6 one (the default is IPv4) */
        nw_userdata_common_put(&s, "%snode-ip%s::\"\n", ind, sep);
    if (nl) {
        nw_userdata_common_put(&s, "%snode-labels%s", ind, sep);
        for (int i = 0; i < nl; i++)
            nw_userdata_common_put(&s, "%s%s=%s", i ? "," : "", l[i].key, l[i].value);
        nw_userdata_common_put(&s, "\"\n");
    }
    nw_userdata_common_put(&s, "  taints:%s\n", o->ntaints ? "" : " []");
    for (int i = 0; i < o->ntaints; i++) {
        nw_userdata_common_put(&s, "    - key: \"%s\"\n", o->taints[i].key);
        if (o->taints[i].value && *o->taints[i].value)
            nw_userdata_common_put(&s, "      value: \"%s\"\n", o->taints[i].value);
        nw_userdata_common_put(&s, "      effect: \"%s\"\n", o->taints[i].effect);
    }
    nw_userdata_common_put(&s, "patches:\n"
                               "  directory: " KUBEADM_DIR "/patches\n"
                               "NWEOF\n"
                               "kubeadm join --config " KUBEADM_DIR "/join.yaml\n");
    free(patch);
    return nw_userdata_mime_finish_shell(w, &parts, &s, err);
}
