/*
 * server/sizing.h — how many connections the webhook may hold at once.
 *
 * Two limits bound it: descriptors (one per connection; RLIMIT_NOFILE, whose
 * soft limit `serve` raises to the hard limit at start) and memory. What one
 * connection costs was measured on `nodewarden serve` (docs/admission.md, "Hostile
 * clients"): about 13 KiB of heap once accepted (libmicrohttpd's connection and its
 * GnuTLS session are set up at accept), about 27 KiB once its TLS handshake is done
 * and its request headers fill the 16 KiB buffer libmicrohttpd gives each
 * connection, plus the kernel's socket. A client can drive every connection to the
 * worst case, so the cap is sized on it: NW_SIZING_CONN_BYTES per connection.
 *
 * With webhook.maxConnections 0 the cap is
 *     min(memory limit x webhook.connectionMemoryPercent / 100 / NW_SIZING_CONN_BYTES,
 *         descriptor limit - NW_SIZING_FD_RESERVE)
 * where the memory limit is the smallest cgroup limit of the process (cgroup v2
 * memory.max or v1 memory.limit_in_bytes, of its cgroup and the ones above it),
 * or the machine's memory when there is none. A maxConnections above 0 is the cap,
 * lowered to the descriptor bound when that is smaller.
 *
 * Thread: any (no state).
 */
#ifndef NW_SERVER_SIZING_H
#define NW_SERVER_SIZING_H

#include <stdint.h>

#include "common/err.h"

/* The most memory one connection is counted for (the measured worst case rounded up). */
#define NW_SIZING_CONN_BYTES (32u * 1024u)
/* Descriptors kept for everything else: the scaler's connections, files, the
 * metrics port's connections, libmicrohttpd's own. */
#define NW_SIZING_FD_RESERVE 256u
/* The smallest cap sizing gives. */
#define NW_SIZING_MIN_CAP 64u

typedef enum {
    NW_SIZING_BY_SETTING = 0, /* webhook.maxConnections */
    NW_SIZING_BY_MEMORY,
    NW_SIZING_BY_DESCRIPTORS,
} nw_sizing_bound_t;

/** Raise RLIMIT_NOFILE's soft limit to its hard limit. *before and *after get the
 * soft limit before and after (equal when it already was at the hard limit). */
NW_MUST_USE nw_rc_t nw_sizing_raise_nofile(uint64_t *before, uint64_t *after);

/** The soft RLIMIT_NOFILE now (RLIM_INFINITY as UINT64_MAX). */
uint64_t nw_sizing_nofile(void);

/**
 * The memory limit in bytes: the smallest cgroup limit (see above) read under
 * root ("" for the real /proc and /sys; tests pass a directory), at most phys (the
 * machine's memory; 0 = ask sysconf). *source says where it came from:
 * "cgroup memory.max", "cgroup memory.limit_in_bytes" or "physical memory".
 */
uint64_t nw_sizing_memory_limit(const char *root, uint64_t phys, const char **source);

/** The cap from the setting (0 = size it), the memory limit, the percentage of it
 * connections may use, and the descriptor limit. *bound says what decided it. */
unsigned nw_sizing_cap(unsigned max_conns, uint64_t memory_limit, unsigned percent,
                       uint64_t fd_limit, nw_sizing_bound_t *bound);

/** "webhook.maxConnections", "memory" or "descriptors". */
const char *nw_sizing_bound_str(nw_sizing_bound_t b);

#endif
