"""The operators' rows in the passes' rule tables (``symgraph/graph/rules.py``), all in one
module, as MXNet keeps its MKLDNN subgraph properties apart from the operators.

Each row is ``(table name, operator class, fn(op, *question))``; the package ``__init__``
registers :data:`RULES` once the operators are registered (``ops/`` imports only the
operator API, so it names the tables and does not import them). A row serves the class's
subclasses too unless they have their own (``None``: the table's default).

Most rows are the CPU backend's: which operators fuse in inference and training plans,
which read and write channels-last activations as they lie, which gradients may share
storage, how much scratch oneDNN's reorders want. The last section answers the one
question "which operator runs instead" (table ``instead``) for every backend.
"""
import math

import numpy as np

from symgraph.opdef import PostOp, cpu_kernel

from ._bf16 import bf16_instead
from ._util import lies_channels_last
from .binary import ElemwiseAdd, ElemwiseAddReLU
from .conv import _ConvBase, Convolution, FusedConvolution
from .init import _Filled
from .legacy import SetValue
from .loss import SoftmaxOutput
from .nn import Activation, Dropout, FullyConnected, FusedFullyConnected, LeakyReLU
from .norm import BatchNorm, BatchNormWithReLU
from .norm_layers import LRN, LRNInference
from .optimizer_updates import NAGMomUpdate
from .pooling import Pooling, PoolingChannelsLast
from .slicing import Concat
from .softmax import LogSoftmax, Softmax
from .subgraph_mkldnn import SgMKLDNNConv
from .syncbn import SyncBatchNorm
from .unary import BlockGrad, Copy

__all__ = ['RULES']

CL = 'channels_last'


# --- the inference passes: identities, unread inputs ---------------------------------------
def _dropout_identity(op):
    return op.mode != 'always' or op.p <= 0


def _always(op):
    return True


def _label_unused(op):
    return (1,)         # the label: forward is the softmax of the data


# --- post-ops and their fusion -------------------------------------------------------------
def _add_post_op(op, in_index):
    """Adding the other input (a residual): a 'sum' post-op."""
    return PostOp('sum', op, inputs=(1 - in_index,))


def _activation_post_op(op, in_index):
    """relu, sigmoid and tanh run as oneDNN eltwise post-ops (softrelu: see the backend's
    routing tables; softsign: none in oneDNN)."""
    alg = {'relu': 'relu', 'sigmoid': 'sigmoid', 'tanh': 'tanh'}.get(op.act_type)
    return None if alg is None else PostOp('eltwise', op, params={'alg': alg})


def _leaky_post_op(op, in_index):
    """leaky, elu and gelu run as oneDNN eltwise post-ops."""
    if op.act_type not in ('leaky', 'elu', 'gelu'):
        return None
    alg = 'relu' if op.act_type == 'leaky' else op.act_type
    return PostOp('eltwise', op, params={
        'alg': alg, 'alpha': 0.0 if op.act_type == 'gelu' else op.slope})


def _bn_post_op(op, in_index):
    """In an inference forward BatchNorm is ``x * scale + shift`` per channel of ``axis``
    (the running statistics): an 'affine' post-op its producer may fold, unless the mean
    and variance are outputs too."""
    if in_index != 0 or op.output_mean_var:
        return None
    return PostOp('affine', op, inputs=(1, 2, 3, 4),
                  params={'axis': op.axis, 'affine': op.inference_affine})


def _conv_fuse(op, post_ops, in_shapes):
    """Leading per-channel affines (BatchNorm on axis 1) folded into the weights, then
    residual sums and activations as oneDNN post-ops (NumPy: the consumers' forward): a
    FusedConvolution; None for any other chain."""
    nd = len(in_shapes[0]) if in_shapes and in_shapes[0] is not None else 0
    if nd not in (3, 4, 5) or op.channels_last:     # (FusedConvolution: channels first)
        return None
    k = 0
    while k < len(post_ops) and post_ops[k].kind == 'affine':
        if post_ops[k].params['axis'] % nd != 1:
            return None
        k += 1
    rest = [p.kind for p in post_ops[k:]]
    if any(r not in ('sum', 'eltwise') for r in rest) or rest.count('sum') > 1:
        return None
    return FusedConvolution(op, post_ops)


def _fc_fuse(op, post_ops, in_shapes):
    """BatchNorm over the output units (axis 1 of a 2-D output) folded into the weights
    and bias: a FusedFullyConnected; None for any other chain."""
    nd = 2 if op.flatten else (len(in_shapes[0]) if in_shapes[0] is not None else 0)
    if nd != 2 or not post_ops or any(p.kind != 'affine' or p.params['axis'] % 2 != 1
                                      for p in post_ops):
        return None
    return FusedFullyConnected(op, post_ops)


def _is_relu(post_op):
    return post_op.kind == 'eltwise' and post_op.params.get('alg') == 'relu'


def _add_fuse_training(op, post_op, in_shapes):
    """relu after the sum (a residual block's end): ElemwiseAddReLU, one pass forward, the
    relu's gradient taken from the output."""
    if type(op) is not ElemwiseAdd or not _is_relu(post_op) or len(in_shapes) != 2 \
            or in_shapes[0] is None or in_shapes[0] != in_shapes[1]:
        return None
    return ElemwiseAddReLU()


def _bn_fuse_training(op, post_op, in_shapes):
    """relu after the normalisation: BatchNormWithReLU (oneDNN normalises and applies relu
    in one pass, and masks the gradient inside its backward), for data of 3 to 5
    dimensions with channels on axis 1 when the CPU backend is loaded."""
    shape = in_shapes[0] if in_shapes else None
    # (a subclass computes otherwise: BatchNorm_v1, BatchNormWithReLU itself)
    if type(op) is not BatchNorm or not _is_relu(post_op) \
            or shape is None or not 3 <= len(shape) <= 5 \
            or op.axis % len(shape) != 1 or cpu_kernel('batch_norm_forward') is None:
        return None
    return BatchNormWithReLU(**op._values)


# --- layouts ---------------------------------------------------------------------------------
def _conv_backend_reads(op, in_shapes):
    """Whether oneDNN computes this convolution for data of these shapes (it then takes
    channels-last data as it lies); not for a channels-last ``layout``, whose (N, *S, C)
    arrays the passes' layouts, made for (N, C, *S), do not describe."""
    shape = in_shapes[0] if in_shapes else None
    return shape is not None and len(shape) in (3, 4, 5) and min(op.pd) >= 0 \
        and not op.channels_last and cpu_kernel('conv_forward') is not None


def _conv_reads(op, in_index, layout, in_shapes):
    """Channels-last data goes to oneDNN as it lies."""
    return in_index == 0 and layout == CL and _conv_backend_reads(op, in_shapes)


def _conv_writes(op, layout, in_shapes, in_layouts):
    """oneDNN writes a channels-last output (and takes its channels-last gradient)."""
    return layout == CL and _conv_backend_reads(op, in_shapes)


def _fused_conv_reads(op, in_index, layout, in_shapes):
    """Channels-last data and residual go to oneDNN as they lie."""
    return layout == CL and in_index in (0, op._sum_input()) \
        and _conv_backend_reads(op.base, in_shapes)


def _elementwise_reads(op, in_index, layout, in_shapes):
    """Elementwise: both inputs are read as they lie (channels last included)."""
    return in_index in (0, 1) and layout == CL


def _add_relu_writes(op, layout, in_shapes, in_layouts):
    """The output lies as both inputs do."""
    return len(in_layouts) == 2 and in_layouts[0] == in_layouts[1] == layout


def _activation_reads(op, in_index, layout, in_shapes):
    """Any layout is read as it lies (relu and tanh in NumPy, which writes the output and
    the gradient in the layout of the arrays it is given)."""
    return in_index == 0 and layout == CL and op.act_type in ('relu', 'tanh')


def _activation_writes(op, layout, in_shapes, in_layouts):
    """The output lies as the data does (relu and tanh)."""
    return bool(in_layouts) and in_layouts[0] == layout \
        and _activation_reads(op, 0, layout, in_shapes)


def _bn_reads(op, in_index, layout, in_shapes):
    """oneDNN's batch norm runs channels last: data lying so is taken as it lies (and its
    gradient written so)."""
    shape = in_shapes[0] if in_shapes else None
    return in_index == 0 and layout == CL and shape is not None \
        and 3 <= len(shape) <= 5 and op.axis % len(shape) == 1 \
        and cpu_kernel('batch_norm_forward') is not None


def _bn_writes(op, layout, in_shapes, in_layouts):
    """The output lies as the data does, where oneDNN reads that."""
    return bool(in_layouts) and in_layouts[0] == layout \
        and _bn_reads(op, 0, layout, in_shapes)


def _pool_reads(op, in_index, layout, in_shapes):
    """Channels-last data: taken as it lies by oneDNN's pooling, and by the NumPy
    reductions of global pooling."""
    shape = in_shapes[0] if in_shapes else None
    if layout != CL or in_index != 0 or shape is None or op._channels_last(len(shape)):
        return False
    if op.global_pool:
        return op.pool_type in ('max', 'avg', 'sum')
    return op._onednn_spec(tuple(shape), 'forward') is not None


def _own_out_layout(op):
    return op.out_layout


# --- gradients in the storage plan ----------------------------------------------------------
def _add_relu_grad_same(op):
    # both gradients are one array (the masked head gradient)
    return ((0, 1),)


def _add_relu_grad_inplace(op):
    # which may lie over the output backward reads (relu's backward reads each element
    # before it writes it)
    return (('out', 0, 0), ('out', 0, 1))


def _activation_grad_inplace(op):
    # the data gradient may lie over the output backward reads
    return (('out', 0, 0),)


def _conv_scratch(op, in_shapes, out_shapes, dtypes, layouts=None):
    # oneDNN's reorders to its blocked layouts take activation-sized buffers: from the
    # executor's free storage during the step (none for data and output lying channels
    # last, which the primitives take as they lie)
    scratch = cpu_kernel('conv_scratch_bytes')
    if scratch is None or any(d != np.float32 for d in dtypes):
        return 0
    return scratch(in_shapes[0], in_shapes[1], out_shapes[0],
                   weights_only=lies_channels_last(layouts))


def _bn_scratch(op, in_shapes, out_shapes, dtypes, layouts=None):
    # oneDNN's reorders to channels last take activation-sized buffers: from the
    # executor's free storage during the step (none where the data and the output lie
    # channels last already)
    if lies_channels_last(layouts):
        return 0
    scratch = cpu_kernel('bn_scratch_bytes')
    shape = in_shapes[0] if in_shapes else None
    if scratch is None or shape is None or not 2 <= len(shape) <= 5 \
            or op.axis % len(shape) != 1 or any(d != np.float32 for d in dtypes):
        return 0
    return scratch(tuple(shape))


# --- which operator runs instead ------------------------------------------------------------
def _conv_instead(op, why, *facts):
    """In the layout pass: a FusedConvolution without post-ops writing the layout; for
    bfloat16 data, the bfloat16 variant."""
    if why == 'bfloat16':
        return bf16_instead(op, *facts)
    if why != 'layout':
        return None
    layout, in_shapes = facts
    if layout != CL or not _conv_backend_reads(op, in_shapes):
        return None
    return FusedConvolution(op, (), out_layout=layout)


def _fused_conv_instead(op, why, *facts):
    """In the layout pass: this fused convolution writing the layout; for bfloat16 data,
    the bfloat16 variant."""
    if why == 'bfloat16':
        return bf16_instead(op, *facts)
    if why != 'layout':
        return None
    layout, in_shapes = facts
    if layout != CL or not _conv_backend_reads(op.base, in_shapes):
        return None
    return FusedConvolution(op.base, op.post_ops, out_layout=layout)


def _pool_instead(op, why, *facts):
    """In the layout pass: a channels-last output where oneDNN pools and the output has
    more than one position per channel; for bfloat16 data, the bfloat16 variant."""
    if why == 'bfloat16':
        return bf16_instead(op, *facts)
    if why != 'layout':
        return None
    layout, in_shapes = facts
    if not _pool_reads(op, 0, layout, in_shapes) or op.global_pool:
        return None
    spec = op._onednn_spec(tuple(in_shapes[0]), 'forward')
    if math.prod(spec[-1][2:]) <= 1:
        return None
    return PoolingChannelsLast(**op._values)


def _lrn_instead(op, why, *facts):
    """Where nobody reads ``tmp_norm`` (an inference plan): LRNInference."""
    if why == 'unread' and 1 in facts[0]:
        return LRNInference(**op._values)
    return None


def _shapes_instead(op, why, *facts):
    """Fitted to the inferred shapes (the operator's ``fitted(in_shapes, out_shapes)``:
    zeros(shape=(0, H)), a 2-D bias of FullyConnected); for bfloat16 data, the bfloat16
    variant (FullyConnected)."""
    if why == 'bfloat16':
        return bf16_instead(op, *facts)
    return op.fitted(*facts) if why == 'shapes' else None


def _bf16_instead(op, why, *facts):
    """For bfloat16 data: the bfloat16 variant (ops/_bf16.py)."""
    return bf16_instead(op, *facts) if why == 'bfloat16' else None


def _syncbn_instead(op, why, *facts):
    """A bound executor's node: the meeting point of the copies defaults to its name."""
    if why != 'node' or op.key is not None:
        return None
    return type(op)(**dict(op._values, key=facts[0]))


def _sg_conv_instead(op, why, *facts):
    """A bound executor's calibrated quantized _sg_mkldnn_conv: the variant writing into
    the storage plan's buffers (channels last; the residual sum over its summand's
    storage where the plan gives it in place)."""
    return op.into_variant() if why == 'node' else None


def _nag_instead(op, why, *facts):
    """mx.nd's out= is the weight itself: the kernel that reads the weight after writing
    it, as MXNet's in-place update does."""
    return op.in_place_variant() if why == 'out_is_input' else None


#: (table name, operator class, rule): registered by the package ``__init__``
RULES = (
    ('inference_identity', Dropout, _dropout_identity),
    ('inference_identity', Copy, _always),
    ('inference_identity', BlockGrad, _always),
    ('inference_unused_inputs', SoftmaxOutput, _label_unused),
    ('post_op', ElemwiseAdd, _add_post_op),
    ('post_op', ElemwiseAddReLU, None),
    ('post_op', Activation, _activation_post_op),
    ('post_op', LeakyReLU, _leaky_post_op),
    ('post_op', BatchNorm, _bn_post_op),
    ('fuse_post_ops', Convolution, _conv_fuse),
    ('fuse_post_ops', FullyConnected, _fc_fuse),
    ('fuse_training_post_op', ElemwiseAdd, _add_fuse_training),
    ('fuse_training_post_op', BatchNorm, _bn_fuse_training),
    ('reads_layout', Convolution, _conv_reads),
    ('reads_layout', FusedConvolution, _fused_conv_reads),
    ('reads_layout', ElemwiseAddReLU, _elementwise_reads),
    ('reads_layout', Activation, _activation_reads),
    ('reads_layout', BatchNorm, _bn_reads),
    ('reads_layout', Pooling, _pool_reads),
    ('writes_layout', Convolution, _conv_writes),
    ('writes_layout', ElemwiseAddReLU, _add_relu_writes),
    ('writes_layout', Activation, _activation_writes),
    ('writes_layout', BatchNorm, _bn_writes),
    ('out_layout', FusedConvolution, _own_out_layout),
    ('out_layout', PoolingChannelsLast, _own_out_layout),
    ('out_layout', SgMKLDNNConv, _own_out_layout),
    ('inplace_any_dtype', SgMKLDNNConv, _always),
    ('grad_same', ElemwiseAddReLU, _add_relu_grad_same),
    ('grad_inplace', ElemwiseAddReLU, _add_relu_grad_inplace),
    ('grad_inplace', Activation, _activation_grad_inplace),
    ('grad_writes_into', Pooling, _always),
    ('scratch_bytes', _ConvBase, _conv_scratch),
    ('scratch_bytes', BatchNorm, _bn_scratch),
    ('instead', Convolution, _conv_instead),
    ('instead', FusedConvolution, _fused_conv_instead),
    ('instead', Pooling, _pool_instead),
    ('instead', LRN, _lrn_instead),
    ('instead', FullyConnected, _shapes_instead),
    ('instead', _Filled, _shapes_instead),
    ('instead', SetValue, _shapes_instead),
    ('instead', SyncBatchNorm, _syncbn_instead),
    ('instead', Activation, _bf16_instead),
    ('instead', Softmax, _bf16_instead),
    ('instead', LogSoftmax, _bf16_instead),
    ('instead', BatchNorm, _bf16_instead),
    ('instead', Concat, _bf16_instead),
    ('instead', FusedFullyConnected, _bf16_instead),
    ('instead', NAGMomUpdate, _nag_instead),
    ('instead', SgMKLDNNConv, _sg_conv_instead),
)
