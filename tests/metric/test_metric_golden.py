"""Every metric against MXNet 1.9.1 on the same inputs (tests/golden/metric_probes.py, data
made by tests/golden/make_metric.py): local and global values after each update,
reset_local and reset; several (label, pred) pairs per update; update_dict; configs and
re-creation; create's names; MXNet's error types and messages."""
import json
import math
import os

import pytest

import symgraph as mx
import metric_probes

GOLDEN = os.path.join(os.path.dirname(__file__), '..', 'golden', 'data', 'metric.json')

with open(GOLDEN) as _f:
    EXPECTED = json.load(_f)['probes']


@pytest.fixture(scope='module')
def ours():
    return metric_probes.run(mx)


def close(a, b, rtol=1e-6, atol=1e-7):
    """Equal structure; numbers within float32 rounding (most sums are float64 of float32
    terms, so the results agree to ~1e-7 relative)."""
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(close(x, y, rtol, atol) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k], rtol, atol) for k in a)
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=rtol, abs_tol=atol)
    return a == b


def test_the_golden_file_covers_every_case():
    names = {'case:' + c[0] for c in metric_probes.CASES}
    assert names <= set(EXPECTED)
    assert len(EXPECTED) > 50


@pytest.mark.parametrize('case', [c[0] for c in metric_probes.CASES])
def test_metric_steps_match_mxnet(ours, case):
    got, want = ours['case:' + case], EXPECTED['case:' + case]
    assert got['name'] == want['name']
    assert len(got['steps']) == len(want['steps'])
    for i, (g, w) in enumerate(zip(got['steps'], want['steps'])):
        assert close(g, w), 'step %d (%s): ours %s, MXNet %s' % (
            i, (['init'] + [c for c in metric_probes.CASES if c[0] == case][0][3])[i], g, w)


@pytest.mark.parametrize('key', sorted(k for k in EXPECTED
                                       if k.split(':')[0] in ('two_pairs', 'update_dict',
                                                              'composite', 'create',
                                                              'empty')))
def test_probe_matches_mxnet(ours, key):
    assert close(ours[key], EXPECTED[key]), (ours[key], EXPECTED[key])


@pytest.mark.parametrize('key', sorted(k for k in EXPECTED if k.startswith('config:')))
def test_config_matches_mxnet(ours, key):
    assert ours[key] == EXPECTED[key]


ERRORS_AS_MXNET = ['err:acc_two_labels_one_pred', 'err:acc_flat_mismatch',
                   'err:mse_two_preds', 'err:pearson_shape', 'err:f1_multiclass',
                   'err:check_label_shapes_shape', 'err:custom_config']


@pytest.mark.parametrize('key', ERRORS_AS_MXNET)
def test_errors_match_mxnet(ours, key):
    assert EXPECTED[key] is not None
    assert ours[key] == EXPECTED[key]


def test_top_k_beyond_the_classes_fails_as_in_mxnet(ours):
    # NumPy's argpartition error: same type; NumPy 2 words the message differently
    assert EXPECTED['err:top_k_5_of_4'][0] == 'ValueError'
    assert ours['err:top_k_5_of_4'][0] == 'ValueError'
    assert 'kth' in ours['err:top_k_5_of_4'][1]


def test_every_probe_is_compared():
    checked = {'case:' + c[0] for c in metric_probes.CASES} | set(ERRORS_AS_MXNET)
    checked |= {k for k in EXPECTED if k.split(':')[0] in ('two_pairs', 'update_dict',
                                                             'composite', 'create', 'empty',
                                                             'config')}
    checked.add('err:top_k_5_of_4')
    assert checked == set(EXPECTED)
