/*
 * common/err.h — return codes and error detail shared by every module.
 *
 * Functions return nw_rc_t; detail goes into a nullable trailing nw_err_t *
 * (the first error wins: nw_err_set does nothing if err->rc is already set).
 * Validators that report every problem fill an nw_errs_t instead.
 *
 * Thread: any (no global state).
 */
#ifndef NW_COMMON_ERR_H
#define NW_COMMON_ERR_H

#include <stddef.h>

/* NW_MUST_USE: the nw_rc_t of this function must be looked at. Every function returning
 * nw_rc_t carries it except three recorders, whose result only says that a record was
 * dropped: nw_err_set (it returns rc so that `return nw_err_set(...)` reads well),
 * nw_admit_warn (a warning for the AdmissionReview) and nw_kube_write_event (Events are
 * best effort, as in Kubernetes; it logs its failures). A deliberate ignore is a cast to void, with
 * a comment where the reason is not plain: `(void)nw_kube_write_delete(...);`. GCC's
 * warn_unused_result is not silenced by a cast to void, so the attribute is on for clang only:
 * `make lint` and `make test`'s `mustuse` job compile every file with clang and
 * -Werror=unused-result. */
#if defined(__clang__)
#define NW_MUST_USE __attribute__((warn_unused_result))
#else
#define NW_MUST_USE
#endif

typedef enum {
    NW_OK = 0,
    NW_ENOMEM,
    NW_EINVAL,
    NW_EPARSE,
    NW_EIO,
    NW_EHTTP,
    NW_EKUBE,
    NW_EAWS,
    NW_ETIMEOUT,
    NW_ERANGE,
    NW_ENOTFOUND,
    NW_ECONFLICT,
    NW_EFORBIDDEN, /* the API server refused the identity (HTTP 403) */
} nw_rc_t;

/* One error: a field path (JSON path such as spec.template.spec.taints[1].effect)
 * and a message. Both are NUL-terminated and truncated to fit. */
typedef struct {
    nw_rc_t rc;
    char path[128];
    char msg[512];
} nw_err_t;

#define NW_ERRS_MAX 32

/* A list of errors; at most NW_ERRS_MAX are kept, the rest are counted in dropped. */
typedef struct {
    nw_err_t v[NW_ERRS_MAX];
    size_t n, dropped;
} nw_errs_t;

/** Name of a return code ("ok", "out of memory", ...). Never NULL; static storage. */
const char *nw_err_rc_str(nw_rc_t rc);

/** Record rc/path/printf-style message in err unless err is NULL or already holds
 * an error. Returns rc so callers can `return nw_err_set(err, NW_EINVAL, ...)`. */
nw_rc_t nw_err_set(nw_err_t *err, nw_rc_t rc, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/** Reset err to "no error". NULL-safe. */
void nw_err_clear(nw_err_t *err);

/** Append an error to errs (path may be NULL or ""). */
void nw_err_list_add(nw_errs_t *errs, nw_rc_t rc, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/** Initialise an empty error list. */
void nw_err_list_init(nw_errs_t *errs);

#endif
