"""AWS simulator, identity: STS (AssumeRoleWithWebIdentity, AssumeRole, GetCallerIdentity),
the instance metadata service (IMDSv2 tokens, region, role credentials) and the container
credentials endpoint (the EKS Pod Identity agent's and ECS's GET with an Authorization token).

A mixin of aws.AwsSim: it uses the simulator's state and lock (self.lock) and the
helpers of aws_util.  Python 3 standard library only; shares no code with nodewarden.
"""

from aws_util import *  # noqa: F401,F403


class StsImdsMixin:
    # =====================================================================
    # STS
    def _sts_error(self, code, message, rid, status=400, typ='Sender'):
        body = ('<ErrorResponse xmlns="%s"><Error><Type>%s</Type><Code>%s</Code><Message>%s</Message>'
                '</Error><RequestId>%s</RequestId></ErrorResponse>'
                % (STS_NS, typ, escape(code), escape(message), rid))
        return status, {'Content-Type': 'text/xml'}, body.encode('utf-8')

    def _sts(self, method, raw_path, raw_query, headers, body, params):
        rid = str(uuid.uuid4())
        action = params['Action']
        if params.get('Version') != STS_VERSION:
            self._log('sts', action, params, 400, 'InvalidParameterValue')
            return self._sts_error('InvalidParameterValue', 'Version must be %s' % STS_VERSION, rid)
        self._latency(action)
        if action == 'GetCallerIdentity':
            try:
                akid = self._verify(method, raw_path, raw_query, headers, body, 'sts')
            except sigv4.SigError as se:
                code = {'unknown-key': 'InvalidClientTokenId', 'expired': 'ExpiredToken',
                        'token': 'InvalidClientTokenId', 'missing': 'MissingAuthenticationToken',
                        'malformed': 'IncompleteSignature'}.get(se.kind, 'SignatureDoesNotMatch')
                self._log('sts', action, params, 403, code)
                return self._sts_error(code, se.message, rid, 403)
            with self.lock:
                known = (self.temp_creds.get(akid) or {}).get('arn')
            arn = ('arn:aws:iam::%s:user/nodewarden' % self.account if akid == self.access_key else
                   known or 'arn:aws:sts::%s:assumed-role/%s/session' % (self.account, self.role_name))
            self._log('sts', action, params, 200)
            xml = ('<GetCallerIdentityResponse xmlns="%s"><GetCallerIdentityResult><Arn>%s</Arn>'
                   '<UserId>%s</UserId><Account>%s</Account></GetCallerIdentityResult><ResponseMetadata>'
                   '<RequestId>%s</RequestId></ResponseMetadata></GetCallerIdentityResponse>'
                   % (STS_NS, arn, akid, self.account, rid))
            return 200, {'Content-Type': 'text/xml'}, xml.encode()
        if action == 'AssumeRole':
            return self._assume_role(method, raw_path, raw_query, headers, body, params, rid)
        # AssumeRoleWithWebIdentity: unsigned, like the real one
        for k in ('RoleArn', 'RoleSessionName', 'WebIdentityToken'):
            if not params.get(k):
                self._log('sts', action, params, 400, 'MissingParameter')
                return self._sts_error('MissingParameter', 'The request must contain the parameter %s' % k,
                                       rid)
        m = re.fullmatch(r'arn:aws:iam::(\d{12}):role/([\w+=,.@/-]{1,512})', params['RoleArn'])
        if not m:
            self._log('sts', action, params, 400, 'ValidationError')
            return self._sts_error('ValidationError', "1 validation error detected: Value '%s' at "
                                   "'roleArn' failed to satisfy constraint" % params['RoleArn'], rid)
        if not re.fullmatch(r'[\w+=,.@-]{2,64}', params['RoleSessionName']):
            self._log('sts', action, params, 400, 'ValidationError')
            return self._sts_error('ValidationError', "1 validation error detected: Value at "
                                   "'roleSessionName' failed to satisfy constraint", rid)
        dur = params.get('DurationSeconds')
        try:
            dur = int(dur) if dur else 3600
            if not 900 <= dur <= 43200:
                raise ValueError
        except ValueError:
            self._log('sts', action, params, 400, 'ValidationError')
            return self._sts_error('ValidationError', "1 validation error detected: Value '%s' at "
                                   "'durationSeconds' failed to satisfy constraint: Member must have "
                                   "value between 900 and 43200" % params.get('DurationSeconds'), rid)
        claims = _jwt_claims(params['WebIdentityToken'])
        with self.lock:
            reject = self.faults['reject_web_identity']
        if claims is None or reject:
            self._log('sts', action, params, 400, 'InvalidIdentityToken')
            return self._sts_error('InvalidIdentityToken', "Couldn't retrieve verification key from "
                                   "your identity provider" if reject else 'The web identity token '
                                   'is not a well-formed JWT', rid)
        if isinstance(claims.get('exp'), (int, float)) and claims['exp'] < self.clock():
            self._log('sts', action, params, 400, 'ExpiredTokenException')
            return self._sts_error('ExpiredTokenException', 'Token expired: current date/time %d must be '
                                   'before the expiration date/time %d' % (self.clock(), claims['exp']),
                                   rid)
        ttl = min(dur, self.credential_ttl)
        role = m.group(2).split('/')[-1]
        akid, secret, token, exp = self._new_temp_creds(ttl, 'arn:aws:sts::%s:assumed-role/%s/%s' % (
            m.group(1), role, params['RoleSessionName']))
        self._log('sts', action, params, 200)
        xml = ('<AssumeRoleWithWebIdentityResponse xmlns="%s"><AssumeRoleWithWebIdentityResult>'
               '<SubjectFromWebIdentityToken>%s</SubjectFromWebIdentityToken><Audience>%s</Audience>'
               '<AssumedRoleUser><Arn>arn:aws:sts::%s:assumed-role/%s/%s</Arn>'
               '<AssumedRoleId>AROA%s:%s</AssumedRoleId></AssumedRoleUser><Credentials>'
               '<SessionToken>%s</SessionToken><SecretAccessKey>%s</SecretAccessKey>'
               '<Expiration>%s</Expiration><AccessKeyId>%s</AccessKeyId></Credentials>'
               '<Provider>%s</Provider></AssumeRoleWithWebIdentityResult><ResponseMetadata>'
               '<RequestId>%s</RequestId></ResponseMetadata></AssumeRoleWithWebIdentityResponse>'
               % (STS_NS, escape(str(claims.get('sub', ''))), escape(str(claims.get('aud', 'sts.amazonaws.com'))),
                  m.group(1), escape(role), escape(params['RoleSessionName']), _hex(17).upper(),
                  escape(params['RoleSessionName']), token, escape(secret), iso8601s(exp), akid,
                  escape(str(claims.get('iss', ''))), rid))
        return 200, {'Content-Type': 'text/xml'}, xml.encode('utf-8')

    def _assume_role(self, method, raw_path, raw_query, headers, body, params, rid):
        """AssumeRole: signed by the caller's credentials (which must be valid); the role's
        required ExternalId (control POST /aws/assume-role) must match; a chained role
        (the caller's credentials are a role's) may last at most an hour, as in AWS."""
        action = 'AssumeRole'
        try:
            akid = self._verify(method, raw_path, raw_query, headers, body, 'sts')
        except sigv4.SigError as se:
            code = {'unknown-key': 'InvalidClientTokenId', 'expired': 'ExpiredToken',
                    'token': 'InvalidClientTokenId', 'missing': 'MissingAuthenticationToken',
                    'malformed': 'IncompleteSignature'}.get(se.kind, 'SignatureDoesNotMatch')
            self._log('sts', action, params, 403, code)
            return self._sts_error(code, se.message, rid, 403)
        for k in ('RoleArn', 'RoleSessionName'):
            if not params.get(k):
                self._log('sts', action, params, 400, 'MissingParameter')
                return self._sts_error('MissingParameter', 'The request must contain the parameter %s' % k,
                                       rid)
        m = re.fullmatch(r'arn:aws:iam::(\d{12}):role/([\w+=,.@/-]{1,512})', params['RoleArn'])
        if not m or not re.fullmatch(r'[\w+=,.@-]{2,64}', params['RoleSessionName']):
            self._log('sts', action, params, 400, 'ValidationError')
            return self._sts_error('ValidationError', '1 validation error detected: RoleArn or '
                                   'RoleSessionName failed to satisfy constraint', rid)
        with self.lock:
            caller = (self.temp_creds.get(akid) or {}).get('arn') or ''
            want_ext = self.role_external_ids.get(params['RoleArn'])
        try:
            dur = int(params.get('DurationSeconds') or 3600)
            if not 900 <= dur <= 43200:
                raise ValueError
        except ValueError:
            self._log('sts', action, params, 400, 'ValidationError')
            return self._sts_error('ValidationError', "1 validation error detected: Value at "
                                   "'durationSeconds' failed to satisfy constraint", rid)
        if ':assumed-role/' in caller and dur > 3600:
            self._log('sts', action, params, 400, 'ValidationError')
            return self._sts_error('ValidationError', 'The requested DurationSeconds exceeds the 1 hour '
                                   'session limit for roles assumed by role chaining.', rid)
        if want_ext is not None and params.get('ExternalId') != want_ext:
            self._log('sts', action, params, 403, 'AccessDenied')
            return self._sts_error('AccessDenied', 'User: %s is not authorized to perform: '
                                   'sts:AssumeRole on resource: %s' % (caller or akid, params['RoleArn']),
                                   rid, 403)
        role = m.group(2).split('/')[-1]
        arn = 'arn:aws:sts::%s:assumed-role/%s/%s' % (m.group(1), role, params['RoleSessionName'])
        akid2, secret, token, exp = self._new_temp_creds(min(dur, self.credential_ttl), arn)
        self._log('sts', action, params, 200)
        xml = ('<AssumeRoleResponse xmlns="%s"><AssumeRoleResult><AssumedRoleUser><Arn>%s</Arn>'
               '<AssumedRoleId>AROA%s:%s</AssumedRoleId></AssumedRoleUser><Credentials>'
               '<AccessKeyId>%s</AccessKeyId><SecretAccessKey>%s</SecretAccessKey>'
               '<SessionToken>%s</SessionToken><Expiration>%s</Expiration></Credentials>'
               '</AssumeRoleResult><ResponseMetadata><RequestId>%s</RequestId></ResponseMetadata>'
               '</AssumeRoleResponse>'
               % (STS_NS, escape(arn), _hex(17).upper(), escape(params['RoleSessionName']), akid2,
                  escape(secret), token, iso8601s(exp), rid))
        return 200, {'Content-Type': 'text/xml'}, xml.encode('utf-8')

    # =====================================================================
    # container credentials
    def _container_credentials(self, path, headers):
        """The EKS Pod Identity agent's and ECS's credentials endpoint: GET with the
        Authorization token (when one is configured), JSON credentials that expire."""
        with self.lock:
            want = self.container_token
        auth = hget(headers, 'Authorization')
        js = {'Content-Type': 'application/json'}
        if want is not None and auth != want:
            self._log('container', 'GET ' + path, {}, 401 if not auth else 403)
            body = {'code': 'AccessDenied' if auth else 'Unauthorized',
                    'message': 'the Authorization token is %s' % ('wrong' if auth else 'missing')}
            return (401 if not auth else 403), js, json.dumps(body).encode()
        role = 'pod-identity' if path == '/v1/credentials' else 'ecs-task'
        arn = 'arn:aws:sts::%s:assumed-role/%s/%s' % (self.account, role, role)
        akid, secret, token, exp = self._new_temp_creds(self.credential_ttl, arn)
        self._log('container', 'GET ' + path, {}, 200)
        body = {'AccessKeyId': akid, 'SecretAccessKey': secret, 'Token': token,
                'AccountId': self.account, 'Expiration': iso8601s(exp)}
        return 200, js, json.dumps(body).encode()

    # =====================================================================
    # IMDSv2
    def _imds(self, method, path, headers):
        now = self.clock()
        txt = {'Content-Type': 'text/plain'}
        if path == '/latest/api/token':
            if method != 'PUT':
                return 405, txt, b''
            if hget(headers, 'X-Forwarded-For'):
                return 403, txt, b''
            ttl = hget(headers, 'X-aws-ec2-metadata-token-ttl-seconds')
            try:
                ttl = int(ttl)
                if not 1 <= ttl <= 21600:
                    raise ValueError
            except (TypeError, ValueError):
                self._log('imds', 'PUT token', {}, 400)
                return 400, txt, b''
            tok = base64.urlsafe_b64encode(secrets.token_bytes(42)).decode()
            with self.lock:
                self.imds_tokens = {k: v for k, v in self.imds_tokens.items() if v > now}
                self.imds_tokens[tok] = now + ttl
            self._log('imds', 'PUT token', {}, 200)
            return 200, dict(txt, **{'X-aws-ec2-metadata-token-ttl-seconds': str(ttl)}), tok.encode()
        if method not in ('GET', 'HEAD'):
            return 405, txt, b''
        tok = hget(headers, 'X-aws-ec2-metadata-token')
        with self.lock:
            exp = self.imds_tokens.get(tok) if tok else None
        if exp is None or exp <= now:
            self._log('imds', 'GET ' + path, {}, 401)
            return 401, txt, b''
        md = '/latest/meta-data/'
        pref = md + 'iam/security-credentials/'
        zone = self.zones[0]
        static = {
            md + 'placement/region': self.region,
            md + 'placement/availability-zone': zone,
            md + 'placement/availability-zone-id': self.zone_ids[zone],
            md + 'instance-id': 'i-0controller000000',
            md + 'instance-type': 'm6i.large',
            md + 'local-ipv4': '10.0.0.5',
            md + 'local-hostname': 'ip-10-0-0-5.%s' % self.dns_suffix,
            md + 'ami-id': next(iter(self.images)),
            md + 'iam/security-credentials': self.role_name,
            pref: self.role_name,
        }
        if path in static:
            self._log('imds', 'GET ' + path, {}, 200)
            return 200, txt, static[path].encode()
        if path == '/latest/dynamic/instance-identity/document':
            doc = {'accountId': self.account, 'architecture': 'x86_64', 'availabilityZone': zone,
                   'imageId': next(iter(self.images)), 'instanceId': 'i-0controller000000',
                   'instanceType': 'm6i.large', 'privateIp': '10.0.0.5', 'region': self.region,
                   'version': '2017-09-30', 'pendingTime': iso8601s(self.start_time)}
            return 200, {'Content-Type': 'application/json'}, json.dumps(doc, indent=2).encode()
        if path == pref + self.role_name:
            with self.lock:
                c = self.imds_cred
                if c is None or now >= c['expires'] - 0.2 * self.credential_ttl:
                    akid, secret, token, expires = self._new_temp_creds(self.credential_ttl)
                    c = {'akid': akid, 'secret': secret, 'token': token, 'expires': expires,
                         'updated': now}
                    self.imds_cred = c
            self._log('imds', 'GET ' + path, {}, 200)
            body = {'Code': 'Success', 'LastUpdated': iso8601s(c['updated']), 'Type': 'AWS-HMAC',
                    'AccessKeyId': c['akid'], 'SecretAccessKey': c['secret'], 'Token': c['token'],
                    'Expiration': iso8601s(c['expires'])}
            return 200, {'Content-Type': 'text/plain'}, json.dumps(body, indent=2).encode()
        self._log('imds', 'GET ' + path, {}, 404)
        return 404, {'Content-Type': 'text/html'}, b'<?xml version="1.0" encoding="iso-8859-1"?>\n' \
            b'<title>404 - Not Found</title>'
