"""Golden data, from MXNet 1.9.1, of ``_contrib_calibrate_entropy`` (ops/calibrate.py):
histograms of several odd bin counts (3 to 1001) with several ``num_quantized_bins`` (odd and
even, 1 to 255), dense, sparse (many empty bins), fractional counts (MXNet truncates them)
and all-zero ones (every divergence inf):

    cd tests/golden
    MXNET_MKLDNN_ENABLED=0 OMP_NUM_THREADS=1 $MXNET_PYTHON make_calibrate.py

writes ``data/calibrate.npz``: per case ``<case>/hist``, ``<case>/hist_edges``,
``<case>/nq`` (num_quantized_bins), ``<case>/threshold`` and ``<case>/divergence`` (MXNet's
outputs). The suite never imports mxnet.
"""
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, 'data', 'calibrate.npz')


def cases():
    """{case: (hist, hist_edges, num_quantized_bins)}, float32."""
    r = np.random.RandomState(151)
    out = {}

    def add(name, n, nq, size=20000, nonzero=1.0, frac=False, spread=4.0):
        h, _ = np.histogram(r.normal(size=size), bins=n, range=(-spread, spread))
        h = h * (r.uniform(size=n) < nonzero)
        if frac:
            h = h * r.uniform(0.3, 3.0, n)
        e = np.linspace(-3, 3, n + 1)
        out[name] = (h.astype(np.float32), e.astype(np.float32), nq)
    # the 7-bin histograms of the audit and other small odd sizes
    for n in (3, 5, 7, 9):
        for nq in range(1, n + 2):
            if n // 2 >= nq // 2:
                add('small%d_q%d' % (n, nq), n, nq, size=60)
    for n, nq in ((21, 5), (21, 6), (31, 7), (65, 15), (101, 15), (129, 31), (255, 63),
                  (255, 64), (513, 255), (1001, 255)):
        add('dense%d_q%d' % (n, nq), n, nq)
        add('sparse%d_q%d' % (n, nq), n, nq, nonzero=0.4)
        add('few%d_q%d' % (n, nq), n, nq, size=300, spread=2.0)
    for n, nq in ((11, 3), (101, 15), (129, 31)):
        add('frac%d_q%d' % (n, nq), n, nq, frac=True)
    out['zeros11_q3'] = (np.zeros(11, np.float32), np.linspace(-3, 3, 12).astype(np.float32),
                         3)
    return out


def main():
    import mxnet as mx
    arrays = {}
    for name, (h, e, nq) in sorted(cases().items()):
        th, d = mx.nd.contrib.calibrate_entropy(mx.nd.array(h), mx.nd.array(e),
                                                num_quantized_bins=nq)
        arrays.update({name + '/hist': h, name + '/hist_edges': e, name + '/nq': np.array(nq),
                       name + '/threshold': th.asnumpy(), name + '/divergence': d.asnumpy()})
        print('%-20s threshold %-10.6g divergence %.6g' % (name, th.asnumpy()[0],
                                                            d.asnumpy()[0]))
    np.savez_compressed(OUT, **arrays)


if __name__ == '__main__':
    main()
