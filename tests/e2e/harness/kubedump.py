"""`nodewarden kube-dump`: what it must print (from kubectl) and a --follow reader."""
import json
import os
import signal
import subprocess
import tempfile
import threading

from .core import NW_BIN, check, wait_for

# resource name as kubectl knows it -> key in kube-dump's output, namespaced
RESOURCES = [
    ("pods", "pods", True),
    ("nodes", "nodes", False),
    ("nodepools.karpenter.sh", "nodepools", False),
    ("ec2nodeclasses.karpenter.k8s.aws", "ec2nodeclasses", False),
    ("nodeclaims.karpenter.sh", "nodeclaims", False),
    ("poddisruptionbudgets", "poddisruptionbudgets", True),
    ("daemonsets", "daemonsets", True),
    ("persistentvolumes", "persistentvolumes", False),
    ("persistentvolumeclaims", "persistentvolumeclaims", True),
    ("storageclasses.storage.k8s.io", "storageclasses", False),
    ("namespaces", "namespaces", False),
    ("csinodes.storage.k8s.io", "csinodes", False),
    ("resourceclaims.resource.k8s.io", "resourceclaims", True),
    ("resourceclaimtemplates.resource.k8s.io", "resourceclaimtemplates", True),
    ("deviceclasses.resource.k8s.io", "deviceclasses", False),
]
KINDS = {"Pod": "pods", "Node": "nodes", "NodePool": "nodepools", "EC2NodeClass": "ec2nodeclasses",
         "NodeClaim": "nodeclaims", "PodDisruptionBudget": "poddisruptionbudgets",
         "DaemonSet": "daemonsets", "PersistentVolume": "persistentvolumes",
         "PersistentVolumeClaim": "persistentvolumeclaims", "StorageClass": "storageclasses",
         "Namespace": "namespaces", "CSINode": "csinodes", "ResourceClaim": "resourceclaims",
         "ResourceClaimTemplate": "resourceclaimtemplates", "DeviceClass": "deviceclasses"}


def expected(c):
    """What kube-dump must print, from one `kubectl get` of every kind."""
    namespaced = {key: ns for _, key, ns in RESOURCES}
    out = {key: [] for _, key, _ in RESOURCES}
    for it in c.items(",".join(r for r, _, _ in RESOURCES), "-A"):
        key = KINDS[it["kind"]]
        m = it["metadata"]
        out[key].append("%s/%s" % (m["namespace"], m["name"]) if namespaced[key] else m["name"])
    return {k: sorted(v) for k, v in out.items()}


class Follower:
    """`nodewarden kube-dump --follow --metrics`; collects the JSON lines it prints."""

    def __init__(self, kubeconfig, *extra):
        self.errf = tempfile.NamedTemporaryFile(prefix="nw-e2e-follow-", suffix=".log", delete=False)
        # short back-off steps (100 ms..2 s instead of 800 ms..30 s): the retries are
        # the same, the test waits less for them
        self.proc = subprocess.Popen([NW_BIN, "kube-dump", "--kubeconfig", kubeconfig, "--follow",
                                      "--metrics", "--backoff", "100", "--backoff-max", "2000"]
                                     + list(extra), stdout=subprocess.PIPE, stderr=self.errf)
        self.lines = []
        self.lock = threading.Lock()
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()

    def _read(self):
        for line in self.proc.stdout:
            with self.lock:
                self.lines.append(json.loads(line))

    def last(self):
        with self.lock:
            return self.lines[-1] if self.lines else None

    def converges_to(self, want, timeout, what):
        """Wait until the last dump equals want (a timeout fails the story, naming what)."""
        wait_for(lambda: self.last() == want, timeout, what, interval=0.2)
        check(True, what)

    def stop(self):
        """SIGTERM; returns (exit code, stderr text)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.t.join(5)
        self.errf.close()
        with open(self.errf.name) as f:
            err = f.read()
        os.unlink(self.errf.name)
        return self.proc.returncode, err
