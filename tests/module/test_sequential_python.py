"""mx.mod.SequentialModule, PythonModule and PythonLossModule: chains of modules train as
the one network they make up."""
import numpy as np
import pytest

import symgraph as mx


def lower(name='fc1'):
    h = mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=8, name=name)
    return mx.sym.Activation(h, act_type='relu', name='relu1')


def upper():
    fc = mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=3, name='fc2')
    return mx.sym.SoftmaxOutput(fc, name='softmax')


def start_params(net, params):
    args, _ = params(net, (4, 5))
    return args


def chain():
    seq = mx.mod.SequentialModule()
    seq.add(mx.mod.Module(lower(), label_names=None))
    seq.add(mx.mod.Module(upper()), take_labels=True, auto_wiring=True)
    return seq


def softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_chain_trains_as_the_whole_network(net, data, params):
    x, y = data
    args = start_params(net, params)
    whole = mx.mod.Module(net)
    seq = chain()
    opt = {'learning_rate': 0.2, 'momentum': 0.9, 'wd': 1e-3}
    for mod in (whole, seq):
        mod.fit(mx.io.NDArrayIter(x, y, 4), arg_params=args, num_epoch=2,
                optimizer_params=opt)
    assert seq.output_shapes == [('softmax_output', (4, 3))]
    assert seq.label_shapes[0][0] == 'softmax_label'
    got = seq.get_params()[0]
    assert sorted(got) == sorted(args)
    for k, v in whole.get_params()[0].items():
        np.testing.assert_allclose(got[k].asnumpy(), v.asnumpy(), rtol=1e-5, atol=1e-7)
    it = mx.io.NDArrayIter(x, y, 4)
    np.testing.assert_allclose(seq.predict(it).asnumpy(), whole.predict(it).asnumpy(),
                               rtol=1e-5)
    assert seq.score(it, 'acc') == whole.score(it, 'acc')


def test_python_loss_module_trains_as_softmax_output(net, data, params):
    x, y = data
    args = start_params(net, params)

    def grad(scores, labels):      # d/dscores of cross-entropy(softmax(scores))
        p = softmax(scores.asnumpy())
        p[np.arange(len(p)), labels.asnumpy().astype(int)] -= 1
        return p
    scores = mx.sym.FullyConnected(lower(), num_hidden=3, name='fc2')
    seq = mx.mod.SequentialModule()
    seq.add(mx.mod.Module(scores, label_names=None))
    seq.add(mx.mod.PythonLossModule(grad_func=grad), take_labels=True, auto_wiring=True)
    whole = mx.mod.Module(net)
    opt = {'learning_rate': 0.2, 'momentum': 0.9}
    for mod in (whole, seq):
        mod.fit(mx.io.NDArrayIter(x, y, 4), arg_params=args, num_epoch=2,
                optimizer_params=opt)
    assert seq.output_names == ['pyloss_output']
    for k, v in whole.get_params()[0].items():
        np.testing.assert_allclose(seq.get_params()[0][k].asnumpy(), v.asnumpy(),
                                   rtol=1e-5, atol=1e-7)
    # the loss module outputs the scores; accuracy on them is the softmax's
    it = mx.io.NDArrayIter(x, y, 4)
    assert seq.score(it, 'acc') == whole.score(it, 'acc')


def test_python_module_subclass():
    class Double(mx.mod.PythonModule):
        def __init__(self):
            super().__init__(['data'], None, ['double_output'])

        def _compute_output_shapes(self):
            return [('double_output', self._data_shapes[0][1])]

        def forward(self, data_batch, is_train=None):
            self._out = data_batch.data[0] * 2

        def get_outputs(self, merge_multi_context=True):
            return [self._out]
    mod = Double()
    mod.bind([('data', (2, 3))])
    mod.init_params()
    assert mod.get_params() == ({}, {})
    np.testing.assert_array_equal(mod.predict(mx.nd.ones((2, 3))).asnumpy(),
                                  np.full((2, 3), 2.0))
    with pytest.raises(ValueError, match='only support write gradient'):
        mod.bind([('data', (2, 3))], force_rebind=True, grad_req='add')
    with pytest.raises(ValueError, match=r"name \['x'\] but the module takes \['data'\]"):
        mod.bind([('x', (2, 3))], force_rebind=True)


def test_python_loss_module_errors():
    with pytest.raises(ValueError, match='one data and one label'):
        mx.mod.PythonLossModule(data_names=('a', 'b'))
    with pytest.raises(TypeError, match='callable'):
        mx.mod.PythonLossModule(grad_func=3)
    loss = mx.mod.PythonLossModule()
    loss.bind([('data', (2, 3))], [('softmax_label', (2,))])
    loss.forward(mx.io.DataBatch([mx.nd.ones((2, 3))], [mx.nd.ones((2,))]))
    with pytest.raises(NotImplementedError):
        loss.backward()
    with pytest.raises(ValueError, match='out_grads should be None'):
        loss.backward(out_grads=[mx.nd.ones((2, 3))])


def test_sequential_errors(net):
    seq = mx.mod.SequentialModule()
    with pytest.raises(ValueError, match='empty SequentialModule'):
        seq.bind([('data', (4, 5))])
    with pytest.raises(ValueError, match='Unknown meta "take_label"'):
        seq.add(mx.mod.Module(net), take_label=True)
    seq.add(mx.mod.Module(lower(), label_names=None))
    two = mx.sym.var('a') + mx.sym.var('b')
    seq.add(mx.mod.Module(two, data_names=['a', 'b'], label_names=None), auto_wiring=True)
    with pytest.raises(ValueError, match=r"auto_wiring: module 1 has data names \['a', 'b'\] "
                                         r"for 1 inputs"):
        seq.bind([('data', (4, 5))])
    assert not seq.binded
    # two modules with the same parameter names
    seq = mx.mod.SequentialModule()
    seq.add(mx.mod.Module(lower(), label_names=None))
    seq.add(mx.mod.Module(lower('fc1'), label_names=None), auto_wiring=True)
    seq.bind([('data', (4, 8))], for_training=False)
    with pytest.raises(ValueError, match='Duplicated parameter names: name "fc1_weight"'):
        seq.init_params()
