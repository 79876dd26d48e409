"""Every operator's output names and output count are MXNet 1.9.1's.

Golden table: ``tests/golden/data/output_names.json`` (``make_output_names.py``): for each
operator MXNet registers, built as one node named ``op`` with minimal parameters, its
``list_outputs()`` (MXNet's ``FListOutputNames``), its number of outputs hidden ones
included (``node_row_ptr`` of the saved symbol) and, where MXNet created the inputs
itself, their names.
"""
import json
import os

import pytest

import symgraph as mx
from symgraph import opdef
from symgraph.base import MXNetError
from symgraph.graph.json_format import mxnet_output_count
from symgraph.symbol.symbol import _invoke

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'golden',
                    'data', 'output_names.json')
with open(DATA) as _f:
    TABLE = json.load(_f)['ops']


def _known(name):
    try:
        opdef.get_op(name)
    except MXNetError:
        return False
    return True


#: control-flow operators need their subgraphs (MXNet composes them empty); tested with
#: real subgraphs in tests/golden/test_ours_control_flow.py
NEEDS_SUBGRAPHS = {'_foreach', '_while_loop', '_cond'}
#: input names symgraph gives differently (the outputs agree)
INPUT_NAMES_DIFFER = {
    # MXNet's OpenCV operators declare no input names, so MXNet names their input 'data'
    '_cvimdecode', '_cvimresize', '_cvcopyMakeBorder',
}
OPS = sorted(n for n in TABLE if _known(n) and n not in NEEDS_SUBGRAPHS)


def _build(name, rec):
    with mx.name.NameManager():
        if isinstance(rec['inputs'], str):          # '*N': N positional inputs
            ins = [mx.sym.var('arg%d' % i) for i in range(int(rec['inputs'][1:]))]
            return _invoke(name, ins, dict(rec['attrs'], name='op'))
        return _invoke(name, [], dict(rec['attrs'], name='op'))


def test_table_covers_the_registry():
    # a regenerated table that lost operators would silently shrink this test
    assert len(OPS) > 450 and 'make_loss' in OPS and 'MakeLoss' in OPS


@pytest.mark.parametrize('name', OPS)
def test_output_names_and_count(name):
    rec = TABLE[name]
    sym = _build(name, rec)
    assert sym.list_outputs() == rec['outputs']
    node = sym._outputs[0][0]
    assert mxnet_output_count(node.op) == rec['count']
    rows = json.loads(sym.tojson())['node_row_ptr']
    assert rows[-1] - rows[-2] == rec['count']
    if not isinstance(rec['inputs'], str) and name not in INPUT_NAMES_DIFFER:
        assert sym.list_arguments() + sym.list_auxiliary_states() == rec['inputs']


def test_make_loss_is_named_loss_makeloss_output():
    x = mx.sym.var('x')
    nll = mx.sym.make_loss(x, name='nll')
    assert nll.list_outputs() == ['nll_loss']
    assert mx.sym.MakeLoss(x, name='nll').list_outputs() == ['nll_output']
    exe = nll.simple_bind(mx.cpu(), x=(2,))
    exe.forward(is_train=True, x=mx.nd.array([1.0, 2.0]))
    assert list(exe.output_dict) == ['nll_loss']
    exe.backward()
    assert exe.grad_dict['x'].asnumpy().tolist() == [1.0, 1.0]


def test_one_piece_split_v2_is_output():
    x = mx.sym.var('x')
    # (mx.sym.split_v2 takes no name, as in MXNet: the prefix names the node)
    with mx.name.Prefix('a_'):
        assert mx.sym.split_v2(x, 1).list_outputs() == ['a__split_v20_output']
        assert mx.sym.split_v2(x, 2).list_outputs() == ['a__split_v21_output0',
                                                         'a__split_v21_output1']
    # SliceChannel names its outputs itself: output0 even for one
    assert mx.sym.SliceChannel(x, num_outputs=1, name='c').list_outputs() == ['c_output0']
