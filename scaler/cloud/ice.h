/*
 * scaler/cloud/ice.h — the insufficient-capacity (ICE) cache: offerings the cloud could not
 * launch lately (no I/O; scaler/cloud/catalog.h reads it for availability).
 *
 * After CreateFleet reports insufficient capacity for an offering, the offering
 * (capacity type, instance type, zone) is unavailable for a TTL (3 minutes by
 * default, as Karpenter's UnavailableOfferings cache); marking again refreshes
 * the TTL. Subnets (InsufficientFreeAddressesInSubnet) and whole capacity types
 * (spot without its service-linked role) can be marked the same way.
 * Times are monotonic nanoseconds passed in by the caller (nw_clock_mono).
 *
 * Ownership: nw_ice_new/nw_ice_free.
 * Thread: any (one mutex).
 */
#ifndef NW_SCALER_CLOUD_ICE_H
#define NW_SCALER_CLOUD_ICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NW_ICE_TTL_NS (180 * INT64_C(1000000000))

typedef struct nw_ice nw_ice_t;

/** ttl_ns <= 0 selects NW_ICE_TTL_NS. NULL when out of memory. */
nw_ice_t *nw_ice_new(int64_t ttl_ns);
void nw_ice_free(nw_ice_t *ice);

/** Mark (capacity type, instance type, zone) unavailable until now + TTL. */
void nw_ice_mark(nw_ice_t *ice, const char *capacity_type, const char *type, const char *zone,
                 int64_t now);
/** Mark a subnet unavailable. */
void nw_ice_mark_subnet(nw_ice_t *ice, const char *subnet_id, int64_t now);
/** Mark a whole capacity type unavailable (e.g. "spot"). */
void nw_ice_mark_capacity_type(nw_ice_t *ice, const char *capacity_type, int64_t now);

/** True when the offering (or its capacity type) is unavailable at now. NULL ice: false. */
bool nw_ice_unavailable(const nw_ice_t *ice, const char *capacity_type, const char *type,
                        const char *zone, int64_t now);
bool nw_ice_subnet_unavailable(const nw_ice_t *ice, const char *subnet_id, int64_t now);

/** Drop expired entries; returns how many remain. */
size_t nw_ice_sweep(nw_ice_t *ice, int64_t now);

/** Increments on every mark: lets callers invalidate derived caches. */
uint64_t nw_ice_seq(const nw_ice_t *ice);

/** How many entries are in force at now (0 for NULL ice). With nw_ice_seq: between two
 * marks the entries in force only leave, so the same seq and count mean the same set. */
size_t nw_ice_live(const nw_ice_t *ice, int64_t now);

#endif
