"""GPU benchmarks of symgraph's CUDA paths against the libraries they stand in for.

Usage (on a machine with an NVIDIA GPU, CuPy, and ideally PyTorch + torchvision)::

    python bench/bench_gpu.py [--out bench/results_gpu] [--repeat 20] [--quick]

* Convolution forward + backward (im2col/col2im kernels + cuBLAS) on the ResNet-18 layer
  shapes, batch 32, against PyTorch's cuDNN convolution;
* BatchNorm forward + backward in training (fused kernels) against cuDNN through PyTorch;
* NMS of 10,000 clustered boxes: the bitmask kernel alone and ``contrib.nms`` (host sort
  included) against ``torchvision.ops.nms``;
* ring all-reduce of 64 MB per buffer over 4 logical devices on one GPU, against the
  device's copy bandwidth (and NCCL's all-reduce when there are two or more GPUs).

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
