"""Which cases the cuDNN kernels operators ask for compute (the GPU twin of
``symgraph.backend.onednn.routing``).

Nothing here is measured yet (no GPU was lent when this was written): the tables start
from what issue 34 measured of symgraph's own kernels against cuDNN on an H100/H200
(convolutions 1.0-4.0x cuDNN's time, BatchNorm up to 1.7x), so convolution, BatchNorm,
pooling and softmax go to cuDNN at every size, and activations stay on CuPy's elementwise
kernels (the issue: cuDNN "where faster", which ``bench/bench_gpu.py --cudnn`` measures)
until a GPU run shows otherwise. Lift a table entry here when the benchmark says so.
"""
__all__ = ['ACTIVATION_KINDS', 'DIRECT', 'routed']

#: activation kinds sent to cuDNN (empty: none, until measured)
ACTIVATION_KINDS = ()

#: kernels passed through as the backend's own methods (every case they take)
DIRECT = ('conv_forward', 'conv_backward_data', 'conv_backward_weights',
          'batchnorm_forward', 'batchnorm_backward', 'pool_forward', 'pool_backward',
          'softmax_forward', 'softmax_backward')


def routed(be, name):
    """Backend ``be``'s kernel ``name`` as operators get it (a function that may return
    None to decline)."""
    if name in DIRECT:
        return getattr(be, name)
    if name == 'activation_forward':
        fwd = be.activation_forward

        def activation_forward(x, kind, coef=0.0):
            return fwd(x, kind, coef) if kind in ACTIVATION_KINDS else None
        return activation_forward
    if name == 'activation_backward':
        bwd = be.activation_backward

        def activation_backward(x, y, dy, kind, coef=0.0):
            return bwd(x, y, dy, kind, coef) if kind in ACTIVATION_KINDS else None
        return activation_backward
    raise KeyError('no cuDNN kernel %r' % (name,))
