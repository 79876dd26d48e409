"""The fused RNN operator and _rnn_param_concat (ops/rnn.py).

Golden values: tests/golden/data/rnn_op.{npz,json}, made by tests/golden/make_rnn.py with
MXNet 1.9.1. The OpCases run the harness (float64 central differences, forward against a
step-by-step NumPy reference written here from MXNet's documented equations).
"""
import json
import os

import numpy as np
import pytest

import symgraph as mx
from harness import OpCase, case_tests
from symgraph.base import MXNetError
from symgraph.opdef import ShapeError, get_op

GOLDEN = os.path.join(os.path.dirname(os.path.dirname(__file__)), 'golden', 'data')
with open(os.path.join(GOLDEN, 'rnn_op.json')) as _f:
    META = json.load(_f)
STORE = np.load(os.path.join(GOLDEN, 'rnn_op.npz'))


# ---------------------------------------------------------------------------------------
# a plain reference: one sequence step at a time, parameters unpacked by hand
# ---------------------------------------------------------------------------------------
def _sig(a):
    return 1 / (1 + np.exp(-a))


def _unpack(w, mode, L, D, C, H, P):
    G = {'lstm': 4, 'gru': 3}.get(mode, 1)
    mats, pos = [], 0
    for layer in range(L):
        inp = C if layer == 0 else D * P
        for _ in range(D):
            m = []
            for shape in ((G * H, inp), (G * H, P)) + (((P, H),) if P != H else ()):
                m.append(w[pos:pos + shape[0] * shape[1]].reshape(shape))
                pos += shape[0] * shape[1]
            mats.append(m)
    for k in range(L * D):
        mats[k] += [w[pos:pos + G * H], w[pos + G * H:pos + 2 * G * H]]
        pos += 2 * G * H
    assert pos == w.size
    return mats


def rnn_ref(mode, H, L, bidirectional=False, P=None, state_outputs=False, lengths=None):
    D = 2 if bidirectional else 1

    def f(x, w, h0, *rest):
        c0 = rest[0] if mode == 'lstm' else None
        seq = rest[-1] if len(rest) > (mode == 'lstm') else None
        P_ = P or H
        T, N, C = x.shape
        mats = _unpack(w, mode, L, D, C, H, P_)
        lens = [T] * N if seq is None else [int(v) for v in seq]
        hy = np.zeros((L * D, N, P_))
        cy = np.zeros((L * D, N, H))
        inp = x
        for layer in range(L):
            out = np.zeros((T, N, D * P_))
            for d in range(D):
                k = layer * D + d
                wx, wh, *rest = mats[k]
                bx, bh = rest[-2:]
                for b in range(N):
                    h, c = h0[k, b], (None if c0 is None else c0[k, b])
                    steps = range(lens[b])
                    for t in (reversed(steps) if d else steps):
                        gx, gh = wx @ inp[t, b] + bx, wh @ h + bh
                        if mode == 'lstm':
                            i, fg, o = (_sig(gx[j * H:(j + 1) * H] + gh[j * H:(j + 1) * H])
                                        for j in (0, 1, 3))
                            g = np.tanh(gx[2 * H:3 * H] + gh[2 * H:3 * H])
                            c = fg * c + i * g
                            h = o * np.tanh(c)
                            if P:
                                h = rest[0] @ h
                        elif mode == 'gru':
                            r = _sig(gx[:H] + gh[:H])
                            z = _sig(gx[H:2 * H] + gh[H:2 * H])
                            n = np.tanh(gx[2 * H:] + r * gh[2 * H:])
                            h = (1 - z) * n + z * h
                        else:
                            a = gx + gh
                            h = np.tanh(a) if mode == 'rnn_tanh' else np.maximum(a, 0)
                        out[t, b, d * P_:(d + 1) * P_] = h
                    hy[k, b] = h
                    if c is not None:
                        cy[k, b] = c
            inp = out
        res = [inp]
        if state_outputs:
            res.append(hy)
            if mode == 'lstm':
                res.append(cy)
        return res
    return f


def _shapes(mode, T, N, C, H, L, bi=False, P=None, seq=False):
    op = get_op('RNN')(mode=mode, state_size=H, num_layers=L, bidirectional=bi,
                       projection_size=P, use_sequence_length=seq)
    names = op.list_arguments()
    shapes, _, _ = op.infer_shape([(T, N, C)] + [None] * (len(names) - 1))
    return shapes


def _with_lengths(lengths):
    def make(rng, shapes, dtype):
        arrs = [rng.uniform(-1, 1, s) for s in shapes[:-1]]
        return arrs + [np.asarray(lengths, dtype=dtype)]
    return make


def _case(mode, L, bi=False, so=False, P=None, lengths=None, T=3, N=2, C=3, H=3,
          **extra):
    seq = lengths is not None
    shapes = _shapes(mode, T, N, C, H, L, bi, P, seq)
    attrs = dict(mode=mode, state_size=H, num_layers=L, bidirectional=bi, state_outputs=so,
                 **extra)
    if P:
        attrs['projection_size'] = P
    if seq:
        attrs['use_sequence_length'] = True
    n_args = len(shapes) - (1 if seq else 0)
    return OpCase('RNN', attrs, shapes,
                  ref=rnn_ref(mode, H, L, bi, P, so) if 'lstm_state_clip_min' not in extra
                  else None,
                  no_ref='' if 'lstm_state_clip_min' not in extra else
                  'clipped LSTM states (the reference has no clipping): '
                  'test_rnn.py::test_state_clipping',
                  inputs=_with_lengths(lengths) if seq else None,
                  grad=tuple(range(n_args)), rtol=1e-4, atol=1e-5, grad_atol=1e-7)


CASES = [
    _case('rnn_relu', 1), _case('rnn_tanh', 2, bi=True, so=True),
    _case('lstm', 1, so=True), _case('lstm', 2, bi=True, so=True, C=2),
    _case('gru', 2, so=True), _case('gru', 1, bi=True),
    _case('lstm', 2, bi=True, so=True, P=2, H=4),
    _case('lstm', 2, bi=True, so=True, lengths=[3, 1]),
    _case('gru', 2, bi=True, so=True, lengths=[2, 3], T=3),
    _case('rnn_relu', 1, bi=True, so=True, lengths=[1, 3]),
    _case('lstm', 1, so=True, lstm_state_clip_min=-0.2, lstm_state_clip_max=0.25),
    # dropout between layers is inactive outside training: the reference holds
    _case('lstm', 2, so=True, p=0.5),
    OpCase('_rnn_param_concat', dict(num_args=3, dim=0), [(4,), (6,), (2,)],
           ref=lambda *a: np.concatenate(a)),
    OpCase('_rnn_param_concat', dict(num_args=2, dim=1), [(2, 3), (2, 1)],
           ref=lambda *a: np.concatenate(a, axis=1)),
]

test_forward, test_gradient = case_tests(CASES)


# ---------------------------------------------------------------------------------------
# MXNet 1.9.1 golden values
# ---------------------------------------------------------------------------------------
def _golden(case):
    arrays = {k.split('|')[2]: STORE[k] for k in STORE.files
              if k.startswith(case + '|in|')}
    n_out = sum(1 for k in STORE.files if k.startswith(case + '|out|'))
    outs = [STORE['%s|out|%d' % (case, i)] for i in range(n_out)]
    return arrays, outs


@pytest.mark.parametrize('case', sorted(META['cases']))
def test_golden(case):
    """Outputs, output names and every gradient against MXNet 1.9.1 (simple_bind,
    forward in training, backward with random head gradients)."""
    meta = META['cases'][case]
    arrays, outs = _golden(case)
    sym = mx.sym.RNN(name='rnn', **{k: mx.sym.var(k) for k in arrays}, **meta['attrs'])
    assert sym.list_outputs() == meta['outputs']
    train = meta['kind'] == 'full'
    exe = sym.simple_bind(mx.cpu(), grad_req='write' if train else 'null',
                          **{k: v.shape for k, v in arrays.items()})
    for k, v in arrays.items():
        exe.arg_dict[k][:] = v
    got = exe.forward(is_train=train)
    assert len(got) == len(outs)
    for g, e in zip(got, outs):
        np.testing.assert_allclose(g.asnumpy(), e, rtol=1e-4, atol=1e-5)
    if not train:
        return
    heads = [mx.nd.array(STORE['%s|head|%d' % (case, i)]) for i in range(len(outs))]
    exe.backward(heads)
    for k in arrays:
        if k == 'sequence_length':
            continue
        np.testing.assert_allclose(exe.grad_dict[k].asnumpy(), STORE[case + '|grad|' + k],
                                   rtol=1e-4, atol=1e-5, err_msg=k)


@pytest.mark.parametrize('key', sorted(META['symbols']))
def test_names_and_inferred_shapes(key):
    """Argument and output names and shapes (the parameter vector's size) as MXNet's."""
    want = META['symbols'][key]
    mode, rest = key.split('_', 1) if key != 'lstmp' else ('lstm', None)
    if rest is None:
        s = mx.sym.RNN(mx.sym.var('x'), state_size=6, num_layers=3, mode='lstm',
                       projection_size=2, state_outputs=True, name='r')
    else:
        so, seq = (v == 'True' for v in rest.split('_'))
        s = mx.sym.RNN(mx.sym.var('x'), state_size=6, num_layers=2, mode=mode,
                       bidirectional=True, state_outputs=so, use_sequence_length=seq,
                       name='r')
    assert s.list_arguments() == want['arguments']
    assert s.list_outputs() == want['outputs']
    a, o, _ = s.infer_shape(x=(7, 3, 5))
    assert [list(x) for x in a] == want['arg_shapes']
    assert [list(x) for x in o] == want['out_shapes']


# ---------------------------------------------------------------------------------------
# behaviour beyond the golden files
# ---------------------------------------------------------------------------------------
def _bind_lstm(p, layers=3, H=8, T=6, N=50, C=8):
    x = mx.sym.var('x')
    s = mx.sym.RNN(x, mode='lstm', state_size=H, num_layers=layers, p=p, name='r')
    exe = s.simple_bind(mx.cpu(), x=(T, N, C))
    rng = np.random.RandomState(0)
    for k, v in exe.arg_dict.items():
        v[:] = rng.uniform(-1, 1, v.shape)
    return exe


def test_dropout_only_in_training_and_between_layers():
    exe = _bind_lstm(0.5)
    infer = exe.forward(is_train=False)[0].asnumpy()
    np.testing.assert_array_equal(exe.forward(is_train=False)[0].asnumpy(), infer)
    mx.random.seed(3)
    a = exe.forward(is_train=True)[0].asnumpy()
    mx.random.seed(3)
    b = exe.forward(is_train=True)[0].asnumpy()
    np.testing.assert_array_equal(a, b)          # seeded: reproducible
    assert not np.allclose(a, infer)             # and active
    one = _bind_lstm(0.5, layers=1)              # a single layer has no dropout
    np.testing.assert_array_equal(one.forward(is_train=True)[0].asnumpy(),
                                  one.forward(is_train=False)[0].asnumpy())


def test_dropout_gradient_uses_the_same_mask():
    """The backward of a training forward with dropout equals that of a forward whose
    inter-layer outputs are scaled by the mask the forward drew."""
    op = get_op('RNN')(mode='gru', state_size=3, num_layers=2, p=0.4)
    rng = np.random.RandomState(0)
    shapes = op.infer_shape([(4, 2, 3), None, None])[0]
    arrs = [rng.uniform(-1, 1, s) for s in shapes]
    np.random.seed(1)
    outs = op.forward(np, arrs, [], True)
    head = rng.uniform(-1, 1, outs[0].shape)
    grads = op.backward(np, [head, None], arrs, outs, [], [True] * 3)

    def loss(x):
        np.random.seed(1)
        return float((op.forward(np, [x] + arrs[1:], [], True)[0] * head).sum())
    k = (1, 1, 2)
    e = np.zeros_like(arrs[0])
    e[k] = 1e-6
    num = (loss(arrs[0] + e) - loss(arrs[0] - e)) / 2e-6
    assert abs(num - grads[0][k]) < 1e-7


def test_state_clipping():
    """Cell states stay in [min, max]; NaN becomes the minimum with lstm_state_clip_nan."""
    x = mx.nd.array(np.full((5, 2, 3), 3.0))
    H = 4
    op = get_op('RNN')(mode='lstm', state_size=H, num_layers=1)
    size = op.infer_shape([(5, 2, 3), None, None, None])[0][1][0]
    w = mx.nd.array(np.full(size, 0.5))
    h0, c0 = mx.nd.zeros((1, 2, H)), mx.nd.zeros((1, 2, H))
    kw = dict(mode='lstm', state_size=H, num_layers=1, state_outputs=True)
    free = mx.nd.RNN(x, w, h0, c0, **kw)[2].asnumpy()
    assert free.max() > 1
    clipped = mx.nd.RNN(x, w, h0, c0, lstm_state_clip_min=-0.5, lstm_state_clip_max=0.5,
                        **kw)
    np.testing.assert_allclose(clipped[2].asnumpy(), 0.5)
    c_nan = mx.nd.array(np.full((1, 2, H), np.nan))
    out = mx.nd.RNN(x[:1], w, h0, c_nan, lstm_state_clip_min=-0.5, lstm_state_clip_max=0.5,
                    lstm_state_clip_nan=True, **kw)
    np.testing.assert_allclose(out[2].asnumpy(), -0.5)
    out = mx.nd.RNN(x[:1], w, h0, c_nan, lstm_state_clip_min=-0.5, lstm_state_clip_max=0.5,
                    **kw)
    assert np.isnan(out[2].asnumpy()).all()


@pytest.mark.parametrize('attrs, shapes, match', [
    (dict(), dict(x=(4, 3, 5), w=(10,)), r"'parameters' has shape \(10,\), expected \(176,\)"),
    (dict(), dict(x=(4, 3, 5), h=(1, 2, 4)), r"'state' has shape \(1, 2, 4\), "
     r"expected \(1, 3, 4\)"),
    (dict(), dict(x=(4, 3, 5), c=(2, 3, 4)), r"'state_cell' has shape \(2, 3, 4\), "
     r"expected \(1, 3, 4\)"),
    (dict(), dict(x=(4, 3)), r"'data' should be a rank-3"),
    (dict(use_sequence_length=True), dict(x=(4, 3, 5), s=(4,)),
     r"'sequence_length' has shape \(4,\), expected \(3,\)"),
])
def test_bad_shapes_name_node_input_and_shapes(attrs, shapes, match):
    syms = {k: mx.sym.var(k) for k in ('x', 'w', 'h', 'c')}
    args = [syms['x'], syms['w'], syms['h'], syms['c']]
    if attrs.get('use_sequence_length'):
        args.append(mx.sym.var('s'))
    s = mx.sym.RNN(*args, mode='lstm', state_size=4, num_layers=1, name='myrnn', **attrs)
    with pytest.raises(ShapeError, match=match) as e:
        s.infer_shape(**shapes)
    assert 'myrnn' in str(e.value)


def test_sequence_length_needs_use_sequence_length():
    """As in MXNet (which rejects the keyword, listing the candidate inputs)."""
    x = mx.sym.var('x')
    with pytest.raises(MXNetError, match="5 positional inputs.*'state_cell'"):
        mx.sym.RNN(x, mx.sym.var('w'), mx.sym.var('h'), mx.sym.var('c'), mx.sym.var('len'),
                   mode='lstm', state_size=4, num_layers=1, name='myrnn')
    with pytest.raises(MXNetError, match='sequence_length'):
        mx.sym.RNN(data=x, sequence_length=mx.sym.var('len'), mode='gru', state_size=4,
                   num_layers=1, name='myrnn')


@pytest.mark.parametrize('attrs, match', [
    (dict(mode='gru', projection_size=2), 'projection'),
    (dict(mode='lstm', projection_size=5), 'projection_size'),
    (dict(mode='lstm', lstm_state_clip_min=0.1), 'together'),
    (dict(mode='lstm', lstm_state_clip_min=1, lstm_state_clip_max=0), 'greater'),
    (dict(mode='lstm', p=1.0), 'dropout'),
    (dict(mode='lstm', p=-0.1), "'p'"),
    (dict(mode='lstmp'), 'mode'),
])
def test_bad_parameters(attrs, match):
    with pytest.raises(MXNetError, match=match):
        mx.sym.RNN(mx.sym.var('x'), state_size=4, num_layers=1, **attrs)


def test_param_concat_infers_unknown_input():
    """Gluon's exports concatenate weights of unknown size; the RNN's parameter size
    fills the remaining one."""
    a, b = mx.sym.var('a'), mx.sym.var('b')
    cat = mx.sym._internal._rnn_param_concat(a, b, dim=0, num_args=2, name='cat')
    op = get_op('_rnn_param_concat')(num_args=2, dim=0)
    shapes, out, _ = op.infer_shape([(4,), None], [(10,)])
    assert shapes == [(4,), (6,)] and out == [(10,)]
    assert cat.list_arguments() == ['a', 'b']
    with pytest.raises(ShapeError, match='arg1'):
        op.infer_shape([(4,), (3, 2)])
