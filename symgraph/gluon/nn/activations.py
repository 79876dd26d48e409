"""Activation layers of ``mx.gluon.nn``, after MXNet 1.9.1's ``gluon/nn/activations.py``.

Each layer's forward is one registered operator called through ``F`` (``Activation``,
``LeakyReLU`` with its ``act_type``, or ``sigmoid`` for Swish), so a layer runs alike on
NDArrays and, hybridized, in a Symbol.
"""
from ... import initializer
from ...base import ArgumentError
from ..block import HybridBlock

__all__ = ['Activation', 'LeakyReLU', 'PReLU', 'ELU', 'SELU', 'Swish', 'GELU']


class Activation(HybridBlock):
    r"""Applies an activation function to input.

    Parameters
    ----------
    activation : str
        Name of activation function to use: ``'relu'``, ``'sigmoid'``, ``'tanh'``,
        ``'softrelu'`` or ``'softsign'`` (see the ``Activation`` operator).

    Inputs:
        - **data**: input tensor with arbitrary shape.

    Outputs:
        - **out**: output tensor with the same shape as `data`.

    Examples
    --------
    >>> import symgraph as mx
    >>> act = mx.gluon.nn.Activation('relu')
    >>> act
    Activation(relu)
    >>> act(mx.nd.array([-1.0, 2.0])).asnumpy().tolist()
    [0.0, 2.0]
    """

    def __init__(self, activation, **kwargs):
        # set before Block.__init__, which asks _alias() for the automatic prefix
        self._act_type = activation
        super(Activation, self).__init__(**kwargs)

    def _alias(self):
        return self._act_type

    def hybrid_forward(self, F, x):
        return F.Activation(x, act_type=self._act_type, name='fwd')

    def __repr__(self):
        return '{name}({act})'.format(name=self.__class__.__name__, act=self._act_type)


class LeakyReLU(HybridBlock):
    r"""Leaky version of a Rectified Linear Unit: ``x`` where ``x > 0``, else ``alpha * x``.

    Parameters
    ----------
    alpha : float
        Slope coefficient for the negative half axis. Must be >= 0.
    """

    def __init__(self, alpha, **kwargs):
        if alpha < 0:
            raise ArgumentError('Slope coefficient for LeakyReLU must be no less than 0, '
                                'got %r' % (alpha,))
        super(LeakyReLU, self).__init__(**kwargs)
        self._alpha = alpha

    def hybrid_forward(self, F, x):
        return F.LeakyReLU(x, act_type='leaky', slope=self._alpha, name='fwd')

    def __repr__(self):
        return '{name}({alpha})'.format(name=self.__class__.__name__, alpha=self._alpha)


class PReLU(HybridBlock):
    r"""Parametric leaky ReLU: the negative slope ``alpha`` is a learned parameter.

    Parameters
    ----------
    alpha_initializer : Initializer
        Initializer for the ``alpha`` parameter (default: the constant 0.25).
    in_channels : int, default 1
        Number of channels (alpha parameters) to learn; 1 shares one slope over all
        channels.
    """

    def __init__(self, alpha_initializer=initializer.Constant(0.25), in_channels=1, **kwargs):
        super(PReLU, self).__init__(**kwargs)
        with self.name_scope():
            self.alpha = self.params.get('alpha', shape=(in_channels,), init=alpha_initializer)

    def hybrid_forward(self, F, x, alpha):
        return F.LeakyReLU(x, gamma=alpha, act_type='prelu', name='fwd')


class ELU(HybridBlock):
    r"""Exponential Linear Unit: ``x`` where ``x > 0``, else ``alpha * (exp(x) - 1)``.

    Parameters
    ----------
    alpha : float, default 1.0
        The scale of the negative half axis.
    """

    def __init__(self, alpha=1.0, **kwargs):
        super(ELU, self).__init__(**kwargs)
        self._alpha = alpha

    def hybrid_forward(self, F, x):
        # no name='fwd' here, as in MXNet: the node takes an automatic name
        return F.LeakyReLU(x, act_type='elu', slope=self._alpha)


class SELU(HybridBlock):
    r"""Scaled Exponential Linear Unit (Klambauer et al., 2017)."""

    def __init__(self, **kwargs):
        super(SELU, self).__init__(**kwargs)

    def hybrid_forward(self, F, x):
        return F.LeakyReLU(x, act_type='selu', name='fwd')


class GELU(HybridBlock):
    r"""Gaussian Error Linear Unit (Hendrycks and Gimpel, 2016)."""

    def __init__(self, **kwargs):
        super(GELU, self).__init__(**kwargs)

    def hybrid_forward(self, F, x):
        return F.LeakyReLU(x, act_type='gelu', name='fwd')


class Swish(HybridBlock):
    r"""Swish activation (Ramachandran et al., 2017): ``x * sigmoid(beta * x)``.

    Parameters
    ----------
    beta : float, default 1.0
        The factor of ``x`` inside the sigmoid.
    """

    def __init__(self, beta=1.0, **kwargs):
        super(Swish, self).__init__(**kwargs)
        self._beta = beta

    def hybrid_forward(self, F, x):
        return x * F.sigmoid(self._beta * x, name='fwd')
