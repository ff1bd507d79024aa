"""The simulator's control API: plain HTTP on loopback, JSON in and out.

    control = Control()
    control.route('POST', '/kube/drop-watches', fn)   # fn(method, path, query, body) -> (status, obj)
    control.serve('127.0.0.1', 0)

Routes match on method and the longest path prefix. `GET /` lists the routes.
"""
import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Control:
    def __init__(self):
        self.routes = []        # (method, prefix, fn, help)
        self.server = None
        self.address = None
        self.route('GET', '/', lambda m, p, q, b: (200, {'routes': [
            {'method': r[0], 'path': r[1], 'help': r[3]} for r in self.routes]}), 'list routes')

    def route(self, method, path_prefix, fn, help=''):
        self.routes.append((method.upper(), path_prefix, fn, help))
        self.routes.sort(key=lambda r: -len(r[1]))

    def dispatch(self, method, path, query, body):
        for m, prefix, fn, _ in self.routes:
            if m != method:
                continue
            if path == prefix or (path.startswith(prefix.rstrip('/') + '/') and prefix != '/') or \
                    (prefix == '/' and path == '/'):
                return fn(method, path, query, body)
        return 404, {'error': 'no route for %s %s' % (method, path)}

    def serve(self, host, port):
        control = self

        class H(BaseHTTPRequestHandler):
            protocol_version = 'HTTP/1.1'

            def log_message(self, *a):
                pass

            def _do(self):
                u = urllib.parse.urlsplit(self.path)
                q = {k: v[-1] for k, v in urllib.parse.parse_qs(u.query, keep_blank_values=True).items()}
                n = int(self.headers.get('Content-Length') or 0)
                raw = self.rfile.read(n) if n else b''
                try:
                    body = json.loads(raw) if raw.strip() else {}
                    status, obj = control.dispatch(self.command, u.path, q, body)
                except ValueError as e:
                    status, obj = 400, {'error': str(e)}
                except Exception as e:   # report, keep serving
                    status, obj = 500, {'error': repr(e)}
                data = json.dumps(obj, indent=1, default=str).encode()
                self.send_response(status)
                self.send_header('Content-Type', 'application/json')
                self.send_header('Content-Length', str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = _do

        class S(ThreadingHTTPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.server = S((host, port), H)
        self.address = self.server.server_address
        threading.Thread(target=self.server.serve_forever, name='control', daemon=True).start()
        return self.server

    def shutdown(self):
        if self.server:
            self.server.shutdown()
            self.server.server_close()


def register_kube(control, store, api, admission, controllers):
    """The Kubernetes half's routes."""
    def drop(m, p, q, b):
        return 200, {'dropped': store.drop_watches()}

    def reset(m, p, q, b):
        mode = (b or {}).get('mode') or q.get('mode') or 'wipe'
        if mode not in ('wipe', 'restore'):
            return 400, {'error': 'mode must be wipe or restore'}
        n = store.reset(mode)
        return 200, {'mode': mode, 'droppedWatches': n, 'resourceVersion': str(store.rv)}

    def faults_get(m, p, q, b):
        return 200, api.faults.as_dict()

    def faults_set(m, p, q, b):
        f = api.faults
        with f.lock:
            if 'latency' in b:
                f.latency = float(b['latency'])
            if 'errorCode' in b:
                f.error_code = int(b['errorCode'])
            if 'errorRate' in b:
                f.error_rate = float(b['errorRate'])
            if 'errorCount' in b:
                f.error_count = int(b['errorCount'])
            if 'errorPath' in b:
                f.error_path = str(b['errorPath'])
            if 'errorVerbs' in b:
                f.error_verbs = [str(v).upper() for v in b['errorVerbs']]
        if 'pdbRetryAfter' in b:
            api.pdb_retry_after = int(b['pdbRetryAfter'])
        return 200, api.faults.as_dict()

    def faults_clear(m, p, q, b):
        f = api.faults
        with f.lock:
            f.latency, f.error_code, f.error_rate, f.error_count = 0.0, 0, 0.0, 0
            f.error_path, f.error_verbs = '', []
        api.pdb_retry_after = 0
        return 200, api.faults.as_dict()

    def requests(m, p, q, b):
        since = int(q.get('since') or 0)
        out = api.requests(since)
        if q.get('path'):
            out = [e for e in out if e['path'].startswith(q['path'])]
        return 200, {'requests': out}

    def calls(m, p, q, b):
        with admission.calls_lock:
            return 200, {'calls': list(admission.calls)}

    def objects(m, p, q, b):
        parts = p.split('/')[3:]
        if not parts or not parts[0]:
            return 200, {'resources': sorted(store.types)}
        try:
            items = store.list(parts[0], q.get('namespace') or None)
        except Exception as e:
            return 404, {'error': str(e)}
        return 200, {'items': items}

    def pod_summary(m, p, q, b):
        # a cheap progress probe for benchmarks: no copies, no serialisation of pods
        total = bound = 0
        for pod in store.peek('pods', q.get('namespace') or None):
            total += 1
            if (pod.get('spec') or {}).get('nodeName'):
                bound += 1
        return 200, {'pods': total, 'bound': bound}

    def errors(m, p, q, b):
        return 200, {'controllerErrors': list(controllers.errors) if controllers else []}

    control.route('POST', '/kube/drop-watches', drop, 'close every open watch connection')
    control.route('POST', '/kube/reset', reset, '{"mode":"wipe"|"restore"}: restart the API server state')
    control.route('GET', '/kube/faults', faults_get, 'current kube faults')
    control.route('POST', '/kube/faults', faults_set,
                  '{"latency":s,"errorCode":500,"errorRate":0.5,"errorCount":n,"errorPath":"/api/v1/pods","errorVerbs":["GET"],"pdbRetryAfter":s}')
    control.route('DELETE', '/kube/faults', faults_clear, 'clear kube faults')
    control.route('GET', '/kube/requests', requests, '?since=<seq>&path=<prefix>: kube requests log')
    control.route('GET', '/kube/webhook-calls', calls, 'admission webhook calls and outcomes')
    control.route('GET', '/kube/objects', objects, '/kube/objects/<resource>?namespace=: stored objects')
    control.route('GET', '/kube/errors', errors, 'controller errors')
    control.route('GET', '/kube/pod-summary', pod_summary, '?namespace=: number of pods and of bound pods')
