/*
 * cli/cmd_check.c — `nodewarden check [--output text|json] [--print-defaulted] FILE...`
 *
 * Offline admission: every document of every file (YAML streams or JSON, `-` for
 * stdin) goes through exactly the webhook's path — the registered mutate handler,
 * its patch applied, then the validate handler — as a CREATE. Objects whose kind
 * has a handler in nw_handlers[] (admission/handlers.c) are checked, so a Pod handler
 * (GPU policy) registered there is picked up here without changes; other kinds are
 * skipped with a note.
 *
 * Output (text): one line per error on stdout, `FILE:DOC: Kind/name: field: message`
 * (DOC = 1-based document index); warnings and notes on stderr. With
 * --print-defaulted the defaulted objects are written to stdout as YAML and the
 * error lines go to stderr. --output json prints one JSON array of results.
 * Exit: 0 all valid, 1 some invalid, 2 usage, read or parse error.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "admission/handlers.h"
#include "api/admit.h"
#include "api/jsonpatch.h"
#include "common/buf.h"
#include "common/file.h"
#include "common/yaml.h"
#include "cli/cmd.h"
#include "config/config.h"
#include "admission/gpu_policy.h"

#define CHECK_MAX_FILE ((size_t)64 << 20)

typedef struct {
    bool json;
    bool print_defaulted;
    bool io_error;
    int invalid, checked, skipped;
    cJSON *results; /* --output json */
    int ndefaulted;
    const nw_admit_ctx_t *ctx; /* GPU policy for NodePools and Pods */
} check_t;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: nodewarden check [--output text|json] [--print-defaulted]\n"
            "                        [--config FILE] [--gpu-policy enforce|warn|off] FILE...\n"
            "\n"
            "Validate and default Karpenter NodePool (karpenter.sh/v1) and EC2NodeClass\n"
            "(karpenter.k8s.aws/v1) manifests exactly as the admission webhook does,\n"
            "including the GPU isolation policy for NodePools and Pods.\n"
            "FILE may be YAML (several documents) or JSON; '-' reads standard input.\n"
            "\n"
            "  -o, --output FORMAT     text (default): FILE:DOC: Kind/name: field: message\n"
            "                          json: one JSON array with a result per object\n"
            "  -d, --print-defaulted   print the defaulted objects as YAML on stdout\n"
            "                          (error lines then go to stderr)\n"
            "  -c, --config FILE       take the GPU policy from this config file's gpu: block\n"
            "  -g, --gpu-policy MODE   enforce (default), warn (denials become warnings) or off\n"
            "  -h, --help              this help\n"
            "\n"
            "Exit status: 0 all valid, 1 some object invalid, 2 usage, read or parse error.\n");
}

static char *read_all(FILE *f, size_t *len, const char *name)
{
    char *s = nw_file_read_stream(f, CHECK_MAX_FILE, len);
    if (!s && errno == EFBIG)
        fprintf(stderr, "%s: larger than %zu MiB\n", name, CHECK_MAX_FILE >> 20);
    else if (!s)
        fprintf(stderr, "%s: read error: %s\n", name, strerror(errno));
    return s;
}

static const char *str_at(const cJSON *o, const char *a, const char *b)
{
    const cJSON *v = nw_json_get(o, a);
    if (b)
        v = nw_json_get(v, b);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static cJSON *result_new(check_t *c, const char *file, size_t doc, size_t line, const char *kind,
                         const char *api, const char *name)
{
    if (!c->json)
        return NULL;
    cJSON *r = nw_json_new_object();
    if (!r)
        return NULL;
    nw_json_add_string(r, "file", file);
    nw_json_add_number(r, "doc", (double)doc);
    nw_json_add_number(r, "line", (double)line);
    if (kind)
        nw_json_add_string(r, "kind", kind);
    if (api)
        nw_json_add_string(r, "apiVersion", api);
    if (name)
        nw_json_add_string(r, "name", name);
    nw_json_push(c->results, r);
    return r;
}

static void note_skip(check_t *c, const char *file, size_t doc, size_t line, const char *kind,
                      const char *api, const char *name, const char *why)
{
    c->skipped++;
    cJSON *r = result_new(c, file, doc, line, kind, api, name);
    if (r)
        nw_json_add_string(r, "skipped", why);
    else if (!c->json)
        fprintf(stderr, "%s:%zu: %s%s%s%sskipped: %s\n", file, doc, kind ? kind : "",
                name ? "/" : "", name ? name : "", kind ? ": " : "", why);
}

/* Check one object (borrowed). */
/* The object being checked, as the output names it. */
typedef struct {
    const char *file, *api, *kind, *name;
    size_t doc;
    char group[256];
    const char *version;
    cJSON *r;   /* its JSON result (NULL: text output) */
    FILE *errf; /* where the text output's problems go */
} subject_t;

/* A karpenter.sh or karpenter.k8s.aws object of another version than v1: invalid. */
static void reject_version(check_t *c, const subject_t *s)
{
    /* the v1 CRDs serve only v1 */
    c->invalid++;
    char msg[600];
    snprintf(msg, sizeof msg,
             "no matches for kind \"%.60s\" in version \"%.100s\" (only %s/v1 is served)", s->kind,
             s->api, s->group);
    if (s->r) {
        nw_json_add_bool(s->r, "valid", 0);
        cJSON *errs = nw_json_add_array(s->r, "errors");
        cJSON *e = nw_json_new_object();
        nw_json_add_string(e, "field", "apiVersion");
        nw_json_add_string(e, "message", msg);
        nw_json_push(errs, e);
    } else {
        fprintf(s->errf, "%s:%zu: %s/%s: apiVersion: %s\n", s->file, s->doc, s->kind, s->name, msg);
    }
}

/* Admit obj as a CREATE through h: mutate (its patch applied to *defaulted, a copy of
 * obj), then validate the defaulted object into *res. */
static NW_MUST_USE nw_rc_t admit(const check_t *c, const subject_t *s, const nw_admit_handler_t *h,
                                 const cJSON *obj, cJSON **defaulted, nw_admit_result_t *res,
                                 nw_err_t *err)
{
    nw_admit_ctx_t ctx = {.gpu = NULL, .self_namespace = ""};
    if (c->ctx)
        ctx = *c->ctx;
    nw_admit_req_t req = {0};
    req.op = NW_OP_CREATE;
    req.uid = "check";
    req.group = s->group;
    req.version = s->version;
    req.kind = s->kind;
    req.resource = "";
    req.subresource = "";
    req.name = s->name;
    req.namespace_ =
        str_at(obj, "metadata", "namespace") ? str_at(obj, "metadata", "namespace") : "";
    req.object = obj;
    *defaulted = nw_json_dup(obj);
    nw_rc_t rc = *defaulted ? NW_OK : NW_ENOMEM;
    if (rc == NW_OK && h->mutate) {
        rc = h->mutate(&ctx, &req, res);
        if (rc == NW_OK && res->patch)
            rc = nw_jsonpatch_apply_text(defaulted, res->patch, err);
        nw_admit_result_cleanup(res);
    }
    if (rc == NW_OK && h->validate) {
        req.object = *defaulted;
        rc = h->validate(&ctx, &req, res);
    }
    return rc;
}

/* The verdict into the object's JSON result r. */
static void report_json(const check_t *c, cJSON *r, const nw_admit_result_t *res,
                        const cJSON *causes, const cJSON *defaulted)
{
    nw_json_add_bool(r, "valid", res->allowed);
    cJSON *errs = nw_json_add_array(r, "errors");
    if (causes) {
        for (const cJSON *e = causes->child; e; e = e->next)
            nw_json_push(errs, nw_json_dup(e));
    } else if (!res->allowed) {
        cJSON *e = nw_json_new_object();
        nw_json_add_string(e, "field", "");
        nw_json_add_string(e, "message", res->message ? res->message : "denied");
        nw_json_push(errs, e);
    }
    if (!res->allowed && res->message)
        nw_json_add_string(r, "message", res->message);
    cJSON *w = nw_json_add_array(r, "warnings");
    for (size_t i = 0; i < res->nwarnings; i++)
        nw_json_push(w, nw_json_new_string(res->warnings[i]));
    if (c->print_defaulted)
        nw_json_add_item(r, "defaulted", nw_json_dup(defaulted));
}

/* The verdict as text: the problems, the warnings and, with --print-defaulted, the
 * defaulted object as YAML. */
static void report_text(check_t *c, const subject_t *s, const nw_admit_result_t *res,
                        const cJSON *causes, const cJSON *defaulted)
{
    if (causes) {
        for (const cJSON *e = causes->child; e; e = e->next)
            fprintf(s->errf, "%s:%zu: %s/%s: %s: %s\n", s->file, s->doc, s->kind, s->name,
                    str_at(e, "field", NULL) ? str_at(e, "field", NULL) : "",
                    str_at(e, "message", NULL) ? str_at(e, "message", NULL) : "");
    } else if (!res->allowed) {
        fprintf(s->errf, "%s:%zu: %s/%s: %s\n", s->file, s->doc, s->kind, s->name,
                res->message ? res->message : "denied");
    }
    for (size_t i = 0; i < res->nwarnings; i++)
        fprintf(stderr, "%s:%zu: %s/%s: warning: %s\n", s->file, s->doc, s->kind, s->name,
                res->warnings[i]);
    if (c->print_defaulted) {
        char *y = NULL;
        nw_err_t err = {0};
        if (nw_yaml_emit(defaulted, &y, NULL, &err) == NW_OK) {
            printf("%s%s", c->ndefaulted++ ? "---\n" : "", y);
            free(y);
        }
    }
}

static void check_object(check_t *c, const char *file, size_t doc, size_t line, const cJSON *obj)
{
    subject_t s = {.file = file, .doc = doc, .group = ""};
    s.api = str_at(obj, "apiVersion", NULL);
    s.kind = str_at(obj, "kind", NULL);
    s.name = str_at(obj, "metadata", "name");
    if (!s.name)
        s.name = str_at(obj, "metadata", "generateName");
    if (!s.name)
        s.name = "";
    if (!s.api || !s.kind) {
        note_skip(c, file, doc, line, s.kind, s.api, NULL, "no apiVersion/kind");
        return;
    }
    s.version = s.api;
    const char *slash = strchr(s.api, '/');
    if (slash) {
        snprintf(s.group, sizeof s.group, "%.*s", (int)(slash - s.api), s.api);
        s.version = slash + 1;
    }
    const nw_admit_handler_t *h = nw_handlers_find(s.group, s.kind);
    if (!h) {
        char why[300];
        snprintf(why, sizeof why, "no admission rules for %.100s %.100s", s.api, s.kind);
        note_skip(c, file, doc, line, s.kind, s.api, s.name, why);
        return;
    }
    c->checked++;
    s.r = result_new(c, file, doc, line, s.kind, s.api, s.name);
    s.errf = c->print_defaulted ? stderr : stdout;
    if (strcmp(s.version, "v1") != 0 &&
        (strcmp(s.group, "karpenter.sh") == 0 || strcmp(s.group, "karpenter.k8s.aws") == 0)) {
        reject_version(c, &s);
        return;
    }
    nw_admit_result_t res;
    nw_admit_result_init(&res);
    cJSON *defaulted = NULL;
    nw_err_t err = {0};
    nw_rc_t rc = admit(c, &s, h, obj, &defaulted, &res, &err);
    if (rc != NW_OK) {
        fprintf(stderr, "%s:%zu: %s/%s: internal error: %s %s\n", file, doc, s.kind, s.name,
                nw_err_rc_str(rc), err.msg);
        c->io_error = true;
        nw_admit_result_cleanup(&res);
        cJSON_Delete(defaulted);
        return;
    }
    if (!res.allowed)
        c->invalid++;
    const cJSON *causes = res.details ? nw_json_get(res.details, "causes") : NULL;
    if (s.r)
        report_json(c, s.r, &res, causes, defaulted);
    else
        report_text(c, &s, &res, causes, defaulted);
    nw_admit_result_cleanup(&res);
    cJSON_Delete(defaulted);
}

static void check_doc(check_t *c, const char *file, size_t doc, size_t line, const cJSON *d)
{
    if (cJSON_IsNull(d))
        return; /* empty document, as kubectl skips it */
    if (!cJSON_IsObject(d)) {
        note_skip(c, file, doc, line, NULL, NULL, NULL, "not an object");
        return;
    }
    const char *kind = str_at(d, "kind", NULL);
    const cJSON *items = nw_json_get(d, "items");
    if (kind && strlen(kind) >= 4 && strcmp(kind + strlen(kind) - 4, "List") == 0 &&
        cJSON_IsArray(items)) {
        for (const cJSON *it = items->child; it; it = it->next)
            if (cJSON_IsObject(it))
                check_object(c, file, doc, line, it);
        return;
    }
    check_object(c, file, doc, line, d);
}

static void check_file(check_t *c, const char *path)
{
    const char *name = strcmp(path, "-") == 0 ? "<stdin>" : path;
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "%s: %s\n", name, strerror(errno));
        c->io_error = true;
        return;
    }
    size_t len = 0;
    char *text = read_all(f, &len, name);
    if (f != stdin)
        fclose(f);
    if (!text) {
        c->io_error = true;
        return;
    }
    cJSON **docs = NULL;
    size_t *lines = NULL, n = 0;
    nw_err_t err = {0};
    if (nw_yaml_load_docs_lines(text, len, &docs, &lines, &n, &err) != NW_OK) {
        fprintf(stderr, "%s: %s\n", name, err.msg);
        c->io_error = true;
        if (c->json) {
            cJSON *r = nw_json_new_object();
            nw_json_add_string(r, "file", name);
            nw_json_add_string(r, "error", err.msg);
            nw_json_push(c->results, r);
        }
        free(text);
        return;
    }
    for (size_t i = 0; i < n; i++)
        check_doc(c, name, i + 1, lines[i], docs[i]);
    nw_yaml_docs_free(docs, n);
    free(lines);
    free(text);
}

/* Pre-pass: copy the EC2NodeClass documents of a file into out (errors are left to
 * the main pass, which reports them). */
static void collect_nodeclasses(const char *path, cJSON *out)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return;
    size_t len = 0;
    char *text = read_all(f, &len, path);
    fclose(f);
    if (!text)
        return;
    cJSON **docs = NULL;
    size_t *lines = NULL, n = 0;
    nw_err_t err = {0};
    if (nw_yaml_load_docs_lines(text, len, &docs, &lines, &n, &err) == NW_OK) {
        for (size_t i = 0; i < n; i++) {
            const char *kind = str_at(docs[i], "kind", NULL);
            const char *api = str_at(docs[i], "apiVersion", NULL);
            bool dra =
                kind && api && strncmp(api, "resource.k8s.io/", 16) == 0 &&
                (strcmp(kind, "ResourceClaim") == 0 || strcmp(kind, "ResourceClaimTemplate") == 0 ||
                 strcmp(kind, "DeviceClass") == 0);
            if ((kind && api && strcmp(kind, "EC2NodeClass") == 0 &&
                 strncmp(api, "karpenter.k8s.aws/", 18) == 0) ||
                dra)
                nw_json_push(out, nw_json_dup(docs[i]));
        }
        nw_yaml_docs_free(docs, n);
        free(lines);
    }
    free(text);
}

int nw_cmd_check(int argc, char **argv)
{
    check_t c = {0};
    static const struct option opts[] = {
        {"output", required_argument, NULL, 'o'}, {"print-defaulted", no_argument, NULL, 'd'},
        {"config", required_argument, NULL, 'c'}, {"gpu-policy", required_argument, NULL, 'g'},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0},
    };
    const char *config_path = NULL, *gpu_mode = NULL;
    optind = 1;
    int ch;
    while ((ch = getopt_long(argc, argv, "+o:dc:g:h", opts, NULL)) != -1) {
        switch (ch) {
        case 'o':
            if (strcmp(optarg, "json") == 0)
                c.json = true;
            else if (strcmp(optarg, "text") != 0) {
                fprintf(stderr, "nodewarden check: --output must be text or json\n");
                return NW_EXIT_USAGE;
            }
            break;
        case 'd':
            c.print_defaulted = true;
            break;
        case 'c':
            config_path = optarg;
            break;
        case 'g':
            if (strcmp(optarg, "enforce") && strcmp(optarg, "warn") && strcmp(optarg, "off")) {
                fprintf(stderr, "nodewarden check: --gpu-policy must be enforce, warn or off\n");
                return NW_EXIT_USAGE;
            }
            gpu_mode = optarg;
            break;
        case 'h':
            usage(stdout);
            return NW_EXIT_OK;
        default:
            usage(stderr);
            return NW_EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "nodewarden check: no input files\n");
        usage(stderr);
        return NW_EXIT_USAGE;
    }
    /* the GPU policy: defaults, the config file's gpu: block, then --gpu-policy */
    nw_config_t cfg;
    nw_gpu_policy_t gpu;
    nw_err_t cerr = {0};
    if (nw_config_defaults(&cfg) != NW_OK ||
        (config_path && nw_config_apply_file(&cfg, config_path, &cerr) != NW_OK) ||
        (gpu_mode && strcmp(gpu_mode, "off") == 0 &&
         nw_config_set(&cfg, "gpu.enabled", "false", &cerr) != NW_OK) ||
        (gpu_mode && strcmp(gpu_mode, "off") != 0 &&
         nw_config_set(&cfg, "gpu.mode", gpu_mode, &cerr) != NW_OK) ||
        nw_gpu_policy_from_config(&cfg, "", &gpu, &cerr) != NW_OK) {
        fprintf(stderr, "nodewarden check: %s\n", cerr.msg[0] ? cerr.msg : "out of memory");
        nw_config_free(&cfg);
        return NW_EXIT_USAGE;
    }
    nw_config_free(&cfg);
    /* cross-object checks see the EC2NodeClasses and the DRA claims, claim templates and
     * DeviceClasses of every named file (not stdin) */
    cJSON *nodeclasses = nw_json_new_array();
    for (int i = optind; i < argc && nodeclasses; i++)
        if (strcmp(argv[i], "-") != 0)
            collect_nodeclasses(argv[i], nodeclasses);
    nw_admit_ctx_t actx = {
        .gpu = &gpu, .self_namespace = "", .lookup = nw_admit_lookup_in, .lookup_arg = nodeclasses};
    c.ctx = &actx;
    if (c.json && !(c.results = nw_json_new_array())) {
        nw_gpu_policy_cleanup(&gpu);
        return NW_EXIT_USAGE;
    }
    for (int i = optind; i < argc; i++)
        check_file(&c, argv[i]);
    if (c.json) {
        char *s = nw_json_print_pretty(c.results);
        if (s)
            printf("%s\n", s);
        free(s);
        cJSON_Delete(c.results);
    } else {
        fprintf(stderr, "check: %d object%s checked, %d invalid, %d skipped\n", c.checked,
                c.checked == 1 ? "" : "s", c.invalid, c.skipped);
    }
    fflush(stdout);
    nw_gpu_policy_cleanup(&gpu);
    cJSON_Delete(nodeclasses);
    if (c.io_error)
        return NW_EXIT_USAGE;
    return c.invalid ? NW_EXIT_FAIL : NW_EXIT_OK;
}
