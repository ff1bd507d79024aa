/* scaler/disrupt/drain.c — pure drain decisions; see drain.h. */
#include "common/json.h"
#include "scaler/disrupt/drain.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "api/duration.h"
#include "api/taints.h"
#include "common/clock.h"

static bool tolerates_disrupted(const nw_pod_t *pod)
{
    nw_tolerations_t tols;
    if (nw_tolerations_parse(nw_json_get(pod->spec, "tolerations"), "spec.tolerations", &tols,
                             NULL) != NW_OK)
        return false; /* malformed tolerations tolerate nothing */
    nw_taint_t t = {(char *)NW_TAINT_DISRUPTED, (char *)"", NW_TAINT_NO_SCHEDULE};
    bool r = nw_tolerations_tolerate(&tols, &t);
    nw_tolerations_cleanup(&tols);
    return r;
}

bool nw_drain_do_not_disrupt(const nw_pod_t *pod, int64_t now_ns, int *invalid)
{
    if (invalid)
        *invalid = 0;
    const cJSON *v = nw_json_get(pod->annotations, NW_ANN_DO_NOT_DISRUPT);
    if (!v)
        return false;
    const char *s = cJSON_GetStringValue(v);
    if (s && strcmp(s, "true") == 0)
        return true;
    int64_t d = 0;
    if (!s || nw_duration_parse(s, &d, NULL) != NW_OK || d <= 0) {
        if (invalid)
            *invalid = 1;
        return false;
    }
    if (!pod->started)
        return true; /* no start time: fail safe */
    return now_ns - pod->started < d;
}

void nw_drain_classify(const nw_pod_t *pod, int64_t now_ns, nw_drain_pod_t *out)
{
    memset(out, 0, sizeof *out);
    out->terminal = nw_pod_is_terminal(pod);
    if (pod->terminating) {
        out->terminating = 1;
        if (pod->deleted) {
            out->deletion_ns = pod->deleted;
            out->stuck = now_ns - pod->deleted > NW_DRAIN_STUCK_NS;
        }
    }
    out->mirror = nw_pod_owned_by_api(pod, "v1", "Node");
    out->daemonset = nw_pod_owned_by_api(pod, "apps/v1", "DaemonSet");
    const char *pc = nw_json_str(pod->spec, "priorityClassName");
    out->critical = pc && (strcmp(pc, "system-cluster-critical") == 0 ||
                           strcmp(pc, "system-node-critical") == 0);
    out->tolerates_disrupted = tolerates_disrupted(pod);
    out->do_not_disrupt = nw_drain_do_not_disrupt(pod, now_ns, &out->dnd_invalid);
    const cJSON *g = nw_json_get(pod->spec, "terminationGracePeriodSeconds");
    if (cJSON_IsNumber(g)) {
        out->has_grace = 1;
        out->grace_s = g->valuedouble < 0 ? 0 : (int64_t)g->valuedouble;
    }
}

bool nw_drain_waits_for(const nw_drain_pod_t *p)
{
    return !p->terminal && !p->tolerates_disrupted && !p->stuck && !p->mirror;
}

bool nw_drain_evictable(const nw_drain_pod_t *p)
{
    return !p->terminal && !p->terminating && !p->tolerates_disrupted && !p->mirror &&
           !p->do_not_disrupt;
}

nw_drain_wave_t nw_drain_wave(const nw_drain_pod_t *p)
{
    if (p->critical)
        return p->daemonset ? NW_WAVE_CRITICAL_DS : NW_WAVE_CRITICAL;
    return p->daemonset ? NW_WAVE_NONCRITICAL_DS : NW_WAVE_NONCRITICAL;
}

bool nw_drain_must_delete(const nw_drain_pod_t *p, int64_t deadline_ns, int64_t now_ns)
{
    if (!deadline_ns || !nw_drain_waits_for(p))
        return false;
    if (p->terminating) /* already terminating, but past the node's deadline */
        return p->deletion_ns && p->deletion_ns > deadline_ns;
    if (!p->has_grace)
        return false; /* the API server always defaults it; without one there is no time */
    if (p->grace_s > (INT64_MAX / NW_NS_PER_SEC) / 2)
        return true;
    return now_ns > deadline_ns - p->grace_s * NW_NS_PER_SEC;
}

int64_t nw_drain_delete_grace(int64_t deadline_ns, int64_t now_ns)
{
    int64_t s = (deadline_ns - now_ns) / NW_NS_PER_SEC;
    return s < 1 ? 1 : s;
}

int64_t nw_drain_backoff(int failures)
{
    if (failures <= 0)
        return 0;
    int64_t d = NW_DRAIN_BACKOFF_MIN_NS;
    for (int i = 1; i < failures && d < NW_DRAIN_BACKOFF_MAX_NS; i++)
        d *= 2;
    return d > NW_DRAIN_BACKOFF_MAX_NS ? NW_DRAIN_BACKOFF_MAX_NS : d;
}

void nw_drain_plan(const nw_drain_pod_t *pods, size_t n, int64_t deadline_ns, int64_t now_ns,
                   nw_drain_action_t *actions, nw_drain_plan_t *out)
{
    memset(out, 0, sizeof *out);
    out->wave = -1;
    size_t per_wave[NW_WAVES] = {0};
    for (size_t i = 0; i < n; i++) {
        actions[i] = NW_DRAIN_SKIP;
        if (!nw_drain_waits_for(&pods[i]))
            continue;
        out->waiting++;
        per_wave[nw_drain_wave(&pods[i])]++;
        actions[i] = NW_DRAIN_WAIT;
        if (nw_drain_must_delete(&pods[i], deadline_ns, now_ns)) {
            actions[i] = NW_DRAIN_DELETE;
            out->del++;
        }
        if (pods[i].do_not_disrupt && !pods[i].terminating && actions[i] != NW_DRAIN_DELETE)
            out->blocked_dnd++;
    }
    for (int w = 0; w < NW_WAVES; w++)
        if (per_wave[w]) {
            out->wave = w;
            break;
        }
    if (out->wave < 0)
        return;
    for (size_t i = 0; i < n; i++)
        if (actions[i] == NW_DRAIN_WAIT && (int)nw_drain_wave(&pods[i]) == out->wave &&
            nw_drain_evictable(&pods[i])) {
            actions[i] = NW_DRAIN_EVICT;
            out->evict++;
        }
}

nw_rc_t nw_drain_tgp_deadline(const nw_node_claim_t *nodeclaim, int64_t *deadline_ns, nw_err_t *err)
{
    *deadline_ns = 0;
    const char *s = nw_node_meta_annotation(&nodeclaim->m, NW_ANN_TERMINATION_TS);
    if (!s)
        return NW_ENOTFOUND;
    if (nw_clock_time_parse(s, deadline_ns) != NW_OK) {
        *deadline_ns = 0;
        return nw_err_set(err, NW_EPARSE, "metadata.annotations[" NW_ANN_TERMINATION_TS "]",
                          "not an RFC 3339 time: %s", s);
    }
    return NW_OK;
}

nw_rc_t nw_drain_tgp_value(const nw_node_claim_t *nodeclaim, char *buf, size_t len, nw_err_t *err)
{
    const char *dts = nodeclaim->m.deleted_text;
    const char *tgp = nodeclaim->tgp;
    if (!dts[0] || !nodeclaim->tgp_set)
        return NW_ENOTFOUND;
    int64_t t = 0, d = 0;
    if (nw_clock_time_parse(dts, &t) != NW_OK)
        return nw_err_set(err, NW_EPARSE, "metadata.deletionTimestamp", "not an RFC 3339 time: %s",
                          dts);
    nw_err_t e = {0};
    if (nw_duration_parse(tgp, &d, &e) != NW_OK || d < 0)
        return nw_err_set(err, NW_EPARSE, "spec.terminationGracePeriod", "%s",
                          e.msg[0] ? e.msg : "must not be negative");
    if (d > INT64_MAX - t)
        return nw_err_set(err, NW_ERANGE, "spec.terminationGracePeriod", "deadline out of range");
    if (len < 32)
        return nw_err_set(err, NW_ERANGE, "", "buffer too small");
    nw_clock_time_format(t + d, buf, len);
    return NW_OK;
}
