/*
 * tests/fuzz/replay.c — runs a libFuzzer target over files named on the command
 * line, without libFuzzer: `make test` uses it to replay the saved corpus under
 * AddressSanitizer and UBSan, so a crash once found stays fixed.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
    int n = 0;
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        if (!f) {
            perror(argv[i]);
            return 2;
        }
        size_t cap = 1 << 16, len = 0;
        uint8_t *buf = malloc(cap);
        size_t r;
        while (buf && (r = fread(buf + len, 1, cap - len, f)) > 0) {
            len += r;
            if (len == cap) {
                cap *= 2;
                uint8_t *nb = realloc(buf, cap);
                if (!nb) {
                    free(buf);
                    buf = NULL;
                }
                buf = nb;
            }
        }
        fclose(f);
        if (!buf) {
            fprintf(stderr, "out of memory\n");
            return 2;
        }
        /* copy into an exact-size allocation so ASan catches reads past the end */
        uint8_t *exact = malloc(len ? len : 1);
        if (!exact)
            return 2;
        for (size_t k = 0; k < len; k++)
            exact[k] = buf[k];
        free(buf);
        LLVMFuzzerTestOneInput(exact, len);
        free(exact);
        n++;
    }
    printf("%d inputs replayed\n", n);
    return 0;
}
