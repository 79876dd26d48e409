"""The namespaces of ``mx.nd`` and ``mx.sym``, made from one table for both APIs.

:data:`NAMESPACES` lists them: ``random`` (the samplers below), and ``contrib``,
``linalg``, ``_internal``, ``image``, whose functions are the registered operators under a
name prefix (``mx.sym.contrib.box_nms`` is ``_contrib_box_nms``, ``mx.nd.linalg.gemm2`` is
``_linalg_gemm2``). ``mx.random`` re-exports the NDArray samplers.

Random samplers, as in MXNet: scalar distribution parameters make a ``_random_*`` node of ``shape``
samples; NDArray/Symbol parameters make a ``_sample_*`` node with one distribution per
element; ``exponential`` takes the scale (``lam = 1 / scale``, also for arrays);
``multinomial`` is ``_sample_multinomial``; ``<name>_like`` are the ``_random_<name>_like``
operators (the shape and dtype of ``data``); the NDArray functions
default to ``shape=1`` and run on ``ctx`` (default: the current context).
"""
import numbers
import types

from . import opdef
from .base import ArgumentError, ArgumentTypeError
from .context import Context, current_context

__all__ = ['NAMESPACES', 'NAMES', 'make_namespaces', 'make_namespace']

#: namespace attribute of ``mx.nd`` / ``mx.sym`` -> the operator name prefix its functions
#: resolve to (None: the random samplers, made by :func:`make_namespace`)
NAMESPACES = (('random', None), ('contrib', '_contrib_'), ('linalg', '_linalg_'),
              ('_internal', ''), ('image', '_image_'))

#: the functions of ``mx.nd.random`` and ``mx.sym.random``
NAMES = ('uniform', 'normal', 'randn', 'randint', 'exponential', 'gamma', 'poisson',
         'negative_binomial', 'generalized_negative_binomial', 'multinomial', 'shuffle')

#: the ``_random_<name>_like`` operators, which MXNet puts into ``random`` as ``<name>_like``
LIKE = ('uniform', 'normal', 'gamma', 'exponential', 'poisson', 'negative_binomial',
        'generalized_negative_binomial')

_NULL = object()


def make_namespaces(kind, array_type, invoke_op, op_function, functions=None):
    """The namespaces of :data:`NAMESPACES` for ``mx.nd`` (kind 'nd') or ``mx.sym`` ('sym').

    Parameters
    ----------
    kind : {'nd', 'sym'}
    array_type : type
        NDArray or Symbol.
    invoke_op : callable
        ``invoke_op(op_name, inputs, params)``: the module's operator call.
    op_function : callable
        ``op_function(op_name, hint)``: the module's function for a registered operator.
    functions : dict, optional
        ``{namespace: {name: function}}``: Python functions that a namespace gives in
        place of the registered operator of that name (``mx.nd.contrib.adamw_update``).

    Returns
    -------
    tuple
        One namespace per row of :data:`NAMESPACES`, in its order.
    """
    functions = functions or {}
    unknown = set(functions) - {name for name, _ in NAMESPACES}
    if unknown:
        raise ArgumentError('functions for unknown namespaces: %s' % ', '.join(sorted(unknown)))
    out = []
    for name, prefix in NAMESPACES:
        if prefix is None:
            out.append(make_namespace(kind, array_type, invoke_op))
        else:
            out.append(opdef.OpNamespace(prefix, op_function, functions.get(name)))
    return tuple(out)


def make_namespace(kind, array_type, invoke_op):
    """The ``random`` namespace of ``mx.nd`` (kind 'nd') or ``mx.sym`` ('sym'): the
    samplers of :data:`NAMES`.

    Parameters
    ----------
    kind : {'nd', 'sym'}
    array_type : type
        NDArray or Symbol: distribution parameters of this type make ``_sample_*`` nodes.
    invoke_op : callable
        ``invoke_op(op_name, inputs, params)``: the module's operator call.
    """
    if kind == 'nd':
        def invoke(name, params, out=None, ctx=None):
            if out is not None:
                params = dict(params, out=out)
            with Context(ctx) if ctx is not None else current_context():
                return invoke_op(name, (), params)
    else:
        def invoke(name, params, out=None, ctx=None):
            return invoke_op(name, (), params)

    def helper(random_op, sample_op, names, values, shape, dtype, ctx, out, kwargs):
        params = dict(kwargs)
        if shape is not _NULL:
            params['shape'] = shape
        if dtype is not _NULL:
            params['dtype'] = dtype
        if isinstance(values[0], array_type):
            if sample_op is None:
                raise ArgumentTypeError('%s takes numbers as distribution parameters, got %s'
                                        % (random_op, type(values[0]).__name__))
            if not all(isinstance(v, array_type) for v in values):
                raise ArgumentTypeError('distribution parameters must all have the same type, got '
                                        '%s' % ', '.join(type(v).__name__ for v in values))
            params.update(zip(sample_names[sample_op], values))
            return invoke(sample_op, params, out)
        if not all(isinstance(v, numbers.Number) for v in values):
            raise ArgumentTypeError('distribution parameters must be numbers or %ss, got %s'
                                    % (array_type.__name__,
                                       ', '.join(type(v).__name__ for v in values)))
        if kind == 'nd' and shape is _NULL and out is None:
            params['shape'] = 1
        params.update(zip(names, values))
        if kind == 'sym' and ctx is not None:
            params['ctx'] = str(ctx)
        return invoke(random_op, params, out, ctx if kind == 'nd' else None)

    sample_names = {'_sample_uniform': ('low', 'high'), '_sample_normal': ('mu', 'sigma'),
                    '_sample_exponential': ('lam',), '_sample_gamma': ('alpha', 'beta'),
                    '_sample_poisson': ('lam',), '_sample_negative_binomial': ('k', 'p'),
                    '_sample_generalized_negative_binomial': ('mu', 'alpha')}

    def uniform(low=0, high=1, shape=_NULL, dtype=_NULL, ctx=None, out=None, **kwargs):
        """Samples of U[low, high)."""
        return helper('_random_uniform', '_sample_uniform', ('low', 'high'), (low, high),
                      shape, dtype, ctx, out, kwargs)

    def normal(loc=0, scale=1, shape=_NULL, dtype=_NULL, ctx=None, out=None, **kwargs):
        """Samples of N(loc, scale^2)."""
        return helper('_random_normal', '_sample_normal', ('loc', 'scale'), (loc, scale),
                      shape, dtype, ctx, out, kwargs)

    def randn(*shape, loc=0, scale=1, dtype=_NULL, ctx=None, out=None, **kwargs):
        """Normal samples of the given shape (``randn(2, 3)``)."""
        return normal(loc, scale, shape or _NULL, dtype, ctx, out, **kwargs)

    def randint(low, high, shape=_NULL, dtype=_NULL, ctx=None, out=None, **kwargs):
        """Integers of [low, high), int32 by default."""
        return helper('_random_randint', None, ('low', 'high'), (low, high), shape, dtype,
                      ctx, out, kwargs)

    def exponential(scale=1, shape=_NULL, dtype=_NULL, ctx=None, out=None, **kwargs):
        """Samples of the exponential distribution of mean ``scale``."""
        return helper('_random_exponential', '_sample_exponential', ('lam',), (1.0 / scale,),
                      shape, dtype, ctx, out, kwargs)

    def gamma(alpha=1, beta=1, shape=_NULL, dtype=_NULL, ctx=None, out=None, **kwargs):
        """Samples of the gamma distribution (shape alpha, scale beta)."""
        return helper('_random_gamma', '_sample_gamma', ('alpha', 'beta'), (alpha, beta),
                      shape, dtype, ctx, out, kwargs)

    def poisson(lam=1, shape=_NULL, dtype=_NULL, ctx=None, out=None, **kwargs):
        """Samples of the Poisson distribution of mean ``lam`` (as floats)."""
        return helper('_random_poisson', '_sample_poisson', ('lam',), (lam,), shape, dtype,
                      ctx, out, kwargs)

    def negative_binomial(k=1, p=1, shape=_NULL, dtype=_NULL, ctx=None, out=None, **kwargs):
        """Failures before ``k`` successes of probability ``p`` (as floats)."""
        return helper('_random_negative_binomial', '_sample_negative_binomial', ('k', 'p'),
                      (k, p), shape, dtype, ctx, out, kwargs)

    def generalized_negative_binomial(mu=1, alpha=1, shape=_NULL, dtype=_NULL, ctx=None,
                                      out=None, **kwargs):
        """Gamma-Poisson counts of mean ``mu`` and dispersion ``alpha`` (as floats)."""
        return helper('_random_generalized_negative_binomial',
                      '_sample_generalized_negative_binomial', ('mu', 'alpha'),
                      (mu, alpha), shape, dtype, ctx, out, kwargs)

    def multinomial(data, shape=_NULL, get_prob=False, out=None, dtype='int32', **kwargs):
        """Category indices drawn from the probability vectors along ``data``'s last axis
        (and their log-probabilities with ``get_prob``)."""
        params = dict(kwargs, get_prob=get_prob, dtype=dtype)
        if shape is not _NULL:
            params['shape'] = shape
        if out is not None:
            params['out'] = out
        return invoke_op('_sample_multinomial', (data,), params)

    def shuffle(data, **kwargs):
        """The rows of ``data`` in a random order."""
        return invoke_op('_shuffle', (data,), kwargs)

    def like(name):
        op = '_random_%s_like' % name

        def fn(data=None, **kwargs):
            return invoke_op(op, () if data is None else (data,), kwargs)
        fn.__name__ = name + '_like'
        fn.__doc__ = 'Samples of ``%s`` with the shape and dtype of ``data``.' % op
        return fn

    funcs = dict(locals())
    ns = types.SimpleNamespace(**{n: funcs[n] for n in NAMES})
    for n in LIKE:
        setattr(ns, n + '_like', like(n))
    return ns
