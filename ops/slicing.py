"""Joining and slicing: ``Concat``, ``stack``, ``SliceChannel``, ``_split_v2``, ``slice``,
``slice_axis``, ``slice_like``.

``slice_like`` keeps ``data[:like.shape[a]]`` on the axes ``axes`` (all when empty);
``shape_like`` gets a zero gradient and may have any dtype.

``Concat`` and ``stack`` take a variable number of inputs named ``arg0 ... argN-1``; their
``num_args`` parameter is MXNet's ``key_var_num_args`` (the symbol front end sets it from
the number of positional inputs). ``SliceChannel`` has one output per piece, named
``output0 ... outputN-1``.
"""
import ast
import functools

from symgraph.base import MXNetError
from symgraph.opdef import Operator, Param, ShapeError, register, unify_shape

from ._util import norm_axis, sliced_len
from symgraph.base import ArgumentError


class _VarArgs(Operator):
    """Operators whose inputs are ``arg0 ... arg{num_args-1}``."""

    key_var_num_args = 'num_args'
    needs_inputs = False

    def check(self):
        if self.num_args < 1:
            raise ArgumentError('%s: num_args must be at least 1' % self.name)

    def list_arguments(self):
        return ['arg%d' % i for i in range(self.num_args)]


@register
class Concat(_VarArgs):
    """Join arrays along an existing axis ``dim``."""

    name = 'Concat'
    aliases = ('concat',)
    num_args = Param(int, doc='number of inputs to concatenate')
    needs_inputs = True  # backward needs the inputs' sizes along dim
    dim = Param(int, 1, doc='the axis to concatenate along')

    infer_shape_uses_outputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        names = self.list_arguments()
        shapes = list(in_shapes[:self.num_args])
        out = out_shapes[0] if out_shapes else None
        ref = next((s for s in shapes + [out] if s is not None), None)
        if ref is None:
            return shapes, [None], []
        nd = len(ref)
        ax = norm_axis(self.dim, nd, 'dim')
        # the dimensions other than `dim` agree across inputs and output
        common = tuple(0 if i == ax else d for i, d in enumerate(ref))
        for i, s in enumerate(shapes + [out]):
            if s is None:
                continue
            masked = tuple(0 if j == ax else d for j, d in enumerate(s))
            try:
                common = unify_shape(common, masked)
            except ShapeError:
                what = names[i] if i < len(names) else 'output'
                raise ShapeError('Concat: input %r has shape %s, incompatible with %s '
                                 '(all dimensions but dim=%d must agree)'
                                 % (what, tuple(s), common, ax)) from None
        for i, s in enumerate(shapes):
            shapes[i] = common[:ax] + ((s[ax],) if s is not None else (0,)) + common[ax + 1:]
        sizes = [s[ax] for s in shapes]
        total = sum(sizes) if all(sizes) else 0
        if out is not None and out[ax]:
            if total and total != out[ax]:
                raise ShapeError('Concat: inputs sum to %d along dim %d but the output has %d'
                                 % (total, ax, out[ax]))
            unknown = [i for i, d in enumerate(sizes) if d == 0]
            if len(unknown) == 1:
                i = unknown[0]
                s = list(shapes[i])
                s[ax] = out[ax] - sum(sizes)
                if s[ax] <= 0:
                    raise ShapeError('Concat: output has %d along dim %d, the other inputs '
                                     'already %d' % (out[ax], ax, sum(sizes)))
                shapes[i] = tuple(s)
                total = out[ax]
        return shapes, [common[:ax] + (total,) + common[ax + 1:]], []

    def forward(self, xp, inputs, aux, is_train):
        return [xp.concatenate(inputs, axis=norm_axis(self.dim, inputs[0].ndim))]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        g = out_grads[0]
        ax = norm_axis(self.dim, g.ndim)
        return _split_sizes(g, ax, [x.shape[ax] for x in inputs], need)


def _split_sizes(g, axis, sizes, need):
    """Slices of ``g`` along ``axis`` of the given sizes (None where not needed)."""
    out, start = [], 0
    for size, n in zip(sizes, need):
        idx = [slice(None)] * g.ndim
        idx[axis] = slice(start, start + size)
        out.append(g[tuple(idx)] if n else None)
        start += size
    return out


@register
class Stack(_VarArgs):
    """Join arrays of equal shape along a new axis."""

    name = 'stack'
    num_args = Param(int, doc='number of inputs to stack')
    axis = Param(int, 0, doc='position of the new axis in the result')

    infer_shape_uses_outputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        names = self.list_arguments()
        shapes = list(in_shapes[:self.num_args])
        s = None
        for i, t in enumerate(shapes):
            try:
                s = unify_shape(s, t)
            except ShapeError:
                raise ShapeError('stack: input %r has shape %s but %s was expected from the '
                                 'other inputs' % (names[i], tuple(t), s)) from None
        if s is None:
            return shapes, [None], []
        ax = norm_axis(self.axis, len(s) + 1)
        return [s] * self.num_args, [s[:ax] + (self.num_args,) + s[ax:]], []

    def forward(self, xp, inputs, aux, is_train):
        return [xp.stack(inputs, axis=norm_axis(self.axis, inputs[0].ndim + 1))]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        g = out_grads[0]
        ax = norm_axis(self.axis, g.ndim)
        return [xp.take(g, i, axis=ax) if n else None for i, n in enumerate(need)]


@register
class SliceChannel(Operator):
    """Split an array into ``num_outputs`` equal pieces along ``axis``."""

    name = 'SliceChannel'
    aliases = ('split',)
    num_outputs = Param(int, doc='number of pieces; must divide the axis length')
    axis = Param(int, 1, doc='the axis to split')
    squeeze_axis = Param(bool, False, doc='remove the split axis (its pieces have length 1)')
    needs_inputs = False

    def list_outputs(self):
        return ['output%d' % i for i in range(self.num_outputs)]

    infer_shape_uses_outputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        d = in_shapes[0]
        n = self.num_outputs
        if d is None:
            return [None], [None] * n, []
        ax = norm_axis(self.axis, len(d))
        if 0 in d and out_shapes:
            d = self._fill_from_outputs(list(d), ax, out_shapes)
        if d[ax] and d[ax] % n:
            raise ShapeError('SliceChannel: num_outputs=%d does not divide length %d of '
                             'axis %d of input %r %s' % (n, d[ax], ax, 'data', tuple(d)))
        if self.squeeze_axis:
            if d[ax] and d[ax] != n:
                raise ShapeError('SliceChannel: squeeze_axis needs input %r to have length '
                                 '%d on axis %d, got %s' % ('data', n, ax, tuple(d)))
            piece = tuple(d[:ax]) + tuple(d[ax + 1:])
        else:
            piece = tuple(d[:ax]) + (d[ax] // n,) + tuple(d[ax + 1:])
        return [d], [piece] * n, []

    def _fill_from_outputs(self, d, ax, out_shapes):
        """The input's unknown (0) dimensions filled from the known pieces, as MXNet's
        SliceChannel infers its input backwards (MXNet's test_infer_shape.py
        test_incomplete_infer_slicechannel)."""
        n = self.num_outputs
        for out in out_shapes:
            if out is None or len(out) != len(d) - (1 if self.squeeze_axis else 0):
                continue
            full = (list(out[:ax]) + [n] + list(out[ax:]) if self.squeeze_axis else
                    list(out[:ax]) + [out[ax] * n] + list(out[ax + 1:]))
            d = [a or b for a, b in zip(d, full)]
        return tuple(d)

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        ax = norm_axis(self.axis, x.ndim)
        parts = xp.split(x, self.num_outputs, axis=ax)
        if self.squeeze_axis:
            parts = [p.reshape(p.shape[:ax] + p.shape[ax + 1:]) for p in parts]
        return list(parts)

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        ref = next((g for g in out_grads if g is not None), None)
        if ref is None:
            return [None]
        ax = norm_axis(self.axis, ref.ndim + (1 if self.squeeze_axis else 0))
        grads = [xp.zeros_like(ref) if g is None else g for g in out_grads]
        if self.squeeze_axis:
            return [xp.stack(grads, axis=ax)]
        return [xp.concatenate(grads, axis=ax)]


@register
class SplitV2(Operator):
    """Split an array along ``axis`` at ``indices`` or into ``sections`` equal pieces.

    MXNet's ``_split_v2`` (written by ``mx.sym.split_v2`` and Gluon exports). ``indices``
    holds the start of every piece (the Python wrappers prepend 0), the last piece runs to
    the end of the axis; ``sections > 0`` takes precedence over ``indices``.
    """

    name = '_split_v2'
    indices = Param('shape', doc='start of every piece along axis (the first must be 0)')
    axis = Param(int, 1, doc='the axis to split')
    squeeze_axis = Param(bool, False, doc='remove the split axis (pieces of length 1)')
    sections = Param(int, 0, doc='number of equal pieces (0: split at indices)')
    needs_inputs = True     # the input's shape places the pieces of absent head gradients

    def check(self):
        if self.sections < 0:
            raise MXNetError('_split_v2: sections must be >= 0, got %d' % self.sections)
        if self.sections == 0 and not self.indices:
            raise MXNetError('_split_v2: give indices (the start of every piece) or '
                             'sections > 0')

    def _count(self):
        return self.sections if self.sections > 0 else len(self.indices)

    def list_outputs(self):
        # MXNet's default names (no FListOutputNames): a single piece is plain 'output'
        k = self._count()
        return ['output'] if k == 1 else ['output%d' % i for i in range(k)]

    def _bounds(self, n, ax, shape):
        """(start, end) of every piece on an axis of length ``n``."""
        k = self._count()
        if self.sections > 0:
            if n % k:
                raise ShapeError('_split_v2: length %d of axis %d of input %r %s is not '
                                 'divisible by sections=%d' % (n, ax, 'data', shape, k))
            return [(i * (n // k), (i + 1) * (n // k)) for i in range(k)]
        ind = self.indices
        if ind[0] != 0:
            raise ShapeError('_split_v2: indices %s must start with 0 (the pieces must cover '
                             'axis %d of input %r %s)' % (ind, ax, 'data', shape))
        out = []
        for i in range(k):
            start, end = ind[i], ind[i + 1] if i + 1 < k else n
            if start > end or end > n:
                raise ShapeError('_split_v2: piece %d [%d, %d) is not inside axis %d of '
                                 'length %d of input %r %s (indices %s)'
                                 % (i, start, end, ax, n, 'data', shape, ind))
            out.append((start, end))
        return out

    def infer_shape(self, in_shapes):
        d = in_shapes[0]
        k = self._count()
        if d is None:
            return [None], [None] * k, []
        d = tuple(d)
        ax = norm_axis(self.axis, len(d))
        if not d[ax]:
            return [d], [None] * k, []
        outs = []
        for i, (b, e) in enumerate(self._bounds(d[ax], ax, d)):
            if self.squeeze_axis:
                if e - b != 1:
                    raise ShapeError('_split_v2: squeeze_axis needs pieces of length 1, '
                                     'piece %d of input %r %s has %d' % (i, 'data', d, e - b))
                outs.append(d[:ax] + d[ax + 1:])
            else:
                outs.append(d[:ax] + (e - b,) + d[ax + 1:])
        return [d], outs, []

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        ax = norm_axis(self.axis, x.ndim)
        outs = []
        for b, e in self._bounds(x.shape[ax], ax, x.shape):
            p = x[(slice(None),) * ax + (slice(b, e),)]
            if self.squeeze_axis:
                p = p.reshape(p.shape[:ax] + p.shape[ax + 1:])
            outs.append(p.copy())
        return outs

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        if not need[0]:
            return [None]
        x = inputs[0]
        ax = norm_axis(self.axis, x.ndim)
        pieces = []
        for g, (b, e) in zip(out_grads, self._bounds(x.shape[ax], ax, x.shape)):
            shape = x.shape[:ax] + (e - b,) + x.shape[ax + 1:]
            pieces.append(xp.zeros(shape, x.dtype) if g is None else g.reshape(shape))
        return [xp.concatenate(pieces, axis=ax)]


@functools.lru_cache(maxsize=None)
def _opt_tuple(text):
    """Parse '(1, None, -2)' into a tuple of ints and Nones."""
    v = ast.literal_eval(text) if text.strip() not in ('', 'None') else ()
    if isinstance(v, (int, type(None))):
        v = (v,)
    return tuple(None if e is None else int(e) for e in v)


def _slices(begin, end, step, shape):
    """Python slices from MXNet's begin/end/step (None entries allowed, step may be short)."""
    if len(begin) != len(end):
        raise ShapeError('slice: begin %s and end %s have different lengths' % (begin, end))
    if len(begin) > len(shape):
        raise ShapeError('slice: begin %s has more entries than input %r has dims %s'
                         % (begin, 'data', tuple(shape)))
    if step and len(step) != len(begin):
        raise ShapeError('slice: step %s must have the length of begin %s' % (step, begin))
    out = []
    for i, (b, e) in enumerate(zip(begin, end)):
        s = step[i] if step and step[i] is not None else 1
        if s == 0:
            raise ShapeError('slice: step cannot be 0')
        out.append(slice(b, e, s))
    return tuple(out)


@register
class Slice(Operator):
    """Basic slicing ``data[b0:e0:s0, b1:e1:s1, ...]``; None entries take the default."""

    name = 'slice'
    aliases = ('crop',)
    begin = Param(str, doc='start indices, e.g. (0, None); negative counts from the end')
    end = Param(str, doc='end indices (exclusive), e.g. (2, None)')
    step = Param(str, '()', doc='steps, default 1; negative steps walk backwards')
    needs_inputs = True

    def _sl(self, shape):
        return _slices(_opt_tuple(self.begin), _opt_tuple(self.end), _opt_tuple(self.step),
                       shape)

    def check(self):
        for p in ('begin', 'end', 'step'):
            try:
                text = str(_opt_tuple(getattr(self, p)))
            except (ValueError, SyntaxError, TypeError):
                raise ArgumentError('slice: cannot parse %s=%r' % (p, getattr(self, p))) from None
            # written back as MXNet writes a Python tuple: '(0, None)', '(1,)'
            self._values[p] = text
            self._fix(**{p: text})

    infer_shape_uses_outputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        d = in_shapes[0]
        if d is None:
            return [None], [None], []
        sl = self._sl(d)
        # an empty slice is allowed and has length 0, as in MXNet (where 0 is then
        # indistinguishable from an unknown dimension, as here)
        out = tuple(sliced_len(s, n) for s, n in zip(sl, d)) + tuple(d[len(sl):])
        return [d], [out], []

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        return [xp.ascontiguousarray(x[self._sl(x.shape)])]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        x = inputs[0]
        g = xp.zeros(x.shape, dtype=out_grads[0].dtype)
        g[self._sl(x.shape)] = out_grads[0]
        return [g]


@register
class SliceAxis(Operator):
    """Slice along one axis: ``data[..., begin:end, ...]``."""

    name = 'slice_axis'
    axis = Param(int, doc='the axis to slice; negative counts from the end')
    begin = Param(int, doc='start index; negative counts from the end')
    end = Param(int, doc='end index (exclusive) or None for the end of the axis',
                nullable=True)
    needs_inputs = True

    def _sl(self, ndim):
        ax = norm_axis(self.axis, ndim)
        idx = [slice(None)] * ndim
        idx[ax] = slice(self.begin, self.end)
        return ax, tuple(idx)

    infer_shape_uses_outputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        d = in_shapes[0]
        if d is None:
            return [None], [None], []
        ax, idx = self._sl(len(d))
        n = sliced_len(idx[ax], d[ax])
        if d[ax] and n == 0:
            # unlike slice, MXNet's slice_axis requires begin < end
            raise ShapeError('slice_axis: begin=%s end=%s is empty on axis %d of input %r %s'
                             % (self.begin, self.end, ax, 'data', tuple(d)))
        return [d], [tuple(d[:ax]) + (n,) + tuple(d[ax + 1:])], []

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        return [xp.ascontiguousarray(x[self._sl(x.ndim)[1]])]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        x = inputs[0]
        g = xp.zeros(x.shape, dtype=out_grads[0].dtype)
        g[self._sl(x.ndim)[1]] = out_grads[0]
        return [g]


# --- slice_like / reshape_like -----------------------------------------------------------
@register
class SliceLike(Operator):
    """``data`` sliced from the start to ``shape_like``'s sizes on ``axes``."""

    name = 'slice_like'
    axes = Param('shape', (), doc='axes to slice; empty slices all of them')

    def list_arguments(self):
        return ['data', 'shape_like']

    def _axes(self, dshape, lshape):
        nd, nl = len(dshape), len(lshape)
        if not self.axes:
            if nd != nl:
                raise ShapeError('slice_like: with empty axes data and shape_like need the '
                                 'same number of dimensions, got %s and %s'
                                 % (tuple(dshape), tuple(lshape)))
            return list(range(nd))
        out = []
        for a in self.axes:
            b = a + nd if a < 0 else a
            if not 0 <= b < nd:
                raise ShapeError('slice_like: axis %d exceeds data of shape %s'
                                 % (a, tuple(dshape)))
            if b >= nl:
                raise ShapeError('slice_like: axis %d exceeds shape_like of shape %s'
                                 % (a, tuple(lshape)))
            out.append(b)
        return out

    def _out(self, dshape, lshape):
        out = list(dshape)
        for a in self._axes(dshape, lshape):
            if dshape[a] > 0 and lshape[a] > dshape[a]:
                raise ShapeError('slice_like: axis %d of shape_like %s is longer than that '
                                 'of data %s' % (a, tuple(lshape), tuple(dshape)))
            out[a] = lshape[a]
        return tuple(out)

    def infer_shape(self, in_shapes):
        d, like = in_shapes[0], in_shapes[1]
        if d is None or like is None:
            return [d, like], [None], []
        return [tuple(d), tuple(like)], [self._out(d, like)], []

    def infer_type(self, in_types):
        return [in_types[0], in_types[1]], [in_types[0]], []

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        shape = self._out(x.shape, inputs[1].shape)
        return [x[tuple(slice(0, d) for d in shape)]]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        x, like = inputs[0], inputs[1]
        g = out_grads[0]
        gx = None
        if need[0]:
            gx = xp.zeros(x.shape, dtype=g.dtype)
            gx[tuple(slice(0, d) for d in g.shape)] = g
        return [gx, xp.zeros_like(like) if need[1] else None]
