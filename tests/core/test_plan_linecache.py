"""The source of a plan's generated functions lives in ``linecache`` only as long as the
functions do: a long run of re-binds does not accumulate it (bench/bench_memory.py measures
the process as a whole)."""
import gc
import linecache
import traceback

import numpy as np
import pytest

import symgraph as mx


def _plan_entries():
    return sum(1 for k in list(linecache.cache) if k.startswith('<symgraph-plan-'))


def _bind_and_run(sym):
    exe = sym.simple_bind(mx.cpu(), data=(2, 3))
    exe.arg_dict['data'][:] = np.ones((2, 3))
    exe.forward(is_train=True)
    exe.backward()
    return exe


def test_generated_source_is_dropped_with_the_executor():
    sym = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=4,
                                                     name='fc'), name='softmax')
    gc.collect()
    before = _plan_entries()
    exe = _bind_and_run(sym)
    assert _plan_entries() == before + 2          # its forward and its backward
    del exe
    for _ in range(20):
        _bind_and_run(sym)
    gc.collect()
    assert _plan_entries() == before


def test_tracebacks_still_show_the_generated_line():
    x = mx.sym.Variable('data')
    sym = mx.sym.Custom(x, op_type='test_plan_linecache_fail', name='boom')
    exe = sym.simple_bind(mx.cpu(), data=(2, 3))
    with pytest.raises(mx.MXNetError) as info:
        exe.forward()
    frames = traceback.extract_tb(info.value.__cause__.__traceback__)
    gen = [f for f in frames if f.filename.startswith('<symgraph-plan-')]
    assert gen and gen[0].line == 'v1, = f0(v0)'     # the generated call of the node


class _Fail(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        raise RuntimeError('fails on purpose')


@mx.operator.register('test_plan_linecache_fail')
class _FailProp(mx.operator.CustomOpProp):
    def create_operator(self, ctx, in_shapes, in_dtypes):
        return _Fail()
