/*
 * tests/unit/fakecloud.h — the one fake cloud the unit tests use (instead of EC2, which
 * cannot run here), implementing the provider-neutral interface scaler/cloud/cloud.h: the embedded
 * catalog in us-west-2a/b/c, an ICE cache, an EC2NodeClass that always resolves (three subnets, one
 * security group, one AMI) and whose status is Ready, and an in-memory instance list that launch,
 * terminate, list and instance_state work on. Every call is counted; tests script failures (the
 * next launch reports insufficient capacity, the instance disappears after n state checks, list
 * fails).
 *
 * Launches can be held (fake_cloud_hold): a launch then waits inside ops->launch until
 * released, as a CreateFleet slower than everything else would; the fake counts how many
 * launches were inside ops->launch at once.
 *
 * Ownership: fake_cloud_new / fake_cloud_free (ops->free is a no-op: the test owns it).
 * Thread: launch, list, terminate and instance_state may run on the launch workers while
 * the test thread calls the others (one mutex, mu); while workers run, the test reads the
 * counters with fake_cloud_launches (or after nw_nodeclaim_wait_idle).
 */
#ifndef NW_TESTS_FAKECLOUD_H
#define NW_TESTS_FAKECLOUD_H

#include <pthread.h>
#include <stdatomic.h>

#include "common/clock.h"
#include "scaler/cloud/cloud.h"
#include "scaler/cloud/interrupt.h"

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
    char last_launch_token[NW_CLOUD_TOKEN_MAX + 1];
    /* held launches */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int hold;      /* launches wait while set */
    int held;      /* launches waiting now */
    int in_launch; /* launches inside ops->launch now */
    int max_in_launch;
    /* scripted behaviour */
    int ice_next;   /* > 0: the next launches fail with insufficient capacity */
    int spend_next; /* > 0: the next launches make nothing and report the token spent */
    int fail_list;  /* list fails */
    int gone_after; /* a terminated instance is reported gone after this many checks */
    /* instance health (ops->instance_health answers these, under mu) */
    nw_cloud_health_t health[8];
    int nhealth, health_calls;
    nw_cloud_err_kind_t health_fail; /* != NONE: instance_health fails with this kind */
} fake_cloud_t;

/** A new fake cloud on the given clock (launch times); aborts the test on failure. */
fake_cloud_t *fake_cloud_new(const nw_clock_t *clock);
void fake_cloud_free(fake_cloud_t *f);

/** Add an instance (as if launched outside this process): state "running", the cluster's
 * tags and karpenter.sh/nodeclaim=claim when claim != NULL, launched age_ns ago. */
nw_cloud_instance_t *fake_cloud_add(fake_cloud_t *f, const char *id, const char *claim,
                                    int64_t age_ns);

/** Hold launches (on = 1: every launch waits inside ops->launch) or release them (0). */
void fake_cloud_hold(fake_cloud_t *f, int on);
/** Wait (real time, at most timeout_ms) until n launches are held; 1 when they are. */
int fake_cloud_wait_held(fake_cloud_t *f, int n, int timeout_ms);
/** The launches so far, read under the mutex. */
int fake_cloud_launches(fake_cloud_t *f);

/** The instance with this id or providerID, or NULL. */
nw_cloud_instance_t *fake_cloud_find(fake_cloud_t *f, const char *id_or_provider_id);

/* ---- a fake interruption source (scaler/cloud/interrupt.h), instead of SQS ----
 * Pushed messages stay pending until acknowledged; receive hands out the pending ones
 * due (each at most once per FAKE_INTR_REDELIVER receives: the visibility timeout) after
 * a 5 ms wait that the abort flag cuts short. Thread: the pusher and the interruption
 * thread (one mutex). */
#define FAKE_INTR_MAX 16
#define FAKE_INTR_REDELIVER 20

typedef struct {
    char id[128];
    int parsed;
    nw_interrupt_event_t ev;
    int acked, deliveries, next_receive;
} fake_intr_msg_t;

typedef struct {
    nw_interrupt_source_t base;
    pthread_mutex_t mu;
    fake_intr_msg_t msgs[FAKE_INTR_MAX];
    int n;
    int receives, fail_receives; /* fail_receives > 0: the next receives fail (throttled) */
    const atomic_int *abort;
} fake_intr_t;

void fake_intr_init(fake_intr_t *q);
void fake_intr_destroy(fake_intr_t *q);
/** Queue a message; ev NULL: a body that did not parse. */
void fake_intr_push(fake_intr_t *q, const char *id, const nw_interrupt_event_t *ev);
/** How often message id was delivered, and whether it was acknowledged. */
int fake_intr_deliveries(fake_intr_t *q, const char *id);
int fake_intr_acked(fake_intr_t *q, const char *id);

#endif
