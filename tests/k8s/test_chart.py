"""The Helm chart (manifests/chart/nodewarden) with the pinned helm (tests/k8s/versions,
`make k8s-bins`): `helm lint` accepts the defaults and every bound of
values.schema.json's numeric values, refuses one step past each bound naming the
value, and `helm template` renders the edge values where the templates put them
(replicaCount 0 included: a user scaling the controller down); every configuration key
`nodewarden serve --help` lists reaches the rendered config.yaml from the values (set to
a non-default value each, all in one render, which nodewarden then loads). Run by
`make test` (job k8s/test_chart) with NW_K8S_BIN set."""
import json
import os
import re
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
    "webhook.threads": (0, 1024),
    "webhook.maxConnections": (0, 1000000),
    "webhook.connectionMemoryPercent": (1, 90),
    "aws.testing.maxResults": (0, 1000),
    "scaler.launchConcurrency": (0, 256),
}
NUMBERS = {"settings.vmMemoryOverheadPercent", "kubernetes.qps"}

NW_BIN = os.environ.get("NW_BIN", os.path.join(ROOT, "build", "nodewarden"))
FULLNAME = "nodewarden"  # release "nodewarden", no overrides
NS = "nodewarden"

# config keys that come from another value (key -> (value path, value set, config value)),
# every other key from the value of the same path
DERIVED = {
    "webhook.listen": ("webhook.port", 9555, "0.0.0.0:9555"),
    "metrics.listen": ("metrics.port", 9556, "0.0.0.0:9556"),
    "log.level": ("logLevel", "debug", "debug"),
    "scaler.disruption.spotToSpotConsolidation":
        ("settings.featureGates.spotToSpotConsolidation", True, True),
    "webhook.certDNSNames": ("webhook.certDNSNames", ["extra.example"],
                             ["%s.%s.svc" % (FULLNAME, NS), "extra.example"]),
    "gpu.exemptNamespaces": ("gpu.exemptNamespaces", ["team-a"], [NS, "team-a"]),
    "settings.featureGates": (
        "settings.featureGates.nodeOverlay", True,
        "ReservedCapacity=true,SpotToSpotConsolidation=true,NodeRepair=false,"
        "NodeOverlay=true,StaticCapacity=false,CapacityBuffer=false"),
}
# values that must be one of a few words
CHOICES = {"gpu.mode": "warn", "gpu.taint.effect": "NoExecute", "log.level": "debug",
           "settings.podDensity": "kubelet-default", "settings.minValuesPolicy": "BestEffort",
           "settings.preferencePolicy": "Ignore"}
# the one value without a default: every render below names a cluster unless it tests that
NAME = "settings.clusterName=test-cluster"


def serve_keys():
    """(key, type, default) of every configuration key `nodewarden serve --help` lists."""
    out = subprocess.run([NW_BIN, "serve", "--help"], capture_output=True, text=True,
                         timeout=30)
    rows = re.findall(r"^  --([a-zA-Z0-9.]+)\s+(string|int|number|bool|duration|list)\s+"
                      r"\(default \"(.*)\"\)$", out.stdout + out.stderr, re.M)
    return rows


def probe(key, typ, default, i):
    """A value of the key's type that is not its default (and passes its checks)."""
    if key in CHOICES:
        return CHOICES[key]
    if typ == "bool":
        return default != "true"
    if typ == "int":
        return int(default) + 1
    if typ == "number":
        return round(float(default) + 0.125, 3) if float(default) < 0.5 else float(default) + 1.5
    if typ == "duration":
        return "%ds" % (3 + i % 15)
    if typ == "list":
        return ["p%d-a" % i, "p%d-b" % i]
    if ".endpoints." in key:
        return "http://endpoint-%d.example:%d" % (i, 1000 + i)
    return "v-%d-%s" % (i, key.rsplit(".", 1)[1].lower())


def helm_set(path, value):
    """--set (or --set-json) arguments for one value."""
    if isinstance(value, (list, bool, int, float)):
        return ["--set-json", "%s=%s" % (path, json.dumps(value))]
    return ["--set-string", "%s=%s" % (path, value)]


def lookup(d, dotted):
    for part in dotted.split("."):
        if not isinstance(d, dict) or part not in d:
            return KeyError
        d = d[part]
    return d


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
        return self.helm("lint", CHART, *[a for s in (NAME,) + sets for a in ("--set", s)])

    def template(self, *sets, extra=()):
        r = self.helm("template", "nodewarden", CHART, "--namespace", "nodewarden",
                      *[a for s in (NAME,) + sets for a in ("--set", s)], *extra)
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


    # ---- the first install's values (issue 30) ----

    def test_cluster_name_required(self):
        """Empty settings.clusterName: the render fails and says what to set."""
        r = self.helm("template", "nodewarden", CHART, "--namespace", NS)
        self.assertNotEqual(r.returncode, 0, "rendered without a cluster name")
        self.assertIn("settings.clusterName is required", r.stderr)
        self.assertIn("--set settings.clusterName=", r.stderr)
        # (helm lint renders `required` as a warning: install and template are what fail)
        out = self.template()
        self.assertIn('clusterName: "test-cluster"', out)

    def test_global_accepted(self):
        """An umbrella chart's `global` passes the schema (and changes nothing)."""
        r = self.lint("global.imageRegistry=registry.example.com", "global.storageClass=gp3")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        # the same objects (the generated certificates aside)
        a, b = self.template("global.imageRegistry=registry.example.com"), self.template()
        self.assertEqual(self.docs_of(a, "ConfigMap"), self.docs_of(b, "ConfigMap"))
        self.assertEqual([d["spec"]["template"]["spec"] for d in self.docs_of(a, "Deployment")],
                         [d["spec"]["template"]["spec"] for d in self.docs_of(b, "Deployment")])

    def test_env_volumes_annotations_priority_digest(self):
        out = self.template(
            "podAnnotations.example\\.com/team=platform", "priorityClassName=infra-critical",
            "image.repository=registry.example.com/nodewarden", "image.tag=0.1.0",
            "image.digest=sha256:" + "a" * 64,
            extra=("--set-json", 'env=[{"name":"HTTPS_PROXY","value":"http://proxy:3128"}]',
                   "--set-json", 'envFrom=[{"configMapRef":{"name":"proxy-env"}}]',
                   "--set-json", 'extraVolumes=[{"name":"ca","configMap":{"name":"corp-ca"}}]',
                   "--set-json", 'extraVolumeMounts=[{"name":"ca","mountPath":"/etc/ca"}]'))
        pod = self.docs_of(out, "Deployment")[0]["spec"]["template"]
        self.assertEqual(pod["metadata"]["annotations"]["example.com/team"], "platform")
        spec = pod["spec"]
        self.assertEqual(spec["priorityClassName"], "infra-critical")
        c = spec["containers"][0]
        self.assertEqual(c["image"], "registry.example.com/nodewarden:0.1.0@sha256:" + "a" * 64)
        self.assertIn({"name": "HTTPS_PROXY", "value": "http://proxy:3128"}, c["env"])
        self.assertEqual(c["env"][0]["name"], "POD_NAME", "the chart's own variables stay first")
        self.assertEqual(c["envFrom"], [{"configMapRef": {"name": "proxy-env"}}])
        self.assertIn({"name": "ca", "configMap": {"name": "corp-ca"}}, spec["volumes"])
        self.assertIn({"name": "ca", "mountPath": "/etc/ca"}, c["volumeMounts"])
        self.assertEqual([v["name"] for v in spec["volumes"][:3]], ["config", "tls", "tmp"])
        # none of it by default
        c = self.docs_of(self.template(), "Deployment")[0]["spec"]["template"]["spec"]["containers"][0]
        self.assertNotIn("envFrom", c)
        self.assertEqual([e["name"] for e in c["env"]], ["POD_NAME", "POD_NAMESPACE"])
        r = self.lint("image.digest=sha256:xyz")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("/image/digest", r.stdout + r.stderr)

    def test_karpenter_values_file(self):
        """A values file written for Karpenter's chart: the keys that mean the same thing here
        are accepted and do it; one that does not is refused by name."""
        kv = {
            "replicas": 3, "revisionHistoryLimit": 2, "imagePullPolicy": "Always",
            "additionalLabels": {"team": "platform"}, "additionalAnnotations": {"owner": "sre"},
            "dnsPolicy": "Default", "terminationGracePeriodSeconds": 40,
            "strategy": {"rollingUpdate": {"maxUnavailable": 1}},
            "podDisruptionBudget": {"name": "karpenter", "maxUnavailable": 1},
            "extraVolumes": [{"name": "aws-iam-token", "projected": {"sources": []}}],
            "controller": {"image": {"repository": "registry.example.com/nw", "tag": "9.9.9",
                                     "digest": "sha256:" + "b" * 64},
                           "env": [{"name": "AWS_REGION", "value": "eu-west-1"}],
                           "envFrom": [],
                           "extraVolumeMounts": [{"name": "aws-iam-token", "mountPath": "/var/run/t"}],
                           "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
                           "metrics": {"port": 8000}},
            "settings": {"clusterName": "k-cluster", "reservedENIs": "0", "preferencePolicy": "Ignore",
                         "minValuesPolicy": "Strict", "batchMaxDuration": "10s",
                         "batchIdleDuration": "1s", "isolatedVPC": False, "eksControlPlane": False,
                         "ignoreDRARequests": True, "disableClusterStateObservability": False,
                         "disableDryRun": False,
                         "vmMemoryOverheadPercent": 0.075, "interruptionQueue": "",
                         "featureGates": {"nodeRepair": False, "nodeOverlay": False,
                                          "reservedCapacity": True, "spotToSpotConsolidation": False,
                                          "staticCapacity": False}},
            "logLevel": "info",
        }
        path = os.path.join(self.tmp, "karpenter-values.yaml")
        with open(path, "w") as f:
            yaml.safe_dump(kv, f)
        r = self.helm("template", "nodewarden", CHART, "--namespace", NS, "-f", path)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = r.stdout
        dep = self.docs_of(out, "Deployment")[0]
        self.assertEqual(dep["spec"]["replicas"], 3)
        self.assertEqual(dep["spec"]["revisionHistoryLimit"], 2)
        self.assertEqual(dep["spec"]["strategy"], {"rollingUpdate": {"maxUnavailable": 1}})
        self.assertEqual(dep["metadata"]["labels"]["team"], "platform")
        self.assertEqual(dep["metadata"]["annotations"], {"owner": "sre"})
        spec = dep["spec"]["template"]["spec"]
        self.assertEqual(spec["dnsPolicy"], "Default")
        self.assertEqual(spec["terminationGracePeriodSeconds"], 40)
        c = spec["containers"][0]
        self.assertEqual(c["image"], "registry.example.com/nw:9.9.9@sha256:" + "b" * 64)
        self.assertEqual(c["imagePullPolicy"], "Always")
        self.assertIn({"name": "AWS_REGION", "value": "eu-west-1"}, c["env"])
        self.assertIn({"name": "aws-iam-token", "mountPath": "/var/run/t"}, c["volumeMounts"])
        self.assertEqual(c["resources"], {"requests": {"cpu": "1", "memory": "1Gi"}})
        self.assertIn({"name": "http-metrics", "containerPort": 8000, "protocol": "TCP"}, c["ports"])
        self.assertEqual(self.docs_of(out, "PodDisruptionBudget")[0]["metadata"]["name"], "karpenter")
        cfg = yaml.safe_load(self.docs_of(out, "ConfigMap")[0]["data"]["config.yaml"])
        self.assertEqual(cfg["settings"]["reservedENIs"], 0)
        self.assertEqual(cfg["settings"]["preferencePolicy"], "Ignore")
        self.assertEqual(cfg["settings"]["clusterName"], "k-cluster")
        self.assertEqual(cfg["metrics"]["listen"], "0.0.0.0:8000")
        # reservedENIs as a string, other than "0"; not a number: refused, named
        out = self.template("settings.reservedENIs=7", extra=("--set-string", "settings.reservedENIs=7"))
        self.assertIn("reservedENIs: 7\n", out)
        for bad in ("seven", "1001", "-1"):
            r = self.helm("lint", CHART, "--set", NAME, "--set-string", "settings.reservedENIs=" + bad)
            self.assertNotEqual(r.returncode, 0, bad)
            self.assertIn("/settings/reservedENIs", r.stdout + r.stderr)
        # a key of Karpenter's with no meaning here, and eksControlPlane: true, are refused
        r = self.lint("settings.eksControlPlane=true")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("/settings/eksControlPlane", r.stdout + r.stderr)
        r = self.lint("webhook.metrics.port=8001")
        self.assertNotEqual(r.returncode, 0)

    def test_bootstrap_tokens_role_only_when_enabled(self):
        def roles(out):
            return sorted(o["metadata"]["name"] for o in self.docs_of(out, "Role")
                          if o["metadata"]["namespace"] == "kube-system")
        out = self.template()
        self.assertEqual(roles(out), ["nodewarden-cluster-info"])
        for o in self.docs_of(out, "Role") + self.docs_of(out, "ClusterRole"):
            for rule in o["rules"]:
                self.assertNotIn("secrets", rule["resources"], "no Secret permission by default")
        out = self.template("kubeadmBootstrap.enabled=true")
        self.assertEqual(roles(out), ["nodewarden-bootstrap-tokens", "nodewarden-cluster-info"])
        boot = [o for o in self.docs_of(out, "Role") if o["metadata"]["name"].endswith("-tokens")][0]
        self.assertEqual(boot["rules"], [{"apiGroups": [""], "resources": ["secrets"],
                                          "verbs": ["create", "delete"]}])
        self.assertEqual(len([b for b in self.docs_of(out, "RoleBinding")
                              if b["metadata"]["namespace"] == "kube-system"]), 2)
        # the service CIDR reads: ServiceCIDRs cluster-wide, kubeadm-config by name
        cr = self.docs_of(out, "ClusterRole")[0]
        self.assertIn({"apiGroups": ["networking.k8s.io"], "resources": ["servicecidrs"],
                       "verbs": ["list"]}, cr["rules"])

    def test_kube_version(self):
        """The webhooks use matchConditions: Kubernetes 1.28 or later."""
        with open(os.path.join(CHART, "Chart.yaml")) as f:
            self.assertEqual(yaml.safe_load(f)["kubeVersion"], ">=1.28.0-0")
        r = self.helm("template", "nodewarden", CHART, "--set", NAME, "--kube-version", "1.27.9")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("kubeVersion", r.stderr)
        r = self.helm("template", "nodewarden", CHART, "--set", NAME, "--kube-version", "1.28.0")
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_anti_affinity(self):
        """Required by default: never two replicas on one node, and a rollout that replaces
        in place; preferred (one-node clusters): spread when it can, surge rollouts."""
        dep = self.docs_of(self.template(), "Deployment")[0]["spec"]
        anti = dep["template"]["spec"]["affinity"]["podAntiAffinity"]
        req = anti["requiredDuringSchedulingIgnoredDuringExecution"]
        self.assertEqual([t["topologyKey"] for t in req], ["kubernetes.io/hostname"])
        self.assertEqual(req[0]["labelSelector"]["matchLabels"], dep["selector"]["matchLabels"])
        self.assertEqual([t["podAffinityTerm"]["topologyKey"] for t in
                          anti["preferredDuringSchedulingIgnoredDuringExecution"]],
                         ["topology.kubernetes.io/zone"])
        self.assertEqual(dep["strategy"]["rollingUpdate"], {"maxUnavailable": 1, "maxSurge": 0})
        dep = self.docs_of(self.template("podAntiAffinity=preferred"), "Deployment")[0]["spec"]
        anti = dep["template"]["spec"]["affinity"]["podAntiAffinity"]
        self.assertNotIn("requiredDuringSchedulingIgnoredDuringExecution", anti)
        self.assertEqual([t["podAffinityTerm"]["topologyKey"] for t in
                          anti["preferredDuringSchedulingIgnoredDuringExecution"]],
                         ["kubernetes.io/hostname", "topology.kubernetes.io/zone"])
        self.assertEqual(dep["strategy"]["rollingUpdate"], {"maxUnavailable": 0, "maxSurge": 1})
        r = self.lint("podAntiAffinity=sometimes")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("/podAntiAffinity", r.stdout + r.stderr)

    def test_values_comments_current(self):
        """values.yaml says what is true: staticCapacity is implemented, IMDS's default
        hop limit is 1."""
        with open(os.path.join(CHART, "values.yaml")) as f:
            text = f.read()
        self.assertNotIn("staticCapacity or", text)
        self.assertIn("staticCapacity (NodePools", text)
        self.assertNotIn("default hop limit of 2", text)
        self.assertIn("hop limit is 1, AWS's", text)

    def test_every_serve_key_reaches_the_config(self):
        if not os.access(NW_BIN, os.X_OK):
            self.skipTest("no %s: run `make`" % NW_BIN)
        import yaml
        # the crash campaign's hook (tests/cluster/crash) is for tests only: not a value
        keys = [k for k in serve_keys() if k[0] != "scaler.testing.crashAt"]
        self.assertGreater(len(keys), 60, "serve --help lists the configuration keys")
        want, args = {}, []
        for i, (key, typ, default) in enumerate(keys):
            if key in DERIVED:
                path, value, expect = DERIVED[key]
            else:
                path = key
                value = expect = probe(key, typ, default, i)
            want[key] = expect
            args += helm_set(path, value)
        r = self.helm("template", "nodewarden", CHART, "--namespace", NS,
                      "--show-only", "templates/configmap.yaml", *args)
        self.assertEqual(r.returncode, 0, r.stderr)
        text = yaml.safe_load(r.stdout)["data"]["config.yaml"]
        cfg = yaml.safe_load(text)
        missing = [k for k in want if lookup(cfg, k) is KeyError]
        self.assertEqual(missing, [], "keys the chart's config.yaml does not write")
        wrong = {k: (lookup(cfg, k), v) for k, v in want.items() if lookup(cfg, k) != v}
        self.assertEqual(wrong, {}, "key: (rendered, set through the values)")
        # and nodewarden loads what was rendered (every value valid, no unknown key)
        path = os.path.join(self.tmp, "config.yaml")
        with open(path, "w") as f:
            f.write(text)
        p = subprocess.run([NW_BIN, "serve", "--config", path, "--help"], capture_output=True,
                           text=True, timeout=30)
        self.assertNotIn("config.yaml", p.stdout + p.stderr)
        # the defaults render the defaults of `serve --help` (but where the chart differs)
        r = self.helm("template", "nodewarden", CHART, "--namespace", NS,
                      "--show-only", "templates/configmap.yaml", "--set", NAME)
        self.assertEqual(r.returncode, 0, r.stderr)
        cfg = yaml.safe_load(yaml.safe_load(r.stdout)["data"]["config.yaml"])
        chart_own = {"scaler.enabled", "webhook.certDNSNames", "gpu.exemptNamespaces",
                     "scaler.leaderElection.namespace", "scaler.leaderElection.name",
                     "settings.featureGates", "settings.clusterName",
                     # a pod behind a Service serves on after SIGTERM (kube-proxy's lag)
                     "webhook.shutdownDelay"}
        for key, typ, default in keys:
            if key in chart_own:
                continue
            got = lookup(cfg, key)
            if typ == "list":
                got = ",".join(got)
            elif typ == "bool":
                got = "true" if got else "false"
            elif typ in ("int", "number"):
                got = "%g" % got
                default = "%g" % float(default)
            self.assertEqual(str(got), default, "%s: the chart's default differs" % key)


if __name__ == "__main__":
    unittest.main()
