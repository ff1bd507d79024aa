"""Helpers for the termination end-to-end tests (tests/e2e/t_term_*): one CPU pool
and a Deployment, a watcher that counts the Deployment's ready pods all along, and
checks that a node and its NodeClaim are gone with their instance terminated and
finalizers removed.
"""
import time

from .core import check, log, wait_for
from .kubectl import Watch
from .objects import cond, events_for, instance_id, pod_ready, tag, ts

POOL = """apiVersion: karpenter.k8s.aws/v1
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
    cat > /etc/default/kubelet <<EOT
    KUBELET_EXTRA_ARGS="--register-with-taints=karpenter.sh/unregistered:NoExecute"
    EOT
    kubeadm join 10.0.0.10:6443 --token abcdef.0123456789abcdef --discovery-token-ca-cert-hash sha256:0000
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    metadata: {labels: {workload: general}}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: kubernetes.io/arch, operator: In, values: [amd64]}
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
        - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m]}
        - {key: karpenter.k8s.aws/instance-generation, operator: Gt, values: ["5"]}
%(tgp)s
"""


def pool(tgp=None):
    return POOL % {"tgp": "      terminationGracePeriod: %s" % tgp if tgp else ""}


def deployment(name="web", replicas=4, cpu="550m", annotations=None, grace=None):
    ann = ""
    if annotations:
        ann = "      annotations: {%s}\n" % ", ".join('%s: "%s"' % kv for kv in annotations.items())
    g = "      terminationGracePeriodSeconds: %d\n" % grace if grace is not None else ""
    return """apiVersion: apps/v1
kind: Deployment
metadata: {name: %(name)s, namespace: default}
spec:
  replicas: %(replicas)d
  selector: {matchLabels: {app: %(name)s}}
  template:
    metadata:
      labels: {app: %(name)s}
%(ann)s    spec:
%(grace)s      containers:
        - name: c
          image: nginx
          resources: {requests: {cpu: %(cpu)s, memory: 128Mi}}
""" % {"name": name, "replicas": replicas, "cpu": cpu, "ann": ann, "grace": g}


def app_pods(c, app):
    return c.items("pods", "-n", "default", "-l", "app=" + app)


def wait_ready(c, app, n, timeout=60, exclude_node=None):
    def ok():
        ps = [p for p in app_pods(c, app) if pod_ready(p)]
        if exclude_node:
            ps = [p for p in ps if p["spec"].get("nodeName") != exclude_node]
        return ps if len(ps) >= n else None
    return wait_for(ok,
                    timeout, "%d ready %s pods%s" % (n, app, " off " + exclude_node if exclude_node else ""))


class ReadyWatch(Watch):
    """Watches the Deployment's pods and keeps the lowest count of ready pods seen
    after the count first reached `full` (the watch's initial listing ramps up)."""

    def __init__(self, c, app, full):
        self.pods = {}
        self.full = full
        self.min_ready = None
        self.samples = 0
        super().__init__(c, "pods", "-n", "default", "-l", "app=" + app)

    def on_event(self, typ, obj):
        name = obj.get("metadata", {}).get("name")
        if typ == "DELETED":
            self.pods.pop(name, None)
        elif name:
            self.pods[name] = obj
        n = sum(1 for p in self.pods.values() if pod_ready(p))
        if self.min_ready is None and n < self.full:
            return
        self.samples += 1
        self.min_ready = n if self.min_ready is None else min(self.min_ready, n)

    def stop(self):
        super().stop()
        return self.min_ready


def claim_of_node(c, node):
    pid = node["spec"].get("providerID")
    for nc in c.items("nodeclaims"):
        if nc.get("status", {}).get("providerID") == pid:
            return nc
    return None


def check_gone(c, node_name, claim_name, iid, timeout=30):
    wait_for(lambda: node_name not in [n["metadata"]["name"] for n in c.items("nodes")],
             timeout, "node %s gone" % node_name)
    wait_for(lambda: claim_name not in [n["metadata"]["name"] for n in c.items("nodeclaims")],
             timeout, "NodeClaim %s gone" % claim_name)
    states = {i["InstanceId"]: i["State"]["Name"] for i in c.instances(live=False)}
    check(states.get(iid) in ("shutting-down", "terminated"),
          "instance %s terminated (%s)" % (iid, states.get(iid)))


def check_no_leak(c):
    """Every live instance belongs to a NodeClaim that exists, and every NodeClaim and
    Node still there is not stuck in deletion."""
    claims = {n["metadata"]["name"] for n in c.items("nodeclaims")}
    for i in c.instances():
        check(tag(i, "karpenter.sh/nodeclaim") in claims,
              "instance %s belongs to a live NodeClaim (%s)" % (i["InstanceId"], tag(i, "karpenter.sh/nodeclaim")))
    for kind in ("nodes", "nodeclaims"):
        for o in c.items(kind):
            check(not o["metadata"].get("deletionTimestamp"),
                  "%s %s is not stuck being deleted" % (kind, o["metadata"]["name"]))


# nodewarden flags for a story that wants its Deployment's pods on one node (one_node): on
# the real backend the kube-scheduler marks the pods unschedulable one by one over a second
# or two, and the harness's 300 ms batch idle window (now that a launch no longer holds the
# provisioner's tick) closes between them, giving a node per batch; 2 s gathers them
ONE_BATCH = ("--settings.batchIdleDuration", "2s")


def one_node(c):
    pods = wait_ready(c, "web", 4)
    names = {p["spec"]["nodeName"] for p in pods}
    check(len(names) == 1, "the 4 pods share one node (%s)" % sorted(names))
    node = c.get("node", names.pop())
    nc = claim_of_node(c, node)
    check(nc is not None, "the node has a NodeClaim (%s)" % node["metadata"]["name"])
    return node, nc


def drain_and_check(c, node, nc, how, volume=False):
    """Delete the NodeClaim (how="nodeclaim") or the Node and check the whole graceful
    termination from the recorded versions of both objects. Returns the Evicted events."""
    nname, cname = node["metadata"]["name"], nc["metadata"]["name"]
    iid = instance_id(node["spec"]["providerID"])
    wn = Watch(c, "nodes", "--field-selector", "metadata.name=" + nname)
    wc = Watch(c, "nodeclaims", "--field-selector", "metadata.name=" + cname)
    wait_for(lambda: wn.versions() and wc.versions(), 15, "the watches' initial listing")
    t0 = time.time()
    try:
        if how == "nodeclaim":
            c.kubectl("delete", "nodeclaim", cname, "--wait=false")
        else:
            c.kubectl("delete", "node", nname, "--wait=false")

        def disrupted(n):
            t = [x for x in (n.get("spec") or {}).get("taints", []) if x["key"] == "karpenter.sh/disrupted"]
            return n if t and n["metadata"].get("deletionTimestamp") else None
        n = wait_for(lambda: next(filter(None, map(disrupted, wn.versions())), None),
                     20, "node %s being deleted and tainted" % nname, interval=0.1)
        t = [x for x in n["spec"]["taints"] if x["key"] == "karpenter.sh/disrupted"]
        check(len(t) == 1 and t[0]["effect"] == "NoSchedule" and not t[0].get("value"),
              "taint karpenter.sh/disrupted:NoSchedule")
        check(n["metadata"]["labels"].get("node.kubernetes.io/exclude-from-external-load-balancers") == "karpenter",
              "label node.kubernetes.io/exclude-from-external-load-balancers=karpenter")
        check("karpenter.sh/termination" in n["metadata"].get("finalizers", []),
              "the node keeps its finalizer while draining")

        def annotated(x):
            return x if x["metadata"].get("annotations", {}).get(
                "karpenter.sh/nodeclaim-termination-timestamp") else None
        x = wait_for(lambda: next(filter(None, map(annotated, wc.versions())), None),
                     20, "termination-timestamp annotation on %s" % cname, interval=0.1)
        md = x["metadata"]
        check(ts(md["annotations"]["karpenter.sh/nodeclaim-termination-timestamp"]) - ts(md["deletionTimestamp"])
              == 3600, "annotation = deletionTimestamp + terminationGracePeriod (%s, deleted %s)"
              % (md["annotations"]["karpenter.sh/nodeclaim-termination-timestamp"], md["deletionTimestamp"]))

        pods = wait_ready(c, "web", 4, timeout=60, exclude_node=nname)
        log("4 pods ready on new capacity after %.1f s" % (time.time() - t0))
        check(all(p["spec"]["nodeName"] != nname for p in pods), "all 4 pods moved off %s" % nname)
        wait_for(lambda: any(cond(v, "Drained") == "True" for v in wc.versions()),
                 30, "Drained=True on %s" % cname, interval=0.2)
        first_true = next(i for i, v in enumerate(wc.versions()) if cond(v, "Drained") == "True")
        check(any(cond(v, "Drained") == "Unknown" for v in wc.versions()[:first_true]),
              "NodeClaim Drained=Unknown while draining, then Drained=True")
        if volume:
            wait_for(lambda: any(cond(v, "VolumesDetached") == "Unknown" for v in wc.versions()),
                     20, "VolumesDetached=Unknown while the VolumeAttachment remains")
            wait_for(lambda: events_for(c, "AwaitingVolumeDetachment", kind="Node", name=nname),
                     10, "Warning AwaitingVolumeDetachment on the node")
            time.sleep(1.5)
            check(not any(o["metadata"].get("finalizers") is None or
                          "karpenter.sh/termination" not in o["metadata"].get("finalizers", [])
                          for o in wn.versions()) and
                  iid in [i["InstanceId"] for i in c.instances()],
                  "node (finalizer kept) and instance wait for the VolumeAttachment")
            c.kubectl("delete", "volumeattachment", "csi-data")
            wait_for(lambda: any(cond(v, "VolumesDetached") == "True" for v in wc.versions()),
                     20, "VolumesDetached=True")
        check_gone(c, nname, cname, iid, timeout=60)
        log("node and NodeClaim gone after %.1f s" % (time.time() - t0))
        last = wc.versions()[-1] if wc.versions() else {}
        check(any(cond(v, "InstanceTerminating") == "True" for v in wc.versions()),
              "NodeClaim InstanceTerminating=True before it went (%s)" % cond(last, "InstanceTerminating"))
    finally:
        wn.stop()
        wc.stop()
    return [e for e in events_for(c, "Evicted", kind="Pod") if e.get("message") == "Evicted pod"]
