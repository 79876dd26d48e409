"""Golden values of channels-last convolution and pooling (layouts NWC, NHWC, NDHWC).

Run with MXNet 1.9.1 (Python 3.8 compatible)::

    MXNET_MKLDNN_ENABLED=0 $MXNET_PYTHON tests/golden/make_channels_last.py

writes ``tests/golden/data/channels_last.npz`` and ``channels_last.json``.

MXNet 1.9.1's CPU build infers channels-last convolution shapes (weight (num_filter,
*kernel, C / num_group)) but refuses to run them (GPU only; NWC is not even a valid
Convolution layout). So each convolution case records MXNet's own shape inference for
the channels-last symbol (where MXNet takes the layout) and the values MXNet computes for
the same case channels first (data and weight with the channel axis moved to position 1),
moved back: forward output and the data, weight and bias gradients for a random head
gradient. Pooling runs channels last on CPU in MXNet: its cases are MXNet's own
channels-last forward and data gradient. The JSON file holds the case parameters, the
shapes and the symbol JSON of a channels-last Gluon network (``export``'s graph).
"""
import json
import os

import numpy as np
import mxnet as mx
from mxnet.gluon import nn

HERE = os.path.dirname(os.path.abspath(__file__))

CONV = [
    # (name, layout, data shape (channels last), params)
    ('nwc_basic', 'NWC', (2, 9, 4), dict(kernel=(3,), num_filter=5)),
    ('nwc_stride_pad_group', 'NWC', (2, 10, 4),
     dict(kernel=(3,), num_filter=6, stride=(2,), pad=(1,), num_group=2)),
    ('nhwc_basic', 'NHWC', (2, 6, 7, 3), dict(kernel=(3, 3), num_filter=4)),
    ('nhwc_stride_pad_dilate', 'NHWC', (2, 9, 8, 3),
     dict(kernel=(3, 2), num_filter=5, stride=(2, 1), pad=(1, 2), dilate=(2, 1))),
    ('nhwc_group_nobias', 'NHWC', (1, 6, 6, 4),
     dict(kernel=(2, 3), num_filter=6, num_group=2, no_bias=True)),
    ('ndhwc_basic', 'NDHWC', (2, 4, 5, 6, 3), dict(kernel=(2, 3, 3), num_filter=4)),
    ('ndhwc_stride_pad_group', 'NDHWC', (1, 5, 6, 5, 4),
     dict(kernel=(3, 3, 2), num_filter=4, stride=(2, 2, 1), pad=(1, 1, 0), num_group=2)),
]

POOL = [
    ('nwc_max', 'NWC', (2, 9, 3), dict(kernel=(3,), stride=(2,), pool_type='max')),
    ('nwc_avg_pad', 'NWC', (2, 8, 3),
     dict(kernel=(3,), stride=(2,), pad=(1,), pool_type='avg', count_include_pad=False)),
    ('nwc_global_avg', 'NWC', (2, 7, 3), dict(kernel=(1,), global_pool=True, pool_type='avg')),
    ('nhwc_max_full', 'NHWC', (2, 7, 6, 3),
     dict(kernel=(3, 3), stride=(2, 2), pool_type='max', pooling_convention='full')),
    ('nhwc_avg_pad', 'NHWC', (2, 6, 7, 4),
     dict(kernel=(3, 2), stride=(2, 2), pad=(1, 1), pool_type='avg')),
    ('nhwc_sum', 'NHWC', (1, 5, 6, 2), dict(kernel=(2, 2), stride=(1, 2), pool_type='sum')),
    ('nhwc_lp2', 'NHWC', (1, 6, 5, 3),
     dict(kernel=(2, 2), stride=(2, 2), pool_type='lp', p_value=2)),
    ('nhwc_global_max', 'NHWC', (2, 4, 5, 3),
     dict(kernel=(1, 1), global_pool=True, pool_type='max')),
    ('ndhwc_max', 'NDHWC', (1, 4, 5, 6, 2), dict(kernel=(2, 2, 3), stride=(2, 2, 2))),
    ('ndhwc_avg_full', 'NDHWC', (2, 5, 4, 5, 3),
     dict(kernel=(2, 2, 2), stride=(2, 2, 2), pool_type='avg', pooling_convention='full',
          count_include_pad=False)),
]


def _first(a):
    return np.moveaxis(a, -1, 1)


def _last(a):
    return np.moveaxis(a, 1, -1)


def _run(sym, args, dy):
    """Forward and every argument's gradient of ``sym`` bound on ``args`` (dict)."""
    grads = {k: mx.nd.zeros(v.shape) for k, v in args.items()}
    exe = sym.bind(mx.cpu(), {k: mx.nd.array(v) for k, v in args.items()}, args_grad=grads)
    y = exe.forward(is_train=True)[0].asnumpy()
    exe.backward(mx.nd.array(dy))
    return y, {k: g.asnumpy() for k, g in grads.items()}


def conv_case(rng, name, layout, dshape, params, arrays, meta):
    no_bias = params.get('no_bias', False)
    data = mx.sym.var('data')
    try:
        last = mx.sym.Convolution(data, name='conv', layout=layout, **params)
        arg_shapes, out_shapes, _ = last.infer_shape(data=dshape)
        mx_shapes = {'args': [list(s) for s in arg_shapes], 'out': list(out_shapes[0])}
    except mx.base.MXNetError as e:             # NWC: not one of MXNet's layouts
        mx_shapes = {'refused': str(e).splitlines()[0]}
    first = mx.sym.Convolution(data, name='conv', **params)
    fshape = (dshape[0], dshape[-1]) + tuple(dshape[1:-1])
    f_args, f_outs, _ = first.infer_shape(data=fshape)
    x = rng.uniform(-1, 1, fshape).astype(np.float32)
    w = rng.uniform(-1, 1, f_args[1]).astype(np.float32)
    args = {'data': x, 'conv_weight': w}
    if not no_bias:
        args['conv_bias'] = rng.uniform(-1, 1, f_args[2]).astype(np.float32)
    dy = rng.uniform(-1, 1, f_outs[0]).astype(np.float32)
    y, grads = _run(first, args, dy)
    pre = 'conv_%s_' % name
    arrays[pre + 'x'] = _last(x)
    arrays[pre + 'w'] = _last(w)
    arrays[pre + 'dy'] = _last(dy)
    arrays[pre + 'y'] = _last(y)
    arrays[pre + 'dx'] = _last(grads['data'])
    arrays[pre + 'dw'] = _last(grads['conv_weight'])
    if not no_bias:
        arrays[pre + 'b'] = args['conv_bias']
        arrays[pre + 'db'] = grads['conv_bias']
    meta['conv'].append({'name': name, 'layout': layout, 'data': list(dshape),
                         'params': {k: list(v) if isinstance(v, tuple) else v
                                    for k, v in params.items()},
                         'mxnet_shapes': mx_shapes})


def pool_case(rng, name, layout, dshape, params, arrays, meta):
    sym = mx.sym.Pooling(mx.sym.var('data'), layout=layout, name='pool', **params)
    x = rng.uniform(-1, 1, dshape).astype(np.float32)
    if params.get('pool_type') == 'lp':
        x = np.abs(x) + 0.1
    oshape = sym.infer_shape(data=dshape)[1][0]
    dy = rng.uniform(-1, 1, oshape).astype(np.float32)
    y, grads = _run(sym, {'data': x}, dy)
    pre = 'pool_%s_' % name
    arrays[pre + 'x'] = x
    arrays[pre + 'dy'] = dy
    arrays[pre + 'y'] = y
    arrays[pre + 'dx'] = grads['data']
    meta['pool'].append({'name': name, 'layout': layout, 'data': list(dshape),
                         'params': {k: list(v) if isinstance(v, tuple) else v
                                    for k, v in params.items()}})


def gluon_net():
    """A channels-last Gluon network: its symbol is what ``export`` writes."""
    net = nn.HybridSequential(prefix='cl_')
    with net.name_scope():
        net.add(nn.Conv2D(8, 3, padding=1, layout='NHWC', in_channels=3, activation='relu'))
        net.add(nn.MaxPool2D(2, layout='NHWC'))
        net.add(nn.Conv2D(4, (1, 3), strides=(1, 2), layout='NHWC', in_channels=8,
                          use_bias=False))
        net.add(nn.AvgPool2D(2, layout='NHWC', count_include_pad=False))
        net.add(nn.GlobalMaxPool2D(layout='NHWC'))
        net.add(nn.Flatten())
        net.add(nn.Dense(3, in_units=4))
    return net


def main():
    rng = np.random.RandomState(28)
    arrays, meta = {}, {'mxnet': mx.__version__, 'conv': [], 'pool': []}
    for name, layout, dshape, params in CONV:
        conv_case(rng, name, layout, dshape, params, arrays, meta)
    for name, layout, dshape, params in POOL:
        pool_case(rng, name, layout, dshape, params, arrays, meta)
    net = gluon_net()
    sym = net(mx.sym.var('data'))
    meta['gluon_symbol_json'] = sym.tojson()
    meta['gluon_params'] = {k: list(v.shape) for k, v in net.collect_params().items()}
    out = os.path.join(HERE, 'data', 'channels_last')
    np.savez_compressed(out + '.npz', **arrays)
    with open(out + '.json', 'w') as f:
        json.dump(meta, f, indent=1, sort_keys=True)
    print('wrote %s.npz (%d arrays) and .json' % (out, len(arrays)))


if __name__ == '__main__':
    main()
