"""CloudFormation, offline: load a template with its short-form tags (!Ref, !Sub, !GetAtt,
...), lint it, and render it for given parameters the way CloudFormation would resolve it
(conditions, Ref, Fn::GetAtt, Fn::Sub, Fn::If, Fn::Join, Fn::Split, Fn::Select), so the
tests can read the policies a stack would create. Only what manifests/aws/cloudformation.yaml
uses is known here; anything else is a lint error, never silently accepted.

cfn-lint (PyPI) is the fuller check and cannot be installed here (no PyPI); this is what
the standard library and python3-yaml can check: the YAML and its tags, that every Ref,
Fn::GetAtt, ${...} of Fn::Sub and condition names something defined, that every
parameter and condition is used, every output's value resolves, the resource types and
their required properties, and (tests/awskit/iam.py) the IAM policy documents.
"""
import json
import re

import yaml

PSEUDO = {'AWS::AccountId', 'AWS::NotificationARNs', 'AWS::NoValue', 'AWS::Partition',
          'AWS::Region', 'AWS::StackId', 'AWS::StackName', 'AWS::URLSuffix'}
TOP_KEYS = {'AWSTemplateFormatVersion', 'Description', 'Metadata', 'Parameters', 'Rules',
            'Mappings', 'Conditions', 'Transform', 'Resources', 'Outputs'}
FUNCTIONS = {'Ref', 'Condition', 'Fn::GetAtt', 'Fn::Sub', 'Fn::If', 'Fn::Equals', 'Fn::Not',
             'Fn::And', 'Fn::Or', 'Fn::Join', 'Fn::Split', 'Fn::Select'}
CONDITION_FUNCTIONS = {'Fn::Equals', 'Fn::Not', 'Fn::And', 'Fn::Or', 'Condition'}
PARAM_TYPES = {'String', 'Number', 'CommaDelimitedList', 'List<Number>'}
PARAM_KEYS = {'Type', 'Default', 'Description', 'AllowedPattern', 'AllowedValues', 'MinLength',
              'MaxLength', 'MinValue', 'MaxValue', 'ConstraintDescription', 'NoEcho'}
RESOURCE_KEYS = {'Type', 'Properties', 'Condition', 'DependsOn', 'DeletionPolicy',
                 'UpdateReplacePolicy', 'Metadata'}

# The resource types the kit uses: required properties, the properties known, the
# attributes of Fn::GetAtt (the CloudFormation User Guide's page of each type, "Return
# values"), and which properties hold IAM policy documents of which kind.
TYPES = {
    'AWS::IAM::Role': {
        'required': {'AssumeRolePolicyDocument'},
        'props': {'AssumeRolePolicyDocument', 'Description', 'ManagedPolicyArns',
                  'MaxSessionDuration', 'Path', 'PermissionsBoundary', 'Policies', 'RoleName',
                  'Tags'},
        'attrs': {'Arn', 'RoleId'},
        'policies': {'AssumeRolePolicyDocument': 'trust'}},
    'AWS::IAM::InstanceProfile': {
        'required': {'Roles'},
        'props': {'InstanceProfileName', 'Path', 'Roles'},
        'attrs': {'Arn'}},
    'AWS::IAM::ManagedPolicy': {
        'required': {'PolicyDocument'},
        'props': {'Description', 'Groups', 'ManagedPolicyName', 'Path', 'PolicyDocument',
                  'Roles', 'Users'},
        'attrs': {'PolicyArn', 'PolicyId', 'DefaultVersionId', 'AttachmentCount',
                  'CreateDate', 'IsAttachable', 'UpdateDate'},
        'policies': {'PolicyDocument': 'identity'}},
    'AWS::IAM::OIDCProvider': {
        'required': {'ClientIdList'},
        'props': {'ClientIdList', 'Tags', 'ThumbprintList', 'Url'},
        'attrs': {'Arn'}},
    'AWS::SQS::Queue': {
        'required': set(),
        'props': {'ContentBasedDeduplication', 'DelaySeconds', 'FifoQueue',
                  'KmsMasterKeyId', 'MessageRetentionPeriod', 'QueueName',
                  'ReceiveMessageWaitTimeSeconds', 'RedrivePolicy', 'SqsManagedSseEnabled',
                  'Tags', 'VisibilityTimeout'},
        'attrs': {'Arn', 'QueueName', 'QueueUrl'}},
    'AWS::SQS::QueuePolicy': {
        'required': {'PolicyDocument', 'Queues'},
        'props': {'PolicyDocument', 'Queues'},
        'attrs': {'Id'},
        'policies': {'PolicyDocument': 'resource'}},
    'AWS::Events::Rule': {
        'required': set(),
        'props': {'Description', 'EventBusName', 'EventPattern', 'Name', 'RoleArn',
                  'ScheduleExpression', 'State', 'Targets'},
        'attrs': {'Arn'}},
}


class Fn(dict):
    """An intrinsic function as the long form ({'Ref': x}, {'Fn::Sub': ...})."""


class Loader(yaml.SafeLoader):
    pass


def _short_form(loader, suffix, node):
    if isinstance(node, yaml.ScalarNode):
        v = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        v = loader.construct_sequence(node, deep=True)
    else:
        v = loader.construct_mapping(node, deep=True)
    if suffix == 'Ref':
        return Fn(Ref=v)
    if suffix == 'Condition':
        return Fn(Condition=v)
    if suffix == 'GetAtt' and isinstance(v, str):
        v = v.split('.', 1)
    return Fn({'Fn::' + suffix: v})


Loader.add_multi_constructor('!', _short_form)


def load(path):
    with open(path) as f:
        return yaml.load(f, Loader=Loader)


def fn_of(x):
    """(name, argument) when x is an intrinsic function, else None."""
    if isinstance(x, dict) and len(x) == 1:
        k = next(iter(x))
        if k == 'Ref' or k == 'Condition' and isinstance(x, Fn) or k.startswith('Fn::'):
            return k, x[k]
    return None


SUB_VAR = re.compile(r'\$\{([^}]*)\}')


def sub_names(s):
    """The names ${X} of a Fn::Sub string (not the ${!Literal} escapes)."""
    return [m for m in SUB_VAR.findall(s) if not m.startswith('!')]


# ---------------------------------------------------------------------------
# lint

def lint(t):
    """Problems of template t (a list of strings; empty: none found)."""
    p = []
    if not isinstance(t, dict):
        return ['the template is not a mapping']
    for k in t:
        if k not in TOP_KEYS:
            p.append('unknown top-level key %s' % k)
    if t.get('AWSTemplateFormatVersion') != '2010-09-09':
        p.append('AWSTemplateFormatVersion must be the string "2010-09-09", not %r'
                 % (t.get('AWSTemplateFormatVersion'),))
    params = t.get('Parameters') or {}
    conds = t.get('Conditions') or {}
    res = t.get('Resources') or {}
    outs = t.get('Outputs') or {}
    if not res:
        p.append('no Resources')
    names = {}
    for section, d in (('Parameters', params), ('Conditions', conds), ('Resources', res),
                       ('Outputs', outs)):
        if not isinstance(d, dict):
            p.append('%s is not a mapping' % section)
            continue
        for n in d:
            if not re.fullmatch(r'[A-Za-z0-9]+', str(n)):
                p.append('%s: %s is not alphanumeric' % (section, n))
            if section != 'Outputs' and n in names:
                p.append('%s is both a %s and a %s' % (n, names[n], section[:-1]))
            names.setdefault(n, section[:-1])
    used_params, used_conds = set(), set()

    def walk(x, where, in_condition=False):
        f = fn_of(x)
        if f:
            name, arg = f
            if name not in FUNCTIONS:
                p.append('%s: unknown function %s' % (where, name))
            elif in_condition and name in ('Fn::GetAtt', 'Fn::If'):
                p.append('%s: %s is not allowed in a condition' % (where, name))
            if name == 'Ref':
                if arg in params:
                    used_params.add(arg)
                elif arg not in res and arg not in PSEUDO:
                    p.append('%s: Ref %s names no parameter, resource or pseudo parameter'
                             % (where, arg))
                elif in_condition and arg in res:
                    p.append('%s: a condition cannot Ref the resource %s' % (where, arg))
            elif name == 'Condition':
                if arg not in conds:
                    p.append('%s: condition %s is not defined' % (where, arg))
                used_conds.add(arg)
            elif name == 'Fn::GetAtt':
                getatt(arg, where)
            elif name == 'Fn::Sub':
                s, vars_ = (arg, {}) if isinstance(arg, str) else (arg + [None, None])[:2]
                if not isinstance(s, str) or not isinstance(vars_, dict):
                    p.append('%s: Fn::Sub takes a string or [string, {variables}]' % where)
                    return
                for v, e in vars_.items():
                    walk(e, '%s ${%s}' % (where, v))
                for n in sub_names(s):
                    if n in vars_:
                        continue
                    if '.' in n:
                        getatt(n.split('.', 1), where)
                    elif n in params:
                        used_params.add(n)
                    elif n not in res and n not in PSEUDO:
                        p.append('%s: ${%s} names no parameter, resource, attribute or variable'
                                 % (where, n))
                if not isinstance(arg, str):
                    unused = set(vars_) - set(sub_names(s))
                    if unused:
                        p.append('%s: Fn::Sub variables not used: %s' % (where, sorted(unused)))
            elif name == 'Fn::If':
                if not (isinstance(arg, list) and len(arg) == 3):
                    p.append('%s: Fn::If takes [condition, then, else]' % where)
                    return
                if arg[0] not in conds:
                    p.append('%s: Fn::If names the undefined condition %s' % (where, arg[0]))
                used_conds.add(arg[0])
                walk(arg[1], where)
                walk(arg[2], where)
            elif name == 'Fn::Select':
                if not (isinstance(arg, list) and len(arg) == 2):
                    p.append('%s: Fn::Select takes [index, list]' % where)
                walk(arg, where, in_condition)
            elif name in ('Fn::Join', 'Fn::Split'):
                if not (isinstance(arg, list) and len(arg) == 2 and isinstance(arg[0], str)):
                    p.append('%s: %s takes [delimiter, value]' % (where, name))
                walk(arg, where, in_condition)
            else:
                walk(arg, where, in_condition)
            return
        if isinstance(x, dict):
            for k, v in x.items():
                walk(v, '%s.%s' % (where, k), in_condition)
        elif isinstance(x, list):
            for i, v in enumerate(x):
                walk(v, '%s[%d]' % (where, i), in_condition)

    def getatt(arg, where):
        if not (isinstance(arg, list) and len(arg) == 2):
            p.append('%s: Fn::GetAtt takes Resource.Attribute' % where)
            return
        r, a = arg
        if r not in res:
            p.append('%s: Fn::GetAtt %s.%s: no resource %s' % (where, r, a, r))
            return
        typ = TYPES.get(res[r].get('Type'), {})
        if a not in typ.get('attrs', ()):
            p.append('%s: Fn::GetAtt %s.%s: %s has no attribute %s'
                     % (where, r, a, res[r].get('Type'), a))

    for n, d in params.items():
        where = 'Parameters.%s' % n
        if not isinstance(d, dict):
            p.append('%s is not a mapping' % where)
            continue
        for k in d:
            if k not in PARAM_KEYS:
                p.append('%s: unknown key %s' % (where, k))
        if d.get('Type') not in PARAM_TYPES:
            p.append('%s: Type %r is not one of %s' % (where, d.get('Type'), sorted(PARAM_TYPES)))
        if 'Default' in d:
            dv = d['Default']
            if not isinstance(dv, str):
                p.append('%s: Default %r is not a string (quote it)' % (where, dv))
            else:
                if 'AllowedValues' in d and dv not in d['AllowedValues']:
                    p.append('%s: Default %r is not in AllowedValues' % (where, dv))
                if 'AllowedPattern' in d and d.get('Type') == 'String' and \
                        not re.fullmatch(d['AllowedPattern'], dv):
                    p.append('%s: Default %r does not match AllowedPattern' % (where, dv))
                if 'MaxLength' in d and len(dv) > int(d['MaxLength']):
                    p.append('%s: Default is longer than MaxLength' % where)
        for v in d.get('AllowedValues') or []:
            if not isinstance(v, str):
                p.append('%s: AllowedValues %r is not a string (quote it)' % (where, v))
        if 'AllowedPattern' in d:
            try:
                re.compile(d['AllowedPattern'])
            except re.error as e:
                p.append('%s: AllowedPattern: %s' % (where, e))
    for n, c in conds.items():
        f = fn_of(c)
        if not f or f[0] not in CONDITION_FUNCTIONS:
            p.append('Conditions.%s: must be Fn::Equals, Fn::Not, Fn::And, Fn::Or or Condition'
                     % n)
        walk(c, 'Conditions.%s' % n, in_condition=True)
    for n, r in res.items():
        where = 'Resources.%s' % n
        if not isinstance(r, dict):
            p.append('%s is not a mapping' % where)
            continue
        for k in r:
            if k not in RESOURCE_KEYS:
                p.append('%s: unknown key %s' % (where, k))
        typ = TYPES.get(r.get('Type'))
        if not typ:
            p.append('%s: resource type %r is not one the kit knows (%s)'
                     % (where, r.get('Type'), ', '.join(sorted(TYPES))))
            continue
        props = r.get('Properties') or {}
        for k in typ['required'] - set(props):
            p.append('%s: %s needs the property %s' % (where, r['Type'], k))
        for k in props:
            if k not in typ['props']:
                p.append('%s: %s has no property %s' % (where, r['Type'], k))
        if 'Condition' in r:
            if r['Condition'] not in conds:
                p.append('%s: condition %s is not defined' % (where, r['Condition']))
            used_conds.add(r['Condition'])
        for dep in ([r['DependsOn']] if isinstance(r.get('DependsOn'), str) else r.get('DependsOn') or []):
            if dep not in res:
                p.append('%s: DependsOn %s: no such resource' % (where, dep))
        walk(props, where + '.Properties')
    for n, o in outs.items():
        where = 'Outputs.%s' % n
        if not isinstance(o, dict) or 'Value' not in o:
            p.append('%s has no Value' % where)
            continue
        for k in o:
            if k not in ('Value', 'Description', 'Condition', 'Export'):
                p.append('%s: unknown key %s' % (where, k))
        if 'Condition' in o:
            if o['Condition'] not in conds:
                p.append('%s: condition %s is not defined' % (where, o['Condition']))
            used_conds.add(o['Condition'])
        walk(o['Value'], where)
    for n in params:
        if n not in used_params:
            p.append('Parameters.%s is never used' % n)
    for n in conds:
        if n not in used_conds:
            p.append('Conditions.%s is never used' % n)
    return p


# ---------------------------------------------------------------------------
# rendering

NOVALUE = object()


class RenderError(Exception):
    pass


class Stack:
    """Template t rendered for parameters `params` in an account: .params, .conditions,
    .resources ({logical id: {'Type', 'Properties'}} of the resources that exist, every
    intrinsic function resolved, policy documents given as JSON strings parsed) and
    .outputs ({name: value})."""

    def __init__(self, t, params=None, region='us-west-2', account='123456789012',
                 partition='aws', url_suffix='amazonaws.com', stack_name='nodewarden'):
        self.t = t
        self.pseudo = {'AWS::Region': region, 'AWS::AccountId': account,
                       'AWS::Partition': partition, 'AWS::URLSuffix': url_suffix,
                       'AWS::StackName': stack_name,
                       'AWS::StackId': 'arn:%s:cloudformation:%s:%s:stack/%s/0' % (
                           partition, region, account, stack_name)}
        self.params = {}
        given = dict(params or {})
        for n, d in (t.get('Parameters') or {}).items():
            if n in given:
                v = given.pop(n)
            elif 'Default' in d:
                v = d['Default']
            else:
                raise RenderError('parameter %s has no value' % n)
            v = str(v)
            if d.get('Type') == 'String':
                if 'AllowedValues' in d and v not in d['AllowedValues']:
                    raise RenderError('parameter %s: %r is not allowed' % (n, v))
                if 'AllowedPattern' in d and not re.fullmatch(d['AllowedPattern'], v):
                    raise RenderError('parameter %s: %r does not match %s'
                                      % (n, v, d['AllowedPattern']))
                if 'MaxLength' in d and len(v) > int(d['MaxLength']):
                    raise RenderError('parameter %s: longer than %s' % (n, d['MaxLength']))
                if 'MinLength' in d and len(v) < int(d['MinLength']):
                    raise RenderError('parameter %s: shorter than %s' % (n, d['MinLength']))
            self.params[n] = v.split(',') if d.get('Type') == 'CommaDelimitedList' else v
        if given:
            raise RenderError('unknown parameters %s' % sorted(given))
        self._conds = {}
        self.conditions = {n: self.condition(n) for n in (t.get('Conditions') or {})}
        self.resources = {}
        self._names = {}
        for n, r in (t.get('Resources') or {}).items():
            if 'Condition' in r and not self.conditions[r['Condition']]:
                continue
            self.resources[n] = {'Type': r['Type']}
        for n in self.resources:
            props = self.ev(self.t['Resources'][n].get('Properties') or {}, 'Resources.%s' % n)
            for k, kind in TYPES[self.resources[n]['Type']].get('policies', {}).items():
                if isinstance(props.get(k), str):
                    try:
                        props[k] = json.loads(props[k])
                    except ValueError as e:
                        raise RenderError('Resources.%s.%s: not JSON: %s' % (n, k, e))
            self.resources[n]['Properties'] = props
        self.outputs = {}
        for n, o in (t.get('Outputs') or {}).items():
            if 'Condition' in o and not self.conditions[o['Condition']]:
                continue
            self.outputs[n] = self.ev(o['Value'], 'Outputs.%s' % n)

    def condition(self, n):
        if n not in self._conds:
            self._conds[n] = None
            self._conds[n] = bool(self.ev(self.t['Conditions'][n], 'Conditions.%s' % n))
        elif self._conds[n] is None:
            raise RenderError('condition %s refers to itself' % n)
        return self._conds[n]

    # the physical name, Ref and attributes of a resource, as CloudFormation gives them
    def _name(self, r):
        if r not in self._names:
            self._names[r] = None
            props = self.t['Resources'][r].get('Properties') or {}
            key = {'AWS::IAM::Role': 'RoleName', 'AWS::IAM::InstanceProfile': 'InstanceProfileName',
                   'AWS::IAM::ManagedPolicy': 'ManagedPolicyName', 'AWS::SQS::Queue': 'QueueName',
                   'AWS::Events::Rule': 'Name'}.get(self.t['Resources'][r]['Type'])
            v = self.ev(props[key], 'Resources.%s.%s' % (r, key)) if key and key in props \
                else '%s-%s-GENERATED' % (self.pseudo['AWS::StackName'], r)
            self._names[r] = v
        elif self._names[r] is None:
            raise RenderError('the name of %s refers to itself' % r)
        return self._names[r]

    def _path(self, r):
        return self.ev((self.t['Resources'][r].get('Properties') or {}).get('Path', '/'), r)

    def attr(self, r, a):
        if r not in self.resources:
            raise RenderError('%s.%s: the resource %s does not exist with these parameters'
                              % (r, a, r))
        typ, P, R, A = (self.resources[r]['Type'], self.pseudo['AWS::Partition'],
                        self.pseudo['AWS::Region'], self.pseudo['AWS::AccountId'])
        name = self._name(r) if typ != 'AWS::IAM::OIDCProvider' else None
        if typ == 'AWS::IAM::Role' and a == 'Arn':
            return 'arn:%s:iam::%s:role%s%s' % (P, A, self._path(r), name)
        if typ == 'AWS::IAM::InstanceProfile' and a == 'Arn':
            return 'arn:%s:iam::%s:instance-profile%s%s' % (P, A, self._path(r), name)
        if typ == 'AWS::IAM::ManagedPolicy' and a == 'PolicyArn':
            return 'arn:%s:iam::%s:policy%s%s' % (P, A, self._path(r), name)
        if typ == 'AWS::IAM::OIDCProvider' and a == 'Arn':
            url = self.ev(self.t['Resources'][r]['Properties']['Url'], r)
            return 'arn:%s:iam::%s:oidc-provider/%s' % (P, A, re.sub('^https://', '', url))
        if typ == 'AWS::SQS::Queue':
            return {'Arn': 'arn:%s:sqs:%s:%s:%s' % (P, R, A, name), 'QueueName': name,
                    'QueueUrl': 'https://sqs.%s.%s/%s/%s' % (R, self.pseudo['AWS::URLSuffix'],
                                                             A, name)}[a]
        if typ == 'AWS::Events::Rule' and a == 'Arn':
            return 'arn:%s:events:%s:%s:rule/%s' % (P, R, A, name)
        raise RenderError('%s.%s is not rendered here' % (r, a))

    def ref(self, n, where):
        if n in self.params:
            return self.params[n]
        if n == 'AWS::NoValue':
            return NOVALUE
        if n in self.pseudo:
            return self.pseudo[n]
        if n in self.resources:
            typ = self.resources[n]['Type']
            if typ == 'AWS::IAM::ManagedPolicy':
                return self.attr(n, 'PolicyArn')
            if typ == 'AWS::IAM::OIDCProvider':
                return self.attr(n, 'Arn')
            if typ == 'AWS::SQS::Queue':
                return self.attr(n, 'QueueUrl')
            return self._name(n)
        raise RenderError('%s: Ref %s: nothing of that name exists with these parameters'
                          % (where, n))

    def ev(self, x, where):
        f = fn_of(x)
        if f:
            name, a = f
            if name == 'Ref':
                return self.ref(a, where)
            if name == 'Condition':
                return self.condition(a)
            if name == 'Fn::GetAtt':
                return self.attr(a[0], a[1])
            if name == 'Fn::If':
                return self.ev(a[1] if self.condition(a[0]) else a[2], where)
            if name == 'Fn::Equals':
                return self.ev(a[0], where) == self.ev(a[1], where)
            if name == 'Fn::Not':
                return not self.ev(a[0], where)
            if name == 'Fn::And':
                return all(self.ev(v, where) for v in a)
            if name == 'Fn::Or':
                return any(self.ev(v, where) for v in a)
            if name == 'Fn::Join':
                return a[0].join(self.ev(a[1], where))
            if name == 'Fn::Split':
                return self.ev(a[1], where).split(a[0])
            if name == 'Fn::Select':
                lst = self.ev(a[1], where)
                i = int(self.ev(a[0], where))
                if not 0 <= i < len(lst):
                    raise RenderError('%s: Fn::Select %d of %r' % (where, i, lst))
                return lst[i]
            if name == 'Fn::Sub':
                s, vars_ = (a, {}) if isinstance(a, str) else a
                vals = {k: self.ev(v, where) for k, v in vars_.items()}

                def one(m):
                    n = m.group(1)
                    if n.startswith('!'):
                        return '${' + n[1:] + '}'
                    if n in vals:
                        v = vals[n]
                    elif '.' in n:
                        v = self.attr(*n.split('.', 1))
                    else:
                        v = self.ref(n, where)
                    if not isinstance(v, str):
                        raise RenderError('%s: ${%s} is not a string: %r' % (where, n, v))
                    return v
                return SUB_VAR.sub(one, s)
            raise RenderError('%s: %s is not rendered here' % (where, name))
        if isinstance(x, dict):
            out = {}
            for k, v in x.items():
                v = self.ev(v, '%s.%s' % (where, k))
                if v is not NOVALUE:
                    out[k] = v
            return out
        if isinstance(x, list):
            return [v for v in (self.ev(e, where) for e in x) if v is not NOVALUE]
        return x

    def policies(self):
        """[(where, kind, document)] of every IAM policy document of the stack (kind:
        identity, trust or resource)."""
        out = []
        for n, r in self.resources.items():
            for k, kind in TYPES[r['Type']].get('policies', {}).items():
                if k in r['Properties']:
                    out.append(('%s.%s' % (n, k), kind, r['Properties'][k]))
        return out

    def by_type(self, typ):
        return {n: r['Properties'] for n, r in self.resources.items() if r['Type'] == typ}
