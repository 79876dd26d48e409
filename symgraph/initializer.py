"""Initializers (``mx.init``), dispatching on parameter names as MXNet does.

Only ``*_weight`` gets the initializer's distribution; biases and ``beta`` are 0, ``gamma``
1, ``moving_mean`` 0 and ``moving_var`` 1, so even ``mx.init.Zero()`` leaves gamma at 1.
A Variable's ``__init__`` attribute (``init=`` at creation) overrides the global one.
"""
from __future__ import annotations

import json

import numpy as np

from .base import MXNetError

__all__ = ['InitDesc', 'Initializer', 'Zero', 'One', 'Constant', 'Uniform', 'Normal',
           'Xavier', 'MSRAPrelu', 'Orthogonal', 'Bilinear', 'LSTMBias', 'Load', 'Mixed',
           'create', 'register']

_REGISTRY = {}


def register(cls):
    """Register an initializer class under its lower-case name (for ``__init__`` JSON)."""
    _REGISTRY[cls.__name__.lower()] = cls
    for a in getattr(cls, '_aliases', ()):
        _REGISTRY[a] = cls
    return cls


class InitDesc(str):
    """A parameter name with its attributes (``attrs['__init__']`` selects an initializer)."""

    def __new__(cls, name, attrs=None, global_init=None):
        ret = super().__new__(cls, name)
        ret.attrs = attrs or {}
        ret.global_init = global_init
        return ret


class Initializer:
    """Base class: ``init(desc, arr)`` fills ``arr`` (an NDArray) by the name rules."""

    def __init__(self, **kwargs):
        self._kwargs = kwargs

    def dumps(self):
        """``'["name", {kwargs}]'`` as stored in ``__init__`` attributes."""
        return json.dumps([self.__class__.__name__.lower(), self._kwargs])

    def __call__(self, desc, arr):
        if not isinstance(desc, InitDesc):
            desc = InitDesc(str(desc))
        init = desc.attrs.get('__init__', '')
        if init:
            create(init)._init_weight(desc, arr)
            return
        name = str(desc)
        if name.endswith('weight'):
            self._init_weight(desc, arr)
        elif name.endswith('bias') or name.endswith('beta') or name.endswith('moving_mean') \
                or name.endswith('running_mean') or name.endswith('min'):
            arr[:] = 0.0
        elif name.endswith('gamma') or name.endswith('moving_var') \
                or name.endswith('running_var') or name.endswith('moving_inv_var') \
                or name.endswith('max'):
            arr[:] = 1.0
        else:
            self._init_default(desc, arr)

    def _init_weight(self, name, arr):
        raise NotImplementedError('%s must override _init_weight' % type(self).__name__)

    def _init_default(self, name, arr):
        raise MXNetError('Unknown initialization pattern for %s. Default initialization is '
                         'now limited to "weight", "bias", "gamma" (1.0), and "beta" (0.0). '
                         'Please use mx.sym.Variable(init=mx.init.*) to set initialization '
                         'pattern' % name)

    def __repr__(self):
        return self.dumps()


@register
class Zero(Initializer):
    _aliases = ('zeros',)

    def _init_weight(self, _, arr):
        arr[:] = 0.0


@register
class One(Initializer):
    _aliases = ('ones',)

    def _init_weight(self, _, arr):
        arr[:] = 1.0


@register
class Constant(Initializer):
    def __init__(self, value):
        super().__init__(value=value)
        self.value = value

    def _init_weight(self, _, arr):
        arr[:] = self.value


@register
class Uniform(Initializer):
    def __init__(self, scale=0.07):
        super().__init__(scale=scale)
        self.scale = scale

    def _init_weight(self, _, arr):
        arr[:] = np.random.uniform(-self.scale, self.scale, arr.shape)


@register
class Normal(Initializer):
    def __init__(self, sigma=0.01):
        super().__init__(sigma=sigma)
        self.sigma = sigma

    def _init_weight(self, _, arr):
        arr[:] = np.random.normal(0, self.sigma, arr.shape)


@register
class Xavier(Initializer):
    """Glorot init: uniform or gaussian with scale sqrt(magnitude / factor)."""

    def __init__(self, rnd_type='uniform', factor_type='avg', magnitude=3):
        super().__init__(rnd_type=rnd_type, factor_type=factor_type, magnitude=magnitude)
        self.rnd_type, self.factor_type, self.magnitude = rnd_type, factor_type, \
            float(magnitude)

    def _init_weight(self, name, arr):
        shape = arr.shape
        hw = float(np.prod(shape[2:])) if len(shape) > 2 else 1.0
        if len(shape) < 2:
            raise MXNetError('Xavier initializer cannot be applied to vector %s; it needs at '
                             'least 2D' % name)
        fan_in, fan_out = shape[1] * hw, shape[0] * hw
        factor = {'avg': (fan_in + fan_out) / 2.0, 'in': fan_in, 'out': fan_out}.get(
            self.factor_type)
        if factor is None:
            raise ValueError('Incorrect factor type %r' % self.factor_type)
        scale = np.sqrt(self.magnitude / factor)
        if self.rnd_type == 'uniform':
            arr[:] = np.random.uniform(-scale, scale, shape)
        elif self.rnd_type == 'gaussian':
            arr[:] = np.random.normal(0, scale, shape)
        else:
            raise ValueError('Unknown random type %r' % self.rnd_type)


@register
class MSRAPrelu(Xavier):
    def __init__(self, factor_type='avg', slope=0.25):
        magnitude = 2.0 / (1 + slope ** 2)
        super().__init__('gaussian', factor_type, magnitude)
        self._kwargs = {'factor_type': factor_type, 'slope': slope}


@register
class Orthogonal(Initializer):
    def __init__(self, scale=1.414, rand_type='uniform'):
        super().__init__(scale=scale, rand_type=rand_type)
        self.scale, self.rand_type = scale, rand_type

    def _init_weight(self, _, arr):
        nout = arr.shape[0]
        nin = int(np.prod(arr.shape[1:]))
        tmp = np.random.uniform(-1.0, 1.0, (nout, nin)) if self.rand_type == 'uniform' \
            else np.random.normal(0.0, 1.0, (nout, nin))
        u, _, v = np.linalg.svd(tmp, full_matrices=False)
        q = u if u.shape == tmp.shape else v
        arr[:] = (self.scale * q).reshape(arr.shape)


@register
class Bilinear(Initializer):
    """Bilinear-interpolation kernels (UpSampling's bilinear weight, as MXNet fills it)."""

    def __init__(self):
        super().__init__()

    def _init_weight(self, _, arr):
        shape = arr.shape
        f = np.ceil(shape[3] / 2.0)
        c = (2 * f - 1 - f % 2) / (2.0 * f)
        i = np.arange(int(np.prod(shape)))
        x = i % shape[3]
        y = (i // shape[3]) % shape[2]
        weight = (1 - np.abs(x / f - c)) * (1 - np.abs(y / f - c))
        arr[:] = weight.astype(np.float32).reshape(shape)


@register
class LSTMBias(Initializer):
    """Zero LSTM biases except the forget gate's (the second quarter), ``forget_bias``."""

    def __init__(self, forget_bias=1.0):
        super().__init__(forget_bias=forget_bias)
        self.forget_bias = forget_bias

    def _init_weight(self, _, arr):
        arr[:] = 0.0
        n = int(arr.shape[0] / 4)
        arr[n:2 * n] = self.forget_bias


class Load:
    """Initialize from saved arrays (a dict, or a ``.params`` file whose ``arg:``/``aux:``
    prefixes are dropped); names not found go to ``default_init`` or raise."""

    def __init__(self, param, default_init=None, verbose=False):
        if isinstance(param, str):
            from .ndarray import load
            param = load(param)
        if not isinstance(param, dict):
            raise TypeError('Load takes a dict of arrays or a .params file of a dict')
        self.param = {}
        for name, arr in param.items():
            if name.startswith('arg:') or name.startswith('aux:'):
                name = name[4:]
            self.param[name] = arr
        self.default_init = default_init
        self.verbose = verbose

    def __call__(self, name, arr):
        name = str(name)
        if name in self.param:
            value = self.param[name]
            if tuple(value.shape) != tuple(arr.shape):
                raise MXNetError('Load: parameter %s has shape %s in the file but %s here'
                                 % (name, tuple(value.shape), tuple(arr.shape)))
            arr[:] = value
            if self.verbose:
                print('Initialized %s by loading' % name)
        else:
            if self.default_init is None:
                raise MXNetError('Load: cannot initialize %s: it is not among the loaded '
                                 'parameters and there is no default_init' % name)
            self.default_init(name, arr)
            if self.verbose:
                print('Initialized %s by default' % name)


class Mixed:
    """Different initializers for names matching different regular expressions."""

    def __init__(self, patterns, initializers):
        import re
        self.map = list(zip([re.compile(p) for p in patterns], initializers))

    def __call__(self, name, arr):
        for prog, init in self.map:
            if prog.match(str(name)):
                init(name, arr)
                return
        raise ValueError('Parameter name %s did not match any pattern' % name)


def create(spec):
    """An initializer from a name, an instance or ``'["name", {kwargs}]'`` JSON."""
    if isinstance(spec, Initializer):
        return spec
    if isinstance(spec, str):
        s = spec.strip()
        if s.startswith('['):
            name, kwargs = json.loads(s)
        else:
            name, kwargs = s, {}
        cls = _REGISTRY.get(name.lower())
        if cls is None:
            raise MXNetError('unknown initializer %r; known: %s' % (name, sorted(_REGISTRY)))
        return cls(**kwargs)
    raise TypeError('cannot create an initializer from %r' % (spec,))
