/*
 * api/labels.h — Kubernetes label keys and values: validation with the exact
 * messages of k8s.io/apimachinery/pkg/util/validation (IsQualifiedName,
 * IsValidLabelValue, IsDNS1123Subdomain, IsDNS1123Label), and a small label set.
 *
 * Validation is allocation-free: the messages are static strings, returned in a
 * caller-provided nw_labels_msgs_t in the order Kubernetes returns them.
 *
 * Label set: nw_labels_t owns copies of its keys and values, kept sorted by key
 * (byte order) so that lookups are a binary search. Caller storage:
 * nw_labels_init / nw_labels_cleanup.
 *
 * Thread: any (no global state). A label set belongs to one thread at a time;
 * concurrent readers of an unchanging set are fine.
 */
#ifndef NW_API_LABELS_H
#define NW_API_LABELS_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"

#define NW_LABELS_NAME_MAX 63      /* name part of a key; label values */
#define NW_LABELS_PREFIX_MAX 253   /* DNS-1123 subdomain */
#define NW_LABELS_DNS_LABEL_MAX 63 /* DNS-1123 label */
#define NW_LABELS_MSGS_MAX 4

/* Validation messages, exactly as Kubernetes words them (static storage). */
typedef struct {
    const char *v[NW_LABELS_MSGS_MAX];
    size_t n;
} nw_labels_msgs_t;

/** Is s a qualified name (label key): optional DNS-1123 subdomain prefix and '/',
 * then a name of 1..63 characters matching ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9].
 * msgs (nullable) receives Kubernetes' messages ("name part must be non-empty", ...). */
bool nw_labels_key_valid(const char *s, nw_labels_msgs_t *msgs);

/** Is s a valid label value: empty, or at most 63 characters of the name pattern. */
bool nw_labels_value_valid(const char *s, nw_labels_msgs_t *msgs);

/** Is s a lowercase RFC 1123 subdomain of at most 253 characters. */
bool nw_labels_dns1123_subdomain_valid(const char *s, nw_labels_msgs_t *msgs);

/** Is s a lowercase RFC 1123 label of at most 63 characters. */
bool nw_labels_dns1123_label_valid(const char *s, nw_labels_msgs_t *msgs);

/** Join the messages with sep into buf (always NUL-terminated when n > 0, truncated
 * to fit). Returns the length the full text would have. */
size_t nw_labels_msgs_join(const nw_labels_msgs_t *msgs, const char *sep, char *buf, size_t n);

/** The key part before the first '/', or "" when there is none (Karpenter's
 * GetLabelDomain). Writes at most n-1 bytes; returns the domain length. */
size_t nw_labels_domain(const char *key, char *buf, size_t n);

/* ---- label set ------------------------------------------------------------ */

typedef struct {
    char *key;   /* owned */
    char *value; /* owned */
} nw_label_t;

typedef struct {
    nw_label_t *v; /* owned, sorted by key, unique keys */
    size_t n, cap;
} nw_labels_t;

/** Initialise an empty set. */
void nw_labels_init(nw_labels_t *l);

/** Free every key and value; the set is empty afterwards (reusable). NULL-safe. */
void nw_labels_cleanup(nw_labels_t *l);

/** Set key to value (both copied), replacing an existing value. NW_ENOMEM on failure
 * (the set is then unchanged). */
NW_MUST_USE nw_rc_t nw_labels_set(nw_labels_t *l, const char *key, const char *value);

/** Value of key, or NULL when absent. Borrowed, valid until the set changes. */
const char *nw_labels_get(const nw_labels_t *l, const char *key);

/** Remove key; returns true if it was present. */
bool nw_labels_remove(nw_labels_t *l, const char *key);

/** Copy src into dst (dst must be initialised; its old contents are freed). */
NW_MUST_USE nw_rc_t nw_labels_copy(nw_labels_t *dst, const nw_labels_t *src);

/** Parse a JSON object of string values (metadata.labels, spec.nodeSelector) into l
 * (initialised by the call; cleaned up on failure). A NULL or JSON null obj gives
 * an empty set. Keys and values are not validated (see nw_labels_key_valid);
 * a non-object or a non-string value is an error naming path or path.<key>. */
NW_MUST_USE nw_rc_t nw_labels_parse(const cJSON *obj, const char *path, nw_labels_t *l,
                                    nw_err_t *err);

#endif
