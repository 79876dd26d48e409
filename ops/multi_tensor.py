"""Multi-tensor operators (MXNet 1.9.1 ``src/operator/optimizer_op.cc``,
``contrib/multi_sum_sq``, ``multi_lars``, ``all_finite``, ``reset_arrays``,
``preloaded_multi_sgd``, ``adamw``, ``multi_lamb``): one call updates or inspects a list of
arrays, as MXNet's fused optimizers (``SGD(aggregate_num=...)``, LARS, LAMB) call them.

As MXNet:

* inputs are interleaved per tensor (``weight_0, grad_0, mom_0, weight_1, ...``), the
  ``preloaded_`` variants then take ``lrs`` and ``wds`` arrays, the adamw variants a
  trailing ``rescale_grad`` array; there is one output per weight (``out=[w0, w1, ...]``);
* the states (``mom``, ``mean``, ``var``, ``weight32``) are MXNet's mutable inputs and are
  **updated in place**; ``reset_arrays`` zeroes all its inputs and has no output;
* arithmetic follows MXNet's kernels, which are *not* those of the single-tensor updates:
  ``multi_sgd_update`` computes ``w + (0 - lr*wd*w - (lr*rescale_grad)*g)``, multi-adamw
  ``mean = beta1*(mean - g) + g``, in the kernels' type (float32 for the ``mp_`` variants,
  the weight's type otherwise); ``multi_sum_sq`` accumulates sequentially in float32.

Deliberate difference: the mutable states are *arguments* of the symbol here (MXNet lists
them among the auxiliary states), because symgraph keeps auxiliary inputs after the
arguments and MXNet's interleaved input order must be kept for JSON. MXNet 1.9.1's own
``_multi_adamw_update`` names its inputs with an indexing bug (``weight_0`` five times);
the names here are ``weight_i, grad_i, mean_i, var_i, ..., rescale_grad``. As the
single-tensor updates, the float32 inputs (master copies, mp_ states, ``multi_lars``'s
arrays) also accept float64 here, where MXNet refuses it.
"""
import numpy as np

from symgraph.opdef import (MXNetError, Operator, Param, ShapeError, TypeInferenceError,
                            register)

F32 = np.dtype(np.float32)
F64 = np.dtype(np.float64)


def _clip(xp, g, c):
    return xp.clip(g, -c, c) if c >= 0 else g


def _floats(n):
    return Param('floats', doc=n)


class _Multi(Operator):
    """Interleaved per-tensor inputs ``roles`` (+ ``tail`` inputs), one output each."""

    no_grad = True
    needs_inputs = False
    roles = ('weight', 'grad')
    mutable = ()                 # roles updated in place
    f32_roles = ()               # roles that are float32 whatever the weight's type
    tail = ()                    # trailing inputs (preloaded lrs/wds, rescale_grad)
    count_param = 'num_weights'

    @property
    def n(self):
        return getattr(self, self.count_param)

    def check(self):
        if self.n < 1:
            raise MXNetError('%s: %s must be >= 1, got %d' % (self.name, self.count_param,
                                                                self.n))
        for k in ('lrs', 'wds', 'etas', 'learning_rates', 'step_count'):
            if k in self._params and len(getattr(self, k)) != self.n:
                raise MXNetError('%s: %s has %d entries but %s is %d'
                                 % (self.name, k, len(getattr(self, k)), self.count_param,
                                    self.n))

    def list_arguments(self):
        return ['%s_%d' % (r, i) for i in range(self.n) for r in self.roles] + list(self.tail)

    def list_outputs(self):
        return ['output%d' % i for i in range(self.n)] if self.n > 1 else ['output']

    def infer_shape(self, in_shapes):
        k = len(self.roles)
        ins = [None if s is None else tuple(s) for s in in_shapes]
        outs = []
        for i in range(self.n):
            group = ins[i * k:(i + 1) * k]
            s = next((x for x in group if x is not None), None)
            for r, x in zip(self.roles, group):
                if x is not None and x != s:
                    raise ShapeError('%s: input %s_%d has shape %s but %s_%d has %s'
                                     % (self.name, r, i, x, self.roles[0], i, s))
            ins[i * k:(i + 1) * k] = [s] * k
            outs.append(s)
        for j, name in enumerate(self.tail):
            ins[self.n * k + j] = self.tail_shape(name, ins[self.n * k + j])
        return ins, outs, []

    def tail_shape(self, name, s):
        return (self.n,)

    def infer_type(self, in_types):
        k = len(self.roles)
        ins = [None if t is None else np.dtype(t) for t in in_types]
        outs = []
        for i in range(self.n):
            t = None
            for r, x in zip(self.roles, ins[i * k:(i + 1) * k]):
                if x is None or r in self.f32_roles:
                    continue
                if t is not None and x != t:
                    raise TypeInferenceError('%s: input %s_%d has type %s but %s was '
                                             'expected' % (self.name, r, i, x.name, t.name))
                t = x
            if t is not None and t.kind != 'f':
                raise TypeInferenceError('%s: only floating point types are supported, not '
                                         '%s' % (self.name, t.name))
            for j, r in enumerate(self.roles):
                if r in self.f32_roles:
                    x = ins[i * k + j]
                    if x is not None and x not in (F32, F64):
                        raise TypeInferenceError('%s: input %s_%d must be float32, got %s'
                                                 % (self.name, r, i, x.name))
                    ins[i * k + j] = F32 if x is None else x
                else:
                    ins[i * k + j] = t
            outs.append(t)
        for j in range(len(self.tail)):
            if ins[self.n * k + j] is None:
                ins[self.n * k + j] = F32
        return ins, outs, []

    def forward(self, xp, inputs, aux, is_train):
        k = len(self.roles)
        tail = inputs[self.n * k:]
        outs = []
        for i in range(self.n):
            arrays = dict(zip(self.roles, inputs[i * k:(i + 1) * k]))
            if arrays['weight'].dtype.kind != 'f':
                raise MXNetError('%s: only floating point types are supported, not %s'
                                 % (self.name, arrays['weight'].dtype.name))
            new_w, new_states = self.update(xp, i, arrays, tail)
            for r, v in new_states.items():           # mutable inputs: in place
                arrays[r][...] = v
            outs.append(new_w.astype(arrays['weight'].dtype, copy=False))
        return outs

    def update(self, xp, i, a, tail):
        raise NotImplementedError


# ----------------------------------------------------------------------- SGD family
class _MultiSGD(_Multi):
    """MXNet's MultiSGDKernel: mom = momentum*mom - lr*wd*w - lr*clip(rescale_grad*g)
    (``(lr*rescale_grad)*g`` without clipping); w += mom. The ``mp_`` variants run it on
    ``weight32`` in float32."""

    rescale_grad = Param(float, 1.0)
    clip_gradient = Param(float, -1.0)
    num_weights = Param(int, 1)
    has_mom = False
    mp = False

    def lr_wd(self, xp, i, tail):
        return self.lrs[i], self.wds[i]

    def update(self, xp, i, a, tail):
        w = a['weight32'] if self.mp else a['weight']
        t = w.dtype.type
        lr, wd = (t(v) for v in self.lr_wd(xp, i, tail))
        g = a['grad'].astype(w.dtype, copy=False)
        mom = a['mom'] if self.has_mom else xp.zeros_like(w)
        m = t(self.momentum) if self.has_mom else t(0)
        c, r = t(self.clip_gradient), t(self.rescale_grad)
        if self.clip_gradient >= 0:
            mom = m * mom - lr * wd * w - lr * _clip(xp, r * g, c)
        else:
            mom = m * mom - lr * wd * w - (lr * r) * g
        w = w + mom
        new = {}
        if self.has_mom:
            new['mom'] = mom
        if self.mp:
            new['weight32'] = w
        return w, new


def _sgd_class(name, has_mom, mp, preloaded):
    roles = ('weight', 'grad') + (('mom',) if has_mom else ()) + (('weight32',) if mp else ())
    body = {'name': name, 'roles': roles, 'has_mom': has_mom, 'mp': mp,
            'mutable': tuple(r for r in roles if r in ('mom', 'weight32')),
            'f32_roles': tuple(r for r in roles if mp and r in ('mom', 'weight32')),
            '__doc__': '%s: %s, one output per weight.' % (name, ', '.join(roles))}
    if has_mom:
        body['momentum'] = Param(float, 0.0)
    if preloaded:
        body['tail'] = ('lrs', 'wds')
        body['lr_wd'] = lambda self, xp, i, tail: (tail[0].reshape(-1)[i].item(),
                                                   tail[1].reshape(-1)[i].item())
    else:
        body['lrs'] = _floats('Learning rates.')
        body['wds'] = _floats('Weight decay augments the objective function with a '
                              'regularization term that penalizes large weights.')
    cls = type(''.join(p.capitalize() for p in name.split('_')), (_MultiSGD,), body)
    cls.__module__ = __name__
    return register(cls)


for _name, _mom, _mp in (('sgd', False, False), ('sgd_mom', True, False),
                         ('mp_sgd', False, True), ('mp_sgd_mom', True, True)):
    _sgd_class('multi_%s_update' % _name, _mom, _mp, False)
    _sgd_class('preloaded_multi_%s_update' % _name, _mom, _mp, True)


# --------------------------------------------------------------------------- AdamW
class _MultiAdamW(_Multi):
    """MXNet's MultiMPAdamWKernel: g' = clip(r*g); mean = beta1*(mean - g') + g';
    var = beta2*(var - g'^2) + g'^2; w -= eta*(lr*mean/(sqrt(var) + epsilon) + wd*w),
    skipped entirely (nothing written) when ``rescale_grad`` is 0, inf or nan."""

    tail = ('rescale_grad',)
    lrs = _floats('Learning rates')
    beta1 = Param(float, 0.9)
    beta2 = Param(float, 0.999)
    epsilon = Param(float, 1e-8)
    wds = _floats('Weight decay')
    etas = _floats('Learning rates schedule multiplier')
    clip_gradient = Param(float, -1.0)
    num_weights = Param(int, 1)

    def tail_shape(self, name, s):
        return s

    def forward(self, xp, inputs, aux, is_train):
        r = float(np.float32(inputs[-1].reshape(-1)[0].item()))
        if not np.isfinite(r) or r == 0:
            k = len(self.roles)
            return [inputs[i * k].copy() for i in range(self.n)]
        return super().forward(xp, inputs, aux, is_train)

    def update(self, xp, i, a, tail):
        mp = 'weight32' in a
        w = a['weight32'] if mp else a['weight']
        t = w.dtype.type
        r = t(np.float32(tail[0].reshape(-1)[0].item()))
        g = _clip(xp, r * a['grad'].astype(w.dtype, copy=False), t(self.clip_gradient))
        b1, b2 = t(self.beta1), t(self.beta2)
        mean = b1 * (a['mean'] - g) + g
        adj = xp.square(g)
        var = b2 * (a['var'] - adj) + adj
        w = w - t(self.etas[i]) * (t(self.lrs[i]) * mean / (xp.sqrt(var) + t(self.epsilon))
                                   + t(self.wds[i]) * w)
        new = {'mean': mean, 'var': var}
        if mp:
            new['weight32'] = w
        return w, new


@register
class MultiAdamWUpdate(_MultiAdamW):
    name = '_multi_adamw_update'
    roles = ('weight', 'grad', 'mean', 'var')
    mutable = ('mean', 'var')


@register
class MultiMPAdamWUpdate(_MultiAdamW):
    name = '_multi_mp_adamw_update'
    roles = ('weight', 'grad', 'mean', 'var', 'weight32')
    mutable = ('mean', 'var', 'weight32')
    f32_roles = ('mean', 'var', 'weight32')


# ---------------------------------------------------------------------------- LAMB
def _sum_sq(xp, x):
    """MXNet's CPU MultiSumSq: ``sum += x*x`` sequentially in float32 (the product in x's
    type)."""
    if x.size == 0:
        return np.float32(0)
    sq = (x * x).reshape(-1).astype(F32, copy=False)
    return xp.cumsum(sq, dtype=F32)[-1]


class _MultiLamb(_Multi):
    """MXNet's MultiLAMBKernelStep1/2: g = mean_hat/(sqrt(var_hat) + epsilon) + wd*w;
    r1 = sqrt(sum(w^2)), r2 = sqrt(sum(g^2)) in float (r1 bounded); w -= lr*(r1/r2)*g
    (``lr`` when r1 or r2 is 0)."""

    count_param = 'num_tensors'
    learning_rates = _floats('List of learning rates')
    beta1 = Param(float, 0.9)
    beta2 = Param(float, 0.999)
    epsilon = Param(float, 1e-6)
    wds = _floats('List of Weight decays.')
    rescale_grad = Param(float, 1.0)
    lower_bound = Param(float, -1.0)
    upper_bound = Param(float, -1.0)
    clip_gradient = Param(float, -1.0)
    bias_correction = Param(bool, True)
    step_count = Param('shape', doc='Step count for each tensor')
    num_tensors = Param(int, 1)

    def update(self, xp, i, a, tail):
        mp = 'weight32' in a
        w = a['weight32'] if mp else a['weight']
        t = w.dtype.type
        g = a['grad'].astype(w.dtype, copy=False) * t(np.float32(self.rescale_grad))
        if self.clip_gradient >= 0:
            g = _clip(xp, g, t(np.float32(self.clip_gradient)))
        b1, b2 = t(np.float32(self.beta1)), t(np.float32(self.beta2))
        mean = b1 * a['mean'] + (t(1) - b1) * g
        var = b2 * a['var'] + (t(1) - b2) * g * g
        eps = t(np.float32(self.epsilon))
        if self.bias_correction:
            step = t(self.step_count[i])
            mean_hat = mean / (t(1) - b1 ** step)
            var_hat = var / (t(1) - b2 ** step)
            g = mean_hat / (xp.sqrt(var_hat) + eps) + t(np.float32(self.wds[i])) * w
        else:
            g = mean / (xp.sqrt(var) + eps) + t(np.float32(self.wds[i])) * w
        g = g.astype(F32)                               # MXNet's float temp_g
        r1 = np.sqrt(np.float32(float(_sum_sq(xp, a['weight']))))
        r2 = np.sqrt(np.float32(float(_sum_sq(xp, g))))
        if self.lower_bound >= 0:
            r1 = max(r1, np.float32(self.lower_bound))
        if self.upper_bound >= 0:
            r1 = min(r1, np.float32(self.upper_bound))
        r = t(1) if (r1 == 0 or r2 == 0) else t(np.float32(r1 / r2))
        w = w - (t(np.float32(self.learning_rates[i])) * r) * g.astype(w.dtype, copy=False)
        new = {'mean': mean, 'var': var}
        if mp:
            new['weight32'] = w
        return w, new


@register
class MultiLambUpdate(_MultiLamb):
    name = '_multi_lamb_update'
    roles = ('weight', 'grad', 'mean', 'var')
    mutable = ('mean', 'var')


@register
class MultiMPLambUpdate(_MultiLamb):
    name = '_multi_mp_lamb_update'
    roles = ('weight', 'grad', 'mean', 'var', 'weight32')
    mutable = ('mean', 'var', 'weight32')
    f32_roles = ('mean', 'var', 'weight32')


# ------------------------------------------------------------- norms, checks, resets
class _ArrayList(Operator):
    """``num_arrays`` inputs named ``array_i``."""

    no_grad = True
    needs_inputs = False
    num_arrays = Param(int, 1, doc='number of input arrays.')

    def check(self):
        if self.num_arrays < 1:
            raise MXNetError('%s: num_arrays must be >= 1, got %d' % (self.name,
                                                                      self.num_arrays))

    def list_arguments(self):
        return ['array_%d' % i for i in range(self.num_arrays)]

    def infer_shape(self, in_shapes):
        return [None if s is None else tuple(s) for s in in_shapes], [self.out_shape()], []

    def infer_type(self, in_types):
        for i, t in enumerate(in_types):
            if t is not None and np.dtype(t).kind != 'f':
                raise TypeInferenceError('%s: array_%d must be floating point, got %s'
                                         % (self.name, i, np.dtype(t).name))
        return list(in_types), [F32], []


@register
class MultiSumSq(_ArrayList):
    """The sum of squares of each input: a float32 array of shape (num_arrays,),
    accumulated sequentially in float32 as MXNet's CPU kernel."""

    name = 'multi_sum_sq'
    num_arrays = Param(int, doc='number of input arrays.')

    def out_shape(self):
        return (self.num_arrays,)

    def forward(self, xp, inputs, aux, is_train):
        return [xp.stack([xp.asarray(_sum_sq(xp, x)).reshape(()) for x in inputs])]


@register
class MultiAllFinite(_ArrayList):
    """1.0 (float32, shape (1,)) when every element of every input is finite, else 0."""

    name = 'multi_all_finite'
    init_output = Param(bool, True, doc='Initialize output to 1.')

    def out_shape(self):
        return (1,)

    def forward(self, xp, inputs, aux, is_train):
        ok = all(bool(xp.isfinite(x).all()) for x in inputs)
        return [xp.full((1,), 1.0 if ok else 0.0, dtype=F32)]


@register
class ResetArrays(_ArrayList):
    """Set every input to zero, in place; no output."""

    name = 'reset_arrays'
    num_arrays = Param(int, doc='number of input arrays.')

    def list_outputs(self):
        return []

    def infer_shape(self, in_shapes):
        return [None if s is None else tuple(s) for s in in_shapes], [], []

    def infer_type(self, in_types):
        return list(in_types), [], []

    def forward(self, xp, inputs, aux, is_train):
        for x in inputs:
            x[...] = 0
        return []


@register
class MultiLARS(Operator):
    """LARS learning rates: lrs * eta * |w| / (|g| * rescale_grad + wds * |w| + eps) from
    the squared norms, ``lrs`` where a norm is 0 (float32, as MXNet's kernel)."""

    name = 'multi_lars'
    no_grad = True
    needs_inputs = False
    eta = Param(float, doc='LARS eta')
    eps = Param(float, doc='LARS eps')
    rescale_grad = Param(float, 1.0, doc='Gradient rescaling factor')

    def list_arguments(self):
        return ['lrs', 'weights_sum_sq', 'grads_sum_sq', 'wds']

    def infer_shape(self, in_shapes):
        s = next((tuple(x) for x in in_shapes if x is not None), None)
        for n, x in zip(self.list_arguments(), in_shapes):
            if x is not None and tuple(x) != s:
                raise ShapeError('multi_lars: input %r has shape %s, expected %s'
                                 % (n, tuple(x), s))
        return [s] * 4, [s], []

    def infer_type(self, in_types):
        t = None
        for n, x in zip(self.list_arguments(), in_types):
            if x is not None and np.dtype(x) not in (F32, F64):
                raise TypeInferenceError('multi_lars: only float32 is supported; input %r '
                                         'is %s' % (n, np.dtype(x).name))
            t = t or (None if x is None else np.dtype(x))
        t = t or F32
        return [t] * 4, [t], []

    def forward(self, xp, inputs, aux, is_train):
        lrs, wss, gss, wds = inputs
        w = xp.sqrt(wss)
        ok = (w > 0) & (gss > 0)
        f = lrs.dtype.type
        den = xp.sqrt(gss) * f(self.rescale_grad) + wds * w + f(self.eps)
        lars = lrs * f(self.eta) * w / xp.where(ok, den, f(1))
        return [xp.where(ok, lars, lrs)]


@register
class GroupAdagradUpdate(Operator):
    """Group AdaGrad (one history value per row): history += mean over the row of
    clip(rescale_grad*grad)^2; weight -= lr * g' / sqrt(history + epsilon).
    ``history`` is updated in place (MXNet's mutable input)."""

    name = '_contrib_group_adagrad_update'
    no_grad = True
    needs_inputs = False
    lr = Param(float, doc='Learning rate')
    rescale_grad = Param(float, 1.0)
    clip_gradient = Param(float, -1.0)
    epsilon = Param(float, 1e-5)

    def list_arguments(self):
        return ['weight', 'grad']

    def list_auxiliary_states(self):
        return ['history']

    def infer_shape(self, in_shapes):
        w, g, h = (None if s is None else tuple(s) for s in in_shapes)
        s = w or g
        if w is not None and g is not None and w != g:
            raise ShapeError('_contrib_group_adagrad_update: weight %s and grad %s differ in '
                             'shape' % (w, g))
        if h is None and s is not None:
            h = (s[0], 1)
        if h is not None and s is not None and h[0] != s[0]:
            raise ShapeError('_contrib_group_adagrad_update: history %s must have one row '
                             'per weight row (%d)' % (h, s[0]))
        return [s, s], [s], [h]

    def infer_type(self, in_types):
        t = next((np.dtype(x) for x in in_types if x is not None), None)
        return [t, t], [t], [t]

    def forward(self, xp, inputs, aux, is_train):
        w, g = inputs
        h = aux[0]
        t = w.dtype.type
        g = _clip(xp, g * t(np.float32(self.rescale_grad)), t(np.float32(self.clip_gradient)))
        rows = g.reshape(g.shape[0], -1)
        ssq = xp.cumsum(rows * rows, axis=1, dtype=w.dtype)[:, -1]
        hist = h.reshape(h.shape[0], -1)
        hist[:, 0] += ssq / t(rows.shape[1])
        div = t(np.float32(self.lr)) * rows / xp.sqrt(hist[:, :1] + t(np.float32(self.epsilon)))
        return [w - div.reshape(w.shape)]
