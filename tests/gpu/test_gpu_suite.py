"""The operator suite again on a GPU context (run by ``bench/run_gpu.sh`` on a GPU machine).

Every OpCase of ``tests/ops`` (collected as ``tests/ops/test_registry.py`` does) is bound
with ``simple_bind`` on ``mx.gpu(0)`` and on the CPU with the same inputs and head
gradients; outputs, input gradients and auxiliary states must agree. The operators are
also called directly with ``xp = cupy`` against ``xp = numpy`` (NumPy-vs-CuPy consistency
of the op bodies, kernels included), and SyncBatchNorm runs over logical devices sharing
the GPU. Everything here is marked ``gpu`` and skipped without CuPy and a device.
"""
import glob
import importlib
import os

import numpy as np
import pytest

import symgraph as mx
from harness import ALL_CASES, _differentiable
from symgraph import cuda, dist

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not cuda.available(), reason='needs CuPy and a CUDA GPU')]

_OPS = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'ops')
for _path in sorted(glob.glob(os.path.join(_OPS, 'test_*.py'))):
    _name = os.path.splitext(os.path.basename(_path))[0]
    if _name != 'test_registry':
        importlib.import_module(_name)

CASES = list(ALL_CASES)
#: forward/gradient tolerances per dtype (GPU reductions and cuBLAS sum in other orders)
TOL = {'float16': dict(rtol=2e-2, atol=2e-3), 'float32': dict(rtol=1e-4, atol=1e-5),
       'float64': dict(rtol=1e-9, atol=1e-11)}


def _names(op):
    return op.list_arguments(), op.list_auxiliary_states()


def _bind(case, ctx, inputs, dtype):
    op = case.make_op()
    args, auxs = _names(op)
    variables = {k: mx.sym.var('in_' + k) for k in args + auxs}
    sym = getattr(mx.sym, case.op)(name='node', **variables, **case.attrs)
    idx = _differentiable(case, op, inputs)
    reqs = {'in_' + k: ('write' if i in idx and not op.no_grad else 'null')
            for i, k in enumerate(args)}
    shapes = {'in_' + k: a.shape for k, a in zip(args + auxs, inputs)}
    types = {'in_' + k: a.dtype for k, a in zip(args + auxs, inputs)}
    exe = sym.simple_bind(ctx, grad_req=reqs, type_dict=types, **shapes)
    for k, a in zip(args, inputs):
        exe.arg_dict['in_' + k][:] = a
    for k, a in zip(auxs, inputs[len(args):]):
        exe.aux_dict['in_' + k][:] = a
    return exe, any(r == 'write' for r in reqs.values())


def _compare(got, want, dtype, what):
    assert got.shape == want.shape and got.dtype == want.dtype, \
        '%s: %s %s on the GPU, %s %s on the CPU' % (what, got.shape, got.dtype, want.shape,
                                                    want.dtype)
    np.testing.assert_allclose(got, want, err_msg=what, **TOL.get(dtype, TOL['float32']))


def _random_in_training(exe):
    """Whether a training forward draws random numbers (the GPU draws other ones)."""
    runs = []
    for seed in (1, 2):
        np.random.seed(seed)
        runs.append([o.asnumpy() for o in exe.forward(is_train=True)])
    return any(not np.array_equal(a, b, equal_nan=True) for a, b in zip(*runs))


@pytest.mark.parametrize('case', CASES, ids=[c.id for c in CASES])
def test_case_on_gpu_matches_cpu(case):
    op = case.make_op()
    for dtype in case.dtypes:
        inputs = case.make_inputs(dtype)
        cpu, grads = _bind(case, mx.cpu(), inputs, dtype)
        gpu, _ = _bind(case, mx.gpu(0), inputs, dtype)
        assert gpu.outputs[0].context == mx.gpu(0)
        outs = [e.forward(is_train=case.is_train) for e in (cpu, gpu)]
        for k, (c, g) in enumerate(zip(*outs)):
            if case.ref is None:         # random operators: shapes and dtypes only
                assert g.shape == c.shape and g.dtype == c.dtype
            else:
                _compare(g.asnumpy(), c.asnumpy(), dtype, 'output %d (%s)' % (k, dtype))
        if not grads or op.no_grad or _random_in_training(cpu):
            continue
        # gradients from a training forward of both, from the same auxiliary states (and
        # the same host draws: the image augmenters draw with NumPy on either device)
        for e in (cpu, gpu):
            for k, a in zip(_names(op)[1], inputs[len(op.list_arguments()):]):
                e.aux_dict['in_' + k][:] = a
            np.random.seed(11)
            outs = e.forward(is_train=True)
        rng = np.random.RandomState(3)
        heads = None if op.is_loss else [rng.uniform(-1, 1, o.shape).astype(o.dtype)
                                         for o in outs]
        for e in (cpu, gpu):
            e.backward(None if heads is None else
                       [mx.nd.array(h, ctx=e._ctx, dtype=h.dtype) for h in heads])
        for k, g in gpu.grad_dict.items():
            if g is None:
                continue
            _compare(g.asnumpy(), cpu.grad_dict[k].asnumpy(), dtype,
                     'gradient of %s (%s)' % (k, dtype))
        for k, a in gpu.aux_dict.items():
            _compare(a.asnumpy(), cpu.aux_dict[k].asnumpy(), dtype, 'aux %s (%s)' % (k, dtype))


@pytest.mark.parametrize('case', CASES, ids=[c.id for c in CASES])
def test_op_body_cupy_matches_numpy(case):
    """The operator's forward and backward with xp=cupy against xp=numpy."""
    cupy = cuda.import_cupy()
    if case.ref is None:
        pytest.skip('random operator')
    op = case.make_op()
    n = len(op.list_arguments())
    for dtype in case.dtypes:
        inputs = case.make_inputs(dtype)
        res = {}
        for xp in (np, cupy):
            # copies: the NumPy pass must not move the aux states the CuPy pass starts from;
            # the same host draws (hidden outputs of the image augmenters)
            arrs = [xp.array(a, copy=True) for a in inputs]
            np.random.seed(11)
            aux = arrs[n:]
            outs = op.forward(xp, arrs[:n], aux, case.is_train)
            res[xp.__name__] = [cupy.asnumpy(o) for o in outs] + \
                [cupy.asnumpy(a) for a in aux]
        for k, (g, c) in enumerate(zip(res['cupy'], res['numpy'])):
            if case.op == 'RNN' and k == len(op.list_outputs()) - 1:
                # RNN's hidden reserve is the backward's workspace, laid out by the path
                # that ran: on the CPU oneDNN's primitives (which leave it unwritten and
                # keep their own workspace), on the GPU the CuPy body's
                continue
            _compare(g, c, dtype, 'output/aux %d (%s)' % (k, dtype))


@pytest.mark.parametrize('ndev', [1, 2, 4])
def test_sync_batchnorm_over_logical_devices_on_one_gpu(ndev):
    """SyncBatchNorm over ndev executors sharing gpu(0) equals BatchNorm of the whole batch
    (the ring all-reduce then runs the CuPy backend with same-device chunks)."""
    rng = np.random.RandomState(ndev)
    x = rng.uniform(-1, 1, (8, 3, 6, 5)).astype(np.float32)
    dy = rng.uniform(-1, 1, x.shape).astype(np.float32)
    params = {'bn_gamma': rng.uniform(0.5, 1.5, 3).astype(np.float32),
              'bn_beta': rng.uniform(-1, 1, 3).astype(np.float32)}
    data = mx.sym.var('data')
    ref = mx.sym.BatchNorm(data, fix_gamma=False, name='bn').simple_bind(mx.gpu(0),
                                                                         data=x.shape)
    ref.copy_params_from({k: mx.nd.array(v) for k, v in params.items()})
    want = ref.forward(is_train=True, data=x)[0].asnumpy()
    ref.backward([mx.nd.array(dy, ctx=mx.gpu(0))])
    sym = mx.sym.contrib.SyncBatchNorm(data, fix_gamma=False, ndev=ndev,
                                       key='gpu-suite-%d' % ndev, name='bn')
    group = dist.DataParallelExecutor(sym, [mx.gpu(0)] * ndev, data=x.shape)
    group.set_params(params)
    np.testing.assert_allclose(group.forward(is_train=True, data=x)[0].asnumpy(), want,
                               rtol=1e-4, atol=1e-5)
    group.backward([dy])
    np.testing.assert_allclose(group.get_input_grads()[0].asnumpy(),
                               ref.grad_dict['data'].asnumpy(), rtol=1e-4, atol=1e-5)
    for k in params:
        np.testing.assert_allclose(group.grad_dict[k].asnumpy(), ref.grad_dict[k].asnumpy(),
                                   rtol=1e-4, atol=1e-5)
    for k, a in group.aux_dict.items():
        np.testing.assert_allclose(a.asnumpy(), ref.aux_dict[k].asnumpy(), rtol=1e-5,
                                   atol=1e-6)


def test_copies_between_cpu_and_gpu():
    a = mx.nd.array(np.arange(6.0).reshape(2, 3))
    g = a.as_in_context(mx.gpu(0))
    assert g.context == mx.gpu(0) and type(g._data).__module__.startswith('cupy')
    back = g.copyto(mx.cpu())
    np.testing.assert_array_equal(back.asnumpy(), a.asnumpy())
    dst = mx.nd.zeros((2, 3), ctx=mx.gpu(0))
    a.copyto(dst)
    np.testing.assert_array_equal(dst.asnumpy(), a.asnumpy())
    # binding CPU arrays to a GPU executor copies them at every run
    x = mx.sym.var('x')
    exe = (x * 2).bind(mx.gpu(0), {'x': a}, args_grad={'x': mx.nd.zeros((2, 3))})
    a[:] = 1.0
    np.testing.assert_array_equal(exe.forward(is_train=True)[0].asnumpy(), 2.0)
    exe.backward([mx.nd.ones((2, 3), ctx=mx.gpu(0))])
    np.testing.assert_array_equal(exe.grad_dict['x'].asnumpy(), 2.0)
    assert exe.grad_dict['x'].context == mx.cpu()


def test_nms_ties_keep_input_order_on_the_gpu():
    """Equal scores: kept in input order (the device sort must be stable), as on the CPU."""
    rng = np.random.RandomState(11)
    n = 300
    xy = rng.uniform(0, 50, (n, 2))
    boxes = np.concatenate([xy, xy + rng.uniform(5, 20, (n, 2))], axis=1).astype(np.float32)
    scores = rng.randint(0, 4, n).astype(np.float32)      # many ties
    want = mx.nd.contrib.nms(mx.nd.array(boxes), mx.nd.array(scores), iou_threshold=0.3)
    got = mx.nd.contrib.nms(mx.nd.array(boxes, ctx=mx.gpu(0)),
                            mx.nd.array(scores, ctx=mx.gpu(0)), iou_threshold=0.3)
    assert got.context == mx.gpu(0)
    np.testing.assert_array_equal(got.asnumpy(), want.asnumpy())


def test_image_decoders_and_hawkesll_on_the_gpu():
    """The decoders take their buffer from the device and put the image there; hawkesll's
    data-dependent checks run on device arrays."""
    pytest.importorskip('PIL')
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'golden', 'data',
                        'image_io', 'rgb.png')
    with open(path, 'rb') as f:
        raw = np.frombuffer(f.read(), np.uint8)
    cpu = mx.nd._internal._cvimdecode(mx.nd.array(raw, dtype='uint8'))
    gpu = mx.nd._internal._cvimdecode(mx.nd.array(raw, ctx=mx.gpu(0), dtype='uint8'))
    assert gpu.context == mx.gpu(0)
    np.testing.assert_array_equal(gpu.asnumpy(), cpu.asnumpy())
    golden = np.load(os.path.join(os.path.dirname(path), '..', 'hawkes_cv.npz'))
    ins = [golden['hawkes_f64/in%d' % i] for i in range(8)]
    want = mx.nd.contrib.hawkesll(*[mx.nd.array(a, dtype=a.dtype) for a in ins])
    got = mx.nd.contrib.hawkesll(*[mx.nd.array(a, ctx=mx.gpu(0), dtype=a.dtype) for a in ins])
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.asnumpy(), w.asnumpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize('case', [c for c in CASES if c.op.startswith('_image_') and
                                  c.seed is not None],
                         ids=lambda c: c.id)
def test_random_image_augmenter_gradients_on_the_gpu(case):
    """The random augmenters draw on the host: seeded alike, the GPU's forward and
    backward (from the hidden draws) equal the CPU's."""
    for dtype in case.dtypes:
        inputs = case.make_inputs(dtype)
        exes = [_bind(case, ctx, inputs, dtype)[0] for ctx in (mx.cpu(), mx.gpu(0))]
        head = np.random.RandomState(3).uniform(-1, 1, inputs[0].shape).astype(dtype)
        res = []
        for e in exes:
            np.random.seed(case.seed)
            out = e.forward(is_train=True)[0].asnumpy()
            e.backward([mx.nd.array(head, ctx=e._ctx, dtype=dtype)])
            res.append((out, e.grad_dict['in_data'].asnumpy()))
        for (c_out, c_grad), (g_out, g_grad) in zip(res[:1], res[1:]):
            _compare(g_out, c_out, dtype, 'output (%s)' % dtype)
            _compare(g_grad, c_grad, dtype, 'gradient (%s)' % dtype)


@pytest.mark.parametrize('dtype', [np.float32, np.float64])
def test_nms_kernel_decides_iou_ties_as_the_host(dtype):
    """A pair whose IoU equals the threshold exactly is kept by the host's NumPy (IoU >
    thresh is false) and must be kept by the bitmask kernel too: its products may not be
    contracted into FMAs that move the IoU by an ulp. One ulp below, both suppress."""
    from symgraph.cuda import loader
    from symgraph.ops._nms import box_corners, pair_iou
    cp = cuda.import_cupy()
    rng = np.random.RandomState(5)
    a = rng.uniform(0, 10, (400, 2))
    pairs = np.concatenate([a, a + rng.uniform(1, 9, (400, 2))], axis=1)
    shifted = pairs + rng.uniform(-0.9, 0.9, (400, 4))
    boxes = np.stack([pairs, shifted], axis=1).astype(dtype)          # (400, 2, 4)
    x1, y1, x2, y2, area = box_corners(boxes.reshape(-1, 4), 'corner')
    iou = pair_iou(x1, y1, x2, y2, area, np.arange(0, 800, 2), np.arange(1, 800, 2))
    assert iou.dtype == dtype and ((iou > 0.05) & (iou < 0.95)).mean() > 0.9
    wrong = []
    for k in np.flatnonzero(iou > 0):
        dev = cp.asarray(boxes[k])
        at = loader.nms_keep(dev, float(iou[k])).get()
        below = loader.nms_keep(dev, float(np.nextafter(iou[k], dtype(0)))).get()
        if not (at.all() and not below[1]):
            wrong.append((k, float(iou[k]), at.tolist(), below.tolist()))
    assert not wrong, wrong[:5]
