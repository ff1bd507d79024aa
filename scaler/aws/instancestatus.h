/*
 * scaler/aws/instancestatus.h — EC2 instance status checks and scheduled events as the
 * neutral instance health of scaler/cloud/cloud.h (aws/karpenter-provider-aws
 * pkg/providers/instancestatus/instancestatus.go): DescribeInstanceStatus three times, with
 * the filters Karpenter uses (DescribeInstanceStatus ANDs filters of different names, and
 * the three sets are ORed):
 *
 *   instance-status.status = impaired
 *   system-status.status   = impaired
 *   event.code in instance-reboot, system-reboot, system-maintenance, instance-retirement,
 *                 instance-stop
 *
 * Each instance is taken once (the first answer that lists it). Of its status check
 * details those whose status is "failed" become entries (kind instance or system, with
 * EC2's impairedSince); every scheduled event becomes an entry (kind event, no
 * impairedSince: Karpenter treats a scheduled event as a failure at once). EBS status
 * checks are not reported (Karpenter ignores them: they may be a pod's volume, not the
 * node's). Whether a check has failed for long enough is the caller's decision
 * (scaler/controllers/repair.h).
 *
 * Thread: any (the EC2 client is thread-safe).
 */
#ifndef NW_SCALER_AWS_INSTANCESTATUS_H
#define NW_SCALER_AWS_INSTANCESTATUS_H

#include "common/err.h"
#include "scaler/aws/ec2.h"
#include "scaler/cloud/cloud.h"

/** Append the failed checks of every listed instance to out (caller storage, zeroed;
 * nw_cloud_healths_free). ae (nullable) holds EC2's error when a call failed. */
NW_MUST_USE nw_rc_t nw_instancestatus_health(nw_ec2_t *ec2, nw_cloud_healths_t *out,
                                             nw_ec2_error_t *ae, nw_err_t *err);

/** The entries of one DescribeInstanceStatus record (exposed for tests); NW_ENOMEM on OOM. */
NW_MUST_USE nw_rc_t nw_instancestatus_istatus_health(const nw_ec2_istatus_t *s,
                                                     nw_cloud_healths_t *out);

#endif
