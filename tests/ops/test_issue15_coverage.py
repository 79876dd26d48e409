"""Issue 15's checks, operator by operator: every operator the issue lists is registered under
MXNet's name (aliases reach MXNet's operator), has OpCase rows, golden values from MXNet 1.9.1
(forward; gradients where MXNet has them), a float64 numeric gradient where it is
differentiable, and a JSON round trip through MXNet: the JSON symgraph writes loads in MXNet
1.9.1 and gives MXNet's values, and the JSON MXNet writes back loads here as the same graph
with the same values (``tests/golden/make_ops15.py``, ``tests/golden/data/ops15/``).

Every exception is listed below with its reason; an exception that no longer applies fails.
"""
import json
import os

import numpy as np
import pytest

import symgraph as mx
import make_ops15 as M
from harness import _differentiable
from symgraph.opdef import get_op
from test_golden import assert_close, graph_of
from test_registry import CASES, TESTED_ELSEWHERE

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, 'golden', 'data')
with open(os.path.join(GOLDEN, 'mxnet_ops.json')) as _f:
    MXNET_OPS = json.load(_f)['ops']
with open(os.path.join(M.DIR, 'ours.json')) as _f:
    OURS = json.load(_f)
with open(os.path.join(M.DIR, 'mxnet.json')) as _f:
    MXNET = json.load(_f)
INPUTS = np.load(os.path.join(M.DIR, 'inputs.npz'))
MX_ARRAYS = np.load(os.path.join(M.DIR, 'mxnet.npz'))

ISSUE_OPS = M.issue_ops()
CANONICAL = sorted({get_op(n).name for n in ISSUE_OPS})

#: differentiable operators without a plain float64 numeric-gradient OpCase row, and why
NO_NUMERIC_GRADIENT = {
    '_foreach': 'subgraph operator: float64 central differences in tests/ops/'
                'test_control_flow.py (and MXNet\'s own in data/control_flow.npz)',
    '_while_loop': 'subgraph operator: numeric gradients in tests/ops/test_control_flow.py',
    '_cond': 'subgraph operator: numeric gradients in tests/ops/test_control_flow.py',
    '_contrib_box_encode': "MXNet 1.9.1's gradient is zero (MakeZeroGradNodes); rows check "
                           'zeros',
    '_contrib_box_decode': "MXNet 1.9.1's gradient is zero (MakeZeroGradNodes); rows check "
                           'zeros',
    '_contrib_BatchNormWithReLU': "rows compare with the numeric gradient of the first "
                                  "output (test_norm.py's numeric_grad_of_first_output) and "
                                  "the executor's BatchNorm gradient",
    '_linalg_syevd': 'eigenvector signs are arbitrary: _syevd_grad_ref takes float64 central '
                     'differences with the signs fixed',
    '_contrib_gradientmultiplier': 'straight-through by design: the gradient is scalar * '
                                   'head, not the derivative (MXNet 1.9.1 golden gradients)',
    '_contrib_round_ste': 'straight-through estimator: the gradient is the head, not the '
                          "derivative of round (MXNet 1.9.1's)",
    '_contrib_sign_ste': 'straight-through estimator (as round_ste)',
    '_contrib_index_array': 'integer output (MXNet: MakeZeroGradNodes)',
    '_ravel_multi_index': 'integer output (MXNet: MakeZeroGradNodes)',
    '_unravel_index': 'integer output (MXNet: MakeZeroGradNodes)',
    '_contrib_boolean_mask': 'output length depends on the values: tests/ops/test_indexing.py',
    '_scatter_set_nd': 'no gradient in MXNet 1.9.1 (no FGradient); symgraph raises',
    '_sample_multinomial': "random sampling: get_prob's gradient equals MXNet's "
                           '(make_amp_multi.py multinomial_get_prob)',
}

#: cases MXNet 1.9.1 cannot run from our JSON on its CPU (it loads each one), and why; the
#: recorded error must contain the pattern
MXNET_CANNOT_RUN = {
    '_contrib_count_sketch': ('CountSketch is only available for GPU', 'GPU only in MXNet'),
    '_contrib_fft': ('fft is only available for GPU', 'GPU only in MXNet'),
    '_contrib_ifft': ('ifft is only available for GPU', 'GPU only in MXNet'),
    '_zeros_without_dtype#0': ('Unknown type enum -1', 'dtype -1 (not given): MXNet can run '
                               'it neither in a graph ("cannot decide dtypes") nor '
                               'imperatively; #1 (dtype given) runs'),
    '_contrib_group_adagrad_update': ('crash', 'no dense FCompute: the graph executor '
                                      'segfaults; imperative golden in make_amp_multi.py'),
    '_square_sum#1': ('ndim() == 2', 'MXNet runs it on 2-D row_sparse data only'),
    '_square_sum#2': ('context.dev_mask', 'MXNet: row_sparse only, and keepdims/axis=0 is '
                      'not implemented for it'),
    'im2col#2': ('must be in range [0, 3)', "MXNet 1.9.1's im2col fails for 1-D kernels "
                 '(documented as supported); symgraph computes them'),
    'im2col#3': ('get_with_shape', "MXNet 1.9.1's im2col fails for 3-D kernels"),
    'col2im#1': ('get_with_shape', "MXNet 1.9.1's col2im fails for 3-D kernels"),
    'col2im#2': ('must be in range [0, 3)', "MXNet 1.9.1's col2im fails for 1-D kernels"),
    '_contrib_BatchNormWithReLU#1': ('only supports MKL-DNN', 'oneDNN runs 4-D float32 '
                                     'only'),
    '_contrib_BatchNormWithReLU#2': ('only supports MKL-DNN', 'oneDNN runs 4-D float32 '
                                     'only'),
    # MXNet's multi-tensor updates infer neither output shapes nor (mp_/preloaded_) types in
    # a graph: only the imperative calls run; their golden data is make_amp_multi.py's
    **{op: ('cannot decide dtypes' if ('mp_' in op or 'preloaded' in op) else
            'Shape is unknown', "MXNet's graph executor cannot run it (imperative golden "
            'data in make_amp_multi.py)') for op in (
        'multi_sgd_update', 'multi_sgd_mom_update', 'multi_mp_sgd_update',
        'multi_mp_sgd_mom_update', 'preloaded_multi_sgd_update',
        'preloaded_multi_sgd_mom_update', 'preloaded_multi_mp_sgd_update',
        'preloaded_multi_mp_sgd_mom_update', '_multi_adamw_update', '_multi_mp_adamw_update',
        '_multi_lamb_update', '_multi_mp_lamb_update')},
}

#: differentiable operators whose gradient MXNet 1.9.1 does not give (on its CPU), and why
NO_MXNET_GRADIENT = {
    '_contrib_ModulatedDeformableConvolution': 'backward "only implemented in GPU"; '
                                               'numeric gradients here',
    '_contrib_RROIAlign': 'non-differentiable in MXNet (no FGradient); symgraph adds one, '
                          'checked numerically',
    '_contrib_count_sketch': 'GPU only in MXNet; numeric gradients here',
    '_contrib_fft': 'GPU only in MXNet; numeric gradients here',
    '_contrib_ifft': 'GPU only in MXNet; numeric gradients here',
    '_square_sum': 'row_sparse only in MXNet; numeric gradients here',
    '_scatter_set_nd': 'no gradient in MXNet 1.9.1',
    '_image_resize': "MXNet 1.9.1's gradient is _copy of the head, which fails unless the "
                     'size is unchanged ("from.Size() == to.Size()"); symgraph\'s is the '
                     'adjoint of the interpolation, checked numerically',
    '_contrib_boolean_mask': 'dynamic output shape: MXNet\'s graph executor cannot bind it; '
                             'tests/ops/test_indexing.py',
    '_contrib_index_array': 'integer output',
    '_ravel_multi_index': 'integer output',
    '_unravel_index': 'integer output',
}


def _rows(op):
    return [c for c in CASES if get_op(c.op).name == op]


# ---------------------------------------------------------------------------
# registry, rows, numeric gradients


@pytest.mark.parametrize('name', ISSUE_OPS)
def test_registered_under_mxnets_name(name):
    assert name in MXNET_OPS, '%s is not an MXNet 1.9.1 operator name' % name
    assert get_op(name).name == MXNET_OPS[name], (name, get_op(name).name, MXNET_OPS[name])


@pytest.mark.parametrize('fn', sorted(M.FUNCTIONS))
def test_python_functions_build_the_operator(fn):
    obj = mx.sym
    for part in fn.split('.'):
        obj = getattr(obj, part)
    x = mx.sym.var('x')
    if fn == 'split_v2':
        sym = obj(x, 2)
    elif fn == 'contrib.foreach':
        sym = obj(lambda d, s: (d + s[0], [s[0]]), x, [mx.sym.var('s')])[0]
    elif fn == 'contrib.while_loop':
        sym = obj(lambda i: i < 3, lambda i: (i, [i + 1]), [x], max_iterations=3)[0]
    else:
        sym = obj(x.sum() > 0, lambda: x + 1, lambda: x - 1)
    ops = {n['op'] for n in json.loads(sym.tojson())['nodes']}
    assert M.FUNCTIONS[fn] in ops, (fn, ops)


@pytest.mark.parametrize('op', CANONICAL)
def test_has_opcase_rows(op):
    assert _rows(op) or op in TESTED_ELSEWHERE, '%s: no OpCase row' % op


def _numeric_rows(op):
    out = []
    for c in _rows(op):
        o = c.make_op()
        if not o.no_grad and c.grad_ref is None and \
                _differentiable(c, o, c.make_inputs('float64')):
            out.append(c)
    return out


@pytest.mark.parametrize('op', CANONICAL)
def test_numeric_gradient_or_reason(op):
    cls = get_op(op)
    if cls.no_grad:     # sampling, update, comparison and counting operators
        assert op not in NO_NUMERIC_GRADIENT, '%s has no gradient at all: drop its reason' % op
        return
    rows = _numeric_rows(op)
    if op in NO_NUMERIC_GRADIENT:
        assert not rows, '%s has numeric-gradient rows now: drop its reason' % op
    else:
        assert rows, '%s is differentiable but no OpCase row checks its gradient ' \
            'numerically in float64' % op


def test_reasons_name_issue_operators():
    for table in (NO_NUMERIC_GRADIENT, NO_MXNET_GRADIENT):
        assert set(table) <= set(CANONICAL), set(table) - set(CANONICAL)
    for key in MXNET_CANNOT_RUN:
        assert key.split('#')[0] in CANONICAL, key


# ---------------------------------------------------------------------------
# golden data: an index over every file MXNet 1.9.1 wrote


def _compute_index():
    with open(os.path.join(GOLDEN, 'compute.json')) as f:
        compute = json.load(f)
    index = {}

    def walk(g, case):
        for n in g['nodes']:
            index.setdefault(n['op'], set()).add(case)
            for s in n.get('subgraphs', []):
                walk(s, case)
    for case, meta in compute.items():
        walk(json.loads(meta['json']), case)
    return index


def golden_index():
    """{operator: {'forward': [sources], 'gradient': [sources]}}."""
    import make_amp_multi
    want = set(CANONICAL)
    index = {op: {'forward': [], 'gradient': []} for op in want}
    for op, cases in _compute_index().items():
        if op not in want:
            continue
        for case in sorted(cases):
            with np.load(os.path.join(GOLDEN, 'compute', case + '.npz')) as z:
                keys = z.files
            if any(':out:' in k for k in keys):
                index[op]['forward'].append('compute/' + case)
            if any(':grad:' in k for k in keys):
                index[op]['gradient'].append('compute/' + case)
    for case, (op, _, _, grad, _) in make_amp_multi.CASES.items():
        op = get_op(op).name
        if op in want:
            index[op]['forward'].append('amp_multi/' + case)
            if grad:
                index[op]['gradient'].append('amp_multi/' + case)
    with open(os.path.join(GOLDEN, 'control_flow.json')) as f:
        for case, meta in json.load(f).items():
            for n in json.loads(meta['json'])['nodes']:
                if n['op'] in want:
                    index[n['op']]['forward'].append('control_flow/' + case)
                    index[n['op']]['gradient'].append('control_flow/' + case)
    for cid, rec in OURS.items():
        if '%s/out:0' % cid in MX_ARRAYS.files:
            index[rec['op']]['forward'].append('ops15/' + cid)
        if any(k.startswith(cid + '/grad:') for k in MX_ARRAYS.files):
            index[rec['op']]['gradient'].append('ops15/' + cid)
    return index


INDEX = golden_index()
#: operators without MXNet 1.9.1 forward values, and why
NO_GOLDEN_FORWARD = {
    '_contrib_count_sketch': 'GPU only in MXNet 1.9.1 (its CPU build: "only available for '
                             'GPU"); loop references in test_gather_scatter.py',
    '_contrib_fft': 'GPU only in MXNet 1.9.1; DFT references in test_fft.py',
    '_contrib_ifft': 'GPU only in MXNet 1.9.1; DFT references in test_fft.py',
    '_contrib_boolean_mask': "dynamic output shape: MXNet's graph executor cannot bind it; "
                             'values in tests/ops/test_indexing.py',
}

#: operators whose arguments and auxiliary states MXNet lists differently for the same JSON
#: node: MXNet makes every input it declares mutable (FMutateInputs) an auxiliary state,
#: interleaved with the arguments (weight_0, grad_0, mom_0, weight_1...); symgraph's core
#: takes a node's inputs as list_arguments() followed by list_auxiliary_states() (opdef,
#: graph/infer.py, graph/json_format.py, graph/plan.py, symbol.py), so an auxiliary state
#: cannot come before an argument and these keep the mutated inputs as arguments
#: (mp_lamb_update_phase1: weight32 as a state, phase2: as an argument). The JSON is the
#: same (checked); binding and saved parameters by name differ (README, differences from
#: MXNet 1.9.1). Kept: interleaving would restructure the core.
ARGS_AUX_DIFFER = {
    '_multi_adamw_update', '_multi_lamb_update', '_multi_mp_adamw_update',
    '_multi_mp_lamb_update', 'mp_lamb_update_phase1', 'mp_lamb_update_phase2',
    'multi_sgd_mom_update', 'multi_mp_sgd_update', 'multi_mp_sgd_mom_update',
    'preloaded_multi_sgd_mom_update', 'preloaded_multi_mp_sgd_update',
    'preloaded_multi_mp_sgd_mom_update',
}

#: operators whose MXNet 1.9.1 gradient is ``_copy`` of the head (ElemwiseGradUseNone{"_copy"}:
#: the head gradient unchanged, to_tensor's laid out in the input's shape), which is not the
#: derivative of a flip, a transpose or a scaling; symgraph gives the derivative (float64
#: numeric-gradient rows in tests/ops/test_image.py; README, differences from MXNet). The
#: test checks that MXNet's recorded gradient is the head and compares ours with it only
#: where the derivative is the head (lighting, the unchanged image).
MXNET_COPY_GRADIENT = {
    '_image_adjust_lighting', '_image_flip_left_right', '_image_flip_top_bottom',
    '_image_random_brightness', '_image_random_color_jitter', '_image_random_contrast',
    '_image_random_flip_left_right', '_image_random_flip_top_bottom',
    '_image_random_hue', '_image_random_lighting', '_image_random_saturation',
    '_image_to_tensor',
}
#: the cases of those where the derivative is the head (our gradient equals MXNet's)
COPY_IS_THE_DERIVATIVE = {
    '_image_adjust_lighting#0', '_image_random_color_jitter#0', '_image_random_lighting#0',
}

#: outputs MXNet 1.9.1 leaves (partly) unwritten, so its values are not a reference
MXNET_UNWRITTEN = {
    '_image_random_color_jitter#0': 'every factor 0: MXNet never writes the output '
                                    '(symgraph: the image unchanged)',
}

#: value differences from MXNet 1.9.1 found by this audit and not yet resolved (strict
#: xfail: the test fails once they agree, so the entry must go)
OPEN_DIFFERENCES = {}


@pytest.mark.parametrize('op', CANONICAL)
def test_golden_forward(op):
    if op in NO_GOLDEN_FORWARD:
        assert not INDEX[op]['forward'], '%s has golden values now: drop its reason' % op
        return
    assert INDEX[op]['forward'], '%s: no forward values from MXNet 1.9.1' % op


@pytest.mark.parametrize('op', CANONICAL)
def test_golden_gradient(op):
    if get_op(op).no_grad or op in NO_MXNET_GRADIENT:
        return
    assert INDEX[op]['gradient'], '%s: no gradients from MXNet 1.9.1' % op


# ---------------------------------------------------------------------------
# the JSON round trip through MXNet 1.9.1


def test_every_operator_goes_through_mxnet():
    tripped = {rec['op'] for rec in OURS.values()}
    missing = [op for op in CANONICAL if op not in tripped and op not in M.ELSEWHERE]
    assert not missing, 'operators without a JSON round trip through MXNet: %s' % missing
    assert MXNET['mxnet_version'] == '1.9.1'
    assert sorted(OURS) == sorted(k for k in MXNET if k != 'mxnet_version')


def test_we_still_write_the_json_mxnet_loaded():
    built = {cid: (op, sym, ins) for cid, op, sym, ins, _, _, _ in M.build_cases(mx)}
    assert sorted(built) == sorted(OURS)
    for cid, (op, sym, ins) in built.items():
        assert sym.tojson() == OURS[cid]['json'], cid
        for k, v in ins.items():
            np.testing.assert_array_equal(v, INPUTS['%s/in:%s' % (cid, k)], err_msg=cid)


def _cannot_run(cid):
    rec = OURS[cid]
    return MXNET_CANNOT_RUN.get(cid) or MXNET_CANNOT_RUN.get(rec['op'])


def _run(sym, cid, with_grads):
    rec = OURS[cid]
    ins = {k: INPUTS['%s/in:%s' % (cid, k)] for k in rec['inputs']}
    args = {k: mx.nd.array(ins[k], dtype=ins[k].dtype) for k in sym.list_arguments()}
    aux = {k: mx.nd.array(ins[k], dtype=ins[k].dtype) for k in sym.list_auxiliary_states()}
    grads = {k: mx.nd.zeros(args[k].shape, dtype=args[k].dtype)
             for k in (rec['grads'] if with_grads else [])}
    req = {k: ('write' if k in grads else 'null') for k in args}
    mx.random.seed(0)
    ex = sym.bind(mx.cpu(), args, args_grad=grads or None, grad_req=req, aux_states=aux)
    outs = [o.asnumpy() for o in ex.forward(is_train=rec['train'] or with_grads)]
    if grads:
        ex.backward([mx.nd.array(INPUTS['%s/head:%d' % (cid, i)])
                     for i in range(rec['heads'])])
    return ins, outs, {k: g.asnumpy() for k, g in grads.items()}


def _ks(a, b):
    """Two-sample Kolmogorov-Smirnov statistic."""
    a, b = np.sort(a.ravel()), np.sort(b.ravel())
    grid = np.concatenate([a, b])
    return float(np.max(np.abs(np.searchsorted(a, grid, 'right') / a.size
                               - np.searchsorted(b, grid, 'right') / b.size)))


def _tol(out):
    if out.dtype == np.float16:
        return 2e-3, 2e-3
    if out.dtype == np.float64:
        return 1e-10, 1e-12
    return 2e-5, 2e-5


def _compare(cid, outs, want, what):
    rec = OURS[cid]
    ins = {k: INPUTS['%s/in:%s' % (cid, k)] for k in rec['inputs']}
    for i, (o, w) in enumerate(zip(outs, want)):
        where = '%s: %s output %d' % (cid, what, i)
        assert o.shape == w.shape and o.dtype == w.dtype, (where, o.shape, o.dtype, w.shape,
                                                          w.dtype)
        if rec['kind'] == 'distribution':
            rows = [(o, w)] if o.ndim < 2 or rec['op'] == '_sample_unique_zipfian' else \
                list(zip(o, w))
            for a, b in rows:
                n = a.size
                limit = 1.95 * np.sqrt(2.0 / n)         # two-sample KS, alpha = 0.001
                assert _ks(a, b) < limit, '%s: KS %.3g >= %.3g' % (where, _ks(a, b), limit)
        elif rec['kind'] == 'either_flip':
            x = ins['data']
            axis = 1 if 'left_right' in rec['op'] else 0
            assert np.array_equal(o, x) or np.array_equal(o, np.flip(x, axis)), where
            # MXNet's (flipped: middle row/column of an odd size unwritten, see below)
            keep = [i for i in range(x.shape[axis]) if not (x.shape[axis] % 2 and
                                                            i == x.shape[axis] // 2)]
            w, x = np.take(w, keep, axis), np.take(x, keep, axis)
            assert np.array_equal(w, x) or np.array_equal(w, np.take(
                np.flip(ins['data'], axis), keep, axis)), where
        elif cid in MXNET_UNWRITTEN or rec['kind'] == 'random':
            continue            # random: other draws than MXNet's (shapes and dtypes above)
        else:
            rtol, atol = _tol(w)
            if 'flip' in rec['op']:
                # MXNet's flip kernel swaps pairs and never writes the middle row/column of
                # an odd size (unless in place): compare the rest (README)
                axis = 1 if 'left_right' in rec['op'] else 0
                if o.shape[axis] % 2:
                    keep = [i for i in range(o.shape[axis]) if i != o.shape[axis] // 2]
                    o, w = np.take(o, keep, axis), np.take(w, keep, axis)
            assert_close(o, w, rtol, atol, where)


@pytest.mark.parametrize('cid', sorted(OURS))
def test_mxnet_loads_our_json_with_our_values(cid):
    rec, theirs = OURS[cid], MXNET[cid]
    if 'json' not in theirs:            # the process died in the graph executor
        assert _cannot_run(cid) and _cannot_run(cid)[0] == 'crash', theirs
        return
    # MXNet read every node and attribute: its own JSON of the loaded graph is ours
    assert graph_of(theirs['json']) == graph_of(rec['json']), cid
    same = theirs['arguments'] == rec['arguments'] and theirs['aux'] == rec['aux']
    if rec['op'] in ARGS_AUX_DIFFER:
        assert not same, '%s: lists as MXNet now: drop it from ARGS_AUX_DIFFER' % cid
        assert sorted(theirs['arguments'] + theirs['aux']) == \
            sorted(rec['arguments'] + rec['aux'])
    else:
        assert same, (cid, theirs['arguments'], theirs['aux'])
    if cid in OPEN_DIFFERENCES:
        pytest.xfail(OPEN_DIFFERENCES[cid])
    errors = theirs['errors']
    mxnet_outs = ['%s/out:%d' % (cid, i) for i in range(len(theirs['outputs']))]
    has_out = all(k in MX_ARRAYS.files for k in mxnet_outs)
    if not has_out:
        pattern, why = _cannot_run(cid) or (None, None)
        assert pattern, '%s: MXNet 1.9.1 could not run it: %s' % (cid, errors)
        assert any(pattern in e for e in errors.values()), (cid, pattern, errors)
        return
    assert not ('forward' in errors and not theirs.get('imperative')), errors
    assert _cannot_run(cid) is None, '%s runs in MXNet now: drop its exception' % cid
    sym = mx.sym.load_json(rec['json'])
    grads_mx = {k: MX_ARRAYS['%s/grad:%s' % (cid, k)] for k in rec['grads']
                if '%s/grad:%s' % (cid, k) in MX_ARRAYS.files}
    if rec['grads'] and not grads_mx:
        assert rec['op'] in NO_MXNET_GRADIENT, (cid, errors.get('backward'))
    _, outs, grads = _run(sym, cid, bool(grads_mx))
    _compare(cid, outs, [MX_ARRAYS[k] for k in mxnet_outs], 'forward')
    for k, g in grads_mx.items():
        rtol, atol = _tol(g)
        if rec['op'] in MXNET_COPY_GRADIENT:
            head = INPUTS['%s/head:0' % cid]
            assert_close(g, head.reshape(g.shape).astype(g.dtype), 0, 0, "%s: MXNet's gradient of %s is the "
                         'head (_copy)' % (cid, k))
            if cid not in COPY_IS_THE_DERIVATIVE:
                continue        # ours: the derivative (numeric-gradient rows)
        if rec['kind'] == 'random':
            continue            # other draws than MXNet's
        assert_close(grads[k], g, rtol, atol, '%s: gradient of %s' % (cid, k))
    shapes = theirs['infer_shape']
    if shapes and all(s and 0 not in s for s in shapes[1]):
        ours = sym.infer_shape(**{k: INPUTS['%s/in:%s' % (cid, k)].shape
                                  for k in rec['inputs']})
        assert [list(s) for s in ours[1]] == shapes[1], (cid, ours[1], shapes[1])


@pytest.mark.parametrize('cid', sorted(OURS))
def test_mxnet_written_json_loads_here(cid):
    rec, theirs = OURS[cid], MXNET[cid]
    if 'json' not in theirs:
        assert _cannot_run(cid) and _cannot_run(cid)[0] == 'crash', theirs
        return
    sym = mx.sym.load_json(theirs['json'])
    assert sym.list_arguments() + sym.list_auxiliary_states() == \
        rec['arguments'] + rec['aux']
    assert sym.list_outputs() == theirs['outputs']
    if cid in OPEN_DIFFERENCES:
        pytest.xfail(OPEN_DIFFERENCES[cid])
    _, outs, _ = _run(sym, cid, False)
    _, again, _ = _run(mx.sym.load_json(rec['json']), cid, False)
    if rec['kind'] == 'exact':
        for a, b in zip(outs, again):
            np.testing.assert_array_equal(a, b, err_msg=cid)
    mxnet_outs = ['%s/out:%d' % (cid, i) for i in range(len(theirs['outputs']))]
    if all(k in MX_ARRAYS.files for k in mxnet_outs):
        _compare(cid, outs, [MX_ARRAYS[k] for k in mxnet_outs], 'forward (MXNet JSON)')


def test_mxnet_checked_the_update_operators_imperatively():
    """Operators MXNet cannot run from a graph have its imperative values instead."""
    import make_amp_multi
    ops = {get_op(op).name for op, _, _, _, _ in make_amp_multi.CASES.values()}
    for key, (pattern, why) in MXNET_CANNOT_RUN.items():
        if 'make_amp_multi' in why:
            assert key in ops, key
