"""Drawings and reports beyond the graph plot (:mod:`symgraph.visualization`, ``mx.viz``,
offers them): :func:`diff` (two graphs compared, :mod:`.diff`) and :func:`plot_memory`
(an executor's buffers over its step, :mod:`.memory`). SVG is written directly."""
from .diff import diff, DiffResult
from .memory import plot_memory, MemoryPlot

__all__ = ['diff', 'DiffResult', 'plot_memory', 'MemoryPlot']
