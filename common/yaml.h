/*
 * common/yaml.h — YAML (and JSON) documents to cJSON trees, and cJSON back to YAML.
 *
 * Loading follows what kubectl does with a manifest (sigs.k8s.io/yaml, which is
 * goyaml.v2 + a YAML→JSON conversion), so a manifest means the same thing here
 * as it does to the API server:
 *   - plain scalars are typed with goyaml.v2's YAML 1.1 table: null (`~`, `null`,
 *     `Null`, `NULL`, empty), booleans (`true/false`, `yes/no`, `on/off`, `y/n` in
 *     lower, Title and UPPER case — so `on` and `yes` ARE booleans, exactly as kubectl
 *     sends them), integers in Go's base-0 syntax (`10`, `0x1f`, `0o17`, `017` octal,
 *     `0b101`, `_` separators dropped), floats (`1.5`, `.5`, `1e3`); anything else,
 *     including timestamps, stays a string;
 *   - quoted and block scalars, and scalars tagged `!!str`, are always strings;
 *     `!!int`/`!!float`/`!!bool`/`!!null` force a type (an error if it does not fit);
 *     other tags are ignored and the text is kept as a string;
 *   - `.inf`/`.nan` cannot be represented in JSON: an error (kubectl fails too);
 *   - map keys become strings (`1` → "1", `true` → "true"); a null or collection key
 *     is an error; a duplicate key (after that conversion) is an error naming the key
 *     and its line (kubectl's strict decoding rejects them too);
 *   - anchors/aliases are expanded; at most NW_YAML_MAX_ALIAS_NODES nodes may be
 *     produced through aliases and NW_YAML_MAX_NODES nodes in total (billion-laughs
 *     safe); merge keys (`<<: *base`) are supported, explicit keys win;
 *   - nesting deeper than NW_YAML_MAX_DEPTH is an error.
 * Numbers are held as cJSON doubles: integers beyond 2^53 lose precision.
 * Input that starts with `{` or `[` is first read as a stream of JSON values (with a
 * duplicate-key check); if that fails it is read as YAML (flow style).
 *
 * Errors: NW_EPARSE with err->msg "line L, column C: problem" (1-based); err->path
 * holds the JSON path of the offending node when known.
 *
 * Ownership: the documents returned are owned by the caller; free them with
 * nw_yaml_docs_free(). Thread: any (no global state).
 */
#ifndef NW_COMMON_YAML_H
#define NW_COMMON_YAML_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "common/err.h"

#define NW_YAML_MAX_DEPTH 256
#define NW_YAML_MAX_NODES 1000000
#define NW_YAML_MAX_ALIAS_NODES 200000

/** Load every document of a YAML stream (or JSON values) into cJSON trees.
 * On success *docs is a malloc'd array of *ndocs trees (an empty document is a
 * cJSON null); a stream with no documents gives *ndocs == 0 and *docs == NULL.
 * On failure *docs is NULL and *ndocs 0. */
NW_MUST_USE nw_rc_t nw_yaml_load_docs(const char *text, size_t len, cJSON ***docs, size_t *ndocs,
                                      nw_err_t *err);

/** Same, and *lines (malloc'd, free with free(); may be NULL to skip) receives the
 * 1-based line where each document starts (its `---` or first content). */
NW_MUST_USE nw_rc_t nw_yaml_load_docs_lines(const char *text, size_t len, cJSON ***docs,
                                            size_t **lines, size_t *ndocs, nw_err_t *err);

/** Free what nw_yaml_load_docs returned. NULL-safe. */
void nw_yaml_docs_free(cJSON **docs, size_t ndocs);

/** Emit one cJSON tree as a YAML document (block style, 2-space indent, no `---`).
 * Strings that would be read back as another type (`"true"`, `"on"`, `"10"`, `""`)
 * are quoted, so load(emit(x)) == x. *out is malloc'd (free with free()). */
NW_MUST_USE nw_rc_t nw_yaml_emit(const cJSON *doc, char **out, size_t *outlen, nw_err_t *err);

#endif
