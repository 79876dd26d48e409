"""Train an MLP with the plain executor and SGD on generated data.

    python examples/mlp.py [--steps 300]

The script is MXNet 1.x code: replace ``import symgraph as mx`` by ``import mxnet as mx``
and it runs the same way. It declares the network, prints its inferred shapes, trains on
a generated 10-class problem (Gaussian clusters in 32 dimensions) and prints the loss
falling and the held-out accuracy.
"""
import argparse

import numpy as np

import symgraph as mx


def make_data(rng, n, centers):
    labels = rng.randint(0, len(centers), n)
    x = centers[labels] + rng.normal(0, 1.0, (n, centers.shape[1]))
    return x.astype(np.float32), labels.astype(np.float32)


def build_mlp(num_classes):
    data = mx.sym.var('data')
    h = mx.sym.FullyConnected(data, num_hidden=64, name='fc1')
    h = mx.sym.Activation(h, act_type='relu', name='relu1')
    h = mx.sym.FullyConnected(h, num_hidden=64, name='fc2')
    h = mx.sym.Activation(h, act_type='relu', name='relu2')
    h = mx.sym.FullyConnected(h, num_hidden=num_classes, name='fc3')
    return mx.sym.SoftmaxOutput(h, name='softmax')


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--steps', type=int, default=300)
    ap.add_argument('--batch', type=int, default=64)
    ap.add_argument('--lr', type=float, default=0.1)
    args = ap.parse_args()

    rng = np.random.RandomState(42)
    centers = rng.normal(0, 0.45, (10, 32))
    x_train, y_train = make_data(rng, 4096, centers)
    x_test, y_test = make_data(rng, 1024, centers)

    net = build_mlp(10)
    arg_shapes, out_shapes, _ = net.infer_shape(data=(args.batch, 32))
    print('infer_shape(data=(%d, 32)):' % args.batch)
    for name, shape in zip(net.list_arguments(), arg_shapes):
        print('  %-14s %s' % (name, shape))
    print('  %-14s %s' % (net.list_outputs()[0], out_shapes[0]))

    exe = net.simple_bind(mx.cpu(), data=(args.batch, 32))
    params = [k for k in net.list_arguments() if k not in ('data', 'softmax_label')]
    for k in params:                    # Xavier-style uniform init, biases zero
        w = exe.arg_dict[k]
        if k.endswith('weight'):
            bound = np.sqrt(6.0 / (w.shape[0] + w.shape[1]))
            w[:] = rng.uniform(-bound, bound, w.shape)

    print('training %d steps of SGD (lr %.2f, batch %d)' % (args.steps, args.lr, args.batch))
    losses = []
    for step in range(1, args.steps + 1):
        idx = rng.randint(0, len(x_train), args.batch)
        exe.forward(is_train=True, data=x_train[idx], softmax_label=y_train[idx])
        prob = exe.outputs[0].asnumpy()
        losses.append(-np.log(prob[np.arange(args.batch), y_train[idx].astype(int)]
                              + 1e-12).mean())
        exe.backward()
        for k in params:            # SoftmaxOutput's gradient is summed over the batch
            exe.arg_dict[k][:] -= (args.lr / args.batch) * exe.grad_dict[k]
        if step % 25 == 0 or step == 1:
            print('  step %4d  loss %.4f' % (step, float(np.mean(losses[-25:]))))

    test_exe = exe.reshape(data=(len(x_test), 32), softmax_label=(len(x_test),),
                           allow_up_sizing=True)
    prob = test_exe.forward(is_train=False, data=x_test)[0].asnumpy()
    acc = float((prob.argmax(axis=1) == y_test).mean())
    print('held-out accuracy: %.3f' % acc)
    first, last = np.mean(losses[:25]), np.mean(losses[-25:])
    print('loss fell from %.3f to %.3f' % (first, last))
    if not last < first:
        raise SystemExit('training did not reduce the loss')


if __name__ == '__main__':
    main()
