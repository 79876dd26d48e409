"""mx.lr_scheduler against MXNet 1.9.1: the rate at every update count (warmup included)
and the log lines (``tests/golden/data/optimizer_schedulers.json``), and bad input."""
import json
import logging
import os

import pytest

import symgraph as mx
import optimizer_cases as cases

with open(os.path.join(os.path.dirname(__file__), 'golden', 'data',
                       'optimizer_schedulers.json')) as _f:
    GOLD = json.load(_f)


def test_update_counts_are_the_generators():
    assert GOLD['updates'] == cases.SCHED_UPDATES
    assert sorted(GOLD['cases']) == sorted(c[0] for c in cases.SCHEDULER_CASES)


@pytest.mark.parametrize('name', sorted(GOLD['cases']))
def test_rates_and_log_lines_match_mxnet(name):
    lrs, log = cases.run_schedulers(mx)[name]
    want = GOLD['cases'][name]
    assert lrs == pytest.approx(want['lrs'], rel=1e-15, abs=0)
    assert log == want['log']


def test_log_goes_to_the_root_logger_without_configuring_it(caplog):
    root = logging.getLogger()
    handlers = list(root.handlers)
    sched = mx.lr_scheduler.FactorScheduler(step=1, factor=0.5, base_lr=1.0)
    with caplog.at_level(logging.INFO):
        sched(3)
    assert [r.name for r in caplog.records] == ['root', 'root']
    assert caplog.records[0].getMessage() == 'Update[3]: Change learning rate to 5.00000e-01'
    assert root.handlers == handlers


def test_warmup_linear_and_constant():
    s = mx.lr_scheduler.CosineScheduler(max_update=10, base_lr=1.0, warmup_steps=4,
                                        warmup_begin_lr=0.2)
    assert [s(n) for n in range(4)] == pytest.approx([0.2, 0.4, 0.6, 0.8])
    s = mx.lr_scheduler.PolyScheduler(max_update=10, base_lr=1.0, warmup_steps=4,
                                      warmup_begin_lr=0.2, warmup_mode='constant')
    assert [s(n) for n in range(4)] == [0.2] * 4
    assert s(4) == 1.0 and s(10) == 0.0 and s(20) == 0.0


def test_factor_scheduler_stops_at_stop_factor_lr(caplog):
    s = mx.lr_scheduler.FactorScheduler(step=1, factor=0.1, stop_factor_lr=1e-3, base_lr=1.0)
    with caplog.at_level(logging.INFO):
        assert s(10) == 1e-3
    assert 'will not change in the future' in caplog.records[-1].getMessage()


@pytest.mark.parametrize('make,match', [
    (lambda: mx.lr_scheduler.FactorScheduler(step=0), 'greater or equal than 1'),
    (lambda: mx.lr_scheduler.FactorScheduler(step=2, factor=1.5), 'no more than 1'),
    (lambda: mx.lr_scheduler.MultiFactorScheduler(step=[3, 2]), 'increasing'),
    (lambda: mx.lr_scheduler.MultiFactorScheduler(step=[0, 2]), 'greater or equal'),
    (lambda: mx.lr_scheduler.MultiFactorScheduler(step=[]), 'non-empty list'),
    (lambda: mx.lr_scheduler.PolyScheduler(max_update=0), 'strictly positive'),
    (lambda: mx.lr_scheduler.CosineScheduler(max_update=5, warmup_mode='cubic'),
     "warmup_mode='cubic'"),
    (lambda: mx.lr_scheduler.CosineScheduler(max_update=5, base_lr=0.1,
                                             warmup_begin_lr=0.5), 'higher than'),
    (lambda: mx.lr_scheduler.CosineScheduler(max_update=5, warmup_steps=-1), 'positive or 0'),
])
def test_bad_arguments_are_value_errors(make, match):
    with pytest.raises(ValueError, match=match):
        make()


@pytest.mark.parametrize('make,what', [
    (lambda: mx.lr_scheduler.PolyScheduler(max_update=5.0), 'max_update'),
    (lambda: mx.lr_scheduler.CosineScheduler(max_update=5, warmup_steps=2.0), 'warmup_steps'),
])
def test_non_integer_counts_are_type_errors(make, what):
    with pytest.raises(TypeError, match=what):
        make()


def test_base_class_must_be_overridden():
    with pytest.raises(NotImplementedError):
        mx.lr_scheduler.LRScheduler()(1)


def test_optimizer_learning_rate_follows_the_scheduler():
    sched = mx.lr_scheduler.MultiFactorScheduler(step=[2, 4], factor=0.5, base_lr=0.4)
    opt = mx.optimizer.SGD(lr_scheduler=sched)
    assert opt.learning_rate == 0.4
    w, g = mx.nd.ones((2,)), mx.nd.ones((2,))
    upd = mx.optimizer.get_updater(opt)
    for _ in range(5):
        upd(0, g, w)
    assert opt.num_update == 5 and opt.learning_rate == pytest.approx(0.1)
