/* cli/doctor.c — cluster preflight checks. */
#include "cli/doctor.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/x509_vfy.h>
#include <regex.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "api/wellknown.h"
#include "scaler/kube/svccidr.h"
#include "scaler/kube/write.h"
#include "scaler/nodeclaim/bootstrap.h"

void nw_doctor_report_init(nw_kube_report_t *r)
{
    memset(r, 0, sizeof *r);
}

void nw_doctor_report_cleanup(nw_kube_report_t *r)
{
    free(r->v);
    memset(r, 0, sizeof *r);
}

void nw_doctor_report_add(nw_kube_report_t *r, nw_check_status_t st, const char *area,
                          const char *what, const char *fix, const char *fmt, ...)
{
    if (r->n == r->cap) {
        size_t nc = r->cap ? r->cap * 2 : 32;
        nw_kube_check_t *nv = realloc(r->v, nc * sizeof *nv);
        if (!nv)
            return;
        r->v = nv;
        r->cap = nc;
    }
    nw_kube_check_t *c = &r->v[r->n++];
    memset(c, 0, sizeof *c);
    c->status = st;
    snprintf(c->area, sizeof c->area, "%s", area);
    snprintf(c->what, sizeof c->what, "%s", what);
    snprintf(c->fix, sizeof c->fix, "%s", fix && st != NW_CHECK_OK ? fix : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->detail, sizeof c->detail, fmt, ap);
    va_end(ap);
    if (st == NW_CHECK_FAIL)
        r->failed++;
    else if (st == NW_CHECK_WARN)
        r->warned++;
}

void nw_doctor_report_print(const nw_kube_report_t *rep, FILE *f)
{
    static const char *const label[] = {"ok  ", "FAIL", "warn", "skip"};
    for (size_t i = 0; i < rep->n; i++) {
        const nw_kube_check_t *c = &rep->v[i];
        fprintf(f, "%s  %-9s %s%s%s\n", label[c->status], c->area, c->what,
                c->detail[0] ? ": " : "", c->detail);
        if (c->fix[0])
            fprintf(f, "      fix: %s\n", c->fix);
    }
    fprintf(f, "%zu checks, %zu failed, %zu warnings\n", rep->n, rep->failed, rep->warned);
}

/* ---- certificates ------------------------------------------------------------------- */

bool nw_doctor_ca_verifies(const char *bundle_pem, size_t bundle_len, const char *cert_pem,
                           char *why, size_t why_len)
{
    int ncas = 0;
    bool ok = false;
    X509_STORE *store = X509_STORE_new();
    X509_STORE_CTX *ctx = X509_STORE_CTX_new();
    STACK_OF(X509) *chain = sk_X509_new_null();
    X509 *leaf = NULL;
    BIO *b = BIO_new_mem_buf(bundle_pem, (int)bundle_len);
    if (!store || !ctx || !chain || !b) {
        snprintf(why, why_len, "out of memory");
        goto out;
    }
    X509 *x;
    while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL))) {
        X509_STORE_add_cert(store, x);
        X509_free(x);
        ncas++;
    }
    ERR_clear_error();
    BIO_free(b);
    b = NULL;
    if (!ncas) {
        if (why)
            snprintf(why, why_len, "caBundle holds no PEM certificate");
        goto out;
    }
    b = BIO_new_mem_buf(cert_pem, -1);
    leaf = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
    if (!leaf) {
        if (why)
            snprintf(why, why_len, "the serving certificate is not PEM");
        goto out;
    }
    while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL)))
        sk_X509_push(chain, x);
    ERR_clear_error();
    if (X509_STORE_CTX_init(ctx, store, leaf, chain) != 1) {
        if (why)
            snprintf(why, why_len, "cannot set up verification");
        goto out;
    }
    X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_SERVER);
    ok = X509_verify_cert(ctx) == 1;
    if (!ok && why)
        snprintf(why, why_len, "%s", X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx)));
out:
    BIO_free(b);
    X509_free(leaf);
    sk_X509_pop_free(chain, X509_free);
    X509_STORE_CTX_free(ctx);
    X509_STORE_free(store);
    return ok;
}

/* ---- checks ------------------------------------------------------------------------------- */

typedef struct {
    const char *group, *resource, *sub, *verbs; /* verbs space-separated */
    /* 0: cluster-wide; 1: in the Lease namespace; 2: in kube-system; 3: in kube-system, only
     * when an EC2NodeClass asks for the kubeadm bootstrap (the chart's
     * kubeadmBootstrap.enabled) */
    int lease_ns;
    const char *name; /* granted for this object only (resourceNames); NULL: every object */
} perm_t;

/* Every verb the scaler uses (docs/rbac.md says which code needs each); the chart's
 * and install.yaml's RBAC are checked against this table (tests/sim/test_install.py). */
static const perm_t perms[] = {
    {"", "pods", NULL, "get list watch delete", 0, NULL},
    {"", "pods", "eviction", "create", 0, NULL},
    {"", "pods", "status", "patch", 0, NULL},
    {"", "nodes", NULL, "get list watch update patch delete", 0, NULL},
    {"", "events", NULL, "create patch", 0, NULL},
    {"", "persistentvolumeclaims", NULL, "get list watch", 0, NULL},
    {"", "persistentvolumes", NULL, "get list watch", 0, NULL},
    {"", "namespaces", NULL, "get list watch", 0, NULL},
    {"storage.k8s.io", "storageclasses", NULL, "get list watch", 0, NULL},
    {"storage.k8s.io", "csinodes", NULL, "get list watch", 0, NULL},
    {"storage.k8s.io", "volumeattachments", NULL, "list", 0, NULL},
    {"karpenter.sh", "nodepools", NULL, "get list watch patch create", 0, NULL},
    {"karpenter.sh", "nodepools", "status", "update patch", 0, NULL},
    {"karpenter.sh", "nodepools", "finalizers", "update", 0, NULL},
    {"karpenter.sh", "nodeclaims", NULL, "get list watch create update patch delete", 0, NULL},
    {"karpenter.sh", "nodeclaims", "status", "update patch", 0, NULL},
    {"karpenter.k8s.aws", "ec2nodeclasses", NULL, "get list watch patch", 0, NULL},
    {"karpenter.k8s.aws", "ec2nodeclasses", "status", "update patch", 0, NULL},
    {"policy", "poddisruptionbudgets", NULL, "get list watch", 0, NULL},
    {"apps", "daemonsets", NULL, "get list watch", 0, NULL},
    {"resource.k8s.io", "resourceclaims", NULL, "get list watch", 0, NULL},
    {"resource.k8s.io", "resourceclaimtemplates", NULL, "get list watch", 0, NULL},
    {"resource.k8s.io", "deviceclasses", NULL, "get list watch", 0, NULL},
    {"coordination.k8s.io", "leases", NULL, "get create update", 1, NULL},
    {"networking.k8s.io", "networkpolicies", NULL, "list", 1, NULL},
    {"networking.k8s.io", "servicecidrs", NULL, "list", 0, NULL},
    {"", "services", NULL, "get", 2, "kube-dns"},
    {"", "configmaps", NULL, "get", 2, "kubeadm-config"},
    {"", "secrets", NULL, "create delete", 3, NULL},
};

static NW_MUST_USE nw_rc_t ssar(nw_kube_client_t *c, const char *group, const char *resource,
                                const char *sub, const char *name, const char *verb, const char *ns,
                                int *allowed, char *reason, size_t rlen, nw_err_t *err)
{
    cJSON *r = nw_json_new_object();
    nw_json_add_string(r, "apiVersion", "authorization.k8s.io/v1");
    nw_json_add_string(r, "kind", "SelfSubjectAccessReview");
    cJSON *spec = nw_json_add_object(r, "spec");
    cJSON *ra = nw_json_add_object(spec, "resourceAttributes");
    nw_json_add_string(ra, "group", group);
    nw_json_add_string(ra, "resource", resource);
    if (sub)
        nw_json_add_string(ra, "subresource", sub);
    nw_json_add_string(ra, "verb", verb);
    if (ns)
        nw_json_add_string(ra, "namespace", ns);
    if (name)
        nw_json_add_string(ra, "name", name);
    char *body = nw_json_print(r);
    cJSON_Delete(r);
    nw_kube_resp_t resp;
    nw_kube_client_resp_init(&resp);
    nw_kube_req_t req = {.method = "POST",
                         .path = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                         .body = body,
                         .body_len = body ? strlen(body) : 0,
                         .verb = "create",
                         .resource = "selfsubjectaccessreviews"};
    nw_rc_t rc = body ? nw_kube_client_do(c, &req, &resp, err) : NW_ENOMEM;
    free(body);
    if (!rc)
        rc = nw_kube_client_resp_error(&resp, "SelfSubjectAccessReview", err);
    if (!rc) {
        cJSON *o = nw_kube_client_json_parse(resp.body.data, resp.body.len);
        const cJSON *st = nw_json_get(o, "status");
        *allowed = cJSON_IsTrue(nw_json_get(st, "allowed"));
        const char *why = nw_json_str(st, "reason");
        snprintf(reason, rlen, "%s", why ? why : "");
        if (!o)
            rc = nw_err_set(err, NW_EPARSE, "", "SelfSubjectAccessReview: response is not JSON");
        cJSON_Delete(o);
    }
    nw_kube_client_resp_cleanup(&resp);
    return rc;
}

static void check_rbac(nw_kube_client_t *c, const char *lease_ns, bool kubeadm,
                       nw_kube_report_t *rep)
{
    size_t denied = 0, total = 0;
    for (size_t i = 0; i < sizeof perms / sizeof perms[0]; i++) {
        const perm_t *p = &perms[i];
        if (p->lease_ns == 3 && !kubeadm)
            continue; /* no class asks for the kubeadm bootstrap: no Secret is made */
        char verbs[96];
        snprintf(verbs, sizeof verbs, "%s", p->verbs);
        char *save = NULL;
        for (char *v = strtok_r(verbs, " ", &save); v; v = strtok_r(NULL, " ", &save)) {
            int allowed = 0;
            char reason[256] = "";
            nw_err_t err = {0};
            char what[160];
            const char *ns = p->lease_ns >= 2 ? "kube-system" : p->lease_ns ? lease_ns : NULL;
            snprintf(what, sizeof what, "%s %s%s%s%s%s%s%s%s%s%s", v,
                     p->group[0] ? p->group : "core", "/", p->resource, p->sub ? "/" : "",
                     p->sub ? p->sub : "", p->name ? " " : "", p->name ? p->name : "",
                     ns ? " (" : "", ns ? ns : "", ns ? ")" : "");
            total++;
            nw_rc_t rc = ssar(c, p->group, p->resource, p->sub, p->name, v, ns, &allowed, reason,
                              sizeof reason, &err);
            if (rc == NW_ENOTFOUND) {
                nw_doctor_report_add(
                    rep, NW_CHECK_WARN, "rbac", "permissions",
                    "enable the authorization.k8s.io/v1 API on the API server",
                    "SelfSubjectAccessReview is not served; permissions not checked");
                return;
            }
            if (rc != NW_OK) {
                nw_doctor_report_add(rep, NW_CHECK_FAIL, "rbac", what,
                                     "allow nodewarden to create selfsubjectaccessreviews "
                                     "(authorization.k8s.io), granted to every authenticated user "
                                     "by default (system:basic-user)",
                                     "cannot check: %s", err.msg);
                return;
            }
            if (!allowed) {
                denied++;
                char fix[512];
                snprintf(fix, sizeof fix,
                         "grant verb \"%s\" on resource \"%s%s%s\" (apiGroup \"%s\")%s%s to "
                         "nodewarden's identity, e.g. in the nodewarden %s from the Helm chart",
                         v, p->resource, p->sub ? "/" : "", p->sub ? p->sub : "", p->group,
                         ns ? " in namespace " : "", ns ? ns : "",
                         ns ? "Role of that namespace" : "ClusterRole");
                nw_doctor_report_add(rep, NW_CHECK_FAIL, "rbac", what, fix, "denied%s%s",
                                     reason[0] ? ": " : "", reason);
            }
        }
    }
    if (!denied)
        nw_doctor_report_add(rep, NW_CHECK_OK, "rbac", "permissions", NULL,
                             "all %zu verbs allowed (SelfSubjectAccessReview)", total);
}

static void check_crds(nw_kube_client_t *c, nw_kube_report_t *rep)
{
    static const struct {
        const char *crd, *group_path, *plural;
    } crds[] = {
        {"nodepools.karpenter.sh", "/apis/karpenter.sh/v1", "nodepools"},
        {"nodeclaims.karpenter.sh", "/apis/karpenter.sh/v1", "nodeclaims"},
        {"ec2nodeclasses.karpenter.k8s.aws", "/apis/karpenter.k8s.aws/v1", "ec2nodeclasses"},
    };
    for (size_t i = 0; i < sizeof crds / sizeof crds[0]; i++) {
        char path[256], what[128], fix[512];
        snprintf(what, sizeof what, "CRD %s", crds[i].crd);
        snprintf(fix, sizeof fix,
                 "install Karpenter's v1 CRDs: kubectl apply -f manifests/crds/ (or the Helm chart "
                 "with crds enabled); %s must serve version v1",
                 crds[i].crd);
        snprintf(path, sizeof path, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/%s",
                 crds[i].crd);
        cJSON *crd = NULL;
        nw_err_t err = {0};
        nw_rc_t rc =
            nw_kube_client_get_json(c, path, "get", "customresourcedefinitions", &crd, &err);
        if (rc == NW_OK) {
            const cJSON *vs = nw_json_get(nw_json_get(crd, "spec"), "versions");
            const cJSON *v;
            bool served = false, storage = false;
            char seen[128] = "";
            cJSON_ArrayForEach(v, vs)
            {
                const char *name = nw_json_str(v, "name");
                if (name) {
                    size_t l = strlen(seen);
                    snprintf(seen + l, sizeof seen - l, "%s%s", l ? "," : "", name);
                }
                if (name && !strcmp(name, "v1")) {
                    served = cJSON_IsTrue(nw_json_get(v, "served"));
                    storage = cJSON_IsTrue(nw_json_get(v, "storage"));
                }
            }
            cJSON_Delete(crd);
            if (served)
                nw_doctor_report_add(rep, NW_CHECK_OK, "crds", what, NULL, "v1 served%s",
                                     storage ? " (storage version)" : "");
            else
                nw_doctor_report_add(rep, NW_CHECK_FAIL, "crds", what, fix,
                                     "version v1 not served (versions: %s)",
                                     seen[0] ? seen : "none");
            continue;
        }
        /* no access to CRD objects (or not served): fall back to API discovery */
        cJSON *disc = NULL;
        nw_err_t e2 = {0};
        bool found = false;
        if (nw_kube_client_get_json(c, crds[i].group_path, "get", "discovery", &disc, &e2) ==
            NW_OK) {
            const cJSON *r;
            cJSON_ArrayForEach(r, nw_json_get(disc, "resources"))
            {
                const char *n = nw_json_str(r, "name");
                if (n && !strcmp(n, crds[i].plural))
                    found = true;
            }
        }
        cJSON_Delete(disc);
        if (found)
            nw_doctor_report_add(rep, NW_CHECK_OK, "crds", what, NULL, "v1 served (API discovery)");
        else
            nw_doctor_report_add(rep, NW_CHECK_FAIL, "crds", what, fix, "not installed: %s",
                                 rc == NW_ENOTFOUND ? "no such CustomResourceDefinition" : err.msg);
    }
}

static void check_webhook_config(nw_kube_client_t *c, const char *kind_plural, const char *name,
                                 const char *serving_pem, nw_kube_report_t *rep)
{
    char path[256], what[160];
    snprintf(path, sizeof path, "/apis/admissionregistration.k8s.io/v1/%s/%s", kind_plural, name);
    snprintf(what, sizeof what, "%s %s",
             strstr(kind_plural, "validating") ? "ValidatingWebhookConfiguration"
                                               : "MutatingWebhookConfiguration",
             name);
    cJSON *cfg = NULL;
    nw_err_t err = {0};
    nw_rc_t rc = nw_kube_client_get_json(c, path, "get", kind_plural, &cfg, &err);
    if (rc) {
        nw_doctor_report_add(rep, NW_CHECK_FAIL, "webhooks", what,
                             "install nodewarden's webhook configurations (Helm chart, or "
                             "manifests/chart templates) with the caBundle of nodewarden's CA",
                             "%s", rc == NW_ENOTFOUND ? "not registered" : err.msg);
        return;
    }
    const cJSON *hooks = nw_json_get(cfg, "webhooks");
    int n = 0, bad = 0;
    const cJSON *h;
    cJSON_ArrayForEach(h, hooks)
    {
        n++;
        const char *hn = nw_json_str(h, "name");
        const cJSON *cc = nw_json_get(h, "clientConfig");
        const char *b64 = nw_json_str(cc, "caBundle");
        char hw[200];
        snprintf(hw, sizeof hw, "%s webhook %s", name, hn ? hn : "?");
        if (!b64 || !b64[0]) {
            bad++;
            nw_doctor_report_add(
                rep, NW_CHECK_FAIL, "webhooks", hw,
                "set clientConfig.caBundle to base64 of nodewarden's CA (cert-manager "
                "annotation cert-manager.io/inject-ca-from, or the Helm chart)",
                "empty caBundle: the API server will use its system roots");
            continue;
        }
        size_t bl;
        char *bundle = nw_kube_config_b64_decode(b64, &bl);
        if (!bundle) {
            bad++;
            nw_doctor_report_add(rep, NW_CHECK_FAIL, "webhooks", hw,
                                 "caBundle must be base64 of a PEM bundle",
                                 "caBundle is not base64");
            continue;
        }
        char why[256] = "";
        if (serving_pem && !nw_doctor_ca_verifies(bundle, bl, serving_pem, why, sizeof why)) {
            bad++;
            nw_doctor_report_add(
                rep, NW_CHECK_FAIL, "webhooks", hw,
                "put the CA that signed nodewarden's serving certificate "
                "(webhook.tlsCert) into caBundle, or re-issue the certificate from "
                "that CA",
                "caBundle does not verify nodewarden's serving certificate: %s", why);
        } else if (!serving_pem && !strstr(bundle, "-----BEGIN CERTIFICATE-----")) {
            bad++;
            nw_doctor_report_add(rep, NW_CHECK_FAIL, "webhooks", hw,
                                 "caBundle must be base64 of a PEM bundle",
                                 "caBundle holds no PEM certificate");
        }
        free(bundle);
    }
    cJSON_Delete(cfg);
    if (n == 0)
        nw_doctor_report_add(rep, NW_CHECK_FAIL, "webhooks", what,
                             "re-install the configuration from the Helm chart", "has no webhooks");
    else if (!bad)
        nw_doctor_report_add(rep, NW_CHECK_OK, "webhooks", what, NULL, "%d webhooks, caBundle %s",
                             n, serving_pem ? "verifies the serving certificate" : "present");
}

static cJSON *list_items(nw_kube_client_t *c, const nw_kube_res_t *res, nw_err_t *err)
{
    nw_buf_t p;
    nw_buf_init(&p, 512);
    cJSON *out = NULL;
    if (nw_kube_client_path(&p, res, NULL, NULL, NULL) == NW_OK)
        /* a failure leaves out NULL: reported below */
        (void)nw_kube_client_get_json(c, nw_buf_str(&p), "list", res->plural, &out, err);
    nw_buf_cleanup(&p);
    if (!out)
        return NULL;
    cJSON *items = cJSON_DetachItemFromObjectCaseSensitive(out, "items");
    cJSON_Delete(out);
    return items ? items : nw_json_new_array();
}

static const char *mstr(const cJSON *o, const char *k)
{
    const char *s = cJSON_GetStringValue(nw_json_get(nw_json_get(o, "metadata"), k));
    return s ? s : "";
}

static void check_nodepools(nw_kube_client_t *c, nw_kube_report_t *rep)
{
    nw_err_t err = {0};
    cJSON *pools = list_items(c, &nw_kube_client_res_nodepools, &err);
    if (!pools) {
        nw_doctor_report_add(rep, NW_CHECK_SKIP, "nodepools", "NodePool references", NULL,
                             "cannot list NodePools: %s", err.msg);
        return;
    }
    cJSON *classes = list_items(c, &nw_kube_client_res_ec2nodeclasses, &err);
    int n = 0, bad = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, pools)
    {
        n++;
        const cJSON *ref = nw_json_get(
            nw_json_get(nw_json_get(nw_json_get(p, "spec"), "template"), "spec"), "nodeClassRef");
        const char *kind = nw_json_str(ref, "kind");
        const char *name = nw_json_str(ref, "name");
        char what[160];
        snprintf(what, sizeof what, "NodePool %s", mstr(p, "name"));
        if (!name || !kind || strcmp(kind, "EC2NodeClass") != 0) {
            bad++;
            nw_doctor_report_add(
                rep, NW_CHECK_FAIL, "nodepools", what,
                "set spec.template.spec.nodeClassRef to {group: karpenter.k8s.aws, "
                "kind: EC2NodeClass, name: <an EC2NodeClass>}",
                "nodeClassRef does not name an EC2NodeClass");
            continue;
        }
        bool found = false;
        const cJSON *k;
        cJSON_ArrayForEach(k, classes)
        {
            if (!strcmp(mstr(k, "name"), name))
                found = true;
        }
        if (!found) {
            bad++;
            char fix[300];
            snprintf(fix, sizeof fix,
                     "create EC2NodeClass \"%s\" or point the NodePool's nodeClassRef at an "
                     "existing one",
                     name);
            nw_doctor_report_add(rep, NW_CHECK_FAIL, "nodepools", what, fix,
                                 "nodeClassRef names EC2NodeClass \"%s\", which does not exist",
                                 name);
        }
    }
    if (!bad)
        nw_doctor_report_add(rep, NW_CHECK_OK, "nodepools", "NodePool references", NULL,
                             "%d NodePools, each naming an existing EC2NodeClass", n);
    cJSON_Delete(pools);
    cJSON_Delete(classes);
}

static void check_nodes(nw_kube_client_t *c, nw_kube_report_t *rep)
{
    nw_err_t err = {0};
    cJSON *nodes = list_items(c, &nw_kube_client_res_nodes, &err);
    if (!nodes) {
        nw_doctor_report_add(rep, NW_CHECK_SKIP, "nodes", "providerIDs", NULL,
                             "cannot list nodes: %s", err.msg);
        return;
    }
    cJSON *claims = list_items(c, &nw_kube_client_res_nodeclaims, &err);
    regex_t re;
    regcomp(&re, "^aws:///[a-z0-9-]+/i-[0-9a-f]+$", REG_EXTENDED | REG_NOSUB);
    int n = 0, bad = 0;
    const cJSON *node;
    cJSON_ArrayForEach(node, nodes)
    {
        const cJSON *labels = nw_json_get(nw_json_get(node, "metadata"), "labels");
        if (!nw_json_get(labels, NW_LABEL_NODEPOOL))
            continue; /* not launched by nodewarden */
        n++;
        const char *name = mstr(node, "name");
        const char *pid = nw_json_str(nw_json_get(node, "spec"), "providerID");
        char what[160];
        snprintf(what, sizeof what, "node %s", name);
        if (!pid || regexec(&re, pid, 0, NULL, 0) != 0) {
            bad++;
            nw_doctor_report_add(
                rep, NW_CHECK_FAIL, "nodes", what,
                "the kubelet must register with --provider-id aws:///<zone>/<instance-id> "
                "(set by nodewarden's userData; check the AMI's bootstrap and "
                "kubeadm JoinConfiguration)",
                "providerID \"%s\" is not aws:///<zone>/<instance-id>", pid ? pid : "");
            continue;
        }
        /* the NodeClaim for this node, if any, must agree */
        const cJSON *cl;
        cJSON_ArrayForEach(cl, claims)
        {
            const cJSON *st = nw_json_get(cl, "status");
            const char *nn = nw_json_str(st, "nodeName");
            const char *cp = nw_json_str(st, "providerID");
            if (nn && !strcmp(nn, name) && cp && strcmp(cp, pid) != 0) {
                bad++;
                nw_doctor_report_add(
                    rep, NW_CHECK_FAIL, "nodes", what,
                    "delete the stray node or NodeClaim; nodewarden matches nodes to "
                    "NodeClaims by providerID",
                    "providerID %s differs from NodeClaim %s's %s", pid, mstr(cl, "name"), cp);
            }
        }
    }
    regfree(&re);
    if (!bad)
        nw_doctor_report_add(rep, NW_CHECK_OK, "nodes", "providerIDs", NULL,
                             "%d nodes launched by nodewarden, all with aws:/// providerIDs", n);
    cJSON_Delete(nodes);
    cJSON_Delete(claims);
}

/* ---- the webhook, through the API server ----------------------------------------------- */

#define PROBE_NAME "nodewarden-doctor-dry-run"
#define PROBE_POOL                                                                                 \
    "{\"apiVersion\":\"karpenter.sh/"                                                              \
    "v1\",\"kind\":\"NodePool\",\"metadata\":{\"name\":\"" PROBE_NAME                              \
    "\"},\"spec\":{\"template\":{\"spec\":{\"nodeClassRef\":{\"group\":\"karpenter.k8s.aws\","     \
    "\"kind\":\"EC2NodeClass\",\"name\":\"" PROBE_NAME "\"},\"requirements\":[{\"key\":"           \
    "\"kubernetes.io/arch\",\"operator\":\"In\",\"values\":[\"amd64\"]}]}}}}"

/* The NetworkPolicies of namespace ns that admit ingress to some of its pods, as one line
 * ("a (from 0.0.0.0/0 except 10.244.0.0/16), b"); 0 when none or unreadable (why says). */
static int ingress_policies(nw_kube_client_t *c, const char *ns, char *out, size_t len, char *why,
                            size_t wlen)
{
    char path[300];
    snprintf(path, sizeof path, "/apis/networking.k8s.io/v1/namespaces/%s/networkpolicies", ns);
    cJSON *l = NULL;
    nw_err_t err = {0};
    out[0] = why[0] = 0;
    if (nw_kube_client_get_json(c, path, "list", "networkpolicies", &l, &err) != NW_OK) {
        snprintf(why, wlen, "%.250s", err.msg);
        return 0;
    }
    int n = 0;
    size_t off = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, nw_json_get(l, "items"))
    {
        const cJSON *types = nw_json_get(nw_json_get(p, "spec"), "policyTypes"), *t;
        bool ingress = !cJSON_IsArray(types) || cJSON_GetArraySize(types) == 0;
        cJSON_ArrayForEach(t, types)
        {
            ingress |= cJSON_IsString(t) && strcmp(t->valuestring, "Ingress") == 0;
        }
        if (!ingress || off + 1 >= len)
            continue;
        n++;
        off += (size_t)snprintf(out + off, len - off, "%s%s", n > 1 ? ", " : "", mstr(p, "name"));
        const cJSON *rule, *from;
        int first = 1;
        cJSON_ArrayForEach(rule, nw_json_get(nw_json_get(p, "spec"), "ingress"))
        {
            cJSON_ArrayForEach(from, nw_json_get(rule, "from"))
            {
                const cJSON *ib = nw_json_get(from, "ipBlock");
                const char *cidr = nw_json_str(ib, "cidr");
                if (!cidr || off + 1 >= len)
                    continue;
                off +=
                    (size_t)snprintf(out + off, len - off, "%s%s", first ? " (from " : ", ", cidr);
                first = 0;
                const cJSON *ex;
                int ef = 1;
                cJSON_ArrayForEach(ex, nw_json_get(ib, "except"))
                {
                    if (cJSON_IsString(ex) && off + 1 < len)
                        off += (size_t)snprintf(out + off, len - off, "%s%s", ef ? " except " : " ",
                                                ex->valuestring);
                    ef = 0;
                }
            }
        }
        if (!first && off + 1 < len)
            off += (size_t)snprintf(out + off, len - off, ")");
    }
    cJSON_Delete(l);
    return n;
}

/* The webhook Service's namespace and name, from the validating configuration. */
static void webhook_service(nw_kube_client_t *c, const char *vname, const char *fallback_ns,
                            char *ns, size_t nlen, char *svc, size_t slen)
{
    snprintf(ns, nlen, "%s", fallback_ns ? fallback_ns : "");
    svc[0] = 0;
    char path[300];
    snprintf(path, sizeof path,
             "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/%s", vname);
    cJSON *cfg = NULL;
    nw_err_t err = {0};
    if (nw_kube_client_get_json(c, path, "get", "validatingwebhookconfigurations", &cfg, &err) !=
        NW_OK)
        return;
    const cJSON *wh;
    cJSON_ArrayForEach(wh, nw_json_get(cfg, "webhooks"))
    {
        const cJSON *s = nw_json_get(nw_json_get(wh, "clientConfig"), "service");
        if (nw_json_str(s, "namespace") && nw_json_str(s, "name")) {
            snprintf(ns, nlen, "%s", nw_json_str(s, "namespace"));
            snprintf(svc, slen, "%s", nw_json_str(s, "name"));
            break;
        }
    }
    cJSON_Delete(cfg);
}

/* A dry-run NodePool create (dryRun=All: admission runs, nothing is stored): the API server
 * calls the mutating and validating webhooks as for a real write. An answer from the
 * webhooks (admitted, refused by them, or the name taken) is a round trip; "failed calling
 * webhook" is not, and the NetworkPolicies of the webhook's namespace are named as the
 * likely cause (the chart's default one admits the API server by address: on CNIs whose host
 * traffic arrives from inside the pod range, tunnel modes, it arrives as a pod would). */
static void check_webhook_roundtrip(nw_kube_client_t *c, const char *vname, const char *lease_ns,
                                    nw_kube_report_t *rep)
{
    const char *what = "webhook round trip (dry-run NodePool create through the API server)";
    nw_kube_resp_t resp;
    nw_kube_client_resp_init(&resp);
    nw_kube_req_t req = {.method = "POST",
                         .path = "/apis/karpenter.sh/v1/nodepools?dryRun=All",
                         .body = PROBE_POOL,
                         .body_len = strlen(PROBE_POOL),
                         .verb = "create",
                         .resource = "nodepools"};
    nw_err_t err = {0};
    nw_rc_t rc = nw_kube_client_do(c, &req, &resp, &err);
    long code = resp.code;
    char msg[512];
    snprintf(msg, sizeof msg, "%s", rc == NW_OK ? resp.message : err.msg);
    nw_kube_client_resp_cleanup(&resp);
    bool hook_failed = strstr(msg, "failed calling webhook") != NULL;
    if (rc == NW_OK && (code == 200 || code == 201 || code == 409 ||
                        (!hook_failed && strstr(msg, "admission webhook")))) {
        nw_doctor_report_add(rep, NW_CHECK_OK, "webhooks", what, NULL,
                             "the API server called the webhooks and had their answer (%ld%s%s)",
                             code, code >= 400 ? ": " : "", code >= 400 ? msg : "");
        return;
    }
    if (rc == NW_OK && code == 403 && !hook_failed) {
        nw_doctor_report_add(rep, NW_CHECK_WARN, "webhooks", what,
                             "run doctor with an identity that may create NodePools (the chart's "
                             "ClusterRole grants it for this dry run)",
                             "not checked: %s", msg);
        return;
    }
    char ns[128], svc[128], pols[400] = "", why[300] = "";
    webhook_service(c, vname, lease_ns, ns, sizeof ns, svc, sizeof svc);
    int np = ns[0] ? ingress_policies(c, ns, pols, sizeof pols, why, sizeof why) : 0;
    char fix[1024];
    if (np)
        snprintf(fix, sizeof fix,
                 "NetworkPolicy %.200s in %s admits the webhook port by address: on CNIs whose "
                 "host traffic arrives from inside the pod range (tunnel modes) the API "
                 "server's calls come from a pod-range address. Add that range to "
                 "networkPolicy.apiServerCIDRs, empty networkPolicy.podCIDRs, or set "
                 "networkPolicy.enabled=false",
                 pols, ns);
    else
        snprintf(fix, sizeof fix,
                 "check that nodewarden's pods are Ready, the Service %s/%s has endpoints, and "
                 "the API server can reach the pod network on the webhook port%s%s",
                 ns, svc[0] ? svc : "nodewarden", why[0] ? " (NetworkPolicies unread: " : "",
                 why[0] ? "see rbac)" : "");
    nw_doctor_report_add(rep, NW_CHECK_FAIL, "webhooks", what, fix, "%s%s%s",
                         code ? "" : "no answer: ", msg,
                         np ? "; a NetworkPolicy may block it" : "");
}

/* Does the class's bootstrap need the service CIDR (amiFamily AL2023, or an al2023 alias)? */
static bool needs_cidr(const cJSON *k)
{
    const cJSON *spec = nw_json_get(k, "spec");
    const char *fam = nw_json_str(spec, "amiFamily");
    if (fam)
        return strcmp(fam, "AL2023") == 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, nw_json_get(spec, "amiSelectorTerms"))
    {
        const char *a = nw_json_str(t, "alias");
        if (a && strncmp(a, "al2023@", 7) == 0)
            return true;
    }
    return false;
}

/* What to do about a class whose Ready condition is False, by its reason. */
static const char *class_fix(const char *reason)
{
    if (!reason)
        reason = "";
    if (strcmp(reason, "ClusterCIDRNotFound") == 0)
        return "on Kubernetes 1.33+ the API server publishes its ServiceCIDR objects (nodewarden "
               "needs list on servicecidrs, networking.k8s.io); kubeadm keeps it in "
               "kube-system/kubeadm-config (get on that ConfigMap); otherwise set "
               "settings.clusterCIDR to the cluster's service CIDR";
    if (strcmp(reason, "InstanceProfileCreationFailed") == 0)
        return "create the IAM role spec.role names (manifests/aws/), or name an existing "
               "instance profile in spec.instanceProfile";
    if (strcmp(reason, "SubnetsNotFound") == 0 || strcmp(reason, "SecurityGroupsNotFound") == 0 ||
        strcmp(reason, "AMINotFound") == 0)
        return "fix the EC2NodeClass's selector terms (or the tags of the subnets, security "
               "groups and AMIs they select); `nodewarden aws resolve` shows what they find";
    return "see the condition's message; `kubectl describe ec2nodeclass` shows every condition";
}

/* Every EC2NodeClass's readiness as the scaler wrote it (a class that is not ready gets no
 * NodeClaims), and the service CIDR the AL2023 ones need; *kubeadm: some class asks for the
 * kubeadm bootstrap. */
static void check_classes(nw_kube_client_t *c, const char *cluster_cidr, bool *kubeadm,
                          nw_kube_report_t *rep)
{
    nw_err_t err = {0};
    *kubeadm = false;
    cJSON *classes = list_items(c, &nw_kube_client_res_ec2nodeclasses, &err);
    if (!classes) {
        nw_doctor_report_add(rep, NW_CHECK_SKIP, "classes", "EC2NodeClasses", NULL,
                             "cannot list EC2NodeClasses: %s", err.msg);
        return;
    }
    int n = 0, bad = 0, al2023 = 0;
    const cJSON *k;
    cJSON_ArrayForEach(k, classes)
    {
        n++;
        *kubeadm |= nw_bootstrap_wanted(k);
        al2023 += needs_cidr(k);
        const char *st = nw_json_condition(k, "Ready");
        char what[160];
        snprintf(what, sizeof what, "EC2NodeClass %s", mstr(k, "name"));
        if (st && strcmp(st, "False") == 0) {
            const cJSON *cd, *rd = NULL;
            cJSON_ArrayForEach(cd, nw_json_get(nw_json_get(k, "status"), "conditions"))
            {
                const char *t = nw_json_str(cd, "type");
                if (t && strcmp(t, "Ready") == 0)
                    rd = cd;
            }
            const char *reason = nw_json_str(rd, "reason"), *msg = nw_json_str(rd, "message");
            bad++;
            nw_doctor_report_add(rep, NW_CHECK_FAIL, "classes", what, class_fix(reason),
                                 "not ready, so its NodePools get no NodeClaims: %s: %s",
                                 reason ? reason : "", msg ? msg : "");
        } else if (!st) {
            nw_doctor_report_add(rep, NW_CHECK_WARN, "classes", what,
                                 "start the scaler (it resolves every class and writes its "
                                 "status), or wait for it",
                                 "no Ready condition yet");
        }
    }
    if (!bad)
        nw_doctor_report_add(rep, NW_CHECK_OK, "classes", "EC2NodeClasses", NULL,
                             "%d EC2NodeClasses, none reported not ready", n);
    cJSON_Delete(classes);
    char cidr[64] = "", src[128] = "";
    nw_err_clear(&err);
    if (cluster_cidr && *cluster_cidr)
        nw_doctor_report_add(rep, NW_CHECK_OK, "classes", "service CIDR", NULL,
                             "%s (settings.clusterCIDR)", cluster_cidr);
    else if (nw_svccidr_discover(c, cidr, sizeof cidr, src, sizeof src, &err) == NW_OK)
        nw_doctor_report_add(rep, NW_CHECK_OK, "classes", "service CIDR", NULL, "%s (%s)%s", cidr,
                             src, al2023 ? ", for AL2023's NodeConfig" : "");
    else
        nw_doctor_report_add(rep, al2023 ? NW_CHECK_FAIL : NW_CHECK_OK, "classes", "service CIDR",
                             al2023 ? class_fix("ClusterCIDRNotFound") : NULL, "%s%s", err.msg,
                             al2023 ? "; the AL2023 classes cannot launch"
                                    : " (no class needs it: only AL2023's NodeConfig does)");
}

nw_rc_t nw_doctor_run(nw_kube_client_t *c, const nw_kube_doctor_opts_t *opts, nw_kube_report_t *rep)
{
    const nw_kube_config_t *cfg = nw_kube_client_config(c);
    nw_kube_doctor_opts_t o = {0};
    if (opts)
        o = *opts;
    if (!o.validating_name)
        o.validating_name = "nodewarden-validating";
    if (!o.mutating_name)
        o.mutating_name = "nodewarden-mutating";
    if (!o.lease_namespace)
        o.lease_namespace = cfg->namespace;

    /* api: reachability and credentials */
    cJSON *v = NULL;
    nw_err_t err = {0};
    char what[300];
    snprintf(what, sizeof what, "API server %s (context %s)", cfg->server, cfg->context);
    nw_rc_t rc = nw_kube_client_get_json(c, "/api", "get", "discovery", &v, &err);
    cJSON_Delete(v);
    if (rc != NW_OK) {
        const char *fix =
            strncmp(err.path, "users[].user.exec", 17) == 0
                ? "the kubeconfig's exec credential plugin gave no credentials: run its "
                  "command yourself (with KUBERNETES_EXEC_INFO if it needs it), log in "
                  "again or install it, as its message says"
            : strstr(err.msg, "HTTP 401")
                ? "the credentials were rejected: renew the token or client "
                  "certificate in the kubeconfig (or the ServiceAccount token)"
            : strstr(err.msg, "SSL") || strstr(err.msg, "certificate")
                ? "TLS failed: check certificate-authority(-data) / the in-cluster "
                  "ca.crt, and the server name the certificate was issued for"
                : "check kubernetes.kubeconfig / --kubeconfig, the server URL and the "
                  "network path to the API server";
        nw_doctor_report_add(rep, NW_CHECK_FAIL, "api", what, fix, "%s", err.msg);
        const char *areas[] = {"rbac", "crds", "webhooks", "classes", "nodepools", "nodes"};
        for (size_t i = 0; i < 6; i++)
            nw_doctor_report_add(rep, NW_CHECK_SKIP, areas[i], "skipped", NULL,
                                 "the API server is not usable");
        return NW_OK;
    }
    nw_doctor_report_add(rep, NW_CHECK_OK, "api", what, NULL, "reachable, credentials accepted");
    bool kubeadm = false;
    nw_kube_report_t classes;
    nw_doctor_report_init(&classes);
    check_classes(c, o.cluster_cidr, &kubeadm, &classes);
    check_rbac(c, o.lease_namespace, kubeadm, rep);
    check_crds(c, rep);
    check_webhook_config(c, "validatingwebhookconfigurations", o.validating_name,
                         o.serving_cert_pem, rep);
    check_webhook_config(c, "mutatingwebhookconfigurations", o.mutating_name, o.serving_cert_pem,
                         rep);
    check_webhook_roundtrip(c, o.validating_name, o.lease_namespace, rep);
    for (size_t i = 0; i < classes.n; i++) /* in the order the header lists the checks */
        nw_doctor_report_add(rep, classes.v[i].status, classes.v[i].area, classes.v[i].what,
                             classes.v[i].fix[0] ? classes.v[i].fix : NULL, "%s",
                             classes.v[i].detail);
    nw_doctor_report_cleanup(&classes);
    check_nodepools(c, rep);
    check_nodes(c, rep);
    return NW_OK;
}
