/* common/file.c — see file.h. */
#include "common/file.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "common/buf.h"

char *nw_file_read_stream(FILE *f, size_t max, size_t *len)
{
    nw_buf_t b;
    nw_buf_init(&b, max);
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        nw_rc_t rc = nw_buf_add(&b, chunk, n);
        if (rc != NW_OK) {
            nw_buf_cleanup(&b);
            errno = rc == NW_ERANGE ? EFBIG : ENOMEM;
            return NULL;
        }
    }
    if (ferror(f)) {
        int e = errno ? errno : EIO;
        nw_buf_cleanup(&b);
        errno = e;
        return NULL;
    }
    size_t total = b.len;
    char *s = nw_buf_take(&b);
    nw_buf_cleanup(&b);
    if (!s) {
        errno = ENOMEM;
        return NULL;
    }
    if (len)
        *len = total;
    return s;
}

char *nw_file_read(const char *path, size_t max, size_t *len)
{
    bool std = strcmp(path, "-") == 0;
    FILE *f = std ? stdin : fopen(path, "rb");
    if (!f)
        return NULL;
    char *s = nw_file_read_stream(f, max, len);
    if (!std) {
        int e = errno;
        fclose(f);
        errno = e;
    }
    return s;
}
