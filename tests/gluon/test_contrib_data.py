"""mx.gluon.contrib.data.IntervalSampler (MXNet 1.9.1's test_gluon_contrib.py::test_sampler
and its docstring's examples)."""
import pytest

import symgraph as mx
from symgraph.gluon.contrib.data import IntervalSampler


def test_rollover_visits_every_index_interval_by_interval():
    s = mx.gluon.contrib.data.IntervalSampler(13, interval=3)
    assert list(s) == [0, 3, 6, 9, 12, 1, 4, 7, 10, 2, 5, 8, 11]
    assert len(s) == 13
    assert sorted(IntervalSampler(10, 3)) == list(range(10))


def test_without_rollover_stops_at_the_end():
    s = IntervalSampler(10, 3, rollover=False)
    assert list(s) == [0, 3, 6, 9]
    assert len(s) == 10        # MXNet's len() is the length either way
    assert list(IntervalSampler(4, 4, rollover=False)) == [0]


def test_a_sampler_of_a_data_loader():
    data = mx.gluon.data.ArrayDataset(mx.nd.arange(6))
    loader = mx.gluon.data.DataLoader(data, batch_size=2, sampler=IntervalSampler(6, 2))
    assert [b.asnumpy().tolist() for b in loader] == [[0, 2], [4, 1], [3, 5]]


def test_bad_arguments():
    with pytest.raises(ValueError, match='interval 5 .* length 4'):
        IntervalSampler(4, 5)
    with pytest.raises(ValueError, match='positive'):
        IntervalSampler(4, 0)
    with pytest.raises(TypeError, match='interval must be an int'):
        IntervalSampler(4, 1.5)
