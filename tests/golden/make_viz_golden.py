"""Make the visualisation golden data with the real MXNet 1.9.1 (the tests never import it).

Run with the MXNet venv (Python 3.8, numpy < 1.24)::

    MXNET_MKLDNN_ENABLED=0 $MXNET_PYTHON tests/golden/make_viz_golden.py

Writes ``tests/golden/viz/``:

* ``summary.json`` -- per case of ``viz_graphs.SUMMARY_CASES`` (and a few variants with
  other ``line_length``/``positions`` or no shape): the input shapes, the keyword
  arguments given to ``mx.viz.print_summary``, its printed text and the total it printed;
  per case of ``viz_graphs.TOTAL_CASES`` the total only; under ``file:<name>`` the same
  for the two JSON files below as ``mx.sym.load`` reads them.
* ``plot.json`` -- per case of ``PLOT_CASES``: the DOT source of ``mx.viz.plot_network``.
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
    return out


def gen_gluon_resnet():
    net = mx.gluon.model_zoo.vision.resnet18_v1()
    net.initialize()
    net.hybridize()
    net(mx.nd.zeros((1, 3, 224, 224)))
    prefix = os.path.join(OUT, 'resnet18_v1')
    net.export(prefix)
    os.remove(prefix + '-0000.params')


def gen_symbol_resnet():
    viz_graphs.resnet(mx).save(os.path.join(OUT, 'resnet20-symbol.json'))


def gen_file_summaries(out):
    """print_summary of the JSON files as MXNet loads them (the command line's golden)."""
    for fname, shape in (('resnet18_v1-symbol.json', {'data': (1, 3, 224, 224)}),
                         ('resnet20-symbol.json', {'data': (1, 3, 32, 32)})):
        text, total = summary_text(mx.sym.load(os.path.join(OUT, fname)), shape)
        out['file:' + fname] = {'file': fname, 'shape': shape, 'kwargs': {}, 'text': text,
                                'total_params': total}


#: name -> (builder, plot_network keyword arguments); MXNet's DOT source is stored
PLOT_CASES = {
    'mlp': (viz_graphs.mlp, {'shape': {'data': (1, 100)}}),
    'mlp_weights': (viz_graphs.mlp, {'hide_weights': False}),
    'lenet': (viz_graphs.lenet, {'shape': {'data': (1, 1, 28, 28)},
                                 'dtype': {'data': 'float32'}}),
    'resnet20': (viz_graphs.resnet, {'shape': {'data': (1, 3, 32, 32)}}),
}


def gen_plots():
    out = {}
    for name, (fn, kwargs) in PLOT_CASES.items():
        dot = mx.viz.plot_network(fn(mx), **kwargs)
        out[name] = {'builder': fn.__name__, 'kwargs': kwargs, 'source': dot.source}
    with open(os.path.join(OUT, 'plot.json'), 'w') as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write('\n')


def main():
    if not os.path.isdir(OUT):
        os.makedirs(OUT)
    gen_gluon_resnet()
    gen_symbol_resnet()
    out = gen_summaries()
    gen_file_summaries(out)
    with open(os.path.join(OUT, 'summary.json'), 'w') as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write('\n')
    gen_plots()
    for name, d in sorted(out.items()):
        print('%-32s total params %d' % (name, d['total_params']))


if __name__ == '__main__':
    main()
