"""Helpers for the repair end-to-end stories (tests/e2e/t_repair_*): an m5.large
on-demand pool with one 1200m pod per node, waiting for N initialized NodeClaims with their
pods Running, and following a NodeClaim until it is gone (remembering its
deletionTimestamp and termination-timestamp annotation on the way)."""
from .core import wait_for
from .objects import cond, instance_id

ANN_TERMINATION = "karpenter.sh/nodeclaim-termination-timestamp"


def manifests(replicas):
    return """apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  amiFamily: Custom
  role: KarpenterNodeRole-sim-cluster
  amiSelectorTerms: [{tags: {karpenter.sh/discovery: sim-cluster}}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: sim-cluster}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: sim-cluster}}]
  userData: |
    #!/bin/bash
    kubeadm join 10.0.0.10:6443 --token abcdef.0123456789abcdef --discovery-token-ca-cert-hash sha256:0000
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  disruption: {consolidateAfter: Never}
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: %d
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: web
          image: nginx
          resources: {requests: {cpu: 1200m, memory: 256Mi}}
""" % replicas


def iid(nc):
    return instance_id(nc["status"]["providerID"])


def live_claims(c):
    return {n["metadata"]["name"]: n for n in c.items("nodeclaims")
            if not n["metadata"].get("deletionTimestamp")}


def wait_ready(c, n, what, not_=()):
    """The n live, initialized NodeClaims (none named in not_) once n pods run."""
    def ready():
        ncs = [x for x in live_claims(c).values() if cond(x, "Initialized") == "True"
               and x["metadata"]["name"] not in not_]
        pods = [p for p in c.items("pods", "-n", "default")
                if p.get("status", {}).get("phase") == "Running"
                and not p["metadata"].get("deletionTimestamp")]
        return len(ncs) == n and len(pods) == n and ncs or None
    return wait_for(ready, 90, what)


def follow_until_gone(c, name, seen):
    """Wait until NodeClaim name is gone; seen gets its "deletion" timestamp and its
    "annotation" (the termination timestamp) when they were observed."""
    def gone():
        o = {x["metadata"]["name"]: x for x in c.items("nodeclaims")}.get(name)
        if o is not None and o["metadata"].get("deletionTimestamp"):
            seen.setdefault("deletion", o["metadata"]["deletionTimestamp"])
            a = o["metadata"].get("annotations", {}).get(ANN_TERMINATION)
            if a:
                seen.setdefault("annotation", a)
        return o is None
    return wait_for(gone, 90, "NodeClaim %s deleted and gone" % name, interval=0.2)
