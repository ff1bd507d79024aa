/* api/kre.c — Karpenter CRD patterns: RE2 text and POSIX translation. */
#include "api/kre.h"

#include <pthread.h>

#define QUANTITY_RE2                                                                               \
    "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+("   \
    "\\.[0-9]*)?)|(\\.[0-9]+))))?$"
#define QUANTITY_BODY                                                                              \
    "(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\." \
    "[0-9]*)?)|(\\.[0-9]+))))?"
#define NOT_NL "[^\n]"
#define RE2_SPACE "[\t\n\f\r ]"

static nw_kv_re_t table[NW_RE__COUNT] = {
    [NW_RE_QNAME] = {"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\\/"
                     "))?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$",
                     "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(/"
                     "))?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$",
                     {0},
                     0},
    [NW_RE_LABEL_VALUE] = {"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$",
                           "^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$",
                           {0},
                           0},
    [NW_RE_DUR_NEVER] = {"^(([0-9]+(s|m|h))+|Never)$", "^(([0-9]+(s|m|h))+|Never)$", {0}, 0},
    [NW_RE_DUR] = {"^([0-9]+(s|m|h))+$", "^([0-9]+(s|m|h))+$", {0}, 0},
    [NW_RE_BUDGET_DUR] = {"^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$",
                          "^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$",
                          {0},
                          0},
    /* top-level alternation is unanchored on purpose, as in the budget schedule pattern
     * of aws/karpenter-provider-aws pkg/apis/crds/karpenter.sh_nodepools.yaml */
    [NW_RE_CRON] = {"^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\\s(.+)\\s(.+)"
                    "\\s(.+)\\s(.+))$",
                    "^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((" NOT_NL
                    "+)" RE2_SPACE "(" NOT_NL "+)" RE2_SPACE "(" NOT_NL "+)" RE2_SPACE "(" NOT_NL
                    "+)" RE2_SPACE "(" NOT_NL "+))$",
                    {0},
                    0},
    [NW_RE_BUDGET_NODES] = {"^((100|[0-9]{1,2})%|[0-9]+)$", "^((100|[0-9]{1,2})%|[0-9]+)$", {0}, 0},
    [NW_RE_QUANTITY] = {QUANTITY_RE2, QUANTITY_RE2, {0}, 0},
    [NW_RE_GROUP] = {"^[^/]*$", "^[^/]*$", {0}, 0},
    [NW_RE_DATETIME] = {"date-time",
                        "^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt "
                        "][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})$",
                        {0},
                        0},
    /* the RE2 text has an empty alternative `||`: same as making the whole group optional */
    [NW_RE_EVICT] = {"^((\\d{1,2}(\\.\\d{1,2})?|100(\\.0{1,2})?)%||" QUANTITY_BODY ")$",
                     "^((([0-9]{1,2}(\\.[0-9]{1,2})?|100(\\.0{1,2})?)%|" QUANTITY_BODY ")?)$",
                     {0},
                     0},
    [NW_RE_VOLUME_SIZE] =
        {"^((?:[1-9][0-9]{0,3}|[1-4][0-9]{4}|[5][0-8][0-9]{3}|59000)Gi|(?:[1-9][0-9]{0,3}|[1-5][0-"
         "9]{4}|[6][0-3][0-9]{3}|64000)G|([1-9]||[1-5][0-7]|58)Ti|([1-9]||[1-5][0-9]|6[0-3]|64)T)$",
         "^(([1-9][0-9]{0,3}|[1-4][0-9]{4}|[5][0-8][0-9]{3}|59000)Gi|([1-9][0-9]{0,3}|[1-5][0-9]{4}"
         "|[6][0-3][0-9]{3}|64000)G|([1-9]|[1-5][0-7]|58)?Ti|([1-9]|[1-5][0-9]|6[0-3]|64)?T)$",
         {0},
         0},
    [NW_RE_ALIAS] = {"^[a-zA-Z0-9]+@.+$", "^[a-zA-Z0-9]+@" NOT_NL "+$", {0}, 0},
    [NW_RE_AMI_ID] = {"ami-[0-9a-z]+", "ami-[0-9a-z]+", {0}, 0},
    [NW_RE_SUBNET_ID] = {"subnet-[0-9a-z]+", "subnet-[0-9a-z]+", {0}, 0},
    [NW_RE_SG_ID] = {"sg-[0-9a-z]+", "sg-[0-9a-z]+", {0}, 0},
    [NW_RE_CR_ID] = {"^cr-[0-9a-z]+$", "^cr-[0-9a-z]+$", {0}, 0},
    [NW_RE_OWNER_ID] = {"^[0-9]{12}$", "^[0-9]{12}$", {0}, 0},
    [NW_RE_PG_ID] = {"^pg-[0-9a-z]+$", "^pg-[0-9a-z]+$", {0}, 0},
};

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void compile_all(void)
{
    nw_kv_re_compile(table, NW_RE__COUNT);
}

const nw_kv_re_t *nw_kre(nw_re_id_t id)
{
    pthread_once(&once, compile_all);
    return &table[id];
}
