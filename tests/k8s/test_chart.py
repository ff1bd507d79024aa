"""The Helm chart (manifests/chart/nodewarden) with the pinned helm (tests/k8s/versions,
`make k8s-bins`): `helm lint` accepts the defaults and every bound of
values.schema.json's numeric values, refuses one step past each bound naming the
value, and `helm template` renders the edge values where the templates put them
(replicaCount 0 included: a user scaling the controller down). Run by `make test`
(job k8s/test_chart) with NW_K8S_BIN set."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from controlplane import default_bin_dir  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHART = os.path.join(ROOT, "manifests", "chart", "nodewarden")

# value -> (lowest accepted, highest accepted or None when unbounded); one step past
# each is refused (integers by 1, numbers by a small fraction)
BOUNDS = {
    "replicaCount": (0, 10),
    "service.port": (1, 65535),
    "webhook.port": (1, 65535),
    "metrics.port": (1, 65535),
    "webhook.timeoutSeconds.karpenter": (1, 30),
    "webhook.timeoutSeconds.pods": (1, 30),
    "certificates.helm.validityDays": (1, 36500),
    "settings.vmMemoryOverheadPercent": (0, 1),
    "settings.reservedENIs": (0, 1000),
    "kubernetes.qps": (0, None),
    "kubernetes.burst": (1, 100000),
    "podDisruptionBudget.maxUnavailable": (0, None),
}
NUMBERS = {"settings.vmMemoryOverheadPercent", "kubernetes.qps"}


class ChartTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.helm_bin = os.path.join(default_bin_dir(), "helm")
        if not os.access(cls.helm_bin, os.X_OK):
            raise unittest.SkipTest("no helm in %s: run `make k8s-bins`" % default_bin_dir())
        cls.tmp = tempfile.mkdtemp(prefix="nw-chart-")
        cls.env = dict(os.environ, **{k: os.path.join(cls.tmp, k.lower()) for k in (
            "HELM_CACHE_HOME", "HELM_CONFIG_HOME", "HELM_DATA_HOME")})

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def helm(self, *args):
        return subprocess.run([self.helm_bin] + list(args), capture_output=True, text=True,
                              env=self.env, timeout=120)

    def lint(self, *sets):
        return self.helm("lint", CHART, *[a for s in sets for a in ("--set", s)])

    def template(self, *sets):
        r = self.helm("template", "nodewarden", CHART, "--namespace", "nodewarden",
                      *[a for s in sets for a in ("--set", s)])
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout

    def test_defaults_lint(self):
        r = self.lint()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("1 chart(s) linted, 0 chart(s) failed", r.stdout)

    def test_bounds_accepted(self):
        for side in (0, 1):
            sets = ["%s=%s" % (k, b[side]) for k, b in sorted(BOUNDS.items()) if b[side] is not None]
            r = self.lint(*sets)
            self.assertEqual(r.returncode, 0, "%s refused: %s%s" % (sets, r.stdout, r.stderr))

    def test_past_bounds_refused_naming_each_value(self):
        for side in (0, 1):
            past = {k: b[side] + (1 - 2 * (side == 0)) * (0.01 if k in NUMBERS else 1)
                    for k, b in sorted(BOUNDS.items()) if b[side] is not None}
            r = self.lint(*["%s=%s" % kv for kv in sorted(past.items())])
            self.assertNotEqual(r.returncode, 0, "%s accepted" % past)
            for k, v in sorted(past.items()):
                self.assertIn("/" + k.replace(".", "/"), r.stdout + r.stderr,
                              "%s=%s: the error does not name the value" % (k, v))

    def test_pdb_percentages(self):
        keys = ("podDisruptionBudget.maxUnavailable", "podDisruptionBudget.minAvailable")
        for v in ("0%", "50%", "100%"):
            r = self.lint(*["%s=%s" % (k, v) for k in keys])
            self.assertEqual(r.returncode, 0, "%s: %s%s" % (v, r.stdout, r.stderr))
        for a, b in (("101%", "half"), ("-1", "1.5")):
            r = self.lint("%s=%s" % (keys[0], a), "%s=%s" % (keys[1], b))
            self.assertNotEqual(r.returncode, 0, "%s, %s accepted" % (a, b))
            for k in keys:
                self.assertIn("/" + k.replace(".", "/"), r.stdout + r.stderr)

    def test_edge_values_rendered(self):
        out = self.template("replicaCount=0", "service.port=65535", "webhook.port=1",
                            "webhook.timeoutSeconds.karpenter=30", "webhook.timeoutSeconds.pods=1",
                            "certificates.helm.validityDays=1", "settings.reservedENIs=1000",
                            "kubernetes.burst=100000", "settings.vmMemoryOverheadPercent=0",
                            "podDisruptionBudget.maxUnavailable=0", "webhook.pods=true")
        self.assertIn("\n  replicas: 0\n", out)
        self.assertIn('listen: "0.0.0.0:1"', out)
        self.assertIn("containerPort: 1\n", out)
        self.assertIn("      port: 65535\n", out)
        self.assertIn("timeoutSeconds: 30\n", out)
        self.assertIn("timeoutSeconds: 1\n", out)
        self.assertIn("reservedENIs: 1000\n", out)
        self.assertIn("burst: 100000\n", out)
        self.assertIn("maxUnavailable: 0\n", out)

    def docs_of(self, out, kind):
        return [d for d in yaml.safe_load_all(out) if d and d.get("kind") == kind]

    def test_metrics_port(self):
        """GET /metrics on a port of its own: the config, the container and the Service."""
        out = self.template("metrics.port=9090")
        self.assertIn('listen: "0.0.0.0:9090"', out)
        dep = self.docs_of(out, "Deployment")[0]
        ports = dep["spec"]["template"]["spec"]["containers"][0]["ports"]
        self.assertIn({"name": "http-metrics", "containerPort": 9090, "protocol": "TCP"}, ports)
        svc = self.docs_of(out, "Service")[0]
        self.assertIn({"name": "http-metrics", "port": 9090, "targetPort": "http-metrics",
                       "protocol": "TCP"}, svc["spec"]["ports"])
        self.assertEqual(self.docs_of(out, "ServiceMonitor"), [], "no ServiceMonitor by default")

    def test_service_monitor(self):
        out = self.template("serviceMonitor.enabled=true", "serviceMonitor.endpointConfig.interval=15s",
                            "serviceMonitor.additionalLabels.release=prom")
        sm = self.docs_of(out, "ServiceMonitor")[0]
        self.assertEqual(sm["apiVersion"], "monitoring.coreos.com/v1")
        self.assertEqual(sm["metadata"]["labels"]["release"], "prom")
        self.assertEqual(sm["spec"]["namespaceSelector"], {"matchNames": ["nodewarden"]})
        self.assertEqual(sm["spec"]["endpoints"], [{"port": "http-metrics", "path": "/metrics",
                                                    "scheme": "http", "interval": "15s"}])
        svc = self.docs_of(out, "Service")[0]
        for k, v in sm["spec"]["selector"]["matchLabels"].items():
            self.assertEqual(svc["metadata"]["labels"].get(k), v, "the ServiceMonitor selects the Service")

    def test_network_policy(self):
        """On by default: the webhook port only from the API server's addresses (the pod
        network excepted, per family), the metrics port only from Prometheus pods;
        egress left alone; off with networkPolicy.enabled=false."""
        out = self.template("networkPolicy.podCIDRs={10.244.0.0/16,fd00:10::/56}")
        np = self.docs_of(out, "NetworkPolicy")[0]
        spec = np["spec"]
        dep = self.docs_of(out, "Deployment")[0]
        self.assertEqual(spec["podSelector"]["matchLabels"], dep["spec"]["selector"]["matchLabels"])
        self.assertEqual(spec["policyTypes"], ["Ingress"])
        hook, metrics = spec["ingress"]
        self.assertEqual(hook["ports"], [{"port": "https-webhook", "protocol": "TCP"}])
        self.assertEqual(hook["from"], [{"ipBlock": {"cidr": "0.0.0.0/0", "except": ["10.244.0.0/16"]}},
                                        {"ipBlock": {"cidr": "::/0", "except": ["fd00:10::/56"]}}])
        self.assertEqual(metrics["ports"], [{"port": "http-metrics", "protocol": "TCP"}])
        self.assertEqual(metrics["from"], [{"namespaceSelector": {}, "podSelector": {
            "matchLabels": {"app.kubernetes.io/name": "prometheus"}}}])
        out = self.template("networkPolicy.apiServerCIDRs={10.0.0.10/32}")
        hook = self.docs_of(out, "NetworkPolicy")[0]["spec"]["ingress"][0]
        self.assertEqual(hook["from"], [{"ipBlock": {"cidr": "10.0.0.10/32"}}])
        self.assertEqual(self.docs_of(self.template("networkPolicy.enabled=false"), "NetworkPolicy"), [])
        r = self.lint("networkPolicy.apiServerCIDRs={not-a-cidr}")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("/networkPolicy/apiServerCIDRs/0", r.stdout + r.stderr)


if __name__ == "__main__":
    unittest.main()
