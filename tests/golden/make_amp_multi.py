"""Golden data of the mixed precision, multi-tensor and density operators
(``ops/amp.py``, ``ops/multi_tensor.py``, ``ops/random_pdf.py``, ``ops/sample.py``), from
MXNet 1.9.1:

    cd tests/golden
    MXNET_MKLDNN_ENABLED=0 $MXNET_PYTHON make_amp_multi.py

writes ``data/amp_multi.npz``: for every case ``<case>/in<i>`` the inputs, ``<case>/out<i>``
the outputs and ``<case>/st<i>`` the (in place updated) inputs after the call, and for the
differentiable cases ``<case>/grad<i>`` the input gradients for the head gradient
``<case>/head``; the attributes are in ``CASES`` below, which ``tests/ops/test_amp_multi.py``
reads too (this module imports mxnet only inside ``main``).
"""
import numpy as np

R = np.random.RandomState(7)


def _n(*shape, dtype='float32', lo=None, hi=None):
    if lo is not None:
        return R.uniform(lo, hi, shape).astype(dtype)
    return R.normal(0, 1, shape).astype(dtype)


def _sgd_inputs(n, mom, mp, dtype='float32'):
    arrays = []
    for i in range(n):
        shape = (3, 4) if i == 0 else (5,)
        w = _n(*shape, dtype=dtype)
        arrays += [w, _n(*shape, dtype=dtype)]
        if mom:
            arrays.append(_n(*shape, dtype='float32' if mp else dtype))
        if mp:
            arrays.append(w.astype('float32'))
    return arrays


#: name -> (operator, attrs, inputs, indices of the float inputs to differentiate or None,
#:          steps (update operators are called repeatedly with out=weights))
CASES = {}


def case(name, op, attrs, inputs, grad=None, steps=1):
    CASES[name] = (op, attrs, inputs, grad, steps)


# -- mixed precision
case('amp_cast_f32_f16', 'amp_cast', {'dtype': 'float16'}, [_n(3, 4)], grad=[0])
case('amp_cast_f16_f32', 'amp_cast', {'dtype': 'float32'}, [_n(2, 5, dtype='float16')],
     grad=[0])
case('amp_cast_f64_passes', 'amp_cast', {'dtype': 'float16'}, [_n(2, 3, dtype='float64')],
     grad=[0])
case('amp_cast_int_passes', 'amp_cast', {'dtype': 'float16'},
     [np.arange(6, dtype='int32').reshape(2, 3)])
case('amp_multicast_wide', 'amp_multicast', {'num_outputs': 3},
     [_n(2, 3, dtype='float16'), _n(4), _n(2, dtype='float64')], grad=[0, 1, 2])
case('amp_multicast_narrow', 'amp_multicast', {'num_outputs': 2, 'cast_narrow': True},
     [_n(2, 3, dtype='float16'), _n(4)], grad=[0, 1])
case('amp_multicast_all16', 'amp_multicast', {'num_outputs': 2},
     [_n(3, dtype='float16'), _n(2, 2, dtype='float16')])

# -- multi-tensor updates (three steps each, out= the weights)
_LR = {'lrs': (0.1, 0.05), 'wds': (0.01, 0.002), 'num_weights': 2}
case('multi_sgd', 'multi_sgd_update', dict(_LR, rescale_grad=0.5),
     _sgd_inputs(2, False, False), steps=3)
case('multi_sgd_clip', 'multi_sgd_update', dict(_LR, clip_gradient=0.3),
     _sgd_inputs(2, False, False), steps=3)
case('multi_sgd_mom', 'multi_sgd_mom_update', dict(_LR, momentum=0.9, rescale_grad=0.7),
     _sgd_inputs(2, True, False), steps=3)
case('multi_sgd_mom_clip', 'multi_sgd_mom_update',
     dict(_LR, momentum=0.9, clip_gradient=0.5), _sgd_inputs(2, True, False), steps=3)
case('multi_sgd_f16', 'multi_sgd_update', dict(_LR), _sgd_inputs(2, False, False, 'float16'),
     steps=2)
case('multi_mp_sgd', 'multi_mp_sgd_update', dict(_LR, rescale_grad=0.5),
     _sgd_inputs(2, False, True, 'float16'), steps=3)
case('multi_mp_sgd_mom', 'multi_mp_sgd_mom_update', dict(_LR, momentum=0.8),
     _sgd_inputs(2, True, True, 'float16'), steps=3)
_PRE = {'num_weights': 2}
_LRS = [np.array([0.1, 0.05], 'float32'), np.array([0.01, 0.002], 'float32')]
case('preloaded_sgd', 'preloaded_multi_sgd_update', dict(_PRE, rescale_grad=0.5),
     _sgd_inputs(2, False, False) + _LRS, steps=3)
case('preloaded_sgd_mom', 'preloaded_multi_sgd_mom_update', dict(_PRE, momentum=0.9),
     _sgd_inputs(2, True, False) + _LRS, steps=3)
case('preloaded_mp_sgd', 'preloaded_multi_mp_sgd_update', dict(_PRE, clip_gradient=0.4),
     _sgd_inputs(2, False, True, 'float16') + _LRS, steps=3)
case('preloaded_mp_sgd_mom', 'preloaded_multi_mp_sgd_mom_update', dict(_PRE, momentum=0.9),
     _sgd_inputs(2, True, True, 'float16') + _LRS, steps=3)


def _adam_inputs(mp, dtype='float32'):
    arrays = []
    for shape in ((3, 4), (6,)):
        w = _n(*shape, dtype=dtype)
        arrays += [w, _n(*shape, dtype=dtype), _n(*shape, dtype='float32' if mp else dtype),
                   _n(*shape, dtype='float32' if mp else dtype, lo=0.1, hi=1.0)]
        if mp:
            arrays.append(w.astype('float32'))
    return arrays


_AD = {'lrs': (0.01, 0.02), 'wds': (0.1, 0.0), 'etas': (1.0, 0.5), 'num_weights': 2}
case('multi_adamw', '_multi_adamw_update', dict(_AD, clip_gradient=1.0),
     _adam_inputs(False) + [np.array([0.5], 'float32')], steps=3)
case('multi_adamw_skip', '_multi_adamw_update', dict(_AD),
     _adam_inputs(False) + [np.array([np.inf], 'float32')], steps=1)
case('multi_mp_adamw', '_multi_mp_adamw_update', dict(_AD, beta1=0.8),
     _adam_inputs(True, 'float16') + [np.array([0.9], 'float32')], steps=3)
_LB = {'learning_rates': (0.01, 0.02), 'wds': (0.1, 0.01), 'step_count': (3, 5),
       'num_tensors': 2}
case('multi_lamb', '_multi_lamb_update', dict(_LB), _adam_inputs(False), steps=1)
case('multi_lamb_bounds', '_multi_lamb_update',
     dict(_LB, bias_correction=False, lower_bound=0.5, upper_bound=2.0, clip_gradient=0.5,
          rescale_grad=0.8), _adam_inputs(False), steps=1)
case('multi_mp_lamb', '_multi_mp_lamb_update', dict(_LB), _adam_inputs(True, 'float16'),
     steps=1)

# -- norms, checks, LARS, group adagrad
case('multi_sum_sq', 'multi_sum_sq', {'num_arrays': 3}, [_n(3, 4), _n(100), _n(2, 2, 2)])
case('multi_sum_sq_f16', 'multi_sum_sq', {'num_arrays': 2},
     [_n(3, 4, dtype='float16'), _n(7, dtype='float16')])
case('multi_all_finite_ok', 'multi_all_finite', {'num_arrays': 2}, [_n(3), _n(2, 2)])
case('multi_all_finite_nan', 'multi_all_finite', {'num_arrays': 2},
     [_n(3), np.array([1, np.nan], 'float32')])
case('multi_lars', 'multi_lars', {'eta': 0.9, 'eps': 1e-8, 'rescale_grad': 0.5},
     [np.array([0.1, 0.2, 0.3, 0.4], 'float32'), np.array([4.0, 0.0, 2.0, 9.0], 'float32'),
      np.array([1.0, 1.0, 0.0, 0.25], 'float32'),
      np.array([0.01, 0.0, 0.1, 0.001], 'float32')])
case('reset_arrays', 'reset_arrays', {'num_arrays': 2}, [_n(3), _n(2, 2)])
case('group_adagrad', '_contrib_group_adagrad_update', {'lr': 0.1, 'epsilon': 1e-5},
     [_n(4, 3), _n(4, 3), _n(4, 1, lo=0.0, hi=1.0)], steps=2)
case('group_adagrad_clip', '_contrib_group_adagrad_update',
     {'lr': 0.2, 'rescale_grad': 2.0, 'clip_gradient': 0.5},
     [_n(3, 5), _n(3, 5), np.zeros((3, 1), 'float32')], steps=2)

# -- densities (values and gradients)
for _log in (False, True):
    _s = '_log' if _log else ''
    _a = {'is_log': _log}
    case('pdf_uniform' + _s, '_random_pdf_uniform', _a,
         [_n(2, 3, lo=0.2, hi=0.8), _n(2, lo=-1, hi=0), _n(2, lo=1, hi=2)], grad=[0, 1, 2])
    case('pdf_normal' + _s, '_random_pdf_normal', _a,
         [_n(2, 3, 2), _n(2, 3), _n(2, 3, lo=0.5, hi=2)], grad=[0, 1, 2])
    case('pdf_gamma' + _s, '_random_pdf_gamma', _a,
         [_n(2, 4, lo=0.2, hi=3), _n(2, lo=1, hi=3), _n(2, lo=0.5, hi=2)], grad=[0, 1, 2])
    case('pdf_exponential' + _s, '_random_pdf_exponential', _a,
         [_n(3, 2, lo=0.1, hi=2), _n(3, lo=0.5, hi=2)], grad=[0, 1])
    case('pdf_poisson' + _s, '_random_pdf_poisson', _a,
         [R.randint(0, 6, (2, 3)).astype('float32'), _n(2, lo=1, hi=4)], grad=[0, 1])
    case('pdf_negative_binomial' + _s, '_random_pdf_negative_binomial', _a,
         [R.randint(0, 6, (2, 3)).astype('float32'), _n(2, lo=1, hi=4),
          _n(2, lo=0.2, hi=0.8)], grad=[0, 1, 2])
    case('pdf_gen_negative_binomial' + _s, '_random_pdf_generalized_negative_binomial', _a,
         [R.randint(0, 6, (2, 3)).astype('float32'), _n(2, lo=1, hi=4),
          _n(2, lo=0.2, hi=1.5)], grad=[0, 1, 2])
    _d = R.dirichlet([1.0, 2.0, 3.0], (2, 4)).astype('float32')
    case('pdf_dirichlet' + _s, '_random_pdf_dirichlet', _a,
         [_d, _n(2, 3, lo=0.5, hi=3)], grad=[0, 1])
case('pdf_normal_f64', '_random_pdf_normal', {},
     [_n(3, 2, dtype='float64'), _n(3, dtype='float64'),
      _n(3, dtype='float64', lo=0.5, hi=2)], grad=[0, 1, 2])
# one-hot probabilities: the draws are certain, so the log-probabilities and the gradient
# are deterministic
case('multinomial_get_prob', '_sample_multinomial', {'shape': (3,), 'get_prob': True},
     [np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]], 'float32')], grad=[0])


def main():
    import mxnet as mx
    out = {}
    for name, (op, attrs, inputs, grad, steps) in CASES.items():
        if op.startswith('_contrib_'):
            fn = getattr(mx.nd.contrib, op[len('_contrib_'):])
        else:
            fn = getattr(mx.nd, op) if hasattr(mx.nd, op) else getattr(mx.nd._internal, op)
        arrays = [mx.nd.array(x, dtype=x.dtype) for x in inputs]
        for i, x in enumerate(inputs):
            out['%s/in%d' % (name, i)] = x
        kw = dict(attrs)
        if op == '_contrib_group_adagrad_update':
            # MXNet has only the row_sparse kernel (every row present: the dense update)
            arrays[1] = arrays[1].tostype('row_sparse')
        if grad:
            for i in grad:
                arrays[i].attach_grad()
            with mx.autograd.record():
                res = fn(*arrays, **kw)
            res = res if isinstance(res, (list, tuple)) else [res]
            heads = [mx.nd.array(R.normal(0, 1, r.shape), dtype=r.dtype) for r in res]
            mx.autograd.backward(res, heads)
            for i, h in enumerate(heads):
                out['%s/head%d' % (name, i)] = h.asnumpy()
            for i in grad:
                out['%s/grad%d' % (name, i)] = arrays[i].grad.asnumpy()
        else:
            for step in range(steps):
                if op in ('reset_arrays',):
                    fn(*arrays, **kw)
                    res = []
                    break
                if steps > 1 or op.startswith(('multi_', 'preloaded', '_multi',
                                               '_contrib_group')):
                    n = kw.get('num_weights', kw.get('num_tensors', 1))
                    stride = {'_contrib_group_adagrad_update': 3}.get(op)
                    if stride is None:
                        stride = (len(arrays) - (2 if op.startswith('preloaded') else
                                                 1 if 'adamw' in op else 0)) // n
                    weights = [arrays[i * stride] for i in range(n)]
                    if op.startswith(('multi_sum', 'multi_all', 'multi_lars')):
                        res = fn(*arrays, **kw)
                        break
                    fn(*arrays, out=weights if n > 1 else weights[0], **kw)
                    res = weights
                else:
                    res = fn(*arrays, **kw)
            mx.nd.waitall()
        res = res if isinstance(res, (list, tuple)) else [res]
        for i, r in enumerate(res):
            out['%s/out%d' % (name, i)] = r.asnumpy()
        for i, a in enumerate(arrays):
            out['%s/st%d' % (name, i)] = a.tostype('default').asnumpy()
    np.savez_compressed('data/amp_multi.npz', **out)
    print('wrote data/amp_multi.npz: %d arrays, %d cases' % (len(out), len(CASES)))


if __name__ == '__main__':
    main()


def replay(mx, get_op, name, data):
    """Run case ``name`` in symgraph (``mx``) on the recorded inputs: returns
    ``(outputs, inputs after the call, gradients by input index)``; updates go through
    ``mx.nd`` as an optimizer calls them, gradients through the operator's backward."""
    op, attrs, _, grad, steps = CASES[name]
    n_in = len(CASES[name][2])
    inputs = [data['%s/in%d' % (name, i)] for i in range(n_in)]
    arrays = [mx.nd.array(x, dtype=x.dtype) for x in inputs]
    kw = dict(attrs)
    grads = {}
    fn = getattr(mx.nd, op)
    if op == '_contrib_group_adagrad_update':
        fn = mx.nd.contrib.group_adagrad_update
    if grad:
        o = get_op(op)(**attrs)
        xs = [a.asnumpy() for a in arrays]
        outs = o.forward(np, xs, [], True)
        heads = [data['%s/head%d' % (name, i)] for i in range(len(outs))]
        g = o.backward(np, heads, xs, outs, [], [i in grad for i in range(len(xs))])
        grads = {i: g[i] for i in grad}
        res = [mx.nd.array(x, dtype=x.dtype) for x in outs]
    elif op == 'reset_arrays' or op.startswith(('multi_sum', 'multi_all', 'multi_lars')) \
            or steps == 1 and not op.startswith(('multi_', 'preloaded', '_multi', '_contrib')):
        res = fn(*arrays, **kw)
    else:
        n = kw.get('num_weights', kw.get('num_tensors', 1))
        stride = 3 if op == '_contrib_group_adagrad_update' else \
            (len(arrays) - (2 if op.startswith('preloaded') else 1 if 'adamw' in op else 0)) // n
        weights = [arrays[i * stride] for i in range(n)]
        for _ in range(steps):
            fn(*arrays, out=weights if n > 1 else weights[0], **kw)
        res = weights
    res = [] if res is None else res if isinstance(res, (list, tuple)) else [res]
    return [r.asnumpy() for r in res], [a.asnumpy() for a in arrays], grads
