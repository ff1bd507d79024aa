/*
 * admission/handlers.h — the admission handler table: which function answers
 * /mutate and /validate for which kind, and the handlers of NodePool and
 * EC2NodeClass (admission/nodepool.c, admission/ec2nodeclass.c; the Pod handlers
 * are the GPU policy's, admission/gpu.h). The rules themselves are the object
 * model's (api/nodepool.h, api/ec2nodeclass.h); a handler defaults a copy,
 * validates it and adds the GPU policy.
 *
 * Ownership and threads: as api/admit.h (handlers keep no state).
 */
#ifndef NW_ADMISSION_HANDLERS_H
#define NW_ADMISSION_HANDLERS_H

#include <cjson/cJSON.h>

#include "api/admit.h"

/* The handler table, terminated by an entry with kind == NULL (admission/handlers.c). */
extern const nw_admit_handler_t nw_handlers[];

/** Find the handler for group/kind; NULL if none (the server then allows untouched). */
const nw_admit_handler_t *nw_handlers_find(const char *group, const char *kind);

/** NodePool: mutate = schema defaults (+ GPU pool patch) as a JSON patch; validate
 * defaults a copy of the object first, as kube-apiserver validates the defaulted object. */
NW_MUST_USE nw_rc_t nw_nodepool_admit_mutate(const nw_admit_ctx_t *ctx, const nw_admit_req_t *req,
                                             nw_admit_result_t *res);
NW_MUST_USE nw_rc_t nw_nodepool_admit_validate(const nw_admit_ctx_t *ctx, const nw_admit_req_t *req,
                                               nw_admit_result_t *res);

/** EC2NodeClass: mutate = metadataOptions defaults; validate = default a copy, then
 * the CRD's schema and CEL rules. */
NW_MUST_USE nw_rc_t nw_admission_ec2nodeclass_mutate(const nw_admit_ctx_t *ctx,
                                                     const nw_admit_req_t *req,
                                                     nw_admit_result_t *res);
NW_MUST_USE nw_rc_t nw_admission_ec2nodeclass_validate(const nw_admit_ctx_t *ctx,
                                                       const nw_admit_req_t *req,
                                                       nw_admit_result_t *res);

#endif
