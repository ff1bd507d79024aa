/*
 * api/kre.h — the regular expressions of Karpenter's v1.14.1 CRDs.
 *
 * Each entry keeps the exact Go RE2 text (shown in error messages, as
 * kube-apiserver prints it) and a POSIX ERE translation for <regex.h>. The
 * translations, by hand: `\/` → `/`; `\d` → `[0-9]`; `\s` → `[\t\n\f\r ]` (RE2's
 * class); RE2's `.` (which never matches a newline) → `[^\n]`; `(?:…)` → `(…)`;
 * empty alternatives (`a||b`, `(x||y)T`) → an optional group. Anchored patterns
 * mean the same under POSIX leftmost-longest as under RE2 leftmost-first.
 * Matching is byte-wise (C locale), which agrees with RE2 for these patterns.
 *
 * Thread: any (compiled once under pthread_once).
 */
#ifndef NW_API_KRE_H
#define NW_API_KRE_H

#include "api/kval.h"

typedef enum {
    NW_RE_QNAME,        /* requirement keys, taint keys and values */
    NW_RE_LABEL_VALUE,  /* template label values */
    NW_RE_DUR_NEVER,    /* expireAfter, consolidateAfter */
    NW_RE_DUR,          /* terminationGracePeriod */
    NW_RE_BUDGET_DUR,   /* budgets[].duration */
    NW_RE_CRON,         /* budgets[].schedule */
    NW_RE_BUDGET_NODES, /* budgets[].nodes */
    NW_RE_QUANTITY,     /* limits, kubelet reserved */
    NW_RE_GROUP,        /* nodeClassRef.group */
    NW_RE_DATETIME,     /* format: date-time */
    NW_RE_EVICT,        /* kubelet eviction thresholds */
    NW_RE_VOLUME_SIZE,  /* blockDeviceMappings[].ebs.volumeSize */
    NW_RE_ALIAS,        /* amiSelectorTerms[].alias (CEL matches) */
    NW_RE_AMI_ID,       /* unanchored */
    NW_RE_SUBNET_ID,    /* unanchored */
    NW_RE_SG_ID,        /* unanchored */
    NW_RE_CR_ID,
    NW_RE_OWNER_ID,
    NW_RE_PG_ID,
    NW_RE__COUNT
} nw_re_id_t;

/** The compiled pattern (borrowed, static storage). */
const nw_kv_re_t *nw_kre(nw_re_id_t id);

#endif
