"""Module.fit against MXNet 1.9.1's golden runs (tests/golden/make_module.py): the final
parameters, the logged lines, the checkpoint files, predict and score after training, on
one, two and three devices; resuming from MXNet's checkpoint and optimizer states; and
mx.model.FeedForward."""
import json
import logging
import os
import re

import numpy as np
import pytest

import symgraph as mx

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, '..', 'golden', 'module')
DATA = np.load(os.path.join(GOLDEN, 'data.npz'))
RUNS = np.load(os.path.join(GOLDEN, 'runs.npz'))
with open(os.path.join(GOLDEN, 'runs.json')) as _f:
    REPORT = json.load(_f)
BATCH = 16
#: float32 tolerance of the comparisons: the runs are 8 updates of float32 arithmetic
#: whose order of summation differs from MXNet's kernels
RTOL, ATOL = 1e-5, 1e-6
#: ... plus this many times the run's own float32 sensitivity (see :func:`sensitivity`):
#: kernels that round differently (MXNet's, oneDNN's AVX-512 ones instead of AVX2, another
#: BLAS) move the trained values as much as a one-ulp change of the start does. Measured
#: ratio of the difference from MXNet to that sensitivity: at most 5.8 (lenet_adam) on
#: AVX2 and AVX-512 machines; lenet_sgd (BatchNorm, momentum 0.9, lr 0.1) moves by 5e-5
#: (2.6e-3 relative) for a one-ulp start on either.
SENSITIVITY_FACTOR = 8


def mlp():
    data = mx.sym.var('data')
    h = mx.sym.FullyConnected(data, num_hidden=32, name='fc1')
    h = mx.sym.Activation(h, act_type='relu', name='relu1')
    h = mx.sym.FullyConnected(h, num_hidden=10, name='fc2')
    return mx.sym.SoftmaxOutput(h, name='softmax')


def lenet():
    data = mx.sym.var('data')
    h = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=4, no_bias=True,
                           name='conv1')
    h = mx.sym.BatchNorm(h, name='bn1')
    h = mx.sym.Activation(h, act_type='relu', name='relu1')
    h = mx.sym.Pooling(h, pool_type='max', kernel=(2, 2), stride=(2, 2), name='pool1')
    h = mx.sym.Convolution(h, kernel=(3, 3), pad=(1, 1), num_filter=8, name='conv2')
    h = mx.sym.Activation(h, act_type='relu', name='relu2')
    h = mx.sym.Pooling(h, pool_type='max', kernel=(2, 2), stride=(2, 2), name='pool2')
    h = mx.sym.Flatten(h, name='flatten')
    h = mx.sym.FullyConnected(h, num_hidden=16, name='fc1')
    h = mx.sym.Activation(h, act_type='relu', name='relu3')
    h = mx.sym.FullyConnected(h, num_hidden=10, name='fc2')
    return mx.sym.SoftmaxOutput(h, name='softmax')


NETS = {'mlp': (mlp, (64,)), 'lenet': (lenet, (1, 8, 8))}


def initial(net):
    args, aux = {}, {}
    for k in DATA.files:
        owner, _, name = k.partition(':')
        if owner == net:
            target = aux if name.endswith(('_moving_mean', '_moving_var')) else args
            target[name] = mx.nd.array(DATA[k])
    return args, aux


def iters(net):
    shape = NETS[net][1]
    train = mx.io.NDArrayIter(DATA['x_train'].reshape((-1,) + shape), DATA['y_train'],
                              BATCH, shuffle=False)
    val = mx.io.NDArrayIter(DATA['x_val'].reshape((-1,) + shape), DATA['y_val'], BATCH,
                            shuffle=False)
    return train, val


def optimizer(kind):
    if kind == 'sgd':
        return 'sgd', {'learning_rate': 0.1, 'momentum': 0.9, 'wd': 1e-3,
                       'lr_scheduler': mx.lr_scheduler.FactorScheduler(step=3, factor=0.5)}, \
            'acc'
    return 'adam', {'learning_rate': 0.01}, 'ce'


class Capture(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def clean(lines, prefix):
    return [re.sub(r'Time cost=[\d.]+', 'Time cost=<t>', line.replace(prefix, '<prefix>'))
            for line in lines]


def capture_fit(fn, prefix):
    cap = Capture()
    root = logging.getLogger()
    old = root.level
    root.addHandler(cap)
    root.setLevel(logging.INFO)
    try:
        fn()
    finally:
        root.removeHandler(cap)
        root.setLevel(old)
    return clean(cap.lines, prefix)


def assert_close(got, want, what, spread=0.0):
    """``|got - want| <= ATOL + RTOL |want| + SENSITIVITY_FACTOR * spread`` elementwise,
    ``spread`` the float32 sensitivity of the value (0: plain rtol/atol)."""
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL + SENSITIVITY_FACTOR * spread,
                               err_msg=what)


def one_ulp_apart(params, seed):
    """``params`` with every element moved one float32 ulp up or down at random."""
    rs = np.random.RandomState(seed)
    out = {}
    for k, v in params.items():
        a = v.asnumpy().astype(np.float32)
        towards = np.where(rs.rand(*a.shape) < 0.5, np.float32(-np.inf), np.float32(np.inf))
        out[k] = mx.nd.array(np.nextafter(a, towards.astype(np.float32)))
    return out


def train(name, tmp_path, perturb=None):
    entry = REPORT[name]
    net = entry['net']
    args, aux = initial(net)
    if perturb is not None:
        args = one_ulp_apart(args, perturb)
    train_it, val_it = iters(net)
    opt, opt_params, metric = optimizer(entry['optimizer'])
    contexts = [mx.cpu(i) for i in range(entry['contexts'])]
    mod = mx.mod.Module(NETS[net][0](), context=contexts,
                        work_load_list=entry['work_load_list'])
    prefix = str(tmp_path / name)
    log = capture_fit(lambda: mod.fit(
        train_it, eval_data=val_it, eval_metric=metric, optimizer=opt,
        optimizer_params=opt_params, arg_params=args, aux_params=aux,
        epoch_end_callback=mx.callback.do_checkpoint(prefix), num_epoch=2), prefix)
    return mod, log, prefix, val_it


RUN_NAMES = ['mlp_sgd', 'mlp_adam', 'lenet_sgd', 'lenet_adam', 'mlp_sgd_2cpu', 'mlp_sgd_wl']


@pytest.fixture(scope='module', params=RUN_NAMES)
def run(request, tmp_path_factory):
    name = request.param
    mod, log, prefix, val_it = train(name, tmp_path_factory.mktemp(name))
    return name, mod, log, prefix, val_it


def _values(mod, prefix, val_it):
    """{key as in runs.npz: array} of a trained module: parameters, checkpoints, predict."""
    arg_params, aux_params = mod.get_params()
    out = {'arg:' + k: v.asnumpy() for k, v in arg_params.items()}
    out.update(('aux:' + k, v.asnumpy()) for k, v in aux_params.items())
    for epoch in (1, 2):
        for k, v in mx.nd.load('%s-%04d.params' % (prefix, epoch)).items():
            out['ckpt%d|%s' % (epoch, k)] = v.asnumpy()
    out['predict'] = mod.predict(val_it).asnumpy()
    return out


@pytest.fixture(scope='module')
def sensitivity(run, tmp_path_factory):
    """{value key: float32 sensitivity}: how far each trained value (a whole tensor's
    largest change) moves when the initial parameters move by one ulp, over eight random
    such moves. It measures the float32 conditioning of this very run, whatever the
    machine's kernels. Eight, not two: lenet_sgd sits at a tie (a max-pool or ReLU
    decision) that about half of the one-ulp moves flip, moving it 5.04e-5; on the Intel
    AVX-512 VM of 2026-12-02 oneDNN's kernels flip it against MXNet's run, and seeds 1
    and 2 happened not to (seeds 3, 6, 7, 9, 10, 12 of 1-12 did)."""
    name, mod, _, prefix, val_it = run
    base = _values(mod, prefix, val_it)
    spread = dict.fromkeys(base, 0.0)
    for seed in range(1, 9):
        m, _, p, v = train(name, tmp_path_factory.mktemp('%s_ulp%d' % (name, seed)),
                           perturb=seed)
        for k, val in _values(m, p, v).items():
            spread[k] = max(spread[k], float(np.abs(val - base[k]).max()))
    return spread


def test_final_parameters(run, sensitivity):
    name, mod, _, _, _ = run
    arg_params, aux_params = mod.get_params()
    want = {k.split('|', 1)[1] for k in RUNS.files if k.startswith(name + '|a')}
    assert {'arg:' + k for k in arg_params} | {'aux:' + k for k in aux_params} == want
    for k, v in arg_params.items():
        assert_close(v.asnumpy(), RUNS['%s|arg:%s' % (name, k)], '%s %s' % (name, k),
                     sensitivity['arg:' + k])
    for k, v in aux_params.items():
        assert_close(v.asnumpy(), RUNS['%s|aux:%s' % (name, k)], '%s %s' % (name, k),
                     sensitivity['aux:' + k])


def test_logged_lines(run):
    name, _, log, _, _ = run
    want = REPORT[name]['log']
    assert [re.sub(r'=[\d.]+$', '', line) for line in log] == \
        [re.sub(r'=[\d.]+$', '', line) for line in want]
    for got, exp in zip(log, want):
        m, e = re.search(r'=([\d.]+)$', got), re.search(r'=([\d.]+)$', exp)
        if e and 'Time cost' not in exp:
            assert float(m.group(1)) == pytest.approx(float(e.group(1)), abs=2e-6), got


def test_checkpoint_files(run, sensitivity):
    name, _, _, prefix, _ = run
    for epoch, entry in REPORT[name]['checkpoints'].items():
        with open('%s-symbol.json' % prefix, encoding='utf-8') as f:
            text = f.read()
        # the very text MXNet wrote (example/image-classification's fit.py asserts this
        # when it resumes); the structural checks below name a difference
        assert text == entry['symbol']
        ours = json.loads(text)
        theirs = json.loads(entry['symbol'])
        assert [(n['op'], n['name'], n.get('attrs', {}), [i[:2] for i in n['inputs']])
                for n in ours['nodes']] == \
            [(n['op'], n['name'], n.get('attrs', {}), [i[:2] for i in n['inputs']])
             for n in theirs['nodes']]
        assert ours['arg_nodes'] == theirs['arg_nodes']
        assert [h[:2] for h in ours['heads']] == [h[:2] for h in theirs['heads']]
        saved = mx.nd.load('%s-%04d.params' % (prefix, int(epoch)))
        assert sorted(saved) == sorted(entry['params'])
        for k, v in saved.items():
            assert_close(v.asnumpy(), RUNS['%s|ckpt%s|%s' % (name, epoch, k)],
                         '%s epoch %s %s' % (name, epoch, k),
                         sensitivity['ckpt%s|%s' % (epoch, k)])


def test_predict_and_score(run, sensitivity):
    name, mod, _, _, val_it = run
    pred = mod.predict(val_it)
    assert pred.shape == (30, 10)       # the padded last batch is cut
    assert_close(pred.asnumpy(), RUNS['%s|predict' % name], name, sensitivity['predict'])
    metric = optimizer(REPORT[name]['optimizer'])[2]
    (got_name, got), = mod.score(val_it, metric)
    (want_name, want), = REPORT[name]['score']
    assert got_name == want_name and got == pytest.approx(want, rel=1e-5)


@pytest.mark.parametrize('name', ['mlp_sgd', 'mlp_adam'])
def test_resume_from_mxnets_checkpoint_and_optimizer_states(name, tmp_path):
    """Module.load of MXNet's files (symbol, params, optimizer states) and one more epoch."""
    entry = REPORT[name]
    prefix = str(tmp_path / name)
    with open(prefix + '-symbol.json', 'w') as f:
        f.write(entry['checkpoints']['2']['symbol'])
    mx.nd.save(prefix + '-0002.params',
               {k: mx.nd.array(RUNS['%s|ckpt2|%s' % (name, k)])
                for k in entry['checkpoints']['2']['params']})
    with open(prefix + '-0002.states', 'wb') as f:
        f.write(bytes.fromhex(entry['states_hex']))
    mod = mx.mod.Module.load(prefix, 2, load_optimizer_states=True)
    train_it, val_it = iters('mlp')
    opt, opt_params, metric = optimizer(entry['optimizer'])
    with pytest.warns(UserWarning, match='Parameters already initialized'):   # as MXNet
        log = capture_fit(lambda: mod.fit(train_it, eval_data=val_it, eval_metric=metric,
                                          optimizer=opt, optimizer_params=opt_params,
                                          begin_epoch=2, num_epoch=3), prefix)
    want = REPORT[name + '_resume']['log']
    assert [line.split('=')[0] for line in log] == [line.split('=')[0] for line in want]
    for k, v in mod.get_params()[0].items():
        assert_close(v.asnumpy(), RUNS['%s_resume|arg:%s' % (name, k)], k)


def test_feedforward(tmp_path):
    name = 'ff_mlp_sgd'
    entry = REPORT[name]
    args, aux = initial('mlp')
    train_it, val_it = iters('mlp')
    nbatches = []
    with pytest.warns(DeprecationWarning, match='FeedForward has been deprecated'):
        model = mx.model.FeedForward(mlp(), num_epoch=3, epoch_size=3, optimizer='sgd',
                                     learning_rate=0.1, momentum=0.9, wd=1e-3,
                                     arg_params=args, aux_params=aux)
    log = capture_fit(lambda: model.fit(
        train_it, eval_data=val_it, eval_metric='acc',
        batch_end_callback=lambda p: nbatches.append([p.epoch, p.nbatch])), 'no prefix')
    assert [line.split('=')[0] for line in log] == \
        [line.split('=')[0] for line in entry['log']]
    assert log[-1] == entry['log'][-1]              # the last validation accuracy
    assert nbatches == entry['nbatches']
    for k, v in model.arg_params.items():
        assert_close(v.asnumpy(), RUNS['%s|arg:%s' % (name, k)], k)
    assert_close(model.predict(val_it), RUNS['%s|predict' % name], 'predict')
    assert model.score(val_it) == pytest.approx(entry['score'])
    prefix = str(tmp_path / name)
    model.save(prefix)
    assert sorted(os.listdir(str(tmp_path))) == entry['files']
    with pytest.warns(DeprecationWarning):
        loaded = mx.model.FeedForward.load(prefix, 3)
    assert_close(loaded.predict(val_it), RUNS['%s|predict' % name], 'loaded predict')


def test_several_devices_equal_one_device_over_a_whole_fit(tmp_path):
    """2 x cpu (kvstore 'local', updates in the store) and 3 x cpu with uneven work loads
    give the single device's parameters to float32 rounding."""
    one, _, _, _ = train('mlp_sgd', tmp_path)
    two, _, _, _ = train('mlp_sgd_2cpu', tmp_path)
    three, _, _, _ = train('mlp_sgd_wl', tmp_path)
    assert [len(m._context) for m in (one, two, three)] == [1, 2, 3]
    assert two._kvstore is not None and two._update_on_kvstore
    assert three._exec_group.slices == [slice(0, 4), slice(4, 12), slice(12, 16)]
    for k, v in one.get_params()[0].items():
        for other in (two, three):
            np.testing.assert_allclose(other.get_params()[0][k].asnumpy(), v.asnumpy(),
                                       rtol=1e-5, atol=1e-7, err_msg=k)
