"""Symbol behaviours MXNet 1.9.1's own test_symbol.py checks: ``bool(symbol)`` raises
NotImplementedForSymbol; ``Executor.debug_str`` has MXNet's 'Total N MB allocated' line."""
import json
import re

import pytest

import symgraph as mx
from symgraph.base import NotImplementedForSymbol


def test_bool_of_a_symbol_raises_not_implemented_for_symbol():
    with pytest.raises(NotImplementedForSymbol, match='__bool__'):
        bool(mx.sym.var('x'))
    with pytest.raises(NotImplementedError):        # still the builtin type
        if mx.sym.var('x') + 1:
            pass


def test_debug_str_reports_total_mb_allocated_as_mxnet():
    data = mx.sym.var('data')
    for _ in range(10):
        data = data * data

    def total(exe):
        return int(re.search(r'Total (\d+) MB allocated', exe.debug_str()).group(1))
    big = total(data.simple_bind(mx.cpu(), data=(10, 3, 256, 256)))
    small = total(data.simple_bind(mx.cpu(), data=(10, 3, 256, 256), grad_req='null'))
    # ten 7.5 MB products; training keeps them for backward, inference reuses two buffers
    assert big > 60 and small < 30 and big > small


def test_gen_atomic_symbol_is_the_head_operator_alone():
    """MXNet's test_symbol.py test_gen_atomic_symbol_multiple_outputs; names and JSON as
    MXNet 1.9.1 gives them."""
    s = mx.sym.RNN(mx.sym.var('data'), mx.sym.var('param'), mx.sym.var('h0'),
                   mx.sym.var('h1'), state_size=10, num_layers=2, bidirectional=True,
                   state_outputs=True, mode='lstm')
    a = s._gen_atomic_symbol()
    assert a.list_arguments() == [] and a.name == ''
    assert a.list_outputs() == ['output', 'state_output', 'statecell_output']
    node = json.loads(a.tojson())['nodes'][0]
    assert node == {'op': 'RNN', 'name': '', 'inputs': [],
                    'attrs': {'bidirectional': 'True', 'mode': 'lstm', 'num_layers': '2',
                              'state_outputs': 'True', 'state_size': '10'}}
    with pytest.raises(ValueError):
        mx.sym.var('x')._gen_atomic_symbol()
