#!/usr/bin/env python3
"""Cluster simulator entry point.

    python3 tests/sim/sim.py --dir build/sim [--kube-port 0] [--aws-port 0] [--control-port 0]
                             [--boot-delay 2] [--webhook-listen 127.0.0.1:8443]

Starts the Kubernetes API server (HTTPS), the AWS endpoints (when aws.py is present),
the kubelets (kubelet.py) and the control API, writes <dir>/{kubeconfig, env,
nodewarden.yaml, ports.json, ca.crt, client-ca.crt, client-admin.crt/.key, token}, registers nodewarden's webhooks and runs
until SIGTERM/SIGINT. ports.json is written last: its presence means "ready".
"""
import argparse
import fcntl
import base64
import json
import os
import random
import secrets
import signal
import socket
import subprocess
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import admission as admission_mod  # noqa: E402
import certs  # noqa: E402
import control as control_mod  # noqa: E402
import controllers as controllers_mod  # noqa: E402
import kube  # noqa: E402
import rbac  # noqa: E402
from store import KubeStore  # noqa: E402

# nodewarden's namespace and Service (docs/configuration.md: gpu.exemptNamespaces, certs/gen-dev-certs.sh)
WEBHOOK_NS = 'nodewarden'
WEBHOOK_SVC = 'nodewarden'


def free_port(host):
    """A port for nodewarden's webhook, which nodewarden binds later (after this
    process wrote it into nodewarden.yaml). Picked at random below the kernel's
    ephemeral range (ip_local_port_range): a port from bind(0) could be handed to
    another process's bind(0) or outgoing connection before nodewarden binds it,
    which happens when several simulators run side by side (make test runs tests in
    parallel). A port that cannot be bound right now is skipped."""
    lo = 32768
    try:
        with open('/proc/sys/net/ipv4/ip_local_port_range') as f:
            lo = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    rng = random.SystemRandom()
    if lo > 12000:
        for _ in range(200):
            p = rng.randrange(10000, lo)
            s = socket.socket()
            try:
                s.bind((host, p))
                return p
            except OSError:
                continue
            finally:
                s.close()
    s = socket.socket()
    s.bind((host, 0))
    p = s.getsockname()[1]
    s.close()
    return p


def webhook_configurations(ca_pem, ns=WEBHOOK_NS, svc=WEBHOOK_SVC):
    """nodewarden's two webhook configurations (as manifests/chart/nodewarden installs them)."""
    bundle = base64.b64encode(ca_pem).decode()

    def cc(path):
        return {'service': {'namespace': ns, 'name': svc, 'path': path, 'port': 443}, 'caBundle': bundle}
    ns_sel = {'matchExpressions': [{'key': 'kubernetes.io/metadata.name', 'operator': 'NotIn',
                                    'values': ['kube-system', ns]}]}

    def crd_rule(group, res):
        return [{'operations': ['CREATE', 'UPDATE'], 'apiGroups': [group], 'apiVersions': ['v1'],
                 'resources': [res], 'scope': 'Cluster'}]
    common = {'admissionReviewVersions': ['v1'], 'sideEffects': 'None', 'matchPolicy': 'Equivalent'}
    validating = {
        'apiVersion': 'admissionregistration.k8s.io/v1', 'kind': 'ValidatingWebhookConfiguration',
        'metadata': {'name': 'nodewarden-validating'},
        'webhooks': [
            dict(common, name='validate-nodepools.nodewarden.io', failurePolicy='Fail', timeoutSeconds=5,
                 clientConfig=cc('/validate/nodepools'), rules=crd_rule('karpenter.sh', 'nodepools')),
            dict(common, name='validate-ec2nodeclasses.nodewarden.io', failurePolicy='Fail', timeoutSeconds=5,
                 clientConfig=cc('/validate/ec2nodeclasses'), rules=crd_rule('karpenter.k8s.aws', 'ec2nodeclasses')),
            dict(common, name='validate-pods.nodewarden.io', failurePolicy='Ignore', timeoutSeconds=3,
                 clientConfig=cc('/validate/pods'),
                 rules=[{'operations': ['CREATE', 'UPDATE'], 'apiGroups': [''], 'apiVersions': ['v1'],
                         'resources': ['pods'], 'scope': 'Namespaced'}],
                 namespaceSelector=ns_sel,
                 matchConditions=[{'name': 'not-a-mirror-pod', 'expression':
                                   "!has(object.metadata.annotations) || !('kubernetes.io/config.mirror' in object.metadata.annotations)"}]),
        ]}
    mutating = {
        'apiVersion': 'admissionregistration.k8s.io/v1', 'kind': 'MutatingWebhookConfiguration',
        'metadata': {'name': 'nodewarden-mutating'},
        'webhooks': [
            dict(common, name='default-nodepools.nodewarden.io', failurePolicy='Fail', reinvocationPolicy='Never',
                 timeoutSeconds=5, clientConfig=cc('/mutate/nodepools'), rules=crd_rule('karpenter.sh', 'nodepools')),
            dict(common, name='default-ec2nodeclasses.nodewarden.io', failurePolicy='Fail', reinvocationPolicy='Never',
                 timeoutSeconds=5, clientConfig=cc('/mutate/ec2nodeclasses'),
                 rules=crd_rule('karpenter.k8s.aws', 'ec2nodeclasses')),
            dict(common, name='isolate-gpu-pods.nodewarden.io', failurePolicy='Ignore', reinvocationPolicy='IfNeeded',
                 timeoutSeconds=3, clientConfig=cc('/mutate/pods'),
                 rules=[{'operations': ['CREATE'], 'apiGroups': [''], 'apiVersions': ['v1'],
                         'resources': ['pods'], 'scope': 'Namespaced'}],
                 namespaceSelector=ns_sel),
        ]}
    return validating, mutating


def bootstrap(store, webhook_ns=WEBHOOK_NS, webhook_svc=WEBHOOK_SVC):
    """Objects every cluster has: the system namespaces, default service accounts,
    the kubernetes Service, nodewarden's namespace and Service."""
    from store import ApiError
    for ns in ('default', 'kube-system', 'kube-public', 'kube-node-lease', webhook_ns):
        try:
            store.create('namespaces', None, {'metadata': {'name': ns}})
        except ApiError:
            pass
        try:
            store.create('serviceaccounts', ns, {'metadata': {'name': 'default'}})
        except ApiError:
            pass
    for ns, name, port in (('default', 'kubernetes', 443), (webhook_ns, webhook_svc, 443)):
        # the Service is there for realism; admission reaches the webhook through the
        # --webhook-listen mapping, not through a ClusterIP
        try:
            store.create('services', ns, {'metadata': {'name': name},
                                          'spec': {'ports': [{'name': 'https', 'port': port, 'targetPort': 9443 if name != 'kubernetes' else 6443}]}})
        except ApiError:
            pass


def dev_certs(out_dir):
    """nodewarden's development certificates: certs/gen-dev-certs.sh if present,
    else our own into <dir>/webhook-certs. Returns (ca.crt, tls.crt, tls.key)."""
    script = os.path.join(ROOT, 'certs', 'gen-dev-certs.sh')
    dev = os.path.join(ROOT, 'certs', 'dev')
    if os.path.exists(script):
        # make test runs many simulators at once: on a fresh clone each would find certs/dev
        # missing and write its own CA into it, so one serves a certificate another's API
        # server does not trust. One generates under the lock; the others wait and read it.
        os.makedirs(dev, exist_ok=True)
        with open(os.path.join(dev, '.lock'), 'w') as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not all(os.path.exists(os.path.join(dev, f)) for f in ('ca.crt', 'tls.crt', 'tls.key')):
                subprocess.run([script, '--service', WEBHOOK_SVC, '--namespace', WEBHOOK_NS, dev],
                               check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
        if all(os.path.exists(os.path.join(dev, f)) for f in ('ca.crt', 'tls.crt', 'tls.key')):
            return tuple(os.path.join(dev, f) for f in ('ca.crt', 'tls.crt', 'tls.key'))
    d = os.path.join(out_dir, 'webhook-certs')
    if not all(os.path.exists(os.path.join(d, f)) for f in ('ca.crt', 'tls.crt', 'tls.key')):
        ca, key = certs.make_ca(d, 'nodewarden-dev-ca')
        certs.make_leaf(d, ca, key, dns=['%s.%s.svc' % (WEBHOOK_SVC, WEBHOOK_NS),
                                         '%s.%s.svc.cluster.local' % (WEBHOOK_SVC, WEBHOOK_NS), 'localhost'],
                        ips=['127.0.0.1'])
    return tuple(os.path.join(d, f) for f in ('ca.crt', 'tls.crt', 'tls.key'))


def write(path, text, mode=0o644):
    tmp = path + '.tmp'
    with open(tmp, 'w') as f:
        f.write(text)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def main(argv=None):
    ap = argparse.ArgumentParser(description='nodewarden cluster simulator')
    ap.add_argument('--dir', default='build/sim')
    ap.add_argument('--host', default='127.0.0.1')
    ap.add_argument('--kube-port', type=int, default=0)
    ap.add_argument('--aws-port', type=int, default=0)
    ap.add_argument('--control-port', type=int, default=0)
    ap.add_argument('--boot-delay', type=float, default=2.0, help='seconds from instance running to Node Ready')
    ap.add_argument('--node-delete-delay', type=float, default=0.0,
                    help='seconds a terminated instance\'s Node stays (NotReady) before it is deleted '
                         '(0: at once, as the cloud node-lifecycle controller)')
    ap.add_argument('--history', type=int, default=5000, help='events kept for watch resumption')
    ap.add_argument('--bookmark-interval', type=float, default=60.0)
    ap.add_argument('--pod-termination', type=float, default=1.0, help='seconds a deleted bound pod takes to go')
    ap.add_argument('--cluster-name', default='sim-cluster')
    ap.add_argument('--region', default='us-west-2')
    ap.add_argument('--token', default='', help='bearer token (default: random)')
    ap.add_argument('--webhook-listen', default='127.0.0.1:8443',
                    help='where nodewarden serves its webhook (port 0: pick a free one)')
    ap.add_argument('--webhook-ca', default='', help='CA of the webhook certificate (default: dev certs)')
    ap.add_argument('--webhook-cert', default='')
    ap.add_argument('--webhook-key', default='')
    ap.add_argument('--no-webhooks', action='store_true', help='do not register nodewarden\'s webhooks')
    ap.add_argument('--no-scheduler', action='store_true')
    ap.add_argument('--kubelet-bootstrap-tokens', action='store_true',
                    help='a kubeadm join registers only when its bootstrap token would authenticate '
                         '(a bootstrap-token Secret in kube-system, unexpired) and its CA pin is the '
                         'API server\'s CA (off by default: most stories\' userData carry a placeholder token)')
    ap.add_argument('--no-rbac', action='store_true',
                    help='let nodewarden\'s ServiceAccount do everything (default: the chart\'s RBAC)')
    args = ap.parse_args(argv)

    out = os.path.abspath(args.dir)
    os.makedirs(out, exist_ok=True)
    try:
        os.unlink(os.path.join(out, 'ports.json'))
    except FileNotFoundError:
        pass
    # the API server's own CA and serving certificate
    if not all(os.path.exists(os.path.join(out, f)) for f in ('ca.crt', 'ca.key', 'apiserver.crt', 'apiserver.key')):
        ca, cakey = certs.make_ca(out, 'nodewarden-sim-ca')
        certs.make_leaf(out, ca, cakey, dns=['localhost', 'kubernetes', 'kubernetes.default',
                                             'kubernetes.default.svc', 'kubernetes.default.svc.cluster.local'],
                        ips=['127.0.0.1', '::1'], prefix='apiserver')
    # a CA for client certificates (the user is the CN) and one for admin, for tests of
    # kubeconfigs and exec plugins that authenticate with a certificate
    if not all(os.path.exists(os.path.join(out, f)) for f in ('client-ca.crt', 'client-ca.key',
                                                               'client-admin.crt', 'client-admin.key')):
        cca, ccakey = certs.make_ca(out, 'nodewarden-sim-client-ca', prefix='client-ca')
        certs.make_leaf(out, cca, ccakey, prefix='client-admin', cn='admin', usage='clientAuth')
    token = args.token or secrets.token_hex(24)

    store = KubeStore(history=args.history)
    bootstrap(store)
    adm = admission_mod.Admission(store)
    api = kube.KubeApi(store, {token: 'admin', 'nodewarden-' + token: 'system:serviceaccount:%s:nodewarden' % WEBHOOK_NS},
                       admission=adm, bookmark_interval=args.bookmark_interval,
                       authorizer=None if args.no_rbac else rbac.Authorizer())
    ctrl = controllers_mod.Controllers(store, adm, pod_termination_seconds=args.pod_termination,
                                       scheduler=not args.no_scheduler)
    api.serve(args.host, args.kube_port, os.path.join(out, 'apiserver.crt'), os.path.join(out, 'apiserver.key'),
              client_ca=os.path.join(out, 'client-ca.crt'))
    kube_port = api.address[1]
    kube_url = 'https://%s:%d' % (args.host, kube_port)

    # webhook: service -> listen address, dev CA
    wh_host, _, wh_port = args.webhook_listen.rpartition(':')
    wh_port = int(wh_port) or free_port(wh_host or '127.0.0.1')
    wh_host = wh_host or '127.0.0.1'
    adm.map_service(WEBHOOK_NS, WEBHOOK_SVC, wh_host, wh_port)
    if args.webhook_ca:
        wh_ca, wh_crt, wh_key = args.webhook_ca, args.webhook_cert, args.webhook_key
    else:
        wh_ca, wh_crt, wh_key = dev_certs(out)

    def register_webhooks():
        if args.no_webhooks:
            return
        with open(wh_ca, 'rb') as f:
            ca_pem = f.read()
        for cfg, res in zip(webhook_configurations(ca_pem), ('validatingwebhookconfigurations',
                                                           'mutatingwebhookconfigurations')):
            if store.get(res, None, cfg['metadata']['name']) is None:
                store.create(res, None, cfg)
    register_webhooks()

    store.on_reset.append(lambda st: (bootstrap(st), register_webhooks()))
    ctrl.start()

    control = control_mod.Control()
    control_mod.register_kube(control, store, api, adm, ctrl)

    # AWS half (aws.py, kubelet.py), when present
    aws = None
    aws_server = None
    aws_port = 0
    kubelets = None
    try:
        import aws as aws_mod
    except ImportError:
        aws_mod = None
    if aws_mod is not None:
        aws = aws_mod.AwsSim(region=args.region, cluster=args.cluster_name)
        aws.register_control(control)
        aws_server = aws_mod.serve(aws, args.host, args.aws_port)
        aws_port = aws_server.server_address[1]
        try:
            import kubelet as kubelet_mod
        except ImportError:
            kubelet_mod = None
        if kubelet_mod is not None:
            kubelets = kubelet_mod.Kubelets(aws, store, boot_delay=args.boot_delay,
                                            notready_delete_delay=args.node_delete_delay or None,
                                            check_tokens=args.kubelet_bootstrap_tokens,
                                            ca_file=os.path.join(out, 'ca.crt'))
    control.serve(args.host, args.control_port)
    control_port = control.address[1]

    # files
    with open(os.path.join(out, 'ca.crt')) as f:
        ca_b64 = base64.b64encode(f.read().encode()).decode()
    write(os.path.join(out, 'token'), token + '\n', 0o600)
    write(os.path.join(out, 'kubeconfig'), json.dumps({
        'apiVersion': 'v1', 'kind': 'Config', 'current-context': 'sim',
        'clusters': [{'name': 'sim', 'cluster': {'server': kube_url, 'certificate-authority-data': ca_b64}}],
        'users': [{'name': 'admin', 'user': {'token': token}}],
        'contexts': [{'name': 'sim', 'context': {'cluster': 'sim', 'user': 'admin', 'namespace': 'default'}}],
    }, indent=2) + '\n', 0o600)
    # nodewarden's own kubeconfig: its ServiceAccount, held to the chart's RBAC
    write(os.path.join(out, 'nodewarden.kubeconfig'), json.dumps({
        'apiVersion': 'v1', 'kind': 'Config', 'current-context': 'sim',
        'clusters': [{'name': 'sim', 'cluster': {'server': kube_url, 'certificate-authority-data': ca_b64}}],
        'users': [{'name': 'nodewarden', 'user': {'token': 'nodewarden-' + token}}],
        'contexts': [{'name': 'sim', 'context': {'cluster': 'sim', 'user': 'nodewarden', 'namespace': WEBHOOK_NS}}],
    }, indent=2) + '\n', 0o600)
    aws_url = 'http://%s:%d' % (args.host, aws_port) if aws_port else ''
    akid = getattr(aws, 'access_key_id', 'AKIDSIMULATOR000001') if aws else 'AKIDSIMULATOR000001'
    secret = getattr(aws, 'secret_access_key', 'simulator/secret/access/key') if aws else 'simulator/secret/access/key'
    env = ['export KUBECONFIG=%s' % os.path.join(out, 'kubeconfig'),
           'export AWS_REGION=%s' % args.region,
           'export AWS_ACCESS_KEY_ID=%s' % akid,
           'export AWS_SECRET_ACCESS_KEY=%s' % secret,
           'export NW_SIM_CONTROL=http://%s:%d' % (args.host, control_port)]
    if aws_url:
        env += ['export AWS_ENDPOINT_URL_EC2=%s' % aws_url, 'export AWS_ENDPOINT_URL_SQS=%s' % aws_url,
                'export AWS_ENDPOINT_URL_STS=%s' % aws_url, 'export AWS_ENDPOINT_URL_PRICING=%s' % aws_url,
                'export AWS_ENDPOINT_URL_IAM=%s' % aws_url,
                'export AWS_ENDPOINT_URL_SSM=%s' % aws_url,
                'export AWS_EC2_METADATA_SERVICE_ENDPOINT=%s' % aws_url]
    write(os.path.join(out, 'env'), '\n'.join(env) + '\n')
    q = lambda s: json.dumps(s)
    write(os.path.join(out, 'nodewarden.yaml'), '\n'.join([
        '# written by tests/sim/sim.py; points nodewarden at the simulator',
        'settings:',
        '  clusterName: %s' % q(args.cluster_name),
        '  clusterEndpoint: %s' % q(kube_url),
        '  clusterCABundle: %s' % q(ca_b64),
        '  interruptionQueue: %s' % q(getattr(aws, 'queue_name', '') if aws else ''),
        'kubernetes:',
        '  kubeconfig: %s' % q(os.path.join(out, 'nodewarden.kubeconfig')),
        'webhook:',
        '  listen: %s' % q('%s:%d' % (wh_host, wh_port)),
        '  tlsCert: %s' % q(os.path.abspath(wh_crt)),
        '  tlsKey: %s' % q(os.path.abspath(wh_key)),
        'metrics:',
        '  listen: "%s:0"  # a free port (logged); not 8080, so simulators can run side by side' % wh_host,
        '# the scaler on: `nodewarden serve --config <this file>` scales the simulated cluster',
        'scaler:',
        '  enabled: true',
        'aws:',
        '  region: %s' % q(args.region),
        '  endpoints:',
        '    ec2: %s' % q(aws_url),
        '    sqs: %s' % q(aws_url),
        '    sts: %s' % q(aws_url),
        '    imds: %s' % q(aws_url),
        '    pricing: %s' % q(aws_url),
        '    iam: %s' % q(aws_url),
        '    ssm: %s' % q(aws_url),
        '']))
    write(os.path.join(out, 'ports.json'), json.dumps({
        'kube': kube_port, 'aws': aws_port, 'control': control_port, 'webhook': wh_port,
        'host': args.host, 'kubeURL': kube_url, 'pid': os.getpid()}) + '\n')
    print('sim: kube %s, control http://%s:%d, aws %s, webhook %s:%d; kubectl --kubeconfig %s'
          % (kube_url, args.host, control_port, aws_url or '(aws.py not present)', wh_host, wh_port,
             os.path.join(out, 'kubeconfig')), flush=True)

    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: done.set())
    signal.signal(signal.SIGINT, lambda *a: done.set())
    while not done.wait(1.0):
        pass
    ctrl.stop()
    if kubelets is not None and hasattr(kubelets, 'stop'):
        kubelets.stop()
    api.shutdown()
    control.shutdown()
    if aws is not None:
        aws.stop()
    if aws_server is not None:
        aws_server.shutdown()
        aws_server.server_close()
    print('sim: stopped', flush=True)
    return 0


if __name__ == '__main__':
    # one process serves every API call, the scheduler, the kubelets and AWS: hand the
    # interpreter lock over every millisecond rather than every 5 (Python's default), so
    # that a request waiting for it (a status patch behind a scheduling pass) is not
    # held up for a whole switch interval at each step
    sys.setswitchinterval(0.001)
    sys.exit(main())
