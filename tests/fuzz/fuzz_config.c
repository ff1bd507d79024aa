/*
 * tests/fuzz/fuzz_config.c — the configuration file (config/config.c) on arbitrary
 * bytes: the defaults, the YAML applied on top, the cross-field checks. Invariants: a
 * refused file says why and names the file ("fuzz.yaml..."); from an accepted one,
 * every key's value as flag text (nw_config_get) set again as a flag (nw_config_set)
 * reads back the same text, so what a file can say a flag can say too.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char **keys;
static size_t nkeys;

static void check(int cond, const char *what, const char *detail)
{
    if (!cond) {
        fprintf(stderr, "invariant violated: %s: %s\n", what, detail);
        abort();
    }
}

/* The key names `serve --help` prints (nw_config_print_keys), once. */
static void load_keys(void)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        abort();
    nw_config_print_keys(f);
    fclose(f);
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        char key[256];
        if (sscanf(line, " --%255s", key) != 1 || strchr(key, '<'))
            continue;
        char **k = realloc(keys, (nkeys + 1) * sizeof *keys);
        if (!k || !(k[nkeys] = strdup(key)))
            abort();
        keys = k;
        nkeys++;
    }
    free(text);
}

static void round_trip(const nw_config_t *cfg)
{
    nw_config_t again, third;
    if (nw_config_defaults(&again) != NW_OK || nw_config_defaults(&third) != NW_OK)
        abort();
    static char v[1 << 16], w[1 << 16], x[1 << 16];
    for (size_t i = 0; i < nkeys; i++) {
        if (nw_config_get(cfg, keys[i], v, sizeof v) != NW_OK)
            continue; /* too long for the buffer */
        nw_err_t err = {0};
        check(nw_config_set(&again, keys[i], v, &err) == NW_OK, keys[i], err.msg);
        check(nw_config_get(&again, keys[i], w, sizeof w) == NW_OK, keys[i], "get after set");
        /* a value's flag text may be normalized once (a list item holding a comma
         * becomes two); from then on it reads back the same */
        check(nw_config_set(&third, keys[i], w, &err) == NW_OK, keys[i], err.msg);
        check(nw_config_get(&third, keys[i], x, sizeof x) == NW_OK, keys[i], "get after set");
        check(strcmp(w, x) == 0, keys[i], "a value set as a flag reads back the same");
    }
    nw_config_free(&again);
    nw_config_free(&third);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!keys)
        load_keys();
    nw_config_t cfg;
    if (nw_config_defaults(&cfg) != NW_OK)
        abort();
    nw_err_t err = {0};
    nw_rc_t rc = nw_config_apply_yaml(&cfg, "fuzz.yaml", (const char *)data, size, &err);
    if (rc == NW_OK) {
        nw_err_t verr = {0};
        if (nw_config_validate(&cfg, &verr) != NW_OK)
            check(verr.msg[0] != 0, "a failed check says why", "");
        else
            round_trip(&cfg);
    } else if (rc != NW_ENOMEM) {
        check(strncmp(err.msg, "fuzz.yaml", 9) == 0, "an error names the file", err.msg);
    }
    nw_config_free(&cfg);
    return 0;
}
