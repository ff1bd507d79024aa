/*
 * server/conns.h — the webhook's table of open connections: what each one is
 * doing, the header deadline, and who is closed when the server is full.
 *
 * libmicrohttpd tells the server of each connection it accepts and closes
 * (MHD_OPTION_NOTIFY_CONNECTION) and of each request's start and end; the server
 * moves the connection's entry between these states:
 *
 *   FRESH    accepted, no request headers yet (TLS handshake, headers arriving)
 *   BODY     headers in, the request body arriving
 *   BUSY     the request is complete: handled, or its answer being sent
 *   IDLE     a keep-alive connection between two requests
 *   CLOSING  shut down by this table; libmicrohttpd has not closed it yet
 *
 * Each state's list is ordered by the time the connection entered it, so the
 * oldest is at the head. Two rules act on the lists:
 *
 *   - the cap: when an accept makes more than `cap` connections open (CLOSING ones
 *     not counted), one is shut down: the oldest FRESH one, else the IDLE one idle
 *     longest, else the BODY one whose request started first; when every other
 *     connection is BUSY, the new one itself. So a flood of connections that never
 *     send a request pushes out its own oldest members, not the next real client;
 *   - the header deadline (nw_conns_sweep, every NW_CONNS_SWEEP_MS on the sweeper
 *     thread): a FRESH connection older than header_timeout is shut down, and one older
 *     than busy_header_timeout while more than half of the cap is open (at most
 *     cap / NW_CONNS_BUSY_SPREAD of those a sweep, at least 16, so that crossing half
 *     full does not close thousands at once); an IDLE one
 *     whose next request's headers are not in idle_timeout + header_timeout after
 *     its last request ended is shut down. Bytes dripped do not extend either.
 *
 * "Shut down" is shutdown(2) on the socket, never close: the descriptor stays
 * libmicrohttpd's, which sees the end of the stream and closes the connection as
 * if the client had; its close notification then frees the entry
 * (nw_conns_closed). An entry's descriptor is valid while it is in the table,
 * because libmicrohttpd notifies the close before it closes the socket.
 *
 * Ownership: nw_conns_new returns an owned table (nw_conns_free); entries are the
 * table's, handed out by nw_conns_open and freed by nw_conns_closed.
 * Thread: every function takes the table's mutex (libmicrohttpd's workers call in
 * at once, and the sweeper); nw_conns_new/free on the server's owner.
 */
#ifndef NW_SERVER_CONNS_H
#define NW_SERVER_CONNS_H

#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "server/metrics.h"

typedef enum {
    NW_CONN_FRESH = 0,
    NW_CONN_BODY,
    NW_CONN_BUSY,
    NW_CONN_IDLE,
    NW_CONN_CLOSING,
    NW_CONN_STATES
} nw_conn_state_t;

/* The sweeper's period: short, so that what one sweep closes stays small. */
#define NW_CONNS_SWEEP_MS 50
/* Past half full, one sweep closes at most cap / this many for the busy deadline. */
#define NW_CONNS_BUSY_SPREAD 64

typedef struct nw_conns nw_conns_t;
typedef struct nw_conn nw_conn_t;

typedef struct {
    unsigned cap;                   /* connections open at once, >= 1 */
    int64_t header_timeout_ns;      /* FRESH: accept to headers; 0 = no deadline */
    int64_t busy_header_timeout_ns; /* the same past half the cap (if shorter); 0 = off */
    int64_t idle_timeout_ns;        /* IDLE: added to header_timeout_ns */
    nw_metrics_t *metrics;          /* connection gauges and close counters; may be NULL */
} nw_conns_opts_t;

/** A new, empty table. NULL when out of memory. */
nw_conns_t *nw_conns_new(const nw_conns_opts_t *o);

/** Free the table and every entry left (after the server stopped). NULL-safe. */
void nw_conns_free(nw_conns_t *t);

/** Enter an accepted connection as FRESH; when that makes more than the cap open,
 * shut one down as described above. NULL when out of memory (the connection is
 * then served without an entry: only libmicrohttpd's idle timeout applies). */
nw_conn_t *nw_conns_open(nw_conns_t *t, int fd, int64_t now_ns);

/** Move an entry to another state (not CLOSING); it goes to that list's tail.
 * NULL-safe; an entry already CLOSING stays so. */
void nw_conns_set(nw_conns_t *t, nw_conn_t *k, nw_conn_state_t st, int64_t now_ns);

/** libmicrohttpd closed the connection: remove and free its entry. NULL-safe. */
void nw_conns_closed(nw_conns_t *t, nw_conn_t *k);

/** Apply the header deadlines at now_ns; returns how many were shut down. */
unsigned nw_conns_sweep(nw_conns_t *t, int64_t now_ns);

/** Connections open and not being closed. */
unsigned nw_conns_live(nw_conns_t *t);

/** Entries in one state (tests and the log). */
unsigned nw_conns_count(nw_conns_t *t, nw_conn_state_t st);

/** An entry's state (tests). */
nw_conn_state_t nw_conns_state(nw_conns_t *t, const nw_conn_t *k);

/** Start the sweeper thread: nw_conns_sweep every NW_CONNS_SWEEP_MS on the monotonic
 * clock. */
NW_MUST_USE nw_rc_t nw_conns_sweeper_start(nw_conns_t *t);

/** Stop and join the sweeper, if started. */
void nw_conns_sweeper_stop(nw_conns_t *t);

#endif
