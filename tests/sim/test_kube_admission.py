"""Simulator self-tests: dynamic admission over TLS against a test webhook with its
own CA (caBundle and service DNS name checked, patches applied, denials and
warnings returned, failurePolicy on call failures)."""
import base64
import json
import os
import ssl
import sys
import tempfile
import threading
import time
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import certs  # noqa: E402
from simtest import Cluster, pod  # noqa: E402

CM = '/api/v1/namespaces/default/configmaps'
PODS = '/api/v1/namespaces/default/pods'


class TestWebhook:
    """A tiny HTTPS AdmissionReview server; behaviour chosen by the request path."""

    def __init__(self, crt, key):
        self.requests = []
        self.peers = []       # client address of each request (connection reuse)
        hook = self

        class H(BaseHTTPRequestHandler):
            protocol_version = 'HTTP/1.1'

            def log_message(self, *a):
                pass

            def do_POST(self):
                n = int(self.headers.get('Content-Length') or 0)
                review = json.loads(self.rfile.read(n))
                hook.requests.append((self.path, review))
                hook.peers.append(self.client_address)
                req = review['request']
                path = self.path.split('?')[0]
                resp = {'uid': req['uid'], 'allowed': True}
                if path == '/mutate':
                    labels = (req['object']['metadata'].get('labels'))
                    ops = [{'op': 'add', 'path': '/metadata/labels/mutated~1by', 'value': 'test'}] if labels else \
                        [{'op': 'add', 'path': '/metadata/labels', 'value': {'mutated/by': 'test'}}]
                    resp.update(patchType='JSONPatch', patch=base64.b64encode(json.dumps(ops).encode()).decode())
                elif path == '/mutate2':
                    labels = req['object']['metadata'].get('labels') or {}
                    if 'second/by' not in labels:
                        ops = [{'op': 'add', 'path': '/metadata/labels/second~1by', 'value': 'test'}]
                        resp.update(patchType='JSONPatch', patch=base64.b64encode(json.dumps(ops).encode()).decode())
                elif path == '/deny':
                    resp = {'uid': req['uid'], 'allowed': False,
                            'status': {'code': 422, 'message': 'spec.limits.cpu: must be positive'}}
                elif path == '/warn':
                    resp['warnings'] = ['careful: this is a test', 'bad\nwarning']
                elif path == '/badpatch':
                    ops = [{'op': 'remove', 'path': '/metadata/nonexistent'}]
                    resp.update(patchType='JSONPatch', patch=base64.b64encode(json.dumps(ops).encode()).decode())
                elif path == '/baduid':
                    resp['uid'] = 'not-the-uid'
                elif path == '/slow':
                    time.sleep(2.5)
                data = json.dumps({'apiVersion': 'admission.k8s.io/v1', 'kind': 'AdmissionReview',
                                   'response': resp}).encode()
                self.send_response(200)
                self.send_header('Content-Type', 'application/json')
                self.send_header('Content-Length', str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(crt, key)

        class S(ThreadingHTTPServer):
            daemon_threads = True

            def get_request(self):
                s, a = self.socket.accept()
                return ctx.wrap_socket(s, server_side=True), a

            def handle_error(self, *a):
                pass
        self.server = S(('127.0.0.1', 0), H)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class AdmissionTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        d = tempfile.mkdtemp(prefix='whcerts-')
        ca, cakey = certs.make_ca(d, 'test-webhook-ca')
        crt, key = certs.make_leaf(d, ca, cakey, dns=['test-webhook.wh-ns.svc'], ips=['127.0.0.1'])
        other_ca, _ = certs.make_ca(d, 'some-other-ca', prefix='other')
        with open(ca, 'rb') as f:
            cls.bundle = base64.b64encode(f.read()).decode()
        with open(other_ca, 'rb') as f:
            cls.wrong_bundle = base64.b64encode(f.read()).decode()
        cls.hook = TestWebhook(crt, key)
        cls.c = Cluster()
        cls.c.admission.map_service('wh-ns', 'test-webhook', '127.0.0.1', cls.hook.port)
        cls.c.admission.map_service('wh-ns', 'wrong-name', '127.0.0.1', cls.hook.port)
        cls.k = cls.c.client
        cls.n = 0

    @classmethod
    def tearDownClass(cls):
        cls.c.close()
        cls.hook.close()

    def register(self, kind, path, tag, policy='Fail', bundle=None, service='test-webhook', url=False,
                 timeout=5, resources=('configmaps',), cfg_name=None, **extra):
        """One webhook that only sees objects labelled test=<tag>."""
        AdmissionTest.n += 1
        cc = {'caBundle': bundle or self.bundle}
        if url:
            cc['url'] = 'https://127.0.0.1:%d%s' % (self.hook.port, path)
        else:
            cc['service'] = {'namespace': 'wh-ns', 'name': service, 'path': path}
        wh = dict({'name': '%s.hooks.test.io' % tag, 'admissionReviewVersions': ['v1'], 'sideEffects': 'None',
                   'failurePolicy': policy, 'timeoutSeconds': timeout, 'clientConfig': cc,
                   'objectSelector': {'matchLabels': {'test': tag}},
                   'rules': [{'operations': ['CREATE', 'UPDATE'], 'apiGroups': [''], 'apiVersions': ['v1'],
                              'resources': list(resources)}]}, **extra)
        res = 'mutatingwebhookconfigurations' if kind == 'mutating' else 'validatingwebhookconfigurations'
        cfg = cfg_name or 'cfg-%d' % self.n
        st, _, obj = self.k.post('/apis/admissionregistration.k8s.io/v1/' + res,
                                 {'metadata': {'name': cfg}, 'webhooks': [wh]})
        self.assertEqual(st, 201, obj)
        self.addCleanup(self.k.delete, '/apis/admissionregistration.k8s.io/v1/%s/%s' % (res, cfg))

    def cm(self, name, tag):
        return {'metadata': {'name': name, 'labels': {'test': tag}}, 'data': {'a': 'b'}}

    def calls(self, tag):
        return [r for r in self.hook.requests if r[1]['request']['object'] and
                (r[1]['request']['object']['metadata'].get('labels') or {}).get('test') == tag]

    def test_mutating_patch_applied_over_tls(self):
        self.register('mutating', '/mutate', 'mut')
        st, _, obj = self.k.post(CM, self.cm('mutated', 'mut'))
        self.assertEqual(st, 201, obj)
        self.assertEqual(obj['metadata']['labels']['mutated/by'], 'test')
        path, review = self.calls('mut')[-1]
        self.assertEqual(path, '/mutate?timeout=5s')
        req = review['request']
        self.assertEqual((review['apiVersion'], review['kind']), ('admission.k8s.io/v1', 'AdmissionReview'))
        self.assertEqual(req['operation'], 'CREATE')
        self.assertEqual(req['resource'], {'group': '', 'version': 'v1', 'resource': 'configmaps'})
        self.assertEqual(req['namespace'], 'default')
        self.assertIsNone(req['oldObject'])
        self.assertFalse(req['dryRun'])
        st, _, upd = self.k.patch(CM + '/mutated', {'data': {'c': 'd'}})
        self.assertEqual(st, 200)
        path, review = self.calls('mut')[-1]
        self.assertEqual(review['request']['operation'], 'UPDATE')
        self.assertEqual(review['request']['oldObject']['metadata']['name'], 'mutated')
        uids = [r[1]['request']['uid'] for r in self.calls('mut')]
        self.assertEqual(len(uids), len(set(uids)))

    def test_connections_reused(self):
        # the apiserver keeps webhook connections alive: back-to-back calls share one
        self.register('validating', '/allow', 'keep')
        for i in range(3):
            st, _, obj = self.k.post(CM, self.cm('keep-%d' % i, 'keep'))
            self.assertEqual(st, 201, obj)
        peers = [self.hook.peers[k] for k, r in enumerate(self.hook.requests)
                 if (r[1]['request']['object']['metadata'].get('labels') or {}).get('test') == 'keep']
        self.assertEqual(len(peers), 3)
        self.assertEqual(len(set(peers)), 1, peers)

    def test_reinvocation(self):
        # configurations run sorted by name: a-first (IfNeeded) before b-second, which changes the
        # object, so a-first runs again; b-second (IfNeeded too) is not re-run for its own change
        self.register('mutating', '/mutate', 'reinv', cfg_name='reinv-a-first', reinvocationPolicy='IfNeeded')
        self.register('mutating', '/mutate2', 'reinv', cfg_name='reinv-b-second', reinvocationPolicy='IfNeeded')
        st, _, obj = self.k.post(CM, self.cm('reinvoked', 'reinv'))
        self.assertEqual(st, 201, obj)
        self.assertEqual(obj['metadata']['labels']['second/by'], 'test')
        paths = [r[0].split('?')[0] for r in self.calls('reinv')]
        self.assertEqual(paths, ['/mutate', '/mutate2', '/mutate'])
        self.assertIn('second/by', self.calls('reinv')[-1][1]['request']['object']['metadata']['labels'])

    def test_no_reinvocation_with_never(self):
        self.register('mutating', '/mutate', 'noreinv', cfg_name='noreinv-a-first')
        self.register('mutating', '/mutate2', 'noreinv', cfg_name='noreinv-b-second')
        self.k.post(CM, self.cm('not-reinvoked', 'noreinv'))
        self.assertEqual([r[0].split('?')[0] for r in self.calls('noreinv')], ['/mutate', '/mutate2'])

    def test_generate_name_has_empty_request_name(self):
        self.register('mutating', '/mutate', 'gen')
        st, _, obj = self.k.post(CM, {'metadata': {'generateName': 'g-', 'labels': {'test': 'gen'}}})
        self.assertEqual(st, 201)
        req = self.calls('gen')[-1][1]['request']
        self.assertNotIn('name', req)

    def test_denial_returned_as_kube_apiserver_does(self):
        self.register('validating', '/deny', 'deny')
        st, _, err = self.k.post(CM, self.cm('denied', 'deny'))
        self.assertEqual(st, 422)
        self.assertEqual(err['message'], 'configmaps "denied" is forbidden: admission webhook "deny.hooks.test.io" '
                                         'denied the request: spec.limits.cpu: must be positive')
        self.assertEqual(self.k.get(CM + '/denied')[0], 404)

    def test_denial_is_not_masked_by_ignore(self):
        self.register('validating', '/deny', 'denyign', policy='Ignore')
        st, _, err = self.k.post(CM, self.cm('denied2', 'denyign'))
        self.assertEqual(st, 422)

    def test_warnings_become_headers(self):
        self.register('validating', '/warn', 'warn')
        st, r, obj = self.k.post(CM, self.cm('warned', 'warn'))
        self.assertEqual(st, 201)
        self.assertEqual(r.headers.get_all('Warning'), ['299 - "careful: this is a test"'])

    def test_wrong_ca_fails_closed_or_open(self):
        self.register('validating', '/warn', 'wrongca', bundle=self.wrong_bundle)
        st, _, err = self.k.post(CM, self.cm('wrong-ca', 'wrongca'))
        self.assertEqual((st, err['reason']), (500, 'InternalError'))
        self.assertIn('failed calling webhook "wrongca.hooks.test.io"', err['message'])
        self.assertIn('certificate', err['message'])
        self.register('validating', '/warn', 'wrongcaign', bundle=self.wrong_bundle, policy='Ignore')
        st, _, obj = self.k.post(CM, self.cm('wrong-ca-ign', 'wrongcaign'))
        self.assertEqual(st, 201)

    def test_service_name_is_checked(self):
        self.register('validating', '/warn', 'wrongname', service='wrong-name')
        st, _, err = self.k.post(CM, self.cm('wrong-name', 'wrongname'))
        self.assertEqual(st, 500)
        self.assertIn('wrong-name.wh-ns.svc', err['message'])
        self.register('validating', '/warn', 'nosvc', service='missing')
        st, _, err = self.k.post(CM, self.cm('no-svc', 'nosvc'))
        self.assertEqual(st, 500)

    def test_url_client_config(self):
        self.register('mutating', '/mutate', 'url', url=True)
        st, _, obj = self.k.post(CM, self.cm('by-url', 'url'))
        self.assertEqual((st, obj['metadata']['labels'].get('mutated/by')), (201, 'test'))

    def test_bad_patch_is_500_even_with_ignore(self):
        self.register('mutating', '/badpatch', 'badpatch', policy='Ignore')
        st, _, err = self.k.post(CM, self.cm('bad-patch', 'badpatch'))
        self.assertEqual(st, 500)

    def test_bad_uid_is_call_failure(self):
        self.register('mutating', '/baduid', 'baduid', policy='Fail')
        st, _, err = self.k.post(CM, self.cm('bad-uid', 'baduid'))
        self.assertEqual(st, 500)
        self.assertIn('expected response.uid', err['message'])
        self.register('mutating', '/baduid', 'baduidign', policy='Ignore')
        st, _, err = self.k.post(CM, self.cm('bad-uid-ign', 'baduidign'))
        self.assertEqual(st, 201)

    def test_timeout(self):
        self.register('validating', '/slow', 'slow', timeout=1)
        t0 = time.time()
        st, _, err = self.k.post(CM, self.cm('slow', 'slow'))
        self.assertEqual(st, 500)
        self.assertIn('context deadline exceeded', err['message'])
        self.assertLess(time.time() - t0, 2.4)
        self.assertEqual(self.calls('slow')[-1][0], '/slow?timeout=1s')

    def test_namespace_selector_and_pods(self):
        self.register('mutating', '/mutate', 'nssel', resources=('pods',),
                      namespaceSelector={'matchExpressions': [{'key': 'kubernetes.io/metadata.name',
                                                               'operator': 'NotIn', 'values': ['kube-system']}]})
        p = pod('sel-default', labels={'test': 'nssel'})
        st, _, obj = self.k.post(PODS, p)
        self.assertEqual(obj['metadata']['labels'].get('mutated/by'), 'test')
        st, _, obj = self.k.post('/api/v1/namespaces/kube-system/pods', pod('sel-system', labels={'test': 'nssel'}))
        self.assertEqual(st, 201)
        self.assertNotIn('mutated/by', obj['metadata']['labels'])

    def test_match_conditions(self):
        self.register('mutating', '/mutate', 'cond', matchConditions=[
            {'name': 'not-mirror', 'expression': "!has(object.metadata.annotations) || "
                                                 "!('kubernetes.io/config.mirror' in object.metadata.annotations)"}])
        st, _, a = self.k.post(CM, self.cm('cond-plain', 'cond'))
        self.assertEqual(a['metadata']['labels'].get('mutated/by'), 'test')
        m = self.cm('cond-mirror', 'cond')
        m['metadata']['annotations'] = {'kubernetes.io/config.mirror': 'x'}
        st, _, b = self.k.post(CM, m)
        self.assertNotIn('mutated/by', b['metadata']['labels'])

    def test_webhook_configuration_validation(self):
        st, _, err = self.k.post('/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations',
                                 {'metadata': {'name': 'bad'}, 'webhooks': [
                                     {'name': 'two.segments', 'admissionReviewVersions': ['v1'], 'sideEffects': 'Some',
                                      'clientConfig': {'url': 'http://x/'}, 'rules': []}]})
        self.assertEqual(st, 422)
        fields = [c['field'] for c in err['details']['causes']]
        self.assertIn('webhooks[0].name', fields)
        self.assertIn('webhooks[0].sideEffects', fields)
        self.assertIn('webhooks[0].clientConfig.url', fields)


if __name__ == '__main__':
    unittest.main()
