"""Golden data of mx.io from MXNet 1.9.1 (run: MXNET_MKLDNN_ENABLED=0
/work/mxvenv/bin/python tests/golden/make_io.py). Writes tests/golden/data/io/:

- ndarray_iter.json: every case of iter_cases.CASES, three epochs each (batches, pads,
  indices, dtypes, provide_data/label);
- csv.json, libsvm.json, mnist.json and their small input files (written here,
  deterministically, and committed beside the JSON).
"""
import json
import os
import sys

import numpy as np
import mxnet as mx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import iter_cases  # noqa: E402

OUT = os.path.join(HERE, 'data', 'io')


def nd_array(a, dtype):
    return mx.nd.array(a, dtype=dtype)


def ndarray_iter():
    out = {}
    for name, case in sorted(iter_cases.CASES.items()):
        data, label = iter_cases.make_inputs(case, nd_array)
        if 'seed' in case:
            np.random.seed(case['seed'])
        it = mx.io.NDArrayIter(data, label, **iter_cases.iter_kwargs(case))
        out[name] = iter_cases.record(it, hard_reset_after=case.get('hard_reset_after'))
    return out


def write(name, obj):
    with open(os.path.join(OUT, name), 'w') as f:
        json.dump(obj, f, indent=None, separators=(',', ':'), sort_keys=True)
        f.write('\n')


def main():
    os.makedirs(OUT, exist_ok=True)
    write('ndarray_iter.json', ndarray_iter())
    sys.stdout.flush()


if __name__ == '__main__':
    main()
