"""docs/install.md's commands, extracted and run in order (tests/install/test_walkthrough.py).

The convention (docs/testing.md, "The install walkthrough"): every shell block of
docs/install.md (a fence opened with ```sh, ```bash, ```shell or ```console) is preceded by
a line `<!-- install-test: NAME -->` naming it, the name unique in the page. Every named
block is either in RUN (run as written, in the page's order) or in SKIP (with the reason it
cannot be run here, and what stands in for what it would have left behind). Loading fails
when the page has no block, a shell block has no name, a marker has no block after it, a
name repeats, a block is in neither list or in both, or a list names a block the page does
not have: a block added to the page is never silently left out.

Blocks run one after another in one working directory, each under `bash` with `set -eo
pipefail` and `set -a`: the variables one block sets (HELM_AWS_ARGS, NODE_ROLE, ...) and the
directory it leaves reach the next, as in the user's shell. A block that exits non-zero
fails the test with its name, line and output.

REWRITES are the only changes made to a block's text before it runs, each with its reason
(each must be used, else loading fails)."""
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DOC = os.path.join(ROOT, 'docs', 'install.md')
CFN = os.path.join(ROOT, 'manifests', 'aws', 'cloudformation.yaml')

MARKER = re.compile(r'^<!-- install-test: ([a-z0-9][a-z0-9-]*) -->\s*$')
FENCE = re.compile(r'^```(\S*)\s*$')
SHELL = {'sh', 'bash', 'shell', 'console'}

# run as written (after REWRITES), in the page's order
RUN = ['helm-install', 'doctor-first', 'nodepool', 'first-node', 'check', 'uninstall']

# name -> (why it cannot run here, what stands in for it: a key of the test's stand-ins or None)
SKIP = {
    'aws-deploy': (
        'aws cloudformation deploy: the simulator serves EC2, IAM instance profiles, SSM, SQS, '
        'STS and pricing, not CloudFormation, and the aws CLI is not installed here; the '
        'template itself is checked by the awskit job (every action and condition key against '
        "AWS's API models, every AWS call of the stories covered by its controller policy)",
        None),
    'aws-outputs': (
        "reads the stack's outputs with the aws CLI; the test sets HELM_AWS_ARGS and NODE_ROLE "
        "to the values manifests/aws/cloudformation.yaml's outputs HelmSetArgs and NodeRoleName "
        "take for ClusterName=my-cluster without an issuer (read from the template: "
        "stack_outputs), and the simulator knows that role and queue",
        'stack-outputs'),
    'image': (
        'needs a release (make release: both architectures cross-compiled, minutes) and a '
        'registry, and no kubelet here pulls the image; tests/release/smoke and '
        'tools/release/verify check the archive, its digest and SHA256SUMS. The test leaves '
        'the shell in a directory holding nodewarden-<VERSION>.tgz, the tree\'s chart packaged '
        'by helm package (the release\'s chart is the same chart with its digest stamped)',
        'release-dir'),
    'rollout': (
        "no kubelet runs the chart's pods on this tier: they stay Pending (the kubelet tier, "
        "tests/kubelet, runs them from the release's image). The test starts what the pod "
        'would run instead, as tests/cluster does: nodewarden serve in a network namespace with '
        "the chart's ConfigMap, TLS Secret and ServiceAccount token, and an EndpointSlice for "
        "the chart's Service",
        'pod'),
    'upgrade': (
        "needs a later release's chart (nodewarden-0.2.0.tgz); tests/k8s/test_chart.py renders "
        'and lints the chart', None),
    'without-helm': (
        'the alternative to section 3 on a cluster that already has the chart; '
        'tests/sim/test_install.py applies manifests/crds, manifests/install.yaml and '
        'install-dev-certs.sh with kubectl and checks the webhooks enforce', None),
    'workstation': (
        'needs a kubeconfig with an OIDC exec plugin and an AWS profile of a real account; '
        'exec plugins are tested by the kube_exec unit suite, profiles and the credential '
        'chain by aws_creds and tests/sim/test_aws_creds_sqs.py', None),
}

# (text in a block, what it becomes, why)
REWRITES = [
    ('kubectl -n nodewarden exec deploy/nodewarden -- ', '"$NW_TEST_POD_EXEC" ',
     "no kubelet runs the chart's pods here: the command runs as the pod would run it "
     "(in the pod's network namespace, with its environment, ServiceAccount token and "
     'ConfigMap; /etc/nodewarden/config.yaml is that ConfigMap)'),
]


class LoadError(Exception):
    pass


class Block:
    def __init__(self, name, line, lang, body):
        self.name, self.line, self.lang, self.body = name, line, lang, body

    def __repr__(self):
        return 'Block(%s, line %d)' % (self.name, self.line)


def extract(text, path='docs/install.md'):
    """Every shell block of the page, in order, as Blocks; LoadError on a block with no
    marker, a marker not followed by a shell block, or a name used twice."""
    lines = text.split('\n')
    blocks, pending, i = [], None, 0
    while i < len(lines):
        m = MARKER.match(lines[i])
        if m:
            if pending:
                raise LoadError('%s:%d: marker %r is not followed by a shell block'
                                % (path, pending[1], pending[0]))
            pending = (m.group(1), i + 1)
            i += 1
            continue
        f = FENCE.match(lines[i])
        if f and f.group(1):
            lang, start = f.group(1), i + 1
            j = i + 1
            while j < len(lines) and not lines[j].startswith('```'):
                j += 1
            if j >= len(lines):
                raise LoadError('%s:%d: a ``` fence that is never closed' % (path, start))
            if lang in SHELL:
                if not pending:
                    raise LoadError('%s:%d: a ```%s block with no <!-- install-test: NAME --> '
                                    'marker before it' % (path, start, lang))
                if any(b.name == pending[0] for b in blocks):
                    raise LoadError('%s:%d: the block name %r is used twice'
                                    % (path, start, pending[0]))
                blocks.append(Block(pending[0], start, lang, '\n'.join(lines[i + 1:j]) + '\n'))
            elif pending:
                raise LoadError('%s:%d: marker %r is followed by a ```%s block, not a shell one'
                                % (path, pending[1], pending[0], lang))
            pending = None
            i = j + 1
            continue
        if pending and lines[i].strip():
            raise LoadError('%s:%d: marker %r is not followed by a shell block'
                            % (path, pending[1], pending[0]))
        i += 1
    if pending:
        raise LoadError('%s:%d: marker %r is not followed by a shell block'
                        % (path, pending[1], pending[0]))
    return blocks


def plan(blocks, run=None, skip=None, rewrites=None, path='docs/install.md'):
    """The blocks in order as (block, skipped reason or None, stand-in key or None, text to
    run); LoadError when there is none, a block is in neither list or in both, a list names
    a block the page does not have, RUN is not in the page's order, or a rewrite is unused."""
    run = RUN if run is None else run
    skip = SKIP if skip is None else skip
    rewrites = REWRITES if rewrites is None else rewrites
    if not blocks:
        raise LoadError('%s: no shell block found (nothing would be tested)' % path)
    names = [b.name for b in blocks]
    errs = []
    for b in blocks:
        if b.name in run and b.name in skip:
            errs.append('%s:%d: block %r is both run and skipped' % (path, b.line, b.name))
        elif b.name not in run and b.name not in skip:
            errs.append('%s:%d: block %r is neither run (RUN) nor skipped with a reason (SKIP) '
                        'in tests/install/walkthrough.py' % (path, b.line, b.name))
    for n in list(run) + list(skip):
        if n not in names:
            errs.append('tests/install/walkthrough.py names block %r, which %s does not have'
                        % (n, path))
    if [n for n in names if n in run] != [n for n in run if n in names]:
        errs.append('RUN is not in the order of %s: %s' % (path, [n for n in names if n in run]))
    used = set()
    out = []
    for b in blocks:
        if b.name in skip:
            reason, standin = skip[b.name]
            out.append((b, reason, standin, None))
            continue
        text = b.body
        for k, (old, new, _why) in enumerate(rewrites):
            if old in text:
                used.add(k)
                text = text.replace(old, new)
        out.append((b, None, None, text))
    for k, (old, _new, _why) in enumerate(rewrites):
        if k not in used:
            errs.append('the rewrite of %r is used by no block to run' % old)
    if errs:
        raise LoadError('\n'.join(errs))
    return out


def load(path=DOC):
    with open(path, encoding='utf-8') as f:
        return plan(extract(f.read(), os.path.relpath(path, ROOT)))


def stack_outputs(cluster, region, template=CFN):
    """HELM_AWS_ARGS and NODE_ROLE as the template's outputs HelmSetArgs and NodeRoleName
    give them for ClusterName=cluster with no OIDCIssuerURL (aws.credentials=instanceProfile),
    the stack creating the node role and the queue taking the cluster's name."""
    with open(template) as f:
        t = f.read()
    m = re.search(r'^  HelmSetArgs:\n(.*?)^  \w', t, re.S | re.M)
    if not m:
        raise LoadError('%s: no output HelmSetArgs' % template)
    parts = [p for p in re.findall(r'"(--set [^"]*)"', m.group(1)) if 'webIdentity' not in p]
    queue = re.search(r'QueueName: !If\n\s+- DefaultQueueName\n\s+- !Join \["-", !Split \["\.", '
                      r'!Ref ClusterName\]\]', t)
    role = re.search(r'RoleName: !Sub "(nodewarden-node-\$\{ClusterName\})"', t)
    if not queue or not role or not re.search(r'^  NodeRoleName:\n.*\n\s+Value: !If \[CreateNodeRole, '
                                              r'!Ref NodeRole', t, re.M):
        raise LoadError('%s: the queue name, the node role or the NodeRoleName output is not '
                        'what stack_outputs reads' % template)
    subs = {'${ClusterName}': cluster, '${InterruptionQueue.QueueName}': cluster.replace('.', '-'),
            '${AWS::Region}': region}
    args = []
    for p in parts:
        for k, v in subs.items():
            p = p.replace(k, v)
        if '${' in p:
            raise LoadError('%s: HelmSetArgs part %r has a reference stack_outputs does not know'
                            % (template, p))
        args.append(p)
    return ' '.join(args), role.group(1).replace('${ClusterName}', cluster)
