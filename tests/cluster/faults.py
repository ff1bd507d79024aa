"""Bad days of the API server for the real-cluster tier (docs/robustness.md, "The API
server's bad days"): two proxies, both in the test tooling, never in nodewarden.

DelayProxy   a TCP proxy between kube-apiserver and etcd's client port that holds every
             chunk for `delay` seconds each way (etcd slowed: a slow disk, a far
             member). Only the API server's connections to this cluster's etcd pass
             through it; nothing else on the machine is touched (no tc, no netem).

ApiFaultProxy
             an HTTPS reverse proxy in front of kube-apiserver for nodewarden's
             connection only (its kubeconfig names the proxy; kubectl, the node agent,
             kube-scheduler and kube-controller-manager talk to the API server itself).
             It serves a certificate of the cluster CA for its address, forwards each
             request with its own headers (the ServiceAccount token) over TLS verified
             against the cluster CA, streams watches line by line, and on demand:
               refuse(n, code, retry_after, match)   the next n matching requests
                   (watches too) are answered `code` (429, 503, ...) with a Retry-After
                   header and a Status, without reaching the API server (what
                   max-in-flight and priority-and-fairness answer);
               lose(n, code, match)   the next n matching requests (not watches) are
                   forwarded (the API server acts on them) and their answer replaced by
                   `code` (a 504 "the request may have completed": the etcd timeout of a
                   slow day);
               expire_watches(seconds)   every open watch gets the API server's ERROR
                   event (410 Expired) and ends, and for `seconds` every watch that
                   resumes from a resourceVersion gets the same: the watch window is
                   gone, only a relist helps.
             Every request is logged, one JSON line each: method, path, the code
             nodewarden got, the API server's code when it was reached, the fault.
"""
import http.client
import http.server
import json
import os
import socket
import ssl
import threading
import time
import urllib.parse

HOP = {'connection', 'keep-alive', 'transfer-encoding', 'content-length', 'host',
       'proxy-connection', 'te', 'trailer', 'upgrade'}
EXPIRED = {'type': 'ERROR', 'object': {
    'kind': 'Status', 'apiVersion': 'v1', 'metadata': {}, 'status': 'Failure',
    'message': 'too old resource version (expired by the test proxy)', 'reason': 'Expired',
    'code': 410}}
MESSAGES = {
    429: ('TooManyRequests', 'Too many requests, please try again later.'),
    500: ('InternalError', 'Internal error occurred: injected by the test proxy'),
    503: ('ServiceUnavailable', 'The server is currently unable to handle the request'),
    504: ('Timeout', 'Timeout: request did not complete within requested timeout - '
                     'context deadline exceeded'),
}


class DelayProxy:
    """TCP proxy host:port -> target; every chunk is held `delay` seconds each way."""

    def __init__(self, host, target_host, target_port):
        self.target = (target_host, target_port)
        self.delay = 0.0
        self.connections = 0
        self.delayed_chunks = 0
        self._stop = threading.Event()
        self._lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._lsock.bind((host, 0))
        self._lsock.listen(64)
        self.port = self._lsock.getsockname()[1]
        self.url = 'http://%s:%d' % (host, self.port)
        self._socks = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def set_delay(self, seconds):
        self.delay = float(seconds)

    def _accept(self):
        while not self._stop.is_set():
            try:
                a, _ = self._lsock.accept()
            except OSError:
                return
            try:
                b = socket.create_connection(self.target, timeout=10)
                b.settimeout(None)
            except OSError:
                a.close()
                continue
            for s in (a, b):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self.connections += 1
                self._socks += [a, b]
            self._pipe(a, b)
            self._pipe(b, a)

    def _pipe(self, src, dst):
        q, cv = [], threading.Condition()

        def reader():
            while True:
                try:
                    data = src.recv(65536)
                except OSError:
                    data = b''
                with cv:
                    q.append((time.monotonic() + self.delay, data))
                    cv.notify()
                if not data:
                    return

        def writer():
            while True:
                with cv:
                    while not q:
                        cv.wait()
                    due, data = q.pop(0)
                wait = due - time.monotonic()
                if wait > 0:
                    self.delayed_chunks += 1
                    time.sleep(wait)
                if not data:
                    try:
                        dst.shutdown(socket.SHUT_WR)
                    except OSError:
                        pass
                    return
                try:
                    dst.sendall(data)
                except OSError:
                    for s in (src, dst):
                        try:
                            s.shutdown(socket.SHUT_RDWR)
                        except OSError:
                            pass
                    return
        threading.Thread(target=reader, daemon=True).start()
        threading.Thread(target=writer, daemon=True).start()

    def close(self):
        self._stop.set()
        self._lsock.close()
        with self._lock:
            for s in self._socks:
                try:
                    s.close()
                except OSError:
                    pass


def _status(code):
    reason, msg = MESSAGES.get(code, ('InternalError', 'injected by the test proxy'))
    return {'kind': 'Status', 'apiVersion': 'v1', 'metadata': {}, 'status': 'Failure',
            'message': msg, 'reason': reason, 'details': {}, 'code': code}


class _Fault:
    def __init__(self, kind, n, code, retry_after, match):
        self.kind, self.n, self.code, self.retry_after, self.match = kind, n, code, retry_after, match


class ApiFaultProxy:
    def __init__(self, host, upstream, ca_file, cert, key, log_path):
        u = urllib.parse.urlsplit(upstream)
        self.up_host, self.up_port = u.hostname, u.port or 443
        self.up_ctx = ssl.create_default_context(cafile=ca_file)
        self.log_path = log_path
        self._log_lock = threading.Lock()
        self._lock = threading.Lock()
        self._faults = []
        self._watches = set()
        self.expire_until = 0.0
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = 'HTTP/1.1'

            def log_message(self, *a):
                pass

            def do_GET(self):
                proxy._handle(self)
            do_POST = do_PUT = do_PATCH = do_DELETE = do_GET

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address):
                pass

        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        ctx.set_alpn_protocols(['http/1.1'])
        self.server = Server((host, 0), Handler)
        self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True,
                                             do_handshake_on_connect=False)
        self.port = self.server.server_address[1]
        self.url = 'https://%s:%d' % (host, self.port)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    # ---- faults ----
    def refuse(self, n, code, retry_after=None, match=None):
        """The next n requests matching match(method, path) (all: None) answered code."""
        with self._lock:
            self._faults.append(_Fault('refuse', n, code, retry_after, match))

    def lose(self, n, code=504, match=None):
        """The next n matching requests forwarded, their answer replaced by code."""
        with self._lock:
            self._faults.append(_Fault('lose', n, code, None, match))

    def pending(self):
        with self._lock:
            return sum(f.n for f in self._faults)

    def expire_watches(self, seconds=0.0):
        with self._lock:
            self.expire_until = time.monotonic() + seconds
            ws = list(self._watches)
        for w in ws:
            w.expire()
        return len(ws)

    def _take(self, method, path, watch):
        with self._lock:
            for f in self._faults:
                if f.kind == 'lose' and watch:
                    continue
                if f.n > 0 and (f.match is None or f.match(method, path)):
                    f.n -= 1
                    return f
        return None

    def records(self):
        try:
            with open(self.log_path) as f:
                return [json.loads(line) for line in f if line.strip()]
        except OSError:
            return []

    def _log(self, **rec):
        rec['t'] = round(time.time(), 3)
        with self._log_lock, open(self.log_path, 'a') as f:
            f.write(json.dumps(rec) + '\n')

    # ---- requests ----
    def _reply(self, h, code, obj, headers=()):
        body = json.dumps(obj).encode()
        h.send_response(code)
        h.send_header('Content-Type', 'application/json')
        h.send_header('Content-Length', str(len(body)))
        for k, v in headers:
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(body)

    def _handle(self, h):
        method, path = h.command, h.path
        n = int(h.headers.get('Content-Length') or 0)
        body = h.rfile.read(n) if n else None
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(path).query)
        watch = q.get('watch', [''])[0] in ('1', 'true')
        rv = q.get('resourceVersion', [''])[0]
        if watch and rv not in ('', '0') and time.monotonic() < self.expire_until:
            self._stream_start(h)
            self._chunk(h, json.dumps(EXPIRED).encode() + b'\n')
            self._chunk(h, b'')
            self._log(method=method, path=path, code=200, fault='expired')
            return
        f = self._take(method, path, watch)
        if f is not None and f.kind == 'refuse':
            hd = [('Retry-After', str(f.retry_after))] if f.retry_after is not None else []
            st = _status(f.code)
            if f.retry_after is not None:
                st['details'] = {'retryAfterSeconds': f.retry_after}
            self._reply(h, f.code, st, hd)
            self._log(method=method, path=path, code=f.code, fault='refuse')
            return
        conn = http.client.HTTPSConnection(self.up_host, self.up_port, context=self.up_ctx,
                                           timeout=None if watch else 70)
        headers = {k: v for k, v in h.headers.items() if k.lower() not in HOP}
        if body is not None:
            headers['Content-Length'] = str(len(body))
        try:
            conn.request(method, path, body=body, headers=headers)
            r = conn.getresponse()
        except (OSError, http.client.HTTPException) as e:
            # the API server is away: the client sees its connection end, as with no proxy
            conn.close()
            self._log(method=method, path=path, code=0, error=str(e)[:200])
            h.close_connection = True
            return
        try:
            if watch and r.status == 200:
                self._watch(h, conn, r, method, path)
                return
            data = r.read()
            if f is not None:  # lose: the API server acted; nodewarden hears code
                self._reply(h, f.code, _status(f.code))
                self._log(method=method, path=path, code=f.code, upstream=r.status, fault='lose')
                return
            h.send_response(r.status)
            for k, v in r.getheaders():
                if k.lower() not in HOP:
                    h.send_header(k, v)
            h.send_header('Content-Length', str(len(data)))
            h.end_headers()
            h.wfile.write(data)
            self._log(method=method, path=path, code=r.status)
        finally:
            conn.close()

    def _stream_start(self, h):
        h.send_response(200)
        h.send_header('Content-Type', 'application/json')
        h.send_header('Transfer-Encoding', 'chunked')
        h.end_headers()

    def _chunk(self, h, data):
        h.wfile.write(b'%x\r\n%s\r\n' % (len(data), data))
        h.wfile.flush()

    def _watch(self, h, conn, r, method, path):
        w = _Watch(conn)
        with self._lock:
            self._watches.add(w)
        events = 0
        try:
            self._stream_start(h)
            while not w.expired:
                try:
                    line = r.readline()
                except (OSError, http.client.HTTPException, ValueError):
                    line = b''
                if not line or w.expired:
                    break
                self._chunk(h, line)
                events += 1
            if w.expired:
                self._chunk(h, json.dumps(EXPIRED).encode() + b'\n')
            self._chunk(h, b'')
        except OSError:
            pass
        finally:
            with self._lock:
                self._watches.discard(w)
            self._log(method=method, path=path, code=200, events=events,
                      fault='expired' if w.expired else None)

    def close(self):
        self.server.shutdown()
        self.server.server_close()
        with self._lock:
            ws = list(self._watches)
        for w in ws:
            w.expire()


class _Watch:
    def __init__(self, conn):
        self.conn = conn
        self.expired = False

    def expire(self):
        self.expired = True
        try:
            self.conn.sock.shutdown(socket.SHUT_RDWR)
        except (OSError, AttributeError):
            pass


def path_is(resource, method=None):
    """A match for refuse/lose: requests on resource (e.g. "nodeclaims", "eviction")."""
    def match(m, p):
        base = urllib.parse.urlsplit(p).path
        return (method is None or m == method) and (
            base.endswith('/' + resource) or ('/%s/' % resource) in base)
    return match


if __name__ == '__main__':
    print(__doc__)
    os._exit(0)
