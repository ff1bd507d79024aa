#!/usr/bin/env python3
"""Writes manifests/crds/*.yaml (and the same into manifests/chart/nodewarden/crds/): the
karpenter.sh/v1 NodePool and NodeClaim and the karpenter.k8s.aws/v1 EC2NodeClass
CustomResourceDefinitions nodewarden serves.

The validation is Karpenter v1.14.1's, keyword for keyword: the structural schema (types,
formats, enums in upstream's order, patterns, limits, required lists, list and map types,
defaults), every CEL rule (x-kubernetes-validations, with upstream's messages, so the API
server reports them in the same words), the status-condition schemas, printer columns and
subresources. `make test` proves it: tests/oracle/parity.py compares these files with the
CRDs in github.com/aws/karpenter-provider-aws@v1.14.1 (pkg/apis/crds/, fetched through the
Go module proxy at test time) field by field, and tests/oracle/oracle.py sends every
admission case to an API server running each set. With these CRDs installed the API server
itself enforces NodeClaim's rules (`spec is immutable` included); nodewarden's webhooks
cover NodePools and EC2NodeClasses only.

The descriptions (what `kubectl explain` prints) are ours, written for this project in
DESCRIPTIONS below; the generator fails on a description path that names no field, so they
cannot drift from the schema.

  python3 tools/gen_crds.py            # rewrite manifests/crds/ and the chart's crds/
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
R_COND_TYPE = (r'^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?'
               r'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$')
R_COND_REASON = r'^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$'
R_CRON = (r'^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|'
          r'((.+)\s(.+)\s(.+)\s(.+)\s(.+))$')
R_NODES = r'^((100|[0-9]{1,2})%|[0-9]+)$'
R_VOLUME = (r'^((?:[1-9][0-9]{0,3}|[1-4][0-9]{4}|[5][0-8][0-9]{3}|59000)Gi|'
            r'(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|[6][0-3][0-9]{3}|64000)G|'
            r'([1-9]||[1-5][0-7]|58)Ti|([1-9]||[1-5][0-9]|6[0-3]|64)T)$')
R_EVICT = (r'^((\d{1,2}(\.\d{1,2})?|100(\.0{1,2})?)%||(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))'
           r'(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?)$')

# Well-known karpenter.k8s.aws/* labels a NodePool may use (Karpenter v1.14.1).
AWS_LABELS = ['instance-tenancy', 'capacity-reservation-type', 'capacity-reservation-id',
              'capacity-reservation-interruptible', 'ec2nodeclass',
              'instance-encryption-in-transit-supported', 'instance-category',
              'instance-hypervisor', 'instance-family', 'instance-generation',
              'instance-local-nvme', 'instance-size', 'instance-cpu', 'instance-cpu-manufacturer',
              'instance-cpu-sustained-clock-speed-mhz', 'instance-memory',
              'instance-ebs-bandwidth', 'instance-network-bandwidth', 'instance-gpu-name',
              'instance-gpu-manufacturer', 'instance-gpu-count', 'instance-gpu-memory',
              'instance-accelerator-name', 'instance-accelerator-manufacturer',
              'instance-accelerator-count', 'instance-capability-flex', 'placement-group-id',
              'placement-group-partition']
EVICTION_SIGNALS = "['memory.available','nodefs.available','nodefs.inodesFree','imagefs.available','imagefs.inodesFree','pid.available']"


def cel(rule, message):
    return {'message': message, 'rule': rule}


def rules(*r):
    return {'x-kubernetes-validations': list(r)}


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


def boolean(**kw):
    return dict(type='boolean', **kw)


def quantity_map(**kw):
    return dict({'type': 'object', 'additionalProperties': {
        'anyOf': [{'type': 'integer'}, {'type': 'string'}],
        'pattern': R_QUANTITY, 'x-kubernetes-int-or-string': True}}, **kw)


def qlist(names):
    return '[' + ', '.join('"%s"' % n for n in names) + ']'


def label_key_rules(var, quantifier, nodepool):
    """The restricted-label rules on a label key (`self`) or on every key of a label map
    (`self.all(x, ...)`), in upstream's order and words."""
    def wrap(cond):
        return 'self.all(x, %s)' % cond if quantifier else cond
    aws = ['karpenter.k8s.aws/' + n for n in AWS_LABELS]
    if quantifier:
        # upstream's template-labels rule lists capacity-reservation-interruptible twice;
        # kept, so the rule is the same text
        aws = aws[:4] + aws[3:4] + aws[4:]
    out = [cel(wrap('%s in ["karpenter.sh/capacity-type", "karpenter.sh/nodepool"] || '
                    '!%s.find("^([^/]+)").endsWith("karpenter.sh")' % (var, var)),
               'label domain "karpenter.sh" is restricted')]
    if nodepool:
        out.append(cel(wrap('%s != "karpenter.sh/nodepool"' % var),
                       'label "karpenter.sh/nodepool" is restricted'))
    out.append(cel(wrap('%s != "kubernetes.io/hostname"' % var),
                   'label "kubernetes.io/hostname" is restricted'))
    out.append(cel(wrap('%s in %s || !%s.find("^([^/]+)").endsWith("karpenter.k8s.aws")'
                        % (var, qlist(aws), var)),
                   'label domain "karpenter.k8s.aws" is restricted'))
    return out


def taint(kind):
    return obj({
        'key': s(minLength=1, pattern=R_QNAME, description='Taint key, a qualified name '
                 '(optional DNS prefix and "/", then a name of at most 63 characters).'),
        'value': s(pattern=R_QNAME, description='Taint value (optional).'),
        'effect': s(enum=['NoSchedule', 'PreferNoSchedule', 'NoExecute'],
                    description='What happens to pods that do not tolerate the taint: '
                                'NoSchedule, PreferNoSchedule or NoExecute.'),
        'timeAdded': s(format='date-time', description='When the taint was added '
                       '(set by the node lifecycle controller for NoExecute taints).'),
    }, ['effect', 'key'], description='One %s: key, optional value and effect, as in a '
                                      'Node\'s spec.taints.' % kind)


def taints(desc, kind):
    return arr(taint(kind), description=desc, **{'x-kubernetes-list-type': 'atomic'})


def requirements(nodepool, desc):
    item = obj({
        'key': dict(s(maxLength=316, pattern=R_QNAME,
                      description='Node label the requirement constrains, e.g. '
                                  'node.kubernetes.io/instance-type or karpenter.sh/capacity-type. '
                                  'Labels in the karpenter.sh and karpenter.k8s.aws domains are '
                                  'restricted to the well-known ones.'),
                    **rules(*label_key_rules('self', False, nodepool))),
        'operator': s(enum=['Gte', 'Lte', 'In', 'NotIn', 'Exists', 'DoesNotExist', 'Gt', 'Lt'],
                      description='How the label relates to values: In, NotIn, Exists, '
                                  'DoesNotExist, or the integer comparisons Gt, Lt, Gte, Lte.'),
        # maxLength/pattern on the array itself, as upstream has them (the API server
        # applies neither to an array; kept for parity)
        'values': arr(s(), maxLength=63, pattern=R_LABEL_VALUE,
                      description='Label values. In needs at least one; Gt/Lt/Gte/Lte take '
                                  'exactly one non-negative integer; Exists and DoesNotExist '
                                  'take none.',
                      **{'x-kubernetes-list-type': 'atomic'}),
        'minValues': dict(type='integer', minimum=1, maximum=50,
                          description='Alpha: the least number of distinct values of this key '
                                      'the launch must keep to choose from (flexibility); with '
                                      'In, values must list at least this many.'),
    }, ['key', 'operator'], description='A node selector requirement on one label, with an '
                                        'optional minimum flexibility (minValues).')
    return arr(item, maxItems=100, description=desc, **dict({'x-kubernetes-list-type': 'atomic'}, **rules(
        cel("self.all(x, x.operator == 'In' ? x.values.size() != 0 : true)",
            "requirements with operator 'In' must have a value defined"),
        cel("self.all(x, (x.operator == 'Gt' || x.operator == 'Lt' || x.operator == 'Gte' || "
            "x.operator == 'Lte') ? (x.values.size() == 1 && int(x.values[0]) >= 0) : true)",
            "requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single positive "
            "integer value"),
        cel("self.all(x, (x.operator == 'In' && has(x.minValues)) ? x.values.size() >= "
            "x.minValues : true)",
            "requirements with 'minValues' must have at least that many values specified in "
            "the 'values' field"))))


def node_class_ref(immutable):
    def nonempty(what):
        return rules(cel("self != ''", '%s may not be empty' % what))
    ref = obj({'group': dict(s(pattern=r'^[^/]*$', description='API group of the node class, '
                                                                'karpenter.k8s.aws for an EC2NodeClass.'),
                             **nonempty('group')),
               'kind': dict(s(description='Kind of the node class, e.g. EC2NodeClass.'),
                            **nonempty('kind')),
               'name': dict(s(description='Name of the node class object.'), **nonempty('name'))},
              ['group', 'kind', 'name'],
              description='The node class (cloud-specific launch settings) these nodes use.')
    if immutable:
        ref.update(rules(cel('self.group == oldSelf.group', 'nodeClassRef.group is immutable'),
                         cel('self.kind == oldSelf.kind', 'nodeClassRef.kind is immutable')))
    return ref


def conditions(what, reason_may_be_empty=False, list_map=True):
    reason = s(maxLength=1024, pattern=R_COND_REASON, minLength=1,
               description='CamelCase machine-readable reason for the last transition.')
    required = ['lastTransitionTime', 'message', 'reason', 'status', 'type']
    if reason_may_be_empty:
        reason = s(maxLength=1024, pattern='^(' + R_COND_REASON[1:-1] + '|)$',
                   description='CamelCase machine-readable reason for the last transition '
                               '(may be empty).')
        required = ['lastTransitionTime', 'status', 'type']
    cond = obj({
        'type': s(maxLength=316, pattern=R_COND_TYPE,
                  description='Condition type, e.g. Ready (CamelCase, optionally prefixed with a '
                              'DNS domain and "/").'),
        'status': s(enum=['True', 'False', 'Unknown'], description='True, False or Unknown.'),
        'observedGeneration': i64(minimum=0, description='metadata.generation of the object '
                                                         'when the condition was last set.'),
        'lastTransitionTime': s(format='date-time',
                                description='When the status last changed.'),
        'reason': reason,
        'message': s(maxLength=32768, description='Human-readable detail on the transition.'),
    }, required, description='One observed condition of the %s.' % what)
    extra = {'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type']} if list_map else {}
    return arr(cond, description='Conditions of the %s (Ready and the conditions it '
                                 'summarizes).' % what, **extra)


def top(schema, what, desc, spec_desc, status_desc):
    """Root properties shared by every kind."""
    schema['description'] = desc
    schema['properties'] = dict({
        'apiVersion': s(description='API version of this object, e.g. karpenter.sh/v1.'),
        'kind': s(description='Kind of this object (%s).' % what),
        'metadata': {'type': 'object'},
    }, **schema['properties'])
    schema['properties']['spec']['description'] = spec_desc
    schema['properties']['status']['description'] = status_desc
    return schema


def nodepool_schema():
    budget = obj({'nodes': s(default='10%', pattern=R_NODES),
                  'schedule': s(pattern=R_CRON),
                  'duration': s(pattern=R_BUDGET_DUR),
                  'reasons': arr(s(enum=['Underutilized', 'Empty', 'Drifted'],
                                   description='A disruption reason: Underutilized, Empty or Drifted.'),
                                 maxItems=50, **{'x-kubernetes-list-type': 'set'})},
                 ['nodes'])
    disruption = obj({
        'consolidateAfter': s(pattern=R_DUR_NEVER),
        'consolidationPolicy': s(default='WhenEmptyOrUnderutilized',
                                 enum=['WhenEmpty', 'WhenEmptyOrUnderutilized', 'Balanced']),
        'budgets': arr(budget, default=[{'nodes': '10%'}], maxItems=50,
                       **dict({'x-kubernetes-list-type': 'atomic'}, **rules(
                           cel('self.all(x, has(x.schedule) == has(x.duration))',
                               "'schedule' must be set with 'duration'")))),
    }, ['consolidateAfter'], default={'consolidateAfter': '0s'})
    labels = dict(type='object', maxProperties=100,
                  additionalProperties=s(maxLength=63, pattern=R_LABEL_VALUE),
                  **{'x-kubernetes-map-type': 'atomic'})
    labels.update(rules(*label_key_rules('x', True, True)))
    template = obj({
        'metadata': obj({
            'labels': labels,
            'annotations': smap(**{'x-kubernetes-map-type': 'granular'}),
        }),
        'spec': obj({
            'nodeClassRef': node_class_ref(True),
            'requirements': requirements(True, 'Constraints on the labels of the nodes this pool '
                                               'may launch (instance type, zone, capacity type, '
                                               'architecture, ...); every node satisfies all of them.'),
            'taints': taints('Taints every node of this pool carries; pods must tolerate them.',
                             'taint'),
            'startupTaints': taints('Taints a node carries only while it starts, expected to be '
                                    'removed by an agent on the node (e.g. a CNI DaemonSet); pods '
                                    'need not tolerate them to trigger a launch.', 'startup taint'),
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
    }, ['template'], **rules(
        cel('has(self.replicas) == has(oldSelf.replicas)',
            'Cannot transition NodePool between static (replicas set) and dynamic (replicas '
            'unset) provisioning modes'),
        cel("!has(self.replicas) || (!has(self.limits) || size(self.limits) == 0 || "
            "(size(self.limits) == 1 && 'nodes' in self.limits))",
            "only 'limits.nodes' is supported on static NodePools"),
        cel('!has(self.replicas) || !has(self.weight)',
            "'weight' is not supported on static NodePools")))
    status = obj({'resources': quantity_map(), 'nodes': i64(default=0),
                  'nodeClassObservedGeneration': i64(), 'conditions': conditions('NodePool')})
    return top(obj({'metadata': {'type': 'object'}, 'spec': spec, 'status': status}, ['spec']),
               'NodePool', 'A NodePool: a template for the nodes nodewarden launches for '
               'unschedulable pods, with disruption settings and limits.', 'What nodes the pool may launch (template), how they are '
               'disrupted, and the pool\'s limits and weight.',
               'State observed by the controller: nodes, resources and conditions.')


def nodeclaim_schema():
    spec = obj({
        'taints': taints('Taints the node carries.', 'taint'),
        'startupTaints': taints('Taints the node carries only while it starts, expected to be '
                                'removed by an agent on the node.', 'startup taint'),
        'requirements': requirements(False, 'Constraints on the labels of the node to launch; '
                                            'the instance chosen satisfies all of them.'),
        'resources': obj({'requests': quantity_map()}),
        'nodeClassRef': node_class_ref(False),
        'terminationGracePeriod': s(pattern=R_DUR),
        'expireAfter': s(default='720h', pattern=R_DUR_NEVER),
    }, ['nodeClassRef', 'requirements'], **rules(cel('self == oldSelf', 'spec is immutable')))
    status = obj({'providerID': s(), 'imageID': s(), 'nodeName': s(),
                  'capacity': quantity_map(), 'allocatable': quantity_map(),
                  'lastPodEventTime': s(format='date-time'),
                  'conditions': conditions('NodeClaim', reason_may_be_empty=True)})
    return top(obj({'metadata': {'type': 'object'}, 'spec': spec, 'status': status}, ['spec']),
               'NodeClaim', 'A NodeClaim: one node requested by a NodePool (or by hand), '
               'tracked from launch to termination.', 'The node to launch, fixed at creation (the whole spec is '
               'immutable): requirements, resources, node class, taints and lifetimes.',
               'What was launched and how far it got: instance, node, capacity and conditions.')


def ec2nodeclass_schema():
    def tags(what):
        return dict(type='object', maxProperties=20, additionalProperties={'type': 'string'},
                    **rules(cel("self.all(k, k != '' && self[k] != '')",
                                "empty tag keys or values aren't supported")))
    ami_term = obj({'alias': s(maxLength=30, **rules(
                        cel("self.matches('^[a-zA-Z0-9]+@.+$')",
                            "'alias' is improperly formatted, must match the format 'family@version'"),
                        cel("self.split('@')[0] in ['al2','al2023','bottlerocket','windows2019',"
                            "'windows2022','windows2025']",
                            "family is not supported, must be one of the following: 'al2', "
                            "'al2023', 'bottlerocket', 'windows2019', 'windows2022', 'windows2025'"),
                        cel("self.split('@')[0] in ['windows2019','windows2022','windows2025'] ? "
                            "self.split('@')[1] == 'latest' : true",
                            "windows families may only specify version 'latest'"))),
                    'id': s(pattern='ami-[0-9a-z]+'), 'name': s(),
                    'owner': s(), 'ssmParameter': s(), 'tags': tags('AMI')})
    subnet_term = obj({'id': s(pattern='subnet-[0-9a-z]+'), 'tags': tags('subnet')})
    sg_term = obj({'id': s(pattern='sg-[0-9a-z]+'), 'name': s(), 'tags': tags('security group')})
    cr_term = obj({'id': s(pattern='^cr-[0-9a-z]+$'), 'ownerID': s(pattern='^[0-9]{12}$'),
                   'instanceMatchCriteria': s(enum=['open', 'targeted']),
                   'tags': tags('capacity reservation')})

    def keys_rule(field, keys_cond, keys_text):
        return cel('self.all(x, %s)' % keys_cond, 'valid keys for %s are %s' % (field, keys_text))

    def reserved(field):
        return dict(type='object', additionalProperties=s(pattern=R_QUANTITY), **rules(
            keys_rule(field, "x=='cpu' || x=='memory' || x=='ephemeral-storage' || x=='pid'",
                      "['cpu','memory','ephemeral-storage','pid']"),
            cel("self.all(x, !self[x].startsWith('-'))",
                '%s value cannot be a negative resource quantity' % field)))

    def eviction(field, values):
        return dict(type='object', additionalProperties=values, **rules(
            keys_rule(field, 'x in %s' % EVICTION_SIGNALS, EVICTION_SIGNALS)))
    kubelet = obj({
        'clusterDNS': arr(s()),
        'maxPods': i32(minimum=0),
        'podsPerCore': i32(minimum=0),
        'systemReserved': reserved('systemReserved'),
        'kubeReserved': reserved('kubeReserved'),
        'evictionHard': eviction('evictionHard', s(pattern=R_EVICT)),
        'evictionSoft': eviction('evictionSoft', s(pattern=R_EVICT)),
        'evictionSoftGracePeriod': eviction('evictionSoftGracePeriod', {'type': 'string'}),
        'evictionMaxPodGracePeriod': i32(),
        'imageGCHighThresholdPercent': i32(minimum=0, maximum=100),
        'imageGCLowThresholdPercent': i32(minimum=0, maximum=100),
        'cpuCFSQuota': boolean(),
    }, **rules(
        cel('has(self.imageGCHighThresholdPercent) && has(self.imageGCLowThresholdPercent) ?  '
            'self.imageGCHighThresholdPercent > self.imageGCLowThresholdPercent  : true',
            'imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent'),
        cel('has(self.evictionSoft) ? self.evictionSoft.all(e, (e in self.evictionSoftGracePeriod)):true',
            'evictionSoft OwnerKey does not have a matching evictionSoftGracePeriod'),
        cel('has(self.evictionSoftGracePeriod) ? self.evictionSoftGracePeriod.all(e, (e in self.evictionSoft)):true',
            'evictionSoftGracePeriod OwnerKey does not have a matching evictionSoft')))
    ebs = obj({'volumeSize': s(pattern=R_VOLUME),
               'volumeType': s(enum=['standard', 'io1', 'io2', 'gp2', 'sc1', 'st1', 'gp3']),
               'iops': i64(), 'throughput': i64(), 'encrypted': boolean(),
               'kmsKeyID': s(), 'snapshotID': s(), 'deleteOnTermination': boolean(),
               'volumeInitializationRate': i32(minimum=100, maximum=300)}, **rules(
        cel('has(self.snapshotID) || has(self.volumeSize)', 'snapshotID or volumeSize must be defined'),
        cel("!has(self.volumeInitializationRate) || (has(self.snapshotID) && self.snapshotID != '')",
            'snapshotID must be set when volumeInitializationRate is set')))
    bdm = obj({'deviceName': s(), 'rootVolume': boolean(), 'ebs': ebs})
    metadata = obj({'httpEndpoint': s(default='enabled', enum=['enabled', 'disabled']),
                    'httpProtocolIPv6': s(default='disabled', enum=['enabled', 'disabled']),
                    'httpPutResponseHopLimit': i64(default=1, minimum=1, maximum=64),
                    'httpTokens': s(default='required', enum=['required', 'optional'])},
                   default={'httpEndpoint': 'enabled', 'httpProtocolIPv6': 'disabled',
                            'httpPutResponseHopLimit': 1, 'httpTokens': 'required'})
    nic = obj({'networkCardIndex': i32(minimum=0), 'deviceIndex': i32(minimum=0),
               'interfaceType': s(enum=['interface', 'efa-only'])},
              ['deviceIndex', 'interfaceType', 'networkCardIndex'])

    def nonempty(field):
        return rules(cel("self != ''", '%s cannot be empty' % field))

    def restricted_tag(rule, tag):
        return cel(rule, 'tag contains a restricted tag matching %s' % tag)

    def alias_family(family, word, article='an'):
        return cel("!has(self.amiFamily) || (self.amiSelectorTerms.exists(x, has(x.alias) && "
                   "x.alias.find('^[^@]+') == '%s') ? (self.amiFamily == 'Custom' || "
                   "self.amiFamily == '%s') : true)" % (family, word),
                   "if set, amiFamily must be '%s' or 'Custom' when using %s %s alias"
                   % (word, article, word))
    spec = obj({
        'amiSelectorTerms': arr(ami_term, minItems=1, maxItems=30, **rules(
            cel('self.all(x, has(x.tags) || has(x.id) || has(x.name) || has(x.alias) || has(x.ssmParameter))',
                "expected at least one, got none, ['tags', 'id', 'name', 'alias', 'ssmParameter']"),
            cel('!self.exists(x, has(x.id) && (has(x.alias) || has(x.tags) || has(x.name) || has(x.owner)))',
                "'id' is mutually exclusive, cannot be set with a combination of other fields in amiSelectorTerms"),
            cel('!self.exists(x, has(x.alias) && (has(x.id) || has(x.tags) || has(x.name) || has(x.owner)))',
                "'alias' is mutually exclusive, cannot be set with a combination of other fields in amiSelectorTerms"),
            cel('!(self.exists(x, has(x.alias)) && self.size() != 1)',
                "'alias' is mutually exclusive, cannot be set with a combination of other amiSelectorTerms"))),
        'amiFamily': s(enum=['AL2', 'AL2023', 'Bottlerocket', 'Custom', 'Windows2019',
                             'Windows2022', 'Windows2025']),
        'subnetSelectorTerms': arr(subnet_term, maxItems=30, **rules(
            cel('self.size() != 0', 'subnetSelectorTerms cannot be empty'),
            cel('self.all(x, has(x.tags) || has(x.id))', "expected at least one, got none, ['tags', 'id']"),
            cel('!self.all(x, has(x.id) && has(x.tags))',
                "'id' is mutually exclusive, cannot be set with a combination of other fields in a subnet selector term"))),
        'securityGroupSelectorTerms': arr(sg_term, maxItems=30, **rules(
            cel('self.size() != 0', 'securityGroupSelectorTerms cannot be empty'),
            cel('self.all(x, has(x.tags) || has(x.id) || has(x.name))',
                "expected at least one, got none, ['tags', 'id', 'name']"),
            cel('!self.all(x, has(x.id) && (has(x.tags) || has(x.name)))',
                "'id' is mutually exclusive, cannot be set with a combination of other fields in a security group selector term"),
            cel('!self.all(x, has(x.name) && (has(x.tags) || has(x.id)))',
                "'name' is mutually exclusive, cannot be set with a combination of other fields in a security group selector term"))),
        'capacityReservationSelectorTerms': arr(cr_term, maxItems=30, **rules(
            cel('self.all(x, has(x.tags) || has(x.id) || has(x.instanceMatchCriteria))',
                "expected at least one, got none, ['tags', 'id', 'instanceMatchCriteria']"),
            cel('!self.all(x, has(x.id) && (has(x.tags) || has(x.ownerID) || has(x.instanceMatchCriteria)))',
                "'id' is mutually exclusive, cannot be set along with other fields in a capacity reservation selector term"))),
        'placementGroupSelector': obj({'name': s(minLength=1), 'id': s(pattern='^pg-[0-9a-z]+$')}, **rules(
            cel('has(self.name) || has(self.id)', "expected at least one, got none, ['name', 'id']"),
            cel('!(has(self.name) && has(self.id))', "'name' and 'id' are mutually exclusive"))),
        'role': s(**nonempty('role')), 'instanceProfile': s(**nonempty('instanceProfile')),
        'userData': s(),
        'tags': smap(**rules(
            cel("self.all(k, k != '')", "empty tag keys aren't supported"),
            restricted_tag("self.all(k, k !='eks:eks-cluster-name')", 'eks:eks-cluster-name'),
            restricted_tag("self.all(k, !k.startsWith('kubernetes.io/cluster') )", 'kubernetes.io/cluster/'),
            restricted_tag("self.all(k, k != 'karpenter.sh/nodepool')", 'karpenter.sh/nodepool'),
            restricted_tag("self.all(k, k !='karpenter.sh/nodeclaim')", 'karpenter.sh/nodeclaim'),
            restricted_tag("self.all(k, k !='karpenter.k8s.aws/ec2nodeclass')", 'karpenter.k8s.aws/ec2nodeclass'))),
        'kubelet': kubelet,
        'blockDeviceMappings': arr(bdm, maxItems=50, **rules(
            cel('self.filter(x, has(x.rootVolume)?x.rootVolume==true:false).size() <= 1',
                'must have only one blockDeviceMappings with rootVolume'))),
        'instanceStorePolicy': s(enum=['RAID0']),
        'networkInterfaces': arr(nic, maxItems=150, **rules(
            cel("self.size() == 0 || self.exists(x, x.deviceIndex == 0 && x.networkCardIndex == 0 && "
                "x.interfaceType == 'interface')",
                "networkInterfaces must include a primary interface with interfaceType='interface'"),
            cel("self.all(x, self.filter(y, x.networkCardIndex == y.networkCardIndex && x.deviceIndex == "
                "y.deviceIndex).size() == 1 && (x.interfaceType != 'efa-only' || self.filter(y, "
                "x.networkCardIndex == y.networkCardIndex && y.interfaceType == 'efa-only').size() == 1))",
                'networkInterfaces must not have duplicate networkCardIndex and deviceIndex pairs, '
                'and can have at most one efa device per network card'))),
        'detailedMonitoring': boolean(),
        'associatePublicIPAddress': boolean(),
        'ipPrefixCount': i32(minimum=0),
        'metadataOptions': metadata,
        'connectionTracking': obj({'tcpEstablishedTimeout': i32(minimum=60, maximum=432000),
                                   'udpStreamTimeout': i32(minimum=60, maximum=180),
                                   'udpTimeout': i32(minimum=30, maximum=60)}, **rules(
            cel('has(self.tcpEstablishedTimeout) || has(self.udpStreamTimeout) || has(self.udpTimeout)',
                'at least one of tcpEstablishedTimeout, udpStreamTimeout, or udpTimeout must be set'))),
        'context': s(),
        'cpuOptions': obj({'nestedVirtualization': s(enum=['enabled', 'disabled'])}),
    }, ['amiSelectorTerms', 'securityGroupSelectorTerms', 'subnetSelectorTerms'], **rules(
        cel('(has(self.role) && !has(self.instanceProfile)) || (!has(self.role) && has(self.instanceProfile))',
            "must specify exactly one of ['role', 'instanceProfile']"),
        alias_family('al2', 'AL2'), alias_family('al2023', 'AL2023'),
        alias_family('bottlerocket', 'Bottlerocket', 'a'),
        alias_family('windows2019', 'Windows2019', 'a'), alias_family('windows2022', 'Windows2022', 'a'),
        alias_family('windows2025', 'Windows2025', 'a'),
        cel('self.amiSelectorTerms.exists(x, has(x.alias)) ? true : has(self.amiFamily)',
            'must specify amiFamily if amiSelectorTerms does not contain an alias')))
    status = obj({
        'subnets': arr(obj({'id': s(), 'zone': s(), 'zoneID': s()}, ['id', 'zone'])),
        'securityGroups': arr(obj({'id': s(), 'name': s()}, ['id'])),
        'amis': arr(obj({'id': s(), 'name': s(), 'deprecated': boolean(),
                         'requirements': arr(obj({'key': s(), 'operator': s(),
                                                  'values': arr(s(), **{'x-kubernetes-list-type': 'atomic'})},
                                                 ['key', 'operator']))},
                        ['id', 'requirements'])),
        'capacityReservations': arr(obj({
            'id': s(pattern='^cr-[0-9a-z]+$'), 'availabilityZone': s(), 'instanceType': s(),
            'instanceMatchCriteria': s(enum=['open', 'targeted']),
            'ownerID': s(pattern='^[0-9]{12}$'),
            'reservationType': s(default='default', enum=['default', 'capacity-block']),
            'interruptible': boolean(), 'state': s(default='active', enum=['active', 'expiring']),
            'endTime': s(format='date-time')},
            ['availabilityZone', 'id', 'instanceMatchCriteria', 'instanceType', 'ownerID'])),
        'instanceProfile': s(),
        'conditions': conditions('EC2NodeClass', list_map=False),
    })
    return top(obj({'metadata': {'type': 'object'}, 'spec': spec, 'status': status}),
               'EC2NodeClass', 'An EC2NodeClass: the AWS launch settings NodePools refer to '
               'through nodeClassRef.', 'How instances are launched on EC2: AMIs, subnets, security '
               'groups, IAM role or instance profile, kubelet settings, volumes, tags, '
               'metadata service and network options.',
               'What the controller resolved from the selectors (subnets, security groups, '
               'AMIs, capacity reservations, instance profile) and its conditions.')


# What `kubectl explain` prints, in our words; keyed by field path ('[*]' an array's items).
DESCRIPTIONS = {
    'nodepools': {
        'spec.template': 'The NodeClaim template: labels, annotations and spec given to every '
                         'node the pool launches.',
        'spec.template.metadata.labels': 'Labels put on each node (at most 100). Keys in the '
                                         'karpenter.sh and karpenter.k8s.aws domains and '
                                         'kubernetes.io/hostname are reserved.',
        'spec.template.metadata.annotations': 'Annotations put on each node.',
        'spec.template.spec': 'The spec of the NodeClaims the pool creates, minus resource '
                              'requests (those come from the pending pods).',
        'spec.template.spec.expireAfter': 'How long a node may live after it is created before '
                                          'it is replaced, e.g. 720h; Never disables expiry. '
                                          'Default 720h.',
        'spec.template.spec.terminationGracePeriod': 'Once a node is being deleted, the longest '
                                                     'draining may take (e.g. 48h); after it, pods '
                                                     'are deleted even if a PodDisruptionBudget or '
                                                     'karpenter.sh/do-not-disrupt would block. '
                                                     'Unset: wait for the drain forever.',
        'spec.disruption': 'When and how fast nodes of this pool may be disrupted '
                           '(consolidation and disruption budgets).',
        'spec.disruption.consolidateAfter': 'How long a node must stay consolidatable (no pod '
                                            'added or removed) before it is consolidated, e.g. '
                                            '30s or 10m; Never turns consolidation off. Ignored '
                                            'when replicas is set.',
        'spec.disruption.consolidationPolicy': 'Which nodes consolidation may remove: WhenEmpty '
                                               '(only nodes without workload pods), '
                                               'WhenEmptyOrUnderutilized (also nodes whose pods fit '
                                               'elsewhere or on a cheaper node; the default) or '
                                               'Balanced. Ignored when replicas is set.',
        'spec.disruption.budgets': 'Limits on how many nodes may be disrupted at once (at most '
                                   '50); when several apply, the smallest wins. Default: one '
                                   'budget of 10%.',
        'spec.disruption.budgets[*]': 'One budget: a node count or percentage, optionally only for '
                                      'some reasons and only during a schedule window.',
        'spec.disruption.budgets[*].nodes': 'How many of the pool\'s nodes may be disrupting at the '
                                            'same time: a count (e.g. 5) or a percentage of the '
                                            'pool\'s nodes (e.g. 20%). Default 10%.',
        'spec.disruption.budgets[*].schedule': 'Cron schedule (five fields, or a macro such as '
                                               '@daily; UTC) at which the budget becomes active; '
                                               'needs duration. Unset: always active.',
        'spec.disruption.budgets[*].duration': 'How long the budget stays active after each '
                                               'schedule hit, in hours and minutes (e.g. 1h30m); '
                                               'needs schedule.',
        'spec.disruption.budgets[*].reasons': 'The disruption reasons the budget limits '
                                              '(Underutilized, Empty, Drifted). Unset: all of them.',
        'spec.limits': 'Upper bounds on the total resources of the pool\'s nodes (e.g. cpu: 1000, '
                       'memory: 1000Gi, nodes: 10); no launch may exceed them. With replicas, '
                       'only nodes may be set.',
        'spec.weight': 'Priority of this pool against others (1-100); higher weights are tried '
                       'first. Unset counts as 0. Not allowed with replicas.',
        'spec.replicas': 'Alpha: a static pool keeping exactly this many nodes, whatever the '
                         'pending pods. Cannot be added or removed after creation; excludes '
                         'weight and limits other than nodes.',
        'status.nodes': 'How many nodes the pool has.',
        'status.resources': 'Total capacity of the pool\'s nodes, by resource name.',
        'status.nodeClassObservedGeneration': 'Generation of the referenced node class last '
                                              'seen by the controller.',
    },
    'nodeclaims': {
        'spec.resources': 'Resources the node must offer.',
        'spec.resources.requests': 'Minimum resources (cpu, memory, pods, ...) the instance must '
                                   'provide for the pods it was launched for.',
        'spec.expireAfter': 'How long the node may live after creation before it is replaced; '
                            'Never disables expiry. Default 720h.',
        'spec.terminationGracePeriod': 'Once the node is being deleted, the longest draining may '
                                       'take before pods are deleted regardless of '
                                       'PodDisruptionBudgets. Unset: no limit.',
        'status.providerID': 'Cloud provider ID of the instance, e.g. aws:///us-east-1a/i-0123.',
        'status.imageID': 'AMI the instance was launched from.',
        'status.nodeName': 'Name of the Node object the instance registered as.',
        'status.capacity': 'Resources of the instance.',
        'status.allocatable': 'Resources of the instance available to pods (capacity minus '
                              'reserved and eviction thresholds).',
        'status.lastPodEventTime': 'When a pod was last bound to or removed from the node '
                                   '(consolidateAfter counts from here).',
    },
    'ec2nodeclasses': {
        'spec.amiFamily': 'Operating-system family, choosing the userData format and default '
                          'volumes: AL2, AL2023, Bottlerocket, Custom or Windows2019/2022/2025. '
                          'Required unless an alias term gives it; with an alias, only its own '
                          'family or Custom.',
        'spec.amiSelectorTerms': 'How to find the AMI (1 to 30 terms, any of which may match). An '
                                 'alias term stands alone.',
        'spec.amiSelectorTerms[*]': 'One AMI selector; the fields set in one term must all match.',
        'spec.amiSelectorTerms[*].alias': 'An EKS-optimized AMI as family@version, e.g. '
                                          'al2023@latest or bottlerocket@v1.20.0 (families al2, '
                                          'al2023, bottlerocket, windows2019, windows2022, '
                                          'windows2025; Windows takes only latest).',
        'spec.amiSelectorTerms[*].id': 'AMI ID, e.g. ami-0123456789abcdef0.',
        'spec.amiSelectorTerms[*].name': 'AMI name (the image\'s name, not its Name tag); '
                                         'wildcards allowed.',
        'spec.amiSelectorTerms[*].owner': 'AMI owner: an account ID, self, amazon or '
                                          'aws-marketplace.',
        'spec.amiSelectorTerms[*].ssmParameter': 'SSM parameter (name or ARN) whose value is the '
                                                 'AMI ID.',
        'spec.amiSelectorTerms[*].tags': 'Tags the AMI must carry; "*" as a value matches any '
                                         'value of that key.',
        'spec.subnetSelectorTerms': 'Which subnets instances may be launched in (terms are ORed); '
                                    'the subnets found decide the zones.',
        'spec.subnetSelectorTerms[*]': 'One subnet selector: an ID or tags.',
        'spec.subnetSelectorTerms[*].id': 'Subnet ID, e.g. subnet-0123abcd.',
        'spec.subnetSelectorTerms[*].tags': 'Tags the subnet must carry; "*" matches any value.',
        'spec.securityGroupSelectorTerms': 'Which security groups the instances get (terms are '
                                           'ORed).',
        'spec.securityGroupSelectorTerms[*]': 'One security-group selector: an ID, a name or tags.',
        'spec.securityGroupSelectorTerms[*].id': 'Security group ID, e.g. sg-0123abcd.',
        'spec.securityGroupSelectorTerms[*].name': 'Security group name (group-name).',
        'spec.securityGroupSelectorTerms[*].tags': 'Tags the security group must carry; "*" '
                                                   'matches any value.',
        'spec.capacityReservationSelectorTerms': 'Which EC2 capacity reservations launches may '
                                                 'use (terms are ORed).',
        'spec.capacityReservationSelectorTerms[*].id': 'Capacity reservation ID, e.g. cr-0123abcd.',
        'spec.capacityReservationSelectorTerms[*].ownerID': 'AWS account ID (12 digits) owning '
                                                            'the reservation.',
        'spec.capacityReservationSelectorTerms[*].instanceMatchCriteria': 'Match reservations '
                                                                          'open to any instance '
                                                                          '(open) or only '
                                                                          'targeted ones.',
        'spec.capacityReservationSelectorTerms[*].tags': 'Tags the reservation must carry; "*" '
                                                         'matches any value.',
        'spec.placementGroupSelector': 'Placement group to launch into, by name or by ID (one '
                                       'of them).',
        'spec.placementGroupSelector.name': 'Placement group name.',
        'spec.placementGroupSelector.id': 'Placement group ID, e.g. pg-0123abcd.',
        'spec.role': 'IAM role for the nodes; an instance profile is made for it. Exactly one '
                     'of role and instanceProfile.',
        'spec.instanceProfile': 'Existing IAM instance profile for the nodes (its role must be '
                                'passable by the controller). Exactly one of role and '
                                'instanceProfile.',
        'spec.userData': 'Extra userData, merged with the bootstrap the AMI family needs (used '
                         'as is for Custom).',
        'spec.tags': 'Tags put on the instances, volumes and launch templates. Keys the '
                     'controller uses itself (karpenter.sh/nodepool, karpenter.sh/nodeclaim, '
                     'karpenter.k8s.aws/ec2nodeclass, eks:eks-cluster-name, '
                     'kubernetes.io/cluster/*) are refused.',
        'spec.kubelet': 'kubelet settings for the nodes (a subset of KubeletConfiguration).',
        'spec.kubelet.clusterDNS': 'DNS server IPs the kubelet gives pods.',
        'spec.kubelet.maxPods': 'Most pods the kubelet runs.',
        'spec.kubelet.podsPerCore': 'Most pods per CPU core (the smaller of this and maxPods '
                                    'applies).',
        'spec.kubelet.systemReserved': 'Resources held back for the OS (keys cpu, memory, '
                                       'ephemeral-storage, pid).',
        'spec.kubelet.kubeReserved': 'Resources held back for Kubernetes daemons (keys cpu, '
                                     'memory, ephemeral-storage, pid).',
        'spec.kubelet.evictionHard': 'Hard eviction thresholds by signal (e.g. memory.available: '
                                     '500Mi or 5%).',
        'spec.kubelet.evictionSoft': 'Soft eviction thresholds by signal; each needs a grace '
                                     'period in evictionSoftGracePeriod.',
        'spec.kubelet.evictionSoftGracePeriod': 'How long each soft threshold must be crossed '
                                                'before eviction (e.g. 1m30s); same keys as '
                                                'evictionSoft.',
        'spec.kubelet.evictionMaxPodGracePeriod': 'Longest pod grace period (seconds) granted '
                                                  'when evicting for a soft threshold.',
        'spec.kubelet.imageGCHighThresholdPercent': 'Disk usage (percent) that starts image '
                                                    'garbage collection; above the low threshold.',
        'spec.kubelet.imageGCLowThresholdPercent': 'Disk usage (percent) image garbage '
                                                   'collection frees down to.',
        'spec.kubelet.cpuCFSQuota': 'Enforce CPU limits with CFS quota.',
        'spec.blockDeviceMappings': 'EBS volumes attached at launch (at most 50; at most one '
                                    'rootVolume). Unset: the AMI family\'s defaults.',
        'spec.blockDeviceMappings[*].deviceName': 'Device name, e.g. /dev/xvda.',
        'spec.blockDeviceMappings[*].rootVolume': 'This volume holds the kubelet\'s root '
                                                  'directory.',
        'spec.blockDeviceMappings[*].ebs': 'The EBS volume; needs volumeSize or snapshotID.',
        'spec.blockDeviceMappings[*].ebs.volumeSize': 'Size with unit Gi, G, Ti or T, e.g. 100Gi.',
        'spec.blockDeviceMappings[*].ebs.volumeType': 'EBS volume type: standard, io1, io2, gp2, '
                                                      'sc1, st1 or gp3.',
        'spec.blockDeviceMappings[*].ebs.iops': 'Provisioned IOPS (gp3, io1, io2 only).',
        'spec.blockDeviceMappings[*].ebs.throughput': 'Provisioned throughput in MiB/s (gp3 '
                                                      'only, 125-1000).',
        'spec.blockDeviceMappings[*].ebs.encrypted': 'Encrypt the volume.',
        'spec.blockDeviceMappings[*].ebs.kmsKeyID': 'KMS key (ID, alias or ARN) for encryption.',
        'spec.blockDeviceMappings[*].ebs.snapshotID': 'Snapshot to create the volume from.',
        'spec.blockDeviceMappings[*].ebs.deleteOnTermination': 'Delete the volume when the '
                                                               'instance terminates.',
        'spec.blockDeviceMappings[*].ebs.volumeInitializationRate': 'Rate (MiB/s, 100-300) at '
                                                                    'which the snapshot is loaded '
                                                                    'into the volume; needs '
                                                                    'snapshotID.',
        'spec.instanceStorePolicy': 'What to do with local instance-store disks: RAID0 makes '
                                    'one array of them for the kubelet and containers.',
        'spec.networkInterfaces': 'Network interfaces per network card (e.g. for EFA); must '
                                  'include the primary interface (card 0, device 0).',
        'spec.networkInterfaces[*]': 'One network interface.',
        'spec.networkInterfaces[*].networkCardIndex': 'Network card the interface is on.',
        'spec.networkInterfaces[*].deviceIndex': 'Device index of the interface on its card.',
        'spec.networkInterfaces[*].interfaceType': 'interface (ENA, with IP) or efa-only.',
        'spec.detailedMonitoring': 'Turn on EC2 detailed (1-minute) monitoring.',
        'spec.associatePublicIPAddress': 'Give instances a public IPv4 address (overrides the '
                                         'subnet\'s setting).',
        'spec.ipPrefixCount': 'IPv4 prefixes (/28) to assign to the primary interface.',
        'spec.metadataOptions': 'Instance metadata service (IMDS) settings. Default: endpoint '
                                'enabled, IMDSv2 required, hop limit 1, IPv6 endpoint off.',
        'spec.metadataOptions.httpEndpoint': 'IMDS on or off: enabled or disabled.',
        'spec.metadataOptions.httpProtocolIPv6': 'IMDS over IPv6: enabled or disabled.',
        'spec.metadataOptions.httpPutResponseHopLimit': 'Hop limit of IMDS responses (1-64); 1 '
                                                        'keeps them from pods on the pod network.',
        'spec.metadataOptions.httpTokens': 'required (IMDSv2 only) or optional (IMDSv1 allowed).',
        'spec.connectionTracking': 'Idle connection-tracking timeouts for the instances\' '
                                   'interfaces; set at least one.',
        'spec.connectionTracking.tcpEstablishedTimeout': 'Idle timeout (seconds, 60-432000) of '
                                                         'established TCP connections.',
        'spec.connectionTracking.udpStreamTimeout': 'Idle timeout (seconds, 60-180) of UDP '
                                                    'flows seen in both directions.',
        'spec.connectionTracking.udpTimeout': 'Idle timeout (seconds, 30-60) of other UDP flows.',
        'spec.context': 'Reserved EC2 Fleet context value.',
        'spec.cpuOptions': 'CPU options of the instances.',
        'spec.cpuOptions.nestedVirtualization': 'enabled limits launches to instance types that '
                                                'support nested virtualization; or disabled.',
        'status.subnets': 'Subnets the selector terms found.',
        'status.subnets[*]': 'One subnet.',
        'status.subnets[*].id': 'Subnet ID.',
        'status.subnets[*].zone': 'Availability zone name.',
        'status.subnets[*].zoneID': 'Availability zone ID.',
        'status.securityGroups': 'Security groups the selector terms found.',
        'status.securityGroups[*]': 'One security group.',
        'status.securityGroups[*].id': 'Security group ID.',
        'status.securityGroups[*].name': 'Security group name.',
        'status.amis': 'AMIs the selector terms found, with the node requirements each suits.',
        'status.amis[*]': 'One AMI.',
        'status.amis[*].id': 'AMI ID.',
        'status.amis[*].name': 'AMI name.',
        'status.amis[*].deprecated': 'The AMI is deprecated.',
        'status.amis[*].requirements': 'Node requirements (architecture, GPU, ...) the AMI is '
                                       'used for.',
        'status.amis[*].requirements[*]': 'One requirement.',
        'status.amis[*].requirements[*].key': 'Node label.',
        'status.amis[*].requirements[*].operator': 'Operator (In, NotIn, Exists, ...).',
        'status.amis[*].requirements[*].values': 'Values.',
        'status.capacityReservations': 'Capacity reservations the selector terms found.',
        'status.capacityReservations[*].id': 'Reservation ID.',
        'status.capacityReservations[*].availabilityZone': 'Zone of the reservation.',
        'status.capacityReservations[*].instanceType': 'Instance type reserved.',
        'status.capacityReservations[*].instanceMatchCriteria': 'open or targeted.',
        'status.capacityReservations[*].ownerID': 'Account owning the reservation.',
        'status.capacityReservations[*].reservationType': 'default or capacity-block.',
        'status.capacityReservations[*].interruptible': 'The reservation may be reclaimed.',
        'status.capacityReservations[*].state': 'active or expiring.',
        'status.capacityReservations[*].endTime': 'When the reservation ends (capacity blocks).',
        'status.instanceProfile': 'Instance profile used for launches (made for role, or the '
                                  'one given).',
    },
}


def describe(schema, descs, crdname):
    for path, text in descs.items():
        node = schema
        for part in re.findall(r'[^.\[]+|\[\*\]', path):
            node = node['items'] if part == '[*]' else node.get('properties', {}).get(part)
            if node is None:
                raise SystemExit('gen_crds: %s: description for %r: no such field' % (crdname, path))
        if 'description' in node:
            raise SystemExit('gen_crds: %s: %r is described twice' % (crdname, path))
        node['description'] = text
    return schema


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
            describe(nodepool_schema(), DESCRIPTIONS['nodepools'], 'nodepools'), [
                {'name': 'NodeClass', 'type': 'string', 'jsonPath': '.spec.template.spec.nodeClassRef.name'},
                {'name': 'Nodes', 'type': 'string', 'jsonPath': '.status.nodes'},
                ready_col(),
                {'name': 'Age', 'type': 'date', 'jsonPath': '.metadata.creationTimestamp'},
                {'name': 'Weight', 'type': 'integer', 'jsonPath': '.spec.weight', 'priority': 1},
                {'name': 'CPU', 'type': 'string', 'jsonPath': '.status.resources.cpu', 'priority': 1},
                {'name': 'Memory', 'type': 'string', 'jsonPath': '.status.resources.memory', 'priority': 1},
            ], scale=True),
        'karpenter.sh_nodeclaims.yaml': crd('karpenter.sh', 'nodeclaims', 'nodeclaim', 'NodeClaim', None,
            describe(nodeclaim_schema(), DESCRIPTIONS['nodeclaims'], 'nodeclaims'), [
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
                {'name': 'Drifted', 'type': 'string', 'jsonPath': '.status.conditions[?(@.type=="Drifted")].status', 'priority': 1},
            ]),
        'karpenter.k8s.aws_ec2nodeclasses.yaml': crd('karpenter.k8s.aws', 'ec2nodeclasses', 'ec2nodeclass',
            'EC2NodeClass', ['ec2nc', 'ec2ncs'], describe(ec2nodeclass_schema(), DESCRIPTIONS['ec2nodeclasses'], 'ec2nodeclasses'), [
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
    head = ('# %s - generated by tools/gen_crds.py: Karpenter v1.14.1\'s validation (schema and\n'
            '# CEL rules; checked by tests/oracle/parity.py), descriptions of our own.\n'
            '# Do not edit by hand: edit tools/gen_crds.py and re-run it.\n' % name)
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
