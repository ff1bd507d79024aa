/*
 * tests/fuzz/fuzz_duration.c — libFuzzer target for api/duration.
 * The input, as a NUL-terminated string, is parsed; a duration that parses
 * must format (Go's String()) to text that parses back to the same value and
 * formats identically; failures must carry a Go-style message.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/duration.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    int64_t ns = 7, back = 0;
    nw_err_t err = {0};
    nw_rc_t rc = nw_duration_parse(s, &ns, &err);
    if (rc != NW_OK) {
        if (rc != NW_EINVAL || err.rc != NW_EINVAL || strncmp(err.msg, "time: ", 6) != 0 || ns != 0)
            abort();
    } else {
        char buf[NW_DURATION_STR_MAX], buf2[NW_DURATION_STR_MAX];
        size_t n = nw_duration_format(ns, buf, sizeof buf);
        if (n == 0 || n >= sizeof buf || strlen(buf) != n)
            abort();
        if (nw_duration_parse(buf, &back, NULL) != NW_OK || back != ns)
            abort();
        nw_duration_format(back, buf2, sizeof buf2);
        if (strcmp(buf, buf2) != 0)
            abort();
    }
    /* the Never wrapper agrees with the plain parser on everything else */
    bool never = false;
    int64_t ns2 = 0;
    nw_rc_t rc2 = nw_duration_parse_or_never(s, true, &ns2, &never, NULL);
    if (strcmp(s, "Never") == 0) {
        if (rc2 != NW_OK || !never || ns2 != INT64_MAX)
            abort();
    } else if (rc2 != rc || never || ns2 != ns) {
        abort();
    }
    free(s);
    return 0;
}
