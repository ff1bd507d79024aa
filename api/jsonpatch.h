/*
 * api/jsonpatch.h — build RFC 6902 JSON Patches and apply them to cJSON trees.
 *
 * Building: a nw_jsonpatch_t collects operations; nw_jsonpatch_take_text() hands
 * out the JSON text of the patch array (NULL when there are no operations, which
 * is how a mutating handler says "nothing to change"). Pointers (RFC 6901) are
 * passed already escaped; nw_jsonpatch_escape() escapes one token (`~` → `~0`,
 * `/` → `~1`).
 *
 * Applying: add, remove, replace, test, move and copy, with RFC 6902 semantics
 * (add into an object sets the member; into an array inserts at the index or
 * appends at `-`; remove/replace need the target to exist). The patch applies
 * completely or not at all: on error the document is left unchanged.
 *
 * Ownership: values given to nw_jsonpatch_add are copied. Thread: any.
 */
#ifndef NW_API_JSONPATCH_H
#define NW_API_JSONPATCH_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "common/err.h"

typedef struct {
    cJSON *ops; /* owned JSON array; NULL until the first op */
    nw_rc_t rc; /* first failure while building (sticky) */
} nw_jsonpatch_t;

/** Initialise an empty patch. */
void nw_jsonpatch_init(nw_jsonpatch_t *p);

/** Free the operations. NULL-safe. */
void nw_jsonpatch_cleanup(nw_jsonpatch_t *p);

/** Append {op, path, value} (value copied; NULL for "remove"). Failures are sticky
 * in p->rc and returned. */
NW_MUST_USE nw_rc_t nw_jsonpatch_add(nw_jsonpatch_t *p, const char *op, const char *path,
                                     const cJSON *value);

/** Number of operations so far. */
size_t nw_jsonpatch_len(const nw_jsonpatch_t *p);

/** The patch as compact JSON text (malloc'd, free with free()), or NULL if empty or
 * building failed (check p->rc). Leaves p empty. */
char *nw_jsonpatch_take_text(nw_jsonpatch_t *p);

/** Escape one reference token into out (cap bytes, NUL-terminated).
 * NW_ERANGE if it does not fit. */
NW_MUST_USE nw_rc_t nw_jsonpatch_escape(const char *token, char *out, size_t cap);

/** Apply a patch (a JSON array of operations) to *doc; *doc may be replaced (a
 * pointer of "" targets the root). On error *doc is unchanged and err names the
 * failing operation ("[i]") and why. */
NW_MUST_USE nw_rc_t nw_jsonpatch_apply(cJSON **doc, const cJSON *patch, nw_err_t *err);

/** Same, with the patch given as JSON text. */
NW_MUST_USE nw_rc_t nw_jsonpatch_apply_text(cJSON **doc, const char *patch, nw_err_t *err);

#endif
