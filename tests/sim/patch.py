"""Patch engines as kube-apiserver applies them: RFC 6902 JSON Patch (evanphx/json-patch
v4 rules), RFC 7386 JSON Merge Patch, and a strategic merge patch for built-in types.

Every function works on deep copies and raises PatchError with a message on failure.
"""


def _deepcopy(o):
    """A deep copy of a JSON value (dicts and lists copied, scalars shared): all that the
    decoded JSON these engines see needs of copy.deepcopy, several times faster."""
    t = type(o)
    if t is dict:
        return {k: _deepcopy(v) for k, v in o.items()}
    if t is list:
        return [_deepcopy(v) for v in o]
    return o


class PatchError(Exception):
    pass


# ---- RFC 6902 -------------------------------------------------------------------

def _unescape(seg):
    return seg.replace('~1', '/').replace('~0', '~')


def _split(path):
    if path == '':
        return []
    if not path.startswith('/'):
        raise PatchError('invalid JSON pointer %r: must start with "/"' % path)
    return [_unescape(s) for s in path[1:].split('/')]


def _index(container, seg, allow_end, path):
    if seg == '-' and allow_end:
        return len(container)
    try:
        i = int(seg)
    except ValueError:
        raise PatchError('invalid array index %r in %s' % (seg, path))
    if i < 0:                       # json-patch v4 accepts negative indices
        i += len(container)
    limit = len(container) if allow_end else len(container) - 1
    if i < 0 or i > limit:
        raise PatchError('array index out of bounds %d in %s' % (i, path))
    return i


def _parent(doc, segs, path):
    cur = doc
    for s in segs[:-1]:
        if isinstance(cur, dict):
            if s not in cur:
                raise PatchError('doc is missing path: "%s"' % path)
            cur = cur[s]
        elif isinstance(cur, list):
            cur = cur[_index(cur, s, False, path)]
        else:
            raise PatchError('doc is missing path: "%s"' % path)
        if cur is None:
            raise PatchError('doc is missing path: "%s"' % path)
    return cur


def _get(doc, path):
    segs = _split(path)
    if not segs:
        return doc
    par = _parent(doc, segs, path)
    last = segs[-1]
    if isinstance(par, dict):
        if last not in par:
            raise PatchError('doc is missing path: "%s"' % path)
        return par[last]
    if isinstance(par, list):
        return par[_index(par, last, False, path)]
    raise PatchError('doc is missing path: "%s"' % path)


def _add(doc, path, value):
    segs = _split(path)
    if not segs:
        return value
    par = _parent(doc, segs, path)
    last = segs[-1]
    if isinstance(par, dict):
        par[last] = value
    elif isinstance(par, list):
        par.insert(_index(par, last, True, path), value)
    else:
        raise PatchError('doc is missing path: "%s"' % path)
    return doc


def _remove(doc, path):
    segs = _split(path)
    if not segs:
        raise PatchError('cannot remove the whole document')
    par = _parent(doc, segs, path)
    last = segs[-1]
    if isinstance(par, dict):
        if last not in par:
            raise PatchError('unable to remove nonexistent key: %s: missing value' % last)
        return par.pop(last)
    if isinstance(par, list):
        return par.pop(_index(par, last, False, path))
    raise PatchError('doc is missing path: "%s"' % path)


def _replace(doc, path, value):
    segs = _split(path)
    if not segs:
        return value
    par = _parent(doc, segs, path)
    last = segs[-1]
    if isinstance(par, dict):
        if last not in par:
            raise PatchError('replace operation does not apply: doc is missing key: %s' % path)
        par[last] = value
    elif isinstance(par, list):
        par[_index(par, last, False, path)] = value
    else:
        raise PatchError('doc is missing path: "%s"' % path)
    return doc


def json_patch(doc, ops):
    """Apply a JSON Patch (list of operations) to a deep copy of doc and return it."""
    if not isinstance(ops, list):
        raise PatchError('json patch must be a JSON array of operations')
    doc = _deepcopy(doc)
    for n, op in enumerate(ops):
        if not isinstance(op, dict):
            raise PatchError('operation %d is not an object' % n)
        kind = op.get('op')
        path = op.get('path')
        if not isinstance(path, str):
            raise PatchError('operation %d (%s): missing "path"' % (n, kind))
        if kind in ('add', 'replace', 'test') and 'value' not in op:
            raise PatchError('operation %d (%s): missing "value"' % (n, kind))
        if kind == 'add':
            doc = _add(doc, path, _deepcopy(op['value']))
        elif kind == 'remove':
            _remove(doc, path)
        elif kind == 'replace':
            doc = _replace(doc, path, _deepcopy(op['value']))
        elif kind in ('move', 'copy'):
            frm = op.get('from')
            if not isinstance(frm, str):
                raise PatchError('operation %d (%s): missing "from"' % (n, kind))
            if kind == 'move':
                if path.startswith(frm + '/'):
                    raise PatchError('move: "from" %s is an ancestor of "path" %s' % (frm, path))
                val = _remove(doc, frm)
            else:
                val = _deepcopy(_get(doc, frm))
            doc = _add(doc, path, val)
        elif kind == 'test':
            try:
                cur = _get(doc, path)
            except PatchError:
                cur = _MISSING
            if cur is _MISSING and op['value'] is None and path.startswith('/'):
                # kube-apiserver's JSON patch (evanphx/json-patch) takes a missing member
                # of an existing object as equal to null
                up = path.rsplit('/', 1)[0]
                try:
                    parent = _get(doc, up) if up else doc
                except PatchError:
                    parent = _MISSING
                if isinstance(parent, dict):
                    continue
            if cur is _MISSING or not _json_eq(cur, op['value']):
                raise PatchError('testing value %s failed: test failed' % path)
        else:
            raise PatchError('Unexpected kind: %r' % (kind,))
    return doc


_MISSING = object()


def _json_eq(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_json_eq(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_json_eq(x, y) for x, y in zip(a, b))
    return a == b


# ---- RFC 7386 -------------------------------------------------------------------

def merge_patch(doc, patch):
    if not isinstance(patch, dict):
        return _deepcopy(patch)
    out = _deepcopy(doc) if isinstance(doc, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        elif isinstance(v, dict):
            out[k] = merge_patch(out.get(k), v)
        else:
            out[k] = _deepcopy(v)
    return out


# ---- strategic merge patch (built-in types) -------------------------------------------

# field name -> merge key (None: list of primitives merged as a set). Keyed by the
# parent path's last element and the field name, falling back to the field name alone.
_MERGE_KEYS = {
    'containers': 'name', 'initContainers': 'name', 'ephemeralContainers': 'name',
    'volumes': 'name', 'env': 'name', 'volumeMounts': 'mountPath', 'volumeDevices': 'devicePath',
    'imagePullSecrets': 'name', 'conditions': 'type', 'taints': 'key', 'addresses': 'type',
    'ownerReferences': 'uid', 'finalizers': None, 'hostAliases': 'ip',
    'topologySpreadConstraints': 'topologyKey', 'resourceClaims': 'name',
    'containerStatuses': 'name', 'initContainerStatuses': 'name', 'podIPs': 'ip',
    'secrets': 'name', 'ports': 'containerPort',
    'webhooks': 'name',     # Validating/MutatingWebhookConfiguration (patchMergeKey name)
}
# lists that are replaced whole even in a strategic merge patch
_ATOMIC = {'tolerations', 'args', 'command', 'nodeSelectorTerms', 'matchExpressions', 'values'}


def _merge_key(kind, parent_key, field):
    if field == 'ports' and (kind == 'Service' and parent_key == 'spec'):
        return 'port'
    if field == 'ports' and parent_key == 'subsets':
        return 'port'
    if field in _ATOMIC:
        return _ATOMIC
    return _MERGE_KEYS.get(field, _ATOMIC)


def strategic_merge_patch(doc, patch, kind=''):
    return _smp(_deepcopy(doc) if isinstance(doc, dict) else {}, patch, kind, '')


def _smp(out, patch, kind, parent_key):
    if not isinstance(patch, dict):
        raise PatchError('strategic merge patch: expected an object')
    directive = patch.get('$patch')
    if directive == 'replace':
        return {k: _deepcopy(v) for k, v in patch.items() if k != '$patch'}
    if directive == 'delete':
        return None
    retain = patch.get('$retainKeys')
    for k, v in patch.items():
        if k in ('$patch', '$retainKeys') or k.startswith('$setElementOrder/'):
            continue
        if k.startswith('$deleteFromPrimitiveList/'):
            field = k.split('/', 1)[1]
            if isinstance(out.get(field), list) and isinstance(v, list):
                out[field] = [x for x in out[field] if x not in v]
            continue
        if v is None:
            out.pop(k, None)
            continue
        cur = out.get(k)
        if isinstance(v, dict):
            merged = _smp(cur if isinstance(cur, dict) else {}, v, kind, k)
            if merged is None:
                out.pop(k, None)
            else:
                out[k] = merged
        elif isinstance(v, list):
            mk = _merge_key(kind, parent_key, k)
            if mk is _ATOMIC or not isinstance(cur, list):
                if mk is not _ATOMIC:
                    v = [x for x in v if not (isinstance(x, dict) and x.get('$patch') == 'delete')]
                    v = [{a: b for a, b in x.items() if a != '$patch'} if isinstance(x, dict) else x
                         for x in v]
                out[k] = _deepcopy(v)
            elif mk is None:
                res = list(cur)
                for x in v:
                    if x not in res:
                        res.append(_deepcopy(x))
                out[k] = res
            else:
                out[k] = _merge_list(cur, v, mk, kind, k)
        else:
            out[k] = _deepcopy(v)
    if isinstance(retain, list):
        for k in list(out.keys()):
            if k not in retain:
                del out[k]
    return out


def _merge_list(cur, patch, key, kind, field):
    res = [_deepcopy(x) for x in cur]
    if any(isinstance(x, dict) and x.get('$patch') == 'replace' for x in patch):
        return [{a: b for a, b in x.items() if a != '$patch'} for x in patch
                if isinstance(x, dict) and x.get('$patch') != 'replace']
    for x in patch:
        if not isinstance(x, dict) or key not in x:
            raise PatchError('strategic merge patch: element of %s lacks merge key %s' % (field, key))
        idx = next((i for i, e in enumerate(res) if isinstance(e, dict) and e.get(key) == x[key]), None)
        if x.get('$patch') == 'delete':
            if idx is not None:
                res.pop(idx)
            continue
        if idx is None:
            res.append({a: b for a, b in _deepcopy(x).items() if a != '$patch'})
        else:
            res[idx] = _smp(res[idx], x, kind, field)
    return res
