/*
 * scaler/controllers/statemetrics.h — Karpenter's gauges of the cluster state, kept up to date
 * from the cache's snapshots on the reconcile thread (kubernetes-sigs/karpenter
 * pkg/controllers/metrics/{node,nodepool,pod}/controller.go requeue after 5 s; the AWS
 * provider's offering gauges, pkg/controllers/metrics/controller.go):
 *
 *   karpenter_nodes_{allocatable,total_pod_requests,total_pod_limits,total_daemon_requests,
 *     total_daemon_limits,system_overhead}{<well-known labels>,node_name,phase,managed,
 *     resource_type}, karpenter_nodes_current_lifetime_seconds, per Node (cpu in cores,
 *     everything else in its unit: bytes, pods); pods are those bound to the Node and not
 *     Succeeded or Failed, DaemonSet pods those whose first owner is a DaemonSet; a pod's
 *     requests (limits) are the sum of its containers', at least each init container's,
 *     plus its overhead;
 *   karpenter_cluster_utilization_percent{resource_type}: pod requests / allocatable of all
 *     Nodes;
 *   karpenter_nodepools_limit / _usage{resource_type,nodepool}: spec.limits and
 *     status.resources;
 *   karpenter_pods_state{name,namespace,owner,node,scheduled,nodepool,zone,arch,
 *     capacity_type,instance_type,phase,ready,managed} = 1 per pod, and
 *     karpenter_pods_startup_duration_seconds (a summary, in deps->series): creation to
 *     Ready for each pod seen Pending, then Ready (looked at on every tick);
 *   karpenter_cloudprovider_instance_type_offering_available / _price_estimate
 *     {instance_type,capacity_type,zone}: every offering of the cloud's catalog (every
 *     type, not only those a NodePool allows, as Karpenter lists them per NodePool), with
 *     "reserved" offerings unavailable at price 0 in each of a type's zones (Karpenter does
 *     this with the ReservedCapacity gate, on by default).
 *
 * Incremental: a tick whose snapshot is the one of the last update does nothing (the
 * offerings and the time out of sync excepted, looked at every 5 s). Otherwise the two
 * snapshots are compared object by object (both are held, so an unchanged object is the
 * same pointer): a Node is built again when it changed, when a NodeClaim with its
 * providerID did, or when a pod bound to it (before or now) did; the others keep their
 * gauges. A pod's requests and limits are parsed once per pod spec (the replicas of a
 * ReplicaSet share theirs, api/pod.h), the cluster sums move by the nodes that changed,
 * and the NodePool and cluster-state families are written again only when their objects
 * changed. karpenter_pods_state and the node lifetimes are written by the scrape itself,
 * from the snapshot of the last update (pods in key order) and the node creation times.
 * The page is what a rebuild from nothing would write from the same snapshot.
 *
 * A scrape takes what the last update published under a mutex (counted references to the
 * per-node gauges and the families kept as text, and the snapshot) and writes it without
 * the lock, so the reconcile thread never waits for a scrape.
 *
 * Ownership: nw_statemetrics_new / _free (loop.c). Thread: tick and rebuild on the
 * reconcile thread; write from any thread.
 */
#ifndef NW_SCALER_CONTROLLERS_STATEMETRICS_H
#define NW_SCALER_CONTROLLERS_STATEMETRICS_H

#include "common/buf.h"
#include "scaler/ctl/ctl.h"

typedef struct nw_statemetrics nw_statemetrics_t;

/** New (NULL on OOM); deps borrowed. */
nw_statemetrics_t *nw_statemetrics_new(nw_ctl_deps_t *deps);
void nw_statemetrics_free(nw_statemetrics_t *m);
/** Follow pod startups; bring the gauges up to date with s where it changed since the last
 * update, and look at the offerings and the time out of sync when 5 s have passed since
 * the last look (the first call builds everything). */
void nw_statemetrics_tick(nw_statemetrics_t *m, const nw_kube_snap_t *s);
/** Bring the gauges up to date with s and look at the offerings and the time out of sync
 * now. */
void nw_statemetrics_rebuild(nw_statemetrics_t *m, const nw_kube_snap_t *s);
/** Append the gauges of the last update (HELP and TYPE only before the first). */
NW_MUST_USE nw_rc_t nw_statemetrics_write(nw_statemetrics_t *m, nw_buf_t *out);

#endif
