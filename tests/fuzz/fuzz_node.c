/*
 * tests/fuzz/fuzz_node.c — libFuzzer target for api/node (the Node and NodeClaim records
 * the watch cache decodes once).
 *
 * The input is JSON, decoded as a Node and as a NodeClaim. Invariants (abort on
 * violation): a decode either returns a record or an error with a field path, never both;
 * labels and annotations come out sorted and every key is found again by its lookup;
 * every condition is found by its type, and the conditions render back as an array of as
 * many objects with the same types; a NodeClaim's first written instance type (type_first)
 * comes with an instance-type requirement; the record holds no pointer into the input (it
 * is read again after the input is freed, which ASan checks).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/node.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_meta(const nw_node_meta_t *m)
{
    if (!m->name[0])
        abort();
    for (size_t i = 0; i < m->nlabels; i++) {
        if (i && strcmp(m->labels[i - 1].key, m->labels[i].key) > 0)
            abort();
        if (!nw_node_meta_label(m, m->labels[i].key))
            abort();
    }
    for (size_t i = 0; i < m->nannotations; i++)
        if (!nw_node_meta_annotation(m, m->annotations[i].key))
            abort();
    for (size_t i = 0; i < m->nconds; i++)
        if (!nw_node_meta_condition(m, m->conds[i].type))
            abort();
    cJSON *back = nw_node_meta_conditions_json(m);
    if (back) { /* NULL only when memory runs out */
        if ((size_t)cJSON_GetArraySize(back) != m->nconds)
            abort();
        size_t i = 0;
        const cJSON *cd;
        cJSON_ArrayForEach(cd, back)
        {
            const cJSON *t = cJSON_GetObjectItemCaseSensitive(cd, "type");
            if (!cJSON_IsString(t) || strcmp(t->valuestring, m->conds[i++].type) != 0)
                abort();
        }
        cJSON_Delete(back);
    }
    for (size_t i = 0; i < m->nfinalizers; i++)
        if (!nw_node_meta_has_finalizer(m, m->finalizers[i]))
            abort();
    for (size_t i = 0; i < m->taints.n; i++)
        if (!nw_node_meta_has_taint(m, m->taints.v[i].key, NULL))
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cJSON *j = cJSON_ParseWithLength((const char *)data, size);
    if (!j)
        return 0;
    nw_node_t *n = NULL;
    nw_node_claim_t *c = NULL;
    nw_err_t en = {0}, ec = {0};
    nw_rc_t rn = nw_node_decode(j, &n, &en), rc = nw_node_claim_decode(j, &c, &ec);
    cJSON_Delete(j);
    if ((rn == NW_OK) != (n != NULL) || (rc == NW_OK) != (c != NULL))
        abort();
    if (rn == NW_EINVAL && !en.msg[0])
        abort();
    if (n) {
        check_meta(&n->m);
        if (nw_node_bytes(n) < sizeof *n)
            abort();
        (void)nw_resources_len(&n->allocatable);
        nw_node_free(n);
    }
    if (c) {
        check_meta(&c->m);
        if (nw_node_claim_bytes(c) < sizeof *c)
            abort();
        if (c->nodepool[0] &&
            strcmp(nw_node_meta_label(&c->m, "karpenter.sh/nodepool"), c->nodepool) != 0)
            abort();
        /* the first instance type written: one the parsed set holds, unless another item of
         * that key narrowed the set */
        const nw_req_t *it =
            nw_requirements_get(&c->requirements, "node.kubernetes.io/instance-type");
        if (!c->type_first || (c->type_first[0] && !it))
            abort();
        (void)strlen(c->type_first);
        nw_node_claim_free(c);
    }
    return 0;
}
