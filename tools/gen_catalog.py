#!/usr/bin/env python3
"""Generate data/catalog.json, nodewarden's embedded EC2 instance catalog.

Sources (read 2026-11-30 via the project's search index; facts only):
  * on-demand Linux prices, us-east-1: aws/karpenter-provider-aws
    pkg/providers/pricing/zz_generated.pricing_aws.go ("generated at
    2026-01-19T13:23:24Z for us-east-1"), copied below per type;
  * vCPU, memory, GPU, accelerator, instance store, hypervisor: the EC2
    DescribeInstanceTypes facts as tabulated in aws/karpenter-provider-aws
    website/content/en/docs/reference/instance-types.md and
    pkg/fake/zz_generated.describe_instance_types.go;
  * network bandwidth: pkg/providers/instancetype/zz_generated.bandwidth.go;
  * ENIs (of the default network card) and IPv4 addresses per ENI: the VPC
    limits in pkg/providers/instancetype/zz_generated.vpclimits.go (the
    per-size pattern of each family; the GPU types whose card 0 differs as
    listed there).
  * inf1, trn1n, trn2, dl2q, vt1 (read 2026-12-02): prices, VPC limits and bandwidth
    from the same v1.14.1 files (trn2, dl2q: no us-east-1 price; trn2: no VPC limits,
    its card-0 ENIs from its pods below), devices, vCPU, memory, NVMe and EFA from
    website/content/en/docs/reference/instance-types.md (the labels and resources
    Karpenter derives), device memory from EC2's NeuronInfo/InferenceAcceleratorInfo;
  * g4ad, dl1 and trn1 (prices, VPC limits; devices, vCPU, memory and NVMe of
    the sizes in pkg/fake/zz_generated.describe_instance_types.go, the others
    by the family's per-size pattern): aws/karpenter-provider-aws v1.14.1
    (zz_generated.pricing_aws.go "generated at 2026-07-06T14:20:29Z").
    Habana Gaudi is a GPU to EC2 (GpuInfo, manufacturer Habana), Neuron
    devices are NeuronInfo (manufacturer "aws", memory per device).
Each type's "price" is only a fallback: data/prices.json (tools/gen_prices.py, the whole
us-east-1 table of the same file) prices every type in every region, as Karpenter falls
back to us-east-1, and the running scaler refreshes types and prices from the AWS APIs.

Run: python3 tools/gen_catalog.py > data/catalog.json
"""
import json

STD_VCPU = {"nano": 2, "micro": 2, "small": 2, "medium": 1, "large": 2, "xlarge": 4,
            "2xlarge": 8, "4xlarge": 16, "8xlarge": 32, "9xlarge": 36, "12xlarge": 48,
            "16xlarge": 64, "18xlarge": 72, "24xlarge": 96, "32xlarge": 128, "48xlarge": 192}
# ENIs x IPv4 per ENI for current Nitro general purpose / compute / memory types
STD_ENI = {"medium": (2, 4), "large": (3, 10), "xlarge": (4, 15), "2xlarge": (4, 15),
           "4xlarge": (8, 30), "8xlarge": (8, 30), "9xlarge": (8, 30), "12xlarge": (8, 30),
           "16xlarge": (15, 50), "18xlarge": (15, 50), "24xlarge": (15, 50),
           "32xlarge": (15, 50), "48xlarge": (15, 50), "metal": (15, 50),
           "metal-24xl": (15, 50), "metal-48xl": (15, 50)}

PRICES = {
 "m5": {"12xlarge": 2.304, "16xlarge": 3.072, "24xlarge": 4.608, "2xlarge": 0.384, "4xlarge": 0.768, "8xlarge": 1.536, "large": 0.096, "metal": 4.608, "xlarge": 0.192},
 "m6i": {"12xlarge": 2.304, "16xlarge": 3.072, "24xlarge": 4.608, "2xlarge": 0.384, "32xlarge": 6.144, "4xlarge": 0.768, "8xlarge": 1.536, "large": 0.096, "metal": 6.144, "xlarge": 0.192},
 "m7i": {"12xlarge": 2.4192, "16xlarge": 3.2256, "24xlarge": 4.8384, "2xlarge": 0.4032, "48xlarge": 9.6768, "4xlarge": 0.8064, "8xlarge": 1.6128, "large": 0.1008, "metal-24xl": 5.32224, "metal-48xl": 9.6768, "xlarge": 0.2016},
 "c5": {"12xlarge": 2.04, "18xlarge": 3.06, "24xlarge": 4.08, "2xlarge": 0.34, "4xlarge": 0.68, "9xlarge": 1.53, "large": 0.085, "metal": 4.08, "xlarge": 0.17},
 "c6i": {"12xlarge": 2.04, "16xlarge": 2.72, "24xlarge": 4.08, "2xlarge": 0.34, "32xlarge": 5.44, "4xlarge": 0.68, "8xlarge": 1.36, "large": 0.085, "metal": 5.44, "xlarge": 0.17},
 "c7i": {"12xlarge": 2.142, "16xlarge": 2.856, "24xlarge": 4.284, "2xlarge": 0.357, "48xlarge": 8.568, "4xlarge": 0.714, "8xlarge": 1.428, "large": 0.08925, "metal-24xl": 4.7124, "metal-48xl": 8.568, "xlarge": 0.1785},
 "r5": {"12xlarge": 3.024, "16xlarge": 4.032, "24xlarge": 6.048, "2xlarge": 0.504, "4xlarge": 1.008, "8xlarge": 2.016, "large": 0.126, "metal": 6.048, "xlarge": 0.252},
 "r6i": {"12xlarge": 3.024, "16xlarge": 4.032, "24xlarge": 6.048, "2xlarge": 0.504, "32xlarge": 8.064, "4xlarge": 1.008, "8xlarge": 2.016, "large": 0.126, "metal": 8.064, "xlarge": 0.252},
 "r7i": {"12xlarge": 3.1752, "16xlarge": 4.2336, "24xlarge": 6.3504, "2xlarge": 0.5292, "48xlarge": 12.7008, "4xlarge": 1.0584, "8xlarge": 2.1168, "large": 0.1323, "metal-24xl": 6.98544, "metal-48xl": 12.7008, "xlarge": 0.2646},
 "m6a": {"12xlarge": 2.0736, "16xlarge": 2.7648, "24xlarge": 4.1472, "2xlarge": 0.3456, "32xlarge": 5.5296, "48xlarge": 8.2944, "4xlarge": 0.6912, "8xlarge": 1.3824, "large": 0.0864, "metal": 8.2944, "xlarge": 0.1728},
 "c6a": {"12xlarge": 1.836, "16xlarge": 2.448, "24xlarge": 3.672, "2xlarge": 0.306, "32xlarge": 4.896, "48xlarge": 7.344, "4xlarge": 0.612, "8xlarge": 1.224, "large": 0.0765, "metal": 7.344, "xlarge": 0.153},
 "r6a": {"12xlarge": 2.7216, "16xlarge": 3.6288, "24xlarge": 5.4432, "2xlarge": 0.4536, "32xlarge": 7.2576, "48xlarge": 10.8864, "4xlarge": 0.9072, "8xlarge": 1.8144, "large": 0.1134, "metal": 10.8864, "xlarge": 0.2268},
 "t3": {"2xlarge": 0.3328, "large": 0.0832, "medium": 0.0416, "micro": 0.0104, "nano": 0.0052, "small": 0.0208, "xlarge": 0.1664},
 "m7g": {"12xlarge": 1.9584, "16xlarge": 2.6112, "2xlarge": 0.3264, "4xlarge": 0.6528, "8xlarge": 1.3056, "large": 0.0816, "medium": 0.0408, "metal": 2.6112, "xlarge": 0.1632},
 "c7g": {"12xlarge": 1.74, "16xlarge": 2.32, "2xlarge": 0.29, "4xlarge": 0.58, "8xlarge": 1.16, "large": 0.0725, "medium": 0.0363, "metal": 2.32, "xlarge": 0.145},
 "r7g": {"12xlarge": 2.5704, "16xlarge": 3.4272, "2xlarge": 0.4284, "4xlarge": 0.8568, "8xlarge": 1.7136, "large": 0.1071, "medium": 0.0536, "metal": 3.4272, "xlarge": 0.2142},
 "g4dn": {"12xlarge": 3.912, "16xlarge": 4.352, "2xlarge": 0.752, "4xlarge": 1.204, "8xlarge": 2.176, "metal": 7.824, "xlarge": 0.526},
 "g5": {"12xlarge": 5.672, "16xlarge": 4.096, "24xlarge": 8.144, "2xlarge": 1.212, "48xlarge": 16.288, "4xlarge": 1.624, "8xlarge": 2.448, "xlarge": 1.006},
 "g6": {"12xlarge": 4.6016, "16xlarge": 3.3968, "24xlarge": 6.6752, "2xlarge": 0.9776, "48xlarge": 13.3504, "4xlarge": 1.3232, "8xlarge": 2.0144, "xlarge": 0.8048},
 "g6e": {"12xlarge": 10.49264, "16xlarge": 7.57719, "24xlarge": 15.06559, "2xlarge": 2.24208, "48xlarge": 30.13118, "4xlarge": 3.00424, "8xlarge": 4.52856, "xlarge": 1.861},
 "p3": {"16xlarge": 24.48, "2xlarge": 3.06, "8xlarge": 12.24},
 "p4d": {"24xlarge": 21.957642},
 "p5": {"48xlarge": 55.04, "4xlarge": 6.88},
 "inf2": {"24xlarge": 6.49063, "48xlarge": 12.98127, "8xlarge": 1.96786, "xlarge": 0.7582},
 "g4ad": {"16xlarge": 3.468, "2xlarge": 0.54117, "4xlarge": 0.867, "8xlarge": 1.734, "xlarge": 0.37853},
 "dl1": {"24xlarge": 13.10904},
 "trn1": {"2xlarge": 1.34375, "32xlarge": 21.5},
 "inf1": {"24xlarge": 4.721, "2xlarge": 0.362, "6xlarge": 1.18, "xlarge": 0.228},
 "trn1n": {"32xlarge": 24.78},
 "vt1": {"24xlarge": 5.2, "3xlarge": 0.65, "6xlarge": 1.3},
 # trn2 and dl2q are not sold in us-east-1 (no entry in the table): no price, so the
 # embedded catalog offers them nowhere until a price refresh finds them
 "trn2": {},
 "dl2q": {},
}

# family: (GiB per vCPU, cpu manufacturer, arch, metal (vcpu, GiB) by size)
CPU_FAMILIES = {
 "m5": (4, "intel", "amd64", {"metal": (96, 384)}),
 "m6i": (4, "intel", "amd64", {"metal": (128, 512)}),
 "m7i": (4, "intel", "amd64", {"metal-24xl": (96, 384), "metal-48xl": (192, 768)}),
 "c5": (2, "intel", "amd64", {"metal": (96, 192)}),
 "c6i": (2, "intel", "amd64", {"metal": (128, 256)}),
 "c7i": (2, "intel", "amd64", {"metal-24xl": (96, 192), "metal-48xl": (192, 384)}),
 "r5": (8, "intel", "amd64", {"metal": (96, 768)}),
 "r6i": (8, "intel", "amd64", {"metal": (128, 1024)}),
 "r7i": (8, "intel", "amd64", {"metal-24xl": (96, 768), "metal-48xl": (192, 1536)}),
 "m6a": (4, "amd", "amd64", {"metal": (192, 768)}),
 "c6a": (2, "amd", "amd64", {"metal": (192, 384)}),
 "r6a": (8, "amd", "amd64", {"metal": (192, 1536)}),
 "m7g": (4, "aws", "arm64", {"metal": (64, 256)}),
 "c7g": (2, "aws", "arm64", {"metal": (64, 128)}),
 "r7g": (8, "aws", "arm64", {"metal": (64, 512)}),
}
T3 = {"nano": (2, 0.5, 2, 2), "micro": (2, 1, 2, 2), "small": (2, 2, 3, 4),
      "medium": (2, 4, 3, 6), "large": (2, 8, 3, 12), "xlarge": (4, 16, 4, 15),
      "2xlarge": (8, 32, 4, 15)}

# accelerated: size -> (vcpu, GiB, devices, enis, ipv4, local nvme GB)
ACCEL = {
 "g4dn": ("T4", "NVIDIA", 16384, "intel", {
    "xlarge": (4, 16, 1, 3, 10, 125), "2xlarge": (8, 32, 1, 3, 10, 225),
    "4xlarge": (16, 64, 1, 3, 10, 225), "8xlarge": (32, 128, 1, 4, 15, 900),
    "12xlarge": (48, 192, 4, 8, 30, 900), "16xlarge": (64, 256, 1, 4, 15, 900),
    "metal": (96, 384, 8, 15, 50, 1800)}),
 "g5": ("A10G", "NVIDIA", 22888, "amd", {
    "xlarge": (4, 16, 1, 4, 15, 250), "2xlarge": (8, 32, 1, 4, 15, 450),
    "4xlarge": (16, 64, 1, 8, 30, 600), "8xlarge": (32, 128, 1, 8, 30, 900),
    "12xlarge": (48, 192, 4, 15, 50, 3800), "16xlarge": (64, 256, 1, 8, 30, 1900),
    "24xlarge": (96, 384, 4, 15, 50, 3800), "48xlarge": (192, 768, 8, 7, 50, 7600)}),
 "g6": ("L4", "NVIDIA", 22888, "amd", {
    "xlarge": (4, 16, 1, 4, 15, 250), "2xlarge": (8, 32, 1, 4, 15, 450),
    "4xlarge": (16, 64, 1, 8, 30, 600), "8xlarge": (32, 128, 1, 8, 30, 900),
    "12xlarge": (48, 192, 4, 8, 30, 3760), "16xlarge": (64, 256, 1, 15, 50, 1880),
    "24xlarge": (96, 384, 4, 15, 50, 3760), "48xlarge": (192, 768, 8, 15, 50, 7520)}),
 "g6e": ("L40S", "NVIDIA", 45776, "amd", {
    "xlarge": (4, 32, 1, 4, 15, 250), "2xlarge": (8, 64, 1, 4, 15, 450),
    "4xlarge": (16, 128, 1, 8, 30, 600), "8xlarge": (32, 256, 1, 8, 30, 900),
    "12xlarge": (48, 384, 4, 8, 30, 3800), "16xlarge": (64, 512, 1, 15, 50, 1900),
    "24xlarge": (96, 768, 4, 15, 50, 3800), "48xlarge": (192, 1536, 8, 15, 50, 7600)}),
 "p3": ("V100", "NVIDIA", 16384, "intel", {
    "2xlarge": (8, 61, 1, 4, 15, 0), "8xlarge": (32, 244, 4, 8, 30, 0),
    "16xlarge": (64, 488, 8, 8, 30, 0)}),
 "p4d": ("A100", "NVIDIA", 40960, "intel", {"24xlarge": (96, 1152, 8, 15, 50, 8000)}),
 "p5": ("H100", "NVIDIA", 81920, "amd", {
    "4xlarge": (16, 256, 1, 4, 30, 3800), "48xlarge": (192, 2048, 8, 2, 50, 30400)}),
 "inf2": ("Inferentia2", "AWS", 32768, "amd", {
    "xlarge": (4, 16, 1, 4, 15, 0), "8xlarge": (32, 128, 1, 8, 30, 0),
    "24xlarge": (96, 384, 6, 15, 50, 0), "48xlarge": (192, 768, 12, 15, 50, 0)}),
 "trn1": ("Trainium", "AWS", 32768, "intel", {
    "2xlarge": (8, 32, 1, 4, 15, 474), "32xlarge": (128, 512, 16, 5, 50, 7600)}),
 "g4ad": ("Radeon Pro V520", "AMD", 8192, "amd", {
    "xlarge": (4, 16, 1, 2, 4, 150), "2xlarge": (8, 32, 1, 2, 4, 300),
    "4xlarge": (16, 64, 1, 3, 10, 600), "8xlarge": (32, 128, 2, 4, 15, 1200),
    "16xlarge": (64, 256, 4, 8, 30, 2400)}),
 "dl1": ("Gaudi HL-205", "Habana", 32768, "intel", {"24xlarge": (96, 768, 8, 15, 50, 4000)}),
 # Inferentia: 4 NeuronCores (v1) and 8 GiB per device
 "inf1": ("Inferentia", "AWS", 8192, "intel", {
    "xlarge": (4, 8, 1, 4, 10, 0), "2xlarge": (8, 16, 1, 4, 10, 0),
    "6xlarge": (24, 48, 4, 8, 30, 0), "24xlarge": (96, 192, 16, 11, 30, 0)}),
 "trn1n": ("Trainium", "AWS", 32768, "intel", {"32xlarge": (128, 512, 16, 5, 50, 7600)}),
 # Trainium2: 8 NeuronCores (v3) and 96 GiB per device; card 0's ENIs from the pods
 # Karpenter's instance-types.md gives it (100 = 2 x (50 - 1) + 2; vpclimits lacks trn2)
 "trn2": ("Trainium2", "AWS", 98304, "intel", {"48xlarge": (192, 2048, 16, 2, 50, 7600)}),
 # Qualcomm AI 100 (EC2's InferenceAcceleratorInfo): 16 GiB per card, 128 GiB in all
 "dl2q": ("Qualcomm AI100", "Qualcomm", 16384, "intel", {"24xlarge": (96, 768, 8, 15, 50, 0)}),
 # AMD Xilinx Alveo U30 media accelerator cards (EC2's MediaAcceleratorInfo; two
 # transcode devices each, Xilinx/video-sdk getting_started_on_vt1.rst); Karpenter
 # gives them no label, so the catalog keeps them as "media" (memory not tabulated)
 "vt1": ("U30", "Xilinx", 0, "intel", {
    "3xlarge": (12, 24, 1, 4, 15, 0), "6xlarge": (24, 48, 2, 8, 30, 0),
    "24xlarge": (96, 192, 8, 15, 50, 0)}),
}
# NeuronCores per Neuron device
NEURON_CORES = {"Inferentia": 4, "Inferentia2": 2, "Trainium": 2, "Trainium2": 8}
XEN = {"p3"}
EFA = {("g5", "12xlarge"), ("g5", "24xlarge"), ("g5", "48xlarge"), ("g5", "8xlarge"),
       ("g5", "16xlarge"), ("g6", "8xlarge"), ("g6", "12xlarge"), ("g6", "16xlarge"),
       ("g6", "24xlarge"), ("g6", "48xlarge"), ("g4dn", "8xlarge"), ("g4dn", "12xlarge"),
       ("g4dn", "16xlarge"), ("g4dn", "metal"), ("p4d", "24xlarge"), ("p3", "16xlarge")}
EFA_COUNT = {("p4d", "24xlarge"): 4, ("p5", "48xlarge"): 32, ("dl1", "24xlarge"): 4,
             ("trn1", "32xlarge"): 8, ("trn1n", "32xlarge"): 16, ("trn2", "48xlarge"): 16,
             ("inf1", "24xlarge"): 1, ("dl2q", "24xlarge"): 1, ("vt1", "24xlarge"): 1}

def entry(name, vcpu, gib, arch, mfr, enis, ipv4, price, **kw):
    e = {"name": name, "vcpu": vcpu, "memMiB": int(gib * 1024), "arch": arch, "cpu": mfr,
         "enis": enis, "ipv4": ipv4, "price": price,
         "hypervisor": "" if name.split(".")[1].startswith("metal") else "nitro"}
    e.update(kw)
    return e

# network bandwidth in Mbit/s per type: aws/karpenter-provider-aws
# pkg/providers/instancetype/zz_generated.bandwidth.go (InstanceTypeBandwidthMegabits),
# the source of the karpenter.k8s.aws/instance-network-bandwidth label
NET_MBPS = {
 "c5.12xlarge": 12000, "c5.18xlarge": 25000, "c5.24xlarge": 25000, "c5.2xlarge": 2500, "c5.4xlarge": 5000, "c5.9xlarge": 12000,
 "c5.large": 750, "c5.metal": 25000, "c5.xlarge": 1250, "c6a.12xlarge": 18750, "c6a.16xlarge": 25000, "c6a.24xlarge": 37500,
 "c6a.2xlarge": 3125, "c6a.32xlarge": 50000, "c6a.48xlarge": 50000, "c6a.4xlarge": 6250, "c6a.8xlarge": 12500, "c6a.large": 781,
 "c6a.metal": 50000, "c6a.xlarge": 1562, "c6i.12xlarge": 18750, "c6i.16xlarge": 25000, "c6i.24xlarge": 37500, "c6i.2xlarge": 3125,
 "c6i.32xlarge": 50000, "c6i.4xlarge": 6250, "c6i.8xlarge": 12500, "c6i.large": 781, "c6i.metal": 50000, "c6i.xlarge": 1562,
 "c7g.12xlarge": 22500, "c7g.16xlarge": 30000, "c7g.2xlarge": 3750, "c7g.4xlarge": 7500, "c7g.8xlarge": 15000, "c7g.large": 937,
 "c7g.medium": 520, "c7g.metal": 30000, "c7g.xlarge": 1876, "c7i.12xlarge": 18750, "c7i.16xlarge": 25000, "c7i.24xlarge": 37500,
 "c7i.2xlarge": 3125, "c7i.48xlarge": 50000, "c7i.4xlarge": 6250, "c7i.8xlarge": 12500, "c7i.large": 781, "c7i.metal-24xl": 37500,
 "c7i.metal-48xl": 50000, "c7i.xlarge": 1562, "dl1.24xlarge": 400000, "g4ad.16xlarge": 25000, "g4ad.2xlarge": 4167, "g4ad.4xlarge": 8333,
 "g4ad.8xlarge": 15000, "g4ad.xlarge": 2000, "g4dn.12xlarge": 50000, "g4dn.16xlarge": 50000, "g4dn.2xlarge": 10000, "g4dn.4xlarge": 20000,
 "g4dn.8xlarge": 50000, "g4dn.metal": 100000, "g4dn.xlarge": 5000, "g5.12xlarge": 40000, "g5.16xlarge": 25000, "g5.24xlarge": 50000,
 "g5.2xlarge": 5000, "g5.48xlarge": 100000, "g5.4xlarge": 10000, "g5.8xlarge": 25000, "g5.xlarge": 2500, "g6.12xlarge": 40000,
 "g6.16xlarge": 25000, "g6.24xlarge": 50000, "g6.2xlarge": 5000, "g6.48xlarge": 100000, "g6.4xlarge": 10000, "g6.8xlarge": 25000,
 "g6.xlarge": 2500, "g6e.12xlarge": 100000, "g6e.16xlarge": 35000, "g6e.24xlarge": 200000, "g6e.2xlarge": 5000, "g6e.48xlarge": 400000,
 "g6e.4xlarge": 20000, "g6e.8xlarge": 25000, "g6e.xlarge": 2500, "inf2.24xlarge": 50000, "inf2.48xlarge": 100000, "inf2.8xlarge": 16667,
 "inf2.xlarge": 2083, "m5.12xlarge": 12000, "m5.16xlarge": 20000, "m5.24xlarge": 25000, "m5.2xlarge": 2500, "m5.4xlarge": 5000,
 "m5.8xlarge": 10000, "m5.large": 750, "m5.metal": 25000, "m5.xlarge": 1250, "m6a.12xlarge": 18750, "m6a.16xlarge": 25000,
 "m6a.24xlarge": 37500, "m6a.2xlarge": 3125, "m6a.32xlarge": 50000, "m6a.48xlarge": 50000, "m6a.4xlarge": 6250, "m6a.8xlarge": 12500,
 "m6a.large": 781, "m6a.metal": 50000, "m6a.xlarge": 1562, "m6i.12xlarge": 18750, "m6i.16xlarge": 25000, "m6i.24xlarge": 37500,
 "m6i.2xlarge": 3125, "m6i.32xlarge": 50000, "m6i.4xlarge": 6250, "m6i.8xlarge": 12500, "m6i.large": 781, "m6i.metal": 50000,
 "m6i.xlarge": 1562, "m7g.12xlarge": 22500, "m7g.16xlarge": 30000, "m7g.2xlarge": 3750, "m7g.4xlarge": 7500, "m7g.8xlarge": 15000,
 "m7g.large": 937, "m7g.medium": 520, "m7g.metal": 30000, "m7g.xlarge": 1876, "m7i.12xlarge": 18750, "m7i.16xlarge": 25000,
 "m7i.24xlarge": 37500, "m7i.2xlarge": 3125, "m7i.48xlarge": 50000, "m7i.4xlarge": 6250, "m7i.8xlarge": 12500, "m7i.large": 781,
 "m7i.metal-24xl": 37500, "m7i.metal-48xl": 50000, "m7i.xlarge": 1562, "p3.16xlarge": 25000, "p3.2xlarge": 2500, "p3.8xlarge": 10000,
 "p4d.24xlarge": 400000, "p5.48xlarge": 3200000, "p5.4xlarge": 100000, "r5.12xlarge": 12000, "r5.16xlarge": 20000, "r5.24xlarge": 25000,
 "r5.2xlarge": 2500, "r5.4xlarge": 5000, "r5.8xlarge": 10000, "r5.large": 750, "r5.metal": 25000, "r5.xlarge": 1250,
 "r6a.12xlarge": 18750, "r6a.16xlarge": 25000, "r6a.24xlarge": 37500, "r6a.2xlarge": 3125, "r6a.32xlarge": 50000, "r6a.48xlarge": 50000,
 "r6a.4xlarge": 6250, "r6a.8xlarge": 12500, "r6a.large": 781, "r6a.metal": 50000, "r6a.xlarge": 1562, "r6i.12xlarge": 18750,
 "r6i.16xlarge": 25000, "r6i.24xlarge": 37500, "r6i.2xlarge": 3125, "r6i.32xlarge": 50000, "r6i.4xlarge": 6250, "r6i.8xlarge": 12500,
 "r6i.large": 781, "r6i.metal": 50000, "r6i.xlarge": 1562, "r7g.12xlarge": 22500, "r7g.16xlarge": 30000, "r7g.2xlarge": 3750,
 "r7g.4xlarge": 7500, "r7g.8xlarge": 15000, "r7g.large": 937, "r7g.medium": 520, "r7g.metal": 30000, "r7g.xlarge": 1876,
 "r7i.12xlarge": 18750, "r7i.16xlarge": 25000, "r7i.24xlarge": 37500, "r7i.2xlarge": 3125, "r7i.48xlarge": 50000, "r7i.4xlarge": 6250,
 "r7i.8xlarge": 12500, "r7i.large": 781, "r7i.metal-24xl": 37500, "r7i.metal-48xl": 50000, "r7i.xlarge": 1562, "t3.2xlarge": 2048,
 "t3.large": 512, "t3.medium": 256, "t3.micro": 64, "t3.nano": 32, "t3.small": 128, "t3.xlarge": 1024,
 "trn1.2xlarge": 3125, "trn1.32xlarge": 800000,
 "inf1.xlarge": 5000, "inf1.2xlarge": 5000, "inf1.6xlarge": 25000, "inf1.24xlarge": 100000,
 "trn1n.32xlarge": 1600000, "trn2.48xlarge": 3200000, "dl2q.24xlarge": 100000,
 "vt1.3xlarge": 3120, "vt1.6xlarge": 6250, "vt1.24xlarge": 25000,
}

def main():
    types = []
    for fam, (ratio, mfr, arch, metal) in CPU_FAMILIES.items():
        for size, price in sorted(PRICES[fam].items()):
            if size in metal:
                vcpu, gib = metal[size]
            else:
                vcpu = STD_VCPU[size]
                gib = vcpu * ratio
            enis, ipv4 = STD_ENI[size]
            types.append(entry(f"{fam}.{size}", vcpu, gib, arch, mfr, enis, ipv4, price))
    for size, price in sorted(PRICES["t3"].items()):
        vcpu, gib, enis, ipv4 = T3[size]
        types.append(entry(f"t3.{size}", vcpu, gib, "amd64", "intel", enis, ipv4, price))
    for fam, (gname, gmfr, gmem, mfr, sizes) in ACCEL.items():
        for size, (vcpu, gib, devs, enis, ipv4, nvme) in sorted(sizes.items()):
            kw = {}
            if gmfr == "AWS":
                kw["accel"] = {"name": gname, "manufacturer": gmfr, "count": devs,
                               "cores": devs * NEURON_CORES[gname], "memMiB": gmem}
            elif gmfr == "Qualcomm":
                kw["accel"] = {"name": gname, "manufacturer": gmfr, "count": devs,
                               "memMiB": gmem}
            elif gmfr == "Xilinx":
                kw["media"] = {"name": gname, "manufacturer": gmfr, "count": devs}
            else:
                kw["gpu"] = {"name": gname, "manufacturer": gmfr, "count": devs,
                             "memMiB": gmem}
            if nvme:
                kw["nvmeGB"] = nvme
            efa = EFA_COUNT.get((fam, size), 1 if (fam, size) in EFA else 0)
            if efa:
                kw["efa"] = efa
            e = entry(f"{fam}.{size}", vcpu, gib, "amd64", mfr, enis, ipv4,
                      PRICES[fam].get(size), **kw)
            if e["price"] is None:
                del e["price"]
            if fam in XEN:
                e["hypervisor"] = "xen"
            if size == "metal":
                e["hypervisor"] = ""
            types.append(e)
    for t in types:
        if t["name"] in NET_MBPS:
            t["netMbps"] = NET_MBPS[t["name"]]
    types.sort(key=lambda t: t["name"])
    doc = {
        "source": "aws/karpenter-provider-aws zz_generated.pricing_aws.go (2026-01-19, us-east-1), "
                  "instance-types.md, zz_generated.vpclimits.go; see tools/gen_catalog.py",
        "types": types,
    }
    print(json.dumps(doc, indent=0, separators=(",", ":")))

main()
