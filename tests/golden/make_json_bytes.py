"""MXNet 1.9.1's exact symbol text for graphs that exercise its JSON writer: the layout
rules (one-line and multi-line containers), string escapes, hidden ``__key__``
attributes, the versions of updated auxiliary states, old-format files upgraded on load,
and a network built in code against the same network loaded from MXNet's file (what
``example/image-classification/common/fit.py`` asserts when training resumes).
Python 3.8 compatible::

    python tests/golden/make_json_bytes.py        # $MXNET_PYTHON or this python

runs itself under ``$MXNET_PYTHON`` when the current interpreter cannot import MXNet, and
writes ``data/json_bytes.json``: ``{case: {"tojson": text, "file": text of save()}}``
plus ``{"legacy/<file>": {"tojson": ...}}`` for every file of ``data/json_legacy`` (its
``json`` text loaded by MXNet and written back). Read by ``tests/symbol/test_json_bytes.py``.
"""
import glob
import json
import os
import subprocess
import sys
import tempfile

try:
    import mxnet as mx
except ImportError:
    mx = None

HERE = os.path.dirname(os.path.abspath(__file__))


def shared_aux(mx):
    """Two BatchNorms updating the same moving statistics, then read by a third op."""
    x = mx.sym.var('data')
    mean, var = mx.sym.var('mean'), mx.sym.var('var')
    a = mx.sym.BatchNorm(x, moving_mean=mean, moving_var=var, name='bn1')
    b = mx.sym.BatchNorm(a, moving_mean=mean, moving_var=var, fix_gamma=False, name='bn2')
    return mx.sym.broadcast_add(b, mx.sym.reshape(mean, shape=(1, -1, 1, 1)), name='out')


def escapes(mx):
    """Attribute values with quotes, backslashes, control and non-ASCII characters."""
    x = mx.sym.var('x', attr={'__note__': 'say "hi"\n\tpath C:\\dir \u00e9\u4e2d'})
    return mx.sym.Activation(x, act_type='relu', name='act',
                             attr={'__tag__': 'caf\u00e9', '__q__': "it's"})


def many_inputs(mx):
    """More than ten argument nodes and more than ten heads: multi-line arrays."""
    xs = [mx.sym.var('x%d' % i) for i in range(12)]
    total = mx.sym.add_n(*xs, name='sum')
    return mx.sym.Group([total] + [x * 2 for x in xs])


def hidden_keys(mx):
    """Hidden attributes given in every way: Variable keywords, attr=, AttrScope."""
    x = mx.sym.var('data', shape=(2, 3), dtype='float16', lr_mult=0.5, wd_mult=0,
                   init=mx.init.Xavier(magnitude=2.0))
    with mx.AttrScope(ctx_group='dev1', __mirror_stage__='True'):
        w = mx.sym.var('w', attr={'lr_mult': '2'})
        fc = mx.sym.FullyConnected(x, weight=w, num_hidden=4, no_bias=True, name='fc',
                                   attr={'wd_mult': '0.1', '__custom__': '1'})
    return mx.sym.softmax(fc, axis=-1, name='sm')


def loss_and_slices(mx):
    """Outputs of several kinds in one Group: hidden outputs in node_row_ptr."""
    x = mx.sym.var('data')
    p = mx.sym.Pooling(x, kernel=(2, 2), pool_type='max', name='pool')
    a = mx.sym.Pooling(x, kernel=(2, 2), pool_type='avg', name='avgpool')
    d = mx.sym.Dropout(p, p=0.3, name='drop')
    parts = mx.sym.SliceChannel(d, num_outputs=2, axis=1, name='slice')
    return mx.sym.Group([mx.sym.make_loss(parts[0], name='nll'),
                         mx.sym.MakeLoss(parts[1], name='ml'), a])


def lenet(mx):
    """LeNet as MXNet's example/image-classification/symbols/lenet.py writes it."""
    data = mx.symbol.Variable('data')
    conv1 = mx.symbol.Convolution(data=data, kernel=(5, 5), num_filter=20)
    tanh1 = mx.symbol.Activation(data=conv1, act_type="tanh")
    pool1 = mx.symbol.Pooling(data=tanh1, pool_type="max", kernel=(2, 2), stride=(2, 2))
    conv2 = mx.symbol.Convolution(data=pool1, kernel=(5, 5), num_filter=50)
    tanh2 = mx.symbol.Activation(data=conv2, act_type="tanh")
    pool2 = mx.symbol.Pooling(data=tanh2, pool_type="max", kernel=(2, 2), stride=(2, 2))
    flatten = mx.symbol.flatten(data=pool2)
    fc1 = mx.symbol.FullyConnected(data=flatten, num_hidden=500)
    tanh3 = mx.symbol.Activation(data=fc1, act_type="tanh")
    fc2 = mx.symbol.FullyConnected(data=tanh3, num_hidden=10)
    return mx.symbol.SoftmaxOutput(data=fc2, name='softmax')


def resnet_unit(mx):
    """A residual unit with BatchNorm and a bottleneck, as the examples' resnet.py."""
    data = mx.sym.Variable(name='data')
    bn = mx.sym.BatchNorm(data=data, fix_gamma=True, eps=2e-5, momentum=0.9, name='bn_data')
    bn1 = mx.sym.BatchNorm(data=bn, fix_gamma=False, eps=2e-5, momentum=0.9, name='bn1')
    act1 = mx.sym.Activation(data=bn1, act_type='relu', name='relu1')
    conv1 = mx.sym.Convolution(data=act1, num_filter=16, kernel=(1, 1), stride=(1, 1),
                               pad=(0, 0), no_bias=True, workspace=256, name='conv1')
    bn2 = mx.sym.BatchNorm(data=conv1, fix_gamma=False, eps=2e-5, momentum=0.9, name='bn2')
    act2 = mx.sym.Activation(data=bn2, act_type='relu', name='relu2')
    conv2 = mx.sym.Convolution(data=act2, num_filter=16, kernel=(3, 3), stride=(1, 1),
                               pad=(1, 1), no_bias=True, workspace=256, name='conv2')
    sc = mx.sym.Convolution(data=act1, num_filter=16, kernel=(1, 1), stride=(1, 1),
                            no_bias=True, workspace=256, name='sc')
    body = conv2 + sc
    pool = mx.sym.Pooling(data=body, global_pool=True, kernel=(7, 7), pool_type='avg',
                          name='pool1')
    flat = mx.sym.Flatten(data=pool)
    fc = mx.sym.FullyConnected(data=flat, num_hidden=10, name='fc1')
    return mx.sym.SoftmaxOutput(data=fc, name='softmax')


CASES = {'shared_aux': shared_aux, 'escapes': escapes, 'many_inputs': many_inputs,
         'hidden_keys': hidden_keys, 'loss_and_slices': loss_and_slices, 'lenet': lenet,
         'resnet_unit': resnet_unit}


def build(mx, name):
    """Build case ``name`` with fresh automatic-name counters."""
    with mx.name.NameManager():
        return CASES[name](mx)


def main():
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in sorted(CASES):
            sym = build(mx, name)
            path = os.path.join(tmp, name + '-symbol.json')
            sym.save(path)
            with open(path, 'rb') as f:
                out[name] = {'tojson': sym.tojson(), 'file': f.read().decode('utf-8')}
    for path in sorted(glob.glob(os.path.join(HERE, 'data', 'json_legacy', '*.json'))):
        with open(path) as f:
            doc = json.load(f)
        if not isinstance(doc, dict) or 'json' not in doc:
            continue
        text = doc['json'] if isinstance(doc['json'], str) else json.dumps(doc['json'])
        try:
            out['legacy/' + os.path.basename(path)] = {'tojson': mx.sym.load_json(text).tojson()}
        except mx.base.MXNetError:
            continue
    dest = os.path.join(HERE, 'data', 'json_bytes.json')
    with open(dest, 'w') as f:
        json.dump({'mxnet_version': mx.__version__, 'cases': out}, f, indent=0,
                  sort_keys=True)
    print('wrote %s: %d graphs' % (dest, len(out)))


if __name__ == '__main__':
    if mx is None:
        py = os.environ.get('MXNET_PYTHON')
        if not py:
            sys.exit('make_json_bytes.py: mxnet is not importable here; set MXNET_PYTHON '
                     'to a Python with MXNet 1.9.1')
        sys.exit(subprocess.call([py] + sys.argv))
    main()
