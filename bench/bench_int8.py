"""int8 inference against float32, symgraph and MXNet 1.9.1 in the same run (issue 32).

    python bench/bench_int8.py                                   # symgraph only
    python bench/bench_int8.py --mxnet /work/mxvenv/bin/python   # + MXNet's CPU build
    python bench/bench_int8.py --mxnet ... --threads 2 --rounds 3 --nets resnet14

Workloads (random weights; the networks are written once against the MXNet 1.x API and
run by both frameworks, as in bench/bench_bf16.py):

* ``resnet14``: the CIFAR ResNet-14 of bench/bench_cnn.py, inference at batch 64;
* ``resnet50``: the Gluon model zoo's ResNet-50 v1 (224x224), inference at batch 16.

Each is bound once in float32 and once quantized by ``mx.contrib.quantization.
quantize_model_mkldnn`` (oneDNN fusion, ``calib_mode='naive'`` on two batches of data in
[0, 1), ``quantized_dtype='auto'``): the fused int8 graph MXNet's
example/quantization/imagenet_gen_qsym_mkldnn.py writes. The figure is the best of
``--rounds`` rounds of ``--repeat`` forward passes; the workloads alternate between the
frameworks round by round: quote the same-run ratios. The machine may be shared: say so.
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import precision_common  # noqa: E402


def convert(mx, sym, arg, aux, shape, rng):
    """quantize_model_mkldnn, naive calibration on two batches of data in [0, 1)."""
    calib = rng.uniform(0, 1, (2 * shape[0],) + shape[1:]).astype(np.float32)
    it = mx.io.NDArrayIter(calib, batch_size=shape[0])
    return mx.contrib.quantization.quantize_model_mkldnn(
        sym, arg, aux, label_names=None, ctx=mx.cpu(), calib_mode='naive',
        calib_data=it, num_calib_examples=2 * shape[0], quantized_dtype='auto',
        excluded_op_names=['softmax'])


if __name__ == '__main__':
    precision_common.main(__doc__, __file__, 'int8', 'int8', convert, low=0.0,
                          worker_modules=('mxnet.contrib.quantization',), paired=False)
