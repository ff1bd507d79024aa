#include "common/buf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void nw_buf_init(nw_buf_t *b, size_t max)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->max = max;
}

void nw_buf_cleanup(nw_buf_t *b)
{
    if (!b)
        return;
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

void nw_buf_reset(nw_buf_t *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

static NW_MUST_USE nw_rc_t reserve(nw_buf_t *b, size_t extra)
{
    if (extra > b->max || b->len > b->max - extra)
        return NW_ERANGE;
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return NW_OK;
    size_t ncap = b->cap ? b->cap : 64;
    while (ncap < need)
        ncap = ncap > SIZE_MAX / 2 ? need : ncap * 2;
    char *p = realloc(b->data, ncap);
    if (!p)
        return NW_ENOMEM;
    b->data = p;
    b->cap = ncap;
    return NW_OK;
}

nw_rc_t nw_buf_reserve(nw_buf_t *b, size_t extra)
{
    return reserve(b, extra);
}

nw_rc_t nw_buf_add(nw_buf_t *b, const void *p, size_t n)
{
    nw_rc_t rc = reserve(b, n);
    if (rc != NW_OK)
        return rc;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return NW_OK;
}

nw_rc_t nw_buf_adds(nw_buf_t *b, const char *s)
{
    return nw_buf_add(b, s, strlen(s));
}

nw_rc_t nw_buf_vaddf(nw_buf_t *b, const char *fmt, va_list ap)
{
    va_list cp;
    va_copy(cp, ap);
    int n = vsnprintf(NULL, 0, fmt, cp);
    va_end(cp);
    if (n < 0)
        return NW_EINVAL;
    nw_rc_t rc = reserve(b, (size_t)n);
    if (rc != NW_OK)
        return rc;
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
    return NW_OK;
}

nw_rc_t nw_buf_addf(nw_buf_t *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    nw_rc_t rc = nw_buf_vaddf(b, fmt, ap);
    va_end(ap);
    return rc;
}

size_t nw_buf_utf8_seq_len(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    if (p[0] < 0x80)
        return 1;
    size_t n;
    unsigned lo = 0x80, hi = 0xbf; /* allowed range of the second byte */
    if (p[0] >= 0xc2 && p[0] <= 0xdf)
        n = 2;
    else if (p[0] >= 0xe0 && p[0] <= 0xef) {
        n = 3;
        lo = p[0] == 0xe0 ? 0xa0 : 0x80; /* no overlong forms */
        hi = p[0] == 0xed ? 0x9f : 0xbf; /* no surrogates */
    } else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
        n = 4;
        lo = p[0] == 0xf0 ? 0x90 : 0x80;
        hi = p[0] == 0xf4 ? 0x8f : 0xbf; /* at most U+10FFFF */
    } else
        return 0;
    if (p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xbf)
            return 0;
    return n;
}

nw_rc_t nw_buf_add_utf8(nw_buf_t *b, const char *s)
{
    const char *run = s; /* start of the valid bytes not yet appended */
    for (size_t k; *s; s += k ? k : 1)
        if (!(k = nw_buf_utf8_seq_len(s))) {
            nw_rc_t rc;
            if ((rc = nw_buf_add(b, run, (size_t)(s - run))) != NW_OK ||
                (rc = nw_buf_add(b, "\\ufffd", 6)) != NW_OK)
                return rc;
            run = s + 1;
        }
    return nw_buf_add(b, run, (size_t)(s - run));
}

nw_rc_t nw_buf_add_json_escaped(nw_buf_t *b, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s;
    for (;;) {
        /* the run of bytes that go out as they are (printable ASCII but '"' and '\\') */
        const unsigned char *run = p;
        while (*p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\')
            p++;
        if (p > run) {
            nw_rc_t rc = nw_buf_add(b, run, (size_t)(p - run));
            if (rc != NW_OK)
                return rc;
        }
        if (!*p)
            return NW_OK;
        char esc[7];
        size_t n;
        switch (*p) {
        case '"':
            memcpy(esc, "\\\"", 2);
            n = 2;
            break;
        case '\\':
            memcpy(esc, "\\\\", 2);
            n = 2;
            break;
        case '\n':
            memcpy(esc, "\\n", 2);
            n = 2;
            break;
        case '\r':
            memcpy(esc, "\\r", 2);
            n = 2;
            break;
        case '\t':
            memcpy(esc, "\\t", 2);
            n = 2;
            break;
        default:
            if (*p >= 0x80) { /* valid UTF-8 as is; each byte of anything else as U+FFFD */
                n = nw_buf_utf8_seq_len((const char *)p);
                if (n) {
                    nw_rc_t rc = nw_buf_add(b, p, n);
                    if (rc != NW_OK)
                        return rc;
                    p += n;
                    continue;
                }
                memcpy(esc, "\\ufffd", 6);
                n = 6;
            } else { /* the other control characters */
                esc[0] = '\\';
                esc[1] = 'u';
                esc[2] = '0';
                esc[3] = '0';
                esc[4] = hex[*p >> 4];
                esc[5] = hex[*p & 15];
                n = 6;
            }
        }
        nw_rc_t rc = nw_buf_add(b, esc, n);
        if (rc != NW_OK)
            return rc;
        p++;
    }
}

const char *nw_buf_str(const nw_buf_t *b)
{
    return b->data ? b->data : "";
}

char *nw_buf_take(nw_buf_t *b)
{
    char *p = b->data;
    if (!p)
        p = calloc(1, 1);
    b->data = NULL;
    b->len = b->cap = 0;
    return p;
}
