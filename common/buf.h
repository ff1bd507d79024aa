/*
 * common/buf.h — a bounded, growable byte buffer (after curl's dynbuf).
 *
 * Every buffer has a cap fixed at init; an append that would pass it fails
 * with NW_ERANGE and leaves the buffer unchanged. Contents are always
 * NUL-terminated (the NUL is not counted in len).
 *
 * Ownership: caller storage, nw_buf_init/nw_buf_cleanup. nw_buf_take moves the
 * bytes out (caller frees with free()) and leaves the buffer empty.
 * Thread: a buffer belongs to one thread at a time.
 */
#ifndef NW_COMMON_BUF_H
#define NW_COMMON_BUF_H

#include <stdarg.h>
#include <stddef.h>

#include "common/err.h"

typedef struct {
    char *data; /* NULL until the first append */
    size_t len; /* bytes used, excluding the trailing NUL */
    size_t cap; /* bytes allocated */
    size_t max; /* hard limit on len */
} nw_buf_t;

/** Initialise an empty buffer that may hold at most max bytes. */
void nw_buf_init(nw_buf_t *b, size_t max);

/** Free the contents; the buffer may be reused after nw_buf_init. NULL-safe. */
void nw_buf_cleanup(nw_buf_t *b);

/** Forget the contents but keep the allocation. */
void nw_buf_reset(nw_buf_t *b);

/** Make room for extra more bytes in one allocation (appends up to that size then do not
 * reallocate). NW_ERANGE past the cap, NW_ENOMEM on allocation failure. */
NW_MUST_USE nw_rc_t nw_buf_reserve(nw_buf_t *b, size_t extra) __attribute__((warn_unused_result));

/** Append n bytes. NW_ERANGE past the cap, NW_ENOMEM on allocation failure. */
NW_MUST_USE nw_rc_t nw_buf_add(nw_buf_t *b, const void *p, size_t n)
    __attribute__((warn_unused_result));

/** Append a NUL-terminated string. */
NW_MUST_USE nw_rc_t nw_buf_adds(nw_buf_t *b, const char *s) __attribute__((warn_unused_result));

/** Append printf-style formatted text. */
NW_MUST_USE nw_rc_t nw_buf_addf(nw_buf_t *b, const char *fmt, ...)
    __attribute__((warn_unused_result)) __attribute__((format(printf, 2, 3)));

/** va_list form of nw_buf_addf. */
NW_MUST_USE nw_rc_t nw_buf_vaddf(nw_buf_t *b, const char *fmt, va_list ap)
    __attribute__((warn_unused_result));

/** Length (1..4) of the valid UTF-8 sequence at the start of the NUL-terminated s,
 * 0 if it is not one (stray continuation byte, overlong form, surrogate, beyond
 * U+10FFFF, truncated). */
size_t nw_buf_utf8_seq_len(const char *s);

/** Append the JSON text s (from cJSON's printer, which passes bytes >= 0x80 through)
 * with each byte that is not part of a valid UTF-8 sequence as \ufffd: such bytes
 * can only be inside its strings. */
NW_MUST_USE nw_rc_t nw_buf_add_utf8(nw_buf_t *b, const char *s) __attribute__((warn_unused_result));

/** Append s as the body of a JSON string (escaped, without the quotes). Bytes that
 * are not valid UTF-8 become \ufffd each, as Go's encoding/json writes them. */
NW_MUST_USE nw_rc_t nw_buf_add_json_escaped(nw_buf_t *b, const char *s)
    __attribute__((warn_unused_result));

/** Borrowed pointer to the contents ("" when empty); valid until the next mutation. */
const char *nw_buf_str(const nw_buf_t *b);

/** Move the contents out: returns a malloc'd NUL-terminated string (never NULL
 * unless out of memory; "" when empty) and leaves b empty. Free with free(). */
char *nw_buf_take(nw_buf_t *b);

#endif
