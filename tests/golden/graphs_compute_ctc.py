"""Golden cases of CTCLoss (ops/ctc.py), MXNet 1.9.1 values (float32 only: MXNet 1.9.1's
CPU CTCLoss refuses float64)."""
from graphs_compute import case
from graphs import const as _const

_W = {'x': 'write', 'y': 'null'}
_WD = dict(_W, dl='null')
_WL = dict(_W, ll='null')
_WDL = dict(_WD, ll='null')


def _ctc(name='CTCLoss', data_len=False, label_len=False, **attrs):
    def build(mx):
        f = mx.sym
        for part in name.split('.'):
            f = getattr(f, part)
        kw = dict(attrs)
        if data_len:
            kw.update(data_lengths=mx.sym.Variable('dl'), use_data_lengths=True)
        if label_len:
            kw.update(label_lengths=mx.sym.Variable('ll'), use_label_lengths=True)
        return f(mx.sym.Variable('x'), mx.sym.Variable('y'), name='op', **kw)
    return build


_LAB_FIRST = [[1, 2, 0, 0], [3, 3, 0, 0], [1, 1, 4, 4], [2, 0, 0, 0], [1, 2, 3, 1]]
_LAB_LAST = [[1, 2, -1, -1], [3, 3, -1, -1], [0, 0, 1, 1], [2, -1, -1, -1], [0, 2, 3, 0]]
_SH = {'x': (7, 5, 5), 'y': (5, 4)}
case('ctc_first_padded', _ctc(), _SH, inputs={'y': _const(_LAB_FIRST)}, grad_req=_W,
     note='label 0 pads, repeated labels need a blank between them')
case('ctc_last_padded', _ctc(blank_label='last'), _SH, inputs={'y': _const(_LAB_LAST)},
     grad_req=_W, note='blank is alphabet_size-1, label -1 pads, 0 is a real label')
case('ctc_alias_ctc_loss', _ctc('ctc_loss'), _SH, inputs={'y': _const(_LAB_FIRST)},
     grad_req=_W)
case('ctc_alias_contrib', _ctc('contrib.CTCLoss', blank_label='last'), _SH,
     inputs={'y': _const(_LAB_LAST)}, grad_req=_W)
case('ctc_infeasible', _ctc(), {'x': (4, 3, 5), 'y': (3, 3)},
     inputs={'y': _const([[1, 2, 0], [3, 3, 0], [1, 1, 1]])},
     grad_req={'x': 'null', 'y': 'null'},
     note='[1, 1, 1] needs 5 steps > 4: loss 0; MXNet leaves that gradient uninitialised')
case('ctc_empty_label', _ctc(), {'x': (6, 3, 5), 'y': (3, 3)},
     inputs={'y': _const([[1, 2, 0], [0, 0, 0], [4, 4, 4]])}, grad_req=_W,
     note='an empty label is the all-blank path')
case('ctc_rounded_labels', _ctc(), {'x': (5, 2, 4), 'y': (2, 2)},
     inputs={'y': _const([[1.5, 2.5], [0.7, 0.4]])}, grad_req=_W,
     note='labels round half away from zero: [2, 3] and [1] (0.4 -> 0 pads)')
case('ctc_data_lengths', _ctc(data_len=True), {'x': (7, 4, 5), 'y': (4, 3), 'dl': (4,)},
     inputs={'y': _const([[1, 2, 3], [3, 3, 0], [2, 0, 0], [4, 1, 0]]),
             'dl': _const([7, 4, 2, 5])}, grad_req=_WD,
     note='steps past data_lengths get zero gradient')
case('ctc_label_lengths_last', _ctc(label_len=True, blank_label='last'),
     {'x': (6, 3, 5), 'y': (3, 3), 'll': (3,)},
     inputs={'y': _const([[1, 2, 3], [3, 3, 1], [0, -1, 2]]), 'll': _const([2, 3, 1])},
     grad_req=_WL, note='label_lengths override the padding search')
case('ctc_both_lengths', _ctc(data_len=True, label_len=True),
     {'x': (6, 3, 5), 'y': (3, 3), 'dl': (3,), 'll': (3,)},
     inputs={'y': _const([[1, 2, 3], [3, 3, 1], [1, 1, 1]]), 'dl': _const([6, 4, 5]),
             'll': _const([2, 3, 1])}, grad_req=_WDL)
