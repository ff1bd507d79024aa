"""Inter-pod constraints for the simulator's scheduler: required pod affinity and
anti-affinity (the incoming pod's terms and the symmetric terms of pods already bound) and
topology spread constraints with whenUnsatisfiable DoNotSchedule, on any node label key,
as kube-scheduler's InterPodAffinity and PodTopologySpread filters decide them.

Simplifications (documented in README.md): preferred terms and ScheduleAnyway spread do
not score; a spread's pods are counted on every node of a domain (kube-scheduler counts
only nodes that pass the node inclusion policies); matchLabelKeys is honoured, minDomains
is honoured, nodeAffinityPolicy Honor / nodeTaintsPolicy Ignore (the defaults) decide which
nodes' domains count. One Topo lives for one scheduling pass; bind() keeps it current as
the pass binds pods."""
import json

import kselectors as sel


def _labels(obj):
    return (obj.get('metadata') or {}).get('labels') or {}


def _terms(pod, kind):
    aff = ((pod.get('spec') or {}).get('affinity') or {}).get(kind) or {}
    return aff.get('requiredDuringSchedulingIgnoredDuringExecution') or []


def has_anti(pod):
    return bool(_terms(pod, 'podAntiAffinity'))


def constrained(pod):
    """Does the pod have a required inter-pod term or a DoNotSchedule spread?"""
    return has_anti(pod) or bool(_terms(pod, 'podAffinity')) or any(
        t.get('whenUnsatisfiable', 'DoNotSchedule') == 'DoNotSchedule'
        for t in (pod.get('spec') or {}).get('topologySpreadConstraints') or [])


def monotone_unsafe(pod):
    """Can more bound pods make a node fit this pod (pod affinity, a DoNotSchedule spread)?"""
    return bool(_terms(pod, 'podAffinity')) or any(
        t.get('whenUnsatisfiable', 'DoNotSchedule') == 'DoNotSchedule'
        for t in (pod.get('spec') or {}).get('topologySpreadConstraints') or [])


class Topo:
    def __init__(self, nodes, bound, namespaces):
        """nodes: the pass's candidate nodes; bound: [(pod, node name)] of pods holding a
        node; namespaces: {name: labels} for namespaceSelector."""
        self.node_labels = {n['metadata']['name']: _labels(n) for n in nodes}
        self.nodes = nodes
        self.bound = list(bound)
        self.namespaces = namespaces
        self._counts = {}     # (ns spec, selector, key) -> {domain: matching pods}
        self._anti = {}       # symmetric anti-affinity: (ns spec, selector, key) -> set(domain)
        self._eligible = {}   # node selection of a pod (json) -> set of node names
        self._low = {}        # (pod uid, constraint) -> the spread's minimum (until a bind)
        for p, nn in self.bound:
            self._add_anti(p, nn)

    # ---- namespaces of a term -----------------------------------------------------------
    def _ns_spec(self, pod, term):
        """A hashable description of the namespaces a term selects (kube-scheduler: the
        union of namespaces and namespaceSelector; neither: the pod's own)."""
        names = tuple(sorted(term.get('namespaces') or []))
        nsel = term.get('namespaceSelector')
        if nsel is None and not names:
            names = ((pod.get('metadata') or {}).get('namespace') or 'default',)
        return (names, json.dumps(nsel, sort_keys=True) if nsel is not None else None)

    def _ns_in(self, spec, ns):
        names, nsel = spec
        if ns in names:
            return True
        if nsel is None:
            return False
        return sel.selector_matches(json.loads(nsel), self.namespaces.get(ns, {}))

    # ---- matching pod counts per domain -------------------------------------------------
    def _count(self, spec, selector, key):
        ck = (spec, json.dumps(selector, sort_keys=True), key)
        c = self._counts.get(ck)
        if c is None:
            c = {}
            for p, nn in self.bound:
                self._tally(c, spec, selector, key, p, nn)
            self._counts[ck] = c
        return c

    def _tally(self, c, spec, selector, key, p, nn):
        dom = self.node_labels.get(nn, {}).get(key)
        if dom is None or not self._ns_in(spec, (p.get('metadata') or {}).get('namespace')):
            return
        if sel.selector_matches(selector, _labels(p)):
            c[dom] = c.get(dom, 0) + 1

    def _add_anti(self, p, nn):
        for t in _terms(p, 'podAntiAffinity'):
            key = t.get('topologyKey')
            dom = self.node_labels.get(nn, {}).get(key)
            if dom is None:
                continue
            ck = (self._ns_spec(p, t), json.dumps(t.get('labelSelector'), sort_keys=True), key)
            self._anti.setdefault(ck, set()).add(dom)

    def bind(self, p, nn):
        self.bound.append((p, nn))
        self._low.clear()
        for (spec, s, key), c in self._counts.items():
            self._tally(c, spec, json.loads(s), key, p, nn)
        self._add_anti(p, nn)

    # ---- the filter ---------------------------------------------------------------------
    def _eligible_nodes(self, pod):
        spec = pod.get('spec') or {}
        k = json.dumps([spec.get('nodeSelector'), ((spec.get('affinity') or {}).get('nodeAffinity') or {})
                        .get('requiredDuringSchedulingIgnoredDuringExecution')], sort_keys=True)
        e = self._eligible.get(k)
        if e is None:
            e = self._eligible[k] = {n['metadata']['name'] for n in self.nodes
                                     if sel.pod_matches_node_selection(pod, n)}
        return e

    def why_not(self, pod, node_name):
        """None when the node passes the inter-pod filters, else kube-scheduler's reason."""
        labels = self.node_labels.get(node_name, {})
        plabels = _labels(pod)
        pns = (pod.get('metadata') or {}).get('namespace') or 'default'
        for t in _terms(pod, 'podAntiAffinity'):
            dom = labels.get(t.get('topologyKey'))
            if dom is not None and self._count(self._ns_spec(pod, t), t.get('labelSelector'),
                                               t.get('topologyKey')).get(dom):
                return "node(s) didn't match pod anti-affinity rules"
        for (spec, s, key), doms in self._anti.items():
            dom = labels.get(key)
            if dom in doms and self._ns_in(spec, pns) and sel.selector_matches(json.loads(s), plabels):
                return "node(s) didn't satisfy existing pods anti-affinity rules"
        for t in _terms(pod, 'podAffinity'):
            key = t.get('topologyKey')
            dom = labels.get(key)
            c = self._count(self._ns_spec(pod, t), t.get('labelSelector'), key)
            if dom is None:
                return "node(s) didn't match pod affinity rules"
            if not c.get(dom):
                # no matching pod anywhere and the pod matches its own term: it may start
                if any(c.values()) or not (self._ns_in(self._ns_spec(pod, t), pns)
                                           and sel.selector_matches(t.get('labelSelector'), plabels)):
                    return "node(s) didn't match pod affinity rules"
        for i, tsc in enumerate((pod.get('spec') or {}).get('topologySpreadConstraints') or []):
            if tsc.get('whenUnsatisfiable', 'DoNotSchedule') != 'DoNotSchedule':
                continue
            key = tsc.get('topologyKey')
            dom = labels.get(key)
            if dom is None:
                return "node(s) didn't match pod topology spread constraints (missing required label)"
            selector = dict(tsc.get('labelSelector') or {})
            mlk = [k for k in tsc.get('matchLabelKeys') or [] if k in plabels]
            if mlk:
                selector['matchExpressions'] = list(selector.get('matchExpressions') or []) + [
                    {'key': k, 'operator': 'In', 'values': [plabels[k]]} for k in mlk]
            c = self._count(((pns,), None), selector, key)
            lk = ((pod.get('metadata') or {}).get('uid'), i)
            low = self._low.get(lk)
            if low is None:
                domains = {self.node_labels[n].get(key) for n in self._eligible_nodes(pod)} - {None}
                low = min(c.get(d, 0) for d in domains) if domains else 0
                if len(domains) < int(tsc.get('minDomains') or 1):
                    low = 0
                self._low[lk] = low
            self_match = 1 if sel.selector_matches(selector, plabels) else 0
            if c.get(dom, 0) + self_match - low > int(tsc.get('maxSkew') or 1):
                return "node(s) didn't match pod topology spread constraints"
        return None
