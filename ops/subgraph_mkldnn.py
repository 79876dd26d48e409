"""The fused operators MXNet 1.9.1's oneDNN backend writes into symbol JSON:
``_sg_mkldnn_conv`` (a convolution with its batch norm, activation, residual sum and
post-sum activation) and ``_sg_mkldnn_fully_connected``, float32 and quantized, after
src/operator/subgraph/mkldnn/mkldnn_conv.cc, mkldnn_fc.cc and mkldnn_common.h.

Each node holds the fused layers as a graph (JSON ``subgraphs``). In float32 the node runs
that graph. Quantized (``quantized=True``), it does what MXNet's kernel does: folds the
batch norm into the weights, quantizes the weights per output channel (calibrated, or one
scale uncalibrated) at ``127.5 / max|w|`` and the bias to int32 at the data's and weight's
scales, accumulates int8 products exactly, scales the sums onto the calibrated output
range (``min_calib_range``/``max_calib_range``: uint8 after a relu, else int8; int32
uncalibrated) and applies the post-ops in oneDNN's order (activation, sum, post-sum
activation), rounding to nearest even and saturating once at the end. With the oneDNN
backend the calibrated layer runs as one int8 convolution primitive (scales, bias, relu,
the residual sum with its relu and the uint8/int8 output fused; activations channels
last; backend/onednn/int8.py); NumPy computes the same bits otherwise (the sum as one
fused multiply-add, as oneDNN's sum post-op: tests/golden/make_int8_sum.py). A bound
executor runs :class:`SgMKLDNNConvInto`, which writes into the storage plan's buffers;
the residual sum declares MXNet's in-place option (:attr:`SgMKLDNNConv.inplace`), so
that the plan gives its output the summand's buffer where the summand dies there and the
sum is computed over it, with no copy of the summand first.

Inputs in symgraph's order (arguments, then auxiliary states; the JSON keeps MXNet's,
``mxnet_input_order``): data, weight, [bias], [gamma, beta], [sum], then quantized
[min_data, max_data, [min_sum, max_sum]], then [moving_mean, moving_var].
"""
import numpy as np

from symgraph.base import NotSupportedError
from symgraph.opdef import CPU_KERNELS, Operator, Param, ShapeError, Step, cpu_kernel, register

from ._specfun import erf
from .quantized import F32, INT32_MAX, max_abs, quantize_scale, rng, saturate, scalar
from .quantized_nn import conv_int32, conv_requantized, int_matmul, product_range

def _requantize(acc, scales, dtype, token, cache):
    """The backend's per-channel requantization of an int32 ``acc`` (see
    ``CpuKernels.int8_requantize``), or None."""
    if token is None or 'int8_requantize' not in CPU_KERNELS:
        return None
    kernel = cpu_kernel('int8_requantize')
    return None if kernel is None else kernel(acc, scales, dtype, token, cache)


def _fma(y, s, scale):
    """float32 ``y + s * scale`` rounded once, as oneDNN's sum post-op (a fused multiply-add,
    what MXNet's build runs) computes it: the int8/uint8 ``s`` times the float32 ``scale``
    is exact in float64, and so is the sum (rounded once to float32) wherever ``|y|`` is
    zero or above 2**-20 of the product."""
    return (s.astype(np.float64) * float(scale) + y).astype(F32)


#: activations after which MXNet's fused layer writes uint8 (IsOutputUInt8)
_RELU_LIKE = ('relu', 'sigmoid', 'softrelu', 'bounded_relu')


def _layers(graph):
    """{'conv'|'fc'|'bn'|'act'|'sum'|'postsum_act': (op, inputs)} of a fused graph, and the
    position of the sum's other operand among the graph's inputs."""
    nodes = graph.nodes()
    found, sum_input = {}, None
    inputs = [k for k, (op, _, _) in enumerate(nodes) if op is None]
    for k, (op, name, ins) in enumerate(nodes):
        if op is None:
            continue
        kind = op.name
        if kind == 'Convolution':
            found['conv'] = op
        elif kind == 'FullyConnected':
            found['fc'] = op
        elif kind == 'BatchNorm':
            found['bn'] = op
        elif kind in ('elemwise_add', '_Plus', '_plus', '_add'):
            found['sum'] = op
            for src, _ in ins:
                if nodes[src][0] is None:
                    sum_input = inputs.index(src)
        elif kind in ('Activation', 'relu', 'LeakyReLU', 'clip', 'sigmoid', 'tanh', 'abs',
                      'square', 'sqrt', 'exp'):
            found['postsum_act' if 'sum' in found else 'act'] = op
    return found, sum_input


def _act_kind(op):
    """The oneDNN eltwise kind of a fused activation node (None: none)."""
    if op is None:
        return None
    if op.name == 'Activation':
        return op.act_type
    if op.name == 'LeakyReLU':
        return op.act_type         # 'leaky' or 'gelu' (what the selector fuses)
    if op.name == 'clip':
        return 'bounded_relu'
    return op.name


def _apply_act(y, kind, op=None, scale=None):
    """A fused activation applied to ``y`` as oneDNN's eltwise post-op does (on the
    scaled output levels where the layer is quantized; ``scale``: the output scale a
    bounded relu's bound is multiplied by)."""
    if kind is None:
        return y
    if kind == 'relu':
        return np.maximum(y, F32(0))
    if kind == 'leaky':
        return np.where(y > 0, y, y * F32(op.slope)).astype(F32)
    if kind == 'gelu':
        return (y * 0.5 * (1.0 + erf(np, y.astype(np.float64) / np.sqrt(2.0)))).astype(F32)
    if kind == 'bounded_relu':
        return np.clip(y, F32(0), F32(F32(op.a_max) * (F32(1) if scale is None else scale)))
    if kind == 'sigmoid':
        return (1.0 / (1.0 + np.exp(-y))).astype(F32)
    if kind == 'tanh':
        return np.tanh(y).astype(F32)
    if kind == 'softrelu':
        return np.logaddexp(0, y).astype(F32)
    if kind == 'abs':
        return np.abs(y)
    if kind == 'elu':
        return np.where(y > 0, y, F32(op.slope) * np.expm1(y)).astype(F32)
    raise NotSupportedError('quantized _sg_mkldnn_* fusion of %r is not supported' % kind)


class _SgBase(Operator):
    """A node holding one fused graph; float32 runs the graph itself."""

    num_subgraphs = 1
    no_grad = True
    needs_inputs = False
    quantized = Param(bool, False, doc='int8 computation')
    min_calib_range = Param(float, None, doc='calibrated minimum of the output')
    max_calib_range = Param(float, None, doc='calibrated maximum of the output')

    def calibrated(self):
        return self.min_calib_range is not None and self.max_calib_range is not None

    def graph_inputs(self):
        """Number of the fused graph's inputs (the node's float inputs)."""
        n = self.__dict__.get('_graph_inputs')
        if n is None:
            n = len(self.subgraphs[0].list_inputs()) if self.subgraphs else 0
        return n

    def bind(self, ctx, in_shapes, in_dtypes):
        return Step(self, ctx, state={})

    def run_graph(self, xp, inputs, state):
        """The fused graph's output on its inputs (MXNet's order), compiled once per Step."""
        key = tuple((a.shape, a.dtype.str) for a in inputs)
        runner = state.get(key) if state is not None else None
        if runner is None:
            runner = self.subgraphs[0].bind(None, xp, [a.shape for a in inputs],
                                            [a.dtype for a in inputs],
                                            [False] * len(inputs))
            if state is not None:
                state[key] = runner
        return runner.forward(list(inputs), False)[0][0]


@register
class SgMKLDNNConv(_SgBase):
    """MXNet's fused oneDNN convolution (``_sg_mkldnn_conv``)."""

    name = '_sg_mkldnn_conv'
    with_bn = Param(bool, False, doc='a batch norm follows the convolution')
    with_act = Param(bool, False, doc='an activation follows')
    with_sum = Param(bool, False, doc='a residual sum follows')
    with_postsum_act = Param(bool, False, doc='an activation follows the sum')
    #: the layout of output 0 in the storage plan's buffers (rules.OUT_LAYOUT): C order;
    #: the variant an executor runs writes channels last (:class:`SgMKLDNNConvInto`)
    out_layout = None

    @property
    def inplace(self):
        """The output may take the summand's storage (MXNet's FInplaceOption of the fused
        convolution: its sum is computed into the summand's buffer), an int8 summand
        under a uint8 output too (the ``inplace_any_dtype`` row: the output is its bytes,
        saturated to int8, as MXNet's; see the end of the forward)."""
        if not self.with_sum or not self.subgraphs or self.sum_input is None:
            return ()
        ours = self.list_arguments() + self.list_auxiliary_states()
        return ((ours.index(self._mx_names()[self.sum_input]), 0),)

    def into_variant(self):
        """This node as :class:`SgMKLDNNConvInto` (a calibrated quantized one), else
        None."""
        if not (self.quantized and self.calibrated()) or isinstance(self, SgMKLDNNConvInto):
            return None
        new = object.__new__(SgMKLDNNConvInto)
        new._fix(**self.__dict__)           # (a fresh copy nobody holds yet)
        return new

    def check(self):
        if not self.subgraphs:
            return
        layers, sum_input = _layers(self.subgraphs[0])
        if 'conv' not in layers:
            raise ShapeError('_sg_mkldnn_conv: its graph holds no Convolution')
        self._fix(layers=layers, sum_input=sum_input,
                  _graph_inputs=len(self.subgraphs[0].list_inputs()))

    # --- structure (MXNet order: data, weight, [bias], [gamma, beta, mean, var], [sum],
    #     [min_data, max_data, [min_sum, max_sum]])
    def _mx_names(self):
        names = ['data', 'weight']
        if self.subgraphs and not self.layers['conv'].no_bias:
            names.append('bias')
        if self.with_bn:
            names += ['gamma', 'beta', 'moving_mean', 'moving_var']
        if self.with_sum:
            names.append('sum')
        if self.quantized:
            names += ['min_data', 'max_data']
            if self.with_sum:
                names += ['min_sum', 'max_sum']
        return names

    def list_arguments(self):
        return [n for n in self._mx_names() if n not in ('moving_mean', 'moving_var')]

    def list_auxiliary_states(self):
        return ['moving_mean', 'moving_var'] if self.with_bn else []

    def mxnet_input_order(self):
        names = self._mx_names()
        ours = self.list_arguments() + self.list_auxiliary_states()
        return [ours.index(n) for n in names]

    def list_outputs(self):
        return ['output', 'min_output', 'max_output'] if self.quantized else ['output']

    def _to_mx(self, items):
        """Our input list (args then aux) in MXNet's order."""
        ours = self.list_arguments() + self.list_auxiliary_states()
        return [items[ours.index(n)] for n in self._mx_names()]

    def _from_mx(self, items):
        names = self._mx_names()
        ours = self.list_arguments() + self.list_auxiliary_states()
        return [items[names.index(n)] for n in ours]

    def _split(self, items):
        n = self.graph_inputs()
        mx_items = self._to_mx(items)
        return mx_items[:n], mx_items[n:]

    def infer_shape(self, in_shapes):
        if not self.subgraphs:
            raise ShapeError('_sg_mkldnn_conv needs its graph (the JSON subgraphs field)')
        graph_shapes, ranges = self._split(list(in_shapes))
        ins, outs = self.subgraphs[0].infer_shape(graph_shapes, [None])
        full = self._from_mx(list(ins) + [(1,)] * len(ranges))
        n_args = len(self.list_arguments())
        out = [outs[0]] + ([(1,), (1,)] if self.quantized else [])
        return full[:n_args], out, full[n_args:]

    def out_dtype(self):
        if not self.calibrated():
            return np.dtype(np.int32)
        relu_last = (self.with_act and not self.with_sum and
                     _act_kind(self.layers.get('act')) in _RELU_LIKE) or \
            (self.with_postsum_act and _act_kind(self.layers.get('postsum_act')) in _RELU_LIKE)
        return np.dtype(np.uint8 if relu_last else np.int8)

    def infer_type(self, in_types):
        f = np.dtype(F32)
        n_args = len(self.list_arguments())
        if not self.quantized:
            graph_types, _ = self._split(list(in_types))
            ins, outs = self.subgraphs[0].infer_type(graph_types, [None])
            full = self._from_mx(list(ins))
            return full[:n_args], [outs[0]], full[n_args:]
        names = self._mx_names()
        types = [f] * len(names)
        given = self._to_mx(list(in_types))
        types[0] = given[0]
        if self.with_sum:
            types[names.index('sum')] = given[names.index('sum')]
        full = self._from_mx(types)
        return full[:n_args], [self.out_dtype(), f, f], full[n_args:]

    def forward(self, xp, inputs, aux, is_train, state=None):
        items = self._to_mx(list(inputs) + list(aux))
        if not self.quantized:
            return [self.run_graph(xp, items[:self.graph_inputs()], state)]
        return self._quantized_forward(items, state)

    def _folded(self, items):
        """Float32 weight and bias after the batch norm (MXNet's UpdateConvWeightBias)."""
        conv = self.layers['conv']
        w = items[1].astype(F32)
        k = 2
        b = None
        if not conv.no_bias:
            b = items[k].astype(F32)
            k += 1
        if self.with_bn:
            bn = self.layers['bn']
            gamma, beta, mean, var = (a.astype(F32) for a in items[k:k + 4])
            g = np.ones_like(gamma) if bn.fix_gamma else gamma
            alpha = (g.astype(np.float64) / np.sqrt(var.astype(np.float64) + bn.eps)) \
                .astype(F32)
            if b is not None:
                b = (beta + alpha * (b - mean)).astype(F32)
            else:
                b = (beta - alpha * mean).astype(F32)
            w = (w * alpha.reshape((-1,) + (1,) * (w.ndim - 1))).astype(F32)
        return w, b

    def _quantized_forward(self, items, state, out=None):
        memo = state.get('weights') if state is not None else None
        x = items[0]
        n = self.graph_inputs()
        dmin, dmax = scalar(items[n]), scalar(items[n + 1])
        key = (float(dmin), float(dmax))
        if memo is None or memo[0] != key:
            data_scale = quantize_scale(x.dtype, dmin, dmax)
            # (the weights, and the output's scales worked out once for this data range)
            memo = (key, self._quantize_weights(items, data_scale), data_scale, {})
            if state is not None:
                state['weights'] = memo
        wq, bq, wscales, total = memo[1]
        data_scale = memo[2]
        cache = state.setdefault('primitives', {}) if state is not None else None
        token = id(memo) if cache is not None else None
        conv = self.layers['conv']
        act = self.layers.get('act') if self.with_act else None
        kind = _act_kind(act)
        acc = None
        into = out if out is not None else [None] * 3
        dest = into[0]
        if self.calibrated():
            derived = memo[3].get('out')
            if derived is None:
                lo, hi = F32(self.min_calib_range), F32(self.max_calib_range)
                out = self.out_dtype()
                out_scale = quantize_scale(out, lo, hi)
                requant = (out_scale / data_scale / wscales).astype(F32)
                derived = memo[3]['out'] = (lo, hi, out, out_scale, requant)
            lo, hi, out, out_scale, requant = derived
            if not self.with_sum and kind in (None, 'relu', 'bounded_relu'):
                # a relu's output is uint8: its saturation is the relu (MXNet: a bounded
                # relu without a sum is the output range's clipping); all in one primitive
                y = conv_requantized(conv, x, wq, bq, token, cache, requant, out, False,
                                     out=dest)
                if y is not None:
                    return self._results(y, lo, hi, into)
                acc = conv_int32(conv, x, wq, bq, token=token, cache=cache)
                y = _requantize(acc, requant, out, token, cache)
                if y is not None:
                    return self._results(y, lo, hi, into)
            if self.with_sum and kind in (None, 'relu'):
                # the conv, the relu, the sum, the post-sum relu and the saturation in one
                # primitive, into the summand's type (see the end)
                s = items[self.sum_input]
                post = _act_kind(self.layers.get('postsum_act')) \
                    if self.with_postsum_act else None
                if post in (None, 'relu') and s.dtype in (np.int8, np.uint8):
                    # (into the plan's buffer, as the summand's type: where the plan gave
                    # the summand's own storage, no copy of it first)
                    z = conv_requantized(conv, x, wq, bq, token, cache, requant, s.dtype,
                                         kind == 'relu', summand=s,
                                         sum_scale=self._sum_scale(items, out_scale),
                                         post_relu=post == 'relu',
                                         out=None if dest is None else dest.view(s.dtype))
                    if z is not None:
                        return self._results(z if z.dtype == out else z.view(out), lo, hi,
                                             into)
            if acc is None:
                acc = conv_int32(conv, x, wq, bq, token=token, cache=cache)
            y = _requantize(acc, requant, F32, token, cache)
            if y is None:
                y = acc.astype(F32)
                y *= requant.reshape((1, -1) + (1,) * (acc.ndim - 2))
        else:
            # one weight scale; the int32 result keeps MXNet's product range
            out_scale = F32(data_scale * wscales[0])
            lo, hi = product_range(x.dtype, dmin, dmax, total[0], total[1])
            out = np.dtype(np.int32)
            acc = conv_int32(conv, x, wq, bq, token=token, cache=cache)
            y = acc.astype(np.float64)
        if kind is not None:
            if kind == 'bounded_relu':
                # MXNet: without a sum the output range does the clipping (no post-op);
                # with one the bound is scaled onto the output levels
                if self.with_sum:
                    y = _apply_act(y, kind, act, out_scale)
            elif kind == 'relu':
                np.maximum(y, y.dtype.type(0), out=y)
            else:
                y = _apply_act(y, kind, act)
        if self.with_sum:
            s = items[self.sum_input]
            sum_scale = self._sum_scale(items, out_scale)
            if y.dtype == F32:
                y = _fma(y, s, sum_scale)
            else:
                y = y + s.astype(F32) * sum_scale
        if self.with_postsum_act:
            act = self.layers.get('postsum_act')
            kind = _act_kind(act)
            if kind == 'relu':
                np.maximum(y, y.dtype.type(0), out=y)
            else:
                y = _apply_act(y, kind, act, out_scale)
        if self.with_sum and out != np.int32 and items[self.sum_input].dtype != out:
            # MXNet computes into the sum operand's buffer, whose oneDNN descriptor keeps
            # the operand's type (mkldnn_conv.cc): the result saturates to that type and
            # its bytes are the output (an int8 operand caps a uint8 output at 127)
            return [saturate(y, items[self.sum_input].dtype).view(out)] + rng(lo, hi)
        return [saturate(y, out)] + rng(lo, hi)

    @staticmethod
    def _results(y, lo, hi, into):
        """[y, min, max], into the offered arrays ``into`` where given (y itself where
        the kernel wrote into ``into[0]``)."""
        d = into[0]
        if d is not None and y is not d and y.dtype == d.dtype and y.shape == d.shape \
                and y.strides == d.strides \
                and y.__array_interface__['data'][0] == d.__array_interface__['data'][0]:
            y = d                   # (a view of it: the executor then copies nothing)
        ranges = rng(lo, hi)
        for k in (1, 2):
            if into[k] is not None:
                into[k][...] = ranges[k - 1]
                ranges[k - 1] = into[k]
        return [y] + ranges

    def _sum_scale(self, items, out_scale):
        """MXNet's scale of the residual sum's operand: the output's levels per level of
        the operand's calibrated range."""
        s = items[self.sum_input]
        n = self.graph_inputs()
        return F32(out_scale / quantize_scale(s.dtype, scalar(items[n + 2]),
                                              scalar(items[n + 3])))

    def _quantize_weights(self, items, data_scale):
        """(int8 weights, int32 bias or None, per-channel float32 scales, (min, max))."""
        w, b = self._folded(items)
        flat = w.reshape(w.shape[0], -1)
        wmin, wmax = flat.min(axis=1), flat.max(axis=1)
        if self.calibrated():
            scales = np.array([quantize_scale(np.int8, a, c) for a, c in zip(wmin, wmax)], F32)
            if b is not None:
                for c in range(len(scales)):
                    if b[c]:
                        lim = F32(F32(F32(INT32_MAX if b[c] > 0 else -INT32_MAX - 1) / F32(2))
                                  / b[c]) / data_scale
                        scales[c] = min(scales[c], F32(lim))
        else:
            s = quantize_scale(np.int8, wmin.min(), wmax.max())
            scales = np.full(w.shape[0], s, F32)
        wq = saturate(w * scales.reshape((-1,) + (1,) * (w.ndim - 1)), np.int8)
        bq = None
        if b is not None:
            bq = saturate(b * (scales * data_scale).astype(F32), np.int32)
        return wq, bq, scales, (F32(wmin.min()), F32(wmax.max()))


class SgMKLDNNConvInto(SgMKLDNNConv):
    """A calibrated quantized ``_sg_mkldnn_conv`` as an executor runs it (made by the
    ``instead`` row of ``ops/_cpu_rules.py`` for ``'node'``; not registered): it writes
    into the storage plan's buffers (``out=``), output 0 lying channels last as oneDNN's
    int8 kernels write it; with a residual sum, the plan gives output 0 the summand's
    storage where the summand dies here in that layout and type (:attr:`inplace`), and
    the sum is computed over it as MXNet does, with no copy of the summand first."""

    writes_into = True
    out_layout = 'channels_last'

    def forward(self, xp, inputs, aux, is_train, state=None, out=None):
        return self._quantized_forward(self._to_mx(list(inputs) + list(aux)), state, out)


@register
class SgMKLDNNFullyConnected(_SgBase):
    """MXNet's fused oneDNN fully connected layer (``_sg_mkldnn_fully_connected``);
    quantized: int8 weights with their ranges (tensor-wise), an int32 result, a
    requantized int8/uint8 one (calibrated) or float32 (``enable_float_output``)."""

    name = '_sg_mkldnn_fully_connected'
    enable_float_output = Param(bool, False, doc='float32 output (dequantize fused)')
    with_eltwise = Param(bool, False, doc='an activation follows')
    with_relu = Param(bool, None, doc="MXNet's older name of with_eltwise")
    channel_wise_quantize = Param(bool, None, doc='per-channel weight scales')

    def check(self):
        if self.channel_wise_quantize:
            raise NotSupportedError('_sg_mkldnn_fully_connected: channel_wise_quantize is '
                                    'not supported')
        if self.subgraphs:
            layers, _ = _layers(self.subgraphs[0])
            if 'fc' not in layers:
                raise ShapeError('_sg_mkldnn_fully_connected: its graph holds no '
                                 'FullyConnected')
            self._fix(layers=layers)

    def _base(self):
        no_bias = self.subgraphs and self.layers['fc'].no_bias
        return ['data', 'weight'] + ([] if no_bias else ['bias'])

    def list_arguments(self):
        base = self._base()
        if not self.quantized:
            return base
        return base + [s + n for n in base for s in ('min_', 'max_')]

    def list_outputs(self):
        if self.quantized and not self.enable_float_output:
            return ['output', 'min_output', 'max_output']
        return ['output']

    def out_dtype(self):
        if self.enable_float_output:
            return np.dtype(F32)
        if not self.calibrated():
            return np.dtype(np.int32)
        act = self.layers.get('act') if (self.with_eltwise or self.with_relu) else None
        return np.dtype(np.uint8 if _act_kind(act) in _RELU_LIKE else np.int8)

    def infer_shape(self, in_shapes):
        if not self.subgraphs:
            raise ShapeError('_sg_mkldnn_fully_connected needs its graph (the JSON subgraphs '
                             'field)')
        n = len(self._base())
        ins, outs = self.subgraphs[0].infer_shape(list(in_shapes[:n]), [None])
        extra = [(1,)] * (len(in_shapes) - n)
        out = [outs[0]] + [(1,), (1,)] * (len(self.list_outputs()) > 1)
        return list(ins) + extra, out, []

    def infer_type(self, in_types):
        n = len(self._base())
        f = np.dtype(F32)
        if not self.quantized:
            ins, outs = self.subgraphs[0].infer_type(list(in_types), [None])
            return list(ins), [outs[0]], []
        ins = [in_types[0]] + [np.dtype(np.int8)] * (n - 1) + [f] * (2 * n)
        outs = [self.out_dtype()] + [f, f] * (len(self.list_outputs()) > 1)
        return ins, outs, []

    def forward(self, xp, inputs, aux, is_train, state=None):
        n = len(self._base())
        if not self.quantized:
            return [self.run_graph(xp, inputs[:n], state)]
        fc = self.layers['fc']
        x, w = inputs[0], inputs[1]
        r = [scalar(a) for a in inputs[n:]]
        data_scale = quantize_scale(x.dtype, r[0], r[1])
        w_scale = quantize_scale(np.int8, r[2], r[3])
        x2 = x.reshape(x.shape[0], -1) if fc.flatten else x.reshape(-1, x.shape[-1])
        token = cache = None
        if state is not None:
            # the int8 weights are one layer's constants (as the convolution's, quantized
            # once per Step): reordered by the backend while the same array, at the same
            # address, with the same range, comes in
            wkey = (id(w), w.__array_interface__['data'][0], w.shape, w.strides,
                    float(r[2]), float(r[3]))
            memo = state.get('fc_weights')
            if memo is None or memo[0] != wkey:
                memo = state['fc_weights'] = (wkey,)
            cache = state.setdefault('primitives', {})
            token = id(memo)
        acc = int_matmul(x2, w, token, cache)
        if not fc.no_bias:
            b_scale = quantize_scale(np.int8, r[4], r[5])
            rescale = F32(F32(data_scale * w_scale) / b_scale)
            top = max_abs(r[4], r[5])
            limit = F32(F32(F32(INT32_MAX) / F32(2)) / top) / b_scale if top else np.inf
            if rescale > limit:
                # MXNet rescales the int8 weights so that the bias fits int32
                rescale = F32(limit)
                w_rescale = F32(F32(F32(rescale * b_scale) / data_scale) / w_scale)
                wf = w.astype(np.float64) * float(w_rescale)
                w = (np.sign(wf) * np.floor(np.abs(wf) + 0.5)).astype(np.int8)
                w_scale = F32(w_scale * w_rescale)
                acc = int_matmul(x2, w)
            b = inputs[2].astype(np.float64) * float(rescale)
            acc = acc + (np.sign(b) * np.floor(np.abs(b) + 0.5)).astype(np.int32)
        oshape = (x.shape[0], w.shape[0]) if fc.flatten else x.shape[:-1] + (w.shape[0],)
        act = self.layers.get('act') if (self.with_eltwise or self.with_relu) else None
        kind = _act_kind(act)
        real = F32(F32(F32(1.0) / data_scale) / w_scale)
        if self.enable_float_output:
            y = acc.astype(F32) * real
            return [_apply_act(y, kind, act).reshape(oshape)]
        if self.calibrated():
            lo, hi = F32(self.min_calib_range), F32(self.max_calib_range)
            out = self.out_dtype()
            out_scale = quantize_scale(out, lo, hi)
            if act is not None:
                # MXNet: the activation on the real values, then the output scale
                y = _apply_act(acc.astype(F32) * real, kind, act) * out_scale
            else:
                y = acc.astype(F32) * F32(F32(out_scale / data_scale) / w_scale)
            return [saturate(y, out).reshape(oshape)] + rng(lo, hi)
        lo, hi = product_range(x.dtype, r[0], r[1], r[2], r[3])
        return [acc.reshape(oshape)] + rng(lo, hi)
