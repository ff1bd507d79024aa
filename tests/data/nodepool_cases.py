"""NodePool admission cases (aws/karpenter-provider-aws pkg/apis/crds/karpenter.sh_nodepools.yaml);
written by admission_cases.py."""
from admission_cases import DEL, GATE, cel, enum, ge, le, mod, pat, req, typ

QN = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\/))?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$"
LV = r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"
DURN = r"^(([0-9]+(s|m|h))+|Never)$"
DUR = r"^([0-9]+(s|m|h))+$"
BDUR = r"^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$"
CRON = r"^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\s(.+)\s(.+)\s(.+)\s(.+))$"
NODES = r"^((100|[0-9]{1,2})%|[0-9]+)$"
QTY = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
OPS = ["Gte", "Lte", "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"]
POLICIES = ["WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"]
REASONS = ["Underutilized", "Empty", "Drifted"]

T = "spec.template.spec"
R0 = T + ".requirements[0]"
RL = T + ".requirements"
LBL = "spec.template.metadata.labels"
M_IN = "requirements with operator 'In' must have a value defined"
M_NUM = "requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single positive integer value"
M_MIN = "requirements with 'minValues' must have at least that many values specified in the 'values' field"

BASE = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "default"},
    "spec": {
        "template": {
            "spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                "requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}],
            }
        }
    },
}

FULL = mod(BASE,
           ("spec.template.spec.expireAfter", "720h"),
           ("spec.disruption", {"consolidateAfter": "30s", "consolidationPolicy": "WhenEmpty",
                                "budgets": [{"nodes": "10%"}]}))

DEF_DISRUPTION = {"consolidateAfter": "0s", "consolidationPolicy": "WhenEmptyOrUnderutilized",
                  "budgets": [{"nodes": "10%"}]}
PATCH_MIN = [{"op": "add", "path": "/spec/disruption", "value": DEF_DISRUPTION},
             {"op": "add", "path": "/spec/template/spec/expireAfter", "value": "720h"}]

OK = {"expect": "allowed"}
# "stricter": why `nodewarden serve` (GPU isolation policy on, its default) refuses a case
# the API server admits from Karpenter's CRDs alone (tests/oracle/oracle.py checks it)
GPU_FULL = ("GPU isolation policy: a CPU pool must exclude GPU instance types, and at the "
            "100-requirement limit the mutating webhook cannot add "
            "karpenter.k8s.aws/instance-gpu-count DoesNotExist for it")
GPU_TAINT = ("GPU isolation policy: the pool carries the GPU taint (gpu=true:NoSchedule) but "
             "its requirements also allow non-GPU instances (ambiguous)")


def deny(*lines, gate=False):
    return {"expect": list(lines) + ([GATE] if gate else [])}


def reqs(*items):
    return ("spec.template.spec.requirements", list(items))


def full(*changes):
    return mod(FULL, *changes)


def cases():
    c = []
    add = c.append
    # ---- defaulting (the CRD's schema defaults) ----
    add(("default-minimal", BASE, {"expect": "allowed", "patch": PATCH_MIN, "nowarnings": True}))
    add(("default-nothing-when-set", FULL, {"expect": "allowed", "patch": None, "nowarnings": True}))
    add(("default-disruption-null", mod(BASE, ("spec.disruption", None)),
         {"expect": "allowed", "patch": PATCH_MIN}))
    add(("default-disruption-nested", mod(BASE, ("spec.disruption", {"consolidateAfter": "1m"}),
                                          ("spec.template.spec.expireAfter", "Never")),
         {"expect": "allowed", "patch": [
             {"op": "add", "path": "/spec/disruption/consolidationPolicy", "value": "WhenEmptyOrUnderutilized"},
             {"op": "add", "path": "/spec/disruption/budgets", "value": [{"nodes": "10%"}]}]}))
    add(("default-empty-budgets-kept", full(("spec.disruption.budgets", [])),
         {"expect": "allowed", "patch": None}))
    add(("default-budget-item-nodes", full(("spec.disruption.budgets", [
        {"nodes": "5"}, {"schedule": "0 9 * * mon-fri", "duration": "8h"}, {"nodes": None, "reasons": ["Empty"]}])),
        {"expect": "allowed", "patch": [
            {"op": "add", "path": "/spec/disruption/budgets/1/nodes", "value": "10%"},
            {"op": "add", "path": "/spec/disruption/budgets/2/nodes", "value": "10%"}]}))
    add(("default-expireafter-null", full(("spec.template.spec.expireAfter", None)),
         {"expect": "allowed", "patch": [{"op": "add", "path": "/spec/template/spec/expireAfter", "value": "720h"}]}))
    add(("default-no-spec", mod(BASE, ("spec", DEL)), dict(deny(req("spec"), gate=True), patch=None)))
    add(("consolidateafter-required-in-disruption", full(("spec.disruption.consolidateAfter", DEL)),
         dict(deny(req("spec.disruption.consolidateAfter"), gate=True), patch=None)))
    # ---- required structure ----
    add(("template-required", mod(BASE, ("spec.template", DEL)), deny(req("spec.template"), gate=True)))
    add(("template-spec-required", mod(BASE, ("spec.template.spec", DEL), ("spec.template.metadata", {"labels": {"a": "b"}})),
         deny(req("spec.template.spec"), gate=True)))
    add(("spec-wrong-type", mod(BASE, ("spec", "x")), deny(typ("spec", "string", "object"), gate=True)))
    add(("nodeclassref-required", full(("spec.template.spec.nodeClassRef", DEL)),
         deny(req(T + ".nodeClassRef"), gate=True)))
    add(("nodeclassref-fields-required", full(("spec.template.spec.nodeClassRef", {})),
         deny(req(T + ".nodeClassRef.group"), req(T + ".nodeClassRef.kind"), req(T + ".nodeClassRef.name"), gate=True)))
    add(("nodeclassref-empty-strings", full(("spec.template.spec.nodeClassRef", {"group": "", "kind": "", "name": ""})),
         deny(cel(T + ".nodeClassRef.group", "string", "group may not be empty", ""),
              cel(T + ".nodeClassRef.kind", "string", "kind may not be empty", ""),
              cel(T + ".nodeClassRef.name", "string", "name may not be empty", ""))))
    add(("nodeclassref-group-slash", full(("spec.template.spec.nodeClassRef.group", "karpenter.k8s.aws/v1")),
         deny(pat(T + ".nodeClassRef.group", "karpenter.k8s.aws/v1", "^[^/]*$"))))
    add(("nodeclassref-other-kind-warns", full(("spec.template.spec.nodeClassRef.kind", "FooNodeClass")),
         {"expect": "allowed", "warnings": ["unsupported node class"]}))
    add(("nodeclassref-group-immutable", full(("spec.template.spec.nodeClassRef.group", "example.com")),
         deny(cel(T + ".nodeClassRef", "object", "nodeClassRef.group is immutable")), FULL))
    add(("nodeclassref-kind-immutable", full(("spec.template.spec.nodeClassRef.kind", "Other")),
         deny(cel(T + ".nodeClassRef", "object", "nodeClassRef.kind is immutable")), FULL))
    add(("nodeclassref-name-mutable", full(("spec.template.spec.nodeClassRef.name", "other")), OK, FULL))
    add(("nodeclassref-transition-skipped-without-old", full(("spec.template.spec.nodeClassRef.group", "example.com")),
         dict(OK, old_invalid="the old NodePool lacks the required nodeClassRef, so no API server "
                              "with these CRDs can hold it (an object stored before the CRDs were)"),
         mod(FULL, ("spec.template.spec.nodeClassRef", DEL))))
    # ---- requirements (spec.template.spec.requirements and the CEL rules on their keys) ----
    add(("requirements-required", full(("spec.template.spec.requirements", DEL)), deny(req(RL), gate=True)))
    add(("requirements-empty-list-ok", full(reqs()), OK))
    add(("requirements-too-many", full(reqs(*[{"key": f"example.com/k{i}", "operator": "Exists"} for i in range(101)])),
         deny(f"{RL}: Too many: 101: must have at most 100 items", gate=True)))
    add(("requirements-100-ok", full(reqs(*[{"key": f"example.com/k{i}", "operator": "Exists"} for i in range(100)])),
         dict(OK, stricter=GPU_FULL)))
    add(("requirement-key-required", full(reqs({"operator": "Exists"})), deny(req(R0 + ".key"), gate=True)))
    add(("requirement-operator-required", full(reqs({"key": "a"})), deny(req(R0 + ".operator"), gate=True)))
    add(("requirement-operator-enum", full(reqs({"key": "a", "operator": "in", "values": ["x"]})),
         deny(enum(R0 + ".operator", "in", OPS), gate=True)))
    add(("requirement-all-operators-ok", full(reqs(*[
        {"key": "example.com/a", "operator": "In", "values": ["x"]},
        {"key": "example.com/b", "operator": "NotIn", "values": ["x"]},
        {"key": "example.com/c", "operator": "Exists"},
        {"key": "example.com/d", "operator": "DoesNotExist"},
        {"key": "karpenter.k8s.aws/instance-cpu", "operator": "Gt", "values": ["0"]},
        {"key": "karpenter.k8s.aws/instance-cpu", "operator": "Lt", "values": ["+64"]},
        {"key": "karpenter.k8s.aws/instance-memory", "operator": "Gte", "values": ["2048"]},
        {"key": "karpenter.k8s.aws/instance-memory", "operator": "Lte", "values": ["007"]}])), OK))
    long_key = "a" * 317
    add(("requirement-key-too-long", full(reqs({"key": long_key, "operator": "Exists"})),
         deny(f"{R0}.key: Too long: may not be more than 316 bytes", gate=True)))
    add(("requirement-key-316-ok-warns", full(reqs({"key": "a" * 316, "operator": "Exists"})),
         {"expect": "allowed", "warnings": ["is not a qualified name, name part must be no more than 63 characters"]}))
    for i, bad in enumerate(["Test.com/test", "test/test/test", "test/", "/test", "test.com.com}"]):
        add((f"requirement-key-pattern-{i}", full(reqs({"key": bad, "operator": "Exists"})),
             deny(pat(R0 + ".key", bad, QN))))
    for i, k in enumerate(["karpenter.sh/foo", "fookarpenter.sh/x", "karpenter.sh", "x.karpenter.sh/y"]):
        add((f"requirement-key-karpenter-sh-{i}", full(reqs({"key": k, "operator": "Exists"})),
             deny(cel(R0 + ".key", "string", 'label domain "karpenter.sh" is restricted', k))))
    add(("requirement-key-nodepool", full(reqs({"key": "karpenter.sh/nodepool", "operator": "In", "values": ["a"]})),
         deny(cel(R0 + ".key", "string", 'label "karpenter.sh/nodepool" is restricted', "karpenter.sh/nodepool"))))
    add(("requirement-key-hostname", full(reqs({"key": "kubernetes.io/hostname", "operator": "In", "values": ["a"]})),
         deny(cel(R0 + ".key", "string", 'label "kubernetes.io/hostname" is restricted', "kubernetes.io/hostname"))))
    add(("requirement-key-aws-instance-pods", full(reqs({"key": "karpenter.k8s.aws/instance-pods", "operator": "Exists"})),
         deny(cel(R0 + ".key", "string", 'label domain "karpenter.k8s.aws" is restricted', "karpenter.k8s.aws/instance-pods"))))
    add(("requirement-key-aws-suffix", full(reqs({"key": "x.karpenter.k8s.aws/instance-family", "operator": "Exists"})),
         deny(cel(R0 + ".key", "string", 'label domain "karpenter.k8s.aws" is restricted', "x.karpenter.k8s.aws/instance-family"))))
    add(("requirement-keys-allowed", full(reqs(*[
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]},
        {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m6i"]},
        {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m"]},
        {"key": "karpenter.k8s.aws/placement-group-partition", "operator": "Exists"},
        {"key": "topology.k8s.aws/zone-id", "operator": "In", "values": ["usw2-az1"]},
        {"key": "node.kubernetes.io/instance-type", "operator": "NotIn", "values": ["t3.micro"]},
        {"key": "kops.k8s.io/instancegroup", "operator": "Exists"},
        {"key": "Name_Only", "operator": "Exists"}])), {"expect": "allowed", "nowarnings": True}))
    add(("requirement-key-ec2nodeclass-warns", full(reqs({"key": "karpenter.k8s.aws/ec2nodeclass", "operator": "Exists"})),
         {"expect": "allowed", "warnings": ["label karpenter.k8s.aws/ec2nodeclass is restricted"]}))
    add(("requirement-in-empty-values", full(reqs({"key": "a", "operator": "In", "values": []})),
         deny(cel(RL, "array", M_IN))))
    add(("requirement-in-no-values", full(reqs({"key": "a", "operator": "In"})),
         deny(f'{RL}: Invalid value: "array": no such key: values evaluating rule: {M_IN}')))
    add(("requirement-notin-no-values-ok", full(reqs({"key": "a", "operator": "NotIn"})), OK))
    add(("requirement-exists-with-values-ok", full(reqs({"key": "a", "operator": "Exists", "values": ["x"]})), OK))
    add(("requirement-gt-not-int", full(reqs({"key": "a", "operator": "Gt", "values": ["a"]})),
         deny(f"{RL}: Invalid value: \"array\": type conversion error from 'string' to 'int' evaluating rule: {M_NUM}")))
    add(("requirement-gt-decimal", full(reqs({"key": "a", "operator": "Gte", "values": ["1.5"]})),
         deny(f"{RL}: Invalid value: \"array\": type conversion error from 'string' to 'int' evaluating rule: {M_NUM}")))
    add(("requirement-lt-negative", full(reqs({"key": "a", "operator": "Lt", "values": ["-1"]})),
         deny(cel(RL, "array", M_NUM))))
    add(("requirement-gt-two-values", full(reqs({"key": "a", "operator": "Gt", "values": ["1", "2"]})),
         deny(cel(RL, "array", M_NUM))))
    add(("requirement-lte-no-values-list", full(reqs({"key": "a", "operator": "Lte", "values": []})),
         deny(cel(RL, "array", M_NUM))))
    add(("requirement-false-beats-eval-error", full(reqs({"key": "a", "operator": "Gt", "values": ["x"]},
                                                         {"key": "b", "operator": "Gt", "values": ["-3"]})),
         deny(cel(RL, "array", M_NUM))))
    add(("requirement-minvalues-min", full(reqs({"key": "a", "operator": "In", "values": ["x"], "minValues": 0})),
         deny(ge(R0 + ".minValues", 0, 1))))
    add(("requirement-minvalues-max", full(reqs({"key": "a", "operator": "In", "values": ["x"], "minValues": 51})),
         deny(le(R0 + ".minValues", 51, 50), cel(RL, "array", M_MIN))))
    add(("requirement-minvalues-too-few", full(reqs({"key": "a", "operator": "In", "values": ["x", "y"], "minValues": 3})),
         deny(cel(RL, "array", M_MIN))))
    add(("requirement-minvalues-dupes-count", full(reqs({"key": "a", "operator": "In", "values": ["x", "x", "y"], "minValues": 3})), OK))
    add(("requirement-minvalues-notin-ignored", full(reqs({"key": "a", "operator": "NotIn", "values": ["x"], "minValues": 5})), OK))
    add(("requirement-minvalues-type", full(reqs({"key": "a", "operator": "In", "values": ["x"], "minValues": "2"})),
         deny(typ(R0 + ".minValues", "string", "integer"), gate=True)))
    add(("requirement-values-not-validated", full(reqs({"key": "a", "operator": "In", "values": ["has space", "x" * 80]})),
         {"expect": "allowed", "warnings": ["invalid value has space for key a", "must be no more than 63 characters"]}))
    add(("requirement-values-type", full(reqs({"key": "a", "operator": "In", "values": [5]})),
         deny(typ(R0 + ".values[0]", "integer", "string"), gate=True)))
    add(("requirement-capacity-type-unknown-warns", full(reqs({"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["cheap"]})),
         {"expect": "allowed", "warnings": ["no valid values found in [cheap] for karpenter.sh/capacity-type"]}))
    add(("requirement-alias-key-normalised", full(reqs({"key": "beta.kubernetes.io/arch", "operator": "In", "values": ["amd64"]})),
         {"expect": "allowed", "nowarnings": True}))
    add(("requirement-key-restricted-runtime-warns", full(reqs({"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
                                                               {"key": "sub.karpenter.sh.example/x", "operator": "Exists"})),
         {"expect": "allowed", "nowarnings": True}))
    # ---- labels (spec.template.metadata.labels and the CEL rules on their keys) ----
    add(("labels-too-many", full(("spec.template.metadata.labels", {f"k{i}": "v" for i in range(101)})),
         deny(f"{LBL}: Too many: 101: must have at most 100 items", gate=True)))
    add(("labels-value-too-long", full(("spec.template.metadata.labels", {"team": "x" * 64})),
         deny(f"{LBL}.team: Too long: may not be more than 63 bytes", gate=True)))
    add(("labels-value-pattern", full(("spec.template.metadata.labels", {"team": "bad value"})),
         deny(pat(LBL + ".team", "bad value", LV))))
    add(("labels-value-empty-ok", full(("spec.template.metadata.labels", {"team": ""})), OK))
    add(("labels-key-not-pattern-checked", full(("spec.template.metadata.labels", {"has space": "x"})),
         {"expect": "allowed", "warnings": ["invalid label key"]}))
    add(("labels-karpenter-sh", full(("spec.template.metadata.labels", {"karpenter.sh/foo": "x", "fookarpenter.sh/y": "z"})),
         deny(cel(LBL, "object", 'label domain "karpenter.sh" is restricted'))))
    add(("labels-nodepool", full(("spec.template.metadata.labels", {"karpenter.sh/nodepool": "x"})),
         deny(cel(LBL, "object", 'label "karpenter.sh/nodepool" is restricted'))))
    add(("labels-hostname", full(("spec.template.metadata.labels", {"kubernetes.io/hostname": "x"})),
         deny(cel(LBL, "object", 'label "kubernetes.io/hostname" is restricted'))))
    add(("labels-aws-domain", full(("spec.template.metadata.labels", {"karpenter.k8s.aws/instance-pods": "x"})),
         deny(cel(LBL, "object", 'label domain "karpenter.k8s.aws" is restricted'))))
    add(("labels-all-rules", full(("spec.template.metadata.labels", {
        "karpenter.k8s.aws/foo": "a", "kubernetes.io/hostname": "b", "karpenter.sh/x": "c"})),
        deny(cel(LBL, "object", 'label domain "karpenter.sh" is restricted'),
             cel(LBL, "object", 'label "kubernetes.io/hostname" is restricted'),
             cel(LBL, "object", 'label domain "karpenter.k8s.aws" is restricted'))))
    add(("labels-allowed", full(("spec.template.metadata.labels", {
        "team": "a", "karpenter.sh/capacity-type": "spot", "node.kubernetes.io/role": "x",
        "karpenter.k8s.aws/instance-family": "m6i", "example.com/gpu": "true"})),
        {"expect": "allowed"}))
    add(("labels-value-type", full(("spec.template.metadata.labels", {"n": 5})),
         deny(typ(LBL + ".n", "integer", "string"), gate=True)))
    add(("annotations-free", full(("spec.template.metadata.annotations", {"karpenter.sh/do-not-disrupt": "true", "x y": ""})), OK))
    add(("annotations-type", full(("spec.template.metadata.annotations", {"a": True})),
         deny(typ("spec.template.metadata.annotations.a", "boolean", "string"), gate=True)))
    # ---- taints (spec.template.spec.taints, startupTaints) ----
    TA = T + ".taints[0]"
    add(("taints-valid", full(("spec.template.spec.taints", [
        {"key": "gpu", "value": "true", "effect": "NoSchedule"},
        {"key": "example.com/x", "value": "a/b", "effect": "NoExecute", "timeAdded": "2024-01-01T00:00:00Z"},
        {"key": "k", "effect": "PreferNoSchedule"}])), {"expect": "allowed", "nowarnings": True,
                                                        "stricter": GPU_TAINT}))
    add(("taints-key-required-effect-required", full(("spec.template.spec.taints", [{"value": "x"}])),
         deny(req(TA + ".key"), req(TA + ".effect"), gate=True)))
    add(("taints-key-empty", full(("spec.template.spec.taints", [{"key": "", "effect": "NoSchedule"}])),
         deny(f'{TA}.key: Invalid value: "": {TA}.key in body should be at least 1 chars long')))
    add(("taints-key-pattern", full(("spec.template.spec.taints", [{"key": "Bad.Domain/x", "effect": "NoSchedule"}])),
         deny(pat(TA + ".key", "Bad.Domain/x", QN))))
    add(("taints-value-empty", full(("spec.template.spec.taints", [{"key": "a", "value": "", "effect": "NoSchedule"}])),
         deny(pat(TA + ".value", "", QN))))
    add(("taints-effect-enum", full(("spec.template.spec.taints", [{"key": "a", "effect": "NoSchedul"}])),
         deny(enum(TA + ".effect", "NoSchedul", EFFECTS), gate=True)))
    add(("taints-time-added-format", full(("spec.template.spec.taints", [{"key": "a", "effect": "NoExecute", "timeAdded": "yesterday"}])),
         deny(f'{TA}.timeAdded: Invalid value: "yesterday": {TA}.timeAdded in body must be of type date-time: "yesterday"', gate=True)))
    ST = T + ".startupTaints[0]"
    add(("startup-taints-rules", full(("spec.template.spec.startupTaints", [{"key": "a", "value": "", "effect": "Bad"}])),
         deny(pat(ST + ".value", "", QN), enum(ST + ".effect", "Bad", EFFECTS), gate=True)))
    add(("startup-taints-valid", full(("spec.template.spec.startupTaints", [{"key": "node.cilium.io/agent-not-ready", "value": "true", "effect": "NoExecute"}])), OK))
    add(("taints-duplicate-warns", full(("spec.template.spec.taints", [{"key": "a", "effect": "NoSchedule"}]),
                                        ("spec.template.spec.startupTaints", [{"key": "a", "value": "x", "effect": "NoSchedule"}])),
         {"expect": "allowed", "warnings": ["duplicate taint"]}))
    # ---- durations (expireAfter, terminationGracePeriod, consolidateAfter) ----
    for i, v in enumerate(["30s", "1h30m5s", "720h", "0s", "Never"]):
        add((f"expireafter-ok-{i}", full(("spec.template.spec.expireAfter", v)), OK))
    for i, v in enumerate(["1hr", "-1s", "1.5h", "10ms", "1d", "FooNever", "never"]):
        add((f"expireafter-bad-{i}", full(("spec.template.spec.expireAfter", v)), deny(pat(T + ".expireAfter", v, DURN))))
    add(("termination-grace-ok", full(("spec.template.spec.terminationGracePeriod", "48h")), OK))
    add(("termination-grace-never", full(("spec.template.spec.terminationGracePeriod", "Never")),
         deny(pat(T + ".terminationGracePeriod", "Never", DUR))))
    add(("consolidateafter-never-ok", full(("spec.disruption.consolidateAfter", "Never")), OK))
    add(("consolidateafter-bad", full(("spec.disruption.consolidateAfter", "1d")),
         deny(pat("spec.disruption.consolidateAfter", "1d", DURN))))
    # ---- disruption (spec.disruption) ----
    add(("policy-balanced-ok", full(("spec.disruption.consolidationPolicy", "Balanced")), OK))
    add(("policy-enum", full(("spec.disruption.consolidationPolicy", "WhenUnderutilized")),
         deny(enum("spec.disruption.consolidationPolicy", "WhenUnderutilized", POLICIES), gate=True)))
    B0 = "spec.disruption.budgets[0]"
    add(("budgets-too-many", full(("spec.disruption.budgets", [{"nodes": "1"}] * 51)),
         deny("spec.disruption.budgets: Too many: 51: must have at most 50 items", gate=True)))
    add(("budgets-schedule-without-duration", full(("spec.disruption.budgets", [{"nodes": "1", "schedule": "@daily"}])),
         deny(cel("spec.disruption.budgets", "array", "'schedule' must be set with 'duration'"))))
    add(("budgets-duration-without-schedule", full(("spec.disruption.budgets", [{"nodes": "1"}, {"nodes": "1", "duration": "1h"}])),
         deny(cel("spec.disruption.budgets", "array", "'schedule' must be set with 'duration'"))))
    for i, v in enumerate(["10%", "100%", "0", "0%", "5", "500"]):
        add((f"budget-nodes-ok-{i}", full(("spec.disruption.budgets", [{"nodes": v}])), OK))
    for i, v in enumerate(["1000%", "101%", "-10", "-10%", "10.5%", "ten"]):
        add((f"budget-nodes-bad-{i}", full(("spec.disruption.budgets", [{"nodes": v}])), deny(pat(B0 + ".nodes", v, NODES))))
    for i, v in enumerate(["0 9 * * mon-fri", "@daily", "@annually", "0 22 * * sat,sun", "@hourly trailing", "1 2 3 4 5 6"]):
        add((f"budget-schedule-ok-{i}", full(("spec.disruption.budgets", [{"nodes": "1", "schedule": v, "duration": "1h"}])), OK))
    for i, v in enumerate(["*", "* * * * ", "@every 5m", "@reboot", "0 9 * *"]):
        add((f"budget-schedule-bad-{i}", full(("spec.disruption.budgets", [{"nodes": "1", "schedule": v, "duration": "1h"}])),
             deny(pat(B0 + ".schedule", v, CRON))))
    for i, v in enumerate(["20m", "8h", "2h20m", "8h0m0s", "20m0s"]):
        add((f"budget-duration-ok-{i}", full(("spec.disruption.budgets", [{"nodes": "1", "schedule": "@daily", "duration": v}])), OK))
    for i, v in enumerate(["30s", "1h30m15s", "1m30m"]):
        add((f"budget-duration-bad-{i}", full(("spec.disruption.budgets", [{"nodes": "1", "schedule": "@daily", "duration": v}])),
             deny(pat(B0 + ".duration", v, BDUR))))
    add(("budget-reasons-ok", full(("spec.disruption.budgets", [{"nodes": "1", "reasons": ["Underutilized", "Empty", "Drifted"]}])), OK))
    add(("budget-reasons-enum", full(("spec.disruption.budgets", [{"nodes": "1", "reasons": ["Expired"]}])),
         deny(enum(B0 + ".reasons[0]", "Expired", REASONS), gate=True)))
    add(("budget-reasons-duplicate", full(("spec.disruption.budgets", [{"nodes": "1", "reasons": ["Drifted", "Drifted"]}])),
         deny(f'{B0}.reasons[1]: Duplicate value: "Drifted"')))
    add(("budget-reasons-too-many", full(("spec.disruption.budgets", [{"nodes": "1", "reasons": ["Empty"] * 51}])),
         deny(B0 + ".reasons: Too many: 51: must have at most 50 items",
              B0 + '.reasons[1]: Duplicate value: "Empty"', gate=True)))
    # ---- limits (spec.limits) ----
    add(("limits-ok", full(("spec.limits", {"cpu": 1000, "memory": "1000Gi", "nvidia.com/gpu": "8", "nodes": "10",
                                            "x": "-5", "y": "1.5Ti", "z": "10e3", "w": ".5"})), OK))
    for i, v in enumerate(["100GB", "lots", "1 Gi", "10e3Gi"]):
        add((f"limits-bad-{i}", full(("spec.limits", {"cpu": v})), deny(pat("spec.limits.cpu", v, QTY))))
    add(("limits-type-bool", full(("spec.limits", {"cpu": True})),
         deny('spec.limits.cpu: Invalid value: "boolean": spec.limits.cpu in body must be of type integer,string: "boolean"',
              '<nil>: Invalid value: "": "spec.limits.cpu" must validate at least one schema (anyOf)',
              'spec.limits.cpu: Invalid value: "boolean": spec.limits.cpu in body must be of type integer: "boolean"', gate=True)))
    add(("limits-type-float", full(("spec.limits", {"cpu": 1.5})),
         deny('spec.limits.cpu: Invalid value: "number": spec.limits.cpu in body must be of type integer,string: "number"',
              '<nil>: Invalid value: "": "spec.limits.cpu" must validate at least one schema (anyOf)',
              'spec.limits.cpu: Invalid value: "number": spec.limits.cpu in body must be of type integer: "number"', gate=True)))
    # ---- weight, replicas, static pools (spec.weight, spec.replicas) ----
    add(("weight-ok", full(("spec.weight", 100)), OK))
    add(("weight-integral-float-ok", full(("spec.weight", 10.0)), OK))
    add(("weight-min", full(("spec.weight", 0)), deny(ge("spec.weight", 0, 1))))
    add(("weight-max", full(("spec.weight", 101)), deny(le("spec.weight", 101, 100))))
    add(("weight-type", full(("spec.weight", "10")), deny(typ("spec.weight", "string", "integer"), gate=True)))
    add(("weight-fraction", full(("spec.weight", 10.5)), deny(typ("spec.weight", "number", "integer"), gate=True)))
    add(("replicas-min", full(("spec.replicas", -1)), deny(ge("spec.replicas", -1, 0))))
    add(("static-ok", full(("spec.replicas", 3), ("spec.limits", {"nodes": "5"})), OK))
    add(("static-empty-limits-ok", full(("spec.replicas", 0), ("spec.limits", {})), OK))
    add(("static-other-limits", full(("spec.replicas", 3), ("spec.limits", {"cpu": "10", "nodes": "5"})),
         deny(cel("spec", "object", "only 'limits.nodes' is supported on static NodePools"))))
    add(("static-weight", full(("spec.replicas", 3), ("spec.weight", 10)),
         deny(cel("spec", "object", "'weight' is not supported on static NodePools"))))
    M_T = "Cannot transition NodePool between static (replicas set) and dynamic (replicas unset) provisioning modes"
    add(("static-to-dynamic", FULL, deny(cel("spec", "object", M_T)), full(("spec.replicas", 2))))
    add(("dynamic-to-static", full(("spec.replicas", 2)), deny(cel("spec", "object", M_T)), FULL))
    add(("static-stays-static", full(("spec.replicas", 4)), OK, full(("spec.replicas", 2))))
    add(("static-transition-not-on-create", full(("spec.replicas", 2)), OK))
    # ---- gating and collection (kubernetes/kubernetes staging/src/k8s.io/apiextensions-apiserver
    # pkg/registry/customresource/strategy.go hasBlockingErr: schema errors first; a blocking one
    # drops the CEL errors) ----
    add(("gating-pattern-does-not-gate", full(("spec.weight", 0), reqs({"key": "a", "operator": "In", "values": []})),
         deny(ge("spec.weight", 0, 1), cel(RL, "array", M_IN))))
    add(("gating-enum-drops-cel", full(("spec.disruption.consolidationPolicy", "x"), reqs({"key": "a", "operator": "In", "values": []})),
         deny(enum("spec.disruption.consolidationPolicy", "x", POLICIES), gate=True)))
    add(("many-errors-together", full(("spec.weight", 101), ("spec.template.spec.expireAfter", "1d"),
                                      ("spec.disruption.budgets", [{"nodes": "ten"}]),
                                      reqs({"key": "karpenter.sh/foo", "operator": "Exists"})),
         deny(le("spec.weight", 101, 100), pat(T + ".expireAfter", "1d", DURN), pat(B0 + ".nodes", "ten", NODES),
              cel(R0 + ".key", "string", 'label domain "karpenter.sh" is restricted', "karpenter.sh/foo"))))
    add(("unknown-fields-ignored", full(("spec.foo", 1), ("spec.template.spec.bar", {"x": 1})), OK))
    return c
