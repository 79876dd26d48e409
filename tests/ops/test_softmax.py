"""Softmax-family operators (ops/softmax.py): softmin.

References are written element by element from MXNet 1.9.1's formulas (checked against
MXNet 1.9.1 when this file was written); they do not call the operators.
"""
from harness import case_tests, OpCase
from _refs import F16, _sm


CASES = [
    OpCase('softmin', {}, [(2, 3, 4)], ref=lambda x: _sm(-x), dtypes=F16),
    OpCase('softmin', dict(axis=0, temperature=2.5), [(2, 3, 4)],
           ref=lambda x: _sm(-x / 2.5, 0)),
    OpCase('softmin', dict(axis=1, dtype='float64'), [(3, 5)], ref=lambda x: _sm(-x, 1)),
]


test_forward, test_gradient = case_tests(CASES)
