"""RBAC for nodewarden's ServiceAccount in the simulator: the rules of the Helm chart's
ClusterRole and Role (manifests/chart/nodewarden/templates/rbac.yaml, template actions
set aside by tests/install/checks.py), so that a verb the chart forgot is a 403 here as
it is on a real cluster (tests/cluster). Every other user (the admin token) may do
everything; every authenticated user may create SelfSubjectAccessReviews (the default
ClusterRole system:basic-user)."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'install'))

import checks  # noqa: E402  (tests/install/checks.py: the chart's templates as YAML)

CHART_RBAC = os.path.join(ROOT, 'manifests', 'chart', 'nodewarden', 'templates', 'rbac.yaml')
SA_USER = 'system:serviceaccount:nodewarden:nodewarden'


class Authorizer:
    def __init__(self, path=CHART_RBAC, user=SA_USER, namespace='nodewarden'):
        with open(path) as f:
            objs = checks.parse_yaml(checks.strip_template(f.read()), path)
        self.cluster_rules = [r for o in objs if o['kind'] == 'ClusterRole' for r in o['rules']]
        # a Role in a namespace the chart names (kube-system: the bootstrap tokens) applies
        # there; the others are the release namespace's
        self.fixed_ns_rules = {}
        for o in objs:
            ns = o['metadata'].get('namespace', '')
            if o['kind'] == 'Role' and ns == 'kube-system':
                self.fixed_ns_rules.setdefault(ns, []).extend(o['rules'])
        self.ns_rules = [r for o in objs if o['kind'] == 'Role' and
                         o['metadata'].get('namespace', '') not in self.fixed_ns_rules for r in o['rules']]
        self.user, self.namespace = user, namespace

    def allowed(self, user, verb, group, resource, sub, ns, name):
        if user != self.user:
            return True
        if group == 'authorization.k8s.io' and resource == 'selfsubjectaccessreviews':
            return True
        res = resource + ('/' + sub if sub else '')
        rules = self.cluster_rules + (self.ns_rules if ns == self.namespace else []) + \
            self.fixed_ns_rules.get(ns, [])
        return any(group in r['apiGroups'] and res in r['resources'] and verb in r['verbs'] and
                   (not r.get('resourceNames') or name in r['resourceNames']) for r in rules)

    def message(self, user, verb, group, resource, sub, ns, name):
        """kube-apiserver's words for the refusal."""
        res = resource + ('/' + sub if sub else '')
        where = 'in the namespace "%s"' % ns if ns else 'at the cluster scope'
        return '%s%s is forbidden: User "%s" cannot %s resource "%s" in API group "%s" %s' % (
            res, ' "%s"' % name if name else '', user, verb, res, group, where)
