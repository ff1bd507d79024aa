"""IMDSv2, STS (web identity, AssumeRole) and container credential flows (and that
their credentials verify in SigV4), SQS JSON protocol and the EventBridge-shaped
interruption events."""

import base64
import json
import os
import sys
import time
import unittest
import urllib.parse
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import aws  # noqa: E402
import awsclient  # noqa: E402
from awsclient import raw  # noqa: E402


def jwt(claims):
    enc = lambda d: base64.urlsafe_b64encode(json.dumps(d).encode()).decode().rstrip('=')  # noqa: E731
    return '%s.%s.%s' % (enc({'alg': 'RS256', 'kid': 'k1'}), enc(claims), 'c2ln')


def wait_for(pred, timeout=10.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.02)
    return pred()


class Base(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.sim = aws.AwsSim(cluster='demo', pending_seconds=0.05, shutdown_seconds=0.05)
        cls.srv = aws.serve(cls.sim)
        cls.ctl = awsclient.FakeControl()
        cls.sim.register_control(cls.ctl)
        cls.c = awsclient.Client(cls.srv.url, cls.sim.access_key, cls.sim.secret_key, cls.sim.region)

    @classmethod
    def tearDownClass(cls):
        cls.srv.close()
        cls.sim.stop()


class Credentials(Base):
    def imds_token(self, ttl='60'):
        st, h, tok = raw('PUT', self.srv.url + '/latest/api/token',
                         {'X-aws-ec2-metadata-token-ttl-seconds': ttl})
        return st, tok.decode()

    def test_imdsv2_flow_and_creds_verify(self):
        st, _, _ = raw('GET', self.srv.url + '/latest/meta-data/iam/security-credentials/')
        self.assertEqual(st, 401)                       # IMDSv1 refused
        self.assertEqual(self.imds_token('0')[0], 400)
        self.assertEqual(self.imds_token('21601')[0], 400)
        st, tok = self.imds_token()
        self.assertEqual(st, 200)
        h = {'X-aws-ec2-metadata-token': tok}
        st, _, role = raw('GET', self.srv.url + '/latest/meta-data/iam/security-credentials/', h)
        self.assertEqual(st, 200)
        role = role.decode().strip()
        st, _, body = raw('GET', self.srv.url + '/latest/meta-data/iam/security-credentials/' + role, h)
        self.assertEqual(st, 200)
        creds = json.loads(body)
        self.assertEqual(creds['Code'], 'Success')
        self.assertTrue(creds['AccessKeyId'].startswith('ASIA'))
        exp = aws.parse_time(creds['Expiration'])
        self.assertGreater(exp, time.time())
        st, _, region = raw('GET', self.srv.url + '/latest/meta-data/placement/region', h)
        self.assertEqual(region.decode(), self.sim.region)
        st, _, _ = raw('GET', self.srv.url + '/latest/meta-data/placement/region',
                       {'X-aws-ec2-metadata-token': 'forged'})
        self.assertEqual(st, 401)
        c = awsclient.Client(self.srv.url, creds['AccessKeyId'], creds['SecretAccessKey'],
                             self.sim.region, token=creds['Token'])
        st, _ = c.ec2('DescribeAvailabilityZones')
        self.assertEqual(st, 200)
        # the session token is part of the credentials: without it the key is refused
        c2 = awsclient.Client(self.srv.url, creds['AccessKeyId'], creds['SecretAccessKey'], self.sim.region)
        st, root = c2.ec2('DescribeAvailabilityZones')
        self.assertEqual((st, awsclient.error_code(root)), (401, 'AuthFailure'))

    def test_short_expiry_forces_refresh(self):
        self.ctl.call('POST', '/aws/credentials', {'ttlSeconds': 1})
        try:
            st, tok = self.imds_token()
            h = {'X-aws-ec2-metadata-token': tok}
            url = self.srv.url + '/latest/meta-data/iam/security-credentials/' + self.sim.role_name
            creds = json.loads(raw('GET', url, h)[2])
            c = awsclient.Client(self.srv.url, creds['AccessKeyId'], creds['SecretAccessKey'],
                                 self.sim.region, token=creds['Token'])
            self.assertTrue(wait_for(lambda: time.time() > aws.parse_time(creds['Expiration']) + 0.05))
            st, root = c.ec2('DescribeAvailabilityZones')
            self.assertEqual((st, awsclient.error_code(root)), (400, 'RequestExpired'))
            fresh = json.loads(raw('GET', url, h)[2])
            self.assertNotEqual(fresh['AccessKeyId'], creds['AccessKeyId'])
            c = awsclient.Client(self.srv.url, fresh['AccessKeyId'], fresh['SecretAccessKey'],
                                 self.sim.region, token=fresh['Token'])
            self.assertEqual(c.ec2('DescribeAvailabilityZones')[0], 200)
        finally:
            self.ctl.call('POST', '/aws/credentials', {'ttlSeconds': 3600})

    def sts(self, params):
        p = {'Action': 'AssumeRoleWithWebIdentity', 'Version': '2011-06-15'}
        p.update(params)
        st, _, body = raw('POST', self.srv.url + '/',
                          {'Content-Type': 'application/x-www-form-urlencoded'},
                          urllib.parse.urlencode(p).encode())
        return st, awsclient.strip_ns(ET.fromstring(body))

    def test_sts_web_identity(self):
        tok = jwt({'sub': 'system:serviceaccount:nodewarden:nodewarden', 'aud': 'sts.amazonaws.com',
                   'iss': 'https://oidc.example', 'exp': int(time.time()) + 3600})
        st, root = self.sts({'RoleArn': 'arn:aws:iam::123456789012:role/nodewarden',
                             'RoleSessionName': 'nw-1', 'WebIdentityToken': tok,
                             'DurationSeconds': '900'})
        self.assertEqual(st, 200)
        cr = root.find('./AssumeRoleWithWebIdentityResult/Credentials')
        akid = cr.find('AccessKeyId').text
        exp = aws.parse_time(cr.find('Expiration').text)
        self.assertTrue(890 <= exp - time.time() <= 901)
        self.assertEqual(root.find('./AssumeRoleWithWebIdentityResult/SubjectFromWebIdentityToken').text,
                         'system:serviceaccount:nodewarden:nodewarden')
        self.assertIn('assumed-role/nodewarden/nw-1',
                      root.find('./AssumeRoleWithWebIdentityResult/AssumedRoleUser/Arn').text)
        c = awsclient.Client(self.srv.url, akid, cr.find('SecretAccessKey').text, self.sim.region,
                             token=cr.find('SessionToken').text)
        self.assertEqual(c.ec2('DescribeAvailabilityZones')[0], 200)
        st, out = c.sqs('GetQueueUrl', {'QueueName': 'demo'})
        self.assertEqual(st, 200)
        # errors
        st, root = self.sts({'RoleArn': 'arn:aws:iam::123456789012:role/nodewarden',
                             'RoleSessionName': 'nw-1', 'WebIdentityToken': 'not-a-jwt'})
        self.assertEqual((st, root.find('./Error/Code').text), (400, 'InvalidIdentityToken'))
        st, root = self.sts({'RoleArn': 'arn:aws:iam::123456789012:role/nodewarden',
                             'RoleSessionName': 'nw-1', 'WebIdentityToken': jwt({'exp': 1})})
        self.assertEqual((st, root.find('./Error/Code').text), (400, 'ExpiredTokenException'))
        st, root = self.sts({'RoleArn': 'nodewarden', 'RoleSessionName': 'nw-1', 'WebIdentityToken': tok})
        self.assertEqual((st, root.find('./Error/Code').text), (400, 'ValidationError'))
        st, root = self.sts({'RoleArn': 'arn:aws:iam::123456789012:role/nodewarden', 'RoleSessionName': 'x',
                             'WebIdentityToken': tok, 'DurationSeconds': '60'})
        self.assertEqual((st, root.find('./Error/Code').text), (400, 'ValidationError'))
        self.ctl.call('POST', '/aws/web-identity', {'reject': True})
        st, root = self.sts({'RoleArn': 'arn:aws:iam::123456789012:role/nodewarden',
                             'RoleSessionName': 'nw-1', 'WebIdentityToken': tok})
        self.assertEqual((st, root.find('./Error/Code').text), (400, 'InvalidIdentityToken'))
        self.ctl.call('DELETE', '/aws/faults')


    def assume(self, client, params):
        p = {'Action': 'AssumeRole', 'Version': '2011-06-15'}
        p.update(params)
        body = urllib.parse.urlencode(p).encode()
        h = client.signed('POST', '/', {'Content-Type': 'application/x-www-form-urlencoded'}, body,
                          'sts')
        st, _, out = raw('POST', self.srv.url + '/', h, body)
        return st, awsclient.strip_ns(ET.fromstring(out))

    def whoami(self, client):
        body = urllib.parse.urlencode({'Action': 'GetCallerIdentity', 'Version': '2011-06-15'}).encode()
        h = client.signed('POST', '/', {'Content-Type': 'application/x-www-form-urlencoded'}, body,
                          'sts')
        st, _, out = raw('POST', self.srv.url + '/', h, body)
        return awsclient.strip_ns(ET.fromstring(out)).find('./GetCallerIdentityResult/Arn').text

    def test_sts_assume_role(self):
        arn = 'arn:aws:iam::123456789012:role/deployer'
        st, root = self.assume(self.c, {'RoleArn': arn, 'RoleSessionName': 's1'})
        self.assertEqual(st, 200)
        cr = root.find('./AssumeRoleResult/Credentials')
        role = awsclient.Client(self.srv.url, cr.find('AccessKeyId').text,
                                cr.find('SecretAccessKey').text, self.sim.region,
                                token=cr.find('SessionToken').text)
        self.assertEqual(role.ec2('DescribeAvailabilityZones')[0], 200)
        self.assertEqual(self.whoami(role), 'arn:aws:sts::123456789012:assumed-role/deployer/s1')
        # unsigned, or signed by a key STS does not know: refused
        bad = awsclient.Client(self.srv.url, 'AKIAUNKNOWN000000000', 'x' * 40, self.sim.region)
        st, root = self.assume(bad, {'RoleArn': arn, 'RoleSessionName': 's1'})
        self.assertEqual((st, root.find('./Error/Code').text), (403, 'InvalidClientTokenId'))
        # a role's credentials assume another for at most an hour (role chaining)
        st, root = self.assume(role, {'RoleArn': arn, 'RoleSessionName': 's2', 'DurationSeconds': '7200'})
        self.assertEqual((st, root.find('./Error/Code').text), (400, 'ValidationError'))
        st, root = self.assume(role, {'RoleArn': arn, 'RoleSessionName': 's2', 'DurationSeconds': '3600'})
        self.assertEqual(st, 200)
        # an external ID the role wants
        self.ctl.call('POST', '/aws/assume-role', {'roleArn': arn, 'externalId': 'x-1'})
        try:
            st, root = self.assume(self.c, {'RoleArn': arn, 'RoleSessionName': 's3'})
            self.assertEqual((st, root.find('./Error/Code').text), (403, 'AccessDenied'))
            st, _ = self.assume(self.c, {'RoleArn': arn, 'RoleSessionName': 's3', 'ExternalId': 'x-1'})
            self.assertEqual(st, 200)
        finally:
            self.ctl.call('POST', '/aws/assume-role', {'roleArn': arn, 'externalId': None})

    def test_container_credentials(self):
        url = self.srv.url + '/v1/credentials'
        st, _, out = raw('GET', url)
        self.assertEqual(st, 200)                       # no token configured: any request
        cr = json.loads(out)
        c = awsclient.Client(self.srv.url, cr['AccessKeyId'], cr['SecretAccessKey'], self.sim.region,
                             token=cr['Token'])
        self.assertEqual(c.ec2('DescribeAvailabilityZones')[0], 200)
        self.assertIn(':assumed-role/pod-identity/', self.whoami(c))
        self.assertTrue(aws.parse_time(cr['Expiration']) > time.time())
        self.ctl.call('POST', '/aws/container', {'token': 'pod-token'})
        try:
            self.assertEqual(raw('GET', url)[0], 401)
            st, _, out = raw('GET', url, {'Authorization': 'other'})
            self.assertEqual((st, json.loads(out)['code']), (403, 'AccessDenied'))
            self.assertEqual(raw('GET', self.srv.url + '/v2/credentials/task-1',
                                 {'Authorization': 'pod-token'})[0], 200)
        finally:
            self.ctl.call('POST', '/aws/container', {'token': None})


class Sqs(Base):
    def setUp(self):
        # drain whatever earlier tests' instances posted
        with self.sim.lock:
            self.sim.sqs_messages = []

    def url(self):
        st, out = self.c.sqs('GetQueueUrl', {'QueueName': 'demo'})
        self.assertEqual(st, 200)
        return out['QueueUrl']

    def receive(self, url, wait=0):
        st, out = self.c.sqs('ReceiveMessage', {'QueueUrl': url, 'MaxNumberOfMessages': 10,
                                                'VisibilityTimeout': 20, 'WaitTimeSeconds': wait,
                                                'MessageSystemAttributeNames': ['All']})
        self.assertEqual(st, 200, out)
        return out.get('Messages', [])

    def test_receive_delete_and_visibility(self):
        url = self.url()
        self.assertEqual(self.receive(url), [])
        st, out = self.c.sqs('SendMessage', {'QueueUrl': url, 'MessageBody': 'hello'})
        self.assertEqual(st, 200)
        msgs = self.receive(url)
        self.assertEqual([m['Body'] for m in msgs], ['hello'])
        self.assertEqual(msgs[0]['Attributes']['ApproximateReceiveCount'], '1')
        self.assertEqual(self.receive(url), [])         # invisible for 20 s
        st, _ = self.c.sqs('DeleteMessage', {'QueueUrl': url, 'ReceiptHandle': msgs[0]['ReceiptHandle']})
        self.assertEqual(st, 200)
        with self.sim.lock:
            self.assertEqual(self.sim.sqs_messages, [])
        st, out = self.c.sqs('DeleteMessage', {'QueueUrl': url, 'ReceiptHandle': 'garbage'})
        self.assertEqual((st, out['__type'].split('#')[1]), (400, 'ReceiptHandleIsInvalid'))
        st, out = self.c.sqs('ReceiveMessage', {'QueueUrl': url.replace('/demo', '/nope')})
        self.assertEqual((st, out['__type'].split('#')[1]), (400, 'QueueDoesNotExist'))
        st, out = self.c.sqs('GetQueueUrl', {'QueueName': 'nope'})
        self.assertEqual((st, out['__type'].split('#')[1]), (400, 'QueueDoesNotExist'))
        st, out = self.c.sqs('ReceiveMessage', {'QueueUrl': url, 'MaxNumberOfMessages': 11})
        self.assertEqual((st, out['__type'].split('#')[1]), (400, 'InvalidParameterValue'))
        self.ctl.call('POST', '/aws/throttle', {'rate': 1.0})          # EC2 only by default
        self.assertEqual(self.receive(url), [])
        self.ctl.call('POST', '/aws/throttle', {'rate': 1.0, 'actions': ['ReceiveMessage']})
        st, out = self.c.sqs('ReceiveMessage', {'QueueUrl': url})
        self.assertEqual((st, out['__type'].split('#')[1]), (400, 'ThrottlingException'))
        self.ctl.call('DELETE', '/aws/faults')
        bad = awsclient.Client(self.srv.url, self.sim.access_key, 'wrong' * 8, self.sim.region)
        st, out = bad.sqs('ReceiveMessage', {'QueueUrl': url})
        self.assertEqual((st, out['__type'].split('#')[1]), (403, 'SignatureDoesNotMatch'))

    def test_long_poll_wakes_on_message(self):
        url = self.url()
        self.sim.sched.after(0.3, self.sim.post_message, 'late')
        msgs = self.receive(url, wait=5)
        self.assertEqual([m['Body'] for m in msgs], ['late'])

    def launch(self, spot=True):
        p = {'MinCount': '1', 'MaxCount': '1', 'ImageId': 'ami-0sim0000000000001',
             'InstanceType': 'm6i.large'}
        if spot:
            p['InstanceMarketOptions.MarketType'] = 'spot'
        st, root = self.c.ec2('RunInstances', p)
        self.assertEqual(st, 200)
        iid = root.find('./instancesSet/item/instanceId').text
        self.assertTrue(wait_for(lambda: self.sim.instance(iid)['State']['Name'] == 'running'))
        return iid

    def test_spot_interruption_and_state_changes(self):
        url = self.url()
        iid = self.launch()
        states = [json.loads(m['Body'])['detail']['state'] for m in self.receive(url)]
        self.assertEqual(states, ['pending', 'running'])
        st, out = self.ctl.call('POST', '/aws/interrupt', {'instanceId': iid, 'warningSeconds': 0.2})
        self.assertEqual(st, 200)
        self.assertTrue(wait_for(lambda: self.sim.instance(iid)['State']['Name'] == 'terminated'))
        bodies = [json.loads(m['Body']) for m in self.receive(url)]
        self.assertEqual([b['detail-type'] for b in bodies],
                         ['EC2 Spot Instance Interruption Warning',
                          'EC2 Instance State-change Notification', 'EC2 Instance State-change Notification'])
        w = bodies[0]
        self.assertEqual((w['version'], w['source'], w['account'], w['region']),
                         ('0', 'aws.ec2', self.sim.account, self.sim.region))
        self.assertEqual(w['detail'], {'instance-id': iid, 'instance-action': 'terminate'})
        self.assertEqual(w['resources'], ['arn:aws:ec2:%s:%s:instance/%s' % (self.sim.region,
                                                                            self.sim.account, iid)])
        self.assertEqual([b['detail']['state'] for b in bodies[1:]], ['shutting-down', 'terminated'])

    def test_rebalance_and_scheduled_change(self):
        url = self.url()
        iid = self.launch(spot=False)
        self.receive(url)
        self.ctl.call('POST', '/aws/event', {'kind': 'rebalance', 'instanceId': iid})
        self.ctl.call('POST', '/aws/event', {'kind': 'scheduled-change', 'instanceId': iid})
        self.ctl.call('POST', '/aws/event', {'kind': 'state-change', 'instanceId': iid, 'state': 'stopping'})
        bodies = [json.loads(m['Body']) for m in self.receive(url)]
        self.assertEqual(bodies[0]['detail-type'], 'EC2 Instance Rebalance Recommendation')
        self.assertEqual(bodies[0]['detail'], {'instance-id': iid})
        h = bodies[1]
        self.assertEqual((h['source'], h['detail-type']), ('aws.health', 'AWS Health Event'))
        self.assertEqual((h['detail']['service'], h['detail']['eventTypeCategory']), ('EC2', 'scheduledChange'))
        self.assertEqual(h['detail']['affectedEntities'], [{'entityValue': iid}])
        self.assertEqual(bodies[2]['detail'], {'instance-id': iid, 'state': 'stopping'})
        self.assertEqual(self.sim.instance(iid)['State']['Name'], 'running')
        st, _ = self.ctl.call('POST', '/aws/event', {'kind': 'rebalance', 'instanceId': 'i-0000000000000dead'})
        self.assertEqual(st, 404)


if __name__ == '__main__':
    unittest.main()
