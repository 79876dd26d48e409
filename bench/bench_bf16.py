"""bfloat16 inference against float32, symgraph and MXNet 1.9.1 in the same run (issue 32).

    python bench/bench_bf16.py                                   # symgraph only
    python bench/bench_bf16.py --mxnet /work/mxvenv/bin/python   # + MXNet's CPU build
    python bench/bench_bf16.py --mxnet ... --threads 2 --rounds 5

Workloads (random weights; the networks are written once against the MXNet 1.x API and
run by both frameworks):

* ``resnet14``: the CIFAR ResNet-14 of bench/bench_cnn.py, inference at batch 64;
* ``resnet50``: the Gluon model zoo's ResNet-50 v1 (224x224), inference at batch 16.

``--conv-route bf16|f32`` holds symgraph's bf16 convolutions to oneDNN's bf16 kernel or
to its float32 kernel on the widened operands (default: as the backend's one-off timing
chooses, ``bf16_conv_widens``; the route taken is printed), for old/new comparisons.

Each is bound once in float32 and once converted by ``amp.convert_model(...,
target_dtype='bfloat16', cast_optional_params=True)`` (bfloat16 weights; MXNet's bf16
lists: Convolution and FullyConnected in bfloat16, what runs either way follows its
input); the figure is the best of ``--rounds``
rounds of ``--repeat`` forward passes (``forward(is_train=False)`` and reading the
output). MXNet runs in a worker process of the other interpreter with its default
oneDNN (MKLDNN) subgraph backend; both get ``--threads`` OpenMP threads. The workloads
alternate between the frameworks measurement by measurement, so that a change in the
machine's load hits both alike: quote the same-run ratios (the median of the back-to-back
pairs is the one to trust on a shared machine).
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import precision_common  # noqa: E402


ROUTE = None        # --conv-route: None (the backend's timed choice), 'bf16' or 'f32'


def convert(mx, sym, arg, aux, shape, rng):
    """MXNet's bf16 AMP conversion with bfloat16 weights."""
    if ROUTE is not None and mx.__name__ == 'symgraph':
        from symgraph.opdef import cpu_backend
        if cpu_backend() is not None:
            cpu_backend().bf16_conv_f32 = ROUTE == 'f32'
    return mx.contrib.amp.convert_model(sym, arg, aux, target_dtype='bfloat16',
                                        cast_optional_params=True)


if __name__ == '__main__':
    if '--conv-route' in sys.argv:
        at = sys.argv.index('--conv-route')
        ROUTE = sys.argv[at + 1]
        if ROUTE not in ('bf16', 'f32'):
            raise SystemExit('--conv-route takes bf16 or f32, not %r' % ROUTE)
        del sys.argv[at:at + 2]
    precision_common.main(__doc__, __file__, 'bfloat16', 'bf16', convert, low=-1.0,
                          worker_modules=('mxnet.contrib.amp',), paired=True)
    if '--worker' not in sys.argv:
        from symgraph.opdef import cpu_backend
        be = cpu_backend()
        route = None if be is None else be.bf16_conv_f32
        print('symgraph bf16 convolutions: %s' % {
            True: "oneDNN's float32 kernel on the widened operands",
            False: "oneDNN's bf16 kernel", None: 'not run on oneDNN'}[route]
              + ('' if ROUTE else ' (the backend\'s timed choice)'))
