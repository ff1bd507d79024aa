"""Every AWS call nodewarden makes in the test stories is allowed by the AWS setup kit's
controller policy (docs/aws-setup.md "How the kit is checked").

The stories in STORIES (or those NW_AWSKIT_STORIES names) run side by side against
$NW_BIN (default build/nodewarden), each with NW_SIM_AWS_CALLS pointing the simulator's
call log at a file of its own (tests/sim/aws_calllog.py). Every logged call is turned into what IAM authorizes for it
(tests/awskit/iam.py authorizations: the action on each resource it creates, uses or
changes, with the request tags, the resource tags as they were, ec2:CreateAction,
iam:PassedToService, aws:RequestedRegion) and decided against
manifests/aws/controller-policy.json filled in for the story's account, region, queue,
cluster and node role. A call is covered when, for one cluster the story runs, the policy
allows all of its authorizations. Calls that name something that does not exist are
counted apart: what AWS answers them (NotFound or AccessDenied) is not the policy's alone.

A denial fails the test, unless KNOWN_DENIALS explains it; an entry there that no longer
matches anything fails too, so the list only holds what still happens.

Run: python3 -m unittest tests.awskit.test_coverage (the make test job `awskit`).
"""
import collections
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

from . import iam, kit

NW_BIN = os.environ.get('NW_BIN', os.path.join(kit.ROOT, 'build', 'nodewarden'))

# story -> the clusters it runs nodewarden for (each with its own kit) and the node roles
# its EC2NodeClasses name (the kit lets nodewarden pass these)
STORIES = {
    # launches (on-demand, spot, ICE fallback, placement groups, network interfaces),
    # launch templates, instance profiles for spec.role, listing and termination; one test
    # launches for a second cluster, "other", to show that listing is by cluster
    't_aws_launch': {'clusters': ['e2e', 'other'], 'node_roles': ['nodewarden-node']},
    # `nodewarden serve` on a spot pool: the interruption queue, the instance status
    # checks, pricing, replacement launches and the terminations they lead to
    't_interrupt': {'clusters': ['sim-cluster'], 'node_roles': ['KarpenterNodeRole-sim-cluster']},
    # `nodewarden doctor`: its identity and DryRun permission checks
    't_aws_doctor': {'clusters': ['e2e'], 'node_roles': ['nodewarden-node']},
    # capacity reservations: found by capacityReservationSelectorTerms, launched into
    't_capacity_reservation': {'clusters': ['sim-cluster'],
                               'node_roles': ['KarpenterNodeRole-sim-cluster']},
}

# More stories the check knows, run when NW_AWSKIT_STORIES names them (e.g.
# NW_AWSKIT_STORIES="t_nodeclass_lifecycle t_interrupt"); too slow for make test.
OPTIONAL = {
    # an EC2NodeClass from its first launch to its deletion: its role changed (to a second
    # role, which the kit must then also let nodewarden pass), its launch templates and
    # instance profiles deleted (DeleteLaunchTemplate, RemoveRoleFromInstanceProfile)
    't_nodeclass_lifecycle': {'clusters': ['sim-cluster'],
                              'node_roles': ['KarpenterNodeRole-sim-cluster', 'KarpenterNodeRole']},
}


def selected():
    names = os.environ.get('NW_AWSKIT_STORIES', '').split()
    known = dict(STORIES, **OPTIONAL)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise AssertionError('NW_AWSKIT_STORIES: no configuration for %s (STORIES, OPTIONAL in '
                             'tests/awskit/test_coverage.py)' % unknown)
    return {n: known[n] for n in names} if names else dict(STORIES)


# Calls these stories make that the kit refuses, and why (each must still happen).
KNOWN_DENIALS = [
    ('t_aws_doctor',
     lambda call, req: call['params'].get('DryRun') == 'true',
     'nodewarden doctor dry-runs RunInstances and CreateLaunchTemplate without the tags a '
     'launch carries (cli/cmd_doctor.c permission_checks), so a policy scoped by tags, '
     "Karpenter's or this kit's, refuses them and doctor reports a permission missing that "
     'launches do not need (issue 30: doctor)'),
    ('t_aws_launch',
     lambda call, req: '"kubernetes.io/cluster/-"' in json.dumps([call['params'], call['resources']]),
     'nodewarden aws resolve without --settings.clusterName resolves as the cluster "-" '
     '(cli/cmd_aws.c) and makes an instance profile tagged for it, even for a class that is '
     'not ready, which no kit for a real cluster allows (issue 30: the CLI, class readiness)'),
]

# what the stories must exercise for the check to mean something (DeleteInstanceProfile is
# made only when an EC2NodeClass goes, as t_nodeclass_lifecycle shows; a launch for a role
# that does not exist keeps its instance profile for the next try)
REQUIRED = {('ec2', 'CreateFleet'), ('ec2', 'CreateLaunchTemplate'), ('ec2', 'TerminateInstances'),
            ('ec2', 'DescribeCapacityReservations'),
            ('ec2', 'DescribeInstances'), ('ec2', 'DescribeInstanceStatus'),
            ('iam', 'CreateInstanceProfile'), ('iam', 'AddRoleToInstanceProfile'),
            ('iam', 'ListInstanceProfiles'),
            ('sqs', 'GetQueueUrl'), ('sqs', 'ReceiveMessage'), ('sqs', 'DeleteMessage'),
            ('pricing', 'GetProducts')}


def run_story(name, tmp):
    calls = os.path.join(tmp, name + '.jsonl')
    log = os.path.join(tmp, name + '.log')
    env = dict(os.environ, NW_BIN=NW_BIN, NW_SIM_AWS_CALLS=calls)
    t0 = time.monotonic()
    with open(log, 'w') as out:
        rc = subprocess.run([os.path.join(kit.ROOT, 'tests', 'e2e', name)], cwd=kit.ROOT, env=env,
                            stdout=out, stderr=subprocess.STDOUT, timeout=300).returncode
    return name, rc, log, calls, time.monotonic() - t0


def load(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f]


class Policies:
    """The controller policy for one account, region, queue, cluster and node role."""

    def __init__(self):
        self.cache = {}

    def __call__(self, call, cluster, node_role):
        key = (call['region'], call['account'], call['queue'], cluster, node_role)
        if key not in self.cache:
            self.cache[key] = kit.controller_policy(cluster, call['region'], call['account'],
                                                    node_role, call['queue'])
        return self.cache[key]


def evaluate(story, calls, policies, cfg):
    """-> (denials [(call, [denied requests])], undecidable [(call, why)], used {sid: n})"""
    denials, undecidable, used = [], [], collections.Counter()
    for c in calls:
        try:
            reqs = iam.authorizations(c)
        except iam.Undecidable as e:
            undecidable.append((c, str(e)))
            continue
        best = None
        for cluster, role in [(c_, r_) for c_ in cfg['clusters'] for r_ in cfg['node_roles']]:
            doc = policies(c, cluster, role)
            got = [(r, iam.decide(doc, r)) for r in reqs]
            denied = [r for r, (d, _) in got if d != 'Allow']
            if not denied:
                for r, (_, sid) in got:
                    used[(sid, r.action)] += 1
                best = None
                break
            if best is None or len(denied) < len(best):
                best = denied
        if best:
            denials.append((c, best))
    return denials, undecidable, used


class Coverage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.access(NW_BIN, os.X_OK):
            raise AssertionError('no nodewarden at %s (make, or set NW_BIN)' % NW_BIN)
        cls.stories = selected()
        cls.tmp = tempfile.mkdtemp(prefix='nw-awskit-')
        t0 = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(len(cls.stories)) as ex:
            cls.runs = list(ex.map(lambda s: run_story(s, cls.tmp), cls.stories))
        cls.wall = time.monotonic() - t0
        cls.calls = {name: load(calls) for name, _, _, calls, _ in cls.runs}
        cls.policies = Policies()
        cls.results = {s: evaluate(s, cls.calls[s], cls.policies, cfg) for s, cfg in cls.stories.items()}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_stories_pass(self):
        for name, rc, log, _, dt in self.runs:
            with open(log) as f:
                text = f.read()
            self.assertEqual(rc, 0, '%s failed (%.1f s):\n%s' % (name, dt, text[-4000:]))

    def test_required_calls_seen(self):
        if set(self.stories) != set(STORIES):
            return  # a hand-picked set of stories
        seen = {(c['service'], c['action']) for calls in self.calls.values() for c in calls}
        self.assertEqual(REQUIRED - seen, set(), 'the stories no longer make these calls')

    def test_every_call_allowed(self):
        problems, matched = [], set()
        counts = []
        for story, (denials, undecidable, used) in self.results.items():
            counts.append('%s: %d calls, %d not decidable' % (story, len(self.calls[story]),
                                                            len(undecidable)))
            for c, reqs in denials:
                known = [i for i, (s, match, _) in enumerate(KNOWN_DENIALS)
                         if s == story and all(match(c, r) for r in reqs)]
                if known:
                    matched.update(known)
                    continue
                problems.append('%s: %s:%s (seq %d, answered %s) is refused: %s' % (
                    story, c['service'], c['action'], c['seq'], c['status'],
                    '; '.join(repr(r) + ' ' + json.dumps(r.context, sort_keys=True)[:300]
                              for r in reqs)))
        for i, (story, _, why) in enumerate(KNOWN_DENIALS):
            if i not in matched and story in self.stories:
                problems.append('KNOWN_DENIALS[%d] (%s) no longer happens; remove it: %s'
                                % (i, story, why))
        sys.stderr.write('\nawskit coverage: %s; stories %.1f s\n' % ('; '.join(counts), self.wall))
        self.assertEqual(problems, [], '\n'.join(problems[:20]))

    def test_statements_exercised(self):
        # information: what the policy allows that no call of these stories needed
        used = collections.Counter()
        for _, _, u in self.results.values():
            used.update(u)
        doc = kit.controller_policy('c', 'us-west-2', '123456789012', 'n', 'q')
        idle = ['%s %s' % (s['Sid'], a) for s in doc['Statement'] for a in iam.as_list(s['Action'])
                if (s['Sid'], a) not in used]
        sys.stderr.write('awskit coverage: %d authorizations allowed by %d statements; not exercised '
                         'by these stories: %s\n' % (sum(used.values()), len({s for s, _ in used}),
                                                       ', '.join(idle) or 'nothing'))
        self.assertTrue(used)


class SelfTest(unittest.TestCase):
    """The coverage check refuses what it must, on calls shaped as the simulator logs them."""

    def launch(self, **tags):
        t = {'kubernetes.io/cluster/c1': 'owned', 'karpenter.sh/nodepool': 'default',
             'eks:eks-cluster-name': 'c1', 'karpenter.k8s.aws/ec2nodeclass': 'default'}
        t.update(tags)
        t = {k: v for k, v in t.items() if v is not None}
        params = {'Type': 'instant',
                  'TargetCapacitySpecification.DefaultTargetCapacityType': 'spot',
                  'LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateName': 'lt',
                  'LaunchTemplateConfigs.1.Overrides.1.SubnetId': 'subnet-1'}
        for n, rt in enumerate(('instance', 'volume', 'fleet'), 1):
            params['TagSpecification.%d.ResourceType' % n] = rt
            for j, (k, v) in enumerate(t.items(), 1):
                params['TagSpecification.%d.Tag.%d.Key' % (n, j)] = k
                params['TagSpecification.%d.Tag.%d.Value' % (n, j)] = v
        lt = {'name': 'lt', 'tags': t, 'tagspecs': {'network-interface': t},
              'data': {'ImageId': 'ami-1', 'SecurityGroupId': ['sg-1'],
                       'IamInstanceProfile': {'Name': 'p'}}}
        return {'seq': 1, 'service': 'ec2', 'action': 'CreateFleet', 'params': params, 'status': 200,
                'region': 'us-west-2', 'account': '123456789012', 'queue': 'q', 'cluster': 'c1',
                'resources': {'launchTemplates': {'lt-1': lt}, 'instanceProfiles': {
                    'p': {'arn': 'arn:aws:iam::123456789012:instance-profile/p', 'tags': {},
                          'roles': ['arn:aws:iam::123456789012:role/node']}}}}

    def denied(self, call, clusters=('c1',), role='node'):
        d, u, _ = evaluate('self', [call], Policies(), {'clusters': list(clusters), 'node_roles': [role]})
        self.assertEqual(u, [])
        return [repr(r) for _, reqs in d for r in reqs]

    def test_refusals(self):
        self.assertEqual(self.denied(self.launch()), [])
        self.assertTrue(self.denied(self.launch(), clusters=('c2',)))
        self.assertEqual(self.denied(self.launch(), clusters=('c2', 'c1')), [])
        got = self.denied(self.launch(**{'karpenter.sh/nodepool': None}))
        self.assertTrue(any('instance/*' in r for r in got), got)
        got = self.denied(self.launch(), role='other')
        self.assertTrue(any('iam:PassRole' in r for r in got), got)
        c = self.launch()
        c['resources']['launchTemplates']['lt-1']['tags'] = {}
        got = self.denied(c)
        self.assertTrue(any('launch-template/lt-1' in r for r in got), got)
        c = self.launch()
        c['resources']['launchTemplates']['lt-1']['tagspecs'] = {}
        got = self.denied(c)
        self.assertTrue(any('network-interface' in r for r in got), got)
        c = self.launch()
        c['resources']['launchTemplates'] = {}
        _, u, _ = evaluate('self', [c], Policies(), {'clusters': ['c1'], 'node_roles': ['node']})
        self.assertEqual(len(u), 1)
        term = {'seq': 2, 'service': 'ec2', 'action': 'TerminateInstances', 'status': 200,
                'params': {'InstanceId.1': 'i-1'}, 'region': 'us-west-2',
                'account': '123456789012', 'queue': 'q', 'cluster': 'c1',
                'resources': {'instances': {'i-1': {'kubernetes.io/cluster/c1': 'owned'}}}}
        self.assertTrue(self.denied(term))
        term['resources']['instances']['i-1']['karpenter.sh/nodepool'] = 'default'
        self.assertEqual(self.denied(term), [])
        q = {'seq': 3, 'service': 'sqs', 'action': 'ReceiveMessage', 'status': 200,
             'params': {'QueueUrl': 'https://sqs.us-west-2.amazonaws.com/123456789012/q'},
             'region': 'us-west-2', 'account': '123456789012', 'queue': 'q', 'cluster': 'c1'}
        self.assertEqual(self.denied(q), [])
        q['params']['QueueUrl'] += '2'
        self.assertTrue(self.denied(q))
        q['params']['QueueUrl'] = q['params']['QueueUrl'][:-1]
        self.assertEqual(self.denied(q), [])
        self.assertTrue(self.denied(dict(q, action='SendMessage')))


if __name__ == '__main__':
    unittest.main()
