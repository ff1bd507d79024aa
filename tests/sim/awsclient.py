"""A minimal AWS client for the simulator's own tests (signs with sigv4.py,
parses XML with ElementTree).  Not used by nodewarden."""

import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import sigv4  # noqa: E402


def strip_ns(root):
    for el in root.iter():
        if '}' in el.tag:
            el.tag = el.tag.split('}', 1)[1]
    return root


def raw(method, url, headers=None, body=b''):
    req = urllib.request.Request(url, data=body if method != 'GET' else None,
                                 headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


class Client:
    def __init__(self, base, akid, secret, region, token=None):
        self.base = base.rstrip('/')
        self.akid, self.secret, self.region, self.token = akid, secret, region, token

    def signed(self, method, path, headers, body, service, amz_date=None):
        h = sigv4.sign(method, self.base + path, headers, body, self.akid, self.secret,
                       self.region, service, amz_date=amz_date, session_token=self.token)
        return h

    def ec2(self, action, params=None, **kw):
        """-> (status, root Element with namespaces stripped)."""
        p = {'Action': action, 'Version': '2016-11-15'}
        p.update(params or {})
        body = urllib.parse.urlencode(p).encode()
        h = self.signed('POST', '/', {'Content-Type': 'application/x-www-form-urlencoded; charset=utf-8'},
                        body, 'ec2', **kw)
        st, _, out = raw('POST', self.base + '/', h, body)
        return st, strip_ns(ET.fromstring(out))

    def pricing(self, action, payload, region='us-east-1'):
        """The Price List Query API (JSON 1.1), signed for region -> (status, JSON)."""
        body = json.dumps(payload).encode()
        h = sigv4.sign('POST', self.base + '/', {'Content-Type': 'application/x-amz-json-1.1',
                                                 'X-Amz-Target': 'AWSPriceListService.' + action},
                       body, self.akid, self.secret, region, 'pricing', session_token=self.token)
        st, hdr, out = raw('POST', self.base + '/', h, body)
        return st, json.loads(out.decode() or '{}')

    def ssm(self, action, payload, ctype='application/x-amz-json-1.1', sign=True):
        """SSM (JSON 1.1) -> (status, JSON)."""
        body = json.dumps(payload).encode()
        h = {'Content-Type': ctype, 'X-Amz-Target': 'AmazonSSM.' + action}
        if sign:
            h = self.signed('POST', '/', h, body, 'ssm')
        st, hdr, out = raw('POST', self.base + '/', h, body)
        return st, json.loads(out.decode() or '{}')

    def sqs(self, action, payload):
        body = json.dumps(payload).encode()
        h = self.signed('POST', '/', {'Content-Type': 'application/x-amz-json-1.0',
                                      'X-Amz-Target': 'AmazonSQS.' + action}, body, 'sqs')
        st, hdr, out = raw('POST', self.base + '/', h, body)
        return st, json.loads(out.decode() or '{}')


def error_code(root):
    e = root.find('./Errors/Error/Code')
    return e.text if e is not None else None


def items(root, path):
    return root.findall(path)


def filters(*pairs):
    """filters(('tag:k', ['v']), ...) -> Query params."""
    out = {}
    for i, (name, vals) in enumerate(pairs, 1):
        out['Filter.%d.Name' % i] = name
        for j, v in enumerate(vals, 1):
            out['Filter.%d.Value.%d' % (i, j)] = v
    return out


class FakeControl:
    """control.route() stand-in: records routes, dispatches by longest prefix."""

    def __init__(self):
        self.routes = []

    def route(self, method, prefix, fn):
        self.routes.append((method, prefix, fn))

    def call(self, method, path, body=None, query=None):
        best = None
        for m, p, fn in self.routes:
            if m == method and path.startswith(p) and (best is None or len(p) > len(best[0])):
                best = (p, fn)
        if best is None:
            return 404, {'error': 'no route'}
        return best[1](method, path, query or {}, body or {})
