"""EC2NodeClass admission cases (aws/karpenter-provider-aws
pkg/apis/crds/karpenter.k8s.aws_ec2nodeclasses.yaml); written by admission_cases.py."""
from admission_cases import DEL, GATE, cel, enum, ge, le, mod, pat, req, typ

QTY = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
EVICT = r"^((\d{1,2}(\.\d{1,2})?|100(\.0{1,2})?)%||(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?)$"
VOL = r"^((?:[1-9][0-9]{0,3}|[1-4][0-9]{4}|[5][0-8][0-9]{3}|59000)Gi|(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|[6][0-3][0-9]{3}|64000)G|([1-9]||[1-5][0-7]|58)Ti|([1-9]||[1-5][0-9]|6[0-3]|64)T)$"
FAMILIES = ["AL2", "AL2023", "Bottlerocket", "Custom", "Windows2019", "Windows2022", "Windows2025"]
VTYPES = ["standard", "io1", "io2", "gp2", "sc1", "st1", "gp3"]
ED = ["enabled", "disabled"]

BASE = {
    "apiVersion": "karpenter.k8s.aws/v1",
    "kind": "EC2NodeClass",
    "metadata": {"name": "default"},
    "spec": {
        "role": "KarpenterNodeRole-my-cluster",
        "amiSelectorTerms": [{"alias": "al2023@latest"}],
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "my-cluster"}}],
        "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "my-cluster"}}],
    },
}
MO = {"httpEndpoint": "enabled", "httpProtocolIPv6": "disabled", "httpPutResponseHopLimit": 1,
      "httpTokens": "required"}
FULL = mod(BASE, ("spec.metadataOptions", MO))
OK = {"expect": "allowed"}

AMI = "spec.amiSelectorTerms"
SUB = "spec.subnetSelectorTerms"
SG = "spec.securityGroupSelectorTerms"
CR = "spec.capacityReservationSelectorTerms"
KUB = "spec.kubelet"
BDM = "spec.blockDeviceMappings"
M_FAMILY = ("family is not supported, must be one of the following: 'al2', 'al2023', 'bottlerocket', "
            "'windows2019', 'windows2022', 'windows2025'")
M_FMT = "'alias' is improperly formatted, must match the format 'family@version'"
M_WIN = "windows families may only specify version 'latest'"
M_EXACT = "must specify exactly one of ['role', 'instanceProfile']"
M_NEED_FAMILY = "must specify amiFamily if amiSelectorTerms does not contain an alias"
EVK = "['memory.available','nodefs.available','nodefs.inodesFree','imagefs.available','imagefs.inodesFree','pid.available']"


def deny(*lines, gate=False):
    return {"expect": list(lines) + ([GATE] if gate else [])}


def full(*changes):
    return mod(FULL, *changes)


def ami(*terms):
    return ("spec.amiSelectorTerms", list(terms))


def cases():
    c = []
    add = c.append
    # ---- defaulting ----
    add(("default-metadata-options", BASE, {"expect": "allowed", "patch": [
        {"op": "add", "path": "/spec/metadataOptions", "value": MO}]}))
    add(("default-nothing-when-set", FULL, {"expect": "allowed", "patch": None}))
    add(("default-metadata-options-partial", full(("spec.metadataOptions", {"httpTokens": "optional", "httpPutResponseHopLimit": 2})),
         {"expect": "allowed", "patch": [
             {"op": "add", "path": "/spec/metadataOptions/httpEndpoint", "value": "enabled"},
             {"op": "add", "path": "/spec/metadataOptions/httpProtocolIPv6", "value": "disabled"}]}))
    add(("default-metadata-options-null", mod(BASE, ("spec.metadataOptions", None)),
         {"expect": "allowed", "patch": [{"op": "add", "path": "/spec/metadataOptions", "value": MO}]}))
    add(("default-metadata-options-empty", full(("spec.metadataOptions", {})),
         {"expect": "allowed", "patch": [
             {"op": "add", "path": "/spec/metadataOptions/" + k, "value": v} for k, v in MO.items()]}))
    add(("no-spec-passes", {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": "x"}},
         {"expect": "allowed", "patch": None}))
    # ---- spec.amiSelectorTerms ----
    add(("ami-terms-required", full(("spec.amiSelectorTerms", DEL)), deny(req(AMI), gate=True)))
    add(("ami-terms-min-items", full(ami()), deny(f"{AMI}: Invalid value: 0: {AMI} in body should have at least 1 items", cel("spec", "object", M_NEED_FAMILY))))
    add(("ami-terms-max-items", full(ami(*[{"id": f"ami-{i:04d}"} for i in range(31)]), ("spec.amiFamily", "AL2023")),
         deny(f"{AMI}: Too many: 31: must have at most 30 items", gate=True)))
    add(("ami-alias-ok", full(ami({"alias": "bottlerocket@1.10.0"})), OK))
    add(("ami-alias-windows-latest-ok", full(ami({"alias": "windows2025@latest"})), OK))
    add(("ami-alias-format", full(ami({"alias": "al2023"})),
         deny(cel(AMI + "[0].alias", "string", M_FMT, "al2023"))))
    add(("ami-alias-family", full(ami({"alias": "ubuntu@latest"})), deny(cel(AMI + "[0].alias", "string", M_FAMILY, "ubuntu@latest"))))
    add(("ami-alias-family-case", full(ami({"alias": "AL2023@latest"})), deny(cel(AMI + "[0].alias", "string", M_FAMILY, "AL2023@latest"))))
    add(("ami-alias-windows-version", full(ami({"alias": "windows2022@v20240101"})), deny(cel(AMI + "[0].alias", "string", M_WIN, "windows2022@v20240101"))))
    add(("ami-alias-too-long", full(ami({"alias": "al2023@" + "v" * 30})),
         deny(f"{AMI}[0].alias: Too long: may not be more than 30 bytes", gate=True)))
    add(("ami-term-empty", full(ami({}), ("spec.amiFamily", "AL2023")),
         deny(cel(AMI, "array", "expected at least one, got none, ['tags', 'id', 'name', 'alias', 'ssmParameter']"))))
    add(("ami-term-owner-only", full(ami({"owner": "self"}), ("spec.amiFamily", "AL2023")),
         deny(cel(AMI, "array", "expected at least one, got none, ['tags', 'id', 'name', 'alias', 'ssmParameter']"))))
    add(("ami-id-with-name", full(ami({"id": "ami-123", "name": "x"}), ("spec.amiFamily", "AL2023")),
         deny(cel(AMI, "array", "'id' is mutually exclusive, cannot be set with a combination of other fields in amiSelectorTerms"))))
    add(("ami-alias-with-tags", full(ami({"alias": "al2023@latest", "tags": {"a": "b"}})),
         deny(cel(AMI, "array", "'alias' is mutually exclusive, cannot be set with a combination of other fields in amiSelectorTerms"))))
    add(("ami-alias-with-other-term", full(ami({"alias": "al2023@latest"}, {"id": "ami-1"})),
         deny(cel(AMI, "array", "'alias' is mutually exclusive, cannot be set with a combination of other amiSelectorTerms"))))
    add(("ami-ssm-with-alias-ok", full(ami({"alias": "al2023@latest", "ssmParameter": "/aws/x"})), OK))
    add(("ami-ssm-with-id-ok", full(ami({"id": "ami-0abc", "ssmParameter": "/aws/x"}), ("spec.amiFamily", "AL2023")), OK))
    add(("ami-name-owner-ok", full(ami({"name": "my-ami-*", "owner": "self"}, {"tags": {"team": "*"}, "owner": "123456789012"}), ("spec.amiFamily", "Custom")), OK))
    add(("ami-id-unanchored-ok", full(ami({"id": "prefix ami-0abc suffix"}), ("spec.amiFamily", "AL2")), OK))
    add(("ami-id-pattern", full(ami({"id": "i-0abc"}), ("spec.amiFamily", "AL2")), deny(pat(AMI + "[0].id", "i-0abc", "ami-[0-9a-z]+"))))
    add(("ami-tags-empty-value", full(ami({"tags": {"team": ""}}), ("spec.amiFamily", "AL2")),
         deny(cel(AMI + "[0].tags", "object", "empty tag keys or values aren't supported"))))
    add(("ami-tags-too-many", full(ami({"tags": {f"k{i}": "v" for i in range(21)}}), ("spec.amiFamily", "AL2")),
         deny(f"{AMI}[0].tags: Too many: 21: must have at most 20 items", gate=True)))
    # ---- spec.amiFamily ----
    add(("ami-family-enum", full(("spec.amiFamily", "Ubuntu")), deny(enum("spec.amiFamily", "Ubuntu", FAMILIES), gate=True)))
    add(("ami-family-required-without-alias", full(ami({"id": "ami-1"})), deny(cel("spec", "object", M_NEED_FAMILY))))
    add(("ami-family-custom-with-alias-ok", full(("spec.amiFamily", "Custom")), OK))
    add(("ami-family-matching-alias-ok", full(("spec.amiFamily", "AL2023")), OK))
    for alias, fam, article in [("al2@latest", "AL2", "an AL2"), ("al2023@latest", "AL2023", "an AL2023"),
                                ("bottlerocket@latest", "Bottlerocket", "a Bottlerocket"),
                                ("windows2019@latest", "Windows2019", "a Windows2019"),
                                ("windows2022@latest", "Windows2022", "a Windows2022"),
                                ("windows2025@latest", "Windows2025", "a Windows2025")]:
        other = "AL2" if fam != "AL2" else "Bottlerocket"
        add((f"ami-family-mismatch-{fam.lower()}", full(ami({"alias": alias}), ("spec.amiFamily", other)),
             deny(cel("spec", "object", f"if set, amiFamily must be '{fam}' or 'Custom' when using {article} alias"))))
    # ---- role / instanceProfile ----
    add(("role-and-profile", full(("spec.instanceProfile", "p")), deny(cel("spec", "object", M_EXACT))))
    add(("neither-role-nor-profile", full(("spec.role", DEL)), deny(cel("spec", "object", M_EXACT))))
    add(("profile-only-ok", full(("spec.role", DEL), ("spec.instanceProfile", "KarpenterNodeInstanceProfile")), OK))
    add(("role-empty", full(("spec.role", "")), deny(cel("spec.role", "string", "role cannot be empty", ""))))
    add(("profile-empty", full(("spec.role", DEL), ("spec.instanceProfile", "")),
         deny(cel("spec.instanceProfile", "string", "instanceProfile cannot be empty", ""))))
    add(("role-changed-on-update-ok", full(("spec.role", "other")), OK, FULL))
    # ---- spec.subnetSelectorTerms, spec.securityGroupSelectorTerms ----
    add(("subnet-terms-required", full(("spec.subnetSelectorTerms", DEL)), deny(req(SUB), gate=True)))
    add(("subnet-terms-empty", full(("spec.subnetSelectorTerms", [])),
         deny(cel(SUB, "array", "subnetSelectorTerms cannot be empty"),
              cel(SUB, "array", "'id' is mutually exclusive, cannot be set with a combination of other fields in a subnet selector term"))))
    add(("subnet-terms-max", full(("spec.subnetSelectorTerms", [{"id": f"subnet-{i}"} for i in range(31)])),
         deny(f"{SUB}: Too many: 31: must have at most 30 items", gate=True)))
    add(("subnet-term-empty", full(("spec.subnetSelectorTerms", [{}])),
         deny(cel(SUB, "array", "expected at least one, got none, ['tags', 'id']"))))
    add(("subnet-term-tags-empty-map-ok", full(("spec.subnetSelectorTerms", [{"tags": {}}])), OK))
    add(("subnet-term-mixed-single", full(("spec.subnetSelectorTerms", [{"id": "subnet-1", "tags": {"a": "b"}}])),
         deny(cel(SUB, "array", "'id' is mutually exclusive, cannot be set with a combination of other fields in a subnet selector term"))))
    add(("subnet-term-mixed-not-all-ok", full(("spec.subnetSelectorTerms", [{"id": "subnet-1", "tags": {"a": "b"}}, {"tags": {"c": "d"}}])), OK))
    add(("subnet-id-pattern", full(("spec.subnetSelectorTerms", [{"id": "sub-123"}])), deny(pat(SUB + "[0].id", "sub-123", "subnet-[0-9a-z]+"))))
    add(("subnet-tags-empty-key", full(("spec.subnetSelectorTerms", [{"tags": {"": "x"}}])),
         deny(cel(SUB + "[0].tags", "object", "empty tag keys or values aren't supported"))))
    add(("sg-terms-empty", full(("spec.securityGroupSelectorTerms", [])),
         deny(cel(SG, "array", "securityGroupSelectorTerms cannot be empty"),
              cel(SG, "array", "'id' is mutually exclusive, cannot be set with a combination of other fields in a security group selector term"),
              cel(SG, "array", "'name' is mutually exclusive, cannot be set with a combination of other fields in a security group selector term"))))
    add(("sg-terms-required", full(("spec.securityGroupSelectorTerms", DEL)), deny(req(SG), gate=True)))
    add(("sg-term-empty", full(("spec.securityGroupSelectorTerms", [{}])),
         deny(cel(SG, "array", "expected at least one, got none, ['tags', 'id', 'name']"))))
    add(("sg-id-with-tags", full(("spec.securityGroupSelectorTerms", [{"id": "sg-1", "tags": {"a": "b"}}])),
         deny(cel(SG, "array", "'id' is mutually exclusive, cannot be set with a combination of other fields in a security group selector term"))))
    add(("sg-name-with-tags", full(("spec.securityGroupSelectorTerms", [{"name": "default", "tags": {"a": "b"}}])),
         deny(cel(SG, "array", "'name' is mutually exclusive, cannot be set with a combination of other fields in a security group selector term"))))
    add(("sg-id-with-name", full(("spec.securityGroupSelectorTerms", [{"name": "default", "id": "sg-1"}])),
         deny(cel(SG, "array", "'id' is mutually exclusive, cannot be set with a combination of other fields in a security group selector term"),
              cel(SG, "array", "'name' is mutually exclusive, cannot be set with a combination of other fields in a security group selector term"))))
    add(("sg-terms-ok", full(("spec.securityGroupSelectorTerms", [{"id": "sg-0abc"}, {"name": "default"}, {"tags": {"Name": "*"}}])), OK))
    add(("sg-id-pattern", full(("spec.securityGroupSelectorTerms", [{"id": "group-1"}])), deny(pat(SG + "[0].id", "group-1", "sg-[0-9a-z]+"))))
    # ---- spec.capacityReservationSelectorTerms ----
    add(("cr-terms-ok", full(("spec.capacityReservationSelectorTerms", [{"id": "cr-0abc"}, {"tags": {"a": "b"}, "ownerID": "123456789012"},
                                                                        {"instanceMatchCriteria": "open"}])), OK))
    add(("cr-owner-only", full(("spec.capacityReservationSelectorTerms", [{"ownerID": "123456789012"}])),
         deny(cel(CR, "array", "expected at least one, got none, ['tags', 'id', 'instanceMatchCriteria']"))))
    add(("cr-id-mixed", full(("spec.capacityReservationSelectorTerms", [{"id": "cr-1", "ownerID": "123456789012"}])),
         deny(cel(CR, "array", "'id' is mutually exclusive, cannot be set along with other fields in a capacity reservation selector term"))))
    add(("cr-patterns", full(("spec.capacityReservationSelectorTerms", [{"id": "x cr-1", "ownerID": "12345"}, {"tags": {"a": "b"}}])),
         deny(pat(CR + "[0].id", "x cr-1", "^cr-[0-9a-z]+$"), pat(CR + "[0].ownerID", "12345", "^[0-9]{12}$"))))
    add(("cr-match-criteria-enum", full(("spec.capacityReservationSelectorTerms", [{"instanceMatchCriteria": "closed"}])),
         deny(enum(CR + "[0].instanceMatchCriteria", "closed", ["open", "targeted"]), gate=True)))
    # ---- placement group ----
    add(("pg-name-ok", full(("spec.placementGroupSelector", {"name": "my-pg"})), OK))
    add(("pg-id-ok", full(("spec.placementGroupSelector", {"id": "pg-0abc"})), OK))
    add(("pg-both", full(("spec.placementGroupSelector", {"id": "pg-0abc", "name": "x"})),
         deny(cel("spec.placementGroupSelector", "object", "'name' and 'id' are mutually exclusive"))))
    add(("pg-id-pattern", full(("spec.placementGroupSelector", {"id": "pg-ABC"})),
         deny(pat("spec.placementGroupSelector.id", "pg-ABC", "^pg-[0-9a-z]+$"))))
    add(("pg-name-empty", full(("spec.placementGroupSelector", {"name": ""})),
         deny('spec.placementGroupSelector.name: Invalid value: "": spec.placementGroupSelector.name in body should be at least 1 chars long')))
    # ---- spec.tags ----
    add(("tags-ok", full(("spec.tags", {"Name": "x", "karpenter.sh/discovery": "c", "kubernetes.io/role": "x", "team": "a"})), OK))
    for i, (k, m) in enumerate([("eks:eks-cluster-name", "eks:eks-cluster-name"),
                                ("kubernetes.io/cluster/my-cluster", "kubernetes.io/cluster/"),
                                ("kubernetes.io/clusterfoo", "kubernetes.io/cluster/"),
                                ("karpenter.sh/nodepool", "karpenter.sh/nodepool"),
                                ("karpenter.sh/nodeclaim", "karpenter.sh/nodeclaim"),
                                ("karpenter.k8s.aws/ec2nodeclass", "karpenter.k8s.aws/ec2nodeclass")]):
        add((f"tags-restricted-{i}", full(("spec.tags", {k: "x"})),
             deny(cel("spec.tags", "object", f"tag contains a restricted tag matching {m}"))))
    add(("tags-empty-key", full(("spec.tags", {"": "x"})), deny(cel("spec.tags", "object", "empty tag keys aren't supported"))))
    # ---- spec.kubelet ----
    add(("kubelet-ok", full(("spec.kubelet", {
        "clusterDNS": ["10.0.0.10"], "maxPods": 110, "podsPerCore": 0,
        "systemReserved": {"cpu": "100m", "memory": "100Mi", "ephemeral-storage": "1Gi", "pid": "100"},
        "kubeReserved": {"cpu": "200m"},
        "evictionHard": {"memory.available": "5%", "nodefs.available": "10.5%", "imagefs.available": "",
                         "pid.available": "100.0%", "nodefs.inodesFree": "1Gi"},
        "evictionSoft": {"memory.available": "500Mi"}, "evictionSoftGracePeriod": {"memory.available": "1m"},
        "evictionMaxPodGracePeriod": 60, "imageGCHighThresholdPercent": 85, "imageGCLowThresholdPercent": 80,
        "cpuCFSQuota": True})), OK))
    add(("kubelet-maxpods-min", full(("spec.kubelet", {"maxPods": -1})), deny(ge(KUB + ".maxPods", -1, 0))))
    add(("kubelet-podspercore-min", full(("spec.kubelet", {"podsPerCore": -1})), deny(ge(KUB + ".podsPerCore", -1, 0))))
    add(("kubelet-reserved-keys", full(("spec.kubelet", {"systemReserved": {"gpu": "1"}})),
         deny(cel(KUB + ".systemReserved", "object", "valid keys for systemReserved are ['cpu','memory','ephemeral-storage','pid']"))))
    add(("kubelet-reserved-negative", full(("spec.kubelet", {"kubeReserved": {"cpu": "-1"}})),
         deny(cel(KUB + ".kubeReserved", "object", "kubeReserved value cannot be a negative resource quantity"))))
    add(("kubelet-reserved-pattern", full(("spec.kubelet", {"kubeReserved": {"memory": "1GB"}})),
         deny(pat(KUB + ".kubeReserved.memory", "1GB", QTY))))
    add(("kubelet-reserved-plus-ok", full(("spec.kubelet", {"kubeReserved": {"memory": "+1Gi"}})), OK))
    add(("kubelet-eviction-keys", full(("spec.kubelet", {"evictionHard": {"memory.free": "1Gi"}})),
         deny(cel(KUB + ".evictionHard", "object", f"valid keys for evictionHard are {EVK}"))))
    for i, v in enumerate(["101%", "5.123%", "lots", "1 Gi"]):
        add((f"kubelet-eviction-pattern-{i}", full(("spec.kubelet", {"evictionHard": {"memory.available": v}})),
             deny(pat(KUB + ".evictionHard.memory.available", v, EVICT))))
    add(("kubelet-soft-without-grace", full(("spec.kubelet", {"evictionSoft": {"memory.available": "1Gi"}})),
         deny(f'{KUB}: Invalid value: "object": no such key: evictionSoftGracePeriod evaluating rule: evictionSoft OwnerKey does not have a matching evictionSoftGracePeriod')))
    add(("kubelet-grace-without-soft", full(("spec.kubelet", {"evictionSoftGracePeriod": {"memory.available": "1m"}})),
         deny(f'{KUB}: Invalid value: "object": no such key: evictionSoft evaluating rule: evictionSoftGracePeriod OwnerKey does not have a matching evictionSoft')))
    add(("kubelet-soft-grace-mismatch", full(("spec.kubelet", {"evictionSoft": {"memory.available": "1Gi"},
                                                               "evictionSoftGracePeriod": {"nodefs.available": "1m"}})),
         deny(cel(KUB, "object", "evictionSoft OwnerKey does not have a matching evictionSoftGracePeriod"),
              cel(KUB, "object", "evictionSoftGracePeriod OwnerKey does not have a matching evictionSoft"))))
    add(("kubelet-gc-equal", full(("spec.kubelet", {"imageGCHighThresholdPercent": 80, "imageGCLowThresholdPercent": 80})),
         deny(cel(KUB, "object", "imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent"))))
    add(("kubelet-gc-range", full(("spec.kubelet", {"imageGCHighThresholdPercent": 101})),
         deny(le(KUB + ".imageGCHighThresholdPercent", 101, 100))))
    add(("kubelet-cfs-type", full(("spec.kubelet", {"cpuCFSQuota": "yes"})),
         deny(typ(KUB + ".cpuCFSQuota", "string", "boolean"), gate=True)))
    # ---- spec.blockDeviceMappings, spec.instanceStorePolicy ----
    def bdm(*items):
        return ("spec.blockDeviceMappings", list(items))
    add(("bdm-ok", full(bdm({"deviceName": "/dev/xvda", "rootVolume": True, "ebs": {
        "volumeSize": "100Gi", "volumeType": "gp3", "iops": 3000, "throughput": 125, "encrypted": True,
        "deleteOnTermination": True, "kmsKeyID": "alias/x"}},
        {"deviceName": "/dev/xvdb", "ebs": {"snapshotID": "snap-1", "volumeInitializationRate": 100}})), OK))
    add(("bdm-two-roots", full(bdm({"rootVolume": True, "ebs": {"volumeSize": "20Gi"}}, {"rootVolume": True, "ebs": {"volumeSize": "20Gi"}})),
         deny(cel(BDM, "array", "must have only one blockDeviceMappings with rootVolume"))))
    add(("bdm-size-or-snapshot", full(bdm({"ebs": {"volumeType": "gp3"}})),
         deny(cel(BDM + "[0].ebs", "object", "snapshotID or volumeSize must be defined"))))
    add(("bdm-init-rate-needs-snapshot", full(bdm({"ebs": {"volumeSize": "20Gi", "volumeInitializationRate": 200}})),
         deny(cel(BDM + "[0].ebs", "object", "snapshotID must be set when volumeInitializationRate is set"))))
    add(("bdm-init-rate-range", full(bdm({"ebs": {"snapshotID": "snap-1", "volumeInitializationRate": 50}})),
         deny(ge(BDM + "[0].ebs.volumeInitializationRate", 50, 100))))
    add(("bdm-volume-type", full(bdm({"ebs": {"volumeSize": "20Gi", "volumeType": "gp4"}})),
         deny(enum(BDM + "[0].ebs.volumeType", "gp4", VTYPES), gate=True)))
    add(("bdm-too-many", full(bdm(*[{"ebs": {"volumeSize": "1Gi"}}] * 51)),
         deny(f"{BDM}: Too many: 51: must have at most 50 items", gate=True)))
    for i, v in enumerate(["1Gi", "59000Gi", "64000G", "17Ti", "58Ti", "64T", "Ti", "T", "20Ti"]):
        add((f"volume-size-ok-{i}", full(bdm({"ebs": {"volumeSize": v}})), OK))
    for i, v in enumerate(["18Ti", "28Ti", "100", "0Gi", "1m", "200GB", "100T", "59001Gi"]):
        add((f"volume-size-bad-{i}", full(bdm({"ebs": {"volumeSize": v}})), deny(pat(BDM + "[0].ebs.volumeSize", v, VOL))))
    # ---- spec.metadataOptions ----
    add(("metadata-enums", full(("spec.metadataOptions", dict(MO, httpEndpoint="on", httpTokens="always"))),
         deny(enum("spec.metadataOptions.httpEndpoint", "on", ED),
              enum("spec.metadataOptions.httpTokens", "always", ["required", "optional"]), gate=True)))
    add(("metadata-hop-limit", full(("spec.metadataOptions", dict(MO, httpPutResponseHopLimit=65))),
         deny(le("spec.metadataOptions.httpPutResponseHopLimit", 65, 64))))
    add(("metadata-hop-limit-min", full(("spec.metadataOptions", dict(MO, httpPutResponseHopLimit=0))),
         deny(ge("spec.metadataOptions.httpPutResponseHopLimit", 0, 1))))
    # ---- others ----
    add(("instance-store-policy", full(("spec.instanceStorePolicy", "RAID1")),
         deny(enum("spec.instanceStorePolicy", "RAID1", ["RAID0"]), gate=True)))
    add(("instance-store-policy-ok", full(("spec.instanceStorePolicy", "RAID0"), ("spec.detailedMonitoring", True),
                                          ("spec.associatePublicIPAddress", False), ("spec.ipPrefixCount", 0),
                                          ("spec.userData", "#!/bin/bash\necho hi\n"), ("spec.context", "c-1")), OK))
    add(("ip-prefix-count-min", full(("spec.ipPrefixCount", -1)), deny(ge("spec.ipPrefixCount", -1, 0))))
    add(("detailed-monitoring-type", full(("spec.detailedMonitoring", "true")),
         deny(typ("spec.detailedMonitoring", "string", "boolean"), gate=True)))
    add(("cpu-options", full(("spec.cpuOptions", {"nestedVirtualization": "on"})),
         deny(enum("spec.cpuOptions.nestedVirtualization", "on", ED), gate=True)))
    add(("cpu-options-ok", full(("spec.cpuOptions", {"nestedVirtualization": "enabled"})), OK))
    NI = "spec.networkInterfaces"
    add(("network-interfaces-ok", full(("spec.networkInterfaces", [
        {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
        {"networkCardIndex": 0, "deviceIndex": 1, "interfaceType": "efa-only"},
        {"networkCardIndex": 1, "deviceIndex": 0, "interfaceType": "efa-only"}])), OK))
    add(("network-interfaces-no-primary", full(("spec.networkInterfaces", [{"networkCardIndex": 1, "deviceIndex": 0, "interfaceType": "efa-only"}])),
         deny(cel(NI, "array", "networkInterfaces must include a primary interface with interfaceType='interface'"))))
    add(("network-interfaces-dup", full(("spec.networkInterfaces", [
        {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
        {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "efa-only"}])),
        deny(cel(NI, "array", "networkInterfaces must not have duplicate networkCardIndex and deviceIndex pairs, and can have at most one efa device per network card"))))
    add(("network-interfaces-two-efa-per-card", full(("spec.networkInterfaces", [
        {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
        {"networkCardIndex": 1, "deviceIndex": 0, "interfaceType": "efa-only"},
        {"networkCardIndex": 1, "deviceIndex": 1, "interfaceType": "efa-only"}])),
        deny(cel(NI, "array", "networkInterfaces must not have duplicate networkCardIndex and deviceIndex pairs, and can have at most one efa device per network card"))))
    add(("network-interfaces-required-fields", full(("spec.networkInterfaces", [{"interfaceType": "efa"}])),
         deny(req(NI + "[0].networkCardIndex"), req(NI + "[0].deviceIndex"),
              enum(NI + "[0].interfaceType", "efa", ["interface", "efa-only"]), gate=True)))
    CT = "spec.connectionTracking"
    add(("connection-tracking-ok", full(("spec.connectionTracking", {"tcpEstablishedTimeout": 60, "udpStreamTimeout": 180, "udpTimeout": 30})), OK))
    add(("connection-tracking-empty", full(("spec.connectionTracking", {})),
         deny(cel(CT, "object", "at least one of tcpEstablishedTimeout, udpStreamTimeout, or udpTimeout must be set"))))
    add(("connection-tracking-ranges", full(("spec.connectionTracking", {"tcpEstablishedTimeout": 59, "udpStreamTimeout": 181, "udpTimeout": 61})),
         deny(ge(CT + ".tcpEstablishedTimeout", 59, 60), le(CT + ".udpStreamTimeout", 181, 180), le(CT + ".udpTimeout", 61, 60))))
    add(("spec-wrong-type", mod(BASE, ("spec", [])), deny(typ("spec", "array", "object"), gate=True)))
    return c
