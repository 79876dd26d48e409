"""The int8 layers with weights of ops/quantized_nn.py (``_contrib_quantized_conv``,
``_fully_connected``, ``_batch_norm``, ``_embedding``) through the operator harness against
NumPy references of MXNet 1.9.1's formulas; their MXNet-made outputs are checked in
tests/ops/test_quantized.py::test_against_mxnet."""
import numpy as np

from harness import case_tests
from test_quantized import _B, _FB, _FW, _I8, _U8, _W, _case, _f, _sat

def _conv_ref(x, w, b, lo_d, hi_d, lo_w, hi_w, lo_b, hi_b):
    n, c, h, wd = x.shape
    f, _, kh, kw = w.shape
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((n, f, h, wd), np.int64)
    for i in range(kh):
        for j in range(kw):
            out += np.einsum('nchw,fc->nfhw', xp[:, :, i:i + h, j:j + wd], w[:, :, i, j])
    out += b.astype(np.int64)[None, :, None, None]
    level = max(abs(lo_d[0]), abs(hi_d[0])) / 127 * max(abs(lo_w[0]), abs(hi_w[0])) / 127
    top = np.float32(level * 2147483647)
    return [out.astype(np.int32), _f(-top), _f(top)]


def _fc_ref(x, w, b, lo_d, hi_d, lo_w, hi_w, lo_b, hi_b):
    acc = x.reshape(len(x), -1).astype(np.int64) @ w.astype(np.int64).T
    rd = max(abs(lo_d[0]), abs(hi_d[0]))
    rw = max(abs(lo_w[0]), abs(hi_w[0]))
    rb = max(abs(lo_b[0]), abs(hi_b[0]))
    rescale = (127.5 / rd) * (127.5 / rw) * rb / 127.5
    acc += np.trunc(b * rescale).astype(np.int64)
    top = np.float32(rd / 127 * rw / 127 * 2147483647)
    return [acc.astype(np.int32), _f(-top), _f(top)]


def _bn_ref(x, gamma, beta, lo, hi, mean, var):
    invstd = 1 / np.sqrt(var + 1e-3)
    scale = (gamma * invstd * max(abs(lo[0]), abs(hi[0])) / 3.0).reshape(1, -1, 1, 1)
    shift = ((beta - mean * gamma * invstd) * 127.5 / 3.0).reshape(1, -1, 1, 1)
    # oneDNN normalises the rescaled data with mean 0, variance 1 and eps
    return [_sat(x / np.sqrt(1 + 1e-3) * scale + shift, np.int8), _f(-3.0), _f(3.0)]


CASES = [
    _case('_contrib_quantized_conv', {'kernel': (3, 3), 'pad': (1, 1), 'num_filter': 4},
          [_U8, _W, _B, _f(0.0), _f(2.0), _f(-0.5), _f(0.5), _f(-0.1), _f(0.1)], _conv_ref),
    _case('_contrib_quantized_fully_connected', {'num_hidden': 6},
          [_I8, _FW, _FB, _f(-2.0), _f(1.0), _f(-0.3), _f(0.2), _f(-0.05), _f(0.04)],
          _fc_ref),
    _case('_contrib_quantized_batch_norm', {'eps': 1e-3, 'fix_gamma': False,
                                            'min_calib_range': -3.0, 'max_calib_range': 3.0},
          [_I8, _f(1.5).repeat(3), _f(0.25).repeat(3), _f(-2.0), _f(1.0),
           np.float32([0.1, -0.2, 0.3]), np.float32([1.0, 0.5, 2.0])], _bn_ref),
    _case('_contrib_quantized_embedding', {'input_dim': 6, 'output_dim': 3},
          [np.float32([[0, 5], [3, 9]]), _W.reshape(-1)[:18].reshape(6, 3), _f(-1.0),
           _f(1.0)], lambda d, w, lo, hi: [w[np.clip(d.astype(int), 0, 5)], lo, hi]),
]

test_forward, test_gradient = case_tests(CASES)
