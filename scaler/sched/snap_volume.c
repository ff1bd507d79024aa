/* scaler/sched/snap_volume.c — building a scheduling snapshot (scaler/sched/snapshot.c): storage.
 * PersistentVolumes, PersistentVolumeClaims and StorageClasses, and the topology a pod's
 * volumes ask for, as kubernetes-sigs/karpenter
 * pkg/controllers/provisioning/scheduling/volumetopology.go computes it (GetRequirements,
 * ValidatePersistentVolumeClaims). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/wellknown.h"
#include "common/json.h"
#include "scaler/sched/snap.h"

static bool deleting(const cJSON *md)
{
    const cJSON *d = nw_json_get(md, "deletionTimestamp");
    return d && !cJSON_IsNull(d);
}

nw_rc_t nw_snap_volume_add_pv_json(nw_sched_snap_t *s, const cJSON *pv, nw_err_t *err)
{
    const cJSON *md = nw_json_get(pv, "metadata"), *spec = nw_json_get(pv, "spec");
    const char *name = nw_json_str(md, "name");
    if (!name)
        return nw_err_set(err, NW_EINVAL, "metadata.name", "Required value");
    const char *drv = nw_json_str(nw_json_get(spec, "csi"), "driver");
    if (!drv && nw_json_get(spec, "awsElasticBlockStore"))
        drv = "ebs.csi.aws.com"; /* CSI migration */
    nw_spv_t v = {
        .name = strdup(name), .deleting = deleting(md), .driver = nw_snapshot_dupstr(drv)};
    if (!v.name || (drv && !v.driver)) {
        free(v.name);
        free(v.driver);
        return nw_err_set(err, NW_ENOMEM, "", "out of memory");
    }
    const cJSON *req = nw_json_get(nw_json_get(spec, "nodeAffinity"), "required");
    nw_rc_t rc = NW_OK;
    if (req) {
        rc = nw_requirements_json_parse_terms(nw_json_get(req, "nodeSelectorTerms"),
                                              "spec.nodeAffinity.required.nodeSelectorTerms",
                                              &v.terms, &v.nterms, err);
        /* local and hostPath volumes: the hostname is dropped (the node does not exist
         * yet); a term left empty allows any node */
        bool local = nw_json_get(spec, "local") || nw_json_get(spec, "hostPath");
        for (size_t i = 0; rc == NW_OK && local && i < v.nterms; i++) {
            nw_reqs_t *t = &v.terms[i];
            for (size_t k = 0; k < t->n; k++)
                if (strcmp(t->v[k].key, "kubernetes.io/hostname") == 0) {
                    nw_requirements_req_cleanup(&t->v[k]);
                    memmove(&t->v[k], &t->v[k + 1], (t->n - k - 1) * sizeof t->v[k]);
                    t->n--;
                    break;
                }
        }
    }
    nw_spv_t *n = rc == NW_OK ? nw_snapshot_grow(s->pvs, &s->cpvs, s->npvs, sizeof *n) : NULL;
    if (!n) {
        free(v.name);
        free(v.driver);
        nw_requirements_json_terms_free(v.terms, v.nterms);
        return rc != NW_OK ? rc : nw_err_set(err, NW_ENOMEM, "", "out of memory");
    }
    s->pvs = n;
    s->pvs[s->npvs++] = v;
    return NW_OK;
}

nw_rc_t nw_snap_volume_add_pvc_json(nw_sched_snap_t *s, const cJSON *pvc, nw_err_t *err)
{
    const cJSON *md = nw_json_get(pvc, "metadata"), *spec = nw_json_get(pvc, "spec");
    const char *name = nw_json_str(md, "name"), *ns = nw_json_str(md, "namespace");
    if (!name)
        return nw_err_set(err, NW_EINVAL, "metadata.name", "Required value");
    const char *vol = nw_json_str(spec, "volumeName"), *sc = nw_json_str(spec, "storageClassName");
    const char *phase = nw_json_str(nw_json_get(pvc, "status"), "phase");
    nw_spvc_t c = {.ns = strdup(ns ? ns : "default"),
                   .name = strdup(name),
                   .volume = vol && *vol ? strdup(vol) : NULL,
                   .sc = sc && *sc ? strdup(sc) : NULL,
                   .bind_completed = nw_json_get(nw_json_get(md, "annotations"),
                                                 "pv.kubernetes.io/bind-completed"),
                   .deleting = deleting(md),
                   .lost = phase && strcmp(phase, "Lost") == 0};
    nw_spvc_t *n = nw_snapshot_grow(s->pvcs, &s->cpvcs, s->npvcs, sizeof *n);
    if (!n || !c.ns || !c.name || (vol && *vol && !c.volume) || (sc && *sc && !c.sc)) {
        free(c.ns);
        free(c.name);
        free(c.volume);
        free(c.sc);
        if (n)
            s->pvcs = n;
        return nw_err_set(err, NW_ENOMEM, "", "out of memory");
    }
    s->pvcs = n;
    s->pvcs[s->npvcs++] = c;
    return NW_OK;
}

nw_rc_t nw_snap_volume_add_storageclass_json(nw_sched_snap_t *s, const cJSON *sc, nw_err_t *err)
{
    const cJSON *md = nw_json_get(sc, "metadata");
    const char *name = nw_json_str(md, "name");
    if (!name)
        return nw_err_set(err, NW_EINVAL, "metadata.name", "Required value");
    const char *mode = nw_json_str(sc, "volumeBindingMode");
    if (mode && strcmp(mode, "Immediate") != 0 && strcmp(mode, "WaitForFirstConsumer") != 0)
        return nw_err_set(err, NW_EINVAL, "volumeBindingMode",
                          "Unsupported value: \"%s\": supported values: \"Immediate\", "
                          "\"WaitForFirstConsumer\"",
                          mode);
    const char *prov = nw_json_str(sc, "provisioner");
    if (prov && strcmp(prov, "kubernetes.io/aws-ebs") == 0)
        prov = "ebs.csi.aws.com"; /* CSI migration */
    nw_ssc_t c = {.name = strdup(name),
                  .immediate = !mode || strcmp(mode, "Immediate") == 0,
                  .provisioner = nw_snapshot_dupstr(prov)};
    nw_rc_t rc = c.name && (!prov || c.provisioner)
                     ? NW_OK
                     : nw_err_set(err, NW_ENOMEM, "", "out of memory");
    const cJSON *topo = nw_json_get(sc, "allowedTopologies"), *t;
    int ti = 0;
    cJSON_ArrayForEach(t, topo)
    {
        if (rc != NW_OK)
            break;
        nw_reqs_t r;
        nw_requirements_init(&r);
        const cJSON *e;
        int ei = 0;
        cJSON_ArrayForEach(e, nw_json_get(t, "matchLabelExpressions"))
        {
            char path[96];
            snprintf(path, sizeof path, "allowedTopologies[%d].matchLabelExpressions[%d]", ti,
                     ei++);
            const char *key = nw_json_str(e, "key");
            const char *vals[64];
            size_t nv = 0;
            const cJSON *v;
            cJSON_ArrayForEach(v, nw_json_get(e, "values"))
            {
                if (cJSON_IsString(v) && nv < 64)
                    vals[nv++] = v->valuestring;
            }
            if (!key || !nv) {
                rc = nw_err_set(err, NW_EINVAL, path, "key and values: Required value");
                break;
            }
            if ((rc = nw_requirements_add(&r, key, NW_REQ_IN, vals, nv, 0, err)) != NW_OK)
                break;
        }
        ti++;
        if (rc == NW_OK && r.n) {
            nw_reqs_t *na = realloc(c.alts, (c.nalts + 1) * sizeof *na);
            if (!na)
                rc = nw_err_set(err, NW_ENOMEM, "", "out of memory");
            else {
                c.alts = na;
                c.alts[c.nalts++] = r;
                continue;
            }
        }
        nw_requirements_cleanup(&r);
    }
    nw_ssc_t *n = rc == NW_OK ? nw_snapshot_grow(s->scs, &s->cscs, s->nscs, sizeof *n) : NULL;
    if (!n) {
        free(c.name);
        free(c.provisioner);
        nw_requirements_json_terms_free(c.alts, c.nalts);
        return rc != NW_OK ? rc : nw_err_set(err, NW_ENOMEM, "", "out of memory");
    }
    s->scs = n;
    s->scs[s->nscs++] = c;
    return NW_OK;
}

/* ---- a pod's volumes ---------------------------------------------------------- */

static const nw_spvc_t *find_pvc(const nw_sched_snap_t *s, const char *ns, const char *name)
{
    for (size_t i = 0; i < s->npvcs; i++)
        if (strcmp(s->pvcs[i].ns, ns) == 0 && strcmp(s->pvcs[i].name, name) == 0)
            return &s->pvcs[i];
    return NULL;
}

static void set_msg(char **msg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_msg(char **msg, const char *fmt, ...)
{
    char buf[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    *msg = strdup(buf);
}

/* alts × vol (mergeVolumeRequirementAlternatives: the compatible pairs, else all) */
static NW_MUST_USE nw_rc_t merge_alts(nw_reqs_t **alts, size_t *nalts, const nw_reqs_t *vol,
                                      size_t nvol)
{
    size_t na = *nalts ? *nalts : 1, cap = na * nvol, n = 0;
    nw_reqs_t *out = calloc(cap ? cap : 1, sizeof *out);
    if (!out)
        return NW_ENOMEM;
    nw_rc_t rc = NW_OK;
    for (int pass = 0; pass < 2 && n == 0 && rc == NW_OK; pass++)
        for (size_t i = 0; i < na && rc == NW_OK; i++)
            for (size_t j = 0; j < nvol && rc == NW_OK; j++) {
                const nw_reqs_t *a = *nalts ? &(*alts)[i] : NULL;
                if (pass == 0 && a && !nw_requirements_intersects(a, &vol[j], NULL))
                    continue;
                nw_requirements_init(&out[n]);
                rc = a ? nw_requirements_copy(&out[n], a) : NW_OK;
                if (rc == NW_OK)
                    rc = nw_requirements_add_all(&out[n], &vol[j]);
                n++;
            }
    if (rc != NW_OK) {
        nw_requirements_json_terms_free(out, n);
        return rc;
    }
    nw_requirements_json_terms_free(*alts, *nalts);
    *alts = out;
    *nalts = n;
    return NW_OK;
}

nw_rc_t nw_snap_volume_alts(const nw_sched_snap_t *s, const cJSON *spec, const char *pod_ns,
                            const char *pod_name, nw_reqs_t **alts, size_t *nalts, char **msg)
{
    *alts = NULL;
    *nalts = 0;
    *msg = NULL;
    const cJSON *vol;
    cJSON_ArrayForEach(vol, nw_json_get(spec, "volumes"))
    {
        const char *vname = nw_json_str(vol, "name");
        const char *claim = nw_json_str(nw_json_get(vol, "persistentVolumeClaim"), "claimName");
        char eph[512];
        if (!claim && nw_json_get(vol, "ephemeral") && vname) {
            snprintf(eph, sizeof eph, "%s-%s", pod_name, vname);
            claim = eph;
        }
        if (!claim)
            continue;
        const nw_spvc_t *pvc = find_pvc(s, pod_ns, claim);
        const nw_reqs_t *va = NULL;
        size_t nva = 0;
        if (!pvc) {
            set_msg(msg, "persistentvolumeclaim \"%s/%s\" not found", pod_ns, claim);
        } else if (pvc->deleting) {
            set_msg(msg, "persistentvolumeclaim \"%s/%s\" is being deleted", pod_ns, claim);
        } else if (pvc->lost) {
            set_msg(msg, "persistentvolumeclaim \"%s/%s\" bound to non-existent persistentvolume",
                    pod_ns, claim);
        } else if (pvc->volume) {
            const nw_spv_t *pv = NULL;
            for (size_t i = 0; i < s->npvs && !pv; i++)
                if (strcmp(s->pvs[i].name, pvc->volume) == 0)
                    pv = &s->pvs[i];
            if (!pv)
                set_msg(msg, "persistentvolume \"%s\" not found", pvc->volume);
            else if (pv->deleting)
                set_msg(msg, "persistentvolume \"%s\" is being deleted", pvc->volume);
            else if (!pvc->bind_completed)
                set_msg(msg,
                        "persistentvolumeclaim \"%s/%s\" is considered unbound (no "
                        "pv.kubernetes.io/bind-completed annotation)",
                        pod_ns, claim);
            else {
                va = pv->terms;
                nva = pv->nterms;
            }
        } else if (!pvc->sc) {
            set_msg(msg, "unbound persistentvolumeclaim \"%s/%s\" must define a storage class",
                    pod_ns, claim);
        } else {
            const nw_ssc_t *sc = NULL;
            for (size_t i = 0; i < s->nscs && !sc; i++)
                if (strcmp(s->scs[i].name, pvc->sc) == 0)
                    sc = &s->scs[i];
            if (!sc)
                set_msg(msg, "storageclass \"%s\" not found", pvc->sc);
            else if (sc->immediate)
                set_msg(msg,
                        "persistentvolumeclaim \"%s/%s\" with immediate volume binding mode "
                        "must be bound",
                        pod_ns, claim);
            else {
                va = sc->alts;
                nva = sc->nalts;
            }
        }
        if (*msg)
            break;
        if (nva && merge_alts(alts, nalts, va, nva) != NW_OK) {
            nw_requirements_json_terms_free(*alts, *nalts);
            *alts = NULL;
            *nalts = 0;
            return NW_ENOMEM;
        }
    }
    return NW_OK;
}

/* ---- attach limits (Karpenter pkg/scheduling/volumeusage.go) ---------------------------- */

nw_rc_t nw_snap_volume_add_csinode_json(nw_sched_snap_t *s, const cJSON *csinode, nw_err_t *err)
{
    const char *name = nw_json_str(nw_json_get(csinode, "metadata"), "name");
    if (!name)
        return nw_err_set(err, NW_EINVAL, "metadata.name", "Required value");
    nw_scsinode_t c = {.node = strdup(name)};
    nw_rc_t rc = c.node ? NW_OK : nw_err_set(err, NW_ENOMEM, "", "out of memory");
    const cJSON *d;
    int i = 0;
    cJSON_ArrayForEach(d, nw_json_get(nw_json_get(csinode, "spec"), "drivers"))
    {
        if (rc != NW_OK)
            break;
        char path[96];
        snprintf(path, sizeof path, "spec.drivers[%d]", i++);
        const char *drv = nw_json_str(d, "name");
        const cJSON *cnt = nw_json_get(nw_json_get(d, "allocatable"), "count");
        if (!drv) {
            rc = nw_err_set(err, NW_EINVAL, path, "name: Required value");
            break;
        }
        if (!cnt || cJSON_IsNull(cnt))
            continue; /* no limit reported */
        if (!cJSON_IsNumber(cnt) || cnt->valuedouble < 0 || cnt->valuedouble > 1e6 ||
            cnt->valuedouble != (int)cnt->valuedouble) {
            rc = nw_err_set(err, NW_EINVAL, path,
                            "allocatable.count: must be a non-negative integer");
            break;
        }
        char **nd = realloc(c.drivers, (size_t)(c.n + 1) * sizeof *nd);
        if (nd)
            c.drivers = nd;
        int *nl = nd ? realloc(c.limits, (size_t)(c.n + 1) * sizeof *nl) : NULL;
        if (nl)
            c.limits = nl;
        if (!nd || !nl || !(c.drivers[c.n] = strdup(drv))) {
            rc = nw_err_set(err, NW_ENOMEM, "", "out of memory");
            break;
        }
        c.limits[c.n++] = (int)cnt->valuedouble;
    }
    nw_scsinode_t *n =
        rc == NW_OK ? nw_snapshot_grow(s->csinodes, &s->ccsinodes, s->ncsinodes, sizeof *n) : NULL;
    if (!n) {
        free(c.node);
        for (int k = 0; k < c.n; k++)
            free(c.drivers[k]);
        free(c.drivers);
        free(c.limits);
        return rc != NW_OK ? rc : nw_err_set(err, NW_ENOMEM, "", "out of memory");
    }
    s->csinodes = n;
    s->csinodes[s->ncsinodes++] = c;
    return NW_OK;
}

const nw_scsinode_t *nw_snap_volume_csinode(const nw_sched_snap_t *s, const char *node)
{
    for (size_t i = 0; node && i < s->ncsinodes; i++)
        if (strcmp(s->csinodes[i].node, node) == 0)
            return &s->csinodes[i];
    return NULL;
}

static const char *sc_driver(const nw_sched_snap_t *s, const char *sc)
{
    for (size_t i = 0; sc && i < s->nscs; i++)
        if (strcmp(s->scs[i].name, sc) == 0)
            return s->scs[i].provisioner;
    return NULL;
}

static NW_MUST_USE nw_rc_t vol_add(nw_svol_t **out, int *n, const char *driver, const char *ns,
                                   const char *claim)
{
    nw_svol_t *nv = realloc(*out, (size_t)(*n + 1) * sizeof *nv);
    if (!nv)
        return NW_ENOMEM;
    *out = nv;
    size_t len = strlen(ns) + strlen(claim) + 2;
    nw_svol_t v = {strdup(driver), malloc(len)};
    if (!v.driver || !v.id) {
        free(v.driver);
        free(v.id);
        return NW_ENOMEM;
    }
    snprintf(v.id, len, "%s/%s", ns, claim);
    nv[(*n)++] = v;
    return NW_OK;
}

nw_rc_t nw_snap_volume_pod_volumes(const nw_sched_snap_t *s, const cJSON *spec, const char *ns,
                                   const char *pod, nw_svol_t **out, int *n)
{
    const cJSON *vol;
    cJSON_ArrayForEach(vol, nw_json_get(spec, "volumes"))
    {
        const char *claim = nw_json_str(nw_json_get(vol, "persistentVolumeClaim"), "claimName");
        const cJSON *eph = nw_json_get(vol, "ephemeral");
        const char *driver = NULL;
        char gen[512];
        if (claim) {
            const nw_spvc_t *c = NULL;
            for (size_t i = 0; i < s->npvcs && !c; i++)
                if (strcmp(s->pvcs[i].ns, ns) == 0 && strcmp(s->pvcs[i].name, claim) == 0)
                    c = &s->pvcs[i];
            if (!c)
                continue;
            if (c->volume) {
                for (size_t i = 0; i < s->npvs && !driver; i++)
                    if (strcmp(s->pvs[i].name, c->volume) == 0)
                        driver = s->pvs[i].driver;
            } else
                driver = sc_driver(s, c->sc);
        } else if (eph) {
            /* the claim the ephemeral volume controller makes: <pod>-<volume> */
            const char *vn = nw_json_str(vol, "name");
            const cJSON *tspec = nw_json_get(nw_json_get(eph, "volumeClaimTemplate"), "spec");
            driver = sc_driver(s, nw_json_str(tspec, "storageClassName"));
            snprintf(gen, sizeof gen, "%s-%s", pod, vn ? vn : "");
            claim = gen;
        }
        if (driver && claim && vol_add(out, n, driver, ns, claim) != NW_OK)
            return NW_ENOMEM;
    }
    return NW_OK;
}
