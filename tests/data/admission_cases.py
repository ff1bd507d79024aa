#!/usr/bin/env python3
"""Writes the admission case files tests/data/nodepool/*.yaml and
tests/data/ec2nodeclass/*.yaml (format: tests/unit/admitcase.h).

The cases are data; this script only saves typing. Regenerate with
    python3 tests/data/admission_cases.py
and commit the result. Each case: (name, object, header[, old]).
"""
import copy
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
GATE = ("<nil>: Invalid value: null: some validation rules were not checked because the "
        "object was invalid; correct the existing errors to complete validation")

PLAIN_KEY = re.compile(r'^[A-Za-z_][A-Za-z0-9_./-]*$')
YAML_WORDS = {"y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "true", "True", "TRUE",
              "false", "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF", "null", "Null",
              "NULL", "~"}


def yscalar(v):
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, (int, float)):
        return json.dumps(v)
    return json.dumps(v)


def ykey(k):
    if PLAIN_KEY.match(k) and k not in YAML_WORDS:
        return k
    return json.dumps(k)


def ydump(v, indent=0):
    pad = "  " * indent
    out = []
    if isinstance(v, dict):
        if not v:
            return pad + "{}\n"
        for k, x in v.items():
            if isinstance(x, (dict, list)) and x:
                out.append(f"{pad}{ykey(k)}:\n{ydump(x, indent + 1)}")
            else:
                out.append(f"{pad}{ykey(k)}: {yinline(x)}\n")
        return "".join(out)
    if isinstance(v, list):
        if not v:
            return pad + "[]\n"
        for x in v:
            if isinstance(x, dict) and x:
                body = ydump(x, indent + 1)
                out.append(pad + "- " + body[len(pad) + 2:])
            elif isinstance(x, list) and x:
                out.append(f"{pad}-\n{ydump(x, indent + 1)}")
            else:
                out.append(f"{pad}- {yinline(x)}\n")
        return "".join(out)
    return pad + yscalar(v) + "\n"


def yinline(x):
    if isinstance(x, dict):
        return "{}"
    if isinstance(x, list):
        return "[]"
    return yscalar(x)


def setp(obj, path, value):
    """path like 'spec.template.spec.requirements.0.key'; value DEL deletes."""
    parts = path.split(".")
    cur = obj
    for p in parts[:-1]:
        cur = cur[int(p)] if isinstance(cur, list) else cur.setdefault(p, {})
    last = parts[-1]
    if isinstance(cur, list):
        if value is DEL:
            del cur[int(last)]
        else:
            cur[int(last)] = value
    elif value is DEL:
        cur.pop(last, None)
    else:
        cur[last] = value
    return obj


DEL = object()


def mod(base, *changes):
    o = copy.deepcopy(base)
    for path, value in changes:
        setp(o, path, value)
    return o


def write(dirname, cases):
    d = os.path.join(HERE, dirname)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        if f.endswith(".yaml"):
            os.remove(os.path.join(d, f))
    for i, c in enumerate(cases, 1):
        name, obj, hdr = c[0], c[1], c[2]
        old = c[3] if len(c) > 3 else None
        if old is not None:
            hdr = dict(hdr, op="UPDATE")
        text = f"# {name}\n" + json.dumps(hdr) + "\n---\n" + ydump(obj)
        if old is not None:
            text += "---\n" + ydump(old)
        with open(os.path.join(d, f"{i:03d}-{name}.yaml"), "w") as fh:
            fh.write(text)
    print(f"{dirname}: {len(cases)} cases")


def pat(path, value, regex):
    return f'{path}: Invalid value: {json.dumps(value)}: {path} in body should match \'{regex}\''


def cel(path, typ, msg, value=None):
    """A CEL rule's failure in Kubernetes 1.35's words: an object or array omits the
    value, a string shows it (k8s.io/apiextensions-apiserver pkg/apiserver/schema/cel)."""
    if typ in ("object", "array"):
        return f'{path}: Invalid value: {msg}'
    if typ == "string" and value is not None:
        return f'{path}: Invalid value: {json.dumps(value)}: {msg}'
    raise ValueError(f"cel({path!r}): a {typ} rule needs the value")


def req(path):
    return f"{path}: Required value"


def enum(path, value, allowed):
    return f'{path}: Unsupported value: {json.dumps(value)}: supported values: ' + \
        ", ".join(json.dumps(a) for a in allowed)


def typ(path, got, want):
    return f'{path}: Invalid value: "{got}": {path} in body must be of type {want}: "{got}"'


def ge(path, v, n):
    return f"{path}: Invalid value: {v}: {path} in body should be greater than or equal to {n}"


def le(path, v, n):
    return f"{path}: Invalid value: {v}: {path} in body should be less than or equal to {n}"


sys.path.insert(0, HERE)
if __name__ == "__main__":
    import nodepool_cases
    import ec2nodeclass_cases
    write("nodepool", nodepool_cases.cases())
    write("ec2nodeclass", ec2nodeclass_cases.cases())
