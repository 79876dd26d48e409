"""Initializers (``mx.init``), dispatching on parameter names as MXNet does.

Only ``*_weight`` gets the initializer's distribution; biases and ``beta`` are 0, ``gamma``
1, ``moving_mean`` 0 and ``moving_var`` 1, so even ``mx.init.Zero()`` leaves gamma at 1.
A Variable's ``__init__`` attribute (``init=`` at creation) overrides the global one.
"""
from __future__ import annotations

import json
import logging
import re
import warnings

import numpy as np

from .base import MXNetError, ArgumentError, ArgumentTypeError, ShapeError, UnknownNameError, \
    is_bfloat16

__all__ = ['InitDesc', 'Initializer', 'Zero', 'One', 'Constant', 'Uniform', 'Normal',
           'Xavier', 'MSRAPrelu', 'Orthogonal', 'Bilinear', 'LSTMBias', 'Load', 'Mixed',
           'InitializerError', 'create', 'register', 'alias']

_REGISTRY = {}


class InitializerError(MXNetError, ValueError):
    """A parameter an initializer cannot fill (MXNet raises ValueError)."""


def register(cls):
    """Register an initializer class under its lower-case name (for ``__init__`` JSON and
    :func:`create`); aliases come from :func:`alias` or ``_aliases``."""
    if not (isinstance(cls, type) and issubclass(cls, Initializer)):
        raise ArgumentTypeError('mx.init.register takes a subclass of mx.init.Initializer, got %r'
                                % (cls,))
    _REGISTRY[cls.__name__.lower()] = cls
    for a in getattr(cls, '_aliases', ()):
        _REGISTRY[a.lower()] = cls
    return cls


def alias(*aliases):
    """Class decorator: also register the initializer under ``aliases``."""
    def reg(cls):
        cls._aliases = tuple(getattr(cls, '_aliases', ())) + tuple(aliases)
        for a in aliases:
            _REGISTRY[a.lower()] = cls
        return cls
    return reg


class InitDesc(str):
    """A parameter name with its attributes (``attrs['__init__']`` selects an initializer)."""

    def __new__(cls, name, attrs=None, global_init=None):
        ret = super().__new__(cls, name)
        ret.attrs = attrs or {}
        ret.global_init = global_init
        return ret


class Initializer:
    """Base class: ``init(desc, arr)`` fills ``arr`` (an NDArray) by the name rules.

    Subclasses override ``_init_weight`` and may override ``_init_bias``, ``_init_gamma``,
    ``_init_beta``, ``_init_zero``, ``_init_one``, as in MXNet.
    """

    def __init__(self, **kwargs):
        self._kwargs = kwargs
        self._verbose = False
        self._print_func = None

    def set_verbosity(self, verbose=False, print_func=None):
        """Log each initialized array (``print_func(arr)``: default its RMS) at INFO."""
        self._verbose = verbose
        if print_func is None:
            def print_func(x):
                a = x.asnumpy().astype(np.float64)
                return str(np.sqrt((a * a).sum() / max(a.size, 1)))
        self._print_func = print_func
        return self

    def _verbose_print(self, desc, init, arr):
        if self._verbose and self._print_func:
            logging.info('Initialized %s as %s: %s', desc, init, self._print_func(arr))

    def dumps(self):
        """``'["name", {kwargs}]'`` as stored in ``__init__`` attributes."""
        return json.dumps([self.__class__.__name__.lower(), self._kwargs])

    def __call__(self, desc, arr):
        if not isinstance(desc, InitDesc):
            self._legacy_init(desc, arr)
            return
        if desc.global_init is None:
            desc.global_init = self
        init = desc.attrs.get('__init__', '')
        if init:
            create(init)._init_weight(desc, arr)
            self._verbose_print(desc, init, arr)
            return
        for suffixes, method in _DISPATCH:
            if desc.endswith(suffixes):
                getattr(self, method)(desc, arr)
                self._verbose_print(desc, method[len('_init_'):], arr)
                return
        self._init_default(desc, arr)

    def _legacy_init(self, name, arr):
        """``init('name', arr)``: MXNet's older name rules (deprecated there too)."""
        warnings.warn('Calling initializer with init(str, NDArray) has been deprecated. '
                      'please use init(mx.init.InitDesc(...), NDArray) instead.',
                      DeprecationWarning, stacklevel=3)
        if not isinstance(name, str):
            raise ArgumentTypeError('name must be string')
        if name.startswith('upsampling'):
            self._init_bilinear(name, arr)
        elif name.startswith('stn_loc') and name.endswith('weight'):
            self._init_zero(name, arr)
        elif name.startswith('stn_loc') and name.endswith('bias'):
            self._init_loc_bias(name, arr)
        else:
            for suffixes, method in _LEGACY_DISPATCH:
                if name.endswith(suffixes):
                    getattr(self, method)(name, arr)
                    return
            self._init_default(name, arr)

    def _init_bilinear(self, _, arr):
        arr[:] = _bilinear(arr.shape)

    def _init_loc_bias(self, _, arr):
        if arr.shape[0] != 6:
            raise InitializerError('a spatial transformer location bias has 6 entries, '
                                   'got shape %s' % (arr.shape,))
        arr[:] = np.array([1.0, 0, 0, 0, 1.0, 0])

    def _init_zero(self, _, arr):
        arr[:] = 0.0

    def _init_one(self, _, arr):
        arr[:] = 1.0

    def _init_bias(self, _, arr):
        arr[:] = 0.0

    def _init_gamma(self, _, arr):
        arr[:] = 1.0

    def _init_beta(self, _, arr):
        arr[:] = 0.0

    def _init_quantized_weight(self, _, arr):
        # MXNet draws one integer in [-127, 127) (its randint without a shape) for the
        # whole int8 array of a quantized model's weight
        arr[:] = np.int8(np.random.randint(-127, 127))

    def _init_quantized_bias(self, _, arr):
        arr[:] = 0

    def _init_weight(self, name, arr):
        raise NotImplementedError('%s must override _init_weight' % type(self).__name__)

    def _init_default(self, name, arr):
        raise InitializerError(
            'Unknown initialization pattern for %s. Default initialization is now limited to '
            '"weight", "bias", "gamma" (1.0), and "beta" (0.0). Please use '
            'mx.sym.Variable(init=mx.init.*) to set initialization pattern' % name)

    def __eq__(self, other):
        if not isinstance(other, Initializer):
            return NotImplemented
        return type(self) is type(other) and self._kwargs == other._kwargs

    __hash__ = object.__hash__

    def __repr__(self):
        return self.dumps()


#: name suffix -> method, in MXNet's order (moving/running statistics too: symgraph fills
#: them by name where MXNet needs their __init__ attribute)
_DISPATCH = (
    (('weight',), '_init_weight'), (('bias',), '_init_bias'), (('gamma',), '_init_gamma'),
    (('beta',), '_init_beta'), (('min',), '_init_zero'), (('max',), '_init_one'),
    (('weight_quantize',), '_init_quantized_weight'),
    (('bias_quantize',), '_init_quantized_bias'),
    (('moving_mean', 'running_mean'), '_init_zero'),
    (('moving_var', 'running_var'), '_init_one'),
)
#: MXNet's legacy ``init(str, arr)`` rules after the upsampling/stn_loc prefixes
_LEGACY_DISPATCH = (
    (('bias',), '_init_bias'), (('gamma',), '_init_gamma'), (('beta',), '_init_beta'),
    (('weight',), '_init_weight'), (('moving_mean',), '_init_zero'),
    (('moving_var',), '_init_one'), (('moving_inv_var',), '_init_zero'),
    (('moving_avg',), '_init_zero'), (('min',), '_init_zero'), (('max',), '_init_one'),
)


def _bilinear(shape):
    """Bilinear-interpolation kernels of ``shape`` (N, C, H, W), as MXNet fills them."""
    f = np.ceil(shape[3] / 2.0)
    c = (2 * f - 1 - f % 2) / (2.0 * f)
    i = np.arange(int(np.prod(shape)))
    x = i % shape[3]
    y = (i // shape[3]) % shape[2]
    weight = (1 - np.abs(x / f - c)) * (1 - np.abs(y / f - c))
    return weight.astype(np.float32).reshape(shape)


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

    def dumps(self):
        # as MXNet: an array value is stored as a list, in ``_kwargs`` too (MXNet's
        # test_const_init_dumps compares the text with ``json.dumps`` of ``_kwargs``)
        value = self._kwargs['value']
        if hasattr(value, 'asnumpy'):
            value = value.asnumpy()
        if isinstance(value, np.ndarray):
            value = value.tolist()
        elif isinstance(value, np.generic):
            value = value.item()        # MXNet fails here: a NumPy scalar is not JSON
        self._kwargs['value'] = value
        return json.dumps([self.__class__.__name__.lower(), self._kwargs])

    def _init_weight(self, _, arr):
        arr[:] = self.value


def _check_float(arr, what):
    # MXNet's samplers write only floating-point arrays
    if np.dtype(arr.dtype).kind != 'f' and not is_bfloat16(arr.dtype):
        raise InitializerError('%s: output type must be float16, float32 or float64, got %s'
                               % (what, np.dtype(arr.dtype).name))


@register
class Uniform(Initializer):
    def __init__(self, scale=0.07):
        super().__init__(scale=scale)
        self.scale = scale

    def _init_weight(self, name, arr):
        _check_float(arr, 'Uniform for %s' % name)
        arr[:] = np.random.uniform(-self.scale, self.scale, arr.shape)


@register
class Normal(Initializer):
    def __init__(self, sigma=0.01):
        super().__init__(sigma=sigma)
        self.sigma = sigma

    def _init_weight(self, name, arr):
        _check_float(arr, 'Normal for %s' % name)
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
            raise InitializerError('Xavier initializer cannot be applied to vector %s; it '
                                   'needs at least 2D' % name)
        _check_float(arr, 'Xavier for %s' % name)
        fan_in, fan_out = shape[1] * hw, shape[0] * hw
        factor = {'avg': (fan_in + fan_out) / 2.0, 'in': fan_in, 'out': fan_out}.get(
            self.factor_type)
        if factor is None:
            raise ArgumentError('Incorrect factor type %r' % self.factor_type)
        scale = np.sqrt(self.magnitude / factor)
        if self.rnd_type == 'uniform':
            arr[:] = np.random.uniform(-scale, scale, shape)
        elif self.rnd_type == 'gaussian':
            arr[:] = np.random.normal(0, scale, shape)
        else:
            raise ArgumentError('Unknown random type %r' % self.rnd_type)


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
        if rand_type not in ('uniform', 'normal'):
            raise InitializerError("Orthogonal: rand_type must be 'uniform' or 'normal', "
                                   'got %r' % (rand_type,))
        self.scale, self.rand_type = scale, rand_type

    def _init_weight(self, name, arr):
        _check_float(arr, 'Orthogonal for %s' % name)
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
        arr[:] = _bilinear(arr.shape)


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
            raise ArgumentTypeError('Load takes a dict of arrays or a .params file of a dict')
        self.param = {}
        for name, arr in param.items():
            if name.startswith('arg:') or name.startswith('aux:'):
                name = name[4:]
            self.param[name] = arr
        self.default_init = default_init
        self.verbose = verbose

    def __call__(self, name, arr):
        key = str(name)
        if key in self.param:
            value = self.param[key]
            if tuple(value.shape) != tuple(arr.shape):
                raise ShapeError('Load: parameter %s has shape %s in the file but %s here'
                                 % (key, tuple(value.shape), tuple(arr.shape)))
            arr[:] = value
            if self.verbose:
                logging.info('Initialized %s by loading', key)
        else:
            if self.default_init is None:
                raise UnknownNameError('Load: cannot initialize %s: it is not among the loaded '
                                       'parameters and there is no default_init' % key)
            self.default_init(name, arr)        # the InitDesc itself, attributes and all
            if self.verbose:
                logging.info('Initialized %s by default', key)


class Mixed:
    """Different initializers for names matching different regular expressions."""

    def __init__(self, patterns, initializers):
        if len(patterns) != len(initializers):
            raise InitializerError('Mixed: %d patterns but %d initializers'
                                   % (len(patterns), len(initializers)))
        self.map = list(zip([re.compile(p) for p in patterns], initializers))

    def __call__(self, name, arr):
        for prog, init in self.map:
            if prog.match(str(name)):
                init(name, arr)
                return
        raise ArgumentError('Parameter name %s did not match any pattern' % name)


def create(*args, **kwargs):
    """An initializer, as MXNet's registry makes one: ``create('xavier', magnitude=2)``,
    ``create(initializer='normal', sigma=0.3)``, an instance, a dict of those keywords, or
    the JSON ``'["name", {kwargs}]'`` / ``'{"initializer": "name", ...}'``."""
    if args:
        spec, args = args[0], args[1:]
    elif 'initializer' in kwargs:
        spec = kwargs.pop('initializer')
    else:
        raise ArgumentTypeError('create needs an initializer name, instance or JSON')
    if isinstance(spec, Initializer):
        if args or kwargs:
            raise ArgumentTypeError('create(%r) takes no further arguments' % (spec,))
        return spec
    if isinstance(spec, dict):
        return create(**spec)
    if not isinstance(spec, str):
        raise ArgumentTypeError('cannot create an initializer from %r' % (spec,))
    s = spec.strip()
    if s.startswith('[') or s.startswith('{'):
        if args or kwargs:
            raise ArgumentTypeError('create(%r) takes no further arguments' % (spec,))
        loaded = json.loads(s)
        if isinstance(loaded, dict):
            return create(**loaded)
        name, kw = loaded
        return create(name, **kw)
    cls = _REGISTRY.get(s.lower())
    if cls is None:
        raise InitializerError('unknown initializer %r; known: %s' % (spec, sorted(_REGISTRY)))
    return cls(*args, **kwargs)


def __getattr__(name):
    """Initializers registered by other modules, by class name (``mx.init.FusedRNN``, which
    lives with the fused RNN cell in :mod:`symgraph.rnn` as MXNet's needs the cell)."""
    cls = _REGISTRY.get(name.lower())
    if cls is not None and cls.__name__ == name:
        return cls
    raise AttributeError('module %r has no attribute %r' % (__name__, name))
