"""Callbacks for ``fit`` (MXNet 1.9.1's ``mxnet.callback``), plus a progress bar (tqdm's, or a
plain line without tqdm).

Batch-end callbacks receive a :class:`symgraph.model.BatchEndParam` ``(epoch, nbatch,
eval_metric, locals)``; epoch-end callbacks receive ``(epoch, symbol, arg_params,
aux_params)``. As in MXNet, the log lines go through the root ``logging`` functions.
"""
from __future__ import annotations

import logging
import math
import time

from .model import save_checkpoint
from .base import ArgumentError
from .progress import bar as progress_bar, have_tqdm

__all__ = ['module_checkpoint', 'do_checkpoint', 'log_train_metric', 'Speedometer',
           'ProgressBar', 'LogValidationMetricsCallback', 'TqdmProgress']


def module_checkpoint(mod, prefix, period=1, save_optimizer_states=False):
    """Epoch-end callback that checkpoints a Module every ``period`` epochs.

    Parameters
    ----------
    mod : BaseModule
        The module to checkpoint (its ``save_checkpoint`` is called).
    prefix : str
        The file prefix of the checkpoint.
    period : int
        Epochs between checkpoints (at least 1).
    save_optimizer_states : bool
        Also save the optimizer states (``prefix-%04d.states``).

    Returns
    -------
    callable(iter_no, sym=None, arg=None, aux=None)
    """
    period = int(max(1, period))

    def _callback(iter_no, sym=None, arg=None, aux=None):  # pylint: disable=unused-argument
        if (iter_no + 1) % period == 0:
            mod.save_checkpoint(prefix, iter_no + 1, save_optimizer_states)
    return _callback


def do_checkpoint(prefix, period=1):
    """Epoch-end callback saving ``prefix-symbol.json`` and ``prefix-%04d.params``.

    Parameters
    ----------
    prefix : str
        Prefix of the checkpoint file names.
    period : int, optional
        Epochs between checkpoints (at least 1); epoch ``i`` (0-based) is saved as
        number ``i + 1``.

    Returns
    -------
    callable(iter_no, sym, arg, aux)
        To pass as ``epoch_end_callback`` to ``fit``.
    """
    period = int(max(1, period))

    def _callback(iter_no, sym, arg, aux):
        if (iter_no + 1) % period == 0:
            save_checkpoint(prefix, iter_no + 1, sym, arg, aux)
    return _callback


def log_train_metric(period, auto_reset=False):
    """Batch-end callback logging the training metric every ``period`` batches.

    Parameters
    ----------
    period : int
        Batches between log lines (``Iter[%d] Batch[%d] Train-%s=%f``).
    auto_reset : bool
        Reset the metric's local statistics after each log.

    Returns
    -------
    callable(BatchEndParam)
    """
    def _callback(param):
        if param.nbatch % period == 0 and param.eval_metric is not None:
            name_value = param.eval_metric.get_name_value()
            for name, value in name_value:
                logging.info('Iter[%d] Batch[%d] Train-%s=%f',
                             param.epoch, param.nbatch, name, value)
            if auto_reset:
                param.eval_metric.reset_local()
    return _callback


class Speedometer(object):
    """Logs the training speed and the metrics every ``frequent`` batches.

    Parameters
    ----------
    batch_size : int
        Batch size of the data (samples per batch).
    frequent : int
        Batches between log lines (default 50).
    auto_reset : bool
        Reset the metric's local statistics after each log line, so that each line shows
        the metric over the last ``frequent`` batches (``Batch [20-30]``); without it the
        line shows the metric since the epoch began (``Batch [0-30]``).

    Notes
    -----
    The line is MXNet's: ``Epoch[%d] Batch [%d-%d]\\tSpeed: %.2f samples/sec\\t%s=%f`` (one
    ``\\t%s=%f`` per metric), or ``Iter[%d] Batch [%d]\\tSpeed: %.2f samples/sec`` without
    a metric. The first call of an epoch only starts the clock.
    """

    def __init__(self, batch_size, frequent=50, auto_reset=True):
        self.batch_size = batch_size
        self.frequent = frequent
        self.init = False
        self.tic = 0
        self.last_count = 0
        self.auto_reset = auto_reset

    def __call__(self, param):
        """Log the speed (and metrics) when ``param.nbatch`` is a multiple of ``frequent``."""
        count = param.nbatch
        if self.last_count > count:
            self.init = False
        self.last_count = count

        if self.init:
            if count % self.frequent == 0:
                try:
                    speed = self.frequent * self.batch_size / (time.time() - self.tic)
                except ZeroDivisionError:
                    speed = float('inf')
                if param.eval_metric is not None:
                    name_value = param.eval_metric.get_name_value()
                    if self.auto_reset:
                        param.eval_metric.reset_local()
                        msg = 'Epoch[%d] Batch [%d-%d]\tSpeed: %.2f samples/sec'
                        msg += '\t%s=%f' * len(name_value)
                        logging.info(msg, param.epoch, count - self.frequent, count, speed,
                                     *sum(name_value, ()))
                    else:
                        msg = 'Epoch[%d] Batch [0-%d]\tSpeed: %.2f samples/sec'
                        msg += '\t%s=%f' * len(name_value)
                        logging.info(msg, param.epoch, count, speed, *sum(name_value, ()))
                else:
                    logging.info("Iter[%d] Batch [%d]\tSpeed: %.2f samples/sec",
                                 param.epoch, count, speed)
                self.tic = time.time()
        else:
            self.init = True
            self.tic = time.time()


class ProgressBar(object):
    """Logs a text progress bar of the batches done in the epoch.

    Parameters
    ----------
    total : int
        Batches per epoch.
    length : int
        Characters of the bar.
    """

    def __init__(self, total, length=80):
        self.bar_len = length
        self.total = total

    def __call__(self, param):
        """Log ``[====----] <percent>%`` for ``param.nbatch`` of ``total``."""
        count = param.nbatch
        filled_len = int(round(self.bar_len * count / float(self.total)))
        percents = math.ceil(100.0 * count / float(self.total))
        prog_bar = '=' * filled_len + '-' * (self.bar_len - filled_len)
        logging.info('[%s] %s%s\r', prog_bar, percents, '%')


class LogValidationMetricsCallback(object):
    """Eval-end callback logging ``Epoch[%d] Validation-%s=%f`` for each metric."""

    def __call__(self, param):
        if not param.eval_metric:
            return
        name_value = param.eval_metric.get_name_value()
        for name, value in name_value:
            logging.info('Epoch[%d] Validation-%s=%f', param.epoch, name, value)


class TqdmProgress(object):
    """Batch-end callback drawing a progress bar per epoch (not part of MXNet): tqdm's where
    tqdm is installed, else a plain line redrawn with a carriage return
    (:class:`symgraph.progress.LineBar`).

    ``mod.fit(..., batch_end_callback=mx.callback.TqdmProgress(total=num_batches))``.
    A new bar starts when the epoch changes (or the batch count starts over); a bar closes
    when it reaches ``total`` or when the next one starts. The bar shows the metrics of
    ``param.eval_metric`` (as read at that batch) unless ``show_metric`` is False.

    Parameters
    ----------
    total : int, optional
        Batches per epoch (unknown when None: the bar counts without a percentage).
    show_metric : bool
        Show the metric values as the bar's postfix.
    desc : str, optional
        Format of the bar's label, with the epoch as ``{epoch}`` (default ``'Epoch[{epoch}]'``).
    use_tqdm : bool, optional
        None (default): tqdm where installed, else the plain line; False: the plain line;
        True: tqdm or an ImportError naming the extra (``pip install symgraph[tqdm]``).
    **tqdm_kwargs
        Passed to ``tqdm.tqdm`` (``file``, ``leave``, ``ncols``, ``mininterval``, ...); the
        plain line takes ``file`` and ``mininterval`` (seconds between redraws).
    """

    def __init__(self, total=None, show_metric=True, desc='Epoch[{epoch}]', use_tqdm=None,
                 **tqdm_kwargs):
        if total is not None and (not isinstance(total, int) or total <= 0):
            raise ArgumentError('TqdmProgress: total must be a positive int or None, not %r'
                                % (total,))
        if use_tqdm and not have_tqdm():
            raise ImportError('TqdmProgress(use_tqdm=True) needs the tqdm package, which is '
                              'not installed: pip install symgraph[tqdm] (or pip install '
                              'tqdm)')
        self.use_tqdm = use_tqdm
        self.total = total
        self.show_metric = show_metric
        self.desc = desc
        self.tqdm_kwargs = tqdm_kwargs
        self.bar = None
        self._epoch = None
        self._last = -1

    def __call__(self, param):
        """Advance the bar to ``param.nbatch + 1`` batches of epoch ``param.epoch``."""
        if self.bar is None or param.epoch != self._epoch or param.nbatch <= self._last:
            self.close()
            kw = dict(self.tqdm_kwargs)
            self.bar = progress_bar(self.total, self.desc.format(epoch=param.epoch),
                                    kw.pop('file', None), 'batch', self.use_tqdm, **kw)
            self._epoch = param.epoch
            self._last = -1
        done = param.nbatch + 1
        if self.show_metric and param.eval_metric is not None:
            self.bar.set_postfix(param.eval_metric.get_name_value(), refresh=False)
        self.bar.update(done - self.bar.n)
        self._last = param.nbatch
        if self.total is not None and done >= self.total:
            self.close()

    def close(self):
        """Close the current bar (if any)."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None
