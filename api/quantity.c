/*
 * api/quantity.c — Kubernetes resource.Quantity in int64 milli-units.
 *
 * The scanner follows ParseQuantity/parseQuantityString in
 * k8s.io/apimachinery/pkg/api/resource/quantity.go and the suffix table of
 * suffix.go; printing follows CanonicalizeBytes. The value is computed exactly
 * on a small decimal digit buffer (no floating point): see compute_milli.
 */
#include "api/quantity.h"

#include <stdio.h>
#include <string.h>

#define QUOTE_MAX 48 /* input bytes quoted in error messages */

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Quote up to QUOTE_MAX bytes of s for an error message, escaping the rest. */
static void quote(const char *s, size_t len, char *out, size_t cap)
{
    size_t o = 0;
    out[o++] = '"';
    for (size_t i = 0; i < len && i < QUOTE_MAX && o + 6 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c >= 0x7f) {
            o += (size_t)snprintf(out + o, cap - o, "\\x%02x", c);
        } else {
            if (c == '"' || c == '\\')
                out[o++] = '\\';
            out[o++] = (char)c;
        }
    }
    if (len > QUOTE_MAX && o + 5 < cap) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o++] = '"';
    out[o] = '\0';
}

/* "'x'" for a printable character, "byte 0xNN" otherwise. */
static void describe_char(char c, char *out, size_t cap)
{
    unsigned char u = (unsigned char)c;
    if (u > 0x20 && u < 0x7f)
        snprintf(out, cap, "'%c'", c);
    else if (u == ' ')
        snprintf(out, cap, "' ' (space)");
    else
        snprintf(out, cap, "byte 0x%02x", u);
}

/* Suffix meaning: value = number * base^exp. */
typedef struct {
    int base; /* 10 or 2 */
    int64_t exp;
    nw_quantity_format_t format;
} suffix_t;

/* Kubernetes' suffixer.interpret: the fixed tables, then e/E<int>. */
static bool interpret_suffix(const char *s, size_t n, suffix_t *out, const char **why)
{
    static const char dec1[] = "numkMGTPE";
    static const int dec1_exp[] = {-9, -6, -3, 3, 6, 9, 12, 15, 18};
    static const char bin1[] = "KMGTPE";
    *why = NULL;
    out->base = 10;
    out->exp = 0;
    out->format = NW_QTY_DECIMAL_SI;
    if (n == 0)
        return true;
    if (n == 1) {
        const char *p = memchr(dec1, s[0], sizeof dec1 - 1);
        if (p) {
            out->exp = dec1_exp[p - dec1];
            return true;
        }
    }
    if (n == 2 && s[1] == 'i') {
        const char *p = memchr(bin1, s[0], sizeof bin1 - 1);
        if (p) {
            out->base = 2;
            out->exp = 10 * (int64_t)(p - bin1 + 1);
            out->format = NW_QTY_BINARY_SI;
            return true;
        }
    }
    if (n > 1 && (s[0] == 'e' || s[0] == 'E')) {
        /* strconv.ParseInt(s[1:], 10, 64), then bounded to +-MaxInt32 */
        size_t i = 1;
        bool neg = false;
        if (s[i] == '+' || s[i] == '-') {
            neg = s[i] == '-';
            i++;
        }
        if (i == n) {
            *why = "the exponent has no digits";
            return false;
        }
        int64_t e = 0;
        for (; i < n; i++) {
            if (!is_digit(s[i])) {
                *why = "the exponent is not an integer";
                return false;
            }
            e = e * 10 + (s[i] - '0');
            if (e > INT32_MAX) {
                *why = "the exponent is out of range";
                return false;
            }
        }
        out->exp = neg ? -e : e;
        out->format = NW_QTY_DECIMAL_EXPONENT;
        return true;
    }
    if (n == 1 && (s[0] == 'e' || s[0] == 'E'))
        *why = "the exponent has no digits";
    return false;
}

/* The mantissa's digits as one virtual string: num digits then denom digits. */
typedef struct {
    const char *num, *den;
    size_t nl, dl;
} digits_t;

static int digit_at(const digits_t *d, size_t x)
{
    return x < d->nl ? d->num[x] - '0' : d->den[x - d->nl] - '0';
}

#define HEAD 20 /* headroom for the growth of multiplying by up to 2^60 */
#define FRAC 60 /* fraction digits kept; >= 60 makes ceil(x * 2^B) exact for B <= 60 */

/*
 * milli = ceil(|mantissa| * 10^exp10 * base^exp * 1000) computed exactly.
 * The milli-value's decimal digits are laid out in buf: ipc integer digits,
 * then FRAC fraction digits; digits beyond those only matter as "non-zero"
 * (sticky). Multiplying by 2^B (B <= 60) is done in place; with at least B
 * fraction digits kept, the floor of the product is exact (x*2^B is an integer
 * only if x has at most B decimals, so truncating after FRAC >= B decimals
 * cannot move it across an integer).
 */
static NW_MUST_USE nw_rc_t compute_milli(const digits_t *d, const suffix_t *suf, uint64_t *out)
{
    size_t L = d->nl + d->dl, f = 0, l = 0;
    bool any = false;
    for (size_t x = 0; x < L; x++) {
        if (digit_at(d, x) != 0) {
            if (!any)
                f = x;
            any = true;
            l = x;
        }
    }
    *out = 0;
    if (!any)
        return NW_OK;
    int64_t n = (int64_t)(l - f + 1);
    int64_t p = 3 - (int64_t)d->dl + (int64_t)(L - 1 - l);
    int bin = 0;
    if (suf->base == 10)
        p += suf->exp;
    else
        bin = (int)suf->exp;
    int64_t ip = n + p; /* integer digits of the milli value before the 2^bin factor */
    if (ip > 19)
        return NW_ERANGE; /* >= 10^19 > INT64_MAX */
    int64_t ipc = ip > 0 ? ip : 0;
    unsigned char buf[HEAD + 19 + FRAC];
    size_t used = (size_t)(HEAD + ipc + FRAC);
    memset(buf, 0, sizeof buf);
    int64_t shift = ip - ipc; /* M index of buffer position t is t + shift */
    for (int64_t t = 0; t < ipc + FRAC; t++) {
        int64_t j = t + shift;
        if (j >= 0 && j < n)
            buf[HEAD + t] = (unsigned char)digit_at(d, f + (size_t)j);
    }
    bool sticky = (n - 1 - shift) >= ipc + FRAC;
    for (int k = 0; k < bin / 10; k++) {
        unsigned carry = 0;
        for (size_t i = used; i-- > 0;) {
            unsigned v = buf[i] * 1024u + carry;
            buf[i] = (unsigned char)(v % 10);
            carry = v / 10;
        }
    }
    uint64_t acc = 0;
    size_t int_end = (size_t)(HEAD + ipc);
    for (size_t i = 0; i < int_end; i++) {
        if (acc > (UINT64_MAX - buf[i]) / 10)
            return NW_ERANGE;
        acc = acc * 10 + buf[i];
    }
    bool frac = sticky;
    for (size_t i = int_end; i < used && !frac; i++)
        frac = buf[i] != 0;
    if (frac)
        acc++;
    if (acc > (uint64_t)INT64_MAX)
        return NW_ERANGE;
    *out = acc;
    return NW_OK;
}

nw_rc_t nw_quantity_parse_n(const char *s, size_t len, nw_quantity_t *out, nw_err_t *err)
{
    char q[QUOTE_MAX * 4 + 8], c[16];
    nw_quantity_t zero = {0, NW_QTY_DECIMAL_SI};
    if (out)
        *out = zero;
    if (!s)
        len = 0;
    quote(s ? s : "", len, q, sizeof q);
    if (len == 0)
        return nw_err_set(err, NW_EINVAL, "", NW_QUANTITY_REGEX_MSG ": the value is empty");

    size_t pos = 0;
    bool neg = false;
    if (s[0] == '+' || s[0] == '-') {
        neg = s[0] == '-';
        pos++;
    }
    digits_t d = {s + pos, NULL, 0, 0};
    while (pos < len && is_digit(s[pos]))
        pos++;
    d.nl = (size_t)(s + pos - d.num);
    d.den = s + pos;
    if (pos < len && s[pos] == '.') {
        pos++;
        d.den = s + pos;
        while (pos < len && is_digit(s[pos]))
            pos++;
        d.dl = (size_t)(s + pos - d.den);
    }
    if (d.nl + d.dl == 0) {
        if (pos < len) {
            describe_char(s[pos], c, sizeof c);
            return nw_err_set(err, NW_EINVAL, "",
                              NW_QUANTITY_REGEX_MSG ": %s has no digits before the suffix "
                                                    "(found %s at offset %zu)",
                              q, c, pos);
        }
        return nw_err_set(err, NW_EINVAL, "", NW_QUANTITY_REGEX_MSG ": %s has no digits", q);
    }
    /* suffix: [eEinumkKMGTP]* [-+]? [0-9]* up to the end */
    static const char suffix_chars[] = "eEinumkKMGTP";
    size_t suf_start = pos;
    while (pos < len && memchr(suffix_chars, s[pos], sizeof suffix_chars - 1))
        pos++;
    if (pos < len && (s[pos] == '+' || s[pos] == '-'))
        pos++;
    while (pos < len && is_digit(s[pos]))
        pos++;
    if (pos != len) {
        describe_char(s[pos], c, sizeof c);
        return nw_err_set(err, NW_EINVAL, "",
                          NW_QUANTITY_REGEX_MSG ": unexpected %s at offset %zu in %s", c, pos, q);
    }
    suffix_t suf;
    const char *why = NULL;
    if (!interpret_suffix(s + suf_start, len - suf_start, &suf, &why)) {
        char sq[QUOTE_MAX * 4 + 8];
        quote(s + suf_start, len - suf_start, sq, sizeof sq);
        if (why)
            return nw_err_set(err, NW_EINVAL, "", "unable to parse quantity's suffix: %s in %s: %s",
                              sq, q, why);
        char hint[40] = "";
        size_t sl = len - suf_start;
        if (sl == 2 && s[suf_start + 1] == 'i' && memchr("kmgtpe", s[suf_start], 6))
            snprintf(hint, sizeof hint, " (did you mean \"%ci\"?)", s[suf_start] - 'a' + 'A');
        return nw_err_set(err, NW_EINVAL, "",
                          "unable to parse quantity's suffix: unknown suffix %s in %s; expected "
                          "one of n u m k M G T P E Ki Mi Gi Ti Pi Ei or e<integer>%s",
                          sq, q, hint);
    }
    uint64_t mag;
    if (compute_milli(&d, &suf, &mag) != NW_OK)
        return nw_err_set(err, NW_ERANGE, "",
                          "quantity %s is too large: the magnitude must not exceed "
                          "9223372036854775807m (int64 milli-units, about 9.2P or 8Pi)",
                          q);
    nw_quantity_format_t fmt = suf.format;
    if (fmt == NW_QTY_BINARY_SI && mag > 0 && mag < 1000)
        fmt = NW_QTY_DECIMAL_SI; /* ParseQuantity: BinarySI below 1 becomes DecimalSI */
    if (out) {
        out->milli = neg ? -(int64_t)mag : (int64_t)mag;
        out->format = fmt;
    }
    return NW_OK;
}

nw_rc_t nw_quantity_parse(const char *s, nw_quantity_t *out, nw_err_t *err)
{
    return nw_quantity_parse_n(s, s ? strlen(s) : 0, out, err);
}

nw_quantity_t nw_quantity_from_milli(int64_t milli, nw_quantity_format_t format)
{
    nw_quantity_t q = {milli == INT64_MIN ? -INT64_MAX : milli, format};
    return q;
}

static NW_MUST_USE nw_rc_t range_err(nw_err_t *err, const char *op)
{
    return nw_err_set(err, NW_ERANGE, "",
                      "quantity %s overflows: the result must be within +-9223372036854775807m",
                      op);
}

nw_rc_t nw_quantity_from_int(int64_t v, nw_quantity_format_t format, nw_quantity_t *out,
                             nw_err_t *err)
{
    int64_t m;
    if (__builtin_mul_overflow(v, (int64_t)1000, &m) || m == INT64_MIN)
        return range_err(err, "conversion to milli-units");
    out->milli = m;
    out->format = format;
    return NW_OK;
}

nw_rc_t nw_quantity_add(nw_quantity_t a, nw_quantity_t b, nw_quantity_t *out, nw_err_t *err)
{
    int64_t m;
    if (__builtin_add_overflow(a.milli, b.milli, &m) || m == INT64_MIN)
        return range_err(err, "addition");
    out->format = a.milli == 0 ? b.format : a.format;
    out->milli = m;
    return NW_OK;
}

nw_rc_t nw_quantity_sub(nw_quantity_t a, nw_quantity_t b, nw_quantity_t *out, nw_err_t *err)
{
    int64_t m;
    if (__builtin_sub_overflow(a.milli, b.milli, &m) || m == INT64_MIN)
        return range_err(err, "subtraction");
    out->format = a.milli == 0 ? b.format : a.format;
    out->milli = m;
    return NW_OK;
}

nw_rc_t nw_quantity_mul_int(nw_quantity_t a, int64_t k, nw_quantity_t *out, nw_err_t *err)
{
    int64_t m;
    if (__builtin_mul_overflow(a.milli, k, &m) || m == INT64_MIN)
        return range_err(err, "multiplication");
    out->format = a.format;
    out->milli = m;
    return NW_OK;
}

int nw_quantity_cmp(nw_quantity_t a, nw_quantity_t b)
{
    return (a.milli > b.milli) - (a.milli < b.milli);
}

bool nw_quantity_is_zero(nw_quantity_t q)
{
    return q.milli == 0;
}

int64_t nw_quantity_value(nw_quantity_t q)
{
    int64_t v = q.milli / 1000, r = q.milli % 1000;
    if (r > 0)
        v++;
    else if (r < 0)
        v--;
    return v;
}

const char *nw_quantity_format_name(nw_quantity_format_t f)
{
    switch (f) {
    case NW_QTY_DECIMAL_SI:
        return "DecimalSI";
    case NW_QTY_BINARY_SI:
        return "BinarySI";
    case NW_QTY_DECIMAL_EXPONENT:
        return "DecimalExponent";
    }
    return "DecimalSI";
}

size_t nw_quantity_format(nw_quantity_t q, char *buf, size_t cap)
{
    char tmp[NW_QUANTITY_STR_MAX];
    int n;
    if (q.milli == 0) {
        n = snprintf(tmp, sizeof tmp, "0");
        goto out;
    }
    const char *sign = q.milli < 0 ? "-" : "";
    uint64_t a = q.milli < 0 ? (uint64_t)(-(q.milli + 1)) + 1 : (uint64_t)q.milli;
    nw_quantity_format_t f = q.format;
    if (f == NW_QTY_BINARY_SI) {
        /* below 1024 or fractional: printed as DecimalSI (CanonicalizeBytes) */
        if (a < 1024000 || a % 1000 != 0) {
            f = NW_QTY_DECIMAL_SI;
        } else {
            static const char *const bin[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
            uint64_t v = a / 1000;
            int e = 0;
            while (v % 1024 == 0 && e < 6) {
                v /= 1024;
                e++;
            }
            n = snprintf(tmp, sizeof tmp, "%s%llu%s", sign, (unsigned long long)v, bin[e]);
            goto out;
        }
    }
    /* base 10: strip factors of ten, then make the exponent a multiple of 3 */
    int exp = -3;
    while (a % 10 == 0) {
        a /= 10;
        exp++;
    }
    switch (((exp % 3) + 3) % 3) {
    case 1:
        a *= 10;
        exp -= 1;
        break;
    case 2:
        a *= 100;
        exp -= 2;
        break;
    }
    if (f == NW_QTY_DECIMAL_EXPONENT) {
        if (exp == 0)
            n = snprintf(tmp, sizeof tmp, "%s%llu", sign, (unsigned long long)a);
        else
            n = snprintf(tmp, sizeof tmp, "%s%llue%d", sign, (unsigned long long)a, exp);
    } else {
        static const char *const dec[] = {"m", "", "k", "M", "G", "T", "P", "E"};
        n = snprintf(tmp, sizeof tmp, "%s%llu%s", sign, (unsigned long long)a, dec[(exp + 3) / 3]);
    }
out:
    if (cap > 0)
        snprintf(buf, cap, "%s", tmp);
    return (size_t)n;
}
