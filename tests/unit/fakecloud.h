/*
 * tests/unit/fakecloud.h — the one fake cloud the unit tests use (instead of EC2, which
 * cannot run here), implementing the provider-neutral interface scaler/cloud/cloud.h: the embedded
 * catalog in us-west-2a/b/c, an ICE cache, an EC2NodeClass that always resolves (three subnets, one
 * security group, one AMI) and whose status is Ready, and an in-memory instance list that launch,
 * terminate, list and instance_state work on. Every call is counted; tests script failures (the
 * next launch reports insufficient capacity, the instance disappears after n state checks, list
 * fails).
 *
 * Ownership: fake_cloud_new / fake_cloud_free (ops->free is a no-op: the test owns it).
 * Thread: one test thread.
 */
#ifndef NW_TESTS_FAKECLOUD_H
#define NW_TESTS_FAKECLOUD_H

#include "common/clock.h"
#include "scaler/cloud/cloud.h"

#define FAKE_CLOUD_MAX 32

typedef struct {
    nw_cloud_t base;
    nw_catalog_t *cat;
    nw_ice_t *ice;
    nw_cloud_class_t resolved;
    nw_cloud_subnet_t subnets[3];
    char sgs[1][64];
    nw_cloud_image_t images[1];
    const nw_clock_t *clock;
    nw_cloud_instance_t inst[FAKE_CLOUD_MAX]; /* launched instances (and seeded ones) */
    int ninst;
    /* calls */
    int launches, terminates, lists, resolves, state_checks, statuses;
    char last_launch_claim[256];
    int last_launch_ntypes;
    /* scripted behaviour */
    int ice_next;   /* > 0: the next launches fail with insufficient capacity */
    int fail_list;  /* list fails */
    int gone_after; /* a terminated instance is reported gone after this many checks */
} fake_cloud_t;

/** A new fake cloud on the given clock (launch times); aborts the test on failure. */
fake_cloud_t *fake_cloud_new(const nw_clock_t *clock);
void fake_cloud_free(fake_cloud_t *f);

/** Add an instance (as if launched outside this process): state "running", the cluster's
 * tags and karpenter.sh/nodeclaim=claim when claim != NULL, launched age_ns ago. */
nw_cloud_instance_t *fake_cloud_add(fake_cloud_t *f, const char *id, const char *claim,
                                    int64_t age_ns);

/** The instance with this id or providerID, or NULL. */
nw_cloud_instance_t *fake_cloud_find(fake_cloud_t *f, const char *id_or_provider_id);

#endif
