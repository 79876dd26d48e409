"""Leave MXNet through ONNX: an MXNet-written checkpoint -> ONNX -> PyTorch, same outputs.

    python examples/onnx_to_pytorch.py [--prefix PREFIX --epoch N --shape data=2,3,16,16]
                                       [-o model.onnx]

By default it reads the small CNN checkpoint that MXNet 1.9.1 itself wrote
(``tests/golden/data/onnx/cnn-symbol.json`` and ``cnn-0000.params``, made by
``tests/golden/make_onnx_import.py``). It

1. loads the checkpoint with ``mx.model.load_checkpoint`` and runs it here (symgraph, the
   MXNet 1.x API) on a seeded input;
2. exports it with ``mx.onnx.export_model(..., verify=True)``: ``onnx.checker`` and ONNX
   Runtime check the file against that forward before the script goes on;
3. converts the ONNX model to a ``torch.nn.Module`` with ``onnx2torch`` and runs it on the
   same input, and compares.

Step 3 needs ``torch`` and ``onnx2torch`` (``pip install torch onnx2torch``); without them
the script says so and stops after step 2 (exit status 0). The last line is ``pytorch
max abs diff: <d>`` (or ``onnxruntime max abs diff: <d>`` without PyTorch); the exit
status is 1 when a difference passes ``--atol``.
"""
import argparse
import os
import sys

import numpy as np

import symgraph as mx

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_PREFIX = os.path.join(HERE, '..', 'tests', 'golden', 'data', 'onnx', 'cnn')


def parse_shape(text):
    name, _, dims = text.partition('=')
    return name, tuple(int(d) for d in dims.split(','))


def symgraph_forward(sym, args, aux, inputs):
    arrays = dict(args, **{k: mx.nd.array(v) for k, v in inputs.items()})
    exe = sym.bind(mx.cpu(), arrays, aux_states=aux, grad_req='null')
    return [o.asnumpy() for o in exe.forward(is_train=False)]


def pytorch_forward(onnx_file, inputs):
    """The ONNX model as a torch.nn.Module (onnx2torch), run on ``inputs``; None when
    torch or onnx2torch is not installed."""
    try:
        import torch
        from onnx2torch import convert
    except ImportError as e:
        print('PyTorch half skipped: %s (pip install torch onnx2torch)' % e)
        return None
    module = convert(onnx_file).eval()
    with torch.no_grad():
        out = module(*[torch.from_numpy(v) for v in inputs.values()])
    outs = out if isinstance(out, (list, tuple)) else [out]
    print('PyTorch module: %s' % type(module).__name__)
    return [o.numpy() for o in outs]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--prefix', default=DEFAULT_PREFIX, help='checkpoint prefix')
    ap.add_argument('--epoch', type=int, default=0)
    ap.add_argument('--shape', type=parse_shape, action='append',
                    help='NAME=D1,D2,... of each data input (default data=2,3,16,16)')
    ap.add_argument('-o', '--output', default='model.onnx', help='the ONNX file to write')
    ap.add_argument('--atol', type=float, default=1e-4)
    # onnx2torch 1.5 converts operators up to opset 17 (Identity of opset 21 has no
    # converter there): the default exports at 13, the oldest opset mx.onnx writes
    ap.add_argument('--opset', type=int, default=13, help='ONNX opset (default 13)')
    args = ap.parse_args(argv)
    shapes = dict(args.shape or [('data', (2, 3, 16, 16))])

    # 1. the MXNet checkpoint, run by symgraph
    sym, arg_params, aux_params = mx.model.load_checkpoint(args.prefix, args.epoch)
    rng = np.random.RandomState(0)
    inputs = {k: rng.uniform(-1, 1, s).astype(np.float32) for k, s in shapes.items()}
    ref = symgraph_forward(sym, arg_params, aux_params, inputs)
    print('checkpoint %s-%04d: outputs %s' % (os.path.basename(args.prefix), args.epoch,
                                              [r.shape for r in ref]))

    # 2. ONNX, checked by onnx.checker and ONNX Runtime against step 1
    mx.onnx.export_model(sym, [arg_params, aux_params], list(shapes.values()),
                         onnx_file_path=args.output, verify=True,
                         opset_version=args.opset)
    print('exported %s (checked by onnx.checker and ONNX Runtime)' % args.output)

    # 3. PyTorch
    got = pytorch_forward(args.output, inputs)
    if got is None:
        import onnxruntime as ort
        sess = ort.InferenceSession(args.output, providers=['CPUExecutionProvider'])
        got, which = sess.run(None, inputs), 'onnxruntime'
    else:
        which = 'pytorch'
    diff = max(float(np.abs(g - r).max()) for g, r in zip(got, ref))
    print('%s max abs diff: %.3g' % (which, diff))
    return 0 if diff <= args.atol and len(got) == len(ref) else 1


if __name__ == '__main__':
    sys.exit(main())
