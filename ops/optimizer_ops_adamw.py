"""AdamW and all_finite (MXNet 1.9.1 ``contrib/adamw.cc``, ``contrib/all_finite.cc``): the
second half of the optimizer update family; see ``optimizer_ops`` for the shared semantics
and the deliberate differences (``rescale_grad`` listed as an auxiliary state, a skipped
step returning ``weight``, ``all_finite(init_output=False)`` not reading ``out``).
"""
import numpy as np

from symgraph.opdef import Operator, Param, register, TypeInferenceError, MXNetError

from .optimizer_ops import F32, _Update, _adam_moments, _clip, _f


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
            raise MXNetError('all_finite: only floating point types are supported, not %s'
                             % x.dtype.name)
        return [xp.isfinite(x).all().reshape(1).astype(F32)]
