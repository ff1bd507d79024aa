/*
 * tests/fuzz/fuzz_patterns.c — the CRD patterns' direct matchers (api/kre.c) against
 * their POSIX regex translations: for every pattern that has a direct matcher, both
 * must give the same answer on the input (up to its first NUL, as the validators see
 * strings). A disagreement aborts with the pattern and the input.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/kre.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    for (int id = 0; id < NW_RE__COUNT; id++) {
        const nw_kv_re_t *re = nw_kre((nw_re_id_t)id);
        if (!re->direct)
            continue;
        bool want = nw_kval_re_match_posix(re, s), got = re->direct(s);
        if (want != got) {
            fprintf(stderr, "pattern %s: regex says %d, direct matcher %d, on \"%s\"\n", re->re2,
                    want, got, s);
            abort();
        }
    }
    free(s);
    return 0;
}
