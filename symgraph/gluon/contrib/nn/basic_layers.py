"""Contributed layers of ``mx.gluon.contrib.nn``, after MXNet 1.9.1's
``gluon/contrib/nn/basic_layers.py``: :class:`Concurrent`, :class:`HybridConcurrent`,
:class:`Identity`, :class:`SparseEmbedding`, :class:`SyncBatchNorm` and
:class:`PixelShuffle1D`/2D/3D.

Differences from MXNet: :class:`SparseEmbedding`'s weight and gradient are dense arrays
(symgraph has no row-sparse storage; the values are the same), and :class:`SyncBatchNorm`
without ``num_devices`` lets the operator count the devices of the data-parallel group it
runs in (MXNet takes the number of GPUs of the machine and warns).
"""
from .... import ndarray
from ....base import ArgumentError
from ...block import Block, HybridBlock
from ...nn import BatchNorm, HybridSequential, Sequential

__all__ = ['Concurrent', 'HybridConcurrent', 'Identity', 'SparseEmbedding',
           'SyncBatchNorm', 'PixelShuffle1D', 'PixelShuffle2D', 'PixelShuffle3D']


class Concurrent(Sequential):
    """Lays Blocks concurrently: every child gets the same input and their outputs are
    concatenated along `axis`.

    Example::

        net = Concurrent()
        # use net's name_scope to give children blocks appropriate names.
        with net.name_scope():
            net.add(nn.Dense(10, activation='relu'))
            net.add(nn.Dense(20))
            net.add(Identity())

    Parameters
    ----------
    axis : int, default -1
        The axis on which to concatenate the outputs.
    """

    def __init__(self, axis=-1, prefix=None, params=None):
        super(Concurrent, self).__init__(prefix=prefix, params=params)
        self.axis = axis

    def forward(self, x):
        out = [block(x) for block in self._children.values()]
        return ndarray.concat(*out, dim=self.axis)


class HybridConcurrent(HybridSequential):
    """Lays HybridBlocks concurrently: every child gets the same input and their outputs
    are concatenated along `axis` (``F.concat``, so it hybridizes).

    Parameters
    ----------
    axis : int, default -1
        The axis on which to concatenate the outputs.
    """

    def __init__(self, axis=-1, prefix=None, params=None):
        super(HybridConcurrent, self).__init__(prefix=prefix, params=params)
        self.axis = axis

    def hybrid_forward(self, F, x):
        out = [block(x) for block in self._children.values()]
        return F.concat(*out, dim=self.axis)


class Identity(HybridBlock):
    """Block that passes through the input directly; useful in :class:`Concurrent` /
    :class:`HybridConcurrent` for a residual branch."""

    def __init__(self, prefix=None, params=None):
        super(Identity, self).__init__(prefix=prefix, params=params)

    def hybrid_forward(self, F, x):
        return x


class SparseEmbedding(Block):
    """Turns non-negative integers (indexes/tokens) into dense vectors of fixed size
    (MXNet's sparse-gradient embedding; here weight and gradient are dense arrays of the
    same values). Not hybridizable, as in MXNet.

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
    """

    def __init__(self, input_dim, output_dim, dtype='float32',
                 weight_initializer=None, **kwargs):
        super(SparseEmbedding, self).__init__(**kwargs)
        self._kwargs = {'input_dim': input_dim, 'output_dim': output_dim,
                        'dtype': dtype, 'sparse_grad': True}
        self.weight = self.params.get('weight', shape=(input_dim, output_dim),
                                      init=weight_initializer, dtype=dtype)

    def forward(self, x):
        weight = self.weight.data(x.context)
        return ndarray.Embedding(x, weight, name='fwd', **self._kwargs)

    def __repr__(self):
        return '{block_name}({input_dim} -> {output_dim}, {dtype})'.format(
            block_name=self.__class__.__name__, **self._kwargs)


class SyncBatchNorm(BatchNorm):
    """Cross-device synchronized batch normalization (the ``_contrib_SyncBatchNorm``
    operator): in a data-parallel step the statistics span the batches of all devices
    (and processes). The channel axis is 1.

    Parameters
    ----------
    in_channels : int, default 0
        Number of channels; 0 defers initialization to the first forward.
    num_devices : int, default None
        Number of devices whose batches are normalized together; None: those of the
        data-parallel group the operator runs in (one for a plain imperative call).
    momentum, epsilon, center, scale, use_global_stats, *_initializer :
        As :class:`~symgraph.gluon.nn.BatchNorm`.
    """

    def __init__(self, in_channels=0, num_devices=None, momentum=0.9, epsilon=1e-5,
                 center=True, scale=True, use_global_stats=False, beta_initializer='zeros',
                 gamma_initializer='ones', running_mean_initializer='zeros',
                 running_variance_initializer='ones', **kwargs):
        super(SyncBatchNorm, self).__init__(
            axis=1, momentum=momentum, epsilon=epsilon, center=center, scale=scale,
            use_global_stats=use_global_stats, beta_initializer=beta_initializer,
            gamma_initializer=gamma_initializer,
            running_mean_initializer=running_mean_initializer,
            running_variance_initializer=running_variance_initializer,
            in_channels=in_channels, **kwargs)
        self._kwargs = {'eps': epsilon, 'momentum': momentum,
                        'fix_gamma': not scale, 'use_global_stats': use_global_stats,
                        'ndev': num_devices, 'key': self.prefix}

    def hybrid_forward(self, F, x, gamma, beta, running_mean, running_var):
        kwargs = dict(self._kwargs)
        if kwargs['ndev'] is None:
            del kwargs['ndev']          # the operator's default: the group's devices
        return F.contrib.SyncBatchNorm(x, gamma, beta, running_mean, running_var,
                                       name='fwd', **kwargs)


def _factors(factor, n):
    """``factor`` as a tuple of ``n`` positive ints (an int is repeated)."""
    try:
        factors = (int(factor),) * n
    except TypeError:
        factors = tuple(int(fac) for fac in factor)
    if len(factors) != n or min(factors) < 1:
        raise ArgumentError('PixelShuffle%dD: factor must be a positive int or %d of '
                            'them, got %r' % (n, n, factor))
    return factors


class PixelShuffle1D(HybridBlock):
    r"""Pixel-shuffle layer for upsampling in 1 dimension: ``(N, f*C, W)`` to
    ``(N, C, W*f)``, the ``f`` channels of each output channel interleaved along W.

    Parameters
    ----------
    factor : int or 1-tuple of int
        Upsampling factor.
    """

    def __init__(self, factor):
        super(PixelShuffle1D, self).__init__()
        self._factor = _factors(factor, 1)[0]

    def hybrid_forward(self, F, x):
        f = self._factor
        x = F.reshape(x, (0, -4, -1, f, 0))       # (N, C, f, W)
        x = F.transpose(x, (0, 1, 3, 2))          # (N, C, W, f)
        return F.reshape(x, (0, 0, -3))           # (N, C, W*f)

    def __repr__(self):
        return '{}({})'.format(self.__class__.__name__, self._factor)


class PixelShuffle2D(HybridBlock):
    r"""Pixel-shuffle layer for upsampling in 2 dimensions: ``(N, f1*f2*C, H, W)`` to
    ``(N, C, H*f1, W*f2)``.

    Parameters
    ----------
    factor : int or 2-tuple of int
        Upsampling factors, the same for both dimensions if an int.
    """

    def __init__(self, factor):
        super(PixelShuffle2D, self).__init__()
        self._factors = _factors(factor, 2)

    def hybrid_forward(self, F, x):
        f1, f2 = self._factors
        x = F.reshape(x, (0, -4, -1, f1 * f2, 0, 0))      # (N, C, f1*f2, H, W)
        x = F.reshape(x, (0, 0, -4, f1, f2, 0, 0))        # (N, C, f1, f2, H, W)
        x = F.transpose(x, (0, 1, 4, 2, 5, 3))            # (N, C, H, f1, W, f2)
        return F.reshape(x, (0, 0, -3, -3))               # (N, C, H*f1, W*f2)

    def __repr__(self):
        return '{}({})'.format(self.__class__.__name__, self._factors)


class PixelShuffle3D(HybridBlock):
    r"""Pixel-shuffle layer for upsampling in 3 dimensions: ``(N, f1*f2*f3*C, D, H, W)`` to
    ``(N, C, D*f1, H*f2, W*f3)``.

    Parameters
    ----------
    factor : int or 3-tuple of int
        Upsampling factors, the same for all dimensions if an int.
    """

    def __init__(self, factor):
        super(PixelShuffle3D, self).__init__()
        self._factors = _factors(factor, 3)

    def hybrid_forward(self, F, x):
        # MXNet's sequence: a transpose of 8 axes is beyond its operators' limits, so the
        # factors move into place by reshapes and three swaps of neighbouring axes
        f1, f2, f3 = self._factors
        x = F.reshape(x, (0, -4, -1, f1 * f2 * f3, 0, 0, 0))  # (N, C, f1*f2*f3, D, H, W)
        x = F.swapaxes(x, 2, 3)                               # (N, C, D, f1*f2*f3, H, W)
        x = F.reshape(x, (0, 0, 0, -4, f1, f2 * f3, 0, 0))    # (N, C, D, f1, f2*f3, H, W)
        x = F.reshape(x, (0, 0, -3, 0, 0, 0))                 # (N, C, D*f1, f2*f3, H, W)
        x = F.swapaxes(x, 3, 4)                               # (N, C, D*f1, H, f2*f3, W)
        x = F.reshape(x, (0, 0, 0, 0, -4, f2, f3, 0))         # (N, C, D*f1, H, f2, f3, W)
        x = F.reshape(x, (0, 0, 0, -3, 0, 0))                 # (N, C, D*f1, H*f2, f3, W)
        x = F.swapaxes(x, 4, 5)                               # (N, C, D*f1, H*f2, W, f3)
        return F.reshape(x, (0, 0, 0, 0, -3))                 # (N, C, D*f1, H*f2, W*f3)

    def __repr__(self):
        return '{}({})'.format(self.__class__.__name__, self._factors)
