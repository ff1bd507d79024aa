/*
 * tests/fuzz/fuzz_interruption.c — the interruption queue's parsers on
 * arbitrary bytes: the SQS ReceiveMessage response (and each message body it
 * yields), the EventBridge event parser, the GetQueueUrl and error parsers.
 * Invariants: a successful event parse has a valid kind and ids only for
 * kinds that act; a failed one leaves NOOP, no ids and names a field or says
 * why; a parsed receive has at most 10 messages, each with a receipt handle.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaler/aws/sqs.h"
#include "scaler/aws/intrevent.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond, const char *what)
{
    if (!cond) {
        fprintf(stderr, "invariant violated: %s\n", what);
        abort();
    }
}

static void event(const char *p, size_t n)
{
    nw_interrupt_event_t ev;
    nw_err_t err = {0};
    nw_rc_t rc = nw_intrevent_parse(p, n, &ev, &err);
    if (rc == NW_OK) {
        check(ev.kind < NW_INTR_KINDS, "kind in range");
        check(ev.kind == NW_INTR_NOOP || ev.nids > 0, "an acting kind names instances");
        check(ev.nids <= NW_INTR_MAX_IDS, "ids bounded");
        for (size_t i = 0; i < ev.nids; i++)
            check(strncmp(ev.ids[i], "i-", 2) == 0, "instance ids start with i-");
        check(nw_interrupt_kind_name(ev.kind) != NULL, "kind has a name");
    } else {
        check(rc == NW_EPARSE, "parse failures are NW_EPARSE");
        check(ev.kind == NW_INTR_NOOP && ev.nids == 0, "failure leaves nothing to act on");
        check(err.msg[0] != 0, "failure says why");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data;
    event(p, size);
    nw_sqs_msgs_t m;
    nw_err_t err = {0};
    if (nw_sqs_parse_receive(p, size, &m, &err) == NW_OK) {
        check(m.n <= NW_SQS_MAX_MESSAGES, "at most 10 messages");
        for (size_t i = 0; i < m.n; i++) {
            check(m.v[i].receipt && *m.v[i].receipt, "receipt handle present");
            check(m.v[i].body != NULL, "body present");
            event(m.v[i].body, m.v[i].body_len);
        }
        nw_sqs_msgs_free(&m);
    } else {
        check(m.n == 0, "failed receive parse is empty");
        check(err.msg[0] != 0, "receive failure says why");
    }
    char url[256];
    nw_err_t e2 = {0};
    if (nw_sqs_parse_queue_url(p, size, url, sizeof url, &e2) == NW_OK)
        check(strncmp(url, "http", 4) == 0, "queue URL is http(s)");
    nw_sqs_error_t ae;
    nw_sqs_parse_error(p, size, 400, &ae);
    check(ae.code[0] != 0, "error code always filled");
    return 0;
}
