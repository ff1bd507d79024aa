#include "common/clock.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

void nw_clock_deadline_after(struct timespec *ts, int clk, int64_t ms)
{
    clock_gettime((clockid_t)clk, ts);
    ts->tv_sec += (time_t)(ms / 1000);
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

static int64_t sys_now(const nw_clock_t *c)
{
    (void)c;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * NW_NS_PER_SEC + ts.tv_nsec;
}

static int64_t sys_mono(const nw_clock_t *c)
{
    (void)c;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * NW_NS_PER_SEC + ts.tv_nsec;
}

static const nw_clock_t system_clock = {sys_now, sys_mono};

const nw_clock_t *nw_clock_system(void)
{
    return &system_clock;
}

static int64_t fake_now(const nw_clock_t *c)
{
    return atomic_load(&((nw_clock_fake_t *)(void *)c)->wall_ns);
}

static int64_t fake_mono(const nw_clock_t *c)
{
    return atomic_load(&((nw_clock_fake_t *)(void *)c)->mono_ns);
}

void nw_clock_fake_init(nw_clock_fake_t *f, int64_t wall_ns)
{
    f->base.now_ns = fake_now;
    f->base.mono_ns = fake_mono;
    atomic_store(&f->wall_ns, wall_ns);
    atomic_store(&f->mono_ns, NW_NS_PER_SEC);
}

void nw_clock_fake_advance(nw_clock_fake_t *f, int64_t delta_ns)
{
    atomic_fetch_add(&f->wall_ns, delta_ns);
    atomic_fetch_add(&f->mono_ns, delta_ns);
}

char *nw_clock_time_format(int64_t wall_ns, char *buf, size_t len)
{
    time_t secs = (time_t)(wall_ns / NW_NS_PER_SEC);
    if (wall_ns < 0 && wall_ns % NW_NS_PER_SEC)
        secs--;
    struct tm tm;
    gmtime_r(&secs, &tm);
    snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    return buf;
}

static int digits(const char *s, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i]))
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

nw_rc_t nw_clock_time_parse(const char *s, int64_t *out_ns)
{
    int y, mo, d, h, mi, se;
    if (!s || strlen(s) < 20 || digits(s, 4, &y) || s[4] != '-' || digits(s + 5, 2, &mo) ||
        s[7] != '-' || digits(s + 8, 2, &d) || (s[10] != 'T' && s[10] != 't') ||
        digits(s + 11, 2, &h) || s[13] != ':' || digits(s + 14, 2, &mi) || s[16] != ':' ||
        digits(s + 17, 2, &se))
        return NW_EPARSE;
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60)
        return NW_EPARSE;
    const char *p = s + 19;
    int64_t frac = 0;
    if (*p == '.') {
        p++;
        int nd = 0;
        int64_t scale = NW_NS_PER_SEC;
        while (isdigit((unsigned char)*p)) {
            if (nd < 9) {
                scale /= 10;
                frac += (*p - '0') * scale;
            }
            nd++;
            p++;
        }
        if (nd == 0)
            return NW_EPARSE;
    }
    int64_t off = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int oh, om;
        if (digits(p + 1, 2, &oh) || p[3] != ':' || digits(p + 4, 2, &om) || oh > 23 || om > 59)
            return NW_EPARSE;
        off = (int64_t)(oh * 3600 + om * 60) * (*p == '-' ? -1 : 1);
        p += 6;
    } else {
        return NW_EPARSE;
    }
    if (*p)
        return NW_EPARSE;
    /* days from civil (Howard Hinnant's algorithm) */
    int yy = y - (mo <= 2);
    int era = (yy >= 0 ? yy : yy - 399) / 400;
    int yoe = yy - era * 400;
    int doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    int64_t days = (int64_t)era * 146097 + doe - 719468;
    int64_t secs = days * 86400 + h * 3600 + mi * 60 + se - off;
    /* epoch ns covers 1677-09-21 .. 2262-04-11; later years do not fit */
    int64_t ns;
    if (__builtin_mul_overflow(secs, (int64_t)NW_NS_PER_SEC, &ns) ||
        __builtin_add_overflow(ns, frac, &ns))
        return NW_ERANGE;
    *out_ns = ns;
    return NW_OK;
}
