"""Make the golden data of ``mx.metric``, ``mx.callback`` and ``mx.monitor`` with the real
MXNet 1.9.1. Run from the repository root with MXNet's interpreter::

    MXNET_MKLDNN_ENABLED=0 $MXNET_PYTHON tests/golden/make_metric.py

Writes ``tests/golden/data/metric.json`` (the probes of ``metric_probes.py``) and
``tests/golden/data/metric_callbacks.json`` (``callback_probes.py``); ``tests/metric/`` runs
the same probes under symgraph and compares.
"""
import json
import os
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def main():
    import mxnet as mx              # the test suite imports the probes without MXNet
    import metric_probes
    import callback_probes
    for module, fname in ((metric_probes, 'metric.json'),
                          (callback_probes, 'metric_callbacks.json')):
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            result = module.run(mx)
        path = os.path.join(HERE, 'data', fname)
        with open(path, 'w') as f:
            json.dump({'mxnet_version': mx.__version__, 'probes': result}, f, indent=1,
                      sort_keys=True)
            f.write('\n')
        print('wrote %s (%d probes)' % (path, len(result)))


if __name__ == '__main__':
    main()
    sys.stdout.flush()
    os._exit(0)     # MXNet may hang at interpreter exit
