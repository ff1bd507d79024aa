/*
 * admission/crd.h — the flow the CRD handlers (NodePool, EC2NodeClass) share: on CREATE
 * and UPDATE, mutate answers the schema defaults as a JSON patch; validate defaults a copy
 * of the object (kube-apiserver validates the defaulted object), runs the CRD's rules into
 * an nw_kv_t and turns them into the answer. A handler adds only what is its own (the GPU
 * pool policy of admission/nodepool.c).
 *
 * Ownership: nw_crd_validate's *defaulted is owned by the caller (cJSON_Delete).
 * Thread: any (no state).
 */
#ifndef NW_ADMISSION_CRD_H
#define NW_ADMISSION_CRD_H

#include <cjson/cJSON.h>

#include "api/admit.h"
#include "api/jsonpatch.h"
#include "api/kval.h"

typedef struct {
    const char *kind, *group; /* for the answer's details ("NodePool", "karpenter.sh") */
    nw_rc_t (*defaults)(const cJSON *obj, nw_jsonpatch_t *patch);
    nw_rc_t (*validate)(const cJSON *obj, const cJSON *old, nw_kv_t *kv, nw_admit_result_t *res);
} nw_crd_t;

/** More operations for mutate's patch, after the defaults (NULL: none). */
typedef nw_rc_t (*nw_crd_extra_fn)(const void *ud, const cJSON *obj, nw_jsonpatch_t *patch,
                                   nw_admit_result_t *res);

/** Mutate: res->patch = the defaults (+ extra's operations) of req->object. Requests that
 * are not a CREATE or UPDATE with an object are left alone (NW_OK). */
nw_rc_t nw_crd_mutate(const nw_crd_t *crd, const nw_admit_req_t *req, nw_admit_result_t *res,
                      nw_crd_extra_fn extra, const void *ud);

/** Validate: default a copy of req->object, validate it (old object on UPDATE) and answer.
 * defaulted (may be NULL) gets the defaulted copy for more checks, or NULL when the request
 * was left alone or failed. */
nw_rc_t nw_crd_validate(const nw_crd_t *crd, const nw_admit_req_t *req, nw_admit_result_t *res,
                        cJSON **defaulted);

#endif
