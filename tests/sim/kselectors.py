"""Label selectors (string form and LabelSelector objects), field selectors, node
selector terms, taints and tolerations: the matching rules of kube-apiserver and
kube-scheduler."""
import re


class SelectorError(Exception):
    pass


# ---- label selector strings: k=v, k==v, k!=v, k in (a,b), k notin (a,b), k, !k ------

_KEY_RE = re.compile(r'^([A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$')


def _split_top(s):
    parts, depth, cur = [], 0, ''
    for ch in s:
        if ch == '(':
            depth += 1
        elif ch == ')':
            depth -= 1
        if ch == ',' and depth == 0:
            parts.append(cur)
            cur = ''
        else:
            cur += ch
    parts.append(cur)
    return parts


def parse_label_selector(s):
    """Returns a list of (key, op, values) requirements; op in In, NotIn, Exists,
    DoesNotExist, Equals, NotEquals, Gt, Lt."""
    reqs = []
    if s is None or s.strip() == '':
        return reqs
    for term in _split_top(s):
        t = term.strip()
        if not t:
            raise SelectorError('unable to parse requirement: found empty requirement in %r' % s)
        m = re.match(r'^(\S+?)\s+(in|notin)\s*\((.*)\)$', t)
        if m:
            key, op, vals = m.group(1), m.group(2), [v.strip() for v in m.group(3).split(',')]
            reqs.append((_ck(key), 'In' if op == 'in' else 'NotIn', [v for v in vals if v != '' or len(vals) == 1]))
            continue
        m = re.match(r'^([^=!<>\s]+)\s*(==|!=|=|>|<)\s*(\S*)$', t)
        if m:
            key, op, val = m.group(1), m.group(2), m.group(3)
            op = {'=': 'In', '==': 'In', '!=': 'NotIn', '>': 'Gt', '<': 'Lt'}[op]
            reqs.append((_ck(key), op, [val]))
            continue
        if t.startswith('!'):
            reqs.append((_ck(t[1:].strip()), 'DoesNotExist', []))
            continue
        if re.match(r'^\S+$', t):
            reqs.append((_ck(t), 'Exists', []))
            continue
        raise SelectorError('unable to parse requirement: %r' % t)
    return reqs


def _ck(key):
    if not _KEY_RE.match(key):
        raise SelectorError('invalid label key "%s"' % key)
    return key


def req_matches(labels, key, op, values):
    labels = labels or {}
    has = key in labels
    v = labels.get(key)
    if op == 'In':
        return has and v in values
    if op == 'NotIn':
        return not has or v not in values
    if op == 'Exists':
        return has
    if op == 'DoesNotExist':
        return not has
    if op in ('Gt', 'Lt'):
        if not has or len(values) != 1:
            return False
        try:
            a, b = int(v), int(values[0])
        except ValueError:
            return False
        return a > b if op == 'Gt' else a < b
    return False


def labels_match(reqs, labels):
    return all(req_matches(labels, k, op, vals) for k, op, vals in reqs)


def label_selector_obj_to_reqs(sel):
    """metav1.LabelSelector (matchLabels + matchExpressions) -> requirements.
    None means 'matches nothing' (nil selector); {} matches everything."""
    if sel is None:
        return None
    if not isinstance(sel, dict):
        raise SelectorError('label selector must be an object')
    reqs = []
    for k, v in (sel.get('matchLabels') or {}).items():
        reqs.append((k, 'In', [v]))
    for e in sel.get('matchExpressions') or []:
        op = e.get('operator')
        if op not in ('In', 'NotIn', 'Exists', 'DoesNotExist'):
            raise SelectorError('%r is not a valid label selector operator' % op)
        vals = e.get('values') or []
        if op in ('In', 'NotIn') and not vals:
            raise SelectorError('values: Required value: must be specified when `operator` is \'In\' or \'NotIn\'')
        reqs.append((e.get('key'), op, vals))
    return reqs


def selector_matches(sel, labels, nil_matches=False):
    reqs = label_selector_obj_to_reqs(sel)
    if reqs is None:
        return nil_matches
    return labels_match(reqs, labels)


# ---- field selectors ------------------------------------------------------------------

def parse_field_selector(s):
    out = []
    if s is None or s.strip() == '':
        return out
    for term in _split_escaped(s, ','):
        term = term.strip()
        if not term:
            continue
        m = re.match(r'^([^=!]+?)\s*(==|!=|=)(.*)$', term)
        if not m:
            raise SelectorError('invalid selector: \'%s\'; can\'t understand \'%s\'' % (s, term))
        out.append((m.group(1).strip(), '!=' if m.group(2) == '!=' else '=',
                    m.group(3).replace('\\,', ',').replace('\\=', '=').replace('\\\\', '\\')))
    return out


def _split_escaped(s, sep):
    parts, cur, esc = [], '', False
    for ch in s:
        if esc:
            cur += '\\' + ch
            esc = False
        elif ch == '\\':
            esc = True
        elif ch == sep:
            parts.append(cur)
            cur = ''
        else:
            cur += ch
    parts.append(cur)
    return parts


def field_value(obj, path):
    cur = obj
    for p in path.split('.'):
        if not isinstance(cur, dict):
            return ''
        cur = cur.get(p)
    if cur is None:
        return ''
    if isinstance(cur, bool):
        return 'true' if cur else 'false'
    return str(cur)


def fields_match(reqs, obj):
    for path, op, val in reqs:
        got = field_value(obj, path)
        if (got == val) != (op == '='):
            return False
    return True


# ---- node selection (scheduler rules) ---------------------------------------------------

def node_selector_term_matches(term, node):
    exprs = term.get('matchExpressions') or []
    fields = term.get('matchFields') or []
    if not exprs and not fields:
        return False
    labels = (node.get('metadata') or {}).get('labels') or {}
    for e in exprs:
        if not req_matches(labels, e.get('key'), e.get('operator'), e.get('values') or []):
            return False
    for f in fields:
        if f.get('key') != 'metadata.name':
            return False
        if not req_matches({'metadata.name': node['metadata']['name']}, 'metadata.name',
                           f.get('operator'), f.get('values') or []):
            return False
    return True


def pod_matches_node_selection(pod, node):
    spec = pod.get('spec') or {}
    labels = (node.get('metadata') or {}).get('labels') or {}
    for k, v in (spec.get('nodeSelector') or {}).items():
        if labels.get(k) != v:
            return False
    req = (((spec.get('affinity') or {}).get('nodeAffinity') or {})
           .get('requiredDuringSchedulingIgnoredDuringExecution'))
    if req is not None:
        terms = req.get('nodeSelectorTerms') or []
        if not any(node_selector_term_matches(t, node) for t in terms):
            return False
    return True


def toleration_tolerates(tol, taint):
    eff = tol.get('effect') or ''
    if eff and eff != taint.get('effect'):
        return False
    key = tol.get('key') or ''
    if key and key != taint.get('key'):
        return False
    op = tol.get('operator') or 'Equal'
    if op == 'Exists':
        return True
    if op == 'Equal':
        return (tol.get('value') or '') == (taint.get('value') or '')
    if op in ('Lt', 'Gt'):
        try:
            tv, nv = int(tol.get('value')), int(taint.get('value'))
        except (TypeError, ValueError):
            return False
        return nv > tv if op == 'Gt' else nv < tv
    return False


def untolerated_taints(pod, node, effects=('NoSchedule', 'NoExecute')):
    tols = (pod.get('spec') or {}).get('tolerations') or []
    out = []
    for t in (node.get('spec') or {}).get('taints') or []:
        if t.get('effect') not in effects:
            continue
        if not any(toleration_tolerates(tol, t) for tol in tols):
            out.append(t)
    return out
