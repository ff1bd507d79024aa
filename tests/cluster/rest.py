"""A small Kubernetes REST client (Python standard library) for the real-cluster test
tier: HTTPS with the cluster CA, a client certificate or a bearer token, JSON in and
out, one keep-alive connection per thread, and watches as a generator of events."""
import http.client
import json
import ssl
import threading
import urllib.parse


class ApiError(Exception):
    def __init__(self, code, body):
        self.code = code
        self.body = body
        super().__init__('HTTP %d: %s' % (code, body[:300] if isinstance(body, str) else body))


class Api:
    def __init__(self, server, ca_file, cert=None, token=None, timeout=30):
        u = urllib.parse.urlsplit(server)
        self.host, self.port = u.hostname, u.port or 443
        self.ctx = ssl.create_default_context(cafile=ca_file)
        if cert:
            self.ctx.load_cert_chain(*cert)
        self.token = token
        self.timeout = timeout
        self._local = threading.local()

    def _conn(self, fresh=False, timeout=None):
        c = getattr(self._local, 'conn', None)
        if fresh or c is None:
            if c is not None:
                c.close()
            c = http.client.HTTPSConnection(self.host, self.port, context=self.ctx,
                                            timeout=timeout or self.timeout)
            self._local.conn = c
        return c

    def _headers(self, ctype):
        h = {'Accept': 'application/json', 'User-Agent': 'nodewarden-tests-cluster'}
        if ctype:
            h['Content-Type'] = ctype
        if self.token:
            h['Authorization'] = 'Bearer ' + self.token
        return h

    def request(self, method, path, body=None, ctype='application/json'):
        """(status, decoded JSON or text). Retries once on a dropped keep-alive."""
        data = json.dumps(body).encode() if body is not None else None
        for attempt in (0, 1):
            c = self._conn(fresh=attempt > 0)
            try:
                c.request(method, path, body=data, headers=self._headers(ctype if data else None))
                r = c.getresponse()
                raw = r.read()
                break
            except (http.client.HTTPException, OSError):
                c.close()
                self._local.conn = None
                if attempt:
                    raise
        try:
            return r.status, json.loads(raw) if raw else None
        except ValueError:
            return r.status, raw.decode(errors='replace')

    def call(self, method, path, body=None, ctype='application/json', ok=(200, 201, 202)):
        code, obj = self.request(method, path, body, ctype)
        if code not in ok:
            raise ApiError(code, obj if isinstance(obj, str) else json.dumps(obj))
        return obj

    def get(self, path):
        return self.call('GET', path)

    def create(self, path, obj):
        return self.call('POST', path, obj)

    def merge(self, path, patch):
        return self.call('PATCH', path, patch, 'application/merge-patch+json')

    def delete(self, path, opts=None):
        return self.call('DELETE', path, opts)

    def watch(self, path, stop):
        """Yield (type, object) of a watch on path (which carries resourceVersion etc.)
        until stop is set or the server ends the watch, which it does after 15 s."""
        sep = '&' if '?' in path else '?'
        c = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=60)
        try:
            c.request('GET', path + sep + 'watch=1&allowWatchBookmarks=true&timeoutSeconds=15',
                      headers=self._headers(None))
            r = c.getresponse()
            if r.status != 200:
                raise ApiError(r.status, r.read().decode(errors='replace'))
            buf = b''
            while not stop.is_set():
                chunk = r.read1(65536)
                if not chunk:
                    return
                buf += chunk
                while b'\n' in buf:
                    line, buf = buf.split(b'\n', 1)
                    if line.strip():
                        ev = json.loads(line)
                        yield ev['type'], ev['object']
        finally:
            c.close()
