/*
 * tests/unit/fakeapi.h — a tiny threaded HTTP/1.1 server on 127.0.0.1 for unit tests
 * of the Kubernetes client: the test supplies a handler that answers each request
 * (plain replies or chunked streams). Keep-alive is supported; every connection has
 * its own thread; fake_srv_stop shuts every connection down and joins the threads.
 */
#ifndef NW_TESTS_FAKEAPI_H
#define NW_TESTS_FAKEAPI_H

#include <stddef.h>

typedef struct {
    char method[16];
    char path[4096]; /* path and query, as sent */
    char auth[512];  /* Authorization header value, "" if none */
    char ctype[128]; /* Content-Type, "" if none */
    char *body;      /* NUL-terminated, owned by the server */
    size_t body_len;
} fake_req_t;

typedef struct fake_conn fake_conn_t;
typedef struct fake_srv fake_srv_t;

/* Answer one request through the fake_* writers below. Runs on the connection's thread. */
typedef void (*fake_handler_fn)(void *ud, const fake_req_t *req, fake_conn_t *c);

/** Start on an ephemeral port; aborts the test on failure. */
fake_srv_t *fake_srv_start(fake_handler_fn fn, void *ud);

/** The port it listens on. */
int fake_srv_port(const fake_srv_t *s);

/** True once fake_srv_stop was called (streaming handlers should return). */
int fake_srv_stopping(fake_srv_t *s);

/** Shut down every connection and join every thread; frees s. */
void fake_srv_stop(fake_srv_t *s);

/** Close every open client connection now (simulates a dropped stream / restart). */
void fake_srv_drop_all(fake_srv_t *s);

/** A complete reply; extra_headers is "" or lines each ending with "\r\n". */
void fake_reply(fake_conn_t *c, int code, const char *extra_headers, const char *body);

/** Start a chunked reply. */
void fake_stream_begin(fake_conn_t *c, int code);

/** One chunk (n > 0). Returns -1 if the peer went away. */
int fake_stream_chunk(fake_conn_t *c, const char *data, size_t n);

/** The terminating chunk. */
void fake_stream_end(fake_conn_t *c);

/** Close the connection after this request (no keep-alive), without finishing a stream. */
void fake_close(fake_conn_t *c);

/** Extract a query parameter (URL-decoded) from a path into buf; returns 1 if present. */
int fake_query(const char *path, const char *key, char *buf, size_t len);

/** Write a kubeconfig for http://127.0.0.1:port with a static token into a temp file;
 * returns the malloc'd path (unlink and free it). */
char *fake_kubeconfig(int port, const char *token);

#endif
