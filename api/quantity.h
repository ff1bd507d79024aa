/*
 * api/quantity.h — Kubernetes resource.Quantity (k8s.io/apimachinery/pkg/api/resource).
 *
 * Grammar accepted by nw_quantity_parse (Kubernetes' ParseQuantity):
 *
 *   <quantity>  ::= <sign>? <number> <suffix>
 *   <number>    ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
 *   <suffix>    ::= "" | n | u | m | k | M | G | T | P | E          (DecimalSI)
 *                 | Ki | Mi | Gi | Ti | Pi | Ei                      (BinarySI)
 *                 | (e|E) <sign>? <digits>                           (DecimalExponent)
 *
 * Differences from Kubernetes, all deliberate:
 *  - Precision is milli-units: the value is stored as an int64 count of 1/1000
 *    units. Anything finer is rounded up in magnitude (away from zero) to the
 *    next whole milli-unit, which is what Quantity.MilliValue() returns for the
 *    same input ("1n", "0.1m", "1e-9" all become 1m; "-0.1m" becomes -1m).
 *    Kubernetes itself keeps nano precision, so `kubectl` prints "100u" where
 *    nw_quantity_format prints "1m", and "1.5m" as "1500u" where we print "2m".
 *  - Range: |milli| <= INT64_MAX (about 9.2e15 units, 8Pi is the largest binary
 *    power that fits). Larger values are NW_ERANGE; Kubernetes keeps them in a
 *    big decimal (and caps BinarySI at 2^63-1).
 *  - The number must contain a digit, as the CRD OpenAPI pattern for
 *    quantities requires: "Gi", "e3", "." and "-." are rejected (the Go
 *    scanner reads them as 0).
 *  - Formatting is always canonical. Kubernetes' String() echoes some
 *    non-canonical inputs verbatim because of a parse fast path ("+1", "01",
 *    "1.001" print as typed; kubernetes/kubernetes#138165); we print "1", "1",
 *    "1001m".
 *
 *  - As in Kubernetes, a BinarySI value that is not a multiple of 1024 prints
 *    without a suffix ("312.5Ki" -> "320000"), which re-parses as DecimalSI and
 *    then prints as "320k": the value survives every round trip, the text
 *    after one more.
 *
 * Values are plain structs: no ownership, no allocation. Thread: any.
 */
#ifndef NW_API_QUANTITY_H
#define NW_API_QUANTITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

/* How a quantity is printed, as Kubernetes tracks it (Quantity.Format). */
typedef enum {
    NW_QTY_DECIMAL_SI = 0,   /* 12M, 1500m */
    NW_QTY_BINARY_SI,        /* 12Mi; values below 1024 or fractional print as DecimalSI */
    NW_QTY_DECIMAL_EXPONENT, /* 12e6 */
} nw_quantity_format_t;

typedef struct {
    int64_t milli;               /* value in 1/1000 units; never INT64_MIN */
    nw_quantity_format_t format; /* printing format, from the parsed suffix */
} nw_quantity_t;

/* Buffer size that always holds a formatted quantity and its NUL. */
#define NW_QUANTITY_STR_MAX 32

/* The message Kubernetes gives for a malformed quantity (ErrFormatWrong). */
#define NW_QUANTITY_REGEX_MSG                                                                      \
    "quantities must match the regular expression "                                                \
    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"

/** Parse s (NUL-terminated, no surrounding whitespace). On success *out holds
 * the value; on failure *out is zeroed and err says why: NW_EINVAL for a
 * malformed string (message starts like Kubernetes': NW_QUANTITY_REGEX_MSG,
 * "unable to parse quantity's suffix" ...), NW_ERANGE when the magnitude does
 * not fit in int64 milli-units. err->path is left empty. */
NW_MUST_USE nw_rc_t nw_quantity_parse(const char *s, nw_quantity_t *out, nw_err_t *err);

/** Length-delimited form of nw_quantity_parse (s need not be NUL-terminated;
 * an embedded NUL is a malformed character). */
NW_MUST_USE nw_rc_t nw_quantity_parse_n(const char *s, size_t len, nw_quantity_t *out,
                                        nw_err_t *err);

/** A quantity of milli/1000 units. INT64_MIN saturates to -INT64_MAX. */
nw_quantity_t nw_quantity_from_milli(int64_t milli, nw_quantity_format_t format);

/** A quantity of v whole units; NW_ERANGE when v*1000 does not fit (out unchanged). */
NW_MUST_USE nw_rc_t nw_quantity_from_int(int64_t v, nw_quantity_format_t format, nw_quantity_t *out,
                                         nw_err_t *err);

/** *out = a + b. The format is a's, or b's when a is zero (Quantity.Add).
 * NW_ERANGE on overflow, *out unchanged. out may point to a or b's storage. */
NW_MUST_USE nw_rc_t nw_quantity_add(nw_quantity_t a, nw_quantity_t b, nw_quantity_t *out,
                                    nw_err_t *err);

/** *out = a - b. The format is a's, or b's when a is zero (Quantity.Sub).
 * NW_ERANGE on overflow, *out unchanged. */
NW_MUST_USE nw_rc_t nw_quantity_sub(nw_quantity_t a, nw_quantity_t b, nw_quantity_t *out,
                                    nw_err_t *err);

/** *out = a * k, format kept. NW_ERANGE on overflow, *out unchanged. */
NW_MUST_USE nw_rc_t nw_quantity_mul_int(nw_quantity_t a, int64_t k, nw_quantity_t *out,
                                        nw_err_t *err);

/** -1, 0 or 1 as a < b, a == b, a > b (formats are ignored). */
int nw_quantity_cmp(nw_quantity_t a, nw_quantity_t b);

/** True when the value is zero. */
bool nw_quantity_is_zero(nw_quantity_t q);

/** Whole units, rounded away from zero as Quantity.Value() does (1500m -> 2, -1500m -> -2). */
int64_t nw_quantity_value(nw_quantity_t q);

/** Canonical text as Kubernetes' CanonicalizeBytes makes it ("1500m", "1536Mi",
 * "1k", "100M", "1e3"). Writes at most cap bytes including the NUL (truncating
 * if cap is too small; NW_QUANTITY_STR_MAX always suffices) and returns the
 * length of the full text. */
size_t nw_quantity_format(nw_quantity_t q, char *buf, size_t cap);

/** "DecimalSI", "BinarySI" or "DecimalExponent". Static storage. */
const char *nw_quantity_format_name(nw_quantity_format_t f);

#endif
