#!/usr/bin/env python3
"""Writes manifests/crds/*.yaml (and the same into manifests/chart/nodewarden/crds/): the karpenter.sh/v1 NodePool and NodeClaim and the
karpenter.k8s.aws/v1 EC2NodeClass CustomResourceDefinitions, written for nodewarden from
../shared/docs/karpenter-api.md (structural schemas with Karpenter v1.14.1's fields,
defaults, enums, patterns and limits; status subresources; printer columns).

CEL rules (x-kubernetes-validations) are left out on purpose: nodewarden's validating
webhook enforces them (and reports them in kube-apiserver's words), so the CRDs carry the
structural layer only. Users who already run Karpenter's own CRDs keep them.

  python3 tools/gen_crds.py            # rewrite manifests/crds/
  python3 tools/gen_crds.py --check    # exit 1 if the files are not up to date
"""
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

R_DUR_NEVER = r'^(([0-9]+(s|m|h))+|Never)$'
R_DUR = r'^([0-9]+(s|m|h))+$'
R_BUDGET_DUR = r'^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$'
R_QUANTITY = (r'^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|'
              r'([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$')
R_QNAME = (r'^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\/))?'
           r'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$')
R_LABEL_VALUE = r'^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$'
R_CRON = (r'^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|'
          r'((.+)\s(.+)\s(.+)\s(.+)\s(.+))$')
R_NODES = r'^((100|[0-9]{1,2})%|[0-9]+)$'
R_VOLUME = (r'^((?:[1-9][0-9]{0,3}|[1-4][0-9]{4}|[5][0-8][0-9]{3}|59000)Gi|'
            r'(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|[6][0-3][0-9]{3}|64000)G|'
            r'([1-9]||[1-5][0-7]|58)Ti|([1-9]||[1-5][0-9]|6[0-3]|64)T)$')
R_EVICT = (r'^((\d{1,2}(\.\d{1,2})?|100(\.0{1,2})?)%||(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))'
           r'(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?)$')


def s(**kw):
    return dict(type='string', **kw)


def obj(props, required=None, **kw):
    o = {'type': 'object', 'properties': props}
    if required:
        o['required'] = required
    o.update(kw)
    return o


def arr(items, **kw):
    return dict(type='array', items=items, **kw)


def smap(**kw):
    return dict(type='object', additionalProperties={'type': 'string'}, **kw)


def i32(**kw):
    return dict(type='integer', format='int32', **kw)


def i64(**kw):
    return dict(type='integer', format='int64', **kw)


def quantity_map():
    return {'type': 'object', 'additionalProperties': {
        'anyOf': [{'type': 'integer'}, {'type': 'string'}],
        'pattern': R_QUANTITY, 'x-kubernetes-int-or-string': True}}


def taint():
    return obj({'key': s(minLength=1, pattern=R_QNAME,
                         description='The taint key to be applied to a node.'),
                'value': s(pattern=R_QNAME),
                'effect': s(enum=['NoSchedule', 'PreferNoSchedule', 'NoExecute']),
                'timeAdded': s(format='date-time')}, ['effect', 'key'])


def taints(desc):
    return arr(taint(), description=desc, **{'x-kubernetes-list-type': 'atomic'})


def requirements():
    item = obj({'key': s(maxLength=316, pattern=R_QNAME),
                'operator': s(enum=['In', 'NotIn', 'Exists', 'DoesNotExist', 'Gt', 'Lt', 'Gte', 'Lte']),
                'values': arr(s(), **{'x-kubernetes-list-type': 'atomic'}),
                'minValues': dict(type='integer', minimum=1, maximum=50)},
               ['key', 'operator'])
    return arr(item, maxItems=100, **{'x-kubernetes-list-type': 'atomic'})


def node_class_ref():
    return obj({'group': s(pattern=r'^[^/]*$'), 'kind': s(), 'name': s()},
               ['group', 'kind', 'name'])


def conditions():
    cond = obj({'type': s(maxLength=316), 'status': s(enum=['True', 'False', 'Unknown']),
                'observedGeneration': i64(minimum=0),
                'lastTransitionTime': s(format='date-time'),
                'reason': s(maxLength=1024), 'message': s(maxLength=32768)},
               ['lastTransitionTime', 'status', 'type'])
    return arr(cond, **{'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type']})


def nodepool_schema():
    budget = obj({'nodes': s(default='10%', pattern=R_NODES),
                  'schedule': s(pattern=R_CRON),
                  'duration': s(pattern=R_BUDGET_DUR),
                  'reasons': arr(s(enum=['Underutilized', 'Empty', 'Drifted']), maxItems=50,
                                 **{'x-kubernetes-list-type': 'set'})},
                 ['nodes'])
    disruption = obj({
        'consolidateAfter': s(pattern=R_DUR_NEVER),
        'consolidationPolicy': s(default='WhenEmptyOrUnderutilized',
                                 enum=['WhenEmpty', 'WhenEmptyOrUnderutilized', 'Balanced']),
        'budgets': arr(budget, default=[{'nodes': '10%'}], maxItems=50,
                       **{'x-kubernetes-list-type': 'atomic'}),
    }, ['consolidateAfter'], default={'consolidateAfter': '0s'})
    template = obj({
        'metadata': obj({
            'labels': dict(type='object', maxProperties=100, additionalProperties=s(
                maxLength=63, pattern=R_LABEL_VALUE)),
            'annotations': smap(),
        }),
        'spec': obj({
            'nodeClassRef': node_class_ref(),
            'requirements': requirements(),
            'taints': taints('Taints the nodes of this pool carry.'),
            'startupTaints': taints('Taints that are expected to be removed by a startup agent.'),
            'expireAfter': s(default='720h', pattern=R_DUR_NEVER),
            'terminationGracePeriod': s(pattern=R_DUR),
        }, ['nodeClassRef', 'requirements']),
    }, ['spec'])
    spec = obj({
        'template': template,
        'disruption': disruption,
        'limits': quantity_map(),
        'weight': i32(minimum=1, maximum=100),
        'replicas': i64(minimum=0),
    }, ['template'])
    status = obj({'resources': quantity_map(), 'nodes': i64(default=0),
                  'nodeClassObservedGeneration': i64(), 'conditions': conditions()})
    return obj({'apiVersion': s(), 'kind': s(), 'metadata': {'type': 'object'},
                'spec': spec, 'status': status}, ['spec'])


def nodeclaim_schema():
    spec = obj({
        'taints': taints('Taints the node carries.'),
        'startupTaints': taints('Taints that are expected to be removed by a startup agent.'),
        'requirements': requirements(),
        'resources': obj({'requests': quantity_map()}),
        'nodeClassRef': node_class_ref(),
        'terminationGracePeriod': s(pattern=R_DUR),
        'expireAfter': s(default='720h', pattern=R_DUR_NEVER),
    }, ['nodeClassRef', 'requirements'])
    status = obj({'providerID': s(), 'imageID': s(), 'nodeName': s(),
                  'capacity': quantity_map(), 'allocatable': quantity_map(),
                  'lastPodEventTime': s(format='date-time'), 'conditions': conditions()})
    return obj({'apiVersion': s(), 'kind': s(), 'metadata': {'type': 'object'},
                'spec': spec, 'status': status}, ['spec'])


def ec2nodeclass_schema():
    tags = dict(type='object', maxProperties=20, additionalProperties={'type': 'string'})
    ami_term = obj({'alias': s(maxLength=30), 'id': s(pattern='ami-[0-9a-z]+'), 'name': s(),
                    'owner': s(), 'ssmParameter': s(), 'tags': tags})
    subnet_term = obj({'id': s(pattern='subnet-[0-9a-z]+'), 'tags': tags})
    sg_term = obj({'id': s(pattern='sg-[0-9a-z]+'), 'name': s(), 'tags': tags})
    cr_term = obj({'id': s(pattern='^cr-[0-9a-z]+$'), 'ownerID': s(pattern='^[0-9]{12}$'),
                   'instanceMatchCriteria': s(enum=['open', 'targeted']), 'tags': tags})
    resv_keys = ['cpu', 'memory', 'ephemeral-storage', 'pid']
    evict_keys = ['memory.available', 'nodefs.available', 'nodefs.inodesFree',
                  'imagefs.available', 'imagefs.inodesFree', 'pid.available']
    del resv_keys, evict_keys  # key sets are CEL rules, enforced by the webhook
    kubelet = obj({
        'clusterDNS': arr(s()),
        'maxPods': i32(minimum=0),
        'podsPerCore': i32(minimum=0),
        'systemReserved': dict(type='object', additionalProperties=s(pattern=R_QUANTITY)),
        'kubeReserved': dict(type='object', additionalProperties=s(pattern=R_QUANTITY)),
        'evictionHard': dict(type='object', additionalProperties=s(pattern=R_EVICT)),
        'evictionSoft': dict(type='object', additionalProperties=s(pattern=R_EVICT)),
        'evictionSoftGracePeriod': smap(),
        'evictionMaxPodGracePeriod': i32(),
        'imageGCHighThresholdPercent': i32(minimum=0, maximum=100),
        'imageGCLowThresholdPercent': i32(minimum=0, maximum=100),
        'cpuCFSQuota': {'type': 'boolean'},
    })
    ebs = obj({'volumeSize': s(pattern=R_VOLUME),
               'volumeType': s(enum=['standard', 'io1', 'io2', 'gp2', 'sc1', 'st1', 'gp3']),
               'iops': i64(), 'throughput': i64(), 'encrypted': {'type': 'boolean'},
               'kmsKeyID': s(), 'snapshotID': s(), 'deleteOnTermination': {'type': 'boolean'},
               'volumeInitializationRate': i32(minimum=100, maximum=300)})
    bdm = obj({'deviceName': s(), 'rootVolume': {'type': 'boolean'}, 'ebs': ebs})
    metadata = obj({'httpEndpoint': s(default='enabled', enum=['enabled', 'disabled']),
                    'httpProtocolIPv6': s(default='disabled', enum=['enabled', 'disabled']),
                    'httpPutResponseHopLimit': i64(default=1, minimum=1, maximum=64),
                    'httpTokens': s(default='required', enum=['required', 'optional'])},
                   default={'httpEndpoint': 'enabled', 'httpProtocolIPv6': 'disabled',
                            'httpPutResponseHopLimit': 1, 'httpTokens': 'required'})
    nic = obj({'networkCardIndex': i32(minimum=0), 'deviceIndex': i32(minimum=0),
               'interfaceType': s(enum=['interface', 'efa-only'])},
              ['deviceIndex', 'interfaceType', 'networkCardIndex'])
    spec = obj({
        'amiSelectorTerms': arr(ami_term, minItems=1, maxItems=30),
        'amiFamily': s(enum=['AL2', 'AL2023', 'Bottlerocket', 'Custom', 'Windows2019',
                             'Windows2022', 'Windows2025']),
        'subnetSelectorTerms': arr(subnet_term, maxItems=30),
        'securityGroupSelectorTerms': arr(sg_term, maxItems=30),
        'capacityReservationSelectorTerms': arr(cr_term, maxItems=30),
        'placementGroupSelector': obj({'name': s(minLength=1), 'id': s(pattern='^pg-[0-9a-z]+$')}),
        'role': s(), 'instanceProfile': s(), 'userData': s(),
        'tags': smap(),
        'kubelet': kubelet,
        'blockDeviceMappings': arr(bdm, maxItems=50),
        'instanceStorePolicy': s(enum=['RAID0']),
        'networkInterfaces': arr(nic, maxItems=150),
        'detailedMonitoring': {'type': 'boolean'},
        'associatePublicIPAddress': {'type': 'boolean'},
        'ipPrefixCount': i32(minimum=0),
        'metadataOptions': metadata,
        'connectionTracking': obj({'tcpEstablishedTimeout': i32(minimum=60, maximum=432000),
                                   'udpStreamTimeout': i32(minimum=60, maximum=180),
                                   'udpTimeout': i32(minimum=30, maximum=60)}),
        'context': s(),
        'cpuOptions': obj({'nestedVirtualization': s(enum=['enabled', 'disabled'])}),
    }, ['amiSelectorTerms', 'securityGroupSelectorTerms', 'subnetSelectorTerms'])
    status = obj({
        'subnets': arr(obj({'id': s(), 'zone': s(), 'zoneID': s()}, ['id', 'zone'])),
        'securityGroups': arr(obj({'id': s(), 'name': s()}, ['id'])),
        'amis': arr(obj({'id': s(), 'name': s(), 'deprecated': {'type': 'boolean'},
                         'requirements': arr(obj({'key': s(), 'operator': s(),
                                                  'values': arr(s()),
                                                  'minValues': {'type': 'integer'}},
                                                 ['key', 'operator']))},
                        ['id', 'requirements'])),
        'capacityReservations': arr(obj({
            'id': s(), 'availabilityZone': s(), 'instanceType': s(),
            'instanceMatchCriteria': s(enum=['open', 'targeted']), 'ownerID': s(),
            'reservationType': s(enum=['default', 'capacity-block']),
            'interruptible': {'type': 'boolean'}, 'state': s(enum=['active', 'expiring']),
            'endTime': s(format='date-time')}, ['availabilityZone', 'id', 'instanceType', 'ownerID'])),
        'instanceProfile': s(),
        'conditions': conditions(),
    })
    return obj({'apiVersion': s(), 'kind': s(), 'metadata': {'type': 'object'},
                'spec': spec, 'status': status})


def ready_col():
    return {'name': 'Ready', 'type': 'string', 'jsonPath': '.status.conditions[?(@.type=="Ready")].status'}


def crd(group, plural, singular, kind, short, schema, columns, scale=False):
    sub = {'status': {}}
    if scale:
        sub['scale'] = {'specReplicasPath': '.spec.replicas', 'statusReplicasPath': '.status.nodes'}
    return {
        'apiVersion': 'apiextensions.k8s.io/v1', 'kind': 'CustomResourceDefinition',
        'metadata': {'name': '%s.%s' % (plural, group),
                     'labels': {'app.kubernetes.io/part-of': 'nodewarden'}},
        'spec': {
            'group': group,
            'names': dict({'kind': kind, 'listKind': kind + 'List', 'plural': plural,
                           'singular': singular, 'categories': ['karpenter']},
                          **({'shortNames': short} if short else {})),
            'scope': 'Cluster',
            'versions': [{'name': 'v1', 'served': True, 'storage': True,
                          'additionalPrinterColumns': columns,
                          'schema': {'openAPIV3Schema': schema},
                          'subresources': sub}],
        },
    }


def all_crds():
    return {
        'karpenter.sh_nodepools.yaml': crd('karpenter.sh', 'nodepools', 'nodepool', 'NodePool', None,
            nodepool_schema(), [
                {'name': 'NodeClass', 'type': 'string', 'jsonPath': '.spec.template.spec.nodeClassRef.name'},
                {'name': 'Nodes', 'type': 'string', 'jsonPath': '.status.resources.nodes'},
                ready_col(),
                {'name': 'Age', 'type': 'date', 'jsonPath': '.metadata.creationTimestamp'},
                {'name': 'Weight', 'type': 'integer', 'jsonPath': '.spec.weight', 'priority': 1},
                {'name': 'CPU', 'type': 'string', 'jsonPath': '.status.resources.cpu', 'priority': 1},
                {'name': 'Memory', 'type': 'string', 'jsonPath': '.status.resources.memory', 'priority': 1},
            ], scale=True),
        'karpenter.sh_nodeclaims.yaml': crd('karpenter.sh', 'nodeclaims', 'nodeclaim', 'NodeClaim', None,
            nodeclaim_schema(), [
                {'name': 'Type', 'type': 'string', 'jsonPath': '.metadata.labels.node\\.kubernetes\\.io/instance-type'},
                {'name': 'Capacity', 'type': 'string', 'jsonPath': '.metadata.labels.karpenter\\.sh/capacity-type'},
                {'name': 'Zone', 'type': 'string', 'jsonPath': '.metadata.labels.topology\\.kubernetes\\.io/zone'},
                {'name': 'Node', 'type': 'string', 'jsonPath': '.status.nodeName'},
                ready_col(),
                {'name': 'Age', 'type': 'date', 'jsonPath': '.metadata.creationTimestamp'},
                {'name': 'ImageID', 'type': 'string', 'jsonPath': '.status.imageID', 'priority': 1},
                {'name': 'ID', 'type': 'string', 'jsonPath': '.status.providerID', 'priority': 1},
                {'name': 'NodePool', 'type': 'string', 'jsonPath': '.metadata.labels.karpenter\\.sh/nodepool', 'priority': 1},
                {'name': 'NodeClass', 'type': 'string', 'jsonPath': '.spec.nodeClassRef.name', 'priority': 1},
            ]),
        'karpenter.k8s.aws_ec2nodeclasses.yaml': crd('karpenter.k8s.aws', 'ec2nodeclasses', 'ec2nodeclass',
            'EC2NodeClass', ['ec2nc', 'ec2ncs'], ec2nodeclass_schema(), [
                ready_col(),
                {'name': 'Age', 'type': 'date', 'jsonPath': '.metadata.creationTimestamp'},
                {'name': 'Role', 'type': 'string', 'jsonPath': '.spec.role', 'priority': 1},
            ]),
    }


_PLAIN = re.compile(r'^[A-Za-z_][A-Za-z0-9_./-]*$')
_YAML_WORDS = {'y', 'n', 'yes', 'no', 'on', 'off', 'true', 'false', 'null', '~'}


def scalar(v):
    if v is True:
        return 'true'
    if v is False:
        return 'false'
    if v is None:
        return 'null'
    if isinstance(v, (int, float)):
        return json.dumps(v)
    if _PLAIN.match(v) and v.lower() not in _YAML_WORDS:
        return v
    return json.dumps(v)


def emit(v, indent=0):
    """Block-style YAML for dicts/lists of JSON values (strings that need it JSON-quoted)."""
    pad = ' ' * indent
    out = []
    if isinstance(v, dict):
        if not v:
            return [pad + '{}']
        for k, x in v.items():
            if isinstance(x, (dict, list)) and x:
                out.append('%s%s:' % (pad, scalar(k)))
                out.extend(emit(x, indent + 2))
            else:
                out.append('%s%s: %s' % (pad, scalar(k), emit_inline(x)))
        return out
    if isinstance(v, list):
        for x in v:
            if isinstance(x, (dict, list)) and x:
                sub = emit(x, indent + 2)
                out.append(pad + '- ' + sub[0][indent + 2:])
                out.extend(sub[1:])
            else:
                out.append('%s- %s' % (pad, emit_inline(x)))
        return out
    return [pad + scalar(v)]


def emit_inline(x):
    if isinstance(x, dict):
        return '{}'
    if isinstance(x, list):
        return '[]'
    return scalar(x)


def render(name, doc):
    head = ('# %s - generated by tools/gen_crds.py from docs/karpenter-api.md (Karpenter v1.14.1\n'
            '# fields, defaults, enums, patterns, limits; CEL rules are enforced by nodewarden\'s\n'
            '# validating webhook). Do not edit by hand: edit tools/gen_crds.py and re-run it.\n' % name)
    return head + '\n'.join(emit(doc)) + '\n'


def main():
    check = '--check' in sys.argv[1:]
    stale = []
    # the plain manifests and the Helm chart's crds/ (installed by `helm install`)
    for outdir in (os.path.join(ROOT, 'manifests', 'crds'),
                   os.path.join(ROOT, 'manifests', 'chart', 'nodewarden', 'crds')):
        os.makedirs(outdir, exist_ok=True)
        for name, doc in all_crds().items():
            text = render(name, doc)
            path = os.path.join(outdir, name)
            old = open(path).read() if os.path.exists(path) else None
            if old != text:
                stale.append(path)
                if not check:
                    with open(path, 'w') as f:
                        f.write(text)
    if check and stale:
        print('out of date (run python3 tools/gen_crds.py): ' + ', '.join(stale))
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
