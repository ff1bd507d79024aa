/* Unit tests for config/config: data cases in tests/data/config/ and flags. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "testutil.h"

Suite *nw_config_suite(void);

/* Each case file starts with comment lines:
 *   # expect: KEY=VALUE   (the file loads and validates; KEY renders as VALUE)
 *   # error: SUBSTRING    (loading or validation fails; the message contains it) */
static void run_case(const char *path)
{
    char *text = nw_test_read_file(path, NULL);
    nw_config_t cfg;
    ck_assert_int_eq(nw_config_defaults(&cfg), NW_OK);
    nw_err_t err = {0};
    nw_rc_t rc = nw_config_apply_file(&cfg, path, &err);
    if (rc == NW_OK)
        rc = nw_config_validate(&cfg, &err);
    int checked = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (strncmp(line, "# error: ", 9) == 0) {
            ck_assert_msg(rc != NW_OK, "%s: expected an error containing '%s', loaded fine", path,
                          line + 9);
            ck_assert_msg(strstr(err.msg, line + 9), "%s: error '%s' lacks '%s'", path, err.msg,
                          line + 9);
            if (line[9] == ':') /* line numbers: the message starts with the file name */
                ck_assert_msg(strncmp(err.msg, path, strlen(path)) == 0, "%s: '%s'", path, err.msg);
            checked++;
        } else if (strncmp(line, "# expect: ", 10) == 0) {
            ck_assert_msg(rc == NW_OK, "%s: unexpected error: %s", path, err.msg);
            char *kv = line + 10, *eq = strchr(kv, '=');
            ck_assert_ptr_nonnull(eq);
            *eq = '\0';
            char got[512];
            ck_assert_int_eq(nw_config_get(&cfg, kv, got, sizeof got), NW_OK);
            ck_assert_msg(strcmp(got, eq + 1) == 0, "%s: %s is '%s', want '%s'", path, kv, got,
                          eq + 1);
            checked++;
        }
    }
    ck_assert_msg(checked > 0, "%s: no '# expect:' or '# error:' line", path);
    nw_config_free(&cfg);
    free(text);
}

/* one test per file of tests/data/config */
static const nw_test_cases_t *data_files;

START_TEST(config_case)
{
    run_case(nw_test_case(data_files, _i)->path);
}
END_TEST

static nw_rc_t load(nw_config_t *cfg, nw_err_t *err, const char *const *args)
{
    char *argv[32];
    int argc = 0;
    argv[argc++] = (char *)"serve";
    for (; *args; args++)
        argv[argc++] = (char *)*args;
    return nw_config_load_args(cfg, argc, argv, err);
}

START_TEST(config_flags)
{
    nw_config_t cfg;
    nw_err_t err = {0};
    char v[256];
    /* flags override the file wherever --config appears; aliases map to keys */
    const char *a1[] = {"--webhook.threads",
                        "7",
                        "--config",
                        "tests/data/config/002-readme-example.yaml",
                        "--listen",
                        "127.0.0.1:1234",
                        "--tls-cert=/c",
                        "--tls-key",
                        "/k",
                        "--log-level",
                        "warn",
                        "--gpu.resources=a,b,c",
                        "--scaler.enabled=true",
                        "--webhook.requestTimeout",
                        "2s",
                        NULL};
    ck_assert_msg(load(&cfg, &err, a1) == NW_OK, "%s", err.msg);
    nw_config_get(&cfg, "webhook.threads", v, sizeof v);
    ck_assert_str_eq(v, "7");
    ck_assert_str_eq(cfg.webhook.listen, "127.0.0.1:1234");
    ck_assert_str_eq(cfg.webhook.tlsCert, "/c");
    ck_assert_str_eq(cfg.webhook.tlsKey, "/k");
    ck_assert_str_eq(cfg.log.level, "warn");
    ck_assert_str_eq(cfg.settings.clusterName, "my-cluster"); /* from the file */
    ck_assert_uint_eq(cfg.gpu.resources.n, 3);
    ck_assert_str_eq(cfg.gpu.resources.v[2], "c");
    ck_assert_int_eq(cfg.scaler.enabled, 1);
    ck_assert_int_eq(cfg.webhook.requestTimeout_ns, 2000000000LL);
    nw_config_free(&cfg);

    const char *a2[] = {"--webhook.threads", "many", NULL};
    ck_assert_int_eq(load(&cfg, &err, a2), NW_EINVAL);
    ck_assert_str_eq(err.msg, "--webhook.threads: expected an integer, got \"many\"");
    nw_config_free(&cfg);

    nw_err_clear(&err);
    const char *a3[] = {"--webhook.nope", "1", NULL};
    ck_assert_int_eq(load(&cfg, &err, a3), NW_EINVAL);
    ck_assert_str_eq(err.msg, "--webhook.nope: unknown flag");
    nw_config_free(&cfg);

    nw_err_clear(&err);
    const char *a4[] = {"--listen", NULL};
    ck_assert_int_eq(load(&cfg, &err, a4), NW_EINVAL);
    ck_assert_str_eq(err.msg, "--listen: needs a value");
    nw_config_free(&cfg);

    nw_err_clear(&err);
    const char *a5[] = {"--config", "tests/data/config/does-not-exist.yaml", NULL};
    ck_assert_int_eq(load(&cfg, &err, a5), NW_EIO);
    ck_assert_ptr_nonnull(strstr(err.msg, "does-not-exist.yaml: No such file"));
    nw_config_free(&cfg);

    nw_err_clear(&err);
    const char *a6[] = {"stray", NULL};
    ck_assert_int_eq(load(&cfg, &err, a6), NW_EINVAL);
    nw_config_free(&cfg);
}
END_TEST

START_TEST(config_classes_flags)
{
    /* a class by flags; the fifteenth class besides nvidia is one too many */
    nw_config_t cfg;
    nw_err_t err = {0};
    ck_assert_int_eq(nw_config_defaults(&cfg), NW_OK);
    ck_assert_int_eq(nw_config_set(&cfg, "gpu.classes.mine.resources", "a.com/x,b.com/y", &err),
                     NW_OK);
    char v[128];
    ck_assert_int_eq(nw_config_get(&cfg, "gpu.classes.mine.resources", v, sizeof v), NW_OK);
    ck_assert_str_eq(v, "a.com/x,b.com/y");
    ck_assert_int_eq(nw_config_get(&cfg, "gpu.classes.mine.enabled", v, sizeof v), NW_OK);
    ck_assert_str_eq(v, "true");
    ck_assert_int_eq(nw_config_get(&cfg, "gpu.classes.other.enabled", v, sizeof v), NW_ENOTFOUND);
    ck_assert_int_eq(nw_config_set(&cfg, "gpu.classes.x_y.enabled", "true", &err), NW_EINVAL);
    ck_assert_str_eq(err.path, "gpu.classes.x_y.enabled");
    ck_assert_msg(strstr(err.msg, "--gpu.classes.x_y: a class name is a DNS label"), "%s", err.msg);
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(nw_config_set(&cfg, "gpu.classes.xilinx.taints", "x", &err), NW_EINVAL);
    ck_assert_msg(strstr(err.msg, "--gpu.classes.xilinx.taints: unknown flag"), "%s", err.msg);
    /* 5 defaults + mine: 9 more fit */
    for (int i = 0; i < 9; i++) {
        char k[64];
        snprintf(k, sizeof k, "gpu.classes.c%d.enabled", i);
        memset(&err, 0, sizeof err);
        ck_assert_int_eq(nw_config_set(&cfg, k, "true", &err), NW_OK);
    }
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(nw_config_set(&cfg, "gpu.classes.one-too-many.enabled", "true", &err),
                     NW_EINVAL);
    ck_assert_msg(strstr(err.msg, "too many accelerator classes (at most 15 besides nvidia)"), "%s",
                  err.msg);
    nw_config_free(&cfg);
}
END_TEST

START_TEST(config_durations)
{
    static const struct {
        const char *in;
        long long ns; /* -1: error */
    } t[] = {{"10s", 10000000000LL},
             {"1m0s", 60000000000LL},
             {"1.5h", 5400000000000LL},
             {"300ms", 300000000LL},
             {"1us", 1000},
             {"1\xc2\xb5s", 1000},
             {"2ns", 2},
             {"0", 0},
             {"-1s", -1000000000LL},
             {".5s", 500000000LL},
             {"1h2m3s", 3723000000000LL},
             {"", -1},
             {"10", -1},
             {"s", -1},
             {"1x", -1},
             {"1s ", -1},
             {"3000000h", -1},
             {"1.s", 1000000000LL},
             {"-", -1},
             {"1d", -1}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        int64_t ns = 12345;
        nw_rc_t rc = nw_config_parse_duration(t[i].in, &ns);
        if (t[i].ns == -1 && strcmp(t[i].in, "-1s") != 0)
            ck_assert_msg(rc != NW_OK, "'%s' should fail", t[i].in);
        else {
            ck_assert_msg(rc == NW_OK, "'%s' should parse", t[i].in);
            ck_assert_msg(ns == t[i].ns, "'%s' = %lld, want %lld", t[i].in, (long long)ns, t[i].ns);
        }
    }
}
END_TEST

/* Karpenter's feature gates: its syntax and spellings, SpotToSpotConsolidation wins over
 * scaler.disruption.spotToSpotConsolidation when given, bad pairs name the key */
START_TEST(feature_gates)
{
    nw_feature_gates_t fg;
    nw_err_t err = {0};
    ck_assert_int_eq(nw_config_feature_gates("", &fg, 0, &err), NW_OK);
    ck_assert_int_eq(fg.spot_to_spot, -1);
    ck_assert_int_eq(fg.reserved_capacity, 1);
    ck_assert_int_eq(nw_config_feature_gates(" SpotToSpotConsolidation=T , ReservedCapacity=0,"
                                             "NodeRepair=true,StaticCapacity=FALSE,NodeOverlay=1,"
                                             "Bogus=true,",
                                             &fg, 1, &err),
                     NW_OK);
    ck_assert_int_eq(fg.spot_to_spot, 1);
    ck_assert_int_eq(fg.reserved_capacity, 0);
    ck_assert_int_eq(fg.node_repair, 1);
    ck_assert_int_eq(fg.unimplemented, 1); /* NodeOverlay on; StaticCapacity off */
    static const char *const bad[] = {"NodeRepair", "NodeRepair=yes", "A=true,B", "X="};
    for (int i = 0; i < 4; i++) {
        nw_err_t e = {0};
        ck_assert_int_eq(nw_config_feature_gates(bad[i], &fg, 0, &e), NW_EINVAL);
        ck_assert_str_eq(e.path, "settings.featureGates");
    }
    nw_config_t cfg;
    const char *a1[] = {"--scaler.disruption.spotToSpotConsolidation", "true",
                        "--settings.featureGates", "SpotToSpotConsolidation=false", NULL};
    ck_assert_int_eq(load(&cfg, &err, a1), NW_OK);
    ck_assert_int_eq(cfg.scaler.disruption.spotToSpot, 0);
    nw_config_free(&cfg);
    const char *a2[] = {"--scaler.disruption.spotToSpotConsolidation", "true",
                        "--settings.featureGates", "NodeRepair=false", NULL};
    ck_assert_int_eq(load(&cfg, &err, a2), NW_OK);
    ck_assert_int_eq(cfg.scaler.disruption.spotToSpot, 1);
    ck_assert_int_eq(cfg.settings.nodeRepair, 0);
    nw_config_free(&cfg);
    const char *a4[] = {"--settings.featureGates", "NodeRepair=true", NULL};
    ck_assert_int_eq(load(&cfg, &err, a4), NW_OK);
    ck_assert_int_eq(cfg.settings.nodeRepair, 1);
    ck_assert_int_eq(cfg.settings.reservedCapacity, 1); /* Karpenter's default: on */
    nw_config_free(&cfg);
    const char *a5[] = {"--settings.featureGates", "ReservedCapacity=false", NULL};
    ck_assert_int_eq(load(&cfg, &err, a5), NW_OK);
    ck_assert_int_eq(cfg.settings.reservedCapacity, 0);
    nw_config_free(&cfg);
    const char *a3[] = {"--settings.featureGates", "SpotToSpotConsolidation=maybe", NULL};
    ck_assert_int_eq(load(&cfg, &err, a3), NW_EINVAL);
    ck_assert_str_eq(err.path, "settings.featureGates");
    nw_config_free(&cfg);
}
END_TEST

Suite *nw_config_suite(void)
{
    Suite *s = suite_create("config");
    TCase *tc = tcase_create("cases");
    data_files = nw_test_cases_dir("tests/data/config", ".yaml", 20);
    nw_test_add_cases(tc, config_case, data_files);
    tcase_add_test(tc, config_flags);
    tcase_add_test(tc, config_classes_flags);
    tcase_add_test(tc, config_durations);
    tcase_add_test(tc, feature_gates);
    suite_add_tcase(s, tc);
    return s;
}
