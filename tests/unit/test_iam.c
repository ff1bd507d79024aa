/* Unit tests for the instance profiles of EC2NodeClasses (scaler/aws/iam.h) against a scripted
 * IAM Query API (tests/unit/fakeapi.h): a role that does not exist yet makes one profile,
 * kept without its role and given the role once it exists; no profile is deleted on the way. */
#include <check.h>
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaler/aws/iam.h"
#include "tests/unit/fakeapi.h"

Suite *nw_iam_suite(void);

/* The fake IAM: profiles (name, path, role) and whether the role exists; calls counted. */
typedef struct {
    pthread_mutex_t mu;
    char name[8][129], path[8][256], role[8][129];
    int n;
    int role_exists;
    int creates, deletes, adds, lists;
} iam_t;

static void param(const fake_req_t *r, const char *key, char *out, size_t len)
{
    char q[8192];
    snprintf(q, sizeof q, "/?%s", r->body ? r->body : "");
    if (!fake_query(q, key, out, len))
        out[0] = 0;
}

static void profile_xml(const iam_t *f, int i, char *out, size_t len)
{
    char roles[400] = "";
    if (f->role[i][0])
        snprintf(roles, sizeof roles,
                 "<member><Path>/</Path><RoleName>%s</RoleName><RoleId>AROA1</RoleId><Arn>"
                 "arn:aws:iam::111122223333:role/%s</Arn></member>",
                 f->role[i], f->role[i]);
    snprintf(out, len,
             "<InstanceProfileName>%s</InstanceProfileName><Path>%s</Path><InstanceProfileId>"
             "AIPA%d</InstanceProfileId><Arn>arn:aws:iam::111122223333:instance-profile%s%s</Arn>"
             "<CreateDate>2026-11-30T12:00:00Z</CreateDate><Roles>%s</Roles><Tags></Tags>",
             f->name[i], f->path[i], i, f->path[i], f->name[i], roles);
}

static void answer(fake_conn_t *c, const char *action, const char *result)
{
    static char body[16384]; /* under the fake's mutex */
    char inner[12288] = "";
    if (result)
        snprintf(inner, sizeof inner, "<%sResult>%s</%sResult>", action, result, action);
    snprintf(body, sizeof body,
             "<%sResponse xmlns=\"https://iam.amazonaws.com/doc/2010-05-08/\">%s"
             "<ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></%sResponse>",
             action, inner, action);
    fake_reply(c, 200, "Content-Type: text/xml\r\n", body);
}

static void no_such(fake_conn_t *c, const char *what)
{
    char body[512];
    snprintf(body, sizeof body,
             "<ErrorResponse xmlns=\"https://iam.amazonaws.com/doc/2010-05-08/\"><Error><Type>"
             "Sender</Type><Code>NoSuchEntity</Code><Message>%s cannot be found.</Message>"
             "</Error><RequestId>r</RequestId></ErrorResponse>",
             what);
    fake_reply(c, 404, "Content-Type: text/xml\r\n", body);
}

static void handler(void *ud, const fake_req_t *r, fake_conn_t *c)
{
    iam_t *f = ud;
    char action[64], name[129], role[129], path[256], xml[4096];
    param(r, "Action", action, sizeof action);
    param(r, "InstanceProfileName", name, sizeof name);
    param(r, "RoleName", role, sizeof role);
    pthread_mutex_lock(&f->mu);
    int i = 0;
    while (i < f->n && strcmp(f->name[i], name) != 0)
        i++;
    if (strcmp(action, "ListInstanceProfiles") == 0) {
        f->lists++;
        param(r, "PathPrefix", path, sizeof path);
        char all[6000] = "<InstanceProfiles>";
        for (int k = 0; k < f->n; k++)
            if (strncmp(f->path[k], path, strlen(path)) == 0) {
                strncat(all, "<member>", sizeof all - strlen(all) - 1);
                profile_xml(f, k, xml, sizeof xml);
                strncat(all, xml, sizeof all - strlen(all) - 1);
                strncat(all, "</member>", sizeof all - strlen(all) - 1);
            }
        strncat(all, "</InstanceProfiles><IsTruncated>false</IsTruncated>",
                sizeof all - strlen(all) - 1);
        answer(c, action, all);
    } else if (strcmp(action, "CreateInstanceProfile") == 0 && f->n < 8) {
        f->creates++;
        param(r, "Path", path, sizeof path);
        snprintf(f->name[f->n], sizeof f->name[0], "%s", name);
        snprintf(f->path[f->n], sizeof f->path[0], "%s", path);
        f->role[f->n][0] = 0;
        profile_xml(f, f->n++, xml, sizeof xml);
        char res[4200];
        snprintf(res, sizeof res, "<InstanceProfile>%s</InstanceProfile>", xml);
        answer(c, action, res);
    } else if (strcmp(action, "AddRoleToInstanceProfile") == 0) {
        f->adds++;
        if (i == f->n)
            no_such(c, "Instance Profile");
        else if (!f->role_exists)
            no_such(c, "The role with name NodeRole");
        else {
            snprintf(f->role[i], sizeof f->role[0], "%s", role);
            answer(c, action, NULL);
        }
    } else if (strcmp(action, "GetInstanceProfile") == 0 && i < f->n) {
        profile_xml(f, i, xml, sizeof xml);
        char res[4200];
        snprintf(res, sizeof res, "<InstanceProfile>%s</InstanceProfile>", xml);
        answer(c, action, res);
    } else if (strcmp(action, "DeleteInstanceProfile") == 0) {
        f->deletes++;
        answer(c, action, NULL);
    } else
        no_such(c, "Instance Profile");
    pthread_mutex_unlock(&f->mu);
}

START_TEST(missing_role_makes_one_profile)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    iam_t f;
    memset(&f, 0, sizeof f);
    pthread_mutex_init(&f.mu, NULL);
    fake_srv_t *srv = fake_srv_start(handler, &f);
    setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "secret", 1);
    setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
    nw_awscfg_t cfg;
    memset(&cfg, 0, sizeof cfg);
    snprintf(cfg.region, sizeof cfg.region, "us-west-2");
    snprintf(cfg.iam, sizeof cfg.iam, "http://127.0.0.1:%d", fake_srv_port(srv));
    snprintf(cfg.sts, sizeof cfg.sts, "http://127.0.0.1:9");
    snprintf(cfg.imds, sizeof cfg.imds, "http://127.0.0.1:9");
    cfg.imds_disabled = 1;
    cfg.call_timeout_ms = 5000;
    nw_creds_t *creds = NULL;
    nw_ec2_t *iam = NULL;
    nw_err_t err = {0};
    ck_assert_msg(nw_creds_new(&cfg, NULL, &creds, &err) == NW_OK, "%s", err.msg);
    ck_assert_msg(nw_iam_new(&cfg, creds, NULL, &iam, &err) == NW_OK, "%s", err.msg);
    cJSON *nc = cJSON_Parse("{\"metadata\":{\"name\":\"default\",\"uid\":\"u-1\"},\"spec\":"
                            "{\"role\":\"NodeRole\"}}");
    char prof[129];
    /* the role is missing: one profile made, kept without its role; the error names the role */
    for (int i = 0; i < 3; i++) {
        nw_err_clear(&err);
        ck_assert_int_ne(nw_iam_ensure_profile(iam, "us-west-2", "c1", nc, prof, sizeof prof, &err),
                         NW_OK);
        ck_assert_msg(strstr(err.msg, "the role NodeRole does not exist"), "%s", err.msg);
    }
    ck_assert_int_eq(f.creates, 1);
    ck_assert_int_eq(f.deletes, 0);
    ck_assert_int_eq(f.adds, 3);
    ck_assert_int_eq(f.n, 1);
    ck_assert_str_eq(f.path[0], "/karpenter/us-west-2/c1/u-1/");
    /* the role appears: the same profile gets it */
    f.role_exists = 1;
    nw_err_clear(&err);
    ck_assert_msg(nw_iam_ensure_profile(iam, "us-west-2", "c1", nc, prof, sizeof prof, &err) ==
                      NW_OK,
                  "%s", err.msg);
    ck_assert_str_eq(prof, f.name[0]);
    ck_assert_str_eq(f.role[0], "NodeRole");
    ck_assert_int_eq(f.creates, 1);
    ck_assert_int_eq(f.deletes, 0);
    /* and is found again without a call but the list */
    int adds = f.adds;
    ck_assert_int_eq(nw_iam_ensure_profile(iam, "us-west-2", "c1", nc, prof, sizeof prof, &err),
                     NW_OK);
    ck_assert_int_eq(f.adds, adds);
    cJSON_Delete(nc);
    nw_ec2_free(iam);
    nw_creds_free(creds);
    fake_srv_stop(srv);
    pthread_mutex_destroy(&f.mu);
    unsetenv("AWS_ACCESS_KEY_ID");
    unsetenv("AWS_SECRET_ACCESS_KEY");
}
END_TEST

Suite *nw_iam_suite(void)
{
    Suite *s = suite_create("iam");
    TCase *tc = tcase_create("profiles");
    tcase_add_test(tc, missing_role_makes_one_profile);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}
