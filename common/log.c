#include "common/log.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"

_Atomic int nw_log__level = NW_LOG_INFO;
static _Atomic int log_fd = 2;

static const char *const level_names[] = {"debug", "info", "warn", "error", "off"};

void nw_log_set_level(nw_log_level_t level)
{
    atomic_store(&nw_log__level, (int)level);
}

int nw_log_level_parse(const char *s)
{
    for (int i = 0; i <= NW_LOG_OFF; i++)
        if (s && strcmp(s, level_names[i]) == 0)
            return i;
    if (s && strcmp(s, "warning") == 0)
        return NW_LOG_WARN;
    return -1;
}

void nw_log_set_fd(int fd)
{
    atomic_store(&log_fd, fd);
}

/* Whether word appears in key at i, ignoring case and the '_' and '-' of the key. */
static bool word_at(const char *key, const char *word)
{
    for (const char *k = key; *word; k++) {
        if (*k == '_' || *k == '-')
            continue;
        if (tolower((unsigned char)*k) != *word)
            return false;
        word++;
    }
    return true;
}

bool nw_log_key_is_secret(const char *key)
{
    /* one pass over the key: a word is only tried where its first letter is */
    for (const char *p = key; *p; p++) {
        const char *const *w;
        static const char *const t[] = {"token", NULL}, *const s[] = {"secret", "signature", NULL},
                                 *const pw[] = {"password", "privatekey", NULL},
                                 *const a[] = {"authorization", "apikey", NULL},
                                 *const c[] = {"credential", NULL};
        switch (tolower((unsigned char)*p)) {
        case 't':
            w = t;
            break;
        case 's':
            w = s;
            break;
        case 'p':
            w = pw;
            break;
        case 'a':
            w = a;
            break;
        case 'c':
            w = c;
            break;
        default:
            continue;
        }
        for (; *w; w++)
            if (word_at(p, *w))
                return true;
    }
    return false;
}

bool nw_log__ratelimit(_Atomic int64_t *last, int secs)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t now = (int64_t)ts.tv_sec;
    int64_t prev = atomic_load(last);
    if (prev != 0 && now - prev < secs)
        return false;
    return atomic_compare_exchange_strong(last, &prev, now);
}

/* "YYYY-MM-DDTHH:MM:SS.mmmZ" (UTC) into out (24 bytes and a NUL), without stdio: the
 * admission path logs a line per request. The broken-down time is kept per thread and
 * worked out again only when the second changes. */
static void format_ts(char out[32], const struct timespec *ts)
{
    static _Thread_local time_t t_sec = -1;
    static _Thread_local char t_prefix[40]; /* "YYYY-MM-DDTHH:MM:SS" */
    if (ts->tv_sec != t_sec) {
        struct tm tm;
        gmtime_r(&ts->tv_sec, &tm);
        snprintf(t_prefix, sizeof t_prefix, "%04d-%02d-%02dT%02d:%02d:%02d",
                 (tm.tm_year + 1900) % 10000, (tm.tm_mon + 1) % 100, tm.tm_mday % 100,
                 tm.tm_hour % 100, tm.tm_min % 100, tm.tm_sec % 100);
        t_sec = ts->tv_sec;
    }
    memcpy(out, t_prefix, 19);
    long ms = ts->tv_nsec / 1000000;
    out[19] = '.';
    out[20] = (char)('0' + ms / 100 % 10);
    out[21] = (char)('0' + ms / 10 % 10);
    out[22] = (char)('0' + ms % 10);
    out[23] = 'Z';
    out[24] = '\0';
}

/* v in decimal into out (no NUL); returns the length (at most 20). */
static size_t format_int(char out[24], long long v)
{
    char tmp[24];
    size_t n = 0;
    unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    size_t len = 0;
    if (v < 0)
        out[len++] = '-';
    while (n)
        out[len++] = tmp[--n];
    return len;
}

static void add_str(nw_buf_t *b, const char *s)
{
    if (nw_buf_adds(b, "\"") || nw_buf_add_json_escaped(b, s ? s : "") || nw_buf_adds(b, "\""))
        return;
}

void nw_log__emit(nw_log_level_t level, const char *comp, const char *msg,
                  const nw_log_field_t *fields, unsigned nfields)
{
    nw_buf_t b;
    nw_buf_init(&b, 64 * 1024);
    (void)!nw_buf_reserve(&b, 1024); /* one allocation for a usual line */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    char tbuf[32];
    format_ts(tbuf, &ts);
    int lv = (int)level;
    if (lv < 0 || lv > NW_LOG_ERROR)
        lv = NW_LOG_ERROR;
    (void)!nw_buf_adds(&b, "{\"ts\":\"");
    (void)!nw_buf_adds(&b, tbuf);
    (void)!nw_buf_adds(&b, "\",\"level\":\"");
    (void)!nw_buf_adds(&b, level_names[lv]);
    (void)!nw_buf_adds(&b, "\",\"comp\":");
    add_str(&b, comp);
    (void)!nw_buf_adds(&b, ",\"msg\":");
    add_str(&b, msg);
    for (unsigned i = 0; i < nfields; i++) {
        const nw_log_field_t *f = &fields[i];
        if (!f->k || !f->t)
            continue;
        (void)!nw_buf_adds(&b, ",");
        add_str(&b, f->k);
        (void)!nw_buf_adds(&b, ":");
        if (nw_log_key_is_secret(f->k)) {
            add_str(&b, "[redacted]");
            continue;
        }
        switch (f->t) {
        case 's':
            if (f->v.s)
                add_str(&b, f->v.s);
            else
                (void)!nw_buf_adds(&b, "null");
            break;
        case 'i': {
            char num[24];
            (void)!nw_buf_add(&b, num, format_int(num, f->v.i));
            break;
        }
        case 'b':
            (void)!nw_buf_adds(&b, f->v.i ? "true" : "false");
            break;
        case 'f':
            if (isfinite(f->v.d))
                (void)!nw_buf_addf(&b, "%.6g", f->v.d);
            else
                (void)!nw_buf_adds(&b, "null");
            break;
        default:
            (void)!nw_buf_adds(&b, "null");
            break;
        }
    }
    if (nw_buf_adds(&b, "}\n") != NW_OK) {
        /* Line too long: keep it valid JSON by writing a marker instead. */
        nw_buf_reset(&b);
        (void)!nw_buf_addf(&b,
                           "{\"ts\":\"%s\",\"level\":\"error\",\"comp\":\"log\","
                           "\"msg\":\"log line too long\"}\n",
                           tbuf);
    }
    const char *p = nw_buf_str(&b);
    size_t left = b.len;
    int fd = atomic_load(&log_fd);
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        p += w;
        left -= (size_t)w;
    }
    nw_buf_cleanup(&b);
}
