/*
 * tests/fuzz/fuzz_quantity.c — libFuzzer target for api/quantity.
 * The input, as a NUL-terminated string, is parsed; a value that parses must
 * format to canonical text that parses back to the same value and prints the
 * same again, and the arithmetic must agree with its overflow reports.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/quantity.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    nw_quantity_t q, back;
    nw_err_t err = {0};
    nw_rc_t rc = nw_quantity_parse(s, &q, &err);
    if (rc != NW_OK) {
        /* every failure says why, with a code that matches */
        if ((rc != NW_EINVAL && rc != NW_ERANGE) || err.rc != rc || err.msg[0] == '\0')
            abort();
        free(s);
        return 0;
    }
    if (q.milli == INT64_MIN)
        abort();
    char buf[NW_QUANTITY_STR_MAX], buf2[NW_QUANTITY_STR_MAX];
    size_t n = nw_quantity_format(q, buf, sizeof buf);
    if (n == 0 || n >= sizeof buf || strlen(buf) != n)
        abort();
    if (nw_quantity_parse(buf, &back, NULL) != NW_OK || back.milli != q.milli)
        abort();
    /* BinarySI text without a binary suffix ("320000" for 312.5Ki) re-parses as
     * DecimalSI and may print differently ("320k"), as in Kubernetes; from
     * there on the text is a fixed point. */
    nw_quantity_format(back, buf2, sizeof buf2);
    if (strcmp(buf, buf2) != 0) {
        char buf3[NW_QUANTITY_STR_MAX];
        nw_quantity_t again;
        if (q.format != NW_QTY_BINARY_SI || nw_quantity_parse(buf2, &again, NULL) != NW_OK ||
            again.milli != q.milli)
            abort();
        nw_quantity_format(again, buf3, sizeof buf3);
        if (strcmp(buf2, buf3) != 0)
            abort();
    }
    /* arithmetic: success and overflow agree with 128-bit math */
    nw_quantity_t r;
    __int128 want = (__int128)q.milli + q.milli;
    rc = nw_quantity_add(q, q, &r, NULL);
    if ((rc == NW_OK) != (want <= INT64_MAX && want >= -INT64_MAX) ||
        (rc == NW_OK && r.milli != want))
        abort();
    rc = nw_quantity_sub(q, back, &r, NULL);
    if (rc != NW_OK || r.milli != 0)
        abort();
    /* Value(): whole units rounded away from zero */
    __int128 v = (__int128)nw_quantity_value(q) * 1000, m = q.milli;
    __int128 av = v < 0 ? -v : v, am = m < 0 ? -m : m;
    if ((v < 0) != (m < 0) || av < am || av - am >= 1000)
        abort();
    free(s);
    return 0;
}
