"""Helpers for the disruption end-to-end tests (tests/e2e/t_disrupt_*), on top of
provlib's Cluster: nodewarden with short disruption periods, workload manifests that
pin pods to a scenario's NodePool, the NodeClaims that are being disrupted, and the
scaler's /metrics."""
import json
import os
import re
import ssl
import subprocess
import threading
import urllib.request

from provlib import ROOT, wait_for  # noqa: F401

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


def metrics(c):
    cfg = open(os.path.join(c.dir, "nodewarden.yaml")).read()
    listen = re.search(r'listen:\s*"?([^"\s]+)"?', cfg).group(1)
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with urllib.request.urlopen("https://%s/metrics" % listen, context=ctx, timeout=10) as r:
        return r.read().decode()


def metric(text, name, **labels):
    """The value of one series (0 when absent)."""
    for line in text.splitlines():
        if not line.startswith(name):
            continue
        m = re.match(r'([a-z_]+)(\{[^}]*\})?\s+([0-9.e+]+)$', line)
        if not m or m.group(1) != name:
            continue
        got = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
        if all(got.get(k) == v for k, v in labels.items()):
            return float(m.group(3))
    return 0.0


def events_for(c, reason):
    return [e for e in c.events() if e.get("reason") == reason]


class DisruptionWatch:
    """Watches NodeClaims (kubectl get -w, one ordered stream) and keeps, for one NodePool,
    the largest number of its NodeClaims that were being disrupted at the same moment as
    the budget counts them: in a command (condition DisruptionReason) or being deleted,
    until their instance is terminating (InstanceTerminating=True: such a node no longer
    counts: kubernetes-sigs/karpenter pkg/controllers/disruption/helpers.go
    BuildDisruptionBudgetMapping)."""

    def __init__(self, c, pool):
        self.pool = pool
        self.lock = threading.Lock()
        self.now = set()
        self.most = 0
        self.proc = subprocess.Popen(["kubectl", "get", "nodeclaims", "-w", "--output-watch-events",
                                      "-o", "json"], env=c.env, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        dec = json.JSONDecoder()
        buf = ""
        for line in self.proc.stdout:
            buf += line
            while True:
                s = buf.lstrip()
                if not s:
                    buf = ""
                    break
                try:
                    obj, end = dec.raw_decode(s)
                except ValueError:
                    break
                buf = s[end:]
                with self.lock:
                    self._claim(obj.get("type"), obj.get("object", {}))

    def _claim(self, typ, o):
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
        self.proc.terminate()
        self.proc.wait()
