/* Unit tests for the AWS credential chain and settings: the shared config file format
 * (scaler/aws/awsprofile), the chain's order and every source of scaler/aws/creds*
 * against real local endpoints (tests/unit/fakeapi.c) and real processes, what is
 * refused and how it is named, and the region, CA bundle and proxy settings of
 * scaler/aws/awscfg. STS and IMDS are covered end to end by tests/e2e/t_aws_creds and
 * t_aws_profiles on the simulator. */
#include <check.h>
#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scaler/aws/awscfg.h"
#include "scaler/aws/awsprofile.h"
#include "scaler/aws/creds.h"
#include "scaler/aws/creds_int.h"
#include "tests/unit/fakeapi.h"

Suite *nw_aws_creds_suite(void);

static char tmpdir[64];

/* Every variable the chain reads unset, the shared files pointed into a fresh
 * directory (empty until a test writes them), IMDS off. */
static void setup(void)
{
    static const char *const vars[] = {"AWS_ACCESS_KEY_ID",
                                       "AWS_SECRET_ACCESS_KEY",
                                       "AWS_SESSION_TOKEN",
                                       "AWS_ROLE_ARN",
                                       "AWS_WEB_IDENTITY_TOKEN_FILE",
                                       "AWS_ROLE_SESSION_NAME",
                                       "AWS_PROFILE",
                                       "AWS_DEFAULT_PROFILE",
                                       "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                                       "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                                       "AWS_CONTAINER_AUTHORIZATION_TOKEN",
                                       "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
                                       "AWS_REGION",
                                       "AWS_DEFAULT_REGION",
                                       "AWS_CA_BUNDLE",
                                       "HTTPS_PROXY",
                                       "https_proxy",
                                       "HTTP_PROXY",
                                       "http_proxy",
                                       "NO_PROXY",
                                       "no_proxy",
                                       "AWS_ENDPOINT_URL",
                                       "AWS_ENDPOINT_URL_STS"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    snprintf(tmpdir, sizeof tmpdir, "/tmp/nwcredsXXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    char p[128];
    snprintf(p, sizeof p, "%s/config", tmpdir);
    setenv("AWS_CONFIG_FILE", p, 1);
    snprintf(p, sizeof p, "%s/credentials", tmpdir);
    setenv("AWS_SHARED_CREDENTIALS_FILE", p, 1);
    setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    ck_assert_int_eq(system(cmd), 0);
    nw_awshttp_set_net(NULL);
    unsetenv("AWS_CONFIG_FILE");
    unsetenv("AWS_SHARED_CREDENTIALS_FILE");
}

/* Write name in the test directory (mode 0700 when exec); returns its path (static). */
static const char *put(const char *name, const char *text, int exec)
{
    static char path[8][160];
    static int k;
    char *p = path[k++ % 8];
    snprintf(p, 160, "%s/%s", tmpdir, name);
    FILE *f = fopen(p, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
    if (exec)
        chmod(p, 0700);
    return p;
}

static nw_awscfg_t cfg_with_sts(void)
{
    nw_awscfg_t cfg;
    memset(&cfg, 0, sizeof cfg);
    snprintf(cfg.region, sizeof cfg.region, "us-west-2");
    snprintf(cfg.sts, sizeof cfg.sts, "http://127.0.0.1:9");
    cfg.call_timeout_ms = 5000;
    cfg.imds_disabled = getenv("AWS_EC2_METADATA_DISABLED") != NULL;
    snprintf(cfg.imds, sizeof cfg.imds, "http://127.0.0.1:9");
    return cfg;
}

/* nw_creds_new must fail with a message holding want1 and want2 (may be NULL). */
static void new_fails(const char *want1, const char *want2)
{
    nw_awscfg_t cfg = cfg_with_sts();
    nw_creds_t *c = NULL;
    nw_err_t err = {0};
    ck_assert_int_ne(nw_creds_new(&cfg, NULL, &c, &err), NW_OK);
    ck_assert_ptr_null(c);
    ck_assert_msg(strstr(err.msg, want1), "\"%s\" lacks \"%s\"", err.msg, want1);
    if (want2)
        ck_assert_msg(strstr(err.msg, want2), "\"%s\" lacks \"%s\"", err.msg, want2);
}

static nw_creds_t *new_ok(const nw_awscfg_t *cfg)
{
    nw_creds_t *c = NULL;
    nw_err_t err = {0};
    ck_assert_msg(nw_creds_new(cfg, NULL, &c, &err) == NW_OK, "%s", err.msg);
    return c;
}

/* ---- the file format ------------------------------------------------------------- */

START_TEST(profile_format)
{
    nw_awsprofile_set_t *s = NULL;
    nw_err_t err = {0};
    const char *config = "# a comment\n"
                         "[default]\n"
                         "region = us-east-1 ; trailing comment\n"
                         "[profile dev]\r\n"
                         "Region=eu-west-1\r\n"
                         "role_arn = arn:aws:iam::1:role/x#not-a-comment\n"
                         "s3 =\n"
                         "  max_concurrent_requests = 20\n"
                         "note = first\n"
                         "  second\n"
                         "[plain]\n"
                         "region = ignored\n"
                         "[sso-session corp]\n"
                         "sso_region = us-east-1\n"
                         "[profile  spaced ]\n"
                         "region = ap-south-1\n";
    ck_assert_int_eq(nw_awsprofile_parse(&s, config, "cfg", true, &err), NW_OK);
    const char *creds = "[dev]\n"
                        "region = ca-central-1\n"
                        "aws_access_key_id = AKID\n"
                        "[profile other]\n"
                        "aws_access_key_id = ignored\n";
    ck_assert_int_eq(nw_awsprofile_parse(&s, creds, "creds", false, &err), NW_OK);
    const char *file = NULL;
    ck_assert_str_eq(nw_awsprofile_get(s, "default", "region", NULL), "us-east-1");
    ck_assert_str_eq(nw_awsprofile_get(s, "dev", "region", &file), "ca-central-1"); /* creds win */
    ck_assert_str_eq(file, "creds");
    ck_assert_str_eq(nw_awsprofile_get(s, "dev", "role_arn", &file),
                     "arn:aws:iam::1:role/x#not-a-comment");
    ck_assert_str_eq(file, "cfg");
    ck_assert_str_eq(nw_awsprofile_get(s, "dev", "s3.max_concurrent_requests", NULL), "20");
    ck_assert_str_eq(nw_awsprofile_get(s, "dev", "s3", NULL), "");
    ck_assert_str_eq(nw_awsprofile_get(s, "dev", "note", NULL), "first\nsecond");
    ck_assert_str_eq(nw_awsprofile_get(s, "spaced", "region", NULL), "ap-south-1");
    ck_assert(!nw_awsprofile_has(s, "plain")); /* a bare name in the config file */
    ck_assert(!nw_awsprofile_has(s, "other")); /* "profile x" in the credentials file */
    ck_assert(!nw_awsprofile_has(s, "sso-session corp"));
    ck_assert(!nw_awsprofile_has(s, "corp"));
    nw_awsprofile_free(s);
}
END_TEST

START_TEST(profile_default_spelled_twice)
{
    nw_awsprofile_set_t *s = NULL;
    const char *config = "[default]\nregion = a\noutput = json\n"
                         "[profile default]\nregion = b\n"
                         "[default]\nregion = c\n";
    ck_assert_int_eq(nw_awsprofile_parse(&s, config, "cfg", true, NULL), NW_OK);
    ck_assert_str_eq(nw_awsprofile_get(s, "default", "region", NULL), "b");
    ck_assert_ptr_null(nw_awsprofile_get(s, "default", "output", NULL));
    nw_awsprofile_free(s);
}
END_TEST

START_TEST(profile_format_errors)
{
    static const struct {
        const char *text, *want;
    } bad[] = {
        {"region = x\n", "cfg:1: property outside a section"},
        {"[default\nregion = x\n", "cfg:1: a section line must end with ']'"},
        {"[default]\n\nregion x\n", "cfg:3: expected \"key = value\""},
        {"[default] junk\n", "cfg:1: unexpected text after ']'"},
        {"[default]\n  indented = first\n", "cfg:2: an indented line must follow a property"},
        {"[default]\n= value\n", "cfg:2: a property needs a name"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        nw_awsprofile_set_t *s = NULL;
        nw_err_t err = {0};
        ck_assert_int_eq(nw_awsprofile_parse(&s, bad[i].text, "cfg", true, &err), NW_EPARSE);
        ck_assert_msg(strstr(err.msg, bad[i].want), "case %zu: \"%s\" lacks \"%s\"", i, err.msg,
                      bad[i].want);
        nw_awsprofile_free(s);
    }
}
END_TEST

START_TEST(process_split)
{
    static const struct {
        const char *cmd;
        const char *argv[5];
    } ok[] = {
        {"helper --profile dev", {"helper", "--profile", "dev"}},
        {"  '/opt/my tools/helper'  \"a b\" c\\ d", {"/opt/my tools/helper", "a b", "c d"}},
        {"x 'it''s' \"q\\\"uote\" ''", {"x", "its", "q\"uote", ""}},
        {"x \"$HOME\" 'a\\b'", {"x", "$HOME", "a\\b"}},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        char **argv = NULL;
        nw_err_t err = {0};
        ck_assert_msg(nw_creds_process_split(ok[i].cmd, &argv, &err) == NW_OK, "%s", err.msg);
        size_t n = 0;
        for (; ok[i].argv[n]; n++)
            ck_assert_str_eq(argv[n], ok[i].argv[n]);
        ck_assert_ptr_null(argv[n]);
        nw_creds_process_argv_free(argv);
    }
    static const char *const bad[] = {"", "   ", "x 'open", "x \"open", "x \\"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char **argv = (char **)1;
        ck_assert_int_eq(nw_creds_process_split(bad[i], &argv, NULL), NW_EINVAL);
        ck_assert_ptr_null(argv);
    }
}
END_TEST

/* ---- the chain ------------------------------------------------------------------- */

START_TEST(environment_first)
{
    setenv("AWS_ACCESS_KEY_ID", "AKIDENV", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "secret-env", 1);
    put("credentials", "[default]\naws_access_key_id = AKIDFILE\naws_secret_access_key = s\n", 0);
    nw_awscfg_t cfg = cfg_with_sts();
    nw_creds_t *c = new_ok(&cfg);
    ck_assert_int_eq(nw_creds_source(c), NW_CREDS_ENV);
    nw_creds_value_t v;
    ck_assert_int_eq(nw_creds_get(c, &v, NULL), NW_OK);
    ck_assert_str_eq(v.access_key_id, "AKIDENV");
    nw_creds_value_wipe(&v);
    nw_creds_free(c);
    unsetenv("AWS_SECRET_ACCESS_KEY");
    new_fails("AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not", NULL);
}
END_TEST

START_TEST(web_identity_needs_the_role)
{
    setenv("AWS_WEB_IDENTITY_TOKEN_FILE", put("token", "x.y.z", 0), 1);
    new_fails("AWS_WEB_IDENTITY_TOKEN_FILE is set but AWS_ROLE_ARN is not", NULL);
    setenv("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/r", 1);
    nw_awscfg_t cfg = cfg_with_sts();
    nw_creds_t *c = new_ok(&cfg);
    ck_assert_int_eq(nw_creds_source(c), NW_CREDS_WEB_IDENTITY);
    nw_creds_free(c);
}
END_TEST

START_TEST(profile_static_keys)
{
    put("config", "[profile dev]\nregion = eu-west-1\n", 0);
    put("credentials",
        "[default]\naws_access_key_id = AKIDDEFAULT\naws_secret_access_key = s1\n"
        "[dev]\naws_access_key_id = AKIDDEV\naws_secret_access_key = s2\n"
        "aws_session_token = tok\n",
        0);
    nw_awscfg_t cfg = cfg_with_sts();
    nw_creds_t *c = new_ok(&cfg);
    nw_creds_value_t v;
    ck_assert_int_eq(nw_creds_source(c), NW_CREDS_PROFILE);
    ck_assert_int_eq(nw_creds_get(c, &v, NULL), NW_OK);
    ck_assert_str_eq(v.access_key_id, "AKIDDEFAULT");
    ck_assert_ptr_nonnull(strstr(nw_creds_describe(c), "profile \"default\""));
    nw_creds_free(c);
    setenv("AWS_PROFILE", "dev", 1);
    c = new_ok(&cfg);
    ck_assert_int_eq(nw_creds_get(c, &v, NULL), NW_OK);
    ck_assert_str_eq(v.access_key_id, "AKIDDEV");
    ck_assert_str_eq(v.session_token, "tok");
    ck_assert_int_eq(v.expires_ns, 0);
    ck_assert_int_eq(nw_creds_fetch_count(c), 0);
    nw_creds_value_wipe(&v);
    nw_creds_free(c);
    /* AWS_DEFAULT_PROFILE when AWS_PROFILE is unset */
    unsetenv("AWS_PROFILE");
    setenv("AWS_DEFAULT_PROFILE", "dev", 1);
    c = new_ok(&cfg);
    ck_assert_int_eq(nw_creds_get(c, &v, NULL), NW_OK);
    ck_assert_str_eq(v.access_key_id, "AKIDDEV");
    nw_creds_free(c);
    setenv("AWS_PROFILE", "missing", 1);
    new_fails("AWS_PROFILE names profile \"missing\", which is not in", "/credentials");
}
END_TEST

START_TEST(profile_without_credentials_goes_on)
{
    /* only a region: the chain goes on (to IMDS here) */
    put("config", "[default]\nregion = eu-west-1\n", 0);
    unsetenv("AWS_EC2_METADATA_DISABLED");
    nw_awscfg_t cfg = cfg_with_sts();
    nw_creds_t *c = new_ok(&cfg);
    ck_assert_int_eq(nw_creds_source(c), NW_CREDS_IMDS);
    nw_creds_free(c);
    setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
    new_fails("no credentials", NULL);
}
END_TEST

START_TEST(profile_refusals)
{
    static const struct {
        const char *config, *want1, *want2;
    } bad[] = {
        {"[default]\nsso_session = corp\n", "sso_session: IAM Identity Center",
         "credential_process = aws configure export-credentials --profile default"},
        {"[default]\nsso_start_url = https://x\n", "sso_start_url", NULL},
        {"[default]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = b\nmfa_serial = arn:m\n"
         "[profile b]\naws_access_key_id = a\naws_secret_access_key = s\n",
         "mfa_serial", NULL},
        {"[default]\naws_access_key_id = a\n", "aws_access_key_id is set but aws_secret_access_key",
         "profile \"default\" in "},
        {"[default]\nrole_arn = arn:aws:iam::1:role/r\n",
         "role_arn needs source_profile, credential_source or web_identity_token_file", NULL},
        {"[default]\nweb_identity_token_file = /t\n", "web_identity_token_file needs role_arn",
         NULL},
        {"[default]\nsource_profile = x\n", "source_profile needs role_arn", NULL},
        {"[default]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = b\n"
         "credential_source = Environment\n",
         "source_profile and credential_source are both set", NULL},
        {"[default]\nrole_arn = arn:aws:iam::1:role/r\ncredential_source = Nowhere\n",
         "credential_source must be Environment, Ec2InstanceMetadata or EcsContainer", NULL},
        {"[default]\nrole_arn = arn:aws:iam::1:role/r\ncredential_source = Environment\n",
         "credential_source Environment, but AWS_ACCESS_KEY_ID", NULL},
        {"[default]\nrole_arn = arn:aws:iam::1:role/r\ncredential_source = EcsContainer\n",
         "credential_source EcsContainer, but neither", NULL},
        {"[default]\nrole_arn = arn:aws:iam::1:role/r\ncredential_source = Ec2InstanceMetadata\n",
         "AWS_EC2_METADATA_DISABLED", NULL},
        {"[default]\nrole_arn = arn:aws:iam::1:role/a\nsource_profile = b\n"
         "[profile b]\nrole_arn = arn:aws:iam::1:role/b\nsource_profile = default\n",
         "source_profile loop: default -> b -> default", NULL},
        {"[default]\nrole_arn = arn:aws:iam::1:role/a\nsource_profile = nope\n",
         "source_profile \"nope\" is not in", NULL},
        {"[default]\nrole_arn = arn:aws:iam::1:role/a\nsource_profile = b\n[profile b]\n"
         "region = x\n",
         "source_profile \"b\" holds no credentials", NULL},
        {"[default]\nrole_arn = arn:aws:iam::1:role/a\nsource_profile = default\n",
         "source_profile names the profile itself", NULL},
        {"[default]\nrole_arn = arn:aws:iam::1:role/a\nsource_profile = b\n"
         "duration_seconds = 60\n[profile b]\naws_access_key_id = a\naws_secret_access_key = s\n",
         "duration_seconds must be a number of seconds from 900 to 43200", NULL},
        {"[default]\ncredential_process = 'unterminated\n", "unterminated ' quote", NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        put("config", bad[i].config, 0);
        new_fails(bad[i].want1, bad[i].want2);
    }
}
END_TEST

/* A role chain is built, not fetched: default assumes r2 with b's role r1, which b
 * assumes with c's static keys. */
START_TEST(profile_role_chain_described)
{
    put("config",
        "[default]\nrole_arn = arn:aws:iam::1:role/r2\nsource_profile = b\nexternal_id = ext\n"
        "[profile b]\nrole_arn = arn:aws:iam::1:role/r1\nsource_profile = c\n"
        "[profile c]\naws_access_key_id = AKIDC\naws_secret_access_key = s\n",
        0);
    nw_awscfg_t cfg = cfg_with_sts();
    nw_creds_t *c = new_ok(&cfg);
    ck_assert_int_eq(nw_creds_source(c), NW_CREDS_ASSUME_ROLE);
    const char *d = nw_creds_describe(c);
    ck_assert_ptr_nonnull(strstr(d, "role arn:aws:iam::1:role/r2 of profile \"default\""));
    ck_assert_ptr_nonnull(strstr(d, "role arn:aws:iam::1:role/r1 of profile \"b\""));
    ck_assert_ptr_nonnull(strstr(d, "profile \"c\""));
    nw_creds_free(c);
    /* without a region or STS endpoint a role cannot be assumed */
    memset(cfg.sts, 0, sizeof cfg.sts);
    nw_creds_t *none = NULL;
    nw_err_t err = {0};
    ck_assert_int_eq(nw_creds_new(&cfg, NULL, &none, &err), NW_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "role_arn needs the STS endpoint"));
}
END_TEST

/* ---- credential_process ------------------------------------------------------------ */

START_TEST(credential_process)
{
    char now[32], soon[32], later[32];
    int64_t t = nw_clock_now(nw_clock_system());
    nw_clock_time_format(t, now, sizeof now);
    nw_clock_time_format(t + 60 * NW_NS_PER_SEC, soon, sizeof soon); /* inside the 5 min */
    nw_clock_time_format(t + 3600 * NW_NS_PER_SEC, later, sizeof later);
    (void)now;
    char script[1024], cfgtext[1200];
    snprintf(script, sizeof script,
             "#!/bin/sh\n"
             "n=$(cat %s/count 2>/dev/null || echo 0); n=$((n+1)); echo $n > %s/count\n"
             "echo \"run $n: $1\" >&2\n"
             "printf '{\"Version\": 1, \"AccessKeyId\": \"AKIDPROC%%s\", \"SecretAccessKey\": "
             "\"s\", \"SessionToken\": \"t\", \"Expiration\": \"%%s\"}' $n \"$2\"\n",
             tmpdir, tmpdir);
    const char *helper = put("helper", script, 1);
    snprintf(cfgtext, sizeof cfgtext, "[default]\ncredential_process = \"%s\" 'arg one' %s\n",
             helper, soon);
    put("config", cfgtext, 0);
    nw_awscfg_t cfg = cfg_with_sts();
    nw_creds_t *c = new_ok(&cfg);
    ck_assert_int_eq(nw_creds_source(c), NW_CREDS_PROCESS);
    nw_creds_value_t v;
    nw_err_t err = {0};
    ck_assert_msg(nw_creds_get(c, &v, &err) == NW_OK, "%s", err.msg);
    ck_assert_str_eq(v.access_key_id, "AKIDPROC1");
    ck_assert_str_eq(v.session_token, "t");
    /* within the refresh window: the next get runs it again */
    ck_assert_int_eq(nw_creds_get(c, &v, NULL), NW_OK);
    ck_assert_str_eq(v.access_key_id, "AKIDPROC2");
    ck_assert_int_eq(nw_creds_fetch_count(c), 2);
    nw_creds_free(c);
    /* an hour ahead: kept */
    snprintf(cfgtext, sizeof cfgtext, "[default]\ncredential_process = %s x %s\n", helper, later);
    put("config", cfgtext, 0);
    c = new_ok(&cfg);
    ck_assert_int_eq(nw_creds_get(c, &v, NULL), NW_OK);
    ck_assert_int_eq(nw_creds_get(c, &v, NULL), NW_OK);
    ck_assert_str_eq(v.access_key_id, "AKIDPROC3");
    ck_assert_int_eq(nw_creds_fetch_count(c), 1);
    nw_creds_value_wipe(&v);
    nw_creds_free(c);
}
END_TEST

/* The credential process's failures, each named. */
START_TEST(credential_process_failures)
{
    static const struct {
        const char *body, *want;
    } bad[] = {
        {"echo 'token expired, run login' >&2; exit 2", "exit status 2: token expired, run login"},
        {"echo not json", "not a JSON object"},
        {"echo '{\"Version\": 2, \"AccessKeyId\": \"a\", \"SecretAccessKey\": \"s\"}'",
         "Version other than 1; it must be 1"},
        {"echo '{\"Version\": 1, \"AccessKeyId\": \"a\"}'", "printed no SecretAccessKey"},
        {"echo '{\"Version\": 1, \"AccessKeyId\": \"a\", \"SecretAccessKey\": \"s\", "
         "\"Expiration\": \"soon\"}'",
         "Expiration \"soon\", not an RFC 3339 time"},
        {"kill -9 $$", "killed by signal 9"},
    };
    nw_awscfg_t cfg = cfg_with_sts();
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char script[512], cfgtext[400];
        snprintf(script, sizeof script, "#!/bin/sh\n%s\n", bad[i].body);
        const char *helper = put("helper", script, 1);
        snprintf(cfgtext, sizeof cfgtext, "[profile p]\ncredential_process = %s\n", helper);
        put("config", cfgtext, 0);
        setenv("AWS_PROFILE", "p", 1);
        nw_creds_t *c = new_ok(&cfg);
        nw_creds_value_t v;
        nw_err_t err = {0};
        ck_assert_int_ne(nw_creds_get(c, &v, &err), NW_OK);
        ck_assert_msg(strstr(err.msg, bad[i].want), "case %zu: \"%s\" lacks \"%s\"", i, err.msg,
                      bad[i].want);
        ck_assert_msg(strstr(err.msg, "credential_process of profile \"p\""), "%s", err.msg);
        nw_creds_free(c);
    }
    put("config", "[profile p]\ncredential_process = /nonexistent/helper\n", 0);
    nw_creds_t *c = new_ok(&cfg);
    nw_creds_value_t v;
    nw_err_t err = {0};
    ck_assert_int_ne(nw_creds_get(c, &v, &err), NW_OK);
    ck_assert_ptr_nonnull(strstr(err.msg, "/nonexistent/helper: not found"));
    nw_creds_free(c);
}
END_TEST

/* ---- container credentials ----------------------------------------------------------- */

typedef struct {
    _Atomic int calls;
    char auth[8][128]; /* the Authorization of each request */
    char path[256];
    int status;   /* 0: 200 */
    int expire_s; /* Expiration this far ahead */
} agent_t;

static void agent_handler(void *ud, const fake_req_t *r, fake_conn_t *c)
{
    agent_t *a = ud;
    int n = atomic_fetch_add(&a->calls, 1);
    if (n < 8)
        snprintf(a->auth[n], sizeof a->auth[n], "%.120s", r->auth);
    snprintf(a->path, sizeof a->path, "%.250s", r->path);
    if (a->status) {
        fake_reply(c, a->status, "",
                   "{\"code\":\"AccessDenied\",\"message\":\"the token is not valid\"}");
        return;
    }
    char exp[32], body[512];
    nw_clock_time_format(nw_clock_now(nw_clock_system()) + (int64_t)a->expire_s * NW_NS_PER_SEC,
                         exp, sizeof exp);
    snprintf(body, sizeof body,
             "{\"AccessKeyId\":\"ASIAAGENT%d\",\"SecretAccessKey\":\"s\",\"Token\":\"tok\","
             "\"AccountId\":\"123456789012\",\"Expiration\":\"%s\"}",
             n, exp);
    fake_reply(c, 200, "", body);
}

/* The Pod Identity agent's way: the full URI, a token file that rotates. */
START_TEST(container_full_uri_token_file)
{
    agent_t a = {.expire_s = 60};
    fake_srv_t *srv = fake_srv_start(agent_handler, &a);
    char url[128];
    snprintf(url, sizeof url, "http://localhost:%d/v1/credentials", fake_srv_port(srv));
    setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", url, 1);
    const char *tf = put("eks-pod-identity-token", "first-token\n", 0);
    setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", tf, 1);
    setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "ignored-when-the-file-is-set", 1);
    nw_awscfg_t cfg = cfg_with_sts();
    nw_creds_t *c = new_ok(&cfg);
    ck_assert_int_eq(nw_creds_source(c), NW_CREDS_CONTAINER);
    nw_creds_value_t v;
    nw_err_t err = {0};
    ck_assert_msg(nw_creds_get(c, &v, &err) == NW_OK, "%s", err.msg);
    ck_assert_str_eq(v.access_key_id, "ASIAAGENT0");
    ck_assert_str_eq(v.session_token, "tok");
    ck_assert_str_eq(a.auth[0], "first-token");
    ck_assert_str_eq(a.path, "/v1/credentials");
    put("eks-pod-identity-token", "second-token", 0);   /* rotated */
    ck_assert_int_eq(nw_creds_get(c, &v, NULL), NW_OK); /* 60 s left: refreshed */
    ck_assert_str_eq(v.access_key_id, "ASIAAGENT1");
    ck_assert_str_eq(a.auth[1], "second-token");
    nw_creds_free(c);
    /* refused by the agent: its code and message */
    a.status = 403;
    c = new_ok(&cfg);
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(nw_creds_get(c, &v, &err), NW_EAWS);
    ck_assert_ptr_nonnull(strstr(err.msg, "HTTP 403: AccessDenied: the token is not valid"));
    ck_assert_ptr_nonnull(strstr(err.msg, url));
    nw_creds_value_wipe(&v);
    nw_creds_free(c);
    fake_srv_stop(srv);
    /* a token that would break the header */
    put("eks-pod-identity-token", "two\nlines", 0);
    new_fails("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE: the token holds a line break", NULL);
    unsetenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
    setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "a\r\nX-Injected: 1", 1);
    new_fails("AWS_CONTAINER_AUTHORIZATION_TOKEN: the token holds a line break", NULL);
}
END_TEST

/* ECS's way: a path on 169.254.170.2 (a local server stands in for it), the token from
 * the environment. */
START_TEST(container_relative_uri)
{
    agent_t a = {.expire_s = 3600};
    fake_srv_t *srv = fake_srv_start(agent_handler, &a);
    setenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "/v2/credentials/4a6c", 1);
    setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://10.9.9.9/not-used", 1);
    setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "ecs-token", 1);
    nw_awscfg_t cfg = cfg_with_sts();
    snprintf(cfg.ecs_base, sizeof cfg.ecs_base, "http://127.0.0.1:%d", fake_srv_port(srv));
    nw_creds_t *c = new_ok(&cfg);
    nw_creds_value_t v;
    nw_err_t err = {0};
    ck_assert_msg(nw_creds_get(c, &v, &err) == NW_OK, "%s", err.msg);
    ck_assert_int_eq(nw_creds_get(c, &v, &err), NW_OK); /* an hour left: cached */
    ck_assert_int_eq(atomic_load(&a.calls), 1);
    ck_assert_str_eq(a.path, "/v2/credentials/4a6c");
    ck_assert_str_eq(a.auth[0], "ecs-token");
    nw_creds_value_wipe(&v);
    nw_creds_free(c);
    fake_srv_stop(srv);
    /* the default host is ECS's */
    nw_awscfg_t plain = cfg_with_sts();
    c = new_ok(&plain);
    ck_assert_ptr_nonnull(strstr(nw_creds_describe(c), "http://169.254.170.2/v2/credentials/4a6c"));
    nw_creds_free(c);
}
END_TEST

START_TEST(container_allowed_hosts)
{
    static const char *const allowed[] = {
        "http://127.0.0.1:8080/creds",
        "http://127.9.8.7/creds",
        "http://[::1]:80/creds",
        "http://localhost/creds",
        "http://169.254.170.2/v2/x",
        "http://169.254.170.23/v1/credentials",
        "http://[fd00:ec2::23]/v1/credentials",
        "https://credentials.example.com/get",
    };
    static const char *const refused[] = {"http://10.0.0.1/creds", "http://169.254.169.254/creds",
                                          "http://[fd00:ec2::254]/creds", "ftp://127.0.0.1/creds",
                                          "not a url"};
    nw_awscfg_t cfg = cfg_with_sts();
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++) {
        setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", allowed[i], 1);
        nw_creds_t *c = NULL;
        nw_err_t err = {0};
        ck_assert_msg(nw_creds_new(&cfg, NULL, &c, &err) == NW_OK, "%s: %s", allowed[i], err.msg);
        ck_assert_int_eq(nw_creds_source(c), NW_CREDS_CONTAINER);
        nw_creds_free(c);
    }
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", refused[i], 1);
        new_fails("AWS_CONTAINER_CREDENTIALS_FULL_URI", NULL);
    }
}
END_TEST

/* A role assumed with the container's credentials: the source is fetched for the role
 * (the STS call itself is covered on the simulator). */
START_TEST(role_with_container_source_fetches_the_source)
{
    agent_t a = {.expire_s = 3600};
    fake_srv_t *srv = fake_srv_start(agent_handler, &a);
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/v1/credentials", fake_srv_port(srv));
    setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", url, 1);
    put("config", "[default]\nrole_arn = arn:aws:iam::1:role/r\ncredential_source = EcsContainer\n",
        0);
    /* an STS endpoint that refuses every connection */
    fake_srv_t *closed = fake_srv_start(agent_handler, &a);
    nw_awscfg_t cfg = cfg_with_sts();
    snprintf(cfg.sts, sizeof cfg.sts, "http://127.0.0.1:%d", fake_srv_port(closed));
    fake_srv_stop(closed);
    nw_creds_t *c = new_ok(&cfg);
    nw_creds_value_t v;
    nw_err_t err = {0};
    ck_assert_int_ne(nw_creds_get(c, &v, &err), NW_OK);
    ck_assert_int_eq(atomic_load(&a.calls), 1); /* the source was fetched first */
    ck_assert_int_eq(nw_creds_fetch_count(c), 2);
    nw_creds_free(c);
    fake_srv_stop(srv);
}
END_TEST

/* ---- region, CA bundle, proxies ------------------------------------------------------- */

START_TEST(awscfg_region_from_profile)
{
    put("config", "[default]\nregion = eu-west-1\n[profile dev]\nregion = ap-south-1\n", 0);
    nw_awscfg_t cfg;
    nw_err_t err = {0};
    ck_assert_int_eq(nw_awscfg_resolve(&cfg, NULL, &err), NW_OK);
    ck_assert_str_eq(cfg.region, "eu-west-1");
    ck_assert_str_eq(cfg.sts, "https://sts.eu-west-1.amazonaws.com");
    setenv("AWS_PROFILE", "dev", 1);
    ck_assert_int_eq(nw_awscfg_resolve(&cfg, NULL, &err), NW_OK);
    ck_assert_str_eq(cfg.region, "ap-south-1");
    setenv("AWS_DEFAULT_REGION", "us-east-2", 1);
    ck_assert_int_eq(nw_awscfg_resolve(&cfg, NULL, &err), NW_OK);
    ck_assert_str_eq(cfg.region, "us-east-2");
    setenv("AWS_REGION", "us-west-1", 1);
    ck_assert_int_eq(nw_awscfg_resolve(&cfg, NULL, &err), NW_OK);
    ck_assert_str_eq(cfg.region, "us-west-1");
    nw_awscfg_explicit_t ex = {.region = "ca-central-1"};
    ck_assert_int_eq(nw_awscfg_resolve(&cfg, &ex, &err), NW_OK);
    ck_assert_str_eq(cfg.region, "ca-central-1");
    put("config", "[default]\nregion\n", 0);
    ck_assert_int_eq(nw_awscfg_resolve(&cfg, NULL, &err), NW_EPARSE);
    ck_assert_ptr_nonnull(strstr(err.msg, "/config:2: expected \"key = value\""));
}
END_TEST

START_TEST(awscfg_ca_bundle_and_proxies)
{
    nw_awscfg_t cfg;
    nw_err_t err = {0};
    setenv("AWS_CA_BUNDLE", "tests/data/kubeconfig/ca.pem", 1);
    setenv("https_proxy", "proxy.internal:3128", 1);
    setenv("HTTP_PROXY", "http://proxy.internal:3129", 1);
    setenv("http_proxy", "http://lower-case-loses:1", 1);
    setenv("no_proxy", "169.254.169.254,.internal", 1);
    ck_assert_msg(nw_awscfg_resolve(&cfg, NULL, &err) == NW_OK, "%s", err.msg);
    nw_awshttp_net_t n;
    nw_awshttp_get_net(&n);
    ck_assert_str_eq(n.ca_bundle, "tests/data/kubeconfig/ca.pem");
    ck_assert_str_eq(n.https_proxy, "proxy.internal:3128");
    ck_assert_str_eq(n.http_proxy, "http://proxy.internal:3129");
    ck_assert_str_eq(n.no_proxy, "169.254.169.254,.internal");
    /* the profile's ca_bundle when AWS_CA_BUNDLE is unset */
    unsetenv("AWS_CA_BUNDLE");
    put("config", "[default]\nca_bundle = /nonexistent/bundle.pem\n", 0);
    ck_assert_int_eq(nw_awscfg_resolve(&cfg, NULL, &err), NW_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "ca_bundle of profile default in "));
    ck_assert_ptr_nonnull(strstr(err.msg, "cannot read /nonexistent/bundle.pem"));
    setenv("AWS_CA_BUNDLE", put("empty.pem", "no certificate here\n", 0), 1);
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(nw_awscfg_resolve(&cfg, NULL, &err), NW_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "AWS_CA_BUNDLE: "));
    ck_assert_ptr_nonnull(strstr(err.msg, "holds no PEM certificate"));
    unsetenv("AWS_CA_BUNDLE");
    put("config", "", 0);
    setenv("HTTPS_PROXY", "ftp://proxy:21", 1);
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(nw_awscfg_resolve(&cfg, NULL, &err), NW_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "HTTPS_PROXY: proxy scheme ftp"));
}
END_TEST

Suite *nw_aws_creds_suite(void)
{
    Suite *s = suite_create("aws_creds");
    TCase *tc = tcase_create("aws_creds");
    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, profile_format);
    tcase_add_test(tc, profile_default_spelled_twice);
    tcase_add_test(tc, profile_format_errors);
    tcase_add_test(tc, process_split);
    tcase_add_test(tc, environment_first);
    tcase_add_test(tc, web_identity_needs_the_role);
    tcase_add_test(tc, profile_static_keys);
    tcase_add_test(tc, profile_without_credentials_goes_on);
    tcase_add_test(tc, profile_refusals);
    tcase_add_test(tc, profile_role_chain_described);
    tcase_add_test(tc, credential_process);
    tcase_add_test(tc, credential_process_failures);
    tcase_add_test(tc, container_full_uri_token_file);
    tcase_add_test(tc, container_relative_uri);
    tcase_add_test(tc, container_allowed_hosts);
    tcase_add_test(tc, role_with_container_source_fetches_the_source);
    tcase_add_test(tc, awscfg_region_from_profile);
    tcase_add_test(tc, awscfg_ca_bundle_and_proxies);
    suite_add_tcase(s, tc);
    return s;
}
