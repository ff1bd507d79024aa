/*
 * tests/fuzz/fuzz_resources.c — libFuzzer target for api/resources.
 * The input is parsed as JSON and read as a resource list; a list that reads
 * must print to JSON that reads back to the same list, and the list algebra
 * must hold on it (a fits in a; a - a is zero; max(a, a) == a).
 */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/resources.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool same(const nw_resources_t *a, const nw_resources_t *b)
{
    if (nw_resources_len(a) != nw_resources_len(b))
        return false;
    for (size_t i = 0; i < nw_resources_len(a); i++)
        if (strcmp(nw_resources_name_at(a, i), nw_resources_name_at(b, i)) != 0 ||
            nw_quantity_cmp(nw_resources_at(a, i), nw_resources_at(b, i)) != 0)
            return false;
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts((const char *)data, size, &end, 0);
    if (!j)
        return 0;
    nw_resources_t a, b, c;
    nw_resources_init(&a);
    nw_resources_init(&b);
    nw_resources_init(&c);
    nw_err_t err = {0};
    nw_rc_t rc = nw_resources_from_json(&a, j, "spec.limits", &err);
    if (rc != NW_OK) {
        if (err.rc != rc || err.msg[0] == '\0' || strncmp(err.path, "spec.limits", 11) != 0 ||
            nw_resources_len(&a) != 0)
            abort();
        goto out;
    }
    cJSON *printed = nw_resources_to_json(&a);
    if (!printed)
        goto out;
    rc = nw_resources_from_json(&b, printed, "x", NULL);
    cJSON_Delete(printed);
    if (rc != NW_OK || !same(&a, &b))
        abort();
    const char *over = NULL;
    if (!nw_resources_fits(&a, &b, &over) || over)
        abort();
    if (nw_resources_copy(&c, &a, NULL) != NW_OK || nw_resources_max(&c, &b, NULL) != NW_OK ||
        !same(&a, &c))
        abort();
    if (nw_resources_sub(&c, &b, NULL) != NW_OK || !nw_resources_is_zero(&c))
        abort();
    if (nw_resources_add(&c, &a, NULL) != NW_OK || !same(&a, &c))
        abort();
out:
    nw_resources_cleanup(&a);
    nw_resources_cleanup(&b);
    nw_resources_cleanup(&c);
    cJSON_Delete(j);
    return 0;
}
