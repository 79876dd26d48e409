"""NDArrayIter(num_parts=, part_index=): one shard per worker, equal sizes."""
import numpy as np
import pytest

import symgraph as mx


def _rows(it):
    it.reset()
    return np.concatenate([b.data[0].asnumpy()[:b.data[0].shape[0] - b.pad, 0]
                           for b in it]).tolist()


def test_parts_are_contiguous_equal_and_padded_from_the_start():
    x = np.arange(10, dtype='f').reshape(10, 1)
    y = np.arange(10, dtype='f')
    parts = [mx.io.NDArrayIter(x, y, 2, num_parts=3, part_index=k) for k in range(3)]
    assert [_rows(p) for p in parts] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 0, 1]]
    assert [sum(1 for _ in p) for p in (it for it in parts if not it.reset())] == [2, 2, 2]
    parts[2].reset()
    labels = [b.label[0].asnumpy().tolist() for b in parts[2]]
    assert labels == [[8, 9], [0, 1]]
    # one part is the whole data
    assert _rows(mx.io.NDArrayIter(x, y, 5, num_parts=1, part_index=0)) == list(range(10))


def test_parts_keep_the_dtype_and_shuffle_within_the_part():
    x = np.arange(12, dtype='f').reshape(12, 1)
    it = mx.io.NDArrayIter(mx.nd.array(x, dtype='float64'), None, 3, num_parts=2,
                           part_index=1)
    assert next(iter(it)).data[0].dtype == np.float64
    mx.random.seed(0)
    np.random.seed(0)
    it = mx.io.NDArrayIter(x, None, 3, shuffle=True, num_parts=2, part_index=1)
    assert sorted(_rows(it)) == list(range(6, 12))


@pytest.mark.parametrize('kw, exc, text', [
    ({'num_parts': 2, 'part_index': 2}, ValueError,
     'part_index 2 must lie in \\[0, num_parts=2\\)'),
    ({'num_parts': 0, 'part_index': 0}, ValueError, 'part_index 0 must lie'),
    ({'num_parts': 2.0, 'part_index': 0}, TypeError, 'num_parts must be an int'),
    ({'num_parts': 2, 'part_index': True}, TypeError, 'part_index must be an int')])
def test_bad_parts(kw, exc, text):
    with pytest.raises(exc, match=text):
        mx.io.NDArrayIter(np.zeros((4, 1)), None, 2, **kw)
