"""bfloat16 arrays (``ml_dtypes.bfloat16``): made, cast, computed (operators without a
bfloat16 kernel compute in float32 and round: ``opdef.bind_step``), differentiated,
inferred in graphs and saved in ``.params`` files MXNet 1.9.1 reads and writes
(tests/golden/make_amp_bf16.py)."""
import os
import subprocess
import sys

import numpy as np
import pytest

ml_dtypes = pytest.importorskip('ml_dtypes')

import symgraph as mx  # noqa: E402
from symgraph import opdef  # noqa: E402
from symgraph.ndarray.serialization import dumps_arrays, load_arrays  # noqa: E402

BF16 = np.dtype(ml_dtypes.bfloat16)
#: MXNet's spelling of the type: what NDArray.dtype and infer_type give, as MXNet's do
MXBF16 = np.dtype([('bfloat16', np.uint16)])
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'golden', 'data',
                    'amp_bf16')


def bits(a):
    return np.asarray(a).view(np.uint16)


def rounded(x):
    """float32 values rounded to bfloat16 (nearest even), as MXNet's amp_cast rounds."""
    return np.asarray(x, np.float32).astype(BF16)


def test_import_does_not_load_ml_dtypes():
    code = 'import sys, symgraph; print("ml_dtypes" in sys.modules)'
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == 'False'


def test_arrays_of_bfloat16_are_made_cast_and_read_back():
    x = np.array([[1.0, 1.00390625, 3.1415927], [-2.5, 65504.0, 1e-3]], np.float32)
    a = mx.nd.array(x, dtype='bfloat16')
    # NDArray.dtype spells it as MXNet does; the data is ml_dtypes' type
    assert a.dtype == MXBF16 and a.shape == (2, 3)
    got = a.asnumpy()
    assert got.dtype == BF16
    np.testing.assert_array_equal(bits(got), bits(rounded(x)))
    # 1 + 2^-8 is a tie: to even (1.0)
    assert float(got[0, 1]) == 1.0
    np.testing.assert_array_equal(a.astype('float32').asnumpy(), rounded(x).astype(np.float32))
    assert mx.nd.zeros((2, 2), dtype='bfloat16').dtype == MXBF16
    assert mx.nd.ones(3, dtype=BF16).asnumpy().astype(np.float32).tolist() == [1, 1, 1]
    assert mx.nd.full((2,), 0.1, dtype='bfloat16').asnumpy()[0] == rounded(0.1)
    assert mx.nd.array(x).astype(BF16).dtype == MXBF16
    with pytest.raises(TypeError):
        mx.nd.array(x, dtype='bfloat17')


def test_operators_compute_in_float32_and_round():
    """Without a bfloat16 kernel an operator runs on the float32 values of its bfloat16
    inputs and rounds its outputs: float32's result rounded once; with one (softmax,
    relu: oneDNN's) within one bfloat16 step of it."""
    rng = np.random.RandomState(0)
    x = rounded(rng.normal(size=(3, 5)))
    y = rounded(rng.normal(size=(3, 5)))
    a, b = mx.nd.array(x, dtype=BF16), mx.nd.array(y, dtype=BF16)
    xf, yf = x.astype(np.float32), y.astype(np.float32)
    for got, want in ((a + b, xf + yf), (a * b, xf * yf), (mx.nd.exp(a), np.exp(xf)),
                      (mx.nd.relu(a), np.maximum(xf, 0)), (a * 3.0, xf * 3),
                      (mx.nd.sum(a, axis=1), xf.sum(axis=1)),
                      (mx.nd.softmax(a), np.exp(xf) / np.exp(xf).sum(1, keepdims=True)),
                      (mx.nd.dot(a, b.T), xf @ yf.T)):
        assert got.dtype == MXBF16
        np.testing.assert_allclose(got.asnumpy().astype(np.float32),
                                   rounded(want).astype(np.float32), rtol=2 ** -7, atol=1e-6)
    # argmax's indices take the input's type (MXNet's rule), exact for small indices
    idx = mx.nd.argmax(a, axis=1)
    assert idx.dtype == MXBF16
    assert idx.asnumpy().astype(np.float32).tolist() == xf.argmax(axis=1).tolist()
    # a cast's output type is its parameter's: not rounded
    assert mx.nd.Cast(a, dtype='float64').dtype is np.float64


def test_layers_match_float32_within_bfloat16_rounding():
    rng = np.random.RandomState(1)
    x = rounded(rng.normal(size=(2, 3, 9, 9)))
    w = rounded(rng.normal(0, 0.3, size=(4, 3, 3, 3)))
    fw = rounded(rng.normal(0, 0.1, size=(5, 4 * 7 * 7)))
    ys = {}
    for dt in (np.float32, BF16):
        y = mx.nd.Convolution(mx.nd.array(x, dtype=dt), mx.nd.array(w, dtype=dt),
                              kernel=(3, 3), num_filter=4, no_bias=True)
        y = mx.nd.Activation(y, act_type='relu')
        y = mx.nd.FullyConnected(y, mx.nd.array(fw, dtype=dt), num_hidden=5, no_bias=True)
        assert y.asnumpy().dtype == np.dtype(dt)
        ys[np.dtype(dt).name] = y.asnumpy().astype(np.float32)
    ref = ys['float32']
    # three roundings to 8 significant bits on the way
    np.testing.assert_allclose(ys['bfloat16'], ref, rtol=0, atol=4 * 2 ** -8 *
                               np.abs(ref).max())


def test_gradients_of_bfloat16_arrays():
    x = rounded([0.5, -1.25, 2.0])
    a = mx.nd.array(x, dtype=BF16)
    a.attach_grad()
    with mx.autograd.record():
        z = (mx.nd.exp(a) * a).sum()
    z.backward()
    assert a.grad.dtype == MXBF16
    xf = x.astype(np.float32)
    want = np.exp(xf) * xf + np.exp(xf)
    np.testing.assert_allclose(a.grad.asnumpy().astype(np.float32), want, rtol=3 * 2 ** -8)


def test_casts_follow_mxnets_type_rules():
    f32 = mx.nd.array([1.5, 2.25])
    b = mx.nd.amp_cast(f32, dtype='bfloat16')
    assert b.dtype == MXBF16
    assert mx.nd.amp_cast(b, dtype='float32').dtype is np.float32
    assert mx.nd.Cast(f32, dtype='bfloat16').dtype == MXBF16
    assert mx.nd.amp_cast(mx.nd.array([1, 2], dtype='int32'), dtype='bfloat16').dtype \
        is np.int32
    # widest: float32 wins; narrow: the last float16/bfloat16 input
    wide = mx.nd.amp_multicast(b, f32, num_outputs=2)
    assert [o.dtype for o in wide] == [np.float32, np.float32]
    f16 = f32.astype('float16')
    narrow = mx.nd.amp_multicast(f16, b, f32, num_outputs=3, cast_narrow=True)
    assert all(o.dtype == MXBF16 for o in narrow)
    narrow = mx.nd.amp_multicast(b, f16, num_outputs=2, cast_narrow=True)
    assert all(o.dtype is np.float16 for o in narrow)
    # the gradient of a cast is the head gradient cast back
    f32.attach_grad()
    with mx.autograd.record():
        y = mx.nd.amp_cast(f32, dtype='bfloat16') * 2
    y.backward()
    assert f32.grad.dtype is np.float32 and f32.grad.asnumpy().tolist() == [2, 2]


def test_symbols_infer_and_run_bfloat16():
    d = mx.sym.var('data')
    x = mx.sym.amp_cast(d, dtype='bfloat16')
    x = mx.sym.Convolution(x, num_filter=4, kernel=(3, 3), pad=(1, 1), name='c')
    x = mx.sym.BatchNorm(x, fix_gamma=False, name='bn')
    x = mx.sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type='max')
    x = mx.sym.FullyConnected(x, num_hidden=3, name='fc')
    out = mx.sym.amp_cast(x, dtype='float32')
    args, outs, aux = out.infer_type(data='float32')
    types = dict(zip(out.list_arguments(), args))
    assert types['c_weight'] == MXBF16 and types['fc_bias'] == MXBF16
    # BatchNorm keeps float32 parameters and statistics for bfloat16 data, as MXNet
    assert types['bn_gamma'] is np.float32 and aux == [np.float32, np.float32]
    assert outs == [np.float32]
    assert mx.sym.var('v', dtype='bfloat16').attr('__dtype__') == '12'
    # and a JSON __dtype__ of 12 reads back as bfloat16
    v = mx.sym.load_json(mx.sym.var('v', dtype='bfloat16').tojson())
    assert v.infer_type()[0] == [MXBF16]

    exe = out.simple_bind(mx.cpu(), data=(2, 3, 6, 6), type_dict={'data': 'float32'})
    rng = np.random.RandomState(2)
    for k, v in exe.arg_dict.items():
        v[:] = mx.nd.array(rng.normal(0, 0.5, v.shape), dtype=v.dtype)
    exe.aux_dict['bn_moving_var'][:] = 1
    exe.forward(is_train=True)
    assert exe.outputs[0].dtype is np.float32
    # the moving mean (float32, updated in the widened BatchNorm) moved
    assert np.abs(exe.aux_dict['bn_moving_mean'].asnumpy()).max() > 0
    exe.backward(mx.nd.ones((2, 3)))
    assert exe.grad_dict['c_weight'].dtype == MXBF16
    assert np.abs(exe.grad_dict['c_weight'].asnumpy().astype(np.float32)).max() > 0


def test_params_files_round_trip_and_match_mxnets(tmp_path):
    path = os.path.join(DATA, 'bf16.params')
    got = mx.nd.load(path)
    want = np.load(os.path.join(DATA, 'bf16-values.npz'))
    assert sorted(got) == sorted(want.files)
    for k, v in got.items():
        assert (v.asnumpy().dtype == BF16) == (k != 'f32'), k
        np.testing.assert_array_equal(v.asnumpy().astype(np.float32), want[k])
    # written back, the file is MXNet's byte for byte (what MXNet reads as its own)
    with open(path, 'rb') as f:
        theirs = f.read()
    assert dumps_arrays({k: v.asnumpy() for k, v in got.items()}) == theirs
    mine = tmp_path / 'mine.params'
    mx.nd.save(str(mine), got)
    assert mine.read_bytes() == theirs
    # and the other choices of the loader stay
    np.testing.assert_array_equal(load_arrays(path, bfloat16='float32')['round'],
                                  want['round'])
    assert load_arrays(path, bfloat16='raw')['round'].dtype == np.uint16


def test_bind_step_widens_only_undeclared_operators():
    op = opdef.get_op('exp')()
    step = opdef.bind_step(op, mx.cpu(), [(2,)], [BF16])
    assert isinstance(step, opdef.WidenedStep)
    assert not isinstance(opdef.bind_step(op, mx.cpu(), [(2,)], [np.dtype(np.float32)]),
                          opdef.WidenedStep)
    cast = opdef.get_op('amp_cast')(dtype='float32')
    assert not isinstance(opdef.bind_step(cast, mx.cpu(), [(2,)], [BF16]), opdef.WidenedStep)


def test_gluon_block_cast_to_bfloat16_runs_and_trains():
    """``net.cast('bfloat16')``: BatchNorm keeps float32 parameters (as for float16);
    imperative and hybridized calls agree with float32 within bfloat16 rounding, and the
    weights get bfloat16 gradients."""
    from symgraph.gluon import nn
    net = nn.HybridSequential()
    net.add(nn.Conv2D(8, 3, padding=1, in_channels=3), nn.BatchNorm(in_channels=8),
            nn.Activation('relu'), nn.Dense(5, in_units=8 * 6 * 6))
    net.initialize(mx.init.Xavier())
    x = mx.nd.array(np.random.RandomState(8).uniform(-1, 1, (2, 3, 6, 6)))
    ref = net(x).asnumpy()
    net.cast('bfloat16')
    assert net[0].weight.dtype == 'bfloat16' and net[1].gamma.dtype == 'float32'
    xb = x.astype('bfloat16')
    tol = 0.03 * np.abs(ref).max()
    for hybrid in (False, True):
        if hybrid:
            net.hybridize()
        y = net(xb)
        assert y.dtype == MXBF16
        np.testing.assert_allclose(y.asnumpy().astype(np.float32), ref, rtol=0, atol=tol)
    with mx.autograd.record():
        loss = net(xb).astype('float32').sum()
    loss.backward()
    g = net[0].weight.grad()
    assert g.dtype == MXBF16 and np.abs(g.asnumpy().astype(np.float32)).max() > 0
