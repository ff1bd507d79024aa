#!/usr/bin/env python3
"""`make run`: nodewarden on the cluster simulator, with a readable timeline.

Starts the simulator (Kubernetes API + EC2) and `nodewarden serve` against it
with the scaler on (webhooks registered through the simulator with the dev CA),
then plays the provisioning half of the story with the real kubectl:
  1. the CPU and GPU NodePools and EC2NodeClasses are applied (admission defaults
     them, the GPU policy taints the GPU pool);
  2. an invalid NodePool is refused with its field path;
  3. a GPU pod without a toleration is fixed by the mutating webhook;
  4. a 4-replica web Deployment and a CUDA pod arrive: nodewarden launches a CPU
     instance and a g6 instance, the kubelets join, the pods bind;
  5. the workloads leave: the nodes become empty, and after the pools'
     consolidateAfter (5m and 10m in the examples, shortened to 5 s and 8 s here)
     nodewarden's disruption controller decides "Empty", taints each node
     karpenter.sh/disrupted:NoSchedule, drains it through the Eviction API,
     terminates the instance and removes the Node and the NodeClaim.
Exit 0 when every step happened as described. With CLUSTER=real (`make run
CLUSTER=real`) the same story plays on the real control plane of tests/cluster
(kube-apiserver, kube-scheduler, kube-controller-manager, nodewarden installed by
`helm install` and run with the chart's ServiceAccount; docs/testing-real-cluster.md).
"""
import json
import os
import signal
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
os.environ.setdefault("NW_BIN", os.path.join(ROOT, "build", "nodewarden"))
from harness import wait_for  # noqa: E402
from harness.cluster import new as new_cluster  # noqa: E402

DATA = os.path.join(ROOT, "tests", "data", "provision")

T0 = time.time()


def say(msg):
    print("[%5.1fs] %s" % (time.time() - T0, msg), flush=True)


BAD_POOL = """apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: broken}
spec:
  weight: 0
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: []}
"""

GPU_POD = """apiVersion: v1
kind: Pod
metadata: {name: gpu-no-toleration, namespace: default}
spec:
  containers:
  - name: cuda
    image: nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0
    resources: {limits: {nvidia.com/gpu: "1"}}
"""


def run(c):
    server = json.loads(c.kubectl("config", "view", "--minify", "-o", "json"))["clusters"][0]["cluster"]["server"]
    say("%s up: kube-apiserver %s, EC2 %s" % (
        "real control plane (nodewarden installed by helm)" if c.backend == "real" else "simulator",
        server, c.env.get("AWS_ENDPOINT_URL_EC2")))
    c.start_nodewarden("--scaler.disruption.pollPeriod", "1s",
                       "--scaler.disruption.validationDelay", "2s")
    say("nodewarden serving the webhooks and running the scaler")

    c.apply(os.path.join(DATA, "pools.yaml"))
    for np in c.items("nodepools"):
        taints = [t["key"] for t in np["spec"]["template"]["spec"].get("taints", [])]
        say("NodePool %-8s admitted: consolidationPolicy=%s, taints=%s" % (
            np["metadata"]["name"], np["spec"]["disruption"]["consolidationPolicy"], taints))
    for name, after in (("default", "5s"), ("gpu", "8s")):
        c.kubectl("patch", "nodepool", name, "--type", "merge",
                  "-p", json.dumps({"spec": {"disruption": {"consolidateAfter": after}}}))
    say("consolidateAfter shortened for the demo: default 5s, gpu 8s")

    p = c.kubectl.proc("apply", "-f", "-", input=BAD_POOL)
    if p.returncode == 0 or "spec.weight" not in p.stderr:
        raise AssertionError("the invalid NodePool was not refused with its field path: "
                             + p.stdout + p.stderr)
    say("invalid NodePool refused: " + p.stderr.strip().splitlines()[-1][:300])

    c.apply(GPU_POD)
    pod = c.get("pod", "gpu-no-toleration", "-n", "default")
    tols = [t for t in pod["spec"].get("tolerations", []) if t.get("key") == "gpu"]
    sel = pod["spec"].get("nodeSelector", {})
    if not tols or sel.get("node.accelerator") != "nvidia-gpu":
        raise AssertionError("GPU pod was not fixed by the webhook: " + json.dumps(pod["spec"])[:400])
    say("GPU pod without toleration fixed by the webhook: toleration %s, nodeSelector %s"
        % (json.dumps(tols[0]), json.dumps(sel)))
    c.kubectl("delete", "pod", "gpu-no-toleration", "-n", "default", "--wait=false")

    t_work = time.time()
    c.apply(os.path.join(DATA, "workload.yaml"))
    say("workload applied: 4 x web (550m/128Mi) and a CUDA pod (nvidia.com/gpu: 1)")

    def bound():
        pods = [p for p in c.items("pods", "-n", "default")
                if not p["metadata"].get("deletionTimestamp")]
        return pods if len(pods) == 5 and all(p["spec"].get("nodeName") for p in pods) else None

    seen = set()

    def progress():
        for nc in c.items("nodeclaims"):
            n = nc["metadata"]["name"]
            if n not in seen and nc.get("status", {}).get("providerID"):
                seen.add(n)
                say("NodeClaim %s launched: %s in %s (%s)" % (
                    n, nc["metadata"]["labels"].get("node.kubernetes.io/instance-type"),
                    nc["metadata"]["labels"].get("topology.kubernetes.io/zone"),
                    nc["metadata"]["labels"].get("karpenter.sh/capacity-type")))
        return bound()

    pods = wait_for(progress, 60, "all pods bound")
    nodes = {n["metadata"]["name"]: n for n in c.items("nodes")}
    for p in sorted(pods, key=lambda p: p["metadata"]["name"]):
        n = nodes.get(p["spec"]["nodeName"], {"metadata": {"labels": {}}})
        say("pod %-22s -> node %s (%s, pool %s)" % (
            p["metadata"]["name"], p["spec"]["nodeName"],
            n["metadata"]["labels"].get("node.kubernetes.io/instance-type"),
            n["metadata"]["labels"].get("karpenter.sh/nodepool")))
    say("all 5 pods running %.1f s after the workload arrived; instances: %s" % (
        time.time() - t_work, ", ".join(sorted(i["InstanceType"] for i in c.instances()))))

    c.kubectl("delete", "-f", os.path.join(DATA, "workload.yaml"), "--wait=false")
    wait_for(lambda: not [p for p in c.items("pods", "-n", "default")
                                           if not p["metadata"].get("deletionTimestamp")] or None, 30, "workload gone")
    say("workloads left; the %d nodes are now empty" % len(c.items("nodes")))
    scale_down(c)
    c.stop_nodewarden()
    say("nodewarden stopped on SIGTERM; demo done")


def scale_down(c):
    """Follow the nodes from empty to gone, printing each transition once."""
    t_empty = time.time()
    said = set()
    reasons = {}

    def once(key, msg):
        if key not in said:
            said.add(key)
            say(msg)

    def step():
        for ev in c.events():
            obj = ev.get("involvedObject", {})
            if obj.get("kind") in ("NodeClaim", "Node") and ev.get("reason") not in (
                    "Launched", "Registered", "Initialized", "NodeReady", "RegisteredNode",
                    "Starting", "NodeHasSufficientMemory"):
                once(("ev", ev["metadata"]["name"]), "event %s %s: %s %s" % (
                    obj.get("kind"), obj.get("name"), ev.get("reason"),
                    (ev.get("message") or "")[:160]))
        claims = c.items("nodeclaims")
        for nc in claims:
            n = nc["metadata"]["name"]
            for cd in nc.get("status", {}).get("conditions", []):
                if cd.get("type") == "DisruptionReason" and cd.get("status") == "True":
                    reasons[n] = cd.get("reason")
            if nc["metadata"].get("deletionTimestamp"):
                once(("del", n), "NodeClaim %s deleting (disruption reason: %s)"
                     % (n, reasons.get(n, "?")))
        for node in c.items("nodes"):
            for t in node.get("spec", {}).get("taints", []) or []:
                if t.get("key") == "karpenter.sh/disrupted":
                    once(("taint", node["metadata"]["name"]),
                         "node %s tainted karpenter.sh/disrupted:NoSchedule, draining"
                         % node["metadata"]["name"])
        live = c.instances()
        for i in c.instances(live=False):
            if i["State"]["Name"] not in ("pending", "running"):
                once(("term", i["InstanceId"]), "instance %s (%s) %s" % (
                    i["InstanceId"], i["InstanceType"], i["State"]["Name"]))
        if not claims and not live and not c.items("nodes"):
            return True
        return None

    wait_for(step, 90, "idle nodes drained and terminated", interval=0.5)
    say("scale-down done %.1f s after the workloads left: no NodeClaims, no nodes, "
        "no running instances" % (time.time() - t_empty))


def main():
    # SIGTERM ends the demo like Ctrl-C: nodewarden first, then the cluster (with a handler
    # of ours, tests/k8s/controlplane.py does not stop the control plane under it first)
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(128 + signal.SIGTERM))
    # CLUSTER=real (make run CLUSTER=real): the real control plane of tests/cluster
    c = new_cluster("real" if os.environ.get("CLUSTER") == "real" else "sim", boot_delay=1.0)
    ok = False
    try:
        run(c)
        ok = True
    except AssertionError as e:
        print("demo failed:", e, flush=True)
    finally:
        c.close(keep=not ok)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
