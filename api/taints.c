/*
 * api/taints.c — taints: parsing, formatting, and whether tolerations tolerate them. See
 * taints.h; the tolerations themselves are in api/tolerations.c.
 */
#include "api/taints.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/kval.h"
#include "api/wellknown.h"
#include "common/json.h"

static const char *const EFFECTS[] = {"", "NoSchedule", "PreferNoSchedule", "NoExecute"};

const char *nw_taints_effect_str(nw_taint_effect_t e)
{
    return (unsigned)e < 4 ? EFFECTS[e] : "";
}

bool nw_taints_effect_parse(const char *s, nw_taint_effect_t *out)
{
    for (int i = 0; i < 4; i++)
        if (strcmp(s, EFFECTS[i]) == 0) {
            *out = (nw_taint_effect_t)i;
            return true;
        }
    return false;
}

void nw_taints_init(nw_taints_t *t)
{
    t->v = NULL;
    t->n = 0;
}

void nw_taints_cleanup(nw_taints_t *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++) {
        free(t->v[i].key);
        free(t->v[i].value);
    }
    free(t->v);
    nw_taints_init(t);
}

nw_rc_t nw_taints_add(nw_taints_t *t, const char *key, const char *value, nw_taint_effect_t effect)
{
    char *k = strdup(key ? key : "");
    char *v = strdup(value ? value : "");
    nw_taint_t *nv = (k && v) ? realloc(t->v, (t->n + 1) * sizeof *nv) : NULL;
    if (!nv) {
        free(k);
        free(v);
        return NW_ENOMEM;
    }
    t->v = nv;
    t->v[t->n++] = (nw_taint_t){.key = k, .value = v, .effect = effect};
    return NW_OK;
}

/* ---- parsing --------------------------------------------------------------- */

nw_rc_t nw_taints_parse(const cJSON *arr, const char *path, nw_taints_t *out, nw_err_t *err)
{
    nw_taints_init(out);
    if (!path)
        path = "";
    if (!arr || cJSON_IsNull(arr))
        return NW_OK;
    nw_rc_t rc = nw_kval_array(arr, path, err);
    if (rc != NW_OK)
        return rc;
    int i = 0;
    for (const cJSON *it = arr->child; it; it = it->next, i++) {
        char base[NW_KV_PATH_MAX], p[NW_KV_PATH_MAX];
        nw_kval_idx(base, path, (size_t)i);
        if (!cJSON_IsObject(it)) {
            rc =
                nw_err_set(err, NW_EINVAL, base, "Invalid value: \"%s\": %s must be of type object",
                           nw_json_type_name(it), base);
            goto fail;
        }
        const char *key, *value, *effect;
        if ((rc = nw_kval_str_member(it, "key", base, NULL, &key, err)) != NW_OK ||
            (rc = nw_kval_str_member(it, "value", base, "", &value, err)) != NW_OK ||
            (rc = nw_kval_str_member(it, "effect", base, NULL, &effect, err)) != NW_OK)
            goto fail;
        if (!key || !*key) {
            nw_kval_path(p, base, "key");
            rc = nw_err_set(err, NW_EINVAL, p, "Required value");
            goto fail;
        }
        nw_taint_effect_t eff;
        if (!effect || !*effect) {
            nw_kval_path(p, base, "effect");
            rc = nw_err_set(err, NW_EINVAL, p, "Required value");
            goto fail;
        }
        if (!nw_taints_effect_parse(effect, &eff)) {
            nw_kval_path(p, base, "effect");
            rc = nw_err_set(err, NW_EINVAL, p,
                            "Unsupported value: \"%s\": supported values: \"NoSchedule\", "
                            "\"PreferNoSchedule\", \"NoExecute\"",
                            effect);
            goto fail;
        }
        if ((rc = nw_taints_add(out, key, value, eff)) != NW_OK) {
            nw_err_set(err, rc, base, "out of memory");
            goto fail;
        }
    }
    return NW_OK;
fail:
    nw_taints_cleanup(out);
    return rc;
}

/* ---- matching -------------------------------------------------------------- */

size_t nw_taints_untolerated_msg(const nw_taint_t *taint, char *buf, size_t n)
{
    int r = snprintf(buf, n, "did not tolerate %s=%s:%s", taint->key, taint->value,
                     nw_taints_effect_str(taint->effect));
    return r < 0 ? 0 : (size_t)r;
}

size_t nw_taints_format(const nw_taint_t *taint, char *buf, size_t n)
{
    int r;
    if (taint->value[0])
        r = snprintf(buf, n, "%s=%s:%s", taint->key, taint->value,
                     nw_taints_effect_str(taint->effect));
    else
        r = snprintf(buf, n, "%s:%s", taint->key, nw_taints_effect_str(taint->effect));
    return r < 0 ? 0 : (size_t)r;
}

bool nw_taints_is_known_ephemeral(const nw_taint_t *taint)
{
    static const struct {
        const char *key, *value;
        nw_taint_effect_t effect;
    } known[] = {
        {"node.kubernetes.io/not-ready", "", NW_TAINT_NO_SCHEDULE},
        {"node.kubernetes.io/not-ready", "", NW_TAINT_NO_EXECUTE},
        {"node.kubernetes.io/unreachable", "", NW_TAINT_NO_SCHEDULE},
        {"node.cloudprovider.kubernetes.io/uninitialized", "true", NW_TAINT_NO_SCHEDULE},
        {NW_TAINT_UNREGISTERED, "", NW_TAINT_NO_EXECUTE},
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (taint->effect == known[i].effect && strcmp(taint->key, known[i].key) == 0 &&
            strcmp(taint->value, known[i].value) == 0)
            return true;
    return strncmp(taint->key, "readiness.k8s.io/", 17) == 0;
}
