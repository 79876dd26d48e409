"""Quantize a trained CIFAR-style network to int8 with ``mx.contrib.quantization``.

    python examples/quantize.py [--epochs 3] [--batch 64]

Generated data: 32x32 RGB images of 10 classes, each class a smooth random template
(low-frequency patterns) plus noise, pixel values in [0, 1). The network is a small
CIFAR-style ResNet (conv-bn-relu stem, two residual stages, global average pooling, a
dense layer), trained with ``Module.fit`` for a few epochs. It is then quantized as
MXNet's example/quantization/imagenet_gen_qsym_mkldnn.py does:
``quantize_model_mkldnn`` (the oneDNN fusion into ``_sg_mkldnn_conv`` nodes, int8 layers,
the weights quantized offline) with ``calib_mode='naive'`` (the layers' min and max on the
calibration batches) and ``calib_mode='entropy'`` (KL-divergence thresholds).

The script prints, for float32 and each int8 model, the test accuracy, the top-1
agreement with float32 and the milliseconds per batch; it exits with status 1 if an int8
model's accuracy is more than 2 points below float32's. Replace ``import symgraph as mx``
by ``import mxnet as mx`` and it runs the same way under MXNet 1.9.1.
"""
import argparse
import logging
import sys
import time

import numpy as np

import symgraph as mx

CLASSES = 10
SHAPE = (3, 32, 32)


def make_data(rng, n, templates):
    labels = rng.randint(0, CLASSES, n)
    x = templates[labels] + rng.normal(0, 0.6, (n,) + SHAPE)
    return np.clip(x, 0, 0.999).astype(np.float32), labels.astype(np.float32)


def smooth_templates(rng):
    coarse = rng.uniform(0, 1, (CLASSES, 3, 4, 4))
    return np.kron(coarse, np.ones((1, 1, 8, 8)))


def network():
    def conv_bn(x, width, stride, name, relu=True):
        x = mx.sym.Convolution(x, kernel=(3, 3), stride=(stride, stride), pad=(1, 1),
                               num_filter=width, no_bias=True, name=name + '_conv')
        x = mx.sym.BatchNorm(x, fix_gamma=False, eps=2e-5, name=name + '_bn')
        return mx.sym.Activation(x, act_type='relu', name=name + '_relu') if relu else x

    x = conv_bn(mx.sym.var('data'), 16, 1, 'stem')
    for stage, width in enumerate((16, 32)):
        stride = 1 if stage == 0 else 2
        h = conv_bn(conv_bn(x, width, stride, 's%d_a' % stage), width, 1, 's%d_b' % stage,
                    relu=False)
        if stage:
            x = conv_bn(x, width, stride, 's%d_proj' % stage, relu=False)
        x = mx.sym.Activation(mx.sym.elemwise_add(h, x, name='s%d_add' % stage),
                              act_type='relu', name='s%d_out' % stage)
    x = mx.sym.Pooling(x, global_pool=True, kernel=(1, 1), pool_type='avg', name='pool')
    x = mx.sym.FullyConnected(mx.sym.Flatten(x, name='flat'), num_hidden=CLASSES, name='fc')
    return mx.sym.SoftmaxOutput(x, name='softmax')


def evaluate(sym, arg, aux, x, batch):
    """(predicted classes, ms per batch) of ``sym`` over ``x``."""
    mod = mx.mod.Module(sym, label_names=None, context=mx.cpu())
    mod.bind(for_training=False, data_shapes=[('data', (batch,) + SHAPE)])
    mod.set_params(arg, aux)
    preds, times = [], []
    for i in range(0, len(x) - batch + 1, batch):
        t = time.perf_counter()
        mod.forward(mx.io.DataBatch([mx.nd.array(x[i:i + batch])]), is_train=False)
        out = mod.get_outputs()[0].asnumpy()
        times.append(time.perf_counter() - t)
        preds.append(out.argmax(1))
    return np.concatenate(preds), 1e3 * float(np.median(times[1:] or times))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--epochs', type=int, default=3)
    ap.add_argument('--batch', type=int, default=64)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format='%(message)s')
    rng = np.random.RandomState(0)
    templates = smooth_templates(rng)
    xtr, ytr = make_data(rng, 1536, templates)
    xte, yte = make_data(rng, 512, templates)

    sym = network()
    mod = mx.mod.Module(sym, context=mx.cpu())
    train = mx.io.NDArrayIter(xtr, ytr, args.batch, shuffle=True)
    mx.random.seed(0)
    mod.fit(train, num_epoch=args.epochs, optimizer='sgd',
            optimizer_params={'learning_rate': 0.1, 'momentum': 0.9},
            initializer=mx.init.Xavier(magnitude=2.0))
    arg, aux = mod.get_params()
    fp32_sym = sym.get_internals()['fc_output']

    results = {}
    pred, ms = evaluate(fp32_sym, arg, aux, xte, args.batch)
    results['float32'] = (pred, ms)
    for mode in ('naive', 'entropy'):
        calib = mx.io.NDArrayIter(xtr[:4 * args.batch], batch_size=args.batch)
        qsym, qarg, qaux = mx.contrib.quantization.quantize_model_mkldnn(
            fp32_sym, arg, aux, label_names=None, ctx=mx.cpu(), calib_mode=mode,
            calib_data=calib, num_calib_examples=4 * args.batch, quantized_dtype='auto')
        results['int8 ' + mode] = evaluate(qsym, qarg, qaux, xte, args.batch)

    base = results['float32'][0]
    n = len(base)
    print('%-14s %9s %10s %9s' % ('model', 'accuracy', 'agreement', 'ms/batch'))
    ok = True
    acc0 = float(np.mean(base == yte[:n]))
    for name, (pred, ms) in results.items():
        acc = float(np.mean(pred == yte[:n]))
        print('%-14s %8.1f%% %9.1f%% %9.1f' % (name, 100 * acc,
                                              100 * float(np.mean(pred == base)), ms))
        ok = ok and acc >= acc0 - 0.02
    sys.exit(0 if ok else 1)


if __name__ == '__main__':
    main()
