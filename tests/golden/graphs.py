"""Graph builders shared by the golden generator and the golden tests.

Every builder takes the MXNet-like module ``mx`` as its first argument, so the
very same code runs under the real MXNet 1.9.1 (``make_graphs.py``) and under
symgraph (``test_golden.py``, with ``import symgraph as mx``).  Keep this file
Python 3.8 compatible and free of any ``import mxnet``/``import symgraph``.

Three tables:

* :data:`NAME_CASES` -- ``name -> build(mx) -> Symbol``: node names, JSON, attributes.
* :data:`INFER_CASES` -- ``name -> run(mx) -> result``: shape and type inference.
* :data:`COMPUTE_CASES` -- :class:`Case` list: forward/backward values.

Builders are always called inside a fresh ``mx.name.NameManager()`` (see
:func:`fresh_build`), so automatic names start from 0 in every case.
"""
import numpy as np

# ---------------------------------------------------------------------------
# helpers


def fresh_build(mx, fn, *args):
    """Call ``fn(mx, *args)`` with fresh automatic-name counters."""
    with mx.name.NameManager():
        return fn(mx, *args)


def normal(scale=1.0):
    """Input maker: normal(0, scale) float32."""
    return lambda rng, shape: (rng.standard_normal(shape) * scale).astype(np.float32)


def uniform(lo, hi):
    """Input maker: uniform(lo, hi) float32."""
    return lambda rng, shape: rng.uniform(lo, hi, shape).astype(np.float32)


def ints(lo, hi):
    """Input maker: integers in [lo, hi) stored as float32 (MXNet's index convention)."""
    return lambda rng, shape: rng.randint(lo, hi, shape).astype(np.float32)


def const(value):
    """Input maker: a fixed array (its shape must match the bound shape)."""
    arr = np.asarray(value, dtype=np.float32)
    return lambda rng, shape: arr.reshape(shape).copy()


class Case(object):
    """One forward/backward golden case.

    Parameters
    ----------
    name : str
        Unique case id (also the data file stem).
    build : callable
        ``build(mx) -> Symbol``.
    shapes : dict
        Argument shapes given to ``simple_bind``.
    inputs : dict, optional
        ``arg or aux name -> maker(rng, shape)``; other arguments get normal(0, 1),
        other auxiliary states keep what ``simple_bind`` gives them.
    phases : tuple of str
        ``'train'``: ``forward(is_train=True)`` then ``backward``, ``steps`` times;
        ``'fwd'``: ``forward(is_train=True)`` only; ``'infer'``: ``forward(is_train=False)``.
    steps : int
        Repetitions of a ``'train'`` phase (moving statistics, ``grad_req='add'``).
    grad_req : str or dict
        Passed to ``simple_bind``.
    heads : str
        ``'all'``: a random head gradient for every output; ``'none'``: ``backward()``
        without head gradients (graphs whose outputs are all losses).
    rtol, atol : float
        Comparison tolerances (float32).
    type_dict : dict, optional
        Passed to ``simple_bind``.
    note : str
        Why the tolerance or the setup is what it is.
    custom : bool
        The graph uses the Custom ops of :func:`register_custom_ops`.
    ignore_outputs : tuple of int
        Outputs not compared (MXNet leaves them uninitialised, e.g. rrelu's mask in
        inference).
    """

    def __init__(self, name, build, shapes, inputs=None, phases=('train',), steps=1,
                 grad_req='write', heads='all', rtol=1e-4, atol=1e-5, type_dict=None,
                 note='', custom=False, ignore_outputs=()):
        self.name = name
        self.build = build
        self.shapes = dict(shapes)
        self.inputs = dict(inputs or {})
        self.phases = tuple(phases)
        self.steps = steps
        self.grad_req = grad_req
        self.heads = heads
        self.rtol = rtol
        self.atol = atol
        self.type_dict = type_dict
        self.note = note
        self.custom = custom
        self.ignore_outputs = tuple(ignore_outputs)


def _v(mx, *names):
    return [mx.sym.Variable(n) for n in names]


# ---------------------------------------------------------------------------
# 1. names, JSON, attributes


def names_overload_binary(mx):
    x, y = _v(mx, 'x', 'y')
    return mx.sym.Group([x + y, x - y, x * y, x / y, x % y, x ** y])


def names_overload_scalar(mx):
    x, = _v(mx, 'x')
    return mx.sym.Group([x + 1, 1 + x, x - 1, 1 - x, x * 2, 2 * x, x / 2, 2 / x,
                         x ** 2, 2 ** x, -x, x % 3, 3 % x, x + 2.5, x * 0.5, abs(x)])


def names_overload_compare(mx):
    x, y = _v(mx, 'x', 'y')
    return mx.sym.Group([x == y, x != y, x > y, x >= y, x < y, x <= y,
                         x == 1, x != 1, x > 1, x >= 1.5, x < 1, x <= 1,
                         1 < x, 2 == x])


def names_auto(mx):
    data = mx.sym.Variable('data')
    h = mx.sym.FullyConnected(data, num_hidden=8)
    h = mx.sym.Activation(h, act_type='relu')
    h = mx.sym.FullyConnected(h, num_hidden=4)
    h = mx.sym.Activation(h, act_type='tanh')
    h = mx.sym.Convolution(mx.sym.Reshape(h, shape=(0, 1, 2, 2)), kernel=(1, 1),
                           num_filter=2)
    return mx.sym.SoftmaxOutput(mx.sym.Flatten(h))


def names_prefix(mx):
    data = mx.sym.Variable('data')
    a = mx.sym.FullyConnected(data, num_hidden=3)
    with mx.name.Prefix('outer_'):
        v = mx.sym.Variable('inside_var')
        b = mx.sym.FullyConnected(a + v, num_hidden=3)
        c = mx.sym.FullyConnected(b, num_hidden=3, name='named')
        with mx.name.Prefix('inner_'):
            d = mx.sym.FullyConnected(c, num_hidden=3)
            d = mx.sym.Activation(d, act_type='relu')
        e = mx.sym.FullyConnected(d, num_hidden=3)
    f = mx.sym.FullyConnected(e, num_hidden=3)
    return f * 2


def names_attrscope(mx):
    data = mx.sym.Variable('data')
    with mx.AttrScope(ctx_group='dev1', lr_mult='0.5'):
        a = mx.sym.FullyConnected(data, num_hidden=3, name='fc1')
        with mx.AttrScope(__mirror_stage__='True', ctx_group='dev2'):
            b = mx.sym.FullyConnected(a, num_hidden=3, name='fc2')
            v = mx.sym.Variable('extra', attr={'__custom__': 'x'})
    c = mx.sym.FullyConnected(b + v, num_hidden=3, name='fc3',
                              attr={'wd_mult': '0.1', '__note__': 'hi'})
    return mx.sym.BatchNorm(c, name='bn')


def names_variable_attrs(mx):
    w = mx.sym.Variable('w', shape=(3, 4), dtype='float32', lr_mult=0.1, wd_mult=0.0,
                        init=mx.init.Xavier(magnitude=2.0))
    b = mx.sym.Variable('b', shape=(3,), init=mx.init.Constant(0.5),
                        attr={'__hint__': 'bias'})
    x = mx.sym.Variable('x', dtype='float64')
    z = mx.sym.Variable('z', init=mx.init.Zero())
    return mx.sym.FullyConnected(x, weight=w, bias=b, num_hidden=3, name='fc') + z


def names_auto_vars(mx):
    data = mx.sym.Variable('data')
    with mx.AttrScope(ctx_group='g'):
        c = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, pad=(1, 1), name='conv')
        b = mx.sym.BatchNorm(c, fix_gamma=False, name='bn')
    p = mx.sym.LeakyReLU(b, act_type='prelu', name='prelu')
    e = mx.sym.Embedding(mx.sym.Variable('idx'), input_dim=7, output_dim=3, name='emb')
    f = mx.sym.FullyConnected(p, num_hidden=3, name='fc')
    s = mx.sym.SoftmaxOutput(f + e, name='softmax')
    r = mx.sym.LinearRegressionOutput(f, name='lro')
    return mx.sym.Group([s, r])


def names_group_multi(mx):
    data = mx.sym.Variable('data')
    parts = mx.sym.SliceChannel(data, num_outputs=3, axis=1, name='split')
    fc = mx.sym.FullyConnected(parts[1], num_hidden=2, name='fc1')
    internals = fc.get_internals()
    grouped = mx.sym.Group([parts[0], internals['fc1_weight'], fc, parts[2]])
    return grouped


def names_split_whole(mx):
    data = mx.sym.Variable('data')
    parts = mx.sym.split(data, num_outputs=2, axis=-1, squeeze_axis=False)
    return mx.sym.Concat(*[parts[1], parts[0]], dim=1)


def names_internals_children(mx):
    data = mx.sym.Variable('data')
    fc = mx.sym.FullyConnected(data, num_hidden=3, name='fc')
    act = mx.sym.Activation(fc, act_type='relu', name='act')
    internals = act.get_internals()
    return internals['fc_output'] + act


def names_unknown_custom(mx):
    x = mx.sym.Variable('x')
    return mx.sym.Custom(x, op_type='golden_no_such_op', name='c')


def names_bad_attr_key(mx):
    with mx.AttrScope(not_allowed='1'):
        return mx.sym.Variable('x') + 1


def names_var_plain_attr(mx):
    with mx.AttrScope(not_allowed='1', __dunder__='d'):
        x = mx.sym.Variable('x', attr={'other_plain': '2'})
    return mx.sym.exp(x)


def names_block_and_losses(mx):
    x, y = _v(mx, 'x', 'y')
    m = mx.sym.MakeLoss(mx.sym.square(x - y), normalization='valid', valid_thresh=0.1)
    return mx.sym.Group([m, mx.sym.BlockGrad(x), mx.sym.LogisticRegressionOutput(y)])


def names_made_arrays(mx):
    x = mx.sym.Variable('x')
    return mx.sym.Group([x * mx.sym.zeros((2, 3)), mx.sym.ones((3,), dtype='int32'),
                         mx.sym.full((2,), 5), mx.sym.arange(0, 5), mx.sym.arange(2, 9, 2,
                                                                                  repeat=2),
                         mx.sym.eye(3, 4, 1), mx.sym.linspace(0, 1, 5)])


def names_compose(mx):
    x, y, z = _v(mx, 'x', 'y', 'z')
    fc = mx.sym.FullyConnected(x, num_hidden=3, name='fc')
    return mx.sym.Group([fc(x=y * 2), fc(x=y, fc_weight=z, name='newfc'),
                         mx.sym.Group([fc, x + 1])(x=z)])


def names_random(mx):
    x, y = _v(mx, 'x', 'y')
    r = mx.sym.random
    return mx.sym.Group([r.uniform(0, 1, shape=(2, 3)), r.uniform(shape=(2,), dtype='float64'),
                         r.normal(x, y, shape=(2,)), r.randint(0, 5, shape=(2,)),
                         r.exponential(2.0, shape=(2,)), r.gamma(2, 3, shape=(2,)),
                         r.poisson(3, shape=(2,)), r.shuffle(x),
                         mx.sym.random_uniform(low=0, high=1, shape=(2,)),
                         mx.sym.uniform(shape=(2,)), mx.sym.shuffle(y)])


NAME_CASES = {
    'random': names_random,
    'made_arrays': names_made_arrays,
    'compose': names_compose,
    'overload_binary': names_overload_binary,
    'overload_scalar': names_overload_scalar,
    'overload_compare': names_overload_compare,
    'auto_names': names_auto,
    'prefix': names_prefix,
    'attrscope': names_attrscope,
    'variable_attrs': names_variable_attrs,
    'auto_vars': names_auto_vars,
    'group_multi': names_group_multi,
    'split_whole': names_split_whole,
    'internals_children': names_internals_children,
    'unknown_custom': names_unknown_custom,
    'bad_attr_key': names_bad_attr_key,
    'var_plain_attr': names_var_plain_attr,
    'block_and_losses': names_block_and_losses,
}


# ---------------------------------------------------------------------------
# 2. shape and type inference


def _mlp(mx):
    data = mx.sym.Variable('data')
    h = mx.sym.FullyConnected(data, num_hidden=7, name='fc1')
    h = mx.sym.Activation(h, act_type='relu', name='relu1')
    h = mx.sym.FullyConnected(h, num_hidden=3, name='fc2')
    return mx.sym.SoftmaxOutput(h, name='softmax')


def _convnet(mx):
    data = mx.sym.Variable('data')
    c = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, pad=(1, 1), stride=(2, 2),
                           name='conv1')
    c = mx.sym.BatchNorm(c, name='bn1')
    c = mx.sym.Activation(c, act_type='relu')
    c = mx.sym.Pooling(c, kernel=(2, 2), stride=(2, 2), pool_type='max',
                       pooling_convention='full', name='pool1')
    c = mx.sym.Convolution(c, kernel=(1, 3), num_filter=5, num_group=1, name='conv2')
    f = mx.sym.FullyConnected(c, num_hidden=6, name='fc')
    return mx.sym.SoftmaxOutput(f, name='softmax')


INFER_CASES = {
    'mlp_data_only': lambda mx: fresh_build(mx, _mlp).infer_shape(data=(5, 11)),
    'mlp_data_only_partial': lambda mx: fresh_build(mx, _mlp).infer_shape_partial(
        data=(5, 11)),
    'mlp_partial_dims': lambda mx: fresh_build(mx, _mlp).infer_shape_partial(data=(0, 11)),
    'mlp_partial_dims_full': lambda mx: fresh_build(mx, _mlp).infer_shape(data=(0, 11)),
    'mlp_weight_only': lambda mx: fresh_build(mx, _mlp).infer_shape_partial(
        fc1_weight=(7, 11)),
    'mlp_nothing': lambda mx: fresh_build(mx, _mlp).infer_shape(),
    'mlp_nothing_partial': lambda mx: fresh_build(mx, _mlp).infer_shape_partial(),
    'convnet': lambda mx: fresh_build(mx, _convnet).infer_shape(data=(2, 3, 11, 9)),
    'convnet_positional': lambda mx: fresh_build(mx, _convnet).infer_shape((2, 3, 11, 9)),
    'fc_too_little': lambda mx: mx.sym.FullyConnected(
        mx.sym.Variable('x'), num_hidden=3, name='fc').infer_shape(),
    'add_backward_fill': lambda mx: (mx.sym.Variable('a') + mx.sym.Variable('b'))
    .infer_shape(b=(2, 3)),
    'add_mismatch': lambda mx: (mx.sym.Variable('a') + mx.sym.Variable('b'))
    .infer_shape(a=(2, 3), b=(3, 2)),
    'mlp_type': lambda mx: fresh_build(mx, _mlp).infer_type(data='float32'),
    'mlp_type_f64': lambda mx: fresh_build(mx, _mlp).infer_type(data=np.float64),
    'mlp_type_nothing': lambda mx: fresh_build(mx, _mlp).infer_type(),
    'cast_type': lambda mx: mx.sym.Cast(mx.sym.Variable('x'), dtype='float16', name='c')
    .infer_type(x='float32'),
    'convnet_type': lambda mx: fresh_build(mx, _convnet).infer_type(data='float32'),
    # MXNet 1.9.1 rejects every 'same' pooling it documents (1-D max): recorded error
    'pooling_same_1d': lambda mx: mx.sym.Pooling(
        mx.sym.Variable('x'), kernel=(3,), stride=(2,), pool_type='max',
        pooling_convention='same', name='pool').infer_shape(x=(2, 3, 10)),
}


# ---------------------------------------------------------------------------
# 4. Custom operators (registered once per module ``mx``)

_REGISTERED = set()


def register_custom_ops(mx):
    """Register ``golden_scaled_mul`` and ``golden_softmax`` with ``mx.operator``."""
    if mx.__name__ in _REGISTERED:
        return
    _REGISTERED.add(mx.__name__)

    class ScaledMul(mx.operator.CustomOp):
        """``y = scale * x * w``; the aux state counts training forwards."""

        def __init__(self, scale):
            super(ScaledMul, self).__init__()
            self.scale = scale

        def forward(self, is_train, req, in_data, out_data, aux):
            x, w = in_data[0], in_data[1]
            self.assign(out_data[0], req[0], x * w * self.scale)
            if is_train:
                aux[0][:] = aux[0] + 1

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            x, w = in_data[0], in_data[1]
            g = out_grad[0]
            self.assign(in_grad[0], req[0], g * w * self.scale)
            self.assign(in_grad[1], req[1], g * x * self.scale)

    @mx.operator.register('golden_scaled_mul')
    class ScaledMulProp(mx.operator.CustomOpProp):
        def __init__(self, scale='1.0'):
            super(ScaledMulProp, self).__init__(need_top_grad=True)
            self.scale = float(scale)

        def list_arguments(self):
            return ['data', 'weight']

        def list_outputs(self):
            return ['output']

        def list_auxiliary_states(self):
            return ['count']

        def infer_shape(self, in_shape):
            return [in_shape[0], in_shape[0]], [in_shape[0]], [(1,)]

        def create_operator(self, ctx, shapes, dtypes):
            return ScaledMul(self.scale)

    class Softmax(mx.operator.CustomOp):
        """Softmax loss with its own gradient ``(p - onehot(label)) * grad_scale``."""

        def __init__(self, grad_scale):
            super(Softmax, self).__init__()
            self.grad_scale = grad_scale

        def forward(self, is_train, req, in_data, out_data, aux):
            x = in_data[0].asnumpy()
            y = np.exp(x - x.max(axis=1, keepdims=True))
            y /= y.sum(axis=1, keepdims=True)
            self.assign(out_data[0], req[0], mx.nd.array(y))

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            label = in_data[1].asnumpy().astype(np.int64)
            y = out_data[0].asnumpy()
            y[np.arange(label.shape[0]), label] -= 1.0
            self.assign(in_grad[0], req[0], mx.nd.array(y * self.grad_scale))
            self.assign(in_grad[1], req[1], mx.nd.zeros(label.shape))

    @mx.operator.register('golden_softmax')
    class SoftmaxProp(mx.operator.CustomOpProp):
        def __init__(self, grad_scale='1'):
            super(SoftmaxProp, self).__init__(need_top_grad=False)
            self.grad_scale = float(grad_scale)

        def list_arguments(self):
            return ['data', 'label']

        def list_outputs(self):
            return ['output']

        def infer_shape(self, in_shape):
            return [in_shape[0], (in_shape[0][0],)], [in_shape[0]], []

        def create_operator(self, ctx, shapes, dtypes):
            return Softmax(self.grad_scale)


# ---------------------------------------------------------------------------
# 5. print_summary networks


def summary_mlp(mx):
    data = mx.sym.Variable('data')
    h = mx.sym.FullyConnected(data, num_hidden=64, name='fc1')
    h = mx.sym.Activation(h, act_type='relu', name='relu1')
    h = mx.sym.FullyConnected(h, num_hidden=32, name='fc2')
    h = mx.sym.Activation(h, act_type='relu', name='relu2')
    h = mx.sym.FullyConnected(h, num_hidden=10, name='fc3')
    return mx.sym.SoftmaxOutput(h, name='softmax')


def summary_lenet(mx):
    data = mx.sym.Variable('data')
    c = mx.sym.Convolution(data, kernel=(5, 5), num_filter=20, name='conv1')
    c = mx.sym.Activation(c, act_type='tanh', name='tanh1')
    c = mx.sym.Pooling(c, pool_type='max', kernel=(2, 2), stride=(2, 2), name='pool1')
    c = mx.sym.Convolution(c, kernel=(5, 5), num_filter=50, name='conv2')
    c = mx.sym.Activation(c, act_type='tanh', name='tanh2')
    c = mx.sym.Pooling(c, pool_type='max', kernel=(2, 2), stride=(2, 2), name='pool2')
    f = mx.sym.Flatten(c, name='flatten')
    f = mx.sym.FullyConnected(f, num_hidden=500, name='fc1')
    f = mx.sym.Activation(f, act_type='tanh', name='tanh3')
    f = mx.sym.FullyConnected(f, num_hidden=10, name='fc2')
    return mx.sym.SoftmaxOutput(f, name='softmax')


def _res_unit(mx, data, num_filter, stride, dim_match, name):
    bn1 = mx.sym.BatchNorm(data, fix_gamma=False, eps=2e-5, name=name + '_bn1')
    act1 = mx.sym.Activation(bn1, act_type='relu', name=name + '_relu1')
    conv1 = mx.sym.Convolution(act1, num_filter=num_filter, kernel=(3, 3), stride=stride,
                               pad=(1, 1), no_bias=True, name=name + '_conv1')
    bn2 = mx.sym.BatchNorm(conv1, fix_gamma=False, eps=2e-5, name=name + '_bn2')
    act2 = mx.sym.Activation(bn2, act_type='relu', name=name + '_relu2')
    conv2 = mx.sym.Convolution(act2, num_filter=num_filter, kernel=(3, 3), stride=(1, 1),
                               pad=(1, 1), no_bias=True, name=name + '_conv2')
    if dim_match:
        shortcut = data
    else:
        shortcut = mx.sym.Convolution(act1, num_filter=num_filter, kernel=(1, 1),
                                      stride=stride, no_bias=True, name=name + '_sc')
    return conv2 + shortcut


def summary_resnet(mx):
    """A pre-activation ResNet with three stages of one unit each (CIFAR-style)."""
    data = mx.sym.Variable('data')
    body = mx.sym.Convolution(data, num_filter=8, kernel=(3, 3), pad=(1, 1), no_bias=True,
                              name='conv0')
    for i, (nf, stride) in enumerate([(8, (1, 1)), (16, (2, 2)), (32, (2, 2))]):
        body = _res_unit(mx, body, nf, stride, i == 0, 'stage%d_unit1' % (i + 1))
    bn = mx.sym.BatchNorm(body, fix_gamma=False, eps=2e-5, name='bn1')
    relu = mx.sym.Activation(bn, act_type='relu', name='relu1')
    pool = mx.sym.Pooling(relu, global_pool=True, kernel=(7, 7), pool_type='avg',
                          name='pool1')
    fc = mx.sym.FullyConnected(mx.sym.Flatten(pool), num_hidden=10, name='fc1')
    return mx.sym.SoftmaxOutput(fc, name='softmax')


SUMMARY_CASES = {
    'mlp': (summary_mlp, {'data': (1, 100)}),
    'lenet': (summary_lenet, {'data': (1, 1, 28, 28)}),
    'resnet': (summary_resnet, {'data': (1, 3, 32, 32)}),
}


from graphs_compute import COMPUTE_CASES  # noqa: E402,F401  (the compute table)
