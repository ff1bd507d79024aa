/* scaler/aws/intrsource.c — interruption events from SQS; see intrsource.h. */
#include "scaler/aws/intrsource.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaler/aws/intrevent.h"

typedef struct {
    nw_interrupt_source_t base;
    nw_sqs_t *sqs;
    char queue[512];
    int wait_s, visibility_s;
} sqs_source_t;

static sqs_source_t *me(nw_interrupt_source_t *s)
{
    return (sqs_source_t *)s;
}

nw_cloud_err_kind_t nw_intrsource_sqs_err_kind(nw_sqs_class_t cls)
{
    switch (cls) {
    case NW_SQS_OK:
        return NW_CLOUD_ERR_NONE;
    case NW_SQS_THROTTLE:
        return NW_CLOUD_ERR_THROTTLED;
    case NW_SQS_AUTH:
        return NW_CLOUD_ERR_UNAUTHORIZED;
    case NW_SQS_NOTFOUND:
    case NW_SQS_INVALID:
        return NW_CLOUD_ERR_INVALID;
    case NW_SQS_SERVER:
    case NW_SQS_TRANSPORT:
    case NW_SQS_OTHER:
        break;
    }
    return NW_CLOUD_ERR_OTHER;
}

static void to_neutral(const nw_sqs_error_t *ae, nw_cloud_error_t *ce)
{
    if (!ce)
        return;
    memset(ce, 0, sizeof *ce);
    ce->kind = nw_intrsource_sqs_err_kind(ae->cls);
    snprintf(ce->code, sizeof ce->code, "%s", ae->code);
    snprintf(ce->message, sizeof ce->message, "%s", ae->message);
}

static NW_MUST_USE nw_rc_t op_receive(nw_interrupt_source_t *s, nw_interrupt_batch_t *out,
                                      nw_cloud_error_t *ce, nw_err_t *err)
{
    sqs_source_t *q = me(s);
    memset(out, 0, sizeof *out);
    nw_sqs_msgs_t msgs;
    nw_sqs_error_t ae;
    memset(&ae, 0, sizeof ae);
    nw_rc_t rc =
        nw_sqs_receive(q->sqs, NW_SQS_MAX_MESSAGES, q->visibility_s, q->wait_s, &msgs, &ae, err);
    if (rc != NW_OK) {
        to_neutral(&ae, ce);
        return rc;
    }
    if (msgs.n) {
        out->v = calloc(msgs.n, sizeof *out->v);
        if (!out->v) {
            nw_sqs_msgs_free(&msgs);
            return nw_err_set(err, NW_ENOMEM, "interruption", "out of memory");
        }
    }
    for (size_t i = 0; i < msgs.n; i++) {
        nw_interrupt_msg_t *m = &out->v[out->n++];
        snprintf(m->id, sizeof m->id, "%s", msgs.v[i].id);
        m->handle = msgs.v[i].receipt; /* moved into the batch */
        msgs.v[i].receipt = NULL;
        m->parsed =
            nw_intrevent_parse(msgs.v[i].body, msgs.v[i].body_len, &m->ev, &m->perr) == NW_OK;
    }
    nw_sqs_msgs_free(&msgs);
    return NW_OK;
}

static NW_MUST_USE nw_rc_t op_ack(nw_interrupt_source_t *s, const nw_interrupt_msg_t *m,
                                  nw_cloud_error_t *ce, nw_err_t *err)
{
    nw_sqs_error_t ae;
    memset(&ae, 0, sizeof ae);
    nw_rc_t rc = nw_sqs_delete(me(s)->sqs, m->handle ? m->handle : "", &ae, err);
    if (rc != NW_OK)
        to_neutral(&ae, ce);
    return rc;
}

static void op_set_abort(nw_interrupt_source_t *s, const atomic_int *flag)
{
    nw_sqs_set_abort(me(s)->sqs, flag);
}

static void op_free(nw_interrupt_source_t *s)
{
    if (!s)
        return;
    nw_sqs_free(me(s)->sqs);
    free(me(s));
}

static const nw_interrupt_source_ops_t sqs_ops = {
    .receive = op_receive,
    .ack = op_ack,
    .set_abort = op_set_abort,
    .free = op_free,
};

nw_rc_t nw_intrsource_new(const nw_awscfg_t *cfg, nw_creds_t *creds, const nw_clock_t *clock,
                          const char *queue, int wait_s, int visibility_s,
                          nw_interrupt_source_t **out, nw_err_t *err)
{
    *out = NULL;
    if (!queue || !*queue)
        return nw_err_set(err, NW_EINVAL, "settings.interruptionQueue", "no queue given");
    sqs_source_t *q = calloc(1, sizeof *q);
    if (!q)
        return nw_err_set(err, NW_ENOMEM, "interruption", "out of memory");
    q->base.ops = &sqs_ops;
    snprintf(q->queue, sizeof q->queue, "%s", queue);
    q->base.name = q->queue;
    q->wait_s = wait_s < 0 || wait_s > 20 ? 20 : wait_s;
    q->visibility_s = visibility_s <= 0 ? 20 : visibility_s;
    nw_rc_t rc = nw_sqs_new(cfg, creds, clock ? clock : nw_clock_system(), q->queue, &q->sqs, err);
    if (rc != NW_OK) {
        free(q);
        return rc;
    }
    *out = &q->base;
    return NW_OK;
}
