"""AWS simulator, IAM: instance profiles (CreateInstanceProfile, GetInstanceProfile,
AddRoleToInstanceProfile, RemoveRoleFromInstanceProfile, DeleteInstanceProfile,
ListInstanceProfiles) and the roles they hold, on the Query protocol (version 2010-05-08,
SigV4 service "iam", signed for us-east-1 as the global endpoint is), with the errors of
the IAM API reference (NoSuchEntity 404, EntityAlreadyExists / LimitExceeded /
DeleteConflict 409, ValidationError 400).

A mixin of aws.AwsSim: it uses the simulator's state and lock (self.lock) and the
helpers of aws_util.  Python 3 standard library only; shares no code with nodewarden.
"""

from aws_util import *  # noqa: F401,F403

IAM_NS = 'https://iam.amazonaws.com/doc/2010-05-08/'
IAM_VERSION = '2010-05-08'
IAM_ACTIONS = ('CreateInstanceProfile', 'GetInstanceProfile', 'AddRoleToInstanceProfile',
               'RemoveRoleFromInstanceProfile', 'DeleteInstanceProfile', 'ListInstanceProfiles')
IAM_REGION = 'us-east-1'
_NAME = re.compile(r'[\w+=,.@-]{1,128}')


class IamError(Exception):
    def __init__(self, code, message, status=400):
        super().__init__(message)
        self.code, self.message, self.status = code, message, status


class IamMixin:
    def _seed_iam(self):
        """Roles a test's EC2NodeClass may name, each with the instance profile of the same
        name the IAM console makes with an EC2 role."""
        c = self.cluster
        self.iam_roles = {}
        self.instance_profiles = {}
        # nodewarden-node-<cluster>: the node role manifests/aws/cloudformation.yaml makes
        for r in (self.role_name, 'nodewarden-node', 'nodewarden-node-%s' % c,
                  'KarpenterNodeRole-%s' % c, 'KarpenterNodeRole',
                  'KarpenterNodeRole-my-cluster', 'KarpenterNodeRole-sim-cluster',
                  'KarpenterNodeRole-demo', 'my-cluster-node'):
            self.iam_roles[r] = {'name': r, 'id': 'AROA' + _hex(16).upper(),
                                 'arn': 'arn:aws:iam::%s:role/%s' % (self.account, r)}
            self.instance_profiles[r] = self._new_profile(r, '/', {}, [r])

    def _new_profile(self, name, path, tags, roles):
        return {'name': name, 'path': path, 'id': 'AIPA' + _hex(16).upper(),
                'arn': 'arn:aws:iam::%s:instance-profile%s%s' % (self.account, path, name),
                'created': self.clock(), 'tags': dict(tags), 'roles': list(roles)}

    def _iam_error(self, e, rid):
        typ = 'Receiver' if e.status >= 500 else 'Sender'
        body = ('<ErrorResponse xmlns="%s"><Error><Type>%s</Type><Code>%s</Code><Message>%s</Message>'
                '</Error><RequestId>%s</RequestId></ErrorResponse>'
                % (IAM_NS, typ, escape(e.code), escape(e.message), rid))
        return e.status, {'Content-Type': 'text/xml'}, body.encode('utf-8')

    def _profile_xml(self, p):
        roles = ''.join('<member><Path>/</Path><RoleName>%s</RoleName><RoleId>%s</RoleId>'
                        '<Arn>%s</Arn></member>' % (escape(r), self.iam_roles[r]['id'],
                                                   escape(self.iam_roles[r]['arn']))
                        for r in p['roles'] if r in self.iam_roles)
        tags = ''.join('<member><Key>%s</Key><Value>%s</Value></member>' % (escape(k), escape(v))
                       for k, v in p['tags'].items())
        return ('<InstanceProfileName>%s</InstanceProfileName><Path>%s</Path><InstanceProfileId>%s'
                '</InstanceProfileId><Arn>%s</Arn><CreateDate>%s</CreateDate><Roles>%s</Roles>'
                '<Tags>%s</Tags>' % (escape(p['name']), escape(p['path']), p['id'], escape(p['arn']),
                                     iso8601(p['created']), roles, tags))

    def _iam_profile(self, params):
        name = params.get('InstanceProfileName')
        if not name:
            raise IamError('ValidationError', 'The request must contain the parameter '
                                              'InstanceProfileName')
        p = self.instance_profiles.get(name)
        if not p:
            raise IamError('NoSuchEntity', 'Instance Profile %s cannot be found.' % name, 404)
        return p

    def _iam(self, method, raw_path, raw_query, headers, body, params):
        rid = str(uuid.uuid4())
        action = params['Action']
        try:
            if params.get('Version') != IAM_VERSION:
                raise IamError('InvalidParameterValue', 'Version must be %s' % IAM_VERSION)
            try:
                sigv4.verify(method, raw_path, raw_query, headers, body, self._lookup, IAM_REGION,
                             'iam', self.clock())
            except sigv4.SigError as se:
                raise IamError({'unknown-key': 'InvalidClientTokenId', 'expired': 'ExpiredToken'}
                               .get(se.kind, 'SignatureDoesNotMatch'), se.message, 403)
            self._latency(action)
            with self.lock:
                result = getattr(self, '_iam_' + action)(params)
            self._log('iam', action, params, 200)
        except IamError as e:
            self._log('iam', action, params, e.status, e.code)
            return self._iam_error(e, rid)
        xml = ('<%sResponse xmlns="%s">%s<ResponseMetadata><RequestId>%s</RequestId>'
               '</ResponseMetadata></%sResponse>'
               % (action, IAM_NS, '<%sResult>%s</%sResult>' % (action, result, action)
                  if result is not None else '', rid, action))
        return 200, {'Content-Type': 'text/xml'}, xml.encode('utf-8')

    def _iam_CreateInstanceProfile(self, p):
        name = p.get('InstanceProfileName') or ''
        if not _NAME.fullmatch(name):
            raise IamError('ValidationError', "1 validation error detected: Value '%s' at "
                                              "'instanceProfileName' failed to satisfy constraint"
                                              % name[:200])
        path = p.get('Path', '/')
        if not re.fullmatch(r'/([\x21-\x7e]{0,510}/)?', path) or len(path) > 512:
            raise IamError('ValidationError', "1 validation error detected: Value '%s' at 'path' "
                                              "failed to satisfy constraint" % path[:200])
        if name in self.instance_profiles:
            raise IamError('EntityAlreadyExists', 'Instance Profile %s already exists.' % name, 409)
        tags = {}
        for t in unflatten(p, 'Tags.member') or []:
            if not isinstance(t, dict) or not t.get('Key'):
                raise IamError('ValidationError', 'Tag keys must be 1-128 characters')
            tags[t['Key']] = t.get('Value', '')
        if len(tags) > 50:
            raise IamError('LimitExceeded', 'Cannot exceed quota for TagsPerInstanceProfile: 50', 409)
        prof = self.instance_profiles[name] = self._new_profile(name, path, tags, [])
        return '<InstanceProfile>%s</InstanceProfile>' % self._profile_xml(prof)

    def _iam_GetInstanceProfile(self, p):
        return '<InstanceProfile>%s</InstanceProfile>' % self._profile_xml(self._iam_profile(p))

    def _iam_AddRoleToInstanceProfile(self, p):
        prof = self._iam_profile(p)
        role = p.get('RoleName') or ''
        if role not in self.iam_roles:
            raise IamError('NoSuchEntity', 'The role with name %s cannot be found.' % role, 404)
        if prof['roles']:
            raise IamError('LimitExceeded', 'Cannot exceed quota for InstanceSessionsPerInstance'
                                            'Profile: 1', 409)
        prof['roles'].append(role)
        return None

    def _iam_RemoveRoleFromInstanceProfile(self, p):
        prof = self._iam_profile(p)
        role = p.get('RoleName') or ''
        if role not in prof['roles']:
            raise IamError('NoSuchEntity', 'The role with name %s cannot be found.' % role, 404)
        prof['roles'].remove(role)
        return None

    def _iam_DeleteInstanceProfile(self, p):
        prof = self._iam_profile(p)
        if prof['roles']:
            raise IamError('DeleteConflict', 'Cannot delete entity, must remove roles from '
                                             'instance profile first.', 409)
        del self.instance_profiles[prof['name']]
        return None

    def _iam_ListInstanceProfiles(self, p):
        prefix = p.get('PathPrefix', '/')
        try:
            mx = int(p.get('MaxItems', '100'))
            start = int(p.get('Marker', '0') or 0)
        except ValueError:
            raise IamError('ValidationError', 'MaxItems and Marker must be numbers')
        if not 1 <= mx <= 1000:
            raise IamError('ValidationError', 'MaxItems must be between 1 and 1000')
        rows = sorted((v for v in self.instance_profiles.values() if v['path'].startswith(prefix)),
                      key=lambda v: v['name'])
        page = rows[start:start + mx]
        more = start + mx < len(rows)
        return ('<InstanceProfiles>%s</InstanceProfiles><IsTruncated>%s</IsTruncated>%s'
                % (''.join('<member>%s</member>' % self._profile_xml(v) for v in page),
                   'true' if more else 'false',
                   '<Marker>%d</Marker>' % (start + mx) if more else ''))
