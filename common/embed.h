/*
 * common/embed.h — data files compiled into the binary.
 *
 * Every file data/<name> is linked in by the Makefile with the symbols
 * nw_embed_<name>_start / _end, where <name> has every character other than
 * [A-Za-z0-9] replaced by '_' (data/catalog.json -> nw_embed_catalog_json_start).
 * The bytes are followed by a NUL, so text files can be used as C strings.
 *
 *   NW_EMBED_DECL(catalog_json);
 *   size_t n = NW_EMBED_LEN(catalog_json);  const char *p = NW_EMBED_PTR(catalog_json);
 */
#ifndef NW_COMMON_EMBED_H
#define NW_COMMON_EMBED_H

#include <stddef.h>

#define NW_EMBED_DECL(name)                                                                        \
    extern const char nw_embed_##name##_start[];                                                   \
    extern const char nw_embed_##name##_end[]
#define NW_EMBED_PTR(name) (nw_embed_##name##_start)
#define NW_EMBED_LEN(name) ((size_t)(nw_embed_##name##_end - nw_embed_##name##_start))

#endif
