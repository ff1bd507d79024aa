/*
 * tests/fuzz/fuzz_awsjson.c — the JSON answers of AWS's JSON-protocol APIs on arbitrary
 * bytes: an SSM GetParameter response (scaler/aws/ssm.c, the AMI aliases and
 * ssmParameter), a Price List GetProducts page (scaler/aws/pricing.c, whose PriceList
 * entries are JSON documents inside JSON strings), and the error body every JSON call
 * reads on a failure (nw_sqs_parse_error). Invariants: a parsed SSM value fits its
 * buffer; every price kept has an instance type and a positive price, and pages append;
 * NextToken fits its buffer; a refusal says why; an error answer always has a code.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaler/aws/pricing.h"
#include "scaler/aws/sqs.h"
#include "scaler/aws/ssm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond, const char *what)
{
    if (!cond) {
        fprintf(stderr, "invariant violated: %s\n", what);
        abort();
    }
}

static void ssm(const char *p, size_t size)
{
    static const size_t lens[] = {1, 24, 2048};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        char out[2048];
        memset(out, 'x', sizeof out);
        nw_err_t err = {0};
        if (nw_ssm_parse(p, size, out, lens[i], &err) == NW_OK)
            check(strnlen(out, lens[i]) < lens[i], "the SSM value fits its buffer");
        else
            check(err.msg[0] != 0 && out[0] == 0, "a refused SSM answer says why, no value");
    }
}

static void pricing(const char *p, size_t size)
{
    static const char *const currencies[] = {"USD", "CNY"};
    for (size_t c = 0; c < 2; c++) {
        nw_price_t *v = NULL;
        size_t n = 0, cap = 0;
        char next[64];
        for (int page = 0; page < 2; page++) { /* the same page twice: the prices append */
            size_t before = n;
            nw_err_t err = {0};
            nw_rc_t rc = nw_pricing_parse_page(p, size, currencies[c], &v, &n, &cap, next,
                                               sizeof next, &err);
            check(strnlen(next, sizeof next) < sizeof next, "NextToken fits its buffer");
            check(n >= before && n <= cap, "prices are appended within the allocation");
            if (rc != NW_OK) {
                check(err.msg[0] != 0, "a refused page says why");
                break;
            }
            check(page == 0 || n - before == before, "the same page adds the same prices");
        }
        for (size_t i = 0; i < n; i++)
            check(v[i].type[0] && strnlen(v[i].type, sizeof v[i].type) < sizeof v[i].type &&
                      v[i].price > 0,
                  "a price has an instance type and is positive");
        free(v);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data;
    ssm(p, size);
    pricing(p, size);
    static const int codes[] = {400, 403, 500};
    for (size_t i = 0; i < 3; i++) {
        nw_sqs_error_t ae;
        nw_sqs_parse_error(p, size, codes[i], &ae);
        check(ae.code[0] != 0, "an error answer always has a code");
    }
    return 0;
}
