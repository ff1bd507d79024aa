"""The AWS setup kit's files, and what the checks share: the template, the plain JSON
with its placeholders, the models folder."""
import glob
import json
import os
import subprocess

from . import cfn, iam

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KIT = os.path.join(ROOT, 'manifests', 'aws')
TEMPLATE = os.path.join(KIT, 'cloudformation.yaml')
FETCH = os.path.join(ROOT, 'tests', 'awskit', 'fetch-models')

# The placeholders of the plain JSON files (docs/aws-setup.md lists them the same way).
PLACEHOLDERS = {'AWS_PARTITION', 'AWS_REGION', 'AWS_ACCOUNT_ID', 'CLUSTER_NAME',
                'NODE_ROLE_NAME', 'QUEUE_NAME', 'OIDC_PROVIDER'}

# plain file -> (its kind of policy, the stack's resource and property it equals)
POLICY_FILES = {
    'controller-policy.json': ('identity', 'ControllerPolicy', 'PolicyDocument'),
    'controller-trust-policy.json': ('trust', 'ControllerRole', 'AssumeRolePolicyDocument'),
    'node-trust-policy.json': ('trust', 'NodeRole', 'AssumeRolePolicyDocument'),
    'queue-policy.json': ('resource', 'InterruptionQueuePolicy', 'PolicyDocument'),
}
# events/<name>.json is the EventPattern of the rule named nodewarden-<cluster>-<name>
EVENTS = os.path.join(KIT, 'events')

# IAM quota: a managed policy's document is at most 6,144 characters, white space not
# counted (IAM User Guide, "IAM and AWS STS quotas").
MANAGED_POLICY_MAX = 6144


def template():
    return cfn.load(TEMPLATE)


def read(name):
    with open(os.path.join(KIT, name)) as f:
        return f.read()


def plain(name, values):
    """A plain JSON file of the kit with its placeholders filled, parsed."""
    return json.loads(iam.render(read(name), values))


def event_files():
    return {os.path.basename(p)[:-len('.json')]: p for p in sorted(glob.glob(os.path.join(EVENTS, '*.json')))}


def models_dir():
    """The models folder, fetched by tests/awskit/fetch-models if it is not there yet."""
    p = subprocess.run([FETCH], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError('tests/awskit/fetch-models failed:\n' + p.stderr)
    return p.stdout.strip().splitlines()[-1]


def values_for(stack, cluster):
    """The placeholder values that describe the same account and cluster as stack."""
    ps = stack.pseudo
    node_role = stack.outputs['NodeRoleName']
    return {'AWS_PARTITION': ps['AWS::Partition'], 'AWS_REGION': ps['AWS::Region'],
            'AWS_ACCOUNT_ID': ps['AWS::AccountId'], 'CLUSTER_NAME': cluster,
            'NODE_ROLE_NAME': node_role,
            'QUEUE_NAME': stack.outputs['SettingsInterruptionQueue'],
            'OIDC_PROVIDER': stack.params['OIDCIssuerURL'][len('https://'):] or 'none.example.com'}


def controller_policy(cluster, region, account, node_role, queue, partition='aws'):
    return plain('controller-policy.json', {
        'AWS_PARTITION': partition, 'AWS_REGION': region, 'AWS_ACCOUNT_ID': account,
        'CLUSTER_NAME': cluster, 'NODE_ROLE_NAME': node_role, 'QUEUE_NAME': queue})
