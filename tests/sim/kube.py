"""The simulated kube-apiserver: HTTPS + bearer tokens, discovery, REST verbs,
list/watch, patch, delete, subresources (status, binding, eviction), admission.

    store = KubeStore(history=1000)
    api = KubeApi(store, tokens={'tok': 'admin'}, webhook_services={...})
    srv = api.serve('127.0.0.1', 0, certfile, keyfile)   # ThreadingHTTPServer, already running
"""
import base64
import collections
import copy
import json
import random
import socket
import ssl
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import kselectors as sel
import patch as patchlib
from store import ApiError, KubeStore, Watcher, not_found, now_iso, conflict  # noqa: F401

VERSION_INFO = {'major': '1', 'minor': '31', 'gitVersion': 'v1.31.0-nodewarden-sim',
                'gitCommit': '0000000000000000000000000000000000000000', 'gitTreeState': 'clean',
                'buildDate': '2026-01-01T00:00:00Z', 'goVersion': 'go1.22.0', 'compiler': 'gc',
                'platform': 'linux/amd64'}
VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch']


class Faults:
    """Kube-side faults, changed through the control API."""

    def __init__(self):
        self.lock = threading.Lock()
        self.latency = 0.0          # seconds added to every kube request
        self.error_code = 0         # 500/503/429...: injected answer
        self.error_rate = 0.0       # probability per request
        self.error_count = 0        # or: the next N matching requests
        self.error_path = ''        # only requests whose path starts with this
        self.error_verbs = []       # only these HTTP methods (empty: all)

    def pick_error(self, method, path):
        with self.lock:
            if not self.error_code:
                return 0
            if self.error_path and not path.startswith(self.error_path):
                return 0
            if self.error_verbs and method not in self.error_verbs:
                return 0
            if self.error_count > 0:
                self.error_count -= 1
                if self.error_count == 0 and self.error_rate == 0:
                    code, self.error_code = self.error_code, 0
                    return code
                return self.error_code
            if self.error_rate > 0 and random.random() < self.error_rate:
                return self.error_code
            return 0

    def as_dict(self):
        with self.lock:
            return {'latency': self.latency, 'errorCode': self.error_code, 'errorRate': self.error_rate,
                    'errorCount': self.error_count, 'errorPath': self.error_path, 'errorVerbs': self.error_verbs}


def _status_ok(details=None, code=200):
    st = {'kind': 'Status', 'apiVersion': 'v1', 'metadata': {}, 'status': 'Success', 'code': code}
    if details:
        st['details'] = details
    return st


class KubeApi:
    def __init__(self, store, tokens, admission=None, bookmark_interval=60.0,
                 default_watch_timeout=(1800, 3600), log_size=20000, authorizer=None):
        self.store = store
        self.authorizer = authorizer        # rbac.Authorizer or None (everyone may do anything)
        self.tokens = dict(tokens)          # bearer token -> username
        self.admission = admission
        self.bookmark_interval = bookmark_interval
        self.default_watch_timeout = default_watch_timeout
        self.faults = Faults()
        self.reqlog = collections.deque(maxlen=log_size)
        self.reqlog_seq = 0
        self.reqlog_lock = threading.Lock()
        self.server = None
        self.address = None
        self.pdb_retry_after = 0            # >0: also send Retry-After on budget 429s

    # ---- server -------------------------------------------------------------------------------
    def serve(self, host, port, certfile, keyfile, client_ca=None):
        """client_ca: also authenticate clients by a certificate of this CA (the user is
        its CN, as kube-apiserver's --client-ca-file does)."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_cert_chain(certfile, keyfile)
        if client_ca:
            ctx.load_verify_locations(client_ca)
            ctx.verify_mode = ssl.CERT_OPTIONAL
        ctx.set_alpn_protocols(['http/1.1'])
        api = self

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            allow_reuse_address = True
            request_queue_size = 128

            def get_request(self):
                s, addr = self.socket.accept()
                return ctx.wrap_socket(s, server_side=True, do_handshake_on_connect=False), addr

            def handle_error(self, request, client_address):
                pass                      # client went away; nothing to report

        class H(Handler):
            pass
        H.api = api
        self.server = Server((host, port), H)
        self.address = self.server.server_address
        t = threading.Thread(target=self.server.serve_forever, name='kube-api', daemon=True)
        t.start()
        return self.server

    def shutdown(self):
        if self.server:
            self.store.drop_watches()
            self.server.shutdown()
            self.server.server_close()

    def log_request(self, entry):
        with self.reqlog_lock:
            self.reqlog_seq += 1
            entry['seq'] = self.reqlog_seq
            self.reqlog.append(entry)

    def requests(self, since=0):
        with self.reqlog_lock:
            return [e for e in self.reqlog if e['seq'] > since]

    # ---- discovery -----------------------------------------------------------------------------
    def resource_list(self, group, version):
        res = []
        for rt in self.store.types.values():
            if rt.group != group or rt.version != version:
                continue
            e = {'name': rt.resource, 'singularName': rt.singular, 'namespaced': rt.namespaced,
                 'kind': rt.kind, 'verbs': VERBS, 'storageVersionHash': ''}
            if rt.short:
                e['shortNames'] = rt.short
            if rt.categories:
                e['categories'] = rt.categories
            res.append(e)
            for sub in rt.subresources:
                if sub == 'status':
                    res.append({'name': rt.resource + '/status', 'singularName': '', 'namespaced': rt.namespaced,
                                'kind': rt.kind, 'verbs': ['get', 'patch', 'update']})
                elif sub == 'binding':
                    res.append({'name': 'pods/binding', 'singularName': '', 'namespaced': True,
                                'kind': 'Binding', 'verbs': ['create']})
                elif sub == 'eviction':
                    res.append({'name': 'pods/eviction', 'singularName': '', 'namespaced': True, 'group': 'policy',
                                'version': 'v1', 'kind': 'Eviction', 'verbs': ['create']})
                elif sub == 'scale':
                    res.append({'name': rt.resource + '/scale', 'singularName': '', 'namespaced': True,
                                'group': 'autoscaling', 'version': 'v1', 'kind': 'Scale',
                                'verbs': ['get', 'patch', 'update']})
                elif sub == 'finalize':
                    res.append({'name': 'namespaces/finalize', 'singularName': '', 'namespaced': False,
                                'kind': 'Namespace', 'verbs': ['update']})
        if not res:
            return None
        return {'kind': 'APIResourceList', 'apiVersion': 'v1',
                'groupVersion': '%s/%s' % (group, version) if group else version, 'resources': res}

    # ---- OpenAPI v3, minimal: enough for kubectl's field-validation probe --------------------
    # Each GroupVersion document lists a PATCH operation per kind with the fieldValidation
    # query parameter (so kubectl sends fieldValidation and does no client-side schema
    # validation). No schemas and no strategic-merge content type are published, so kubectl
    # apply computes strategic merge patches from its compiled-in types for core kinds and
    # JSON merge patches for custom resources, as it does against any server without them.
    def openapi_root(self):
        paths = {}
        for rt in self.store.types.values():
            gv = 'apis/%s/%s' % (rt.group, rt.version) if rt.group else 'api/v1'
            paths[gv] = {'serverRelativeURL': '/openapi/v3/%s?hash=%s' % (gv, 'SIM%d' % len(self.store.types))}
        return {'paths': paths}

    def openapi_gv(self, gv):
        paths = {}
        for rt in self.store.types.values():
            mine = 'apis/%s/%s' % (rt.group, rt.version) if rt.group else 'api/v1'
            if mine != gv:
                continue
            p = '/%s%s/%s/{name}' % (mine, '/namespaces/{namespace}' if rt.namespaced else '', rt.resource)
            paths[p] = {'patch': {
                'operationId': 'patch%s' % rt.kind,
                'x-kubernetes-action': 'patch',
                'x-kubernetes-group-version-kind': {'group': rt.group, 'version': rt.version, 'kind': rt.kind},
                'parameters': [{'name': n, 'in': 'query', 'schema': {'type': 'string', 'uniqueItems': True}}
                               for n in ('dryRun', 'fieldManager', 'fieldValidation', 'force')],
                'requestBody': {'content': {t: {'schema': {'type': 'object'}} for t in
                                            ('application/json-patch+json', 'application/merge-patch+json',
                                             'application/apply-patch+yaml')}, 'required': True},
                'responses': {'200': {'description': 'OK'}}}}
        if not paths:
            return None
        return {'openapi': '3.0.0', 'info': {'title': 'Kubernetes', 'version': VERSION_INFO['gitVersion']},
                'paths': paths, 'components': {'schemas': {}}}

    def groups(self):
        gs = collections.OrderedDict()
        for rt in self.store.types.values():
            if rt.group:
                gs.setdefault(rt.group, [])
                if rt.version not in gs[rt.group]:
                    gs[rt.group].append(rt.version)
        out = []
        for g, vs in gs.items():
            vers = [{'groupVersion': '%s/%s' % (g, v), 'version': v} for v in vs]
            out.append({'name': g, 'versions': vers, 'preferredVersion': vers[0]})
        return out


class Handler(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    server_version = 'kube-apiserver-sim'
    sys_version = ''
    timeout = 300
    api = None

    def log_message(self, fmt, *args):
        pass

    def setup(self):
        super().setup()
        try:     # headers and body go out in separate writes: avoid Nagle + delayed-ACK stalls
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass

    # ---- plumbing -------------------------------------------------------------------------------
    def _body(self):
        if self.headers.get('Transfer-Encoding', '').lower() == 'chunked':
            data = b''
            while True:
                line = self.rfile.readline()
                n = int(line.split(b';')[0].strip() or b'0', 16)
                if n == 0:
                    self.rfile.readline()
                    break
                data += self.rfile.read(n)
                self.rfile.readline()
            return data
        n = int(self.headers.get('Content-Length') or 0)
        if n > 3 * 1024 * 1024:
            raise ApiError(413, 'RequestEntityTooLarge', 'Request entity too large: limit is 3145728')
        return self.rfile.read(n) if n else b''

    def _json_body(self, required=True):
        raw = self._body()
        if not raw.strip():
            if required:
                raise ApiError(400, 'BadRequest', 'the body of the request was empty')
            return None
        try:
            return json.loads(raw)
        except ValueError as e:
            raise ApiError(400, 'BadRequest', 'the body of the request could not be decoded as JSON: %s' % e)

    def send_json(self, code, obj, headers=None):
        data = json.dumps(obj, separators=(',', ':')).encode()
        self.send_response(code)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.send_header('Cache-Control', 'no-cache, private')
        for k, v in (headers or []):
            self.send_header(k, v)
        for w in getattr(self, '_warnings', []):
            self.send_header('Warning', '299 - %s' % json.dumps(w))
        self.end_headers()
        if self.command != 'HEAD':
            self.wfile.write(data)
        self._code = code

    def send_error_status(self, e):
        headers = []
        if e.retry_after:
            headers.append(('Retry-After', str(e.retry_after)))
        self.send_json(e.code, e.status(), headers)

    def do_GET(self):
        self._dispatch('GET')

    def do_POST(self):
        self._dispatch('POST')

    def do_PUT(self):
        self._dispatch('PUT')

    def do_PATCH(self):
        self._dispatch('PATCH')

    def do_DELETE(self):
        self._dispatch('DELETE')

    def do_HEAD(self):
        self._dispatch('HEAD')

    def _client_cert_user(self):
        """The CN of a client certificate the server verified, or None."""
        try:
            cert = self.connection.getpeercert()
        except (AttributeError, ValueError):
            return None
        for rdn in (cert or {}).get('subject', ()):
            for k, v in rdn:
                if k == 'commonName':
                    return v
        return None

    def _dispatch(self, method):
        api = self.api
        t0 = time.time()
        u = urllib.parse.urlsplit(self.path)
        self.q = {k: v[-1] for k, v in urllib.parse.parse_qs(u.query, keep_blank_values=True).items()}
        self._code = 0
        self._warnings = []
        self._user = None
        fault = ''
        try:
            if api.faults.latency > 0:
                time.sleep(api.faults.latency)
            auth = self.headers.get('Authorization', '')
            if auth.startswith('Bearer ') and auth[7:].strip() in api.tokens:
                self._user = api.tokens[auth[7:].strip()]
            elif not auth and self._client_cert_user():
                self._user = self._client_cert_user()
            else:
                raise ApiError(401, 'Unauthorized', 'Unauthorized')
            code = api.faults.pick_error(method, u.path)
            if code:
                fault = 'injected %d' % code
                self._body()
                reason = {500: 'InternalError', 503: 'ServiceUnavailable', 429: 'TooManyRequests',
                          504: 'Timeout'}.get(code, 'InternalError')
                raise ApiError(code, reason, 'simulated fault: %s' % reason,
                               retry_after=1 if code in (429, 503) else None)
            self._route(method, u.path)
        except ApiError as e:
            try:
                self.send_error_status(e)
            except OSError:
                pass
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, socket.timeout):
            self.close_connection = True
        except Exception as e:  # a simulator bug: answer 500, keep serving
            import traceback
            traceback.print_exc()
            try:
                self.send_error_status(ApiError(500, 'InternalError', 'Internal error occurred: %r' % (e,)))
            except OSError:
                pass
        finally:
            api.log_request({'ts': t0, 'method': method, 'path': u.path, 'query': u.query,
                             'code': self._code, 'user': self._user,
                             'userAgent': self.headers.get('User-Agent', ''),
                             'durationMs': int((time.time() - t0) * 1000), 'fault': fault})

    # ---- routing ---------------------------------------------------------------------------------
    def _route(self, method, path):
        api = self.api
        parts = [urllib.parse.unquote(p) for p in path.strip('/').split('/')] if path.strip('/') else []
        if method in ('GET', 'HEAD'):
            if path in ('/healthz', '/livez', '/readyz'):
                data = b'ok'
                self.send_response(200)
                self.send_header('Content-Type', 'text/plain; charset=utf-8')
                self.send_header('Content-Length', '2')
                self.end_headers()
                self.wfile.write(data)
                self._code = 200
                return
            if path == '/version':
                return self.send_json(200, VERSION_INFO)
            if path == '/openapi/v3':
                return self.send_json(200, api.openapi_root())
            if path.startswith('/openapi/v3/'):
                doc = api.openapi_gv(path[len('/openapi/v3/'):])
                if doc is None:
                    raise ApiError(404, 'NotFound', 'the server could not find the requested resource')
                return self.send_json(200, doc)
            if path == '/api':
                host, port = api.address[:2]
                return self.send_json(200, {'kind': 'APIVersions', 'versions': ['v1'],
                                            'serverAddressByClientCIDRs': [{'clientCIDR': '0.0.0.0/0',
                                                                            'serverAddress': '%s:%d' % (host, port)}]})
            if path == '/apis':
                return self.send_json(200, {'kind': 'APIGroupList', 'apiVersion': 'v1', 'groups': api.groups()})
            if path == '/api/v1':
                return self.send_json(200, api.resource_list('', 'v1'))
            if len(parts) == 2 and parts[0] == 'apis':
                for g in api.groups():
                    if g['name'] == parts[1]:
                        return self.send_json(200, dict(g, kind='APIGroup', apiVersion='v1'))
                raise ApiError(404, 'NotFound', 'the server could not find the requested resource')
            if len(parts) == 3 and parts[0] == 'apis':
                rl = api.resource_list(parts[1], parts[2])
                if rl is None:
                    raise ApiError(404, 'NotFound', 'the server could not find the requested resource')
                return self.send_json(200, rl)
        if parts[:2] == ['api', 'v1']:
            group, version, rest = '', 'v1', parts[2:]
        elif len(parts) >= 4 and parts[0] == 'apis':
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise ApiError(404, 'NotFound', 'the server could not find the requested resource')
        if rest and rest[0] == 'watch':          # legacy /watch/ paths
            rest = rest[1:]
            self.q['watch'] = 'true'
        ns = None
        if len(rest) >= 3 and rest[0] == 'namespaces':
            ns, rest = rest[1], rest[2:]
        if not rest:
            raise ApiError(404, 'NotFound', 'the server could not find the requested resource')
        rt = api.store.by_gvr(group, version, rest[0])
        if rt is None:
            raise ApiError(404, 'NotFound', 'the server could not find the requested resource')
        if ns is not None and not rt.namespaced:
            raise ApiError(404, 'NotFound', 'the server could not find the requested resource')
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if len(rest) > 3 or (sub and sub not in rt.subresources):
            raise ApiError(404, 'NotFound', 'the server could not find the requested resource')
        if api.authorizer is not None:
            watching = self.q.get('watch') in ('1', 'true', 'True')
            verb = {'GET': 'get' if name else 'watch' if watching else 'list', 'POST': 'create',
                    'PUT': 'update', 'PATCH': 'patch',
                    'DELETE': 'delete' if name else 'deletecollection'}.get(method, 'get')
            auth = (self._user, verb, group, rest[0], sub, ns, name)
            if not api.authorizer.allowed(*auth):
                raise ApiError(403, 'Forbidden', api.authorizer.message(*auth))
        if name is None:
            if method in ('GET', 'HEAD'):
                if self.q.get('watch') in ('1', 'true', 'True'):
                    return self.watch(rt, ns)
                return self.list(rt, ns)
            if method == 'POST':
                return self.create(rt, ns)
            if method == 'DELETE':
                return self.delete_collection(rt, ns)
            raise ApiError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource')
        if rt.namespaced and ns is None:
            raise ApiError(404, 'NotFound', 'the server could not find the requested resource')
        if sub == 'binding' and method == 'POST':
            return self.bind(rt, ns, name)
        if sub == 'eviction' and method == 'POST':
            return self.evict(rt, ns, name)
        if sub in ('binding', 'eviction'):
            raise ApiError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource')
        if sub == 'scale':
            return self.scale(rt, ns, name, method)
        if method in ('GET', 'HEAD'):
            obj = api.store.get(rt.key, ns, name)
            if obj is None:
                raise not_found(rt, name)
            return self.send_json(200, obj)
        if method == 'PUT':
            return self.update(rt, ns, name, sub)
        if method == 'PATCH':
            return self.patch(rt, ns, name, sub)
        if method == 'DELETE' and sub is None:
            return self.delete(rt, ns, name)
        raise ApiError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource')

    # ---- list / watch --------------------------------------------------------------------------------
    def _selectors(self, rt):
        try:
            lr = sel.parse_label_selector(self.q.get('labelSelector'))
        except sel.SelectorError as e:
            raise ApiError(400, 'BadRequest', 'unable to parse requirement: %s' % e)
        try:
            fr = sel.parse_field_selector(self.q.get('fieldSelector'))
        except sel.SelectorError as e:
            raise ApiError(400, 'BadRequest', str(e))
        for f, _, _ in fr:
            if f not in rt.fields:
                raise ApiError(400, 'BadRequest', 'field label not supported: %s' % f)
        return lr, fr

    def list(self, rt, ns):
        store = self.api.store
        lr, fr = self._selectors(rt)
        limit = int(self.q.get('limit') or 0)
        cont = self.q.get('continue') or ''
        rv_param = self.q.get('resourceVersion')
        match = self.q.get('resourceVersionMatch', '')
        start = None
        with store.lock:
            if cont:
                try:
                    tok = json.loads(base64.urlsafe_b64decode(cont.encode() + b'==').decode())
                    snap_rv, start = int(tok['rv']), tuple(tok['start'])
                except Exception:
                    raise ApiError(400, 'BadRequest', 'continue key is not valid: invalid continue token')
                if snap_rv < store.compacted:
                    raise ApiError(410, 'Expired', 'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.')
                objs = store.state_at(rt, snap_rv)
            elif rv_param not in (None, '', '0') and match == 'Exact':
                snap_rv = self._rv(rv_param)
                if snap_rv < store.compacted:
                    raise ApiError(410, 'Expired', 'The resourceVersion for the provided list is too old.')
                if snap_rv > store.rv:
                    raise self._too_large(snap_rv)
                objs = store.state_at(rt, snap_rv)
            else:
                if rv_param not in (None, '', '0'):
                    want = self._rv(rv_param)
                    deadline = time.time() + 3
                    while store.rv < want and time.time() < deadline:
                        store.changed.wait(0.2)
                    if store.rv < want:
                        raise self._too_large(want)
                if rv_param == '0':
                    limit = 0                      # served from the watch cache: limit ignored
                snap_rv = store.rv
                objs = dict(store.objs[rt.key])
            keys = sorted(k for k in objs if (ns is None or k[0] == ns) and
                          (start is None or (k[0] or '', k[1]) > (start[0] or '', start[1])))
            keys.sort(key=lambda k: (k[0] or '', k[1]))
            items = []
            nxt = None
            remaining = 0
            for i, k in enumerate(keys):
                o = objs[k]
                if not (sel.labels_match(lr, o['metadata'].get('labels')) and sel.fields_match(fr, o)):
                    continue
                if limit and len(items) >= limit:
                    nxt = items[-1]['metadata']
                    remaining = sum(1 for kk in keys[i:] if True)
                    break
                items.append(copy.deepcopy(o))
        md = {'resourceVersion': str(snap_rv)}
        if nxt is not None:
            md['continue'] = base64.urlsafe_b64encode(json.dumps(
                {'rv': snap_rv, 'start': [nxt.get('namespace') or '', nxt['name']]}).encode()).decode().rstrip('=')
            if not lr and not fr:
                md['remainingItemCount'] = remaining
        if not rt.cr:
            for it in items:
                it.pop('apiVersion', None)
                it.pop('kind', None)
        self.send_json(200, {'kind': rt.kind + 'List', 'apiVersion': rt.api_version, 'metadata': md, 'items': items})

    def _rv(self, s):
        try:
            v = int(s)
            if v < 0:
                raise ValueError
            return v
        except ValueError:
            raise ApiError(400, 'BadRequest', 'resourceVersion: Invalid value: "%s": strconv.ParseUint: parsing "%s": invalid syntax' % (s, s))

    def _too_large(self, want):
        e = ApiError(504, 'Timeout', 'Too large resource version: %d, current: %d' % (want, self.api.store.rv),
                     {'causes': [{'reason': 'ResourceVersionTooLarge', 'message': 'Too large resource version'}],
                      'retryAfterSeconds': 1}, retry_after=1)
        return e

    def _chunk(self, data):
        self.wfile.write(b'%x\r\n%s\r\n' % (len(data), data))
        self.wfile.flush()

    def watch(self, rt, ns):
        api = self.api
        store = api.store
        lr, fr = self._selectors(rt)
        rv_param = self.q.get('resourceVersion')
        bookmarks = self.q.get('allowWatchBookmarks') in ('true', '1', 'True')
        initial = self.q.get('sendInitialEvents') in ('true', '1', 'True')
        if initial and (not bookmarks or self.q.get('resourceVersionMatch') != 'NotOlderThan'):
            raise ApiError(422, 'Invalid', 'ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled and allowWatchBookmarks is true and resourceVersionMatch is NotOlderThan')
        ts = self.q.get('timeoutSeconds')
        timeout = float(ts) if ts else random.uniform(*api.default_watch_timeout)
        since = None
        if rv_param not in (None, '', '0') and not initial:
            since = self._rv(rv_param)
            deadline = time.time() + 3
            with store.lock:
                while store.rv < since and time.time() < deadline:
                    store.changed.wait(0.2)
                if store.rv < since:
                    raise self._too_large(since)
        w = Watcher(rt, ns, lr, fr)
        expired = None
        try:
            store.add_watcher(w, since)
            if initial:
                with store.lock:
                    w.q.put(('BOOKMARK', {'kind': rt.kind, 'apiVersion': rt.api_version,
                                          'metadata': {'resourceVersion': str(store.rv),
                                                       'annotations': {'k8s.io/initial-events-end': 'true'}}}))
        except ApiError as e:
            expired = e
        self.send_response(200)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Transfer-Encoding', 'chunked')
        self.send_header('Cache-Control', 'no-cache, private')
        self.end_headers()
        self._code = 200
        try:
            if expired is not None:
                self._chunk(json.dumps({'type': 'ERROR', 'object': expired.status()}, separators=(',', ':')).encode() + b'\n')
                self._chunk(b'')
                return
            end = time.time() + timeout
            next_bm = time.time() + api.bookmark_interval
            while True:
                now = time.time()
                if now >= end:
                    break
                try:
                    item = w.q.get(timeout=max(0.01, min(end, next_bm) - now))
                except Exception:
                    item = 'tick'
                if item is None:                  # dropped by the control API: cut the connection
                    self._cut()
                    return
                if item == 'tick':
                    if bookmarks and time.time() >= next_bm:
                        self._bookmark(rt, w)
                        next_bm = time.time() + api.bookmark_interval
                    continue
                # the events already queued go out in one write, as kube-apiserver's watch
                # handler flushes only once its event channel is empty (serveWatch: a
                # Flush when len(ch) == 0); one write and flush per event made the client
                # read them one at a time however many were waiting
                out, closing = [], False
                while True:
                    etype, obj = item
                    out.append(json.dumps({'type': etype, 'object': obj}, separators=(',', ':')).encode() + b'\n')
                    if len(out) >= 256:
                        break
                    try:
                        item = w.q.get_nowait()
                    except Exception:
                        break
                    if item is None:
                        closing = True
                        break
                    if item == 'tick':
                        break
                self._chunk(b''.join(out))
                if closing:
                    self._cut()
                    return
            if bookmarks:                           # one just before the timeout
                self._bookmark(rt, w)
                while True:
                    try:
                        item = w.q.get_nowait()
                    except Exception:
                        break
                    if item is None:
                        break
                    self._chunk(json.dumps({'type': item[0], 'object': item[1]}, separators=(',', ':')).encode() + b'\n')
            self._chunk(b'')
        finally:
            store.remove_watcher(w)

    def _cut(self):
        """End the watch's connection at once (as a dropped watch or an API server going away
        does): no terminating chunk."""
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _bookmark(self, rt, w):
        with self.api.store.lock:
            w.q.put(('BOOKMARK', {'kind': rt.kind, 'apiVersion': rt.api_version,
                                  'metadata': {'resourceVersion': str(self.api.store.rv)}}))

    # ---- writes ------------------------------------------------------------------------------------
    def _dry(self):
        return self.q.get('dryRun') == 'All'

    def _admit(self, op, rt, sub, ns, name, obj, old, options=None):
        adm = self.api.admission
        if adm is None:
            return obj
        obj = adm.mutate(op, rt, sub, ns, name, obj, old, self._dry(), self._user, options, self._warnings)
        adm.validate(op, rt, sub, ns, name, obj, old, self._dry(), self._user, options, self._warnings)
        return obj

    def create(self, rt, ns):
        store = self.api.store
        body = self._json_body()
        if isinstance(body, dict) and body.get('kind') and body.get('kind') != rt.kind and not body.get('kind', '').endswith('Options'):
            raise ApiError(400, 'BadRequest', 'the API version in the data (%s) does not match the expected API version (%s)'
                           % (body.get('apiVersion'), rt.api_version))
        obj = self._create_admitted(rt, ns, body)
        if self._dry():
            return self.send_json(201, obj)
        self.send_json(201, store.commit_create(rt, obj))

    def _create_admitted(self, rt, ns, body):
        store = self.api.store
        obj = store.prepare_create(rt, ns, body)
        opts = {'kind': 'CreateOptions', 'apiVersion': 'meta.k8s.io/v1'}
        md = obj['metadata']
        if self.api.admission is not None:
            obj = self.api.admission.mutate('CREATE', rt, None, md.get('namespace'), md.get('name', ''), obj, None,
                                            self._dry(), self._user, opts, self._warnings)
        obj = store.finalize_create(rt, obj)
        if self.api.admission is not None:
            self.api.admission.validate('CREATE', rt, None, obj['metadata'].get('namespace'),
                                        obj['metadata']['name'] if md.get('name') else '', obj, None,
                                        self._dry(), self._user, opts, self._warnings)
        return obj

    def _current(self, rt, ns, name):
        """The stored object (not a copy: read it, never change it)."""
        obj = self.api.store.get_shared(rt.key, ns, name)
        if obj is None:
            raise not_found(rt, name)
        return obj

    def update(self, rt, ns, name, sub):
        store = self.api.store
        body = self._json_body()
        if sub == 'finalize':
            sub = None
        old = self._current(rt, ns, name)
        want = (body.get('metadata') or {}).get('resourceVersion') if isinstance(body, dict) else None
        if want and want != old['metadata']['resourceVersion']:
            raise conflict(rt, name)
        new = store.prepare_update(rt, old, body, sub)
        if not want:
            new['metadata'].pop('resourceVersion', None)
        new = self._admit('UPDATE', rt, sub, ns, name, new, old,
                          {'kind': 'UpdateOptions', 'apiVersion': 'meta.k8s.io/v1'})
        if self._dry():
            return self.send_json(200, new)
        self.send_json(200, store.commit_update(rt, new, owned=True))

    def patch(self, rt, ns, name, sub):
        store = self.api.store
        ctype = (self.headers.get('Content-Type') or '').split(';')[0].strip()
        raw = self._body()
        try:
            p = json.loads(raw)
        except ValueError as e:
            if ctype == 'application/apply-patch+yaml':
                raise ApiError(415, 'UnsupportedMediaType', 'the simulator accepts server-side apply bodies only as JSON')
            raise ApiError(400, 'BadRequest', 'error decoding patch: %s' % e)
        if ctype == 'application/strategic-merge-patch+json' and rt.cr:
            raise ApiError(415, 'UnsupportedMediaType', 'the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml')
        if ctype not in ('application/json-patch+json', 'application/merge-patch+json',
                         'application/strategic-merge-patch+json', 'application/apply-patch+yaml'):
            raise ApiError(415, 'UnsupportedMediaType', 'the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json')
        if ctype != 'application/json-patch+json' and not isinstance(p, dict):
            raise ApiError(400, 'BadRequest', 'error decoding patch: the patch must be a JSON object')
        for attempt in range(5):
            old = store.get_shared(rt.key, ns, name)   # read only: the engines copy it
            if old is None:
                if ctype == 'application/apply-patch+yaml' and sub is None:
                    obj = self._create_admitted(rt, ns, dict(p, metadata=dict(p.get('metadata') or {}, name=name)))
                    if self._dry():
                        return self.send_json(201, obj)
                    return self.send_json(201, store.commit_create(rt, obj))
                raise not_found(rt, name)
            try:
                if ctype == 'application/json-patch+json':
                    patched = patchlib.json_patch(old, p)
                elif ctype == 'application/merge-patch+json':
                    patched = patchlib.merge_patch(old, p)
                elif ctype == 'application/apply-patch+yaml':
                    patched = patchlib.merge_patch(old, p)
                else:
                    patched = patchlib.strategic_merge_patch(old, p, rt.kind)
            except patchlib.PatchError as e:
                raise ApiError(422, 'Invalid', str(e)) if ctype == 'application/json-patch+json' \
                    else ApiError(400, 'BadRequest', str(e))
            if not isinstance(patched, dict):
                raise ApiError(400, 'BadRequest', 'the patch did not produce an object')
            if _patch_sets_rv(p) and (patched.get('metadata') or {}).get('resourceVersion') != \
                    old['metadata']['resourceVersion']:
                raise conflict(rt, name)
            new = store.prepare_update(rt, old, patched, sub)
            new['metadata']['resourceVersion'] = ''
            new = self._admit('UPDATE', rt, sub, ns, name, new, old,
                              {'kind': 'PatchOptions', 'apiVersion': 'meta.k8s.io/v1'})
            if self._dry():
                return self.send_json(200, new)
            try:
                return self.send_json(200, store.commit_update(rt, new, expect_rv=old['metadata']['resourceVersion'],
                                                               owned=True))
            except ApiError as e:
                if e.code != 409 or _patch_sets_rv(p) or attempt == 4:
                    raise

    def _delete_options(self):
        body = self._json_body(required=False) or {}
        if not isinstance(body, dict):
            raise ApiError(400, 'BadRequest', 'DeleteOptions must be an object')
        grace = body.get('gracePeriodSeconds')
        if self.q.get('gracePeriodSeconds') not in (None, ''):
            grace = int(self.q['gracePeriodSeconds'])
        prop = body.get('propagationPolicy') or self.q.get('propagationPolicy')
        if body.get('orphanDependents') is True:
            prop = 'Orphan'
        if prop not in (None, 'Orphan', 'Background', 'Foreground'):
            raise ApiError(400, 'BadRequest', 'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "%s": supported values: "Foreground", "Background", "Orphan", "nil"' % prop)
        if body.get('dryRun') == ['All']:
            self.q['dryRun'] = 'All'
        return grace, body.get('preconditions'), prop, body

    def delete(self, rt, ns, name):
        store = self.api.store
        grace, pre, prop, body = self._delete_options()
        old = self._current(rt, ns, name)
        self._admit('DELETE', rt, None, ns, name, None, old,
                    dict(body, kind='DeleteOptions', apiVersion='meta.k8s.io/v1'))
        if self._dry():
            return self.send_json(200, old)
        obj = store.delete(rt.key, ns, name, grace=grace, preconditions=pre, propagation=prop)
        if store.get(rt.key, ns, name) is None and not rt.cr and rt.key not in ('pods', 'nodes', 'namespaces'):
            return self.send_json(200, _status_ok({'name': name, 'group': rt.group, 'kind': rt.resource,
                                                   'uid': obj['metadata']['uid']}))
        self.send_json(200, obj)

    def delete_collection(self, rt, ns):
        store = self.api.store
        grace, pre, prop, body = self._delete_options()
        lr, fr = self._selectors(rt)
        items = []
        for o in store.list(rt.key, ns):
            md = o['metadata']
            if sel.labels_match(lr, md.get('labels')) and sel.fields_match(fr, o):
                self._admit('DELETE', rt, None, md.get('namespace'), md['name'], None, o,
                            dict(body, kind='DeleteOptions', apiVersion='meta.k8s.io/v1'))
                if not self._dry():
                    try:
                        o = store.delete(rt.key, md.get('namespace'), md['name'], grace=grace, propagation=prop)
                    except ApiError as e:
                        if e.code != 404:
                            raise
                items.append(o)
        self.send_json(200, {'kind': rt.kind + 'List', 'apiVersion': rt.api_version,
                             'metadata': {'resourceVersion': str(store.rv)}, 'items': items})

    # ---- <workload>/scale (autoscaling/v1 Scale) ---------------------------------------------------
    @staticmethod
    def _scale_of(obj):
        md = obj['metadata']
        sel_obj = (obj.get('spec') or {}).get('selector') or {}
        selector = ','.join(['%s=%s' % kv for kv in sorted((sel_obj.get('matchLabels') or {}).items())] +
                            ['%s %s (%s)' % (e['key'], e['operator'].lower(), ','.join(e.get('values') or []))
                             if e['operator'] in ('In', 'NotIn') else
                             (e['key'] if e['operator'] == 'Exists' else '!' + e['key'])
                             for e in sel_obj.get('matchExpressions') or []])
        return {'apiVersion': 'autoscaling/v1', 'kind': 'Scale',
                'metadata': {k: md[k] for k in ('name', 'namespace', 'uid', 'resourceVersion', 'creationTimestamp')
                             if k in md},
                'spec': {'replicas': int((obj.get('spec') or {}).get('replicas', 1))},
                'status': {'replicas': int((obj.get('status') or {}).get('replicas', 0)), 'selector': selector}}

    def scale(self, rt, ns, name, method):
        store = self.api.store
        old = self._current(rt, ns, name)
        cur = self._scale_of(old)
        if method in ('GET', 'HEAD'):
            return self.send_json(200, cur)
        if method == 'PUT':
            body = self._json_body()
        elif method == 'PATCH':
            ctype = (self.headers.get('Content-Type') or '').split(';')[0].strip()
            p = self._json_body()
            try:
                body = patchlib.json_patch(cur, p) if ctype == 'application/json-patch+json' else \
                    patchlib.merge_patch(cur, p)
            except patchlib.PatchError as e:
                raise ApiError(422, 'Invalid', str(e))
        else:
            raise ApiError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource')
        want = (body.get('metadata') or {}).get('resourceVersion')
        if want and want != old['metadata']['resourceVersion']:
            raise conflict(rt, name)
        replicas = (body.get('spec') or {}).get('replicas')
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
            raise ApiError(422, 'Invalid', 'Scale.autoscaling "%s" is invalid: spec.replicas: Invalid value: %r: must be greater than or equal to 0' % (name, replicas))
        new = copy.deepcopy(old)
        new['spec']['replicas'] = replicas
        new = store.prepare_update(rt, old, new)
        new['metadata']['resourceVersion'] = ''
        new = self._admit('UPDATE', rt, 'scale', ns, name, new, old, {'kind': 'UpdateOptions', 'apiVersion': 'meta.k8s.io/v1'})
        if self._dry():
            return self.send_json(200, self._scale_of(new))
        self.send_json(200, self._scale_of(store.commit_update(rt, new, expect_rv=old['metadata']['resourceVersion'])))

    # ---- pods/binding, pods/eviction ---------------------------------------------------------------------
    def bind(self, rt, ns, name):
        store = self.api.store
        body = self._json_body()
        if (body.get('metadata') or {}).get('name') not in (None, name):
            raise ApiError(400, 'BadRequest', 'name in URL does not match name in Binding object')
        target = (body.get('target') or {}).get('name')
        if not target:
            raise ApiError(422, 'Invalid', 'Binding "%s" is invalid: target.name: Required value' % name)
        self._admit('CREATE', rt, 'binding', ns, name, body, None, {'kind': 'CreateOptions', 'apiVersion': 'meta.k8s.io/v1'})
        if not self._dry():
            import controllers
            controllers.bind_pod(store, ns, name, target)
        self.send_json(201, _status_ok(code=201))

    def evict(self, rt, ns, name):
        store = self.api.store
        body = self._json_body()
        if not isinstance(body, dict):
            raise ApiError(400, 'BadRequest', 'Eviction must be an object')
        if (body.get('metadata') or {}).get('name') != name:
            raise ApiError(400, 'BadRequest', 'name in URL does not match name in Eviction object')
        self._admit('CREATE', rt, 'eviction', ns, name, body, None, {'kind': 'CreateOptions', 'apiVersion': 'meta.k8s.io/v1'})
        opts = body.get('deleteOptions') or {}
        if opts.get('dryRun') == ['All']:
            self.q['dryRun'] = 'All'
        import controllers
        controllers.evict_pod(store, ns, name, opts, self._dry(), self.api.pdb_retry_after)
        self.send_json(201, _status_ok(code=201))


def _patch_sets_rv(p):
    if isinstance(p, dict):
        return bool((p.get('metadata') or {}).get('resourceVersion')) if isinstance(p.get('metadata'), dict) else False
    if isinstance(p, list):
        return any(isinstance(op, dict) and op.get('path') == '/metadata/resourceVersion' for op in p)
    return False
