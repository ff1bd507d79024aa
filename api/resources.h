/*
 * api/resources.h — resource lists (Kubernetes v1.ResourceList): resource name ->
 * quantity, e.g. {cpu: 1500m, memory: 2Gi, pods: 110, nvidia.com/gpu: 1}.
 *
 * Representation: a small array sorted by name. Up to NW_RESOURCES_INLINE
 * entries live inside the struct; beyond that the array moves to the heap.
 * Well-known names (cpu, memory, pods, ephemeral-storage, GPU/Neuron/EFA
 * resources, hugepages-*) point to static strings, so the common case never
 * allocates; other names are copied and owned by the list.
 *
 * Ownership: caller storage, nw_resources_init / nw_resources_cleanup. A list
 * must not be copied by assignment (it may own heap memory): use
 * nw_resources_copy. Names returned by the accessors are borrowed, valid until
 * the list is next modified. Semantics of missing names: fits() treats a name
 * missing from the capacity as zero; add/sub/max take the union of names.
 * Thread: a list belongs to one thread at a time; the functions keep no state.
 */
#ifndef NW_API_RESOURCES_H
#define NW_API_RESOURCES_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/quantity.h"
#include "common/err.h"

#define NW_RESOURCES_INLINE 6

/* Well-known names; nw_resources_* accept any string, these are just spelled once. */
#define NW_RES_CPU "cpu"
#define NW_RES_MEMORY "memory"
#define NW_RES_PODS "pods"
#define NW_RES_EPHEMERAL_STORAGE "ephemeral-storage"
#define NW_RES_NVIDIA_GPU "nvidia.com/gpu"

typedef struct {
    const char *name; /* static (well-known) or owned copy */
    int64_t milli;
    uint8_t format; /* nw_quantity_format_t */
    uint8_t owned;  /* name was malloc'd */
} nw_res_entry_t;

typedef struct {
    uint32_t n;           /* entries in use */
    uint32_t cap;         /* heap capacity; 0 while inline */
    nw_res_entry_t *heap; /* owned; NULL while inline */
    nw_res_entry_t inl[NW_RESOURCES_INLINE];
} nw_resources_t;

/** Initialise an empty list. */
void nw_resources_init(nw_resources_t *r);

/** Free what the list owns; it is empty (and reusable) afterwards. NULL-safe. */
void nw_resources_cleanup(nw_resources_t *r);

/** Replace dst's contents with a copy of src. dst must be initialised.
 * NW_ENOMEM leaves dst empty. */
NW_MUST_USE nw_rc_t nw_resources_copy(nw_resources_t *dst, const nw_resources_t *src,
                                      nw_err_t *err);

/** Number of names in the list. */
size_t nw_resources_len(const nw_resources_t *r);

/** The i-th name in sorted (strcmp) order, i < len. Borrowed. */
const char *nw_resources_name_at(const nw_resources_t *r, size_t i);

/** The i-th quantity in sorted order, i < len. */
nw_quantity_t nw_resources_at(const nw_resources_t *r, size_t i);

/** Set name to q (insert or replace). NW_EINVAL for an empty name, NW_ENOMEM. */
NW_MUST_USE nw_rc_t nw_resources_set(nw_resources_t *r, const char *name, nw_quantity_t q,
                                     nw_err_t *err);

/** Remove name; returns whether it was there. */
bool nw_resources_remove(nw_resources_t *r, const char *name);

/** Look name up: true and *out = its quantity, or false and *out = 0 (out may be NULL). */
bool nw_resources_get(const nw_resources_t *r, const char *name, nw_quantity_t *out);

/** The quantity for name, zero when missing. */
nw_quantity_t nw_resources_get_or_zero(const nw_resources_t *r, const char *name);

/** a += b over the union of names. NW_ERANGE on overflow leaves a unchanged;
 * NW_ENOMEM may leave a partly updated. */
NW_MUST_USE nw_rc_t nw_resources_add(nw_resources_t *a, const nw_resources_t *b, nw_err_t *err);

/** a -= b over the union of names (a name only in b becomes negative).
 * Errors as nw_resources_add. */
NW_MUST_USE nw_rc_t nw_resources_sub(nw_resources_t *a, const nw_resources_t *b, nw_err_t *err);

/** a = element-wise max(a, b); a name present in only one list keeps its value
 * (as k8s.io/apiserver/pkg/quota/v1 Max). NW_ENOMEM may leave a partly updated. */
NW_MUST_USE nw_rc_t nw_resources_max(nw_resources_t *a, const nw_resources_t *b, nw_err_t *err);

/** Does request fit in capacity: every quantity in request <= the capacity's
 * quantity for that name, a name missing from capacity counting as zero. When
 * it does not fit and first_over is not NULL, *first_over names the first
 * (sorted) resource that does not fit (borrowed from request). Never allocates. */
bool nw_resources_fits(const nw_resources_t *request, const nw_resources_t *capacity,
                       const char **first_over);

/** True when every quantity is zero (an empty list is zero). */
bool nw_resources_is_zero(const nw_resources_t *r);

/** Replace r's contents with the members of a JSON object whose values are
 * quantity strings or JSON numbers (as Kubernetes accepts both); a JSON null or
 * a NULL obj gives an empty list. r must be initialised. On error r is empty,
 * err->path is "<path>[<name>]" (or path itself when obj is not an object) and
 * err->msg says what is wrong ("Invalid value: \"1.2.3\": quantities must match
 * ..."). path may be NULL or "". */
NW_MUST_USE nw_rc_t nw_resources_from_json(nw_resources_t *r, const cJSON *obj, const char *path,
                                           nw_err_t *err);

/** A new JSON object {name: "canonical quantity", ...} in sorted order; owned by
 * the caller (cJSON_Delete). NULL when out of memory. */
cJSON *nw_resources_to_json(const nw_resources_t *r);

#endif
