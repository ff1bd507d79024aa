/*
 * scaler/aws/instance.c — the launcher's instances: the partition EC2 chose for one launched
 * into a partition placement group
 * (aws/karpenter-provider-aws pkg/cloudprovider/registrationhooks/placementgrouphook.go),
 * terminate and list (pkg/providers/instance/instance.go Delete, List). See launch.h.
 */
#include "scaler/aws/launch.h"

#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "scaler/aws/launch_int.h"

void nw_instance_find_partition(nw_launch_t *l, nw_launch_result_t *out)
{
    if (!out->pg_partitioned || out->pg_partition[0] || !out->instance_id[0])
        return;
    const char *ids[] = {out->instance_id};
    nw_ec2_instances_t in = {0};
    nw_err_t e = {0};
    if (nw_ec2_describe_instances(l->ec2, ids, 1, NULL, 0, &in, NULL, &e) == NW_OK && in.n > 0 &&
        in.v[0].partition > 0)
        snprintf(out->pg_partition, sizeof out->pg_partition, "%d", in.v[0].partition);
    else
        nw_log_warn(COMP, "the instance's placement group partition is not known yet",
                    NW_LS("instance", out->instance_id), NW_LS("error", e.msg));
    nw_ec2xml_instances_free(&in);
}

/* ---- terminate, list ---------------------------------------------------------------------- */

nw_rc_t nw_instance_terminate(nw_launch_t *l, const char *id_or_pid, nw_err_t *err)
{
    const char *id = nw_cloud_instance_id(id_or_pid);
    if (strncmp(id, "i-", 2) != 0)
        return nw_err_set(err, NW_EINVAL, "providerID", "not an instance id: %s", id_or_pid);
    nw_ec2_state_changes_t sc = {0};
    const char *ids[] = {id};
    nw_rc_t rc = nw_ec2_terminate_instances(l->ec2, ids, 1, &sc, NULL, err);
    if (rc == NW_OK)
        nw_log_info(COMP, "terminated", NW_LS("instance", id),
                    NW_LS("state", sc.n ? sc.v[0].current : "?"));
    nw_ec2xml_state_changes_free(&sc);
    return rc;
}

nw_rc_t nw_instance_list(nw_launch_t *l, nw_ec2_instances_t *out, nw_err_t *err)
{
    nw_ec2_filter_t f[] = {
        {"tag-key", {"karpenter.sh/nodepool"}, 1},
        {"tag-key", {"karpenter.k8s.aws/ec2nodeclass"}, 1},
        {"tag:eks:eks-cluster-name", {l->cluster}, 1},
        {"instance-state-name", {"pending", "running", "stopping", "stopped", "shutting-down"}, 5},
    };
    return nw_ec2_describe_instances(l->ec2, NULL, 0, f, 4, out, NULL, err);
}
