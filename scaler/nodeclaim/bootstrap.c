/* scaler/nodeclaim/bootstrap.c — the kubeadm bootstrap tokens; see bootstrap.h. */
#include "scaler/nodeclaim/bootstrap.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "common/json.h"
#include "common/log.h"
#include "scaler/cloud/kubelet.h"
#include "scaler/kube/write.h"

static const char B36[] = "abcdefghijklmnopqrstuvwxyz0123456789";

static unsigned char key[32];
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static int key_ok;

static void key_init(void)
{
    key_ok = RAND_bytes(key, sizeof key) == 1;
}

bool nw_bootstrap_wanted(const cJSON *nodeclass)
{
    const char *v = nw_json_str(nw_json_get(nw_json_get(nodeclass, "metadata"), "annotations"),
                                NW_BOOT_ANNOTATION);
    if (!v || strcmp(v, "kubeadm") != 0)
        return false;
    nw_ami_family_t f = nw_kubelet_ami_family(nodeclass);
    return f == NW_AMI_CUSTOM || f == NW_AMI_WINDOWS;
}

/* n characters of [a-z0-9] from a digest */
static void b36(const unsigned char *d, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = B36[d[i] % 36];
    out[n] = 0;
}

void nw_bootstrap_token_id(const char *uid, char id[7])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int ml = 0;
    char in[300];
    int n = snprintf(in, sizeof in, "nodewarden-bootstrap-id:%s", uid ? uid : "");
    EVP_Digest(in, (size_t)n, md, &ml, EVP_sha256(), NULL);
    b36(md, 6, id);
}

static cJSON *token_secret(const char *id, const char *secret, const char *claim,
                           const char *expiration)
{
    char name[64], desc[400];
    snprintf(name, sizeof name, "bootstrap-token-%s", id);
    snprintf(desc, sizeof desc, "nodewarden: kubeadm join of NodeClaim %s", claim);
    const char *kv[][2] = {{"token-id", id},
                           {"token-secret", secret},
                           {"expiration", expiration},
                           {"usage-bootstrap-authentication", "true"},
                           {"usage-bootstrap-signing", "true"},
                           {"auth-extra-groups", NW_BOOT_GROUP},
                           {"description", desc}};
    cJSON *s = nw_json_new_object();
    nw_json_add_string(s, "apiVersion", "v1");
    nw_json_add_string(s, "kind", "Secret");
    cJSON *md = nw_json_add_object(s, "metadata");
    nw_json_add_string(md, "name", name);
    nw_json_add_string(md, "namespace", NW_BOOT_NAMESPACE);
    cJSON *lb = nw_json_add_object(md, "labels");
    nw_json_add_string(lb, NW_BOOT_LABEL, claim);
    nw_json_add_string(lb, "app.kubernetes.io/managed-by", "nodewarden");
    nw_json_add_string(s, "type", "bootstrap.kubernetes.io/token");
    cJSON *data = nw_json_add_object(s, "data");
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++) {
        size_t n = strlen(kv[i][1]);
        char b64[1024];
        if (4 * ((n + 2) / 3) + 1 > sizeof b64)
            n = 0;
        EVP_EncodeBlock((unsigned char *)b64, (const unsigned char *)kv[i][1], (int)n);
        nw_json_add_string(data, kv[i][0], b64);
    }
    return s;
}

/* the token's id and secret of the NodeClaim nc in this process */
static NW_MUST_USE nw_rc_t id_secret(const cJSON *nc, char id[7], char secret[17], nw_err_t *err)
{
    const char *uid = nw_json_str_at(nc, "metadata.uid");
    const char *name = nw_json_str_at(nc, "metadata.name");
    if (!uid || !*uid || !name)
        return nw_err_set(err, NW_EINVAL, "metadata.uid",
                          "the NodeClaim has no uid: no bootstrap token can be minted");
    pthread_once(&key_once, key_init);
    if (!key_ok)
        return nw_err_set(err, NW_EINVAL, "bootstrap", "no random bytes for the token key");
    nw_bootstrap_token_id(uid, id);
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int ml = 0;
    if (!HMAC(EVP_sha256(), key, sizeof key, (const unsigned char *)uid, strlen(uid), md, &ml) ||
        ml < 16)
        return nw_err_set(err, NW_EINVAL, "bootstrap", "HMAC failed");
    b36(md, 16, secret);
    return NW_OK;
}

nw_rc_t nw_bootstrap_token(const cJSON *nc, char token[NW_BOOT_TOKEN_MAX], nw_err_t *err)
{
    token[0] = 0;
    char id[7], secret[17];
    nw_rc_t rc = id_secret(nc, id, secret, err);
    if (rc == NW_OK)
        snprintf(token, NW_BOOT_TOKEN_MAX, "%s.%s", id, secret);
    return rc;
}

nw_rc_t nw_bootstrap_mint(nw_kube_client_t *kube, const cJSON *nc, int64_t now_ns, int64_t ttl_ns,
                          char token[NW_BOOT_TOKEN_MAX], nw_err_t *err)
{
    token[0] = 0;
    const char *name = nw_json_str_at(nc, "metadata.name");
    char id[7], secret[17];
    nw_rc_t rc0 = id_secret(nc, id, secret, err);
    if (rc0 != NW_OK)
        return rc0;
    char exp[32];
    nw_clock_time_format(now_ns + ttl_ns, exp, sizeof exp);
    cJSON *s = token_secret(id, secret, name, exp);
    if (!s)
        return nw_err_set(err, NW_ENOMEM, "bootstrap", "out of memory");
    nw_rc_t rc =
        nw_kube_write_create(kube, &nw_kube_client_res_secrets, NW_BOOT_NAMESPACE, s, NULL, err);
    if (rc == NW_ECONFLICT) {
        /* from an earlier try, perhaps an earlier process (another secret): replace it */
        char sn[64];
        snprintf(sn, sizeof sn, "bootstrap-token-%s", id);
        nw_err_clear(err);
        rc = nw_kube_write_delete(kube, &nw_kube_client_res_secrets, NW_BOOT_NAMESPACE, sn, NULL,
                                  NULL, err);
        if (rc == NW_OK)
            rc = nw_kube_write_create(kube, &nw_kube_client_res_secrets, NW_BOOT_NAMESPACE, s, NULL,
                                      err);
    }
    cJSON_Delete(s);
    if (rc == NW_EFORBIDDEN)
        return nw_err_set(err, rc, "bootstrap",
                          "nodewarden may not create the bootstrap token Secret in kube-system: "
                          "install the chart with --set kubeadmBootstrap.enabled=true (its Role "
                          "<release>-bootstrap-tokens; docs/rbac.md)");
    if (rc != NW_OK)
        return rc;
    snprintf(token, NW_BOOT_TOKEN_MAX, "%s.%s", id, secret);
    char sn[64];
    snprintf(sn, sizeof sn, "bootstrap-token-%s", id);
    nw_log_info("bootstrap", "bootstrap token Secret created", NW_LS("nodeclaim", name),
                NW_LS("name", sn), NW_LS("expiration", exp));
    return NW_OK;
}

nw_rc_t nw_bootstrap_delete(nw_kube_client_t *kube, const char *uid, nw_err_t *err)
{
    char id[7], sn[64];
    nw_bootstrap_token_id(uid, id);
    snprintf(sn, sizeof sn, "bootstrap-token-%s", id);
    int gone = 0;
    nw_rc_t rc = nw_kube_write_delete(kube, &nw_kube_client_res_secrets, NW_BOOT_NAMESPACE, sn,
                                      NULL, &gone, err);
    if (rc == NW_OK && !gone)
        nw_log_info("bootstrap", "bootstrap token Secret deleted", NW_LS("name", sn));
    return rc;
}
