"""SigV4: the official vector, and a correctly signed request is accepted while one
with any signed byte changed (header, body, path, query, date) is rejected."""

import os
import sys
import time
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import aws  # noqa: E402
import awsclient  # noqa: E402
import sigv4  # noqa: E402

# awslabs/aws-c-auth tests/aws-signing-test-suite/v4/get-vanilla (Apache-2.0)
VEC_KEY = 'AKIDEXAMPLE'
VEC_SECRET = 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY'
VEC_SIG = '5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31'


class SigV4Vector(unittest.TestCase):
    def test_get_vanilla(self):
        h = sigv4.sign('GET', 'https://example.amazonaws.com/', {}, b'', VEC_KEY, VEC_SECRET,
                       'us-east-1', 'service', amz_date='20150830T123600Z')
        self.assertEqual(h['Authorization'],
                         'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/'
                         'aws4_request, SignedHeaders=host;x-amz-date, Signature=' + VEC_SIG)

    def test_verify_vector(self):
        h = {'Host': 'example.amazonaws.com', 'X-Amz-Date': '20150830T123600Z',
             'Authorization': 'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/'
                              'aws4_request, SignedHeaders=host;x-amz-date, Signature=' + VEC_SIG}
        now = 1440938160  # 2015-08-30T12:36:00Z
        look = lambda k: {'secret': VEC_SECRET, 'token': None, 'expires': None} if k == VEC_KEY else None
        self.assertEqual(sigv4.verify('GET', '/', '', h, b'', look, 'us-east-1', 'service', now), VEC_KEY)
        with self.assertRaises(sigv4.SigError) as cm:
            sigv4.verify('GET', '/', '', h, b'', look, 'us-east-1', 'service', now + 301)
        self.assertEqual(cm.exception.kind, 'stale')

    def test_canonical_forms(self):
        self.assertEqual(sigv4.canonical_query('b=2&a=1&a=0&c'), 'a=0&a=1&b=2&c=')
        self.assertEqual(sigv4.canonical_query('x=a%20b&y=%7E'), 'x=a%20b&y=~')
        self.assertEqual(sigv4.canonical_path('/a/./b/../c//d'), '/a/c/d')
        self.assertEqual(sigv4.canonical_path('/%E1%88%B4'), '/%25E1%2588%25B4')


class SigV4Http(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.sim = aws.AwsSim()
        cls.srv = aws.serve(cls.sim)

    @classmethod
    def tearDownClass(cls):
        cls.srv.close()
        cls.sim.stop()

    def _req(self):
        body = ('ZoneName.1=%s&ZoneName.2=%s' % tuple(self.sim.zones[:2])).encode()
        url = self.srv.url + '/?Action=DescribeAvailabilityZones&Version=2016-11-15'
        h = sigv4.sign('POST', url, {'Content-Type': 'application/x-www-form-urlencoded; charset=utf-8',
                                     'X-Amz-Meta': 'v1'},
                       body, self.sim.access_key, self.sim.secret_key, self.sim.region, 'ec2')
        return url, h, body

    def _send(self, url, h, body):
        st, _, out = awsclient.raw('POST', url, h, body)
        return st, awsclient.strip_ns(awsclient.ET.fromstring(out))

    def test_signed_accepted(self):
        st, root = self._send(*self._req())
        self.assertEqual(st, 200)
        self.assertEqual(len(root.findall('./availabilityZoneInfo/item')), 2)

    def test_any_changed_byte_rejected(self):
        url, h, body = self._req()
        cases = {
            'header': (url, dict(h, **{'X-Amz-Meta': 'v2'}), body),
            'body': (url, h, body.replace(b'ZoneName.2', b'ZoneName.3')),
            'body-one-byte': (url, h, body[:-1] + bytes([body[-1] ^ 1])),
            'path': (url.replace('/?', '/x?'), h, body),
            'query': (url.replace('Version=2016-11-15', 'Version=2016-11-16'), h, body),
            'date': (url, dict(h, **{'X-Amz-Date': h['X-Amz-Date'][:-3] + (
                '01Z' if h['X-Amz-Date'][-3:] != '01Z' else '02Z')}), body),
            'signature': (url, dict(h, Authorization=h['Authorization'][:-1] + (
                '0' if h['Authorization'][-1] != '0' else '1')), body),
        }
        for name, (u, hh, b) in cases.items():
            with self.subTest(name):
                st, root = self._send(u, hh, b)
                self.assertEqual(st, 403, name)
                self.assertEqual(awsclient.error_code(root), 'SignatureDoesNotMatch')

    def test_unknown_key_and_stale_date(self):
        c = awsclient.Client(self.srv.url, 'AKIAUNKNOWN000000000', 'x' * 40, self.sim.region)
        st, root = c.ec2('DescribeAvailabilityZones')
        self.assertEqual((st, awsclient.error_code(root)), (401, 'AuthFailure'))
        good = awsclient.Client(self.srv.url, self.sim.access_key, self.sim.secret_key, self.sim.region)
        stale = time.strftime('%Y%m%dT%H%M%SZ', time.gmtime(time.time() - 301))
        st, root = good.ec2('DescribeAvailabilityZones', amz_date=stale)
        self.assertEqual((st, awsclient.error_code(root)), (401, 'AuthFailure'))
        self.assertIn('Signature expired', root.find('./Errors/Error/Message').text)
        fresh = time.strftime('%Y%m%dT%H%M%SZ', time.gmtime(time.time() - 200))
        st, _ = good.ec2('DescribeAvailabilityZones', amz_date=fresh)
        self.assertEqual(st, 200)

    def test_wrong_service_or_region_scope(self):
        body = b'Action=DescribeAvailabilityZones&Version=2016-11-15'
        for region, service in (('us-east-1', 'ec2'), (self.sim.region, 'sqs')):
            h = sigv4.sign('POST', self.srv.url + '/', {'Content-Type': 'application/x-www-form-urlencoded'},
                           body, self.sim.access_key, self.sim.secret_key, region, service)
            st, root = self._send(self.srv.url + '/', h, body)
            self.assertEqual((st, awsclient.error_code(root)), (401, 'AuthFailure'), (region, service))

    def test_unsigned_rejected(self):
        st, root = self._send(self.srv.url + '/', {'Content-Type': 'application/x-www-form-urlencoded'},
                              b'Action=DescribeAvailabilityZones&Version=2016-11-15')
        self.assertEqual((st, awsclient.error_code(root)), (401, 'AuthFailure'))

    def test_get_query_form(self):
        q = urllib.parse.urlencode({'Action': 'DescribeAvailabilityZones', 'Version': '2016-11-15',
                                    'ZoneName.1': self.sim.zones[1]})
        url = self.srv.url + '/?' + q
        h = sigv4.sign('GET', url, {}, b'', self.sim.access_key, self.sim.secret_key, self.sim.region, 'ec2')
        st, _, out = awsclient.raw('GET', url, h)
        root = awsclient.strip_ns(awsclient.ET.fromstring(out))
        self.assertEqual(st, 200)
        self.assertEqual([e.text for e in root.findall('./availabilityZoneInfo/item/zoneName')],
                         [self.sim.zones[1]])


if __name__ == '__main__':
    unittest.main()
