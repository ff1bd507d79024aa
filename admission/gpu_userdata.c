/* admission/gpu_userdata.c — does an EC2NodeClass's userData register the kubelet with
 * the GPU taint (admission/gpu.h)? */
#include "admission/gpu.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission/gpu_int.h"
#include "common/json.h"
#include "common/yaml.h"
#include "scaler/cloud/kubelet.h"

/* ---- cross-object: the EC2NodeClass userData of a GPU pool ---------------------- */

/* Is the class's taint (its key, any value, the policy's effect) in a comma-separated
 * taint list ("k=v:Effect,k2:Effect")? */
static bool taint_list_has(const nw_gpu_policy_t *p, const nw_accel_class_t *c, const char *s,
                           size_t n)
{
    const char *eff = nw_taints_effect_str(p->taint_effect);
    size_t kl = strlen(c->taint_key), el = strlen(eff);
    const char *end = s + n;
    while (s < end) {
        const char *comma = memchr(s, ',', (size_t)(end - s));
        const char *e = comma ? comma : end;
        /* trim spaces and quotes */
        while (s < e && (*s == ' ' || *s == '"' || *s == '\'' || *s == '['))
            s++;
        const char *t = e;
        while (t > s && (t[-1] == ' ' || t[-1] == '"' || t[-1] == '\'' || t[-1] == ']'))
            t--;
        /* key, then "=value" or nothing, then ":Effect" */
        size_t len = (size_t)(t - s);
        if (len >= kl + 1 + el && memcmp(s, c->taint_key, kl) == 0 && t[-(long)el - 1] == ':' &&
            memcmp(t - el, eff, el) == 0) {
            size_t mid = len - kl - el - 1; /* "=value" between the key and ":Effect" */
            if (mid == 0 || (s[kl] == '=' && !memchr(s + kl, ':', mid)))
                return true;
        }
        s = comma ? comma + 1 : end;
    }
    return false;
}

/* ---- the YAML side: KubeletConfiguration registerWithTaints, kubeadm
 * nodeRegistration.taints, read with common/yaml.h (libyaml) ---------------------------- */

/* A scalar as text for comparison ("true" for a YAML boolean true); NULL if absent. */
static const char *scalar_text(const cJSON *v, char *buf, size_t n)
{
    if (cJSON_IsString(v))
        return v->valuestring;
    if (cJSON_IsBool(v))
        return cJSON_IsTrue(v) ? "true" : "false";
    if (cJSON_IsNumber(v)) {
        snprintf(buf, n, "%g", v->valuedouble);
        return buf;
    }
    return NULL;
}

/* Is one taint object {key, value, effect} the class's taint (its key, any value, the
 * policy's effect)? */
static bool taint_obj_is(const nw_gpu_policy_t *p, const nw_accel_class_t *c, const cJSON *t)
{
    char kb[32], eb[32];
    const char *k = scalar_text(nw_json_get(t, "key"), kb, sizeof kb);
    const char *e = scalar_text(nw_json_get(t, "effect"), eb, sizeof eb);
    return k && e && strcmp(k, c->taint_key) == 0 &&
           strcmp(e, nw_taints_effect_str(p->taint_effect)) == 0;
}

/* Anywhere in the document: a `registerWithTaints` (KubeletConfiguration) or `taints`
 * (kubeadm nodeRegistration) list holding the policy's taint. */
static bool doc_registers_taint(const nw_gpu_policy_t *p, const nw_accel_class_t *c, const cJSON *j,
                                int depth)
{
    if (!j || depth > 32)
        return false;
    for (const cJSON *k = j->child; k; k = k->next) {
        if (cJSON_IsObject(j) && k->string && cJSON_IsArray(k) &&
            (strcmp(k->string, "registerWithTaints") == 0 || strcmp(k->string, "taints") == 0)) {
            for (const cJSON *t = k->child; t; t = t->next)
                if (cJSON_IsObject(t) && taint_obj_is(p, c, t))
                    return true;
        }
        if ((cJSON_IsObject(k) || cJSON_IsArray(k)) && doc_registers_taint(p, c, k, depth + 1))
            return true;
    }
    return false;
}

/* Parse text[0..len) as a YAML stream; does any document register the taint? Text that
 * is not YAML (a shell script) is simply no match. */
static bool yaml_registers_taint(const nw_gpu_policy_t *p, const nw_accel_class_t *c,
                                 const char *text, size_t len)
{
    cJSON **docs = NULL;
    size_t nd = 0;
    if (len == 0 || nw_yaml_load_docs(text, len, &docs, &nd, NULL) != NW_OK)
        return false;
    bool found = false;
    for (size_t i = 0; i < nd && !found; i++)
        found = doc_registers_taint(p, c, docs[i], 0);
    nw_yaml_docs_free(docs, nd);
    return found;
}

/* The end of the line at s (its '\n' or the terminating NUL). */
static const char *eol_of(const char *s)
{
    const char *e = strchr(s, '\n');
    return e ? e : s + strlen(s);
}

/* Shell here-documents (`cat > f <<EOF` ... `EOF`, also <<-, <<'EOF', <<"EOF"): is the
 * taint registered by the YAML of one of their bodies? */
static bool heredocs_register_taint(const nw_gpu_policy_t *p, const nw_accel_class_t *c,
                                    const char *ud)
{
    for (const char *h = strstr(ud, "<<"); h; h = strstr(h + 2, "<<")) {
        const char *q = h + 2;
        if (*q == '<')
            continue; /* <<< here-string */
        if (*q == '-')
            q++;
        while (*q == ' ')
            q++;
        char quote = (*q == '\'' || *q == '"') ? *q++ : 0;
        size_t wl = strspn(q, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_");
        if (wl == 0 || wl > 64 || (quote && q[wl] != quote))
            continue;
        const char *body = eol_of(q);
        if (!*body)
            continue;
        body++;
        const char *end = body;
        while (*end) {
            const char *e = eol_of(end);
            const char *t = end;
            while (t < e && (*t == ' ' || *t == '\t'))
                t++;
            size_t n = (size_t)(e - t);
            if (n && t[n - 1] == '\r')
                n--;
            if (n == wl && memcmp(t, q, wl) == 0)
                break;
            end = *e ? e + 1 : e;
        }
        if (yaml_registers_taint(p, c, body, (size_t)(end - body)))
            return true;
    }
    return false;
}

/* MIME multipart (`--BOUNDARY` lines): is the taint registered by the YAML body of a part
 * (after its headers' blank line)? */
static bool mime_parts_register_taint(const nw_gpu_policy_t *p, const nw_accel_class_t *c,
                                      const char *ud)
{
    const char *line = ud;
    const char *part = NULL;
    while (*line) {
        const char *e = eol_of(line);
        bool boundary = e - line >= 2 && line[0] == '-' && line[1] == '-';
        if (boundary) {
            if (part && yaml_registers_taint(p, c, part, (size_t)(line - part)))
                return true;
            part = NULL;
            /* the part's headers end at the first blank line */
            const char *h = *e ? e + 1 : e;
            while (*h) {
                const char *he = eol_of(h);
                if (he == h || (he - h == 1 && *h == '\r')) {
                    part = *he ? he + 1 : he;
                    break;
                }
                h = *he ? he + 1 : he;
            }
        }
        line = *e ? e + 1 : e;
    }
    return part && yaml_registers_taint(p, c, part, strlen(part));
}

bool nw_gpu_userdata_registers_taint(const nw_gpu_policy_t *p, const nw_accel_class_t *c,
                                     const char *ud)
{
    if (!p || !ud)
        return false;
    /* 1. kubelet/kubeadm flags: --register-with-taints=LIST or --register-with-taints LIST */
    static const char flag[] = "--register-with-taints";
    for (const char *f = strstr(ud, flag); f; f = strstr(f + 1, flag)) {
        const char *v = f + sizeof flag - 1;
        if (*v == '=' || *v == ' ')
            v++;
        size_t n = strcspn(v, " \t\r\n\\;&|)");
        if (taint_list_has(p, c, v, n))
            return true;
    }
    /* 2. YAML: the userData itself (a KubeletConfiguration or cloud-config), the bodies
     *    of its here-documents and of its MIME parts */
    return yaml_registers_taint(p, c, ud, strlen(ud)) || heredocs_register_taint(p, c, ud) ||
           mime_parts_register_taint(p, c, ud);
}

nw_rc_t nw_gpu_userdata_pool_crosscheck(const nw_gpu_policy_t *p, const cJSON *np, const cJSON *nc,
                                        nw_admit_result_t *res)
{
    if (!p || !p->enabled || !cJSON_IsObject(np) || !cJSON_IsObject(nc) || !res)
        return NW_OK;
    nw_gpu_pool_info_t in;
    nw_gpu_pool_analyze(p, np, &in);
    if (in.skip || !nw_gpu_pool_is_gpu(&in))
        return NW_OK;
    /* AL2, AL2023, Bottlerocket: nodewarden renders the pool's taints into the bootstrap
     * (scaler/aws/userdata.h); the user's userData is only a part before it */
    nw_ami_family_t fam = nw_kubelet_ami_family(nc);
    if (fam == NW_AMI_AL2 || fam == NW_AMI_AL2023 || fam == NW_AMI_BOTTLEROCKET)
        return NW_OK;
    const char *ud = nw_json_str(nw_json_get(nc, "spec"), "userData");
    const nw_accel_class_t *c = &p->classes[in.cls];
    if (!ud || nw_gpu_userdata_registers_taint(p, c, ud))
        return NW_OK;
    char taint[128];
    nw_gpu_taint_text(p, c, taint, sizeof taint);
    const char *ncname = nw_json_str(nw_json_get(nc, "metadata"), "name");
    const char *npname = nw_json_str(nw_json_get(np, "metadata"), "name");
    return nw_admit_warn(res,
                         "NodePool \"%s\" (accelerator class %s) uses EC2NodeClass \"%s\" whose "
                         "userData registers the kubelet without the class's taint %s: generic "
                         "pods can schedule on a new node until nodewarden applies the taint; add "
                         "it to the kubelet's --register-with-taints",
                         npname ? npname : "", c->name, ncname ? ncname : "", taint);
}
