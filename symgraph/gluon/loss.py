"""Losses of ``mx.gluon.loss``, after MXNet 1.9.1's ``gluon/loss.py``.

Every loss is a HybridBlock whose ``hybrid_forward`` is made of registered operators
called through ``F`` (``F.square``, ``F.log_softmax``, ``F.pick``, ``F.CTCLoss``, ...), so
that it runs on NDArrays under autograd and, hybridized, as a Symbol. A loss returns one
value per sample (the mean, or sum, over every axis but ``batch_axis``), scaled by the
scalar ``weight`` and broadcast-multiplied by an optional ``sample_weight``.
"""
import numpy as np

from ..base import ArgumentError, ArgumentTypeError, numeric_types
from ..ndarray import NDArray
from .block import HybridBlock

__all__ = ['Loss', 'L2Loss', 'L1Loss',
           'SigmoidBinaryCrossEntropyLoss', 'SigmoidBCELoss',
           'SoftmaxCrossEntropyLoss', 'SoftmaxCELoss',
           'KLDivLoss', 'CTCLoss', 'HuberLoss', 'HingeLoss',
           'SquaredHingeLoss', 'LogisticLoss', 'TripletLoss', 'PoissonNLLLoss',
           'CosineEmbeddingLoss', 'SDMLLoss']


def _apply_weighting(F, loss, weight=None, sample_weight=None):
    """Apply weighting to loss.

    Parameters
    ----------
    loss : Symbol or NDArray
        The loss to be weighted.
    weight : float or None
        Global scalar weight for loss.
    sample_weight : Symbol, NDArray or None
        Per sample weighting, broadcast against ``loss``: for a loss of shape
        ``(64, 10)`` and a weight per sample, ``sample_weight`` of shape ``(64, 1)``.
    """
    if sample_weight is not None:
        loss = F.broadcast_mul(loss, sample_weight)
    if weight is not None:
        if not isinstance(weight, numeric_types):
            raise ArgumentTypeError('weight must be a number, got %s' % type(weight).__name__)
        loss = loss * weight
    return loss


def _reshape_like(F, x, y):
    """``x`` reshaped to ``y``'s shape (an NDArray's shape is known; a Symbol's is not)."""
    if isinstance(x, NDArray):
        return x.reshape(y.shape)
    return F.reshape_like(x, y)


class Loss(HybridBlock):
    """Base class for loss.

    Parameters
    ----------
    weight : float or None
        Global scalar weight for loss.
    batch_axis : int, default 0
        The axis that represents mini-batch.
    """

    def __init__(self, weight, batch_axis, **kwargs):
        super(Loss, self).__init__(**kwargs)
        self._weight = weight
        self._batch_axis = batch_axis

    def __repr__(self):
        return '{name}(batch_axis={batch_axis}, w={weight})'.format(
            name=self.__class__.__name__, batch_axis=self._batch_axis, weight=self._weight)

    def hybrid_forward(self, F, x, *args, **kwargs):
        """Overrides to construct symbolic graph for this `Block`.

        Parameters
        ----------
        x : Symbol or NDArray
            The first input tensor.
        *args : list of Symbol or list of NDArray
            Additional input tensors.
        """
        raise NotImplementedError('%s does not define hybrid_forward'
                                  % self.__class__.__name__)


class L2Loss(Loss):
    r"""Calculates the mean squared error between `label` and `pred`:
    ``L = 1/2 * sum_i (label_i - pred_i)^2`` (averaged over the non-batch axes).

    Parameters
    ----------
    weight : float or None
        Global scalar weight for loss.
    batch_axis : int, default 0
        The axis that represents mini-batch.

    Inputs:
        - **pred**: prediction tensor with arbitrary shape
        - **label**: target tensor with the same size as pred.
        - **sample_weight**: element-wise weighting tensor, broadcastable to pred.

    Outputs:
        - **loss**: loss tensor with shape (batch_size,).

    Examples
    --------
    >>> import symgraph as mx
    >>> loss = mx.gluon.loss.L2Loss()
    >>> loss(mx.nd.array([[1.0, 2.0]]), mx.nd.array([[1.0, 4.0]])).asnumpy().tolist()
    [1.0]
    """

    def __init__(self, weight=1., batch_axis=0, **kwargs):
        super(L2Loss, self).__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        loss = F.square(label - pred)
        loss = _apply_weighting(F, loss, self._weight / 2, sample_weight)
        return F.mean(loss, axis=self._batch_axis, exclude=True)


class L1Loss(Loss):
    r"""Calculates the mean absolute error between `label` and `pred`:
    ``L = sum_i |label_i - pred_i|`` (averaged over the non-batch axes).

    Parameters and inputs as :class:`L2Loss` (``weight`` defaults to None).
    """

    def __init__(self, weight=None, batch_axis=0, **kwargs):
        super(L1Loss, self).__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        loss = F.abs(label - pred)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.mean(loss, axis=self._batch_axis, exclude=True)


class SigmoidBinaryCrossEntropyLoss(Loss):
    r"""The cross-entropy loss for binary classification (alias: ``SigmoidBCELoss``):
    ``-(pos_weight * label * log(p) + (1 - label) * log(1 - p))`` with ``p = sigmoid(pred)``,
    computed from the logits in a numerically stable form unless `from_sigmoid`.

    Parameters
    ----------
    from_sigmoid : bool, default False
        Whether the input is already a probability (a sigmoid's output) instead of logits.
    weight : float or None
        Global scalar weight for loss.
    batch_axis : int, default 0
        The axis that represents mini-batch.

    Inputs:
        - **pred**: prediction tensor with arbitrary shape
        - **label**: truth tensor with values in [0, 1], of pred's size.
        - **sample_weight**: element-wise weighting tensor, broadcastable to pred.
        - **pos_weight**: weighting of the positive examples, broadcastable to pred
          (e.g. one per class: shape ``(1, C)``).

    Outputs:
        - **loss**: loss tensor with shape (batch_size,).
    """

    def __init__(self, from_sigmoid=False, weight=None, batch_axis=0, **kwargs):
        super(SigmoidBinaryCrossEntropyLoss, self).__init__(weight, batch_axis, **kwargs)
        self._from_sigmoid = from_sigmoid

    def hybrid_forward(self, F, pred, label, sample_weight=None, pos_weight=None):
        label = _reshape_like(F, label, pred)
        if not self._from_sigmoid:
            # max(x, 0) - x * z + log(1 + exp(-abs(x))): no overflow for large |x|
            if pos_weight is None:
                loss = F.relu(pred) - pred * label + \
                    F.Activation(-F.abs(pred), act_type='softrelu')
            else:
                # (1 - z) * x + (1 + (q - 1) * z) * (log(1 + exp(-abs(x))) + max(-x, 0))
                log_weight = 1 + F.broadcast_mul(pos_weight - 1, label)
                loss = pred - pred * label + log_weight * \
                    (F.Activation(-F.abs(pred), act_type='softrelu') + F.relu(-pred))
        else:
            eps = 1e-12
            if pos_weight is None:
                loss = -(F.log(pred + eps) * label
                         + F.log(1. - pred + eps) * (1. - label))
            else:
                loss = -(F.broadcast_mul(F.log(pred + eps) * label, pos_weight)
                         + F.log(1. - pred + eps) * (1. - label))
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.mean(loss, axis=self._batch_axis, exclude=True)


SigmoidBCELoss = SigmoidBinaryCrossEntropyLoss


class SoftmaxCrossEntropyLoss(Loss):
    r"""Computes the softmax cross entropy loss (alias: ``SoftmaxCELoss``):
    ``-log(softmax(pred)[label])`` for sparse labels, ``-sum(log(softmax(pred)) * label)``
    for dense ones.

    Parameters
    ----------
    axis : int, default -1
        The axis to sum over when computing softmax and entropy.
    sparse_label : bool, default True
        Whether label is an integer array (class indices) instead of a probability
        distribution of pred's shape.
    from_logits : bool, default False
        Whether pred is already a log probability (``log_softmax``'s output).
    weight : float or None
        Global scalar weight for loss.
    batch_axis : int, default 0
        The axis that represents mini-batch.

    Inputs:
        - **pred**: the prediction tensor, where the `batch_axis` dimension ranges over
          batch size and `axis` dimension ranges over the number of classes.
        - **label**: the truth tensor (indices along `axis`, or a distribution).
        - **sample_weight**: element-wise weighting tensor, broadcastable to the loss.

    Outputs:
        - **loss**: loss tensor with shape (batch_size,).
    """

    def __init__(self, axis=-1, sparse_label=True, from_logits=False, weight=None,
                 batch_axis=0, **kwargs):
        super(SoftmaxCrossEntropyLoss, self).__init__(weight, batch_axis, **kwargs)
        self._axis = axis
        self._sparse_label = sparse_label
        self._from_logits = from_logits

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        if not self._from_logits:
            pred = F.log_softmax(pred, self._axis)
        if self._sparse_label:
            loss = -F.pick(pred, label, axis=self._axis, keepdims=True)
        else:
            label = _reshape_like(F, label, pred)
            loss = -F.sum(pred * label, axis=self._axis, keepdims=True)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.mean(loss, axis=self._batch_axis, exclude=True)


SoftmaxCELoss = SoftmaxCrossEntropyLoss


class KLDivLoss(Loss):
    r"""The Kullback-Leibler divergence loss ``label * (log(label) - pred)``, summed
    over every axis but `batch_axis` (as MXNet 1.9.1 does; its docstring says mean).

    Parameters
    ----------
    from_logits : bool, default True
        Whether pred is already a log probability; if False ``log_softmax`` is applied
        along `axis` first.
    axis : int, default -1
        The dimension along with to compute softmax (only with ``from_logits=False``).
    weight : float or None
        Global scalar weight for loss.
    batch_axis : int, default 0
        The axis that represents mini-batch.

    Inputs:
        - **pred**: prediction tensor with arbitrary shape.
        - **label**: truth tensor of pred's shape (a distribution).
        - **sample_weight**: element-wise weighting tensor, broadcastable to pred.

    Outputs:
        - **loss**: loss tensor with shape (batch_size,).
    """

    def __init__(self, from_logits=True, axis=-1, weight=None, batch_axis=0, **kwargs):
        super(KLDivLoss, self).__init__(weight, batch_axis, **kwargs)
        self._from_logits = from_logits
        self._axis = axis

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        if not self._from_logits:
            pred = F.log_softmax(pred, self._axis)
        loss = label * (F.log(label + 1e-12) - pred)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.sum(loss, axis=self._batch_axis, exclude=True)


class CTCLoss(Loss):
    r"""Connectionist Temporal Classification Loss (the ``CTCLoss`` operator, with the
    blank label last: the alphabet's ``alphabet_size - 1``).

    Parameters
    ----------
    layout : str, default 'NTC'
        Layout of prediction tensor: 'NTC' or 'TNC'.
    label_layout : str, default 'NT'
        Layout of the labels: 'NT' or 'TN'.
    weight : float or None
        Global scalar weight for loss.

    Inputs:
        - **pred**: unnormalized prediction tensor (before softmax), (N, T, C) for 'NTC'.
        - **label**: zero-based label tensor, (N, L) for 'NT'; padding with -1 (or the
          blank) after each sequence's labels.
        - **pred_lengths**: optional (N,), the valid length of each pred sequence.
        - **label_lengths**: optional (N,), the valid length of each label sequence.
        - **sample_weight**: weighting tensor broadcastable to the loss, (N,).

    Outputs:
        - **loss**: output loss has shape (batch_size,).
    """

    def __init__(self, layout='NTC', label_layout='NT', weight=None, **kwargs):
        if layout not in ('NTC', 'TNC'):
            raise ArgumentError("Only 'NTC' and 'TNC' layouts for pred are supported. "
                                "Got: %s" % layout)
        if label_layout not in ('NT', 'TN'):
            raise ArgumentError("Only 'NT' and 'TN' layouts for label are supported. "
                                "Got: %s" % label_layout)
        self._layout = layout
        self._label_layout = label_layout
        batch_axis = label_layout.find('N')
        super(CTCLoss, self).__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(self, F, pred, label, pred_lengths=None, label_lengths=None,
                       sample_weight=None):
        if self._layout == 'NTC':
            pred = F.swapaxes(pred, 0, 1)
        if self._batch_axis == 1:
            label = F.swapaxes(label, 0, 1)
        # the operator takes the length inputs only when told to use them
        lengths = {}
        if pred_lengths is not None:
            lengths['data_lengths'] = pred_lengths
        if label_lengths is not None:
            lengths['label_lengths'] = label_lengths
        loss = F.CTCLoss(pred, label, use_data_lengths=pred_lengths is not None,
                         use_label_lengths=label_lengths is not None,
                         blank_label='last', **lengths)
        return _apply_weighting(F, loss, self._weight, sample_weight)


class HuberLoss(Loss):
    r"""Calculates smoothed L1 loss, which is L1 where the error exceeds `rho` and L2
    below: ``|label - pred| - rho/2`` or ``1/(2 rho) * (label - pred)^2``.

    Parameters
    ----------
    rho : float, default 1
        Threshold for trimmed mean estimator.
    weight : float or None
        Global scalar weight for loss.
    batch_axis : int, default 0
        The axis that represents mini-batch.
    """

    def __init__(self, rho=1, weight=None, batch_axis=0, **kwargs):
        super(HuberLoss, self).__init__(weight, batch_axis, **kwargs)
        self._rho = rho

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        loss = F.abs(label - pred)
        loss = F.where(loss > self._rho, loss - 0.5 * self._rho,
                       (0.5 / self._rho) * F.square(loss))
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.mean(loss, axis=self._batch_axis, exclude=True)


class HingeLoss(Loss):
    r"""Calculates the hinge loss function often used in SVMs:
    ``max(0, margin - pred * label)``, labels in {-1, 1}.

    Parameters
    ----------
    margin : float, default 1
        The margin in hinge loss.
    weight : float or None
        Global scalar weight for loss.
    batch_axis : int, default 0
        The axis that represents mini-batch.
    """

    def __init__(self, margin=1, weight=None, batch_axis=0, **kwargs):
        super(HingeLoss, self).__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        loss = F.relu(self._margin - pred * label)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.mean(loss, axis=self._batch_axis, exclude=True)


class SquaredHingeLoss(Loss):
    r"""Calculates the soft-margin loss function used in SVMs:
    ``max(0, margin - pred * label)^2``, labels in {-1, 1}.

    Parameters as :class:`HingeLoss`.
    """

    def __init__(self, margin=1, weight=None, batch_axis=0, **kwargs):
        super(SquaredHingeLoss, self).__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        loss = F.square(F.relu(self._margin - pred * label))
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.mean(loss, axis=self._batch_axis, exclude=True)


class LogisticLoss(Loss):
    r"""Calculates the logistic loss (for binary losses only):
    ``log(1 + exp(-pred * label))`` for signed labels in {-1, 1}, or the binary
    cross-entropy of the logits for labels in {0, 1}.

    Parameters
    ----------
    weight : float or None
        Global scalar weight for loss.
    batch_axis : int, default 0
        The axis that represents mini-batch.
    label_format : str, default 'signed'
        'signed' (labels -1 and 1) or 'binary' (labels 0 and 1).
    """

    def __init__(self, weight=None, batch_axis=0, label_format='signed', **kwargs):
        super(LogisticLoss, self).__init__(weight, batch_axis, **kwargs)
        self._label_format = label_format
        if self._label_format not in ('signed', 'binary'):
            raise ArgumentError('label_format can only be signed or binary, recieved %s.'
                                % label_format)

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        if self._label_format == 'signed':
            label = (label + 1.0) / 2.0  # Transform label to be either 0 or 1
        # Use a stable formula in computation
        loss = F.relu(pred) - pred * label + \
            F.Activation(-F.abs(pred), act_type='softrelu')
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.mean(loss, axis=self._batch_axis, exclude=True)


class TripletLoss(Loss):
    r"""Calculates triplet loss given three input tensors and a positive margin:
    ``max(sum((positive - pred)^2) - sum((negative - pred)^2) + margin, 0)``, the sums over
    the non-batch axes.

    Parameters
    ----------
    margin : float, default 1
        Margin of separation between correct and incorrect pair.
    weight : float or None
        Global scalar weight for loss.
    batch_axis : int, default 0
        The axis that represents mini-batch.

    Inputs:
        - **pred**: prediction tensor with arbitrary shape
        - **positive**: positive example tensor of pred's size.
        - **negative**: negative example tensor of pred's size.

    Outputs:
        - **loss**: loss tensor with shape (batch_size,).
    """

    def __init__(self, margin=1, weight=None, batch_axis=0, **kwargs):
        super(TripletLoss, self).__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, pred, positive, negative):
        positive = _reshape_like(F, positive, pred)
        negative = _reshape_like(F, negative, pred)
        loss = F.sum(F.square(positive - pred) - F.square(negative - pred),
                     axis=self._batch_axis, exclude=True)
        loss = F.relu(loss + self._margin)
        return _apply_weighting(F, loss, self._weight, None)


class PoissonNLLLoss(Loss):
    r"""For a target (random variable) in a Poisson distribution, the negative
    log-likelihood of the prediction: ``exp(pred) - target * pred`` for log-rates
    (`from_logits`), else ``pred - target * log(pred + epsilon)``; with `compute_full` the
    Stirling term ``target * log(target) - target + 0.5 * log(2 * pi * target)`` is added
    where ``target > 1``. Unlike the other losses the result is the mean over all
    elements, one scalar.

    Parameters
    ----------
    from_logits : bool, default True
        Whether pred is the log of the rate instead of the rate.
    compute_full : bool, default False
        Whether to add the Stirling approximation term.
    weight : float or None
        Global scalar weight for loss.
    batch_axis : int, default 0
        The axis that represents mini-batch.

    Inputs:
        - **pred**: predicted tensor of arbitrary shape.
        - **target**: target tensor with the same size as pred.
        - **sample_weight**: element-wise weighting tensor, broadcastable to pred.
        - **epsilon**: small number added to pred inside the log (default 1e-08).

    Outputs:
        - **loss**: average loss, shape (1,).
    """

    def __init__(self, weight=None, from_logits=True, batch_axis=0, compute_full=False,
                 **kwargs):
        super(PoissonNLLLoss, self).__init__(weight, batch_axis, **kwargs)
        self._from_logits = from_logits
        self._compute_full = compute_full

    def hybrid_forward(self, F, pred, target, sample_weight=None, epsilon=1e-08):
        target = _reshape_like(F, target, pred)
        if self._from_logits:
            loss = F.exp(pred) - target * pred
        else:
            loss = pred - target * F.log(pred + epsilon)
        if self._compute_full:
            # Using numpy's pi value
            stirling_factor = target * F.log(target) - target + \
                0.5 * F.log(2 * target * np.pi)
            target_gt_1 = target > 1
            # out of place (MXNet writes ``*=`` and ``+=``): the tape may hold them
            stirling_factor = stirling_factor * target_gt_1
            loss = loss + stirling_factor
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.mean(loss)


class CosineEmbeddingLoss(Loss):
    r"""For a target label 1 or -1 and vectors `input1` and `input2`, the cosine
    embedding loss: ``1 - cos_sim(input1, input2)`` for label 1,
    ``max(0, cos_sim(input1, input2) - margin)`` for label -1.

    Parameters
    ----------
    weight : float or None
        Global scalar weight for loss.
    batch_axis : int, default 0
        The axis that represents mini-batch.
    margin : float, default 0
        Margin of separation between correct and incorrect pair.

    Inputs:
        - **input1**: a tensor with arbitrary shape
        - **input2**: another tensor with same shape as input1.
        - **label**: a 1-D tensor of -1 and 1, one per sample.
        - **sample_weight**: element-wise weighting tensor, broadcastable to the loss.

    Outputs:
        - **loss**: the loss per sample, shape (batch_size, 1).
    """

    def __init__(self, weight=None, batch_axis=0, margin=0, **kwargs):
        super(CosineEmbeddingLoss, self).__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, input1, input2, label, sample_weight=None):
        input1 = _reshape_like(F, input1, input2)
        label = label.reshape((-1, 1))
        cos_sim = self._cosine_similarity(F, input1, input2)
        y_1 = label == 1
        y_minus_1 = label == -1
        cos_sim_a = (1 - cos_sim) * y_1
        # MXNet takes broadcast_maximum with a float32 zero array: max(0, t) with a scalar
        # holds the same values and gradients and keeps the inputs' dtype (float64 too)
        cos_sim_b = F.relu(y_minus_1 * (cos_sim - self._margin))
        loss = cos_sim_a + cos_sim_b
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return loss

    def _cosine_similarity(self, F, x, y, axis=-1):
        """The cosine similarity of ``x`` and ``y`` along ``axis``, shape (batch, 1);
        the norms' product is at least 1e-12."""
        x_norm = F.norm(x, axis=axis).reshape((-1, 1))
        y_norm = F.norm(y, axis=axis).reshape((-1, 1))
        x_dot_y = F.sum(x * y, axis=axis).reshape((-1, 1))
        # a scalar maximum rather than MXNet's float32 array of 1e-12: any dtype
        return x_dot_y / F.maximum(x_norm * y_norm, 1e-12)


class SDMLLoss(Loss):
    r"""Calculates the batchwise Smoothed Deep Metric Learning (SDML) loss given two
    input tensors of paired samples (``x1[i]`` matches ``x2[i]``, every other pair of the
    batch is a negative): the KL divergence between the softmax over negated squared
    distances and a smoothed identity. Runs on NDArrays only (it reads the batch size).

    Parameters
    ----------
    smoothing_parameter : float, default 0.3
        Probability mass spread over the negatives of each row.
    weight : float, default 1.0
        Global scalar weight for loss.
    batch_axis : int, default 0
        The axis that represents mini-batch.

    Inputs:
        - **x1**: minibatch of data points with shape (batch_size, vector_dim)
        - **x2**: minibatch of data points with shape (batch_size, vector_dim),
          ``x2[i]`` the positive of ``x1[i]``.

    Outputs:
        - **loss**: loss tensor with shape (batch_size,).
    """

    def __init__(self, smoothing_parameter=0.3, weight=1., batch_axis=0, **kwargs):
        super(SDMLLoss, self).__init__(weight, batch_axis, **kwargs)
        self.kl_loss = KLDivLoss(from_logits=True)
        self.smoothing_parameter = smoothing_parameter  # Smoothing probability mass

    def _compute_distances(self, x1, x2):
        """The (batch, batch) squared euclidean distances of every ``x1[i]``, ``x2[j]``."""
        if x1.shape != x2.shape:
            raise ArgumentError('SDMLLoss: x1 and x2 must have one shape, got %s and %s'
                                % (x1.shape, x2.shape))
        batch_size, dim = x1.shape
        x1_ = x1.expand_dims(1).broadcast_to([batch_size, batch_size, dim])
        x2_ = x2.expand_dims(0).broadcast_to([batch_size, batch_size, dim])
        squared_diffs = (x1_ - x2_) ** 2
        return squared_diffs.sum(axis=2)

    def _compute_labels(self, F, batch_size, dtype='float32'):
        """The smoothed identity: ``1 - smoothing`` on the diagonal, the rest spread
        evenly over each row."""
        gold = F.eye(batch_size, dtype=dtype)
        labels = gold * (1 - self.smoothing_parameter) + \
            (1 - gold) * self.smoothing_parameter / (batch_size - 1)
        return labels

    def _loss(self, F, x1, x2):
        batch_size = x1.shape[0]
        # the labels in the inputs' dtype (MXNet: always float32, so float64 fails there)
        labels = self._compute_labels(F, batch_size, x1.dtype)
        distances = self._compute_distances(x1, x2)
        log_probabilities = F.log_softmax(-distances, axis=1)
        return self.kl_loss(log_probabilities, labels.as_in_context(distances.context))

    def hybrid_forward(self, F, x1, x2):
        return self._loss(F, x1, x2)
