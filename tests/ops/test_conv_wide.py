"""The wide-grid im2col of unit-stride convolutions, forced on for every conv case.

By default the wide path is taken only when its extra columns cost little (large maps),
which the small test shapes never reach; here every Convolution/Deconvolution case runs
through it, forward, numeric gradients and the executor.
"""
import pytest

from harness import check_forward, check_gradient, check_symbolic, parametrize_cases
import test_conv

CASES = [c for c in test_conv.CASES if c.op in ('Convolution', 'Deconvolution')]


@pytest.fixture(autouse=True)
def wide_everywhere(monkeypatch):
    from symgraph.ops import _conv_impl as impl
    monkeypatch.setattr(impl, '_WIDE_MAX_RATIO', 1e9)


@parametrize_cases(CASES)
def test_forward_wide(case):
    check_forward(case)


@parametrize_cases(CASES)
def test_gradient_wide(case):
    check_gradient(case)


@parametrize_cases(CASES)
def test_symbolic_wide(case):
    check_symbolic(case)


def test_the_wide_path_is_taken(monkeypatch):
    from symgraph.ops import _conv_impl as impl
    calls = []
    real = impl._wide_cols
    monkeypatch.setattr(impl, '_wide_cols', lambda *a, **k: calls.append(1) or real(*a, **k))
    check_forward(next(c for c in CASES if c.op == 'Convolution'))
    assert calls, 'the wide im2col was not used'
