"""One table-driven harness for operators.

Each family's test module declares a list of :class:`OpCase` and calls
``parametrize_cases(CASES)``; from each case come

* forward against the NumPy reference, for every dtype of the case;
* inferred output shapes and dtypes against the actual arrays;
* a float64 central-difference gradient check of every differentiable input;
* the same forward and backward through ``mx.sym`` + ``simple_bind`` and a JSON round trip.

``tests/ops/test_coverage.py`` fails when a registered operator has no case.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional, Sequence

import numpy as np
import pytest

from symgraph.opdef import TypeInferenceError, get_op
from symgraph.graph.rules import instead

ALL_CASES = []


@dataclasses.dataclass
class OpCase:
    """A test case of one operator.

    op : registered name (or alias) of the operator.
    attrs : parameters, as Python values or MXNet strings.
    shapes : shapes of the arguments followed by the auxiliary states.
    ref : ``ref(*inputs) -> array or list of arrays`` (every visible output) in NumPy; None
        to skip the reference comparison, which ``no_ref`` must then explain.
    no_ref : why a case without ``ref`` has none (random draws checked as distributions in
        test X; values checked against MXNet in test Y; ...): a case without a reference
        says so instead of passing silently.
    inputs : optional ``inputs(rng, shapes, dtype) -> list of arrays`` when the default
        uniform(-1, 1) inputs do not suit (positive inputs for ``log``, integer indices).
    dtypes : dtypes the forward runs in.
    grad : indices of arguments whose gradient is checked numerically (``'all'`` for every
        float argument, ``()`` for none).
    grad_ref : optional ``grad_ref(inputs, outputs, out_grads) -> list`` giving the expected
        input gradients where the gradient is not d(sum(w*out))/dx (loss operators).
    is_train : run forward in training mode.
    rtol, atol : forward tolerances (float32); gradients use ``grad_rtol``/``grad_atol``.
    eps : numeric gradient step.
    input_dtypes : fixed dtypes of the inputs, one per input (mixed-precision operators:
        float16 weights with float32 states); every dtype of ``dtypes`` then gives these.
    seed : random operators: the gradient check seeds NumPy's generator (what
        ``random_state(np)`` draws from) with it before every forward, so that each forward
        draws the same values and the numeric gradient is the one given those draws.
    id : readable test id.
    """
    op: str
    attrs: dict = dataclasses.field(default_factory=dict)
    shapes: Sequence[tuple] = ((3, 4),)
    ref: Optional[Callable] = None
    inputs: Optional[Callable] = None
    dtypes: Sequence[str] = ('float32', 'float64')
    grad: Any = 'all'
    grad_ref: Optional[Callable] = None
    is_train: bool = False
    rtol: float = 1e-5
    atol: float = 1e-6
    grad_rtol: float = 1e-4
    grad_atol: float = 1e-6
    eps: float = 1e-6
    input_dtypes: Optional[Sequence[str]] = None
    seed: Optional[int] = None
    no_ref: str = ''
    id: str = ''

    def __post_init__(self):
        if self.ref is None and not self.no_ref.strip():
            raise ValueError('OpCase %s %s: no reference value (ref=None); give it, or say '
                             'why there is none in no_ref=' % (self.op, self.attrs))
        if self.ref is not None and self.no_ref:
            raise ValueError('OpCase %s %s: ref and no_ref both given' % (self.op, self.attrs))
        if not self.id:
            a = ','.join('%s=%s' % kv for kv in sorted(self.attrs.items()))
            self.id = '%s[%s]%s' % (self.op, a, 'x'.join(str(s) for s in self.shapes))
        ALL_CASES.append(self)

    def make_op(self):
        return get_op(self.op)(**self.attrs)

    def make_inputs(self, dtype, seed=0):
        rng = np.random.RandomState(seed)
        if self.inputs is not None:
            arrs = self.inputs(rng, self.shapes, dtype)
        else:
            arrs = [rng.uniform(-1, 1, s) for s in self.shapes]
        dts = self.input_dtypes or [dtype] * len(arrs)
        return [np.asarray(a).astype(t) if np.asarray(a).dtype.kind == 'f'
                else np.asarray(a) for a, t in zip(arrs, dts)]


def parametrize_cases(cases):
    return pytest.mark.parametrize('case', cases, ids=[c.id for c in cases])


def case_tests(cases):
    """``test_forward`` and ``test_gradient`` over ``cases``, the two tests every operator
    family runs; a test module binds them: ``test_forward, test_gradient = case_tests(CASES)``.
    """
    @parametrize_cases(cases)
    def test_forward(case):
        check_forward(case)

    @parametrize_cases(cases)
    def test_gradient(case):
        check_gradient(case)
    return test_forward, test_gradient


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def op_forward(op, inputs, is_train=False):
    n = len(op.list_arguments())
    aux = [a.copy() for a in inputs[n:]]
    outs = op.forward(np, [a for a in inputs[:n]], aux, is_train)
    return outs, aux


def check_forward(case):
    """Forward against the reference and inferred shapes/dtypes against actual arrays."""
    op = case.make_op()
    for dtype in case.dtypes:
        inputs = case.make_inputs(dtype)
        in_shapes, out_shapes, aux_shapes = op.infer_shape([a.shape for a in inputs])
        outs, _ = op_forward(op, inputs, case.is_train)
        assert len(outs) == len(op.list_outputs()), 'wrong number of outputs'
        for o, s in zip(outs, out_shapes):
            assert tuple(o.shape) == tuple(s), 'inferred %s, got %s' % (s, o.shape)
        in_types = [a.dtype for a in inputs]
        _, out_types, _ = op.infer_type(in_types)
        for o, t in zip(outs, out_types):
            assert o.dtype == np.dtype(t), 'inferred %s, got %s' % (t, o.dtype)
        if case.ref is not None:
            expected = _as_list(case.ref(*inputs))
            tol = dict(rtol=case.rtol, atol=case.atol)
            if dtype == 'float16':
                tol = dict(rtol=1e-2, atol=1e-3)
            # a reference that gives fewer values than the operator's visible outputs would
            # leave the rest unchecked by zip's truncation
            assert len(expected) >= op.num_visible_outputs(), \
                'the reference gives %d output(s), the operator %d' \
                % (len(expected), op.num_visible_outputs())
            for o, e in zip(outs[:op.num_visible_outputs()], expected):
                np.testing.assert_allclose(o, np.asarray(e), **tol)


def _differentiable(case, op, inputs):
    n = len(op.list_arguments())
    if case.grad == 'all':
        return [i for i in range(n) if inputs[i].dtype.kind == 'f']
    return list(case.grad)


def _specialized(op, inputs):
    """The operator as a bound executor runs it (``rules.instead`` for ``'shapes'``
    after inference)."""
    in_shapes, out_shapes, aux_shapes = op.infer_shape([a.shape for a in inputs])
    n = len(op.list_arguments())
    return instead(op, 'shapes',
                   list(in_shapes) + list(aux_shapes or [a.shape for a in inputs[n:]]),
                   out_shapes)


def _mask(flag, arrays):
    if flag is True:
        return list(arrays)
    if not flag:
        return [None] * len(arrays)
    return [a if i in flag else None for i, a in enumerate(arrays)]


def check_fast_forward(case):
    """The bare functions the executor calls (``fast_forward``, without and with ``in_dtypes``
    given the inputs' dtypes) give ``forward``'s result, dtype included; False where the
    operator offers none."""
    op = case.make_op()
    if op.fast_forward(np, False) is None:
        return False
    for dtype in case.dtypes:
        inputs = case.make_inputs(dtype)
        expected = op.forward(np, list(inputs), [], False)[0]
        for fast in (op.fast_forward(np, False),
                     op.fast_forward(np, False, [a.dtype for a in inputs])):
            got = fast(*inputs)
            assert got.dtype == expected.dtype
            np.testing.assert_array_equal(got, expected)
    return True


def check_gradient(case):
    """float64 central differences of sum(w * outputs) against the operator's backward
    (random operators: every forward from ``case.seed``)."""
    op = case.make_op()
    inputs = case.make_inputs('float64')
    idx = _differentiable(case, op, inputs)
    if not idx:
        return
    op = _specialized(op, inputs)
    n = len(op.list_arguments())
    nvis = op.num_visible_outputs()

    def forward(arrs):
        if case.seed is not None:
            np.random.seed(case.seed)
        return op_forward(op, arrs, case.is_train)

    outs, aux = forward(inputs)
    rng = np.random.RandomState(1)
    w = [rng.uniform(-1, 1, o.shape) for o in outs[:nvis]]
    if op.is_loss:
        out_grads = [None] * len(outs)
    else:
        out_grads = w + [None] * (len(outs) - nvis)
    need = [i in idx for i in range(n)]
    # backward sees only the forward arrays the operator declares (as in the executor)
    bw_in = _mask(op.needs_inputs, inputs[:n])
    bw_out = _mask(op.needs_outputs, outs)
    bw_out[nvis:] = outs[nvis:]
    grads = op.backward(np, out_grads, bw_in, bw_out, aux, need)
    assert len(grads) == n, 'backward must return one entry per argument'
    if case.grad_ref is not None:
        expected = case.grad_ref(inputs, outs, out_grads)
        for i in idx:
            np.testing.assert_allclose(grads[i], expected[i], rtol=case.grad_rtol,
                                       atol=case.grad_atol, err_msg='input %d' % i)
        return

    def loss(arrs):
        o, _ = forward(arrs)
        return sum(float((a * b).sum()) for a, b in zip(o[:nvis], w))

    for i in idx:
        x = inputs[i]
        num = np.zeros_like(x)
        flat = x.reshape(-1)
        nflat = num.reshape(-1)
        for k in range(flat.size):
            old = flat[k]
            flat[k] = old + case.eps
            lp = loss(inputs)
            flat[k] = old - case.eps
            lm = loss(inputs)
            flat[k] = old
            nflat[k] = (lp - lm) / (2 * case.eps)
        assert grads[i] is not None, 'no gradient for input %d' % i
        np.testing.assert_allclose(grads[i], num, rtol=case.grad_rtol, atol=case.grad_atol,
                                   err_msg='gradient of input %d (%s)'
                                   % (i, op.list_arguments()[i]))


def check_symbolic(case):
    """The case through ``mx.sym`` + ``bind`` + JSON round trip must match the direct call."""
    import json
    import symgraph as mx
    op = case.make_op()
    names = op.list_arguments() + op.list_auxiliary_states()
    n = len(op.list_arguments())
    nvis = op.num_visible_outputs()
    variables = {k: mx.sym.var('in_' + k) for k in names}
    sym = getattr(mx.sym, case.op)(name='node', **variables, **case.attrs)
    assert sym.list_outputs()[:1] == ['node_' + op.list_outputs()[0]]
    text = sym.tojson()
    again = mx.sym.load_json(text)
    assert json.loads(again.tojson()) == json.loads(text), 'JSON round trip changed the graph'
    inputs = case.make_inputs('float64')
    np.random.seed(7)
    direct, _ = op_forward(op, inputs, case.is_train)
    args = {'in_' + k: mx.nd.array(a, dtype=a.dtype) for k, a in zip(names[:n], inputs)}
    aux = {'in_' + k: mx.nd.array(a, dtype=a.dtype) for k, a in zip(names[n:], inputs[n:])}
    idx = _differentiable(case, op, inputs)
    reqs = {'in_' + k: ('write' if i in idx else 'null') for i, k in enumerate(names[:n])}
    grads = {k: mx.nd.zeros(v.shape, dtype=v.dtype) for k, v in args.items()}
    exe = again.bind(mx.cpu(), args, args_grad=grads, grad_req=reqs, aux_states=aux)
    np.random.seed(7)
    outs = exe.forward(is_train=case.is_train)
    for o, d in zip(outs, direct[:nvis]):
        np.testing.assert_allclose(o.asnumpy(), d, rtol=1e-6, atol=1e-12)
    if not idx or op.no_grad:
        return
    for k, a in zip(names[n:], inputs[n:]):      # training forward from the same aux state
        exe.aux_dict['in_' + k][:] = a
    np.random.seed(7)
    outs = exe.forward(is_train=True)
    rng = np.random.RandomState(3)
    heads = [mx.nd.array(rng.uniform(-1, 1, o.shape), dtype=o.dtype) for o in outs]
    exe.backward(None if op.is_loss else heads)
    og = [None] * len(direct) if op.is_loss else \
        [h.asnumpy() for h in heads] + [None] * (len(direct) - nvis)
    # direct backward on the same (training) forward
    np.random.seed(7)
    direct, aux_after = op_forward(op, inputs, True)
    op = _specialized(op, inputs)
    expected = op.backward(np, og, inputs[:n], direct, aux_after, [i in idx for i in range(n)])
    for i in idx:
        np.testing.assert_allclose(exe.grad_dict['in_' + names[i]].asnumpy(), expected[i],
                                   rtol=1e-6, atol=1e-12, err_msg='gradient of ' + names[i])


def check_symbolic_numeric_gradient(case):
    """``mx.test_utils.check_numeric_gradient`` on the case's symbol (float64, training
    forward): the executor's gradients against central differences through the executor.

    Skipped where the gradient is not d(projection . output)/dx: loss operators, cases
    with a ``grad_ref``, inference-mode cases of operators with auxiliary state, and
    operators whose training forward is random (Dropout, rrelu).
    """
    import symgraph as mx
    op = case.make_op()
    names = op.list_arguments() + op.list_auxiliary_states()
    n = len(op.list_arguments())
    inputs = case.make_inputs('float64')
    idx = _differentiable(case, op, inputs)
    if (not idx or op.no_grad or op.is_loss or case.grad_ref is not None
            or (op.list_auxiliary_states() and not case.is_train)):
        return 'not applicable'
    try:        # check_numeric_gradient binds every input as float64, as MXNet's does
        op.infer_type([np.dtype(np.float64)] * len(names))
    except TypeInferenceError:
        return 'not applicable'     # an integer input (softmax's length)
    first, _ = op_forward(op, inputs, True)
    again, _ = op_forward(op, inputs, True)
    if case.seed is not None or any(not np.array_equal(a, b) for a, b in zip(first, again)):
        return 'random forward'         # (a seeded case: two draws may happen to agree)
    sym = getattr(mx.sym, case.op)(name='node', **{k: mx.sym.var(k) for k in names},
                                   **case.attrs)
    location = dict(zip(names[:n], inputs[:n]))
    aux = dict(zip(names[n:], inputs[n:])) if n < len(names) else None
    mx.test_utils.check_numeric_gradient(
        sym, location, aux_states=aux, numeric_eps=case.eps, rtol=case.grad_rtol,
        atol=max(case.grad_atol, 1e-6), grad_nodes=[names[i] for i in idx],
        use_forward_train=True, dtype=np.float64)
    return 'checked'


def resnet_block():
    """A small residual network (conv, BatchNorm, relu, a residual add, FullyConnected,
    SoftmaxOutput) on data (N, 4, H, W), shared by the graph and executor tests."""
    import symgraph as mx
    x = mx.sym.var('data')
    h = mx.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=4, name='c1')
    h = mx.sym.Activation(mx.sym.BatchNorm(h, name='bn1'), act_type='relu', name='r1')
    h = mx.sym.Convolution(h, kernel=(3, 3), pad=(1, 1), num_filter=4, name='c2')
    h = mx.sym.Activation(mx.sym.BatchNorm(h, name='bn2') + x, act_type='relu', name='r2')
    h = mx.sym.FullyConnected(mx.sym.Flatten(h), num_hidden=3, name='fc')
    return mx.sym.SoftmaxOutput(h, name='softmax')
