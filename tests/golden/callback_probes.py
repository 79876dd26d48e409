"""Probes of ``mx.callback`` and ``mx.monitor`` written once for MXNet 1.9.1 and symgraph:
``run(mx)`` returns {probe: JSON-able result}. ``make_metric.py`` stores MXNet's results;
``tests/metric/`` runs the same probes under symgraph and compares.

Log lines are captured from the root logger (MXNet logs through ``logging.info``). The speed
that Speedometer prints depends on the clock: it is replaced by ``<speed>`` after checking
that it is printed as ``%.2f``.
"""
import logging
import os
import re
import shutil
import tempfile

import numpy as np

SPEED = re.compile(r'Speed: (\d+\.\d\d|inf) samples/sec')


class _Capture(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


class capture_root_log(object):
    """Collect the messages logged on the root logger (INFO and above) inside the block."""

    def __enter__(self):
        self.handler = _Capture()
        root = logging.getLogger()
        self.level = root.level
        root.setLevel(logging.INFO)
        root.addHandler(self.handler)
        return self.handler.lines

    def __exit__(self, *exc):
        root = logging.getLogger()
        root.removeHandler(self.handler)
        root.setLevel(self.level)


def _speed_free(lines):
    out = []
    for line in lines:
        if 'Speed:' in line:
            assert SPEED.search(line), line
            line = SPEED.sub('Speed: <speed> samples/sec', line)
        out.append(line)
    return out


def _batches(rs, n):
    return [(rs.randint(0, 3, size=4).astype('float32'),
             rs.rand(4, 3).astype('float32')) for _ in range(n)]


def _fake_fit(mx, callback, metric, batches, epochs=2):
    """What Module.fit does around a batch-end callback: update the metric, then call."""
    for epoch in range(epochs):
        if metric is not None:
            metric.reset()
        for nbatch, (label, pred) in enumerate(batches):
            if metric is not None:
                metric.update([mx.nd.array(label)], [mx.nd.array(pred)])
            callback(mx.model.BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=metric,
                                            locals=locals()))


def run_callbacks(mx):
    rs = np.random.RandomState(7)
    batches = _batches(rs, 7)
    out = {}
    cases = {
        'speedometer_auto_reset': (lambda: mx.callback.Speedometer(4, 2),
                                   lambda: mx.metric.Accuracy()),
        'speedometer_no_reset': (lambda: mx.callback.Speedometer(4, 3, auto_reset=False),
                                 lambda: mx.metric.Accuracy()),
        'speedometer_composite': (lambda: mx.callback.Speedometer(4, 2),
                                  lambda: mx.metric.create(['acc', 'ce'])),
        'speedometer_no_metric': (lambda: mx.callback.Speedometer(4, 3), lambda: None),
        'log_train_metric': (lambda: mx.callback.log_train_metric(3),
                             lambda: mx.metric.create(['acc', 'mse'])),
        'log_train_metric_reset': (lambda: mx.callback.log_train_metric(2, auto_reset=True),
                                   lambda: mx.metric.Accuracy()),
        'progress_bar': (lambda: mx.callback.ProgressBar(total=7, length=10), lambda: None),
        'log_validation': (lambda: mx.callback.LogValidationMetricsCallback(),
                           lambda: mx.metric.create(['acc', 'ce'])),
        'log_validation_no_metric': (lambda: mx.callback.LogValidationMetricsCallback(),
                                     lambda: None),
    }
    for name, (make_cb, make_metric) in cases.items():
        with capture_root_log() as lines:
            _fake_fit(mx, make_cb(), make_metric(), batches)
        out['callback:' + name] = _speed_free(lines)

    # do_checkpoint / module_checkpoint over 5 epochs with period 2
    tmp = tempfile.mkdtemp()
    try:
        data = mx.sym.Variable('data')
        net = mx.sym.FullyConnected(data, num_hidden=2, name='fc')
        args = {'fc_weight': mx.nd.array(rs.rand(2, 3)), 'fc_bias': mx.nd.array(rs.rand(2))}
        prefix = os.path.join(tmp, 'ck')
        cb = mx.callback.do_checkpoint(prefix, period=2)
        with capture_root_log() as lines:
            for epoch in range(5):
                cb(epoch, net, args, {})
        out['do_checkpoint:files'] = sorted(os.listdir(tmp))
        out['do_checkpoint:log'] = [line.replace(tmp, '<tmp>') for line in lines]
        loaded = mx.nd.load(prefix + '-0004.params')
        out['do_checkpoint:params'] = {k: v.asnumpy().tolist() for k, v in loaded.items()}
        cb0 = mx.callback.do_checkpoint(os.path.join(tmp, 'p0'), period=0)
        cb0(0, net, args, {})
        out['do_checkpoint:period0'] = sorted(f for f in os.listdir(tmp) if f.startswith('p0'))
    finally:
        shutil.rmtree(tmp)

    calls = []

    class FakeModule(object):
        def save_checkpoint(self, prefix, epoch, save_optimizer_states=False):
            calls.append([prefix, epoch, save_optimizer_states])
    cb = mx.callback.module_checkpoint(FakeModule(), 'mod', period=3,
                                       save_optimizer_states=True)
    for epoch in range(7):
        cb(epoch)
    out['module_checkpoint'] = calls
    return out


def _mlp(mx):
    data = mx.sym.Variable('data')
    fc1 = mx.sym.FullyConnected(data, num_hidden=4, name='fc1')
    act = mx.sym.Activation(fc1, act_type='relu', name='relu1')
    fc2 = mx.sym.FullyConnected(act, num_hidden=3, name='fc2')
    bn = mx.sym.BatchNorm(fc2, name='bn', fix_gamma=False)
    return mx.sym.SoftmaxOutput(bn, name='softmax')


def _bound(mx, rs):
    net = _mlp(mx)
    exe = net.simple_bind(mx.cpu(), data=(2, 5), softmax_label=(2,))
    for name, arr in sorted(exe.arg_dict.items()):
        if name == 'softmax_label':
            arr[:] = np.array([0, 2], dtype='float32')
        else:
            arr[:] = rs.randn(*arr.shape).astype('float32')
    for name, arr in sorted(exe.aux_dict.items()):
        arr[:] = (rs.rand(*arr.shape) + 0.5).astype('float32')
    return exe


def _mon_lines(lines):
    """``Batch: <step> <name> <values>`` as [step, name, [floats]]."""
    res = []
    for line in lines:
        m = re.match(r'Batch: +(\d+) (\S+) +(.*)$', line, re.S)
        assert m, line
        vals = [float(v) for v in re.findall(r'[-+]?\d*\.?\d+(?:[eE][-+]?\d+)?|nan|inf',
                                             m.group(3))]
        res.append([int(m.group(1)), m.group(2), vals, line[:38]])
    return res


def run_monitor(mx):
    out = {}
    rs = np.random.RandomState(3)
    configs = {
        'default': dict(interval=2),
        'weights_outputs_sorted': dict(interval=1, pattern='.*weight|.*output', sort=True),
        'list_stat': dict(interval=3, pattern='fc.*',
                          stat_func=lambda x: [mx.nd.max(x), mx.nd.min(x)]),
        'array_stat': dict(interval=1, pattern='relu1_output|bn_moving.*',
                           stat_func=lambda x: mx.nd.sum(x, axis=0)),
        'monitor_all': dict(interval=1, pattern='fc2.*', monitor_all=True),
    }
    for name, kwargs in configs.items():
        exe = _bound(mx, np.random.RandomState(3))
        mon = mx.mon.Monitor(**kwargs)
        mon.install(exe)
        with capture_root_log() as lines:
            for _ in range(4):
                mon.tic()
                exe.forward(is_train=True)
                exe.backward()
                mon.toc_print()
        out['monitor:' + name] = _mon_lines(lines)
    # toc without tic, and the tuples toc returns
    exe = _bound(mx, rs)
    mon = mx.mon.Monitor(1, pattern='softmax_output')
    mon.install(exe)
    out['monitor:toc_without_tic'] = mon.toc()
    mon.tic()
    exe.forward()
    out['monitor:toc'] = [[n, k, [float(x) for x in v.split()]] for n, k, v in mon.toc()]
    return out


def run(mx):
    out = run_callbacks(mx)
    out.update(run_monitor(mx))
    return out
