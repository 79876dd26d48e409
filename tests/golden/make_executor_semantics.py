"""Golden executor behaviours (``executor_probes.run``) from MXNet 1.9.1::

    MXNET_MKLDNN_ENABLED=0 /work/mxvenv/bin/python tests/golden/make_executor_semantics.py

writes ``tests/golden/data/executor_semantics.json``.
"""
import json
import os

import mxnet as mx

from executor_probes import run

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    result = run(mx)
    path = os.path.join(HERE, 'data', 'executor_semantics.json')
    with open(path, 'w') as f:
        json.dump({'mxnet_version': mx.__version__, 'probes': result}, f, indent=1,
                  sort_keys=True)
        f.write('\n')
    print('wrote %s (%d probes)' % (path, len(result)))


if __name__ == '__main__':
    main()
