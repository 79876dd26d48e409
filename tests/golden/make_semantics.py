"""Golden behaviours of MXNet 1.9.1 for the probe modules (``*_probes.py``: ``run(mx)``
returns {probe: JSON-able result}), written once for both frameworks::

    MXNET_MKLDNN_ENABLED=0 $MXNET_PYTHON tests/golden/make_semantics.py

writes ``tests/golden/data/<module>_semantics.json`` for each module in ``MODULES``;
``test_semantics.py`` runs the same probes under symgraph.
"""
import importlib
import json
import os
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
MODULES = ('ndarray', 'executor', 'symbol', 'op')


def main(names):
    import mxnet as mx          # here: the test suite imports MODULES without MXNet
    for name in names or MODULES:
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            result = importlib.import_module(name + '_probes').run(mx)
        path = os.path.join(HERE, 'data', '%s_semantics.json' % name)
        with open(path, 'w') as f:
            json.dump({'mxnet_version': mx.__version__, 'probes': result}, f, indent=1,
                      sort_keys=True)
            f.write('\n')
        print('wrote %s (%d probes)' % (path, len(result)))


if __name__ == '__main__':
    main(sys.argv[1:])
