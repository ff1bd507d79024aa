"""Helpers for the disruption end-to-end tests (tests/e2e/t_disrupt_*): nodewarden
with short disruption periods, workload manifests that pin pods to a scenario's
NodePool, and a watch of the NodeClaims that are being disrupted."""
import json
import os

from .core import ROOT
from .kubectl import Watch

DATA = os.path.join(ROOT, "tests", "data", "disrupt")
FLAGS = ["--scaler.disruption.pollPeriod", "1s", "--scaler.disruption.validationDelay", "1s"]


def start(c, *extra):
    c.start_nodewarden(*(FLAGS + list(extra)))
    c.apply(os.path.join(DATA, "pools.yaml"))


def deployment(name, scenario, replicas, cpu, annotations=None):
    ann = json.dumps(annotations or {})
    return """apiVersion: apps/v1
kind: Deployment
metadata: {name: %s, namespace: default}
spec:
  replicas: %d
  selector: {matchLabels: {app: %s}}
  template:
    metadata:
      labels: {app: %s}
      annotations: %s
    spec:
      nodeSelector: {scenario: %s}
      containers:
        - name: app
          image: nginx
          resources: {requests: {cpu: %s, memory: 64Mi}}
""" % (name, replicas, name, name, ann, scenario, cpu)


def pod(name, scenario, cpu, annotations=None):
    return """apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: default, annotations: %s}
spec:
  nodeSelector: {scenario: %s}
  containers:
    - name: app
      image: nginx
      resources: {requests: {cpu: %s, memory: 64Mi}}
""" % (name, json.dumps(annotations or {}), scenario, cpu)


def pool_claims(c, pool):
    return [nc for nc in c.items("nodeclaims")
            if nc["metadata"].get("labels", {}).get("karpenter.sh/nodepool") == pool]


def bound(c, selector):
    pods = c.items("pods", "-n", "default", "-l", selector)
    return pods if pods and all(p["spec"].get("nodeName") and
                                not p["metadata"].get("deletionTimestamp") for p in pods) else None


class DisruptionWatch(Watch):
    """Watches NodeClaims (kubectl get -w, one ordered stream) and keeps, for one NodePool,
    the largest number of its NodeClaims that were being disrupted at the same moment as
    the budget counts them: in a command (condition DisruptionReason) or being deleted,
    until their instance is terminating (InstanceTerminating=True: such a node no longer
    counts: kubernetes-sigs/karpenter pkg/controllers/disruption/helpers.go
    BuildDisruptionBudgetMapping)."""

    def __init__(self, c, pool):
        self.pool = pool
        self.now = set()
        self.most = 0
        super().__init__(c, "nodeclaims")

    def on_event(self, typ, o):
        if o.get("metadata", {}).get("labels", {}).get("karpenter.sh/nodepool") != self.pool:
            return
        name = o["metadata"]["name"]
        conds = {cd.get("type"): cd.get("status") for cd in o.get("status", {}).get("conditions", []) or []}
        busy = typ != "DELETED" and conds.get("InstanceTerminating") != "True" and (
            bool(o["metadata"].get("deletionTimestamp")) or "DisruptionReason" in conds)
        if busy:
            self.now.add(name)
        else:
            self.now.discard(name)
        self.most = max(self.most, len(self.now))

    def close(self):
        self.stop()
