/*
 * api/cron.c — 5-field cron expressions in UTC (see cron.h).
 */
#include "api/cron.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define NS_MIN (60LL * 1000000000LL)

static const char *const months[] = {"jan", "feb", "mar", "apr", "may", "jun",
                                     "jul", "aug", "sep", "oct", "nov", "dec"};
static const char *const days[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};

typedef struct {
    const char *name;
    int lo, hi;
    const char *const *names; /* value = index + names_base */
    int nnames, names_base;
} field_t;

static const field_t fields[5] = {
    {"minute", 0, 59, NULL, 0, 0},       {"hour", 0, 23, NULL, 0, 0},
    {"day of month", 1, 31, NULL, 0, 0}, {"month", 1, 12, months, 12, 1},
    {"day of week", 0, 6, days, 7, 0},
};

/* a number or a name of the field; -1 when neither */
static int value(const field_t *f, const char *s, size_t n)
{
    if (n == 0 || n > 9)
        return -1;
    int all_digits = 1;
    for (size_t i = 0; i < n; i++)
        all_digits &= isdigit((unsigned char)s[i]) != 0;
    if (all_digits) {
        char b[10];
        memcpy(b, s, n);
        b[n] = 0;
        return (int)strtol(b, NULL, 10);
    }
    for (int i = 0; i < f->nnames; i++)
        if (n == 3 && strncasecmp(s, f->names[i], 3) == 0)
            return i + f->names_base;
    return -1;
}

/* one comma-separated item: * ? N N-M with optional /STEP */
static NW_MUST_USE nw_rc_t item(const field_t *f, const char *s, size_t n, uint64_t *bits,
                                bool *star, nw_err_t *err)
{
    const char *slash = memchr(s, '/', n);
    size_t rn = slash ? (size_t)(slash - s) : n;
    int lo, hi, step = 1;
    if (slash) {
        step = value(&fields[0], slash + 1, n - rn - 1);
        if (step <= 0)
            return nw_err_set(err, NW_EINVAL, f->name, "bad step in %s field \"%.*s\"", f->name,
                              (int)n, s);
    }
    if ((rn == 1 && (s[0] == '*' || s[0] == '?'))) {
        lo = f->lo;
        hi = f->hi;
        *star = step <= 1; /* robfig/cron: a step > 1 clears the star bit */
    } else {
        const char *dash = memchr(s, '-', rn);
        if (dash) {
            lo = value(f, s, (size_t)(dash - s));
            hi = value(f, dash + 1, rn - (size_t)(dash - s) - 1);
        } else {
            lo = value(f, s, rn);
            hi = slash ? f->hi : lo; /* "N/STEP" runs to the maximum */
        }
        if (lo < 0 || hi < 0)
            return nw_err_set(err, NW_EINVAL, f->name, "bad %s field \"%.*s\"", f->name, (int)n, s);
    }
    if (lo < f->lo || hi > f->hi || lo > hi)
        return nw_err_set(err, NW_EINVAL, f->name, "%s field \"%.*s\" out of range %d-%d", f->name,
                          (int)n, s, f->lo, f->hi);
    for (int v = lo; v <= hi; v += step)
        *bits |= 1ULL << v;
    return NW_OK;
}

static NW_MUST_USE nw_rc_t field(const field_t *f, const char *s, size_t n, uint64_t *bits,
                                 bool *star, nw_err_t *err)
{
    *bits = 0;
    *star = false;
    size_t i = 0;
    while (i <= n) {
        size_t j = i;
        while (j < n && s[j] != ',')
            j++;
        if (j == i)
            return nw_err_set(err, NW_EINVAL, f->name, "empty item in %s field", f->name);
        bool st = false;
        nw_rc_t rc = item(f, s + i, j - i, bits, &st, err);
        if (rc != NW_OK)
            return rc;
        *star |= st; /* robfig/cron ORs every item's bits, the star bit included */
        i = j + 1;
    }
    return NW_OK;
}

nw_rc_t nw_cron_parse(const char *expr, nw_cron_t *out, nw_err_t *err)
{
    memset(out, 0, sizeof *out);
    if (!expr)
        return nw_err_set(err, NW_EINVAL, NULL, "empty schedule");
    while (isspace((unsigned char)*expr))
        expr++;
    static const struct {
        const char *name, *expr;
    } macros[] = {{"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
                  {"@weekly", "0 0 * * 0"}, {"@daily", "0 0 * * *"},    {"@midnight", "0 0 * * *"},
                  {"@hourly", "0 * * * *"}};
    if (expr[0] == '@') {
        size_t n = strlen(expr);
        while (n && isspace((unsigned char)expr[n - 1]))
            n--;
        for (size_t i = 0; i < sizeof macros / sizeof *macros; i++)
            if (strlen(macros[i].name) == n && strncmp(expr, macros[i].name, n) == 0)
                return nw_cron_parse(macros[i].expr, out, err);
        return nw_err_set(err, NW_EINVAL, NULL, "unknown schedule macro \"%.*s\"", (int)n, expr);
    }
    const char *tok[6];
    size_t len[6];
    int nt = 0;
    for (const char *p = expr; *p;) {
        while (isspace((unsigned char)*p))
            p++;
        if (!*p)
            break;
        const char *q = p;
        while (*q && !isspace((unsigned char)*q))
            q++;
        if (nt == 6)
            break;
        tok[nt] = p;
        len[nt++] = (size_t)(q - p);
        p = q;
    }
    if (nt != 5)
        return nw_err_set(err, NW_EINVAL, NULL,
                          "schedule \"%s\" must have 5 fields (minute hour day-of-month month "
                          "day-of-week), found %d",
                          expr, nt);
    uint64_t b[5];
    bool st[5];
    for (int i = 0; i < 5; i++) {
        nw_rc_t rc = field(&fields[i], tok[i], len[i], &b[i], &st[i], err);
        if (rc != NW_OK) {
            memset(out, 0, sizeof *out);
            return rc;
        }
    }
    out->minute = b[0];
    out->hour = (uint32_t)b[1];
    out->dom = (uint32_t)b[2];
    out->month = (uint32_t)b[3];
    out->dow = (uint32_t)b[4];
    out->dom_star = st[2];
    out->dow_star = st[4];
    return NW_OK;
}

static bool day_matches(const nw_cron_t *c, const struct tm *tm)
{
    bool d = (c->dom >> tm->tm_mday) & 1u, w = (c->dow >> tm->tm_wday) & 1u;
    if (c->dom_star || c->dow_star)
        return d && w;
    return d || w;
}

static int to_tm(int64_t t, struct tm *tm)
{
    time_t s = (time_t)(t >= 0 ? t / 1000000000LL : (t - 999999999LL) / 1000000000LL);
    return gmtime_r(&s, tm) ? 0 : -1;
}

bool nw_cron_matches(const nw_cron_t *c, int64_t t)
{
    struct tm tm;
    if (to_tm(t, &tm) != 0)
        return false;
    return ((c->month >> (tm.tm_mon + 1)) & 1u) && day_matches(c, &tm) &&
           ((c->hour >> tm.tm_hour) & 1u) && ((c->minute >> tm.tm_min) & 1ULL);
}

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

bool nw_cron_next(const nw_cron_t *c, int64_t after, int64_t limit, int64_t *out)
{
    int64_t t = (floor_div(after, NS_MIN) + 1) * NS_MIN; /* first whole minute > after */
    while (t <= limit) {
        struct tm tm;
        if (to_tm(t, &tm) != 0)
            return false;
        int64_t into_day = ((int64_t)tm.tm_hour * 60 + tm.tm_min) * NS_MIN;
        if (!((c->month >> (tm.tm_mon + 1)) & 1u) || !day_matches(c, &tm)) {
            t = t - into_day + 24 * 60 * NS_MIN; /* next day 00:00 */
            continue;
        }
        if (!((c->hour >> tm.tm_hour) & 1u)) {
            t = t - (int64_t)tm.tm_min * NS_MIN + 60 * NS_MIN; /* next hour :00 */
            continue;
        }
        if ((c->minute >> tm.tm_min) & 1ULL) {
            *out = t;
            return true;
        }
        t += NS_MIN;
    }
    return false;
}

bool nw_cron_window_active(const nw_cron_t *c, int64_t duration_ns, int64_t now)
{
    int64_t f;
    if (duration_ns < 0)
        return false;
    return nw_cron_next(c, now - duration_ns, now, &f);
}
