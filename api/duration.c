/*
 * api/duration.c — Go's time.ParseDuration and Duration.String (src/time/format.go
 * and src/time/time.go), transcribed so that results and messages match.
 */
#include "api/duration.h"

#include <stdio.h>
#include <string.h>

#define QUOTE_MAX 64
#define TWO63 ((uint64_t)1 << 63)

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Go's time.quote: bytes >= 0x80 and < 0x20 as \xNN, '"' and '\' escaped. */
static void go_quote(const char *s, size_t len, char *out, size_t cap)
{
    size_t o = 0;
    out[o++] = '"';
    for (size_t i = 0; i < len && i < QUOTE_MAX && o + 6 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x80 || c < 0x20) {
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

#define QBUF (QUOTE_MAX * 4 + 8)

static NW_MUST_USE nw_rc_t invalid(nw_err_t *err, const char *s, size_t len)
{
    char q[QBUF];
    go_quote(s, len, q, sizeof q);
    return nw_err_set(err, NW_EINVAL, "", "time: invalid duration %s", q);
}

static uint64_t unit_ns(const char *u, size_t n)
{
    static const struct {
        const char *name;
        uint64_t ns;
    } units[] = {
        {"ns", 1},
        {"us", 1000},
        {"\xc2\xb5s", 1000}, /* U+00B5 micro sign */
        {"\xce\xbcs", 1000}, /* U+03BC Greek mu */
        {"ms", 1000000},
        {"s", 1000000000},
        {"m", 60ull * 1000000000},
        {"h", 3600ull * 1000000000},
    };
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strlen(units[i].name) == n && memcmp(units[i].name, u, n) == 0)
            return units[i].ns;
    return 0;
}

nw_rc_t nw_duration_parse_n(const char *s, size_t len, int64_t *out, nw_err_t *err)
{
    if (out)
        *out = 0;
    if (!s)
        len = 0;
    const char *orig = s ? s : "";
    size_t olen = len, i = 0;
    uint64_t d = 0;
    bool neg = false;
    if (len > 0 && (s[0] == '-' || s[0] == '+')) {
        neg = s[0] == '-';
        i = 1;
    }
    if (len - i == 1 && s[i] == '0')
        return NW_OK;
    if (i == len)
        return invalid(err, orig, olen);
    while (i < len) {
        uint64_t v = 0, f = 0;
        double scale = 1;
        if (!(s[i] == '.' || is_digit(s[i])))
            return invalid(err, orig, olen);
        /* [0-9]* */
        size_t pl = i;
        for (; i < len && is_digit(s[i]); i++) {
            if (v > TWO63 / 10)
                return invalid(err, orig, olen);
            v = v * 10 + (uint64_t)(s[i] - '0');
            if (v > TWO63)
                return invalid(err, orig, olen);
        }
        bool pre = i != pl, post = false;
        /* (\.[0-9]*)? — extra fraction digits stop adding precision */
        if (i < len && s[i] == '.') {
            i++;
            size_t fl = i;
            bool overflow = false;
            for (; i < len && is_digit(s[i]); i++) {
                if (overflow)
                    continue;
                if (f > (TWO63 - 1) / 10) {
                    overflow = true;
                    continue;
                }
                uint64_t y = f * 10 + (uint64_t)(s[i] - '0');
                if (y > TWO63) {
                    overflow = true;
                    continue;
                }
                f = y;
                scale *= 10;
            }
            post = i != fl;
        }
        if (!pre && !post)
            return invalid(err, orig, olen);
        /* unit: everything up to the next '.' or digit */
        size_t us = i;
        while (i < len && !(s[i] == '.' || is_digit(s[i])))
            i++;
        char q[QBUF];
        if (i == us) {
            go_quote(orig, olen, q, sizeof q);
            return nw_err_set(err, NW_EINVAL, "", "time: missing unit in duration %s", q);
        }
        uint64_t unit = unit_ns(s + us, i - us);
        if (unit == 0) {
            char uq[QBUF];
            go_quote(s + us, i - us, uq, sizeof uq);
            go_quote(orig, olen, q, sizeof q);
            return nw_err_set(err, NW_EINVAL, "", "time: unknown unit %s in duration %s", uq, q);
        }
        if (v > TWO63 / unit)
            return invalid(err, orig, olen);
        v *= unit;
        if (f > 0) {
            /* float64, as Go: nanosecond-accurate for fractions of hours */
            v += (uint64_t)((double)f * ((double)unit / scale));
            if (v > TWO63)
                return invalid(err, orig, olen);
        }
        if (v > TWO63 - d) /* Go wraps when both are 2^63; we refuse */
            return invalid(err, orig, olen);
        d += v;
    }
    int64_t r;
    if (neg) {
        r = d == TWO63 ? INT64_MIN : -(int64_t)d;
    } else {
        if (d > TWO63 - 1)
            return invalid(err, orig, olen);
        r = (int64_t)d;
    }
    if (out)
        *out = r;
    return NW_OK;
}

nw_rc_t nw_duration_parse(const char *s, int64_t *ns, nw_err_t *err)
{
    return nw_duration_parse_n(s, s ? strlen(s) : 0, ns, err);
}

nw_rc_t nw_duration_parse_or_never(const char *s, bool allow_never, int64_t *ns, bool *is_never,
                                   nw_err_t *err)
{
    if (is_never)
        *is_never = false;
    if (s && strcmp(s, "Never") == 0) {
        if (ns)
            *ns = allow_never ? INT64_MAX : 0;
        if (!allow_never)
            return nw_err_set(err, NW_EINVAL, "",
                              "time: invalid duration \"Never\" (\"Never\" is not allowed here)");
        if (is_never)
            *is_never = true;
        return NW_OK;
    }
    return nw_duration_parse(s, ns, err);
}

/* Go's fmtFrac: write the fraction of v/10^prec (no trailing zeros, no '.' if
 * zero) ending before buf[w]; returns the new start and v/10^prec. */
static size_t fmt_frac(char *buf, size_t w, uint64_t *v, int prec)
{
    bool print = false;
    for (int i = 0; i < prec; i++) {
        unsigned digit = (unsigned)(*v % 10);
        print = print || digit != 0;
        if (print)
            buf[--w] = (char)('0' + digit);
        *v /= 10;
    }
    if (print)
        buf[--w] = '.';
    return w;
}

static size_t fmt_int(char *buf, size_t w, uint64_t v)
{
    if (v == 0) {
        buf[--w] = '0';
        return w;
    }
    while (v > 0) {
        buf[--w] = (char)('0' + v % 10);
        v /= 10;
    }
    return w;
}

size_t nw_duration_format(int64_t ns, char *out, size_t cap)
{
    char buf[NW_DURATION_STR_MAX];
    size_t w = sizeof buf;
    bool neg = ns < 0;
    uint64_t u = neg ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    if (u < (uint64_t)NW_SECOND) {
        int prec = 0;
        buf[--w] = 's';
        if (u == 0) {
            buf[--w] = '0';
            goto done;
        } else if (u < (uint64_t)NW_MICROSECOND) {
            prec = 0;
            buf[--w] = 'n';
        } else if (u < (uint64_t)NW_MILLISECOND) {
            prec = 3;
            buf[--w] = '\xb5'; /* U+00B5 as Go prints it */
            buf[--w] = '\xc2';
        } else {
            prec = 6;
            buf[--w] = 'm';
        }
        w = fmt_frac(buf, w, &u, prec);
        w = fmt_int(buf, w, u);
    } else {
        buf[--w] = 's';
        w = fmt_frac(buf, w, &u, 9);
        w = fmt_int(buf, w, u % 60);
        u /= 60;
        if (u > 0) {
            buf[--w] = 'm';
            w = fmt_int(buf, w, u % 60);
            u /= 60;
            if (u > 0) {
                buf[--w] = 'h';
                w = fmt_int(buf, w, u);
            }
        }
    }
    if (neg)
        buf[--w] = '-';
done:;
    size_t n = sizeof buf - w;
    if (cap > 0) {
        size_t c = n < cap - 1 ? n : cap - 1;
        memcpy(out, buf + w, c);
        out[c] = '\0';
    }
    return n;
}
