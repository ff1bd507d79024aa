/* scaler/aws/intrevent.c — EventBridge envelope and detail parsing; see intrevent.h. */
#include "scaler/aws/intrevent.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "common/json.h"

/* "i-" and 8 or 17 lowercase hex digits, as EC2 issues them. */
static bool valid_instance_id(const char *s)
{
    size_t n = strlen(s);
    if (n != 10 && n != 19)
        return false;
    if (s[0] != 'i' || s[1] != '-')
        return false;
    for (size_t i = 2; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

/* An optional string field: absent → "", wrong type or too long → error. */
static NW_MUST_USE nw_rc_t opt_str(const cJSON *o, const char *key, const char *path, char *dst,
                                   size_t n, nw_err_t *err)
{
    dst[0] = 0;
    const cJSON *v = nw_json_get(o, key);
    if (!v || cJSON_IsNull(v))
        return NW_OK;
    if (!cJSON_IsString(v))
        return nw_err_set(err, NW_EPARSE, path, "%s: must be a string", path);
    if (strlen(v->valuestring) >= n)
        return nw_err_set(err, NW_EPARSE, path, "%s: too long", path);
    snprintf(dst, n, "%s", v->valuestring);
    return NW_OK;
}

static NW_MUST_USE nw_rc_t add_id(nw_interrupt_event_t *e, const cJSON *v, const char *path,
                                  nw_err_t *err)
{
    if (!cJSON_IsString(v) || !*v->valuestring)
        return nw_err_set(err, NW_EPARSE, path, "%s: must be a non-empty string", path);
    if (!valid_instance_id(v->valuestring))
        return nw_err_set(err, NW_EPARSE, path, "%s: not an EC2 instance id: %.40s", path,
                          v->valuestring);
    for (size_t i = 0; i < e->nids; i++)
        if (strcmp(e->ids[i], v->valuestring) == 0)
            return NW_OK;
    if (e->nids >= NW_INTR_MAX_IDS)
        return nw_err_set(err, NW_EPARSE, path, "%s: more than %d instances", path,
                          NW_INTR_MAX_IDS);
    snprintf(e->ids[e->nids++], sizeof e->ids[0], "%s", v->valuestring);
    return NW_OK;
}

static NW_MUST_USE nw_rc_t parse_detail(const cJSON *root, nw_interrupt_event_t *e, nw_err_t *err)
{
    const cJSON *d = nw_json_get(root, "detail");
    if (!cJSON_IsObject(d))
        return nw_err_set(err, NW_EPARSE, "detail", "detail: must be an object");
    nw_rc_t rc;
    if (e->kind == NW_INTR_SCHEDULED_CHANGE) {
        char service[64], category[64];
        if ((rc = opt_str(d, "service", "detail.service", service, sizeof service, err)) != NW_OK ||
            (rc = opt_str(d, "eventTypeCategory", "detail.eventTypeCategory", category,
                          sizeof category, err)) != NW_OK)
            return rc;
        if (strcmp(service, "EC2") != 0 || strcmp(category, "scheduledChange") != 0) {
            e->kind = NW_INTR_NOOP; /* other health events are not ours */
            return NW_OK;
        }
        const cJSON *ents = nw_json_get(d, "affectedEntities");
        if (!cJSON_IsArray(ents))
            return nw_err_set(err, NW_EPARSE, "detail.affectedEntities",
                              "detail.affectedEntities: must be an array");
        const cJSON *en;
        int i = 0;
        char path[96];
        cJSON_ArrayForEach(en, ents)
        {
            snprintf(path, sizeof path, "detail.affectedEntities[%d].entityValue", i++);
            if (!cJSON_IsObject(en))
                return nw_err_set(err, NW_EPARSE, path, "%s: the entity must be an object", path);
            if ((rc = add_id(e, nw_json_get(en, "entityValue"), path, err)) != NW_OK)
                return rc;
        }
        if (e->nids == 0)
            return nw_err_set(err, NW_EPARSE, "detail.affectedEntities",
                              "detail.affectedEntities: no instance listed");
        return NW_OK;
    }
    if ((rc = add_id(e, nw_json_get(d, "instance-id"), "detail.instance-id", err)) != NW_OK)
        return rc;
    if (e->kind == NW_INTR_SPOT_INTERRUPTION || e->kind == NW_INTR_CAPACITY_RESERVATION)
        return opt_str(d, "instance-action", "detail.instance-action", e->action, sizeof e->action,
                       err);
    if (e->kind == NW_INTR_STOPPED) { /* the state decides the kind */
        const cJSON *st = nw_json_get(d, "state");
        if (!cJSON_IsString(st) || !*st->valuestring)
            return nw_err_set(err, NW_EPARSE, "detail.state",
                              "detail.state: must be a non-empty string");
        if ((rc = opt_str(d, "state", "detail.state", e->state, sizeof e->state, err)) != NW_OK)
            return rc;
        if (strcmp(e->state, "stopping") == 0 || strcmp(e->state, "stopped") == 0)
            e->kind = NW_INTR_STOPPED;
        else if (strcmp(e->state, "shutting-down") == 0 || strcmp(e->state, "terminated") == 0)
            e->kind = NW_INTR_TERMINATED;
        else
            e->kind = NW_INTR_NOOP; /* pending, running */
    }
    return NW_OK;
}

nw_rc_t nw_intrevent_parse(const char *body, size_t len, nw_interrupt_event_t *out, nw_err_t *err)
{
    memset(out, 0, sizeof *out);
    if (!body || len == 0)
        return nw_err_set(err, NW_EPARSE, "", "empty message body");
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(body, len, &end, 0);
    if (!root)
        return nw_err_set(err, NW_EPARSE, "", "message body is not valid JSON");
    nw_rc_t rc = NW_OK;
    for (const char *p = end; p && p < body + len; p++)
        if (*p != ' ' && *p != '\n' && *p != '\r' && *p != '\t') {
            rc = nw_err_set(err, NW_EPARSE, "", "trailing data after the JSON value");
            goto out;
        }
    if (!cJSON_IsObject(root)) {
        rc = nw_err_set(err, NW_EPARSE, "", "message body is not a JSON object");
        goto out;
    }
    char version[16];
    if ((rc = opt_str(root, "version", "version", version, sizeof version, err)) != NW_OK ||
        (rc = opt_str(root, "source", "source", out->source, sizeof out->source, err)) != NW_OK ||
        (rc = opt_str(root, "detail-type", "detail-type", out->detail_type, sizeof out->detail_type,
                      err)) != NW_OK ||
        (rc = opt_str(root, "id", "id", out->id, sizeof out->id, err)) != NW_OK)
        goto out;
    /* the event's time: informative, so a missing or odd one leaves 0 */
    const cJSON *tm = nw_json_get(root, "time");
    if (cJSON_IsString(tm) && nw_clock_time_parse(tm->valuestring, &out->time_ns) != NW_OK)
        out->time_ns = 0;
    if (!version[0] || !out->source[0] || !out->detail_type[0]) {
        rc = nw_err_set(err, NW_EPARSE,
                        !version[0]       ? "version"
                        : !out->source[0] ? "source"
                                          : "detail-type",
                        "not an EventBridge event: %s is missing",
                        !version[0]       ? "version"
                        : !out->source[0] ? "source"
                                          : "detail-type");
        goto out;
    }
    static const struct {
        const char *source, *detail_type;
        nw_interrupt_kind_t kind;
    } kinds[] = {
        {"aws.ec2", "EC2 Spot Instance Interruption Warning", NW_INTR_SPOT_INTERRUPTION},
        {"aws.ec2", "EC2 Instance Rebalance Recommendation", NW_INTR_REBALANCE},
        {"aws.ec2", "EC2 Instance State-change Notification", NW_INTR_STOPPED},
        {"aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning",
         NW_INTR_CAPACITY_RESERVATION},
        {"aws.health", "AWS Health Event", NW_INTR_SCHEDULED_CHANGE},
    };
    out->kind = NW_INTR_NOOP;
    if (strcmp(version, "0") != 0)
        goto out;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (strcmp(kinds[i].source, out->source) == 0 &&
            strcmp(kinds[i].detail_type, out->detail_type) == 0)
            out->kind = kinds[i].kind;
    if (out->kind != NW_INTR_NOOP)
        rc = parse_detail(root, out, err);
    if (out->kind == NW_INTR_NOOP)
        out->nids = 0; /* e.g. a state change to running: nothing to act on */
out:
    cJSON_Delete(root);
    if (rc != NW_OK) {
        out->kind = NW_INTR_NOOP;
        out->nids = 0;
    }
    return rc;
}
