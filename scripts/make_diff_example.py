"""Writes docs/diff_example.svg (and prints its text): two versions of a small CNN
compared with ``mx.viz.diff``. Version 2 was built after another layer had been created
in the session (every automatic name shifted), puts a BatchNorm before the second
convolution and gives it 32 filters; its trained parameters are version 1's where the
shapes allow, but for the classifier's bias. tests/graph/test_diff.py checks that the committed file is what this script makes.

    python scripts/make_diff_example.py [OUTPUT.svg]
"""
import os
import sys

import numpy as np

import symgraph as mx

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT = os.path.join(HERE, '..', 'docs', 'diff_example.svg')


def cnn(filters=16, batchnorm=False, shift=0):
    """The network, with fresh automatic names (``shift`` layers made before it)."""
    with mx.name.NameManager():
        for _ in range(shift):
            mx.sym.Convolution(mx.sym.var('x'), kernel=(1, 1), num_filter=1)
        x = mx.sym.var('data')
        x = mx.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=8)
        x = mx.sym.Activation(x, act_type='relu')
        if batchnorm:
            x = mx.sym.BatchNorm(x)
        x = mx.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=filters)
        x = mx.sym.Activation(x, act_type='relu')
        x = mx.sym.Pooling(x, global_pool=True, kernel=(1, 1), pool_type='avg')
        x = mx.sym.FullyConnected(mx.sym.flatten(x), num_hidden=10)
        return mx.sym.SoftmaxOutput(x, name='softmax')


def params(sym, seed, shape=(1, 3, 8, 8)):
    """{name: array} of the arguments but data and label, seeded."""
    rng = np.random.RandomState(seed)
    shapes = dict(zip(sym.list_arguments(), sym.infer_shape(data=shape)[0]))
    return {k: rng.uniform(-1, 1, s).astype(np.float32) for k, s in sorted(shapes.items())
            if k not in ('data', 'softmax_label')}


def example():
    """The diff of version 1 and version 2 (a DiffResult)."""
    a, b = cnn(), cnn(filters=32, batchnorm=True, shift=1)
    pa = params(a, 0)
    pb = params(b, 1)
    # version 2 kept version 1's trained values where the shapes allow (its first layer
    # renamed), and its classifier bias moved by 0.25
    renamed = {'convolution1_weight': 'convolution0_weight',
               'convolution1_bias': 'convolution0_bias'}
    for name_b in pb:
        name_a = renamed.get(name_b, name_b)
        if name_a in pa and pa[name_a].shape == pb[name_b].shape:
            pb[name_b] = pa[name_a].copy()
    pb['fullyconnected0_bias'] += 0.25
    return mx.viz.diff(a, b, pa, pb)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    out = argv[0] if argv else DEFAULT
    d = example()
    print(d.text())
    d.save_svg(out, title='diff_example: version 1 -> version 2')
    print('wrote %s' % out)


if __name__ == '__main__':
    main()
