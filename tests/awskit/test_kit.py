"""The AWS setup kit, offline (docs/aws-setup.md "How the kit is checked"):

- the CloudFormation template lints (tests/awskit/cfn.py) and renders under every
  combination of its options;
- every policy document it would create is well-formed, every action names an operation
  of AWS's API models (aws-sdk, tests/awskit/versions) and every condition key a real one
  (tests/awskit/iam.py), the controller policy stays within IAM's size quota even with the
  longest names the parameters allow;
- the plain JSON files are the same documents as the template's;
- the EventBridge rules are exactly the events nodewarden handles (scaler/aws/), the tag
  keys the policy scopes by are ones nodewarden sets, the outputs name chart values that
  exist (manifests/chart/nodewarden/values.yaml);
- and each of those checks fails when it should (the SelfTest classes).

Run: python3 -m unittest tests.awskit.test_kit (the make test job `awskit`).
"""
import copy
import fnmatch
import glob
import json
import os
import re
import shlex
import unittest

import yaml

from . import cfn, iam, kit

ACCOUNT = '123456789012'
# option combinations the template is rendered with: every condition true and false
COMBOS = [
    {'ClusterName': 'demo'},
    {'ClusterName': 'k8s.example.com', 'OIDCIssuerURL': 'https://oidc.example.com/k8s',
     'OIDCThumbprint': '9e99a48a9960b14926bb7f3b02e22da2b0ab7280'},
    {'ClusterName': 'prod', 'OIDCIssuerURL': 'https://bucket.s3.eu-west-1.amazonaws.com/prod',
     'CreateOIDCProvider': 'false', 'ExistingNodeRoleName': 'nodes.prod.k8s.local',
     'AttachPolicyToRoles': 'masters.prod.k8s.local,other', 'InterruptionQueueName': 'prod-q',
     'NodeECRPullAccess': 'false', 'NodeSSMAccess': 'false', 'NodeVPCCNIAccess': 'true',
     'ServiceAccountNamespace': 'karpenter', 'ServiceAccountName': 'nw',
     'OIDCAudience': 'sts.amazonaws.com'},
]
# the longest names the parameters allow, in the longest partition and region names
LONGEST = dict(params={'ClusterName': 'c' * 41, 'InterruptionQueueName': 'q' * 80,
                       'ExistingNodeRoleName': 'r' * 64},
               region='ap-southeast-7', partition='aws-us-gov')


def stacks():
    t = kit.template()
    return [cfn.Stack(t, p) for p in COMBOS]


class Template(unittest.TestCase):
    def test_lint(self):
        self.assertEqual(cfn.lint(kit.template()), [])

    def test_renders_every_option(self):
        seen = {}
        for s in stacks():
            for n, v in s.conditions.items():
                seen.setdefault(n, set()).add(v)
        self.assertEqual({n for n, v in seen.items() if v != {True, False}}, set(),
                         'conditions not tried both ways by COMBOS')

    def test_policies(self):
        models = iam.Models(kit.models_dir())
        for p in COMBOS:
            s = cfn.Stack(kit.template(), p)
            for where, kind, doc in s.policies():
                self.assertEqual(iam.check_policy(doc, kind, models, where), [], p)
            for n, props in s.by_type('AWS::IAM::Role').items():
                self.assertEqual(iam.managed_policy_problems(
                    [a for a in props.get('ManagedPolicyArns', []) if ':iam::aws:' in a], n), [])

    def test_node_role_options(self):
        s = cfn.Stack(kit.template(), COMBOS[0])
        self.assertEqual(s.resources['NodeRole']['Properties']['ManagedPolicyArns'], [
            'arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryPullOnly',
            'arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore'])
        self.assertEqual(s.resources['NodeInstanceProfile']['Properties']['Roles'],
                         ['nodewarden-node-demo'])
        s = cfn.Stack(kit.template(), COMBOS[2])
        self.assertNotIn('NodeRole', s.resources)
        self.assertEqual(s.outputs['NodeRoleName'], 'nodes.prod.k8s.local')
        doc = s.resources['ControllerPolicy']['Properties']['PolicyDocument']
        passrole = [st for st in doc['Statement'] if st['Action'] == 'iam:PassRole']
        self.assertEqual([st['Resource'] for st in passrole],
                         ['arn:aws:iam::%s:role/nodes.prod.k8s.local' % ACCOUNT])
        self.assertEqual(s.resources['ControllerPolicy']['Properties']['Roles'],
                         ['masters.prod.k8s.local', 'other'])

    def test_controller_policy_size(self):
        t = kit.template()
        s = cfn.Stack(t, LONGEST['params'], region=LONGEST['region'],
                      partition=LONGEST['partition'])
        doc = s.resources['ControllerPolicy']['Properties']['PolicyDocument']
        size = len(re.sub(r'\s', '', json.dumps(doc)))
        self.assertLessEqual(size, kit.MANAGED_POLICY_MAX,
                             'the controller policy for the longest names is %d characters' % size)

    def test_names_within_limits(self):
        s = cfn.Stack(kit.template(), dict(LONGEST['params'], ExistingNodeRoleName='',
                                           OIDCIssuerURL='https://o.example.com'))
        for n, r in s.resources.items():
            props = r['Properties']
            for key, limit in (('RoleName', 64), ('InstanceProfileName', 128),
                               ('ManagedPolicyName', 128), ('Name', 64), ('QueueName', 80)):
                if key in props:
                    self.assertLessEqual(len(props[key]), limit, '%s.%s' % (n, key))

    def test_interruption_rules_are_nodewarden_events(self):
        # the (source, detail-type) pairs nodewarden maps to an interruption kind
        handled = set()
        for p in glob.glob(os.path.join(kit.ROOT, 'scaler', 'aws', '*.c')):
            with open(p) as f:
                handled |= set(re.findall(r'\{\s*"(aws\.[a-z0-9]+)",\s*"([^"]+)",\s*NW_', f.read()))
        self.assertTrue(handled, 'no table of EventBridge events found in scaler/aws/*.c')
        s = cfn.Stack(kit.template(), COMBOS[0])
        rules = set()
        for props in s.by_type('AWS::Events::Rule').values():
            pat = props['EventPattern']
            self.assertEqual(set(pat), {'source', 'detail-type'})
            rules |= {(src, dt) for src in pat['source'] for dt in pat['detail-type']}
            self.assertEqual([x['Arn'] for x in props['Targets']],
                             [s.attr('InterruptionQueue', 'Arn')])
        self.assertEqual(rules, handled)

    def test_scoping_tags_are_nodewarden_tags(self):
        # every tag key a condition asks for is one nodewarden's C code sets (a literal there;
        # the cluster's name is the %s of kubernetes.io/cluster/%s)
        src = ''
        for p in glob.glob(os.path.join(kit.ROOT, 'scaler', '**', '*.c'), recursive=True):
            with open(p) as f:
                src += f.read()
        doc = kit.controller_policy('CLUSTER', 'REGION', ACCOUNT, 'node', 'q')
        keys = set()
        for st in doc['Statement']:
            for block in (st.get('Condition') or {}).values():
                for k in block:
                    m = re.match(r'aws:(?:Request|Resource)Tag/(.+)', k)
                    if m:
                        keys.add(m.group(1).replace('CLUSTER', '%s'))
        self.assertTrue(keys)
        for k in sorted(keys):
            self.assertIn('"%s"' % k, src, 'the policy scopes by tag %s, which nodewarden never sets' % k)

    def test_outputs_are_chart_values(self):
        with open(os.path.join(kit.ROOT, 'manifests', 'chart', 'nodewarden', 'values.yaml')) as f:
            values = yaml.safe_load(f)
        with open(os.path.join(kit.ROOT, 'manifests', 'chart', 'nodewarden', 'values.schema.json')) as f:
            schema = json.load(f)

        def check_path(path, value=None):
            v, sch = values, schema
            for part in path.split('.'):
                self.assertIn(part, v, 'no chart value %s' % path)
                v, sch = v[part], (sch.get('properties') or {}).get(part, {})
            if value is not None and 'enum' in sch:
                self.assertIn(value, sch['enum'], path)
        t = kit.template()
        helm = [(n, o['Description'][len('helm value '):]) for n, o in t['Outputs'].items()
                if o.get('Description', '').startswith('helm value ')]
        self.assertGreaterEqual(len(helm), 4)
        for p in COMBOS:
            s = cfn.Stack(t, p)
            for n, path in helm:
                if n in s.outputs:
                    check_path(path, s.outputs[n])
            args = shlex.split(s.outputs['HelmSetArgs'])
            self.assertEqual(args[0::2], ['--set'] * (len(args) // 2))
            sets = dict(a.split('=', 1) for a in args[1::2])
            for path, v in sets.items():
                check_path(path, v)
            self.assertEqual(sets, {path: s.outputs[n] for n, path in helm if n in s.outputs})


ACTION_TOKEN = re.compile(r'\b((?:ec2|iam|sqs|ssm|pricing):[A-Za-z*]+)')


def doc_actions(text):
    return set(ACTION_TOKEN.findall(text))


class Prose(unittest.TestCase):
    """The documentation and the kit agree on what nodewarden may do."""

    def kit_actions(self):
        doc = kit.controller_policy('c', 'us-west-2', ACCOUNT, 'n', 'q')
        return {a for st in doc['Statement'] for a in iam.as_list(st['Action'])}

    def test_docs_name_only_allowed_actions(self):
        allowed = self.kit_actions()
        files = sorted(glob.glob(os.path.join(kit.ROOT, 'docs', '**', '*.md'), recursive=True))
        files += [os.path.join(kit.ROOT, 'README.md'),
                  os.path.join(kit.ROOT, 'manifests', 'chart', 'nodewarden', 'values.yaml')]
        for path in files:
            with open(path) as f:
                for a in doc_actions(f.read()):
                    if iam.key_known(a):
                        continue  # a condition key (ec2:CreateAction, iam:PassedToService)
                    self.assertTrue(any(fnmatch.fnmatchcase(k, a) for k in allowed),
                                    '%s names %s, which the kit does not allow'
                                    % (os.path.relpath(path, kit.ROOT), a))

    def test_setup_doc_names_every_action(self):
        with open(os.path.join(kit.ROOT, 'docs', 'aws-setup.md')) as f:
            named = doc_actions(f.read())
        self.assertEqual(self.kit_actions() - named, set())

    def test_doc_actions(self):
        self.assertEqual(doc_actions('`ec2:Describe*` and iam:PassRole, not eks:DescribeCluster'),
                         {'ec2:Describe*', 'iam:PassRole'})


class PlainJSON(unittest.TestCase):
    def test_placeholders(self):
        for name in list(kit.POLICY_FILES) + ['events/' + e + '.json' for e in kit.event_files()]:
            used = set(re.findall(r'\$\{([^}]*)\}', kit.read(name)))
            self.assertEqual(used - kit.PLACEHOLDERS, set(), name)

    def test_same_as_template(self):
        models = iam.Models(kit.models_dir())
        t = kit.template()
        compared = set()
        for p in COMBOS:
            s = cfn.Stack(t, p)
            vals = kit.values_for(s, p['ClusterName'])
            for name, (kind, res, prop) in kit.POLICY_FILES.items():
                if res not in s.resources or (name == 'controller-trust-policy.json' and
                                              p.get('ServiceAccountName', 'nodewarden') != 'nodewarden'):
                    continue  # not in this stack; the plain trust policy has the chart's names
                compared.add(name)
                doc = kit.plain(name, vals)
                self.assertEqual(iam.check_policy(doc, kind, models, name), [])
                self.assertEqual(doc, s.resources[res]['Properties'][prop], '%s for %s' % (name, p))
            rules = {props['Name']: props['EventPattern']
                     for props in s.by_type('AWS::Events::Rule').values()}
            files = kit.event_files()
            self.assertEqual(set(rules), {'nodewarden-%s-%s' % (p['ClusterName'], e) for e in files})
            for e, path in files.items():
                with open(path) as f:
                    self.assertEqual(json.load(f), rules['nodewarden-%s-%s' % (p['ClusterName'], e)])
        self.assertEqual(compared, set(kit.POLICY_FILES))

    def test_controller_policy_plain_size(self):
        vals = {'AWS_PARTITION': LONGEST['partition'], 'AWS_REGION': LONGEST['region'],
                'AWS_ACCOUNT_ID': ACCOUNT, 'CLUSTER_NAME': LONGEST['params']['ClusterName'],
                'NODE_ROLE_NAME': 'r' * 64, 'QUEUE_NAME': 'q' * 80, 'OIDC_PROVIDER': 'x'}
        size = len(re.sub(r'\s', '', iam.render(kit.read('controller-policy.json'), vals)))
        self.assertLessEqual(size, kit.MANAGED_POLICY_MAX)


# ---------------------------------------------------------------------------
# the checks above can fail

class SelfTestLint(unittest.TestCase):
    def broken(self, change, want):
        t = copy.deepcopy(kit.template())
        change(t)
        got = cfn.lint(t)
        self.assertTrue(any(want in p for p in got), 'lint missed %r: %s' % (want, got))

    def test_lint_fails(self):
        R = 'Resources'
        self.broken(lambda t: t[R]['NodeInstanceProfile']['Properties'].update(
            Roles=[cfn.Fn(Ref='NoSuchRole')]), 'Ref NoSuchRole names no')
        self.broken(lambda t: t[R]['HealthEventRule']['Properties']['Targets'][0].update(
            Arn=cfn.Fn({'Fn::GetAtt': ['InterruptionQueue', 'Url']})), 'has no attribute Url')
        self.broken(lambda t: t[R]['NodeRole']['Properties'].update(
            RoleName=cfn.Fn({'Fn::Sub': 'x-${Clustername}'})), '${Clustername} names no')
        self.broken(lambda t: t[R]['NodeRole'].update(Condition='Nope'), 'condition Nope is not')
        self.broken(lambda t: t['Conditions'].update(Spare=cfn.Fn(
            {'Fn::Equals': [cfn.Fn(Ref='ClusterName'), 'x']})), 'Conditions.Spare is never used')
        self.broken(lambda t: t['Parameters'].update(Spare={'Type': 'String', 'Default': ''}),
                    'Parameters.Spare is never used')
        self.broken(lambda t: t['Outputs'].update(Bad={'Value': cfn.Fn(Ref='Gone')}),
                    'Ref Gone names no')
        self.broken(lambda t: t[R]['NodeRole'].update(Type='AWS::IAM::Rol'), 'is not one the kit knows')
        self.broken(lambda t: t[R]['NodeRole']['Properties'].update(Rolename='x'), 'has no property Rolename')
        self.broken(lambda t: t[R]['InterruptionQueuePolicy']['Properties'].pop('Queues'),
                    'needs the property Queues')
        self.broken(lambda t: t.update(AWSTemplateFormatVersion=__import__('datetime').date(2010, 9, 9)),
                    'must be the string')
        self.broken(lambda t: t['Parameters']['NodeSSMAccess'].update(Default=True), 'quote it')
        self.broken(lambda t: t[R]['NodeRole']['Properties'].update(
            Path=cfn.Fn({'Fn::FindInMap': ['a', 'b', 'c']})), 'unknown function Fn::FindInMap')

    def test_yaml_tags(self):
        t = yaml.load('a: !GetAtt Q.Arn\nb: !Sub "x-${A}"\nc: !If [C, 1, !Ref AWS::NoValue]\n',
                      Loader=cfn.Loader)
        self.assertEqual(t, {'a': {'Fn::GetAtt': ['Q', 'Arn']}, 'b': {'Fn::Sub': 'x-${A}'},
                             'c': {'Fn::If': ['C', 1, {'Ref': 'AWS::NoValue'}]}})


class SelfTestPolicies(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.models = iam.Models(kit.models_dir())
        cls.good = kit.controller_policy('demo', 'us-west-2', ACCOUNT, 'node', 'q')

    def broken(self, change, want, kind='identity'):
        doc = copy.deepcopy(self.good)
        change(doc)
        got = iam.check_policy(doc, kind, self.models)
        self.assertTrue(any(want in p for p in got), 'check_policy missed %r: %s' % (want, got))

    def test_models(self):
        m = self.models
        self.assertEqual(m.actions_matching('ec2:CreateFleet'), {'ec2:CreateFleet'})
        self.assertFalse(m.actions_matching('ec2:CreateFleets'))
        self.assertGreater(len(m.actions_matching('ec2:Describe*')), 100)
        self.assertEqual(m.actions_matching('iam:PassRole'), {'iam:PassRole'})
        self.assertEqual(m.actions_matching('pricing:GetProducts'), {'pricing:GetProducts'})
        self.assertIn('sqs:ReceiveMessage', m.actions_matching('sqs:*'))

    def test_check_policy_fails(self):
        S = 'Statement'
        self.assertEqual(iam.check_policy(self.good, 'identity', self.models), [])
        self.broken(lambda d: d[S][0]['Action'].append('ec2:LaunchInstances'),
                    'ec2:LaunchInstances names no operation')
        self.broken(lambda d: d[S][0]['Action'].append('eks:DescribeCluster'),
                    'a service the kit knows')
        self.broken(lambda d: d[S][1]['Condition']['StringLike'].update({'aws:ResourceTags/x': '*'}),
                    'aws:ResourceTags/x is not a known condition key')
        self.broken(lambda d: d[S][1]['Condition'].update(StringEqualz={'aws:TagKeys': 'x'}),
                    'unknown condition operator StringEqualz')
        self.broken(lambda d: d[S][0].update(Effect='allow'), 'Effect must be Allow or Deny')
        self.broken(lambda d: d[S][0].update(Principal='*'), 'an identity policy has no Principal')
        self.broken(lambda d: d[S][0].pop('Resource'), 'needs a Resource')
        self.broken(lambda d: d[S][0].update(Resource='ec2:instance/*'), 'neither * nor an ARN')
        self.broken(lambda d: d[S][1].update(Sid=d[S][0]['Sid']), 'used twice')
        self.broken(lambda d: d[S][3]['Condition']['StringEquals'].update(
            {'ec2:CreateAction': ['CreateFleet', 'LaunchFleet']}), 'LaunchFleet names no EC2 operation')
        self.broken(lambda d: d.update(Version='2008-10-17'), 'Version must be')
        self.broken(lambda d: d[S][0].update(Condition={'Bool': {'aws:SecureTransport': True}}),
                    'must be a string')
        trust = json.loads(iam.render(kit.read('controller-trust-policy.json'), {
            'AWS_PARTITION': 'aws', 'AWS_ACCOUNT_ID': ACCOUNT, 'OIDC_PROVIDER': 'o.example.com/x'}))
        self.assertEqual(iam.check_policy(trust, 'trust', self.models), [])
        bad = copy.deepcopy(trust)
        bad[S][0]['Condition']['StringEquals'] = {'other.example.com:sub': 'x'}
        self.assertTrue(any('not a known condition key' in p
                            for p in iam.check_policy(bad, 'trust', self.models)))
        bad = copy.deepcopy(trust)
        bad[S][0]['Resource'] = '*'
        self.assertTrue(any('a trust policy has no Resource' in p
                            for p in iam.check_policy(bad, 'trust', self.models)))
        self.assertTrue(iam.managed_policy_problems(['arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy'], 'x'))

    def test_decide(self):
        doc = self.good
        tags = {'kubernetes.io/cluster/demo': 'owned', 'karpenter.sh/nodepool': 'default',
                'eks:eks-cluster-name': 'demo'}
        inst = 'arn:aws:ec2:us-west-2:%s:instance/*' % ACCOUNT

        def d(action, resource, ctx):
            return iam.decide(doc, iam.Request(action, resource, ctx))[0]
        ctx = dict(iam.tag_context(tags), **{'aws:RequestedRegion': 'us-west-2'})
        self.assertEqual(d('ec2:CreateFleet', inst, ctx), 'Allow')
        for drop in tags:
            less = {k: v for k, v in tags.items() if k != drop}
            self.assertEqual(d('ec2:CreateFleet', inst, iam.tag_context(less)), 'ImplicitDeny', drop)
        other = dict(tags, **{'eks:eks-cluster-name': 'other'})
        self.assertEqual(d('ec2:CreateFleet', inst, iam.tag_context(other)), 'ImplicitDeny')
        self.assertEqual(d('ec2:CreateTags', inst, dict(ctx, **{'ec2:CreateAction': 'CreateFleet'})), 'Allow')
        self.assertEqual(d('ec2:CreateTags', inst, ctx), 'ImplicitDeny')
        self.assertEqual(d('ec2:CreateTags', inst, dict(ctx, **{'ec2:CreateAction': 'CreateVolume'})),
                         'ImplicitDeny')
        i = 'arn:aws:ec2:us-west-2:%s:instance/i-1' % ACCOUNT
        self.assertEqual(d('ec2:TerminateInstances', i, iam.tag_context(resource=tags)), 'Allow')
        self.assertEqual(d('ec2:TerminateInstances', i, iam.tag_context(resource={'a': 'b'})), 'ImplicitDeny')
        self.assertEqual(d('ec2:DescribeInstances', '*', {'aws:RequestedRegion': 'us-west-2'}), 'Allow')
        self.assertEqual(d('ec2:DescribeInstances', '*', {'aws:RequestedRegion': 'eu-west-1'}), 'ImplicitDeny')
        role = 'arn:aws:iam::%s:role/node' % ACCOUNT
        self.assertEqual(d('iam:PassRole', role, {'iam:PassedToService': 'ec2.amazonaws.com'}), 'Allow')
        self.assertEqual(d('iam:PassRole', role, {'iam:PassedToService': 'lambda.amazonaws.com'}), 'ImplicitDeny')
        self.assertEqual(d('iam:PassRole', role + '2', {'iam:PassedToService': 'ec2.amazonaws.com'}), 'ImplicitDeny')
        self.assertEqual(d('ec2:RunInstances', 'arn:aws:ec2:us-west-2::image/ami-1', {}), 'Allow')
        self.assertEqual(d('ec2:RunInstances', 'arn:aws:ec2:us-east-1::image/ami-1', {}), 'ImplicitDeny')
        q = json.loads(iam.render(kit.read('queue-policy.json'), {
            'AWS_PARTITION': 'aws', 'AWS_REGION': 'us-west-2', 'AWS_ACCOUNT_ID': ACCOUNT,
            'QUEUE_NAME': 'q', 'CLUSTER_NAME': 'demo'}))
        qa = 'arn:aws:sqs:us-west-2:%s:q' % ACCOUNT
        rule = 'arn:aws:events:us-west-2:%s:rule/nodewarden-demo-spot' % ACCOUNT
        self.assertEqual(iam.decide(q, iam.Request('sqs:SendMessage', qa, {
            'aws:SourceArn': rule, 'aws:SecureTransport': 'true'}))[0], 'Allow')
        self.assertEqual(iam.decide(q, iam.Request('sqs:SendMessage', qa, {
            'aws:SourceArn': rule + 'x', 'aws:SecureTransport': 'true'}))[0], 'ImplicitDeny')
        self.assertEqual(iam.decide(q, iam.Request('sqs:SendMessage', qa, {
            'aws:SourceArn': rule, 'aws:SecureTransport': 'false'})), ('Deny', 'DenyHTTP'))

    def test_condition_operators(self):
        h = iam.condition_holds
        self.assertTrue(h('ForAllValues:StringEquals', 'aws:TagKeys', ['a', 'b'], {'aws:tagkeys': ['a']}))
        self.assertFalse(h('ForAllValues:StringEquals', 'aws:TagKeys', ['a'], {'aws:tagkeys': ['a', 'c']}))
        self.assertTrue(h('ForAllValues:StringEquals', 'aws:TagKeys', ['a'], {}))
        self.assertTrue(h('StringEqualsIfExists', 'k', ['v'], {}))
        self.assertFalse(h('StringEquals', 'k', ['v'], {}))
        self.assertTrue(h('StringLike', 'K', ['v*'], {'k': ['vw']}))
        self.assertFalse(h('StringNotEquals', 'k', ['v'], {'k': ['v']}))
        self.assertTrue(h('Null', 'k', ['true'], {}))
        with self.assertRaises(ValueError):
            h('NumericLessThan', 'k', ['1'], {'k': ['0']})

    def test_plain_differs(self):
        # the comparison with the template sees a changed statement
        s = cfn.Stack(kit.template(), COMBOS[1])
        doc = kit.plain('controller-policy.json', kit.values_for(s, COMBOS[1]['ClusterName']))
        self.assertEqual(doc, s.resources['ControllerPolicy']['Properties']['PolicyDocument'])
        doc['Statement'][4]['Action'].append('ec2:DeleteTags')
        self.assertNotEqual(doc, s.resources['ControllerPolicy']['Properties']['PolicyDocument'])
        with self.assertRaises(KeyError):
            iam.render('${NOT_A_PLACEHOLDER}', {})


if __name__ == '__main__':
    unittest.main()
