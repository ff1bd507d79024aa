"""A small subset of CEL, enough for admission webhook matchConditions: literals,
field selection, indexing, has(), !, &&, ||, ?:, comparisons, `in`, size(),
string methods startsWith/endsWith/contains. Anything else raises CelError, which
the admission code treats as an evaluation error (failurePolicy applies)."""
import re


class CelError(Exception):
    pass


_TOK = re.compile(r'\s*(?:(\d+\.\d+|\d+)|("(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\')|'
                  r'(&&|\|\||==|!=|<=|>=|[()\[\]{}.,:?!<>+\-])|([A-Za-z_][A-Za-z0-9_]*))')


def _tokens(s):
    pos, out = 0, []
    while pos < len(s):
        if s[pos:].strip() == '':
            break
        m = _TOK.match(s, pos)
        if not m or m.end() == pos:
            raise CelError('Syntax error: unexpected character at %d in %r' % (pos, s))
        num, string, op, ident = m.groups()
        if num is not None:
            out.append(('num', float(num) if '.' in num else int(num)))
        elif string is not None:
            out.append(('str', bytes(string[1:-1], 'utf-8').decode('unicode_escape')))
        elif op is not None:
            out.append(('op', op))
        else:
            out.append(('id', ident))
        pos = m.end()
    out.append(('end', None))
    return out


class _Missing(Exception):
    pass


class _P:
    def __init__(self, src, env):
        self.t = _tokens(src)
        self.i = 0
        self.env = env

    def peek(self, v=None):
        k, x = self.t[self.i]
        return x == v and k in ('op', 'id') if v is not None else (k, x)

    def take(self, v=None):
        k, x = self.t[self.i]
        if v is not None and not (x == v and k in ('op', 'id')):
            raise CelError('Syntax error: expected %r, found %r' % (v, x))
        self.i += 1
        return k, x

    # Expressions are parsed into closures so that && / || / ?: can short-circuit.
    def expr(self):
        c = self.or_()
        if self.peek('?'):
            self.take('?')
            a = self.expr()
            self.take(':')
            b = self.expr()
            return lambda: a() if _bool(c()) else b()
        return c

    def or_(self):
        left = self.and_()
        while self.peek('||'):
            self.take()
            right = self.and_()
            left = _or(left, right)
        return left

    def and_(self):
        left = self.rel()
        while self.peek('&&'):
            self.take()
            right = self.rel()
            left = _and(left, right)
        return left

    def rel(self):
        left = self.unary()
        for op in ('==', '!=', '<=', '>=', '<', '>', 'in'):
            if self.peek(op):
                self.take()
                right = self.unary()
                return _cmp(op, left, right)
        return left

    def unary(self):
        if self.peek('!'):
            self.take()
            x = self.unary()
            return lambda: not _bool(x())
        if self.peek('-'):
            self.take()
            x = self.unary()
            return lambda: -x()
        return self.postfix()

    def postfix(self):
        x = self.primary()
        while True:
            if self.peek('.'):
                self.take()
                _, name = self.take()
                if self.peek('('):
                    args = self.args()
                    x = _method(x, name, args)
                else:
                    x = _field(x, name)
            elif self.peek('['):
                self.take()
                idx = self.expr()
                self.take(']')
                x = _index(x, idx)
            else:
                return x

    def args(self):
        self.take('(')
        out = []
        while not self.peek(')'):
            out.append(self.expr())
            if self.peek(','):
                self.take()
        self.take(')')
        return out

    def primary(self):
        k, v = self.take()
        if k in ('num', 'str'):
            return lambda: v
        if k == 'op' and v == '(':
            e = self.expr()
            self.take(')')
            return e
        if k == 'op' and v == '[':
            items = []
            while not self.peek(']'):
                items.append(self.expr())
                if self.peek(','):
                    self.take()
            self.take(']')
            return lambda: [f() for f in items]
        if k == 'id':
            if v == 'true':
                return lambda: True
            if v == 'false':
                return lambda: False
            if v == 'null':
                return lambda: None
            if v == 'has':
                self.take('(')
                target = self.postfix_for_has()
                self.take(')')
                return target
            if v == 'size':
                a = self.args()
                return lambda: len(a[0]())
            if self.peek('('):
                raise CelError('undeclared reference to function %r' % v)
            env = self.env
            if v not in env:
                raise CelError('undeclared reference to %r' % v)
            return lambda: env[v]
        raise CelError('Syntax error: unexpected %r' % (v,))

    def postfix_for_has(self):
        start = self.i
        x = self.primary()
        sels = []
        while self.peek('.'):
            self.take()
            _, name = self.take()
            sels.append(name)
        if not sels:
            self.i = start
            raise CelError('invalid argument to has() macro')
        base = x
        for s in sels[:-1]:
            base = _field(base, s)
        last = sels[-1]

        def has():
            b = base()
            if not isinstance(b, dict):
                raise CelError('invalid type for field selection')
            return last in b and b[last] is not None
        return has


def _bool(v):
    if not isinstance(v, bool):
        raise CelError('no such overload: expected bool, got %s' % type(v).__name__)
    return v


def _or(a, b):
    def f():
        try:
            if _bool(a()):
                return True
        except CelError:
            if _bool(b()):
                return True
            raise
        return _bool(b())
    return f


def _and(a, b):
    def f():
        try:
            if not _bool(a()):
                return False
        except CelError:
            if not _bool(b()):
                return False
            raise
        return _bool(b())
    return f


def _cmp(op, a, b):
    def f():
        x, y = a(), b()
        if op == 'in':
            if isinstance(y, (dict, list)):
                return x in y
            raise CelError('no such overload for in')
        if op == '==':
            return x == y
        if op == '!=':
            return x != y
        try:
            return {'<': x < y, '<=': x <= y, '>': x > y, '>=': x >= y}[op]
        except TypeError:
            raise CelError('no such overload for %s' % op)
    return f


def _field(x, name):
    def f():
        v = x()
        if not isinstance(v, dict):
            raise CelError('no such key: %s' % name)
        if name not in v:
            raise CelError('no such key: %s' % name)
        return v[name]
    return f


def _index(x, idx):
    def f():
        v, i = x(), idx()
        try:
            return v[i]
        except (KeyError, IndexError, TypeError):
            raise CelError('no such key: %r' % (i,))
    return f


def _method(x, name, args):
    def f():
        v = x()
        a = [g() for g in args]
        if name == 'startsWith' and isinstance(v, str):
            return v.startswith(a[0])
        if name == 'endsWith' and isinstance(v, str):
            return v.endswith(a[0])
        if name == 'contains' and isinstance(v, str):
            return a[0] in v
        if name == 'matches' and isinstance(v, str):
            return re.search(a[0], v) is not None
        if name == 'size':
            return len(v)
        raise CelError('no such overload: %s' % name)
    return f


def evaluate(src, env):
    p = _P(src, env)
    fn = p.expr()
    if p.peek()[0] != 'end':
        raise CelError('Syntax error: trailing input in %r' % src)
    return fn()
