/*
 * api/taints.h — taints and tolerations with Kubernetes' exact matching
 * (kubernetes/kubernetes staging/src/k8s.io/api/core/v1/toleration.go ToleratesTaint).
 *
 * Ownership: nw_taint_t / nw_toleration_t own their strings; the lists own their
 * elements. Caller storage: *_init / *_cleanup. Matching never allocates.
 * Thread: any (no global state).
 */
#ifndef NW_API_TAINTS_H
#define NW_API_TAINTS_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

typedef enum {
    NW_TAINT_EFFECT_ANY = 0, /* "" — only meaningful in a toleration: matches all effects */
    NW_TAINT_NO_SCHEDULE,
    NW_TAINT_PREFER_NO_SCHEDULE,
    NW_TAINT_NO_EXECUTE,
} nw_taint_effect_t;

typedef enum {
    NW_TOL_EQUAL = 0, /* "Equal" or empty (the default) */
    NW_TOL_EXISTS,
    NW_TOL_LT, /* TaintTolerationComparisonOperators: taint value < toleration value */
    NW_TOL_GT, /* taint value > toleration value */
} nw_tol_op_t;

typedef struct {
    char *key;                /* owned, never NULL */
    char *value;              /* owned, never NULL ("" when absent) */
    nw_taint_effect_t effect; /* never NW_TAINT_EFFECT_ANY for a parsed taint */
} nw_taint_t;

typedef struct {
    char *key; /* owned, never NULL; "" matches every key */
    nw_tol_op_t op;
    char *value;              /* owned, never NULL */
    nw_taint_effect_t effect; /* NW_TAINT_EFFECT_ANY matches every effect */
    bool has_seconds;
    int64_t seconds; /* tolerationSeconds when has_seconds */
} nw_toleration_t;

typedef struct {
    nw_taint_t *v; /* owned */
    size_t n;
} nw_taints_t;

typedef struct {
    nw_toleration_t *v; /* owned */
    size_t n;
} nw_tolerations_t;

/* Which taints must be tolerated. */
typedef enum {
    /* kube-scheduler: only NoSchedule and NoExecute block placement */
    NW_TAINTS_SCHEDULING = 0,
    /* every taint, PreferNoSchedule included (Karpenter's provisioning check) */
    NW_TAINTS_STRICT,
} nw_taints_mode_t;

/** "NoSchedule", "PreferNoSchedule", "NoExecute", or "" for NW_TAINT_EFFECT_ANY. */
const char *nw_taints_effect_str(nw_taint_effect_t e);

/** Parse an effect name (exact spelling). "" gives NW_TAINT_EFFECT_ANY. Returns false
 * for anything else. */
bool nw_taints_effect_parse(const char *s, nw_taint_effect_t *out);

/** "Equal", "Exists", "Lt", "Gt". */
const char *nw_tolerations_op_str(nw_tol_op_t op);

void nw_taints_init(nw_taints_t *t);
void nw_taints_cleanup(nw_taints_t *t);
void nw_tolerations_init(nw_tolerations_t *t);
void nw_tolerations_cleanup(nw_tolerations_t *t);

/** Append a copy of a taint. NW_ENOMEM on failure (list unchanged). */
NW_MUST_USE nw_rc_t nw_taints_add(nw_taints_t *t, const char *key, const char *value,
                                  nw_taint_effect_t effect);

/** Append a copy of a toleration (seconds < 0 as has_seconds=false is the caller's
 * choice: pass has_seconds explicitly). */
NW_MUST_USE nw_rc_t nw_tolerations_add(nw_tolerations_t *t, const char *key, nw_tol_op_t op,
                                       const char *value, nw_taint_effect_t effect,
                                       bool has_seconds, int64_t seconds);

/** Parse a JSON array of taints ({key, value, effect}; spec.taints of a Node or a
 * NodePool template). key and effect are required; value optional; effect must be
 * one of NoSchedule, PreferNoSchedule, NoExecute. NULL or JSON null = empty list.
 * out is initialised by the call and left empty on failure; err names the field
 * (path[i].effect ...). Unknown fields (timeAdded) are ignored. */
NW_MUST_USE nw_rc_t nw_taints_parse(const cJSON *arr, const char *path, nw_taints_t *out,
                                    nw_err_t *err);

/** Parse a JSON array of tolerations ({key, operator, value, effect,
 * tolerationSeconds}; all optional; operator "" / Equal / Exists / Lt / Gt; effect ""
 * or one of the three; tolerationSeconds an integer). As nw_taints_parse. */
NW_MUST_USE nw_rc_t nw_tolerations_parse(const cJSON *arr, const char *path, nw_tolerations_t *out,
                                         nw_err_t *err);

/** Kubernetes' ToleratesTaint: effect empty or equal; key empty or equal; then by
 * operator — Exists: always; Equal: values equal; Lt/Gt: both values canonical
 * decimal int64 and taint < / > toleration. */
bool nw_tolerations_match(const nw_toleration_t *tol, const nw_taint_t *taint);

/** Is the taint tolerated by at least one toleration. */
bool nw_tolerations_tolerate(const nw_tolerations_t *tols, const nw_taint_t *taint);

/** The first taint (in list order) that must be tolerated under mode and is not;
 * NULL when all are tolerated. Borrowed from taints. */
const nw_taint_t *nw_tolerations_first_untolerated(const nw_taints_t *taints,
                                                   const nw_tolerations_t *tols,
                                                   nw_taints_mode_t mode);

/** Do the tolerations tolerate every taint that matters under mode. */
bool nw_tolerations_tolerate_all(const nw_taints_t *taints, const nw_tolerations_t *tols,
                                 nw_taints_mode_t mode);

/** Karpenter's message for an untolerated taint: "did not tolerate key=value:Effect".
 * Truncated to fit n; returns the full length. */
size_t nw_taints_untolerated_msg(const nw_taint_t *taint, char *buf, size_t n);

/** Kubernetes' Taint.ToString: "key=value:Effect", "key:Effect" when value is empty. */
size_t nw_taints_format(const nw_taint_t *taint, char *buf, size_t n);

/** Karpenter's IsKnownEphemeralTaint (pkg/scheduling/taints.go): exactly (key, value,
 * effect) one of node.kubernetes.io/not-ready (NoSchedule, NoExecute),
 * node.kubernetes.io/unreachable:NoSchedule,
 * node.cloudprovider.kubernetes.io/uninitialized=true:NoSchedule,
 * karpenter.sh/unregistered:NoExecute; or a key starting with "readiness.k8s.io/".
 * The scheduler ignores these on managed nodes that are not initialized yet. */
bool nw_taints_is_known_ephemeral(const nw_taint_t *taint);

/** Canonical decimal int64 as Kubernetes' IsDecimalInteger + ParseInt accept it
 * ("0", "-5", "123"; not "+5", "05", "-0", "", overflow). */
bool nw_tolerations_parse_decimal(const char *s, int64_t *out);

#endif
