"""docs/install.md, run (make test job install/walkthrough; docs/testing.md says how).

    NW_BIN=build/nodewarden PATH=$(tests/k8s/build --print-bin):$PATH \\
      python3 -m unittest tests.install.test_walkthrough

LoaderTest: the loader of tests/install/walkthrough.py fails on a page with no block, a
shell block with no name, a block neither run nor skipped, a stale name, a repeated name,
an unused rewrite; and docs/install.md itself loads.

WalkthroughTest: the page's blocks in order on the real tier (tests/cluster/realcluster.py
without its own install: kube-apiserver, kube-controller-manager, kube-scheduler and etcd
at the pinned versions, the AWS simulator for EC2/IAM/SSM/SQS/STS/pricing/IMDS for a
cluster my-cluster, the node agent for the instances, which joins a node only when its
kubeadm bootstrap token authenticates against kube-apiserver). The blocks run with
KUBECONFIG the admin's, the pinned kubectl and helm first on PATH and, for testing only,
AWS_ENDPOINT_URL (the variable the AWS CLI and SDKs honour) pointing at the simulator with
its keys; what stands in for a skipped block is named in walkthrough.SKIP. Then: the
NodeClaim registered a node with its providerID, no bootstrap token Secret is left, and
the uninstall removed the webhook configurations."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, 'tests', 'cluster'))
import walkthrough as wt  # noqa: E402

CLUSTER = 'my-cluster'
BLOCK_TIMEOUT = 900


def doc(*parts):
    return '\n'.join(parts) + '\n'


class LoaderTest(unittest.TestCase):
    RUN = ['a']
    SKIP = {'b': ('why', None)}

    def load(self, text, rewrites=()):
        return wt.plan(wt.extract(text, 'x.md'), run=self.RUN, skip=self.SKIP,
                       rewrites=list(rewrites), path='x.md')

    def test_the_page_loads(self):
        p = wt.load()
        self.assertTrue(any(reason is None for _b, reason, _s, _t in p))

    def test_good(self):
        p = self.load(doc('<!-- install-test: a -->', '```sh', 'echo a', '```', 'text',
                          '<!-- install-test: b -->', '```console', 'echo b', '```',
                          '```yaml', 'kind: X', '```'))
        self.assertEqual([(b.name, r is None, t) for b, r, _s, t in p],
                         [('a', True, 'echo a\n'), ('b', False, None)])

    def test_no_block(self):
        with self.assertRaisesRegex(wt.LoadError, 'no shell block'):
            self.load(doc('text only', '```yaml', 'kind: X', '```'))

    def test_block_without_marker(self):
        with self.assertRaisesRegex(wt.LoadError, 'x.md:2: a ```sh block with no'):
            self.load(doc('text', '```sh', 'echo', '```'))

    def test_neither_run_nor_skipped(self):
        with self.assertRaisesRegex(wt.LoadError, "block 'c' is neither run"):
            self.load(doc('<!-- install-test: a -->', '```sh', 'x', '```',
                          '<!-- install-test: b -->', '```sh', 'x', '```',
                          '<!-- install-test: c -->', '```bash', 'x', '```'))

    def test_stale_name(self):
        with self.assertRaisesRegex(wt.LoadError, "names block 'b', which x.md does not have"):
            self.load(doc('<!-- install-test: a -->', '```sh', 'x', '```'))

    def test_repeated_name(self):
        with self.assertRaisesRegex(wt.LoadError, "'a' is used twice"):
            self.load(doc('<!-- install-test: a -->', '```sh', 'x', '```',
                          '<!-- install-test: a -->', '```sh', 'x', '```'))

    def test_marker_without_block(self):
        with self.assertRaisesRegex(wt.LoadError, "marker 'a' is not followed"):
            self.load(doc('<!-- install-test: a -->', 'prose', '```sh', 'x', '```'))

    def test_unused_rewrite(self):
        with self.assertRaisesRegex(wt.LoadError, 'used by no block'):
            self.load(doc('<!-- install-test: a -->', '```sh', 'x', '```',
                          '<!-- install-test: b -->', '```sh', 'y', '```'),
                      rewrites=[('zzz', 'q', 'why')])

    def test_rewrite_applied(self):
        p = self.load(doc('<!-- install-test: a -->', '```sh', 'kubectl exec -- x', '```',
                          '<!-- install-test: b -->', '```sh', 'y', '```'),
                      rewrites=[('kubectl exec -- ', 'P ', 'why')])
        self.assertEqual(p[0][3], 'P x\n')

    def test_stack_outputs(self):
        args, role = wt.stack_outputs('my.cluster', 'eu-west-1')
        self.assertIn('--set settings.clusterName=my.cluster', args)
        self.assertIn('--set settings.interruptionQueue=my-cluster', args)
        self.assertIn('--set aws.region=eu-west-1', args)
        self.assertIn('--set aws.credentials=instanceProfile', args)
        self.assertNotIn('webIdentity', args)
        self.assertEqual(role, 'nodewarden-node-my.cluster')


POD_EXEC = '''#!/usr/bin/env python3
# stands in for `kubectl -n nodewarden exec deploy/nodewarden --` (tests/install/walkthrough.py)
import json, os, sys
c = json.loads(%r)
a = sys.argv[1:]
if not a or a[0] != 'nodewarden':
    sys.exit('pod-exec: only nodewarden runs in the pod, not %%r' %% a[:1])
a = [x.replace('/etc/nodewarden/config.yaml', c['config']) for x in a[1:]]
os.execvpe(c['argv'][0], c['argv'] + a, c['env'])
'''


@unittest.skipUnless(os.path.exists(os.path.join(ROOT, 'tests', 'k8s', 'controlplane.py')),
                     'no tests/k8s')
class WalkthroughTest(unittest.TestCase):
    def setUp(self):
        from realcluster import RealCluster
        self.tmp = tempfile.mkdtemp(prefix='nw-install-')
        self.kept = False
        self.c = RealCluster(os.path.join(self.tmp, 'cluster'), boot_delay=0.3,
                             check_tokens=True, cluster_name=CLUSTER, install=False)
        self.c.aws_endpoint_env = True
        self.c.start()

    def tearDown(self):
        self.c.stop()
        if self.kept:
            print('walkthrough: files kept in %s' % self.tmp, flush=True)
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)

    # ---- the stand-ins of walkthrough.SKIP ----------------------------------------------
    def standin(self, key, env):
        if key == 'stack-outputs':
            args, role = wt.stack_outputs(CLUSTER, self.c.region)
            env['HELM_AWS_ARGS'], env['NODE_ROLE'] = args, role
        elif key == 'release-dir':
            rel = os.path.join(self.tmp, 'release')
            os.makedirs(rel, exist_ok=True)
            subprocess.run([self.helm, 'package', os.path.join(ROOT, 'manifests', 'chart', 'nodewarden'),
                            '-d', rel], check=True, stdout=subprocess.DEVNULL, env=env)
            with open(self.cwd_file, 'w') as f:
                f.write(rel + '\n')
        elif key == 'pod':
            self.c.serve_from_netns()
            self.c.nodewarden_files()
            self.c.run_nodewarden(os.path.join(self.tmp, 'nodewarden.log'))
            pod_exec = os.path.join(self.tmp, 'pod-exec')
            bin_ = os.environ.get('NW_BIN', os.path.join(ROOT, 'build', 'nodewarden'))
            cfg = {'argv': self.c.net.exec_prefix() + [bin_], 'env': self.c.nodewarden_env(),
                   'config': self.c.nodewarden_config}
            with open(pod_exec, 'w') as f:
                f.write(POD_EXEC % json.dumps(cfg))
            os.chmod(pod_exec, 0o755)
            env['NW_TEST_POD_EXEC'] = pod_exec
        elif key is not None:
            raise AssertionError('no stand-in %r' % key)

    def run_block(self, b, text, env):
        state = os.path.join(self.tmp, 'state.sh')
        script = os.path.join(self.tmp, 'block-%s.sh' % b.name)
        with open(script, 'w') as f:
            f.write('set -eo pipefail\nset -a\ncd "$(cat %s)"\n' % shlex_quote(self.cwd_file))
            f.write('# docs/install.md:%d (%s)\n' % (b.line, b.name))
            f.write(text)
            f.write('\nexport -p > %s\npwd > %s\n' % (shlex_quote(state), shlex_quote(self.cwd_file)))
        r = subprocess.run(['bash', script], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           env=env, timeout=BLOCK_TIMEOUT)
        out = r.stdout.decode(errors='replace')
        print('---- docs/install.md:%d block %s (exit %d)\n%s' % (b.line, b.name, r.returncode, out),
              flush=True)
        if r.returncode != 0:
            self.kept = True
            self.fail('docs/install.md:%d: block %r exited %d:\n%s\n(nodewarden log: %s)'
                      % (b.line, b.name, r.returncode, out[-4000:],
                         os.path.join(self.tmp, 'nodewarden.log')))
        # the variables the block exported (set -a: every one it set) reach the next block
        env.clear()
        env.update(read_exports(state))

    def test_walkthrough(self):
        blocks = wt.load()
        self.helm = os.path.join(self.c.cp.bin_dir, 'helm')
        work = os.path.join(self.tmp, 'work')
        home = os.path.join(self.tmp, 'home')
        os.makedirs(work)
        os.makedirs(home)
        self.cwd_file = os.path.join(self.tmp, 'cwd')
        with open(self.cwd_file, 'w') as f:
            f.write(work + '\n')
        bindir = os.path.join(self.tmp, 'bin')
        os.makedirs(bindir)
        os.symlink(os.environ.get('NW_BIN', os.path.join(ROOT, 'build', 'nodewarden')),
                   os.path.join(bindir, 'nodewarden'))
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(('AWS_', 'KUBECONFIG', 'KUBERNETES_', 'HELM_'))}
        env.update({
            'HOME': home, 'KUBECONFIG': self.c.cp.kubeconfig,
            'PATH': '%s:%s:%s' % (self.c.cp.bin_dir, bindir, os.environ.get('PATH', '/usr/bin:/bin')),
            # for testing only: every AWS call of the commands goes to the simulator
            'AWS_ENDPOINT_URL': self.c.aws_url, 'AWS_REGION': self.c.region,
            'AWS_ACCESS_KEY_ID': self.c.aws.access_key_id,
            'AWS_SECRET_ACCESS_KEY': self.c.aws.secret_access_key,
        })
        ran = []
        for b, reason, standin, text in blocks:
            if reason is not None:
                print('---- docs/install.md:%d block %s skipped: %s' % (b.line, b.name, reason), flush=True)
                self.standin(standin, env)
                continue
            self.run_block(b, text, env)
            ran.append(b.name)
        self.assertEqual(ran, wt.RUN)
        self.check_after()

    def check_after(self):
        admin = self.c.admin
        claims = admin.get('/apis/karpenter.sh/v1/nodeclaims')['items']
        self.assertTrue(claims, 'no NodeClaim')
        for nc in claims:
            conds = {c['type']: c['status'] for c in nc.get('status', {}).get('conditions', [])}
            self.assertEqual(conds.get('Registered'), 'True', nc['metadata']['name'])
            node = admin.get('/api/v1/nodes/%s' % nc['status']['nodeName'])
            self.assertEqual(node['spec'].get('providerID'), nc['status']['providerID'])
        secrets = admin.get('/api/v1/namespaces/kube-system/secrets?labelSelector=nodewarden.io/nodeclaim')
        self.assertEqual(secrets['items'], [], 'a bootstrap token Secret is left')
        for kind in ('validatingwebhookconfigurations', 'mutatingwebhookconfigurations'):
            items = admin.get('/apis/admissionregistration.k8s.io/v1/%s' % kind)['items']
            self.assertEqual([i['metadata']['name'] for i in items], [], kind + ' left after helm uninstall')


def shlex_quote(s):
    return "'" + str(s).replace("'", "'\"'\"'") + "'"


def read_exports(path):
    """The variables of `export -p` output, through bash itself (values with newlines)."""
    r = subprocess.run(['bash', '-c', '. "$1" && env -0', 'x', path], stdout=subprocess.PIPE,
                       check=True, env={'PATH': os.environ.get('PATH', '/usr/bin:/bin')})
    out = {}
    for item in r.stdout.split(b'\0'):
        if b'=' in item:
            k, v = item.split(b'=', 1)
            out[k.decode()] = v.decode(errors='replace')
    for k in ('SHLVL', 'PWD', 'OLDPWD', '_'):
        out.pop(k, None)
    return out


if __name__ == '__main__':
    unittest.main()
