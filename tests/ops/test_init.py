"""Operators without inputs (``_zeros``, ``_ones``, ``_full``, ``_arange``, ``_eye``,
``_linspace``): values, shapes, dtypes and MXNet's parameter handling; golden values and
JSON from MXNet 1.9.1 are in tests/golden."""
import json
import warnings

import numpy as np
import pytest

import symgraph as mx
from _refs import F16
from harness import OpCase, parametrize_cases, check_forward, case_tests
from symgraph.base import MXNetError, ShapeError

CASES = [
    OpCase('_zeros', dict(shape=(2, 3)), shapes=[], ref=lambda: np.zeros((2, 3)), grad=()),
    OpCase('_ones', dict(shape=(4,), dtype='int32'), shapes=[], dtypes=('int32',),
           ref=lambda: np.ones(4, np.int32), grad=()),
    OpCase('_full', dict(shape=(2, 2), value=2.5), shapes=[],
           ref=lambda: np.full((2, 2), 2.5), grad=()),
    OpCase('_arange', dict(start=2, stop=11, step=3, repeat=2), shapes=[],
           ref=lambda: np.repeat(np.arange(2.0, 11, 3), 2), grad=()),
    OpCase('_arange', dict(start=4), shapes=[], ref=lambda: np.arange(4.0), grad=()),
    OpCase('_arange', dict(start=1, stop=0, step=-0.25), shapes=[],
           ref=lambda: np.arange(1, 0, -0.25), grad=()),
    OpCase('_eye', dict(N=3, M=4, k=1), shapes=[], ref=lambda: np.eye(3, 4, 1), grad=()),
    OpCase('_eye', dict(N=3, k=-1), shapes=[], ref=lambda: np.eye(3, 3, -1), grad=()),
    OpCase('_linspace', dict(start=0, stop=1, num=5), shapes=[],
           ref=lambda: np.linspace(0, 1, 5), grad=()),
    OpCase('_linspace', dict(start=0, stop=1, num=4, endpoint=False), shapes=[],
           ref=lambda: np.linspace(0, 1, 4, endpoint=False), grad=()),
]


@parametrize_cases(CASES)
def test_forward(case):
    check_forward(case)


def test_symbol_functions_write_mxnets_attributes():
    assert mx.sym.zeros((2, 3)).list_attr() == {'shape': '(2, 3)', 'dtype': 'float32'}
    assert mx.sym.ones((2,), dtype='int32').infer_type() == ([], [np.int32], [])
    assert mx.sym.arange(0, 5).list_attr() == {
        'start': '0', 'stop': '5', 'step': '1.0', 'repeat': '1', 'infer_range': 'False',
        'dtype': 'float32'}
    assert mx.sym.full((2,), 5).list_arguments() == []
    assert mx.sym.arange(0, 5).infer_shape() == ([], [(5,)], [])


def test_graphs_mixing_made_arrays_and_inputs():
    x = mx.sym.var('x')
    net = x * mx.sym.arange(1, 4) + mx.sym.ones((3,))
    exe = net.simple_bind(mx.cpu(), x=(3,))
    out = exe.forward(is_train=True, x=np.array([1.0, 2.0, 3.0]))[0]
    np.testing.assert_array_equal(out.asnumpy(), [2, 5, 10])
    exe.backward([mx.nd.ones((3,))])
    np.testing.assert_array_equal(exe.grad_dict['x'].asnumpy(), [1, 2, 3])
    np.testing.assert_array_equal(mx.sym.eye(2).eval()[0].asnumpy(), np.eye(2))


@pytest.mark.parametrize('make, fill', [
    (lambda: mx.sym.zeros(shape=(0, 4)), 0.0),
    (lambda: mx.sym.ones(shape=(0, 4)), 1.0),
    (lambda: mx.sym.full(shape=(0, 0), val=2.5), 2.5)])
def test_unknown_dimension_takes_the_consumers_shape(make, fill):
    # MXNet 1.9.1: a 0 in shape is unknown; inference fills it from the consumer and the
    # bound forward makes the array of the inferred shape (FullyConnected(data (3, 5),
    # num_hidden=4) + zeros(shape=(0, 4)) gives (3, 4)); the graph keeps shape (0, ...)
    z = make()
    shape_attr = z.list_attr()['shape']
    net = mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=4, name='fc') + z
    assert net.infer_shape(data=(3, 5))[1] == [(3, 4)]
    rng = np.random.RandomState(0)
    args = {'data': rng.randn(3, 5), 'fc_weight': rng.randn(4, 5), 'fc_bias': rng.randn(4)}
    exe = net.bind(mx.cpu(), {k: mx.nd.array(v) for k, v in args.items()},
                   args_grad={'data': mx.nd.zeros((3, 5))})
    out = exe.forward(is_train=True)[0]
    want = args['data'] @ args['fc_weight'].T + args['fc_bias'] + fill
    assert out.shape == (3, 4)
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-5, atol=1e-5)
    exe.backward([mx.nd.ones((3, 4))])
    np.testing.assert_allclose(exe.grad_dict['data'].asnumpy(),
                               np.ones((3, 4)) @ args['fc_weight'], rtol=1e-5, atol=1e-5)
    assert z.list_attr()['shape'] == shape_attr
    assert [n['attrs']['shape'] for n in json.loads(net.tojson())['nodes']
            if n['op'] in ('_zeros', '_ones', '_full')] == [shape_attr]


def test_unknown_dimension_nobody_fills_is_refused_at_bind():
    # MXNet's simple_bind fails too ("InferShape pass cannot decide shapes")
    with pytest.raises(ShapeError, match=r'_zeros: shape \(0, 4\) has unknown'):
        mx.sym.zeros(shape=(0, 4)).simple_bind(mx.cpu())
    net = mx.sym.broadcast_mul(mx.sym.var('x'), mx.sym.ones(shape=(0, 0)))
    with pytest.raises(ShapeError, match=r'_ones: shape \(0, 0\) has unknown'):
        net.simple_bind(mx.cpu(), x=(2, 3))


def test_bad_parameters_are_refused():
    with pytest.raises(MXNetError, match='infer_range'):
        mx.sym.arange(0, infer_range=True)
    with pytest.raises(MXNetError, match='step'):
        mx.sym.arange(0, 5, 0)


def _arange_like_ref(start=0.0, step=1.0, repeat=1, axis=None):
    def ref(x):
        shape = x.shape if axis is None else (x.shape[axis],)
        n = int(np.prod(shape))
        vals = [x.dtype.type(start) + x.dtype.type(i // repeat) * x.dtype.type(step)
                for i in range(n)]
        return np.array(vals, x.dtype).reshape(shape)
    return ref


ARANGE_LIKE_CASES = [
    OpCase('_contrib_arange_like', {}, [(3, 4)], ref=_arange_like_ref(), grad=()),
    OpCase('_contrib_arange_like', dict(start=2, step=0.5, repeat=2), [(3, 4)],
           ref=_arange_like_ref(2, 0.5, 2), grad=()),
    OpCase('_contrib_arange_like', dict(start=2, step=3, repeat=2), [(3, 4)], dtypes=F16,
           ref=_arange_like_ref(2, 3, 2), grad=()),
    OpCase('_contrib_arange_like', dict(axis=-2, repeat=2, start=1.5), [(3, 4)],
           ref=_arange_like_ref(1.5, 1, 2, -2), grad=()),
    OpCase('_contrib_arange_like', dict(axis=1, step=-3), [(2, 5, 3)],
           ref=_arange_like_ref(0, -3, 1, 1), grad=()),
]


def test_arange_like_rules():
    x = mx.sym.var('x')
    s = mx.sym.contrib.arange_like(x, axis=1, name='a')
    assert s.infer_shape(x=(2, 3))[1] == [(3,)]
    with pytest.raises(ShapeError, match='axis=3 is out of range'):
        mx.sym.contrib.arange_like(x, axis=3).infer_shape(x=(2, 3))
    assert s.infer_type(x='float16')[1] == [np.float16]
    ints = mx.nd.contrib.arange_like(mx.nd.zeros((3, 4), dtype='int32'), step=0.5)
    assert ints.dtype == np.int32 and not ints.asnumpy().any()    # step cast to int first
    half = mx.nd.contrib.arange_like(mx.nd.zeros((5,), dtype='float16'), start=2.5, step=2.9)
    np.testing.assert_array_equal(half.asnumpy(), [2, 4, 6, 8, 10])   # as MXNet 1.9.1
    # positional parameters: start, step, repeat, ctx, axis
    sym = mx.sym.contrib.arange_like(x, 1.0, 2.0, 3, '', 0, name='p')
    assert sym.list_attr() == {'start': '1.0', 'step': '2.0', 'repeat': '3', 'ctx': '',
                               'axis': '0'}


ZEROS_WITHOUT_DTYPE_CASES = [
    OpCase('_zeros_without_dtype', dict(shape=(2, 3)), [], ref=lambda: np.zeros((2, 3)),
           dtypes=('float32',)),
    OpCase('_zeros_without_dtype', dict(shape=(4,), dtype=6), [],
           ref=lambda: np.zeros(4, np.int64), dtypes=('float32',)),
]


# rows checked by the whole harness (forward, gradient, symbolic), unlike CASES above
test_case_forward, test_case_gradient = case_tests(ARANGE_LIKE_CASES + ZEROS_WITHOUT_DTYPE_CASES)


def test_zeros_without_dtype_and_cast_storage_errors():
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        z = mx.nd._internal._zeros_without_dtype(shape=(2, 3))
    assert z.dtype == np.float32 and z.shape == (2, 3)
    with pytest.raises(MXNetError, match='type flags'):
        mx.nd._internal._zeros_without_dtype(shape=(2,), dtype=12)
    for stype in ('csr', 'row_sparse'):          # dense-backed sparse arrays, MXNet's types
        cast = mx.nd.cast_storage(mx.nd.array([[0, 1], [0, 0]]), stype=stype)
        assert cast.stype == stype
        np.testing.assert_array_equal(cast.asnumpy(), [[0, 1], [0, 0]])
    with pytest.raises(MXNetError, match='stype'):
        mx.nd.cast_storage(mx.nd.ones((2, 2)), stype='dense')
