"""Optimizer update operators (MXNet 1.9.1 ``src/operator/optimizer_op.cc``,
``contrib/adamw.cc``, ``contrib/all_finite.cc``): the building blocks an optimizer calls
imperatively, ``mx.nd.sgd_mom_update(weight, grad, mom, lr=0.1, momentum=0.9, out=weight)``.

Semantics, as in MXNet:

* the inputs are ``weight, grad`` then the optimizer's states (``mom``, ``mean``/``var``,
  ``n``/``g``/``delta``, ``d``/``v``/``z``, ``z``/``n``, ``weight32`` of the ``mp_``
  variants). The states are MXNet's mutable inputs (FMutateInputs), so they are auxiliary
  states of the symbol and are **updated in place**; the single output is the new weight
  (callers pass ``out=weight``). ``weight`` itself is only written through ``out``.
* ``rescale_grad`` multiplies the gradient first; ``clip_gradient`` (``clip_grad`` of
  ftml) clips it to ``[-c, c]`` when ``c >= 0`` (so 0 clips to zero) and is off when
  negative; ``wd`` is added as ``wd * weight`` either to the rescaled gradient before
  clipping (adam, rmsprop, rmspropalex, ftml) or after it (nag) or folded into the step
  (sgd, signum, signsgd, ftrl), exactly where MXNet's kernels put it. ``signsgd_update``
  ignores ``rescale_grad`` and ``clip_gradient`` as MXNet's kernel does.
* ``lazy_update`` only matters for row_sparse gradients; dense arrays update every row.
* the ``mp_`` (multi-precision) variants keep a float32 master copy ``weight32`` (and
  float32 states), compute in float32 and return ``weight32`` cast to weight's dtype.
* ``_adamw_update`` / ``_mp_adamw_update`` take ``rescale_grad`` as an array (its first
  element is used); when it is 0, inf or nan the step is skipped: states keep their values.
* ``all_finite(data)`` is a float32 array of shape (1,): 1 when every element is finite.
* float parameters are MXNet float32 fields (``beta1=0.9`` is 0.899999976); ftml's
  ``epsilon`` is a double. Integer arrays are rejected as in MXNet. No gradient.

Deliberate differences: ``_adamw_update``'s ``rescale_grad`` input is listed among the
auxiliary states (after ``mean``, ``var``) rather than the arguments, because symgraph
keeps auxiliary inputs last and MXNet's input order (weight, grad, mean, var,
rescale_grad) must be kept for JSON; when the step is skipped the output is ``weight``
(MXNet leaves a fresh output array unwritten). ``all_finite(init_output=False)`` cannot
read the previous value of ``out`` here and gives the same result as ``init_output=True``
(MXNet ANDs into ``out``). The float32 inputs of MXNet (``weight32`` and the states of the
``mp_`` variants, adamw's ``rescale_grad``) also accept float64 here. MXNet's
``nag_mom_update`` kernel writes the output before it updates ``mom`` and reads ``weight``
again for mom's ``wd`` term, so with ``out=weight`` and ``wd != 0`` MXNet's new mom uses
the new weight there; ``mx.nd`` tells the operator when ``out`` is the weight and it does
the same (with a separate ``out`` and in an executor mom uses the old weight, as MXNet's
result there). ``mp_nag_mom_update``'s
kernel always uses the new ``weight32`` for that term, and so does this one.
"""
import numpy as np

from symgraph.opdef import Operator, Param, register, ShapeError, TypeInferenceError, unify_shape

F32 = np.dtype(np.float32)
F64 = np.dtype(np.float64)


def _f(v):
    """A parameter as MXNet's float32 field holds it."""
    return float(np.float32(v))


def _clip(xp, g, c):
    return xp.clip(g, -c, c) if c >= 0 else g


def _grad_params():
    """Fresh ``wd``, ``rescale_grad``, ``clip_gradient`` parameters with MXNet's defaults,
    for ``wd, rescale_grad, clip_gradient = _grad_params()`` in a class body (the three
    are declared in that order)."""
    return Param(float, 0.0), Param(float, 1.0), Param(float, -1.0)


class _Update(Operator):
    """weight, grad + mutable states -> new weight (no gradient)."""

    no_grad = True
    needs_inputs = False
    states = ()                 # names of the mutable inputs (auxiliary states)
    f32_states = ()             # states that are always float32 (master copies)
    extra_aux = ()              # non-mutated inputs placed after the states (adamw)

    def list_arguments(self):
        return ['weight', 'grad']

    def list_outputs(self):
        return ['output']

    def list_auxiliary_states(self):
        return list(self.states) + list(self.extra_aux)

    def _same_shape_names(self):
        return ['weight', 'grad'] + list(self.states)

    def infer_shape(self, in_shapes):
        names = self._same_shape_names()
        s = None
        for i, t in enumerate(in_shapes[:len(names)]):
            try:
                s = unify_shape(s, t)
            except ShapeError:
                raise ShapeError('%s: input %r has shape %s but %s was expected from the '
                                 'other inputs (%s)' % (self.name, names[i], tuple(t), s,
                                                        ', '.join(names))) from None
        ins = [s] * len(names) + [None if t is None else tuple(t)
                                  for t in in_shapes[len(names):]]
        return ins[:2], [s], ins[2:]

    def infer_type(self, in_types):
        names = self.list_arguments() + self.list_auxiliary_states()
        fixed = set(self.f32_states) | set(self.extra_aux)
        t = None
        for n, x in zip(names, in_types):
            if x is None or n in fixed:
                continue
            x = np.dtype(x)
            if t is None:
                t = x
            elif x != t:
                raise TypeInferenceError('%s: input %r has type %s but %s was expected'
                                         % (self.name, n, x.name, t.name))
        for n, x in zip(names, in_types):
            if n in fixed and x is not None and np.dtype(x) not in (F32, F64):
                raise TypeInferenceError('%s: input %r must be float32, got %s'
                                         % (self.name, n, np.dtype(x).name))
        if t is not None and t.kind != 'f':
            raise TypeInferenceError('%s: only floating point types are supported, not %s'
                                     % (self.name, t.name))
        types = [(F32 if x is None else np.dtype(x)) if n in fixed else t
                 for n, x in zip(names, list(in_types) + [None] * len(names))]
        return types[:2], [t], types[2:]

    def forward(self, xp, inputs, aux, is_train):
        w, g = inputs
        if w.dtype.kind != 'f':
            raise TypeInferenceError('%s: only floating point types are supported, not %s'
                                     % (self.name, w.dtype.name))
        states = dict(zip(self.states, aux))
        new_w, new_states = self.update(xp, w, g, dict(states), *aux[len(self.states):])
        for k, v in new_states.items():          # MXNet's mutable inputs: in place
            states[k][...] = v
        return [new_w.astype(w.dtype, copy=False)]

    def rg(self, xp, g, dtype=None):
        """rescale_grad * grad (clipped): the gradient most kernels start from."""
        g = g if dtype is None else g.astype(dtype)
        return _clip(xp, _f(self.rescale_grad) * g, _f(self.clip_gradient))

    def lr_step(self, xp, g):
        """lr * clip(rescale_grad * grad) as the SGD kernels compute it: without clipping
        they multiply by ``lr*rescale_grad`` rounded to one float."""
        lr, c = _f(self.lr), _f(self.clip_gradient)
        if c >= 0:
            return lr * _clip(xp, _f(self.rescale_grad) * g, c)
        return _f(lr * _f(self.rescale_grad)) * g

    def update(self, xp, w, g, s):
        raise NotImplementedError



def _sign(xp, v):
    """(v > 0) - (v < 0), as MXNet's sign kernels: 0 for NaN (xp.sign gives NaN)."""
    return (v > 0).astype(v.dtype) - (v < 0).astype(v.dtype)

@register
class SGDUpdate(_Update):
    """weight = (1 - lr*wd) * weight - lr * clip(rescale_grad * grad)."""
    name = 'sgd_update'
    lr = Param(float, doc='Learning rate')
    wd, rescale_grad, clip_gradient = _grad_params()
    lazy_update = Param(bool, True)

    def update(self, xp, w, g, s):
        lr, wd = _f(self.lr), _f(self.wd)
        return _f(1 - _f(lr * wd)) * w - self.lr_step(xp, g), s


@register
class MPSGDUpdate(SGDUpdate):
    """sgd_update on the float32 master copy ``weight32``."""
    name = 'mp_sgd_update'
    states = ('weight32',)
    f32_states = ('weight32',)

    def update(self, xp, w, g, s):
        lr, wd = _f(self.lr), _f(self.wd)
        w32 = s['weight32']
        w32 = _f(1 - _f(lr * wd)) * w32 - self.lr_step(xp, g.astype(w32.dtype))
        return w32, {'weight32': w32}


@register
class SGDMomUpdate(_Update):
    """mom = momentum*mom - lr*wd*weight - lr*clip(rescale_grad*grad); weight += mom."""
    name = 'sgd_mom_update'
    states = ('mom',)
    lr = Param(float, doc='Learning rate')
    momentum = Param(float, 0.0)
    wd, rescale_grad, clip_gradient = _grad_params()
    lazy_update = Param(bool, True)

    def _step(self, xp, w, g, mom):
        """g: the raw gradient (cast to w's dtype); MXNet's kernel multiplies by
        ``lr*rescale_grad`` (one float) when it does not clip, else by lr after clipping."""
        lr, wd = _f(self.lr), _f(self.wd)
        mom = _f(self.momentum) * mom - lr * wd * w - self.lr_step(xp, g)
        return w + mom, mom

    def update(self, xp, w, g, s):
        w, mom = self._step(xp, w, g, s['mom'])
        return w, {'mom': mom}


@register
class MPSGDMomUpdate(SGDMomUpdate):
    name = 'mp_sgd_mom_update'
    states = ('mom', 'weight32')
    f32_states = ('mom', 'weight32')

    def update(self, xp, w, g, s):
        w32 = s['weight32']
        w32, mom = self._step(xp, w32, g.astype(w32.dtype), s['mom'])
        return w32, {'mom': mom, 'weight32': w32}


@register
class NAGMomUpdate(_Update):
    """g' = clip(rescale_grad*grad) + wd*weight; mom = momentum*mom - lr*g';
    weight += momentum*mom - lr*g'. MXNet's kernel writes the output before it updates
    mom and reads weight again for mom's wd term, so with ``out=weight`` (how MXNet's NAG
    optimizer calls it) mom takes the new weight there; ``mx.nd`` tells the operator when
    ``out`` is the weight (``out_is_weight``) and it does the same."""
    name = 'nag_mom_update'
    states = ('mom',)
    #: True in the variant mx.nd runs when out= is the weight array itself
    out_is_weight = False

    def in_place_variant(self):
        """The kernel mx.nd runs when out= is the weight array itself (the ``instead`` rule
        for ``'out_is_input'``)."""
        op = type(self)(**self._values)
        op._fix(out_is_weight=True)
        return op
    lr = Param(float, doc='Learning rate')
    momentum = Param(float, 0.0)
    wd, rescale_grad, clip_gradient = _grad_params()

    def _step(self, xp, w, g, mom, new_weight_in_mom):
        """MXNet's kernel: mom' = momentum*mom; w' = w - mom' + (momentum+1) * (mom' -
        lr*(g + wd*w)); mom = mom' - lr*(g + wd*w), with w' there when
        ``new_weight_in_mom``."""
        lr, m, wd = _f(self.lr), _f(self.momentum), _f(self.wd)
        mm = m * mom
        new_w = w - mm + _f(m + 1) * (mm - lr * (g + wd * w))
        wm = new_w if new_weight_in_mom else w
        return new_w, mm - lr * (g + wd * wm)

    def update(self, xp, w, g, s):
        new_w, mom = self._step(xp, w, self.rg(xp, g), s['mom'], self.out_is_weight)
        return new_w, {'mom': mom}


@register
class MPNAGMomUpdate(NAGMomUpdate):
    """nag_mom_update on ``weight32``, except that MXNet's kernel computes the new mom
    from the *new* weight32: mom = momentum*mom - lr*(g' + wd*new_weight32)."""
    name = 'mp_nag_mom_update'
    states = ('mom', 'weight32')
    f32_states = ('mom', 'weight32')

    def update(self, xp, w, g, s):
        w32 = s['weight32']
        w32, mom = self._step(xp, w32, self.rg(xp, g, w32.dtype), s['mom'], True)
        return w32, {'mom': mom, 'weight32': w32}


def _wd_grad(op, xp, w, g):
    """clip(rescale_grad*grad + wd*weight): adam, rmsprop, rmspropalex."""
    return _clip(xp, _f(op.rescale_grad) * g + _f(op.wd) * w, _f(op.clip_gradient))


def _adam_moments(op, xp, g, s, square=True):
    """The new (mean, var) of adam and adamw: b1*mean + (1-b1)*g', b2*var + (1-b2)*g'^2
    (adam's kernel multiplies ``((1-b2)*g')*g'``, adamw's ``(1-b2)*square(g')``)."""
    b1, b2 = _f(op.beta1), _f(op.beta2)
    var = b2 * s['var'] + ((1 - b2) * xp.square(g) if square else (1 - b2) * g * g)
    return b1 * s['mean'] + (1 - b1) * g, var


def _rms_sq(op, xp, w, g, n, square=True):
    """g' = clip(rescale_grad*grad + wd*weight) and the new running mean of g'^2,
    n = (1-gamma1)*g'^2 + gamma1*n: rmsprop (``square(g')``), rmspropalex (whose kernel
    multiplies ``((1-gamma1)*g')*g'``)."""
    g1 = _f(op.gamma1)
    g = _wd_grad(op, xp, w, g)
    return g, ((1 - g1) * xp.square(g) if square else (1 - g1) * g * g) + g1 * n


@register
class AdamUpdate(_Update):
    """g' = clip(rescale_grad*grad + wd*weight); mean = b1*mean + (1-b1)*g';
    var = b2*var + (1-b2)*g'^2; weight -= lr * mean / (sqrt(var) + epsilon)."""
    name = 'adam_update'
    states = ('mean', 'var')
    lr = Param(float, doc='Learning rate')
    beta1 = Param(float, 0.9)
    beta2 = Param(float, 0.999)
    epsilon = Param(float, 1e-8)
    wd, rescale_grad, clip_gradient = _grad_params()
    lazy_update = Param(bool, True)

    def update(self, xp, w, g, s):
        mean, var = _adam_moments(self, xp, _wd_grad(self, xp, w, g), s, square=False)
        w = w - _f(self.lr) * mean / (xp.sqrt(var) + _f(self.epsilon))
        return w, {'mean': mean, 'var': var}


@register
class RMSPropUpdate(_Update):
    """g' = clip(rescale_grad*grad + wd*weight); n = (1-gamma1)*g'^2 + gamma1*n;
    weight -= lr * g' / sqrt(n + epsilon), then clipped to clip_weights when >= 0."""
    name = 'rmsprop_update'
    states = ('n',)
    lr = Param(float, doc='Learning rate')
    gamma1 = Param(float, 0.95)
    epsilon = Param(float, 1e-8)
    wd, rescale_grad, clip_gradient = _grad_params()
    clip_weights = Param(float, -1.0)

    def update(self, xp, w, g, s):
        g, n = _rms_sq(self, xp, w, g, s['n'])
        w = w - _f(self.lr) * (g / xp.sqrt(n + _f(self.epsilon)))
        return _clip(xp, w, _f(self.clip_weights)), {'n': n}


@register
class RMSPropAlexUpdate(_Update):
    """Centered RMSProp (Graves 2013): n and g are running means of g'^2 and g';
    delta = gamma2*delta - lr * g' / sqrt(n - g^2 + epsilon); weight += delta."""
    name = 'rmspropalex_update'
    states = ('n', 'g', 'delta')
    lr = Param(float, doc='Learning rate')
    gamma1 = Param(float, 0.95)
    gamma2 = Param(float, 0.9)
    epsilon = Param(float, 1e-8)
    wd, rescale_grad, clip_gradient = _grad_params()
    clip_weights = Param(float, -1.0)

    def update(self, xp, w, g, s):
        g, n = _rms_sq(self, xp, w, g, s['n'], square=False)
        g1 = _f(self.gamma1)
        gm = (1 - g1) * g + g1 * s['g']
        delta = _f(self.gamma2) * s['delta'] - _f(self.lr) * g / xp.sqrt(
            n - gm * gm + _f(self.epsilon))
        w = _clip(xp, w + delta, _f(self.clip_weights))
        return w, {'n': n, 'g': gm, 'delta': delta}


@register
class SignSGDUpdate(_Update):
    """weight = (1 - lr*wd) * weight - lr * sign(grad) (rescale_grad and clip_gradient
    do not change the sign and MXNet's kernel ignores them)."""
    name = 'signsgd_update'
    lr = Param(float, doc='Learning rate')
    wd, rescale_grad, clip_gradient = _grad_params()

    def update(self, xp, w, g, s):
        lr = _f(self.lr)
        return (1 - lr * _f(self.wd)) * w - lr * _sign(xp, g), s


@register
class SignumUpdate(_Update):
    """mom = momentum*mom - (1-momentum)*(wd*weight + clip(rescale_grad*grad));
    weight = (1 - lr*wd_lh) * weight + lr * sign(mom)."""
    name = 'signum_update'
    states = ('mom',)
    lr = Param(float, doc='Learning rate')
    momentum = Param(float, 0.0)
    wd, rescale_grad, clip_gradient = _grad_params()
    wd_lh = Param(float, 0.0)

    def update(self, xp, w, g, s):
        m, lr = _f(self.momentum), _f(self.lr)
        mom = m * s['mom'] - (1 - m) * _f(self.wd) * w - (1 - m) * self.rg(xp, g)
        w = (1 - lr * _f(self.wd_lh)) * w + lr * _sign(xp, mom)
        return w, {'mom': mom}


@register
class FTMLUpdate(_Update):
    """FTML (Zheng & Kwok 2017), step t >= 1:
    g' = clip(rescale_grad*grad + wd*weight, clip_grad); v = b2*v + (1-b2)*g'^2;
    d_t = (1-b1^t)/lr * (sqrt(v/(1-b2^t)) + epsilon); z = b1*z + (1-b1)*g' - (d_t-b1*d)*w;
    d = d_t; weight = -z / d_t."""
    name = 'ftml_update'
    states = ('d', 'v', 'z')
    lr = Param(float, doc='Learning rate')
    beta1 = Param(float, 0.6)
    beta2 = Param(float, 0.999)
    epsilon = Param(float, 1e-8)
    t = Param(int, doc='Number of update')
    wd = Param(float, 0.0)
    rescale_grad = Param(float, 1.0)
    clip_grad = Param(float, -1.0)

    def update(self, xp, w, g, s):
        b1, b2, lr = _f(self.beta1), _f(self.beta2), _f(self.lr)
        g = _clip(xp, _f(self.rescale_grad) * g + _f(self.wd) * w, _f(self.clip_grad))
        v = b2 * s['v'] + (1 - b2) * xp.square(g)
        # all float, as MXNet's kernel (powf, epsilon rounded to float)
        dt = w.dtype.type
        c1 = dt(np.float32(1) - np.float32(b1) ** np.float32(self.t))
        c2 = dt(np.float32(1) - np.float32(b2) ** np.float32(self.t))
        d_t = c1 / dt(lr) * (xp.sqrt(v / c2) + dt(self.epsilon))
        d_t = d_t.astype(w.dtype, copy=False)
        z = b1 * s['z'] + (1 - b1) * g - (d_t - b1 * s['d']) * w
        return -z / d_t, {'d': d_t, 'v': v, 'z': z}


@register
class FTRLUpdate(_Update):
    """FTRL-proximal: g' = clip(rescale_grad*grad);
    z += g' - (sqrt(n + g'^2) - sqrt(n)) * weight / lr; n += g'^2;
    weight = (sign(z)*lamda1 - z) / ((beta + sqrt(n))/lr + wd) where |z| > lamda1, else 0."""
    name = 'ftrl_update'
    states = ('z', 'n')
    lr = Param(float, doc='Learning rate')
    lamda1 = Param(float, 0.01)
    beta = Param(float, 1.0)
    wd, rescale_grad, clip_gradient = _grad_params()

    def update(self, xp, w, g, s):
        lr, l1 = _f(self.lr), _f(self.lamda1)
        g = self.rg(xp, g)
        n0 = s['n']
        z = s['z'] + (g - (xp.sqrt(n0 + xp.square(g)) - xp.sqrt(n0)) * w / lr)
        n = n0 + xp.square(g)
        w = (xp.sign(z) * l1 - z) / ((_f(self.beta) + xp.sqrt(n)) / lr + _f(self.wd)) \
            * (xp.abs(z) > l1)
        return w, {'z': z, 'n': n}


@register
class AdamWUpdate(_Update):
    """AdamW (Loshchilov & Hutter): r = rescale_grad[0]; g' = clip(r*grad);
    mean = b1*mean + (1-b1)*g'; var = b2*var + (1-b2)*g'^2;
    weight -= eta * (lr * mean / (sqrt(var) + epsilon) + wd * weight).
    Skipped (states unchanged, output = weight) when r is 0, inf or nan."""
    name = '_adamw_update'
    states = ('mean', 'var')
    extra_aux = ('rescale_grad',)
    lr = Param(float, doc='Learning rate')
    beta1 = Param(float, 0.9)
    beta2 = Param(float, 0.999)
    epsilon = Param(float, 1e-8)
    wd = Param(float, 0.0)
    eta = Param(float, doc='Learning rate schedule multiplier')
    clip_gradient = Param(float, -1.0)

    def _step(self, xp, w, g, s, rescale):
        r = rescale.reshape(-1)[:1].astype(w.dtype)
        ok = xp.isfinite(r) & (r != 0)
        r = xp.where(ok, r, xp.zeros_like(r))       # no inf/nan arithmetic when skipped
        g = _clip(xp, r * g, _f(self.clip_gradient))
        mean, var = _adam_moments(self, xp, g, s)
        new_w = w - _f(self.eta) * (_f(self.lr) * mean / (xp.sqrt(var) + _f(self.epsilon))
                                    + _f(self.wd) * w)
        new = {'mean': mean, 'var': var}
        return (xp.where(ok, new_w, w),
                {k: xp.where(ok, v, s[k]) for k, v in new.items()})

    def update(self, xp, w, g, s, rescale):
        return self._step(xp, w, g, s, rescale)


@register
class MPAdamWUpdate(AdamWUpdate):
    """_adamw_update on the float32 master copy ``weight32`` (float32 mean and var)."""
    name = '_mp_adamw_update'
    states = ('mean', 'var', 'weight32')
    f32_states = ('mean', 'var', 'weight32')

    def update(self, xp, w, g, s, rescale):
        w32, new = self._step(xp, s['weight32'], g.astype(s['weight32'].dtype), s, rescale)
        new['weight32'] = w32
        return w32, new


@register
class AllFinite(Operator):
    """1.0 (float32, shape (1,)) when every element of ``data`` is finite, else 0.0."""
    name = 'all_finite'
    no_grad = True
    needs_inputs = False
    init_output = Param(bool, True)

    def infer_shape(self, in_shapes):
        return [None if in_shapes[0] is None else tuple(in_shapes[0])], [(1,)], []

    def infer_type(self, in_types):
        t = in_types[0]
        if t is not None and np.dtype(t).kind != 'f':
            raise TypeInferenceError('all_finite: only floating point types are supported, '
                                     'not %s' % np.dtype(t).name)
        return [t], [F32], []

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        if x.dtype.kind != 'f':
            raise TypeInferenceError('all_finite: only floating point types are supported, not %s'
                                     % x.dtype.name)
        return [xp.isfinite(x).all().reshape(1).astype(F32)]
