"""How the Estimator trains and evaluates one batch; subclass it to change that.

After MXNet 1.9.1's ``gluon/contrib/estimator/batch_processor.py``.
"""
from .... import autograd
from ...utils import split_and_load

__all__ = ['BatchProcessor']


class BatchProcessor(object):
    """The ``fit_batch`` and ``evaluate_batch`` hooks of an :class:`Estimator`.

    During training or validation the data come in minibatches; these two methods say what
    happens to one. Give an Estimator an instance of a subclass (``batch_processor=``) that
    overrides them to customise the step (several outputs, a different loss call ...).
    """

    def _get_data_and_label(self, batch, ctx, batch_axis=0):
        """``batch[0]`` and ``batch[1]`` split along ``batch_axis`` over the contexts."""
        data = split_and_load(batch[0], ctx_list=ctx, batch_axis=batch_axis)
        label = split_and_load(batch[1], ctx_list=ctx, batch_axis=batch_axis)
        return data, label

    def evaluate_batch(self, estimator, val_batch, batch_axis=0):
        """Run ``estimator.val_net`` and ``estimator.val_loss`` on one validation batch.

        Parameters
        ----------
        estimator : Estimator
            The estimator being evaluated.
        val_batch : tuple or list
            Data and label of a batch from the validation DataLoader.
        batch_axis : int, default 0
            Axis along which the batch is split over the estimator's contexts.

        Returns
        -------
        data, label, pred, loss : lists of NDArray, one entry per context
        """
        data, label = self._get_data_and_label(val_batch, estimator.context, batch_axis)
        pred = [estimator.val_net(x) for x in data]
        loss = [estimator.val_loss(y_hat, y) for y_hat, y in zip(pred, label)]
        return data, label, pred, loss

    def fit_batch(self, estimator, train_batch, batch_axis=0):
        """Forward ``estimator.net`` and ``estimator.loss`` under ``autograd.record`` on one
        training batch and back-propagate; the parameters are updated later, by the
        :class:`GradientUpdateHandler` at batch end.

        Parameters
        ----------
        estimator : Estimator
            The estimator being trained.
        train_batch : tuple or list
            Data and label of a batch from the training DataLoader.
        batch_axis : int, default 0
            Axis along which the batch is split over the estimator's contexts.

        Returns
        -------
        data : list of NDArray
            The batch's data, split with ``gluon.utils.split_and_load``.
        label : list of NDArray
            The batch's labels, split alike.
        pred : list of NDArray
            The prediction on each part.
        loss : list of NDArray
            The loss of each part.
        """
        data, label = self._get_data_and_label(train_batch, estimator.context, batch_axis)
        with autograd.record():
            pred = [estimator.net(x) for x in data]
            loss = [estimator.loss(y_hat, y) for y_hat, y in zip(pred, label)]
        for part in loss:
            part.backward()
        return data, label, pred, loss
