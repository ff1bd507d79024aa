/*
 * api/duration.h — Go duration strings (time.ParseDuration / Duration.String).
 *
 * A duration is a possibly signed sequence of decimal numbers, each with an
 * optional fraction and a unit: "300ms", "-1.5h", "2h45m30.5s". Units: ns, us,
 * µs (U+00B5), μs (U+03BC), ms, s, m, h. "0" alone (optionally signed) is zero;
 * any other number needs a unit. The result is int64 nanoseconds; the range is
 * Go's, [-2^63, 2^63-1]. Fractions are converted with the same float64
 * arithmetic Go uses, so results match Go bit for bit. Error messages are Go's
 * ("time: invalid duration \"1x\"", "time: missing unit in duration \"1\"",
 * "time: unknown unit \"d\" in duration \"1d\""), with the input quoted as Go
 * quotes it (bytes >= 0x80 and control bytes as \xNN), truncated after 64 bytes.
 *
 * One deliberate difference: Go silently wraps "9223372036854775808ns" given
 * twice to 0; that is an error here.
 *
 * Pure functions, no allocation. Thread: any.
 */
#ifndef NW_API_DURATION_H
#define NW_API_DURATION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

#define NW_NANOSECOND ((int64_t)1)
#define NW_MICROSECOND ((int64_t)1000)
#define NW_MILLISECOND ((int64_t)1000000)
#define NW_SECOND ((int64_t)1000000000)
#define NW_MINUTE (60 * NW_SECOND)
#define NW_HOUR (60 * NW_MINUTE)

/* Buffer size that always holds a formatted duration and its NUL. */
#define NW_DURATION_STR_MAX 32

/** Parse a Go duration. On success *ns holds nanoseconds; on failure *ns is 0
 * and err (NW_EINVAL) carries Go's message; err->path is left empty. */
NW_MUST_USE nw_rc_t nw_duration_parse(const char *s, int64_t *ns, nw_err_t *err);

/** Length-delimited form (an embedded NUL is an ordinary invalid byte). */
NW_MUST_USE nw_rc_t nw_duration_parse_n(const char *s, size_t len, int64_t *ns, nw_err_t *err);

/** As nw_duration_parse, but the exact string "Never" (Karpenter's
 * NillableDuration) is accepted when allow_never is true: then *is_never is
 * true and *ns is INT64_MAX. Otherwise *is_never is false. When allow_never is
 * false, "Never" is an error that says it is not allowed here. is_never may be
 * NULL. */
NW_MUST_USE nw_rc_t nw_duration_parse_or_never(const char *s, bool allow_never, int64_t *ns,
                                               bool *is_never, nw_err_t *err);

/** Go's Duration.String(): "1h30m0s", "720h0m0s", "300ms", "1.5µs", "0s".
 * Writes at most cap bytes including the NUL (truncating if needed;
 * NW_DURATION_STR_MAX always suffices) and returns the full length. */
size_t nw_duration_format(int64_t ns, char *buf, size_t cap);

#endif
