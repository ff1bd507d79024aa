"""Smoke test of the real control plane (tests/k8s/controlplane.py) at the pinned
versions: the server is the pinned kube-apiserver, the controllers and the
scheduler act, RBAC denies what was not granted, and stopping leaves no process.
Run by `make test` (job k8s/test_controlplane) with NW_K8S_BIN set."""
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from controlplane import ControlPlane  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def pinned():
    v = {}
    with open(os.path.join(HERE, "versions")) as f:
        for line in f:
            if "=" in line and not line.startswith("#"):
                k, _, val = line.strip().partition("=")
                v[k] = val
    return v


def alive(pid):
    """True while pid exists and is not a zombie."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_for(what, fn, timeout=60):
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %d s waiting for %s" % (timeout, what))
        time.sleep(0.2)


DEPLOYMENT = {
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "smoke"},
    "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
             "template": {"metadata": {"labels": {"app": "web"}},
                          "spec": {"containers": [{"name": "web",
                                                   "image": "registry.k8s.io/pause:3.10"}]}}},
}


class ControlPlaneTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="nw-cp-")
        cls.cp = ControlPlane(cls.tmp)
        cls.cp.start()
        print("control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler)"
              " started in %.1f s" % cls.cp.startup_seconds, file=sys.stderr)

    @classmethod
    def tearDownClass(cls):
        cls.cp.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def kubectl_json(self, *args, **kw):
        return json.loads(self.cp.kubectl(*args, "-o", "json", **kw).stdout)

    def test_a_versions(self):
        v = json.loads(self.cp.kubectl("version", "-o", "json").stdout)
        want = pinned()["K8S_VERSION"]
        self.assertEqual(v["serverVersion"]["gitVersion"], want)
        self.assertEqual(v["clientVersion"]["gitVersion"], want)
        etcd = subprocess.run([os.path.join(self.cp.bin_dir, "etcd"), "--version"],
                              capture_output=True, text=True, check=True).stdout
        self.assertIn("etcd Version: " + pinned()["ETCD_VERSION"].lstrip("v"), etcd)

    def test_deployment_to_pending_pod(self):
        self.cp.kubectl("create", "namespace", "smoke")
        wait_for("default ServiceAccount in smoke", lambda: self.cp.kubectl(
            "get", "sa", "default", "-n", "smoke", check=False).returncode == 0)
        self.cp.kubectl("apply", "-f", "-", input=json.dumps(DEPLOYMENT))
        rs = wait_for("a ReplicaSet of deployment web", lambda: self.kubectl_json(
            "get", "replicasets", "-n", "smoke", "-l", "app=web")["items"])
        self.assertEqual(len(rs), 1)
        self.assertEqual([(o["kind"], o["name"]) for o in rs[0]["metadata"]["ownerReferences"]],
                         [("Deployment", "web")])

        def unschedulable():
            pods = self.kubectl_json("get", "pods", "-n", "smoke", "-l", "app=web")["items"]
            for p in pods:
                for c in p.get("status", {}).get("conditions", []):
                    if c["type"] == "PodScheduled" and c.get("reason") == "Unschedulable":
                        return pods
            return None
        pods = wait_for("the pod marked Unschedulable by kube-scheduler", unschedulable)
        self.assertEqual(len(pods), 1)
        pod = pods[0]
        self.assertEqual(pod["status"]["phase"], "Pending")
        self.assertNotIn("nodeName", pod["spec"])
        self.assertEqual(pod["metadata"]["ownerReferences"][0]["name"], rs[0]["metadata"]["name"])
        # the ServiceAccount admission plugin mounted the token volume
        self.assertEqual(pod["spec"]["serviceAccountName"], "default")

    def test_rbac_denies_unprivileged_serviceaccount(self):
        self.cp.kubectl("create", "namespace", "rbac")
        self.cp.kubectl("create", "serviceaccount", "nobody", "-n", "rbac")
        token = self.cp.create_token("rbac", "nobody")
        kc = self.cp.token_kubeconfig(os.path.join(self.tmp, "nobody.kubeconfig"), token)
        who = json.loads(self.cp.kubectl("auth", "whoami", "-o", "json", kubeconfig=kc).stdout)
        self.assertEqual(who["status"]["userInfo"]["username"], "system:serviceaccount:rbac:nobody")
        r = self.cp.kubectl("auth", "can-i", "create", "deployments", "-n", "rbac",
                            kubeconfig=kc, check=False)
        self.assertEqual((r.returncode, r.stdout.strip()), (1, "no"))
        r = self.cp.kubectl("auth", "can-i", "create", "deployments", "-n", "rbac", check=False)
        self.assertEqual((r.returncode, r.stdout.strip()), (0, "yes"))  # admin may
        ctx = ssl.create_default_context(cafile=self.cp.ca_file)
        req = urllib.request.Request(self.cp.server + "/api/v1/namespaces/rbac/pods",
                                     headers={"Authorization": "Bearer " + token})
        with self.assertRaises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req, context=ctx, timeout=10)
        self.assertEqual(e.exception.code, 403)
        self.assertIn("system:serviceaccount:rbac:nobody", e.exception.read().decode())
        # granted through a RoleBinding, the same request is allowed
        self.cp.kubectl("create", "rolebinding", "nobody-view", "-n", "rbac",
                        "--clusterrole", "view", "--serviceaccount", "rbac:nobody")
        wait_for("the view role to apply", lambda: self.cp.kubectl(
            "auth", "can-i", "list", "pods", "-n", "rbac", kubeconfig=kc,
            check=False).returncode == 0, timeout=30)

    def test_z_stop_leaves_no_process(self):
        pids = self.cp.pids()
        self.assertEqual(sorted(pids), ["apiserver", "etcd", "kcm", "scheduler"])
        self.assertTrue(all(alive(p) for p in pids.values()))
        self.cp.stop()
        self.assertEqual([c for c, p in pids.items() if alive(p)], [])


class IssueCertTest(unittest.TestCase):
    def test_concurrent_certificates_verify_with_distinct_serials(self):
        """issue_cert from many threads at once (node agents registering side by side):
        every certificate verifies against the CA and no two share a serial."""
        tmp = tempfile.mkdtemp(prefix="nw-cp-certs-")
        try:
            cp = ControlPlane(tmp, components=("etcd",), bin_dir=tmp)
            os.makedirs(cp.pki)
            cp._make_ca("ca", "nodewarden-test-ca")
            out, errors = {}, []

            def issue(i):
                try:
                    out[i] = cp.issue_cert("node-%d" % i, "system:node:node-%d" % i,
                                           orgs=["system:nodes"], client=True)
                except Exception as e:
                    errors.append(e)
            threads = [threading.Thread(target=issue, args=(i,)) for i in range(16)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            self.assertEqual(errors, [])
            self.assertEqual(len(out), 16)
            serials = set()
            for i, (crt, key) in sorted(out.items()):
                r = subprocess.run(["openssl", "verify", "-CAfile", cp.ca_file, crt],
                                   capture_output=True, text=True)
                self.assertEqual((r.returncode, r.stdout.strip()), (0, crt + ": OK"), r.stderr)
                r = subprocess.run(["openssl", "x509", "-in", crt, "-noout", "-serial", "-subject"],
                                   capture_output=True, text=True, check=True)
                self.assertIn("CN = system:node:node-%d" % i, r.stdout)
                serials.add(r.stdout.splitlines()[0])
            self.assertEqual(len(serials), 16, serials)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


class SigtermTest(unittest.TestCase):
    def test_sigterm_stops_everything(self):
        """A test process that gets SIGTERM takes its control plane down with it."""
        tmp = tempfile.mkdtemp(prefix="nw-cp-term-")
        try:
            code = ("import json, sys, time; sys.path.insert(0, %r)\n"
                    "from controlplane import ControlPlane\n"
                    "cp = ControlPlane(%r, components=('etcd', 'apiserver')); cp.start()\n"
                    "print(json.dumps(cp.pids()), flush=True); time.sleep(300)\n") % (HERE, tmp)
            p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
            try:
                pids = json.loads(p.stdout.readline())
                self.assertEqual(sorted(pids), ["apiserver", "etcd"])
                p.send_signal(signal.SIGTERM)
                self.assertEqual(p.wait(30), 128 + signal.SIGTERM)
            finally:
                p.kill()
                p.wait()
                p.stdout.close()
            self.assertEqual([c for c, pid in pids.items() if alive(pid)], [])
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
