/* Unit tests for scaler/aws/sigv4: the published AWS SigV4 vectors in tests/data/sigv4/. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/clock.h"
#include "scaler/aws/sigv4.h"
#include "tests/unit/testutil.h"

Suite *nw_sigv4_suite(void);

#define MAXH 32

/* One vector: '#' comments, '@key value' settings, then a signed HTTP request
 * (request line, headers, blank line, body). */
static void run_vector(const char *path)
{
    size_t len;
    char *text = nw_test_read_file(path, &len);
    char *p = text;
    char service[64] = "service", region[64] = "us-east-1", key_hex[65] = "", chash[65] = "";
    while (*p == '#' || *p == '@') {
        char *nl = strchr(p, '\n');
        ck_assert_ptr_nonnull(nl);
        *nl = 0;
        if (sscanf(p, "@service %63s", service) == 1 || sscanf(p, "@region %63s", region) == 1 ||
            sscanf(p, "@signing-key %64s", key_hex) == 1 ||
            sscanf(p, "@canonical-hash %64s", chash) == 1) {
        }
        p = nl + 1;
    }
    /* request line */
    char *nl = strchr(p, '\n');
    ck_assert_ptr_nonnull(nl);
    *nl = 0;
    char *sp = strchr(p, ' ');
    char *ver = strstr(p, " HTTP/1.1");
    ck_assert(sp && ver);
    *sp = 0;
    *ver = 0;
    const char *method = p, *target = sp + 1;
    char pathbuf[512];
    snprintf(pathbuf, sizeof pathbuf, "%s", target);
    char *q = strchr(pathbuf, '?');
    if (q)
        *q++ = 0;
    p = nl + 1;

    nw_sigv4_header_t h[MAXH];
    size_t nh = 0;
    const char *expect_auth = NULL, *token = NULL, *content_sha = NULL;
    while (*p && *p != '\n') {
        nl = strchr(p, '\n');
        ck_assert_ptr_nonnull(nl);
        *nl = 0;
        char *colon = strchr(p, ':');
        ck_assert_ptr_nonnull(colon);
        *colon = 0;
        const char *v = colon + 1;
        if (strcasecmp(p, "Authorization") == 0)
            expect_auth = v;
        else if (strcasecmp(p, "X-Amz-Date") == 0)
            ck_assert_str_eq(v, "20150830T123600Z");
        else if (strcasecmp(p, "X-Amz-Security-Token") == 0)
            token = v;
        else {
            if (strcasecmp(p, "x-amz-content-sha256") == 0)
                content_sha = v;
            ck_assert_uint_lt(nh, MAXH);
            h[nh].name = p;
            h[nh].value = v;
            nh++;
        }
        p = nl + 1;
    }
    const char *body = *p == '\n' ? p + 1 : p;
    ck_assert_ptr_nonnull(expect_auth);

    int64_t t;
    ck_assert_int_eq(nw_clock_time_parse("2015-08-30T12:36:00Z", &t), NW_OK);
    nw_sigv4_req_t req = {.method = method,
                          .path = pathbuf,
                          .query = q,
                          .headers = h,
                          .nheaders = nh,
                          .payload = body,
                          .payload_len = strlen(body),
                          .payload_hash = content_sha,
                          .region = region,
                          .service = service,
                          .time_s = t / NW_NS_PER_SEC,
                          .normalize_path = 1};
    nw_sigv4_creds_t c = {"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", token};
    nw_sigv4_result_t r;
    nw_err_t err = {0};
    ck_assert_msg(nw_sigv4_sign(&req, &c, &r, &err) == NW_OK, "%s: %s", path, err.msg);
    ck_assert_msg(strcmp(r.authorization, expect_auth) == 0, "%s:\n got %s\nwant %s", path,
                  r.authorization, expect_auth);
    ck_assert_str_eq(r.amz_date, "20150830T123600Z");
    if (token)
        ck_assert_str_eq(r.session_token, token);
    else
        ck_assert_ptr_null(r.session_token);
    if (*key_hex) {
        unsigned char k[32];
        char hex[65];
        nw_sigv4_signing_key(c.secret_access_key, "20150830", region, service, k);
        for (int i = 0; i < 32; i++)
            snprintf(hex + 2 * i, 3, "%02x", k[i]);
        ck_assert_str_eq(hex, key_hex);
    }
    if (*chash) {
        nw_buf_t cr;
        nw_buf_init(&cr, 1 << 16);
        ck_assert_int_eq(nw_sigv4_canonical_request(&req, r.amz_date, NULL, &cr, NULL, NULL),
                         NW_OK);
        char hex[65];
        nw_sigv4_sha256_hex(cr.data, cr.len, hex);
        ck_assert_str_eq(hex, chash);
        nw_buf_cleanup(&cr);
    }
    free(text);
}

/* one test per file of tests/data/sigv4 */
static const nw_test_cases_t *data_files;

START_TEST(vector)
{
    run_vector(nw_test_case(data_files, _i)->path);
}
END_TEST

START_TEST(canonical_post_form)
{
    /* the aws-c-auth post-x-www-form-urlencoded header-canonical-request.txt, with
     * the payload signed as empty (sign_body false) */
    nw_sigv4_header_t h[] = {{"Content-Type", "application/x-www-form-urlencoded"},
                             {"Host", "example.amazonaws.com"},
                             {"Content-Length", "13"}};
    nw_sigv4_req_t req = {.method = "POST",
                          .path = "/",
                          .headers = h,
                          .nheaders = 3,
                          .payload = "",
                          .payload_len = 0,
                          .region = "us-east-1",
                          .service = "service"};
    nw_buf_t b;
    nw_buf_init(&b, 4096);
    ck_assert_int_eq(nw_sigv4_canonical_request(&req, "20150830T123600Z", NULL, &b, NULL, NULL),
                     NW_OK);
    ck_assert_str_eq(
        nw_buf_str(&b),
        "POST\n/\n\ncontent-length:13\ncontent-type:application/x-www-form-urlencoded\n"
        "host:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\n"
        "content-length;content-type;host;x-amz-date\n"
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    char hex[65];
    nw_sigv4_sha256_hex(b.data, b.len, hex);
    /* header-string-to-sign.txt's last line */
    ck_assert_str_eq(hex, "0eccf3fbe5a3c5d3df1d87c98cdf5dbde190d26aabdd91c9407db930a0c00896");
    nw_buf_cleanup(&b);
}
END_TEST

START_TEST(query_encoding)
{
    nw_sigv4_header_t h[] = {{"Host", "h"}};
    nw_sigv4_req_t req = {.method = "GET",
                          .path = "/a b/../c",
                          .query = "b=2&a=%7e x&a=1&flag",
                          .headers = h,
                          .nheaders = 1,
                          .region = "r",
                          .service = "s",
                          .normalize_path = 1};
    nw_buf_t b;
    nw_buf_init(&b, 4096);
    ck_assert_int_eq(nw_sigv4_canonical_request(&req, NULL, NULL, &b, NULL, NULL), NW_OK);
    ck_assert_ptr_nonnull(strstr(nw_buf_str(&b), "GET\n/c\na=1&a=~%20x&b=2&flag=\nhost:h\n"));
    nw_buf_cleanup(&b);
}
END_TEST

START_TEST(rejects_bad_input)
{
    nw_sigv4_header_t h[] = {{"X-Other", "v"}};
    nw_sigv4_req_t req = {.method = "GET",
                          .path = "/",
                          .headers = h,
                          .nheaders = 1,
                          .region = "us-east-1",
                          .service = "ec2",
                          .time_s = 1};
    nw_sigv4_creds_t c = {"AK", "SK", NULL};
    nw_sigv4_result_t r;
    nw_err_t err = {0};
    ck_assert_int_eq(nw_sigv4_sign(&req, &c, &r, &err), NW_EINVAL);
    ck_assert_str_eq(err.path, "headers");
    nw_err_clear(&err);
    req.region = "";
    ck_assert_int_eq(nw_sigv4_sign(&req, &c, &r, &err), NW_EINVAL);
    ck_assert_str_eq(err.path, "region");
    nw_err_clear(&err);
    req.region = "us-east-1";
    c.secret_access_key = "";
    ck_assert_int_eq(nw_sigv4_sign(&req, &c, &r, &err), NW_EINVAL);
    ck_assert_str_eq(err.path, "credentials");
    ck_assert_ptr_null(strstr(err.msg, "SK"));
}
END_TEST

Suite *nw_sigv4_suite(void)
{
    Suite *s = suite_create("sigv4");
    TCase *tc = tcase_create("core");
    data_files = nw_test_cases_dir("tests/data/sigv4", ".txt", 15);
    nw_test_add_cases(tc, vector, data_files);
    tcase_add_test(tc, canonical_post_form);
    tcase_add_test(tc, query_encoding);
    tcase_add_test(tc, rejects_bad_input);
    suite_add_tcase(s, tc);
    return s;
}
