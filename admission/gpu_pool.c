/* admission/gpu_pool.c — the GPU isolation policy for NodePools (admission/gpu.h). */
#include "admission/gpu.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission/gpu_int.h"
#include "common/json.h"

/* ---- NodePools ------------------------------------------------------------------ */

/* What one requirement says about the classes: forces (it can only be met by
 * accelerator instances, of the classes in `only`), and the classes it excludes. */
typedef struct {
    bool forces;
    unsigned only;
    unsigned excl;
    bool named;         /* an instance family/type/category list names the classes in `only` */
    unsigned dev_excl;  /* a device label excludes these classes' labelled types (types of
                           their uncounted families may lack the labels: not in excl) */
    unsigned unc_excl;  /* a family/category list excludes these classes' uncounted families */
    unsigned named_unc; /* (named) the list names an uncounted family of these classes */
} req_class_t;

/* the classes with uncounted families (admission/gpu.h) */
static unsigned uncounted_classes(const nw_gpu_policy_t *p)
{
    unsigned m = 0;
    for (size_t i = 0; i < p->nclasses; i++)
        if (p->classes[i].nuncounted)
            m |= 1u << i;
    return m;
}

static unsigned all_classes(const nw_gpu_policy_t *p)
{
    return p->nclasses >= 32 ? ~0u : (1u << p->nclasses) - 1;
}

/* the classes whose instance requirement key starts with prefix */
static unsigned group_classes(const nw_gpu_policy_t *p, const char *prefix)
{
    unsigned m = 0;
    for (size_t i = 0; i < p->nclasses; i++)
        if (p->classes[i].req_key && strncmp(p->classes[i].req_key, prefix, strlen(prefix)) == 0)
            m |= 1u << i;
    return m;
}

static bool str_in_values(const cJSON *vals, const char *s)
{
    const cJSON *v;
    cJSON_ArrayForEach(v, nw_gpu_kids(vals))
    {
        if (cJSON_IsString(v) && strcmp(v->valuestring, s) == 0)
            return true;
    }
    return false;
}

/* classes with instance requirement key `key` and one of their values in vals (any: one;
 * all: every value of the class) */
static unsigned value_classes(const nw_gpu_policy_t *p, const char *key, const cJSON *vals,
                              bool all)
{
    unsigned m = 0;
    for (size_t i = 0; i < p->nclasses; i++) {
        const nw_accel_class_t *c = &p->classes[i];
        if (!c->req_key || strcmp(c->req_key, key) != 0 || c->nreq_values == 0)
            continue;
        size_t hit = 0;
        for (size_t k = 0; k < c->nreq_values; k++)
            hit += str_in_values(vals, c->req_values[k]);
        if (all ? hit == c->nreq_values : hit > 0)
            m |= 1u << i;
    }
    return m;
}

/* leading letters of a family name: its category ("g4dn" -> "g", "inf2" -> "inf") */
static size_t category_len(const char *family)
{
    size_t n = 0;
    while (family[n] >= 'a' && family[n] <= 'z')
        n++;
    return n;
}

/* the classes with a family of category cat; *any_family: cat is a category of some
 * class family */
static unsigned category_classes(const nw_gpu_policy_t *p, const char *cat)
{
    unsigned m = 0;
    size_t n = strlen(cat);
    for (size_t i = 0; i < p->nclasses; i++)
        for (size_t k = 0; k < p->classes[i].nfamilies; k++) {
            const char *f = p->classes[i].families[k];
            if (category_len(f) == n && strncmp(f, cat, n) == 0)
                m |= 1u << i;
        }
    return m;
}

static bool single_int(const cJSON *vals, long long *out)
{
    return cJSON_GetArraySize(vals) == 1 && cJSON_IsString(cJSON_GetArrayItem(vals, 0)) &&
           nw_gpu_parse_int(cJSON_GetArrayItem(vals, 0)->valuestring, out);
}

static bool all_positive(const cJSON *vals, bool zero)
{
    if (!cJSON_IsArray(vals) || cJSON_GetArraySize(vals) == 0)
        return false;
    const cJSON *v;
    cJSON_ArrayForEach(v, vals)
    {
        long long n;
        if (!cJSON_IsString(v) || !nw_gpu_parse_int(v->valuestring, &n) || (zero ? n != 0 : n < 1))
            return false;
    }
    return true;
}

/* a count label (instance-gpu-count, instance-accelerator-count): 1 forces a device,
 * -1 excludes devices, 0 neither */
static int count_requirement(const char *op, const cJSON *vals)
{
    long long v;
    bool in = strcmp(op, "In") == 0;
    if (strcmp(op, "Exists") == 0 || (in && all_positive(vals, false)))
        return 1;
    if (strcmp(op, "Gt") == 0 && single_int(vals, &v) && v >= 0)
        return 1;
    if (strcmp(op, "Gte") == 0 && single_int(vals, &v) && v >= 1)
        return 1;
    if (strcmp(op, "DoesNotExist") == 0 || (in && all_positive(vals, true)))
        return -1;
    if (strcmp(op, "Lt") == 0 && single_int(vals, &v) && v <= 1)
        return -1;
    if (strcmp(op, "Lte") == 0 && single_int(vals, &v) && v <= 0)
        return -1;
    return 0;
}

/* a label of the instance-gpu-* or instance-accelerator-* group (group: its classes) */
static req_class_t device_requirement(const nw_gpu_policy_t *p, const char *key, const char *op,
                                      const cJSON *vals, unsigned group, bool is_count)
{
    req_class_t r = {0};
    if (is_count) {
        int c = count_requirement(op, vals);
        r.forces = c > 0;
        r.only = c > 0 ? group : 0;
        r.excl = c < 0 ? group : 0;
        return r;
    }
    bool in = strcmp(op, "In") == 0;
    if (strcmp(op, "DoesNotExist") == 0) {
        r.excl = group;
    } else if (in && cJSON_GetArraySize(vals) > 0) {
        unsigned keyed = value_classes(p, key, vals, false);
        unsigned keyed_any = 0;
        for (size_t i = 0; i < p->nclasses; i++)
            if (p->classes[i].req_key && strcmp(p->classes[i].req_key, key) == 0)
                keyed_any |= 1u << i;
        /* In on a class's own key picks those classes; on another label of the group
         * (a GPU name or memory), some device of the group */
        r.forces = keyed_any ? keyed != 0 : true;
        r.only = keyed_any ? keyed : group;
    } else if (strcmp(op, "Exists") == 0 || ((strcmp(op, "Gt") == 0 || strcmp(op, "Gte") == 0) &&
                                             strcmp(key, K_GPU_MEMORY) == 0)) {
        r.forces = true;
        r.only = group;
    } else if (strcmp(op, "NotIn") == 0) {
        r.excl = value_classes(p, key, vals, true);
    }
    return r;
}

/* instance-family or instance-type values (type: family before the '.') */
static req_class_t family_requirement(const nw_gpu_policy_t *p, const char *op, const cJSON *vals,
                                      bool types)
{
    req_class_t r = {0};
    bool in = strcmp(op, "In") == 0, notin = strcmp(op, "NotIn") == 0;
    if ((!in && !notin) || !cJSON_IsArray(vals) || cJSON_GetArraySize(vals) == 0)
        return r;
    unsigned seen = 0, unc = 0;
    bool every_accel = true, every_cpu = true;
    const cJSON *v;
    cJSON_ArrayForEach(v, vals)
    {
        char fam[64] = "";
        if (cJSON_IsString(v))
            snprintf(fam, sizeof fam, "%.*s", (int)strcspn(v->valuestring, types ? "." : ""),
                     v->valuestring);
        int c = fam[0] ? nw_gpu_family_class(p, fam) : -1;
        if (c >= 0)
            seen |= 1u << c, every_cpu = false;
        else
            every_accel = false;
        if (c >= 0 && nw_gpu_class_uncounted(&p->classes[c], fam))
            unc |= 1u << c;
    }
    if (in && every_accel) {
        r.forces = r.named = true;
        r.only = seen;
        r.named_unc = unc;
    } else if (in && every_cpu) {
        r.excl = all_classes(p);
    } else if (notin && !types) {
        for (size_t i = 0; i < p->nclasses; i++) {
            const nw_accel_class_t *c = &p->classes[i];
            bool all = c->nfamilies > 0, all_unc = c->nuncounted > 0;
            for (size_t k = 0; k < c->nfamilies && all; k++)
                all = str_in_values(vals, c->families[k]);
            for (size_t k = 0; k < c->nuncounted && all_unc; k++)
                all_unc = str_in_values(vals, c->uncounted[k]);
            if (all)
                r.excl |= 1u << i;
            if (all_unc)
                r.unc_excl |= 1u << i;
        }
    }
    return r;
}

/* the category of family is among vals */
static bool category_listed(const char *family, const cJSON *vals)
{
    char cat[32];
    size_t len = category_len(family);
    if (len == 0 || len >= sizeof cat)
        return false;
    memcpy(cat, family, len);
    cat[len] = '\0';
    return str_in_values(vals, cat);
}

/* every category of these families is among vals */
static bool categories_listed(char *const *fams, size_t n, const cJSON *vals)
{
    bool all = n > 0;
    for (size_t k = 0; k < n && all; k++)
        all = category_listed(fams[k], vals);
    return all;
}

static req_class_t category_requirement(const nw_gpu_policy_t *p, const char *op, const cJSON *vals)
{
    req_class_t r = {0};
    bool in = strcmp(op, "In") == 0, notin = strcmp(op, "NotIn") == 0;
    if ((!in && !notin) || !cJSON_IsArray(vals) || cJSON_GetArraySize(vals) == 0)
        return r;
    unsigned seen = 0;
    bool every_accel = true, every_cpu = true;
    const cJSON *v;
    cJSON_ArrayForEach(v, vals)
    {
        unsigned m = cJSON_IsString(v) ? category_classes(p, v->valuestring) : 0;
        seen |= m;
        if (m)
            every_cpu = false;
        else
            every_accel = false;
    }
    if (in && every_accel) {
        r.forces = r.named = true;
        r.only = seen;
        for (size_t i = 0; i < p->nclasses; i++)
            for (size_t k = 0; k < p->classes[i].nuncounted; k++)
                if (category_listed(p->classes[i].uncounted[k], vals))
                    r.named_unc |= 1u << i;
    } else if (in && every_cpu) {
        r.excl = all_classes(p);
    } else if (notin) {
        /* a class is excluded when every category of its families is listed */
        for (size_t i = 0; i < p->nclasses; i++) {
            const nw_accel_class_t *c = &p->classes[i];
            if (categories_listed(c->families, c->nfamilies, vals))
                r.excl |= 1u << i;
            if (categories_listed(c->uncounted, c->nuncounted, vals))
                r.unc_excl |= 1u << i;
        }
    }
    return r;
}

static req_class_t classify_requirement(const nw_gpu_policy_t *p, const cJSON *r)
{
    req_class_t none = {0};
    const char *key = nw_json_str(r, "key");
    const char *op = nw_json_str(r, "operator");
    const cJSON *vals = nw_json_get(r, "values");
    if (!key || !op)
        return none;
    bool gpu = strncmp(key, K_GPU_PREFIX, strlen(K_GPU_PREFIX)) == 0;
    if (gpu || strncmp(key, K_ACCEL_PREFIX, strlen(K_ACCEL_PREFIX)) == 0) {
        req_class_t d = device_requirement(
            p, key, op, vals, group_classes(p, gpu ? K_GPU_PREFIX : K_ACCEL_PREFIX),
            strcmp(key, gpu ? NW_GPU_COUNT_KEY : NW_ACCEL_COUNT_KEY) == 0);
        /* a device label keeps out only the types that carry it */
        d.dev_excl = d.excl;
        d.excl &= ~uncounted_classes(p);
        return d;
    }
    if (strcmp(key, K_FAMILY) == 0)
        return family_requirement(p, op, vals, false);
    if (strcmp(key, K_TYPE) == 0 || strcmp(key, K_TYPE_BETA) == 0)
        return family_requirement(p, op, vals, true);
    if (strcmp(key, K_CATEGORY) == 0)
        return category_requirement(p, op, vals);
    return none;
}

static const cJSON *pool_template_spec(const cJSON *np)
{
    const char *keys[] = {"spec", "template", "spec"};
    return nw_json_path(np, keys, 3);
}

static const cJSON *pool_labels(const cJSON *np)
{
    const char *keys[] = {"spec", "template", "metadata", "labels"};
    return nw_json_path(np, keys, 4);
}

/* Does the template carry class c's taint: its key with the policy's effect, whatever
 * the value (isolation holds for any value of the key: only the class's pods tolerate
 * it, with Exists on the key or the pool's value)? */
static bool pool_has_class_taint(const nw_gpu_policy_t *p, const nw_accel_class_t *c,
                                 const cJSON *np)
{
    const cJSON *taints = nw_json_get(pool_template_spec(np), "taints");
    const char *eff = nw_taints_effect_str(p->taint_effect);
    const cJSON *t;
    cJSON_ArrayForEach(t, nw_gpu_kids(taints))
    {
        const char *k = nw_json_str(t, "key"), *e = nw_json_str(t, "effect");
        if (k && e && strcmp(k, c->taint_key) == 0 && strcmp(e, eff) == 0)
            return true;
    }
    return false;
}

static int lowest_class(unsigned m)
{
    for (int i = 0; i < NW_GPU_MAX_CLASSES; i++)
        if (m & (1u << i))
            return i;
    return -1;
}

void nw_gpu_pool_analyze(const nw_gpu_policy_t *p, const cJSON *np, nw_gpu_pool_info_t *out)
{
    memset(out, 0, sizeof *out);
    out->cls = out->label_cls = out->taint_cls = -1;
    out->skip = nw_gpu_annotated_skip(np);
    const cJSON *reqs = nw_json_get(pool_template_spec(np), "requirements");
    const cJSON *r;
    int i = 0;
    unsigned only = all_classes(p), excl = 0, dev_excl = 0, unc_excl = 0,
             unc_named = all_classes(p);
    bool named = false;
    cJSON_ArrayForEach(r, nw_gpu_kids(reqs))
    {
        req_class_t c = classify_requirement(p, r);
        if ((c.forces || c.excl || c.dev_excl) && !out->why[0])
            snprintf(out->why, sizeof out->why, "spec.template.spec.requirements[%d] (%s %s)", i,
                     nw_json_str(r, "key") ? nw_json_str(r, "key") : "",
                     nw_json_str(r, "operator") ? nw_json_str(r, "operator") : "");
        if (c.forces) {
            out->gpu_only = true;
            only &= c.only;
        }
        named |= c.named;
        if (c.named)
            unc_named &= c.named_unc;
        excl |= c.excl;
        dev_excl |= c.dev_excl;
        unc_excl |= c.unc_excl;
        i++;
    }
    /* a class with uncounted families is out when its device labels and those families
     * both are (a list of families or types that names none of them excludes them) */
    excl |= dev_excl & (unc_excl | ~unc_named);
    out->dev_excluded = dev_excl;
    out->unc_excluded = unc_excl;
    out->possible = only & ~excl & all_classes(p);
    /* a list of families or types that names several classes is no one class's pool */
    out->several = named && (out->possible & (out->possible - 1)) != 0;
    out->excludes_gpu = out->possible == 0;
    const char *lv = nw_json_str(pool_labels(np), p->label_key);
    for (size_t k = 0; k < p->nclasses; k++) {
        if (lv && out->label_cls < 0 && strcmp(lv, p->classes[k].label_value) == 0)
            out->label_cls = (int)k;
        if (out->taint_cls < 0 && pool_has_class_taint(p, &p->classes[k], np))
            out->taint_cls = (int)k;
    }
    out->cls = out->label_cls >= 0   ? out->label_cls
               : out->taint_cls >= 0 ? out->taint_cls
               : out->gpu_only       ? lowest_class(out->possible)
                                     : -1;
    if (out->cls >= 0) {
        out->has_label = out->label_cls == out->cls;
        out->has_taint = pool_has_class_taint(p, &p->classes[out->cls], np);
    }
    const cJSON *limits = nw_json_get(nw_json_get(np, "spec"), "limits");
    cJSON_ArrayForEach(r, nw_gpu_kids(limits))
    {
        if (r->string && nw_gpu_resource_class(p, r->string) >= 0)
            out->gpu_limits = true;
    }
}

bool nw_gpu_pool_is_gpu(const nw_gpu_pool_info_t *in)
{
    return in->cls >= 0 && (in->gpu_only || in->label_cls >= 0);
}

/* "amd, gaudi" for the classes in mask */
static void class_names(const nw_gpu_policy_t *p, unsigned mask, char *buf, size_t n)
{
    size_t off = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < p->nclasses && off < n; i++) {
        if (!(mask & (1u << i)))
            continue;
        int w = snprintf(buf + off, n - off, "%s%s", off ? ", " : "", p->classes[i].name);
        if (w < 0)
            break;
        off += (size_t)w;
    }
}

/* the exclusions a generic pool needs: the count label of each device group with a
 * possible class whose device labels the pool does not exclude yet (bit 0: GPUs, bit 1:
 * accelerators), and by family (*by_family): every family of a possible class in neither
 * group, the uncounted families of the other possible classes */
static unsigned groups_needed(const nw_gpu_policy_t *p, const nw_gpu_pool_info_t *in,
                              unsigned *by_family)
{
    unsigned g = group_classes(p, K_GPU_PREFIX), a = group_classes(p, K_ACCEL_PREFIX);
    unsigned labelled = in->possible & ~in->dev_excluded;
    *by_family = in->possible & ((~g & ~a) | (uncounted_classes(p) & ~in->unc_excluded));
    return ((labelled & g) ? 1u : 0u) | ((labelled & a) ? 2u : 0u);
}

/* the families a generic pool excludes by name for the classes in by_family: all of a
 * class in neither device group, the uncounted ones of the others; into v (borrowed
 * strings; room for every family of the policy), the count */
static size_t families_needed(const nw_gpu_policy_t *p, unsigned by_family, char **v)
{
    unsigned g = group_classes(p, K_GPU_PREFIX), a = group_classes(p, K_ACCEL_PREFIX);
    size_t k = 0;
    for (size_t i = 0; i < p->nclasses; i++) {
        const nw_accel_class_t *c = &p->classes[i];
        if (!(by_family & (1u << i)))
            continue;
        bool all = !((g | a) & (1u << i));
        char *const *f = all ? c->families : c->uncounted;
        size_t n = all ? c->nfamilies : c->nuncounted;
        for (size_t j = 0; j < n; j++)
            v[k++] = f[j];
    }
    return k;
}

/* how many family names the policy knows (room for families_needed) */
static size_t policy_families(const nw_gpu_policy_t *p)
{
    size_t n = 0;
    for (size_t i = 0; i < p->nclasses; i++)
        n += p->classes[i].nfamilies + p->classes[i].nuncounted;
    return n;
}

/* A pool whose shape contradicts itself or the classes (no type possible, several
 * classes, the label of one class and the taint of another, a mark its requirements
 * exclude, a mark on a pool that also allows types of no class): the one message in
 * msgs[0] and 1, else 0. */
static size_t shape_problem(const nw_gpu_policy_t *p, const nw_gpu_pool_info_t *in,
                            char (*msgs)[512])
{
    if (in->gpu_only && in->possible == 0) {
        snprintf(msgs[0], 512,
                 "its requirements both require and exclude accelerator instance types, so it "
                 "can launch nothing; remove the contradicting requirement");
        return 1;
    }
    if (in->several) {
        char names[160];
        class_names(p, in->possible, names, sizeof names);
        snprintf(msgs[0], 512,
                 "its requirements name instance types of several accelerator classes (%s), "
                 "whose nodes need different taints and labels; use one NodePool per class",
                 names);
        return 1;
    }
    bool marked = in->label_cls >= 0 || in->taint_cls >= 0;
    const char *what = in->label_cls >= 0 ? "node label" : "taint";
    if (marked && in->label_cls >= 0 && in->taint_cls >= 0 && in->label_cls != in->taint_cls) {
        snprintf(msgs[0], 512,
                 "it carries the node label of the %s accelerator class (%s=%s) but the taint of "
                 "the %s class; use the label and taint of one class",
                 p->classes[in->label_cls].name, p->label_key,
                 p->classes[in->label_cls].label_value, p->classes[in->taint_cls].name);
        return 1;
    }
    if (marked && !(in->possible & (1u << in->cls))) {
        snprintf(msgs[0], 512,
                 "it carries the %s of the %s accelerator class but its requirements exclude "
                 "the instance types of that class (%s); remove the %s or allow instance types "
                 "of the class",
                 what, p->classes[in->cls].name, in->why, what);
        return 1;
    }
    if (marked && !in->gpu_only) {
        snprintf(msgs[0], 512,
                 "it carries the %s of the %s accelerator class but its requirements also allow "
                 "instance types of no accelerator class (ambiguous); restrict it to the class's "
                 "instance types, for example %s In [%s] or an instance-family list such as %s, "
                 "or add the annotation %s: skip for a deliberately mixed pool",
                 what, p->classes[in->cls].name,
                 *p->classes[in->cls].req_key ? p->classes[in->cls].req_key : K_FAMILY,
                 *p->classes[in->cls].req_key && p->classes[in->cls].nreq_values
                     ? p->classes[in->cls].req_values[0]
                     : (p->classes[in->cls].nfamilies ? p->classes[in->cls].families[0] : ""),
                 p->classes[in->cls].nfamilies ? p->classes[in->cls].families[0] : "",
                 NW_GPU_SKIP_ANNOTATION);
        return 1;
    }
    return 0;
}

/* After mutation, what an accelerator pool of class c still lacks (the class's taint,
 * its node label, the requirement that keeps out the other classes' types): the
 * messages from msgs[n] on, at most max in all; the new count. */
static size_t missing_marks(const nw_gpu_policy_t *p, const nw_gpu_pool_info_t *in,
                            const nw_accel_class_t *c, char (*msgs)[512], size_t n, size_t max)
{
    char taint[128];
    nw_gpu_taint_text(p, c, taint, sizeof taint);
    if (!in->has_taint && n < max)
        snprintf(msgs[n++], 512,
                 "it is an accelerator pool of the %s class (%s) without the class's taint "
                 "%s; add it to "
                 "spec.template.spec.taints (the mutating webhook adds it)",
                 c->name, in->gpu_only ? in->why : "the class's node label", taint);
    if (!in->has_label && n < max)
        snprintf(msgs[n++], 512,
                 "it is an accelerator pool of the %s class without the class's node label "
                 "%s=%s; add it to "
                 "spec.template.metadata.labels (the mutating webhook adds it)",
                 c->name, p->label_key, c->label_value);
    unsigned others = in->possible & ~(1u << in->cls);
    if (others && n < max) {
        char names[160];
        class_names(p, others, names, sizeof names);
        snprintf(msgs[n++], 512,
                 "it is an accelerator pool of the %s class but its requirements also allow "
                 "instance "
                 "types of other accelerator classes (%s); add the requirement %s In [%s] "
                 "(the mutating webhook adds it)",
                 c->name, names, c->req_key ? c->req_key : "",
                 c->nreq_values ? c->req_values[0] : "");
    }
    return n;
}

/* A pool of no class that allows the types of the classes in->possible: the message
 * naming the requirements that keep them out, in msgs[n]. */
static void accel_types_allowed(const nw_gpu_policy_t *p, const nw_gpu_pool_info_t *in,
                                char (*msgs)[512], size_t n)
{
    char names[160], need[400] = "";
    class_names(p, in->possible, names, sizeof names);
    unsigned by_family;
    unsigned groups = groups_needed(p, in, &by_family);
    size_t off = 0;
    if (groups & 1u)
        off += (size_t)snprintf(need + off, sizeof need - off, "%s DoesNotExist", NW_GPU_COUNT_KEY);
    if ((groups & 2u) && off < sizeof need)
        off += (size_t)snprintf(need + off, sizeof need - off, "%s%s DoesNotExist", off ? ", " : "",
                                NW_ACCEL_COUNT_KEY);
    char **fams = calloc(policy_families(p) + 1, sizeof *fams);
    size_t nf = fams ? families_needed(p, by_family, fams) : 0;
    if (nf && off < sizeof need) {
        off += (size_t)snprintf(need + off, sizeof need - off, "%s%s NotIn [", off ? ", " : "",
                                K_FAMILY);
        for (size_t f = 0; f < nf && off < sizeof need; f++)
            off += (size_t)snprintf(need + off, sizeof need - off, "%s%s", f ? ", " : "", fams[f]);
        if (off < sizeof need)
            snprintf(need + off, sizeof need - off, "]");
    }
    free(fams);
    char m[1024];
    snprintf(m, sizeof m,
             "it is not an accelerator pool but its requirements allow the instance types of "
             "the accelerator classes %s; add the requirements %s (the mutating webhook adds "
             "them) or make it a pool of one class",
             names, need);
    size_t len = strlen(m) < 511 ? strlen(m) : 511;
    memcpy(msgs[n], m, len);
    msgs[n][len] = '\0';
}

size_t nw_gpu_pool_problems(const nw_gpu_policy_t *p, const cJSON *np, bool after_mutation,
                            char (*msgs)[512], size_t max)
{
    if (!p || !p->enabled || !cJSON_IsObject(np) || max == 0)
        return 0;
    nw_gpu_pool_info_t in;
    nw_gpu_pool_analyze(p, np, &in);
    if (in.skip)
        return 0;
    size_t n = shape_problem(p, &in, msgs);
    if (n)
        return n;
    bool gpu = nw_gpu_pool_is_gpu(&in);
    const nw_accel_class_t *c = gpu ? &p->classes[in.cls] : NULL;
    const char *lv = nw_json_str(pool_labels(np), p->label_key);
    if (gpu && lv && !in.has_label && n < max)
        snprintf(msgs[n++], 512,
                 "it is an accelerator pool of the %s class but its template label %s=%s "
                 "conflicts with the class's node label %s=%s; set the label to %s",
                 c->name, p->label_key, lv, p->label_key, c->label_value, c->label_value);
    if (!after_mutation || n)
        return n;
    if (gpu)
        return missing_marks(p, &in, c, msgs, n, max);
    if (in.possible && n < max) {
        accel_types_allowed(p, &in, msgs, n);
        n++;
    }
    return n;
}

/* append requirement {key, op[, values]} to the template's requirements */
static NW_MUST_USE nw_rc_t add_requirement(nw_jsonpatch_t *patch, const char *key, const char *op,
                                           char *const *values, size_t nvalues)
{
    cJSON *r = nw_json_strings("key", key, "operator", op, (const char *)NULL);
    if (r && nvalues) {
        cJSON *vals = cJSON_AddArrayToObject(r, "values");
        for (size_t i = 0; vals && i < nvalues; i++) {
            cJSON *v = cJSON_CreateString(values[i]);
            if (!v) {
                cJSON_Delete(r);
                return NW_ENOMEM;
            }
            cJSON_AddItemToArray(vals, v);
        }
        if (!vals) {
            cJSON_Delete(r);
            return NW_ENOMEM;
        }
    }
    return nw_gpu_patch_add_owned(patch, "/spec/template/spec/requirements/-", r);
}

static NW_MUST_USE nw_rc_t patch_taint_and_label(const nw_gpu_policy_t *p,
                                                 const nw_accel_class_t *c,
                                                 const nw_gpu_pool_info_t *in, const cJSON *np,
                                                 const cJSON *tspec, nw_jsonpatch_t *patch)
{
    nw_rc_t rc = NW_OK;
    if (!in->has_taint) {
        cJSON *t =
            nw_json_strings("key", c->taint_key, "value", *c->taint_value ? c->taint_value : NULL,
                            "effect", nw_taints_effect_str(p->taint_effect), (const char *)NULL);
        if (cJSON_IsArray(nw_json_get(tspec, "taints")))
            rc = nw_gpu_patch_add_owned(patch, "/spec/template/spec/taints/-", t);
        else
            rc = nw_gpu_patch_add_owned(patch, "/spec/template/spec/taints", nw_gpu_wrap_array(t));
        if (rc != NW_OK)
            return rc;
    }
    if (!in->has_label) {
        const char *keys[] = {"spec", "template", "metadata"};
        const cJSON *meta = nw_json_path(np, keys, 3);
        const cJSON *labels = nw_json_get(meta, "labels");
        if (cJSON_IsObject(labels)) {
            char tok[256], path[320];
            if (nw_jsonpatch_escape(p->label_key, tok, sizeof tok) != NW_OK)
                return NW_ERANGE;
            snprintf(path, sizeof path, "/spec/template/metadata/labels/%s", tok);
            rc = nw_gpu_patch_add_owned(patch, path, cJSON_CreateString(c->label_value));
        } else {
            cJSON *m = nw_json_strings(p->label_key, c->label_value, (const char *)NULL);
            if (cJSON_IsObject(meta))
                rc = nw_gpu_patch_add_owned(patch, "/spec/template/metadata/labels", m);
            else
                rc = nw_gpu_patch_add_owned(patch, "/spec/template/metadata",
                                            nw_gpu_wrap("labels", m));
        }
    }
    return rc;
}

nw_rc_t nw_gpu_pool_patch(const nw_gpu_policy_t *p, const cJSON *np, nw_jsonpatch_t *patch,
                          nw_admit_result_t *res)
{
    if (!p || !p->enabled || !cJSON_IsObject(np))
        return NW_OK;
    nw_gpu_pool_info_t in;
    nw_gpu_pool_analyze(p, np, &in);
    if (in.skip) {
        if (res)
            nw_admit_warn(res,
                          "GPU isolation policy skipped for this NodePool (annotation %s: skip)",
                          NW_GPU_SKIP_ANNOTATION);
        return NW_OK;
    }
    char msgs[2][512];
    if (nw_gpu_pool_problems(p, np, false, msgs, 2) > 0)
        return NW_OK; /* validation denies (or warns); no half-fixes */
    const cJSON *tspec = pool_template_spec(np);
    if (!tspec)
        return NW_OK; /* schema validation reports the missing template */
    /* the CRD allows at most 100 requirements: at the cap, validation explains instead.
     * requirements is a required field: without it the pool is invalid, and adding one
     * here would make the API server admit it (Karpenter's CRDs refuse it), so leave it. */
    const cJSON *reqs = nw_json_get(tspec, "requirements");
    int room = cJSON_IsArray(reqs) ? 100 - cJSON_GetArraySize(reqs) : 0;
    nw_rc_t rc = NW_OK;
    if (nw_gpu_pool_is_gpu(&in)) {
        const nw_accel_class_t *c = &p->classes[in.cls];
        rc = patch_taint_and_label(p, c, &in, np, tspec, patch);
        if (rc == NW_OK && (in.possible & ~(1u << in.cls)) && room >= 1 && c->req_key &&
            *c->req_key && c->nreq_values)
            rc = add_requirement(patch, c->req_key, "In", c->req_values, c->nreq_values);
        return rc;
    }
    if (!in.possible)
        return NW_OK;
    unsigned by_family;
    unsigned groups = groups_needed(p, &in, &by_family);
    char **fams = calloc(policy_families(p) + 1, sizeof *fams);
    if (!fams)
        return NW_ENOMEM;
    size_t nf = families_needed(p, by_family, fams);
    int need = ((groups & 1u) != 0) + ((groups & 2u) != 0) + (nf != 0);
    if (need > room) {
        free(fams);
        return NW_OK;
    }
    if (groups & 1u)
        rc = add_requirement(patch, NW_GPU_COUNT_KEY, "DoesNotExist", NULL, 0);
    if (rc == NW_OK && (groups & 2u))
        rc = add_requirement(patch, NW_ACCEL_COUNT_KEY, "DoesNotExist", NULL, 0);
    if (rc == NW_OK && nf)
        rc = add_requirement(patch, K_FAMILY, "NotIn", fams, nf);
    free(fams);
    if (rc == NW_OK && in.gpu_limits && res)
        nw_admit_warn(res,
                      "this NodePool is not an accelerator pool: nodewarden added requirements "
                      "that exclude the accelerator classes' instance types, so its accelerator "
                      "limits will never be used; make it a pool of one class if it should "
                      "launch accelerator instances");
    return rc;
}
