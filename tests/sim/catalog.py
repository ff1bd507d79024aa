"""The simulator's EC2 instance-type catalog and price table.

Sources (figures as published; the simulator only needs them to be realistic
and self-consistent, not current to the cent):
- vCPU, memory, GPU/accelerator counts and models, network performance, EBS
  bandwidth, local NVMe: AWS "Amazon EC2 instance types" specifications pages,
  cross-checked against aws/karpenter-provider-aws
  website/content/en/docs/reference/instance-types.md (generated from
  DescribeInstanceTypes) and pkg/fake/zz_generated.describe_instance_types.go.
- ENIs per network card and IPv4 addresses per ENI: karpenter-provider-aws
  pkg/providers/instancetype/zz_generated.vpclimits.go (the m6i/m7i/c6i/r6i/g5/
  g6/p4d/p5 rows as listed there).
- GPU memory per device (MiB) as DescribeInstanceTypes reports it
  (A10G and L4 22888, A100 40960, H100 81920; karpenter-provider-aws
  pkg/fake/zz_generated.describe_instance_types.go has the A10G figure).
- On-demand prices: Linux, shared tenancy, us-east-1/us-west-2 (identical for
  these families), from karpenter-provider-aws
  pkg/providers/pricing/zz_generated.pricing_aws.go (p4d/p5 after AWS's 2025
  reductions).
- Spot prices are synthetic: a per-family discount (typical of the Spot
  price history for these families) varied per type and per zone by a stable
  hash, always below on-demand.
ENI figures checked against zz_generated.vpclimits.go for the t3/m5/c5/g4dn/g5/g6/g6e rows;
inf2 ENI figures and clock speeds are approximate; g4ad and dl1 from the same files
(aws/karpenter-provider-aws v1.14.1), their spot discounts made up like the others'.
"""

import zlib

# family: arch, cpu manufacturer, sustained clock GHz, category, generation,
#         accel (None | ('gpu', name, manufacturer, mem MiB) | ('neuron', name, cores, mem MiB)),
#         spot discount (spot/on-demand), burstable
FAMILIES = {
    't3':   ('x86_64', 'Intel', 2.5, 't', 3, None, 0.32, True),
    'm5':   ('x86_64', 'Intel', 3.1, 'm', 5, None, 0.40, False),
    'c5':   ('x86_64', 'Intel', 3.4, 'c', 5, None, 0.42, False),
    'r5':   ('x86_64', 'Intel', 3.1, 'r', 5, None, 0.33, False),
    'm6i':  ('x86_64', 'Intel', 3.5, 'm', 6, None, 0.38, False),
    'm7i':  ('x86_64', 'Intel', 3.2, 'm', 7, None, 0.45, False),
    'c6i':  ('x86_64', 'Intel', 3.5, 'c', 6, None, 0.40, False),
    'r6i':  ('x86_64', 'Intel', 3.5, 'r', 6, None, 0.34, False),
    'm7g':  ('arm64', 'AWS', 2.6, 'm', 7, None, 0.40, False),
    'c7g':  ('arm64', 'AWS', 2.6, 'c', 7, None, 0.43, False),
    'g4dn': ('x86_64', 'Intel', 2.5, 'g', 4, ('gpu', 'T4', 'NVIDIA', 16384), 0.40, False),
    'g5':   ('x86_64', 'AMD', 3.3, 'g', 5, ('gpu', 'A10G', 'NVIDIA', 22888), 0.42, False),
    'g6':   ('x86_64', 'AMD', 3.4, 'g', 6, ('gpu', 'L4', 'NVIDIA', 22888), 0.48, False),
    'g6e':  ('x86_64', 'AMD', 3.4, 'g', 6, ('gpu', 'L40S', 'NVIDIA', 45776), 0.45, False),
    'g4ad': ('x86_64', 'AMD', 3.3, 'g', 4, ('gpu', 'Radeon Pro V520', 'AMD', 8192), 0.38, False),
    'dl1':  ('x86_64', 'Intel', 3.0, 'dl', 1, ('gpu', 'Gaudi HL-205', 'Habana', 32768), 0.50, False),
    'inf2': ('x86_64', 'AMD', 2.9, 'inf', 2, ('neuron', 'Inferentia2', 2, 32768), 0.30, False),
    'p4d':  ('x86_64', 'Intel', 3.0, 'p', 4, ('gpu', 'A100', 'NVIDIA', 40960), 0.55, False),
    'p5':   ('x86_64', 'AMD', 3.6, 'p', 5, ('gpu', 'H100', 'NVIDIA', 81920), 0.60, False),
}

# type: vCPU, memory GiB, accelerators, ENIs (default card) x IPv4/ENI, network cards,
#       network performance, baseline network Mbps, EBS max Mbps, local NVMe GB,
#       EFA interfaces, on-demand $/h
_T = [
    # burstable general purpose
    ('t3.small', 2, 2, 0, 3, 4, 1, 'Up to 5 Gigabit', 128, 2085, 0, 0, 0.0208),
    ('t3.medium', 2, 4, 0, 3, 6, 1, 'Up to 5 Gigabit', 256, 2085, 0, 0, 0.0416),
    ('t3.large', 2, 8, 0, 3, 12, 1, 'Up to 5 Gigabit', 512, 2780, 0, 0, 0.0832),
    ('t3.xlarge', 4, 16, 0, 4, 15, 1, 'Up to 5 Gigabit', 1024, 2780, 0, 0, 0.1664),
    ('t3.2xlarge', 8, 32, 0, 4, 15, 1, 'Up to 5 Gigabit', 2048, 2780, 0, 0, 0.3328),
    # previous-generation Intel
    ('m5.large', 2, 8, 0, 3, 10, 1, 'Up to 10 Gigabit', 750, 4750, 0, 0, 0.0960),
    ('m5.xlarge', 4, 16, 0, 4, 15, 1, 'Up to 10 Gigabit', 1250, 4750, 0, 0, 0.1920),
    ('m5.2xlarge', 8, 32, 0, 4, 15, 1, 'Up to 10 Gigabit', 2500, 4750, 0, 0, 0.3840),
    ('m5.4xlarge', 16, 64, 0, 8, 30, 1, 'Up to 10 Gigabit', 5000, 4750, 0, 0, 0.7680),
    ('m5.8xlarge', 32, 128, 0, 8, 30, 1, '10 Gigabit', 10000, 6800, 0, 0, 1.5360),
    ('c5.large', 2, 4, 0, 3, 10, 1, 'Up to 10 Gigabit', 750, 4750, 0, 0, 0.0850),
    ('c5.xlarge', 4, 8, 0, 4, 15, 1, 'Up to 10 Gigabit', 1250, 4750, 0, 0, 0.1700),
    ('c5.2xlarge', 8, 16, 0, 4, 15, 1, 'Up to 10 Gigabit', 2500, 4750, 0, 0, 0.3400),
    ('c5.4xlarge', 16, 32, 0, 8, 30, 1, 'Up to 10 Gigabit', 5000, 4750, 0, 0, 0.6800),
    ('r5.large', 2, 16, 0, 3, 10, 1, 'Up to 10 Gigabit', 750, 4750, 0, 0, 0.1260),
    ('r5.xlarge', 4, 32, 0, 4, 15, 1, 'Up to 10 Gigabit', 1250, 4750, 0, 0, 0.2520),
    ('r5.2xlarge', 8, 64, 0, 4, 15, 1, 'Up to 10 Gigabit', 2500, 4750, 0, 0, 0.5040),
    # current-generation Intel
    ('m6i.large', 2, 8, 0, 3, 10, 1, 'Up to 12.5 Gigabit', 781, 10000, 0, 0, 0.0960),
    ('m6i.xlarge', 4, 16, 0, 4, 15, 1, 'Up to 12.5 Gigabit', 1562, 10000, 0, 0, 0.1920),
    ('m6i.2xlarge', 8, 32, 0, 4, 15, 1, 'Up to 12.5 Gigabit', 3125, 10000, 0, 0, 0.3840),
    ('m6i.4xlarge', 16, 64, 0, 8, 30, 1, 'Up to 12.5 Gigabit', 6250, 10000, 0, 0, 0.7680),
    ('m6i.8xlarge', 32, 128, 0, 8, 30, 1, '12.5 Gigabit', 12500, 10000, 0, 0, 1.5360),
    ('m6i.12xlarge', 48, 192, 0, 8, 30, 1, '18.75 Gigabit', 18750, 15000, 0, 0, 2.3040),
    ('m6i.16xlarge', 64, 256, 0, 15, 50, 1, '25 Gigabit', 25000, 20000, 0, 0, 3.0720),
    ('m6i.24xlarge', 96, 384, 0, 15, 50, 1, '37.5 Gigabit', 37500, 30000, 0, 0, 4.6080),
    ('m6i.32xlarge', 128, 512, 0, 15, 50, 1, '50 Gigabit', 50000, 40000, 0, 1, 6.1440),
    ('m6i.metal', 128, 512, 0, 15, 50, 1, '50 Gigabit', 50000, 40000, 0, 1, 6.1440),
    ('m7i.large', 2, 8, 0, 3, 10, 1, 'Up to 12.5 Gigabit', 781, 10000, 0, 0, 0.1008),
    ('m7i.xlarge', 4, 16, 0, 4, 15, 1, 'Up to 12.5 Gigabit', 1562, 10000, 0, 0, 0.2016),
    ('m7i.2xlarge', 8, 32, 0, 4, 15, 1, 'Up to 12.5 Gigabit', 3125, 10000, 0, 0, 0.4032),
    ('m7i.4xlarge', 16, 64, 0, 8, 30, 1, 'Up to 12.5 Gigabit', 6250, 10000, 0, 0, 0.8064),
    ('m7i.8xlarge', 32, 128, 0, 8, 30, 1, '12.5 Gigabit', 12500, 10000, 0, 0, 1.6128),
    ('c6i.large', 2, 4, 0, 3, 10, 1, 'Up to 12.5 Gigabit', 781, 10000, 0, 0, 0.0850),
    ('c6i.xlarge', 4, 8, 0, 4, 15, 1, 'Up to 12.5 Gigabit', 1562, 10000, 0, 0, 0.1700),
    ('c6i.2xlarge', 8, 16, 0, 4, 15, 1, 'Up to 12.5 Gigabit', 3125, 10000, 0, 0, 0.3400),
    ('c6i.4xlarge', 16, 32, 0, 8, 30, 1, 'Up to 12.5 Gigabit', 6250, 10000, 0, 0, 0.6800),
    ('c6i.8xlarge', 32, 64, 0, 8, 30, 1, '12.5 Gigabit', 12500, 10000, 0, 0, 1.3600),
    ('r6i.large', 2, 16, 0, 3, 10, 1, 'Up to 12.5 Gigabit', 781, 10000, 0, 0, 0.1260),
    ('r6i.xlarge', 4, 32, 0, 4, 15, 1, 'Up to 12.5 Gigabit', 1562, 10000, 0, 0, 0.2520),
    ('r6i.2xlarge', 8, 64, 0, 4, 15, 1, 'Up to 12.5 Gigabit', 3125, 10000, 0, 0, 0.5040),
    ('r6i.4xlarge', 16, 128, 0, 8, 30, 1, 'Up to 12.5 Gigabit', 6250, 10000, 0, 0, 1.0080),
    ('r6i.8xlarge', 32, 256, 0, 8, 30, 1, '12.5 Gigabit', 12500, 10000, 0, 0, 2.0160),
    # Graviton (arm64)
    ('m7g.medium', 1, 4, 0, 2, 4, 1, 'Up to 12.5 Gigabit', 520, 10000, 0, 0, 0.0408),
    ('m7g.large', 2, 8, 0, 3, 10, 1, 'Up to 12.5 Gigabit', 937, 10000, 0, 0, 0.0816),
    ('m7g.xlarge', 4, 16, 0, 4, 15, 1, 'Up to 12.5 Gigabit', 1876, 10000, 0, 0, 0.1632),
    ('m7g.2xlarge', 8, 32, 0, 4, 15, 1, 'Up to 15 Gigabit', 3750, 10000, 0, 0, 0.3264),
    ('m7g.4xlarge', 16, 64, 0, 8, 30, 1, 'Up to 15 Gigabit', 7500, 10000, 0, 0, 0.6528),
    ('m7g.8xlarge', 32, 128, 0, 8, 30, 1, '15 Gigabit', 15000, 10000, 0, 0, 1.3056),
    ('c7g.medium', 1, 2, 0, 2, 4, 1, 'Up to 12.5 Gigabit', 520, 10000, 0, 0, 0.0363),
    ('c7g.large', 2, 4, 0, 3, 10, 1, 'Up to 12.5 Gigabit', 937, 10000, 0, 0, 0.0725),
    ('c7g.xlarge', 4, 8, 0, 4, 15, 1, 'Up to 12.5 Gigabit', 1876, 10000, 0, 0, 0.1450),
    ('c7g.2xlarge', 8, 16, 0, 4, 15, 1, 'Up to 15 Gigabit', 3750, 10000, 0, 0, 0.2900),
    ('c7g.4xlarge', 16, 32, 0, 8, 30, 1, 'Up to 15 Gigabit', 7500, 10000, 0, 0, 0.5800),
    # GPU
    ('g4dn.xlarge', 4, 16, 1, 3, 10, 1, 'Up to 25 Gigabit', 5000, 3500, 125, 0, 0.5260),
    ('g4dn.2xlarge', 8, 32, 1, 3, 10, 1, 'Up to 25 Gigabit', 10000, 3500, 225, 0, 0.7520),
    ('g4dn.4xlarge', 16, 64, 1, 3, 10, 1, 'Up to 25 Gigabit', 20000, 4750, 225, 0, 1.2040),
    ('g4dn.12xlarge', 48, 192, 4, 8, 30, 1, '50 Gigabit', 50000, 9500, 900, 1, 3.9120),
    ('g5.xlarge', 4, 16, 1, 4, 15, 1, 'Up to 10 Gigabit', 2500, 3500, 250, 0, 1.0060),
    ('g5.2xlarge', 8, 32, 1, 4, 15, 1, 'Up to 10 Gigabit', 5000, 3500, 450, 0, 1.2120),
    ('g5.4xlarge', 16, 64, 1, 8, 30, 1, 'Up to 25 Gigabit', 10000, 8000, 600, 0, 1.6240),
    ('g5.8xlarge', 32, 128, 1, 8, 30, 1, '25 Gigabit', 25000, 16000, 900, 1, 2.4480),
    ('g5.12xlarge', 48, 192, 4, 15, 50, 1, '40 Gigabit', 40000, 16000, 3800, 1, 5.6720),
    ('g5.48xlarge', 192, 768, 8, 7, 50, 1, '100 Gigabit', 100000, 19000, 7600, 1, 16.2880),
    ('g6.xlarge', 4, 16, 1, 4, 15, 1, 'Up to 10 Gigabit', 2500, 5000, 250, 0, 0.8048),
    ('g6.2xlarge', 8, 32, 1, 4, 15, 1, 'Up to 10 Gigabit', 5000, 5000, 450, 0, 0.9776),
    ('g6.4xlarge', 16, 64, 1, 8, 30, 1, 'Up to 25 Gigabit', 10000, 8000, 600, 0, 1.3232),
    ('g6.8xlarge', 32, 128, 1, 8, 30, 1, '25 Gigabit', 25000, 16000, 900, 1, 2.0144),
    ('g6.12xlarge', 48, 192, 4, 8, 30, 1, '40 Gigabit', 40000, 20000, 3760, 1, 4.6016),
    ('g6.48xlarge', 192, 768, 8, 15, 50, 1, '100 Gigabit', 100000, 60000, 7520, 1, 13.3504),
    ('g6e.xlarge', 4, 32, 1, 4, 15, 1, 'Up to 20 Gigabit', 2500, 5000, 250, 0, 1.8610),
    ('g6e.2xlarge', 8, 64, 1, 4, 15, 1, 'Up to 20 Gigabit', 5000, 5000, 450, 0, 2.2421),
    ('g6e.12xlarge', 48, 384, 4, 10, 30, 1, '100 Gigabit', 100000, 20000, 3800, 1, 10.4926),
    ('g4ad.xlarge', 4, 16, 1, 2, 4, 1, 'Up to 10 Gigabit', 2000, 3170, 150, 0, 0.3785),
    ('g4ad.2xlarge', 8, 32, 1, 2, 4, 1, 'Up to 10 Gigabit', 4167, 3170, 300, 0, 0.5412),
    ('dl1.24xlarge', 96, 768, 8, 15, 50, 4, '4x 100 Gigabit', 400000, 19000, 4000, 4, 13.1090),
    ('inf2.xlarge', 4, 16, 1, 4, 15, 1, 'Up to 15 Gigabit', 2083, 10000, 0, 0, 0.7582),
    ('inf2.8xlarge', 32, 128, 1, 4, 15, 1, 'Up to 25 Gigabit', 16667, 10000, 0, 0, 1.9679),
    ('p4d.24xlarge', 96, 1152, 8, 15, 50, 4, '4x 100 Gigabit', 400000, 19000, 8000, 4, 21.9576),
    ('p5.4xlarge', 16, 256, 1, 4, 30, 1, '100 Gigabit', 100000, 10000, 3800, 1, 6.8800),
    ('p5.48xlarge', 192, 2048, 8, 2, 50, 32, '3200 Gigabit', 3200000, 80000, 30400, 32, 55.0400),
]

# Zones (by index a=0, b=1, c=2) where a family is NOT offered; everything
# else is offered in every zone.  Mirrors how scarce accelerators are.
_NOT_OFFERED = {
    'p4d': {2}, 'p5': {0, 2}, 'g6e': {2}, 'inf2': {1},
}

PRODUCT_DESCRIPTIONS = ('Linux/UNIX', 'Linux/UNIX (Amazon VPC)')


def _size_of(name):
    return name.split('.', 1)[1]


def _family_of(name):
    return name.split('.', 1)[0]


def _build():
    out = {}
    for (name, vcpu, mem_gib, accel_n, enis, ipv4, cards, netperf, base_mbps, ebs_mbps,
         nvme_gb, efa, od) in _T:
        fam = _family_of(name)
        arch, manuf, ghz, _cat, _gen, accel, _disc, burst = FAMILIES[fam]
        t = {
            'name': name, 'family': fam, 'size': _size_of(name),
            'vcpu': vcpu, 'memory_mib': mem_gib * 1024, 'arch': arch,
            'cpu_manufacturer': manuf, 'clock_ghz': ghz,
            'gpu': None, 'neuron': None,
            'enis': enis, 'ipv4_per_eni': ipv4, 'network_cards': cards,
            'network_performance': netperf, 'baseline_network_mbps': base_mbps,
            'ebs_max_mbps': ebs_mbps, 'local_nvme_gb': nvme_gb, 'efa': efa,
            'hypervisor': '' if _size_of(name) == 'metal' else 'nitro',
            'bare_metal': _size_of(name) == 'metal',
            'burstable': burst, 'current_generation': True,  # DescribeInstanceTypes reports all of these as current
            'on_demand': od,
            # the simulator's stand-ins for processorInfo.supportedFeatures and
            # placementGroupInfo.supportedStrategies: nested virtualization on m7i only;
            # burstable types not in cluster groups (EC2's rule for its burstable types)
            'nested_virtualization': fam == 'm7i',
            'placement_strategies': ['partition', 'spread'] if burst else ['cluster', 'partition', 'spread'],
        }
        if accel and accel_n:
            if accel[0] == 'gpu':
                t['gpu'] = {'name': accel[1], 'manufacturer': accel[2], 'count': accel_n,
                            'memory_mib': accel[3]}
            else:
                t['neuron'] = {'name': accel[1], 'count': accel_n, 'cores': accel[2],
                               'memory_mib': accel[3]}
        out[name] = t
    return out


TYPES = _build()


def get(name):
    return TYPES.get(name)


def names():
    return sorted(TYPES)


def zones_for(name, zones):
    """The zones (from the region's list) where the type is offered."""
    fam = _family_of(name)
    skip = _NOT_OFFERED.get(fam, set())
    return [z for i, z in enumerate(zones) if i not in skip]


def spot_price(name, zone_index):
    """Synthetic but stable spot price: family discount, +-10% per type and
    +-8% per zone from a hash, capped at 90% of on-demand."""
    t = TYPES[name]
    disc = FAMILIES[t['family']][6]
    h = zlib.crc32(name.encode()) % 1000 / 1000.0        # 0..1
    hz = zlib.crc32(('%s/%d' % (name, zone_index)).encode()) % 1000 / 1000.0
    p = t['on_demand'] * disc * (0.9 + 0.2 * h) * (0.92 + 0.16 * hz)
    p = min(p, t['on_demand'] * 0.9)
    return round(p, 4 if p >= 0.01 else 5)


def max_pods_eni(t):
    """ENI-limited pod density (Karpenter/EKS formula, default card, 0 reserved ENIs)."""
    return t['enis'] * (t['ipv4_per_eni'] - 1) + 2


# ---------------------------------------------------------------------------
# changes at run time (the control API's POST /aws/instance-types): a type added here is
# described, offered in every zone and priced like the built-in ones from then on.

_ADD_KEYS = {'name', 'vcpu', 'memoryMiB', 'arch', 'cpuManufacturer', 'onDemandPrice', 'enis',
             'ipv4PerEni', 'spotDiscount', 'clockGHz'}


def add_type(spec):
    """Add (or replace) an instance type from a control API body:
    {"name": "m9z.large", "vcpu": 2, "memoryMiB": 8192, "onDemandPrice": 0.05,
     "arch": "x86_64", "cpuManufacturer": "Intel", "enis": 3, "ipv4PerEni": 10,
     "spotDiscount": 0.4, "clockGHz": 3.0}.  Returns the type as get() shows it."""
    if not isinstance(spec, dict):
        raise ValueError('the body must be a JSON object')
    unknown = set(spec) - _ADD_KEYS
    if unknown:
        raise ValueError('unknown field(s): %s' % ', '.join(sorted(unknown)))
    name = spec.get('name')
    if not isinstance(name, str) or name.count('.') != 1 or not all(name.split('.')):
        raise ValueError('name must be <family>.<size>')
    fam = _family_of(name)
    def num(key, default=None, kind=float):
        v = spec.get(key, default)
        if v is None or isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
            raise ValueError('%s must be a positive number' % key)
        return kind(v)
    vcpu = num('vcpu', kind=int)
    mem = num('memoryMiB', kind=int)
    od = num('onDemandPrice')
    arch = spec.get('arch', 'x86_64')
    if arch not in ('x86_64', 'arm64'):
        raise ValueError('arch must be x86_64 or arm64')
    manuf = spec.get('cpuManufacturer', 'AWS' if arch == 'arm64' else 'Intel')
    disc = num('spotDiscount', 0.4)
    if disc >= 1:
        raise ValueError('spotDiscount must be below 1')
    if fam not in FAMILIES:
        cat = ''.join(ch for ch in fam if ch.isalpha()) or fam
        gen = int(''.join(ch for ch in fam if ch.isdigit()) or 0)
        FAMILIES[fam] = (arch, manuf, num('clockGHz', 3.0), cat, gen, None, disc, False)
    size = _size_of(name)
    TYPES[name] = {
        'name': name, 'family': fam, 'size': size, 'vcpu': vcpu, 'memory_mib': mem,
        'arch': arch, 'cpu_manufacturer': manuf, 'clock_ghz': FAMILIES[fam][2],
        'gpu': None, 'neuron': None,
        'enis': num('enis', 3, int), 'ipv4_per_eni': num('ipv4PerEni', 10, int),
        'network_cards': 1, 'network_performance': 'Up to 12.5 Gigabit',
        'baseline_network_mbps': 781, 'ebs_max_mbps': 10000, 'local_nvme_gb': 0, 'efa': 0,
        'hypervisor': '' if size.startswith('metal') else 'nitro',
        'bare_metal': size.startswith('metal'), 'burstable': False, 'current_generation': True,
        'on_demand': od,
    }
    return TYPES[name]


def set_on_demand(name, price):
    """Change a type's on-demand price (what the Pricing API answers from then on; the
    synthetic spot prices follow, as they are a discount on it)."""
    t = TYPES.get(name)
    if not t:
        raise ValueError('unknown instance type %s' % name)
    if isinstance(price, bool) or not isinstance(price, (int, float)) or price <= 0:
        raise ValueError('price must be a positive number')
    t['on_demand'] = float(price)
