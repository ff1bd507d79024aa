#include "common/log.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
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

int nw_log_key_is_secret(const char *key)
{
    static const char *const words[] = {"token",     "secret",     "password",   "authorization",
                                        "signature", "credential", "privatekey", "apikey"};
    char low[64];
    size_t n = 0;
    for (const char *p = key; *p && n + 1 < sizeof low; p++)
        if (*p != '_' && *p != '-')
            low[n++] = (char)tolower((unsigned char)*p);
    low[n] = '\0';
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strstr(low, words[i]))
            return 1;
    return 0;
}

int nw_log__ratelimit(_Atomic int64_t *last, int secs)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t now = (int64_t)ts.tv_sec;
    int64_t prev = atomic_load(last);
    if (prev != 0 && now - prev < secs)
        return 0;
    return atomic_compare_exchange_strong(last, &prev, now);
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
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char tbuf[96];
    snprintf(tbuf, sizeof tbuf, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000);
    int lv = (int)level;
    if (lv < 0 || lv > NW_LOG_ERROR)
        lv = NW_LOG_ERROR;
    (void)!nw_buf_addf(&b, "{\"ts\":\"%s\",\"level\":\"%s\",\"comp\":", tbuf, level_names[lv]);
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
        case 'i':
            (void)!nw_buf_addf(&b, "%lld", f->v.i);
            break;
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
