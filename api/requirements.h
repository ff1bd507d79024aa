/*
 * api/requirements.h — node selector requirements as a set algebra, the way
 * Karpenter's pkg/scheduling/requirement.go and requirements.go do it.
 *
 * A requirement (nw_req_t) constrains one label key. It is a finite set of
 * allowed values (complement = false: In; empty = DoesNotExist) or a complement
 * set of excluded values (complement = true: NotIn; nothing excluded = Exists),
 * plus optional inclusive integer bounds (Gt N is stored as gte = N+1, Lt N as
 * lte = N-1, Gte/Lte as given), plus optional minValues. A requirement set
 * (nw_reqs_t) maps each key to one requirement; adding a second requirement for
 * a key intersects the two. Keys are normalised on the way in
 * (failure-domain.beta.kubernetes.io/zone -> topology.kubernetes.io/zone, ...).
 *
 * Besides Karpenter's algebra each requirement carries absent_ok: whether a node
 * *without* the label satisfies it under Kubernetes' node-affinity rules
 * (NotIn/DoesNotExist yes; In/Exists/Gt/Lt no; ANDed on intersection). Only
 * nw_requirements_req_matches / nw_requirements_match_labels use it.
 *
 * Cost: nw_requirements_req_has, nw_requirements_req_has_intersection, nw_requirements_intersects,
 * nw_requirements_compatible and nw_requirements_match_labels never allocate (values and keys
 * are kept sorted; lookups are binary searches and merges). Intersection and
 * parsing allocate.
 *
 * Ownership: a nw_reqs_t owns its requirements, which own their key and values;
 * caller storage with nw_requirements_init / nw_requirements_cleanup. `const nw_req_t *`
 * returned by nw_requirements_get is borrowed, valid until the set changes.
 * Thread: any (no global state; the well-known tables are const).
 */
#ifndef NW_API_REQUIREMENTS_H
#define NW_API_REQUIREMENTS_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/labels.h"
#include "common/err.h"

typedef enum {
    NW_REQ_IN = 0,
    NW_REQ_NOT_IN,
    NW_REQ_EXISTS,
    NW_REQ_DOES_NOT_EXIST,
    NW_REQ_GT,
    NW_REQ_LT,
    NW_REQ_GTE, /* Karpenter only (karpenter.sh/v1 NodeSelectorRequirementWithMinValues) */
    NW_REQ_LTE, /* Karpenter only */
} nw_req_op_t;

typedef struct {
    char *key; /* owned, normalised */
    bool complement;
    char **values; /* owned, sorted (strcmp), unique */
    size_t nvalues;
    bool has_gte, has_lte;
    int64_t gte, lte; /* inclusive bounds, only meaningful when has_* */
    int min_values;   /* 0 = unset */
    bool absent_ok;   /* Kubernetes: a node without the label satisfies this */
    bool well_known;  /* nw_wellknown_is_known(key), computed once when built */
} nw_req_t;

typedef struct {
    nw_req_t *v; /* owned, sorted by key, unique keys */
    size_t n, cap;
} nw_reqs_t;

/* Why two requirement sets do not fit together. */
typedef struct {
    char key[320]; /* the key that conflicts (truncated) */
    char msg[768]; /* Karpenter's text, e.g. "key k, k In [b] not in k In [a]" */
} nw_reqs_conflict_t;

/* nw_requirements_compatible flags */
#define NW_REQS_ALLOW_UNDEFINED_WELL_KNOWN 0x1u /* Karpenter's AllowUndefinedWellKnownLabels */

/* parse flags */
#define NW_REQS_PARSE_KARPENTER 0x1u /* accept Gte/Lte and minValues (karpenter.sh/v1) */
#define NW_REQS_PARSE_PREFERRED 0x2u /* pod: also AND the heaviest preferred node-affinity term */

/* ---- operators and well-known labels -------------------------------------- */

/** "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte". */
const char *nw_requirements_req_op_str(nw_req_op_t op);

/** Parse an operator, spelled exactly. Gte/Lte only with NW_REQS_PARSE_KARPENTER. */
bool nw_requirements_req_op_parse(const char *s, unsigned flags, nw_req_op_t *out);

/** Go's strconv.Atoi on a 64-bit platform: optional sign, decimal digits, int64 range. */
bool nw_requirements_req_atoi(const char *s, int64_t *out);

/* ---- one requirement -------------------------------------------------------- */

/** Karpenter's Operator(): In, NotIn, Exists or DoesNotExist (bounds show as Exists). */
nw_req_op_t nw_requirements_req_operator(const nw_req_t *r);

/** Does the requirement allow this value (Karpenter's Has: set membership and, when
 * bounded, an integer within the bounds). */
bool nw_requirements_req_has(const nw_req_t *r, const char *value);

/** Kubernetes' node-affinity answer for a node whose label is value (NULL = the node
 * lacks the label). */
bool nw_requirements_req_matches(const nw_req_t *r, const char *value);

/** Is the requirement empty in Karpenter's sense (Len() == 0: a finite empty set). */
bool nw_requirements_req_is_empty(const nw_req_t *r);

/** Karpenter's HasIntersection: could one value satisfy both (allocation-free). */
bool nw_requirements_req_has_intersection(const nw_req_t *a, const nw_req_t *b);

/** out = a ∩ b (Karpenter's Intersection; out takes a's key). out is overwritten, not
 * freed first. NW_ENOMEM on failure (out then holds nothing to free). */
NW_MUST_USE nw_rc_t nw_requirements_req_intersect(const nw_req_t *a, const nw_req_t *b,
                                                  nw_req_t *out);

/** Karpenter's String(): "k In [a b]", "k NotIn [a] >=5 <=9", "k Exists",
 * "k DoesNotExist", " minValues N"; more than five values print as
 * "[a b c d e and 3 others]". Truncated to n; returns the full length. */
size_t nw_requirements_req_format(const nw_req_t *r, char *buf, size_t n);

/** A value that satisfies the requirement, deterministic (Karpenter's Any picks at
 * random): In -> the smallest value; NotIn/Exists -> the smallest integer within the
 * bounds (from max(gte, 0) upward) that is not excluded. Writes into buf; false when
 * there is none (DoesNotExist, empty range) or it does not fit in n bytes. */
bool nw_requirements_req_any(const nw_req_t *r, char *buf, size_t n);

/** Free a requirement's key and values. NULL-safe. */
void nw_requirements_req_cleanup(nw_req_t *r);

/* ---- requirement sets ------------------------------------------------------- */

void nw_requirements_init(nw_reqs_t *s);
void nw_requirements_cleanup(nw_reqs_t *s);

/** Copy src into dst (dst initialised; its old contents are freed). */
NW_MUST_USE nw_rc_t nw_requirements_copy(nw_reqs_t *dst, const nw_reqs_t *src);

/** Add one requirement (Karpenter's NewRequirementWithFlexibility + Add): the key is
 * normalised; In/NotIn take values; Exists/DoesNotExist ignore them; Gt/Lt/Gte/Lte
 * need exactly one integer value (else NW_EINVAL, message in err, set unchanged).
 * min_values 0 = unset. If the key is present the two are intersected. */
NW_MUST_USE nw_rc_t nw_requirements_add(nw_reqs_t *s, const char *key, nw_req_op_t op,
                                        const char *const *values, size_t nvalues, int min_values,
                                        nw_err_t *err);

/** Add (intersect in) a copy of r. */
NW_MUST_USE nw_rc_t nw_requirements_add_req(nw_reqs_t *s, const nw_req_t *r);

/** The requirement for key (normalised first), or NULL. Borrowed. */
const nw_req_t *nw_requirements_get(const nw_reqs_t *s, const char *key);

/** Is key (normalised first) constrained. */
bool nw_requirements_has(const nw_reqs_t *s, const char *key);

/** out = a ∩ b for every key (keys in only one side are kept as they are). out is
 * initialised by the call; on failure it is left empty. */
NW_MUST_USE nw_rc_t nw_requirements_intersect(const nw_reqs_t *a, const nw_reqs_t *b,
                                              nw_reqs_t *out);

/** s = s ∩ b, in place. */
NW_MUST_USE nw_rc_t nw_requirements_add_all(nw_reqs_t *s, const nw_reqs_t *b);

/** Karpenter's Intersects(existing, incoming): for each key in both, the values must
 * overlap unless both are NotIn/DoesNotExist. On the first conflict (keys in sorted
 * order) returns false and, if c is not NULL, fills it ("key K, <incoming> not in
 * <existing>"). Allocation-free. */
bool nw_requirements_intersects(const nw_reqs_t *existing, const nw_reqs_t *incoming,
                                nw_reqs_conflict_t *c);

/** Karpenter's Compatible(existing, incoming, options): every incoming key that is
 * not allowed to be undefined (with NW_REQS_ALLOW_UNDEFINED_WELL_KNOWN: the
 * well-known labels) must be defined in existing unless incoming is NotIn or
 * DoesNotExist ("label \"K\" does not have known values" plus Karpenter's typo hint);
 * then nw_requirements_intersects. First problem only, keys in sorted order (Karpenter's map
 * order is random). Allocation-free. */
bool nw_requirements_compatible(const nw_reqs_t *existing, const nw_reqs_t *incoming,
                                unsigned flags, nw_reqs_conflict_t *c);

/** Kubernetes: does a node with these labels satisfy every requirement (nw_requirements_req_matches
 * per key; a label missing under its normalised key is looked up under its deprecated
 * alias, e.g. beta.kubernetes.io/arch). On failure c (nullable) names the key and says
 * "label K=V does not satisfy <requirement>" or "label K is absent; <requirement>".
 * Allocation-free. */
bool nw_requirements_match_labels(const nw_reqs_t *s, const nw_labels_t *labels,
                                  nw_reqs_conflict_t *c);

/** Requirements from labels: each key In [value] (Karpenter's NewLabelRequirements). */
NW_MUST_USE nw_rc_t nw_requirements_from_labels(const nw_labels_t *labels, nw_reqs_t *out);

/** Karpenter's Requirements.String(): the requirements' strings, sorted, ", "-joined,
 * kubernetes.io/hostname left out. Returns the full length. */
size_t nw_requirements_format(const nw_reqs_t *s, char *buf, size_t n);

/* ---- parsing from JSON ------------------------------------------------------ */

/** Parse a list of NodeSelectorRequirement objects ({key, operator, values}; with
 * NW_REQS_PARSE_KARPENTER also Gte/Lte and minValues) and AND them into out
 * (initialised by the call; empty on failure). NULL/null = empty. Errors name the
 * field: path[i].key (Required value / not a qualified name), path[i].operator
 * (Unsupported value), path[i].values (type, count, integer), path[i].minValues. */
NW_MUST_USE nw_rc_t nw_requirements_json_parse_list(const cJSON *arr, const char *path,
                                                    unsigned flags, nw_reqs_t *out, nw_err_t *err);

/** Parse a pod's spec.nodeSelector map (each entry key In [value]). */
NW_MUST_USE nw_rc_t nw_requirements_json_parse_node_selector(const cJSON *obj, const char *path,
                                                             nw_reqs_t *out, nw_err_t *err);

/** Parse requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms (the terms
 * are ORed): *terms receives an array of *nterms sets (free with nw_requirements_json_terms_free).
 * Only matchExpressions count (matchFields is checked to be an array and otherwise
 * ignored, as Karpenter does). An empty term gives an empty set. */
NW_MUST_USE nw_rc_t nw_requirements_json_parse_terms(const cJSON *arr, const char *path,
                                                     nw_reqs_t **terms, size_t *nterms,
                                                     nw_err_t *err);

/** Free what nw_requirements_json_parse_terms returned. */
void nw_requirements_json_terms_free(nw_reqs_t *terms, size_t nterms);

/** A pod's requirements as Karpenter builds them (newPodRequirements) from a PodSpec
 * object: spec.nodeSelector AND the first required node-affinity term, and with
 * NW_REQS_PARSE_PREFERRED also the heaviest preferred term (first of equal weights).
 * path is the PodSpec's path ("spec"). */
NW_MUST_USE nw_rc_t nw_requirements_json_parse_pod_spec(const cJSON *spec, const char *path,
                                                        unsigned flags, nw_reqs_t *out,
                                                        nw_err_t *err);

/* ---- Karpenter's runtime validation (layer D) ---------------------------------- */

/** Karpenter's ValidateRequirement (sigs.k8s.io/karpenter pkg/apis/v1
 * nodeclaim_validation.go, with the AWS provider's well-known labels and restricted
 * domain): for one requirement (key normalised first) append to msg, "; "-joined as
 * multierr prints them, every problem in Karpenter's words: unsupported operator,
 * restricted label (IsRestrictedLabel), no/too few well-known values
 * (karpenter.sh/capacity-type: on-demand, reserved, spot;
 * karpenter.k8s.aws/instance-tenancy: default, dedicated), key not a qualified name,
 * invalid label values, In without values, In with fewer values than minValues,
 * Gt/Lt/Gte/Lte without a single non-negative integer. min_values 0 = unset.
 * Returns the number of problems (0 = valid); msg (n bytes, nullable) is truncated. */
int nw_requirements_validate_requirement(const char *key, const char *op, const char *const *values,
                                         size_t nvalues, int min_values, char *msg, size_t n);

/** Run nw_requirements_validate_requirement over a JSON requirement list (a NodePool's
 * spec.template.spec.requirements) and add one error per invalid item to errs, with
 * path "<path>[i]" and Karpenter's wrapping "invalid value: <problems> in
 * requirements, restricted". Items that are not objects with string key/operator
 * and string values are reported as type errors. Returns the number of errors added. */
int nw_requirements_validate_runtime(const cJSON *arr, const char *path, nw_errs_t *errs);

#endif
