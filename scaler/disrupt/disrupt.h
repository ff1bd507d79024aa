/*
 * scaler/disrupt/disrupt.h — the disruption decision core (kubernetes-sigs/karpenter
 * pkg/controllers/disruption/): which nodes are candidates, what the NodePool budgets allow, and
 * which single command a pass produces — emptiness, drift, multi-node or single-node consolidation,
 * in that order.
 *
 * Pure: no I/O and no clock reads. The objects come in as Kubernetes JSON (borrowed),
 * `now` is passed in, offering prices come through a callback, and the question
 * "would the pods of these nodes fit elsewhere, and on what new capacity" goes through
 * a simulation callback (nw_dis_sim_fn), so that every rule can be tested with data.
 *
 * Use:
 *   nw_disrupt_input_t in = {...};                    objects, now, nominated, in-command
 *   nw_disrupt_state_t *st; nw_candidates_state_build(&in, &st, &err);
 *   nw_disrupt_cmd_t cmd; nw_decide(st, sim, ud, &cmd, &err);   cmd.method NONE: nothing
 *   ... later, on a fresh state: nw_decide_validate(st2, &cmd, sim, ud, why, n)
 *   nw_decide_cmd_cleanup(&cmd); nw_candidates_state_free(st);
 *
 * Ownership: the state borrows the input's JSON (valid while the state lives) and owns
 * the rest. A command owns its strings and its simulation result (whose handle the
 * sim callback's handle_free releases). Thread: a state belongs to one thread.
 */
#ifndef NW_SCALER_DISRUPT_DISRUPT_H
#define NW_SCALER_DISRUPT_DISRUPT_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "admission/gpu.h"
#include "api/node.h"
#include "api/pod.h"
#include "api/wellknown.h"
#include "common/err.h"

#define NW_DIS_DND "karpenter.sh/do-not-disrupt"
#define NW_DIS_UNLIMITED 2147483647
#define NW_DIS_MULTI_MAX 100
#define NW_DIS_SPOT_MIN_TYPES 15
/* How long a pass may search before it gives up (Karpenter's
 * MultiNodeConsolidationTimeoutDuration and SingleNodeConsolidationTimeoutDuration). */
#define NW_DIS_MULTI_TIMEOUT_NS (60LL * 1000000000LL)
#define NW_DIS_SINGLE_TIMEOUT_NS (180LL * 1000000000LL)

typedef enum {
    NW_DIS_EMPTY = 0,
    NW_DIS_DRIFTED,
    NW_DIS_UNDERUTILIZED,
    NW_DIS_NREASONS
} nw_disrupt_reason_t;

typedef enum {
    NW_DIS_NONE = 0,
    NW_DIS_EMPTINESS,
    NW_DIS_DRIFT,
    NW_DIS_MULTI,
    NW_DIS_SINGLE,
    /* GPU-aware disruption (issue 33): an accelerator node none of whose class's pods has
     * run there for its pool's consolidateAfter is reclaimed, its remaining pods moved to
     * generic capacity; runs after drift, before consolidation (Underutilized budgets) */
    NW_DIS_ACCEL_IDLE
} nw_disrupt_method_t;
#define NW_DIS_NMETHODS (NW_DIS_ACCEL_IDLE + 1)

typedef enum { NW_DIS_DELETE = 0, NW_DIS_REPLACE } nw_disrupt_action_t;

/** "Empty" | "Drifted" | "Underutilized" (static). */
const char *nw_budget_reason_str(nw_disrupt_reason_t r);
/** "emptiness" | "drift" | "multi-node-consolidation" | "single-node-consolidation" |
 * "accelerator-idle". */
const char *nw_decide_method_str(nw_disrupt_method_t m);
/** "delete" | "replace". */
const char *nw_decide_action_str(nw_disrupt_action_t a);

/* ---- budgets (kubernetes-sigs/karpenter pkg/apis/v1/nodepool.go GetAllowedDisruptionsByReason) */

/**
 * Nodes of a pool that a budget set allows to be disrupted at once for `reason`,
 * before subtracting the ones already disrupting: the minimum over the pool's active
 * budgets that apply to the reason (NW_DIS_UNLIMITED when none is active); percentages
 * scale against `nodes` rounding up. No spec.disruption.budgets: [{nodes: 10%}].
 * A budget that does not parse counts as 0 (fail closed) and its problem is put in err
 * (path spec.disruption.budgets[i]...); the return code stays NW_OK.
 */
int nw_budget_allowed(const cJSON *nodepool, nw_disrupt_reason_t reason, int nodes, int64_t now,
                      nw_err_t *err);

/* ---- input and state ---- */

/* GPU-aware disruption: one accelerator class (admission/gpu.h's classes). A node is of
 * the class when its label (the input's accel_label_key) has the class's value; a pod is
 * of the class when a container, an init container or the pod-level resources request or
 * limit one of its resources, or its DRA claims ask for the class's devices (dra_classes). The
 * rules apply to the nodes of the classes that are `aware` (disruption.acceleratorAware); every
 * class's pools count as accelerator capacity, where a reclaimed node's pods are not moved.
 * Borrowed strings. */
typedef struct {
    const char *name;             /* "nvidia" */
    const char *label_value;      /* "nvidia-gpu" */
    const char *const *resources; /* exact names, or "prefix*" */
    size_t nresources;
    bool aware;
    /* staged replacement (disruption.rollout): at most rollout_max drift or expiry
     * replacements of the class's nodes in progress per NodePool (0: not staged), each
     * done once a pod of the class is Running and Ready on its replacement, which has
     * rollout_timeout (ns) from its creation to get there before the pool's rollout stops */
    int rollout_max;
    int64_t rollout_timeout;
    /* DRA: a pod is of the class too when its ResourceClaims ask for the class's devices:
     * dra_classes(pod, dra_ud) gives the classes (bit i: the policy's class i) a pod with
     * spec.resourceClaims asks devices of, and `bit` is this class's; NULL: not looked at */
    unsigned bit;
    unsigned (*dra_classes)(const nw_pod_t *pod, void *ud);
    void *dra_ud;
} nw_disrupt_accel_t;

/* Staged replacement of accelerator nodes: a replacement NodeClaim created for a drifted or
 * expired accelerator node carries this annotation, the replaced NodeClaim's name; the
 * controller removes it once a pod of the class is Running and Ready on its node. */
#define NW_DIS_ROLLOUT_ANNOTATION "nodewarden.io/accelerator-rollout-replaces"
/* the NodePool condition set while a replacement missed its deadline */
#define NW_DIS_ROLLOUT_CONDITION "AcceleratorRolloutBlocked"

typedef struct {
    const cJSON *const *nodepools;
    size_t nnodepools;
    const nw_node_claim_t *const *nodeclaims; /* records (api/node.h) */
    size_t nnodeclaims;
    const nw_node_t *const *nodes; /* records (api/node.h) */
    size_t nnodes;
    const nw_pod_t *const *pods; /* records (api/pod.h) */
    size_t npods;
    /* Optional: the pods bound to a node, from the caller's index (the cache keeps one),
     * as a malloc'd array the build takes (*out NULL when none); returns the count, or
     * (size_t)-1 when memory runs out. NULL: the build groups pods by node itself. */
    size_t (*pods_on)(void *ud, const char *node, const nw_pod_t ***out);
    void *pods_on_ud;
    const cJSON *const *pdbs;
    size_t npdbs;
    int64_t now; /* epoch ns */
    /* Node names a provisioning pass nominated in the last 20 s (not candidates). */
    const char *const *nominated;
    size_t nnominated;
    /* NodeClaim names that are part of an in-flight command (not candidates; they count
     * as disrupting for budgets). */
    const char *const *in_command;
    size_t nin_command;
    /* Price of an offering per hour, < 0 when unknown. NULL: every price unknown. */
    double (*price)(void *ud, const char *itype, const char *zone, const char *capacity_type);
    void *price_ud;
    bool spot_to_spot; /* feature gate SpotToSpotConsolidation (default off) */
    /* A monotonic clock (ns) the consolidation searches check against their time limits
     * (multi_timeout, single_timeout: ns, 0 none). NULL: no limit. */
    int64_t (*mono)(void *ud);
    void *mono_ud;
    int64_t multi_timeout, single_timeout;
    /* Is a provisioning batch waiting for the thread the pass runs on? Asked before each
     * simulation: when true the pass stops there and decides nothing (cmd->yielded), so a
     * batch is never held behind a pass's simulations (each one of them is a scheduling
     * simulation of the whole cluster). NULL: never. */
    bool (*yield)(void *ud);
    void *yield_ud;
    /* GPU-aware disruption (naccels 0: off): an accelerator node running a pod of its
     * class is never consolidated on utilization; one where none has run for its pool's
     * consolidateAfter is reclaimed (NW_DIS_ACCEL_IDLE). accel_last_used: when (epoch ns) a
     * pod of its class last ran on a NodeClaim's node as the caller remembers it; 0 or a
     * NULL callback: not known, then the NodeClaim's status.lastPodEventTime (no pod of any
     * kind has come or gone since) or else its initialization counts. */
    const char *accel_label_key;
    const nw_disrupt_accel_t *accels;
    size_t naccels;
    int64_t (*accel_last_used)(void *ud, const char *nodeclaim);
    void *accel_ud;
    /* A look without the pods (the controller's markers and budgets): every NodeClaim-level
     * field, the pools' counts and budgets, and the accelerator and rollout fields (the pods
     * of nodes carrying accel_label_key are attached); the other nodes get no pods, no
     * price, no costs and no candidate verdict (candidate false, why "not judged"). */
    bool light;
    /* A light look may pass the state of an earlier light look (NULL: none) made from the
     * same NodePools and NodeClaims and Nodes (the caller knows: their generations): a node
     * whose NodeClaim record is the one at its place there takes its pool, Node and labels
     * from it instead of looking them up. Only read during the build. */
    const struct nw_disrupt_state *reuse;
} nw_disrupt_input_t;

typedef struct {
    const char *name;                         /* NodeClaim name (borrowed from the input) */
    const nw_node_claim_t *nodeclaim;         /* its record (borrowed from the input) */
    const nw_node_t *node;                    /* NULL without one */
    const char *node_name;                    /* "" without a node */
    int pool;                                 /* index into the state's pools, -1 unknown */
    const char *itype, *zone, *capacity_type; /* labels ("" when absent) */
    double price;                             /* the node's offering price, < 0 unknown */
    const nw_pod_t **pods; /* pods bound to the node (owned array, borrowed pods) */
    size_t npods;
    int nresched; /* reschedulable pods that count against emptiness */
    bool initialized, deleting, in_command, nominated, ready, counted, disrupting;
    bool candidate;      /* every common rule holds (disruption/types.go NewCandidate) */
    bool pods_block;     /* only the pod rules (do-not-disrupt, PDB) fail */
    bool has_tgp;        /* spec.terminationGracePeriod set (drift waives pods_block) */
    bool empty;          /* candidate without reschedulable pods */
    bool consolidatable; /* the Consolidatable rule holds now (nw_candidates_consolidatable_at) */
    int64_t consolidatable_at; /* when it does / did (0: never: disabled or not initialized) */
    int64_t last_pod_event;    /* status.lastPodEventTime, 0 unset */
    bool drifted;              /* condition Drifted=True */
    int64_t drifted_at;
    double disruption_cost;
    double move_cost;      /* Balanced: 1 + the reschedulable pods' eviction costs (>= 0 each) */
    int accel;             /* its accelerator class (index into the input's accels), -1 none */
    int accel_pods;        /* active pods of that class on it */
    int64_t accel_since;   /* a pod of the class last ran there (or the fallback), epoch ns */
    int64_t accel_idle_at; /* accel_since + consolidateAfter (0: never: busy, Never) */
    bool accel_idle;       /* now >= accel_idle_at: to be reclaimed */
    /* staged replacement (rollout.c): the class of its pool when the class stages its
     * rollouts (-1 none); expired: past spec.expireAfter (such nodes are replaced by the
     * drift method, one step of the rollout, instead of deleted by expiry); the class's
     * active pods on it; as a replacement (rollout_of: the annotation, NULL when it is
     * none): done (a pod of the class Running and Ready on it) or late (not done by its
     * deadline, rollout_deadline) */
    int rollout_class;
    bool expired;
    int64_t expired_at;
    int rollout_pods;
    const char *rollout_of;
    bool rollout_done, rollout_late;
    int64_t rollout_deadline;
    char why[256]; /* why it is not a candidate ("" when it is) */
} nw_disrupt_node_t;

typedef struct {
    const char *name;
    const cJSON *obj;
    bool consolidation_never;     /* consolidateAfter: Never */
    int64_t consolidate_after;    /* ns */
    bool when_empty;              /* consolidationPolicy WhenEmpty */
    bool balanced;                /* consolidationPolicy Balanced (moves scored, decide.c) */
    double total_cost;            /* Balanced: the prices of its priced candidates */
    double total_disruption;      /* Balanced: their move costs (nw_disrupt_node_t.move_cost) */
    int counted, disrupting;      /* nodes for the percentages; already disrupting */
    int allowed[NW_DIS_NREASONS]; /* max(0, budget - disrupting), NW_DIS_UNLIMITED */
    char budget_error[256];       /* a budget that failed to parse ("" none) */
    /* staged replacement (rollout.c): the class whose label its template carries when that
     * class stages rollouts (-1 none); steps in progress (replacements not yet done, and
     * drifted or expired nodes of the class in a command or being deleted without one);
     * rollout_wait: one of them; blocked: a replacement missed its deadline (why says which) */
    int rollout_class;
    int rollout_steps;
    char rollout_wait[256];
    bool rollout_blocked;
    char rollout_why[384];
} nw_disrupt_pool_t;

typedef struct nw_disrupt_state {
    nw_disrupt_input_t in;
    nw_disrupt_node_t *nodes; /* one per managed NodeClaim, sorted by name */
    size_t nnodes;
    nw_disrupt_pool_t *pools;
    size_t npools;
} nw_disrupt_state_t;

/** Build the state: every NodeClaim with a karpenter.sh/nodepool label becomes a node
 * with its candidate verdict; pools get their budgets. NW_ENOMEM only. */
NW_MUST_USE nw_rc_t nw_candidates_state_build(const nw_disrupt_input_t *in,
                                              nw_disrupt_state_t **out, nw_err_t *err);
void nw_candidates_state_free(nw_disrupt_state_t *st);
/** Staged replacement of accelerator nodes (rollout.c): fill the rollout fields of the
 * nodes and pools of st (the build calls it). */
void nw_rollout_build(nw_disrupt_state_t *st);
/** Is the pod (bound to a node) a pod of class a that is Running and Ready: not a
 * DaemonSet or mirror pod, not terminating. */
bool nw_rollout_pod_ready(const nw_pod_t *pod, const nw_disrupt_accel_t *a);

/** The node of a NodeClaim by name, or NULL. */
const nw_disrupt_node_t *nw_candidates_state_node(const nw_disrupt_state_t *st,
                                                  const char *nodeclaim);

/* ---- pod rules, exposed for tests and the drain ---- */

/** Eviction cost of a pod: 1 + pod-deletion-cost/2^27 + priority/2^25, in [-10, 10]. */
double nw_candidates_eviction_cost(const nw_pod_t *pod);
/** Active, not a DaemonSet or mirror pod (a terminating StatefulSet pod counts). */
bool nw_candidates_pod_reschedulable(const nw_pod_t *pod);
/** An active karpenter.sh/do-not-disrupt annotation at now: "true", or a duration not
 * yet elapsed since status.startTime. Invalid values are inactive. */
bool nw_candidates_pod_do_not_disrupt(const nw_pod_t *pod, int64_t now);
/** Does a label selector (matchLabels, matchExpressions) select these labels. A NULL
 * selector selects nothing, an empty one everything. */
bool nw_candidates_selector_matches(const cJSON *selector, const cJSON *labels);
/** Does the pod request or limit one of class a's resources (any container, init
 * container, or the pod-level resources). */
bool nw_accel_pod_uses(const nw_pod_t *pod, const nw_disrupt_accel_t *a);
/** The disruption rules' view of an isolation policy class (strings borrowed from k). */
nw_disrupt_accel_t nw_accel_of_class(const nw_accel_class_t *k);
/** The Consolidatable rule (kubernetes-sigs/karpenter
 * pkg/controllers/nodeclaim/disruption/consolidation.go): when (epoch ns) the NodeClaim
 * becomes consolidatable given the pool's consolidateAfter; 0 when never (Never, or not
 * Initialized). */
int64_t nw_candidates_consolidatable_at(const nw_node_claim_t *nodeclaim, const cJSON *nodepool);

/* ---- simulation ---- */

typedef struct {
    char name[64];
    /* the most expensive compatible available offering per capacity type; < 0 none */
    double on_demand, spot, reserved;
} nw_disrupt_topt_t;

typedef struct {
    char pool[256];
    nw_disrupt_topt_t *types; /* owned (malloc), cheapest first */
    int ntypes;
    bool allow_on_demand, allow_spot, allow_reserved;
    int min_values; /* minValues of the instance-type requirement, 0 none */
} nw_disrupt_repl_t;

typedef struct {
    bool ok;                 /* every pod that is not already pending can be placed, and none
                                lands on an existing node that is not initialized */
    char why[256];           /* when !ok */
    nw_disrupt_repl_t *repl; /* new NodeClaims the placement needs (owned, malloc) */
    int nrepl;
    void *handle; /* the adapter's own result (creates the replacements later) */
    void (*handle_free)(void *handle);
} nw_disrupt_sim_t;

/** Simulate scheduling without the given NodeClaims' nodes, their reschedulable pods
 * added as pending (with the cluster's pending pods). Fills *out (zeroed by the caller)
 * or fails (the pass then does nothing). */
typedef nw_rc_t (*nw_dis_sim_fn)(void *ud, const nw_disrupt_state_t *st,
                                 const char *const *nodeclaims, size_t n, nw_disrupt_sim_t *out,
                                 nw_err_t *err);

/** Free a simulation result's memory and handle; leaves it zeroed. NULL-safe. */
void nw_decide_sim_cleanup(nw_disrupt_sim_t *s);

/* ---- commands ---- */

typedef struct {
    char nodeclaim[256];
    char reason[64]; /* Event reason: DisruptionBlocked, Unconsolidatable, ... */
    char message[512];
} nw_disrupt_note_t;

typedef struct {
    nw_disrupt_method_t method; /* NONE: no command */
    nw_disrupt_reason_t reason;
    nw_disrupt_action_t action;
    char **candidates; /* NodeClaim names (owned) */
    size_t ncandidates;
    nw_disrupt_sim_t sim;        /* replacements (narrowed by the price and spot rules) */
    double old_price, new_price; /* per hour; new = cheapest replacement option */
    bool validate;               /* wait the validation delay, then nw_decide_validate */
    /* a step of a staged accelerator rollout whose replacements must run the class's pods:
     * they carry NW_DIS_ROLLOUT_ANNOTATION (the candidate) */
    bool rollout;
    char summary[512];
    /* why candidates were passed over this pass (events), and how many budgets blocked */
    nw_disrupt_note_t *notes;
    size_t nnotes;
    int budget_blocked[NW_DIS_NREASONS];
    /* a consolidation search ran out of time: multi-node kept its best command so far,
     * single-node gave up; *_evaluated: the candidate-set sizes (multi) or the
     * candidates (single) it had simulated by then */
    bool multi_timed_out, single_timed_out;
    int multi_evaluated, single_evaluated;
    /* the pass stopped before a simulation for a provisioning batch (in.yield): no
     * command; the caller runs the pass again once the batch is done */
    bool yielded;
    /* how long each method's search took, by nw_disrupt_method_t (ns on the input's mono
     * clock; -1: not run or no clock) */
    int64_t elapsed[NW_DIS_NMETHODS];
} nw_disrupt_cmd_t;

/** One disruption pass over a state: emptiness, drift, accelerator-idle, multi-node,
 * single-node; the first method that produces a command wins. *cmd is initialised by the call
 * (clean up with nw_decide_cmd_cleanup even on error). sim may be NULL (then only emptiness and
 * empty drifted nodes can act). */
NW_MUST_USE nw_rc_t nw_decide(const nw_disrupt_state_t *st, nw_dis_sim_fn sim, void *ud,
                              nw_disrupt_cmd_t *cmd, nw_err_t *err);

/**
 * Validation after the delay (kubernetes-sigs/karpenter pkg/controllers/disruption/validation.go)
 * on a freshly built state: candidates must still
 * be candidates for the method (emptiness drops the ones that are not and proceeds with
 * the rest), budgets must still allow them, and consolidation must simulate to the same
 * shape (delete stays delete; replace still needs exactly one NodeClaim whose instance
 * types include the command's). Returns 1 valid (cmd possibly reduced; a replace's sim
 * is swapped for the fresh one), 0 rejected with *why ("budget", "scheduling", "churn"
 * and a detail), -1 on a simulation error.
 */
int nw_decide_validate(const nw_disrupt_state_t *st, nw_disrupt_cmd_t *cmd, nw_dis_sim_fn sim,
                       void *ud, char *why, size_t whylen);

void nw_decide_cmd_cleanup(nw_disrupt_cmd_t *cmd);

/** The command (and the per-node verdicts of st) as JSON for `plan --disruption` and
 * logs (caller owns). cmd may be NULL. */
cJSON *nw_decide_report_json(const nw_disrupt_state_t *st, const nw_disrupt_cmd_t *cmd);

#endif
