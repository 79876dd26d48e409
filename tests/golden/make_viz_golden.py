"""Make the visualisation golden data with the real MXNet 1.9.1 (the tests never import it).

Run with the MXNet venv (Python 3.8, numpy < 1.24)::

    MXNET_MKLDNN_ENABLED=0 /work/mxvenv/bin/python tests/golden/make_viz_golden.py

Writes ``tests/golden/viz/``:

* ``summary.json`` -- per case of ``viz_graphs.SUMMARY_CASES`` (and a few variants with
  other ``line_length``/``positions`` or no shape): the input shapes, the keyword
  arguments given to ``mx.viz.print_summary``, its printed text and the total it printed;
  per case of ``viz_graphs.TOTAL_CASES`` the total only.
* ``resnet18_v1-symbol.json`` -- Gluon's ``model_zoo.vision.resnet18_v1`` hybridized and
  exported by MXNet (the ``.params`` file is deleted; the tests need only the graph).
* ``resnet20-symbol.json`` -- the symbol-API ResNet of ``viz_graphs`` saved by
  ``Symbol.save``.
"""
import contextlib
import io
import json
import os
import sys

os.environ['MXNET_MKLDNN_ENABLED'] = '0'
os.environ.setdefault('MXNET_STORAGE_FALLBACK_LOG_VERBOSE', '0')

import mxnet as mx  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, 'viz')
sys.path.insert(0, HERE)
import viz_graphs  # noqa: E402


def summary_text(sym, shape, **kwargs):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        mx.viz.print_summary(sym, shape=shape, **kwargs)
    text = buf.getvalue()
    totals = [int(line.split(':')[1]) for line in text.splitlines()
              if line.startswith('Total params:')]
    return text, totals[0]


def gen_summaries():
    out = {}
    variants = [(name, fn, shape, {}) for name, (fn, shape) in
                viz_graphs.SUMMARY_CASES.items()]
    variants += [
        ('lenet_narrow', viz_graphs.lenet, {'data': (1, 1, 28, 28)},
         {'line_length': 80, 'positions': [30, 50, 62, 80]}),
        ('mlp_ratios', viz_graphs.mlp, {'data': (1, 100)},
         {'line_length': 100, 'positions': [.5, .7, .8, 1.]}),
        ('lenet_noshape', viz_graphs.lenet, None, {}),
    ]
    for name, fn, shape, kwargs in variants:
        text, total = summary_text(fn(mx), shape, **kwargs)
        out[name] = {'builder': fn.__name__, 'shape': shape, 'kwargs': kwargs,
                     'text': text, 'total_params': total}
    for name, (fn, shape) in viz_graphs.TOTAL_CASES.items():
        _, total = summary_text(fn(mx), shape)
        out[name] = {'builder': fn.__name__, 'shape': shape, 'total_params': total}
    with open(os.path.join(OUT, 'summary.json'), 'w') as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write('\n')
    return out


def gen_gluon_resnet():
    net = mx.gluon.model_zoo.vision.resnet18_v1()
    net.initialize()
    net.hybridize()
    net(mx.nd.zeros((1, 3, 224, 224)))
    prefix = os.path.join(OUT, 'resnet18_v1')
    net.export(prefix)
    os.remove(prefix + '-0000.params')
    sym = mx.sym.load(prefix + '-symbol.json')
    _, outs, _ = sym.infer_shape(data=(1, 3, 224, 224))
    return outs


def gen_symbol_resnet():
    viz_graphs.resnet(mx).save(os.path.join(OUT, 'resnet20-symbol.json'))


def main():
    if not os.path.isdir(OUT):
        os.makedirs(OUT)
    out = gen_summaries()
    for name, d in sorted(out.items()):
        print('%-14s total params %d' % (name, d['total_params']))
    print('resnet18_v1 output shapes', gen_gluon_resnet())
    gen_symbol_resnet()


if __name__ == '__main__':
    main()
