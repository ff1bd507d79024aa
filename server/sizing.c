/* server/sizing.c — the connection cap from descriptors and memory (see sizing.h). */
#include "server/sizing.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common/file.h"

nw_rc_t nw_sizing_raise_nofile(uint64_t *before, uint64_t *after)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return NW_EIO;
    *before = *after = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
    if (rl.rlim_cur == rl.rlim_max)
        return NW_OK;
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
        return NW_EIO;
    *after = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
    return NW_OK;
}

uint64_t nw_sizing_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return 1024;
    return rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
}

/* The number in file root+path (a cgroup limit), or 0 when it is missing, "max"
 * or not a number. */
static uint64_t read_limit(const char *root, const char *path)
{
    char full[1024];
    if (snprintf(full, sizeof full, "%s%s", root, path) >= (int)sizeof full)
        return 0;
    size_t len = 0;
    char *s = nw_file_read(full, 256, &len);
    if (!s)
        return 0;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    bool ok = end != s && errno == 0 && (*end == '\n' || *end == '\0');
    free(s);
    return ok ? (uint64_t)v : 0;
}

/* The smallest limit named file in the cgroup dir (under mount) and every cgroup
 * above it; 0 if none. */
static uint64_t walk_up(const char *root, const char *mount, const char *dir, const char *file)
{
    char path[1024];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path)
        return 0;
    uint64_t best = 0;
    for (;;) {
        size_t n = strlen(path);
        while (n && path[n - 1] == '/')
            path[--n] = '\0';
        char p[1200];
        snprintf(p, sizeof p, "%s%s/%s", mount, path, file);
        uint64_t v = read_limit(root, p);
        if (v && (!best || v < best))
            best = v;
        if (!n)
            return best;
        char *slash = strrchr(path, '/');
        if (!slash)
            path[0] = '\0';
        else
            *slash = '\0';
    }
}

/* The cgroup paths of the process from root/proc/self/cgroup: v2 ("0::/path") and
 * the v1 memory controller's. */
static void cgroup_paths(const char *root, char *v2, char *v1, size_t n)
{
    v2[0] = v1[0] = '\0';
    char full[1024];
    snprintf(full, sizeof full, "%s/proc/self/cgroup", root);
    size_t len = 0;
    char *s = nw_file_read(full, 64 * 1024, &len);
    if (!s)
        return;
    for (char *line = s, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c1 = *c2 = '\0';
        if (strcmp(line, "0") == 0 && c1[1] == '\0')
            snprintf(v2, n, "%s", c2 + 1);
        for (char *tok = c1 + 1, *sv = NULL; (tok = strtok_r(tok, ",", &sv)) != NULL; tok = NULL)
            if (strcmp(tok, "memory") == 0)
                snprintf(v1, n, "%s", c2 + 1);
    }
    free(s);
}

uint64_t nw_sizing_memory_limit(const char *root, uint64_t phys, const char **source)
{
    if (!phys) {
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
        phys = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : UINT64_C(1) << 30;
    }
    char v2[512], v1[512];
    cgroup_paths(root, v2, v1, sizeof v2);
    /* the cgroup's own directory, and the mount's root (a container sees its own
     * cgroup there when the cgroup namespace or a bind mount puts it at the root) */
    uint64_t a = walk_up(root, "/sys/fs/cgroup", v2, "memory.max");
    uint64_t b = walk_up(root, "/sys/fs/cgroup/memory", v1, "memory.limit_in_bytes");
    *source = "physical memory";
    uint64_t best = phys;
    if (a && a < best) {
        best = a;
        *source = "cgroup memory.max";
    }
    if (b && b < best) {
        best = b;
        *source = "cgroup memory.limit_in_bytes";
    }
    return best;
}

unsigned nw_sizing_cap(unsigned max_conns, uint64_t memory_limit, unsigned percent,
                       uint64_t fd_limit, nw_sizing_bound_t *bound)
{
    uint64_t fds =
        fd_limit > 2 * NW_SIZING_FD_RESERVE ? fd_limit - NW_SIZING_FD_RESERVE : fd_limit / 2;
    if (fds < 1)
        fds = 1;
    uint64_t want;
    if (max_conns) {
        want = max_conns;
        *bound = NW_SIZING_BY_SETTING;
    } else {
        uint64_t share = memory_limit / 100 * percent + memory_limit % 100 * percent / 100;
        want = share / NW_SIZING_CONN_BYTES;
        if (want < NW_SIZING_MIN_CAP)
            want = NW_SIZING_MIN_CAP;
        *bound = NW_SIZING_BY_MEMORY;
    }
    if (fds < want) {
        want = fds;
        *bound = NW_SIZING_BY_DESCRIPTORS;
    }
    if (want > 1000000)
        want = 1000000;
    return (unsigned)want;
}

const char *nw_sizing_bound_str(nw_sizing_bound_t b)
{
    switch (b) {
    case NW_SIZING_BY_SETTING:
        return "webhook.maxConnections";
    case NW_SIZING_BY_MEMORY:
        return "memory";
    case NW_SIZING_BY_DESCRIPTORS:
        return "descriptors";
    }
    return "?";
}
