"""``nose.tools`` as MXNet 1.9.1's unit tests use it (see the package docstring)."""
import functools
import unittest

__all__ = ['assert_raises', 'raises', 'ok_', 'eq_', 'make_decorator', 'assert_equal',
           'assert_true', 'assert_false', 'SkipTest']

SkipTest = unittest.SkipTest
_case = unittest.TestCase('__init__')
assert_raises = _case.assertRaises
assert_equal = _case.assertEqual
assert_true = _case.assertTrue
assert_false = _case.assertFalse


def ok_(expr, msg=None):
    """Assert ``expr`` is true."""
    if not expr:
        raise AssertionError(msg)


def eq_(a, b, msg=None):
    """Assert ``a == b``."""
    if not a == b:
        raise AssertionError(msg or '%r != %r' % (a, b))


def make_decorator(func):
    """Make a decorator that gives the decorated function ``func``'s name and metadata."""
    def decorate(newfunc):
        name = func.__name__
        try:
            newfunc.__doc__ = func.__doc__
            newfunc.__module__ = func.__module__
            newfunc.__dict__ = func.__dict__
            newfunc.__name__ = name
        except TypeError:
            newfunc.compat_func_name = name
        return newfunc
    return decorate


def raises(*exceptions):
    """The test must raise one of ``exceptions`` to pass."""
    def decorate(func):
        @functools.wraps(func)
        def newfunc(*args, **kwargs):
            try:
                func(*args, **kwargs)
            except exceptions:
                return
            raise AssertionError('%s() did not raise %s' % (
                func.__name__, ' or '.join(e.__name__ for e in exceptions)))
        return newfunc
    return decorate
