/*
 * api/kval.h — kube-apiserver-style validation errors for custom resources.
 *
 * Validators walk a cJSON object and record errors the way kube-apiserver's
 * structural-schema (OpenAPI) validation and CEL rules word them, then
 * nw_kval_finish() turns the list into an admission denial: HTTP 422, reason
 * Invalid, message `<Kind>.<group> "<name>" is invalid: [path: body, ...]`
 * (a single error printed bare, exact duplicates removed) and details.causes.
 *
 * Gating (as kube-apiserver does): schema errors are reported first; if any of
 * them is Required, Unsupported value, Too long, Too many or a wrong type, the
 * CEL errors are dropped and "<nil>: Invalid value: null: some validation rules
 * were not checked ..." is appended instead.
 *
 * Scalars are printed as kube-apiserver prints them; CEL failures use the
 * Kubernetes <= 1.34 form `Invalid value: "<schema type>": <message>`.
 *
 * Pattern helpers: the CRD patterns are Go RE2; nw_kv_re_t holds a POSIX ERE
 * translation (compiled once, thread-safe after) and the original RE2 text,
 * which is what error messages show.
 *
 * Ownership: nw_kv_t owns its strings; nw_kval_cleanup frees them. Thread: any.
 */
#ifndef NW_API_KVAL_H
#define NW_API_KVAL_H

#include <cjson/cJSON.h>
#include <pthread.h>
#include <regex.h>
#include <stdbool.h>
#include <stddef.h>

#include "api/admit.h"
#include "common/err.h"

typedef enum {
    NW_KV_REQUIRED,     /* FieldValueRequired */
    NW_KV_NOTSUPPORTED, /* FieldValueNotSupported */
    NW_KV_INVALID,      /* FieldValueInvalid */
    NW_KV_TOOLONG,      /* FieldValueTooLong */
    NW_KV_TOOMANY,      /* FieldValueTooMany */
    NW_KV_TYPE,         /* FieldValueTypeInvalid */
    NW_KV_DUPLICATE,    /* FieldValueDuplicate */
} nw_kv_type_t;

typedef struct {
    nw_kv_type_t type;
    bool cel;    /* a CEL rule failure (dropped when schema errors gate) */
    char *field; /* owned, e.g. spec.template.spec.requirements[0].key */
    char *body;  /* owned, e.g. Invalid value: "x": ... */
} nw_kv_err_t;

typedef struct {
    nw_kv_err_t *v; /* owned */
    size_t n, cap;
    bool oom;
} nw_kv_t;

#define NW_KV_PATH_MAX 512

void nw_kval_init(nw_kv_t *kv);
void nw_kval_cleanup(nw_kv_t *kv);

/** Record an error with a printf-style body. */
void nw_kval_add(nw_kv_t *kv, nw_kv_type_t type, bool cel, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/** Final list in report order (schema errors, then CEL errors or the gating line),
 * "field: body" strings in out (malloc'd array of malloc'd strings), duplicates removed.
 * Returns the count; *out NULL when 0. Free with nw_kval_lines_free. */
size_t nw_kval_lines(const nw_kv_t *kv, char ***out, nw_kv_err_t **errs);
void nw_kval_lines_free(char **lines, nw_kv_err_t *errs, size_t n);

/* At most this many errors go into a denial's message and causes; the message then
 * ends with ", and N more errors not shown" (a 7 MiB object can hold 100,000 bad
 * fields: all of them made a message over the 4 MiB bound, answered 500). */
#define NW_KV_MAX_SHOWN 1000

/** Turn the errors into a denial in res (no-op when there are none).
 * kind "NodePool", group "karpenter.sh", name may be "". */
NW_MUST_USE nw_rc_t nw_kval_finish(const nw_kv_t *kv, const char *kind, const char *group,
                                   const char *name, nw_admit_result_t *res);

/* ---- child paths ------------------------------------------------------------------ */

/** out = parent + "." + name (or name if parent is ""). */
const char *nw_kval_path(char *out, const char *parent, const char *name);
/** out = parent + "[i]". */
const char *nw_kval_idx(char *out, const char *parent, size_t i);
/** out = parent + "[key]". */
const char *nw_kval_key(char *out, const char *parent, const char *key);

/* ---- field access ------------------------------------------------------------------ */

/** Member of obj; NULL when obj is not an object, or the member is missing or JSON null
 * (non-nullable fields: null is pruned like an absent field). */
const cJSON *nw_kval_get(const cJSON *obj, const char *name);

/** JSON type name as the schema sees it: "string", "integer", "number", "boolean",
 * "object", "array", "null". */
const char *nw_kval_jtype(const cJSON *v);

/** Is v of schema type ("string", "integer", "boolean", "object", "array")? Integral
 * numbers are integers. On mismatch records a type error at path and returns false. */
bool nw_kval_type(nw_kv_t *kv, const char *path, const cJSON *v, const char *type);

/** Record `path: Required value`. */
void nw_kval_required(nw_kv_t *kv, const char *parent, const char *name);

/** Enum check (values in schema order, NULL-terminated). */
bool nw_kval_enum(nw_kv_t *kv, const char *path, const char *s, const char *const *allowed);

/** Integer bounds; use LLONG_MIN/LLONG_MAX for none. */
void nw_kval_int_range(nw_kv_t *kv, const char *path, double v, long long min, long long max);

/** String length in characters (UTF-8 code points), as OpenAPI counts. */
size_t nw_kval_strlen(const char *s);
/* false (and the error added) when the length is out of bounds */
bool nw_kval_max_len(nw_kv_t *kv, const char *path, const char *s, size_t max);
bool nw_kval_min_len(nw_kv_t *kv, const char *path, const char *s, size_t min);
void nw_kval_max_items(nw_kv_t *kv, const char *path, const cJSON *arr_or_obj, int max);
void nw_kval_min_items(nw_kv_t *kv, const char *path, const cJSON *arr, int min);

/** Quote s as Go's %q does for printable ASCII (backslash escapes otherwise), into out. */
const char *nw_kval_quote(char *out, size_t cap, const char *s);

/* ---- patterns ------------------------------------------------------------------------ */

typedef struct {
    const char *re2;   /* the CRD text, shown in messages */
    const char *posix; /* POSIX ERE translation */
    regex_t rx;
    int ok;
    /* a hand-written matcher that decides exactly what the translation does (NULL:
     * regexec); tests/unit/test_kre.c and tests/fuzz/fuzz_patterns.c hold the two to
     * the same answers */
    bool (*direct)(const char *s);
} nw_kv_re_t;

/** Compile the table of patterns once (pthread_once in the caller). Returns false if
 * a translation does not compile (a programming error). */
bool nw_kval_re_compile(nw_kv_re_t *res, size_t n);

/** Does s match? (the direct matcher when there is one, else the POSIX translation) */
bool nw_kval_re_match(const nw_kv_re_t *re, const char *s);

/** Does s match the POSIX translation (regexec, never the direct matcher)? The
 * differential oracle of the direct matchers. */
bool nw_kval_re_match_posix(const nw_kv_re_t *re, const char *s);

/** Pattern check with the kube-apiserver message; returns the match result. */
bool nw_kval_pattern(nw_kv_t *kv, const char *path, const char *s, const nw_kv_re_t *re);

/** CEL failure on an object or array (`type`): `path: Invalid value: msg`, as
 * Kubernetes 1.35 words it. */
void nw_kval_cel(nw_kv_t *kv, const char *path, const char *type, const char *msg);

/** CEL failure on a string: `path: Invalid value: "<value>": msg`. */
void nw_kval_cel_str(nw_kv_t *kv, const char *path, const char *value, const char *msg);

/** CEL evaluation error: `path: Invalid value: "<type>": <err> evaluating rule: msg`. */
void nw_kval_cel_eval(nw_kv_t *kv, const char *path, const char *type, const char *err,
                      const char *msg);

/** CEL int(string): strconv.ParseInt(s, 10, 64). Returns false on error. */
bool nw_kval_cel_int(const char *s, long long *out);

/** Optional string member `name` of obj: absent or null gives def; a non-string is an
 * error naming base.name ("... must be of type string"). */
NW_MUST_USE nw_rc_t nw_kval_str_member(const cJSON *obj, const char *name, const char *base,
                                       const char *def, const char **out, nw_err_t *err);

/** NW_OK if arr is a JSON array, else an error naming path ("... must be of type array"). */
NW_MUST_USE nw_rc_t nw_kval_array(const cJSON *arr, const char *path, nw_err_t *err);

#endif
