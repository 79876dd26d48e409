"""MXNet's contrib Fourier transforms ``_contrib_fft`` and ``_contrib_ifft`` (GPU-only in MXNet
1.9.1, which runs them through cuFFT; here on NumPy and CuPy alike).

* ``fft(data)``: real data (N, d) or (N1, N2, N3, d) -> the unnormalised DFT along the last
  axis as interleaved ``[re0, im0, re1, im1, ...]`` (N, 2 d).
* ``ifft(data)``: interleaved complex data (N, 2 d) or (N1, N2, N3, 2 d) -> the real part of
  the *unnormalised* inverse DFT (MXNet leaves out the 1 / d, "to be consistent with caffe"),
  so ``ifft(fft(x)) == d * x``.

Gradients are the exact ones of these maps (MXNet's cuFFT backward computes the same).
``compute_size`` (MXNet's cuFFT sub-batch) is accepted and does not change results.
"""
from symgraph.opdef import Operator, Param, ShapeError, register


def _interleave(xp, z, dtype):
    out = xp.stack([z.real, z.imag], axis=-1)
    return out.reshape(z.shape[:-1] + (2 * z.shape[-1],)).astype(dtype)


def _complex(x):
    return x[..., 0::2] + 1j * x[..., 1::2]


class _FFTBase(Operator):
    compute_size = Param(int, 128, doc='ignored (MXNet: cuFFT sub-batch size)')
    needs_inputs = False

    def _check(self, s):
        if s is not None and len(s) not in (2, 4):
            raise ShapeError('%s: input %r must be 2-D (N, d) or 4-D (N1, N2, N3, d), got %s'
                             % (self.name, 'data', tuple(s)))

    def infer_type(self, in_types):
        t = in_types[0]
        return [t], [t], []


@register
class FFT(_FFTBase):
    """Unnormalised DFT of real rows, interleaved real and imaginary parts."""

    name = '_contrib_fft'

    def infer_shape(self, in_shapes):
        s = in_shapes[0]
        self._check(s)
        return [s], [None if s is None else tuple(s[:-1]) + (2 * s[-1],)], []

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        return [_interleave(xp, xp.fft.fft(x, axis=-1), x.dtype)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        g = out_grads[0]
        d = g.shape[-1] // 2
        # d/dx_n of sum_k gr_k Re X_k + gi_k Im X_k = Re(sum_k G_k e^{+2 pi i k n / d})
        return [(xp.fft.ifft(_complex(g), axis=-1).real * d).astype(g.dtype)
                if need[0] else None]


@register
class IFFT(_FFTBase):
    """Real part of the unnormalised inverse DFT of interleaved complex rows."""

    name = '_contrib_ifft'

    def infer_shape(self, in_shapes):
        s = in_shapes[0]
        self._check(s)
        if s is not None and s[-1] % 2:
            raise ShapeError('%s: the last dimension of input %r %s must be even (real and '
                             'imaginary parts)' % (self.name, 'data', tuple(s)))
        return [s], [None if s is None else tuple(s[:-1]) + (s[-1] // 2,)], []

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        d = x.shape[-1] // 2
        return [(xp.fft.ifft(_complex(x), axis=-1).real * d).astype(x.dtype)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        g = out_grads[0]
        return [_interleave(xp, xp.fft.fft(g, axis=-1), g.dtype) if need[0] else None]

