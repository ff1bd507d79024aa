#include "common/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *nw_err_rc_str(nw_rc_t rc)
{
    switch (rc) {
    case NW_OK:
        return "ok";
    case NW_ENOMEM:
        return "out of memory";
    case NW_EINVAL:
        return "invalid value";
    case NW_EPARSE:
        return "parse error";
    case NW_EIO:
        return "I/O error";
    case NW_EHTTP:
        return "HTTP error";
    case NW_EKUBE:
        return "Kubernetes API error";
    case NW_EAWS:
        return "AWS API error";
    case NW_ETIMEOUT:
        return "timed out";
    case NW_ERANGE:
        return "out of range";
    case NW_ENOTFOUND:
        return "not found";
    case NW_ECONFLICT:
        return "conflict";
    case NW_EFORBIDDEN:
        return "forbidden";
    }
    return "unknown error";
}

static void fill(nw_err_t *e, nw_rc_t rc, const char *path, const char *fmt, va_list ap)
{
    e->rc = rc;
    snprintf(e->path, sizeof e->path, "%s", path ? path : "");
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
}

nw_rc_t nw_err_set(nw_err_t *err, nw_rc_t rc, const char *path, const char *fmt, ...)
{
    if (!err || err->rc != NW_OK)
        return rc;
    va_list ap;
    va_start(ap, fmt);
    fill(err, rc, path, fmt, ap);
    va_end(ap);
    return rc;
}

void nw_err_clear(nw_err_t *err)
{
    if (err)
        memset(err, 0, sizeof *err);
}

void nw_err_list_init(nw_errs_t *errs)
{
    errs->n = 0;
    errs->dropped = 0;
}

void nw_err_list_add(nw_errs_t *errs, nw_rc_t rc, const char *path, const char *fmt, ...)
{
    if (!errs)
        return;
    if (errs->n >= NW_ERRS_MAX) {
        errs->dropped++;
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    fill(&errs->v[errs->n++], rc, path, fmt, ap);
    va_end(ap);
}
