"""LAMB update operators (MXNet 1.9.1 ``src/operator/optimizer_op.cc``): the two phases the
LAMB optimizer calls, ``g = lamb_update_phase1(weight, grad, mean, var, ...)`` then
``lamb_update_phase2(weight, g, r1, r2, lr=..., out=weight)`` with ``r1 = ||weight||`` and
``r2 = ||g||``; ``mp_`` variants for float16 weights with a float32 master copy.

As MXNet's kernels (checked bit for bit on float32):

* phase 1: ``g' = clip(rescale_grad * grad)``; ``mean = beta1*mean + (1-beta1)*g'`` and
  ``var = beta2*var + (1-beta2)*g'^2`` in place; with ``bias_correction`` the moments are
  divided by ``1 - beta^t`` computed in float (``powf``); the output is
  ``mean_hat / (sqrt(var_hat) + epsilon) + wd * weight``.
* phase 2: ``r1`` is raised to ``lower_bound`` and cut to ``upper_bound`` when those are
  >= 0; the rate is ``lr * (r1 / r2)``, or ``lr`` when r1 or r2 is 0; the output is
  ``weight - rate * g``.
* ``mp_lamb_update_phase1`` computes from ``weight32`` and the gradient cast to float32 and
  gives a float32 ``g``; ``mp_lamb_update_phase2`` gives ``weight32 - rate * g`` cast to the
  weight's type and, as MXNet 1.9.1's kernel, does not write ``weight32`` (an argument here,
  not a state); the LAMB optimizer updates the master copy itself.
* Types as MXNet 1.9.1 fixes them (its MPLambPhaseOneType / MP_InferType): phase 1 takes
  float16 ``weight`` and ``grad`` and float32 ``mean``, ``var`` and ``weight32``; phase 2
  a float ``weight`` (the output's type) and float32 ``g``, ``r1``, ``r2`` and
  ``weight32``. Anything else is a ``TypeInferenceError`` (a TypeError) naming the input
  and its type.
"""
import numpy as np

from symgraph.opdef import Param, register, ShapeError, TypeInferenceError

from .optimizer_updates import F32, _Update, _clip, _f

F16 = np.dtype(np.float16)


def _powf(b, t):
    """beta ** t in float (C's powf), as MXNet's kernel."""
    return np.float32(b) ** np.float32(t)


class _Phase1(_Update):
    states = ('mean', 'var')
    beta1 = Param(float, 0.9)
    beta2 = Param(float, 0.999)
    epsilon = Param(float, 1e-6)
    t = Param(int, doc='Index update count.')
    bias_correction = Param(bool, True)
    wd = Param(float, doc='Weight decay')
    rescale_grad = Param(float, 1.0)
    clip_gradient = Param(float, -1.0)

    def phase1(self, xp, w, g, s):
        dtype = w.dtype.type
        b1, b2 = _f(self.beta1), _f(self.beta2)
        g = _clip(xp, _f(self.rescale_grad) * g, _f(self.clip_gradient))
        mean = b1 * s['mean'] + (1 - b1) * g
        var = b2 * s['var'] + (1 - b2) * g * g
        if self.bias_correction:
            # float arithmetic as the kernel: 1 - powf(beta, t)
            mean_hat = mean / dtype(np.float32(1) - _powf(b1, self.t))
            var_hat = var / dtype(np.float32(1) - _powf(b2, self.t))
        else:
            mean_hat, var_hat = mean, var
        out = mean_hat / (xp.sqrt(var_hat) + _f(self.epsilon)) + _f(self.wd) * w
        return out, {'mean': mean, 'var': var}


@register
class LambUpdatePhase1(_Phase1):
    """g = mean_hat / (sqrt(var_hat) + epsilon) + wd * weight, updating mean and var."""
    name = 'lamb_update_phase1'

    def update(self, xp, w, g, s):
        return self.phase1(xp, w, g, s)


@register
class MPLambUpdatePhase1(_Phase1):
    """lamb_update_phase1 on the float32 ``weight32`` (float32 output, mean and var)."""
    name = 'mp_lamb_update_phase1'
    states = ('mean', 'var', 'weight32')
    f32_states = ('mean', 'var', 'weight32')

    #: MXNet's MPLambPhaseOneType: the types it assigns (and requires)
    TYPES = {'weight': F16, 'grad': F16, 'mean': F32, 'var': F32, 'weight32': F32}

    def infer_type(self, in_types):
        names = self.list_arguments() + self.list_auxiliary_states()
        _require(self.name, names, in_types, self.TYPES,
                 'float16 weight and grad, float32 mean, var and weight32')
        types = [self.TYPES[n] for n in names]
        return types[:2], [F32], types[2:]

    def forward(self, xp, inputs, aux, is_train):
        w, g = inputs
        mean, var, w32 = aux
        out, new = self.phase1(xp, w32, g.astype(w32.dtype), {'mean': mean, 'var': var})
        mean[...] = new['mean']
        var[...] = new['var']
        return [out]


def _require(op, names, in_types, want, rule):
    for n, t in zip(names, in_types):
        if t is not None and n in want and np.dtype(t) != want[n]:
            raise TypeInferenceError('%s: input %r is %s, but must be %s (MXNet 1.9.1 takes %s)'
                                     % (op, n, np.dtype(t).name, want[n].name, rule))


class _Phase2(_Update):
    lr = Param(float, doc='Learning rate')
    lower_bound = Param(float, -1.0)
    upper_bound = Param(float, -1.0)

    def list_arguments(self):
        return ['weight', 'g', 'r1', 'r2']

    def infer_shape(self, in_shapes):
        names = self.list_arguments()
        shapes = [None if s is None else tuple(s) for s in in_shapes]
        s = shapes[0] if shapes[0] is not None else shapes[1]
        for i in (0, 1):
            if shapes[i] is not None and s is not None and shapes[i] != s:
                raise ShapeError('%s: input %r has shape %s but %s was expected from the '
                                 'other inputs (weight, g)' % (self.name, names[i],
                                                               shapes[i], s))
        for i in (2, 3):
            if shapes[i] is not None and tuple(shapes[i]) != (1,):
                raise ShapeError('%s: input %r must have shape (1,), got %s'
                                 % (self.name, names[i], shapes[i]))
        ins = [s, s, (1,), (1,)] + [s] * (len(shapes) - 4)
        return ins, [s], []

    def infer_type(self, in_types):
        t = in_types[0]
        if t is not None and np.dtype(t).kind != 'f':
            raise TypeInferenceError('%s: only floating point types are supported, not %s'
                                     % (self.name, np.dtype(t).name))
        return [t] + [None if x is None else np.dtype(x) for x in in_types[1:]], [t], []

    def rate(self, xp, r1, r2):
        """The adjusted learning rate as a (1,) array of g's type."""
        lr = np.float32(self.lr)
        r1 = r1.reshape(-1)[:1].astype(F32)
        r2 = r2.reshape(-1)[:1].astype(F32)
        if self.lower_bound >= 0:
            r1 = xp.maximum(r1, np.float32(self.lower_bound))
        if self.upper_bound >= 0:
            r1 = xp.minimum(r1, np.float32(self.upper_bound))
        ok = (r1 != 0) & (r2 != 0)
        safe = xp.where(ok, r2, np.float32(1))
        return xp.where(ok, lr * (r1 / safe), lr)


@register
class LambUpdatePhase2(_Phase2):
    """weight - lr * (r1 / r2) * g (the plain rate when r1 or r2 is 0)."""
    name = 'lamb_update_phase2'

    def forward(self, xp, inputs, aux, is_train):
        w, g, r1, r2 = inputs
        return [(w - self.rate(xp, r1, r2).astype(w.dtype) * g).astype(w.dtype, copy=False)]


@register
class MPLambUpdatePhase2(_Phase2):
    """(weight32 - lr * (r1 / r2) * g) cast to the weight's type; weight32 is read only."""
    name = 'mp_lamb_update_phase2'

    def list_arguments(self):
        return ['weight', 'g', 'r1', 'r2', 'weight32']

    def infer_type(self, in_types):
        # MXNet's MP_InferType<1, 1, 5>: weight and the output alike, the rest float32
        names = self.list_arguments()
        _require(self.name, names, in_types, {n: F32 for n in names[1:]},
                 'float32 g, r1, r2 and weight32')
        t = in_types[0]
        if t is not None and np.dtype(t).kind != 'f':
            raise TypeInferenceError('%s: input \'weight\' is %s; only floating point types '
                                     'are supported' % (self.name, np.dtype(t).name))
        t = None if t is None else np.dtype(t)
        return [t, F32, F32, F32, F32], [t], []

    def forward(self, xp, inputs, aux, is_train):
        w, g, r1, r2, w32 = inputs
        new = w32 - self.rate(xp, r1, r2).astype(w32.dtype) * g.astype(w32.dtype)
        return [new.astype(w.dtype)]
