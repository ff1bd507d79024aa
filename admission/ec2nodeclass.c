/* admission/ec2nodeclass.c — EC2NodeClass admission handlers (mutate = metadataOptions
 * defaults as a JSON patch; validate = default a copy, then the CRD rules of
 * api/ec2nodeclass.c), on the shared flow of admission/crd.h. */
#include "admission/handlers.h"

#include "admission/crd.h"
#include "api/ec2nodeclass.h"

static const nw_crd_t ec2nodeclass = {"EC2NodeClass", "karpenter.k8s.aws",
                                      nw_api_ec2nodeclass_default, nw_api_ec2nodeclass_validate};

nw_rc_t nw_admission_ec2nodeclass_mutate(const nw_admit_ctx_t *ctx, const nw_admit_req_t *req,
                                         nw_admit_result_t *res)
{
    (void)ctx;
    return nw_crd_mutate(&ec2nodeclass, req, res, NULL, NULL);
}

nw_rc_t nw_admission_ec2nodeclass_validate(const nw_admit_ctx_t *ctx, const nw_admit_req_t *req,
                                           nw_admit_result_t *res)
{
    (void)ctx;
    return nw_crd_validate(&ec2nodeclass, req, res, NULL);
}
