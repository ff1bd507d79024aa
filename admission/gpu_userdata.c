/* admission/gpu_userdata.c — does an EC2NodeClass's userData register the kubelet with
 * the GPU taint (admission/gpu.h)? */
#include "admission/gpu.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission/gpu_int.h"
#include "common/json.h"

/* ---- cross-object: the EC2NodeClass userData of a GPU pool ---------------------- */

/* Is the GPU taint in a comma-separated taint list ("k=v:Effect,k2:Effect")? */
static bool taint_list_has(const nw_gpu_policy_t *p, const char *s, size_t n)
{
    const char *eff = nw_taint_effect_str(p->taint_effect);
    char want[300];
    if (*p->taint_value)
        snprintf(want, sizeof want, "%s=%s:%s", p->taint_key, p->taint_value, eff);
    else
        snprintf(want, sizeof want, "%s:%s", p->taint_key, eff);
    size_t wl = strlen(want);
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
        if ((size_t)(t - s) == wl && memcmp(s, want, wl) == 0)
            return true;
        s = comma ? comma + 1 : end;
    }
    return false;
}

/* value of "key: value" on a YAML line (after optional "- "), or NULL */
static const char *yaml_field(const char *line, const char *eol, const char *key, size_t *vlen)
{
    const char *q = line;
    while (q < eol && (*q == ' ' || *q == '\t'))
        q++;
    if (q + 1 < eol && q[0] == '-' && q[1] == ' ')
        q += 2;
    while (q < eol && *q == ' ')
        q++;
    size_t kl = strlen(key);
    if ((size_t)(eol - q) <= kl || memcmp(q, key, kl) != 0 || q[kl] != ':')
        return NULL;
    q += kl + 1;
    while (q < eol && (*q == ' ' || *q == '"' || *q == '\''))
        q++;
    const char *e = eol;
    while (e > q && (e[-1] == ' ' || e[-1] == '"' || e[-1] == '\'' || e[-1] == '\r'))
        e--;
    *vlen = (size_t)(e - q);
    return q;
}

static bool field_is(const char *v, size_t n, const char *want)
{
    return v && n == strlen(want) && memcmp(v, want, n) == 0;
}

bool nw_gpu_userdata_registers_taint(const nw_gpu_policy_t *p, const char *ud)
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
        if (taint_list_has(p, v, n))
            return true;
    }
    /* 2. KubeletConfiguration registerWithTaints: or kubeadm nodeRegistration taints:
     *    entries (YAML), as "- key: gpu" / "value: ..." / "effect: ..." items */
    static const char *const blocks[] = {"registerWithTaints:", "taints:"};
    for (size_t b = 0; b < 2; b++)
    for (const char *rw = strstr(ud, blocks[b]); rw; rw = strstr(rw + 1, blocks[b])) {
        const char *line = strchr(rw, '\n');
        const char *k = NULL, *v = NULL, *e = NULL;
        size_t kl = 0, vl = 0, el = 0;
        while (line && line[1]) {
            line++;
            const char *eol = strchr(line, '\n');
            if (!eol)
                eol = line + strlen(line);
            const char *first = line;
            while (first < eol && (*first == ' ' || *first == '\t'))
                first++;
            if (first == eol) {
                line = *eol ? eol : NULL;
                continue;
            }
            bool item = first + 1 < eol && first[0] == '-' && first[1] == ' ';
            size_t n;
            const char *x;
            if (item) {
                /* a new item: judge the previous one */
                if (field_is(k, kl, p->taint_key) && field_is(v ? v : "", vl, p->taint_value) &&
                    field_is(e, el, nw_taint_effect_str(p->taint_effect)))
                    return true;
                k = v = e = NULL;
                kl = vl = el = 0;
            }
            if ((x = yaml_field(line, eol, "key", &n))) {
                k = x;
                kl = n;
            } else if ((x = yaml_field(line, eol, "value", &n))) {
                v = x;
                vl = n;
            } else if ((x = yaml_field(line, eol, "effect", &n))) {
                e = x;
                el = n;
            } else if (!item && first == line) {
                break; /* back at the left margin: the list is over */
            } else if (!item && !yaml_field(line, eol, "timeAdded", &n)) {
                break;
            }
            line = *eol ? eol : NULL;
        }
        if (field_is(k, kl, p->taint_key) && field_is(v ? v : "", vl, p->taint_value) &&
            field_is(e, el, nw_taint_effect_str(p->taint_effect)))
            return true;
    }
    return false;
}

nw_rc_t nw_gpu_pool_crosscheck(const nw_gpu_policy_t *p, const cJSON *np, const cJSON *nc,
                               nw_admit_result_t *res)
{
    if (!p || !p->enabled || !cJSON_IsObject(np) || !cJSON_IsObject(nc) || !res)
        return NW_OK;
    nw_gpu_pool_info_t in;
    nw_gpu_pool_analyze(p, np, &in);
    if (in.skip || !nw_gpu_pool_is_gpu(&in))
        return NW_OK;
    const char *ud = nw_json_str(nw_json_get(nc, "spec"), "userData");
    if (!ud || nw_gpu_userdata_registers_taint(p, ud))
        return NW_OK;
    char taint[128];
    nw_gpu_taint_text(p, taint, sizeof taint);
    const char *ncname = nw_json_str(nw_json_get(nc, "metadata"), "name");
    const char *npname = nw_json_str(nw_json_get(np, "metadata"), "name");
    return nw_admit_warn(res,
                         "GPU NodePool \"%s\" uses EC2NodeClass \"%s\" whose userData registers "
                         "the kubelet without the GPU taint %s: generic pods can schedule on a new "
                         "node until nodewarden applies the taint; add it to the kubelet's "
                         "--register-with-taints",
                         npname ? npname : "",
                         ncname ? ncname : "", taint);
}
