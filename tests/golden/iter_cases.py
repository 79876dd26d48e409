"""The NDArrayIter cases shared by tests/golden/make_io.py (run under MXNet 1.9.1) and
tests/io/test_ndarray_iter.py: each case builds its inputs deterministically from NumPy,
so both sides iterate over the same arrays. Python 3.8 compatible, NumPy only."""
import numpy as np


def _rows(n, width, offset=0):
    """n examples of ``width`` features; example i holds offset + i*width ... (distinct)."""
    return (np.arange(n * width).reshape(n, width) + offset).astype(np.float64)


# name -> keyword arguments of NDArrayIter, with 'inputs' naming how data/label are built
CASES = {}
for _mode in ('pad', 'discard', 'roll_over'):
    for _n, _bs in ((10, 3), (10, 5), (7, 4), (5, 2)):
        CASES['%s_n%d_b%d' % (_mode, _n, _bs)] = dict(
            inputs='array', n=_n, batch_size=_bs, last_batch_handle=_mode)
    CASES['%s_shuffle' % _mode] = dict(inputs='array', n=10, batch_size=3,
                                       last_batch_handle=_mode, shuffle=True, seed=7)
    CASES['%s_listdict' % _mode] = dict(inputs='listdict', n=10, batch_size=4,
                                        last_batch_handle=_mode)
    CASES['%s_listdict_shuffle' % _mode] = dict(inputs='listdict', n=9, batch_size=4,
                                                last_batch_handle=_mode, shuffle=True,
                                                seed=3)
CASES['pad_batch_larger'] = dict(inputs='array', n=3, batch_size=8, last_batch_handle='pad')
CASES['pad_batch_larger_exact'] = dict(inputs='array', n=3, batch_size=9,
                                       last_batch_handle='pad')
CASES['nolabel'] = dict(inputs='nolabel', n=7, batch_size=3, last_batch_handle='pad')
CASES['names'] = dict(inputs='array', n=6, batch_size=4, last_batch_handle='pad',
                      data_name='x', label_name='y')
CASES['int_numpy'] = dict(inputs='int_numpy', n=6, batch_size=4, last_batch_handle='pad')
CASES['nd_int32'] = dict(inputs='nd_int32', n=6, batch_size=4, last_batch_handle='pad')
CASES['nd_int32_shuffle'] = dict(inputs='nd_int32', n=6, batch_size=4,
                                 last_batch_handle='pad', shuffle=True, seed=1)
CASES['image4d'] = dict(inputs='image4d', n=5, batch_size=2, last_batch_handle='pad')
CASES['roll_over_hard_reset'] = dict(inputs='array', n=10, batch_size=4,
                                     last_batch_handle='roll_over', hard_reset_after=0)

EPOCHS = 3


def make_inputs(case, nd_array):
    """(data, label) of ``case``; ``nd_array(numpy_array, dtype)`` makes an NDArray of
    the framework under test."""
    kind, n = case['inputs'], case['n']
    if kind == 'array':
        return _rows(n, 2), np.arange(n, dtype=np.float64) * 10
    if kind == 'listdict':
        return ([_rows(n, 2), _rows(n, 3, 1000)],
                {'lb': np.arange(n) * 10.0, 'la': _rows(n, 2, 500)})
    if kind == 'nolabel':
        return _rows(n, 3), None
    if kind == 'int_numpy':
        return np.arange(n * 2).reshape(n, 2), np.arange(n)
    if kind == 'nd_int32':
        return (nd_array(np.arange(n * 2).reshape(n, 2), 'int32'),
                nd_array(np.arange(n), 'int32'))
    if kind == 'image4d':
        return np.arange(n * 12).reshape(n, 3, 2, 2), {'softmax_label': np.arange(n)}
    raise ValueError(kind)


def iter_kwargs(case):
    """The NDArrayIter keyword arguments of ``case`` (besides data and label)."""
    return {k: v for k, v in case.items() if k not in ('inputs', 'n', 'seed', 'hard_reset_after')}


def record(it, epochs=EPOCHS, hard_reset_after=None):
    """Everything observable of ``epochs`` passes over ``it`` (reset between them)."""
    out = {'provide_data': [repr(d) for d in it.provide_data],
           'provide_label': [repr(d) for d in it.provide_label],
           'num_data': int(it.num_data), 'epochs': []}
    for e in range(epochs):
        batches = []
        for b in it:
            batches.append({
                'data': [d.asnumpy().tolist() for d in b.data],
                'label': [l.asnumpy().tolist() for l in b.label],
                'dtypes': [str(d.dtype) for d in b.data + b.label],
                'pad': b.pad, 'index': None if b.index is None else list(b.index)})
        out['epochs'].append(batches)
        if hard_reset_after == e:
            it.hard_reset()
        else:
            it.reset()
    return out
