"""IAM policies, offline: their grammar, whether every action and condition key in them
exists, and the decision a policy gives for a request — enough to tell whether the AWS
setup kit's controller policy allows each AWS call nodewarden makes.

References (what each check stands on):
- The grammar: IAM User Guide, "IAM JSON policy element reference" and "IAM JSON policy
  elements: Condition operators".
- Actions: the operations of AWS's published API models (the npm package aws-sdk's
  apis/<service>-<version>.min.json, pinned in tests/awskit/versions, fetched by
  tests/awskit/fetch-models); PERMISSION_ONLY below are the actions that are no API
  operation.
- Condition keys: GLOBAL_KEYS and SERVICE_KEYS below, each with the page it is from.
- The decision: IAM User Guide, "Policy evaluation logic" (an explicit Deny wins, then any
  Allow, else the implicit deny) and "Condition operators" (several keys or operators in a
  Condition are ANDed, several values of one key ORed; ...IfExists and ForAllValues: on a
  missing key are true, the others false).
"""
import fnmatch
import json
import os
import re

# IAM service prefix -> the model file (apis/<this>.min.json) of its API
SERVICE_MODELS = {
    'ec2': 'ec2-2016-11-15',
    'iam': 'iam-2010-05-08',
    'sqs': 'sqs-2012-11-05',
    'ssm': 'ssm-2014-11-06',
    'pricing': 'pricing-2017-10-15',
    'sts': 'sts-2011-06-15',
    'events': 'events-2015-10-07',
}

# Actions that authorize something but are no API operation. Service Authorization
# Reference, "Actions, resources, and condition keys for AWS Identity and Access
# Management (IAM)": iam:PassRole, access level Write, "[permission only]".
PERMISSION_ONLY = {'iam:PassRole'}

# AWS global condition context keys (IAM User Guide, "AWS global condition context keys",
# reference_policies_condition-keys). A trailing "/" takes a tag key after it.
GLOBAL_KEYS = {
    'aws:CalledVia', 'aws:CalledViaFirst', 'aws:CalledViaLast', 'aws:CurrentTime',
    'aws:EpochTime', 'aws:FederatedProvider', 'aws:MultiFactorAuthAge',
    'aws:MultiFactorAuthPresent', 'aws:PrincipalAccount', 'aws:PrincipalArn',
    'aws:PrincipalIsAWSService', 'aws:PrincipalOrgID', 'aws:PrincipalOrgPaths',
    'aws:PrincipalServiceName', 'aws:PrincipalServiceNamesList', 'aws:PrincipalType',
    'aws:Referer', 'aws:RequestedRegion', 'aws:ResourceAccount', 'aws:ResourceOrgID',
    'aws:ResourceOrgPaths', 'aws:SecureTransport', 'aws:SourceAccount', 'aws:SourceArn',
    'aws:SourceIp', 'aws:SourceOrgID', 'aws:SourceOrgPaths', 'aws:SourceVpc',
    'aws:SourceVpce', 'aws:TagKeys', 'aws:TokenIssueTime', 'aws:UserAgent', 'aws:userid',
    'aws:username', 'aws:ViaAWSService', 'aws:VpcSourceIp',
    'aws:PrincipalTag/', 'aws:RequestTag/', 'aws:ResourceTag/',
}

# Service condition keys the kit may use, from the Service Authorization Reference page of
# each service ("Condition keys for ...").
SERVICE_KEYS = {
    # Amazon EC2: "Filters access by the name of a resource-creating API action"
    'ec2:CreateAction',
    # Amazon EC2: the tag conditions EC2 also accepts under its own prefix
    'ec2:ResourceTag/',
    # IAM: "Filters access by the AWS service to which this role is passed"
    'iam:PassedToService',
    # IAM: "Filters access by the resource that the role will be used on behalf of"
    'iam:AssociatedResourceArn',
}

# Web identity federation keys: the issuer's host and path, a colon, then a claim (IAM
# User Guide, "Available keys for AWS OIDC federation").
OIDC_CLAIMS = {'aud', 'sub', 'amr', 'azp', 'oaud', 'email'}

# AWS managed policies the kit attaches (AWS Managed Policy Reference Guide).
AWS_MANAGED_POLICIES = {'AmazonEC2ContainerRegistryPullOnly', 'AmazonEC2ContainerRegistryReadOnly',
                        'AmazonSSMManagedInstanceCore', 'AmazonEKS_CNI_Policy'}

STRING_OPS = {'StringEquals', 'StringNotEquals', 'StringEqualsIgnoreCase',
              'StringNotEqualsIgnoreCase', 'StringLike', 'StringNotLike'}
ARN_OPS = {'ArnEquals', 'ArnLike', 'ArnNotEquals', 'ArnNotLike'}
OTHER_OPS = {'Bool', 'Null', 'NumericEquals', 'NumericNotEquals', 'NumericLessThan',
             'NumericLessThanEquals', 'NumericGreaterThan', 'NumericGreaterThanEquals',
             'DateEquals', 'DateNotEquals', 'DateLessThan', 'DateLessThanEquals',
             'DateGreaterThan', 'DateGreaterThanEquals', 'IpAddress', 'NotIpAddress',
             'BinaryEquals'}
STATEMENT_KEYS = {'Sid', 'Effect', 'Principal', 'NotPrincipal', 'Action', 'NotAction',
                  'Resource', 'NotResource', 'Condition'}


def as_list(x):
    return x if isinstance(x, list) else [x]


def split_op(op):
    """'ForAllValues:StringEqualsIfExists' -> ('all', 'StringEquals', True)"""
    setop = None
    for pre, name in (('ForAllValues:', 'all'), ('ForAnyValue:', 'any')):
        if op.startswith(pre):
            setop, op = name, op[len(pre):]
    ifexists = op.endswith('IfExists') and op != 'IfExists'
    if ifexists:
        op = op[:-len('IfExists')]
    return setop, op, ifexists


# ---------------------------------------------------------------------------
# the API models

class Models:
    """The operations of each service in SERVICE_MODELS, from the models folder."""

    def __init__(self, folder):
        self.folder = folder
        self.ops = {}
        for prefix, name in SERVICE_MODELS.items():
            path = os.path.join(folder, name + '.min.json')
            with open(path) as f:
                self.ops[prefix] = set(json.load(f)['operations'])

    def actions_matching(self, action):
        """The real actions an Action element value (maybe with * or ?) names."""
        if ':' not in action:
            return set()
        svc, op = action.split(':', 1)
        known = {'%s:%s' % (svc, o) for o in self.ops.get(svc.lower(), ())}
        known |= {a for a in PERMISSION_ONLY if a.split(':')[0] == svc}
        return {a for a in known if fnmatch.fnmatchcase(a.lower(), action.lower())}


def key_known(key, issuers=()):
    """Is the condition key a real one (global, a service's, or a web identity claim of one
    of the issuers the statement trusts)?"""
    for k in GLOBAL_KEYS | SERVICE_KEYS:
        if k.endswith('/') and key.lower().startswith(k.lower()) and len(key) > len(k):
            return True
        if key.lower() == k.lower():
            return True
    if ':' in key:
        prov, claim = key.rsplit(':', 1)
        return claim in OIDC_CLAIMS and prov in issuers
    return False


# ---------------------------------------------------------------------------
# grammar and names

def check_policy(doc, kind, models, where='policy'):
    """Problems of one policy document. kind: identity (attached to a role or user: no
    Principal, a Resource), trust (a role's AssumeRolePolicyDocument: a Principal, no
    Resource) or resource (a queue policy: both)."""
    p = []
    if not isinstance(doc, dict):
        return ['%s: not a JSON object' % where]
    for k in doc:
        if k not in ('Version', 'Id', 'Statement'):
            p.append('%s: unknown element %s' % (where, k))
    if doc.get('Version') != '2012-10-17':
        p.append('%s: Version must be "2012-10-17", not %r' % (where, doc.get('Version')))
    sts = doc.get('Statement')
    if isinstance(sts, dict):
        sts = [sts]
    if not isinstance(sts, list) or not sts:
        return p + ['%s: no Statement' % where]
    sids = set()
    for i, s in enumerate(sts):
        w = '%s Statement[%d]%s' % (where, i, ' (%s)' % s.get('Sid') if isinstance(s, dict) and s.get('Sid') else '')
        if not isinstance(s, dict):
            p.append('%s: not an object' % w)
            continue
        for k in s:
            if k not in STATEMENT_KEYS:
                p.append('%s: unknown element %s' % (w, k))
        if 'Sid' in s:
            if not re.fullmatch(r'[A-Za-z0-9]*', str(s['Sid'])):
                p.append('%s: Sid must be alphanumeric' % w)
            if s['Sid'] in sids:
                p.append('%s: Sid %s used twice' % (w, s['Sid']))
            sids.add(s['Sid'])
        if s.get('Effect') not in ('Allow', 'Deny'):
            p.append('%s: Effect must be Allow or Deny, not %r' % (w, s.get('Effect')))
        if ('Action' in s) == ('NotAction' in s):
            p.append('%s: needs exactly one of Action, NotAction' % w)
        has_principal = 'Principal' in s or 'NotPrincipal' in s
        has_resource = 'Resource' in s or 'NotResource' in s
        if kind == 'identity' and has_principal:
            p.append('%s: an identity policy has no Principal' % w)
        if kind in ('trust', 'resource') and not has_principal:
            p.append('%s: a %s policy needs a Principal' % (w, kind))
        if kind in ('identity', 'resource') and not has_resource:
            p.append('%s: needs a Resource' % w)
        if kind == 'trust' and has_resource:
            p.append('%s: a trust policy has no Resource' % w)
        if 'Resource' in s and 'NotResource' in s:
            p.append('%s: both Resource and NotResource' % w)
        for r in as_list(s.get('Resource', s.get('NotResource', []))):
            if not isinstance(r, str) or not (r == '*' or re.fullmatch(r'arn:[^:]+:[^:]+:[^:]*:[^:]*:.+', r)):
                p.append('%s: Resource %r is neither * nor an ARN' % (w, r))
        issuers = set()
        pr = s.get('Principal', s.get('NotPrincipal'))
        if pr is not None and pr != '*':
            if not isinstance(pr, dict) or not pr:
                p.append('%s: Principal must be "*" or an object' % w)
            else:
                for k, v in pr.items():
                    if k not in ('AWS', 'Service', 'Federated', 'CanonicalUser'):
                        p.append('%s: unknown principal type %s' % (w, k))
                    for x in as_list(v):
                        if not isinstance(x, str) or not x:
                            p.append('%s: principal %r is not a string' % (w, x))
                        elif k == 'Service' and not re.fullmatch(r'[a-z0-9.-]+\.amazonaws\.com(\.cn)?', x):
                            p.append('%s: %r is not a service principal' % (w, x))
                        elif k == 'Federated':
                            m = re.fullmatch(r'arn:[^:]+:iam::\d{12}:oidc-provider/(.+)', x)
                            if m:
                                issuers.add(m.group(1))
                            else:
                                p.append('%s: %r is not an OIDC provider ARN' % (w, x))
        actions = as_list(s.get('Action', s.get('NotAction', [])))
        for a in actions:
            if not isinstance(a, str):
                p.append('%s: action %r is not a string' % (w, a))
            elif a != '*' and not models.actions_matching(a):
                svc = a.split(':')[0] if ':' in a else a
                p.append('%s: %s names no operation of %s' % (
                    w, a, 'the %s API model (%s)' % (svc, SERVICE_MODELS[svc]) if svc in SERVICE_MODELS
                    else 'a service the kit knows (%s)' % ', '.join(sorted(SERVICE_MODELS))))
        if kind == 'trust':
            for a in actions:
                if isinstance(a, str) and not a.startswith('sts:AssumeRole'):
                    p.append('%s: a trust policy allows sts:AssumeRole*, not %s' % (w, a))
        cond = s.get('Condition', {})
        if not isinstance(cond, dict):
            p.append('%s: Condition is not an object' % w)
            continue
        for op, block in cond.items():
            setop, base, _ = split_op(op)
            if base not in STRING_OPS | ARN_OPS | OTHER_OPS:
                p.append('%s: unknown condition operator %s' % (w, op))
            if not isinstance(block, dict) or not block:
                p.append('%s: %s needs {key: value}' % (w, op))
                continue
            for key, vals in block.items():
                if not key_known(key, issuers):
                    p.append('%s: %s is not a known condition key' % (w, key))
                for v in as_list(vals):
                    if not isinstance(v, str):
                        p.append('%s: %s: the value %r must be a string' % (w, key, v))
                if base == 'Bool':
                    for v in as_list(vals):
                        if v not in ('true', 'false'):
                            p.append('%s: Bool %s: %r is neither "true" nor "false"' % (w, key, v))
                if key.lower() == 'ec2:createaction':
                    for v in as_list(vals):
                        if isinstance(v, str) and not models.actions_matching('ec2:' + v):
                            p.append('%s: ec2:CreateAction %s names no EC2 operation' % (w, v))
                if key.lower() == 'iam:passedtoservice':
                    for v in as_list(vals):
                        if not re.fullmatch(r'[a-z0-9.-]+\.amazonaws\.com(\.cn)?', str(v)):
                            p.append('%s: iam:PassedToService %r is not a service principal'
                                     % (w, v))
    return p


def managed_policy_problems(arns, where):
    p = []
    for a in arns:
        m = re.fullmatch(r'arn:[^:]+:iam::aws:policy/(.+)', a)
        if not m or m.group(1) not in AWS_MANAGED_POLICIES:
            p.append('%s: %s is not an AWS managed policy the kit knows (%s)'
                     % (where, a, ', '.join(sorted(AWS_MANAGED_POLICIES))))
    return p


# ---------------------------------------------------------------------------
# the decision

class Request:
    """One authorization: action ('ec2:CreateFleet'), resource ARN, and the request
    context ({condition key: value or [values]}); why says which part of a call it is."""

    def __init__(self, action, resource, context=None, why=''):
        self.action, self.resource, self.why = action, resource, why
        self.context = {k.lower(): as_list(v) for k, v in (context or {}).items()}

    def __repr__(self):
        return '%s on %s%s' % (self.action, self.resource, ' (%s)' % self.why if self.why else '')


def _match(op, pattern, value):
    if op in ('StringEquals', 'StringNotEquals', 'ArnEquals', 'ArnNotEquals'):
        return pattern == value
    if op in ('StringEqualsIgnoreCase', 'StringNotEqualsIgnoreCase'):
        return pattern.lower() == value.lower()
    if op in ('StringLike', 'StringNotLike', 'ArnLike', 'ArnNotLike'):
        return fnmatch.fnmatchcase(value, pattern)
    if op == 'Bool':
        return pattern.lower() == value.lower()
    raise ValueError('condition operator %s is not evaluated here' % op)


def condition_holds(op, key, vals, context):
    setop, base, ifexists = split_op(op)
    have = context.get(key.lower())
    vals = [str(v) for v in as_list(vals)]
    if base == 'Null':
        return (have is None) == (vals[0].lower() == 'true')
    if have is None:
        return ifexists or setop == 'all'
    negated = 'Not' in base
    if negated:
        test = lambda v: not any(_match(base, p, v) for p in vals)  # noqa: E731
    else:
        test = lambda v: any(_match(base, p, v) for p in vals)  # noqa: E731
    if setop == 'all':
        return all(test(v) for v in have)
    return any(test(v) for v in have)


def statement_applies(s, req):
    acts = as_list(s.get('Action', []))
    if 'NotAction' in s:
        if any(fnmatch.fnmatchcase(req.action.lower(), a.lower()) for a in as_list(s['NotAction'])):
            return False
    elif not any(fnmatch.fnmatchcase(req.action.lower(), a.lower()) for a in acts):
        return False
    if 'NotResource' in s:
        if any(fnmatch.fnmatchcase(req.resource, r) for r in as_list(s['NotResource'])):
            return False
    elif not any(fnmatch.fnmatchcase(req.resource, r) for r in as_list(s.get('Resource', '*'))):
        return False
    for op, block in (s.get('Condition') or {}).items():
        for key, vals in block.items():
            if not condition_holds(op, key, vals, req.context):
                return False
    return True


def decide(doc, req):
    """('Allow', sid) / ('Deny', sid) / ('ImplicitDeny', None) of one identity policy."""
    allowed = None
    for i, s in enumerate(as_list(doc['Statement'])):
        if statement_applies(s, req):
            sid = s.get('Sid') or 'Statement[%d]' % i
            if s['Effect'] == 'Deny':
                return 'Deny', sid
            allowed = allowed or sid
    return ('Allow', allowed) if allowed else ('ImplicitDeny', None)


# ---------------------------------------------------------------------------
# what IAM authorizes for one AWS call (a line of the simulator's call log,
# tests/sim/aws_calllog.py)

class Undecidable(Exception):
    """The call names something that does not exist: what AWS answers then (a NotFound or
    an AccessDenied) does not depend on the policy alone."""


NOT_FOUND = re.compile(r'.*(NotFound|NoSuchEntity|DoesNotExist|NonExistent).*')

# the resource type of an EC2 id prefix
EC2_ID_TYPES = {'i': 'instance', 'lt': 'launch-template', 'vol': 'volume', 'eni': 'network-interface',
                'fleet': 'fleet', 'sir': 'spot-instances-request', 'ami': 'image',
                'sg': 'security-group', 'subnet': 'subnet'}


def tagspecs(params, prefix='TagSpecification'):
    """{resource type: {key: value}} of a Query request's tag specifications."""
    out = {}
    rx = re.compile(re.escape(prefix) + r'\.(\d+)\.(ResourceType|Tag\.(\d+)\.(Key|Value))$')
    raw = {}
    for k, v in params.items():
        m = rx.match(k)
        if m:
            spec = raw.setdefault(m.group(1), {'tags': {}})
            if m.group(2) == 'ResourceType':
                spec['type'] = v
            else:
                spec['tags'].setdefault(m.group(3), {})[m.group(4)] = v
    for spec in raw.values():
        tags = out.setdefault(spec.get('type', '?'), {})
        for t in spec['tags'].values():
            tags[t.get('Key', '')] = t.get('Value', '')
    return out


def numbered(params, rx):
    return [v for k, v in sorted(params.items()) if re.fullmatch(rx, k)]


def tag_context(request=None, resource=None):
    c = {}
    for k, v in (request or {}).items():
        c['aws:RequestTag/' + k] = v
    if request:
        c['aws:TagKeys'] = sorted(request)
    for k, v in (resource or {}).items():
        c['aws:ResourceTag/' + k] = v
    return c


def authorizations(call):
    """[Request] that IAM evaluates for one logged call; [] for calls that need no
    permission (sts:GetCallerIdentity: "No permissions are required to perform this
    operation", STS API Reference) or are no AWS API (IMDS); raises Undecidable."""
    svc, action, params = call['service'], call['action'], call.get('params') or {}
    if NOT_FOUND.match(call.get('code') or '') and not action.startswith(('Describe', 'List')):
        raise Undecidable('%s:%s was answered %s' % (svc, action, call['code']))
    R, A, P = call['region'], call['account'], 'aws'
    res = call.get('resources') or {}
    arn = lambda typ, rid, acct=A: 'arn:%s:ec2:%s:%s:%s/%s' % (P, R, acct, typ, rid)  # noqa: E731
    region = {'aws:RequestedRegion': R}
    if svc == 'imds' or (svc == 'sts' and action == 'GetCallerIdentity'):
        return []
    if svc == 'sts' and action == 'AssumeRoleWithWebIdentity':
        return []  # decided by the role's trust policy, not the caller's (checked statically)
    out = []
    if svc == 'ec2':
        if action.startswith('Describe'):
            return [Request('ec2:' + action, '*', region)]
        if action in ('CreateFleet', 'RunInstances'):
            lts = list((res.get('launchTemplates') or {}).items())
            named = numbered(params, r'(?:LaunchTemplateConfigs\.\d+\.LaunchTemplateSpecification\.|'
                                     r'LaunchTemplate\.)LaunchTemplate(?:Id|Name)')
            if named and not lts:
                raise Undecidable('%s names launch template %s, which does not exist' % (action, named))
            own = tagspecs(params)
            spot = (params.get('TargetCapacitySpecification.DefaultTargetCapacityType') == 'spot'
                    or params.get('InstanceMarketOptions.MarketType') == 'spot')
            created = ['instance', 'volume', 'network-interface'] + (['fleet'] if action == 'CreateFleet' else []) \
                + (['spot-instances-request'] if spot else [])
            datas = [lt['data'] for _, lt in lts] or [{}]
            for rt in created:
                tags = {}
                for _, lt in lts:
                    tags.update(lt['tagspecs'].get(rt) or {})
                tags.update(own.get(rt) or {})
                ctx = dict(region, **tag_context(tags))
                out.append(Request('ec2:' + action, arn(rt, '*'), ctx, 'creates a %s' % rt))
                if tags:
                    out.append(Request('ec2:CreateTags', arn(rt, '*'),
                                       dict(ctx, **{'ec2:CreateAction': action}),
                                       'tags the %s it creates' % rt))
            for lid, lt in lts:
                out.append(Request('ec2:' + action, arn('launch-template', lid),
                                   dict(region, **tag_context(resource=lt['tags'])),
                                   'launches from %s' % lt['name']))
            images = set(numbered(params, r'(?:LaunchTemplateConfigs\.\d+\.Overrides\.\d+\.)?ImageId'))
            subnets = set(numbered(params, r'(?:LaunchTemplateConfigs\.\d+\.Overrides\.\d+\.)?SubnetId'))
            sgs = set(numbered(params, r'SecurityGroupId\.\d+'))
            profiles = set(numbered(params, r'IamInstanceProfile\.(?:Name|Arn)'))
            crs, pgs = set(), set()
            for d in datas:
                if d.get('ImageId'):
                    images.add(d['ImageId'])
                sgs |= set(as_list(d.get('SecurityGroupId') or []))
                for ni in d.get('NetworkInterface') or []:
                    if isinstance(ni, dict):
                        sgs |= set(as_list(ni.get('SecurityGroupId') or []))
                        if ni.get('SubnetId'):
                            subnets.add(ni['SubnetId'])
                prof = d.get('IamInstanceProfile') or {}
                if prof.get('Name') or prof.get('Arn'):
                    profiles.add(prof.get('Name') or prof['Arn'])
                crt = (d.get('CapacityReservationSpecification') or {}).get('CapacityReservationTarget') or {}
                if crt.get('CapacityReservationId'):
                    crs.add(crt['CapacityReservationId'])
                pl = d.get('Placement') or {}
                if pl.get('GroupName') or pl.get('GroupId'):
                    pgs.add(pl.get('GroupName') or pl.get('GroupId'))
            for i in sorted(images):
                out.append(Request('ec2:' + action, 'arn:%s:ec2:%s::image/%s' % (P, R, i), region,
                                   'uses image %s' % i))
                out.append(Request('ec2:' + action, 'arn:%s:ec2:%s::snapshot/snap-of-%s' % (P, R, i),
                                   region, "uses the image's snapshots"))
            for kind, ids in (('subnet', subnets), ('security-group', sgs),
                              ('capacity-reservation', crs), ('placement-group', pgs)):
                for i in sorted(ids):
                    out.append(Request('ec2:' + action, arn(kind, i), region, 'uses %s %s' % (kind, i)))
            for name in sorted(profiles):
                prof = (res.get('instanceProfiles') or {}).get(name.rsplit('/', 1)[-1])
                if not prof:
                    raise Undecidable('%s uses instance profile %s, which does not exist' % (action, name))
                for role in prof['roles']:
                    out.append(Request('iam:PassRole', role, {'iam:PassedToService': 'ec2.amazonaws.com'},
                                       'passes the role of instance profile %s' % name))
            if action == 'CreateFleet':
                # an instant fleet launches with the caller's ec2:RunInstances permission on
                # the same resources (EC2 User Guide, "EC2 Fleet prerequisites")
                out += [Request('ec2:RunInstances', r.resource, r.context, r.why + ', as the fleet runs it')
                        for r in out if r.action == 'ec2:CreateFleet']
            return out
        if action == 'CreateLaunchTemplate':
            tags = tagspecs(params).get('launch-template') or {}
            ctx = dict(region, **tag_context(tags))
            out.append(Request('ec2:CreateLaunchTemplate', arn('launch-template', '*'), ctx,
                               'creates a launch template'))
            if tags:
                out.append(Request('ec2:CreateTags', arn('launch-template', '*'),
                                   dict(ctx, **{'ec2:CreateAction': 'CreateLaunchTemplate'}),
                                   'tags the launch template it creates'))
            return out
        if action == 'DeleteLaunchTemplate':
            lts = res.get('launchTemplates') or {}
            if not lts:
                raise Undecidable('DeleteLaunchTemplate of a launch template that does not exist')
            return [Request('ec2:DeleteLaunchTemplate', arn('launch-template', lid),
                            dict(region, **tag_context(resource=lt['tags'])), lt['name'])
                    for lid, lt in lts.items()]
        if action in ('TerminateInstances', 'CreateTags'):
            key = r'InstanceId\.\d+' if action == 'TerminateInstances' else r'ResourceId\.\d+'
            request_tags = {}
            if action == 'CreateTags':
                for k, v in params.items():
                    m = re.fullmatch(r'Tag\.(\d+)\.Key', k)
                    if m:
                        request_tags[v] = params.get('Tag.%s.Value' % m.group(1), '')
            known = res.get('instances') or {}
            for rid in numbered(params, key):
                if rid not in known:
                    raise Undecidable('%s of %s, which does not exist' % (action, rid))
                typ = EC2_ID_TYPES.get(rid.split('-')[0], rid.split('-')[0])
                out.append(Request('ec2:' + action, arn(typ, rid),
                                   dict(region, **tag_context(request_tags, known[rid])), rid))
            return out
        raise ValueError('tests/awskit/iam.py does not know what ec2:%s authorizes; add it to '
                         'authorizations()' % action)
    if svc == 'iam':
        profiles = res.get('instanceProfiles') or {}
        name = params.get('InstanceProfileName', '')
        prof = profiles.get(name)
        parn = prof['arn'] if prof else 'arn:%s:iam::%s:instance-profile%s%s' % (
            P, A, params.get('Path', '/'), name)
        if action == 'ListInstanceProfiles':
            return [Request('iam:ListInstanceProfiles', '*')]
        if action == 'CreateInstanceProfile':
            tags = {}
            for k, v in params.items():
                m = re.fullmatch(r'Tags\.member\.(\d+)\.Key', k)
                if m:
                    tags[v] = params.get('Tags.member.%s.Value' % m.group(1), '')
            out.append(Request('iam:CreateInstanceProfile', parn, tag_context(tags),
                               'creates an instance profile'))
            if tags:
                # creating with tags needs the tagging permission too (IAM User Guide, "Tags
                # for AWS Identity and Access Management resources": permission to create
                # and to tag); the profile's tags are those it is created with
                out.append(Request('iam:TagInstanceProfile', parn, tag_context(tags, tags),
                                   'tags the instance profile it creates'))
            return out
        if not prof:
            raise Undecidable('iam:%s of instance profile %s, which does not exist' % (action, name))
        if action == 'GetInstanceProfile':
            return [Request('iam:GetInstanceProfile', parn)]
        if action in ('AddRoleToInstanceProfile', 'RemoveRoleFromInstanceProfile',
                      'DeleteInstanceProfile'):
            out.append(Request('iam:' + action, parn, tag_context(resource=prof['tags']), name))
            if action == 'AddRoleToInstanceProfile':
                # "you must have iam:PassRole on the role" (IAM API Reference,
                # AddRoleToInstanceProfile); the role goes to EC2 with the profile
                out.append(Request('iam:PassRole', 'arn:%s:iam::%s:role/%s' % (P, A, params.get('RoleName')),
                                   {'iam:PassedToService': 'ec2.amazonaws.com'},
                                   'passes role %s' % params.get('RoleName')))
            return out
        raise ValueError('tests/awskit/iam.py does not know what iam:%s authorizes' % action)
    if svc == 'sqs':
        q = params.get('QueueName') or (params.get('QueueUrl') or '').rstrip('/').rsplit('/', 1)[-1]
        return [Request('sqs:' + action, 'arn:%s:sqs:%s:%s:%s' % (P, R, A, q))]
    if svc == 'ssm' and action == 'GetParameter':
        name = params.get('Name', '')
        path = name if name.startswith('/') else '/' + name
        acct = '' if name.startswith('/aws/service/') else A
        return [Request('ssm:GetParameter', 'arn:%s:ssm:%s:%s:parameter%s' % (P, R, acct, path))]
    if svc == 'pricing':
        return [Request('pricing:' + action, '*')]
    raise ValueError('tests/awskit/iam.py does not know what %s:%s authorizes' % (svc, action))


def render(text, values):
    """The plain JSON of manifests/aws/ with its ${NAME} placeholders filled (what envsubst
    does); a placeholder without a value is an error."""
    def one(m):
        if m.group(1) not in values:
            raise KeyError('no value for ${%s}' % m.group(1))
        return values[m.group(1)]
    return re.sub(r'\$\{([A-Z_][A-Z0-9_]*)\}', one, text)
