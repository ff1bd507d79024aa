"""Checkers for the install artefacts (tests/sim/test_install.py): YAML through the real
kubectl (`kubectl label --local`, no server), Helm template actions set aside, a JSON-schema
subset for values.schema.json, and a Kubernetes structural-schema subset for the CRDs."""
import json
import os
import re
import shutil
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# the pinned kubectl the Makefile puts first on PATH (tests/k8s/build), never a path
# that exists only on some machines
KUBECTL = os.environ.get('NW_KUBECTL') or shutil.which('kubectl') or 'kubectl'
PARSE_LABEL = 'nodewarden.test/parsed'


class ParseError(Exception):
    pass


def parse_yaml(text, what='input'):
    """Every Kubernetes object (apiVersion + kind) of a YAML stream, parsed by kubectl's
    own YAML decoder (sigs.k8s.io/yaml). Raises ParseError with kubectl's message."""
    if not re.search(r'^kind:', text, re.M):
        return []
    r = subprocess.run([KUBECTL, 'label', '--local', '-f', '-', PARSE_LABEL + '=1', '-o', 'json'],
                       input=text.encode(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60,
                       env=dict(os.environ, KUBECONFIG='/dev/null'))
    if r.returncode != 0:
        raise ParseError('%s: %s' % (what, r.stderr.decode(errors='replace').strip()))
    out, dec, s = [], json.JSONDecoder(), r.stdout.decode()
    i = 0
    while True:
        while i < len(s) and s[i].isspace():
            i += 1
        if i >= len(s):
            break
        obj, i = dec.raw_decode(s, i)
        items = obj['items'] if obj.get('kind') == 'List' and 'items' in obj else [obj]
        for o in items:
            labels = o.get('metadata', {}).get('labels', {})
            labels.pop(PARSE_LABEL, None)
            if not labels and 'labels' in o.get('metadata', {}):
                del o['metadata']['labels']
            out.append(o)
    return out


def parse_many(texts):
    """parse_yaml over several single-object streams with one kubectl call; a list of
    object lists in the same order (None where a text does not parse)."""
    try:
        objs = parse_yaml('\n---\n'.join(texts), 'batch')
        if len(objs) == len(texts):
            return [[o] for o in objs]
    except ParseError:
        pass
    out = []
    for t in texts:
        try:
            out.append(parse_yaml(t))
        except ParseError:
            out.append(None)
    return out


def parse_file(path):
    with open(path) as f:
        return parse_yaml(f.read(), os.path.relpath(path, ROOT))


def parse_values(text, what='values.yaml'):
    """A YAML mapping that is not a Kubernetes object (values.yaml): wrapped, indented."""
    body = '\n'.join(('  ' + l) if l.strip() else '' for l in text.split('\n'))
    doc = 'apiVersion: nodewarden.test/v1\nkind: Values\nmetadata:\n  name: v\nvalues:\n' + body + '\n'
    objs = parse_yaml(doc, what)
    return objs[0].get('values') or {}


# ---- Helm templates ----------------------------------------------------------------

_ACTION = re.compile(r'{{-?(.*?)-?}}', re.S)


def strip_template(text):
    """Sets Helm template actions aside so the rest can be parsed as YAML:
    - comments {{/* */}} go;
    - of an if/else if/else chain only the first branch is kept (so the two branches of
      one key do not both appear); range/with/define bodies are kept;
    - a line holding only an action goes, except `... | nindent N` (include/toYaml of a
      block), which becomes a placeholder key at indent N, so a wrong indent shows;
    - an action inside a line becomes the scalar `tpl`."""
    text = re.sub(r'{{-?\s*/\*.*?\*/\s*-?}}', '', text, flags=re.S)
    out = []
    stack = []          # per open block: 'keep' or 'drop'
    for line in text.split('\n'):
        acts = [a.strip() for a in _ACTION.findall(line)]
        rest = _ACTION.sub('', line).strip()
        dropping = 'drop' in stack
        if acts and not rest:
            for a in acts:
                word = a.split()[0] if a.split() else ''
                if word in ('if', 'range', 'with', 'define', 'block'):
                    stack.append('keep')
                elif word == 'else':
                    if stack:
                        stack[-1] = 'drop'
                elif word == 'end':
                    if stack:
                        stack.pop()
            m = re.search(r'\|\s*nindent\s+(\d+)\s*$', acts[-1])
            if m and not dropping and len(acts) == 1:
                out.append(' ' * int(m.group(1)) + 'tpl-block: tpl')
            continue
        if dropping:
            continue
        out.append(_ACTION.sub('tpl', line))
    return '\n'.join(out)


# ---- JSON schema subset (values.schema.json) ------------------------------------------

def _type_ok(v, t):
    if isinstance(t, list):
        return any(_type_ok(v, x) for x in t)
    return {'object': isinstance(v, dict), 'array': isinstance(v, list),
            'string': isinstance(v, str), 'boolean': isinstance(v, bool),
            'integer': isinstance(v, int) and not isinstance(v, bool),
            'number': isinstance(v, (int, float)) and not isinstance(v, bool),
            'null': v is None}[t]


def json_schema_errors(v, s, path='values'):
    """type, properties, required, enum, additionalProperties (bool or schema), items,
    minimum/maximum, minLength, pattern, anyOf."""
    errs = []
    if 'anyOf' in s:
        alts = [json_schema_errors(v, a, path) for a in s['anyOf']]
        if all(alts):
            return ['%s: matches none of anyOf (%s)' % (path, '; '.join(e[0] for e in alts))]
    if 'type' in s and not _type_ok(v, s['type']):
        return ['%s: expected %s, got %s' % (path, s['type'], type(v).__name__)]
    if 'enum' in s and v not in s['enum']:
        errs.append('%s: %r not in %r' % (path, v, s['enum']))
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        if 'minimum' in s and v < s['minimum']:
            errs.append('%s: %r < minimum %r' % (path, v, s['minimum']))
        if 'maximum' in s and v > s['maximum']:
            errs.append('%s: %r > maximum %r' % (path, v, s['maximum']))
    if isinstance(v, str):
        if 'minLength' in s and len(v) < s['minLength']:
            errs.append('%s: shorter than %d' % (path, s['minLength']))
        if 'pattern' in s and not re.search(s['pattern'], v):
            errs.append('%s: %r does not match %s' % (path, v, s['pattern']))
    if isinstance(v, dict):
        props = s.get('properties', {})
        for k in s.get('required', []):
            if k not in v:
                errs.append('%s.%s: required' % (path, k))
        addl = s.get('additionalProperties', True)
        for k, x in v.items():
            if k in props:
                errs += json_schema_errors(x, props[k], '%s.%s' % (path, k))
            elif addl is False:
                errs.append('%s.%s: unknown key' % (path, k))
            elif isinstance(addl, dict):
                errs += json_schema_errors(x, addl, '%s.%s' % (path, k))
    if isinstance(v, list) and 'items' in s:
        for i, x in enumerate(v):
            errs += json_schema_errors(x, s['items'], '%s[%d]' % (path, i))
    return errs


# ---- Kubernetes structural schema subset (the CRDs) ------------------------------------

def _k8s_type_ok(v, t):
    if t == 'integer':
        return (isinstance(v, int) and not isinstance(v, bool)) or \
               (isinstance(v, float) and v.is_integer())
    return _type_ok(v, t)


def apply_defaults(v, s):
    """kube-apiserver's structural defaulting: a missing (or null) property with a
    `default` gets a copy of it, and the walk continues into what was inserted."""
    if isinstance(v, dict):
        for k, ps in s.get('properties', {}).items():
            if v.get(k) is None and 'default' in ps:
                v[k] = json.loads(json.dumps(ps['default']))
        for k, x in v.items():
            ps = s.get('properties', {}).get(k)
            if ps is None and isinstance(s.get('additionalProperties'), dict):
                ps = s['additionalProperties']
            if ps is not None:
                apply_defaults(x, ps)
    elif isinstance(v, list) and 'items' in s:
        for x in v:
            apply_defaults(x, s['items'])
    return v


_DATE_TIME = re.compile(r'^\d{4}-\d\d-\d\d[Tt ]\d\d:\d\d:\d\d(\.\d+)?([Zz]|[+-]\d\d:\d\d)$')


def structural_errors(v, s, path=''):
    """(path, message) for what kube-apiserver's OpenAPI validation of a structural
    schema rejects: type (and x-kubernetes-int-or-string), required, enum, pattern
    (unanchored, as Go's MatchString), minLength/maxLength, minimum/maximum,
    minItems/maxItems, maxProperties, list-type set duplicates. Unknown fields are
    pruned, not errors; defaults are not applied."""
    errs = []
    here = path or '<root>'
    if s.get('x-kubernetes-int-or-string'):
        if not (isinstance(v, str) or _k8s_type_ok(v, 'integer')):
            return [(here, 'must be of type int-or-string')]
    elif 'type' in s and not _k8s_type_ok(v, s['type']):
        return [(here, 'must be of type %s' % s['type'])]
    if 'enum' in s and v not in s['enum']:
        errs.append((here, 'Unsupported value: %s' % json.dumps(v)))
    if isinstance(v, str):
        if 'pattern' in s and not re.search(s['pattern'], v):
            errs.append((here, 'should match %r' % s['pattern']))
        if 'maxLength' in s and len(v.encode()) > s['maxLength']:
            errs.append((here, 'Too long'))
        if 'minLength' in s and len(v) < s['minLength']:
            errs.append((here, 'should be at least %d chars long' % s['minLength']))
        if s.get('format') == 'date-time' and not _DATE_TIME.match(v):
            errs.append((here, 'must be of type date-time'))
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        if 'minimum' in s and v < s['minimum']:
            errs.append((here, 'should be greater than or equal to %s' % s['minimum']))
        if 'maximum' in s and v > s['maximum']:
            errs.append((here, 'should be less than or equal to %s' % s['maximum']))
    if isinstance(v, dict):
        for k in s.get('required', []):
            if k not in v or v[k] is None:
                errs.append(('%s.%s' % (path, k) if path else k, 'Required value'))
        if 'maxProperties' in s and len(v) > s['maxProperties']:
            errs.append((here, 'Too many: %d' % len(v)))
        props, addl = s.get('properties', {}), s.get('additionalProperties')
        for k, x in v.items():
            sub = '%s.%s' % (path, k) if path else k
            if x is None:
                continue
            if k in props:
                errs += structural_errors(x, props[k], sub)
            elif isinstance(addl, dict):
                errs += structural_errors(x, addl, sub)
    if isinstance(v, list):
        if 'maxItems' in s and len(v) > s['maxItems']:
            errs.append((here, 'Too many: %d' % len(v)))
        if 'minItems' in s and len(v) < s['minItems']:
            errs.append((here, 'should have at least %d items' % s['minItems']))
        # a value's second appearance is the Duplicate, also in a list over maxItems
        # (kube-apiserver 1.35, k8s.io/apiextensions-apiserver schema/listtype)
        if s.get('x-kubernetes-list-type') == 'set':
            seen = []
            for i, x in enumerate(v):
                if seen.count(x) == 1:
                    errs.append(('%s[%d]' % (path, i), 'Duplicate value'))
                seen.append(x)
        for i, x in enumerate(v):
            if 'items' in s:
                errs += structural_errors(x, s['items'], '%s[%d]' % (path, i))
    return errs


def crd_schemas():
    """{(apiVersion, kind): openAPIV3Schema} from manifests/crds/."""
    out = {}
    d = os.path.join(ROOT, 'manifests', 'crds')
    for f in sorted(os.listdir(d)):
        for crd in parse_file(os.path.join(d, f)):
            for ver in crd['spec']['versions']:
                out[('%s/%s' % (crd['spec']['group'], ver['name']), crd['spec']['names']['kind'])] = \
                    ver['schema']['openAPIV3Schema']
    return out


def normalize_path(p):
    """kube-apiserver writes map entries as labels[team]; this checker as labels.team."""
    return re.sub(r'\[([^\]0-9][^\]]*)\]', r'.\1', p)
