"""Dynamic admission as kube-apiserver does it: MutatingWebhookConfigurations (sorted by
name, serial, one reinvocation round) then ValidatingWebhookConfigurations (parallel),
AdmissionReview v1 over HTTPS with caBundle + <svc>.<ns>.svc name checks,
failurePolicy, timeoutSeconds, namespace/object selectors, rules, matchConditions
(a CEL subset), JSONPatch responses, denials and warnings."""
import base64
import copy
import http.client
import json
import socket
import ssl
import threading
import time
import urllib.parse
import uuid

import kselectors as sel
import patch as patchlib
from store import ApiError, validate_meta

SKIP = ('validatingwebhookconfigurations', 'mutatingwebhookconfigurations',
        'validatingadmissionpolicies', 'validatingadmissionpolicybindings')


class CallError(Exception):
    pass


class _Conn(http.client.HTTPSConnection):
    """Connects to addr but verifies (and sends SNI for) the webhook's DNS name."""

    def __init__(self, host, port, addr, context, timeout):
        super().__init__(host, port, context=context, timeout=timeout)
        self._addr = addr

    def connect(self):
        sock = socket.create_connection(self._addr, self.timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)


class Admission:
    def __init__(self, store, services=None):
        self.store = store
        # as the apiserver's webhook client: TLS configs cached per CA bundle, idle
        # keep-alive connections reused per (service address, name, timeout, CA)
        self._ctx_cache = {}
        self._idle = {}
        self._pool_lock = threading.Lock()
        self.services = dict(services or {})   # (namespace, name) -> (host, port)
        self.calls = []                        # (time, webhook, uid, outcome) for inspection
        self.calls_lock = threading.Lock()

    def map_service(self, namespace, name, host, port):
        self.services[(namespace, name)] = (host, int(port))

    # ---- matching -----------------------------------------------------------------------
    @staticmethod
    def rule_matches(rule, op, rt, sub):
        ops = rule.get('operations') or []
        if '*' not in ops and op not in ops:
            return False
        groups = rule.get('apiGroups') or []
        if '*' not in groups and rt.group not in groups:
            return False
        vers = rule.get('apiVersions') or []
        if '*' not in vers and rt.version not in vers:
            return False
        ok = False
        for r in rule.get('resources') or []:
            if r == '*/*':
                ok = True
                break
            res, _, rsub = r.partition('/')
            if res not in ('*', rt.resource):
                continue
            if sub:
                if rsub in (sub, '*'):
                    ok = True
            elif not rsub:
                ok = True
        if not ok:
            return False
        scope = rule.get('scope') or '*'
        if scope == 'Cluster' and rt.namespaced:
            return False
        if scope == 'Namespaced' and not rt.namespaced:
            return False
        return True

    def _matches(self, wh, op, rt, sub, ns, obj, old):
        if not any(self.rule_matches(r, op, rt, sub) for r in wh.get('rules') or []):
            return False
        nsel = wh.get('namespaceSelector') or {}
        if nsel:
            if rt.key == 'namespaces':
                labels_list = [((o or {}).get('metadata') or {}).get('labels') or {} for o in (obj, old) if o]
                if not any(sel.selector_matches(nsel, l) for l in labels_list):
                    return False
            elif rt.namespaced:
                nso = self.store.get('namespaces', None, ns) or {}
                if not sel.selector_matches(nsel, (nso.get('metadata') or {}).get('labels') or {}):
                    return False
        osel = wh.get('objectSelector') or {}
        if osel:
            objs = [o for o in (obj, old) if isinstance(o, dict)]
            if not any(sel.selector_matches(osel, (o.get('metadata') or {}).get('labels') or {}) for o in objs):
                return False
        return True

    def _configs(self, key):
        # the stored objects themselves (read only): every request asks, twice
        return sorted(self.store.peek(key), key=lambda c: c['metadata']['name'])

    # ---- the call ------------------------------------------------------------------------
    def _request(self, op, rt, sub, ns, name, obj, old, dry, user, options):
        req = {
            'uid': str(uuid.uuid4()),
            'kind': {'group': rt.group, 'version': rt.version, 'kind': rt.kind},
            'resource': {'group': rt.group, 'version': rt.version, 'resource': rt.resource},
            'requestKind': {'group': rt.group, 'version': rt.version, 'kind': rt.kind},
            'requestResource': {'group': rt.group, 'version': rt.version, 'resource': rt.resource},
            'name': name or '',
            'operation': op,
            'userInfo': {'username': user or 'system:anonymous',
                         'groups': ['system:masters', 'system:authenticated']},
            'object': obj,
            'oldObject': old,
            'dryRun': bool(dry),
            'options': options,
        }
        if sub:
            req['subResource'] = sub
            req['requestSubResource'] = sub
            if sub == 'eviction':
                req['kind'] = req['requestKind'] = {'group': 'policy', 'version': 'v1', 'kind': 'Eviction'}
            elif sub == 'binding':
                req['kind'] = req['requestKind'] = {'group': '', 'version': 'v1', 'kind': 'Binding'}
        if rt.namespaced and ns:
            req['namespace'] = ns
        elif rt.key == 'namespaces':
            req['namespace'] = name or ''
        if not name:
            req.pop('name')
        return req

    def call(self, wh, request):
        """POST the AdmissionReview; returns the verified response dict or raises CallError."""
        cc = wh.get('clientConfig') or {}
        timeout = int(wh.get('timeoutSeconds') or 10)
        if cc.get('url'):
            u = urllib.parse.urlsplit(cc['url'])
            host, port, path = u.hostname, u.port or 443, u.path or '/'
            addr = (host, port)
            shown = cc['url']
        else:
            svc = cc.get('service') or {}
            host = '%s.%s.svc' % (svc.get('name'), svc.get('namespace'))
            port = int(svc.get('port') or 443)
            path = svc.get('path') or '/'
            shown = 'https://%s:%d%s' % (host, port, path)
            addr = self.services.get((svc.get('namespace'), svc.get('name')))
            if addr is None:
                raise CallError('failed to call webhook: Post "%s?timeout=%ds": service "%s" not found'
                                % (shown, timeout, svc.get('name')))
        url_path = path + ('&' if '?' in path else '?') + 'timeout=%ds' % timeout
        shown_q = '%s?timeout=%ds' % (shown, timeout)
        ca = cc.get('caBundle') or ''
        ctx = self._ctx_cache.get(ca)
        if ctx is None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.minimum_version = ssl.TLSVersion.TLSv1_2
            ctx.set_alpn_protocols(['http/1.1'])
            ctx.check_hostname = True
            ctx.verify_mode = ssl.CERT_REQUIRED
            if ca:
                try:
                    ctx.load_verify_locations(cadata=base64.b64decode(ca).decode())
                except (ssl.SSLError, ValueError, UnicodeDecodeError) as e:
                    raise CallError('failed to call webhook: Post "%s": unable to load root certificates: %s' % (shown_q, e))
            else:
                ctx.load_default_certs()
            with self._pool_lock:
                if len(self._ctx_cache) > 64:
                    self._ctx_cache.clear()
                self._ctx_cache[ca] = ctx
        body = json.dumps({'apiVersion': 'admission.k8s.io/v1', 'kind': 'AdmissionReview',
                           'request': request}).encode()
        pool_key = (host, port, tuple(addr), timeout, ca)
        t0 = time.time()
        while True:
            with self._pool_lock:
                idle = self._idle.get(pool_key)
                conn = idle.pop() if idle else None
            reused = conn is not None
            if conn is None:
                conn = _Conn(host, port, addr, ctx, timeout)
            keep = False
            try:
                conn.request('POST', url_path, body=body, headers={
                    'Content-Type': 'application/json', 'Accept': 'application/json, */*',
                    'User-Agent': 'kube-apiserver-admission'})
                resp = conn.getresponse()
                data = resp.read()
                keep = not resp.will_close
                break
            except ssl.SSLCertVerificationError as e:
                raise CallError('failed to call webhook: Post "%s": tls: failed to verify certificate: %s'
                                % (shown_q, e.verify_message or e))
            except (socket.timeout, TimeoutError):
                raise CallError('failed to call webhook: Post "%s": context deadline exceeded' % shown_q)
            except ConnectionRefusedError:
                raise CallError('failed to call webhook: Post "%s": dial tcp %s:%d: connect: connection refused'
                                % (shown_q, addr[0], addr[1]))
            except (OSError, http.client.HTTPException, ssl.SSLError) as e:
                if reused:                  # the server closed an idle connection: dial again
                    continue
                if time.time() - t0 >= timeout:
                    raise CallError('failed to call webhook: Post "%s": context deadline exceeded' % shown_q)
                raise CallError('failed to call webhook: Post "%s": %s' % (shown_q, e))
            finally:
                if keep:
                    with self._pool_lock:
                        self._idle.setdefault(pool_key, []).append(conn)
                else:
                    conn.close()
        if resp.status < 200 or resp.status >= 300:
            raise CallError('failed to call webhook: an error on the server ("%s") has prevented the request from succeeding'
                            % data[:200].decode('utf-8', 'replace'))
        try:
            review = json.loads(data)
        except ValueError as e:
            raise CallError('received invalid webhook response: %s' % e)
        if not isinstance(review, dict) or review.get('apiVersion') != 'admission.k8s.io/v1' \
                or review.get('kind') != 'AdmissionReview':
            raise CallError('received invalid webhook response: expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got %s, Kind=%s'
                            % ((review or {}).get('apiVersion') if isinstance(review, dict) else '?',
                               (review or {}).get('kind') if isinstance(review, dict) else '?'))
        r = review.get('response')
        if not isinstance(r, dict):
            raise CallError('received invalid webhook response: response was absent')
        if r.get('uid') != request['uid']:
            raise CallError('received invalid webhook response: expected response.uid="%s", got "%s"'
                            % (request['uid'], r.get('uid')))
        return r

    def _record(self, wh, uid, outcome):
        with self.calls_lock:
            self.calls.append({'ts': time.time(), 'webhook': wh.get('name'), 'uid': uid, 'outcome': outcome})
            del self.calls[:-5000]

    # ---- phases ---------------------------------------------------------------------------
    def _deny(self, rt, name, whname, status):
        st = copy.deepcopy(status) if isinstance(status, dict) else {}
        code = st.get('code') or 403
        msg = st.get('message') or ''
        reason = st.get('reason') or ''
        denied = 'admission webhook "%s" denied the request' % whname
        if msg:
            msg = '%s: %s' % (denied, msg)
        elif reason:
            msg = '%s: %s' % (denied, reason)
        else:
            msg = '%s without explanation' % denied
        details = st.get('details')
        if details is None:
            details = {'causes': [{'message': msg}]} if code == 500 else \
                {'group': rt.group, 'kind': rt.resource, 'name': name or 'Unknown'}
        prefix = 'Internal error occurred' if code == 500 else '%s "%s" is forbidden' % (rt.gr(), name or 'Unknown')
        if not reason:
            reason = 'InternalError' if code == 500 else 'Forbidden'
        return ApiError(code, reason, '%s: %s' % (prefix, msg), details)

    @staticmethod
    def _internal(msg):
        return ApiError(500, 'InternalError', 'Internal error occurred: %s' % msg,
                        {'causes': [{'message': msg}]})

    def _conditions(self, wh, request):
        conds = wh.get('matchConditions') or []
        if not conds:
            return True
        import cel
        err = None
        for c in conds:
            try:
                v = cel.evaluate(c.get('expression', ''), {'object': request.get('object'),
                                                           'oldObject': request.get('oldObject'),
                                                           'request': request})
            except cel.CelError as e:
                err = e
                continue
            if v is False:
                return False
        if err is not None:
            raise CallError('failed to evaluate matchCondition: %s' % err)
        return True

    @staticmethod
    def _add_warnings(out, ws):
        for w in ws or []:
            if isinstance(w, str) and w and all(ord(ch) >= 32 and ord(ch) != 127 for ch in w) and w not in out:
                out.append(w)

    def mutate(self, op, rt, sub, ns, name, obj, old, dry, user, options, warnings):
        """Mutating phase. Round 1 calls every matching webhook in order; a webhook with
        reinvocationPolicy IfNeeded is called again in round 2 if the object changed after
        its round-1 call (its own change does not count), as the apiserver's dispatcher does."""
        if rt.key in SKIP:
            return obj
        previously = []          # IfNeeded webhooks called so far (round 1)
        reinvoke = []
        for rnd in (1, 2):
            if rnd == 2 and not reinvoke:
                break
            for cfg in self._configs('mutatingwebhookconfigurations'):
                for wh in cfg.get('webhooks') or []:
                    ident = (cfg['metadata']['name'], wh.get('name'))
                    if rnd == 2 and ident not in reinvoke:
                        continue
                    if not self._matches(wh, op, rt, sub, ns, obj, old):
                        continue
                    request = self._request(op, rt, sub, ns, name, obj, old, dry, user, options)
                    try:
                        if not self._conditions(wh, request):
                            continue
                        resp = self.call(wh, request)
                        if ('patch' in resp) != ('patchType' in resp) or ('patchType' in resp and not resp['patchType']):
                            raise CallError('received invalid webhook response: patch and patchType must be set together')
                        if resp.get('patchType') not in (None, 'JSONPatch'):
                            raise CallError('received invalid webhook response: unsupported patch type "%s"' % resp['patchType'])
                        ops = None
                        if resp.get('patch'):
                            try:
                                ops = json.loads(base64.b64decode(resp['patch'], validate=True))
                            except Exception as e:
                                raise CallError('received invalid webhook response: patch is not valid: %s' % e)
                            if not isinstance(ops, list):
                                raise CallError('received invalid webhook response: patch is not a JSON array')
                    except CallError as e:
                        self._record(wh, request['uid'], 'call failure: %s' % e)
                        if wh.get('failurePolicy', 'Fail') == 'Ignore':
                            continue
                        raise self._internal('failed calling webhook "%s": %s' % (wh.get('name'), e))
                    self._add_warnings(warnings, resp.get('warnings'))
                    if resp.get('allowed') is not True:
                        self._record(wh, request['uid'], 'denied')
                        raise self._deny(rt, name, wh.get('name'), resp.get('status'))
                    changed = False
                    if ops:
                        if obj is None:
                            raise self._internal('admission webhook "%s" attempted to modify the object, which is not supported for this operation' % wh.get('name'))
                        try:
                            new = patchlib.json_patch(obj, ops)
                            if not isinstance(new, dict) or not isinstance(new.get('metadata'), dict):
                                raise patchlib.PatchError('patched object is not an object with metadata')
                            validate_meta(rt, dict(new, metadata=dict(new['metadata'],
                                                                       name=new['metadata'].get('name') or 'x')))
                        except (patchlib.PatchError, ApiError) as e:
                            self._record(wh, request['uid'], 'patch failed: %s' % e)
                            raise self._internal(str(e))
                        changed = new != obj
                        obj = new
                    self._record(wh, request['uid'], ('patched' if changed else 'allowed') +
                                 (' (reinvocation)' if rnd == 2 else ''))
                    if rnd == 1:
                        if changed:
                            reinvoke.extend(i for i in previously if i not in reinvoke)
                        if wh.get('reinvocationPolicy') == 'IfNeeded':
                            previously.append(ident)
        return obj

    def validate(self, op, rt, sub, ns, name, obj, old, dry, user, options, warnings):
        if rt.key in SKIP:
            return
        todo = []
        for cfg in self._configs('validatingwebhookconfigurations'):
            for wh in cfg.get('webhooks') or []:
                if self._matches(wh, op, rt, sub, ns, obj, old):
                    todo.append(wh)
        if not todo:
            return
        results = [None] * len(todo)

        def run(i, wh):
            request = self._request(op, rt, sub, ns, name, obj, old, dry, user, options)
            try:
                if not self._conditions(wh, request):
                    return
                resp = self.call(wh, request)
                if 'patch' in resp or 'patchType' in resp:
                    raise CallError('received invalid webhook response: validating webhook may not return a patch')
            except CallError as e:
                self._record(wh, request['uid'], 'call failure: %s' % e)
                if wh.get('failurePolicy', 'Fail') == 'Ignore':
                    return
                results[i] = self._internal('failed calling webhook "%s": %s' % (wh.get('name'), e))
                return
            results[i] = ('warn', resp.get('warnings'))
            if resp.get('allowed') is not True:
                self._record(wh, request['uid'], 'denied')
                results[i] = self._deny(rt, name, wh.get('name'), resp.get('status'))
            else:
                self._record(wh, request['uid'], 'allowed')

        if len(todo) == 1:
            run(0, todo[0])
        else:
            threads = [threading.Thread(target=run, args=(i, wh), daemon=True) for i, wh in enumerate(todo)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        for r in results:
            if isinstance(r, tuple):
                self._add_warnings(warnings, r[1])
        for r in results:
            if isinstance(r, ApiError):
                raise r
