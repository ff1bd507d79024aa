/*
 * scaler/disrupt/hash.c — NodePool and EC2NodeClass static-drift hashes (see hash.h).
 *
 * A value's hash is FNV-1a 64 over a typed encoding, computed bottom-up:
 *   string  "s" + bytes            number "n" + %.17g        bool "t" / "f"
 *   object  "o" + (key hash, value hash) for each member in key order, members that
 *           are ignored by the rules, null, or "" left out (hashstructure's
 *           IgnoreZeroValue/ZeroNil)
 *   array   "a" + element hashes in ascending order (SlicesAsSets)
 * Paths matched by the rules: objects add ".key", arrays add "[]" ("taints[].timeAdded").
 */
#include "scaler/disrupt/hash.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "api/duration.h"
#include "api/quantity.h"
#include "common/clock.h"

#define FNV_INIT UINT64_C(14695981039346656037)
#define FNV_PRIME UINT64_C(1099511628211)
#define MAX_DEPTH 32

typedef struct {
    const char *const *ignore;    /* paths left out */
    const char *const *durations; /* Go durations (or Never): hashed by value */
    const char *const *quantities;
    const char *const *times; /* RFC 3339: hashed by value */
} rules_t;

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= FNV_PRIME;
    }
    return h;
}

static uint64_t fnv_str(const char *tag, const char *s)
{
    return fnv(fnv(FNV_INIT, tag, strlen(tag)), s, strlen(s));
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    unsigned char b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(v >> (8 * i));
    return fnv(h, b, sizeof b);
}

static int in_list(const char *const *l, const char *path)
{
    for (; l && *l; l++)
        if (strcmp(*l, path) == 0)
            return 1;
    return 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

typedef struct {
    const char *key;
    uint64_t h;
} member_t;

static int cmp_member(const void *a, const void *b)
{
    return strcmp(((const member_t *)a)->key, ((const member_t *)b)->key);
}

static int skipped(const cJSON *v)
{
    return !v || cJSON_IsNull(v) || (cJSON_IsString(v) && !*v->valuestring);
}

static nw_rc_t hash_value(const cJSON *v, const char *path, const rules_t *r, int depth,
                          uint64_t *out);

/* 1 when path is a special value that parsed (hashed into *out), 0 otherwise (raw text). */
static int hash_special(const cJSON *v, const char *path, const rules_t *r, uint64_t *out)
{
    char buf[64];
    if (in_list(r->durations, path)) {
        int64_t ns = 0;
        bool never = false;
        if (nw_duration_parse_or_never(v->valuestring, true, &ns, &never, NULL) != NW_OK)
            return 0;
        if (never)
            snprintf(buf, sizeof buf, "Never");
        else
            snprintf(buf, sizeof buf, "%" PRId64, ns);
        *out = fnv_str("d", buf);
        return 1;
    }
    if (in_list(r->quantities, path)) {
        nw_quantity_t q;
        if (nw_quantity_parse(v->valuestring, &q, NULL) != NW_OK)
            return 0;
        snprintf(buf, sizeof buf, "%" PRId64, q.milli);
        *out = fnv_str("q", buf);
        return 1;
    }
    if (in_list(r->times, path)) {
        int64_t ns = 0;
        if (nw_time_parse(v->valuestring, &ns) != NW_OK)
            return 0;
        snprintf(buf, sizeof buf, "%" PRId64, ns);
        *out = fnv_str("T", buf);
        return 1;
    }
    return 0;
}

static nw_rc_t hash_object(const cJSON *v, const char *path, const rules_t *r, int depth,
                           uint64_t *out)
{
    size_t n = 0, cap = (size_t)cJSON_GetArraySize(v);
    member_t *m = cap ? calloc(cap, sizeof *m) : NULL;
    if (cap && !m)
        return NW_ENOMEM;
    nw_rc_t rc = NW_OK;
    const cJSON *c;
    cJSON_ArrayForEach(c, v)
    {
        if (!c->string || skipped(c))
            continue;
        char sub[512];
        int w = snprintf(sub, sizeof sub, "%s%s%s", path, *path ? "." : "", c->string);
        if (w < 0 || (size_t)w >= sizeof sub) {
            rc = NW_EINVAL;
            break;
        }
        if (in_list(r->ignore, sub))
            continue;
        m[n].key = c->string;
        if ((rc = hash_value(c, sub, r, depth + 1, &m[n].h)) != NW_OK)
            break;
        n++;
    }
    if (rc == NW_OK) {
        qsort(m, n, sizeof *m, cmp_member);
        uint64_t h = fnv(FNV_INIT, "o", 1);
        for (size_t i = 0; i < n; i++) {
            /* duplicate keys (invalid JSON for Kubernetes) keep the first */
            if (i > 0 && strcmp(m[i].key, m[i - 1].key) == 0)
                continue;
            h = mix(h, fnv_str("k", m[i].key));
            h = mix(h, m[i].h);
        }
        *out = h;
    }
    free(m);
    return rc;
}

static nw_rc_t hash_array(const cJSON *v, const char *path, const rules_t *r, int depth,
                          uint64_t *out)
{
    size_t n = 0, cap = (size_t)cJSON_GetArraySize(v);
    uint64_t *hs = cap ? calloc(cap, sizeof *hs) : NULL;
    if (cap && !hs)
        return NW_ENOMEM;
    char sub[512];
    int w = snprintf(sub, sizeof sub, "%s[]", path);
    nw_rc_t rc = (w < 0 || (size_t)w >= sizeof sub) ? NW_EINVAL : NW_OK;
    const cJSON *c;
    cJSON_ArrayForEach(c, v)
    {
        if (rc != NW_OK)
            break;
        if (cJSON_IsNull(c))
            hs[n++] = fnv(FNV_INIT, "z", 1);
        else
            rc = hash_value(c, sub, r, depth + 1, &hs[n++]);
    }
    if (rc == NW_OK) {
        qsort(hs, n, sizeof *hs, cmp_u64);
        uint64_t h = fnv(FNV_INIT, "a", 1);
        for (size_t i = 0; i < n; i++)
            h = mix(h, hs[i]);
        *out = h;
    }
    free(hs);
    return rc;
}

static nw_rc_t hash_value(const cJSON *v, const char *path, const rules_t *r, int depth,
                          uint64_t *out)
{
    if (depth > MAX_DEPTH)
        return NW_EINVAL;
    if (cJSON_IsString(v)) {
        if (!hash_special(v, path, r, out)) /* not special, or unparseable: raw text */
            *out = fnv_str("s", v->valuestring);
        return NW_OK;
    }
    if (cJSON_IsNumber(v)) {
        char buf[40];
        snprintf(buf, sizeof buf, "%.17g", v->valuedouble);
        *out = fnv_str("n", buf);
        return NW_OK;
    }
    if (cJSON_IsBool(v)) {
        *out = fnv(FNV_INIT, cJSON_IsTrue(v) ? "t" : "f", 1);
        return NW_OK;
    }
    if (cJSON_IsObject(v))
        return hash_object(v, path, r, depth, out);
    if (cJSON_IsArray(v))
        return hash_array(v, path, r, depth, out);
    *out = fnv(FNV_INIT, "z", 1);
    return NW_OK;
}

static void to_text(uint64_t h, char out[NW_HASH_LEN])
{
    snprintf(out, NW_HASH_LEN, "%" PRIu64, h);
}

/* ---- NodePool: spec.template (pkg/apis/v1/nodepool.go Hash) ---- */

static const char *const NODEPOOL_IGNORE[] = {"spec.requirements", NULL};
static const char *const NODEPOOL_DURATIONS[] = {"spec.expireAfter", "spec.terminationGracePeriod",
                                                 NULL};
static const char *const NODEPOOL_TIMES[] = {"spec.taints[].timeAdded",
                                             "spec.startupTaints[].timeAdded", NULL};

nw_rc_t nw_hash_nodepool(const cJSON *nodepool, char out[NW_HASH_LEN], nw_err_t *err)
{
    out[0] = 0;
    const cJSON *tmpl = nw_json_get(nw_json_get(nodepool, "spec"), "template");
    if (!cJSON_IsObject(tmpl))
        return nw_err_set(err, NW_EINVAL, "spec.template", "spec.template: Required value");
    rules_t r = {NODEPOOL_IGNORE, NODEPOOL_DURATIONS, NULL, NODEPOOL_TIMES};
    uint64_t h = 0;
    nw_rc_t rc = hash_value(tmpl, "", &r, 0, &h);
    if (rc != NW_OK)
        return nw_err_set(err, rc, "spec.template", "cannot hash spec.template (%s)",
                          nw_rc_str(rc));
    to_text(h, out);
    return NW_OK;
}

/* ---- EC2NodeClass: spec + resolved AMI family (aws pkg/apis/v1/ec2nodeclass.go Hash) ---- */

static const char *const NODECLASS_IGNORE[] = {"amiSelectorTerms",
                                               "subnetSelectorTerms",
                                               "securityGroupSelectorTerms",
                                               "capacityReservationSelectorTerms",
                                               "ipPrefixCount",
                                               "amiFamily",
                                               NULL};
static const char *const NODECLASS_QUANTITIES[] = {"blockDeviceMappings[].ebs.volumeSize", NULL};

const char *nw_hash_ami_family(const cJSON *nodeclass)
{
    const cJSON *spec = nw_json_get(nodeclass, "spec");
    const char *fam = nw_json_str(spec, "amiFamily");
    if (fam && *fam)
        return fam;
    static const char *const fams[][2] = {{"al2", "AL2"},
                                          {"al2023", "AL2023"},
                                          {"bottlerocket", "Bottlerocket"},
                                          {"windows2019", "Windows2019"},
                                          {"windows2022", "Windows2022"},
                                          {"windows2025", "Windows2025"}};
    const cJSON *t;
    cJSON_ArrayForEach(t, nw_json_get(spec, "amiSelectorTerms"))
    {
        const char *alias = nw_json_str(t, "alias");
        if (!alias || !*alias)
            continue;
        size_t n = strcspn(alias, "@");
        for (size_t i = 0; i < sizeof fams / sizeof *fams; i++)
            if (strlen(fams[i][0]) == n && strncmp(alias, fams[i][0], n) == 0)
                return fams[i][1];
        break;
    }
    return "Custom";
}

nw_rc_t nw_hash_ec2nodeclass(const cJSON *nodeclass, char out[NW_HASH_LEN], nw_err_t *err)
{
    out[0] = 0;
    const cJSON *spec = nw_json_get(nodeclass, "spec");
    if (!cJSON_IsObject(spec))
        return nw_err_set(err, NW_EINVAL, "spec", "spec: Required value");
    rules_t r = {NODECLASS_IGNORE, NULL, NODECLASS_QUANTITIES, NULL};
    uint64_t h = 0;
    nw_rc_t rc = hash_value(spec, "", &r, 0, &h);
    if (rc != NW_OK)
        return nw_err_set(err, rc, "spec", "cannot hash spec (%s)", nw_rc_str(rc));
    /* Hash([]interface{}{spec, AMIFamily()}): an ordered pair */
    uint64_t pair = fnv(FNV_INIT, "p", 1);
    pair = mix(pair, h);
    pair = mix(pair, fnv_str("s", nw_hash_ami_family(nodeclass)));
    to_text(pair, out);
    return NW_OK;
}

/* ---- annotations ---- */

static cJSON *annotations(cJSON *obj)
{
    cJSON *md = nw_json_get_mut(obj, "metadata");
    if (!cJSON_IsObject(md)) {
        cJSON_DeleteItemFromObjectCaseSensitive(obj, "metadata");
        md = nw_json_add_object(obj, "metadata");
    }
    cJSON *ann = nw_json_get_mut(md, "annotations");
    if (!cJSON_IsObject(ann)) {
        cJSON_DeleteItemFromObjectCaseSensitive(md, "annotations");
        ann = nw_json_add_object(md, "annotations");
    }
    return ann;
}

static void put(cJSON *ann, const char *k, const char *v)
{
    cJSON_DeleteItemFromObjectCaseSensitive(ann, k);
    nw_json_add_string(ann, k, v);
}

nw_rc_t nw_hash_stamp_nodeclaim(cJSON *nodeclaim, const cJSON *nodepool, const cJSON *nodeclass,
                                nw_err_t *err)
{
    char h[NW_HASH_LEN];
    nw_rc_t rc = NW_OK;
    cJSON *ann = annotations(nodeclaim);
    if (!ann)
        return nw_err_set(err, NW_ENOMEM, NULL, "out of memory");
    if (nodepool) {
        if ((rc = nw_hash_nodepool(nodepool, h, err)) == NW_OK) {
            put(ann, NW_ANN_NODEPOOL_HASH, h);
            put(ann, NW_ANN_NODEPOOL_HASH_VERSION, NW_NODEPOOL_HASH_VERSION);
        }
    }
    if (nodeclass) {
        nw_rc_t rc2 = nw_hash_ec2nodeclass(nodeclass, h, rc == NW_OK ? err : NULL);
        if (rc2 == NW_OK) {
            put(ann, NW_ANN_NODECLASS_HASH, h);
            put(ann, NW_ANN_NODECLASS_HASH_VERSION, NW_NODECLASS_HASH_VERSION);
        } else if (rc == NW_OK)
            rc = rc2;
    }
    return rc;
}

int nw_hash_annotation_is(const cJSON *obj, const char *key, const char *value)
{
    const char *v = nw_json_str(nw_json_get(nw_json_get(obj, "metadata"), "annotations"), key);
    return v && value && strcmp(v, value) == 0;
}
