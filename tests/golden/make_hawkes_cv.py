"""Golden data, from MXNet 1.9.1, of ``_contrib_hawkesll`` (ops/point_process.py), the
legacy NDArray functions ``_copyto``, ``_set_value``, ``_onehot_encode`` (ops/legacy.py)
and the OpenCV operators ``_cvimdecode``, ``_cvimread``, ``_cvimresize``,
``_cvcopyMakeBorder`` (ops/image_io.py):

    cd tests/golden
    MXNET_MKLDNN_ENABLED=0 $MXNET_PYTHON make_hawkes_cv.py

writes ``data/hawkes_cv.npz``: per case ``<case>/attrs`` (JSON of the call), ``<case>/in<i>``
the inputs, ``<case>/out<i>`` the outputs and, for hawkesll, ``<case>/head`` (the head
gradient of ``output``; MXNet ignores one of ``out_state``) and ``<case>/grad<i>`` the
gradients of lda, alpha and beta. The decoders read the files of ``data/image_io/`` (made by
``make_image_files.py``). ``json_<op>/attrs`` hold MXNet-written graphs of the operators
that compose in MXNet's ``mx.sym``. The suite never imports mxnet.
"""
import json
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
IMAGES = os.path.join(HERE, 'data', 'image_io')
R = np.random.RandomState(15)


def _hawkes_inputs(N, K, T, dtype, vlen, max_time):
    return [R.uniform(0.5, 2.0, (N, K)).astype(dtype), R.uniform(0.1, 0.9, K).astype(dtype),
            R.uniform(0.5, 2.5, K).astype(dtype), R.uniform(0.0, 1.5, (N, K)).astype(dtype),
            R.uniform(0.05, 1.0, (N, T)).astype(dtype),
            R.randint(0, K, (N, T)).astype(np.int32), np.array(vlen, dtype),
            np.array(max_time, dtype)]


def _doc_inputs():
    N = 4
    return [np.tile(np.array([1.5, 2.0, 3.0], np.float32), (N, 1)),
            np.array([0.2, 0.3, 0.4], np.float32), np.array([1.0, 2.0, 3.0], np.float32),
            np.zeros((N, 3), np.float32),
            np.array([[6, 7, 8, 9], [1, 2, 3, 4], [3, 4, 5, 6], [8, 9, 10, 11]], np.float32),
            np.zeros((N, 4), np.int32), np.array([1, 2, 3, 4], np.float32),
            np.full(N, 100.0, np.float32)]


HAWKES = {
    'hawkes_f32': _hawkes_inputs(3, 2, 6, 'float32', [3, 6, 0], [5.0, 6.5, 2.0]),
    'hawkes_f32_frac_len': _hawkes_inputs(2, 3, 5, 'float32', [2.5, 4.2], [4.0, 5.0]),
    'hawkes_f64': _hawkes_inputs(2, 3, 7, 'float64', [7, 4], [8.0, 5.0]),
    'hawkes_doc': _doc_inputs(),
}

_U8 = R.randint(0, 256, (10, 13, 3)).astype(np.uint8)
_F32 = R.uniform(-2, 2, (10, 13, 3)).astype(np.float32)
_U8_1 = R.randint(0, 256, (6, 5, 1)).astype(np.uint8)
RESIZE = {}
for _name, _x in (('u8', _U8), ('f32', _F32), ('u8c1', _U8_1), ('f64', _F32.astype('float64'))):
    for _interp in (0, 1):
        for _w, _h in ((7, 5), (20, 17), (13, 4), (6, 23)):
            RESIZE['resize_%s_i%d_%dx%d' % (_name, _interp, _w, _h)] = (
                _x, {'w': _w, 'h': _h, 'interp': _interp})
# int32 images: OpenCV 3.4.2's resize has no kernel for them ("func != 0"), refused here too

_SMALL = R.randint(0, 256, (5, 6, 3)).astype(np.uint8)
BORDER = {}
for _t in (0, 1, 2, 3, 4):
    BORDER['border_u8_t%d' % _t] = (_SMALL, {'top': 2, 'bot': 1, 'left': 3, 'right': 2,
                                             'type': _t, 'value': 7.0})
    BORDER['border_u8_t%d_wide' % _t] = (_SMALL, {'top': 6, 'bot': 11, 'left': 7, 'right': 13,
                                                  'type': _t})
BORDER['border_u8_values'] = (_SMALL, {'top': 1, 'bot': 2, 'left': 2, 'right': 1,
                                       'values': (10.0, 300.0, -5.6)})
BORDER['border_u8_value_round'] = (_SMALL, {'top': 1, 'bot': 1, 'left': 1, 'right': 1,
                                            'value': 2.5})
BORDER['border_f32_values4'] = (_F32[:4, :5, :2], {'top': 1, 'bot': 0, 'left': 0, 'right': 2,
                                                   'values': (1.5, -2.25, 9.0, 4.0)})
BORDER['border_f64_t2'] = (_F32[:4, :5].astype('float64'),
                           {'top': 3, 'bot': 2, 'left': 1, 'right': 4, 'type': 2})
BORDER['border_i32_value'] = (R.randint(-9, 9, (3, 4, 1)).astype(np.int32),
                              {'top': 2, 'bot': 2, 'left': 1, 'right': 0, 'value': -3.7})

DECODE = {}
for _f in sorted(os.listdir(IMAGES)) if os.path.isdir(IMAGES) else ():
    for _flag in (0, 1):
        for _rgb in (True, False):
            DECODE['decode_%s_f%d_%s' % (_f.replace('.', '_'), _flag, 'rgb' if _rgb else 'bgr')] \
                = (_f, {'flag': _flag, 'to_rgb': _rgb})


def main():
    import mxnet as mx
    from mxnet import nd
    assert mx.__version__ == '1.9.1'
    out = {}

    def put(name, attrs, inputs, outputs):
        out[name + '/attrs'] = np.array(json.dumps(attrs))
        for i, a in enumerate(inputs):
            out['%s/in%d' % (name, i)] = a
        for i, a in enumerate(outputs):
            out['%s/out%d' % (name, i)] = a

    for name, ins in HAWKES.items():
        arrs = [nd.array(a, dtype=a.dtype) for a in ins]
        for a in arrs[:3]:
            a.attach_grad()
        head = R.uniform(-1, 1, ins[0].shape[0]).astype(ins[0].dtype)
        with mx.autograd.record():
            ll, st = nd.contrib.hawkesll(*arrs)
        ll.backward(nd.array(head, dtype=head.dtype))
        put(name, {}, ins, [ll.asnumpy(), st.asnumpy()])
        out[name + '/head'] = head
        for i in range(3):
            out['%s/grad%d' % (name, i)] = arrs[i].grad.asnumpy()

    # legacy NDArray functions (as NDArray.copyto, onehot_encode and sparse x[:] = v call them)
    x = np.array([[1.5, -2.7], [3.2, 255.9]], np.float32)
    for dt in ('float32', 'float64', 'int32', 'float16', 'uint8'):
        dst = nd.zeros((2, 2), dtype=dt)
        nd._internal._copyto(nd.array(x), out=dst)
        put('copyto_%s' % dt, {'dtype': dt}, [x], [dst.asnumpy()])
        dst = nd.zeros((2, 3), dtype=dt)
        nd._internal._set_value(2.75, out=dst)
        put('set_value_%s' % dt, {'src': 2.75, 'dtype': dt, 'shape': [2, 3]}, [], [dst.asnumpy()])
    idx = np.array([1.7, -1.0, 5.0, 0.0, 3.99], np.float32)
    dst = nd.ones((5, 4))
    res = nd.onehot_encode(nd.array(idx), dst)
    put('onehot_encode', {}, [idx, np.ones((5, 4), np.float32)], [res.asnumpy()])

    for name, (x, attrs) in RESIZE.items():
        put(name, attrs, [x], [nd._internal._cvimresize(nd.array(x, dtype=x.dtype),
                                                        **attrs).asnumpy()])
    for name, (x, attrs) in BORDER.items():
        put(name, attrs, [x], [mx.image.copyMakeBorder(nd.array(x, dtype=x.dtype),
                                                       **attrs).asnumpy()])
    for name, (f, attrs) in DECODE.items():
        with open(os.path.join(IMAGES, f), 'rb') as fh:
            data = fh.read()
        img = mx.image.imdecode(data, **attrs)
        put(name, dict(attrs, file=f), [np.frombuffer(data, np.uint8)], [img.asnumpy()])
        if f == 'photo.jpg':
            img = mx.image.imread(os.path.join(IMAGES, f), **attrs)
            put(name.replace('decode', 'imread'), dict(attrs, file=f), [], [img.asnumpy()])
    # MXNet-written graphs of the operators that compose in MXNet's mx.sym (the _cv* ones only
    # by the keyword data=: MXNet's generated 'src' keyword fails to compose)
    names = ['lda', 'alpha', 'beta', 'state', 'lags', 'marks', 'valid_length', 'max_time']
    graphs = {
        'hawkesll': mx.sym.contrib.hawkesll(*[mx.sym.var(n) for n in names], name='hk'),
        'cvimresize': mx.sym._internal._cvimresize(data=mx.sym.var('x'), w=5, h=3, interp=0,
                                                   name='rs'),
        'cvcopyMakeBorder': mx.sym._internal._cvcopyMakeBorder(
            data=mx.sym.var('x'), top=1, bot=2, left=0, right=3, type=4, values=(1, 2, 3),
            name='bd'),
        'copyto': mx.sym._internal._copyto(mx.sym.var('x'), name='cp'),
    }
    for k, sym in graphs.items():
        out['json_%s/attrs' % k] = np.array(sym.tojson())
    np.savez_compressed(os.path.join(HERE, 'data', 'hawkes_cv.npz'), **out)
    print(len(out), 'arrays')


if __name__ == '__main__':
    main()
