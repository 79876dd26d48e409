"""Monitor outputs, weights and gradients for debugging (MXNet 1.9.1's ``mxnet.monitor``)."""
from __future__ import annotations

import logging
import re
from math import sqrt

from . import ndarray as nd
from .ndarray import NDArray
from .base import ArgumentError, ArgumentTypeError

__all__ = ['Monitor']


class Monitor(object):
    """Collects a statistic of the tensors whose names match a pattern, every
    ``interval`` batches.

    Parameters
    ----------
    interval : int
        Number of batches between collections.
    stat_func : callable(NDArray) -> NDArray or list of NDArray, optional
        The statistic; default ``norm(x) / sqrt(x.size)``.
    pattern : str
        Regular expression (matched at the start of the name) choosing the tensors, e.g.
        ``'.*weight|.*output'``.
    sort : bool
        Sort the results by name.
    monitor_all : bool
        Monitor the inputs of each operator as well as its outputs.

    Examples
    --------
    >>> mon = mx.mon.Monitor(1, pattern='.*output')   # doctest: +SKIP
    >>> mon.install(exe); mon.tic(); exe.forward(); mon.toc_print()   # doctest: +SKIP
    """

    def __init__(self, interval, stat_func=None, pattern='.*', sort=False, monitor_all=False):
        if stat_func is None:
            def asum_stat(x):
                """Return ``norm(x) / sqrt(x.size)``."""
                return nd.norm(x) / sqrt(x.size)
            stat_func = asum_stat
        if not callable(stat_func):
            raise ArgumentTypeError('Monitor: stat_func must be callable, not %s'
                                    % type(stat_func).__name__)
        if not isinstance(interval, int) or interval <= 0:
            raise ArgumentError('Monitor: interval must be a positive int, not %r' % (interval,))
        self.stat_func = stat_func
        self.interval = interval
        self.activated = False
        self.queue = []
        self.step = 0
        self.exes = []
        self.re_prog = re.compile(pattern)
        self.sort = sort
        self.monitor_all = monitor_all

        def stat_helper(name, array):
            """Executor callback: queue the statistic of a matching tensor."""
            if not self.activated or not self.re_prog.match(name):
                return
            self.queue.append((self.step, name, self.stat_func(array)))
        self.stat_helper = stat_helper

    def install(self, exe):
        """Install the callback on an executor (several executors may share a monitor).

        Parameters
        ----------
        exe : Executor
        """
        exe.set_monitor_callback(self.stat_helper, self.monitor_all)
        self.exes.append(exe)

    def tic(self):
        """Start collecting for the current batch; call before ``forward``."""
        if self.step % self.interval == 0:
            self.queue = []
            self.activated = True
        self.step += 1

    def toc(self):
        """End collecting for the current batch.

        Returns
        -------
        list of (step, name, str)
            The statistics, each formatted as MXNet does (a scalar for shape ``(1,)``, the
            NumPy repr otherwise, each followed by a tab); arguments and auxiliary states
            that match come after the intermediate outputs.
        """
        if not self.activated:
            return []
        for exe in self.exes:
            for name, array in zip(exe._symbol.list_arguments(), exe.arg_arrays):
                if self.re_prog.match(name):
                    self.queue.append((self.step, name, self.stat_func(array)))
            for name, array in zip(exe._symbol.list_auxiliary_states(), exe.aux_arrays):
                if self.re_prog.match(name):
                    self.queue.append((self.step, name, self.stat_func(array)))
        self.activated = False
        res = []
        if self.sort:
            self.queue.sort(key=lambda x: x[1])
        for n, k, v_list in self.queue:
            if isinstance(v_list, NDArray):
                v_list = [v_list]
            if not isinstance(v_list, list):
                raise ArgumentTypeError('Monitor: stat_func must return an NDArray or a list of '
                                        'NDArrays, not %s' % type(v_list).__name__)
            s = ''
            for v in v_list:
                if not isinstance(v, NDArray):
                    raise ArgumentTypeError('Monitor: stat_func returned a %s in its list, not an '
                                            'NDArray' % type(v).__name__)
                if v.shape == (1,):
                    s += str(v.asscalar()) + '\t'
                else:
                    s += str(v.asnumpy()) + '\t'
            res.append((n, k, s))
        self.queue = []
        return res

    def toc_print(self):
        """End collecting and log the results (``Batch: <step> <name> <value>``)."""
        res = self.toc()
        for n, k, v in res:
            logging.info('Batch: {:7d} {:30s} {:s}'.format(n, k, v))
