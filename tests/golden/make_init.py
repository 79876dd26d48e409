"""Make the golden data of ``mx.init`` with the real MXNet 1.9.1. Run from the repository
root with MXNet's interpreter::

    MXNET_MKLDNN_ENABLED=0 $MXNET_PYTHON tests/golden/make_init.py

Writes ``tests/golden/data/init.json`` (the probes of ``init_probes.py``);
``tests/core/test_initializer_golden.py`` runs the same probes under symgraph and compares.
"""
import json
import os
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def main():
    os.environ['MXNET_MKLDNN_ENABLED'] = '0'
    import mxnet as mx              # the test suite imports the probes without MXNet
    import init_probes
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        result = init_probes.run(mx)
    path = os.path.join(HERE, 'data', 'init.json')
    with open(path, 'w') as f:
        json.dump({'mxnet_version': mx.__version__, 'probes': result}, f, indent=1,
                  sort_keys=True)
        f.write('\n')
    print('wrote %s (%d probes)' % (path, len(result)))


if __name__ == '__main__':
    main()
    sys.stdout.flush()
    os._exit(0)     # MXNet may hang at interpreter exit
