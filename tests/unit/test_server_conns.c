/* Unit tests for server/conns (the connection table: who is shut down at the cap, the
 * header deadlines) and server/sizing (the cap from memory and descriptors). Sockets
 * are socketpairs: an entry shut down by the table shows as end of stream on its peer. */
#include <check.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "server/conns.h"
#include "server/metrics.h"
#include "server/sizing.h"

Suite *nw_server_conns_suite(void);

#define S NW_NS_PER_SEC

typedef struct {
    int mine, peer;
    nw_conn_t *k;
} pair_t;

static void open_pair(nw_conns_t *t, pair_t *p, int64_t now)
{
    int sv[2];
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    p->mine = sv[0];
    p->peer = sv[1];
    p->k = nw_conns_open(t, p->mine, now);
    ck_assert_ptr_nonnull(p->k);
}

/* True when the table shut p's socket down: its peer reads end of stream at once. */
static bool shut(const pair_t *p)
{
    struct pollfd pf = {.fd = p->peer, .events = POLLIN};
    if (poll(&pf, 1, 0) != 1)
        return false;
    char c;
    return recv(p->peer, &c, 1, MSG_DONTWAIT) == 0;
}

static void close_pair(nw_conns_t *t, pair_t *p)
{
    nw_conns_closed(t, p->k);
    close(p->mine);
    close(p->peer);
}

START_TEST(conns_cap_takes_oldest_fresh)
{
    nw_metrics_t m;
    nw_server_metrics_init(&m);
    nw_conns_opts_t o = {.cap = 2, .metrics = &m};
    nw_conns_t *t = nw_conns_new(&o);
    pair_t a, b, c;
    open_pair(t, &a, 1 * S);
    open_pair(t, &b, 2 * S);
    ck_assert(!shut(&a) && !shut(&b));
    open_pair(t, &c, 3 * S); /* one over the cap: the oldest without a request goes */
    ck_assert_msg(shut(&a), "the oldest fresh connection is shut down");
    ck_assert(!shut(&b) && !shut(&c));
    ck_assert_int_eq(nw_conns_state(t, a.k), NW_CONN_CLOSING);
    ck_assert_uint_eq(nw_conns_live(t), 2);
    ck_assert_int_eq(m.conns_open, 2);
    ck_assert_int_eq(m.conns_max, 2);
    ck_assert_uint_eq(m.conns_closed[NW_CONN_CLOSE_EVICTED], 1);
    ck_assert_uint_eq(m.conns_closed[NW_CONN_CLOSE_REFUSED], 0);
    /* libmicrohttpd closes it: the entry goes */
    close_pair(t, &a);
    ck_assert_uint_eq(nw_conns_count(t, NW_CONN_CLOSING), 0);
    close_pair(t, &b);
    close_pair(t, &c);
    ck_assert_uint_eq(nw_conns_live(t), 0);
    ck_assert_int_eq(m.conns_open, 0);
    nw_conns_free(t);
}
END_TEST

START_TEST(conns_cap_order_idle_body_refuse)
{
    nw_metrics_t m;
    nw_server_metrics_init(&m);
    nw_conns_opts_t o = {.cap = 3, .metrics = &m};
    nw_conns_t *t = nw_conns_new(&o);
    pair_t a, b, c, d, e, f;
    open_pair(t, &a, 1 * S);
    open_pair(t, &b, 1 * S);
    open_pair(t, &c, 1 * S);
    nw_conns_set(t, b.k, NW_CONN_BODY, 2 * S); /* a request's body arriving */
    nw_conns_set(t, a.k, NW_CONN_IDLE, 3 * S); /* keep-alive between requests */
    nw_conns_set(t, c.k, NW_CONN_BUSY, 3 * S); /* being answered */
    open_pair(t, &d, 4 * S);                   /* no other fresh one: the idle one goes */
    ck_assert_msg(shut(&a), "the idle keep-alive connection goes before a body or a busy one");
    ck_assert(!shut(&b) && !shut(&c) && !shut(&d));
    nw_conns_set(t, d.k, NW_CONN_BUSY, 5 * S);
    open_pair(t, &e, 6 * S); /* then the body that started first */
    ck_assert_msg(shut(&b), "a request still sending its body goes before a busy one");
    ck_assert(!shut(&c) && !shut(&d) && !shut(&e));
    nw_conns_set(t, e.k, NW_CONN_BUSY, 7 * S);
    open_pair(t, &f, 8 * S); /* every other one busy: the new one is refused */
    ck_assert_msg(shut(&f), "with every other connection in a request, the new one is closed");
    ck_assert(!shut(&c) && !shut(&d) && !shut(&e));
    ck_assert_uint_eq(m.conns_closed[NW_CONN_CLOSE_EVICTED], 2);
    ck_assert_uint_eq(m.conns_closed[NW_CONN_CLOSE_REFUSED], 1);
    ck_assert_uint_eq(nw_conns_live(t), 3);
    /* a connection being closed stays so whatever libmicrohttpd reports next */
    nw_conns_set(t, a.k, NW_CONN_IDLE, 9 * S);
    ck_assert_int_eq(nw_conns_state(t, a.k), NW_CONN_CLOSING);
    ck_assert_uint_eq(nw_conns_count(t, NW_CONN_CLOSING), 3);
    pair_t *all[] = {&a, &b, &c, &d, &e, &f};
    for (size_t i = 0; i < 6; i++)
        close_pair(t, all[i]);
    nw_conns_free(t);
}
END_TEST

START_TEST(conns_header_deadlines)
{
    nw_metrics_t m;
    nw_server_metrics_init(&m);
    nw_conns_opts_t o = {.cap = 10,
                         .header_timeout_ns = 10 * S,
                         .busy_header_timeout_ns = 1 * S,
                         .idle_timeout_ns = 120 * S,
                         .metrics = &m};
    nw_conns_t *t = nw_conns_new(&o);
    pair_t a, b, c, d;
    open_pair(t, &a, 0);
    open_pair(t, &b, 2 * S);
    open_pair(t, &c, 0);
    open_pair(t, &d, 0);
    nw_conns_set(t, c.k, NW_CONN_BODY, 1 * S);
    nw_conns_set(t, d.k, NW_CONN_IDLE, 1 * S);
    /* 4 of 10 open: not busy, so 1 s is not the deadline */
    ck_assert_uint_eq(nw_conns_sweep(t, 5 * S), 0);
    ck_assert(!shut(&a) && !shut(&b));
    ck_assert_uint_eq(nw_conns_sweep(t, 10 * S + 1), 1);
    ck_assert_msg(shut(&a) && !shut(&b), "only the connection past 10 s without headers");
    ck_assert_uint_eq(nw_conns_sweep(t, 12 * S + 1), 1);
    ck_assert(shut(&b));
    ck_assert_uint_eq(m.conns_closed[NW_CONN_CLOSE_HEADER_TIMEOUT], 2);
    ck_assert_uint_eq(m.aborted, 2);
    /* a body is not the sweeper's; an idle keep-alive connection has idle + header */
    ck_assert_uint_eq(nw_conns_sweep(t, 130 * S), 0);
    ck_assert(!shut(&c) && !shut(&d));
    ck_assert_uint_eq(nw_conns_sweep(t, 131 * S + 1), 1);
    ck_assert(shut(&d) && !shut(&c));
    pair_t *all[] = {&a, &b, &c, &d};
    for (size_t i = 0; i < 4; i++)
        close_pair(t, all[i]);
    nw_conns_free(t);
}
END_TEST

START_TEST(conns_busy_header_deadline)
{
    nw_metrics_t m;
    nw_server_metrics_init(&m);
    nw_conns_opts_t o = {.cap = 4,
                         .header_timeout_ns = 10 * S,
                         .busy_header_timeout_ns = 1 * S,
                         .idle_timeout_ns = 120 * S,
                         .metrics = &m};
    nw_conns_t *t = nw_conns_new(&o);
    pair_t a, b, c;
    open_pair(t, &a, 0);
    open_pair(t, &b, 0);
    ck_assert_uint_eq(nw_conns_sweep(t, 2 * S), 0); /* 2 of 4: half, not over it */
    open_pair(t, &c, 2 * S);                        /* 3 of 4: over half */
    ck_assert_uint_eq(nw_conns_sweep(t, 2 * S + 1), 2);
    ck_assert_msg(shut(&a) && shut(&b) && !shut(&c),
                  "past half full, connections older than 1 s without headers go");
    ck_assert_uint_eq(m.conns_closed[NW_CONN_CLOSE_BUSY_HEADER_TIMEOUT], 2);
    ck_assert_uint_eq(m.conns_closed[NW_CONN_CLOSE_HEADER_TIMEOUT], 0);
    /* one open of 4 now: c keeps the full header timeout */
    ck_assert_uint_eq(nw_conns_sweep(t, 5 * S), 0);
    ck_assert(!shut(&c));
    close_pair(t, &a);
    close_pair(t, &b);
    close_pair(t, &c);
    nw_conns_free(t);
}
END_TEST

START_TEST(conns_busy_spread)
{
    nw_metrics_t m;
    nw_server_metrics_init(&m);
    nw_conns_opts_t o = {.cap = 64,
                         .header_timeout_ns = 10 * S,
                         .busy_header_timeout_ns = 1 * S,
                         .idle_timeout_ns = 120 * S,
                         .metrics = &m};
    nw_conns_t *t = nw_conns_new(&o);
    pair_t p[40];
    for (int i = 0; i < 40; i++)
        open_pair(t, &p[i], i * NW_NS_PER_MS);
    /* 40 of 64 open, all past the busy deadline: at most 16 a sweep, oldest first */
    ck_assert_uint_eq(nw_conns_sweep(t, 2 * S), 16);
    ck_assert(shut(&p[0]) && shut(&p[15]) && !shut(&p[16]));
    /* 24 open: half of 64 or less, so the rest wait for the header timeout */
    ck_assert_uint_eq(nw_conns_sweep(t, 2 * S), 0);
    ck_assert_uint_eq(nw_conns_sweep(t, 11 * S), 24);
    ck_assert_uint_eq(m.conns_closed[NW_CONN_CLOSE_BUSY_HEADER_TIMEOUT], 16);
    ck_assert_uint_eq(m.conns_closed[NW_CONN_CLOSE_HEADER_TIMEOUT], 24);
    for (int i = 0; i < 40; i++)
        close_pair(t, &p[i]);
    nw_conns_free(t);
}
END_TEST

START_TEST(conns_sweeper_thread)
{
    nw_conns_opts_t o = {.cap = 8, .header_timeout_ns = 50 * NW_NS_PER_MS, .idle_timeout_ns = S};
    nw_conns_t *t = nw_conns_new(&o);
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    pair_t a;
    open_pair(t, &a, (int64_t)now.tv_sec * S + now.tv_nsec);
    ck_assert_int_eq(nw_conns_sweeper_start(t), NW_OK);
    /* a generous bound: the sweeper runs every NW_CONNS_SWEEP_MS */
    struct pollfd pf = {.fd = a.peer, .events = POLLIN};
    ck_assert_int_eq(poll(&pf, 1, 10000), 1);
    ck_assert(shut(&a));
    nw_conns_sweeper_stop(t);
    close_pair(t, &a);
    nw_conns_free(t);
}
END_TEST

START_TEST(sizing_cap)
{
    nw_sizing_bound_t b;
    const uint64_t MiB = 1024 * 1024, GiB = 1024 * MiB;
    /* the chart's 256 MiB limit: 25 % over 32 KiB a connection */
    ck_assert_uint_eq(nw_sizing_cap(0, 256 * MiB, 25, 1048576, &b), 2048);
    ck_assert_int_eq(b, NW_SIZING_BY_MEMORY);
    ck_assert_uint_eq(nw_sizing_cap(0, 1 * GiB, 50, 1048576, &b), 16384);
    /* descriptors bound it: the soft limit less the reserve */
    ck_assert_uint_eq(nw_sizing_cap(0, 24 * GiB, 25, 20000, &b), 20000 - NW_SIZING_FD_RESERVE);
    ck_assert_int_eq(b, NW_SIZING_BY_DESCRIPTORS);
    ck_assert_uint_eq(nw_sizing_cap(0, 24 * GiB, 25, 300, &b), 150); /* half of a tiny limit */
    /* a small memory limit still gives the floor */
    ck_assert_uint_eq(nw_sizing_cap(0, 16 * MiB, 10, 1048576, &b), NW_SIZING_MIN_CAP);
    ck_assert_int_eq(b, NW_SIZING_BY_MEMORY);
    /* the setting wins over memory, not over descriptors */
    ck_assert_uint_eq(nw_sizing_cap(1024, 16 * MiB, 10, 1048576, &b), 1024);
    ck_assert_int_eq(b, NW_SIZING_BY_SETTING);
    ck_assert_uint_eq(nw_sizing_cap(5000, 16 * MiB, 10, 1024, &b), 768);
    ck_assert_int_eq(b, NW_SIZING_BY_DESCRIPTORS);
    ck_assert_str_eq(nw_sizing_bound_str(NW_SIZING_BY_SETTING), "webhook.maxConnections");
}
END_TEST

static void put(const char *root, const char *rel, const char *text)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", root, rel);
    for (char *s = p + strlen(root) + 1; (s = strchr(s, '/')) != NULL; s++) {
        *s = '\0';
        mkdir(p, 0755);
        *s = '/';
    }
    FILE *f = fopen(p, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

START_TEST(sizing_memory_limit)
{
    const uint64_t MiB = 1024 * 1024;
    char root[] = "/tmp/nw-sizing-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(root));
    const char *src = NULL;
    /* nothing to read: the machine's memory */
    ck_assert_uint_eq(nw_sizing_memory_limit(root, 8192 * MiB, &src), 8192 * MiB);
    ck_assert_str_eq(src, "physical memory");
    /* cgroup v2: the pod's limit above the container's "max" */
    put(root, "proc/self/cgroup", "0::/kubepods/pod1/c1\n");
    put(root, "sys/fs/cgroup/kubepods/pod1/c1/memory.max", "max\n");
    put(root, "sys/fs/cgroup/kubepods/pod1/memory.max", "268435456\n");
    put(root, "sys/fs/cgroup/kubepods/memory.max", "1073741824\n");
    ck_assert_uint_eq(nw_sizing_memory_limit(root, 8192 * MiB, &src), 256 * MiB);
    ck_assert_str_eq(src, "cgroup memory.max");
    /* a limit above the machine's memory does not count */
    ck_assert_uint_eq(nw_sizing_memory_limit(root, 128 * MiB, &src), 128 * MiB);
    ck_assert_str_eq(src, "physical memory");
    /* cgroup v1 (the memory controller's line), "unlimited" is a huge number; the
     * container's own cgroup mounted at the controller's root */
    put(root, "proc/self/cgroup", "5:cpu,cpuacct:/x\n4:memory:/docker/abc\n0::/\n");
    put(root, "sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes", "9223372036854771712\n");
    put(root, "sys/fs/cgroup/memory/memory.limit_in_bytes", "536870912\n");
    ck_assert_uint_eq(nw_sizing_memory_limit(root, 8192 * MiB, &src), 512 * MiB);
    ck_assert_str_eq(src, "cgroup memory.limit_in_bytes");
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(sizing_raise_nofile)
{
    uint64_t before = 0, after = 0;
    ck_assert_int_eq(nw_sizing_raise_nofile(&before, &after), NW_OK);
    struct rlimit rl;
    ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
    ck_assert_msg(rl.rlim_cur == rl.rlim_max, "the soft limit is the hard limit");
    ck_assert(after >= before);
    ck_assert_uint_eq(nw_sizing_nofile(), after);
}
END_TEST

Suite *nw_server_conns_suite(void)
{
    Suite *s = suite_create("server_conns");
    TCase *tc = tcase_create("server_conns");
    tcase_add_test(tc, conns_cap_takes_oldest_fresh);
    tcase_add_test(tc, conns_cap_order_idle_body_refuse);
    tcase_add_test(tc, conns_header_deadlines);
    tcase_add_test(tc, conns_busy_header_deadline);
    tcase_add_test(tc, conns_busy_spread);
    tcase_add_test(tc, conns_sweeper_thread);
    tcase_add_test(tc, sizing_cap);
    tcase_add_test(tc, sizing_memory_limit);
    tcase_add_test(tc, sizing_raise_nofile);
    suite_add_tcase(s, tc);
    return s;
}
