/*
 * scaler/aws/ssm.h — AWS Systems Manager Parameter Store's GetParameter (AWS JSON 1.1:
 * POST to the SSM endpoint with X-Amz-Target: AmazonSSM.GetParameter, SigV4 service
 * "ssm"), for the AMI ids behind an EC2NodeClass's amiSelectorTerms `ssmParameter` and
 * `alias` (aws/karpenter-provider-aws pkg/providers/ssm/provider.go; the alias paths are
 * nodeclass.c's).
 *
 *   nw_ssm_t *s;
 *   nw_ssm_new(&cfg, creds, clock, &s, &err);
 *   char v[256];
 *   nw_ssm_get(s, "/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/standard/"
 *                 "recommended/image_id", v, sizeof v, &ae, &err);
 *
 * Values are cached per name for the TTL (Karpenter: 24 h for a pinned path, 30 min for a
 * mutable one such as "recommended" or "latest"); a failed lookup is not cached.
 * Errors: NW_EAWS with the API's code in ae (ParameterNotFound, AccessDeniedException,
 * ...), NW_ETIMEOUT / NW_EIO without a response, NW_EPARSE for a body without
 * Parameter.Value.
 *
 * Ownership: nw_ssm_new/nw_ssm_free; creds and clock are borrowed.
 * Thread: one thread at a time (the AWS cloud's lock serialises resolutions).
 */
#ifndef NW_SCALER_AWS_SSM_H
#define NW_SCALER_AWS_SSM_H

#include <stddef.h>
#include <stdint.h>

#include "common/clock.h"
#include "common/err.h"
#include "scaler/aws/awscfg.h"
#include "scaler/aws/creds.h"
#include "scaler/aws/sqs.h"

typedef struct nw_ssm nw_ssm_t;

/** A client for cfg->ssm, signed for cfg->region. */
NW_MUST_USE nw_rc_t nw_ssm_new(const nw_awscfg_t *cfg, nw_creds_t *creds, const nw_clock_t *clock,
                               nw_ssm_t **out, nw_err_t *err);
void nw_ssm_free(nw_ssm_t *s);
long nw_ssm_request_count(const nw_ssm_t *s);

/** The value of parameter name into out (cached; mutable: the shorter TTL). ae nullable. */
NW_MUST_USE nw_rc_t nw_ssm_get(nw_ssm_t *s, const char *name, int mutable_value, char *out,
                               size_t len, nw_sqs_error_t *ae, nw_err_t *err);

/** A GetParameter response body: Parameter.Value into out. NW_EPARSE otherwise. */
NW_MUST_USE nw_rc_t nw_ssm_parse(const char *json, size_t len, char *out, size_t outlen,
                                 nw_err_t *err);

#endif
