"""Basic layers of ``mx.gluon.nn``, after MXNet 1.9.1's ``gluon/nn/basic_layers.py``.

Containers (:class:`Sequential`, :class:`HybridSequential`), :class:`Dense`,
:class:`Dropout`, the normalisation layers, :class:`Embedding`, :class:`Flatten` and the
lambda wrappers. Every layer with a forward of its own calls one registered operator
through ``F`` (``F.FullyConnected``, ``F.BatchNorm``, ...), so that it runs on NDArrays
(recorded by autograd) and, hybridized, as a node of a Symbol. Parameter names, default
initializers, automatic prefixes and ``repr`` strings are MXNet's.
"""
import warnings

import numpy as np

from ... import ndarray, symbol
from ...base import ArgumentError, ArgumentTypeError, as_dtype, is_bfloat16
from ..block import Block, HybridBlock
from ..utils import _indent
from .activations import Activation

__all__ = ['Sequential', 'HybridSequential', 'Dense', 'Dropout', 'Embedding',
           'BatchNorm', 'BatchNormReLU', 'InstanceNorm', 'LayerNorm', 'GroupNorm',
           'Flatten', 'Lambda', 'HybridLambda']


def _children_repr(block):
    """MXNet's ``Sequential`` repr: the class name, then one indented line per child."""
    modstr = '\n'.join('  ({key}): {block}'.format(key=key, block=_indent(child.__repr__(), 2))
                       for key, child in block._children.items())
    return '{name}(\n{modstr}\n)'.format(name=block.__class__.__name__, modstr=modstr)


def _kwargs_repr(name, kwargs):
    """``name(k1=v1, k2=v2`` with each value's repr, in ``kwargs``' order (no closing
    parenthesis: the normalisation layers append ``in_channels``)."""
    return '{name}({content}'.format(
        name=name, content=', '.join('='.join([k, repr(v)]) for k, v in kwargs.items()))


class _Stack(object):
    """What both sequential containers share: ``add``, indexing (a slice is a new
    container of the same class and prefix holding the same children), ``len``, ``repr``."""

    def add(self, *blocks):
        """Adds block on top of the stack."""
        for block in blocks:
            self.register_child(block)

    def __getitem__(self, key):
        layers = list(self._children.values())[key]
        if isinstance(layers, list):
            net = type(self)(prefix=self._prefix)
            with net.name_scope():
                net.add(*layers)
            return net
        return layers

    def __len__(self):
        return len(self._children)

    def __repr__(self):
        return _children_repr(self)


class Sequential(_Stack, Block):
    """Stacks Blocks sequentially.

    Example::

        net = nn.Sequential()
        # use net's name_scope to give child Blocks appropriate names.
        with net.name_scope():
            net.add(nn.Dense(10, activation='relu'))
            net.add(nn.Dense(20))
    """

    def __init__(self, prefix=None, params=None):
        super(Sequential, self).__init__(prefix=prefix, params=params)

    def forward(self, x):
        for block in self._children.values():
            x = block(x)
        return x

    def hybridize(self, active=True, **kwargs):
        """Activates or deactivates `HybridBlock` s recursively. Has no effect on
        non-hybrid children.

        Parameters
        ----------
        active : bool, default True
            Whether to turn hybrid on or off.
        **kwargs : string
            Additional flags for hybridized operator.
        """
        if self._children and all(isinstance(c, HybridBlock) for c in self._children.values()):
            warnings.warn(
                "All children of this Sequential layer '%s' are HybridBlocks. Consider "
                "using HybridSequential for the best performance." % self.prefix, stacklevel=2)
        super(Sequential, self).hybridize(active, **kwargs)


class HybridSequential(_Stack, HybridBlock):
    """Stacks HybridBlocks sequentially.

    Example::

        net = nn.HybridSequential()
        # use net's name_scope to give child Blocks appropriate names.
        with net.name_scope():
            net.add(nn.Dense(10, activation='relu'))
            net.add(nn.Dense(20))
        net.hybridize()
    """

    def __init__(self, prefix=None, params=None):
        super(HybridSequential, self).__init__(prefix=prefix, params=params)

    def hybrid_forward(self, F, x):
        for block in self._children.values():
            x = block(x)
        return x


class Dense(HybridBlock):
    r"""Just your regular densely-connected NN layer:
    ``output = activation(dot(input, weight.T) + bias)``.

    Parameters
    ----------
    units : int
        Dimensionality of the output space.
    activation : str
        Activation function to use (see :class:`Activation`); None: no activation.
    use_bias : bool, default True
        Whether the layer uses a bias vector.
    flatten : bool, default True
        Whether all but the first axis of the input are collapsed together; if False the
        transformation applies to the last axis.
    dtype : str or np.dtype, default 'float32'
        Data type of the parameters.
    weight_initializer : str or Initializer
        Initializer for the ``weight`` matrix, of shape ``(units, in_units)``.
    bias_initializer : str or Initializer, default 'zeros'
        Initializer for the bias vector.
    in_units : int, optional
        Size of the input data. If not given (0), initialization is deferred to the first
        forward, which infers it from the data.

    Inputs:
        - **data**: ``(batch_size, x1, ..., xn)`` if `flatten`, else ``(x1, ..., xn, in_units)``.

    Outputs:
        - **out**: ``(batch_size, units)`` if `flatten`, else ``(x1, ..., xn, units)``.

    Examples
    --------
    >>> import symgraph as mx
    >>> layer = mx.gluon.nn.Dense(5, in_units=3)
    >>> layer
    Dense(3 -> 5, linear)
    >>> layer.initialize()
    >>> layer(mx.nd.ones((2, 3))).shape
    (2, 5)
    """

    def __init__(self, units, activation=None, use_bias=True, flatten=True,
                 dtype='float32', weight_initializer=None, bias_initializer='zeros',
                 in_units=0, **kwargs):
        super(Dense, self).__init__(**kwargs)
        self._flatten = flatten
        with self.name_scope():
            self._units = units
            self._in_units = in_units
            self.weight = self.params.get('weight', shape=(units, in_units),
                                          init=weight_initializer, dtype=dtype,
                                          allow_deferred_init=True)
            if use_bias:
                self.bias = self.params.get('bias', shape=(units,),
                                            init=bias_initializer, dtype=dtype,
                                            allow_deferred_init=True)
            else:
                self.bias = None
            if activation is not None:
                self.act = Activation(activation, prefix=activation + '_')
            else:
                self.act = None

    def hybrid_forward(self, F, x, weight, bias=None):
        # without a bias the operator takes two inputs: pass none for it rather than None
        inputs = (x, weight) if bias is None else (x, weight, bias)
        act = F.FullyConnected(*inputs, no_bias=bias is None, num_hidden=self._units,
                               flatten=self._flatten, name='fwd')
        if self.act is not None:
            act = self.act(act)
        return act

    def __repr__(self):
        shape = self.weight.shape
        return '{name}({layout}, {act})'.format(
            name=self.__class__.__name__, act=self.act if self.act else 'linear',
            layout='{0} -> {1}'.format(shape[1] if shape[1] else None, shape[0]))


class Dropout(HybridBlock):
    """Applies Dropout to the input: during training (``autograd.record()`` in training
    mode) a fraction `rate` of the elements becomes 0 and the rest are scaled by
    ``1 / (1 - rate)``; at prediction the input passes unchanged.

    Parameters
    ----------
    rate : float
        Fraction of the input units to drop, between 0 and 1.
    axes : tuple of int, default ()
        The axes on which the dropout mask is shared. If empty, regular dropout is applied.
    """

    def __init__(self, rate, axes=(), **kwargs):
        super(Dropout, self).__init__(**kwargs)
        self._rate = rate
        self._axes = axes

    def hybrid_forward(self, F, x):
        if self._rate > 0:
            return F.Dropout(x, p=self._rate, axes=self._axes, name='fwd', cudnn_off=False)
        return F.identity(x)

    def __repr__(self):
        return '{name}(p = {rate}, axes={axes})'.format(
            name=self.__class__.__name__, rate=self._rate, axes=self._axes)


class _BatchNorm(HybridBlock):
    """What BatchNorm and BatchNormReLU share (MXNet's private base class): the four
    parameters ``gamma``, ``beta``, ``running_mean``, ``running_var`` and one call of the
    ``BatchNorm`` operator (``_contrib_BatchNormWithReLU`` where `fuse_relu`).

    Note that the layer's default ``epsilon`` is 1e-5 and ``scale=True`` (the operator's
    ``fix_gamma=False``), unlike the operator's own defaults (1e-3, ``fix_gamma=True``).
    """

    def __init__(self, axis=1, momentum=0.9, epsilon=1e-5, center=True, scale=True,
                 use_global_stats=False, fuse_relu=False,
                 beta_initializer='zeros', gamma_initializer='ones',
                 running_mean_initializer='zeros', running_variance_initializer='ones',
                 in_channels=0, **kwargs):
        super(_BatchNorm, self).__init__(**kwargs)
        self._kwargs = {'axis': axis, 'eps': epsilon, 'momentum': momentum,
                        'fix_gamma': not scale, 'use_global_stats': use_global_stats}
        self.fuse_relu = fuse_relu
        if in_channels != 0:
            self.in_channels = in_channels

        self.gamma = self.params.get('gamma', grad_req='write' if scale else 'null',
                                     shape=(in_channels,), init=gamma_initializer,
                                     allow_deferred_init=True, differentiable=scale)
        self.beta = self.params.get('beta', grad_req='write' if center else 'null',
                                    shape=(in_channels,), init=beta_initializer,
                                    allow_deferred_init=True, differentiable=center)
        self.running_mean = self.params.get('running_mean', grad_req='null',
                                            shape=(in_channels,),
                                            init=running_mean_initializer,
                                            allow_deferred_init=True, differentiable=False)
        self.running_var = self.params.get('running_var', grad_req='null',
                                           shape=(in_channels,),
                                           init=running_variance_initializer,
                                           allow_deferred_init=True, differentiable=False)

    def cast(self, dtype):
        # float16 (and bfloat16) BatchNorm keeps float32 parameters, as MXNet's operator
        # requires
        if as_dtype(dtype).name == 'float16' or is_bfloat16(dtype):
            dtype = 'float32'
        super(_BatchNorm, self).cast(dtype)

    def hybrid_forward(self, F, x, gamma, beta, running_mean, running_var):
        batch_norm = F.contrib.BatchNormWithReLU if self.fuse_relu else F.BatchNorm
        return batch_norm(x, gamma, beta, running_mean, running_var,
                          name='fwd', **self._kwargs)

    def __repr__(self):
        in_channels = self.gamma.shape[0]
        return _kwargs_repr(self.__class__.__name__, self._kwargs) + \
            ', in_channels={0})'.format(in_channels if in_channels else None)


class BatchNorm(_BatchNorm):
    """Batch normalization layer (Ioffe and Szegedy, 2014): normalizes the input over the
    batch and spatial axes, per channel of `axis`; during training (``autograd.record()``
    in training mode) with the batch's statistics, updating the running ones, otherwise
    with the running statistics.

    Parameters
    ----------
    axis : int, default 1
        The channel axis (1 after a ``Conv2D`` with ``layout='NCHW'``).
    momentum : float, default 0.9
        Momentum for the moving average.
    epsilon : float, default 1e-5
        Small float added to variance to avoid dividing by zero.
    center : bool, default True
        If True, add offset of `beta` to normalized tensor; if False, `beta` is ignored.
    scale : bool, default True
        If True, multiply by `gamma`; if False, `gamma` is not used (it acts as 1).
    use_global_stats : bool, default False
        If True, use the running statistics in training too (a scale-shift operator).
    beta_initializer, gamma_initializer : str or Initializer, default 'zeros', 'ones'
    running_mean_initializer, running_variance_initializer : str or Initializer,
        default 'zeros', 'ones'
    in_channels : int, default 0
        Number of channels; 0 defers initialization to the first forward.

    Examples
    --------
    >>> import symgraph as mx
    >>> mx.gluon.nn.BatchNorm(in_channels=3)
    BatchNorm(axis=1, eps=1e-05, momentum=0.9, fix_gamma=False, use_global_stats=False, \
in_channels=3)
    """

    def __init__(self, axis=1, momentum=0.9, epsilon=1e-5, center=True, scale=True,
                 use_global_stats=False,
                 beta_initializer='zeros', gamma_initializer='ones',
                 running_mean_initializer='zeros', running_variance_initializer='ones',
                 in_channels=0, **kwargs):
        super(BatchNorm, self).__init__(
            axis=axis, momentum=momentum, epsilon=epsilon, center=center, scale=scale,
            use_global_stats=use_global_stats, fuse_relu=False,
            beta_initializer=beta_initializer, gamma_initializer=gamma_initializer,
            running_mean_initializer=running_mean_initializer,
            running_variance_initializer=running_variance_initializer,
            in_channels=in_channels, **kwargs)


class BatchNormReLU(_BatchNorm):
    """Batch normalization followed by ReLU, as one operator
    (``_contrib_BatchNormWithReLU``). Parameters as :class:`BatchNorm`."""

    def __init__(self, axis=1, momentum=0.9, epsilon=1e-5, center=True, scale=True,
                 use_global_stats=False,
                 beta_initializer='zeros', gamma_initializer='ones',
                 running_mean_initializer='zeros', running_variance_initializer='ones',
                 in_channels=0, **kwargs):
        super(BatchNormReLU, self).__init__(
            axis=axis, momentum=momentum, epsilon=epsilon, center=center, scale=scale,
            use_global_stats=use_global_stats, fuse_relu=True,
            beta_initializer=beta_initializer, gamma_initializer=gamma_initializer,
            running_mean_initializer=running_mean_initializer,
            running_variance_initializer=running_variance_initializer,
            in_channels=in_channels, **kwargs)


class Embedding(HybridBlock):
    r"""Turns non-negative integers (indexes/tokens) into dense vectors of fixed size,
    e.g. ``[4, 20] -> [[0.25, 0.1], [0.6, -0.2]]``.

    Parameters
    ----------
    input_dim : int
        Size of the vocabulary, i.e. maximum integer index + 1.
    output_dim : int
        Dimension of the dense embedding.
    dtype : str or np.dtype, default 'float32'
        Data type of output embeddings.
    weight_initializer : Initializer
        Initializer for the ``weight`` matrix, of shape ``(input_dim, output_dim)``.
    sparse_grad : bool
        MXNet's row-sparse gradient; symgraph stores every gradient dense (same values).

    Inputs:
        - **data**: ``(x1, ..., xN-1)``.

    Output:
        - **out**: ``(x1, ..., xN-1, output_dim)``.
    """

    def __init__(self, input_dim, output_dim, dtype='float32',
                 weight_initializer=None, sparse_grad=False, **kwargs):
        super(Embedding, self).__init__(**kwargs)
        grad_stype = 'row_sparse' if sparse_grad else 'default'
        self._kwargs = {'input_dim': input_dim, 'output_dim': output_dim,
                        'dtype': dtype, 'sparse_grad': sparse_grad}
        self.weight = self.params.get('weight', shape=(input_dim, output_dim),
                                      init=weight_initializer, dtype=dtype,
                                      allow_deferred_init=True, grad_stype=grad_stype)

    def hybrid_forward(self, F, x, weight):
        return F.Embedding(x, weight, name='fwd', **self._kwargs)

    def __repr__(self):
        return '{block_name}({input_dim} -> {output_dim}, {dtype})'.format(
            block_name=self.__class__.__name__, **self._kwargs)


class Flatten(HybridBlock):
    r"""Flattens the input to two dimensional: ``(N, x1, ..., xn)`` to
    ``(N, x1 * ... * xn)``."""

    def __init__(self, **kwargs):
        super(Flatten, self).__init__(**kwargs)

    def hybrid_forward(self, F, x):
        return F.flatten(x)

    def __repr__(self):
        return self.__class__.__name__


class InstanceNorm(HybridBlock):
    r"""Applies instance normalization to the n-dimensional input array (n > 2): each
    sample's each channel normalized over its other axes,
    ``out = (x - mean) / sqrt(var + epsilon) * gamma + beta``.

    Parameters
    ----------
    axis : int, default 1
        The channel axis, excluded from the normalization with the batch axis 0.
    epsilon : float, default 1e-5
        Small float added to variance to avoid dividing by zero.
    center : bool, default True
        If True, add offset of `beta`; if False, `beta` gets no gradient.
    scale : bool, default False
        If True, `gamma` is learned (grad_req 'write'); if False it gets no gradient.
    beta_initializer, gamma_initializer : str or Initializer, default 'zeros', 'ones'
    in_channels : int, default 0
        Number of channels; 0 defers initialization to the first forward.
    """

    def __init__(self, axis=1, epsilon=1e-5, center=True, scale=False,
                 beta_initializer='zeros', gamma_initializer='ones',
                 in_channels=0, **kwargs):
        super(InstanceNorm, self).__init__(**kwargs)
        self._kwargs = {'eps': epsilon, 'axis': axis, 'center': center, 'scale': scale}
        self._axis = axis
        self._epsilon = epsilon
        self.gamma = self.params.get('gamma', grad_req='write' if scale else 'null',
                                     shape=(in_channels,), init=gamma_initializer,
                                     allow_deferred_init=True)
        self.beta = self.params.get('beta', grad_req='write' if center else 'null',
                                    shape=(in_channels,), init=beta_initializer,
                                    allow_deferred_init=True)

    def hybrid_forward(self, F, x, gamma, beta):
        if self._axis == 1:
            return F.InstanceNorm(x, gamma, beta, name='fwd', eps=self._epsilon)
        # the operator's channel axis is 1: move the layer's there and back
        x = x.swapaxes(1, self._axis)
        return F.InstanceNorm(x, gamma, beta, name='fwd',
                              eps=self._epsilon).swapaxes(1, self._axis)

    def __repr__(self):
        return _kwargs_repr(self.__class__.__name__, self._kwargs) + \
            ', in_channels={0})'.format(self.gamma.shape[0])


class LayerNorm(HybridBlock):
    r"""Applies layer normalization to the n-dimensional input array over `axis`:
    ``out = (x - mean[x, axis]) / sqrt(var[x, axis] + epsilon) * gamma + beta``.

    Parameters
    ----------
    axis : int, default -1
        The axis to normalize over (typically the channels).
    epsilon : float, default 1e-5
        Small float added to variance to avoid dividing by zero.
    center, scale : bool, default True
        Whether `beta` / `gamma` are learned (grad_req 'write' or 'null').
    beta_initializer, gamma_initializer : str or Initializer, default 'zeros', 'ones'
    in_channels : int, default 0
        Size of `axis`; 0 defers initialization to the first forward.

    Examples
    --------
    >>> import symgraph as mx
    >>> layer = mx.gluon.nn.LayerNorm()
    >>> layer.initialize()
    >>> out = layer(mx.nd.array([[1, 2, 3, 4, 5], [1, 1, 2, 2, 2]]))
    >>> [round(float(v), 4) for v in out.asnumpy()[1]]
    [-1.2247, -1.2247, 0.8165, 0.8165, 0.8165]
    """

    def __init__(self, axis=-1, epsilon=1e-5, center=True, scale=True,
                 beta_initializer='zeros', gamma_initializer='ones',
                 in_channels=0, prefix=None, params=None):
        super(LayerNorm, self).__init__(prefix=prefix, params=params)
        self._kwargs = {'eps': epsilon, 'axis': axis, 'center': center, 'scale': scale}
        self._axis = axis
        self._epsilon = epsilon
        self._center = center
        self._scale = scale
        self.gamma = self.params.get('gamma', grad_req='write' if scale else 'null',
                                     shape=(in_channels,), init=gamma_initializer,
                                     allow_deferred_init=True)
        self.beta = self.params.get('beta', grad_req='write' if center else 'null',
                                    shape=(in_channels,), init=beta_initializer,
                                    allow_deferred_init=True)

    def hybrid_forward(self, F, data, gamma, beta):
        return F.LayerNorm(data, gamma=gamma, beta=beta, axis=self._axis, eps=self._epsilon)

    def __repr__(self):
        return _kwargs_repr(self.__class__.__name__, self._kwargs) + \
            ', in_channels={0})'.format(self.gamma.shape[0])


class GroupNorm(HybridBlock):
    r"""Applies group normalization to an ``(N, C, ...)`` input: the channels split into
    `num_groups` groups, each normalized over its channels and the spatial axes, then one
    ``gamma``/``beta`` per group (MXNet 1.9.1's parameters have ``num_groups`` entries).

    Parameters
    ----------
    num_groups : int, default 1
        Number of groups to separate the channel axis into.
    epsilon : float, default 1e-5
        Small float added to variance to avoid dividing by zero.
    center, scale : bool, default True
        Whether `beta` / `gamma` are learned (grad_req 'write' or 'null').
    beta_initializer, gamma_initializer : str or Initializer, default 'zeros', 'ones'
    """

    def __init__(self, num_groups=1, epsilon=1e-5, center=True, scale=True,
                 beta_initializer='zeros', gamma_initializer='ones',
                 prefix=None, params=None):
        super(GroupNorm, self).__init__(prefix=prefix, params=params)
        self._kwargs = {'eps': epsilon, 'num_groups': num_groups, 'center': center,
                        'scale': scale}
        self._num_groups = num_groups
        self._epsilon = epsilon
        self._center = center
        self._scale = scale
        self.gamma = self.params.get('gamma', grad_req='write' if scale else 'null',
                                     shape=(num_groups,), init=gamma_initializer,
                                     allow_deferred_init=True)
        self.beta = self.params.get('beta', grad_req='write' if center else 'null',
                                    shape=(num_groups,), init=beta_initializer,
                                    allow_deferred_init=True)

    def hybrid_forward(self, F, data, gamma, beta):
        return F.GroupNorm(data, gamma=gamma, beta=beta, num_groups=self._num_groups,
                           eps=self._epsilon)

    def __repr__(self):
        return _kwargs_repr(self.__class__.__name__, self._kwargs) + ')'


def _lambda_function(function, namespaces, what):
    """``function`` itself if callable; None if it names an operator of every one of
    ``namespaces`` (checked here, so that a typo fails when the layer is made, not when
    it first runs)."""
    if isinstance(function, str):
        if not all(hasattr(ns, function) for ns in namespaces):
            raise ArgumentError('Function name %s is not found in %s.' % (function, what))
        return None
    if callable(function):
        return function
    raise ArgumentTypeError('Unrecognized function in lambda: {} of type {}'
                            .format(function, type(function)))


class Lambda(Block):
    r"""Wraps an operator or an expression as a Block object.

    Parameters
    ----------
    function : str or function
        The name of an operator of ``mx.nd`` (``Lambda('tanh')``), or a function
        ``function(*args)`` (``Lambda(lambda x: nd.LeakyReLU(x, slope=0.1))``).
    """

    def __init__(self, function, prefix=None):
        super(Lambda, self).__init__(prefix=prefix)
        func = _lambda_function(function, (ndarray,), 'ndarray')
        self._func_impl = getattr(ndarray, function) if func is None else func

    def forward(self, *args):
        return self._func_impl(*args)

    def __repr__(self):
        return '{name}({function})'.format(name=self.__class__.__name__,
                                           function=self._func_impl.__name__)


class HybridLambda(HybridBlock):
    r"""Wraps an operator or an expression as a HybridBlock object.

    Parameters
    ----------
    function : str or function
        The name of an operator of both ``mx.nd`` and ``mx.sym``
        (``HybridLambda('tanh')``), or a function ``function(F, data, *args)``
        (``HybridLambda(lambda F, x: F.LeakyReLU(x, slope=0.1))``).
    """

    def __init__(self, function, prefix=None):
        super(HybridLambda, self).__init__(prefix=prefix)
        func = _lambda_function(function, (ndarray, symbol), 'symbol/ndarray')
        if func is None:
            # F is the namespace the block runs in (mx.nd or mx.sym): look the name up there
            self._func = lambda F, *args: getattr(F, function)(*args)
            self._func_name = function
        else:
            self._func = func
            self._func_name = func.__name__

    def hybrid_forward(self, F, x, *args):
        return self._func(F, x, *args)

    def __repr__(self):
        return '{name}({function})'.format(name=self.__class__.__name__,
                                           function=self._func_name)
