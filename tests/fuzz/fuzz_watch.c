/*
 * tests/fuzz/fuzz_watch.c — the watch-event stream framing (scaler/kube/watch.c,
 * nw_kube_watch_wparse_*) on arbitrary bytes. The same stream is fed whole, then in
 * chunks of 1 to 64 bytes cut where a generator seeded from the input says, then a byte
 * at a time: the events delivered (type and object), and the first error and the end,
 * must be the same every way, since the network may cut a stream anywhere. An event
 * over the size cap (4 KiB here) is an error, not a delivery; a callback asking to stop
 * (type "STOP") ends the delivery; a refused stream says why.
 */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "scaler/kube/watch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_EVENT 4096

typedef struct {
    nw_buf_t log; /* every event: type, NUL, the object printed, NUL */
} seen_t;

static int on_event(void *ud, const char *type, cJSON *object)
{
    seen_t *s = ud;
    char *o = object ? cJSON_PrintUnformatted(object) : NULL;
    if ((object && !o) || nw_buf_adds(&s->log, type) != NW_OK ||
        nw_buf_add(&s->log, "", 1) != NW_OK || nw_buf_adds(&s->log, o ? o : "-") != NW_OK ||
        nw_buf_add(&s->log, "", 1) != NW_OK)
        abort();
    free(o);
    cJSON_Delete(object);
    return strcmp(type, "STOP") == 0;
}

typedef struct {
    nw_rc_t rc; /* the first error of the feeds, else finish's */
    size_t events;
    nw_buf_t log;
} run_t;

/* Feed data in chunks: step 0 = whole, else sizes from a generator seeded by seed. */
static void run(const uint8_t *data, size_t size, unsigned step, uint32_t seed, run_t *out)
{
    seen_t s;
    nw_buf_init(&s.log, (size_t)1 << 26);
    nw_kube_wparse_t p;
    nw_kube_watch_wparse_init(&p, MAX_EVENT, on_event, &s);
    nw_rc_t rc = NW_OK;
    size_t off = 0;
    while (off < size && rc == NW_OK) {
        size_t n = size - off;
        if (step == 1) {
            n = 1;
        } else if (step) {
            seed = seed * 1103515245u + 12345u;
            size_t want = 1 + (seed >> 16) % 64;
            n = want < n ? want : n;
        }
        rc = nw_kube_watch_wparse_feed(&p, (const char *)data + off, n);
        off += n;
    }
    if (rc == NW_OK)
        rc = nw_kube_watch_wparse_finish(&p);
    if (rc != NW_OK && !p.err[0]) {
        fprintf(stderr, "invariant violated: a refused stream says why (rc %d)\n", rc);
        abort();
    }
    out->rc = rc;
    out->events = p.events;
    out->log = s.log;
    nw_kube_watch_wparse_cleanup(&p);
}

static void same(const run_t *a, const run_t *b, const char *how)
{
    if (a->rc != b->rc || a->events != b->events || a->log.len != b->log.len ||
        (a->log.len && memcmp(a->log.data, b->log.data, a->log.len) != 0)) {
        fprintf(stderr,
                "invariant violated: fed whole and %s differ: rc %d/%d, events %zu/%zu, "
                "log %zu/%zu bytes\n",
                how, a->rc, b->rc, a->events, b->events, a->log.len, b->log.len);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint32_t seed = (uint32_t)size;
    for (size_t i = 0; i < size && i < 4; i++)
        seed = seed * 31u + data[i];
    run_t whole, chunks, bytes;
    run(data, size, 0, seed, &whole);
    run(data, size, 2, seed, &chunks);
    same(&whole, &chunks, "in chunks");
    nw_buf_cleanup(&chunks.log);
    if (size <= 8192) { /* a byte at a time costs a call per byte */
        run(data, size, 1, seed, &bytes);
        same(&whole, &bytes, "a byte at a time");
        nw_buf_cleanup(&bytes.log);
    }
    nw_buf_cleanup(&whole.log);
    return 0;
}
