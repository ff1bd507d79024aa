/*
 * admission/crd.h — the flow the CRD handlers (NodePool, EC2NodeClass) share: on CREATE
 * and UPDATE, mutate answers the schema defaults as a JSON patch; validate defaults a copy
 * of the object (kube-apiserver validates the defaulted object), runs the CRD's rules into
 * an nw_kv_t and turns them into the answer. A handler adds only what is its own (the GPU
 * pool policy of admission/nodepool.c).
 *
 * Ownership: nw_crd_validate's defaulted->view borrows the request's object when there was
 * nothing to default, else points at defaulted->owned, which the caller frees (cJSON_Delete).
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
NW_MUST_USE nw_rc_t nw_crd_mutate(const nw_crd_t *crd, const nw_admit_req_t *req,
                                  nw_admit_result_t *res, nw_crd_extra_fn extra, const void *ud);

/** The object validate judged: view is what to read; owned (NULL when the request's own
 * object needed no defaults and view borrows it) is the caller's to cJSON_Delete. */
typedef struct {
    const cJSON *view;
    cJSON *owned;
} nw_crd_obj_t;

/** Validate: default a copy of req->object, validate it (old object on UPDATE) and answer.
 * An object with nothing to default is validated in place, not copied. defaulted (may be
 * NULL) gets the validated object for more checks; both members NULL when the request was
 * left alone or failed. */
NW_MUST_USE nw_rc_t nw_crd_validate(const nw_crd_t *crd, const nw_admit_req_t *req,
                                    nw_admit_result_t *res, nw_crd_obj_t *defaulted);

#endif
