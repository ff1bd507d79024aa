/* api/kre.c — Karpenter CRD patterns: RE2 text and POSIX translation. */
#include "api/kre.h"

#include <pthread.h>
#include <string.h>

#define QUANTITY_RE2                                                                               \
    "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+("   \
    "\\.[0-9]*)?)|(\\.[0-9]+))))?$"
#define QUANTITY_BODY                                                                              \
    "(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\." \
    "[0-9]*)?)|(\\.[0-9]+))))?"
#define NOT_NL "[^\n]"
#define RE2_SPACE "[\t\n\f\r ]"

/* ---- direct matchers ---------------------------------------------------------------
 * Each decides exactly what its pattern's POSIX translation below decides (byte-wise,
 * C locale), without a regex engine: the admission path checks a pattern for every
 * key, value and duration of every object, and regexec was a tenth of its cost. */

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_lower_alnum(char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'z');
}

static bool is_alnum(char c)
{
    return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

/* [0-9]+ at *p: advance past it; false when there is no digit */
static bool digits(const char **p)
{
    const char *s = *p;
    while (is_digit(*s))
        s++;
    if (s == *p)
        return false;
    *p = s;
    return true;
}

/* ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9] over [s, e): non-empty, alphanumeric at
 * both ends, [-A-Za-z0-9_.] between */
static bool name_part(const char *s, const char *e)
{
    if (s >= e || !is_alnum(s[0]) || !is_alnum(e[-1]))
        return false;
    for (const char *p = s; p < e; p++)
        if (!is_alnum(*p) && *p != '-' && *p != '_' && *p != '.')
            return false;
    return true;
}

/* [a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)* over [s, e) */
static bool dns_prefix(const char *s, const char *e)
{
    const char *label = s;
    for (const char *p = s;; p++) {
        if (p == e || *p == '.') {
            if (p == label || !is_lower_alnum(label[0]) || !is_lower_alnum(p[-1]))
                return false;
            if (p == e)
                return true;
            label = p + 1;
        } else if (!is_lower_alnum(*p) && *p != '-') {
            return false;
        }
    }
}

static bool m_qname(const char *s)
{
    const char *e = s + strlen(s);
    const char *slash = strchr(s, '/');
    if (!slash)
        return name_part(s, e);
    return dns_prefix(s, slash) && name_part(slash + 1, e);
}

static bool m_label_value(const char *s)
{
    return !*s || name_part(s, s + strlen(s));
}

/* ([0-9]+(s|m|h))+ and nothing after it */
static bool m_dur(const char *s)
{
    if (!*s)
        return false;
    while (*s) {
        if (!digits(&s) || (*s != 's' && *s != 'm' && *s != 'h'))
            return false;
        s++;
    }
    return true;
}

static bool m_dur_never(const char *s)
{
    return strcmp(s, "Never") == 0 || m_dur(s);
}

/* (([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)? */
static bool m_budget_dur(const char *s)
{
    if (!digits(&s) || (*s != 'h' && *s != 'm'))
        return false;
    if (*s++ == 'h') {
        const char *t = s;
        if (digits(&t) && *t == 'm')
            s = t + 1;
    }
    return !*s || strcmp(s, "0s") == 0;
}

/* (100|[0-9]{1,2})%|[0-9]+ */
static bool m_budget_nodes(const char *s)
{
    const char *p = s;
    if (!digits(&p))
        return false;
    if (!*p)
        return true;
    size_t n = (size_t)(p - s);
    return strcmp(p, "%") == 0 && (n <= 2 || (n == 3 && strncmp(s, "100", 3) == 0));
}

/* (([0-9]+(\.[0-9]*)?)|(\.[0-9]+)) at *p */
static bool decimal(const char **p)
{
    const char *s = *p;
    if (digits(&s)) {
        if (*s == '.') {
            s++;
            while (is_digit(*s))
                s++;
        }
    } else if (*s == '.' && is_digit(s[1])) {
        s++;
        digits(&s);
    } else {
        return false;
    }
    *p = s;
    return true;
}

/* (\+|-)?decimal(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?decimal))? */
static bool m_quantity(const char *s)
{
    if (*s == '+' || *s == '-')
        s++;
    if (!decimal(&s))
        return false;
    if (!*s)
        return true;
    if (strchr("KMGTPE", *s) && s[1] == 'i' && !s[2])
        return true;
    if (strchr("numkMGTPE", *s) && !s[1])
        return true;
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '+' || *s == '-')
            s++;
        return decimal(&s) && !*s;
    }
    return false;
}

static bool m_group(const char *s)
{
    return !strchr(s, '/');
}

/* [a-zA-Z0-9]+@[^\n]+ */
static bool m_alias(const char *s)
{
    const char *p = s;
    while (is_alnum(*p))
        p++;
    return p > s && *p == '@' && p[1] && !strchr(p + 1, '\n');
}

/* unanchored <prefix>[0-9a-z]+: some occurrence of prefix followed by one of [0-9a-z] */
static bool contains_id(const char *s, const char *prefix)
{
    size_t n = strlen(prefix);
    for (const char *p = strstr(s, prefix); p; p = strstr(p + 1, prefix))
        if (is_lower_alnum(p[n]))
            return true;
    return false;
}

static bool m_ami_id(const char *s)
{
    return contains_id(s, "ami-");
}

static bool m_subnet_id(const char *s)
{
    return contains_id(s, "subnet-");
}

static bool m_sg_id(const char *s)
{
    return contains_id(s, "sg-");
}

/* ^<prefix>[0-9a-z]+$ */
static bool whole_id(const char *s, const char *prefix)
{
    size_t n = strlen(prefix);
    if (strncmp(s, prefix, n) != 0 || !s[n])
        return false;
    for (s += n; *s; s++)
        if (!is_lower_alnum(*s))
            return false;
    return true;
}

static bool m_cr_id(const char *s)
{
    return whole_id(s, "cr-");
}

static bool m_pg_id(const char *s)
{
    return whole_id(s, "pg-");
}

static bool m_owner_id(const char *s)
{
    const char *p = s;
    return digits(&p) && !*p && p - s == 12;
}

/* ^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\s(.+)\s(.+)\s(.+)\s(.+))$
 * with RE2's `.` (no newline) and `\s` ([\t\n\f\r ]). The alternation is not anchored
 * as a whole: the first branch is a prefix, the second a suffix of five non-empty
 * newline-free fields joined by single whitespace characters. The suffix is found by
 * running the five-field automaton from every position at once (a bit set of states,
 * one pass): linear in the length, where a backtracking regexec took seconds on a
 * 60,000-byte schedule. */
static bool m_cron(const char *s)
{
    static const char *const macros[] = {"@annually", "@yearly",   "@monthly", "@weekly",
                                         "@daily",    "@midnight", "@hourly"};
    for (size_t i = 0; i < sizeof macros / sizeof macros[0]; i++)
        if (strncmp(s, macros[i], strlen(macros[i])) == 0)
            return true;
    /* bit 2k: "need the first byte of field k+1" (k = 0..4); bit 2k+1: "inside field
     * k+1" (k = 0..4). A new attempt starts at every byte (bit 0). */
    unsigned st = 0;
    for (; *s; s++) {
        char c = *s;
        bool sp = c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r';
        unsigned in = st | 1u, out = 0;
        for (unsigned k = 0; k < 5; k++) {
            if ((in & (1u << (2 * k))) && c != '\n')
                out |= 1u << (2 * k + 1); /* first byte of field k+1 */
            if (in & (1u << (2 * k + 1))) {
                if (c != '\n')
                    out |= 1u << (2 * k + 1); /* more of field k+1 */
                if (sp && k < 4)
                    out |= 1u << (2 * (k + 1)); /* the separator after it */
            }
        }
        st = out;
    }
    return (st & (1u << 9)) != 0;
}

/* [0-9]{n} at *p */
static bool ndigits(const char **p, int n)
{
    for (int i = 0; i < n; i++)
        if (!is_digit((*p)[i]))
            return false;
    *p += n;
    return true;
}

/* RFC 3339 date-time as the OpenAPI format checks it:
 * [0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})
 */
static bool m_datetime(const char *s)
{
    if (!ndigits(&s, 4) || *s++ != '-' || !ndigits(&s, 2) || *s++ != '-' || !ndigits(&s, 2))
        return false;
    if (*s != 'T' && *s != 't' && *s != ' ')
        return false;
    s++;
    if (!ndigits(&s, 2) || *s++ != ':' || !ndigits(&s, 2) || *s++ != ':' || !ndigits(&s, 2))
        return false;
    if (*s == '.') {
        s++;
        if (!digits(&s))
            return false;
    }
    if ((*s == 'Z' || *s == 'z') && !s[1])
        return true;
    if (*s != '+' && *s != '-')
        return false;
    s++;
    return ndigits(&s, 2) && *s++ == ':' && ndigits(&s, 2) && !*s;
}

/* ((([0-9]{1,2}(\.[0-9]{1,2})?|100(\.0{1,2})?)%|quantity)?) */
static bool m_evict(const char *s)
{
    if (!*s || m_quantity(s))
        return true;
    const char *p = s;
    if (!digits(&p))
        return false;
    size_t n = (size_t)(p - s);
    bool hundred = n == 3 && strncmp(s, "100", 3) == 0;
    if (n > 2 && !hundred)
        return false;
    if (*p == '.') {
        const char *f = ++p;
        while (is_digit(*p))
            p++;
        size_t k = (size_t)(p - f);
        if (k < 1 || k > 2)
            return false;
        if (hundred && (f[0] != '0' || (k == 2 && f[1] != '0')))
            return false;
    }
    return strcmp(p, "%") == 0;
}

/* the decimal number in [s, e): no sign, no leading zero, at most 5 digits; -1 if not */
static long plain_number(const char *s, const char *e)
{
    if (s >= e || e - s > 5 || *s == '0')
        return -1;
    long v = 0;
    for (; s < e; s++) {
        if (!is_digit(*s))
            return -1;
        v = v * 10 + (*s - '0');
    }
    return v;
}

/* (1..59000)Gi | (1..64000)G | ([1-9]|[1-5][0-7]|58)?Ti | ([1-9]|[1-5][0-9]|6[0-3]|64)?T
 * (the Ti ranges are upstream's as written: 18, 19, 28, ... do not match) */
static bool m_volume_size(const char *s)
{
    size_t n = strlen(s);
    const char *e = s + n;
    if (n >= 2 && strcmp(e - 2, "Gi") == 0) {
        long v = plain_number(s, e - 2);
        return v >= 1 && v <= 59000;
    }
    if (n >= 2 && strcmp(e - 2, "Ti") == 0) {
        if (n == 2)
            return true;
        if (n == 3)
            return s[0] >= '1' && s[0] <= '9';
        return n == 4 && ((s[0] >= '1' && s[0] <= '5' && s[1] >= '0' && s[1] <= '7') ||
                          (s[0] == '5' && s[1] == '8'));
    }
    if (n >= 1 && e[-1] == 'G') {
        long v = plain_number(s, e - 1);
        return v >= 1 && v <= 64000;
    }
    if (n >= 1 && e[-1] == 'T') {
        if (n == 1)
            return true;
        long v = plain_number(s, e - 1);
        return v >= 1 && v <= 64;
    }
    return false;
}

static nw_kv_re_t table[NW_RE__COUNT] = {
    [NW_RE_QNAME] = {"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\\/"
                     "))?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$",
                     "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(/"
                     "))?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$",
                     {0},
                     0,
                     m_qname},
    [NW_RE_LABEL_VALUE] = {"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$",
                           "^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$",
                           {0},
                           0,
                           m_label_value},
    [NW_RE_DUR_NEVER] =
        {"^(([0-9]+(s|m|h))+|Never)$", "^(([0-9]+(s|m|h))+|Never)$", {0}, 0, m_dur_never},
    [NW_RE_DUR] = {"^([0-9]+(s|m|h))+$", "^([0-9]+(s|m|h))+$", {0}, 0, m_dur},
    [NW_RE_BUDGET_DUR] = {"^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$",
                          "^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$",
                          {0},
                          0,
                          m_budget_dur},
    /* top-level alternation is unanchored on purpose, as in the budget schedule pattern
     * of aws/karpenter-provider-aws pkg/apis/crds/karpenter.sh_nodepools.yaml */
    [NW_RE_CRON] = {"^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\\s(.+)\\s(.+)"
                    "\\s(.+)\\s(.+))$",
                    "^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((" NOT_NL
                    "+)" RE2_SPACE "(" NOT_NL "+)" RE2_SPACE "(" NOT_NL "+)" RE2_SPACE "(" NOT_NL
                    "+)" RE2_SPACE "(" NOT_NL "+))$",
                    {0},
                    0,
                    m_cron},
    [NW_RE_BUDGET_NODES] =
        {"^((100|[0-9]{1,2})%|[0-9]+)$", "^((100|[0-9]{1,2})%|[0-9]+)$", {0}, 0, m_budget_nodes},
    [NW_RE_QUANTITY] = {QUANTITY_RE2, QUANTITY_RE2, {0}, 0, m_quantity},
    [NW_RE_GROUP] = {"^[^/]*$", "^[^/]*$", {0}, 0, m_group},
    [NW_RE_DATETIME] = {"date-time",
                        "^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt "
                        "][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})$",
                        {0},
                        0,
                        m_datetime},
    /* the RE2 text has an empty alternative `||`: same as making the whole group optional */
    [NW_RE_EVICT] = {"^((\\d{1,2}(\\.\\d{1,2})?|100(\\.0{1,2})?)%||" QUANTITY_BODY ")$",
                     "^((([0-9]{1,2}(\\.[0-9]{1,2})?|100(\\.0{1,2})?)%|" QUANTITY_BODY ")?)$",
                     {0},
                     0,
                     m_evict},
    [NW_RE_VOLUME_SIZE] =
        {"^((?:[1-9][0-9]{0,3}|[1-4][0-9]{4}|[5][0-8][0-9]{3}|59000)Gi|(?:[1-9][0-9]{0,3}|[1-5][0-"
         "9]{4}|[6][0-3][0-9]{3}|64000)G|([1-9]||[1-5][0-7]|58)Ti|([1-9]||[1-5][0-9]|6[0-3]|64)T)$",
         "^(([1-9][0-9]{0,3}|[1-4][0-9]{4}|[5][0-8][0-9]{3}|59000)Gi|([1-9][0-9]{0,3}|[1-5][0-9]{4}"
         "|[6][0-3][0-9]{3}|64000)G|([1-9]|[1-5][0-7]|58)?Ti|([1-9]|[1-5][0-9]|6[0-3]|64)?T)$",
         {0},
         0,
         m_volume_size},
    [NW_RE_ALIAS] = {"^[a-zA-Z0-9]+@.+$", "^[a-zA-Z0-9]+@" NOT_NL "+$", {0}, 0, m_alias},
    [NW_RE_AMI_ID] = {"ami-[0-9a-z]+", "ami-[0-9a-z]+", {0}, 0, m_ami_id},
    [NW_RE_SUBNET_ID] = {"subnet-[0-9a-z]+", "subnet-[0-9a-z]+", {0}, 0, m_subnet_id},
    [NW_RE_SG_ID] = {"sg-[0-9a-z]+", "sg-[0-9a-z]+", {0}, 0, m_sg_id},
    [NW_RE_CR_ID] = {"^cr-[0-9a-z]+$", "^cr-[0-9a-z]+$", {0}, 0, m_cr_id},
    [NW_RE_OWNER_ID] = {"^[0-9]{12}$", "^[0-9]{12}$", {0}, 0, m_owner_id},
    [NW_RE_PG_ID] = {"^pg-[0-9a-z]+$", "^pg-[0-9a-z]+$", {0}, 0, m_pg_id},
};

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void compile_all(void)
{
    nw_kval_re_compile(table, NW_RE__COUNT);
}

const nw_kv_re_t *nw_kre(nw_re_id_t id)
{
    pthread_once(&once, compile_all);
    return &table[id];
}
