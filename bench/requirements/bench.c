/*
 * bench/requirements/bench.c — how fast are the scheduler's requirement checks?
 *
 * Builds 500 instance-type requirement sets (27 keys each, like Karpenter's
 * instance-type requirements: one value per key, plus zone / capacity-type lists)
 * and 1000 pod requirement sets (nodeSelector + a node-affinity term), then times
 * every pod against every type with nw_requirements_compatible (AllowUndefinedWellKnownLabels),
 * nw_requirements_intersects, nw_requirements_match_labels, and the allocating
 * nw_requirements_intersect. Prints CPU nanoseconds per check. Timing only; the unit tests check
 * behaviour.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/requirements.h"

#define NTYPES 500
#define NPODS 1000

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts); /* CPU time: less disturbed by load */
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void add1(nw_reqs_t *r, const char *k, nw_req_op_t op, const char *v)
{
    const char *vals[1] = {v};
    if (nw_requirements_add(r, k, op, vals, v ? 1 : 0, 0, NULL) != NW_OK)
        abort();
}

int main(void)
{
    static nw_reqs_t types[NTYPES], pods[NPODS];
    static nw_labels_t nodes[NTYPES];
    const char *fams[] = {"m5", "m6i", "c6i", "r6i", "g5", "t3", "m7g", "c7g"};
    const char *sizes[] = {"large", "xlarge", "2xlarge", "4xlarge", "8xlarge"};
    const char *zones[] = {"us-east-1a", "us-east-1b", "us-east-1c"};
    const char *cts[] = {"spot", "on-demand"};
    char buf[64];
    for (int i = 0; i < NTYPES; i++) {
        nw_reqs_t *t = &types[i];
        nw_requirements_init(t);
        nw_labels_init(&nodes[i]);
        const char *fam = fams[i % 8];
        snprintf(buf, sizeof buf, "%s.%s-%d", fam, sizes[i % 5], i);
        add1(t, "node.kubernetes.io/instance-type", NW_REQ_IN, buf);
        add1(t, "karpenter.k8s.aws/instance-family", NW_REQ_IN, fam);
        add1(t, "karpenter.k8s.aws/instance-size", NW_REQ_IN, sizes[i % 5]);
        add1(t, "kubernetes.io/arch", NW_REQ_IN, fam[2] == 'g' ? "arm64" : "amd64");
        add1(t, "kubernetes.io/os", NW_REQ_IN, "linux");
        if (nw_requirements_add(t, "topology.kubernetes.io/zone", NW_REQ_IN, zones, 3, 0, NULL) ||
            nw_requirements_add(t, "karpenter.sh/capacity-type", NW_REQ_IN, cts, 2, 0, NULL))
            abort();
        for (int k = 0; k < 20; k++) {
            char key[64], val[16];
            snprintf(key, sizeof key, "karpenter.k8s.aws/instance-x%02d", k);
            snprintf(val, sizeof val, "%d", (i * 7 + k) % 97);
            add1(t, key, NW_REQ_IN, val);
        }
        for (size_t k = 0; k < t->n; k++)
            if (nw_labels_set(&nodes[i], t->v[k].key, t->v[k].values[0]) != NW_OK)
                abort();
    }
    for (int p = 0; p < NPODS; p++) {
        nw_reqs_t *r = &pods[p];
        nw_requirements_init(r);
        add1(r, "kubernetes.io/arch", NW_REQ_IN, p % 4 ? "amd64" : "arm64");
        add1(r, "topology.kubernetes.io/zone", NW_REQ_IN, zones[p % 3]);
        const char *want[3] = {fams[p % 8], fams[(p + 1) % 8], fams[(p + 3) % 8]};
        if (nw_requirements_add(r, "karpenter.k8s.aws/instance-family", NW_REQ_IN, want, 3, 0,
                                NULL))
            abort();
        add1(r, "karpenter.k8s.aws/instance-x03", NW_REQ_GT, "40");
        add1(r, "karpenter.sh/capacity-type", NW_REQ_NOT_IN, "spot");
    }
    long ok = 0;
    double t0 = now();
    for (int p = 0; p < NPODS; p++)
        for (int i = 0; i < NTYPES; i++)
            ok += nw_requirements_compatible(&types[i], &pods[p],
                                             NW_REQS_ALLOW_UNDEFINED_WELL_KNOWN, NULL);
    double t1 = now();
    for (int p = 0; p < NPODS; p++)
        for (int i = 0; i < NTYPES; i++)
            ok += nw_requirements_intersects(&types[i], &pods[p], NULL);
    double t2 = now();
    for (int p = 0; p < NPODS; p++)
        for (int i = 0; i < NTYPES; i++)
            ok += nw_requirements_match_labels(&pods[p], &nodes[i], NULL);
    double t3 = now();
    int nint = 0;
    for (int p = 0; p < NPODS; p += 10)
        for (int i = 0; i < NTYPES; i++) {
            nw_reqs_t x;
            if (nw_requirements_intersect(&types[i], &pods[p], &x) != NW_OK)
                abort();
            nw_requirements_cleanup(&x);
            nint++;
        }
    double t4 = now();
    double n = (double)NPODS * NTYPES;
    printf("requirements bench: %d pods x %d instance types (%zu keys each)\n", NPODS, NTYPES,
           types[0].n);
    printf("  nw_requirements_compatible   %7.1f ns/check\n", (t1 - t0) / n);
    printf("  nw_requirements_intersects   %7.1f ns/check\n", (t2 - t1) / n);
    printf("  nw_requirements_match_labels %7.1f ns/check\n", (t3 - t2) / n);
    printf("  nw_requirements_intersect    %7.1f ns/op (allocating)\n", (t4 - t3) / nint);
    printf("  (%ld checks passed)\n", ok);
    for (int i = 0; i < NTYPES; i++) {
        nw_requirements_cleanup(&types[i]);
        nw_labels_cleanup(&nodes[i]);
    }
    for (int p = 0; p < NPODS; p++)
        nw_requirements_cleanup(&pods[p]);
    return 0;
}
