/*
 * common/file.h — read a whole file (or stdin) into memory, with a size cap.
 *
 * Ownership: the returned text is malloc'd, NUL-terminated (the NUL is not counted
 * in *len); free with free(). Thread: any (no state).
 */
#ifndef NW_COMMON_FILE_H
#define NW_COMMON_FILE_H

#include <stddef.h>
#include <stdio.h>

/** Read stream f to its end, at most max bytes; *len (len may be NULL) gets the length.
 * NULL with errno set: EFBIG when the stream holds more than max bytes, ENOMEM, or the
 * read error (EIO if the stream gives none). Does not close f. */
char *nw_file_read_stream(FILE *f, size_t max, size_t *len);

/** Open path ("-" = stdin) and read it as nw_file_read_stream does; NULL with errno
 * set (the open error: ENOENT, EACCES, ...; or as above). */
char *nw_file_read(const char *path, size_t max, size_t *len);

#endif
