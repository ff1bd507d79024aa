/*
 * bench/webhook/instr.c — the admission path in a loop, for instruction counts.
 *
 *   build/bench/webhook-instr BODY.json validate|mutate N
 *
 * Reads one AdmissionReview, then runs it N times through nw_review_handle
 * (decode, the handler table with the default GPU policy, encode) exactly as the
 * HTTPS server does per request, without the HTTP and TLS layers. Run under
 * `valgrind --tool=callgrind --toggle-collect=nw_bench_loop` (what
 * bench/webhook/run does), the instruction count divided by N is the cost of one
 * review in nodewarden's own code and the libraries it calls (cJSON, regex, libc),
 * a number that does not move with machine noise. Prints the verdict of the last
 * run so the caller can check it is the one expected.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission/gpu.h"
#include "admission/review.h"
#include "common/file.h"
#include "common/jsonarena.h"

nw_rc_t nw_bench_loop(const nw_admit_ctx_t *ctx, int mutate, const char *body, size_t len, long n,
                      nw_review_out_t *out);

/* The measured function (callgrind --toggle-collect=nw_bench_loop): n reviews. */
__attribute__((noinline)) nw_rc_t nw_bench_loop(const nw_admit_ctx_t *ctx, int mutate,
                                                const char *body, size_t len, long n,
                                                nw_review_out_t *out)
{
    for (long i = 0; i < n; i++) {
        nw_review_out_cleanup(out);
        if (nw_review_handle(ctx, NULL, mutate, body, len, out) != NW_OK)
            return NW_ENOMEM;
    }
    return NW_OK;
}

int main(int argc, char **argv)
{
    if (argc != 4 || (strcmp(argv[2], "validate") != 0 && strcmp(argv[2], "mutate") != 0)) {
        fprintf(stderr, "usage: %s BODY.json validate|mutate N\n", argv[0]);
        return 2;
    }
    char *end = NULL;
    long n = strtol(argv[3], &end, 10);
    if (!end || *end || n < 1 || n > 10000000) {
        fprintf(stderr, "%s: N: want an integer 1..10000000, got \"%s\"\n", argv[0], argv[3]);
        return 2;
    }
    size_t len = 0;
    char *body = nw_file_read(argv[1], 1 << 20, &len);
    if (!body) {
        fprintf(stderr, "%s: %s: %s\n", argv[0], argv[1], strerror(errno));
        return 1;
    }
    nw_jsonarena_install(); /* as cli/main.c does */
    nw_gpu_policy_t gpu;
    if (nw_gpu_policy_init(&gpu, "nodewarden") != NW_OK) {
        fprintf(stderr, "%s: out of memory\n", argv[0]);
        free(body);
        return 1;
    }
    nw_admit_ctx_t ctx = {.gpu = &gpu, .self_namespace = "nodewarden"};
    int mutate = strcmp(argv[2], "mutate") == 0;
    nw_review_out_t out = {0};
    /* one review first, outside the measured function: what is built once per process
     * (compiled patterns, tables) is not a per-review cost */
    int rc = nw_bench_loop(&ctx, mutate, body, len, 1, &out) == NW_OK &&
                     nw_bench_loop(&ctx, mutate, body, len, n, &out) == NW_OK
                 ? 0
                 : 1;
    if (rc)
        fprintf(stderr, "%s: out of memory\n", argv[0]);
    if (!rc)
        printf("status=%d body=%s\n", out.status, out.body ? out.body : "");
    nw_review_out_cleanup(&out);
    nw_gpu_policy_cleanup(&gpu);
    free(body);
    return rc;
}
