/*
 * tests/fuzz/fuzz_kubeconfig.c — the kubeconfig loader (scaler/kube/config.c) on
 * arbitrary bytes. The input is one kubeconfig, or two when a line "#---#" splits it
 * (then loaded as KUBECONFIG's "a:b" list, where the first definition of a name wins);
 * they are written to a directory of their own that also holds the PEM and token files
 * the examples name (tests/data/kubeconfig: ca.pem, client.pem, client.key,
 * token.txt), so relative paths resolve. Loaded with the current context, then with the
 * context "fuzz". Invariants: an accepted file gives an http(s) server, a context and a
 * namespace, and a client certificate only with its key; a refused one says why and
 * names the file. The base64 decoder gets the whole input too.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/file.h"
#include "scaler/kube/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];
static char path_a[128], path_b[128], both[300];

static void check(int cond, const char *what, const char *detail)
{
    if (!cond) {
        fprintf(stderr, "invariant violated: %s: %s\n", what, detail);
        abort();
    }
}

static void put(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(p, 1, n, f) != n))
        abort();
    fclose(f);
}

static void setup(void)
{
    /* a kubeconfig may name any file: none of them may wait on this process's input */
    if (!freopen("/dev/null", "r", stdin))
        abort();
    snprintf(dir, sizeof dir, "/tmp/nw-fuzz-kubeconfig-XXXXXX");
    if (!mkdtemp(dir))
        abort();
    static const char *const files[] = {"ca.pem", "client.pem", "client.key", "token.txt"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char from[256], to[256];
        snprintf(from, sizeof from, "tests/data/kubeconfig/%s", files[i]);
        snprintf(to, sizeof to, "%s/%s", dir, files[i]);
        size_t len = 0;
        char *text = nw_file_read(from, 1 << 20, &len);
        if (text) /* run from elsewhere than the project root: the names stay missing */
            put(to, text, len);
        free(text);
    }
    snprintf(path_a, sizeof path_a, "%s/a.yaml", dir);
    snprintf(path_b, sizeof path_b, "%s/b.yaml", dir);
    snprintf(both, sizeof both, "%s:%s", path_a, path_b);
}

static void load(const char *paths, const char *context)
{
    nw_kube_config_t *cfg = NULL;
    nw_err_t err = {0};
    nw_rc_t rc = nw_kube_config_load_kubeconfig(paths, context, &cfg, &err);
    if (rc == NW_OK) {
        check(cfg != NULL, "a loaded config is returned", paths);
        check(cfg->server && (strncmp(cfg->server, "https://", 8) == 0 ||
                              strncmp(cfg->server, "http://", 7) == 0),
              "the server is an http(s) URL", cfg->server ? cfg->server : "(null)");
        check(cfg->context && cfg->context[0] && cfg->namespace && cfg->namespace[0],
              "a context and a namespace", paths);
        check(!cfg->cert_pem == !cfg->key_pem, "a client certificate comes with its key", paths);
        nw_kube_config_free(cfg);
    } else {
        check(cfg == NULL, "nothing is returned on error", err.msg);
        if (rc != NW_ENOMEM)
            check(strstr(err.msg, dir) != NULL, "an error names the file", err.msg);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0])
        setup();
    static const char sep[] = "\n#---#\n";
    const uint8_t *cut = size >= sizeof sep - 1 ? memmem(data, size, sep, sizeof sep - 1) : NULL;
    size_t na = cut ? (size_t)(cut - data) : size;
    put(path_a, data, na);
    if (cut) {
        size_t off = na + sizeof sep - 1;
        put(path_b, data + off, size - off);
    }
    load(cut ? both : path_a, NULL);
    load(cut ? both : path_a, "fuzz");
    if (cut)
        unlink(path_b);
    size_t len = 0;
    char *s = malloc(size + 1);
    if (!s)
        abort();
    memcpy(s, data, size);
    s[size] = '\0';
    free(nw_kube_config_b64_decode(s, &len));
    free(s);
    return 0;
}
