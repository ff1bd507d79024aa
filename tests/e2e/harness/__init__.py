"""The end-to-end test harness (one for every tests/e2e/t_* story).

    from harness import check, wait_for, log, fail, main
    main(story, cluster={})      # story(c) on a fresh cluster (harness.cluster)

Modules: core (check, fail, wait_for, main), kubectl (the kubectl wrapper, Watch),
cluster (Cluster, the "sim" backend, register_backend), metrics (the Prometheus parser),
objects (conditions, tags, pod readiness, shared manifests), kubedump (kube-dump
followers), webhook (a bare `nodewarden serve` over TLS), awssim (the in-process AWS
simulator fixture for the t_aws_* unittest stories), term and disrupt (termination
and disruption story helpers). See docs/testing-e2e.md.
"""
from .core import FAILED, NW_BIN, ROOT, Failure, check, fail, log, main, wait_for  # noqa: F401
from .cluster import Cluster, Unsupported, new as new_cluster, register_backend  # noqa: F401
from .metrics import Metrics  # noqa: F401
from .objects import DEPLOY, cond, events_for, instance_id, pod_ready, tag  # noqa: F401
