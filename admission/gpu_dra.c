/*
 * admission/gpu_dra.c — which accelerator class a pod's DRA ResourceClaims
 * (resource.k8s.io/v1) request devices of (admission/gpu.h, "DRA").
 *
 * A claim's spec.devices.requests[] hold either `exactly` {deviceClassName, selectors,
 * allocationMode, count} or `firstAvailable` [{deviceClassName, ...}] (v1; v1beta1 put
 * deviceClassName on the request itself, read too). A DeviceClass is a class's by its name
 * (the class's dra_classes) or by a CEL selector naming one of the class's drivers
 * (`device.driver == 'gpu.nvidia.com'`); the expression is not evaluated, only that
 * comparison is looked for.
 */
#include "admission/gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission/gpu_int.h"
#include "common/json.h"

#define DRA_GROUP "resource.k8s.io"

/* the class of the driver named by the quoted string at s (after optional spaces), or -1 */
static int quoted_driver(const nw_gpu_policy_t *p, const char *s)
{
    while (*s == ' ' || *s == '\t' || *s == '\n')
        s++;
    char q = *s;
    if (q != '"' && q != '\'')
        return -1;
    const char *end = strchr(s + 1, q);
    if (!end)
        return -1;
    size_t n = (size_t)(end - s - 1);
    for (size_t i = 0; i < p->nclasses; i++)
        for (size_t j = 0; j < p->classes[i].ndra_drivers; j++) {
            const char *d = p->classes[i].dra_drivers[j];
            if (strlen(d) == n && strncmp(d, s + 1, n) == 0)
                return (int)i;
        }
    return -1;
}

/* the class whose driver a CEL expression compares device.driver with, or -1 */
static int cel_driver_class(const nw_gpu_policy_t *p, const char *expr)
{
    static const char key[] = "device.driver";
    for (const char *at = expr ? strstr(expr, key) : NULL; at; at = strstr(at + 1, key)) {
        const char *s = at + sizeof key - 1;
        while (*s == ' ' || *s == '\t' || *s == '\n')
            s++;
        if (s[0] == '=' && s[1] == '=') {
            int c = quoted_driver(p, s + 2);
            if (c >= 0)
                return c;
        }
    }
    return -1;
}

/* the class named by one of a selectors list's CEL expressions, or -1 */
static int selectors_class(const nw_gpu_policy_t *p, const cJSON *selectors)
{
    const cJSON *sel;
    cJSON_ArrayForEach(sel, nw_gpu_kids(selectors))
    {
        int c = cel_driver_class(p, nw_json_str(nw_json_get(sel, "cel"), "expression"));
        if (c >= 0)
            return c;
    }
    return -1;
}

int nw_gpu_dra_device_class(const nw_gpu_policy_t *p, const char *name, const cJSON *dc)
{
    for (size_t i = 0; name && i < p->nclasses; i++)
        if (nw_gpu_in_list(p->classes[i].dra_classes, p->classes[i].ndra_classes, name))
            return (int)i;
    return dc ? selectors_class(p, nw_json_get(nw_json_get(dc, "spec"), "selectors")) : -1;
}

/* the class of one device request (exactly, a firstAvailable entry, or a v1beta1 request),
 * and its device count in *count */
static int request_class(const nw_gpu_policy_t *p, const cJSON *r, const nw_gpu_dra_src_t *src,
                         int *count, const char **dcname)
{
    const char *name = nw_json_str(r, "deviceClassName");
    *dcname = name;
    const char *mode = nw_json_str(r, "allocationMode");
    const cJSON *cnt = nw_json_get(r, "count");
    *count = (mode && strcmp(mode, "All") == 0) || !cJSON_IsNumber(cnt) || cnt->valuedouble < 1
                 ? 1
                 : (int)(cnt->valuedouble > 1024 ? 1024 : cnt->valuedouble);
    int c = selectors_class(p, nw_json_get(r, "selectors"));
    if (c >= 0 || !name)
        return c;
    c = nw_gpu_dra_device_class(p, name, NULL);
    if (c >= 0 || !src || !src->lookup)
        return c;
    cJSON *dc = src->lookup(src->arg, DRA_GROUP, "DeviceClass", name);
    c = nw_gpu_dra_device_class(p, name, dc);
    cJSON_Delete(dc);
    return c;
}

unsigned nw_gpu_dra_claim_spec(const nw_gpu_policy_t *p, const cJSON *claim_spec,
                               const nw_gpu_dra_src_t *src, int *devices, char *what, size_t n)
{
    unsigned m = 0;
    const cJSON *r;
    cJSON_ArrayForEach(r, nw_gpu_kids(nw_json_get(nw_json_get(claim_spec, "devices"), "requests")))
    {
        const cJSON *exactly = nw_json_get(r, "exactly");
        const cJSON *first = nw_json_get(r, "firstAvailable");
        const cJSON *alts[16];
        size_t nalts = 0;
        if (cJSON_IsObject(exactly))
            alts[nalts++] = exactly;
        else if (cJSON_IsArray(first)) {
            const cJSON *a;
            cJSON_ArrayForEach(a, first)
            {
                if (nalts < 16)
                    alts[nalts++] = a;
            }
        } else
            alts[nalts++] = r; /* v1beta1: the request itself */
        for (size_t i = 0; i < nalts; i++) {
            int count;
            const char *dcname;
            int c = request_class(p, alts[i], src, &count, &dcname);
            if (c < 0)
                continue;
            if (!(m & (1u << c)) && what && n && !*what)
                snprintf(what, n, "DeviceClass %s", dcname ? dcname : "(selectors)");
            m |= 1u << c;
            if (devices && i == 0)
                devices[c] += count; /* firstAvailable: counted as its first choice */
        }
    }
    return m;
}

/* An allocated claim's devices are counted for the first pod it is reserved for (its
 * status.reservedFor); any other pod sharing it uses devices already counted */
static bool counts_devices(const cJSON *claim, const char *pod)
{
    const cJSON *st = nw_json_get(claim, "status");
    if (!nw_json_get(st, "allocation"))
        return true;
    const cJSON *first = cJSON_GetArrayItem(nw_json_get(st, "reservedFor"), 0);
    const char *who = nw_json_str(first, "name");
    return who && pod && strcmp(who, pod) == 0;
}

void nw_gpu_dra_pod(const nw_gpu_policy_t *p, const cJSON *spec, const char *ns, const char *pod,
                    const nw_gpu_dra_src_t *src, nw_gpu_dra_t *out)
{
    memset(out, 0, sizeof *out);
    const cJSON *rc;
    cJSON_ArrayForEach(rc, nw_gpu_kids(nw_json_get(spec, "resourceClaims")))
    {
        out->nclaims++;
        const char *claim = nw_json_str(rc, "resourceClaimName");
        const char *tmpl = nw_json_str(rc, "resourceClaimTemplateName");
        if ((!claim || !*claim) && (!tmpl || !*tmpl))
            continue;
        if (!src || !src->lookup) {
            out->unjudged = true;
            continue;
        }
        const char *kind = claim && *claim ? "ResourceClaim" : "ResourceClaimTemplate";
        const char *name = claim && *claim ? claim : tmpl;
        char key[320];
        snprintf(key, sizeof key, "%.63s/%.253s", ns && *ns ? ns : "default", name);
        cJSON *obj = src->lookup(src->arg, DRA_GROUP, kind, key);
        if (!obj) {
            if (!out->missing[0])
                snprintf(out->missing, sizeof out->missing, "%s %.170s", kind, key);
            continue;
        }
        const cJSON *cs = nw_json_get(obj, "spec");
        if (!claim || !*claim)
            cs = nw_json_get(cs, "spec"); /* a template's spec.spec is the claim's spec */
        char what[160] = "";
        bool count = !claim || !*claim || counts_devices(obj, pod);
        unsigned m =
            nw_gpu_dra_claim_spec(p, cs, src, count ? out->devices : NULL, what, sizeof what);
        if (m && !out->what[0])
            snprintf(out->what, sizeof out->what, "%s %s (%s)", kind, name, what);
        out->classes |= m;
        cJSON_Delete(obj);
    }
}
