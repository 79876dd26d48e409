"""The scalar expressions of the integer-scalar golden cases, shared by
make_int_scalar.py (MXNet) and test_int_scalar.py (symgraph). Python 3.8 compatible."""

OPS = {
    'add': lambda x, s: x + s, 'sub': lambda x, s: x - s, 'rsub': lambda x, s: s - x,
    'mul': lambda x, s: x * s, 'div': lambda x, s: x / s, 'rdiv': lambda x, s: s / x,
    'mod': lambda x, s: x % s, 'rmod': lambda x, s: s % x, 'pow': lambda x, s: x ** s,
    'rpow': lambda x, s: s ** x, 'gt': lambda x, s: x > s, 'le': lambda x, s: x <= s,
    'eq': lambda x, s: x == s, 'ne': lambda x, s: x != s,
}
