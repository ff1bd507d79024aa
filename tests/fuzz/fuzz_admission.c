/*
 * tests/fuzz/fuzz_admission.c — the AdmissionReview path (decode, dispatch to
 * the real handler table, encode) on arbitrary bytes, for /validate and
 * /mutate. Checks the response invariants kube-apiserver relies on: 200 means
 * a JSON AdmissionReview whose uid equals the request's, anything else is a
 * JSON Status; a validating response never carries a patch. The uid is compared
 * byte for byte: the request is decoded again with every escaped NUL (\u0000,
 * where cJSON would end the string) made \u0001, so a uid cut at a NUL differs. The GPU policy is
 * on (defaults), so the Pod and NodePool handlers do their full work.
 */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission/gpu.h"
#include "admission/review.h"
#include "common/jsonarena.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* data with each \u0000 escape made \u0001 (an escaped backslash stays as it is) */
static char *nul_visible(const uint8_t *data, size_t size)
{
    char *c = malloc(size ? size : 1);
    if (!c)
        abort();
    memcpy(c, data, size);
    for (size_t i = 0; i + 1 < size; i++)
        if (c[i] == '\\') {
            if (c[i + 1] == 'u' && size - i >= 6 && memcmp(c + i + 2, "0000", 4) == 0)
                c[i + 5] = '1';
            i++;
        }
    return c;
}

static void check(int cond, const char *what, const nw_review_out_t *out)
{
    if (!cond) {
        fprintf(stderr, "invariant violated: %s\nstatus %d body %s\n", what, out->status,
                out->body ? out->body : "(null)");
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static nw_gpu_policy_t gpu;
    static nw_admit_ctx_t ctx = {.gpu = NULL, .self_namespace = "nodewarden"};
    if (!ctx.gpu) {
        nw_jsonarena_install(); /* as cli/main.c does: the review path runs on the arena */
        if (nw_gpu_policy_init(&gpu, "nodewarden") != NW_OK)
            abort();
        ctx.gpu = &gpu;
    }
    for (int mutate = 0; mutate < 2; mutate++) {
        nw_review_out_t out;
        if (nw_review_handle(&ctx, NULL, mutate, (const char *)data, size, &out) != NW_OK)
            continue; /* out of memory only */
        check(out.body != NULL && strlen(out.body) == out.body_len, "body length", &out);
        cJSON *j = cJSON_ParseWithLengthOpts(out.body, out.body_len + 1, NULL, 1);
        check(j != NULL, "response is JSON", &out);
        if (out.status == 200) {
            const cJSON *r = cJSON_GetObjectItemCaseSensitive(j, "response");
            const cJSON *uid = cJSON_GetObjectItemCaseSensitive(r, "uid");
            check(cJSON_IsString(uid), "response.uid", &out);
            /* the request's uid, decoded again with its NULs visible */
            nw_review_t rv;
            char *vis = nul_visible(data, size);
            check(nw_review_decode(vis, size, &rv, NULL) == NW_OK, "200 only for decodable reviews",
                  &out);
            check(strcmp(uid->valuestring, rv.req.uid) == 0, "uid echoed byte for byte", &out);
            nw_review_cleanup(&rv);
            free(vis);
            check(cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(r, "allowed")), "allowed", &out);
            int has_patch = cJSON_GetObjectItemCaseSensitive(r, "patch") != NULL;
            int has_type = cJSON_GetObjectItemCaseSensitive(r, "patchType") != NULL;
            check(has_patch == has_type, "patch iff patchType", &out);
            check(mutate || !has_patch, "no patch on /validate", &out);
        } else {
            check(out.status == 400 || out.status == 500, "status 200/400/500", &out);
            const cJSON *k = cJSON_GetObjectItemCaseSensitive(j, "kind");
            check(cJSON_IsString(k) && strcmp(k->valuestring, "Status") == 0, "Status body", &out);
        }
        cJSON_Delete(j);
        nw_review_out_cleanup(&out);
    }
    return 0;
}
