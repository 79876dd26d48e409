"""What the profiler records of an executor's run: one event per step of its plan.

The executor calls :func:`run` instead of its generated function while profiling is on
(one flag test at its forward/backward entry: ``_recorder.executor``); the function is
then the plan's instrumented variant (``Plan.forward_fn(..., profile=True)``), which
appends a clock reading after each step to a list. The names, categories and the memory
alive at each step are worked out once per plan (:func:`table`, kept as long as the plan
lives): a step costs the profiler one clock reading and one append.

Names follow MXNet's: the operator's name (``Convolution``) forward and ``_backward_``
before it backward; a custom operator's node by its ``op_type`` (the events of its Python
code, ``MyOp::pure_python``, come from :mod:`symgraph.operator.custom`).
"""
from __future__ import annotations

import weakref

from . import _recorder as rec

__all__ = ['run', 'table', 'op_event_name', 'backward_event_name']

_TABLES = weakref.WeakKeyDictionary()
_API = {'forward': 'MXExecutorForward', 'backward': 'MXExecutorBackwardEx'}


def op_event_name(op):
    """The event name of an operator's forward, as MXNet's profiler shows it: a custom
    operator by its ``op_type``, the others by their name."""
    if op.name == 'Custom':
        return str(getattr(op, 'op_type', 'Custom'))
    return op.name


def backward_event_name(name):
    """The event name of the backward of the operator whose forward event is ``name``:
    ``_backward_Convolution``; ``_backward_mul_scalar`` for ``_mul_scalar`` (MXNet's
    backward operators are ``'_backward' + name`` for the names that start with ``_``)."""
    return '_backward' + (name if name.startswith('_') else '_' + name)


def run(plan, kind, fn, args, buffered):
    """``fn(*args, T)``: the instrumented ``kind`` (``'forward'``/``'backward'``) function of
    ``plan``; its steps are recorded (also those done before a step that raised)."""
    stamps = []
    t0 = rec.now()
    try:
        return fn(*args, stamps)
    finally:
        t1 = rec.now()
        if (rec.symbolic or rec.memory) and len(stamps) > 1:
            rec.record_run(table(plan, kind, buffered)[:len(stamps) - 1], stamps)
        if rec.api:
            rec.record(_API[kind], 'MXNET_C_API', t0, t1)


def table(plan, kind, buffered):
    """[(name, category, args, live bytes or None)] per step of ``plan``'s ``kind`` run,
    for the flags now (names only with ``symbolic``, bytes only with ``memory``)."""
    key = (kind, bool(buffered), rec.symbolic, rec.memory)
    cache = _TABLES.setdefault(plan, {})
    got = cache.get(key)
    if got is None:
        if kind == 'forward':
            nodes = list(plan.steps)
            names = [op_event_name(n.op) for n in nodes]
            live = _forward_live(plan, buffered)
        else:
            nodes = list(reversed(plan.bwd_steps))
            names = [backward_event_name(op_event_name(n.op)) for n in nodes] + \
                ['CopyGradients']
            live = _backward_live(plan, buffered)
            live.append(live[-1] if live else 0)
        args = [{'node': n.name} for n in nodes] + [None] * (len(names) - len(nodes))
        got = cache[key] = [
            (name if rec.symbolic else None, 'operator', a, b if rec.memory else None)
            for name, a, b in zip(names, args, live)]
    return got


def _storage(plan, buffered):
    st = plan.storage() if buffered else None
    return (int(st.arena) if st is not None else 0), (st.slot if st is not None else {})


def _forward_live(plan, buffered):
    """Bytes alive at each forward step: the arena, and the arrays the operators returned
    that the generated code still holds (freed after their last use; the outputs, the
    arguments' and the arrays backward reads are kept)."""
    arena, slot = _storage(plan, buffered)
    own = set()
    for n in plan.steps:
        own.update(e for e in plan.out_entries(n) if e not in slot)
    keep = set(plan.head_entries) | set(plan.saved)
    last_use = {}
    for s, n in enumerate(plan.steps):
        for e in plan.in_entries(n):
            last_use[e] = s
    alive, out = 0, []
    for s, n in enumerate(plan.steps):
        outs = plan.out_entries(n)
        alive += sum(plan.nbytes(e) for e in outs if e in own)
        out.append(arena + alive)
        dead = {e for e in plan.in_entries(n) if last_use.get(e) == s} | \
            {e for e in outs if e not in last_use}
        alive -= sum(plan.nbytes(e) for e in dead if e in own and e not in keep)
    return out


def _backward_live(plan, buffered):
    """Bytes alive at each backward step: the arena, the forward arrays kept for backward
    until their last read, and the gradients returned until they are used up."""
    arena, slot = _storage(plan, buffered)
    produced = set()
    for n in plan.steps:
        produced.update(plan.out_entries(n))
    saved = [e for e in plan.saved if e in produced and e not in slot]
    last_read = {}
    steps = list(reversed(plan.bwd_steps))
    for t, n in enumerate(steps):
        for e in plan.backward_reads(n):
            last_read[e] = t
    alive = sum(plan.nbytes(e) for e in saved)
    grads, out = set(), []
    args = set(plan.arg_entries)
    for t, n in enumerate(steps):
        n_args = len(n.op.list_arguments())
        for e in plan.in_entries(n)[:n_args]:
            if plan.requires[e] and e not in grads and ('g', e) not in slot:
                grads.add(e)
                alive += plan.nbytes(e)
        out.append(arena + alive)
        alive -= sum(plan.nbytes(e) for e in saved if last_read.get(e) == t)
        for e in plan.out_entries(n):
            if e in grads and e not in args:
                grads.discard(e)
                alive -= plan.nbytes(e)
    return out
