#!/usr/bin/env python3
"""tools/check_docs.py — the documentation says what the binary does.

    NW_BIN=build/nodewarden python3 tools/check_docs.py [--self-test]

Fails (exit 1, naming what is wrong) when
  1. a configuration key that `nodewarden serve --help` lists is missing from the
     tables of docs/configuration.md, is listed there with another default, or the
     document lists a key the binary does not know;
  2. an NW_* environment variable the product reads (getenv in its C sources) is
     not in docs/configuration.md, or the document names one nothing reads;
  3. a YAML example in README.md is refused by `nodewarden check`, README.md grows
     past 300 lines, or its subcommand table differs from `nodewarden --help`;
  4. a relative link in README.md or docs/**/*.md points to a file (or a heading
     in it) that does not exist (documents listed in tools/pending-docs.txt are being written elsewhere
     and are let through).
--self-test feeds each check a wrong input and fails unless each one complains.
Run by the `docs` job of `make test`.
"""
import glob
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get('NW_BIN', os.path.join(ROOT, 'build', 'nodewarden'))

HELP_KEY = re.compile(r'^\s+--([a-zA-Z][a-zA-Z0-9.]*)\s+(string|int|number|bool|duration|list)\s+\(default "(.*)"\)\s*$')
DOC_ROW = re.compile(r'^\|\s*`([a-zA-Z][a-zA-Z0-9]*(?:\.[a-zA-Z0-9]+)+)`\s*\|[^|]*\|\s*([^|]*?)\s*\|')
LINK = re.compile(r'\]\(([^)#\s]*)(?:#([^)\s]*))?\)')


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to '-'."""
    h = heading.strip().lower()
    h = re.sub(r'[^\w\- ]', '', h)
    return h.replace(' ', '-')


def anchors(path):
    with open(path, encoding='utf-8') as f:
        text = re.sub(r'^```.*?^```', '', f.read(), flags=re.S | re.M)
    return {slug(m) for m in re.findall(r'^#+\s+(.*)$', text, re.M)}


def binary_keys():
    out = subprocess.run([BIN, 'serve', '--help'], capture_output=True, text=True, check=False)
    keys = {}
    for line in (out.stdout + out.stderr).splitlines():
        m = HELP_KEY.match(line)
        if m:
            keys[m.group(1)] = m.group(3)
    if len(keys) < 10:
        raise SystemExit('check_docs: found only %d keys in `%s serve --help`' % (len(keys), BIN))
    return keys


def norm_default(cell):
    """A table cell such as "`7340032` (7 MiB)" or "`a, b, c`" -> "7340032" / "a,b,c"."""
    m = re.match(r'`([^`]*)`', cell)
    v = m.group(1) if m else cell
    v = v.strip()
    if v == '""':
        v = ''
    return ','.join(p.strip() for p in v.split(',')) if ',' in v else v


def check_config(keys, doc_text):
    problems = []
    doc = {}
    for line in doc_text.splitlines():
        m = DOC_ROW.match(line)
        if m:
            doc[m.group(1)] = norm_default(m.group(2))
    for k, d in sorted(keys.items()):
        if k not in doc:
            problems.append('docs/configuration.md: key %s (from serve --help) is not documented' % k)
        elif doc[k] != d:
            problems.append('docs/configuration.md: %s default is "%s", the binary says "%s"' % (k, doc[k], d))
    for k in sorted(set(doc) - set(keys)):
        problems.append('docs/configuration.md: documents %s, which the binary does not know' % k)
    return problems


SRC_DIRS = ('common', 'api', 'config', 'admission', 'scaler', 'server', 'cli')


def product_env_knobs():
    """NW_* environment variables the product's C sources read with getenv."""
    names = set()
    for d in SRC_DIRS:
        for path in glob.glob(os.path.join(ROOT, d, '**', '*.c'), recursive=True):
            with open(path, encoding='utf-8', errors='replace') as f:
                names |= set(re.findall(r'getenv\("(NW_[A-Z0-9_]+)"\)', f.read()))
    return names


def check_env(knobs, doc_text):
    documented = set(re.findall(r'`(NW_[A-Z0-9_]+)', doc_text))
    problems = ['docs/configuration.md: the product reads %s, which is not documented' % k
                for k in sorted(knobs - documented)]
    problems += ['docs/configuration.md: documents %s, which no product source reads' % k
                 for k in sorted(documented - knobs)]
    return problems


def yaml_blocks(text):
    return re.findall(r'^```yaml\n(.*?)^```', text, re.S | re.M)


README_MAX_LINES = 300
HELP_CMD = re.compile(r'^  ([a-z][a-z-]*)\s+\S')
README_CMD = re.compile(r'^\| `nodewarden ([a-z][a-z-]*)')


def check_readme(readme_text, help_text):
    """The README stays a front door, and its subcommand table is `nodewarden --help`'s."""
    problems = []
    n = readme_text.count('\n')
    if n > README_MAX_LINES:
        problems.append('README.md: %d lines; keep it under %d and put the rest in docs/' % (n, README_MAX_LINES))
    section = help_text.split('commands:', 1)[-1].split('\n\n', 1)[0]
    helped = {m.group(1) for m in map(HELP_CMD.match, section.splitlines()) if m}
    listed = {m.group(1) for m in map(README_CMD.match, readme_text.splitlines()) if m}
    if not helped:
        problems.append('nodewarden --help: no commands found')
    for c in sorted(helped - listed):
        problems.append('README.md: subcommand %s (in nodewarden --help) is not in the table' % c)
    for c in sorted(listed - helped):
        problems.append('README.md: the table lists %s, which nodewarden --help does not' % c)
    return problems


def top_help():
    r = subprocess.run([BIN, '--help'], capture_output=True, text=True, check=False)
    return r.stdout + r.stderr


def check_examples(readme_text, name='README.md'):
    problems = []
    for i, block in enumerate(yaml_blocks(readme_text), 1):
        with tempfile.NamedTemporaryFile('w', suffix='.yaml', delete=False) as f:
            f.write(block)
        try:
            r = subprocess.run([BIN, 'check', f.name], capture_output=True, text=True, check=False)
        finally:
            os.unlink(f.name)
        if r.returncode != 0:
            problems.append('%s: YAML example %d is refused by nodewarden check:\n%s' % (name, i, r.stdout + r.stderr))
    return problems


def pending_docs():
    try:
        with open(os.path.join(ROOT, 'tools', 'pending-docs.txt'), encoding='utf-8') as f:
            return {os.path.join(ROOT, l.strip()) for l in f if l.strip() and not l.startswith('#')}
    except OSError:
        return set()


def check_links(files):
    problems = []
    pending = pending_docs()
    for path in files:
        with open(path, encoding='utf-8') as f:
            text = f.read()
        text = re.sub(r'^```.*?^```', '', text, flags=re.S | re.M)
        for target, frag in LINK.findall(text):
            if re.match(r'^[a-z]+:', target):
                continue
            full = os.path.normpath(os.path.join(os.path.dirname(path), target)) if target else path
            if not os.path.exists(full):
                if full not in pending:
                    problems.append('%s: link to %s, which does not exist' % (os.path.relpath(path, ROOT), target))
                continue
            if frag and full.endswith('.md') and frag not in anchors(full):
                problems.append('%s: link to %s#%s: no such heading there' % (os.path.relpath(path, ROOT), target, frag))
    return problems


def doc_files():
    return [os.path.join(ROOT, 'README.md')] + sorted(glob.glob(os.path.join(ROOT, 'docs', '**', '*.md'), recursive=True))


def self_test(keys):
    bad = []
    k, d = next(iter(sorted(keys.items())))
    rows = ''.join('| `%s` | t | `%s` | |\n' % (key, dd) for key, dd in keys.items() if key != k)
    if check_config(keys, rows + '| `%s` | t | `%s` | |\n' % (k, d)):
        bad.append('a correct table was rejected')
    if not check_config(keys, rows + '| `%s` | t | `%s-not` | |\n' % (k, d)):
        bad.append('a wrong default was not caught')
    if not check_config(keys, ''):
        bad.append('missing keys were not caught')
    if not check_env({'NW_A'}, '`NW_B`') or check_env({'NW_A'}, '`NW_A=1`'):
        bad.append('the environment check is wrong')
    if not check_readme('| `nodewarden serve` | x |\n', 'commands:\n  serve      a\n  check      b\n'):
        bad.append('a missing subcommand was not caught')
    if check_readme('| `nodewarden serve` | x |\n', 'commands:\n  serve      a\n'):
        bad.append('a matching subcommand table was refused')
    if not check_readme('\n' * (README_MAX_LINES + 1) + '| `nodewarden serve` | x |\n', '  serve      a\n'):
        bad.append('a long README was not caught')
    if not check_examples('```yaml\napiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: x}\nspec: {weight: 0}\n```\n', 'self-test'):
        bad.append('an invalid example was not caught')
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, 'a.md')
        with open(p, 'w') as f:
            f.write('see [there](no-such-file.md)\n')
        if not check_links([p]):
            bad.append('a broken link was not caught')
        with open(p, 'w') as f:
            f.write('# Title\n\nsee [here](#title) and [there](#no-such-heading)\n')
        if len(check_links([p])) != 1:
            bad.append('a broken anchor was not caught, or a good one was refused')
    return bad


def main():
    keys = binary_keys()
    if '--self-test' in sys.argv[1:]:
        bad = self_test(keys)
        print('check_docs self-test: ' + ('; '.join(bad) if bad else 'ok'))
        return 1 if bad else 0
    with open(os.path.join(ROOT, 'docs', 'configuration.md'), encoding='utf-8') as f:
        conf = f.read()
    with open(os.path.join(ROOT, 'README.md'), encoding='utf-8') as f:
        readme = f.read()
    problems = (check_config(keys, conf) + check_env(product_env_knobs(), conf) +
                check_readme(readme, top_help()) + check_examples(readme) + check_links(doc_files()))
    for p in problems:
        print(p)
    print('check_docs: %s (%d configuration keys, %d README examples, %d documents)' % (
        'FAILED' if problems else 'ok', len(keys), len(yaml_blocks(readme)), len(doc_files())))
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
