"""``mx.nd.CachedOp``: a Symbol called like a function on NDArrays, after MXNet 1.9.1's
``python/mxnet/_ctypes/ndarray.py`` ``CachedOp``.

``CachedOp(sym)(*inputs)`` takes one NDArray per ``sym.list_inputs()`` (arguments and
auxiliary states, in that order) and runs the graph operator by operator through ``mx.nd``,
so that under ``autograd.record()`` every operator goes on the tape as an imperative call
would (``backward(retain_graph=True)``, higher order where the operators have rules) and
auxiliary states (BatchNorm's running statistics) are updated in place as MXNet's CachedOp
updates them. Gluon's hybridized blocks run their graphs through a bound executor instead
(gluon/cached_op.py); this one serves MXNet code that builds a CachedOp from a Symbol.
"""
from .. import opdef
from ..base import ArgumentError, ArgumentTypeError
from .ndarray import NDArray, invoke

__all__ = ['CachedOp']


class CachedOp:
    """A Symbol as a function of NDArrays.

    Parameters
    ----------
    sym : Symbol
        The graph; its inputs are ``sym.list_inputs()``.
    flags : sequence of (str, value) pairs
        MXNet's CachedOp flags (``static_alloc``, ``static_shape``, ...): kept, they
        change nothing here.

    Examples
    --------
    >>> import symgraph as mx
    >>> op = mx.nd.CachedOp(mx.sym.var('x') * 2 + mx.sym.var('y'))
    >>> op(mx.nd.ones((2,)), mx.nd.array([1, 2])).asnumpy()
    array([3., 4.], dtype=float32)
    """

    def __init__(self, sym, flags=()):
        if not (hasattr(type(sym), 'list_inputs') and hasattr(type(sym), 'graph')):
            raise ArgumentTypeError('CachedOp takes a Symbol, got %s' % type(sym).__name__)
        self._sym = sym
        self.flags = dict(flags)
        self._graph = sym.graph(check_names=False)
        self._inputs = sym.list_inputs()
        # per operator node: its name and parameters, worked out once
        self._calls = {id(n): (n.op.name, {k: getattr(n.op, k)
                                           for k in opdef.param_names(type(n.op))})
                       for n in self._graph.order if n.op is not None}

    def __call__(self, *args, **kwargs):
        out = kwargs.pop('out', None)
        if kwargs:
            raise TypeError('CachedOp.__call__ got unexpected keyword argument(s): '
                            + ', '.join(kwargs))
        if len(args) != len(self._inputs):
            raise ArgumentError('CachedOp: %d inputs given, the graph takes %d: %s'
                                % (len(args), len(self._inputs), self._inputs))
        for name, a in zip(self._inputs, args):
            if not isinstance(a, NDArray):
                raise ArgumentTypeError('CachedOp: input %r must be an NDArray, got %s'
                                        % (name, type(a).__name__))
        given = dict(zip(self._inputs, args))
        values = {}
        for n in self._graph.order:
            if n.op is None:
                values[id(n)] = [given[n.name]]
                continue
            name, params = self._calls[id(n)]
            res = invoke(name, [values[id(src)][i] for src, i in n.inputs], dict(params))
            values[id(n)] = list(res) if isinstance(res, (list, tuple)) else [res]
        outs = [values[id(n)][i] for n, i in self._graph.outputs]
        if out is None:
            return outs[0] if len(outs) == 1 else outs
        dsts = [out] if isinstance(out, NDArray) else list(out)
        if len(dsts) != len(outs):
            raise ArgumentError('CachedOp: out= holds %d arrays for %d outputs'
                                % (len(dsts), len(outs)))
        for dst, r in zip(dsts, outs):
            dst[:] = r
            if r._ag is not None:       # recorded: the out= array stands for the result
                dst._ag = r._ag
        return out
