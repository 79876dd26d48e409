"""Golden compute cases of the mixed precision casts (``ops/amp.py``) and the densities
(``ops/random_pdf.py``) in graphs: JSON, inferred shapes and types, forward and gradients
through MXNet 1.9.1's executor (the operators' own values and the multi-tensor updates are
in ``make_amp_multi.py``)."""
from graphs_compute import case
from graphs import uniform


def _amp_roundtrip(mx):
    x = mx.sym.Variable('x')
    h = mx.sym.amp_cast(x, dtype='float16', name='to16')
    return mx.sym.amp_cast(h, dtype='float32', name='op')


def _amp_multicast(mx):
    x, y = mx.sym.Variable('x'), mx.sym.Variable('y')
    return mx.sym.amp_multicast(x, y, num_outputs=2, name='op')


def _pdf(opname, params, **attrs):
    def build(mx):
        args = [mx.sym.Variable(n) for n in ('x',) + params]
        return getattr(mx.sym, opname)(*args, name='op', **attrs)
    return build


case('amppdf_cast_roundtrip', _amp_roundtrip, {'x': (3, 4)}, rtol=2e-3, atol=2e-3,
     note='float16 in the middle')
case('amppdf_multicast_widen', _amp_multicast, {'x': (2, 3), 'y': (2, 3)},
     type_dict={'x': 'float16', 'y': 'float32'}, rtol=2e-3, atol=2e-3)
case('amppdf_normal', _pdf('random_pdf_normal', ('mu', 'sigma')),
     {'x': (2, 3, 4), 'mu': (2, 3), 'sigma': (2, 3)}, inputs={'sigma': uniform(0.5, 2.0)},
     rtol=1e-4, atol=1e-6)
case('amppdf_gamma_log', _pdf('random_pdf_gamma', ('alpha', 'beta'), is_log=True),
     {'x': (3, 5), 'alpha': (3,), 'beta': (3,)},
     inputs={'x': uniform(0.2, 3.0), 'alpha': uniform(1.0, 3.0), 'beta': uniform(0.5, 2.0)},
     rtol=1e-4, atol=1e-5)
case('amppdf_exponential', _pdf('random_pdf_exponential', ('lam',)),
     {'x': (4, 2), 'lam': (4,)}, inputs={'x': uniform(0.1, 2.0), 'lam': uniform(0.5, 2.0)},
     rtol=1e-4, atol=1e-6)
