/*
 * api/labels.c — label key/value validation (Kubernetes' exact messages) and
 * the sorted label set. See labels.h.
 *
 * Messages follow k8s.io/apimachinery/pkg/util/validation: RegexError() writes
 * "msg (e.g. 'a',  or 'b',  or 'c', regex used for validation is 'fmt')" — the
 * doubled space is Kubernetes' own.
 */
#include "api/labels.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"

#define NAME_FMT "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
#define NAME_ERR                                                                                   \
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "    \
    "alphanumeric character"
#define NAME_EXAMPLES "(e.g. 'MyName',  or 'my.name',  or '123-abc', "
#define DNS_LABEL_FMT "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
#define DNS_SUB_FMT DNS_LABEL_FMT "(\\." DNS_LABEL_FMT ")*"
#define DNS_SUB_ERR                                                                                \
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "   \
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "  \
    "for validation is '" DNS_SUB_FMT "')"
#define DNS_LABEL_ERR                                                                              \
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "   \
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "     \
    "used for validation is '" DNS_LABEL_FMT "')"

static const char MSG_QNAME_SLASHES[] =
    "a qualified name " NAME_ERR " " NAME_EXAMPLES "regex used for validation is '" NAME_FMT
    "') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')";
static const char MSG_PREFIX_EMPTY[] = "prefix part must be non-empty";
static const char MSG_PREFIX_LEN[] = "prefix part must be no more than 253 characters";
static const char MSG_PREFIX_REGEX[] = "prefix part " DNS_SUB_ERR;
static const char MSG_NAME_EMPTY[] = "name part must be non-empty";
static const char MSG_NAME_LEN[] = "name part must be no more than 63 characters";
static const char MSG_NAME_REGEX[] =
    "name part " NAME_ERR " " NAME_EXAMPLES "regex used for validation is '" NAME_FMT "')";
static const char MSG_VALUE_LEN[] = "must be no more than 63 characters";
static const char MSG_VALUE_REGEX[] =
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is '(" NAME_FMT ")?')";
static const char MSG_SUB_LEN[] = "must be no more than 253 characters";
static const char MSG_SUB_REGEX[] = DNS_SUB_ERR;
static const char MSG_DNSLABEL_LEN[] = "must be no more than 63 characters";
static const char MSG_DNSLABEL_DOTS[] = "must not contain dots";
static const char MSG_DNSLABEL_REGEX[] = DNS_LABEL_ERR;

static void add(nw_labels_msgs_t *m, const char *msg)
{
    if (m && m->n < NW_LABELS_MSGS_MAX)
        m->v[m->n++] = msg;
}

static bool is_alnum(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static bool is_lower_alnum(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9] over s[0..n) */
static bool match_name(const char *s, size_t n)
{
    if (n == 0 || !is_alnum((unsigned char)s[0]) || !is_alnum((unsigned char)s[n - 1]))
        return false;
    for (size_t i = 1; i + 1 < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!is_alnum(c) && c != '-' && c != '_' && c != '.')
            return false;
    }
    return true;
}

/* [a-z0-9]([-a-z0-9]*[a-z0-9])? over s[0..n) */
static bool match_dns_label(const char *s, size_t n)
{
    if (n == 0 || !is_lower_alnum((unsigned char)s[0]) || !is_lower_alnum((unsigned char)s[n - 1]))
        return false;
    for (size_t i = 1; i + 1 < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!is_lower_alnum(c) && c != '-')
            return false;
    }
    return true;
}

/* DNS labels joined by single dots */
static bool match_dns_subdomain(const char *s, size_t n)
{
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || s[i] == '.') {
            if (!match_dns_label(s + start, i - start))
                return false;
            start = i + 1;
        }
    }
    return true;
}

bool nw_labels_key_valid(const char *s, nw_labels_msgs_t *msgs)
{
    if (msgs)
        msgs->n = 0;
    size_t len = strlen(s);
    const char *slash = memchr(s, '/', len);
    const char *name = s;
    size_t nlen = len;
    bool bad = false;
    if (slash) {
        if (memchr(slash + 1, '/', len - (size_t)(slash + 1 - s))) {
            add(msgs, MSG_QNAME_SLASHES);
            return false;
        }
        size_t plen = (size_t)(slash - s);
        if (plen == 0) {
            add(msgs, MSG_PREFIX_EMPTY);
            bad = true;
        } else {
            if (plen > NW_LABELS_PREFIX_MAX) {
                add(msgs, MSG_PREFIX_LEN);
                bad = true;
            }
            if (!match_dns_subdomain(s, plen)) {
                add(msgs, MSG_PREFIX_REGEX);
                bad = true;
            }
        }
        name = slash + 1;
        nlen = len - plen - 1;
    }
    if (nlen == 0) {
        add(msgs, MSG_NAME_EMPTY);
        bad = true;
    } else if (nlen > NW_LABELS_NAME_MAX) {
        add(msgs, MSG_NAME_LEN);
        bad = true;
    }
    if (!match_name(name, nlen)) {
        add(msgs, MSG_NAME_REGEX);
        bad = true;
    }
    return !bad;
}

bool nw_labels_value_valid(const char *s, nw_labels_msgs_t *msgs)
{
    if (msgs)
        msgs->n = 0;
    size_t len = strlen(s);
    bool bad = false;
    if (len > NW_LABELS_NAME_MAX) {
        add(msgs, MSG_VALUE_LEN);
        bad = true;
    }
    if (len > 0 && !match_name(s, len)) {
        add(msgs, MSG_VALUE_REGEX);
        bad = true;
    }
    return !bad;
}

bool nw_labels_dns1123_subdomain_valid(const char *s, nw_labels_msgs_t *msgs)
{
    if (msgs)
        msgs->n = 0;
    size_t len = strlen(s);
    bool bad = false;
    if (len > NW_LABELS_PREFIX_MAX) {
        add(msgs, MSG_SUB_LEN);
        bad = true;
    }
    if (!match_dns_subdomain(s, len)) {
        add(msgs, MSG_SUB_REGEX);
        bad = true;
    }
    return !bad;
}

bool nw_labels_dns1123_label_valid(const char *s, nw_labels_msgs_t *msgs)
{
    if (msgs)
        msgs->n = 0;
    size_t len = strlen(s);
    bool bad = false;
    if (len > NW_LABELS_DNS_LABEL_MAX) {
        add(msgs, MSG_DNSLABEL_LEN);
        bad = true;
    }
    if (!match_dns_label(s, len)) {
        /* Kubernetes: a valid subdomain that is not a valid label must have dots */
        add(msgs, match_dns_subdomain(s, len) ? MSG_DNSLABEL_DOTS : MSG_DNSLABEL_REGEX);
        bad = true;
    }
    return !bad;
}

size_t nw_labels_msgs_join(const nw_labels_msgs_t *msgs, const char *sep, char *buf, size_t n)
{
    size_t total = 0;
    size_t seplen = strlen(sep);
    if (n)
        buf[0] = '\0';
    for (size_t i = 0; msgs && i < msgs->n; i++) {
        const char *parts[2] = {i ? sep : "", msgs->v[i]};
        size_t lens[2] = {i ? seplen : 0, strlen(msgs->v[i])};
        for (int k = 0; k < 2; k++) {
            if (n && total < n - 1) {
                size_t room = n - 1 - total;
                size_t c = lens[k] < room ? lens[k] : room;
                memcpy(buf + total, parts[k], c);
                buf[total + c] = '\0';
            }
            total += lens[k];
        }
    }
    return total;
}

size_t nw_labels_domain(const char *key, char *buf, size_t n)
{
    const char *slash = strchr(key, '/');
    size_t len = slash ? (size_t)(slash - key) : 0;
    if (n) {
        size_t c = len < n - 1 ? len : n - 1;
        memcpy(buf, key, c);
        buf[c] = '\0';
    }
    return len;
}

/* ---- label set ------------------------------------------------------------ */

void nw_labels_init(nw_labels_t *l)
{
    l->v = NULL;
    l->n = l->cap = 0;
}

void nw_labels_cleanup(nw_labels_t *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].key);
        free(l->v[i].value);
    }
    free(l->v);
    nw_labels_init(l);
}

/* index of key, or -(insertion point)-1 */
static ptrdiff_t find(const nw_labels_t *l, const char *key)
{
    size_t lo = 0, hi = l->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(l->v[mid].key, key);
        if (c == 0)
            return (ptrdiff_t)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -(ptrdiff_t)lo - 1;
}

nw_rc_t nw_labels_set(nw_labels_t *l, const char *key, const char *value)
{
    ptrdiff_t i = find(l, key);
    char *v = strdup(value);
    if (!v)
        return NW_ENOMEM;
    if (i >= 0) {
        free(l->v[i].value);
        l->v[i].value = v;
        return NW_OK;
    }
    char *k = strdup(key);
    if (!k) {
        free(v);
        return NW_ENOMEM;
    }
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        nw_label_t *nv = realloc(l->v, cap * sizeof *nv);
        if (!nv) {
            free(k);
            free(v);
            return NW_ENOMEM;
        }
        l->v = nv;
        l->cap = cap;
    }
    size_t at = (size_t)(-i - 1);
    memmove(l->v + at + 1, l->v + at, (l->n - at) * sizeof *l->v);
    l->v[at].key = k;
    l->v[at].value = v;
    l->n++;
    return NW_OK;
}

const char *nw_labels_get(const nw_labels_t *l, const char *key)
{
    ptrdiff_t i = find(l, key);
    return i >= 0 ? l->v[i].value : NULL;
}

bool nw_labels_remove(nw_labels_t *l, const char *key)
{
    ptrdiff_t i = find(l, key);
    if (i < 0)
        return false;
    free(l->v[i].key);
    free(l->v[i].value);
    memmove(l->v + i, l->v + i + 1, (l->n - (size_t)i - 1) * sizeof *l->v);
    l->n--;
    return true;
}

nw_rc_t nw_labels_copy(nw_labels_t *dst, const nw_labels_t *src)
{
    nw_labels_cleanup(dst);
    if (src->n == 0)
        return NW_OK;
    dst->v = calloc(src->n, sizeof *dst->v);
    if (!dst->v)
        return NW_ENOMEM;
    dst->cap = src->n;
    for (size_t i = 0; i < src->n; i++) {
        dst->v[i].key = strdup(src->v[i].key);
        dst->v[i].value = strdup(src->v[i].value);
        dst->n++;
        if (!dst->v[i].key || !dst->v[i].value) {
            nw_labels_cleanup(dst);
            return NW_ENOMEM;
        }
    }
    return NW_OK;
}

nw_rc_t nw_labels_parse(const cJSON *obj, const char *path, nw_labels_t *l, nw_err_t *err)
{
    nw_labels_init(l);
    if (!path)
        path = "";
    if (!obj || cJSON_IsNull(obj))
        return NW_OK;
    if (!cJSON_IsObject(obj))
        return nw_err_set(err, NW_EINVAL, path, "Invalid value: \"%s\": %s must be of type object",
                          nw_json_type_name(obj), path);
    for (const cJSON *it = obj->child; it; it = it->next) {
        char p[128];
        snprintf(p, sizeof p, "%s[%s]", path, it->string ? it->string : "");
        if (!cJSON_IsString(it) || !it->valuestring) {
            nw_labels_cleanup(l);
            return nw_err_set(err, NW_EINVAL, p, "Invalid value: \"%s\": must be of type string",
                              nw_json_type_name(it));
        }
        nw_rc_t rc = nw_labels_set(l, it->string ? it->string : "", it->valuestring);
        if (rc != NW_OK) {
            nw_labels_cleanup(l);
            return nw_err_set(err, rc, p, "out of memory");
        }
    }
    return NW_OK;
}
