"""The oneDNN loader (switch, missing library, version check) and buffer lifetimes."""
import gc
import logging
import threading

import numpy as np
import pytest

from symgraph.backend import onednn
from symgraph.backend.onednn import _lib
from symgraph.opdef import cpu_backend
from symgraph.ops._conv_impl import conv_backward_data, conv_backward_weight, conv_forward

LOGGER = 'symgraph.backend.onednn'


def _lines(caplog):
    return [r for r in caplog.records if r.name == LOGGER]


def _available():
    be = onednn.backend()
    if be is None:
        pytest.skip('oneDNN is not available on this machine')
    return be


def _conv_ref(x, w, b):
    """float64 NumPy path (never oneDNN): the reference."""
    return conv_forward(np, x.astype(np.float64), w.astype(np.float64),
                        b.astype(np.float64), (1, 1), (1, 1), (1, 1), 1)


def test_loads_a_3x_library_from_the_wheel():
    be = _available()
    assert (3, 0) <= be.version[:2] < (4, 0)
    assert cpu_backend() is be
    assert 'libdnnl' in be.path


@pytest.mark.parametrize('flag', ['0', 'off', 'False'])
def test_switched_off_by_environment_one_log_line(monkeypatch, caplog, flag):
    monkeypatch.setenv('SYMGRAPH_ONEDNN', flag)
    with caplog.at_level(logging.INFO, logger=LOGGER):
        assert cpu_backend() is None
        assert cpu_backend() is None          # cached: no second line
    lines = _lines(caplog)
    assert len(lines) == 1 and 'SYMGRAPH_ONEDNN=%s' % flag in lines[0].getMessage()
    # the operators still compute, on NumPy
    rng = np.random.RandomState(0)
    x, w, b = (rng.rand(*s).astype(np.float32) for s in ((2, 3, 6, 6), (4, 3, 3, 3), (4,)))
    y = conv_forward(np, x, w, b, (1, 1), (1, 1), (1, 1), 1)
    np.testing.assert_allclose(y, _conv_ref(x, w, b), rtol=1e-5, atol=1e-5)


def test_missing_library_falls_back_with_one_line(monkeypatch, caplog, tmp_path):
    monkeypatch.setenv('SYMGRAPH_ONEDNN_LIB', str(tmp_path / 'libdnnl.so.3'))
    with caplog.at_level(logging.INFO, logger=LOGGER):
        assert cpu_backend() is None
        assert cpu_backend() is None
    lines = _lines(caplog)
    assert len(lines) == 1 and 'not found' in lines[0].getMessage()


def test_unloadable_library_warns_once(monkeypatch, caplog, tmp_path):
    bad = tmp_path / 'libdnnl.so.3'
    bad.write_text('not a shared object')
    monkeypatch.setenv('SYMGRAPH_ONEDNN_LIB', str(bad))
    with caplog.at_level(logging.INFO, logger=LOGGER):
        assert cpu_backend() is None
        assert cpu_backend() is None
    lines = _lines(caplog)
    assert len(lines) == 1 and lines[0].levelno == logging.WARNING
    assert 'could not be loaded' in lines[0].getMessage() and str(bad) in lines[0].getMessage()


@pytest.mark.parametrize('found', [(2, 7, 0), (4, 0, 0)])
def test_failed_version_check_falls_back_with_one_line(monkeypatch, caplog, found):
    _available()
    onednn.reset()
    monkeypatch.setattr(_lib, 'version', lambda lib: found)
    with caplog.at_level(logging.INFO, logger=LOGGER):
        assert cpu_backend() is None
        assert cpu_backend() is None
    lines = _lines(caplog)
    assert len(lines) == 1 and lines[0].levelno == logging.WARNING
    assert '%d.%d.%d' % found in lines[0].getMessage() and 'NumPy' in lines[0].getMessage()
    rng = np.random.RandomState(1)
    x, w, b = (rng.rand(*s).astype(np.float32) for s in ((1, 2, 5, 5), (3, 2, 3, 3), (3,)))
    np.testing.assert_allclose(conv_forward(np, x, w, b, (1, 1), (1, 1), (1, 1), 1),
                               _conv_ref(x, w, b), rtol=1e-5, atol=1e-5)


def test_error_names_the_call_and_status():
    err = _lib.DnnlError('dnnl_primitive_create', 3)
    assert 'dnnl_primitive_create' in str(err) and 'unimplemented' in str(err)
    with pytest.raises(_lib.DnnlError):
        _lib.check(2, 'dnnl_memory_create')


def test_no_array_outlives_its_use_every_other_reference_dropped():
    """Fresh arrays each call, all other references dropped and collected between calls,
    freed memory refilled with garbage: results stay exact against float64 NumPy."""
    be = _available()
    rng = np.random.RandomState(2)
    geoms = [((4, 16, 12, 12), (32, 16, 3, 3), (1, 1), (1, 1)),
             ((2, 8, 9, 9), (16, 8, 3, 3), (2, 2), (0, 0))]
    before = dict(be.calls)
    for it in range(6):
        xs, ws, st, pd = geoms[it % 2]
        x = rng.uniform(-1, 1, xs).astype(np.float32)
        w = rng.uniform(-1, 1, ws).astype(np.float32)
        y = conv_forward(np, x, w, None, st, pd, (1, 1), 1)
        dy = rng.uniform(-1, 1, y.shape).astype(np.float32)
        dx = conv_backward_data(np, dy, w, xs, st, pd, (1, 1), 1)
        dw = conv_backward_weight(np, x, dy, ws[2:], st, pd, (1, 1), 1)
        x64, w64, dy64 = x.astype(np.float64), w.astype(np.float64), dy.astype(np.float64)
        expected = (conv_forward(np, x64, w64, None, st, pd, (1, 1), 1),
                    conv_backward_data(np, dy64, w64, xs, st, pd, (1, 1), 1),
                    conv_backward_weight(np, x64, dy64, ws[2:], st, pd, (1, 1), 1))
        got = (y, dx, dw)
        del x, w, y, dy, dx, dw, x64, w64, dy64
        gc.collect()
        junk = [np.full(s, np.nan, np.float32) for s in (xs, ws, xs, ws)]   # reuse the memory
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-4)
        del got, expected, junk
        gc.collect()
    assert be.calls['conv_forward'] - before.get('conv_forward', 0) == 6
    assert be.calls['conv_backward_weights'] - before.get('conv_backward_weights', 0) == 6


def test_threads_use_their_own_streams_and_primitives():
    be = _available()
    rng = np.random.RandomState(4)
    x = rng.uniform(-1, 1, (4, 8, 10, 10)).astype(np.float32)
    w = rng.uniform(-1, 1, (8, 8, 3, 3)).astype(np.float32)
    b = rng.uniform(-1, 1, 8).astype(np.float32)
    expected = _conv_ref(x, w, b)
    errors = []

    def work():
        try:
            for _ in range(20):
                np.testing.assert_allclose(conv_forward(np, x, w, b, (1, 1), (1, 1), (1, 1),
                                                        1), expected, rtol=1e-4, atol=1e-4)
        except Exception as e:          # reported on the main thread
            errors.append(e)
    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


@pytest.mark.parametrize('layout', ['plain', 'a_transposed', 'b_transposed', 'both'])
def test_matmul_takes_strided_views(layout):
    be = _available()
    rng = np.random.RandomState(5)
    a = rng.uniform(-1, 1, (48, 96)).astype(np.float32)
    b = rng.uniform(-1, 1, (96, 40)).astype(np.float32)
    if layout in ('a_transposed', 'both'):
        a = np.ascontiguousarray(a.T).T
    if layout in ('b_transposed', 'both'):
        b = np.ascontiguousarray(b.T).T
    n = be.calls.get('matmul', 0)
    out = be.matmul(a, b)
    assert be.calls['matmul'] == n + 1 and out.shape == (48, 40)
    np.testing.assert_allclose(out, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
    assert be.matmul(a[:4, :8], b[:8, :4]) is None            # too small: NumPy's


def test_fully_connected_through_onednn_matches_numpy():
    from symgraph.opdef import get_op
    be = _available()
    op = get_op('FullyConnected')(num_hidden=64)
    rng = np.random.RandomState(6)
    x = rng.uniform(-1, 1, (32, 4, 5, 5)).astype(np.float32)
    w = rng.uniform(-1, 1, (64, 100)).astype(np.float32)
    b = rng.uniform(-1, 1, 64).astype(np.float32)
    dy = rng.uniform(-1, 1, (32, 64)).astype(np.float32)
    n = be.calls.get('matmul', 0)
    y = op.forward(np, [x, w, b], [], True)[0]
    grads = op.backward(np, [dy], [x, w, b], [y], [], [True] * 3)
    assert be.calls['matmul'] == n + 3
    x64, w64, dy64 = x.astype(np.float64), w.astype(np.float64), dy.astype(np.float64)
    np.testing.assert_allclose(y, x64.reshape(32, -1) @ w64.T + b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(grads[0], (dy64 @ w64).reshape(x.shape), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(grads[1], dy64.T @ x64.reshape(32, -1), rtol=1e-5, atol=1e-4)


def test_primitives_share_one_workspace_per_thread():
    be = _available()
    rng = np.random.RandomState(7)
    x = rng.uniform(-1, 1, (8, 32, 16, 16)).astype(np.float32)
    w = rng.uniform(-1, 1, (32, 32, 3, 3)).astype(np.float32)
    conv_forward(np, x, w, None, (1, 1), (1, 1), (1, 1), 1)
    first = be.workspace_bytes()
    assert first >= x.nbytes          # nChw16c copies of x and y live there
    # more layers of the same size: more cached primitives, no more workspace
    n = be.cached()
    for pad, dil in ((2, 2), (0, 1), (3, 3)):
        wk = rng.uniform(-1, 1, w.shape).astype(np.float32)
        y = conv_forward(np, x, wk, None, (1, 1), (pad, pad), (dil, dil), 1)
        np.testing.assert_allclose(y, conv_forward(np, x.astype(np.float64), wk, None,
                                                   (1, 1), (pad, pad), (dil, dil), 1),
                                   rtol=1e-4, atol=1e-4)
    assert be.cached() == n + 3
    assert be.workspace_bytes() == first


def test_lent_scratch_takes_the_internal_buffers_and_none_outlives_it():
    """While scratch is lent, the reorder buffers come from it (the workspace does not
    grow); a lent buffer dropped (collected, its memory refilled with garbage) after being
    taken back is never touched again; one too small is passed over for the workspace."""
    be = _available()
    rng = np.random.RandomState(11)
    x = rng.uniform(-1, 1, (4, 16, 12, 12)).astype(np.float32)
    w = rng.uniform(-1, 1, (16, 16, 3, 3)).astype(np.float32)
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    expected = conv_forward(np, x64, w64, None, (1, 1), (1, 1), (1, 1), 1)
    t = be._thread()
    ws, borrowed = be.workspace_bytes(), t.borrowed
    need = be.conv_scratch_bytes(x.shape, w.shape, expected.shape)
    for it in range(3):
        lent = np.full(need + 64, 0xff, np.uint8)        # large enough for any alignment
        be.lend(lent)
        try:
            y = conv_forward(np, x, w, None, (1, 1), (1, 1), (1, 1), 1)
        finally:
            be.lend(None)
        assert t.borrowed == borrowed + it + 1
        if it == 0:
            assert be.workspace_bytes() == ws       # lent scratch served, not the workspace
        del lent
        gc.collect()
        junk = np.full(need // 4 + 16, np.nan, np.float32)     # reuse the memory
        np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-4)
        y2 = conv_forward(np, x, w, None, (1, 1), (1, 1), (1, 1), 1)   # nothing lent
        np.testing.assert_array_equal(y2, y)
        del junk
    be.lend(np.zeros(64, np.uint8))      # too small: the workspace serves
    try:
        y3 = conv_forward(np, x, w, None, (1, 1), (1, 1), (1, 1), 1)
    finally:
        be.lend(None)
    np.testing.assert_array_equal(y3, y)
    assert t.borrowed == borrowed + 3
    assert be.workspace_bytes() >= ws


def _channels_last(rng, shape):
    n, c, h, w = shape
    return rng.uniform(-1, 1, (n, h, w, c)).astype(np.float32).transpose(0, 3, 1, 2)


@pytest.mark.parametrize('layout', ['c', 'channels_last'])
def test_elementwise_calls_in_place_apart_and_overlapping(layout):
    """add, relu from output and eltwise forward hand the arrays themselves to oneDNN (their
    first element starts their dense memory): in place over an input and into separate
    memory they compute NumPy's values; a shifted overlap, a non-dense array or mixed
    layouts are declined (None), never computed wrong."""
    be = _available()
    rng = np.random.RandomState(3)
    shape = (2, 8, 5, 6)

    def make():
        return _channels_last(rng, shape) if layout == 'channels_last' else \
            rng.uniform(-1, 1, shape).astype(np.float32)
    a, b, y = make(), make(), make()
    want = np.maximum(a + b, 0)
    assert be.add(a, b, relu=True, out=y) is y
    np.testing.assert_array_equal(y, want)
    a0, b0 = a.copy(order='K'), b.copy(order='K')    # (in their layout)
    for out in (a, b):                           # in place over either input
        a[...], b[...] = a0, b0
        assert be.add(a, b, out=out) is out
        np.testing.assert_array_equal(out, a0 + b0)
    r = be.relu_backward_from_output(want, b0.copy(order='K'), out=None)
    np.testing.assert_array_equal(r, np.where(want > 0, b0, 0))
    g = b0.copy(order='K')
    assert be.relu_backward_from_output(want, g, out=g) is g      # in place over dy
    np.testing.assert_array_equal(g, np.where(want > 0, b0, 0))
    x = a0.copy(order='K')
    assert be.eltwise_forward(x, 'relu', out=x) is x
    np.testing.assert_array_equal(x, np.maximum(a0, 0))
    # a shifted overlap of the output with an input: declined
    flat = rng.uniform(-1, 1, 2 * a.size).astype(np.float32)
    p, q = flat[:a.size].reshape(shape), flat[8:8 + a.size].reshape(shape)
    before = flat.copy()
    assert be.add(p, b0, out=q) is None
    assert be.eltwise_forward(p, 'relu', out=q) is None
    assert be.relu_backward_from_output(p, b0, out=q) is None
    np.testing.assert_array_equal(flat, before)
    # not dense (every other column), or the two layouts mixed: declined
    wide = rng.uniform(-1, 1, shape[:3] + (12,)).astype(np.float32)[..., ::2]
    assert be.add(wide, b0) is None
    other = rng.uniform(-1, 1, shape).astype(np.float32) if layout == 'channels_last' \
        else _channels_last(rng, shape)
    assert be.relu_backward_from_output(want, other, out=None) is None


def test_elementwise_addresses_follow_new_arrays():
    """The address cache never hands an old array's memory for a new one: arrays made and
    dropped in turn (ids reused) each get their own values."""
    be = _available()
    rng = np.random.RandomState(4)
    for k in range(50):
        a = rng.uniform(-1, 1, (4, 1000)).astype(np.float32)
        b = np.full_like(a, float(k))
        y = be.add(a, b)
        np.testing.assert_array_equal(y, a + b)
        del a, b, y
        gc.collect()
