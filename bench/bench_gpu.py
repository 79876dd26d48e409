"""GPU benchmarks of symgraph's CUDA paths against the libraries they stand in for.

Usage (on a machine with an NVIDIA GPU, CuPy, and ideally PyTorch + torchvision)::

    python bench/bench_gpu.py [--out bench/results_gpu] [--repeat 20] [--quick]

* Convolution forward + backward (im2col/col2im kernels + cuBLAS) on the ResNet-18 layer
  shapes, batch 32, against PyTorch's cuDNN convolution;
* BatchNorm forward + backward in training (fused kernels) against cuDNN through PyTorch;
* NMS of 10,000 clustered boxes: the bitmask kernel alone and ``contrib.nms`` (host sort
  included) against ``torchvision.ops.nms``;
* ring all-reduce of 64 MB per buffer over 4 logical devices on one GPU, against the
  device's copy bandwidth (and NCCL's all-reduce when there are two or more GPUs);
* ``--cudnn`` instead: the cuDNN backend (``symgraph.backend.cudnn``) against symgraph's
  own kernels and PyTorch, per operator (convolution on the ResNet-18 layers, BatchNorm,
  max pooling, softmax / log_softmax, relu), with the relative difference of the results.
  Written without a GPU (issue 34); its first run is the next GPU session's.

The sections above time symgraph's own kernels: ``bench/run_gpu.sh bench`` runs them with
``SYMGRAPH_CUDNN=0`` (with cuDNN loaded the executor would route convolution and
BatchNorm to it).

Writes ``results.json`` and ``results.md`` (a table for ``bench/RESULTS.md``) under
``--out``. A missing PyTorch/torchvision leaves their columns empty instead of failing.
Times are wall-clock means after warm-up, with the device synchronised around the loop.
"""
import argparse
import json
import os
import platform
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__))))

import symgraph as mx  # noqa: E402
from symgraph import cuda, dist  # noqa: E402
from symgraph.cuda import loader  # noqa: E402

#: (name, C_in, C_out, kernel, stride, pad, H=W of the input) of ResNet-18 at 224x224
RESNET18 = [
    ('conv1', 3, 64, 7, 2, 3, 224),
    ('layer1', 64, 64, 3, 1, 1, 56),
    ('layer2.down', 64, 128, 3, 2, 1, 56),
    ('layer2', 128, 128, 3, 1, 1, 28),
    ('layer2.proj', 64, 128, 1, 2, 0, 56),
    ('layer3.down', 128, 256, 3, 2, 1, 28),
    ('layer3', 256, 256, 3, 1, 1, 14),
    ('layer4.down', 256, 512, 3, 2, 1, 14),
    ('layer4', 512, 512, 3, 1, 1, 7),
]
BN_SHAPES = [(32, 64, 112, 112), (32, 64, 56, 56), (32, 256, 14, 14), (32, 512, 7, 7)]


def _torch():
    try:
        import torch
        if not torch.cuda.is_available():
            return None
        torch.backends.cudnn.benchmark = True
        # the reference computes in true FP32, as we do: PyTorch lets cuDNN convolutions
        # use TF32 tensor cores by default (timed separately as 'cudnn_tf32_ms')
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
        return torch
    except ImportError:
        return None


def timeit(fn, sync, repeat, warmup=3):
    """Mean seconds of ``fn()`` over ``repeat`` calls, device synchronised around."""
    for _ in range(warmup):
        fn()
    sync()
    t0 = time.perf_counter()
    for _ in range(repeat):
        fn()
    sync()
    return (time.perf_counter() - t0) / repeat


def bench_conv(cp, torch, repeat, batch, shrink=1):
    rows = []
    for name, ci, co, k, s, p, hw in RESNET18:
        ci, co, hw = max(1, ci // shrink), max(1, co // shrink), max(k, hw // shrink)
        rng = np.random.RandomState(0)
        x = rng.standard_normal((batch, ci, hw, hw)).astype(np.float32)
        w = (rng.standard_normal((co, ci, k, k)) * 0.05).astype(np.float32)
        sym = mx.sym.Convolution(mx.sym.var('data'), num_filter=co, kernel=(k, k),
                                 stride=(s, s), pad=(p, p), no_bias=True, name='c')
        exe = sym.simple_bind(mx.gpu(0), data=x.shape)
        exe.arg_dict['data'][:] = x
        exe.arg_dict['c_weight'][:] = w
        out = exe.forward(is_train=True)[0]
        dy = mx.nd.array(rng.standard_normal(out.shape).astype(np.float32), ctx=mx.gpu(0))

        def ours():
            exe.forward(is_train=True)
            exe.backward([dy])
        row = {'layer': name, 'input': list(x.shape), 'weight': list(w.shape),
               'ours_ms': 1e3 * timeit(ours, cp.cuda.Device().synchronize, repeat)}
        if torch is not None:
            tx = torch.tensor(x, device='cuda', requires_grad=True)
            tw = torch.tensor(w, device='cuda', requires_grad=True)
            tdy = torch.tensor(dy.asnumpy(), device='cuda')

            def ref():
                y = torch.nn.functional.conv2d(tx, tw, stride=s, padding=p)
                y.backward(tdy)
            row['cudnn_ms'] = 1e3 * timeit(ref, torch.cuda.synchronize, repeat)
            torch.backends.cudnn.allow_tf32 = True
            row['cudnn_tf32_ms'] = 1e3 * timeit(ref, torch.cuda.synchronize, repeat)
            torch.backends.cudnn.allow_tf32 = False
            y = torch.nn.functional.conv2d(tx, tw, stride=s, padding=p)
            row['max_abs_diff'] = float(np.abs(y.detach().cpu().numpy()
                                               - out.asnumpy()).max())
        rows.append(row)
        print('conv', row, flush=True)
    return rows


def bench_batchnorm(cp, torch, repeat, shrink=1):
    rows = []
    for shape in BN_SHAPES:
        shape = (shape[0] // shrink or 1,) + tuple(max(1, d // shrink) for d in shape[1:])
        rng = np.random.RandomState(1)
        x = rng.standard_normal(shape).astype(np.float32)
        c = shape[1]
        sym = mx.sym.BatchNorm(mx.sym.var('data'), fix_gamma=False, name='bn')
        exe = sym.simple_bind(mx.gpu(0), data=shape)
        exe.arg_dict['data'][:] = x
        exe.arg_dict['bn_gamma'][:] = 1.0
        exe.aux_dict['bn_moving_var'][:] = 1.0
        dy = mx.nd.array(rng.standard_normal(shape).astype(np.float32), ctx=mx.gpu(0))

        def ours():
            exe.forward(is_train=True)
            exe.backward([dy])
        row = {'shape': list(shape),
               'ours_ms': 1e3 * timeit(ours, cp.cuda.Device().synchronize, repeat)}
        if torch is not None:
            tx = torch.tensor(x, device='cuda', requires_grad=True)
            g = torch.ones(c, device='cuda', requires_grad=True)
            b = torch.zeros(c, device='cuda', requires_grad=True)
            rm, rv = torch.zeros(c, device='cuda'), torch.ones(c, device='cuda')
            tdy = torch.tensor(dy.asnumpy(), device='cuda')

            def ref():
                y = torch.nn.functional.batch_norm(tx, rm, rv, g, b, training=True,
                                                   momentum=0.1, eps=1e-3)
                y.backward(tdy)
            row['cudnn_ms'] = 1e3 * timeit(ref, torch.cuda.synchronize, repeat)
        rows.append(row)
        print('batchnorm', row, flush=True)
    return rows


class _OursOnly:
    """Within: the operators' helpers run symgraph's own CUDA kernels (cuDNN's kernel table
    answers None), whatever ``symgraph.backend.cudnn`` loaded."""

    def __enter__(self):
        from symgraph.backend import cudnn
        self._mod, self._saved = cudnn, cudnn.kernel
        cudnn.kernel = lambda name: None
        return self

    def __exit__(self, *exc):
        self._mod.kernel = self._saved


def _maxdiff(cp, a, b):
    """max |a - b| / (max |b| + 1): the relative disagreement of two results."""
    a, b = cp.asnumpy(a), cp.asnumpy(b)
    return float(np.abs(a - b).max() / (np.abs(b).max() + 1.0))


def bench_cudnn(cp, torch, repeat, batch, shrink=1):
    """cuDNN through symgraph.backend.cudnn against symgraph's own CUDA kernels and
    PyTorch (its cuDNN), operator by operator, forward + backward, float32 without TF32.

    Written without a GPU (issue 34): never run yet. The 'rel diff' columns compare
    cuDNN's results with our kernels' (relative to the largest value)."""
    from symgraph.backend import cudnn
    from symgraph.ops import _conv_impl as ci, norm, softmax as sm
    from symgraph.ops.pooling import Pooling
    import types
    cudnn.reset()
    be = cudnn.backend()
    if be is None:
        print('cudnn: not loaded (%s)' % cudnn.reason(), flush=True)
        return {'loaded': False, 'reason': cudnn.reason()}
    sync = cp.cuda.Device().synchronize
    tsync = torch.cuda.synchronize if torch is not None else None
    F = torch.nn.functional if torch is not None else None
    out = {'loaded': True, 'version': '.'.join(map(str, be.version)), 'path': be.path,
           'tf32': be.tf32, 'conv': [], 'batchnorm': [], 'other': []}
    rng = np.random.RandomState(2)

    def three(row, ours, mine, ref=None):
        with _OursOnly():
            row['ours_ms'] = 1e3 * timeit(ours, sync, repeat)
        row['cudnn_ms'] = 1e3 * timeit(mine, sync, repeat)
        if ref is not None:
            row['torch_ms'] = 1e3 * timeit(ref, tsync, repeat)
        return row

    for name, c_in, c_out, k, s, p, hw in RESNET18:
        c_in, c_out, hw = max(1, c_in // shrink), max(1, c_out // shrink), max(k, hw // shrink)
        x = cp.asarray(rng.standard_normal((batch, c_in, hw, hw)).astype(np.float32))
        w = cp.asarray((rng.standard_normal((c_out, c_in, k, k)) * 0.05).astype(np.float32))
        st, pd, dl = (s, s), (p, p), (1, 1)
        y = be.conv_forward(x, w, None, st, pd, dl, 1)
        dy = cp.asarray(rng.standard_normal(y.shape).astype(np.float32))

        def ours():
            ci.conv_forward(cp, x, w, None, st, pd, dl, 1)
            ci.conv_backward_data(cp, dy, w, x.shape, st, pd, dl, 1)
            ci.conv_backward_weight(cp, x, dy, (k, k), st, pd, dl, 1)

        def mine():
            be.conv_forward(x, w, None, st, pd, dl, 1)
            be.conv_backward_data(dy, w, x.shape, st, pd, dl, 1)
            be.conv_backward_weights(x, dy, w.shape, st, pd, dl, 1)
        ref = None
        if torch is not None:
            tx = torch.as_tensor(cp.asnumpy(x), device='cuda').requires_grad_()
            tw = torch.as_tensor(cp.asnumpy(w), device='cuda').requires_grad_()
            tdy = torch.as_tensor(cp.asnumpy(dy), device='cuda')

            def ref():
                F.conv2d(tx, tw, stride=s, padding=p).backward(tdy)
        row = three({'layer': name, 'input': list(x.shape)}, ours, mine, ref)
        with _OursOnly():
            y0 = ci.conv_forward(cp, x, w, None, st, pd, dl, 1)
            dx0 = ci.conv_backward_data(cp, dy, w, x.shape, st, pd, dl, 1)
            dw0 = ci.conv_backward_weight(cp, x, dy, (k, k), st, pd, dl, 1)
        row['rel_diff'] = max(
            _maxdiff(cp, y, y0),
            _maxdiff(cp, be.conv_backward_data(dy, w, x.shape, st, pd, dl, 1), dx0),
            _maxdiff(cp, be.conv_backward_weights(x, dy, w.shape, st, pd, dl, 1), dw0))
        out['conv'].append(row)
        print('cudnn conv', row, flush=True)

    for shape in BN_SHAPES:
        shape = (max(1, batch * shape[0] // 32 // shrink),) + tuple(
            max(1, d // shrink) for d in shape[1:])
        c = shape[1]
        x = cp.asarray(rng.standard_normal(shape).astype(np.float32))
        dy = cp.asarray(rng.standard_normal(shape).astype(np.float32))
        gamma, beta = cp.ones(c, np.float32), cp.zeros(c, np.float32)
        mm, mv = cp.zeros(c, np.float32), cp.ones(c, np.float32)
        op = types.SimpleNamespace(eps=1e-3, momentum=0.9, fix_gamma=False,
                                   use_global_stats=False)

        def ours():
            _, m0, i0 = norm._gpu_bn_forward(cp, op, x, gamma, beta, mm, mv, True)
            norm._gpu_bn_backward(cp, op, dy, x, gamma, m0, i0)

        def mine():
            _, m1, i1 = be.batchnorm_forward(x, gamma, beta, mm, mv, 1e-3, 0.9, False, True)
            be.batchnorm_backward(dy, x, gamma, m1, i1, 1e-3, False)
        ref = None
        if torch is not None:
            tx = torch.as_tensor(cp.asnumpy(x), device='cuda').requires_grad_()
            g = torch.ones(c, device='cuda', requires_grad=True)
            b = torch.zeros(c, device='cuda', requires_grad=True)
            rm, rv = torch.zeros(c, device='cuda'), torch.ones(c, device='cuda')
            tdy = torch.as_tensor(cp.asnumpy(dy), device='cuda')

            def ref():
                F.batch_norm(tx, rm, rv, g, b, training=True, momentum=0.1,
                             eps=1e-3).backward(tdy)
        row = three({'shape': list(shape)}, ours, mine, ref)
        with _OursOnly():
            y0, m0, i0 = norm._gpu_bn_forward(cp, op, x, gamma, beta, mm, mv, True)
            dx0 = norm._gpu_bn_backward(cp, op, dy, x, gamma, m0, i0)[0]
        y1, m1, i1 = be.batchnorm_forward(x, gamma, beta, mm, mv, 1e-3, 0.9, False, True)
        dx1 = be.batchnorm_backward(dy, x, gamma, m1, i1, 1e-3, False)[0]
        row['rel_diff'] = max(_maxdiff(cp, y1, y0), _maxdiff(cp, dx1, dx0))
        out['batchnorm'].append(row)
        print('cudnn batchnorm', row, flush=True)

    # pooling (ResNet's stem max pooling), softmax (1000 classes), relu
    hw = max(3, 112 // shrink)
    x = cp.asarray(rng.standard_normal((batch, max(1, 64 // shrink), hw, hw))
                   .astype(np.float32))
    pool = Pooling(kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type='max')
    yp = be.pool_forward(x, 'max', (3, 3), (2, 2), (1, 1))
    dyp = cp.asarray(rng.standard_normal(yp.shape).astype(np.float32))

    def ours():
        pool._pool_grad(cp, x, pool._pool(cp, x), dyp)

    def mine():
        be.pool_backward(x, be.pool_forward(x, 'max', (3, 3), (2, 2), (1, 1)), dyp, 'max',
                         (3, 3), (2, 2), (1, 1))
    ref = None
    if torch is not None:
        tx = torch.as_tensor(cp.asnumpy(x), device='cuda').requires_grad_()
        tdy = torch.as_tensor(cp.asnumpy(dyp), device='cuda')

        def ref():
            F.max_pool2d(tx, 3, 2, 1).backward(tdy)
    row = three({'op': 'max pool 3x3/2', 'input': list(x.shape)}, ours, mine, ref)
    with _OursOnly():
        y0 = pool._pool(cp, x)
    row['rel_diff'] = _maxdiff(cp, yp, y0)
    out['other'].append(row)
    print('cudnn pool', row, flush=True)

    for log in (False, True):
        xs = cp.asarray(rng.standard_normal((batch * 16, 1000)).astype(np.float32))
        dys = cp.asarray(rng.standard_normal(xs.shape).astype(np.float32))
        fn = sm.log_softmax if log else sm.softmax

        def ours():
            yy = fn(cp, xs, -1)
            if log:
                dys - cp.exp(yy) * dys.sum(axis=-1, keepdims=True)
            else:
                yy * (dys - (dys * yy).sum(axis=-1, keepdims=True))

        def mine():
            be.softmax_backward(be.softmax_forward(xs, -1, log), dys, -1, log)
        ref = None
        if torch is not None:
            tx = torch.as_tensor(cp.asnumpy(xs), device='cuda').requires_grad_()
            tdy = torch.as_tensor(cp.asnumpy(dys), device='cuda')
            tf = F.log_softmax if log else F.softmax

            def ref():
                tf(tx, dim=-1).backward(tdy)
        row = three({'op': 'log_softmax' if log else 'softmax', 'input': list(xs.shape)},
                    ours, mine, ref)
        row['rel_diff'] = _maxdiff(cp, be.softmax_forward(xs, -1, log), fn(cp, xs, -1))
        out['other'].append(row)
        print('cudnn softmax', row, flush=True)

    xr = cp.asarray(rng.standard_normal((batch, max(1, 64 // shrink), max(1, 56 // shrink),
                                         max(1, 56 // shrink))).astype(np.float32))
    dyr = cp.asarray(rng.standard_normal(xr.shape).astype(np.float32))

    def ours():
        yy = cp.maximum(xr, 0)
        dyr * (yy > 0)

    def mine():
        yy = be.activation_forward(xr, 'relu')
        be.activation_backward(xr, yy, dyr, 'relu')
    ref = None
    if torch is not None:
        tx = torch.as_tensor(cp.asnumpy(xr), device='cuda').requires_grad_()
        tdy = torch.as_tensor(cp.asnumpy(dyr), device='cuda')

        def ref():
            F.relu(tx).backward(tdy)
    row = three({'op': 'relu (CuPy elementwise as ours)', 'input': list(xr.shape)}, ours,
                mine, ref)
    row['rel_diff'] = _maxdiff(cp, be.activation_forward(xr, 'relu'), cp.maximum(xr, 0))
    out['other'].append(row)
    print('cudnn relu', row, flush=True)
    return out


def cudnn_markdown(res, batch):
    """The cuDNN section's tables (ours / cuDNN: above 1 means cuDNN is faster)."""
    if not res.get('loaded'):
        return '## cuDNN backend\n\nnot loaded: %s\n' % res.get('reason')
    lines = ['## cuDNN backend %s (%s), batch %d, TF32 %s: forward + backward'
             % (res['version'], res['path'], batch, 'on' if res['tf32'] else 'off'), '',
             '| case | input | ours ms | cuDNN ms | PyTorch ms | ours/cuDNN | cuDNN/PyTorch '
             '| rel diff |', '|---|---|---|---|---|---|---|---|']
    for kind, rows in (('conv', res['conv']), ('bn', res['batchnorm']),
                       ('', res['other'])):
        for r in rows:
            case = r.get('layer') or r.get('op') or 'BatchNorm'
            t = r.get('torch_ms')
            lines.append('| %s | %s | %.3f | %.3f | %s | %.2f | %s | %.1e |' % (
                ('%s %s' % (kind, case)).strip(), 'x'.join(map(str, r.get('input')
                                                               or r.get('shape'))),
                r['ours_ms'], r['cudnn_ms'], '%.3f' % t if t else '-',
                r['ours_ms'] / r['cudnn_ms'], '%.2f' % (r['cudnn_ms'] / t) if t else '-',
                r['rel_diff']))
    return '\n'.join(lines) + '\n'


def bench_nms(cp, torch, repeat, n=10000):
    from bench_nms import make_boxes
    rows = make_boxes(n, seed=3)
    boxes, scores = rows[:, 2:6].copy(), rows[:, 1].copy()
    order = np.argsort(-scores, kind='stable')
    dboxes = cp.asarray(boxes[order])
    sync = cp.cuda.Device().synchronize
    res = {'boxes': n, 'threshold': 0.5,
           'kernel_ms': 1e3 * timeit(lambda: loader.nms_keep(dboxes, 0.5), sync, repeat)}
    gb, gs = mx.nd.array(boxes, ctx=mx.gpu(0)), mx.nd.array(scores, ctx=mx.gpu(0))
    res['contrib_nms_ms'] = 1e3 * timeit(
        lambda: mx.nd.contrib.nms(gb, gs, iou_threshold=0.5), sync, repeat)
    ours = mx.nd.contrib.nms(gb, gs, iou_threshold=0.5).asnumpy()
    res['kept'] = int((ours >= 0).sum())
    try:
        import torchvision
    except ImportError:
        torchvision = None
    if torch is not None and torchvision is not None:
        tb, ts = torch.tensor(boxes, device='cuda'), torch.tensor(scores, device='cuda')
        res['torchvision_ms'] = 1e3 * timeit(lambda: torchvision.ops.nms(tb, ts, 0.5),
                                             torch.cuda.synchronize, repeat)
        theirs = torchvision.ops.nms(tb, ts, 0.5).cpu().numpy()
        res['same_as_torchvision'] = bool(np.array_equal(np.sort(theirs),
                                                         np.sort(ours[ours >= 0])))
    print('nms', res, flush=True)
    return res


def bench_allreduce(cp, repeat, mbytes=64, ndev=4):
    n = mbytes * (1 << 20) // 4
    bufs = [cp.full(n, float(k + 1), dtype=cp.float32) for k in range(ndev)]
    sync = cp.cuda.Device().synchronize
    t = timeit(lambda: dist.allreduce(bufs), sync, repeat, warmup=2)
    src, dst = cp.ones(n, cp.float32), cp.empty(n, cp.float32)
    tcopy = timeit(lambda: dst.__setitem__(Ellipsis, src), sync, repeat)
    nbytes = n * 4
    res = {'devices': ndev, 'bytes_per_buffer': nbytes, 'allreduce_ms': 1e3 * t,
           # each device sends and receives 2 (N-1)/N of the buffer: NCCL's "bus bandwidth"
           'bus_bandwidth_GBps': 2 * (ndev - 1) / ndev * nbytes / t / 1e9,
           'copy_bandwidth_GBps': 2 * nbytes / tcopy / 1e9,   # read + write
           'ring_traffic_GBps': ring_traffic_bytes(ndev, n, 4) / t / 1e9}
    res['bus_vs_copy'] = res['bus_bandwidth_GBps'] / res['copy_bandwidth_GBps']
    res['ring_vs_copy'] = res['ring_traffic_GBps'] / res['copy_bandwidth_GBps']
    ngpu = cp.cuda.runtime.getDeviceCount()
    if ngpu >= 2:
        res['nccl'] = _nccl_allreduce(cp, n, ngpu, repeat)
    else:
        res['nccl'] = 'not run: NCCL needs one GPU per rank and %d is visible' % ngpu
    print('allreduce', res, flush=True)
    return res


def ring_traffic_bytes(ndev, length, itemsize, same_device=True):
    """Device-memory bytes the ring reads and writes: a reduce step reads two chunks and
    writes one (plus a staging copy between distinct devices), a gather step copies one.

    With N logical devices on one GPU every step's traffic lands on the same memory, so
    NCCL's bus bandwidth (2 (N-1)/N of a buffer per time) can reach only about a tenth of
    the copy bandwidth for N = 4 however good the implementation is; this count measures
    how close the ring runs to the memory system instead.

    >>> ring_traffic_bytes(4, 1000, 4)       # 3 rounds x 4 chunks x (3 + 2) x 250 x 4
    60000
    """
    total = 0
    for step in dist.ring_schedule(ndev, length):
        chunk = (step.stop - step.start) * itemsize
        if step.phase == 'reduce':
            total += 3 * chunk + (0 if same_device else 2 * chunk)
        else:
            total += 2 * chunk
    return total


def _nccl_allreduce(cp, n, ngpu, repeat):
    try:
        from cupy.cuda import nccl
    except ImportError as e:
        return 'not run: %s' % e
    devs = list(range(ngpu))
    comms = nccl.NcclCommunicator.initAll(devs)
    bufs = []
    for d in devs:
        with cp.cuda.Device(d):
            bufs.append(cp.ones(n, cp.float32))

    def run():
        nccl.groupStart()
        for d, comm, b in zip(devs, comms, bufs):
            with cp.cuda.Device(d):
                comm.allReduce(b.data.ptr, b.data.ptr, n, nccl.NCCL_FLOAT32, nccl.NCCL_SUM,
                               cp.cuda.Stream.null.ptr)
        nccl.groupEnd()

    def sync():
        for d in devs:
            cp.cuda.Device(d).synchronize()
    t = timeit(run, sync, repeat, warmup=2)
    ours = timeit(lambda: dist.allreduce(bufs), sync, repeat, warmup=2)
    return {'gpus': ngpu, 'nccl_ms': 1e3 * t, 'ours_ms_same_gpus': 1e3 * ours}


def markdown(results):
    lines = ['# GPU benchmark (%s)' % results['when'], '',
             'Device: %s; CuPy %s; PyTorch %s' % (results['device'], results['cupy'],
                                                  results['torch']), '']
    lines += ['## Convolution forward + backward, batch %d (FP32; cuDNN TF32 for reference)'
              % results['batch'], '',
              '| layer | input | ours ms | cuDNN ms | ratio | cuDNN TF32 ms | max abs diff |',
              '|---|---|---|---|---|---|---|']
    for r in results['conv']:
        c = r.get('cudnn_ms')
        t = r.get('cudnn_tf32_ms')
        lines.append('| %s | %s | %.2f | %s | %s | %s | %s |' % (
            r['layer'], 'x'.join(map(str, r['input'])), r['ours_ms'],
            '%.2f' % c if c else '-', '%.1f' % (r['ours_ms'] / c) if c else '-',
            '%.2f' % t if t else '-',
            '%.1e' % r['max_abs_diff'] if 'max_abs_diff' in r else '-'))
    lines += ['', '## BatchNorm training forward + backward', '',
              '| shape | ours ms | cuDNN ms | ratio |', '|---|---|---|---|']
    for r in results['batchnorm']:
        c = r.get('cudnn_ms')
        lines.append('| %s | %.2f | %s | %s |' % (
            'x'.join(map(str, r['shape'])), r['ours_ms'], '%.2f' % c if c else '-',
            '%.1f' % (r['ours_ms'] / c) if c else '-'))
    n = results['nms']
    lines += ['', '## NMS, %d boxes, IoU 0.5' % n['boxes'], '',
              '- bitmask kernel: %.2f ms; contrib.nms (host sort included): %.2f ms; kept %d'
              % (n['kernel_ms'], n['contrib_nms_ms'], n['kept']),
              '- torchvision.ops.nms: %s; same boxes: %s'
              % ('%.2f ms' % n['torchvision_ms'] if 'torchvision_ms' in n else '-',
                 n.get('same_as_torchvision', '-'))]
    a = results['allreduce']
    lines += ['', '## Ring all-reduce, %d logical devices on one GPU, %d MB each'
              % (a['devices'], a['bytes_per_buffer'] >> 20), '',
              '- %.2f ms: ring memory traffic %.1f GB/s vs device copy %.1f GB/s (%.2f of '
              'copy); NCCL-style bus bandwidth %.1f GB/s (%.2f of copy, at most ~0.1 with '
              'every device on one GPU)'
              % (a['allreduce_ms'], a['ring_traffic_GBps'], a['copy_bandwidth_GBps'],
                 a['ring_vs_copy'], a['bus_bandwidth_GBps'], a['bus_vs_copy']),
              '- NCCL: %s' % (a['nccl'],), '']
    lines += ['## Targets (issue 5)', '', '| target | measured | met |', '|---|---|---|']
    lines += ['| %s | %s | %s |' % t for t in targets(results)]
    return '\n'.join(lines)


def _worst(rows, key):
    ratios = [r['ours_ms'] / r[key] for r in rows if r.get(key)]
    return max(ratios) if ratios else None


def targets(results):
    """(target, measured, met) rows; met is '-' where the reference is missing."""
    out = []
    conv = _worst(results['conv'], 'cudnn_ms')
    out.append(('conv fwd+bwd within 3x of cuDNN (FP32), every ResNet-18 layer',
                '-' if conv is None else 'worst %.2fx' % conv,
                '-' if conv is None else ('yes' if conv <= 3 else 'NO')))
    bn = _worst(results['batchnorm'], 'cudnn_ms')
    out.append(('BatchNorm fwd+bwd within 1.5x of cuDNN, every shape',
                '-' if bn is None else 'worst %.2fx' % bn,
                '-' if bn is None else ('yes' if bn <= 1.5 else 'NO')))
    n = results['nms']
    tv = n.get('torchvision_ms')
    out.append(('NMS on %d boxes no slower than torchvision' % n['boxes'],
                '-' if tv is None else 'kernel %.2f ms, contrib.nms %.2f ms vs %.2f ms'
                % (n['kernel_ms'], n['contrib_nms_ms'], tv),
                '-' if tv is None else ('yes' if n['contrib_nms_ms'] <= tv else
                                        'kernel only' if n['kernel_ms'] <= tv else 'NO')))
    a = results['allreduce']
    out.append(('ring all-reduce over %d logical devices >= 50%% of copy bandwidth '
                '(memory traffic)' % a['devices'], '%.2f of copy' % a['ring_vs_copy'],
                'yes' if a['ring_vs_copy'] >= 0.5 else 'NO'))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--out', default=os.path.join(os.path.dirname(__file__), 'results_gpu'))
    ap.add_argument('--repeat', type=int, default=20)
    ap.add_argument('--batch', type=int, default=32)
    ap.add_argument('--quick', action='store_true', help='batch 4, 3 repeats (smoke test)')
    ap.add_argument('--smoke', action='store_true',
                    help='tiny sizes, 1 repeat: checks the script end to end (CI runs it on '
                         'the strict CuPy stand-in); the figures mean nothing')
    ap.add_argument('--cudnn', action='store_true',
                    help='only the cuDNN section (symgraph.backend.cudnn vs our kernels vs '
                         'PyTorch), to results_cudnn.json / results_cudnn.md')
    args = ap.parse_args(argv)
    shrink, boxes, mbytes = 1, 10000, 64
    if args.quick:
        args.batch, args.repeat = 4, 3
    if args.smoke:
        args.batch, args.repeat, shrink, boxes, mbytes = 2, 1, 16, 300, 1
    if not cuda.available():
        sys.exit('bench_gpu.py needs CuPy and a CUDA GPU')
    cp = cuda.import_cupy()
    torch = _torch()
    props = cp.cuda.runtime.getDeviceProperties(0)
    results = {
        'when': time.strftime('%Y-%m-%d %H:%M'), 'host': platform.node(),
        'device': props['name'].decode() if isinstance(props['name'], bytes) else props['name'],
        'cupy': cp.__version__, 'torch': getattr(torch, '__version__', None),
        'batch': args.batch, 'repeat': args.repeat,
    }
    if args.cudnn:
        results['cudnn'] = bench_cudnn(cp, torch, args.repeat, args.batch, shrink)
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, 'results_cudnn.json'), 'w') as f:
            json.dump(results, f, indent=1)
        text = cudnn_markdown(results['cudnn'], args.batch)
        with open(os.path.join(args.out, 'results_cudnn.md'), 'w') as f:
            f.write(text)
        print(text)
        return results
    results['conv'] = bench_conv(cp, torch, args.repeat, args.batch, shrink)
    results['batchnorm'] = bench_batchnorm(cp, torch, args.repeat, shrink)
    results['nms'] = bench_nms(cp, torch, args.repeat, boxes)
    results['allreduce'] = bench_allreduce(cp, args.repeat, mbytes)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, 'results.json'), 'w') as f:
        json.dump(results, f, indent=1)
    with open(os.path.join(args.out, 'results.md'), 'w') as f:
        f.write(markdown(results))
    print(markdown(results))
    return results


if __name__ == '__main__':
    main()
