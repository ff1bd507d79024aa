/* Fuzz target: common/yaml loader on arbitrary bytes; every tree that loads is
 * emitted again and re-read, and must compare equal (the emitter quotes what it must). */
#include <stdint.h>
#include <stdlib.h>

#include "common/yaml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cJSON **docs = NULL;
    size_t *lines = NULL, n = 0;
    nw_err_t err = {0};
    if (nw_yaml_load_docs_lines((const char *)data, size, &docs, &lines, &n, &err) != NW_OK)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char *y = NULL;
        size_t ylen = 0;
        nw_err_t e2 = {0};
        if (nw_yaml_emit(docs[i], &y, &ylen, &e2) != NW_OK)
            continue;
        cJSON **again = NULL;
        size_t m = 0;
        if (nw_yaml_load_docs(y, ylen, &again, &m, &e2) != NW_OK)
            abort(); /* emitted YAML must load */
        if (m != 1 || !cJSON_Compare(docs[i], again[0], 1))
            abort(); /* and mean the same */
        nw_yaml_docs_free(again, m);
        free(y);
    }
    nw_yaml_docs_free(docs, n);
    free(lines);
    return 0;
}
