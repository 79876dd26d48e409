"""NDArray behaviours that MXNet 1.x scripts rely on, written once for both frameworks
(Python 3.8 compatible): ``run(mx)`` returns {probe: JSON-able result}. Run under MXNet
1.9.1 by ``make_semantics.py``, under symgraph by ``test_semantics.py``.
"""
import copy

import numpy as np


def _error(fn):
    try:
        fn()
    except Exception:        # MXNet raises MXNetError, symgraph its subclass or TypeError
        return 'error'
    return 'ok'


def run(mx):
    out = {}
    v = mx.nd.array([1, 2, 3])
    # one integer per axis: shape (1,), a view that writes through
    out['element'] = [list(v[1].shape), float(v[1].asscalar()), (v[0] * 2).asnumpy().tolist()]
    out['iterate'] = [e.asnumpy().tolist() for e in v]
    v[0] += 1
    out['element_iadd'] = v.asnumpy().tolist()
    v[2] = v.sum()
    out['element_set_size1'] = v.asnumpy().tolist()
    x = mx.nd.array([[1, 2], [3, 4]])
    x[1, 1] *= 10
    out['element_2d'] = x.asnumpy().tolist()
    # MXNet's special reshape values and reverse, on the method
    a = mx.nd.zeros((2, 3, 4))
    out['reshape'] = [list(a.reshape(s).shape) for s in
                      ((-2,), (0, -1), (-4, 1, 2, -2), (2, -4, -1, 3, 4), (-3, 4), (4, 0, -1))]
    out['reshape_reverse'] = list(a.reshape((-1, 0), reverse=True).shape)
    # contiguous slices are views; other slices and T are copies
    y = x[:, 1]
    y += 100
    z = x[1]
    z += 1
    w = x[0:1]
    w *= 2
    t = x.T
    t += 1000
    out['views'] = x.asnumpy().tolist()
    out['transpose_1d'] = list(mx.nd.array([1, 2]).T.shape)
    # integer arithmetic between arrays keeps the dtype (C division, float powers)
    i = mx.nd.array([7, -7, 5, 4], dtype='int32')
    j = mx.nd.array([2, 2, -3, 3], dtype='int32')
    out['int_div'] = [(i / j).asnumpy().tolist(), np.dtype((i / j).dtype).name]
    out['int_pow'] = (i ** j).asnumpy().tolist()
    out['int_mod'] = (i % j).asnumpy().tolist()
    i /= j
    out['int_div_inplace'] = [i.asnumpy().tolist(), np.dtype(i.dtype).name]
    # modulo by zero is 0 (NumPy gives NaN)
    f = mx.nd.array([7.5, -7.5, 0])
    out['mod_zero'] = [(f % 0).asnumpy().tolist(),
                       mx.nd.broadcast_mod(f, mx.nd.zeros((3,))).asnumpy().tolist()]
    # copy.copy is a new array; %= updates the same object
    c = mx.nd.ones((2,))
    d = copy.copy(c)
    d[:] = 0
    out['copy_copy'] = c.asnumpy().tolist()
    m = mx.nd.array([5, 7])
    before = id(m)
    m %= 3
    out['imod'] = [m.asnumpy().tolist(), id(m) == before]
    # out-of-range Python ints wrap into integer arrays, as C's cast
    u = mx.nd.zeros((2,), dtype='uint8')
    u[:] = 300
    u[0] = -1
    out['uint8_wrap'] = (u.asnumpy().tolist()
                         + mx.nd.full((2,), -1, dtype='uint8').asnumpy().tolist())
    # mixed dtypes are refused
    out['mixed_dtypes'] = [
        _error(lambda: mx.nd.array([1], dtype='int8') + mx.nd.array([1], dtype='int32')),
        _error(lambda: mx.nd.array([1]) + mx.nd.array([1], dtype='float64')),
        _error(lambda: mx.nd.add(mx.nd.array([1], dtype='int32'), mx.nd.array([1])))]
    # concat takes MXNet's keywords
    out['concat'] = mx.nd.concat(mx.nd.ones((1, 2)), mx.nd.zeros((1, 2)), dim=0,
                                 num_args=2).asnumpy().tolist()
    # arange: start + i * step in float32 (MXNet's kernel), also past 2^24
    r = mx.nd.arange(-3, 1000, 0.7).asnumpy()
    out['arange_float32'] = [r.tobytes().hex()[:96], len(r)]
    out['arange_2_24'] = mx.nd.arange(16777216, 16777220).asnumpy().tolist()
    out['arange_int'] = mx.nd.arange(0, 10, 3, repeat=2, dtype='int32').asnumpy().tolist()
    # a list of bools indexes as the integers 0 and 1
    out['bool_list_index'] = x[[True, False, True]].asnumpy().tolist()
    return out
