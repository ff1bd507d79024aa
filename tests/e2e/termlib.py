"""Helpers for the termination end-to-end tests (tests/e2e/t_term_*): one CPU pool
and a Deployment on the simulator (tests/e2e/provlib.py), a watcher that counts the
Deployment's ready pods all along, and checks that a node and its NodeClaim are
gone with their instance terminated and finalizers removed.
"""
import threading
import time

from provlib import check, log, tag, wait_for  # noqa: F401

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


def ready(p):
    if p["metadata"].get("deletionTimestamp") or p.get("status", {}).get("phase") != "Running":
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in p.get("status", {}).get("conditions", []))


def app_pods(c, app):
    return c.items("pods", "-n", "default", "-l", "app=" + app)


def wait_ready(c, app, n, timeout=40, exclude_node=None):
    def ok():
        ps = [p for p in app_pods(c, app) if ready(p)]
        if exclude_node:
            ps = [p for p in ps if p["spec"].get("nodeName") != exclude_node]
        return ps if len(ps) >= n else None
    return wait_for("%d ready %s pods%s" % (n, app, " off " + exclude_node if exclude_node else ""),
                    ok, timeout=timeout)


class ReadyWatch:
    """Polls the Deployment's pods and keeps the lowest count of ready pods seen."""

    def __init__(self, c, app):
        self.c, self.app = c, app
        self.min_ready = None
        self.samples = 0
        self.stop_ev = threading.Event()
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        while not self.stop_ev.is_set():
            try:
                n = sum(1 for p in app_pods(self.c, self.app) if ready(p))
                self.min_ready = n if self.min_ready is None else min(self.min_ready, n)
                self.samples += 1
            except Exception:  # a kubectl hiccup is not a lost pod
                pass
            self.stop_ev.wait(0.2)

    def stop(self):
        self.stop_ev.set()
        self.t.join(10)
        return self.min_ready


def claim_of_node(c, node):
    pid = node["spec"].get("providerID")
    for nc in c.items("nodeclaims"):
        if nc.get("status", {}).get("providerID") == pid:
            return nc
    return None


def instance_id(pid):
    return pid.rsplit("/", 1)[-1]


def check_gone(c, node_name, claim_name, iid, timeout=30):
    wait_for("node %s gone" % node_name,
             lambda: node_name not in [n["metadata"]["name"] for n in c.items("nodes")], timeout=timeout)
    wait_for("NodeClaim %s gone" % claim_name,
             lambda: claim_name not in [n["metadata"]["name"] for n in c.items("nodeclaims")],
             timeout=timeout)
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


def events_for(c, reason, kind=None, name=None):
    return [e for e in c.events() if e.get("reason") == reason and
            (kind is None or e["involvedObject"].get("kind") == kind) and
            (name is None or e["involvedObject"].get("name") == name)]


def metric(c, name):
    """Sum of a nodewarden metric's samples (scraped through the webhook port)."""
    import re
    import ssl
    import urllib.request
    port = c.ports["webhook"]
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with urllib.request.urlopen("https://127.0.0.1:%d/metrics" % port, context=ctx, timeout=5) as r:
        text = r.read().decode()
    total = 0.0
    for line in text.splitlines():
        m = re.match(r"^%s(\{[^}]*\})? ([0-9.eE+-]+)$" % re.escape(name), line)
        if m:
            total += float(m.group(2))
    return total
