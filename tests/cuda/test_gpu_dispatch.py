"""The operators' CuPy branches, run end-to-end on the CPU through the kernel emulator.

Convolution, Deconvolution, BatchNorm, box_nms and nms switch to the CUDA kernels of
``symgraph.cuda.loader`` when their ``xp`` is CuPy. Here ``xp`` is a stand-in module named
``cupy`` that forwards to NumPy, and the loader's default backend is the CPU emulator
(``EmuBackend``), so every OpCase of those families runs its GPU glue -- layouts,
reshapes, argument conventions, fallbacks -- with the real kernel source, and must give
what the NumPy path gives.
"""
import json
import types

import numpy as np
import pytest

from symgraph.cuda import loader
from symgraph.opdef import get_op

import harness  # tests/ops is on sys.path (tests/conftest.py)
import test_conv  # noqa: F401  (declares the cases)
import test_detection  # noqa: F401
import test_norm  # noqa: F401

#: operator -> the kernels its CuPy branch must launch (for float32/float64 cases)
KERNEL_OPS = {'Convolution': 'im2col', 'Deconvolution': 'im2col', 'BatchNorm': 'bn_',
              '_contrib_box_nms': 'nms_', '_contrib_nms': 'nms_'}
CASES = [c for c in harness.ALL_CASES if get_op(c.op).name in KERNEL_OPS]


class _FakeCupy(types.ModuleType):
    """``xp`` for the CuPy branches: named ``cupy``, everything else is NumPy."""

    def __getattr__(self, name):
        return getattr(np, name)


FAKE_CUPY = _FakeCupy('cupy')


@pytest.fixture
def emulated(emu, monkeypatch):
    """The loader's default (CuPy) backend replaced by the CPU emulator."""
    monkeypatch.setattr(loader, '_CUPY', emu)
    emu.launches.clear()
    return emu


def _run(op, xp, inputs, is_train, heads):
    n = len(op.list_arguments())
    aux = [a.copy() for a in inputs[n:]]
    outs = op.forward(xp, [a.copy() for a in inputs[:n]], aux, is_train)
    nvis = op.num_visible_outputs()
    og = [None] * len(outs) if op.is_loss else \
        [h.astype(o.dtype) for h, o in zip(heads, outs)] + [None] * (len(outs) - nvis)
    grads = None
    if not op.no_grad:
        grads = op.backward(xp, og, [a.copy() for a in inputs[:n]], outs, aux, [True] * n)
    return outs, aux, grads


def _tol(dtype):
    return dict(rtol=2e-4, atol=2e-5) if dtype != 'float64' else dict(rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize('case', CASES, ids=[c.id for c in CASES])
def test_cupy_branch_matches_numpy(case, emulated):
    op = case.make_op()
    name = get_op(case.op).name
    for dtype in case.dtypes:
        inputs = case.make_inputs(dtype)
        for is_train in sorted({case.is_train, True}):
            rng = np.random.RandomState(3)
            nvis = op.num_visible_outputs()
            shapes = op.infer_shape([a.shape for a in inputs])[1][:nvis]
            heads = [rng.uniform(-1, 1, s) for s in shapes]
            want = _run(op, np, inputs, is_train, heads)
            emulated.launches.clear()
            got = _run(op, FAKE_CUPY, inputs, is_train, heads)
            for w, g, what in zip(want, got, ('outputs', 'aux', 'gradients')):
                for k, (a, b) in enumerate(zip(w or [], g or [])):
                    if a is None:
                        continue
                    assert b is not None and b.dtype == a.dtype and b.shape == a.shape, \
                        '%s %d: %s %s vs %s %s' % (what, k, b.dtype, b.shape, a.dtype, a.shape)
                    np.testing.assert_allclose(b, a, err_msg='%s %d (%s, train=%s)'
                                               % (what, k, dtype, is_train), **_tol(dtype))
            launched = [n for n, _, _ in emulated.launches]
            if dtype in ('float32', 'float64') and _takes_kernels(name, op, inputs, want[0]):
                assert any(n.startswith(KERNEL_OPS[name]) for n in launched), launched
            elif dtype == 'float16':
                assert not launched, 'float16 must take the array path: %s' % launched


def _takes_kernels(name, op, inputs, outs):
    """Cases whose CuPy branch must launch a kernel (others fall back on purpose, or have
    no box left to suppress)."""
    if name in ('Convolution', 'Deconvolution'):
        return len(op.kernel) in (1, 2)
    if name == 'BatchNorm':
        return op.axis % inputs[0].ndim == 1 and inputs[0].ndim >= 2
    if name == '_contrib_box_nms':
        return op.overlap_thresh >= 0 and op.topk != 0 and bool((outs[0] != -1).any())
    return op.iou_threshold >= 0 and inputs[0].shape[0] > 0


def test_box_nms_keeps_batches_and_classes_apart(emulated):
    """Keys (batch, class) become dense float ids: equal boxes of another batch or class
    survive, as on the host."""
    box = [0.0, 0.0, 1.0, 1.0]
    rows = []
    for b in range(2):
        for cls, score in ((0, 0.9), (1, 0.8), (0, 0.7)):
            rows.append([cls, score] + box)
    data = np.array(rows, np.float32).reshape(2, 3, 6)
    op = get_op('_contrib_box_nms')(id_index=0, score_index=1, coord_start=2)
    want = op.forward(np, [data], [], False)
    got = op.forward(FAKE_CUPY, [data], [], False)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[0][:, :2, 1], np.float32([[0.9, 0.8]] * 2))
    assert any(n.startswith('nms_mask') for n, _, _ in emulated.launches)


@pytest.mark.parametrize('name', ['tie_0.7', 'tie_0.3', 'random_0.5', 'random_center'])
def test_box_nms_float16_on_the_cupy_branch_equals_mxnet(name, emulated):
    """float16 stays on the host on CuPy and gives MXNet 1.9.1's result (the golden of
    tests/golden/make_nms_f16.py): IoUs in float16, compared with the threshold in
    float32."""
    data = test_detection.NMS_F16[name + '/data']
    attrs = json.loads(str(test_detection.NMS_F16[name + '/attrs']))
    got = get_op('_contrib_box_nms')(**attrs).forward(FAKE_CUPY, [data], [], False)[0]
    np.testing.assert_array_equal(got, test_detection.NMS_F16[name + '/out'])
    assert not emulated.launches


@pytest.mark.parametrize('thresh, kept', [(0.3, [0, -1]), (float(np.float32(0.3)), [0, 1])])
def test_nms_kernel_compares_the_threshold_as_the_host_does(thresh, kept, emulated):
    """The float32 IoU of the pair is exactly float32(0.3), which is above 0.3: the host
    compares exactly, and the kernel, comparing in float32, gets the largest float32 not
    above the threshold, so both suppress at 0.3 and both keep at float32(0.3)."""
    boxes = np.array([[0, 0, 0.75, 1], [0, 0, np.float32(0.75 * np.float32(0.3)), 1]],
                     np.float32)
    scores = np.array([0.9, 0.8], np.float32)
    op = get_op('_contrib_nms')(iou_threshold=thresh)
    assert op.forward(np, [boxes, scores], [], False)[0].tolist() == kept
    assert op.forward(FAKE_CUPY, [boxes, scores], [], False)[0].tolist() == kept
    assert any(n.startswith('nms_mask') for n, _, _ in emulated.launches)
    data = np.concatenate([np.zeros((2, 1), np.float32), scores[:, None], boxes], 1)[None]
    box_nms = get_op('_contrib_box_nms')(overlap_thresh=thresh)   # thresholds are float32
    for xp in (np, FAKE_CUPY):
        out = box_nms.forward(xp, [data.copy()], [], False)[0]
        assert (out[0, :, 0] >= 0).tolist() == [True, True]
