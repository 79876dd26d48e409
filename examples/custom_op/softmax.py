"""A softmax loss written as a Python custom operator, trained inside an MLP.

The same MLP is trained twice from the same initial weights on the same generated data:
once with the built-in ``SoftmaxOutput`` and once with the custom ``softmax`` op below
(forward: softmax; backward: ``p - onehot(label)``, the gradient ``SoftmaxOutput`` gives).
Both loss curves are printed; the final test accuracies agree within 1 point.

``_export_softmax`` shows how a Custom operator gets into ONNX: an exporter registered for
its ``op_type`` with ``mx.onnx.register_custom_exporter`` writes the ONNX nodes of its
inference forward (here one ``Softmax``; the label is read only by the backward), so
``mx.onnx.export_model`` writes a model ONNX Runtime runs. Without it the node would be
written in the ``symgraph.custom`` domain, with a warning.

The same script runs on MXNet 1.9.1 with ``import mxnet as mx`` instead of symgraph.
"""
import numpy as np

import symgraph as mx


class Softmax(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        x = in_data[0].asnumpy()
        y = np.exp(x - x.max(axis=1, keepdims=True))
        y /= y.sum(axis=1, keepdims=True)
        self.assign(out_data[0], req[0], mx.nd.array(y))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        label = in_data[1].asnumpy().ravel().astype(np.int64)
        y = out_data[0].asnumpy()
        y[np.arange(label.shape[0]), label] -= 1.0
        self.assign(in_grad[0], req[0], mx.nd.array(y))
        self.assign(in_grad[1], req[1], 0)


@mx.operator.register('softmax')
class SoftmaxProp(mx.operator.CustomOpProp):
    def __init__(self):
        super(SoftmaxProp, self).__init__(need_top_grad=False)

    def list_arguments(self):
        return ['data', 'label']

    def list_outputs(self):
        return ['output']

    def infer_shape(self, in_shape):
        data_shape = in_shape[0]
        label_shape = (in_shape[0][0],)
        output_shape = in_shape[0]
        return [data_shape, label_shape], [output_shape], []

    def infer_type(self, in_type):
        return in_type, [in_type[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        return Softmax()


def _export_softmax(g, node):
    """ONNX exporter of the 'softmax' op (symgraph only: MXNet 1.9.1 has no such hook)."""
    data = g.inputs(node)[0]
    g.add('Softmax', [data], g.outputs(node), axis=1)


if hasattr(getattr(mx, 'onnx', None), 'register_custom_exporter'):
    try:
        mx.onnx.register_custom_exporter('softmax')(_export_softmax)
    except ValueError:      # this file run a second time in one process: one is enough
        pass


def make_data(rng, n, dim=10, classes=4):
    """Gaussian blobs around fixed centres, classes 0..3, with a nonlinear twist."""
    centres = np.random.RandomState(1).normal(0, 1.2, (classes, dim))
    label = rng.randint(0, classes, n)
    x = centres[label] + rng.normal(0, 1.0, (n, dim))
    x[:, 0] += 0.5 * np.sin(3 * x[:, 1])
    return x.astype(np.float32), label.astype(np.float32)


def mlp(loss):
    data = mx.sym.Variable('data')
    label = mx.sym.Variable('softmax_label')
    h = mx.sym.FullyConnected(data, num_hidden=32, name='fc1')
    h = mx.sym.Activation(h, act_type='relu', name='relu1')
    h = mx.sym.FullyConnected(h, num_hidden=4, name='fc2')
    if loss == 'builtin':
        return mx.sym.SoftmaxOutput(h, label, name='softmax')
    return mx.sym.Custom(h, label, op_type='softmax', name='softmax')


def train(loss, x, y, x_test, y_test, epochs=12, batch=50, lr=0.1, seed=3):
    net = mlp(loss)
    exe = net.simple_bind(mx.cpu(), data=(batch, x.shape[1]), softmax_label=(batch,),
                          grad_req={'data': 'null', 'softmax_label': 'null',
                                    'fc1_weight': 'write', 'fc1_bias': 'write',
                                    'fc2_weight': 'write', 'fc2_bias': 'write'})
    rng = np.random.RandomState(seed)
    params = ['fc1_weight', 'fc1_bias', 'fc2_weight', 'fc2_bias']
    for n in params:
        shape = exe.arg_dict[n].shape
        exe.arg_dict[n][:] = (rng.normal(0, 0.3, shape) if n.endswith('weight')
                              else np.zeros(shape)).astype(np.float32)
    curve = []
    for epoch in range(epochs):
        order = rng.permutation(len(x))
        losses = []
        for k in range(0, len(x) - batch + 1, batch):
            idx = order[k:k + batch]
            exe.arg_dict['data'][:] = x[idx]
            exe.arg_dict['softmax_label'][:] = y[idx]
            prob = exe.forward(is_train=True)[0].asnumpy()
            exe.backward()
            for n in params:
                exe.arg_dict[n][:] = exe.arg_dict[n] - (lr / batch) * exe.grad_dict[n]
            losses.append(-np.log(prob[np.arange(batch), y[idx].astype(int)] + 1e-12).mean())
        curve.append(float(np.mean(losses)))
    correct = 0
    for k in range(0, len(x_test), batch):
        exe.arg_dict['data'][:] = x_test[k:k + batch]
        prob = exe.forward(is_train=False)[0].asnumpy()
        correct += int((prob.argmax(axis=1) == y_test[k:k + batch]).sum())
    return curve, correct / len(x_test)


def main():
    rng = np.random.RandomState(0)
    x, y = make_data(rng, 2000)
    x_test, y_test = make_data(rng, 1000)
    results = {}
    for loss in ('builtin', 'custom'):
        results[loss] = train(loss, x, y, x_test, y_test)
    print('epoch  SoftmaxOutput  custom softmax   (training cross-entropy)')
    for e, (a, b) in enumerate(zip(results['builtin'][0], results['custom'][0])):
        print('%5d  %13.4f  %14.4f' % (e, a, b))
    acc_b, acc_c = results['builtin'][1], results['custom'][1]
    print('test accuracy: SoftmaxOutput %.3f, custom softmax %.3f' % (acc_b, acc_c))
    assert abs(acc_b - acc_c) <= 0.01, 'accuracies differ by more than 1 point'
    return results


if __name__ == '__main__':
    main()
