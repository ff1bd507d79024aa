/*
 * tests/fuzz/fuzz_taints.c — libFuzzer target for api/taints and api/labels.
 *
 * The input is JSON: {"taints": [...], "tolerations": [...], "labels": {...}} or any
 * other shape. Taints and tolerations are parsed and matched every way; every key and
 * value seen is run through the label validators. Invariants (abort on violation):
 * strict toleration implies scheduling toleration; an untolerated taint is reported
 * only if no toleration matches it; an "Exists" toleration with empty key and effect
 * tolerates everything.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/labels.h"
#include "api/taints.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cJSON *j = cJSON_ParseWithLength((const char *)data, size);
    if (!j)
        return 0;
    const cJSON *jt = cJSON_IsObject(j) ? cJSON_GetObjectItemCaseSensitive(j, "taints") : j;
    const cJSON *jo = cJSON_IsObject(j) ? cJSON_GetObjectItemCaseSensitive(j, "tolerations") : j;
    const cJSON *jl = cJSON_IsObject(j) ? cJSON_GetObjectItemCaseSensitive(j, "labels") : j;
    nw_taints_t t;
    nw_tolerations_t o;
    nw_labels_t l;
    nw_err_t err = {0};
    int have_t = nw_taints_parse(jt, "t", &t, &err) == NW_OK;
    int have_o = nw_tolerations_parse(jo, "o", &o, NULL) == NW_OK;
    if (nw_labels_parse(jl, "l", &l, NULL) == NW_OK) {
        nw_labels_msgs_t m;
        char buf[2048];
        for (size_t i = 0; i < l.n; i++) {
            nw_labels_key_valid(l.v[i].key, &m);
            nw_labels_msgs_join(&m, "; ", buf, sizeof buf);
            nw_labels_value_valid(l.v[i].value, &m);
            nw_labels_dns1123_subdomain_valid(l.v[i].value, &m);
            nw_labels_dns1123_label_valid(l.v[i].value, &m);
            if (!nw_labels_get(&l, l.v[i].key))
                abort();
        }
        nw_labels_cleanup(&l);
    }
    if (have_t && have_o) {
        const nw_taint_t *s = nw_tolerations_first_untolerated(&t, &o, NW_TAINTS_STRICT);
        const nw_taint_t *k = nw_tolerations_first_untolerated(&t, &o, NW_TAINTS_SCHEDULING);
        if (!s && k)
            abort();
        if (s && nw_tolerations_tolerate(&o, s))
            abort();
        nw_tolerations_t all;
        nw_tolerations_init(&all);
        nw_tolerations_add(&all, "", NW_TOL_EXISTS, "", NW_TAINT_EFFECT_ANY, false, 0);
        if (all.n == 1 && !nw_tolerations_tolerate_all(&t, &all, NW_TAINTS_STRICT))
            abort();
        nw_tolerations_cleanup(&all);
        char buf[512];
        for (size_t i = 0; i < t.n; i++) {
            nw_taints_format(&t.v[i], buf, sizeof buf);
            nw_taints_untolerated_msg(&t.v[i], buf, sizeof buf);
            nw_taints_is_known_ephemeral(&t.v[i]);
            nw_labels_key_valid(t.v[i].key, NULL);
        }
    }
    if (have_t)
        nw_taints_cleanup(&t);
    if (have_o)
        nw_tolerations_cleanup(&o);
    cJSON_Delete(j);
    return 0;
}
